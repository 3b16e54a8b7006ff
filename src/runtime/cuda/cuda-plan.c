/* The CUDA backend's compilation passes (see cuda-private.h): resolve,
 * what the backward needs, lifetimes, the arena, cuDNN descriptors. */
#include <string.h>

#include "runtime/cuda/cuda-private.h"

const char *
sieve__cuda_node_desc(const Cu *c, guint v)
{
  return sieve__node_desc(c->graph, v);
}

void
sieve__cuda_oom(const Cu *c, gsize free_bytes, GError **error)
{
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
              "out of GPU memory: %s at batch %u needs %.1f MiB, the GPU has %.1f MiB free",
              sieve_graph_name(c->graph) ? sieve_graph_name(c->graph) : "the network", c->options.batch,
              c->arena_bytes / 1048576.0, free_bytes / 1048576.0);
}

/* ---- pass 1: resolve ------------------------------------------------------ */

static void
make_alias(Cu *c, guint v, guint target)
{
  c->nodes[v].role = ROLE_ALIAS;
  c->nodes[v].root = c->nodes[target].root;
}

static void
resolve(Cu *c)
{
  GHashTable *acts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint v = 0; v < c->n_nodes; v++) {
    CNode *x = &c->nodes[v];
    x->n = sieve_graph_node(c->graph, v);
    x->root = v;
    x->out = x->grad = x->idx = x->rmean = x->rvar = x->smean = x->sinv = -1;
    x->elems = (gsize)c->options.batch * x->n->shape.c * x->n->shape.h * x->n->shape.w;
    if (!sieve_graph_node_live(c->graph, v)) {
      x->role = ROLE_DEAD;
      continue;
    }
    x->in = g_new0(guint, MAX(x->n->n_inputs, 1));
    gboolean zero_in = FALSE;
    for (guint i = 0; i < x->n->n_inputs; i++) {
      guint r = c->nodes[x->n->inputs[i]].root;
      if (x->n->kind == SIEVE_OP_ADD && (c->nodes[r].role == ROLE_ZERO || c->nodes[r].role == ROLE_ZERO_BUF))
        continue; /* x + 0 */
      zero_in |= c->nodes[r].role == ROLE_ZERO || c->nodes[r].role == ROLE_ZERO_BUF;
      x->in[x->n_in++] = r;
    }
    x->role = ROLE_REAL;
    switch (x->n->kind) {
    case SIEVE_OP_IDENTITY:
      make_alias(c, v, x->in[0]);
      continue;
    case SIEVE_OP_ZERO:
      x->role = ROLE_ZERO;
      continue;
    case SIEVE_OP_ADD:
      if (x->n_in == 0)
        x->role = ROLE_ZERO;
      else if (x->n_in == 1)
        make_alias(c, v, x->in[0]);
      continue;
    default:
      break;
    }
    if (x->n_in && zero_in && sieve__node_keeps_zero(x->n)) {
      x->role = ROLE_ZERO;
      continue;
    }
    if (x->n->kind == SIEVE_OP_ACTIVATION) {
      /* A NAS cell applies one activation to a node once per outgoing edge. */
      char *key = g_strdup_printf("%u/%d/%.17g", x->in[0], x->n->attrs.activation, x->n->attrs.alpha);
      gpointer first;
      if (g_hash_table_lookup_extended(acts, key, NULL, &first)) {
        g_free(key);
        make_alias(c, v, GPOINTER_TO_UINT(first));
        continue;
      }
      g_hash_table_insert(acts, key, GUINT_TO_POINTER(v));
    }
    /* A zero that this node reads becomes a tensor of zeros. */
    for (guint i = 0; i < x->n_in; i++)
      if (c->nodes[x->in[i]].role == ROLE_ZERO)
        c->nodes[x->in[i]].role = ROLE_ZERO_BUF;
  }
  g_hash_table_destroy(acts);
}

/* ---- pass 2: needs and lifetimes ----------------------------------------- */

