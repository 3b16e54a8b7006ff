/* sieve: components written in Lua.
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
 * Each instance gets `self`: {space, rng (optimizers: seeded with the
 * study's seed), options, study, state}.  Determinism and resume: the
 * engine saves an optimizer after every ask and tell as {rng, state}, where
 * state is self.state (or what the optional save(self) returns, given back
 * to load(self, saved)); so an optimizer that keeps what it learns in
 * self.state and draws only from self.rng continues exactly after a kill.
 *
 * The C side finds a definition from the option table its instance was
 * validated against (each definition has its own), because the component
 * classes' create() gets the options but not the component.
 */
#include "sieve-config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lua/lua-private.h"
#include "core/core-private.h"

typedef struct {
  SieveComponentKind kind;
  char *name;
  char *origin;           /* the script that registered it */
  SieveComponentInfo info;
  SieveOptionSpec *spec;  /* owned, with strings in `strings` */
  GPtrArray *strings;
  SieveFidelity fidelity; /* evaluators that declared one */
  gboolean has_fidelity;
  gboolean has_format;    /* spaces */
  gboolean has_build;     /* spaces that build networks */
  char **probe;           /* spaces: "option=value" of `probe`, NULL-terminated (in strings), or NULL */
  char **builtin_probe;   /* the same as "options.option=value", for the builtin `lua` space */
  SieveSpaceClass klass;  /* spaces: what the script defines (format, build, probe scale) */
  SieveSpaceClass builtin_klass; /* the same for an instance of the builtin `lua` space */
  SieveLuaHost *host;     /* the latest live binding's host, NULL when none is left */
  int table_ref;          /* the definition table in host's registry */
  GArray *bindings;       /* Binding: the same script run by several hosts, latest last */
} LuaDef;

/* The same script may run in several hosts at once (a script that runs an
 * experiment loading that script too): the latest one serves, and when it
 * closes the one before it serves again. */
typedef struct {
  SieveLuaHost *host;
  int table_ref;
} Binding;

static void
bind_def(LuaDef *def, SieveLuaHost *host, int table_ref)
{
  Binding b = {host, table_ref};
  g_array_append_val(def->bindings, b);
  def->host = host;
  def->table_ref = table_ref;
}

typedef struct {
  LuaDef *def;
  SieveLuaHost *host;
  SieveLuaHost *own_host; /* the builtin `lua` component's private host */
  int self_ref;
  SieveSpace *space;      /* borrowed */
} LuaInstance;

/* Definitions live as long as the process, like a resident plugin's static
 * tables, because registries point into them. */
static GMutex defs_lock;
static GHashTable *defs_by_spec; /* const SieveOptionSpec* -> LuaDef* */
static GPtrArray *defs;          /* LuaDef*, all of them */

static const SieveOptimizerClass lua_optimizer_class;
static const SieveEvaluatorClass lua_evaluator_class;
static const SieveSpaceClass lua_space_class;
static gpointer space_create(SieveSpace *space, const SieveOptions *options, GError **error);
static void optimizer_destroy(gpointer instance);
static char *space_format(gpointer instance, const SieveSpace *space, const SieveGenotype *genotype);
static SieveGenotype *space_parse(gpointer instance, const SieveSpace *space, const char *text, GError **error);
static SieveGraph *space_build(gpointer instance, const SieveSpace *space, const SieveGenotype *genotype,
                               GError **error);

/* ---- helpers shared with the bindings -------------------------------------- */

SieveOptions *
sieve__lua_check_options(lua_State *L, int idx, const SieveOptionSpec *spec, const char *context, GError **error)
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

const SieveComponent *
sieve__lua_check_component(lua_State *L, SieveComponentKind kind, const char *name)
{
  GError *error = NULL;
  const SieveComponent *c = sieve_registry_require(sieve__lua_host(L)->registry, kind, name, NULL, &error);
  if (c == NULL)
    sieve__lua_error_gerror(L, error);
  return c;
}

static LuaDef *
def_for_options(const SieveOptions *options)
{
  if (options == NULL)
    return NULL;
  g_mutex_lock(&defs_lock);
  LuaDef *def = defs_by_spec ? g_hash_table_lookup(defs_by_spec, sieve_options_spec(options)) : NULL;
  g_mutex_unlock(&defs_lock);
  return def;
}

