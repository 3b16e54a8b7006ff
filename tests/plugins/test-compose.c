/* The builtin `compose` space (an nb201 architecture and an hpo recipe as one
 * space), its genotype text, its hashes and dedupe key, and the train
 * evaluator taking its options from the recipe (on real Fashion-MNIST). */
#include <math.h>
#include <string.h>

#include <sieve/sieve.h>

#include "engine/engine-private.h"
#include "test-support.h"

static SieveRegistry *registry;

#define NB201 "{plugin: nb201, C: 4, N: 1, in_channels: 1, size: 28}"
#define ARCH "|nor_conv_3x3~0|+|skip_connect~0|nor_conv_1x1~1|+|none~0|avg_pool_3x3~1|nor_conv_3x3~2|"

/* A composite of nb201 and an inline hpo part with the given parameters. */
static SieveSpace *
compose_try(const char *parameters, GError **error)
{
  g_autofree char *yaml = g_strdup_printf("parts:\n  - " NB201 "\n  - plugin: hpo\n    parameters: %s\n", parameters);
  return test_space_try(registry, "compose", yaml, NULL, error);
}

static SieveSpace *
compose_new(const char *parameters)
{
  GError *error = NULL;
  SieveSpace *space = compose_try(parameters, &error);
  g_assert_no_error(error);
  return space;
}

/* Every kind of decision, a condition, and choice names holding the two
 * characters the composite text escapes. */
#define RECIPE_ALL                                                                                             \
  "{lr: {type: float, low: 0.001, high: 0.5, log: true}, crop_pad: {type: int, low: 0, high: 4}, "              \
  "sched: [cosine, 'a;b', '50%'], warm: {type: float, low: 0, high: 1, condition: {sched: [cosine]}}}"

static void
test_round_trip(void)
{
  g_autoptr(SieveSpace) space = compose_new(RECIPE_ALL);
  g_assert_cmpuint(sieve_space_n_decisions(space), ==, 6 + 4);
  g_assert_true(sieve_space_can_build(space));
  for (guint i = 0; i < sieve_space_n_decisions(space); i++)
    g_assert_cmpint(sieve_space_is_architecture(space, i), ==, i < 6);
  /* The recipe's condition points at its own parent, shifted past nb201's six edges. */
  g_assert_cmpint(sieve_space_decision(space, 9)->parent, ==, 8);
  SieveRng rng;
  sieve_rng_seed(&rng, 11);
  guint escaped = 0;
  for (guint n = 0; n < 300; n++) {
    g_autoptr(SieveGenotype) g = sieve_space_sample(space, &rng);
    g_autofree char *text = sieve_space_format(space, g);
    GError *error = NULL;
    g_autoptr(SieveGenotype) back = sieve_space_parse(space, text, &error);
    g_assert_no_error(error);
    g_assert_true(sieve_genotype_equal(g, back));
    g_autofree char *again = sieve_space_format(space, back);
    g_assert_cmpstr(text, ==, again);
    escaped += strstr(text, "%253B") != NULL || strstr(text, "%2525") != NULL;
  }
  g_assert_cmpuint(escaped, >, 0); /* the choices 'a;b' and '50%' were met and came back */
  /* The text is the parts' own texts joined by ';'. */
  GError *error = NULL;
  g_autoptr(SieveGenotype) g = sieve_space_parse(space, ARCH ";lr=0.01,crop_pad=2,sched=cosine,warm=0.5", &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(sieve_genotype_get(g, 6), ==, 0.01);
  g_assert_cmpfloat(sieve_genotype_get(g, 3), ==, 0); /* edge_3_0: none */
  g_autofree char *json = sieve_space_to_json(space, g);
  g_assert_nonnull(strstr(json, "\"edge_3_0\": \"none\""));
  g_assert_nonnull(strstr(json, "\"lr\": 0.01"));
}

static void
test_bad_text(void)
{
  g_autoptr(SieveSpace) space = compose_new(RECIPE_ALL);
  /* ARCH is 87 characters: the recipe starts at character 89. */
  G_STATIC_ASSERT(sizeof ARCH - 1 == 87);
  static const struct {
    const char *text, *expected;
  } cases[] = {
      {ARCH, "the text ends at character 88 after part #1 (nb201); expected ';' and part #2 (hpo)"},
      {ARCH ";lr=0.1,crop_pad=1,sched=cosine,warm=0;x", "unexpected ';' at character 126"},
      {"|nor_conv_9x9~0|+|none~0|none~1|+|none~0|none~1|none~2|;lr=0.1,crop_pad=1,sched=a%3Bb",
       "part #1 (nb201), from character 1: bad genotype"},
      {ARCH ";lr=fast,crop_pad=1,sched=a%3Bb", "part #2 (hpo), from character 89: bad genotype 'lr=fast,"},
      {ARCH ";lr=0.1,crop_pad=1,sched=50%", "stray '%' at character 115"},
      {ARCH ";lr=0.1,crop_pad=1,sched=a%3Bb,warm=0.5", "'warm' is inactive"},
  };
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    GError *error = NULL;
    g_autoptr(SieveGenotype) g = sieve_space_parse(space, cases[k].text, &error);
    g_assert_null(g);
    g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE);
    if (strstr(error->message, cases[k].expected) == NULL)
      g_error("case %u: '%s' does not say '%s'", k, error->message, cases[k].expected);
    g_error_free(error);
  }
}

