/* sieve: evaluators written in Lua: the SieveEvaluatorClass whose evaluate
 * calls the script's function (C calling Lua).  Evaluators driven from Lua
 * are lua-bind-evaluator.c.
 */
#include "lua/lua-private.h"

static gpointer
evaluator_create(const SieveSpace *space, const SieveOptions *options, GError **error)
{
  return sieve__lua_any_instance_new(SIEVE_KIND_EVALUATOR, (SieveSpace *) space, options, NULL, error);
}

static SieveResult *
evaluator_evaluate(gpointer instance, const SieveCandidate *candidate, GError **error)
{
  SieveLuaInstance *inst = instance;
  if (!sieve__lua_instance_on_host_thread(inst, "evaluate", error))
    return NULL;
  lua_State *L = inst->host->L;
  int top = lua_gettop(L);
  sieve__lua_instance_push_method(inst, "evaluate");
  lua_getfield(L, -1, "space");
  sieve__lua_push_candidate(L, candidate, -1);
  lua_remove(L, -2); /* the space */
  if (!sieve__lua_instance_call(inst, "evaluate", 1, 1, error))
    return NULL;
  GError *local = NULL;
  SieveResult *result = sieve__lua_to_result(L, -1, &local);
  lua_settop(L, top);
  if (result == NULL)
    g_propagate_prefixed_error(error, local, "evaluator '%s', evaluate(): ", inst->def->name);
  return result;
}

static const SieveFidelity *
evaluator_fidelity(gpointer instance)
{
  SieveLuaInstance *inst = instance;
  return inst->def->has_fidelity ? &inst->def->fidelity : NULL;
}

const SieveEvaluatorClass sieve__lua_impl_evaluator_class = {
    .create = evaluator_create,
    .destroy = sieve__lua_instance_destroy,
    .evaluate = evaluator_evaluate,
    .flags = 0, /* one Lua state: never from two threads at once */
    .fidelity = evaluator_fidelity,
};
