/* Running the CUDA backend: the forward, backward and SGD sequences of
 * launches, each captured once as a CUDA graph and replayed after; the
 * uploads of the batch, labels, output gradient and SGD hyperparameters;
 * the loss. */
#include <math.h>
#include <string.h>

#include "runtime/cuda/cuda-private.h"

static const float ONE = 1.0f, ZERO = 0.0f;

static float *
param_ptr(const Cu *c, gint array, guint node, guint k)
{
  const Param *p = &g_array_index(c->params, Param, c->nodes[node].first_param + k);
  return cu_ptr(c, array) + p->offset;
}

/* The slope an activation's kernels take: a leaky ReLU's alpha; a ReLU's
 * is 0 whatever alpha it was built with (its frozen form passes alpha x
 * where the mask is off). */
static float
frozen_slope(const SieveGraphNode *n)
{
  return n->attrs.activation == SIEVE_ACT_RELU ? 0.0f : (float)n->attrs.alpha;
}

static SieveCuPool
pool_of(const Cu *c, const CNode *x)
{
  SieveShape is = c->nodes[x->in[0]].n->shape, os = x->n->shape;
  const SieveOpAttrs *a = &x->n->attrs;
  return (SieveCuPool){(int)c->options.batch, (int)is.c, (int)is.h, (int)is.w, (int)os.h, (int)os.w,
                       (int)a->kernel[0], (int)a->kernel[1], (int)a->stride[0], (int)a->stride[1],
                       (int)a->pad[0], (int)a->pad[1]};
}

static gsize
workspace_bytes(const Cu *c)
{
  return g_array_index(c->bufs, Buf, c->workspace).bytes;
}

static gboolean
forward_node(Cu *c, guint v, gboolean train, GError **error)
{
  CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  cudaStream_t s = c->stream;
  float *y = cu_ptr(c, x->out), *in0 = x->n_in ? cu_ptr(c, c->nodes[x->in[0]].out) : NULL;
  guint B = c->options.batch;
  SieveShape is = x->n_in ? c->nodes[x->in[0]].n->shape : x->n->shape;
  switch (x->n->kind) {
  case SIEVE_OP_INPUT:
    break;
  case SIEVE_OP_CONV2D:
    DNN_TRY(cudnnConvolutionForward(c->cudnn, &ONE, x->xd, in0, x->wd, param_ptr(c, c->values, v, 0), x->cfwd,
                                    x->algo_fwd, cu_ptr(c, c->workspace), workspace_bytes(c), &ZERO, x->yd, y),
            "%s", sieve__cuda_node_desc(c, v));
    if (a->bias)
      DNN_TRY(cudnnAddTensor(c->cudnn, &ONE, x->bd, param_ptr(c, c->values, v, 1), &ONE, x->yd, y), "%s bias",
              sieve__cuda_node_desc(c, v));
    break;
  case SIEVE_OP_BATCH_NORM: {
    const float *scale = a->affine ? param_ptr(c, c->values, v, 0) : NULL;
    const float *shift = a->affine ? param_ptr(c, c->values, v, 1) : NULL;
    sieve__cu_bn_forward(s, train, in0, y, scale, shift, cu_ptr(c, x->smean), cu_ptr(c, x->sinv),
                         cu_ptr(c, x->rmean), cu_ptr(c, x->rvar), cu_ptr(c, c->bn_scratch), (int)B, (int)is.c,
                         (gsize)is.h * is.w, (float)a->eps, (float)a->momentum);
    break;
  }
  case SIEVE_OP_ACTIVATION:
    sieve__cu_act_forward(s, (int)a->activation, frozen_slope(x->n), in0, y, x->elems,
                          c->frozen && sieve__cuda_is_relu(x->n) ? x->mask : NULL);
    break;
  case SIEVE_OP_POOL: {
    SieveCuPool p = pool_of(c, x);
    sieve__cu_pool_forward(s, a->pool == SIEVE_POOL_MAX, &p, in0, y, (int32_t *)cu_ptr(c, x->idx));
    break;
  }
  case SIEVE_OP_ADD: {
    const float *src[x->n_in];
    for (guint i = 0; i < x->n_in; i++)
      src[i] = cu_ptr(c, c->nodes[x->in[i]].out);
    sieve__cu_sum(s, y, src, (int)x->n_in, x->elems, 0);
    break;
  }
  case SIEVE_OP_CONCAT: {
    guint off = 0;
    for (guint i = 0; i < x->n_in; i++) {
      SieveShape ps = c->nodes[x->in[i]].n->shape;
      sieve__cu_channels(s, cu_ptr(c, c->nodes[x->in[i]].out), (int)ps.c, 0, y, (int)x->n->shape.c, (int)off,
                         (int)ps.c, (int)B, (gsize)ps.h * ps.w, 0);
      off += ps.c;
    }
    break;
  }
  case SIEVE_OP_GLOBAL_AVG_POOL:
    sieve__cu_gap_forward(s, in0, y, (gsize)B * is.c, (gsize)is.h * is.w);
    break;
  case SIEVE_OP_LINEAR:
    sieve__cu_linear_forward(s, in0, param_ptr(c, c->values, v, 0), a->bias ? param_ptr(c, c->values, v, 1) : NULL, y,
                             (int)B, (int)(is.c * is.h * is.w), (int)a->out_channels);
    break;
  case SIEVE_OP_SOFTMAX_CE:
    sieve__cu_softmax_ce_forward(s, in0, (const int32_t *)cu_ptr(c, c->labels), cu_ptr(c, c->prob), y, (int)B,
                                 (int)c->n_classes, (float)a->label_smoothing);
    break;
  case SIEVE_OP_MUL: {
    SieveShape gs = c->nodes[x->in[1]].n->shape;
    sieve__cu_mul_forward(s, in0, cu_ptr(c, c->nodes[x->in[1]].out), y, (gsize)B * is.c, (gsize)is.h * is.w,
                          (gsize)gs.h * gs.w);
    break;
  }
  case SIEVE_OP_CROP:
    sieve__cu_crop_forward(s, in0, y, (gsize)B * is.c, (int)is.h, (int)is.w, (int)a->pad[0], (int)a->pad[1],
                           (int)x->n->shape.h, (int)x->n->shape.w);
    break;
  default:
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "%s: no CUDA kernel", sieve__cuda_node_desc(c, v));
    return FALSE;
  }
  return TRUE;
}

