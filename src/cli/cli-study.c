/* What the commands that rebuild a stored study share. */
#include "cli/cli-private.h"
#include "lua/lua-private.h"
#include "report/report-private.h"

char *
sieve_cli_study_dir(SieveStore *store)
{
  /* Relative paths (a space file, a command's script, data) are the config
   * file's: its folder as the run stored it (absolute), not this process's
   * working directory.  A store without it (or a folder this machine
   * lacks) keeps the config's path as typed. */
  char *dir = sieve_report_config_dir(store);
  if (dir != NULL)
    return dir;
  g_autofree char *config_path = sieve_store_get_meta(store, "config_path", NULL);
  return config_path ? g_path_get_dirname(config_path) : g_get_current_dir();
}

void
sieve_cli_study_lua_clear(SieveCliStudyLua *lua)
{
  g_clear_pointer(&lua->hosts, g_ptr_array_unref);
  g_clear_pointer(&lua->failure, g_free);
  lua->loaded = FALSE;
}

/* Runs the stored config's lua.load scripts, once the store holds a
 * config: the components they register (a space: {plugin: lua_nb201})
 * are then in registry, as `sieve run` had them. */
static void
load_study_lua(SieveStore *store, SieveRegistry *registry, SieveCliStudyLua *lua)
{
  if (lua->loaded)
    return;
  g_autofree char *config = sieve_store_get_meta(store, "config", NULL);
  if (config == NULL)
    return; /* a study not started yet: tried again later */
  lua->loaded = TRUE;
  lua->hosts = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_lua_host_free);
  g_autoptr(GError) error = NULL;
  g_autoptr(SieveNode) root = sieve_node_parse_string(config, -1, "stored config", &error);
  const SieveNode *section = root && sieve_node_kind(root) == SIEVE_NODE_MAP ? sieve_node_lookup(root, "lua") : NULL;
  if (section == NULL || sieve_node_kind(section) != SIEVE_NODE_MAP || sieve_node_lookup(section, "load") == NULL)
    return;
  /* The scripts as `sieve run` ran them: from the config's folder, in the
   * sandbox the section declares. */
  g_autofree char *dir = sieve_report_study_dir(store);
  if (!sieve_lua_load_scripts(section, dir, registry, lua->hosts, &error))
    lua->failure = g_strdup(error->message);
}

SieveReport *
sieve_cli_report_load(SieveStore *store, SieveRegistry *registry, SieveCliStudyLua *lua, SieveSpace **space,
                      GError **error)
{
  /* Only report and serve come here, and they are viewers: a store may
   * come from anyone, so its scripts (lua.load, a Lua space) run in the
   * bare sandbox whatever grants its config gave them; one that asks for
   * a grant fails to load and the page says so; and within a viewer's
   * limits (10 s a call, 1 GiB), whatever its config says (seconds: 0
   * would let a script hang the viewer).  The caps hold for the rest of
   * the process. */
  sieve_lua_limit_process(0, "sieve report and sieve serve run a store's Lua with no grants, whatever its config "
                             "asks for");
  sieve_lua_limit_process_calls(SIEVE_LUA_VIEWER_SECONDS, SIEVE_LUA_DEFAULT_MEMORY);
  load_study_lua(store, registry, lua);
  SieveReport *report = sieve_report_load(store, registry, space, error);
  if (report != NULL && *space == NULL && lua->failure != NULL && report->space_note != NULL) {
    g_free(report->space_note);
    report->space_note = g_strdup_printf("The study's space could not be rebuilt: its lua.load scripts did not load "
                                         "(%s). Decision importance and network drawings are left out.",
                                         lua->failure);
  }
  return report;
}
