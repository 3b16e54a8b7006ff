/* SynFlow (Tanaka et al., "Pruning neural networks without any data by
 * iteratively conserving synaptic flow", NeurIPS 2020), as the zero-cost
 * proxy of Abdelfattah et al., "Zero-Cost Proxies for Lightweight NAS"
 * (ICLR 2021), in double precision.
 *
 * The definition (and the choices the papers leave to their code, taken
 * from the authors' zero-cost-nas and matched against the PyTorch peer,
 * ../shared/peers/torch_nb201.py p_synflow):
 *   - every parameter replaced by its absolute value (the runtime's initial
 *     float values, widened to double);
 *   - batch norm bypassed (identity): the score is defined on the
 *     linearised network, and batch statistics of one all-ones example
 *     would be meaningless;
 *   - input: one example of all ones; R = sum of the logits (the input of a
 *     final softmax_ce when the graph ends in a loss);
 *   - score = sum over the weights of every convolution and linear layer of
 *     |w| * dR/d|w|.  Biases enter R (as |b|) but are not scored, as in the
 *     authors' code, which sums over Conv2d and Linear weights only.
 *
 * How: Euler's operator D = sum_w w d/dw (over the scored weights) is a
 * derivation, so the score D(R) is the directional derivative of R along
 * the weights themselves, which forward-mode differentiation carries
 * through the network beside the values: every tensor is a pair (f, g = Df)
 * and, for a layer with weights W and bias b,
 *     f' = W f + b,   g' = D(W f) = W f + W g = W (f + g),
 * while every other operation maps g through its Jacobian at f (ReLU keeps
 * g where f > 0, PyTorch's derivative 0 at 0; max pooling takes g where f
 * has its first maximum, as PyTorch's CPU kernel does).  This is the same
 * sum of products of the same Jacobians that backpropagation forms, in the
 * other order: two convolutions per layer instead of backward's three
 * (forward, input gradient, weight gradient), no stored activations, and
 * no weight-gradient kernel.  Structurally zero tensors (`none` edges) are
 * never stored or computed with, as in the CPU runtime.
 *
 * The score grows like a product of layer sums (1e35 to 1e50 for nb201 at
 * C=16, N=5); a network deep enough to pass 1e308 scores +inf, as it does
 * in double-precision PyTorch.  A NaN (which no sum of non-negative terms
 * gives) would be an error, reported rather than returned. */
#include <math.h>
#include <string.h>

#include <omp.h>

#include "proxy/proxy-private.h"

typedef struct {
  guint root;   /* the node whose value this one is (identity, bypassed batch norm, a sum of one) */
  gboolean zero; /* structurally zero: f = g = 0, never stored */
  gboolean real; /* computed here (not an alias, not zero) */
  gboolean nonneg; /* f >= 0 everywhere, and g = 0 wherever f = 0 (see resolve) */
  guint uses;   /* readers not yet run; the value is freed when it drops to 0 */
  double *v;    /* 2 * size doubles: f, then g */
  double *weight, *bias; /* |parameters| of a conv2d or linear node */
} Val;

typedef struct {
  const SieveGraph *graph;
  guint n;
  Val *val;
  gboolean *live;  /* nodes that reach the output */
  guint threads;
  double *scratch[2]; /* f + g at a layer's input; a convolution's planes */
  gsize scratch_size[2];
  GHashTable *pool; /* size in doubles -> GPtrArray of free buffers */
} Exec;

static gsize
numel(SieveShape s)
{
  return (gsize)s.c * s.h * s.w;
}

/* Buffers come back to a pool rather than to malloc: a network reuses a
 * handful of sizes hundreds of times, and fresh pages cost a fault each. */
static double *
buffer_get(Exec *e, gsize n)
{
  GPtrArray *free = g_hash_table_lookup(e->pool, GSIZE_TO_POINTER(n));
  if (free != NULL && free->len > 0)
    return g_ptr_array_steal_index_fast(free, free->len - 1);
  return g_new(double, n);
}