static gboolean
mark(Cu *c, guint k, GError **error)
{
  if (c->profile)
    CU_TRY(cudaEventRecord(c->marks[k], c->stream), "profiling");
  return TRUE;
}

/* Adds the times between the marks of one pass (nodes in order of k) to
 * their operations' rows. */
static gboolean
profile_pass(Cu *c, int phase, gboolean reverse, GError **error)
{
  if (!c->profile)
    return TRUE;
  CU_TRY(cudaEventSynchronize(c->marks[c->n_order]), "profiling");
  for (guint k = 0; k < c->n_order; k++) {
    float ms = 0;
    CU_TRY(cudaEventElapsedTime(&ms, c->marks[k], c->marks[k + 1]), "profiling");
    guint at = reverse ? c->n_order - 1 - k : k, v = c->order[at];
    c->prof_ms[phase][c->nodes[v].n->kind] += ms;
    c->prof_node[phase][at] += ms;
  }
  c->prof_passes[phase]++;
  return TRUE;
}

void
sieve__cuda_profile_print(Cu *c)
{
  static const char *const phases[2] = {"forward", "backward"};
  static const char *const steps[G_N_ELEMENTS(c->prof_compile)] = {"device", "lane", "plan", "memory", "pinned",
                                                                   "initial values"};
  double compile = 0;
  for (guint k = 0; k < G_N_ELEMENTS(c->prof_compile); k++)
    compile += c->prof_compile[k];
  g_printerr("profile compile: %.3f ms (", compile);
  for (guint k = 0; k < G_N_ELEMENTS(c->prof_compile); k++)
    g_printerr("%s%s %.3f", k ? ", " : "", steps[k], c->prof_compile[k]);
  g_printerr(")\n");
  for (int p = 0; p < 2; p++) {
    double total = 0;
    for (int k = 0; k < SIEVE_N_OPS; k++)
      total += c->prof_ms[p][k];
    if (!c->prof_passes[p])
      continue;
    g_printerr("profile %s: %.3f ms per pass over %u passes\n", phases[p], total / c->prof_passes[p],
               c->prof_passes[p]);
    for (int k = 0; k < SIEVE_N_OPS; k++)
      if (c->prof_ms[p][k] > 0)
        g_printerr("  %-18s %8.3f ms  %5.1f%%\n", sieve_op_kind_name(k), c->prof_ms[p][k] / c->prof_passes[p],
                   100 * c->prof_ms[p][k] / total);
    /* the slowest nodes, with what cuDNN chose for convolutions */
    for (int top = 0; top < 6; top++) {
      guint best = 0;
      for (guint k = 1; k < c->n_order; k++)
        if (c->prof_node[p][k] > c->prof_node[p][best])
          best = k;
      if (c->prof_node[p][best] <= 0)
        break;
      CNode *x = &c->nodes[c->order[best]];
      SieveShape is = x->n_in ? c->nodes[x->in[0]].n->shape : x->n->shape;
      g_printerr("    %8.3f ms  %s %ux%ux%u -> %ux%ux%u", c->prof_node[p][best] / c->prof_passes[p],
                 sieve__cuda_node_desc(c, c->order[best]), is.c, is.h, is.w, x->n->shape.c, x->n->shape.h,
                 x->n->shape.w);
      if (x->n->kind == SIEVE_OP_CONV2D)
        g_printerr(" algos fwd %d data %d filter %d", (int)x->algo_fwd, (int)x->algo_data, (int)x->algo_filter);
      g_printerr("\n");
      c->prof_node[p][best] = -c->prof_node[p][best];
    }
  }
}

