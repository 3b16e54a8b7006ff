/* The double-precision convolution: a direct convolution written as a
 * register-blocked matrix product whose right-hand side is read straight
 * from the (padded) input, so there is no im2col buffer to build.
 *
 * Output rows (channels) are the product's rows, output pixels its columns,
 * taps (input channel, ky, kx) its inner dimension.  The micro-kernel keeps
 * an MR x (NR vectors) block of outputs in registers and, per tap, loads NR
 * vectors of input and broadcasts MR weights (the scheme of Goto & van de
 * Geijn, "Anatomy of high-performance matrix multiplication", 2008, with
 * the packing of B replaced by address arithmetic).
 *
 * Strided convolutions would need gathers; instead the padded input is
 * split into stride x stride phase planes (plane (py, px) holds the rows
 * y = py mod sh and columns x = px mod sw), in which every tap of a strided
 * convolution reads consecutive columns.  For stride 1 that is just the
 * zero-padded input.  A plane row is padded to a whole number of vectors so
 * that a vector never needs a mask on the load side; the store side masks
 * outputs past the row's end. */
#include <string.h>

#include <omp.h>

#include "proxy/proxy-private.h"

/* out[(r * NR + j) * V + t] = sum_k a[k * MR + r] * base[j][offs[k] + t]. */
typedef void (*Kernel)(const double *a, const gssize *offs, guint K, const double *const *base, double *out);

