/* sieve plugin: the `latency` evaluator: a candidate's inference latency
 * measured on this machine, as MnasNet (Tan et al., CVPR 2019, section 3)
 * measures each sampled model on the device it targets.
 *
 * The network is compiled for inference (eval mode, no backward; batch and
 * threads from the options, 1 and 1 by default, as a device serves one
 * request) and timed by the protocol of sieve/latency.h: warm-up forwards
 * dropped, single forwards timed with CLOCK_MONOTONIC until the median's
 * 95% confidence interval is within rel_ci of it (or max_runs, max_seconds).
 * Metrics: latency_ms (the median), latency_iqr_ms, latency_runs,
 * latency_cpu_ms (the forward's median CPU time: what a shared machine
 * does not inflate),
 * peak_mem_mb (what the compiled runtime holds), params, macs.  Not
 * concurrent: two measurements at once would time each other. */
#include <sieve/abi.h>
#include <sieve/candidate.h>
#include <sieve/component.h>
#include <sieve/evaluator.h>
#include <sieve/graph.h>
#include <sieve/latency.h>
#include <sieve/options.h>
#include <sieve/plugin.h>
#include <sieve/result.h>
#include <sieve/space.h>

static const SieveOptionSpec latency_options[] = {
    SIEVE_LATENCY_OPTIONS,
    SIEVE_OPTION_END,
};

static const char *const latency_metric_names[] = {"latency_ms", "latency_iqr_ms", "latency_runs", "latency_cpu_ms", "peak_mem_mb",
                                                   "params", "macs", NULL};

typedef struct {
  const SieveSpace *space;
  SieveLatencyOptions options;
} Latency;

static gpointer
latency_create(const SieveSpace *space, const SieveOptions *options, GError **error)
{
  if (!sieve_space_can_build(space)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                "the latency evaluator times networks; space '%s' builds none", sieve_space_get_name(space));
    return NULL;
  }
  Latency *self = g_new0(Latency, 1);
  self->space = space;
  sieve_latency_options_read(options, &self->options);
  return self;
}

static void
latency_destroy(gpointer instance)
{
  g_free(instance);
}

static SieveResult *
latency_evaluate(gpointer instance, const SieveCandidate *candidate, GError **error)
{
  Latency *self = instance;
  SieveResult *result = sieve_result_new();
  GError *local = NULL;
  g_autoptr(SieveGraph) graph = sieve_space_build(self->space, sieve_candidate_get_genotype(candidate), &local);
  SieveLatency l;
  if (graph == NULL || !sieve_latency_measure(graph, &self->options, &l, &local)) {
    /* One network that cannot be built or compiled fails its trial only. */
    sieve_result_set_failed(result, "%s", local->message);
    g_error_free(local);
    return result;
  }
  sieve_result_set_metric(result, "latency_ms", l.median_ms);
  sieve_result_set_metric(result, "latency_iqr_ms", l.iqr_ms);
  sieve_result_set_metric(result, "latency_runs", l.runs);
  sieve_result_set_metric(result, "latency_cpu_ms", l.cpu_median_ms);
  sieve_result_set_metric(result, "peak_mem_mb", l.memory_bytes / 1048576.0);
  sieve_result_set_metric(result, "params", (double) sieve_graph_params(graph));
  sieve_result_set_metric(result, "macs", (double) sieve_graph_macs(graph));
  return result;
}

static const char *const *
latency_metrics(gpointer instance)
{
  return latency_metric_names;
}

static const SieveEvaluatorClass latency_class = {
  .create = latency_create,
  .destroy = latency_destroy,
  .evaluate = latency_evaluate,
  .metrics = latency_metrics,
};

static const SieveComponentInfo latency_info = {
  .kind = SIEVE_KIND_EVALUATOR,
  .name = "latency",
  .summary = "inference latency of the candidate's network measured on this machine (median and IQR of timed "
             "forwards, eval mode, batch 1 and 1 thread by default) and the runtime's peak memory",
  .options = latency_options,
  .klass = &latency_class,
};

static gboolean
latency_init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &latency_info, error);
}

SIEVE_PLUGIN_DEFINE("latency", "0.1.0", "Inference latency measured on this machine", "MIT", latency_init);
