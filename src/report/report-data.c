/* sieve: a study read for the report: its trials, what its stored config
 * says (space, optimizer, evaluator, pipeline, budget, objectives), and
 * every figure the page shows, computed once. */
#include <math.h>
#include <string.h>

#include "report/report-private.h"

/* Rows of the top table when the config does not say (report: {top: N}). */
#define DEFAULT_TOP 20
/* Quantile bins a numeric decision is cut into for its importance. */
#define IMPORTANCE_BINS 8

void
sieve_report_free(SieveReport *report)
{
  if (report == NULL)
    return;
  g_free(report->path);
  if (report->trials)
    g_ptr_array_unref(report->trials);
  g_free(report->name);
  g_free(report->created);
  g_free(report->seed);
  g_free(report->space_name);
  g_free(report->optimizer_name);
  g_free(report->evaluator_name);
  g_clear_pointer(&report->screen_proxies, g_hash_table_unref);
  g_free(report->pipeline);
  g_free(report->budget);
  for (guint k = 0; k < report->n_objectives; k++)
    g_free(report->objectives[k].metric);
  g_free(report->objectives);
  g_free(report->objective);
  if (report->ranked)
    g_array_unref(report->ranked);
  g_free(report->ranked_mask);
  if (report->pareto_points)
    g_array_unref(report->pareto_points);
  if (report->pareto_front)
    g_array_unref(report->pareto_front);
  if (report->proxies) {
    for (guint i = 0; i < report->proxies->len; i++)
      g_free(g_array_index(report->proxies, SieveReportProxy, i).name);
    g_array_unref(report->proxies);
  }
  g_free(report->space_note);
  g_free(report->decisions);
  if (report->importance)
    g_array_unref(report->importance);
  g_free(report);
}

double
sieve__report_metric(const SieveReport *report, guint i, const char *metric)
{
  const SieveTrial *t = report->trials->pdata[i];
  double v;
  return sieve_result_get_metric(t->result, metric, &v) ? v : NAN;
}

/* A proxy's score is the screen stage's, or a metric the proxy evaluator
 * computed.  The same names from another evaluator are facts of the trained
 * network (the train evaluator reports `params`), not predictions of it. */
gboolean
sieve__report_is_proxy(const SieveReport *report, const char *metric)
{
  if (strcmp(metric, SIEVE_SCREEN_SCORE) == 0)
    return TRUE;
  if (sieve_proxy_lookup(metric) == NULL)
    return FALSE;
  if (g_strcmp0(report->evaluator_name, "proxy") == 0)
    return TRUE;
  return report->screen_proxies != NULL && (g_hash_table_size(report->screen_proxies) == 0 ||
                                            g_hash_table_contains(report->screen_proxies, metric));
}

/* ---- the stored config -------------------------------------------------- */

static char *
section_plugin(const SieveNode *root, const char *key)
{
  const SieveNode *section = sieve_node_lookup(root, key);
  if (section == NULL || sieve_node_kind(section) != SIEVE_NODE_MAP)
    return NULL;
  const SieveNode *plugin = sieve_node_lookup(section, "plugin");
  return plugin && sieve_node_kind(plugin) == SIEVE_NODE_SCALAR ? g_strdup(sieve_node_text(plugin)) : NULL;
}

static void
read_screen_proxies(SieveReport *report, const SieveNode *options)
{
  if (report->screen_proxies == NULL)
    report->screen_proxies = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  const SieveNode *list = options && sieve_node_kind(options) == SIEVE_NODE_MAP ? sieve_node_lookup(options, "proxies")
                                                                                : NULL;
  if (list == NULL || sieve_node_kind(list) != SIEVE_NODE_LIST)
    return;
  for (guint i = 0; i < sieve_node_size(list); i++)
    if (sieve_node_kind(sieve_node_nth(list, i)) == SIEVE_NODE_SCALAR)
      g_hash_table_add(report->screen_proxies, g_strdup(sieve_node_text(sieve_node_nth(list, i))));
}

/* "dedupe -> screen -> tabular": the stages' names as written; notes the
 * screen stage's proxies on the way. */
