/* The network IR: shape inference for every operation, sticky builder
 * errors, liveness, parameter and multiply-accumulate counts worked out by
 * hand, the text dump, copies and the loss. */
#include <string.h>

#include <sieve/sieve.h>

/* The graph's recorded error, through finish() (which only reads it). */
static GError *
graph_error(SieveGraph *g, guint output)
{
  GError *error = NULL;
  g_assert_false(sieve_graph_finish(g, output, &error));
  g_assert_nonnull(error);
  return error;
}

static void
assert_shape(const SieveGraph *g, guint node, guint c, guint h, guint w)
{
  g_assert_cmpuint(node, !=, SIEVE_NODE_INVALID);
  SieveShape s = sieve_graph_node(g, node)->shape;
  g_assert_cmpuint(s.c, ==, c);
  g_assert_cmpuint(s.h, ==, h);
  g_assert_cmpuint(s.w, ==, w);
}

/* Adds one node with sieve_graph_add and the attributes given. */
static guint
add1(SieveGraph *g, SieveOpKind kind, guint x, SieveOpAttrs a)
{
  return sieve_graph_add(g, kind, &x, 1, &a);
}

/* Expects g's first error to be exactly message. */
static void
assert_error(SieveGraph *g, const char *message)
{
  g_autoptr(GError) error = graph_error(g, 0);
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH);
  g_assert_cmpstr(error->message, ==, message);
}

/* ---- shapes ------------------------------------------------------------- */

static void
test_shape_conv(void)
{
  g_autoptr(SieveGraph) g = sieve_graph_new("conv");
  guint x = sieve_graph_input(g, 8, 32, 30);
  assert_shape(g, x, 8, 32, 30);
  assert_shape(g, sieve_graph_conv2d(g, x, 16, 3, 1, 1, FALSE), 16, 32, 30);
  /* (32 + 2 - 3) / 2 + 1 = 16; (30 + 2 - 3) / 2 + 1 = 15 */
  assert_shape(g, sieve_graph_conv2d(g, x, 4, 3, 2, 1, FALSE), 4, 16, 15);
  /* No padding: 32 - 3 + 1 = 30 and 28. */
  assert_shape(g, sieve_graph_conv2d(g, x, 4, 3, 1, 0, TRUE), 4, 30, 28);
  /* Dilation 2 spans 5: (32 + 4 - 5) + 1 = 32 with padding 2; a 1x5 kernel
   * with stride 1x3 and padding 0x2: h 32, w (30 + 4 - 5) / 3 + 1 = 10. */
  assert_shape(g, add1(g, SIEVE_OP_CONV2D, x, (SieveOpAttrs){.out_channels = 4, .kernel = {3, 3}, .stride = {1, 1},
                                                             .pad = {2, 2}, .dilation = {2, 2}}),
               4, 32, 30);
  guint rect = add1(g, SIEVE_OP_CONV2D, x,
                    (SieveOpAttrs){.out_channels = 6, .kernel = {1, 5}, .stride = {1, 3}, .pad = {0, 2}});
  assert_shape(g, rect, 6, 32, 10);
  /* Unset dilation and groups mean dense, and are stored as 1 so that equal
   * convolutions have equal attributes. */
  g_assert_cmpuint(sieve_graph_node(g, rect)->attrs.dilation[0], ==, 1);
  g_assert_cmpuint(sieve_graph_node(g, rect)->attrs.groups, ==, 1);
  /* Groups (depthwise included): they must divide both channel counts. */
  guint grouped = add1(g, SIEVE_OP_CONV2D, x,
                       (SieveOpAttrs){.out_channels = 12, .kernel = {3, 3}, .stride = {1, 1}, .pad = {1, 1},
                                      .groups = 4});
  assert_shape(g, grouped, 12, 32, 30);
  g_assert_cmpuint(sieve_graph_node_params(g, grouped), ==, 12 * 2 * 9);
  guint depthwise = add1(g, SIEVE_OP_CONV2D, x,
                         (SieveOpAttrs){.out_channels = 8, .kernel = {3, 3}, .stride = {2, 2}, .groups = 8});
  assert_shape(g, depthwise, 8, 15, 14);
  g_autofree char *ok = sieve_graph_dump(g); /* no error so far */
  g_assert_nonnull(ok);

  g_autoptr(SieveGraph) bad_groups = sieve_graph_new("groups");
  x = sieve_graph_input(bad_groups, 8, 4, 4);
  g_assert_cmpuint(add1(bad_groups, SIEVE_OP_CONV2D, x,
                        (SieveOpAttrs){.out_channels = 9, .kernel = {1, 1}, .stride = {1, 1}, .groups = 3}),
                   ==, SIEVE_NODE_INVALID);
  assert_error(bad_groups,
               "graph groups: node 1 (conv2d): groups 3 must divide input channels 8 and output channels 9 (>= 1)");

  g_autoptr(SieveGraph) too_big = sieve_graph_new("fit");
  x = sieve_graph_input(too_big, 1, 5, 5);
  g_assert_cmpuint(sieve_graph_conv2d(too_big, x, 2, 7, 1, 0, FALSE), ==, SIEVE_NODE_INVALID);
  assert_error(too_big, "graph fit: node 1 (conv2d): kernel 7x7 does not fit input 5x5 with padding 0,0");

  g_autoptr(SieveGraph) zero_stride = sieve_graph_new("stride");
  x = sieve_graph_input(zero_stride, 1, 5, 5);
  g_assert_cmpuint(sieve_graph_conv2d(zero_stride, x, 2, 3, 0, 1, FALSE), ==, SIEVE_NODE_INVALID);
  assert_error(zero_stride, "graph stride: node 1 (conv2d): kernel and stride must be at least 1");
}

