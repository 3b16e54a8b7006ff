/* command evaluator: the protocol line (protocol.h). */
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include <sieve/node.h>
#include <sieve/result.h>
#include <sieve/text.h>

#include "protocol.h"

/* How much of a bad line or of stderr a reason quotes. */
#define QUOTE_CHARS 80
/* Bounds on the protocol line, checked before json-glib sees it: its parser
 * recurses once per level of nesting, so a line of 100,000 '[' would
 * overflow the C stack, and a metrics object needs neither depth nor
 * megabytes. */
#define METRICS_MAX_DEPTH 32
#define METRICS_MAX_BYTES (1u << 20)

/* text cut to QUOTE_CHARS characters (on a UTF-8 boundary) with "...". */
char *
command_quote(const char *text)
{
  if (!g_utf8_validate(text, -1, NULL))
    return g_strdup_printf("%.*s%s", QUOTE_CHARS, text, strlen(text) > QUOTE_CHARS ? "..." : "");
  if (g_utf8_strlen(text, -1) <= QUOTE_CHARS)
    return g_strdup(text);
  g_autofree char *cut = g_utf8_substring(text, 0, QUOTE_CHARS);
  return g_strdup_printf("%s...", cut);
}

/* Python's json module writes NaN, Infinity and -Infinity, which JSON does
 * not have; a diverged loss is common enough that such a line must not
 * read as garbage.  Outside strings, each becomes a string holding a
 * marker byte (\u0001 can only come from this rewrite in practice), which
 * read_metrics() turns back into the number.  (transfer full) (nullable)
 * NULL when there is nothing to rewrite. */
#define NONFINITE_MARK '\001'

static char *
rewrite_nonfinite(const char *line)
{
  static const char *const words[] = {"-Infinity", "Infinity", "NaN"};
  GString *out = g_string_new(NULL);
  gboolean in_string = FALSE, changed = FALSE;
  for (const char *p = line; *p;) {
    if (in_string) {
      if (*p == '\\' && p[1]) {
        g_string_append_len(out, p, 2);
        p += 2;
        continue;
      }
      in_string = *p != '"';
      g_string_append_c(out, *p++);
      continue;
    }
    if (*p == '"') {
      in_string = TRUE;
      g_string_append_c(out, *p++);
      continue;
    }
    gboolean replaced = FALSE;
    gboolean boundary_before = p == line || !(g_ascii_isalnum(p[-1]) || p[-1] == '_');
    for (guint w = 0; w < G_N_ELEMENTS(words) && boundary_before && !replaced; w++) {
      gsize n = strlen(words[w]);
      if (strncmp(p, words[w], n) == 0 && !(g_ascii_isalnum(p[n]) || p[n] == '_')) {
        g_string_append_printf(out, "\"\\u0001%s\"", words[w]);
        p += n;
        replaced = changed = TRUE;
      }
    }
    if (!replaced)
      g_string_append_c(out, *p++);
  }
  if (!changed) {
    g_string_free(out, TRUE);
    return NULL;
  }
  return g_string_free(out, FALSE);
}

/* The number a marker string stands for; FALSE for any other string. */
static gboolean
nonfinite_value(const char *text, double *out)
{
  if (text[0] != NONFINITE_MARK)
    return FALSE;
  if (strcmp(text + 1, "NaN") == 0)
    *out = NAN;
  else if (strcmp(text + 1, "Infinity") == 0)
    *out = INFINITY;
  else if (strcmp(text + 1, "-Infinity") == 0)
    *out = -INFINITY;
  else
    return FALSE;
  return TRUE;
}

/* The deepest nesting of arrays and objects in line, strings skipped; a
 * loop, not a parser, so that no input can exhaust the stack.  *one_object:
 * whether the line is one object and nothing after it but blanks (the
 * brackets balanced, whatever is inside them). */
static guint
json_depth(const char *line, gboolean *one_object)
{
  guint depth = 0, deepest = 0;
  gboolean in_string = FALSE, closed = FALSE;
  const char *p = line;
  while (g_ascii_isspace(*p))
    p++;
  *one_object = *p == '{';
  for (; *p; p++) {
    if (closed) {
      if (!g_ascii_isspace(*p))
        *one_object = FALSE;
    } else if (in_string) {
      if (*p == '\\' && p[1])
        p++;
      else if (*p == '"')
        in_string = FALSE;
    } else if (*p == '"') {
      in_string = TRUE;
    } else if (*p == '[' || *p == '{') {
      depth++;
      deepest = MAX(deepest, depth);
    } else if ((*p == ']' || *p == '}') && depth > 0) {
      closed = --depth == 0;
    }
  }
  return deepest;
}

