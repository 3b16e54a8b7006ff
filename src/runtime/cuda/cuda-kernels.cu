/* The CUDA backend's kernels of its own: everything cuDNN does not do for
 * it (cuDNN does convolutions and batch norm).  Plain NCHW float32.  No
 * atomics anywhere: every gradient is gathered by the thread that owns its
 * element, so results are the same from run to run. */
#include <math.h>

#include "runtime/cuda/cuda-kernels.h"

namespace {

const int THREADS = 256;

unsigned
blocks_for(size_t n)
{
  size_t b = (n + THREADS - 1) / THREADS;
  return (unsigned)(b < 1 ? 1 : (b > 65535u * 16 ? 65535u * 16 : b));
}

/* 32-bit indices: the planner refuses tensors of 2^31 elements or more,
 * and 64-bit division costs several times a memory access here. */
#define GRID_LOOP(i, n)                                                                                              \
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x, n_##i = (unsigned)(n); i < n_##i; i += gridDim.x * blockDim.x)

__device__ inline void
put(float *dst, size_t i, float v, int acc)
{
  dst[i] = acc ? dst[i] + v : v;
}

__global__ void
fill_kernel(float *dst, float v, size_t n)
{
  GRID_LOOP(i, n) dst[i] = v;
}

struct Srcs {
  const float *p[8];
};

struct Dsts {
  float *p[8];
  int acc[8];
};

__global__ void
spread_kernel(const float *dy, Dsts dst, int n_dst, size_t n)
{
  GRID_LOOP(i, n) {
    float v = dy[i];
    for (int k = 0; k < n_dst; k++)
      put(dst.p[k], i, v, dst.acc[k]);
  }
}

__global__ void
sum_kernel(float *dst, Srcs src, int n_src, size_t n, int acc)
{
  GRID_LOOP(i, n) {
    float v = 0;
    for (int k = 0; k < n_src; k++)
      v += src.p[k][i];
    put(dst, i, v, acc);
  }
}

/* SieveActivation order: relu, leaky_relu, elu, tanh, sigmoid, gelu,
 * swish, hard_sigmoid, hard_swish. */
__device__ inline float
act_f(int act, float a, float x)
{
  switch (act) {
  case 0: return x > 0 ? x : 0;
  case 1: return x > 0 ? x : a * x;
  case 2: return x > 0 ? x : a * expm1f(x);
  case 3: return tanhf(x);
  case 4: return 1 / (1 + expf(-x));
  case 5: return 0.5f * x * (1 + erff(x * 0.70710678118654752f));
  case 6: return x / (1 + expf(-x));
  case 7: return fminf(fmaxf(x + 3, 0.f), 6.f) / 6;
  default: return x * fminf(fmaxf(x + 3, 0.f), 6.f) / 6;
  }
}

/* f' from the input x or the output y, as act_uses_output says. */
__device__ inline float
act_df(int act, float a, float x, float y)
{
  switch (act) {
  case 0: return y > 0 ? 1.f : 0.f;
  case 1: return y > 0 ? 1.f : a;
  case 2: return x > 0 ? 1.f : a * expf(x);
  case 3: return 1 - y * y;
  case 4: return y * (1 - y);
  case 5: return 0.5f * (1 + erff(x * 0.70710678118654752f)) + x * 0.39894228040143268f * expf(-0.5f * x * x);
  case 6: {
    float sg = 1 / (1 + expf(-x));
    return sg + x * sg * (1 - sg);
  }
  case 7: return x > -3 && x < 3 ? 1.f / 6 : 0.f;
  default: return x < -3 ? 0.f : x > 3 ? 1.f : (2 * x + 3) / 6;
  }
}

__global__ void
act_forward_kernel(int act, float a, const float *x, float *y, size_t n, const uint8_t *mask)
{
  if (mask) {
    GRID_LOOP(i, n) y[i] = mask[i] ? x[i] : a * x[i];
  } else {
    GRID_LOOP(i, n) y[i] = act_f(act, a, x[i]);
  }
}

__global__ void
act_backward_kernel(int act, float a, const float *x, const float *y, const float *dy, float *dx, size_t n,
                    const uint8_t *mask, int acc)
{
  if (mask) {
    GRID_LOOP(i, n) put(dx, i, mask[i] ? dy[i] : a * dy[i], acc);
  } else {
    GRID_LOOP(i, n) put(dx, i, dy[i] * act_df(act, a, x ? x[i] : 0.f, y ? y[i] : 0.f), acc);
  }
}

__global__ void
positive_mask_kernel(const float *y, uint8_t *mask, size_t n)
{
  GRID_LOOP(i, n) mask[i] = y[i] > 0;
}

__global__ void
pool_forward_kernel(int max, SieveCuPool p, const float *x, float *y, int32_t *idx)
{
  unsigned total = (unsigned)p.n * p.c * p.oh * p.ow;
  GRID_LOOP(i, total) {
    unsigned q = i / p.ow;
    int ow = (int)(i - q * p.ow), oh = (int)(q % p.oh);
    unsigned plane = q / p.oh;
    const float *xp = x + plane * p.h * p.w;
    int h0 = oh * p.sh - p.ph, w0 = ow * p.sw - p.pw;
    float best = -INFINITY, sum = 0;
    int where = -1, count = 0;
    for (int dh = 0; dh < p.kh; dh++) {
      int ih = h0 + dh;
      if (ih < 0 || ih >= p.h)
        continue;
      for (int dw = 0; dw < p.kw; dw++) {
        int iw = w0 + dw;
        if (iw < 0 || iw >= p.w)
          continue;
        float v = xp[ih * p.w + iw];
        if (max) {
          if (where < 0 || v > best) { /* the first maximum wins ties */
            best = v;
            where = ih * p.w + iw;
          }
        } else {
          sum += v;
          count++;
        }
      }
    }
    if (max) {
      y[i] = best;
      idx[i] = where;
    } else {
      y[i] = count ? sum / count : 0.f;
    }
  }
}

/* Gathered: each input element sums the windows that cover it. */
__global__ void
pool_backward_kernel(int max, SieveCuPool p, const float *dy, const int32_t *idx, float *dx, int acc)
{
  unsigned total = (unsigned)p.n * p.c * p.h * p.w;
  GRID_LOOP(i, total) {
    unsigned q = i / p.w;
    int iw = (int)(i - q * p.w), ih = (int)(q % p.h);
    unsigned plane = q / p.h;
    const float *dyp = dy + plane * p.oh * p.ow;
    const int32_t *ip = max ? idx + plane * p.oh * p.ow : NULL;
    /* windows oh with oh*sh - ph <= ih < oh*sh - ph + kh */
    int oh_lo = ih + p.ph - p.kh + 1, ow_lo = iw + p.pw - p.kw + 1;
    oh_lo = oh_lo <= 0 ? 0 : (oh_lo + p.sh - 1) / p.sh;
    ow_lo = ow_lo <= 0 ? 0 : (ow_lo + p.sw - 1) / p.sw;
    int oh_hi = min((ih + p.ph) / p.sh, p.oh - 1), ow_hi = min((iw + p.pw) / p.sw, p.ow - 1);
    float g = 0;
    for (int oh = oh_lo; oh <= oh_hi; oh++)
      for (int ow = ow_lo; ow <= ow_hi; ow++) {
        int o = oh * p.ow + ow;
        if (max) {
          if (ip[o] == ih * p.w + iw)
            g += dyp[o];
        } else {
          int h0 = oh * p.sh - p.ph, w0 = ow * p.sw - p.pw;
          int ch = min(h0 + p.kh, p.h) - ::max(h0, 0), cw = min(w0 + p.kw, p.w) - ::max(w0, 0);
          g += dyp[o] / (ch * cw);
        }
      }
    put(dx, i, g, acc);
  }
}

__global__ void
channels_kernel(const float *src, int src_c, int src_off, float *dst, int dst_c, int dst_off, int nc, int n,
                size_t hw, int acc)
{
  unsigned total = (unsigned)(n * nc * hw), h = (unsigned)hw;
  GRID_LOOP(i, total) {
    unsigned q = i / h, e = i - q * h, ch = q % nc, b = q / nc;
    put(dst, (b * dst_c + dst_off + ch) * h + e, src[(b * src_c + src_off + ch) * h + e], acc);
  }
}

/* One warp per plane. */
__global__ void
gap_forward_kernel(const float *x, float *y, size_t nc, size_t hw)
{
  size_t warp = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  if (warp >= nc)
    return;
  float s = 0;
  for (size_t k = lane; k < hw; k += 32)
    s += x[warp * hw + k];
  for (int o = 16; o > 0; o /= 2)
    s += __shfl_down_sync(0xffffffffu, s, o);
  if (lane == 0)
    y[warp] = s / hw;
}

__global__ void
gap_backward_kernel(const float *dy, float *dx, size_t nc, size_t hw, int acc)
{
  unsigned h = (unsigned)hw;
  GRID_LOOP(i, nc * hw) put(dx, i, dy[i / h] / h, acc);
}

__global__ void
linear_forward_kernel(const float *x, const float *w, const float *bias, float *y, int batch, int in, int out)
{
  GRID_LOOP(i, (size_t)batch * out) {
    int b = (int)(i / out), o = (int)(i - b * out);
    float s = bias ? bias[o] : 0.f;
    for (int k = 0; k < in; k++)
      s += x[(size_t)b * in + k] * w[(size_t)o * in + k];
    y[i] = s;
  }
}

__global__ void
linear_backward_data_kernel(const float *dy, const float *w, float *dx, int batch, int in, int out, int acc)
{
  GRID_LOOP(i, (size_t)batch * in) {
    int b = (int)(i / in), k = (int)(i - b * in);
    float s = 0;
    for (int o = 0; o < out; o++)
      s += dy[(size_t)b * out + o] * w[(size_t)o * in + k];
    put(dx, i, s, acc);
  }
}

__global__ void
linear_backward_weights_kernel(const float *dy, const float *x, float *dw, float *dbias, int batch, int in, int out)
{
  GRID_LOOP(i, (size_t)out * in) {
    int o = (int)(i / in), k = (int)(i - o * in);
    float s = 0;
    for (int b = 0; b < batch; b++)
      s += dy[(size_t)b * out + o] * x[(size_t)b * in + k];
    dw[i] = s;
    if (dbias && k == 0) {
      float t = 0;
      for (int b = 0; b < batch; b++)
        t += dy[(size_t)b * out + o];
      dbias[o] = t;
    }
  }
}

/* One block: each thread takes rows, then a fixed-order tree sums the
 * batch's loss (the same sum every run). */
__global__ void
softmax_ce_forward_kernel(const float *z, const int32_t *labels, float *prob, float *loss, int batch, int k, float eps)
{
  __shared__ double part[THREADS];
  double total = 0;
  for (int b = threadIdx.x; b < batch; b += blockDim.x) {
    const float *row = z + (size_t)b * k;
    float m = row[0];
    for (int j = 1; j < k; j++)
      m = fmaxf(m, row[j]);
    double s = 0, mean = 0;
    for (int j = 0; j < k; j++) {
      s += exp((double)row[j] - m);
      mean += row[j];
    }
    double lse = m + log(s);
    for (int j = 0; j < k; j++)
      prob[(size_t)b * k + j] = (float)exp(row[j] - lse);
    int y = labels[b];
    if (y >= 0 && y < k)
      total += lse - (1 - eps) * row[y] - eps * mean / k;
  }
  part[threadIdx.x] = total;
  __syncthreads();
  for (int o = blockDim.x / 2; o > 0; o /= 2) {
    if (threadIdx.x < o)
      part[threadIdx.x] += part[threadIdx.x + o];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    loss[0] = (float)(part[0] / batch);
}

__global__ void
softmax_ce_backward_kernel(const float *prob, const int32_t *labels, float *dz, int batch, int k, float eps, int acc)
{
  GRID_LOOP(i, (size_t)batch * k) {
    int b = (int)(i / k), j = (int)(i - b * k);
    float t = eps / k + (j == labels[b] ? 1 - eps : 0.f);
    put(dz, i, (prob[i] - t) / batch, acc);
  }
}

__global__ void
mul_forward_kernel(const float *x, const float *g, float *y, size_t nc, size_t hw, size_t ghw)
{
  unsigned h = (unsigned)hw;
  GRID_LOOP(i, nc * hw) y[i] = x[i] * (ghw == 1 ? g[i / h] : g[i]);
}

__global__ void
mul_backward_x_kernel(const float *dy, const float *g, float *dx, size_t nc, size_t hw, size_t ghw, int acc)
{
  unsigned h = (unsigned)hw;
  GRID_LOOP(i, nc * hw) put(dx, i, dy[i] * (ghw == 1 ? g[i / h] : g[i]), acc);
}

__global__ void
mul_backward_full_gate_kernel(const float *dy, const float *x, float *dg, size_t n, int acc)
{
  GRID_LOOP(i, n) put(dg, i, dy[i] * x[i], acc);
}

/* One warp per plane: the broadcast gate's gradient sums its plane. */
__global__ void
mul_backward_channel_gate_kernel(const float *dy, const float *x, float *dg, size_t nc, size_t hw, int acc)
{
  size_t warp = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  if (warp >= nc)
    return;
  float s = 0;
  for (size_t k = lane; k < hw; k += 32)
    s += dy[warp * hw + k] * x[warp * hw + k];
  for (int o = 16; o > 0; o /= 2)
    s += __shfl_down_sync(0xffffffffu, s, o);
  if (lane == 0)
    put(dg, warp, s, acc);
}

__global__ void
crop_forward_kernel(const float *x, float *y, size_t nc, int h, int w, int top, int left, int oh, int ow)
{
  GRID_LOOP(i, nc * oh * ow) {
    unsigned q = i / ow, c = i - q * ow, r = q % oh, plane = q / oh;
    y[i] = x[(plane * h + top + r) * w + left + c];
  }
}

__global__ void
crop_backward_kernel(const float *dy, float *dx, size_t nc, int h, int w, int top, int left, int oh, int ow, int acc)
{
  GRID_LOOP(i, nc * h * w) {
    unsigned q = i / w, plane = q / h;
    int c = (int)(i - q * w) - left, r = (int)(q % h) - top;
    int inside = r >= 0 && r < oh && c >= 0 && c < ow;
    if (inside)
      put(dx, i, dy[(plane * oh + r) * ow + c], acc);
    else if (!acc)
      dx[i] = 0;
  }
}

/* PyTorch's SGD, dampening 0 (as the CPU backend's). */
__global__ void
sgd_kernel(float *w, const float *g, float *v, size_t n, const SieveCuSgd *hp)
{
  float lr = hp->lr, m = hp->momentum, wd = hp->weight_decay;
  int nesterov = hp->nesterov;
  GRID_LOOP(i, n) {
    float gk = g[i] + wd * w[i];
    if (m != 0) {
      float vk = m * v[i] + gk;
      v[i] = vk;
      gk = nesterov ? gk + m * vk : vk;
    }
    w[i] -= lr * gk;
  }
}


/* ---- batch norm ------------------------------------------------------------
 * Per channel over n planes of hw floats.  Each channel's planes are split
 * among `parts` blocks (enough blocks to fill the GPU even with 16
 * channels, which cuDNN's NCHW kernels do not); each block writes its
 * partial sums (in double: sum and sum of squares lose nothing to
 * cancellation at these sizes), and one thread per channel adds the parts
 * in order, so the statistics are the same every run. */

const int BN_THREADS = 256;

__device__ inline double
block_sum(double v, double *shared)
{
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int o = blockDim.x / 2; o > 0; o /= 2) {
    if (threadIdx.x < o)
      shared[threadIdx.x] += shared[threadIdx.x + o];
    __syncthreads();
  }
  double r = shared[0];
  __syncthreads();
  return r;
}

/* partial[(c * parts + p) * 2 + {0, 1}] = the sums of a and of a * (b -
 * shift[c]) over block p's planes of channel c (b NULL: a itself, shift
 * NULL: 0): x and x^2 forward, dy and dy (x - mean) backward. */
__global__ void
bn_partial_kernel(const float *a, const float *b, const float *shift, double *partial, int n, int c, size_t hw,
                  int parts)
{
  __shared__ double shared[BN_THREADS];
  int ch = blockIdx.x / parts, p = blockIdx.x % parts;
  int n0 = (int)((long long)n * p / parts), n1 = (int)((long long)n * (p + 1) / parts);
  unsigned h = (unsigned)hw, count = (unsigned)(n1 - n0) * h;
  double sh = shift ? shift[ch] : 0.0;
  double s1 = 0, s2 = 0;
  for (unsigned i = threadIdx.x; i < count; i += blockDim.x) {
    unsigned q = i / h, plane = n0 + q, k = i - q * h;
    unsigned at = (plane * c + ch) * h + k;
    double va = a[at];
    s1 += va;
    s2 += va * ((b ? (double)b[at] : va) - sh);
  }
  s1 = block_sum(s1, shared);
  s2 = block_sum(s2, shared);
  if (threadIdx.x == 0) {
    partial[(size_t)blockIdx.x * 2] = s1;
    partial[(size_t)blockIdx.x * 2 + 1] = s2;
  }
}

/* A channel's partial sums, added in the order of the parts. */
__device__ inline void
sum_parts(const double *partial, int ch, int parts, double *s1, double *s2)
{
  *s1 = *s2 = 0;
  for (int p = 0; p < parts; p++) {
    *s1 += partial[((size_t)ch * parts + p) * 2];
    *s2 += partial[((size_t)ch * parts + p) * 2 + 1];
  }
}

__global__ void
bn_stats_kernel(const double *partial, int c, int parts, double count, float eps, float momentum, float *save_mean,
                float *save_invstd, float *run_mean, float *run_var)
{
  int ch = blockIdx.x * blockDim.x + threadIdx.x;
  if (ch >= c)
    return;
  double s1, s2;
  sum_parts(partial, ch, parts, &s1, &s2);
  double mean = s1 / count, var = fmax(s2 / count - mean * mean, 0.0);
  save_mean[ch] = (float)mean;
  save_invstd[ch] = (float)(1.0 / sqrt(var + eps));
  /* PyTorch's convention: the running variance is the unbiased one */
  double unbiased = count > 1 ? var * count / (count - 1) : var;
  run_mean[ch] = (float)((1 - momentum) * run_mean[ch] + momentum * mean);
  run_var[ch] = (float)((1 - momentum) * run_var[ch] + momentum * unbiased);
}

/* y = (x - mean) * invstd * gamma + beta; mean and invstd per channel, or
 * from the running statistics (invstd NULL: 1/sqrt(var + eps)). */
__global__ void
bn_apply_kernel(const float *x, float *y, const float *mean, const float *invstd, const float *var, float eps,
                const float *gamma, const float *beta, int c, size_t hw, size_t total)
{
  unsigned h = (unsigned)hw;
  GRID_LOOP(i, total) {
    int ch = (int)(i / h % c);
    float is = invstd ? invstd[ch] : rsqrtf(var[ch] + eps);
    float g = gamma ? gamma[ch] : 1.f, b = beta ? beta[ch] : 0.f;
    y[i] = (x[i] - mean[ch]) * is * g + b;
  }
}

/* From the partial sums of dy and dy*(x - mean): the parameter gradients
 * and, per channel, mean(dy) and mean(dy * xhat) for the input's. */
__global__ void
bn_backward_stats_kernel(const double *partial, int c, int parts, double count, const float *invstd, float *dgamma,
                         float *dbeta, float *chan)
{
  int ch = blockIdx.x * blockDim.x + threadIdx.x;
  if (ch >= c)
    return;
  double s1, s2;
  sum_parts(partial, ch, parts, &s1, &s2);
  double dg = s2 * invstd[ch];
  if (dgamma)
    dgamma[ch] = (float)dg;
  if (dbeta)
    dbeta[ch] = (float)s1;
  chan[ch] = (float)(s1 / count);
  chan[c + ch] = (float)(dg / count);
}

/* dx = gamma invstd (dy - mean(dy) - xhat mean(dy xhat)) */
__global__ void
bn_backward_data_kernel(const float *x, const float *dy, float *dx, const float *gamma, const float *mean,
                        const float *invstd, const float *chan, int c, size_t hw, size_t total, int acc)
{
  unsigned h = (unsigned)hw;
  GRID_LOOP(i, total) {
    int ch = (int)(i / h % c);
    float is = invstd[ch], xhat = (x[i] - mean[ch]) * is;
    float g = gamma ? gamma[ch] : 1.f;
    put(dx, i, g * is * (dy[i] - chan[ch] - xhat * chan[c + ch]), acc);
  }
}

int multiprocessors = 132; /* an H100's, until the backend says */

int
bn_parts(int n, int c)
{
  int parts = (4 * multiprocessors + c - 1) / c; /* about four blocks per multiprocessor */
  return parts < 1 ? 1 : parts > n ? n : parts;
}

/* One thread per 64-bit word of each example's signs: bit j of word w is
 * element 64 w + j of the example being > 0. */
__global__ void
signs_kernel(const float *x, unsigned long long *codes, int batch, unsigned per, unsigned words)
{
  GRID_LOOP(i, (size_t)batch * words) {
    unsigned b = i / words, w = i - b * words;
    const float *e = x + (size_t)b * per;
    unsigned long long word = 0;
    unsigned end = min(per, 64 * w + 64);
    for (unsigned k = 64 * w; k < end; k++)
      word |= (unsigned long long)(e[k] > 0) << (k - 64 * w);
    codes[i] = word;
  }
}

/* One warp per plane: the sum over it of y * g, in double. */
__global__ void
channel_dots_kernel(const float *y, const float *g, double *dots, size_t nc, size_t hw)
{
  size_t warp = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  if (warp >= nc)
    return;
  double s = 0;
  for (size_t k = lane; k < hw; k += 32)
    s += (double)y[warp * hw + k] * g[warp * hw + k];
  for (int o = 16; o > 0; o /= 2)
    s += __shfl_down_sync(0xffffffffu, s, o);
  if (lane == 0)
    dots[warp] = s;
}

unsigned
warp_blocks(size_t warps)
{
  return (unsigned)((warps * 32 + THREADS - 1) / THREADS);
}

} // namespace

