/* sieve: what is known of a candidate before it is evaluated, and the
 * experiment's constraints on it (the constraints section of
 * engine/engine-private.h).
 *
 * The metrics: params and macs counted on the graph; predicted_latency_ms
 * summed from the latency table; latency_ms, latency_iqr_ms and peak_mem_mb measured here (the `latency` stage's settings, or its
 * defaults: batch 1, 1 thread); and zero-cost proxies, on a seeded N(0,1)
 * batch.  Only those that a constraint, an objective the evaluator does
 * not report, or the latency stage asks for are computed.
 *
 * How far a candidate is from feasible (its constraint_violation, what
 * NSGA-II's constrained domination ranks infeasible candidates by: Deb,
 * Pratap, Agarwal & Meyarivan, IEEE TEC 2002, section III-E): the sum over
 * the constraints it breaks of the excess relative to the bound,
 * (value - max) / |max| (or (min - value) / |min|; a bound of 0 counts the
 * excess itself), so that bounds of different units add up; a metric that
 * came out NaN counts 1. */
#include <math.h>
#include <string.h>

#include <sieve/latency.h>
#include <sieve/proxy.h>
#include <sieve/text.h>

#include "engine/engine-private.h"

struct _SieveConstrainer {
  const SieveExperiment *exp;
  GPtrArray *metrics;  /* char* (owned): what to compute */
  GPtrArray *proxies;  /* char* (borrowed from metrics): the proxies among them */
  gboolean measure, predict, counts;
  SieveLatencyOptions latency;
  SieveLatencyTable *table; /* while a store is attached */
};

static gboolean
is_latency_metric(const char *m)
{
  return g_strcmp0(m, "latency_ms") == 0 || g_strcmp0(m, "latency_iqr_ms") == 0 ||
         g_strcmp0(m, "latency_cpu_ms") == 0 ||
         g_strcmp0(m, "peak_mem_mb") == 0;
}

static void
want(SieveConstrainer *c, const char *metric)
{
  for (guint i = 0; i < c->metrics->len; i++)
    if (strcmp(c->metrics->pdata[i], metric) == 0)
      return;
  g_ptr_array_add(c->metrics, g_strdup(metric));
  if (is_latency_metric(metric))
    c->measure = TRUE;
  else if (strcmp(metric, "predicted_latency_ms") == 0)
    c->predict = TRUE;
  else if (strcmp(metric, "params") == 0 || strcmp(metric, "macs") == 0)
    c->counts = TRUE;
  else
    g_ptr_array_add(c->proxies, c->metrics->pdata[c->metrics->len - 1]);
}

/* Whether metric is known before evaluation: counted, predicted, measured
 * or a zero-cost proxy (what a constraint may name). */
static gboolean
is_known(const char *metric)
{
  return g_strv_contains(sieve_constraint_metrics(), metric) || sieve_proxy_lookup(metric) != NULL;
}

gboolean
sieve_constrainer_computes(const SieveExperiment *experiment, const char *metric)
{
  if (is_known(metric))
    return TRUE;
  for (guint i = 0; i < experiment->n_constraints; i++)
    if (strcmp(experiment->constraints[i].metric, metric) == 0)
      return TRUE;
  return FALSE;
}

/* Whether the constrainer computes objective metric itself: known before
 * evaluation and not reported by the evaluator (sieve_constrainer_new). */
static gboolean
computes_objective(const char *const *evaluator_metrics, const char *metric)
{
  return is_known(metric) && (evaluator_metrics == NULL || !g_strv_contains(evaluator_metrics, metric));
}

gboolean
sieve_constrainer_checked(const SieveExperiment *experiment, const char *const *evaluator_metrics,
                          const char *metric)
{
  g_return_val_if_fail(experiment != NULL && metric != NULL, FALSE);
  for (guint i = 0; i < experiment->n_constraints; i++) {
    const char *m = experiment->constraints[i].metric;
    if (strcmp(m, metric) == 0 || (is_latency_metric(m) && is_latency_metric(metric)))
      return TRUE;
  }
  /* An objective computed here has one value too, with the settings a
   * constraint on it would use (README: not the screen's batch). */
  for (guint i = 0; i < experiment->n_objectives; i++) {
    const char *m = experiment->objectives[i].metric;
    if (computes_objective(evaluator_metrics, m) &&
        (strcmp(m, metric) == 0 || (is_latency_metric(m) && is_latency_metric(metric))))
      return TRUE;
  }
  return FALSE;
}

SieveConstrainer *
sieve_constrainer_new(const SieveExperiment *experiment, const char *const *evaluator_metrics)
{
  g_return_val_if_fail(experiment != NULL, NULL);
  SieveConstrainer *c = g_new0(SieveConstrainer, 1);
  c->exp = experiment;
  c->metrics = g_ptr_array_new_with_free_func(g_free);
  c->proxies = g_ptr_array_new();
  sieve_latency_options_init(&c->latency);
  if (experiment->pipeline.latency.enabled) {
    c->latency = experiment->pipeline.latency.options;
    want(c, "latency_ms");
    want(c, "latency_iqr_ms");
    want(c, "latency_cpu_ms");
    want(c, "peak_mem_mb");
  }
  for (guint i = 0; i < experiment->n_constraints; i++)
    want(c, experiment->constraints[i].metric);
  /* An objective the evaluator does not report but that is known before
   * evaluation (latency_ms or naswot with a tabular evaluator, say) is
   * computed here, as a constraint on it would be. */
  for (guint i = 0; i < experiment->n_objectives; i++) {
    const char *m = experiment->objectives[i].metric;
    if (computes_objective(evaluator_metrics, m))
      want(c, m);
  }
  if (c->metrics->len == 0) {
    sieve_constrainer_free(c);
    return NULL;
  }
  return c;
}

