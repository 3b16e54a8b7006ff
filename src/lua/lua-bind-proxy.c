/* sieve: binding (scripts call C): sieve.proxies, zero-cost proxies from Lua.
 *
 *   local net = space:build(g)
 *   local scores, ms = sieve.proxies(net, {"synflow", "naswot"}, {batch = 32, seed = 1, threads = 1, device = "cpu"})
 *   print(scores.synflow, ms.synflow)
 *   for _, p in ipairs(sieve.proxy_list()) do print(p.name, p.help) end
 *   local ranks = sieve.rank_aggregate({{s11, s12}, {s21, s22}}, {1, 2})
 *
 * A binding of sieve/proxy.h: the proxies named together share their
 * passes, every score is larger-is-better, and the batch is seeded N(0,1)
 * inputs with seeded labels (the options a script can pass; a data batch
 * from a dataset belongs to the screen stage of an experiment).
 */
#include <math.h>
#include <string.h>

#include <sieve/proxy.h>

#include "lua/lua-private.h"

/* The names at idx (a string or a list of strings), pushed as a userdata
 * array of const char* kept alive by the list; returns their count. */
static guint
check_names(lua_State *L, int idx, const char ***out)
{
  if (lua_type(L, idx) == LUA_TSTRING) {
    const char **names = lua_newuserdatauv(L, 2 * sizeof(char *), 0);
    names[0] = lua_tostring(L, idx);
    names[1] = NULL;
    *out = names;
    return 1;
  }
  luaL_argexpected(L, lua_istable(L, idx), idx, "a proxy name or a list of them");
  lua_Integer n = (lua_Integer) lua_rawlen(L, idx);
  if (n < 1)
    luaL_argerror(L, idx, "no proxy named");
  const char **names = lua_newuserdatauv(L, (size_t) (n + 1) * sizeof(char *), 0);
  for (lua_Integer i = 1; i <= n; i++) {
    if (lua_rawgeti(L, idx, i) != LUA_TSTRING)
      luaL_error(L, "proxy %I of the list is a %s, not a name", i, luaL_typename(L, -1));
    names[i - 1] = lua_tostring(L, -1); /* kept alive by the list */
    lua_pop(L, 1);
  }
  names[n] = NULL;
  *out = names;
  return (guint) n;
}

static const char *const option_keys[] = {"batch", "seed", "threads", "device", NULL};

/* An integer field of the options table at idx (nil: dflt). */
static lua_Integer
opt_integer(lua_State *L, int idx, const char *key, lua_Integer dflt, lua_Integer min, lua_Integer max)
{
  if (lua_isnoneornil(L, idx))
    return dflt;
  int type = lua_getfield(L, idx, key);
  if (type == LUA_TNIL) {
    lua_pop(L, 1);
    return dflt;
  }
  int isint = 0;
  lua_Integer v = lua_tointegerx(L, -1, &isint);
  if (!isint || type != LUA_TNUMBER || v < min || v > max)
    luaL_error(L, "proxies: option '%s' expects an integer in [%I, %I], got %s", key, min, max,
               type == LUA_TNUMBER ? lua_tostring(L, -1) : luaL_typename(L, -1));
  lua_pop(L, 1);
  return v;
}

/* The device field of the options table at idx: "cpu", "cuda" or "auto"
 * (nil: NULL, the runtime's cpu).  The string stays alive on the caller's
 * table. */
static const char *
opt_device(lua_State *L, int idx)
{
  static const char *const devices[] = {"cpu", "cuda", "auto", NULL};
  if (lua_isnoneornil(L, idx) || lua_getfield(L, idx, "device") == LUA_TNIL) {
    if (!lua_isnoneornil(L, idx))
      lua_pop(L, 1);
    return NULL;
  }
  const char *device = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
  /* The table's own string: the value read may not outlive the pop (an
   * __index metamethod could have made it). */
  for (guint i = 0; device && devices[i]; i++)
    if (g_str_equal(devices[i], device)) {
      lua_pop(L, 1);
      return devices[i];
    }
  return luaL_error(L, "proxies: option 'device' expects cpu, cuda or auto, got %s",
                    device ? device : luaL_typename(L, -1)), NULL;
}

/* sieve.proxies(graph, names, {batch = 64, seed = 0, threads = 0, device = "cpu"}) -> scores, ms */
static int
proxies(lua_State *L)
{
  const SieveGraph *graph = sieve__lua_check_graph(L, 1, TRUE);
  lua_settop(L, 3); /* options at 3 (maybe nil), scratch above */
  const char **names;
  guint n = check_names(L, 2, &names); /* the array stays on the stack */
  if (!lua_isnoneornil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    sieve__lua_check_keys(L, 3, "proxies", option_keys);
  }
  SieveProxyOptions options = {0};
  options.batch = (guint) opt_integer(L, 3, "batch", 0, 0, 1 << 20);
  options.threads = (guint) opt_integer(L, 3, "threads", 0, 0, 4096);
  options.seed = (guint64) opt_integer(L, 3, "seed", 0, 0, G_MAXINT64);
  options.device = opt_device(L, 3);
  GError *error = NULL;
  if (!sieve_proxy_check_names(names, n, &error))
    return sieve__lua_error_gerror(L, error);
  /* Results in GC-managed memory: nothing to free if a push raises. */
  double *scores = lua_newuserdatauv(L, 2 * n * sizeof(double), 0);
  double *ms = scores + n;
  if (!sieve_proxy_compute(graph, names, n, &options, scores, ms, &error))
    return sieve__lua_error_gerror(L, error);
  lua_createtable(L, 0, (int) n);
  lua_createtable(L, 0, (int) n);
  for (guint i = 0; i < n; i++) {
    lua_pushnumber(L, scores[i]);
    lua_setfield(L, -3, names[i]);
    lua_pushnumber(L, ms[i]);
    lua_setfield(L, -2, names[i]);
  }
  return 2;
}