static void
buffer_put(Exec *e, gsize n, double *buffer)
{
  GPtrArray *free = g_hash_table_lookup(e->pool, GSIZE_TO_POINTER(n));
  if (free == NULL) {
    free = g_ptr_array_new_with_free_func(g_free);
    g_hash_table_insert(e->pool, GSIZE_TO_POINTER(n), free);
  }
  g_ptr_array_add(free, buffer);
}

static const SieveGraphNode *
node(const Exec *e, guint v)
{
  return sieve_graph_node(e->graph, v);
}

static SieveShape
in_shape(const Exec *e, guint v, guint k)
{
  return node(e, node(e, v)->inputs[k])->shape;
}

/* Root of input k of node v. */
static Val *
input(const Exec *e, guint v, guint k)
{
  return &e->val[e->val[node(e, v)->inputs[k]].root];
}

/* ---- parameters ------------------------------------------------------------------ */

static guint64
expected_size(const Exec *e, guint v, const char *name)
{
  const SieveGraphNode *n = node(e, v);
  const SieveOpAttrs *a = &n->attrs;
  if (n->kind == SIEVE_OP_CONV2D && g_str_equal(name, "weight"))
    return (guint64)a->out_channels * (in_shape(e, v, 0).c / MAX(a->groups, 1)) * a->kernel[0] * a->kernel[1];
  if (n->kind == SIEVE_OP_LINEAR && g_str_equal(name, "weight"))
    return (guint64)a->out_channels * numel(in_shape(e, v, 0));
  if ((n->kind == SIEVE_OP_CONV2D || n->kind == SIEVE_OP_LINEAR) && g_str_equal(name, "bias") && a->bias)
    return a->out_channels;
  if (n->kind == SIEVE_OP_BATCH_NORM && (g_str_equal(name, "gamma") || g_str_equal(name, "beta")))
    return n->shape.c;
  return 0;
}

/* |theta| of every conv2d and linear node, from the runtime's float values. */
static gboolean
load_params(Exec *e, SieveRuntime *rt, GError **error)
{
  for (guint i = 0; i < sieve_runtime_n_params(rt); i++) {
    const SieveParamInfo *info = sieve_runtime_param_info(rt, i);
    guint64 want = info->node < e->n ? expected_size(e, info->node, info->name) : 0;
    if (want == 0 || info->size != want) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
                  "synflow: the runtime's parameter %u (node %u, %s, %" G_GUINT64_FORMAT
                  " elements) does not belong to this graph",
                  i, info->node, info->name, info->size);
      return FALSE;
    }
    SieveOpKind kind = node(e, info->node)->kind;
    if (kind == SIEVE_OP_BATCH_NORM)
      continue; /* bypassed */
    g_autofree float *f = g_new(float, want);
    if (!sieve_runtime_get_param(rt, i, f, error))
      return FALSE;
    double *d = g_new(double, want);
    for (guint64 k = 0; k < want; k++)
      d[k] = fabs((double)f[k]);
    Val *x = &e->val[info->node];
    if (g_str_equal(info->name, "weight")) {
      g_free(x->weight);
      x->weight = d;
    } else {
      g_free(x->bias);
      x->bias = d;
    }
  }
  return TRUE;
}

/* ---- structure: aliases, structural zeros, readers ------------------------------- */

static gboolean
zero_at_zero(SieveActivation act)
{
  return act != SIEVE_ACT_SIGMOID && act != SIEVE_ACT_HARD_SIGMOID; /* every other activation maps 0 to 0 */
}

/* What proves a ReLU to be the identity on (f, g).  Every parameter is
 * |theta| >= 0 and the input is ones, so a value built from them by
 * convolutions, linear layers, sums, averages, concatenation and maxima is
 * a polynomial with non-negative coefficients in non-negative variables (or
 * the maximum of such): f >= 0, and where f = 0 every term of it is 0, so
 * its tangent g (a sum of the same terms times their degrees) is 0 too.
 * ReLU keeps (f, g) where f > 0 and gives (0, 0) where f = 0: the
 * identity.  Such ReLUs are aliases; the score is bitwise the same. */
