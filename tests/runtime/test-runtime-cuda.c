/* The CUDA backend against the CPU backend, on the same weights and batch:
 * every operation's output and gradients (input and parameters), whole
 * NAS-Bench-201 networks, SGD steps replayed from CUDA graphs, running
 * statistics, and the errors a user meets (no GPU, out of memory).
 * Without a GPU (or a build without the backend) every case but the
 * device one skips with a message.
 *
 * Tolerances, strict float32 on both sides (cuDNN's and oneDNN's
 * algorithms sum in different orders):
 *   single operations  |gpu - cpu| <= 1e-5 + 1e-4 |cpu| per element;
 *   whole networks     ||gpu - cpu|| <= 2e-2 ||cpu|| + 2e-4 G per tensor, G
 *                      the largest gradient norm of any tensor of the
 *                      network: fifteen cells of batch norms magnify
 *                      rounding (and cuDNN's fastest fp32 algorithms,
 *                      Winograd and FFT among them, round differently
 *                      from direct convolution), and a tensor whose exact
 *                      gradient is zero (the beta of a batch norm that
 *                      another batch norm follows) holds rounding noise on
 *                      both sides, which only the absolute term can judge;
 *   TF32 against strict fp32: ||.|| relative <= 2e-2 on the logits. */
#include <math.h>
#include <string.h>

#include <sieve/sieve.h>

#include "test-support.h"

static SieveRegistry *registry;
static char *no_gpu; /* why the GPU cases skip; NULL when they run */
/* "cuda"; SIEVE_TEST_CUDA_AS=cpu runs the harness CPU against CPU, a dry
 * run of the cases themselves on a machine without a GPU. */
static const char *gpu_device = "cuda";

static gboolean
skip_without_gpu(void)
{
  if (no_gpu)
    g_test_skip(no_gpu);
  return no_gpu != NULL;
}

/* The cases about the GPU itself (its precision, its memory, its device
 * names) have nothing to check in a dry run on the CPU. */
static gboolean
skip_in_dry_run(void)
{
  if (!g_str_equal(gpu_device, "cuda"))
    g_test_skip("a dry run on another device (SIEVE_TEST_CUDA_AS)");
  return !g_str_equal(gpu_device, "cuda");
}

static SieveRuntime *
compile(const SieveGraph *g, const char *device, guint batch, gboolean keep_all, const char *precision)
{
  SieveRuntimeOptions o = {.device = device, .precision = precision, .batch = batch, .threads = 2, .backward = TRUE,
                           .input_grad = TRUE, .keep_all = keep_all, .seed = 11};
  GError *error = NULL;
  SieveRuntime *rt = sieve_runtime_new(g, &o, &error);
  g_assert_no_error(error);
  return rt;
}

static float *
randn(gsize n, guint64 seed)
{
  SieveRng rng;
  sieve_rng_seed(&rng, seed);
  float *v = g_new(float, n);
  for (gsize k = 0; k < n; k++)
    v[k] = (float)sieve_rng_normal(&rng);
  return v;
}

static gsize
numel(SieveShape s)
{
  return (gsize)s.c * s.h * s.w;
}

/* Worst |a - b| / (atol + rtol |b|) over n elements. */
static double
worst(const float *a, const float *b, gsize n, double rtol, double atol)
{
  double w = 0;
  for (gsize k = 0; k < n; k++) {
    double r = fabs((double)a[k] - b[k]) / (atol + rtol * fabs(b[k]));
    if (!(r <= w)) /* NaN too */
      w = isnan(r) ? INFINITY : r;
  }
  return w;
}

static double
norm2(const float *a, gsize n)
{
  double s = 0;
  for (gsize k = 0; k < n; k++)
    s += (double)a[k] * a[k];
  return sqrt(s);
}

static double
diff_norm(const float *a, const float *b, gsize n)
{
  double d = 0;
  for (gsize k = 0; k < n; k++)
    d += ((double)a[k] - b[k]) * ((double)a[k] - b[k]);
  return sqrt(d);
}

static double
rel_norm(const float *a, const float *b, gsize n)
{
  double d = 0, s = 0;
  for (gsize k = 0; k < n; k++) {
    d += ((double)a[k] - b[k]) * ((double)a[k] - b[k]);
    s += (double)b[k] * b[k];
  }
  return sqrt(d) / MAX(sqrt(s), 1e-30);
}

/* Runs forward (train), backward and the comparisons of the output, the
 * input's gradient and every parameter's gradient; per-element tolerances
 * when elementwise, else relative norms (rtol). */
