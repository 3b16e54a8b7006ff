/* sieve: the option table and the probe a component written in Lua
 * declares (lua-def.c), read into its definition: a SieveOptionSpec table
 * like a plugin's static one, owned by the definition, so that one
 * validation, `sieve plugins --describe` and the Lua constructor serve both.
 *
 *   options = {
 *     batch = {type = "int", default = 1, min = 1, max = 64, help = "..."},
 *     greedy = true,                        -- a default alone gives the type
 *   },
 *   probe = {C = 8, N = 1},                 -- spaces: their options at the probe scale
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lua/lua-private.h"

static const char *const option_types[] = {"bool", "int", "float", "string", "choice", "path", "strings", "any", NULL};
static const SieveOptionType option_type_values[] = {
    SIEVE_OPTION_TYPE_BOOL,   SIEVE_OPTION_TYPE_INT,  SIEVE_OPTION_TYPE_FLOAT,       SIEVE_OPTION_TYPE_STRING,
    SIEVE_OPTION_TYPE_CHOICE, SIEVE_OPTION_TYPE_PATH, SIEVE_OPTION_TYPE_STRING_LIST, SIEVE_OPTION_TYPE_NODE,
};

/* The YAML text of a Lua default or probe value (transfer full), as YAML
 * reads it back: a string double-quoted with escapes (a plain "a: b", "#x"
 * or "- x" would be a map, a comment, a list), except for a bool, int or
 * float option, where the text is the value, as it always was ({type =
 * "int", default = "5"}, probe = {C = "4"}: quoted, it would be a string,
 * which the option refuses); infinities and NaN as .inf/-.inf/.nan.  Raises,
 * naming the option, when the value has none (a function, a table with
 * mixed keys ...) rather than leave the option without its default. */
static char *
default_text(lua_State *L, int idx, const SieveLuaDef *def, const SieveOptionSpec *o, gboolean probe)
{
  const char *name = o->name;
  if ((o->type == SIEVE_OPTION_TYPE_BOOL || o->type == SIEVE_OPTION_TYPE_INT || o->type == SIEVE_OPTION_TYPE_FLOAT) &&
      lua_type(L, idx) == LUA_TSTRING)
    return g_strdup(lua_tostring(L, idx));
  /* A float or int option refuses NaN (sieve/options.h: no option takes
   * "not a number" to mean something), its default and its probe value
   * too: said here, at the line of the register_* call even when pcall
   * called it, with the option's type, and for a default what works. */
  if ((o->type == SIEVE_OPTION_TYPE_FLOAT || o->type == SIEVE_OPTION_TYPE_INT) && lua_type(L, idx) == LUA_TNUMBER &&
      isnan(lua_tonumber(L, idx))) {
    guint line;
    g_autofree char *file = sieve__lua_where(L, 1, &line);
    const char *type = o->type == SIEVE_OPTION_TYPE_INT ? "an int" : "a float";
    if (probe)
      lua_pushfstring(L, "%s:%d: 'probe' of '%s': option '%s' is %s option: it refuses NaN as a probe value, as it "
                         "does in a config",
                      file, (int) line, def->name, name, type);
    else
      lua_pushfstring(L, "%s:%d: option '%s' of '%s': %s option refuses NaN, as it does in a config; for a number "
                         "that may be unset, declare {type = \"any\", default = 0/0}",
                      file, (int) line, name, def->name, type);
    g_clear_pointer(&file, g_free); /* before raising: it skips C cleanups */
    lua_error(L);
  }
  GError *error = NULL;
  char *text = sieve__lua_to_yaml_flow(L, idx, &error);
  if (text == NULL) {
    g_prefix_error(&error, "option '%s' of '%s': default: ", name, def->name);
    sieve__lua_error_gerror(L, error);
  }
  return text;
}

/* One entry of `options`: a table {type=, default=, min=, max=, choices=,
 * help=} or just a default value whose Lua type gives the option's. */
static void
read_option(lua_State *L, SieveLuaDef *def, const char *name, int idx, SieveOptionSpec *o)
{
  idx = lua_absindex(L, idx);
  memset(o, 0, sizeof *o);
  o->name = sieve__lua_def_keep(def, g_strdup(name));
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
    o->default_text = sieve__lua_def_keep(def, default_text(L, idx, def, o, FALSE));
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
      o->default_text = sieve__lua_def_keep(def, default_text(L, dflt, def, o, FALSE));
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
    o->help = sieve__lua_def_keep(def, g_strdup(lua_tostring(L, -1)));
  lua_getfield(L, idx, "choices");
  if (o->type == SIEVE_OPTION_TYPE_CHOICE) {
    if (!lua_istable(L, -1) || lua_rawlen(L, -1) == 0)
      luaL_error(L, "option '%s' of '%s' is a choice: give choices = {...}", name, def->name);
    lua_Integer n = (lua_Integer) lua_rawlen(L, -1);
    const char **choices = g_new0(const char *, n + 1);
    sieve__lua_def_keep(def, (char *) choices);
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, -1, i);
      if (lua_type(L, -1) != LUA_TSTRING)
        luaL_error(L, "option '%s' of '%s': choices must be strings", name, def->name);
      choices[i - 1] = sieve__lua_def_keep(def, g_strdup(lua_tostring(L, -1)));
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
void
sieve__lua_def_read_options(lua_State *L, SieveLuaDef *def, int idx)
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
  sieve__lua_def_keep(def, (char *) def->spec);
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
void
sieve__lua_def_read_probe(lua_State *L, SieveLuaDef *def, int idx)
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
  sieve__lua_def_keep(def, (char *) def->probe);
  guint i = 0;
  lua_pushnil(L);
  while (lua_next(L, probe) != 0) {
    const char *key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
    const SieveOptionSpec *known = NULL;
    for (const SieveOptionSpec *o = def->spec; key && o->name; o++)
      if (strcmp(o->name, key) == 0)
        known = o;
    if (known == NULL)
      luaL_error(L, "'probe' of '%s': '%s' is not one of its options", def->name, key ? key : "(not a string)");
    int t = lua_type(L, -1);
    if (t != LUA_TNUMBER && t != LUA_TSTRING && t != LUA_TBOOLEAN)
      luaL_error(L, "'probe' of '%s': option '%s' needs a number, string or boolean, got a %s", def->name, key,
                 luaL_typename(L, -1));
    g_autofree char *value = default_text(L, -1, def, known, TRUE);
    def->probe[i++] = (char *) sieve__lua_def_keep(def, g_strdup_printf("%s=%s", key, value));
    lua_pop(L, 1);
  }
  /* Lua tables have no order: sorted, so the probe scale reads the same every run. */
  qsort(def->probe, n, sizeof(char *), compare_strings);
  def->builtin_probe = g_new0(char *, n + 1);
  sieve__lua_def_keep(def, (char *) def->builtin_probe);
  for (i = 0; i < n; i++)
    def->builtin_probe[i] = (char *) sieve__lua_def_keep(def, g_strconcat("options.", def->probe[i], NULL));
  lua_pop(L, 1);
}
