/* sieve: the network IR, a DAG of typed operations with inferred shapes.
 *
 *   g_autoptr(SieveGraph) g = sieve_graph_new("tiny");
 *   guint x = sieve_graph_input(g, 1, 28, 28);
 *   guint h = sieve_graph_conv2d(g, x, 8, 3, 1, 1, FALSE);
 *   h = sieve_graph_batch_norm(g, h);
 *   h = sieve_graph_relu(g, h);
 *   h = sieve_graph_global_avg_pool(g, h);
 *   h = sieve_graph_linear(g, h, 10, TRUE);
 *   if (!sieve_graph_finish(g, h, error)) ...   // the first builder error, with its node
 *
 * Builders never fail loudly: a bad call records the graph's first error,
 * returns SIEVE_NODE_INVALID, and every later call that gets an invalid input
 * returns it too, so a space can build a whole network and check once at the
 * end (sieve_graph_finish).  Shapes are per example (channels, height, width);
 * the batch size belongs to the runtime that compiles the graph.  Nothing in
 * here knows about oneDNN or CUDA: backends read the nodes and their attributes.
 *
 * Parameter tensors, in the order sieve_graph_node_params() counts them:
 *   conv2d  weight [out, in/groups, kh, kw], then bias [out] when it has one
 *   batch_norm (affine)  gamma [c], beta [c]   (running mean/var are state, not parameters)
 *   linear  weight [out, c*h*w of its input], then bias [out]
 */
#pragma once

#include <glib.h>
#include <sieve/abi.h>

G_BEGIN_DECLS

#define SIEVE_NODE_INVALID G_MAXUINT

typedef enum {
  SIEVE_OP_INPUT,
  SIEVE_OP_CONV2D,
  SIEVE_OP_BATCH_NORM,
  SIEVE_OP_ACTIVATION,
  SIEVE_OP_POOL,
  SIEVE_OP_ADD,
  SIEVE_OP_CONCAT,
  SIEVE_OP_GLOBAL_AVG_POOL,
  SIEVE_OP_LINEAR,
  SIEVE_OP_IDENTITY,
  SIEVE_OP_ZERO,
  SIEVE_OP_SOFTMAX_CE, /* mean softmax cross-entropy over the batch; shape 1x1x1 */
  /* x * gate, element-wise, 2 inputs: x [C,H,W] and a gate of the same
   * channels that is either [C,H,W] or [C,1,1]; a [C,1,1] gate broadcasts
   * over the height and width (squeeze-and-excitation's channel scaling,
   * Hu et al. 2018).  The output has x's shape; the operands are not
   * interchangeable (the gate is input 1). */
  SIEVE_OP_MUL,
  SIEVE_OP_CROP,       /* a window of the input: y = x[:, top:top+h, left:left+w] (see SieveOpAttrs) */
  SIEVE_N_OPS
} SieveOpKind;

/* Element-wise activations.  Adding one: a row in graph.c's table, its
 * formula in the reference interpreter, its algorithm in each backend. */
typedef enum {
  SIEVE_ACT_RELU,
  SIEVE_ACT_LEAKY_RELU, /* alpha = negative slope */
  SIEVE_ACT_ELU,        /* alpha */
  SIEVE_ACT_TANH,
  SIEVE_ACT_SIGMOID,
  SIEVE_ACT_GELU,       /* exact (erf) form, as PyTorch's default */
  SIEVE_ACT_SWISH,      /* x * sigmoid(x) */
  /* MobileNetV3's piecewise-linear forms (Howard et al. 2019), as PyTorch
   * defines them: hard_sigmoid(x) = relu6(x + 3) / 6 and hard_swish(x) =
   * x relu6(x + 3) / 6, relu6(y) = min(max(y, 0), 6).  The derivative at
   * the kinks x = -3 and 3 themselves (a set of measure zero) is whichever
   * side the backend takes. */
  SIEVE_ACT_HARD_SIGMOID,
  SIEVE_ACT_HARD_SWISH,
  SIEVE_N_ACTIVATIONS
} SieveActivation;

typedef enum { SIEVE_POOL_AVG, SIEVE_POOL_MAX } SievePoolKind;

typedef struct {
  guint c, h, w;
} SieveShape;
SIEVE_ABI_SIZE(SieveShape, 12);

/* Attributes of a node; the fields an operation does not use stay zero, so
 * that equal operations have byte-for-byte equal attributes. */
typedef struct {
  guint out_channels;  /* conv2d, linear */
  guint kernel[2];     /* conv2d, pool: height, width; crop: the window's height, width */
  guint stride[2];     /* conv2d, pool */
  guint pad[2];        /* conv2d, pool: both sides; crop: the window's top, left offset */
  guint dilation[2];   /* conv2d: 1 = dense */
  guint groups;        /* conv2d */
  gboolean bias;       /* conv2d, linear */
  gboolean affine;     /* batch_norm */
  double eps;          /* batch_norm */
  double momentum;     /* batch_norm: running = (1-m) running + m batch (PyTorch's convention) */
  SieveActivation activation;
  double alpha;        /* activation parameter */
  SievePoolKind pool;  /* avg pooling never counts padding (count_include_pad off) */
  double label_smoothing; /* softmax_ce */
} SieveOpAttrs;
SIEVE_ABI_SIZE(SieveOpAttrs, 96);

