/* The network IR: builders with shape inference, liveness, parameter and
 * multiply-accumulate counts, and the text dump. */
#include <math.h>
#include <string.h>

#include <sieve/graph.h>

typedef struct {
  SieveGraphNode node;
  guint inputs[]; /* node.inputs points here */
} NodeBox;

struct _SieveGraph {
  char *name;
  GPtrArray *nodes; /* NodeBox*, owned */
  GPtrArray *labels; /* char* or NULL per node, owned */
  guint input;
  guint output;
  GError *error; /* the first builder error */
};

static const char *const op_names[SIEVE_N_OPS] = {
  "input", "conv2d", "batch_norm", "activation", "pool", "add", "concat",
  "global_avg_pool", "linear", "identity", "zero", "softmax_ce", "mul", "crop",
};

static const char *const activation_names[SIEVE_N_ACTIVATIONS] = {
  "relu", "leaky_relu", "elu", "tanh", "sigmoid", "gelu", "swish", "hard_sigmoid", "hard_swish",
};

const char *
sieve_op_kind_name(SieveOpKind kind)
{
  return (guint)kind < SIEVE_N_OPS ? op_names[kind] : "?";
}

const char *
sieve_activation_name(SieveActivation activation)
{
  return (guint)activation < SIEVE_N_ACTIVATIONS ? activation_names[activation] : "?";
}

SieveActivation
sieve_activation_from_name(const char *name)
{
  for (guint i = 0; i < SIEVE_N_ACTIVATIONS; i++)
    if (g_strcmp0(name, activation_names[i]) == 0)
      return i;
  return SIEVE_N_ACTIVATIONS;
}

SieveGraph *
sieve_graph_new(const char *name)
{
  SieveGraph *g = g_new0(SieveGraph, 1);
  g->name = g_strdup(name ? name : "graph");
  g->nodes = g_ptr_array_new_with_free_func(g_free);
  g->labels = g_ptr_array_new_with_free_func(g_free);
  g->input = SIEVE_NODE_INVALID;
  g->output = SIEVE_NODE_INVALID;
  return g;
}

void
sieve_graph_free(SieveGraph *g)
{
  if (!g)
    return;
  g_ptr_array_unref(g->nodes);
  g_ptr_array_unref(g->labels);
  g_clear_error(&g->error);
  g_free(g->name);
  g_free(g);
}

static NodeBox *
box_new(const SieveGraphNode *node, const guint *inputs)
{
  NodeBox *b = g_malloc(sizeof *b + node->n_inputs * sizeof(guint));
  b->node = *node;
  if (node->n_inputs) /* an input node has none, and inputs may be NULL: memcpy(NULL) is undefined */
    memcpy(b->inputs, inputs, node->n_inputs * sizeof(guint));
  b->node.inputs = b->inputs;
  b->node.label = NULL;
  return b;
}

SieveGraph *
sieve_graph_copy(const SieveGraph *src)
{
  SieveGraph *g = sieve_graph_new(src->name);
  for (guint i = 0; i < src->nodes->len; i++) {
    const NodeBox *b = src->nodes->pdata[i];
    NodeBox *copy = box_new(&b->node, b->inputs);
    char *label = g_strdup(src->labels->pdata[i]);
    copy->node.label = label;
    g_ptr_array_add(g->nodes, copy);
    g_ptr_array_add(g->labels, label);
  }
  g->input = src->input;
  g->output = src->output;
  g->error = src->error ? g_error_copy(src->error) : NULL;
  return g;
}

guint
sieve_graph_n_nodes(const SieveGraph *g)
{
  return g->nodes->len;
}

const SieveGraphNode *
sieve_graph_node(const SieveGraph *g, guint i)
{
  g_return_val_if_fail(i < g->nodes->len, NULL);
  return &((NodeBox *)g->nodes->pdata[i])->node;
}

guint
sieve_graph_output(const SieveGraph *g)
{
  return g->output;
}

