/* sieve: experiment files: parse, apply overrides, validate every section. */
#include <string.h>

#include "core/core-private.h"
#include <sieve/store.h>

/* Optional values without a default have no SIEVE_OPTION_* shorthand (the
 * macros make a NULL default required), hence the plain initialisers. */
static const char *const tell_orders[] = {"completion", "trial", NULL};

static const SieveOptionSpec experiment_spec[] = {
    {"name", SIEVE_OPTION_TYPE_STRING, NULL, 0, 0, NULL, "study name (default: the file's stem)", 0, {NULL}},
    {"seed", SIEVE_OPTION_TYPE_INT, "0", 0, 9007199254740992.0, NULL,
     "seed of every component that does not set its own", SIEVE_OPTION_HAS_MIN | SIEVE_OPTION_HAS_MAX, {NULL}},
    {"store", SIEVE_OPTION_TYPE_STRING, NULL, 0, 0, NULL,
     "SQLite file of the study, relative to the current folder (default: NAME.sieve)", 0, {NULL}},
    {"plugin_path", SIEVE_OPTION_TYPE_STRING_LIST, NULL, 0, 0, NULL,
     "extra plugin files or folders, relative to the experiment file", 0, {NULL}},
    SIEVE_OPTION_NODE("space", "the search space: {plugin: NAME, ...its options}"),
    SIEVE_OPTION_NODE("optimizer", "the search strategy: {plugin: NAME, seed: N, ...its options}"),
    SIEVE_OPTION_NODE("evaluator", "how a candidate is scored: {plugin: NAME, ...its options}"),
    SIEVE_OPTION_NODE("objective", "{metric: NAME, direction: maximize|minimize}, or a list of them"),
    SIEVE_OPTION_NODE("pipeline", "stages before the evaluator, in order: [dedupe, {screen: {...}}]"),
    SIEVE_OPTION_NODE("budget", "{evaluations: N, proposals: P, seconds: S}: when the study ends"),
    SIEVE_OPTION_NODE("constraints", "bounds checked before evaluation, a violator is rejected and costs none: "
                                     "[{metric: params, max: 1.0e6}, {metric: predicted_latency_ms, max: 3}]"),
    SIEVE_OPTION_INT("constraint_tries", "1000", 1, 1e12,
                     "stop the study after this many proposals in a row broke a constraint (the optimizer finds "
                     "nothing feasible)"),
    SIEVE_OPTION_INT("workers", "1", 1, 1024,
                     "evaluations run at once (needs a concurrent evaluator; unset: 1, or what the evaluator asks "
                     "for, e.g. train's per_gpu on a GPU)"),
    SIEVE_OPTION_CHOICE("tell_order", "completion", tell_orders,
                        "with workers > 1: completion tells each result as it finishes (no worker waits); trial "
                        "tells them in trial order and asks at the same points in every run (a reproducible study)"),
    SIEVE_OPTION_NODE("report", "{top: N}: the summary printed at the end"),
    SIEVE_OPTION_NODE("pruner", "stop evaluations early on their intermediate values: {kind: median|percentile|"
                                "patience, warmup_steps: N, startup_trials: N, ...}"),
    /* Read by the Lua layer between parse and resolve (lua/README.md). */
    SIEVE_OPTION_NODE("lua", "Lua sandbox and scripts: {allow: [io, os], path: [...], instructions: N, seconds: S, "
                             "memory_mb: M, load: [file.lua]}"),
    SIEVE_OPTION_END,
};

static const char *const directions[] = {"maximize", "minimize", NULL};
static const SieveOptionSpec objective_spec[] = {
    SIEVE_OPTION_STRING("metric", NULL, "the metric to optimise, as the evaluator reports it"),
    SIEVE_OPTION_CHOICE("direction", "maximize", directions, "maximize or minimize the metric"),
    SIEVE_OPTION_END,
};

static const SieveOptionSpec budget_spec[] = {
    SIEVE_OPTION_INT("evaluations", "0", 0, 1e15,
                     "finished evaluations after which the study ends (0: no limit); proposals answered from the "
                     "cache or screened out do not count"),
    SIEVE_OPTION_INT("proposals", "0", 0, 1e15,
                     "proposals (trials of any outcome) after which the study ends (0: no limit)"),
    SIEVE_OPTION_FLOAT("seconds", "0", 0, 1e15, "wall-clock seconds, summed over runs, after which no new trial starts (0: no limit)"),
    SIEVE_OPTION_END,
};

