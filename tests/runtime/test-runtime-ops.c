/* Every operation of the IR on the CPU runtime against the double-precision
 * reference interpreter: forward values of every node, and the gradients of
 * every parameter and of the input against central finite differences.
 *
 * Tolerances (float32 runtime against a double reference):
 *   forward   |rt - ref| <= 1e-5 + 1e-4 |ref|, every element of every node;
 *   gradients |rt - fd| <= 1e-4 |fd| + 1e-4 max(s, S/100), s the largest
 *             |fd| of that tensor and S of all tensors, fd the central
 *             difference with step 1e-6 in double
 *             (truncation ~1e-12, rounding ~1e-10 relative: the float32
 *             gradient's own error dominates).
 * Inputs are redrawn until no relu/elu input and no max pooling tie lies
 * within 1e-4 of its kink, so neither the step nor float32 rounding crosses
 * one.  Channel counts 3, 5, 17 and non-square extents put oneDNN's blocked
 * layouts (8 or 16 channels a block) to work with padding. */
#include <math.h>
#include <string.h>

#include "check.h"

#define FWD_RTOL 1e-4
#define FWD_ATOL 1e-5
#define FD_STEP 1e-6
#define GRAD_RTOL 1e-4
#define GRAD_ATOL 1e-4
#define KINK_MARGIN 1e-4
#define MAX_ENTRIES 160

static double worst_fwd, worst_grad;

static SieveGraph *
finish(SieveGraph *g, guint out)
{
  GError *error = NULL;
  sieve_graph_finish(g, out, &error);
  g_assert_no_error(error);
  return g;
}

/* Forward and gradients of a finished graph; require_all: every parameter
 * and the input must get some gradient. */
static void
check_graph(SieveGraph *g, guint batch, guint64 seed, gboolean require_all)
{
  g_autoptr(Case) c = case_new(g, batch, seed, TRUE);
  case_randomise_params(c, seed + 1000);
  double margin = case_pick_input(c, KINK_MARGIN);
  double f = case_check_forward(c, SIEVE_MODE_TRAIN, FWD_RTOL, FWD_ATOL);
  double r = case_check_grads(c, FD_STEP, GRAD_RTOL, GRAD_ATOL, MAX_ENTRIES, require_all);
  worst_fwd = MAX(worst_fwd, f);
  worst_grad = MAX(worst_grad, r);
  g_test_message("%s: kink margin %.2g, worst forward error %.2g and gradient error %.2g of the tolerance",
                 sieve_graph_name(g), margin, f, r);
}

/* The op's output as it is, and again under linear(5) + softmax_ce (with
 * label smoothing 0.1 when smooth). */
static void
check_op(SieveGraph *(*build)(guint *out, gconstpointer), gconstpointer data, guint64 seed)
{
  guint out;
  SieveGraph *g = build(&out, data);
  check_graph(finish(g, out), 2, seed, TRUE);
  g = build(&out, data);
  guint lin = sieve_graph_linear(g, out, 5, TRUE);
  check_graph(finish(g, sieve_graph_softmax_ce(g, lin, seed % 2 ? 0.1 : 0)), 3, seed + 7, TRUE);
}

/* ---- conv2d ---------------------------------------------------------------------- */

typedef struct {
  guint c, h, w, out, kh, kw, sh, sw, ph, pw, dh, dw, groups;
  gboolean bias;
} ConvCase;

static const ConvCase conv_cases[] = {
  {3, 7, 5, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, TRUE},     /* odd channels, non-square */
  {5, 9, 8, 17, 3, 3, 2, 2, 1, 1, 1, 1, 1, FALSE},   /* stride 2, 17 outputs (a padded block) */
  {4, 8, 8, 6, 3, 3, 1, 1, 2, 2, 2, 2, 1, TRUE},     /* dilation 2 */
  {6, 6, 7, 9, 3, 3, 1, 1, 1, 1, 1, 1, 3, TRUE},     /* groups */
  {5, 6, 6, 5, 3, 3, 1, 1, 1, 1, 1, 1, 5, FALSE},    /* depthwise */
  {3, 6, 9, 4, 1, 3, 2, 1, 0, 1, 1, 1, 1, TRUE},     /* rectangular kernel and stride */
  {17, 4, 5, 3, 1, 1, 1, 1, 0, 0, 1, 1, 1, FALSE},   /* 1x1, 17 inputs */
  {3, 11, 10, 8, 5, 5, 3, 3, 0, 0, 1, 1, 1, TRUE},   /* 5x5, stride 3, no padding */
  {2, 9, 9, 4, 3, 2, 2, 1, 1, 0, 2, 1, 2, TRUE},     /* everything at once */
  /* Depthwise 5x5 and 7x7 (MobileNet's), whose weight gradient is the
   * runtime's own loop (cpu-kernels.c): 16-, 8-channel blocks and plain. */
  {16, 7, 6, 16, 5, 5, 2, 2, 2, 2, 1, 1, 16, FALSE},
  {24, 6, 7, 24, 7, 7, 1, 1, 3, 3, 1, 1, 24, FALSE},
  {5, 7, 6, 5, 5, 3, 1, 2, 2, 1, 2, 1, 5, FALSE},
};

