/* .npy and .npz (src/npy.c) and the proxies' batch files (src/proxy-io.c):
 * round trips of every type and rank, the
 * header's alignment, bytes checked against NumPy's layout written out by
 * hand, each malformed file refused with a message naming the problem, and
 * the zip container parsed back member by member with zlib's CRC-32 when
 * zlib is there. */
#include <string.h>

#include <glib/gstdio.h>
#include <sieve/abi.h>

#include "data/data-private.h"
#include "proxy/proxy-private.h"
#include <zlib.h>

static void
test_round_trip(void)
{
  float f[6] = {1.5f, -2, 3, 4, 5, 6};
  double d[3] = {1e300, -0.0, 3};
  gint32 i32[2] = {G_MININT32, G_MAXINT32};
  gint64 i64 = -7;
  guint8 u8[4] = {0, 1, 254, 255};
  struct {
    SieveNpyType type;
    guint ndims;
    guint64 dims[4];
    gconstpointer data;
    gsize bytes;
  } cases[] = {
    {SIEVE_NPY_F32, 4, {1, 2, 3, 1}, f, sizeof f}, {SIEVE_NPY_F64, 1, {3}, d, sizeof d},
    {SIEVE_NPY_I32, 2, {2, 1}, i32, sizeof i32},   {SIEVE_NPY_I64, 0, {0}, &i64, sizeof i64},
    {SIEVE_NPY_U8, 1, {4}, u8, sizeof u8},         {SIEVE_NPY_F32, 2, {0, 5}, f, 0},
  };
  for (guint t = 0; t < G_N_ELEMENTS(cases); t++) {
    g_autoptr(GBytes) b = sieve__npy_encode(cases[t].type, cases[t].ndims, cases[t].dims, cases[t].data);
    gsize size;
    const guint8 *p = g_bytes_get_data(b, &size);
    g_assert_cmpuint((size - cases[t].bytes) % 64, ==, 0); /* header padded to 64 bytes */
    g_assert_cmpint(p[10 + (p[8] | p[9] << 8) - 1], ==, '\n');
    GError *error = NULL;
    g_autoptr(SieveNpy) a = sieve__npy_decode(p, size, "case", &error);
    g_assert_no_error(error);
    g_assert_cmpint(a->type, ==, cases[t].type);
    g_assert_cmpuint(a->ndims, ==, cases[t].ndims);
    for (guint k = 0; k < a->ndims; k++)
      g_assert_cmpuint(a->dims[k], ==, cases[t].dims[k]);
    g_assert_cmpmem(a->data, cases[t].bytes, cases[t].data, cases[t].bytes);
    /* Never NULL, no elements included: the conversions copy from it
     * (memcpy from NULL is undefined even for 0 bytes). */
    g_assert_nonnull(a->data);
  }
  const char *shapes[] = {"(1, 2, 3, 1)", "(3,)", "(2, 1)", "()", "(4,)", "(0, 5)"};
  for (guint t = 0; t < G_N_ELEMENTS(cases); t++) {
    g_autoptr(GBytes) b = sieve__npy_encode(cases[t].type, cases[t].ndims, cases[t].dims, cases[t].data);
    g_autoptr(SieveNpy) a = sieve__npy_decode(g_bytes_get_data(b, NULL), g_bytes_get_size(b), "case", NULL);
    g_autofree char *shape = sieve__npy_shape_text(a);
    g_assert_cmpstr(shape, ==, shapes[t]);
  }
}

/* The bytes NumPy 1.24 writes for np.save(f, np.array([[1, 2, 3]], dtype='<i4')). */
static void
test_numpy_layout(void)
{
  gint32 v[3] = {1, 2, 3};
  g_autoptr(GBytes) b = sieve__npy_encode(SIEVE_NPY_I32, 2, (guint64[]){1, 3}, v);
  gsize size;
  const char *p = g_bytes_get_data(b, &size);
  const char *header = "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 3), }";
  g_assert_cmpuint(size, ==, 128 + 12);
  g_assert_cmpmem(p, 8, "\x93NUMPY\x01\x00", 8);
  g_assert_cmpint(p[8] | p[9] << 8, ==, 118);
  g_autofree char *padded = g_strdup_printf("%-117s\n", header);
  g_assert_cmpmem(p + 10, 118, padded, 118);
  g_assert_cmpmem(p + 128, 12, v, 12);
  g_autoptr(GBytes) one = sieve__npy_encode(SIEVE_NPY_I32, 1, (guint64[]){3}, v);
  g_assert_nonnull(g_strstr_len((const char *)g_bytes_get_data(one, NULL) + 10, 100, "'shape': (3,), }"));
  g_autoptr(GBytes) scalar = sieve__npy_encode(SIEVE_NPY_I32, 0, NULL, v);
  g_assert_nonnull(g_strstr_len((const char *)g_bytes_get_data(scalar, NULL) + 10, 100, "'shape': (), }"));
}

