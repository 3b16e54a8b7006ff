/* SynFlow's double-precision executor (src/proxy-synflow.c) and its
 * convolution (src/conv-f64.c):
 *   - hand-computed scores of small networks (a chain, a skip connection,
 *     biases, negative weights made absolute, a network cut off by zeros);
 *   - the definition itself, sum over weights of |w| dR/d|w|, evaluated
 *     with central finite differences of R on the reference interpreter
 *     (tests/runtime/reference.c) with batch norm replaced by identity, for
 *     convolutions with padding, stride, dilation and groups, both poolings,
 *     concat, every activation, a loss at the end and a small nb201 network;
 *   - every convolution kernel this CPU can run against a naive loop nest;
 *   - thread counts giving the same bits, and the error paths. */
#include <math.h>
#include <string.h>

#include <sieve/sieve.h>

#include "../runtime/reference.h"
#include "proxy/proxy-private.h"

#include "test-support.h"

static SieveRegistry *registry;

static SieveGraph *
finish(SieveGraph *g, guint out)
{
  GError *error = NULL;
  sieve_graph_finish(g, out, &error);
  g_assert_no_error(error);
  return g;
}

static SieveRuntime *
runtime_for(const SieveGraph *g, guint64 seed)
{
  GError *error = NULL;
  SieveRuntimeOptions o = {.batch = 1, .threads = 1, .seed = seed};
  SieveRuntime *rt = sieve_runtime_new(g, &o, &error);
  g_assert_no_error(error);
  return rt;
}

static double
synflow(const SieveGraph *g, SieveRuntime *rt, guint threads)
{
  GError *error = NULL;
  double s = NAN;
  gboolean ok = sieve_proxy_synflow(g, rt, threads, &s, &error);
  g_assert_no_error(error);
  g_assert_true(ok);
  return s;
}

/* Sets every element of parameter i to value. */
static void
set_all(SieveRuntime *rt, guint i, float value)
{
  guint64 n = sieve_runtime_param_info(rt, i)->size;
  g_autofree float *v = g_new(float, n);
  for (guint64 k = 0; k < n; k++)
    v[k] = value;
  GError *error = NULL;
  sieve_runtime_set_param(rt, i, v, &error);
  g_assert_no_error(error);
}

/* ---- hand-computed --------------------------------------------------------------- */

/* x (4 ones) -> W1 (3x4, all -0.5) -> W2 (2x3, all 2): R = 2*3*4 * 0.5*2 = 24;
 * both layers lie on every path, so the score is 2R = 48 (negative weights
 * count as their absolute values). */
static void
test_chain(void)
{
  g_autoptr(SieveGraph) g = sieve_graph_new("chain");
  guint x = sieve_graph_input(g, 4, 1, 1);
  x = sieve_graph_linear(g, x, 3, FALSE);
  x = sieve_graph_linear(g, x, 2, FALSE);
  finish(g, x);
  g_autoptr(SieveRuntime) rt = runtime_for(g, 1);
  set_all(rt, 0, -0.5f);
  set_all(rt, 1, 2.0f);
  g_assert_cmpfloat(synflow(g, rt, 1), ==, 48.0);
}

/* The same chain with a bias of -1 on the first layer: its outputs are
 * 4*0.5 + 1 = 3.  dR/dW2 = 3 for each of 6 weights of 2: 36; dR/dW1 =
 * sum_o W2 = 4 for each of 12 weights of 0.5: 24.  The bias is not scored. */
static void
test_chain_bias(void)
{
  g_autoptr(SieveGraph) g = sieve_graph_new("chain-bias");
  guint x = sieve_graph_input(g, 4, 1, 1);
  x = sieve_graph_linear(g, x, 3, TRUE);
  x = sieve_graph_linear(g, x, 2, FALSE);
  finish(g, x);
  g_autoptr(SieveRuntime) rt = runtime_for(g, 1);
  g_assert_cmpstr(sieve_runtime_param_info(rt, 1)->name, ==, "bias");
  set_all(rt, 0, -0.5f);
  set_all(rt, 1, -1.0f);
  set_all(rt, 2, 2.0f);
  g_assert_cmpfloat(synflow(g, rt, 1), ==, 60.0);
}

