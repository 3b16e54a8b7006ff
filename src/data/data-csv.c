/* sieve: tabular datasets from CSV with a header row, read with the CSV
 * reader (sieve/csv.h: its rules, and its errors at file:line:col): each
 * row's features are numbers, its label a number or a text.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <sieve/csv.h>

#include "data/data-private.h"

/* What a label's text is: a class id (an integral number from 0 to 65535,
 * however written: "3", "+3", "3.0", "-0"), a negative integer (SVM-light's
 * -1/+1), some other number (0.5, 1e9: refused), or a class name.  Hex and
 * "nan"/"inf", which strtod would read, are names. */
typedef enum { LABEL_ID, LABEL_NEGATIVE, LABEL_OTHER_NUMBER, LABEL_NAME } LabelKind;

static LabelKind
label_kind(const char *text, double *value)
{
  const char *p = text + (*text == '+' || *text == '-');
  if ((!g_ascii_isdigit(*p) && *p != '.') || strpbrk(text, "xX") != NULL)
    return LABEL_NAME;
  char *end = NULL;
  errno = 0;
  double v = g_ascii_strtod(text, &end);
  if (end == text || *end != '\0')
    return LABEL_NAME;
  /* Out of double's range (1e400, 1e-400) is a number, but no class id;
   * "inf" and "nan" spelled out are names. */
  if (errno == ERANGE)
    return LABEL_OTHER_NUMBER;
  if (!isfinite(v))
    return LABEL_NAME;
  *value = v;
  if (v != floor(v) || fabs(v) > 65535)
    return LABEL_OTHER_NUMBER;
  return v < 0 ? LABEL_NEGATIVE : LABEL_ID;
}

