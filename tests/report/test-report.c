/* tests/report: the report's figures against the store they come from and
 * against naive references computed here: rank correlations (O(n^2)
 * Kendall tau-b, Spearman from ranks found by counting), the Pareto front
 * (every pair compared), the counts and the best trial. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "report/report-private.h"

/* ---- naive references ---------------------------------------------------- */

static double
naive_kendall(const double *x, const double *y, guint n)
{
  double concordant = 0, discordant = 0, tx = 0, ty = 0;
  for (guint i = 0; i < n; i++)
    for (guint j = i + 1; j < n; j++) {
      double a = x[i] - x[j], b = y[i] - y[j];
      if (a == 0 && b == 0)
        continue;
      if (a == 0)
        tx++;
      else if (b == 0)
        ty++;
      else if ((a > 0) == (b > 0))
        concordant++;
      else
        discordant++;
    }
  return (concordant - discordant) / sqrt((concordant + discordant + tx) * (concordant + discordant + ty));
}

static double
naive_rank(const double *v, guint n, guint i)
{
  double below = 0, equal = 0;
  for (guint j = 0; j < n; j++) {
    below += v[j] < v[i];
    equal += v[j] == v[i];
  }
  return below + (equal + 1) / 2;
}

static double
naive_spearman(const double *x, const double *y, guint n)
{
  double rx[n], ry[n], mx = 0, my = 0;
  for (guint i = 0; i < n; i++) {
    rx[i] = naive_rank(x, n, i);
    ry[i] = naive_rank(y, n, i);
    mx += rx[i] / n;
    my += ry[i] / n;
  }
  double sxy = 0, sxx = 0, syy = 0;
  for (guint i = 0; i < n; i++) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  return sxy / sqrt(sxx * syy);
}

static gboolean
naive_dominated(const double *v, guint n, guint i)
{
  for (guint j = 0; j < n; j++)
    if (j != i && v[2 * j] >= v[2 * i] && v[2 * j + 1] >= v[2 * i + 1] &&
        (v[2 * j] > v[2 * i] || v[2 * j + 1] > v[2 * i + 1]))
      return TRUE;
  return FALSE;
}

/* ---- statistics ------------------------------------------------------------ */

static void
test_correlations(void)
{
  GRand *rand = g_rand_new_with_seed(7);
  for (guint round = 0; round < 60; round++) {
    guint n = 2 + g_rand_int_range(rand, 0, 200);
    double x[n], y[n];
    /* Few distinct values in some rounds: many ties on both sides. */
    gint levels = round % 3 == 0 ? 4 : 1000000;
    for (guint i = 0; i < n; i++) {
      x[i] = g_rand_int_range(rand, 0, levels);
      y[i] = round % 2 ? x[i] * 0.5 + g_rand_int_range(rand, 0, levels) : g_rand_int_range(rand, 0, levels);
    }
    double k = sieve_report_kendall(x, y, n), s = sieve_report_spearman(x, y, n);
    double rk = naive_kendall(x, y, n), rs = naive_spearman(x, y, n);
    if (isnan(rk)) {
      g_assert_true(isnan(k));
    } else {
      g_assert_cmpfloat_with_epsilon(k, rk, 1e-12);
      g_assert_cmpfloat_with_epsilon(s, rs, 1e-12);
    }
  }
  /* Perfect agreement and its reverse; a constant side has no correlation. */
  double a[] = {1, 2, 3, 4, 5}, b[] = {10, 20, 30, 40, 50}, c[] = {5, 4, 3, 2, 1}, d[] = {2, 2, 2, 2, 2};
  g_assert_cmpfloat(sieve_report_kendall(a, b, 5), ==, 1);
  g_assert_cmpfloat(sieve_report_spearman(a, c, 5), ==, -1);
  g_assert_cmpfloat(sieve_report_kendall(a, c, 5), ==, -1);
  g_assert_true(isnan(sieve_report_kendall(a, d, 5)));
  g_assert_true(isnan(sieve_report_spearman(a, d, 5)));
  g_assert_true(isnan(sieve_report_kendall(a, b, 1)));
  g_rand_free(rand);
}

static void
test_eta_squared(void)
{
  /* Two groups whose means are 1 and 3 around a total mean of 2: between
   * 4 x 1 = 4, total 4 + within (0.5 x 4 = 2... computed): check by hand. */
  double v[] = {0.5, 1.5, 2.5, 3.5};
  guint g[] = {0, 0, 1, 1};
  /* mean 2; total = 2.25+0.25+0.25+2.25 = 5; between = 2*(1^2) + 2*(1^2) = 4 */
  g_assert_cmpfloat_with_epsilon(sieve_report_eta_squared(v, g, 4, 2), 0.8, 1e-12);
  guint same[] = {0, 0, 0, 0};
  g_assert_cmpfloat_with_epsilon(sieve_report_eta_squared(v, same, 4, 1), 0, 1e-12);
  guint each[] = {0, 1, 2, 3};
  g_assert_cmpfloat_with_epsilon(sieve_report_eta_squared(v, each, 4, 4), 1, 1e-12);
  double flat[] = {1, 1, 1, 1};
  g_assert_true(isnan(sieve_report_eta_squared(flat, g, 4, 2)));
}