/* R = b (1 + a) through a skip connection: a b + b (1 + a) = 2ab + b.
 * With |a| = 3 and b = 0.5: 3.5.  Batch norm on the way is bypassed, and a
 * ReLU on positive values changes nothing. */
static void
test_skip(void)
{
  g_autoptr(SieveGraph) g = sieve_graph_new("skip");
  guint x = sieve_graph_input(g, 1, 1, 1);
  guint y = sieve_graph_conv2d(g, x, 1, 1, 1, 0, FALSE);
  y = sieve_graph_batch_norm(g, y);
  guint s = sieve_graph_sum(g, (guint[]){x, y}, 2);
  s = sieve_graph_relu(g, s);
  s = sieve_graph_linear(g, s, 1, FALSE);
  finish(g, s);
  g_autoptr(SieveRuntime) rt = runtime_for(g, 1);
  set_all(rt, 0, -3.0f);
  g_assert_cmpstr(sieve_runtime_param_info(rt, 1)->name, ==, "gamma");
  set_all(rt, 1, 7.0f); /* batch norm's gamma and beta must not matter */
  set_all(rt, 2, 5.0f);
  set_all(rt, 3, 0.5f);
  g_assert_cmpfloat(synflow(g, rt, 1), ==, 3.5);
}

/* A 3x3 convolution over a 2x2 image of ones with padding 1: every output
 * pixel sees all four input pixels, through weights at different taps.
 * With all weights w, each of 2 output channels is 4w * (1 channel) per
 * pixel; GAP then linear (all v) with one output: R = 2 * 4w * v.  Both
 * layers are on every path: score 2R.  w = 0.25, v = 1.5: R = 3, score 6. */
static void
test_conv_padding(void)
{
  g_autoptr(SieveGraph) g = sieve_graph_new("conv-pad");
  guint x = sieve_graph_input(g, 1, 2, 2);
  x = sieve_graph_conv2d(g, x, 2, 3, 1, 1, FALSE);
  x = sieve_graph_global_avg_pool(g, x);
  x = sieve_graph_linear(g, x, 1, FALSE);
  finish(g, x);
  g_autoptr(SieveRuntime) rt = runtime_for(g, 1);
  set_all(rt, 0, 0.25f);
  set_all(rt, 1, 1.5f);
  g_assert_cmpfloat(synflow(g, rt, 1), ==, 6.0);
}

/* A network whose output does not depend on its input (every path goes
 * through a zero): R is the bias alone and the score is 0, not a NaN. */
static void
test_cut_off(void)
{
  g_autoptr(SieveGraph) g = sieve_graph_new("cut-off");
  guint x = sieve_graph_input(g, 3, 4, 4);
  x = sieve_graph_conv2d(g, x, 4, 3, 1, 1, FALSE);
  x = sieve_graph_zero(g, x);
  x = sieve_graph_relu(g, x);
  x = sieve_graph_global_avg_pool(g, x);
  x = sieve_graph_linear(g, x, 5, TRUE);
  finish(g, x);
  g_autoptr(SieveRuntime) rt = runtime_for(g, 1);
  g_assert_cmpfloat(synflow(g, rt, 2), ==, 0.0);
}

/* ---- against the definition, by finite differences ------------------------------- */

/* The graph SynFlow scores: batch norm and a final loss become identities
 * (node numbers unchanged), so that R = sum of the output. */
static SieveGraph *
linearised(const SieveGraph *g)
{
  SieveGraph *h = sieve_graph_new("linearised");
  for (guint v = 0; v < sieve_graph_n_nodes(g); v++) {
    const SieveGraphNode *n = sieve_graph_node(g, v);
    guint got;
    if (n->kind == SIEVE_OP_INPUT)
      got = sieve_graph_input(h, n->shape.c, n->shape.h, n->shape.w);
    else if (n->kind == SIEVE_OP_BATCH_NORM || n->kind == SIEVE_OP_SOFTMAX_CE)
      got = sieve_graph_identity(h, n->inputs[0]);
    else
      got = sieve_graph_add(h, n->kind, n->inputs, n->n_inputs, &n->attrs);
    g_assert_cmpuint(got, ==, v);
  }
  return finish(h, sieve_graph_output(g));
}

