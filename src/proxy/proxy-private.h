/* sieve: the proxy area: zero-cost proxies, their shared passes, SynFlow's double-precision executor, batch files.
 * Not installed: not part of the plugin ABI. */
#pragma once

#include <glib.h>
#include <sieve/graph.h>
#include <sieve/proxy.h>
#include <sieve/runtime.h>
#include "base/base-private.h"

G_BEGIN_DECLS

/* ==== one proxy run and the proxies' shared passes ==== */
/* sieve: one network being scored by the proxies (private to libsieve).
 *
 * proxy.c compiles the network once with what the named proxies need
 * (backward, the input's gradient, the nodes to keep readable), runs the
 * passes they share in order, and calls the functions below, each in the
 * file of its proxy.  They read the runtime as the last pass left it; the
 * order in proxy.c is what makes that right. */

typedef struct {
  const SieveGraph *graph; /* ends in logits */
  SieveRuntime *rt;        /* NULL until compiled */
  guint batch, threads;    /* threads resolved (>= 1) */
  guint64 seed;
  const char *device;      /* runtime device (NULL: cpu), borrowed from the options */
  gsize in_size;           /* floats per example */
  guint n_classes;         /* floats per example of the output */
  const float *x;          /* batch * in_size */
  const gint32 *labels;    /* batch */
  float *logits;           /* batch * n_classes, after sieve__proxy_forward (owned) */
  GArray *weights;         /* guint: runtime parameters that are conv or linear weights */
} SieveProxyRun;

/* The runtime parameters that are weights of conv2d and linear nodes (the
 * layers the zero-cost papers score; biases and batch norm are not). */
SIEVE_INTERNAL_API GArray *sieve__proxy_weight_params(SieveRuntime *rt, const SieveGraph *graph);
/* A train forward of run->x (batch norm on batch statistics, as the papers'
 * networks in train mode), the logits read into run->logits. */
SIEVE_INTERNAL_API gboolean sieve__proxy_forward(SieveProxyRun *run, GError **error);
/* dz = (softmax(z) - onehot(y)) / B: the gradient of the mean cross-entropy
 * with respect to the logits z (batch * n_classes). */
SIEVE_INTERNAL_API void sieve__proxy_ce_grad(const float *logits, const gint32 *labels, guint batch,
                                             guint n_classes, float *dz);
/* Backward of the mean cross-entropy of the last forward. */
gboolean sieve__proxy_backward_ce(SieveProxyRun *run, gboolean input_only, GError **error);

/* After backward_ce: grad_norm, snip and plain from the weight gradients
 * (each may be NULL); grads (may be NULL) gets a copy of each weight's
 * gradient, in run->weights' order, for grasp. */
gboolean sieve__proxy_grad_norm_snip(SieveProxyRun *run, double *grad_norm, double *snip, double *plain,
                                     GPtrArray *grads, GError **error);
/* From the initial weights, before any pass moves them. */
gboolean sieve__proxy_l2_norm(SieveProxyRun *run, double *score, GError **error);
/* After backward_ce, with every conv node kept. */
gboolean sieve__proxy_fisher(SieveProxyRun *run, double *score, GError **error);
/* After the forward; runs its own backward (of the logits' sum) and needs
 * input_grad. */
gboolean sieve__proxy_jacob_cov(SieveProxyRun *run, double *score, GError **error);
/* After backward_ce, from its weight gradients g (grads, in run->weights'
 * order): two more forward/backward passes with the weights moved by
 * +-eps theta, ReLUs frozen; the weights are restored. */
gboolean sieve__proxy_grasp(SieveProxyRun *run, GPtrArray *grads, double *score, GError **error);
/* Finite-difference Hessian-vector product of the mean cross-entropy on
 * run->x: hv[i] = (g(theta + eps v) - g(theta - eps v))[i] / 2 eps over the
 * parameters params (runtime indices; v: float arrays, hv: double arrays
 * appended, plain layouts), with the ReLUs frozen on the pattern of the
 * last forward, which must have been at theta on run->x (a compiled
 * backward needed); every parameter is restored and the ReLUs unfrozen. */
SIEVE_INTERNAL_API gboolean sieve__proxy_hvp(SieveProxyRun *run, GArray *params, GPtrArray *v, double eps,
                                             GPtrArray *hv, GError **error);
/* After the forward, with every ReLU node kept. */
gboolean sieve__proxy_naswot(SieveProxyRun *run, double *score, GError **error);
/* Changes the weights and running statistics: run it after every proxy
 * that reads them.  Needs the feature node kept. */
gboolean sieve__proxy_zen(SieveProxyRun *run, guint features, double *score, GError **error);
/* The node zen reads: the input of the last global average pool, else the output. */
guint sieve__proxy_zen_features(const SieveGraph *graph);
/* Compiles its own batch-1 runtime. */
gboolean sieve__proxy_gradsign(SieveProxyRun *run, double *score, GError **error);

