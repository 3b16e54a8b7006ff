/* The CPU backend: a graph compiled into oneDNN primitives.
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
 */
#define _GNU_SOURCE /* mremap */
#include <errno.h>
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <string.h>
#include <sys/mman.h>

#include <dnnl.h>
#include <dnnl_debug.h>
#include <sieve/rng.h>

#include "runtime/runtime-private.h"

/* ---- engine ------------------------------------------------------------- */

static dnnl_engine_t
cpu_engine(GError **error)
{
  static dnnl_engine_t engine;
  static dnnl_status_t status = dnnl_success;
  static gsize once;
  if (g_once_init_enter(&once)) {
    status = dnnl_engine_create(&engine, dnnl_cpu, 0);
    g_once_init_leave(&once, 1);
  }
  if (status != dnnl_success) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "oneDNN could not create a CPU engine: %s",
                dnnl_status2str(status));
    return NULL;
  }
  return engine;
}

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
  STEP_LOSS_FWD,
  STEP_LOSS_BWD,
  STEP_BN_RUNNING,  /* running statistics update after a training forward */
} StepKind;

typedef struct {
  StepKind kind;
  guint node;
  dnnl_primitive_t prim; /* owned */
  GArray *specs;         /* ArgSpec, until bound */
  dnnl_exec_arg_t *args; /* bound */
  int nargs;
  dnnl_memory_t *mems;   /* owned, nargs */
  int dst, src;          /* slots for ADD/COPY; a ReLU's src/dst (forward) or diff_dst/diff_src (backward) */
  size_t n;
  gboolean relu;         /* a ReLU or leaky ReLU step: frozen activations replace it */
  gboolean param_only;   /* only a parameter gradient needs it: an input-only backward skips it */
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
  /* parameters: first index into the param table, count */
  guint first_param, n_params;
  /* batch norm */
  int mean, var, rmean, rvar;
  /* ReLU and leaky ReLU while activations are frozen: which elements passed
   * (the output of the forward before freezing, > 0), owned */
  float *mask;
  /* max pooling */
  dnnl_memory_desc_t ws_md;
  int ws;
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

static const char *
node_desc(Cpu *c, guint v)
{
  /* For messages: "node 12 (conv2d "stage1.cell0.edge_1_0.conv")". */
  static GPrivate buf = G_PRIVATE_INIT(g_free);
  const SieveGraphNode *n = c->nodes[v].n;
  char *s = n->label ? g_strdup_printf("node %u (%s \"%s\")", v, sieve_op_kind_name(n->kind), n->label)
                     : g_strdup_printf("node %u (%s)", v, sieve_op_kind_name(n->kind));
  g_private_replace(&buf, s);
  return s;
}

/* ---- slots --------------------------------------------------------------- */

static int
slot_new(Cpu *c, size_t bytes, gboolean dedicated)
{
  if (!dedicated) {
    for (guint i = 0; i < c->free->len; i++) {
      int id = g_array_index(c->free, int, i);
      if (g_array_index(c->slots, Slot, id).bytes == bytes) {
        g_array_remove_index_fast(c->free, i);
        return id;
      }
    }
  }
  Slot s = {.bytes = bytes, .dedicated = dedicated};
  g_array_append_val(c->slots, s);
  return c->slots->len - 1;
}

static void
slot_release(Cpu *c, int id)
{
  if (id >= 0 && !g_array_index(c->slots, Slot, id).dedicated)
    g_array_append_val(c->free, id);
}

static float *
slot_ptr(Cpu *c, int id)
{
  return g_array_index(c->slots, Slot, id).ptr;
}

/* ---- steps --------------------------------------------------------------- */

static Step *
step_push(Cpu *c, StepKind kind, guint node, GArray *list, GArray *list2)
{
  Step *s = g_new0(Step, 1);
  s->kind = kind;
  s->node = node;
  s->specs = g_array_new(FALSE, FALSE, sizeof(ArgSpec));
  g_ptr_array_add(c->steps, s);
  guint idx = c->steps->len - 1;
  g_array_append_val(list, idx);
  if (list2)
    g_array_append_val(list2, idx);
  return s;
}

static void
step_arg(Step *s, int arg, const dnnl_memory_desc_t *md, int slot)
{
  ArgSpec a = {.arg = arg, .md = *md, .slot = slot};
  g_array_append_val(s->specs, a);
}

static void
step_free(gpointer p)
{
  Step *s = p;
  for (int i = 0; i < s->nargs; i++)
    dnnl_memory_destroy(s->mems[i]);
  g_free(s->mems);
  g_free(s->args);
  if (s->prim)
    dnnl_primitive_destroy(s->prim);
  if (s->specs)
    g_array_unref(s->specs);
  g_free(s);
}

static gboolean
make_prim(Cpu *c, Step *s, const_dnnl_op_desc_t desc, const_dnnl_primitive_attr_t attr,
          const_dnnl_primitive_desc_t hint, dnnl_primitive_desc_t *keep_pd, const char *what, GError **error)
{
  dnnl_primitive_desc_t pd;
  TRY(dnnl_primitive_desc_create(&pd, desc, attr, c->engine, hint), "%s for %s", what, node_desc(c, s->node));
  dnnl_status_t st = dnnl_primitive_create(&s->prim, pd);
  if (keep_pd)
    *keep_pd = pd;
  else
    dnnl_primitive_desc_destroy(pd);
  TRY(st, "%s primitive for %s", what, node_desc(c, s->node));
  return TRUE;
}

static gboolean
pd_create(Cpu *c, guint v, dnnl_primitive_desc_t *pd, const_dnnl_op_desc_t desc, const_dnnl_primitive_desc_t hint,
          const char *what, GError **error)
{
  TRY(dnnl_primitive_desc_create(pd, desc, NULL, c->engine, hint), "%s for %s", what, node_desc(c, v));
  return TRUE;
}

/* Whether oneDNN found an optimised implementation (not its reference one). */
static gboolean
pd_fast(const_dnnl_primitive_desc_t pd)
{
  const char *impl = NULL;
  if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || impl == NULL)
    return FALSE;
  return !g_str_has_prefix(impl, "ref");
}

/* Creates pd from desc when that gives an optimised implementation;
 * FALSE (and no pd) otherwise, so the caller can try freer layouts. */
static gboolean
pd_try(Cpu *c, dnnl_primitive_desc_t *pd, const_dnnl_op_desc_t desc, const_dnnl_primitive_desc_t hint)
{
  if (dnnl_primitive_desc_create(pd, desc, NULL, c->engine, hint) != dnnl_success)
    return FALSE;
  if (pd_fast(*pd))
    return TRUE;
  dnnl_primitive_desc_destroy(*pd);
  *pd = NULL;
  return FALSE;
}

static gboolean
prim_from_pd(Cpu *c, Step *s, dnnl_primitive_desc_t pd, const char *what, GError **error)
{
  TRY(dnnl_primitive_create(&s->prim, pd), "%s primitive for %s", what, node_desc(c, s->node));
  return TRUE;
}

/* A reorder step src(md_a, slot a) -> dst(md_b, slot b); accumulate adds into dst. */
static gboolean
push_reorder(Cpu *c, guint v, GArray *list, GArray *list2, const dnnl_memory_desc_t *from, int a,
             const dnnl_memory_desc_t *to, int b, gboolean accumulate, GError **error)
{
  Step *s = step_push(c, STEP_PRIM, v, list, list2);
  dnnl_primitive_attr_t attr = NULL;
  dnnl_post_ops_t ops = NULL;
  if (accumulate) {
    TRY(dnnl_primitive_attr_create(&attr), "attributes");
    TRY(dnnl_post_ops_create(&ops), "post-ops");
    TRY(dnnl_post_ops_append_sum(ops, 1.0f), "sum post-op");
    TRY(dnnl_primitive_attr_set_post_ops(attr, ops), "post-ops");
  }
  dnnl_primitive_desc_t pd;
  dnnl_status_t st = dnnl_reorder_primitive_desc_create(&pd, from, c->engine, to, c->engine, attr);
  if (ops)
    dnnl_post_ops_destroy(ops);
  if (attr)
    dnnl_primitive_attr_destroy(attr);
  TRY(st, "reorder for %s", node_desc(c, v));
  st = dnnl_primitive_create(&s->prim, pd);
  dnnl_primitive_desc_destroy(pd);
  TRY(st, "reorder primitive for %s", node_desc(c, v));
  step_arg(s, DNNL_ARG_FROM, from, a);
  step_arg(s, DNNL_ARG_TO, to, b);
  return TRUE;
}

/* ---- memory descriptors -------------------------------------------------- */

static size_t
md_bytes(const dnnl_memory_desc_t *md)
{
  return dnnl_memory_desc_get_size(md);
}

static gboolean
md_equal(const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b)
{
  return dnnl_memory_desc_equal(a, b);
}

static void
md_plain(dnnl_memory_desc_t *md, guint batch, SieveShape s)
{
  dnnl_dims_t d = {batch, s.c, s.h, s.w};
  dnnl_memory_desc_init_by_tag(md, 4, d, dnnl_f32, dnnl_nchw);
}

static void
md_any4(dnnl_memory_desc_t *md, guint batch, SieveShape s)
{
  dnnl_dims_t d = {batch, s.c, s.h, s.w};
  dnnl_memory_desc_init_by_tag(md, 4, d, dnnl_f32, dnnl_format_tag_any);
}

static void
md_1d(dnnl_memory_desc_t *md, guint n)
{
  dnnl_dims_t d = {n};
  dnnl_memory_desc_init_by_tag(md, 1, d, dnnl_f32, dnnl_x);
}

/* A node's output as a 4-D descriptor (inner products produce 2-D ones). */
static gboolean
md_as4(Cpu *c, guint u, dnnl_memory_desc_t *out, GError **error)
{
  const dnnl_memory_desc_t *md = &c->nodes[u].md;
  if (md->ndims == 4) {
    *out = *md;
    return TRUE;
  }
  dnnl_dims_t d = {md->dims[0], md->dims[1], 1, 1};
  TRY(dnnl_memory_desc_reshape(out, md, 4, d), "reshape of %s", node_desc(c, u));
  return TRUE;
}

/* The output of u in layout want: the slot itself, or a reorder step into a
 * new slot (kept for backward when keep is set). */
static gboolean
as_layout(Cpu *c, guint v, guint u, const dnnl_memory_desc_t *want, gboolean keep, int *slot, GError **error)
{
  dnnl_memory_desc_t have;
  if (!md_as4(c, u, &have, error))
    return FALSE;
  if (want->ndims == 2 && c->nodes[u].md.ndims == 2)
    have = c->nodes[u].md;
  if (md_equal(&have, want)) {
    *slot = c->nodes[u].out;
    return TRUE;
  }
  *slot = slot_new(c, md_bytes(want), keep);
  if (!push_reorder(c, v, c->fwd_train, c->fwd_eval, &have, c->nodes[u].out, want, *slot, FALSE, error))
    return FALSE;
  if (!keep)
    g_array_append_val(c->pending, *slot); /* pooled once the consumer's steps are planned */
  return TRUE;
}

/* ---- pass 1: resolve ------------------------------------------------------ */

static guint
root(Cpu *c, guint u)
{
  return c->nodes[u].root;
}

