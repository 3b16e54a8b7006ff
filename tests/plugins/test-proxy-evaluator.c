/* The `proxy` evaluator plugin, loaded from the build tree as sieve loads
 * it: its scores are sieve_proxy_compute's on the same network, options and
 * batch; its objective follows the formula of its documentation, with the
 * reference sample recomputed here from that documentation (networks drawn
 * by sieve_space_sample from a generator seeded with `seed`); degenerate
 * networks; and its errors at create.  Small NB201 networks (C=4, N=1,
 * 8x8 inputs, 8 examples) keep it fast. */
#include <math.h>
#include <string.h>

#include <sieve/proxy.h>
#include <sieve/sieve.h>

#include "test-support.h"

static SieveRegistry *registry;

#define SPACE "{C: 4, N: 1, size: 8}"
static const char *const A1 = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|";
static const char *const A2 = "|nor_conv_1x1~0|+|none~0|skip_connect~1|+|avg_pool_3x3~0|nor_conv_3x3~1|none~2|";
static const char *const EMPTY = "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|";

static SieveEvaluator *
evaluator_try(const SieveSpace *space, const char *yaml, GError **error)
{
  return test_evaluator_try(registry, "proxy", space, yaml, NULL, error);
}

static SieveEvaluator *
evaluator_new(const SieveSpace *space, const char *yaml)
{
  return test_evaluator_new(registry, "proxy", space, yaml, NULL);
}

static SieveResult *
evaluate(SieveEvaluator *e, const SieveSpace *space, const char *arch)
{
  GError *error = NULL;
  SieveGenotype *g = sieve_space_parse(space, arch, &error);
  g_assert_no_error(error);
  g_autoptr(SieveCandidate) c = sieve_candidate_new(g, NAN);
  SieveResult *r = sieve_evaluator_evaluate(e, c, &error);
  g_assert_no_error(error);
  g_assert_nonnull(r);
  return r;
}

/* What sieve_proxy_compute gives the genotype's network. */
static void
direct(const SieveSpace *space, const SieveGenotype *g, const char *const *names, guint n,
       const SieveProxyOptions *o, double *scores, gboolean *ok)
{
  GError *error = NULL;
  g_autoptr(SieveGraph) net = sieve_space_build(space, g, &error);
  g_assert_no_error(error);
  *ok = sieve_proxy_compute(net, names, n, o, scores, NULL, &error);
  g_clear_error(&error);
}

static void
direct_arch(const SieveSpace *space, const char *arch, const char *const *names, guint n,
            const SieveProxyOptions *o, double *scores)
{
  GError *error = NULL;
  g_autoptr(SieveGenotype) g = sieve_space_parse(space, arch, &error);
  g_assert_no_error(error);
  gboolean ok;
  direct(space, g, names, n, o, scores, &ok);
  g_assert_true(ok);
}

static double
signed_log(double s)
{
  return (s < 0 ? -1 : 1) * log1p(fabs(s));
}

static void
assert_close(double got, double want)
{
  if (isinf(want)) {
    g_assert_cmpfloat(got, ==, want);
    return;
  }
  g_assert_cmpfloat_with_epsilon(got, want, 1e-12 * (1 + fabs(want)));
}

/* ---- tests ------------------------------------------------------------- */

static void
test_one_proxy(void)
{
  g_autoptr(SieveSpace) space = test_space_new(registry, "nb201", SPACE, NULL);
  g_autoptr(SieveEvaluator) e = evaluator_new(space, "{proxies: [synflow], batch_size: 8, seed: 3, threads: 1}");
  const char *names[] = {"synflow"};
  SieveProxyOptions o = {.batch = 8, .seed = 3, .threads = 1};
  for (guint a = 0; a < 2; a++) {
    const char *arch = a ? A2 : A1;
    g_autoptr(SieveResult) r = evaluate(e, space, arch);
    double want;
    direct_arch(space, arch, names, 1, &o, &want);
    g_assert_cmpint(sieve_result_get_status(r), ==, SIEVE_STATUS_OK);
    g_assert_cmpfloat(test_metric(r, "synflow"), ==, want);
    /* One proxy: the objective is its own value, not a transform of it. */
    g_assert_cmpfloat(test_metric(r, "score"), ==, want);
    g_assert_cmpfloat(test_metric(r, "synflow_ms"), >=, 0);
    g_assert_false(sieve_result_get_metric(r, "synflow_z", NULL));
    g_assert_cmpuint(sieve_result_n_metrics(r), ==, 3);
  }
  /* A single name written as a scalar is a list of one. */
  g_autoptr(SieveEvaluator) scalar = evaluator_new(space, "{proxies: params}");
  g_autoptr(SieveResult) r = evaluate(scalar, space, A1);
  g_assert_cmpfloat(test_metric(r, "score"), ==, test_metric(r, "params"));
  g_assert_cmpfloat(test_metric(r, "params"), >, 0);
}

/* The ensemble: z_k = (L(s_k) - mean_k) / sd_k with mean and sd of L over
 * `reference` networks sampled with a generator seeded with `seed`;
 * score = sum w_k z_k / sum w_k. */
