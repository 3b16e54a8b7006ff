/* The CPU backend: a graph compiled into oneDNN primitives (private to
 * src/runtime/cpu/; runtime.c reaches it through sieve_backend_cpu).
 *
 * Compilation, in three passes over the live nodes:
 *  1. resolve: identities and single-input sums become aliases of their
 *     input, zero nodes fold away inside sums (and are materialised as a
 *     zero tensor only where something else consumes them), and repeated
 *     activations of one tensor (a NAS cell applies ReLU to a node once per
 *     outgoing edge) are computed once;
 *  2. forward plan: one primitive per node, layouts chosen by oneDNN
 *     (format_tag_any on convolutions and inner products, everything else
 *     takes its producer's layout), reorders where a consumer wants another
 *     layout; an activation that no backward step reads goes back to the
 *     buffer pool after its last consumer;
 *  3. backward plan, in reverse: each consumer's contribution to an input's
 *     gradient is written straight into that gradient's buffer when it is
 *     the first, or into a scratch buffer then added; a node's gradient
 *     buffer returns to the pool once its own backward step has run.
 * Buffers ("slots") are allocated once at the end of planning, and every
 * primitive's arguments are bound to them then, so a training step is a
 * loop over prebuilt primitive calls.
 *
 * Where things live:
 *   cpu-backend.c   compile (the passes in order), destroy, the class table
 *   cpu-plan.c      slots, steps, descriptor helpers, pass 1, what both plans
 *                   ask of a node
 *   cpu-forward.c   pass 2
 *   cpu-backward.c  pass 3
 *   cpu-arena.c     the memory every slot lives in, binding, initial values
 *   cpu-run.c       running forward and backward, the loss
 *   cpu-read.c      what the proxies read: nodes, signs, gradients, channel
 *                   dots, frozen ReLUs, running statistics
 *   cpu-params.c    parameters and the SGD step
 *   cpu-kernels.c   loops of our own where oneDNN has only slow ones
 */
#pragma once

#include <dnnl.h>
#include <dnnl_debug.h> /* dnnl_status2str, for TRY */

#include "runtime/runtime-private.h"

G_BEGIN_DECLS

/* ---- plan structures ----------------------------------------------------- */

typedef struct {
  size_t bytes;
  gboolean dedicated; /* never shared: parameters, optimizer state, zeros */
  float *ptr;
} Slot;

typedef struct {
  int arg;
  dnnl_memory_desc_t md;
  int slot;
  size_t offset; /* bytes into the slot (concat pieces) */
} ArgSpec;

typedef enum {
  STEP_PRIM,        /* a oneDNN primitive */
  STEP_ADD,         /* dst += src over n floats (same layout) */
  STEP_COPY,        /* dst = src over n floats */
  STEP_ZERO,        /* dst = 0 over n floats (a crop's gradient outside its window) */
  STEP_LOSS_FWD,
  STEP_LOSS_BWD,
  STEP_BN_RUNNING,  /* running statistics update after a training forward */
  STEP_HSIG_FWD,    /* dst = hard_sigmoid(src) over n floats (oneDNN 2.6 has no such eltwise) */
  STEP_HSIG_BWD,    /* dst = src * hard_sigmoid'(aux) over n floats: src the output's gradient, aux the input */
  STEP_DW_WGRAD,    /* depthwise weight gradient (cpu-kernels.c): src diff_dst, aux the input, dst goihw */
  STEP_GATE_GRAD,   /* a broadcast gate's gradient (cpu-kernels.c): src diff_dst, aux x, dst [B, C] */
  STEP_CHANNELS,    /* n channels of src (from src_off) into dst (from dst_off), each nchw, nChw8c or nChw16c (cpu-kernels.c) */
  STEP_MAXPOOL_FWD, /* max pool (cpu-kernels.c): src the input, dst the output, aux the window positions */
  STEP_MAXPOOL_BWD, /* its backward: src the output's gradient, dst the input's, aux the positions */
  STEP_RELU_MASK,   /* dst = mask ? src : 0 over n floats: a ReLU fused into its batch norm, while frozen */
} StepKind;

/* When a step runs: always, or only while activations are (not) frozen
 * (sieve_runtime_freeze_activations): a batch norm with its ReLU fused
 * in has the fused primitives for the one and the unfused ones, around
 * the frozen mask, for the other. */
typedef enum { WHEN_ALWAYS, WHEN_UNFROZEN, WHEN_FROZEN } StepWhen;

