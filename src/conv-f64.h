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
#pragma once

#include <sieve/graph.h>

#include "internal.h"

G_BEGIN_DECLS

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
