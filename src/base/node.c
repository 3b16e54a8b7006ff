/* sieve: configuration trees (construction, access, typed reads, --set
 * overrides, canonical YAML).  Parsing lives in node-yaml.c. */
#include <sieve/text.h>

#include "base/base-private.h"

#include <errno.h>
#include <math.h>
#include <string.h>

/* ---- construction and lifetime ------------------------------------------ */

SieveNode *
sieve__node_new(SieveNodeKind kind, const char *ref_origin, guint line, guint column)
{
  SieveNode *node = g_new0(SieveNode, 1);
  g_atomic_ref_count_init(&node->ref_count);
  node->kind = kind;
  node->origin = g_ref_string_acquire((char *)ref_origin);
  node->line = line;
  node->column = column;
  if (kind == SIEVE_NODE_MAP)
    node->keys = g_ptr_array_new_with_free_func((GDestroyNotify)sieve_node_unref);
  if (kind != SIEVE_NODE_SCALAR)
    node->values = g_ptr_array_new_with_free_func((GDestroyNotify)sieve_node_unref);
  return node;
}

static SieveNode *
node_new(SieveNodeKind kind, const char *origin, guint line, guint column)
{
  char *ref_origin = g_ref_string_new_intern(origin ? origin : "<unknown>");
  SieveNode *node = sieve__node_new(kind, ref_origin, line, column);
  g_ref_string_release(ref_origin);
  return node;
}

SieveNode *
sieve_node_new_scalar(const char *text, gboolean quoted, const char *origin, guint line,
                      guint column)
{
  g_return_val_if_fail(text != NULL, NULL);
  SieveNode *node = node_new(SIEVE_NODE_SCALAR, origin, line, column);
  node->text = g_strdup(text);
  node->quoted = quoted;
  return node;
}

SieveNode *
sieve_node_new_map(const char *origin, guint line, guint column)
{
  return node_new(SIEVE_NODE_MAP, origin, line, column);
}

SieveNode *
sieve_node_new_list(const char *origin, guint line, guint column)
{
  return node_new(SIEVE_NODE_LIST, origin, line, column);
}

SieveNode *
sieve_node_ref(SieveNode *node)
{
  g_return_val_if_fail(node != NULL, NULL);
  g_atomic_ref_count_inc(&node->ref_count);
  return node;
}

void
sieve_node_unref(SieveNode *node)
{
  if (node == NULL || !g_atomic_ref_count_dec(&node->ref_count))
    return;
  g_free(node->text);
  if (node->keys)
    g_ptr_array_unref(node->keys);
  if (node->values)
    g_ptr_array_unref(node->values);
  g_ref_string_release(node->origin);
  g_free(node);
}

SieveNode *
sieve_node_copy(const SieveNode *node)
{
  g_return_val_if_fail(node != NULL, NULL);
  SieveNode *copy = sieve__node_new(node->kind, node->origin, node->line, node->column);
  copy->text = g_strdup(node->text);
  copy->quoted = node->quoted;
  if (node->keys)
    for (guint i = 0; i < node->keys->len; i++)
      g_ptr_array_add(copy->keys, sieve_node_copy(node->keys->pdata[i]));
  if (node->values)
    for (guint i = 0; i < node->values->len; i++)
      g_ptr_array_add(copy->values, sieve_node_copy(node->values->pdata[i]));
  return copy;
}

static gint
map_index(const SieveNode *map, const char *key)
{
  for (guint i = 0; i < map->keys->len; i++) {
    const SieveNode *k = map->keys->pdata[i];
    if (strcmp(k->text, key) == 0)
      return (gint)i;
  }
  return -1;
}

void
sieve__node_map_append(SieveNode *map, SieveNode *key, SieveNode *value)
{
  g_ptr_array_add(map->keys, key);
  g_ptr_array_add(map->values, value);
}

void
sieve_node_map_set(SieveNode *map, const char *key, SieveNode *value)
{
  g_return_if_fail(map != NULL && map->kind == SIEVE_NODE_MAP);
  g_return_if_fail(key != NULL && value != NULL);
  gint i = map_index(map, key);
  if (i >= 0) {
    /* Keep the key (and so the written order); only the value changes. */
    sieve_node_unref(map->values->pdata[i]);
    map->values->pdata[i] = value;
    return;
  }
  SieveNode *k = sieve__node_new(SIEVE_NODE_SCALAR, value->origin, value->line, value->column);
  k->text = g_strdup(key);
  sieve__node_map_append(map, k, value);
}

