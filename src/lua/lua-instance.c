/* sieve: instances of components written in Lua, and the calls into their
 * methods.
 *
 * Each instance gets `self`: {space, rng (optimizers: seeded with the
 * study's seed), options, study, state}.  It lives in the host of its
 * definition (or, through the builtin `lua` component, in a host of its
 * own), and only the thread of that host may call into it.
 */
#include <string.h>

#include "lua/lua-private.h"

/* Pushes the definition's function `field` (or nil) and self. */
void
sieve__lua_instance_push_method(SieveLuaInstance *inst, const char *field)
{
  lua_State *L = inst->host->L;
  lua_rawgeti(L, LUA_REGISTRYINDEX, inst->def->table_ref);
  lua_getfield(L, -1, field);
  lua_remove(L, -2);
  lua_rawgeti(L, LUA_REGISTRYINDEX, inst->self_ref);
}

/* A Lua state runs on one thread at a time, and the thread that runs the
 * script may be inside it right now (a study run from Lua): an entry from
 * another thread (a concurrent evaluator building a Lua space's networks)
 * is refused before it touches the state. */
gboolean
sieve__lua_instance_on_host_thread(SieveLuaInstance *inst, const char *field, GError **error)
{
  if (G_LIKELY(g_thread_self() == inst->host->thread))
    return TRUE;
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED,
              "%s '%s', %s(): called from another thread than the one running its Lua script (Lua components run "
              "on one thread: use workers: 1)",
              sieve_component_kind_to_string(inst->def->kind), inst->def->name, field);
  return FALSE;
}

/* The core prefixes "optimizer 'NAME': " to what an optimizer's ask, tell,
 * save and load report, and "evaluator 'NAME': " to evaluate's; NAME is the
 * definition's own unless it runs through the builtin `lua` component (a
 * host of its own), whose name is 'lua'.  Then the instance's messages
 * leave the component out. */
static gboolean
core_prefixes(SieveLuaInstance *inst, const char *field)
{
  static const char *const prefixed[] = {"ask", "tell", "save", "load", NULL};
  return inst->own_host == NULL &&
         ((inst->def->kind == SIEVE_KIND_OPTIMIZER && g_strv_contains(prefixed, field)) ||
          (inst->def->kind == SIEVE_KIND_EVALUATOR && strcmp(field, "evaluate") == 0));
}

char *
sieve__lua_instance_prefix(SieveLuaInstance *inst, const char *field)
{
  gboolean core = core_prefixes(inst, field);
  /* Where the method is defined: an error about what it returned is
   * raised where the engine or the study called it, far from the script. */
  lua_State *L = inst->host->L;
  lua_rawgeti(L, LUA_REGISTRYINDEX, inst->def->table_ref);
  lua_getfield(L, -1, field);
  lua_Debug ar;
  g_autofree char *where = NULL;
  /* lua_getinfo with '>' pops the function itself, whatever it finds (a C
   * function has linedefined -1, a load() chunk 0): only a value that is
   * not a function is left to pop. */
  if (lua_isfunction(L, -1)) {
    if (lua_getinfo(L, ">S", &ar) && ar.linedefined > 0)
      where = g_strdup_printf(" (%s:%d)", ar.short_src, ar.linedefined);
  } else
    lua_pop(L, 1);
  lua_pop(L, 1);
  if (core)
    return g_strdup_printf("%s()%s: ", field, where ? where : "");
  return g_strdup_printf("%s '%s', %s()%s: ", sieve_component_kind_to_string(inst->def->kind), inst->def->name, field,
                         where ? where : "");
}

gboolean
sieve__lua_instance_call(SieveLuaInstance *inst, const char *field, int nargs, int nresults, GError **error)
{
  if (!sieve__lua_call(inst->host, nargs + 1, nresults, error)) {
    /* (the Lua message already names the script line) */
    if (core_prefixes(inst, field))
      g_prefix_error(error, "%s(): ", field);
    else
      g_prefix_error(error, "%s '%s', %s(): ", sieve_component_kind_to_string(inst->def->kind), inst->def->name,
                     field);
    return FALSE;
  }
  return TRUE;
}

gboolean
sieve__lua_instance_has_method(SieveLuaInstance *inst, const char *field)
{
  lua_State *L = inst->host->L;
  lua_rawgeti(L, LUA_REGISTRYINDEX, inst->def->table_ref);
  lua_getfield(L, -1, field);
  gboolean has = lua_isfunction(L, -1);
  lua_pop(L, 2);
  return has;
}

