/* sieve-fuzz: a seeded mutation loop over every input format sieve reads
 * from outside (issue 20).  Debian's gcc has no libFuzzer, so this is the
 * plain kind: each format's driver makes a few valid seed inputs itself,
 * and each case mutates one of them (bit flips, byte inserts and deletes,
 * splices, interesting integers written into the header, truncation, a
 * format's own tokens) and feeds it to the reader.
 *
 *   sieve-fuzz FORMAT|all CASES SEED
 *
 * A reader may accept or refuse a case; it may not crash (the sanitizer
 * build, `make fuzz`, turns any memory error into one), refuse without an
 * error, refuse with a message that does not name the file, or accept a
 * genotype text whose canonical form reads back as another genotype.  Any
 * of those ends the program with status 1 and the case's bytes written to
 * fuzz-crash-FORMAT.bin in the current folder. */
#define _GNU_SOURCE /* memmem */
#include <glib/gstdio.h>
#include <string.h>
#include <zlib.h>

#include <sieve/sieve.h>

#include "data/data-private.h"
#include "protocol.h"
#include "sieve-config.h"
#include "test-support.h"

#define FUZZ_MAX_INPUT (64 * 1024)

typedef struct {
  const char *name;
  void (*seeds)(GPtrArray *corpus);       /* of GByteArray */
  const char *const *tokens;              /* the format's own words, for inserts */
  gboolean (*run)(const guint8 *data, gsize size, GError **error); /* FALSE + error: refused */
} Format;

static char *scratch;            /* the folder file readers read from */
static SieveRegistry *registry;
static const char *source_root;
static SieveSpace *nb201_space, *hpo_space;
static GRand *rng;

/* Writes data to path, plainly: g_file_set_contents() syncs the disk on
 * each overwrite, which made a case cost 10 ms. */
static void
write_file(const char *path, const guint8 *data, gsize size)
{
  FILE *f = fopen(path, "wb");
  if (f == NULL || fwrite(data, 1, size, f) != size || fclose(f) != 0)
    g_error("cannot write %s", path);
}

static void
add(GPtrArray *corpus, const void *data, gsize size)
{
  GByteArray *b = g_byte_array_new();
  g_byte_array_append(b, data, size);
  g_ptr_array_add(corpus, b);
}

static void
add_text(GPtrArray *corpus, const char *text)
{
  add(corpus, text, strlen(text));
}

/* path in the scratch folder holding data. (transfer full) */
static char *
put(const char *base, const guint8 *data, gsize size)
{
  char *path = g_build_filename(scratch, base, NULL);
  write_file(path, data, size);
  return path;
}

/* A refusal must say which file it is about. */
static gboolean
refused_naming(GError **error, const char *path)
{
  if (error == NULL || *error == NULL)
    g_error("a reader refused %s without an error", path);
  if (strstr((*error)->message, path) == NULL)
    g_error("the error does not name %s: %s", path, (*error)->message);
  return FALSE;
}

/* ---- YAML ----------------------------------------------------------------- */

static void
yaml_seeds(GPtrArray *c)
{
  add_text(c, "name: study\nspace: {plugin: hpo, file: space.yaml}\noptimizer:\n  plugin: random\n"
              "evaluator: {plugin: command, argv: [echo, '{\"v\": 1}'], timeout: 60}\nobjective: {metric: v}\n"
              "budget: {evaluations: 20}\n");
  add_text(c, "parameters:\n  lr: {type: float, low: 1e-4, high: 0.1, log: true}\n  layers: {type: int, low: 1, "
              "high: 8}\n  act: {type: categorical, choices: [relu, \"gelu\", 'tanh']}\n");
  add_text(c, "a: [1, 2]\nc: |\n  text\n  more\nd: >-\n  folded\n? complex\n: value\n");
  add_text(c, "- 1\n- - nested\n  - {k: v, 'q': \"\\u00e9\\x41\"}\n- !!str 3\n- ~\n- null\n");
}

