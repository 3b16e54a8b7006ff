/* sieve: binding (scripts call C): sieve.result, evaluation results in Lua.
 *
 *   local r = evaluator:evaluate(g)
 *   if r.status == "ok" then print(r.metrics.cifar10_valid_acc, r.cost) end
 *   return sieve.result{metrics = {value = 3.2}}      -- from a Lua evaluator
 *
 * Fields: status ("ok", "failed", "screened", "cached", "pending"),
 * reason (nil unless failed or screened), cost (seconds), metrics (a fresh
 * table {name = value} on each read) and r:metric(name).
 */
#include <string.h>

#include "lua/lua-private.h"

typedef struct {
  SieveResult *result;
} ResultBox;

static gint
compare_names(gconstpointer a, gconstpointer b)
{
  return strcmp(*(const char *const *) a, *(const char *const *) b);
}

void
sieve__lua_push_result(lua_State *L, SieveResult *result)
{
  ResultBox *box = lua_newuserdatauv(L, sizeof(ResultBox), 0);
  box->result = result;
  luaL_setmetatable(L, SIEVE_LUA_RESULT);
}

void
sieve__lua_push_metrics(lua_State *L, const SieveResult *result)
{
  lua_newtable(L);
  for (guint i = 0; i < sieve_result_n_metrics(result); i++) {
    lua_pushnumber(L, sieve_result_metric_value(result, i));
    lua_setfield(L, -2, sieve_result_metric_name(result, i));
  }
}

static SieveResult *
check_result(lua_State *L, int idx)
{
  return ((ResultBox *) luaL_checkudata(L, idx, SIEVE_LUA_RESULT))->result;
}

SieveResult *
sieve__lua_to_result(lua_State *L, int idx, GError **error)
{
  idx = lua_absindex(L, idx);
  if (luaL_testudata(L, idx, SIEVE_LUA_RESULT))
    return sieve_result_copy(check_result(L, idx));
  if (lua_type(L, idx) != LUA_TTABLE) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED,
                "expected a result: sieve.result{...} or a table {status = ..., metrics = {...}}, got a %s",
                luaL_typename(L, idx));
    return NULL;
  }
  g_autoptr(SieveResult) result = sieve_result_new();
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    const char *key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
    if (strcmp(key, "status") == 0) {
      SieveStatus status;
      if (lua_type(L, -1) != LUA_TSTRING || !sieve_status_from_string(lua_tostring(L, -1), &status) ||
          status == SIEVE_STATUS_PENDING) {
        g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED,
                    "result status must be one of: ok, failed, pruned, screened, cached, rejected; got %s",
                    lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, -1));
        lua_pop(L, 2);
        return NULL;
      }
      sieve_result_set_status(result, status);
    } else if (strcmp(key, "reason") == 0 && lua_type(L, -1) == LUA_TSTRING) {
      sieve_result_set_reason(result, lua_tostring(L, -1));
    } else if (strcmp(key, "cost") == 0 && lua_type(L, -1) == LUA_TNUMBER) {
      sieve_result_set_cost(result, lua_tonumber(L, -1));
    } else if (strcmp(key, "metrics") == 0 && lua_type(L, -1) == LUA_TTABLE) {
      /* Sorted by name: Lua's table order would make the stored order vary. */
      g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
      lua_pushnil(L);
      while (lua_next(L, -2) != 0) {
        if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TNUMBER) {
          g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "result metrics must map names to numbers; got %s = %s",
                      lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : luaL_typename(L, -2),
                      luaL_typename(L, -1));
          lua_pop(L, 4);
          return NULL;
        }
        g_ptr_array_add(names, g_strdup(lua_tostring(L, -2)));
        lua_pop(L, 1);
      }
      g_ptr_array_sort(names, compare_names);
      for (guint i = 0; i < names->len; i++) {
        lua_getfield(L, -1, names->pdata[i]);
        sieve_result_set_metric(result, names->pdata[i], lua_tonumber(L, -1));
        lua_pop(L, 1);
      }
    } else {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED,
                  "a result table takes status (string), metrics (table), reason (string) and cost (number); "
                  "got %s = a %s",
                  key[0] ? key : luaL_typename(L, -2), luaL_typename(L, -1));
      lua_pop(L, 2);
      return NULL;
    }
    lua_pop(L, 1);
  }
  if (sieve_result_get_status(result) == SIEVE_STATUS_FAILED && sieve_result_get_reason(result) == NULL)
    sieve_result_set_reason(result, "failed (no reason given)");
  return g_steal_pointer(&result);
}

static int
result_new(lua_State *L)
{
  GError *error = NULL;
  SieveResult *result = sieve__lua_to_result(L, 1, &error);
  if (result == NULL)
    return sieve__lua_error_gerror(L, error);
  sieve__lua_push_result(L, result);
  return 1;
}

static int
result_gc(lua_State *L)
{
  ResultBox *box = luaL_checkudata(L, 1, SIEVE_LUA_RESULT);
  g_clear_pointer(&box->result, sieve_result_free);
  return 0;
}

static int
result_metric(lua_State *L)
{
  SieveResult *r = check_result(L, 1);
  double v;
  if (sieve_result_get_metric(r, luaL_checkstring(L, 2), &v))
    lua_pushnumber(L, v);
  else
    lua_pushnil(L);
  return 1;
}

static int
result_index(lua_State *L)
{
  SieveResult *r = check_result(L, 1);
  const char *key = luaL_checkstring(L, 2);
  if (strcmp(key, "status") == 0)
    lua_pushstring(L, sieve_status_to_string(sieve_result_get_status(r)));
  else if (strcmp(key, "reason") == 0)
    lua_pushstring(L, sieve_result_get_reason(r));
  else if (strcmp(key, "cost") == 0)
    lua_pushnumber(L, sieve_result_get_cost(r));
  else if (strcmp(key, "ok") == 0)
    lua_pushboolean(L, sieve_result_get_status(r) == SIEVE_STATUS_OK);
  else if (strcmp(key, "metrics") == 0)
    sieve__lua_push_metrics(L, r);
  else if (strcmp(key, "metric") == 0)
    lua_pushcfunction(L, result_metric);
  else
    return luaL_error(L, "a result has no field '%s' (status, ok, reason, cost, metrics, metric)", key);
  return 1;
}

static int
result_tostring(lua_State *L)
{
  SieveResult *r = check_result(L, 1);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, "sieve.result ");
  luaL_addstring(&b, sieve_status_to_string(sieve_result_get_status(r)));
  for (guint i = 0; i < sieve_result_n_metrics(r); i++) {
    lua_pushfstring(L, " %s=%f", sieve_result_metric_name(r, i), sieve_result_metric_value(r, i));
    luaL_addvalue(&b);
  }
  if (sieve_result_get_reason(r)) {
    luaL_addstring(&b, " (");
    luaL_addstring(&b, sieve_result_get_reason(r));
    luaL_addstring(&b, ")");
  }
  luaL_pushresult(&b);
  return 1;
}

/* Fields are read by __index, a function: no methods table. */
static const luaL_Reg result_metamethods[] = {
    {"__index", result_index}, {"__gc", result_gc}, {"__tostring", result_tostring}, {NULL, NULL},
};

void
sieve__lua_open_result(lua_State *L, int sieve_idx)
{
  sieve__lua_new_class(L, SIEVE_LUA_RESULT, NULL, result_metamethods);
  lua_pushcfunction(L, result_new);
  lua_setfield(L, sieve_idx, "result");
}