static void
instance_free(SieveLuaInstance *inst)
{
  if (inst == NULL)
    return;
  if (inst->host != NULL && inst->self_ref != LUA_NOREF) {
    lua_State *L = inst->host->L;
    /* The space goes with the engine: no Lua reference may reach it after. */
    lua_rawgeti(L, LUA_REGISTRYINDEX, inst->self_ref);
    if (lua_getfield(L, -1, "space") == LUA_TUSERDATA && luaL_testudata(L, -1, SIEVE_LUA_SPACE))
      sieve__lua_invalidate_space(L, -1);
    lua_pop(L, 2);
    luaL_unref(L, LUA_REGISTRYINDEX, inst->self_ref);
  }
  sieve_lua_host_free(inst->own_host);
  g_free(inst);
}

/* The classes' destroy: spaces, optimizers and evaluators alike. */
void
sieve__lua_instance_destroy(gpointer instance)
{
  instance_free(instance);
}

/* A new instance of def: self = {name, space, options, state = {}}, and for
 * optimizers (study given) rng, seeded with the study's seed, and study =
 * {seed, objectives, fidelity}; then create(self).  For spaces, create gets
 * the builder too. */
SieveLuaInstance *
sieve__lua_instance_new(SieveLuaDef *def, SieveLuaHost *own_host, SieveSpace *space, const SieveOptions *options,
                        const SieveStudyInfo *study, GError **error)
{
  if (def->host == NULL) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED,
                "%s '%s': the Lua script that registered it (%s) is no longer running",
                sieve_component_kind_to_string(def->kind), def->name, def->origin);
    sieve_lua_host_free(own_host);
    return NULL;
  }
  SieveLuaInstance *inst = g_new0(SieveLuaInstance, 1);
  inst->def = def;
  inst->host = def->host;
  inst->own_host = own_host;
  inst->space = space;
  inst->self_ref = LUA_NOREF;
  lua_State *L = inst->host->L;
  if (!lua_checkstack(L, 8)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "Lua stack overflow");
    instance_free(inst);
    return NULL;
  }
  lua_newtable(L);
  lua_pushstring(L, def->name);
  lua_setfield(L, -2, "name");
  sieve__lua_push_space(L, space, FALSE);
  lua_setfield(L, -2, "space");
  sieve__lua_push_options(L, options);
  lua_setfield(L, -2, "options");
  lua_newtable(L);
  lua_setfield(L, -2, "state");
  if (study != NULL) {
    SieveRng rng;
    sieve_rng_seed(&rng, study->seed);
    sieve__lua_push_rng(L, &rng);
    lua_setfield(L, -2, "rng");
    lua_newtable(L);
    lua_pushinteger(L, (lua_Integer) study->seed);
    lua_setfield(L, -2, "seed");
    lua_createtable(L, (int) study->n_objectives, 0);
    for (guint i = 0; i < study->n_objectives; i++) {
      lua_pushstring(L, study->objective_names[i]);
      lua_rawseti(L, -2, (lua_Integer) i + 1);
    }
    lua_setfield(L, -2, "objectives");
    if (study->fidelity != NULL) {
      sieve__lua_push_fidelity(L, study->fidelity);
      lua_setfield(L, -2, "fidelity");
    }
    lua_setfield(L, -2, "study");
  }
  inst->self_ref = luaL_ref(L, LUA_REGISTRYINDEX);

  if (def->kind == SIEVE_KIND_SPACE) {
    sieve__lua_instance_push_method(inst, "create"); /* create, self */
    sieve__lua_push_builder(L, space);
    int arg = lua_gettop(L);
    lua_pushvalue(L, arg);
    lua_insert(L, arg - 2); /* a reference below the call, to invalidate it after */
    int builder = arg - 2;
    gboolean ok = sieve__lua_instance_call(inst, "create", 1, 0, error);
    sieve__lua_invalidate_builder(L, builder);
    lua_settop(L, builder - 1);
    if (!ok) {
      instance_free(inst);
      return NULL;
    }
  } else if (sieve__lua_instance_has_method(inst, "create")) {
    sieve__lua_instance_push_method(inst, "create");
    if (!sieve__lua_instance_call(inst, "create", 0, 0, error)) {
      instance_free(inst);
      return NULL;
    }
  }
  return inst;
}

SieveLuaInstance *
sieve__lua_any_instance_new(SieveComponentKind kind, SieveSpace *space, const SieveOptions *options,
                            const SieveStudyInfo *study, GError **error)
{
  if (options != NULL && sieve_options_spec(options) == sieve__lua_builtin_options)
    return sieve__lua_builtin_instance_new(kind, space, options, study, error);
  SieveLuaDef *def = sieve__lua_def_for_options(options);
  if (def == NULL) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "a Lua %s needs its validated options",
                sieve_component_kind_to_string(kind));
    return NULL;
  }
  return sieve__lua_instance_new(def, NULL, space, options, study, error);
}