/* Reads the protocol line into result. */
void
command_read_metrics_line(const char *line, SieveResult *result)
{
  gsize bytes = strlen(line);
  if (bytes > METRICS_MAX_BYTES) {
    g_autofree char *shown = command_quote(line);
    sieve_result_set_failed(result, "last stdout line is %" G_GSIZE_FORMAT " bytes, more than the %u a JSON "
                            "object of metrics may have: '%s'", bytes, METRICS_MAX_BYTES, shown);
    return;
  }
  gboolean one_object;
  guint depth = json_depth(line, &one_object);
  if (depth > METRICS_MAX_DEPTH) {
    g_autofree char *shown = command_quote(line);
    sieve_result_set_failed(result, "last stdout line nests %u levels deep, more than the %d a JSON object of "
                            "metrics may have: '%s'", depth, METRICS_MAX_DEPTH, shown);
    return;
  }
  /* Refused before json-glib sees it: besides being wrong, a value glued
   * to another (`{"a":1}{"b":2}`, `"s"{...}`) makes json-glib 1.6 leak the
   * second one. */
  if (!one_object) {
    g_autofree char *shown = command_quote(line);
    sieve_result_set_failed(result, "last stdout line is not a JSON object: '%s'", shown);
    return;
  }
  g_autoptr(JsonParser) parser = json_parser_new_immutable();
  JsonNode *root = NULL;
  g_autofree char *widened = sieve_json_widen_integers(line, -1);
  const char *text = widened ? widened : line;
  if (json_parser_load_from_data(parser, text, -1, NULL)) {
    root = json_parser_get_root(parser);
  } else {
    g_autofree char *rewritten = rewrite_nonfinite(text);
    if (rewritten != NULL && json_parser_load_from_data(parser, rewritten, -1, NULL))
      root = json_parser_get_root(parser);
  }
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
    g_autofree char *shown = command_quote(line);
    sieve_result_set_failed(result, "last stdout line is not a JSON object: '%s'", shown);
    return;
  }

  JsonObject *object = json_node_get_object(root);
  const char *status = NULL, *reason = NULL;
  JsonObjectIter iter;
  const char *name;
  JsonNode *value;
  json_object_iter_init_ordered(&iter, object);
  while (json_object_iter_next_ordered(&iter, &name, &value)) {
    GType type = JSON_NODE_HOLDS_VALUE(value) ? json_node_get_value_type(value) : G_TYPE_INVALID;
    double number;
    gboolean metric = TRUE;
    if (type == G_TYPE_STRING && nonfinite_value(json_node_get_string(value), &number)) {
      /* (a NaN or infinity Python wrote) */
    } else if (strcmp(name, "status") == 0 || strcmp(name, "reason") == 0) {
      if (type != G_TYPE_STRING) {
        sieve_result_set_failed(result, "member '%s' of the program's JSON line must be a string", name);
        return;
      }
      *(strcmp(name, "status") == 0 ? &status : &reason) = json_node_get_string(value);
      metric = FALSE;
    } else if (type == G_TYPE_INT64 || type == G_TYPE_DOUBLE) {
      number = json_node_get_double(value);
    } else if (type == G_TYPE_BOOLEAN) {
      number = json_node_get_boolean(value) ? 1 : 0;
    } else {
      metric = FALSE; /* strings, lists, objects: not metrics */
    }
    if (!metric)
      continue;
    /* (a name a metric cannot have fails the trial in sieve_evaluator_evaluate) */
    sieve_result_set_metric(result, name, number);
  }
  if (status == NULL || strcmp(status, "ok") == 0)
    return;
  if (strcmp(status, "failed") == 0)
    sieve_result_set_failed(result, "%s", reason != NULL && reason[0] ? reason : "the program reported a failure");
  else
    sieve_result_set_failed(result, "the program's \"status\" must be \"ok\" or \"failed\", got '%s'", status);
}