static void
resolve(Cpu *c)
{
  const SieveGraph *g = c->graph;
  for (guint v = 0; v < c->n_nodes; v++) {
    CNode *x = &c->nodes[v];
    x->id = v;
    x->n = sieve_graph_node(g, v);
    x->root = v;
    x->out = x->diff = x->ws = x->prob = x->mean = x->var = x->rmean = x->rvar = -1;
    x->src_slot = -1;
    if (!sieve_graph_node_live(g, v)) {
      x->role = ROLE_DEAD;
      continue;
    }
    const SieveGraphNode *n = x->n;
    x->in = g_new0(guint, MAX(n->n_inputs, 1));
    switch (n->kind) {
    case SIEVE_OP_IDENTITY:
      x->role = ROLE_ALIAS;
      x->root = root(c, n->inputs[0]);
      if (c->nodes[x->root].role == ROLE_ZERO)
        x->role = ROLE_ZERO;
      continue;
    case SIEVE_OP_ZERO:
      x->role = ROLE_ZERO;
      continue;
    case SIEVE_OP_ADD:
      for (guint k = 0; k < n->n_inputs; k++) {
        guint r = root(c, n->inputs[k]);
        if (c->nodes[r].role != ROLE_ZERO)
          x->in[x->n_in++] = r;
      }
      if (x->n_in == 0) {
        x->role = ROLE_ZERO;
      } else if (x->n_in == 1) {
        x->role = ROLE_ALIAS;
        x->root = x->in[0];
      } else {
        x->role = ROLE_REAL;
      }
      continue;
    case SIEVE_OP_ACTIVATION: {
      guint r = root(c, n->inputs[0]);
      /* One activation per tensor: later ones alias the first. */
      for (guint w = r + 1; w < v; w++) {
        CNode *y = &c->nodes[w];
        if (y->role == ROLE_REAL && y->n->kind == SIEVE_OP_ACTIVATION && y->in[0] == r &&
            y->n->attrs.activation == n->attrs.activation && y->n->attrs.alpha == n->attrs.alpha) {
          x->role = ROLE_ALIAS;
          x->root = w;
          break;
        }
      }
      if (x->role == ROLE_ALIAS)
        continue;
    }
      G_GNUC_FALLTHROUGH;
    default:
      x->role = ROLE_REAL;
      for (guint k = 0; k < n->n_inputs; k++)
        x->in[x->n_in++] = root(c, n->inputs[k]);
    }
  }
  /* Zeros that something other than a sum reads become real zero tensors. */
  for (guint v = 0; v < c->n_nodes; v++) {
    CNode *x = &c->nodes[v];
    if (x->role != ROLE_REAL)
      continue;
    for (guint k = 0; k < x->n_in; k++)
      if (c->nodes[x->in[k]].role == ROLE_ZERO)
        c->nodes[x->in[k]].role = ROLE_ZERO_BUF;
  }
  guint out = root(c, c->output);
  if (c->nodes[out].role == ROLE_ZERO)
    c->nodes[out].role = ROLE_ZERO_BUF;
  /* Uses and what backward will read. */
  for (guint v = 0; v < c->n_nodes; v++) {
    CNode *x = &c->nodes[v];
    if (x->role != ROLE_REAL)
      continue;
    SieveOpKind k = x->n->kind;
    for (guint i = 0; i < x->n_in; i++) {
      CNode *u = &c->nodes[x->in[i]];
      u->uses++;
      if (k == SIEVE_OP_CONV2D || k == SIEVE_OP_BATCH_NORM || k == SIEVE_OP_LINEAR ||
          (k == SIEVE_OP_ACTIVATION && x->n->attrs.activation != SIEVE_ACT_RELU &&
           x->n->attrs.activation != SIEVE_ACT_LEAKY_RELU))
        u->needed_bwd = TRUE;
    }
    if (k == SIEVE_OP_ACTIVATION &&
        (x->n->attrs.activation == SIEVE_ACT_RELU || x->n->attrs.activation == SIEVE_ACT_LEAKY_RELU))
      x->needed_bwd = TRUE;
  }
}

/* ---- pass 2: forward plan -------------------------------------------------- */

static Param *
param_add(Cpu *c, guint v, const char *name, const dnnl_memory_desc_t *md, const dnnl_memory_desc_t *plain)
{
  Param p = {0};
  p.info.node = v;
  p.info.name = name;
  p.info.ndims = plain->ndims;
  p.info.size = 1;
  for (int d = 0; d < plain->ndims; d++) {
    p.info.dims[d] = plain->dims[d];
    p.info.size *= plain->dims[d];
  }
  p.md = *md;
  p.plain = *plain;
  p.value = slot_new(c, md_bytes(md), TRUE);
  p.grad = slot_new(c, md_bytes(md), TRUE);
  p.velocity = slot_new(c, md_bytes(md), TRUE);
  if (c->nodes[v].n_params == 0)
    c->nodes[v].first_param = c->params->len;
  c->nodes[v].n_params++;
  g_array_append_val(c->params, p);
  return &g_array_index(c->params, Param, c->params->len - 1);
}

static Param *
param_of(Cpu *c, guint v, guint k)
{
  return &g_array_index(c->params, Param, c->nodes[v].first_param + k);
}

/* The forward step of a convolution or inner product whose pd, src_want,
 * src_slot, md and weight w are set: the bias parameter (when it has one),
 * the output slot, and the primitive with its arguments. */
static gboolean
plan_weighted_step(Cpu *c, guint v, Param *w, const char *what, GError **error)
{
  CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  dnnl_memory_desc_t wstore = w->md, bias; /* w moves when the param table grows */
  int wslot = w->value, bslot = -1;
  md_1d(&bias, a->out_channels);
  if (a->bias)
    bslot = param_add(c, v, "bias", &bias, &bias)->value;
  x->out = slot_new(c, md_bytes(&x->md), FALSE);
  Step *s = step_push(c, STEP_PRIM, v, c->fwd_train, c->fwd_eval);
  if (!prim_from_pd(c, s, x->fwd_pd, what, error))
    return FALSE;
  step_arg(s, DNNL_ARG_SRC, &x->src_want, x->src_slot);
  step_arg(s, DNNL_ARG_WEIGHTS, &wstore, wslot);
  if (a->bias)
    step_arg(s, DNNL_ARG_BIAS, &bias, bslot);
  step_arg(s, DNNL_ARG_DST, &x->md, x->out);
  return TRUE;
}

static gboolean
plan_conv(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  guint B = c->options.batch;
  SieveShape is = c->nodes[x->in[0]].n->shape, os = x->n->shape;
  dnnl_memory_desc_t src, wei, bias, dst;
  md_any4(&src, B, is);
  md_any4(&dst, B, os);
  gboolean grouped = a->groups > 1;
  dnnl_dims_t wd = {a->out_channels, is.c / a->groups, a->kernel[0], a->kernel[1]};
  dnnl_dims_t gwd = {a->groups, a->out_channels / a->groups, is.c / a->groups, a->kernel[0], a->kernel[1]};
  dnnl_memory_desc_t wplain, wgplain;
  dnnl_memory_desc_init_by_tag(&wplain, 4, wd, dnnl_f32, dnnl_oihw);
  if (grouped) {
    dnnl_memory_desc_init_by_tag(&wei, 5, gwd, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&wgplain, 5, gwd, dnnl_f32, dnnl_goihw);
  } else {
    dnnl_memory_desc_init_by_tag(&wei, 4, wd, dnnl_f32, dnnl_format_tag_any);
  }
  md_1d(&bias, a->out_channels);
  dnnl_dims_t strides = {a->stride[0], a->stride[1]}, dil = {a->dilation[0] - 1, a->dilation[1] - 1},
              pad = {a->pad[0], a->pad[1]};
  dnnl_convolution_desc_t d;
  dnnl_prop_kind_t prop = c->options.backward ? dnnl_forward_training : dnnl_forward_inference;
  /* The producer's layout first: a reorder of every activation costs more
   * than a slightly slower kernel on these small networks. */
  dnnl_memory_desc_t have, blocked = dst;
  if (!md_as4(c, x->in[0], &have, error))
    return FALSE;
  /* Outputs in the channel block that fits them without padding (8 or 16
   * floats): a network of 8-channel tensors padded to 16 would move twice
   * the bytes through every later operation. */
  dnnl_dims_t od = {c->options.batch, os.c, os.h, os.w};
  if (os.c % 16 == 0)
    dnnl_memory_desc_init_by_tag(&blocked, 4, od, dnnl_f32, dnnl_nChw16c);
  else if (os.c % 8 == 0)
    dnnl_memory_desc_init_by_tag(&blocked, 4, od, dnnl_f32, dnnl_nChw8c);
  TRY(dnnl_dilated_convolution_forward_desc_init(&d, prop, dnnl_convolution_direct, &have, &wei,
                                                 a->bias ? &bias : NULL, &blocked, strides, dil, pad, pad),
      "convolution descriptor for %s", node_desc(c, v));
  if (!pd_try(c, &x->fwd_pd, &d, NULL)) {
    TRY(dnnl_dilated_convolution_forward_desc_init(&d, prop, dnnl_convolution_direct, &src, &wei,
                                                   a->bias ? &bias : NULL, &dst, strides, dil, pad, pad),
        "convolution descriptor for %s", node_desc(c, v));
    if (!pd_create(c, v, &x->fwd_pd, &d, NULL, "convolution", error))
      return FALSE;
  }
  x->src_want = *dnnl_primitive_desc_query_md(x->fwd_pd, dnnl_query_src_md, 0);
  const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(x->fwd_pd, dnnl_query_weights_md, 0);
  x->md = *dnnl_primitive_desc_query_md(x->fwd_pd, dnnl_query_dst_md, 0);
  if (!as_layout(c, v, x->in[0], &x->src_want, c->options.backward, &x->src_slot, error))
    return FALSE;
  Param *w = param_add(c, v, "weight", wmd, &wplain);
  /* oneDNN wants grouped weights 5-D (goihw); the plain [out, in/groups,
   * kh, kw] of graph.h is the same bytes, so exchange through the 5-D view
   * and report the 4-D shape (param_add's info has room for 4 dims). */
  if (grouped)
    w->plain = wgplain;
  return plan_weighted_step(c, v, w, "convolution", error);
}

static gboolean
plan_linear(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  guint B = c->options.batch;
  SieveShape is = c->nodes[x->in[0]].n->shape;
  dnnl_memory_desc_t src, wei, bias, dst, wplain;
  md_any4(&src, B, is);
  dnnl_dims_t wd = {a->out_channels, is.c, is.h, is.w};
  dnnl_memory_desc_init_by_tag(&wei, 4, wd, dnnl_f32, dnnl_format_tag_any);
  dnnl_memory_desc_init_by_tag(&wplain, 4, wd, dnnl_f32, dnnl_oihw);
  dnnl_dims_t dd = {B, a->out_channels};
  dnnl_memory_desc_init_by_tag(&dst, 2, dd, dnnl_f32, dnnl_nc);
  md_1d(&bias, a->out_channels);
  dnnl_inner_product_desc_t d;
  TRY(dnnl_inner_product_forward_desc_init(&d, c->options.backward ? dnnl_forward_training : dnnl_forward_inference,
                                           &src, &wei, a->bias ? &bias : NULL, &dst),
      "inner product descriptor for %s", node_desc(c, v));
  if (!pd_create(c, v, &x->fwd_pd, &d, NULL, "inner product", error))
    return FALSE;
  x->src_want = *dnnl_primitive_desc_query_md(x->fwd_pd, dnnl_query_src_md, 0);
  const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(x->fwd_pd, dnnl_query_weights_md, 0);
  x->md = *dnnl_primitive_desc_query_md(x->fwd_pd, dnnl_query_dst_md, 0);
  if (!as_layout(c, v, x->in[0], &x->src_want, c->options.backward, &x->src_slot, error))
    return FALSE;
  /* The plain weight is [out, c*h*w], the same bytes as oihw. */
  dnnl_dims_t w2 = {a->out_channels, (dnnl_dim_t)is.c * is.h * is.w};
  dnnl_memory_desc_t wplain2;
  dnnl_memory_desc_init_by_tag(&wplain2, 2, w2, dnnl_f32, dnnl_nc);
  Param *w = param_add(c, v, "weight", wmd, &wplain2);
  w->plain = wplain; /* exchanged through the 4-D view, reported as 2-D */
  return plan_weighted_step(c, v, w, "inner product", error);
}

