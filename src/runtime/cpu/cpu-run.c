/* Running the CPU backend's plans: the steps of a forward or backward in
 * order, and the loss, which is computed here rather than by oneDNN. */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "runtime/cpu/cpu-private.h"

/* ---- running ---------------------------------------------------------------- */

static void
loss_forward(Cpu *c, CNode *x)
{
  guint B = c->options.batch, K = c->n_classes;
  const float *z = sieve__cpu_slot_ptr(c, x->src_slot);
  float *p = sieve__cpu_slot_ptr(c, x->prob);
  double eps = x->n->attrs.label_smoothing, total = 0;
  for (guint b = 0; b < B; b++) {
    const float *row = z + (gsize)b * K;
    double m = row[0];
    for (guint k = 1; k < K; k++)
      m = MAX(m, row[k]);
    double s = 0, mean = 0;
    for (guint k = 0; k < K; k++) {
      s += exp(row[k] - m);
      mean += row[k];
    }
    double lse = m + log(s);
    for (guint k = 0; k < K; k++)
      p[(gsize)b * K + k] = (float)exp(row[k] - lse);
    if (c->has_labels) {
      /* -sum_k t_k log p_k with t = (1-eps) onehot + eps/K. */
      total += lse - (1 - eps) * row[c->labels[b]] - eps * mean / K;
    }
  }
  c->loss = c->has_labels ? total / B : NAN;
  sieve__cpu_slot_ptr(c, x->out)[0] = (float)c->loss;
}

static void
loss_backward(Cpu *c, CNode *x, float *dz)
{
  guint B = c->options.batch, K = c->n_classes;
  const float *p = sieve__cpu_slot_ptr(c, x->prob);
  double eps = x->n->attrs.label_smoothing;
  for (guint b = 0; b < B; b++)
    for (guint k = 0; k < K; k++) {
      double t = eps / K + (k == (guint)c->labels[b] ? 1 - eps : 0);
      dz[(gsize)b * K + k] = (float)((p[(gsize)b * K + k] - t) / B);
    }
}

static void
bn_running(Cpu *c, CNode *x)
{
  double m = x->n->attrs.momentum;
  double n = (double)c->options.batch * x->n->shape.h * x->n->shape.w;
  double unbias = n > 1 ? n / (n - 1) : 1; /* PyTorch keeps the unbiased variance */
  float *rm = sieve__cpu_slot_ptr(c, x->rmean), *rv = sieve__cpu_slot_ptr(c, x->rvar);
  const float *bm = sieve__cpu_slot_ptr(c, x->mean), *bv = sieve__cpu_slot_ptr(c, x->var);
  for (guint k = 0; k < x->n->shape.c; k++) {
    rm[k] = (float)((1 - m) * rm[k] + m * bm[k]);
    rv[k] = (float)((1 - m) * rv[k] + m * bv[k] * unbias);
  }
}

/* A ReLU step on the frozen mask: forward y = m ? x : alpha x, backward
 * dx = m ? dy : alpha dy (the same form: src -> dst), in the tensor's own
 * layout, which input, output, gradients and mask share. */
static void
frozen_relu(Cpu *c, Step *s)
{
  CNode *x = &c->nodes[s->node];
  float alpha = x->n->attrs.activation == SIEVE_ACT_LEAKY_RELU ? (float)x->n->attrs.alpha : 0.0f;
  const float *m = x->mask, *a = sieve__cpu_slot_ptr(c, s->src);
  float *d = sieve__cpu_slot_ptr(c, s->dst);
  gssize n = (gssize)s->n;
#pragma omp parallel for simd if (n > 65536) schedule(static)
  for (gssize k = 0; k < n; k++)
    d[k] = m[k] > 0 ? a[k] : alpha * a[k];
}

/* hard_sigmoid(x) = relu6(x + 3) / 6 (graph.h) and its backward, whose
 * derivative 1/6 inside (-3, 3) and 0 outside is PyTorch's, kinks
 * included. */
static void
hard_sigmoid(Cpu *c, Step *s)
{
  const float *a = sieve__cpu_slot_ptr(c, s->src);
  float *d = sieve__cpu_slot_ptr(c, s->dst);
  gssize n = (gssize)s->n;
  if (s->kind == STEP_HSIG_FWD) {
#pragma omp parallel for simd if (n > 65536) schedule(static)
    for (gssize k = 0; k < n; k++)
      d[k] = fminf(fmaxf(a[k] + 3.0f, 0.0f), 6.0f) / 6.0f;
    return;
  }
  const float *in = sieve__cpu_slot_ptr(c, s->aux);
#pragma omp parallel for simd if (n > 65536) schedule(static)
  for (gssize k = 0; k < n; k++)
    d[k] = in[k] > -3.0f && in[k] < 3.0f ? a[k] / 6.0f : 0.0f;
}