gboolean
command_line_holds_metrics(const char *line)
{
  /* Most lines a program logs are text: no object, nothing to parse. */
  while (g_ascii_isspace(*line))
    line++;
  if (*line != '{')
    return FALSE;
  g_autoptr(SieveResult) result = sieve_result_new();
  command_read_metrics_line(line, result);
  return sieve_result_get_status(result) == SIEVE_STATUS_OK && sieve_result_n_metrics(result) > 0;
}

/* A number member of a progress line: an int, a double or Python's NaN. */
static gboolean
progress_number(JsonObject *object, const char *name, double *out)
{
  JsonNode *node = json_object_get_member(object, name);
  GType type = node && JSON_NODE_HOLDS_VALUE(node) ? json_node_get_value_type(node) : G_TYPE_INVALID;
  if (type == G_TYPE_INT64 || type == G_TYPE_DOUBLE) {
    *out = json_node_get_double(node);
    return TRUE;
  }
  return type == G_TYPE_STRING && nonfinite_value(json_node_get_string(node), out);
}

#define PROGRESS_FORM "{\"intermediate\": {\"step\": INTEGER >= 0, \"value\": NUMBER}}"
#define PROGRESS_KEY "intermediate"

typedef enum {
  ATTEMPT_NONE,     /* an ordinary line: passed through */
  ATTEMPT_EXACT,    /* {"intermediate" ... : read by the protocol */
  ATTEMPT_MISSPELT, /* {"intermedate": { ... */
  ATTEMPT_PYTHON,   /* {'intermediate': { ... : Python's repr of a dict, not JSON */
} ProgressAttempt;

/* Whether the object at p ('{', JSON or Python's repr of a dict) has a
 * member "step" or "value" of its own (nested objects skipped): what makes
 * {"intermedate": {...}} an attempt at a progress line rather than a debug
 * dict such as {"intermediates": {"shape": [1, 64]}}.  A scan, not a
 * parser: the line may be Python's repr, which json-glib refuses. */
static gboolean
has_progress_member(const char *p)
{
  guint depth = 0;
  for (; *p; p++) {
    if (*p == '{' || *p == '[') {
      depth++;
    } else if (*p == '}' || *p == ']') {
      if (--depth == 0)
        return FALSE;
    } else if (*p == '"' || *p == '\'') {
      const char *begin = p + 1, *q = begin;
      while (*q && *q != *p)
        q += q[0] == '\\' && q[1] ? 2 : 1;
      if (*q == '\0')
        return FALSE;
      gsize len = (gsize) (q - begin);
      const char *after = q + 1;
      while (g_ascii_isspace(*after))
        after++;
      if (depth == 1 && *after == ':' &&
          ((len == 4 && g_ascii_strncasecmp(begin, "step", 4) == 0) ||
           (len == 5 && g_ascii_strncasecmp(begin, "value", 5) == 0)))
        return TRUE;
      p = q;
    }
  }
  return FALSE;
}

/* Whether a line is meant as a progress line.  Blanks aside, it begins
 * with { and a first key; the key "intermediate" in double quotes is the
 * protocol's.  A key in double or single quotes that is "intermediate" but
 * for case or at most two edits, followed by : and an object with a
 * "step" or "value" member, is an attempt at one (print(dict) instead of
 * json.dumps, a typo): read as "no progress",
 * it would silently turn a pruner off.  A log line that happens to begin
 * with another key passes through.  *key: the key's first byte, *key_len
 * its length. */
static ProgressAttempt
progress_attempt(const char *line, const char **key, gsize *key_len)
{
  const char *p = line;
  while (g_ascii_isspace(*p))
    p++;
  if (*p++ != '{')
    return ATTEMPT_NONE;
  while (g_ascii_isspace(*p))
    p++;
  char quote = *p;
  if (quote != '"' && quote != '\'')
    return ATTEMPT_NONE;
  const char *end = strchr(p + 1, quote);
  if (end == NULL)
    return ATTEMPT_NONE;
  *key = p + 1;
  *key_len = (gsize) (end - *key);
  if (quote == '"' && *key_len == strlen(PROGRESS_KEY) && strncmp(*key, PROGRESS_KEY, *key_len) == 0)
    return ATTEMPT_EXACT;
  if (*key_len > 16)
    return ATTEMPT_NONE;
  /* Within two edits of the key, ASCII case ignored ("Intermediate"). */
  g_autofree char *lower = g_ascii_strdown(*key, (gssize) *key_len);
  if (sieve_edit_distance(lower, PROGRESS_KEY) > 2)
    return ATTEMPT_NONE;
  for (p = end + 1; g_ascii_isspace(*p); p++)
    ;
  if (*p++ != ':')
    return ATTEMPT_NONE;
  while (g_ascii_isspace(*p))
    p++;
  if (*p != '{' || !has_progress_member(p))
    return ATTEMPT_NONE;
  return quote == '\'' ? ATTEMPT_PYTHON : ATTEMPT_MISSPELT;
}

