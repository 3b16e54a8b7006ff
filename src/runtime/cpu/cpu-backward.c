/* Pass 3 of the CPU backend's compilation: the backward plan, in reverse,
 * each contribution to an input's gradient written in place or added. */
#include "runtime/cpu/cpu-private.h"

/* ---- pass 3: backward plan -------------------------------------------------- */

static gboolean
wants_grad(Cpu *c, guint u)
{
  CNode *x = &c->nodes[u];
  if (x->role != ROLE_REAL)
    return FALSE;
  if (x->n->kind == SIEVE_OP_INPUT)
    return c->options.input_grad;
  return TRUE;
}

/* Where a contribution to u's gradient in layout md goes: u's gradient
 * itself when it is the first one in u's layout, else a scratch slot. */
static int
contrib_begin(Cpu *c, guint u, const dnnl_memory_desc_t *md)
{
  CNode *x = &c->nodes[u];
  dnnl_memory_desc_t have;
  if (x->md.ndims == md->ndims)
    have = x->md;
  else
    sieve__cpu_md_as4(c, u, &have, NULL);
  if (x->diff < 0 && sieve__cpu_md_equal(&have, md)) {
    x->diff = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&x->md), FALSE);
    return x->diff;
  }
  return sieve__cpu_slot_new(c, sieve__cpu_md_bytes(md), FALSE);
}

static gboolean
contrib_end(Cpu *c, guint v, guint u, const dnnl_memory_desc_t *md, int slot, GError **error)
{
  CNode *x = &c->nodes[u];
  if (slot == x->diff)
    return TRUE;
  dnnl_memory_desc_t have;
  if (x->md.ndims == md->ndims) {
    have = x->md;
  } else if (!sieve__cpu_md_as4(c, u, &have, error)) {
    return FALSE;
  }
  gboolean first = x->diff < 0;
  if (first)
    x->diff = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&x->md), FALSE);
  if (sieve__cpu_md_equal(&have, md) && !first) {
    Step *s = sieve__cpu_step_push(c, STEP_ADD, v, c->bwd, NULL);
    s->dst = x->diff;
    s->src = slot;
    s->n = sieve__cpu_md_bytes(md) / sizeof(float);
  } else if (!sieve__cpu_push_reorder(c, v, c->bwd, NULL, md, slot, &have, x->diff, !first, error)) {
    return FALSE;
  }
  sieve__cpu_slot_release(c, slot);
  return TRUE;
}

/* A tensor (have, slot) in the layout a backward primitive chose: itself,
 * or a reorder into a scratch slot that goes back to the pool (appended to
 * tmps) once the step is planned. */
static gboolean
bwd_in(Cpu *c, guint v, const dnnl_memory_desc_t *have, int slot, const dnnl_memory_desc_t *want, int *out,
       GArray *tmps, GError **error)
{
  if (sieve__cpu_md_equal(have, want)) {
    *out = slot;
    return TRUE;
  }
  *out = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(want), FALSE);
  g_array_append_val(tmps, *out);
  return sieve__cpu_push_reorder(c, v, c->bwd, NULL, have, slot, want, *out, FALSE, error);
}

static void
release_all(Cpu *c, GArray *tmps)
{
  for (guint i = 0; i < tmps->len; i++)
    sieve__cpu_slot_release(c, g_array_index(tmps, int, i));
  g_array_set_size(tmps, 0);
}

/* Descriptors of a convolution's or inner product's backward passes, every
 * layout left to oneDNN: forcing the forward's layouts on them can leave
 * only the reference implementation, a hundred times slower. */
