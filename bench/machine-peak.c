/* What this machine can do in float32, as a ceiling for the proxy speed
 * bench (bench/proxies_speed.py): a forward and backward pass cannot beat
 * the rate of fused multiply-adds, nor, in practice, oneDNN's rate on a
 * large convolution.
 *
 *   machine-peak [--threads T]
 *
 * prints one JSON line:
 *   fma_gflops   independent FMAs from registers on T threads (AVX-512 where
 *                the CPU has it, else AVX2+FMA), 2 FLOP each: the peak;
 *   conv_gflops  sieve's runtime (oneDNN) on a 3x3 convolution, 64 -> 64
 *                channels, 32x32, batch 64: forward, data gradient and
 *                weight gradient, 6 FLOP per MAC, best of 10 steps.
 */
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>

#include <sieve/sieve.h>

#define FMA_ROUNDS 20000000L

/* 12 independent chains, written out so that they stay in registers, hide
 * the FMA latency (4 cycles) on two FMA ports. */
#define CHAINS(T, SET1, FMA)                                                                                     \
  T m = SET1(0.999999f), c = SET1(1e-7f);                                                                        \
  T a0 = SET1(0), a1 = SET1(1), a2 = SET1(2), a3 = SET1(3), a4 = SET1(4), a5 = SET1(5);                          \
  T a6 = SET1(6), a7 = SET1(7), a8 = SET1(8), a9 = SET1(9), a10 = SET1(10), a11 = SET1(11);                      \
  for (long r = 0; r < rounds; r++) {                                                                            \
    a0 = FMA(a0, m, c), a1 = FMA(a1, m, c), a2 = FMA(a2, m, c), a3 = FMA(a3, m, c);                              \
    a4 = FMA(a4, m, c), a5 = FMA(a5, m, c), a6 = FMA(a6, m, c), a7 = FMA(a7, m, c);                              \
    a8 = FMA(a8, m, c), a9 = FMA(a9, m, c), a10 = FMA(a10, m, c), a11 = FMA(a11, m, c);                          \
  }                                                                                                              \
  T sum = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11

__attribute__((target("avx512f"))) static float
fma_avx512(long rounds)
{
  CHAINS(__m512, _mm512_set1_ps, _mm512_fmadd_ps);
  return _mm512_reduce_add_ps(sum);
}

__attribute__((target("avx2,fma"))) static float
fma_avx2(long rounds)
{
  CHAINS(__m256, _mm256_set1_ps, _mm256_fmadd_ps);
  float v[8];
  _mm256_storeu_ps(v, sum);
  return v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
}

static double
fma_gflops(int threads, const char **isa)
{
  __builtin_cpu_init();
  gboolean wide = __builtin_cpu_supports("avx512f");
  if (!wide && !__builtin_cpu_supports("fma"))
    return NAN;
  *isa = wide ? "avx512f" : "avx2+fma";
  int lanes = wide ? 16 : 8;
  volatile float sink = 0;
  double best = 0;
  for (int attempt = 0; attempt < 20; attempt++) {
    gint64 t0 = g_get_monotonic_time();
#pragma omp parallel num_threads(threads)
    {
      float s = wide ? fma_avx512(FMA_ROUNDS / 4) : fma_avx2(FMA_ROUNDS / 4);
#pragma omp atomic
      sink += s;
    }
    double sec = (g_get_monotonic_time() - t0) / 1e6;
    best = MAX(best, 2.0 * lanes * 12 * (FMA_ROUNDS / 4) * threads / sec / 1e9);
  }
  return best;
}

static double
conv_gflops(guint threads, GError **error)
{
  const guint batch = 64, ch = 64, size = 32;
  g_autoptr(SieveGraph) g = sieve_graph_new("peak");
  guint x = sieve_graph_input(g, ch, size, size);
  guint h = sieve_graph_conv2d(g, x, ch, 3, 1, 1, FALSE);
  guint out = sieve_graph_linear(g, sieve_graph_global_avg_pool(g, h), 10, TRUE);
  if (!sieve_graph_finish(g, out, error))
    return NAN;
  SieveRuntimeOptions o = {.batch = batch, .threads = threads, .backward = TRUE, .input_grad = TRUE, .seed = 1};
  g_autoptr(SieveRuntime) rt = sieve_runtime_new(g, &o, error);
  if (rt == NULL)
    return NAN;
  gsize n = (gsize)batch * ch * size * size;
  g_autofree float *in = g_new(float, n);
  g_autofree float *dy = g_new(float, batch * 10);
  for (gsize i = 0; i < n; i++)
    in[i] = (float)sin(0.01 * i);
  for (guint i = 0; i < batch * 10; i++)
    dy[i] = 1;
  double best = INFINITY;
  for (int step = 0; step < 11; step++) {
    gint64 t0 = g_get_monotonic_time();
    if (!sieve_runtime_forward(rt, in, NULL, SIEVE_MODE_TRAIN, error) || !sieve_runtime_backward(rt, dy, error))
      return NAN;
    if (step > 0) /* the first runs on cold memory */
      best = MIN(best, (g_get_monotonic_time() - t0) / 1e6);
  }
  double macs = (double)batch * ch * ch * 9 * size * size;
  return 6 * macs / best / 1e9;
}

int
main(int argc, char **argv)
{
  int threads = 2;
  GOptionEntry entries[] = {
    {"threads", 't', 0, G_OPTION_ARG_INT, &threads, "threads (default 2)", "T"},
    {NULL},
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("- float32 FMA peak and oneDNN convolution rate");
  g_option_context_add_main_entries(ctx, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &error) || threads < 1) {
    g_printerr("machine-peak: %s\n", error ? error->message : "--threads must be at least 1");
    return 2;
  }
  const char *isa = "none";
  double fma = fma_gflops(threads, &isa);
  double conv = conv_gflops((guint)threads, &error);
  if (error) {
    g_printerr("machine-peak: %s\n", error->message);
    return 1;
  }
  printf("{\"threads\": %d, \"isa\": \"%s\", \"fma_gflops\": %.1f, \"conv_gflops\": %.1f}\n", threads, isa, fma, conv);
  return 0;
}
