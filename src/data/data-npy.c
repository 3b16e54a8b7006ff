/* .npy and .npz, after NumPy's format description (numpy/lib/format.py,
 * "NEP 1 - A simple file format for NumPy arrays") and PKWARE's APPNOTE.TXT
 * for the zip container (stored members, no zip64). */
#include <errno.h>
#include <stdio.h>
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>
#include <zlib.h>

#include "data/data-private.h"
#include <sieve/abi.h>

static const char magic[] = "\x93NUMPY";

static const struct {
  const char *descr;
  gsize size;
} types[] = {
  [SIEVE_NPY_F32] = {"<f4", 4}, [SIEVE_NPY_F64] = {"<f8", 8}, [SIEVE_NPY_I32] = {"<i4", 4},
  [SIEVE_NPY_I64] = {"<i8", 8}, [SIEVE_NPY_U8] = {"|u1", 1},
};

G_STATIC_ASSERT(G_BYTE_ORDER == G_LITTLE_ENDIAN); /* data are written as they lie in memory */

GBytes *
sieve__npy_encode(SieveNpyType type, guint ndims, const guint64 *dims, gconstpointer data)
{
  g_return_val_if_fail(type < G_N_ELEMENTS(types) && ndims <= SIEVE_NPY_MAX_DIMS, NULL);
  GString *h = g_string_new(NULL);
  g_string_append_printf(h, "{'descr': '%s', 'fortran_order': False, 'shape': (", types[type].descr);
  guint64 count = 1;
  for (guint d = 0; d < ndims; d++) {
    g_string_append_printf(h, "%" G_GUINT64_FORMAT "%s", dims[d], ndims == 1 || d + 1 < ndims ? ", " : "");
    count *= dims[d];
  }
  if (ndims == 1)
    g_string_truncate(h, h->len - 1); /* "(64,)" */
  g_string_append(h, "), }");
  /* Magic, version, length, header and its newline: a multiple of 64 bytes,
   * so that the data are aligned (NumPy's own choice). */
  gsize total = 10 + h->len + 1;
  gsize pad = (64 - total % 64) % 64;
  for (gsize i = 0; i < pad; i++)
    g_string_append_c(h, ' ');
  g_string_append_c(h, '\n');
  GByteArray *out = g_byte_array_new();
  g_byte_array_append(out, (const guint8 *)magic, 6);
  guint8 version[2] = {1, 0};
  g_byte_array_append(out, version, 2);
  guint16 hl = GUINT16_TO_LE((guint16)h->len);
  g_byte_array_append(out, (const guint8 *)&hl, 2);
  g_byte_array_append(out, (const guint8 *)h->str, h->len);
  g_byte_array_append(out, data, count * types[type].size);
  g_string_free(h, TRUE);
  return g_byte_array_free_to_bytes(out);
}

static gboolean
fail(GError **error, const char *name, const char *problem)
{
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "%s: not an array sieve can read: %s", name, problem);
  return FALSE;
}

/* The value text after 'key': in the header dict, or NULL. */
static const char *
dict_value(const char *header, const char *key)
{
  g_autofree char *quoted = g_strdup_printf("'%s':", key);
  const char *p = strstr(header, quoted);
  if (p == NULL)
    return NULL;
  p += strlen(quoted);
  while (*p == ' ')
    p++;
  return p;
}

