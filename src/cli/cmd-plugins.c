/* sieve plugins [--describe NAME] [--plugin-path PATH]... */
#include <stdio.h>
#include <string.h>

#include "cli/cli-private.h"
#include "core/core-private.h"

static const SieveComponentKind kinds[] = {SIEVE_KIND_SPACE, SIEVE_KIND_OPTIMIZER, SIEVE_KIND_EVALUATOR};

/* Keys every section of that kind accepts besides the plugin's own options. */
static const char *
section_keys(SieveComponentKind kind)
{
  return kind == SIEVE_KIND_OPTIMIZER
             ? "  plugin (string, required)\n      this component's name\n"
               "  seed (integer, default: the experiment's seed)\n      seed of this optimizer's random stream\n"
             : "  plugin (string, required)\n      this component's name\n";
}

static void
describe(const SieveComponent *c)
{
  const SieveComponentInfo *info = sieve_component_get_info(c);
  printf("%s %s: %s\n", sieve_component_kind_to_string(info->kind), info->name, info->summary ? info->summary : "");
  printf("  plugin %s %s (%s licence)\n  file %s\n\noptions:\n", sieve_component_get_plugin_name(c),
         sieve_component_get_plugin_version(c), sieve_component_get_plugin_license(c), sieve_component_get_path(c));
  fputs(section_keys(info->kind), stdout);
  if (info->options != NULL && info->options[0].name != NULL) {
    /* A space's or evaluator's seed follows the experiment's top-level seed
     * unless its section sets one (sieve_experiment_parse): its table's
     * default only holds where no experiment gives one (Lua, embedders). */
    guint n = 0;
    while (info->options[n].name != NULL)
      n++;
    g_autofree SieveOptionSpec *spec = g_memdup2(info->options, (n + 1) * sizeof *spec);
    g_autofree char *help = NULL;
    for (guint i = 0; i < n; i++)
      if (info->kind != SIEVE_KIND_OPTIMIZER && strcmp(spec[i].name, "seed") == 0) {
        help = g_strdup_printf("%s; default: the experiment's seed%s", spec[i].help ? spec[i].help : "seed",
                               spec[i].type == SIEVE_OPTION_TYPE_INT ? " (one outside the range is mapped into it)"
                                                                     : "");
        spec[i].help = help;
        spec[i].default_text = NULL;
      }
    g_autofree char *text = sieve_option_spec_describe(spec);
    fputs(text, stdout);
  }
  if (info->example != NULL) {
    printf("\nexample (paths relative to the source tree):\n  %s: %s\n", sieve_component_kind_to_string(info->kind),
           info->example);
    return;
  }
  printf("\nexample:\n  %s: {plugin: %s", sieve_component_kind_to_string(info->kind), info->name);
  for (const SieveOptionSpec *o = info->options; o && o->name; o++)
    if (o->flags & SIEVE_OPTION_REQUIRED)
      printf(", %s: ...", o->name);
  printf("}\n");
}

/* The pipeline's stages are no plugins, but are configured the same way. */
static void
describe_stage(const char *name)
{
  printf("pipeline stage %s: %s\n\noptions:\n", name, sieve_pipeline_stage_summary(name));
  const SieveOptionSpec *spec = sieve_pipeline_stage_spec(name);
  g_autofree char *text = sieve_option_spec_describe(spec);
  fputs(text, stdout);
  printf("\nexample:\n  pipeline:\n    - %s\n", sieve_pipeline_stage_example(name));
}

/* The experiment's pruner: section is no plugin either, and is described
 * from its own option table. */
static void
describe_pruner(void)
{
  printf("experiment section pruner: stops a running evaluation, judged on the intermediate values it reports, "
         "by Optuna 3.1's rules (median, percentile, patience)\n\noptions:\n");
  g_autofree char *text = sieve_option_spec_describe(sieve_pruner_spec());
  fputs(text, stdout);
  printf("\nexample:\n  pruner: {kind: median, startup_trials: 5, warmup_steps: 2}\n");
}

