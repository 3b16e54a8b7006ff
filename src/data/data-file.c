/* sieve: reading a data file whole, gzip or not, with errors that name it. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gio/gio.h>
#include <glib/gstdio.h>

#include "data/data-private.h"

void
sieve__data_error(GError **error, SieveErrorCode code, const char *path, const char *format, ...)
{
  va_list ap;
  va_start(ap, format);
  g_autofree char *message = g_strdup_vprintf(format, ap);
  va_end(ap);
  g_set_error(error, SIEVE_ERROR, code, "%s: %s", path, message);
}

const float *
sieve__data_byte_scale(void)
{
  static float table[256];
  static gsize ready = 0;
  if (g_once_init_enter(&ready)) {
    for (int b = 0; b < 256; b++)
      table[b] = (float) b / 255.0f;
    g_once_init_leave(&ready, 1);
  }
  return table;
}

char *
sieve__data_name_from_path(const char *path)
{
  return g_path_get_basename(path);
}

/* The file's bytes as they are on disk. (transfer full) */
static guint8 *
read_raw(const char *path, gsize *out_len, GError **error)
{
  int fd = g_open(path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) {
    int errsv = errno;
    sieve__data_error(error, errsv == ENOENT ? SIEVE_ERROR_NOT_FOUND : SIEVE_ERROR_IO, path, "cannot open: %s",
                      g_strerror(errsv));
    return NULL;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int errsv = errno;
    sieve__data_error(error, SIEVE_ERROR_IO, path, "cannot stat: %s", g_strerror(errsv));
    close(fd);
    return NULL;
  }
  if (!S_ISREG(st.st_mode)) {
    sieve__data_error(error, SIEVE_ERROR_IO, path, "%s",
                      S_ISDIR(st.st_mode) ? "is a directory, not a file" : "is not a regular file");
    close(fd);
    return NULL;
  }
  gsize size = (gsize) st.st_size;
  guint8 *buf = g_malloc(size + 1); /* +1: a valid pointer for an empty file */
  gsize got = 0;
  while (got < size) {
    ssize_t r = read(fd, buf + got, size - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      int errsv = errno;
      sieve__data_error(error, SIEVE_ERROR_IO, path, "read failed: %s", g_strerror(errsv));
      close(fd);
      g_free(buf);
      return NULL;
    }
    if (r == 0)
      break; /* shrank while we read: take what is there, the format checks judge it */
    got += (gsize) r;
  }
  close(fd);
  *out_len = got;
  return buf;
}

/* 2 GiB: four times the largest dataset file sieve reads (CIFAR-100's). */
#define SIEVE_DATA_MAX_INFLATED ((gsize) 2 << 30)

/* Inflates a whole gzip file (RFC 1952), members one after another included
 * (what `cat a.gz b.gz` makes).  zlib checks each member's CRC-32 and length. */