void
sieve_node_list_append(SieveNode *list, SieveNode *value)
{
  g_return_if_fail(list != NULL && list->kind == SIEVE_NODE_LIST);
  g_return_if_fail(value != NULL);
  g_ptr_array_add(list->values, value);
}

gboolean
sieve_node_map_remove(SieveNode *map, const char *key)
{
  g_return_val_if_fail(map != NULL && map->kind == SIEVE_NODE_MAP, FALSE);
  g_return_val_if_fail(key != NULL, FALSE);
  gint i = map_index(map, key);
  if (i < 0)
    return FALSE;
  g_ptr_array_remove_index(map->keys, (guint)i);
  g_ptr_array_remove_index(map->values, (guint)i);
  return TRUE;
}

/* ---- accessors ------------------------------------------------------------ */

SieveNodeKind
sieve_node_kind(const SieveNode *node)
{
  g_return_val_if_fail(node != NULL, SIEVE_NODE_SCALAR);
  return node->kind;
}

const char *
sieve_node_origin(const SieveNode *node)
{
  g_return_val_if_fail(node != NULL, NULL);
  return node->origin;
}

guint
sieve_node_line(const SieveNode *node)
{
  g_return_val_if_fail(node != NULL, 0);
  return node->line;
}

guint
sieve_node_column(const SieveNode *node)
{
  g_return_val_if_fail(node != NULL, 0);
  return node->column;
}

char *
sieve_node_where(const SieveNode *node)
{
  g_return_val_if_fail(node != NULL, NULL);
  return sieve__node_where_at(node->origin, node->line, node->column);
}

char *
sieve__node_where_at(const char *origin, guint line, guint column)
{
  /* Line 0: a value given on the command line, whose origin ("--lr 0.5")
   * is all there is to say, or a place inside a one-line value ("--set
   * a={x: 1}"), where a line number would be made up. */
  if (line == 0 && column == 0)
    return g_strdup(origin);
  if (line == 0)
    return g_strdup_printf("%s (column %u of the value)", origin, column);
  /* Column 0: a source that knows lines only (a Lua call). */
  if (column == 0)
    return g_strdup_printf("%s:%u", origin, line);
  return g_strdup_printf("%s:%u:%u", origin, line, column);
}

const char *
sieve_node_text(const SieveNode *node)
{
  g_return_val_if_fail(node != NULL && node->kind == SIEVE_NODE_SCALAR, NULL);
  return node->text;
}

gboolean
sieve_node_is_quoted(const SieveNode *node)
{
  g_return_val_if_fail(node != NULL, FALSE);
  return node->kind == SIEVE_NODE_SCALAR && node->quoted;
}

static gboolean
text_is_null(const char *t)
{
  return t[0] == '\0' || strcmp(t, "~") == 0 || strcmp(t, "null") == 0 || strcmp(t, "Null") == 0 ||
         strcmp(t, "NULL") == 0;
}

gboolean
sieve_node_is_null(const SieveNode *node)
{
  g_return_val_if_fail(node != NULL, FALSE);
  return node->kind == SIEVE_NODE_SCALAR && !node->quoted && text_is_null(node->text);
}

guint
sieve_node_size(const SieveNode *node)
{
  g_return_val_if_fail(node != NULL, 0);
  return node->values ? node->values->len : 0;
}

SieveNode *
sieve_node_nth(const SieveNode *node, guint i)
{
  g_return_val_if_fail(node != NULL && node->values != NULL, NULL);
  g_return_val_if_fail(i < node->values->len, NULL);
  return node->values->pdata[i];
}

SieveNode *
sieve_node_nth_key(const SieveNode *map, guint i)
{
  g_return_val_if_fail(map != NULL && map->kind == SIEVE_NODE_MAP, NULL);
  g_return_val_if_fail(i < map->keys->len, NULL);
  return map->keys->pdata[i];
}

SieveNode *
sieve_node_lookup(const SieveNode *map, const char *key)
{
  g_return_val_if_fail(key != NULL, NULL);
  /* NULL or not a map: nothing there, so that lookups can be chained over
   * user data without checks at every step. */
  if (map == NULL || map->kind != SIEVE_NODE_MAP)
    return NULL;
  gint i = map_index(map, key);
  return i < 0 ? NULL : map->values->pdata[i];
}

/* ---- typed reads (YAML 1.2 core schema) --------------------------------- */