static gboolean
conv_bwd_desc(Cpu *c, guint v, gboolean linear, gboolean weights, dnnl_primitive_desc_t *pd, GError **error)
{
  CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  dnnl_memory_desc_t src, wei, dst, bias;
  sieve__cpu_md_1d(&bias, a->out_channels);
  const dnnl_memory_desc_t *wmd = &sieve__cpu_param_of(c, v, 0)->md;
  dnnl_memory_desc_init_by_tag(&wei, wmd->ndims, wmd->dims, dnnl_f32, dnnl_format_tag_any);
  /* First the activations' own layouts (no reorders), weights free. */
  if (!linear) {
    dnnl_dims_t strides = {a->stride[0], a->stride[1]}, dil = {a->dilation[0] - 1, a->dilation[1] - 1},
                pad = {a->pad[0], a->pad[1]};
    dnnl_convolution_desc_t d;
    dnnl_status_t st =
      weights ? dnnl_dilated_convolution_backward_weights_desc_init(&d, dnnl_convolution_direct, &x->src_want, &wei,
                                                                    a->bias ? &bias : NULL, &x->md, strides, dil,
                                                                    pad, pad)
              : dnnl_dilated_convolution_backward_data_desc_init(&d, dnnl_convolution_direct, &x->src_want, &wei,
                                                                 &x->md, strides, dil, pad, pad);
    if (st == dnnl_success && sieve__cpu_pd_try(c, pd, &d, x->fwd_pd))
      return TRUE;
  }
  dnnl_memory_desc_init_by_tag(&src, x->src_want.ndims, x->src_want.dims, dnnl_f32, dnnl_format_tag_any);
  dnnl_memory_desc_init_by_tag(&dst, x->md.ndims, x->md.dims, dnnl_f32, dnnl_format_tag_any);
  if (linear) {
    dnnl_inner_product_desc_t d;
    if (weights)
      TRY(dnnl_inner_product_backward_weights_desc_init(&d, &src, &wei, a->bias ? &bias : NULL, &dst),
          "inner product weights descriptor for %s", sieve__cpu_node_desc(c, v));
    else
      TRY(dnnl_inner_product_backward_data_desc_init(&d, &src, &wei, &dst),
          "inner product backward descriptor for %s", sieve__cpu_node_desc(c, v));
    return sieve__cpu_pd_create(c, v, pd, &d, x->fwd_pd, weights ? "inner product weights" : "inner product backward",
                                error);
  }
  dnnl_dims_t strides = {a->stride[0], a->stride[1]}, dil = {a->dilation[0] - 1, a->dilation[1] - 1},
              pad = {a->pad[0], a->pad[1]};
  dnnl_convolution_desc_t d;
  if (weights)
    TRY(dnnl_dilated_convolution_backward_weights_desc_init(&d, dnnl_convolution_direct, &src, &wei,
                                                            a->bias ? &bias : NULL, &dst, strides, dil, pad, pad),
        "convolution weights descriptor for %s", sieve__cpu_node_desc(c, v));
  else
    TRY(dnnl_dilated_convolution_backward_data_desc_init(&d, dnnl_convolution_direct, &src, &wei, &dst, strides,
                                                         dil, pad, pad),
        "convolution backward descriptor for %s", sieve__cpu_node_desc(c, v));
  return sieve__cpu_pd_create(c, v, pd, &d, x->fwd_pd, weights ? "convolution weights" : "convolution backward", error);
}

/* A depthwise convolution without bias whose weight gradient oneDNN would
 * not compute with its depthwise kernel (2.6 has one for 3x3 only). */
static gboolean
dw_wgrad_ours(Cpu *c, guint v, const_dnnl_primitive_desc_t pd)
{
  CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  guint in_c = c->nodes[x->in[0]].n->shape.c;
  if (a->bias || a->groups != in_c || a->out_channels != in_c || in_c == 1)
    return FALSE;
  const char *impl = NULL;
  dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
  return impl == NULL || !g_str_has_prefix(impl, "jit_dw");
}

/* Our depthwise weight gradient (cpu-kernels.c) in the block layout that
 * fits the channels, into goihw and from there into the stored layout. */