int
sieve_cmd_plugins(int argc, char **argv)
{
  g_autofree char *name = NULL;
  g_auto(GStrv) paths = NULL;
  GOptionEntry entries[] = {
      {"describe", 'd', 0, G_OPTION_ARG_STRING, &name,
       "print the options of component or pipeline stage NAME (both where a name is both)", "NAME"},
      {"plugin-path", 'p', 0, G_OPTION_ARG_FILENAME_ARRAY, &paths, "also load plugins from PATH (file or folder)",
       "PATH"},
      {NULL},
  };
  g_autoptr(GOptionContext) context = g_option_context_new("- list the components of every plugin found");
  g_option_context_set_description(context,
                                   "Plugins are loaded from the build tree (when sieve runs uninstalled) or the\n"
                                   "install tree ($libdir/sieve/plugins) first, then SIEVE_PLUGIN_PATH (':'-separated\n"
                                   "files or folders), then --plugin-path; a name is the first plugin's to register it.");
  g_option_context_add_main_entries(context, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(context, &argc, &argv, &error))
    return sieve_cli_fail(error);
  if (argc != 1) {
    fprintf(stderr, "sieve plugins: unexpected argument '%s'\n", argv[1]);
    return SIEVE_EXIT_USAGE;
  }

  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  g_autoptr(GPtrArray) refused = g_ptr_array_new_with_free_func((GDestroyNotify) g_error_free);
  g_autoptr(GPtrArray) abs_paths = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; paths && paths[i]; i++)
    g_ptr_array_add(abs_paths, g_canonicalize_filename(paths[i], NULL));
  g_ptr_array_add(abs_paths, NULL);
  sieve_registry_load_default(registry, (const char *const *) abs_paths->pdata, refused);
  sieve_cli_warn_refused(refused);

  if (name != NULL) {
    gboolean found = FALSE;
    for (guint k = 0; k < G_N_ELEMENTS(kinds); k++) {
      const SieveComponent *c = sieve_registry_lookup(registry, kinds[k], name);
      if (c != NULL) {
        if (found)
          printf("\n");
        describe(c);
        found = TRUE;
      }
    }
    /* latency is both an evaluator and a stage (one option table): both. */
    if (sieve_pipeline_stage_spec(name) != NULL) {
      if (found)
        printf("\n");
      describe_stage(name);
      found = TRUE;
    }
    if (strcmp(name, "pruner") == 0) {
      if (found)
        printf("\n");
      describe_pruner();
      found = TRUE;
    }
    if (!found) {
      g_autoptr(GPtrArray) all = g_ptr_array_new();
      g_ptr_array_add(all, "pruner");
      for (const char *const *stage = sieve_pipeline_stage_names(); *stage; stage++)
        g_ptr_array_add(all, (gpointer) *stage);
      for (guint k = 0; k < G_N_ELEMENTS(kinds); k++) {
        g_autoptr(GPtrArray) list = sieve_registry_list(registry, kinds[k]);
        for (guint i = 0; i < list->len; i++)
          g_ptr_array_add(all, (gpointer) sieve_component_get_name(list->pdata[i]));
      }
      g_ptr_array_add(all, NULL);
      const char *guess = sieve_suggest(name, (const char *const *) all->pdata);
      fprintf(stderr, "sieve plugins: no component named '%s'%s%s%s\n", name, guess ? " (did you mean '" : "",
              guess ? guess : "", guess ? "'?)" : "");
      return SIEVE_EXIT_FAILURE;
    }
    return SIEVE_EXIT_OK;
  }

  static const char *const headings[] = {"spaces", "optimizers", "evaluators"};
  for (guint k = 0; k < G_N_ELEMENTS(kinds); k++) {
    g_autoptr(GPtrArray) list = sieve_registry_list(registry, kinds[k]);
    printf("%s%s:\n", k ? "\n" : "", headings[k]);
    if (list->len == 0)
      printf("  (none)\n");
    for (guint i = 0; i < list->len; i++) {
      const SieveComponent *c = list->pdata[i];
      const SieveComponentInfo *info = sieve_component_get_info(c);
      printf("  %-12s %s  [%s %s]\n", info->name, info->summary ? info->summary : "",
             sieve_component_get_plugin_name(c), sieve_component_get_plugin_version(c));
    }
  }
  printf("\npipeline stages (the experiment's pipeline: list, before the evaluator):\n");
  for (const char *const *stage = sieve_pipeline_stage_names(); *stage; stage++)
    printf("  %-12s %s\n", *stage, sieve_pipeline_stage_summary(*stage));
  printf("\n'sieve plugins --describe NAME' lists a component's or a stage's options ('--describe pruner': the "
         "experiment's pruner: section).\n");
  return SIEVE_EXIT_OK;
}
