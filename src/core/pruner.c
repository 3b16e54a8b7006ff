/* sieve: pruners, the experiment's `pruner:` section: whether a running
 * evaluation, judged on its intermediate values, should stop now.
 *
 * The rules are Optuna's (3.1, optuna/pruners/_percentile.py and
 * _patient.py), so that a study moved from Optuna prunes the same trials:
 *   median / percentile (PercentilePruner, MedianPruner = percentile 50):
 *     no decision before startup_trials trials completed, before step
 *     warmup_steps, or on a step that is not the first reported in its
 *     interval (interval_steps counted from warmup_steps); a trial whose
 *     values are all NaN is pruned; otherwise it is pruned when its best
 *     value so far is worse than the given percentile (linear interpolation,
 *     numpy's nanpercentile) of the completed trials' values at the same
 *     step, when at least min_trials of them reported that step.
 *   patience (PatientPruner around no pruner): pruned when the best of its
 *     last patience + 1 values is worse than the best before them by more
 *     than min_delta (equal values, a plateau, go on).
 * "Completed" means finished OK: a pruned or failed trial's curve is never
 * the reference, as in Optuna.
 */
#include <math.h>
#include <stdlib.h>

#include "core/core-private.h"

static const char *const kinds[] = {"median", "percentile", "patience", NULL};
static const SieveOptionSpec pruner_spec[] = {
    SIEVE_OPTION_CHOICE("kind", NULL, kinds, "median, percentile or patience"),
    SIEVE_OPTION_FLOAT("percentile", "25", 0, 100,
                       "percentile: prune below this percentile of the completed trials (median: 50)"),
    SIEVE_OPTION_INT("startup_trials", "5", 0, 1e9, "median, percentile: completed trials before any pruning"),
    SIEVE_OPTION_INT("warmup_steps", "0", 0, 1e12, "median, percentile: steps of a trial before it may be pruned"),
    SIEVE_OPTION_INT("interval_steps", "1", 1, 1e12, "median, percentile: judge once per this many steps"),
    SIEVE_OPTION_INT("min_trials", "1", 1, 1e9,
                     "median, percentile: completed trials that reported the step, needed to judge it"),
    SIEVE_OPTION_INT("patience", "3", 0, 1e12,
                     "patience: the last patience + 1 values are judged against the best before them"),
    SIEVE_OPTION_FLOAT("min_delta", "0", 0, INFINITY,
                       "patience: stopped when their best is worse than the best before by more than this (a "
                       "plateau goes on)"),
    SIEVE_OPTION_END,
};

typedef enum { KIND_MEDIAN, KIND_PERCENTILE, KIND_PATIENCE } Kind;

/* The completed trials' values at one step, in the order the trials were
 * added, with the sorted non-NaN values of the first sorted_of of them
 * (computed when judged, kept until another trial adds one). */
typedef struct {
  GArray *values; /* double */
  GArray *seqs;   /* gint64: the completed trial each value is of, by order added (ascending) */
  GArray *sorted; /* double */
  guint sorted_of;
} Reference;

struct _SievePruner {
  Kind kind;
  gboolean maximize;
  double percentile;
  gint64 startup_trials, warmup_steps, interval_steps, min_trials, patience;
  double min_delta;
  GMutex mutex;
  /* Completed trials' curves: step -> Reference, and their count. */
  GHashTable *by_step;
  gint64 n_completed;
};

/* A running trial's values as judged so far: the best of each prefix and,
 * for patience, the window of its last patience + 1 values as a monotonic
 * queue (indices whose values strictly worsen from the front), so that a
 * report appended is judged in O(1) amortised. */
struct _SievePrunerCurve {
  gint64 seen;    /* the completed trials it is judged against: the first seen added */
  guint n;        /* values judged so far */
  GArray *best;   /* double: best[i] = the best of values[0..i], NaN while all are NaN */
  GArray *window; /* guint indices, from window_head on */
  guint window_head;
};

static void
reference_free(Reference *r)
{
  g_array_unref(r->values);
  g_array_unref(r->seqs);
  if (r->sorted)
    g_array_unref(r->sorted);
  g_free(r);
}

const SieveOptionSpec *
sieve_pruner_spec(void)
{
  return pruner_spec;
}