static gboolean
plan_dw_wgrad(Cpu *c, guint v, Param *w, GArray *tmps, GError **error)
{
  CNode *x = &c->nodes[v];
  dnnl_memory_desc_t want_src, want_dst;
  guint block = sieve__cpu_pick_block(x->n->shape.c, &want_src, c->options.batch, c->nodes[x->in[0]].n->shape);
  sieve__cpu_pick_block(x->n->shape.c, &want_dst, c->options.batch, x->n->shape);
  int sslot, dslot;
  if (!bwd_in(c, v, &x->src_want, x->src_slot, &want_src, &sslot, tmps, error) ||
      !bwd_in(c, v, &x->md, x->diff, &want_dst, &dslot, tmps, error))
    return FALSE;
  gboolean direct = sieve__cpu_md_equal(&w->plain, &w->md);
  int gslot = direct ? w->grad : sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&w->plain), FALSE);
  Step *s = sieve__cpu_step_push(c, STEP_DW_WGRAD, v, c->bwd, NULL);
  s->src = dslot;
  s->aux = sslot;
  s->dst = gslot;
  s->block = block;
  release_all(c, tmps);
  if (!direct) {
    if (!sieve__cpu_push_reorder(c, v, c->bwd, NULL, &w->plain, gslot, &w->md, w->grad, FALSE, error))
      return FALSE;
    sieve__cpu_slot_release(c, gslot);
  }
  return TRUE;
}

static gboolean
bwd_conv_like(Cpu *c, guint v, gboolean linear, GError **error)
{
  CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  Param *w = sieve__cpu_param_of(c, v, 0);
  dnnl_memory_desc_t bias;
  sieve__cpu_md_1d(&bias, a->out_channels);
  guint u = x->in[0];
  g_autoptr(GArray) tmps = g_array_new(FALSE, FALSE, sizeof(int));
  if (wants_grad(c, u)) {
    dnnl_primitive_desc_t pd;
    if (!conv_bwd_desc(c, v, linear, FALSE, &pd, error))
      return FALSE;
    dnnl_memory_desc_t dsrc = *dnnl_primitive_desc_query_md(pd, dnnl_query_diff_src_md, 0);
    dnnl_memory_desc_t wmd = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_memory_desc_t ddst = *dnnl_primitive_desc_query_md(pd, dnnl_query_diff_dst_md, 0);
    int wslot, dslot;
    gboolean ok = bwd_in(c, v, &w->md, w->value, &wmd, &wslot, tmps, error) &&
                  bwd_in(c, v, &x->md, x->diff, &ddst, &dslot, tmps, error);
    int dst = ok ? contrib_begin(c, u, &dsrc) : -1;
    Step *s = sieve__cpu_step_push(c, STEP_PRIM, v, c->bwd, NULL);
    ok = ok && sieve__cpu_prim_from_pd(c, s, pd, "backward data", error);
    dnnl_primitive_desc_destroy(pd);
    if (!ok)
      return FALSE;
    sieve__cpu_step_arg(s, DNNL_ARG_DIFF_DST, &ddst, dslot);
    sieve__cpu_step_arg(s, DNNL_ARG_WEIGHTS, &wmd, wslot);
    sieve__cpu_step_arg(s, DNNL_ARG_DIFF_SRC, &dsrc, dst);
    release_all(c, tmps);
    if (!contrib_end(c, v, u, &dsrc, dst, error))
      return FALSE;
  }
  /* From here on, steps that only the weight gradient needs. */
  guint first = c->bwd->len;
  dnnl_primitive_desc_t pd;
  if (!conv_bwd_desc(c, v, linear, TRUE, &pd, error))
    return FALSE;
  if (!linear && dw_wgrad_ours(c, v, pd)) {
    dnnl_primitive_desc_destroy(pd);
    if (!plan_dw_wgrad(c, v, w, tmps, error))
      return FALSE;
    for (guint i = first; i < c->bwd->len; i++)
      ((Step *)c->steps->pdata[g_array_index(c->bwd, guint, i)])->param_only = TRUE;
    return TRUE;
  }
  dnnl_memory_desc_t src = *dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
  dnnl_memory_desc_t dwei = *dnnl_primitive_desc_query_md(pd, dnnl_query_diff_weights_md, 0);
  dnnl_memory_desc_t ddst = *dnnl_primitive_desc_query_md(pd, dnnl_query_diff_dst_md, 0);
  int sslot, dslot;
  gboolean ok = bwd_in(c, v, &x->src_want, x->src_slot, &src, &sslot, tmps, error) &&
                bwd_in(c, v, &x->md, x->diff, &ddst, &dslot, tmps, error);
  gboolean direct = sieve__cpu_md_equal(&dwei, &w->md);
  int gslot = direct ? w->grad : sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&dwei), FALSE);
  Step *s = sieve__cpu_step_push(c, STEP_PRIM, v, c->bwd, NULL);
  ok = ok && sieve__cpu_prim_from_pd(c, s, pd, "backward weights", error);
  dnnl_primitive_desc_destroy(pd);
  if (!ok)
    return FALSE;
  sieve__cpu_step_arg(s, DNNL_ARG_SRC, &src, sslot);
  sieve__cpu_step_arg(s, DNNL_ARG_DIFF_DST, &ddst, dslot);
  sieve__cpu_step_arg(s, DNNL_ARG_DIFF_WEIGHTS, &dwei, gslot);
  if (a->bias)
    sieve__cpu_step_arg(s, DNNL_ARG_DIFF_BIAS, &bias, sieve__cpu_param_of(c, v, 1)->grad);
  release_all(c, tmps);
  if (!direct) {
    if (!sieve__cpu_push_reorder(c, v, c->bwd, NULL, &dwei, gslot, &w->md, w->grad, FALSE, error))
      return FALSE;
    sieve__cpu_slot_release(c, gslot);
  }
  for (guint i = first; i < c->bwd->len; i++)
    ((Step *)c->steps->pdata[g_array_index(c->bwd, guint, i)])->param_only = TRUE;
  return TRUE;
}