/* sum over every conv2d and linear weight of |w| dR/d|w|, dR/d|w| by a
 * central difference with step 1e-4 |w| on the reference interpreter, whose
 * parameters are the absolute values of rt's.  R is affine in each single
 * weight when no kink is crossed (and smooth activations bend it little
 * over the step), so the differences are exact to about 1e-11. */
static double
synflow_by_differences(const SieveGraph *g, SieveRuntime *rt)
{
  GError *error = NULL;
  g_autoptr(SieveGraph) h = linearised(g);
  SieveRuntimeOptions o = {.batch = 1, .threads = 1, .seed = 0};
  g_autoptr(SieveRuntime) hrt = sieve_runtime_new(h, &o, &error);
  g_assert_no_error(error);
  /* rt's conv2d and linear parameters, matched by node and name. */
  for (guint i = 0; i < sieve_runtime_n_params(hrt); i++) {
    const SieveParamInfo *hi = sieve_runtime_param_info(hrt, i);
    gboolean found = FALSE;
    for (guint j = 0; j < sieve_runtime_n_params(rt) && !found; j++) {
      const SieveParamInfo *ri = sieve_runtime_param_info(rt, j);
      if (ri->node != hi->node || !g_str_equal(ri->name, hi->name))
        continue;
      g_autofree float *v = g_new(float, ri->size);
      sieve_runtime_get_param(rt, j, v, &error);
      g_assert_no_error(error);
      sieve_runtime_set_param(hrt, i, v, &error);
      g_assert_no_error(error);
      found = TRUE;
    }
    g_assert_true(found);
  }
  RefNet *ref = ref_net_new(h, 1);
  ref_net_load_params(ref, hrt, &error);
  g_assert_no_error(error);
  for (guint i = 0; i < sieve_runtime_n_params(hrt); i++) {
    double *p = ref_net_param(ref, i);
    for (guint64 k = 0; k < ref_net_param_size(ref, i); k++)
      p[k] = fabs(p[k]);
  }
  SieveShape is = sieve_graph_node(h, sieve_graph_input_node(h))->shape;
  gsize in_size = (gsize)is.c * is.h * is.w;
  SieveShape os = sieve_graph_node(h, sieve_graph_output(h))->shape;
  gsize out_size = (gsize)os.c * os.h * os.w;
  g_autofree double *ones = g_new(double, MAX(in_size, out_size));
  for (gsize k = 0; k < MAX(in_size, out_size); k++)
    ones[k] = 1;
  ref_net_forward(ref, ones, NULL, SIEVE_MODE_EVAL);
  double score = 0;
  for (guint i = 0; i < sieve_runtime_n_params(hrt); i++) {
    const SieveParamInfo *info = sieve_runtime_param_info(hrt, i);
    if (!g_str_equal(info->name, "weight"))
      continue;
    double *p = ref_net_param(ref, i);
    for (guint64 k = 0; k < info->size; k++) {
      double w = p[k], step = 1e-4 * w;
      if (w == 0)
        continue;
      p[k] = w + step;
      ref_net_forward_from(ref, info->node, ones, NULL, SIEVE_MODE_EVAL);
      double up = ref_net_objective(ref, ones);
      p[k] = w - step;
      ref_net_forward_from(ref, info->node, ones, NULL, SIEVE_MODE_EVAL);
      double down = ref_net_objective(ref, ones);
      p[k] = w;
      score += w * (up - down) / (2 * step);
    }
    /* The nodes after this one hold the last step's values until rerun. */
    ref_net_forward_from(ref, info->node, ones, NULL, SIEVE_MODE_EVAL);
  }
  /* No max pooling tie and no ReLU input at 0: the derivative there
   * depends on a convention, and a step would cross the kink. */
  ref_net_forward(ref, ones, NULL, SIEVE_MODE_EVAL);
  g_test_message("%s: kink margin %g", sieve_graph_name(g), ref_net_kink_margin(ref));
  g_assert_cmpfloat(ref_net_kink_margin(ref), >, 1e-3);
  ref_net_free(ref);
  return score;
}