static gboolean
plan_bn(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  guint C = x->n->shape.c;
  x->md = c->nodes[x->in[0]].md;
  unsigned flags = a->affine ? (dnnl_use_scale | dnnl_use_shift) : 0;
  dnnl_memory_desc_t st;
  md_1d(&st, C);
  if (a->affine) {
    param_add(c, v, "gamma", &st, &st);
    param_add(c, v, "beta", &st, &st);
  }
  x->mean = slot_new(c, md_bytes(&st), TRUE);
  x->var = slot_new(c, md_bytes(&st), TRUE);
  x->rmean = slot_new(c, md_bytes(&st), TRUE);
  x->rvar = slot_new(c, md_bytes(&st), TRUE);
  x->out = slot_new(c, md_bytes(&x->md), FALSE);
  int in = c->nodes[x->in[0]].out;
  /* Training: batch statistics out, then the running update. */
  dnnl_batch_normalization_desc_t d;
  TRY(dnnl_batch_normalization_forward_desc_init(&d, dnnl_forward_training, &x->md, (float)a->eps, flags),
      "batch norm descriptor for %s", node_desc(c, v));
  if (!pd_create(c, v, &x->fwd_pd, &d, NULL, "batch norm", error))
    return FALSE;
  Step *s = step_push(c, STEP_PRIM, v, c->fwd_train, NULL);
  if (!prim_from_pd(c, s, x->fwd_pd, "batch norm", error))
    return FALSE;
  step_arg(s, DNNL_ARG_SRC, &x->md, in);
  step_arg(s, DNNL_ARG_DST, &x->md, x->out);
  step_arg(s, DNNL_ARG_MEAN, &st, x->mean);
  step_arg(s, DNNL_ARG_VARIANCE, &st, x->var);
  if (a->affine) {
    step_arg(s, DNNL_ARG_SCALE, &st, param_of(c, v, 0)->value);
    step_arg(s, DNNL_ARG_SHIFT, &st, param_of(c, v, 1)->value);
  }
  step_push(c, STEP_BN_RUNNING, v, c->fwd_train, NULL);
  /* Evaluation: running statistics in. */
  dnnl_batch_normalization_desc_t e;
  TRY(dnnl_batch_normalization_forward_desc_init(&e, dnnl_forward_inference, &x->md, (float)a->eps,
                                                 flags | dnnl_use_global_stats),
      "batch norm (inference) descriptor for %s", node_desc(c, v));
  s = step_push(c, STEP_PRIM, v, c->fwd_eval, NULL);
  if (!make_prim(c, s, &e, NULL, NULL, NULL, "batch norm (inference)", error))
    return FALSE;
  step_arg(s, DNNL_ARG_SRC, &x->md, in);
  step_arg(s, DNNL_ARG_DST, &x->md, x->out);
  step_arg(s, DNNL_ARG_MEAN, &st, x->rmean);
  step_arg(s, DNNL_ARG_VARIANCE, &st, x->rvar);
  if (a->affine) {
    step_arg(s, DNNL_ARG_SCALE, &st, param_of(c, v, 0)->value);
    step_arg(s, DNNL_ARG_SHIFT, &st, param_of(c, v, 1)->value);
  }
  return TRUE;
}

static dnnl_alg_kind_t
eltwise_alg(const SieveOpAttrs *a, float *alpha, float *beta, gboolean *use_dst)
{
  *alpha = (float)a->alpha;
  *beta = 0;
  *use_dst = FALSE;
  switch (a->activation) {
  case SIEVE_ACT_RELU:
    *alpha = 0;
    *use_dst = TRUE;
    return dnnl_eltwise_relu_use_dst_for_bwd;
  case SIEVE_ACT_LEAKY_RELU:
    *use_dst = TRUE;
    return dnnl_eltwise_relu_use_dst_for_bwd;
  case SIEVE_ACT_ELU:
    return dnnl_eltwise_elu;
  case SIEVE_ACT_TANH:
    return dnnl_eltwise_tanh;
  case SIEVE_ACT_SIGMOID:
    return dnnl_eltwise_logistic;
  case SIEVE_ACT_GELU:
    return dnnl_eltwise_gelu_erf;
  case SIEVE_ACT_SWISH:
    *alpha = 1;
    return dnnl_eltwise_swish;
  default:
    return dnnl_alg_kind_undef;
  }
}

static gboolean
is_relu(const SieveGraphNode *n)
{
  return n->kind == SIEVE_OP_ACTIVATION &&
         (n->attrs.activation == SIEVE_ACT_RELU || n->attrs.activation == SIEVE_ACT_LEAKY_RELU);
}

static gboolean
plan_eltwise(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  x->md = c->nodes[x->in[0]].md;
  float alpha, beta;
  gboolean use_dst;
  dnnl_alg_kind_t alg = eltwise_alg(&x->n->attrs, &alpha, &beta, &use_dst);
  dnnl_eltwise_desc_t d;
  TRY(dnnl_eltwise_forward_desc_init(&d, c->options.backward ? dnnl_forward_training : dnnl_forward_inference, alg,
                                     &x->md, alpha, beta),
      "activation descriptor for %s", node_desc(c, v));
  if (!pd_create(c, v, &x->fwd_pd, &d, NULL, "activation", error))
    return FALSE;
  x->out = slot_new(c, md_bytes(&x->md), FALSE);
  Step *s = step_push(c, STEP_PRIM, v, c->fwd_train, c->fwd_eval);
  if (!prim_from_pd(c, s, x->fwd_pd, "activation", error))
    return FALSE;
  step_arg(s, DNNL_ARG_SRC, &x->md, c->nodes[x->in[0]].out);
  step_arg(s, DNNL_ARG_DST, &x->md, x->out);
  s->relu = is_relu(x->n);
  s->src = c->nodes[x->in[0]].out;
  s->dst = x->out;
  s->n = md_bytes(&x->md) / sizeof(float);
  return TRUE;
}

/* Pooling and global average pooling (a pooling whose window is the image). */
static gboolean
plan_pool(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  gboolean global = x->n->kind == SIEVE_OP_GLOBAL_AVG_POOL;
  SieveShape is = c->nodes[x->in[0]].n->shape;
  dnnl_memory_desc_t src, dst;
  if (!md_as4(c, x->in[0], &src, error))
    return FALSE;
  md_any4(&dst, c->options.batch, x->n->shape);
  dnnl_dims_t k = {global ? is.h : a->kernel[0], global ? is.w : a->kernel[1]};
  dnnl_dims_t s = {global ? 1 : a->stride[0], global ? 1 : a->stride[1]};
  dnnl_dims_t p = {global ? 0 : a->pad[0], global ? 0 : a->pad[1]};
  dnnl_dims_t dil = {0, 0};
  gboolean max = !global && a->pool == SIEVE_POOL_MAX;
  dnnl_alg_kind_t alg = max ? dnnl_pooling_max : dnnl_pooling_avg_exclude_padding;
  dnnl_pooling_v2_desc_t d;
  TRY(dnnl_pooling_v2_forward_desc_init(&d, c->options.backward ? dnnl_forward_training : dnnl_forward_inference,
                                        alg, &src, &dst, s, k, dil, p, p),
      "pooling descriptor for %s", node_desc(c, v));
  if (!pd_create(c, v, &x->fwd_pd, &d, NULL, "pooling", error))
    return FALSE;
  x->md = *dnnl_primitive_desc_query_md(x->fwd_pd, dnnl_query_dst_md, 0);
  x->out = slot_new(c, md_bytes(&x->md), FALSE);
  const dnnl_memory_desc_t *ws = dnnl_primitive_desc_query_md(x->fwd_pd, dnnl_query_workspace_md, 0);
  Step *st = step_push(c, STEP_PRIM, v, c->fwd_train, c->fwd_eval);
  if (!prim_from_pd(c, st, x->fwd_pd, "pooling", error))
    return FALSE;
  step_arg(st, DNNL_ARG_SRC, &src, c->nodes[x->in[0]].out);
  step_arg(st, DNNL_ARG_DST, &x->md, x->out);
  if (ws && ws->ndims > 0) {
    x->ws_md = *ws;
    x->ws = slot_new(c, md_bytes(ws), TRUE);
    step_arg(st, DNNL_ARG_WORKSPACE, ws, x->ws);
  }
  return TRUE;
}

static gboolean
plan_sum(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  x->md = c->nodes[x->in[0]].md;
  g_autofree dnnl_memory_desc_t *srcs = g_new(dnnl_memory_desc_t, x->n_in);
  g_autofree float *scales = g_new(float, x->n_in);
  for (guint k = 0; k < x->n_in; k++) {
    srcs[k] = c->nodes[x->in[k]].md;
    scales[k] = 1.0f;
  }
  dnnl_primitive_desc_t pd;
  TRY(dnnl_sum_primitive_desc_create(&pd, &x->md, (int)x->n_in, scales, srcs, NULL, c->engine), "sum for %s",
      node_desc(c, v));
  x->out = slot_new(c, md_bytes(&x->md), FALSE);
  Step *s = step_push(c, STEP_PRIM, v, c->fwd_train, c->fwd_eval);
  gboolean ok = prim_from_pd(c, s, pd, "sum", error);
  dnnl_primitive_desc_destroy(pd);
  if (!ok)
    return FALSE;
  for (guint k = 0; k < x->n_in; k++)
    step_arg(s, DNNL_ARG_MULTIPLE_SRC + (int)k, &srcs[k], c->nodes[x->in[k]].out);
  step_arg(s, DNNL_ARG_DST, &x->md, x->out);
  return TRUE;
}

static gboolean
plan_concat(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  g_autofree dnnl_memory_desc_t *srcs = g_new(dnnl_memory_desc_t, x->n_in);
  for (guint k = 0; k < x->n_in; k++)
    if (!md_as4(c, x->in[k], &srcs[k], error))
      return FALSE;
  /* A plain output keeps every input's channel range addressable for the
   * backward slices, whatever the channel counts. */
  md_plain(&x->md, c->options.batch, x->n->shape);
  dnnl_primitive_desc_t pd;
  TRY(dnnl_concat_primitive_desc_create(&pd, &x->md, (int)x->n_in, 1, srcs, NULL, c->engine), "concat for %s",
      node_desc(c, v));
  x->out = slot_new(c, md_bytes(&x->md), FALSE);
  Step *s = step_push(c, STEP_PRIM, v, c->fwd_train, c->fwd_eval);
  gboolean ok = prim_from_pd(c, s, pd, "concat", error);
  dnnl_primitive_desc_destroy(pd);
  if (!ok)
    return FALSE;
  for (guint k = 0; k < x->n_in; k++)
    step_arg(s, DNNL_ARG_MULTIPLE_SRC + (int)k, &srcs[k], c->nodes[x->in[k]].out);
  step_arg(s, DNNL_ARG_DST, &x->md, x->out);
  return TRUE;
}

static gboolean
plan_loss(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  guint K = c->nodes[x->in[0]].n->shape.c;
  c->n_classes = K;
  dnnl_dims_t d = {c->options.batch, K};
  dnnl_memory_desc_init_by_tag(&x->src_want, 2, d, dnnl_f32, dnnl_nc);
  /* Logits straight from a 4-D producer (a global pool, the input): ask for
   * plain nchw BxKx1x1, the same bytes as nc, since a reorder cannot change
   * the number of dimensions. */
  if (c->nodes[x->in[0]].md.ndims == 4) {
    dnnl_dims_t d4 = {c->options.batch, K, 1, 1};
    dnnl_memory_desc_init_by_tag(&x->src_want, 4, d4, dnnl_f32, dnnl_nchw);
  }
  if (!as_layout(c, v, x->in[0], &x->src_want, TRUE, &x->src_slot, error))
    return FALSE;
  x->prob = slot_new(c, md_bytes(&x->src_want), TRUE);
  dnnl_dims_t one = {1, 1, 1, 1};
  dnnl_memory_desc_init_by_tag(&x->md, 4, one, dnnl_f32, dnnl_nchw);
  x->out = slot_new(c, md_bytes(&x->md), TRUE);
  step_push(c, STEP_LOSS_FWD, v, c->fwd_train, c->fwd_eval);
  return TRUE;
}

/* Whether the caller asked to read u (its output, and its gradient). */
static gboolean
kept(Cpu *c, guint u)
{
  return c->options.keep_all || c->keep[u];
}

static gboolean
keep_output(Cpu *c, guint u)
{
  if (kept(c, u) || u == root(c, c->output) || c->nodes[u].role == ROLE_ZERO_BUF)
    return TRUE;
  if (c->options.backward && c->nodes[u].needed_bwd)
    return TRUE;
  /* A loss's logits stay readable for accuracy. */
  const SieveGraphNode *o = sieve_graph_node(c->graph, c->output);
  return o->kind == SIEVE_OP_SOFTMAX_CE && u == root(c, o->inputs[0]);
}

