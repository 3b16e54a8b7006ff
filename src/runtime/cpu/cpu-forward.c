/* Pass 2 of the CPU backend's compilation: the forward plan, one
 * primitive per node in the layouts oneDNN picks (see cpu-private.h). */
#include "runtime/cpu/cpu-private.h"

/* ---- pass 2: forward plan -------------------------------------------------- */

static void
md_any4(dnnl_memory_desc_t *md, guint batch, SieveShape s)
{
  dnnl_dims_t d = {batch, s.c, s.h, s.w};
  dnnl_memory_desc_init_by_tag(md, 4, d, dnnl_f32, dnnl_format_tag_any);
}

/* The output of u in layout want: the slot itself, or a reorder step into a
 * new slot (kept for backward when keep is set). */
static gboolean
as_layout(Cpu *c, guint v, guint u, const dnnl_memory_desc_t *want, gboolean keep, int *slot, GError **error)
{
  dnnl_memory_desc_t have;
  if (!sieve__cpu_md_as4(c, u, &have, error))
    return FALSE;
  if (want->ndims == 2 && c->nodes[u].md.ndims == 2)
    have = c->nodes[u].md;
  if (sieve__cpu_md_equal(&have, want)) {
    *slot = c->nodes[u].out;
    return TRUE;
  }
  /* A cell's input feeds several 1x1 projections that all want it in one
   * layout: one reorder, kept for backward, serves them all. */
  CNode *p = &c->nodes[u];
  if (keep && p->kept_slot >= 0 && sieve__cpu_md_equal(&p->kept_md, want)) {
    *slot = p->kept_slot;
    return TRUE;
  }
  *slot = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(want), keep);
  if (!sieve__cpu_push_reorder(c, v, c->fwd_train, c->fwd_eval, &have, c->nodes[u].out, want, *slot, FALSE, error))
    return FALSE;
  if (!keep) {
    g_array_append_val(c->pending, *slot); /* pooled once the consumer's steps are planned */
  } else {
    p->kept_md = *want;
    p->kept_slot = *slot;
  }
  return TRUE;
}

static Param *
param_add(Cpu *c, guint v, const char *name, const dnnl_memory_desc_t *md, const dnnl_memory_desc_t *plain)
{
  Param p = {0};
  p.info.node = v;
  p.info.name = name;
  p.info.ndims = plain->ndims;
  p.info.size = 1;
  for (int d = 0; d < plain->ndims; d++) {
    p.info.dims[d] = plain->dims[d];
    p.info.size *= plain->dims[d];
  }
  p.md = *md;
  p.plain = *plain;
  p.value = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(md), TRUE);
  p.grad = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(md), TRUE);
  p.velocity = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(md), TRUE);
  if (c->nodes[v].n_params == 0)
    c->nodes[v].first_param = c->params->len;
  c->nodes[v].n_params++;
  g_array_append_val(c->params, p);
  return &g_array_index(c->params, Param, c->params->len - 1);
}

/* The forward step of a convolution or inner product whose pd, src_want,
 * src_slot, md and weight w are set: the bias parameter (when it has one),
 * the output slot, and the primitive with its arguments. */
static gboolean
plan_weighted_step(Cpu *c, guint v, Param *w, const char *what, GError **error)
{
  CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  dnnl_memory_desc_t wstore = w->md, bias; /* w moves when the param table grows */
  int wslot = w->value, bslot = -1;
  sieve__cpu_md_1d(&bias, a->out_channels);
  if (a->bias)
    bslot = param_add(c, v, "bias", &bias, &bias)->value;
  x->out = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&x->md), FALSE);
  Step *s = sieve__cpu_step_push(c, STEP_PRIM, v, c->fwd_train, c->fwd_eval);
  if (!sieve__cpu_prim_from_pd(c, s, x->fwd_pd, what, error))
    return FALSE;
  sieve__cpu_step_arg(s, DNNL_ARG_SRC, &x->src_want, x->src_slot);
  sieve__cpu_step_arg(s, DNNL_ARG_WEIGHTS, &wstore, wslot);
  if (a->bias)
    sieve__cpu_step_arg(s, DNNL_ARG_BIAS, &bias, bslot);
  sieve__cpu_step_arg(s, DNNL_ARG_DST, &x->md, x->out);
  return TRUE;
}

