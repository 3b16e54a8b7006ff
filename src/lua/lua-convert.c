/* sieve: Lua values <-> config trees, YAML text and GVariants.
 *
 * Option tables written in Lua become the same SieveNode trees YAML gives,
 * located at the script's file:line, so one validation serves both.  State
 * that a Lua component saves goes through GVariant, which the store keeps:
 * a table of string keys is a{sv} (keys sorted, so equal tables give equal
 * bytes whatever Lua's hash order), a sequence av, any other table a(vv);
 * genotypes are (sad) tagged "sieve.genotype" and rngs (tttt).  Tables
 * never give tuples, so the tags cannot be forged by a table.
 */
#include <math.h>
#include <string.h>

#include "lua/lua-private.h"
#include "core/core-private.h"

#define MAX_DEPTH 64

/* ---- helpers ------------------------------------------------------------ */

/* n > 0 when the table at idx is exactly the sequence 1..n; 0 when empty;
 * -1 otherwise. */
static lua_Integer
sequence_length(lua_State *L, int idx)
{
  lua_Integer count = 0;
  gboolean all_ints = TRUE;
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    lua_pop(L, 1);
    count++;
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1)
      all_ints = FALSE;
  }
  if (!all_ints)
    return -1;
  return (lua_Integer) lua_rawlen(L, idx) == count ? count : -1;
}

static gint
compare_strings(gconstpointer a, gconstpointer b)
{
  return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* The string keys of the table at idx, sorted; NULL if a key is not a string. */
static GPtrArray *
sorted_string_keys(lua_State *L, int idx)
{
  GPtrArray *keys = g_ptr_array_new_with_free_func(g_free);
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING) {
      lua_pop(L, 1);
      g_ptr_array_unref(keys);
      return NULL;
    }
    g_ptr_array_add(keys, g_strdup(lua_tostring(L, -1)));
  }
  g_ptr_array_sort(keys, compare_strings);
  return keys;
}

/* ---- Lua -> SieveNode ----------------------------------------------------- */

static SieveNode *
to_node(lua_State *L, int idx, const char *origin, guint line, const char *path, int depth, GError **error)
{
  idx = lua_absindex(L, idx);
  switch (lua_type(L, idx)) {
  case LUA_TBOOLEAN:
    return sieve_node_new_scalar(lua_toboolean(L, idx) ? "true" : "false", FALSE, origin, line, 0);
  case LUA_TNUMBER: {
    g_autofree char *text = lua_isinteger(L, idx)
                                ? g_strdup_printf("%" G_GINT64_FORMAT, (gint64) lua_tointeger(L, idx))
                                : sieve_text_format_double(lua_tonumber(L, idx));
    if (!lua_isinteger(L, idx) && isnan(lua_tonumber(L, idx)))
      return sieve_node_new_scalar(".nan", FALSE, origin, line, 0);
    if (!lua_isinteger(L, idx) && isinf(lua_tonumber(L, idx)))
      return sieve_node_new_scalar(lua_tonumber(L, idx) > 0 ? ".inf" : "-.inf", FALSE, origin, line, 0);
    return sieve_node_new_scalar(text, FALSE, origin, line, 0);
  }
  case LUA_TSTRING: {
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    if (strlen(s) != len) { /* C would read the string up to the NUL, the rest dropped unseen */
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "%s:%u: %s: a string holding a NUL byte (at character %zu)",
                  origin, line, path, strlen(s) + 1);
      return NULL;
    }
    return sieve_node_new_scalar(s, TRUE, origin, line, 0);
  }
  case LUA_TTABLE: {
    if (depth > MAX_DEPTH) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "%s:%u: %s: tables nested too deep (a cycle?)", origin,
                  line, path);
      return NULL;
    }
    lua_Integer n = sequence_length(L, idx);
    if (n > 0) {
      g_autoptr(SieveNode) list = sieve_node_new_list(origin, line, 0);
      for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, idx, i);
        g_autofree char *sub = g_strdup_printf("%s[%" G_GINT64_FORMAT "]", path, (gint64) i);
        SieveNode *item = to_node(L, -1, origin, line, sub, depth + 1, error);
        lua_pop(L, 1);
        if (item == NULL)
          return NULL;
        sieve_node_list_append(list, item);
      }
      return g_steal_pointer(&list);
    }
    g_autoptr(GPtrArray) keys = sorted_string_keys(L, idx);
    if (keys == NULL) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                  "%s:%u: %s: expected a list (keys 1..n) or a map with string keys", origin, line, path);
      return NULL;
    }
    g_autoptr(SieveNode) map = sieve_node_new_map(origin, line, 0);
    for (guint i = 0; i < keys->len; i++) {
      lua_getfield(L, idx, keys->pdata[i]);
      g_autofree char *sub = g_strdup_printf("%s.%s", path, (char *) keys->pdata[i]);
      SieveNode *value = to_node(L, -1, origin, line, sub, depth + 1, error);
      lua_pop(L, 1);
      if (value == NULL)
        return NULL;
      sieve_node_map_set(map, keys->pdata[i], value);
    }
    return g_steal_pointer(&map);
  }
  default:
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "%s:%u: %s: a %s cannot be an option value", origin, line,
                path, luaL_typename(L, idx));
    return NULL;
  }
}

