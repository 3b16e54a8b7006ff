/* The reference interpreter: one plain loop nest per operation, double
 * precision throughout. */
#include <math.h>
#include <string.h>

#include "reference.h"

typedef struct {
  double *weight, *bias;    /* conv2d, linear (bias NULL when none) */
  double *gamma, *beta;     /* affine batch norm */
  double *mean, *var;       /* batch statistics of the last train forward */
  double *rmean, *rvar;     /* running statistics */
} RefParams;

struct _RefNet {
  const SieveGraph *graph;
  guint batch;
  guint n_nodes;
  double **out;        /* per node, NULL when dead */
  RefParams *p;        /* per node */
  GPtrArray *params;   /* double*, per runtime parameter, owned */
  GArray *sizes;       /* guint64 */
  double loss;
  double margin;
  gboolean **mask;     /* per ReLU node while frozen: which inputs were > 0 */
};

static gsize
numel(SieveShape s)
{
  return (gsize)s.c * s.h * s.w;
}

RefNet *
ref_net_new(const SieveGraph *graph, guint batch)
{
  RefNet *r = g_new0(RefNet, 1);
  r->graph = graph;
  r->batch = batch;
  r->n_nodes = sieve_graph_n_nodes(graph);
  r->out = g_new0(double *, r->n_nodes);
  r->p = g_new0(RefParams, r->n_nodes);
  r->params = g_ptr_array_new_with_free_func(g_free);
  r->sizes = g_array_new(FALSE, TRUE, sizeof(guint64));
  r->loss = NAN;
  for (guint v = 0; v < r->n_nodes; v++) {
    if (!sieve_graph_node_live(graph, v))
      continue;
    const SieveGraphNode *n = sieve_graph_node(graph, v);
    gsize size = n->kind == SIEVE_OP_SOFTMAX_CE ? batch : batch * numel(n->shape);
    r->out[v] = g_new0(double, size);
    if (n->kind == SIEVE_OP_BATCH_NORM) {
      RefParams *p = &r->p[v];
      p->mean = g_new0(double, n->shape.c);
      p->var = g_new0(double, n->shape.c);
      p->rmean = g_new0(double, n->shape.c);
      p->rvar = g_new0(double, n->shape.c);
      for (guint k = 0; k < n->shape.c; k++)
        p->rvar[k] = 1;
    }
  }
  return r;
}

void
ref_net_free(RefNet *r)
{
  if (!r)
    return;
  for (guint v = 0; v < r->n_nodes; v++) {
    g_free(r->out[v]);
    g_free(r->p[v].mean);
    g_free(r->p[v].var);
    g_free(r->p[v].rmean);
    g_free(r->p[v].rvar);
  }
  if (r->mask)
    for (guint v = 0; v < r->n_nodes; v++)
      g_free(r->mask[v]);
  g_free(r->mask);
  g_free(r->out);
  g_free(r->p);
  g_ptr_array_unref(r->params);
  g_array_unref(r->sizes);
  g_free(r);
}

/* What graph.h says parameter `name` of node v holds, in elements. */
static guint64
expected_size(const SieveGraph *g, guint v, const char *name)
{
  const SieveGraphNode *n = sieve_graph_node(g, v);
  SieveShape in = n->n_inputs ? sieve_graph_node(g, n->inputs[0])->shape : (SieveShape){0};
  const SieveOpAttrs *a = &n->attrs;
  if (n->kind == SIEVE_OP_CONV2D && g_str_equal(name, "weight"))
    return (guint64)a->out_channels * (in.c / a->groups) * a->kernel[0] * a->kernel[1];
  if (n->kind == SIEVE_OP_LINEAR && g_str_equal(name, "weight"))
    return (guint64)a->out_channels * numel(in);
  if ((n->kind == SIEVE_OP_CONV2D || n->kind == SIEVE_OP_LINEAR) && g_str_equal(name, "bias") && a->bias)
    return a->out_channels;
  if (n->kind == SIEVE_OP_BATCH_NORM && a->affine && (g_str_equal(name, "gamma") || g_str_equal(name, "beta")))
    return n->shape.c;
  return 0;
}