static SieveGraph *
build_conv(guint *out, gconstpointer data)
{
  const ConvCase *k = data;
  SieveGraph *g = sieve_graph_new("conv2d");
  guint x = sieve_graph_input(g, k->c, k->h, k->w);
  SieveOpAttrs a = {.out_channels = k->out,
                    .kernel = {k->kh, k->kw},
                    .stride = {k->sh, k->sw},
                    .pad = {k->ph, k->pw},
                    .dilation = {k->dh, k->dw},
                    .groups = k->groups,
                    .bias = k->bias};
  *out = sieve_graph_add(g, SIEVE_OP_CONV2D, &x, 1, &a);
  return g;
}

static void
test_conv(gconstpointer data)
{
  check_op(build_conv, data, 11 + (const ConvCase *)data - conv_cases);
}

/* ---- batch norm -------------------------------------------------------------------- */

typedef struct {
  guint c, h, w;
  gboolean affine;
  double eps;
  gboolean after_conv; /* a blocked layout in */
} BnCase;

static const BnCase bn_cases[] = {
  {3, 5, 4, TRUE, 1e-5, FALSE},
  {17, 3, 3, TRUE, 1e-5, TRUE},
  {5, 4, 6, FALSE, 1e-3, FALSE},
  {5, 1, 1, TRUE, 1e-2, TRUE},
};

static SieveGraph *
build_bn(guint *out, gconstpointer data)
{
  const BnCase *k = data;
  SieveGraph *g = sieve_graph_new("batch_norm");
  guint x = sieve_graph_input(g, k->after_conv ? 3 : k->c, k->h, k->w);
  if (k->after_conv)
    x = sieve_graph_conv2d(g, x, k->c, 1, 1, 0, FALSE);
  SieveOpAttrs a = {.affine = k->affine, .eps = k->eps, .momentum = 0.1};
  *out = sieve_graph_add(g, SIEVE_OP_BATCH_NORM, &x, 1, &a);
  return g;
}

static void
test_bn(gconstpointer data)
{
  check_op(build_bn, data, 31 + (const BnCase *)data - bn_cases);
}

/* Batch norms whose one reader is a ReLU, which the runtime fuses
 * (oneDNN's fuse_norm_relu) where nothing asks to read either node: the
 * lean runtime of check_graph runs them fused and the keep_all one
 * unfused, and both are held to the reference's finite differences; here
 * also their outputs to each other, in training and evaluation.  Blocked
 * (16 and 8 channels) and padded (5 channels) layouts, with and without
 * affine parameters, a plain input (3 channels), and a batch norm that a
 * ReLU and a sum both read (not fused). */
static SieveGraph *
build_bn_relu(guint *out, gconstpointer data)
{
  (void)data;
  SieveGraph *g = sieve_graph_new("bn-relu");
  guint x = sieve_graph_input(g, 3, 6, 5);
  guint r0 = sieve_graph_relu(g, sieve_graph_batch_norm(g, x));
  guint a = sieve_graph_relu(g, sieve_graph_batch_norm(g, sieve_graph_conv2d(g, r0, 16, 3, 1, 1, FALSE)));
  SieveOpAttrs plain = {.affine = FALSE, .eps = 1e-3, .momentum = 0.1};
  guint c8 = sieve_graph_conv2d(g, a, 8, 1, 1, 0, FALSE);
  guint b = sieve_graph_relu(g, sieve_graph_add(g, SIEVE_OP_BATCH_NORM, &c8, 1, &plain));
  guint p = sieve_graph_pool(g, b, SIEVE_POOL_AVG, 3, 1, 1);
  guint c5 = sieve_graph_relu(g, sieve_graph_batch_norm(g, sieve_graph_conv2d(g, p, 5, 3, 1, 1, TRUE)));
  guint shared = sieve_graph_batch_norm(g, sieve_graph_conv2d(g, a, 5, 1, 1, 0, FALSE));
  guint both[] = {sieve_graph_relu(g, shared), shared, c5};
  *out = sieve_graph_sum(g, both, 3);
  return g;
}