SieveNode *
sieve__lua_to_node(lua_State *L, int idx, const char *origin, guint line, GError **error)
{
  return to_node(L, idx, origin, line, "value", 0, error);
}

void
sieve__lua_push_node(lua_State *L, const SieveNode *node)
{
  luaL_checkstack(L, 4, "config tree too deep");
  switch (sieve_node_kind(node)) {
  case SIEVE_NODE_SCALAR: {
    gint64 i;
    double d;
    gboolean b;
    if (sieve_node_is_quoted(node))
      lua_pushstring(L, sieve_node_text(node));
    else if (sieve_node_is_null(node))
      lua_pushnil(L);
    else if (sieve_node_get_int(node, &i, NULL))
      lua_pushinteger(L, i);
    else if (sieve_node_get_double(node, &d, NULL))
      lua_pushnumber(L, d);
    else if (sieve_node_get_bool(node, &b, NULL))
      lua_pushboolean(L, b);
    else
      lua_pushstring(L, sieve_node_text(node));
    return;
  }
  case SIEVE_NODE_LIST:
    lua_createtable(L, (int) sieve_node_size(node), 0);
    for (guint i = 0; i < sieve_node_size(node); i++) {
      sieve__lua_push_node(L, sieve_node_nth(node, i));
      lua_rawseti(L, -2, (lua_Integer) i + 1);
    }
    return;
  case SIEVE_NODE_MAP:
    lua_createtable(L, 0, (int) sieve_node_size(node));
    for (guint i = 0; i < sieve_node_size(node); i++) {
      sieve__lua_push_node(L, sieve_node_nth(node, i));
      lua_setfield(L, -2, sieve_node_text(sieve_node_nth_key(node, i)));
    }
    return;
  }
}

void
sieve__lua_push_options(lua_State *L, const SieveOptions *options)
{
  lua_newtable(L);
  for (const SieveOptionSpec *o = sieve_options_spec(options); o && o->name; o++) {
    switch (o->type) {
    case SIEVE_OPTION_TYPE_BOOL:
      lua_pushboolean(L, sieve_options_get_bool(options, o->name));
      break;
    case SIEVE_OPTION_TYPE_INT:
      lua_pushinteger(L, sieve_options_get_int(options, o->name));
      break;
    case SIEVE_OPTION_TYPE_FLOAT:
      lua_pushnumber(L, sieve_options_get_double(options, o->name));
      break;
    case SIEVE_OPTION_TYPE_STRING:
    case SIEVE_OPTION_TYPE_CHOICE:
    case SIEVE_OPTION_TYPE_PATH:
      lua_pushstring(L, sieve_options_get_string(options, o->name)); /* nil when unset */
      break;
    case SIEVE_OPTION_TYPE_STRING_LIST: {
      const char *const *v = sieve_options_get_strv(options, o->name);
      if (v == NULL) {
        lua_pushnil(L);
        break;
      }
      lua_newtable(L);
      for (guint i = 0; v[i]; i++) {
        lua_pushstring(L, v[i]);
        lua_rawseti(L, -2, (lua_Integer) i + 1);
      }
      break;
    }
    case SIEVE_OPTION_TYPE_NODE: {
      const SieveNode *node = sieve_options_get_node(options, o->name);
      if (node)
        sieve__lua_push_node(L, node);
      else
        lua_pushnil(L);
      break;
    }
    }
    lua_setfield(L, -2, o->name);
  }
}

