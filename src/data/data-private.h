/* sieve: the data area: dataset files, the batcher, .npy and .npz.
 * Not installed: not part of the plugin ABI. */
#pragma once

#include <glib.h>
#include <sieve/data.h>
#include "base/base-private.h"

G_BEGIN_DECLS

/* ==== dataset files ==== */
/* sieve: helpers shared by the data loaders (not installed). */

/* The whole content of a file, inflated when it is gzip (told by its first
 * two bytes, not by its name).  Errors name the file. (transfer full) */
G_GNUC_INTERNAL GBytes *sieve__data_read_file(const char *path, GError **error);

/* Sets a SIEVE_ERROR whose message is "PATH: " + the formatted text. */
G_GNUC_INTERNAL void sieve__data_error(GError **error, SieveErrorCode code, const char *path, const char *format,
                                       ...) G_GNUC_PRINTF(4, 5);

/* pixel / 255 for every byte value: a table lookup is what keeps converting
 * 47 million Fashion-MNIST pixels in the tens of milliseconds. */
G_GNUC_INTERNAL const float *sieve__data_byte_scale(void);

/* sieve_dataset_new for a loader: NULL + an error naming path, not an abort,
 * when n examples of channels x height x width floats overflow a size or
 * cannot be allocated (a file's header or size decides n and the shape). */
G_GNUC_INTERNAL SieveDataset *sieve__data_dataset_new(const char *path, guint n, guint channels, guint height,
                                                      guint width, guint n_classes, const char *name,
                                                      GError **error);

/* The name of a file for a dataset's name: its base name. (transfer full) */
G_GNUC_INTERNAL char *sieve__data_name_from_path(const char *path);

/* ==== .npy and .npz ==== */
/* sieve: NumPy's .npy array files (format version 1.0) and .npz archives
 * of them, for exchanging weights and batches with PyTorch and NumPy (the
 * proxies' cross-check against the PyTorch peer, `sieve proxies
 * --batch-file`).
 *
 *   g_autoptr(SieveNpy) x = sieve__npy_read("batch.npy", error);
 *   g_autofree float *v = sieve__npy_to_f32(x, error);   // x->dims, x->ndims
 *
 *   GBytes *w = sieve__npy_encode(SIEVE_NPY_F32, 2, (guint64[]){10, 64}, values);
 *   sieve__npz_write("weights.npz", names, arrays, n, error);
 *
 * Only what those uses need: little-endian, C order, the types below. */

typedef enum {
  SIEVE_NPY_F32, /* '<f4' */
  SIEVE_NPY_F64, /* '<f8' */
  SIEVE_NPY_I32, /* '<i4' */
  SIEVE_NPY_I64, /* '<i8' */
  SIEVE_NPY_U8,  /* '|u1' */
} SieveNpyType;

#define SIEVE_NPY_MAX_DIMS 8

typedef struct {
  SieveNpyType type;
  guint ndims;
  guint64 dims[SIEVE_NPY_MAX_DIMS];
  guint64 count;  /* elements: the product of dims (1 for a scalar) */
  gpointer data;  /* count elements of type, owned */
} SieveNpy;

/* (transfer full) the file's bytes as an .npy array: ndims dims, data of
 * type (count elements, native little-endian). */
SIEVE_INTERNAL_API GBytes *sieve__npy_encode(SieveNpyType type, guint ndims, const guint64 *dims, gconstpointer data);
/* (transfer full) an .npy file; errors name the file and what was wrong
 * (another type, Fortran order, a truncated file). */
SIEVE_INTERNAL_API SieveNpy *sieve__npy_read(const char *path, GError **error);
/* (transfer full) what sieve__npy_read parses, from memory; name: for messages. */
SIEVE_INTERNAL_API SieveNpy *sieve__npy_decode(const guint8 *bytes, gsize size, const char *name, GError **error);
SIEVE_INTERNAL_API void sieve__npy_free(SieveNpy *array);
/* The shape as NumPy prints it, "(0, 1, 28, 28)", "(8,)", "()". (transfer full) */
SIEVE_INTERNAL_API char *sieve__npy_shape_text(const SieveNpy *array);
/* (transfer full) the elements as float (from f32 or f64) or as int32
 * (from i32, i64 or u8, each in range); NULL + error otherwise. */
SIEVE_INTERNAL_API float *sieve__npy_to_f32(const SieveNpy *array, const char *name, GError **error);
SIEVE_INTERNAL_API gint32 *sieve__npy_to_i32(const SieveNpy *array, const char *name, GError **error);

/* Writes an .npz (a zip archive of NAME.npy members, stored without
 * compression, as numpy.savez does) with n arrays from sieve__npy_encode. */
SIEVE_INTERNAL_API gboolean sieve__npz_write(const char *path, const char *const *names, GBytes *const *arrays,
                                            guint n, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveNpy, sieve__npy_free)

G_END_DECLS