static gboolean
issue_forward(Cu *c, gboolean train, GError **error)
{
  for (guint k = 0; k < c->n_order; k++)
    if (!mark(c, k, error) || !forward_node(c, c->order[k], train, error))
      return FALSE;
  if (!mark(c, c->n_order, error))
    return FALSE;
  CU_TRY(cudaGetLastError(), "launching the forward");
  return profile_pass(c, 0, FALSE, error);
}

/* Where input i's gradient goes (NULL: nobody needs it), and whether it
 * adds to what another reader already put there. */
static float *
grad_target(Cu *c, const CNode *x, guint i, int *acc)
{
  CNode *u = &c->nodes[x->in[i]];
  if (u->grad < 0 || u->role != ROLE_REAL || !(c->input_only ? u->need_in : u->need))
    return NULL;
  *acc = c->written[x->in[i]];
  c->written[x->in[i]] = TRUE;
  return cu_ptr(c, u->grad);
}

static gboolean
backward_node(Cu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  cudaStream_t s = c->stream;
  guint B = c->options.batch;
  gboolean params = !c->input_only && x->has_params;
  float *dy = cu_ptr(c, x->grad), *in0 = x->n_in ? cu_ptr(c, c->nodes[x->in[0]].out) : NULL;
  SieveShape is = x->n_in ? c->nodes[x->in[0]].n->shape : x->n->shape;
  int acc = 0, acc1 = 0;
  float *dx = NULL;
  switch (x->n->kind) {
  case SIEVE_OP_CONV2D:
    if ((dx = grad_target(c, x, 0, &acc)))
      DNN_TRY(cudnnConvolutionBackwardData(c->cudnn, &ONE, x->wd, param_ptr(c, c->values, v, 0), x->yd, dy,
                                           x->cbwd_data, x->algo_data, cu_ptr(c, c->workspace), workspace_bytes(c),
                                           acc ? &ONE : &ZERO, x->xd, dx),
              "%s backward data", sieve__cuda_node_desc(c, v));
    if (params) {
      DNN_TRY(cudnnConvolutionBackwardFilter(c->cudnn, &ONE, x->xd, in0, x->yd, dy, x->cbwd_filter, x->algo_filter,
                                             cu_ptr(c, c->workspace), workspace_bytes(c), &ZERO, x->wd,
                                             param_ptr(c, c->grads, v, 0)),
              "%s backward filter", sieve__cuda_node_desc(c, v));
      if (a->bias)
        DNN_TRY(cudnnConvolutionBackwardBias(c->cudnn, &ONE, x->yd, dy, &ZERO, x->bd, param_ptr(c, c->grads, v, 1)),
                "%s backward bias", sieve__cuda_node_desc(c, v));
    }
    break;
  case SIEVE_OP_BATCH_NORM:
    dx = grad_target(c, x, 0, &acc);
    if (dx || params)
      sieve__cu_bn_backward(s, in0, dy, dx, a->affine ? param_ptr(c, c->values, v, 0) : NULL, cu_ptr(c, x->smean),
                            cu_ptr(c, x->sinv), params && a->affine ? param_ptr(c, c->grads, v, 0) : NULL,
                            params && a->affine ? param_ptr(c, c->grads, v, 1) : NULL, cu_ptr(c, c->bn_scratch),
                            (int)B, (int)is.c, (gsize)is.h * is.w, acc);
    break;
  case SIEVE_OP_ACTIVATION:
    if ((dx = grad_target(c, x, 0, &acc)))
      /* only the tensor the derivative reads: the other may be gone */
      sieve__cu_act_backward(s, (int)a->activation, frozen_slope(x->n),
                             sieve__cu_act_uses_output(a->activation) ? NULL : in0,
                             sieve__cu_act_uses_output(a->activation) ? cu_ptr(c, x->out) : NULL, dy, dx, x->elems,
                             c->frozen && sieve__cuda_is_relu(x->n) ? x->mask : NULL, acc);
    break;
  case SIEVE_OP_POOL:
    if ((dx = grad_target(c, x, 0, &acc))) {
      SieveCuPool p = pool_of(c, x);
      sieve__cu_pool_backward(s, a->pool == SIEVE_POOL_MAX, &p, dy, (const int32_t *)cu_ptr(c, x->idx), dx, acc);
    }
    break;
  case SIEVE_OP_ADD: {
    float *dsts[x->n_in];
    int accs[x->n_in], n = 0;
    for (guint i = 0; i < x->n_in; i++)
      if ((dsts[n] = grad_target(c, x, i, &accs[n])))
        n++;
    /* One pass over dy for all of them, unless one tensor is summed
     * twice (x + x): its second share must add to the first. */
    gboolean twice = FALSE;
    for (int i = 0; i < n; i++)
      for (int j = 0; j < i; j++)
        twice |= dsts[i] == dsts[j];
    if (twice) {
      for (int i = 0; i < n; i++)
        sieve__cu_spread(s, dy, &dsts[i], &accs[i], 1, x->elems);
      break;
    }
    if (n)
      sieve__cu_spread(s, dy, dsts, accs, n, x->elems);
    break;
  }
  case SIEVE_OP_CONCAT: {
    guint off = 0;
    for (guint i = 0; i < x->n_in; i++) {
      SieveShape ps = c->nodes[x->in[i]].n->shape;
      if ((dx = grad_target(c, x, i, &acc)))
        sieve__cu_channels(s, dy, (int)x->n->shape.c, (int)off, dx, (int)ps.c, 0, (int)ps.c, (int)B,
                           (gsize)ps.h * ps.w, acc);
      off += ps.c;
    }
    break;
  }
  case SIEVE_OP_GLOBAL_AVG_POOL:
    if ((dx = grad_target(c, x, 0, &acc)))
      sieve__cu_gap_backward(s, dy, dx, (gsize)B * is.c, (gsize)is.h * is.w, acc);
    break;
  case SIEVE_OP_LINEAR: {
    int K = (int)(is.c * is.h * is.w), O = (int)a->out_channels;
    if ((dx = grad_target(c, x, 0, &acc)))
      sieve__cu_linear_backward_data(s, dy, param_ptr(c, c->values, v, 0), dx, (int)B, K, O, acc);
    if (params)
      sieve__cu_linear_backward_weights(s, dy, in0, param_ptr(c, c->grads, v, 0),
                                        a->bias ? param_ptr(c, c->grads, v, 1) : NULL, (int)B, K, O);
    break;
  }
  case SIEVE_OP_MUL: {
    SieveShape gs = c->nodes[x->in[1]].n->shape;
    float *gate = cu_ptr(c, c->nodes[x->in[1]].out);
    dx = grad_target(c, x, 0, &acc);
    float *dg = grad_target(c, x, 1, &acc1);
    sieve__cu_mul_backward(s, dy, in0, gate, dx, dg, (gsize)B * is.c, (gsize)is.h * is.w, (gsize)gs.h * gs.w, acc,
                           acc1);
    break;
  }
  case SIEVE_OP_CROP:
    if ((dx = grad_target(c, x, 0, &acc)))
      sieve__cu_crop_backward(s, dy, dx, (gsize)B * is.c, (int)is.h, (int)is.w, (int)a->pad[0], (int)a->pad[1],
                              (int)x->n->shape.h, (int)x->n->shape.w, acc);
    break;
  default:
    break;
  }
  return TRUE;
}