/* A STEP_CHANNELS tensor: its channel block (1: nchw), its channels as
 * stored (a multiple of the block) and the first channel copied. */
typedef struct {
  guint block, stored, first;
} ChanView;

typedef struct {
  StepKind kind;
  guint node;
  dnnl_primitive_t prim; /* owned */
  GArray *specs;         /* ArgSpec, until bound */
  dnnl_exec_arg_t *args; /* bound */
  int nargs;
  dnnl_memory_t *mems;   /* owned, nargs */
  int dst, src;          /* slots for ADD/COPY; a ReLU's src/dst (forward) or diff_dst/diff_src (backward) */
  int aux;               /* HSIG_BWD, DW_WGRAD, GATE_GRAD: the forward's input; MAXPOOL_*: the positions */
  guint block;           /* DW_WGRAD, GATE_GRAD, MAXPOOL_*: channels per block of their tensors' layout (1: nchw) */
  ChanView from, to;     /* CHANNELS: n channels of h x w pixels (hw) from src to dst */
  gsize hw;
  gboolean zero_pad;     /* CHANNELS: dst's stored channels past the copied ones are zeroed (block padding) */
  size_t n;
  gboolean relu;         /* a ReLU or leaky ReLU step: frozen activations replace it */
  gboolean param_only;   /* only a parameter gradient needs it: an input-only backward skips it */
  StepWhen when;
} Step;

typedef enum { ROLE_DEAD, ROLE_REAL, ROLE_ALIAS, ROLE_ZERO, ROLE_ZERO_BUF } Role;

typedef struct {
  const SieveGraphNode *n;
  guint id;
  Role role;
  guint root;          /* where the output is stored (itself unless an alias or folded zero) */
  guint n_in;          /* real inputs after resolution */
  guint *in;           /* their roots */
  dnnl_memory_desc_t md;
  int out;             /* slot */
  int diff;            /* slot during backward planning, -1 when no gradient yet */
  guint uses;          /* forward consumers left (planning) */
  gboolean needed_bwd; /* a backward step reads this output */
  gboolean released;   /* its buffer went back to the pool: no longer readable */
  dnnl_primitive_desc_t fwd_pd; /* hint for backward descriptors, owned */
  dnnl_memory_desc_t src_want;  /* conv/linear/loss: the layout the primitive reads */
  int src_slot;                 /* where that layout lives (out of the input or a reorder) */
  dnnl_memory_desc_t kept_md;   /* this output reordered for a consumer and kept for backward: */
  int kept_slot;                /* the layout and slot, which later consumers of it share (-1: none) */
  dnnl_memory_desc_t gate_md;   /* mul: the gate (input 1) as the primitive reads it */
  int gate_slot;
  /* parameters: first index into the param table, count */
  guint first_param, n_params;
  /* batch norm */
  int mean, var, rmean, rvar;
  /* ReLU and leaky ReLU while activations are frozen: which elements passed
   * (the output of the forward before freezing, > 0), owned */
  float *mask;
  /* max pooling: oneDNN's workspace, or our window positions (ws_ours);
   * a batch norm with its ReLU fused in: the ReLU's workspace */
  dnnl_memory_desc_t ws_md;
  int ws;
  gboolean ws_ours;
  /* a batch norm and the ReLU fused into it (cpu-forward.c): each other's
   * node, -1 when not fused; the unfused forward's descriptor (owned), the
   * hint of the unfused backward that frozen activations run */
  int fused;
  dnnl_primitive_desc_t plain_pd;
  /* loss */
  int prob;
} CNode;

typedef struct {
  SieveParamInfo info;
  dnnl_memory_desc_t md;    /* as stored */
  dnnl_memory_desc_t plain; /* as exchanged */
  int value, grad, velocity;
} Param;

typedef struct {
  SieveGraph *graph; /* a copy */
  SieveRuntimeOptions options;
  guint threads;
  dnnl_engine_t engine;
  dnnl_stream_t stream;
  CNode *nodes;
  guint n_nodes;
  guint input, output;
  GArray *slots;     /* Slot */
  GArray *free;      /* int: pooled slot ids */
  GArray *pending;   /* int: slots to pool once the current node's steps are planned */
  GPtrArray *steps;  /* Step*, owned */
  GArray *fwd_train, *fwd_eval, *bwd; /* indices into steps */
  GArray *params;    /* Param */
  gint32 *labels;    /* the last forward's, valid when has_labels */
  gboolean has_labels;
  guint n_classes;
  double loss;
  int out_grad;      /* slot: gradient of a non-loss output */
  char *description;
  guint64 bytes;
  void *arena;       /* every slot's memory, one mapping of arena_bytes */
  size_t arena_bytes;
  gboolean *keep;    /* per node: output and gradient stay readable (options' keep, mapped to roots) */
  gboolean frozen;   /* ReLUs follow their masks (sieve_runtime_freeze_activations) */
  gboolean input_only; /* the backward running skips parameter gradients */
} Cpu;