static gboolean
keeps_nonneg(SieveOpKind kind)
{
  switch (kind) {
  case SIEVE_OP_INPUT:
  case SIEVE_OP_CONV2D:
  case SIEVE_OP_LINEAR:
  case SIEVE_OP_POOL:
  case SIEVE_OP_GLOBAL_AVG_POOL:
  case SIEVE_OP_ADD:
  case SIEVE_OP_CONCAT:
  case SIEVE_OP_MUL: /* f = f0 f1, g = g0 f1 + f0 g1: 0 wherever f0 or f1 is */
  case SIEVE_OP_CROP:
    return TRUE;
  default:
    return FALSE;
  }
}

static void
find_live(Exec *e, guint output)
{
  e->live[output] = TRUE;
  for (guint v = output + 1; v-- > 0;) {
    if (!e->live[v])
      continue;
    const SieveGraphNode *n = node(e, v);
    for (guint k = 0; k < n->n_inputs; k++)
      e->live[n->inputs[k]] = TRUE;
  }
}

static gboolean
resolve(Exec *e, guint final, GError **error)
{
  find_live(e, sieve_graph_output(e->graph));
  for (guint v = 0; v < e->n; v++) {
    Val *x = &e->val[v];
    x->root = v;
    if (!e->live[v])
      continue;
    const SieveGraphNode *n = node(e, v);
    switch (n->kind) {
    case SIEVE_OP_INPUT:
      x->real = TRUE;
      break;
    case SIEVE_OP_IDENTITY:
    case SIEVE_OP_BATCH_NORM:
      x->root = input(e, v, 0) - e->val;
      break;
    case SIEVE_OP_ZERO:
      x->zero = TRUE;
      break;
    case SIEVE_OP_ADD: {
      guint nonzero = 0, last = 0;
      for (guint k = 0; k < n->n_inputs; k++)
        if (!input(e, v, k)->zero) {
          nonzero++;
          last = input(e, v, k) - e->val;
        }
      if (nonzero == 0)
        x->zero = TRUE;
      else if (nonzero == 1)
        x->root = last;
      else
        x->real = TRUE;
      break;
    }
    case SIEVE_OP_ACTIVATION: {
      Val *in = input(e, v, 0);
      if (in->zero && zero_at_zero(n->attrs.activation)) {
        x->zero = TRUE;
        break;
      }
      if (n->attrs.activation == SIEVE_ACT_RELU && in->nonneg) {
        x->root = in - e->val;
        break;
      }
      /* Edges that each apply the same activation to one tensor (nb201's
       * ReLU-conv-BN edges) share one result. */
      for (guint w = in - e->val + 1; w < v; w++) {
        const SieveGraphNode *m = node(e, w);
        if (e->val[w].real && m->kind == SIEVE_OP_ACTIVATION && input(e, w, 0) == in &&
            m->attrs.activation == n->attrs.activation && m->attrs.alpha == n->attrs.alpha) {
          x->root = w;
          break;
        }
      }
      x->real = x->root == v;
      break;
    }
    case SIEVE_OP_CONV2D:
    case SIEVE_OP_LINEAR:
      if (x->weight == NULL) {
        g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
                    "synflow: the runtime has no weight for node %u (%s): it was not compiled from this graph", v,
                    sieve_op_kind_name(n->kind));
        return FALSE;
      }
      if (input(e, v, 0)->zero && x->bias == NULL)
        x->zero = TRUE;
      else
        x->real = TRUE;
      break;
    case SIEVE_OP_POOL:
    case SIEVE_OP_GLOBAL_AVG_POOL:
    case SIEVE_OP_CROP:
      if (input(e, v, 0)->zero)
        x->zero = TRUE;
      else
        x->real = TRUE;
      break;
    case SIEVE_OP_CONCAT: {
      x->zero = TRUE;
      for (guint k = 0; k < n->n_inputs; k++)
        x->zero &= input(e, v, k)->zero;
      x->real = !x->zero;
      break;
    }
    case SIEVE_OP_MUL:
      x->zero = input(e, v, 0)->zero || input(e, v, 1)->zero;
      x->real = !x->zero;
      break;
    case SIEVE_OP_SOFTMAX_CE:
      if (v != sieve_graph_output(e->graph)) {
        g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
                    "synflow: node %u is a loss inside the network; only the output may be one", v);
        return FALSE;
      }
      x->root = input(e, v, 0) - e->val;
      break;
    default:
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "synflow: node %u: operation %s is not supported", v,
                  sieve_op_kind_name(n->kind));
      return FALSE;
    }
    if (e->val[x->root].zero)
      x->zero = TRUE;
    if (x->root != v) {
      x->nonneg = e->val[x->root].nonneg;
    } else if (x->zero) {
      x->nonneg = TRUE;
    } else if (n->kind == SIEVE_OP_ACTIVATION) {
      x->nonneg = n->attrs.activation == SIEVE_ACT_RELU;
    } else if (keeps_nonneg(n->kind)) {
      x->nonneg = TRUE;
      for (guint k = 0; k < n->n_inputs; k++)
        x->nonneg &= input(e, v, k)->nonneg;
    }
  }
  for (guint v = 0; v < e->n; v++) {
    if (!e->val[v].real)
      continue;
    for (guint k = 0; k < node(e, v)->n_inputs; k++)
      input(e, v, k)->uses++;
  }
  e->val[e->val[final].root].uses++; /* the result is read at the end */
  return TRUE;
}