static void
test_ensemble(void)
{
  g_autoptr(SieveSpace) space = test_space_new(registry, "nb201", SPACE, NULL);
  const char *names[] = {"naswot", "synflow", "snip"};
  const double w[] = {2, 1, 0.5};
  const guint k = 6;
  g_autoptr(SieveEvaluator) e = evaluator_new(
    space, "{proxies: [naswot, synflow, snip], weights: [2, 1, 0.5], reference: 6, batch_size: 8, seed: 3, "
           "threads: 1}");
  SieveProxyOptions o = {.batch = 8, .seed = 3, .threads = 1};
  double mean[3] = {0}, m2[3] = {0};
  guint count[3] = {0};
  SieveRng rng;
  sieve_rng_seed(&rng, 3);
  for (guint r = 0; r < k; r++) {
    g_autoptr(SieveGenotype) g = sieve_space_sample(space, &rng);
    double s[3];
    gboolean ok;
    direct(space, g, names, 3, &o, s, &ok);
    for (guint i = 0; ok && i < 3; i++) {
      double l = signed_log(s[i]);
      if (!isfinite(l))
        continue;
      count[i]++;
      double d = l - mean[i];
      mean[i] += d / count[i];
      m2[i] += d * (l - mean[i]);
    }
  }
  double sd[3];
  for (guint i = 0; i < 3; i++) {
    g_assert_cmpuint(count[i], >=, 2);
    sd[i] = sqrt(m2[i] / count[i]);
    g_assert_cmpfloat(sd[i], >, 0);
  }
  for (guint a = 0; a < 2; a++) {
    const char *arch = a ? A2 : A1;
    g_autoptr(SieveResult) r = evaluate(e, space, arch);
    double s[3];
    direct_arch(space, arch, names, 3, &o, s);
    double sum = 0;
    for (guint i = 0; i < 3; i++) {
      g_assert_cmpfloat(test_metric(r, names[i]), ==, s[i]);
      g_autofree char *zn = g_strdup_printf("%s_z", names[i]);
      double z = (signed_log(s[i]) - mean[i]) / sd[i];
      g_assert_cmpfloat_with_epsilon(test_metric(r, zn), z, 1e-9 * (1 + fabs(z)));
      sum += w[i] * test_metric(r, zn);
    }
    assert_close(test_metric(r, "score"), sum / 3.5);
  }

  /* reference: 0, equal weights: the plain mean of L. */
  g_autoptr(SieveEvaluator) plain =
    evaluator_new(space, "{proxies: [naswot, synflow, snip], reference: 0, batch_size: 8, seed: 3, threads: 1}");
  g_autoptr(SieveResult) r = evaluate(plain, space, A1);
  double s[3];
  direct_arch(space, A1, names, 3, &o, s);
  for (guint i = 0; i < 3; i++) {
    g_autofree char *zn = g_strdup_printf("%s_z", names[i]);
    assert_close(test_metric(r, zn), signed_log(s[i]));
  }
  assert_close(test_metric(r, "score"), (signed_log(s[0]) + signed_log(s[1]) + signed_log(s[2])) / 3);

  /* A zero weight takes the proxy out of the score, not out of the metrics. */
  g_autoptr(SieveEvaluator) zero = evaluator_new(
    space, "{proxies: [naswot, synflow], weights: [0, 1], reference: 0, batch_size: 8, seed: 3, threads: 1}");
  g_autoptr(SieveResult) rz = evaluate(zero, space, A1);
  assert_close(test_metric(rz, "score"), signed_log(s[1]));
  assert_close(test_metric(rz, "naswot"), s[0]);
}

/* The network that computes nothing: naswot's kernel is singular (-inf),
 * synflow is 0.  It has no score (an objective optimizers do arithmetic
 * on must be finite): its trial fails with a reason that says which proxy
 * and what it means, and keeps the proxies' own values; the screen's
 * rank aggregation still ranks it last. */
