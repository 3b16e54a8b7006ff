/* onnx-ops DIR: one small graph per operation of the IR, each with random
 * weights and random batch-norm statistics, written as DIR/NAME.onnx (batch
 * 4, or a symbolic batch where NAME ends in _dynamic), DIR/NAME.x.npy (an input) and DIR/NAME.y.npy (sieve's eval-mode
 * output for it), for test_onnx.py to check with independent consumers. */
#include <stdio.h>

#include <sieve/sieve.h>
#include "data/data-private.h"

#define B 4

typedef guint (*Build)(SieveGraph *g, guint x);

static guint
b_conv(SieveGraph *g, guint x)
{
  SieveOpAttrs a = {.out_channels = 6, .kernel = {3, 3}, .stride = {2, 2}, .pad = {2, 2}, .dilation = {2, 2},
                    .groups = 3, .bias = TRUE};
  guint h = sieve_graph_add(g, SIEVE_OP_CONV2D, &x, 1, &a);
  /* And a plain one without bias, on a non-square kernel. */
  SieveOpAttrs b = {.out_channels = 4, .kernel = {1, 3}, .stride = {1, 1}, .pad = {0, 1}};
  return sieve_graph_add(g, SIEVE_OP_CONV2D, &h, 1, &b);
}

static guint
b_batch_norm(SieveGraph *g, guint x)
{
  guint h = sieve_graph_batch_norm(g, x);
  SieveOpAttrs plain = {.eps = 1e-3, .momentum = 0.1, .affine = FALSE};
  return sieve_graph_add(g, SIEVE_OP_BATCH_NORM, &h, 1, &plain);
}

#define ACT(NAME, KIND, ALPHA)                                                                                     \
  static guint b_##NAME(SieveGraph *g, guint x)                                                                   \
  {                                                                                                                \
    return sieve_graph_activation(g, x, KIND, ALPHA);                                                              \
  }
ACT(relu, SIEVE_ACT_RELU, 0)
ACT(leaky_relu, SIEVE_ACT_LEAKY_RELU, 0.1)
ACT(elu, SIEVE_ACT_ELU, 0.7)
ACT(tanh, SIEVE_ACT_TANH, 0)
ACT(sigmoid, SIEVE_ACT_SIGMOID, 0)
ACT(gelu, SIEVE_ACT_GELU, 0)
ACT(swish, SIEVE_ACT_SWISH, 0)
ACT(hard_sigmoid, SIEVE_ACT_HARD_SIGMOID, 0)
ACT(hard_swish, SIEVE_ACT_HARD_SWISH, 0)

/* Squeeze-and-excitation: x * hard_sigmoid(conv1x1(gap(x))), a 3x1x1 gate. */
static guint
b_mul(SieveGraph *g, guint x)
{
  guint gate = sieve_graph_conv2d(g, sieve_graph_global_avg_pool(g, x), 3, 1, 1, 0, TRUE);
  return sieve_graph_mul(g, x, sieve_graph_activation(g, gate, SIEVE_ACT_HARD_SIGMOID, 0));
}

static guint
b_avg_pool(SieveGraph *g, guint x)
{
  /* Padding, so that count_include_pad off matters at the borders. */
  return sieve_graph_pool(g, x, SIEVE_POOL_AVG, 3, 1, 1);
}

static guint
b_max_pool(SieveGraph *g, guint x)
{
  return sieve_graph_pool(g, x, SIEVE_POOL_MAX, 3, 2, 1);
}

static guint
b_add(SieveGraph *g, guint x)
{
  guint c = sieve_graph_conv2d(g, x, 3, 3, 1, 1, FALSE);
  guint terms[3] = {x, c, sieve_graph_zero(g, x)}; /* the zero is pruned */
  return sieve_graph_sum(g, terms, 3);
}

static guint
b_concat(SieveGraph *g, guint x)
{
  guint c = sieve_graph_conv2d(g, x, 2, 1, 1, 0, TRUE);
  guint parts[2] = {x, c};
  return sieve_graph_concat(g, parts, 2);
}

static guint
b_global_avg_pool(SieveGraph *g, guint x)
{
  return sieve_graph_global_avg_pool(g, x);
}