const char *
sieve__node_kind_noun(SieveNodeKind kind)
{
  switch (kind) {
  case SIEVE_NODE_MAP:
    return "a map";
  case SIEVE_NODE_LIST:
    return "a list";
  default:
    return "a scalar";
  }
}

/* What a scalar is, for "got ..." when it is not what was asked for. */
static char *
describe_got(const SieveNode *node, const char *why)
{
  if (node->kind != SIEVE_NODE_SCALAR)
    return g_strdup(sieve__node_kind_noun(node->kind));
  if (node->quoted)
    return g_strdup_printf("'%s' (a quoted string)", node->text);
  if (node->text[0] == '\0')
    return g_strdup("nothing");
  if (text_is_null(node->text))
    return g_strdup_printf("'%s' (null)", node->text);
  if (why)
    return g_strdup_printf("'%s' (%s)", node->text, why);
  return g_strdup_printf("'%s'", node->text);
}

/* Core schema integer: [-+]?[0-9]+ | [-+]?0x[0-9a-fA-F]+ | [-+]?0o[0-7]+.
 * Returns FALSE on syntax; *overflow tells a valid but too large number. */
static gboolean
parse_int(const char *t, gint64 *out, gboolean *overflow)
{
  gboolean negative = FALSE;
  guint base = 10;
  *overflow = FALSE;
  if (*t == '+' || *t == '-')
    negative = *t++ == '-';
  if (t[0] == '0' && (t[1] == 'x' || t[1] == 'o')) {
    base = t[1] == 'x' ? 16 : 8;
    t += 2;
  }
  if (*t == '\0')
    return FALSE;
  guint64 value = 0;
  const guint64 limit = negative ? (guint64)G_MAXINT64 + 1 : (guint64)G_MAXINT64;
  for (; *t; t++) {
    gint digit = g_ascii_xdigit_value(*t);
    if (digit < 0 || (guint)digit >= base)
      return FALSE;
    if (value > (limit - (guint)digit) / base)
      *overflow = TRUE;
    else
      value = value * base + (guint)digit;
  }
  if (*overflow)
    return TRUE;
  *out = negative ? (gint64)(0 - value) : (gint64)value;
  return TRUE;
}

/* Core schema float: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?,
 * [-+]?\.(inf|Inf|INF), \.(nan|NaN|NAN). */
static gboolean
parse_float_syntax(const char *t, double *out)
{
  const char *s = t;
  gboolean negative = FALSE;
  if (strcmp(s, ".nan") == 0 || strcmp(s, ".NaN") == 0 || strcmp(s, ".NAN") == 0) {
    *out = NAN;
    return TRUE;
  }
  if (*s == '+' || *s == '-')
    negative = *s++ == '-';
  if (strcmp(s, ".inf") == 0 || strcmp(s, ".Inf") == 0 || strcmp(s, ".INF") == 0) {
    *out = negative ? -INFINITY : INFINITY;
    return TRUE;
  }
  guint int_digits = 0, frac_digits = 0;
  while (g_ascii_isdigit(*s))
    s++, int_digits++;
  if (*s == '.') {
    s++;
    while (g_ascii_isdigit(*s))
      s++, frac_digits++;
  }
  if (int_digits == 0 && frac_digits == 0)
    return FALSE;
  if (*s == 'e' || *s == 'E') {
    s++;
    if (*s == '+' || *s == '-')
      s++;
    if (!g_ascii_isdigit(*s))
      return FALSE;
    while (g_ascii_isdigit(*s))
      s++;
  }
  if (*s != '\0')
    return FALSE;
  *out = g_ascii_strtod(t, NULL);
  return TRUE;
}

char *
sieve__node_read_bool(const SieveNode *node, gboolean *out)
{
  if (node->kind == SIEVE_NODE_SCALAR && !node->quoted) {
    const char *t = node->text;
    if (strcmp(t, "true") == 0 || strcmp(t, "True") == 0 || strcmp(t, "TRUE") == 0) {
      *out = TRUE;
      return NULL;
    }
    if (strcmp(t, "false") == 0 || strcmp(t, "False") == 0 || strcmp(t, "FALSE") == 0) {
      *out = FALSE;
      return NULL;
    }
  }
  return describe_got(node, NULL);
}

