/* The passes the gradient proxies share, and the three that need nothing
 * but one backward of the cross-entropy: grad_norm, snip and fisher
 * (Abdelfattah et al., "Zero-Cost Proxies for Lightweight NAS", ICLR 2021,
 * section 3 and their zero-cost-nas code).
 *
 * Choices the paper leaves open, made as its code and the PyTorch peer make
 * them: the network in train mode (batch norm normalises with the batch's
 * statistics), the mean cross-entropy over the batch, and only the weights
 * of convolutions and linear layers scored (no biases, no batch norm). */
#include <math.h>
#include <string.h>

#include "proxy/proxy-private.h"

GArray *
sieve__proxy_weight_params(SieveRuntime *rt, const SieveGraph *graph)
{
  GArray *w = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < sieve_runtime_n_params(rt); i++) {
    const SieveParamInfo *info = sieve_runtime_param_info(rt, i);
    SieveOpKind kind = sieve_graph_node(graph, info->node)->kind;
    if ((kind == SIEVE_OP_CONV2D || kind == SIEVE_OP_LINEAR) && g_str_equal(info->name, "weight"))
      g_array_append_val(w, i);
  }
  return w;
}

gboolean
sieve__proxy_forward(SieveProxyRun *run, GError **error)
{
  if (!sieve_runtime_forward(run->rt, run->x, NULL, SIEVE_MODE_TRAIN, error))
    return FALSE;
  if (run->logits == NULL)
    run->logits = g_new(float, (gsize)run->batch * run->n_classes);
  return sieve_runtime_read(run->rt, sieve_graph_output(run->graph), run->logits, error);
}

void
sieve__proxy_ce_grad(const float *logits, const gint32 *labels, guint batch, guint n_classes, float *dz)
{
  for (guint b = 0; b < batch; b++) {
    const float *z = logits + (gsize)b * n_classes;
    float *d = dz + (gsize)b * n_classes;
    double m = z[0], s = 0;
    for (guint k = 1; k < n_classes; k++)
      m = MAX(m, z[k]);
    for (guint k = 0; k < n_classes; k++)
      s += exp(z[k] - m);
    for (guint k = 0; k < n_classes; k++)
      d[k] = (float)((exp(z[k] - m) / s - (k == (guint)labels[b] ? 1 : 0)) / batch);
  }
}

gboolean
sieve__proxy_backward_ce(SieveProxyRun *run, gboolean input_only, GError **error)
{
  g_autofree float *dz = g_new(float, (gsize)run->batch * run->n_classes);
  sieve__proxy_ce_grad(run->logits, run->labels, run->batch, run->n_classes, dz);
  return input_only ? sieve_runtime_backward_input(run->rt, dz, error) : sieve_runtime_backward(run->rt, dz, error);
}

/* grad_norm: the sum over layers of the Euclidean norm of each weight
 * tensor's gradient (per layer, then summed, as zero-cost-nas sums its
 * per-layer array).  snip (Lee et al., ICLR 2019, as a proxy): the sum of
 * |dL/dw * w| over every weight.  plain (zero-cost-nas's baseline beside
 * snip): the same sum without the absolute value, dL/dw . w, the first-order
 * change of the loss when every weight is scaled by the same factor. */
gboolean
sieve__proxy_grad_norm_snip(SieveProxyRun *run, double *grad_norm, double *snip, double *plain, GPtrArray *grads,
                            GError **error)
{
  double norm = 0, saliency = 0, dot = 0;
  g_autofree float *w = NULL;
  for (guint k = 0; k < run->weights->len; k++) {
    guint i = g_array_index(run->weights, guint, k);
    guint64 size = sieve_runtime_param_info(run->rt, i)->size;
    float *g = g_new(float, size);
    if (!sieve_runtime_get_grad(run->rt, i, g, error)) {
      g_free(g);
      return FALSE;
    }
    double sq = 0;
    for (guint64 j = 0; j < size; j++)
      sq += (double)g[j] * g[j];
    norm += sqrt(sq);
    if (snip || plain) {
      w = g_renew(float, w, size);
      if (!sieve_runtime_get_param(run->rt, i, w, error)) {
        g_free(g);
        return FALSE;
      }
      for (guint64 j = 0; j < size; j++) {
        double gw = (double)g[j] * w[j];
        saliency += fabs(gw);
        dot += gw;
      }
    }
    if (grads)
      g_ptr_array_add(grads, g);
    else
      g_free(g);
  }
  if (grad_norm)
    *grad_norm = norm;
  if (snip)
    *snip = saliency;
  if (plain)
    *plain = dot;
  return TRUE;
}

/* l2_norm (zero-cost-nas, NASLib): the sum over conv/linear layers of the
 * Euclidean norm of each weight tensor as initialised.  It reads no data:
 * with sieve's fan-in initialisation it measures how many layers, and how
 * wide, the network has. */
gboolean
sieve__proxy_l2_norm(SieveProxyRun *run, double *score, GError **error)
{
  double total = 0;
  g_autofree float *w = NULL;
  for (guint k = 0; k < run->weights->len; k++) {
    guint i = g_array_index(run->weights, guint, k);
    guint64 size = sieve_runtime_param_info(run->rt, i)->size;
    w = g_renew(float, w, size);
    if (!sieve_runtime_get_param(run->rt, i, w, error))
      return FALSE;
    double sq = 0;
    for (guint64 j = 0; j < size; j++)
      sq += (double)w[j] * w[j];
    total += sqrt(sq);
  }
  *score = total;
  return TRUE;
}

/* fisher (Theis et al. 2018, "Faster gaze prediction with dense networks
 * and Fisher pruning"; as a proxy, Abdelfattah et al. 2021): for each
 * convolution's output a and its gradient da, per example and channel
 * s = sum over positions of a * da, and the score adds 0.5 * mean over the
 * batch of s^2 for every channel.  Convolutions only, as the PyTorch peer
 * hooks them (zero-cost-nas also counts the linear classifier; its term is
 * the same formula without positions). */
gboolean
sieve__proxy_fisher(SieveProxyRun *run, double *score, GError **error)
{
  const SieveGraph *g = run->graph;
  double total = 0;
  g_autofree double *dots = NULL;
  for (guint v = 0; v < sieve_graph_n_nodes(g); v++) {
    const SieveGraphNode *n = sieve_graph_node(g, v);
    if (n->kind != SIEVE_OP_CONV2D || !sieve_graph_node_live(g, v))
      continue;
    gsize m = (gsize)run->batch * n->shape.c;
    dots = g_renew(double, dots, m);
    if (!sieve_runtime_read_channel_dots(run->rt, v, dots, error))
      return FALSE;
    double sq = 0;
    for (gsize k = 0; k < m; k++)
      sq += dots[k] * dots[k];
    total += 0.5 * sq / run->batch;
  }
  *score = total;
  return TRUE;
}
