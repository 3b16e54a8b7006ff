/* sieve: the Lua layer's step of loading an experiment (see
 * sieve_lua_experiment_prepare in lua-private.h): the core parses and
 * resolves, the Lua host acts between the two. */
#include <string.h>

#include "lua/lua-private.h"

gboolean
sieve_lua_load_scripts(const SieveNode *lua, const char *dir, SieveRegistry *registry, GPtrArray *hosts,
                       GError **error)
{
  g_return_val_if_fail(registry != NULL && hosts != NULL, FALSE);
  sieve_lua_register_static();
  SieveLuaSettings defaults, settings;
  sieve_lua_settings_init(&defaults);
  defaults.seconds = SIEVE_LUA_COMPONENT_SECONDS;
  gboolean ok = sieve_lua_settings_read(lua, dir, &defaults, TRUE, &settings, error);
  sieve_lua_settings_clear(&defaults);
  if (!ok)
    return FALSE;
  g_autoptr(SieveOptions) options = sieve_options_new(sieve_lua_settings_spec(TRUE), lua, NULL, dir, "lua", error);
  if (options == NULL) {
    sieve_lua_settings_clear(&settings);
    return FALSE;
  }
  const char *const *load = sieve_options_get_strv(options, "load");
  for (guint i = 0; load && load[i]; i++) {
    g_autofree char *path = g_canonicalize_filename(load[i], dir);
    SieveLuaHost *host = sieve_lua_host_new(&settings, registry, error);
    if (host == NULL || !sieve_lua_host_run_file(host, path, NULL, error)) {
      /* What it registered before it failed points into it: it stays. */
      if (host != NULL)
        g_ptr_array_add(hosts, host);
      g_autofree char *where = sieve_node_where(sieve_options_node(options, "load"));
      g_prefix_error(error, "%s: lua.load: ", where);
      sieve_lua_settings_clear(&settings);
      return FALSE;
    }
    g_ptr_array_add(hosts, host);
  }
  sieve_lua_settings_clear(&settings);
  return TRUE;
}

/* Runs the `load` scripts of the `lua:` section and attaches their hosts
 * to the experiment. */
static gboolean
load_scripts(SieveExperiment *exp, const SieveNode *lua, SieveRegistry *registry, GError **error)
{
  g_autoptr(GPtrArray) hosts = g_ptr_array_new();
  gboolean ok = sieve_lua_load_scripts(lua, exp->dir, registry, hosts, error);
  for (guint i = 0; i < hosts->len; i++)
    sieve_experiment_attach(exp, hosts->pdata[i], (GDestroyNotify) sieve_lua_host_free);
  return ok;
}

gboolean
sieve_lua_experiment_prepare(SieveExperiment *exp, SieveRegistry *registry, GError **error)
{
  g_return_val_if_fail(exp != NULL && registry != NULL, FALSE);
  sieve_lua_register_static();
  const SieveNode *lua = sieve_node_lookup(exp->root, "lua");
  if (lua != NULL && !load_scripts(exp, lua, registry, error))
    return FALSE;
  if (lua == NULL || sieve_node_kind(lua) != SIEVE_NODE_MAP)
    return TRUE;
  static const char *const keys[] = {[SIEVE_KIND_SPACE] = "space", [SIEVE_KIND_OPTIMIZER] = "optimizer",
                                     [SIEVE_KIND_EVALUATOR] = "evaluator"};
  for (guint kind = 0; kind < G_N_ELEMENTS(keys); kind++) {
    SieveNode *section = sieve_node_lookup(exp->root, keys[kind]);
    SieveNode *plugin = section && sieve_node_kind(section) == SIEVE_NODE_MAP ? sieve_node_lookup(section, "plugin")
                                                                               : NULL;
    if (plugin == NULL || sieve_node_kind(plugin) != SIEVE_NODE_SCALAR || sieve_node_lookup(section, "lua") != NULL)
      continue;
    if (!sieve_lua_component_is_builtin(sieve_registry_lookup(registry, kind, sieve_node_text(plugin))))
      continue;
    SieveNode *copy = sieve_node_copy(lua);
    sieve_node_map_remove(copy, "load");
    sieve_node_map_set(section, "lua", copy);
  }
  return TRUE;
}

static SieveExperiment *
prepared_and_resolved(SieveExperiment *exp, SieveRegistry *registry, GError **error)
{
  if (exp != NULL &&
      (!sieve_lua_experiment_prepare(exp, registry, error) || !sieve_experiment_resolve(exp, registry, error)))
    g_clear_pointer(&exp, sieve_experiment_free);
  return exp;
}

