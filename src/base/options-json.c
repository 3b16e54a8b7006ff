/* sieve: a validated option set as a JSON object and back (base-private.h),
 * what a weights or ONNX file carries as its "space_options" to build its
 * network again.  Numbers are written as JSON numbers and any-value
 * options as JSON trees, so that the file reads back through
 * sieve_options_new as the config did.
 *
 * JSON has no infinities nor NaN: they are written as the bare tokens
 * Infinity, -Infinity and NaN, as Python's json module writes and reads
 * them (and JSON5 allows), a float option's and a number inside an
 * any-value option's tree alike.  No text sieve writes is such a token
 * otherwise (strings are quoted), so they read back as exactly the numbers
 * they were. */
#include <math.h>
#include <string.h>

#include <sieve/text.h>

#include "base/base-private.h"

/* ---- writing ------------------------------------------------------------ */

/* A double as JSON, a non-finite one as Python's json writes it. */
static void
append_double(GString *out, double d)
{
  if (isfinite(d))
    sieve_json_append_double(out, d);
  else
    g_string_append(out, isnan(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity");
}

/* An unquoted YAML scalar as the JSON value it reads as: null, a boolean,
 * a number, or else its text as a string. */
static void
append_plain(GString *out, const SieveNode *node)
{
  gboolean b;
  gint64 i;
  double d;
  if (sieve_node_is_null(node)) {
    g_string_append(out, "null");
    return;
  }
  g_autofree char *not_bool = sieve__node_read_bool(node, &b);
  if (not_bool == NULL) {
    g_string_append(out, b ? "true" : "false");
    return;
  }
  g_autofree char *not_int = sieve__node_read_int(node, &i);
  if (not_int == NULL) {
    g_string_append_printf(out, "%" G_GINT64_FORMAT, i);
    return;
  }
  g_autofree char *not_double = sieve__node_read_double(node, &d);
  if (not_double == NULL) {
    append_double(out, d);
    return;
  }
  sieve_json_append_string(out, sieve_node_text(node));
}

static void
append_node(GString *out, const SieveNode *node)
{
  SieveNodeKind kind = sieve_node_kind(node);
  if (kind == SIEVE_NODE_SCALAR) {
    if (sieve_node_is_quoted(node))
      sieve_json_append_string(out, sieve_node_text(node));
    else
      append_plain(out, node);
    return;
  }
  g_string_append_c(out, kind == SIEVE_NODE_MAP ? '{' : '[');
  for (guint i = 0; i < sieve_node_size(node); i++) {
    if (i > 0)
      g_string_append_c(out, ',');
    if (kind == SIEVE_NODE_MAP) {
      sieve_json_append_string(out, sieve_node_text(sieve_node_nth_key(node, i)));
      g_string_append_c(out, ':');
    }
    append_node(out, sieve_node_nth(node, i));
  }
  g_string_append_c(out, kind == SIEVE_NODE_MAP ? '}' : ']');
}

static void
append_string_or_null(GString *out, const char *s)
{
  if (s == NULL)
    g_string_append(out, "null");
  else
    sieve_json_append_string(out, s);
}

static void
append_option(GString *out, const SieveOptions *options, const SieveOptionSpec *o)
{
  switch (o->type) {
  case SIEVE_OPTION_TYPE_BOOL:
    g_string_append(out, sieve_options_get_bool(options, o->name) ? "true" : "false");
    return;
  case SIEVE_OPTION_TYPE_INT:
    g_string_append_printf(out, "%" G_GINT64_FORMAT, sieve_options_get_int(options, o->name));
    return;
  case SIEVE_OPTION_TYPE_FLOAT:
    append_double(out, sieve_options_get_double(options, o->name));
    return;
  case SIEVE_OPTION_TYPE_STRING:
  case SIEVE_OPTION_TYPE_CHOICE:
  case SIEVE_OPTION_TYPE_PATH:
    append_string_or_null(out, sieve_options_get_string(options, o->name));
    return;
  case SIEVE_OPTION_TYPE_STRING_LIST: {
    const char *const *v = sieve_options_get_strv(options, o->name);
    if (v == NULL) {
      g_string_append(out, "null");
      return;
    }
    g_string_append_c(out, '[');
    for (guint i = 0; v[i]; i++) {
      if (i > 0)
        g_string_append_c(out, ',');
      sieve_json_append_string(out, v[i]);
    }
    g_string_append_c(out, ']');
    return;
  }
  case SIEVE_OPTION_TYPE_NODE: {
    const SieveNode *node = sieve_options_get_node(options, o->name);
    if (node == NULL)
      g_string_append(out, "null");
    else
      append_node(out, node);
    return;
  }
  }
  g_assert_not_reached();
}

char *
sieve__options_to_json(const SieveOptions *options)
{
  g_return_val_if_fail(options != NULL, NULL);
  GString *out = g_string_new("{");
  gboolean first = TRUE;
  for (const SieveOptionSpec *o = sieve_options_spec(options); o && o->name; o++) {
    if (!first)
      g_string_append_c(out, ',');
    first = FALSE;
    sieve_json_append_string(out, o->name);
    g_string_append_c(out, ':');
    append_option(out, options, o);
  }
  g_string_append_c(out, '}');
  return g_string_free(out, FALSE);
}

/* ---- reading ------------------------------------------------------------ */

/* The tokens append_double writes for non-finite numbers, as the YAML
 * numbers sieve_options_new reads, in the whole tree below node. */
static void
read_non_finite(SieveNode *node)
{
  static const char *const tokens[][2] = {{"Infinity", ".inf"}, {"-Infinity", "-.inf"}, {"NaN", ".nan"}};
  if (node->kind == SIEVE_NODE_SCALAR) {
    for (guint i = 0; !node->quoted && i < G_N_ELEMENTS(tokens); i++)
      if (strcmp(node->text, tokens[i][0]) == 0) {
        g_free(node->text);
        node->text = g_strdup(tokens[i][1]);
        return;
      }
    return;
  }
  for (guint i = 0; i < node->values->len; i++)
    read_non_finite(node->values->pdata[i]);
}

/* What sieve wrote before its numbers were JSON numbers: a float option as
 * a string ("0.003", "inf"; a number inside a tree could not be infinite
 * then, it was the string ".inf"), an any-value option as a string of YAML.  The
 * same value as the config gave it, or NULL to keep the node as it is.
 * (transfer full) */
static SieveNode *
upgrade(const SieveOptionSpec *o, const SieveNode *node, GError **error)
{
  if (o == NULL || !sieve_node_is_quoted(node))
    return NULL;
  const char *text = sieve_node_text(node);
  if (o->type == SIEVE_OPTION_TYPE_FLOAT) {
    const char *yaml = strcmp(text, "inf") == 0 ? ".inf" : strcmp(text, "-inf") == 0 ? "-.inf"
                       : strcmp(text, "nan") == 0 ? ".nan" : text;
    return sieve_node_new_scalar(yaml, FALSE, sieve_node_origin(node), sieve_node_line(node),
                                 sieve_node_column(node));
  }
  if (o->type == SIEVE_OPTION_TYPE_NODE) {
    g_autofree char *where = sieve_node_where(node);
    g_autofree char *origin = g_strdup_printf("%s (option '%s')", where, o->name);
    g_autoptr(SieveNode) tree = sieve_node_parse_string(text, -1, origin, error);
    if (tree == NULL)
      return NULL;
    /* A tree written as its YAML text; a string stays the string. */
    if (sieve_node_kind(tree) != SIEVE_NODE_SCALAR)
      return g_steal_pointer(&tree);
  }
  return NULL;
}

SieveNode *
sieve__options_json_parse(const SieveOptionSpec *spec, const char *json, const char *origin, GError **error)
{
  g_return_val_if_fail(json != NULL && origin != NULL, NULL);
  g_autoptr(SieveNode) map = sieve_node_parse_string(json, -1, origin, error);
  if (map == NULL)
    return NULL;
  if (sieve_node_kind(map) != SIEVE_NODE_MAP) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "%s: expected a JSON object of options, got %s", origin,
                sieve__node_kind_noun(sieve_node_kind(map)));
    return NULL;
  }
  read_non_finite(map);
  /* null: an option left unset (a string or node option without a default
   * is written so); the option table's default applies.  Last first, so
   * that removing one leaves the indices still to visit in place. */
  for (guint i = sieve_node_size(map); i-- > 0;) {
    const SieveNode *v = sieve_node_nth(map, i);
    if (sieve_node_kind(v) == SIEVE_NODE_SCALAR && sieve_node_is_null(v) && !sieve_node_is_quoted(v))
      sieve_node_map_remove(map, sieve_node_text(sieve_node_nth_key(map, i)));
  }
  for (guint i = 0; i < sieve_node_size(map); i++) {
    const char *name = sieve_node_text(sieve_node_nth_key(map, i));
    GError *local = NULL;
    SieveNode *value = upgrade(sieve__option_spec_find(spec, name), sieve_node_nth(map, i), &local);
    if (local != NULL) {
      g_propagate_error(error, local);
      return NULL;
    }
    if (value != NULL)
      sieve_node_map_set(map, name, value);
  }
  return g_steal_pointer(&map);
}
