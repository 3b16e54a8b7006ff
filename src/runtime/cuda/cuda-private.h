/* The CUDA backend: a graph compiled for one NVIDIA GPU, convolutions
 * through cuDNN, everything else through kernels of our own
 * (cuda-kernels.cu).  Private to src/runtime/cuda/; runtime.c reaches it
 * through sieve_backend_cuda.  No CUDA type leaves these files.
 *
 * Convolutions run on cuDNN, everything else (batch norm included: with
 * 16 channels cuDNN's NCHW batch norm leaves most of the GPU idle) on
 * kernels of our own.
 *
 * Compilation (cuda-plan.c):
 *  1. resolve, as the CPU backend does: identities and one-input sums
 *     alias their input, zeros fold away inside sums and through the
 *     operations that keep a zero (sieve__node_keeps_zero), a zero that
 *     something else reads becomes a buffer of zeros, and a second
 *     activation of the same tensor aliases the first;
 *  2. decide what the backward needs (which nodes' gradients, which
 *     forward tensors it reads) and give every tensor a lifetime on one
 *     timeline, the forward's steps then the backward's in reverse;
 *  3. place the tensors in one arena (an offline first-fit over lifetimes:
 *     tensors whose lifetimes do not overlap share memory), with the
 *     parameters, gradients and velocities each one contiguous array, so
 *     that the SGD update is one kernel; one cudaMalloc per runtime.
 * Running (cuda-run.c): a forward, a backward and an SGD step are each a
 * sequence of launches on the runtime's own stream; the third time a
 * sequence runs it is captured as a CUDA graph and from then on replayed
 * with one launch.  Tensors stay on the GPU; only the batch goes up and
 * what is read comes down.
 *
 * Layout: plain NCHW float32 everywhere, the layout the runtime interface
 * exchanges, so reads and writes are straight copies. */
#pragma once

#include <cuda_runtime.h>
#include <cudnn.h>

#include "runtime/cuda/cuda-kernels.h"
#include "runtime/runtime-private.h"

G_BEGIN_DECLS

typedef enum { ROLE_DEAD, ROLE_REAL, ROLE_ALIAS, ROLE_ZERO, ROLE_ZERO_BUF } Role;

typedef struct {
  gsize bytes;
  guint first, last; /* steps of the timeline during which it is live */
  gsize offset;      /* in the arena, once placed */
} Buf;

typedef struct {
  const SieveGraphNode *n;
  Role role;
  guint root;
  guint n_in;
  guint *in;            /* the inputs' roots; a sum's zero inputs dropped */
  gsize elems;          /* batch * c*h*w */
  gint out, grad;       /* buffers, -1 when none */
  guint t;              /* its place in the forward order */
  gboolean has_params;
  gboolean need;        /* its gradient is needed (a full backward) */
  gboolean need_in;     /* ... by an input-only backward */
  gboolean kept;        /* output (and gradient) readable after the passes */
  guint first_param, n_params;
  /* convolution */
  cudnnTensorDescriptor_t xd, yd, bd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cfwd, cbwd_data, cbwd_filter;
  cudnnConvolutionFwdAlgo_t algo_fwd;
  cudnnConvolutionBwdDataAlgo_t algo_data;
  cudnnConvolutionBwdFilterAlgo_t algo_filter;
  /* batch norm: running and saved statistics (buffers) */
  gint rmean, rvar, smean, sinv;
  /* max pooling positions (a buffer) */
  gint idx;
  /* a frozen ReLU's mask: its own allocation, made at the first freeze */
  guint8 *mask;
} CNode;

typedef struct {
  SieveParamInfo info;
  gsize offset; /* floats into the parameter arrays */
} Param;

/* A stream with its cuDNN handle and the event of its last upload:
 * taken from the process's pool by a runtime, given back when it is
 * freed (cuda-pool.c). */
typedef struct {
  cudaStream_t stream;
  cudnnHandle_t cudnn;
  cudaEvent_t staged;
} CuLane;

typedef struct {
  char name[256];
  int multiprocessors;
} SieveCudaDevice;

enum { MIRROR_VALUES, MIRROR_GRADS };

/* The sequences a runtime captures as CUDA graphs. */
typedef enum { SEQ_FWD_TRAIN, SEQ_FWD_EVAL, SEQ_BWD, SEQ_BWD_INPUT, SEQ_SGD, N_SEQ } Seq;