static guint
b_linear(SieveGraph *g, guint x)
{
  /* From a 4-d input, then inside the network (back to N x C x 1 x 1),
   * then without bias at the end. */
  guint h = sieve_graph_linear(g, x, 7, TRUE);
  h = sieve_graph_relu(g, h);
  h = sieve_graph_linear(g, h, 5, TRUE);
  return sieve_graph_linear(g, h, 4, FALSE);
}

static guint
b_identity(SieveGraph *g, guint x)
{
  guint h = sieve_graph_identity(g, x);
  h = sieve_graph_conv2d(g, h, 3, 3, 1, 1, FALSE);
  return sieve_graph_identity(g, h);
}

static guint
b_zero(SieveGraph *g, guint x)
{
  /* A zero that a convolution with bias and a batch norm read: a real
   * zero tensor, whose outputs are not zero. */
  guint z = sieve_graph_zero(g, x);
  guint h = sieve_graph_conv2d(g, z, 3, 3, 1, 1, TRUE);
  h = sieve_graph_batch_norm(g, h);
  guint terms[2] = {h, sieve_graph_conv2d(g, x, 3, 1, 1, 0, FALSE)};
  return sieve_graph_sum(g, terms, 2);
}

static guint
b_softmax_ce(SieveGraph *g, guint x)
{
  guint h = sieve_graph_global_avg_pool(g, x);
  h = sieve_graph_linear(g, h, 10, TRUE);
  return sieve_graph_softmax_ce(g, h, 0); /* exported: its logits */
}

static guint
b_crop(SieveGraph *g, guint x)
{
  /* DARTS's factorized reduction: 1x1 stride-2 convolutions of x and of
   * x[:, 1:, 1:], concatenated. */
  guint a = sieve_graph_conv2d(g, x, 2, 1, 2, 0, FALSE);
  guint b = sieve_graph_conv2d(g, sieve_graph_crop(g, x, 1, 1, 7, 7), 2, 1, 2, 0, FALSE);
  return sieve_graph_concat(g, (guint[]){a, b}, 2);
}

/* A constant (a convolution with bias and a batch norm of a zero) beside a
 * convolution of x, concatenated: exported with a symbolic batch, the
 * constant's one row must be expanded to the N rows of the other input. */
static guint
b_concat_constant(SieveGraph *g, guint x)
{
  guint h = sieve_graph_conv2d(g, sieve_graph_zero(g, x), 2, 1, 1, 0, TRUE);
  h = sieve_graph_batch_norm(g, h);
  return sieve_graph_concat(g, (guint[]){sieve_graph_conv2d(g, x, 3, 3, 1, 1, FALSE), h}, 2);
}

static const struct {
  const char *name;
  Build build;
  gboolean dynamic; /* exported with a symbolic batch (--dynamic-batch) */
} ops[] = {
    {"conv2d", b_conv},
    {"batch_norm", b_batch_norm},
    {"relu", b_relu},
    {"leaky_relu", b_leaky_relu},
    {"elu", b_elu},
    {"tanh", b_tanh},
    {"sigmoid", b_sigmoid},
    {"gelu", b_gelu},
    {"swish", b_swish},
    {"hard_sigmoid", b_hard_sigmoid},
    {"hard_swish", b_hard_swish},
    {"mul", b_mul},
    {"avg_pool", b_avg_pool},
    {"max_pool", b_max_pool},
    {"add", b_add},
    {"concat", b_concat},
    {"global_avg_pool", b_global_avg_pool},
    {"linear", b_linear},
    {"identity", b_identity},
    {"zero", b_zero},
    {"softmax_ce", b_softmax_ce},
    {"crop", b_crop},
    {"concat_constant_dynamic", b_concat_constant, TRUE},
};

static gboolean
write_npy(const char *path, guint ndims, const guint64 *dims, const float *data, GError **error)
{
  g_autoptr(GBytes) bytes = sieve__npy_encode(SIEVE_NPY_F32, ndims, dims, data);
  return sieve_model_write_file(path, bytes, error);
}

