/* The in-process half of the Lua overhead benchmark: N trials of what the
 * engine does per trial with an optimizer (ask(1), tell, and save after
 * each), without store or evaluator, for the C `random` optimizer and the
 * Lua `trivial` one (bench/lua/trivial.lua through the builtin `lua`
 * component, with and without its time-limit hook).  Prints microseconds
 * per trial, best of R repetitions.
 *   bench-lua-overhead SOURCE_ROOT [N] [R]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <sieve/sieve.h>

#include "lua/lua-private.h"

static double
trials(SieveOptimizer *opt, int n)
{
  g_autoptr(SieveResult) result = sieve_result_new();
  sieve_result_set_metric(result, "value", 1.0);
  double objective = -1.0;
  GError *error = NULL;
  gint64 t0 = g_get_monotonic_time();
  for (int i = 0; i < n; i++) {
    GPtrArray *asked = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_candidate_free);
    if (!sieve_optimizer_ask(opt, 1, asked, &error))
      g_error("%s", error->message);
    GVariant *s1 = sieve_optimizer_save(opt, &error);
    if (s1 == NULL || !sieve_optimizer_tell(opt, asked->pdata[0], result, &objective, &error))
      g_error("%s", error->message);
    GVariant *s2 = sieve_optimizer_save(opt, &error);
    if (s2 == NULL)
      g_error("%s", error->message);
    g_variant_unref(s1);
    g_variant_unref(s2);
    g_ptr_array_unref(asked);
  }
  return (g_get_monotonic_time() - t0) / (double) n;
}

static SieveOptimizer *
make(SieveRegistry *registry, SieveSpace *space, const char *yaml)
{
  GError *error = NULL;
  g_autoptr(SieveNode) node = sieve_node_parse_string(yaml, -1, "bench", &error);
  if (node == NULL)
    g_error("%s", error->message);
  const char *name = sieve_node_get_string(sieve_node_lookup(node, "plugin"), NULL);
  const SieveComponent *c = sieve_registry_lookup(registry, SIEVE_KIND_OPTIMIZER, name);
  if (c == NULL)
    g_error("no optimizer named '%s' in the registry", name);
  const char *reserved[] = {"plugin", NULL};
  g_autoptr(SieveOptions) options = sieve_options_new(sieve_component_get_info(c)->options, node, reserved, NULL, name, &error);
  if (options == NULL)
    g_error("%s", error->message);
  const char *names[] = {"value", NULL};
  SieveStudyInfo study = {.seed = 1, .n_objectives = 1, .objective_names = names};
  SieveOptimizer *opt = sieve_optimizer_new(c, space, options, &study, &error);
  if (opt == NULL)
    g_error("%s", error->message);
  return opt;
}

int
main(int argc, char **argv)
{
  if (argc < 2) {
    fprintf(stderr, "usage: %s SOURCE_ROOT [N] [R]\n", argv[0]);
    return 2;
  }
  int n = argc > 2 ? atoi(argv[2]) : 20000, reps = argc > 3 ? atoi(argv[3]) : 3;
  /* The builtin `lua` components belong to the Lua layer, which a host
   * registers, as the sieve command does (src/cli/main.c). */
  sieve_lua_register_static();
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  sieve_registry_load_default(registry, NULL, NULL);
  GError *error = NULL;
  g_autofree char *space_yaml = g_strdup_printf("{file: %s/search_spaces/branin.yaml}", argv[1]);
  g_autoptr(SieveNode) space_node = sieve_node_parse_string(space_yaml, -1, "bench", &error);
  const SieveComponent *hpo = sieve_registry_lookup(registry, SIEVE_KIND_SPACE, "hpo");
  g_autoptr(SieveOptions) space_options = sieve_options_new(sieve_component_get_info(hpo)->options, space_node, NULL, NULL, "hpo", &error);
  g_autoptr(SieveSpace) space = sieve_space_new(hpo, space_options, &error);
  if (space == NULL)
    g_error("%s", error->message);
  g_autofree char *lua_hook = g_strdup_printf("{plugin: lua, script: %s/bench/lua/trivial.lua}", argv[1]);
  g_autofree char *lua_nohook = g_strdup_printf("{plugin: lua, script: %s/bench/lua/trivial.lua, lua: {seconds: 0}}", argv[1]);
  const char *labels[] = {"random (C)", "trivial (Lua, 60 s time-limit hook)", "trivial (Lua, no hook)"};
  const char *configs[] = {"{plugin: random}", lua_hook, lua_nohook};
  double best[3] = {INFINITY, INFINITY, INFINITY};
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < 3; k++) {
      g_autoptr(SieveOptimizer) opt = make(registry, space, configs[k]);
      double us = trials(opt, n);
      best[k] = MIN(best[k], us);
    }
  printf("in-process ask + tell + 2 saves, %d trials, best of %d:\n", n, reps);
  for (int k = 0; k < 3; k++) {
    printf("  %-36s %7.2f us/trial", labels[k], best[k]);
    if (k > 0)
      printf("  (+%.2f us, x%.2f)", best[k] - best[0], best[k] / best[0]);
    printf("\n");
  }
  return 0;
}
