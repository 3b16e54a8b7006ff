/* sieve: optimizers written in Lua: the SieveOptimizerClass whose ask,
 * tell, save and load call the script's functions (C calling Lua).
 * Optimizers driven from Lua are lua-bind-optimizer.c.
 *
 * Determinism and resume: the engine saves an optimizer after every ask
 * and tell as {rng, state}, where state is self.state (or what the optional
 * save(self) returns, given back to load(self, saved)); so an optimizer
 * that keeps what it learns in self.state and draws only from self.rng
 * continues exactly after a kill.
 */
#include <math.h>

#include "lua/lua-private.h"

static gpointer
optimizer_create(const SieveSpace *space, const SieveOptions *options, const SieveStudyInfo *study, GError **error)
{
  return sieve__lua_any_instance_new(SIEVE_KIND_OPTIMIZER, (SieveSpace *) space, options, study, error);
}

/* One entry of ask()'s list as a candidate: a genotype, its text, a table
 * {decision = value}, or {genotype = ..., fidelity = ...}. */
static SieveCandidate *
to_candidate(lua_State *L, int idx, int space_idx, GError **error)
{
  double fidelity = NAN;
  idx = lua_absindex(L, idx);
  if (lua_istable(L, idx) && lua_getfield(L, idx, "genotype") != LUA_TNIL) {
    lua_getfield(L, idx, "fidelity");
    if (!lua_isnil(L, -1)) {
      if (!lua_isnumber(L, -1)) {
        g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "fidelity must be a number, got a %s",
                    luaL_typename(L, -1));
        lua_pop(L, 2);
        return NULL;
      }
      fidelity = lua_tonumber(L, -1);
    }
    lua_pop(L, 1);
    SieveGenotype *g = sieve__lua_to_genotype(L, -1, space_idx, error);
    lua_pop(L, 1);
    return g ? sieve_candidate_new(g, fidelity) : NULL;
  }
  if (lua_istable(L, idx))
    lua_pop(L, 1); /* the nil genotype field */
  SieveGenotype *g = sieve__lua_to_genotype(L, idx, space_idx, error);
  return g ? sieve_candidate_new(g, fidelity) : NULL;
}

static gboolean
optimizer_ask(gpointer instance, guint n, GPtrArray *out, GError **error)
{
  SieveLuaInstance *inst = instance;
  if (!sieve__lua_instance_on_host_thread(inst, "ask", error))
    return FALSE;
  lua_State *L = inst->host->L;
  int top = lua_gettop(L);
  sieve__lua_instance_push_method(inst, "ask");
  lua_pushinteger(L, n);
  if (!sieve__lua_instance_call(inst, "ask", 1, 1, error))
    return FALSE;
  if (!lua_istable(L, -1)) {
    g_autofree char *prefix = sieve__lua_instance_prefix(inst, "ask");
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "%smust return a list of genotypes, got a %s", prefix,
                luaL_typename(L, -1));
    lua_settop(L, top);
    return FALSE;
  }
  if (lua_rawlen(L, -1) > n) {
    /* The engine refuses it too, but without the script's line. */
    g_autofree char *prefix = sieve__lua_instance_prefix(inst, "ask");
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "%sreturned %" G_GUINT64_FORMAT " genotypes for ask(%u): "
                "at most n, fewer (even none) when it has nothing to propose yet", prefix,
                (guint64) lua_rawlen(L, -1), n);
    lua_settop(L, top);
    return FALSE;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, inst->self_ref);
  lua_getfield(L, -1, "space");
  int space_idx = lua_gettop(L);
  int list = top + 1;
  for (lua_Integer i = 1; i <= (lua_Integer) lua_rawlen(L, list); i++) {
    lua_rawgeti(L, list, i);
    GError *local = NULL;
    SieveCandidate *c = to_candidate(L, -1, space_idx, &local);
    lua_pop(L, 1);
    /* The engine checks it too, but far from the script: said here with
     * where ask() is (a genotype built with g:set can leave an active
     * decision unset). */
    if (c != NULL && !sieve_space_validate(sieve_genotype_get_space(sieve_candidate_get_genotype(c)),
                                           sieve_candidate_get_genotype(c), &local))
      g_clear_pointer(&c, sieve_candidate_free);
    if (c == NULL) {
      g_autofree char *prefix = sieve__lua_instance_prefix(inst, "ask");
      g_propagate_prefixed_error(error, local, "%sitem %" G_GINT64_FORMAT ": ", prefix, (gint64) i);
      lua_settop(L, top);
      return FALSE;
    }
    g_ptr_array_add(out, c);
  }
  lua_settop(L, top);
  return TRUE;
}