/* ---- operations on (f, g) pairs ---------------------------------------------------- */

static double *
scratch(Exec *e, guint which, gsize size)
{
  if (e->scratch_size[which] < size) {
    g_free(e->scratch[which]);
    e->scratch[which] = g_new(double, size);
    e->scratch_size[which] = size;
  }
  return e->scratch[which];
}

/* f + g of a layer's input, or NULL when it is structurally zero. */
static const double *
layer_input(Exec *e, const Val *in, gsize size)
{
  if (in->zero)
    return NULL;
  double *h = scratch(e, 0, size);
  const double *f = in->v, *g = in->v + size;
#pragma omp simd
  for (gsize k = 0; k < size; k++)
    h[k] = f[k] + g[k];
  return h;
}

static void
run_conv(Exec *e, guint v, Val *x, gsize size)
{
  const SieveGraphNode *n = node(e, v);
  Val *in = input(e, v, 0);
  SieveShape is = in_shape(e, v, 0);
  gsize hw = (gsize)n->shape.h * n->shape.w;
  const double *h = layer_input(e, in, numel(is));
  if (h == NULL) {
    memset(x->v, 0, 2 * size * sizeof(double));
  } else {
    SieveConvF64 *conv = sieve__conv_f64_new(n, is, x->weight, SIEVE_CONV_ISA_AUTO);
    const double *src[2] = {in->v, h};
    double *dst[2] = {x->v, x->v + size};
    sieve__conv_f64_run(conv, src, dst, 2, e->threads, scratch(e, 1, sieve__conv_f64_scratch_size(conv, 2)));
    sieve__conv_f64_free(conv);
  }
  if (x->bias)
    for (guint c = 0; c < n->shape.c; c++) {
      double *row = x->v + c * hw, b = x->bias[c];
#pragma omp simd
      for (gsize k = 0; k < hw; k++)
        row[k] += b;
    }
}

static void
run_linear(Exec *e, guint v, Val *x)
{
  const SieveGraphNode *n = node(e, v);
  Val *in = input(e, v, 0);
  gsize K = numel(in_shape(e, v, 0));
  guint M = n->attrs.out_channels;
  const double *h = layer_input(e, in, K);
  const double *f = in->v, *W = x->weight;
  double *fo = x->v, *go = x->v + M;
  guint nt = (double)M * K > 1e5 ? e->threads : 1;
#pragma omp parallel for num_threads(nt) schedule(static)
  for (guint o = 0; o < M; o++) {
    double sf = x->bias ? x->bias[o] : 0, sg = 0;
    if (h != NULL)
      for (gsize k = 0; k < K; k++) {
        sf += W[o * K + k] * f[k];
        sg += W[o * K + k] * h[k];
      }
    fo[o] = sf;
    go[o] = sg;
  }
}