static void
check_against_differences(SieveGraph *g, double rtol)
{
  g_autoptr(SieveRuntime) rt = runtime_for(g, 7);
  double s = synflow(g, rt, 2);
  double d = synflow_by_differences(g, rt);
  g_test_message("%s: synflow %.17g, finite differences %.17g, relative difference %.2g", sieve_graph_name(g), s, d,
                 fabs(s - d) / fabs(d));
  g_assert_cmpfloat(d, >, 0);
  g_assert_cmpfloat(fabs(s - d), <=, rtol * fabs(d));
}

static guint
conv(SieveGraph *g, guint x, guint out, guint kh, guint kw, guint sh, guint sw, guint ph, guint pw, guint dh,
     guint dw, guint groups, gboolean bias)
{
  SieveOpAttrs a = {.out_channels = out,
                    .kernel = {kh, kw},
                    .stride = {sh, sw},
                    .pad = {ph, pw},
                    .dilation = {dh, dw},
                    .groups = groups,
                    .bias = bias};
  return sieve_graph_add(g, SIEVE_OP_CONV2D, &x, 1, &a);
}

static guint
pool(SieveGraph *g, guint x, SievePoolKind kind, guint kh, guint kw, guint sh, guint sw, guint ph, guint pw)
{
  SieveOpAttrs a = {.kernel = {kh, kw}, .stride = {sh, sw}, .pad = {ph, pw}, .pool = kind};
  return sieve_graph_add(g, SIEVE_OP_POOL, &x, 1, &a);
}

/* Convolutions of every shape of attribute, with batch norm and ReLU
 * between them, and a linear head ending in a loss. */
static void
test_fd_convs(void)
{
  SieveGraph *g = sieve_graph_new("convs");
  guint x = sieve_graph_input(g, 3, 9, 11);
  x = conv(g, x, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, FALSE);   /* padding */
  x = sieve_graph_batch_norm(g, x);
  x = sieve_graph_relu(g, x);
  x = conv(g, x, 6, 3, 2, 2, 1, 1, 0, 1, 1, 3, TRUE);    /* stride, groups, bias, odd kernel */
  x = sieve_graph_relu(g, x);
  x = conv(g, x, 4, 3, 3, 1, 2, 2, 1, 2, 1, 2, FALSE);   /* dilation, stride 2 across */
  x = conv(g, x, 5, 1, 1, 1, 1, 0, 0, 1, 1, 1, FALSE);   /* 1x1 */
  x = sieve_graph_global_avg_pool(g, x);
  x = sieve_graph_linear(g, x, 3, TRUE);
  finish(g, x);
  sieve_graph_add_loss(g, 0.0, NULL);
  check_against_differences(g, 1e-9);
  sieve_graph_free(g);
}

/* Average pooling without counting padding; max pooling where every window
 * holds the image's centre (a 3x3 convolution with padding over ones makes
 * the centre the unique largest value), so there are no ties. */
static void
test_fd_pools(void)
{
  SieveGraph *g = sieve_graph_new("pools");
  guint x = sieve_graph_input(g, 2, 3, 3);
  x = conv(g, x, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, FALSE);
  guint m = pool(g, x, SIEVE_POOL_MAX, 2, 2, 1, 1, 0, 0);
  guint a = pool(g, x, SIEVE_POOL_AVG, 3, 3, 1, 1, 1, 1);
  a = conv(g, a, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, FALSE);
  m = conv(g, m, 4, 1, 1, 1, 1, 0, 0, 1, 1, 1, FALSE);
  guint p = pool(g, x, SIEVE_POOL_MAX, 3, 3, 2, 2, 1, 1); /* padded and strided: 2x2, each window holds the centre */
  guint s = sieve_graph_sum(g, (guint[]){a, pool(g, m, SIEVE_POOL_AVG, 3, 3, 1, 1, 1, 1), p}, 3);
  s = sieve_graph_add(g, SIEVE_OP_CONCAT, (guint[]){s, pool(g, s, SIEVE_POOL_AVG, 3, 1, 1, 1, 1, 0)}, 2, NULL);
  s = pool(g, s, SIEVE_POOL_AVG, 3, 2, 2, 1, 1, 0); /* strided, padded, not square */
  s = sieve_graph_global_avg_pool(g, s);
  s = sieve_graph_linear(g, s, 2, FALSE);
  finish(g, s);
  check_against_differences(g, 1e-9);
  sieve_graph_free(g);
}

