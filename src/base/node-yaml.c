/* sieve: YAML text -> SieveNode trees, with libyaml's event API.
 *
 * libyaml reports problems as a text plus a 0-based mark; every one of them
 * becomes a SIEVE_ERROR_CONFIG "origin:line:col: problem (context)" here,
 * in one place (parser_error).  Configs are plain data: anchors, aliases,
 * unknown tags, non-scalar keys, duplicate keys and several documents are
 * refused, each at its location. */
#include "base/base-private.h"

#include <string.h>
#include <yaml.h>

/* Deeper than any sane config; keeps "[[[[..." from exhausting the stack. */
#define MAX_DEPTH 256

typedef struct {
  yaml_parser_t parser;
  char *origin; /* GRefString */
  const char *input;
  gsize len;
  GError **error;
  /* A one-line value given on the command line (sieve__node_parse_value):
   * its nodes are at line 0 and a column of the value, as errors say. */
  gboolean one_line_value;
  /* sieve__node_parse_string_repeats: a key written twice with the same
   * scalar value is read once. */
  gboolean same_duplicates;
} Parse;

static void
error_at(Parse *p, const yaml_mark_t *mark, const char *format, ...) G_GNUC_PRINTF(3, 4);

static void
error_at(Parse *p, const yaml_mark_t *mark, const char *format, ...)
{
  va_list args;
  va_start(args, format);
  g_autofree char *message = g_strdup_vprintf(format, args);
  va_end(args);
  g_autofree char *where = p->one_line_value
                               ? sieve__node_where_at(p->origin, 0, (guint)mark->column + 1)
                               : sieve__node_where_at(p->origin, (guint)mark->line + 1, (guint)mark->column + 1);
  g_set_error(p->error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "%s: %s", where, message);
}

/* The byte at mark's line and column (columns count characters), or 0. */
static char
char_at(const Parse *p, const yaml_mark_t *mark)
{
  gsize i = 0;
  for (gsize line = 0; line < mark->line && i < p->len; i++)
    if (p->input[i] == '\n')
      line++;
  for (gsize column = 0; i < p->len && p->input[i] != '\n'; i++) {
    if (((guchar) p->input[i] & 0xc0) == 0x80)
      continue; /* inside a UTF-8 sequence */
    if (column++ == mark->column)
      return p->input[i];
  }
  return 0;
}

static void
parser_error(Parse *p)
{
  yaml_parser_t *y = &p->parser;
  yaml_mark_t mark = y->problem_mark;
  if (y->error == YAML_READER_ERROR) {
    /* Reader errors (bad encoding) come with a byte offset, not a mark. */
    memset(&mark, 0, sizeof mark);
    for (gsize i = 0; i < y->problem_offset && i < p->len; i++) {
      if (p->input[i] == '\n') {
        mark.line++;
        mark.column = 0;
      } else if (((guchar)p->input[i] & 0xc0) != 0x80) {
        mark.column++;
      }
    }
  }
  if (y->error != YAML_READER_ERROR && mark.index >= p->len) {
    /* At the end, libyaml counts a line break the text may not have: a
     * one-line "--set a=[1, 2" should point after the 2, not at line 2. */
    memset(&mark, 0, sizeof mark);
    for (gsize i = 0; i < p->len; i++) {
      if (p->input[i] == '\n') {
        mark.line++;
        mark.column = 0;
      } else if (((guchar)p->input[i] & 0xc0) != 0x80) {
        mark.column++;
      }
    }
  }
  const char *problem = y->problem ? y->problem : "invalid YAML";
  if (y->error == YAML_MEMORY_ERROR)
    problem = "out of memory";
  /* libyaml's words for a tab where a token should start do not say that
   * the character it found is a tab. */
  gboolean tab = y->error == YAML_SCANNER_ERROR && char_at(p, &mark) == '\t' && strstr(problem, "tab") == NULL;
  const char *hint = tab ? "; a tab cannot indent YAML: use spaces" : "";
  if (y->context)
    error_at(p, &mark, "%s (%s)%s", problem, y->context, hint);
  else
    error_at(p, &mark, "%s%s", problem, hint);
}