static gint
buf_new(Cu *c, gsize bytes, guint first, guint last)
{
  Buf b = {.bytes = bytes, .first = first, .last = last};
  g_array_append_val(c->bufs, b);
  return (gint)c->bufs->len - 1;
}

static void
buf_extend(Cu *c, gint buf, guint t)
{
  Buf *b = &g_array_index(c->bufs, Buf, buf);
  b->last = MAX(b->last, t);
}

static gboolean
reads_input_backward(const CNode *x)
{
  switch (x->n->kind) {
  case SIEVE_OP_CONV2D:
  case SIEVE_OP_LINEAR:
  case SIEVE_OP_BATCH_NORM:
  case SIEVE_OP_MUL:
    return TRUE;
  case SIEVE_OP_ACTIVATION:
    return !sieve__cu_act_uses_output(x->n->attrs.activation);
  default:
    return FALSE;
  }
}

static void
param_add(Cu *c, guint v, const char *name, guint ndims, const guint64 *dims)
{
  Param p = {.info = {.node = v, .name = name, .ndims = ndims, .size = 1}, .offset = c->n_param_floats};
  for (guint d = 0; d < ndims; d++) {
    p.info.dims[d] = dims[d];
    p.info.size *= dims[d];
  }
  /* 64 floats apart: every tensor starts on a 256-byte boundary. */
  c->n_param_floats += (p.info.size + 63) / 64 * 64;
  if (c->nodes[v].n_params++ == 0)
    c->nodes[v].first_param = c->params->len;
  g_array_append_val(c->params, p);
}

static void
add_params(Cu *c, guint v)
{
  CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  SieveShape is = c->nodes[x->in[0]].n->shape;
  switch (x->n->kind) {
  case SIEVE_OP_CONV2D: {
    guint64 w[4] = {a->out_channels, is.c / a->groups, a->kernel[0], a->kernel[1]};
    param_add(c, v, "weight", 4, w);
    if (a->bias)
      param_add(c, v, "bias", 1, (guint64[]){a->out_channels});
    break;
  }
  case SIEVE_OP_BATCH_NORM:
    if (a->affine) {
      param_add(c, v, "gamma", 1, (guint64[]){x->n->shape.c});
      param_add(c, v, "beta", 1, (guint64[]){x->n->shape.c});
    }
    break;
  case SIEVE_OP_LINEAR: {
    guint64 w[2] = {a->out_channels, (guint64)is.c * is.h * is.w};
    param_add(c, v, "weight", 2, w);
    if (a->bias)
      param_add(c, v, "bias", 1, (guint64[]){a->out_channels});
    break;
  }
  default:
    break;
  }
  x->has_params = x->n_params > 0;
}

