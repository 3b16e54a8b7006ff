/* A batch for the proxies from .npy files (see proxy-io.h). */
#include <sieve/abi.h>

#include "npy.h"
#include "proxy-io.h"

SieveProxyBatch *
sieve_proxy_batch_read(const char *inputs, const char *labels, GError **error)
{
  g_autoptr(SieveNpy) x = sieve__npy_read(inputs, error);
  if (x == NULL)
    return NULL;
  if (x->ndims != 4 || x->dims[0] == 0 || x->dims[0] > G_MAXUINT || x->dims[1] * x->dims[2] * x->dims[3] == 0 ||
      MAX(MAX(x->dims[1], x->dims[2]), x->dims[3]) > G_MAXUINT) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE,
                "%s: expected a batch of images, shape (batch, channels, height, width), none of them 0; it has %u "
                "dimensions",
                inputs, x->ndims);
    return NULL;
  }
  g_autofree float *values = sieve__npy_to_f32(x, inputs, error);
  if (values == NULL)
    return NULL;
  g_autofree gint32 *ids = NULL;
  if (labels != NULL) {
    g_autoptr(SieveNpy) y = sieve__npy_read(labels, error);
    if (y == NULL)
      return NULL;
    if (y->ndims != 1 || y->dims[0] != x->dims[0]) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE,
                  "%s: expected one class id per example of %s, shape (%" G_GUINT64_FORMAT ",)", labels, inputs,
                  x->dims[0]);
      return NULL;
    }
    ids = sieve__npy_to_i32(y, labels, error);
    if (ids == NULL)
      return NULL;
    for (guint64 b = 0; b < y->dims[0]; b++)
      if (ids[b] < 0) {
        g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "%s: label %" G_GUINT64_FORMAT " is %d; class ids start at 0",
                    labels, b, ids[b]);
        return NULL;
      }
  }
  SieveProxyBatch *batch = g_new0(SieveProxyBatch, 1);
  batch->batch = x->dims[0];
  batch->shape = (SieveShape){x->dims[1], x->dims[2], x->dims[3]};
  batch->inputs = g_steal_pointer(&values);
  batch->labels = g_steal_pointer(&ids);
  return batch;
}

void
sieve_proxy_batch_free(SieveProxyBatch *batch)
{
  if (!batch)
    return;
  g_free(batch->inputs);
  g_free(batch->labels);
  g_free(batch);
}