#define DEGENERATE "degenerate network: naswot is -inf (its output does not depend on its input)"
static void
test_degenerate(void)
{
  g_autoptr(SieveSpace) space = test_space_new(registry, "nb201", SPACE, NULL);
  g_autoptr(SieveEvaluator) e =
    evaluator_new(space, "{proxies: [naswot, synflow], reference: 4, batch_size: 8, seed: 1, threads: 1}");
  const char *const archs[] = {A1, A2, EMPTY};
  double proxies[3 * 2];
  for (guint a = 0; a < 3; a++) {
    g_autoptr(SieveResult) r = evaluate(e, space, archs[a]);
    g_assert_cmpint(sieve_result_get_status(r), ==, (a < 2 ? SIEVE_STATUS_OK : SIEVE_STATUS_FAILED));
    proxies[a * 2] = test_metric(r, "naswot");
    proxies[a * 2 + 1] = test_metric(r, "synflow");
    if (a == 2)
      g_assert_cmpstr(sieve_result_get_reason(r), ==, DEGENERATE);
  }
  g_assert_cmpfloat(proxies[4], ==, -INFINITY);
  g_assert_cmpfloat(proxies[5], ==, 0);
  double rank[3];
  sieve_proxy_rank_aggregate(proxies, 3, 2, NULL, rank);
  for (guint a = 0; a < 2; a++)
    g_assert_cmpfloat(rank[2], <, rank[a]);
  /* One proxy: the same failure, no score. */
  g_autoptr(SieveEvaluator) one = evaluator_new(space, "{proxies: [naswot], batch_size: 8, seed: 1, threads: 1}");
  g_autoptr(SieveResult) r1 = evaluate(one, space, EMPTY);
  g_assert_cmpint(sieve_result_get_status(r1), ==, SIEVE_STATUS_FAILED);
  g_assert_cmpstr(sieve_result_get_reason(r1), ==, DEGENERATE);
  g_assert_cmpfloat(test_metric(r1, "naswot"), ==, -INFINITY);
  g_assert_false(sieve_result_get_metric(r1, "score", NULL));
  /* Weighted out, the singular kernel does not count. */
  g_autoptr(SieveEvaluator) w = evaluator_new(
    space, "{proxies: [naswot, synflow], weights: [0, 1], reference: 0, batch_size: 8, seed: 1, threads: 1}");
  g_autoptr(SieveResult) rw = evaluate(w, space, EMPTY);
  g_assert_cmpfloat(test_metric(rw, "score"), ==, 0);
}

static void
expect_error(const SieveSpace *space, const char *yaml, const char *want)
{
  GError *error = NULL;
  g_autoptr(SieveEvaluator) e = evaluator_try(space, yaml, &error);
  g_assert_null(e);
  g_assert_nonnull(error);
  if (strstr(error->message, want) == NULL)
    g_error("options %s: got error \"%s\", wanted \"%s\"", yaml, error->message, want);
  g_error_free(error);
}

static void
test_errors(void)
{
  g_autoptr(SieveSpace) space = test_space_new(registry, "nb201", SPACE, NULL);
  /* The unknown name is pointed at where it is written, with the list. */
  GError *error = NULL;
  g_autoptr(SieveEvaluator) e = evaluator_try(space, "{proxies: [naswot, synflw]}", &error);
  g_assert_null(e);
  g_assert_nonnull(error);
  g_assert_true(g_str_has_prefix(error->message, "test.yaml:1:20: unknown proxy \"synflw\" (known: "));
  for (guint i = 0; i < sieve_proxy_count(); i++)
    g_assert_nonnull(strstr(error->message, sieve_proxy_info(i)->name));
  g_clear_error(&error);
  expect_error(space, "{proxies: [naswot, synflow], weights: [1]}",
               "test.yaml:1:39: 'weights' has 1 values for 2 proxies");
  expect_error(space, "{proxies: [naswot], weights: [1, 2]}", "test.yaml:1:30: 'weights' has 2 values for 1 proxy");
  expect_error(space, "{proxies: [naswot, synflow], weights: [1, -1]}",
               "test.yaml:1:43: a weight must be a finite number >= 0, got -1");
  expect_error(space, "{proxies: [naswot, synflow], weights: [0, 0]}", "'weights' are all zero");
  expect_error(space, "{proxies: [naswot, naswot]}", "test.yaml:1:11: proxy 'naswot' is listed twice");
  expect_error(space, "{proxies: []}", "test.yaml:1:11: 'proxies' is empty");
  expect_error(space, "{batch_size: 8}", "proxies");
  expect_error(space, "{proxies: [naswot], batch_size: 0}", "test.yaml:1:33:");
  /* A space without networks is refused at create, naming it. */
  g_autoptr(SieveSpace) hpo =
    test_space_new(registry, "hpo", "parameters: {lr: {type: float, low: 0.001, high: 0.1}}", NULL);
  expect_error(hpo, "{proxies: [naswot]}", "the proxy evaluator scores networks, and space 'hpo' builds none");
  /* A dataset whose examples do not fit the networks (when it is installed). */
  if (g_file_test("/usr/share/datasets/fashion-mnist", G_FILE_TEST_IS_DIR) || g_getenv("SIEVE_DATA_DIR"))
    expect_error(space, "{proxies: [naswot], dataset: fashion-mnist, batch_size: 8}",
                 "test.yaml:1:30: dataset fashion-mnist has 1x28x28 examples in 10 classes, but space nb201 builds "
                 "networks for 3x8x8 inputs");
  expect_error(space, "{proxies: [naswot], dataset: no-such-set}", "test.yaml:1:30:");
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  registry = test_registry_load();

  g_test_add_func("/proxy-evaluator/one-proxy", test_one_proxy);
  g_test_add_func("/proxy-evaluator/ensemble", test_ensemble);
  g_test_add_func("/proxy-evaluator/degenerate", test_degenerate);
  g_test_add_func("/proxy-evaluator/errors", test_errors);
  int status = g_test_run();
  sieve_registry_free(registry);
  return status;
}