/* json-glib keeps the last of two members with the same name; a progress
 * line with {"step": 1, "step": 2} is refused instead.  It says so with the
 * signal it emits after each member: a member that leaves its object's size
 * where it was named one already there. */
typedef struct {
  GHashTable *members; /* JsonObject* -> members seen */
  char *duplicate;     /* the first name seen twice */
} DuplicateWatch;

static void
on_object_member(JsonParser *parser, JsonObject *object, const char *name, gpointer user_data)
{
  DuplicateWatch *watch = user_data;
  guint seen = GPOINTER_TO_UINT(g_hash_table_lookup(watch->members, object)) + 1;
  g_hash_table_insert(watch->members, object, GUINT_TO_POINTER(seen));
  if (seen > json_object_get_size(object) && watch->duplicate == NULL)
    watch->duplicate = g_strdup(name);
}

CommandLineKind
command_read_progress_line(const char *line, const SieveFidelity *range, gint64 *step, double *fidelity,
                           double *value, char **problem)
{
  const char *key;
  gsize key_len;
  ProgressAttempt attempt = progress_attempt(line, &key, &key_len);
  if (attempt == ATTEMPT_NONE)
    return COMMAND_LINE_OTHER;
  g_autofree char *shown = command_quote(line);
  if (attempt == ATTEMPT_PYTHON) {
    *problem = g_strdup_printf("progress line '%s' is Python's repr of a dict (single quotes), not JSON: print "
                               "json.dumps(...) of it; expected " PROGRESS_FORM, shown);
    return COMMAND_LINE_MALFORMED;
  }
  if (attempt == ATTEMPT_MISSPELT) {
    *problem = g_strdup_printf("progress line '%s' has the key \"%.*s\": expected " PROGRESS_FORM, shown,
                               (int) key_len, key);
    return COMMAND_LINE_MALFORMED;
  }
  gboolean one_object;
  if (strlen(line) > METRICS_MAX_BYTES || json_depth(line, &one_object) > 3 || !one_object) {
    *problem = g_strdup_printf("malformed progress line '%s': expected " PROGRESS_FORM, shown);
    return COMMAND_LINE_MALFORMED;
  }
  g_autoptr(JsonParser) parser = json_parser_new_immutable();
  g_autoptr(GHashTable) members = g_hash_table_new(NULL, NULL);
  DuplicateWatch watch = {members, NULL};
  g_signal_connect(parser, "object-member", G_CALLBACK(on_object_member), &watch);
  g_autofree char *widened = sieve_json_widen_integers(line, -1);
  g_autofree char *rewritten = rewrite_nonfinite(widened ? widened : line);
  JsonNode *root = json_parser_load_from_data(parser, rewritten ? rewritten : widened ? widened : line, -1, NULL)
                       ? json_parser_get_root(parser)
                       : NULL;
  g_autofree char *duplicate = watch.duplicate;
  if (root != NULL && duplicate != NULL) {
    *problem = g_strdup_printf("progress line '%s': \"%s\" appears twice in one object", shown, duplicate);
    return COMMAND_LINE_MALFORMED;
  }
  JsonObject *outer = root && JSON_NODE_HOLDS_OBJECT(root) ? json_node_get_object(root) : NULL;
  JsonNode *inner_node = outer && json_object_get_size(outer) == 1 ? json_object_get_member(outer, "intermediate")
                                                                   : NULL;
  JsonObject *inner = inner_node && JSON_NODE_HOLDS_OBJECT(inner_node) ? json_node_get_object(inner_node) : NULL;
  if (inner == NULL) {
    *problem = g_strdup_printf("malformed progress line '%s': expected " PROGRESS_FORM, shown);
    return COMMAND_LINE_MALFORMED;
  }
  JsonNode *step_node = json_object_get_member(inner, "step");
  if (step_node == NULL || !JSON_NODE_HOLDS_VALUE(step_node) || json_node_get_value_type(step_node) != G_TYPE_INT64 ||
      json_node_get_int(step_node) < 0) {
    *problem = g_strdup_printf("progress line '%s': \"step\" must be an integer from 0 to %" G_GINT64_FORMAT, shown,
                               G_MAXINT64);
    return COMMAND_LINE_MALFORMED;
  }
  /* NaN and +-Infinity are values (a diverged training, as in Optuna,
   * whose pruners stop a trial whose values are all NaN). */
  if (!progress_number(inner, "value", value)) {
    *problem = g_strdup_printf("progress line '%s': \"value\" must be a number", shown);
    return COMMAND_LINE_MALFORMED;
  }
  *fidelity = NAN;
  guint expected = 2;
  if (json_object_has_member(inner, "fidelity")) {
    expected++;
    if (!progress_number(inner, "fidelity", fidelity) || !isfinite(*fidelity) || *fidelity < 0) {
      *problem = g_strdup_printf("progress line '%s': \"fidelity\" must be a finite number >= 0", shown);
      return COMMAND_LINE_MALFORMED;
    }
    /* Below the range's min is progress (half an epoch before the first
     * whole one); beyond its max no trial can be asked to go. */
    if (range != NULL && *fidelity > range->max) {
      g_autofree char *got = sieve_text_format_double(*fidelity);
      g_autofree char *max = sieve_text_format_double(range->max);
      *problem = g_strdup_printf("progress line '%s': \"fidelity\" %s is above the evaluator's fidelity max %s",
                                 shown, got, max);
      return COMMAND_LINE_MALFORMED;
    }
  }
  if (json_object_get_size(inner) != expected) {
    *problem = g_strdup_printf("progress line '%s': only \"step\", \"value\" and \"fidelity\" may appear in "
                               "\"intermediate\"", shown);
    return COMMAND_LINE_MALFORMED;
  }
  *step = json_node_get_int(step_node);
  return COMMAND_LINE_PROGRESS;
}