char *
sieve__node_read_int(const SieveNode *node, gint64 *out)
{
  if (node->kind != SIEVE_NODE_SCALAR || node->quoted)
    return describe_got(node, NULL);
  gboolean overflow;
  gint64 value;
  if (parse_int(node->text, &value, &overflow)) {
    if (overflow)
      return describe_got(node, "too large for a 64-bit integer");
    *out = value;
    return NULL;
  }
  double d;
  if (parse_float_syntax(node->text, &d)) {
    /* 1e3 is a float in YAML; say how to write it as an integer. */
    if (isfinite(d) && d == floor(d) && fabs(d) < 9.2e18) {
      g_autofree char *why = g_strdup_printf("a float; write %" G_GINT64_FORMAT, (gint64)d);
      return describe_got(node, why);
    }
    return describe_got(node, "a float");
  }
  return describe_got(node, NULL);
}

char *
sieve__node_read_double(const SieveNode *node, double *out)
{
  if (node->kind != SIEVE_NODE_SCALAR || node->quoted)
    return describe_got(node, NULL);
  gboolean overflow;
  gint64 value;
  if (parse_int(node->text, &value, &overflow)) {
    if (!overflow) {
      *out = (double)value;
      return NULL;
    }
    /* Past 64 bits a decimal integer is still a fine (rounded) double. */
    if (strchr(node->text, 'x') == NULL && strchr(node->text, 'o') == NULL) {
      *out = g_ascii_strtod(node->text, NULL);
      return NULL;
    }
    return describe_got(node, "too large");
  }
  double d;
  if (parse_float_syntax(node->text, &d)) {
    if (isinf(d) && strchr(node->text, 'i') == NULL && strchr(node->text, 'I') == NULL)
      return describe_got(node, "too large for a double");
    *out = d;
    return NULL;
  }
  return describe_got(node, NULL);
}

char *
sieve__node_read_string(const SieveNode *node, gboolean allow_null, const char **out)
{
  if (node->kind != SIEVE_NODE_SCALAR || (!allow_null && sieve_node_is_null(node)))
    return describe_got(node, NULL);
  *out = node->text;
  return NULL;
}

gboolean
sieve_node_get_bool(const SieveNode *node, gboolean *out, GError **error)
{
  g_return_val_if_fail(node != NULL && out != NULL, FALSE);
  g_autofree char *got = sieve__node_read_bool(node, out);
  if (got)
    sieve_node_set_error(error, node, "expected true or false, got %s", got);
  return got == NULL;
}

gboolean
sieve_node_get_int(const SieveNode *node, gint64 *out, GError **error)
{
  g_return_val_if_fail(node != NULL && out != NULL, FALSE);
  g_autofree char *got = sieve__node_read_int(node, out);
  if (got)
    sieve_node_set_error(error, node, "expected an integer, got %s", got);
  return got == NULL;
}

gboolean
sieve_node_get_double(const SieveNode *node, double *out, GError **error)
{
  g_return_val_if_fail(node != NULL && out != NULL, FALSE);
  g_autofree char *got = sieve__node_read_double(node, out);
  if (got)
    sieve_node_set_error(error, node, "expected a number, got %s", got);
  return got == NULL;
}

const char *
sieve_node_get_string(const SieveNode *node, GError **error)
{
  g_return_val_if_fail(node != NULL, NULL);
  const char *text = NULL;
  g_autofree char *got = sieve__node_read_string(node, TRUE, &text);
  if (got)
    sieve_node_set_error(error, node, "expected a string, got %s", got);
  return text;
}

/* ---- errors --------------------------------------------------------------- */

void
sieve_node_set_error(GError **error, const SieveNode *node, const char *format, ...)
{
  if (error == NULL)
    return;
  va_list args;
  va_start(args, format);
  g_autofree char *message = g_strdup_vprintf(format, args);
  va_end(args);
  if (node == NULL) {
    g_set_error_literal(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, message);
    return;
  }
  g_autofree char *where = sieve_node_where(node);
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "%s: %s", where, message);
}

/* ---- --set overrides ------------------------------------------------------ */

