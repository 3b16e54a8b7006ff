/* sieve: a study's trials as CSV or JSON.
 *
 * CSV (RFC 4180 quoting, "\n" line ends): one header line
 *   number,status,genotype,fidelity,<metrics>,cost_s,started,finished,worker,hash_kind,hash,cached_from,reason
 * where <metrics> is every metric name in order of first appearance across
 * the trials (in trial order).  Column names are unique: a metric named as
 * a fixed column of its table (a command evaluator's "fidelity" or
 * "cost_s", the train evaluator's "epochs" among the finals' columns), or
 * whose name starts with "metric.", is written "metric." + its name.  JSON
 * keeps the metrics apart in their own object, under their own names.  A missing value (no such metric, a pending
 * trial's timings and worker, no hash, no cached_from, no reason, a NAN
 * fidelity or cost) is an empty cell; a non-finite metric is nan, inf or -inf.
 *
 * The pipeline's outcome of a trial is its status: ok or failed (evaluated),
 * cached (answered by the dedupe stage with the result of trial cached_from,
 * whose metrics it repeats), screened (stopped by the screen stage; its
 * metrics are its proxy scores; cached_from names the trial it duplicated,
 * if any), rejected (broke a constraint before evaluation: its metrics are
 * the values checked, its reason the constraint), pending.  hash is the dedupe stage's hash of the trial, in hex,
 * of the kind hash_kind (functional, structural or genotype).
 *
 * JSON: an array with one object per trial, one per line:
 *   {"number":0,"status":"ok","genotype":"...","fidelity":null,"metrics":{"acc":91.5},
 *    "cost_s":1.5,"started":...,"finished":...,"worker":0,"hash_kind":null,"hash":null,
 *    "cached_from":null,"reason":null}
 * JSON has no NaN or infinity, so a non-finite metric is the string "nan",
 * "inf" or "-inf" (not null, which would lose which one it was); the other
 * numbers that may be missing (fidelity, cost_s, started, finished, worker,
 * cached_from) and the hash are null when missing.
 *
 * The summary (sieve_store_export_summary) counts the outcomes: one CSV
 * row under a header, or one JSON object, with the keys
 *   trials, evaluated, ok, failed, cached, screened, pending,
 *   distinct_evaluated (distinct hashes among the evaluated trials),
 *   finals, finals_ok, finals_failed, finals_pending (sieve final's
 *   trainings, counted apart from the trials), rejected (by a constraint),
 *   cache_fraction (cached / finished trials), hash_kind.
 *
 * Numbers are written in the shortest form that reads back to the same
 * double: %.15g, else %.16g, else %.17g, always with a '.' decimal point.
 *
 * Everything is read with one query (sieve_store_list_trials), so an export
 * taken while a study runs is one consistent snapshot.
 */
#include <math.h>
#include <string.h>

#include <sieve/store.h>
#include <sieve/text.h>

static const char *
non_finite_name(double value)
{
  return isnan(value) ? "nan" : value > 0 ? "inf" : "-inf";
}

/* ---- CSV --------------------------------------------------------------- */

/* RFC 4180: a field with a comma, a quote or a line break is quoted, and
 * quotes inside it are doubled. */
static void
csv_field(GString *out, const char *text)
{
  if (text == NULL)
    return;
  if (strpbrk(text, ",\"\r\n") == NULL) {
    g_string_append(out, text);
    return;
  }
  g_string_append_c(out, '"');
  for (const char *p = text; *p; p++) {
    if (*p == '"')
      g_string_append_c(out, '"');
    g_string_append_c(out, *p);
  }
  g_string_append_c(out, '"');
}

/* A metric's column: see the rule at the top; fixed: the table's other
 * columns, NULL-terminated. */
static void
csv_metric_name(GString *out, const char *name, const char *const *fixed)
{
  gboolean clash = g_str_has_prefix(name, "metric.") || g_strv_contains(fixed, name);
  g_autofree char *column = clash ? g_strconcat("metric.", name, NULL) : NULL;
  csv_field(out, column ? column : name);
}

static void
csv_header(GString *out, const char *const *before, GPtrArray *names, const char *const *after,
           const char *const *fixed)
{
  for (guint i = 0; before[i]; i++)
    g_string_append_printf(out, "%s%s", i ? "," : "", before[i]);
  for (guint i = 0; i < names->len; i++) {
    g_string_append_c(out, ',');
    csv_metric_name(out, names->pdata[i], fixed);
  }
  for (guint i = 0; after[i]; i++)
    g_string_append_printf(out, ",%s", after[i]);
  g_string_append_c(out, '\n');
}