typedef struct {
  SieveGraph *graph;
  SieveRuntimeOptions options;
  gboolean strict_fp32;
  int device;
  char *describe;
  guint n_nodes;
  CNode *nodes;
  guint *order;         /* real nodes in forward order */
  guint n_order;
  guint input, output, logits; /* roots; logits G_MAXUINT when the output is no loss */
  guint n_classes;
  GArray *bufs;         /* Buf */
  GArray *params;       /* Param */
  gsize n_param_floats;
  gint values, grads, velocity;
  gint bn_scratch;      /* batch norms' partial sums */
  gint workspace;
  gint prob, loss, labels, hyper, out_grad;
  gsize arena_bytes;
  char *arena;
  /* host side: the lane's stream, handle and event, copied for brevity */
  CuLane *lane;
  cudaStream_t stream;
  cudnnHandle_t cudnn;
  float *staging;       /* pinned: the batch, the labels and the SGD hyperparameters on their way up */
  gsize staging_bytes;
  gsize staging_cap;    /* what the pinned buffer from the pool holds */
  cudaEvent_t staged;   /* the last upload from staging has finished */
  /* Host copies of the whole parameter and gradient arrays, fetched in one
   * copy at the first get_param / get_grad after anything changed them:
   * the proxies read every weight and gradient one tensor at a time, and
   * a synchronised copy each cost more than the passes (cuda-read.c). */
  float *mirror[2];     /* MIRROR_VALUES, MIRROR_GRADS */
  gboolean mirror_ok[2];
  gpointer reduce;      /* scratch of the reads reduced on the GPU (cuda-read.c) */
  gsize reduce_bytes;
  gboolean repeatable;  /* a second backward may follow one forward (cuda-plan.c) */
  gboolean backward_done; /* since the last forward */
  gboolean has_labels;
  gboolean loss_known;  /* loss_value holds the last forward's loss */
  double loss_value;
  gboolean frozen;
  gboolean input_only;
  gboolean *written;    /* per root: the last backward wrote its gradient */
  gboolean *written_seq[2]; /* the same, as each kind of backward leaves it */
  /* SIEVE_CUDA_PROFILE=1: every pass runs launch by launch with an event
   * before each node; each node's time adds to its operation's row, and
   * the table goes to stderr when the runtime is freed. */
  gboolean profile;
  double prof_compile[6]; /* ms: device, lane, plan, memory, pinned, initial values */
  cudaEvent_t *marks;   /* n_order + 1 */
  double prof_ms[2][SIEVE_N_OPS];
  double *prof_node[2]; /* per node of the order */
  guint prof_passes[2];
  cudaGraphExec_t exec[N_SEQ];
  guint runs[N_SEQ];
  gboolean graphs;      /* capture at all (off after a capture failed) */
} Cu;

#define CU_TRY(call, ...)                                                                                          \
  G_STMT_START {                                                                                                   \
    cudaError_t cu_err_ = (call);                                                                                  \
    if (cu_err_ != cudaSuccess) {                                                                                  \
      (void)cudaGetLastError(); /* a non-sticky error must not fail the next call too */                           \
      g_autofree char *cu_what_ = g_strdup_printf(__VA_ARGS__);                                                    \
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "%s: %s", cu_what_, cudaGetErrorString(cu_err_));      \
      return FALSE;                                                                                                \
    }                                                                                                              \
  }                                                                                                                \
  G_STMT_END
#define DNN_TRY(call, ...)                                                                                         \
  G_STMT_START {                                                                                                   \
    cudnnStatus_t dnn_st_ = (call);                                                                                \
    if (dnn_st_ != CUDNN_STATUS_SUCCESS) {                                                                         \
      g_autofree char *dnn_what_ = g_strdup_printf(__VA_ARGS__);                                                   \
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "%s: %s", dnn_what_, cudnnGetErrorString(dnn_st_));    \
      return FALSE;                                                                                                \
    }                                                                                                              \
  }                                                                                                                \
  G_STMT_END

static inline float *
cu_ptr(const Cu *c, gint buf)
{
  return buf < 0 ? NULL : (float *)(c->arena + g_array_index(c->bufs, Buf, buf).offset);
}