/* A batch norm's backward step (fuse: with its ReLU, whose workspace it
 * reads) from x->diff into dst. */
static gboolean
push_bn_bwd(Cpu *c, guint v, gboolean fuse, int dst, StepWhen when, GError **error)
{
  CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  guint u = x->in[0];
  dnnl_memory_desc_t st;
  sieve__cpu_md_1d(&st, x->n->shape.c);
  unsigned flags = (a->affine ? (dnnl_use_scale | dnnl_use_shift) : 0) | (fuse ? dnnl_fuse_norm_relu : 0);
  dnnl_batch_normalization_desc_t d;
  TRY(dnnl_batch_normalization_backward_desc_init(&d, a->affine ? dnnl_backward : dnnl_backward_data, &x->md, &x->md,
                                                  (float)a->eps, flags),
      "batch norm backward descriptor for %s", sieve__cpu_node_desc(c, v));
  dnnl_primitive_desc_t pd;
  if (!sieve__cpu_pd_create(c, v, &pd, &d, fuse || x->fused < 0 ? x->fwd_pd : x->plain_pd, "batch norm backward",
                            error))
    return FALSE;
  Step *s = sieve__cpu_step_push(c, STEP_PRIM, v, c->bwd, NULL);
  s->when = when;
  gboolean ok = sieve__cpu_prim_from_pd(c, s, pd, "batch norm backward", error);
  dnnl_primitive_desc_destroy(pd);
  if (!ok)
    return FALSE;
  sieve__cpu_step_arg(s, DNNL_ARG_SRC, &x->md, c->nodes[u].out);
  sieve__cpu_step_arg(s, DNNL_ARG_MEAN, &st, x->mean);
  sieve__cpu_step_arg(s, DNNL_ARG_VARIANCE, &st, x->var);
  sieve__cpu_step_arg(s, DNNL_ARG_DIFF_DST, &x->md, x->diff);
  sieve__cpu_step_arg(s, DNNL_ARG_DIFF_SRC, &x->md, dst);
  if (fuse)
    sieve__cpu_step_arg(s, DNNL_ARG_WORKSPACE, &x->ws_md, x->ws);
  if (a->affine) {
    sieve__cpu_step_arg(s, DNNL_ARG_SCALE, &st, sieve__cpu_param_of(c, v, 0)->value);
    sieve__cpu_step_arg(s, DNNL_ARG_SHIFT, &st, sieve__cpu_param_of(c, v, 1)->value);
    sieve__cpu_step_arg(s, DNNL_ARG_DIFF_SCALE, &st, sieve__cpu_param_of(c, v, 0)->grad);
    sieve__cpu_step_arg(s, DNNL_ARG_DIFF_SHIFT, &st, sieve__cpu_param_of(c, v, 1)->grad);
  }
  return TRUE;
}