static const SieveOptionSpec report_spec[] = {
    SIEVE_OPTION_INT("top", "10", 0, 100000, "how many of the best trials the summary lists"),
    SIEVE_OPTION_END,
};

void
sieve_experiment_free(SieveExperiment *experiment)
{
  if (experiment == NULL)
    return;
  SieveSection *sections[] = {&experiment->space, &experiment->optimizer, &experiment->evaluator};
  for (guint i = 0; i < G_N_ELEMENTS(sections); i++)
    sieve_options_free(sections[i]->options);
  sieve_pipeline_clear(&experiment->pipeline);
  sieve_constraints_free(experiment->constraints, experiment->n_constraints);
  /* After the sections' options, which may point into what a host layer
   * attached (a script's option tables); the latest attached goes first. */
  for (guint i = experiment->n_attachments; i-- > 0;)
    if (experiment->attachments[i].destroy)
      experiment->attachments[i].destroy(experiment->attachments[i].data);
  g_free(experiment->attachments);
  if (experiment->root)
    sieve_node_unref(experiment->root);
  g_free(experiment->path);
  g_free(experiment->dir);
  g_free(experiment->text);
  g_free(experiment->name);
  g_free(experiment->store_path);
  g_strfreev(experiment->plugin_path);
  for (guint i = 0; i < experiment->n_objectives; i++)
    g_free(experiment->objectives[i].metric);
  g_free(experiment->objectives);
  g_free(experiment->objective_names);
  g_free(experiment);
}

gboolean
sieve_experiment_apply_override(SieveNode *root, const char *override, GError **error)
{
  g_return_val_if_fail(root != NULL && override != NULL, FALSE);
  const char *eq = strchr(override, '=');
  if (eq == NULL || eq == override) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "--set '%s': expected KEY=VALUE, e.g. --set optimizer.seed=3",
                override);
    return FALSE;
  }
  g_autofree char *key = g_strndup(override, eq - override);
  g_autofree char *origin = g_strdup_printf("--set %s", override);
  return sieve_node_set_path(root, key, eq + 1, origin, error);
}

static gboolean
apply_overrides(SieveNode *root, const char *const *overrides, GError **error)
{
  for (guint i = 0; overrides && overrides[i]; i++)
    if (!sieve_experiment_apply_override(root, overrides[i], error))
      return FALSE;
  return TRUE;
}

/* The seed a component gets from the top-level seed: the seed itself when
 * the component's range holds it, else a splitmix64 mix of it (Steele,
 * Lea & Flood, "Fast splittable pseudorandom number generators", OOPSLA
 * 2014) reduced into the range, so that a top-level seed up to 2^53 never
 * makes a component with a narrower seed (train's is 0..2^31-1) refuse the
 * experiment.  Deterministic: the same top-level seed always maps to the
 * same component seed. */
static gint64
component_seed(guint64 seed, const SieveOptionSpec *option)
{
  double lo = (option->flags & SIEVE_OPTION_HAS_MIN) ? option->min : 0.0;
  double hi = (option->flags & SIEVE_OPTION_HAS_MAX) ? option->max : 9007199254740992.0;
  if ((double) seed >= lo && (double) seed <= hi)
    return (gint64) seed;
  guint64 z = seed + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  guint64 width = (guint64) (hi - lo) + 1;
  return (gint64) lo + (gint64) (z % width);
}

