/* sieve: the report's statistics: rank correlations of proxies against the
 * objective, and the one-way ANOVA estimate of a decision's importance. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/report-private.h"

typedef struct {
  double value;
  guint index;
} Keyed;

static gint
compare_keyed(gconstpointer a, gconstpointer b)
{
  const Keyed *x = a, *y = b;
  if (x->value != y->value)
    return x->value < y->value ? -1 : 1;
  return x->index < y->index ? -1 : (x->index > y->index);
}

void
sieve__report_ranks(const double *values, guint n, double *ranks)
{
  g_autofree Keyed *keyed = g_new(Keyed, n ? n : 1);
  for (guint i = 0; i < n; i++)
    keyed[i] = (Keyed){values[i], i};
  qsort(keyed, n, sizeof *keyed, compare_keyed);
  for (guint i = 0; i < n;) {
    guint j = i;
    while (j + 1 < n && keyed[j + 1].value == keyed[i].value)
      j++;
    /* Ties share the mean of the ranks they span (1-based). */
    double rank = (i + j) / 2.0 + 1.0;
    for (guint k = i; k <= j; k++)
      ranks[keyed[k].index] = rank;
    i = j + 1;
  }
}

static double
pearson(const double *x, const double *y, guint n)
{
  double mx = 0, my = 0;
  for (guint i = 0; i < n; i++) {
    mx += x[i];
    my += y[i];
  }
  mx /= n;
  my /= n;
  double sxy = 0, sxx = 0, syy = 0;
  for (guint i = 0; i < n; i++) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx <= 0 || syy <= 0)
    return NAN;
  return sxy / sqrt(sxx * syy);
}

double
sieve_report_spearman(const double *x, const double *y, guint n)
{
  if (n < 2)
    return NAN;
  g_autofree double *rx = g_new(double, n);
  g_autofree double *ry = g_new(double, n);
  sieve__report_ranks(x, n, rx);
  sieve__report_ranks(y, n, ry);
  return pearson(rx, ry, n);
}

typedef struct {
  double x, y;
} Pair;

static gint
compare_pair(gconstpointer a, gconstpointer b)
{
  const Pair *p = a, *q = b;
  if (p->x != q->x)
    return p->x < q->x ? -1 : 1;
  if (p->y != q->y)
    return p->y < q->y ? -1 : 1;
  return 0;
}

/* Sorts ys[0..n) ascending (stable merge sort) and returns the number of
 * exchanges an insertion sort would make: the pairs out of order. */
static guint64
merge_count(double *ys, double *tmp, guint n)
{
  if (n < 2)
    return 0;
  guint half = n / 2;
  guint64 swaps = merge_count(ys, tmp, half) + merge_count(ys + half, tmp, n - half);
  guint i = 0, j = half, k = 0;
  while (i < half && j < n) {
    if (ys[j] < ys[i]) {
      swaps += half - i; /* ys[j] jumps over every left element still waiting */
      tmp[k++] = ys[j++];
    } else {
      tmp[k++] = ys[i++];
    }
  }
  while (i < half)
    tmp[k++] = ys[i++];
  while (j < n)
    tmp[k++] = ys[j++];
  memcpy(ys, tmp, n * sizeof *ys);
  return swaps;
}

/* Pairs tied within runs of equal keys: sum of t(t-1)/2. */
static guint64
tied_pairs_x(const Pair *pairs, guint n, gboolean joint)
{
  guint64 tied = 0;
  for (guint i = 0; i < n;) {
    guint j = i + 1;
    while (j < n && pairs[j].x == pairs[i].x && (!joint || pairs[j].y == pairs[i].y))
      j++;
    guint64 t = j - i;
    tied += t * (t - 1) / 2;
    i = j;
  }
  return tied;
}

static guint64
tied_pairs_sorted(const double *v, guint n)
{
  guint64 tied = 0;
  for (guint i = 0; i < n;) {
    guint j = i + 1;
    while (j < n && v[j] == v[i])
      j++;
    guint64 t = j - i;
    tied += t * (t - 1) / 2;
    i = j;
  }
  return tied;
}

double
sieve_report_kendall(const double *x, const double *y, guint n)
{
  if (n < 2)
    return NAN;
  g_autofree Pair *pairs = g_new(Pair, n);
  for (guint i = 0; i < n; i++)
    pairs[i] = (Pair){x[i], y[i]};
  /* Knight (1966): sorted by x then y, the discordant pairs are the
   * inversions of the y sequence, counted while merge-sorting it. */
  qsort(pairs, n, sizeof *pairs, compare_pair);
  guint64 total = (guint64) n * (n - 1) / 2;
  guint64 x_ties = tied_pairs_x(pairs, n, FALSE);
  guint64 joint_ties = tied_pairs_x(pairs, n, TRUE);
  g_autofree double *ys = g_new(double, n);
  g_autofree double *tmp = g_new(double, n);
  for (guint i = 0; i < n; i++)
    ys[i] = pairs[i].y;
  guint64 discordant = merge_count(ys, tmp, n);
  guint64 y_ties = tied_pairs_sorted(ys, n);
  if (total == x_ties || total == y_ties)
    return NAN;
  /* concordant - discordant over the pairs untied in both, as tau-b counts */
  double difference = (double) total - x_ties - y_ties + joint_ties - 2.0 * discordant;
  return difference / sqrt(((double) total - x_ties) * ((double) total - y_ties));
}

double
sieve_report_eta_squared(const double *values, const guint *group, guint n, guint n_groups)
{
  if (n < 2 || n_groups == 0)
    return NAN;
  g_autofree double *sum = g_new0(double, n_groups);
  g_autofree guint *count = g_new0(guint, n_groups);
  double mean = 0;
  for (guint i = 0; i < n; i++) {
    mean += values[i];
    sum[group[i]] += values[i];
    count[group[i]]++;
  }
  mean /= n;
  double total = 0, between = 0;
  for (guint i = 0; i < n; i++)
    total += (values[i] - mean) * (values[i] - mean);
  for (guint g = 0; g < n_groups; g++)
    if (count[g] > 0) {
      double m = sum[g] / count[g];
      between += count[g] * (m - mean) * (m - mean);
    }
  if (total <= 0)
    return NAN;
  return CLAMP(between / total, 0.0, 1.0);
}
