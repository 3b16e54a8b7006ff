/* sieve: binding (scripts call C): sieve.space, spaces, genotypes and the
 * space builder in Lua.
 *
 *   local space = sieve.space("nb201")
 *   local g = space:sample(rng)
 *   print(g:format(), g:get("edge_1_0"))     -- "|none~0|+...", "none"
 *   local h = g:copy():set("edge_1_0", "skip_connect")
 *   local net = space:build(h)                -- a sieve.graph (lua-bind-graph.c)
 *
 * A genotype userdata keeps its space userdata alive (user value 1); a
 * borrowed space (a component's) is invalidated when its owner frees it,
 * and then every use of it or of its genotypes is a Lua error.
 */
#include <math.h>
#include <string.h>

#include "lua/lua-private.h"

typedef struct {
  SieveSpace *space; /* NULL once freed or invalidated */
  gboolean owned;
  guint busy;        /* calls of a study, evaluator or optimizer on it now running (sieve__lua_space_busy) */
} SpaceBox;

typedef struct {
  SieveGenotype *genotype;
} GenotypeBox;

typedef struct {
  SieveSpace *space; /* NULL outside the create() call */
} BuilderBox;

static const char *const kind_names[] = {"categorical", "int", "float"};

/* ---- spaces ------------------------------------------------------------- */

void
sieve__lua_push_space(lua_State *L, SieveSpace *space, gboolean owned)
{
  SpaceBox *box = lua_newuserdatauv(L, sizeof(SpaceBox), 0);
  box->space = space;
  box->owned = owned;
  box->busy = 0;
  luaL_setmetatable(L, SIEVE_LUA_SPACE);
}

SieveSpace *
sieve__lua_check_space(lua_State *L, int idx)
{
  SpaceBox *box = luaL_checkudata(L, idx, SIEVE_LUA_SPACE);
  if (box->space == NULL)
    luaL_error(L, "this space is closed (its study or component has ended)");
  return box->space;
}

SieveSpace *
sieve__lua_to_space(lua_State *L, int idx)
{
  SpaceBox *box = luaL_testudata(L, idx, SIEVE_LUA_SPACE);
  return box ? box->space : NULL;
}

void
sieve__lua_invalidate_space(lua_State *L, int idx)
{
  SpaceBox *box = luaL_checkudata(L, idx, SIEVE_LUA_SPACE);
  if (!box->owned)
    box->space = NULL;
}

void
sieve__lua_space_busy(lua_State *L, int owner, int delta)
{
  lua_getiuservalue(L, owner, 1);
  SpaceBox *box = luaL_testudata(L, -1, SIEVE_LUA_SPACE);
  if (box != NULL)
    box->busy += delta;
  lua_pop(L, 1);
}

static void
space_release(SpaceBox *box)
{
  if (box->owned && box->space != NULL)
    sieve_space_free(box->space);
  box->space = NULL;
}

/* A real collection cannot come while a call runs on it (the call holds
 * it); a __gc reached some other way then leaves it alone. */
static int
space_gc(lua_State *L)
{
  SpaceBox *box = luaL_checkudata(L, 1, SIEVE_LUA_SPACE);
  if (box->busy == 0)
    space_release(box);
  return 0;
}

/* __close: a study, evaluator or optimizer running on the space holds its
 * pointer across the script's callbacks, so a close from one of them is an
 * error (no __gc can come then: the running call references the box). */
static int
space_close(lua_State *L)
{
  SpaceBox *box = luaL_checkudata(L, 1, SIEVE_LUA_SPACE);
  if (box->busy > 0)
    return luaL_error(L, "this space is in use by a running study, evaluator or optimizer call: close it after "
                         "that call returns");
  space_release(box);
  return 0;
}

static int
space_tostring(lua_State *L)
{
  SpaceBox *box = luaL_checkudata(L, 1, SIEVE_LUA_SPACE);
  if (box->space == NULL)
    lua_pushstring(L, "sieve.space (closed)");
  else
    lua_pushfstring(L, "sieve.space '%s' (%d decisions)", sieve_space_get_name(box->space),
                    (int) sieve_space_n_decisions(box->space));
  return 1;
}