void
sieve__lua_components_forget_host(SieveLuaHost *host)
{
  g_mutex_lock(&defs_lock);
  for (guint i = 0; defs && i < defs->len; i++) {
    LuaDef *def = defs->pdata[i];
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

/* ---- option tables declared in Lua ------------------------------------------ */

static const char *
keep(LuaDef *def, char *owned)
{
  g_ptr_array_add(def->strings, owned);
  return owned;
}

static const char *const option_types[] = {"bool", "int", "float", "string", "choice", "path", "strings", "any", NULL};
static const SieveOptionType option_type_values[] = {
    SIEVE_OPTION_TYPE_BOOL,   SIEVE_OPTION_TYPE_INT,  SIEVE_OPTION_TYPE_FLOAT,       SIEVE_OPTION_TYPE_STRING,
    SIEVE_OPTION_TYPE_CHOICE, SIEVE_OPTION_TYPE_PATH, SIEVE_OPTION_TYPE_STRING_LIST, SIEVE_OPTION_TYPE_NODE,
};

/* The YAML text of a Lua default. (transfer full) */
static char *
default_text(lua_State *L, int idx)
{
  switch (lua_type(L, idx)) {
  case LUA_TBOOLEAN:
    return g_strdup(lua_toboolean(L, idx) ? "true" : "false");
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx))
      return g_strdup_printf("%" G_GINT64_FORMAT, (gint64) lua_tointeger(L, idx));
    return sieve_text_format_double(lua_tonumber(L, idx));
  case LUA_TSTRING:
    return g_strdup(lua_tostring(L, idx));
  case LUA_TTABLE: {
    GError *error = NULL;
    char *text = sieve__lua_to_yaml_flow(L, idx, &error);
    g_clear_error(&error);
    return text;
  }
  default:
    return NULL;
  }
}

/* One entry of `options`: a table {type=, default=, min=, max=, choices=,
 * help=} or just a default value whose Lua type gives the option's. */
static void
read_option(lua_State *L, LuaDef *def, const char *name, int idx, SieveOptionSpec *o)
{
  idx = lua_absindex(L, idx);
  memset(o, 0, sizeof *o);
  o->name = keep(def, g_strdup(name));
  if (lua_type(L, idx) != LUA_TTABLE) {
    switch (lua_type(L, idx)) {
    case LUA_TBOOLEAN:
      o->type = SIEVE_OPTION_TYPE_BOOL;
      break;
    case LUA_TNUMBER:
      o->type = lua_isinteger(L, idx) ? SIEVE_OPTION_TYPE_INT : SIEVE_OPTION_TYPE_FLOAT;
      break;
    case LUA_TSTRING:
      o->type = SIEVE_OPTION_TYPE_STRING;
      break;
    default:
      luaL_error(L, "option '%s' of '%s': give a default value or a table {type = ..., default = ...}", name,
                 def->name);
    }
    o->default_text = keep(def, default_text(L, idx));
    return;
  }
  lua_getfield(L, idx, "type");
  const char *type = luaL_optstring(L, -1, NULL);
  lua_getfield(L, idx, "default");
  int dflt = lua_gettop(L);
  if (type == NULL) {
    if (lua_isnil(L, dflt))
      luaL_error(L, "option '%s' of '%s' needs a type (%s) or a default", name, def->name, "bool, int, float, string, "
                                                                                           "choice, path, strings, any");
    read_option(L, def, name, dflt, o);
  } else {
    guint k = 0;
    while (option_types[k] && strcmp(option_types[k], type) != 0)
      k++;
    if (option_types[k] == NULL)
      luaL_error(L, "option '%s' of '%s': unknown type '%s' (bool, int, float, string, choice, path, strings, any)",
                 name, def->name, type);
    o->type = option_type_values[k];
    if (!lua_isnil(L, dflt))
      o->default_text = keep(def, default_text(L, dflt));
    else if (o->type != SIEVE_OPTION_TYPE_NODE && o->type != SIEVE_OPTION_TYPE_STRING_LIST)
      o->flags |= SIEVE_OPTION_REQUIRED;
  }
  lua_getfield(L, idx, "min");
  if (lua_isnumber(L, -1)) {
    o->min = lua_tonumber(L, -1);
    o->flags |= SIEVE_OPTION_HAS_MIN;
  }
  lua_getfield(L, idx, "max");
  if (lua_isnumber(L, -1)) {
    o->max = lua_tonumber(L, -1);
    o->flags |= SIEVE_OPTION_HAS_MAX;
  }
  lua_getfield(L, idx, "help");
  if (lua_type(L, -1) == LUA_TSTRING)
    o->help = keep(def, g_strdup(lua_tostring(L, -1)));
  lua_getfield(L, idx, "choices");
  if (o->type == SIEVE_OPTION_TYPE_CHOICE) {
    if (!lua_istable(L, -1) || lua_rawlen(L, -1) == 0)
      luaL_error(L, "option '%s' of '%s' is a choice: give choices = {...}", name, def->name);
    lua_Integer n = (lua_Integer) lua_rawlen(L, -1);
    const char **choices = g_new0(const char *, n + 1);
    keep(def, (char *) choices);
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, -1, i);
      if (lua_type(L, -1) != LUA_TSTRING)
        luaL_error(L, "option '%s' of '%s': choices must be strings", name, def->name);
      choices[i - 1] = keep(def, g_strdup(lua_tostring(L, -1)));
      lua_pop(L, 1);
    }
    o->choices = choices;
  }
  lua_settop(L, idx);
}