static gboolean
issue_backward(Cu *c, GError **error)
{
  memset(c->written, 0, c->n_nodes * sizeof(gboolean));
  if (c->logits != G_MAXUINT) {
    CNode *l = &c->nodes[c->logits];
    int acc = 0;
    if (l->grad >= 0 && (c->input_only ? l->need_in : l->need)) {
      c->written[c->logits] = TRUE;
      sieve__cu_softmax_ce_backward(c->stream, cu_ptr(c, c->prob), (const int32_t *)cu_ptr(c, c->labels),
                                    cu_ptr(c, l->grad), (int)c->options.batch, (int)c->n_classes,
                                    (float)c->nodes[c->output].n->attrs.label_smoothing, acc);
    }
  } else {
    c->written[c->output] = TRUE;
  }
  for (guint k = c->n_order; k-- > 0;) {
    guint v = c->order[k];
    CNode *x = &c->nodes[v];
    if (!mark(c, c->n_order - 1 - k, error))
      return FALSE;
    if (x->n->kind == SIEVE_OP_SOFTMAX_CE || x->n->kind == SIEVE_OP_INPUT || !(c->input_only ? x->need_in : x->need))
      continue;
    if (x->grad < 0 || !c->written[v]) {
      /* No gradient reaches it: its parameters' gradients are zero. */
      if (!c->input_only && x->has_params)
        for (guint p = 0; p < x->n_params; p++) {
          const Param *pp = &g_array_index(c->params, Param, x->first_param + p);
          CU_TRY(cudaMemsetAsync(cu_ptr(c, c->grads) + pp->offset, 0, pp->info.size * sizeof(float), c->stream),
                 "clearing a gradient");
        }
      continue;
    }
    if (!backward_node(c, v, error))
      return FALSE;
  }
  if (!mark(c, c->n_order, error))
    return FALSE;
  CU_TRY(cudaGetLastError(), "launching the backward");
  return profile_pass(c, 1, TRUE, error);
}