static void
test_shape_pool(void)
{
  g_autoptr(SieveGraph) g = sieve_graph_new("pool");
  guint x = sieve_graph_input(g, 5, 7, 8);
  assert_shape(g, sieve_graph_pool(g, x, SIEVE_POOL_AVG, 3, 1, 1), 5, 7, 8);
  assert_shape(g, sieve_graph_pool(g, x, SIEVE_POOL_MAX, 2, 2, 0), 5, 3, 4);
  assert_shape(g, sieve_graph_pool(g, x, SIEVE_POOL_MAX, 3, 2, 1), 5, 4, 4);
  guint p = sieve_graph_pool(g, x, SIEVE_POOL_AVG, 7, 7, 0);
  assert_shape(g, p, 5, 1, 1);
  g_assert_cmpuint(sieve_graph_node_params(g, p), ==, 0);

  g_autoptr(SieveGraph) pad = sieve_graph_new("pad");
  x = sieve_graph_input(pad, 1, 8, 8);
  g_assert_cmpuint(sieve_graph_pool(pad, x, SIEVE_POOL_AVG, 3, 1, 2), ==, SIEVE_NODE_INVALID);
  assert_error(pad, "graph pad: node 1 (pool): padding 2 must be at most half the kernel 3");

  g_autoptr(SieveGraph) fit = sieve_graph_new("fit");
  x = sieve_graph_input(fit, 1, 2, 2);
  g_assert_cmpuint(sieve_graph_pool(fit, x, SIEVE_POOL_MAX, 3, 1, 0), ==, SIEVE_NODE_INVALID);
  assert_error(fit, "graph fit: node 1 (pool): window 3x3 does not fit input 2x2");
}

static void
test_shape_concat(void)
{
  g_autoptr(SieveGraph) g = sieve_graph_new("concat");
  guint x = sieve_graph_input(g, 2, 6, 6);
  guint a = sieve_graph_conv2d(g, x, 3, 1, 1, 0, FALSE);
  guint b = sieve_graph_conv2d(g, x, 5, 3, 1, 1, FALSE);
  assert_shape(g, sieve_graph_concat(g, (guint[]){x, a, b}, 3), 10, 6, 6);
  assert_shape(g, sieve_graph_concat(g, (guint[]){b}, 1), 5, 6, 6);
  guint small = sieve_graph_pool(g, x, SIEVE_POOL_MAX, 2, 2, 0);
  g_assert_cmpuint(sieve_graph_concat(g, (guint[]){a, small}, 2), ==, SIEVE_NODE_INVALID);
  assert_error(g, "graph concat: node 6 (concat): input 1 is 3x3, input 0 is 6x6: concat joins channels of equal "
                  "extents");
}

