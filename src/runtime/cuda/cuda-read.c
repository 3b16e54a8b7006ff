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

/* On the runtime's stream (a non-blocking one, which the legacy stream of
 * plain cudaMemcpy does not order), finished before it returns. */
static gboolean
upload_now(Cu *c, void *dst, const void *src, gsize bytes, GError **error)
{
  CU_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, c->stream), "writing to the GPU");
  return sieve__cuda_sync(c, error);
}

/* Where a node's output (or gradient) lives on the GPU, for a copy or a
 * reduction there; NULL with *zero (a folded zero, or a gradient nothing
 * wrote: it reads zeros) or with an error. */
static const float *
device_tensor(Cu *c, guint node, gboolean diff, gboolean *zero, GError **error)
{
  *zero = FALSE;
  if (node >= c->n_nodes || c->nodes[node].role == ROLE_DEAD) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "node %u is not part of the compiled graph", node);
    return NULL;
  }
  guint r = c->nodes[node].root;
  CNode *x = &c->nodes[r];
  if (x->role == ROLE_ZERO || x->role == ROLE_ZERO_BUF) {
    if (diff) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "%s is a zero the runtime folds away: no gradient is computed for it",
                  sieve__cuda_node_desc(c, node));
      return NULL;
    }
    *zero = TRUE;
    return NULL;
  }
  if (!x->kept || x->n->kind == SIEVE_OP_SOFTMAX_CE) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
                "%s was not kept after its last use (compile with keep_all to read any node)",
                sieve__cuda_node_desc(c, node));
    return NULL;
  }
  if (diff && (x->grad < 0 || !c->written[r])) {
    *zero = TRUE;
    return NULL;
  }
  return cu_ptr(c, diff ? x->grad : x->out);
}

/* A node's output or gradient, as sieve/runtime.h says which are readable
 * and which read zeros. */
static gboolean
read_node(Cu *c, guint node, gboolean diff, float *out, GError **error)
{
  CNode *x = node < c->n_nodes ? &c->nodes[c->nodes[node].root] : NULL;
  if (x && x->role == ROLE_REAL && x->n->kind == SIEVE_OP_SOFTMAX_CE) {
    if (diff) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "the loss's gradient is 1: there is nothing to read");
      return FALSE;
    }
    /* one value stored (the batch mean), given to every example */
    float v;
    if (!download(c, &v, cu_ptr(c, x->out), sizeof v, error))
      return FALSE;
    for (guint b = 0; b < c->options.batch; b++)
      out[b] = v;
    return TRUE;
  }
  gboolean zero;
  const float *src = device_tensor(c, node, diff, &zero, error);
  if (zero) {
    memset(out, 0, x->elems * sizeof(float));
    return TRUE;
  }
  return src && download(c, out, src, x->elems * sizeof(float), error);
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

/* A scratch allocation of the runtime's own for reductions that come down. */
static gpointer
reduce_space(Cu *c, gsize bytes, GError **error)
{
  if (bytes > c->reduce_bytes) {
    sieve__cuda_release(c->lane, c->reduce);
    c->reduce = NULL;
    c->reduce_bytes = 0;
    if (!sieve__cuda_alloc(c->lane, bytes, &c->reduce)) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "out of GPU memory: %zu bytes for a read", bytes);
      return NULL;
    }
    c->reduce_bytes = bytes;
  }
  return c->reduce;
}

/* Bits in plain NCHW order of each example, packed on the GPU. */
gboolean
sieve__cuda_read_signs(gpointer impl, guint node, guint64 *codes, GError **error)
{
  Cu *c = impl;
  gboolean zero;
  const float *src = device_tensor(c, node, FALSE, &zero, error);
  CNode *x = &c->nodes[c->nodes[MIN(node, c->n_nodes - 1)].root];
  gsize per = (gsize)x->n->shape.c * x->n->shape.h * x->n->shape.w, words = (per + 63) / 64;
  gsize bytes = c->options.batch * words * sizeof(guint64);
  if (zero) {
    memset(codes, 0, bytes);
    return TRUE;
  }
  if (!src)
    return FALSE;
  gpointer out = reduce_space(c, bytes, error);
  if (!out)
    return FALSE;
  sieve__cu_signs(c->stream, src, out, (int)c->options.batch, per);
  CU_TRY(cudaGetLastError(), "packing signs");
  return download(c, codes, out, bytes, error);
}

