/* tests/engine: hardware-aware search: latency measured here, the
 * per-operation latency table in a real store, and constraints (config
 * errors located, exactly the violators rejected, no evaluation spent on
 * them, every optimizer filling its budget with feasible candidates,
 * rejections kept on resume), on the NAS-Bench-201 space and table. */
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>
#include <sieve/sieve.h>

#include "core/core-private.h"
#include "engine/engine-private.h"
#include "runtime/runtime-private.h"
#include "test-support.h"

static SieveRegistry *registry;
static char *table_path;
static char *tmp_dir;

/* Quick settings: the tests check bookkeeping, not the machine's speed. */
static SieveLatencyOptions
quick(guint threads)
{
  SieveLatencyOptions o;
  sieve_latency_options_init(&o);
  o.threads = threads;
  o.warmup = 1;
  o.min_runs = 3;
  o.max_runs = 3;
  o.max_seconds = 0.05;
  return o;
}

/* ---- measuring ----------------------------------------------------------- */

static SieveGraph *
small_net(void)
{
  SieveGraph *g = sieve_graph_new("small");
  guint x = sieve_graph_input(g, 3, 16, 16);
  guint h = sieve_graph_conv2d(g, x, 8, 3, 1, 1, FALSE);
  h = sieve_graph_batch_norm(g, h);
  guint a = sieve_graph_relu(g, h);
  guint b = sieve_graph_relu(g, h); /* the same activation again: the runtime shares it */
  guint c1 = sieve_graph_conv2d(g, a, 8, 3, 1, 1, FALSE);
  guint c2 = sieve_graph_conv2d(g, b, 8, 1, 1, 0, FALSE);
  guint z = sieve_graph_zero(g, a);
  guint terms[] = {c1, c2, z, h};
  guint s = sieve_graph_sum(g, terms, 4);
  guint p = sieve_graph_pool(g, s, SIEVE_POOL_AVG, 3, 2, 1);
  guint cat_in[] = {p, p};
  guint cat = sieve_graph_concat(g, cat_in, 2);
  guint gp = sieve_graph_global_avg_pool(g, cat);
  guint out = sieve_graph_linear(g, gp, 10, TRUE);
  g_autoptr(GError) error = NULL;
  g_assert_true(sieve_graph_finish(g, out, &error));
  return g;
}

static void
test_measure(void)
{
  g_autoptr(SieveGraph) g = small_net();
  SieveLatencyOptions o = quick(1);
  o.min_runs = 5;
  o.max_runs = 40;
  SieveLatency l;
  g_autoptr(GError) error = NULL;
  g_assert_true(sieve_latency_measure(g, &o, &l, &error));
  g_assert_no_error(error);
  g_assert_cmpfloat(l.median_ms, >, 0);
  g_assert_cmpfloat(l.iqr_ms, >=, 0);
  g_assert_cmpuint(l.runs, >=, 5);
  g_assert_cmpuint(l.runs, <=, 40);
  g_assert_cmpuint(l.runs % 5, ==, 0); /* whole rounds */
  g_assert_cmpfloat(l.ci_low_ms, <=, l.median_ms);
  g_assert_cmpfloat(l.median_ms, <=, l.ci_high_ms);
  g_assert_cmpuint(l.memory_bytes, >, 0);

  /* A network with its loss is refused: a device serves logits. */
  g_autoptr(SieveGraph) lossy = sieve_graph_copy(g);
  g_assert_true(sieve_graph_add_loss(lossy, 0, &error));
  g_assert_false(sieve_latency_measure(lossy, &o, &l, &error));
  g_assert_nonnull(strstr(error->message, "ends in a loss"));
}

/* input -> identity: next to nothing to run. */
static SieveGraph *
bare_net(guint c, guint size)
{
  SieveGraph *g = sieve_graph_new("bare");
  guint x = sieve_graph_input(g, c, size, size);
  g_autoptr(GError) error = NULL;
  g_assert_true(sieve_graph_finish(g, sieve_graph_identity(g, x), &error));
  return g;
}

/* Several networks timed together, in rounds: one result each, in order,
 * from the same number of timed forwards, and the heavy network slower
 * than the bare one (by far: a margin no noise closes); and an operation's
 * entries likewise (a free node costs nothing, the input node is the bare
 * graph's call). */
