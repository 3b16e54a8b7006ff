/* sieve: the CSV record reader (rules in sieve/csv.h).
 *
 * The reader holds the file in one mutable copy and cuts each record in
 * place: a field ends with a NUL written where its separator, its trailing
 * blank or its closing quote was, and a quoted field is unescaped where it
 * stands (its text only ever shrinks).  A record then costs no allocation,
 * which keeps a dataset of tens of thousands of rows quick to load.
 */
#include <stdarg.h>
#include <string.h>

#include <sieve/csv.h>

#include "data/data-private.h"

/* Fields in one record (sieve/csv.h): each costs a Field of 32 bytes for
 * one byte of the file, so a line of commas would ask 32 times the file's
 * size before any check on the header's count could refuse it. */
#define CSV_MAX_FIELDS (1u << 20)

typedef struct {
  const char *s; /* NUL-terminated, trimmed, unquoted */
  gsize n;
  guint line, col; /* of its first character: the opening quote when quoted */
} Field;

struct _SieveCsvReader {
  char *path;       /* for messages */
  char *text;       /* the mutable copy, a NUL after its end */
  char *end;
  char *p;          /* where the next record starts */
  char *line_start; /* the first byte of p's line, for columns */
  guint line;       /* p's line */
  guint record_line;
  guint header_line;
  guint n_header;   /* fields of the header, 0 until it is read */
  gboolean spent;   /* at the end, or after an error */
  const char *encoding; /* a byte-order mark's other than UTF-8 ("UTF-16LE"): refused at the first record */
  GArray *fields;   /* of Field, the current record's, reused */
};

static SieveCsvReader *
reader_new_take(const char *path, char *text, gsize length)
{
  SieveCsvReader *r = g_new0(SieveCsvReader, 1);
  r->path = g_strdup(path);
  r->text = text;
  r->end = text + length;
  r->p = text;
  if (length >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) /* a UTF-8 byte-order mark */
    r->p += 3;
  else if (length >= 4 && (memcmp(text, "\xFF\xFE\0\0", 4) == 0 || memcmp(text, "\0\0\xFE\xFF", 4) == 0))
    r->encoding = text[0] ? "UTF-32LE" : "UTF-32BE";
  else if (length >= 2 && (memcmp(text, "\xFF\xFE", 2) == 0 || memcmp(text, "\xFE\xFF", 2) == 0))
    r->encoding = (guint8) text[0] == 0xFF ? "UTF-16LE" : "UTF-16BE";
  /* Lines ended by CR alone (classic Mac OS, some spreadsheet exports):
   * when no LF is anywhere, each CR ends a line. */
  if (memchr(text, '\n', length) == NULL)
    for (char *c = memchr(text, '\r', length); c != NULL; c = memchr(c + 1, '\r', (gsize) (text + length - c - 1)))
      *c = '\n';
  r->line_start = r->p;
  r->line = 1;
  r->fields = g_array_new(FALSE, FALSE, sizeof(Field));
  return r;
}

SieveCsvReader *
sieve_csv_reader_new(const char *path, GError **error)
{
  g_return_val_if_fail(path != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  GBytes *bytes = sieve__data_read_file(path, error);
  if (bytes == NULL)
    return NULL;
  gsize length = 0;
  char *text = g_bytes_unref_to_data(bytes, &length);
  text = g_realloc(text, length + 1);
  text[length] = '\0';
  return reader_new_take(path, text, length);
}

SieveCsvReader *
sieve_csv_reader_new_from_data(const char *name, const char *text, gssize length)
{
  g_return_val_if_fail(name != NULL, NULL);
  g_return_val_if_fail(text != NULL || length == 0, NULL);
  gsize n = length < 0 ? strlen(text) : (gsize) length;
  char *copy = g_malloc(n + 1);
  if (n > 0)
    memcpy(copy, text, n);
  copy[n] = '\0';
  return reader_new_take(name, copy, n);
}

void
sieve_csv_reader_free(SieveCsvReader *reader)
{
  if (reader == NULL)
    return;
  g_free(reader->path);
  g_free(reader->text);
  g_array_unref(reader->fields);
  g_free(reader);
}

static void
set_error_va(const SieveCsvReader *r, guint line, guint col, GError **error, const char *format, va_list ap)
    G_GNUC_PRINTF(5, 0);

static void
set_error_va(const SieveCsvReader *r, guint line, guint col, GError **error, const char *format, va_list ap)
{
  g_autofree char *message = g_strdup_vprintf(format, ap);
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "%s:%u:%u: %s", r->path, line, col, message);
}

/* A syntax error at line:col; the reader is spent (its copy is half cut). */
static gboolean fail(SieveCsvReader *r, guint line, guint col, GError **error, const char *format, ...)
    G_GNUC_PRINTF(5, 6);

static gboolean
fail(SieveCsvReader *r, guint line, guint col, GError **error, const char *format, ...)
{
  va_list ap;
  va_start(ap, format);
  set_error_va(r, line, col, error, format, ap);
  va_end(ap);
  r->spent = TRUE;
  g_array_set_size(r->fields, 0);
  return FALSE;
}

void
sieve_csv_reader_set_error(const SieveCsvReader *reader, guint index, GError **error, const char *format, ...)
{
  g_return_if_fail(reader != NULL);
  g_return_if_fail(index < reader->fields->len);
  const Field *f = &g_array_index(reader->fields, Field, index);
  va_list ap;
  va_start(ap, format);
  set_error_va(reader, f->line, f->col, error, format, ap);
  va_end(ap);
}

/* Around fields, not inside them: '\r' too, so that CRLF needs no case of
 * its own (the CR is the last field's trailing blank). */
