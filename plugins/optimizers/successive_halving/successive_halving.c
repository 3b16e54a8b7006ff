/* sieve plugin: successive halving (Jamieson & Talwalkar, "Non-stochastic
 * Best Arm Identification and Hyperparameter Optimization", AISTATS 2016;
 * Karnin, Koren & Somekh, ICML 2013): n_configs random configurations at
 * the lowest fidelity, the best 1/eta of them promoted to eta times the
 * fidelity, until one (or a few) reach the evaluator's full fidelity; then
 * the same again with new configurations.  The scheduler is in
 * ../common/brackets.c. */
#include <sieve/component.h>
#include <sieve/optimizer.h>
#include <sieve/options.h>
#include <sieve/plugin.h>
#include <sieve/space.h>

#include "bracketopt.h"

static const SieveOptionSpec successive_halving_options[] = {
  OPT_BRACKET_OPTIONS,
  {"n_configs", SIEVE_OPTION_TYPE_INT, NULL, 1, 1e6, NULL,
   "configurations started per bracket (default: eta^k, so that one reaches the full fidelity)",
   SIEVE_OPTION_HAS_MIN | SIEVE_OPTION_HAS_MAX, {NULL}},
  SIEVE_OPTION_END,
};

static gpointer
successive_halving_create(const SieveSpace *space, const SieveOptions *options, const SieveStudyInfo *study,
                          GError **error)
{
  return opt_bracketopt_create(space, options, study, OPT_BRACKETS_SUCCESSIVE_HALVING, error);
}

static const SieveOptimizerClass successive_halving_class = {
  .create = successive_halving_create,
  .destroy = opt_bracketopt_destroy,
  .ask = opt_bracketopt_ask,
  .tell = opt_bracketopt_tell,
  .save = opt_bracketopt_save,
  .load = opt_bracketopt_load,
};

static const SieveComponentInfo successive_halving_info = {
  .kind = SIEVE_KIND_OPTIMIZER,
  .name = "successive_halving",
  .summary = "successive halving over the evaluator's fidelity (keep the best 1/eta, eta times the fidelity)",
  .options = successive_halving_options,
  .klass = &successive_halving_class,
};

static gboolean
successive_halving_init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &successive_halving_info, error);
}

SIEVE_PLUGIN_DEFINE("successive_halving", "0.1.0", "Successive halving", "MIT", successive_halving_init);