/* Every optimizer plugin searches the composite as it does any space:
 * asked genotypes validate (sieve_optimizer_ask checks them), round-trip as
 * text, and vary in both parts; told a synthetic objective of both parts. */
static void
test_optimizers(void)
{
  g_autoptr(SieveSpace) space = compose_new(RECIPE_ALL);
  g_autoptr(GPtrArray) optimizers = sieve_registry_list(registry, SIEVE_KIND_OPTIMIZER);
  static const char *const names[] = {"value", NULL};
  SieveFidelity fidelity = {.name = "epochs", .min = 0.25, .max = 1};
  SieveStudyInfo study = {.seed = 7, .n_objectives = 1, .objective_names = names, .fidelity = &fidelity};
  g_assert_cmpuint(optimizers->len, >=, 8);
  for (guint k = 0; k < optimizers->len; k++) {
    const SieveComponent *c = optimizers->pdata[k];
    GError *error = NULL;
    g_autoptr(SieveOptions) options = test_options_from(c, NULL, NULL, &error);
    g_assert_no_error(error);
    g_autoptr(SieveOptimizer) o = sieve_optimizer_new(c, space, options, &study, &error);
    if (o == NULL)
      g_error("%s on a compose space: %s", sieve_component_get_name(c), error->message);
    g_autoptr(GHashTable) archs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autoptr(GHashTable) lrs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint round = 0; round < 40; round++) {
      g_autoptr(GPtrArray) asked = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_candidate_free);
      if (!sieve_optimizer_ask(o, 1, asked, &error))
        g_error("%s: %s", sieve_component_get_name(c), error->message);
      for (guint i = 0; i < asked->len; i++) {
        const SieveCandidate *cand = asked->pdata[i];
        const SieveGenotype *g = sieve_candidate_get_genotype(cand);
        const char *text = sieve_candidate_get_text(cand);
        g_autoptr(SieveGenotype) back = sieve_space_parse(space, text, &error);
        g_assert_no_error(error);
        g_assert_true(sieve_genotype_equal(g, back));
        g_hash_table_add(archs, g_strndup(text, strchr(text, ';') - text));
        g_hash_table_add(lrs, g_strdup_printf("%.17g", sieve_genotype_get(g, 6)));
        /* Better with a smaller lr and more 3x3 convolutions. */
        double value = -log(sieve_genotype_get(g, 6));
        for (guint e = 0; e < 6; e++)
          value += sieve_genotype_get(g, e) == 3;
        g_autoptr(SieveResult) r = sieve_result_new();
        sieve_result_set_metric(r, "value", value);
        if (!sieve_optimizer_tell(o, cand, r, &value, &error))
          g_error("%s: %s", sieve_component_get_name(c), error->message);
      }
    }
    g_test_message("%s: %u networks, %u learning rates", sieve_component_get_name(c), g_hash_table_size(archs),
                   g_hash_table_size(lrs));
    g_assert_cmpuint(g_hash_table_size(archs), >, 1);
    g_assert_cmpuint(g_hash_table_size(lrs), >, 1);
  }
}

static void
expect_space_error(const char *yaml, const char *pattern)
{
  GError *error = NULL;
  g_autoptr(SieveSpace) space = test_space_try(registry, "compose", yaml, NULL, &error);
  g_assert_null(space);
  g_assert_nonnull(error);
  if (!g_regex_match_simple(pattern, error->message, 0, 0))
    g_error("'%s' does not match '%s'", error->message, pattern);
  g_error_free(error);
}

