/* sieve: components written in Lua: their definitions, and the
 * registration functions sieve.register_optimizer, register_space and
 * register_evaluator.
 *
 *   sieve.register_optimizer{
 *     name = "lua-random",
 *     options = {batch = {type = "int", default = 1, min = 1, max = 64, help = "..."}},
 *     create = function(self) self.state.asked = 0 end,      -- optional
 *     ask = function(self, n)
 *       local out = {}
 *       for i = 1, n do out[i] = self.space:sample(self.rng) end
 *       self.state.asked = self.state.asked + n
 *       return out
 *     end,
 *     tell = function(self, trial) end,                      -- trial.objective, trial.metrics ...
 *   }
 *
 * A registered component is a component like a plugin's: YAML names it
 * (after `lua: {load: [file.lua]}`), `sieve plugins` lists it, its option
 * table validates its section and documents it.  The builtin component
 * `lua` (space, optimizer and evaluator) takes a `script:` that registers
 * one, and runs it in a Lua state of its own.
 *
 * The C side finds a definition from the option table its instance was
 * validated against (each definition has its own), because the component
 * classes' create() gets the options but not the component.
 *
 * The option table a definition declares is read in lua-def-options.c, its
 * instances live in lua-instance.c, the classes the engine calls them
 * through in lua-impl-*.c, and the builtin `lua` components in
 * lua-builtin.c.
 */
#include <string.h>

#include "lua/lua-private.h"
#include "core/core-private.h"

/* The same script may run in several hosts at once (a script that runs an
 * experiment loading that script too): the latest one serves, and when it
 * closes the one before it serves again. */
typedef struct {
  SieveLuaHost *host;
  int table_ref;
} Binding;

static void
bind_def(SieveLuaDef *def, SieveLuaHost *host, int table_ref)
{
  Binding b = {host, table_ref};
  g_array_append_val(def->bindings, b);
  def->host = host;
  def->table_ref = table_ref;
}

/* Definitions live as long as the process, like a resident plugin's static
 * tables, because registries point into them. */
static GMutex defs_lock;
static GHashTable *defs_by_spec; /* const SieveOptionSpec* -> SieveLuaDef* */
static GPtrArray *defs;          /* SieveLuaDef*, all of them */

const char *
sieve__lua_def_keep(SieveLuaDef *def, char *owned)
{
  g_ptr_array_add(def->strings, owned);
  return owned;
}

/* ---- finding definitions ------------------------------------------------------ */

SieveLuaDef *
sieve__lua_def_for_options(const SieveOptions *options)
{
  if (options == NULL)
    return NULL;
  g_mutex_lock(&defs_lock);
  SieveLuaDef *def = defs_by_spec ? g_hash_table_lookup(defs_by_spec, sieve_options_spec(options)) : NULL;
  g_mutex_unlock(&defs_lock);
  return def;
}

void
sieve__lua_defs_forget_host(SieveLuaHost *host)
{
  g_mutex_lock(&defs_lock);
  for (guint i = 0; defs && i < defs->len; i++) {
    SieveLuaDef *def = defs->pdata[i];
    for (guint k = def->bindings->len; k-- > 0;)
      if (g_array_index(def->bindings, Binding, k).host == host)
        g_array_remove_index(def->bindings, k);
    if (def->bindings->len > 0) {
      Binding *last = &g_array_index(def->bindings, Binding, def->bindings->len - 1);
      def->host = last->host;
      def->table_ref = last->table_ref;
    } else
      def->host = NULL;
  }
  g_mutex_unlock(&defs_lock);
}