guint
sieve_graph_input_node(const SieveGraph *g)
{
  return g->input;
}

const char *
sieve_graph_name(const SieveGraph *g)
{
  return g->name;
}

G_GNUC_PRINTF(3, 4)
static guint
fail(SieveGraph *g, SieveOpKind kind, const char *fmt, ...)
{
  if (g->error)
    return SIEVE_NODE_INVALID;
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g->error = g_error_new(SIEVE_ERROR, SIEVE_ERROR_GRAPH, "graph %s: node %u (%s): %s", g->name, g->nodes->len,
                         sieve_op_kind_name(kind), msg);
  return SIEVE_NODE_INVALID;
}

static gboolean
same_shape(SieveShape a, SieveShape b)
{
  return a.c == b.c && a.h == b.h && a.w == b.w;
}

/* Output extent of a convolution or pooling window; 0 when it does not fit. */
static guint
window_out(guint in, guint kernel, guint stride, guint pad, guint dilation)
{
  gint64 span = (gint64)dilation * (kernel - 1) + 1;
  gint64 room = (gint64)in + 2 * pad - span;
  return room < 0 ? 0 : (guint)(room / stride + 1);
}

/* Shape inference and attribute checks; the message says what was expected. */
static gboolean
infer(SieveGraph *g, SieveOpKind kind, const SieveShape *in, guint n, SieveOpAttrs *a, SieveShape *out)
{
  switch (kind) {
  case SIEVE_OP_INPUT:
    if (g->input != SIEVE_NODE_INVALID)
      return fail(g, kind, "a graph has one input, node %u already is", g->input), FALSE;
    if (a->out_channels == 0 || a->kernel[0] == 0 || a->kernel[1] == 0)
      return fail(g, kind, "input shape %ux%ux%u has a zero extent", a->out_channels, a->kernel[0], a->kernel[1]),
             FALSE;
    *out = (SieveShape){a->out_channels, a->kernel[0], a->kernel[1]};
    /* The shape lives in the node; the attributes stay zero. */
    *a = (SieveOpAttrs){0};
    return TRUE;
  case SIEVE_OP_CONV2D: {
    if (a->groups == 0)
      a->groups = 1;
    for (int d = 0; d < 2; d++) {
      if (a->dilation[d] == 0)
        a->dilation[d] = 1;
      if (a->stride[d] == 0 || a->kernel[d] == 0)
        return fail(g, kind, "kernel and stride must be at least 1"), FALSE;
    }
    if (a->out_channels == 0 || in[0].c % a->groups || a->out_channels % a->groups)
      return fail(g, kind, "groups %u must divide input channels %u and output channels %u (>= 1)", a->groups,
                  in[0].c, a->out_channels),
             FALSE;
    guint oh = window_out(in[0].h, a->kernel[0], a->stride[0], a->pad[0], a->dilation[0]);
    guint ow = window_out(in[0].w, a->kernel[1], a->stride[1], a->pad[1], a->dilation[1]);
    if (!oh || !ow)
      return fail(g, kind, "kernel %ux%u does not fit input %ux%u with padding %u,%u", a->kernel[0], a->kernel[1],
                  in[0].h, in[0].w, a->pad[0], a->pad[1]),
             FALSE;
    *out = (SieveShape){a->out_channels, oh, ow};
    return TRUE;
  }
  case SIEVE_OP_POOL: {
    for (int d = 0; d < 2; d++) {
      if (a->stride[d] == 0 || a->kernel[d] == 0)
        return fail(g, kind, "kernel and stride must be at least 1"), FALSE;
      /* Keeps every window overlapping the real input, which avg pooling
       * without padding counts needs (PyTorch's rule too). */
      if (a->pad[d] * 2 > a->kernel[d])
        return fail(g, kind, "padding %u must be at most half the kernel %u", a->pad[d], a->kernel[d]), FALSE;
    }
    if (a->pool != SIEVE_POOL_AVG && a->pool != SIEVE_POOL_MAX)
      return fail(g, kind, "unknown pooling kind %d", a->pool), FALSE;
    guint oh = window_out(in[0].h, a->kernel[0], a->stride[0], a->pad[0], 1);
    guint ow = window_out(in[0].w, a->kernel[1], a->stride[1], a->pad[1], 1);
    if (!oh || !ow)
      return fail(g, kind, "window %ux%u does not fit input %ux%u", a->kernel[0], a->kernel[1], in[0].h, in[0].w),
             FALSE;
    *out = (SieveShape){in[0].c, oh, ow};
    return TRUE;
  }
  case SIEVE_OP_BATCH_NORM:
    if (a->eps <= 0)
      return fail(g, kind, "eps must be positive"), FALSE;
    if (a->momentum < 0 || a->momentum > 1)
      return fail(g, kind, "momentum must be in [0, 1]"), FALSE;
    *out = in[0];
    return TRUE;
  case SIEVE_OP_ACTIVATION:
    if ((guint)a->activation >= SIEVE_N_ACTIVATIONS)
      return fail(g, kind, "unknown activation %d", a->activation), FALSE;
    *out = in[0];
    return TRUE;
  case SIEVE_OP_IDENTITY:
  case SIEVE_OP_ZERO:
    *out = in[0];
    return TRUE;
  case SIEVE_OP_ADD:
    for (guint i = 1; i < n; i++)
      if (!same_shape(in[i], in[0]))
        return fail(g, kind, "input %u has shape %ux%ux%u, input 0 has %ux%ux%u", i, in[i].c, in[i].h, in[i].w,
                    in[0].c, in[0].h, in[0].w),
               FALSE;
    *out = in[0];
    return TRUE;
  case SIEVE_OP_CONCAT: {
    guint c = 0;
    for (guint i = 0; i < n; i++) {
      if (in[i].h != in[0].h || in[i].w != in[0].w)
        return fail(g, kind, "input %u is %ux%u, input 0 is %ux%u: concat joins channels of equal extents", i,
                    in[i].h, in[i].w, in[0].h, in[0].w),
               FALSE;
      c += in[i].c;
    }
    *out = (SieveShape){c, in[0].h, in[0].w};
    return TRUE;
  }
  case SIEVE_OP_GLOBAL_AVG_POOL:
    *out = (SieveShape){in[0].c, 1, 1};
    return TRUE;
  case SIEVE_OP_LINEAR:
    if (a->out_channels == 0)
      return fail(g, kind, "needs at least one output feature"), FALSE;
    *out = (SieveShape){a->out_channels, 1, 1};
    return TRUE;
  case SIEVE_OP_MUL:
    if (in[1].c != in[0].c || !((in[1].h == in[0].h && in[1].w == in[0].w) || (in[1].h == 1 && in[1].w == 1)))
      return fail(g, kind, "gate has shape %ux%ux%u, expected %ux%ux%u or %ux1x1 for x of shape %ux%ux%u", in[1].c,
                  in[1].h, in[1].w, in[0].c, in[0].h, in[0].w, in[0].c, in[0].c, in[0].h, in[0].w),
             FALSE;
    *out = in[0];
    return TRUE;
  case SIEVE_OP_SOFTMAX_CE:
    if (in[0].h != 1 || in[0].w != 1 || in[0].c < 2)
      return fail(g, kind, "needs logits of shape Kx1x1 with K >= 2, got %ux%ux%u", in[0].c, in[0].h, in[0].w),
             FALSE;
    if (a->label_smoothing < 0 || a->label_smoothing >= 1)
      return fail(g, kind, "label smoothing must be in [0, 1)"), FALSE;
    *out = (SieveShape){1, 1, 1};
    return TRUE;
  case SIEVE_OP_CROP:
    if (a->kernel[0] == 0 || a->kernel[1] == 0)
      return fail(g, kind, "window %ux%u has a zero extent", a->kernel[0], a->kernel[1]), FALSE;
    if ((guint64)a->pad[0] + a->kernel[0] > in[0].h || (guint64)a->pad[1] + a->kernel[1] > in[0].w)
      return fail(g, kind, "window %ux%u at offset %u,%u does not fit input %ux%u", a->kernel[0], a->kernel[1],
                  a->pad[0], a->pad[1], in[0].h, in[0].w),
             FALSE;
    *out = (SieveShape){in[0].c, a->kernel[0], a->kernel[1]};
    return TRUE;
  default:
    return fail(g, kind, "unknown operation"), FALSE;
  }
}