static gboolean
run(Cpu *c, GArray *list, GError **error)
{
  omp_set_num_threads((int)c->threads);
  for (guint i = 0; i < list->len; i++) {
    Step *s = c->steps->pdata[g_array_index(list, guint, i)];
    if ((s->param_only && c->input_only) || (s->when == WHEN_FROZEN && !c->frozen) ||
        (s->when == WHEN_UNFROZEN && c->frozen))
      continue;
    switch (s->kind) {
    case STEP_PRIM:
      if (s->relu && c->frozen) {
        frozen_relu(c, s);
        break;
      }
      TRY(dnnl_primitive_execute(s->prim, c->stream, s->nargs, s->args), "running %s",
          sieve__cpu_node_desc(c, s->node));
      break;
    case STEP_ADD: {
      float *d = sieve__cpu_slot_ptr(c, s->dst);
      const float *a = sieve__cpu_slot_ptr(c, s->src);
      gssize n = (gssize)s->n;
#pragma omp parallel for simd if (n > 65536) schedule(static)
      for (gssize k = 0; k < n; k++)
        d[k] += a[k];
      break;
    }
    case STEP_COPY:
      memcpy(sieve__cpu_slot_ptr(c, s->dst), sieve__cpu_slot_ptr(c, s->src), s->n * sizeof(float));
      break;
    case STEP_ZERO:
      memset(sieve__cpu_slot_ptr(c, s->dst), 0, s->n * sizeof(float));
      break;
    case STEP_LOSS_FWD:
      loss_forward(c, &c->nodes[s->node]);
      break;
    case STEP_LOSS_BWD:
      loss_backward(c, &c->nodes[s->node], sieve__cpu_slot_ptr(c, s->dst));
      break;
    case STEP_BN_RUNNING:
      bn_running(c, &c->nodes[s->node]);
      break;
    case STEP_HSIG_FWD:
    case STEP_HSIG_BWD:
      hard_sigmoid(c, s);
      break;
    case STEP_DW_WGRAD:
      sieve__cpu_dw_wgrad(c, s);
      break;
    case STEP_GATE_GRAD:
      sieve__cpu_gate_grad(c, s);
      break;
    case STEP_CHANNELS:
      sieve__cpu_channels(c, s);
      break;
    case STEP_RELU_MASK:
      frozen_relu(c, s);
      break;
    case STEP_MAXPOOL_FWD:
    case STEP_MAXPOOL_BWD:
      sieve__cpu_max_pool(c, s);
      break;
    }
  }
  TRY(dnnl_stream_wait(c->stream), "waiting for the stream");
  return TRUE;
}

gboolean
sieve__cpu_forward(gpointer impl, const float *x, const gint32 *labels, SieveMode mode, GError **error)
{
  Cpu *c = impl;
  CNode *in = &c->nodes[c->input];
  if (in->out >= 0)
    memcpy(sieve__cpu_slot_ptr(c, in->out), x, sieve__cpu_md_bytes(&in->md));
  c->has_labels = FALSE;
  if (labels && c->n_classes) { /* in range: runtime.c checked them */
    /* A buffer of the runtime's own: the step must not allocate. */
    if (c->labels == NULL)
      c->labels = g_new(gint32, c->options.batch);
    memcpy(c->labels, labels, c->options.batch * sizeof(gint32));
    c->has_labels = TRUE;
  }
  c->loss = NAN;
  return run(c, mode == SIEVE_MODE_TRAIN ? c->fwd_train : c->fwd_eval, error);
}

gboolean
sieve__cpu_backward(gpointer impl, const float *output_grad, gboolean input_only, GError **error)
{
  Cpu *c = impl;
  c->input_only = input_only;
  CNode *o = &c->nodes[sieve__cpu_root(c, c->output)];
  if (o->n->kind != SIEVE_OP_SOFTMAX_CE && c->out_grad >= 0) { /* a loss's labels: runtime.c checked them */
    if (!output_grad) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "the graph's output is not a loss: give its gradient");
      return FALSE;
    }
    dnnl_memory_desc_t plain;
    if (o->md.ndims == 2)
      dnnl_memory_desc_init_by_tag(&plain, 2, o->md.dims, dnnl_f32, dnnl_nc);
    else
      sieve__cpu_md_plain(&plain, c->options.batch, o->n->shape);
    if (!sieve__cpu_transfer(c, &plain, (float *)output_grad, &o->md, sieve__cpu_slot_ptr(c, c->out_grad), FALSE,
                             error))
      return FALSE;
  }
  /* Parameters no gradient reaches keep a zero gradient. */
  for (guint i = 0; i < c->params->len; i++) {
    Param *p = &g_array_index(c->params, Param, i);
    if (c->nodes[p->info.node].diff == -1)
      memset(sieve__cpu_slot_ptr(c, p->grad), 0, sieve__cpu_md_bytes(&p->md));
  }
  return run(c, c->bwd, error);
}

double
sieve__cpu_loss(gpointer impl)
{
  return ((Cpu *)impl)->loss;
}
