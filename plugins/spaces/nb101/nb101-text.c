/* The nb101 genotype text (nb101-text.h). */
#include <string.h>

#include <sieve/abi.h>
#include <sieve/text.h>

#include "nb101-text.h"

char *
nb101_text_format(const Nb101Cell *raw)
{
  g_return_val_if_fail(raw->n == NB101_MAX_VERTICES, NULL);
  GString *out = g_string_new("matrix=[");
  for (guint i = 0; i < raw->n; i++) {
    g_string_append(out, i ? ",[" : "[");
    for (guint j = 0; j < raw->n; j++)
      g_string_append_printf(out, j ? ",%d" : "%d", nb101_cell_has_edge(raw, i, j));
    g_string_append_c(out, ']');
  }
  g_string_append(out, "],ops=[" NB101_INPUT_NAME);
  for (guint v = 1; v + 1 < raw->n; v++)
    g_string_append_printf(out, ",%s", nb101_op_names[raw->op[v]]);
  g_string_append(out, "," NB101_OUTPUT_NAME "]");
  return g_string_free(out, FALSE);
}

typedef struct {
  const char *text;
  const char *p;
  GError **error;
} Scan;

/* 1-based character number of q, for messages. */
#define AT(s, q) sieve_text_char_number((s)->text, (q))

static void
skip_space(Scan *s)
{
  while (g_ascii_isspace(*s->p))
    s->p++;
}

static gboolean
fail(Scan *s, const char *what)
{
  g_autofree char *got = sieve_text_quote_at(s->p, "-_", 16);
  g_set_error(s->error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "at character %u: expected %s, got %s", AT(s, s->p), what,
              got);
  return FALSE;
}

/* The character c, after spaces. */
static gboolean
expect(Scan *s, char c, const char *what)
{
  skip_space(s);
  if (*s->p != c)
    return fail(s, what);
  s->p++;
  return TRUE;
}

/* The word w, after spaces, if it stands there. */
static gboolean
accept_word(Scan *s, const char *w)
{
  skip_space(s);
  gsize len = strlen(w);
  if (strncmp(s->p, w, len) != 0 || g_ascii_isalnum(s->p[len]))
    return FALSE;
  s->p += len;
  return TRUE;
}

/* The matrix rows into rows[][], returning the side (<= 7) or 0 on error. */
static guint
parse_matrix(Scan *s, guint8 rows[NB101_MAX_VERTICES][NB101_MAX_VERTICES])
{
  if (!expect(s, '[', "'[' opening the matrix"))
    return 0;
  guint n = 0, width = 0;
  for (;;) {
    skip_space(s);
    const char *row_start = s->p;
    if (!expect(s, '[', n == 0 ? "'[' opening row 0 of the matrix" : "'[' opening the next row of the matrix"))
      return 0;
    if (n == NB101_MAX_VERTICES) {
      g_set_error(s->error, SIEVE_ERROR, SIEVE_ERROR_PARSE,
                  "at character %u: row %u of the matrix: NAS-Bench-101 cells have at most %d vertices",
                  AT(s, row_start), n, NB101_MAX_VERTICES);
      return 0;
    }
    guint k = 0;
    for (;;) {
      skip_space(s);
      if (*s->p != '0' && *s->p != '1')
        return fail(s, "0 or 1 (an entry of the adjacency matrix)"), 0;
      if (k == NB101_MAX_VERTICES) {
        g_set_error(s->error, SIEVE_ERROR, SIEVE_ERROR_PARSE,
                    "at character %u: row %u of the matrix has more than %d entries", AT(s, s->p), n,
                    NB101_MAX_VERTICES);
        return 0;
      }
      if (*s->p == '1' && k <= n) {
        g_set_error(s->error, SIEVE_ERROR, SIEVE_ERROR_PARSE,
                    "at character %u: row %u, column %u of the matrix is 1, but NAS-Bench-101 matrices are "
                    "upper-triangular (an edge goes from a vertex to a later one)",
                    AT(s, s->p), n, k);
        return 0;
      }
      rows[n][k++] = *s->p == '1';
      s->p++;
      skip_space(s);
      if (*s->p == ']')
        break;
      if (!expect(s, ',', "',' or ']' in a row of the matrix"))
        return 0;
    }
    if (n > 0 && k != width) {
      g_set_error(s->error, SIEVE_ERROR, SIEVE_ERROR_PARSE,
                  "at character %u: row %u of the matrix has %u entries, row 0 has %u (the matrix must be square)",
                  AT(s, s->p), n, k, width);
      return 0;
    }
    width = k;
    s->p++;
    n++;
    skip_space(s);
    if (*s->p == ']')
      break;
    if (!expect(s, ',', "',' or ']' after a row of the matrix"))
      return 0;
  }
  s->p++;
  if (n != width) {
    g_set_error(s->error, SIEVE_ERROR, SIEVE_ERROR_PARSE,
                "at character %u: the matrix has %u rows of %u entries; it must be square", AT(s, s->p - 1), n, width);
    return 0;
  }
  if (n < 2) {
    g_set_error(s->error, SIEVE_ERROR, SIEVE_ERROR_PARSE,
                "at character %u: the matrix has %u vertex; a cell has at least an input and an output",
                AT(s, s->p - 1), n);
    return 0;
  }
  return n;
}