/* Concat of branches, one of them zero, identities, a sum with a zero term. */
static void
test_fd_concat(void)
{
  SieveGraph *g = sieve_graph_new("concat");
  guint x = sieve_graph_input(g, 2, 5, 4);
  guint a = conv(g, x, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, FALSE);
  guint b = conv(g, sieve_graph_relu(g, x), 2, 1, 1, 1, 1, 0, 0, 1, 1, 1, TRUE);
  guint z = sieve_graph_zero(g, a);
  guint c = sieve_graph_concat(g, (guint[]){a, sieve_graph_identity(g, b), z, x}, 4);
  guint s = sieve_graph_sum(g, (guint[]){c, sieve_graph_zero(g, c)}, 2);
  s = conv(g, s, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, FALSE);
  s = sieve_graph_linear(g, s, 4, FALSE);
  finish(g, s);
  check_against_differences(g, 1e-9);
  sieve_graph_free(g);
}

/* Every activation: smooth ones bend R within the step, hence the looser
 * tolerance. */
static void
test_fd_activations(void)
{
  for (SieveActivation act = 0; act < SIEVE_N_ACTIVATIONS; act++) {
    g_autofree char *name = g_strdup_printf("act-%s", sieve_activation_name(act));
    SieveGraph *g = sieve_graph_new(name);
    guint x = sieve_graph_input(g, 2, 4, 4);
    x = conv(g, x, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, FALSE);
    x = sieve_graph_activation(g, x, act, 0.1);
    x = conv(g, x, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, FALSE);
    x = sieve_graph_activation(g, x, act, 0.1);
    x = sieve_graph_linear(g, x, 2, FALSE);
    finish(g, x);
    check_against_differences(g, act <= SIEVE_ACT_ELU ? 1e-9 : 1e-8);
    sieve_graph_free(g);
  }
}

static SieveGraph *
nb201(const char *arch, guint C, guint N, guint size)
{
  const SieveComponent *c = sieve_registry_lookup(registry, SIEVE_KIND_SPACE, "nb201");
  if (c == NULL)
    g_error("space 'nb201' is not in the build tree's plugins");
  g_autofree char *yaml = g_strdup_printf("C: %u\nN: %u\nsize: %u\n", C, N, size);
  GError *error = NULL;
  g_autoptr(SieveNode) map = sieve_node_parse_string(yaml, -1, "test.yaml", &error);
  g_assert_no_error(error);
  static const char *const reserved[] = {"plugin", NULL};
  g_autoptr(SieveOptions) options =
    sieve_options_new(sieve_component_get_info(c)->options, map, reserved, NULL, "test", &error);
  g_assert_no_error(error);
  g_autoptr(SieveSpace) space = sieve_space_new(c, options, &error);
  g_assert_no_error(error);
  g_autoptr(SieveGenotype) genotype = sieve_space_parse(space, arch, &error);
  g_assert_no_error(error);
  SieveGraph *g = sieve_space_build(space, genotype, &error);
  g_assert_no_error(error);
  return g;
}

/* A whole (small) nb201 network: every op of the space, shared ReLUs,
 * the reduction blocks' strided convolutions and pooled shortcuts. */
static void
test_fd_nb201(void)
{
  g_autoptr(SieveGraph) g =
    nb201("|nor_conv_3x3~0|+|nor_conv_1x1~0|avg_pool_3x3~1|+|skip_connect~0|none~1|nor_conv_3x3~2|", 3, 1, 8);
  check_against_differences(g, 1e-9);
}