static gboolean
plan_conv(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  guint B = c->options.batch;
  SieveShape is = c->nodes[x->in[0]].n->shape, os = x->n->shape;
  dnnl_memory_desc_t src, wei, bias, dst;
  md_any4(&src, B, is);
  md_any4(&dst, B, os);
  gboolean grouped = a->groups > 1;
  dnnl_dims_t wd = {a->out_channels, is.c / a->groups, a->kernel[0], a->kernel[1]};
  dnnl_dims_t gwd = {a->groups, a->out_channels / a->groups, is.c / a->groups, a->kernel[0], a->kernel[1]};
  dnnl_memory_desc_t wplain, wgplain;
  dnnl_memory_desc_init_by_tag(&wplain, 4, wd, dnnl_f32, dnnl_oihw);
  if (grouped) {
    dnnl_memory_desc_init_by_tag(&wei, 5, gwd, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&wgplain, 5, gwd, dnnl_f32, dnnl_goihw);
  } else {
    dnnl_memory_desc_init_by_tag(&wei, 4, wd, dnnl_f32, dnnl_format_tag_any);
  }
  sieve__cpu_md_1d(&bias, a->out_channels);
  dnnl_dims_t strides = {a->stride[0], a->stride[1]}, dil = {a->dilation[0] - 1, a->dilation[1] - 1},
              pad = {a->pad[0], a->pad[1]};
  dnnl_convolution_desc_t d;
  dnnl_prop_kind_t prop = c->options.backward ? dnnl_forward_training : dnnl_forward_inference;
  /* The producer's layout first: a reorder of every activation costs more
   * than a slightly slower kernel on these small networks. */
  dnnl_memory_desc_t have, blocked = dst;
  if (!sieve__cpu_md_as4(c, x->in[0], &have, error))
    return FALSE;
  /* Outputs in the channel block that fits them without padding (8 or 16
   * floats): a network of 8-channel tensors padded to 16 would move twice
   * the bytes through every later operation. */
  dnnl_dims_t od = {c->options.batch, os.c, os.h, os.w};
  if (os.c % 16 == 0)
    dnnl_memory_desc_init_by_tag(&blocked, 4, od, dnnl_f32, dnnl_nChw16c);
  else if (os.c % 8 == 0)
    dnnl_memory_desc_init_by_tag(&blocked, 4, od, dnnl_f32, dnnl_nChw8c);
  TRY(dnnl_dilated_convolution_forward_desc_init(&d, prop, dnnl_convolution_direct, &have, &wei,
                                                 a->bias ? &bias : NULL, &blocked, strides, dil, pad, pad),
      "convolution descriptor for %s", sieve__cpu_node_desc(c, v));
  if (!sieve__cpu_pd_try(c, &x->fwd_pd, &d, NULL)) {
    TRY(dnnl_dilated_convolution_forward_desc_init(&d, prop, dnnl_convolution_direct, &src, &wei,
                                                   a->bias ? &bias : NULL, &dst, strides, dil, pad, pad),
        "convolution descriptor for %s", sieve__cpu_node_desc(c, v));
    if (!sieve__cpu_pd_create(c, v, &x->fwd_pd, &d, NULL, "convolution", error))
      return FALSE;
  }
  x->src_want = *dnnl_primitive_desc_query_md(x->fwd_pd, dnnl_query_src_md, 0);
  const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(x->fwd_pd, dnnl_query_weights_md, 0);
  x->md = *dnnl_primitive_desc_query_md(x->fwd_pd, dnnl_query_dst_md, 0);
  if (!as_layout(c, v, x->in[0], &x->src_want, c->options.backward, &x->src_slot, error))
    return FALSE;
  Param *w = param_add(c, v, "weight", wmd, &wplain);
  /* oneDNN wants grouped weights 5-D (goihw); the plain [out, in/groups,
   * kh, kw] of graph.h is the same bytes, so exchange through the 5-D view
   * and report the 4-D shape (param_add's info has room for 4 dims). */
  if (grouped)
    w->plain = wgplain;
  return plan_weighted_step(c, v, w, "convolution", error);
}

static gboolean
plan_linear(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  guint B = c->options.batch;
  SieveShape is = c->nodes[x->in[0]].n->shape;
  dnnl_memory_desc_t src, wei, bias, dst, wplain;
  md_any4(&src, B, is);
  dnnl_dims_t wd = {a->out_channels, is.c, is.h, is.w};
  dnnl_memory_desc_init_by_tag(&wei, 4, wd, dnnl_f32, dnnl_format_tag_any);
  dnnl_memory_desc_init_by_tag(&wplain, 4, wd, dnnl_f32, dnnl_oihw);
  dnnl_dims_t dd = {B, a->out_channels};
  dnnl_memory_desc_init_by_tag(&dst, 2, dd, dnnl_f32, dnnl_nc);
  sieve__cpu_md_1d(&bias, a->out_channels);
  dnnl_inner_product_desc_t d;
  TRY(dnnl_inner_product_forward_desc_init(&d, c->options.backward ? dnnl_forward_training : dnnl_forward_inference,
                                           &src, &wei, a->bias ? &bias : NULL, &dst),
      "inner product descriptor for %s", sieve__cpu_node_desc(c, v));
  if (!sieve__cpu_pd_create(c, v, &x->fwd_pd, &d, NULL, "inner product", error))
    return FALSE;
  x->src_want = *dnnl_primitive_desc_query_md(x->fwd_pd, dnnl_query_src_md, 0);
  const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(x->fwd_pd, dnnl_query_weights_md, 0);
  x->md = *dnnl_primitive_desc_query_md(x->fwd_pd, dnnl_query_dst_md, 0);
  if (!as_layout(c, v, x->in[0], &x->src_want, c->options.backward, &x->src_slot, error))
    return FALSE;
  /* The plain weight is [out, c*h*w], the same bytes as oihw. */
  dnnl_dims_t w2 = {a->out_channels, (dnnl_dim_t)is.c * is.h * is.w};
  dnnl_memory_desc_t wplain2;
  dnnl_memory_desc_init_by_tag(&wplain2, 2, w2, dnnl_f32, dnnl_nc);
  Param *w = param_add(c, v, "weight", wmd, &wplain2);
  w->plain = wplain; /* exchanged through the 4-D view, reported as 2-D */
  return plan_weighted_step(c, v, w, "inner product", error);
}