static gboolean
next_event(Parse *p, yaml_event_t *event)
{
  if (yaml_parser_parse(&p->parser, event))
    return TRUE;
  parser_error(p);
  return FALSE;
}

/* Anchors and tags other than the plain-data ones are refused. */
static gboolean
check_props(Parse *p, const yaml_event_t *event, const yaml_char_t *anchor, const yaml_char_t *tag,
            gboolean *quoted)
{
  if (anchor) {
    error_at(p, &event->start_mark,
             "anchors are not supported ('&%s'): write the value out in full", anchor);
    return FALSE;
  }
  if (tag == NULL)
    return TRUE;
  const char *t = (const char *)tag;
  if (strcmp(t, YAML_STR_TAG) == 0 && event->type != YAML_SCALAR_EVENT) {
    error_at(p, &event->start_mark, "'!!str' makes a scalar a string; it cannot tag a %s",
             event->type == YAML_MAPPING_START_EVENT ? "map" : "list");
    return FALSE;
  }
  if (strcmp(t, "!") == 0 || strcmp(t, YAML_STR_TAG) == 0) {
    if (quoted)
      *quoted = TRUE; /* "!!str 1" is the string "1" */
    return TRUE;
  }
  if ((event->type == YAML_MAPPING_START_EVENT && strcmp(t, YAML_MAP_TAG) == 0) ||
      (event->type == YAML_SEQUENCE_START_EVENT && strcmp(t, YAML_SEQ_TAG) == 0))
    return TRUE;
  if (g_str_has_prefix(t, "tag:yaml.org,2002:"))
    error_at(p, &event->start_mark, "tags are not supported ('!!%s')", t + strlen("tag:yaml.org,2002:"));
  else
    error_at(p, &event->start_mark, "tags are not supported ('%s')", t);
  return FALSE;
}

