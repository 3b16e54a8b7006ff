/* The DARTS evaluation network (Liu, Simonyan & Yang, "DARTS: Differentiable
 * Architecture Search", ICLR 2019, section 3 and appendix A.1; the
 * authors' `NetworkCIFAR`, `Cell` and operations):
 *
 *   stem: conv3x3(3C) + BN
 *   `layers` cells; the cells at layers/3 and 2*layers/3 are reduction
 *     cells, which double the channels and halve the extent
 *   head: global average pool, linear(classes)
 *
 * A cell reads the outputs of the two cells before it (the stem stands for
 * both before the first cell), preprocessed to its channels C by
 * ReLU-conv1x1-BN, or by a factorized reduction for the older one when the
 * cell before was a reduction (its extent is twice as large).  Each of the
 * 4 intermediate nodes sums two operations of earlier states; in a
 * reduction cell the operations on the two inputs have stride 2.  The cell
 * outputs the concatenation of its 4 intermediate nodes (4C channels).
 *
 * Every convolution has no bias and every BN is affine, as in the
 * evaluation network, so the parameter count matches the authors' code.
 * The auxiliary head and drop-path are training devices of the paper's
 * final runs, not part of the network: they are not built (README.md). */
#include <sieve/graph.h>

#include "darts-network.h"

typedef struct {
  SieveGraph *graph;
  GString *label; /* scratch for labels */
} Builder;

static guint
labelled(Builder *b, guint node, const char *prefix, const char *what)
{
  if (node == SIEVE_NODE_INVALID)
    return node;
  g_string_printf(b->label, "%s.%s", prefix, what);
  sieve_graph_set_label(b->graph, node, b->label->str);
  return node;
}

static guint
conv(Builder *b, guint x, guint out, guint kernel, guint stride, guint pad, guint dilation, guint groups,
     const char *prefix, const char *what)
{
  SieveOpAttrs a = {.out_channels = out,
                    .kernel = {kernel, kernel},
                    .stride = {stride, stride},
                    .pad = {pad, pad},
                    .dilation = {dilation, dilation},
                    .groups = groups};
  return labelled(b, sieve_graph_add(b->graph, SIEVE_OP_CONV2D, &x, 1, &a), prefix, what);
}

static guint
channels(Builder *b, guint x)
{
  return x == SIEVE_NODE_INVALID ? 0 : sieve_graph_node(b->graph, x)->shape.c;
}

/* `ReLUConvBN` with a 1x1 kernel: the cell inputs' preprocessing. */
static guint
relu_conv_bn(Builder *b, guint x, guint out, const char *prefix)
{
  x = labelled(b, sieve_graph_relu(b->graph, x), prefix, "relu");
  x = conv(b, x, out, 1, 1, 0, 1, 1, prefix, "conv");
  return labelled(b, sieve_graph_batch_norm(b->graph, x), prefix, "bn");
}

/* `FactorizedReduce`: ReLU, then two 1x1 stride-2 convolutions of out/2
 * channels each, one on x and one on x shifted by a pixel (x[:, 1:, 1:]),
 * concatenated, BN.  out is even wherever the network builds one. */
static guint
factorized_reduce(Builder *b, guint x, guint out, const char *prefix)
{
  x = labelled(b, sieve_graph_relu(b->graph, x), prefix, "relu");
  if (x == SIEVE_NODE_INVALID)
    return x;
  SieveShape s = sieve_graph_node(b->graph, x)->shape;
  guint shifted = labelled(b, sieve_graph_crop(b->graph, x, 1, 1, s.h - 1, s.w - 1), prefix, "shift");
  guint halves[2] = {conv(b, x, out / 2, 1, 2, 0, 1, 1, prefix, "conv_1"),
                     conv(b, shifted, out / 2, 1, 2, 0, 1, 1, prefix, "conv_2")};
  x = labelled(b, sieve_graph_concat(b->graph, halves, 2), prefix, "concat");
  return labelled(b, sieve_graph_batch_norm(b->graph, x), prefix, "bn");
}

/* `SepConv` (twice ReLU - depthwise kxk - pointwise - BN, the first with the
 * stride) or `DilConv` (once, dilation 2). */
static guint
sep_or_dil_conv(Builder *b, guint x, guint kernel, guint stride, gboolean dilated, const char *prefix)
{
  guint c = channels(b, x);
  guint repeats = dilated ? 1 : 2, dilation = dilated ? 2 : 1, pad = dilation * (kernel - 1) / 2;
  static const char *const parts[2][4] = {{"relu", "dw", "pw", "bn"}, {"relu2", "dw2", "pw2", "bn2"}};
  for (guint r = 0; r < repeats; r++) {
    x = labelled(b, sieve_graph_relu(b->graph, x), prefix, parts[r][0]);
    x = conv(b, x, c, kernel, r == 0 ? stride : 1, pad, dilation, c, prefix, parts[r][1]);
    x = conv(b, x, c, 1, 1, 0, 1, 1, prefix, parts[r][2]);
    x = labelled(b, sieve_graph_batch_norm(b->graph, x), prefix, parts[r][3]);
  }
  return x;
}