static gboolean
plan_forward(Cpu *c, GError **error)
{
  for (guint v = 0; v < c->n_nodes; v++) {
    CNode *x = &c->nodes[v];
    gboolean ok = TRUE;
    if (x->role == ROLE_ZERO_BUF) {
      md_plain(&x->md, c->options.batch, x->n->shape);
      x->out = slot_new(c, md_bytes(&x->md), TRUE); /* zeroed at allocation, never written */
      continue;
    }
    if (x->role != ROLE_REAL)
      continue;
    switch (x->n->kind) {
    case SIEVE_OP_INPUT:
      md_plain(&x->md, c->options.batch, x->n->shape);
      x->out = slot_new(c, md_bytes(&x->md), TRUE);
      break;
    case SIEVE_OP_CONV2D:
      ok = plan_conv(c, v, error);
      break;
    case SIEVE_OP_LINEAR:
      ok = plan_linear(c, v, error);
      break;
    case SIEVE_OP_BATCH_NORM:
      ok = plan_bn(c, v, error);
      break;
    case SIEVE_OP_ACTIVATION:
      ok = plan_eltwise(c, v, error);
      break;
    case SIEVE_OP_POOL:
    case SIEVE_OP_GLOBAL_AVG_POOL:
      ok = plan_pool(c, v, error);
      break;
    case SIEVE_OP_ADD:
      ok = plan_sum(c, v, error);
      break;
    case SIEVE_OP_CONCAT:
      ok = plan_concat(c, v, error);
      break;
    case SIEVE_OP_SOFTMAX_CE:
      ok = plan_loss(c, v, error);
      break;
    default:
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "the CPU backend cannot run %s", node_desc(c, v));
      return FALSE;
    }
    if (!ok)
      return FALSE;
    for (guint k = 0; k < c->pending->len; k++)
      slot_release(c, g_array_index(c->pending, int, k));
    g_array_set_size(c->pending, 0);
    /* Inputs whose last reader this was go back to the pool. */
    for (guint k = 0; k < x->n_in; k++) {
      CNode *u = &c->nodes[x->in[k]];
      if (--u->uses == 0 && !keep_output(c, u->id) && !u->released) {
        slot_release(c, u->out);
        u->released = TRUE;
      }
    }
  }
  return TRUE;
}

/* ---- pass 3: backward plan -------------------------------------------------- */

static gboolean
wants_grad(Cpu *c, guint u)
{
  CNode *x = &c->nodes[u];
  if (x->role != ROLE_REAL)
    return FALSE;
  if (x->n->kind == SIEVE_OP_INPUT)
    return c->options.input_grad;
  return TRUE;
}

/* Where a contribution to u's gradient in layout md goes: u's gradient
 * itself when it is the first one in u's layout, else a scratch slot. */
static int
contrib_begin(Cpu *c, guint u, const dnnl_memory_desc_t *md)
{
  CNode *x = &c->nodes[u];
  dnnl_memory_desc_t have;
  if (x->md.ndims == md->ndims)
    have = x->md;
  else
    md_as4(c, u, &have, NULL);
  if (x->diff < 0 && md_equal(&have, md)) {
    x->diff = slot_new(c, md_bytes(&x->md), FALSE);
    return x->diff;
  }
  return slot_new(c, md_bytes(md), FALSE);
}

static gboolean
contrib_end(Cpu *c, guint v, guint u, const dnnl_memory_desc_t *md, int slot, GError **error)
{
  CNode *x = &c->nodes[u];
  if (slot == x->diff)
    return TRUE;
  dnnl_memory_desc_t have;
  if (x->md.ndims == md->ndims) {
    have = x->md;
  } else if (!md_as4(c, u, &have, error)) {
    return FALSE;
  }
  gboolean first = x->diff < 0;
  if (first)
    x->diff = slot_new(c, md_bytes(&x->md), FALSE);
  if (md_equal(&have, md) && !first) {
    Step *s = step_push(c, STEP_ADD, v, c->bwd, NULL);
    s->dst = x->diff;
    s->src = slot;
    s->n = md_bytes(md) / sizeof(float);
  } else if (!push_reorder(c, v, c->bwd, NULL, md, slot, &have, x->diff, !first, error)) {
    return FALSE;
  }
  slot_release(c, slot);
  return TRUE;
}

/* A tensor (have, slot) in the layout a backward primitive chose: itself,
 * or a reorder into a scratch slot that goes back to the pool (appended to
 * tmps) once the step is planned. */
static gboolean
bwd_in(Cpu *c, guint v, const dnnl_memory_desc_t *have, int slot, const dnnl_memory_desc_t *want, int *out,
       GArray *tmps, GError **error)
{
  if (md_equal(have, want)) {
    *out = slot;
    return TRUE;
  }
  *out = slot_new(c, md_bytes(want), FALSE);
  g_array_append_val(tmps, *out);
  return push_reorder(c, v, c->bwd, NULL, have, slot, want, *out, FALSE, error);
}

static void
release_all(Cpu *c, GArray *tmps)
{
  for (guint i = 0; i < tmps->len; i++)
    slot_release(c, g_array_index(tmps, int, i));
  g_array_set_size(tmps, 0);
}

/* Descriptors of a convolution's or inner product's backward passes, every
 * layout left to oneDNN: forcing the forward's layouts on them can leave
 * only the reference implementation, a hundred times slower. */
static gboolean
conv_bwd_desc(Cpu *c, guint v, gboolean linear, gboolean weights, dnnl_primitive_desc_t *pd, GError **error)
{
  CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  dnnl_memory_desc_t src, wei, dst, bias;
  md_1d(&bias, a->out_channels);
  const dnnl_memory_desc_t *wmd = &param_of(c, v, 0)->md;
  dnnl_memory_desc_init_by_tag(&wei, wmd->ndims, wmd->dims, dnnl_f32, dnnl_format_tag_any);
  /* First the activations' own layouts (no reorders), weights free. */
  if (!linear) {
    dnnl_dims_t strides = {a->stride[0], a->stride[1]}, dil = {a->dilation[0] - 1, a->dilation[1] - 1},
                pad = {a->pad[0], a->pad[1]};
    dnnl_convolution_desc_t d;
    dnnl_status_t st =
      weights ? dnnl_dilated_convolution_backward_weights_desc_init(&d, dnnl_convolution_direct, &x->src_want, &wei,
                                                                    a->bias ? &bias : NULL, &x->md, strides, dil,
                                                                    pad, pad)
              : dnnl_dilated_convolution_backward_data_desc_init(&d, dnnl_convolution_direct, &x->src_want, &wei,
                                                                 &x->md, strides, dil, pad, pad);
    if (st == dnnl_success && pd_try(c, pd, &d, x->fwd_pd))
      return TRUE;
  }
  dnnl_memory_desc_init_by_tag(&src, x->src_want.ndims, x->src_want.dims, dnnl_f32, dnnl_format_tag_any);
  dnnl_memory_desc_init_by_tag(&dst, x->md.ndims, x->md.dims, dnnl_f32, dnnl_format_tag_any);
  if (linear) {
    dnnl_inner_product_desc_t d;
    if (weights)
      TRY(dnnl_inner_product_backward_weights_desc_init(&d, &src, &wei, a->bias ? &bias : NULL, &dst),
          "inner product weights descriptor for %s", node_desc(c, v));
    else
      TRY(dnnl_inner_product_backward_data_desc_init(&d, &src, &wei, &dst),
          "inner product backward descriptor for %s", node_desc(c, v));
    return pd_create(c, v, pd, &d, x->fwd_pd, weights ? "inner product weights" : "inner product backward", error);
  }
  dnnl_dims_t strides = {a->stride[0], a->stride[1]}, dil = {a->dilation[0] - 1, a->dilation[1] - 1},
              pad = {a->pad[0], a->pad[1]};
  dnnl_convolution_desc_t d;
  if (weights)
    TRY(dnnl_dilated_convolution_backward_weights_desc_init(&d, dnnl_convolution_direct, &src, &wei,
                                                            a->bias ? &bias : NULL, &dst, strides, dil, pad, pad),
        "convolution weights descriptor for %s", node_desc(c, v));
  else
    TRY(dnnl_dilated_convolution_backward_data_desc_init(&d, dnnl_convolution_direct, &src, &wei, &dst, strides,
                                                         dil, pad, pad),
        "convolution backward descriptor for %s", node_desc(c, v));
  return pd_create(c, v, pd, &d, x->fwd_pd, weights ? "convolution weights" : "convolution backward", error);
}

static gboolean
bwd_conv_like(Cpu *c, guint v, gboolean linear, GError **error)
{
  CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  Param *w = param_of(c, v, 0);
  dnnl_memory_desc_t bias;
  md_1d(&bias, a->out_channels);
  guint u = x->in[0];
  g_autoptr(GArray) tmps = g_array_new(FALSE, FALSE, sizeof(int));
  if (wants_grad(c, u)) {
    dnnl_primitive_desc_t pd;
    if (!conv_bwd_desc(c, v, linear, FALSE, &pd, error))
      return FALSE;
    dnnl_memory_desc_t dsrc = *dnnl_primitive_desc_query_md(pd, dnnl_query_diff_src_md, 0);
    dnnl_memory_desc_t wmd = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_memory_desc_t ddst = *dnnl_primitive_desc_query_md(pd, dnnl_query_diff_dst_md, 0);
    int wslot, dslot;
    gboolean ok = bwd_in(c, v, &w->md, w->value, &wmd, &wslot, tmps, error) &&
                  bwd_in(c, v, &x->md, x->diff, &ddst, &dslot, tmps, error);
    int dst = ok ? contrib_begin(c, u, &dsrc) : -1;
    Step *s = step_push(c, STEP_PRIM, v, c->bwd, NULL);
    ok = ok && prim_from_pd(c, s, pd, "backward data", error);
    dnnl_primitive_desc_destroy(pd);
    if (!ok)
      return FALSE;
    step_arg(s, DNNL_ARG_DIFF_DST, &ddst, dslot);
    step_arg(s, DNNL_ARG_WEIGHTS, &wmd, wslot);
    step_arg(s, DNNL_ARG_DIFF_SRC, &dsrc, dst);
    release_all(c, tmps);
    if (!contrib_end(c, v, u, &dsrc, dst, error))
      return FALSE;
  }
  /* From here on, steps that only the weight gradient needs. */
  guint first = c->bwd->len;
  dnnl_primitive_desc_t pd;
  if (!conv_bwd_desc(c, v, linear, TRUE, &pd, error))
    return FALSE;
  dnnl_memory_desc_t src = *dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
  dnnl_memory_desc_t dwei = *dnnl_primitive_desc_query_md(pd, dnnl_query_diff_weights_md, 0);
  dnnl_memory_desc_t ddst = *dnnl_primitive_desc_query_md(pd, dnnl_query_diff_dst_md, 0);
  int sslot, dslot;
  gboolean ok = bwd_in(c, v, &x->src_want, x->src_slot, &src, &sslot, tmps, error) &&
                bwd_in(c, v, &x->md, x->diff, &ddst, &dslot, tmps, error);
  gboolean direct = md_equal(&dwei, &w->md);
  int gslot = direct ? w->grad : slot_new(c, md_bytes(&dwei), FALSE);
  Step *s = step_push(c, STEP_PRIM, v, c->bwd, NULL);
  ok = ok && prim_from_pd(c, s, pd, "backward weights", error);
  dnnl_primitive_desc_destroy(pd);
  if (!ok)
    return FALSE;
  step_arg(s, DNNL_ARG_SRC, &src, sslot);
  step_arg(s, DNNL_ARG_DIFF_DST, &ddst, dslot);
  step_arg(s, DNNL_ARG_DIFF_WEIGHTS, &dwei, gslot);
  if (a->bias)
    step_arg(s, DNNL_ARG_DIFF_BIAS, &bias, param_of(c, v, 1)->grad);
  release_all(c, tmps);
  if (!direct) {
    if (!push_reorder(c, v, c->bwd, NULL, &dwei, gslot, &w->md, w->grad, FALSE, error))
      return FALSE;
    slot_release(c, gslot);
  }
  for (guint i = first; i < c->bwd->len; i++)
    ((Step *)c->steps->pdata[g_array_index(c->bwd, guint, i)])->param_only = TRUE;
  return TRUE;
}

