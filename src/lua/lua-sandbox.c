/* sieve: the Lua sandbox: libraries by allow-list and a require that only
 * looks where the host says.
 *
 * As in Redis (script_lua.c) the safe libraries are opened and the rest is
 * left out, rather than opening everything and deleting the dangerous parts
 * one by one: what a future Lua adds stays out until allowed.  Scripts get
 * base (without dofile and loadfile, which read any file, and with a load()
 * that refuses binary chunks), coroutine, table, string, math, utf8, and of
 * os only clock, time, date and difftime.  `allow` adds io (with dofile and
 * loadfile), the whole of os, debug, and package (loadlib and C modules).
 */
#include "sieve-config.h"

#include <string.h>

#include "lua/lua-private.h"

char *
sieve__lua_project_dir(void)
{
  /* Uninstalled (the binary under the build root), the source tree's lua/;
   * installed, $datadir/sieve/lua: the same rule the plugin loader uses. */
  g_autofree char *exe = g_file_read_link("/proc/self/exe", NULL);
  g_autofree char *root = g_canonicalize_filename(SIEVE_BUILD_ROOT, NULL);
  if (exe != NULL && g_str_has_prefix(exe, root) && exe[strlen(root)] == G_DIR_SEPARATOR)
    return g_build_filename(SIEVE_SOURCE_ROOT, "lua", NULL);
  return g_build_filename(SIEVE_DATADIR, "lua", NULL);
}