/* Builds the node that starts with event; takes ownership of event. */
static SieveNode *
parse_node(Parse *p, yaml_event_t *event, guint depth)
{
  const yaml_mark_t *mark = &event->start_mark;
  guint line = p->one_line_value ? 0 : (guint)mark->line + 1, column = (guint)mark->column + 1;
  SieveNode *node = NULL;

  if (depth > MAX_DEPTH) {
    error_at(p, mark, "nesting deeper than %d levels", MAX_DEPTH);
    goto fail;
  }

  switch (event->type) {
  case YAML_SCALAR_EVENT: {
    gboolean quoted = event->data.scalar.style != YAML_PLAIN_SCALAR_STYLE &&
                      event->data.scalar.style != YAML_ANY_SCALAR_STYLE;
    if (!check_props(p, event, event->data.scalar.anchor, event->data.scalar.tag, &quoted))
      goto fail;
    /* A "\0" escape: every text sieve reads from here ends at its first
     * NUL, so "random\0junk" would quietly be "random". */
    if (memchr(event->data.scalar.value, '\0', event->data.scalar.length) != NULL) {
      error_at(p, mark, "a NUL character (\\0) in a text: texts end at one, so this one would be cut short; "
                        "write it without");
      goto fail;
    }
    node = sieve__node_new(SIEVE_NODE_SCALAR, p->origin, line, column);
    node->text = g_strndup((const char *)event->data.scalar.value, event->data.scalar.length);
    node->quoted = quoted;
    yaml_event_delete(event);
    return node;
  }
  case YAML_ALIAS_EVENT:
    error_at(p, mark, "aliases are not supported ('*%s'): write the value out in full",
             event->data.alias.anchor);
    goto fail;
  case YAML_SEQUENCE_START_EVENT: {
    if (!check_props(p, event, event->data.sequence_start.anchor,
                     event->data.sequence_start.tag, NULL))
      goto fail;
    node = sieve__node_new(SIEVE_NODE_LIST, p->origin, line, column);
    yaml_event_delete(event);
    for (;;) {
      if (!next_event(p, event))
        goto fail_node;
      if (event->type == YAML_SEQUENCE_END_EVENT)
        break;
      SieveNode *item = parse_node(p, event, depth + 1);
      if (item == NULL)
        goto fail_node;
      g_ptr_array_add(node->values, item);
    }
    yaml_event_delete(event);
    return node;
  }
  case YAML_MAPPING_START_EVENT: {
    if (!check_props(p, event, event->data.mapping_start.anchor, event->data.mapping_start.tag,
                     NULL))
      goto fail;
    node = sieve__node_new(SIEVE_NODE_MAP, p->origin, line, column);
    yaml_event_delete(event);
    for (;;) {
      if (!next_event(p, event))
        goto fail_node;
      if (event->type == YAML_MAPPING_END_EVENT)
        break;
      SieveNode *key = parse_node(p, event, depth + 1);
      if (key == NULL)
        goto fail_node;
      if (key->kind != SIEVE_NODE_SCALAR) {
        sieve_node_set_error(p->error, key, "map keys must be scalars, not %s",
                             sieve__node_kind_noun(key->kind));
        sieve_node_unref(key);
        goto fail_node;
      }
      SieveNode *first = NULL, *first_value = NULL;
      for (guint i = 0; i < node->keys->len && !first; i++)
        if (strcmp(((SieveNode *)node->keys->pdata[i])->text, key->text) == 0) {
          first = node->keys->pdata[i];
          first_value = node->values->pdata[i];
        }
      if (first && p->same_duplicates && first_value->kind == SIEVE_NODE_SCALAR) {
        /* The key again: accepted when its value is the same scalar. */
        if (!next_event(p, event)) {
          sieve_node_unref(key);
          goto fail_node;
        }
        SieveNode *again = parse_node(p, event, depth + 1);
        gboolean same = again != NULL && again->kind == SIEVE_NODE_SCALAR && again->quoted == first_value->quoted &&
                        g_strcmp0(again->text, first_value->text) == 0;
        if (again != NULL && !same)
          sieve_node_set_error(p->error, again, "key '%s' again with another value (first written at line %u, column %u)",
                               key->text, first->line, first->column);
        g_clear_pointer(&again, sieve_node_unref);
        sieve_node_unref(key);
        if (!same)
          goto fail_node;
        continue;
      }
      if (first) {
        if (p->one_line_value)
          sieve_node_set_error(p->error, key, "duplicate key '%s' (first written at column %u)", key->text,
                               first->column);
        else
          sieve_node_set_error(p->error, key, "duplicate key '%s' (first written at line %u, column %u)",
                               key->text, first->line, first->column);
        sieve_node_unref(key);
        goto fail_node;
      }
      if (!next_event(p, event)) {
        sieve_node_unref(key);
        goto fail_node;
      }
      SieveNode *value = parse_node(p, event, depth + 1);
      if (value == NULL) {
        sieve_node_unref(key);
        goto fail_node;
      }
      sieve__node_map_append(node, key, value);
    }
    yaml_event_delete(event);
    return node;
  }
  default:
    /* The parser never hands other events here for a well-formed stream. */
    error_at(p, mark, "unexpected YAML event");
    goto fail;
  }

fail:
  yaml_event_delete(event);
  return NULL;
fail_node:
  sieve_node_unref(node);
  return NULL;
}

