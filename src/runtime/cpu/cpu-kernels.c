/* Loops of our own where oneDNN 2.6 has only slow implementations (its
 * reference or a per-channel GEMM), over tensors in plain nchw or in
 * nChw8c / nChw16c, where a block's channels sit side by side and the
 * innermost loop runs over them in vector registers. */
#include <immintrin.h>
#include <string.h>

#include "runtime/cpu/cpu-private.h"

guint
sieve__cpu_pick_block(guint channels, dnnl_memory_desc_t *md, guint batch, SieveShape s)
{
  guint block = channels % 16 == 0 ? 16 : channels % 8 == 0 ? 8 : 1;
  dnnl_dims_t d = {batch, s.c, s.h, s.w};
  dnnl_memory_desc_init_by_tag(md, 4, d, dnnl_f32, block == 16 ? dnnl_nChw16c : block == 8 ? dnnl_nChw8c : dnnl_nchw);
  return block;
}

guint
sieve__cpu_md_block(const dnnl_memory_desc_t *md)
{
  static const struct {
    dnnl_format_tag_t tag;
    guint block;
  } tags[] = {{dnnl_nchw, 1}, {dnnl_nChw8c, 8}, {dnnl_nChw16c, 16}};
  if (md->ndims != 4 || md->offset0 != 0)
    return 0;
  for (guint i = 0; i < G_N_ELEMENTS(tags); i++) {
    dnnl_memory_desc_t probe;
    if (dnnl_memory_desc_init_by_tag(&probe, 4, md->dims, dnnl_f32, tags[i].tag) == dnnl_success &&
        dnnl_memory_desc_equal(&probe, md))
      return tags[i].block;
  }
  return 0;
}

/* Channel c of image b, pixel 0, in a tensor of `stored` channels in
 * blocks of `block` (1: nchw); its pixels follow `block` floats apart. */
static inline gsize
chan_at(const ChanView *v, gsize hw, guint b, guint c)
{
  return ((gsize)b * v->stored + (c / v->block) * v->block) * hw + c % v->block;
}

/* A concatenation's piece, forward (into the output's channels) or
 * backward (the output gradient's channels out): a copy between any two
 * of nchw, nChw8c and nChw16c at any channel offset, which oneDNN's
 * concatenation and sub-memory reorders take only at whole blocks. */
void
sieve__cpu_channels(Cpu *c, const Step *s)
{
  const float *src = sieve__cpu_slot_ptr(c, s->src);
  float *dst = sieve__cpu_slot_ptr(c, s->dst);
  const ChanView *f = &s->from, *t = &s->to;
  guint B = c->options.batch, n = (guint)s->n;
  gsize hw = s->hw;
  guint pad = s->zero_pad ? t->stored - (t->first + n) : 0;
#pragma omp parallel for schedule(static) if ((gsize)B * n * hw > 32768)
  for (guint b = 0; b < B; b++) {
    for (guint k = 0; k < n;) {
      const float *a = src + chan_at(f, hw, b, f->first + k);
      float *d = dst + chan_at(t, hw, b, t->first + k);
      /* A whole block on both sides, the same block: one run of floats. */
      if (f->block == t->block && (f->first + k) % f->block == 0 && (t->first + k) % t->block == 0 &&
          n - k >= f->block) {
        memcpy(d, a, hw * f->block * sizeof(float));
        k += f->block;
        continue;
      }
      guint fs = f->block, ts = t->block;
      for (gsize p = 0; p < hw; p++)
        d[p * ts] = a[p * fs];
      k++;
    }
    for (guint k = 0; k < pad; k++) {
      float *d = dst + chan_at(t, hw, b, t->first + n + k);
      for (gsize p = 0; p < hw; p++)
        d[p * t->block] = 0;
    }
  }
}

/* Offset of (b, channel block cb, y, x) in a tensor of nb channel blocks of
 * `block` channels and h x w pixels; the block's channels follow. */