static void
test_bad_parts(void)
{
  expect_space_error("{}\n", "needs 'parts'");
  expect_space_error("parts: []\n", "^test.yaml:1:8: 'parts' must be a non-empty list");
  expect_space_error("parts: [nb201]\n", "^test.yaml:1:9: part #1 must be a map with a 'plugin' key");
  expect_space_error("parts: [{plugin: nb20}]\n", "^test.yaml:1:18: .*nb20.*nb201");
  expect_space_error("parts: [" NB201 ", " NB201 "]\n", "^test.yaml:1:73: part #2 \\(nb201\\) builds networks, as part #1");
  expect_space_error("parts: [{plugin: hpo, parameters: {x: [a]}}, {plugin: hpo, parameters: {x: [b]}}]\n",
                     "^test.yaml:1:46: decision 'x' of part #2 \\(hpo\\) is also a decision of part #1 \\(hpo\\)");
  expect_space_error("parts: [" NB201 ", {plugin: compose, parts: [" NB201 "]}]\n",
                     "part #2 \\(compose\\) builds networks, as part #1 \\(nb201\\) does");
  expect_space_error("parts: [{plugin: nb201, C: 0}]\n", "^test.yaml:1:\\d+: .*'C'");
}

/* Same network, different recipe: one network hash (what the functional
 * memo and `sieve hash` use), two dedupe keys; same recipe: one key. */
static void
test_hashes(void)
{
  g_autoptr(SieveSpace) space = compose_new("{lr: {type: float, low: 0.001, high: 0.5}}");
  g_autoptr(SieveSpace) nb201 = test_space_new(registry, "nb201", "{C: 4, N: 1, in_channels: 1, size: 28}", NULL);
  GError *error = NULL;
  g_autoptr(SieveGenotype) a = sieve_space_parse(space, ARCH ";lr=0.1", &error);
  g_autoptr(SieveGenotype) b = sieve_space_parse(space, ARCH ";lr=0.2", &error);
  /* skip_connect~0 then none~0 in node 3 instead: a different network. */
  g_autoptr(SieveGenotype) c = sieve_space_parse(
      space, "|nor_conv_3x3~0|+|skip_connect~0|nor_conv_1x1~1|+|skip_connect~0|avg_pool_3x3~1|nor_conv_3x3~2|;lr=0.1",
      &error);
  g_autoptr(SieveGenotype) plain = sieve_space_parse(nb201, ARCH, &error);
  g_assert_no_error(error);
  for (SieveHashKind kind = SIEVE_HASH_STRUCTURAL; kind <= SIEVE_HASH_FUNCTIONAL; kind++) {
    SieveHash ha, hb, hc, hp;
    g_assert_true(sieve_space_hash(space, a, kind, &ha, &error));
    g_assert_true(sieve_space_hash(space, b, kind, &hb, &error));
    g_assert_true(sieve_space_hash(space, c, kind, &hc, &error));
    g_assert_true(sieve_space_hash(nb201, plain, kind, &hp, &error));
    g_assert_no_error(error);
    g_assert_true(ha.hi == hb.hi && ha.lo == hb.lo);
    g_assert_true(ha.hi == hp.hi && ha.lo == hp.lo);
    g_assert_false(ha.hi == hc.hi && ha.lo == hc.lo);
  }
  for (SieveDedupeHash kind = SIEVE_DEDUPE_FUNCTIONAL; kind <= SIEVE_DEDUPE_GENOTYPE; kind++) {
    char ka[SIEVE_DEDUPE_HASH_LEN], ka2[SIEVE_DEDUPE_HASH_LEN], kb[SIEVE_DEDUPE_HASH_LEN],
        kp[SIEVE_DEDUPE_HASH_LEN];
    g_assert_true(sieve_dedupe_hash(space, a, kind, ka, &error));
    g_assert_true(sieve_dedupe_hash(space, a, kind, ka2, &error));
    g_assert_true(sieve_dedupe_hash(space, b, kind, kb, &error));
    g_assert_true(sieve_dedupe_hash(nb201, plain, kind, kp, &error));
    g_assert_no_error(error);
    g_assert_cmpstr(ka, ==, ka2);
    g_assert_cmpstr(ka, !=, kb);
    g_assert_cmpstr(ka, !=, kp); /* the recipe is part of the key */
  }
}

static void
expect_train_error(const char *parameters, const char *pattern)
{
  GError *error = NULL;
  g_autoptr(SieveSpace) space = compose_new(parameters);
  g_autoptr(SieveEvaluator) e =
      test_evaluator_try(registry, "train", space, "{train_limit: 256, validation: 0, test: false}", NULL, &error);
  g_assert_null(e);
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
  if (!g_regex_match_simple(pattern, error->message, 0, 0))
    g_error("'%s' does not match '%s'", error->message, pattern);
  g_error_free(error);
}