/* ---- the convolution kernels ---------------------------------------------------- */

static void
naive_conv(const SieveGraphNode *n, SieveShape is, const double *w, const double *x, double *y)
{
  const SieveOpAttrs *a = &n->attrs;
  SieveShape os = n->shape;
  guint cin = is.c / a->groups, cout = os.c / a->groups;
  for (guint o = 0; o < os.c; o++)
    for (guint oy = 0; oy < os.h; oy++)
      for (guint ox = 0; ox < os.w; ox++) {
        double s = 0;
        for (guint ci = 0; ci < cin; ci++)
          for (guint ky = 0; ky < a->kernel[0]; ky++)
            for (guint kx = 0; kx < a->kernel[1]; kx++) {
              gint64 iy = (gint64)oy * a->stride[0] - a->pad[0] + (gint64)ky * a->dilation[0];
              gint64 ix = (gint64)ox * a->stride[1] - a->pad[1] + (gint64)kx * a->dilation[1];
              if (iy < 0 || iy >= is.h || ix < 0 || ix >= is.w)
                continue;
              s += w[((gsize)(o * cin + ci) * a->kernel[0] + ky) * a->kernel[1] + kx] *
                   x[((gsize)((o / cout) * cin + ci) * is.h + iy) * is.w + ix];
            }
        y[((gsize)o * os.h + oy) * os.w + ox] = s;
      }
}

/* Shapes chosen to hit the edges: widths that are not a whole number of
 * vectors (1, 5, 13), fewer output channels than a row block, groups that
 * leave partial row blocks, strides and dilations of 2 and 3, and the
 * nb201 shapes themselves. */