gboolean
sieve__cuda_read_channel_dots(gpointer impl, guint node, double *dots, GError **error)
{
  Cu *c = impl;
  gboolean zero_y, zero_g;
  const float *y = device_tensor(c, node, FALSE, &zero_y, error);
  if (!y && !zero_y)
    return FALSE;
  const float *g = device_tensor(c, node, TRUE, &zero_g, error);
  if (!g && !zero_g)
    return FALSE;
  CNode *x = &c->nodes[c->nodes[node].root];
  gsize nc = (gsize)c->options.batch * x->n->shape.c, hw = (gsize)x->n->shape.h * x->n->shape.w;
  if (zero_y || zero_g) {
    memset(dots, 0, nc * sizeof(double));
    return TRUE;
  }
  gpointer out = reduce_space(c, nc * sizeof(double), error);
  if (!out)
    return FALSE;
  sieve__cu_channel_dots(c->stream, y, g, out, nc, hw);
  CU_TRY(cudaGetLastError(), "channel dots");
  return download(c, dots, out, nc * sizeof(double), error);
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
    if (!sieve__cuda_is_relu(x->n))
      continue;
    if (x->mask == NULL && !sieve__cuda_alloc(c->lane, x->elems, (void **)&x->mask)) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "out of GPU memory: a frozen ReLU's mask (%zu bytes)",
                  x->elems);
      return FALSE;
    }
    sieve__cu_positive_mask(c->stream, cu_ptr(c, x->out), x->mask, x->elems);
  }
  CU_TRY(cudaGetLastError(), "freezing");
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

void
sieve__cuda_mirror_drop(Cu *c)
{
  c->mirror_ok[MIRROR_VALUES] = c->mirror_ok[MIRROR_GRADS] = FALSE;
}

/* Parameter i's slice of the parameter or gradient array, from the host
 * copy (fetched whole when it is stale). */
static gboolean
mirrored(Cu *c, int which, guint i, float *out, GError **error)
{
  if (!c->mirror_ok[which]) {
    gsize n = MAX(c->n_param_floats, 1);
    if (c->mirror[which] == NULL)
      c->mirror[which] = g_new(float, n);
    if (!download(c, c->mirror[which], cu_ptr(c, which == MIRROR_VALUES ? c->values : c->grads), n * sizeof(float),
                  error))
      return FALSE;
    c->mirror_ok[which] = TRUE;
  }
  Param *p = &g_array_index(c->params, Param, i);
  memcpy(out, c->mirror[which] + p->offset, p->info.size * sizeof(float));
  return TRUE;
}

gboolean
sieve__cuda_get_param(gpointer impl, guint i, float *out, GError **error)
{
  return mirrored(impl, MIRROR_VALUES, i, out, error);
}

gboolean
sieve__cuda_set_param(gpointer impl, guint i, const float *values, GError **error)
{
  Cu *c = impl;
  gsize bytes;
  float *dst = param_at(c, c->values, i, &bytes);
  gboolean was = c->mirror_ok[MIRROR_VALUES];
  c->mirror_ok[MIRROR_VALUES] = FALSE;
  if (!upload_now(c, dst, values, bytes, error))
    return FALSE;
  /* A valid host copy stays valid with the same values written into it. */
  if (was) {
    memcpy(c->mirror[MIRROR_VALUES] + g_array_index(c->params, Param, i).offset, values, bytes);
    c->mirror_ok[MIRROR_VALUES] = TRUE;
  }
  return TRUE;
}

gboolean
sieve__cuda_get_grad(gpointer impl, guint i, float *out, GError **error)
{
  return mirrored(impl, MIRROR_GRADS, i, out, error);
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