static int
compare_doubles(gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

SieveDataset *
sieve_dataset_load_csv(const char *path, const char *label_column, GError **error)
{
  g_return_val_if_fail(path != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);

  g_autoptr(SieveCsvReader) csv = sieve_csv_reader_new(path, error);
  if (csv == NULL)
    return NULL;
  if (!sieve_csv_reader_next(csv, error)) {
    if (error == NULL || *error == NULL)
      sieve__data_error(error, SIEVE_ERROR_PARSE, path, "empty file, expected a header row");
    return NULL;
  }
  guint n_columns = sieve_csv_reader_n_fields(csv);
  g_autoptr(GStrvBuilder) names_builder = g_strv_builder_new();
  for (guint j = 0; j < n_columns; j++)
    g_strv_builder_add(names_builder, sieve_csv_reader_field(csv, j, NULL));
  g_auto(GStrv) names = g_strv_builder_end(names_builder);
  if (n_columns < 2) {
    sieve_csv_reader_set_error(csv, 0, error, "the header has %u column, expected at least two (features and a label)",
                               n_columns);
    return NULL;
  }

  /* A file without a header would lose its first example, read as column
   * names: a header of numbers only is refused, unless it is pandas'
   * default names of an unnamed frame's columns, 0 .. n-1. */
  guint numbers = 0;
  gboolean pandas = TRUE;
  for (guint j = 0; j < n_columns; j++) {
    char *end = NULL;
    errno = 0;
    double v = g_ascii_strtod(names[j], &end);
    gboolean number = names[j][0] != '\0' && end != NULL && *end == '\0' && isfinite(v);
    numbers += number;
    g_autofree char *index = g_strdup_printf("%u", j);
    pandas = pandas && strcmp(names[j], index) == 0;
  }
  if (numbers == n_columns && !pandas) {
    sieve_csv_reader_set_error(csv, 0, error,
                               "the first line is the header (the columns' names, the label's last), and every "
                               "field of it is a number: the file "
                               "seems to have no header, and its first example would be lost; add a header line "
                               "such as x1,x2,...,label");
    return NULL;
  }

  guint label = n_columns - 1;
  if (label_column != NULL) {
    label = G_MAXUINT;
    for (guint j = 0; j < n_columns; j++) {
      if (strcmp(names[j], label_column) != 0)
        continue;
      if (label != G_MAXUINT) {
        sieve_csv_reader_set_error(csv, j, error, "label column '%s' appears twice in the header (columns %u and %u)",
                                   label_column, label + 1, j + 1);
        return NULL;
      }
      label = j;
    }
    if (label == G_MAXUINT) {
      g_autofree char *list = g_strjoinv(", ", names);
      sieve_csv_reader_set_error(csv, 0, error, "no column named '%s' for the label; the header has: %s", label_column,
                                 list);
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
  g_autoptr(GArray) values = g_array_new(FALSE, FALSE, sizeof(double)); /* per text, when numeric */
  gboolean all_numeric = TRUE, any_negative = FALSE;
  double max_id = 0;

  /* The reader checks that every row has n_columns fields.  Its errors go
   * to `local`: the end of the rows is told from an error by it, whether or
   * not the caller asked for the error. */
  g_autoptr(GError) local = NULL;
  while (sieve_csv_reader_next(csv, &local)) {
    for (guint j = 0; j < n_columns; j++) {
      if (j == label)
        continue;
      gsize n = 0;
      const char *s = sieve_csv_reader_field(csv, j, &n);
      if (n == 0) {
        sieve_csv_reader_set_error(csv, j, error, "empty value in column '%s', expected a number", names[j]);
        return NULL;
      }
      char *stop = NULL;
      double v = g_ascii_strtod(s, &stop);
      if (stop != s + n) {
        sieve_csv_reader_set_error(csv, j, error, "expected a number in column '%s', found '%s'", names[j], s);
        return NULL;
      }
      if (!isfinite(v) || !isfinite((float) v)) {
        sieve_csv_reader_set_error(csv, j, error, "'%s' in column '%s' is not a finite float", s, names[j]);
        return NULL;
      }
      float fv = (float) v;
      g_array_append_val(xs, fv);
    }
    gsize label_length = 0;
    const char *label_text = sieve_csv_reader_field(csv, label, &label_length);
    if (label_length == 0) {
      sieve_csv_reader_set_error(csv, label, error, "empty label in column '%s'", names[label]);
      return NULL;
    }
    gpointer found = g_hash_table_lookup(ids, label_text);
    gint32 id;
    if (found != NULL) {
      id = GPOINTER_TO_INT(found) - 1;
    } else {
      id = (gint32) texts->len;
      char *copy = g_strdup(label_text);
      g_ptr_array_add(texts, copy);
      g_hash_table_insert(ids, copy, GINT_TO_POINTER(id + 1));
      double v = 0;
      LabelKind kind = label_kind(copy, &v);
      /* A number that is no class id (0.5, 1e9), or numbers and names
       * mixed, would silently turn every label into a name numbered by
       * first appearance: "1" would no longer be class 1. */
      if (kind == LABEL_OTHER_NUMBER) {
        sieve_csv_reader_set_error(csv, label, error,
                                   "label '%s' in column '%s' is a number but not a class id: numeric labels are "
                                   "integers from -65535 to 65535 (class ids from 0, or numbered in order when some "
                                   "are negative); text labels are class names",
                                   copy, names[label]);
        return NULL;
      }
      gboolean numeric = kind != LABEL_NAME;
      if (texts->len > 1 && numeric != all_numeric) {
        sieve_csv_reader_set_error(csv, label, error,
                                   "label '%s' in column '%s' is %s, but label '%s' before it is %s: the labels of "
                                   "a file are all numbers (class ids) or all class names",
                                   copy, names[label], numeric ? "a number" : "a class name",
                                   (const char *) texts->pdata[0], numeric ? "a class name" : "a number");
        return NULL;
      }
      g_array_append_val(values, v);
      all_numeric = all_numeric && numeric;
      any_negative = any_negative || kind == LABEL_NEGATIVE;
      max_id = MAX(max_id, v);
    }
    g_array_append_val(ys, id);
  }
  if (local != NULL) {
    g_propagate_error(error, g_steal_pointer(&local));
    return NULL;
  }
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
  if (all_numeric && !any_negative) {
    /* Integer labels are the class ids themselves: "3" is class 3 whatever
     * order the rows come in, as a user of 0-based labels expects. */
    for (guint i = 0; i < ys->len; i++)
      g_array_index(ys, gint32, i) = (gint32) g_array_index(values, double, g_array_index(ys, gint32, i));
    ds->n_classes = (guint) max_id + 1;
  } else if (all_numeric) {
    /* Some negative (-1/+1): classes numbered by value, smallest first,
     * each named by the first text written for its value. */
    g_autoptr(GArray) sorted = g_array_copy(values);
    g_array_sort(sorted, compare_doubles);
    guint n = 0;
    for (guint k = 0; k < sorted->len; k++)
      if (n == 0 || g_array_index(sorted, double, k) != g_array_index(sorted, double, n - 1))
        g_array_index(sorted, double, n++) = g_array_index(sorted, double, k);
    g_array_set_size(sorted, n);
    g_autofree gint32 *rank = g_new(gint32, values->len);
    ds->class_names = g_new0(char *, n + 1);
    for (guint t = 0; t < values->len; t++) {
      const double *at = bsearch(&g_array_index(values, double, t), sorted->data, n, sizeof(double), compare_doubles);
      guint lo = (guint) (at - (const double *) sorted->data);
      rank[t] = (gint32) lo;
      if (ds->class_names[lo] == NULL)
        ds->class_names[lo] = g_strdup(texts->pdata[t]);
    }
    for (guint i = 0; i < ys->len; i++)
      g_array_index(ys, gint32, i) = rank[g_array_index(ys, gint32, i)];
    ds->n_classes = n;
  } else {
    ds->n_classes = texts->len;
    g_ptr_array_add(texts, NULL);
    ds->class_names = (char **) g_ptr_array_free(g_steal_pointer(&texts), FALSE);
  }
  ds->y = (gint32 *) g_array_free(g_steal_pointer(&ys), FALSE);
  return ds;
}