/* The steps of a batch norm's forward in training (batch statistics out;
 * fuse: the ReLU applied too, its workspace out) or evaluation (running
 * statistics in), from in into out, on the given list. */
static gboolean
push_bn(Cpu *c, guint v, gboolean train, gboolean fuse, int in, int out, StepWhen when, GError **error)
{
  CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  dnnl_memory_desc_t st;
  sieve__cpu_md_1d(&st, x->n->shape.c);
  unsigned flags = (a->affine ? (dnnl_use_scale | dnnl_use_shift) : 0) | (fuse ? dnnl_fuse_norm_relu : 0) |
                   (train ? 0 : dnnl_use_global_stats);
  dnnl_batch_normalization_desc_t d;
  TRY(dnnl_batch_normalization_forward_desc_init(&d, train ? dnnl_forward_training : dnnl_forward_inference, &x->md,
                                                 (float)a->eps, flags),
      "batch norm descriptor for %s", sieve__cpu_node_desc(c, v));
  dnnl_primitive_desc_t pd;
  if (!sieve__cpu_pd_create(c, v, &pd, &d, NULL, "batch norm", error))
    return FALSE;
  Step *s = sieve__cpu_step_push(c, STEP_PRIM, v, train ? c->fwd_train : c->fwd_eval, NULL);
  s->when = when;
  gboolean ok = sieve__cpu_prim_from_pd(c, s, pd, "batch norm", error);
  if (ok && fuse && train) {
    x->ws_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_workspace_md, 0);
    x->ws = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&x->ws_md), TRUE);
    sieve__cpu_step_arg(s, DNNL_ARG_WORKSPACE, &x->ws_md, x->ws);
  }
  /* The training descriptors are the backward's hints. */
  if (ok && train)
    *(fuse ? &x->fwd_pd : &x->plain_pd) = pd;
  else
    dnnl_primitive_desc_destroy(pd);
  if (!ok)
    return FALSE;
  sieve__cpu_step_arg(s, DNNL_ARG_SRC, &x->md, in);
  sieve__cpu_step_arg(s, DNNL_ARG_DST, &x->md, out);
  sieve__cpu_step_arg(s, DNNL_ARG_MEAN, &st, train ? x->mean : x->rmean);
  sieve__cpu_step_arg(s, DNNL_ARG_VARIANCE, &st, train ? x->var : x->rvar);
  if (a->affine) {
    sieve__cpu_step_arg(s, DNNL_ARG_SCALE, &st, sieve__cpu_param_of(c, v, 0)->value);
    sieve__cpu_step_arg(s, DNNL_ARG_SHIFT, &st, sieve__cpu_param_of(c, v, 1)->value);
  }
  return TRUE;
}

/* Whether oneDNN has an optimised batch norm with the ReLU fused in for
 * this layout (2.6's jit kernels; its reference one would be slower than
 * the two primitives). */
static gboolean
bn_relu_fast(Cpu *c, guint v)
{
  CNode *x = &c->nodes[v];
  dnnl_batch_normalization_desc_t d;
  unsigned flags = (x->n->attrs.affine ? (dnnl_use_scale | dnnl_use_shift) : 0) | dnnl_fuse_norm_relu;
  if (dnnl_batch_normalization_forward_desc_init(&d, dnnl_forward_training, &x->md, (float)x->n->attrs.eps, flags) !=
      dnnl_success)
    return FALSE;
  dnnl_primitive_desc_t pd;
  if (!sieve__cpu_pd_try(c, &pd, &d, NULL))
    return FALSE;
  dnnl_primitive_desc_destroy(pd);
  return TRUE;
}