static void
test_bn_relu(void)
{
  check_op(build_bn_relu, NULL, 41);
  /* The fused (lean) runtime's output against the unfused one's. */
  guint out;
  SieveGraph *g = build_bn_relu(&out, NULL);
  g_autoptr(Case) c = case_new(finish(g, out), 4, 43, FALSE);
  case_randomise_params(c, 44);
  case_sync(c);
  case_pick_input(c, KINK_MARGIN);
  gsize n = c->batch * c->out_size;
  g_autofree float *y = g_new(float, n);
  g_autofree float *z = g_new(float, n);
  GError *error = NULL;
  for (int mode = 0; mode < 2; mode++) {
    SieveMode m = mode ? SIEVE_MODE_EVAL : SIEVE_MODE_TRAIN;
    SieveRuntime *rts[2] = {c->rt, c->lean};
    float *outs[2] = {y, z};
    for (int r = 0; r < 2; r++) {
      sieve_runtime_forward(rts[r], c->x, NULL, m, &error);
      g_assert_no_error(error);
      sieve_runtime_read(rts[r], out, outs[r], &error);
      g_assert_no_error(error);
    }
    double worst = 0;
    for (gsize k = 0; k < n; k++)
      worst = MAX(worst, fabs((double)y[k] - z[k]) / (FWD_ATOL + FWD_RTOL * fabs((double)y[k])));
    g_test_message("bn-relu fused against unfused (%s): worst %.2g of the tolerance", mode ? "eval" : "train", worst);
    g_assert_cmpfloat(worst, <=, 1.0);
  }
}

/* ---- activations ------------------------------------------------------------------ */

typedef struct {
  SieveActivation act;
  double alpha;
  gboolean after_conv;
} ActCase;

static const ActCase act_cases[] = {
  {SIEVE_ACT_RELU, 0, FALSE},       {SIEVE_ACT_RELU, 0, TRUE},       {SIEVE_ACT_LEAKY_RELU, 0.1, FALSE},
  {SIEVE_ACT_LEAKY_RELU, 0.3, TRUE}, {SIEVE_ACT_ELU, 1.0, FALSE},     {SIEVE_ACT_ELU, 0.5, TRUE},
  {SIEVE_ACT_TANH, 0, FALSE},       {SIEVE_ACT_TANH, 0, TRUE},       {SIEVE_ACT_SIGMOID, 0, FALSE},
  {SIEVE_ACT_SIGMOID, 0, TRUE},     {SIEVE_ACT_GELU, 0, FALSE},      {SIEVE_ACT_GELU, 0, TRUE},
  {SIEVE_ACT_SWISH, 0, FALSE},      {SIEVE_ACT_SWISH, 0, TRUE},
};

static SieveGraph *
build_act(guint *out, gconstpointer data)
{
  const ActCase *k = data;
  SieveGraph *g = sieve_graph_new(sieve_activation_name(k->act));
  guint x = sieve_graph_input(g, 5, 3, 4);
  if (k->after_conv)
    x = sieve_graph_conv2d(g, x, 17, 3, 1, 1, TRUE);
  *out = sieve_graph_activation(g, x, k->act, k->alpha);
  return g;
}

static void
test_act(gconstpointer data)
{
  check_op(build_act, data, 51 + (const ActCase *)data - act_cases);
}

/* hard_sigmoid and hard_swish on 5x the input (values in (-5, 5)), so that
 * both kinks (-3, 3) and the flat parts are crossed; after a convolution
 * of 17 outputs the input comes in a padded channel block. */
typedef struct {
  SieveActivation act;
  gboolean after_conv;
} HardCase;

static const HardCase hard_cases[] = {
  {SIEVE_ACT_HARD_SIGMOID, FALSE},
  {SIEVE_ACT_HARD_SIGMOID, TRUE},
  {SIEVE_ACT_HARD_SWISH, FALSE},
  {SIEVE_ACT_HARD_SWISH, TRUE},
};

