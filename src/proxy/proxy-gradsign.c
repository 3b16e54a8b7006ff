/* gradsign (Zhang & Jia, "GradSign: Model Performance Inference with
 * Theoretical Insights", ICLR 2022, equation 6): for every conv and linear
 * weight theta_k, the per-example gradients' signs are summed over the
 * batch and the score is sum over k of |sum over i of sign(dl(x_i)/dtheta_k)|:
 * high when the examples agree on which way each weight should move.
 *
 * Per-example gradients as the authors' code takes them: one forward and
 * backward of each example alone (a batch of one; batch norm in train mode
 * normalises over the example's positions), the cross-entropy of that
 * example, sign(0) = 0.  Cost: B forward and backward passes of one example
 * on a runtime compiled for batch 1, about the work of one batch-B pass
 * plus B times the per-call overhead, and B reads of every weight gradient.
 * A network no gradient flows through scores 0. */
#include <math.h>
#include <stdlib.h>

#include "proxy/proxy-private.h"

gboolean
sieve__proxy_gradsign(SieveProxyRun *run, double *score, GError **error)
{
  SieveRuntimeOptions o = {
    .device = run->device, .batch = 1, .threads = run->threads, .backward = TRUE, .seed = run->seed};
  g_autoptr(SieveRuntime) rt = sieve_runtime_new(run->graph, &o, error);
  if (rt == NULL)
    return FALSE;
  g_autoptr(GArray) weights = sieve__proxy_weight_params(rt, run->graph);
  guint64 total = 0;
  for (guint k = 0; k < weights->len; k++)
    total += sieve_runtime_param_info(rt, g_array_index(weights, guint, k))->size;
  g_autofree gint32 *votes = g_new0(gint32, total);
  g_autofree float *z = g_new(float, run->n_classes);
  g_autofree float *dz = g_new(float, run->n_classes);
  g_autofree float *g = NULL;
  guint out = sieve_graph_output(run->graph);
  for (guint b = 0; b < run->batch; b++) {
    if (!sieve_runtime_forward(rt, run->x + (gsize)b * run->in_size, NULL, SIEVE_MODE_TRAIN, error) ||
        !sieve_runtime_read(rt, out, z, error))
      return FALSE;
    sieve__proxy_ce_grad(z, run->labels + b, 1, run->n_classes, dz);
    if (!sieve_runtime_backward(rt, dz, error))
      return FALSE;
    gint32 *vote = votes;
    for (guint k = 0; k < weights->len; k++) {
      guint i = g_array_index(weights, guint, k);
      guint64 size = sieve_runtime_param_info(rt, i)->size;
      g = g_renew(float, g, size);
      if (!sieve_runtime_get_grad(rt, i, g, error))
        return FALSE;
      for (guint64 j = 0; j < size; j++)
        vote[j] += (g[j] > 0) - (g[j] < 0);
      vote += size;
    }
  }
  double s = 0;
  for (guint64 j = 0; j < total; j++)
    s += abs(votes[j]);
  *score = s;
  return TRUE;
}