/* A batch norm whose only reader is a ReLU (conv-bn-relu, as every
 * NAS-Bench-101 vertex and projection) runs with the ReLU fused in
 * (oneDNN's fuse_norm_relu): the ReLU's output straight from the
 * normalisation, and in backward the ReLU's mask from a workspace of one
 * bit an element, saving the activation's two passes over the tensor
 * each way.  The normalised tensor before the ReLU is then never stored,
 * so neither node may be one the caller reads.  Frozen activations
 * (sieve_runtime_freeze_activations) run the unfused batch norm into the
 * ReLU's buffer and the frozen mask over it (STEP_RELU_MASK), and the
 * reverse in backward. */
static void
mark_fusion(Cpu *c, guint v)
{
  CNode *x = &c->nodes[v];
  if (x->uses != 1 || sieve__cpu_kept(c, v) || v == sieve__cpu_root(c, c->output))
    return;
  for (guint w = v + 1; w < c->n_nodes; w++) {
    CNode *r = &c->nodes[w];
    if (r->role != ROLE_REAL || r->n_in == 0 || r->in[0] != v)
      continue;
    if (r->n->kind == SIEVE_OP_ACTIVATION && r->n->attrs.activation == SIEVE_ACT_RELU && !sieve__cpu_kept(c, w) &&
        w != sieve__cpu_root(c, c->output) && bn_relu_fast(c, v)) {
      x->fused = (int)w;
      r->fused = (int)v;
    }
    return; /* the one reader */
  }
}

static gboolean
plan_bn(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  guint C = x->n->shape.c;
  x->md = c->nodes[x->in[0]].md;
  dnnl_memory_desc_t st;
  sieve__cpu_md_1d(&st, C);
  if (a->affine) {
    param_add(c, v, "gamma", &st, &st);
    param_add(c, v, "beta", &st, &st);
  }
  x->mean = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&st), TRUE);
  x->var = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&st), TRUE);
  x->rmean = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&st), TRUE);
  x->rvar = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&st), TRUE);
  int in = c->nodes[x->in[0]].out;
  mark_fusion(c, v);
  if (x->fused < 0) {
    x->out = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&x->md), FALSE);
    if (!push_bn(c, v, TRUE, FALSE, in, x->out, WHEN_ALWAYS, error))
      return FALSE;
    x->fwd_pd = x->plain_pd;
    x->plain_pd = NULL;
    sieve__cpu_step_push(c, STEP_BN_RUNNING, v, c->fwd_train, NULL);
    return push_bn(c, v, FALSE, FALSE, in, x->out, WHEN_ALWAYS, error);
  }
  /* Fused: the output is the ReLU's (plan_eltwise adds the frozen mask);
   * this node's own is never stored. */
  CNode *r = &c->nodes[x->fused];
  r->md = x->md;
  r->out = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&r->md), FALSE);
  x->released = TRUE;
  if (!push_bn(c, v, TRUE, TRUE, in, r->out, WHEN_UNFROZEN, error) ||
      !push_bn(c, v, TRUE, FALSE, in, r->out, WHEN_FROZEN, error))
    return FALSE;
  sieve__cpu_step_push(c, STEP_BN_RUNNING, v, c->fwd_train, NULL);
  return push_bn(c, v, FALSE, TRUE, in, r->out, WHEN_UNFROZEN, error) &&
         push_bn(c, v, FALSE, FALSE, in, r->out, WHEN_FROZEN, error);
}

/* hard_sigmoid as a loop of our own over the tensor's floats in its
 * producer's layout, which must then hold no channel padding (a padded
 * block's zeros would become 0.5): a padded input is read through a plain
 * copy.  The backward reads the input (src_slot). */
static gboolean
plan_hard_sigmoid(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  guint u = x->in[0];
  const dnnl_memory_desc_t *have = &c->nodes[u].md;
  x->src_want = *have;
  x->src_slot = c->nodes[u].out;
  for (int d = 0; d < have->ndims; d++)
    if (have->padded_dims[d] != have->dims[d]) {
      sieve__cpu_md_plain(&x->src_want, c->options.batch, c->nodes[u].n->shape);
      if (!as_layout(c, v, u, &x->src_want, c->options.backward, &x->src_slot, error))
        return FALSE;
      break;
    }
  x->md = x->src_want;
  x->out = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&x->md), FALSE);
  Step *s = sieve__cpu_step_push(c, STEP_HSIG_FWD, v, c->fwd_train, c->fwd_eval);
  s->src = x->src_slot;
  s->dst = x->out;
  s->n = sieve__cpu_md_bytes(&x->md) / sizeof(float);
  return TRUE;
}