static SieveGraph *
build_hard(guint *out, gconstpointer data)
{
  const HardCase *k = data;
  SieveGraph *g = sieve_graph_new(sieve_activation_name(k->act));
  guint x = sieve_graph_input(g, 5, 3, 4);
  if (k->after_conv)
    x = sieve_graph_conv2d(g, x, 17, 3, 1, 1, TRUE);
  guint xs[] = {x, x, x, x, x};
  *out = sieve_graph_activation(g, sieve_graph_sum(g, xs, 5), k->act, 0);
  return g;
}

static void
test_hard(gconstpointer data)
{
  check_op(build_hard, data, 141 + (const HardCase *)data - hard_cases);
}

/* ---- mul ---------------------------------------------------------------------------- */

/* 0: squeeze-and-excitation (Hu et al. 2018) as MobileNetV3 writes it:
 *    y = conv(x) * hard_sigmoid(conv1x1(tanh(conv1x1(gap(conv(x)))))),
 *    17 channels (a padded block) or 16 (an exact one);
 * 1: a plain input gated by its own pooled sigmoid (one tensor feeds both
 *    operands, so both gradients add into it);
 * 2: a gate of x's full shape. */
typedef struct {
  guint kind, channels;
} MulCase;

static const MulCase mul_cases[] = {{0, 17}, {0, 16}, {1, 3}, {2, 5}};

static SieveGraph *
build_mul(guint *out, gconstpointer data)
{
  const MulCase *k = data;
  SieveGraph *g = sieve_graph_new("mul");
  guint x = sieve_graph_input(g, k->kind == 0 ? 4 : k->channels, 5, 6);
  guint gate;
  if (k->kind == 0) {
    x = sieve_graph_conv2d(g, x, k->channels, 3, 1, 1, FALSE);
    guint s = sieve_graph_conv2d(g, sieve_graph_global_avg_pool(g, x), 4, 1, 1, 0, TRUE);
    s = sieve_graph_activation(g, s, SIEVE_ACT_TANH, 0); /* MobileNetV3 has ReLU: all 4 can die on 2 examples */
    gate = sieve_graph_activation(g, sieve_graph_conv2d(g, s, k->channels, 1, 1, 0, TRUE), SIEVE_ACT_HARD_SIGMOID, 0);
  } else if (k->kind == 1) {
    gate = sieve_graph_activation(g, sieve_graph_global_avg_pool(g, x), SIEVE_ACT_SIGMOID, 0);
  } else {
    gate = sieve_graph_activation(g, sieve_graph_conv2d(g, x, k->channels, 3, 1, 1, TRUE), SIEVE_ACT_TANH, 0);
  }
  *out = sieve_graph_mul(g, x, gate);
  return g;
}

static void
test_mul(gconstpointer data)
{
  check_op(build_mul, data, 151 + (const MulCase *)data - mul_cases);
}

/* ---- pooling ------------------------------------------------------------------------ */

typedef struct {
  SievePoolKind pool;
  guint c, h, w, kh, kw, sh, sw, ph, pw;
  gboolean after_conv;
} PoolCase;

static const PoolCase pool_cases[] = {
  {SIEVE_POOL_AVG, 3, 5, 6, 3, 3, 1, 1, 1, 1, FALSE}, /* NAS-Bench-201's avg_pool_3x3 */
  {SIEVE_POOL_AVG, 17, 7, 5, 3, 3, 2, 2, 1, 1, TRUE}, /* padding excluded at the borders */
  {SIEVE_POOL_AVG, 5, 6, 6, 2, 2, 2, 2, 0, 0, FALSE},
  {SIEVE_POOL_AVG, 3, 5, 7, 2, 3, 1, 2, 1, 1, FALSE},
  {SIEVE_POOL_MAX, 3, 7, 5, 3, 3, 2, 2, 1, 1, FALSE},
  {SIEVE_POOL_MAX, 17, 6, 6, 2, 2, 2, 2, 0, 0, TRUE},
  {SIEVE_POOL_MAX, 5, 5, 6, 3, 2, 1, 1, 1, 1, FALSE},
  /* Max pools of channel-blocked tensors, which the runtime pools with a
   * loop of its own: NAS-Bench-101's 3x3 (nChw16c), its downsampling 2x2
   * (nChw8c), and 12 channels in 16 (a padded block). */
  {SIEVE_POOL_MAX, 16, 6, 5, 3, 3, 1, 1, 1, 1, TRUE},
  {SIEVE_POOL_MAX, 8, 6, 6, 2, 2, 2, 2, 0, 0, TRUE},
  {SIEVE_POOL_MAX, 12, 7, 5, 3, 3, 2, 2, 1, 1, TRUE},
};

