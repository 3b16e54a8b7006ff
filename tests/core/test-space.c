/* Spaces, genotypes, the generic text form, the RNG and results. */
#include <math.h>
#include <string.h>

#include <sieve/sieve.h>

static const char *const optimizers[] = {"sgd", "adam", "odd,name=%"};

/* optimizer (categorical) -> momentum only for sgd, beta1 only for adam. */
static SieveSpace *
make_space(void)
{
  SieveSpace *space = sieve_space_new(NULL, NULL, NULL);
  guint opt = sieve_space_add_categorical(space, "optimizer", 3, optimizers);
  sieve_space_add_float(space, "lr", 1e-5, 1e-1, TRUE);
  guint mom = sieve_space_add_float(space, "momentum", 0.0, 0.99, FALSE);
  sieve_space_set_condition(space, mom, opt, 1u << 0);
  guint beta = sieve_space_add_float(space, "beta1", 0.5, 0.999, FALSE);
  sieve_space_set_condition(space, beta, opt, 1u << 1);
  sieve_space_add_int(space, "batch", 16, 512, TRUE);
  sieve_space_add_int(space, "layers", 1, 8, FALSE);
  return space;
}

static void
test_sample_respects_domains(void)
{
  g_autoptr(SieveSpace) space = make_space();
  SieveRng rng;
  sieve_rng_seed(&rng, 1);
  guint counts[3] = {0}, layer_counts[9] = {0};
  double log_lr_sum = 0;
  const int n = 20000;
  for (int i = 0; i < n; i++) {
    g_autoptr(SieveGenotype) g = sieve_space_sample(space, &rng);
    GError *error = NULL;
    g_assert_true(sieve_space_validate(space, g, &error));
    g_assert_no_error(error);
    guint opt = (guint) sieve_genotype_get(g, 0);
    counts[opt]++;
    g_assert_cmpint(isnan(sieve_genotype_get(g, 2)), ==, opt != 0);
    g_assert_cmpint(isnan(sieve_genotype_get(g, 3)), ==, opt != 1);
    log_lr_sum += log10(sieve_genotype_get(g, 1));
    layer_counts[(guint) sieve_genotype_get(g, 5)]++;
  }
  /* Uniform choices (binomial sd ~ 67 for n/3), log-uniform lr (mean log10 = -3),
   * every layer count reached. */
  for (int k = 0; k < 3; k++)
    g_assert_cmpfloat(fabs(counts[k] - n / 3.0), <, 400);
  g_assert_cmpfloat(fabs(log_lr_sum / n + 3.0), <, 0.05);
  for (int k = 1; k <= 8; k++)
    g_assert_cmpfloat(fabs(layer_counts[k] - n / 8.0), <, 300);
}

static void
test_text_round_trip(void)
{
  g_autoptr(SieveSpace) space = make_space();
  SieveRng rng;
  sieve_rng_seed(&rng, 2);
  for (int i = 0; i < 2000; i++) {
    g_autoptr(SieveGenotype) g = sieve_space_sample(space, &rng);
    g_autofree char *text = sieve_space_format(space, g);
    GError *error = NULL;
    g_autoptr(SieveGenotype) back = sieve_space_parse(space, text, &error);
    g_assert_no_error(error);
    g_assert_true(sieve_genotype_equal(g, back));
    g_autofree char *again = sieve_space_format(space, back);
    g_assert_cmpstr(text, ==, again);
  }
  /* A choice name with the separators in it survives. */
  g_autoptr(SieveGenotype) g = sieve_genotype_new(space);
  sieve_genotype_set(g, 0, 2);
  sieve_genotype_set(g, 1, 0.1);
  sieve_genotype_set(g, 4, 64);
  sieve_genotype_set(g, 5, 3);
  g_autofree char *text = sieve_space_format(space, g);
  g_assert_cmpstr(text, ==, "optimizer=odd%2Cname%3D%25,lr=0.1,batch=64,layers=3");
  g_autoptr(SieveGenotype) back = sieve_space_parse(space, text, NULL);
  g_assert_true(sieve_genotype_equal(g, back));
  g_autofree char *json = sieve_space_to_json(space, g);
  g_assert_cmpstr(json, ==, "{\"optimizer\": \"odd,name=%\", \"lr\": 0.1, \"batch\": 64, \"layers\": 3}");
}