static gboolean
one(const char *dir, guint i, GError **error)
{
  g_autoptr(SieveGraph) g = sieve_graph_new(ops[i].name);
  guint x = sieve_graph_input(g, 3, 8, 8);
  guint out = ops[i].build(g, x);
  if (!sieve_graph_finish(g, out, error))
    return FALSE;
  SieveRuntimeOptions ro = {.batch = B, .threads = 1, .seed = 7 + i};
  g_autoptr(SieveRuntime) rt = sieve_runtime_new(g, &ro, error);
  if (rt == NULL)
    return FALSE;
  GRand *r = g_rand_new_with_seed(100 + i);
  /* Batch norm far from the identity: random affine terms and statistics. */
  for (guint p = 0; p < sieve_runtime_n_params(rt); p++) {
    const SieveParamInfo *info = sieve_runtime_param_info(rt, p);
    if (sieve_graph_node(g, info->node)->kind != SIEVE_OP_BATCH_NORM)
      continue;
    g_autofree float *v = g_new(float, info->size);
    for (guint64 k = 0; k < info->size; k++)
      v[k] = (float)g_rand_double_range(r, 0.5, 1.5) * (g_str_equal(info->name, "beta") ? 0.3f : 1.0f);
    if (!sieve_runtime_set_param(rt, p, v, error))
      return FALSE;
  }
  for (guint v = 0; v < sieve_graph_n_nodes(g); v++) {
    const SieveGraphNode *n = sieve_graph_node(g, v);
    if (n->kind != SIEVE_OP_BATCH_NORM)
      continue;
    g_autofree float *mean = g_new(float, n->shape.c);
    g_autofree float *var = g_new(float, n->shape.c);
    for (guint c = 0; c < n->shape.c; c++) {
      mean[c] = (float)g_rand_double_range(r, -0.5, 0.5);
      var[c] = (float)g_rand_double_range(r, 0.3, 2.0);
    }
    if (!sieve_runtime_set_running_stats(rt, v, mean, var, error))
      return FALSE;
  }
  gsize n_in = (gsize)B * 3 * 8 * 8;
  g_autofree float *xs = g_new(float, n_in);
  for (gsize k = 0; k < n_in; k++)
    xs[k] = (float)g_rand_double_range(r, -2, 2);
  g_rand_free(r);
  guint logits = out;
  if (sieve_graph_node(g, out)->kind == SIEVE_OP_SOFTMAX_CE)
    logits = sieve_graph_node(g, out)->inputs[0];
  const SieveGraphNode *ln = sieve_graph_node(g, logits);
  gsize n_out = (gsize)B * ln->shape.c * ln->shape.h * ln->shape.w;
  g_autofree float *ys = g_new(float, n_out);
  if (!sieve_runtime_forward(rt, xs, NULL, SIEVE_MODE_EVAL, error) || !sieve_runtime_read(rt, logits, ys, error))
    return FALSE;
  g_autoptr(SieveWeights) w = sieve_weights_from_runtime(rt, g, error);
  if (w == NULL)
    return FALSE;
  sieve_weights_set_meta(w, "genotype", ops[i].name);
  g_autoptr(GBytes) onnx = sieve_onnx_encode(g, w, &(SieveOnnxOptions){.batch = ops[i].dynamic ? 0 : B}, error);
  if (onnx == NULL)
    return FALSE;
  g_autofree char *base = g_build_filename(dir, ops[i].name, NULL);
  g_autofree char *onnx_path = g_strconcat(base, ".onnx", NULL);
  g_autofree char *x_path = g_strconcat(base, ".x.npy", NULL);
  g_autofree char *y_path = g_strconcat(base, ".y.npy", NULL);
  guint64 xd[4] = {B, 3, 8, 8}, yd[4] = {B, ln->shape.c, ln->shape.h, ln->shape.w};
  /* A linear output is N x K in ONNX, as Gemm gives it. */
  guint y_ndims = ln->kind == SIEVE_OP_LINEAR ? 2 : 4;
  return sieve_model_write_file(onnx_path, onnx, error) && write_npy(x_path, 4, xd, xs, error) &&
         write_npy(y_path, y_ndims, yd, ys, error);
}

int
main(int argc, char **argv)
{
  if (argc != 2) {
    fprintf(stderr, "usage: onnx-ops DIR\n");
    return 2;
  }
  /* Every operation of the IR but the input has a graph here. */
  G_STATIC_ASSERT(SIEVE_N_OPS == 14 && SIEVE_N_ACTIVATIONS == 9);
  for (guint i = 0; i < G_N_ELEMENTS(ops); i++) {
    GError *error = NULL;
    if (!one(argv[1], i, &error)) {
      fprintf(stderr, "onnx-ops: %s: %s\n", ops[i].name, error->message);
      return 1;
    }
    printf("%s\n", ops[i].name);
  }
  return 0;
}