static guint
arity_min(SieveOpKind kind)
{
  return kind == SIEVE_OP_INPUT ? 0 : kind == SIEVE_OP_MUL ? 2 : 1;
}

static gboolean
arity_variadic(SieveOpKind kind)
{
  return kind == SIEVE_OP_ADD || kind == SIEVE_OP_CONCAT;
}

guint
sieve_graph_add(SieveGraph *g, SieveOpKind kind, const guint *inputs, guint n, const SieveOpAttrs *attrs)
{
  g_return_val_if_fail(g != NULL, SIEVE_NODE_INVALID);
  if (g->error)
    return SIEVE_NODE_INVALID;
  if ((guint)kind >= SIEVE_N_OPS)
    return fail(g, kind, "unknown operation %d", kind);
  if (n < arity_min(kind) || (!arity_variadic(kind) && n != arity_min(kind)))
    return fail(g, kind, "takes %s%u input%s, got %u", arity_variadic(kind) ? "at least " : "", arity_min(kind),
                arity_min(kind) == 1 ? "" : "s", n);
  g_autofree SieveShape *in = g_new0(SieveShape, n + 1);
  for (guint i = 0; i < n; i++) {
    if (inputs[i] >= g->nodes->len)
      return fail(g, kind, "input %u refers to node %u, which does not exist", i, inputs[i]);
    const SieveGraphNode *src = sieve_graph_node(g, inputs[i]);
    if (src->kind == SIEVE_OP_SOFTMAX_CE)
      return fail(g, kind, "input %u is a loss, which nothing may consume", i);
    in[i] = src->shape;
  }
  SieveGraphNode node = {.kind = kind, .n_inputs = n};
  node.attrs = attrs ? *attrs : (SieveOpAttrs){0};
  if (!infer(g, kind, in, n, &node.attrs, &node.shape))
    return SIEVE_NODE_INVALID;
  g_ptr_array_add(g->nodes, box_new(&node, inputs));
  g_ptr_array_add(g->labels, NULL);
  if (kind == SIEVE_OP_INPUT)
    g->input = g->nodes->len - 1;
  return g->nodes->len - 1;
}