static gboolean
plan_eltwise(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  if (x->n->attrs.activation == SIEVE_ACT_HARD_SIGMOID)
    return plan_hard_sigmoid(c, v, error);
  if (x->fused >= 0) { /* computed by its batch norm (plan_bn): the frozen mask in place */
    Step *s = sieve__cpu_step_push(c, STEP_RELU_MASK, v, c->fwd_train, c->fwd_eval);
    s->when = WHEN_FROZEN;
    s->src = s->dst = x->out;
    s->n = sieve__cpu_md_bytes(&x->md) / sizeof(float);
    return TRUE;
  }
  x->md = c->nodes[x->in[0]].md;
  float alpha, beta;
  gboolean use_dst;
  dnnl_alg_kind_t alg = sieve__cpu_eltwise_alg(&x->n->attrs, &alpha, &beta, &use_dst);
  dnnl_eltwise_desc_t d;
  TRY(dnnl_eltwise_forward_desc_init(&d, c->options.backward ? dnnl_forward_training : dnnl_forward_inference, alg,
                                     &x->md, alpha, beta),
      "activation descriptor for %s", sieve__cpu_node_desc(c, v));
  if (!sieve__cpu_pd_create(c, v, &x->fwd_pd, &d, NULL, "activation", error))
    return FALSE;
  x->out = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&x->md), FALSE);
  Step *s = sieve__cpu_step_push(c, STEP_PRIM, v, c->fwd_train, c->fwd_eval);
  if (!sieve__cpu_prim_from_pd(c, s, x->fwd_pd, "activation", error))
    return FALSE;
  sieve__cpu_step_arg(s, DNNL_ARG_SRC, &x->md, c->nodes[x->in[0]].out);
  sieve__cpu_step_arg(s, DNNL_ARG_DST, &x->md, x->out);
  s->relu = sieve__cpu_is_relu(x->n);
  s->src = c->nodes[x->in[0]].out;
  s->dst = x->out;
  s->n = sieve__cpu_md_bytes(&x->md) / sizeof(float);
  return TRUE;
}

/* Pooling and global average pooling (a pooling whose window is the image). */
static gboolean
plan_pool(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  gboolean global = x->n->kind == SIEVE_OP_GLOBAL_AVG_POOL;
  SieveShape is = c->nodes[x->in[0]].n->shape;
  dnnl_memory_desc_t src, dst;
  if (!sieve__cpu_md_as4(c, x->in[0], &src, error))
    return FALSE;
  md_any4(&dst, c->options.batch, x->n->shape);
  dnnl_dims_t k = {global ? is.h : a->kernel[0], global ? is.w : a->kernel[1]};
  dnnl_dims_t s = {global ? 1 : a->stride[0], global ? 1 : a->stride[1]};
  dnnl_dims_t p = {global ? 0 : a->pad[0], global ? 0 : a->pad[1]};
  dnnl_dims_t dil = {0, 0};
  gboolean max = !global && a->pool == SIEVE_POOL_MAX;
  guint block;
  if (sieve__cpu_max_pool_ours(c, v, &block)) {
    /* Ours (cpu-kernels.c), in the input's layout: oneDNN 2.6's is several
     * times slower on the blocked tensors of NAS-Bench-101's cells. */
    dnnl_dims_t od = {c->options.batch, x->n->shape.c, x->n->shape.h, x->n->shape.w};
    dnnl_memory_desc_init_by_tag(&x->md, 4, od, dnnl_f32,
                                 block == 16 ? dnnl_nChw16c : block == 8 ? dnnl_nChw8c : dnnl_nchw);
    x->out = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&x->md), FALSE);
    x->ws = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&x->md) / sizeof(float), TRUE); /* a byte an element */
    x->ws_ours = TRUE;
    Step *st = sieve__cpu_step_push(c, STEP_MAXPOOL_FWD, v, c->fwd_train, c->fwd_eval);
    st->src = c->nodes[x->in[0]].out;
    st->dst = x->out;
    st->aux = x->ws;
    st->block = block;
    return TRUE;
  }
  dnnl_alg_kind_t alg = max ? dnnl_pooling_max : dnnl_pooling_avg_exclude_padding;
  dnnl_pooling_v2_desc_t d;
  TRY(dnnl_pooling_v2_forward_desc_init(&d, c->options.backward ? dnnl_forward_training : dnnl_forward_inference,
                                        alg, &src, &dst, s, k, dil, p, p),
      "pooling descriptor for %s", sieve__cpu_node_desc(c, v));
  if (!sieve__cpu_pd_create(c, v, &x->fwd_pd, &d, NULL, "pooling", error))
    return FALSE;
  x->md = *dnnl_primitive_desc_query_md(x->fwd_pd, dnnl_query_dst_md, 0);
  x->out = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&x->md), FALSE);
  const dnnl_memory_desc_t *ws = dnnl_primitive_desc_query_md(x->fwd_pd, dnnl_query_workspace_md, 0);
  Step *st = sieve__cpu_step_push(c, STEP_PRIM, v, c->fwd_train, c->fwd_eval);
  if (!sieve__cpu_prim_from_pd(c, st, x->fwd_pd, "pooling", error))
    return FALSE;
  sieve__cpu_step_arg(st, DNNL_ARG_SRC, &src, c->nodes[x->in[0]].out);
  sieve__cpu_step_arg(st, DNNL_ARG_DST, &x->md, x->out);
  if (ws && ws->ndims > 0) {
    x->ws_md = *ws;
    x->ws = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(ws), TRUE);
    sieve__cpu_step_arg(st, DNNL_ARG_WORKSPACE, ws, x->ws);
  }
  return TRUE;
}