/* ---- Lua -> YAML flow text ----------------------------------------------- */

static gboolean
to_flow(lua_State *L, int idx, GString *out, int depth, GError **error)
{
  idx = lua_absindex(L, idx);
  switch (lua_type(L, idx)) {
  case LUA_TBOOLEAN:
    g_string_append(out, lua_toboolean(L, idx) ? "true" : "false");
    return TRUE;
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx))
      g_string_append_printf(out, "%" G_GINT64_FORMAT, (gint64) lua_tointeger(L, idx));
    else {
      double v = lua_tonumber(L, idx);
      if (isnan(v))
        g_string_append(out, ".nan");
      else if (isinf(v))
        g_string_append(out, v > 0 ? ".inf" : "-.inf");
      else {
        g_autofree char *text = sieve_text_format_double(v);
        g_string_append(out, text);
      }
    }
    return TRUE;
  case LUA_TSTRING:
    sieve_json_append_string(out, lua_tostring(L, idx)); /* JSON strings are YAML flow scalars */
    return TRUE;
  case LUA_TTABLE: {
    if (depth > MAX_DEPTH) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "tables nested too deep (a cycle?)");
      return FALSE;
    }
    lua_Integer n = sequence_length(L, idx);
    if (n >= 0) {
      g_string_append_c(out, '[');
      for (lua_Integer i = 1; i <= n; i++) {
        if (i > 1)
          g_string_append(out, ", ");
        lua_rawgeti(L, idx, i);
        gboolean ok = to_flow(L, -1, out, depth + 1, error);
        lua_pop(L, 1);
        if (!ok)
          return FALSE;
      }
      g_string_append_c(out, ']');
      return TRUE;
    }
    g_autoptr(GPtrArray) keys = sorted_string_keys(L, idx);
    if (keys == NULL) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "expected a list or a map with string keys");
      return FALSE;
    }
    g_string_append_c(out, '{');
    for (guint i = 0; i < keys->len; i++) {
      if (i > 0)
        g_string_append(out, ", ");
      sieve_json_append_string(out, keys->pdata[i]);
      g_string_append(out, ": ");
      lua_getfield(L, idx, keys->pdata[i]);
      gboolean ok = to_flow(L, -1, out, depth + 1, error);
      lua_pop(L, 1);
      if (!ok)
        return FALSE;
    }
    g_string_append_c(out, '}');
    return TRUE;
  }
  default:
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "a %s cannot be a config value", luaL_typename(L, idx));
    return FALSE;
  }
}

char *
sieve__lua_to_yaml_flow(lua_State *L, int idx, GError **error)
{
  GString *out = g_string_new(NULL);
  if (!to_flow(L, idx, out, 0, error)) {
    g_string_free(out, TRUE);
    return NULL;
  }
  return g_string_free(out, FALSE);
}

/* ---- Lua <-> GVariant ------------------------------------------------------ */

#define GENOTYPE_TAG "sieve.genotype"

static GVariant *
string_variant(const char *s, size_t len)
{
  /* "s" must be UTF-8 without NUL; anything else keeps its bytes as "ay". */
  if (memchr(s, '\0', len) == NULL && g_utf8_validate(s, (gssize) len, NULL))
    return g_variant_new_string(s);
  return g_variant_new_fixed_array(G_VARIANT_TYPE_BYTE, s, len, 1);
}

static GVariant *to_variant(lua_State *L, int idx, const char *path, int depth, GError **error);

/* Orders (key, value) pairs by the text of their keys. */
static gint
compare_pairs(gconstpointer a, gconstpointer b)
{
  g_autoptr(GVariant) ka = g_variant_get_child_value(*(GVariant *const *) a, 0);
  g_autoptr(GVariant) kb = g_variant_get_child_value(*(GVariant *const *) b, 0);
  g_autofree char *ta = g_variant_print(ka, TRUE);
  g_autofree char *tb = g_variant_print(kb, TRUE);
  return strcmp(ta, tb);
}