static void
expect_refused(const char *bytes, gsize size, const char *fragment)
{
  GError *error = NULL;
  SieveNpy *a = sieve__npy_decode((const guint8 *)bytes, size, "bad.npy", &error);
  g_assert_null(a);
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, "bad.npy"));
  g_assert_nonnull(strstr(error->message, fragment));
  g_error_free(error);
}

static char *
with_header(const char *dict, gsize data_bytes, gsize *size)
{
  gsize hl = strlen(dict);
  *size = 10 + hl + data_bytes;
  char *b = g_malloc0(*size);
  memcpy(b, "\x93NUMPY\x01\x00", 8);
  b[8] = hl & 0xff;
  b[9] = hl >> 8;
  memcpy(b + 10, dict, hl);
  return b;
}

static void
test_refused(void)
{
  gsize n;
  expect_refused("PK\x03\x04 not npy at all", 20, "magic");
  g_autofree char *fortran = with_header("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }\n", 16, &n);
  expect_refused(fortran, n, "Fortran");
  g_autofree char *complex = with_header("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }\n", 16, &n);
  expect_refused(complex, n, "'<c8'");
  g_autofree char *big = with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n", 8, &n);
  expect_refused(big, n, "'>f4'");
  g_autofree char *short_data = with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n", 8, &n);
  expect_refused(short_data, n, "need 12");
  g_autofree char *no_shape = with_header("{'descr': '<f4', 'fortran_order': False, }\n", 8, &n);
  expect_refused(no_shape, n, "'shape'");
  g_autofree char *cut = with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n", 0, &n);
  expect_refused(cut, 20, "past the end");
}