#define TRY(call, ...)                                                                                           \
  do {                                                                                                           \
    dnnl_status_t st_ = (call);                                                                                  \
    if (st_ != dnnl_success) {                                                                                   \
      g_autofree char *what_ = g_strdup_printf(__VA_ARGS__);                                                     \
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "oneDNN: %s: %s", what_, dnnl_status2str(st_));      \
      return FALSE;                                                                                              \
    }                                                                                                            \
  } while (0)

/* ---- cpu-plan.c: shared by the passes ------------------------------------- */

/* For messages: "node 12 (conv2d "stage1.cell0.edge_1_0.conv")"; valid until the thread's next call. */
const char *sieve__cpu_node_desc(Cpu *c, guint v);

/* A slot of bytes: a pooled one of that size unless dedicated, else a new one. */
int sieve__cpu_slot_new(Cpu *c, size_t bytes, gboolean dedicated);
/* Back to the pool (dedicated slots and -1 are ignored). */
void sieve__cpu_slot_release(Cpu *c, int id);
/* Where a slot lives once bound. */
float *sieve__cpu_slot_ptr(Cpu *c, int id);

/* A new step of node, appended to list (and list2 when not NULL). */
Step *sieve__cpu_step_push(Cpu *c, StepKind kind, guint node, GArray *list, GArray *list2);
/* An argument of s, bound to slot in layout md once slots are allocated. */
void sieve__cpu_step_arg(Step *s, int arg, const dnnl_memory_desc_t *md, int slot);
/* The steps array's free function. */
void sieve__cpu_step_free(gpointer p);
gboolean sieve__cpu_pd_create(Cpu *c, guint v, dnnl_primitive_desc_t *pd, const_dnnl_op_desc_t desc,
                              const_dnnl_primitive_desc_t hint, const char *what, GError **error);
/* pd from desc when oneDNN has an optimised implementation for it; FALSE (no pd) otherwise. */
gboolean sieve__cpu_pd_try(Cpu *c, dnnl_primitive_desc_t *pd, const_dnnl_op_desc_t desc,
                           const_dnnl_primitive_desc_t hint);
gboolean sieve__cpu_prim_from_pd(Cpu *c, Step *s, dnnl_primitive_desc_t pd, const char *what, GError **error);
/* A reorder step from (from, slot a) to (to, slot b); accumulate adds into b. */
gboolean sieve__cpu_push_reorder(Cpu *c, guint v, GArray *list, GArray *list2, const dnnl_memory_desc_t *from, int a,
                                 const dnnl_memory_desc_t *to, int b, gboolean accumulate, GError **error);

size_t sieve__cpu_md_bytes(const dnnl_memory_desc_t *md);
gboolean sieve__cpu_md_equal(const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b);
/* batch x shape, nchw. */
void sieve__cpu_md_plain(dnnl_memory_desc_t *md, guint batch, SieveShape s);
void sieve__cpu_md_1d(dnnl_memory_desc_t *md, guint n);
/* Node u's output as a 4-D descriptor (inner products produce 2-D ones). */
gboolean sieve__cpu_md_as4(Cpu *c, guint u, dnnl_memory_desc_t *out, GError **error);
/* The window (batch, all channels, pad[] offset, kernel[] extent) of a crop
 * node v inside md, a descriptor of its input's full extent. */
gboolean sieve__cpu_md_window(Cpu *c, guint v, const dnnl_memory_desc_t *md, dnnl_memory_desc_t *out, GError **error);

/* The node that holds u's output. */
guint sieve__cpu_root(Cpu *c, guint u);
/* Pass 1: roles, roots, real inputs, uses and what backward reads. */
void sieve__cpu_resolve(Cpu *c);

