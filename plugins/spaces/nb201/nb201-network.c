/* The NAS-Bench-201 network (Dong & Yang, ICLR 2020, section 2.1 and
 * figure 1; the authors' `TinyNetwork` in xautodl/models/cell_searchs):
 *
 *   stem: conv3x3(C) + BN
 *   stage 1: N cells at C channels
 *   reduction block (ResNet basic block, stride 2) to 2C
 *   stage 2: N cells at 2C
 *   reduction block to 4C
 *   stage 3: N cells at 4C
 *   head: BN + ReLU, global average pool, linear(classes)
 *
 * Every convolution has no bias and is followed by an affine batch norm,
 * as in the benchmark, so the parameter count matches its table.  Each edge
 * gets its own nodes, ReLU included, even where two edges read the same
 * node: the graph is what the benchmark wrote, and merging equal work is
 * the runtime's job (and a hashing concern), not the builder's. */
#include <sieve/graph.h>

#include "nb201-network.h"

typedef struct {
  SieveGraph *graph;
  GString *label; /* scratch for labels */
} Builder;

/* Labels the node just added: prefix + "." + what. */
static guint
labelled(Builder *b, guint node, const char *prefix, const char *what)
{
  if (node == SIEVE_NODE_INVALID)
    return node;
  g_string_printf(b->label, "%s.%s", prefix, what);
  sieve_graph_set_label(b->graph, node, b->label->str);
  return node;
}

/* ReLU - conv(kernel, stride, pad) - BN: the benchmark's `ReLUConvBN`. */
static guint
relu_conv_bn(Builder *b, guint x, guint channels, guint kernel, guint stride, guint pad, const char *prefix)
{
  x = labelled(b, sieve_graph_relu(b->graph, x), prefix, "relu");
  x = labelled(b, sieve_graph_conv2d(b->graph, x, channels, kernel, stride, pad, FALSE), prefix, "conv");
  return labelled(b, sieve_graph_batch_norm(b->graph, x), prefix, "bn");
}

static guint
edge(Builder *b, Nb201Op op, guint x, guint channels, const char *prefix)
{
  switch (op) {
  case NB201_OP_NONE:
    return labelled(b, sieve_graph_zero(b->graph, x), prefix, "zero");
  case NB201_OP_SKIP_CONNECT:
    return labelled(b, sieve_graph_identity(b->graph, x), prefix, "skip");
  case NB201_OP_NOR_CONV_1X1:
    return relu_conv_bn(b, x, channels, 1, 1, 0, prefix);
  case NB201_OP_NOR_CONV_3X3:
    return relu_conv_bn(b, x, channels, 3, 1, 1, prefix);
  case NB201_OP_AVG_POOL_3X3:
    /* count_include_pad=False in the benchmark, which is the IR's only avg pool. */
    return labelled(b, sieve_graph_pool(b->graph, x, SIEVE_POOL_AVG, 3, 1, 1), prefix, "pool");
  default:
    g_return_val_if_reached(SIEVE_NODE_INVALID);
  }
}

/* One cell: node j = the sum over i < j of op(i, j) applied to node i; the
 * cell's output is node 3.  Node 1 has a single edge, which is node 1 itself
 * (a sum of one adds nothing). */
static guint
cell(Builder *b, const Nb201Op ops[NB201_EDGES], guint x, guint channels, const char *prefix)
{
  guint nodes[NB201_NODES] = {x};
  g_autoptr(GString) name = g_string_new(NULL);
  for (guint j = 1; j < NB201_NODES; j++) {
    guint terms[NB201_NODES - 1];
    for (guint i = 0; i < j; i++) {
      g_string_printf(name, "%s.edge_%u_%u", prefix, j, i);
      terms[i] = edge(b, ops[nb201_edge_index(j, i)], nodes[i], channels, name->str);
    }
    if (j == 1) {
      nodes[j] = terms[0];
    } else {
      g_string_printf(name, "node%u", j);
      nodes[j] = labelled(b, sieve_graph_sum(b->graph, terms, j), prefix, name->str);
    }
  }
  return nodes[NB201_NODES - 1];
}

/* The benchmark's `ResNetBasicblock` with stride 2: a = ReLU-conv3x3/2-BN,
 * b = ReLU-conv3x3-BN, shortcut = avg pool 2x2/2 then conv1x1; out = shortcut + b(a(x)). */
static guint
reduction(Builder *b, guint x, guint channels, const char *prefix)
{
  g_autofree char *pa = g_strdup_printf("%s.a", prefix);
  g_autofree char *pb = g_strdup_printf("%s.b", prefix);
  g_autofree char *ps = g_strdup_printf("%s.shortcut", prefix);
  guint y = relu_conv_bn(b, x, channels, 3, 2, 1, pa);
  y = relu_conv_bn(b, y, channels, 3, 1, 1, pb);
  guint s = labelled(b, sieve_graph_pool(b->graph, x, SIEVE_POOL_AVG, 2, 2, 0), ps, "pool");
  s = labelled(b, sieve_graph_conv2d(b->graph, s, channels, 1, 1, 0, FALSE), ps, "conv");
  return labelled(b, sieve_graph_sum(b->graph, (guint[]){s, y}, 2), prefix, "add");
}

SieveGraph *
nb201_network_build(const Nb201Skeleton *sk, const Nb201Op ops[NB201_EDGES], const char *name, GError **error)
{
  g_autoptr(SieveGraph) graph = sieve_graph_new(name);
  g_autoptr(GString) label = g_string_new(NULL);
  Builder b = {graph, label};
  g_autoptr(GString) prefix = g_string_new(NULL);

  guint x = labelled(&b, sieve_graph_input(graph, sk->in_channels, sk->size, sk->size), "stem", "input");
  x = labelled(&b, sieve_graph_conv2d(graph, x, sk->C, 3, 1, 1, FALSE), "stem", "conv");
  x = labelled(&b, sieve_graph_batch_norm(graph, x), "stem", "bn");
  guint channels = sk->C;
  for (guint stage = 1; stage <= 3; stage++) {
    if (stage > 1) {
      channels *= 2;
      g_string_printf(prefix, "reduce%u", stage - 1);
      x = reduction(&b, x, channels, prefix->str);
    }
    for (guint c = 1; c <= sk->N; c++) {
      g_string_printf(prefix, "stage%u.cell%u", stage, c);
      x = cell(&b, ops, x, channels, prefix->str);
    }
  }
  x = labelled(&b, sieve_graph_batch_norm(graph, x), "head", "bn");
  x = labelled(&b, sieve_graph_relu(graph, x), "head", "relu");
  x = labelled(&b, sieve_graph_global_avg_pool(graph, x), "head", "pool");
  x = labelled(&b, sieve_graph_linear(graph, x, sk->classes, TRUE), "head", "linear");
  if (!sieve_graph_finish(graph, x, error))
    return NULL;
  return g_steal_pointer(&graph);
}