static gboolean
plan_sum(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  x->md = c->nodes[x->in[0]].md;
  g_autofree dnnl_memory_desc_t *srcs = g_new(dnnl_memory_desc_t, x->n_in);
  g_autofree float *scales = g_new(float, x->n_in);
  for (guint k = 0; k < x->n_in; k++) {
    srcs[k] = c->nodes[x->in[k]].md;
    scales[k] = 1.0f;
  }
  dnnl_primitive_desc_t pd;
  TRY(dnnl_sum_primitive_desc_create(&pd, &x->md, (int)x->n_in, scales, srcs, NULL, c->engine), "sum for %s",
      sieve__cpu_node_desc(c, v));
  x->out = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&x->md), FALSE);
  Step *s = sieve__cpu_step_push(c, STEP_PRIM, v, c->fwd_train, c->fwd_eval);
  gboolean ok = sieve__cpu_prim_from_pd(c, s, pd, "sum", error);
  dnnl_primitive_desc_destroy(pd);
  if (!ok)
    return FALSE;
  for (guint k = 0; k < x->n_in; k++)
    sieve__cpu_step_arg(s, DNNL_ARG_MULTIPLE_SRC + (int)k, &srcs[k], c->nodes[x->in[k]].out);
  sieve__cpu_step_arg(s, DNNL_ARG_DST, &x->md, x->out);
  return TRUE;
}

/* The block of a concatenation's output: the largest of its inputs' (8
 * or 16, 8 when some input is not whole blocks of 16), when every input is
 * nchw, nChw8c or nChw16c and whole blocks; 0 (plain nchw) otherwise.
 * Pieces of 4 channels (NAS-Bench-101 at stem 16) stay plain: padded to 8,
 * the next cell's convolutions, batch norms and above all max pools
 * (oneDNN 2.6's blocked max-pool backward) move twice the bytes, and
 * measured slower than in nchw. */
static guint
concat_block(Cpu *c, CNode *x, const dnnl_memory_desc_t *srcs)
{
  guint largest = 0;
  for (guint k = 0; k < x->n_in; k++) {
    guint b = sieve__cpu_md_block(&srcs[k]);
    if (b == 0)
      return 0;
    largest = MAX(largest, b);
  }
  for (guint block = largest; block >= 8; block /= 2) {
    gboolean whole = TRUE;
    for (guint k = 0; k < x->n_in; k++)
      whole = whole && srcs[k].dims[1] % block == 0;
    if (whole)
      return block;
  }
  return 0;
}

/* A concatenation keeps every input's channel range addressable for the
 * backward slices.  Where its inputs are channel-blocked whole blocks (the
 * convolutions' outputs of a NAS-Bench-101 or DARTS cell), so is its
 * output, and its consumers (the next cell's projections, a downsampling
 * max pool) read it without a reorder: the copy is ours (cpu-kernels.c),
 * one block run per image, channel by channel for a plain piece.  Other
 * inputs make a plain output, oneDNN's copy. */
static gboolean
plan_concat(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  g_autofree dnnl_memory_desc_t *srcs = g_new(dnnl_memory_desc_t, x->n_in);
  for (guint k = 0; k < x->n_in; k++)
    if (!sieve__cpu_md_as4(c, x->in[k], &srcs[k], error))
      return FALSE;
  SieveShape sh = x->n->shape;
  guint block = concat_block(c, x, srcs);
  if (block != 0) {
    dnnl_dims_t d = {c->options.batch, sh.c, sh.h, sh.w};
    dnnl_memory_desc_init_by_tag(&x->md, 4, d, dnnl_f32, block == 16 ? dnnl_nChw16c : dnnl_nChw8c);
    x->out = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&x->md), FALSE);
    guint first = 0;
    for (guint k = 0; k < x->n_in; k++) {
      Step *s = sieve__cpu_step_push(c, STEP_CHANNELS, v, c->fwd_train, c->fwd_eval);
      s->src = c->nodes[x->in[k]].out;
      s->dst = x->out;
      s->n = (size_t)srcs[k].dims[1];
      s->hw = (gsize)sh.h * sh.w;
      s->from = (ChanView){sieve__cpu_md_block(&srcs[k]), (guint)srcs[k].padded_dims[1], 0};
      s->to = (ChanView){block, sh.c, first};
      first += (guint)srcs[k].dims[1];
    }
    return TRUE;
  }
  sieve__cpu_md_plain(&x->md, c->options.batch, sh);
  dnnl_primitive_desc_t pd;
  TRY(dnnl_concat_primitive_desc_create(&pd, &x->md, (int)x->n_in, 1, srcs, NULL, c->engine), "concat for %s",
      sieve__cpu_node_desc(c, v));
  x->out = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&x->md), FALSE);
  Step *s = sieve__cpu_step_push(c, STEP_PRIM, v, c->fwd_train, c->fwd_eval);
  gboolean ok = sieve__cpu_prim_from_pd(c, s, pd, "concat", error);
  dnnl_primitive_desc_destroy(pd);
  if (!ok)
    return FALSE;
  for (guint k = 0; k < x->n_in; k++)
    sieve__cpu_step_arg(s, DNNL_ARG_MULTIPLE_SRC + (int)k, &srcs[k], c->nodes[x->in[k]].out);
  sieve__cpu_step_arg(s, DNNL_ARG_DST, &x->md, x->out);
  return TRUE;
}