static void
lifetimes(Cu *c)
{
  guint N = c->n_nodes, INF = 2 * N + 1;
  gboolean bwd = c->options.backward;
#define TB(v) (2 * N - 1 - (v))
  /* What a backward step reads of the forward lives until that step in a
   * training runtime (the memory then goes to gradients), and to the end
   * where another backward may follow the same forward (the proxies run
   * two: compiled with input_grad or kept nodes). */
  c->repeatable = c->options.input_grad || c->options.keep_all || c->options.n_keep > 0;
#define SAVED(v) (c->repeatable ? INF : TB(v))
  for (guint k = 0; k < c->options.n_keep; k++)
    if (c->options.keep[k] < N)
      c->nodes[c->nodes[c->options.keep[k]].root].kept = TRUE;
  c->nodes[c->output].kept = TRUE;
  if (c->logits != G_MAXUINT)
    c->nodes[c->logits].kept = TRUE;
  for (guint v = 0; v < N; v++) {
    CNode *x = &c->nodes[v];
    if (x->role != ROLE_REAL && x->role != ROLE_ZERO_BUF)
      continue;
    if (c->options.keep_all)
      x->kept = TRUE;
    if (x->role == ROLE_ZERO_BUF) {
      x->out = buf_new(c, x->elems * sizeof(float), 0, INF);
      continue;
    }
    add_params(c, v);
    gboolean in_needed = v == c->input && c->options.input_grad;
    x->need = x->kept || x->has_params || in_needed;
    x->need_in = x->kept || in_needed;
    for (guint i = 0; i < x->n_in; i++) {
      x->need |= c->nodes[x->in[i]].need;
      x->need_in |= c->nodes[x->in[i]].need_in;
    }
    if (x->n->kind == SIEVE_OP_SOFTMAX_CE) { /* no gradient of its own: it starts the backward */
      x->need = c->nodes[x->in[0]].need;
      x->need_in = c->nodes[x->in[0]].need_in;
    }
    if (!bwd)
      x->need = x->need_in = FALSE;
    gsize bytes = x->n->kind == SIEVE_OP_SOFTMAX_CE ? sizeof(float) : x->elems * sizeof(float);
    gboolean dedicated = x->n->kind == SIEVE_OP_SOFTMAX_CE;
    x->out = buf_new(c, bytes, dedicated ? 0 : v, dedicated || x->kept ? INF : v);
    if (x->n->kind == SIEVE_OP_SOFTMAX_CE)
      c->loss = x->out;
    if (bwd && x->n->kind == SIEVE_OP_ACTIVATION && sieve__cu_act_uses_output(x->n->attrs.activation))
      buf_extend(c, x->out, SAVED(v));
    /* Freezing reads every ReLU's output of the last forward, after
     * whatever pass came since. */
    if (bwd && sieve__cuda_is_relu(x->n))
      buf_extend(c, x->out, INF);
    if (x->n->kind == SIEVE_OP_POOL && x->n->attrs.pool == SIEVE_POOL_MAX)
      x->idx = buf_new(c, x->elems * sizeof(gint32), v, bwd ? SAVED(v) : v);
    for (guint i = 0; i < x->n_in; i++) {
      CNode *u = &c->nodes[x->in[i]];
      buf_extend(c, u->out, v);
      if (bwd && reads_input_backward(x))
        buf_extend(c, u->out, SAVED(v));
    }
  }
  /* Gradients: from the backward step of the last reader to the node's own. */
  for (guint v = N; v-- > 0;) {
    CNode *x = &c->nodes[v];
    if (!x->need || x->role != ROLE_REAL || x->n->kind == SIEVE_OP_SOFTMAX_CE)
      continue;
    guint first = v == c->output ? TB(v) : INF;
    for (guint w = v + 1; w < N; w++) {
      CNode *y = &c->nodes[w];
      if (y->role != ROLE_REAL || !y->need)
        continue;
      for (guint i = 0; i < y->n_in; i++)
        if (y->in[i] == v)
          first = MIN(first, TB(w));
    }
    if (first == INF)
      continue; /* nothing reaches it */
    gboolean forever = x->kept || v == c->input;
    x->grad = buf_new(c, x->elems * sizeof(float), first, forever ? INF : TB(v));
  }
#undef TB
#undef SAVED
}

/* ---- pass 3: the arena ---------------------------------------------------- */

static gint
by_size(gconstpointer a, gconstpointer b, gpointer data)
{
  const Buf *bufs = data;
  gsize sa = bufs[*(const guint *)a].bytes, sb = bufs[*(const guint *)b].bytes;
  return sa < sb ? 1 : sa > sb ? -1 : (gint)(*(const guint *)a) - (gint)(*(const guint *)b);
}

static gint
by_offset(gconstpointer a, gconstpointer b, gpointer data)
{
  const Buf *bufs = data;
  gsize oa = bufs[*(const guint *)a].offset, ob = bufs[*(const guint *)b].offset;
  return oa < ob ? -1 : oa > ob ? 1 : 0;
}

/* Largest first, each at the lowest offset where it overlaps no placed
 * tensor that is live at the same time. */
