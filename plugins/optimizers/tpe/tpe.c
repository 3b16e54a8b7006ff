/* sieve plugin: the tree-structured Parzen estimator (Bergstra, Bardenet,
 * Bengio & Kégl, "Algorithms for Hyper-Parameter Optimization", NeurIPS
 * 2011), univariate as in the paper or multivariate (Falkner, Klein &
 * Hutter, "BOHB: Robust and Efficient Hyperparameter Optimization at
 * Scale", ICML 2018, model joint densities).  The model lives in
 * ../common/tpe-model.c; this file holds the ask/tell/save cycle.
 *
 * The first n_startup proposals are random, and so is every proposal made
 * while fewer than n_startup trials have finished (asynchronous start).
 * Afterwards each proposal maximises l(x)/g(x) over candidates drawn from
 * l(x), refitted on every finished trial.  A genotype proposed before is
 * never proposed again: the best unseen candidate is taken instead, then a
 * random unseen genotype (evaluations are distinct genotypes).  Pending
 * trials are not modelled; several proposals from one ask() differ
 * because each is recorded as seen before the next is drawn.
 *
 * A candidate rejected by a constraint (status REJECTED, NAN objectives)
 * is a trial with the worst value: it falls in g(x), the density of bad
 * configurations, so proposals move away from the infeasible region (the
 * treatment of infeasible trials in Optuna's and Hyperopt's TPE when no
 * constraint model is fitted).
 *
 * A pruned trial (status PRUNED, its last value and the `step` it reached)
 * ranks below every trial that completed with a measured value (above the
 * failed and rejected ones), and among pruned ones by the step they
 * reached, then by that value, one without a step below those with one, as
 * Optuna's TPESampler ranks them: a trial stopped early on a value that
 * looked good is no evidence that its configuration ends well.
 */
#include <sieve/candidate.h>
#include <sieve/component.h>
#include <sieve/optimizer.h>
#include <sieve/options.h>
#include <sieve/plugin.h>
#include <sieve/result.h>
#include <sieve/rng.h>
#include <sieve/space.h>

#include "tpe-model.h"

static const SieveOptionSpec tpe_options[] = {
  SIEVE_OPTION_INT("n_startup", "10", 1, 1e6, "random proposals before the model is used"),
  SIEVE_OPTION_INT("n_candidates", "24", 1, 1e5, "candidates drawn from l(x) per proposal"),
  SIEVE_OPTION_FLOAT("gamma", "0.1", 0.001, 1, "fraction of finished trials forming the good group l(x)"),
  SIEVE_OPTION_INT("gamma_max", "25", 1, 1e6, "at most this many trials in the good group"),
  SIEVE_OPTION_FLOAT("prior_weight", "1.0", 1e-6, 1e6, "weight of the prior (uniform-like) kernel"),
  SIEVE_OPTION_BOOL("multivariate", "false", "model the decisions jointly instead of one at a time"),
  SIEVE_OPTION_END,
};


typedef struct {
  const SieveSpace *space;
  SieveRng rng;
  OptTpeParams params;
  guint n_startup;
  double space_size;
  OptSeen seen;
  OptTpeData data;
} Tpe;

static void
tpe_destroy(gpointer instance)
{
  Tpe *self = instance;
  if (self == NULL)
    return;
  opt_seen_clear(&self->seen);
  opt_tpe_data_clear(&self->data);
  g_free(self);
}

