/* sieve plugin: the `proxy` evaluator, training-free NAS.  Builds the
 * candidate's network with its space, untrained, and scores it with
 * zero-cost proxies (sieve/proxy.h) on one seeded batch, all named proxies
 * in one sieve_proxy_compute call so that they share their passes.  It
 * reports each proxy's score under the proxy's name, the milliseconds
 * attributed to it as NAME_ms, and the objective `score` (larger is better):
 *
 *   one proxy      score = s, the proxy's own value;
 *   several        score = sum_k w_k z_k / sum_k w_k, weights w_k >= 0
 *                  (option weights; default equal), each proxy standardised
 *                  on a reference sample of the space:
 *                    z_k = (L(s_k) - mean_k) / sd_k,  L(s) = sign(s) log(1 + |s|),
 *                  mean_k and sd_k (population deviation) of L over the finite
 *                  scores of `reference` networks drawn with sieve_space_sample
 *                  from a generator seeded with `seed`, scored at create
 *                  (sd_k = 1 where fewer than two are finite or they are all
 *                  equal); z_k is reported as NAME_z.  reference: 0 skips the
 *                  sample: z_k = L(s_k).
 *
 * Why this ensemble: an objective must be a number per candidate, but the
 * ensembles of the zero-cost literature rank a population (the vote of
 * Abdelfattah et al., "Zero-Cost Proxies for Lightweight NAS", ICLR 2021;
 * the summed ranks of TE-NAS, Chen et al., ICLR 2021) or fit a model to
 * benchmark data (NAS-Bench-Suite-Zero, Krishnakumar et al., NeurIPS 2022).
 * Rank aggregation over each round of proposals is what the `screen`
 * pipeline stage does (sieve_proxy_rank_aggregate).  A per-candidate
 * combination must first put the proxies on one scale.  Their magnitudes
 * differ by tens of orders (synflow of an NB201 network is around 1e11 at
 * C=8, naswot a few hundred) and some are negative (grasp, jacob_cov) or
 * -inf (naswot of a singular kernel): the signed log L keeps each proxy's
 * order (the ensemble stays monotone in every proxy: a network better by
 * every proxy scores higher).  L alone is not enough:
 * proxies that are already logarithms (naswot is a log-determinant) are
 * squeezed a second time, so that over NB201 at C=8, N=1 the spread of L
 * (naswot) is a hundredth of L(synflow)'s and an equal-weight mean of L
 * ranks as synflow alone.  Dividing by each proxy's spread over a random
 * sample of the space gives equal weights their meaning, one standard
 * deviation of each proxy counting the same, as the mean rank does for a
 * population.
 *
 * A network with an infinite proxy score (naswot's -inf for a network
 * whose codes are all alike: its output does not depend on its input) has
 * no score: its trial fails and the reason says which proxy and what that
 * means.  An objective must be a finite number that optimizers can do
 * arithmetic on (REINFORCE's baseline and spread, NSGA-II's crowding
 * distances, TPE's and GP's normalisation); standing in -DBL_MAX for -inf
 * overflows all of them.  The screen stage ranks such a network last, as
 * ranks need no arithmetic on the scores.  A proxy weighted 0 does not
 * count.
 *
 * The batch: seeded N(0,1) inputs with uniform labels, or examples of a
 * dataset's training split drawn and normalised as the screen stage and
 * `sieve proxies --dataset` draw them (sieve_proxy_batch_draw: the
 * same function), loaded once at create; the same weights seed and batch
 * for every candidate, so that scores compare across trials and `sieve
 * proxies` with the same --seed, --batch and --threads reproduces them.
 *
 * The proxies use `threads` cores, so trials run one at a time (spaces need
 * not build networks from several threads either).  It reads its options
 * and draws its batch with the public functions the screen stage uses
 * (sieve_proxy_options_read, sieve_proxy_batch_draw), so that both score a
 * network alike.
 */
#include <math.h>

#include <sieve/abi.h>
#include <sieve/candidate.h>
#include <sieve/component.h>
#include <sieve/evaluator.h>
#include <sieve/graph.h>
#include <sieve/node.h>
#include <sieve/options.h>
#include <sieve/plugin.h>
#include <sieve/proxy.h>
#include <sieve/runtime.h>
#include <sieve/result.h>
#include <sieve/rng.h>
#include <sieve/space.h>