/* The activation's value and derivative at x. */
static void
activation(SieveActivation act, double alpha, double x, double *y, double *dy)
{
  switch (act) {
  case SIEVE_ACT_RELU:
    *y = x > 0 ? x : 0;
    *dy = x > 0;
    break;
  case SIEVE_ACT_LEAKY_RELU:
    *y = x > 0 ? x : alpha * x;
    *dy = x > 0 ? 1 : alpha;
    break;
  case SIEVE_ACT_ELU:
    *y = x > 0 ? x : alpha * (exp(x) - 1);
    *dy = x > 0 ? 1 : alpha * exp(x);
    break;
  case SIEVE_ACT_TANH:
    *y = tanh(x);
    *dy = 1 - *y * *y;
    break;
  case SIEVE_ACT_SIGMOID:
    *y = 1 / (1 + exp(-x));
    *dy = *y * (1 - *y);
    break;
  case SIEVE_ACT_GELU: {
    double cdf = 0.5 * (1 + erf(x / G_SQRT2));
    *y = x * cdf;
    *dy = cdf + x * exp(-0.5 * x * x) / sqrt(2 * G_PI);
    break;
  }
  case SIEVE_ACT_SWISH: {
    double s = 1 / (1 + exp(-x));
    *y = x * s;
    *dy = s + x * s * (1 - s);
    break;
  }
  case SIEVE_ACT_HARD_SIGMOID: /* relu6(x + 3) / 6, PyTorch's derivative (0 at the kinks) */
    *y = MIN(MAX(x + 3, 0), 6) / 6;
    *dy = x > -3 && x < 3 ? 1.0 / 6 : 0;
    break;
  case SIEVE_ACT_HARD_SWISH: /* x relu6(x + 3) / 6, PyTorch's derivative */
    *y = x * MIN(MAX(x + 3, 0), 6) / 6;
    *dy = x < -3 ? 0 : x <= 3 ? x / 3 + 0.5 : 1;
    break;
  default:
    g_assert_not_reached();
  }
}

static void
run_activation(Exec *e, guint v, Val *x, gsize size)
{
  const SieveGraphNode *n = node(e, v);
  Val *in = input(e, v, 0);
  SieveActivation act = n->attrs.activation;
  if (in->zero) { /* only activations with act(0) != 0 get here */
    double y, dy;
    activation(act, n->attrs.alpha, 0, &y, &dy);
    for (gsize k = 0; k < size; k++) {
      x->v[k] = y;
      x->v[size + k] = 0;
    }
    return;
  }
  const double *f = in->v, *g = in->v + size;
  if (act == SIEVE_ACT_RELU) {
    for (gsize k = 0; k < size; k++) {
      gboolean on = f[k] > 0;
      x->v[k] = on ? f[k] : 0;
      x->v[size + k] = on ? g[k] : 0;
    }
    return;
  }
  for (gsize k = 0; k < size; k++) {
    double y, dy;
    activation(act, n->attrs.alpha, f[k], &y, &dy);
    x->v[k] = y;
    x->v[size + k] = dy * g[k];
  }
}

/* Average pooling never counts padding (graph.h); max pooling takes the
 * first maximum of each window in row-major order (PyTorch's choice).
 * Both run as two passes, along rows (each input row, each output column)
 * then along columns: the first maximum in row-major order is the first
 * row holding the window's maximum, at that row's first maximum. */