static GVariant *
table_variant(lua_State *L, int idx, const char *path, int depth, GError **error)
{
  lua_Integer n = sequence_length(L, idx);
  if (n >= 0) {
    GVariantBuilder b;
    g_variant_builder_init(&b, G_VARIANT_TYPE("av"));
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, idx, i);
      g_autofree char *sub = g_strdup_printf("%s[%" G_GINT64_FORMAT "]", path, (gint64) i);
      GVariant *v = to_variant(L, -1, sub, depth + 1, error);
      lua_pop(L, 1);
      if (v == NULL) {
        g_variant_builder_clear(&b);
        return NULL;
      }
      g_variant_builder_add(&b, "v", v);
    }
    return g_variant_builder_end(&b);
  }
  g_autoptr(GPtrArray) keys = sorted_string_keys(L, idx);
  if (keys != NULL) {
    GVariantBuilder b;
    g_variant_builder_init(&b, G_VARIANT_TYPE("a{sv}"));
    for (guint i = 0; i < keys->len; i++) {
      const char *key = keys->pdata[i];
      lua_getfield(L, idx, key);
      g_autofree char *sub = g_strdup_printf("%s.%s", path, key);
      GVariant *v = to_variant(L, -1, sub, depth + 1, error);
      lua_pop(L, 1);
      if (v == NULL) {
        g_variant_builder_clear(&b);
        return NULL;
      }
      if (!g_utf8_validate(key, -1, NULL)) {
        g_variant_unref(g_variant_ref_sink(v));
        g_variant_builder_clear(&b);
        g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "cannot save %s: a key is not UTF-8 text", path);
        return NULL;
      }
      g_variant_builder_add(&b, "{sv}", key, v);
    }
    return g_variant_builder_end(&b);
  }
  /* Mixed keys: (key, value) pairs, sorted by the keys' serialised form so
   * that the bytes do not depend on Lua's iteration order. */
  GPtrArray *pairs = g_ptr_array_new_with_free_func((GDestroyNotify) g_variant_unref);
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    g_autofree char *sub = g_strdup_printf("%s[key]", path);
    GVariant *k = to_variant(L, -2, sub, depth + 1, error);
    GVariant *v = k ? to_variant(L, -1, path, depth + 1, error) : NULL;
    lua_pop(L, 1);
    if (v == NULL) {
      if (k)
        g_variant_unref(g_variant_ref_sink(k));
      lua_pop(L, 1);
      g_ptr_array_unref(pairs);
      return NULL;
    }
    g_ptr_array_add(pairs, g_variant_ref_sink(g_variant_new("(vv)", k, v)));
  }
  g_ptr_array_sort(pairs, compare_pairs);
  GVariantBuilder b;
  g_variant_builder_init(&b, G_VARIANT_TYPE("a(vv)"));
  for (guint i = 0; i < pairs->len; i++)
    g_variant_builder_add_value(&b, pairs->pdata[i]);
  g_ptr_array_unref(pairs);
  return g_variant_builder_end(&b);
}

static GVariant *
to_variant(lua_State *L, int idx, const char *path, int depth, GError **error)
{
  idx = lua_absindex(L, idx);
  luaL_checkstack(L, 6, "value too deep to save");
  switch (lua_type(L, idx)) {
  case LUA_TBOOLEAN:
    return g_variant_new_boolean(lua_toboolean(L, idx));
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx))
      return g_variant_new_int64(lua_tointeger(L, idx));
    return g_variant_new_double(lua_tonumber(L, idx));
  case LUA_TSTRING: {
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    return string_variant(s, len);
  }
  case LUA_TTABLE:
    if (depth > MAX_DEPTH) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "cannot save %s: tables nested deeper than %d (a cycle?)",
                  path, MAX_DEPTH);
      return NULL;
    }
    return table_variant(L, idx, path, depth, error);
  case LUA_TUSERDATA:
    if (luaL_testudata(L, idx, SIEVE_LUA_GENOTYPE)) {
      SieveGenotype *g = sieve__lua_check_genotype(L, idx);
      guint n = sieve_genotype_size(g);
      g_autofree double *values = g_new(double, n);
      for (guint i = 0; i < n; i++)
        values[i] = sieve_genotype_get(g, i);
      return g_variant_new("(s@ad)", GENOTYPE_TAG,
                           g_variant_new_fixed_array(G_VARIANT_TYPE_DOUBLE, values, n, sizeof(double)));
    }
    if (luaL_testudata(L, idx, SIEVE_LUA_RNG))
      return sieve_rng_save(sieve__lua_check_rng(L, idx));
    G_GNUC_FALLTHROUGH;
  default:
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED,
                "cannot save %s: a %s is not serialisable (save booleans, numbers, strings, tables, genotypes and "
                "rngs)",
                path, luaL_typename(L, idx));
    return NULL;
  }
}

