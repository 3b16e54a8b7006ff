/* What the proxies read from a CPU runtime after a pass: node outputs and
 * gradients in plain layout, packed signs, per-channel dot products of
 * activation and gradient, frozen ReLU masks and batch norm running
 * statistics. */
#include <immintrin.h>
#include <string.h>

#include "runtime/cpu/cpu-private.h"

static gboolean
read_node(Cpu *c, guint node, gboolean diff, float *out, GError **error)
{
  if (node >= c->n_nodes || c->nodes[node].role == ROLE_DEAD) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "node %u is not part of the compiled graph", node);
    return FALSE;
  }
  CNode *x = &c->nodes[sieve__cpu_root(c, node)];
  SieveShape s = x->n->shape;
  gsize n = (gsize)c->options.batch * s.c * s.h * s.w;
  if (x->role == ROLE_ZERO) {
    memset(out, 0, n * sizeof(float));
    return TRUE;
  }
  if (x->n->kind == SIEVE_OP_SOFTMAX_CE && !diff) {
    /* Its shape is 1x1x1 per example but one value is stored (the batch
     * mean): give it to every example rather than reorder mismatched dims. */
    for (guint b = 0; b < c->options.batch; b++)
      out[b] = sieve__cpu_slot_ptr(c, x->out)[0];
    return TRUE;
  }
  int slot = diff ? x->diff : x->out;
  if (slot < 0 || (!diff && x->released)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
                "%s was not kept after its last use (compile with keep_all to read any node)",
                sieve__cpu_node_desc(c, node));
    return FALSE;
  }
  dnnl_memory_desc_t plain;
  if (x->md.ndims == 2)
    dnnl_memory_desc_init_by_tag(&plain, 2, x->md.dims, dnnl_f32, dnnl_nc);
  else
    sieve__cpu_md_plain(&plain, c->options.batch, s);
  return sieve__cpu_transfer(c, &plain, out, &x->md, sieve__cpu_slot_ptr(c, slot), TRUE, error);
}

gboolean
sieve__cpu_read(gpointer impl, guint node, float *out, GError **error)
{
  return read_node(impl, node, FALSE, out, error);
}

/* Bits of x > 0, 64 elements to a word: AVX2 compares 8 floats at once
 * where the CPU has it (asked once), a plain loop elsewhere. */
__attribute__((target("avx2"))) static void
pack_signs_avx2(const float *x, gsize n, guint64 *out)
{
  gsize full = n / 64;
  __m256 zero = _mm256_setzero_ps();
  for (gsize w = 0; w < full; w++) {
    guint64 word = 0;
    for (int k = 0; k < 8; k++) {
      __m256 v = _mm256_loadu_ps(x + w * 64 + k * 8);
      word |= (guint64)(guint)_mm256_movemask_ps(_mm256_cmp_ps(v, zero, _CMP_GT_OQ)) << (8 * k);
    }
    out[w] = word;
  }
  if (full * 64 < n) {
    guint64 word = 0;
    for (gsize k = full * 64; k < n; k++)
      word |= (guint64)(x[k] > 0) << (k - full * 64);
    out[full] = word;
  }
}

static void
pack_signs_generic(const float *x, gsize n, guint64 *out)
{
  for (gsize w = 0; w * 64 < n; w++) {
    guint64 word = 0;
    for (gsize k = w * 64; k < MIN(n, w * 64 + 64); k++)
      word |= (guint64)(x[k] > 0) << (k - w * 64);
    out[w] = word;
  }
}

static void
pack_signs(const float *x, gsize n, guint64 *out)
{
  static int avx2 = -1;
  if (avx2 < 0) {
    __builtin_cpu_init();
    avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
  }
  if (avx2)
    pack_signs_avx2(x, n, out);
  else
    pack_signs_generic(x, n, out);
}

/* Whether md is a blocked layout from the buffer's start without padding:
 * every element stored once, nothing else stored, so that a loop over the
 * buffer sees exactly the tensor. */
static gboolean
md_dense(const dnnl_memory_desc_t *md)
{
  if (md->format_kind != dnnl_blocked || md->offset0 != 0)
    return FALSE;
  for (int d = 0; d < md->ndims; d++)
    if (md->padded_dims[d] != md->dims[d] || md->padded_offsets[d] != 0)
      return FALSE;
  return TRUE;
}

/* Whether a tensor stored as md holds each example's elements contiguously
 * (in some order of their own, the same for every example) with no
 * padding: then its signs pack straight from the buffer. */
static gboolean
examples_contiguous(const dnnl_memory_desc_t *md, gsize per_example)
{
  if (!md_dense(md) || md->format_desc.blocking.strides[0] != (dnnl_dim_t)per_example)
    return FALSE;
  for (int k = 0; k < md->format_desc.blocking.inner_nblks; k++)
    if (md->format_desc.blocking.inner_idxs[k] == 0)
      return FALSE;
  return TRUE;
}