static char *
describe_pipeline(SieveReport *report, const SieveNode *root, const char *evaluator)
{
  const SieveNode *list = sieve_node_lookup(root, "pipeline");
  if (list == NULL || sieve_node_kind(list) != SIEVE_NODE_LIST || sieve_node_size(list) == 0)
    return NULL;
  GString *text = g_string_new(NULL);
  for (guint i = 0; i < sieve_node_size(list); i++) {
    const SieveNode *stage = sieve_node_nth(list, i);
    const char *name = sieve_node_kind(stage) == SIEVE_NODE_SCALAR ? sieve_node_text(stage)
                       : sieve_node_kind(stage) == SIEVE_NODE_MAP && sieve_node_size(stage) > 0
                           ? sieve_node_text(sieve_node_nth_key(stage, 0))
                           : "?";
    g_string_append_printf(text, "%s -> ", name);
    if (strcmp(name, "screen") == 0)
      read_screen_proxies(report, sieve_node_kind(stage) == SIEVE_NODE_MAP ? sieve_node_nth(stage, 0) : NULL);
  }
  g_string_append(text, evaluator ? evaluator : "evaluator");
  return g_string_free(text, FALSE);
}

static void
read_objective(SieveReport *report, const SieveNode *node)
{
  const SieveNode *metric = sieve_node_lookup(node, "metric");
  if (metric == NULL || sieve_node_kind(metric) != SIEVE_NODE_SCALAR)
    return;
  const SieveNode *direction = sieve_node_lookup(node, "direction");
  SieveReportObjective *o = &report->objectives[report->n_objectives++];
  o->metric = g_strdup(sieve_node_text(metric));
  o->maximize = direction == NULL || g_strcmp0(sieve_node_text(direction), "minimize") != 0;
}

static void
read_config(SieveReport *report, const SieveNode *root)
{
  report->space_name = section_plugin(root, "space");
  report->optimizer_name = section_plugin(root, "optimizer");
  report->evaluator_name = section_plugin(root, "evaluator");
  report->pipeline = describe_pipeline(report, root, report->evaluator_name);
  const SieveNode *budget = sieve_node_lookup(root, "budget");
  if (budget && sieve_node_kind(budget) == SIEVE_NODE_MAP) {
    GString *text = g_string_new(NULL);
    for (guint i = 0; i < sieve_node_size(budget); i++) {
      const SieveNode *value = sieve_node_nth(budget, i);
      const char *key = sieve_node_text(sieve_node_nth_key(budget, i));
      if (sieve_node_kind(value) != SIEVE_NODE_SCALAR)
        continue;
      g_string_append_printf(text, "%s%s %s", text->len ? ", " : "", key, sieve_node_text(value));
      gint64 n;
      if (strcmp(key, "evaluations") == 0 && sieve_node_get_int(value, &n, NULL) && n > 0)
        report->budget_evaluations = (guint64) n;
    }
    report->budget = g_string_free(text, FALSE);
  }
  const SieveNode *top = sieve_node_lookup(sieve_node_lookup(root, "report") ?: root, "top");
  gint64 n;
  if (top && sieve_node_kind(top) == SIEVE_NODE_SCALAR && sieve_node_get_int(top, &n, NULL) && n > 0)
    report->top = (guint) MIN(n, 1000);
  const SieveNode *objective = sieve_node_lookup(root, "objective");
  if (objective && sieve_node_kind(objective) == SIEVE_NODE_LIST) {
    report->objectives = g_new0(SieveReportObjective, sieve_node_size(objective) + 1);
    for (guint i = 0; i < sieve_node_size(objective); i++)
      if (sieve_node_kind(sieve_node_nth(objective, i)) == SIEVE_NODE_MAP)
        read_objective(report, sieve_node_nth(objective, i));
  } else if (objective && sieve_node_kind(objective) == SIEVE_NODE_MAP) {
    report->objectives = g_new0(SieveReportObjective, 1);
    read_objective(report, objective);
  }
}

/* The objectives of a study made in Lua (sieve.study), which stores no
 * config: its key's lines "objective[K].metric<TAB>NAME" and
 * "objective[K].direction<TAB>minimize|maximize", in K order, each value
 * g_strescape'd (the Lua study key's form, src/lua/lua-study-key.c). */