static void
test_convert(void)
{
  GError *error = NULL;
  double d[2] = {0.25, -3};
  g_autoptr(GBytes) b = sieve__npy_encode(SIEVE_NPY_F64, 1, (guint64[]){2}, d);
  g_autoptr(SieveNpy) a = sieve__npy_decode(g_bytes_get_data(b, NULL), g_bytes_get_size(b), "d", &error);
  g_autofree float *f = sieve__npy_to_f32(a, "d", &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(f[0], ==, 0.25f);
  g_assert_cmpfloat(f[1], ==, -3.0f);
  g_assert_null(sieve__npy_to_i32(a, "d.npy", &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE);
  g_assert_nonnull(strstr(error->message, "d.npy: expected integers"));
  g_clear_error(&error);

  gint64 l[3] = {0, 9, (gint64)1 << 40};
  g_autoptr(GBytes) lb = sieve__npy_encode(SIEVE_NPY_I64, 1, (guint64[]){2}, l);
  g_autoptr(SieveNpy) la = sieve__npy_decode(g_bytes_get_data(lb, NULL), g_bytes_get_size(lb), "l", &error);
  g_autofree gint32 *li = sieve__npy_to_i32(la, "l", &error);
  g_assert_no_error(error);
  g_assert_cmpint(li[1], ==, 9);
  g_autoptr(GBytes) hb = sieve__npy_encode(SIEVE_NPY_I64, 1, (guint64[]){3}, l);
  g_autoptr(SieveNpy) ha = sieve__npy_decode(g_bytes_get_data(hb, NULL), g_bytes_get_size(hb), "h", &error);
  g_assert_null(sieve__npy_to_i32(ha, "h.npy", &error));
  g_assert_nonnull(strstr(error->message, "element 2"));
  g_clear_error(&error);
  g_assert_null(sieve__npy_to_f32(ha, "h.npy", &error));
  g_assert_nonnull(strstr(error->message, "expected floating-point"));
  g_clear_error(&error);
}

static guint
get16(const guint8 *p)
{
  return p[0] | p[1] << 8;
}

static guint32
get32(const guint8 *p)
{
  return p[0] | p[1] << 8 | p[2] << 16 | (guint32)p[3] << 24;
}

/* Two members, read back through the central directory as a zip reader
 * (numpy.load uses Python's zipfile) does. */
static void
test_npz(void)
{
  g_autofree char *dir = g_dir_make_tmp("sieve-npz-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "w.npz", NULL);
  float w[4] = {1, 2, 3, 4};
  gint64 t = 0;
  GBytes *arrays[2] = {sieve__npy_encode(SIEVE_NPY_F32, 2, (guint64[]){2, 2}, w),
                       sieve__npy_encode(SIEVE_NPY_I64, 0, NULL, &t)};
  const char *names[2] = {"features.0.weight", "features.1.num_batches_tracked"};
  GError *error = NULL;
  g_assert_true(sieve__npz_write(path, names, arrays, 2, &error));
  g_assert_no_error(error);
  g_autofree char *zip = NULL;
  gsize size;
  g_assert_true(g_file_get_contents(path, &zip, &size, NULL));
  const guint8 *z = (const guint8 *)zip, *end = z + size - 22;
  g_assert_cmpuint(get32(end), ==, 0x06054b50);
  g_assert_cmpuint(get16(end + 10), ==, 2);
  const guint8 *c = z + get32(end + 16);
  for (guint i = 0; i < 2; i++) {
    g_assert_cmpuint(get32(c), ==, 0x02014b50);
    guint name_len = get16(c + 28);
    g_autofree char *member = g_strdup_printf("%s.npy", names[i]);
    g_assert_cmpmem(c + 46, name_len, member, strlen(member));
    const guint8 *local = z + get32(c + 42);
    g_assert_cmpuint(get32(local), ==, 0x04034b50);
    g_assert_cmpuint(get16(local + 8), ==, 0); /* stored */
    guint32 n = get32(local + 18);
    g_assert_cmpuint(n, ==, get32(local + 22));
    const guint8 *data = local + 30 + get16(local + 26) + get16(local + 28);
    g_assert_cmpmem(data, n, g_bytes_get_data(arrays[i], NULL), g_bytes_get_size(arrays[i]));
    g_assert_cmpuint(get32(local + 14), ==, crc32(0, data, n));
    g_assert_cmpuint(get32(c + 16), ==, get32(local + 14));
    c += 46 + name_len + get16(c + 30) + get16(c + 32);
  }
  g_bytes_unref(arrays[0]);
  g_bytes_unref(arrays[1]);
  g_unlink(path);
  g_rmdir(dir);
}

static char *
write_npy(const char *dir, const char *name, SieveNpyType type, guint ndims, const guint64 *dims, gconstpointer data)
{
  char *path = g_build_filename(dir, name, NULL);
  g_autoptr(GBytes) b = sieve__npy_encode(type, ndims, dims, data);
  g_assert_true(g_file_set_contents(path, g_bytes_get_data(b, NULL), g_bytes_get_size(b), NULL));
  return path;
}

static void
expect_batch_error(const char *x, const char *y, const char *fragment)
{
  GError *error = NULL;
  g_assert_null(sieve_proxy_batch_read(x, y, &error));
  g_assert_nonnull(error);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, fragment));
  g_error_free(error);
}

/* sieve proxies --batch-file / --labels-file (src/proxy-io.c). */
static void
test_proxy_batch(void)
{
  g_autofree char *dir = g_dir_make_tmp("sieve-batch-XXXXXX", NULL);
  double x[12];
  for (int i = 0; i < 12; i++)
    x[i] = i / 4.0;
  guint8 y[2] = {3, 1};
  gint32 neg[2] = {0, -1};
  g_autofree char *xp = write_npy(dir, "x.npy", SIEVE_NPY_F64, 4, (guint64[]){2, 1, 2, 3}, x);
  g_autofree char *yp = write_npy(dir, "y.npy", SIEVE_NPY_U8, 1, (guint64[]){2}, y);
  g_autofree char *flat = write_npy(dir, "flat.npy", SIEVE_NPY_F64, 2, (guint64[]){2, 6}, x);
  g_autofree char *three = write_npy(dir, "three.npy", SIEVE_NPY_U8, 1, (guint64[]){3}, x);
  g_autofree char *negp = write_npy(dir, "neg.npy", SIEVE_NPY_I32, 1, (guint64[]){2}, neg);
  GError *error = NULL;
  g_autoptr(SieveProxyBatch) b = sieve_proxy_batch_read(xp, yp, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(b->n, ==, 2);
  g_assert_cmpuint(b->shape.c, ==, 1);
  g_assert_cmpuint(b->shape.h, ==, 2);
  g_assert_cmpuint(b->shape.w, ==, 3);
  g_assert_cmpfloat(b->x[11], ==, 2.75f);
  g_assert_cmpint(b->y[0], ==, 3);
  g_autoptr(SieveProxyBatch) unlabelled = sieve_proxy_batch_read(xp, NULL, &error);
  g_assert_no_error(error);
  g_assert_null(unlabelled->y);
  expect_batch_error(flat, NULL, "shape (batch, channels, height, width)");
  expect_batch_error(xp, three, "one class id per example");
  expect_batch_error(xp, negp, "label 1 is -1");
  expect_batch_error(yp, NULL, "shape (batch, channels, height, width)");
  expect_batch_error(xp, xp, "one class id per example");
  g_autofree char *missing = g_build_filename(dir, "missing.npy", NULL);
  expect_batch_error(missing, NULL, "missing.npy");
  for (const char *f = "x.npy\0y.npy\0flat.npy\0three.npy\0neg.npy\0"; *f; f += strlen(f) + 1) {
    g_autofree char *p = g_build_filename(dir, f, NULL);
    g_unlink(p);
  }
  g_rmdir(dir);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/npy/round-trip", test_round_trip);
  g_test_add_func("/npy/numpy-layout", test_numpy_layout);
  g_test_add_func("/npy/refused", test_refused);
  g_test_add_func("/npy/convert", test_convert);
  g_test_add_func("/npy/npz", test_npz);
  g_test_add_func("/npy/proxy-batch", test_proxy_batch);
  return g_test_run();
}