static const char *const trial_columns[] = {"number", "status", "genotype", "fidelity", "cost_s", "started",
                                            "finished", "worker", "hash_kind", "hash", "cached_from", "reason",
                                            NULL};
static const char *const final_columns[] = {"final", "trial", "status", "genotype", "epochs", "settings",
                                            "cost_s", "started", "finished", "reason", NULL};

/* NAN: an empty cell. */
static void
csv_real(GString *out, double value)
{
  if (!isnan(value))
    sieve_text_append_double(out, value);
}

static void
csv_trial(GString *out, const SieveTrial *t, GPtrArray *names)
{
  g_string_append_printf(out, "%" G_GINT64_FORMAT ",%s,", t->number, sieve_status_to_string(t->status));
  csv_field(out, t->genotype);
  g_string_append_c(out, ',');
  csv_real(out, t->fidelity);
  for (guint i = 0; i < names->len; i++) {
    double v;
    g_string_append_c(out, ',');
    if (sieve_result_get_metric(t->result, names->pdata[i], &v)) {
      if (isfinite(v))
        sieve_text_append_double(out, v);
      else
        g_string_append(out, non_finite_name(v));
    }
  }
  g_string_append_c(out, ',');
  csv_real(out, sieve_result_get_cost(t->result));
  g_string_append_c(out, ',');
  csv_real(out, t->started);
  g_string_append_c(out, ',');
  csv_real(out, t->finished);
  g_string_append_c(out, ',');
  if (t->worker >= 0)
    g_string_append_printf(out, "%d", t->worker);
  g_string_append_c(out, ',');
  csv_field(out, t->hash_kind);
  g_string_append_c(out, ',');
  csv_field(out, t->hash);
  g_string_append_c(out, ',');
  if (t->cached_from >= 0)
    g_string_append_printf(out, "%" G_GINT64_FORMAT, t->cached_from);
  g_string_append_c(out, ',');
  csv_field(out, t->reason);
  g_string_append_c(out, '\n');
}

/* NAN (a missing value): null. */
static void
json_real(GString *out, double value)
{
  if (isnan(value))
    g_string_append(out, "null");
  else if (isinf(value))
    sieve_json_append_string(out, non_finite_name(value));
  else
    sieve_text_append_double(out, value);
}

static void
json_trial(GString *out, const SieveTrial *t)
{
  g_string_append_printf(out, "{\"number\":%" G_GINT64_FORMAT ",\"status\":\"%s\",\"genotype\":", t->number,
                         sieve_status_to_string(t->status));
  sieve_json_append_string(out, t->genotype);
  g_string_append(out, ",\"fidelity\":");
  json_real(out, t->fidelity);
  g_string_append(out, ",\"metrics\":{");
  for (guint i = 0; i < sieve_result_n_metrics(t->result); i++) {
    double v = sieve_result_metric_value(t->result, i);
    if (i > 0)
      g_string_append_c(out, ',');
    sieve_json_append_string(out, sieve_result_metric_name(t->result, i));
    g_string_append_c(out, ':');
    if (isfinite(v))
      sieve_text_append_double(out, v);
    else
      sieve_json_append_string(out, non_finite_name(v));
  }
  g_string_append(out, "},\"cost_s\":");
  json_real(out, sieve_result_get_cost(t->result));
  g_string_append(out, ",\"started\":");
  json_real(out, t->started);
  g_string_append(out, ",\"finished\":");
  json_real(out, t->finished);
  if (t->worker >= 0)
    g_string_append_printf(out, ",\"worker\":%d", t->worker);
  else
    g_string_append(out, ",\"worker\":null");
  g_string_append(out, ",\"hash_kind\":");
  sieve_json_append_string(out, t->hash_kind);
  g_string_append(out, ",\"hash\":");
  sieve_json_append_string(out, t->hash);
  if (t->cached_from >= 0)
    g_string_append_printf(out, ",\"cached_from\":%" G_GINT64_FORMAT, t->cached_from);
  else
    g_string_append(out, ",\"cached_from\":null");
  g_string_append(out, ",\"reason\":");
  sieve_json_append_string(out, t->reason);
  g_string_append_c(out, '}');
}