static void
test_train_refuses(void)
{
  /* parameters start on line 4 of test.yaml, column 17: "    parameters: {" */
  expect_train_error("{lr: {type: float, low: 0.01, high: 0.1}, lrate: {type: float, low: 0, high: 1}}",
                     "^test.yaml:4:\\d+: recipe decision 'lrate' is not an option the train evaluator takes from a "
                     "genotype \\(did you mean 'lr'\\?\\); it takes epochs, batch_size, lr,");
  expect_train_error("{lr: {type: float, low: 0.01, high: 200}}",
                     "^test.yaml:4:\\d+: recipe decision 'lr' ranges over \\[0.01, 200\\], outside");
  expect_train_error("{batch_size: ['64', big]}", "choice 'big' of recipe decision 'batch_size'");
  expect_train_error("{batch_size: {type: float, low: 16, high: 64}}",
                     "recipe decision 'batch_size' is a float, but the train option 'batch_size' takes");
}

static gboolean
have_fashion_mnist(void)
{
  return g_file_test("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz", G_FILE_TEST_EXISTS) ||
         g_file_test("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte", G_FILE_TEST_EXISTS);
}

static SieveResult *
train_at(SieveEvaluator *e, const SieveSpace *space, const char *text)
{
  GError *error = NULL;
  SieveGenotype *g = sieve_space_parse(space, text, &error);
  g_assert_no_error(error);
  g_autoptr(SieveCandidate) c = sieve_candidate_new(g, NAN);
  SieveResult *r = sieve_evaluator_evaluate(e, c, &error);
  g_assert_no_error(error);
  if (sieve_result_get_status(r) != SIEVE_STATUS_OK)
    g_error("%s: %s", text, sieve_result_get_reason(r));
  return r;
}

/* The learning rate reaches the trainer through the genotype: at lr 0 the
 * weights never move, so the last epoch's loss stays where it started
 * (near ln 10 = 2.30 for 10 classes); at 0.2 it falls well below.  Batch
 * size reaches it too: it sets the steps per epoch.  The same genotype
 * trains to the same bits. */
static void
test_recipe_reaches_trainer(void)
{
  if (!have_fashion_mnist()) {
    g_test_skip("no Fashion-MNIST under /usr/share/datasets (Debian's dataset-fashion-mnist)");
    return;
  }
  g_autoptr(SieveSpace) space =
      compose_new("{lr: {type: float, low: 0, high: 0.5}, batch_size: ['32', '64'], momentum: {type: float, low: 0, "
                  "high: 0.9}}");
  g_autoptr(SieveEvaluator) e = test_evaluator_new(
      registry, "train", space, "{train_limit: 512, validation: 0, test: false, epochs: 2, threads: 1}", NULL);
  g_autoptr(SieveResult) still = train_at(e, space, ARCH ";lr=0,batch_size=64,momentum=0.9");
  g_autoptr(SieveResult) moving = train_at(e, space, ARCH ";lr=0.2,batch_size=64,momentum=0.9");
  g_autoptr(SieveResult) again = train_at(e, space, ARCH ";lr=0.2,batch_size=64,momentum=0.9");
  double l0 = test_metric(still, "train_loss"), l1 = test_metric(moving, "train_loss");
  g_test_message("train loss at lr 0: %.4f, at lr 0.2: %.4f", l0, l1);
  g_assert_cmpfloat(fabs(l0 - log(10)), <, 0.25);
  g_assert_cmpfloat(l1, <, l0 - 0.3);
  g_assert_cmpfloat(test_metric(again, "train_loss"), ==, l1);
  g_assert_cmpfloat(test_metric(again, "train_acc"), ==, test_metric(moving, "train_acc"));
  /* 512 examples in batches of 32: 16 steps an epoch, 32 in 2 epochs; their
   * rate shows in images_per_s only, so compare the step counts through the
   * loss: a different batch size is a different training. */
  g_autoptr(SieveResult) small = train_at(e, space, ARCH ";lr=0.2,batch_size=32,momentum=0.9");
  g_assert_cmpfloat(test_metric(small, "train_loss"), !=, l1);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  registry = test_registry_load();
  g_test_add_func("/compose/round-trip", test_round_trip);
  g_test_add_func("/compose/bad-text", test_bad_text);
  g_test_add_func("/compose/bad-parts", test_bad_parts);
  g_test_add_func("/compose/hashes", test_hashes);
  g_test_add_func("/compose/optimizers", test_optimizers);
  g_test_add_func("/compose/train-refuses", test_train_refuses);
  g_test_add_func("/compose/recipe-reaches-trainer", test_recipe_reaches_trainer);
  int status = g_test_run();
  sieve_registry_free(registry);
  return status;
}