/* NASWOT's kernel, exposed for its tests: adds, for every pair of the n
 * examples' codes (words 64-bit words each, bits past the code's length
 * zero), weight * (bits - Hamming distance) to k (n x n, both triangles). */
SIEVE_INTERNAL_API void sieve__naswot_kernel_add(const guint64 *codes, guint n, gsize words, guint64 bits,
                                                 guint64 weight, guint threads, gint64 *k);

/* Dense linear algebra in double, on n x n row-major matrices (destroyed). */
/* log |det a| (-INFINITY when a is singular), by LU with partial pivoting. */
SIEVE_INTERNAL_API double sieve__logabsdet(double *a, guint n);
/* Eigenvalues of the symmetric a into w (ascending), by cyclic Jacobi. */
SIEVE_INTERNAL_API void sieve__sym_eigenvalues(double *a, guint n, double *w);

/* ==== SynFlow ==== */
/* sieve: what the proxy files share inside libsieve. */

/* SynFlow (Tanaka et al. 2020; as a proxy, Abdelfattah et al. 2021) in
 * double precision: every parameter of runtime (its float values, as
 * initialised) made absolute, batch norm bypassed, an all-ones input of
 * one example; score = sum over the conv2d and linear weights of
 * |w| * dR/d|w| with R = sum of the outputs (biases enter R but are not
 * scored, as in the authors' code and the PyTorch peer).  graph: the
 * network runtime was compiled from (or that network with a loss appended,
 * whose input then counts as the output).  threads: 0 = every core.
 * A network whose output does not depend on its input scores 0. */
SIEVE_INTERNAL_API gboolean sieve_proxy_synflow(const SieveGraph *graph, SieveRuntime *runtime, guint threads,
                                                double *score, GError **error);

/* ==== SynFlow's double-precision convolution ==== */
/* sieve: a double-precision 2-D convolution on the CPU, for the parts of
 * sieve that need float64 and cannot have it from oneDNN 2.6 (which has no
 * f64 on the CPU): SynFlow's executor (proxy-synflow.c).
 *
 *   SieveConvF64 *conv = sieve__conv_f64_new(node, in_shape, weights, SIEVE_CONV_ISA_AUTO);
 *   const double *x[2] = {a, b};
 *   double *y[2] = {ya, yb};
 *   sieve__conv_f64_run(conv, x, y, 2, threads, NULL);   // y[s] = W * x[s], no bias
 *   sieve__conv_f64_free(conv);
 *
 * One example at a time, several "streams" per call sharing the weights
 * (SynFlow runs the value and its tangent through the same weights).
 * Tensors are plain CHW doubles.  Every attribute of a conv2d node is
 * honoured: kernel, stride, padding, dilation, groups. */

/* Instruction sets with a kernel of their own.  AUTO picks the widest the
 * CPU has; the others exist so that tests can run every kernel the machine
 * can execute against the same reference. */
typedef enum {
  SIEVE_CONV_ISA_AUTO,
  SIEVE_CONV_ISA_BASE,   /* 2-wide vectors, any CPU */
  SIEVE_CONV_ISA_AVX2,   /* 4-wide, AVX2 + FMA */
  SIEVE_CONV_ISA_AVX512, /* 8-wide, AVX-512F */
} SieveConvIsa;

typedef struct _SieveConvF64 SieveConvF64;

/* Whether this CPU (and this build) can run isa. */
SIEVE_INTERNAL_API gboolean sieve__conv_f64_isa_available(SieveConvIsa isa);
/* (transfer none) "avx512", "avx2", "base": what AUTO resolves to. */
SIEVE_INTERNAL_API const char *sieve__conv_f64_isa_name(SieveConvIsa isa);

/* (transfer full) node: a conv2d node (its attributes and output shape are
 * copied); in: its input's shape; weight: graph.h's layout [out, in/groups,
 * kh, kw], copied.  isa must be available. */
SIEVE_INTERNAL_API SieveConvF64 *sieve__conv_f64_new(const SieveGraphNode *node, SieveShape in, const double *weight,
                                                     SieveConvIsa isa);
SIEVE_INTERNAL_API void sieve__conv_f64_free(SieveConvF64 *conv);
/* Doubles of working memory a run over n_streams needs. */
SIEVE_INTERNAL_API gsize sieve__conv_f64_scratch_size(const SieveConvF64 *conv, guint n_streams);
/* y[s] = W * x[s] for s < n_streams (x[s]: in.c*in.h*in.w doubles, y[s]:
 * the node's output size); threads: OpenMP threads, >= 1; scratch:
 * sieve__conv_f64_scratch_size() doubles, or NULL to allocate them. */
SIEVE_INTERNAL_API void sieve__conv_f64_run(SieveConvF64 *conv, const double *const *x, double *const *y,
                                            guint n_streams, guint threads, double *scratch);

G_END_DECLS