GVariant *
sieve__lua_to_variant(lua_State *L, int idx, const char *what, GError **error)
{
  return to_variant(L, idx, what, 0, error);
}

gboolean
sieve__lua_push_variant(lua_State *L, GVariant *value, int space_idx, GError **error)
{
  luaL_checkstack(L, 6, "saved value too deep");
  if (space_idx != 0)
    space_idx = lua_absindex(L, space_idx);
  const GVariantType *type = g_variant_get_type(value);
  if (g_variant_type_equal(type, G_VARIANT_TYPE_BOOLEAN))
    lua_pushboolean(L, g_variant_get_boolean(value));
  else if (g_variant_type_equal(type, G_VARIANT_TYPE_INT64))
    lua_pushinteger(L, g_variant_get_int64(value));
  else if (g_variant_type_equal(type, G_VARIANT_TYPE_DOUBLE))
    lua_pushnumber(L, g_variant_get_double(value));
  else if (g_variant_type_equal(type, G_VARIANT_TYPE_STRING))
    lua_pushstring(L, g_variant_get_string(value, NULL));
  else if (g_variant_type_equal(type, G_VARIANT_TYPE_BYTESTRING)) {
    gsize n;
    const char *bytes = g_variant_get_fixed_array(value, &n, 1);
    lua_pushlstring(L, bytes, n);
  } else if (g_variant_type_equal(type, G_VARIANT_TYPE("(tttt)"))) {
    SieveRng rng;
    if (!sieve_rng_load(&rng, value, error))
      return FALSE;
    sieve__lua_push_rng(L, &rng);
  } else if (g_variant_type_equal(type, G_VARIANT_TYPE("(sad)"))) {
    const char *tag;
    g_autoptr(GVariant) values = NULL;
    g_variant_get(value, "(&s@ad)", &tag, &values);
    if (strcmp(tag, GENOTYPE_TAG) != 0 || space_idx == 0) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "a saved genotype cannot be restored here (no space)");
      return FALSE;
    }
    SieveSpace *space = sieve__lua_check_space(L, space_idx);
    gsize n;
    const double *v = g_variant_get_fixed_array(values, &n, sizeof(double));
    if (n != sieve_space_n_decisions(space)) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "a saved genotype has %" G_GSIZE_FORMAT
                  " values, the space %u decisions", n, sieve_space_n_decisions(space));
      return FALSE;
    }
    g_autoptr(SieveGenotype) g = sieve_genotype_new(space);
    for (gsize i = 0; i < n; i++)
      sieve_genotype_set(g, (guint) i, v[i]);
    if (!sieve_space_validate(space, g, error))
      return FALSE;
    sieve__lua_push_genotype(L, space_idx, g_steal_pointer(&g));
  } else if (g_variant_type_equal(type, G_VARIANT_TYPE("av"))) {
    gsize n = g_variant_n_children(value);
    lua_createtable(L, (int) n, 0);
    for (gsize i = 0; i < n; i++) {
      g_autoptr(GVariant) boxed = g_variant_get_child_value(value, i);
      g_autoptr(GVariant) item = g_variant_get_variant(boxed);
      if (!sieve__lua_push_variant(L, item, space_idx, error)) {
        lua_pop(L, 1);
        return FALSE;
      }
      lua_rawseti(L, -2, (lua_Integer) i + 1);
    }
  } else if (g_variant_type_equal(type, G_VARIANT_TYPE("a{sv}"))) {
    gsize n = g_variant_n_children(value);
    lua_createtable(L, 0, (int) n);
    for (gsize i = 0; i < n; i++) {
      const char *key;
      g_autoptr(GVariant) item = NULL;
      g_variant_get_child(value, i, "{&sv}", &key, &item);
      if (!sieve__lua_push_variant(L, item, space_idx, error)) {
        lua_pop(L, 1);
        return FALSE;
      }
      lua_setfield(L, -2, key);
    }
  } else if (g_variant_type_equal(type, G_VARIANT_TYPE("a(vv)"))) {
    gsize n = g_variant_n_children(value);
    lua_createtable(L, 0, (int) n);
    for (gsize i = 0; i < n; i++) {
      g_autoptr(GVariant) k = NULL, v = NULL;
      g_variant_get_child(value, i, "(vv)", &k, &v);
      if (!sieve__lua_push_variant(L, k, space_idx, error)) {
        lua_pop(L, 1);
        return FALSE;
      }
      if (!sieve__lua_push_variant(L, v, space_idx, error)) {
        lua_pop(L, 2);
        return FALSE;
      }
      lua_rawset(L, -3);
    }
  } else {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "a saved value of type %s has no Lua form",
                g_variant_get_type_string(value));
    return FALSE;
  }
  return TRUE;
}

