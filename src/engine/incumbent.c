/* sieve: the incumbent rule, one place for the engine, the summary, the
 * report and Lua: in a multi-fidelity study (hyperband, BOHB store one
 * trial per rung) a value at a lower fidelity is no rival for one at a
 * higher, so the best is the best at the highest fidelity reached; NAN
 * fidelity is the evaluator's default, its full one. */
#include <math.h>

#include "engine/engine-private.h"

/* A cached trial answered from another store (dedupe.cache_from) carries a
 * real measurement of its candidate, which this study holds nowhere else; one
 * answered from this store's own trial (cached_from) is that trial's result
 * again, already ranked once. */
gboolean
sieve_trial_is_ranked(const SieveTrial *trial)
{
  return trial->status == SIEVE_STATUS_OK || (trial->status == SIEVE_STATUS_CACHED && trial->cached_from < 0);
}

/* What ranked_on needs, built when a trial answered from this store's
 * own trial is met: trial number -> SieveTrial*, and the twins ranked so
 * far ("source|values" texts). */
typedef struct {
  GHashTable *by_number;
  GHashTable *twins;
} Twins;

static void
twins_clear(Twins *t)
{
  g_clear_pointer(&t->by_number, g_hash_table_unref);
  g_clear_pointer(&t->twins, g_hash_table_unref);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Twins, twins_clear)

/* Whether trial t is a point of a ranking on metrics[0..n): a ranked trial
 * (sieve_trial_is_ranked), or one answered from this store's own trial
 * whose values of these metrics are not its source's.  A metric measured
 * before evaluation on the candidate's own network (params, macs, latency)
 * may differ between twins (an isomorphic one without the dead branches:
 * the same accuracy with fewer parameters), and such a trial is a point
 * nothing else stands for: the Pareto front left it out.  Twins of one
 * source with the same values are one point, ranked once (the first).
 * The trials come in the order of the store (by number). */
static gboolean
ranked_on(GPtrArray *trials, Twins *twins, const SieveTrial *t, const char *const *metrics, guint n)
{
  if (sieve_trial_is_ranked(t))
    return TRUE;
  if (t->status != SIEVE_STATUS_CACHED)
    return FALSE;
  if (twins->by_number == NULL) {
    twins->by_number = g_hash_table_new(g_int64_hash, g_int64_equal);
    for (guint i = 0; i < trials->len; i++)
      g_hash_table_insert(twins->by_number, &((SieveTrial *) trials->pdata[i])->number, trials->pdata[i]);
    twins->twins = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  }
  const SieveTrial *source = g_hash_table_lookup(twins->by_number, &t->cached_from);
  if (source == NULL || !sieve_trial_is_ranked(source))
    return FALSE;
  gboolean differs = FALSE;
  GString *key = g_string_new(NULL);
  g_string_append_printf(key, "%" G_GINT64_FORMAT, t->cached_from);
  for (guint k = 0; k < n; k++) {
    double a, b;
    gboolean has_a = sieve_result_get_metric(t->result, metrics[k], &a);
    gboolean has_b = sieve_result_get_metric(source->result, metrics[k], &b);
    if (has_a != has_b || (has_a && a != b && !(isnan(a) && isnan(b))))
      differs = TRUE;
    char text[G_ASCII_DTOSTR_BUF_SIZE];
    g_string_append_printf(key, "|%s", has_a ? g_ascii_dtostr(text, sizeof text, a) : "-");
  }
  if (!differs) {
    g_string_free(key, TRUE);
    return FALSE;
  }
  return g_hash_table_add(twins->twins, g_string_free(key, FALSE));
}

/* Whether value v of trial t takes part in a ranking: not NaN; and for a
 * result copied from another store, finite, as every objective this study
 * measures itself is (that store checked its own objectives, not ours; a
 * copy is checked when it is made, fits_this_study in engine.c, but a store
 * may hold copies made before that check). */
static gboolean
rankable(const SieveTrial *t, double v)
{
  return t->status == SIEVE_STATUS_CACHED ? isfinite(v) : !isnan(v);
}

gboolean
sieve_incumbent_better(double fidelity, double value, double best_fidelity, double best_value, gboolean maximize)
{
  if (isnan(value))
    return FALSE;
  if (isnan(best_value))
    return TRUE;
  fidelity = isnan(fidelity) ? INFINITY : fidelity;
  best_fidelity = isnan(best_fidelity) ? INFINITY : best_fidelity;
  if (fidelity != best_fidelity)
    return fidelity > best_fidelity;
  return maximize ? value > best_value : value < best_value;
}

typedef struct {
  guint index;
  gint64 number;
  double value;
  double fidelity;
} Ranked;

static gint
compare_ranked(gconstpointer a, gconstpointer b, gpointer maximize)
{
  const Ranked *x = a, *y = b;
  if (sieve_incumbent_better(x->fidelity, x->value, y->fidelity, y->value, GPOINTER_TO_INT(maximize)))
    return -1;
  if (sieve_incumbent_better(y->fidelity, y->value, x->fidelity, x->value, GPOINTER_TO_INT(maximize)))
    return 1;
  return x->number < y->number ? -1 : x->number > y->number;
}