static gboolean
bwd_bn(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  guint u = x->in[0];
  dnnl_memory_desc_t st;
  md_1d(&st, x->n->shape.c);
  gboolean need_src = wants_grad(c, u);
  if (!need_src && !a->affine)
    return TRUE;
  unsigned flags = a->affine ? (dnnl_use_scale | dnnl_use_shift) : 0;
  dnnl_batch_normalization_desc_t d;
  TRY(dnnl_batch_normalization_backward_desc_init(&d, a->affine ? dnnl_backward : dnnl_backward_data, &x->md, &x->md,
                                                  (float)a->eps, flags),
      "batch norm backward descriptor for %s", node_desc(c, v));
  dnnl_primitive_desc_t pd;
  if (!pd_create(c, v, &pd, &d, x->fwd_pd, "batch norm backward", error))
    return FALSE;
  /* oneDNN always writes diff_src; without a reader it goes to scratch. */
  int dst = need_src ? contrib_begin(c, u, &x->md) : slot_new(c, md_bytes(&x->md), FALSE);
  Step *s = step_push(c, STEP_PRIM, v, c->bwd, NULL);
  gboolean ok = prim_from_pd(c, s, pd, "batch norm backward", error);
  dnnl_primitive_desc_destroy(pd);
  if (!ok)
    return FALSE;
  step_arg(s, DNNL_ARG_SRC, &x->md, c->nodes[u].out);
  step_arg(s, DNNL_ARG_MEAN, &st, x->mean);
  step_arg(s, DNNL_ARG_VARIANCE, &st, x->var);
  step_arg(s, DNNL_ARG_DIFF_DST, &x->md, x->diff);
  step_arg(s, DNNL_ARG_DIFF_SRC, &x->md, dst);
  if (a->affine) {
    step_arg(s, DNNL_ARG_SCALE, &st, param_of(c, v, 0)->value);
    step_arg(s, DNNL_ARG_SHIFT, &st, param_of(c, v, 1)->value);
    step_arg(s, DNNL_ARG_DIFF_SCALE, &st, param_of(c, v, 0)->grad);
    step_arg(s, DNNL_ARG_DIFF_SHIFT, &st, param_of(c, v, 1)->grad);
  }
  if (!need_src) {
    slot_release(c, dst);
    return TRUE;
  }
  return contrib_end(c, v, u, &x->md, dst, error);
}

static gboolean
bwd_eltwise(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  guint u = x->in[0];
  if (!wants_grad(c, u))
    return TRUE;
  float alpha, beta;
  gboolean use_dst;
  dnnl_alg_kind_t alg = eltwise_alg(&x->n->attrs, &alpha, &beta, &use_dst);
  dnnl_eltwise_desc_t d;
  TRY(dnnl_eltwise_backward_desc_init(&d, alg, &x->md, &x->md, alpha, beta), "activation backward descriptor for %s",
      node_desc(c, v));
  dnnl_primitive_desc_t pd;
  if (!pd_create(c, v, &pd, &d, x->fwd_pd, "activation backward", error))
    return FALSE;
  int dst = contrib_begin(c, u, &x->md);
  Step *s = step_push(c, STEP_PRIM, v, c->bwd, NULL);
  gboolean ok = prim_from_pd(c, s, pd, "activation backward", error);
  dnnl_primitive_desc_destroy(pd);
  if (!ok)
    return FALSE;
  if (use_dst)
    step_arg(s, DNNL_ARG_DST, &x->md, x->out);
  else
    step_arg(s, DNNL_ARG_SRC, &x->md, c->nodes[u].out);
  step_arg(s, DNNL_ARG_DIFF_DST, &x->md, x->diff);
  step_arg(s, DNNL_ARG_DIFF_SRC, &x->md, dst);
  s->relu = is_relu(x->n);
  s->src = x->diff;
  s->dst = dst;
  s->n = md_bytes(&x->md) / sizeof(float);
  return contrib_end(c, v, u, &x->md, dst, error);
}

static gboolean
bwd_pool(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  guint u = x->in[0];
  if (!wants_grad(c, u))
    return TRUE;
  gboolean global = x->n->kind == SIEVE_OP_GLOBAL_AVG_POOL;
  SieveShape is = c->nodes[u].n->shape;
  dnnl_memory_desc_t src;
  if (!md_as4(c, u, &src, error))
    return FALSE;
  dnnl_dims_t k = {global ? is.h : a->kernel[0], global ? is.w : a->kernel[1]};
  dnnl_dims_t s = {global ? 1 : a->stride[0], global ? 1 : a->stride[1]};
  dnnl_dims_t p = {global ? 0 : a->pad[0], global ? 0 : a->pad[1]};
  dnnl_dims_t dil = {0, 0};
  gboolean max = !global && a->pool == SIEVE_POOL_MAX;
  dnnl_pooling_v2_desc_t d;
  TRY(dnnl_pooling_v2_backward_desc_init(&d, max ? dnnl_pooling_max : dnnl_pooling_avg_exclude_padding, &src, &x->md,
                                         s, k, dil, p, p),
      "pooling backward descriptor for %s", node_desc(c, v));
  dnnl_primitive_desc_t pd;
  if (!pd_create(c, v, &pd, &d, x->fwd_pd, "pooling backward", error))
    return FALSE;
  int dst = contrib_begin(c, u, &src);
  Step *st = step_push(c, STEP_PRIM, v, c->bwd, NULL);
  gboolean ok = prim_from_pd(c, st, pd, "pooling backward", error);
  dnnl_primitive_desc_destroy(pd);
  if (!ok)
    return FALSE;
  step_arg(st, DNNL_ARG_DIFF_DST, &x->md, x->diff);
  step_arg(st, DNNL_ARG_DIFF_SRC, &src, dst);
  if (x->ws >= 0)
    step_arg(st, DNNL_ARG_WORKSPACE, &x->ws_md, x->ws);
  return contrib_end(c, v, u, &src, dst, error);
}

static gboolean
bwd_sum(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  for (guint k = 0; k < x->n_in; k++) {
    guint u = x->in[k];
    if (!wants_grad(c, u))
      continue;
    int dst = contrib_begin(c, u, &x->md);
    Step *s = step_push(c, STEP_COPY, v, c->bwd, NULL);
    s->dst = dst;
    s->src = x->diff;
    s->n = md_bytes(&x->md) / sizeof(float);
    if (!contrib_end(c, v, u, &x->md, dst, error))
      return FALSE;
  }
  return TRUE;
}

static gboolean
bwd_concat(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  dnnl_dim_t off = 0;
  for (guint k = 0; k < x->n_in; k++) {
    guint u = x->in[k];
    SieveShape s = c->nodes[u].n->shape;
    dnnl_dims_t dims = {c->options.batch, s.c, s.h, s.w}, offs = {0, off, 0, 0};
    off += s.c;
    if (!wants_grad(c, u))
      continue;
    dnnl_memory_desc_t sub, want;
    TRY(dnnl_memory_desc_init_submemory(&sub, &x->md, dims, offs), "concat slice for %s", node_desc(c, v));
    if (!md_as4(c, u, &want, error))
      return FALSE;
    int dst = contrib_begin(c, u, &want);
    if (!push_reorder(c, v, c->bwd, NULL, &sub, x->diff, &want, dst, FALSE, error))
      return FALSE;
    if (!contrib_end(c, v, u, &want, dst, error))
      return FALSE;
  }
  return TRUE;
}

static gboolean
bwd_loss(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  guint u = x->in[0];
  if (!wants_grad(c, u))
    return TRUE;
  int dst = contrib_begin(c, u, &x->src_want);
  Step *s = step_push(c, STEP_LOSS_BWD, v, c->bwd, NULL);
  s->dst = dst;
  return contrib_end(c, v, u, &x->src_want, dst, error);
}

static gboolean
plan_backward(Cpu *c, GError **error)
{
  guint out = root(c, c->output);
  CNode *o = &c->nodes[out];
  if (o->n->kind == SIEVE_OP_SOFTMAX_CE && o->role == ROLE_REAL) {
    o->diff = -2; /* seeded by the loss step itself */
  } else if (o->role == ROLE_REAL) {
    c->out_grad = slot_new(c, md_bytes(&o->md), TRUE);
    o->diff = c->out_grad;
  }
  for (guint v = c->n_nodes; v-- > 0;) {
    CNode *x = &c->nodes[v];
    if (x->role != ROLE_REAL || x->diff == -1 || x->n->kind == SIEVE_OP_INPUT)
      continue;
    gboolean ok;
    switch (x->n->kind) {
    case SIEVE_OP_CONV2D:
      ok = bwd_conv_like(c, v, FALSE, error);
      break;
    case SIEVE_OP_LINEAR:
      ok = bwd_conv_like(c, v, TRUE, error);
      break;
    case SIEVE_OP_BATCH_NORM:
      ok = bwd_bn(c, v, error);
      break;
    case SIEVE_OP_ACTIVATION:
      ok = bwd_eltwise(c, v, error);
      break;
    case SIEVE_OP_POOL:
    case SIEVE_OP_GLOBAL_AVG_POOL:
      ok = bwd_pool(c, v, error);
      break;
    case SIEVE_OP_ADD:
      ok = bwd_sum(c, v, error);
      break;
    case SIEVE_OP_CONCAT:
      ok = bwd_concat(c, v, error);
      break;
    case SIEVE_OP_SOFTMAX_CE:
      ok = bwd_loss(c, v, error);
      break;
    default:
      ok = TRUE;
    }
    if (!ok)
      return FALSE;
    /* A kept gradient stays in its buffer until the next backward. */
    if (x->diff >= 0 && x->diff != c->out_grad && !kept(c, v))
      slot_release(c, x->diff);
  }
  return TRUE;
}

/* ---- binding and initialisation ----------------------------------------------- */

/* Arenas of runtimes freed lately, kept for the next runtime of the
 * process: scoring or training one network after another, each would
 * otherwise fault in (and the kernel zero) a few hundred MiB of fresh pages,
 * which on a virtual machine costs as much as the passes themselves.  At
 * most ARENA_POOL arenas and ARENA_POOL_BYTES are kept. */
#define ARENA_POOL 4
#define ARENA_POOL_BYTES ((size_t)2 << 30)

typedef struct {
  void *ptr;
  size_t bytes;
} Arena;

static GMutex arena_lock;
static Arena arena_pool[ARENA_POOL + 1];
static guint arena_count;

/* An arena of at least bytes: a pooled one (*dirty: it holds what its last
 * runtime left) or a fresh mapping (zero from the kernel). */
static gboolean
arena_take(size_t bytes, void **ptr, size_t *mapped, gboolean *dirty, GError **error)
{
  g_mutex_lock(&arena_lock);
  gint best = -1;
  for (guint i = 0; i < arena_count; i++)
    if (arena_pool[i].bytes >= bytes && (best < 0 || arena_pool[i].bytes < arena_pool[best].bytes))
      best = (gint)i;
  /* None large enough: the largest grows, keeping the pages it has. */
  gboolean grow = best < 0 && arena_count > 0;
  if (grow) {
    best = 0;
    for (guint i = 1; i < arena_count; i++)
      if (arena_pool[i].bytes > arena_pool[best].bytes)
        best = (gint)i;
  }
  Arena a = {0};
  if (best >= 0) {
    a = arena_pool[best];
    arena_pool[best] = arena_pool[--arena_count];
  }
  g_mutex_unlock(&arena_lock);
  /* Whole huge pages, so that a later, slightly larger network fits. */
  size_t size = (bytes + ((size_t)2 << 20) - 1) & ~(((size_t)2 << 20) - 1);
  if (a.ptr && grow) {
    void *p = mremap(a.ptr, a.bytes, size, MREMAP_MAYMOVE);
    if (p == MAP_FAILED) {
      munmap(a.ptr, a.bytes);
      a.ptr = NULL;
    } else {
#ifdef MADV_HUGEPAGE
      madvise(p, size, MADV_HUGEPAGE);
#endif
      a = (Arena){p, size};
    }
  }
  if (a.ptr) {
    *ptr = a.ptr;
    *mapped = a.bytes;
    *dirty = TRUE;
    return TRUE;
  }
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "cannot map %zu bytes for the network's tensors: %s",
                size, g_strerror(errno));
    return FALSE;
  }
