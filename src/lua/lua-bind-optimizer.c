/* sieve: binding (scripts call C): sieve.optimizer, optimizer components
 * (C plugins or registered Lua ones) driven from Lua, ask and tell by hand.
 * Optimizers written in Lua are lua-impl-optimizer.c.
 *
 *   local opt = sieve.optimizer("random", space, {unique = true},
 *                               {seed = 3, objective = {metric = "value", direction = "minimize"}})
 *   local gs = opt:ask(4)                   -- genotypes (and their fidelities as 2nd result)
 *   opt:tell(gs[1], evaluator:evaluate(gs[1]))
 *
 * The optimizer userdata keeps its space alive (user value 1).
 */
#include <math.h>
#include <string.h>

#include "lua/lua-private.h"

typedef struct {
  SieveOptimizer *optimizer;
  SieveLuaObjectives objectives;
  SieveOptions *options; /* as long as the optimizer: the engine keeps a component's options for its life,
                          * and plugins may borrow from them */
  guint busy;            /* asks and tells running: closing it then is an error, not a use after free */
  SieveFidelity fidelity; /* the study's (name owned), as long as the optimizer; name NULL: none */
} OptimizerBox;

static OptimizerBox *
check_optimizer(lua_State *L, int idx)
{
  OptimizerBox *box = luaL_checkudata(L, idx, SIEVE_LUA_OPTIMIZER);
  if (box->optimizer == NULL)
    luaL_error(L, "this optimizer is closed");
  if (box->busy > 0) /* a Lua optimizer's method calling its own userdata: it would recurse until the C stack ends */
    luaL_error(L, "this optimizer is running (its ask, tell, save or load called back into it)");
  lua_getiuservalue(L, idx, 1);
  sieve__lua_check_space(L, -1); /* its space must still be alive */
  lua_pop(L, 1);
  return box;
}

/* sieve.optimizer(name, space, {options}, {seed = N, objective = ...}) */
static int
optimizer_new(lua_State *L)
{
  const char *name = luaL_checkstring(L, 1);
  SieveSpace *space = sieve__lua_check_space(L, 2);
  static const char *const keys[] = {"seed", "objective", "fidelity", NULL};
  sieve__lua_check_keys(L, 4, "sieve.optimizer's study", keys);
  const SieveComponent *c;
  SieveOptions *options = sieve__lua_check_component_options(L, SIEVE_KIND_OPTIMIZER, name, 3, &c);
  lua_Integer seed = 0;
  if (lua_istable(L, 4)) {
    lua_getfield(L, 4, "seed");
    seed = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0;
    lua_pop(L, 1);
  }
  /* The box owns the options from here (its __gc frees them on a raise). */
  OptimizerBox *box = lua_newuserdatauv(L, sizeof(OptimizerBox), 1);
  memset(box, 0, sizeof *box);
  box->options = options;
  luaL_setmetatable(L, SIEVE_LUA_OPTIMIZER);
  lua_pushvalue(L, 2);
  lua_setiuservalue(L, -2, 1);
  sieve__lua_check_objectives(L, 4, &box->objectives);
  /* The fidelity of the evaluations it will be told of, for multi-fidelity
   * optimizers (a study's evaluator offers its own), kept with it. */
  GError *error = NULL;
  if (lua_istable(L, 4)) {
    lua_getfield(L, 4, "fidelity");
    if (!lua_isnil(L, -1) && !sieve__lua_to_fidelity(L, lua_gettop(L), &box->fidelity, &error))
      return sieve__lua_error_gerror(L, error);
    lua_pop(L, 1);
  }
  SieveStudyInfo study = {
      .seed = (guint64) seed,
      .n_objectives = box->objectives.n,
      .objective_names = (const char *const *) box->objectives.metrics,
      .fidelity = box->fidelity.name != NULL ? &box->fidelity : NULL,
  };
  box->optimizer = sieve_optimizer_new(c, space, options, &study, &error);
  if (box->optimizer == NULL)
    return sieve__lua_error_gerror(L, error);
  return 1;
}

/* Marks the optimizer at 1 and its space busy (delta +1) or done (-1)
 * around a call into it that may run its script. */
static void
optimizer_busy(lua_State *L, OptimizerBox *box, int delta)
{
  sieve__lua_space_busy(L, 1, delta);
  box->busy += delta;
}

static int
optimizer_ask(lua_State *L)
{
  OptimizerBox *box = check_optimizer(L, 1);
  lua_Integer n = luaL_optinteger(L, 2, 1);
  luaL_argcheck(L, n >= 0 && n <= G_MAXINT32, 2, "expected a count >= 0");
  g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_candidate_free);
  GError *error = NULL;
  optimizer_busy(L, box, +1);
  gboolean asked = sieve_optimizer_ask(box->optimizer, (guint) n, out, &error);
  optimizer_busy(L, box, -1);
  if (!asked) {
    g_clear_pointer(&out, g_ptr_array_unref); /* before raising: it skips C cleanups */
    return sieve__lua_error_gerror(L, error);
  }
  lua_getiuservalue(L, 1, 1);
  int space_idx = lua_gettop(L);
  lua_createtable(L, (int) out->len, 0);
  lua_createtable(L, (int) out->len, 0);
  for (guint i = 0; i < out->len; i++) {
    const SieveCandidate *c = out->pdata[i];
    sieve__lua_push_genotype(L, space_idx, sieve_genotype_copy(sieve_candidate_get_genotype(c)));
    lua_rawseti(L, -3, (lua_Integer) i + 1);
    lua_pushnumber(L, sieve_candidate_get_fidelity(c));
    lua_rawseti(L, -2, (lua_Integer) i + 1);
  }
  return 2;
}