static GBytes *
inflate_gzip(const char *path, const guint8 *in, gsize in_len, GError **error)
{
  /* The last member's trailer holds its length mod 2^32 (ISIZE): a good
   * first size for the output, grown by doubling when it is not enough. */
  gsize cap = 0;
  if (in_len >= 18)
    cap = (gsize) in[in_len - 4] | (gsize) in[in_len - 3] << 8 | (gsize) in[in_len - 2] << 16 |
          (gsize) in[in_len - 1] << 24;
  /* Inflating stops at the size the trailer declares (or at
   * SIEVE_DATA_MAX_INFLATED when the file has several members): a gzip bomb
   * is refused after that many bytes, not after filling the memory. */
  gsize declared = cap;
  /* The first allocation believes the trailer only as far as deflate can
   * compress (at most about 1032:1, RFC 1951's 258-byte matches in two
   * bits): a forged trailer on a small file costs no large buffer, and a
   * true one is reached by doubling. */
  gsize plausible = in_len <= G_MAXSIZE / 1032 ? in_len * 1032 : G_MAXSIZE;
  cap = MAX(MIN(cap, plausible) + 64, MAX(in_len, 4096)); /* slack: room for the end of stream */
  gboolean one_member = TRUE;
  guint8 *out = g_malloc(cap);
  gsize out_len = 0, pos = 0;
  g_autoptr(GZlibDecompressor) z = g_zlib_decompressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP);

  for (;;) {
    if (out_len == cap) {
      cap *= 2;
      out = g_realloc(out, cap);
    }
    gsize n_read = 0, n_written = 0;
    g_autoptr(GError) local = NULL;
    GConverterResult r = g_converter_convert(G_CONVERTER(z), in + pos, in_len - pos, out + out_len, cap - out_len,
                                             G_CONVERTER_INPUT_AT_END, &n_read, &n_written, &local);
    if (r == G_CONVERTER_ERROR) {
      if (g_error_matches(local, G_IO_ERROR, G_IO_ERROR_NO_SPACE)) {
        cap *= 2;
        out = g_realloc(out, cap);
        continue;
      }
      if (g_error_matches(local, G_IO_ERROR, G_IO_ERROR_PARTIAL_INPUT))
        sieve__data_error(error, SIEVE_ERROR_PARSE, path, "truncated gzip data (the compressed stream ends early)");
      else
        sieve__data_error(error, SIEVE_ERROR_PARSE, path, "corrupt gzip data: %s", local->message);
      g_free(out);
      return NULL;
    }
    pos += n_read;
    out_len += n_written;
    gsize limit = one_member && declared > 0 ? MIN(declared, SIEVE_DATA_MAX_INFLATED) : SIEVE_DATA_MAX_INFLATED;
    if (out_len > limit) {
      sieve__data_error(error, SIEVE_ERROR_PARSE, path,
                        "gzip data inflate to more than %" G_GSIZE_FORMAT " bytes, %s; stopped there", limit,
                        limit == declared ? "the size its trailer declares" : "the most sieve reads from one file");
      g_free(out);
      return NULL;
    }
    if (r == G_CONVERTER_FINISHED) {
      if (pos == in_len)
        break;
      if (in_len - pos >= 2 && in[pos] == 0x1f && in[pos + 1] == 0x8b) {
        one_member = FALSE;
        g_converter_reset(G_CONVERTER(z));
        continue;
      }
      sieve__data_error(error, SIEVE_ERROR_PARSE, path, "%" G_GSIZE_FORMAT " bytes of garbage after the gzip data",
                        in_len - pos);
      g_free(out);
      return NULL;
    }
    if (n_read == 0 && n_written == 0 && out_len < cap) {
      /* No progress with room to spare: the input is exhausted mid-stream. */
      sieve__data_error(error, SIEVE_ERROR_PARSE, path, "truncated gzip data (the compressed stream ends early)");
      g_free(out);
      return NULL;
    }
  }
  return g_bytes_new_take(out, out_len);
}

GBytes *
sieve__data_read_file(const char *path, GError **error)
{
  gsize len = 0;
  guint8 *raw = read_raw(path, &len, error);
  if (raw == NULL)
    return NULL;
  if (len >= 2 && raw[0] == 0x1f && raw[1] == 0x8b) {
    GBytes *inflated = inflate_gzip(path, raw, len, error);
    g_free(raw);
    return inflated;
  }
  return g_bytes_new_take(raw, len);
}

SieveDataset *
sieve__data_dataset_new(const char *path, guint n, guint channels, guint height, guint width, guint n_classes,
                        const char *name, GError **error)
{
  guint64 values = 0;
  if (!g_uint64_checked_mul(&values, (guint64) channels * height, width) ||
      !g_uint64_checked_mul(&values, values, n) || values > G_MAXSIZE / sizeof(float)) {
    sieve__data_error(error, SIEVE_ERROR_PARSE, path, "%u examples of %ux%ux%u values overflow a size", n, channels,
                      height, width);
    return NULL;
  }
  /* Tried first at the final size: a dataset larger than the memory is
   * the user's error to read, not an abort inside g_new0. */
  float *x = g_try_new0(float, MAX(values, 1));
  gint32 *y = x != NULL ? g_try_new0(gint32, MAX(n, 1)) : NULL;
  if (y == NULL) {
    g_free(x);
    g_autofree char *size = g_format_size_full(values * sizeof(float), G_FORMAT_SIZE_IEC_UNITS);
    sieve__data_error(error, SIEVE_ERROR_PARSE, path,
                      "%u examples of %ux%ux%u values need %s, more than can be allocated", n, channels, height,
                      width, size);
    return NULL;
  }
  SieveDataset *ds = sieve_dataset_new(0, channels, height, width, n_classes, name);
  g_free(ds->x);
  g_free(ds->y);
  ds->n = n;
  ds->x = x;
  ds->y = y;
  return ds;
}
