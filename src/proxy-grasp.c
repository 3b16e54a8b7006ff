/* grasp (Wang et al., "Picking Winning Tickets Before Training by
 * Preserving Gradient Flow", ICLR 2020; as a proxy, Abdelfattah et al.
 * 2021): score = -sum over weights of theta * (H g), with g the gradient of
 * the cross-entropy and H its Hessian, both over the conv and linear
 * weights, the network in train mode.  Larger is better as returned (the
 * sign zero-cost-nas and the PyTorch peer give it).
 *
 * oneDNN has no double backward, so H g comes from a central difference of
 * gradients (Pearlmutter 1994 names it as the simple alternative to his
 * exact R-operator):
 *   H v ~ (g(theta + eps v) - g(theta - eps v)) / (2 eps),
 * two more forward and backward passes, error O(eps^2) where the loss is
 * smooth.  eps is chosen so that the step eps * |v| is GRASP_STEP *
 * (1 + |theta|): big enough that the gradients' float32 rounding (about
 * 1e-6 of their size) stays well below the difference, small enough that
 * the second-order term dominates.  ReLU networks are only piecewise
 * smooth; the steps cross a few ReLU kinks, which the exact product does
 * not see, and that is the main difference from an autograd grasp (see the
 * README's agreement figures). */
#include <math.h>
#include <string.h>

#include "proxy-run.h"

#define GRASP_STEP 1e-3

gboolean
sieve__proxy_hvp(SieveProxyRun *run, GArray *params, GPtrArray *v, double eps, GPtrArray *hv, GError **error)
{
  SieveRuntime *rt = run->rt;
  guint n = params->len;
  g_autoptr(GPtrArray) theta = g_ptr_array_new_with_free_func(g_free);
  for (guint k = 0; k < n; k++) {
    guint i = g_array_index(params, guint, k);
    float *t = g_new(float, sieve_runtime_param_info(rt, i)->size);
    g_ptr_array_add(theta, t);
    if (!sieve_runtime_get_param(rt, i, t, error))
      return FALSE;
    g_ptr_array_add(hv, g_new0(double, sieve_runtime_param_info(rt, i)->size));
  }
  gboolean ok = TRUE;
  g_autofree float *buf = NULL;
  for (int side = 0; side < 2 && ok; side++) {
    double sign = side == 0 ? 1 : -1;
    for (guint k = 0; k < n && ok; k++) {
      guint i = g_array_index(params, guint, k);
      guint64 size = sieve_runtime_param_info(rt, i)->size;
      buf = g_renew(float, buf, size);
      const float *t = theta->pdata[k], *d = v->pdata[k];
      for (guint64 j = 0; j < size; j++)
        buf[j] = (float)(t[j] + sign * eps * d[j]);
      ok = sieve_runtime_set_param(rt, i, buf, error);
    }
    ok = ok && sieve__proxy_forward(run, error) && sieve__proxy_backward_ce(run, error);
    for (guint k = 0; k < n && ok; k++) {
      guint i = g_array_index(params, guint, k);
      guint64 size = sieve_runtime_param_info(rt, i)->size;
      buf = g_renew(float, buf, size);
      ok = sieve_runtime_get_grad(rt, i, buf, error);
      double *h = hv->pdata[hv->len - n + k];
      for (guint64 j = 0; j < size && ok; j++)
        h[j] += sign * buf[j] / (2 * eps);
    }
  }
  /* The weights come back whatever happened. */
  for (guint k = 0; k < n; k++)
    if (!sieve_runtime_set_param(rt, g_array_index(params, guint, k), theta->pdata[k], ok ? error : NULL))
      ok = FALSE;
  return ok;
}

gboolean
sieve__proxy_grasp(SieveProxyRun *run, GPtrArray *grads, double *score, GError **error)
{
  SieveRuntime *rt = run->rt;
  double gsq = 0, tsq = 0;
  g_autoptr(GPtrArray) theta = g_ptr_array_new_with_free_func(g_free);
  for (guint k = 0; k < run->weights->len; k++) {
    guint i = g_array_index(run->weights, guint, k);
    guint64 size = sieve_runtime_param_info(rt, i)->size;
    float *t = g_new(float, size);
    g_ptr_array_add(theta, t);
    if (!sieve_runtime_get_param(rt, i, t, error))
      return FALSE;
    const float *g = grads->pdata[k];
    for (guint64 j = 0; j < size; j++) {
      gsq += (double)g[j] * g[j];
      tsq += (double)t[j] * t[j];
    }
  }
  if (gsq == 0) {
    /* No gradient reaches the weights: H g = 0. */
    *score = 0;
    return TRUE;
  }
  double eps = GRASP_STEP * (1 + sqrt(tsq)) / sqrt(gsq);
  g_autoptr(GPtrArray) hg = g_ptr_array_new_with_free_func(g_free);
  if (!sieve__proxy_hvp(run, run->weights, grads, eps, hg, error))
    return FALSE;
  double s = 0;
  for (guint k = 0; k < run->weights->len; k++) {
    guint64 size = sieve_runtime_param_info(rt, g_array_index(run->weights, guint, k))->size;
    const float *t = theta->pdata[k];
    const double *h = hg->pdata[k];
    for (guint64 j = 0; j < size; j++)
      s -= t[j] * h[j];
  }
  *score = s;
  return TRUE;
}