SieveExperiment *
sieve_lua_experiment_load(const char *path, const char *const *overrides, SieveRegistry *registry,
                          GPtrArray *plugin_errors, GError **error)
{
  g_return_val_if_fail(path != NULL && registry != NULL, NULL);
  return prepared_and_resolved(sieve_experiment_parse(path, overrides, registry, plugin_errors, error), registry,
                               error);
}

SieveExperiment *
sieve_lua_experiment_load_string(const char *text, const char *origin, const char *base_dir,
                                 const char *const *overrides, SieveRegistry *registry, GPtrArray *plugin_errors,
                                 GError **error)
{
  g_return_val_if_fail(text != NULL && origin != NULL && registry != NULL, NULL);
  return prepared_and_resolved(
      sieve_experiment_parse_string(text, origin, base_dir, overrides, registry, plugin_errors, error), registry,
      error);
}

/* ---- a config run from Lua: no more than the script's grants ------------- */

static gboolean
refuse(SieveLuaHost *host, const SieveNode *node, const char *what, guint bit, GError **error)
{
  GError *local = NULL;
  if (sieve__lua_host_check_grant(host, bit, what, &local))
    return TRUE;
  g_autofree char *where = sieve_node_where(node);
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "%s: %s", where, local->message);
  g_error_free(local);
  return FALSE;
}

/* Every `lua:` map (the experiment's and any component's) and every
 * `plugin: command` anywhere in the tree: where a config could ask for a
 * right, wherever a component reads it from. */
static gboolean
check_tree(SieveLuaHost *host, const SieveNode *node, GError **error)
{
  if (sieve_node_kind(node) == SIEVE_NODE_LIST) {
    for (guint i = 0; i < sieve_node_size(node); i++)
      if (!check_tree(host, sieve_node_nth(node, i), error))
        return FALSE;
    return TRUE;
  }
  if (sieve_node_kind(node) != SIEVE_NODE_MAP)
    return TRUE;
  const SieveNode *plugin = sieve_node_lookup(node, "plugin");
  if (plugin != NULL && sieve_node_kind(plugin) == SIEVE_NODE_SCALAR && strcmp(sieve_node_text(plugin), "command") == 0 &&
      !refuse(host, plugin, "the 'command' evaluator", SIEVE_LUA_ALLOW_COMMAND, error))
    return FALSE;
  const SieveNode *lua = sieve_node_lookup(node, "lua");
  const SieveNode *allow = lua && sieve_node_kind(lua) == SIEVE_NODE_MAP ? sieve_node_lookup(lua, "allow") : NULL;
  if (allow != NULL && sieve_node_kind(allow) == SIEVE_NODE_LIST)
    for (guint i = 0; i < sieve_node_size(allow); i++) {
      const SieveNode *word = sieve_node_nth(allow, i);
      const char *text = sieve_node_kind(word) == SIEVE_NODE_SCALAR ? sieve_node_text(word) : NULL;
      guint bit = 0;
      if (text == NULL || !sieve_lua_allow_parse((const char *const[]) {text, NULL}, &bit, NULL))
        continue; /* sieve_lua_settings_read names it */
      g_autofree char *what = g_strdup_printf("lua: allow: [%s]", text);
      if (!refuse(host, word, what, bit, error))
        return FALSE;
    }
  for (guint i = 0; i < sieve_node_size(node); i++)
    if (!check_tree(host, sieve_node_nth(node, i), error))
      return FALSE;
  return TRUE;
}

SieveExperiment *
sieve_lua_experiment_load_granted(SieveLuaHost *host, const char *path, const char *const *overrides,
                                  GPtrArray *plugin_errors, GError **error)
{
  g_return_val_if_fail(host != NULL && path != NULL, NULL);
  /* Parsed without the registry, so that its plugin_path loads nothing
   * before the grants are checked. */
  g_autoptr(SieveExperiment) exp = sieve_experiment_parse(path, overrides, NULL, NULL, error);
  if (exp == NULL)
    return NULL;
  if (exp->plugin_path != NULL && exp->plugin_path[0] != NULL &&
      !refuse(host, sieve_node_lookup(exp->root, "plugin_path"), "plugin_path", SIEVE_LUA_ALLOW_PLUGINS, error))
    return NULL;
  if (!check_tree(host, exp->root, error))
    return NULL;
  if (exp->plugin_path != NULL && exp->plugin_path[0] != NULL)
    sieve__experiment_load_plugins(exp, host->registry, plugin_errors);
  return prepared_and_resolved(g_steal_pointer(&exp), host->registry, error);
}