static gboolean
bwd_bn(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  guint u = x->in[0];
  gboolean need_src = wants_grad(c, u);
  if (!need_src && !x->n->attrs.affine)
    return TRUE;
  /* oneDNN always writes diff_src; without a reader it goes to scratch. */
  int dst = need_src ? contrib_begin(c, u, &x->md) : sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&x->md), FALSE);
  /* With the ReLU fused in, x->diff is the ReLU's output gradient, which
   * frozen activations have masked in place (bwd_eltwise). */
  if (x->fused >= 0 ? !push_bn_bwd(c, v, TRUE, dst, WHEN_UNFROZEN, error) ||
                          !push_bn_bwd(c, v, FALSE, dst, WHEN_FROZEN, error)
                    : !push_bn_bwd(c, v, FALSE, dst, WHEN_ALWAYS, error))
    return FALSE;
  if (!need_src) {
    sieve__cpu_slot_release(c, dst);
    return TRUE;
  }
  return contrib_end(c, v, u, &x->md, dst, error);
}

static gboolean
bwd_eltwise(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  guint u = x->in[0];
  if (!wants_grad(c, u))
    return TRUE;
  if (x->fused >= 0) {
    /* Fused into its batch norm (cpu-forward.c): the gradient passes on
     * as it is, which the batch norm's backward masks with the ReLU's
     * workspace; frozen activations mask it here, in place. */
    Step *s = sieve__cpu_step_push(c, STEP_RELU_MASK, v, c->bwd, NULL);
    s->when = WHEN_FROZEN;
    s->src = s->dst = x->diff;
    s->n = sieve__cpu_md_bytes(&x->md) / sizeof(float);
    c->nodes[u].diff = x->diff;
    x->diff = -1; /* now the batch norm's, released after its step */
    return TRUE;
  }
  if (x->n->attrs.activation == SIEVE_ACT_HARD_SIGMOID) { /* our own loop, as forward (cpu-forward.c) */
    int dst = contrib_begin(c, u, &x->md);
    Step *s = sieve__cpu_step_push(c, STEP_HSIG_BWD, v, c->bwd, NULL);
    s->src = x->diff;
    s->aux = x->src_slot;
    s->dst = dst;
    s->n = sieve__cpu_md_bytes(&x->md) / sizeof(float);
    return contrib_end(c, v, u, &x->md, dst, error);
  }
  float alpha, beta;
  gboolean use_dst;
  dnnl_alg_kind_t alg = sieve__cpu_eltwise_alg(&x->n->attrs, &alpha, &beta, &use_dst);
  dnnl_eltwise_desc_t d;
  TRY(dnnl_eltwise_backward_desc_init(&d, alg, &x->md, &x->md, alpha, beta), "activation backward descriptor for %s",
      sieve__cpu_node_desc(c, v));
  dnnl_primitive_desc_t pd;
  if (!sieve__cpu_pd_create(c, v, &pd, &d, x->fwd_pd, "activation backward", error))
    return FALSE;
  int dst = contrib_begin(c, u, &x->md);
  Step *s = sieve__cpu_step_push(c, STEP_PRIM, v, c->bwd, NULL);
  gboolean ok = sieve__cpu_prim_from_pd(c, s, pd, "activation backward", error);
  dnnl_primitive_desc_destroy(pd);
  if (!ok)
    return FALSE;
  if (use_dst)
    sieve__cpu_step_arg(s, DNNL_ARG_DST, &x->md, x->out);
  else
    sieve__cpu_step_arg(s, DNNL_ARG_SRC, &x->md, c->nodes[u].out);
  sieve__cpu_step_arg(s, DNNL_ARG_DIFF_DST, &x->md, x->diff);
  sieve__cpu_step_arg(s, DNNL_ARG_DIFF_SRC, &x->md, dst);
  s->relu = sieve__cpu_is_relu(x->n);
  s->src = x->diff;
  s->dst = dst;
  s->n = sieve__cpu_md_bytes(&x->md) / sizeof(float);
  return contrib_end(c, v, u, &x->md, dst, error);
}