static gboolean
optimizer_tell(gpointer instance, const SieveCandidate *candidate, const SieveResult *result,
               const double *objectives, GError **error)
{
  SieveLuaInstance *inst = instance;
  if (!sieve__lua_instance_on_host_thread(inst, "tell", error))
    return FALSE;
  if (!sieve__lua_instance_has_method(inst, "tell"))
    return TRUE;
  lua_State *L = inst->host->L;
  sieve__lua_instance_push_method(inst, "tell");
  lua_getfield(L, -1, "space");
  sieve__lua_push_candidate(L, candidate, -1);
  lua_remove(L, -2); /* the space */
  int trial = lua_gettop(L);
  lua_pushstring(L, sieve_status_to_string(sieve_result_get_status(result)));
  lua_setfield(L, trial, "status");
  lua_pushstring(L, sieve_result_get_reason(result));
  lua_setfield(L, trial, "reason");
  lua_pushnumber(L, sieve_result_get_cost(result));
  lua_setfield(L, trial, "cost");
  sieve__lua_push_metrics(L, result);
  lua_setfield(L, trial, "metrics");
  /* objectives: larger is better; a missing one is nil (a hole) in the list */
  lua_rawgeti(L, LUA_REGISTRYINDEX, inst->self_ref);
  lua_getfield(L, -1, "study");
  lua_getfield(L, -1, "objectives");
  lua_Integer n_obj = (lua_Integer) lua_rawlen(L, -1);
  lua_pop(L, 3);
  lua_newtable(L);
  for (lua_Integer i = 0; i < n_obj; i++)
    if (!isnan(objectives[i])) {
      lua_pushnumber(L, objectives[i]);
      lua_rawseti(L, -2, i + 1);
    }
  lua_setfield(L, trial, "objectives");
  if (n_obj > 0 && !isnan(objectives[0])) {
    lua_pushnumber(L, objectives[0]);
    lua_setfield(L, trial, "objective");
  }
  return sieve__lua_instance_call(inst, "tell", 1, 0, error);
}

/* The saved state: {rng: (tttt), state: self.state or save(self)}. */
static GVariant *
optimizer_save(gpointer instance, GError **error)
{
  SieveLuaInstance *inst = instance;
  if (!sieve__lua_instance_on_host_thread(inst, "save", error))
    return NULL;
  lua_State *L = inst->host->L;
  int top = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, inst->self_ref);
  int self = lua_gettop(L);
  lua_getfield(L, self, "rng");
  if (!luaL_testudata(L, -1, SIEVE_LUA_RNG)) {
    g_autofree char *prefix = sieve__lua_instance_prefix(inst, "save");
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "%sself.rng is no longer a sieve.rng", prefix);
    lua_settop(L, top);
    return NULL;
  }
  GVariant *rng = sieve_rng_save(sieve__lua_check_rng(L, -1));
  if (sieve__lua_instance_has_method(inst, "save")) {
    sieve__lua_instance_push_method(inst, "save");
    if (!sieve__lua_instance_call(inst, "save", 0, 1, error)) {
      g_variant_unref(g_variant_ref_sink(rng));
      lua_settop(L, top);
      return NULL;
    }
  } else
    lua_getfield(L, self, "state");
  GVariant *state = lua_isnil(L, -1) ? g_variant_new_boolean(FALSE)
                                     : sieve__lua_to_variant(L, -1, "self.state", error);
  lua_settop(L, top);
  if (state == NULL) {
    g_variant_unref(g_variant_ref_sink(rng));
    g_autofree char *prefix = sieve__lua_instance_prefix(inst, "save");
    g_prefix_error(error, "%s", prefix);
    return NULL;
  }
  GVariantDict dict;
  g_variant_dict_init(&dict, NULL);
  g_variant_dict_insert_value(&dict, "rng", rng);
  g_variant_dict_insert_value(&dict, "state", state);
  return g_variant_dict_end(&dict);
}

static gboolean
optimizer_load(gpointer instance, GVariant *saved, GError **error)
{
  SieveLuaInstance *inst = instance;
  if (!sieve__lua_instance_on_host_thread(inst, "load", error))
    return FALSE;
  lua_State *L = inst->host->L;
  g_autoptr(GVariant) rng = NULL, state = NULL;
  if (g_variant_is_of_type(saved, G_VARIANT_TYPE_VARDICT)) {
    rng = g_variant_lookup_value(saved, "rng", G_VARIANT_TYPE("(tttt)"));
    state = g_variant_lookup_value(saved, "state", NULL);
  }
  if (rng == NULL || state == NULL) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "expected a saved Lua optimizer {rng, state}, got %s",
                g_variant_get_type_string(saved));
    return FALSE;
  }
  int top = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, inst->self_ref);
  int self = lua_gettop(L);
  lua_getfield(L, self, "rng");
  if (!luaL_testudata(L, -1, SIEVE_LUA_RNG)) {
    lua_pop(L, 1);
    SieveRng fresh = {{0}};
    sieve__lua_push_rng(L, &fresh);
    lua_pushvalue(L, -1);
    lua_setfield(L, self, "rng");
  }
  /* In place, so that references the script kept to self.rng follow. */
  if (!sieve_rng_load(sieve__lua_check_rng(L, -1), rng, error)) {
    lua_settop(L, top);
    return FALSE;
  }
  lua_getfield(L, self, "space");
  int space_idx = lua_gettop(L);
  gboolean is_false = g_variant_is_of_type(state, G_VARIANT_TYPE_BOOLEAN) && !g_variant_get_boolean(state);
  if (sieve__lua_instance_has_method(inst, "load")) {
    sieve__lua_instance_push_method(inst, "load");
    if (!sieve__lua_push_variant(L, state, space_idx, error)) {
      lua_settop(L, top);
      return FALSE;
    }
    gboolean ok = sieve__lua_instance_call(inst, "load", 1, 0, error);
    lua_settop(L, top);
    return ok;
  }
  if (is_false)
    lua_newtable(L);
  else if (!sieve__lua_push_variant(L, state, space_idx, error)) {
    lua_settop(L, top);
    return FALSE;
  }
  lua_setfield(L, self, "state");
  lua_settop(L, top);
  return TRUE;
}

const SieveOptimizerClass sieve__lua_impl_optimizer_class = {
    .create = optimizer_create,
    .destroy = sieve__lua_instance_destroy,
    .ask = optimizer_ask,
    .tell = optimizer_tell,
    .save = optimizer_save,
    .load = optimizer_load,
};
