/* sieve plugin: answers evaluations from a table of precomputed results
 * (NAS-Bench-201 and its kin: Ying et al. 2019, Dong & Yang 2020), which
 * makes a search strategy comparable with the literature in seconds.
 *
 * The table is a CSV file (gzipped or not, read by sieve/csv.h's reader:
 * RFC 4180 with a header row, spaces around fields ignored) with one row
 * per genotype, keyed by the genotype's canonical text.  It is read once at
 * create into a hash table and is read-only afterwards, so evaluate() runs
 * from any number of threads.
 */
#include <math.h>
#include <string.h>

#include <sieve/abi.h>
#include <sieve/candidate.h>
#include <sieve/component.h>
#include <sieve/csv.h>
#include <sieve/evaluator.h>
#include <sieve/node.h>
#include <sieve/options.h>
#include <sieve/plugin.h>
#include <sieve/result.h>
#include <sieve/space.h>

static const SieveOptionSpec tabular_options[] = {
  SIEVE_OPTION_PATH("table", NULL, "CSV file with a header row and one row per genotype"),
  SIEVE_OPTION_STRING("key", "arch_str", "column holding the genotype's canonical text"),
  SIEVE_OPTION_STRING_LIST("metrics", NULL,
                           "columns to report (default: every all-numeric column except the key)"),
  {"cost", SIEVE_OPTION_TYPE_STRING, NULL, 0, 0, NULL,
   "column holding the seconds an evaluation costs (default: the lookup time)", 0, {NULL}},
  SIEVE_OPTION_END,
};

typedef struct {
  char *path;           /* the table file, as resolved */
  guint n_metrics;
  char **metric_names;  /* n_metrics, NULL-terminated */
  gboolean has_cost;
  GHashTable *rows;     /* key text (in keys) -> double[n_metrics + has_cost] (in values) */
  GStringChunk *keys;
  double *values;
} Tabular;

/* The whole text of a number cell, surrounding blanks allowed. */
static gboolean
parse_number(const char *text, double *out)
{
  while (g_ascii_isspace(*text))
    text++;
  if (*text == '\0')
    return FALSE;
  char *end = NULL;
  double v = g_ascii_strtod(text, &end);
  while (g_ascii_isspace(*end))
    end++;
  /* Finite only: a NaN metric would poison every comparison downstream. */
  if (*end != '\0' || !isfinite(v))
    return FALSE;
  *out = v;
  return TRUE;
}

static gint
find_column(GPtrArray *header, const char *name)
{
  for (guint c = 0; c < header->len; c++)
    if (strcmp(header->pdata[c], name) == 0)
      return (gint) c;
  return -1;
}

/* A SIEVE_ERROR_CONFIG at the option that named a missing column. */
static void
missing_column(const SieveOptions *options, const char *option, const char *path, GPtrArray *header,
               const char *name, GError **error)
{
  g_ptr_array_add(header, NULL);
  const char *close = sieve_suggest(name, (const char *const *) header->pdata);
  g_ptr_array_remove_index(header, header->len - 1);
  if (close)
    sieve_options_set_error(options, option, error, "column '%s' is not in %s (did you mean '%s'?)", name, path,
                            close);
  else
    sieve_options_set_error(options, option, error, "column '%s' is not in %s", name, path);
}

static void
tabular_destroy(gpointer instance)
{
  Tabular *self = instance;
  if (self == NULL)
    return;
  g_free(self->path);
  g_strfreev(self->metric_names);
  g_clear_pointer(&self->rows, g_hash_table_unref);
  if (self->keys)
    g_string_chunk_free(self->keys);
  g_free(self->values);
  g_free(self);
}

