/* sieve: compiling a graph for a device and running it forward and backward.
 *
 *   SieveRuntimeOptions o = {.batch = 128, .backward = TRUE, .seed = 1};
 *   g_autoptr(SieveRuntime) rt = sieve_runtime_new(graph_with_loss, &o, error);
 *   while (...) {
 *     sieve_runtime_forward(rt, x, labels, SIEVE_MODE_TRAIN, error);
 *     sieve_runtime_backward(rt, NULL, error);
 *     sieve_runtime_sgd_step(rt, &(SieveSgd){.lr = 0.1, .momentum = 0.9}, error);
 *   }
 *
 * A runtime is the graph compiled once for a batch size: primitives chosen,
 * layouts picked by the backend, buffers planned so that activations nobody
 * needs later share memory.  Tensors cross this interface in plain
 * row-major NCHW float32 (parameters in the shapes graph.h lists); what the
 * backend keeps inside is its own business, which is what lets a CUDA
 * backend sit behind the same calls.
 */
#pragma once

#include <glib.h>
#include <sieve/abi.h>
#include <sieve/graph.h>

G_BEGIN_DECLS

typedef enum {
  SIEVE_MODE_TRAIN, /* batch statistics in batch norm, running statistics updated */
  SIEVE_MODE_EVAL,  /* running statistics, nothing updated */
} SieveMode;

typedef struct {
  const char *device;  /* "cpu" (NULL means "cpu"), "cuda" (the first GPU; an error when there is none), or
                        * "auto" (cuda when this build has it and a GPU is present, else cpu) */
  guint batch;         /* examples per call, >= 1 */
  guint threads;       /* threads of one run; 0 = every core */
  gboolean backward;   /* also compile the backward pass */
  gboolean input_grad; /* also compute the gradient of the graph's input */
  gboolean keep_all;   /* every node's output, and after backward its gradient, stays readable
                        * (tests, proxies); costs memory */
  guint64 seed;        /* parameter initialisation */
  /* Added in the reserved room (the struct keeps its size): n_keep graph
   * nodes whose output, and after backward gradient, stay readable as with
   * keep_all, at the memory cost of just those (proxies read ReLUs and
   * convolutions this way).  The array is read during sieve_runtime_new only. */
  const guint *keep;
  guint n_keep;
  /* Added in the reserved room: the convolutions' arithmetic on a GPU.
   * NULL or "tf32": TF32 tensor cores allowed (PyTorch's default for
   * convolutions; 10-bit mantissas in the products, float32 sums);
   * "fp32": strict float32 (FMA only).  The CPU ignores it (always fp32). */
  const char *precision;
  gpointer reserved[1];
} SieveRuntimeOptions;
SIEVE_ABI_SIZE(SieveRuntimeOptions, 72);

typedef struct {
  guint node;        /* the graph node the tensor belongs to */
  const char *name;  /* "weight", "bias", "gamma" or "beta" */
  guint ndims;
  guint64 dims[4];
  guint64 size;      /* elements */
} SieveParamInfo;
SIEVE_ABI_SIZE(SieveParamInfo, 64);

typedef struct {
  double lr;
  double momentum;     /* 0 = plain SGD */
  double weight_decay; /* L2, added to the gradient as PyTorch's SGD does */
  gboolean nesterov;
  gpointer reserved[4];
} SieveSgd;
SIEVE_ABI_SIZE(SieveSgd, 64);

typedef struct _SieveRuntime SieveRuntime;

/* What a device name runs on here: "auto" gives "cuda" when this build has
 * the CUDA backend and a GPU answers, else "cpu"; any other name is
 * returned as given (NULL as "cpu").  For auto, and when note is not NULL,
 * *note gets what a tool tells the user ("device auto: cuda", "device auto:
 * cpu (the reason)"; transfer full), else NULL.  (transfer none) */
SIEVE_API const char *sieve_runtime_resolve_device(const char *device, char **note);

/* (transfer full) compiles graph (which must be finished) for the device;
 * the runtime copies what it needs, graph may be freed afterwards.
 * Parameters get Kaiming-style initial values from options->seed. */
SIEVE_API SieveRuntime *sieve_runtime_new(const SieveGraph *graph, const SieveRuntimeOptions *options,
                                          GError **error);
SIEVE_API void sieve_runtime_free(SieveRuntime *runtime);
/* (transfer none) e.g. "cpu (oneDNN 2.6.3, 2 threads)". */
SIEVE_API const char *sieve_runtime_describe(const SieveRuntime *runtime);
SIEVE_API guint sieve_runtime_batch(const SieveRuntime *runtime);

/* x: batch examples of the input shape, plain NCHW.  labels: batch class
 * ids when the graph's output is a softmax_ce loss, else NULL. */
SIEVE_API gboolean sieve_runtime_forward(SieveRuntime *runtime, const float *x, const gint32 *labels, SieveMode mode,
                                         GError **error);
/* The loss of the last forward (NAN when the output is not a loss or no
 * labels were given). */
SIEVE_API double sieve_runtime_loss(const SieveRuntime *runtime);
/* Copies node's output of the last forward into out (batch * c*h*w floats,
 * plain NCHW).  Readable: the output, a loss's logits, the nodes in keep,
 * and every node when keep_all was set; others give an error. */
SIEVE_API gboolean sieve_runtime_read(SieveRuntime *runtime, guint node, float *out, GError **error);