static SieveGraph *
build_pool(guint *out, gconstpointer data)
{
  const PoolCase *k = data;
  SieveGraph *g = sieve_graph_new(k->pool == SIEVE_POOL_MAX ? "max_pool" : "avg_pool");
  guint x = sieve_graph_input(g, k->after_conv ? 4 : k->c, k->h, k->w);
  if (k->after_conv)
    x = sieve_graph_conv2d(g, x, k->c, 3, 1, 1, TRUE);
  SieveOpAttrs a = {
    .pool = k->pool, .kernel = {k->kh, k->kw}, .stride = {k->sh, k->sw}, .pad = {k->ph, k->pw}};
  *out = sieve_graph_add(g, SIEVE_OP_POOL, &x, 1, &a);
  return g;
}

static void
test_pool(gconstpointer data)
{
  check_op(build_pool, data, 71 + (const PoolCase *)data - pool_cases);
}

/* ---- add, concat, identity, zero ----------------------------------------------------- */

/* x (plain), conv(x) (blocked), identity(x) and relu(conv): one tensor
 * reaches the sum twice, layouts differ. */
static SieveGraph *
build_add(guint *out, gconstpointer data)
{
  (void)data;
  SieveGraph *g = sieve_graph_new("add");
  guint x = sieve_graph_input(g, 5, 6, 5);
  guint a = sieve_graph_conv2d(g, x, 5, 3, 1, 1, TRUE);
  guint b = sieve_graph_activation(g, a, SIEVE_ACT_TANH, 0);
  guint xs[] = {x, a, sieve_graph_identity(g, x), b};
  *out = sieve_graph_sum(g, xs, 4);
  return g;
}

static void
test_add(void)
{
  check_op(build_add, NULL, 91);
}

static SieveGraph *
build_concat(guint *out, gconstpointer data)
{
  gboolean then_conv = GPOINTER_TO_INT(data);
  SieveGraph *g = sieve_graph_new("concat");
  guint x = sieve_graph_input(g, 4, 5, 6);
  guint xs[] = {sieve_graph_conv2d(g, x, 3, 3, 1, 1, TRUE), x, sieve_graph_conv2d(g, x, 17, 1, 1, 0, FALSE),
                sieve_graph_activation(g, x, SIEVE_ACT_SIGMOID, 0)};
  *out = sieve_graph_concat(g, xs, 4); /* 28 channels */
  if (then_conv)
    *out = sieve_graph_conv2d(g, *out, 5, 3, 2, 1, FALSE);
  return g;
}

static void
test_concat(void)
{
  check_op(build_concat, GINT_TO_POINTER(FALSE), 93);
  check_op(build_concat, GINT_TO_POINTER(TRUE), 94);
}

/* Concatenations whose inputs are whole channel blocks (8- and 16-channel
 * convolutions, as NAS-Bench-101's vertices): the output is blocked too,
 * and a max pool and a strided 1x1 convolution read it in place; their
 * outputs (8 channels each) are concatenated again.  A plain
 * concatenation (3 + 17 channels) that two 1x1 convolutions both read
 * through one shared reorder into their blocked layout.  A plain piece in
 * a blocked concatenation, and 4-channel pieces (NAS-Bench-101 at stem
 * 16). */