gboolean
sieve__cpu_read_signs(gpointer impl, guint node, guint64 *codes, GError **error)
{
  Cpu *c = impl;
  if (node >= c->n_nodes || c->nodes[node].role == ROLE_DEAD) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "node %u is not part of the compiled graph", node);
    return FALSE;
  }
  CNode *x = &c->nodes[sieve__cpu_root(c, node)];
  SieveShape s = x->n->shape;
  gsize per = (gsize)s.c * s.h * s.w, words = (per + 63) / 64, batch = c->options.batch;
  if (x->n->kind == SIEVE_OP_SOFTMAX_CE) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "%s is a loss: it has no elements per example",
                sieve__cpu_node_desc(c, node));
    return FALSE;
  }
  if (x->role == ROLE_ZERO) {
    memset(codes, 0, batch * words * sizeof(guint64));
    return TRUE;
  }
  if (x->out < 0 || x->released) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
                "%s was not kept after its last use (compile with keep_all, or name it in keep)",
                sieve__cpu_node_desc(c, node));
    return FALSE;
  }
  if (examples_contiguous(&x->md, per)) {
    const float *p = sieve__cpu_slot_ptr(c, x->out);
    for (gsize b = 0; b < batch; b++)
      pack_signs(p + b * per, per, codes + b * words);
    return TRUE;
  }
  g_autofree float *plain = g_new(float, batch * per);
  if (!read_node(c, node, FALSE, plain, error))
    return FALSE;
  for (gsize b = 0; b < batch; b++)
    pack_signs(plain + b * per, per, codes + b * words);
  return TRUE;
}

gboolean
sieve__cpu_read_input_grad(gpointer impl, float *out, GError **error)
{
  Cpu *c = impl;
  if (c->nodes[c->input].diff < 0) {
    /* Nothing depends on the input (a degenerate network). */
    SieveShape s = c->nodes[c->input].n->shape;
    memset(out, 0, (gsize)c->options.batch * s.c * s.h * s.w * sizeof(float));
    return TRUE;
  }
  return read_node(c, c->input, TRUE, out, error);
}

gboolean
sieve__cpu_read_grad(gpointer impl, guint node, float *out, GError **error)
{
  Cpu *c = impl;
  if (node >= c->n_nodes || c->nodes[node].role == ROLE_DEAD) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "node %u is not part of the compiled graph", node);
    return FALSE;
  }
  guint r = sieve__cpu_root(c, node);
  CNode *x = &c->nodes[r];
  if (x->role == ROLE_ZERO || x->role == ROLE_ZERO_BUF) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
                "%s is a zero the runtime folds away: no gradient is computed for it", sieve__cpu_node_desc(c, node));
    return FALSE;
  }
  if (x->n->kind == SIEVE_OP_SOFTMAX_CE) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "%s is the loss: its gradient is 1",
                sieve__cpu_node_desc(c, node));
    return FALSE;
  }
  if (r == c->input) {
    if (!c->options.input_grad) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "the input's gradient needs input_grad at compile time");
      return FALSE;
    }
    return sieve__cpu_read_input_grad(c, out, error);
  }
  if (!sieve__cpu_kept(c, r) && r != sieve__cpu_root(c, c->output)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
                "the gradient of %s was not kept (compile with keep_all, or name it in keep)",
                sieve__cpu_node_desc(c, node));
    return FALSE;
  }
  if (x->diff < 0) {
    /* No gradient reaches it (nothing differentiable reads it). */
    SieveShape s = x->n->shape;
    memset(out, 0, (gsize)c->options.batch * s.c * s.h * s.w * sizeof(float));
    return TRUE;
  }
  return read_node(c, node, TRUE, out, error);
}

/* How a 4-D tensor stored as md lays out (b, c, h, w): at
 * b*st[0] + (c/blk)*st[1] + h*st[2] + w*st[3] + c%blk, plain (blk 1, any
 * order of the dimensions) or blocked by channels (nChw8c, nChw16c: what
 * oneDNN picks for convolutions).  FALSE for anything else (padding, other
 * blockings): the caller then reads plain copies. */
static gboolean
channel_layout(const dnnl_memory_desc_t *md, dnnl_dim_t st[4], dnnl_dim_t *blk)
{
  if (md->ndims != 4 || !md_dense(md))
    return FALSE;
  const dnnl_blocking_desc_t *bd = &md->format_desc.blocking;
  if (bd->inner_nblks == 0)
    *blk = 1;
  else if (bd->inner_nblks == 1 && bd->inner_idxs[0] == 1 && bd->inner_blks[0] <= 64 &&
           md->dims[1] % bd->inner_blks[0] == 0)
    *blk = bd->inner_blks[0];
  else
    return FALSE;
  for (int d = 0; d < 4; d++)
    st[d] = bd->strides[d];
  return TRUE;
}

