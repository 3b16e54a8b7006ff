/* depthwise C H K STRIDE THREADS STEPS: one depthwise convolution (groups =
 * channels, pad K/2, no bias) + batch norm + ReLU, batch 128, on the CPU
 * runtime: forward and backward (weights and input) timed per step, the
 * median of STEPS after two warm-up steps; prints one JSON line.
 * bench/depthwise_vs_torch.py runs it beside PyTorch. */
#include <stdio.h>
#include <stdlib.h>

#include <sieve/sieve.h>

static int
cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
  if (argc != 7) {
    fprintf(stderr, "usage: depthwise C H K STRIDE THREADS STEPS\n");
    return 2;
  }
  guint C = atoi(argv[1]), H = atoi(argv[2]), K = atoi(argv[3]), S = atoi(argv[4]), T = atoi(argv[5]),
        steps = atoi(argv[6]), B = 128;
  g_autoptr(SieveGraph) g = sieve_graph_new("depthwise");
  guint x = sieve_graph_input(g, C, H, H);
  SieveOpAttrs a = {.out_channels = C, .kernel = {K, K}, .stride = {S, S}, .pad = {K / 2, K / 2},
                    .dilation = {1, 1}, .groups = C};
  guint h = sieve_graph_add(g, SIEVE_OP_CONV2D, &x, 1, &a);
  h = sieve_graph_relu(g, sieve_graph_batch_norm(g, h));
  GError *error = NULL;
  if (!sieve_graph_finish(g, h, &error))
    g_error("%s", error->message);
  SieveRuntimeOptions o = {.batch = B, .threads = T, .backward = TRUE, .seed = 1};
  g_autoptr(SieveRuntime) rt = sieve_runtime_new(g, &o, &error);
  if (!rt)
    g_error("%s", error->message);
  const SieveGraphNode *out = sieve_graph_node(g, h);
  gsize n_in = (gsize)B * C * H * H, n_out = (gsize)B * out->shape.c * out->shape.h * out->shape.w;
  g_autofree float *in = g_new(float, n_in), *grad = g_new(float, n_out);
  for (gsize i = 0; i < n_in; i++)
    in[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1;
  for (gsize i = 0; i < n_out; i++)
    grad[i] = (float)((i * 40503u) % 1000) / 500000.0f;
  g_autofree double *ms = g_new(double, steps);
  for (guint i = 0; i < steps + 2; i++) {
    gint64 t0 = g_get_monotonic_time();
    if (!sieve_runtime_forward(rt, in, NULL, SIEVE_MODE_TRAIN, &error) || !sieve_runtime_backward(rt, grad, &error))
      g_error("%s", error->message);
    if (i >= 2)
      ms[i - 2] = (g_get_monotonic_time() - t0) / 1000.0;
  }
  qsort(ms, steps, sizeof *ms, cmp);
  printf("{\"C\": %u, \"H\": %u, \"K\": %u, \"stride\": %u, \"threads\": %u, \"ms\": %.3f}\n", C, H, K, S, T,
         ms[steps / 2]);
  return 0;
}