gboolean
ref_net_load_params(RefNet *r, SieveRuntime *rt, GError **error)
{
  g_ptr_array_set_size(r->params, 0);
  g_array_set_size(r->sizes, 0);
  for (guint i = 0; i < sieve_runtime_n_params(rt); i++) {
    const SieveParamInfo *info = sieve_runtime_param_info(rt, i);
    guint64 want = info->node < r->n_nodes ? expected_size(r->graph, info->node, info->name) : 0;
    guint64 prod = info->ndims ? 1 : 0;
    for (guint d = 0; d < info->ndims && d < 4; d++)
      prod *= info->dims[d];
    if (want == 0 || info->size != want || prod != want || info->ndims > 4) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
                  "parameter %u (node %u, %s): %u dims, %" G_GUINT64_FORMAT " elements, graph.h says %" G_GUINT64_FORMAT,
                  i, info->node, info->name, info->ndims, info->size, want);
      return FALSE;
    }
    g_autofree float *f = g_new(float, want);
    if (!sieve_runtime_get_param(rt, i, f, error))
      return FALSE;
    double *d = g_new(double, want);
    for (guint64 k = 0; k < want; k++)
      d[k] = f[k];
    g_ptr_array_add(r->params, d);
    g_array_append_val(r->sizes, want);
    RefParams *p = &r->p[info->node];
    if (g_str_equal(info->name, "weight"))
      p->weight = d;
    else if (g_str_equal(info->name, "bias"))
      p->bias = d;
    else if (g_str_equal(info->name, "gamma"))
      p->gamma = d;
    else
      p->beta = d;
  }
  return TRUE;
}

double *
ref_net_param(RefNet *r, guint i)
{
  return i < r->params->len ? r->params->pdata[i] : NULL;
}

guint64
ref_net_param_size(RefNet *r, guint i)
{
  return i < r->sizes->len ? g_array_index(r->sizes, guint64, i) : 0;
}

/* ---- operations ---------------------------------------------------------------- */

static void
conv2d(RefNet *r, const SieveGraphNode *n, const RefParams *p, const double *x, SieveShape is, double *y)
{
  const SieveOpAttrs *a = &n->attrs;
  SieveShape os = n->shape;
  guint cin = is.c / a->groups, cout = os.c / a->groups;
  for (guint b = 0; b < r->batch; b++)
    for (guint o = 0; o < os.c; o++) {
      guint g = o / cout;
      for (guint oy = 0; oy < os.h; oy++)
        for (guint ox = 0; ox < os.w; ox++) {
          double s = p->bias ? p->bias[o] : 0;
          for (guint ci = 0; ci < cin; ci++)
            for (guint ky = 0; ky < a->kernel[0]; ky++) {
              gint64 iy = (gint64)oy * a->stride[0] - a->pad[0] + (gint64)ky * a->dilation[0];
              if (iy < 0 || iy >= is.h)
                continue;
              for (guint kx = 0; kx < a->kernel[1]; kx++) {
                gint64 ix = (gint64)ox * a->stride[1] - a->pad[1] + (gint64)kx * a->dilation[1];
                if (ix < 0 || ix >= is.w)
                  continue;
                double w = p->weight[((gsize)(o * cin + ci) * a->kernel[0] + ky) * a->kernel[1] + kx];
                s += w * x[(((gsize)b * is.c + g * cin + ci) * is.h + iy) * is.w + ix];
              }
            }
          y[(((gsize)b * os.c + o) * os.h + oy) * os.w + ox] = s;
        }
    }
}

static void
batch_norm(RefNet *r, const SieveGraphNode *n, RefParams *p, const double *x, double *y, SieveMode mode)
{
  SieveShape s = n->shape;
  gsize hw = (gsize)s.h * s.w, count = r->batch * hw;
  for (guint c = 0; c < s.c; c++) {
    double mean, var;
    if (mode == SIEVE_MODE_TRAIN) {
      double sum = 0, sq = 0;
      for (guint b = 0; b < r->batch; b++)
        for (gsize k = 0; k < hw; k++)
          sum += x[((gsize)b * s.c + c) * hw + k];
      mean = sum / count;
      for (guint b = 0; b < r->batch; b++)
        for (gsize k = 0; k < hw; k++) {
          double d = x[((gsize)b * s.c + c) * hw + k] - mean;
          sq += d * d;
        }
      var = sq / count; /* biased, for normalisation */
      p->mean[c] = mean;
      p->var[c] = var;
    } else {
      mean = p->rmean[c];
      var = p->rvar[c];
    }
    double gamma = p->gamma ? p->gamma[c] : 1, beta = p->beta ? p->beta[c] : 0;
    double inv = 1 / sqrt(var + n->attrs.eps);
    for (guint b = 0; b < r->batch; b++)
      for (gsize k = 0; k < hw; k++) {
        gsize i = ((gsize)b * s.c + c) * hw + k;
        y[i] = gamma * (x[i] - mean) * inv + beta;
      }
  }
}

