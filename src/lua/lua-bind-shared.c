/* sieve: what the bindings (lua-bind-*.c) share: how a class (a
 * metatable) and the functions of the `sieve` table are made, a component
 * named by a script with the table of its options, and the objectives of a
 * study.
 */
#include <math.h>
#include <string.h>

#include "lua/lua-private.h"

/* ---- classes and functions ------------------------------------------------- */

/* As liolib's createmeta: metamethods in the metatable, methods in its
 * __index. */
void
sieve__lua_new_class(lua_State *L, const char *name, const luaL_Reg *methods, const luaL_Reg *metamethods)
{
  luaL_newmetatable(L, name);
  /* getmetatable returns the class name, not the table: a script calling
   * __gc or replacing a metamethod itself would free what a running call
   * holds. */
  lua_pushstring(L, name);
  lua_setfield(L, -2, "__metatable");
  if (metamethods != NULL)
    luaL_setfuncs(L, metamethods, 0);
  if (methods != NULL) {
    lua_newtable(L);
    luaL_setfuncs(L, methods, 0);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
}

void
sieve__lua_set_funcs(lua_State *L, int sieve_idx, const luaL_Reg *funcs)
{
  lua_pushvalue(L, sieve_idx);
  luaL_setfuncs(L, funcs, 0);
  lua_pop(L, 1);
}

/* ---- option tables ------------------------------------------------------------ */

void
sieve__lua_check_keys(lua_State *L, int idx, const char *what, const char *const *keys)
{
  idx = lua_absindex(L, idx);
  if (!lua_istable(L, idx))
    return;
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    lua_pop(L, 1);
    if (lua_type(L, -1) == LUA_TSTRING && g_strv_contains(keys, lua_tostring(L, -1)))
      continue;
    /* A misspelt key would be dropped silently (a store never made, a seed
     * not set): refused, with the closest one. */
    const char *key = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    const char *guess = key ? sieve_suggest(key, keys) : NULL;
    char *all = g_strjoinv(", ", (char **) keys);
    luaL_where(L, 1);
    if (key != NULL)
      lua_pushfstring(L, "%s: unknown option '%s'%s%s%s (it takes %s)", what, key, guess ? " (did you mean '" : "",
                      guess ? guess : "", guess ? "'?)" : "", all);
    else
      lua_pushfstring(L, "%s: option names are strings, got a %s key (it takes %s)", what, luaL_typename(L, -2), all);
    g_free(all); /* before raising: it skips C cleanups */
    lua_concat(L, 2);
    lua_error(L);
  }
}

/* ---- components and their options ------------------------------------------ */

/* Checks that the value at idx is a table of options and turns it into
 * validated options for spec (errors at the caller's file:line).
 * (transfer full) */
static SieveOptions *
check_options(lua_State *L, int idx, const SieveOptionSpec *spec, const char *context, GError **error)
{
  if (lua_isnoneornil(L, idx))
    return sieve_options_new(spec, NULL, NULL, NULL, context, error);
  if (!lua_istable(L, idx)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "%s: options must be a table, got a %s", context,
                luaL_typename(L, idx));
    return NULL;
  }
  guint line;
  g_autofree char *origin = sieve__lua_where(L, 1, &line);
  g_autoptr(SieveNode) node = sieve__lua_to_node(L, idx, origin, line, error);
  if (node == NULL)
    return NULL;
  if (sieve_node_kind(node) != SIEVE_NODE_MAP) {
    sieve_node_set_error(error, node, "%s: options must be a table of name = value", context);
    return NULL;
  }
  /* Relative paths in options resolve against the script's folder. */
  g_autofree char *rel = g_path_get_dirname(origin);
  g_autofree char *dir = g_canonicalize_filename(rel, NULL);
  return sieve_options_new(spec, node, NULL, dir, context, error);
}

/* A fidelity written in a script, {name = "epochs", min = 1, max = 81,
 * integer = true}, at idx, validated as in a config (sieve_fidelity_read),
 * errors at the caller's line; out->name is the caller's to g_free. */
gboolean
sieve__lua_to_fidelity(lua_State *L, int idx, SieveFidelity *out, GError **error)
{
  guint line;
  g_autofree char *origin = sieve__lua_where(L, 1, &line);
  g_autoptr(SieveNode) node = sieve__lua_to_node(L, idx, origin, line, error);
  return node != NULL && sieve_fidelity_read(node, out, error);
}

/* The component kind and name, or a Lua error naming the closest one. */
static const SieveComponent *
check_component(lua_State *L, SieveComponentKind kind, const char *name)
{
  GError *error = NULL;
  const SieveComponent *c = sieve_registry_require(sieve__lua_host(L)->registry, kind, name, NULL, &error);
  if (c == NULL)
    sieve__lua_error_gerror(L, error);
  return c;
}

