/* sieve: the summary printed at the end of a study: the outcome counts and
 * the best trials by the objective, and for several objectives the Pareto
 * front. */
#include <math.h>
#include <string.h>

#include "engine/engine-private.h"

/* ---- one objective ---------------------------------------------------- */

static void print_top(FILE *out, GPtrArray *trials, GArray *ranked, const char *objective, gboolean maximize,
                      guint top, gboolean by_fidelity);
static gboolean print_finals(FILE *out, SieveStore *store, GPtrArray *trials, const char *objective, GError **error);

gboolean
sieve_print_summary(FILE *out, SieveStore *store, const char *objective, gboolean maximize, guint top,
                    GError **error)
{
  g_autoptr(GPtrArray) trials = sieve_store_list_trials(store, FALSE, error);
  if (trials == NULL)
    return FALSE;
  guint counts[SIEVE_STATUS_REJECTED + 1] = {0};
  double cost = 0;
  /* Distinct hashes among the evaluated trials: with dedupe, each evaluation
   * should be a network not evaluated before. */
  g_autoptr(GHashTable) hashes = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < trials->len; i++) {
    const SieveTrial *t = trials->pdata[i];
    counts[t->status]++;
    if ((t->status == SIEVE_STATUS_OK || t->status == SIEVE_STATUS_FAILED || t->status == SIEVE_STATUS_PRUNED) &&
        t->hash != NULL)
      g_hash_table_add(hashes, t->hash);
    cost += sieve_result_get_cost(t->result);
  }
  gboolean by_fidelity;
  g_autoptr(GArray) ranked = sieve_trials_rank(trials, objective, maximize, &by_fidelity);
  guint distinct = g_hash_table_size(hashes);

  fprintf(out, "\n%u trials: %u ok, %u failed, %u pending", trials->len, counts[SIEVE_STATUS_OK],
          counts[SIEVE_STATUS_FAILED], counts[SIEVE_STATUS_PENDING]);
  if (counts[SIEVE_STATUS_PRUNED] > 0)
    fprintf(out, ", %u pruned", counts[SIEVE_STATUS_PRUNED]);
  fprintf(out, "; %.3g s of evaluation\n", cost);
  if (counts[SIEVE_STATUS_CACHED] > 0 || counts[SIEVE_STATUS_SCREENED] > 0 || distinct > 0) {
    guint evaluated = counts[SIEVE_STATUS_OK] + counts[SIEVE_STATUS_FAILED] + counts[SIEVE_STATUS_PRUNED];
    guint finished = trials->len - counts[SIEVE_STATUS_PENDING];
    fprintf(out,
            "pipeline: %u evaluated (%u distinct hashes), %u answered from the cache (%.1f%% of %u finished "
            "proposals), %u screened out\n",
            evaluated, distinct, counts[SIEVE_STATUS_CACHED],
            finished ? 100.0 * counts[SIEVE_STATUS_CACHED] / finished : 0.0, finished,
            counts[SIEVE_STATUS_SCREENED]);
  }
  if (counts[SIEVE_STATUS_REJECTED] > 0)
    fprintf(out, "constraints: %u proposals rejected before evaluation (no evaluation spent on them)\n",
            counts[SIEVE_STATUS_REJECTED]);
  if (ranked->len > 0 && top > 0)
    print_top(out, trials, ranked, objective, maximize, top, by_fidelity);
  return print_finals(out, store, trials, objective, error);
}

/* The final trainings (sieve final), apart from the search's ranking: each
 * beside the trial it trained again, so a search figure and a full-budget
 * figure are never read as one. */
static gboolean
print_finals(FILE *out, SieveStore *store, GPtrArray *trials, const char *objective, GError **error)
{
  g_autoptr(GPtrArray) finals = sieve_store_list_finals(store, error);
  if (finals == NULL)
    return FALSE;
  if (finals->len == 0)
    return TRUE;
  guint done = 0;
  for (guint i = 0; i < finals->len; i++)
    done += ((const SieveFinal *) finals->pdata[i])->status != SIEVE_STATUS_PENDING;
  fprintf(out, "final trainings (sieve final; not ranked with the search): %u done, %u pending\n", done,
          finals->len - done);
  fprintf(out, "%5s %7s %12s %12s  %s\n", "final", "trial", "search", "final", "status");
  for (guint i = 0; i < finals->len; i++) {
    const SieveFinal *f = finals->pdata[i];
    double searched = NAN, final = NAN;
    /* Trials are numbered from 0 in order: the number is the index. */
    if (f->trial >= 0 && (guint64) f->trial < trials->len)
      sieve_result_get_metric(((const SieveTrial *) trials->pdata[f->trial])->result, objective, &searched);
    sieve_result_get_metric(f->result, objective, &final);
    fprintf(out, "%5" G_GINT64_FORMAT " %7" G_GINT64_FORMAT " %12.6g %12.6g  %s\n", f->number, f->trial, searched,
            final, sieve_status_to_string(f->status));
  }
  return TRUE;
}