/* A decision by 1-based index or by name; raises with a suggestion. */
static guint
check_decision(lua_State *L, const SieveSpace *space, int idx)
{
  guint n = sieve_space_n_decisions(space);
  if (lua_isinteger(L, idx)) {
    lua_Integer i = lua_tointeger(L, idx);
    if (i < 1 || (lua_Unsigned) i > n)
      luaL_error(L, "decision %I is out of range 1..%d", i, (int) n);
    return (guint) (i - 1);
  }
  const char *name = luaL_checkstring(L, idx);
  gint i = sieve_space_find(space, name);
  if (i < 0) {
    const char **names = g_new0(const char *, n + 1);
    for (guint k = 0; k < n; k++)
      names[k] = sieve_space_decision(space, k)->name;
    const char *guess = sieve_suggest(name, names);
    luaL_where(L, 1);
    lua_pushfstring(L, "space '%s' has no decision '%s'%s%s%s", sieve_space_get_name(space), name,
                    guess ? " (did you mean '" : "", guess ? guess : "", guess ? "'?)" : "");
    lua_concat(L, 2);
    g_free(names); /* before raising: it skips C cleanups */
    lua_error(L);
  }
  return (guint) i;
}

static void
push_decision(lua_State *L, const SieveSpace *space, guint i)
{
  const SieveDecision *d = sieve_space_decision(space, i);
  lua_newtable(L);
  lua_pushinteger(L, (lua_Integer) i + 1);
  lua_setfield(L, -2, "index");
  lua_pushstring(L, d->name);
  lua_setfield(L, -2, "name");
  lua_pushstring(L, kind_names[d->kind]);
  lua_setfield(L, -2, "kind");
  /* A composite space's decisions: the network's, or the recipe's. */
  lua_pushboolean(L, sieve_space_is_architecture(space, i));
  lua_setfield(L, -2, "architecture");
  if (d->kind == SIEVE_DECISION_CATEGORICAL) {
    lua_createtable(L, (int) d->n_choices, 0);
    for (guint k = 0; k < d->n_choices; k++) {
      lua_pushstring(L, d->choices[k]);
      lua_rawseti(L, -2, (lua_Integer) k + 1);
    }
    lua_setfield(L, -2, "choices");
  } else {
    if (d->kind == SIEVE_DECISION_INT) {
      lua_pushinteger(L, (lua_Integer) d->low);
      lua_setfield(L, -2, "low");
      lua_pushinteger(L, (lua_Integer) d->high);
      lua_setfield(L, -2, "high");
    } else {
      lua_pushnumber(L, d->low);
      lua_setfield(L, -2, "low");
      lua_pushnumber(L, d->high);
      lua_setfield(L, -2, "high");
    }
    lua_pushboolean(L, d->log);
    lua_setfield(L, -2, "log");
  }
  if (d->parent >= 0) {
    const SieveDecision *p = sieve_space_decision(space, (guint) d->parent);
    lua_pushstring(L, p->name);
    lua_setfield(L, -2, "parent");
    lua_newtable(L);
    lua_Integer n = 0;
    for (guint k = 0; k < p->n_choices && k < 64; k++)
      if (d->parent_mask & (G_GUINT64_CONSTANT(1) << k)) {
        lua_pushstring(L, p->choices[k]);
        lua_rawseti(L, -2, ++n);
      }
    lua_setfield(L, -2, "when");
  }
}

static int
space_decisions(lua_State *L)
{
  SieveSpace *space = sieve__lua_check_space(L, 1);
  guint n = sieve_space_n_decisions(space);
  lua_createtable(L, (int) n, 0);
  for (guint i = 0; i < n; i++) {
    push_decision(L, space, i);
    lua_rawseti(L, -2, (lua_Integer) i + 1);
  }
  return 1;
}

static int
space_decision(lua_State *L)
{
  SieveSpace *space = sieve__lua_check_space(L, 1);
  push_decision(L, space, check_decision(L, space, 2));
  return 1;
}

static int
space_len(lua_State *L)
{
  lua_pushinteger(L, sieve_space_n_decisions(sieve__lua_check_space(L, 1)));
  return 1;
}

static int
space_name(lua_State *L)
{
  lua_pushstring(L, sieve_space_get_name(sieve__lua_check_space(L, 1)));
  return 1;
}