/* A plugin section: a map with `plugin:` (or just the plugin's name). */
static gboolean
load_section(SieveExperiment *exp, SieveRegistry *registry, SieveComponentKind kind, const char *key,
             SieveSection *section, GError **error)
{
  SieveNode *node = sieve_node_lookup(exp->root, key);
  if (node == NULL) {
    sieve_node_set_error(error, exp->root, "missing '%s' section (e.g. %s: {plugin: NAME})", key, key);
    return FALSE;
  }
  if (sieve_node_kind(node) == SIEVE_NODE_SCALAR) {
    SieveNode *map = sieve_node_new_map(sieve_node_origin(node), sieve_node_line(node), sieve_node_column(node));
    sieve_node_map_set(map, "plugin", sieve_node_ref(node));
    sieve_node_map_set(exp->root, key, map); /* drops the root's ref to node; map holds one */
    node = map;
  }
  if (sieve_node_kind(node) != SIEVE_NODE_MAP) {
    sieve_node_set_error(error, node, "'%s' must be a map {plugin: NAME, ...} or a plugin name", key);
    return FALSE;
  }
  section->node = node;
  SieveNode *plugin = sieve_node_lookup(node, "plugin");
  if (plugin == NULL) {
    /* The section's other keys are checked against the plugin's options,
     * which are not known until the plugin is: a misspelt `plugn:` would
     * otherwise only be reported as a missing 'plugin'.  A key close to
     * 'plugin' is named at its own line and column with the suggestion. */
    static const char *const plugin_word[] = {"plugin", NULL};
    for (guint k = 0; k < sieve_node_size(node); k++) {
      SieveNode *written = sieve_node_nth_key(node, k);
      if (sieve_suggest(sieve_node_text(written), plugin_word) != NULL) {
        sieve_node_set_error(error, written, "unknown key '%s' in '%s' (did you mean 'plugin'?)",
                             sieve_node_text(written), key);
        return FALSE;
      }
    }
    sieve_node_set_error(error, node, "'%s' needs a 'plugin' key naming a %s plugin", key,
                         sieve_component_kind_to_string(kind));
    return FALSE;
  }
  const char *name = sieve_node_get_string(plugin, error);
  if (name == NULL)
    return FALSE;
  section->component = sieve_registry_require(registry, kind, name, plugin, error);
  if (section->component == NULL)
    return FALSE;
  g_autofree char *context = g_strdup_printf("%s '%s'", key, name);
  const SieveOptionSpec *spec = sieve_component_get_info(section->component)->options;
  /* The top-level seed is the seed of every component that does not set
   * its own (the optimizer's is read in resolve): a copy of the section
   * gets it, so that the stored experiment text stays as written; one the
   * component's range cannot hold is mapped into it (component_seed). */
  g_autoptr(SieveNode) seeded = NULL;
  const SieveNode *top_seed = sieve_node_lookup(exp->root, "seed");
  const SieveOptionSpec *seed_option = sieve__option_spec_find(spec, "seed");
  if (kind != SIEVE_KIND_OPTIMIZER && top_seed != NULL && sieve_node_lookup(node, "seed") == NULL &&
      seed_option != NULL) {
    seeded = sieve_node_copy(node);
    if (seed_option->type == SIEVE_OPTION_TYPE_INT) {
      g_autofree char *text = g_strdup_printf("%" G_GINT64_FORMAT, component_seed(exp->seed, seed_option));
      sieve_node_map_set(seeded, "seed",
                         sieve_node_new_scalar(text, FALSE, sieve_node_origin(top_seed), sieve_node_line(top_seed),
                                               sieve_node_column(top_seed)));
    } else {
      sieve_node_map_set(seeded, "seed", sieve_node_copy(top_seed));
    }
  }
  section->options = sieve_options_new(spec, seeded ? seeded : node,
                                       sieve__component_reserved_keys(kind),
                                       exp->dir, context, error);
  return section->options != NULL;
}

static SieveOptions *
load_small_section(SieveExperiment *exp, const char *key, const SieveOptionSpec *spec, gboolean required,
                   GError **error)
{
  SieveNode *node = sieve_node_lookup(exp->root, key);
  if (node == NULL && required) {
    sieve_node_set_error(error, exp->root, "missing '%s' section", key);
    return NULL;
  }
  if (node != NULL && sieve_node_kind(node) != SIEVE_NODE_MAP) {
    sieve_node_set_error(error, node, "'%s' must be a map", key);
    return NULL;
  }
  return sieve_options_new(spec, node, NULL, exp->dir, key, error);
}

static gboolean
load_objective(SieveExperiment *exp, const SieveNode *node, const char *context, SieveObjective *out,
               GError **error)
{
  if (sieve_node_kind(node) != SIEVE_NODE_MAP) {
    sieve_node_set_error(error, node, "%s must be a map {metric: NAME, direction: maximize|minimize}", context);
    return FALSE;
  }
  g_autoptr(SieveOptions) objective = sieve_options_new(objective_spec, node, NULL, exp->dir, context, error);
  if (objective == NULL)
    return FALSE;
  out->metric = g_strdup(sieve_options_get_string(objective, "metric"));
  out->maximize = g_strcmp0(sieve_options_get_string(objective, "direction"), "maximize") == 0;
  out->node = sieve_options_node(objective, "metric"); /* kept alive by exp->root */
  return TRUE;
}