static void
test_pareto_brute_force(void)
{
  GRand *rand = g_rand_new_with_seed(11);
  for (guint round = 0; round < 100; round++) {
    guint n = 1 + g_rand_int_range(rand, 0, 150);
    double v[2 * n];
    gint levels = round % 2 ? 6 : 100000; /* ties and duplicates in half the rounds */
    for (guint i = 0; i < 2 * n; i++)
      v[i] = g_rand_int_range(rand, 0, levels);
    gboolean front[n];
    sieve_report_pareto_2d(v, n, front);
    for (guint i = 0; i < n; i++)
      g_assert_cmpint(front[i], ==, !naive_dominated(v, n, i));
  }
  g_rand_free(rand);
}

/* A trial answered from this store's own trial is ranked once, with its
 * source, unless an objective differs: params measured on its own network
 * (an isomorphic twin without dead branches) made a Pareto point that the
 * summary's front left out (found by a new-user review). */
static SieveTrial *
trial_of(gint64 number, SieveStatus status, gint64 cached_from, double acc, double params)
{
  SieveTrial *t = g_new0(SieveTrial, 1);
  t->number = number;
  t->status = status;
  t->cached_from = cached_from;
  t->fidelity = NAN;
  t->genotype = g_strdup_printf("g%" G_GINT64_FORMAT, number);
  t->result = sieve_result_new();
  sieve_result_set_status(t->result, status);
  sieve_result_set_metric(t->result, "acc", acc);
  sieve_result_set_metric(t->result, "params", params);
  return t;
}

static void
test_pareto_cached_twins(void)
{
  g_autoptr(GPtrArray) trials = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_trial_free);
  g_ptr_array_add(trials, trial_of(0, SIEVE_STATUS_OK, -1, 87.0, 600));
  g_ptr_array_add(trials, trial_of(1, SIEVE_STATUS_CACHED, 0, 87.0, 130)); /* a point of its own */
  g_ptr_array_add(trials, trial_of(2, SIEVE_STATUS_CACHED, 0, 87.0, 600)); /* trial 0 again */
  g_ptr_array_add(trials, trial_of(3, SIEVE_STATUS_OK, -1, 88.0, 700));
  g_ptr_array_add(trials, trial_of(4, SIEVE_STATUS_CACHED, 9, 99.0, 1));   /* its source is not here */
  g_ptr_array_add(trials, trial_of(5, SIEVE_STATUS_CACHED, 0, 87.0, 130)); /* trial 1 again: one point */
  const char *const metrics[] = {"acc", "params"};
  g_autoptr(GArray) points = sieve_trials_pareto_points(trials, metrics, 2);
  g_assert_cmpuint(points->len, ==, 3);
  g_assert_cmpuint(g_array_index(points, guint, 0), ==, 0);
  g_assert_cmpuint(g_array_index(points, guint, 1), ==, 1);
  g_assert_cmpuint(g_array_index(points, guint, 2), ==, 3);
  /* Ranked on params alone, the twin is first; on acc alone it is trial 0 again. */
  g_autoptr(GArray) by_params = sieve_trials_rank(trials, "params", FALSE, NULL);
  g_assert_cmpuint(by_params->len, ==, 3);
  g_assert_cmpuint(g_array_index(by_params, guint, 0), ==, 1);
  g_autoptr(GArray) by_acc = sieve_trials_rank(trials, "acc", TRUE, NULL);
  g_assert_cmpuint(by_acc->len, ==, 2);
}

/* ---- a study in a store ------------------------------------------------------ */

static const char config[] = "name: synthetic\n"
                             "seed: 3\n"
                             "space: {plugin: nb201}\n"
                             "optimizer: {plugin: random}\n"
                             "evaluator: {plugin: tabular, table: t.csv}\n"
                             "objective: [{metric: acc, direction: maximize}, {metric: lat, direction: minimize}]\n"
                             "pipeline: [dedupe, {screen: {proxies: [synflow]}}]\n"
                             "budget: {evaluations: 50}\n"
                             "report: {top: 7}\n";

typedef struct {
  char *dir;
  char *path;
} Fixture;

static void
fixture_set_up(Fixture *f, gconstpointer data)
{
  f->dir = g_dir_make_tmp("sieve-report-XXXXXX", NULL);
  f->path = g_build_filename(f->dir, "s.sieve", NULL);
}