static int
compare_options(const void *a, const void *b)
{
  return strcmp(((const SieveOptionSpec *) a)->name, ((const SieveOptionSpec *) b)->name);
}

/* def->spec from the `options` field of the definition at idx, sorted by
 * name (Lua tables have no order). */
static void
read_options(lua_State *L, LuaDef *def, int idx)
{
  lua_getfield(L, idx, "options");
  int opts = lua_gettop(L);
  if (!lua_isnil(L, opts) && !lua_istable(L, opts))
    luaL_error(L, "'options' of '%s' must be a table {name = {type = ..., default = ...}}", def->name);
  guint n = 0;
  if (!lua_isnil(L, opts)) {
    lua_pushnil(L);
    while (lua_next(L, opts) != 0) {
      lua_pop(L, 1);
      n++;
    }
  }
  /* Owned by the definition from the start, so a Lua error below leaks nothing. */
  def->spec = g_new0(SieveOptionSpec, n + 1); /* the zeroed last entry is SIEVE_OPTION_END */
  keep(def, (char *) def->spec);
  guint i = 0;
  if (!lua_isnil(L, opts)) {
    lua_pushnil(L);
    while (lua_next(L, opts) != 0) {
      if (lua_type(L, -2) != LUA_TSTRING)
        luaL_error(L, "'options' of '%s': option names must be strings", def->name);
      read_option(L, def, lua_tostring(L, -2), -1, &def->spec[i++]);
      lua_pop(L, 1);
    }
  }
  qsort(def->spec, n, sizeof(SieveOptionSpec), compare_options);
  lua_pop(L, 1);
}

static int
compare_strings(const void *a, const void *b)
{
  return strcmp(*(char *const *) a, *(char *const *) b);
}

/* def->probe from the `probe` field of a space definition: overrides of
 * its own options ({C = 8, N = 1}) under which build() makes the small
 * networks a functional hash runs (SieveSpaceClass.probe_options). */
static void
read_probe(lua_State *L, LuaDef *def, int idx)
{
  lua_getfield(L, idx, "probe");
  int probe = lua_gettop(L);
  if (lua_isnil(L, probe)) {
    lua_pop(L, 1);
    return;
  }
  if (!lua_istable(L, probe))
    luaL_error(L, "'probe' of '%s' must be a table {option = value} of its options", def->name);
  guint n = 0;
  lua_pushnil(L);
  while (lua_next(L, probe) != 0) {
    lua_pop(L, 1);
    n++;
  }
  /* Owned by the definition before anything can raise. */
  def->probe = g_new0(char *, n + 1);
  keep(def, (char *) def->probe);
  guint i = 0;
  lua_pushnil(L);
  while (lua_next(L, probe) != 0) {
    const char *key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
    gboolean known = FALSE;
    for (const SieveOptionSpec *o = def->spec; key && o->name; o++)
      known |= strcmp(o->name, key) == 0;
    if (!known)
      luaL_error(L, "'probe' of '%s': '%s' is not one of its options", def->name, key ? key : "(not a string)");
    int t = lua_type(L, -1);
    if (t != LUA_TNUMBER && t != LUA_TSTRING && t != LUA_TBOOLEAN)
      luaL_error(L, "'probe' of '%s': option '%s' needs a number, string or boolean, got a %s", def->name, key,
                 luaL_typename(L, -1));
    g_autofree char *value = default_text(L, -1);
    def->probe[i++] = (char *) keep(def, g_strdup_printf("%s=%s", key, value));
    lua_pop(L, 1);
  }
  /* Lua tables have no order: sorted, so the probe scale reads the same every run. */
  qsort(def->probe, n, sizeof(char *), compare_strings);
  def->builtin_probe = g_new0(char *, n + 1);
  keep(def, (char *) def->builtin_probe);
  for (i = 0; i < n; i++)
    def->builtin_probe[i] = (char *) keep(def, g_strconcat("options.", def->probe[i], NULL));
  lua_pop(L, 1);
}

/* ---- registration ------------------------------------------------------------ */

static const char *const kind_fields[][4] = {
    [SIEVE_KIND_SPACE] = {"create", NULL},
    [SIEVE_KIND_OPTIMIZER] = {"ask", NULL},
    [SIEVE_KIND_EVALUATOR] = {"evaluate", NULL},
};

/* A definition of the same name and kind from the same script (an
 * experiment loaded twice in one process) takes the new host. */