/* `objective:` is one map, or a list of maps for several objectives. */
static gboolean
load_objectives(SieveExperiment *exp, GError **error)
{
  SieveNode *node = sieve_node_lookup(exp->root, "objective");
  if (node == NULL) {
    sieve_node_set_error(error, exp->root, "missing 'objective' section (e.g. objective: {metric: NAME})");
    return FALSE;
  }
  gboolean list = sieve_node_kind(node) == SIEVE_NODE_LIST;
  guint n = list ? sieve_node_size(node) : 1;
  if (n == 0) {
    sieve_node_set_error(error, node, "'objective' is an empty list: name at least one metric");
    return FALSE;
  }
  exp->objectives = g_new0(SieveObjective, n);
  exp->objective_names = g_new0(const char *, n + 1);
  for (guint i = 0; i < n; i++) {
    g_autofree char *context = list ? g_strdup_printf("objective #%u", i + 1) : g_strdup("objective");
    if (!load_objective(exp, list ? sieve_node_nth(node, i) : node, context, &exp->objectives[i], error))
      return FALSE;
    exp->n_objectives = i + 1;
    exp->objective_names[i] = exp->objectives[i].metric;
    for (guint j = 0; j < i; j++)
      if (strcmp(exp->objectives[j].metric, exp->objectives[i].metric) == 0) {
        sieve_node_set_error(error, exp->objectives[i].node, "metric '%s' is already objective #%u",
                             exp->objectives[i].metric, j + 1);
        return FALSE;
      }
  }
  return TRUE;
}

void
sieve__experiment_load_plugins(const SieveExperiment *exp, SieveRegistry *registry, GPtrArray *errors)
{
  const SieveNode *list = sieve_node_lookup(exp->root, "plugin_path");
  g_autoptr(GPtrArray) to_load = g_ptr_array_new(); /* those not refused here */
  for (guint i = 0; exp->plugin_path != NULL && exp->plugin_path[i] != NULL; i++) {
    /* A missing entry is said at its line: the registry's refusal names
     * only the path. */
    const SieveNode *entry = sieve_node_kind(list) == SIEVE_NODE_LIST ? sieve_node_nth(list, i) : list;
    if (errors != NULL && entry != NULL && !g_file_test(exp->plugin_path[i], G_FILE_TEST_EXISTS)) {
      GError *missing = NULL;
      sieve_node_set_error(&missing, entry, "plugin_path: %s: no such plugin file or folder", exp->plugin_path[i]);
      g_ptr_array_add(errors, missing);
    } else
      g_ptr_array_add(to_load, exp->plugin_path[i]);
  }
  g_ptr_array_add(to_load, NULL);
  sieve_registry_load_default(registry, (const char *const *) to_load->pdata, errors);
}

/* The tree (overrides applied) and the top-level keys; the plugin_path
 * loaded into registry (may be NULL). */
static SieveExperiment *
experiment_parse(SieveExperiment *exp, const char *const *overrides, SieveRegistry *registry,
                 GPtrArray *plugin_errors, GError **error)
{
  g_autoptr(SieveExperiment) owned = exp;
  if (sieve_node_kind(exp->root) != SIEVE_NODE_MAP) {
    sieve_node_set_error(error, exp->root, "an experiment file must be a map of sections");
    return NULL;
  }
  if (!apply_overrides(exp->root, overrides, error))
    return NULL;

  g_autoptr(SieveOptions) top = sieve_options_new(experiment_spec, exp->root, NULL, exp->dir, "the experiment", error);
  if (top == NULL)
    return NULL;
  if (sieve_options_is_set(top, "name")) {
    /* The default store is NAME.sieve in the current folder: a name must
     * not hide it (".sieve") or put it elsewhere ("../x"). */
    const char *name = sieve_options_get_string(top, "name");
    if (name[0] == '\0' || strchr(name, G_DIR_SEPARATOR) != NULL) {
      sieve_options_set_error(top, "name", error, "name '%s': expected a study name without '/' (not empty); "
                              "'store:' sets where the study is kept", name);
      return NULL;
    }
    exp->name = g_strdup(name);
  } else {
    g_autofree char *base = g_path_get_basename(exp->path);
    char *dot = strrchr(base, '.');
    if (dot && dot != base)
      *dot = '\0';
    exp->name = g_strdup(base);
  }
  exp->seed = (guint64) sieve_options_get_int(top, "seed");
  exp->workers = (guint) sieve_options_get_int(top, "workers");
  exp->workers_set = sieve_options_is_set(top, "workers");
  exp->tell_in_order = g_str_equal(sieve_options_get_string(top, "tell_order"), "trial");
  exp->constraint_tries = sieve_options_get_int(top, "constraint_tries");
  if (sieve_options_is_set(top, "store") && sieve_options_get_string(top, "store")[0] == '\0') {
    sieve_options_set_error(top, "store", error, "store: expected a file name or a postgresql:// URL, not ''");
    return NULL;
  }
  g_autofree char *store_default = g_strconcat(exp->name, ".sieve", NULL);
  exp->store_path = sieve_store_canonical_name(
      sieve_options_is_set(top, "store") ? sieve_options_get_string(top, "store") : store_default);
  const char *const *paths = sieve_options_get_strv(top, "plugin_path");
  guint n_paths = paths ? g_strv_length((char **) paths) : 0;
  exp->plugin_path = g_new0(char *, n_paths + 1);
  for (guint i = 0; i < n_paths; i++)
    exp->plugin_path[i] = g_canonicalize_filename(paths[i], exp->dir);

  /* Plugins named by the file must be loaded before its sections are
   * checked against their option tables. */
  if (registry != NULL && n_paths > 0)
    sieve__experiment_load_plugins(exp, registry, plugin_errors);

  return g_steal_pointer(&owned);
}