extern "C" {

void
sieve__cu_fill(cudaStream_t s, float *dst, float value, size_t n)
{
  fill_kernel<<<blocks_for(n), THREADS, 0, s>>>(dst, value, n);
}

void
sieve__cu_sum(cudaStream_t s, float *dst, const float *const *src, int n_src, size_t n, int acc)
{
  for (int first = 0; first < n_src; first += 8) {
    Srcs p = {};
    int k = n_src - first < 8 ? n_src - first : 8;
    for (int j = 0; j < k; j++)
      p.p[j] = src[first + j];
    sum_kernel<<<blocks_for(n), THREADS, 0, s>>>(dst, p, k, n, acc || first > 0);
  }
}

void
sieve__cu_spread(cudaStream_t s, const float *dy, float *const *dst, const int *acc, int n_dst, size_t n)
{
  for (int first = 0; first < n_dst; first += 8) {
    Dsts d = {};
    int k = n_dst - first < 8 ? n_dst - first : 8;
    for (int j = 0; j < k; j++) {
      d.p[j] = dst[first + j];
      d.acc[j] = acc[first + j];
    }
    spread_kernel<<<blocks_for(n), THREADS, 0, s>>>(dy, d, k, n);
  }
}

int
sieve__cu_act_uses_output(int act)
{
  return act == 0 || act == 1 || act == 3 || act == 4;
}

void
sieve__cu_act_forward(cudaStream_t s, int act, float alpha, const float *x, float *y, size_t n, const uint8_t *mask)
{
  act_forward_kernel<<<blocks_for(n), THREADS, 0, s>>>(act, alpha, x, y, n, mask);
}

void
sieve__cu_act_backward(cudaStream_t s, int act, float alpha, const float *x, const float *y, const float *dy, float *dx,
                       size_t n, const uint8_t *mask, int acc)
{
  act_backward_kernel<<<blocks_for(n), THREADS, 0, s>>>(act, alpha, x, y, dy, dx, n, mask, acc);
}

void
sieve__cu_positive_mask(cudaStream_t s, const float *y, uint8_t *mask, size_t n)
{
  positive_mask_kernel<<<blocks_for(n), THREADS, 0, s>>>(y, mask, n);
}

void
sieve__cu_pool_forward(cudaStream_t s, int max, const SieveCuPool *p, const float *x, float *y, int32_t *idx)
{
  pool_forward_kernel<<<blocks_for((size_t)p->n * p->c * p->oh * p->ow), THREADS, 0, s>>>(max, *p, x, y, idx);
}

void
sieve__cu_pool_backward(cudaStream_t s, int max, const SieveCuPool *p, const float *dy, const int32_t *idx, float *dx,
                        int acc)
{
  pool_backward_kernel<<<blocks_for((size_t)p->n * p->c * p->h * p->w), THREADS, 0, s>>>(max, *p, dy, idx, dx, acc);
}

void
sieve__cu_channels(cudaStream_t s, const float *src, int src_c, int src_off, float *dst, int dst_c, int dst_off, int nc,
                   int n, size_t hw, int acc)
{
  channels_kernel<<<blocks_for((size_t)n * nc * hw), THREADS, 0, s>>>(src, src_c, src_off, dst, dst_c, dst_off, nc, n,
                                                                      hw, acc);
}

void
sieve__cu_gap_forward(cudaStream_t s, const float *x, float *y, size_t nc, size_t hw)
{
  gap_forward_kernel<<<warp_blocks(nc), THREADS, 0, s>>>(x, y, nc, hw);
}

void
sieve__cu_gap_backward(cudaStream_t s, const float *dy, float *dx, size_t nc, size_t hw, int acc)
{
  gap_backward_kernel<<<blocks_for(nc * hw), THREADS, 0, s>>>(dy, dx, nc, hw, acc);
}

void
sieve__cu_linear_forward(cudaStream_t s, const float *x, const float *w, const float *bias, float *y, int batch, int in,
                         int out)
{
  linear_forward_kernel<<<blocks_for((size_t)batch * out), THREADS, 0, s>>>(x, w, bias, y, batch, in, out);
}

void
sieve__cu_linear_backward_data(cudaStream_t s, const float *dy, const float *w, float *dx, int batch, int in, int out,
                               int acc)
{
  linear_backward_data_kernel<<<blocks_for((size_t)batch * in), THREADS, 0, s>>>(dy, w, dx, batch, in, out, acc);
}

void
sieve__cu_linear_backward_weights(cudaStream_t s, const float *dy, const float *x, float *dw, float *dbias, int batch,
                                  int in, int out)
{
  linear_backward_weights_kernel<<<blocks_for((size_t)out * in), THREADS, 0, s>>>(dy, x, dw, dbias, batch, in, out);
}

void
sieve__cu_softmax_ce_forward(cudaStream_t s, const float *z, const int32_t *labels, float *prob, float *loss, int batch,
                             int k, float eps)
{
  softmax_ce_forward_kernel<<<1, THREADS, 0, s>>>(z, labels, prob, loss, batch, k, eps);
}

void
sieve__cu_softmax_ce_backward(cudaStream_t s, const float *prob, const int32_t *labels, float *dz, int batch, int k,
                              float eps, int acc)
{
  softmax_ce_backward_kernel<<<blocks_for((size_t)batch * k), THREADS, 0, s>>>(prob, labels, dz, batch, k, eps, acc);
}

void
sieve__cu_mul_forward(cudaStream_t s, const float *x, const float *g, float *y, size_t nc, size_t hw, size_t ghw)
{
  mul_forward_kernel<<<blocks_for(nc * hw), THREADS, 0, s>>>(x, g, y, nc, hw, ghw);
}

void
sieve__cu_mul_backward(cudaStream_t s, const float *dy, const float *x, const float *g, float *dx, float *dg, size_t nc,
                       size_t hw, size_t ghw, int acc_x, int acc_g)
{
  if (dx)
    mul_backward_x_kernel<<<blocks_for(nc * hw), THREADS, 0, s>>>(dy, g, dx, nc, hw, ghw, acc_x);
  if (dg && ghw == 1)
    mul_backward_channel_gate_kernel<<<warp_blocks(nc), THREADS, 0, s>>>(dy, x, dg, nc, hw, acc_g);
  else if (dg)
    mul_backward_full_gate_kernel<<<blocks_for(nc * hw), THREADS, 0, s>>>(dy, x, dg, nc * hw, acc_g);
}

void
sieve__cu_crop_forward(cudaStream_t s, const float *x, float *y, size_t nc, int h, int w, int top, int left, int oh,
                       int ow)
{
  crop_forward_kernel<<<blocks_for(nc * oh * ow), THREADS, 0, s>>>(x, y, nc, h, w, top, left, oh, ow);
}

void
sieve__cu_crop_backward(cudaStream_t s, const float *dy, float *dx, size_t nc, int h, int w, int top, int left, int oh,
                        int ow, int acc)
{
  crop_backward_kernel<<<blocks_for(nc * h * w), THREADS, 0, s>>>(dy, dx, nc, h, w, top, left, oh, ow, acc);
}

void
sieve__cu_sgd(cudaStream_t s, float *w, const float *g, float *v, size_t n, const SieveCuSgd *hyper)
{
  sgd_kernel<<<blocks_for(n), THREADS, 0, s>>>(w, g, v, n, hyper);
}


void
sieve__cu_set_multiprocessors(int count)
{
  if (count > 0)
    multiprocessors = count;
}

size_t
sieve__cu_bn_scratch_bytes(int n, int c)
{
  return (size_t)c * bn_parts(n, c) * 2 * sizeof(double) + 2 * (size_t)c * sizeof(float);
}

void
sieve__cu_bn_forward(cudaStream_t s, int train, const float *x, float *y, const float *gamma, const float *beta,
                     float *mean, float *invstd, float *run_mean, float *run_var, void *scratch, int n, int c,
                     size_t hw, float eps, float momentum)
{
  size_t total = (size_t)n * c * hw;
  if (!train) {
    bn_apply_kernel<<<blocks_for(total), THREADS, 0, s>>>(x, y, run_mean, NULL, run_var, eps, gamma, beta, c, hw,
                                                          total);
    return;
  }
  int parts = bn_parts(n, c);
  double *partial = (double *)scratch;
  bn_partial_kernel<<<c * parts, BN_THREADS, 0, s>>>(x, NULL, NULL, partial, n, c, hw, parts);
  bn_stats_kernel<<<(c + 127) / 128, 128, 0, s>>>(partial, c, parts, (double)n * hw, eps, momentum, mean, invstd,
                                                  run_mean, run_var);
  bn_apply_kernel<<<blocks_for(total), THREADS, 0, s>>>(x, y, mean, invstd, NULL, eps, gamma, beta, c, hw, total);
}

void
sieve__cu_bn_backward(cudaStream_t s, const float *x, const float *dy, float *dx, const float *gamma,
                      const float *mean, const float *invstd, float *dgamma, float *dbeta, void *scratch, int n,
                      int c, size_t hw, int acc)
{
  int parts = bn_parts(n, c);
  double *partial = (double *)scratch;
  float *chan = (float *)(partial + (size_t)c * parts * 2);
  size_t total = (size_t)n * c * hw;
  /* sums of dy and dy (x - mean) */
  bn_partial_kernel<<<c * parts, BN_THREADS, 0, s>>>(dy, x, mean, partial, n, c, hw, parts);
  bn_backward_stats_kernel<<<(c + 127) / 128, 128, 0, s>>>(partial, c, parts, (double)n * hw, invstd, dgamma, dbeta,
                                                           chan);
  if (dx)
    bn_backward_data_kernel<<<blocks_for(total), THREADS, 0, s>>>(x, dy, dx, gamma, mean, invstd, chan, c, hw, total,
                                                                  acc);
}

void
sieve__cu_signs(cudaStream_t s, const float *x, uint64_t *codes, int batch, size_t per)
{
  unsigned words = (unsigned)((per + 63) / 64);
  signs_kernel<<<blocks_for((size_t)batch * words), THREADS, 0, s>>>(x, (unsigned long long *)codes, batch,
                                                                     (unsigned)per, words);
}

void
sieve__cu_channel_dots(cudaStream_t s, const float *y, const float *g, double *dots, size_t nc, size_t hw)
{
  channel_dots_kernel<<<warp_blocks(nc), THREADS, 0, s>>>(y, g, dots, nc, hw);
}

} // extern "C"