static int
space_sample(lua_State *L)
{
  SieveSpace *space = sieve__lua_check_space(L, 1);
  SieveRng *rng = sieve__lua_check_rng(L, 2);
  sieve__lua_push_genotype(L, 1, sieve_space_sample(space, rng));
  return 1;
}

/* The genotype text of the string at idx, parsed; a Lua string may hold a
 * NUL byte, which C's parsers would read as its end, so that the rest of
 * the text were dropped unseen: refused instead. */
static SieveGenotype *
parse_text(lua_State *L, int idx, SieveSpace *space, GError **error)
{
  size_t len;
  const char *text = lua_tolstring(L, idx, &len);
  if (strlen(text) != len) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "bad genotype for space '%s': a NUL byte at character %zu",
                sieve_space_get_name(space), strlen(text) + 1);
    return NULL;
  }
  return sieve_space_parse(space, text, error);
}

static int
space_parse(lua_State *L)
{
  SieveSpace *space = sieve__lua_check_space(L, 1);
  luaL_checkstring(L, 2);
  GError *error = NULL;
  SieveGenotype *g = parse_text(L, 2, space, &error);
  if (g == NULL)
    return sieve__lua_error_gerror(L, error);
  sieve__lua_push_genotype(L, 1, g);
  return 1;
}

static int
space_format(lua_State *L)
{
  SieveSpace *space = sieve__lua_check_space(L, 1);
  SieveGenotype *g = sieve__lua_check_genotype(L, 2);
  if (sieve_genotype_get_space(g) != space)
    return luaL_error(L, "the genotype belongs to another space");
  g_autofree char *text = sieve_space_format(space, g);
  lua_pushstring(L, text);
  return 1;
}

static int
space_genotype(lua_State *L)
{
  sieve__lua_check_space(L, 1);
  GError *error = NULL;
  SieveGenotype *g = sieve__lua_to_genotype(L, 2, 1, &error);
  if (g == NULL)
    return sieve__lua_error_gerror(L, error);
  sieve__lua_push_genotype(L, 1, g);
  return 1;
}

static int
space_validate(lua_State *L)
{
  SieveSpace *space = sieve__lua_check_space(L, 1);
  SieveGenotype *g = sieve__lua_check_genotype(L, 2);
  GError *error = NULL;
  if (sieve_genotype_get_space(g) != space || !sieve_space_validate(space, g, &error)) {
    lua_pushboolean(L, FALSE);
    lua_pushstring(L, error ? error->message : "the genotype belongs to another space");
    g_clear_error(&error);
    return 2;
  }
  lua_pushboolean(L, TRUE);
  return 1;
}

/* sieve.space(name, {options}) */
static int
space_new(lua_State *L)
{
  const char *name = luaL_checkstring(L, 1);
  const SieveComponent *c;
  SieveOptions *options = sieve__lua_check_component_options(L, SIEVE_KIND_SPACE, name, 2, &c);
  GError *error = NULL;
  SieveSpace *space = sieve_space_new(c, options, &error);
  sieve_options_free(options); /* before any raise: it skips C cleanups */
  if (space == NULL)
    return sieve__lua_error_gerror(L, error);
  sieve__lua_push_space(L, space, TRUE);
  return 1;
}

/* ---- genotypes -------------------------------------------------------- */

void
sieve__lua_push_genotype(lua_State *L, int space_idx, SieveGenotype *g)
{
  space_idx = lua_absindex(L, space_idx);
  GenotypeBox *box = lua_newuserdatauv(L, sizeof(GenotypeBox), 1);
  box->genotype = g;
  luaL_setmetatable(L, SIEVE_LUA_GENOTYPE);
  lua_pushvalue(L, space_idx);
  lua_setiuservalue(L, -2, 1);
}

SieveGenotype *
sieve__lua_check_genotype(lua_State *L, int idx)
{
  GenotypeBox *box = luaL_checkudata(L, idx, SIEVE_LUA_GENOTYPE);
  lua_getiuservalue(L, idx, 1);
  SpaceBox *space = lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (space == NULL || space->space == NULL || box->genotype == NULL)
    luaL_error(L, "this genotype's space is closed (its study or component has ended)");
  return box->genotype;
}

