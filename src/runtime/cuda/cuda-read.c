/* What a CUDA runtime gives back between passes: node outputs and
 * gradients, signs and channel dots (computed on the host from a copy:
 * the proxies read a few tensors once), parameters, velocities, running
 * statistics, frozen ReLUs. */
#include <string.h>

#include "runtime/cuda/cuda-private.h"

static gboolean
download(Cu *c, void *dst, const void *src, gsize bytes, GError **error)
{
  CU_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, c->stream), "reading from the GPU");
  return sieve__cuda_sync(c, error);
}

static gboolean
upload_now(Cu *c, void *dst, const void *src, gsize bytes, GError **error)
{
  /* From pageable memory cudaMemcpy returns once src may be reused. */
  if (!sieve__cuda_sync(c, error))
    return FALSE;
  CU_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "writing to the GPU");
  return TRUE;
}

static gboolean
read_node(Cu *c, guint node, gboolean diff, float *out, GError **error)
{
  if (node >= c->n_nodes || c->nodes[node].role == ROLE_DEAD) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "node %u is not part of the compiled graph", node);
    return FALSE;
  }
  guint r = c->nodes[node].root;
  CNode *x = &c->nodes[r];
  gsize n = x->elems;
  if (x->role == ROLE_ZERO || x->role == ROLE_ZERO_BUF) {
    if (diff) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "%s is a zero the runtime folds away: no gradient is computed for it",
                  sieve__cuda_node_desc(c, node));
      return FALSE;
    }
    memset(out, 0, n * sizeof(float));
    return TRUE;
  }
  if (x->n->kind == SIEVE_OP_SOFTMAX_CE) {
    if (diff) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "the loss's gradient is 1: there is nothing to read");
      return FALSE;
    }
    float v;
    if (!download(c, &v, cu_ptr(c, x->out), sizeof v, error))
      return FALSE;
    for (guint b = 0; b < c->options.batch; b++)
      out[b] = v;
    return TRUE;
  }
  if (!x->kept) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
                "%s was not kept after its last use (compile with keep_all to read any node)",
                sieve__cuda_node_desc(c, node));
    return FALSE;
  }
  if (diff && (x->grad < 0 || !c->written[r])) {
    memset(out, 0, n * sizeof(float)); /* no gradient reaches it */
    return TRUE;
  }
  return download(c, out, cu_ptr(c, diff ? x->grad : x->out), n * sizeof(float), error);
}

gboolean
sieve__cuda_read(gpointer impl, guint node, float *out, GError **error)
{
  return read_node(impl, node, FALSE, out, error);
}

gboolean
sieve__cuda_read_grad(gpointer impl, guint node, float *out, GError **error)
{
  return read_node(impl, node, TRUE, out, error);
}

gboolean
sieve__cuda_read_input_grad(gpointer impl, float *out, GError **error)
{
  Cu *c = impl;
  CNode *x = &c->nodes[c->input];
  if (x->grad < 0 || !c->written[c->input]) {
    memset(out, 0, x->elems * sizeof(float));
    return TRUE;
  }
  return download(c, out, cu_ptr(c, x->grad), x->elems * sizeof(float), error);
}

/* Bits in plain NCHW order of each example. */
gboolean
sieve__cuda_read_signs(gpointer impl, guint node, guint64 *codes, GError **error)
{
  Cu *c = impl;
  CNode *x = &c->nodes[node < c->n_nodes ? c->nodes[node].root : 0];
  gsize per = (gsize)x->n->shape.c * x->n->shape.h * x->n->shape.w, words = (per + 63) / 64;
  g_autofree float *v = g_new(float, per * c->options.batch);
  if (!read_node(c, node, FALSE, v, error))
    return FALSE;
  for (guint b = 0; b < c->options.batch; b++)
    for (gsize w = 0; w < words; w++) {
      guint64 word = 0;
      for (gsize k = w * 64; k < MIN(per, w * 64 + 64); k++)
        word |= (guint64)(v[b * per + k] > 0) << (k - w * 64);
      codes[b * words + w] = word;
    }
  return TRUE;
}

gboolean
sieve__cuda_read_channel_dots(gpointer impl, guint node, double *dots, GError **error)
{
  Cu *c = impl;
  CNode *x = &c->nodes[node < c->n_nodes ? c->nodes[node].root : 0];
  gsize hw = (gsize)x->n->shape.h * x->n->shape.w, C = x->n->shape.c, n = c->options.batch * C * hw;
  g_autofree float *v = g_new(float, n);
  g_autofree float *g = g_new(float, n);
  if (!read_node(c, node, FALSE, v, error) || !read_node(c, node, TRUE, g, error))
    return FALSE;
  for (gsize p = 0; p < c->options.batch * C; p++) {
    double s = 0;
    for (gsize k = 0; k < hw; k++)
      s += (double)v[p * hw + k] * g[p * hw + k];
    dots[p] = s;
  }
  return TRUE;
}