static inline gsize
at(guint block, guint nb, guint h, guint w, guint b, guint cb, guint y, guint x)
{
  return ((((gsize)b * nb + cb) * h + y) * w + x) * block;
}

/* The weight gradient of a depthwise convolution (no bias), as goihw
 * [C, 1, 1, kh, kw]: dW[c, ky, kx] = sum over b, oy, ox of
 * dy[b, c, oy, ox] x[b, c, oy sy - py + ky dy, ox sx - px + kx dx].  oneDNN
 * 2.6's jit kernel takes 3x3 only; its fallback runs one GEMM per channel. */
void
sieve__cpu_dw_wgrad(Cpu *c, const Step *s)
{
  const CNode *x = &c->nodes[s->node];
  const SieveOpAttrs *a = &x->n->attrs;
  SieveShape is = c->nodes[x->in[0]].n->shape, os = x->n->shape;
  guint B = c->options.batch, blk = s->block, nb = (is.c + blk - 1) / blk;
  guint kh = a->kernel[0], kw = a->kernel[1];
  const float *dy = sieve__cpu_slot_ptr(c, s->src), *src = sieve__cpu_slot_ptr(c, s->aux);
  float *dw = sieve__cpu_slot_ptr(c, s->dst);
#pragma omp parallel for schedule(dynamic, 1) if (nb > 1)
  for (guint cb = 0; cb < nb; cb++) {
    float *acc = g_new0(float, (gsize)kh * kw * blk);
    for (guint b = 0; b < B; b++)
      for (guint oy = 0; oy < os.h; oy++)
        for (guint ky = 0; ky < kh; ky++) {
          gint64 iy = (gint64)oy * a->stride[0] - a->pad[0] + (gint64)ky * a->dilation[0];
          if (iy < 0 || iy >= is.h)
            continue;
          for (guint ox = 0; ox < os.w; ox++) {
            const float *g = dy + at(blk, nb, os.h, os.w, b, cb, oy, ox);
            for (guint kx = 0; kx < kw; kx++) {
              gint64 ix = (gint64)ox * a->stride[1] - a->pad[1] + (gint64)kx * a->dilation[1];
              if (ix < 0 || ix >= is.w)
                continue;
              const float *v = src + at(blk, nb, is.h, is.w, b, cb, (guint)iy, (guint)ix);
              float *r = acc + ((gsize)ky * kw + kx) * blk;
#pragma omp simd
              for (guint j = 0; j < blk; j++)
                r[j] += g[j] * v[j];
            }
          }
        }
    for (guint j = 0; j < blk && cb * blk + j < is.c; j++)
      for (guint k = 0; k < kh * kw; k++)
        dw[(gsize)(cb * blk + j) * kh * kw + k] = acc[(gsize)k * blk + j];
    g_free(acc);
  }
}

/* The gradient of a broadcast gate (mul, graph.h) as plain [B, C]:
 * dgate[b, c] = sum over y, x of dy[b, c, y, x] x[b, c, y, x].  oneDNN
 * 2.6's reduction has only its reference implementation on blocked
 * layouts. */
void
sieve__cpu_gate_grad(Cpu *c, const Step *s)
{
  const CNode *x = &c->nodes[s->node];
  SieveShape os = x->n->shape;
  guint B = c->options.batch, blk = s->block, nb = (os.c + blk - 1) / blk;
  gsize hw = (gsize)os.h * os.w;
  const float *dy = sieve__cpu_slot_ptr(c, s->src), *src = sieve__cpu_slot_ptr(c, s->aux);
  float *dg = sieve__cpu_slot_ptr(c, s->dst);
#pragma omp parallel for collapse(2) schedule(static) if ((gsize)B * nb * hw * blk > 65536)
  for (guint b = 0; b < B; b++)
    for (guint cb = 0; cb < nb; cb++) {
      float acc[16] = {0};
      const float *g = dy + at(blk, nb, os.h, os.w, b, cb, 0, 0), *v = src + at(blk, nb, os.h, os.w, b, cb, 0, 0);
      for (gsize k = 0; k < hw; k++)
#pragma omp simd
        for (guint j = 0; j < blk; j++)
          acc[j] += g[k * blk + j] * v[k * blk + j];
      for (guint j = 0; j < blk && cb * blk + j < os.c; j++)
        dg[(gsize)b * os.c + cb * blk + j] = acc[j];
    }
}