SieveNpy *
sieve__npy_decode(const guint8 *bytes, gsize size, const char *name, GError **error)
{
  if (size < 10 || memcmp(bytes, magic, 6) != 0)
    return fail(error, name, "it does not start with NumPy's magic string (\\x93NUMPY)"), NULL;
  guint major = bytes[6];
  gsize hlen, start;
  if (major == 1) {
    hlen = bytes[8] | (gsize)bytes[9] << 8;
    start = 10;
  } else if ((major == 2 || major == 3) && size >= 12) {
    hlen = bytes[8] | (gsize)bytes[9] << 8 | (gsize)bytes[10] << 16 | (gsize)bytes[11] << 24;
    start = 12;
  } else {
    return fail(error, name, "unknown format version (1.0, 2.0 and 3.0 are known)"), NULL;
  }
  if (start + hlen > size)
    return fail(error, name, "the header runs past the end of the file"), NULL;
  g_autofree char *header = g_strndup((const char *)bytes + start, hlen);
  const char *descr = dict_value(header, "descr"), *order = dict_value(header, "fortran_order"),
             *shape = dict_value(header, "shape");
  if (descr == NULL || order == NULL || shape == NULL)
    return fail(error, name, "the header lacks 'descr', 'fortran_order' or 'shape'"), NULL;
  if (!g_str_has_prefix(order, "False"))
    return fail(error, name, "Fortran (column-major) order; save a C-ordered array (numpy.ascontiguousarray)"), NULL;
  SieveNpy *a = g_new0(SieveNpy, 1);
  guint t;
  for (t = 0; t < G_N_ELEMENTS(types); t++) {
    g_autofree char *want = g_strdup_printf("'%s'", types[t].descr);
    if (g_str_has_prefix(descr, want))
      break;
  }
  if (t == G_N_ELEMENTS(types)) {
    g_autofree char *got = g_strndup(descr, strcspn(descr, ","));
    g_autofree char *msg = g_strdup_printf("element type %s (known: <f4, <f8, <i4, <i8, |u1)", got);
    sieve__npy_free(a);
    return fail(error, name, msg), NULL;
  }
  a->type = t;
  if (*shape != '(') {
    sieve__npy_free(a);
    return fail(error, name, "the shape is not a tuple"), NULL;
  }
  const char *p = shape + 1;
  a->count = 1;
  while (*p != ')') {
    char *end;
    while (*p == ' ' || *p == ',')
      p++;
    if (*p == ')')
      break;
    errno = 0;
    guint64 d = g_ascii_strtoull(p, &end, 10);
    if (end == p || errno != 0 || a->ndims == SIEVE_NPY_MAX_DIMS) {
      sieve__npy_free(a);
      return fail(error, name, "the shape is not a tuple of at most 8 sizes"), NULL;
    }
    a->dims[a->ndims++] = d;
    /* Bounded before anything is sized by it: a crafted header's product
     * may wrap around to the file's real size. */
    if (!g_uint64_checked_mul(&a->count, a->count, d) || a->count > G_MAXSIZE / 16) {
      sieve__npy_free(a);
      return fail(error, name, "the shape claims more elements than any file can hold"), NULL;
    }
    p = end;
  }
  gsize want = a->count * types[t].size;
  if (size - start - hlen != want) {
    g_autofree char *msg =
      g_strdup_printf("the data hold %" G_GSIZE_FORMAT " bytes, the shape and type need %" G_GSIZE_FORMAT,
                      size - start - hlen, want);
    sieve__npy_free(a);
    return fail(error, name, msg), NULL;
  }
  /* Never NULL, even for no elements: the conversions copy from it. */
  a->data = g_malloc(MAX(want, 1));
  if (want > 0)
    memcpy(a->data, bytes + start + hlen, want);
  return a;
}

SieveNpy *
sieve__npy_read(const char *path, GError **error)
{
  g_autofree char *contents = NULL;
  gsize size;
  if (!g_file_get_contents(path, &contents, &size, error))
    return NULL;
  return sieve__npy_decode((const guint8 *)contents, size, path, error);
}

char *
sieve__npy_shape_text(const SieveNpy *a)
{
  GString *out = g_string_new("(");
  for (guint d = 0; d < a->ndims; d++)
    g_string_append_printf(out, "%s%" G_GUINT64_FORMAT, d > 0 ? ", " : "", a->dims[d]);
  g_string_append(out, a->ndims == 1 ? ",)" : ")");
  return g_string_free(out, FALSE);
}

void
sieve__npy_free(SieveNpy *a)
{
  if (!a)
    return;
  g_free(a->data);
  g_free(a);
}

float *
sieve__npy_to_f32(const SieveNpy *a, const char *name, GError **error)
{
  float *out = g_new(float, MAX(a->count, 1));
  if (a->type == SIEVE_NPY_F32) {
    memcpy(out, a->data, a->count * sizeof(float));
  } else if (a->type == SIEVE_NPY_F64) {
    for (guint64 i = 0; i < a->count; i++)
      out[i] = (float)((const double *)a->data)[i];
  } else {
    g_free(out);
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "%s: expected floating-point values (<f4 or <f8), not %s",
                name, types[a->type].descr);
    return NULL;
  }
  /* Inputs of a network: NaN or an infinity has no answer that sieve's
   * runtime would give as PyTorch or an ONNX runtime gives it (oneDNN's
   * ReLU returns 0 for NaN, so the logits came out finite and plausible).
   * Refused where it is, as the CSV reader refuses it. */
  for (guint64 i = 0; i < a->count; i++) {
    if (isfinite(out[i]))
      continue;
    guint64 index[SIEVE_NPY_MAX_DIMS], rest = i;
    for (guint d = a->ndims; d-- > 0;) {
      index[d] = rest % a->dims[d];
      rest /= a->dims[d];
    }
    GString *at = g_string_new(NULL);
    for (guint d = 0; d < a->ndims; d++)
      g_string_append_printf(at, "%s%" G_GUINT64_FORMAT, d ? ", " : "", index[d]);
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE,
                "%s: element [%s] is %s: a network's inputs must be finite numbers (replace missing values first)",
                name, at->str, isnan(out[i]) ? "nan" : out[i] > 0 ? "inf" : "-inf");
    g_string_free(at, TRUE);
    g_free(out);
    return NULL;
  }
  return out;
}

