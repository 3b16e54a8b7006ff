/* The NAS-Bench-101 network (Ying et al., ICML 2019, section 2.1 and figure
 * 1; the authors' nasbench/lib/model_builder.py and base_ops.py):
 *
 *   stem: conv3x3(stem) + BN + ReLU
 *   stack 1: `cells` cells at stem channels
 *   max pool 2x2 stride 2, channels doubled; stack 2 ...
 *   head: global average pool, dense(classes) with bias
 *
 * A cell (model_builder.build_module): vertex t sums the vertices feeding
 * it (each truncated to t's channels) and a 1x1 conv-BN-ReLU projection of
 * the cell input when the input feeds it, then applies its operation
 * (conv3x3/conv1x1-BN-ReLU, or a 3x3 max pool of stride 1).  The output
 * concatenates the vertices feeding it, in vertex order, plus a projection
 * of the input when the input feeds the output; a cell of input and output
 * only is that projection.  Channels: nb101_cell_channels.
 *
 * Truncation (model_builder.truncate: the first c of a vertex's c+1
 * channels) has no operation in the IR, and needs none: where a cell
 * truncates, every vertex of c+1 channels is built as two pieces, its first
 * c channels and its last one.  A convolution of c+1 filters is then two
 * convolutions (c and 1 filters) of the same whole input, a batch norm and a
 * ReLU act channel by channel, a max pool too, and a projection is two
 * projections: the same function and the same parameters, and the truncated
 * value is the first piece itself.  Convolutions have no bias and batch
 * norms are affine (eps 1e-5), as in base_ops, so the parameter count is the
 * dataset's `trainable_parameters`. */
#include <sieve/graph.h>

#include "nb101-network.h"

typedef struct {
  SieveGraph *graph;
  double momentum;
} Builder;

/* A vertex's value in channel order: one node, or the c and 1 channel
 * pieces of a split vertex. */
typedef struct {
  guint n;
  guint node[2];
  guint width[2];
} Pieces;

/* Names node "prefix.what" (for dumps and errors) and passes it on. */
static guint
labelled(Builder *b, guint node, const char *prefix, const char *what)
{
  g_autofree char *label = g_strconcat(prefix, ".", what, NULL);
  if (node != SIEVE_NODE_INVALID)
    sieve_graph_set_label(b->graph, node, label);
  return node;
}

/* base_ops.conv_bn_relu: conv (no bias, "same" padding), BN, ReLU. */
static guint
conv_bn_relu(Builder *b, guint x, guint channels, guint kernel, const char *prefix)
{
  x = labelled(b, sieve_graph_conv2d(b->graph, x, channels, kernel, 1, kernel / 2, FALSE), prefix, "conv");
  /* TF's batch_normalization(momentum=0.997, epsilon=1e-5) in base_ops; the
   * momentum is the space's option, in PyTorch's convention. */
  SieveOpAttrs bn = {.affine = TRUE, .eps = 1e-5, .momentum = b->momentum};
  x = x == SIEVE_NODE_INVALID ? x : labelled(b, sieve_graph_add(b->graph, SIEVE_OP_BATCH_NORM, &x, 1, &bn), prefix, "bn");
  return labelled(b, sieve_graph_relu(b->graph, x), prefix, "relu");
}

/* conv_bn_relu of x into the pieces' widths. */
static Pieces
conv_pieces(Builder *b, guint x, const guint *widths, guint n, guint kernel, const char *prefix)
{
  Pieces p = {.n = n};
  for (guint k = 0; k < n; k++) {
    g_autofree char *part = n == 1 ? g_strdup(prefix) : g_strdup_printf("%s.part%u", prefix, k);
    p.node[k] = conv_bn_relu(b, x, widths[k], kernel, part);
    p.width[k] = widths[k];
  }
  return p;
}

static guint
whole(Builder *b, const Pieces *p, const char *prefix)
{
  if (p->n == 1)
    return p->node[0];
  return labelled(b, sieve_graph_concat(b->graph, p->node, p->n), prefix, "whole");
}