static void
place(Cu *c)
{
  Buf *bufs = (Buf *)c->bufs->data;
  guint n = c->bufs->len;
  guint *order = g_new(guint, n), *live = g_new(guint, n);
  for (guint i = 0; i < n; i++)
    order[i] = i;
  g_qsort_with_data(order, n, sizeof(guint), by_size, bufs);
  gsize top = 0;
  for (guint k = 0; k < n; k++) {
    Buf *b = &bufs[order[k]];
    gsize size = (b->bytes + 255) / 256 * 256;
    guint m = 0;
    for (guint j = 0; j < k; j++) {
      Buf *o = &bufs[order[j]];
      if (!(o->last < b->first || b->last < o->first))
        live[m++] = order[j];
    }
    g_qsort_with_data(live, m, sizeof(guint), by_offset, bufs);
    gsize at = 0;
    for (guint j = 0; j < m; j++) {
      Buf *o = &bufs[live[j]];
      if (o->offset >= at + size)
        break;
      at = MAX(at, o->offset + (o->bytes + 255) / 256 * 256);
    }
    b->offset = at;
    top = MAX(top, at + size);
  }
  c->arena_bytes = top;
  g_free(order);
  g_free(live);
}

/* ---- cuDNN descriptors ---------------------------------------------------- */

static gboolean
tensor4(cudnnTensorDescriptor_t *d, guint n, SieveShape s, GError **error)
{
  DNN_TRY(cudnnCreateTensorDescriptor(d), "cudnnCreateTensorDescriptor");
  DNN_TRY(cudnnSetTensor4dDescriptor(*d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, (int)n, (int)s.c, (int)s.h, (int)s.w),
          "a %ux%ux%ux%u tensor", n, s.c, s.h, s.w);
  return TRUE;
}

static gboolean
conv_desc(Cu *c, const SieveOpAttrs *a, cudnnConvolutionDescriptor_t *d, GError **error)
{
  DNN_TRY(cudnnCreateConvolutionDescriptor(d), "cudnnCreateConvolutionDescriptor");
  DNN_TRY(cudnnSetConvolution2dDescriptor(*d, (int)a->pad[0], (int)a->pad[1], (int)a->stride[0], (int)a->stride[1],
                                          (int)a->dilation[0], (int)a->dilation[1], CUDNN_CROSS_CORRELATION,
                                          CUDNN_DATA_FLOAT),
          "a convolution descriptor");
  DNN_TRY(cudnnSetConvolutionGroupCount(*d, (int)a->groups), "%u groups", a->groups);
  DNN_TRY(cudnnSetConvolutionMathType(*d, c->strict_fp32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH),
          "the convolution's math type");
  return TRUE;
}

/* The workspace any one algorithm may take. */
#define WORKSPACE_CAP ((gsize)256 << 20)

/* Which algorithm each convolution runs, forward, backward data and
 * backward filter.  By default cuDNN times its candidates on this GPU
 * (cudnnFind*, PyTorch's cudnn.benchmark) once per shape and process: a
 * search space builds the same few shapes thousands of times, so the cache
 * makes it nearly free; SIEVE_CUDA_CONV_ALGOS=heuristic takes cuDNN's
 * ranking without running anything instead.  The backward algorithms are
 * deterministic (no atomics: the same gradients every run) unless
 * SIEVE_CUDA_DETERMINISTIC=0; strict fp32 keeps to FMA math.  The first
 * candidate that qualifies and fits the workspace cap wins. */
typedef struct {
  int algo;
  cudnnMathType_t math;
  gsize memory;
} Choice;

static GMutex choice_lock;
static GHashTable *choices; /* shape key -> Choice[3] */

