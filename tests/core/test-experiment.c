/* tests/core: an experiment file resolved against the build tree's
 * plugins: the top-level seed reaching every component that does not set
 * its own. */
#include <string.h>

#include <sieve/sieve.h>

#include "core/core-private.h"
#include "test-support.h"

static SieveRegistry *registry;

static SieveExperiment *
load(const char *text, GError **error)
{
  return sieve_experiment_load_string(text, "test.yaml", g_get_tmp_dir(), NULL, registry, NULL, error);
}

static SieveExperiment *
load_ok(const char *text)
{
  GError *error = NULL;
  SieveExperiment *exp = load(text, &error);
  g_assert_no_error(error);
  return exp;
}

#define SPACE "space: {plugin: hpo, parameters: {x1: {type: float, low: -5, high: 10}, x2: {type: float, low: 0, high: 15}}}\n"
#define REST "objective: {metric: value, direction: minimize}\nbudget: {evaluations: 3}\n"

/* README: `seed` is the seed "of every component that does not set its
 * own"; the evaluator (the function's noise, the trainer's initialisation)
 * got its own default instead. */
static void
test_seed_reaches_components(void)
{
  g_autoptr(SieveExperiment) inherited =
      load_ok("seed: 7\n" SPACE "optimizer: {plugin: random}\nevaluator: {plugin: function, function: branin, "
              "noise: 1.0}\n" REST);
  g_assert_cmpint(sieve_options_get_int(inherited->evaluator.options, "seed"), ==, 7);
  g_assert_cmpuint(inherited->optimizer_seed, ==, 7);
  /* The stored experiment is the file as written. */
  g_assert_null(sieve_node_lookup(inherited->evaluator.node, "seed"));

  /* A component's own seed wins, for the evaluator as for the optimizer. */
  g_autoptr(SieveExperiment) own =
      load_ok("seed: 7\n" SPACE "optimizer: {plugin: random, seed: 3}\nevaluator: {plugin: function, "
              "function: branin, noise: 1.0, seed: 2}\n" REST);
  g_assert_cmpint(sieve_options_get_int(own->evaluator.options, "seed"), ==, 2);
  g_assert_cmpuint(own->optimizer_seed, ==, 3);

  /* No top-level seed: each component keeps its default. */
  g_autoptr(SieveExperiment) none =
      load_ok(SPACE "optimizer: {plugin: random}\nevaluator: {plugin: function, function: branin}\n" REST);
  g_assert_cmpint(sieve_options_get_int(none->evaluator.options, "seed"), ==, 0);
  g_assert_false(sieve_options_is_set(none->evaluator.options, "seed"));

  /* A component without a seed option is left alone (tabular has none). */
  g_autofree char *table = test_nb201_table();
  g_autofree char *tabular = g_strdup_printf("seed: 5\nspace: {plugin: nb201}\noptimizer: {plugin: random}\n"
                                             "evaluator: {plugin: tabular, table: %s, metrics: [cifar10_valid_acc]}\n"
                                             "objective: {metric: cifar10_valid_acc}\nbudget: {evaluations: 3}\n",
                                             table);
  g_autoptr(SieveExperiment) plain = load_ok(tabular);
  g_assert_nonnull(plain->evaluator.options);

  /* A seed a component cannot take is reported where it was written. */
  g_autoptr(GError) error = NULL;
  g_autoptr(SieveExperiment) big =
      load("seed: 4294967296\nspace: {plugin: nb201, C: 4, N: 1}\noptimizer: {plugin: random}\n"
           "evaluator: {plugin: train, dataset: fashion-mnist}\nobjective: {metric: val_acc}\n"
           "budget: {evaluations: 1}\n",
           &error);
  g_assert_null(big);
  g_assert_nonnull(error);
  g_assert_true(g_str_has_prefix(error->message, "test.yaml:1:7: option 'seed' expects an integer in [0, 2147483647]"));
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  registry = test_registry_load();
  g_test_add_func("/experiment/seed/components", test_seed_reaches_components);
  int rc = g_test_run();
  sieve_registry_free(registry);
  return rc;
}