static void
compare(const SieveGraph *g, guint batch, gboolean elementwise, double rtol, const char *what)
{
  g_autoptr(SieveRuntime) cpu = compile(g, "cpu", batch, FALSE, NULL);
  g_autoptr(SieveRuntime) gpu = compile(g, gpu_device, batch, FALSE, "fp32");
  g_assert_cmpuint(sieve_runtime_n_params(cpu), ==, sieve_runtime_n_params(gpu));
  GError *error = NULL;
  SieveShape is = sieve_graph_node(g, sieve_graph_input_node(g))->shape;
  guint out = sieve_graph_output(g);
  gboolean loss = sieve_graph_node(g, out)->kind == SIEVE_OP_SOFTMAX_CE;
  g_autofree float *x = randn(batch * numel(is), 5);
  g_autofree gint32 *labels = g_new(gint32, batch);
  g_autofree float *dy = NULL;
  if (loss) {
    guint K = sieve_graph_node(g, sieve_graph_node(g, out)->inputs[0])->shape.c;
    for (guint b = 0; b < batch; b++)
      labels[b] = (gint32)((b * 7 + 3) % K);
  } else {
    dy = randn(batch * numel(sieve_graph_node(g, out)->shape), 6);
  }
  /* Both start from the same parameters, drawn once by every backend;
   * batch norms get a random gamma and beta so that swapping them shows. */
  for (guint i = 0; i < sieve_runtime_n_params(cpu); i++) {
    const SieveParamInfo *a = sieve_runtime_param_info(cpu, i), *b = sieve_runtime_param_info(gpu, i);
    g_assert_cmpuint(a->node, ==, b->node);
    g_assert_cmpstr(a->name, ==, b->name);
    g_assert_cmpuint(a->size, ==, b->size);
    g_autofree float *pa = g_new(float, a->size), *pb = g_new(float, a->size);
    sieve_runtime_get_param(cpu, i, pa, &error);
    g_assert_no_error(error);
    sieve_runtime_get_param(gpu, i, pb, &error);
    g_assert_no_error(error);
    g_assert_cmpmem(pa, a->size * sizeof(float), pb, a->size * sizeof(float));
    if (g_str_equal(a->name, "gamma") || g_str_equal(a->name, "beta") || g_str_equal(a->name, "bias")) {
      g_autofree float *r = randn(a->size, 100 + i);
      for (guint64 k = 0; k < a->size; k++)
        r[k] = g_str_equal(a->name, "gamma") ? 1 + 0.5f * r[k] : 0.5f * r[k];
      sieve_runtime_set_param(cpu, i, r, &error);
      g_assert_no_error(error);
      sieve_runtime_set_param(gpu, i, r, &error);
      g_assert_no_error(error);
    }
  }
  SieveRuntime *rts[2] = {cpu, gpu};
  for (int k = 0; k < 2; k++) {
    sieve_runtime_forward(rts[k], x, loss ? labels : NULL, SIEVE_MODE_TRAIN, &error);
    g_assert_no_error(error);
    sieve_runtime_backward(rts[k], dy, &error);
    g_assert_no_error(error);
  }
  double w = 0;
  gsize on = batch * numel(sieve_graph_node(g, out)->shape);
  if (loss) {
    double lc = sieve_runtime_loss(cpu), lg = sieve_runtime_loss(gpu);
    w = MAX(w, fabs(lc - lg) / (1e-5 + 1e-4 * fabs(lc)));
  } else {
    g_autofree float *a = g_new(float, on), *b = g_new(float, on);
    sieve_runtime_read(cpu, out, a, &error);
    g_assert_no_error(error);
    sieve_runtime_read(gpu, out, b, &error);
    g_assert_no_error(error);
    w = MAX(w, elementwise ? worst(b, a, on, 1e-4, 1e-5) : rel_norm(b, a, on) / rtol);
  }
  gsize in_n = batch * numel(is);
  g_autofree float *ga = g_new(float, in_n), *gb = g_new(float, in_n);
  sieve_runtime_read_input_grad(cpu, ga, &error);
  g_assert_no_error(error);
  sieve_runtime_read_input_grad(gpu, gb, &error);
  g_assert_no_error(error);
  w = MAX(w, elementwise ? worst(gb, ga, in_n, 1e-4, 1e-5 * MAX(1, sqrt(in_n))) : rel_norm(gb, ga, in_n) / rtol);
  guint np = sieve_runtime_n_params(cpu);
  GPtrArray *ga_all = g_ptr_array_new_with_free_func(g_free), *gb_all = g_ptr_array_new_with_free_func(g_free);
  double G = 0;
  for (guint i = 0; i < np; i++) {
    guint64 n = sieve_runtime_param_info(cpu, i)->size;
    float *pa = g_new(float, n), *pb = g_new(float, n);
    sieve_runtime_get_grad(cpu, i, pa, &error);
    g_assert_no_error(error);
    sieve_runtime_get_grad(gpu, i, pb, &error);
    g_assert_no_error(error);
    g_ptr_array_add(ga_all, pa);
    g_ptr_array_add(gb_all, pb);
    G = MAX(G, norm2(pa, n));
  }
  for (guint i = 0; i < np; i++) {
    guint64 n = sieve_runtime_param_info(cpu, i)->size;
    const float *pa = ga_all->pdata[i], *pb = gb_all->pdata[i];
    double s = 0;
    for (guint64 k = 0; k < n; k++)
      s = MAX(s, fabs(pa[k]));
    double e = elementwise ? worst(pb, pa, n, 1e-4, 1e-5 + 1e-4 * s)
                           : diff_norm(pb, pa, n) / (rtol * (norm2(pa, n) + 1e-2 * G));
    if (e > 1)
      g_test_message("%s: parameter %u (%s of node %u) off by %.3g of the tolerance", what, i,
                     sieve_runtime_param_info(cpu, i)->name, sieve_runtime_param_info(cpu, i)->node, e);
    w = MAX(w, e);
  }
  g_ptr_array_unref(ga_all);
  g_ptr_array_unref(gb_all);
  g_test_message("%s: worst error %.3g of the tolerance (%s)", what, w, sieve_runtime_describe(gpu));
  g_assert_cmpfloat(w, <=, 1.0);
}