void
sieve__lua_push_genotype_space(lua_State *L, int idx)
{
  luaL_checkudata(L, idx, SIEVE_LUA_GENOTYPE);
  lua_getiuservalue(L, idx, 1);
}

static int
genotype_gc(lua_State *L)
{
  GenotypeBox *box = luaL_checkudata(L, 1, SIEVE_LUA_GENOTYPE);
  g_clear_pointer(&box->genotype, sieve_genotype_free);
  return 0;
}

static int
genotype_format(lua_State *L)
{
  SieveGenotype *g = sieve__lua_check_genotype(L, 1);
  g_autofree char *text = sieve_space_format(sieve_genotype_get_space(g), g);
  lua_pushstring(L, text);
  return 1;
}

static int
genotype_space(lua_State *L)
{
  sieve__lua_check_genotype(L, 1);
  sieve__lua_push_genotype_space(L, 1);
  return 1;
}

static void
push_value(lua_State *L, const SieveSpace *space, guint i, double v)
{
  const SieveDecision *d = sieve_space_decision(space, i);
  if (isnan(v))
    lua_pushnil(L);
  else if (d->kind == SIEVE_DECISION_CATEGORICAL)
    lua_pushstring(L, d->choices[(guint) v]);
  else if (d->kind == SIEVE_DECISION_INT)
    lua_pushinteger(L, (lua_Integer) v);
  else
    lua_pushnumber(L, v);
}

static int
genotype_get(lua_State *L)
{
  SieveGenotype *g = sieve__lua_check_genotype(L, 1);
  const SieveSpace *space = sieve_genotype_get_space(g);
  guint i = check_decision(L, space, 2);
  push_value(L, space, i, sieve_genotype_get(g, i));
  return 1;
}

static int
genotype_raw(lua_State *L)
{
  SieveGenotype *g = sieve__lua_check_genotype(L, 1);
  if (lua_gettop(L) >= 2) {
    guint i = check_decision(L, sieve_genotype_get_space(g), 2);
    lua_pushnumber(L, sieve_genotype_get(g, i));
    return 1;
  }
  guint n = sieve_genotype_size(g);
  lua_createtable(L, (int) n, 0);
  for (guint i = 0; i < n; i++) {
    lua_pushnumber(L, sieve_genotype_get(g, i));
    lua_rawseti(L, -2, (lua_Integer) i + 1);
  }
  return 1;
}

/* Reads a natural value (choice name, integer, float, nil) for decision i;
 * FALSE + error when it is out of the domain. */
static gboolean
read_value(lua_State *L, int idx, const SieveSpace *space, guint i, double *out, GError **error)
{
  const SieveDecision *d = sieve_space_decision(space, i);
  if (lua_isnil(L, idx)) {
    *out = NAN;
    return TRUE;
  }
  if (d->kind == SIEVE_DECISION_CATEGORICAL) {
    const char *name = lua_type(L, idx) == LUA_TSTRING ? lua_tostring(L, idx) : NULL;
    for (guint k = 0; name && k < d->n_choices; k++)
      if (strcmp(d->choices[k], name) == 0) {
        *out = k;
        return TRUE;
      }
    g_autofree char *choices = g_strjoinv(", ", (char **) d->choices);
    const char *guess = name ? sieve_suggest(name, d->choices) : NULL;
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "decision '%s' expects one of: %s; got %s%s%s%s", d->name,
                choices, name ? name : luaL_typename(L, idx), guess ? " (did you mean '" : "", guess ? guess : "",
                guess ? "'?)" : "");
    return FALSE;
  }
  int isnum = 0;
  double v = lua_tonumberx(L, idx, &isnum);
  if (!isnum || lua_type(L, idx) != LUA_TNUMBER || !(v >= d->low && v <= d->high) ||
      (d->kind == SIEVE_DECISION_INT && v != floor(v))) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "decision '%s' expects %s in [%g, %g]; got %s", d->name,
                d->kind == SIEVE_DECISION_INT ? "an integer" : "a number", d->low, d->high,
                lua_type(L, idx) == LUA_TNUMBER ? lua_tostring(L, idx) : luaL_typename(L, idx));
    return FALSE;
  }
  *out = v;
  return TRUE;
}