#define PICK(perfs, count, out, need_det)                                                                          \
  G_STMT_START {                                                                                                   \
    gboolean found_ = FALSE;                                                                                       \
    for (int i_ = 0; i_ < (count) && !found_; i_++) {                                                              \
      if ((perfs)[i_].status != CUDNN_STATUS_SUCCESS || (perfs)[i_].memory > WORKSPACE_CAP)                        \
        continue;                                                                                                  \
      if (c->strict_fp32 && (perfs)[i_].mathType != CUDNN_FMA_MATH)                                                \
        continue;                                                                                                  \
      if ((need_det) && (perfs)[i_].determinism != CUDNN_DETERMINISTIC)                                            \
        continue;                                                                                                  \
      (out) = (Choice){(int)(perfs)[i_].algo, (perfs)[i_].mathType, (perfs)[i_].memory};                           \
      found_ = TRUE;                                                                                               \
    }                                                                                                              \
    if (!found_) {                                                                                                 \
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "%s: cuDNN offers no usable algorithm",                 \
                  sieve__cuda_node_desc(c, v));                                                                    \
      return FALSE;                                                                                                \
    }                                                                                                              \
  }                                                                                                                \
  G_STMT_END

static gboolean
choose(Cu *c, guint v, Choice out[3], GError **error)
{
  CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  SieveShape is = c->nodes[x->in[0]].n->shape;
  gboolean find = g_strcmp0(g_getenv("SIEVE_CUDA_CONV_ALGOS"), "heuristic") != 0;
  gboolean det = g_strcmp0(g_getenv("SIEVE_CUDA_DETERMINISTIC"), "0") != 0;
  int dev = 0;
  cudaGetDevice(&dev);
  g_autofree char *key = g_strdup_printf("%d %u %ux%ux%u %u %ux%u %ux%u %ux%u %ux%u %u %d %d %d %d", dev,
                                         c->options.batch, is.c, is.h, is.w, a->out_channels, a->kernel[0],
                                         a->kernel[1], a->stride[0], a->stride[1], a->pad[0], a->pad[1],
                                         a->dilation[0], a->dilation[1], a->groups, c->strict_fp32, find, det,
                                         c->options.backward);
  /* Held while timing too: two threads that meet a new shape at once would
   * each allocate cuDNN's trial buffers and time against each other. */
  g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&choice_lock);
  Choice *known = choices ? g_hash_table_lookup(choices, key) : NULL;
  if (known) {
    memcpy(out, known, 3 * sizeof(Choice));
    return TRUE;
  }
  /* cuDNN's trial buffers come from plain cudaMalloc, which cannot take
   * what the pool of freed runtimes holds: a choice made short of memory
   * would be kept for the whole process. */
  sieve__cuda_pool_trim();
  int count = 0;
  cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  if (find)
    DNN_TRY(cudnnFindConvolutionForwardAlgorithm(c->cudnn, x->xd, x->wd, x->cfwd, x->yd,
                                                 CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, fwd),
            "%s: timing the forward algorithms", sieve__cuda_node_desc(c, v));
  else
    DNN_TRY(cudnnGetConvolutionForwardAlgorithm_v7(c->cudnn, x->xd, x->wd, x->cfwd, x->yd,
                                                   CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, fwd),
            "%s: forward algorithms", sieve__cuda_node_desc(c, v));
  PICK(fwd, count, out[0], FALSE);
  if (c->options.backward) {
    cudnnConvolutionBwdDataAlgoPerf_t data[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    if (find)
      DNN_TRY(cudnnFindConvolutionBackwardDataAlgorithm(c->cudnn, x->wd, x->yd, x->cbwd_data, x->xd,
                                                        CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, data),
              "%s: timing the backward data algorithms", sieve__cuda_node_desc(c, v));
    else
      DNN_TRY(cudnnGetConvolutionBackwardDataAlgorithm_v7(c->cudnn, x->wd, x->yd, x->cbwd_data, x->xd,
                                                          CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, data),
              "%s: backward data algorithms", sieve__cuda_node_desc(c, v));
    PICK(data, count, out[1], det);
    cudnnConvolutionBwdFilterAlgoPerf_t filt[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    if (find)
      DNN_TRY(cudnnFindConvolutionBackwardFilterAlgorithm(c->cudnn, x->xd, x->yd, x->cbwd_filter, x->wd,
                                                          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, filt),
              "%s: timing the backward filter algorithms", sieve__cuda_node_desc(c, v));
    else
      DNN_TRY(cudnnGetConvolutionBackwardFilterAlgorithm_v7(c->cudnn, x->xd, x->yd, x->cbwd_filter, x->wd,
                                                            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, filt),
              "%s: backward filter algorithms", sieve__cuda_node_desc(c, v));
    PICK(filt, count, out[2], det);
  }
  if (!choices)
    choices = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g_hash_table_replace(choices, g_strdup(key), g_memdup2(out, 3 * sizeof(Choice)));
  return TRUE;
}

static gboolean
plan_conv(Cu *c, guint v, gsize *workspace, GError **error)
{
  CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  SieveShape is = c->nodes[x->in[0]].n->shape;
  guint B = c->options.batch;
  if (!tensor4(&x->xd, B, is, error) || !tensor4(&x->yd, B, x->n->shape, error))
    return FALSE;
  DNN_TRY(cudnnCreateFilterDescriptor(&x->wd), "cudnnCreateFilterDescriptor");
  DNN_TRY(cudnnSetFilter4dDescriptor(x->wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, (int)a->out_channels,
                                     (int)(is.c / a->groups), (int)a->kernel[0], (int)a->kernel[1]),
          "%s's filter", sieve__cuda_node_desc(c, v));
  if (!conv_desc(c, a, &x->cfwd, error) || !conv_desc(c, a, &x->cbwd_data, error) ||
      !conv_desc(c, a, &x->cbwd_filter, error))
    return FALSE;
  if (a->bias && !tensor4(&x->bd, 1, (SieveShape){a->out_channels, 1, 1}, error))
    return FALSE;
  int on, oc, oh, ow;
  DNN_TRY(cudnnGetConvolution2dForwardOutputDim(x->cfwd, x->xd, x->wd, &on, &oc, &oh, &ow), "%s",
          sieve__cuda_node_desc(c, v));
  if ((guint)oc != x->n->shape.c || (guint)oh != x->n->shape.h || (guint)ow != x->n->shape.w) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "%s: cuDNN makes %dx%dx%d of it, the graph %ux%ux%u",
                sieve__cuda_node_desc(c, v), oc, oh, ow, x->n->shape.c, x->n->shape.h, x->n->shape.w);
    return FALSE;
  }
  Choice ch[3] = {{0}};
  if (!choose(c, v, ch, error))
    return FALSE;
  x->algo_fwd = (cudnnConvolutionFwdAlgo_t)ch[0].algo;
  x->algo_data = (cudnnConvolutionBwdDataAlgo_t)ch[1].algo;
  x->algo_filter = (cudnnConvolutionBwdFilterAlgo_t)ch[2].algo;
  DNN_TRY(cudnnSetConvolutionMathType(x->cfwd, ch[0].math), "math type");
  if (c->options.backward) {
    DNN_TRY(cudnnSetConvolutionMathType(x->cbwd_data, ch[1].math), "math type");
    DNN_TRY(cudnnSetConvolutionMathType(x->cbwd_filter, ch[2].math), "math type");
  }
  for (int k = 0; k < 3; k++)
    *workspace = MAX(*workspace, ch[k].memory);
  return TRUE;
}