guint
sieve_graph_input(SieveGraph *g, guint c, guint h, guint w)
{
  SieveOpAttrs a = {.out_channels = c, .kernel = {h, w}};
  return sieve_graph_add(g, SIEVE_OP_INPUT, NULL, 0, &a);
}

guint
sieve_graph_conv2d(SieveGraph *g, guint x, guint out_channels, guint kernel, guint stride, guint pad, gboolean bias)
{
  SieveOpAttrs a = {.out_channels = out_channels,
                    .kernel = {kernel, kernel},
                    .stride = {stride, stride},
                    .pad = {pad, pad},
                    .dilation = {1, 1},
                    .groups = 1,
                    .bias = bias};
  return x == SIEVE_NODE_INVALID ? SIEVE_NODE_INVALID : sieve_graph_add(g, SIEVE_OP_CONV2D, &x, 1, &a);
}

guint
sieve_graph_batch_norm(SieveGraph *g, guint x)
{
  /* PyTorch's BatchNorm2d defaults, which NAS-Bench-201 used. */
  SieveOpAttrs a = {.affine = TRUE, .eps = 1e-5, .momentum = 0.1};
  return x == SIEVE_NODE_INVALID ? SIEVE_NODE_INVALID : sieve_graph_add(g, SIEVE_OP_BATCH_NORM, &x, 1, &a);
}