/* Every option written applies to the kind: one of another kind would be
 * silently ignored ({kind: patience, warmup_steps: 5} judging from step 1).
 * Optuna's PatientPruner has no warm-up of its own (it wraps another
 * pruner for that); median is PercentilePruner(50), so percentile: 50 is
 * its default written out. */
static gboolean
check_kind_options(const SieveOptions *options, Kind kind, const char *kind_name, GError **error)
{
  static const char *const rank_options[] = {"startup_trials", "warmup_steps", "interval_steps", "min_trials", NULL};
  static const char *const patience_options[] = {"patience", "min_delta", NULL};
  for (const SieveOptionSpec *o = pruner_spec; o->name; o++) {
    if (g_str_equal(o->name, "kind") || !sieve_options_is_set(options, o->name))
      continue;
    gboolean applies = kind == KIND_PATIENCE ? g_strv_contains(patience_options, o->name)
                                             : g_strv_contains(rank_options, o->name);
    const char *which = kind == KIND_PATIENCE ? "patience, min_delta" : "startup_trials, warmup_steps, "
                                                                        "interval_steps, min_trials";
    if (g_str_equal(o->name, "percentile") && kind != KIND_PATIENCE)
      applies = kind == KIND_PERCENTILE || sieve_options_get_double(options, "percentile") == 50.0;
    if (applies)
      continue;
    const SieveNode *at = sieve_options_node(options, o->name);
    if (g_str_equal(o->name, "percentile") && kind == KIND_MEDIAN)
      sieve_node_set_error(error, at, "pruner option 'percentile' does not apply to kind median, which is percentile "
                                      "50: write kind: percentile for another");
    else
      sieve_node_set_error(error, at, "pruner option '%s' does not apply to kind %s (its options: %s%s)", o->name,
                           kind_name, which, kind == KIND_PERCENTILE ? ", percentile" : "");
    return FALSE;
  }
  return TRUE;
}

SievePruner *
sieve_pruner_new(const SieveNode *node, const char *base_dir, gboolean maximize, GError **error)
{
  g_return_val_if_fail(node != NULL, NULL);
  if (sieve_node_kind(node) != SIEVE_NODE_MAP) {
    sieve_node_set_error(error, node, "'pruner' must be a map {kind: median, warmup_steps: 2, startup_trials: 5}");
    return NULL;
  }
  g_autoptr(SieveOptions) options = sieve_options_new(pruner_spec, node, NULL, base_dir, "pruner", error);
  if (options == NULL)
    return NULL;
  const char *kind_name = sieve_options_get_string(options, "kind");
  Kind kind = g_str_equal(kind_name, "median")       ? KIND_MEDIAN
              : g_str_equal(kind_name, "percentile") ? KIND_PERCENTILE
                                                     : KIND_PATIENCE;
  if (!check_kind_options(options, kind, kind_name, error))
    return NULL;
  SievePruner *p = g_new0(SievePruner, 1);
  p->kind = kind;
  p->maximize = maximize;
  p->percentile = p->kind == KIND_MEDIAN ? 50.0 : sieve_options_get_double(options, "percentile");
  p->startup_trials = sieve_options_get_int(options, "startup_trials");
  p->warmup_steps = sieve_options_get_int(options, "warmup_steps");
  p->interval_steps = sieve_options_get_int(options, "interval_steps");
  p->min_trials = sieve_options_get_int(options, "min_trials");
  p->patience = sieve_options_get_int(options, "patience");
  p->min_delta = sieve_options_get_double(options, "min_delta");
  g_mutex_init(&p->mutex);
  p->by_step = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, (GDestroyNotify) reference_free);
  return p;
}

void
sieve_pruner_free(SievePruner *pruner)
{
  if (pruner == NULL)
    return;
  g_hash_table_unref(pruner->by_step);
  g_mutex_clear(&pruner->mutex);
  g_free(pruner);
}

void
sieve_pruner_add_completed(SievePruner *pruner, const SieveIntermediate *values, guint n)
{
  g_return_if_fail(pruner != NULL);
  g_mutex_lock(&pruner->mutex);
  for (guint i = 0; i < n; i++) {
    Reference *at = g_hash_table_lookup(pruner->by_step, &values[i].step);
    if (at == NULL) {
      at = g_new0(Reference, 1);
      at->values = g_array_new(FALSE, FALSE, sizeof(double));
      at->seqs = g_array_new(FALSE, FALSE, sizeof(gint64));
      g_hash_table_insert(pruner->by_step, g_memdup2(&values[i].step, sizeof(gint64)), at);
    }
    g_array_append_val(at->values, values[i].value);
    g_array_append_val(at->seqs, pruner->n_completed);
  }
  pruner->n_completed++;
  g_mutex_unlock(&pruner->mutex);
}