static guint
edge(Builder *b, DartsOp op, guint x, guint stride, const char *prefix)
{
  switch (op) {
  case DARTS_OP_MAX_POOL_3X3:
    return labelled(b, sieve_graph_pool(b->graph, x, SIEVE_POOL_MAX, 3, stride, 1), prefix, "max_pool");
  case DARTS_OP_AVG_POOL_3X3:
    /* count_include_pad=False in DARTS, the IR's only average pooling. */
    return labelled(b, sieve_graph_pool(b->graph, x, SIEVE_POOL_AVG, 3, stride, 1), prefix, "avg_pool");
  case DARTS_OP_SKIP_CONNECT:
    if (stride == 1)
      return labelled(b, sieve_graph_identity(b->graph, x), prefix, "skip");
    return factorized_reduce(b, x, channels(b, x), prefix);
  case DARTS_OP_SEP_CONV_3X3:
    return sep_or_dil_conv(b, x, 3, stride, FALSE, prefix);
  case DARTS_OP_SEP_CONV_5X5:
    return sep_or_dil_conv(b, x, 5, stride, FALSE, prefix);
  case DARTS_OP_DIL_CONV_3X3:
    return sep_or_dil_conv(b, x, 3, stride, TRUE, prefix);
  case DARTS_OP_DIL_CONV_5X5:
    return sep_or_dil_conv(b, x, 5, stride, TRUE, prefix);
  default:
    g_return_val_if_reached(SIEVE_NODE_INVALID);
  }
}

static guint
cell(Builder *b, const DartsCell *genes, guint s0, guint s1, guint c, gboolean reduction, gboolean reduction_prev,
     const char *prefix)
{
  g_autoptr(GString) name = g_string_new(NULL);
  guint states[2 + DARTS_STEPS];
  g_string_printf(name, "%s.pre0", prefix);
  states[0] = reduction_prev ? factorized_reduce(b, s0, c, name->str) : relu_conv_bn(b, s0, c, name->str);
  g_string_printf(name, "%s.pre1", prefix);
  states[1] = relu_conv_bn(b, s1, c, name->str);
  for (guint k = 0; k < DARTS_STEPS; k++) {
    guint terms[2];
    for (guint e = 0; e < 2; e++) {
      guint from = genes->input[k][e];
      g_string_printf(name, "%s.node%u.edge_%u", prefix, k + 2, from);
      terms[e] = edge(b, genes->op[k][e], states[from], reduction && from < 2 ? 2 : 1, name->str);
    }
    g_string_printf(name, "node%u", k + 2);
    states[2 + k] = labelled(b, sieve_graph_sum(b->graph, terms, 2), prefix, name->str);
  }
  return labelled(b, sieve_graph_concat(b->graph, states + 2, DARTS_STEPS), prefix, "concat");
}

static gboolean
is_reduction(const DartsSkeleton *sk, guint i)
{
  return i == sk->layers / 3 || i == 2 * sk->layers / 3;
}

gboolean
darts_skeleton_fits(const DartsSkeleton *sk, guint *at)
{
  guint h = sk->size;
  for (guint i = 0; i < sk->layers; i++) {
    if (!is_reduction(sk, i))
      continue;
    if (h % 2 != 0) {
      *at = h;
      return FALSE;
    }
    h /= 2;
  }
  return TRUE;
}

SieveGraph *
darts_network_build(const DartsSkeleton *sk, const DartsCell cells[DARTS_CELL_TYPES], const char *name,
                    GError **error)
{
  g_autoptr(SieveGraph) graph = sieve_graph_new(name);
  g_autoptr(GString) label = g_string_new(NULL);
  Builder b = {graph, label};
  g_autoptr(GString) prefix = g_string_new(NULL);

  guint x = labelled(&b, sieve_graph_input(graph, sk->in_channels, sk->size, sk->size), "stem", "input");
  x = conv(&b, x, 3 * sk->C, 3, 1, 1, 1, 1, "stem", "conv");
  x = labelled(&b, sieve_graph_batch_norm(graph, x), "stem", "bn");
  guint s0 = x, s1 = x, c = sk->C;
  gboolean reduction_prev = FALSE;
  for (guint i = 0; i < sk->layers; i++) {
    gboolean reduction = is_reduction(sk, i);
    if (reduction)
      c *= 2;
    g_string_printf(prefix, "cell%u", i);
    guint out = cell(&b, &cells[reduction ? DARTS_REDUCE : DARTS_NORMAL], s0, s1, c, reduction, reduction_prev,
                     prefix->str);
    s0 = s1;
    s1 = out;
    reduction_prev = reduction;
  }
  x = labelled(&b, sieve_graph_global_avg_pool(graph, s1), "head", "pool");
  x = labelled(&b, sieve_graph_linear(graph, x, sk->classes, TRUE), "head", "linear");
  if (!sieve_graph_finish(graph, x, error))
    return NULL;
  return g_steal_pointer(&graph);
}