static LuaDef *
find_rebindable(SieveRegistry *registry, SieveComponentKind kind, const char *name, const char *origin)
{
  const SieveComponent *c = sieve_registry_lookup(registry, kind, name);
  if (c == NULL)
    return NULL;
  g_mutex_lock(&defs_lock);
  LuaDef *def = defs_by_spec ? g_hash_table_lookup(defs_by_spec, sieve_component_get_info(c)->options) : NULL;
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

  LuaDef *def = find_rebindable(host->registry, kind, name, origin);
  if (def != NULL) {
    lua_pushvalue(L, 1);
    g_mutex_lock(&defs_lock);
    bind_def(def, host, luaL_ref(L, LUA_REGISTRYINDEX));
    g_mutex_unlock(&defs_lock);
    return 0;
  }
  def = g_new0(LuaDef, 1);
  def->kind = kind;
  def->strings = g_ptr_array_new_with_free_func(g_free);
  def->bindings = g_array_new(FALSE, FALSE, sizeof(Binding));
  def->name = (char *) keep(def, g_strdup(name));
  def->origin = (char *) keep(def, g_steal_pointer(&origin));
  /* Keep the half-built definition reachable: a Lua error below leaves it
   * in the list, unregistered and without a host, never used. */
  g_mutex_lock(&defs_lock);
  if (defs == NULL) {
    defs = g_ptr_array_new();
    defs_by_spec = g_hash_table_new(NULL, NULL);
  }
  g_ptr_array_add(defs, def);
  g_mutex_unlock(&defs_lock);

  read_options(L, def, 1);
  lua_getfield(L, 1, "summary");
  def->info.summary = keep(def, g_strdup(luaL_optstring(L, -1, "written in Lua")));
  lua_pop(L, 1);
  if (kind == SIEVE_KIND_EVALUATOR) {
    lua_getfield(L, 1, "fidelity");
    if (lua_istable(L, -1)) {
      lua_getfield(L, -1, "name");
      lua_getfield(L, -2, "min");
      lua_getfield(L, -3, "max");
      lua_getfield(L, -4, "integer");
      def->fidelity.name = keep(def, g_strdup(luaL_optstring(L, -4, "fidelity")));
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
    read_probe(L, def, 1);
    /* The class says what exists: sieve_space_can_build() and the generic
     * text form follow from it. */
    def->klass = (SieveSpaceClass){
        .create = space_create,
        .destroy = optimizer_destroy,
        .format = def->has_format ? space_format : NULL,
        .parse = def->has_format ? space_parse : NULL,
        .build = def->has_build ? space_build : NULL,
        .probe_options = (const char *const *) def->probe,
    };
    /* Through the builtin `lua` space the script's options are the
     * builtin's `options` map: the same overrides, one level down. */
    def->builtin_klass = def->klass;
    def->builtin_klass.probe_options = (const char *const *) def->builtin_probe;
  }
  def->info.kind = kind;
  def->info.name = def->name;
  def->info.options = def->spec;
  def->info.klass = kind == SIEVE_KIND_OPTIMIZER   ? (gconstpointer) &lua_optimizer_class
                    : kind == SIEVE_KIND_EVALUATOR ? (gconstpointer) &lua_evaluator_class
                                                   : (gconstpointer) &def->klass;
  GError *error = NULL;
  if (!sieve__registry_add_from(host->registry, &def->info, def->origin, &error))
    return sieve__lua_error_gerror(L, error);
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

/* ---- instances ---------------------------------------------------------------- */

/* Pushes the definition's function `field` (or nil) and self. */
static void
push_method(LuaInstance *inst, const char *field)
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
static gboolean
on_host_thread(LuaInstance *inst, const char *field, GError **error)
{
  if (G_LIKELY(g_thread_self() == inst->host->thread))
    return TRUE;
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED,
              "%s '%s', %s(): called from another thread than the one running its Lua script (Lua components run "
              "on one thread: use workers: 1)",
              sieve_component_kind_to_string(inst->def->kind), inst->def->name, field);
  return FALSE;
}

static gboolean
call_method(LuaInstance *inst, const char *field, int nargs, int nresults, GError **error)
{
  if (!sieve__lua_call(inst->host, nargs + 1, nresults, error)) {
    g_prefix_error(error, "%s '%s', %s(): ", sieve_component_kind_to_string(inst->def->kind), inst->def->name, field);
    return FALSE;
  }
  return TRUE;
}

static gboolean
has_method(LuaInstance *inst, const char *field)
{
  lua_State *L = inst->host->L;
  lua_rawgeti(L, LUA_REGISTRYINDEX, inst->def->table_ref);
  lua_getfield(L, -1, field);
  gboolean has = lua_isfunction(L, -1);
  lua_pop(L, 2);
  return has;
}

static void
instance_free(LuaInstance *inst)
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

/* A new instance of def: self = {name, space, options, state = {}} plus what
 * the kind adds (pushed by the caller's extra function), then create(self).
 * For spaces, create gets the builder too. */
static LuaInstance *
instance_new(LuaDef *def, SieveLuaHost *own_host, SieveSpace *space, const SieveOptions *options,
             const SieveStudyInfo *study, GError **error)
{
  if (def->host == NULL) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED,
                "%s '%s': the Lua script that registered it (%s) is no longer running",
                sieve_component_kind_to_string(def->kind), def->name, def->origin);
    sieve_lua_host_free(own_host);
    return NULL;
  }
  LuaInstance *inst = g_new0(LuaInstance, 1);
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
      lua_newtable(L);
      lua_pushstring(L, study->fidelity->name);
      lua_setfield(L, -2, "name");
      lua_pushnumber(L, study->fidelity->min);
      lua_setfield(L, -2, "min");
      lua_pushnumber(L, study->fidelity->max);
      lua_setfield(L, -2, "max");
      lua_pushboolean(L, study->fidelity->integer);
      lua_setfield(L, -2, "integer");
      lua_setfield(L, -2, "fidelity");
    }
    lua_setfield(L, -2, "study");
  }
  inst->self_ref = luaL_ref(L, LUA_REGISTRYINDEX);

  if (def->kind == SIEVE_KIND_SPACE) {
    push_method(inst, "create"); /* create, self */
    sieve__lua_push_builder(L, space);
    int arg = lua_gettop(L);
    lua_pushvalue(L, arg);
    lua_insert(L, arg - 2); /* a reference below the call, to invalidate it after */
    int builder = arg - 2;
    gboolean ok = call_method(inst, "create", 1, 0, error);
    sieve__lua_invalidate_builder(L, builder);
    lua_settop(L, builder - 1);
    if (!ok) {
      instance_free(inst);
      return NULL;
    }
  } else if (has_method(inst, "create")) {
    push_method(inst, "create");
    if (!call_method(inst, "create", 0, 0, error)) {
      instance_free(inst);
      return NULL;
    }
  }
  return inst;
}