static void
fixture_tear_down(Fixture *f, gconstpointer data)
{
  g_autofree char *wal = g_strconcat(f->path, "-wal", NULL), *shm = g_strconcat(f->path, "-shm", NULL);
  g_autofree char *lock = g_strconcat(f->path, ".lock", NULL);
  g_unlink(wal);
  g_unlink(shm);
  g_unlink(lock);
  g_unlink(f->path);
  g_rmdir(f->dir);
  g_free(f->path);
  g_free(f->dir);
}

/* Trials: ok ones with acc, lat and a synflow score; every 7th failed,
 * every 5th answered from the cache (reusing trial 0), every 11th
 * screened, the last two pending. */
static guint
write_study(const char *path, GArray *acc, GArray *lat, GArray *syn, guint *counts)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(SieveStore) store = sieve_store_open(path, SIEVE_STORE_WRITE, &error);
  g_assert_no_error(error);
  g_assert_true(sieve_store_begin(store, &error));
  g_assert_true(sieve_store_set_meta(store, "config", config, &error));
  g_assert_true(sieve_store_set_meta(store, "name", "synthetic", &error));
  g_assert_true(sieve_store_set_meta(store, "elapsed_s", "0.006", &error));
  GRand *rand = g_rand_new_with_seed(5);
  const guint n = 60;
  for (guint i = 0; i < n; i++) {
    g_autofree char *genotype = g_strdup_printf("g%u", i);
    gint64 number = sieve_store_add_trial(store, genotype, NAN, &error);
    g_assert_no_error(error);
    if (i >= n - 2) {
      counts[SIEVE_STATUS_PENDING]++;
      continue;
    }
    g_autoptr(SieveResult) r = sieve_result_new();
    gint64 from = -1;
    double a = g_rand_int_range(rand, 0, 40) / 2.0, l = g_rand_int_range(rand, 0, 30), s = a + g_rand_double(rand) * 8;
    if (i > 0 && i % 7 == 0) {
      sieve_result_set_failed(r, "diverged at step %u", i % 2);
    } else if (i > 0 && i % 11 == 0) {
      sieve_result_set_status(r, SIEVE_STATUS_SCREENED);
      sieve_result_set_metric(r, "synflow", s);
    } else if (i > 0 && i % 5 == 0) {
      sieve_result_set_status(r, SIEVE_STATUS_CACHED);
      sieve_result_set_metric(r, "acc", g_array_index(acc, double, 0));
      from = 0;
    } else {
      sieve_result_set_metric(r, "acc", a);
      sieve_result_set_metric(r, "lat", l);
      sieve_result_set_metric(r, "synflow", s);
      /* A proxy's name the screen stage does not list: the evaluator's fact
       * about the network, which the report must not present as a proxy. */
      sieve_result_set_metric(r, "params", 1000.0 + i);
      sieve_result_set_cost(r, 2.0);
      g_array_append_val(acc, a);
      g_array_append_val(lat, l);
      g_array_append_val(syn, s);
    }
    counts[sieve_result_get_status(r)]++;
    g_assert_true(sieve_store_finish_trial(store, number, r, 1000.0 + i, 1000.5 + i, 0, from, &error));
  }
  g_assert_true(sieve_store_commit(store, &error));
  g_rand_free(rand);
  return n;
}

/* Occurrences of needle inside the <svg> whose id is id. */
static guint
count_in_plot(const char *html, const char *id, const char *needle)
{
  g_autofree char *attr = g_strdup_printf("id=\"%s\"", id);
  const char *plot = strstr(html, attr);
  g_assert_nonnull(plot);
  const char *end = strstr(plot, "</svg>");
  guint n = 0;
  for (const char *p = plot; (p = strstr(p, needle)) && p < end; p++)
    n++;
  return n;
}