#ifdef MADV_HUGEPAGE
  madvise(p, size, MADV_HUGEPAGE); /* advice only: without it, 4 KiB pages */
#endif
  *ptr = p;
  *mapped = size;
  *dirty = FALSE;
  return TRUE;
}

/* Returns an arena to the pool, unmapping the smallest when it is full. */
static void
arena_give(void *ptr, size_t bytes)
{
  g_mutex_lock(&arena_lock);
  arena_pool[arena_count++] = (Arena){ptr, bytes};
  size_t held = 0;
  for (guint i = 0; i < arena_count; i++)
    held += arena_pool[i].bytes;
  while (arena_count > 0 && (arena_count > ARENA_POOL || held > ARENA_POOL_BYTES)) {
    guint small = 0;
    for (guint i = 1; i < arena_count; i++)
      if (arena_pool[i].bytes < arena_pool[small].bytes)
        small = i;
    Arena out = arena_pool[small];
    arena_pool[small] = arena_pool[--arena_count];
    held -= out.bytes;
    munmap(out.ptr, out.bytes);
  }
  g_mutex_unlock(&arena_lock);
}

static gboolean
bind(Cpu *c, GError **error)
{
  /* One anonymous mapping for all slots rather than an allocation each:
   * the kernel hands it over zeroed (no memset), and on a kernel that
   * offers transparent huge pages in madvise mode it is faulted in 2 MiB at
   * a time.  With a few hundred MiB of activations at batch 64, 4 KiB page
   * faults and the memset were half of a proxy's time. */
  size_t total = 0;
  for (guint i = 0; i < c->slots->len; i++)
    total += (MAX(g_array_index(c->slots, Slot, i).bytes, 64) + 63) & ~(size_t)63;
  gboolean dirty;
  if (!arena_take(MAX(total, 64), &c->arena, &c->arena_bytes, &dirty, error))
    return FALSE;
  void *arena = c->arena;
  size_t offset = 0;
  for (guint i = 0; i < c->slots->len; i++) {
    Slot *s = &g_array_index(c->slots, Slot, i);
    s->ptr = (float *)((char *)arena + offset);
    size_t bytes = (MAX(s->bytes, 64) + 63) & ~(size_t)63;
    /* Dedicated slots count on starting at zero as in a fresh mapping
     * (the padding of blocked parameters, gradients no pass reaches,
     * optimizer state, materialised zeros); shared ones are written before
     * they are read, by each of the tensors that take turns in them, so a
     * recycled arena need not be cleared under them (a tenth of a small
     * network's scoring time). */
    if (dirty && s->dedicated)
      memset(s->ptr, 0, bytes);
    offset += bytes;
    c->bytes += bytes;
  }
  for (guint i = 0; i < c->steps->len; i++) {
    Step *s = c->steps->pdata[i];
    s->nargs = (int)s->specs->len;
    s->args = g_new0(dnnl_exec_arg_t, MAX(s->nargs, 1));
    s->mems = g_new0(dnnl_memory_t, MAX(s->nargs, 1));
    const_dnnl_primitive_desc_t pd = NULL;
    if (s->prim)
      TRY(dnnl_primitive_get_primitive_desc(s->prim, &pd), "descriptor of %s", node_desc(c, s->node));
    for (int k = 0; k < s->nargs; k++) {
      ArgSpec *a = &g_array_index(s->specs, ArgSpec, k);
      /* A binding in another layout than the primitive's is a planning bug:
       * catch it here rather than as a wrong number later. */
      const dnnl_memory_desc_t *want = pd ? dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, a->arg) : NULL;
      if (want && !md_equal(want, &a->md)) {
        g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
                    "internal: argument %d of the step for %s is bound in a layout its primitive does not take",
                    a->arg, node_desc(c, s->node));
        return FALSE;
      }
      char *ptr = (char *)slot_ptr(c, a->slot) + a->offset;
      TRY(dnnl_memory_create(&s->mems[k], &a->md, c->engine, ptr), "memory for %s", node_desc(c, s->node));
      s->args[k].arg = a->arg;
      s->args[k].memory = s->mems[k];
    }
    g_clear_pointer(&s->specs, g_array_unref);
  }
  return TRUE;
}

/* Copies between a plain buffer and a tensor stored in layout md. */
static gboolean
transfer(Cpu *c, const dnnl_memory_desc_t *plain, float *plain_ptr, const dnnl_memory_desc_t *md, float *ptr,
         gboolean to_plain, GError **error)
{
  if (md_equal(plain, md)) {
    if (to_plain)
      memcpy(plain_ptr, ptr, md_bytes(md));
    else
      memcpy(ptr, plain_ptr, md_bytes(md));
    return TRUE;
  }
  const dnnl_memory_desc_t *from = to_plain ? md : plain, *to = to_plain ? plain : md;
  dnnl_primitive_desc_t pd;
  TRY(dnnl_reorder_primitive_desc_create(&pd, from, c->engine, to, c->engine, NULL), "reorder to or from plain");
  dnnl_primitive_t p;
  dnnl_status_t st = dnnl_primitive_create(&p, pd);
  dnnl_primitive_desc_destroy(pd);
  TRY(st, "reorder primitive");
  dnnl_memory_t a, b;
  TRY(dnnl_memory_create(&a, from, c->engine, to_plain ? ptr : plain_ptr), "memory");
  TRY(dnnl_memory_create(&b, to, c->engine, to_plain ? plain_ptr : ptr), "memory");
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, a}, {DNNL_ARG_TO, b}};
  st = dnnl_primitive_execute(p, c->stream, 2, args);
  if (st == dnnl_success)
    st = dnnl_stream_wait(c->stream);
  dnnl_memory_destroy(a);
  dnnl_memory_destroy(b);
  dnnl_primitive_destroy(p);
  TRY(st, "reorder");
  return TRUE;
}

/* Kaiming-style initial values as PyTorch draws them by default
 * (kaiming_uniform_ with a = sqrt(5); He et al. 2015, "Delving deep into
 * rectifiers"): convolution and linear weights and biases U(-b, b) with
 * b = 1/sqrt(fan_in); batch norm gamma 1, beta 0, running mean 0 and
 * variance 1.  The gain sqrt(2) of He's ReLU derivation is deliberately not
 * used: with batch norm after every convolution the scale of a weight does
 * not change the function, only the effective learning rate (lr/|w|^2), and
 * PyTorch's smaller weights are what NAS training recipes were tuned with. */
static gboolean
init_params(Cpu *c, GError **error)
{
  SieveRng rng;
  sieve_rng_seed(&rng, c->options.seed);
  for (guint i = 0; i < c->params->len; i++) {
    Param *p = &g_array_index(c->params, Param, i);
    const SieveGraphNode *n = c->nodes[p->info.node].n;
    g_autofree float *v = g_new(float, p->info.size);
    double fan_in = n->kind == SIEVE_OP_LINEAR ? (double)sieve_graph_node(c->graph, n->inputs[0])->shape.c *
                                                     sieve_graph_node(c->graph, n->inputs[0])->shape.h *
                                                     sieve_graph_node(c->graph, n->inputs[0])->shape.w
                                               : 0;
    if (n->kind == SIEVE_OP_CONV2D) {
      SieveShape is = sieve_graph_node(c->graph, n->inputs[0])->shape;
      fan_in = (double)is.c / n->attrs.groups * n->attrs.kernel[0] * n->attrs.kernel[1];
    }
    for (guint64 k = 0; k < p->info.size; k++) {
      if (n->kind == SIEVE_OP_BATCH_NORM)
        v[k] = g_str_equal(p->info.name, "gamma") ? 1.0f : 0.0f;
      else
        v[k] = (float)((2 * sieve_rng_uniform(&rng) - 1) / sqrt(fan_in));
    }
    if (!transfer(c, &p->plain, v, &p->md, slot_ptr(c, p->value), FALSE, error))
      return FALSE;
  }
  for (guint v = 0; v < c->n_nodes; v++)
    if (c->nodes[v].rvar >= 0)
      for (guint k = 0; k < c->nodes[v].n->shape.c; k++)
        slot_ptr(c, c->nodes[v].rvar)[k] = 1.0f;
  return TRUE;
}

/* ---- running ---------------------------------------------------------------- */

static void
loss_forward(Cpu *c, CNode *x)
{
  guint B = c->options.batch, K = c->n_classes;
  const float *z = slot_ptr(c, x->src_slot);
  float *p = slot_ptr(c, x->prob);
  double eps = x->n->attrs.label_smoothing, total = 0;
  for (guint b = 0; b < B; b++) {
    const float *row = z + (gsize)b * K;
    double m = row[0];
    for (guint k = 1; k < K; k++)
      m = MAX(m, row[k]);
    double s = 0, mean = 0;
    for (guint k = 0; k < K; k++) {
      s += exp(row[k] - m);
      mean += row[k];
    }
    double lse = m + log(s);
    for (guint k = 0; k < K; k++)
      p[(gsize)b * K + k] = (float)exp(row[k] - lse);
    if (c->has_labels) {
      /* -sum_k t_k log p_k with t = (1-eps) onehot + eps/K. */
      total += lse - (1 - eps) * row[c->labels[b]] - eps * mean / K;
    }
  }
  c->loss = c->has_labels ? total / B : NAN;
  slot_ptr(c, x->out)[0] = (float)c->loss;
}

static void
loss_backward(Cpu *c, CNode *x, float *dz)
{
  guint B = c->options.batch, K = c->n_classes;
  const float *p = slot_ptr(c, x->prob);
  double eps = x->n->attrs.label_smoothing;
  for (guint b = 0; b < B; b++)
    for (guint k = 0; k < K; k++) {
      double t = eps / K + (k == (guint)c->labels[b] ? 1 - eps : 0);
      dz[(gsize)b * K + k] = (float)((p[(gsize)b * K + k] - t) / B);
    }
}

static void
bn_running(Cpu *c, CNode *x)
{
  double m = x->n->attrs.momentum;
  double n = (double)c->options.batch * x->n->shape.h * x->n->shape.w;
  double unbias = n > 1 ? n / (n - 1) : 1; /* PyTorch keeps the unbiased variance */
  float *rm = slot_ptr(c, x->rmean), *rv = slot_ptr(c, x->rvar);
  const float *bm = slot_ptr(c, x->mean), *bv = slot_ptr(c, x->var);
  for (guint k = 0; k < x->n->shape.c; k++) {
    rm[k] = (float)((1 - m) * rm[k] + m * bm[k]);
    rv[k] = (float)((1 - m) * rv[k] + m * bv[k] * unbias);
  }
}

/* A ReLU step on the frozen mask: forward y = m ? x : alpha x, backward
 * dx = m ? dy : alpha dy (the same form: src -> dst), in the tensor's own
 * layout, which input, output, gradients and mask share. */
static void
frozen_relu(Cpu *c, Step *s)
{
  CNode *x = &c->nodes[s->node];
  float alpha = x->n->attrs.activation == SIEVE_ACT_LEAKY_RELU ? (float)x->n->attrs.alpha : 0.0f;
  const float *m = x->mask, *a = slot_ptr(c, s->src);
  float *d = slot_ptr(c, s->dst);
  gssize n = (gssize)s->n;
#pragma omp parallel for simd if (n > 65536) schedule(static)
  for (gssize k = 0; k < n; k++)
    d[k] = m[k] > 0 ? a[k] : alpha * a[k];
}

