/* sieve: evaluators written in Lua: the SieveEvaluatorClass whose evaluate
 * calls the script's function (C calling Lua).  Evaluators driven from Lua
 * are lua-bind-evaluator.c.
 */
#include <math.h>

#include "lua/lua-private.h"

static gpointer
evaluator_create(const SieveSpace *space, const SieveOptions *options, GError **error)
{
  return sieve__lua_any_instance_new(SIEVE_KIND_EVALUATOR, (SieveSpace *) space, options, NULL, error);
}

/* The candidate behind trial.report(), valid during evaluate() only. */
typedef struct {
  const SieveCandidate *candidate;
  const SieveFidelity *range; /* the evaluator's fidelity; NULL: none */
} ReportBox;

/* The arguments step, value [, fidelity] from first on, checked (a step is
 * an integer >= 0; a fidelity finite, >= 0 and at most range's max where
 * the evaluator has one), or an argument error at the caller's line: how
 * c.report and study:report read an intermediate value. */
void
sieve__lua_check_report(lua_State *L, int first, const SieveFidelity *range, gint64 *step, double *value,
                        double *fidelity)
{
  lua_Integer s = luaL_checkinteger(L, first);
  *value = luaL_checknumber(L, first + 1);
  *fidelity = luaL_optnumber(L, first + 2, NAN);
  if (s < 0)
    luaL_argerror(L, first, "a step is an integer >= 0");
  *step = s;
  /* As the command evaluator's progress lines: NaN and infinite values are
   * a diverged training; a fidelity is how far the trial got. */
  if (!isnan(*fidelity) || !lua_isnoneornil(L, first + 2)) {
    if (!isfinite(*fidelity) || *fidelity < 0)
      luaL_argerror(L, first + 2, "a fidelity is a finite number >= 0");
    if (range != NULL && *fidelity > range->max) {
      char *got = sieve_text_format_double(*fidelity), *max = sieve_text_format_double(range->max);
      const char *message = lua_pushfstring(L, "fidelity %s is above the evaluator's fidelity max %s", got, max);
      g_free(got); /* before the error's longjmp */
      g_free(max);
      luaL_argerror(L, first + 2, message);
    }
  }
}

/* trial.report(step, value [, fidelity]) -> continue: an intermediate value
 * (sieve_candidate_report_intermediate); false means stop now and return. */
static int
candidate_report(lua_State *L)
{
  ReportBox *box = lua_touserdata(L, lua_upvalueindex(1));
  if (box->candidate == NULL)
    return luaL_error(L, "trial.report() called after evaluate() returned");
  gint64 step;
  double value, fidelity;
  sieve__lua_check_report(L, 1, box->range, &step, &value, &fidelity);
  lua_pushboolean(L, sieve_candidate_report_intermediate(box->candidate, step, fidelity, value));
  return 1;
}

static SieveResult *
evaluator_evaluate(gpointer instance, const SieveCandidate *candidate, GError **error)
{
  SieveLuaInstance *inst = instance;
  if (!sieve__lua_instance_on_host_thread(inst, "evaluate", error))
    return NULL;
  lua_State *L = inst->host->L;
  int top = lua_gettop(L);
  /* Kept on the stack below the call, so that it outlives it and is cleared after. */
  ReportBox *box = lua_newuserdatauv(L, sizeof(ReportBox), 0);
  box->candidate = candidate;
  box->range = inst->def->has_fidelity ? &inst->def->fidelity : NULL;
  sieve__lua_instance_push_method(inst, "evaluate");
  lua_getfield(L, -1, "space");
  sieve__lua_push_candidate(L, candidate, -1);
  lua_remove(L, -2); /* the space */
  lua_pushvalue(L, top + 1);
  lua_pushcclosure(L, candidate_report, 1);
  lua_setfield(L, -2, "report");
  gboolean called = sieve__lua_instance_call(inst, "evaluate", 1, 1, error);
  box->candidate = NULL;
  if (!called) {
    lua_settop(L, top);
    return NULL;
  }
  GError *local = NULL;
  SieveResult *result = sieve__lua_to_result(L, -1, &local);
  lua_settop(L, top);
  if (result == NULL) {
    g_autofree char *prefix = sieve__lua_instance_prefix(inst, "evaluate");
    g_propagate_prefixed_error(error, local, "%s", prefix);
  }
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
    /* one Lua state: never from two threads at once; trial.report() gives intermediate values */
    .flags = SIEVE_EVALUATOR_INTERMEDIATE,
    .fidelity = evaluator_fidelity,
};