static gboolean
issue_sgd(Cu *c, GError **error)
{
  sieve__cu_sgd(c->stream, cu_ptr(c, c->values), cu_ptr(c, c->grads), cu_ptr(c, c->velocity), c->n_param_floats,
                (const SieveCuSgd *)cu_ptr(c, c->hyper));
  CU_TRY(cudaGetLastError(), "launching the SGD step");
  return TRUE;
}

static gboolean
issue(Cu *c, Seq seq, GError **error)
{
  switch (seq) {
  case SEQ_FWD_TRAIN:
    return issue_forward(c, TRUE, error);
  case SEQ_FWD_EVAL:
    return issue_forward(c, FALSE, error);
  case SEQ_BWD:
  case SEQ_BWD_INPUT:
    return issue_backward(c, error);
  default:
    return issue_sgd(c, error);
  }
}

/* The first two runs of a sequence are issued launch by launch (cuDNN and
 * the kernels load lazily, which a capture must not see, and a runtime
 * that runs a pass once or twice, as the proxies' do, is not worth a
 * capture); the third is captured and every later one replays the graph.  While activations are
 * frozen the masks change what runs: those passes are never captured.  A
 * capture that fails turns graphs off for this runtime (the describe text
 * says so) and the sequence runs launch by launch. */
static gboolean
run_seq(Cu *c, Seq seq, GError **error)
{
  gboolean backward = seq == SEQ_BWD || seq == SEQ_BWD_INPUT;
  gboolean *saved = backward ? c->written_seq[seq == SEQ_BWD_INPUT] : NULL;
  if (c->graphs && !c->frozen && !c->profile && c->exec[seq]) {
    CU_TRY(cudaGraphLaunch(c->exec[seq], c->stream), "replaying a step");
    if (saved)
      memcpy(c->written, saved, c->n_nodes * sizeof(gboolean));
    return TRUE;
  }
  if (c->graphs && !c->frozen && !c->profile && c->runs[seq] >= 2) {
    GError *why = NULL;
    cudaGraph_t graph = NULL;
    CU_TRY(cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal), "starting a capture");
    gboolean ok = issue(c, seq, &why);
    cudaError_t end = cudaStreamEndCapture(c->stream, &graph);
    cudaError_t inst = ok && end == cudaSuccess ? cudaGraphInstantiate(&c->exec[seq], graph, 0) : cudaSuccess;
    if (ok && end == cudaSuccess && inst == cudaSuccess) {
      cudaGraphDestroy(graph);
      if (saved)
        memcpy(saved, c->written, c->n_nodes * sizeof(gboolean));
      CU_TRY(cudaGraphLaunch(c->exec[seq], c->stream), "launching a captured step");
      return TRUE;
    }
    if (graph)
      cudaGraphDestroy(graph);
    c->exec[seq] = NULL;
    (void)cudaGetLastError();
    g_autofree char *old = c->describe;
    c->describe = g_strdup_printf("%s; CUDA graphs off (%s)", old,
                                  why ? why->message : cudaGetErrorString(end != cudaSuccess ? end : inst));
    g_clear_error(&why);
    c->graphs = FALSE;
  }
  c->runs[seq]++;
  return issue(c, seq, error);
}