static const SieveOptionSpec proxy_options[] = {
  {"proxies", SIEVE_OPTION_TYPE_STRING_LIST, NULL, 0, 0, NULL,
   "a zero-cost proxy, or a list of them (see `sieve proxies --list`), each reported under its name; the objective "
   "`score` is the one proxy's value, or the weighted mean of the proxies' standardised sign(s)*log(1+|s|)",
   SIEVE_OPTION_REQUIRED, {NULL}},
  SIEVE_OPTION_NODE("weights", "one weight >= 0 per proxy in the score's weighted mean (default: equal); rank "
                               "aggregation over each round of proposals is the screen stage's"),
  SIEVE_OPTION_INT("reference", "16", 0, 100000,
                   "networks sampled from the space at create to standardise each proxy's sign(s)*log(1+|s|) "
                   "by its mean and deviation before the proxies are averaged (0: not standardised; one proxy: "
                   "unused)"),
  SIEVE_OPTION_INT("batch_size", "64", 1, 65536, "examples in the proxies' batch"),
  SIEVE_OPTION_INT("seed", "0", 0, 9007199254740992.0,
                   "seed of the initial weights, of the batch (its N(0,1) inputs, or which examples) and of the "
                   "reference sample"),
  SIEVE_PROXY_DATA_OPTIONS,
  SIEVE_OPTION_INT("threads", "0", 0, 1024, "threads of one trial's proxies (0: every core)"),
  SIEVE_PROXY_DEVICE_OPTION,
  SIEVE_OPTION_END,
};

/* The objective's name. */
#define SCORE "score"

typedef struct {
  const SieveSpace *space;
  char **names; /* NULL-terminated (owned) */
  guint n;
  double *weights;   /* n, NULL: equal (owned) */
  char **time_names; /* "NAME_ms" (owned) */
  char **z_names;    /* "NAME_z" (owned) */
  GPtrArray *metrics; /* what evaluate() reports, NULL-terminated (names borrowed) */
  double *mean, *sd; /* n: the reference's statistics of L (owned; 0 and 1 without one) */
  SieveProxyOptions proxy;
  SieveProxyBatch *batch; /* NULL: N(0,1) (owned) */
  char *device;           /* proxy.device points here: the options need not outlive us (owned) */
} Proxy;

static void
proxy_destroy(gpointer instance)
{
  Proxy *self = instance;
  g_free(self->device);
  g_strfreev(self->names);
  g_strfreev(self->time_names);
  g_strfreev(self->z_names);
  if (self->metrics)
    g_ptr_array_unref(self->metrics);
  g_free(self->weights);
  g_free(self->mean);
  g_free(self->sd);
  sieve_proxy_batch_free(self->batch);
  g_free(self);
}

/* Each name known, or an error at the name as written, listing the known. */
static gboolean
check_names(const SieveOptions *options, char **names, guint n, GError **error)
{
  const SieveNode *list = sieve_options_node(options, "proxies");
  for (guint i = 0; i < n; i++) {
    GError *local = NULL;
    if (sieve_proxy_check_names((const char *const *) &names[i], 1, &local))
      continue;
    const SieveNode *at = sieve_node_kind(list) == SIEVE_NODE_LIST ? sieve_node_nth(list, i) : list;
    sieve_node_set_error(error, at, "%s", local->message);
    g_error_free(local);
    return FALSE;
  }
  return TRUE;
}

/* sign(s) log(1 + |s|): odd, monotone, log|s| for |s| >> 1, -inf at -inf. */
static double
signed_log(double s)
{
  return copysign(log1p(fabs(s)), s);
}

/* Whether a failure to score a network is that network's (its trial fails)
 * rather than the evaluator's (the study stops). */
static gboolean
is_network_error(const GError *error)
{
  return g_error_matches(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH) ||
         g_error_matches(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME) ||
         g_error_matches(error, SIEVE_ERROR, SIEVE_ERROR_DIVERGED) ||
         g_error_matches(error, SIEVE_ERROR, SIEVE_ERROR_PARSE);
}

/* mean and sd of L(score) per proxy over k networks sampled from the space;
 * networks that fail to build or score, and non-finite scores, count for
 * nothing. */
