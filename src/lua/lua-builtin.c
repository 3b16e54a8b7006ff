/* sieve: the builtin `lua` components (space, optimizer and evaluator),
 * registered as a static plugin by sieve_lua_register_static.  Each takes a
 * `script:` that registers a component of its kind (lua-def.c) and runs it
 * in a Lua state of its own, with the sandbox of its `lua:` map.
 */
#include "sieve-config.h"

#include "lua/lua-private.h"

const SieveOptionSpec sieve__lua_builtin_options[] = {
    SIEVE_OPTION_PATH("script", NULL, "Lua file that registers the component (sieve.register_space, _optimizer or _evaluator{...})"),
    {"name", SIEVE_OPTION_TYPE_STRING, NULL, 0, 0, NULL,
     "which of the script's components of this kind to use (default: its only one)", 0, {NULL}},
    SIEVE_OPTION_NODE("options", "options of the script's component, checked against the table it declares"),
    SIEVE_OPTION_NODE("lua", "sandbox and limits {allow, path, instructions, seconds, memory_mb} (default: the "
                             "experiment's lua section; 60 seconds per call)"),
    SIEVE_OPTION_END,
};

SieveLuaInstance *
sieve__lua_builtin_instance_new(SieveComponentKind kind, SieveSpace *space, const SieveOptions *options,
                                const SieveStudyInfo *study, GError **error)
{
  const char *script = sieve_options_get_string(options, "script");
  const char *wanted = sieve_options_get_string(options, "name");
  /* lua.path is relative to the folder the script's is (the config's): the
   * folder of the file the options came from is the store's when a study
   * is read back (sieve final, sieve model export of a store kept apart
   * from its config did not find the modules). */
  const char *options_dir = sieve__options_get_base_dir(options);
  /* Without a config, the script's origin may be a flag's text (--set
   * space.script=...), not a file: then the current folder. */
  const char *origin = sieve_node_origin(sieve_options_node(options, "script"));
  g_autofree char *origin_dir = origin && g_file_test(origin, G_FILE_TEST_IS_REGULAR) ? g_path_get_dirname(origin)
                                                                                     : g_strdup(".");
  g_autofree char *base_dir = g_canonicalize_filename(options_dir ? options_dir : origin_dir, NULL);
  SieveLuaSettings defaults, settings;
  sieve_lua_settings_init(&defaults);
  defaults.seconds = SIEVE_LUA_COMPONENT_SECONDS;
  gboolean ok = sieve_lua_settings_read(sieve_options_get_node(options, "lua"), base_dir, &defaults, FALSE,
                                        &settings, error);
  sieve_lua_settings_clear(&defaults);
  if (!ok)
    return NULL;
  SieveLuaHost *host = sieve_lua_host_new(&settings, NULL, error);
  sieve_lua_settings_clear(&settings);
  if (host == NULL || !sieve_lua_host_run_file(host, script, NULL, error)) {
    sieve_lua_host_free(host);
    return NULL;
  }
  /* The script's components of this kind. */
  guint found;
  GString *names = g_string_new(NULL);
  SieveLuaDef *def = sieve__lua_def_find(host, kind, wanted, &found, names);
  g_autofree char *listed = g_string_free(names, FALSE);
  const char *kind_name = sieve_component_kind_to_string(kind);
  if (def == NULL || (wanted == NULL && found > 1)) {
    if (found == 0)
      sieve_options_set_error(options, "script", error, "%s registers no %s (call sieve.register_%s{...})", script,
                              kind_name, kind_name);
    else if (wanted == NULL)
      sieve_options_set_error(options, "script", error, "%s registers several %ss (%s): say which with 'name'",
                              script, kind_name, listed);
    else
      sieve_options_set_error(options, "name", error, "%s registers no %s '%s' (it has: %s)", script, kind_name,
                              wanted, listed);
    sieve_lua_host_free(host);
    return NULL;
  }
  g_autofree char *context = g_strdup_printf("%s '%s' of %s", kind_name, def->name, script);
  const SieveNode *opts_node = sieve_options_get_node(options, "options");
  if (opts_node != NULL && sieve_node_kind(opts_node) != SIEVE_NODE_MAP) {
    sieve_node_set_error(error, opts_node, "'options' must be a map of the script's options");
    sieve_lua_host_free(host);
    return NULL;
  }
  g_autoptr(SieveOptions) own = sieve_options_new(def->spec, opts_node, NULL, base_dir, context, error);
  if (own == NULL) {
    sieve_lua_host_free(host);
    return NULL;
  }
  return sieve__lua_instance_new(def, host, space, own, study, error);
}

static const SieveComponentInfo builtin_infos[] = {
    {SIEVE_KIND_SPACE, "lua", "a search space written in Lua (script: a file calling sieve.register_space)",
     sieve__lua_builtin_options, &sieve__lua_impl_space_class,
     "{plugin: lua, script: search_spaces/nb201.lua, options: {C: 8, N: 1}}", {NULL}},
    {SIEVE_KIND_OPTIMIZER, "lua", "an optimizer written in Lua (script: a file calling sieve.register_optimizer)",
     sieve__lua_builtin_options, &sieve__lua_impl_optimizer_class,
     "{plugin: lua, script: examples/lua/evolution.lua, options: {population: 20, sample: 5}}", {NULL}},
    {SIEVE_KIND_EVALUATOR, "lua", "an evaluator written in Lua (script: a file calling sieve.register_evaluator)",
     sieve__lua_builtin_options, &sieve__lua_impl_evaluator_class, "{plugin: lua, script: examples/lua/branin.lua}",
     {NULL}},
};

static gboolean
builtin_init(SieveRegistry *registry, GError **error)
{
  for (guint i = 0; i < G_N_ELEMENTS(builtin_infos); i++)
    if (!sieve_registry_add(registry, &builtin_infos[i], error))
      return FALSE;
  return TRUE;
}

static const SievePluginDescriptor builtin_plugin = {
    SIEVE_ABI_MAJOR, SIEVE_ABI_MINOR, "lua", SIEVE_VERSION, "components written in Lua", "MIT", builtin_init, {NULL}};

void
sieve_lua_register_static(void)
{
  GError *error = NULL;
  /* Only a descriptor this file got wrong can be refused. */
  if (!sieve_plugin_register_static(&builtin_plugin, &error))
    g_error("%s", error->message);
}

gboolean
sieve_lua_component_is_builtin(const SieveComponent *component)
{
  return component != NULL && sieve_component_get_info(component)->options == sieve__lua_builtin_options;
}