guint
sieve_graph_activation(SieveGraph *g, guint x, SieveActivation activation, double alpha)
{
  SieveOpAttrs a = {.activation = activation, .alpha = alpha};
  return x == SIEVE_NODE_INVALID ? SIEVE_NODE_INVALID : sieve_graph_add(g, SIEVE_OP_ACTIVATION, &x, 1, &a);
}

guint
sieve_graph_relu(SieveGraph *g, guint x)
{
  return sieve_graph_activation(g, x, SIEVE_ACT_RELU, 0);
}

guint
sieve_graph_pool(SieveGraph *g, guint x, SievePoolKind pool, guint kernel, guint stride, guint pad)
{
  SieveOpAttrs a = {.pool = pool, .kernel = {kernel, kernel}, .stride = {stride, stride}, .pad = {pad, pad}};
  return x == SIEVE_NODE_INVALID ? SIEVE_NODE_INVALID : sieve_graph_add(g, SIEVE_OP_POOL, &x, 1, &a);
}

static gboolean
any_invalid(const guint *xs, guint n)
{
  for (guint i = 0; i < n; i++)
    if (xs[i] == SIEVE_NODE_INVALID)
      return TRUE;
  return FALSE;
}

guint
sieve_graph_sum(SieveGraph *g, const guint *xs, guint n)
{
  return any_invalid(xs, n) ? SIEVE_NODE_INVALID : sieve_graph_add(g, SIEVE_OP_ADD, xs, n, NULL);
}

guint
sieve_graph_concat(SieveGraph *g, const guint *xs, guint n)
{
  return any_invalid(xs, n) ? SIEVE_NODE_INVALID : sieve_graph_add(g, SIEVE_OP_CONCAT, xs, n, NULL);
}

guint
sieve_graph_global_avg_pool(SieveGraph *g, guint x)
{
  return x == SIEVE_NODE_INVALID ? SIEVE_NODE_INVALID : sieve_graph_add(g, SIEVE_OP_GLOBAL_AVG_POOL, &x, 1, NULL);
}

guint
sieve_graph_linear(SieveGraph *g, guint x, guint out_features, gboolean bias)
{
  SieveOpAttrs a = {.out_channels = out_features, .bias = bias};
  return x == SIEVE_NODE_INVALID ? SIEVE_NODE_INVALID : sieve_graph_add(g, SIEVE_OP_LINEAR, &x, 1, &a);
}

guint
sieve_graph_identity(SieveGraph *g, guint x)
{
  return x == SIEVE_NODE_INVALID ? SIEVE_NODE_INVALID : sieve_graph_add(g, SIEVE_OP_IDENTITY, &x, 1, NULL);
}

guint
sieve_graph_zero(SieveGraph *g, guint x)
{
  return x == SIEVE_NODE_INVALID ? SIEVE_NODE_INVALID : sieve_graph_add(g, SIEVE_OP_ZERO, &x, 1, NULL);
}

guint
sieve_graph_softmax_ce(SieveGraph *g, guint logits, double label_smoothing)
{
  SieveOpAttrs a = {.label_smoothing = label_smoothing};
  return logits == SIEVE_NODE_INVALID ? SIEVE_NODE_INVALID
                                      : sieve_graph_add(g, SIEVE_OP_SOFTMAX_CE, &logits, 1, &a);
}

guint
sieve_graph_mul(SieveGraph *g, guint x, guint gate)
{
  guint xs[] = {x, gate};
  return any_invalid(xs, 2) ? SIEVE_NODE_INVALID : sieve_graph_add(g, SIEVE_OP_MUL, xs, 2, NULL);
}

guint
sieve_graph_crop(SieveGraph *g, guint x, guint top, guint left, guint height, guint width)
{
  SieveOpAttrs a = {.kernel = {height, width}, .pad = {top, left}};
  return x == SIEVE_NODE_INVALID ? SIEVE_NODE_INVALID : sieve_graph_add(g, SIEVE_OP_CROP, &x, 1, &a);
}

