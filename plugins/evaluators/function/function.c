/* sieve plugin: standard test functions for hyper-parameter optimisation,
 * cheap stand-ins for an expensive evaluation with known optima, so an
 * optimizer's progress is measured as regret.
 *
 * Definitions and constants as collected by Surjanovic & Bingham, "Virtual
 * Library of Simulation Experiments" (Simon Fraser University), after:
 *   - Branin (Branin 1972; in Dixon & Szegő, "The global optimisation
 *     problem: an introduction", Towards Global Optimisation 2, 1978):
 *     f(x) = a (x2 - b x1^2 + c x1 - r)^2 + s (1 - t) cos(x1) + s with
 *     a = 1, b = 5.1/(4 pi^2), c = 5/pi, r = 6, s = 10, t = 1/(8 pi),
 *     x1 in [-5, 10], x2 in [0, 15]; minimum 5/(4 pi) = 0.397887 at
 *     (-pi, 12.275), (pi, 2.275) and (9.42478, 2.475).
 *   - Hartmann 6-d (Hartman 1973; Dixon & Szegő 1978):
 *     f(x) = -sum_i alpha_i exp(-sum_j A_ij (x_j - P_ij)^2) on [0, 1]^6;
 *     minimum -3.32237 at (0.20169, 0.150011, 0.476874, 0.275332,
 *     0.311652, 0.6573).
 *   - Rosenbrock (Rosenbrock 1960), d >= 2:
 *     f(x) = sum_{i<d} 100 (x_{i+1} - x_i^2)^2 + (x_i - 1)^2; minimum 0 at
 *     (1, ..., 1).
 *
 * Inputs are the space's decisions x1..xd (int or float, unconditional);
 * the space has no others (a decision no function reads is a config error;
 * rosenbrock is 2-d unless `dimension` says otherwise: a default taken from
 * the space would change what a stored study's trials mean).
 *
 * With a `fidelity` ({name: budget, min: 1, max: 27}), a candidate asked at
 * fidelity b < max sees a known distortion, a stand-in for a short
 * training run: value(x, b) = f(x) + fidelity_bias (1 - b / max)
 * (1 + sin(5 (x1 + ... + xd))) / 2, which shrinks to nothing at full
 * fidelity and reorders candidates at low ones; `delay` is scaled by
 * b / max.  Multi-fidelity optimizers are tested against it.
 * Metrics: `value` (with optional Gaussian noise) and `regret`, the
 * noise-free value minus the known minimum (noise would otherwise hide
 * whether the optimizer got closer).
 */
#include <math.h>
#include <string.h>

#include <sieve/candidate.h>
#include <sieve/component.h>
#include <sieve/evaluator.h>
#include <sieve/node.h>
#include <sieve/options.h>
#include <sieve/plugin.h>
#include <sieve/result.h>
#include <sieve/rng.h>
#include <sieve/space.h>

typedef enum { FN_BRANIN, FN_HARTMANN6, FN_ROSENBROCK } FunctionKind;

static const char *const function_names[] = {"branin", "hartmann6", "rosenbrock", NULL};

static const SieveOptionSpec function_options[] = {
  {"function", SIEVE_OPTION_TYPE_CHOICE, NULL, 0, 0, function_names, "the test function",
   SIEVE_OPTION_REQUIRED, {NULL}},
  {"dimension", SIEVE_OPTION_TYPE_INT, NULL, 2, 1000, NULL,
   "number of inputs x1..xd (rosenbrock: default 2; branin is 2-d, hartmann6 6-d); every decision of the "
   "space must be one of them",
   SIEVE_OPTION_HAS_MIN | SIEVE_OPTION_HAS_MAX, {NULL}},
  /* Finite: an infinite noise or bias makes every value inf or NaN. */
  SIEVE_OPTION_FLOAT("noise", "0", 0, G_MAXDOUBLE, "standard deviation of Gaussian noise added to the value"),
  SIEVE_OPTION_INT("seed", "0", 0, 9007199254740992.0, "seed of the noise (mixed with the trial number)"),
  /* At most a day: the sleep is counted in gulong microseconds, which an
   * infinite delay overflowed to no sleep at all. */
  SIEVE_OPTION_FLOAT("delay", "0", 0, 86400, "seconds each evaluation sleeps, to simulate an expensive one"),
  SIEVE_OPTION_NODE("fidelity", "offer a fidelity {name: budget, min: 1, max: 27, integer: true}: lower ones add a "
                    "known distortion (see fidelity_bias)"),
  SIEVE_OPTION_FLOAT("fidelity_bias", "1", 0, G_MAXDOUBLE,
                     "size of the distortion at fidelity b: bias (1 - b/max) (1 + sin(5 sum x)) / 2"),
  SIEVE_OPTION_END,
};