gboolean
sieve_node_set_path(SieveNode *root, const char *path, const char *value_text, const char *origin,
                    GError **error)
{
  g_return_val_if_fail(root != NULL && path != NULL && value_text != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

  g_autoptr(SieveNode) value = NULL;
  const char *p = value_text;
  while (g_ascii_isspace(*p))
    p++;
  if (*p == '\0') {
    /* "--set a.b=" means null, not the empty map an empty document gives. */
    value = sieve_node_new_scalar("", FALSE, origin, 0, 0);
  } else {
    value = sieve__node_parse_value(value_text, origin, error);
    if (value == NULL)
      return FALSE;
  }

  g_auto(GStrv) parts = g_strsplit(path, ".", -1);
  for (guint i = 0; parts[i]; i++) {
    if (parts[i][0] == '\0') {
      sieve_node_set_error(error, value, "invalid option path '%s' (empty component)", path);
      return FALSE;
    }
  }
  if (root->kind != SIEVE_NODE_MAP) {
    sieve_node_set_error(error, value, "cannot set '%s': the configuration is %s, not a map", path,
                         sieve__node_kind_noun(root->kind));
    return FALSE;
  }

  /* Walk down: a map's key, or a list's 0-based index ("objective.1.metric"). */
  SieveNode *parent = root;
  guint n = g_strv_length(parts);
  for (guint i = 0; i < n; i++) {
    gboolean last = i + 1 == n;
    SieveNode *child = NULL;
    guint64 index = 0;
    if (parent->kind == SIEVE_NODE_LIST) {
      if (!g_ascii_string_to_unsigned(parts[i], 10, 0, G_MAXUINT, &index, NULL) || index >= parent->values->len) {
        g_autofree char *where = sieve_node_where(parent);
        sieve_node_set_error(error, value, "cannot set '%s': '%s' is not an index of the list at %s (0 to %u)", path,
                             parts[i], where, parent->values->len - 1);
        return FALSE;
      }
      child = parent->values->pdata[index];
    } else {
      child = sieve_node_lookup(parent, parts[i]);
    }
    if (last) {
      if (parent->kind == SIEVE_NODE_LIST) {
        sieve_node_unref(parent->values->pdata[index]);
        parent->values->pdata[index] = g_steal_pointer(&value);
      } else {
        sieve_node_map_set(parent, parts[i], g_steal_pointer(&value));
      }
      return TRUE;
    }
    if (child == NULL) {
      child = sieve__node_new(SIEVE_NODE_MAP, value->origin, value->line, value->column);
      sieve_node_map_set(parent, parts[i], child);
    } else if (child->kind == SIEVE_NODE_SCALAR) {
      /* Rebuild "a.b" up to and including component i. */
      g_autoptr(GString) through = g_string_new(parts[0]);
      for (guint j = 1; j <= i; j++)
        g_string_append_printf(through, ".%s", parts[j]);
      g_autofree char *where = sieve_node_where(child);
      sieve_node_set_error(error, value, "cannot set '%s': '%s' is %s (%s), not a map or a list", path,
                           through->str, sieve__node_kind_noun(child->kind), where);
      return FALSE;
    }
    parent = child;
  }
  g_assert_not_reached();
}

/* ---- canonical YAML ------------------------------------------------------- */

/* Can text be written as a plain scalar in block context and read back as
 * the same text?  Conservative: anything doubtful is quoted. */
static gboolean
plain_is_safe(const char *t)
{
  gsize len = strlen(t);
  if (len == 0 || t[0] == ' ' || t[len - 1] == ' ' || t[len - 1] == ':')
    return FALSE;
  if (strchr("[]{},#&*!|>'\"%@`", t[0]))
    return FALSE;
  if (strchr("-?:", t[0]) && (t[1] == '\0' || t[1] == ' '))
    return FALSE;
  if (g_str_has_prefix(t, "---") || g_str_has_prefix(t, "..."))
    return FALSE;
  if (strstr(t, ": ") || strstr(t, " #"))
    return FALSE;
  for (const guchar *p = (const guchar *)t; *p; p++)
    if (*p < 0x20 || *p == 0x7f)
      return FALSE;
  return TRUE;
}

/* A JSON string is a YAML double-quoted scalar (YAML 1.2 is a superset of
 * JSON), so the one JSON escaper serves here too. */
static void
emit_quoted(GString *out, const char *t)
{
  sieve_json_append_string(out, t);
}

static void
emit_scalar(GString *out, const SieveNode *node)
{
  if (!node->quoted && plain_is_safe(node->text))
    g_string_append(out, node->text);
  else
    emit_quoted(out, node->text);
}

static gboolean
is_inline(const SieveNode *node)
{
  return node->kind == SIEVE_NODE_SCALAR || node->values->len == 0;
}

/* A value that fits after "key:" or "-": " text", " {}", " []" or nothing
 * for a plain empty scalar (null). */
static void
emit_inline(GString *out, const SieveNode *node)
{
  if (node->kind == SIEVE_NODE_MAP) {
    g_string_append(out, " {}");
  } else if (node->kind == SIEVE_NODE_LIST) {
    g_string_append(out, " []");
  } else if (node->quoted || node->text[0] != '\0') {
    g_string_append_c(out, ' ');
    emit_scalar(out, node);
  }
}

/* Block map or list at indent; the first line's indentation is left out
 * when it follows "- " on the parent's line. */
static void
emit_block(GString *out, const SieveNode *node, guint indent, gboolean first_inline)
{
  for (guint i = 0; i < node->values->len; i++) {
    const SieveNode *value = node->values->pdata[i];
    if (i > 0 || !first_inline)
      g_string_append_printf(out, "%*s", (int)indent, "");
    if (node->kind == SIEVE_NODE_MAP) {
      const SieveNode *key = node->keys->pdata[i];
      if (!key->quoted && key->text[0] == '\0')
        g_string_append(out, "\"\"");
      else
        emit_scalar(out, key);
      g_string_append_c(out, ':');
      if (is_inline(value)) {
        emit_inline(out, value);
        g_string_append_c(out, '\n');
      } else {
        g_string_append_c(out, '\n');
        emit_block(out, value, indent + 2, FALSE);
      }
    } else {
      g_string_append_c(out, '-');
      if (is_inline(value)) {
        emit_inline(out, value);
        g_string_append_c(out, '\n');
      } else {
        g_string_append_c(out, ' ');
        emit_block(out, value, indent + 2, TRUE);
      }
    }
  }
}

char *
sieve_node_to_yaml(const SieveNode *node)
{
  g_return_val_if_fail(node != NULL, NULL);
  GString *out = g_string_new(NULL);
  if (node->kind == SIEVE_NODE_SCALAR) {
    if (!node->quoted && node->text[0] == '\0')
      g_string_append(out, "~"); /* an empty document would read as an empty map */
    else
      emit_scalar(out, node);
    g_string_append_c(out, '\n');
  } else if (node->values->len == 0) {
    g_string_append(out, node->kind == SIEVE_NODE_MAP ? "{}\n" : "[]\n");
  } else {
    emit_block(out, node, 0, FALSE);
  }
  return g_string_free(out, FALSE);
}

/* ---- suggestions ---------------------------------------------------------- */

/* Optimal-string-alignment distance: Levenshtein plus the swap of two
 * neighbouring letters as one edit, since "rnu" for "run" is the commonest
 * typo of all.  Three rows are enough. */
guint
sieve_edit_distance(const char *a, const char *b)
{
  g_return_val_if_fail(a != NULL && b != NULL, G_MAXUINT);
  gsize la = strlen(a), lb = strlen(b);
  g_autofree guint *rows = g_new(guint, 3 * (lb + 1));
  guint *prev2 = rows, *prev = rows + lb + 1, *cur = rows + 2 * (lb + 1);
  for (gsize j = 0; j <= lb; j++)
    prev[j] = (guint)j;
  for (gsize i = 1; i <= la; i++) {
    cur[0] = (guint)i;
    for (gsize j = 1; j <= lb; j++) {
      guint best = prev[j - 1] + (a[i - 1] != b[j - 1]);
      best = MIN(best, prev[j] + 1);
      best = MIN(best, cur[j - 1] + 1);
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        best = MIN(best, prev2[j - 2] + 1);
      cur[j] = best;
    }
    guint *t = prev2;
    prev2 = prev;
    prev = cur;
    cur = t;
  }
  return prev[lb];
}

const char *
sieve_suggest(const char *word, const char *const *candidates)
{
  g_return_val_if_fail(word != NULL, NULL);
  if (candidates == NULL)
    return NULL;
  gsize len = strlen(word);
  guint threshold = MAX(1, (guint)len / 3);
  const char *best = NULL;
  guint best_score = G_MAXUINT;
  for (guint i = 0; candidates[i]; i++) {
    const char *c = candidates[i];
    guint score;
    if (g_ascii_strcasecmp(word, c) == 0)
      score = 0;
    else {
      score = sieve_edit_distance(word, c) + 1;
      gboolean close = score - 1 <= threshold;
      /* "pop" for "population": a prefix of three letters or more is a clear intent. */
      gboolean prefix = len >= 3 && (g_str_has_prefix(c, word) || g_str_has_prefix(word, c));
      if (!close && !prefix)
        continue;
    }
    if (score < best_score) {
      best_score = score;
      best = c;
    }
  }
  return best;
}
