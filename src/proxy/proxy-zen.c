/* zen (Lin et al., "Zen-NAS: A Zero-Shot NAS for High-Performance Image
 * Recognition", ICCV 2021, section 3 and algorithm 1): with every conv and
 * linear weight drawn from N(0, 1) and batch norm in train mode, two
 * Gaussian inputs z1 and z1 + alpha z2 (alpha = 0.01), the feature maps f
 * before the global average pool:
 *   zen = log(mean |f(z1) - f(z1 + alpha z2)| + 1e-9)
 *       + sum over batch norms of log sqrt(mean over channels of running var),
 * the running variances as the two training forwards leave them, starting
 * from a fresh network's (mean 0, variance 1; PyTorch's update rule, the
 * graph's momentum), as the authors' code and the PyTorch peer read them.
 * Zen uses the batch's size, not its values.
 *
 * A network whose features do not depend on the input scores
 * log(1e-9) + the batch norm term: finite and below any network whose
 * features move. */
#include <math.h>
#include <sieve/rng.h>

#include "proxy/proxy-private.h"

#define ZEN_ALPHA 0.01
#define ZEN_FLOOR 1e-9
/* Mixed into the seed so that zen's weights and inputs are a stream of
 * their own, apart from the batch and the initial weights. */
#define ZEN_STREAM 0x7a656eULL

guint
sieve__proxy_zen_features(const SieveGraph *graph)
{
  guint out = sieve_graph_output(graph);
  for (guint v = out + 1; v-- > 0;) {
    const SieveGraphNode *n = sieve_graph_node(graph, v);
    if (n->kind == SIEVE_OP_GLOBAL_AVG_POOL && sieve_graph_node_live(graph, v))
      return n->inputs[0];
  }
  return out;
}

gboolean
sieve__proxy_zen(SieveProxyRun *run, guint features, double *score, GError **error)
{
  SieveRuntime *rt = run->rt;
  const SieveGraph *g = run->graph;
  SieveRng rng;
  sieve_rng_seed(&rng, run->seed ^ ZEN_STREAM);
  g_autofree float *buf = NULL;
  g_autofree double *draw = NULL;
  for (guint k = 0; k < run->weights->len; k++) {
    guint i = g_array_index(run->weights, guint, k);
    guint64 size = sieve_runtime_param_info(rt, i)->size;
    buf = g_renew(float, buf, size);
    draw = g_renew(double, draw, size);
    sieve_rng_normal_fill(&rng, draw, size, run->threads);
    for (guint64 j = 0; j < size; j++)
      buf[j] = (float)draw[j];
    if (!sieve_runtime_set_param(rt, i, buf, error))
      return FALSE;
  }
  for (guint v = 0; v < sieve_graph_n_nodes(g); v++) {
    const SieveGraphNode *n = sieve_graph_node(g, v);
    if (n->kind != SIEVE_OP_BATCH_NORM || !sieve_graph_node_live(g, v))
      continue;
    g_autofree float *mean = g_new0(float, n->shape.c);
    g_autofree float *var = g_new(float, n->shape.c);
    for (guint c = 0; c < n->shape.c; c++)
      var[c] = 1.0f;
    if (!sieve_runtime_set_running_stats(rt, v, mean, var, error))
      return FALSE;
  }
  gsize in = (gsize)run->batch * run->in_size;
  g_autofree float *z1 = g_new(float, in);
  g_autofree float *z2 = g_new(float, in);
  draw = g_renew(double, draw, in);
  sieve_rng_normal_fill(&rng, draw, in, run->threads);
  for (gsize k = 0; k < in; k++)
    z1[k] = (float)draw[k];
  sieve_rng_normal_fill(&rng, draw, in, run->threads);
  for (gsize k = 0; k < in; k++)
    z2[k] = (float)(z1[k] + ZEN_ALPHA * draw[k]);
  SieveShape fs = sieve_graph_node(g, features)->shape;
  gsize fn = (gsize)run->batch * fs.c * fs.h * fs.w;
  g_autofree float *f1 = g_new(float, fn);
  g_autofree float *f2 = g_new(float, fn);
  if (!sieve_runtime_forward(rt, z1, NULL, SIEVE_MODE_TRAIN, error) || !sieve_runtime_read(rt, features, f1, error) ||
      !sieve_runtime_forward(rt, z2, NULL, SIEVE_MODE_TRAIN, error) || !sieve_runtime_read(rt, features, f2, error))
    return FALSE;
  double d = 0;
  for (gsize k = 0; k < fn; k++)
    d += fabs((double)f1[k] - f2[k]);
  d /= fn;
  double bn = 0;
  for (guint v = 0; v < sieve_graph_n_nodes(g); v++) {
    const SieveGraphNode *n = sieve_graph_node(g, v);
    if (n->kind != SIEVE_OP_BATCH_NORM || !sieve_graph_node_live(g, v))
      continue;
    g_autofree float *var = g_new(float, n->shape.c);
    if (!sieve_runtime_get_running_stats(rt, v, NULL, var, error))
      return FALSE;
    double m = 0;
    for (guint c = 0; c < n->shape.c; c++)
      m += var[c];
    bn += 0.5 * log(m / n->shape.c);
  }
  *score = log(d + ZEN_FLOOR) + bn;
  return TRUE;
}
