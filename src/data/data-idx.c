/* sieve: the IDX format of MNIST and Fashion-MNIST.
 *
 * LeCun et al., http://yann.lecun.com/exdb/mnist/ ("FILE FORMATS"): a
 * big-endian header of two zero bytes, a type byte (0x08 = unsigned byte),
 * the number of dimensions, then each dimension as a 32-bit integer, then
 * the values in row-major order.  Images are 0x00000803 (n, rows, cols),
 * labels 0x00000801 (n).
 */
#include <string.h>

#include "data/data-private.h"

#define IDX_UBYTE 0x08

static guint32
read_be32(const guint8 *p)
{
  return (guint32) p[0] << 24 | (guint32) p[1] << 16 | (guint32) p[2] << 8 | p[3];
}

/* Checks the header of an IDX file of unsigned bytes with n_dims dimensions
 * and that exactly the values it announces follow; fills dims and returns
 * where the values start, or NULL. */
static const guint8 *
idx_values(const char *path, GBytes *bytes, guint n_dims, const char *what, guint32 *dims, GError **error)
{
  gsize len = 0;
  const guint8 *data = g_bytes_get_data(bytes, &len);
  guint32 expected = IDX_UBYTE << 8 | n_dims;
  if (len < 4) {
    sieve__data_error(error, SIEVE_ERROR_PARSE, path, "truncated: %" G_GSIZE_FORMAT " bytes, too short for an IDX %s file",
                      len, what);
    return NULL;
  }
  guint32 magic = read_be32(data);
  if (magic != expected) {
    sieve__data_error(error, SIEVE_ERROR_PARSE, path,
                      "bad magic number 0x%08x, expected 0x%08x (IDX %s: unsigned bytes, %u dimensions)", magic,
                      expected, what, n_dims);
    return NULL;
  }
  gsize header = 4 + 4 * (gsize) n_dims;
  if (len < header) {
    sieve__data_error(error, SIEVE_ERROR_PARSE, path,
                      "truncated: the IDX header needs %" G_GSIZE_FORMAT " bytes, the file has %" G_GSIZE_FORMAT,
                      header, len);
    return NULL;
  }
  guint64 total = 1;
  gboolean overflow = FALSE;
  for (guint d = 0; d < n_dims; d++) {
    dims[d] = read_be32(data + 4 + 4 * d);
    overflow = overflow || !g_uint64_checked_mul(&total, total, dims[d]) || total > G_MAXSIZE;
  }
  if (overflow) {
    g_autoptr(GString) shape = g_string_new(NULL);
    for (guint d = 0; d < n_dims; d++)
      g_string_append_printf(shape, "%s%u", d ? " x " : "", dims[d]);
    sieve__data_error(error, SIEVE_ERROR_PARSE, path, "the header's dimensions %s claim more values than any file "
                      "can hold", shape->str);
    return NULL;
  }
  gsize body = len - header;
  if (body < total) {
    sieve__data_error(error, SIEVE_ERROR_PARSE, path,
                      "truncated: the header announces %u %s (%" G_GUINT64_FORMAT " bytes of values) but only %" G_GSIZE_FORMAT
                      " bytes follow",
                      dims[0], what, total, body);
    return NULL;
  }
  if (body > total) {
    sieve__data_error(error, SIEVE_ERROR_PARSE, path,
                      "%" G_GSIZE_FORMAT " bytes more than the %u %s (%" G_GUINT64_FORMAT " bytes) its header announces",
                      body - (gsize) total, dims[0], what, total);
    return NULL;
  }
  return data + header;
}

SieveDataset *
sieve_dataset_load_idx_classes(const char *images_path, const char *labels_path, guint n_classes, GError **error)
{
  g_return_val_if_fail(images_path != NULL && labels_path != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);

  g_autoptr(GBytes) image_bytes = sieve__data_read_file(images_path, error);
  if (image_bytes == NULL)
    return NULL;
  guint32 idims[3];
  const guint8 *pixels = idx_values(images_path, image_bytes, 3, "images", idims, error);
  if (pixels == NULL)
    return NULL;
  /* No images: the check on the body passes whatever the rows and
   * columns claim, and an empty dataset of 4-gigapixel images would only
   * fail later, in the batcher's allocation. */
  if (idims[0] == 0) {
    sieve__data_error(error, SIEVE_ERROR_PARSE, images_path, "the header announces no images (of %ux%u pixels)",
                      idims[1], idims[2]);
    return NULL;
  }
  if (idims[1] == 0 || idims[2] == 0) {
    sieve__data_error(error, SIEVE_ERROR_PARSE, images_path, "images of %ux%u pixels", idims[1], idims[2]);
    return NULL;
  }

  g_autoptr(GBytes) label_bytes = sieve__data_read_file(labels_path, error);
  if (label_bytes == NULL)
    return NULL;
  guint32 ldims[1];
  const guint8 *labels = idx_values(labels_path, label_bytes, 1, "labels", ldims, error);
  if (labels == NULL)
    return NULL;
  if (ldims[0] != idims[0]) {
    sieve__data_error(error, SIEVE_ERROR_PARSE, images_path, "count mismatch: %u images but %s has %u labels", idims[0],
                      labels_path, ldims[0]);
    return NULL;
  }

  guint n = idims[0];
  guint max_label = 0;
  for (guint i = 0; i < n; i++) {
    if (n_classes > 0 && labels[i] >= n_classes) {
      sieve__data_error(error, SIEVE_ERROR_PARSE, labels_path, "label %u of example %u is out of range 0..%u",
                        labels[i], i, n_classes - 1);
      return NULL;
    }
    max_label = MAX(max_label, labels[i]);
  }
  if (n_classes == 0)
    n_classes = n > 0 ? max_label + 1 : 0;

  g_autofree char *name = sieve__data_name_from_path(images_path);
  SieveDataset *ds = sieve__data_dataset_new(images_path, n, 1, idims[1], idims[2], n_classes, name, error);
  if (ds == NULL)
    return NULL;
  const float *scale = sieve__data_byte_scale();
  gsize total = (gsize) n * idims[1] * idims[2];
  float *x = ds->x;
  for (gsize i = 0; i < total; i++)
    x[i] = scale[pixels[i]];
  for (guint i = 0; i < n; i++)
    ds->y[i] = labels[i];
  return ds;
}

SieveDataset *
sieve_dataset_load_idx(const char *images_path, const char *labels_path, GError **error)
{
  return sieve_dataset_load_idx_classes(images_path, labels_path, 10, error);
}