static gboolean
load_table(Tabular *self, const SieveSpace *space, const SieveOptions *options, GError **error)
{
  const char *path = self->path;
  g_autoptr(GError) local = NULL;
  g_autoptr(SieveCsvReader) csv = sieve_csv_reader_new(path, &local);
  if (csv == NULL) {
    sieve_options_set_error(options, "table", error, "cannot read table: %s", local->message);
    return FALSE;
  }

  /* The reader's fields live until its next record: the header and the
   * cells are copied into one chunk, kept until the table is built. */
  GStringChunk *chunk = g_string_chunk_new(1 << 16);
  g_autoptr(GPtrArray) header = g_ptr_array_new();
  /* Cells of every data row, row-major, and each row's line. */
  g_autoptr(GPtrArray) cells = g_ptr_array_new();
  g_autoptr(GArray) lines = g_array_new(FALSE, FALSE, sizeof(guint));
  gboolean ok = FALSE;
  gint key_col = -1, cost_col = -1;
  g_autofree gint *metric_cols = NULL;
  guint n_cols = 0, n_rows = 0;
  /* Declared before the first goto: cleanups must never see uninitialised values. */
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  g_autofree char *first_misfit = NULL;

  if (!sieve_csv_reader_next(csv, &local)) {
    if (local != NULL)
      g_propagate_error(error, g_steal_pointer(&local));
    else
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "%s: the table is empty (it needs a header row)", path);
    goto out;
  }
  n_cols = sieve_csv_reader_n_fields(csv);
  for (guint c = 0; c < n_cols; c++) {
    gsize length = 0;
    const char *name = sieve_csv_reader_field(csv, c, &length);
    g_ptr_array_add(header, g_string_chunk_insert_len(chunk, name, (gssize) length));
  }
  /* The reader checks that each row has n_cols fields. */
  while (sieve_csv_reader_next(csv, &local)) {
    for (guint c = 0; c < n_cols; c++) {
      gsize length = 0;
      const char *cell = sieve_csv_reader_field(csv, c, &length);
      g_ptr_array_add(cells, g_string_chunk_insert_len(chunk, cell, (gssize) length));
    }
    guint line = sieve_csv_reader_get_line(csv);
    g_array_append_val(lines, line);
    n_rows++;
  }
  if (local != NULL) {
    g_propagate_error(error, g_steal_pointer(&local));
    goto out;
  }
  if (n_rows == 0) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "%s: the table has a header but no rows", path);
    goto out;
  }
#define CELL(r, c) ((const char *) cells->pdata[(gsize) (r) * n_cols + (c)])

  const char *key_name = sieve_options_get_string(options, "key");
  key_col = find_column(header, key_name);
  if (key_col < 0) {
    missing_column(options, "key", path, header, key_name, error);
    goto out;
  }
  const char *cost_name = sieve_options_get_string(options, "cost");
  if (cost_name != NULL) {
    cost_col = find_column(header, cost_name);
    if (cost_col < 0) {
      missing_column(options, "cost", path, header, cost_name, error);
      goto out;
    }
  }

  const char *const *wanted = sieve_options_get_strv(options, "metrics");
  metric_cols = g_new0(gint, n_cols + 1);
  if (wanted != NULL) {
    for (guint m = 0; wanted[m]; m++) {
      gint c = find_column(header, wanted[m]);
      if (c < 0) {
        missing_column(options, "metrics", path, header, wanted[m], error);
        goto out;
      }
      for (guint k = 0; k < names->len; k++)
        if (strcmp(names->pdata[k], wanted[m]) == 0) {
          sieve_options_set_error(options, "metrics", error, "metric '%s' is listed twice", wanted[m]);
          goto out;
        }
      metric_cols[names->len] = c;
      g_ptr_array_add(names, g_strdup(wanted[m]));
    }
  } else {
    /* Every column whose cells all read as numbers, in table order. */
    for (guint c = 0; c < n_cols; c++) {
      if ((gint) c == key_col)
        continue;
      gboolean numeric = TRUE;
      double unused;
      for (guint r = 0; r < n_rows && numeric; r++)
        numeric = parse_number(CELL(r, c), &unused);
      if (numeric) {
        metric_cols[names->len] = c;
        g_ptr_array_add(names, g_strdup(header->pdata[c]));
      }
    }
    if (names->len == 0) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "%s: no column besides '%s' holds only numbers, so "
                  "there is no metric to report", path, key_name);
      goto out;
    }
  }

  guint width = names->len + (cost_col >= 0 ? 1 : 0);
  self->n_metrics = names->len;
  self->has_cost = cost_col >= 0;
  self->values = g_new(double, (gsize) n_rows * width);
  self->keys = g_string_chunk_new(1 << 16);
  self->rows = g_hash_table_new(g_str_hash, g_str_equal);
  guint n_fit = 0;
  for (guint r = 0; r < n_rows; r++) {
    double *values = self->values + (gsize) r * width;
    guint line = g_array_index(lines, guint, r);
    for (guint m = 0; m < width; m++) {
      gint c = m < names->len ? metric_cols[m] : cost_col;
      if (!parse_number(CELL(r, c), &values[m])) {
        g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "%s:%u: column '%s' holds '%s', not a number", path,
                    line, (const char *) header->pdata[c], CELL(r, c));
        goto out;
      }
    }
    const char *key = CELL(r, key_col);
    const double *first = g_hash_table_lookup(self->rows, key);
    if (first != NULL) {
      guint first_line = g_array_index(lines, guint, (first - self->values) / width);
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "%s:%u: key '%s' already appears on line %u", path,
                  line, key, first_line);
      goto out;
    }
    g_hash_table_insert(self->rows, g_string_chunk_insert_const(self->keys, key), values);

    /* Keys must be canonical texts of this space, or no lookup can hit. */
    g_autoptr(GError) misfit = NULL;
    g_autoptr(SieveGenotype) genotype = sieve_space_parse(space, key, &misfit);
    g_autofree char *canonical = genotype ? sieve_space_format(space, genotype) : NULL;
    if (canonical != NULL && strcmp(canonical, key) == 0)
      n_fit++;
    else if (first_misfit == NULL)
      first_misfit = canonical ? g_strdup_printf("line %u: '%s' is written '%s' by space '%s'", line, key,
                                                 canonical, sieve_space_get_name(space))
                               : g_strdup_printf("line %u: %s", line, misfit->message);
  }
  if (n_fit == 0) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "%s: no key of column '%s' is a genotype of space '%s' "
                "in its canonical text (%s)", path, key_name, sieve_space_get_name(space), first_misfit);
    goto out;
  }
