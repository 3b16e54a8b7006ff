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

  /* A top-level seed the component's range cannot hold (train's seed is
   * 0..2^31-1) is mapped into it, deterministically, never refused: such
   * studies could be started before the seed reached the evaluator. */
  g_autoptr(SieveExperiment) big =
      load_ok("seed: 4294967296\nspace: {plugin: nb201, C: 4, N: 1}\noptimizer: {plugin: random}\n"
              "evaluator: {plugin: train, dataset: fashion-mnist}\nobjective: {metric: val_acc}\n"
              "budget: {evaluations: 1}\n");
  gint64 mapped = sieve_options_get_int(big->evaluator.options, "seed");
  g_assert_cmpint(mapped, >=, 0);
  g_assert_cmpint(mapped, <=, G_MAXINT32);
  g_assert_cmpuint(big->optimizer_seed, ==, 4294967296ULL);
  g_autoptr(SieveExperiment) again =
      load_ok("seed: 4294967296\nspace: {plugin: nb201, C: 4, N: 1}\noptimizer: {plugin: random}\n"
              "evaluator: {plugin: train, dataset: fashion-mnist}\nobjective: {metric: val_acc}\n"
              "budget: {evaluations: 1}\n");
  g_assert_cmpint(sieve_options_get_int(again->evaluator.options, "seed"), ==, mapped);
  /* Neighbouring seeds map to different component seeds. */
  g_autoptr(SieveExperiment) next =
      load_ok("seed: 4294967297\nspace: {plugin: nb201, C: 4, N: 1}\noptimizer: {plugin: random}\n"
              "evaluator: {plugin: train, dataset: fashion-mnist}\nobjective: {metric: val_acc}\n"
              "budget: {evaluations: 1}\n");
  g_assert_cmpint(sieve_options_get_int(next->evaluator.options, "seed"), !=, mapped);
  /* A seed within the range is passed as it is. */
  g_autoptr(SieveExperiment) fits =
      load_ok("seed: 2147483647\nspace: {plugin: nb201, C: 4, N: 1}\noptimizer: {plugin: random}\n"
              "evaluator: {plugin: train, dataset: fashion-mnist}\nobjective: {metric: val_acc}\n"
              "budget: {evaluations: 1}\n");
  g_assert_cmpint(sieve_options_get_int(fits->evaluator.options, "seed"), ==, G_MAXINT32);

  /* The component's own seed out of its range stays an error, at its line. */
  g_autoptr(GError) error = NULL;
  g_autoptr(SieveExperiment) own_big =
      load("seed: 1\nspace: {plugin: nb201, C: 4, N: 1}\noptimizer: {plugin: random}\n"
           "evaluator: {plugin: train, dataset: fashion-mnist, seed: 4294967296}\nobjective: {metric: val_acc}\n"
           "budget: {evaluations: 1}\n",
           &error);
  g_assert_null(own_big);
  g_assert_nonnull(error);
  g_assert_true(g_str_has_prefix(error->message, "test.yaml:4:"));
  g_assert_nonnull(strstr(error->message, "option 'seed' expects an integer in [0, 2147483647]"));
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
