/* sieve: one network being scored by the proxies (private to libsieve).
 *
 * proxy.c compiles the network once with what the named proxies need
 * (backward, the input's gradient, the nodes to keep readable), runs the
 * passes they share in order, and calls the functions below, each in the
 * file of its proxy.  They read the runtime as the last pass left it; the
 * order in proxy.c is what makes that right. */
#pragma once

#include <sieve/graph.h>
#include <sieve/proxy.h>
#include <sieve/runtime.h>

#include "internal.h"

G_BEGIN_DECLS

typedef struct {
  const SieveGraph *graph; /* ends in logits */
  SieveRuntime *rt;        /* NULL until compiled */
  guint batch, threads;    /* threads resolved (>= 1) */
  guint64 seed;
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

G_END_DECLS