static gboolean
run(Cpu *c, GArray *list, GError **error)
{
  omp_set_num_threads((int)c->threads);
  for (guint i = 0; i < list->len; i++) {
    Step *s = c->steps->pdata[g_array_index(list, guint, i)];
    if (s->param_only && c->input_only)
      continue;
    switch (s->kind) {
    case STEP_PRIM:
      if (s->relu && c->frozen) {
        frozen_relu(c, s);
        break;
      }
      TRY(dnnl_primitive_execute(s->prim, c->stream, s->nargs, s->args), "running %s", node_desc(c, s->node));
      break;
    case STEP_ADD: {
      float *d = slot_ptr(c, s->dst);
      const float *a = slot_ptr(c, s->src);
      gssize n = (gssize)s->n;
#pragma omp parallel for simd if (n > 65536) schedule(static)
      for (gssize k = 0; k < n; k++)
        d[k] += a[k];
      break;
    }
    case STEP_COPY:
      memcpy(slot_ptr(c, s->dst), slot_ptr(c, s->src), s->n * sizeof(float));
      break;
    case STEP_LOSS_FWD:
      loss_forward(c, &c->nodes[s->node]);
      break;
    case STEP_LOSS_BWD:
      loss_backward(c, &c->nodes[s->node], slot_ptr(c, s->dst));
      break;
    case STEP_BN_RUNNING:
      bn_running(c, &c->nodes[s->node]);
      break;
    }
  }
  TRY(dnnl_stream_wait(c->stream), "waiting for the stream");
  return TRUE;
}

static gboolean
cpu_forward(gpointer impl, const float *x, const gint32 *labels, SieveMode mode, GError **error)
{
  Cpu *c = impl;
  CNode *in = &c->nodes[c->input];
  if (in->out >= 0)
    memcpy(slot_ptr(c, in->out), x, md_bytes(&in->md));
  c->has_labels = FALSE;
  if (labels && c->n_classes) {
    for (guint b = 0; b < c->options.batch; b++)
      if (labels[b] < 0 || (guint)labels[b] >= c->n_classes) {
        g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "label %d of example %u is outside 0..%u", labels[b], b,
                    c->n_classes - 1);
        return FALSE;
      }
    /* A buffer of the runtime's own: the step must not allocate. */
    if (c->labels == NULL)
      c->labels = g_new(gint32, c->options.batch);
    memcpy(c->labels, labels, c->options.batch * sizeof(gint32));
    c->has_labels = TRUE;
  }
  c->loss = NAN;
  return run(c, mode == SIEVE_MODE_TRAIN ? c->fwd_train : c->fwd_eval, error);
}

static gboolean
cpu_backward(gpointer impl, const float *output_grad, gboolean input_only, GError **error)
{
  Cpu *c = impl;
  c->input_only = input_only;
  CNode *o = &c->nodes[root(c, c->output)];
  if (o->n->kind == SIEVE_OP_SOFTMAX_CE) {
    if (!c->has_labels) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "backward through a loss needs the forward's labels");
      return FALSE;
    }
  } else if (c->out_grad >= 0) {
    if (!output_grad) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "the graph's output is not a loss: give its gradient");
      return FALSE;
    }
    dnnl_memory_desc_t plain;
    if (o->md.ndims == 2)
      dnnl_memory_desc_init_by_tag(&plain, 2, o->md.dims, dnnl_f32, dnnl_nc);
    else
      md_plain(&plain, c->options.batch, o->n->shape);
    if (!transfer(c, &plain, (float *)output_grad, &o->md, slot_ptr(c, c->out_grad), FALSE, error))
      return FALSE;
  }
  /* Parameters no gradient reaches keep a zero gradient. */
  for (guint i = 0; i < c->params->len; i++) {
    Param *p = &g_array_index(c->params, Param, i);
    if (c->nodes[p->info.node].diff == -1)
      memset(slot_ptr(c, p->grad), 0, md_bytes(&p->md));
  }
  return run(c, c->bwd, error);
}

static double
cpu_loss(gpointer impl)
{
  return ((Cpu *)impl)->loss;
}

static gboolean
read_node(Cpu *c, guint node, gboolean diff, float *out, GError **error)
{
  if (node >= c->n_nodes || c->nodes[node].role == ROLE_DEAD) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "node %u is not part of the compiled graph", node);
    return FALSE;
  }
  CNode *x = &c->nodes[root(c, node)];
  SieveShape s = x->n->shape;
  gsize n = (gsize)c->options.batch * s.c * s.h * s.w;
  if (x->role == ROLE_ZERO) {
    memset(out, 0, n * sizeof(float));
    return TRUE;
  }
  if (x->n->kind == SIEVE_OP_SOFTMAX_CE && !diff) {
    /* Its shape is 1x1x1 per example but one value is stored (the batch
     * mean): give it to every example rather than reorder mismatched dims. */
    for (guint b = 0; b < c->options.batch; b++)
      out[b] = slot_ptr(c, x->out)[0];
    return TRUE;
  }
  int slot = diff ? x->diff : x->out;
  if (slot < 0 || (!diff && x->released)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
                "%s was not kept after its last use (compile with keep_all to read any node)",
                node_desc(c, node));
    return FALSE;
  }
  dnnl_memory_desc_t plain;
  if (x->md.ndims == 2)
    dnnl_memory_desc_init_by_tag(&plain, 2, x->md.dims, dnnl_f32, dnnl_nc);
  else
    md_plain(&plain, c->options.batch, s);
  return transfer(c, &plain, out, &x->md, slot_ptr(c, slot), TRUE, error);
}

static gboolean
cpu_read(gpointer impl, guint node, float *out, GError **error)
{
  return read_node(impl, node, FALSE, out, error);
}

/* Bits of x > 0, 64 elements to a word: AVX2 compares 8 floats at once
 * where the CPU has it (asked once), a plain loop elsewhere. */
__attribute__((target("avx2"))) static void
pack_signs_avx2(const float *x, gsize n, guint64 *out)
{
  gsize full = n / 64;
  __m256 zero = _mm256_setzero_ps();
  for (gsize w = 0; w < full; w++) {
    guint64 word = 0;
    for (int k = 0; k < 8; k++) {
      __m256 v = _mm256_loadu_ps(x + w * 64 + k * 8);
      word |= (guint64)(guint)_mm256_movemask_ps(_mm256_cmp_ps(v, zero, _CMP_GT_OQ)) << (8 * k);
    }
    out[w] = word;
  }
  if (full * 64 < n) {
    guint64 word = 0;
    for (gsize k = full * 64; k < n; k++)
      word |= (guint64)(x[k] > 0) << (k - full * 64);
    out[full] = word;
  }
}

static void
pack_signs_generic(const float *x, gsize n, guint64 *out)
{
  for (gsize w = 0; w * 64 < n; w++) {
    guint64 word = 0;
    for (gsize k = w * 64; k < MIN(n, w * 64 + 64); k++)
      word |= (guint64)(x[k] > 0) << (k - w * 64);
    out[w] = word;
  }
}

static void
pack_signs(const float *x, gsize n, guint64 *out)
{
  static int avx2 = -1;
  if (avx2 < 0) {
    __builtin_cpu_init();
    avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
  }
  if (avx2)
    pack_signs_avx2(x, n, out);
  else
    pack_signs_generic(x, n, out);
}

/* Whether md is a blocked layout from the buffer's start without padding:
 * every element stored once, nothing else stored, so that a loop over the
 * buffer sees exactly the tensor. */
static gboolean
md_dense(const dnnl_memory_desc_t *md)
{
  if (md->format_kind != dnnl_blocked || md->offset0 != 0)
    return FALSE;
  for (int d = 0; d < md->ndims; d++)
    if (md->padded_dims[d] != md->dims[d] || md->padded_offsets[d] != 0)
      return FALSE;
  return TRUE;
}

/* Whether a tensor stored as md holds each example's elements contiguously
 * (in some order of their own, the same for every example) with no
 * padding: then its signs pack straight from the buffer. */
static gboolean
examples_contiguous(const dnnl_memory_desc_t *md, gsize per_example)
{
  if (!md_dense(md) || md->format_desc.blocking.strides[0] != (dnnl_dim_t)per_example)
    return FALSE;
  for (int k = 0; k < md->format_desc.blocking.inner_nblks; k++)
    if (md->format_desc.blocking.inner_idxs[k] == 0)
      return FALSE;
  return TRUE;
}

static gboolean
cpu_read_signs(gpointer impl, guint node, guint64 *codes, GError **error)
{
  Cpu *c = impl;
  if (node >= c->n_nodes || c->nodes[node].role == ROLE_DEAD) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "node %u is not part of the compiled graph", node);
    return FALSE;
  }
  CNode *x = &c->nodes[root(c, node)];
  SieveShape s = x->n->shape;
  gsize per = (gsize)s.c * s.h * s.w, words = (per + 63) / 64, batch = c->options.batch;
  if (x->n->kind == SIEVE_OP_SOFTMAX_CE) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "%s is a loss: it has no elements per example",
                node_desc(c, node));
    return FALSE;
  }
  if (x->role == ROLE_ZERO) {
    memset(codes, 0, batch * words * sizeof(guint64));
    return TRUE;
  }
  if (x->out < 0 || x->released) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
                "%s was not kept after its last use (compile with keep_all, or name it in keep)", node_desc(c, node));
    return FALSE;
  }
  if (examples_contiguous(&x->md, per)) {
    const float *p = slot_ptr(c, x->out);
    for (gsize b = 0; b < batch; b++)
      pack_signs(p + b * per, per, codes + b * words);
    return TRUE;
  }
  g_autofree float *plain = g_new(float, batch * per);
  if (!read_node(c, node, FALSE, plain, error))
    return FALSE;
  for (gsize b = 0; b < batch; b++)
    pack_signs(plain + b * per, per, codes + b * words);
  return TRUE;
}

static gboolean
cpu_read_input_grad(gpointer impl, float *out, GError **error)
{
  Cpu *c = impl;
  if (c->nodes[c->input].diff < 0) {
    /* Nothing depends on the input (a degenerate network). */
    SieveShape s = c->nodes[c->input].n->shape;
    memset(out, 0, (gsize)c->options.batch * s.c * s.h * s.w * sizeof(float));
    return TRUE;
  }
  return read_node(c, c->input, TRUE, out, error);
}

static gboolean
cpu_read_grad(gpointer impl, guint node, float *out, GError **error)
{
  Cpu *c = impl;
  if (node >= c->n_nodes || c->nodes[node].role == ROLE_DEAD) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "node %u is not part of the compiled graph", node);
    return FALSE;
  }
  guint r = root(c, node);
  CNode *x = &c->nodes[r];
  if (x->role == ROLE_ZERO || x->role == ROLE_ZERO_BUF) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
                "%s is a zero the runtime folds away: no gradient is computed for it", node_desc(c, node));
    return FALSE;
  }
  if (x->n->kind == SIEVE_OP_SOFTMAX_CE) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "%s is the loss: its gradient is 1", node_desc(c, node));
    return FALSE;
  }
  if (r == c->input) {
    if (!c->options.input_grad) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "the input's gradient needs input_grad at compile time");
      return FALSE;
    }
    return cpu_read_input_grad(c, out, error);
  }
  if (!kept(c, r) && r != root(c, c->output)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
                "the gradient of %s was not kept (compile with keep_all, or name it in keep)", node_desc(c, node));
    return FALSE;
  }
  if (x->diff < 0) {
    /* No gradient reaches it (nothing differentiable reads it). */
    SieveShape s = x->n->shape;
    memset(out, 0, (gsize)c->options.batch * s.c * s.h * s.w * sizeof(float));
    return TRUE;
  }
  return read_node(c, node, TRUE, out, error);
}

/* How a 4-D tensor stored as md lays out (b, c, h, w): at
 * b*st[0] + (c/blk)*st[1] + h*st[2] + w*st[3] + c%blk, plain (blk 1, any
 * order of the dimensions) or blocked by channels (nChw8c, nChw16c: what
 * oneDNN picks for convolutions).  FALSE for anything else (padding, other
 * blockings): the caller then reads plain copies. */
static gboolean
channel_layout(const dnnl_memory_desc_t *md, dnnl_dim_t st[4], dnnl_dim_t *blk)
{
  if (md->ndims != 4 || !md_dense(md))
    return FALSE;
  const dnnl_blocking_desc_t *bd = &md->format_desc.blocking;
  if (bd->inner_nblks == 0)
    *blk = 1;
  else if (bd->inner_nblks == 1 && bd->inner_idxs[0] == 1 && bd->inner_blks[0] <= 64 &&
           md->dims[1] % bd->inner_blks[0] == 0)
    *blk = bd->inner_blks[0];
  else
    return FALSE;
  for (int d = 0; d < 4; d++)
    st[d] = bd->strides[d];
  return TRUE;
}

