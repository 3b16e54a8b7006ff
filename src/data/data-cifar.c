/* sieve: the CIFAR-10 / CIFAR-100 binary format.
 *
 * Krizhevsky, "Learning Multiple Layers of Features from Tiny Images"
 * (2009); the binary version described on https://www.cs.toronto.edu/~kriz/cifar.html:
 * each record is the label byte (CIFAR-10) or the coarse and the fine label
 * bytes (CIFAR-100), then 3072 pixel bytes: the 1024 red values of a 32x32
 * image row by row, then green, then blue.  That is already CHW, so a
 * record becomes one example by scaling its bytes in order.
 */
#include "data/data-private.h"

#define CIFAR_SIDE 32
#define CIFAR_PIXELS (3 * CIFAR_SIDE * CIFAR_SIDE)

SieveDataset *
sieve_dataset_load_cifar(const char *const *batch_paths, guint n_paths, guint n_classes, GError **error)
{
  g_return_val_if_fail(batch_paths != NULL && n_paths > 0, NULL);
  g_return_val_if_fail(n_classes == 10 || n_classes == 100, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);

  gsize label_bytes = n_classes == 10 ? 1 : 2;
  gsize record = label_bytes + CIFAR_PIXELS;
  /* All files are read before the dataset is made, so that its one array
   * is allocated once at its final size. */
  g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func((GDestroyNotify) g_bytes_unref);
  gsize total = 0;
  for (guint f = 0; f < n_paths; f++) {
    GBytes *bytes = sieve__data_read_file(batch_paths[f], error);
    if (bytes == NULL)
      return NULL;
    g_ptr_array_add(files, bytes);
    gsize len = g_bytes_get_size(bytes);
    if (len == 0) {
      sieve__data_error(error, SIEVE_ERROR_PARSE, batch_paths[f], "empty file, expected CIFAR-%u records", n_classes);
      return NULL;
    }
    if (len % record != 0) {
      sieve__data_error(error, SIEVE_ERROR_PARSE, batch_paths[f],
                        "truncated record: %" G_GSIZE_FORMAT " bytes is %" G_GSIZE_FORMAT
                        " whole CIFAR-%u records of %" G_GSIZE_FORMAT " bytes and %" G_GSIZE_FORMAT " bytes over",
                        len, len / record, n_classes, record, len % record);
      return NULL;
    }
    total += len / record;
  }
  if (total > G_MAXUINT) {
    sieve__data_error(error, SIEVE_ERROR_PARSE, batch_paths[0], "too many records (%" G_GSIZE_FORMAT ")", total);
    return NULL;
  }

  g_autofree char *base = sieve__data_name_from_path(batch_paths[0]);
  g_autofree char *name = n_paths == 1 ? g_strdup(base) : g_strdup_printf("%s and %u more", base, n_paths - 1);
  g_autoptr(SieveDataset) ds =
      sieve__data_dataset_new(batch_paths[0], (guint) total, 3, CIFAR_SIDE, CIFAR_SIDE, n_classes, name, error);
  if (ds == NULL)
    return NULL;
  const float *scale = sieve__data_byte_scale();
  guint i = 0;
  for (guint f = 0; f < n_paths; f++) {
    gsize len = 0;
    const guint8 *data = g_bytes_get_data(g_ptr_array_index(files, f), &len);
    for (gsize r = 0; r < len / record; r++, i++) {
      const guint8 *rec = data + r * record;
      guint label = rec[label_bytes - 1]; /* CIFAR-100: the fine label, after the coarse one */
      if (label >= n_classes) {
        sieve__data_error(error, SIEVE_ERROR_PARSE, batch_paths[f],
                          "label %u of record %" G_GSIZE_FORMAT " is out of range 0..%u", label, r, n_classes - 1);
        return NULL;
      }
      ds->y[i] = (gint32) label;
      float *x = ds->x + (gsize) i * CIFAR_PIXELS;
      const guint8 *px = rec + label_bytes;
      for (gsize p = 0; p < CIFAR_PIXELS; p++)
        x[p] = scale[px[p]];
    }
  }
  return g_steal_pointer(&ds);
}