gboolean
sieve__cpu_read_channel_dots(gpointer impl, guint node, double *dots, GError **error)
{
  Cpu *c = impl;
  guint batch = c->options.batch;
  dnnl_dim_t st[4], blk;
  if (node < c->n_nodes && c->nodes[node].role != ROLE_DEAD) {
    guint r = sieve__cpu_root(c, node);
    CNode *x = &c->nodes[r];
    if (x->role != ROLE_ZERO && x->role != ROLE_ZERO_BUF && x->n->kind != SIEVE_OP_SOFTMAX_CE && r != c->input &&
        (sieve__cpu_kept(c, r) || r == sieve__cpu_root(c, c->output)) && x->out >= 0 && !x->released && x->diff >= 0 &&
        channel_layout(&x->md, st, &blk)) {
      /* Straight from the buffers, both stored as md: no copies. */
      const float *a = sieve__cpu_slot_ptr(c, x->out), *g = sieve__cpu_slot_ptr(c, x->diff);
      guint C = x->n->shape.c, H = x->n->shape.h, W = x->n->shape.w;
#pragma omp parallel for num_threads(c->threads) schedule(static)
      for (guint b = 0; b < batch; b++) {
        double acc[64];
        for (guint c0 = 0; c0 < C; c0 += (guint)blk) {
          for (dnnl_dim_t k = 0; k < blk; k++)
            acc[k] = 0;
          gsize base = (gsize)b * st[0] + (gsize)(c0 / blk) * st[1];
          for (guint h = 0; h < H; h++)
            for (guint w = 0; w < W; w++) {
              gsize off = base + (gsize)h * st[2] + (gsize)w * st[3];
              for (dnnl_dim_t k = 0; k < blk; k++)
                acc[k] += (double)a[off + k] * g[off + k];
            }
          for (dnnl_dim_t k = 0; k < blk; k++)
            dots[(gsize)b * C + c0 + k] = acc[k];
        }
      }
      return TRUE;
    }
  }
  /* Everything else (and every error) as the plain reads give it. */
  SieveShape s = node < c->n_nodes ? c->nodes[node].n->shape : (SieveShape){0, 0, 0};
  gsize hw = (gsize)s.h * s.w, n = (gsize)batch * s.c * hw;
  g_autofree float *a = g_new(float, MAX(n, 1)), *g = g_new(float, MAX(n, 1));
  if (!sieve__cpu_read(c, node, a, error) || !sieve__cpu_read_grad(c, node, g, error))
    return FALSE;
  for (gsize bc = 0; bc < (gsize)batch * s.c; bc++) {
    double acc = 0;
    for (gsize k = 0; k < hw; k++)
      acc += (double)a[bc * hw + k] * g[bc * hw + k];
    dots[bc] = acc;
  }
  return TRUE;
}

gboolean
sieve__cpu_freeze(gpointer impl, gboolean freeze, GError **error)
{
  Cpu *c = impl;
  if (!freeze) {
    c->frozen = FALSE;
    return TRUE;
  }
  for (guint v = 0; v < c->n_nodes; v++) {
    CNode *x = &c->nodes[v];
    if (x->role != ROLE_REAL || !sieve__cpu_is_relu(x->n))
      continue;
    if (x->released) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
                  "freezing activations needs every ReLU's output: compile with backward");
      return FALSE;
    }
    size_t bytes = sieve__cpu_md_bytes(&x->md);
    if (x->mask == NULL)
      x->mask = g_aligned_alloc(1, MAX(bytes, 64), 64);
    memcpy(x->mask, sieve__cpu_slot_ptr(c, x->out), bytes);
  }
  c->frozen = TRUE;
  return TRUE;
}

static CNode *
bn_node(Cpu *c, guint node, GError **error)
{
  if (node >= c->n_nodes || c->nodes[node].role != ROLE_REAL || c->nodes[node].n->kind != SIEVE_OP_BATCH_NORM) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "node %u is not a batch norm of the compiled graph", node);
    return NULL;
  }
  return &c->nodes[node];
}

gboolean
sieve__cpu_get_running(gpointer impl, guint node, float *mean, float *var, GError **error)
{
  Cpu *c = impl;
  CNode *x = bn_node(c, node, error);
  if (!x)
    return FALSE;
  gsize bytes = x->n->shape.c * sizeof(float);
  if (mean)
    memcpy(mean, sieve__cpu_slot_ptr(c, x->rmean), bytes);
  if (var)
    memcpy(var, sieve__cpu_slot_ptr(c, x->rvar), bytes);
  return TRUE;
}

gboolean
sieve__cpu_set_running(gpointer impl, guint node, const float *mean, const float *var, GError **error)
{
  Cpu *c = impl;
  CNode *x = bn_node(c, node, error);
  if (!x)
    return FALSE;
  gsize bytes = x->n->shape.c * sizeof(float);
  if (mean)
    memcpy(sieve__cpu_slot_ptr(c, x->rmean), mean, bytes);
  if (var)
    memcpy(sieve__cpu_slot_ptr(c, x->rvar), var, bytes);
  return TRUE;
}