static void
test_study(Fixture *f, gconstpointer data)
{
  g_autoptr(GArray) acc = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) lat = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) syn = g_array_new(FALSE, FALSE, sizeof(double));
  guint counts[5] = {0};
  guint n = write_study(f->path, acc, lat, syn, counts);

  g_autoptr(GError) error = NULL;
  g_autoptr(SieveStore) store = sieve_store_open(f->path, SIEVE_STORE_READ, &error);
  g_assert_no_error(error);
  g_autoptr(SieveReport) report = sieve_report_new(store, NULL, &error);
  g_assert_no_error(error);

  /* The config, as stored. */
  g_assert_cmpstr(report->name, ==, "synthetic");
  g_assert_cmpstr(report->space_name, ==, "nb201");
  g_assert_cmpstr(report->pipeline, ==, "dedupe -> screen -> tabular");
  g_assert_cmpuint(report->n_objectives, ==, 2);
  g_assert_false(report->objectives[1].maximize);
  g_assert_cmpuint(report->top, ==, 7);
  g_assert_cmpuint(report->budget_evaluations, ==, 50);

  /* Counts, time and the best, against what was written. */
  g_assert_cmpuint(report->trials->len, ==, n);
  for (guint s = 0; s < 5; s++)
    g_assert_cmpuint(report->counts[s], ==, counts[s]);
  g_assert_cmpfloat_with_epsilon(report->evaluation_s, 2.0 * acc->len, 1e-9);
  g_assert_cmpfloat_with_epsilon(report->saved_s, 2.0 * counts[SIEVE_STATUS_CACHED], 1e-9);
  g_assert_cmpfloat_with_epsilon(report->wall_s, (1000.5 + n - 3) - 1000.0, 1e-9);
  /* Elapsed is the study's own (meta elapsed_s), not the span of its
   * trials: a resumed study's pause between runs is no time it ran. */
  g_assert_cmpfloat(report->elapsed_s, ==, 0.006);
  double best = -INFINITY;
  for (guint i = 0; i < acc->len; i++)
    best = MAX(best, g_array_index(acc, double, i));
  g_assert_cmpint(report->best, >=, 0);
  g_assert_cmpfloat(report->objective[report->best], ==, best);

  /* The Pareto front, against every pair of the written values. */
  guint m = acc->len;
  double v[2 * m];
  for (guint i = 0; i < m; i++) {
    v[2 * i] = g_array_index(acc, double, i);
    v[2 * i + 1] = -g_array_index(lat, double, i);
  }
  guint expected = 0;
  for (guint i = 0; i < m; i++)
    expected += !naive_dominated(v, m, i);
  g_assert_cmpuint(report->pareto_points->len, ==, m);
  g_assert_cmpuint(report->pareto_front->len, ==, expected);
  for (guint p = 0; p < report->pareto_front->len; p++) {
    guint i = g_array_index(report->pareto_front, guint, p);
    double a = sieve__report_metric(report, i, "acc"), l = sieve__report_metric(report, i, "lat");
    double point[2] = {a, -l};
    /* Not dominated by any written point. */
    for (guint j = 0; j < m; j++)
      g_assert_false(v[2 * j] >= point[0] && v[2 * j + 1] >= point[1] && (v[2 * j] > point[0] || v[2 * j + 1] > point[1]));
  }

  /* The proxy: synflow against acc over the ok trials (the screened ones'
   * scores have no acc to pair with). */
  g_assert_cmpuint(report->proxies->len, ==, 1);
  const SieveReportProxy *proxy = &g_array_index(report->proxies, SieveReportProxy, 0);
  g_assert_cmpstr(proxy->name, ==, "synflow");
  g_assert_cmpuint(proxy->n, ==, m);
  g_assert_cmpfloat_with_epsilon(proxy->spearman, naive_spearman((double *) syn->data, (double *) acc->data, m), 1e-12);
  g_assert_cmpfloat_with_epsilon(proxy->kendall, naive_kendall((double *) syn->data, (double *) acc->data, m), 1e-12);

  /* The page carries them: sections, counts, the number of points. */
  g_autofree char *html = sieve_report_to_html(report, NULL);
  static const char *const sections[] = {"header", "funnel", "history", "pareto", "proxies", "top", "failures"};
  for (guint s = 0; s < G_N_ELEMENTS(sections); s++) {
    g_autofree char *tag = g_strdup_printf("<section id=\"%s\">", sections[s]);
    g_assert_nonnull(strstr(html, tag));
  }
  g_assert_null(strstr(html, "<section id=\"fidelity\">")); /* no fidelities */
  g_assert_null(strstr(html, "<section id=\"importance\">")); /* no space */
  g_assert_nonnull(strstr(html, "<dd id=\"elapsed\">0.006</dd>"));
  /* The stored config is the last run's: a resumed study's header said "budget evaluations 10" for 20 trials. */
  g_assert_nonnull(strstr(html, "<dt>budget (the last run's)</dt><dd>evaluations 50</dd>"));
  g_autofree char *failed = g_strdup_printf("<dd id=\"count-failed\">%u</dd>", counts[SIEVE_STATUS_FAILED]);
  g_assert_nonnull(strstr(html, failed));
  g_autofree char *front = g_strdup_printf("<p>%u non-dominated of %u evaluated", expected, m);
  g_assert_nonnull(strstr(html, front));
  /* History: ok + cached (with a value) + failed points, in each plot. */
  guint points = count_in_plot(html, "history-trial", "<circle class=\"pt");
  g_assert_cmpuint(points, ==, counts[SIEVE_STATUS_OK] + counts[SIEVE_STATUS_CACHED] + counts[SIEVE_STATUS_FAILED]);
  /* Top table: report.top rows. */
  const char *table = strstr(html, "id=\"top-table\"");
  guint rows = 0;
  for (const char *p = strstr(table, "<tbody>"); (p = strstr(p + 1, "<tr>")) && p < strstr(table, "</tbody>");)
    rows++;
  g_assert_cmpuint(rows, ==, 7);

  /* The status a live viewer polls. */
  g_autofree char *status = sieve_report_status_json(report);
  g_autofree char *finished = g_strdup_printf("\"finished\":%u", n - 2);
  g_assert_nonnull(strstr(status, finished));
  g_assert_nonnull(strstr(status, "\"running\":[{\"trial\":58,\"genotype\":\"g58\",\"stage\":\"proposed\"}"));
}