typedef struct {
  FunctionKind kind;
  guint dimension;
  guint *inputs; /* decision index of x1..xd */
  double noise;
  guint64 seed;
  double delay;
  gboolean has_fidelity;
  SieveFidelity fidelity; /* name owned */
  double fidelity_bias;
} Function;

/* ---- the functions ------------------------------------------------------ */

static double
branin(const double *x)
{
  const double a = 1, b = 5.1 / (4 * G_PI * G_PI), c = 5 / G_PI, r = 6, s = 10, t = 1 / (8 * G_PI);
  double u = x[1] - b * x[0] * x[0] + c * x[0] - r;
  return a * u * u + s * (1 - t) * cos(x[0]) + s;
}

static double
hartmann6(const double *x)
{
  static const double alpha[4] = {1.0, 1.2, 3.0, 3.2};
  static const double A[4][6] = {
    {10, 3, 17, 3.5, 1.7, 8},
    {0.05, 10, 17, 0.1, 8, 14},
    {3, 3.5, 1.7, 10, 17, 8},
    {17, 8, 0.05, 10, 0.1, 14},
  };
  static const double P[4][6] = {
    {1312, 1696, 5569, 124, 8283, 5886},
    {2329, 4135, 8307, 3736, 1004, 9991},
    {2348, 1451, 3522, 2883, 3047, 6650},
    {4047, 8828, 8732, 5743, 1091, 381},
  };
  double sum = 0;
  for (guint i = 0; i < 4; i++) {
    double inner = 0;
    for (guint j = 0; j < 6; j++) {
      double d = x[j] - P[i][j] * 1e-4;
      inner += A[i][j] * d * d;
    }
    sum += alpha[i] * exp(-inner);
  }
  return -sum;
}

static double
rosenbrock(const double *x, guint d)
{
  double sum = 0;
  for (guint i = 0; i + 1 < d; i++) {
    double u = x[i + 1] - x[i] * x[i], v = x[i] - 1;
    sum += 100 * u * u + v * v;
  }
  return sum;
}

static double
known_minimum(FunctionKind kind)
{
  switch (kind) {
  case FN_BRANIN:
    return 5 / (4 * G_PI); /* 0.397887...: the value at (pi, 2.275), where the square vanishes */
  case FN_HARTMANN6:
    return -3.32236801141551; /* Surjanovic & Bingham's -3.32237, to the digits of the literature */
  case FN_ROSENBROCK:
    return 0;
  }
  g_assert_not_reached();
}

/* ---- the component ------------------------------------------------------ */

static void
function_destroy(gpointer instance)
{
  Function *self = instance;
  if (self == NULL)
    return;
  g_free(self->inputs);
  g_free((char *) self->fidelity.name);
  g_free(self);
}

static gpointer
function_create(const SieveSpace *space, const SieveOptions *options, GError **error)
{
  const char *name = sieve_options_get_string(options, "function");
  FunctionKind kind = FN_BRANIN;
  for (guint k = 0; function_names[k]; k++)
    if (strcmp(name, function_names[k]) == 0)
      kind = (FunctionKind) k;
  guint fixed = kind == FN_BRANIN ? 2 : kind == FN_HARTMANN6 ? 6 : 0;
  guint n_decisions = sieve_space_n_decisions(space);
  /* Rosenbrock is defined for any d >= 2; without `dimension` it is 2-d,
   * as it always was (a space with more decisions is refused below). */
  gboolean given = sieve_options_is_set(options, "dimension");
  guint dimension = fixed ? fixed : 2;
  if (given) {
    gint64 d = sieve_options_get_int(options, "dimension");
    if (fixed && d != fixed) {
      sieve_options_set_error(options, "dimension", error, "function '%s' is %u-dimensional, got dimension %"
                              G_GINT64_FORMAT, name, fixed, d);
      return NULL;
    }
    dimension = (guint) d;
  }

  g_autofree guint *inputs = g_new(guint, dimension);
  for (guint k = 0; k < dimension; k++) {
    g_autofree char *x = g_strdup_printf("x%u", k + 1);
    gint i = sieve_space_find(space, x);
    const SieveDecision *d = i >= 0 ? sieve_space_decision(space, (guint) i) : NULL;
    const char *problem = d == NULL ? "it has no such decision"
                          : d->kind == SIEVE_DECISION_CATEGORICAL ? "it is categorical"
                          : d->parent >= 0 ? "it is conditional (the function needs every input)"
                                           : NULL;
    if (problem != NULL) {
      sieve_options_set_error(options, "function", error,
                              "function '%s' needs decisions x1..x%u%s, each an int or float, from space '%s'; "
                              "'%s' does not fit: %s", name, dimension,
                              fixed || given ? "" : " (without dimension, 2)",
                              sieve_space_get_name(space), x, problem);
      return NULL;
    }
    inputs[k] = (guint) i;
  }
  /* A decision the function does not read would be searched for nothing
   * and its values shown as if they mattered. */
  for (guint i = 0; n_decisions > dimension && i < n_decisions; i++) {
    gboolean used = FALSE;
    for (guint k = 0; k < dimension && !used; k++)
      used = inputs[k] == i;
    if (used)
      continue;
    const char *extra = sieve_space_decision(space, i)->name;
    if (fixed)
      sieve_options_set_error(options, "function", error,
                              "function '%s' is %u-dimensional (x1..x%u) but space '%s' has %u decisions: '%s' "
                              "would be searched for nothing; remove it from the space",
                              name, fixed, fixed, sieve_space_get_name(space), n_decisions, extra);
    else
      sieve_options_set_error(options, given ? "dimension" : "function", error,
                              "function '%s' reads x1..x%u%s but space '%s' has %u decisions: '%s' would be "
                              "searched for nothing; set dimension: %u",
                              name, dimension, given ? "" : " (dimension defaults to 2)", sieve_space_get_name(space),
                              n_decisions, extra, n_decisions);
    return NULL;
  }

  SieveFidelity fidelity = {0};
  const SieveNode *fidelity_node = sieve_options_get_node(options, "fidelity");
  if (fidelity_node != NULL && !sieve_fidelity_read(fidelity_node, &fidelity, error))
    return NULL;

  Function *self = g_new0(Function, 1);
  self->has_fidelity = fidelity_node != NULL;
  self->fidelity = fidelity;
  self->fidelity_bias = sieve_options_get_double(options, "fidelity_bias");
  self->kind = kind;
  self->dimension = dimension;
  self->inputs = g_steal_pointer(&inputs);
  self->noise = sieve_options_get_double(options, "noise");
  self->seed = (guint64) sieve_options_get_int(options, "seed");
  self->delay = sieve_options_get_double(options, "delay");
  return self;
}