static gboolean
bwd_pool(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  guint u = x->in[0];
  if (!wants_grad(c, u))
    return TRUE;
  gboolean global = x->n->kind == SIEVE_OP_GLOBAL_AVG_POOL;
  SieveShape is = c->nodes[u].n->shape;
  dnnl_memory_desc_t src;
  if (!sieve__cpu_md_as4(c, u, &src, error))
    return FALSE;
  if (x->ws_ours) { /* our max pool (cpu-forward.c): the gradient in the input's layout */
    int dst = contrib_begin(c, u, &src);
    Step *st = sieve__cpu_step_push(c, STEP_MAXPOOL_BWD, v, c->bwd, NULL);
    st->src = x->diff;
    st->dst = dst;
    st->aux = x->ws;
    st->block = sieve__cpu_md_block(&src);
    return contrib_end(c, v, u, &src, dst, error);
  }
  dnnl_dims_t k = {global ? is.h : a->kernel[0], global ? is.w : a->kernel[1]};
  dnnl_dims_t s = {global ? 1 : a->stride[0], global ? 1 : a->stride[1]};
  dnnl_dims_t p = {global ? 0 : a->pad[0], global ? 0 : a->pad[1]};
  dnnl_dims_t dil = {0, 0};
  gboolean max = !global && a->pool == SIEVE_POOL_MAX;
  dnnl_pooling_v2_desc_t d;
  TRY(dnnl_pooling_v2_backward_desc_init(&d, max ? dnnl_pooling_max : dnnl_pooling_avg_exclude_padding, &src, &x->md,
                                         s, k, dil, p, p),
      "pooling backward descriptor for %s", sieve__cpu_node_desc(c, v));
  dnnl_primitive_desc_t pd;
  if (!sieve__cpu_pd_create(c, v, &pd, &d, x->fwd_pd, "pooling backward", error))
    return FALSE;
  int dst = contrib_begin(c, u, &src);
  Step *st = sieve__cpu_step_push(c, STEP_PRIM, v, c->bwd, NULL);
  gboolean ok = sieve__cpu_prim_from_pd(c, st, pd, "pooling backward", error);
  dnnl_primitive_desc_destroy(pd);
  if (!ok)
    return FALSE;
  sieve__cpu_step_arg(st, DNNL_ARG_DIFF_DST, &x->md, x->diff);
  sieve__cpu_step_arg(st, DNNL_ARG_DIFF_SRC, &src, dst);
  if (x->ws >= 0)
    sieve__cpu_step_arg(st, DNNL_ARG_WORKSPACE, &x->ws_md, x->ws);
  return contrib_end(c, v, u, &src, dst, error);
}

static gboolean
bwd_sum(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  for (guint k = 0; k < x->n_in; k++) {
    guint u = x->in[k];
    if (!wants_grad(c, u))
      continue;
    int dst = contrib_begin(c, u, &x->md);
    Step *s = sieve__cpu_step_push(c, STEP_COPY, v, c->bwd, NULL);
    s->dst = dst;
    s->src = x->diff;
    s->n = sieve__cpu_md_bytes(&x->md) / sizeof(float);
    if (!contrib_end(c, v, u, &x->md, dst, error))
      return FALSE;
  }
  return TRUE;
}