static SieveGraph *
build_concat_blocked(guint *out, gconstpointer data)
{
  (void)data;
  SieveGraph *g = sieve_graph_new("concat-blocked");
  guint x = sieve_graph_input(g, 4, 6, 6);
  guint a = sieve_graph_conv2d(g, x, 8, 3, 1, 1, FALSE);
  guint b = sieve_graph_conv2d(g, x, 16, 1, 1, 0, TRUE);
  guint xs[] = {a, b, sieve_graph_activation(g, a, SIEVE_ACT_TANH, 0)};
  guint cat = sieve_graph_concat(g, xs, 3); /* 32 channels */
  guint ys[] = {sieve_graph_pool(g, cat, SIEVE_POOL_MAX, 2, 2, 0), sieve_graph_conv2d(g, cat, 8, 1, 2, 0, FALSE)};
  guint top = sieve_graph_concat(g, ys, 2); /* 40 channels, 3x3 */
  guint zs[] = {sieve_graph_conv2d(g, x, 3, 3, 2, 1, TRUE), sieve_graph_conv2d(g, x, 17, 1, 2, 0, FALSE)};
  guint plain = sieve_graph_concat(g, zs, 2); /* 20 channels, 3x3 */
  guint ps[] = {sieve_graph_conv2d(g, plain, 8, 1, 1, 0, FALSE), sieve_graph_conv2d(g, plain, 8, 1, 1, 0, TRUE)};
  /* A plain piece of 8 channels (x twice) beside a blocked one: copied
   * channel by channel into the blocked output, and 4-channel pieces
   * (padded blocks), which make a plain output. */
  guint xx = sieve_graph_concat(g, (guint[]){x, x}, 2);
  guint ms[] = {sieve_graph_conv2d(g, x, 8, 3, 1, 1, FALSE), xx};
  guint fs[] = {sieve_graph_conv2d(g, x, 4, 3, 1, 1, FALSE), sieve_graph_conv2d(g, x, 4, 1, 1, 0, TRUE),
                sieve_graph_activation(g, sieve_graph_conv2d(g, x, 4, 3, 1, 1, FALSE), SIEVE_ACT_TANH, 0)};
  guint mixed = sieve_graph_conv2d(g, sieve_graph_concat(g, ms, 2), 4, 1, 2, 0, FALSE);
  guint four = sieve_graph_conv2d(g, sieve_graph_concat(g, fs, 3), 4, 1, 2, 0, FALSE);
  guint ws[] = {top, sieve_graph_sum(g, ps, 2), mixed, four};
  *out = sieve_graph_concat(g, ws, 4); /* 56 channels */
  return g;
}

static void
test_concat_blocked(void)
{
  check_op(build_concat_blocked, NULL, 97);
}

/* Identity chains, a zero folded out of a sum, a zero that a convolution
 * reads (a real zero tensor), a sum of nothing but zeros, and operations
 * that keep a zero a zero (avg pools, a tanh: folded away; ReLU and max
 * pool fold the same way but put every input on a kink, which finite
 * differences cannot check) or do not (a sigmoid: 1/2 everywhere). */
static SieveGraph *
build_identity_zero(guint *out, gconstpointer data)
{
  (void)data;
  SieveGraph *g = sieve_graph_new("identity_zero");
  guint x = sieve_graph_input(g, 3, 5, 5);
  guint a = sieve_graph_identity(g, sieve_graph_identity(g, x));
  guint c = sieve_graph_conv2d(g, a, 5, 3, 1, 1, TRUE);
  guint z = sieve_graph_zero(g, c);
  guint zc = sieve_graph_conv2d(g, z, 5, 1, 1, 0, TRUE); /* bias only */
  guint zs[] = {z, sieve_graph_zero(g, zc)};
  guint zz = sieve_graph_sum(g, zs, 2);
  guint zp = sieve_graph_pool(g, z, SIEVE_POOL_AVG, 3, 1, 1);
  guint za = sieve_graph_pool(g, zp, SIEVE_POOL_AVG, 3, 1, 1);
  guint zpc = sieve_graph_conv2d(g, sieve_graph_activation(g, za, SIEVE_ACT_TANH, 0), 5, 1, 1, 0, TRUE); /* bias only */
  guint half = sieve_graph_activation(g, zp, SIEVE_ACT_SIGMOID, 0);
  guint xs[] = {sieve_graph_identity(g, c), z, zc, zz, sieve_graph_identity(g, z), zp, za, zpc, half};
  *out = sieve_graph_sum(g, xs, 9);
  return g;
}

static void
test_identity_zero(void)
{
  /* The convolution that reads zeros gets no weight gradient: not every
   * tensor can have one. */
  guint out;
  SieveGraph *g = build_identity_zero(&out, NULL);
  check_graph(finish(g, out), 2, 95, FALSE);
  g = build_identity_zero(&out, NULL);
  check_graph(finish(g, sieve_graph_softmax_ce(g, sieve_graph_linear(g, out, 4, FALSE), 0.2)), 3, 96, FALSE);
}

/* ---- crop ---------------------------------------------------------------------------- */

typedef struct {
  guint c, h, w, top, left, wh, ww;
  gboolean after_conv; /* a blocked input layout (17 channels: a padded block) */
} CropCase;

