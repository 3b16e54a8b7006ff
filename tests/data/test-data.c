/* tests/data: loaders on real Fashion-MNIST and on files written here
 * (CIFAR, CSV, damaged IDX), the split, statistics, and the batcher. */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <sieve/csv.h>
#include <sieve/data.h>

#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"

/* ---- helpers ----------------------------------------------------------- */

typedef struct {
  char *dir;
} Fixture;

static void
remove_tree(const char *path)
{
  if (g_file_test(path, G_FILE_TEST_IS_DIR) && !g_file_test(path, G_FILE_TEST_IS_SYMLINK)) {
    GDir *dir = g_dir_open(path, 0, NULL);
    const char *name;
    while (dir && (name = g_dir_read_name(dir)) != NULL) {
      g_autofree char *p = g_build_filename(path, name, NULL);
      remove_tree(p);
    }
    if (dir)
      g_dir_close(dir);
    g_rmdir(path);
  } else {
    g_unlink(path);
  }
}

static void
fixture_setup(Fixture *f, gconstpointer data)
{
  GError *error = NULL;
  f->dir = g_dir_make_tmp("sieve-data-XXXXXX", &error);
  g_assert_no_error(error);
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
  remove_tree(f->dir);
  g_free(f->dir);
}

#define TEST(path, func) g_test_add(path, Fixture, NULL, fixture_setup, func, fixture_teardown)

/* Writes data to DIR/NAME and returns the path. (transfer full) */
static char *
write_file(const char *dir, const char *name, const void *data, gsize len)
{
  char *path = g_build_filename(dir, name, NULL);
  GError *error = NULL;
  g_file_set_contents(path, data, (gssize) len, &error);
  g_assert_no_error(error);
  return path;
}

static char *
write_text(const char *dir, const char *name, const char *text)
{
  return write_file(dir, name, text, strlen(text));
}

/* Bytes gzipped with GIO's compressor. (transfer full) */
static GBytes *
gzip_bytes(const void *data, gsize len)
{
  g_autoptr(GZlibCompressor) z = g_zlib_compressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP, 6);
  g_autoptr(GOutputStream) mem = g_memory_output_stream_new_resizable();
  g_autoptr(GOutputStream) out = g_converter_output_stream_new(mem, G_CONVERTER(z));
  GError *error = NULL;
  g_assert_true(g_output_stream_write_all(out, data, len, NULL, NULL, &error));
  g_assert_true(g_output_stream_close(out, NULL, &error));
  g_assert_no_error(error);
  return g_memory_output_stream_steal_as_bytes(G_MEMORY_OUTPUT_STREAM(mem));
}

/* A gunzipped copy of a file, by a stream (not the loader's own code path). */
static char *
gunzip_to(const char *src, const char *dir, const char *name)
{
  g_autoptr(GFile) in_file = g_file_new_for_path(src);
  GError *error = NULL;
  g_autoptr(GFileInputStream) in = g_file_read(in_file, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(GZlibDecompressor) z = g_zlib_decompressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP);
  g_autoptr(GInputStream) plain = g_converter_input_stream_new(G_INPUT_STREAM(in), G_CONVERTER(z));
  char *path = g_build_filename(dir, name, NULL);
  g_autoptr(GFile) out_file = g_file_new_for_path(path);
  g_autoptr(GFileOutputStream) out = g_file_replace(out_file, NULL, FALSE, G_FILE_CREATE_NONE, NULL, &error);
  g_assert_no_error(error);
  g_output_stream_splice(G_OUTPUT_STREAM(out), plain,
                         G_OUTPUT_STREAM_SPLICE_CLOSE_SOURCE | G_OUTPUT_STREAM_SPLICE_CLOSE_TARGET, NULL, &error);
  g_assert_no_error(error);
  return path;
}

/* An IDX file: big-endian magic and dims, then the bytes. (transfer full) */
static GByteArray *
make_idx(guint32 magic, const guint32 *dims, guint n_dims, const guint8 *values, gsize n_values)
{
  GByteArray *a = g_byte_array_new();
  guint8 be[4];
  for (guint d = 0; d <= n_dims; d++) {
    guint32 v = d == 0 ? magic : dims[d - 1];
    be[0] = v >> 24;
    be[1] = v >> 16;
    be[2] = v >> 8;
    be[3] = v;
    g_byte_array_append(a, be, 4);
  }
  g_byte_array_append(a, values, (guint) n_values);
  return a;
}

static char *
write_idx(const char *dir, const char *name, guint32 magic, const guint32 *dims, guint n_dims, const guint8 *values,
          gsize n_values)
{
  g_autoptr(GByteArray) a = make_idx(magic, dims, n_dims, values, n_values);
  return write_file(dir, name, a->data, a->len);
}

/* A good small IDX pair: 3 images of 2x3, labels 7 1 9. */
static const guint8 small_pixels[18] = {0, 255, 1, 2, 3, 4, 10, 20, 30, 40, 50, 60, 128, 127, 126, 125, 124, 123};
static const guint8 small_labels[3] = {7, 1, 9};
static const guint32 small_idims[3] = {3, 2, 3}, small_ldims[1] = {3};

/* The loader returned NULL with a SIEVE_ERROR of this code whose message
 * holds every given substring (the file's path among them). */
static void
assert_error(gpointer result, GError **errorp, gint code, const char *first, ...)
{
  /* errorp, not the error: the call in the first argument sets it, and
   * arguments are evaluated in no fixed order. */
  GError *error = *errorp;
  g_assert_null(result);
  g_assert_error(error, SIEVE_ERROR, code);
  va_list ap;
  va_start(ap, first);
  for (const char *s = first; s != NULL; s = va_arg(ap, const char *))
    if (strstr(error->message, s) == NULL)
      g_error("error message '%s' lacks '%s'", error->message, s);
  va_end(ap);
  g_test_message("expected error: %s", error->message);
}

static gboolean
have_fashion_mnist(void)
{
  if (g_file_test(FMNIST_DIR "/train-images-idx3-ubyte.gz", G_FILE_TEST_EXISTS))
    return TRUE;
  g_test_skip("Debian's dataset-fashion-mnist is not installed (" FMNIST_DIR ")");
  return FALSE;
}

/* ---- IDX: real Fashion-MNIST -------------------------------------------- */

/* The figures below were computed independently with Python's gzip and
 * numpy from the same files: the first labels, a row of the first image,
 * the sum of all pixel bytes, and the mean and std of pixel/255. */
static void
check_fmnist(const SieveDataset *ds, guint n, const gint32 *first_labels, const guint8 *row, guint64 byte_sum,
             double mean, double std)
{
  g_assert_cmpuint(ds->n, ==, n);
  g_assert_cmpuint(ds->channels, ==, 1);
  g_assert_cmpuint(ds->height, ==, 28);
  g_assert_cmpuint(ds->width, ==, 28);
  g_assert_cmpuint(ds->n_classes, ==, 10);
  guint counts[10] = {0};
  for (guint i = 0; i < ds->n; i++) {
    g_assert_cmpint(ds->y[i], >=, 0);
    g_assert_cmpint(ds->y[i], <, 10);
    counts[ds->y[i]]++;
  }
  for (guint c = 0; c < 10; c++)
    g_assert_cmpuint(counts[c], ==, n / 10);
  for (guint i = 0; i < 10; i++)
    g_assert_cmpint(ds->y[i], ==, first_labels[i]);
  /* Pixels are byte/255: in [0, 1], both ends reached, whole multiples of 1/255. */
  float lo = 1, hi = 0;
  guint64 sum = 0;
  gsize total = (gsize) ds->n * 28 * 28;
  for (gsize i = 0; i < total; i++) {
    float v = ds->x[i];
    lo = MIN(lo, v);
    hi = MAX(hi, v);
    double b = v * 255.0;
    g_assert_cmpfloat(fabs(b - round(b)), <, 1e-4);
    sum += (guint64) round(b);
  }
  g_assert_cmpfloat(lo, ==, 0.0f);
  g_assert_cmpfloat(hi, ==, 1.0f);
  g_assert_cmpuint(sum, ==, byte_sum);
  for (guint j = 0; j < 10; j++) /* image 0, row 10, columns 10..19 */
    g_assert_cmpfloat(ds->x[10 * 28 + 10 + j], ==, (float) row[j] / 255.0f);
  float m, s;
  sieve_dataset_channel_stats(ds, &m, &s);
  g_assert_cmpfloat(fabs(m - mean), <, 1e-6);
  g_assert_cmpfloat(fabs(s - std), <, 1e-6);
}

static void
test_idx_fmnist_train(Fixture *f, gconstpointer data)
{
  if (!have_fashion_mnist())
    return;
  GError *error = NULL;
  gint64 t0 = g_get_monotonic_time();
  g_autoptr(SieveDataset) ds = sieve_dataset_load_idx(FMNIST_DIR "/train-images-idx3-ubyte.gz",
                                                      FMNIST_DIR "/train-labels-idx1-ubyte.gz", &error);
  gint64 t1 = g_get_monotonic_time();
  g_assert_no_error(error);
  g_test_message("Fashion-MNIST train (gz) loaded in %.3f s", (t1 - t0) / 1e6);
  g_assert_cmpstr(ds->name, ==, "train-images-idx3-ubyte.gz");
  g_assert_null(ds->class_names);
  static const gint32 labels[10] = {9, 0, 0, 3, 0, 2, 7, 2, 5, 5};
  static const guint8 row[10] = {0, 0, 0, 193, 228, 218, 213, 198, 180, 212};
  check_fmnist(ds, 60000, labels, row, G_GUINT64_CONSTANT(3431114169), 0.2860405969887955, 0.35302424451492237);
}