static void
read_lua_objectives(SieveReport *report, const char *key)
{
  g_auto(GStrv) lines = g_strsplit(key, "\n", -1);
  guint n = 0;
  for (guint i = 0; lines[i] != NULL; i++)
    if (g_str_has_prefix(lines[i], "objective[") && strstr(lines[i], "].metric\t") != NULL)
      n++;
  if (n == 0)
    return;
  report->objectives = g_new0(SieveReportObjective, n);
  for (guint k = 0; k < n; k++) {
    g_autofree char *metric = g_strdup_printf("objective[%u].metric\t", k);
    g_autofree char *direction = g_strdup_printf("objective[%u].direction\t", k);
    const char *name = NULL, *dir = NULL;
    for (guint i = 0; lines[i] != NULL; i++) {
      if (g_str_has_prefix(lines[i], metric))
        name = lines[i] + strlen(metric);
      else if (g_str_has_prefix(lines[i], direction))
        dir = lines[i] + strlen(direction);
    }
    if (name == NULL)
      break; /* a key not of this form: the objectives read so far */
    report->objectives[report->n_objectives++] = (SieveReportObjective){g_strcompress(name),
                                                                        g_strcmp0(dir, "minimize") != 0};
  }
}

/* ---- figures ------------------------------------------------------------ */

static void
compute_counts(SieveReport *report)
{
  double ok_cost = 0;
  report->t0 = NAN;
  double last = NAN;
  g_autoptr(GHashTable) hashes = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < report->trials->len; i++) {
    const SieveTrial *t = report->trials->pdata[i];
    report->counts[t->status]++;
    double cost = sieve_result_get_cost(t->result);
    /* A pruned trial was evaluated until the pruner stopped it: its time
     * was spent, as `sieve run`'s summary counts it. */
    if (t->status == SIEVE_STATUS_OK || t->status == SIEVE_STATUS_FAILED || t->status == SIEVE_STATUS_PRUNED) {
      if (t->hash != NULL)
        g_hash_table_add(hashes, t->hash);
      if (isfinite(cost))
        report->evaluation_s += cost;
      if (t->status == SIEVE_STATUS_OK && isfinite(cost))
        ok_cost += cost;
    }
    if (isfinite(t->started) && !(report->t0 <= t->started))
      report->t0 = t->started;
    if (isfinite(t->finished) && !(last >= t->finished))
      last = t->finished;
  }
  report->distinct = g_hash_table_size(hashes);
  guint ok = report->counts[SIEVE_STATUS_OK];
  report->mean_ok_s = ok ? ok_cost / ok : NAN;
  report->saved_s = ok ? report->counts[SIEVE_STATUS_CACHED] * report->mean_ok_s : 0;
  report->wall_s = isfinite(report->t0) && isfinite(last) ? last - report->t0 : NAN;
}

static void
compute_objective(SieveReport *report)
{
  guint n = report->trials->len;
  report->objective = g_new(double, n ? n : 1);
  report->ranked_mask = g_new0(gboolean, n ? n : 1);
  report->best = -1;
  const SieveReportObjective *o = report->n_objectives ? &report->objectives[0] : NULL;
  for (guint i = 0; i < n; i++) {
    const SieveTrial *t = report->trials->pdata[i];
    gboolean has = o && (t->status == SIEVE_STATUS_OK || t->status == SIEVE_STATUS_CACHED);
    report->objective[i] = has ? sieve__report_metric(report, i, o->metric) : NAN;
  }
  if (o == NULL) {
    report->ranked = g_array_new(FALSE, FALSE, sizeof(guint));
    return;
  }
  /* The engine's incumbent and the summary's ranking: one rule. */
  report->ranked = sieve_trials_rank(report->trials, o->metric, o->maximize, &report->by_fidelity);
  for (guint r = 0; r < report->ranked->len; r++)
    report->ranked_mask[g_array_index(report->ranked, guint, r)] = TRUE;
  if (report->ranked->len > 0)
    report->best = (gint) g_array_index(report->ranked, guint, 0);
}

