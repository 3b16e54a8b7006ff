/* sieve: the proxies' batch (sieve/proxy.h): drawn from a dataset, or read
 * from .npy files. */
#include <sieve/data.h>
#include <sieve/proxy.h>
#include <sieve/rng.h>

#include "data/data-private.h"
#include "proxy/proxy-private.h"

void
sieve_proxy_batch_free(SieveProxyBatch *batch)
{
  if (batch == NULL)
    return;
  g_free(batch->x);
  g_free(batch->y);
  g_free(batch->source);
  g_free(batch);
}

SieveProxyBatch *
sieve_proxy_batch_draw(const char *dataset, const char *data_dir, guint n, guint64 seed, GError **error)
{
  g_return_val_if_fail(dataset != NULL && n > 0, NULL);
  g_autoptr(SieveDataset) ds = sieve_dataset_open(dataset, data_dir, "train", error);
  if (ds == NULL)
    return NULL;
  if (ds->n < n) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "batch of %u: dataset %s has only %u examples", n, ds->name,
                ds->n);
    return NULL;
  }
  g_autofree float *mean = g_new(float, ds->channels);
  g_autofree float *std = g_new(float, ds->channels);
  sieve_dataset_channel_stats(ds, mean, std);
  /* Distinct examples: a partial Fisher-Yates shuffle of the indices. */
  SieveRng rng;
  sieve_rng_seed(&rng, seed);
  g_autofree guint *perm = g_new(guint, ds->n);
  for (guint i = 0; i < ds->n; i++)
    perm[i] = i;
  for (guint i = 0; i < n; i++) {
    guint j = i + (guint) sieve_rng_below(&rng, ds->n - i);
    guint t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  g_autoptr(SieveDataset) sub = sieve_dataset_subset(ds, perm, n);
  sieve_dataset_normalize(sub, mean, std);
  SieveProxyBatch *batch = g_new0(SieveProxyBatch, 1);
  batch->n = n;
  batch->classes = sub->n_classes;
  batch->shape = (SieveShape){sub->channels, sub->height, sub->width};
  batch->x = g_memdup2(sub->x, (gsize) n * sieve_dataset_example_size(sub) * sizeof(float));
  batch->y = g_memdup2(sub->y, (gsize) n * sizeof(gint32));
  batch->source = g_strdup_printf("dataset %s", dataset);
  return batch;
}

gboolean
sieve_proxy_batch_check(const SieveProxyBatch *batch, const SieveGraph *graph, const char *builder, GError **error)
{
  g_return_val_if_fail(batch != NULL && graph != NULL && builder != NULL, FALSE);
  SieveShape in = sieve_graph_node(graph, sieve_graph_input_node(graph))->shape;
  SieveShape out = sieve_graph_node(graph, sieve_graph_output(graph))->shape;
  guint outputs = out.c * out.h * out.w;
  if (in.c == batch->shape.c && in.h == batch->shape.h && in.w == batch->shape.w && outputs >= batch->classes)
    return TRUE;
  g_autofree char *classes = batch->classes ? g_strdup_printf(" in %u classes", batch->classes) : g_strdup("");
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
              "%s has %ux%ux%u examples%s, but %s builds networks for %ux%ux%u inputs with %u outputs: "
              "set the space's options to match (nb201: in_channels, size, classes)",
              batch->source, batch->shape.c, batch->shape.h, batch->shape.w, classes, builder, in.c, in.h,
              in.w, outputs);
  return FALSE;
}

SieveProxyBatch *
sieve_proxy_batch_read(const char *inputs, const char *labels, GError **error)
{
  g_return_val_if_fail(inputs != NULL, NULL);
  g_autoptr(SieveNpy) x = sieve__npy_read(inputs, error);
  if (x == NULL)
    return NULL;
  if (x->ndims != 4 || x->dims[0] == 0 || x->dims[0] > G_MAXUINT || x->dims[1] * x->dims[2] * x->dims[3] == 0 ||
      MAX(MAX(x->dims[1], x->dims[2]), x->dims[3]) > G_MAXUINT) {
    g_autofree char *shape = sieve__npy_shape_text(x);
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE,
                "%s: expected a batch of images, shape (batch, channels, height, width), none of them 0; its shape "
                "is %s",
                inputs, shape);
    return NULL;
  }
  g_autofree float *values = sieve__npy_to_f32(x, inputs, error);
  if (values == NULL)
    return NULL;
  g_autofree gint32 *ids = NULL;
  guint classes = 0;
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
    for (guint64 b = 0; b < y->dims[0]; b++) {
      if (ids[b] < 0) {
        g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "%s: label %" G_GUINT64_FORMAT " is %d; class ids start at 0",
                    labels, b, ids[b]);
        return NULL;
      }
      classes = MAX(classes, (guint)ids[b] + 1); /* what sieve_proxy_batch_check holds the networks to */
    }
  }
  SieveProxyBatch *batch = g_new0(SieveProxyBatch, 1);
  batch->n = x->dims[0];
  batch->classes = classes;
  batch->shape = (SieveShape){x->dims[1], x->dims[2], x->dims[3]};
  batch->x = g_steal_pointer(&values);
  batch->y = g_steal_pointer(&ids);
  batch->source = g_strdup(inputs);
  return batch;
}