static void
test_shape_add(void)
{
  g_autoptr(SieveGraph) g = sieve_graph_new("add");
  guint x = sieve_graph_input(g, 3, 8, 8);
  guint a = sieve_graph_conv2d(g, x, 3, 3, 1, 1, FALSE);
  assert_shape(g, sieve_graph_sum(g, (guint[]){x, a, x}, 3), 3, 8, 8);
  assert_shape(g, sieve_graph_sum(g, (guint[]){a}, 1), 3, 8, 8);
  /* Channels differ, then extents differ: the first mismatch is the error. */
  guint wide = sieve_graph_conv2d(g, x, 4, 1, 1, 0, FALSE);
  guint small = sieve_graph_conv2d(g, x, 3, 1, 2, 0, FALSE);
  g_assert_cmpuint(sieve_graph_sum(g, (guint[]){x, a, wide}, 3), ==, SIEVE_NODE_INVALID);
  g_assert_cmpuint(sieve_graph_sum(g, (guint[]){x, small}, 2), ==, SIEVE_NODE_INVALID);
  assert_error(g, "graph add: node 6 (add): input 2 has shape 4x8x8, input 0 has 3x8x8");

  g_autoptr(SieveGraph) empty = sieve_graph_new("empty");
  x = sieve_graph_input(empty, 3, 8, 8);
  g_assert_cmpuint(sieve_graph_sum(empty, NULL, 0), ==, SIEVE_NODE_INVALID);
  assert_error(empty, "graph empty: node 1 (add): takes at least 1 input, got 0");

  g_autoptr(SieveGraph) extent = sieve_graph_new("extent");
  x = sieve_graph_input(extent, 3, 8, 8);
  small = sieve_graph_conv2d(extent, x, 3, 1, 2, 0, FALSE);
  g_assert_cmpuint(sieve_graph_sum(extent, (guint[]){x, small}, 2), ==, SIEVE_NODE_INVALID);
  assert_error(extent, "graph extent: node 2 (add): input 1 has shape 3x4x4, input 0 has 3x8x8");
}