static void
plan_bn(Cu *c, guint v, gsize *scratch)
{
  CNode *x = &c->nodes[v];
  guint INF = 2 * c->n_nodes + 1;
  gsize cb = x->n->shape.c * sizeof(float);
  x->rmean = buf_new(c, cb, 0, INF);
  x->rvar = buf_new(c, cb, 0, INF);
  x->smean = buf_new(c, cb, 0, INF);
  x->sinv = buf_new(c, cb, 0, INF);
  *scratch = MAX(*scratch, sieve__cu_bn_scratch_bytes((int)c->options.batch, (int)x->n->shape.c));
}

gboolean
sieve__cuda_plan(Cu *c, GError **error)
{
  guint N = c->n_nodes, INF = 2 * N + 1;
  c->bufs = g_array_new(FALSE, TRUE, sizeof(Buf));
  c->params = g_array_new(FALSE, TRUE, sizeof(Param));
  resolve(c);
  c->input = c->nodes[sieve_graph_input_node(c->graph)].root;
  c->output = c->nodes[sieve_graph_output(c->graph)].root;
  c->logits = G_MAXUINT;
  if (c->nodes[c->output].n->kind == SIEVE_OP_SOFTMAX_CE) {
    c->logits = c->nodes[c->output].in[0];
    SieveShape ls = c->nodes[c->logits].n->shape;
    c->n_classes = ls.c * ls.h * ls.w;
  }
  /* An output that folds to zero is a tensor of zeros, as on the CPU. */
  if (c->nodes[c->output].role == ROLE_ZERO)
    c->nodes[c->output].role = ROLE_ZERO_BUF;
  for (guint v = 0; v < N; v++)
    if (c->nodes[v].role != ROLE_DEAD && c->nodes[v].elems >= ((gsize)1 << 31)) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
                  "%s holds %zu values at batch %u: the CUDA kernels index at most 2^31 per tensor",
                  sieve__cuda_node_desc(c, v), c->nodes[v].elems, c->options.batch);
      return FALSE;
    }
  lifetimes(c);
  /* The tensors alone must fit before cuDNN is asked about algorithms
   * (which it cannot find for tensors the GPU cannot hold). */
  place(c);
  gsize free_b = sieve__cuda_free_bytes();
  if (c->arena_bytes > free_b) {
    sieve__cuda_oom(c, free_b, error);
    return FALSE;
  }
  gsize workspace = 0, bn_scratch = 8;
  c->order = g_new(guint, N);
  for (guint v = 0; v < N; v++) {
    CNode *x = &c->nodes[v];
    if (x->role != ROLE_REAL)
      continue;
    c->order[c->n_order++] = v;
    if (x->n->kind == SIEVE_OP_CONV2D && !plan_conv(c, v, &workspace, error))
      return FALSE;
    if (x->n->kind == SIEVE_OP_BATCH_NORM)
      plan_bn(c, v, &bn_scratch);
  }
  gsize pf = MAX(c->n_param_floats, 1) * sizeof(float);
  c->values = buf_new(c, pf, 0, INF);
  c->grads = buf_new(c, pf, 0, INF);
  c->velocity = buf_new(c, pf, 0, INF);
  c->bn_scratch = buf_new(c, bn_scratch, 0, INF);
  c->workspace = buf_new(c, MAX(workspace, 256), 0, INF);
  guint B = c->options.batch;
  if (c->logits != G_MAXUINT) {
    c->prob = buf_new(c, (gsize)B * c->n_classes * sizeof(float), 0, INF);
    c->labels = buf_new(c, B * sizeof(gint32), 0, INF);
  } else {
    c->prob = c->labels = -1;
  }
  c->hyper = buf_new(c, sizeof(SieveCuSgd), 0, INF);
  c->out_grad = c->nodes[c->output].grad;
  place(c);
  return TRUE;
}

void
sieve__cuda_plan_free(Cu *c)
{
  for (guint v = 0; c->nodes && v < c->n_nodes; v++) {
    CNode *x = &c->nodes[v];
    if (x->xd)
      cudnnDestroyTensorDescriptor(x->xd);
    if (x->yd)
      cudnnDestroyTensorDescriptor(x->yd);
    if (x->bd)
      cudnnDestroyTensorDescriptor(x->bd);
    if (x->wd)
      cudnnDestroyFilterDescriptor(x->wd);
    if (x->cfwd)
      cudnnDestroyConvolutionDescriptor(x->cfwd);
    if (x->cbwd_data)
      cudnnDestroyConvolutionDescriptor(x->cbwd_data);
    if (x->cbwd_filter)
      cudnnDestroyConvolutionDescriptor(x->cbwd_filter);
    if (x->mask && c->lane)
      sieve__cuda_release(c->lane, x->mask);
    g_free(x->in);
  }
  g_free(c->nodes);
  g_free(c->order);
  if (c->bufs)
    g_array_unref(c->bufs);
  if (c->params)
    g_array_unref(c->params);
}