static int
genotype_set(lua_State *L)
{
  SieveGenotype *g = sieve__lua_check_genotype(L, 1);
  const SieveSpace *space = sieve_genotype_get_space(g);
  guint i = check_decision(L, space, 2);
  /* A genotype holds values exactly where its decisions are active (what
   * validate checks): a value for an inactive one is refused here, at the
   * script's line, rather than by whoever reads the genotype later.
   * Clearing it (nil) asks for what it already holds, so it is allowed: a
   * crossover that copies a parent's decisions in order does just that. */
  if (!sieve_space_is_active(space, g, i) && lua_isnoneornil(L, 3)) {
    sieve_genotype_set(g, i, NAN);
    lua_settop(L, 1);
    return 1;
  }
  if (!sieve_space_is_active(space, g, i)) {
    const SieveDecision *d = sieve_space_decision(space, i);
    while (sieve_space_is_active(space, g, (guint) d->parent) == FALSE) /* the nearest inactive ancestor's parent */
      d = sieve_space_decision(space, (guint) d->parent);
    const SieveDecision *p = sieve_space_decision(space, (guint) d->parent);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (guint c = 0, first = 1; c < p->n_choices && c < 64; c++)
      if (d->parent_mask & (G_GUINT64_CONSTANT(1) << c)) {
        luaL_addstring(&b, first ? "" : ", ");
        luaL_addstring(&b, p->choices[c]);
        first = 0;
      }
    luaL_pushresult(&b);
    double pv = sieve_genotype_get(g, (guint) d->parent);
    return luaL_error(L, "g:set: decision '%s' is inactive in this genotype (it needs %s in {%s}, and %s is %s%s%s): set "
                         "%s first",
                      sieve_space_decision(space, i)->name, p->name, lua_tostring(L, -1), p->name,
                      isnan(pv) ? "" : "'", isnan(pv) ? "unset" : p->choices[(guint) pv], isnan(pv) ? "" : "'", p->name);
  }
  double v;
  GError *error = NULL;
  if (!read_value(L, 3, space, i, &v, &error))
    return sieve__lua_error_gerror(L, error);
  sieve_genotype_set(g, i, v);
  /* A parent's new value: what it makes inactive loses its value (a
   * later decision depends only on earlier ones); what it makes active
   * stays unset until set (or g:repair(rng) draws it). */
  for (guint j = i + 1; j < sieve_genotype_size(g); j++)
    if (!isnan(sieve_genotype_get(g, j)) && !sieve_space_is_active(space, g, j))
      sieve_genotype_set(g, j, NAN);
  lua_settop(L, 1);
  return 1;
}

static int
genotype_copy(lua_State *L)
{
  SieveGenotype *g = sieve__lua_check_genotype(L, 1);
  sieve__lua_push_genotype_space(L, 1);
  sieve__lua_push_genotype(L, -1, sieve_genotype_copy(g));
  return 1;
}

static int
genotype_repair(lua_State *L)
{
  SieveGenotype *g = sieve__lua_check_genotype(L, 1);
  sieve_genotype_repair(g, sieve__lua_check_rng(L, 2));
  lua_settop(L, 1);
  return 1;
}

static int
genotype_values(lua_State *L)
{
  SieveGenotype *g = sieve__lua_check_genotype(L, 1);
  const SieveSpace *space = sieve_genotype_get_space(g);
  lua_newtable(L);
  for (guint i = 0; i < sieve_genotype_size(g); i++) {
    double v = sieve_genotype_get(g, i);
    if (isnan(v))
      continue;
    push_value(L, space, i, v);
    lua_setfield(L, -2, sieve_space_decision(space, i)->name);
  }
  return 1;
}

static int
genotype_is_active(lua_State *L)
{
  SieveGenotype *g = sieve__lua_check_genotype(L, 1);
  const SieveSpace *space = sieve_genotype_get_space(g);
  lua_pushboolean(L, sieve_space_is_active(space, g, check_decision(L, space, 2)));
  return 1;
}