static void
test_shape_unary(void)
{
  g_autoptr(SieveGraph) g = sieve_graph_new("unary");
  guint x = sieve_graph_input(g, 4, 5, 7);
  guint bn = sieve_graph_batch_norm(g, x);
  assert_shape(g, bn, 4, 5, 7);
  const SieveOpAttrs *a = &sieve_graph_node(g, bn)->attrs;
  g_assert_true(a->affine);
  g_assert_cmpfloat(a->eps, ==, 1e-5);
  g_assert_cmpfloat(a->momentum, ==, 0.1);
  for (guint k = 0; k < SIEVE_N_ACTIVATIONS; k++) {
    assert_shape(g, sieve_graph_activation(g, x, k, 0.5), 4, 5, 7);
    g_assert_cmpint(sieve_activation_from_name(sieve_activation_name(k)), ==, k);
  }
  g_assert_cmpint(sieve_activation_from_name("mish"), ==, SIEVE_N_ACTIVATIONS);
  assert_shape(g, sieve_graph_identity(g, x), 4, 5, 7);
  assert_shape(g, sieve_graph_zero(g, x), 4, 5, 7);
  assert_shape(g, sieve_graph_global_avg_pool(g, x), 4, 1, 1);
  guint lin = sieve_graph_linear(g, x, 6, FALSE);
  assert_shape(g, lin, 6, 1, 1);
  /* A linear layer flattens its whole input: 4*5*7 features. */
  g_assert_cmpuint(sieve_graph_node_params(g, lin), ==, 6 * 140);
  guint logits = sieve_graph_linear(g, sieve_graph_global_avg_pool(g, x), 3, TRUE);
  assert_shape(g, sieve_graph_softmax_ce(g, logits, 0.1), 1, 1, 1);
  g_assert_cmpuint(sieve_graph_softmax_ce(g, x, 0), ==, SIEVE_NODE_INVALID);
  g_autofree char *want = g_strdup_printf("graph unary: node %d (softmax_ce): needs logits of shape Kx1x1 with K >= 2, "
                                          "got 4x5x7", 9 + SIEVE_N_ACTIVATIONS); /* one node per activation above */
  assert_error(g, want);

  g_autoptr(SieveGraph) bn_eps = sieve_graph_new("bn");
  x = sieve_graph_input(bn_eps, 2, 2, 2);
  g_assert_cmpuint(add1(bn_eps, SIEVE_OP_BATCH_NORM, x, (SieveOpAttrs){.affine = TRUE, .eps = 0, .momentum = 0.1}),
                   ==, SIEVE_NODE_INVALID);
  assert_error(bn_eps, "graph bn: node 1 (batch_norm): eps must be positive");

  g_autoptr(SieveGraph) act = sieve_graph_new("act");
  x = sieve_graph_input(act, 2, 2, 2);
  g_assert_cmpuint(sieve_graph_activation(act, x, SIEVE_N_ACTIVATIONS, 0), ==, SIEVE_NODE_INVALID);
  g_autofree char *unknown = g_strdup_printf("graph act: node 1 (activation): unknown activation %d", SIEVE_N_ACTIVATIONS);
  assert_error(act, unknown);

  /* mul: x [C,H,W] times a gate [C,1,1] or [C,H,W]; anything else is refused. */
  g_autoptr(SieveGraph) mul = sieve_graph_new("mul");
  x = sieve_graph_input(mul, 4, 5, 7);
  guint gate = sieve_graph_global_avg_pool(mul, x);
  assert_shape(mul, sieve_graph_mul(mul, x, gate), 4, 5, 7);
  assert_shape(mul, sieve_graph_mul(mul, x, x), 4, 5, 7);
  g_assert_cmpstr(sieve_op_kind_name(SIEVE_OP_MUL), ==, "mul");
  g_assert_cmpuint(sieve_graph_add(mul, SIEVE_OP_MUL, &x, 1, NULL), ==, SIEVE_NODE_INVALID);
  assert_error(mul, "graph mul: node 4 (mul): takes 2 inputs, got 1");
  g_autoptr(SieveGraph) mul2 = sieve_graph_new("mul2");
  x = sieve_graph_input(mul2, 4, 5, 7);
  guint narrow = sieve_graph_conv2d(mul2, sieve_graph_global_avg_pool(mul2, x), 3, 1, 1, 0, FALSE);
  g_assert_cmpuint(sieve_graph_mul(mul2, x, narrow), ==, SIEVE_NODE_INVALID);
  assert_error(mul2, "graph mul2: node 3 (mul): gate has shape 3x1x1, expected 4x5x7 or 4x1x1 for x of shape 4x5x7");
  g_autoptr(SieveGraph) mul3 = sieve_graph_new("mul3");
  x = sieve_graph_input(mul3, 4, 5, 7);
  guint wide = sieve_graph_pool(mul3, x, SIEVE_POOL_MAX, 2, 2, 0);
  g_assert_cmpuint(sieve_graph_mul(mul3, x, wide), ==, SIEVE_NODE_INVALID);
  assert_error(mul3, "graph mul3: node 2 (mul): gate has shape 4x2x3, expected 4x5x7 or 4x1x1 for x of shape 4x5x7");

  g_autoptr(SieveGraph) lin0 = sieve_graph_new("lin");
  x = sieve_graph_input(lin0, 2, 2, 2);
  g_assert_cmpuint(sieve_graph_linear(lin0, x, 0, TRUE), ==, SIEVE_NODE_INVALID);
  assert_error(lin0, "graph lin: node 1 (linear): needs at least one output feature");
}

/* ---- builder errors ----------------------------------------------------- */