static gboolean
standardise(Proxy *self, guint k, GError **error)
{
  self->mean = g_new0(double, self->n);
  self->sd = g_new(double, self->n);
  for (guint i = 0; i < self->n; i++)
    self->sd[i] = 1;
  if (k == 0 || self->n == 1)
    return TRUE;
  g_autofree double *m2 = g_new0(double, self->n); /* sum of squared deviations (Welford) */
  g_autofree guint *count = g_new0(guint, self->n);
  g_autofree double *scores = g_new(double, self->n);
  SieveRng rng;
  sieve_rng_seed(&rng, self->proxy.seed);
  for (guint r = 0; r < k; r++) {
    g_autoptr(SieveGenotype) g = sieve_space_sample(self->space, &rng);
    GError *local = NULL;
    g_autoptr(SieveGraph) net = sieve_space_build(self->space, g, &local);
    if (net == NULL ||
        !sieve_proxy_compute(net, (const char *const *) self->names, self->n, &self->proxy, scores, NULL, &local)) {
      if (net != NULL && !is_network_error(local)) {
        g_propagate_prefixed_error(error, local, "scoring the reference sample: ");
        return FALSE;
      }
      g_error_free(local);
      continue;
    }
    for (guint i = 0; i < self->n; i++) {
      double l = signed_log(scores[i]);
      if (!isfinite(l))
        continue;
      count[i]++;
      double d = l - self->mean[i];
      self->mean[i] += d / count[i];
      m2[i] += d * (l - self->mean[i]);
    }
  }
  for (guint i = 0; i < self->n; i++) {
    double var = count[i] >= 2 ? m2[i] / count[i] : 0;
    /* A proxy equal on the whole sample keeps sd 1 (rounding may leave it
     * a variance of a few ulps). */
    if (var > 1e-24 * (1 + self->mean[i] * self->mean[i]))
      self->sd[i] = sqrt(var);
  }
  return TRUE;
}

static gpointer
proxy_create(const SieveSpace *space, const SieveOptions *options, GError **error)
{
  if (!sieve_space_can_build(space)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                "the proxy evaluator scores networks, and space '%s' builds none: use an architecture space "
                "(e.g. nb201)",
                sieve_space_get_name(space));
    return NULL;
  }
  Proxy *self = g_new0(Proxy, 1);
  self->space = space;
  if (!sieve_proxy_options_read(options, &self->names, &self->n, &self->weights, error) ||
      !check_names(options, self->names, self->n, error)) {
    proxy_destroy(self);
    return NULL;
  }
  self->time_names = g_new0(char *, self->n + 1);
  self->z_names = g_new0(char *, self->n + 1);
  for (guint i = 0; i < self->n; i++) {
    self->time_names[i] = g_strdup_printf("%s_ms", self->names[i]);
    self->z_names[i] = g_strdup_printf("%s_z", self->names[i]);
  }
  /* As proxy_evaluate sets them: each score and its time, the z-scores of
   * an ensemble, and the objective. */
  self->metrics = g_ptr_array_new();
  for (guint i = 0; i < self->n; i++) {
    g_ptr_array_add(self->metrics, self->names[i]);
    g_ptr_array_add(self->metrics, self->time_names[i]);
    if (self->n > 1)
      g_ptr_array_add(self->metrics, self->z_names[i]);
  }
  g_ptr_array_add(self->metrics, SCORE);
  g_ptr_array_add(self->metrics, NULL);
  self->proxy.batch = (guint) sieve_options_get_int(options, "batch_size");
  self->proxy.seed = (guint64) sieve_options_get_int(options, "seed");
  self->proxy.threads = (guint) sieve_options_get_int(options, "threads");
  self->device = g_strdup(sieve_options_get_string(options, "device"));
  if (g_str_equal(self->device, "auto")) {
    g_autofree char *note = NULL;
    sieve_runtime_resolve_device(self->device, &note);
    g_printerr("%s\n", note);
  }
  self->proxy.device = self->device;
  const char *dataset = sieve_options_get_string(options, "dataset");
  if (dataset != NULL) {
    GError *local = NULL;
    self->batch = sieve_proxy_batch_draw(dataset, sieve_options_get_string(options, "data_dir"), self->proxy.batch,
                                         self->proxy.seed, &local);
    g_autoptr(SieveGraph) sample = self->batch ? sieve_space_build_sample(space, self->proxy.seed, &local) : NULL;
    g_autofree char *builder = g_strdup_printf("space %s", sieve_space_get_name(space));
    if (sample == NULL || !sieve_proxy_batch_check(self->batch, sample, builder, &local)) {
      sieve_options_set_error(options, "dataset", error, "%s", local->message);
      g_error_free(local);
      proxy_destroy(self);
      return NULL;
    }
    self->proxy.inputs = self->batch->x;
    self->proxy.labels = self->batch->y;
  }
  if (!standardise(self, (guint) sieve_options_get_int(options, "reference"), error)) {
    proxy_destroy(self);
    return NULL;
  }
  return self;
}