static const char *const yaml_tokens[] = {"{", "}", "[", "]", ":", "- ", "&a ", "*a", "<<: ", "!!", "'", "\"",
                                          "\n", "  ", "? ", "|", ">", "#", "---\n", "...\n", "%YAML 1.1\n",
                                          "\\u0000", "\t", NULL};

static gboolean
yaml_run(const guint8 *data, gsize size, GError **error)
{
  g_autoptr(SieveNode) node = sieve_node_parse_string((const char *) data, (gssize) size, "fuzz.yaml", error);
  if (node == NULL) {
    if (error == NULL || *error == NULL)
      g_error("the YAML parser refused a text without an error");
    if (!g_str_has_prefix((*error)->message, "fuzz.yaml"))
      g_error("the error does not name fuzz.yaml: %s", (*error)->message);
    return FALSE;
  }
  g_autoptr(SieveNode) copy = sieve_node_copy(node);
  return TRUE;
}

/* ---- IDX (and gzip, through the same loader) ------------------------------ */

static void
be32(guint8 *p, guint32 v)
{
  p[0] = v >> 24, p[1] = v >> 16, p[2] = v >> 8, p[3] = v;
}

/* An IDX pair in one buffer: the images' length as 4 bytes, the images
 * file, then the labels file; a mutation may move the cut. */
static GByteArray *
idx_pair(guint n, guint rows, guint cols)
{
  GByteArray *b = g_byte_array_new();
  guint8 head[16];
  be32(head, 16 + n * rows * cols);
  g_byte_array_append(b, head, 4);
  be32(head, 0x803), be32(head + 4, n), be32(head + 8, rows), be32(head + 12, cols);
  g_byte_array_append(b, head, 16);
  for (guint i = 0; i < n * rows * cols; i++) {
    guint8 v = (guint8) (i * 37);
    g_byte_array_append(b, &v, 1);
  }
  be32(head, 0x801), be32(head + 4, n);
  g_byte_array_append(b, head, 8);
  for (guint i = 0; i < n; i++) {
    guint8 v = (guint8) (i % 10);
    g_byte_array_append(b, &v, 1);
  }
  return b;
}

static void
idx_seeds(GPtrArray *c)
{
  g_ptr_array_add(c, idx_pair(3, 4, 4));
  g_ptr_array_add(c, idx_pair(1, 28, 28));
  g_ptr_array_add(c, idx_pair(10, 2, 3));
}

static gboolean
idx_load(const guint8 *images, gsize n_images, const guint8 *labels, gsize n_labels, GError **error)
{
  g_autofree char *ipath = put("images-idx3-ubyte", images, n_images);
  g_autofree char *lpath = put("labels-idx1-ubyte", labels, n_labels);
  g_autoptr(SieveDataset) ds = sieve_dataset_load_idx_classes(ipath, lpath, 0, error);
  if (ds == NULL) {
    if (error == NULL || *error == NULL)
      g_error("the IDX loader refused without an error");
    if (strstr((*error)->message, ipath) == NULL && strstr((*error)->message, lpath) == NULL)
      g_error("the error names neither IDX file: %s", (*error)->message);
    return FALSE;
  }
  return TRUE;
}

static gboolean
idx_run(const guint8 *data, gsize size, GError **error)
{
  gsize cut = size >= 4 ? (gsize) data[0] << 24 | data[1] << 16 | data[2] << 8 | data[3] : 0;
  cut = MIN(cut, size - MIN(size, 4));
  const guint8 *rest = data + MIN(size, 4);
  return idx_load(rest, cut, rest + cut, size - MIN(size, 4) - cut, error);
}

static const char *const no_tokens[] = {NULL};