gint32 *
sieve__npy_to_i32(const SieveNpy *a, const char *name, GError **error)
{
  gint32 *out = g_new(gint32, MAX(a->count, 1));
  for (guint64 i = 0; i < a->count; i++) {
    gint64 v;
    switch (a->type) {
    case SIEVE_NPY_I32:
      v = ((const gint32 *)a->data)[i];
      break;
    case SIEVE_NPY_I64:
      v = ((const gint64 *)a->data)[i];
      break;
    case SIEVE_NPY_U8:
      v = ((const guint8 *)a->data)[i];
      break;
    default:
      g_free(out);
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "%s: expected integers (<i4, <i8 or |u1), not %s", name,
                  types[a->type].descr);
      return NULL;
    }
    if (v < G_MININT32 || v > G_MAXINT32) {
      g_free(out);
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "%s: element %" G_GUINT64_FORMAT " (%" G_GINT64_FORMAT
                  ") does not fit 32 bits", name, i, v);
      return NULL;
    }
    out[i] = (gint32)v;
  }
  return out;
}

/* ---- .npz: a zip archive of stored members ------------------------------------------ */

static void
put16(GByteArray *b, guint v)
{
  guint8 x[2] = {v & 0xff, (v >> 8) & 0xff};
  g_byte_array_append(b, x, 2);
}

static void
put32(GByteArray *b, guint32 v)
{
  guint8 x[4] = {v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >> 24};
  g_byte_array_append(b, x, 4);
}

gboolean
sieve__npz_write(const char *path, const char *const *names, GBytes *const *arrays, guint n, GError **error)
{
  g_autoptr(GByteArray) out = g_byte_array_new();
  g_autoptr(GByteArray) dir = g_byte_array_new();
  const guint date = (0 << 9) | (1 << 5) | 1; /* 1980-01-01: the files carry no meaningful time */
  for (guint i = 0; i < n; i++) {
    g_autofree char *member = g_strdup_printf("%s.npy", names[i]);
    gsize size;
    const guint8 *data = g_bytes_get_data(arrays[i], &size);
    if (size >= G_MAXUINT32 || out->len + (guint64)size >= G_MAXUINT32 || strlen(member) > G_MAXUINT16) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_IO, "%s: %s is too large for a zip archive without zip64",
                  path, member);
      return FALSE;
    }
    /* zip members carry zlib's CRC-32 (IEEE 802.3). */
    guint32 crc = (guint32) crc32(0, data, (uInt) size), offset = out->len;
    guint name_len = strlen(member);
    put32(out, 0x04034b50); /* local file header */
    put16(out, 20);         /* version needed: 2.0 */
    put16(out, 0);          /* flags */
    put16(out, 0);          /* stored */
    put16(out, 0);          /* time */
    put16(out, date);
    put32(out, crc);
    put32(out, size);
    put32(out, size);
    put16(out, name_len);
    put16(out, 0); /* extra */
    g_byte_array_append(out, (const guint8 *)member, name_len);
    g_byte_array_append(out, data, size);

    put32(dir, 0x02014b50); /* central directory header */
    put16(dir, 20);         /* made by */
    put16(dir, 20);         /* needed */
    put16(dir, 0);
    put16(dir, 0);
    put16(dir, 0);
    put16(dir, date);
    put32(dir, crc);
    put32(dir, size);
    put32(dir, size);
    put16(dir, name_len);
    put16(dir, 0); /* extra */
    put16(dir, 0); /* comment */
    put16(dir, 0); /* disk */
    put16(dir, 0); /* internal attributes */
    put32(dir, 0); /* external attributes */
    put32(dir, offset);
    g_byte_array_append(dir, (const guint8 *)member, name_len);
  }
  guint32 dir_offset = out->len, dir_size = dir->len;
  g_byte_array_append(out, dir->data, dir->len);
  put32(out, 0x06054b50); /* end of central directory */
  put16(out, 0);
  put16(out, 0);
  put16(out, n);
  put16(out, n);
  put32(out, dir_size);
  put32(out, dir_offset);
  put16(out, 0);
  return sieve__file_write(path, out->data, out->len, FALSE, error);
}