static void
test_idx_fmnist_test_raw(Fixture *f, gconstpointer data)
{
  if (!have_fashion_mnist())
    return;
  GError *error = NULL;
  g_autoptr(SieveDataset) gz = sieve_dataset_load_idx(FMNIST_DIR "/t10k-images-idx3-ubyte.gz",
                                                      FMNIST_DIR "/t10k-labels-idx1-ubyte.gz", &error);
  g_assert_no_error(error);
  static const gint32 labels[10] = {9, 2, 1, 1, 6, 1, 4, 6, 5, 7};
  static const guint8 row[10] = {0, 0, 0, 4, 0, 53, 129, 120, 147, 175};
  check_fmnist(gz, 10000, labels, row, 573469082, 0.28684928071228494, 0.35244415324744005);

  /* The same files unpacked load to the same numbers. */
  g_autofree char *images = gunzip_to(FMNIST_DIR "/t10k-images-idx3-ubyte.gz", f->dir, "t10k-images-idx3-ubyte");
  g_autofree char *labels_path = gunzip_to(FMNIST_DIR "/t10k-labels-idx1-ubyte.gz", f->dir, "t10k-labels-idx1-ubyte");
  g_autoptr(SieveDataset) raw = sieve_dataset_load_idx(images, labels_path, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(raw->n, ==, gz->n);
  g_assert_cmpmem(raw->x, (gsize) raw->n * 784 * sizeof(float), gz->x, (gsize) gz->n * 784 * sizeof(float));
  g_assert_cmpmem(raw->y, raw->n * sizeof(gint32), gz->y, gz->n * sizeof(gint32));

  /* By name: the default folder, and a given folder holding the raw files. */
  g_autoptr(SieveDataset) named = sieve_dataset_open("fashion-mnist", NULL, "test", &error);
  g_assert_no_error(error);
  g_assert_cmpstr(named->name, ==, "fashion-mnist/test");
  g_assert_cmpuint(g_strv_length(named->class_names), ==, 10);
  g_assert_cmpstr(named->class_names[9], ==, "Ankle boot");
  g_assert_cmpmem(named->y, named->n * sizeof(gint32), gz->y, gz->n * sizeof(gint32));
  g_autoptr(SieveDataset) in_dir = sieve_dataset_open("fashion-mnist", f->dir, "test", &error);
  g_assert_no_error(error);
  g_assert_cmpmem(in_dir->x, (gsize) in_dir->n * 784 * sizeof(float), gz->x, (gsize) gz->n * 784 * sizeof(float));
  /* The given folder has no train files: the error says which names it looked for. */
  assert_error(sieve_dataset_open("fashion-mnist", f->dir, "train", &error), &error, SIEVE_ERROR_NOT_FOUND,
               f->dir, "train-images-idx3-ubyte.gz", NULL);
  g_clear_error(&error);
}

/* ---- IDX: small and damaged files -------------------------------------- */

static void
test_idx_small(Fixture *f, gconstpointer data)
{
  GError *error = NULL;
  g_autofree char *images = write_idx(f->dir, "img", 0x803, small_idims, 3, small_pixels, 18);
  g_autofree char *labels = write_idx(f->dir, "lab", 0x801, small_ldims, 1, small_labels, 3);
  g_autoptr(SieveDataset) ds = sieve_dataset_load_idx(images, labels, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(ds->n, ==, 3);
  g_assert_cmpuint(ds->height, ==, 2);
  g_assert_cmpuint(ds->width, ==, 3);
  for (guint i = 0; i < 18; i++)
    g_assert_cmpfloat(ds->x[i], ==, small_pixels[i] / 255.0f);
  for (guint i = 0; i < 3; i++)
    g_assert_cmpint(ds->y[i], ==, small_labels[i]);

  /* Gzipped (several members one after another, as `cat a.gz b.gz` makes). */
  g_autoptr(GByteArray) raw = make_idx(0x803, small_idims, 3, small_pixels, 18);
  g_autoptr(GBytes) part1 = gzip_bytes(raw->data, 10);
  g_autoptr(GBytes) part2 = gzip_bytes(raw->data + 10, raw->len - 10);
  g_autoptr(GByteArray) both = g_byte_array_new();
  g_byte_array_append(both, g_bytes_get_data(part1, NULL), g_bytes_get_size(part1));
  g_byte_array_append(both, g_bytes_get_data(part2, NULL), g_bytes_get_size(part2));
  g_autofree char *gz = write_file(f->dir, "img.gz", both->data, both->len);
  g_autoptr(SieveDataset) from_gz = sieve_dataset_load_idx(gz, labels, &error);
  g_assert_no_error(error);
  g_assert_cmpmem(from_gz->x, 18 * sizeof(float), ds->x, 18 * sizeof(float));

  /* Other class counts: labels up to 9 need 10 classes; 0 = infer. */
  g_autoptr(SieveDataset) inferred = sieve_dataset_load_idx_classes(images, labels, 0, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(inferred->n_classes, ==, 10);
  assert_error(sieve_dataset_load_idx_classes(images, labels, 9, &error), &error, SIEVE_ERROR_PARSE, labels,
               "label 9 of example 2 is out of range 0..8", NULL);
  g_clear_error(&error);
}

static void
test_idx_errors(Fixture *f, gconstpointer data)
{
  GError *error = NULL;
  g_autofree char *images = write_idx(f->dir, "img", 0x803, small_idims, 3, small_pixels, 18);
  g_autofree char *labels = write_idx(f->dir, "lab", 0x801, small_ldims, 1, small_labels, 3);

  /* Missing file; a directory. */
  g_autofree char *missing = g_build_filename(f->dir, "nope-images.gz", NULL);
  assert_error(sieve_dataset_load_idx(missing, labels, &error), &error, SIEVE_ERROR_NOT_FOUND, missing,
               "cannot open", NULL);
  g_clear_error(&error);
  assert_error(sieve_dataset_load_idx(images, f->dir, &error), &error, SIEVE_ERROR_IO, f->dir, "directory", NULL);
  g_clear_error(&error);

  /* Bad magic: labels given as images, and something that is not IDX at all. */
  assert_error(sieve_dataset_load_idx(labels, images, &error), &error, SIEVE_ERROR_PARSE, labels,
               "bad magic number 0x00000801, expected 0x00000803", NULL);
  g_clear_error(&error);
  g_autofree char *text = write_text(f->dir, "text", "hello, this is not IDX");
  assert_error(sieve_dataset_load_idx(images, text, &error), &error, SIEVE_ERROR_PARSE, text, "bad magic number",
               "0x00000801", NULL);
  g_clear_error(&error);
  g_autofree char *tiny = write_file(f->dir, "tiny", "\0\0", 2);
  assert_error(sieve_dataset_load_idx(tiny, labels, &error), &error, SIEVE_ERROR_PARSE, tiny, "truncated", NULL);
  g_clear_error(&error);

  /* Truncated: in the header, in the pixels; and bytes beyond what the header says. */
  g_autoptr(GByteArray) good = make_idx(0x803, small_idims, 3, small_pixels, 18);
  g_autofree char *cut_header = write_file(f->dir, "cut-header", good->data, 10);
  assert_error(sieve_dataset_load_idx(cut_header, labels, &error), &error, SIEVE_ERROR_PARSE, cut_header,
               "truncated: the IDX header needs 16 bytes, the file has 10", NULL);
  g_clear_error(&error);
  g_autofree char *cut = write_file(f->dir, "cut", good->data, good->len - 5);
  assert_error(sieve_dataset_load_idx(cut, labels, &error), &error, SIEVE_ERROR_PARSE, cut,
               "truncated: the header announces 3 images (18 bytes of values) but only 13 bytes follow", NULL);
  g_clear_error(&error);
  g_byte_array_append(good, (const guint8 *) "xy", 2);
  g_autofree char *longer = write_file(f->dir, "longer", good->data, good->len);
  assert_error(sieve_dataset_load_idx(longer, labels, &error), &error, SIEVE_ERROR_PARSE, longer,
               "2 bytes more than the 3 images", NULL);
  g_clear_error(&error);

  /* Count mismatch: both files named. */
  static const guint32 two[1] = {2};
  g_autofree char *labels2 = write_idx(f->dir, "lab2", 0x801, two, 1, small_labels, 2);
  assert_error(sieve_dataset_load_idx(images, labels2, &error), &error, SIEVE_ERROR_PARSE, images, labels2,
               "count mismatch: 3 images but", "has 2 labels", NULL);
  g_clear_error(&error);

  /* Label out of range for the MNIST family's 10 classes. */
  static const guint8 bad_labels[3] = {1, 10, 2};
  g_autofree char *labels_bad = write_idx(f->dir, "lab-bad", 0x801, small_ldims, 1, bad_labels, 3);
  assert_error(sieve_dataset_load_idx(images, labels_bad, &error), &error, SIEVE_ERROR_PARSE, labels_bad,
               "label 10 of example 1 is out of range 0..9", NULL);
  g_clear_error(&error);

  /* Gzip damage: cut short, and a flipped byte inside (CRC or inflate error). */
  g_autoptr(GBytes) packed = gzip_bytes(small_pixels, sizeof small_pixels);
  const guint8 *pk = g_bytes_get_data(packed, NULL);
  gsize pk_len = g_bytes_get_size(packed);
  g_autofree char *gz_cut = write_file(f->dir, "cut.gz", pk, pk_len - 6);
  assert_error(sieve_dataset_load_idx(gz_cut, labels, &error), &error, SIEVE_ERROR_PARSE, gz_cut,
               "truncated gzip data", NULL);
  g_clear_error(&error);
  g_autofree guint8 *flipped = g_memdup2(pk, pk_len);
  flipped[pk_len - 7] ^= 0xff; /* the last byte of the CRC-32 */
  g_autofree char *gz_bad = write_file(f->dir, "bad.gz", flipped, pk_len);
  assert_error(sieve_dataset_load_idx(gz_bad, labels, &error), &error, SIEVE_ERROR_PARSE, gz_bad,
               "corrupt gzip data", NULL);
  g_clear_error(&error);
}

/* ---- CIFAR ------------------------------------------------------------- */

/* The byte of record r's pixel (c, h, w): distinct enough to catch a wrong plane order. */
static guint8
cifar_byte(guint r, guint c, guint h, guint w)
{
  return (guint8) (r * 37 + c * 101 + h * 7 + w * 3);
}

/* n records starting at record number first; labels label_of(r). */
static GByteArray *
make_cifar(guint first, guint n, guint n_classes)
{
  GByteArray *a = g_byte_array_new();
  for (guint r = first; r < first + n; r++) {
    if (n_classes == 100) {
      guint8 coarse = (guint8) (r % 20), fine = (guint8) ((r * 13) % 100);
      g_byte_array_append(a, &coarse, 1);
      g_byte_array_append(a, &fine, 1);
    } else {
      guint8 label = (guint8) ((r * 3) % 10);
      g_byte_array_append(a, &label, 1);
    }
    for (guint c = 0; c < 3; c++) /* R, G, B planes, each row by row */
      for (guint h = 0; h < 32; h++)
        for (guint w = 0; w < 32; w++) {
          guint8 b = cifar_byte(r, c, h, w);
          g_byte_array_append(a, &b, 1);
        }
  }
  return a;
}

static void
check_cifar(const SieveDataset *ds, guint n, guint n_classes)
{
  g_assert_cmpuint(ds->n, ==, n);
  g_assert_cmpuint(ds->channels, ==, 3);
  g_assert_cmpuint(ds->height, ==, 32);
  g_assert_cmpuint(ds->width, ==, 32);
  g_assert_cmpuint(ds->n_classes, ==, n_classes);
  for (guint r = 0; r < n; r++) {
    g_assert_cmpint(ds->y[r], ==, n_classes == 100 ? (gint32) ((r * 13) % 100) : (gint32) ((r * 3) % 10));
    for (guint c = 0; c < 3; c++)
      for (guint h = 0; h < 32; h++)
        for (guint w = 0; w < 32; w++)
          g_assert_cmpfloat(ds->x[((r * 3 + c) * 32 + h) * 32 + w], ==, cifar_byte(r, c, h, w) / 255.0f);
  }
}

static void
test_cifar10(Fixture *f, gconstpointer data)
{
  GError *error = NULL;
  g_autoptr(GByteArray) a = make_cifar(0, 3, 10);
  g_autoptr(GByteArray) b = make_cifar(3, 4, 10);
  g_autofree char *pa = write_file(f->dir, "a.bin", a->data, a->len);
  g_autofree char *pb = write_file(f->dir, "b.bin", b->data, b->len);
  const char *paths[] = {pa, pb};
  g_autoptr(SieveDataset) ds = sieve_dataset_load_cifar(paths, 2, 10, &error);
  g_assert_no_error(error);
  check_cifar(ds, 7, 10); /* file a's records, then b's */

  /* Truncated record: a byte short. */
  g_autofree char *cut = write_file(f->dir, "cut.bin", a->data, a->len - 1);
  const char *cut_paths[] = {pa, cut};
  assert_error(sieve_dataset_load_cifar(cut_paths, 2, 10, &error), &error, SIEVE_ERROR_PARSE, cut,
               "truncated record: 9218 bytes is 2 whole CIFAR-10 records of 3073 bytes and 3072 bytes over", NULL);
  g_clear_error(&error);
  /* CIFAR-100 records (3074 bytes) read as CIFAR-10 do not divide either. */
  g_autoptr(GByteArray) hundred = make_cifar(0, 1, 100);
  g_autofree char *p100 = write_file(f->dir, "100.bin", hundred->data, hundred->len);
  assert_error(sieve_dataset_load_cifar((const char *[]) {p100}, 1, 10, &error), &error, SIEVE_ERROR_PARSE, p100,
               "truncated record", NULL);
  g_clear_error(&error);
  /* Label 10 in CIFAR-10. */
  a->data[3073] = 10;
  g_autofree char *bad = write_file(f->dir, "bad.bin", a->data, a->len);
  assert_error(sieve_dataset_load_cifar((const char *[]) {bad}, 1, 10, &error), &error, SIEVE_ERROR_PARSE, bad,
               "label 10 of record 1 is out of range 0..9", NULL);
  g_clear_error(&error);
  /* Missing and empty files. */
  g_autofree char *missing = g_build_filename(f->dir, "data_batch_9.bin", NULL);
  assert_error(sieve_dataset_load_cifar((const char *[]) {pa, missing}, 2, 10, &error), &error,
               SIEVE_ERROR_NOT_FOUND, missing, "No such file", NULL);
  g_clear_error(&error);
  g_autofree char *empty = write_file(f->dir, "empty.bin", "", 0);
  assert_error(sieve_dataset_load_cifar((const char *[]) {empty}, 1, 10, &error), &error, SIEVE_ERROR_PARSE, empty,
               "empty file", NULL);
  g_clear_error(&error);
}

static void
test_cifar100(Fixture *f, gconstpointer data)
{
  GError *error = NULL;
  g_autoptr(GByteArray) a = make_cifar(0, 9, 100);
  g_autofree char *pa = write_file(f->dir, "train.bin", a->data, a->len);
  g_autoptr(SieveDataset) ds = sieve_dataset_load_cifar((const char *[]) {pa}, 1, 100, &error);
  g_assert_no_error(error);
  check_cifar(ds, 9, 100); /* the fine label, not the coarse one */
  g_autofree char *cut = write_file(f->dir, "cut.bin", a->data, 3074 + 100);
  assert_error(sieve_dataset_load_cifar((const char *[]) {cut}, 1, 100, &error), &error, SIEVE_ERROR_PARSE, cut,
               "truncated record", "CIFAR-100 records of 3074 bytes", NULL);
  g_clear_error(&error);
}

static void
test_cifar_open(Fixture *f, gconstpointer data)
{
  GError *error = NULL;
  /* The archive's layout: ROOT/cifar-10-batches-bin/{data_batch_1..5,test_batch}.bin, batches.meta.txt. */
  g_autofree char *folder = g_build_filename(f->dir, "cifar-10-batches-bin", NULL);
  g_mkdir(folder, 0700);
  for (guint k = 1; k <= 5; k++) {
    g_autoptr(GByteArray) a = make_cifar((k - 1) * 2, 2, 10);
    g_autofree char *name = g_strdup_printf("data_batch_%u.bin", k);
    g_free(write_file(folder, name, a->data, a->len));
  }
  g_autoptr(GByteArray) t = make_cifar(0, 3, 10);
  g_free(write_file(folder, "test_batch.bin", t->data, t->len));
  g_free(write_text(folder, "batches.meta.txt",
                    "airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n\n"));
  g_autoptr(SieveDataset) train = sieve_dataset_open("cifar10", f->dir, "train", &error);
  g_assert_no_error(error);
  check_cifar(train, 10, 10); /* batches 1..5 in order */
  g_assert_cmpstr(train->name, ==, "cifar10/train");
  g_assert_cmpstr(train->class_names[9], ==, "truck");
  g_autoptr(SieveDataset) test = sieve_dataset_open("cifar10", folder, "test", &error); /* the folder itself */
  g_assert_no_error(error);
  check_cifar(test, 3, 10);
  g_autofree char *b3 = g_build_filename(folder, "data_batch_3.bin", NULL);
  g_unlink(b3);
  assert_error(sieve_dataset_open("cifar10", f->dir, "train", &error), &error, SIEVE_ERROR_NOT_FOUND, b3, NULL);
  g_clear_error(&error);

  /* CIFAR-100: ROOT/cifar-100-binary/{train,test}.bin, found through $SIEVE_DATA_DIR/cifar100. */
  g_autofree char *root100 = g_build_filename(f->dir, "cifar100", "cifar-100-binary", NULL);
  g_mkdir_with_parents(root100, 0700);
  g_autoptr(GByteArray) h = make_cifar(0, 4, 100);
  g_free(write_file(root100, "test.bin", h->data, h->len));
  g_setenv("SIEVE_DATA_DIR", f->dir, TRUE);
  g_autoptr(SieveDataset) t100 = sieve_dataset_open("cifar100", NULL, "test", &error);
  g_unsetenv("SIEVE_DATA_DIR");
  g_assert_no_error(error);
  check_cifar(t100, 4, 100);
  g_assert_null(t100->class_names); /* no fine_label_names.txt */
}

/* ---- CSV --------------------------------------------------------------- */

static void
test_csv_strings(Fixture *f, gconstpointer data)
{
  GError *error = NULL;
  /* A byte-order mark, CRLF, blank lines, spaces, quotes, and string labels. */
  g_autofree char *path = write_text(f->dir, "iris.csv",
                                     "\xEF\xBB\xBF" "sepal length, \"width, cm\" ,species\r\n"
                                     "5.1,3.5,setosa\r\n"
                                     "\r\n"
                                     "  6.4 , 3.2 , \"versi\"\"color\"\r\n"
                                     "5.0,-3e-1,setosa\n"
                                     "\n"
                                     "6.3,\"2.5\",virginica");
  g_autoptr(SieveDataset) ds = sieve_dataset_load_csv(path, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(ds->name, ==, "iris.csv");
  g_assert_cmpuint(ds->n, ==, 4);
  g_assert_cmpuint(ds->channels, ==, 2);
  g_assert_cmpuint(ds->height, ==, 1);
  g_assert_cmpuint(ds->width, ==, 1);
  g_assert_cmpuint(ds->n_classes, ==, 3);
  static const float x[8] = {5.1f, 3.5f, 6.4f, 3.2f, 5.0f, -0.3f, 6.3f, 2.5f};
  for (guint i = 0; i < 8; i++)
    g_assert_cmpfloat(ds->x[i], ==, x[i]);
  static const gint32 y[4] = {0, 1, 0, 2}; /* in order of first appearance */
  for (guint i = 0; i < 4; i++)
    g_assert_cmpint(ds->y[i], ==, y[i]);
  g_assert_cmpuint(g_strv_length(ds->class_names), ==, 3);
  g_assert_cmpstr(ds->class_names[0], ==, "setosa");
  g_assert_cmpstr(ds->class_names[1], ==, "versi\"color");
  g_assert_cmpstr(ds->class_names[2], ==, "virginica");

  /* The label by name, in the middle: features keep the other columns in order. */
  g_autofree char *mid = write_text(f->dir, "mid.csv", "x1,cls,x2\n1,b,2\n3,a,4\n5,b,6\n");
  g_autoptr(SieveDataset) by_name = sieve_dataset_load_csv(mid, "cls", &error);
  g_assert_no_error(error);
  g_assert_cmpuint(by_name->channels, ==, 2);
  g_assert_cmpuint(by_name->n_classes, ==, 2);
  static const float mid_x[6] = {1, 2, 3, 4, 5, 6};
  for (guint i = 0; i < 6; i++)
    g_assert_cmpfloat(by_name->x[i], ==, mid_x[i]);
  g_assert_cmpint(by_name->y[0], ==, 0);
  g_assert_cmpint(by_name->y[1], ==, 1);
  g_assert_cmpint(by_name->y[2], ==, 0);
  g_assert_cmpstr(by_name->class_names[0], ==, "b");
  g_assert_null(by_name->class_names[2]);
  /* The last column by default: here cls is a feature, and not a number. */
  assert_error(sieve_dataset_load_csv(mid, NULL, &error), &error, SIEVE_ERROR_PARSE, ":2:3: ",
               "expected a number in column 'cls', found 'b'", NULL);
  g_clear_error(&error);

  /* Through sieve_dataset_open, relative to a folder. */
  g_autoptr(SieveDataset) named = sieve_dataset_open("csv:iris.csv", f->dir, "train", &error);
  g_assert_no_error(error);
  g_assert_cmpstr(named->name, ==, "csv:iris.csv/train");
  g_assert_cmpuint(named->n, ==, 4);
  assert_error(sieve_dataset_open("csv:iris.csv", f->dir, "test", &error), &error, SIEVE_ERROR_NOT_FOUND,
               "has no test split: a CSV file is one set of examples", NULL);
  g_clear_error(&error);
}

static void check_csv_error(Fixture *f, const char *text, const char *label, const char *where, const char *what);

static void
test_csv_int_labels(Fixture *f, gconstpointer data)
{
  GError *error = NULL;
  /* Integer labels are the class ids, whatever order they come in. */
  g_autofree char *path = write_text(f->dir, "ints.csv", "a,b,label\n1,2,2\n3,4,0\n5,6,5\n7,8,2\n");
  g_autoptr(SieveDataset) ds = sieve_dataset_load_csv(path, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(ds->n_classes, ==, 6);
  g_assert_null(ds->class_names);
  static const gint32 y[4] = {2, 0, 5, 2};
  for (guint i = 0; i < 4; i++)
    g_assert_cmpint(ds->y[i], ==, y[i]);
  /* The label first, by name. */
  g_autofree char *first = write_text(f->dir, "first.csv", "label,a\n1,0.5\n0,0.25\n");
  g_autoptr(SieveDataset) lf = sieve_dataset_load_csv(first, "label", &error);
  g_assert_no_error(error);
  g_assert_cmpuint(lf->channels, ==, 1);
  g_assert_cmpfloat(lf->x[1], ==, 0.25f);
  g_assert_cmpint(lf->y[0], ==, 1);
  /* A number that is no class id, or numbers and names mixed, is an error
   * at its row and column: once they were all mapped as names by first
   * appearance, and "1" was no longer class 1. */
  check_csv_error(f, "a,label\n1,0\n2,0.5\n", NULL, ":3:3: ",
                  "label '0.5' in column 'label' is a number but not a class id: numeric labels are integers from "
                  "-65535 to 65535");
  check_csv_error(f, "a,label\n1,70000\n", NULL, ":2:3: ", "label '70000' in column 'label' is a number");
  check_csv_error(f, "a,label\n1,1e-400\n", NULL, ":2:3: ", "label '1e-400' in column 'label' is a number");
  check_csv_error(f, "a,label\n1,2\n2,cat\n", NULL, ":3:3: ",
                  "label 'cat' in column 'label' is a class name, but label '2' before it is a number: the labels "
                  "of a file are all numbers (class ids) or all class names");
  check_csv_error(f, "a,label\n1,cat\n2,3\n", NULL, ":3:3: ", "label '3' in column 'label' is a number");
  /* pandas' names of an unnamed frame's columns are a header. */
  g_autofree char *unnamed = write_text(f->dir, "unnamed.csv", "0,1,2\n0.5,1,0\n2,3,1\n");
  g_autoptr(SieveDataset) lu = sieve_dataset_load_csv(unnamed, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(lu->n, ==, 2);
  /* Integral numbers however written are the ids (pandas writes 1.0). */
  g_autofree char *dec = write_text(f->dir, "dec.csv", "a,label\n1,1.0\n2,+2\n3,-0\n4,2\n");
  g_autoptr(SieveDataset) ld = sieve_dataset_load_csv(dec, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(ld->n_classes, ==, 3);
  g_assert_null(ld->class_names);
  static const gint32 yd[4] = {1, 2, 0, 2};
  for (guint i = 0; i < 4; i++)
    g_assert_cmpint(ld->y[i], ==, yd[i]);
  /* Negative ones (SVM-light's -1/+1): classes in order of value, named. */
  g_autofree char *svm = write_text(f->dir, "svm.csv", "a,label\n1,+1\n2,-1\n3,1\n4,-3\n");
  g_autoptr(SieveDataset) ls = sieve_dataset_load_csv(svm, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(ls->n_classes, ==, 3);
  static const gint32 ys[4] = {2, 1, 2, 0};
  for (guint i = 0; i < 4; i++)
    g_assert_cmpint(ls->y[i], ==, ys[i]);
  g_assert_cmpstr(ls->class_names[0], ==, "-3");
  g_assert_cmpstr(ls->class_names[2], ==, "+1");
  /* Names that start like numbers but are not, and 'nan', stay names. */
  g_autofree char *names = write_text(f->dir, "names.csv", "a,label\n1,nan\n2,1st\n3,-x\n4,nan\n5,0x1F\n");
  g_autoptr(SieveDataset) ln = sieve_dataset_load_csv(names, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(ln->n_classes, ==, 4);
  g_assert_cmpint(ln->y[3], ==, 0);
  g_assert_cmpstr(ln->class_names[1], ==, "1st");
}

static void
check_csv_error(Fixture *f, const char *text, const char *label, const char *where, const char *what)
{
  GError *error = NULL;
  g_autofree char *path = write_text(f->dir, "bad.csv", text);
  g_autofree char *location = g_strdup_printf("%s%s", path, where);
  assert_error(sieve_dataset_load_csv(path, label, &error), &error, SIEVE_ERROR_PARSE, location, what, NULL);
  g_clear_error(&error);
}

static void
test_csv_errors(Fixture *f, gconstpointer data)
{
  check_csv_error(f, "a,b,y\n1,2,0\n1,x2,1\n", NULL, ":3:3: ", "expected a number in column 'b', found 'x2'");
  check_csv_error(f, "a,b,y\n1,2,0\n\n 1, 2e, 1\n", NULL, ":4:5: ", "expected a number in column 'b', found '2e'");
  check_csv_error(f, "a,b,y\n1,,0\n", NULL, ":2:3: ", "empty value in column 'b'");
  check_csv_error(f, "a,b,y\n1,inf,0\n", NULL, ":2:3: ", "'inf' in column 'b' is not a finite float");
  check_csv_error(f, "a,b,y\n1,1e39,0\n", NULL, ":2:3: ", "is not a finite float");
  check_csv_error(f, "a,b,y\n1,2\n", NULL, ":2:4: ", "expected 3 fields as in the header (line 1), found 2");
  check_csv_error(f, "a,b,y\n1,2,3,4\n", NULL, ":2:7: ", "found 4");
  check_csv_error(f, "a,b,y\n1,2,\n", NULL, ":2:5: ", "empty label in column 'y'");
  check_csv_error(f, "a,b,y\n1,\"2,0\n", NULL, ":2:3: ", "unterminated quoted field");
  check_csv_error(f, "a,b,y\n1,\"2\"x,0\n", NULL, ":2:6: ", "expected a comma after the closing quote");
  check_csv_error(f, "a,b,y\n1,2,0\n", "z", ":1:1: ", "no column named 'z' for the label; the header has: a, b, y");
  check_csv_error(f, "a,y,y\n1,2,0\n", "y", ":1:5: ", "label column 'y' appears twice in the header (columns 2 and 3)");
  check_csv_error(f, "y\n1\n", NULL, ":1:1: ", "the header has 1 column");
  check_csv_error(f, "a,b,y\n", NULL, ": ", "no data rows after the header");
  /* No header: the first example would be read as names and lost. */
  check_csv_error(f, "0.5,-1,2\n1,2,0\n", NULL, ":1:1: ", "every field of it is a number: the file seems to have "
                                                          "no header");
  check_csv_error(f, "1,2,3\n1,2,0\n", NULL, ":1:1: ", "seems to have no header");
  check_csv_error(f, "\n \n", NULL, ": ", "empty file, expected a header row");
  GError *error = NULL;
  g_autofree char *missing = g_build_filename(f->dir, "missing.csv", NULL);
  assert_error(sieve_dataset_load_csv(missing, NULL, &error), &error, SIEVE_ERROR_NOT_FOUND, missing, NULL);
  g_clear_error(&error);
}

/* ---- the CSV reader (sieve/csv.h) ---------------------------------------- */

/* Every record of text as "line|field|field..." lines, fields in [brackets]
 * so that spaces and line breaks show; *error set when the reader stopped
 * on one. (transfer full) */
static char *
csv_records(const char *text, gssize length, GError **error)
{
  g_autoptr(SieveCsvReader) csv = sieve_csv_reader_new_from_data("mem.csv", text, length);
  GString *out = g_string_new(NULL);
  while (sieve_csv_reader_next(csv, error)) {
    g_string_append_printf(out, "%u", sieve_csv_reader_get_line(csv));
    for (guint i = 0; i < sieve_csv_reader_n_fields(csv); i++) {
      gsize n = 0;
      const char *s = sieve_csv_reader_field(csv, i, &n);
      g_assert_cmpuint(n, ==, strlen(s));
      g_string_append_printf(out, "|[%s]", s);
    }
    g_string_append_c(out, '\n');
  }
  /* The end, or an error, is for good. */
  g_assert_false(sieve_csv_reader_next(csv, NULL));
  g_assert_cmpuint(sieve_csv_reader_n_fields(csv), ==, 0);
  return g_string_free(out, FALSE);
}

static void
check_csv_records(const char *text, const char *expected)
{
  GError *error = NULL;
  g_autofree char *got = csv_records(text, -1, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(got, ==, expected);
}

static void
test_csv_reader_records(void)
{
  /* Quoted fields hold commas, "" escapes and line breaks (LF or CRLF, kept
   * as written); a record's line is where it starts. */
  check_csv_records("key,note\n"
                    "\"a,b\",\"say \"\"hi\"\"\"\n"
                    "\"two\nlines\",\"crlf\r\ninside\"\r\n"
                    "x,\"\"\n",
                    "1|[key]|[note]\n"
                    "2|[a,b]|[say \"hi\"]\n"
                    "3|[two\nlines]|[crlf\r\ninside]\n"
                    "6|[x]|[]\n");
  /* CRLF line ends, and a last record with or without a line end. */
  check_csv_records("a,b\r\n1,2\r\n3,4", "1|[a]|[b]\n2|[1]|[2]\n3|[3]|[4]\n");
  check_csv_records("a,b\r\n1,2\r\n3,4\r\n", "1|[a]|[b]\n2|[1]|[2]\n3|[3]|[4]\n");
  check_csv_records("a,b\n1,\"2\"", "1|[a]|[b]\n2|[1]|[2]\n");
  check_csv_records("a,b\n1,", "1|[a]|[b]\n2|[1]|[]\n");
  /* Spaces and tabs around a field are not part of it; inside quotes they
   * are.  Lines of blanks are no records but count for line numbers. */
  check_csv_records("\xEF\xBB\xBF a ,\tb\t\n\n  \r\n 1 ,\" 2 \" \n\t\n",
                    "1|[a]|[b]\n4|[1]|[ 2 ]\n");
  /* Empty fields, and a one-column file. */
  check_csv_records("a,b,c\n,,\n", "1|[a]|[b]|[c]\n2|[]|[]|[]\n");
  check_csv_records("only\nx\n\ny\n", "1|[only]\n2|[x]\n4|[y]\n");
  /* Nothing at all is no record and no error. */
  check_csv_records("", "");
  check_csv_records("\n \r\n", "");
  /* Text with a length: only that many bytes. */
  GError *error = NULL;
  g_autofree char *cut = csv_records("a\nb\nc", 3, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(cut, ==, "1|[a]\n2|[b]\n");

  /* Positions for the caller's own errors: the field's first character, a
   * quoted field's opening quote, on the line where the field starts. */
  g_autoptr(SieveCsvReader) csv = sieve_csv_reader_new_from_data("pos.csv", "a,b,c\n 1, \"x\ny\",  z\n", -1);
  g_assert_true(sieve_csv_reader_next(csv, &error));
  g_assert_true(sieve_csv_reader_next(csv, &error));
  g_assert_no_error(error);
  static const char *const where[] = {"pos.csv:2:2: 0", "pos.csv:2:5: 1", "pos.csv:3:6: 2"};
  for (guint i = 0; i < 3; i++) {
    sieve_csv_reader_set_error(csv, i, &error, "%u", i);
    g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE);
    g_assert_cmpstr(error->message, ==, where[i]);
    g_clear_error(&error);
  }
  g_assert_false(sieve_csv_reader_next(csv, &error));
  g_assert_no_error(error);
}

static void
check_csv_reader_error(const char *text, const char *message, const char *records_before)
{
  GError *error = NULL;
  g_autofree char *got = csv_records(text, -1, &error);
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE);
  g_assert_cmpstr(error->message, ==, message);
  g_assert_cmpstr(got, ==, records_before);
  g_clear_error(&error);
}

/* Lines ended by CR alone are lines; UTF-16 and UTF-32 files are named
 * by their byte-order mark, not read as one odd header. */
static void
test_csv_reader_encodings(void)
{
  check_csv_records("a,b\r1,2\r\r3,\"x\ry\"\r", "1|[a]|[b]\n2|[1]|[2]\n4|[3]|[x\ny]\n");
  static const struct {
    const char *bytes;
    gsize n;
    const char *name;
  } marks[] = {{"\xFF\xFE" "a\0,\0b\0\n\0", 10, "UTF-16LE"},
               {"\xFE\xFF\0a\0,\0b\0\n", 10, "UTF-16BE"},
               {"\xFF\xFE\0\0" "a\0\0\0", 8, "UTF-32LE"}};
  for (guint i = 0; i < G_N_ELEMENTS(marks); i++) {
    GError *error = NULL;
    g_autofree char *got = csv_records(marks[i].bytes, (gssize) marks[i].n, &error);
    g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE);
    g_autofree char *want = g_strdup_printf("mem.csv:1:1: the file is %s text (its byte-order mark says so); sieve "
                                            "reads CSV as UTF-8: convert it, e.g. iconv -f %s -t UTF-8",
                                            marks[i].name, marks[i].name);
    g_assert_cmpstr(error->message, ==, want);
    g_assert_cmpstr(got, ==, "");
    g_clear_error(&error);
  }
}

static void
test_csv_reader_errors(void)
{
  /* An unterminated quote names where it opened, however far the file goes on. */
  check_csv_reader_error("a,b\n1,\"2,3\n4,5\n6\n",
                         "mem.csv:2:3: unterminated quoted field: the quote opened here is not closed before the end "
                         "of the file, expected a closing '\"' (a '\"' inside quotes is written \"\")",
                         "1|[a]|[b]\n");
  check_csv_reader_error("\"a", "mem.csv:1:1: unterminated quoted field: the quote opened here is not closed before "
                         "the end of the file, expected a closing '\"' (a '\"' inside quotes is written \"\")", "");
  /* Ragged rows: too few fields point where the next should be, too many at
   * the first extra one; both name the header's count and line. */
  check_csv_reader_error("\na,b,c\n1,2,3\n1,2\n",
                         "mem.csv:4:4: expected 3 fields as in the header (line 2), found 2", "2|[a]|[b]|[c]\n3|[1]|[2]|[3]\n");
  check_csv_reader_error("a,b\n1,2,3,4",
                         "mem.csv:2:5: expected 2 fields as in the header (line 1), found 4", "1|[a]|[b]\n");
  check_csv_reader_error("a,b\r\n1 \r\n",
                         "mem.csv:2:4: expected 2 fields as in the header (line 1), found 1", "1|[a]|[b]\n");
  /* A record over several lines: the error's line is where the fault is,
   * and the record's first line is named. */
  check_csv_reader_error("a,b,c\n1,\"x\ny\",3,4\n",
                         "mem.csv:3:6: expected 3 fields as in the header (line 1), found 4 in the record that "
                         "starts on line 2",
                         "1|[a]|[b]|[c]\n");
  /* Quotes out of place. */
  check_csv_reader_error("a,b\n1,\"2\"x\n",
                         "mem.csv:2:6: expected a comma after the closing quote or the end of the line, found 'x' "
                         "(a '\"' inside quotes is written \"\")",
                         "1|[a]|[b]\n");
  check_csv_reader_error("a,b\n1,2\"5\n",
                         "mem.csv:2:4: '\"' inside an unquoted field, expected the whole field in quotes with each "
                         "'\"' in it written \"\" (\"a \"\"b\"\"\")",
                         "1|[a]|[b]\n");
}

static void
test_csv_reader_file(Fixture *f, gconstpointer data)
{
  /* From a file, gzipped or not: the same records; errors name the file. */
  const char *text = "name,value\r\n\"x, y\",1\r\n";
  g_autofree char *plain = write_text(f->dir, "t.csv", text);
  g_autoptr(GBytes) gz = gzip_bytes(text, strlen(text));
  g_autofree char *zipped = write_file(f->dir, "t.csv.gz", g_bytes_get_data(gz, NULL), g_bytes_get_size(gz));
  const char *paths[] = {plain, zipped};
  GError *error = NULL;
  for (guint k = 0; k < 2; k++) {
    g_autoptr(SieveCsvReader) csv = sieve_csv_reader_new(paths[k], &error);
    g_assert_no_error(error);
    g_assert_cmpuint(sieve_csv_reader_n_fields(csv), ==, 0);
    g_assert_true(sieve_csv_reader_next(csv, &error));
    g_assert_true(sieve_csv_reader_next(csv, &error));
    g_assert_cmpstr(sieve_csv_reader_field(csv, 0, NULL), ==, "x, y");
    g_assert_cmpstr(sieve_csv_reader_field(csv, 1, NULL), ==, "1");
    sieve_csv_reader_set_error(csv, 1, &error, "not wanted");
    g_autofree char *expected = g_strdup_printf("%s:2:8: not wanted", paths[k]);
    g_assert_cmpstr(error->message, ==, expected);
    g_clear_error(&error);
    g_assert_false(sieve_csv_reader_next(csv, &error));
    g_assert_no_error(error);
  }
  g_autofree char *missing = g_build_filename(f->dir, "missing.csv", NULL);
  assert_error(sieve_csv_reader_new(missing, &error), &error, SIEVE_ERROR_NOT_FOUND, missing, NULL);
  g_clear_error(&error);

  /* The dataset loader reads by the same rules: a quoted label over two lines. */
  g_autofree char *two = write_text(f->dir, "two.csv", "x,label\n1,\"first\nline\"\n2,b\n");
  g_autoptr(SieveDataset) ds = sieve_dataset_load_csv(two, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(ds->n, ==, 2);
  g_assert_cmpstr(ds->class_names[0], ==, "first\nline");
  check_csv_error(f, "a,b,y\n1,2,0\n3,\"4\n5\",1\n", NULL, ":3:3: ", "expected a number in column 'b', found '4\n5'");
}

static void
test_open_errors(void)
{
  GError *error = NULL;
  assert_error(sieve_dataset_open("imagenet", NULL, "train", &error), &error, SIEVE_ERROR_NOT_FOUND,
               "unknown dataset 'imagenet'; known: fashion-mnist, mnist, cifar10, cifar100, csv:<path>", NULL);
  g_clear_error(&error);
  assert_error(sieve_dataset_open("fashion-mnist", NULL, "val", &error), &error, SIEVE_ERROR_NOT_FOUND,
               "unknown split 'val', expected train or test", NULL);
  g_clear_error(&error);
  /* Not in $SIEVE_DATA_DIR nor in /usr/share/datasets: both places named. */
  if (g_file_test("/usr/share/datasets/mnist", G_FILE_TEST_EXISTS))
    return;
  g_setenv("SIEVE_DATA_DIR", "/nonexistent-sieve-data", TRUE);
  assert_error(sieve_dataset_open("mnist", NULL, "train", &error), &error, SIEVE_ERROR_NOT_FOUND,
               "dataset mnist not found", "/nonexistent-sieve-data/mnist", "/usr/share/datasets/mnist", NULL);
  g_clear_error(&error);
  g_unsetenv("SIEVE_DATA_DIR");
}

/* ---- subset, split, statistics ----------------------------------------- */

/* n examples of 2 channels x 1 x 1: x = (i, -i), so an example tells its
 * index; labels in 4 unequal classes. */
static SieveDataset *
make_indexed(guint n)
{
  SieveDataset *ds = sieve_dataset_new(n, 2, 1, 1, 4, "indexed");
  for (guint i = 0; i < n; i++) {
    ds->x[2 * i] = (float) i;
    ds->x[2 * i + 1] = -(float) i;
    ds->y[i] = i % 7 == 0 ? 3 : (gint32) (i % 3); /* class 3 is rarer */
  }
  return ds;
}

static void
test_subset(void)
{
  g_autoptr(SieveDataset) ds = make_indexed(10);
  ds->class_names = g_strsplit("a b c d", " ", -1);
  static const guint idx[4] = {7, 2, 7, 9};
  g_autoptr(SieveDataset) sub = sieve_dataset_subset(ds, idx, 4);
  g_assert_cmpuint(sub->n, ==, 4);
  g_assert_cmpuint(sub->n_classes, ==, 4);
  g_assert_cmpstr(sub->class_names[3], ==, "d");
  for (guint i = 0; i < 4; i++) {
    g_assert_cmpfloat(sub->x[2 * i], ==, (float) idx[i]);
    g_assert_cmpfloat(sub->x[2 * i + 1], ==, -(float) idx[i]);
    g_assert_cmpint(sub->y[i], ==, ds->y[idx[i]]);
  }
  sub->x[0] = 99; /* a copy */
  g_assert_cmpfloat(ds->x[14], ==, 7.0f);
  g_autoptr(SieveDataset) none = sieve_dataset_subset(ds, NULL, 0);
  g_assert_cmpuint(none->n, ==, 0);

  /* A split of a split names its data once, as the train evaluator's
   * validation hold-out then train_limit make it; it read
   * "indexed (split: 7 kept) (split: 3 kept)". */
  g_assert_cmpstr(sub->name, ==, "indexed (4 examples)");
  SieveDataset *kept, *held, *kept2, *held2;
  sieve_dataset_split(ds, 2, 1, &kept, &held);
  sieve_dataset_split(kept, 5, 1, &kept2, &held2);
  g_assert_cmpstr(kept->name, ==, "indexed (8 examples)");
  g_assert_cmpstr(held->name, ==, "indexed (2 held out)");
  g_assert_cmpstr(kept2->name, ==, "indexed (3 examples)");
  g_assert_cmpstr(held2->name, ==, "indexed (5 held out)");
  sieve_dataset_free(kept);
  sieve_dataset_free(held);
  sieve_dataset_free(kept2);
  sieve_dataset_free(held2);

  /* Only sieve's own suffix goes: a folder "x (v2)" kept its "x" alone. */
  g_free(ds->name);
  ds->name = g_strdup("x (v2)");
  g_autoptr(SieveDataset) named = sieve_dataset_subset(ds, idx, 4);
  g_assert_cmpstr(named->name, ==, "x (v2) (4 examples)");
  static const guint first_two[2] = {0, 1};
  g_autoptr(SieveDataset) renamed = sieve_dataset_subset(named, first_two, 2);
  g_assert_cmpstr(renamed->name, ==, "x (v2) (2 examples)");
  sieve_dataset_split(named, 1, 1, &kept, &held);
  g_assert_cmpstr(kept->name, ==, "x (v2) (3 examples)");
  g_assert_cmpstr(held->name, ==, "x (v2) (1 held out)");
  sieve_dataset_free(kept);
  sieve_dataset_free(held);
}

/* Which original examples a part holds, checked to be in increasing order. */
static void
split_members(const SieveDataset *part, guint8 *seen, guint mark)
{
  for (guint i = 0; i < part->n; i++) {
    guint k = (guint) part->x[2 * i];
    g_assert_cmpfloat(part->x[2 * i + 1], ==, -(float) k);
    if (i > 0)
      g_assert_cmpfloat(part->x[2 * (i - 1)], <, part->x[2 * i]);
    g_assert_cmpuint(seen[k], ==, 0);
    seen[k] = (guint8) mark;
  }
}

static void
test_split(void)
{
  const guint n = 103;
  g_autoptr(SieveDataset) ds = make_indexed(n);
  guint class_count[4] = {0};
  for (guint i = 0; i < n; i++)
    class_count[ds->y[i]]++;

  for (guint n_second = 0; n_second <= n; n_second += 17) {
    SieveDataset *a, *b, *a2, *b2, *c, *d;
    sieve_dataset_split(ds, n_second, 7, &a, &b);
    sieve_dataset_split(ds, n_second, 7, &a2, &b2);
    sieve_dataset_split(ds, n_second, 8, &c, &d);
    g_assert_cmpuint(a->n, ==, n - n_second);
    g_assert_cmpuint(b->n, ==, n_second);
    /* Same seed, same parts. */
    g_assert_cmpmem(b->x, b->n * 2 * sizeof(float), b2->x, b2->n * 2 * sizeof(float));
    g_assert_cmpmem(a->x, a->n * 2 * sizeof(float), a2->x, a2->n * 2 * sizeof(float));
    /* Disjoint and complete; labels go with their examples. */
    g_autofree guint8 *seen = g_new0(guint8, n);
    split_members(a, seen, 1);
    split_members(b, seen, 2);
    for (guint i = 0; i < n; i++)
      g_assert_cmpuint(seen[i], !=, 0);
    for (guint i = 0; i < b->n; i++)
      g_assert_cmpint(b->y[i], ==, ds->y[(guint) b->x[2 * i]]);
    /* Stratified: each class within one of its exact share. */
    guint held[4] = {0};
    for (guint i = 0; i < b->n; i++)
      held[b->y[i]]++;
    for (guint k = 0; k < 4; k++)
      g_assert_cmpfloat(fabs(held[k] - (double) n_second * class_count[k] / n), <, 1.0);
    /* Another seed picks other examples (when there is a choice). */
    if (n_second > 0 && n_second < n)
      g_assert_true(memcmp(b->x, d->x, b->n * 2 * sizeof(float)) != 0);
    sieve_dataset_free(a);
    sieve_dataset_free(b);
    sieve_dataset_free(a2);
    sieve_dataset_free(b2);
    sieve_dataset_free(c);
    sieve_dataset_free(d);
  }
}

static void
test_stats_normalize(void)
{
  /* 3 channels of 5x4: channel 0 around 1000 with a small spread (where a
   * one-pass sum of squares in float would fail), 1 uniform, 2 constant. */
  const guint n = 50, plane = 20;
  g_autoptr(SieveDataset) ds = sieve_dataset_new(n, 3, 5, 4, 2, "stats");
  SieveRng rng;
  sieve_rng_seed(&rng, 3);
  for (guint i = 0; i < n; i++)
    for (guint p = 0; p < plane; p++) {
      ds->x[(i * 3 + 0) * plane + p] = (float) (1000.0 + 0.01 * sieve_rng_normal(&rng));
      ds->x[(i * 3 + 1) * plane + p] = (float) sieve_rng_uniform(&rng);
      ds->x[(i * 3 + 2) * plane + p] = 0.5f;
    }
  float mean[3], std[3];
  sieve_dataset_channel_stats(ds, mean, std);
  for (guint c = 0; c < 3; c++) {
    /* The naive definition, in double. */
    double s = 0, ss = 0;
    for (guint i = 0; i < n; i++)
      for (guint p = 0; p < plane; p++)
        s += ds->x[(i * 3 + c) * plane + p];
    double m = s / (n * plane);
    for (guint i = 0; i < n; i++)
      for (guint p = 0; p < plane; p++) {
        double d = ds->x[(i * 3 + c) * plane + p] - m;
        ss += d * d;
      }
    double sd = sqrt(ss / (n * plane));
    g_assert_cmpfloat(fabs(mean[c] - m), <=, 1e-6 * fabs(m));
    g_assert_cmpfloat(fabs(std[c] - sd), <=, 1e-5 * sd);
  }
  g_assert_cmpfloat(std[0], >, 0.008);
  g_assert_cmpfloat(std[0], <, 0.012);
  g_assert_cmpfloat(std[2], ==, 0.0f);

  g_autoptr(SieveDataset) before = sieve_dataset_subset(ds, (const guint[]) {0, 1, 2}, 3);
  sieve_dataset_normalize(ds, mean, std);
  for (guint i = 0; i < 3; i++)
    for (guint c = 0; c < 3; c++)
      for (guint p = 0; p < plane; p++) {
        gsize k = (i * 3 + c) * plane + p;
        float want = c == 2 ? before->x[k] - mean[c] : (before->x[k] - mean[c]) / std[c];
        g_assert_cmpfloat(ds->x[k], ==, want);
      }
  float m2[3], s2[3];
  sieve_dataset_channel_stats(ds, m2, s2);
  for (guint c = 0; c < 2; c++) {
    /* Channel 0: the mean rounded to float is off by up to 3e-5, that is 3e-3 of its std. */
    g_assert_cmpfloat(fabs(m2[c]), <, c == 0 ? 5e-3 : 1e-5);
    g_assert_cmpfloat(fabs(s2[c] - 1.0), <, 1e-3);
  }
  g_assert_cmpfloat(m2[2], ==, 0.0f);
  g_assert_cmpfloat(s2[2], ==, 0.0f);
}

/* ---- batcher ----------------------------------------------------------- */

/* Runs one epoch; returns the example indices in batch order and checks
 * batch sizes and that labels follow their images. */
static GArray *
run_epoch(SieveBatcher *b, const SieveDataset *ds, guint batch_size, gboolean drop_last)
{
  GArray *order = g_array_new(FALSE, FALSE, sizeof(guint));
  g_autofree float *x = g_new(float, batch_size * 2);
  g_autofree gint32 *y = g_new(gint32, batch_size);
  guint batches = 0, k;
  while ((k = sieve_batcher_next(b, x, y)) > 0) {
    batches++;
    g_assert_cmpuint(k, <=, batch_size);
    if (k < batch_size) {
      g_assert_false(drop_last);
      g_assert_cmpuint(k, ==, ds->n % batch_size);
    }
    for (guint i = 0; i < k; i++) {
      guint idx = (guint) x[2 * i];
      g_assert_cmpfloat(x[2 * i + 1], ==, -(float) idx);
      g_assert_cmpint(y[i], ==, ds->y[idx]);
      g_array_append_val(order, idx);
    }
  }
  g_assert_cmpuint(batches, ==, sieve_batcher_batches_per_epoch(b));
  return order;
}

static void
assert_permutation(GArray *order, guint n)
{
  g_assert_cmpuint(order->len, ==, n);
  g_autofree guint8 *seen = g_new0(guint8, n);
  for (guint i = 0; i < n; i++) {
    guint k = g_array_index(order, guint, i);
    g_assert_cmpuint(k, <, n);
    g_assert_cmpuint(seen[k], ==, 0);
    seen[k] = 1;
  }
}

static void
test_batcher_epochs(void)
{
  const guint n = 103;
  g_autoptr(SieveDataset) ds = make_indexed(n);
  SieveBatcherOptions o = {.batch_size = 10, .shuffle = TRUE, .drop_last = FALSE, .seed = 11};
  g_autoptr(SieveBatcher) b = sieve_batcher_new(ds, &o);
  g_autoptr(SieveBatcher) same = sieve_batcher_new(ds, &o);
  o.seed = 12;
  g_autoptr(SieveBatcher) other = sieve_batcher_new(ds, &o);
  g_assert_cmpuint(sieve_batcher_batches_per_epoch(b), ==, 11);

  GArray *previous = NULL;
  for (guint epoch = 1; epoch <= 4; epoch++) {
    GArray *order = run_epoch(b, ds, 10, FALSE);
    g_assert_cmpuint(sieve_batcher_get_epoch(b), ==, epoch); /* moves on at the next call */
    g_autoptr(GArray) order_same = run_epoch(same, ds, 10, FALSE);
    g_autoptr(GArray) order_other = run_epoch(other, ds, 10, FALSE);
    assert_permutation(order, n); /* every example exactly once */
    g_assert_cmpmem(order->data, n * sizeof(guint), order_same->data, n * sizeof(guint));
    g_assert_true(memcmp(order->data, order_other->data, n * sizeof(guint)) != 0);
    if (previous != NULL) /* a fresh order every epoch */
      g_assert_true(memcmp(order->data, previous->data, n * sizeof(guint)) != 0);
    if (previous)
      g_array_unref(previous);
    previous = order;
    /* A shuffle: not the identity. */
    guint fixed = 0;
    for (guint i = 0; i < n; i++)
      fixed += g_array_index(order, guint, i) == i;
    g_assert_cmpuint(fixed, <, 10);
  }
  g_array_unref(previous);
}

static void
test_batcher_drop_last(void)
{
  const guint n = 103;
  g_autoptr(SieveDataset) ds = make_indexed(n);
  /* No shuffle: the dataset's order, the last 3 examples dropped. */
  SieveBatcherOptions o = {.batch_size = 10, .shuffle = FALSE, .drop_last = TRUE, .seed = 1};
  g_autoptr(SieveBatcher) b = sieve_batcher_new(ds, &o);
  g_assert_cmpuint(sieve_batcher_batches_per_epoch(b), ==, 10);
  for (guint epoch = 0; epoch < 2; epoch++) {
    g_autoptr(GArray) order = run_epoch(b, ds, 10, TRUE);
    g_assert_cmpuint(order->len, ==, 100);
    for (guint i = 0; i < 100; i++)
      g_assert_cmpuint(g_array_index(order, guint, i), ==, i);
  }
  /* Without drop_last the last batch is short. */
  o.drop_last = FALSE;
  g_autoptr(SieveBatcher) keep = sieve_batcher_new(ds, &o);
  g_autoptr(GArray) all = run_epoch(keep, ds, 10, FALSE);
  g_assert_cmpuint(all->len, ==, n);
  /* Shuffled with drop_last: 100 distinct examples per epoch, the dropped
   * ones change from epoch to epoch, and over epochs all are seen. */
  o.shuffle = TRUE;
  o.drop_last = TRUE;
  g_autoptr(SieveBatcher) s = sieve_batcher_new(ds, &o);
  g_autofree guint8 *ever = g_new0(guint8, n);
  for (guint epoch = 0; epoch < 20; epoch++) {
    g_autoptr(GArray) order = run_epoch(s, ds, 10, TRUE);
    g_assert_cmpuint(order->len, ==, 100);
    g_autofree guint8 *seen = g_new0(guint8, n);
    for (guint i = 0; i < 100; i++) {
      guint k = g_array_index(order, guint, i);
      g_assert_cmpuint(seen[k], ==, 0);
      seen[k] = ever[k] = 1;
    }
  }
  for (guint i = 0; i < n; i++)
    g_assert_cmpuint(ever[i], ==, 1);
  /* Fewer examples than a batch: no batch at all with drop_last. */
  o.batch_size = 200;
  g_autoptr(SieveBatcher) big = sieve_batcher_new(ds, &o);
  g_assert_cmpuint(sieve_batcher_batches_per_epoch(big), ==, 0);
  g_autofree float *x = g_new(float, 400);
  g_autofree gint32 *y = g_new(gint32, 200);
  g_assert_cmpuint(sieve_batcher_next(big, x, y), ==, 0);
  g_assert_cmpuint(sieve_batcher_next(big, x, y), ==, 0);
}

/* The reference augmentation, written the long way: pad with zeros, crop
 * at (top, left), then mirror. */
static void
reference_augment(const float *src, float *dst, guint channels, guint h, guint w, guint pad, guint top, guint left,
                  gboolean flip)
{
  guint ph = h + 2 * pad, pw = w + 2 * pad;
  g_autofree float *padded = g_new0(float, (gsize) channels * ph * pw);
  g_autofree float *crop = g_new0(float, (gsize) channels * h * w);
  for (guint c = 0; c < channels; c++)
    for (guint i = 0; i < h; i++)
      for (guint j = 0; j < w; j++)
        padded[(c * ph + i + pad) * pw + j + pad] = src[(c * h + i) * w + j];
  for (guint c = 0; c < channels; c++)
    for (guint i = 0; i < h; i++)
      for (guint j = 0; j < w; j++)
        crop[(c * h + i) * w + j] = padded[(c * ph + i + top) * pw + j + left];
  for (guint c = 0; c < channels; c++)
    for (guint i = 0; i < h; i++)
      for (guint j = 0; j < w; j++)
        dst[(c * h + i) * w + j] = crop[(c * h + i) * w + (flip ? w - 1 - j : j)];
}

static void
test_batcher_augment_reference(void)
{
  /* The reference itself, against a case worked by hand: 3x4, pad 1,
   * crop at top 0, left 2, mirrored. */
  static const float img[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  static const float want[12] = {0, 0, 0, 0, 0, 4, 3, 2, 0, 8, 7, 6};
  float out[12];
  reference_augment(img, out, 1, 3, 4, 1, 0, 2, TRUE);
  g_assert_cmpmem(out, sizeof out, want, sizeof want);
}

/* Which (top, left, flip) of the reference produced out, or -1. */
static int
identify(const float *src, const float *out, guint channels, guint h, guint w, guint pad)
{
  gsize per = (gsize) channels * h * w;
  g_autofree float *cand = g_new(float, per);
  int found = -1;
  for (guint top = 0; top <= 2 * pad; top++)
    for (guint left = 0; left <= 2 * pad; left++)
      for (int flip = 0; flip < 2; flip++) {
        reference_augment(src, cand, channels, h, w, pad, top, left, flip);
        if (memcmp(cand, out, per * sizeof(float)) == 0) {
          g_assert_cmpint(found, ==, -1); /* distinct pixel values make each transform unique */
          found = (int) ((top * (2 * pad + 1) + left) * 2 + flip);
        }
      }
  return found;
}

static void
test_batcher_augment(void)
{
  /* 3 images of 2 channels 3x4, every pixel distinct and non-zero, with
   * labels 0, 1, 2: the label tells which image an output came from. */
  const guint C = 2, H = 3, W = 4, per = 24, pad = 1;
  g_autoptr(SieveDataset) ds = sieve_dataset_new(3, C, H, W, 3, "tiny");
  for (guint i = 0; i < 3; i++) {
    ds->y[i] = (gint32) i;
    for (guint k = 0; k < per; k++)
      ds->x[i * per + k] = (float) (1 + i * 1000 + k);
  }
  SieveBatcherOptions o = {.batch_size = 3, .shuffle = TRUE, .drop_last = FALSE, .crop_pad = pad, .flip = TRUE,
                           .seed = 5};
  g_autoptr(SieveBatcher) b = sieve_batcher_new(ds, &o);
  float x[3 * 24];
  gint32 y[3];
  guint hits[18] = {0}, flips = 0, total = 0;
  float first_epoch[3 * 24];
  gint32 first_y[3];
  for (guint epoch = 0; epoch < 300; epoch++) {
    guint k = sieve_batcher_next(b, x, y);
    g_assert_cmpuint(k, ==, 3);
    if (epoch == 0) {
      memcpy(first_epoch, x, sizeof x);
      memcpy(first_y, y, sizeof y);
      /* reset replays the epoch, augmentation included */
      sieve_batcher_reset(b);
      float again[3 * 24];
      gint32 y_again[3];
      g_assert_cmpuint(sieve_batcher_next(b, again, y_again), ==, 3);
      g_assert_cmpmem(again, sizeof again, x, sizeof x);
      g_assert_cmpmem(y_again, sizeof y_again, y, sizeof y);
    }
    for (guint i = 0; i < 3; i++) {
      int t = identify(ds->x + (gsize) y[i] * per, x + i * per, C, H, W, pad);
      g_assert_cmpint(t, >=, 0);
      hits[t]++;
      flips += t & 1;
      total++;
    }
    g_assert_cmpuint(sieve_batcher_next(b, x, y), ==, 0);
  }
  /* All 9 crops x 2 flips occur (900 draws, 50 expected each), flips about half. */
  for (guint t = 0; t < 18; t++)
    g_assert_cmpuint(hits[t], >, 20);
  g_assert_cmpfloat(fabs(flips / (double) total - 0.5), <, 0.06);

  /* The same seed gives the same augmented stream. */
  g_autoptr(SieveBatcher) again = sieve_batcher_new(ds, &o);
  g_assert_cmpuint(sieve_batcher_next(again, x, y), ==, 3);
  g_assert_cmpmem(x, sizeof x, first_epoch, sizeof first_epoch);
  g_assert_cmpmem(y, sizeof y, first_y, sizeof first_y);

  /* Flip alone: the image or its mirror; crop alone: never mirrored. */
  SieveBatcherOptions only_flip = {.batch_size = 3, .flip = TRUE, .seed = 9};
  g_autoptr(SieveBatcher) fb = sieve_batcher_new(ds, &only_flip);
  SieveBatcherOptions only_crop = {.batch_size = 3, .crop_pad = 2, .seed = 9};
  g_autoptr(SieveBatcher) cb = sieve_batcher_new(ds, &only_crop);
  guint seen_flip[2] = {0};
  for (guint epoch = 0; epoch < 40; epoch++) {
    g_assert_cmpuint(sieve_batcher_next(fb, x, y), ==, 3);
    for (guint i = 0; i < 3; i++) {
      int t = identify(ds->x + (gsize) y[i] * per, x + i * per, C, H, W, 0);
      g_assert_cmpint(t, >=, 0);
      seen_flip[t & 1]++;
    }
    g_assert_cmpuint(sieve_batcher_next(fb, x, y), ==, 0);
    g_assert_cmpuint(sieve_batcher_next(cb, x, y), ==, 3);
    for (guint i = 0; i < 3; i++) {
      g_assert_cmpint(y[i], ==, (gint32) i); /* no shuffle */
      int t = identify(ds->x + (gsize) y[i] * per, x + i * per, C, H, W, 2);
      g_assert_cmpint(t, >=, 0);
      g_assert_cmpint(t & 1, ==, 0);
    }
    g_assert_cmpuint(sieve_batcher_next(cb, x, y), ==, 0);
  }
  g_assert_cmpuint(seen_flip[0], >, 20);
  g_assert_cmpuint(seen_flip[1], >, 20);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  TEST("/data/idx/fashion-mnist-train", test_idx_fmnist_train);
  TEST("/data/idx/fashion-mnist-test-raw", test_idx_fmnist_test_raw);
  TEST("/data/idx/small", test_idx_small);
  TEST("/data/idx/errors", test_idx_errors);
  TEST("/data/cifar/10", test_cifar10);
  TEST("/data/cifar/100", test_cifar100);
  TEST("/data/cifar/open", test_cifar_open);
  TEST("/data/csv/strings", test_csv_strings);
  TEST("/data/csv/int-labels", test_csv_int_labels);
  TEST("/data/csv/errors", test_csv_errors);
  g_test_add_func("/data/csv-reader/records", test_csv_reader_records);
  g_test_add_func("/data/csv-reader/errors", test_csv_reader_errors);
  g_test_add_func("/data/csv-reader/encodings", test_csv_reader_encodings);
  TEST("/data/csv-reader/file", test_csv_reader_file);
  g_test_add_func("/data/open/errors", test_open_errors);
  g_test_add_func("/data/subset", test_subset);
  g_test_add_func("/data/split", test_split);
  g_test_add_func("/data/stats-normalize", test_stats_normalize);
  g_test_add_func("/data/batcher/epochs", test_batcher_epochs);
  g_test_add_func("/data/batcher/drop-last", test_batcher_drop_last);
  g_test_add_func("/data/batcher/augment-reference", test_batcher_augment_reference);
  g_test_add_func("/data/batcher/augment", test_batcher_augment);
  return g_test_run();
}