static int
genotype_eq(lua_State *L)
{
  GenotypeBox *a = luaL_testudata(L, 1, SIEVE_LUA_GENOTYPE), *b = luaL_testudata(L, 2, SIEVE_LUA_GENOTYPE);
  lua_pushboolean(L, a && b && a->genotype && b->genotype &&
                         sieve_genotype_get_space(a->genotype) == sieve_genotype_get_space(b->genotype) &&
                         sieve_genotype_equal(a->genotype, b->genotype));
  return 1;
}

static int
genotype_len(lua_State *L)
{
  lua_pushinteger(L, sieve_genotype_size(sieve__lua_check_genotype(L, 1)));
  return 1;
}

SieveGenotype *
sieve__lua_to_genotype(lua_State *L, int idx, int space_idx, GError **error)
{
  idx = lua_absindex(L, idx);
  SieveSpace *space = sieve__lua_check_space(L, space_idx);
  if (luaL_testudata(L, idx, SIEVE_LUA_GENOTYPE)) {
    SieveGenotype *g = sieve__lua_check_genotype(L, idx);
    if (sieve_genotype_get_space(g) != space) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "the genotype belongs to another space than '%s'",
                  sieve_space_get_name(space));
      return NULL;
    }
    return sieve_genotype_copy(g);
  }
  if (lua_type(L, idx) == LUA_TSTRING)
    return parse_text(L, idx, space, error);
  if (lua_type(L, idx) != LUA_TTABLE) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED,
                "expected a genotype, its text or a table {decision = value}, got a %s", luaL_typename(L, idx));
    return NULL;
  }
  g_autoptr(SieveGenotype) g = sieve_genotype_new(space);
  guint n = sieve_space_n_decisions(space);
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    const char *key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
    gint i = key ? sieve_space_find(space, key) : -1;
    if (i < 0) {
      g_autofree const char **names = g_new0(const char *, n + 1);
      for (guint k = 0; k < n; k++)
        names[k] = sieve_space_decision(space, k)->name;
      const char *guess = key ? sieve_suggest(key, names) : NULL;
      g_autofree char *hint = guess ? g_strdup_printf(" (did you mean '%s'?)", guess) : g_strdup("");
      if (key)
        g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "space '%s' has no decision '%s'%s",
                    sieve_space_get_name(space), key, hint);
      else
        g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "space '%s': decisions are named by strings, not a %s",
                    sieve_space_get_name(space), luaL_typename(L, -2));
      lua_pop(L, 2);
      return NULL;
    }
    double v;
    if (!read_value(L, -1, space, (guint) i, &v, error)) {
      lua_pop(L, 2);
      return NULL;
    }
    sieve_genotype_set(g, (guint) i, v);
    lua_pop(L, 1);
  }
  if (!sieve_space_validate(space, g, error))
    return NULL;
  return g_steal_pointer(&g);
}

/* ---- the builder of Lua spaces ------------------------------------------ */

void
sieve__lua_push_builder(lua_State *L, SieveSpace *space)
{
  BuilderBox *box = lua_newuserdatauv(L, sizeof(BuilderBox), 0);
  box->space = space;
  luaL_setmetatable(L, SIEVE_LUA_BUILDER);
}

void
sieve__lua_invalidate_builder(lua_State *L, int idx)
{
  BuilderBox *box = luaL_checkudata(L, idx, SIEVE_LUA_BUILDER);
  box->space = NULL;
}

static SieveSpace *
check_builder(lua_State *L, const char **name)
{
  BuilderBox *box = luaL_checkudata(L, 1, SIEVE_LUA_BUILDER);
  if (box->space == NULL)
    luaL_error(L, "the space builder is only valid inside the space's create()");
  *name = luaL_checkstring(L, 2);
  if ((*name)[0] == '\0')
    luaL_error(L, "a decision needs a name");
  /* The genotype text is "name=value,name=value": a name holding either
   * separator could be written but never read back (a study's --resume
   * would stop at it). */
  if (strpbrk(*name, ",="))
    luaL_error(L, "decision name '%s' holds '%c': the genotype text (name=value,...) could not read it back",
               *name, *strpbrk(*name, ",="));
  if (sieve_space_find(box->space, *name) >= 0)
    luaL_error(L, "decision '%s' is declared twice", *name);
  return box->space;
}

