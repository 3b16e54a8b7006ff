/* The dense linear algebra the proxies need, in double on small matrices
 * (batch x batch): a log-determinant (naswot) and symmetric eigenvalues
 * (jacob_cov).  Sizes are at most a few hundred, so plain loops suffice and
 * no LAPACK dependency is worth it. */
#include <math.h>
#include <stdlib.h>

#include "proxy/proxy-private.h"

/* LU with partial pivoting (Golub & Van Loan, "Matrix Computations",
 * algorithm 3.4.1): log |det| = sum log |u_ii|.  An exactly zero pivot
 * column means a singular matrix, whose log-determinant is -inf, as
 * numpy.linalg.slogdet and torch.slogdet report it. */
double
sieve__logabsdet(double *a, guint n)
{
  double logdet = 0;
  for (guint k = 0; k < n; k++) {
    guint p = k;
    for (guint i = k + 1; i < n; i++)
      if (fabs(a[(gsize)i * n + k]) > fabs(a[(gsize)p * n + k]))
        p = i;
    double pivot = a[(gsize)p * n + k];
    if (pivot == 0)
      return -INFINITY;
    if (p != k)
      for (guint j = 0; j < n; j++) {
        double t = a[(gsize)k * n + j];
        a[(gsize)k * n + j] = a[(gsize)p * n + j];
        a[(gsize)p * n + j] = t;
      }
    logdet += log(fabs(pivot));
    for (guint i = k + 1; i < n; i++) {
      double f = a[(gsize)i * n + k] / pivot;
      if (f == 0)
        continue;
      for (guint j = k + 1; j < n; j++)
        a[(gsize)i * n + j] -= f * a[(gsize)k * n + j];
    }
  }
  return logdet;
}

static int
cmp_double(gconstpointer a, gconstpointer b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Cyclic Jacobi (Golub & Van Loan, algorithm 8.5.3): rotations that zero
 * each off-diagonal entry in turn until the off-diagonal mass is at the
 * level of rounding.  Accurate to a few ulps of the largest eigenvalue,
 * which is all a 1/(v + 1e-5) needs. */
void
sieve__sym_eigenvalues(double *a, guint n, double *w)
{
#define A(i, j) a[(gsize)(i) * n + (j)]
  double total = 0;
  for (guint i = 0; i < n; i++)
    for (guint j = 0; j < n; j++)
      total += A(i, j) * A(i, j);
  for (guint sweep = 0; sweep < 100; sweep++) {
    double off = 0;
    for (guint i = 0; i < n; i++)
      for (guint j = i + 1; j < n; j++)
        off += A(i, j) * A(i, j);
    if (off <= 1e-30 * total || off == 0)
      break;
    for (guint p = 0; p < n; p++)
      for (guint q = p + 1; q < n; q++) {
        double apq = A(p, q);
        if (apq == 0)
          continue;
        double theta = (A(q, q) - A(p, p)) / (2 * apq);
        double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
        double c = 1 / sqrt(t * t + 1), s = t * c;
        for (guint k = 0; k < n; k++) {
          double akp = A(k, p), akq = A(k, q);
          A(k, p) = c * akp - s * akq;
          A(k, q) = s * akp + c * akq;
        }
        for (guint k = 0; k < n; k++) {
          double apk = A(p, k), aqk = A(q, k);
          A(p, k) = c * apk - s * aqk;
          A(q, k) = s * apk + c * aqk;
        }
      }
  }
  for (guint i = 0; i < n; i++)
    w[i] = A(i, i);
  qsort(w, n, sizeof(double), cmp_double);
#undef A
}