static gboolean
cpu_read_channel_dots(gpointer impl, guint node, double *dots, GError **error)
{
  Cpu *c = impl;
  guint batch = c->options.batch;
  dnnl_dim_t st[4], blk;
  if (node < c->n_nodes && c->nodes[node].role != ROLE_DEAD) {
    guint r = root(c, node);
    CNode *x = &c->nodes[r];
    if (x->role != ROLE_ZERO && x->role != ROLE_ZERO_BUF && x->n->kind != SIEVE_OP_SOFTMAX_CE && r != c->input &&
        (kept(c, r) || r == root(c, c->output)) && x->out >= 0 && !x->released && x->diff >= 0 &&
        channel_layout(&x->md, st, &blk)) {
      /* Straight from the buffers, both stored as md: no copies. */
      const float *a = slot_ptr(c, x->out), *g = slot_ptr(c, x->diff);
      guint C = x->n->shape.c, H = x->n->shape.h, W = x->n->shape.w;
#pragma omp parallel for num_threads(c->threads) schedule(static)
      for (guint b = 0; b < batch; b++) {
        double acc[64];
        for (guint c0 = 0; c0 < C; c0 += (guint)blk) {
          for (dnnl_dim_t k = 0; k < blk; k++)
            acc[k] = 0;
          gsize base = (gsize)b * st[0] + (gsize)(c0 / blk) * st[1];
          for (guint h = 0; h < H; h++)
            for (guint w = 0; w < W; w++) {
              gsize off = base + (gsize)h * st[2] + (gsize)w * st[3];
              for (dnnl_dim_t k = 0; k < blk; k++)
                acc[k] += (double)a[off + k] * g[off + k];
            }
          for (dnnl_dim_t k = 0; k < blk; k++)
            dots[(gsize)b * C + c0 + k] = acc[k];
        }
      }
      return TRUE;
    }
  }
  /* Everything else (and every error) as the plain reads give it. */
  SieveShape s = node < c->n_nodes ? c->nodes[node].n->shape : (SieveShape){0, 0, 0};
  gsize hw = (gsize)s.h * s.w, n = (gsize)batch * s.c * hw;
  g_autofree float *a = g_new(float, MAX(n, 1)), *g = g_new(float, MAX(n, 1));
  if (!cpu_read(c, node, a, error) || !cpu_read_grad(c, node, g, error))
    return FALSE;
  for (gsize bc = 0; bc < (gsize)batch * s.c; bc++) {
    double acc = 0;
    for (gsize k = 0; k < hw; k++)
      acc += (double)a[bc * hw + k] * g[bc * hw + k];
    dots[bc] = acc;
  }
  return TRUE;
}

static gboolean
cpu_freeze(gpointer impl, gboolean freeze, GError **error)
{
  Cpu *c = impl;
  if (!freeze) {
    c->frozen = FALSE;
    return TRUE;
  }
  for (guint v = 0; v < c->n_nodes; v++) {
    CNode *x = &c->nodes[v];
    if (x->role != ROLE_REAL || !is_relu(x->n))
      continue;
    if (x->released) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
                  "freezing activations needs every ReLU's output: compile with backward");
      return FALSE;
    }
    size_t bytes = md_bytes(&x->md);
    if (x->mask == NULL)
      x->mask = g_aligned_alloc(1, MAX(bytes, 64), 64);
    memcpy(x->mask, slot_ptr(c, x->out), bytes);
  }
  c->frozen = TRUE;
  return TRUE;
}

static CNode *
bn_node(Cpu *c, guint node, GError **error)
{
  if (node >= c->n_nodes || c->nodes[node].role != ROLE_REAL || c->nodes[node].n->kind != SIEVE_OP_BATCH_NORM) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "node %u is not a batch norm of the compiled graph", node);
    return NULL;
  }
  return &c->nodes[node];
}

static gboolean
cpu_get_running(gpointer impl, guint node, float *mean, float *var, GError **error)
{
  Cpu *c = impl;
  CNode *x = bn_node(c, node, error);
  if (!x)
    return FALSE;
  gsize bytes = x->n->shape.c * sizeof(float);
  if (mean)
    memcpy(mean, slot_ptr(c, x->rmean), bytes);
  if (var)
    memcpy(var, slot_ptr(c, x->rvar), bytes);
  return TRUE;
}

static gboolean
cpu_set_running(gpointer impl, guint node, const float *mean, const float *var, GError **error)
{
  Cpu *c = impl;
  CNode *x = bn_node(c, node, error);
  if (!x)
    return FALSE;
  gsize bytes = x->n->shape.c * sizeof(float);
  if (mean)
    memcpy(slot_ptr(c, x->rmean), mean, bytes);
  if (var)
    memcpy(slot_ptr(c, x->rvar), var, bytes);
  return TRUE;
}

static guint
cpu_n_params(gpointer impl)
{
  return ((Cpu *)impl)->params->len;
}

static const SieveParamInfo *
cpu_param_info(gpointer impl, guint i)
{
  return &g_array_index(((Cpu *)impl)->params, Param, i).info;
}

static gboolean
cpu_get_param(gpointer impl, guint i, float *out, GError **error)
{
  Cpu *c = impl;
  Param *p = &g_array_index(c->params, Param, i);
  return transfer(c, &p->plain, out, &p->md, slot_ptr(c, p->value), TRUE, error);
}

static gboolean
cpu_set_param(gpointer impl, guint i, const float *values, GError **error)
{
  Cpu *c = impl;
  Param *p = &g_array_index(c->params, Param, i);
  return transfer(c, &p->plain, (float *)values, &p->md, slot_ptr(c, p->value), FALSE, error);
}

static gboolean
cpu_get_grad(gpointer impl, guint i, float *out, GError **error)
{
  Cpu *c = impl;
  Param *p = &g_array_index(c->params, Param, i);
  return transfer(c, &p->plain, out, &p->md, slot_ptr(c, p->grad), TRUE, error);
}

/* PyTorch's SGD (dampening 0): g += wd w; v = m v + g; step along g + m v
 * (Nesterov) or v.  Padding inside blocked layouts stays zero: its
 * weights, gradients and velocities all start and remain zero. */
static gboolean
cpu_sgd_step(gpointer impl, const SieveSgd *sgd, GError **error)
{
  Cpu *c = impl;
  omp_set_num_threads((int)c->threads);
  float lr = (float)sgd->lr, m = (float)sgd->momentum, wd = (float)sgd->weight_decay;
  for (guint i = 0; i < c->params->len; i++) {
    Param *p = &g_array_index(c->params, Param, i);
    float *w = slot_ptr(c, p->value), *g = slot_ptr(c, p->grad), *v = slot_ptr(c, p->velocity);
    gssize n = (gssize)(md_bytes(&p->md) / sizeof(float));
    gboolean nesterov = sgd->nesterov;
#pragma omp parallel for if (n > 32768) schedule(static)
    for (gssize k = 0; k < n; k++) {
      float gk = g[k] + wd * w[k];
      if (m != 0) {
        v[k] = m * v[k] + gk;
        gk = nesterov ? gk + m * v[k] : v[k];
      }
      w[k] -= lr * gk;
    }
  }
  return TRUE;
}

static guint64
cpu_memory_bytes(gpointer impl)
{
  return ((Cpu *)impl)->bytes;
}

static const char *
cpu_describe(gpointer impl)
{
  return ((Cpu *)impl)->description;
}

static void
cpu_destroy(gpointer impl)
{
  Cpu *c = impl;
  if (!c)
    return;
  if (c->steps)
    g_ptr_array_unref(c->steps);
  for (guint v = 0; v < c->n_nodes; v++) {
    if (c->nodes[v].fwd_pd)
      dnnl_primitive_desc_destroy(c->nodes[v].fwd_pd);
    g_free(c->nodes[v].in);
    g_aligned_free(c->nodes[v].mask);
  }
  g_free(c->nodes);
  if (c->arena)
    arena_give(c->arena, c->arena_bytes);
  g_clear_pointer(&c->slots, g_array_unref);
  g_clear_pointer(&c->free, g_array_unref);
  g_clear_pointer(&c->pending, g_array_unref);
  g_clear_pointer(&c->fwd_train, g_array_unref);
  g_clear_pointer(&c->fwd_eval, g_array_unref);
  g_clear_pointer(&c->bwd, g_array_unref);
  g_clear_pointer(&c->params, g_array_unref);
  if (c->stream)
    dnnl_stream_destroy(c->stream);
  sieve_graph_free(c->graph);
  g_free(c->keep);
  g_free(c->labels);
  g_free(c->description);
  g_free(c);
}

static gpointer
cpu_compile(const SieveGraph *graph, const SieveRuntimeOptions *options, GError **error)
{
  Cpu *c = g_new0(Cpu, 1);
  c->options = *options;
  c->options.device = NULL;
  c->threads = options->threads ? options->threads : (guint)g_get_num_processors();
  omp_set_num_threads((int)c->threads);
  c->graph = sieve_graph_copy(graph);
  c->n_nodes = sieve_graph_n_nodes(graph);
  c->nodes = g_new0(CNode, c->n_nodes);
  c->input = sieve_graph_input_node(graph);
  c->output = sieve_graph_output(graph);
  c->slots = g_array_new(FALSE, TRUE, sizeof(Slot));
  c->free = g_array_new(FALSE, FALSE, sizeof(int));
  c->pending = g_array_new(FALSE, FALSE, sizeof(int));
  c->steps = g_ptr_array_new_with_free_func(step_free);
  c->fwd_train = g_array_new(FALSE, FALSE, sizeof(guint));
  c->fwd_eval = g_array_new(FALSE, FALSE, sizeof(guint));
  c->bwd = g_array_new(FALSE, FALSE, sizeof(guint));
  c->params = g_array_new(FALSE, TRUE, sizeof(Param));
  c->out_grad = -1;
  c->loss = NAN;
  const dnnl_version_t *ver = dnnl_version();
  c->description = g_strdup_printf("cpu (oneDNN %d.%d.%d, %u thread%s)", ver->major, ver->minor, ver->patch,
                                   c->threads, c->threads == 1 ? "" : "s");
  if (!(c->engine = cpu_engine(error)))
    goto fail;
  if (dnnl_stream_create(&c->stream, c->engine, dnnl_stream_default_flags) != dnnl_success) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "oneDNN could not create a CPU stream");
    goto fail;
  }
  resolve(c);
  /* The caller's keep list, on the nodes that hold the tensors. */
  c->keep = g_new0(gboolean, c->n_nodes);
  for (guint i = 0; i < options->n_keep; i++) {
    guint v = options->keep[i];
    if (v >= c->n_nodes || c->nodes[v].role == ROLE_DEAD) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "keep: node %u is not part of the graph's live nodes", v);
      goto fail;
    }
    c->keep[root(c, v)] = TRUE;
  }
  c->options.keep = NULL;
  c->options.n_keep = 0;
  if (c->nodes[c->input].role == ROLE_DEAD) {
    /* The output does not depend on the input: keep a buffer for it anyway. */
    c->nodes[c->input].role = ROLE_REAL;
  }
  if (!plan_forward(c, error))
    goto fail;
  if (options->backward && !plan_backward(c, error))
    goto fail;
  if (!bind(c, error) || !init_params(c, error))
    goto fail;
  return c;
fail:
  cpu_destroy(c);
  return NULL;
}

const SieveBackendClass sieve_backend_cpu = {
  .name = "cpu",
  .compile = cpu_compile,
  .destroy = cpu_destroy,
  .describe = cpu_describe,
  .forward = cpu_forward,
  .loss = cpu_loss,
  .read = cpu_read,
  .backward = cpu_backward,
  .read_input_grad = cpu_read_input_grad,
  .n_params = cpu_n_params,
  .param_info = cpu_param_info,
  .get_param = cpu_get_param,
  .set_param = cpu_set_param,
  .get_grad = cpu_get_grad,
  .sgd_step = cpu_sgd_step,
  .memory_bytes = cpu_memory_bytes,
  .read_grad = cpu_read_grad,
  .get_running = cpu_get_running,
  .set_running = cpu_set_running,
  .freeze = cpu_freeze,
  .read_signs = cpu_read_signs,
  .read_channel_dots = cpu_read_channel_dots,
};