/* Past an op name: ASCII letters, digits, '-', '_', and any other (valid
 * UTF-8) character whole, so that a message quotes the name as written. */
static void
skip_name(Scan *s)
{
  for (;;) {
    if (g_ascii_isalnum(*s->p) || *s->p == '-' || *s->p == '_')
      s->p++;
    else if ((guchar) *s->p >= 0x80 && g_utf8_get_char_validated(s->p, -1) < 0x110000)
      s->p = g_utf8_next_char(s->p);
    else
      return;
  }
}

/* One op name, quoted or not: its index among input (-1), the operations
 * (0..2) and output (-2), or -3 on error. */
static int
parse_op(Scan *s, guint v, guint n)
{
  skip_space(s);
  char quote = (*s->p == '\'' || *s->p == '"') ? *s->p : 0;
  if (quote)
    s->p++;
  const char *start = s->p;
  skip_name(s);
  g_autofree char *name = g_strndup(start, s->p - start);
  if (quote && *s->p != quote) {
    g_set_error(s->error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "at character %u: expected the closing %c of op %u",
                AT(s, s->p), quote, v);
    return -3;
  }
  if (quote)
    s->p++;
  const char *want = v == 0 ? NB101_INPUT_NAME : v + 1 == n ? NB101_OUTPUT_NAME : NULL;
  if (want != NULL) {
    if (strcmp(name, want) == 0)
      return v == 0 ? -1 : -2;
    g_set_error(s->error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "at character %u: op %u must be '%s', got '%s'",
                AT(s, start), v, want, name);
    return -3;
  }
  for (int o = 0; o < NB101_N_OPS; o++)
    if (strcmp(name, nb101_op_names[o]) == 0)
      return o;
  if (strcmp(name, NB101_INPUT_NAME) == 0 || strcmp(name, NB101_OUTPUT_NAME) == 0) {
    g_set_error(s->error, SIEVE_ERROR, SIEVE_ERROR_PARSE,
                "at character %u: op %u is '%s', but the matrix has %u vertices: the op list names one per vertex, "
                "input first, output last",
                AT(s, start), v, name, n);
    return -3;
  }
  g_autofree char *list = g_strjoinv(", ", (char **) nb101_op_names);
  g_set_error(s->error, SIEVE_ERROR, SIEVE_ERROR_PARSE,
              "at character %u: unknown operation '%s' for op %u (an interior vertex is one of %s)", AT(s, start),
              name, v, list);
  return -3;
}