GArray *
sieve_trials_rank(GPtrArray *trials, const char *objective, gboolean maximize, gboolean *by_fidelity)
{
  g_autoptr(GArray) ranked = g_array_new(FALSE, FALSE, sizeof(Ranked));
  g_auto(Twins) twins = {0};
  gboolean mixed = FALSE;
  for (guint i = 0; i < trials->len; i++) {
    const SieveTrial *t = trials->pdata[i];
    double v;
    if (!ranked_on(trials, &twins, t, &objective, 1) || !sieve_result_get_metric(t->result, objective, &v) ||
        !rankable(t, v))
      continue;
    Ranked r = {i, t->number, v, isnan(t->fidelity) ? INFINITY : t->fidelity};
    if (ranked->len > 0 && r.fidelity != g_array_index(ranked, Ranked, 0).fidelity)
      mixed = TRUE;
    g_array_append_val(ranked, r);
  }
  g_array_sort_with_data(ranked, compare_ranked, GINT_TO_POINTER(maximize));
  /* Rungs of one configuration (genotype): only its first in this order,
   * the trial at the highest fidelity it reached (the best one there). */
  g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
  GArray *indices = g_array_sized_new(FALSE, FALSE, sizeof(guint), ranked->len);
  for (guint k = 0; k < ranked->len; k++) {
    guint i = g_array_index(ranked, Ranked, k).index;
    const char *genotype = ((const SieveTrial *) trials->pdata[i])->genotype;
    if (mixed && genotype != NULL && !g_hash_table_add(seen, (gpointer) genotype))
      continue;
    g_array_append_val(indices, i);
  }
  if (by_fidelity)
    *by_fidelity = mixed;
  return indices;
}

GArray *
sieve_trials_pareto_points(GPtrArray *trials, const char *const *metrics, guint n)
{
  GArray *points = g_array_new(FALSE, FALSE, sizeof(guint));
  g_auto(Twins) twins = {0};
  double top = -INFINITY;
  for (guint i = 0; i < trials->len; i++) {
    const SieveTrial *t = trials->pdata[i];
    gboolean complete = ranked_on(trials, &twins, t, metrics, n);
    for (guint k = 0; k < n && complete; k++) {
      double v;
      complete = sieve_result_get_metric(t->result, metrics[k], &v) && rankable(t, v);
    }
    if (!complete)
      continue;
    /* A point at a lower fidelity is no rival for one at a higher, as for
     * the incumbent: only the highest fidelity reached is kept. */
    double f = isnan(t->fidelity) ? INFINITY : t->fidelity;
    if (f > top) {
      top = f;
      g_array_set_size(points, 0);
    }
    if (f == top)
      g_array_append_val(points, i);
  }
  return points;
}

/* One trial's values, oriented: larger is better. */
typedef struct {
  guint index;
  gint64 number;
  const double *values;
} FrontPoint;

static gboolean
dominates(const FrontPoint *a, const FrontPoint *b, guint n)
{
  gboolean strictly = FALSE;
  for (guint k = 0; k < n; k++) {
    if (a->values[k] < b->values[k])
      return FALSE;
    if (a->values[k] > b->values[k])
      strictly = TRUE;
  }
  return strictly;
}

static gint
compare_first(gconstpointer a, gconstpointer b)
{
  const FrontPoint *x = a, *y = b;
  if (x->values[0] != y->values[0])
    return x->values[0] > y->values[0] ? -1 : 1;
  return x->number < y->number ? -1 : x->number > y->number;
}

GArray *
sieve_trials_pareto_front(GPtrArray *trials, const char *const *metrics, const gboolean *maximize, guint n)
{
  g_autoptr(GArray) eligible = sieve_trials_pareto_points(trials, metrics, n);
  g_autofree double *values = g_new(double, (gsize) eligible->len * n + 1);
  g_autoptr(GArray) points = g_array_new(FALSE, FALSE, sizeof(FrontPoint));
  for (guint i = 0; i < eligible->len; i++) {
    guint index = g_array_index(eligible, guint, i);
    const SieveTrial *t = trials->pdata[index];
    double *v = values + (gsize) i * n;
    for (guint k = 0; k < n; k++) {
      v[k] = NAN;
      sieve_result_get_metric(t->result, metrics[k], &v[k]);
      v[k] = maximize[k] ? v[k] : -v[k];
    }
    FrontPoint p = {index, t->number, v};
    g_array_append_val(points, p);
  }
  /* O(n^2) over the finished trials: fine for a summary or a script's call. */
  g_autoptr(GArray) front = g_array_new(FALSE, FALSE, sizeof(FrontPoint));
  for (guint i = 0; i < points->len; i++) {
    const FrontPoint *p = &g_array_index(points, FrontPoint, i);
    gboolean dominated = FALSE;
    for (guint j = 0; j < points->len && !dominated; j++)
      dominated = j != i && dominates(&g_array_index(points, FrontPoint, j), p, n);
    if (!dominated)
      g_array_append_val(front, *p);
  }
  g_array_sort(front, compare_first);
  GArray *indices = g_array_sized_new(FALSE, FALSE, sizeof(guint), front->len);
  for (guint i = 0; i < front->len; i++)
    g_array_append_val(indices, g_array_index(front, FrontPoint, i).index);
  return indices;
}