/* ---- the builtin `lua` components ------------------------------------------------ */

static const SieveOptionSpec builtin_options[] = {
    SIEVE_OPTION_PATH("script", NULL, "Lua file that registers the component (sieve.register_optimizer{...} ...)"),
    {"name", SIEVE_OPTION_TYPE_STRING, NULL, 0, 0, NULL,
     "which of the script's components of this kind to use (default: its only one)", 0, {NULL}},
    SIEVE_OPTION_NODE("options", "options of the script's component, checked against the table it declares"),
    SIEVE_OPTION_NODE("lua", "sandbox and limits {allow, path, instructions, seconds, memory_mb} (default: the "
                             "experiment's lua section; 60 seconds per call)"),
    SIEVE_OPTION_END,
};


static LuaInstance *
builtin_instance_new(SieveComponentKind kind, SieveSpace *space, const SieveOptions *options,
                     const SieveStudyInfo *study, GError **error)
{
  const char *script = sieve_options_get_string(options, "script");
  const char *wanted = sieve_options_get_string(options, "name");
  g_autofree char *origin_dir = g_path_get_dirname(sieve_node_origin(sieve_options_node(options, "script")));
  g_autofree char *base_dir = g_canonicalize_filename(origin_dir, NULL);
  SieveLuaSettings defaults, settings;
  sieve_lua_settings_init(&defaults);
  defaults.seconds = SIEVE_LUA_COMPONENT_SECONDS;
  gboolean ok = sieve_lua_settings_read(sieve_options_get_node(options, "lua"), base_dir, &defaults, FALSE,
                                        &settings, error);
  sieve_lua_settings_clear(&defaults);
  if (!ok)
    return NULL;
  SieveLuaHost *host = sieve_lua_host_new(&settings, NULL, error);
  sieve_lua_settings_clear(&settings);
  if (host == NULL || !sieve_lua_host_run_file(host, script, NULL, error)) {
    sieve_lua_host_free(host);
    return NULL;
  }
  /* The script's components of this kind. */
  LuaDef *def = NULL;
  guint found = 0;
  GString *names = g_string_new(NULL);
  g_mutex_lock(&defs_lock);
  for (guint i = 0; defs && i < defs->len; i++) {
    LuaDef *d = defs->pdata[i];
    if (d->host != host || d->kind != kind)
      continue;
    g_string_append_printf(names, "%s%s", found ? ", " : "", d->name);
    found++;
    if (wanted == NULL || strcmp(wanted, d->name) == 0)
      def = wanted || found == 1 ? d : NULL;
  }
  g_mutex_unlock(&defs_lock);
  g_autofree char *listed = g_string_free(names, FALSE);
  const char *kind_name = sieve_component_kind_to_string(kind);
  if (def == NULL || (wanted == NULL && found > 1)) {
    if (found == 0)
      sieve_options_set_error(options, "script", error, "%s registers no %s (call sieve.register_%s{...})", script,
                              kind_name, kind_name);
    else if (wanted == NULL)
      sieve_options_set_error(options, "script", error, "%s registers several %ss (%s): say which with 'name'",
                              script, kind_name, listed);
    else
      sieve_options_set_error(options, "name", error, "%s registers no %s '%s' (it has: %s)", script, kind_name,
                              wanted, listed);
    sieve_lua_host_free(host);
    return NULL;
  }
  g_autofree char *context = g_strdup_printf("%s '%s' of %s", kind_name, def->name, script);
  const SieveNode *opts_node = sieve_options_get_node(options, "options");
  if (opts_node != NULL && sieve_node_kind(opts_node) != SIEVE_NODE_MAP) {
    sieve_node_set_error(error, opts_node, "'options' must be a map of the script's options");
    sieve_lua_host_free(host);
    return NULL;
  }
  g_autoptr(SieveOptions) own = sieve_options_new(def->spec, opts_node, NULL, base_dir, context, error);
  if (own == NULL) {
    sieve_lua_host_free(host);
    return NULL;
  }
  return instance_new(def, host, space, own, study, error);
}