void
command_read_output(const GString *out, const SieveFidelity *range, SieveResult *result)
{
  gboolean progress_seen = FALSE;
  gsize end = out != NULL ? out->len : 0;
  while (end > 0) {
    gsize begin = end;
    while (begin > 0 && out->str[begin - 1] != '\n')
      begin--;
    /* C would read the line up to a NUL byte: '{"loss": 1}\0junk' taken
     * for its prefix, or a line beginning with one for an empty line. */
    const char *nul = memchr(out->str + begin, '\0', end - begin);
    if (nul != NULL) {
      sieve_result_set_failed(result, "last stdout line holds a NUL byte (at character %" G_GSIZE_FORMAT
                                      "); it must be a JSON object of metrics",
                              (gsize)(nul - (out->str + begin)) + 1);
      return;
    }
    g_autofree char *line = g_strndup(out->str + begin, end - begin);
    end = begin > 0 ? begin - 1 : 0;
    g_strstrip(line);
    if (line[0] == '\0')
      continue;
    gint64 step;
    double fidelity, value;
    g_autofree char *problem = NULL;
    switch (command_read_progress_line(line, range, &step, &fidelity, &value, &problem)) {
    case COMMAND_LINE_PROGRESS:
      progress_seen = TRUE;
      continue;
    case COMMAND_LINE_MALFORMED: /* an unfinished last line, which was never watched */
      sieve_result_set_failed(result, "%s", problem);
      return;
    case COMMAND_LINE_OTHER:
      command_read_metrics_line(line, result);
      return;
    }
  }
  if (progress_seen)
    sieve_result_set_failed(result, "last stdout line is a progress line, not the JSON object of metrics (after its "
                                    "progress lines a program prints one, such as {\"loss\": 0.25})");
  else
    sieve_result_set_failed(result, "the program wrote nothing on stdout (its last line must be a JSON object "
                                    "of metrics)");
}