static void
test_sticky_errors(void)
{
  g_autoptr(SieveGraph) g = sieve_graph_new("sticky");
  guint x = sieve_graph_input(g, 3, 8, 8);
  guint a = sieve_graph_conv2d(g, x, 4, 3, 1, 1, FALSE);
  /* The first error: a 4-channel and a 3-channel tensor added. */
  guint bad = sieve_graph_sum(g, (guint[]){a, x}, 2);
  g_assert_cmpuint(bad, ==, SIEVE_NODE_INVALID);
  /* Everything after it is refused, whether it consumes the failed node or
   * not, and the graph does not grow. */
  g_assert_cmpuint(sieve_graph_relu(g, bad), ==, SIEVE_NODE_INVALID);
  g_assert_cmpuint(sieve_graph_relu(g, a), ==, SIEVE_NODE_INVALID);
  g_assert_cmpuint(sieve_graph_conv2d(g, x, 0, 3, 1, 1, FALSE), ==, SIEVE_NODE_INVALID);
  g_assert_cmpuint(sieve_graph_n_nodes(g), ==, 2);
  /* The message names the graph, the node it would have been, its
   * operation, and what was expected; the later errors do not replace it. */
  assert_error(g, "graph sticky: node 2 (add): input 1 has shape 3x8x8, input 0 has 4x8x8");
  /* finish() reports it every time and marks no output. */
  assert_error(g, "graph sticky: node 2 (add): input 1 has shape 3x8x8, input 0 has 4x8x8");
  g_assert_cmpuint(sieve_graph_output(g), ==, SIEVE_NODE_INVALID);

  /* Other builder mistakes, each the first error of its own graph. */
  g_autoptr(SieveGraph) two_inputs = sieve_graph_new("e");
  sieve_graph_input(two_inputs, 1, 2, 2);
  g_assert_cmpuint(sieve_graph_input(two_inputs, 1, 2, 2), ==, SIEVE_NODE_INVALID);
  assert_error(two_inputs, "graph e: node 1 (input): a graph has one input, node 0 already is");

  g_autoptr(SieveGraph) dangling = sieve_graph_new("e");
  sieve_graph_input(dangling, 1, 2, 2);
  g_assert_cmpuint(sieve_graph_conv2d(dangling, 7, 2, 1, 1, 0, FALSE), ==, SIEVE_NODE_INVALID);
  assert_error(dangling, "graph e: node 1 (conv2d): input 0 refers to node 7, which does not exist");

  g_autoptr(SieveGraph) arity = sieve_graph_new("e");
  x = sieve_graph_input(arity, 1, 2, 2);
  g_assert_cmpuint(sieve_graph_add(arity, SIEVE_OP_IDENTITY, (guint[]){x, x}, 2, NULL), ==, SIEVE_NODE_INVALID);
  assert_error(arity, "graph e: node 1 (identity): takes 1 input, got 2");

  g_autoptr(SieveGraph) loss_input = sieve_graph_new("e");
  x = sieve_graph_input(loss_input, 4, 1, 1);
  guint loss = sieve_graph_softmax_ce(loss_input, x, 0);
  g_assert_cmpuint(loss, !=, SIEVE_NODE_INVALID);
  g_assert_cmpuint(sieve_graph_relu(loss_input, loss), ==, SIEVE_NODE_INVALID);
  assert_error(loss_input, "graph e: node 2 (activation): input 0 is a loss, which nothing may consume");

  g_autoptr(SieveGraph) zero_input = sieve_graph_new("e");
  g_assert_cmpuint(sieve_graph_input(zero_input, 3, 0, 4), ==, SIEVE_NODE_INVALID);
  assert_error(zero_input, "graph e: node 0 (input): input shape 3x0x4 has a zero extent");

  /* finish() on a graph without errors still checks its output and input. */
  g_autoptr(SieveGraph) no_output = sieve_graph_new("e");
  x = sieve_graph_input(no_output, 1, 2, 2);
  GError *error = NULL;
  g_assert_false(sieve_graph_finish(no_output, 5, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH);
  g_assert_cmpstr(error->message, ==, "graph e: output node 5 does not exist");
  g_clear_error(&error);
  g_autoptr(SieveGraph) no_input = sieve_graph_new(NULL);
  g_assert_false(sieve_graph_finish(no_input, 0, &error));
  g_assert_cmpstr(error->message, ==, "graph graph: output node 0 does not exist");
  g_clear_error(&error);
}

/* ---- liveness, params, MACs --------------------------------------------- */

/* input 3x8x8
 *   %1 conv 4, 3x3, pad 1, bias   params 4*3*9 + 4 = 112   macs 4*8*8 * 3*9 = 6912
 *   %2 batch_norm                 params 2*4 = 8
 *   %3 relu
 *   %4 conv 4, 1x1, groups 2      params 4*2 = 8           macs 4*8*8 * 2 = 512
 *   %5 conv 6, 3x3 (dead branch)  params 6*4*9 = 216       macs 6*6*6 * 36 = 7776
 *   %6 add(%3, %4)
 *   %7 max pool 2x2/2 -> 4x4x4
 *   %8 global avg pool -> 4x1x1
 *   %9 linear 3, bias             params 4*3 + 3 = 15      macs 12
 * Live (reaching %9): everything but %5. */
static SieveGraph *
small_graph(void)
{
  SieveGraph *g = sieve_graph_new("small");
  guint x = sieve_graph_input(g, 3, 8, 8);
  guint h = sieve_graph_conv2d(g, x, 4, 3, 1, 1, TRUE);
  sieve_graph_set_label(g, h, "stem.conv");
  h = sieve_graph_batch_norm(g, h);
  guint r = sieve_graph_relu(g, h);
  guint grouped = add1(g, SIEVE_OP_CONV2D, r,
                       (SieveOpAttrs){.out_channels = 4, .kernel = {1, 1}, .stride = {1, 1}, .groups = 2});
  sieve_graph_conv2d(g, r, 6, 3, 1, 0, FALSE); /* dead */
  h = sieve_graph_sum(g, (guint[]){r, grouped}, 2);
  h = sieve_graph_pool(g, h, SIEVE_POOL_MAX, 2, 2, 0);
  h = sieve_graph_global_avg_pool(g, h);
  h = sieve_graph_linear(g, h, 3, TRUE);
  sieve_graph_set_label(g, h, "head");
  GError *error = NULL;
  g_assert_true(sieve_graph_finish(g, h, &error));
  g_assert_no_error(error);
  return g;
}

static void
test_liveness(void)
{
  g_autoptr(SieveGraph) g = small_graph();
  g_assert_cmpuint(sieve_graph_n_nodes(g), ==, 10);
  g_assert_cmpuint(sieve_graph_output(g), ==, 9);
  g_assert_cmpuint(sieve_graph_input_node(g), ==, 0);
  for (guint i = 0; i < 10; i++)
    g_assert_cmpint(sieve_graph_node_live(g, i), ==, i != 5);
  g_assert_false(sieve_graph_node_live(g, 10));

  /* A zero node still consumes its input (the runtime, not liveness, drops
   * it), and marking an earlier output makes the later nodes dead. */
  g_autoptr(SieveGraph) z = sieve_graph_new("zero");
  guint x = sieve_graph_input(z, 2, 4, 4);
  guint c = sieve_graph_conv2d(z, x, 2, 3, 1, 1, FALSE);
  guint zero = sieve_graph_zero(z, c);
  guint after = sieve_graph_relu(z, zero);
  g_assert_true(sieve_graph_finish(z, zero, NULL));
  g_assert_true(sieve_graph_node_live(z, c));
  g_assert_true(sieve_graph_node_live(z, zero));
  g_assert_false(sieve_graph_node_live(z, after));
  g_assert_cmpuint(sieve_graph_params(z), ==, 2 * 2 * 9);

  /* Before finish() nothing is live and nothing counted. */
  g_autoptr(SieveGraph) open = sieve_graph_new("open");
  x = sieve_graph_input(open, 2, 4, 4);
  sieve_graph_conv2d(open, x, 2, 3, 1, 1, FALSE);
  g_assert_false(sieve_graph_node_live(open, 0));
  g_assert_cmpuint(sieve_graph_params(open), ==, 0);
  g_assert_cmpuint(sieve_graph_macs(open), ==, 0);
}

static void
test_params_macs(void)
{
  g_autoptr(SieveGraph) g = small_graph();
  static const guint64 params[10] = {0, 112, 8, 0, 8, 216, 0, 0, 0, 15};
  for (guint i = 0; i < 10; i++)
    g_assert_cmpuint(sieve_graph_node_params(g, i), ==, params[i]);
  g_assert_cmpuint(sieve_graph_params(g), ==, 112 + 8 + 8 + 15);
  g_assert_cmpuint(sieve_graph_macs(g), ==, 6912 + 512 + 12);

  /* Strided and dilated convolutions count per output element:
   * 5 out * (4x4 out) * 3 in * 9 = 2160, and a linear layer over a whole
   * 2x3x3 map: 18 * 7 = 126 (+ 7 bias parameters). */
  g_autoptr(SieveGraph) h = sieve_graph_new("strided");
  guint x = sieve_graph_input(h, 3, 9, 9);
  guint c = add1(h, SIEVE_OP_CONV2D, x,
                 (SieveOpAttrs){.out_channels = 5, .kernel = {3, 3}, .stride = {2, 2}, .dilation = {2, 2},
                                .pad = {1, 1}});
  assert_shape(h, c, 5, 4, 4);
  guint l = sieve_graph_linear(h, sieve_graph_conv2d(h, c, 2, 2, 1, 0, FALSE), 7, TRUE);
  g_assert_true(sieve_graph_finish(h, l, NULL));
  /* conv 5->2, 2x2, no pad: 2x3x3 out, 2*3*3 * 5*4 = 360 MACs, 40 params. */
  g_assert_cmpuint(sieve_graph_macs(h), ==, 2160 + 360 + 126);
  g_assert_cmpuint(sieve_graph_params(h), ==, 5 * 3 * 9 + 40 + 18 * 7 + 7);
}

/* ---- dump, copy, loss --------------------------------------------------- */

static const char small_dump[] =
  "graph small: 10 nodes, output %9, params 143, macs 7436\n"
  "%0 = input() -> 3x8x8\n"
  "%1 = conv2d(%0) out=4 k=3x3 s=1,1 p=1,1 bias -> 4x8x8 params=112 \"stem.conv\"\n"
  "%2 = batch_norm(%1) affine eps=1e-05 momentum=0.1 -> 4x8x8 params=8\n"
  "%3 = activation(%2) relu -> 4x8x8\n"
  "%4 = conv2d(%3) out=4 k=1x1 s=1,1 p=0,0 groups=2 -> 4x8x8 params=8\n"
  "%5 = conv2d(%3) out=6 k=3x3 s=1,1 p=0,0 -> 6x6x6 params=216\n"
  "%6 = add(%3, %4) -> 4x8x8\n"
  "%7 = pool(%6) max k=2x2 s=2,2 p=0,0 -> 4x4x4\n"
  "%8 = global_avg_pool(%7) -> 4x1x1\n"
  "%9 = linear(%8) out=3 bias -> 3x1x1 params=15 \"head\"\n";

static void
test_dump(void)
{
  g_autoptr(SieveGraph) g = small_graph();
  g_autofree char *text = sieve_graph_dump(g);
  g_assert_cmpstr(text, ==, small_dump);
}

static void
test_copy(void)
{
  g_autoptr(SieveGraph) g = small_graph();
  g_autoptr(SieveGraph) copy = sieve_graph_copy(g);
  g_autofree char *before = sieve_graph_dump(copy);
  g_assert_cmpstr(before, ==, small_dump);
  g_assert_cmpstr(sieve_graph_name(copy), ==, "small");
  g_assert_cmpuint(sieve_graph_input_node(copy), ==, 0);
  /* The copy owns its nodes and labels: changing and freeing the original
   * leaves it as it was. */
  sieve_graph_set_label(g, 1, "renamed");
  g_assert_true(sieve_graph_add_loss(g, 0, NULL));
  g_assert_cmpstr(sieve_graph_node(g, 1)->label, ==, "renamed");
  g_clear_pointer(&g, sieve_graph_free);
  g_assert_cmpstr(sieve_graph_node(copy, 1)->label, ==, "stem.conv");
  g_assert_true(sieve_graph_node(copy, 6)->inputs != NULL);
  g_autofree char *after = sieve_graph_dump(copy);
  g_assert_cmpstr(after, ==, small_dump);

  /* The error state travels too, and stays sticky in the copy. */
  g_autoptr(SieveGraph) bad = sieve_graph_new("bad");
  guint x = sieve_graph_input(bad, 2, 2, 2);
  sieve_graph_conv2d(bad, x, 3, 5, 1, 0, FALSE);
  g_autoptr(SieveGraph) bad_copy = sieve_graph_copy(bad);
  g_assert_cmpuint(sieve_graph_relu(bad_copy, x), ==, SIEVE_NODE_INVALID);
  assert_error(bad_copy, "graph bad: node 1 (conv2d): kernel 5x5 does not fit input 2x2 with padding 0,0");
}

static void
test_add_loss(void)
{
  GError *error = NULL;
  g_autoptr(SieveGraph) open = sieve_graph_new("open");
  sieve_graph_input(open, 3, 1, 1);
  g_assert_false(sieve_graph_add_loss(open, 0, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH);
  g_assert_cmpstr(error->message, ==, "graph open: has no output to put a loss on");
  g_clear_error(&error);

  g_autoptr(SieveGraph) g = small_graph();
  guint64 params = sieve_graph_params(g), macs = sieve_graph_macs(g);
  g_assert_true(sieve_graph_add_loss(g, 0.1, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(sieve_graph_n_nodes(g), ==, 11);
  g_assert_cmpuint(sieve_graph_output(g), ==, 10);
  const SieveGraphNode *loss = sieve_graph_node(g, 10);
  g_assert_cmpint(loss->kind, ==, SIEVE_OP_SOFTMAX_CE);
  g_assert_cmpuint(loss->n_inputs, ==, 1);
  g_assert_cmpuint(loss->inputs[0], ==, 9);
  g_assert_cmpfloat(loss->attrs.label_smoothing, ==, 0.1);
  assert_shape(g, 10, 1, 1, 1);
  g_assert_cmpuint(sieve_graph_params(g), ==, params);
  g_assert_cmpuint(sieve_graph_macs(g), ==, macs);
  g_autofree char *text = sieve_graph_dump(g);
  g_assert_true(g_str_has_suffix(text, "%10 = softmax_ce(%9) smoothing=0.1 -> 1x1x1\n"));
  /* A second loss would consume the first. */
  g_assert_false(sieve_graph_add_loss(g, 0, &error));
  g_assert_cmpstr(error->message, ==, "graph small: node 11 (softmax_ce): input 0 is a loss, which nothing may consume");
  g_clear_error(&error);

  /* Logits must be Kx1x1 with K >= 2. */
  g_autoptr(SieveGraph) one = sieve_graph_new("one");
  guint x = sieve_graph_input(one, 1, 1, 1);
  g_assert_true(sieve_graph_finish(one, x, NULL));
  g_assert_false(sieve_graph_add_loss(one, 0, &error));
  g_assert_cmpstr(error->message, ==, "graph one: node 1 (softmax_ce): needs logits of shape Kx1x1 with K >= 2, got 1x1x1");
  g_clear_error(&error);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/graph/shape/conv", test_shape_conv);
  g_test_add_func("/graph/shape/pool", test_shape_pool);
  g_test_add_func("/graph/shape/concat", test_shape_concat);
  g_test_add_func("/graph/shape/add", test_shape_add);
  g_test_add_func("/graph/shape/unary", test_shape_unary);
  g_test_add_func("/graph/errors/sticky", test_sticky_errors);
  g_test_add_func("/graph/liveness", test_liveness);
  g_test_add_func("/graph/params-macs", test_params_macs);
  g_test_add_func("/graph/dump", test_dump);
  g_test_add_func("/graph/copy", test_copy);
  g_test_add_func("/graph/add-loss", test_add_loss);
  return g_test_run();
}