/* Trial indices by the primary objective, best first, then by number. */
gint
sieve__report_compare_objective(gconstpointer a, gconstpointer b, gpointer data)
{
  const SieveReport *report = data;
  guint i = *(const guint *) a, j = *(const guint *) b;
  double x = report->objective[i], y = report->objective[j];
  if (x != y)
    return (report->objectives[0].maximize ? x > y : x < y) ? -1 : 1;
  return i < j ? -1 : 1;
}

static void
compute_pareto(SieveReport *report)
{
  report->pareto_points = g_array_new(FALSE, FALSE, sizeof(guint));
  report->pareto_front = g_array_new(FALSE, FALSE, sizeof(guint));
  if (report->n_objectives < 2)
    return;
  /* The summary's rule (sieve_trials_pareto_points): the trials at the
   * highest fidelity reached. */
  const char *metrics[2] = {report->objectives[0].metric, report->objectives[1].metric};
  g_array_unref(report->pareto_points);
  report->pareto_points = sieve_trials_pareto_points(report->trials, metrics, 2);
  GArray *values = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint p = 0; p < report->pareto_points->len; p++) {
    guint i = g_array_index(report->pareto_points, guint, p);
    double v[2];
    for (guint k = 0; k < 2; k++) {
      v[k] = sieve__report_metric(report, i, report->objectives[k].metric);
      v[k] = report->objectives[k].maximize ? v[k] : -v[k];
    }
    g_array_append_vals(values, v, 2);
  }
  guint n = report->pareto_points->len;
  g_autofree gboolean *on_front = g_new(gboolean, n ? n : 1);
  sieve_report_pareto_2d((const double *) values->data, n, on_front);
  for (guint p = 0; p < n; p++)
    if (on_front[p])
      g_array_append_val(report->pareto_front, g_array_index(report->pareto_points, guint, p));
  g_array_sort_with_data(report->pareto_front, sieve__report_compare_objective, report);
  g_array_unref(values);
}

static gint
compare_name(gconstpointer a, gconstpointer b)
{
  return strcmp(*(const char *const *) a, *(const char *const *) b);
}

static void
compute_proxies(SieveReport *report)
{
  report->proxies = g_array_new(FALSE, TRUE, sizeof(SieveReportProxy));
  if (report->n_objectives == 0)
    return;
  const char *objective = report->objectives[0].metric;
  g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < report->trials->len; i++) {
    const SieveTrial *t = report->trials->pdata[i];
    for (guint m = 0; m < sieve_result_n_metrics(t->result); m++) {
      const char *name = sieve_result_metric_name(t->result, m);
      if (strcmp(name, objective) != 0 && sieve__report_is_proxy(report, name))
        g_hash_table_add(seen, (gpointer) name);
    }
  }
  g_autofree gpointer *names = g_hash_table_get_keys_as_array(seen, NULL);
  guint n_names = g_hash_table_size(seen);
  qsort(names, n_names, sizeof *names, compare_name);
  g_autofree double *xs = g_new(double, report->trials->len + 1);
  g_autofree double *ys = g_new(double, report->trials->len + 1);
  for (guint p = 0; p < n_names; p++) {
    guint n = 0;
    for (guint i = 0; i < report->trials->len; i++) {
      double x = sieve__report_metric(report, i, names[p]);
      if (report->ranked_mask[i] && isfinite(x) && isfinite(report->objective[i])) {
        xs[n] = x;
        ys[n++] = report->objective[i];
      }
    }
    SieveReportProxy proxy = {g_strdup(names[p]), n, sieve_report_spearman(xs, ys, n),
                              sieve_report_kendall(xs, ys, n)};
    g_array_append_val(report->proxies, proxy);
  }
}

static gint
compare_importance(gconstpointer a, gconstpointer b)
{
  const SieveReportImportance *x = a, *y = b;
  double u = isnan(x->eta2) ? -1 : x->eta2, v = isnan(y->eta2) ? -1 : y->eta2;
  if (u != v)
    return u > v ? -1 : 1;
  return x->decision < y->decision ? -1 : 1;
}