void
sieve_graph_set_label(SieveGraph *g, guint node, const char *label)
{
  if (node >= g->nodes->len)
    return;
  char *copy = g_strdup(label);
  g_free(g->labels->pdata[node]);
  g->labels->pdata[node] = copy;
  ((NodeBox *)g->nodes->pdata[node])->node.label = copy;
}

gboolean
sieve_graph_finish(SieveGraph *g, guint output, GError **error)
{
  if (g->error) {
    g_propagate_error(error, g_error_copy(g->error));
    return FALSE;
  }
  if (output >= g->nodes->len) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH, "graph %s: output node %u does not exist", g->name, output);
    return FALSE;
  }
  if (g->input == SIEVE_NODE_INVALID) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH, "graph %s: has no input node", g->name);
    return FALSE;
  }
  g->output = output;
  return TRUE;
}

gboolean
sieve_graph_add_loss(SieveGraph *g, double label_smoothing, GError **error)
{
  if (g->output == SIEVE_NODE_INVALID) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH, "graph %s: has no output to put a loss on", g->name);
    return FALSE;
  }
  guint loss = sieve_graph_softmax_ce(g, g->output, label_smoothing);
  return sieve_graph_finish(g, loss, error);
}

gboolean
sieve_graph_node_live(const SieveGraph *g, guint i)
{
  if (g->output == SIEVE_NODE_INVALID || i > g->output)
    return FALSE;
  /* Nodes only consume earlier nodes, so one backward sweep suffices. */
  g_autofree gboolean *live = g_new0(gboolean, g->output + 1);
  live[g->output] = TRUE;
  for (guint v = g->output + 1; v-- > 0;) {
    if (!live[v])
      continue;
    const SieveGraphNode *n = sieve_graph_node(g, v);
    for (guint k = 0; k < n->n_inputs; k++)
      live[n->inputs[k]] = TRUE;
  }
  return live[i];
}

guint64
sieve_graph_node_params(const SieveGraph *g, guint i)
{
  const SieveGraphNode *n = sieve_graph_node(g, i);
  const SieveOpAttrs *a = &n->attrs;
  switch (n->kind) {
  case SIEVE_OP_CONV2D: {
    guint in_c = sieve_graph_node(g, n->inputs[0])->shape.c;
    return (guint64)a->out_channels * (in_c / a->groups) * a->kernel[0] * a->kernel[1] + (a->bias ? a->out_channels : 0);
  }
  case SIEVE_OP_BATCH_NORM:
    return a->affine ? 2 * (guint64)n->shape.c : 0;
  case SIEVE_OP_LINEAR: {
    SieveShape s = sieve_graph_node(g, n->inputs[0])->shape;
    return (guint64)a->out_channels * s.c * s.h * s.w + (a->bias ? a->out_channels : 0);
  }
  default:
    return 0;
  }
}

/* Sums f over the live nodes. */
static guint64
sum_live(const SieveGraph *g, guint64 (*f)(const SieveGraph *, guint))
{
  if (g->output == SIEVE_NODE_INVALID)
    return 0;
  g_autofree gboolean *live = g_new0(gboolean, g->output + 1);
  live[g->output] = TRUE;
  guint64 total = 0;
  for (guint v = g->output + 1; v-- > 0;) {
    if (!live[v])
      continue;
    const SieveGraphNode *n = sieve_graph_node(g, v);
    for (guint k = 0; k < n->n_inputs; k++)
      live[n->inputs[k]] = TRUE;
    total += f(g, v);
  }
  return total;
}

guint64
sieve_graph_params(const SieveGraph *g)
{
  return sum_live(g, sieve_graph_node_params);
}