/* dst[o] += src[o + shift] wherever o + shift lies in [0, n_src). */
static void
add_shifted(double *restrict dst, gsize n_dst, const double *restrict src, gsize n_src, gssize shift)
{
  gssize lo = MAX(0, -shift), hi = MIN((gssize)n_dst, (gssize)n_src - shift);
#pragma omp simd
  for (gssize o = lo; o < hi; o++)
    dst[o] += src[o + shift];
}

/* Average pooling with stride 1 (nb201's 3x3 pooling): each pass adds the
 * kernel's shifted rows, loops the compiler vectorises, then one multiply
 * by 1 / (valid rows * valid columns). */
static void
run_avg_pool_stride1(Exec *e, const SieveOpAttrs *a, const Val *in, SieveShape is, SieveShape os, Val *x, gsize size)
{
  gsize isize = numel(is), rows = (gsize)is.h * os.w;
  double *h = scratch(e, 0, rows + os.h + os.w), *inv_h = h + rows, *inv_w = inv_h + os.h;
  for (guint oy = 0; oy < os.h; oy++) {
    gint64 y0 = (gint64)oy - a->pad[0];
    inv_h[oy] = 1.0 / (MIN(y0 + a->kernel[0], (gint64)is.h) - MAX(y0, 0));
  }
  for (guint ox = 0; ox < os.w; ox++) {
    gint64 x0 = (gint64)ox - a->pad[1];
    inv_w[ox] = 1.0 / (MIN(x0 + a->kernel[1], (gint64)is.w) - MAX(x0, 0));
  }
  for (guint s = 0; s < 2; s++)
    for (guint c = 0; c < os.c; c++) {
      const double *src = in->v + s * isize + (gsize)c * is.h * is.w;
      double *dst = x->v + s * size + (gsize)c * os.h * os.w;
      memset(h, 0, rows * sizeof(double));
      for (guint iy = 0; iy < is.h; iy++)
        for (guint kx = 0; kx < a->kernel[1]; kx++)
          add_shifted(h + (gsize)iy * os.w, os.w, src + (gsize)iy * is.w, is.w, (gssize)kx - a->pad[1]);
      memset(dst, 0, (gsize)os.h * os.w * sizeof(double));
      for (guint ky = 0; ky < a->kernel[0]; ky++)
        add_shifted(dst, (gsize)os.h * os.w, h, rows, ((gssize)ky - a->pad[0]) * os.w);
      for (guint oy = 0; oy < os.h; oy++) {
        double *row = dst + (gsize)oy * os.w, ih = inv_h[oy];
#pragma omp simd
        for (guint ox = 0; ox < os.w; ox++)
          row[ox] *= ih * inv_w[ox];
      }
    }
}