/* model_builder.build_module for one cell from in_channels to out_channels. */
static guint
module(Builder *b, const Nb101Cell *c, guint x, guint in_channels, guint out_channels, const char *prefix,
       GError **error)
{
  guint n = c->n, ch[NB101_MAX_VERTICES];
  if (!nb101_cell_channels(c, in_channels, out_channels, ch, error))
    return SIEVE_NODE_INVALID;
  g_autoptr(GString) name = g_string_new(NULL);
  if (n == 2) {
    g_string_printf(name, "%s.projection", prefix);
    return conv_bn_relu(b, x, out_channels, 1, name->str);
  }
  guint fan_in = 0;
  for (guint v = 1; v < n - 1; v++)
    fan_in += nb101_cell_has_edge(c, v, n - 1);
  guint base = out_channels / fan_in;
  gboolean split = FALSE;
  for (guint i = 1; i < n - 1; i++)
    for (guint j = i + 1; j < n - 1; j++)
      if (nb101_cell_has_edge(c, i, j) && ch[i] > ch[j])
        split = TRUE;

  Pieces value[NB101_MAX_VERTICES];
  guint concat[2 * NB101_MAX_VERTICES], n_concat = 0;
  for (guint t = 1; t < n - 1; t++) {
    guint widths[2] = {ch[t], 0}, nw = 1;
    if (split && ch[t] == base + 1) {
      widths[0] = base;
      widths[1] = 1;
      nw = 2;
    }
    Pieces terms[NB101_MAX_VERTICES];
    guint nt = 0;
    for (guint src = 1; src < t; src++) {
      if (!nb101_cell_has_edge(c, src, t))
        continue;
      if (ch[src] == ch[t]) {
        terms[nt++] = value[src];
      } else {
        /* Truncation: channels never grow along an edge, and differ by one. */
        g_assert(ch[src] == ch[t] + 1 && value[src].n == 2 && value[src].width[0] == ch[t]);
        terms[nt++] = (Pieces){.n = 1, .node = {value[src].node[0]}, .width = {ch[t]}};
      }
    }
    if (nb101_cell_has_edge(c, 0, t)) {
      g_string_printf(name, "%s.v%u.projection", prefix, t);
      terms[nt++] = conv_pieces(b, x, widths, nw, 1, name->str);
    }
    g_assert(nt > 0);
    Pieces in = {.n = nw};
    for (guint k = 0; k < nw; k++) {
      guint parts[NB101_MAX_VERTICES];
      for (guint i = 0; i < nt; i++) {
        g_assert(terms[i].n == nw && terms[i].width[k] == widths[k]);
        parts[i] = terms[i].node[k];
      }
      g_string_printf(name, "%s.v%u", prefix, t);
      in.node[k] = nt == 1 ? parts[0] : labelled(b, sieve_graph_sum(b->graph, parts, nt), name->str,
                                                 nw == 1 ? "add" : k == 0 ? "add.part0" : "add.part1");
      in.width[k] = widths[k];
    }
    g_string_printf(name, "%s.v%u", prefix, t);
    switch ((Nb101Op) c->op[t]) {
    case NB101_OP_CONV3X3:
    case NB101_OP_CONV1X1: {
      guint full = whole(b, &in, name->str);
      value[t] = conv_pieces(b, full, widths, nw, c->op[t] == NB101_OP_CONV3X3 ? 3 : 1, name->str);
      break;
    }
    case NB101_OP_MAXPOOL3X3:
      /* base_ops.MaxPool3x3: 3x3, stride 1, "same" padding, channels kept. */
      value[t] = in;
      for (guint k = 0; k < nw; k++)
        value[t].node[k] = labelled(b, sieve_graph_pool(b->graph, in.node[k], SIEVE_POOL_MAX, 3, 1, 1), name->str,
                                    nw == 1 ? "maxpool" : k == 0 ? "maxpool.part0" : "maxpool.part1");
      break;
    default:
      g_return_val_if_reached(SIEVE_NODE_INVALID);
    }
    if (nb101_cell_has_edge(c, t, n - 1))
      for (guint k = 0; k < value[t].n; k++)
        concat[n_concat++] = value[t].node[k];
  }
  guint out = n_concat == 1 ? concat[0] : labelled(b, sieve_graph_concat(b->graph, concat, n_concat), prefix, "concat");
  if (nb101_cell_has_edge(c, 0, n - 1)) {
    g_string_printf(name, "%s.output.projection", prefix);
    guint p = conv_bn_relu(b, x, out_channels, 1, name->str);
    out = labelled(b, sieve_graph_sum(b->graph, (guint[]){out, p}, 2), prefix, "output.add");
  }
  return out;
}

SieveGraph *
nb101_network_build(const Nb101Skeleton *sk, const Nb101Cell *cell, const char *name, GError **error)
{
  g_autoptr(SieveGraph) graph = sieve_graph_new(name);
  Builder b = {graph, sk->bn_momentum};
  g_autoptr(GString) prefix = g_string_new(NULL);

  guint x = labelled(&b, sieve_graph_input(graph, sk->in_channels, sk->size, sk->size), "stem", "input");
  x = conv_bn_relu(&b, x, sk->stem, 3, "stem");
  guint channels = sk->stem, in_channels = sk->stem;
  for (guint s = 1; s <= sk->stacks; s++) {
    if (s > 1) {
      g_string_printf(prefix, "stack%u", s);
      x = labelled(&b, sieve_graph_pool(graph, x, SIEVE_POOL_MAX, 2, 2, 0), prefix->str, "downsample");
      channels *= 2;
    }
    for (guint m = 1; m <= sk->cells; m++) {
      g_string_printf(prefix, "stack%u.cell%u", s, m);
      GError *local = NULL;
      x = module(&b, cell, x, in_channels, channels, prefix->str, &local);
      if (local != NULL) {
        g_propagate_error(error, local);
        return NULL;
      }
      in_channels = channels;
    }
  }
  x = labelled(&b, sieve_graph_global_avg_pool(graph, x), "head", "pool");
  x = labelled(&b, sieve_graph_linear(graph, x, sk->classes, TRUE), "head", "dense");
  if (!sieve_graph_finish(graph, x, error))
    return NULL;
  return g_steal_pointer(&graph);
}