/* ---- sieve.serialize / sieve.deserialize ------------------------------------ */

/* sieve.serialize(value) -> text: what a Lua optimizer's state becomes in
 * the store (GVariant text), to check what a save would keep. */
static int
lua_serialize(lua_State *L)
{
  luaL_checkany(L, 1);
  GError *error = NULL;
  GVariant *v = sieve__lua_to_variant(L, 1, "value", &error);
  if (v == NULL)
    return sieve__lua_error_gerror(L, error);
  g_variant_ref_sink(v);
  char *text = g_variant_print(v, TRUE);
  g_variant_unref(v);
  lua_pushstring(L, text);
  g_free(text);
  return 1;
}

/* GVariant's parser reports "START-END:what" or "POS:what" (byte offsets
 * from 0, END past the last byte, maybe ",START2-END2" too): turned into
 * the characters a user counts from 1, with the text they cover. */
GVariant *
sieve__lua_parse_state(const char *text, GError **error)
{
  GError *local = NULL;
  GVariant *v = g_variant_parse(NULL, text, NULL, NULL, &local);
  if (v != NULL)
    return v;
  gsize len = strlen(text);
  char *end = NULL;
  guint64 start = g_ascii_strtoull(local->message, &end, 10), stop = start;
  if (end != local->message && *end == '-')
    stop = g_ascii_strtoull(end + 1, &end, 10);
  const char *what = end != local->message ? strchr(end, ':') : NULL;
  if (what == NULL || start > len || stop > len || stop < start) {
    /* Not the form we know: its message as it is. */
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "cannot read the saved state: %s", local->message);
    g_error_free(local);
    return NULL;
  }
  what++;
  gboolean utf8 = g_utf8_validate(text, (gssize) len, NULL);
  glong first = utf8 ? g_utf8_pointer_to_offset(text, text + start) + 1 : (glong) start + 1;
  g_autofree char *where = NULL;
  if (start == len) {
    where = g_strdup("at the end of the text");
  } else {
    gsize n = MAX(stop, start + 1) - start;
    g_autofree char *covered = g_strndup(text + start, MIN(n, 40));
    g_autofree char *shown = g_strescape(covered, NULL);
    glong last = utf8 ? g_utf8_pointer_to_offset(text, text + start + n) : (glong) (start + n);
    where = last > first ? g_strdup_printf("characters %ld-%ld ('%s%s')", first, last, shown, n > 40 ? "..." : "")
                         : g_strdup_printf("character %ld ('%s')", first, shown);
  }
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "cannot read the saved state: %s: %s", where, what);
  g_error_free(local);
  return NULL;
}

/* sieve.deserialize(text[, space]) -> value; genotypes need their space. */
static int
lua_deserialize(lua_State *L)
{
  const char *text = luaL_checkstring(L, 1);
  int space_idx = lua_isnoneornil(L, 2) ? 0 : 2;
  if (space_idx)
    sieve__lua_check_space(L, 2);
  GError *error = NULL;
  GVariant *v = sieve__lua_parse_state(text, &error);
  if (v == NULL)
    return sieve__lua_error_gerror(L, error);
  gboolean ok = sieve__lua_push_variant(L, v, space_idx, &error);
  g_variant_unref(v);
  if (!ok)
    return sieve__lua_error_gerror(L, error);
  return 1;
}

static const luaL_Reg convert_funcs[] = {
    {"serialize", lua_serialize}, {"deserialize", lua_deserialize}, {NULL, NULL},
};

void
sieve__lua_open_convert(lua_State *L, int sieve_idx)
{
  sieve__lua_set_funcs(L, sieve_idx, convert_funcs);
}