/* ---- single operations ---------------------------------------------------- */

typedef struct {
  const char *name;
  guint (*build)(SieveGraph *g, guint x);
} OpCase;

static guint conv3(SieveGraph *g, guint x) { return sieve_graph_conv2d(g, x, 6, 3, 1, 1, FALSE); }
static guint conv_s2_bias(SieveGraph *g, guint x) { return sieve_graph_conv2d(g, x, 4, 3, 2, 1, TRUE); }
static guint
conv_dw(SieveGraph *g, guint x)
{
  guint in[1] = {x};
  SieveOpAttrs a = {.out_channels = 6, .kernel = {3, 3}, .stride = {1, 1}, .pad = {2, 2}, .dilation = {2, 2},
                    .groups = 3};
  return sieve_graph_add(g, SIEVE_OP_CONV2D, in, 1, &a);
}
static guint bn(SieveGraph *g, guint x) { return sieve_graph_batch_norm(g, sieve_graph_conv2d(g, x, 4, 1, 1, 0, FALSE)); }
static guint
bn_plain(SieveGraph *g, guint x)
{
  guint in[1] = {sieve_graph_conv2d(g, x, 4, 1, 1, 0, FALSE)};
  SieveOpAttrs a = {.affine = FALSE, .eps = 1e-5, .momentum = 0.1};
  return sieve_graph_add(g, SIEVE_OP_BATCH_NORM, in, 1, &a);
}
#define ACT(fn, act, alpha)                                                                                          \
  static guint fn(SieveGraph *g, guint x) { return sieve_graph_activation(g, x, act, alpha); }
ACT(relu, SIEVE_ACT_RELU, 0)
ACT(leaky, SIEVE_ACT_LEAKY_RELU, 0.1)
ACT(elu, SIEVE_ACT_ELU, 1.0)
ACT(tanh_, SIEVE_ACT_TANH, 0)
ACT(sigm, SIEVE_ACT_SIGMOID, 0)
ACT(gelu, SIEVE_ACT_GELU, 0)
ACT(swish, SIEVE_ACT_SWISH, 0)
ACT(hsig, SIEVE_ACT_HARD_SIGMOID, 0)
ACT(hswish, SIEVE_ACT_HARD_SWISH, 0)
static guint avg3(SieveGraph *g, guint x) { return sieve_graph_pool(g, x, SIEVE_POOL_AVG, 3, 1, 1); }
static guint max3s2(SieveGraph *g, guint x) { return sieve_graph_pool(g, x, SIEVE_POOL_MAX, 3, 2, 1); }
static guint
add3(SieveGraph *g, guint x)
{
  guint xs[3] = {sieve_graph_conv2d(g, x, 3, 1, 1, 0, FALSE), x, sieve_graph_relu(g, x)};
  return sieve_graph_sum(g, xs, 3);
}
static guint
concat(SieveGraph *g, guint x)
{
  guint xs[3] = {sieve_graph_conv2d(g, x, 2, 1, 1, 0, FALSE), x, sieve_graph_conv2d(g, x, 5, 3, 1, 1, FALSE)};
  return sieve_graph_concat(g, xs, 3);
}
static guint
head(SieveGraph *g, guint x)
{
  return sieve_graph_linear(g, sieve_graph_global_avg_pool(g, x), 7, TRUE);
}
static guint
gate(SieveGraph *g, guint x)
{
  guint s = sieve_graph_activation(g, sieve_graph_conv2d(g, sieve_graph_global_avg_pool(g, x), 3, 1, 1, 0, TRUE),
                                   SIEVE_ACT_HARD_SIGMOID, 0);
  return sieve_graph_mul(g, sieve_graph_mul(g, x, s), sieve_graph_activation(g, x, SIEVE_ACT_SIGMOID, 0));
}
static guint crop(SieveGraph *g, guint x) { return sieve_graph_crop(g, x, 1, 2, 4, 3); }
static guint
zero_sum(SieveGraph *g, guint x)
{
  /* x + 0 aliases x; a pool of a zero folds; a convolution of one reads zeros. */
  guint z = sieve_graph_zero(g, x);
  guint xs[3] = {sieve_graph_identity(g, x), z, sieve_graph_pool(g, z, SIEVE_POOL_AVG, 3, 1, 1)};
  guint s = sieve_graph_sum(g, xs, 3);
  guint ys[2] = {s, sieve_graph_conv2d(g, z, 3, 1, 1, 0, TRUE)};
  return sieve_graph_sum(g, ys, 2);
}

static const OpCase ops[] = {
  {"conv3x3", conv3}, {"conv-stride2-bias", conv_s2_bias}, {"conv-depthwise-dilated", conv_dw},
  {"batch-norm", bn}, {"batch-norm-plain", bn_plain}, {"relu", relu}, {"leaky-relu", leaky}, {"elu", elu},
  {"tanh", tanh_}, {"sigmoid", sigm}, {"gelu", gelu}, {"swish", swish}, {"hard-sigmoid", hsig},
  {"hard-swish", hswish}, {"avg-pool", avg3}, {"max-pool", max3s2}, {"add", add3}, {"concat", concat},
  {"gap-linear", head}, {"mul", gate}, {"crop", crop}, {"zero-folding", zero_sum},
};