static const CropCase crop_cases[] = {
  {3, 6, 6, 1, 1, 5, 5, FALSE},  /* DARTS's x[:, :, 1:, 1:] */
  {17, 8, 6, 1, 1, 7, 5, TRUE},  /* the same on a blocked layout */
  {16, 7, 9, 2, 0, 3, 9, TRUE},  /* full width, rows 2..4 */
  {5, 5, 6, 0, 3, 5, 2, TRUE},   /* full height, columns 3..4 */
};

static SieveGraph *
build_crop(guint *out, gconstpointer data)
{
  const CropCase *k = data;
  SieveGraph *g = sieve_graph_new("crop");
  guint x = sieve_graph_input(g, k->after_conv ? 4 : k->c, k->h, k->w);
  if (k->after_conv)
    x = sieve_graph_conv2d(g, x, k->c, 3, 1, 1, TRUE);
  *out = sieve_graph_crop(g, x, k->top, k->left, k->wh, k->ww);
  return g;
}

static void
test_crop(gconstpointer data)
{
  check_op(build_crop, data, 81 + (const CropCase *)data - crop_cases);
}

/* DARTS's factorized reduction: ReLU, then 1x1 stride-2 convolutions of x
 * and of x[:, 1:, 1:], concatenated, BN; the ReLU's output gets its gradient
 * from the crop and from a convolution, in both layouts (6 and 16 channels). */
static void
test_factorized_reduce(void)
{
  guint out;
  for (guint seed = 0; seed < 2; seed++) {
    SieveGraph *g = sieve_graph_new("factorized_reduce");
    guint x = sieve_graph_input(g, 4, 8, 8);
    x = sieve_graph_conv2d(g, x, seed ? 16 : 6, 3, 1, 1, FALSE);
    x = sieve_graph_relu(g, x);
    guint a = sieve_graph_conv2d(g, x, 5, 1, 2, 0, FALSE);
    guint b = sieve_graph_conv2d(g, sieve_graph_crop(g, x, 1, 1, 7, 7), 3, 1, 2, 0, FALSE);
    out = sieve_graph_batch_norm(g, sieve_graph_concat(g, (guint[]){a, b}, 2));
    if (seed)
      out = sieve_graph_softmax_ce(g, sieve_graph_linear(g, out, 4, TRUE), 0);
    check_graph(finish(g, out), 2 + seed, 88 + seed, TRUE);
  }
}

/* ---- global average pooling, linear, loss ------------------------------------------- */

static SieveGraph *
build_gap(guint *out, gconstpointer data)
{
  gboolean after_conv = GPOINTER_TO_INT(data);
  SieveGraph *g = sieve_graph_new("global_avg_pool");
  guint x = sieve_graph_input(g, 5, 3, 4);
  if (after_conv)
    x = sieve_graph_conv2d(g, x, 17, 3, 1, 1, TRUE);
  *out = sieve_graph_global_avg_pool(g, x);
  return g;
}

static void
test_gap(void)
{
  check_op(build_gap, GINT_TO_POINTER(FALSE), 101);
  check_op(build_gap, GINT_TO_POINTER(TRUE), 102);
}

typedef struct {
  guint c, h, w, out;
  gboolean bias, after_conv, twice;
} LinearCase;

static const LinearCase linear_cases[] = {
  {3, 4, 5, 7, TRUE, FALSE, FALSE},
  {5, 1, 1, 3, FALSE, FALSE, FALSE},
  {17, 3, 2, 10, TRUE, TRUE, FALSE}, /* weight columns follow NCHW, whatever the conv's layout */
  {4, 2, 3, 6, TRUE, FALSE, TRUE},   /* linear on a linear */
};

static SieveGraph *
build_linear(guint *out, gconstpointer data)
{
  const LinearCase *k = data;
  SieveGraph *g = sieve_graph_new("linear");
  guint x = sieve_graph_input(g, k->after_conv ? 3 : k->c, k->h, k->w);
  if (k->after_conv)
    x = sieve_graph_conv2d(g, x, k->c, 3, 1, 1, FALSE);
  *out = sieve_graph_linear(g, x, k->out, k->bias);
  if (k->twice)
    *out = sieve_graph_linear(g, *out, 5, TRUE);
  return g;
}

static void
test_linear(gconstpointer data)
{
  check_op(build_linear, data, 111 + (const LinearCase *)data - linear_cases);
}