static void
compute_decisions(SieveReport *report)
{
  report->importance = g_array_new(FALSE, FALSE, sizeof(SieveReportImportance));
  if (report->space == NULL)
    return;
  guint d = sieve_space_n_decisions(report->space), n = report->trials->len;
  report->n_decisions = d;
  report->decisions = g_new(double, (gsize) n * d + 1);
  for (guint i = 0; i < n; i++) {
    const SieveTrial *t = report->trials->pdata[i];
    g_autoptr(SieveGenotype) g = sieve_space_parse(report->space, t->genotype, NULL);
    for (guint k = 0; k < d; k++)
      report->decisions[(gsize) i * d + k] = g ? sieve_genotype_get(g, k) : NAN;
  }
  /* The ok trials with an objective: the sample of every decision's ANOVA. */
  g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < n; i++)
    if (report->ranked_mask[i] && isfinite(report->objective[i]))
      g_array_append_val(rows, i);
  guint m = rows->len;
  if (m < 3)
    return;
  g_autofree double *values = g_new(double, m);
  g_autofree double *levels = g_new(double, m);
  g_autofree double *ranks = g_new(double, m);
  g_autofree guint *group = g_new(guint, m);
  for (guint r = 0; r < m; r++)
    values[r] = report->objective[g_array_index(rows, guint, r)];
  for (guint k = 0; k < d; k++) {
    const SieveDecision *decision = sieve_space_decision(report->space, k);
    /* Levels: a categorical's choice; a number's quantile bin (by rank, so
     * a log-scaled decision bins as evenly as a linear one); inactive
     * (NAN) is a level of its own. */
    guint n_finite = 0;
    for (guint r = 0; r < m; r++) {
      double v = report->decisions[(gsize) g_array_index(rows, guint, r) * d + k];
      if (isfinite(v))
        levels[n_finite++] = v;
    }
    sieve__report_ranks(levels, n_finite, ranks);
    guint categorical = decision->kind == SIEVE_DECISION_CATEGORICAL ? decision->n_choices : 0;
    guint bins = categorical ? categorical : MIN(IMPORTANCE_BINS, MAX(n_finite, 1u));
    g_autofree gboolean *used = g_new0(gboolean, bins + 1);
    for (guint r = 0, f = 0; r < m; r++) {
      double v = report->decisions[(gsize) g_array_index(rows, guint, r) * d + k];
      if (!isfinite(v))
        group[r] = bins;
      else if (categorical)
        group[r] = MIN((guint) v, bins - 1);
      else
        group[r] = MIN((guint) ((ranks[f] - 1) * bins / n_finite), bins - 1);
      if (isfinite(v))
        f++;
      used[group[r]] = TRUE;
    }
    SieveReportImportance imp = {k, 0, sieve_report_eta_squared(values, group, m, bins + 1)};
    for (guint b = 0; b <= bins; b++)
      imp.groups += used[b];
    g_array_append_val(report->importance, imp);
  }
  g_array_sort(report->importance, compare_importance);
}

SieveReport *
sieve_report_new(SieveStore *store, const SieveSpace *space, GError **error)
{
  g_return_val_if_fail(store != NULL, NULL);
  g_autoptr(SieveReport) report = g_new0(SieveReport, 1);
  report->path = g_strdup(sieve_store_get_path(store));
  report->top = DEFAULT_TOP;
  report->space = space;
  GError *local = NULL;
  g_autofree char *config = sieve_store_get_meta(store, "config", &local);
  if (local != NULL) {
    g_propagate_error(error, local);
    return NULL;
  }
  report->name = sieve_store_get_meta(store, "name", NULL);
  report->created = sieve_store_get_meta(store, "created", NULL);
  report->seed = sieve_store_get_meta(store, "seed", NULL);
  g_autofree char *elapsed = sieve_store_get_meta(store, "elapsed_s", NULL);
  report->elapsed_s = elapsed ? g_ascii_strtod(elapsed, NULL) : NAN;
  if (config != NULL) {
    g_autoptr(SieveNode) root = sieve_node_parse_string(config, -1, "stored config", NULL);
    if (root != NULL && sieve_node_kind(root) == SIEVE_NODE_MAP)
      read_config(report, root);
  }
  g_autofree char *lua_key = config == NULL ? sieve_store_get_meta(store, "lua_study_key", NULL) : NULL;
  if (lua_key != NULL)
    read_lua_objectives(report, lua_key);
  if (report->n_objectives == 0) {
    /* An older store, or a config that did not parse: meta still names the
     * primary objective. */
    g_autofree char *metric = sieve_store_get_meta(store, "objective", NULL);
    g_autofree char *direction = sieve_store_get_meta(store, "direction", NULL);
    if (metric != NULL) {
      g_free(report->objectives);
      report->objectives = g_new0(SieveReportObjective, 1);
      report->objectives[0] = (SieveReportObjective){g_steal_pointer(&metric), g_strcmp0(direction, "minimize") != 0};
      report->n_objectives = 1;
    }
  }
  report->trials = sieve_store_list_trials(store, FALSE, error);
  if (report->trials == NULL)
    return NULL;
  compute_counts(report);
  compute_objective(report);
  compute_pareto(report);
  compute_proxies(report);
  compute_decisions(report);
  return g_steal_pointer(&report);
}