static void
test_conv_kernels(void)
{
  static const struct {
    guint cin, h, w, cout, kh, kw, sh, sw, ph, pw, dh, dw, groups;
  } cases[] = {
    {16, 32, 32, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1}, {32, 16, 16, 64, 3, 3, 2, 2, 1, 1, 1, 1, 1},
    {64, 8, 8, 64, 1, 1, 1, 1, 0, 0, 1, 1, 1},   {3, 5, 13, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {6, 7, 9, 9, 3, 2, 2, 3, 1, 1, 1, 2, 3},     {4, 11, 10, 6, 3, 3, 3, 2, 2, 0, 2, 3, 2},
    {5, 1, 1, 7, 1, 1, 1, 1, 0, 0, 1, 1, 1},     {8, 6, 5, 8, 5, 5, 1, 1, 2, 2, 1, 1, 8},
    {2, 4, 4, 3, 3, 3, 1, 1, 0, 0, 1, 1, 1},
  };
  SieveRng rng;
  sieve_rng_seed(&rng, 3);
  for (guint t = 0; t < G_N_ELEMENTS(cases); t++) {
    g_autoptr(SieveGraph) g = sieve_graph_new("conv");
    guint x = sieve_graph_input(g, cases[t].cin, cases[t].h, cases[t].w);
    guint c = conv(g, x, cases[t].cout, cases[t].kh, cases[t].kw, cases[t].sh, cases[t].sw, cases[t].ph,
                   cases[t].pw, cases[t].dh, cases[t].dw, cases[t].groups, FALSE);
    finish(g, c);
    const SieveGraphNode *n = sieve_graph_node(g, c);
    SieveShape is = sieve_graph_node(g, x)->shape, os = n->shape;
    gsize isize = (gsize)is.c * is.h * is.w, osize = (gsize)os.c * os.h * os.w;
    gsize wsize = (gsize)os.c * (is.c / cases[t].groups) * cases[t].kh * cases[t].kw;
    g_autofree double *w = g_new(double, wsize);
    g_autofree double *in = g_new(double, 2 * isize);
    g_autofree double *want = g_new(double, 2 * osize);
    g_autofree double *got = g_new(double, 2 * osize);
    for (gsize k = 0; k < wsize; k++)
      w[k] = 2 * sieve_rng_uniform(&rng) - 1;
    for (gsize k = 0; k < 2 * isize; k++)
      in[k] = 2 * sieve_rng_uniform(&rng) - 1;
    naive_conv(n, is, w, in, want);
    naive_conv(n, is, w, in + isize, want + osize);
    for (SieveConvIsa isa = SIEVE_CONV_ISA_BASE; isa <= SIEVE_CONV_ISA_AVX512; isa++) {
      if (!sieve__conv_f64_isa_available(isa))
        continue;
      for (guint threads = 1; threads <= 2; threads++) {
        SieveConvF64 *cv = sieve__conv_f64_new(n, is, w, isa);
        g_autofree double *scratch = g_new(double, sieve__conv_f64_scratch_size(cv, 2));
        memset(got, 0xff, 2 * osize * sizeof(double)); /* NaNs: an output never written fails */
        sieve__conv_f64_run(cv, (const double *[]){in, in + isize}, (double *[]){got, got + osize}, 2, threads,
                            threads == 2 ? NULL : scratch);
        sieve__conv_f64_free(cv);
        for (gsize k = 0; k < 2 * osize; k++)
          if (!(fabs(got[k] - want[k]) <= 1e-12 * (1 + fabs(want[k]))))
            g_error("case %u, %s kernel, %u threads: output %" G_GSIZE_FORMAT " is %.17g, expected %.17g", t,
                    sieve__conv_f64_isa_name(isa), threads, k, got[k], want[k]);
      }
    }
  }
  g_test_message("fastest kernel on this CPU: %s", sieve__conv_f64_isa_name(SIEVE_CONV_ISA_AUTO));
}

/* ---- threads, errors -------------------------------------------------------------- */

/* Each output is one kernel call's sum in a fixed order, whichever thread
 * computes it: the bits do not depend on the thread count. */
static void
test_threads(void)
{
  g_autoptr(SieveGraph) g =
    nb201("|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|", 8, 2,
          16);
  g_autoptr(SieveRuntime) rt = runtime_for(g, 3);
  double one = synflow(g, rt, 1), two = synflow(g, rt, 2), all = synflow(g, rt, 0);
  g_assert_cmpfloat(one, >, 0);
  g_assert_cmpfloat(one, ==, two);
  g_assert_cmpfloat(one, ==, all);
}

/* A runtime compiled from another graph is refused, with both named. */
static void
test_wrong_runtime(void)
{
  g_autoptr(SieveGraph) a = sieve_graph_new("a");
  guint x = sieve_graph_input(a, 3, 4, 4);
  finish(a, sieve_graph_linear(a, sieve_graph_global_avg_pool(a, x), 2, FALSE));
  g_autoptr(SieveGraph) b = sieve_graph_new("b");
  x = sieve_graph_input(b, 3, 4, 4);
  finish(b, sieve_graph_linear(b, sieve_graph_conv2d(b, x, 2, 3, 1, 1, FALSE), 2, FALSE));
  g_autoptr(SieveRuntime) rt = runtime_for(b, 1);
  GError *error = NULL;
  double s = 0;
  g_assert_false(sieve_proxy_synflow(a, rt, 1, &s, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, "does not belong to this graph"));
  g_clear_error(&error);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  registry = test_registry_load();
  g_test_add_func("/synflow/hand/chain", test_chain);
  g_test_add_func("/synflow/hand/chain-bias", test_chain_bias);
  g_test_add_func("/synflow/hand/skip", test_skip);
  g_test_add_func("/synflow/hand/conv-padding", test_conv_padding);
  g_test_add_func("/synflow/hand/cut-off", test_cut_off);
  g_test_add_func("/synflow/differences/convs", test_fd_convs);
  g_test_add_func("/synflow/differences/pools", test_fd_pools);
  g_test_add_func("/synflow/differences/concat", test_fd_concat);
  g_test_add_func("/synflow/differences/activations", test_fd_activations);
  g_test_add_func("/synflow/differences/nb201", test_fd_nb201);
  g_test_add_func("/synflow/conv-kernels", test_conv_kernels);
  g_test_add_func("/synflow/threads", test_threads);
  g_test_add_func("/synflow/wrong-runtime", test_wrong_runtime);
  int rc = g_test_run();
  sieve_registry_free(registry);
  return rc;
}