static CNode *
bn_node(Cu *c, guint node, GError **error)
{
  if (node >= c->n_nodes || c->nodes[node].role != ROLE_REAL || c->nodes[node].n->kind != SIEVE_OP_BATCH_NORM) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "node %u is not a batch norm of the compiled graph", node);
    return NULL;
  }
  return &c->nodes[node];
}

gboolean
sieve__cuda_get_running(gpointer impl, guint node, float *mean, float *var, GError **error)
{
  Cu *c = impl;
  CNode *x = bn_node(c, node, error);
  if (!x)
    return FALSE;
  gsize bytes = x->n->shape.c * sizeof(float);
  return (!mean || download(c, mean, cu_ptr(c, x->rmean), bytes, error)) &&
         (!var || download(c, var, cu_ptr(c, x->rvar), bytes, error));
}

gboolean
sieve__cuda_set_running(gpointer impl, guint node, const float *mean, const float *var, GError **error)
{
  Cu *c = impl;
  CNode *x = bn_node(c, node, error);
  if (!x)
    return FALSE;
  gsize bytes = x->n->shape.c * sizeof(float);
  return (!mean || upload_now(c, cu_ptr(c, x->rmean), mean, bytes, error)) &&
         (!var || upload_now(c, cu_ptr(c, x->rvar), var, bytes, error));
}

gboolean
sieve__cuda_freeze(gpointer impl, gboolean freeze, GError **error)
{
  Cu *c = impl;
  if (!freeze) {
    c->frozen = FALSE;
    return TRUE;
  }
  for (guint k = 0; k < c->n_order; k++) {
    CNode *x = &c->nodes[c->order[k]];
    if (x->n->kind != SIEVE_OP_ACTIVATION ||
        (x->n->attrs.activation != SIEVE_ACT_RELU && x->n->attrs.activation != SIEVE_ACT_LEAKY_RELU))
      continue;
    if (x->mask == NULL)
      CU_TRY(cudaMalloc((void **)&x->mask, MAX(x->elems, 1)), "a frozen ReLU's mask (%zu bytes)", x->elems);
    sieve__cu_positive_mask(c->stream, cu_ptr(c, x->out), x->mask, x->elems);
  }
  CU_TRY(cudaPeekAtLastError(), "freezing");
  c->frozen = TRUE;
  return sieve__cuda_sync(c, error);
}

/* ---- parameters ---------------------------------------------------------- */

guint
sieve__cuda_n_params(gpointer impl)
{
  return ((Cu *)impl)->params->len;
}

const SieveParamInfo *
sieve__cuda_param_info(gpointer impl, guint i)
{
  return &g_array_index(((Cu *)impl)->params, Param, i).info;
}

static float *
param_at(Cu *c, gint array, guint i, gsize *bytes)
{
  Param *p = &g_array_index(c->params, Param, i);
  *bytes = p->info.size * sizeof(float);
  return cu_ptr(c, array) + p->offset;
}

gboolean
sieve__cuda_get_param(gpointer impl, guint i, float *out, GError **error)
{
  gsize bytes;
  float *src = param_at(impl, ((Cu *)impl)->values, i, &bytes);
  return download(impl, out, src, bytes, error);
}

gboolean
sieve__cuda_set_param(gpointer impl, guint i, const float *values, GError **error)
{
  gsize bytes;
  float *dst = param_at(impl, ((Cu *)impl)->values, i, &bytes);
  return upload_now(impl, dst, values, bytes, error);
}

gboolean
sieve__cuda_get_grad(gpointer impl, guint i, float *out, GError **error)
{
  gsize bytes;
  float *src = param_at(impl, ((Cu *)impl)->grads, i, &bytes);
  return download(impl, out, src, bytes, error);
}

gboolean
sieve__cuda_get_velocity(gpointer impl, guint i, float *out, GError **error)
{
  gsize bytes;
  float *src = param_at(impl, ((Cu *)impl)->velocity, i, &bytes);
  return download(impl, out, src, bytes, error);
}

gboolean
sieve__cuda_set_velocity(gpointer impl, guint i, const float *values, GError **error)
{
  gsize bytes;
  float *dst = param_at(impl, ((Cu *)impl)->velocity, i, &bytes);
  return upload_now(impl, dst, values, bytes, error);
}