/* A one-objective study of ok trials, one per value, each its own
 * genotype (x=I), written through the store, then read as a report.
 * (transfer full) */
static SieveReport *
single_objective_report(const char *path, const char *metric, const char *direction, const double *values, guint n)
{
  g_autoptr(GError) error = NULL;
  {
    g_autoptr(SieveStore) store = sieve_store_open(path, SIEVE_STORE_WRITE, &error);
    g_assert_true(sieve_store_begin(store, &error));
    g_assert_true(sieve_store_set_meta(store, "objective", metric, &error));
    g_assert_true(sieve_store_set_meta(store, "direction", direction, &error));
    for (guint i = 0; i < n; i++) {
      g_autofree char *genotype = g_strdup_printf("x=%u", i);
      gint64 number = sieve_store_add_trial(store, genotype, NAN, &error);
      g_autoptr(SieveResult) r = sieve_result_new();
      sieve_result_set_metric(r, metric, values[i]);
      g_assert_true(sieve_store_finish_trial(store, number, r, i, i + 1, 0, -1, &error));
    }
    g_assert_true(sieve_store_commit(store, &error));
  }
  g_autoptr(SieveStore) store = sieve_store_open(path, SIEVE_STORE_READ, &error);
  SieveReport *report = sieve_report_new(store, NULL, &error);
  g_assert_no_error(error);
  return report;
}

static void
test_thinning(Fixture *f, gconstpointer data)
{
  /* More ok trials than a plot draws: the plot says so and stays under the
   * cap plus the improvements of the best. */
  guint n = 3 * SIEVE_REPORT_MAX_POINTS;
  g_autofree double *values = g_new(double, n);
  for (guint i = 0; i < n; i++)
    values[i] = (i * 7919) % 1000;
  g_autoptr(SieveReport) report = single_objective_report(f->path, "acc", "maximize", values, n);
  g_autofree char *html = sieve_report_to_html(report, NULL);
  g_assert_nonnull(strstr(html, "class=\"note thinned\">Showing "));
  guint points = count_in_plot(html, "history-trial", "<circle class=\"pt");
  g_assert_cmpuint(points, <=, SIEVE_REPORT_MAX_POINTS + 20);
  g_assert_cmpuint(points, >=, SIEVE_REPORT_MAX_POINTS);
}