/* gzip: the IDX images file compressed, the labels plain. */
static GByteArray *
gzip_bytes(const guint8 *data, gsize size)
{
  z_stream z = {0};
  if (deflateInit2(&z, 9, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    g_error("deflateInit2");
  GByteArray *out = g_byte_array_sized_new(deflateBound(&z, size));
  g_byte_array_set_size(out, deflateBound(&z, size));
  z.next_in = (Bytef *) data, z.avail_in = size, z.next_out = out->data, z.avail_out = out->len;
  if (deflate(&z, Z_FINISH) != Z_STREAM_END)
    g_error("deflate");
  g_byte_array_set_size(out, z.total_out);
  deflateEnd(&z);
  return out;
}

static void
gzip_seeds(GPtrArray *c)
{
  for (guint k = 0; k < 2; k++) {
    g_autoptr(GByteArray) pair = idx_pair(4, k ? 28 : 5, k ? 28 : 5);
    gsize images = (gsize) pair->data[0] << 24 | pair->data[1] << 16 | pair->data[2] << 8 | pair->data[3];
    g_ptr_array_add(c, gzip_bytes(pair->data + 4, images));
  }
}

static gboolean
gzip_run(const guint8 *data, gsize size, GError **error)
{
  /* Four labels, as the seeds have four images: a case that inflates well
   * reaches the IDX checks too. */
  guint8 labels[8 + 4];
  be32(labels, 0x801), be32(labels + 4, 4);
  memset(labels + 8, 1, 4);
  g_autofree char *ipath = put("images-idx3-ubyte.gz", data, size);
  g_autofree char *lpath = put("labels-idx1-ubyte", labels, sizeof labels);
  g_autoptr(SieveDataset) ds = sieve_dataset_load_idx_classes(ipath, lpath, 0, error);
  if (ds == NULL) {
    if (error == NULL || *error == NULL)
      g_error("the gzip/IDX loader refused without an error");
    if (strstr((*error)->message, ipath) == NULL && strstr((*error)->message, lpath) == NULL)
      g_error("the error names neither file: %s", (*error)->message);
    return FALSE;
  }
  return TRUE;
}

/* ---- CIFAR ---------------------------------------------------------------- */

static void
cifar_seeds(GPtrArray *c)
{
  for (guint k = 1; k <= 3; k++) {
    GByteArray *b = g_byte_array_new();
    for (guint r = 0; r < k; r++)
      for (guint i = 0; i < 1 + 3072; i++) {
        guint8 v = i == 0 ? (guint8) (r % 10) : (guint8) (i * 13 + r);
        g_byte_array_append(b, &v, 1);
      }
    g_ptr_array_add(c, b);
  }
}

static gboolean
cifar_run(const guint8 *data, gsize size, GError **error)
{
  g_autofree char *path = put("data_batch_1.bin", data, size);
  const char *paths[] = {path};
  /* Whole CIFAR-100 records are read as such, so that both layouts are fuzzed. */
  guint classes = size % 3074 == 0 && size % 3073 != 0 ? 100 : 10;
  g_autoptr(SieveDataset) ds = sieve_dataset_load_cifar(paths, 1, classes, error);
  return ds != NULL || refused_naming(error, path);
}

/* ---- CSV ------------------------------------------------------------------ */

static void
csv_seeds(GPtrArray *c)
{
  add_text(c, "x1,x2,label\n0.5,1,0\n-2e3,  3 ,1\n\"4\",5.25,2\n");
  add_text(c, "\xEF\xBB\xBF" "a,\"b, c\",class\r\n1,2,setosa\r\n3,4,\"vers\"\"icolor\"\r\n\n   \n5,6,setosa");
  add_text(c, "f,label\n1,\"multi\nline\"\n2,x\n");
}

static const char *const csv_tokens[] = {",", "\"", "\"\"", "\n", "\r\n", " ", "1e309", "nan", "-inf", "0x10",
                                         "65535", "65536", "\xEF\xBB\xBF", NULL};

static gboolean
csv_run(const guint8 *data, gsize size, GError **error)
{
  g_autofree char *path = put("table.csv", data, size);
  /* A named label column in some cases: the header's lookup is fuzzed too. */
  const char *label = size % 2 == 0 && memmem(data, size, "label", 5) != NULL ? "label" : NULL;
  g_autoptr(SieveDataset) ds = sieve_dataset_load_csv(path, label, error);
  return ds != NULL || refused_naming(error, path);
}

/* ---- .npy ----------------------------------------------------------------- */

static void
npy_seeds(GPtrArray *c)
{
  const float f[6] = {1, -2, 3.5f, 0, 1e30f, -0.0f};
  const double d[3] = {1, 2, 3};
  const gint64 l[4] = {1, -1, G_MAXINT32, 7};
  const guint8 u[5] = {0, 1, 2, 255, 9};
  struct {
    SieveNpyType type;
    guint ndims;
    guint64 dims[3];
    gconstpointer data;
  } seeds[] = {{SIEVE_NPY_F32, 2, {2, 3}, f}, {SIEVE_NPY_F64, 1, {3}, d}, {SIEVE_NPY_I64, 2, {2, 2}, l},
               {SIEVE_NPY_U8, 3, {1, 5, 1}, u}, {SIEVE_NPY_F32, 0, {0}, f}};
  for (guint k = 0; k < G_N_ELEMENTS(seeds); k++) {
    g_autoptr(GBytes) b = sieve__npy_encode(seeds[k].type, seeds[k].ndims, seeds[k].dims, seeds[k].data);
    gsize n = 0;
    const guint8 *p = g_bytes_get_data(b, &n);
    add(c, p, n);
  }
}

static const char *const npy_tokens[] = {"(", ")", ",", "'", "<f4", "<i8", "|u1", ">f4", "True", "False",
                                         "4294967296", "18446744073709551615", "-1", " ", "}", "{", NULL};

static gboolean
npy_run(const guint8 *data, gsize size, GError **error)
{
  g_autoptr(SieveNpy) a = sieve__npy_decode(data, size, "fuzz.npy", error);
  if (a == NULL) {
    if (error == NULL || *error == NULL || strstr((*error)->message, "fuzz.npy") == NULL)
      g_error("an .npy refusal without an error naming fuzz.npy");
    return FALSE;
  }
  g_autoptr(GError) ignored = NULL;
  g_free(sieve__npy_to_f32(a, "fuzz.npy", &ignored));
  g_clear_error(&ignored);
  g_free(sieve__npy_to_i32(a, "fuzz.npy", &ignored));
  return TRUE;
}

/* ---- genotype texts: nb201 arch strings and hpo ---------------------------- */

static void
genotype_seeds(GPtrArray *c, const SieveSpace *space)
{
  SieveRng r;
  sieve_rng_seed(&r, 7);
  for (guint k = 0; k < 6; k++) {
    g_autoptr(SieveGenotype) g = sieve_space_sample(space, &r);
    g_autofree char *text = sieve_space_format(space, g);
    add_text(c, text);
  }
}

static void nb201_seeds(GPtrArray *c) { genotype_seeds(c, nb201_space); }
static void hpo_seeds(GPtrArray *c) { genotype_seeds(c, hpo_space); }

static const char *const genotype_tokens[] = {"|", "~", "+", "~0", "~9999999999", "~-1", "nor_conv_3x3",
                                              "skip_connect", "none", "avg_pool_3x3", "=", ",", "1e308",
                                              "nan", "-0", "relu", " ", NULL};

/* Accepted text must be a genotype of the space whose canonical text reads
 * back as the same genotype: the store keys trials by that text. */
static gboolean
genotype_run(const SieveSpace *space, const guint8 *data, gsize size, GError **error)
{
  g_autofree char *text = g_strndup((const char *) data, size); /* a C string: stops at a NUL */
  g_autoptr(SieveGenotype) g = sieve_space_parse(space, text, error);
  if (g == NULL) {
    if (error == NULL || *error == NULL)
      g_error("sieve_space_parse refused '%s' without an error", text);
    return FALSE;
  }
  g_autoptr(GError) invalid = NULL;
  if (!sieve_space_validate(space, g, &invalid))
    g_error("sieve_space_parse accepted '%s' but the genotype is invalid: %s", text, invalid->message);
  g_autofree char *canonical = sieve_space_format(space, g);
  g_autoptr(GError) again = NULL;
  g_autoptr(SieveGenotype) back = sieve_space_parse(space, canonical, &again);
  if (back == NULL || !sieve_genotype_equal(g, back))
    g_error("'%s' parsed, but its canonical text '%s' does not read back the same", text, canonical);
  return TRUE;
}

static gboolean nb201_run(const guint8 *d, gsize n, GError **e) { return genotype_run(nb201_space, d, n, e); }
static gboolean hpo_run(const guint8 *d, gsize n, GError **e) { return genotype_run(hpo_space, d, n, e); }

/* ---- the command evaluator's JSON line ------------------------------------- */

static void
json_seeds(GPtrArray *c)
{
  add_text(c, "{\"loss\": 0.25, \"acc\": 0.9, \"diverged\": false}");
  add_text(c, "{\"loss\": NaN, \"best\": -Infinity, \"note\": \"a \\\"q\\\" \\u00e9\", \"status\": \"ok\"}");
  add_text(c, "{\"status\": \"ok\", \"reason\": \"out of memory\", \"steps\": [1, 2, {\"x\": null}]}");
  /* (a metric named "" is refused now, the trial failed with the name: a seed must be accepted) */
  add_text(c, "{\"a\": 1e308, \"b\": -0, \"c\": 12345678901234567890, \"d\": 3}");
  add_text(c, "{\"intermediate\": {\"step\": 3, \"value\": NaN, \"fidelity\": 2, \"step\": 4}}");
  add_text(c, "{'intermedate': {'step': 1, 'value': 0.1}}");
}

static const char *const json_tokens[] = {"{", "}", "[", "]", "\"", ":", ",", "NaN", "Infinity", "-Infinity",
                                          "\\u0001NaN", "\\", "\\u", "1e999", "null", "true", "\"status\"",
                                          "\"failed\"", "\"intermediate\"", "'", NULL};

static gboolean
json_run(const guint8 *data, gsize size, GError **error)
{
  g_autofree char *line = g_strndup((const char *) data, size);
  /* The same bytes as a progress line: read, or refused with a reason. */
  gint64 step;
  double fidelity, value;
  g_autofree char *problem = NULL;
  if (command_read_progress_line(line, NULL, &step, &fidelity, &value, &problem) == COMMAND_LINE_MALFORMED &&
      (problem == NULL || problem[0] == '\0'))
    g_error("a refused progress line without a reason for '%s'", line);
  g_autoptr(SieveResult) result = sieve_result_new();
  command_read_metrics_line(line, result);
  if (sieve_result_get_status(result) == SIEVE_STATUS_OK)
    return TRUE;
  const char *reason = sieve_result_get_reason(result);
  if (reason == NULL || reason[0] == '\0')
    g_error("a failed trial without a reason for '%s'", line);
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "%s", reason);
  return FALSE;
}

/* ---- the mutation loop ----------------------------------------------------- */

static const Format formats[] = {
    {"yaml", yaml_seeds, yaml_tokens, yaml_run},   {"idx", idx_seeds, no_tokens, idx_run},
    {"cifar", cifar_seeds, no_tokens, cifar_run},  {"csv", csv_seeds, csv_tokens, csv_run},
    {"npy", npy_seeds, npy_tokens, npy_run},       {"gzip", gzip_seeds, no_tokens, gzip_run},
    {"nb201", nb201_seeds, genotype_tokens, nb201_run}, {"hpo", hpo_seeds, genotype_tokens, hpo_run},
    {"command-json", json_seeds, json_tokens, json_run},
};

/* Integers that sit on the edges of the checks a header meets. */
static const guint32 interesting[] = {0, 1, 2, 3, 7, 8, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000, 0xffff, 0x10000,
                                      0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff, 0x803, 0x801, 3072, 3073};

/* GLib has no insert of several bytes in a GByteArray. */
static void
insert_bytes(GByteArray *b, guint at, const guint8 *bytes, guint n)
{
  guint tail = b->len - at;
  g_byte_array_set_size(b, b->len + n);
  memmove(b->data + at + n, b->data + at, tail);
  memcpy(b->data + at, bytes, n);
}

static guint
pick(guint n)
{
  return n ? (guint) g_rand_int_range(rng, 0, (gint32) n) : 0;
}

static void
mutate(GByteArray *b, const Format *f, GPtrArray *corpus)
{
  guint rounds = 1 + pick(4);
  for (guint k = 0; k < rounds; k++) {
    guint len = b->len;
    /* Headers are where sizes live: half the positions fall in the first 32 bytes. */
    guint at = pick(2) ? pick(MIN(len, 32)) : pick(len);
    switch (pick(9)) {
    case 0: /* bit flip */
      if (len)
        b->data[at] ^= (guint8) (1u << pick(8));
      break;
    case 1: /* random byte */
      if (len)
        b->data[at] = (guint8) pick(256);
      break;
    case 2: { /* insert random bytes */
      guint8 bytes[8];
      guint n = 1 + pick(8);
      for (guint i = 0; i < n; i++)
        bytes[i] = (guint8) pick(256);
      insert_bytes(b, MIN(at, len), bytes, n);
      break;
    }
    case 3: /* delete a range */
      if (len)
        {
        guint n = 1 + pick(16); /* not inside MIN(), which would draw twice */
        g_byte_array_remove_range(b, at, MIN(len - at, n));
      }
      break;
    case 4: { /* an interesting integer, 1, 2 or 4 bytes, either byte order */
      guint32 v = interesting[pick(G_N_ELEMENTS(interesting))];
      guint width = 1u << pick(3);
      gboolean big = pick(2);
      for (guint i = 0; i < width && at + i < len; i++)
        b->data[at + i] = (guint8) (v >> (8 * (big ? width - 1 - i : i)));
      break;
    }
    case 5: /* truncate */
      g_byte_array_set_size(b, pick(len + 1));
      break;
    case 6: { /* splice: the tail of another corpus entry */
      const GByteArray *o = g_ptr_array_index(corpus, pick(corpus->len));
      guint from = pick(o->len + 1);
      g_byte_array_set_size(b, MIN(at, len));
      g_byte_array_append(b, o->data + from, o->len - from);
      break;
    }
    case 7: { /* a format token, or a duplicated range for binary formats */
      guint n_tokens = g_strv_length((char **) f->tokens);
      if (n_tokens) {
        const char *t = f->tokens[pick(n_tokens)];
        insert_bytes(b, MIN(at, len), (const guint8 *) t, strlen(t));
      } else if (len) {
        guint want = 1 + pick(64), n = MIN(len - at, want);
        g_autofree guint8 *copy = g_memdup2(b->data + at, n);
        insert_bytes(b, pick(len + 1), copy, n);
      }
      break;
    }
    default: /* an interesting integer near the end: gzip's trailer, a last field */
      if (len >= 4) {
        guint32 v = interesting[pick(G_N_ELEMENTS(interesting))];
        guint back = pick(MIN(len - 3, 8));
        guint8 *p = b->data + len - 4 - back;
        p[0] = v, p[1] = v >> 8, p[2] = v >> 16, p[3] = v >> 24;
      }
      break;
    }
    if (b->len > FUZZ_MAX_INPUT)
      g_byte_array_set_size(b, FUZZ_MAX_INPUT);
  }
}

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

static gboolean
fuzz(const Format *f, guint cases, guint32 seed)
{
  G_GNUC_UNUSED gboolean leaks_each = g_getenv("FUZZ_LEAKS_EACH") != NULL;
  g_rand_set_seed(rng, seed);
  g_autoptr(GPtrArray) corpus = g_ptr_array_new_with_free_func((GDestroyNotify) g_byte_array_unref);
  f->seeds(corpus);
  guint n_seeds = corpus->len;
  /* Every seed must be accepted, or the loop would only test refusals. */
  for (guint k = 0; k < n_seeds; k++) {
    const GByteArray *s = g_ptr_array_index(corpus, k);
    g_autoptr(GError) error = NULL;
    if (!f->run(s->data, s->len, &error))
      g_error("fuzz %s: seed %u is refused: %s", f->name, k, error->message);
  }
  guint accepted = 0;
  for (guint i = 0; i < cases; i++) {
    const GByteArray *parent = g_ptr_array_index(corpus, pick(corpus->len));
    g_autoptr(GByteArray) b = g_byte_array_new();
    g_byte_array_append(b, parent->data, parent->len);
    mutate(b, f, corpus);
    guint8 nul = 0; /* so that data is never NULL, even for an empty case */
    g_byte_array_append(b, &nul, 1);
    g_byte_array_set_size(b, b->len - 1);
    /* The case, kept where a crash leaves it for rerunning by hand. */
    g_autofree char *crash = g_strdup_printf("fuzz-crash-%s.bin", f->name);
    write_file(crash, b->data, b->len);
    {
      g_autoptr(GError) error = NULL;
      if (f->run(b->data, b->len, &error)) {
        accepted++;
        /* Accepted mutants become parents (a few): deeper cases without coverage feedback. */
        if (corpus->len < n_seeds + 64)
          g_ptr_array_add(corpus, g_byte_array_ref(b));
      }
    }
#ifdef __SANITIZE_ADDRESS__
    /* FUZZ_LEAKS_EACH=1: the leak check after every case (slow), so that a
     * leak stops the run at the case that made it, kept in the crash file. */
    if (leaks_each && __lsan_do_recoverable_leak_check() != 0)
      g_error("fuzz %s: case %u leaked (kept in %s)", f->name, i, crash);
#endif
    g_unlink(crash);
  }
  printf("fuzz %-12s %u cases, seed %u: no crash (%u accepted, %u refused with an error)\n", f->name, cases, seed,
         accepted, cases - accepted);
  fflush(stdout);
  return TRUE;
}

int
main(int argc, char **argv)
{
  if (argc != 4) {
    g_printerr("usage: sieve-fuzz FORMAT|all CASES SEED\nformats:");
    for (guint k = 0; k < G_N_ELEMENTS(formats); k++)
      g_printerr(" %s", formats[k].name);
    g_printerr("\n");
    return 2;
  }
  guint64 cases = 0, seed = 0;
  if (!g_ascii_string_to_unsigned(argv[2], 10, 1, G_MAXUINT, &cases, NULL) ||
      !g_ascii_string_to_unsigned(argv[3], 10, 0, G_MAXUINT32, &seed, NULL)) {
    g_printerr("sieve-fuzz: CASES must be a positive integer and SEED a 32-bit one\n");
    return 2;
  }
  source_root = g_getenv("SIEVE_SOURCE_ROOT");
  if (source_root == NULL)
    source_root = SIEVE_SOURCE_ROOT;
  g_autoptr(GError) error = NULL;
  scratch = g_dir_make_tmp("sieve-fuzz-XXXXXX", &error);
  if (scratch == NULL)
    g_error("%s", error->message);
  registry = test_registry_load();
  nb201_space = test_space_new(registry, "nb201", NULL, source_root);
  hpo_space = test_space_new(registry, "hpo", "file: search_spaces/mlp.yaml", source_root);
  rng = g_rand_new();
  guint ran = 0;
  for (guint k = 0; k < G_N_ELEMENTS(formats); k++) {
    if (strcmp(argv[1], "all") != 0 && strcmp(argv[1], formats[k].name) != 0)
      continue;
    fuzz(&formats[k], (guint) cases, (guint32) seed);
    ran++;
  }
  if (ran == 0) {
    g_printerr("sieve-fuzz: unknown format '%s'\n", argv[1]);
    return 2;
  }
  g_autoptr(GDir) dir = g_dir_open(scratch, 0, NULL);
  const char *base;
  while (dir && (base = g_dir_read_name(dir)) != NULL) {
    g_autofree char *path = g_build_filename(scratch, base, NULL);
    g_unlink(path);
  }
  g_rmdir(scratch);
  g_free(scratch);
  g_rand_free(rng);
  sieve_space_free(nb201_space);
  sieve_space_free(hpo_space);
  sieve_registry_free(registry);
  return 0;
}