static void
test_together(void)
{
  g_autoptr(SieveGraph) small = small_net();
  g_autoptr(SieveGraph) bare = bare_net(3, 16);
  g_autoptr(SieveGraph) other = bare_net(3, 8);
  SieveLatencyOptions o = quick(1);
  o.min_runs = 4;
  o.max_runs = 8;
  SieveLatency l[3];
  g_autoptr(GError) error = NULL;
  const SieveGraph *three[] = {bare, small, bare};
  g_assert_true(sieve_latency_measure_together(three, 3, &o, l, &error));
  g_assert_no_error(error);
  for (guint i = 0; i < 3; i++) {
    g_assert_cmpuint(l[i].runs, ==, l[0].runs);
    g_assert_cmpuint(l[i].runs, >=, 4);
    g_assert_cmpuint(l[i].runs % 4, ==, 0);
    g_assert_cmpfloat(l[i].ci_low_ms, <=, l[i].median_ms);
    g_assert_cmpuint(l[i].memory_bytes, >, 0);
  }
  g_assert_cmpfloat(l[1].median_ms, >, 3 * MAX(l[0].median_ms, l[2].median_ms));
  g_assert_cmpuint(l[1].memory_bytes, >, l[0].memory_bytes);
  g_assert_true(sieve_latency_measure_together(NULL, 0, &o, NULL, &error));
  /* Networks measured together share one input. */
  const SieveGraph *mixed[] = {bare, other};
  g_assert_false(sieve_latency_measure_together(mixed, 2, &o, l, &error));
  g_assert_nonnull(strstr(error->message, "share one input"));
  g_clear_error(&error);

  /* Entries: node 1 the first conv, 4 a free relu, 0 the input, 12 the linear. */
  const SieveGraph *graphs[] = {small, small, small, small};
  guint nodes[] = {1, 4, 0, 12};
  SieveLatency e[4];
  g_assert_true(sieve_latency_measure_nodes(graphs, nodes, 4, &o, e, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(e[0].runs, >=, 4);
  g_assert_cmpuint(e[3].runs, ==, e[0].runs);
  g_assert_cmpuint(e[1].runs, ==, 0); /* free: not measured */
  g_assert_cmpfloat(e[1].median_ms, ==, 0);
  g_assert_cmpuint(e[2].runs, >=, 4); /* the bare call, measured on its own */
  g_assert_cmpfloat(e[2].median_ms, >, 0);
}

static void
test_keys(void)
{
  g_autoptr(SieveGraph) g = small_net();
  /* node 1: the first conv; 3: relu; 4: the same relu again; 8: the sum */
  g_autofree char *conv = sieve_latency_node_key(g, 1);
  g_assert_cmpstr(conv, ==, "conv2d 3x16x16 out=8 k=3x3 s=1x1 p=1x1");
  g_autofree char *input = sieve_latency_node_key(g, 0);
  g_assert_cmpstr(input, ==, "input 3x16x16");
  g_assert_false(sieve_latency_node_is_free(g, 3));
  g_assert_true(sieve_latency_node_is_free(g, 4));
  /* The sum reads three tensors: its zero term is folded away. */
  g_autofree char *sum = sieve_latency_node_key(g, 8);
  g_assert_cmpstr(sum, ==, "add 8x16x16 8x16x16 8x16x16");
  g_assert_true(sieve_latency_node_is_free(g, 7)); /* the zero */

  /* A pool or a ReLU of a zero is a zero (the runtime folds it away: a
   * NAS-Bench-201 `none` edge feeding an avg_pool edge), a sigmoid of it not. */
  g_autoptr(SieveGraph) z = sieve_graph_new("zeros");
  guint x = sieve_graph_input(z, 3, 8, 8);
  guint c = sieve_graph_conv2d(z, x, 4, 3, 1, 1, FALSE);
  guint zero = sieve_graph_zero(z, c);
  guint pool = sieve_graph_pool(z, zero, SIEVE_POOL_AVG, 3, 1, 1);
  guint relu = sieve_graph_relu(z, pool);
  guint sig = sieve_graph_activation(z, pool, SIEVE_ACT_SIGMOID, 0);
  guint terms[] = {c, relu, sig};
  g_autoptr(GError) error = NULL;
  g_assert_true(sieve_graph_finish(z, sieve_graph_sum(z, terms, 3), &error));
  g_assert_true(sieve_latency_node_is_free(z, pool));
  g_assert_true(sieve_latency_node_is_free(z, relu));
  g_assert_false(sieve_latency_node_is_free(z, sig));
  g_autoptr(GPtrArray) keys = sieve_latency_node_keys(z);
  g_assert_null(keys->pdata[pool]);
  g_assert_nonnull(keys->pdata[sig]);
}

/* ---- the latency table ------------------------------------------------- */

/* A residual block and a plain chain: the prediction is the sum of the
 * entries of the live nodes, each in the store under this machine. */
static void
test_table_sum(void)
{
  g_autofree char *path = g_build_filename(tmp_dir, "table.sieve", NULL);
  GError *error = NULL;
  g_autoptr(SieveStore) store = sieve_store_open(path, SIEVE_STORE_WRITE, &error);
  g_assert_no_error(error);
  SieveLatencyOptions o = quick(1);
  g_autoptr(SieveGraph) a = small_net();
  g_autoptr(SieveGraph) b = sieve_graph_new("chain");
  guint x = sieve_graph_input(b, 3, 16, 16);
  guint h = sieve_graph_conv2d(b, x, 8, 3, 1, 1, FALSE);
  guint dead = sieve_graph_conv2d(b, x, 4, 1, 1, 0, FALSE); /* reaches no output: not counted */
  (void) dead;
  h = sieve_graph_batch_norm(b, h);
  h = sieve_graph_relu(b, h);
  h = sieve_graph_global_avg_pool(b, h);
  h = sieve_graph_linear(b, h, 10, TRUE);
  g_assert_true(sieve_graph_finish(b, h, &error));
  const SieveGraph *graphs[] = {a, b};

  g_autoptr(SieveLatencyTable) t = sieve_latency_table_new(store, &o);
  for (guint k = 0; k < G_N_ELEMENTS(graphs); k++) {
    const SieveGraph *g = graphs[k];
    double predicted;
    g_assert_true(sieve_latency_table_predict(t, g, &predicted, &error));
    g_assert_no_error(error);
    double sum = 0;
    guint counted = 0;
    for (guint i = 0; i < sieve_graph_n_nodes(g); i++) {
      if (!sieve_graph_node_live(g, i))
        continue;
      double e, stored;
      g_assert_true(sieve_latency_table_entry(t, g, i, &e, &error));
      g_assert_cmpfloat(e, >=, 0);
      sum += e;
      counted++;
      /* Under the key the table gives it (these small graphs fit the
       * private caches: " warm" appended). */
      g_autoptr(GPtrArray) keys = sieve_latency_table_keys(t, g);
      if (sieve_latency_node_is_free(g, i)) {
        g_assert_cmpfloat(e, ==, 0);
        g_assert_null(keys->pdata[i]);
        continue;
      }
      g_assert_true(sieve_store_latency_get(store, sieve_latency_table_machine(t), keys->pdata[i], &stored, NULL,
                                            &error));
      g_assert_cmpfloat(stored, ==, e); /* written through to the store */
    }
    /* Uncalibrated, the prediction is the plain sum of the entries. */
    g_assert_cmpfloat(predicted, ==, sum);
    g_assert_cmpfloat(predicted, >, 0);
    double plain;
    g_assert_true(sieve_latency_table_sum(t, g, &plain, &error));
    g_assert_cmpfloat(plain, ==, sum);
    g_assert_cmpuint(counted, <, sieve_graph_n_nodes(g) + (k == 0));
    /* Calibrated, it is a + b * that sum: with a = 0.25 ms and b = 1.5,
     * exactly 0.25 + 1.5 * sum (both exact binary fractions). */
    g_autoptr(SieveLatencyTable) fitted = sieve_latency_table_new(store, &o);
    sieve_latency_table_set_fit(fitted, 0.25, 1.5, 12);
    double calibrated;
    g_assert_true(sieve_latency_table_predict(fitted, g, &calibrated, &error));
    g_assert_cmpfloat(calibrated, ==, 0.25 + 1.5 * sum);
    g_assert_cmpuint(sieve_latency_table_n_measured(fitted), ==, 0); /* the entries from the store */
  }
  guint measured = sieve_latency_table_n_measured(t);
  g_assert_cmpuint(measured, >, 5);

  /* The same machine and settings: everything from the store, nothing measured. */
  g_autoptr(SieveLatencyTable) again = sieve_latency_table_new(store, &o);
  double p1, p2;
  g_assert_true(sieve_latency_table_predict(t, a, &p1, &error));
  g_assert_true(sieve_latency_table_predict(again, a, &p2, &error));
  g_assert_cmpfloat(p1, ==, p2);
  g_assert_cmpuint(sieve_latency_table_n_measured(again), ==, 0);

  /* Another setting (threads) is another machine key: measured again. */
  SieveLatencyOptions two = quick(2);
  g_autoptr(SieveLatencyTable) other = sieve_latency_table_new(store, &two);
  g_assert_cmpstr(sieve_latency_table_machine(other), !=, sieve_latency_table_machine(t));
  g_assert_true(sieve_latency_table_predict(other, b, &p2, &error));
  g_assert_cmpuint(sieve_latency_table_n_measured(other), >, 0);
  g_assert_nonnull(strstr(sieve_latency_table_machine(t), "library=oneDNN "));
  g_assert_nonnull(strstr(sieve_latency_table_machine(t), "\nkernels=")); /* sieve's own kernels' revision */
}

/* The least-squares line, against answers worked by hand. */
static void
test_fit(void)
{
  double a, b;
  /* On a line: y = 0.5 + 2 x. */
  const double x1[] = {1, 2, 4, 8}, y1[] = {2.5, 4.5, 8.5, 16.5};
  sieve_latency_fit(x1, y1, 4, &a, &b);
  g_assert_cmpfloat_with_epsilon(a, 0.5, 1e-12);
  g_assert_cmpfloat_with_epsilon(b, 2, 1e-12);
  /* Off it: x = 1, 2, 3 and y = 2, 3, 5: mean x 2, mean y 10/3, Sxx 2,
   * Sxy = (-1)(-4/3) + 0 + (1)(5/3) = 3: b = 3/2, a = 10/3 - 3 = 1/3. */
  const double x2[] = {1, 2, 3}, y2[] = {2, 3, 5};
  sieve_latency_fit(x2, y2, 3, &a, &b);
  g_assert_cmpfloat_with_epsilon(a, 1.0 / 3, 1e-12);
  g_assert_cmpfloat_with_epsilon(b, 1.5, 1e-12);
  /* Falling (it would reverse the order of the sums): the ratio of the
   * means through the origin, (3 + 1)/2 over (1 + 2)/2 = 4/3. */
  const double x3[] = {1, 2}, y3[] = {3, 1};
  sieve_latency_fit(x3, y3, 2, &a, &b);
  g_assert_cmpfloat(a, ==, 0);
  g_assert_cmpfloat_with_epsilon(b, 4.0 / 3, 1e-12);
  /* One point: the ratio. */
  sieve_latency_fit(x1, y1, 1, &a, &b);
  g_assert_cmpfloat(a, ==, 0);
  g_assert_cmpfloat_with_epsilon(b, 2.5, 1e-12);
}

/* Calibrating on a space's networks measured whole: the fit goes to the
 * store and a new table reads it back without measuring; another space
 * setting (other shapes) fits again. */
static void
test_calibrate(void)
{
  g_autofree char *path = g_build_filename(tmp_dir, "fit.sieve", NULL);
  GError *error = NULL;
  g_autoptr(SieveStore) store = sieve_store_open(path, SIEVE_STORE_WRITE, &error);
  g_assert_no_error(error);
  SieveLatencyOptions o = quick(1);
  g_autoptr(SieveSpace) space = test_space_new(registry, "nb201", "{C: 4, N: 1, size: 8}", NULL);
  g_autoptr(SieveLatencyTable) t = sieve_latency_table_new(store, &o);
  g_assert_false(sieve_latency_table_get_fit(t, NULL, NULL, NULL, NULL, NULL));
  g_assert_true(sieve_latency_table_calibrate(t, space, 4, &error));
  g_assert_no_error(error);
  double a, b, rms;
  guint n;
  gboolean fresh;
  g_assert_true(sieve_latency_table_get_fit(t, &a, &b, &n, &rms, &fresh));
  g_assert_cmpuint(n, ==, 4);
  g_assert_true(fresh);
  g_assert_cmpfloat(b, >, 0);
  g_assert_cmpfloat(rms, >=, 0);
  g_autoptr(SieveGraph) g = sieve_space_build_sample(space, 7, &error);
  double sum, predicted;
  g_assert_true(sieve_latency_table_sum(t, g, &sum, &error));
  g_assert_true(sieve_latency_table_predict(t, g, &predicted, &error));
  g_assert_cmpfloat_with_epsilon(predicted, a + b * sum, 1e-12);

  g_autoptr(SieveLatencyTable) again = sieve_latency_table_new(store, &o);
  g_assert_true(sieve_latency_table_calibrate(again, space, 4, &error));
  double a2, b2;
  g_assert_true(sieve_latency_table_get_fit(again, &a2, &b2, NULL, NULL, &fresh));
  g_assert_false(fresh);
  g_assert_cmpfloat(a2, ==, a);
  g_assert_cmpfloat(b2, ==, b);
  g_assert_cmpuint(sieve_latency_table_n_measured(again), ==, 0);

  g_autoptr(SieveSpace) space8 = test_space_new(registry, "nb201", "{C: 8, N: 1, size: 8}", NULL);
  g_autoptr(SieveLatencyTable) other = sieve_latency_table_new(store, &o);
  g_assert_true(sieve_latency_table_calibrate(other, space8, 4, &error));
  g_assert_true(sieve_latency_table_get_fit(other, NULL, NULL, NULL, NULL, &fresh));
  g_assert_true(fresh);

  /* Another depth at the same width: the same distinct operations, but
   * networks twice as deep, whose line is not the shallow one's. */
  g_autoptr(SieveSpace) deeper = test_space_new(registry, "nb201", "{C: 4, N: 2, size: 8}", NULL);
  g_autoptr(SieveLatencyTable) deep = sieve_latency_table_new(store, &o);
  g_assert_true(sieve_latency_table_calibrate(deep, deeper, 4, &error));
  g_assert_no_error(error);
  g_assert_true(sieve_latency_table_get_fit(deep, NULL, NULL, NULL, NULL, &fresh));
  g_assert_true(fresh);
}

/* A network whose parameters fit the core's private caches is served with
 * its weights hot: its entries are timed warm (keys ending in " warm"), and
 * its prediction tracks its measurement.  The smallest network of
 * configs/mobilenet-latency.yaml's space (23,426 parameters) was predicted
 * at 0.41 ms from flushed entries and measured at 0.10 ms. */
static void
test_table_warm(void)
{
  GError *error = NULL;
  g_autoptr(SieveSpace) space = test_space_new(registry, "mobilenet",
                                               "{in_channels: 1, size: 28, width: 0.5, stem_channels: 16, "
                                               "first_channels: 8, stages: '16:2:2,24:2:2,40:2:2,80:1:1', "
                                               "last_channels: 256}", NULL);
  g_autoptr(SieveGenotype) small = sieve_space_parse(space, "k3_e3,skip/k3_e3,skip/k3_e3,skip/k3_e3", &error);
  g_assert_no_error(error);
  g_autoptr(SieveGraph) g = sieve_space_build(space, small, &error);
  g_assert_no_error(error);
  SieveLatencyOptions o = quick(1);
  o.min_runs = 20;
  o.max_runs = 200;
  o.max_seconds = 0.05;
  g_autoptr(SieveLatencyTable) t = sieve_latency_table_new(NULL, &o);
  gboolean fits = sieve_graph_params(g) * sizeof(float) <= sieve__latency_private_cache_bytes();
  g_autoptr(GPtrArray) keys = sieve_latency_table_keys(t, g);
  guint live = 0;
  for (guint i = 0; i < keys->len; i++)
    if (keys->pdata[i] != NULL) {
      live++;
      g_assert_cmpint(g_str_has_suffix(keys->pdata[i], " warm"), ==, fits);
    }
  g_assert_cmpuint(live, >, 10);
  /* A NAS-Bench-201 network of 1.5 million parameters (6 MB) fits no L2: cold. */
  g_autoptr(SieveSpace) nb = test_space_new(registry, "nb201", "{}", NULL);
  g_autoptr(SieveGenotype) big = sieve_space_parse(
      nb, "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|nor_conv_3x3~0|nor_conv_3x3~1|nor_conv_3x3~2|", &error);
  g_assert_no_error(error);
  g_autoptr(SieveGraph) bg = sieve_space_build(nb, big, &error);
  g_assert_no_error(error);
  g_autoptr(GPtrArray) big_keys = sieve_latency_table_keys(t, bg);
  for (guint i = 0; i < big_keys->len; i++)
    g_assert_true(big_keys->pdata[i] == NULL || !g_str_has_suffix(big_keys->pdata[i], " warm"));
  if (!fits) {
    g_test_skip("this machine's private caches hold less than the small mobilenet's parameters");
    return;
  }
  double predicted;
  g_assert_true(sieve_latency_table_predict(t, g, &predicted, &error));
  g_assert_no_error(error);
  SieveLatency l;
  g_assert_true(sieve_latency_measure(g, &o, &l, &error));
  g_assert_no_error(error);
  /* Within a factor of two either way (3.3 times cold on a loaded machine;
   * 0.64 to 1.0 warm at load averages 4 to 22). */
  g_test_message("predicted %.4f ms, measured %.4f ms (CPU time)", predicted, l.cpu_median_ms);
  g_assert_cmpfloat(predicted, <, 2 * l.cpu_median_ms);
  g_assert_cmpfloat(predicted, >, 0.5 * l.cpu_median_ms);
}

/* ---- constraints: config -------------------------------------------------- */

static const char base_yaml[] = "space: {plugin: nb201}\n"
                                "optimizer: {plugin: random, seed: 3}\n"
                                "evaluator: {plugin: tabular, table: %s, metrics: [cifar10_valid_acc]}\n"
                                "objective: {metric: cifar10_valid_acc}\n"
                                "budget: {evaluations: 10}\n"
                                "%s";

static SieveExperiment *
load(const char *extra, const char *store, GError **error)
{
  g_autofree char *text = g_strdup_printf(base_yaml, table_path, extra);
  g_autofree char *with_store = store ? g_strdup_printf("%sstore: %s/%s\n", text, tmp_dir, store) : g_strdup(text);
  return sieve_experiment_load_string(with_store, "test.yaml", tmp_dir, NULL, registry, NULL, error);
}

static void
test_config_errors(void)
{
  /* `constraints:` is on line 6. */
  static const struct {
    const char *yaml, *message;
  } cases[] = {
      {"constraints: [{metric: cifar10_valid_acc, max: 90}]\n",
       "test.yaml:6:24: constraint #1: 'cifar10_valid_acc' is not known before evaluation"},
      {"constraints: [{metric: parms, max: 1e6}]\n",
       "test.yaml:6:24: constraint #1: 'parms' is not known before evaluation (did you mean 'params'?)"},
      {"constraints:\n  - {metric: params, max: 1e6}\n  - {metric: macs, max: lots}\n",
       "test.yaml:8:25: option 'max' expects a number, got 'lots'"},
      {"constraints: [{metric: params}]\n", "test.yaml:6:15: constraint #1 on 'params' has no bound"},
      /* NaN compared false and switched the constraint off; inf is no bound. */
      {"constraints: [{metric: params, max: .nan}]\n", "test.yaml:6:37: option 'max' expects a finite float, got .nan"},
      {"constraints: [{metric: params, min: -.inf}]\n",
       "test.yaml:6:37: option 'min' expects a finite float, got -.inf"},
      {"constraints: [{metric: params, min: 5, max: 1}]\n", "test.yaml:6:37: constraint #1: min (5) is above max (1)"},
      {"constraints: [{metric: params, mx: 1}]\n", "test.yaml:6:32: unknown option 'mx' for constraint #1 (did you "
                                                   "mean 'max'?)"},
      {"constraints: {metric: params, max: 1}\n", "test.yaml:6:14: 'constraints' must be a list"},
      {"constraints: [params]\n", "test.yaml:6:15: constraint #1 must be a map"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(SieveExperiment) exp = load(cases[i].yaml, NULL, &error);
    g_assert_null(exp);
    g_assert_nonnull(error);
    if (!g_str_has_prefix(error->message, cases[i].message))
      g_error("case %u: expected a message starting\n  %s\ngot\n  %s", i, cases[i].message, error->message);
    g_assert_true(g_error_matches(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG));
  }
  /* A proxy and the measured metrics are known before evaluation. */
  GError *error = NULL;
  g_autoptr(SieveExperiment) ok = load("constraints: [{metric: synflow, min: 0}, {metric: latency_ms, max: 50}, "
                                       "{metric: macs, max: 3e8}, {metric: predicted_latency_ms, max: 3}]\n",
                                       NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(ok->n_constraints, ==, 4);
  g_assert_cmpfloat(ok->constraints[2].max, ==, 3e8);
  g_assert_true(isinf(ok->constraints[2].min));
}

/* ---- constraints: the study ------------------------------------------------ */

#define PARAMS_CAP 600000.0

static guint64
params_of(const SieveSpace *space, const char *text)
{
  GError *error = NULL;
  g_autoptr(SieveGenotype) g = sieve_space_parse(space, text, &error);
  g_assert_no_error(error);
  g_autoptr(SieveGraph) graph = sieve_space_build(space, g, &error);
  g_assert_no_error(error);
  return sieve_graph_params(graph);
}

static void
enumerate(const SieveSpace *space, SieveGenotype *g, guint d, GPtrArray *out)
{
  if (d == sieve_space_n_decisions(space)) {
    g_ptr_array_add(out, sieve_genotype_copy(g));
    return;
  }
  const SieveDecision *dec = sieve_space_decision(space, d);
  for (double v = dec->low; v <= dec->high; v++) {
    sieve_genotype_set(g, d, v);
    enumerate(space, g, d + 1, out);
  }
}

/* Every cell of NAS-Bench-201: the constraint rejects exactly those whose
 * network has more parameters than the cap. */
static void
test_exact(void)
{
  GError *error = NULL;
  g_autoptr(SieveExperiment) exp = load("constraints: [{metric: params, max: 600000}]\n", NULL, &error);
  g_assert_no_error(error);
  g_autoptr(SieveEngine) engine = sieve_engine_new(exp, &error);
  g_assert_no_error(error);
  g_autoptr(SieveSpace) space = sieve_space_new(exp->space.component, exp->space.options, &error);
  g_autoptr(SieveConstrainer) c = sieve_constrainer_new(exp, NULL);
  g_assert_nonnull(c);
  g_autoptr(GPtrArray) all = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_genotype_free);
  g_autoptr(SieveGenotype) g = sieve_genotype_new(space);
  enumerate(space, g, 0, all);
  g_assert_cmpuint(all->len, ==, 15625);
  guint rejected = 0;
  for (guint i = 0; i < all->len; i++) {
    gboolean feasible;
    g_autoptr(SieveResult) r = sieve_constrainer_check(c, space, all->pdata[i], &feasible, &error);
    g_assert_no_error(error);
    g_autoptr(SieveGraph) graph = sieve_space_build(space, all->pdata[i], &error);
    gboolean over = (double) sieve_graph_params(graph) > PARAMS_CAP;
    g_assert_cmpint(feasible, ==, !over);
    g_assert_cmpint(sieve_result_get_status(r), ==, over ? SIEVE_STATUS_REJECTED : SIEVE_STATUS_OK);
    if (over) {
      rejected++;
      double v;
      g_assert_true(sieve_result_get_metric(r, SIEVE_METRIC_CONSTRAINT_VIOLATION, &v));
      g_assert_cmpfloat_with_epsilon(v, (sieve_graph_params(graph) - PARAMS_CAP) / PARAMS_CAP, 1e-12);
      g_assert_true(g_str_has_prefix(sieve_result_get_reason(r), "broke params = "));
    }
  }
  /* Both sides are populated, or the check proves little. */
  g_assert_cmpuint(rejected, >, 1000);
  g_assert_cmpuint(rejected, <, 14000);
}

/* A rejection's reason gives a computed value to 6 significant digits (a
 * sum of latency entries printed 0.28071650000000004), a count in full. */
static void
test_reason_digits(void)
{
  GError *error = NULL;
  g_autoptr(SieveExperiment) exp =
      load("constraints: [{metric: synflow, max: 1.0e-300}, {metric: params, max: 1}]\n", NULL, &error);
  g_assert_no_error(error);
  g_autoptr(SieveSpace) space = sieve_space_new(exp->space.component, exp->space.options, &error);
  g_assert_no_error(error);
  g_autoptr(SieveConstrainer) c = sieve_constrainer_new(exp, NULL);
  g_autoptr(SieveGenotype) g = sieve_space_parse(
      space, "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_1x1~1|skip_connect~2|", &error);
  g_assert_no_error(error);
  gboolean feasible;
  g_autoptr(SieveResult) r = sieve_constrainer_check(c, space, g, &feasible, &error);
  g_assert_no_error(error);
  g_assert_false(feasible);
  g_autoptr(SieveGraph) graph = sieve_space_build(space, g, &error);
  double synflow;
  g_assert_true(sieve_result_get_metric(r, "synflow", &synflow));
  char six[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd(six, sizeof six, "%.6g", synflow);
  g_autofree char *want = g_strdup_printf("broke synflow = %s > max 1e-300; params = %" G_GUINT64_FORMAT " > max 1",
                                          six, sieve_graph_params(graph));
  g_assert_cmpstr(sieve_result_get_reason(r), ==, want);
}

/* Runs exp's study and lists its trials; rejections: whether some must be
 * rejected. */
static GPtrArray *
run_study(const SieveExperiment *exp, gboolean resume, gboolean rejections)
{
  GError *error = NULL;
  g_autoptr(SieveEngine) engine = sieve_engine_new(exp, &error);
  g_assert_no_error(error);
  g_autoptr(SieveStore) store = sieve_store_open(exp->store_path, SIEVE_STORE_WRITE, &error);
  g_assert_no_error(error);
  g_assert_true(sieve_study_open(store, exp, resume, &error));
  g_assert_true(sieve_engine_run(engine, store, NULL, &error));
  g_assert_no_error(error);
  if (rejections)
    g_assert_cmpint(sieve_store_count_trials(store, SIEVE_STATUS_REJECTED, &error), >, 0);
  GPtrArray *trials = sieve_store_list_trials(store, FALSE, &error);
  g_assert_no_error(error);
  return trials;
}

/* What every study under the params cap must show: each trial rejected
 * exactly when it breaks the cap, no rejected one evaluated (no table
 * metric, no cost), and the budget filled with feasible evaluations. */
static void
check_study(GPtrArray *trials, const SieveSpace *space, guint budget)
{
  guint ok = 0, rejected = 0;
  for (guint i = 0; i < trials->len; i++) {
    const SieveTrial *t = trials->pdata[i];
    gboolean over = (double) params_of(space, t->genotype) > PARAMS_CAP;
    double v;
    if (t->status == SIEVE_STATUS_REJECTED) {
      g_assert_true(over);
      rejected++;
      g_assert_false(sieve_result_get_metric(t->result, "cifar10_valid_acc", NULL));
      g_assert_cmpfloat(sieve_result_get_cost(t->result), ==, 0);
      g_assert_true(sieve_result_get_metric(t->result, "params", &v));
      g_assert_cmpfloat(v, ==, (double) params_of(space, t->genotype));
      g_assert_nonnull(t->reason);
      continue;
    }
    g_assert_false(over);
    if (t->status == SIEVE_STATUS_OK) {
      ok++;
      g_assert_true(sieve_result_get_metric(t->result, "cifar10_valid_acc", NULL));
      g_assert_true(sieve_result_get_metric(t->result, "params", &v)); /* kept beside the table's metrics */
    }
  }
  g_assert_cmpuint(ok, ==, budget);
  g_assert_cmpuint(rejected, >, 0);
}

static void
test_optimizers(void)
{
  static const char *const optimizers[] = {
      "{plugin: random, seed: 3}",
      "{plugin: evolution, population: 10, sample_size: 3, seed: 4}",
      "{plugin: local_search, seed: 5}",
      "{plugin: tpe, seed: 6}",
  };
  GError *error = NULL;
  for (guint i = 0; i < G_N_ELEMENTS(optimizers) + 1; i++) {
    gboolean nsga2 = i == G_N_ELEMENTS(optimizers);
    g_autofree char *yaml = g_strdup_printf(
        "space: {plugin: nb201}\noptimizer: %s\n"
        "evaluator: {plugin: tabular, table: %s, metrics: [cifar10_valid_acc, params_m]}\n"
        "objective: %s\nbudget: {evaluations: 40}\nconstraints: [{metric: params, max: 600000}]\n"
        "store: %s/opt%u.sieve\n",
        nsga2 ? "{plugin: evolution, selection: nsga2, population: 10, seed: 7}" : optimizers[i], table_path,
        nsga2 ? "[{metric: cifar10_valid_acc}, {metric: params_m, direction: minimize}]" : "{metric: cifar10_valid_acc}",
        tmp_dir, i);
    g_autoptr(SieveExperiment) exp = sieve_experiment_load_string(yaml, "test.yaml", tmp_dir, NULL, registry, NULL,
                                                                  &error);
    g_assert_no_error(error);
    g_autoptr(SieveSpace) space = sieve_space_new(exp->space.component, exp->space.options, &error);
    g_autoptr(GPtrArray) trials = run_study(exp, FALSE, TRUE);
    g_test_message("%s: %u trials for 40 evaluations", nsga2 ? "nsga2" : optimizers[i], trials->len);
    check_study(trials, space, 40);
  }
}

/* A resumed study keeps its rejections (and the rejected are not proposed
 * to the evaluator again); the budget still counts evaluations only. */
static void
test_resume(void)
{
  GError *error = NULL;
  g_autoptr(SieveExperiment) first =
      load("constraints: [{metric: params, max: 600000}]\n", "resume.sieve", &error);
  g_assert_no_error(error);
  g_autoptr(GPtrArray) before = run_study(first, FALSE, TRUE);
  g_autofree char *text = g_strdup_printf(base_yaml, table_path,
                                          "constraints: [{metric: params, max: 600000}]\n");
  char *b = strstr(text, "evaluations: 10");
  memcpy(b, "evaluations: 25", 15);
  g_autofree char *with_store = g_strdup_printf("%sstore: %s/resume.sieve\n", text, tmp_dir);
  g_autoptr(SieveExperiment) more =
      sieve_experiment_load_string(with_store, "test.yaml", tmp_dir, NULL, registry, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(GPtrArray) after = run_study(more, TRUE, TRUE);
  g_assert_cmpuint(after->len, >, before->len);
  for (guint i = 0; i < before->len; i++) {
    const SieveTrial *x = before->pdata[i], *y = after->pdata[i];
    g_assert_cmpint(x->status, ==, y->status);
    g_assert_cmpstr(x->genotype, ==, y->genotype);
    g_assert_cmpstr(x->reason, ==, y->reason);
  }
  g_autoptr(SieveSpace) space = sieve_space_new(more->space.component, more->space.options, &error);
  check_study(after, space, 25);
}

/* The trials of the study of text, run in a store of tmp_dir named store_name. */
static GPtrArray *
run_text(const char *text, const char *store_name)
{
  GError *error = NULL;
  g_autofree char *yaml = g_strdup_printf("%sstore: %s/%s\n", text, tmp_dir, store_name);
  g_autoptr(SieveExperiment) exp =
      sieve_experiment_load_string(yaml, "test.yaml", tmp_dir, NULL, registry, NULL, &error);
  g_assert_no_error(error);
  return run_study(exp, FALSE, FALSE);
}

/* Runs the study of text in a store of tmp_dir named store_name, and checks
 * that each of its `evaluations` ok trials stores metric within [min, max]. */
static void
check_stored_within(const char *text, const char *store_name, const char *metric, double min, double max,
                    guint evaluations)
{
  g_autoptr(GPtrArray) trials = run_text(text, store_name);
  guint ok = 0;
  for (guint i = 0; i < trials->len; i++) {
    const SieveTrial *t = trials->pdata[i];
    if (t->status != SIEVE_STATUS_OK)
      continue;
    ok++;
    double v = test_metric(t->result, metric);
    if (!(v >= min && v <= max))
      g_error("trial %" G_GINT64_FORMAT " is ok with %s = %g, outside the bounds [%g, %g] it was checked against",
              t->number, metric, v, min, max);
  }
  g_assert_cmpuint(ok, ==, evaluations);
}

/* A metric a constraint checked is stored as checked.  The `latency`
 * evaluator times each network again (here at batch 64, far slower than
 * the stage's batch 1), and the screen scores naswot on its own batch of 8
 * (a log-determinant of an 8x8 kernel, far below the constraint's 64x64
 * one): neither may replace the value the bound judged, or an ok trial
 * would break a hard cap. */
static void
test_stored_as_checked(void)
{
  check_stored_within("space: {plugin: nb201, C: 4, N: 1}\noptimizer: {plugin: random, seed: 3}\n"
                      "pipeline:\n  - latency: {batch: 1, threads: 1, warmup: 1, min_runs: 3, max_runs: 3, "
                      "max_seconds: 0.05}\n"
                      "evaluator: {plugin: latency, batch: 64, threads: 1, warmup: 1, min_runs: 3, max_runs: 3}\n"
                      "objective: {metric: latency_ms, direction: minimize}\n"
                      "constraints: [{metric: latency_ms, max: 1.0}]\nbudget: {evaluations: 8}\n",
                      "checked-latency.sieve", "latency_ms", -INFINITY, 1.0, 8);
  g_autofree char *screened = g_strdup_printf(
      "space: {plugin: nb201, C: 4, N: 1}\noptimizer: {plugin: random, seed: 3}\n"
      "pipeline:\n  - screen: {proxies: [naswot], batch_size: 8, batch: 4, keep_top: 2}\n"
      "evaluator: {plugin: tabular, table: %s, metrics: [cifar10_valid_acc]}\n"
      "objective: {metric: cifar10_valid_acc}\n"
      "constraints: [{metric: naswot, min: 100}]\nbudget: {evaluations: 6}\n",
      table_path);
  check_stored_within(screened, "checked-screen.sieve", "naswot", 100, INFINITY, 6);
}

/* An objective on a metric known before evaluation that the evaluator does
 * not report, a zero-cost proxy included, is computed by the engine with
 * the options a constraint on it uses (batch 64, the latency settings'
 * threads, the experiment's seed). */
static void
test_proxy_objective(void)
{
  GError *error = NULL;
  g_autofree char *yaml = g_strdup_printf(
      "seed: 5\nspace: {plugin: nb201, C: 4, N: 1}\noptimizer: {plugin: random, seed: 3}\n"
      "evaluator: {plugin: tabular, table: %s, metrics: [cifar10_valid_acc]}\n"
      "objective: [{metric: cifar10_valid_acc}, {metric: flops, direction: minimize}, {metric: synflow}]\n"
      "budget: {evaluations: 4}\n",
      table_path);
  g_autoptr(GPtrArray) trials = run_text(yaml, "proxy-objective.sieve");
  g_autoptr(SieveSpace) space = test_space_new(registry, "nb201", "{C: 4, N: 1}", NULL);
  const char *names[] = {"flops", "synflow"};
  SieveProxyOptions po = {.batch = 64, .threads = 1, .seed = 5};
  g_assert_cmpuint(trials->len, ==, 4);
  for (guint i = 0; i < trials->len; i++) {
    const SieveTrial *t = trials->pdata[i];
    g_assert_cmpint(t->status, ==, SIEVE_STATUS_OK);
    g_autoptr(SieveGenotype) g = sieve_space_parse(space, t->genotype, &error);
    g_assert_no_error(error);
    g_autoptr(SieveGraph) graph = sieve_space_build(space, g, &error);
    g_assert_no_error(error);
    double want[2];
    g_assert_true(sieve_proxy_compute(graph, names, 2, &po, want, NULL, &error));
    g_assert_no_error(error);
    for (guint k = 0; k < 2; k++)
      g_assert_cmpfloat_with_epsilon(test_metric(t->result, names[k]), want[k], 1e-9 * (1 + fabs(want[k])));
  }
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  registry = sieve_registry_new();
  sieve_registry_load_default(registry, NULL, NULL);
  table_path = test_nb201_table();
  GError *error = NULL;
  tmp_dir = g_dir_make_tmp("sieve-hardware-XXXXXX", &error);
  g_assert_no_error(error);

  g_test_add_func("/hardware/latency/measure", test_measure);
  g_test_add_func("/hardware/latency/together", test_together);
  g_test_add_func("/hardware/latency/keys", test_keys);
  g_test_add_func("/hardware/table/sum", test_table_sum);
  g_test_add_func("/hardware/table/fit", test_fit);
  g_test_add_func("/hardware/table/calibrate", test_calibrate);
  g_test_add_func("/hardware/table/warm", test_table_warm);
  g_test_add_func("/hardware/constraints/reason-digits", test_reason_digits);
  g_test_add_func("/hardware/constraints/config", test_config_errors);
  g_test_add_func("/hardware/constraints/exact", test_exact);
  g_test_add_func("/hardware/constraints/optimizers", test_optimizers);
  g_test_add_func("/hardware/constraints/resume", test_resume);
  g_test_add_func("/hardware/constraints/stored-as-checked", test_stored_as_checked);
  g_test_add_func("/hardware/objectives/proxy", test_proxy_objective);
  int rc = g_test_run();

  test_remove_dir(tmp_dir);
  g_free(tmp_dir);
  g_free(table_path);
  sieve_registry_free(registry);
  return rc;
}