static gpointer
tpe_create(const SieveSpace *space, const SieveOptions *options, const SieveStudyInfo *study, GError **error)
{
  if (!opt_one_objective(study, "it ranks candidates", error))
    return NULL;
  Tpe *self = g_new0(Tpe, 1);
  self->space = space;
  sieve_rng_seed(&self->rng, study->seed);
  self->params = (OptTpeParams) OPT_TPE_DEFAULTS;
  self->params.n_candidates = (guint) sieve_options_get_int(options, "n_candidates");
  self->params.gamma = sieve_options_get_double(options, "gamma");
  self->params.gamma_max = (guint) sieve_options_get_int(options, "gamma_max");
  self->params.prior_weight = sieve_options_get_double(options, "prior_weight");
  self->params.multivariate = sieve_options_get_bool(options, "multivariate");
  self->n_startup = (guint) sieve_options_get_int(options, "n_startup");
  self->space_size = sieve_space_size(space);
  opt_seen_init(&self->seen, space);
  opt_tpe_data_init(&self->data, space);
  return self;
}

static gboolean
tpe_ask(gpointer instance, guint n, GPtrArray *out, GError **error)
{
  Tpe *self = instance;
  for (guint k = 0; k < n && opt_seen_size(&self->seen) < self->space_size; k++) {
    SieveGenotype *g = NULL;
    if (opt_tpe_data_size(&self->data) >= self->n_startup)
      g = opt_tpe_suggest(self->space, &self->data, &self->params, &self->rng, &self->seen);
    if (opt_propose(out, &self->seen, self->space, &self->rng, g) == NULL)
      break;
  }
  return TRUE; /* fewer than n only when no unproposed genotype is left */
}

static gboolean
tpe_tell(gpointer instance, const SieveCandidate *candidate, const SieveResult *result, const double *objectives,
         GError **error)
{
  Tpe *self = instance;
  double fitness = opt_fitness(objectives[0]);
  opt_tpe_data_add_ranked(&self->data, sieve_candidate_get_genotype(candidate), fitness, opt_tier(result, fitness));
  return TRUE;
}

/* State: {"rng", "seen": ay, "x": ad (observations' values, flattened), "y": ad, "tier": ad} */
static GVariant *
tpe_save(gpointer instance, GError **error)
{
  Tpe *self = instance;
  GVariantDict dict;
  g_variant_dict_init(&dict, NULL);
  g_variant_dict_insert_value(&dict, "rng", sieve_rng_save(&self->rng));
  g_variant_dict_insert_value(&dict, "seen", opt_seen_save(&self->seen));
  opt_tpe_data_save(&self->data, &dict, "");
  return g_variant_dict_end(&dict);
}

static gboolean
tpe_load(gpointer instance, GVariant *state, GError **error)
{
  Tpe *self = instance;
  if (!opt_state_check(state, error))
    return FALSE;
  g_autoptr(GVariant) rng = opt_state_lookup(state, "rng", G_VARIANT_TYPE("(tttt)"), error);
  if (rng == NULL)
    return FALSE;
  g_autoptr(GVariant) seen = opt_texts_lookup(state, "seen", error);
  /* All or nothing: every part is read into a temporary, and the data
   * (which replaces its arrays only once it has checked them) last. */
  SieveRng restored;
  OptSeen loaded;
  if (seen == NULL || !sieve_rng_load(&restored, rng, error) || !opt_seen_parse(&loaded, self->space, seen, error))
    return FALSE;
  if (!opt_tpe_data_load(&self->data, state, "", error)) {
    opt_seen_clear(&loaded);
    return FALSE;
  }
  self->rng = restored;
  opt_seen_replace(&self->seen, &loaded);
  return TRUE;
}

static const SieveOptimizerClass tpe_class = {
  .create = tpe_create,
  .destroy = tpe_destroy,
  .ask = tpe_ask,
  .tell = tpe_tell,
  .save = tpe_save,
  .load = tpe_load,
};

static const SieveComponentInfo tpe_info = {
  .kind = SIEVE_KIND_OPTIMIZER,
  .name = "tpe",
  .summary = "tree-structured Parzen estimator (univariate or multivariate, conditions respected)",
  .options = tpe_options,
  .klass = &tpe_class,
};

static gboolean
tpe_init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &tpe_info, error);
}

SIEVE_PLUGIN_DEFINE("tpe", "0.1.0", "Tree-structured Parzen estimator", "MIT", tpe_init);
