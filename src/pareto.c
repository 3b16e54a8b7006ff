/* sieve: the Pareto front of a multi-objective study, for the summary. */
#include <math.h>
#include <string.h>

#include "progress.h"

/* Rows printed before the rest of a large front is only counted. */
#define MAX_FRONT_ROWS 50

typedef struct {
  const SieveTrial *trial;
  double *values; /* oriented: larger is better */
} Point;

static gboolean
dominates(const Point *a, const Point *b, guint n)
{
  gboolean strictly = FALSE;
  for (guint k = 0; k < n; k++) {
    if (a->values[k] < b->values[k])
      return FALSE;
    if (a->values[k] > b->values[k])
      strictly = TRUE;
  }
  return strictly;
}

static gint
compare_first(gconstpointer a, gconstpointer b)
{
  const Point *x = a, *y = b;
  if (x->values[0] != y->values[0])
    return x->values[0] > y->values[0] ? -1 : 1;
  return x->trial->number < y->trial->number ? -1 : 1;
}

gboolean
sieve_print_pareto(FILE *out, SieveStore *store, const char *const *metrics, const gboolean *maximize, guint n,
                   GError **error)
{
  g_autoptr(GPtrArray) trials = sieve_store_list_trials(store, FALSE, error);
  if (trials == NULL)
    return FALSE;
  g_autoptr(GArray) points = g_array_new(FALSE, FALSE, sizeof(Point));
  g_autofree double *values = g_new(double, (gsize) trials->len * n + 1);
  for (guint i = 0; i < trials->len; i++) {
    const SieveTrial *t = trials->pdata[i];
    if (t->status != SIEVE_STATUS_OK)
      continue;
    Point p = {t, values + (gsize) points->len * n};
    gboolean complete = TRUE;
    for (guint k = 0; k < n && complete; k++) {
      double v;
      complete = sieve_result_get_metric(t->result, metrics[k], &v) && !isnan(v);
      p.values[k] = maximize[k] ? v : -v;
    }
    if (complete)
      g_array_append_val(points, p);
  }
  /* O(n^2) over finished trials: fine for a summary printed once. */
  g_autoptr(GArray) front = g_array_new(FALSE, FALSE, sizeof(Point));
  for (guint i = 0; i < points->len; i++) {
    const Point *p = &g_array_index(points, Point, i);
    gboolean dominated = FALSE;
    for (guint j = 0; j < points->len && !dominated; j++)
      dominated = j != i && dominates(&g_array_index(points, Point, j), p, n);
    if (!dominated)
      g_array_append_val(front, *p);
  }
  g_array_sort(front, compare_first);
  GString *line = g_string_new(NULL);
  for (guint k = 0; k < n; k++)
    g_string_append_printf(line, "%s%s (%s)", k ? ", " : "", metrics[k], maximize[k] ? "maximize" : "minimize");
  fprintf(out, "Pareto front over %s: %u non-dominated trials\n", line->str, front->len);
  if (front->len == 0) {
    g_string_free(line, TRUE);
    return TRUE;
  }
  g_string_printf(line, "%7s", "trial");
  for (guint k = 0; k < n; k++)
    g_string_append_printf(line, " %*s", (int) MAX(12, strlen(metrics[k])), metrics[k]);
  fprintf(out, "%s  genotype\n", line->str);
  for (guint r = 0; r < front->len && r < MAX_FRONT_ROWS; r++) {
    const Point *p = &g_array_index(front, Point, r);
    g_string_printf(line, "%7" G_GINT64_FORMAT, p->trial->number);
    for (guint k = 0; k < n; k++)
      g_string_append_printf(line, " %*.6g", (int) MAX(12, strlen(metrics[k])), maximize[k] ? p->values[k] : -p->values[k]);
    fprintf(out, "%s  %s\n", line->str, p->trial->genotype);
  }
  if (front->len > MAX_FRONT_ROWS)
    fprintf(out, "... and %u more (sieve export lists every trial)\n", front->len - MAX_FRONT_ROWS);
  g_string_free(line, TRUE);
  return TRUE;
}