static gboolean
bwd_concat(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  dnnl_dim_t off = 0;
  for (guint k = 0; k < x->n_in; k++) {
    guint u = x->in[k];
    SieveShape s = c->nodes[u].n->shape;
    dnnl_dims_t dims = {c->options.batch, s.c, s.h, s.w}, offs = {0, off, 0, 0};
    off += s.c;
    if (!wants_grad(c, u))
      continue;
    dnnl_memory_desc_t sub, want;
    if (!sieve__cpu_md_as4(c, u, &want, error))
      return FALSE;
    int dst = contrib_begin(c, u, &want);
    guint from = sieve__cpu_md_block(&x->md), to = sieve__cpu_md_block(&want);
    if (from > 1 && to != 0) {
      /* A blocked concatenation (cpu-forward.c): our copy, which takes
       * channels at any offset; the input's block padding is zeroed, as
       * oneDNN's kernels expect of a gradient. */
      Step *st = sieve__cpu_step_push(c, STEP_CHANNELS, v, c->bwd, NULL);
      st->src = x->diff;
      st->dst = dst;
      st->n = (size_t)s.c;
      st->hw = (gsize)s.h * s.w;
      st->from = (ChanView){from, (guint)x->md.padded_dims[1], (guint)offs[1]};
      st->to = (ChanView){to, (guint)want.padded_dims[1], 0};
      st->zero_pad = TRUE;
    } else {
      TRY(dnnl_memory_desc_init_submemory(&sub, &x->md, dims, offs), "concat slice for %s",
          sieve__cpu_node_desc(c, v));
      if (!sieve__cpu_push_reorder(c, v, c->bwd, NULL, &sub, x->diff, &want, dst, FALSE, error))
        return FALSE;
    }
    if (!contrib_end(c, v, u, &want, dst, error))
      return FALSE;
  }
  return TRUE;
}

/* A binary multiply step dst = a * b (b may broadcast) of node v. */
static gboolean
push_mul(Cpu *c, guint v, const dnnl_memory_desc_t *amd, int a, const dnnl_memory_desc_t *bmd, int b,
         const dnnl_memory_desc_t *dmd, int dst, GError **error)
{
  dnnl_binary_desc_t d;
  TRY(dnnl_binary_desc_init(&d, dnnl_binary_mul, amd, bmd, dmd), "multiply backward descriptor for %s",
      sieve__cpu_node_desc(c, v));
  dnnl_primitive_desc_t pd;
  if (!sieve__cpu_pd_create(c, v, &pd, &d, NULL, "multiply backward", error))
    return FALSE;
  Step *s = sieve__cpu_step_push(c, STEP_PRIM, v, c->bwd, NULL);
  gboolean ok = sieve__cpu_prim_from_pd(c, s, pd, "multiply backward", error);
  dnnl_primitive_desc_destroy(pd);
  if (!ok)
    return FALSE;
  sieve__cpu_step_arg(s, DNNL_ARG_SRC_0, amd, a);
  sieve__cpu_step_arg(s, DNNL_ARG_SRC_1, bmd, b);
  sieve__cpu_step_arg(s, DNNL_ARG_DST, dmd, dst);
  return TRUE;
}

/* y = x * gate: dx = dy * gate; dgate = dy * x, summed over the height and
 * width where the gate broadcast. */
static gboolean
bwd_mul(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  guint u0 = x->in[0], u1 = x->in[1];
  if (wants_grad(c, u0)) {
    int dst = contrib_begin(c, u0, &x->md);
    if (!push_mul(c, v, &x->md, x->diff, &x->gate_md, x->gate_slot, &x->md, dst, error) ||
        !contrib_end(c, v, u0, &x->md, dst, error))
      return FALSE;
  }
  if (!wants_grad(c, u1))
    return TRUE;
  if (sieve__cpu_md_equal(&x->gate_md, &x->md)) { /* a gate of x's full shape */
    int dst = contrib_begin(c, u1, &x->md);
    return push_mul(c, v, &x->md, x->diff, &x->src_want, x->src_slot, &x->md, dst, error) &&
           contrib_end(c, v, u1, &x->md, dst, error);
  }
  /* dgate = sum over the pixels of dy * x, by our loop (cpu-kernels.c) in a
   * layout it reads, into plain [B, C]. */
  g_autoptr(GArray) tmps = g_array_new(FALSE, FALSE, sizeof(int));
  dnnl_memory_desc_t want, plain;
  guint block = sieve__cpu_pick_block(x->n->shape.c, &want, c->options.batch, x->n->shape);
  int dslot, xslot;
  if (!bwd_in(c, v, &x->md, x->diff, &want, &dslot, tmps, error) ||
      !bwd_in(c, v, &x->src_want, x->src_slot, &want, &xslot, tmps, error))
    return FALSE;
  sieve__cpu_md_plain(&plain, c->options.batch, c->nodes[u1].n->shape);
  int dst = contrib_begin(c, u1, &plain);
  Step *s = sieve__cpu_step_push(c, STEP_GATE_GRAD, v, c->bwd, NULL);
  s->src = dslot;
  s->aux = xslot;
  s->dst = dst;
  s->block = block;
  release_all(c, tmps);
  return contrib_end(c, v, u1, &plain, dst, error);
}