static guint64
node_macs(const SieveGraph *g, guint i)
{
  const SieveGraphNode *n = sieve_graph_node(g, i);
  if (n->kind == SIEVE_OP_CONV2D) {
    guint in_c = sieve_graph_node(g, n->inputs[0])->shape.c;
    return (guint64)n->shape.c * n->shape.h * n->shape.w * (in_c / n->attrs.groups) * n->attrs.kernel[0] *
           n->attrs.kernel[1];
  }
  if (n->kind == SIEVE_OP_LINEAR) {
    SieveShape s = sieve_graph_node(g, n->inputs[0])->shape;
    return (guint64)n->attrs.out_channels * s.c * s.h * s.w;
  }
  return 0;
}

guint64
sieve_graph_macs(const SieveGraph *g)
{
  return sum_live(g, node_macs);
}

static void
dump_attrs(GString *s, const SieveGraphNode *n)
{
  const SieveOpAttrs *a = &n->attrs;
  switch (n->kind) {
  case SIEVE_OP_CONV2D:
    g_string_append_printf(s, " out=%u k=%ux%u s=%u,%u p=%u,%u", a->out_channels, a->kernel[0], a->kernel[1],
                           a->stride[0], a->stride[1], a->pad[0], a->pad[1]);
    if (a->dilation[0] != 1 || a->dilation[1] != 1)
      g_string_append_printf(s, " d=%u,%u", a->dilation[0], a->dilation[1]);
    if (a->groups != 1)
      g_string_append_printf(s, " groups=%u", a->groups);
    if (a->bias)
      g_string_append(s, " bias");
    break;
  case SIEVE_OP_BATCH_NORM:
    g_string_append_printf(s, "%s eps=%g momentum=%g", a->affine ? " affine" : "", a->eps, a->momentum);
    break;
  case SIEVE_OP_ACTIVATION:
    g_string_append_printf(s, " %s", sieve_activation_name(a->activation));
    if (a->alpha != 0)
      g_string_append_printf(s, " alpha=%g", a->alpha);
    break;
  case SIEVE_OP_POOL:
    g_string_append_printf(s, " %s k=%ux%u s=%u,%u p=%u,%u", a->pool == SIEVE_POOL_AVG ? "avg" : "max",
                           a->kernel[0], a->kernel[1], a->stride[0], a->stride[1], a->pad[0], a->pad[1]);
    break;
  case SIEVE_OP_LINEAR:
    g_string_append_printf(s, " out=%u%s", a->out_channels, a->bias ? " bias" : "");
    break;
  case SIEVE_OP_CROP:
    g_string_append_printf(s, " window=%ux%u at=%u,%u", a->kernel[0], a->kernel[1], a->pad[0], a->pad[1]);
    break;
  case SIEVE_OP_SOFTMAX_CE:
    if (a->label_smoothing > 0)
      g_string_append_printf(s, " smoothing=%g", a->label_smoothing);
    break;
  default:
    break;
  }
}

char *
sieve_graph_dump(const SieveGraph *g)
{
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "graph %s: %u nodes, output %%%d, params %" G_GUINT64_FORMAT ", macs %" G_GUINT64_FORMAT
                            "\n",
                         g->name, g->nodes->len, g->output == SIEVE_NODE_INVALID ? -1 : (int)g->output,
                         sieve_graph_params(g), sieve_graph_macs(g));
  for (guint i = 0; i < g->nodes->len; i++) {
    const SieveGraphNode *n = sieve_graph_node(g, i);
    g_string_append_printf(s, "%%%u = %s(", i, sieve_op_kind_name(n->kind));
    for (guint k = 0; k < n->n_inputs; k++)
      g_string_append_printf(s, "%s%%%u", k ? ", " : "", n->inputs[k]);
    g_string_append_c(s, ')');
    dump_attrs(s, n);
    g_string_append_printf(s, " -> %ux%ux%u", n->shape.c, n->shape.h, n->shape.w);
    guint64 p = sieve_graph_node_params(g, i);
    if (p)
      g_string_append_printf(s, " params=%" G_GUINT64_FORMAT, p);
    if (n->label)
      g_string_append_printf(s, " \"%s\"", n->label);
    g_string_append_c(s, '\n');
  }
  return g_string_free(s, FALSE);
}