static int
builder_categorical(lua_State *L)
{
  const char *name;
  SieveSpace *space = check_builder(L, &name);
  luaL_checktype(L, 3, LUA_TTABLE);
  lua_Integer n = (lua_Integer) lua_rawlen(L, 3);
  if (n < 1)
    return luaL_error(L, "categorical decision '%s' needs at least one choice", name);
  /* Checked before anything is allocated: raising skips C cleanups. */
  for (lua_Integer k = 1; k <= n; k++) {
    lua_rawgeti(L, 3, k);
    if (lua_type(L, -1) != LUA_TSTRING)
      return luaL_error(L, "choice %I of '%s' must be a string, got a %s", k, name, luaL_typename(L, -1));
    for (lua_Integer m = 1; m < k; m++) {
      lua_rawgeti(L, 3, m);
      if (lua_rawequal(L, -1, -2))
        return luaL_error(L, "choice '%s' of '%s' is listed twice", lua_tostring(L, -1), name);
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  g_autofree const char **choices = g_new0(const char *, n + 1);
  for (lua_Integer k = 1; k <= n; k++) {
    lua_rawgeti(L, 3, k);
    choices[k - 1] = lua_tostring(L, -1); /* kept alive by the table */
    lua_pop(L, 1);
  }
  lua_pushinteger(L, (lua_Integer) sieve_space_add_categorical(space, name, (guint) n, choices) + 1);
  return 1;
}

static int
builder_number(lua_State *L, gboolean integer)
{
  const char *name;
  SieveSpace *space = check_builder(L, &name);
  double low = integer ? (double) luaL_checkinteger(L, 3) : luaL_checknumber(L, 3);
  double high = integer ? (double) luaL_checkinteger(L, 4) : luaL_checknumber(L, 4);
  gboolean log = lua_toboolean(L, 5);
  if (!isfinite(low) || !isfinite(high) || low > high)
    return luaL_error(L, "decision '%s': expected finite low <= high, got [%f, %f]", name, low, high);
  if (log && low <= 0)
    return luaL_error(L, "decision '%s': a log scale needs low > 0", name);
  /* Genotypes hold doubles (ints exact within 2^53) and samplers draw
   * low + u * (high - low), which must stay finite. */
  if (integer && (fabs(low) > 0x1p53 || fabs(high) > 0x1p53))
    return luaL_error(L, "decision '%s': int bounds must lie within +-2^53, got [%f, %f]", name, low, high);
  if (!isfinite(high - low))
    return luaL_error(L, "decision '%s': the range [%f, %f] is wider than the largest double", name, low, high);
  guint i = integer ? sieve_space_add_int(space, name, (gint64) low, (gint64) high, log)
                    : sieve_space_add_float(space, name, low, high, log);
  lua_pushinteger(L, (lua_Integer) i + 1);
  return 1;
}

static int
builder_int(lua_State *L)
{
  return builder_number(L, TRUE);
}

static int
builder_float(lua_State *L)
{
  return builder_number(L, FALSE);
}

/* b:condition(child, parent, {choices of parent that activate child}) */
static int
builder_condition(lua_State *L)
{
  BuilderBox *box = luaL_checkudata(L, 1, SIEVE_LUA_BUILDER);
  if (box->space == NULL)
    return luaL_error(L, "the space builder is only valid inside the space's create()");
  SieveSpace *space = box->space;
  guint child = check_decision(L, space, 2);
  guint parent = check_decision(L, space, 3);
  const SieveDecision *p = sieve_space_decision(space, parent);
  if (parent >= child)
    return luaL_error(L, "decision '%s' can only depend on a decision declared before it, not '%s'",
                      sieve_space_decision(space, child)->name, p->name);
  if (p->kind != SIEVE_DECISION_CATEGORICAL || p->n_choices > 64)
    return luaL_error(L, "decision '%s' must be categorical (at most 64 choices) to be a condition", p->name);
  luaL_checktype(L, 4, LUA_TTABLE);
  guint64 mask = 0;
  for (lua_Integer k = 1; k <= (lua_Integer) lua_rawlen(L, 4); k++) {
    lua_rawgeti(L, 4, k);
    const char *choice = lua_tostring(L, -1);
    guint c = 0;
    while (choice && c < p->n_choices && strcmp(p->choices[c], choice) != 0)
      c++;
    if (choice == NULL || c == p->n_choices)
      return luaL_error(L, "'%s' is not a choice of '%s'", choice ? choice : "(not a string)", p->name);
    mask |= G_GUINT64_CONSTANT(1) << c;
    lua_pop(L, 1);
  }
  if (mask == 0)
    return luaL_error(L, "the condition of '%s' names no choice of '%s'", sieve_space_decision(space, child)->name,
                      p->name);
  sieve_space_set_condition(space, child, parent, mask);
  return 0;
}

/* space:build(genotype | text | {decision = value}) -> graph */
static int
space_build(lua_State *L)
{
  SieveSpace *space = sieve__lua_check_space(L, 1);
  GError *error = NULL;
  SieveGenotype *g = sieve__lua_to_genotype(L, 2, 1, &error);
  if (g == NULL)
    return sieve__lua_error_gerror(L, error);
  SieveGraph *graph = sieve_space_build(space, g, &error);
  sieve_genotype_free(g); /* before any raise: it skips C cleanups */
  if (graph == NULL)
    return sieve__lua_error_gerror(L, error);
  sieve__lua_push_graph(L, graph);
  return 1;
}

/* space:hash(genotype | text | {decision = value}[, kind = "structural"]):
 * the candidate's hash, the functional one at the space's probe scale. */
static int
space_hash(lua_State *L)
{
  SieveSpace *space = sieve__lua_check_space(L, 1);
  SieveHashKind kind = sieve__lua_check_hash_kind(L, 3);
  GError *error = NULL;
  SieveGenotype *g = sieve__lua_to_genotype(L, 2, 1, &error);
  if (g == NULL)
    return sieve__lua_error_gerror(L, error);
  SieveHash hash;
  gboolean ok = sieve_space_hash(space, g, kind, &hash, &error);
  sieve_genotype_free(g); /* before any raise: it skips C cleanups */
  if (!ok)
    return sieve__lua_error_gerror(L, error);
  sieve__lua_push_hash(L, &hash);
  return 1;
}

static int
space_can_build(lua_State *L)
{
  lua_pushboolean(L, sieve_space_can_build(sieve__lua_check_space(L, 1)));
  return 1;
}

/* ---- registration -------------------------------------------------------- */

static const luaL_Reg space_methods[] = {
    {"name", space_name},         {"decisions", space_decisions}, {"decision", space_decision},
    {"sample", space_sample},     {"parse", space_parse},         {"format", space_format},
    {"genotype", space_genotype}, {"validate", space_validate},   {"build", space_build},
    {"can_build", space_can_build}, {"hash", space_hash},           {NULL, NULL},
};

static const luaL_Reg genotype_methods[] = {
    {"format", genotype_format}, {"space", genotype_space},   {"get", genotype_get},
    {"raw", genotype_raw},       {"set", genotype_set},       {"copy", genotype_copy},
    {"repair", genotype_repair}, {"values", genotype_values}, {"is_active", genotype_is_active},
    {NULL, NULL},
};

static const luaL_Reg builder_methods[] = {
    {"categorical", builder_categorical}, {"int", builder_int}, {"float", builder_float},
    {"condition", builder_condition},     {NULL, NULL},
};

static const luaL_Reg space_metamethods[] = {
    {"__gc", space_gc}, {"__close", space_close}, {"__tostring", space_tostring}, {"__len", space_len}, {NULL, NULL},
};

static const luaL_Reg genotype_metamethods[] = {
    {"__gc", genotype_gc}, {"__tostring", genotype_format}, {"__eq", genotype_eq}, {"__len", genotype_len},
    {NULL, NULL},
};

void
sieve__lua_open_space(lua_State *L, int sieve_idx)
{
  sieve__lua_new_class(L, SIEVE_LUA_SPACE, space_methods, space_metamethods);
  sieve__lua_new_class(L, SIEVE_LUA_GENOTYPE, genotype_methods, genotype_metamethods);
  sieve__lua_new_class(L, SIEVE_LUA_BUILDER, builder_methods, NULL);
  lua_pushcfunction(L, space_new);
  lua_setfield(L, sieve_idx, "space");
}