/* A network whose counted proxy is infinite has no score: its trial fails
 * and says which proxy and what that means (the file's comment: why). */
static gboolean
fail_infinite(const Proxy *self, const double *scores, SieveResult *result)
{
  g_autoptr(GString) which = g_string_new(NULL);
  for (guint i = 0; i < self->n; i++) {
    if (!isinf(scores[i]) || (self->weights && self->weights[i] == 0))
      continue;
    g_string_append_printf(which, "%s%s is %s", which->len ? ", " : "", self->names[i],
                           scores[i] > 0 ? "+inf" : "-inf");
    if (g_strcmp0(self->names[i], "naswot") == 0 && scores[i] < 0)
      g_string_append(which, " (its output does not depend on its input)");
  }
  if (which->len == 0)
    return FALSE;
  sieve_result_set_failed(result, "degenerate network: %s", which->str);
  return TRUE;
}

static SieveResult *
proxy_evaluate(gpointer instance, const SieveCandidate *candidate, GError **error)
{
  Proxy *self = instance;
  SieveResult *result = sieve_result_new();
  GError *local = NULL;
  g_autoptr(SieveGraph) net = sieve_space_build(self->space, sieve_candidate_get_genotype(candidate), &local);
  g_autofree double *scores = g_new(double, self->n);
  g_autofree double *ms = g_new(double, self->n);
  if (net == NULL ||
      !sieve_proxy_compute(net, (const char *const *) self->names, self->n, &self->proxy, scores, ms, &local)) {
    /* A network that does not build, run or stay finite fails its trial;
     * anything else is the evaluator's own failure and stops the study. */
    if (net == NULL || is_network_error(local)) {
      sieve_result_set_failed(result, "%s", local->message);
      g_error_free(local);
      return result;
    }
    g_propagate_error(error, local);
    sieve_result_free(result);
    return NULL;
  }
  for (guint i = 0; i < self->n; i++)
    sieve_result_set_metric(result, self->names[i], scores[i]);
  for (guint i = 0; i < self->n; i++)
    sieve_result_set_metric(result, self->time_names[i], ms[i]);
  if (fail_infinite(self, scores, result))
    return result;
  if (self->n == 1) {
    sieve_result_set_metric(result, SCORE, scores[0]);
    return result;
  }
  double sum = 0, total = 0;
  for (guint i = 0; i < self->n; i++) {
    double z = (signed_log(scores[i]) - self->mean[i]) / self->sd[i];
    sieve_result_set_metric(result, self->z_names[i], z);
    double w = self->weights ? self->weights[i] : 1.0;
    if (w == 0)
      continue; /* a proxy that does not count cannot make the score undefined */
    sum += w * z;
    total += w;
  }
  sieve_result_set_metric(result, SCORE, sum / total);
  return result;
}

static const char *const *
proxy_metrics(gpointer instance)
{
  Proxy *self = instance;
  return (const char *const *) self->metrics->pdata;
}

static const SieveEvaluatorClass proxy_class = {
  .create = proxy_create,
  .destroy = proxy_destroy,
  .evaluate = proxy_evaluate,
  .metrics = proxy_metrics,
};

static const SieveComponentInfo proxy_info = {
  .kind = SIEVE_KIND_EVALUATOR,
  .name = "proxy",
  .summary = "training-free NAS: scores the candidate's untrained network with zero-cost proxies; objective "
             "`score`: the proxy, or the weighted mean of several standardised sign(s)*log(1+|s|)",
  .options = proxy_options,
  .klass = &proxy_class,
  .example = "{plugin: proxy, proxies: [naswot], batch_size: 32}",
};

static gboolean
proxy_init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &proxy_info, error);
}

SIEVE_PLUGIN_DEFINE("proxy", "0.1.0", "Zero-cost proxy evaluator (training-free NAS)", "MIT", proxy_init);