static double
activation(RefNet *r, SieveActivation act, double alpha, double x)
{
  switch (act) {
  case SIEVE_ACT_RELU:
    r->margin = MIN(r->margin, fabs(x));
    return x > 0 ? x : 0;
  case SIEVE_ACT_LEAKY_RELU:
    r->margin = MIN(r->margin, fabs(x));
    return x > 0 ? x : alpha * x;
  case SIEVE_ACT_ELU:
    r->margin = MIN(r->margin, fabs(x));
    return x > 0 ? x : alpha * (exp(x) - 1);
  case SIEVE_ACT_TANH:
    return tanh(x);
  case SIEVE_ACT_SIGMOID:
    return 1 / (1 + exp(-x));
  case SIEVE_ACT_GELU:
    return 0.5 * x * (1 + erf(x / sqrt(2.0)));
  case SIEVE_ACT_SWISH:
    return x / (1 + exp(-x));
  case SIEVE_ACT_HARD_SIGMOID: /* relu6(x + 3) / 6, kinks at -3 and 3 */
    r->margin = MIN(r->margin, MIN(fabs(x + 3), fabs(x - 3)));
    return MIN(MAX(x + 3, 0), 6) / 6;
  case SIEVE_ACT_HARD_SWISH: /* x relu6(x + 3) / 6 */
    r->margin = MIN(r->margin, MIN(fabs(x + 3), fabs(x - 3)));
    return x * MIN(MAX(x + 3, 0), 6) / 6;
  default:
    g_error("reference: unknown activation %d", act);
  }
}

static void
pool(RefNet *r, const SieveGraphNode *n, const double *x, SieveShape is, double *y)
{
  const SieveOpAttrs *a = &n->attrs;
  SieveShape os = n->shape;
  for (guint b = 0; b < r->batch; b++)
    for (guint c = 0; c < os.c; c++)
      for (guint oy = 0; oy < os.h; oy++)
        for (guint ox = 0; ox < os.w; ox++) {
          double sum = 0, best = -G_MAXDOUBLE, second = -G_MAXDOUBLE;
          guint count = 0;
          for (guint ky = 0; ky < a->kernel[0]; ky++) {
            gint64 iy = (gint64)oy * a->stride[0] - a->pad[0] + ky;
            if (iy < 0 || iy >= is.h)
              continue;
            for (guint kx = 0; kx < a->kernel[1]; kx++) {
              gint64 ix = (gint64)ox * a->stride[1] - a->pad[1] + kx;
              if (ix < 0 || ix >= is.w)
                continue;
              double v = x[(((gsize)b * is.c + c) * is.h + iy) * is.w + ix];
              sum += v;
              count++; /* padding never counts */
              if (v > best) {
                second = best;
                best = v;
              } else if (v > second) {
                second = v;
              }
            }
          }
          gsize i = (((gsize)b * os.c + c) * os.h + oy) * os.w + ox;
          if (a->pool == SIEVE_POOL_MAX) {
            y[i] = best;
            if (count > 1)
              r->margin = MIN(r->margin, best - second);
          } else {
            y[i] = sum / count;
          }
        }
}

static void
linear(RefNet *r, const SieveGraphNode *n, const RefParams *p, const double *x, SieveShape is, double *y)
{
  gsize in = numel(is);
  guint out = n->attrs.out_channels;
  for (guint b = 0; b < r->batch; b++)
    for (guint o = 0; o < out; o++) {
      double s = p->bias ? p->bias[o] : 0;
      for (gsize k = 0; k < in; k++)
        s += p->weight[o * in + k] * x[b * in + k];
      y[(gsize)b * out + o] = s;
    }
}