static void
test_op(gconstpointer data)
{
  if (skip_without_gpu())
    return;
  const OpCase *oc = data;
  for (int with_loss = 0; with_loss <= 1; with_loss++) {
    g_autoptr(SieveGraph) g = sieve_graph_new(oc->name);
    guint x = sieve_graph_input(g, 3, 7, 6);
    guint y = oc->build(g, x);
    if (with_loss) {
      guint h = sieve_graph_node(g, y)->shape.h > 1 ? sieve_graph_global_avg_pool(g, y) : y;
      y = sieve_graph_linear(g, h, 5, TRUE);
    }
    GError *error = NULL;
    sieve_graph_finish(g, y, &error);
    g_assert_no_error(error);
    if (with_loss) {
      sieve_graph_add_loss(g, 0.1, &error);
      g_assert_no_error(error);
    }
    g_autofree char *what = g_strdup_printf("%s%s", oc->name, with_loss ? " + loss" : "");
    compare(g, 4, TRUE, 0, what);
  }
}

/* ---- whole networks ------------------------------------------------------- */

static SieveGraph *
nb201(const char *arch, guint C, guint N, guint size, guint in_channels, gboolean with_loss)
{
  g_autofree char *yaml =
    g_strdup_printf("{C: %u, N: %u, size: %u, in_channels: %u, classes: 10}", C, N, size, in_channels);
  g_autoptr(SieveSpace) space = test_space_new(registry, "nb201", yaml, NULL);
  return test_space_net(space, arch, with_loss);
}

static const char *const archs[] = {
  "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|",
  "|nor_conv_1x1~0|+|none~0|skip_connect~1|+|nor_conv_3x3~0|none~1|nor_conv_1x1~2|",
  "|avg_pool_3x3~0|+|nor_conv_1x1~0|none~1|+|none~0|avg_pool_3x3~1|skip_connect~2|",
};

static void
test_nb201(gconstpointer data)
{
  if (skip_without_gpu())
    return;
  const char *arch = data;
  g_autoptr(SieveGraph) g = nb201(arch, 16, 5, 32, 3, TRUE);
  compare(g, 16, FALSE, 2e-2, arch);
}

/* Worst relative norm over the parameter tensors of a and b, of their
 * values (what 0) or gradients (what 1); names the worst one. */
static double
params_apart(SieveRuntime *a, SieveRuntime *b, int what, const char *when)
{
  double w = 0, G = 0;
  guint at = 0, np = sieve_runtime_n_params(a);
  float **xs = g_new0(float *, np), **ys = g_new0(float *, np);
  for (guint i = 0; i < np; i++) {
    guint64 n = sieve_runtime_param_info(a, i)->size;
    xs[i] = g_new(float, n);
    ys[i] = g_new(float, n);
    gboolean ok = what ? sieve_runtime_get_grad(a, i, xs[i], NULL) && sieve_runtime_get_grad(b, i, ys[i], NULL)
                       : sieve_runtime_get_param(a, i, xs[i], NULL) && sieve_runtime_get_param(b, i, ys[i], NULL);
    g_assert_true(ok);
    G = MAX(G, norm2(xs[i], n));
  }
  for (guint i = 0; i < np; i++) {
    guint64 n = sieve_runtime_param_info(a, i)->size;
    /* relative, with the absolute floor of the header's comment */
    double r = diff_norm(ys[i], xs[i], n) / MAX(norm2(xs[i], n) + 1e-2 * G, 1e-30);
    g_free(xs[i]);
    g_free(ys[i]);
    if (r > w) {
      w = r;
      at = i;
    }
  }
  g_free(xs);
  g_free(ys);
  g_test_message("%s: %s within %.3g (relative norm; worst: %s of node %u)", when, what ? "gradients" : "parameters",
                 w, sieve_runtime_param_info(a, at)->name, sieve_runtime_param_info(a, at)->node);
  return w;
}

/* SGD steps, the later ones replayed from CUDA graphs, against the CPU's
 * (Nesterov, weight decay, a learning rate that changes every step); one
 * update checked against the formula on the values read before it. */
