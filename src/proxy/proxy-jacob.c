/* jacob_cov (Mellor et al., "Neural Architecture Search without Training",
 * arXiv v1 2020, section 3; as a proxy, Abdelfattah et al. 2021): the
 * Jacobian of the sum of the logits with respect to each input example,
 * the correlation matrix of those B rows, and the score
 * -sum over its eigenvalues v of (log(v + k) + 1 / (v + k)), k = 1e-5.
 *
 * As the reference code does: rows with no variance (an example whose
 * Jacobian is constant, e.g. every row of a network whose output does not
 * depend on its input) have undefined correlations, which numpy turns into
 * NaN and nan_to_num into 0; so does this.  Such a network scores
 * -B (log k + 1/k), about -1e5 B, the lowest score there is.  The
 * correlation matrix is positive semi-definite; eigenvalues that rounding
 * puts below zero count as zero. */
#include <math.h>
#include <omp.h>

#include "proxy/proxy-private.h"

#define JACOB_K 1e-5

gboolean
sieve__proxy_jacob_cov(SieveProxyRun *run, double *score, GError **error)
{
  guint n = run->batch;
  gsize d = run->in_size;
  g_autofree float *ones = g_new(float, (gsize)n * run->n_classes);
  for (gsize i = 0; i < (gsize)n * run->n_classes; i++)
    ones[i] = 1.0f;
  g_autofree float *j = g_new(float, (gsize)n * d);
  /* Only the input's gradient: no weight-gradient kernels. */
  if (!sieve_runtime_backward_input(run->rt, ones, error) || !sieve_runtime_read_input_grad(run->rt, j, error))
    return FALSE;
  /* Centred rows in double, then their Gram matrix. */
  g_autofree double *r = g_new(double, (gsize)n * d);
  for (guint b = 0; b < n; b++) {
    double mean = 0;
    for (gsize k = 0; k < d; k++)
      mean += j[(gsize)b * d + k];
    mean /= d;
    for (gsize k = 0; k < d; k++)
      r[(gsize)b * d + k] = j[(gsize)b * d + k] - mean;
  }
  g_autofree double *c = g_new(double, (gsize)n * n);
  gint64 nn = n;
#pragma omp parallel for schedule(dynamic, 1) num_threads(run->threads) if (nn * nn * (gint64)d > 200000)
  for (gint64 a = 0; a < nn; a++)
    for (gint64 b = a; b < nn; b++) {
      double s = 0;
      for (gsize k = 0; k < d; k++)
        s += r[a * d + k] * r[b * d + k];
      c[a * nn + b] = c[b * nn + a] = s;
    }
  g_autofree double *sd = g_new(double, n);
  for (guint a = 0; a < n; a++)
    sd[a] = sqrt(c[(gsize)a * n + a]);
  for (guint a = 0; a < n; a++)
    for (guint b = 0; b < n; b++) {
      double v = sd[a] > 0 && sd[b] > 0 ? c[(gsize)a * n + b] / (sd[a] * sd[b]) : 0;
      c[(gsize)a * n + b] = CLAMP(v, -1.0, 1.0);
    }
  g_autofree double *w = g_new(double, n);
  sieve__sym_eigenvalues(c, n, w);
  double s = 0;
  for (guint a = 0; a < n; a++) {
    double v = MAX(w[a], 0.0) + JACOB_K;
    s += log(v) + 1 / v;
  }
  *score = -s;
  return TRUE;
}