SieveLuaDef *
sieve__lua_def_find(SieveLuaHost *host, SieveComponentKind kind, const char *wanted, guint *found, GString *names)
{
  SieveLuaDef *def = NULL;
  *found = 0;
  g_mutex_lock(&defs_lock);
  for (guint i = 0; defs && i < defs->len; i++) {
    SieveLuaDef *d = defs->pdata[i];
    if (d->host != host || d->kind != kind)
      continue;
    g_string_append_printf(names, "%s%s", *found ? ", " : "", d->name);
    (*found)++;
    if (wanted == NULL || strcmp(wanted, d->name) == 0)
      def = wanted || *found == 1 ? d : NULL;
  }
  g_mutex_unlock(&defs_lock);
  return def;
}

/* ---- registration ------------------------------------------------------------ */

static const char *const kind_fields[][4] = {
    [SIEVE_KIND_SPACE] = {"create", NULL},
    [SIEVE_KIND_OPTIMIZER] = {"ask", NULL},
    [SIEVE_KIND_EVALUATOR] = {"evaluate", NULL},
};

/* A definition of the same name and kind from the same script (an
 * experiment loaded twice in one process) takes the new host. */
static SieveLuaDef *
find_rebindable(SieveRegistry *registry, SieveComponentKind kind, const char *name, const char *origin)
{
  const SieveComponent *c = sieve_registry_lookup(registry, kind, name);
  if (c == NULL)
    return NULL;
  g_mutex_lock(&defs_lock);
  SieveLuaDef *def = defs_by_spec ? g_hash_table_lookup(defs_by_spec, sieve_component_get_info(c)->options) : NULL;
  g_mutex_unlock(&defs_lock);
  return def != NULL && strcmp(def->origin, origin) == 0 ? def : NULL;
}