static SieveResult *
function_evaluate(gpointer instance, const SieveCandidate *candidate, GError **error)
{
  Function *self = instance;
  const SieveGenotype *genotype = sieve_candidate_get_genotype(candidate);
  double x[self->dimension];
  for (guint k = 0; k < self->dimension; k++)
    x[k] = sieve_genotype_get(genotype, self->inputs[k]);

  /* Share of the full fidelity this evaluation gets (1 without one). */
  double share = 1;
  double b = sieve_candidate_get_fidelity(candidate);
  if (self->has_fidelity && !isnan(b))
    share = CLAMP(b / self->fidelity.max, 0, 1);
  if (self->delay > 0)
    g_usleep((gulong) (self->delay * share * G_USEC_PER_SEC));

  double value = 0;
  switch (self->kind) {
  case FN_BRANIN:
    value = branin(x);
    break;
  case FN_HARTMANN6:
    value = hartmann6(x);
    break;
  case FN_ROSENBROCK:
    value = rosenbrock(x, self->dimension);
    break;
  }
  double regret = value - known_minimum(self->kind);
  if (share < 1) {
    double sum = 0;
    for (guint k = 0; k < self->dimension; k++)
      sum += x[k];
    value += self->fidelity_bias * (1 - share) * (1 + sin(5 * sum)) / 2;
  }
  if (self->noise > 0) {
    /* One stream per trial, so that a trial's noise does not depend on the
     * order in which concurrent workers finish, nor on a resume. */
    SieveRng rng;
    sieve_rng_seed(&rng, self->seed);
    guint64 mixed = sieve_rng_next(&rng) ^ ((guint64) sieve_candidate_get_trial(candidate) *
                                            G_GUINT64_CONSTANT(0x9E3779B97F4A7C15));
    sieve_rng_seed(&rng, mixed);
    value += self->noise * sieve_rng_normal(&rng);
  }
  SieveResult *result = sieve_result_new();
  sieve_result_set_metric(result, "value", value);
  sieve_result_set_metric(result, "regret", regret);
  return result;
}

static const SieveFidelity *
function_fidelity(gpointer instance)
{
  Function *self = instance;
  return self->has_fidelity ? &self->fidelity : NULL;
}

static const char *const *
function_metrics(gpointer instance)
{
  static const char *const names[] = {"value", "regret", NULL};
  return names;
}

static const SieveEvaluatorClass function_class = {
  .create = function_create,
  .destroy = function_destroy,
  .evaluate = function_evaluate,
  .flags = SIEVE_EVALUATOR_CONCURRENT,
  .fidelity = function_fidelity,
  .metrics = function_metrics,
};

static const SieveComponentInfo function_info = {
  .kind = SIEVE_KIND_EVALUATOR,
  .name = "function",
  .summary = "standard HPO test functions (branin, hartmann6, rosenbrock) with known optima",
  .options = function_options,
  .klass = &function_class,
  .example = "{plugin: function, function: branin}",
};

static gboolean
function_init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &function_info, error);
}

SIEVE_PLUGIN_DEFINE("function", "0.1.0", "HPO test functions", "MIT", function_init);
