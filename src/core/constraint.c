/* sieve: the experiment's `constraints:` list (the constraints section of
 * core/core-private.h): bounds on what is known of a candidate before it
 * is evaluated, so that a violator costs no evaluation.
 *
 *   constraints:
 *     - {metric: params, max: 1.0e6}
 *     - {metric: predicted_latency_ms, max: 3}
 *     - {metric: macs, max: 3e8}
 *
 * A metric that only an evaluation reports (an accuracy) is refused here,
 * with its place in the file: checking it would need the evaluation the
 * constraint is there to save. */
#include <math.h>
#include <string.h>

#include <sieve/proxy.h>

#include "core/core-private.h"

/* What the engine computes before evaluating (engine: the constraints):
 * counted on the graph, summed from the latency table, or measured. */
static const char *const known_metrics[] = {"params", "macs", "predicted_latency_ms", "latency_ms",
                                            "latency_iqr_ms", "latency_cpu_ms", "peak_mem_mb", NULL};

static const SieveOptionSpec constraint_spec[] = {
    SIEVE_OPTION_STRING("metric", NULL,
                        "a metric known before evaluation: params, macs, predicted_latency_ms (the latency table's "
                        "sum), latency_ms, latency_iqr_ms, latency_cpu_ms, peak_mem_mb (measured here), or a "
                        "zero-cost proxy"),
    /* Optional, finite: an infinite bound is no bound (leave it out), and the
     * violation (value - max) / |max| needs a finite one. */
    {"max", SIEVE_OPTION_TYPE_FLOAT, NULL, -G_MAXDOUBLE, G_MAXDOUBLE, NULL, "the largest value allowed",
     SIEVE_OPTION_HAS_MIN | SIEVE_OPTION_HAS_MAX, {NULL}},
    {"min", SIEVE_OPTION_TYPE_FLOAT, NULL, -G_MAXDOUBLE, G_MAXDOUBLE, NULL, "the smallest value allowed",
     SIEVE_OPTION_HAS_MIN | SIEVE_OPTION_HAS_MAX, {NULL}},
    SIEVE_OPTION_END,
};

const char *const *
sieve_constraint_metrics(void)
{
  return known_metrics;
}

void
sieve_constraints_free(SieveConstraint *constraints, guint n)
{
  for (guint i = 0; constraints && i < n; i++)
    g_free(constraints[i].metric);
  g_free(constraints);
}

/* Every name a constraint may use: known_metrics and the proxies. (transfer container) */
static GPtrArray *
all_names(void)
{
  GPtrArray *names = g_ptr_array_new();
  for (guint i = 0; known_metrics[i]; i++)
    g_ptr_array_add(names, (gpointer) known_metrics[i]);
  for (guint i = 0; i < sieve_proxy_count(); i++)
    g_ptr_array_add(names, (gpointer) sieve_proxy_info(i)->name);
  g_ptr_array_add(names, NULL);
  return names;
}

static gboolean
load_one(const SieveNode *item, guint index, SieveConstraint *out, GError **error)
{
  g_autofree char *context = g_strdup_printf("constraint #%u", index + 1);
  if (sieve_node_kind(item) != SIEVE_NODE_MAP) {
    sieve_node_set_error(error, item, "%s must be a map, e.g. {metric: params, max: 1.0e6}", context);
    return FALSE;
  }
  g_autoptr(SieveOptions) o = sieve_options_new(constraint_spec, item, NULL, NULL, context, error);
  if (o == NULL)
    return FALSE;
  const char *metric = sieve_options_get_string(o, "metric");
  const SieveNode *metric_node = sieve_options_node(o, "metric");
  g_autoptr(GPtrArray) names = all_names();
  if (!g_strv_contains((const char *const *) names->pdata, metric)) {
    const char *guess = sieve_suggest(metric, (const char *const *) names->pdata);
    g_autofree char *hint = guess ? g_strdup_printf(" (did you mean '%s'?)", guess) : g_strdup("");
    g_autofree char *known = g_strjoinv(", ", (char **) known_metrics);
    sieve_node_set_error(error, metric_node,
                         "%s: '%s' is not known before evaluation%s: a constraint saves an evaluation only on "
                         "what can be computed without one: %s, or a zero-cost proxy (sieve proxies)",
                         context, metric, hint, known);
    return FALSE;
  }
  gboolean has_min = sieve_options_is_set(o, "min"), has_max = sieve_options_is_set(o, "max");
  if (!has_min && !has_max) {
    sieve_node_set_error(error, item, "%s on '%s' has no bound: give max, min or both, e.g. {metric: %s, max: 3}",
                         context, metric, metric);
    return FALSE;
  }
  out->min = has_min ? sieve_options_get_double(o, "min") : -INFINITY;
  out->max = has_max ? sieve_options_get_double(o, "max") : INFINITY;
  if (out->min > out->max) {
    sieve_options_set_error(o, "min", error, "%s: min (%g) is above max (%g): no candidate could pass", context,
                            out->min, out->max);
    return FALSE;
  }
  out->metric = g_strdup(metric);
  out->node = item;
  out->metric_node = metric_node;
  return TRUE;
}

gboolean
sieve_constraints_load(const SieveNode *node, SieveConstraint **out, guint *n_out, GError **error)
{
  g_return_val_if_fail(out != NULL && n_out != NULL, FALSE);
  *out = NULL;
  *n_out = 0;
  if (node == NULL)
    return TRUE;
  if (sieve_node_kind(node) != SIEVE_NODE_LIST) {
    sieve_node_set_error(error, node, "'constraints' must be a list, e.g. [{metric: params, max: 1.0e6}, "
                                      "{metric: predicted_latency_ms, max: 3}]");
    return FALSE;
  }
  guint n = sieve_node_size(node);
  SieveConstraint *cs = g_new0(SieveConstraint, n);
  for (guint i = 0; i < n; i++)
    if (!load_one(sieve_node_nth(node, i), i, &cs[i], error)) {
      sieve_constraints_free(cs, n);
      return FALSE;
    }
  *out = cs;
  *n_out = n;
  return TRUE;
}