static int
register_component(lua_State *L, SieveComponentKind kind)
{
  SieveLuaHost *host = sieve__lua_host(L);
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  lua_getfield(L, 1, "name");
  const char *name = lua_tostring(L, -1);
  if (name == NULL)
    return luaL_error(L, "register_%s needs a name", sieve_component_kind_to_string(kind));
  lua_pop(L, 1);
  const char *required = kind_fields[kind][0];
  lua_getfield(L, 1, required);
  if (lua_type(L, -1) != LUA_TFUNCTION)
    return luaL_error(L, "%s '%s' needs a function '%s'", sieve_component_kind_to_string(kind), name, required);
  lua_pop(L, 1);
  static const char *const optional[] = {"create", "tell", "save", "load", "format", "parse", "build", NULL};
  for (guint i = 0; optional[i]; i++) {
    lua_getfield(L, 1, optional[i]);
    if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TFUNCTION)
      return luaL_error(L, "'%s' of '%s' must be a function", optional[i], name);
    lua_pop(L, 1);
  }
  g_autofree char *origin = sieve__lua_where(L, 1, NULL);

  SieveLuaDef *def = find_rebindable(host->registry, kind, name, origin);
  if (def != NULL) {
    lua_pushvalue(L, 1);
    g_mutex_lock(&defs_lock);
    bind_def(def, host, luaL_ref(L, LUA_REGISTRYINDEX));
    g_mutex_unlock(&defs_lock);
    return 0;
  }
  def = g_new0(SieveLuaDef, 1);
  def->kind = kind;
  def->strings = g_ptr_array_new_with_free_func(g_free);
  def->bindings = g_array_new(FALSE, FALSE, sizeof(Binding));
  def->name = (char *) sieve__lua_def_keep(def, g_strdup(name));
  def->origin = (char *) sieve__lua_def_keep(def, g_steal_pointer(&origin));
  /* Keep the half-built definition reachable: a Lua error below leaves it
   * in the list, unregistered and without a host, never used. */
  g_mutex_lock(&defs_lock);
  if (defs == NULL) {
    defs = g_ptr_array_new();
    defs_by_spec = g_hash_table_new(NULL, NULL);
  }
  g_ptr_array_add(defs, def);
  g_mutex_unlock(&defs_lock);

  sieve__lua_def_read_options(L, def, 1);
  lua_getfield(L, 1, "summary");
  def->info.summary = sieve__lua_def_keep(def, g_strdup(luaL_optstring(L, -1, "written in Lua")));
  lua_pop(L, 1);
  if (kind == SIEVE_KIND_EVALUATOR) {
    lua_getfield(L, 1, "fidelity");
    if (lua_istable(L, -1)) {
      lua_getfield(L, -1, "name");
      lua_getfield(L, -2, "min");
      lua_getfield(L, -3, "max");
      lua_getfield(L, -4, "integer");
      def->fidelity.name = sieve__lua_def_keep(def, g_strdup(luaL_optstring(L, -4, "fidelity")));
      def->fidelity.min = luaL_checknumber(L, -3);
      def->fidelity.max = luaL_checknumber(L, -2);
      def->fidelity.integer = lua_toboolean(L, -1);
      if (!(def->fidelity.min > 0 && def->fidelity.min <= def->fidelity.max))
        return luaL_error(L, "fidelity of '%s' needs 0 < min <= max", name);
      def->has_fidelity = TRUE;
      lua_pop(L, 4);
    }
    lua_pop(L, 1);
  }
  if (kind == SIEVE_KIND_SPACE) {
    lua_getfield(L, 1, "format");
    lua_getfield(L, 1, "parse");
    if (lua_isnil(L, -1) != lua_isnil(L, -2))
      return luaL_error(L, "space '%s' must define both format and parse, or neither", name);
    def->has_format = !lua_isnil(L, -1);
    lua_pop(L, 2);
    lua_getfield(L, 1, "build");
    def->has_build = !lua_isnil(L, -1);
    lua_pop(L, 1);
    sieve__lua_def_read_probe(L, def, 1);
    sieve__lua_impl_space_class_init(def);
  }
  def->info.kind = kind;
  def->info.name = def->name;
  def->info.options = def->spec;
  def->info.klass = kind == SIEVE_KIND_OPTIMIZER   ? (gconstpointer) &sieve__lua_impl_optimizer_class
                    : kind == SIEVE_KIND_EVALUATOR ? (gconstpointer) &sieve__lua_impl_evaluator_class
                                                   : (gconstpointer) &def->klass;
  GError *error = NULL;
  if (!sieve__registry_add_from(host->registry, &def->info, def->origin, &error)) {
    /* The registry names the script ("file: kind 'name': ..."): said at
     * the line of this call instead (pcall'ed directly too), once. */
    guint line;
    char *file = sieve__lua_where(L, 1, &line);
    const char *message = error->message;
    size_t n = strlen(def->origin);
    if (strncmp(message, def->origin, n) == 0 && strncmp(message + n, ": ", 2) == 0)
      message += n + 2;
    lua_pushfstring(L, "%s:%d: %s", file, (int) line, message);
    g_free(file); /* before raising: it skips C cleanups */
    g_error_free(error);
    return lua_error(L);
  }
  lua_pushvalue(L, 1);
  int ref = luaL_ref(L, LUA_REGISTRYINDEX);
  g_mutex_lock(&defs_lock);
  g_hash_table_insert(defs_by_spec, def->spec, def);
  bind_def(def, host, ref);
  g_mutex_unlock(&defs_lock);
  return 0;
}

static int
register_optimizer(lua_State *L)
{
  return register_component(L, SIEVE_KIND_OPTIMIZER);
}

static int
register_space(lua_State *L)
{
  return register_component(L, SIEVE_KIND_SPACE);
}

static int
register_evaluator(lua_State *L)
{
  return register_component(L, SIEVE_KIND_EVALUATOR);
}

static const luaL_Reg register_funcs[] = {
    {"register_optimizer", register_optimizer},
    {"register_space", register_space},
    {"register_evaluator", register_evaluator},
    {NULL, NULL},
};

void
sieve__lua_open_register(lua_State *L, int sieve_idx)
{
  sieve__lua_set_funcs(L, sieve_idx, register_funcs);
}