/* One piece of an upload: bytes from host src to device dst. */
typedef struct {
  void *dst;
  const void *src;
  gsize bytes;
} Piece;

/* Uploads go through one pinned buffer, each piece after the last, copied
 * on the runtime's stream; before the buffer is filled again the last
 * upload from it must have left. */
static gboolean
upload(Cu *c, const Piece *pieces, guint n, GError **error)
{
  CU_TRY(cudaEventSynchronize(c->staged), "waiting for the last upload");
  gsize at = 0;
  for (guint i = 0; i < n; i++) {
    char *stage = (char *)c->staging + at;
    memcpy(stage, pieces[i].src, pieces[i].bytes);
    CU_TRY(cudaMemcpyAsync(pieces[i].dst, stage, pieces[i].bytes, cudaMemcpyHostToDevice, c->stream), "uploading");
    at += pieces[i].bytes;
  }
  CU_TRY(cudaEventRecord(c->staged, c->stream), "recording the upload");
  return TRUE;
}

gboolean
sieve__cuda_forward(gpointer impl, const float *x, const gint32 *labels, SieveMode mode, GError **error)
{
  Cu *c = impl;
  CNode *in = &c->nodes[c->input];
  sieve__cuda_mirror_drop(c);
  c->has_labels = labels && c->n_classes; /* in range: runtime.c checked them */
  Piece pieces[2] = {{cu_ptr(c, in->out), x, in->elems * sizeof(float)},
                     {cu_ptr(c, c->labels), labels, c->options.batch * sizeof(gint32)}};
  if (!upload(c, pieces, c->has_labels ? 2 : 1, error))
    return FALSE;
  c->loss_known = FALSE;
  c->backward_done = FALSE;
  return run_seq(c, mode == SIEVE_MODE_TRAIN ? SEQ_FWD_TRAIN : SEQ_FWD_EVAL, error);
}

gboolean
sieve__cuda_backward(gpointer impl, const float *output_grad, gboolean input_only, GError **error)
{
  Cu *c = impl;
  if (c->backward_done && !c->repeatable) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
                "a second backward after one forward: this runtime gave the forward's tensors to the first "
                "backward's gradients (compile with input_grad or kept nodes to run several)");
    return FALSE;
  }
  c->input_only = input_only;
  sieve__cuda_mirror_drop(c);
  if (c->logits == G_MAXUINT && c->out_grad >= 0) { /* a loss's labels: runtime.c checked them */
    if (!output_grad) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "the graph's output is not a loss: give its gradient");
      return FALSE;
    }
    Piece piece = {cu_ptr(c, c->out_grad), output_grad, c->nodes[c->output].elems * sizeof(float)};
    if (!upload(c, &piece, 1, error))
      return FALSE;
  }
  if (!run_seq(c, input_only ? SEQ_BWD_INPUT : SEQ_BWD, error))
    return FALSE;
  c->backward_done = TRUE;
  return TRUE;
}

gboolean
sieve__cuda_sgd_step(gpointer impl, const SieveSgd *sgd, GError **error)
{
  Cu *c = impl;
  sieve__cuda_mirror_drop(c);
  SieveCuSgd h = {(float)sgd->lr, (float)sgd->momentum, (float)sgd->weight_decay, sgd->nesterov ? 1 : 0};
  Piece piece = {cu_ptr(c, c->hyper), &h, sizeof h};
  return upload(c, &piece, 1, error) && run_seq(c, SEQ_SGD, error);
}

gboolean
sieve__cuda_sync(Cu *c, GError **error)
{
  CU_TRY(cudaStreamSynchronize(c->stream), "running on the GPU");
  return TRUE;
}

double
sieve__cuda_loss(gpointer impl)
{
  Cu *c = impl;
  if (!c->has_labels)
    return NAN;
  if (!c->loss_known) {
    float v;
    if (cudaMemcpyAsync(&v, cu_ptr(c, c->loss), sizeof v, cudaMemcpyDeviceToHost, c->stream) != cudaSuccess ||
        cudaStreamSynchronize(c->stream) != cudaSuccess)
      return NAN;
    c->loss_value = v;
    c->loss_known = TRUE;
  }
  return c->loss_value;
}
