/* sieve: the CUDA backend's kernels of its own (cuda-kernels.cu), callable
 * from C.  Tensors are plain NCHW float32 on the device; every launch goes
 * on the stream given and returns at once.  "acc" means dst += result
 * (a second reader's contribution to a gradient), else dst = result. */
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Activations, numbered as SieveActivation. */
void sieve__cu_fill(cudaStream_t s, float *dst, float value, size_t n);
/* dst = (acc ? dst : 0) + src[0] + ... + src[n_src - 1] */
void sieve__cu_sum(cudaStream_t s, float *dst, const float *const *src, int n_src, size_t n, int acc);
/* y = f(x); mask (nullable): frozen ReLU, y = mask ? x : alpha x. */
void sieve__cu_act_forward(cudaStream_t s, int act, float alpha, const float *x, float *y, size_t n,
                           const uint8_t *mask);
/* dx = dy f'(x); reads x or y as the activation needs (sieve__cu_act_uses_output). */
void sieve__cu_act_backward(cudaStream_t s, int act, float alpha, const float *x, const float *y, const float *dy,
                            float *dx, size_t n, const uint8_t *mask, int acc);
/* Whether an activation's backward reads its output (else its input). */
int sieve__cu_act_uses_output(int act);
/* mask = y > 0 */
void sieve__cu_positive_mask(cudaStream_t s, const float *y, uint8_t *mask, size_t n);

typedef struct {
  int n, c, h, w, oh, ow, kh, kw, sh, sw, ph, pw;
} SieveCuPool;
/* Average pooling never counts padding; max pooling keeps the first
 * maximum's position (in its plane) in idx. */
void sieve__cu_pool_forward(cudaStream_t s, int max, const SieveCuPool *p, const float *x, float *y, int32_t *idx);
void sieve__cu_pool_backward(cudaStream_t s, int max, const SieveCuPool *p, const float *dy, const int32_t *idx,
                             float *dx, int acc);

/* Channels [src_off, src_off + nc) of src (src_c channels) into channels
 * [dst_off, ...) of dst (dst_c channels), for every example: concat forward
 * and its backward. */
void sieve__cu_channels(cudaStream_t s, const float *src, int src_c, int src_off, float *dst, int dst_c, int dst_off,
                        int nc, int n, size_t hw, int acc);
/* Mean over hw of each of nc planes, and its backward. */
void sieve__cu_gap_forward(cudaStream_t s, const float *x, float *y, size_t nc, size_t hw);
void sieve__cu_gap_backward(cudaStream_t s, const float *dy, float *dx, size_t nc, size_t hw, int acc);

/* y[b, o] = x[b, :] . w[o, :] + bias[o] (bias nullable). */
void sieve__cu_linear_forward(cudaStream_t s, const float *x, const float *w, const float *bias, float *y, int batch,
                              int in, int out);
void sieve__cu_linear_backward_data(cudaStream_t s, const float *dy, const float *w, float *dx, int batch, int in,
                                    int out, int acc);
/* dw = dy^T x, dbias = column sums of dy (nullable). */
void sieve__cu_linear_backward_weights(cudaStream_t s, const float *dy, const float *x, float *dw, float *dbias,
                                       int batch, int in, int out);

/* Softmax cross-entropy with label smoothing eps: prob = softmax(z) and
 * loss[0] = the batch mean; labels outside 0..k-1 count nothing (a batch
 * without labels). */
void sieve__cu_softmax_ce_forward(cudaStream_t s, const float *z, const int32_t *labels, float *prob, float *loss,
                                  int batch, int k, float eps);
void sieve__cu_softmax_ce_backward(cudaStream_t s, const float *prob, const int32_t *labels, float *dz, int batch,
                                   int k, float eps, int acc);

/* y = x * g, g per element (ghw = hw) or per channel (ghw = 1). */
void sieve__cu_mul_forward(cudaStream_t s, const float *x, const float *g, float *y, size_t nc, size_t hw, size_t ghw);
void sieve__cu_mul_backward(cudaStream_t s, const float *dy, const float *x, const float *g, float *dx, float *dg,
                            size_t nc, size_t hw, size_t ghw, int acc_x, int acc_g);

/* y = x[:, top:top+oh, left:left+ow] over nc planes of h x w. */
void sieve__cu_crop_forward(cudaStream_t s, const float *x, float *y, size_t nc, int h, int w, int top, int left,
                            int oh, int ow);
void sieve__cu_crop_backward(cudaStream_t s, const float *dy, float *dx, size_t nc, int h, int w, int top, int left,
                             int oh, int ow, int acc);

/* Batch norm over n x c x hw, statistics per channel (training: the
 * batch's, saved in mean and invstd, and the running ones updated with
 * momentum, PyTorch's convention; else the running ones).  gamma and beta
 * NULL: 1 and 0.  scratch: sieve__cu_bn_scratch_bytes. */
size_t sieve__cu_bn_scratch_bytes(int n, int c);
/* The GPU's multiprocessors, which batch norm sizes its grid by (set at
 * compile time; every GPU of one process is taken to be alike). */
void sieve__cu_set_multiprocessors(int count);
void sieve__cu_bn_forward(cudaStream_t s, int train, const float *x, float *y, const float *gamma, const float *beta,
                          float *mean, float *invstd, float *run_mean, float *run_var, void *scratch, int n, int c,
                          size_t hw, float eps, float momentum);
/* dx (nullable), dgamma and dbeta (nullable) from the saved statistics. */
void sieve__cu_bn_backward(cudaStream_t s, const float *x, const float *dy, float *dx, const float *gamma,
                           const float *mean, const float *invstd, float *dgamma, float *dbeta, void *scratch, int n,
                           int c, size_t hw, int acc);

/* The gradient dy handed to n_dst inputs at once (a sum's backward):
 * dst[k] = (acc[k] ? dst[k] : 0) + dy. */
void sieve__cu_spread(cudaStream_t s, const float *dy, float *const *dst, const int *acc, int n_dst, size_t n);

/* What the proxies read, reduced on the GPU before it comes down: each
 * example's signs (per elements, 64 to a word, plain order), and per plane
 * of hw the sum of y * g in double. */
void sieve__cu_signs(cudaStream_t s, const float *x, uint64_t *codes, int batch, size_t per);
void sieve__cu_channel_dots(cudaStream_t s, const float *y, const float *g, double *dots, size_t nc, size_t hw);

/* The SGD hyperparameters, read by the update on the device so that a
 * captured step serves every learning rate of a schedule. */
typedef struct {
  float lr, momentum, weight_decay;
  int nesterov;
} SieveCuSgd;
void sieve__cu_sgd(cudaStream_t s, float *w, const float *g, float *v, size_t n, const SieveCuSgd *hyper);

#ifdef __cplusplus
}
#endif