static LuaInstance *
any_instance_new(SieveComponentKind kind, SieveSpace *space, const SieveOptions *options,
                 const SieveStudyInfo *study, GError **error)
{
  if (options != NULL && sieve_options_spec(options) == builtin_options)
    return builtin_instance_new(kind, space, options, study, error);
  LuaDef *def = def_for_options(options);
  if (def == NULL) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "a Lua %s needs its validated options",
                sieve_component_kind_to_string(kind));
    return NULL;
  }
  return instance_new(def, NULL, space, options, study, error);
}

/* ---- optimizers ---------------------------------------------------------------- */

static gpointer
optimizer_create(const SieveSpace *space, const SieveOptions *options, const SieveStudyInfo *study, GError **error)
{
  return any_instance_new(SIEVE_KIND_OPTIMIZER, (SieveSpace *) space, options, study, error);
}

static void
optimizer_destroy(gpointer instance)
{
  instance_free(instance);
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
  LuaInstance *inst = instance;
  if (!on_host_thread(inst, "ask", error))
    return FALSE;
  lua_State *L = inst->host->L;
  int top = lua_gettop(L);
  push_method(inst, "ask");
  lua_pushinteger(L, n);
  if (!call_method(inst, "ask", 1, 1, error))
    return FALSE;
  if (!lua_istable(L, -1)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "optimizer '%s': ask() must return a list of genotypes, got a %s",
                inst->def->name, luaL_typename(L, -1));
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
    if (c == NULL) {
      g_propagate_prefixed_error(error, local, "optimizer '%s': ask() item %" G_GINT64_FORMAT ": ", inst->def->name,
                                 (gint64) i);
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
  LuaInstance *inst = instance;
  if (!on_host_thread(inst, "tell", error))
    return FALSE;
  if (!has_method(inst, "tell"))
    return TRUE;
  lua_State *L = inst->host->L;
  push_method(inst, "tell");
  lua_newtable(L);
  int trial = lua_gettop(L);
  lua_pushinteger(L, sieve_candidate_get_trial(candidate));
  lua_setfield(L, trial, "number");
  lua_getfield(L, trial - 1, "space");
  sieve__lua_push_genotype(L, -1, sieve_genotype_copy(sieve_candidate_get_genotype(candidate)));
  lua_setfield(L, trial, "genotype");
  lua_pop(L, 1);
  lua_pushstring(L, sieve_candidate_get_text(candidate));
  lua_setfield(L, trial, "text");
  double fidelity = sieve_candidate_get_fidelity(candidate);
  if (!isnan(fidelity)) {
    lua_pushnumber(L, fidelity);
    lua_setfield(L, trial, "fidelity");
  }
  lua_pushstring(L, sieve_status_to_string(sieve_result_get_status(result)));
  lua_setfield(L, trial, "status");
  lua_pushstring(L, sieve_result_get_reason(result));
  lua_setfield(L, trial, "reason");
  lua_pushnumber(L, sieve_result_get_cost(result));
  lua_setfield(L, trial, "cost");
  lua_newtable(L);
  for (guint i = 0; i < sieve_result_n_metrics(result); i++) {
    lua_pushnumber(L, sieve_result_metric_value(result, i));
    lua_setfield(L, -2, sieve_result_metric_name(result, i));
  }
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
  return call_method(inst, "tell", 1, 0, error);
}

/* The saved state: {rng: (tttt), state: self.state or save(self)}. */
static GVariant *
optimizer_save(gpointer instance, GError **error)
{
  LuaInstance *inst = instance;
  if (!on_host_thread(inst, "save", error))
    return NULL;
  lua_State *L = inst->host->L;
  int top = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, inst->self_ref);
  int self = lua_gettop(L);
  lua_getfield(L, self, "rng");
  if (!luaL_testudata(L, -1, SIEVE_LUA_RNG)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "optimizer '%s': self.rng is no longer a sieve.rng",
                inst->def->name);
    lua_settop(L, top);
    return NULL;
  }
  GVariant *rng = sieve_rng_save(sieve__lua_check_rng(L, -1));
  if (has_method(inst, "save")) {
    push_method(inst, "save");
    if (!call_method(inst, "save", 0, 1, error)) {
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
    g_prefix_error(error, "optimizer '%s': ", inst->def->name);
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
  LuaInstance *inst = instance;
  if (!on_host_thread(inst, "load", error))
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
  if (has_method(inst, "load")) {
    push_method(inst, "load");
    if (!sieve__lua_push_variant(L, state, space_idx, error)) {
      lua_settop(L, top);
      return FALSE;
    }
    gboolean ok = call_method(inst, "load", 1, 0, error);
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

static const SieveOptimizerClass lua_optimizer_class = {
    .create = optimizer_create,
    .destroy = optimizer_destroy,
    .ask = optimizer_ask,
    .tell = optimizer_tell,
    .save = optimizer_save,
    .load = optimizer_load,
};

/* ---- evaluators ---------------------------------------------------------------- */

static gpointer
evaluator_create(const SieveSpace *space, const SieveOptions *options, GError **error)
{
  return any_instance_new(SIEVE_KIND_EVALUATOR, (SieveSpace *) space, options, NULL, error);
}

static SieveResult *
evaluator_evaluate(gpointer instance, const SieveCandidate *candidate, GError **error)
{
  LuaInstance *inst = instance;
  if (!on_host_thread(inst, "evaluate", error))
    return NULL;
  lua_State *L = inst->host->L;
  int top = lua_gettop(L);
  push_method(inst, "evaluate");
  lua_newtable(L);
  int c = lua_gettop(L);
  lua_getfield(L, c - 1, "space");
  sieve__lua_push_genotype(L, -1, sieve_genotype_copy(sieve_candidate_get_genotype(candidate)));
  lua_setfield(L, c, "genotype");
  lua_pop(L, 1);
  lua_pushstring(L, sieve_candidate_get_text(candidate));
  lua_setfield(L, c, "text");
  lua_pushinteger(L, sieve_candidate_get_trial(candidate));
  lua_setfield(L, c, "number");
  double fidelity = sieve_candidate_get_fidelity(candidate);
  if (!isnan(fidelity)) {
    lua_pushnumber(L, fidelity);
    lua_setfield(L, c, "fidelity");
  }
  if (!call_method(inst, "evaluate", 1, 1, error))
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
  LuaInstance *inst = instance;
  return inst->def->has_fidelity ? &inst->def->fidelity : NULL;
}

static const SieveEvaluatorClass lua_evaluator_class = {
    .create = evaluator_create,
    .destroy = optimizer_destroy,
    .evaluate = evaluator_evaluate,
    .flags = 0, /* one Lua state: never from two threads at once */
    .fidelity = evaluator_fidelity,
};

/* ---- spaces ------------------------------------------------------------------------ */

static gpointer
space_create(SieveSpace *space, const SieveOptions *options, GError **error)
{
  LuaInstance *inst = any_instance_new(SIEVE_KIND_SPACE, space, options, NULL, error);
  /* The builtin `lua` space is whatever its script defines. */
  if (inst != NULL && sieve_options_spec(options) == builtin_options)
    sieve__space_set_class(space, &inst->def->builtin_klass);
  return inst;
}

/* format cannot fail by its C signature; a Lua error is reported and the
 * generic text stands in (and the round trip through parse will then fail
 * loudly at the next resume rather than silently). */
static char *
space_format(gpointer instance, const SieveSpace *space, const SieveGenotype *genotype)
{
  LuaInstance *inst = instance;
  if (inst == NULL || !inst->def->has_format)
    return sieve__space_generic_format(space, genotype);
  GError *thread_error = NULL;
  if (!on_host_thread(inst, "format", &thread_error)) {
    g_warning("%s", thread_error->message);
    g_error_free(thread_error);
    return sieve__space_generic_format(space, genotype);
  }
  lua_State *L = inst->host->L;
  int top = lua_gettop(L);
  push_method(inst, "format");
  lua_getfield(L, -1, "space");
  sieve__lua_push_genotype(L, -1, sieve_genotype_copy(genotype));
  lua_remove(L, -2);
  GError *error = NULL;
  if (call_method(inst, "format", 1, 1, &error) && lua_type(L, -1) == LUA_TSTRING) {
    char *text = g_strdup(lua_tostring(L, -1));
    lua_settop(L, top);
    return text;
  }
  g_warning("%s", error ? error->message : "space format() did not return a string");
  g_clear_error(&error);
  lua_settop(L, top);
  return sieve__space_generic_format(space, genotype);
}

static SieveGenotype *
space_parse(gpointer instance, const SieveSpace *space, const char *text, GError **error)
{
  LuaInstance *inst = instance;
  if (inst == NULL || !inst->def->has_format)
    return sieve__space_generic_parse(space, text, error);
  if (!on_host_thread(inst, "parse", error))
    return NULL;
  lua_State *L = inst->host->L;
  int top = lua_gettop(L);
  push_method(inst, "parse");
  lua_pushstring(L, text);
  if (!call_method(inst, "parse", 1, 2, error))
    return NULL;
  if (lua_isnil(L, -2)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "%s",
                lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "parse() returned nil");
    lua_settop(L, top);
    return NULL;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, inst->self_ref);
  lua_getfield(L, -1, "space");
  SieveGenotype *g = sieve__lua_to_genotype(L, top + 1, lua_gettop(L), error);
  lua_settop(L, top);
  return g;
}

/* build(self, genotype) must return a finished sieve.graph; the engine gets
 * a copy, so the script may keep its own (a cache, say). */
static SieveGraph *
space_build(gpointer instance, const SieveSpace *space, const SieveGenotype *genotype, GError **error)
{
  LuaInstance *inst = instance;
  if (!on_host_thread(inst, "build", error))
    return NULL;
  lua_State *L = inst->host->L;
  int top = lua_gettop(L);
  push_method(inst, "build");
  lua_getfield(L, -1, "space");
  sieve__lua_push_genotype(L, -1, sieve_genotype_copy(genotype));
  lua_remove(L, -2);
  if (!call_method(inst, "build", 1, 1, error))
    return NULL;
  gboolean finished = FALSE;
  const SieveGraph *graph = sieve__lua_to_graph(L, -1, &finished);
  if (graph == NULL || !finished) {
    if (graph != NULL)
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH,
                  "space '%s', build(): returned graph '%s', which is not finished (end with g:finish(output))",
                  inst->def->name, sieve_graph_name(graph));
    else
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH, "space '%s', build(): must return a sieve.graph, got %s",
                  inst->def->name, luaL_typename(L, -1));
    lua_settop(L, top);
    return NULL;
  }
  SieveGraph *copy = sieve_graph_copy(graph);
  lua_settop(L, top);
  return copy;
}