/* The op list [input,...,output] of a cell of n vertices into ops[]. */
static gboolean
parse_ops(Scan *s, guint n, int ops[NB101_MAX_VERTICES])
{
  if (!expect(s, '[', "'[' opening the op list"))
    return FALSE;
  for (guint v = 0; v < n; v++) {
    g_autofree char *want = g_strdup_printf("',' and op %u (the matrix has %u vertices)", v, n);
    if (v > 0 && !expect(s, ',', want))
      return FALSE;
    ops[v] = parse_op(s, v, n);
    if (ops[v] == -3)
      return FALSE;
  }
  g_autofree char *close = g_strdup_printf("']' closing the op list after %u ops (one per vertex of the matrix)", n);
  return expect(s, ']', close);
}

/* Past an op list before the matrix that sizes it (Python's keywords in
 * the other order): its syntax only; parse_ops reads it once n is known. */
static gboolean
skip_ops(Scan *s)
{
  if (!expect(s, '[', "'[' opening the op list"))
    return FALSE;
  for (;;) {
    skip_space(s);
    char quote = (*s->p == '\'' || *s->p == '"') ? *s->p : 0;
    if (quote)
      s->p++;
    skip_name(s);
    if (quote && *s->p != quote)
      return fail(s, quote == '"' ? "the closing \" of an op" : "the closing ' of an op");
    if (quote)
      s->p++;
    skip_space(s);
    if (*s->p == ']') {
      s->p++;
      return TRUE;
    }
    if (!expect(s, ',', "',' or ']' in the op list"))
      return FALSE;
  }
}

gboolean
nb101_text_parse(const char *text, Nb101Cell *raw, GError **error)
{
  Scan s = {text, text, error};
  gboolean wrapped = accept_word(&s, "ModelSpec");
  if (wrapped && !expect(&s, '(', "'(' after ModelSpec"))
    return FALSE;
  /* ModelSpec(ops=..., matrix=...) is the same call in Python: the ops
   * are read once the matrix has said how many there are. */
  const char *ops_at = NULL;
  if (accept_word(&s, "ops")) {
    if (!expect(&s, '=', "'=' after ops"))
      return FALSE;
    skip_space(&s);
    ops_at = s.p;
    if (!skip_ops(&s))
      return FALSE;
    skip_space(&s);
    if (*s.p == ',')
      s.p++;
    if (!accept_word(&s, "matrix"))
      return fail(&s, "'matrix=' after the op list");
  } else if (!accept_word(&s, "matrix")) {
    return fail(&s, "'matrix=' (the text looks like matrix=[[0,1,...],...],ops=[input,...,output])");
  }
  if (!expect(&s, '=', "'=' after matrix"))
    return FALSE;
  guint8 rows[NB101_MAX_VERTICES][NB101_MAX_VERTICES] = {{0}};
  guint n = parse_matrix(&s, rows);
  if (n == 0)
    return FALSE;
  int ops[NB101_MAX_VERTICES];
  if (ops_at != NULL) {
    Scan o = {text, ops_at, error};
    if (!parse_ops(&o, n, ops))
      return FALSE;
  } else {
    skip_space(&s);
    if (*s.p == ',')
      s.p++;
    if (!accept_word(&s, "ops"))
      return fail(&s, "'ops=' after the matrix");
    if (!expect(&s, '=', "'=' after ops") || !parse_ops(&s, n, ops))
      return FALSE;
  }
  if (wrapped && !expect(&s, ')', "')' closing ModelSpec("))
    return FALSE;
  skip_space(&s);
  if (*s.p != '\0')
    return fail(&s, "the end of the text");

  /* A smaller matrix keeps its vertices, its output moves to vertex 6. */
  guint place[NB101_MAX_VERTICES];
  for (guint v = 0; v < n; v++)
    place[v] = v + 1 == n ? NB101_MAX_VERTICES - 1 : v;
  Nb101Cell c = {.n = NB101_MAX_VERTICES};
  for (guint i = 0; i < n; i++) {
    if (ops[i] >= 0)
      c.op[place[i]] = (guint8) ops[i];
    for (guint j = 0; j < n; j++)
      if (rows[i][j])
        c.succ[place[i]] |= 1u << place[j];
  }
  *raw = c;
  return TRUE;
}
