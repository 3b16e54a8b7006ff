/* sieve: the Pareto front of two objectives, as the report draws it. */
#include <math.h>
#include <stdlib.h>

#include "report/report-private.h"

typedef struct {
  double a, b;
  guint index;
} Point2;

static gint
compare_desc(gconstpointer x, gconstpointer y)
{
  const Point2 *p = x, *q = y;
  if (p->a != q->a)
    return p->a > q->a ? -1 : 1;
  if (p->b != q->b)
    return p->b > q->b ? -1 : 1;
  return p->index < q->index ? -1 : 1;
}

void
sieve_report_pareto_2d(const double *values, guint n, gboolean *on_front)
{
  g_autofree Point2 *points = g_new(Point2, n ? n : 1);
  for (guint i = 0; i < n; i++) {
    points[i] = (Point2){values[2 * i], values[2 * i + 1], i};
    on_front[i] = FALSE;
  }
  /* Sorted by the first objective, best first: a point is dominated exactly
   * when a point of a strictly better first value has a second value at
   * least as good, or one of an equal first value a strictly better second
   * value.  One sweep over groups of equal first values sees both. */
  qsort(points, n, sizeof *points, compare_desc);
  double best_before = -INFINITY;
  gboolean any_before = FALSE;
  for (guint i = 0; i < n;) {
    guint j = i;
    while (j < n && points[j].a == points[i].a)
      j++;
    double group_best = points[i].b; /* sorted: the group's largest second value */
    for (guint k = i; k < j && points[k].b == group_best; k++)
      if (!any_before || group_best > best_before)
        on_front[points[k].index] = TRUE;
    if (!any_before || group_best > best_before)
      best_before = group_best;
    any_before = TRUE;
    i = j;
  }
}