gint64
sieve_pruner_count_completed(SievePruner *pruner)
{
  g_return_val_if_fail(pruner != NULL, 0);
  g_mutex_lock(&pruner->mutex);
  gint64 n = pruner->n_completed;
  g_mutex_unlock(&pruner->mutex);
  return n;
}

static int
compare_double(const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* How many of the step's values are of the first seen completed trials
 * (their seqs ascend: a binary search). */
static guint
reference_count(const Reference *r, gint64 seen)
{
  guint lo = 0, hi = r->seqs->len;
  while (lo < hi) {
    guint mid = lo + (hi - lo) / 2;
    if (g_array_index(r->seqs, gint64, mid) < seen)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* numpy.nanpercentile with its default linear interpolation over the
 * step's first count values; NAN when fewer than min values (Optuna counts
 * NaNs towards min_trials, then takes the percentile of the others; so do
 * we). */
static double
percentile_of(Reference *r, guint count, double q, gint64 min_count)
{
  if ((gint64) count < min_count)
    return NAN;
  if (r->sorted == NULL || r->sorted_of != count) {
    if (r->sorted == NULL)
      r->sorted = g_array_new(FALSE, FALSE, sizeof(double));
    g_array_set_size(r->sorted, 0);
    for (guint i = 0; i < count; i++)
      if (!isnan(g_array_index(r->values, double, i)))
        g_array_append_val(r->sorted, g_array_index(r->values, double, i));
    qsort(r->sorted->data, r->sorted->len, sizeof(double), compare_double);
    r->sorted_of = count;
  }
  guint n = r->sorted->len;
  if (n == 0)
    return NAN;
  const double *v = (const double *) r->sorted->data;
  double pos = q / 100.0 * (n - 1);
  guint lo = (guint) floor(pos), hi = MIN(lo + 1, n - 1);
  /* numpy's _lerp, to the last bit: from the upper value when the weight
   * is >= 0.5 (a + d t and b - d (1 - t) round differently, and a trial's
   * value equal to the percentile is kept, not pruned). */
  double d = v[hi] - v[lo], t = pos - lo;
  return t >= 0.5 ? v[hi] - d * (1 - t) : v[lo] + d * t;
}

/* Whether a is better than b in the objective's direction, NaN the worst
 * (numpy's nanmax / nanmin skip it). */
static gboolean
better(const SievePruner *p, double a, double b)
{
  return !isnan(a) && (isnan(b) || (p->maximize ? a > b : a < b));
}

SievePrunerCurve *
sieve_pruner_curve_new(gint64 seen)
{
  SievePrunerCurve *c = g_new0(SievePrunerCurve, 1);
  c->seen = seen;
  c->best = g_array_new(FALSE, FALSE, sizeof(double));
  c->window = g_array_new(FALSE, FALSE, sizeof(guint));
  return c;
}

void
sieve_pruner_curve_free(SievePrunerCurve *curve)
{
  if (curve == NULL)
    return;
  g_array_unref(curve->best);
  g_array_unref(curve->window);
  g_free(curve);
}

static void
window_push(const SievePruner *p, SievePrunerCurve *c, const SieveIntermediate *values, guint i)
{
  if (isnan(values[i].value))
    return;
  /* An earlier value no better than this one is never the window's best again. */
  while (c->window->len > c->window_head &&
         !better(p, values[g_array_index(c->window, guint, c->window->len - 1)].value, values[i].value))
    g_array_set_size(c->window, c->window->len - 1);
  g_array_append_val(c->window, i);
}

/* Brings the curve's prefix bests and window up to values[0..n), of which
 * values[changed..n) are new or changed since the last call. */
static void
curve_update(const SievePruner *p, SievePrunerCurve *c, const SieveIntermediate *values, guint n, guint changed)
{
  gboolean appended = changed >= c->n && n >= c->n;
  changed = MIN(changed, MIN(c->n, n));
  g_array_set_size(c->best, n);
  double *best = (double *) c->best->data;
  for (guint i = changed; i < n; i++)
    best[i] = i > 0 && !better(p, values[i].value, best[i - 1]) ? best[i - 1] : values[i].value;
  if (p->kind == KIND_PATIENCE) {
    guint from = changed;
    if (!appended) {
      /* A value before the end changed (a step reported out of order; one
       * reported again is ignored before it gets here): the window is built
       * again, O(patience). */
      g_array_set_size(c->window, 0);
      c->window_head = 0;
      from = (gint64) n > p->patience + 1 ? n - (guint) p->patience - 1 : 0;
    }
    for (guint i = from; i < n; i++)
      window_push(p, c, values, i);
    guint split = (gint64) n > p->patience + 1 ? n - (guint) p->patience - 1 : 0;
    while (c->window->len > c->window_head && g_array_index(c->window, guint, c->window_head) < split)
      c->window_head++;
    if (c->window_head > 64 && c->window_head * 2 > c->window->len) {
      g_array_remove_range(c->window, 0, c->window_head);
      c->window_head = 0;
    }
  }
  c->n = n;
}

/* Optuna's PatientPruner: the best of the last patience + 1 values is no
 * better (by min_delta) than the best before them. */
static gboolean
judge_patience(const SievePruner *p, const SievePrunerCurve *c, const SieveIntermediate *values, guint n)
{
  if ((gint64) n <= p->patience + 1)
    return FALSE;
  guint split = n - (guint) p->patience - 1;
  double before = g_array_index(c->best, double, split - 1);
  double after = c->window->len > c->window_head ? values[g_array_index(c->window, guint, c->window_head)].value : NAN;
  return p->maximize ? before - p->min_delta > after : before + p->min_delta < after;
}

static gboolean
judge_percentile(SievePruner *p, const SievePrunerCurve *c, const SieveIntermediate *values, guint n)
{
  gint64 completed = MIN(p->n_completed, c->seen);
  if (completed == 0 || completed < p->startup_trials)
    return FALSE;
  gint64 step = values[n - 1].step;
  if (step < p->warmup_steps)
    return FALSE;
  /* Judged only on the first step reported in each interval. */
  gint64 nearest_lower = (step - p->warmup_steps) / p->interval_steps * p->interval_steps + p->warmup_steps;
  gint64 second_last = n >= 2 ? values[n - 2].step : -1;
  if (!(second_last < nearest_lower))
    return FALSE;
  double best = g_array_index(c->best, double, n - 1);
  if (isnan(best))
    return TRUE;
  Reference *at = g_hash_table_lookup(p->by_step, &step);
  if (at == NULL)
    return FALSE;
  double ref = percentile_of(at, reference_count(at, c->seen), p->maximize ? 100.0 - p->percentile : p->percentile,
                             p->min_trials);
  if (isnan(ref))
    return FALSE;
  return p->maximize ? best < ref : best > ref;
}

gboolean
sieve_pruner_judge_curve(SievePruner *pruner, SievePrunerCurve *curve, const SieveIntermediate *values, guint n,
                         guint changed)
{
  g_return_val_if_fail(pruner != NULL && curve != NULL, FALSE);
  curve_update(pruner, curve, values, n, changed);
  if (n == 0)
    return FALSE;
  g_mutex_lock(&pruner->mutex);
  gboolean prune = pruner->kind == KIND_PATIENCE ? judge_patience(pruner, curve, values, n)
                                                 : judge_percentile(pruner, curve, values, n);
  g_mutex_unlock(&pruner->mutex);
  return prune;
}

static int
compare_step(const void *a, const void *b)
{
  gint64 x = ((const SieveIntermediate *) a)->step, y = ((const SieveIntermediate *) b)->step;
  return (x > y) - (x < y);
}

gboolean
sieve_pruner_judge(SievePruner *pruner, const SieveIntermediate *values, guint n)
{
  g_return_val_if_fail(pruner != NULL, FALSE);
  g_autofree SieveIntermediate *sorted = g_memdup2(values, n * sizeof(SieveIntermediate));
  qsort(sorted, n, sizeof(SieveIntermediate), compare_step);
  g_autoptr(SievePrunerCurve) curve = sieve_pruner_curve_new(G_MAXINT64);
  return sieve_pruner_judge_curve(pruner, curve, sorted, n, 0);
}