/* Mean over the batch of -sum_k t_k log softmax(z)_k, t = (1-eps) onehot + eps/K. */
static double
softmax_ce(RefNet *r, const double *z, guint K, const gint32 *labels, double eps)
{
  double total = 0;
  for (guint b = 0; b < r->batch; b++) {
    const double *row = z + (gsize)b * K;
    double m = row[0];
    for (guint k = 1; k < K; k++)
      m = MAX(m, row[k]);
    double s = 0;
    for (guint k = 0; k < K; k++)
      s += exp(row[k] - m);
    double lse = m + log(s);
    for (guint k = 0; k < K; k++) {
      double t = eps / K + ((gint32)k == labels[b] ? 1 - eps : 0);
      total -= t * (row[k] - lse);
    }
  }
  return total / r->batch;
}

void
ref_net_forward(RefNet *r, const double *x, const gint32 *labels, SieveMode mode)
{
  ref_net_forward_from(r, 0, x, labels, mode);
}

void
ref_net_forward_from(RefNet *r, guint from, const double *x, const gint32 *labels, SieveMode mode)
{
  const SieveGraph *g = r->graph;
  r->margin = G_MAXDOUBLE;
  r->loss = NAN;
  for (guint v = from; v < r->n_nodes; v++) {
    if (!r->out[v])
      continue;
    const SieveGraphNode *n = sieve_graph_node(g, v);
    double *y = r->out[v];
    gsize size = r->batch * numel(n->shape);
    const double *in0 = n->n_inputs ? r->out[n->inputs[0]] : NULL;
    SieveShape is = n->n_inputs ? sieve_graph_node(g, n->inputs[0])->shape : n->shape;
    switch (n->kind) {
    case SIEVE_OP_INPUT:
      memcpy(y, x, size * sizeof(double));
      break;
    case SIEVE_OP_CONV2D:
      conv2d(r, n, &r->p[v], in0, is, y);
      break;
    case SIEVE_OP_BATCH_NORM:
      batch_norm(r, n, &r->p[v], in0, y, mode);
      break;
    case SIEVE_OP_ACTIVATION:
      if (r->mask && r->mask[v]) {
        double a = n->attrs.activation == SIEVE_ACT_LEAKY_RELU ? n->attrs.alpha : 0;
        for (gsize k = 0; k < size; k++)
          y[k] = r->mask[v][k] ? in0[k] : a * in0[k];
        break;
      }
      for (gsize k = 0; k < size; k++)
        y[k] = activation(r, n->attrs.activation, n->attrs.alpha, in0[k]);
      break;
    case SIEVE_OP_POOL:
      pool(r, n, in0, is, y);
      break;
    case SIEVE_OP_ADD:
      memset(y, 0, size * sizeof(double));
      for (guint i = 0; i < n->n_inputs; i++)
        for (gsize k = 0; k < size; k++)
          y[k] += r->out[n->inputs[i]][k];
      break;
    case SIEVE_OP_CONCAT: {
      gsize hw = (gsize)n->shape.h * n->shape.w;
      guint off = 0;
      for (guint i = 0; i < n->n_inputs; i++) {
        guint ci = sieve_graph_node(g, n->inputs[i])->shape.c;
        const double *src = r->out[n->inputs[i]];
        for (guint b = 0; b < r->batch; b++)
          memcpy(y + ((gsize)b * n->shape.c + off) * hw, src + (gsize)b * ci * hw, ci * hw * sizeof(double));
        off += ci;
      }
      break;
    }
    case SIEVE_OP_MUL: {
      /* y[b,c,i,j] = x[b,c,i,j] * gate[b,c,i,j], or gate[b,c] when it is Cx1x1. */
      SieveShape gs = sieve_graph_node(g, n->inputs[1])->shape;
      const double *gate = r->out[n->inputs[1]];
      gsize hw = (gsize)is.h * is.w;
      for (gsize bc = 0; bc < (gsize)r->batch * is.c; bc++)
        for (gsize k = 0; k < hw; k++)
          y[bc * hw + k] = in0[bc * hw + k] * (gs.h == 1 && gs.w == 1 ? gate[bc] : gate[bc * hw + k]);
      break;
    }
    case SIEVE_OP_GLOBAL_AVG_POOL: {
      gsize hw = (gsize)is.h * is.w;
      for (gsize bc = 0; bc < (gsize)r->batch * is.c; bc++) {
        double s = 0;
        for (gsize k = 0; k < hw; k++)
          s += in0[bc * hw + k];
        y[bc] = s / hw;
      }
      break;
    }
    case SIEVE_OP_LINEAR:
      linear(r, n, &r->p[v], in0, is, y);
      break;
    case SIEVE_OP_IDENTITY:
      memcpy(y, in0, size * sizeof(double));
      break;
    case SIEVE_OP_ZERO:
      memset(y, 0, size * sizeof(double));
      break;
    case SIEVE_OP_CROP: /* y[b, c, i, j] = x[b, c, top + i, left + j] */
      for (guint b = 0; b < r->batch; b++)
        for (guint ch = 0; ch < n->shape.c; ch++)
          for (guint i = 0; i < n->shape.h; i++)
            for (guint j = 0; j < n->shape.w; j++)
              y[(((gsize)b * n->shape.c + ch) * n->shape.h + i) * n->shape.w + j] =
                in0[(((gsize)b * is.c + ch) * is.h + n->attrs.pad[0] + i) * is.w + n->attrs.pad[1] + j];
      break;
    case SIEVE_OP_SOFTMAX_CE: {
      double loss = labels ? softmax_ce(r, in0, is.c, labels, n->attrs.label_smoothing) : NAN;
      for (guint b = 0; b < r->batch; b++)
        y[b] = loss;
      if (v == sieve_graph_output(g))
        r->loss = loss;
      break;
    }
    default:
      g_error("reference: unknown operation %d", n->kind);
    }
  }
}