/* Parameter k of node v. */
Param *sieve__cpu_param_of(Cpu *c, guint v, guint k);
/* The oneDNN algorithm and its alpha, beta of an activation; use_dst: its backward reads the output. */
dnnl_alg_kind_t sieve__cpu_eltwise_alg(const SieveOpAttrs *a, float *alpha, float *beta, gboolean *use_dst);
/* A ReLU or leaky ReLU: what freezing activations replaces. */
gboolean sieve__cpu_is_relu(const SieveGraphNode *n);
/* Whether the caller asked to read u (its output, and its gradient). */
gboolean sieve__cpu_kept(Cpu *c, guint u);

/* ---- cpu-forward.c, cpu-backward.c: passes 2 and 3 ------------------------ */

gboolean sieve__cpu_plan_forward(Cpu *c, GError **error);
gboolean sieve__cpu_plan_backward(Cpu *c, GError **error);

/* ---- cpu-arena.c ----------------------------------------------------------- */

/* Allocates every slot in one arena and binds every step's arguments. */
gboolean sieve__cpu_bind(Cpu *c, GError **error);
/* Returns a runtime's arena (c->arena) to the process's pool. */
void sieve__cpu_arena_give(void *ptr, size_t bytes);
/* Copies between a plain buffer and a tensor stored in layout md (to_plain: md to plain). */
gboolean sieve__cpu_transfer(Cpu *c, const dnnl_memory_desc_t *plain, float *plain_ptr, const dnnl_memory_desc_t *md,
                             float *ptr, gboolean to_plain, GError **error);
/* Initial parameters (PyTorch's defaults) and running variances of 1. */
gboolean sieve__cpu_init_params(Cpu *c, GError **error);

/* ---- cpu-kernels.c ---------------------------------------------------------- */

/* The layout those kernels read a tensor of batch x s in: nChw16c, nChw8c
 * or nchw, whichever blocks channels without padding; returns the block. */
guint sieve__cpu_pick_block(guint channels, dnnl_memory_desc_t *md, guint batch, SieveShape s);
void sieve__cpu_dw_wgrad(Cpu *c, const Step *s);
/* The block of md (1 for nchw, 8 for nChw8c, 16 for nChw16c; 0 for any other layout). */
guint sieve__cpu_md_block(const dnnl_memory_desc_t *md);
void sieve__cpu_channels(Cpu *c, const Step *s);
void sieve__cpu_gate_grad(Cpu *c, const Step *s);
/* Whether our max pool takes node v (a max pool reading nchw, nChw8c or
 * nChw16c); its block then. */
gboolean sieve__cpu_max_pool_ours(Cpu *c, guint v, guint *block);
void sieve__cpu_max_pool(Cpu *c, const Step *s);

/* ---- the SieveBackendClass methods, by file ------------------------------- */

/* cpu-run.c */
gboolean sieve__cpu_forward(gpointer impl, const float *x, const gint32 *labels, SieveMode mode, GError **error);
gboolean sieve__cpu_backward(gpointer impl, const float *output_grad, gboolean input_only, GError **error);
double sieve__cpu_loss(gpointer impl);

/* cpu-read.c */
gboolean sieve__cpu_read(gpointer impl, guint node, float *out, GError **error);
gboolean sieve__cpu_read_input_grad(gpointer impl, float *out, GError **error);
gboolean sieve__cpu_read_grad(gpointer impl, guint node, float *out, GError **error);
gboolean sieve__cpu_read_signs(gpointer impl, guint node, guint64 *codes, GError **error);
gboolean sieve__cpu_read_channel_dots(gpointer impl, guint node, double *dots, GError **error);
gboolean sieve__cpu_freeze(gpointer impl, gboolean freeze, GError **error);
gboolean sieve__cpu_get_running(gpointer impl, guint node, float *mean, float *var, GError **error);
gboolean sieve__cpu_set_running(gpointer impl, guint node, const float *mean, const float *var, GError **error);

/* cpu-params.c */
guint sieve__cpu_n_params(gpointer impl);
const SieveParamInfo *sieve__cpu_param_info(gpointer impl, guint i);
gboolean sieve__cpu_get_param(gpointer impl, guint i, float *out, GError **error);
gboolean sieve__cpu_set_param(gpointer impl, guint i, const float *values, GError **error);
gboolean sieve__cpu_get_grad(gpointer impl, guint i, float *out, GError **error);
gboolean sieve__cpu_sgd_step(gpointer impl, const SieveSgd *sgd, GError **error);
gboolean sieve__cpu_get_velocity(gpointer impl, guint i, float *out, GError **error);
gboolean sieve__cpu_set_velocity(gpointer impl, guint i, const float *values, GError **error);

G_END_DECLS
