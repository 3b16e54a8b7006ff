/* sieve: tabular data from CSV with a header row.
 *
 * Fields are separated by commas; a field may be quoted (RFC 4180: "a,b",
 * "" for a quote inside) but may not span lines.  Spaces around a field are
 * ignored.  The file is parsed in place in one mutable copy: each field is
 * cut out with a NUL where its separator was (quoted ones unescaped where
 * they stand), so no row costs an allocation.
 */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "data/data-private.h"

typedef struct {
  const char *s; /* NUL-terminated, trimmed, unquoted */
  gsize n;
  guint col;     /* 1-based byte column of the field's first character */
} Field;

typedef struct {
  const char *path;
  char *end;       /* the end of the file's mutable copy, where a NUL stands */
  char *p;         /* start of the next line */
  guint line;      /* number of the line last cut into fields */
  GArray *fields;  /* of Field, reused for every line */
} Csv;

static gboolean
csv_fail(Csv *csv, GError **error, guint col, const char *format, ...) G_GNUC_PRINTF(4, 5);

static gboolean
csv_fail(Csv *csv, GError **error, guint col, const char *format, ...)
{
  va_list ap;
  va_start(ap, format);
  g_autofree char *message = g_strdup_vprintf(format, ap);
  va_end(ap);
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "%s:%u:%u: %s", csv->path, csv->line, col, message);
  return FALSE;
}

static inline gboolean
is_blank(char c)
{
  return c == ' ' || c == '\t' || c == '\r';
}

/* Cuts the next non-blank line into csv->fields; FALSE with *error unset
 * at the end of the file. */
static gboolean
csv_next_line(Csv *csv, GError **error)
{
  g_array_set_size(csv->fields, 0);
  for (;;) {
    if (csv->p >= csv->end)
      return FALSE;
    csv->line++;
    char *q = csv->p;
    while (q < csv->end && is_blank(*q))
      q++;
    if (q < csv->end && *q != '\n')
      break;
    csv->p = q < csv->end ? q + 1 : csv->end; /* a blank line */
  }

  char *line = csv->p;
  char *p = line;
  for (;;) {
    while (p < csv->end && (*p == ' ' || *p == '\t'))
      p++;
    Field field = {.col = (guint) (p - line) + 1};
    char sep;
    if (p < csv->end && *p == '"') {
      char *q = p + 1, *w = p + 1;
      for (;;) {
        if (q >= csv->end || *q == '\n')
          return csv_fail(csv, error, field.col, "unterminated quoted field (quotes may not span lines)");
        if (*q == '"') {
          if (q + 1 < csv->end && q[1] == '"') {
            *w++ = '"';
            q += 2;
            continue;
          }
          q++;
          break;
        }
        *w++ = *q++;
      }
      field.s = p + 1;
      field.n = (gsize) (w - (p + 1));
      while (q < csv->end && is_blank(*q))
        q++;
      sep = q < csv->end ? *q : '\n';
      if (sep != ',' && sep != '\n')
        return csv_fail(csv, error, (guint) (q - line) + 1, "expected a comma after the closing quote, found '%c'",
                        sep);
      *w = '\0'; /* w is at most where the closing quote was */
      p = q;
    } else {
      char *e = p;
      while (e < csv->end && *e != ',' && *e != '\n')
        e++;
      sep = e < csv->end ? *e : '\n';
      char *t = e;
      while (t > p && is_blank(t[-1]))
        t--;
      field.s = p;
      field.n = (gsize) (t - p);
      *t = '\0'; /* over a blank, the separator, or the NUL after the end */
      p = e;
    }
    g_array_append_val(csv->fields, field);
    if (sep == ',') {
      p++;
      continue;
    }
    csv->p = p < csv->end ? p + 1 : csv->end;
    return TRUE;
  }
}

