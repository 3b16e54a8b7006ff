/* Ensembles of proxies by rank aggregation: each proxy ranks the
 * candidates, and a candidate's score is the (weighted) mean of its ranks,
 * the simple end of ParZC's idea (Dong et al. 2024, "ParZC: Parametric
 * Zero-Cost Proxies"); Abdelfattah et al. 2021 already combined three
 * proxies by a vote.  Ranks put scales aside: synflow
 * spans 1e30 where fisher spans 1e-3. */
#include <math.h>
#include <stdlib.h>

#include <sieve/proxy.h>

typedef struct {
  double v;
  guint i;
} Entry;

/* NaN lowest, then by value. */
static int
cmp_entry(const void *pa, const void *pb)
{
  const Entry *a = pa, *b = pb;
  gboolean na = isnan(a->v), nb = isnan(b->v);
  if (na || nb)
    return nb - na;
  return (a->v > b->v) - (a->v < b->v);
}

static gboolean
tied(double a, double b)
{
  return (isnan(a) && isnan(b)) || a == b;
}

void
sieve_proxy_rank_aggregate(const double *scores, guint n_candidates, guint n_proxies, const double *weights,
                           double *out)
{
  g_return_if_fail(n_candidates == 0 || (scores != NULL && out != NULL));
  double wsum = 0;
  for (guint p = 0; p < n_proxies; p++)
    wsum += weights ? weights[p] : 1;
  g_return_if_fail(n_candidates == 0 || wsum > 0);
  for (guint c = 0; c < n_candidates; c++)
    out[c] = 0;
  g_autofree Entry *e = g_new(Entry, MAX(n_candidates, 1));
  for (guint p = 0; p < n_proxies; p++) {
    double w = weights ? weights[p] : 1;
    for (guint c = 0; c < n_candidates; c++)
      e[c] = (Entry){scores[(gsize)c * n_proxies + p], c};
    qsort(e, n_candidates, sizeof(Entry), cmp_entry);
    /* Ties share the mean of the ranks they span. */
    for (guint lo = 0; lo < n_candidates;) {
      guint hi = lo + 1;
      while (hi < n_candidates && tied(e[hi].v, e[lo].v))
        hi++;
      double rank = (lo + hi - 1) / 2.0;
      for (guint k = lo; k < hi; k++)
        out[e[k].i] += w * rank;
      lo = hi;
    }
  }
  for (guint c = 0; c < n_candidates; c++)
    out[c] /= wsum;
}
