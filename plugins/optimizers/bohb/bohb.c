/* sieve plugin: BOHB (Falkner, Klein & Hutter, "BOHB: Robust and Efficient
 * Hyperparameter Optimization at Scale", ICML 2018): Hyperband's brackets,
 * with each new configuration drawn from a multivariate TPE model of the
 * results at the highest fidelity that has enough of them (a fraction
 * stays random).  Scheduler and model: ../common/bracketopt.c. */
#include <sieve/component.h>
#include <sieve/optimizer.h>
#include <sieve/options.h>
#include <sieve/plugin.h>
#include <sieve/space.h>

#include "bracketopt.h"

static const SieveOptionSpec bohb_options[] = {
  OPT_BRACKET_OPTIONS,
  OPT_BOHB_MODEL_OPTIONS,
  SIEVE_OPTION_END,
};

static gpointer
bohb_create(const SieveSpace *space, const SieveOptions *options, const SieveStudyInfo *study, GError **error)
{
  return opt_bracketopt_create(space, options, study, OPT_BRACKETS_BOHB, error);
}

static const SieveOptimizerClass bohb_class = {
  .create = bohb_create,
  .destroy = opt_bracketopt_destroy,
  .ask = opt_bracketopt_ask,
  .tell = opt_bracketopt_tell,
  .save = opt_bracketopt_save,
  .load = opt_bracketopt_load,
};

static const SieveComponentInfo bohb_info = {
  .kind = SIEVE_KIND_OPTIMIZER,
  .name = "bohb",
  .summary = "BOHB: Hyperband with configurations from a multivariate TPE model",
  .options = bohb_options,
  .klass = &bohb_class,
};

static gboolean
bohb_init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &bohb_info, error);
}

SIEVE_PLUGIN_DEFINE("bohb", "0.1.0", "BOHB", "MIT", bohb_init);
