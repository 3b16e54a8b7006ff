/* sieve: a batch for the zero-cost proxies read from NumPy files, so that
 * proxies can be computed on a user's own data (CIFAR-10 images saved with
 * numpy.save) and on exactly the batch another implementation used (the
 * cross-check with the PyTorch peer, bench/proxies_crosscheck.py).
 *
 *   g_autoptr(SieveProxyBatch) b = sieve_proxy_batch_read("x.npy", "y.npy", error);
 *   SieveProxyOptions o = {.batch = b->batch, .inputs = b->inputs, .labels = b->labels};
 */
#pragma once

#include <sieve/graph.h>

#include "internal.h"

G_BEGIN_DECLS

typedef struct {
  guint batch;      /* examples */
  SieveShape shape; /* of one example */
  float *inputs;    /* batch x shape, plain NCHW */
  gint32 *labels;   /* batch class ids; NULL when no labels file was given */
} SieveProxyBatch;

/* (transfer full) inputs: an .npy of float32 or float64, shape [batch, c,
 * h, w]; labels (nullable): an .npy of integers, shape [batch].  Errors name
 * the file and what was expected. */
SIEVE_INTERNAL_API SieveProxyBatch *sieve_proxy_batch_read(const char *inputs, const char *labels, GError **error);
SIEVE_INTERNAL_API void sieve_proxy_batch_free(SieveProxyBatch *batch);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveProxyBatch, sieve_proxy_batch_free)

G_END_DECLS