char *
sieve_report_config_dir(SieveStore *store)
{
  char *dir = sieve_store_get_meta(store, "config_dir", NULL);
  if (dir != NULL && g_path_is_absolute(dir) && g_file_test(dir, G_FILE_TEST_IS_DIR))
    return dir;
  g_free(dir);
  return NULL;
}

char *
sieve_report_study_dir(SieveStore *store)
{
  /* Relative paths (an hpo space's file) are the config file's.  The store
   * keeps the config's folder as an absolute path (config_dir); one written
   * before it only has the config's path as given on the command line
   * (workers on other machines read it against their own folder), and a
   * relative one is taken from the store's folder (where `sieve run` puts
   * the store by default), so that options resolve against an absolute
   * folder. */
  char *dir = sieve_report_config_dir(store);
  if (dir != NULL)
    return dir;
  g_autofree char *config_path = sieve_store_get_meta(store, "config_path", NULL);
  g_autofree char *store_dir = g_path_get_dirname(sieve_store_get_path(store));
  g_autofree char *store_abs = g_canonicalize_filename(store_dir, NULL);
  g_autofree char *config_abs = config_path ? g_canonicalize_filename(config_path, store_abs) : NULL;
  return config_abs ? g_path_get_dirname(config_abs) : NULL;
}

SieveSpace *
sieve_report_space_new(SieveStore *store, SieveRegistry *registry, GError **error)
{
  g_autofree char *config = sieve_store_get_meta(store, "config", error);
  if (config == NULL) {
    if (error && *error == NULL)
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE, "%s holds no study config", sieve_store_get_path(store));
    return NULL;
  }
  g_autoptr(SieveNode) root = sieve_node_parse_string(config, -1, "stored config", error);
  if (root == NULL)
    return NULL;
  const SieveNode *section = sieve_node_lookup(root, "space");
  g_autofree char *plugin = section_plugin(root, "space");
  if (plugin == NULL) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "the stored config names no space plugin");
    return NULL;
  }
  const SieveComponent *component = sieve_registry_require(registry, SIEVE_KIND_SPACE, plugin, sieve_node_lookup(section, "plugin"), error);
  if (component == NULL)
    return NULL;
  g_autofree char *dir = sieve_report_study_dir(store);
  static const char *const reserved[] = {"plugin", NULL};
  g_autofree char *context = g_strdup_printf("space '%s'", plugin);
  g_autoptr(SieveOptions) options =
      sieve_options_new(sieve_component_get_info(component)->options, section, reserved, dir, context, error);
  if (options == NULL)
    return NULL;
  return sieve_space_new(component, options, error);
}

SieveReport *
sieve_report_load(SieveStore *store, SieveRegistry *registry, SieveSpace **space, GError **error)
{
  g_autoptr(GError) why = NULL;
  *space = registry ? sieve_report_space_new(store, registry, &why) : NULL;
  SieveReport *report = sieve_report_new(store, *space, error);
  if (report != NULL && *space == NULL && report->trials->len > 0)
    report->space_note = g_strdup_printf("The study's space could not be rebuilt (%s): decision importance and "
                                         "network drawings are left out.",
                                         why ? why->message : "no registry");
  return report;
}