/* ---- output ------------------------------------------------------------ */

/* Writes and empties buf; exports are written in pieces so that a large
 * study does not sit twice in memory. */
static gboolean
flush(SieveStore *store, GOutputStream *out, GString *buf, GError **error)
{
  GError *local = NULL;
  if (!g_output_stream_write_all(out, buf->str, buf->len, NULL, NULL, &local)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_IO, "%s: export: %s", sieve_store_get_path(store),
                local->message);
    g_error_free(local);
    return FALSE;
  }
  g_string_truncate(buf, 0);
  return TRUE;
}

#define FLUSH_AT 65536

gboolean
sieve_store_export(SieveStore *store, SieveExportFormat format, GOutputStream *out, GError **error)
{
  g_return_val_if_fail(store != NULL && G_IS_OUTPUT_STREAM(out), FALSE);
  g_return_val_if_fail(format == SIEVE_EXPORT_CSV || format == SIEVE_EXPORT_JSON, FALSE);
  g_autoptr(GPtrArray) trials = sieve_store_list_trials(store, FALSE, error);
  if (trials == NULL)
    return FALSE;
  g_autoptr(GString) buf = g_string_sized_new(FLUSH_AT + 4096);

  if (format == SIEVE_EXPORT_CSV) {
    /* Metric columns: names in order of first appearance. */
    g_autoptr(GPtrArray) names = g_ptr_array_new();
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < trials->len; i++) {
      const SieveResult *r = ((const SieveTrial *) trials->pdata[i])->result;
      for (guint m = 0; m < sieve_result_n_metrics(r); m++) {
        const char *name = sieve_result_metric_name(r, m);
        if (g_hash_table_add(seen, (gpointer) name))
          g_ptr_array_add(names, (gpointer) name);
      }
    }
    csv_header(buf, (const char *const[]){"number", "status", "genotype", "fidelity", NULL}, names, trial_columns + 4,
               trial_columns);
    for (guint i = 0; i < trials->len; i++) {
      csv_trial(buf, trials->pdata[i], names);
      if (buf->len >= FLUSH_AT && !flush(store, out, buf, error))
        return FALSE;
    }
  } else {
    g_string_append_c(buf, '[');
    for (guint i = 0; i < trials->len; i++) {
      g_string_append(buf, i > 0 ? ",\n" : "\n");
      json_trial(buf, trials->pdata[i]);
      if (buf->len >= FLUSH_AT && !flush(store, out, buf, error))
        return FALSE;
    }
    g_string_append(buf, trials->len > 0 ? "\n]\n" : "]\n");
  }
  return flush(store, out, buf, error);
}

/* ---- summary ----------------------------------------------------------- */