/* x * gate (graph.h): oneDNN's binary multiply, which broadcasts a
 * Bx C x1x1 gate over the height and width.  A gate of x's full shape is
 * read in x's layout; should no optimised implementation take the
 * producers' layouts, both are read as plain nchw. */
static gboolean
plan_mul(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  guint u0 = x->in[0], u1 = x->in[1];
  SieveShape xs = c->nodes[u0].n->shape, gs = c->nodes[u1].n->shape;
  gboolean full = gs.h == xs.h && gs.w == xs.w;
  dnnl_memory_desc_t src0, src1;
  if (!sieve__cpu_md_as4(c, u0, &src0, error) || !sieve__cpu_md_as4(c, u1, &src1, error))
    return FALSE;
  if (full)
    src1 = src0;
  dnnl_binary_desc_t d;
  TRY(dnnl_binary_desc_init(&d, dnnl_binary_mul, &src0, &src1, &src0), "multiply descriptor for %s",
      sieve__cpu_node_desc(c, v));
  if (!sieve__cpu_pd_try(c, &x->fwd_pd, &d, NULL)) {
    sieve__cpu_md_plain(&src0, c->options.batch, xs);
    sieve__cpu_md_plain(&src1, c->options.batch, gs);
    TRY(dnnl_binary_desc_init(&d, dnnl_binary_mul, &src0, &src1, &src0), "multiply descriptor for %s",
        sieve__cpu_node_desc(c, v));
    if (!sieve__cpu_pd_create(c, v, &x->fwd_pd, &d, NULL, "multiply", error))
      return FALSE;
  }
  x->src_want = src0;
  x->gate_md = src1;
  if (!as_layout(c, v, u0, &src0, c->options.backward, &x->src_slot, error) ||
      !as_layout(c, v, u1, &src1, c->options.backward, &x->gate_slot, error))
    return FALSE;
  x->md = src0;
  x->out = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&x->md), FALSE);
  Step *s = sieve__cpu_step_push(c, STEP_PRIM, v, c->fwd_train, c->fwd_eval);
  if (!sieve__cpu_prim_from_pd(c, s, x->fwd_pd, "multiply", error))
    return FALSE;
  sieve__cpu_step_arg(s, DNNL_ARG_SRC_0, &src0, x->src_slot);
  sieve__cpu_step_arg(s, DNNL_ARG_SRC_1, &src1, x->gate_slot);
  sieve__cpu_step_arg(s, DNNL_ARG_DST, &x->md, x->out);
  return TRUE;
}

/* The layout of a crop's output: its input's own (plain or channel-blocked)
 * at the window's extent, so that neither side needs a reorder. */
static void
crop_layout(const dnnl_memory_desc_t *src, dnnl_dims_t out_dims, dnnl_memory_desc_t *out)
{
  static const dnnl_format_tag_t tags[] = {dnnl_nChw16c, dnnl_nChw8c, dnnl_nhwc, dnnl_nchw};
  for (guint i = 0; i < G_N_ELEMENTS(tags); i++) {
    dnnl_memory_desc_t probe;
    if (dnnl_memory_desc_init_by_tag(&probe, 4, src->dims, dnnl_f32, tags[i]) == dnnl_success &&
        dnnl_memory_desc_equal(&probe, src)) {
      dnnl_memory_desc_init_by_tag(out, 4, out_dims, dnnl_f32, tags[i]);
      return;
    }
  }
  dnnl_memory_desc_init_by_tag(out, 4, out_dims, dnnl_f32, dnnl_nchw);
}