typedef struct {
  SieveOpKind kind;
  guint n_inputs;
  const guint *inputs;
  SieveShape shape;    /* inferred output shape per example */
  SieveOpAttrs attrs;
  const char *label;   /* optional, for dumps and errors; NULL when none */
} SieveGraphNode;
SIEVE_ABI_SIZE(SieveGraphNode, 136);

typedef struct _SieveGraph SieveGraph;

/* (transfer full) name: for messages; may be NULL. */
SIEVE_API SieveGraph *sieve_graph_new(const char *name);
SIEVE_API void sieve_graph_free(SieveGraph *graph);
/* (transfer full) an independent copy, output and error state included. */
SIEVE_API SieveGraph *sieve_graph_copy(const SieveGraph *graph);

/* The general builder: checks the inputs' shapes against the operation and
 * infers the output shape.  Returns the node's index, or SIEVE_NODE_INVALID
 * (and records the graph's first error). */
SIEVE_API guint sieve_graph_add(SieveGraph *graph, SieveOpKind kind, const guint *inputs, guint n_inputs,
                                const SieveOpAttrs *attrs);
/* Convenience builders over sieve_graph_add. */
SIEVE_API guint sieve_graph_input(SieveGraph *graph, guint c, guint h, guint w);
SIEVE_API guint sieve_graph_conv2d(SieveGraph *graph, guint x, guint out_channels, guint kernel, guint stride,
                                   guint pad, gboolean bias);
SIEVE_API guint sieve_graph_batch_norm(SieveGraph *graph, guint x);
SIEVE_API guint sieve_graph_activation(SieveGraph *graph, guint x, SieveActivation activation, double alpha);
SIEVE_API guint sieve_graph_relu(SieveGraph *graph, guint x);
SIEVE_API guint sieve_graph_pool(SieveGraph *graph, guint x, SievePoolKind pool, guint kernel, guint stride,
                                 guint pad);
SIEVE_API guint sieve_graph_sum(SieveGraph *graph, const guint *xs, guint n);
SIEVE_API guint sieve_graph_concat(SieveGraph *graph, const guint *xs, guint n);
SIEVE_API guint sieve_graph_global_avg_pool(SieveGraph *graph, guint x);
SIEVE_API guint sieve_graph_linear(SieveGraph *graph, guint x, guint out_features, gboolean bias);
SIEVE_API guint sieve_graph_identity(SieveGraph *graph, guint x);
SIEVE_API guint sieve_graph_zero(SieveGraph *graph, guint x);
SIEVE_API guint sieve_graph_softmax_ce(SieveGraph *graph, guint logits, double label_smoothing);
/* x * gate (SIEVE_OP_MUL): gate [C,1,1] scales each channel of x [C,H,W]. */
SIEVE_API guint sieve_graph_mul(SieveGraph *graph, guint x, guint gate);
/* The height x width window of x whose top-left element is (top, left):
 * x[:, top:top+height, left:left+width] (ONNX Slice on the spatial axes).
 * The attributes reuse kernel (the window) and pad (its offset), since
 * SieveOpAttrs's size is part of the ABI.  DARTS's factorized reduction
 * reads x[:, 1:, 1:] this way. */
SIEVE_API guint sieve_graph_crop(SieveGraph *graph, guint x, guint top, guint left, guint height, guint width);
/* Give the last added node a label (copied), e.g. "cell2.edge1.conv". */
SIEVE_API void sieve_graph_set_label(SieveGraph *graph, guint node, const char *label);

/* Marks output as the graph's output and reports the first builder error,
 * if any ("graph NAME: node 12 (conv2d): ..."). */
SIEVE_API gboolean sieve_graph_finish(SieveGraph *graph, guint output, GError **error);
/* Appends a softmax_ce loss on the current output and makes it the output
 * (what a trainer does to a network that ends in logits). */
SIEVE_API gboolean sieve_graph_add_loss(SieveGraph *graph, double label_smoothing, GError **error);

SIEVE_API guint sieve_graph_n_nodes(const SieveGraph *graph);
/* (transfer none) valid until the graph changes. */
SIEVE_API const SieveGraphNode *sieve_graph_node(const SieveGraph *graph, guint i);
SIEVE_API guint sieve_graph_output(const SieveGraph *graph);
SIEVE_API guint sieve_graph_input_node(const SieveGraph *graph);
SIEVE_API const char *sieve_graph_name(const SieveGraph *graph);
/* Whether node i can reach the output (nodes that cannot are never run). */
SIEVE_API gboolean sieve_graph_node_live(const SieveGraph *graph, guint i);

/* Parameters of one node (see the header comment) and of every live node. */
SIEVE_API guint64 sieve_graph_node_params(const SieveGraph *graph, guint i);
SIEVE_API guint64 sieve_graph_params(const SieveGraph *graph);
/* Multiply-accumulates per example of the conv2d and linear nodes that are
 * live: the "FLOPs" of the NAS literature. */
SIEVE_API guint64 sieve_graph_macs(const SieveGraph *graph);

/* (transfer full) one line per node: "%5 = conv2d(%4) out=16 k=3x3 s=1 p=1 -> 16x28x28 params=2304". */
SIEVE_API char *sieve_graph_dump(const SieveGraph *graph);

SIEVE_API const char *sieve_op_kind_name(SieveOpKind kind);
SIEVE_API const char *sieve_activation_name(SieveActivation activation);
/* SIEVE_N_ACTIVATIONS when the name is unknown. */
SIEVE_API SieveActivation sieve_activation_from_name(const char *name);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveGraph, sieve_graph_free)

G_END_DECLS