/* ---- max pooling ---------------------------------------------------------------------- */

/* A pooling window along dimension d (0: height, 1: width) at output
 * position o: its first input position (negative in the padding), and
 * the range [*k0, *k1) of its places inside an input of extent n. */
static inline gint64
pool_window(const SieveOpAttrs *a, guint d, guint o, guint n, guint *k0, guint *k1)
{
  gint64 start = (gint64)o * a->stride[d] - a->pad[d];
  *k0 = start < 0 ? (guint)-start : 0;
  *k1 = (guint)MIN((gint64)a->kernel[d], (gint64)n - start);
  return start;
}

/* One (image, channel block) plane of a max pool, forward: each output
 * is the first largest of its window in row order (oneDNN's and
 * PyTorch's choice at ties), padding excluded; its place in the window
 * (ky kw + kx) goes to ws for the backward.  blk is a constant where this
 * is inlined, so the loop over a block's channels runs in vector
 * registers (the place is carried as a float there, all lanes one type). */
static inline __attribute__((always_inline)) void
max_pool_plane(const SieveOpAttrs *a, SieveShape is, SieveShape os, const float *in, float *out, guint8 *ws,
               const guint blk)
{
  guint kw = a->kernel[1];
  for (guint oy = 0; oy < os.h; oy++) {
    guint ky0, ky1;
    gint64 y0 = pool_window(a, 0, oy, is.h, &ky0, &ky1);
    for (guint ox = 0; ox < os.w; ox++) {
      guint kx0, kx1;
      gint64 x0 = pool_window(a, 1, ox, is.w, &kx0, &kx1);
      float m[16], k[16];
      const float *p0 = in + ((gsize)(y0 + ky0) * is.w + (gsize)(x0 + kx0)) * blk;
      float first = (float)(ky0 * kw + kx0);
#pragma omp simd
      for (guint j = 0; j < blk; j++) {
        m[j] = p0[j];
        k[j] = first;
      }
      for (guint ky = ky0; ky < ky1; ky++)
        for (guint kx = kx0; kx < kx1; kx++) {
          const float *p = in + ((gsize)(y0 + ky) * is.w + (gsize)(x0 + kx)) * blk;
          float here = (float)(ky * kw + kx);
#pragma omp simd
          for (guint j = 0; j < blk; j++) {
            gboolean more = p[j] > m[j];
            m[j] = more ? p[j] : m[j];
            k[j] = more ? here : k[j];
          }
        }
      gsize o = ((gsize)oy * os.w + ox) * blk;
#pragma omp simd
      for (guint j = 0; j < blk; j++) {
        out[o + j] = m[j];
        ws[o + j] = (guint8)k[j];
      }
    }
  }
}

/* The backward of one plane: zero, then each output's gradient added at
 * its window's maximum, off[] the window places' offsets from the
 * window's corner. */
static inline __attribute__((always_inline)) void
max_pool_plane_bwd(const SieveOpAttrs *a, SieveShape is, SieveShape os, const float *dy, float *dx,
                   const guint8 *ws, const gssize *off, const guint blk)
{
  memset(dx, 0, (gsize)is.h * is.w * blk * sizeof(float));
  for (guint oy = 0; oy < os.h; oy++) {
    gssize y0 = (gssize)oy * a->stride[0] - a->pad[0];
    for (guint ox = 0; ox < os.w; ox++) {
      gssize x0 = (gssize)ox * a->stride[1] - a->pad[1];
      gssize corner = (y0 * (gssize)is.w + x0) * (gssize)blk;
      gsize o = ((gsize)oy * os.w + ox) * blk;
      for (guint j = 0; j < blk; j++)
        dx[corner + off[ws[o + j]] + (gssize)j] += dy[o + j];
    }
  }
}