gboolean
sieve_experiment_resolve(SieveExperiment *exp, SieveRegistry *registry, GError **error)
{
  g_return_val_if_fail(exp != NULL && registry != NULL && !exp->resolved, FALSE);
  if (!load_section(exp, registry, SIEVE_KIND_SPACE, "space", &exp->space, error) ||
      !load_section(exp, registry, SIEVE_KIND_OPTIMIZER, "optimizer", &exp->optimizer, error) ||
      !load_section(exp, registry, SIEVE_KIND_EVALUATOR, "evaluator", &exp->evaluator, error))
    return FALSE;
  exp->optimizer_seed = exp->seed;
  SieveNode *oseed = sieve_node_lookup(exp->optimizer.node, "seed");
  if (oseed != NULL) {
    gint64 v;
    if (!sieve_node_get_int(oseed, &v, error))
      return FALSE;
    if (v < 0) {
      sieve_node_set_error(error, oseed, "'seed' expects an integer >= 0, got %" G_GINT64_FORMAT, v);
      return FALSE;
    }
    exp->optimizer_seed = (guint64) v;
  }

  if (!load_objectives(exp, error))
    return FALSE;

  if (!sieve_pipeline_load(&exp->pipeline, sieve_node_lookup(exp->root, "pipeline"), exp->seed, exp->dir,
                           error))
    return FALSE;

  if (!sieve_constraints_load(sieve_node_lookup(exp->root, "constraints"), &exp->constraints,
                              &exp->n_constraints, error))
    return FALSE;
  /* A warning, not an error: a study's settings written out in full (the
   * default 1000 included) are the same study, constraints or not. */
  const SieveNode *tries = sieve_node_lookup(exp->root, "constraint_tries");
  if (tries != NULL && exp->n_constraints == 0) {
    g_autofree char *where = sieve_node_where(tries);
    g_printerr("sieve: %s: warning: constraint_tries does nothing without constraints (it caps the candidates "
               "rejected by them in a row)\n", where);
  }

  g_autoptr(SieveOptions) budget = load_small_section(exp, "budget", budget_spec, TRUE, error);
  if (budget == NULL)
    return FALSE;
  exp->budget_evaluations = sieve_options_get_int(budget, "evaluations");
  exp->budget_seconds = sieve_options_get_double(budget, "seconds");
  exp->budget_proposals = sieve_options_get_int(budget, "proposals");
  if (exp->budget_evaluations == 0 && exp->budget_seconds == 0 && exp->budget_proposals == 0) {
    /* At the limit written as 0 where there is one (a --set value is
     * located by the --set), not at the section that may hold a real one
     * in the file. */
    const SieveNode *budget_node = sieve_node_lookup(exp->root, "budget"), *at = budget_node;
    static const char *const limits[] = {"evaluations", "proposals", "seconds"};
    for (guint i = 0; i < G_N_ELEMENTS(limits) && at == budget_node; i++)
      if (sieve_node_lookup(budget_node, limits[i]) != NULL)
        at = sieve_node_lookup(budget_node, limits[i]);
    sieve_node_set_error(error, at,
                         "the budget sets no limit (0 is none): give 'evaluations', 'proposals' or 'seconds' > 0");
    return FALSE;
  }

  g_autoptr(SieveOptions) report = load_small_section(exp, "report", report_spec, FALSE, error);
  if (report == NULL)
    return FALSE;
  exp->report_top = (guint) sieve_options_get_int(report, "top");

  /* Checked here so that a mistake in it costs no evaluation; the engine
   * builds its own (it keeps the study's curves). */
  exp->pruner = sieve_node_lookup(exp->root, "pruner");
  if (exp->pruner != NULL) {
    g_autoptr(SievePruner) pruner = sieve_pruner_new(exp->pruner, exp->dir, TRUE, error);
    if (pruner == NULL)
      return FALSE;
  }

  exp->text = sieve_node_to_yaml(exp->root);
  exp->resolved = TRUE;
  return TRUE;
}