SieveDataset *
sieve_dataset_load_csv(const char *path, const char *label_column, GError **error)
{
  g_return_val_if_fail(path != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);

  GBytes *bytes = sieve__data_read_file(path, error);
  if (bytes == NULL)
    return NULL;
  gsize len = 0;
  char *text = g_bytes_unref_to_data(bytes, &len);
  text = g_realloc(text, len + 1);
  text[len] = '\0';
  g_autofree char *owned_text = text;
  if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) /* a UTF-8 byte-order mark */
    text += 3;

  g_autoptr(GArray) fields = g_array_new(FALSE, FALSE, sizeof(Field));
  Csv csv = {.path = path, .end = owned_text + len, .p = text, .fields = fields};

  if (!csv_next_line(&csv, error)) {
    if (error == NULL || *error == NULL)
      sieve__data_error(error, SIEVE_ERROR_PARSE, path, "empty file, expected a header row");
    return NULL;
  }
  guint n_columns = fields->len;
  guint header_line = csv.line;
  g_autoptr(GStrvBuilder) names_builder = g_strv_builder_new();
  for (guint j = 0; j < n_columns; j++)
    g_strv_builder_add(names_builder, g_array_index(fields, Field, j).s);
  g_auto(GStrv) names = g_strv_builder_end(names_builder);
  if (n_columns < 2) {
    csv_fail(&csv, error, 1, "the header has %u column, expected at least two (features and a label)", n_columns);
    return NULL;
  }

  guint label = n_columns - 1;
  if (label_column != NULL) {
    label = G_MAXUINT;
    for (guint j = 0; j < n_columns; j++) {
      if (strcmp(names[j], label_column) != 0)
        continue;
      if (label != G_MAXUINT) {
        csv_fail(&csv, error, g_array_index(fields, Field, j).col,
                 "label column '%s' appears twice in the header (columns %u and %u)", label_column, label + 1, j + 1);
        return NULL;
      }
      label = j;
    }
    if (label == G_MAXUINT) {
      g_autofree char *list = g_strjoinv(", ", names);
      csv_fail(&csv, error, 1, "no column named '%s' for the label; the header has: %s", label_column, list);
      return NULL;
    }
  }
  guint n_features = n_columns - 1;

  g_autoptr(GArray) xs = g_array_new(FALSE, FALSE, sizeof(float));
  g_autoptr(GArray) ys = g_array_new(FALSE, FALSE, sizeof(gint32));
  /* Distinct label texts, in order of first appearance; the table maps a
   * text to its index + 1 and borrows the strings of `texts`. */
  g_autoptr(GPtrArray) texts = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GHashTable) ids = g_hash_table_new(g_str_hash, g_str_equal);
  g_autoptr(GArray) int_values = g_array_new(FALSE, FALSE, sizeof(guint));
  gboolean all_ints = TRUE;
  guint max_int = 0;

  while (csv_next_line(&csv, error)) {
    if (fields->len != n_columns) {
      /* Point at the first field too many, or just after the last one. */
      const Field *last = &g_array_index(fields, Field, fields->len - 1);
      guint col = fields->len > n_columns ? g_array_index(fields, Field, n_columns).col : last->col + (guint) last->n;
      csv_fail(&csv, error, col, "expected %u fields as in the header (line %u), found %u", n_columns, header_line, fields->len);
      return NULL;
    }
    for (guint j = 0; j < n_columns; j++) {
      const Field *f = &g_array_index(fields, Field, j);
      if (j == label)
        continue;
      if (f->n == 0) {
        csv_fail(&csv, error, f->col, "empty value in column '%s', expected a number", names[j]);
        return NULL;
      }
      char *stop = NULL;
      double v = g_ascii_strtod(f->s, &stop);
      if (stop != f->s + f->n) {
        csv_fail(&csv, error, f->col, "expected a number in column '%s', found '%s'", names[j], f->s);
        return NULL;
      }
      if (!isfinite(v) || !isfinite((float) v)) {
        csv_fail(&csv, error, f->col, "'%s' in column '%s' is not a finite float", f->s, names[j]);
        return NULL;
      }
      float fv = (float) v;
      g_array_append_val(xs, fv);
    }
    const Field *lf = &g_array_index(fields, Field, label);
    if (lf->n == 0) {
      csv_fail(&csv, error, lf->col, "empty label in column '%s'", names[label]);
      return NULL;
    }
    gpointer found = g_hash_table_lookup(ids, lf->s);
    gint32 id;
    if (found != NULL) {
      id = GPOINTER_TO_INT(found) - 1;
    } else {
      id = (gint32) texts->len;
      char *copy = g_strdup(lf->s);
      g_ptr_array_add(texts, copy);
      g_hash_table_insert(ids, copy, GINT_TO_POINTER(id + 1));
      guint64 v = 0;
      gboolean is_int = g_ascii_string_to_unsigned(copy, 10, 0, 65535, &v, NULL);
      guint iv = (guint) v;
      g_array_append_val(int_values, iv);
      all_ints = all_ints && is_int;
      max_int = MAX(max_int, iv);
    }
    g_array_append_val(ys, id);
  }
  if (error != NULL && *error != NULL)
    return NULL;
  if (ys->len == 0) {
    sieve__data_error(error, SIEVE_ERROR_PARSE, path, "no data rows after the header");
    return NULL;
  }

  g_autofree char *name = sieve__data_name_from_path(path);
  SieveDataset *ds = sieve_dataset_new(0, n_features, 1, 1, 0, name);
  ds->n = ys->len;
  g_free(ds->x);
  g_free(ds->y);
  ds->x = (float *) g_array_free(g_steal_pointer(&xs), FALSE);
  if (all_ints) {
    /* Integer labels are the class ids themselves: "3" is class 3 whatever
     * order the rows come in, as a user of 0-based labels expects. */
    for (guint i = 0; i < ys->len; i++)
      g_array_index(ys, gint32, i) = (gint32) g_array_index(int_values, guint, g_array_index(ys, gint32, i));
    ds->n_classes = max_int + 1;
  } else {
    ds->n_classes = texts->len;
    g_ptr_array_add(texts, NULL);
    ds->class_names = (char **) g_ptr_array_free(g_steal_pointer(&texts), FALSE);
  }
  ds->y = (gint32 *) g_array_free(g_steal_pointer(&ys), FALSE);
  return ds;
}