/* node's output of the last forward as one bit per element, 1 where it is
 * > 0, packed per example: codes gets batch * ceil(c*h*w / 64) words, each
 * example's bits in an order of its elements that the backend chooses but
 * that is the same for every example (bits past c*h*w are 0).  What
 * Hamming kernels over activation patterns need (naswot), without copying
 * the floats out.  Readable as with sieve_runtime_read. */
SIEVE_API gboolean sieve_runtime_read_signs(SieveRuntime *runtime, guint node, guint64 *codes, GError **error);

/* Gradients of the last forward (which must have been in TRAIN mode for
 * batch norm to match).  output_grad: batch * output size floats, the
 * gradient of whatever scalar the caller differentiates with respect to the
 * output; NULL when the output is a loss (its gradient is 1). */
SIEVE_API gboolean sieve_runtime_backward(SieveRuntime *runtime, const float *output_grad, GError **error);
/* The same, computing only what the input's gradient and the kept nodes'
 * gradients need: no parameter gradients (sieve_runtime_get_grad refuses
 * until the next full backward).  Convolutions' weight-gradient kernels,
 * about a third of a training step, are skipped. */
SIEVE_API gboolean sieve_runtime_backward_input(SieveRuntime *runtime, const float *output_grad, GError **error);
/* The input's gradient after backward (needs input_grad). */
SIEVE_API gboolean sieve_runtime_read_input_grad(SieveRuntime *runtime, float *out, GError **error);
/* Copies the gradient, from the last backward, of whatever scalar it
 * differentiated with respect to node's output into out (batch * c*h*w
 * floats, plain NCHW).  Readable: nodes kept (keep_all or keep) and the
 * output; a node no gradient reaches reads zeros.  Nodes that share their
 * input's tensor (identity, a sum of one input, a second activation of the
 * same tensor) read that tensor's gradient, the sum over all its readers;
 * a zero operation, and a pool, crop or activation with f(0) = 0 of a
 * zero (sieve__node_keeps_zero), which the runtime folds away, and the
 * loss (whose gradient is 1) give an error.  Valid until the next forward. */
SIEVE_API gboolean sieve_runtime_read_grad(SieveRuntime *runtime, guint node, float *out, GError **error);
/* Per example and channel, the sum over positions of node's output times
 * its gradient: dots gets batch * c doubles, example-major.  The term of
 * the Fisher information of a channel (fisher), computed in the tensors'
 * own layout without copying them out.  Readable, and errors, as with
 * sieve_runtime_read and sieve_runtime_read_grad together. */
SIEVE_API gboolean sieve_runtime_read_channel_dots(SieveRuntime *runtime, guint node, double *dots, GError **error);

/* Linearisation, for finite-difference Hessian products: while frozen,
 * every ReLU and leaky ReLU passes exactly the elements it passed in the
 * last forward before freezing (forward: y = x there, alpha x elsewhere;
 * backward likewise), so the network stays on the linear piece it was on
 * and its second derivatives are those automatic differentiation gives
 * (ReLU'' = 0) instead of jumps at ReLU kinks.  Needs backward compiled and
 * a forward; FALSE unfreezes.  Max pooling is not frozen. */
SIEVE_API gboolean sieve_runtime_freeze_activations(SieveRuntime *runtime, gboolean freeze, GError **error);

SIEVE_API guint sieve_runtime_n_params(const SieveRuntime *runtime);
/* (transfer none) */
SIEVE_API const SieveParamInfo *sieve_runtime_param_info(const SieveRuntime *runtime, guint i);
SIEVE_API gboolean sieve_runtime_get_param(SieveRuntime *runtime, guint i, float *out, GError **error);
SIEVE_API gboolean sieve_runtime_set_param(SieveRuntime *runtime, guint i, const float *values, GError **error);
/* The gradient of parameter i from the last backward. */
SIEVE_API gboolean sieve_runtime_get_grad(SieveRuntime *runtime, guint i, float *out, GError **error);
/* Parameter i's SGD momentum buffer (the velocity sgd_step keeps; zero
 * before the first step): what continuing a training exactly needs besides
 * its weights (ABI 2.2). */
SIEVE_API gboolean sieve_runtime_get_velocity(SieveRuntime *runtime, guint i, float *out, GError **error);
SIEVE_API gboolean sieve_runtime_set_velocity(SieveRuntime *runtime, guint i, const float *values, GError **error);
/* One SGD step on every parameter with the last backward's gradients. */
SIEVE_API gboolean sieve_runtime_sgd_step(SieveRuntime *runtime, const SieveSgd *sgd, GError **error);
/* A batch norm node's running statistics (c floats each; mean or var may
 * be NULL), as training forwards left them. */
SIEVE_API gboolean sieve_runtime_get_running_stats(SieveRuntime *runtime, guint node, float *mean, float *var,
                                                   GError **error);
/* Replaces them (e.g. mean 0, variance 1: a fresh network's). */
SIEVE_API gboolean sieve_runtime_set_running_stats(SieveRuntime *runtime, guint node, const float *mean,
                                                   const float *var, GError **error);
/* Bytes of device memory the runtime holds (activations, gradients,
 * parameters and optimizer state). */
SIEVE_API guint64 sieve_runtime_memory_bytes(const SieveRuntime *runtime);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveRuntime, sieve_runtime_free)

G_END_DECLS