/* The same two for blocks of 8 or 16 channels with AVX2, eight channels
 * to a register (GCC leaves the loops above scalar, and their compares
 * branch on random data): forward, the place carried as a float and
 * blended with the maximum; backward, each place's gradient added under
 * the mask of the lanes whose maximum it was (windows of at most 16
 * places), so that every access is a whole vector. */
__attribute__((target("avx2"))) static void
max_pool_plane_avx2(const SieveOpAttrs *a, SieveShape is, SieveShape os, const float *in, float *out, guint8 *ws,
                    guint blk)
{
  guint kw = a->kernel[1];
  for (guint oy = 0; oy < os.h; oy++) {
    guint ky0, ky1;
    gint64 y0 = pool_window(a, 0, oy, is.h, &ky0, &ky1);
    for (guint ox = 0; ox < os.w; ox++) {
      guint kx0, kx1;
      gint64 x0 = pool_window(a, 1, ox, is.w, &kx0, &kx1);
      gsize o = ((gsize)oy * os.w + ox) * blk;
      for (guint g = 0; g < blk; g += 8) {
        const float *p0 = in + ((gsize)(y0 + ky0) * is.w + (gsize)(x0 + kx0)) * blk + g;
        __m256 m = _mm256_loadu_ps(p0), k = _mm256_set1_ps((float)(ky0 * kw + kx0));
        for (guint ky = ky0; ky < ky1; ky++)
          for (guint kx = kx0; kx < kx1; kx++) {
            __m256 v = _mm256_loadu_ps(in + ((gsize)(y0 + ky) * is.w + (gsize)(x0 + kx)) * blk + g);
            __m256 more = _mm256_cmp_ps(v, m, _CMP_GT_OQ);
            m = _mm256_blendv_ps(m, v, more);
            k = _mm256_blendv_ps(k, _mm256_set1_ps((float)(ky * kw + kx)), more);
          }
        _mm256_storeu_ps(out + o + g, m);
        __m256i ki = _mm256_cvttps_epi32(k);
        __m128i w16 = _mm_packus_epi32(_mm256_castsi256_si128(ki), _mm256_extracti128_si256(ki, 1));
        _mm_storel_epi64((__m128i *)(ws + o + g), _mm_packus_epi16(w16, w16));
      }
    }
  }
}

__attribute__((target("avx2"))) static void
max_pool_plane_bwd_avx2(const SieveOpAttrs *a, SieveShape is, SieveShape os, const float *dy, float *dx,
                        const guint8 *ws, const gssize *off, guint blk)
{
  guint places = a->kernel[0] * a->kernel[1];
  memset(dx, 0, (gsize)is.h * is.w * blk * sizeof(float));
  for (guint oy = 0; oy < os.h; oy++) {
    gssize y0 = (gssize)oy * a->stride[0] - a->pad[0];
    for (guint ox = 0; ox < os.w; ox++) {
      gssize x0 = (gssize)ox * a->stride[1] - a->pad[1];
      gssize corner = (y0 * (gssize)is.w + x0) * (gssize)blk;
      gsize o = ((gsize)oy * os.w + ox) * blk;
      for (guint g = 0; g < blk; g += 8) {
        __m256 d = _mm256_loadu_ps(dy + o + g);
        __m256i k = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(ws + o + g)));
        /* Only the places some lane took: the others' addresses may lie
         * in the padding, outside the plane. */
        guint8 lo = 255, hi = 0;
        for (guint j = 0; j < 8; j++) {
          lo = MIN(lo, ws[o + g + j]);
          hi = MAX(hi, ws[o + g + j]);
        }
        for (guint q = lo; q <= hi && q < places; q++) {
          __m256 sel = _mm256_castsi256_ps(_mm256_cmpeq_epi32(k, _mm256_set1_epi32((int)q)));
          if (_mm256_movemask_ps(sel) == 0)
            continue;
          float *t = dx + (corner + off[q] + (gssize)g);
          _mm256_storeu_ps(t, _mm256_add_ps(_mm256_loadu_ps(t), _mm256_and_ps(d, sel)));
        }
      }
    }
  }
}