gboolean
sieve_store_export_summary(SieveStore *store, SieveExportFormat format, GOutputStream *out, GError **error)
{
  g_return_val_if_fail(store != NULL && G_IS_OUTPUT_STREAM(out), FALSE);
  g_return_val_if_fail(format == SIEVE_EXPORT_CSV || format == SIEVE_EXPORT_JSON, FALSE);
  g_autoptr(GPtrArray) trials = sieve_store_list_trials(store, FALSE, error);
  if (trials == NULL)
    return FALSE;
  gint64 counts[SIEVE_STATUS_REJECTED + 1] = {0};
  g_autoptr(GHashTable) distinct = g_hash_table_new(g_str_hash, g_str_equal);
  const char *kind = NULL;
  for (guint i = 0; i < trials->len; i++) {
    const SieveTrial *t = trials->pdata[i];
    counts[t->status]++;
    if (t->hash_kind != NULL)
      kind = t->hash_kind;
    if ((t->status == SIEVE_STATUS_OK || t->status == SIEVE_STATUS_FAILED || t->status == SIEVE_STATUS_PRUNED) &&
        t->hash != NULL)
      g_hash_table_add(distinct, t->hash);
  }
  gint64 evaluated = counts[SIEVE_STATUS_OK] + counts[SIEVE_STATUS_FAILED] + counts[SIEVE_STATUS_PRUNED];
  gint64 finished = (gint64) trials->len - counts[SIEVE_STATUS_PENDING];
  double fraction = finished > 0 ? (double) counts[SIEVE_STATUS_CACHED] / finished : 0;
  g_autoptr(GString) buf = g_string_new(NULL);
  /* The final trainings are counted apart: they are not trials of the search. */
  g_autoptr(GPtrArray) finals = sieve_store_list_finals(store, error);
  if (finals == NULL)
    return FALSE;
  gint64 final_counts[SIEVE_STATUS_REJECTED + 1] = {0};
  for (guint i = 0; i < finals->len; i++)
    final_counts[((const SieveFinal *) finals->pdata[i])->status]++;
  gint64 values[] = {trials->len, evaluated, counts[SIEVE_STATUS_OK], counts[SIEVE_STATUS_FAILED],
                     counts[SIEVE_STATUS_CACHED], counts[SIEVE_STATUS_SCREENED], counts[SIEVE_STATUS_PENDING],
                     g_hash_table_size(distinct), finals->len, final_counts[SIEVE_STATUS_OK],
                     final_counts[SIEVE_STATUS_FAILED], final_counts[SIEVE_STATUS_PENDING],
                     counts[SIEVE_STATUS_PRUNED], counts[SIEVE_STATUS_REJECTED]};
  static const char *const names[] = {"trials", "evaluated", "ok", "failed", "cached", "screened", "pending",
                                      "distinct_evaluated", "finals", "finals_ok", "finals_failed",
                                      "finals_pending", "pruned", "rejected"};
  /* Without hashes (no dedupe) nothing is known to be distinct: empty
   * (null), not a 0 that reads as "none of them". */
  const guint unknown = kind == NULL ? 7 : G_N_ELEMENTS(values);
  g_assert(strcmp(names[7], "distinct_evaluated") == 0);
  if (format == SIEVE_EXPORT_CSV) {
    for (guint i = 0; i < G_N_ELEMENTS(names); i++)
      g_string_append_printf(buf, "%s,", names[i]);
    g_string_append(buf, "cache_fraction,hash_kind\n");
    for (guint i = 0; i < G_N_ELEMENTS(values); i++)
      if (i == unknown)
        g_string_append_c(buf, ',');
      else
        g_string_append_printf(buf, "%" G_GINT64_FORMAT ",", values[i]);
    sieve_text_append_double(buf, fraction);
    g_string_append_c(buf, ',');
    csv_field(buf, kind);
    g_string_append_c(buf, '\n');
  } else {
    g_string_append_c(buf, '{');
    for (guint i = 0; i < G_N_ELEMENTS(names); i++)
      if (i == unknown)
        g_string_append_printf(buf, "\"%s\":null,", names[i]);
      else
        g_string_append_printf(buf, "\"%s\":%" G_GINT64_FORMAT ",", names[i], values[i]);
    g_string_append(buf, "\"cache_fraction\":");
    sieve_text_append_double(buf, fraction);
    g_string_append(buf, ",\"hash_kind\":");
    sieve_json_append_string(buf, kind);
    g_string_append(buf, "}\n");
  }
  return flush(store, out, buf, error);
}