/* A crop's input gradient: zero, with the output's gradient written into
 * the window. */
static gboolean
bwd_crop(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  guint u = x->in[0];
  if (!wants_grad(c, u))
    return TRUE;
  dnnl_memory_desc_t have, window;
  if (!sieve__cpu_md_as4(c, u, &have, error) || !sieve__cpu_md_window(c, v, &have, &window, error))
    return FALSE;
  int dst = contrib_begin(c, u, &have);
  Step *s = sieve__cpu_step_push(c, STEP_ZERO, v, c->bwd, NULL);
  s->dst = dst;
  s->n = sieve__cpu_md_bytes(&have) / sizeof(float);
  if (!sieve__cpu_push_reorder(c, v, c->bwd, NULL, &x->md, x->diff, &window, dst, FALSE, error))
    return FALSE;
  return contrib_end(c, v, u, &have, dst, error);
}

static gboolean
bwd_loss(Cpu *c, guint v, GError **error)
{
  CNode *x = &c->nodes[v];
  guint u = x->in[0];
  if (!wants_grad(c, u))
    return TRUE;
  int dst = contrib_begin(c, u, &x->src_want);
  Step *s = sieve__cpu_step_push(c, STEP_LOSS_BWD, v, c->bwd, NULL);
  s->dst = dst;
  return contrib_end(c, v, u, &x->src_want, dst, error);
}

gboolean
sieve__cpu_plan_backward(Cpu *c, GError **error)
{
  guint out = sieve__cpu_root(c, c->output);
  CNode *o = &c->nodes[out];
  if (o->n->kind == SIEVE_OP_SOFTMAX_CE && o->role == ROLE_REAL) {
    o->diff = -2; /* seeded by the loss step itself */
  } else if (o->role == ROLE_REAL) {
    c->out_grad = sieve__cpu_slot_new(c, sieve__cpu_md_bytes(&o->md), TRUE);
    o->diff = c->out_grad;
  }
  for (guint v = c->n_nodes; v-- > 0;) {
    CNode *x = &c->nodes[v];
    if (x->role != ROLE_REAL || x->diff == -1 || x->n->kind == SIEVE_OP_INPUT)
      continue;
    gboolean ok;
    switch (x->n->kind) {
    case SIEVE_OP_CONV2D:
      ok = bwd_conv_like(c, v, FALSE, error);
      break;
    case SIEVE_OP_LINEAR:
      ok = bwd_conv_like(c, v, TRUE, error);
      break;
    case SIEVE_OP_BATCH_NORM:
      ok = bwd_bn(c, v, error);
      break;
    case SIEVE_OP_ACTIVATION:
      ok = bwd_eltwise(c, v, error);
      break;
    case SIEVE_OP_POOL:
    case SIEVE_OP_GLOBAL_AVG_POOL:
      ok = bwd_pool(c, v, error);
      break;
    case SIEVE_OP_ADD:
      ok = bwd_sum(c, v, error);
      break;
    case SIEVE_OP_CONCAT:
      ok = bwd_concat(c, v, error);
      break;
    case SIEVE_OP_MUL:
      ok = bwd_mul(c, v, error);
      break;
    case SIEVE_OP_SOFTMAX_CE:
      ok = bwd_loss(c, v, error);
      break;
    case SIEVE_OP_CROP:
      ok = bwd_crop(c, v, error);
      break;
    default:
      ok = TRUE;
    }
    if (!ok)
      return FALSE;
    /* A kept gradient stays in its buffer until the next backward. */
    if (x->diff >= 0 && x->diff != c->out_grad && !sieve__cpu_kept(c, v))
      sieve__cpu_slot_release(c, x->diff);
  }
  return TRUE;
}