static inline gboolean
is_blank(char c)
{
  return c == ' ' || c == '\t' || c == '\r';
}

static inline guint
column(const SieveCsvReader *r, const char *at)
{
  return (guint) (at - r->line_start) + 1;
}

/* A character for a message: itself when printable. (transfer full) */
static char *
describe_char(char c)
{
  return g_ascii_isprint(c) ? g_strdup_printf("'%c'", c) : g_strdup_printf("byte 0x%02x", (guint8) c);
}

gboolean
sieve_csv_reader_next(SieveCsvReader *reader, GError **error)
{
  g_return_val_if_fail(reader != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  SieveCsvReader *r = reader;
  g_array_set_size(r->fields, 0);
  if (r->spent)
    return FALSE;
  if (r->encoding != NULL)
    return fail(r, 1, 1, error, "the file is %s text (its byte-order mark says so); sieve reads CSV as UTF-8: convert "
                "it, e.g. iconv -f %s -t UTF-8", r->encoding, r->encoding);

  /* Skip lines that hold only blanks. */
  for (;;) {
    char *q = r->p;
    while (q < r->end && is_blank(*q))
      q++;
    if (q >= r->end) {
      r->p = r->end;
      r->spent = TRUE;
      return FALSE;
    }
    if (*q != '\n')
      break;
    r->p = q + 1;
    r->line++;
    r->line_start = r->p;
  }
  r->record_line = r->line;

  char *p = r->p;
  for (;;) {
    while (p < r->end && (*p == ' ' || *p == '\t'))
      p++;
    Field field = {.line = r->line, .col = column(r, p)};
    char sep;
    if (p < r->end && *p == '"') {
      char *q = p + 1, *w = p + 1; /* read and write heads: "" becomes " */
      for (;;) {
        if (q >= r->end)
          return fail(r, field.line, field.col, error,
                      "unterminated quoted field: the quote opened here is not closed before the end of the "
                      "file, expected a closing '\"' (a '\"' inside quotes is written \"\")");
        if (*q == '"') {
          if (q + 1 < r->end && q[1] == '"') {
            *w++ = '"';
            q += 2;
            continue;
          }
          q++;
          break;
        }
        if (*q == '\n') {
          r->line++;
          r->line_start = q + 1;
        }
        *w++ = *q++;
      }
      field.s = p + 1;
      field.n = (gsize) (w - (p + 1));
      while (q < r->end && is_blank(*q))
        q++;
      sep = q < r->end ? *q : '\n';
      if (sep != ',' && sep != '\n') {
        g_autofree char *found = describe_char(sep);
        return fail(r, r->line, column(r, q), error,
                    "expected a comma after the closing quote or the end of the line, found %s (a '\"' inside "
                    "quotes is written \"\")", found);
      }
      *w = '\0'; /* w is at most where the closing quote was */
      p = q;
    } else {
      char *e = p;
      while (e < r->end && *e != ',' && *e != '\n') {
        if (G_UNLIKELY(*e == '"'))
          return fail(r, r->line, column(r, e), error,
                      "'\"' inside an unquoted field, expected the whole field in quotes with each '\"' in it "
                      "written \"\" (\"a \"\"b\"\"\")");
        e++;
      }
      sep = e < r->end ? *e : '\n';
      char *t = e;
      while (t > p && is_blank(t[-1]))
        t--;
      field.s = p;
      field.n = (gsize) (t - p);
      *t = '\0'; /* over a blank, the separator, or the NUL after the end */
      p = e;
    }
    if (r->fields->len == CSV_MAX_FIELDS)
      return fail(r, field.line, field.col, error, "more than %u fields in the record that starts on line %u, the "
                  "most sieve reads", CSV_MAX_FIELDS, r->record_line);
    g_array_append_val(r->fields, field);
    if (sep == ',') {
      p++;
      continue;
    }
    break;
  }

  /* p is at the record's line end, or at the end of the file. */
  guint end_line = r->line, end_col = column(r, p);
  if (p < r->end) {
    r->p = p + 1;
    r->line++;
    r->line_start = r->p;
  } else {
    r->p = r->end;
  }

  guint n = r->fields->len;
  if (r->n_header == 0) {
    r->n_header = n;
    r->header_line = r->record_line;
  } else if (n != r->n_header) {
    /* At the first field too many, or where the missing ones should be. */
    const Field *extra = n > r->n_header ? &g_array_index(r->fields, Field, r->n_header) : NULL;
    guint line = extra ? extra->line : end_line, col = extra ? extra->col : end_col;
    g_autofree char *start =
        line != r->record_line ? g_strdup_printf(" in the record that starts on line %u", r->record_line) : NULL;
    return fail(r, line, col, error, "expected %u fields as in the header (line %u), found %u%s", r->n_header,
                r->header_line, n, start ? start : "");
  }
  return TRUE;
}

guint
sieve_csv_reader_n_fields(const SieveCsvReader *reader)
{
  g_return_val_if_fail(reader != NULL, 0);
  return reader->fields->len;
}

const char *
sieve_csv_reader_field(const SieveCsvReader *reader, guint index, gsize *length)
{
  g_return_val_if_fail(reader != NULL, NULL);
  g_return_val_if_fail(index < reader->fields->len, NULL);
  const Field *f = &g_array_index(reader->fields, Field, index);
  if (length != NULL)
    *length = f->n;
  return f->s;
}

guint
sieve_csv_reader_get_line(const SieveCsvReader *reader)
{
  g_return_val_if_fail(reader != NULL, 0);
  return reader->record_line;
}