static void
run_pool(Exec *e, guint v, Val *x, gsize size)
{
  const SieveGraphNode *n = node(e, v);
  const SieveOpAttrs *a = &n->attrs;
  Val *in = input(e, v, 0);
  SieveShape is = in_shape(e, v, 0), os = n->shape;
  gsize isize = numel(is), plane = (gsize)is.h * is.w, rows = (gsize)is.h * os.w;
  gboolean max = a->pool == SIEVE_POOL_MAX;
  if (!max && a->stride[0] == 1 && a->stride[1] == 1) {
    run_avg_pool_stride1(e, a, in, is, os, x, size);
    return;
  }
  double *hf = scratch(e, 0, 2 * rows), *hg = hf + rows;
  for (guint c = 0; c < os.c; c++) {
    const double *f = in->v + c * plane, *g = in->v + isize + c * plane;
    for (guint iy = 0; iy < is.h; iy++)
      for (guint ox = 0; ox < os.w; ox++) {
        gint64 x0 = (gint64)ox * a->stride[1] - a->pad[1];
        gint64 xa = MAX(x0, 0), xb = MIN(x0 + a->kernel[1], (gint64)is.w);
        const double *fr = f + (gsize)iy * is.w, *gr = g + (gsize)iy * is.w;
        double sf = fr[xa], sg = gr[xa];
        for (gint64 ix = xa + 1; ix < xb; ix++) {
          if (!max) {
            sf += fr[ix];
            sg += gr[ix];
          } else if (fr[ix] > sf) {
            sf = fr[ix];
            sg = gr[ix];
          }
        }
        hf[(gsize)iy * os.w + ox] = sf;
        hg[(gsize)iy * os.w + ox] = sg;
      }
    for (guint oy = 0; oy < os.h; oy++) {
      gint64 y0 = (gint64)oy * a->stride[0] - a->pad[0];
      gint64 ya = MAX(y0, 0), yb = MIN(y0 + a->kernel[0], (gint64)is.h);
      for (guint ox = 0; ox < os.w; ox++) {
        double sf = hf[ya * os.w + ox], sg = hg[ya * os.w + ox];
        for (gint64 iy = ya + 1; iy < yb; iy++) {
          double vf = hf[iy * os.w + ox];
          if (!max) {
            sf += vf;
            sg += hg[iy * os.w + ox];
          } else if (vf > sf) {
            sf = vf;
            sg = hg[iy * os.w + ox];
          }
        }
        gsize o = ((gsize)c * os.h + oy) * os.w + ox;
        if (!max) {
          gint64 x0 = (gint64)ox * a->stride[1] - a->pad[1];
          double count = (double)(yb - ya) * (MIN(x0 + a->kernel[1], (gint64)is.w) - MAX(x0, 0));
          sf /= count;
          sg /= count;
        }
        x->v[o] = sf;
        x->v[size + o] = sg;
      }
    }
  }
}

static void
run_node(Exec *e, guint v)
{
  const SieveGraphNode *n = node(e, v);
  Val *x = &e->val[v];
  gsize size = numel(n->shape);
  x->v = buffer_get(e, 2 * size);
  switch (n->kind) {
  case SIEVE_OP_INPUT:
    for (gsize k = 0; k < size; k++) {
      x->v[k] = 1;
      x->v[size + k] = 0;
    }
    break;
  case SIEVE_OP_CONV2D:
    run_conv(e, v, x, size);
    break;
  case SIEVE_OP_LINEAR:
    run_linear(e, v, x);
    break;
  case SIEVE_OP_ACTIVATION:
    run_activation(e, v, x, size);
    break;
  case SIEVE_OP_POOL:
    run_pool(e, v, x, size);
    break;
  case SIEVE_OP_GLOBAL_AVG_POOL: {
    Val *in = input(e, v, 0);
    SieveShape is = in_shape(e, v, 0);
    gsize hw = (gsize)is.h * is.w, isize = numel(is);
    for (guint c = 0; c < is.c; c++) {
      double sf = 0, sg = 0;
      const double *f = in->v + c * hw, *g = in->v + isize + c * hw;
#pragma omp simd reduction(+ : sf, sg)
      for (gsize k = 0; k < hw; k++) {
        sf += f[k];
        sg += g[k];
      }
      x->v[c] = sf / hw;
      x->v[size + c] = sg / hw;
    }
    break;
  }
  case SIEVE_OP_ADD: {
    gboolean first = TRUE;
    for (guint k = 0; k < n->n_inputs; k++) {
      Val *in = input(e, v, k);
      if (in->zero)
        continue;
      double *dst = x->v;
      const double *src = in->v;
      if (first) {
        memcpy(dst, src, 2 * size * sizeof(double));
        first = FALSE;
        continue;
      }
#pragma omp simd
      for (gsize i = 0; i < 2 * size; i++)
        dst[i] += src[i];
    }
    break;
  }
  case SIEVE_OP_MUL: {
    /* (f0, g0) * (f1, g1) = (f0 f1, g0 f1 + f0 g1), a Cx1x1 gate broadcast
     * over each channel's plane. */
    Val *a = input(e, v, 0), *b = input(e, v, 1);
    SieveShape gs = in_shape(e, v, 1);
    gsize hw = (gsize)n->shape.h * n->shape.w, gsize_ = numel(gs);
    gboolean bcast = gs.h == 1 && gs.w == 1 && hw > 1;
    for (gsize k = 0; k < size; k++) {
      gsize j = bcast ? k / hw : k;
      double f0 = a->v[k], g0 = a->v[size + k], f1 = b->v[j], g1 = b->v[gsize_ + j];
      x->v[k] = f0 * f1;
      x->v[size + k] = g0 * f1 + f0 * g1;
    }
    break;
  }
  case SIEVE_OP_CONCAT: {
    gsize off = 0;
    for (guint k = 0; k < n->n_inputs; k++) {
      Val *in = input(e, v, k);
      gsize part = numel(in_shape(e, v, k));
      for (guint s = 0; s < 2; s++) {
        if (in->zero)
          memset(x->v + s * size + off, 0, part * sizeof(double));
        else
          memcpy(x->v + s * size + off, in->v + s * part, part * sizeof(double));
      }
      off += part;
    }
    break;
  }
  case SIEVE_OP_CROP: {
    /* f and g alike: the window (pad[] offset, kernel[] extent) of each channel. */
    Val *in = input(e, v, 0);
    SieveShape is = in_shape(e, v, 0), os = n->shape;
    gsize isize = numel(is);
    for (guint s = 0; s < 2; s++)
      for (guint c = 0; c < os.c; c++)
        for (guint i = 0; i < os.h; i++)
          memcpy(x->v + s * size + ((gsize)c * os.h + i) * os.w,
                 in->v + s * isize + ((gsize)c * is.h + n->attrs.pad[0] + i) * is.w + n->attrs.pad[1],
                 os.w * sizeof(double));
    break;
  }
  default:
    g_assert_not_reached(); /* resolve() made every other kind an alias or a zero */
  }
  for (guint k = 0; k < n->n_inputs; k++) {
    Val *in = input(e, v, k);
    if (!in->zero && --in->uses == 0) {
      buffer_put(e, 2 * numel(node(e, in - e->val)->shape), in->v);
      in->v = NULL;
    }
  }
}