/* sieve.proxy_list() -> {{name, help, needs_data}, ...} */
static int
proxy_list(lua_State *L)
{
  guint n = sieve_proxy_count();
  lua_createtable(L, (int) n, 0);
  for (guint i = 0; i < n; i++) {
    const SieveProxyInfo *info = sieve_proxy_info(i);
    lua_createtable(L, 0, 3);
    lua_pushstring(L, info->name);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, info->help);
    lua_setfield(L, -2, "help");
    lua_pushboolean(L, info->needs_data);
    lua_setfield(L, -2, "needs_data");
    lua_rawseti(L, -2, (lua_Integer) i + 1);
  }
  return 1;
}

/* sieve.rank_aggregate(rows[, weights]) -> list: rows are candidates, each a
 * list of its proxies' scores (nil or NaN ranks lowest); out[c] is the
 * weighted mean rank of candidate c (0 = worst), larger is better. */
static int
rank_aggregate(lua_State *L)
{
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 2); /* weights at 2 (maybe nil), scratch above */
  lua_Integer rows = (lua_Integer) lua_rawlen(L, 1);
  if (rows == 0) {
    lua_newtable(L);
    return 1;
  }
  lua_rawgeti(L, 1, 1);
  if (!lua_istable(L, -1))
    return luaL_error(L, "rank_aggregate: row 1 is a %s, not a list of scores", luaL_typename(L, -1));
  lua_Integer cols = (lua_Integer) lua_rawlen(L, -1);
  lua_pop(L, 1);
  if (cols == 0)
    return luaL_error(L, "rank_aggregate: row 1 holds no scores");
  double *scores = lua_newuserdatauv(L, (size_t) (rows * cols + rows + cols) * sizeof(double), 0);
  double *out = scores + rows * cols;
  double *weights = out + rows;
  for (lua_Integer r = 1; r <= rows; r++) {
    if (lua_rawgeti(L, 1, r) != LUA_TTABLE)
      return luaL_error(L, "rank_aggregate: row %I is a %s, not a list of scores", r, luaL_typename(L, -1));
    if ((lua_Integer) lua_rawlen(L, -1) > cols)
      return luaL_error(L, "rank_aggregate: row %I has %I scores, row 1 has %I", r, (lua_Integer) lua_rawlen(L, -1),
                        cols);
    for (lua_Integer c = 1; c <= cols; c++) {
      int type = lua_rawgeti(L, -1, c);
      if (type != LUA_TNUMBER && type != LUA_TNIL)
        return luaL_error(L, "rank_aggregate: score %I of row %I is a %s", c, r, luaL_typename(L, -1));
      scores[(r - 1) * cols + (c - 1)] = type == LUA_TNIL ? NAN : lua_tonumber(L, -1);
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  gboolean weighted = !lua_isnoneornil(L, 2);
  if (weighted) {
    luaL_checktype(L, 2, LUA_TTABLE);
    if ((lua_Integer) lua_rawlen(L, 2) != cols)
      return luaL_error(L, "rank_aggregate: %I weights for %I scores per row", (lua_Integer) lua_rawlen(L, 2), cols);
    /* The proxy library's precondition (a weighted mean of ranks): each
     * weight finite and >= 0, and some weight > 0. */
    double sum = 0;
    for (lua_Integer c = 1; c <= cols; c++) {
      if (lua_rawgeti(L, 2, c) != LUA_TNUMBER)
        return luaL_error(L, "rank_aggregate: weight %I is a %s, not a number", c, luaL_typename(L, -1));
      double w = lua_tonumber(L, -1);
      if (!isfinite(w) || w < 0)
        return luaL_error(L, "rank_aggregate: weight %I is %f; weights are finite numbers >= 0", c, w);
      weights[c - 1] = w;
      sum += w;
      lua_pop(L, 1);
    }
    if (!(sum > 0))
      return luaL_error(L, "rank_aggregate: the weights sum to 0; at least one must be > 0");
  }
  sieve_proxy_rank_aggregate(scores, (guint) rows, (guint) cols, weighted ? weights : NULL, out);
  lua_createtable(L, (int) rows, 0);
  for (lua_Integer r = 0; r < rows; r++) {
    lua_pushnumber(L, out[r]);
    lua_rawseti(L, -2, r + 1);
  }
  return 1;
}

static const luaL_Reg proxy_funcs[] = {
    {"proxies", proxies}, {"proxy_list", proxy_list}, {"rank_aggregate", rank_aggregate}, {NULL, NULL},
};

void
sieve__lua_open_proxy(lua_State *L, int sieve_idx)
{
  sieve__lua_set_funcs(L, sieve_idx, proxy_funcs);
}
