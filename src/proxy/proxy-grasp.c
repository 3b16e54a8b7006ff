/* grasp (Wang et al., "Picking Winning Tickets Before Training by
 * Preserving Gradient Flow", ICLR 2020; as a proxy, Abdelfattah et al.
 * 2021): score = -theta . (H g), with g the gradient of the cross-entropy
 * and H its Hessian, both over the conv and linear weights theta, the
 * network in train mode.  Larger is better as returned (the sign
 * zero-cost-nas and the PyTorch peer give it).
 *
 * oneDNN has no double backward, so the Hessian product comes from a
 * central difference of gradients (Pearlmutter 1994 names it as the simple
 * alternative to his exact R-operator):
 *   H v ~ (g(theta + eps v) - g(theta - eps v)) / (2 eps),
 * two more forward and backward passes.  Two choices make it agree with
 * automatic differentiation (relative error about 2e-3 against PyTorch on
 * identical NAS-Bench-201 weights and batch):
 *  - the product is taken along theta, not g: theta . (H g) = g . (H theta)
 *    since H is symmetric.  Behind batch norm a convolution's loss does
 *    not change with the scale of its weights, so theta_l . g_l = 0 for
 *    such a layer at every point and theta . g(theta + eps g) is a sum of
 *    float32 rounding; g . g(theta (1 + eps)) is not (for those layers it
 *    is |g_l|^2 / (1 + eps)), and moving every weight by the same fraction
 *    eps leaves their batch norms' outputs, hence most ReLUs, unchanged;
 *  - the ReLUs are frozen (sieve_runtime_freeze_activations) on the
 *    pattern of theta: the difference then sees the curvature automatic
 *    differentiation sees (softmax, batch norm; ReLU'' = 0) and not the
 *    jumps of the gradient at the kinks the steps would cross, which do not
 *    shrink with eps.
 * eps = GRASP_STEP, a relative step: the error is O(eps^2) (1e-2: 2%)
 * above it and float32 rounding / eps (3e-4: 3%) below it. */
#include <math.h>
#include <string.h>

#include "proxy/proxy-private.h"

#define GRASP_STEP 2e-3

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
  /* On the linear piece of theta: the last forward was at theta. */
  gboolean ok = sieve_runtime_freeze_activations(rt, TRUE, error);
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
    ok = ok && sieve__proxy_forward(run, error) && sieve__proxy_backward_ce(run, FALSE, error);
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
  /* The weights and ReLUs come back whatever happened. */
  sieve_runtime_freeze_activations(rt, FALSE, NULL);
  for (guint k = 0; k < n; k++)
    if (!sieve_runtime_set_param(rt, g_array_index(params, guint, k), theta->pdata[k], ok ? error : NULL))
      ok = FALSE;
  return ok;
}

gboolean
sieve__proxy_grasp(SieveProxyRun *run, GPtrArray *grads, double *score, GError **error)
{
  SieveRuntime *rt = run->rt;
  g_autoptr(GPtrArray) theta = g_ptr_array_new_with_free_func(g_free);
  double gsq = 0;
  for (guint k = 0; k < run->weights->len; k++) {
    guint i = g_array_index(run->weights, guint, k);
    guint64 size = sieve_runtime_param_info(rt, i)->size;
    float *t = g_new(float, size);
    g_ptr_array_add(theta, t);
    if (!sieve_runtime_get_param(rt, i, t, error))
      return FALSE;
    const float *g = grads->pdata[k];
    for (guint64 j = 0; j < size; j++)
      gsq += (double)g[j] * g[j];
  }
  if (gsq == 0) {
    /* No gradient reaches the weights: H g = 0. */
    *score = 0;
    return TRUE;
  }
  g_autoptr(GPtrArray) ht = g_ptr_array_new_with_free_func(g_free);
  if (!sieve__proxy_hvp(run, run->weights, theta, GRASP_STEP, ht, error))
    return FALSE;
  double s = 0;
  for (guint k = 0; k < run->weights->len; k++) {
    guint64 size = sieve_runtime_param_info(rt, g_array_index(run->weights, guint, k))->size;
    const float *g = grads->pdata[k];
    const double *h = ht->pdata[k];
    for (guint64 j = 0; j < size; j++)
      s -= g[j] * h[j];
  }
  *score = s;
  return TRUE;
}