gboolean
sieve_proxy_synflow(const SieveGraph *graph, SieveRuntime *runtime, guint threads, double *score, GError **error)
{
  g_return_val_if_fail(graph != NULL && runtime != NULL && score != NULL, FALSE);
  guint output = sieve_graph_output(graph);
  if (output == SIEVE_NODE_INVALID) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "synflow: graph %s is not finished",
                sieve_graph_name(graph));
    return FALSE;
  }
  Exec e = {.graph = graph, .n = sieve_graph_n_nodes(graph)};
  e.val = g_new0(Val, e.n);
  e.live = g_new0(gboolean, e.n);
  e.pool = g_hash_table_new_full(NULL, NULL, NULL, (GDestroyNotify)g_ptr_array_unref);
  e.threads = threads ? threads : g_get_num_processors();
  gboolean ok = load_params(&e, runtime, error) && resolve(&e, output, error);
  if (ok) {
    for (guint v = 0; v < e.n; v++)
      if (e.val[v].real)
        run_node(&e, v);
    const SieveGraphNode *out = sieve_graph_node(graph, output);
    Val *r = &e.val[e.val[output].root];
    double s = 0;
    if (!r->zero) {
      gsize size = out->kind == SIEVE_OP_SOFTMAX_CE ? numel(sieve_graph_node(graph, out->inputs[0])->shape)
                                                     : numel(out->shape);
      for (gsize k = 0; k < size; k++)
        s += r->v[size + k];
    }
    if (isnan(s)) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
                  "synflow: the score of %s is not a number (the network overflows double precision)",
                  sieve_graph_name(graph));
      ok = FALSE;
    }
    *score = s;
  }
  for (guint v = 0; v < e.n; v++) {
    g_free(e.val[v].v);
    g_free(e.val[v].weight);
    g_free(e.val[v].bias);
  }
  g_free(e.val);
  g_free(e.live);
  g_free(e.scratch[0]);
  g_free(e.scratch[1]);
  g_hash_table_unref(e.pool);
  return ok;
}