/* load() with binary chunks refused unless package is allowed. */
static int
safe_load(lua_State *L)
{
  SieveLuaHost *host = sieve__lua_host(L);
  int top = lua_gettop(L);
  const char *mode = luaL_optstring(L, 3, "bt");
  if (!(host->settings.allow & SIEVE_LUA_ALLOW_PACKAGE) && strchr(mode, 'b') != NULL) {
    if (top < 3)
      lua_settop(L, 3);
    lua_pushstring(L, "t");
    lua_replace(L, 3);
  }
  lua_pushvalue(L, lua_upvalueindex(1)); /* the real load */
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

/* package.searchers entry: Lua files under the host's folders only,
 * NAME.lua or NAME/init.lua with the dots of NAME as folder separators. */
static int
restricted_searcher(lua_State *L)
{
  SieveLuaHost *host = sieve__lua_host(L);
  const char *name = luaL_checkstring(L, 1);
  g_autofree char *rel = g_strdup(name);
  for (char *p = rel; *p; p++)
    if (*p == '.')
      *p = G_DIR_SEPARATOR;
  luaL_Buffer tried;
  luaL_buffinit(L, &tried);
  for (guint i = 0; i < host->require_dirs->len; i++) {
    const char *dir = host->require_dirs->pdata[i];
    for (int form = 0; form < 2; form++) {
      g_autofree char *file = form == 0 ? g_strconcat(rel, ".lua", NULL) : g_build_filename(rel, "init.lua", NULL);
      g_autofree char *path = g_build_filename(dir, file, NULL);
      if (g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
        luaL_pushresult(&tried);
        lua_pop(L, 1);
        int status = luaL_loadfilex(L, path, host->settings.allow & SIEVE_LUA_ALLOW_PACKAGE ? "bt" : "t");
        if (status != LUA_OK)
          return luaL_error(L, "error loading module '%s' from file '%s':\n\t%s", name, path, lua_tostring(L, -1));
        lua_pushstring(L, path);
        return 2;
      }
      luaL_addstring(&tried, "\n\tno file '");
      luaL_addstring(&tried, path);
      luaL_addstring(&tried, "'");
    }
  }
  luaL_addstring(&tried, "\n\t(sieve's sandbox searches only the script's folder, lua.path and the project's lua/)");
  luaL_pushresult(&tried);
  return 1;
}

static void
open_lib(lua_State *L, const char *name, lua_CFunction open)
{
  luaL_requiref(L, name, open, 1);
  lua_pop(L, 1);
}

static void
remove_field(lua_State *L, const char *table, const char *field)
{
  lua_getglobal(L, table);
  lua_pushnil(L);
  lua_setfield(L, -2, field);
  lua_pop(L, 1);
}

void
sieve__lua_sandbox_open(SieveLuaHost *host)
{
  lua_State *L = host->L;
  guint allow = host->settings.allow;
  open_lib(L, LUA_GNAME, luaopen_base);
  open_lib(L, LUA_LOADLIBNAME, luaopen_package);
  open_lib(L, LUA_COLIBNAME, luaopen_coroutine);
  open_lib(L, LUA_TABLIBNAME, luaopen_table);
  open_lib(L, LUA_STRLIBNAME, luaopen_string);
  open_lib(L, LUA_MATHLIBNAME, luaopen_math);
  open_lib(L, LUA_UTF8LIBNAME, luaopen_utf8);
  open_lib(L, LUA_OSLIBNAME, luaopen_os);
  if (allow & SIEVE_LUA_ALLOW_IO)
    open_lib(L, LUA_IOLIBNAME, luaopen_io);
  if (allow & SIEVE_LUA_ALLOW_DEBUG)
    open_lib(L, LUA_DBLIBNAME, luaopen_debug);

  if (!(allow & SIEVE_LUA_ALLOW_IO)) {
    lua_pushnil(L);
    lua_setglobal(L, "dofile");
    lua_pushnil(L);
    lua_setglobal(L, "loadfile");
  }
  lua_getglobal(L, "load");
  lua_pushcclosure(L, safe_load, 1);
  lua_setglobal(L, "load");

  if (!(allow & SIEVE_LUA_ALLOW_OS)) {
    /* Keep only what reads the clock and formats dates. */
    static const char *const keep[] = {"clock", "time", "date", "difftime", NULL};
    lua_getglobal(L, LUA_OSLIBNAME);
    lua_newtable(L);
    for (guint i = 0; keep[i]; i++) {
      lua_getfield(L, -2, keep[i]);
      lua_setfield(L, -2, keep[i]);
    }
    lua_setglobal(L, LUA_OSLIBNAME);
    lua_pop(L, 1);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_getglobal(L, LUA_OSLIBNAME);
    lua_setfield(L, -2, LUA_OSLIBNAME);
    lua_pop(L, 1);
  }

  /* require: the preload searcher, then ours; C modules only when allowed. */
  lua_getglobal(L, LUA_LOADLIBNAME);
  int package = lua_gettop(L);
  lua_getfield(L, package, "searchers");
  int old = lua_gettop(L);
  lua_newtable(L);
  lua_rawgeti(L, old, 1); /* preload */
  lua_rawseti(L, -2, 1);
  lua_pushcfunction(L, restricted_searcher);
  lua_rawseti(L, -2, 2);
  if (allow & SIEVE_LUA_ALLOW_PACKAGE) {
    lua_rawgeti(L, old, 3); /* C modules on package.cpath */
    lua_rawseti(L, -2, 3);
    lua_rawgeti(L, old, 4);
    lua_rawseti(L, -2, 4);
  }
  lua_setfield(L, package, "searchers");
  lua_pop(L, 1); /* old searchers */
  /* package.path says where require looks (informative: our searcher reads
   * the host's list, so changing it does not widen the sandbox). */
  GString *path = g_string_new(NULL);
  for (guint i = 0; i < host->require_dirs->len; i++)
    g_string_append_printf(path, "%s%s/?.lua;%s/?/init.lua", i ? ";" : "", (char *) host->require_dirs->pdata[i],
                           (char *) host->require_dirs->pdata[i]);
  lua_pushstring(L, path->str);
  lua_setfield(L, package, "path");
  g_string_free(path, TRUE);
  if (!(allow & SIEVE_LUA_ALLOW_PACKAGE)) {
    lua_pushstring(L, "");
    lua_setfield(L, package, "cpath");
  }
  lua_pop(L, 1);
  if (!(allow & SIEVE_LUA_ALLOW_PACKAGE))
    remove_field(L, LUA_LOADLIBNAME, "loadlib");
}