const double *
ref_net_output(RefNet *r, guint node)
{
  return node < r->n_nodes ? r->out[node] : NULL;
}

void
ref_net_freeze(RefNet *r, gboolean freeze)
{
  if (r->mask)
    for (guint v = 0; v < r->n_nodes; v++)
      g_free(r->mask[v]);
  g_clear_pointer(&r->mask, g_free);
  if (!freeze)
    return;
  r->mask = g_new0(gboolean *, r->n_nodes);
  for (guint v = 0; v < r->n_nodes; v++) {
    const SieveGraphNode *n = sieve_graph_node(r->graph, v);
    if (!r->out[v] || n->kind != SIEVE_OP_ACTIVATION ||
        (n->attrs.activation != SIEVE_ACT_RELU && n->attrs.activation != SIEVE_ACT_LEAKY_RELU))
      continue;
    gsize size = r->batch * numel(n->shape);
    r->mask[v] = g_new(gboolean, size);
    for (gsize k = 0; k < size; k++)
      r->mask[v][k] = r->out[n->inputs[0]][k] > 0;
  }
}

double *
ref_net_output_writable(RefNet *r, guint node)
{
  return node < r->n_nodes ? r->out[node] : NULL;
}

double *
ref_net_running_mean(RefNet *r, guint node)
{
  return node < r->n_nodes ? r->p[node].rmean : NULL;
}

double *
ref_net_running_var(RefNet *r, guint node)
{
  return node < r->n_nodes ? r->p[node].rvar : NULL;
}

double
ref_net_loss(RefNet *r)
{
  return r->loss;
}

double
ref_net_objective(RefNet *r, const double *w)
{
  guint o = sieve_graph_output(r->graph);
  const SieveGraphNode *n = sieve_graph_node(r->graph, o);
  if (n->kind == SIEVE_OP_SOFTMAX_CE)
    return r->loss;
  gsize size = r->batch * numel(n->shape);
  double s = 0;
  for (gsize k = 0; k < size; k++)
    s += w[k] * r->out[o][k];
  return s;
}

double
ref_net_kink_margin(RefNet *r)
{
  return r->margin;
}

void
ref_net_update_running(RefNet *r)
{
  for (guint v = 0; v < r->n_nodes; v++) {
    RefParams *p = &r->p[v];
    if (!p->rmean || !r->out[v])
      continue;
    const SieveGraphNode *n = sieve_graph_node(r->graph, v);
    double m = n->attrs.momentum, count = (double)r->batch * n->shape.h * n->shape.w;
    for (guint c = 0; c < n->shape.c; c++) {
      p->rmean[c] = (1 - m) * p->rmean[c] + m * p->mean[c];
      p->rvar[c] = (1 - m) * p->rvar[c] + m * p->var[c] * count / (count - 1);
    }
  }
}