static SieveNode *
parse_stream(Parse *p)
{
  yaml_event_t event;
  SieveNode *root = NULL;

  if (!next_event(p, &event))
    return NULL;
  g_assert(event.type == YAML_STREAM_START_EVENT);
  yaml_event_delete(&event);

  if (!next_event(p, &event))
    return NULL;
  if (event.type == YAML_STREAM_END_EVENT) {
    /* No document at all (empty file, only comments): no options. */
    yaml_event_delete(&event);
    return sieve__node_new(SIEVE_NODE_MAP, p->origin, 1, 1);
  }
  g_assert(event.type == YAML_DOCUMENT_START_EVENT);
  yaml_event_delete(&event);

  if (!next_event(p, &event))
    return NULL;
  root = parse_node(p, &event, 0);
  if (root == NULL)
    return NULL;

  if (!next_event(p, &event))
    goto fail;
  g_assert(event.type == YAML_DOCUMENT_END_EVENT);
  yaml_event_delete(&event);

  if (!next_event(p, &event))
    goto fail;
  if (event.type == YAML_DOCUMENT_START_EVENT) {
    error_at(p, &event.start_mark, "only one YAML document is allowed here (found a second one)");
    yaml_event_delete(&event);
    goto fail;
  }
  yaml_event_delete(&event);

  if (root->kind == SIEVE_NODE_SCALAR && !root->quoted && root->text[0] == '\0') {
    /* "---" alone: an empty document is an empty map. */
    SieveNode *map = sieve__node_new(SIEVE_NODE_MAP, p->origin, root->line, root->column);
    sieve_node_unref(root);
    return map;
  }
  return root;

fail:
  sieve_node_unref(root);
  return NULL;
}

static SieveNode *
parse_text(const char *text, gssize len, const char *origin, gboolean value, gboolean same_duplicates,
           GError **error)
{
  Parse p = {0};
  p.same_duplicates = same_duplicates;
  p.input = text;
  p.len = len < 0 ? strlen(text) : (gsize)len;
  /* A UTF-8 byte order mark (editors on Windows write one): libyaml keeps
   * it as content when told the encoding, and the encoding stays forced so
   * that a bad byte is reported, not guessed at. */
  if (p.len >= 3 && memcmp(p.input, "\xef\xbb\xbf", 3) == 0) {
    p.input += 3;
    p.len -= 3;
  }
  p.origin = g_ref_string_new_intern(origin ? origin : "<string>");
  p.error = error;
  p.one_line_value = value && memchr(p.input, '\n', p.len) == NULL && memchr(p.input, '\r', p.len) == NULL;
  if (!yaml_parser_initialize(&p.parser)) {
    g_ref_string_release(p.origin);
    g_error("libyaml: out of memory");
  }
  yaml_parser_set_input_string(&p.parser, (const unsigned char *)p.input, p.len);
  yaml_parser_set_encoding(&p.parser, YAML_UTF8_ENCODING);

  SieveNode *root = parse_stream(&p);

  yaml_parser_delete(&p.parser);
  g_ref_string_release(p.origin);
  return root;
}

SieveNode *
sieve_node_parse_string(const char *text, gssize len, const char *origin, GError **error)
{
  g_return_val_if_fail(text != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  return parse_text(text, len, origin, FALSE, FALSE, error);
}

SieveNode *
sieve__node_parse_string_repeats(const char *text, const char *origin, GError **error)
{
  g_return_val_if_fail(text != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  return parse_text(text, -1, origin, FALSE, TRUE, error);
}

SieveNode *
sieve__node_parse_value(const char *text, const char *origin, GError **error)
{
  g_return_val_if_fail(text != NULL && origin != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  SieveNode *value = parse_text(text, -1, origin, TRUE, FALSE, error);
  if (value != NULL)
    value->line = value->column = 0; /* the whole value: named by its origin alone */
  return value;
}

SieveNode *
sieve_node_parse_file(const char *path, GError **error)
{
  g_return_val_if_fail(path != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);

  g_autofree char *contents = NULL;
  gsize len = 0;
  g_autoptr(GError) local = NULL;
  if (!g_file_get_contents(path, &contents, &len, &local)) {
    gboolean missing = g_error_matches(local, G_FILE_ERROR, G_FILE_ERROR_NOENT);
    g_set_error(error, SIEVE_ERROR, missing ? SIEVE_ERROR_NOT_FOUND : SIEVE_ERROR_IO, "%s",
                local->message);
    return NULL;
  }
  return sieve_node_parse_string(contents, (gssize)len, path, error);
}