gboolean
sieve_store_export_finals(SieveStore *store, SieveExportFormat format, GOutputStream *out, GError **error)
{
  g_return_val_if_fail(store != NULL && G_IS_OUTPUT_STREAM(out), FALSE);
  g_autoptr(GPtrArray) finals = sieve_store_list_finals(store, error);
  if (finals == NULL)
    return FALSE;
  /* The metrics' union, in first-seen order: one column each. */
  g_autoptr(GPtrArray) names = g_ptr_array_new();
  for (guint i = 0; i < finals->len; i++) {
    const SieveFinal *f = finals->pdata[i];
    for (guint k = 0; k < sieve_result_n_metrics(f->result); k++) {
      const char *name = sieve_result_metric_name(f->result, k);
      if (!g_ptr_array_find_with_equal_func(names, name, g_str_equal, NULL))
        g_ptr_array_add(names, (gpointer)name);
    }
  }
  g_autoptr(GString) buf = g_string_new(NULL);
  gboolean csv = format == SIEVE_EXPORT_CSV;
  if (csv) {
    csv_header(buf, (const char *const[]){"final", "trial", "status", "genotype", "epochs", "settings", NULL}, names,
               final_columns + 6, final_columns);
  } else {
    g_string_append_c(buf, '[');
  }
  for (guint i = 0; i < finals->len; i++) {
    const SieveFinal *f = finals->pdata[i];
    if (csv) {
      g_string_append_printf(buf, "%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%s,", f->number, f->trial,
                             sieve_status_to_string(f->status));
      csv_field(buf, f->genotype);
      g_string_append_c(buf, ',');
      csv_real(buf, f->epochs);
      g_string_append_c(buf, ',');
      csv_field(buf, f->settings);
      for (guint k = 0; k < names->len; k++) {
        double v;
        g_string_append_c(buf, ',');
        if (sieve_result_get_metric(f->result, names->pdata[k], &v)) {
          if (isfinite(v))
            sieve_text_append_double(buf, v);
          else
            g_string_append(buf, non_finite_name(v));
        }
      }
      g_string_append_c(buf, ',');
      csv_real(buf, sieve_result_get_cost(f->result));
      g_string_append_c(buf, ',');
      csv_real(buf, f->started);
      g_string_append_c(buf, ',');
      csv_real(buf, f->finished);
      g_string_append_c(buf, ',');
      csv_field(buf, f->reason);
      g_string_append_c(buf, '\n');
    } else {
      g_string_append_printf(buf, "%s{\"final\":%" G_GINT64_FORMAT ",\"trial\":%" G_GINT64_FORMAT ",\"status\":\"%s\","
                             "\"genotype\":", i ? "," : "", f->number, f->trial, sieve_status_to_string(f->status));
      sieve_json_append_string(buf, f->genotype);
      g_string_append(buf, ",\"epochs\":");
      json_real(buf, f->epochs);
      g_string_append(buf, ",\"settings\":");
      sieve_json_append_string(buf, f->settings);
      g_string_append(buf, ",\"metrics\":{");
      for (guint k = 0; k < sieve_result_n_metrics(f->result); k++) {
        if (k)
          g_string_append_c(buf, ',');
        sieve_json_append_string(buf, sieve_result_metric_name(f->result, k));
        g_string_append_c(buf, ':');
        json_real(buf, sieve_result_metric_value(f->result, k));
      }
      g_string_append(buf, "},\"cost_s\":");
      json_real(buf, sieve_result_get_cost(f->result));
      g_string_append(buf, ",\"started\":");
      json_real(buf, f->started);
      g_string_append(buf, ",\"finished\":");
      json_real(buf, f->finished);
      g_string_append(buf, ",\"reason\":");
      sieve_json_append_string(buf, f->reason);
      g_string_append_c(buf, '}');
    }
    if (buf->len > FLUSH_AT && !flush(store, out, buf, error))
      return FALSE;
  }
  if (!csv)
    g_string_append(buf, "]\n");
  return flush(store, out, buf, error);
}

gboolean
sieve_store_export_intermediate(SieveStore *store, SieveExportFormat format, GOutputStream *out, GError **error)
{
  g_return_val_if_fail(store != NULL && G_IS_OUTPUT_STREAM(out), FALSE);
  g_autoptr(GArray) values = sieve_store_list_intermediate(store, -1, error);
  if (values == NULL)
    return FALSE;
  gboolean csv = format == SIEVE_EXPORT_CSV;
  g_autoptr(GString) buf = g_string_new(csv ? "trial,step,fidelity,value\n" : "[");
  for (guint i = 0; i < values->len; i++) {
    const SieveIntermediate *v = &g_array_index(values, SieveIntermediate, i);
    if (csv) {
      g_string_append_printf(buf, "%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",", v->trial, v->step);
      csv_real(buf, v->fidelity);
      g_string_append_c(buf, ',');
      if (isfinite(v->value))
        sieve_text_append_double(buf, v->value);
      else
        g_string_append(buf, non_finite_name(v->value));
      g_string_append_c(buf, '\n');
    } else {
      g_string_append_printf(buf, "%s{\"trial\":%" G_GINT64_FORMAT ",\"step\":%" G_GINT64_FORMAT ",\"fidelity\":",
                             i ? "," : "", v->trial, v->step);
      json_real(buf, v->fidelity);
      /* A value is a metric: NaN (a diverged training's, which the pruners
       * read as such) is "nan", not null, as the trials' export writes it. */
      g_string_append(buf, ",\"value\":");
      if (isfinite(v->value))
        sieve_text_append_double(buf, v->value);
      else
        sieve_json_append_string(buf, non_finite_name(v->value));
      g_string_append_c(buf, '}');
    }
    if (buf->len > FLUSH_AT && !flush(store, out, buf, error))
      return FALSE;
  }
  if (!csv)
    g_string_append(buf, "]\n");
  return flush(store, out, buf, error);
}