/* What the builtin `lua` space is until its script has run (create() then
 * sets the class of the script's definition). */
static const SieveSpaceClass lua_space_class = {
    .create = space_create,
    .destroy = optimizer_destroy,
};

/* ---- builtins -------------------------------------------------------------------- */

static const SieveComponentInfo builtin_infos[] = {
    {SIEVE_KIND_SPACE, "lua", "a search space written in Lua (script: a file calling sieve.register_space)",
     builtin_options, &lua_space_class, {NULL}},
    {SIEVE_KIND_OPTIMIZER, "lua", "an optimizer written in Lua (script: a file calling sieve.register_optimizer)",
     builtin_options, &lua_optimizer_class, {NULL}},
    {SIEVE_KIND_EVALUATOR, "lua", "an evaluator written in Lua (script: a file calling sieve.register_evaluator)",
     builtin_options, &lua_evaluator_class, {NULL}},
};

static gboolean
builtin_init(SieveRegistry *registry, GError **error)
{
  for (guint i = 0; i < G_N_ELEMENTS(builtin_infos); i++)
    if (!sieve_registry_add(registry, &builtin_infos[i], error))
      return FALSE;
  return TRUE;
}

static const SievePluginDescriptor builtin_plugin = {
    SIEVE_ABI_MAJOR, SIEVE_ABI_MINOR, "lua", SIEVE_VERSION, "components written in Lua", "MIT", builtin_init, {NULL}};

void
sieve_lua_register_static(void)
{
  GError *error = NULL;
  /* Only a descriptor this file got wrong can be refused. */
  if (!sieve_plugin_register_static(&builtin_plugin, &error))
    g_error("%s", error->message);
}

gboolean
sieve_lua_component_is_builtin(const SieveComponent *component)
{
  return component != NULL && sieve_component_get_info(component)->options == builtin_options;
}

void
sieve__lua_open_component(lua_State *L, int sieve_idx)
{
  lua_pushcfunction(L, register_optimizer);
  lua_setfield(L, sieve_idx, "register_optimizer");
  lua_pushcfunction(L, register_space);
  lua_setfield(L, sieve_idx, "register_space");
  lua_pushcfunction(L, register_evaluator);
  lua_setfield(L, sieve_idx, "register_evaluator");
}