/* opt:tell(genotype, result[, fidelity]) */
static int
optimizer_tell(lua_State *L)
{
  OptimizerBox *box = check_optimizer(L, 1);
  double fidelity = luaL_optnumber(L, 4, NAN);
  lua_settop(L, 4);
  lua_getiuservalue(L, 1, 1);
  int space_idx = lua_gettop(L);
  GError *error = NULL;
  SieveResult *result = sieve__lua_to_result(L, 3, &error);
  if (result == NULL)
    return sieve__lua_error_gerror(L, error);
  SieveGenotype *g = sieve__lua_to_genotype(L, 2, space_idx, &error);
  if (g == NULL) {
    sieve_result_free(result);
    return sieve__lua_error_gerror(L, error);
  }
  SieveCandidate *candidate = sieve_candidate_new(g, fidelity);
  double told[box->objectives.n];
  sieve__lua_orient(&box->objectives, result, told);
  optimizer_busy(L, box, +1);
  gboolean ok = sieve_optimizer_tell(box->optimizer, candidate, result, told, &error);
  optimizer_busy(L, box, -1);
  sieve_candidate_free(candidate); /* before any raise: it skips C cleanups */
  sieve_result_free(result);
  if (!ok)
    return sieve__lua_error_gerror(L, error);
  return 0;
}

/* opt:save() -> text of the GVariant state; opt:load(text) */
static int
optimizer_save(lua_State *L)
{
  OptimizerBox *box = check_optimizer(L, 1);
  GError *error = NULL;
  optimizer_busy(L, box, +1);
  GVariant *state = sieve_optimizer_save(box->optimizer, &error);
  optimizer_busy(L, box, -1);
  if (state == NULL)
    return sieve__lua_error_gerror(L, error);
  char *text = g_variant_print(state, TRUE);
  g_variant_unref(state);
  lua_pushstring(L, text);
  g_free(text);
  return 1;
}

static int
optimizer_load(lua_State *L)
{
  OptimizerBox *box = check_optimizer(L, 1);
  const char *text = luaL_checkstring(L, 2);
  GError *error = NULL;
  GVariant *state = sieve__lua_parse_state(text, &error);
  if (state == NULL)
    return sieve__lua_error_gerror(L, error);
  optimizer_busy(L, box, +1);
  gboolean ok = sieve_optimizer_load(box->optimizer, state, &error);
  optimizer_busy(L, box, -1);
  g_variant_unref(state);
  if (!ok)
    return sieve__lua_error_gerror(L, error);
  return 0;
}

static void
optimizer_release(OptimizerBox *box)
{
  g_clear_pointer(&box->optimizer, sieve_optimizer_free);
  g_clear_pointer(&box->options, sieve_options_free);
  g_clear_pointer((char **) &box->fidelity.name, g_free);
  sieve__lua_objectives_clear(&box->objectives);
}

/* A real collection cannot come while it runs (the call holds it); a __gc
 * reached some other way then leaves it alone. */
static int
optimizer_gc(lua_State *L)
{
  OptimizerBox *box = luaL_checkudata(L, 1, SIEVE_LUA_OPTIMIZER);
  if (box->busy == 0)
    optimizer_release(box);
  return 0;
}

static int
optimizer_close(lua_State *L)
{
  OptimizerBox *box = luaL_checkudata(L, 1, SIEVE_LUA_OPTIMIZER);
  if (box->busy > 0)
    return luaL_error(L, "this optimizer is running (ask or tell): close it after that call returns");
  optimizer_release(box);
  return 0;
}

static int
optimizer_tostring(lua_State *L)
{
  OptimizerBox *box = luaL_checkudata(L, 1, SIEVE_LUA_OPTIMIZER);
  if (box->optimizer == NULL)
    lua_pushstring(L, "sieve.optimizer (closed)");
  else
    lua_pushfstring(L, "sieve.optimizer '%s'", sieve_component_get_name(sieve_optimizer_get_component(box->optimizer)));
  return 1;
}

static const luaL_Reg optimizer_methods[] = {
    {"ask", optimizer_ask}, {"tell", optimizer_tell}, {"save", optimizer_save}, {"load", optimizer_load}, {NULL, NULL},
};

static const luaL_Reg optimizer_metamethods[] = {
    {"__gc", optimizer_gc}, {"__close", optimizer_close}, {"__tostring", optimizer_tostring}, {NULL, NULL},
};

void
sieve__lua_open_optimizer(lua_State *L, int sieve_idx)
{
  sieve__lua_new_class(L, SIEVE_LUA_OPTIMIZER, optimizer_methods, optimizer_metamethods);
  lua_pushcfunction(L, optimizer_new);
  lua_setfield(L, sieve_idx, "optimizer");
}