void
sieve_constrainer_free(SieveConstrainer *constrainer)
{
  if (constrainer == NULL)
    return;
  g_ptr_array_unref(constrainer->metrics);
  g_ptr_array_unref(constrainer->proxies);
  sieve_latency_table_free(constrainer->table);
  g_free(constrainer);
}

void
sieve_constrainer_attach(SieveConstrainer *constrainer, SieveStore *store)
{
  g_return_if_fail(constrainer != NULL);
  g_clear_pointer(&constrainer->table, sieve_latency_table_free);
  if (constrainer->predict)
    constrainer->table = sieve_latency_table_new(store, &constrainer->latency);
}

/* The excess of value over c's bounds, relative to the bound broken (0: within). */
static double
excess(const SieveConstraint *c, double value)
{
  if (isnan(value))
    return 1;
  if (value > c->max)
    return (value - c->max) / (c->max != 0 ? fabs(c->max) : 1);
  if (value < c->min)
    return (c->min - value) / (c->min != 0 ? fabs(c->min) : 1);
  return 0;
}

SieveResult *
sieve_constrainer_check(SieveConstrainer *c, const SieveSpace *space, const SieveGenotype *genotype,
                        gboolean *feasible, GError **error)
{
  g_return_val_if_fail(c != NULL && space != NULL && genotype != NULL && feasible != NULL, NULL);
  *feasible = TRUE;
  g_autoptr(SieveGraph) graph = sieve_space_build(space, genotype, error);
  if (graph == NULL)
    return NULL;
  g_autoptr(SieveResult) r = sieve_result_new();
  if (c->counts) {
    sieve_result_set_metric(r, "params", (double) sieve_graph_params(graph));
    sieve_result_set_metric(r, "macs", (double) sieve_graph_macs(graph));
  }
  if (c->predict) {
    double ms;
    if (c->table == NULL)
      c->table = sieve_latency_table_new(NULL, &c->latency);
    if (!sieve_latency_table_predict(c->table, graph, &ms, error))
      return NULL;
    sieve_result_set_metric(r, "predicted_latency_ms", ms);
  }
  if (c->measure) {
    SieveLatency l;
    if (!sieve_latency_measure(graph, &c->latency, &l, error))
      return NULL;
    sieve_result_set_metric(r, "latency_ms", l.median_ms);
    sieve_result_set_metric(r, "latency_iqr_ms", l.iqr_ms);
    sieve_result_set_metric(r, "latency_cpu_ms", l.cpu_median_ms);
    sieve_result_set_metric(r, "peak_mem_mb", l.memory_bytes / 1048576.0);
  }
  if (c->proxies->len > 0) {
    g_autofree double *scores = g_new0(double, c->proxies->len);
    SieveProxyOptions po = {.batch = 64, .threads = c->latency.threads, .seed = c->exp->seed};
    if (!sieve_proxy_compute(graph, (const char *const *) c->proxies->pdata, c->proxies->len, &po, scores, NULL,
                             error))
      return NULL;
    for (guint i = 0; i < c->proxies->len; i++)
      sieve_result_set_metric(r, c->proxies->pdata[i], scores[i]);
  }
  double violation = 0;
  g_autoptr(GString) reason = g_string_new(NULL);
  for (guint i = 0; i < c->exp->n_constraints; i++) {
    const SieveConstraint *k = &c->exp->constraints[i];
    double v = NAN;
    sieve_result_get_metric(r, k->metric, &v);
    double e = excess(k, v);
    if (e <= 0)
      continue;
    violation += e;
    /* The bound as written; the value to 6 significant digits (a sum of
     * entries is no exact decimal: 0.28071650000000004), all of them
     * where 6 would read as the bound itself or round a count (params). */
    double limit = v > k->max ? k->max : k->min;
    g_autofree char *bound = sieve_text_format_double(limit);
    char *value = g_malloc(G_ASCII_DTOSTR_BUF_SIZE);
    g_ascii_formatd(value, G_ASCII_DTOSTR_BUF_SIZE, "%.6g", v);
    if (isfinite(v) && (g_ascii_strtod(value, NULL) == limit || (v == floor(v) && fabs(v) < 1e15))) {
      g_free(value);
      value = sieve_text_format_double(v);
    }
    g_string_append_printf(reason, "%s%s = %s %s %s", reason->len ? "; " : "broke ", k->metric, value,
                           v > k->max ? "> max" : isnan(v) ? "is not a number, bound" : "< min", bound);
    g_free(value);
  }
  if (violation > 0) {
    *feasible = FALSE;
    sieve_result_set_status(r, SIEVE_STATUS_REJECTED);
    sieve_result_set_reason(r, reason->str);
    sieve_result_set_metric(r, SIEVE_METRIC_CONSTRAINT_VIOLATION, violation);
  }
  return g_steal_pointer(&r);
}