/* softmax_ce straight on logits of every producer kind: a linear (2-D), a
 * global pool and the input itself (4-D Kx1x1), with and without label
 * smoothing. */
static void
test_loss(void)
{
  for (guint k = 0; k < 6; k++) {
    double eps = k % 2 ? 0.1 : 0;
    SieveGraph *g = sieve_graph_new("softmax_ce");
    guint x, logits;
    switch (k / 2) {
    case 0:
      x = sieve_graph_input(g, 3, 4, 4);
      logits = sieve_graph_linear(g, x, 7, TRUE);
      break;
    case 1:
      x = sieve_graph_input(g, 3, 4, 4);
      logits = sieve_graph_global_avg_pool(g, sieve_graph_conv2d(g, x, 10, 3, 1, 1, TRUE));
      break;
    default:
      logits = sieve_graph_input(g, 5, 1, 1);
      break;
    }
    check_graph(finish(g, sieve_graph_softmax_ce(g, logits, eps)), 4, 121 + k, TRUE);
  }
}

/* ---- sharing and dead branches -------------------------------------------------------- */

/* Two ReLUs of one tensor (computed once by the runtime) feeding two
 * convolutions, a dead branch, and a pool of a shared ReLU. */
static void
test_shared(void)
{
  SieveGraph *g = sieve_graph_new("shared");
  guint x = sieve_graph_input(g, 3, 6, 6);
  guint h = sieve_graph_conv2d(g, x, 5, 3, 1, 1, TRUE);
  guint r1 = sieve_graph_relu(g, h), r2 = sieve_graph_relu(g, h);
  guint dead = sieve_graph_conv2d(g, r1, 4, 1, 1, 0, TRUE);
  (void)dead;
  guint xs[] = {sieve_graph_conv2d(g, r1, 5, 3, 1, 1, FALSE), sieve_graph_conv2d(g, r2, 5, 1, 1, 0, TRUE),
                sieve_graph_pool(g, r2, SIEVE_POOL_AVG, 3, 1, 1), h};
  guint out = sieve_graph_sum(g, xs, 4);
  check_graph(finish(g, out), 3, 131, TRUE);
}

static void
add_cases(const char *prefix, gconstpointer cases, gsize size, gsize n, void (*fn)(gconstpointer))
{
  for (gsize i = 0; i < n; i++) {
    g_autofree char *path = g_strdup_printf("/runtime/ops/%s/%" G_GSIZE_FORMAT, prefix, i);
    g_test_add_data_func(path, (const char *)cases + i * size, fn);
  }
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  add_cases("conv2d", conv_cases, sizeof *conv_cases, G_N_ELEMENTS(conv_cases), test_conv);
  add_cases("batch_norm", bn_cases, sizeof *bn_cases, G_N_ELEMENTS(bn_cases), test_bn);
  add_cases("activation", act_cases, sizeof *act_cases, G_N_ELEMENTS(act_cases), test_act);
  add_cases("hard", hard_cases, sizeof *hard_cases, G_N_ELEMENTS(hard_cases), test_hard);
  add_cases("mul", mul_cases, sizeof *mul_cases, G_N_ELEMENTS(mul_cases), test_mul);
  add_cases("pool", pool_cases, sizeof *pool_cases, G_N_ELEMENTS(pool_cases), test_pool);
  add_cases("crop", crop_cases, sizeof *crop_cases, G_N_ELEMENTS(crop_cases), test_crop);
  g_test_add_func("/runtime/ops/factorized-reduce", test_factorized_reduce);
  g_test_add_func("/runtime/ops/add", test_add);
  g_test_add_func("/runtime/ops/concat", test_concat);
  g_test_add_func("/runtime/ops/concat-blocked", test_concat_blocked);
  g_test_add_func("/runtime/ops/bn-relu", test_bn_relu);
  g_test_add_func("/runtime/ops/identity-zero", test_identity_zero);
  g_test_add_func("/runtime/ops/global_avg_pool", test_gap);
  add_cases("linear", linear_cases, sizeof *linear_cases, G_N_ELEMENTS(linear_cases), test_linear);
  g_test_add_func("/runtime/ops/softmax_ce", test_loss);
  g_test_add_func("/runtime/ops/shared", test_shared);
  int status = g_test_run();
  g_test_message("worst forward error %.2g, worst gradient error %.2g of the tolerance", worst_fwd, worst_grad);
  return status;
}