#undef CELL
  g_ptr_array_add(names, NULL);
  self->metric_names = (char **) g_ptr_array_free(g_steal_pointer(&names), FALSE);
  ok = TRUE;

out:
  g_string_chunk_free(chunk);
  return ok;
}

static gpointer
tabular_create(const SieveSpace *space, const SieveOptions *options, GError **error)
{
  Tabular *self = g_new0(Tabular, 1);
  self->path = g_strdup(sieve_options_get_string(options, "table"));
  if (!load_table(self, space, options, error)) {
    tabular_destroy(self);
    return NULL;
  }
  return self;
}

static SieveResult *
tabular_evaluate(gpointer instance, const SieveCandidate *candidate, GError **error)
{
  Tabular *self = instance;
  gint64 start = g_get_monotonic_time();
  const char *text = sieve_candidate_get_text(candidate);
  const double *values = g_hash_table_lookup(self->rows, text);
  SieveResult *result = sieve_result_new();
  if (values == NULL) {
    sieve_result_set_failed(result, "'%s' is not in %s", text, self->path);
    return result;
  }
  for (guint m = 0; m < self->n_metrics; m++)
    sieve_result_set_metric(result, self->metric_names[m], values[m]);
  if (self->has_cost)
    sieve_result_set_cost(result, values[self->n_metrics]);
  else
    sieve_result_set_cost(result, (g_get_monotonic_time() - start) / 1e6);
  return result;
}

/* The table's metric columns. */
static const char *const *
tabular_metrics(gpointer instance)
{
  Tabular *self = instance;
  return (const char *const *) self->metric_names;
}

static const SieveEvaluatorClass tabular_class = {
  .create = tabular_create,
  .destroy = tabular_destroy,
  .evaluate = tabular_evaluate,
  .flags = SIEVE_EVALUATOR_CONCURRENT,
  .metrics = tabular_metrics,
};

static const SieveComponentInfo tabular_info = {
  .kind = SIEVE_KIND_EVALUATOR,
  .name = "tabular",
  .summary = "looks results up in a CSV table of precomputed evaluations (e.g. NAS-Bench-201)",
  .options = tabular_options,
  .klass = &tabular_class,
  .example = "{plugin: tabular, table: data/nb201/nb201.csv, metrics: [cifar10_valid_acc]}",
};

static gboolean
tabular_init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &tabular_info, error);
}

SIEVE_PLUGIN_DEFINE("tabular", "0.1.0", "Tabular benchmark evaluator", "MIT", tabular_init);