/* A ReLU or leaky ReLU: what freezing activations freezes. */
static inline gboolean
sieve__cuda_is_relu(const SieveGraphNode *n)
{
  return n->kind == SIEVE_OP_ACTIVATION &&
         (n->attrs.activation == SIEVE_ACT_RELU || n->attrs.activation == SIEVE_ACT_LEAKY_RELU);
}

/* cuda-pool.c: what runtimes reuse, process-wide */
/* The device's name and multiprocessors, queried once; sets device 0 for
 * the calling thread. */
gboolean sieve__cuda_device_info(SieveCudaDevice *out, GError **error);
/* A lane of the pool, or a new one; owned by the caller until given back
 * (which waits for its stream) or freed. */
gboolean sieve__cuda_lane_take(CuLane **out, GError **error);
/* FALSE when its stream had failed (the lane is freed, not pooled, and
 * what it used may still be in flight). */
gboolean sieve__cuda_lane_give(CuLane *lane);
void sieve__cuda_lane_free(CuLane *lane);
/* Pinned host memory of at least bytes (*got: how much), or NULL; given
 * back with the size *got said. */
float *sieve__cuda_pinned_take(gsize bytes, gsize *got);
void sieve__cuda_pinned_give(float *ptr, gsize bytes);
/* Device memory ordered on the lane's stream (cudaMallocAsync): FALSE when
 * the GPU has not that much; released likewise, waiting for nothing. */
gboolean sieve__cuda_alloc(CuLane *lane, gsize bytes, void **out);
void sieve__cuda_release(CuLane *lane, void *ptr);
/* Free device memory, counting what the pool holds idle. */
gsize sieve__cuda_free_bytes(void);
void sieve__cuda_pool_trim(void);
/* cuda-plan.c */
gboolean sieve__cuda_plan(Cu *c, GError **error);
void sieve__cuda_plan_free(Cu *c);
const char *sieve__cuda_node_desc(const Cu *c, guint v);
/* The error of a runtime that does not fit in free_bytes. */
void sieve__cuda_oom(const Cu *c, gsize free_bytes, GError **error);
/* cuda-run.c */
void sieve__cuda_profile_print(Cu *c);
gboolean sieve__cuda_forward(gpointer impl, const float *x, const gint32 *labels, SieveMode mode, GError **error);
gboolean sieve__cuda_backward(gpointer impl, const float *output_grad, gboolean input_only, GError **error);
gboolean sieve__cuda_sgd_step(gpointer impl, const SieveSgd *sgd, GError **error);
double sieve__cuda_loss(gpointer impl);
gboolean sieve__cuda_sync(Cu *c, GError **error);
/* cuda-read.c: what the runtime reads and writes between passes */
gboolean sieve__cuda_read(gpointer impl, guint node, float *out, GError **error);
gboolean sieve__cuda_read_grad(gpointer impl, guint node, float *out, GError **error);
gboolean sieve__cuda_read_input_grad(gpointer impl, float *out, GError **error);
gboolean sieve__cuda_read_signs(gpointer impl, guint node, guint64 *codes, GError **error);
gboolean sieve__cuda_read_channel_dots(gpointer impl, guint node, double *dots, GError **error);
gboolean sieve__cuda_get_running(gpointer impl, guint node, float *mean, float *var, GError **error);
gboolean sieve__cuda_set_running(gpointer impl, guint node, const float *mean, const float *var, GError **error);
gboolean sieve__cuda_freeze(gpointer impl, gboolean freeze, GError **error);
guint sieve__cuda_n_params(gpointer impl);
const SieveParamInfo *sieve__cuda_param_info(gpointer impl, guint i);
/* Forgets the host copies: whatever may change parameters or gradients
 * on the GPU calls it first. */
void sieve__cuda_mirror_drop(Cu *c);
gboolean sieve__cuda_get_param(gpointer impl, guint i, float *out, GError **error);
gboolean sieve__cuda_set_param(gpointer impl, guint i, const float *values, GError **error);
gboolean sieve__cuda_get_grad(gpointer impl, guint i, float *out, GError **error);
gboolean sieve__cuda_get_velocity(gpointer impl, guint i, float *out, GError **error);
gboolean sieve__cuda_set_velocity(gpointer impl, guint i, const float *values, GError **error);

G_END_DECLS