static void
test_empty(Fixture *f, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  {
    g_autoptr(SieveStore) store = sieve_store_open(f->path, SIEVE_STORE_WRITE, &error);
    g_assert_no_error(error);
  }
  g_autoptr(SieveStore) store = sieve_store_open(f->path, SIEVE_STORE_READ, &error);
  g_autoptr(SieveReport) report = sieve_report_new(store, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(report->trials->len, ==, 0);
  g_assert_cmpint(report->best, ==, -1);
  g_autofree char *html = sieve_report_to_html(report, NULL);
  g_assert_nonnull(strstr(html, "<section id=\"empty\">"));
  g_assert_null(strstr(html, "<section id=\"history\">"));
  g_assert_null(strstr(html, "<circle"));
}

/* A multi-fidelity study (one trial per rung, as hyperband stores them):
 * the best and the top table follow the incumbent rule of `sieve run`'s
 * summary, the best at the highest fidelity reached, each configuration
 * once; the Pareto front is over the highest fidelity only.  Before the
 * rule was shared, the report's best was the lowest value at any rung
 * (trial 0 here) and its table listed a configuration once per rung. */
static void
test_fidelity(Fixture *f, gconstpointer data)
{
  static const struct {
    const char *genotype;
    double fidelity, loss, lat;
  } rungs[] = {
      {"a", 1, 1.0, 5}, {"b", 1, 5.0, 5}, {"c", 1, 6.0, 5}, {"b", 3, 4.0, 5},
      {"c", 3, 5.0, 5}, {"c", 9, 7.0, 5}, {"d", 3, 2.0, 1},
  };
  g_autoptr(GError) error = NULL;
  {
    g_autoptr(SieveStore) store = sieve_store_open(f->path, SIEVE_STORE_WRITE, &error);
    g_assert_no_error(error);
    g_assert_true(sieve_store_begin(store, &error));
    g_assert_true(sieve_store_set_meta(store, "config",
                                       "objective: [{metric: loss, direction: minimize}, {metric: lat, direction: minimize}]\n",
                                       &error));
    for (guint i = 0; i < G_N_ELEMENTS(rungs); i++) {
      gint64 number = sieve_store_add_trial(store, rungs[i].genotype, rungs[i].fidelity, &error);
      g_autoptr(SieveResult) r = sieve_result_new();
      sieve_result_set_metric(r, "loss", rungs[i].loss);
      sieve_result_set_metric(r, "lat", rungs[i].lat);
      g_assert_true(sieve_store_finish_trial(store, number, r, i, i + 0.5, 0, -1, &error));
    }
    g_assert_true(sieve_store_commit(store, &error));
  }
  g_autoptr(SieveStore) store = sieve_store_open(f->path, SIEVE_STORE_READ, &error);
  g_autoptr(SieveReport) report = sieve_report_new(store, NULL, &error);
  g_assert_no_error(error);
  g_assert_true(report->by_fidelity);
  /* c at 9, then d (2.0) and b (4.0) at 3, then a at 1. */
  static const gint64 expected[] = {5, 6, 3, 0};
  g_assert_cmpuint(report->ranked->len, ==, G_N_ELEMENTS(expected));
  for (guint r = 0; r < G_N_ELEMENTS(expected); r++)
    g_assert_cmpint(((const SieveTrial *) report->trials->pdata[g_array_index(report->ranked, guint, r)])->number, ==,
                    expected[r]);
  g_assert_cmpint(report->best, ==, 5);
  g_assert_cmpfloat(report->objective[report->best], ==, 7.0);
  /* Only trial 5 ran at fidelity 9: it alone is the front. */
  g_assert_cmpuint(report->pareto_points->len, ==, 1);
  g_assert_cmpuint(report->pareto_front->len, ==, 1);

  g_autofree char *html = sieve_report_to_html(report, NULL);
  g_assert_nonnull(strstr(html, "<dd id=\"best\" data-trial=\"5\">"));
  const char *table = strstr(html, "id=\"top-table\"");
  g_assert_nonnull(table);
  guint rows = 0;
  for (const char *p = strstr(table, "<tbody>"); (p = strstr(p + 1, "<tr>")) && p < strstr(table, "</tbody>");)
    rows++;
  g_assert_cmpuint(rows, ==, 4);
  g_assert_nonnull(strstr(html, "at the highest fidelity each reached"));
  g_autofree char *status = sieve_report_status_json(report);
  g_assert_nonnull(strstr(status, "\"best\":{\"trial\":5,"));
}

/* Objectives near DBL_MAX (a penalty an evaluator prints) and infinite
 * ones: the axes stay finite (before, hi = b + pad overflowed and every
 * point was drawn at cy="-nan" with no y tick labels), the infinite ones
 * are counted off the scale. */
static void
test_huge_values(Fixture *f, gconstpointer data)
{
  static const double values[] = {3.0, G_MAXDOUBLE, 1.5, -G_MAXDOUBLE, INFINITY, 2.0};
  g_autoptr(SieveReport) report = single_objective_report(f->path, "value", "minimize", values, G_N_ELEMENTS(values));
  g_autofree char *html = sieve_report_to_html(report, NULL);
  g_assert_null(strstr(html, "nan"));
  g_assert_null(strstr(html, "inf\""));
  /* y tick labels on both halves of the axis (the positive half had none:
   * first + i * step overflowed to inf past 0 and ended the ticks), and
   * every finite value drawn. */
  g_assert_cmpuint(count_in_plot(html, "history-trial", "text-anchor=\"end\">"), >=, 5);
  g_assert_cmpuint(count_in_plot(html, "history-trial", "text-anchor=\"end\">-1e+308<"), ==, 1);
  g_assert_cmpuint(count_in_plot(html, "history-trial", "text-anchor=\"end\">1e+308<"), ==, 1);
  g_assert_cmpuint(count_in_plot(html, "history-trial", "text-anchor=\"end\">5e+307<"), ==, 1);
  g_assert_cmpuint(count_in_plot(html, "history-trial", "<circle class=\"pt"), ==, G_N_ELEMENTS(values) - 1);
  g_assert_nonnull(strstr(html, "<p class=\"note\" id=\"off-scale\">1 trials with an infinite value"));
  /* The range helper alone: finite, ordered ends for the extremes. */
  double lo, hi;
  sieve__svg_range(values, G_N_ELEMENTS(values), 1, &lo, &hi);
  g_assert_true(isfinite(lo) && isfinite(hi) && lo == -G_MAXDOUBLE && hi == G_MAXDOUBLE);
  static const double one[] = {G_MAXDOUBLE, NAN};
  sieve__svg_range(one, 2, 1, &lo, &hi);
  g_assert_true(isfinite(lo) && isfinite(hi) && lo < hi);
}

/* Values a float step apart (0.3 and 0.1 + 0.2; 1e17 and the next double):
 * the plot has a few ticks (before, the tick loop's v += step never moved v
 * and the page grew until memory ran out). */
static void
test_close_values(Fixture *f, gconstpointer data)
{
  static const double values[] = {0.3, 0.1 + 0.2, 0.3};
  g_autoptr(SieveReport) report = single_objective_report(f->path, "value", "minimize", values, G_N_ELEMENTS(values));
  g_autofree char *html = sieve_report_to_html(report, NULL);
  guint ticks = count_in_plot(html, "history-trial", "text-anchor=\"end\">");
  g_assert_cmpuint(ticks, >=, 2);
  g_assert_cmpuint(ticks, <=, 32);
  double lo, hi;
  static const double far[] = {1e17, 1e17 + 16};
  sieve__svg_range(far, 2, 1, &lo, &hi);
  g_assert_cmpfloat(hi - lo, >=, 1e17 * 0.09);
}

/* A study with a pruner (as `sieve run examples/progress/prune.yaml`
 * stores it): 4 ok trials and 4 pruned, each pruned one with its last value
 * as the objective's metric, a `step` and the fidelity it reached.  A
 * pruned trial counts as an evaluation (README, "Pruners"): the funnel's
 * evaluated bar, the evaluation time and the progress line count it, and
 * the history draws it apart, at its last value, never as the best.
 * Before, the funnel said "evaluated 4 of 8" and the history drew 4. */
static void
test_pruned(Fixture *f, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  {
    g_autoptr(SieveStore) store = sieve_store_open(f->path, SIEVE_STORE_WRITE, &error);
    g_assert_no_error(error);
    g_assert_true(sieve_store_begin(store, &error));
    g_assert_true(sieve_store_set_meta(store, "config",
                                       "objective: {metric: val_acc, direction: maximize}\n"
                                       "budget: {evaluations: 8}\n",
                                       &error));
    for (guint i = 0; i < 8; i++) {
      g_autofree char *genotype = g_strdup_printf("x=%u", i);
      gboolean pruned = i % 2 == 1;
      gint64 number = sieve_store_add_trial(store, genotype, pruned ? 2 : NAN, &error);
      g_autoptr(SieveResult) r = sieve_result_new();
      sieve_result_set_metric(r, "val_acc", pruned ? 0.1 * i : 0.5 + 0.01 * i);
      if (pruned) {
        sieve_result_set_metric(r, "step", 2);
        sieve_result_set_status(r, SIEVE_STATUS_PRUNED);
        sieve_result_set_reason(r, "pruned at step 2");
      }
      sieve_result_set_cost(r, pruned ? 0.25 : 1.0);
      g_assert_true(sieve_store_finish_trial(store, number, r, i, i + 1, 0, -1, &error));
    }
    g_assert_true(sieve_store_commit(store, &error));
  }
  g_autoptr(SieveStore) store = sieve_store_open(f->path, SIEVE_STORE_READ, &error);
  g_autoptr(SieveReport) report = sieve_report_new(store, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(report->counts[SIEVE_STATUS_PRUNED], ==, 4);
  g_assert_cmpuint(report->counts[SIEVE_STATUS_OK], ==, 4);
  /* 4 x 1.0 s ok, 4 x 0.25 s pruned. */
  g_assert_cmpfloat_with_epsilon(report->evaluation_s, 5.0, 1e-12);
  g_assert_cmpfloat_with_epsilon(report->mean_ok_s, 1.0, 1e-12);
  /* The best is an ok trial (0.56, trial 6), not pruned trial 7's 0.7. */
  g_assert_cmpint(report->best, ==, 6);

  g_autofree char *html = sieve_report_to_html(report, NULL);
  g_assert_cmpuint(count_in_plot(html, "funnel-plot", "<title>evaluated: 8<"), ==, 1);
  g_assert_cmpuint(count_in_plot(html, "funnel-plot", "class=\"bar pruned\" data-count=\"4\""), ==, 1);
  g_assert_nonnull(strstr(html, "<dd id=\"evaluation-time\">5</dd>"));
  g_assert_cmpuint(count_in_plot(html, "history-trial", "<circle class=\"pt"), ==, 8);
  g_assert_cmpuint(count_in_plot(html, "history-trial", "<circle class=\"pt pruned\""), ==, 4);
  g_assert_cmpuint(count_in_plot(html, "history-time", "<circle class=\"pt pruned\""), ==, 4);
  g_assert_nonnull(strstr(html, "trial 7 pruned: 0.7 at fidelity 2 (pruned at step 2)"));
  g_assert_nonnull(strstr(html, "</span>pruned (its last value"));
  g_autofree char *line = sieve_report_progress_line(report);
  g_assert_true(g_str_has_prefix(line, "[8/8] best val_acc 0.56 (trial 6)"));
  g_assert_nonnull(strstr(line, ", 4 pruned"));
}

/* A study made in Lua (sieve.study) stores no config: its objectives are
 * read from its key, so that a study of two gets its Pareto front and not a
 * "best" by the first alone (a new-user review, 2026-11-27). */
static void
test_lua_objectives(Fixture *f, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  {
    g_autoptr(SieveStore) store = sieve_store_open(f->path, SIEVE_STORE_WRITE, &error);
    g_assert_no_error(error);
    g_assert_true(sieve_store_begin(store, &error));
    g_assert_true(sieve_store_set_meta(store, "name", "lua-study", &error));
    g_assert_true(sieve_store_set_meta(store, "objective", "a", &error));
    g_assert_true(sieve_store_set_meta(store, "direction", "minimize", &error));
    /* Values as the key writes them, escaped (a name of non-ASCII letters
     * read back raw matched no metric, a review found). */
    g_autofree char *escaped = g_strescape("b \xc3\xa9\"", NULL);
    g_autofree char *key = g_strdup_printf("objective[0].metric\ta\nobjective[0].direction\tminimize\n"
                                           "objective[1].metric\t%s\nobjective[1].direction\tmaximize\n"
                                           "optimizer.plugin\trandom\nseed\t2\n",
                                           escaped);
    g_assert_true(sieve_store_set_meta(store, "lua_study_key", key, &error));
    /* (a, b): (1, 1) (2, 3) (3, 2) (0.5, 0) (4, 4): all but (3, 2) on the front */
    static const double points[][2] = {{1, 1}, {2, 3}, {3, 2}, {0.5, 0}, {4, 4}};
    for (guint i = 0; i < G_N_ELEMENTS(points); i++) {
      g_autofree char *genotype = g_strdup_printf("x=%u", i);
      gint64 number = sieve_store_add_trial(store, genotype, NAN, &error);
      g_assert_no_error(error);
      g_autoptr(SieveResult) r = sieve_result_new();
      sieve_result_set_metric(r, "a", points[i][0]);
      sieve_result_set_metric(r, "b \xc3\xa9\"", points[i][1]);
      g_assert_true(sieve_store_finish_trial(store, number, r, 1000.0 + i, 1000.5 + i, 0, -1, &error));
    }
    g_assert_true(sieve_store_commit(store, &error));
  }
  g_autoptr(SieveStore) store = sieve_store_open(f->path, SIEVE_STORE_READ, &error);
  g_assert_no_error(error);
  g_autoptr(SieveReport) report = sieve_report_new(store, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(report->n_objectives, ==, 2);
  g_assert_cmpstr(report->objectives[0].metric, ==, "a");
  g_assert_false(report->objectives[0].maximize);
  g_assert_cmpstr(report->objectives[1].metric, ==, "b \xc3\xa9\"");
  g_assert_true(report->objectives[1].maximize);
  g_assert_cmpuint(report->pareto_front->len, ==, 4);
  for (guint p = 0; p < report->pareto_front->len; p++)
    g_assert_cmpuint(g_array_index(report->pareto_front, guint, p), !=, 2);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/report/stats/correlations", test_correlations);
  g_test_add_func("/report/stats/eta-squared", test_eta_squared);
  g_test_add_func("/report/pareto/brute-force", test_pareto_brute_force);
  g_test_add_func("/report/pareto/cached-twins", test_pareto_cached_twins);
  g_test_add("/report/study/figures", Fixture, NULL, fixture_set_up, test_study, fixture_tear_down);
  g_test_add("/report/study/thinning", Fixture, NULL, fixture_set_up, test_thinning, fixture_tear_down);
  g_test_add("/report/study/fidelity", Fixture, NULL, fixture_set_up, test_fidelity, fixture_tear_down);
  g_test_add("/report/study/huge-values", Fixture, NULL, fixture_set_up, test_huge_values, fixture_tear_down);
  g_test_add("/report/study/close-values", Fixture, NULL, fixture_set_up, test_close_values, fixture_tear_down);
  g_test_add("/report/study/empty", Fixture, NULL, fixture_set_up, test_empty, fixture_tear_down);
  g_test_add("/report/study/lua-objectives", Fixture, NULL, fixture_set_up, test_lua_objectives, fixture_tear_down);
  g_test_add("/report/study/pruned", Fixture, NULL, fixture_set_up, test_pruned, fixture_tear_down);
  return g_test_run();
}