/* A crop: a reorder out of a window (a sub-memory view) of its input. */
static gboolean
plan_crop(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  dnnl_memory_desc_t src, window;
  if (!sieve__cpu_md_as4(c, x->in[0], &src, error) || !sieve__cpu_md_window(c, v, &src, &window, error))
    return FALSE;
  dnnl_dims_t od = {c->options.batch, x->n->shape.c, x->n->shape.h, x->n->shape.w};
  crop_layout(&src, od, &x->md);
  x->out = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&x->md), FALSE);
  return sieve__cpu_push_reorder(c, v, c->fwd_train, c->fwd_eval, &window, c->nodes[x->in[0]].out, &x->md, x->out,
                                 FALSE, error);
}

static gboolean
plan_loss(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  guint K = c->nodes[x->in[0]].n->shape.c;
  c->n_classes = K;
  dnnl_dims_t d = {c->options.batch, K};
  dnnl_memory_desc_init_by_tag(&x->src_want, 2, d, dnnl_f32, dnnl_nc);
  /* Logits straight from a 4-D producer (a global pool, the input): ask for
   * plain nchw BxKx1x1, the same bytes as nc, since a reorder cannot change
   * the number of dimensions. */
  if (c->nodes[x->in[0]].md.ndims == 4) {
    dnnl_dims_t d4 = {c->options.batch, K, 1, 1};
    dnnl_memory_desc_init_by_tag(&x->src_want, 4, d4, dnnl_f32, dnnl_nchw);
  }
  if (!as_layout(c, v, x->in[0], &x->src_want, TRUE, &x->src_slot, error))
    return FALSE;
  x->prob = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&x->src_want), TRUE);
  dnnl_dims_t one = {1, 1, 1, 1};
  dnnl_memory_desc_init_by_tag(&x->md, 4, one, dnnl_f32, dnnl_nchw);
  x->out = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&x->md), TRUE);
  sieve__cpu_step_push(c, STEP_LOSS_FWD, v, c->fwd_train, c->fwd_eval);
  return TRUE;
}

static gboolean
keep_output(Cpu *c, guint u)
{
  if (sieve__cpu_kept(c, u) || u == sieve__cpu_root(c, c->output) || c->nodes[u].role == ROLE_ZERO_BUF)
    return TRUE;
  if (c->options.backward && c->nodes[u].needed_bwd)
    return TRUE;
  /* A loss's logits stay readable for accuracy. */
  const SieveGraphNode *o = sieve_graph_node(c->graph, c->output);
  return o->kind == SIEVE_OP_SOFTMAX_CE && u == sieve__cpu_root(c, o->inputs[0]);
}

gboolean
sieve__cpu_plan_forward(Cpu *c, GError **error)
{
  for (guint v = 0; v < c->n_nodes; v++) {
    CNode *x = &c->nodes[v];
    gboolean ok = TRUE;
    if (x->role == ROLE_ZERO_BUF) {
      sieve__cpu_md_plain(&x->md, c->options.batch, x->n->shape);
      x->out = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&x->md), TRUE); /* zeroed at allocation, never written */
      continue;
    }
    if (x->role != ROLE_REAL)
      continue;
    switch (x->n->kind) {
    case SIEVE_OP_INPUT:
      sieve__cpu_md_plain(&x->md, c->options.batch, x->n->shape);
      x->out = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&x->md), TRUE);
      break;
    case SIEVE_OP_CONV2D:
      ok = plan_conv(c, v, error);
      break;
    case SIEVE_OP_LINEAR:
      ok = plan_linear(c, v, error);
      break;
    case SIEVE_OP_BATCH_NORM:
      ok = plan_bn(c, v, error);
      break;
    case SIEVE_OP_ACTIVATION:
      ok = plan_eltwise(c, v, error);
      break;
    case SIEVE_OP_POOL:
    case SIEVE_OP_GLOBAL_AVG_POOL:
      ok = plan_pool(c, v, error);
      break;
    case SIEVE_OP_ADD:
      ok = plan_sum(c, v, error);
      break;
    case SIEVE_OP_CONCAT:
      ok = plan_concat(c, v, error);
      break;
    case SIEVE_OP_MUL:
      ok = plan_mul(c, v, error);
      break;
    case SIEVE_OP_SOFTMAX_CE:
      ok = plan_loss(c, v, error);
      break;
    case SIEVE_OP_CROP:
      ok = plan_crop(c, v, error);
      break;
    default:
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "the CPU backend cannot run %s", sieve__cpu_node_desc(c, v));
      return FALSE;
    }
    if (!ok)
      return FALSE;
    for (guint k = 0; k < c->pending->len; k++)
      sieve__cpu_slot_release(c, g_array_index(c->pending, int, k));
    g_array_set_size(c->pending, 0);
    /* Inputs whose last reader this was go back to the pool. */
    for (guint k = 0; k < x->n_in; k++) {
      CNode *u = &c->nodes[x->in[k]];
      if (--u->uses == 0 && !keep_output(c, u->id) && !u->released) {
        sieve__cpu_slot_release(c, u->out);
        u->released = TRUE;
      }
    }
  }
  return TRUE;
}