SieveOptions *
sieve__lua_check_component_options(lua_State *L, SieveComponentKind kind, const char *name, int idx,
                                   const SieveComponent **component)
{
  const SieveComponent *c = check_component(L, kind, name);
  GError *error = NULL;
  /* Running programs is a grant of its own: without it the sandbox would
   * be one evaluator away from a shell. */
  if (kind == SIEVE_KIND_EVALUATOR && strcmp(sieve_component_get_name(c), "command") == 0 &&
      !sieve__lua_host_check_grant(sieve__lua_host(L), SIEVE_LUA_ALLOW_COMMAND, "the 'command' evaluator", &error))
    sieve__lua_error_gerror(L, error);
  char *context = g_strdup_printf("%s '%s'", sieve_component_kind_to_string(kind), name);
  SieveOptions *options = check_options(L, idx, sieve_component_get_info(c)->options, context, &error);
  g_free(context);
  if (options == NULL)
    sieve__lua_error_gerror(L, error);
  *component = c;
  return options;
}

/* ---- objectives ------------------------------------------------------------ */

void
sieve__lua_objectives_clear(SieveLuaObjectives *objectives)
{
  g_strfreev(objectives->metrics);
  g_free(objectives->maximize);
  memset(objectives, 0, sizeof *objectives);
}

/* Appends one objective; FALSE with *why set (static text) when it is not one. */
static gboolean
read_objective(lua_State *L, int idx, GPtrArray *metrics, GArray *maximize, const char **why)
{
  idx = lua_absindex(L, idx);
  gboolean max = TRUE;
  const char *metric = NULL;
  if (lua_type(L, idx) == LUA_TSTRING)
    metric = lua_tostring(L, idx);
  else if (lua_type(L, idx) == LUA_TTABLE) {
    lua_getfield(L, idx, "metric");
    metric = lua_tostring(L, -1);
    lua_pop(L, 1); /* the string stays alive in the table */
    lua_getfield(L, idx, "direction");
    const char *direction = lua_tostring(L, -1);
    gboolean valid = direction == NULL || strcmp(direction, "minimize") == 0 || strcmp(direction, "maximize") == 0;
    max = direction == NULL || strcmp(direction, "maximize") == 0;
    lua_pop(L, 1);
    if (!valid) {
      *why = "objective direction must be 'maximize' or 'minimize'";
      return FALSE;
    }
  }
  if (metric == NULL) {
    *why = "an objective is a metric name or {metric = NAME, direction = 'maximize'|'minimize'}";
    return FALSE;
  }
  g_ptr_array_add(metrics, g_strdup(metric));
  g_array_append_val(maximize, max);
  return TRUE;
}

void
sieve__lua_check_objectives(lua_State *L, int idx, SieveLuaObjectives *out)
{
  memset(out, 0, sizeof *out);
  /* The keys of each objective table first, before anything is allocated
   * (a raise skips C cleanups). */
  static const char *const keys[] = {"metric", "direction", NULL};
  if (lua_istable(L, idx)) {
    lua_getfield(L, idx, "objective");
    lua_Integer n = lua_istable(L, -1) ? (lua_Integer) lua_rawlen(L, -1) : 0;
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, -1, i);
      sieve__lua_check_keys(L, -1, "objective", keys);
      lua_pop(L, 1);
    }
    if (n == 0)
      sieve__lua_check_keys(L, -1, "objective", keys);
    lua_pop(L, 1);
  }
  GPtrArray *metrics = g_ptr_array_new_with_free_func(g_free);
  GArray *maximize = g_array_new(FALSE, FALSE, sizeof(gboolean));
  const char *why = NULL;
  gboolean ok = TRUE;
  if (lua_istable(L, idx)) {
    lua_getfield(L, idx, "objective");
    int obj = lua_gettop(L);
    if (lua_istable(L, obj) && lua_rawlen(L, obj) > 0) {
      for (lua_Integer i = 1; ok && i <= (lua_Integer) lua_rawlen(L, obj); i++) {
        lua_rawgeti(L, obj, i);
        ok = read_objective(L, -1, metrics, maximize, &why);
        lua_pop(L, 1);
      }
    } else if (!lua_isnil(L, obj))
      ok = read_objective(L, obj, metrics, maximize, &why);
    lua_pop(L, 1);
  }
  if (!ok) {
    /* Raising skips C cleanups: free first. */
    g_ptr_array_unref(metrics);
    g_array_unref(maximize);
    luaL_error(L, "%s", why);
  }
  if (metrics->len == 0) {
    gboolean max = TRUE;
    g_ptr_array_add(metrics, g_strdup("value"));
    g_array_append_val(maximize, max);
  }
  out->n = metrics->len;
  g_ptr_array_add(metrics, NULL);
  out->metrics = (char **) g_ptr_array_free(metrics, FALSE);
  out->maximize = (gboolean *) (void *) g_array_free(maximize, FALSE);
}

void
sieve__lua_orient(const SieveLuaObjectives *objectives, const SieveResult *result, double *out)
{
  gboolean ok = sieve_result_get_status(result) == SIEVE_STATUS_OK;
  for (guint i = 0; i < objectives->n; i++) {
    double v;
    if (!ok || !sieve_result_get_metric(result, objectives->metrics[i], &v))
      out[i] = NAN;
    else
      out[i] = objectives->maximize[i] ? v : -v;
  }
}