#define DEFINE_KERNEL(NAME, ATTR, V, MR, NR)                                                              \
  typedef double NAME##_vec __attribute__((vector_size((V) * sizeof(double))));                          \
  typedef double NAME##_uvec __attribute__((vector_size((V) * sizeof(double)), aligned(sizeof(double))));  \
  ATTR static void NAME(const double *restrict a, const gssize *restrict offs, guint K,                   \
                        const double *const *restrict base, double *restrict out)                         \
  {                                                                                                       \
    NAME##_vec acc[MR][NR];                                                                               \
    const double *b[NR];                                                                                  \
    _Pragma("GCC unroll 8") for (int j = 0; j < (NR); j++)                                                \
    {                                                                                                     \
      b[j] = base[j];                                                                                     \
      _Pragma("GCC unroll 8") for (int r = 0; r < (MR); r++) acc[r][j] = (NAME##_vec){0};                 \
    }                                                                                                     \
    for (guint k = 0; k < K; k++, a += (MR)) {                                                            \
      gssize o = offs[k];                                                                                 \
      NAME##_vec x[NR];                                                                                   \
      _Pragma("GCC unroll 8") for (int j = 0; j < (NR); j++) x[j] = *(const NAME##_uvec *)(b[j] + o);     \
      _Pragma("GCC unroll 8") for (int r = 0; r < (MR); r++)                                              \
      {                                                                                                   \
        NAME##_vec w = a[r] - (NAME##_vec){0}; /* splat */                                                      \
        _Pragma("GCC unroll 8") for (int j = 0; j < (NR); j++) acc[r][j] += w * x[j];                     \
      }                                                                                                   \
    }                                                                                                     \
    memcpy(out, acc, sizeof acc);                                                                         \
  }

/* Block sizes: MR * NR accumulators plus NR inputs and one broadcast must
 * fit the register file (32 registers with AVX-512, 16 with AVX2 and SSE2). */
#if defined(__x86_64__) || defined(__i386__)
#define HAVE_X86_KERNELS 1
DEFINE_KERNEL(kernel_avx512, __attribute__((target("avx512f,fma"))), 8, 8, 3)
DEFINE_KERNEL(kernel_avx2, __attribute__((target("avx2,fma"))), 4, 4, 3)
#endif
DEFINE_KERNEL(kernel_base, , 2, 4, 2)

typedef struct {
  Kernel fn;
  guint V, MR, NR;
  const char *name;
} KernelInfo;

#define MAX_OUT (8 * 8 * 3) /* the largest MR * NR * V */

static const KernelInfo kernels[] = {
  [SIEVE_CONV_ISA_BASE] = {kernel_base, 2, 4, 2, "base"},
#ifdef HAVE_X86_KERNELS
  [SIEVE_CONV_ISA_AVX2] = {kernel_avx2, 4, 4, 3, "avx2"},
  [SIEVE_CONV_ISA_AVX512] = {kernel_avx512, 8, 8, 3, "avx512"},
#endif
};

gboolean
sieve__conv_f64_isa_available(SieveConvIsa isa)
{
  switch (isa) {
  case SIEVE_CONV_ISA_AUTO:
  case SIEVE_CONV_ISA_BASE:
    return TRUE;
#ifdef HAVE_X86_KERNELS
  case SIEVE_CONV_ISA_AVX2:
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  case SIEVE_CONV_ISA_AVX512:
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
#endif
  default:
    return FALSE;
  }
}

static SieveConvIsa
resolve(SieveConvIsa isa)
{
  if (isa != SIEVE_CONV_ISA_AUTO)
    return isa;
  if (sieve__conv_f64_isa_available(SIEVE_CONV_ISA_AVX512))
    return SIEVE_CONV_ISA_AVX512;
  if (sieve__conv_f64_isa_available(SIEVE_CONV_ISA_AVX2))
    return SIEVE_CONV_ISA_AVX2;
  return SIEVE_CONV_ISA_BASE;
}

const char *
sieve__conv_f64_isa_name(SieveConvIsa isa)
{
  return kernels[resolve(isa)].name;
}

struct _SieveConvF64 {
  SieveShape in, out;
  guint kh, kw, sh, sw, ph, pw, dh, dw, groups;
  guint cin_g, cout_g; /* channels per group */
  guint K;             /* taps per output: cin_g * kh * kw */
  KernelInfo k;
  guint nrb;           /* row blocks (of MR output channels) per group */
  guint nxv;           /* vectors per output row */
  guint hq, wq;        /* a phase plane's rows and (vector-padded) columns */
  gsize plane;         /* hq * wq */
  gsize stream;        /* one stream's planes: sh * sw * in.c * plane */
  gssize *offs;        /* groups x K: where each tap reads, relative to a column's base */
  double *wp;          /* packed weights: groups x nrb x K x MR, zero rows past cout_g */
};

SieveConvF64 *
sieve__conv_f64_new(const SieveGraphNode *node, SieveShape in, const double *weight, SieveConvIsa isa)
{
  g_return_val_if_fail(node->kind == SIEVE_OP_CONV2D, NULL);
  g_return_val_if_fail(sieve__conv_f64_isa_available(isa), NULL);
  const SieveOpAttrs *a = &node->attrs;
  SieveConvF64 *c = g_new0(SieveConvF64, 1);
  c->in = in;
  c->out = node->shape;
  c->kh = a->kernel[0];
  c->kw = a->kernel[1];
  c->sh = a->stride[0];
  c->sw = a->stride[1];
  c->ph = a->pad[0];
  c->pw = a->pad[1];
  c->dh = MAX(a->dilation[0], 1);
  c->dw = MAX(a->dilation[1], 1);
  c->groups = MAX(a->groups, 1);
  c->cin_g = in.c / c->groups;
  c->cout_g = c->out.c / c->groups;
  c->K = c->cin_g * c->kh * c->kw;
  c->k = kernels[resolve(isa)];
  c->nrb = (c->cout_g + c->k.MR - 1) / c->k.MR;
  c->nxv = (c->out.w + c->k.V - 1) / c->k.V;
  guint qy_max = (c->kh - 1) * c->dh / c->sh, qx_max = (c->kw - 1) * c->dw / c->sw;
  c->hq = c->out.h + qy_max;
  c->wq = c->nxv * c->k.V + qx_max;
  c->plane = (gsize)c->hq * c->wq;
  c->stream = (gsize)c->sh * c->sw * in.c * c->plane;

  c->offs = g_new(gssize, (gsize)c->groups * c->K);
  for (guint g = 0; g < c->groups; g++)
    for (guint ci = 0; ci < c->cin_g; ci++)
      for (guint ky = 0; ky < c->kh; ky++)
        for (guint kx = 0; kx < c->kw; kx++) {
          guint oy = ky * c->dh, ox = kx * c->dw;
          guint phase = (oy % c->sh) * c->sw + ox % c->sw;
          gsize ch = (gsize)phase * in.c + g * c->cin_g + ci;
          c->offs[(gsize)g * c->K + (ci * c->kh + ky) * c->kw + kx] =
            (gssize)(ch * c->plane + (gsize)(oy / c->sh) * c->wq + ox / c->sw);
        }

  guint MR = c->k.MR;
  c->wp = g_new0(double, (gsize)c->groups * c->nrb * c->K * MR);
  for (guint g = 0; g < c->groups; g++)
    for (guint rb = 0; rb < c->nrb; rb++)
      for (guint r = 0; r < MR && rb * MR + r < c->cout_g; r++) {
        guint co = g * c->cout_g + rb * MR + r;
        double *dst = c->wp + ((gsize)g * c->nrb + rb) * c->K * MR + r;
        for (guint k = 0; k < c->K; k++)
          dst[(gsize)k * MR] = weight[(gsize)co * c->K + k];
      }
  return c;
}

void
sieve__conv_f64_free(SieveConvF64 *c)
{
  if (!c)
    return;
  g_free(c->offs);
  g_free(c->wp);
  g_free(c);
}

/* Phase plane p = (py, px), channel ci of one stream: row yy, column xx
 * holds input (yy * sh + py - ph, xx * sw + px - pw), zero outside. */
static void
fill_plane(const SieveConvF64 *c, const double *x, guint p, guint ci, double *dst)
{
  guint py = p / c->sw, px = p % c->sw;
  /* Columns whose input column is inside the image: [lo, hi). */
  gint64 lo = 0, hi;
  if ((gint64)c->pw - px > 0)
    lo = ((gint64)c->pw - px + c->sw - 1) / c->sw;
  hi = ((gint64)c->in.w + c->pw - px + c->sw - 1) / c->sw;
  lo = MIN(lo, (gint64)c->wq);
  hi = CLAMP(hi, lo, (gint64)c->wq);
  for (guint yy = 0; yy < c->hq; yy++) {
    double *row = dst + (gsize)yy * c->wq;
    gint64 iy = (gint64)yy * c->sh + py - c->ph;
    if (iy < 0 || iy >= c->in.h) {
      memset(row, 0, c->wq * sizeof(double));
      continue;
    }
    const double *src = x + ((gsize)ci * c->in.h + iy) * c->in.w;
    memset(row, 0, lo * sizeof(double));
    if (c->sw == 1) {
      memcpy(row + lo, src + lo + px - c->pw, (hi - lo) * sizeof(double));
    } else {
      for (gint64 xx = lo; xx < hi; xx++)
        row[xx] = src[xx * c->sw + px - c->pw];
    }
    memset(row + hi, 0, (c->wq - hi) * sizeof(double));
  }
}

gsize
sieve__conv_f64_scratch_size(const SieveConvF64 *c, guint n_streams)
{
  return n_streams * c->stream;
}

void
sieve__conv_f64_run(SieveConvF64 *c, const double *const *x, double *const *y, guint n_streams, guint threads,
                    double *scratch)
{
  guint phases = c->sh * c->sw;
  double *owned = scratch ? NULL : g_new(double, n_streams * c->stream);
  double *planes = scratch ? scratch : owned;
  guint cols = n_streams * c->out.h * c->nxv; /* output vectors over all streams */
  guint NR = c->k.NR, MR = c->k.MR, V = c->k.V;
  guint chunks = (cols + NR - 1) / NR;
  gint64 tasks = (gint64)c->groups * c->nrb * chunks;
  gint64 fills = (gint64)n_streams * phases * c->in.c;
  guint nt = MAX(threads, 1);
  /* Below this many multiply-adds a second thread costs more than it saves. */
  if ((double)tasks * c->K * MR * NR * V < 2e5)
    nt = 1;

#pragma omp parallel num_threads(nt)
  {
#pragma omp for schedule(static)
    for (gint64 f = 0; f < fills; f++) {
      guint s = f / (phases * c->in.c), rest = f % (phases * c->in.c);
      guint p = rest / c->in.c, ci = rest % c->in.c;
      fill_plane(c, x[s], p, ci, planes + s * c->stream + ((gsize)p * c->in.c + ci) * c->plane);
    }
    double out[MAX_OUT];
    const double *base[8];
    guint where[8][3]; /* stream, row, first column of each output vector */
#pragma omp for schedule(static)
    for (gint64 t = 0; t < tasks; t++) {
      guint chunk = t % chunks, rb = (t / chunks) % c->nrb, g = t / ((gint64)chunks * c->nrb);
      guint n = MIN(NR, cols - chunk * NR);
      for (guint j = 0; j < NR; j++) {
        /* A short last chunk repeats its last vector; the copies are not stored. */
        guint cv = chunk * NR + MIN(j, n - 1);
        guint s = cv / (c->out.h * c->nxv), r = cv % (c->out.h * c->nxv);
        where[j][0] = s;
        where[j][1] = r / c->nxv;
        where[j][2] = (r % c->nxv) * V;
        base[j] = planes + s * c->stream + (gsize)where[j][1] * c->wq + where[j][2];
      }
      c->k.fn(c->wp + ((gsize)g * c->nrb + rb) * c->K * MR, c->offs + (gsize)g * c->K, c->K, base, out);
      guint rows = MIN(MR, c->cout_g - rb * MR);
      for (guint j = 0; j < n; j++) {
        guint len = MIN(V, c->out.w - where[j][2]);
        for (guint r = 0; r < rows; r++) {
          guint co = g * c->cout_g + rb * MR + r;
          double *dst = y[where[j][0]] + ((gsize)co * c->out.h + where[j][1]) * c->out.w + where[j][2];
          memcpy(dst, out + ((gsize)r * NR + j) * V, len * sizeof(double));
        }
      }
    }
  }
  g_free(owned);
}