static void
assert_parse_error(const SieveSpace *space, const char *text, const char *expected)
{
  GError *error = NULL;
  g_assert_null(sieve_space_parse(space, text, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE);
  g_autofree char *want = g_strdup_printf("bad genotype '%s' for space 'custom': %s", text, expected);
  g_assert_cmpstr(error->message, ==, want);
  g_error_free(error);
}

static void
test_parse_errors(void)
{
  g_autoptr(SieveSpace) space = make_space();
  assert_parse_error(space, "optimizer=sgd,lr=0.1,momentum=0.5,batch=64", "'layers' is active but has no value");
  assert_parse_error(space, "optimizer=adam,lr=0.1,momentum=0.5,batch=64,layers=2",
                     "'momentum' is inactive (its condition on 'optimizer' does not hold) but has a value");
  assert_parse_error(space, "optimizer=rmsprop", "'rmsprop' is not a choice of 'optimizer' (one of: sgd, adam, odd,name=%)");
  assert_parse_error(space, "optimiser=sgd", "unknown decision 'optimiser' (did you mean 'optimizer'?)");
  assert_parse_error(space, "optimizer=sgd,lr=2,momentum=0.5,batch=64,layers=2", "'lr' = 2 is outside [1e-05, 0.1]");
  assert_parse_error(space, "optimizer=sgd,lr=0.1,momentum=0.5,batch=64.5,layers=2", "'batch' expects an integer, got '64.5'");
  /* Out of range: the value as written, not strtoll's clamp to 2^63 - 1
   * nor the nearest double. */
  assert_parse_error(space, "optimizer=sgd,lr=0.1,momentum=0.5,batch=64,layers=99999999999999999999",
                     "'layers' = 99999999999999999999 is outside [1, 8]");
  assert_parse_error(space, "optimizer=sgd,lr=0.1,momentum=0.5,batch=64,layers=-99999999999999999999",
                     "'layers' = -99999999999999999999 is outside [1, 8]");
  assert_parse_error(space, "optimizer=sgd,lr=0.1,momentum=0.5,batch=9007199254740993,layers=2",
                     "'batch' = 9007199254740993 is outside [16, 512]");
  assert_parse_error(space, "optimizer=sgd,lr=1e-1000,momentum=0.5,batch=64,layers=2", "'lr' = 1e-1000 is outside [1e-05, 0.1]");
  assert_parse_error(space, "optimizer=sgd,lr", "expected name=value, got 'lr'");
  assert_parse_error(space, "optimizer=sgd,optimizer=adam", "'optimizer' given twice");
}

static void
test_repair(void)
{
  g_autoptr(SieveSpace) space = make_space();
  SieveRng rng;
  sieve_rng_seed(&rng, 3);
  g_autoptr(SieveGenotype) g = sieve_space_sample(space, &rng);
  /* Switch the parent: the old child must go, the new one must appear. */
  double opt = sieve_genotype_get(g, 0);
  sieve_genotype_set(g, 0, opt == 0 ? 1 : 0);
  g_assert_false(sieve_space_validate(space, g, NULL));
  sieve_genotype_repair(g, &rng);
  g_assert_true(sieve_space_validate(space, g, NULL));
}

/* The parallel fill gives exactly the sequential stream and leaves the
 * same state, below and above the size where it goes parallel. */
static void
test_rng_normal_fill(void)
{
  const gsize sizes[] = {0, 7, 16383, 16384, 100003, (1 << 20) + 5}; /* below, at, past the parallel size; two chunks */
  for (guint s = 0; s < G_N_ELEMENTS(sizes); s++) {
    SieveRng a, b;
    sieve_rng_seed(&a, 9 + s);
    sieve_rng_seed(&b, 9 + s);
    g_autofree double *fill = g_new(double, sizes[s] + 1);
    sieve_rng_normal_fill(&a, fill, sizes[s], 4);
    for (gsize k = 0; k < sizes[s]; k++) {
      double one = sieve_rng_normal(&b);
      g_assert_true(memcmp(&one, &fill[k], sizeof one) == 0);
    }
    g_assert_cmpuint(sieve_rng_next(&a), ==, sieve_rng_next(&b));
  }
}

static void
test_rng(void)
{
  SieveRng a, b;
  sieve_rng_seed(&a, 42);
  sieve_rng_seed(&b, 42);
  for (int i = 0; i < 100; i++)
    g_assert_cmpuint(sieve_rng_next(&a), ==, sieve_rng_next(&b));
  /* save / load continues the same stream */
  g_autoptr(GVariant) state = g_variant_ref_sink(sieve_rng_save(&a));
  guint64 expect[10];
  for (int i = 0; i < 10; i++)
    expect[i] = sieve_rng_next(&a);
  SieveRng c;
  GError *error = NULL;
  g_assert_true(sieve_rng_load(&c, state, &error));
  for (int i = 0; i < 10; i++)
    g_assert_cmpuint(sieve_rng_next(&c), ==, expect[i]);
  g_autoptr(GVariant) wrong = g_variant_ref_sink(g_variant_new_uint32(5));
  g_assert_false(sieve_rng_load(&c, wrong, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE);
  g_clear_error(&error);
  /* below() is unbiased: chi-square over 7 buckets, 70000 draws
   * (critical value at p = 0.001 with 6 degrees of freedom: 22.46). */
  guint buckets[7] = {0};
  for (int i = 0; i < 70000; i++)
    buckets[sieve_rng_below(&a, 7)]++;
  double chi = 0;
  for (int k = 0; k < 7; k++)
    chi += (buckets[k] - 10000.0) * (buckets[k] - 10000.0) / 10000.0;
  g_assert_cmpfloat(chi, <, 22.46);
  /* normal(): mean 0, variance 1 */
  double sum = 0, sum2 = 0;
  for (int i = 0; i < 100000; i++) {
    double x = sieve_rng_normal(&a);
    sum += x;
    sum2 += x * x;
  }
  g_assert_cmpfloat(fabs(sum / 1e5), <, 0.02);
  g_assert_cmpfloat(fabs(sum2 / 1e5 - 1), <, 0.02);
  double u = sieve_rng_uniform(&a);
  g_assert_cmpfloat(u, >=, 0.0);
  g_assert_cmpfloat(u, <, 1.0);
}

static void
test_result(void)
{
  g_autoptr(SieveResult) r = sieve_result_new();
  g_assert_cmpint(sieve_result_get_status(r), ==, SIEVE_STATUS_OK);
  sieve_result_set_metric(r, "b", 2);
  sieve_result_set_metric(r, "a", 1);
  sieve_result_set_metric(r, "b", 3);
  g_assert_cmpuint(sieve_result_n_metrics(r), ==, 2);
  g_assert_cmpstr(sieve_result_metric_name(r, 0), ==, "b");
  g_assert_cmpfloat(sieve_result_metric_value(r, 0), ==, 3);
  double v;
  g_assert_false(sieve_result_get_metric(r, "c", &v));
  sieve_result_set_failed(r, "exit %d", 3);
  g_autoptr(SieveResult) copy = sieve_result_copy(r);
  g_assert_cmpint(sieve_result_get_status(copy), ==, SIEVE_STATUS_FAILED);
  g_assert_cmpstr(sieve_result_get_reason(copy), ==, "exit 3");
  g_assert_true(sieve_result_get_metric(copy, "a", &v) && v == 1);
  SieveStatus s;
  for (int k = SIEVE_STATUS_PENDING; k <= SIEVE_STATUS_CACHED; k++) {
    g_assert_true(sieve_status_from_string(sieve_status_to_string(k), &s));
    g_assert_cmpint(s, ==, k);
  }
  g_assert_false(sieve_status_from_string("done", &s));
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/space/sample", test_sample_respects_domains);
  g_test_add_func("/space/text-round-trip", test_text_round_trip);
  g_test_add_func("/space/parse-errors", test_parse_errors);
  g_test_add_func("/space/repair", test_repair);
  g_test_add_func("/rng/streams", test_rng);
  g_test_add_func("/rng/normal-fill", test_rng_normal_fill);
  g_test_add_func("/result/basics", test_result);
  return g_test_run();
}