static void
print_top(FILE *out, GPtrArray *trials, GArray *ranked, const char *objective, gboolean maximize, guint top,
          gboolean by_fidelity)
{
  /* Columns: the objective, then up to four other metrics of the best trial. */
  const SieveResult *first = ((const SieveTrial *) trials->pdata[g_array_index(ranked, guint, 0)])->result;
  g_autoptr(GPtrArray) columns = g_ptr_array_new();
  g_ptr_array_add(columns, (gpointer) objective);
  for (guint i = 0; i < sieve_result_n_metrics(first) && columns->len < 5; i++)
    if (strcmp(sieve_result_metric_name(first, i), objective) != 0)
      g_ptr_array_add(columns, (gpointer) sieve_result_metric_name(first, i));

  guint n = MIN(top, ranked->len);
  if (by_fidelity)
    fprintf(out, "top %u by %s (%s) at the highest fidelity each configuration reached (higher fidelity first):\n",
            n, objective, maximize ? "maximize" : "minimize");
  else
    fprintf(out, "top %u by %s (%s):\n", n, objective, maximize ? "maximize" : "minimize");
  GString *line = g_string_new(NULL);
  g_string_append_printf(line, "%4s %7s", "rank", "trial");
  if (by_fidelity)
    g_string_append_printf(line, " %9s", "fidelity");
  for (guint c = 0; c < columns->len; c++)
    g_string_append_printf(line, " %*s", (int) MAX(12, strlen(columns->pdata[c])), (const char *) columns->pdata[c]);
  g_string_append(line, "  genotype");
  fprintf(out, "%s\n", line->str);
  for (guint r = 0; r < n; r++) {
    const SieveTrial *t = trials->pdata[g_array_index(ranked, guint, r)];
    g_string_printf(line, "%4u %7" G_GINT64_FORMAT, r + 1, t->number);
    if (by_fidelity) {
      if (isnan(t->fidelity))
        g_string_append_printf(line, " %9s", "default");
      else
        g_string_append_printf(line, " %9.4g", t->fidelity);
    }
    for (guint c = 0; c < columns->len; c++) {
      double v;
      int width = (int) MAX(12, strlen(columns->pdata[c]));
      if (sieve_result_get_metric(t->result, columns->pdata[c], &v))
        g_string_append_printf(line, " %*.6g", width, v);
      else
        g_string_append_printf(line, " %*s", width, "-");
    }
    g_string_append_printf(line, "  %s", t->genotype);
    fprintf(out, "%s\n", line->str);
  }
  g_string_free(line, TRUE);
}

/* ---- the Pareto front --------------------------------------------------- */

/* Rows printed before the rest of a large front is only counted. */
#define MAX_FRONT_ROWS 50

gboolean
sieve_print_pareto(FILE *out, SieveStore *store, const char *const *metrics, const gboolean *maximize, guint n,
                   GError **error)
{
  g_autoptr(GPtrArray) trials = sieve_store_list_trials(store, FALSE, error);
  if (trials == NULL)
    return FALSE;
  g_autoptr(GArray) front = sieve_trials_pareto_front(trials, metrics, maximize, n);
  double fidelity = front->len > 0 ? ((const SieveTrial *) trials->pdata[g_array_index(front, guint, 0)])->fidelity
                                   : NAN;
  GString *line = g_string_new(NULL);
  for (guint k = 0; k < n; k++)
    g_string_append_printf(line, "%s%s (%s)", k ? ", " : "", metrics[k], maximize[k] ? "maximize" : "minimize");
  if (isnan(fidelity))
    fprintf(out, "Pareto front over %s: %u non-dominated trials\n", line->str, front->len);
  else
    fprintf(out, "Pareto front over %s at fidelity %.4g (the highest reached): %u non-dominated trials\n",
            line->str, fidelity, front->len);
  if (front->len == 0) {
    g_string_free(line, TRUE);
    return TRUE;
  }
  g_string_printf(line, "%7s", "trial");
  for (guint k = 0; k < n; k++)
    g_string_append_printf(line, " %*s", (int) MAX(12, strlen(metrics[k])), metrics[k]);
  fprintf(out, "%s  genotype\n", line->str);
  for (guint r = 0; r < front->len && r < MAX_FRONT_ROWS; r++) {
    const SieveTrial *t = trials->pdata[g_array_index(front, guint, r)];
    g_string_printf(line, "%7" G_GINT64_FORMAT, t->number);
    for (guint k = 0; k < n; k++) {
      double v = NAN;
      sieve_result_get_metric(t->result, metrics[k], &v);
      g_string_append_printf(line, " %*.6g", (int) MAX(12, strlen(metrics[k])), v);
    }
    fprintf(out, "%s  %s\n", line->str, t->genotype);
  }
  if (front->len > MAX_FRONT_ROWS)
    fprintf(out, "... and %u more (sieve export lists every trial)\n", front->len - MAX_FRONT_ROWS);
  g_string_free(line, TRUE);
  return TRUE;
}
