/* sieve: binding (scripts call C): sieve.evaluator, evaluator components
 * driven from Lua.
 *
 *   local ev = sieve.evaluator("tabular", space, {table = "nb201.csv", metrics = {"params_m"}})
 *   local r = ev:evaluate(g)           -- a sieve.result; ev:evaluate(g, 12) at fidelity 12
 *
 * The evaluator userdata keeps its space alive (user value 1).
 */
#include <math.h>

#include "lua/lua-private.h"

typedef struct {
  SieveEvaluator *evaluator;
  SieveOptions *options; /* as long as the evaluator: the engine keeps a component's options for its life, and
                          * plugins may borrow from them (train keeps its device name) */
  guint busy;            /* evaluations running: closing it then is an error, not a use after free */
} EvaluatorBox;

static EvaluatorBox *
check_evaluator(lua_State *L, int idx)
{
  EvaluatorBox *box = luaL_checkudata(L, idx, SIEVE_LUA_EVALUATOR);
  if (box->evaluator == NULL)
    luaL_error(L, "this evaluator is closed");
  lua_getiuservalue(L, idx, 1);
  sieve__lua_check_space(L, -1);
  lua_pop(L, 1);
  return box;
}

/* sieve.evaluator(name, space, {options}) */
static int
evaluator_new(lua_State *L)
{
  const char *name = luaL_checkstring(L, 1);
  SieveSpace *space = sieve__lua_check_space(L, 2);
  lua_settop(L, 3); /* the options, or nil (none): the box goes above them */
  EvaluatorBox *box = lua_newuserdatauv(L, sizeof(EvaluatorBox), 1);
  box->evaluator = NULL;
  box->options = NULL;
  box->busy = 0;
  luaL_setmetatable(L, SIEVE_LUA_EVALUATOR);
  lua_pushvalue(L, 2);
  lua_setiuservalue(L, -2, 1);
  const SieveComponent *c;
  /* Freed by __gc, even on a raise. */
  box->options = sieve__lua_check_component_options(L, SIEVE_KIND_EVALUATOR, name, 3, &c);
  GError *error = NULL;
  box->evaluator = sieve_evaluator_new(c, space, box->options, &error);
  if (box->evaluator == NULL)
    return sieve__lua_error_gerror(L, error);
  return 1;
}

void
sieve__lua_push_fidelity(lua_State *L, const SieveFidelity *fidelity)
{
  lua_newtable(L);
  lua_pushstring(L, fidelity->name);
  lua_setfield(L, -2, "name");
  lua_pushnumber(L, fidelity->min);
  lua_setfield(L, -2, "min");
  lua_pushnumber(L, fidelity->max);
  lua_setfield(L, -2, "max");
  lua_pushboolean(L, fidelity->integer);
  lua_setfield(L, -2, "integer");
}

SieveEvaluator *
sieve__lua_to_evaluator(lua_State *L, int idx)
{
  EvaluatorBox *box = luaL_testudata(L, idx, SIEVE_LUA_EVALUATOR);
  return box ? box->evaluator : NULL;
}

SieveResult *
sieve__lua_evaluator_run(lua_State *L, int idx, SieveCandidate *c, GError **error)
{
  idx = lua_absindex(L, idx);
  EvaluatorBox *box = luaL_testudata(L, idx, SIEVE_LUA_EVALUATOR);
  lua_getiuservalue(L, idx, 1);
  gboolean live = box != NULL && box->evaluator != NULL && sieve__lua_to_space(L, -1) != NULL;
  lua_pop(L, 1);
  if (!live) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "this evaluator (or its space) is closed");
    return NULL;
  }
  /* The evaluator's script may close its space or itself: refused while
   * this holds their pointers (the evaluation's errors come back as a
   * GError, never a raise through here). */
  sieve__lua_space_busy(L, idx, +1);
  box->busy++;
  SieveResult *result = sieve_evaluator_evaluate(box->evaluator, c, error);
  box->busy--;
  sieve__lua_space_busy(L, idx, -1);
  return result;
}

/* ev:evaluate(genotype | text | {decision = value}[, fidelity]) */
static int
evaluator_evaluate(lua_State *L)
{
  check_evaluator(L, 1);
  double fidelity = luaL_optnumber(L, 3, NAN);
  lua_settop(L, 3);
  lua_getiuservalue(L, 1, 1);
  int space_idx = lua_gettop(L);
  GError *error = NULL;
  SieveGenotype *g = sieve__lua_to_genotype(L, 2, space_idx, &error);
  if (g == NULL)
    return sieve__lua_error_gerror(L, error);
  SieveCandidate *candidate = sieve_candidate_new(g, fidelity);
  SieveResult *result = sieve__lua_evaluator_run(L, 1, candidate, &error);
  sieve_candidate_free(candidate); /* before any raise: it skips C cleanups */
  if (result == NULL)
    return sieve__lua_error_gerror(L, error);
  sieve__lua_push_result(L, result);
  return 1;
}

static int
evaluator_fidelity(lua_State *L)
{
  EvaluatorBox *box = check_evaluator(L, 1);
  const SieveFidelity *f = sieve_evaluator_get_fidelity(box->evaluator);
  if (f == NULL) {
    lua_pushnil(L);
    return 1;
  }
  sieve__lua_push_fidelity(L, f);
  return 1;
}

static void
evaluator_release(EvaluatorBox *box)
{
  g_clear_pointer(&box->evaluator, sieve_evaluator_free);
  g_clear_pointer(&box->options, sieve_options_free);
}

/* A real collection cannot come while it evaluates (the call holds it); a
 * __gc reached some other way then leaves it alone. */
static int
evaluator_gc(lua_State *L)
{
  EvaluatorBox *box = luaL_checkudata(L, 1, SIEVE_LUA_EVALUATOR);
  if (box->busy == 0)
    evaluator_release(box);
  return 0;
}

static int
evaluator_close(lua_State *L)
{
  EvaluatorBox *box = luaL_checkudata(L, 1, SIEVE_LUA_EVALUATOR);
  if (box->busy > 0)
    return luaL_error(L, "this evaluator is evaluating: close it after evaluate returns");
  evaluator_release(box);
  return 0;
}

static int
evaluator_tostring(lua_State *L)
{
  EvaluatorBox *box = luaL_checkudata(L, 1, SIEVE_LUA_EVALUATOR);
  if (box->evaluator == NULL)
    lua_pushstring(L, "sieve.evaluator (closed)");
  else
    lua_pushfstring(L, "sieve.evaluator '%s'", sieve_component_get_name(sieve_evaluator_get_component(box->evaluator)));
  return 1;
}

static const luaL_Reg evaluator_methods[] = {
    {"evaluate", evaluator_evaluate}, {"fidelity", evaluator_fidelity}, {NULL, NULL},
};

static const luaL_Reg evaluator_metamethods[] = {
    {"__gc", evaluator_gc}, {"__close", evaluator_close}, {"__tostring", evaluator_tostring}, {NULL, NULL},
};

void
sieve__lua_open_evaluator(lua_State *L, int sieve_idx)
{
  sieve__lua_new_class(L, SIEVE_LUA_EVALUATOR, evaluator_methods, evaluator_metamethods);
  lua_pushcfunction(L, evaluator_new);
  lua_setfield(L, sieve_idx, "evaluator");
}
