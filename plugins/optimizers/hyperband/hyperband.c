/* sieve plugin: Hyperband (Li, Jamieson, DeSalvo, Rostamizadeh &
 * Talwalkar, "Hyperband: A Novel Bandit-Based Approach to Hyperparameter
 * Optimization", JMLR 2018): successive-halving brackets from the most
 * aggressive (many random configurations at the lowest fidelity) to plain
 * random search at full fidelity, in turn.  The scheduler is in
 * ../common/brackets.c. */
#include <sieve/component.h>
#include <sieve/optimizer.h>
#include <sieve/options.h>
#include <sieve/plugin.h>
#include <sieve/space.h>

#include "bracketopt.h"

static const SieveOptionSpec hyperband_options[] = {
  OPT_BRACKET_OPTIONS,
  SIEVE_OPTION_END,
};

static gpointer
hyperband_create(const SieveSpace *space, const SieveOptions *options, const SieveStudyInfo *study, GError **error)
{
  return opt_bracketopt_create(space, options, study, OPT_BRACKETS_HYPERBAND, error);
}

static const SieveOptimizerClass hyperband_class = {
  .create = hyperband_create,
  .destroy = opt_bracketopt_destroy,
  .ask = opt_bracketopt_ask,
  .tell = opt_bracketopt_tell,
  .save = opt_bracketopt_save,
  .load = opt_bracketopt_load,
};

static const SieveComponentInfo hyperband_info = {
  .kind = SIEVE_KIND_OPTIMIZER,
  .name = "hyperband",
  .summary = "Hyperband: successive-halving brackets of every aggressiveness over the evaluator's fidelity",
  .options = hyperband_options,
  .klass = &hyperband_class,
};

static gboolean
hyperband_init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &hyperband_info, error);
}

SIEVE_PLUGIN_DEFINE("hyperband", "0.1.0", "Hyperband", "MIT", hyperband_init);