SieveExperiment *
sieve_experiment_parse(const char *path, const char *const *overrides, SieveRegistry *registry,
                       GPtrArray *plugin_errors, GError **error)
{
  g_return_val_if_fail(path != NULL, NULL);
  SieveNode *root = sieve_node_parse_file(path, error);
  if (root == NULL)
    return NULL;
  SieveExperiment *exp = g_new0(SieveExperiment, 1);
  exp->root = root;
  exp->path = g_strdup(path);
  g_autofree char *dir = g_path_get_dirname(path);
  exp->dir = g_canonicalize_filename(dir, NULL);
  return experiment_parse(exp, overrides, registry, plugin_errors, error);
}

SieveExperiment *
sieve_experiment_parse_string(const char *text, const char *origin, const char *base_dir,
                              const char *const *overrides, SieveRegistry *registry, GPtrArray *plugin_errors,
                              GError **error)
{
  g_return_val_if_fail(text != NULL && origin != NULL, NULL);
  SieveNode *root = sieve_node_parse_string(text, -1, origin, error);
  if (root == NULL)
    return NULL;
  SieveExperiment *exp = g_new0(SieveExperiment, 1);
  exp->root = root;
  exp->path = g_strdup(origin);
  exp->dir = g_canonicalize_filename(base_dir ? base_dir : ".", NULL);
  return experiment_parse(exp, overrides, registry, plugin_errors, error);
}

SieveExperiment *
sieve_experiment_parse_tree(SieveNode *root, const char *origin, const char *base_dir, const char *const *overrides,
                            SieveRegistry *registry, GPtrArray *plugin_errors, GError **error)
{
  g_return_val_if_fail(root != NULL && origin != NULL, NULL);
  SieveExperiment *exp = g_new0(SieveExperiment, 1);
  exp->root = sieve_node_ref(root);
  exp->path = g_strdup(origin);
  exp->dir = g_canonicalize_filename(base_dir ? base_dir : ".", NULL);
  return experiment_parse(exp, overrides, registry, plugin_errors, error);
}

static SieveExperiment *
resolved_or_null(SieveExperiment *exp, SieveRegistry *registry, GError **error)
{
  if (exp != NULL && !sieve_experiment_resolve(exp, registry, error))
    g_clear_pointer(&exp, sieve_experiment_free);
  return exp;
}

SieveExperiment *
sieve_experiment_load(const char *path, const char *const *overrides, SieveRegistry *registry,
                      GPtrArray *plugin_errors, GError **error)
{
  g_return_val_if_fail(path != NULL && registry != NULL, NULL);
  return resolved_or_null(sieve_experiment_parse(path, overrides, registry, plugin_errors, error), registry, error);
}

SieveExperiment *
sieve_experiment_load_string(const char *text, const char *origin, const char *base_dir,
                             const char *const *overrides, SieveRegistry *registry, GPtrArray *plugin_errors,
                             GError **error)
{
  g_return_val_if_fail(text != NULL && origin != NULL && registry != NULL, NULL);
  return resolved_or_null(
      sieve_experiment_parse_string(text, origin, base_dir, overrides, registry, plugin_errors, error), registry,
      error);
}

void
sieve_experiment_attach(SieveExperiment *experiment, gpointer data, GDestroyNotify destroy)
{
  g_return_if_fail(experiment != NULL);
  experiment->attachments = g_renew(SieveAttachment, experiment->attachments, experiment->n_attachments + 1);
  experiment->attachments[experiment->n_attachments++] = (SieveAttachment){data, destroy};
}

char *
sieve_experiment_identity(const SieveExperiment *experiment)
{
  g_return_val_if_fail(experiment != NULL, NULL);
  g_autoptr(SieveNode) copy = sieve_node_copy(experiment->root);
  static const char *const volatile_keys[] = {"budget", "workers", "report", "store", "constraint_tries"};
  for (guint i = 0; i < G_N_ELEMENTS(volatile_keys); i++)
    sieve_node_map_remove(copy, volatile_keys[i]);
  return sieve_node_to_yaml(copy);
}