gboolean
sieve__cpu_max_pool_ours(Cpu *c, guint v, guint *block)
{
  const CNode *x = &c->nodes[v];
  const SieveOpAttrs *a = &x->n->attrs;
  if (x->n->kind != SIEVE_OP_POOL || a->pool != SIEVE_POOL_MAX || a->kernel[0] * a->kernel[1] > 256 ||
      a->pad[0] >= a->kernel[0] || a->pad[1] >= a->kernel[1] || c->nodes[x->in[0]].md.ndims != 4)
    return FALSE;
  *block = sieve__cpu_md_block(&c->nodes[x->in[0]].md);
  return *block != 0;
}

/* Max pooling (not global) in nchw, nChw8c or nChw16c, the output in its
 * input's layout, forward (src the input, dst the output) or backward
 * (src the output's gradient, dst the input's), aux the window positions
 * (one byte per output element).  oneDNN 2.6's jit max pool took 17 ms
 * forward and 27 ms backward a call at NAS-Bench-101's 3x3 pool of
 * 128x32x28x28 in nChw8c (2 threads), a tenth of its training step. */
void
sieve__cpu_max_pool(Cpu *c, const Step *s)
{
  const CNode *x = &c->nodes[s->node];
  const SieveOpAttrs *a = &x->n->attrs;
  SieveShape is = c->nodes[x->in[0]].n->shape, os = x->n->shape;
  guint B = c->options.batch, blk = s->block, nb = (is.c + blk - 1) / blk;
  gsize in_plane = (gsize)is.h * is.w * blk, out_plane = (gsize)os.h * os.w * blk;
  const float *src = sieve__cpu_slot_ptr(c, s->src);
  float *dst = sieve__cpu_slot_ptr(c, s->dst);
  guint8 *ws = (guint8 *)sieve__cpu_slot_ptr(c, s->aux);
  gboolean fwd = s->kind == STEP_MAXPOOL_FWD;
  static int avx2 = -1;
  if (avx2 < 0) {
    __builtin_cpu_init();
    avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
  }
  gboolean vec = avx2 && blk % 8 == 0 && a->kernel[0] * a->kernel[1] <= 16;
  gssize off[256];
  for (guint k = 0; k < a->kernel[0] * a->kernel[1]; k++)
    off[k] = ((gssize)(k / a->kernel[1]) * is.w + k % a->kernel[1]) * (gssize)blk;
#pragma omp parallel for collapse(2) schedule(static) if ((gsize)B * nb * in_plane > 32768)
  for (guint b = 0; b < B; b++)
    for (guint cb = 0; cb < nb; cb++) {
      gsize p = (gsize)b * nb + cb;
      if (fwd) {
        const float *in = src + p * in_plane;
        float *out = dst + p * out_plane;
        if (vec)
          max_pool_plane_avx2(a, is, os, in, out, ws + p * out_plane, blk);
        else if (blk == 16)
          max_pool_plane(a, is, os, in, out, ws + p * out_plane, 16);
        else if (blk == 8)
          max_pool_plane(a, is, os, in, out, ws + p * out_plane, 8);
        else
          max_pool_plane(a, is, os, in, out, ws + p * out_plane, 1);
      } else {
        const float *dy = src + p * out_plane;
        float *dx = dst + p * in_plane;
        if (vec)
          max_pool_plane_bwd_avx2(a, is, os, dy, dx, ws + p * out_plane, off, blk);
        else if (blk == 16)
          max_pool_plane_bwd(a, is, os, dy, dx, ws + p * out_plane, off, 16);
        else if (blk == 8)
          max_pool_plane_bwd(a, is, os, dy, dx, ws + p * out_plane, off, 8);
        else
          max_pool_plane_bwd(a, is, os, dy, dx, ws + p * out_plane, off, 1);
      }
    }
}