static void
test_steps(void)
{
  if (skip_without_gpu())
    return;
  g_autoptr(SieveGraph) g = nb201(archs[0], 8, 1, 16, 3, TRUE);
  g_autoptr(SieveRuntime) cpu = compile(g, "cpu", 8, FALSE, NULL);
  g_autoptr(SieveRuntime) gpu = compile(g, gpu_device, 8, FALSE, "fp32");
  g_setenv("SIEVE_CUDA_GRAPHS", "0", TRUE);
  g_autoptr(SieveRuntime) eager = compile(g, gpu_device, 8, FALSE, "fp32");
  g_unsetenv("SIEVE_CUDA_GRAPHS");
  GError *error = NULL;
  SieveSgd sgd = {.lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4, .nesterov = TRUE};
  gint32 labels[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  SieveRuntime *rts[3] = {cpu, gpu, eager};
  g_assert_cmpfloat(params_apart(cpu, gpu, 0, "start"), ==, 0);
  for (guint step = 0; step < 4; step++) {
    g_autofree float *x = randn(8 * 3 * 16 * 16, 40 + step);
    sgd.lr = 0.05 * (4 - step) / 4; /* a schedule: the captured step reads it from the device */
    for (int k = 0; k < 3; k++) {
      sieve_runtime_forward(rts[k], x, labels, SIEVE_MODE_TRAIN, &error);
      g_assert_no_error(error);
      sieve_runtime_backward(rts[k], NULL, &error);
      g_assert_no_error(error);
    }
    g_test_message("step %u: loss %.6f on the CPU, %.6f on the GPU", step, sieve_runtime_loss(cpu),
                   sieve_runtime_loss(gpu));
    g_autofree char *when = g_strdup_printf("step %u", step);
    g_assert_cmpfloat(params_apart(cpu, gpu, 1, when), <=, 1e-2);
    guint last = sieve_runtime_n_params(gpu) - 1;
    guint64 n = sieve_runtime_param_info(gpu, last)->size;
    g_autofree float *w = g_new(float, n), *gr = g_new(float, n), *v = g_new(float, n), *after = g_new(float, n);
    g_assert_true(sieve_runtime_get_param(gpu, last, w, NULL) && sieve_runtime_get_grad(gpu, last, gr, NULL) &&
                  sieve_runtime_get_velocity(gpu, last, v, NULL));
    for (int k = 0; k < 3; k++) {
      sieve_runtime_sgd_step(rts[k], &sgd, &error);
      g_assert_no_error(error);
    }
    g_assert_true(sieve_runtime_get_param(gpu, last, after, NULL));
    double worst_update = 0;
    for (guint64 j = 0; j < n; j++) {
      double gk = gr[j] + sgd.weight_decay * w[j], vk = sgd.momentum * v[j] + gk;
      double want = w[j] - sgd.lr * (gk + sgd.momentum * vk);
      worst_update = MAX(worst_update, fabs(after[j] - want) / (1e-7 + 1e-5 * fabs(want)));
    }
    g_assert_cmpfloat(worst_update, <=, 1);
    g_assert_cmpfloat(params_apart(cpu, gpu, 0, when), <=, 1e-4);
  }
  for (guint i = 0; i < sieve_runtime_n_params(gpu); i++) {
    guint64 n = sieve_runtime_param_info(gpu, i)->size;
    g_autofree float *b = g_new(float, n), *e = g_new(float, n);
    g_assert_true(sieve_runtime_get_param(gpu, i, b, NULL) && sieve_runtime_get_param(eager, i, e, NULL));
    /* cuDNN's deterministic algorithms: replayed graphs give the very bits. */
    g_assert_cmpmem(b, n * sizeof(float), e, n * sizeof(float));
  }
  /* Running statistics, and an eval forward that reads them. */
  guint bn = G_MAXUINT;
  for (guint v = 0; v < sieve_graph_n_nodes(g) && bn == G_MAXUINT; v++)
    if (sieve_graph_node(g, v)->kind == SIEVE_OP_BATCH_NORM)
      bn = v;
  guint C = sieve_graph_node(g, bn)->shape.c;
  g_autofree float *ma = g_new(float, C), *va = g_new(float, C), *mb = g_new(float, C), *vb = g_new(float, C);
  g_assert_true(sieve_runtime_get_running_stats(cpu, bn, ma, va, NULL));
  g_assert_true(sieve_runtime_get_running_stats(gpu, bn, mb, vb, NULL));
  g_test_message("running statistics within %.3g and %.3g", rel_norm(mb, ma, C), rel_norm(vb, va, C));
  g_assert_cmpfloat(rel_norm(mb, ma, C), <=, 1e-4);
  g_assert_cmpfloat(rel_norm(vb, va, C), <=, 1e-4);
  g_autofree float *x = randn(8 * 3 * 16 * 16, 99);
  for (int k = 0; k < 2; k++) {
    sieve_runtime_forward(rts[k], x, labels, SIEVE_MODE_EVAL, &error);
    g_assert_no_error(error);
  }
  g_test_message("eval loss %.6f on the CPU, %.6f on the GPU", sieve_runtime_loss(cpu), sieve_runtime_loss(gpu));
  g_assert_cmpfloat(fabs(sieve_runtime_loss(cpu) - sieve_runtime_loss(gpu)), <=, 1e-4 * fabs(sieve_runtime_loss(cpu)));
}

/* Two backward passes after one forward, as the proxies run them (the
 * loss's, then an input-only one): a runtime compiled with input_grad
 * keeps what both read, and gives the CPU's gradients both times; a
 * training runtime refuses the second with a message. */
static void
test_second_backward(void)
{
  if (skip_without_gpu())
    return;
  g_autoptr(SieveGraph) g = nb201(archs[0], 8, 1, 16, 3, TRUE);
  g_autoptr(SieveRuntime) cpu = compile(g, "cpu", 8, FALSE, NULL);
  g_autoptr(SieveRuntime) gpu = compile(g, gpu_device, 8, FALSE, "fp32");
  gint32 labels[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  g_autofree float *x = randn(8 * 3 * 16 * 16, 77);
  gsize n = 8 * 3 * 16 * 16;
  g_autofree float *a = g_new(float, n), *b = g_new(float, n);
  GError *error = NULL;
  SieveRuntime *rts[2] = {cpu, gpu};
  for (int k = 0; k < 2; k++) {
    g_assert_true(sieve_runtime_forward(rts[k], x, labels, SIEVE_MODE_TRAIN, &error));
    g_assert_true(sieve_runtime_backward(rts[k], NULL, &error));
    g_assert_no_error(error);
  }
  g_assert_cmpfloat(params_apart(cpu, gpu, 1, "the first backward"), <=, 1e-2);
  for (int k = 0; k < 2; k++) {
    g_assert_true(sieve_runtime_backward_input(rts[k], NULL, &error));
    g_assert_no_error(error);
  }
  g_assert_true(sieve_runtime_read_input_grad(cpu, a, &error) && sieve_runtime_read_input_grad(gpu, b, &error));
  g_assert_no_error(error);
  double r = rel_norm(b, a, n);
  g_test_message("input gradient of the second backward within %.3g of the CPU's", r);
  g_assert_cmpfloat(r, <=, 1e-4);
  if (g_str_equal(gpu_device, "cuda")) {
    SieveRuntimeOptions o = {.device = "cuda", .precision = "fp32", .batch = 8, .backward = TRUE, .seed = 11};
    g_autoptr(SieveRuntime) train = sieve_runtime_new(g, &o, &error);
    g_assert_no_error(error);
    g_assert_true(sieve_runtime_forward(train, x, labels, SIEVE_MODE_TRAIN, &error));
    g_assert_true(sieve_runtime_backward(train, NULL, &error));
    g_assert_false(sieve_runtime_backward(train, NULL, &error));
    g_assert_nonnull(error);
    g_assert_nonnull(strstr(error->message, "a second backward"));
    g_clear_error(&error);
  }
}

/* Runtimes compiled and freed from several threads at once reuse the
 * pool's streams, cuDNN handles, pinned buffers and stream-ordered memory
 * (cuda-pool.c), and capture CUDA graphs while others compile: each must
 * give the very bits it gives compiled alone.  The jobs also read
 * parameters and gradients before their passes, so a host copy
 * (cuda-read.c) not dropped by a pass or an SGD step shows as stale
 * gradients or parameters, and one not updated by set_param as a stale
 * parameter. */
#define POOL_JOBS 12
#define POOL_THREADS 4

typedef struct {
  const SieveGraph *g;
  const float *x;
  guint seed;
  gboolean peek; /* read parameters and gradients before the passes */
  float *grad;   /* out: the first and last parameters' first gradients, the last's
                  * last gradient and its value after four SGD steps */
  guint64 n_first, n_last;
  gboolean ok;
} PoolJob;

static void
pool_job(PoolJob *j)
{
  SieveRuntimeOptions o = {.device = gpu_device, .precision = "fp32", .batch = 8, .threads = 1, .backward = TRUE,
                           .seed = j->seed};
  GError *error = NULL;
  g_autoptr(SieveRuntime) rt = sieve_runtime_new(j->g, &o, &error);
  if (rt == NULL) {
    g_test_message("job %u: %s", j->seed, error->message);
    g_error_free(error);
    return;
  }
  guint last = sieve_runtime_n_params(rt) - 1;
  j->n_first = sieve_runtime_param_info(rt, 0)->size;
  j->n_last = sieve_runtime_param_info(rt, last)->size;
  gint32 labels[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  gboolean ok = TRUE;
  if (j->peek) {
    g_autofree float *w = g_new(float, j->n_last), *w0 = g_new(float, j->n_first), *back = g_new(float, MAX(j->n_first, j->n_last));
    g_autofree float *g0 = g_new(float, j->n_first);
    ok = sieve_runtime_get_param(rt, last, w, &error) && sieve_runtime_get_param(rt, 0, w0, &error);
    /* A write through set_param is what the next read gives, and leaves
     * the other parameters as they were. */
    g_autofree float *moved = g_new(float, j->n_last);
    for (guint64 k = 0; ok && k < j->n_last; k++)
      moved[k] = w[k] + 0.25f;
    ok = ok && sieve_runtime_set_param(rt, last, moved, &error) && sieve_runtime_get_param(rt, last, back, &error);
    ok = ok && memcmp(moved, back, j->n_last * sizeof(float)) == 0;
    ok = ok && sieve_runtime_set_param(rt, last, w, &error) && sieve_runtime_get_param(rt, 0, back, &error) &&
         memcmp(w0, back, j->n_first * sizeof(float)) == 0;
    /* Gradients of another batch, read: the passes below must replace them. */
    g_autofree float *other = randn(8 * 3 * 16 * 16, 1000 + j->seed);
    ok = ok && sieve_runtime_forward(rt, other, labels, SIEVE_MODE_TRAIN, &error) &&
         sieve_runtime_backward(rt, NULL, &error) && sieve_runtime_get_grad(rt, 0, g0, &error);
  }
  /* Four steps: the third run of each sequence is captured as a CUDA
   * graph (while other threads compile and free runtimes) and the fourth
   * replays it; the SGD steps move the parameters read at the end. */
  SieveSgd sgd = {.lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4, .nesterov = TRUE};
  for (int step = 0; ok && step < 4; step++) {
    ok = sieve_runtime_forward(rt, j->x, labels, SIEVE_MODE_TRAIN, &error) && sieve_runtime_backward(rt, NULL, &error);
    if (ok && step == 0)
      ok = sieve_runtime_get_grad(rt, 0, j->grad, &error) && sieve_runtime_get_grad(rt, last, j->grad + j->n_first, &error);
    if (ok && j->peek) { /* a host copy of the parameters, valid until the step */
      g_autofree float *before = g_new(float, j->n_last);
      ok = sieve_runtime_get_param(rt, last, before, &error);
    }
    ok = ok && sieve_runtime_sgd_step(rt, &sgd, &error);
  }
  ok = ok && sieve_runtime_get_grad(rt, last, j->grad + j->n_first + j->n_last, &error) &&
       sieve_runtime_get_param(rt, last, j->grad + j->n_first + 2 * j->n_last, &error);
  if (error) {
    g_test_message("job %u: %s", j->seed, error->message);
    g_error_free(error);
  }
  j->ok = ok;
}

static gpointer
pool_thread(gpointer data)
{
  PoolJob **jobs = data;
  for (guint k = 0; jobs[k]; k++)
    pool_job(jobs[k]);
  return NULL;
}

static void
test_pool(void)
{
  if (skip_without_gpu())
    return;
  g_autoptr(SieveGraph) g = nb201(archs[0], 8, 1, 16, 3, TRUE);
  g_autofree float *x = randn(8 * 3 * 16 * 16, 21);
  PoolJob alone[POOL_JOBS], shared[POOL_JOBS];
  gsize cap = 1 << 20;
  for (guint i = 0; i < POOL_JOBS; i++) {
    alone[i] = (PoolJob){.g = g, .x = x, .seed = 1 + i % (POOL_JOBS / 2), .grad = g_new0(float, cap)};
    shared[i] = alone[i];
    shared[i].peek = TRUE;
    shared[i].grad = g_new0(float, cap);
    pool_job(&alone[i]);
    g_assert_true(alone[i].ok);
    g_assert_cmpuint(alone[i].n_first + 3 * alone[i].n_last, <=, cap);
  }
  PoolJob *lists[POOL_THREADS][POOL_JOBS / POOL_THREADS + 1];
  for (guint t = 0; t < POOL_THREADS; t++) {
    guint k = 0;
    for (guint i = t; i < POOL_JOBS; i += POOL_THREADS)
      lists[t][k++] = &shared[i];
    lists[t][k] = NULL;
  }
  GThread *threads[POOL_THREADS];
  for (guint t = 0; t < POOL_THREADS; t++)
    threads[t] = g_thread_new("pool", pool_thread, lists[t]);
  for (guint t = 0; t < POOL_THREADS; t++)
    g_thread_join(threads[t]);
  for (guint i = 0; i < POOL_JOBS; i++) {
    g_assert_true(shared[i].ok);
    gsize n = alone[i].n_first + 3 * alone[i].n_last;
    g_assert_cmpmem(shared[i].grad, n * sizeof(float), alone[i].grad, n * sizeof(float));
    /* Two seeds apart give two networks: the comparison can fail. */
    if (i + 1 < POOL_JOBS && alone[i].seed != alone[i + 1].seed)
      g_assert_true(memcmp(alone[i].grad, alone[i + 1].grad, n * sizeof(float)) != 0);
    g_free(alone[i].grad);
    g_free(shared[i].grad);
  }
}

/* TF32 (the default) stays near strict fp32. */
static void
test_tf32(void)
{
  if (skip_without_gpu() || skip_in_dry_run())
    return;
  g_autoptr(SieveGraph) g = nb201(archs[0], 16, 5, 32, 3, TRUE);
  g_autoptr(SieveRuntime) strict = compile(g, gpu_device, 32, FALSE, "fp32");
  g_autoptr(SieveRuntime) tf32 = compile(g, gpu_device, 32, FALSE, NULL);
  g_assert_nonnull(strstr(sieve_runtime_describe(tf32), "tf32"));
  g_autofree float *x = randn(32 * 3 * 32 * 32, 8);
  guint logits = sieve_graph_node(g, sieve_graph_output(g))->inputs[0];
  float a[320], b[320];
  GError *error = NULL;
  g_assert_true(sieve_runtime_forward(strict, x, NULL, SIEVE_MODE_TRAIN, &error));
  g_assert_true(sieve_runtime_forward(tf32, x, NULL, SIEVE_MODE_TRAIN, &error));
  g_assert_true(sieve_runtime_read(strict, logits, a, &error) && sieve_runtime_read(tf32, logits, b, &error));
  g_assert_no_error(error);
  double r = rel_norm(b, a, 320);
  /* cuDNN may find FMA kernels fastest for some shapes even where TF32 is
   * allowed, so equality is no failure. */
  g_test_message("TF32 logits within %.3g of strict fp32 (relative norm)", r);
  g_assert_cmpfloat(r, <=, 2e-2);
}

/* Training parity: NB201 C=8, N=1, one epoch of Fashion-MNIST (batch 128,
 * the trainer's defaults) on the GPU reaches the CPU backend's test
 * accuracy within one point.  Minutes of CPU: SIEVE_TEST_PARITY=1 asks
 * for it (the GPU machine's check script does). */
static void
test_parity(void)
{
  if (skip_without_gpu())
    return;
  if (!g_getenv("SIEVE_TEST_PARITY")) {
    g_test_skip("set SIEVE_TEST_PARITY=1 to train one epoch on each backend");
    return;
  }
  GError *error = NULL;
  SieveTrainData data = {0};
  g_assert_true(sieve_train_data_load("fashion-mnist", NULL, 0, 0, TRUE, TRUE, 3, &data, &error));
  g_assert_no_error(error);
  g_autoptr(SieveGraph) g = nb201(archs[0], 8, 1, 28, 1, FALSE);
  double acc[2];
  const char *devices[2] = {"cpu", "cuda"};
  for (int k = 0; k < 2; k++) {
    SieveTrainOptions o;
    sieve_train_options_init(&o);
    o.device = k ? gpu_device : devices[k];
    o.epochs = 1;
    o.seed = 5;
    SieveTrainReport r;
    g_assert_true(sieve_train(g, data.train, NULL, data.test, &o, &r, &error));
    g_assert_no_error(error);
    acc[k] = r.test_acc;
    g_test_message("%s: test accuracy %.4f after %u steps, %.0f images/s, %.1f s training", devices[k], r.test_acc,
                   r.steps, r.images_per_s, r.train_s);
  }
  sieve_train_data_clear(&data);
  g_assert_cmpfloat(fabs(acc[1] - acc[0]), <=, 0.01);
}

/* Out of memory fails that runtime with a message, and the next one works. */
static void
test_oom(void)
{
  if (skip_without_gpu() || skip_in_dry_run())
    return;
  g_autoptr(SieveGraph) g = nb201(archs[0], 16, 5, 32, 3, TRUE);
  SieveRuntimeOptions o = {.device = gpu_device, .batch = 100000, .backward = TRUE, .seed = 1};
  GError *error = NULL;
  g_assert_null(sieve_runtime_new(g, &o, &error));
  g_assert_nonnull(error);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, "out of GPU memory"));
  g_clear_error(&error);
  o.batch = 4;
  g_autoptr(SieveRuntime) rt = sieve_runtime_new(g, &o, &error);
  g_assert_no_error(error);
}

/* "cuda" without a GPU is an error that says so; "auto" takes what there is. */
static void
test_device(void)
{
  if (skip_in_dry_run())
    return;
  g_autoptr(SieveGraph) g = sieve_graph_new("tiny");
  guint x = sieve_graph_input(g, 1, 4, 4);
  GError *error = NULL;
  sieve_graph_finish(g, sieve_graph_relu(g, x), &error);
  g_assert_no_error(error);
  SieveRuntimeOptions o = {.device = "auto", .batch = 2, .seed = 1};
  g_autoptr(SieveRuntime) rt = sieve_runtime_new(g, &o, &error);
  g_assert_no_error(error);
  g_test_message("auto: %s", sieve_runtime_describe(rt));
  g_assert_true(g_str_has_prefix(sieve_runtime_describe(rt), no_gpu ? "cpu" : "cuda"));
  o.device = "cuda";
  SieveRuntime *cu = sieve_runtime_new(g, &o, &error);
  if (no_gpu) {
    g_assert_null(cu);
    g_assert_nonnull(error);
    g_test_message("cuda: %s", error->message);
    g_assert_true(strstr(error->message, "no CUDA device") || strstr(error->message, "no CUDA backend"));
    g_clear_error(&error);
  } else {
    g_assert_no_error(error);
    sieve_runtime_free(cu);
  }
  o.device = "gpu";
  g_assert_null(sieve_runtime_new(g, &o, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME);
  g_assert_nonnull(strstr(error->message, "expected cpu, cuda or auto"));
  g_clear_error(&error);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_set_nonfatal_assertions(); /* one failing comparison does not hide the others' figures */
  registry = test_registry_load();
  /* Whether a GPU answers: a tiny runtime on "cuda". */
  {
    g_autoptr(SieveGraph) g = sieve_graph_new("probe");
    sieve_graph_finish(g, sieve_graph_relu(g, sieve_graph_input(g, 1, 2, 2)), NULL);
    if (g_getenv("SIEVE_TEST_CUDA_AS"))
      gpu_device = g_getenv("SIEVE_TEST_CUDA_AS");
    SieveRuntimeOptions o = {.device = gpu_device, .batch = 1};
    GError *error = NULL;
    SieveRuntime *rt = sieve_runtime_new(g, &o, &error);
    if (rt == NULL)
      no_gpu = g_strdup_printf("CUDA tests skipped: %s", error->message);
    g_clear_error(&error);
    sieve_runtime_free(rt);
  }
  g_test_add_func("/runtime/cuda/device", test_device);
  for (guint i = 0; i < G_N_ELEMENTS(ops); i++) {
    g_autofree char *path = g_strdup_printf("/runtime/cuda/op/%s", ops[i].name);
    g_test_add_data_func(path, &ops[i], test_op);
  }
  for (guint i = 0; i < G_N_ELEMENTS(archs); i++) {
    g_autofree char *path = g_strdup_printf("/runtime/cuda/nb201/%u", i);
    g_test_add_data_func(path, archs[i], test_nb201);
  }
  g_test_add_func("/runtime/cuda/steps", test_steps);
  g_test_add_func("/runtime/cuda/second-backward", test_second_backward);
  g_test_add_func("/runtime/cuda/pool", test_pool);
  g_test_add_func("/runtime/cuda/tf32", test_tf32);
  g_test_add_func("/runtime/cuda/oom", test_oom);
  g_test_add_func("/runtime/cuda/train-parity", test_parity);
  int rc = g_test_run();
  sieve_registry_free(registry);
  g_free(no_gpu);
  return rc;
}
