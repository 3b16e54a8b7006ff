/* ONNX: a sieve graph in eval mode as a ModelProto, and the initializers
 * and metadata of one read back.
 *
 * The protobuf encoding is written by hand, after the field numbers of
 * onnx/onnx.proto (IR version 7, the one that goes with opset 13):
 *   ModelProto      1 ir_version, 2 producer_name, 3 producer_version, 6 doc_string, 7 graph,
 *                   8 opset_import, 14 metadata_props
 *   OperatorSetIdProto 1 domain, 2 version;  StringStringEntryProto 1 key, 2 value
 *   GraphProto      1 node, 2 name, 5 initializer, 11 input, 12 output
 *   NodeProto       1 input, 2 output, 3 name, 4 op_type, 5 attribute
 *   AttributeProto  1 name, 2 f, 3 i, 4 s, 5 t, 8 ints, 20 type (FLOAT 1, INT 2, TENSOR 4, INTS 7)
 *   TensorProto     1 dims, 2 data_type (FLOAT 1, INT64 7), 8 name, 9 raw_data
 *   ValueInfoProto  1 name, 2 type;  TypeProto 1 tensor_type;  TypeProto.Tensor 1 elem_type, 2 shape
 *   TensorShapeProto 1 dim;  Dimension 1 dim_value, 2 dim_param
 * Wire types: 0 varint, 2 length-delimited, 5 fixed 32 bits; a field's key
 * is (number << 3) | wire type.  raw_data is little-endian.
 *
 * What the runtime folds, the export folds the same way: a zero operation
 * is dropped from the sums that read it (no multiplication by zero), an
 * identity is an alias, and a zero that something else reads becomes a
 * ConstantOfShape. */
#include <math.h>
#include <string.h>

#include "model/model-private.h"

#define ONNX_IR_VERSION 7
enum { WIRE_VARINT = 0, WIRE_BYTES = 2, WIRE_FIXED32 = 5 };
enum { ATTR_FLOAT = 1, ATTR_INT = 2, ATTR_TENSOR = 4, ATTR_INTS = 7 };
enum { ONNX_FLOAT = 1, ONNX_INT64 = 7 };
#define INPUT_NAME "input"
#define OUTPUT_NAME "logits"

/* ---- the protobuf writer ------------------------------------------------------ */

typedef GByteArray Pb;

static void
pb_varint(Pb *b, guint64 v)
{
  do {
    guint8 byte = v & 0x7f;
    v >>= 7;
    if (v)
      byte |= 0x80;
    g_byte_array_append(b, &byte, 1);
  } while (v);
}

static void
pb_key(Pb *b, guint field, guint wire)
{
  pb_varint(b, ((guint64)field << 3) | wire);
}

static void
pb_int(Pb *b, guint field, gint64 v)
{
  pb_key(b, field, WIRE_VARINT);
  pb_varint(b, (guint64)v); /* negative int64: ten bytes, two's complement, as protobuf does */
}

static void
pb_bytes(Pb *b, guint field, gconstpointer data, gsize n)
{
  pb_key(b, field, WIRE_BYTES);
  pb_varint(b, n);
  g_byte_array_append(b, data, (guint)n);
}

static void
pb_string(Pb *b, guint field, const char *s)
{
  pb_bytes(b, field, s, strlen(s));
}

/* Appends message m as field and frees it. */
static void
pb_msg(Pb *b, guint field, Pb *m)
{
  pb_bytes(b, field, m->data, m->len);
  g_byte_array_unref(m);
}

static void
pb_float(Pb *b, guint field, float f)
{
  pb_key(b, field, WIRE_FIXED32);
  guint32 bits;
  memcpy(&bits, &f, 4);
  bits = GUINT32_TO_LE(bits);
  g_byte_array_append(b, (const guint8 *)&bits, 4);
}

/* ---- building the graph -------------------------------------------------------- */

typedef struct {
  const SieveGraph *graph;
  const SieveWeights *weights;
  guint batch;
  Pb *nodes;        /* GraphProto.node fields */
  Pb *initializers; /* GraphProto.initializer fields */
  char **name;      /* per graph node: its tensor's name, NULL while a zero nobody materialised */
  gboolean *zero;   /* per graph node: identically zero */
  gboolean *constant; /* per graph node: does not depend on the input (set up to the node emitted) */
  guint counter;    /* for unique helper names */
  SieveRuntime *constants; /* the graph on a zero input, for nodes that do not depend on it */
  guint output;            /* the node the model ends in */
  GHashTable *written;     /* names of the float initializers written */
  GError **error;
} Enc;

static char *
fresh(Enc *e, const char *stem)
{
  return g_strdup_printf("%s_%u", stem, e->counter++);
}

static void
tensor_proto(Pb *t, const char *name, guint ndims, const guint64 *dims, guint type, gconstpointer data,
             gsize bytes)
{
  for (guint d = 0; d < ndims; d++)
    pb_int(t, 1, (gint64)dims[d]);
  pb_int(t, 2, type);
  pb_string(t, 8, name);
  pb_bytes(t, 9, data, bytes);
}

static void
add_initializer_f32(Enc *e, const char *name, guint ndims, const guint64 *dims, const float *data)
{
  guint64 n = 1;
  for (guint d = 0; d < ndims; d++)
    n *= dims[d];
  g_autofree guint32 *le = g_new(guint32, MAX(n, 1));
  for (guint64 k = 0; k < n; k++) {
    memcpy(&le[k], &data[k], 4);
    le[k] = GUINT32_TO_LE(le[k]);
  }
  Pb *t = g_byte_array_new();
  tensor_proto(t, name, ndims, dims, ONNX_FLOAT, le, n * 4);
  pb_msg(e->initializers, 5, t);
  g_hash_table_add(e->written, g_strdup(name));
}

static void
add_initializer_i64(Enc *e, const char *name, guint n, const gint64 *values)
{
  g_autofree guint64 *le = g_new(guint64, MAX(n, 1));
  for (guint k = 0; k < n; k++)
    le[k] = GUINT64_TO_LE((guint64)values[k]);
  guint64 dim = n;
  Pb *t = g_byte_array_new();
  tensor_proto(t, name, 1, &dim, ONNX_INT64, le, (gsize)n * 8);
  pb_msg(e->initializers, 5, t);
}

/* A float scalar initializer (shape []), for the constants of formulas. */
static char *
scalar(Enc *e, const char *stem, float value)
{
  char *name = fresh(e, stem);
  add_initializer_f32(e, name, 0, NULL, &value);
  return name;
}

typedef struct {
  const char *name;
  guint type; /* ATTR_* */
  gint64 i;
  float f;
  const gint64 *ints;
  guint n_ints;
  Pb *tensor; /* ATTR_TENSOR: a TensorProto, consumed */
} Attr;

static void
emit(Enc *e, const char *op, const char *const *inputs, guint n_inputs, const char *output, const Attr *attrs,
     guint n_attrs)
{
  Pb *n = g_byte_array_new();
  for (guint i = 0; i < n_inputs; i++)
    pb_string(n, 1, inputs[i]);
  pb_string(n, 2, output);
  pb_string(n, 3, output); /* the node is named after what it computes */
  pb_string(n, 4, op);
  for (guint k = 0; k < n_attrs; k++) {
    const Attr *a = &attrs[k];
    Pb *m = g_byte_array_new();
    pb_string(m, 1, a->name);
    switch (a->type) {
    case ATTR_FLOAT:
      pb_float(m, 2, a->f);
      break;
    case ATTR_INT:
      pb_int(m, 3, a->i);
      break;
    case ATTR_TENSOR:
      pb_msg(m, 5, a->tensor);
      break;
    case ATTR_INTS:
      for (guint j = 0; j < a->n_ints; j++)
        pb_int(m, 8, a->ints[j]);
      break;
    default:
      g_assert_not_reached();
    }
    pb_int(m, 20, a->type);
    pb_msg(n, 5, m);
  }
  pb_msg(e->nodes, 1, n);
}

/* The name of node v's output as a real tensor.  A node that does not
 * depend on the input (downstream of zero operations only: a zero read by a
 * convolution, a batch norm of it ...) is the same for every example: its
 * value, computed by sieve's own runtime in eval mode, becomes an
 * initializer.  That keeps multiplications by zero out of the graph and
 * leaves consumers no constant-only subgraph to fold. */
static const char *
materialise(Enc *e, guint v)
{
  if (e->name[v] != NULL)
    return e->name[v];
  const SieveGraphNode *n = sieve_graph_node(e->graph, v);
  if (e->constants == NULL) {
    SieveRuntimeOptions ro = {.batch = 1, .threads = 1, .keep_all = TRUE};
    GError *local = NULL;
    e->constants = sieve_runtime_new(e->graph, &ro, &local);
    gsize in = 1;
    const SieveGraphNode *input = sieve_graph_node(e->graph, sieve_graph_input_node(e->graph));
    in = (gsize)input->shape.c * input->shape.h * input->shape.w;
    g_autofree float *zeros = g_new0(float, in);
    if (e->constants == NULL || !sieve_weights_to_runtime(e->weights, e->constants, e->graph, "weights", &local) ||
        !sieve_runtime_forward(e->constants, zeros, NULL, SIEVE_MODE_EVAL, &local)) {
      if (e->error && *e->error == NULL)
        g_propagate_error(e->error, local);
      else
        g_clear_error(&local);
      g_clear_pointer(&e->constants, sieve_runtime_free);
    }
  }
  gsize size = (gsize)n->shape.c * n->shape.h * n->shape.w;
  guint copies = MAX(e->batch, 1);
  g_autofree float *value = g_new0(float, size * copies);
  GError *local = NULL;
  if (e->constants != NULL && !e->zero[v] && !sieve_runtime_read(e->constants, v, value, &local)) {
    if (e->error && *e->error == NULL)
      g_propagate_error(e->error, local);
    else
      g_clear_error(&local);
  }
  for (guint b = 1; b < copies; b++)
    memcpy(value + b * size, value, size * sizeof(float));
  g_autofree char *prefix = sieve_weights_node_name(e->graph, v);
  e->name[v] = g_strdup_printf("%s.constant", prefix);
  guint64 dims[4] = {copies, n->shape.c, n->shape.h, n->shape.w};
  /* A classifier's logits keep Gemm's N x K, as the model's output says. */
  gboolean flat = v == e->output && n->kind == SIEVE_OP_LINEAR;
  add_initializer_f32(e, e->name[v], flat ? 2 : 4, dims, value);
  return e->name[v];
}

/* out: the constant z (one row, node v's value) expanded to the input's N
 * rows (Shape, Slice, Concat, Expand: opset 13's own), for a symbolic
 * batch.  flat: z is N x K (a classifier's logits), else N x C x H x W. */
static void
emit_expand_to_batch(Enc *e, const char *z, guint v, gboolean flat, const char *out)
{
  const SieveGraphNode *n = sieve_graph_node(e->graph, v);
  g_autofree char *shape = fresh(e, "input_shape");
  g_autofree char *zero = fresh(e, "batch_starts");
  g_autofree char *one = fresh(e, "batch_ends");
  g_autofree char *batch = fresh(e, "batch");
  g_autofree char *rest = fresh(e, "row_shape");
  g_autofree char *target = fresh(e, "batch_shape");
  const char *input = INPUT_NAME;
  emit(e, "Shape", &input, 1, shape, NULL, 0);
  add_initializer_i64(e, zero, 1, (gint64[]){0});
  add_initializer_i64(e, one, 1, (gint64[]){1});
  emit(e, "Slice", (const char *[]){shape, zero, one}, 3, batch, NULL, 0);
  add_initializer_i64(e, rest, flat ? 1 : 3, (gint64[]){n->shape.c, n->shape.h, n->shape.w});
  emit(e, "Concat", (const char *[]){batch, rest}, 2, target, (Attr[]){{"axis", ATTR_INT, .i = 0}}, 1);
  emit(e, "Expand", (const char *[]){z, target}, 2, out, NULL, 0);
}

/* The model's output when it does not depend on the input: the constant
 * z, whose batch is e->batch.  With a symbolic batch (e->batch 0) z holds
 * one row, expanded to the input's N, so that the output has the N rows it
 * declares. */
static void
emit_constant_output(Enc *e, const char *z)
{
  if (e->batch > 0) {
    emit(e, "Identity", &z, 1, OUTPUT_NAME, NULL, 0);
    return;
  }
  emit_expand_to_batch(e, z, e->output, sieve_graph_node(e->graph, e->output)->kind == SIEVE_OP_LINEAR, OUTPUT_NAME);
}

/* The initializer for node v's tensor what, which the weights must hold. */
static char *
param(Enc *e, guint v, const char *what, guint ndims, const guint64 *dims)
{
  g_autofree char *prefix = sieve_weights_node_name(e->graph, v);
  char *name = g_strdup_printf("%s.%s", prefix, what);
  guint have_ndims = 0;
  const guint64 *have = NULL;
  const float *data = sieve_weights_lookup(e->weights, name, &have_ndims, &have);
  gboolean same = data != NULL && have_ndims == ndims;
  for (guint d = 0; same && d < ndims; d++)
    same = have[d] == dims[d];
  if (!same) {
    if (e->error && *e->error == NULL)
      g_set_error(e->error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "no tensor '%s' of the right shape in the weights: "
                  "they are for another network (genotype %s)", name,
                  sieve_weights_get_meta(e->weights, "genotype") ?: "unknown");
    g_free(name);
    return NULL;
  }
  add_initializer_f32(e, name, ndims, dims, data);
  return name;
}

static char *
constant_vector(Enc *e, guint v, const char *what, guint c, float value)
{
  g_autofree char *prefix = sieve_weights_node_name(e->graph, v);
  char *name = g_strdup_printf("%s.%s", prefix, what);
  g_autofree float *data = g_new(float, c);
  for (guint k = 0; k < c; k++)
    data[k] = value;
  guint64 dim = c;
  add_initializer_f32(e, name, 1, &dim, data);
  return name;
}

static gboolean
emit_activation(Enc *e, const SieveOpAttrs *a, const char *x, const char *out)
{
  switch (a->activation) {
  case SIEVE_ACT_RELU:
    emit(e, "Relu", &x, 1, out, NULL, 0);
    return TRUE;
  case SIEVE_ACT_LEAKY_RELU:
    emit(e, "LeakyRelu", &x, 1, out, (Attr[]){{"alpha", ATTR_FLOAT, .f = (float)a->alpha}}, 1);
    return TRUE;
  case SIEVE_ACT_ELU:
    emit(e, "Elu", &x, 1, out, (Attr[]){{"alpha", ATTR_FLOAT, .f = (float)a->alpha}}, 1);
    return TRUE;
  case SIEVE_ACT_TANH:
    emit(e, "Tanh", &x, 1, out, NULL, 0);
    return TRUE;
  case SIEVE_ACT_SIGMOID:
    emit(e, "Sigmoid", &x, 1, out, NULL, 0);
    return TRUE;
  case SIEVE_ACT_SWISH: {
    g_autofree char *s = fresh(e, "swish_sigmoid");
    emit(e, "Sigmoid", &x, 1, s, NULL, 0);
    emit(e, "Mul", (const char *[]){x, s}, 2, out, NULL, 0);
    return TRUE;
  }
  case SIEVE_ACT_HARD_SIGMOID:
    /* ONNX's HardSigmoid is max(0, min(1, alpha x + beta)): relu6(x + 3) / 6
     * at alpha 1/6, beta 1/2 (its defaults are 0.2 and 0.5). */
    emit(e, "HardSigmoid", &x, 1, out,
         (Attr[]){{"alpha", ATTR_FLOAT, .f = 1.0f / 6}, {"beta", ATTR_FLOAT, .f = 0.5f}}, 2);
    return TRUE;
  case SIEVE_ACT_HARD_SWISH: {
    /* HardSwish came in opset 14: x * HardSigmoid(x), as PyTorch exports
     * it to opset 13. */
    g_autofree char *s = fresh(e, "hard_swish_gate");
    emit(e, "HardSigmoid", &x, 1, s, (Attr[]){{"alpha", ATTR_FLOAT, .f = 1.0f / 6}, {"beta", ATTR_FLOAT, .f = 0.5f}},
         2);
    emit(e, "Mul", (const char *[]){x, s}, 2, out, NULL, 0);
    return TRUE;
  }
  case SIEVE_ACT_GELU: {
    /* Opset 13 has no Gelu (it came in opset 20): the exact formula,
     * x * 0.5 * (1 + erf(x / sqrt 2)), as PyTorch exports it. */
    g_autofree char *root2 = scalar(e, "gelu_sqrt2", (float)G_SQRT2);
    g_autofree char *one = scalar(e, "gelu_one", 1.0f);
    g_autofree char *half = scalar(e, "gelu_half", 0.5f);
    g_autofree char *d = fresh(e, "gelu_div"), *f = fresh(e, "gelu_erf"), *p = fresh(e, "gelu_add"),
                    *m = fresh(e, "gelu_mul");
    emit(e, "Div", (const char *[]){x, root2}, 2, d, NULL, 0);
    emit(e, "Erf", (const char *[]){d}, 1, f, NULL, 0);
    emit(e, "Add", (const char *[]){f, one}, 2, p, NULL, 0);
    emit(e, "Mul", (const char *[]){x, p}, 2, m, NULL, 0);
    emit(e, "Mul", (const char *[]){m, half}, 2, out, NULL, 0);
    return TRUE;
  }
  default:
    g_set_error(e->error, SIEVE_ERROR, SIEVE_ERROR_GRAPH, "activation %s has no ONNX form",
                sieve_activation_name(a->activation));
    return FALSE;
  }
}

/* Emits node v (live, not a pure alias or zero); out: its output's name. */
static gboolean
emit_node(Enc *e, guint v, const char *out, gboolean final_output)
{
  const SieveGraphNode *n = sieve_graph_node(e->graph, v);
  const SieveOpAttrs *a = &n->attrs;
  const SieveGraphNode *in0 = n->n_inputs ? sieve_graph_node(e->graph, n->inputs[0]) : NULL;
  const char *x = n->n_inputs ? materialise(e, n->inputs[0]) : NULL;
  switch (n->kind) {
  case SIEVE_OP_CONV2D: {
    guint64 wd[4] = {a->out_channels, in0->shape.c / a->groups, a->kernel[0], a->kernel[1]};
    g_autofree char *w = param(e, v, "weight", 4, wd);
    guint64 bd = a->out_channels;
    g_autofree char *b = a->bias ? param(e, v, "bias", 1, &bd) : NULL;
    if (w == NULL || (a->bias && b == NULL))
      return FALSE;
    gint64 k[2] = {a->kernel[0], a->kernel[1]}, s[2] = {a->stride[0], a->stride[1]},
           p[4] = {a->pad[0], a->pad[1], a->pad[0], a->pad[1]}, d[2] = {a->dilation[0], a->dilation[1]};
    Attr at[] = {{"kernel_shape", ATTR_INTS, .ints = k, .n_ints = 2},
                 {"strides", ATTR_INTS, .ints = s, .n_ints = 2},
                 {"pads", ATTR_INTS, .ints = p, .n_ints = 4},
                 {"dilations", ATTR_INTS, .ints = d, .n_ints = 2},
                 {"group", ATTR_INT, .i = a->groups}};
    emit(e, "Conv", (const char *[]){x, w, b}, a->bias ? 3 : 2, out, at, G_N_ELEMENTS(at));
    return TRUE;
  }
  case SIEVE_OP_BATCH_NORM: {
    guint64 c = n->shape.c;
    g_autofree char *gamma = a->affine ? param(e, v, "gamma", 1, &c) : constant_vector(e, v, "scale_ones", c, 1);
    g_autofree char *beta = a->affine ? param(e, v, "beta", 1, &c) : constant_vector(e, v, "shift_zeros", c, 0);
    g_autofree char *mean = param(e, v, "running_mean", 1, &c);
    g_autofree char *var = param(e, v, "running_var", 1, &c);
    if (!gamma || !beta || !mean || !var)
      return FALSE;
    emit(e, "BatchNormalization", (const char *[]){x, gamma, beta, mean, var}, 5, out,
         (Attr[]){{"epsilon", ATTR_FLOAT, .f = (float)a->eps}}, 1);
    return TRUE;
  }
  case SIEVE_OP_ACTIVATION:
    return emit_activation(e, a, x, out);
  case SIEVE_OP_POOL: {
    gint64 k[2] = {a->kernel[0], a->kernel[1]}, s[2] = {a->stride[0], a->stride[1]},
           p[4] = {a->pad[0], a->pad[1], a->pad[0], a->pad[1]};
    Attr at[] = {{"kernel_shape", ATTR_INTS, .ints = k, .n_ints = 2},
                 {"strides", ATTR_INTS, .ints = s, .n_ints = 2},
                 {"pads", ATTR_INTS, .ints = p, .n_ints = 4},
                 {"count_include_pad", ATTR_INT, .i = 0}};
    if (a->pool == SIEVE_POOL_AVG)
      emit(e, "AveragePool", &x, 1, out, at, 4);
    else
      emit(e, "MaxPool", &x, 1, out, at, 3);
    return TRUE;
  }
  case SIEVE_OP_ADD: {
    /* Zeros dropped; a chain of Adds, which every runtime has (Sum is
     * variadic and less widely supported). */
    g_autoptr(GPtrArray) terms = g_ptr_array_new();
    for (guint k = 0; k < n->n_inputs; k++)
      if (!e->zero[n->inputs[k]])
        g_ptr_array_add(terms, (gpointer)materialise(e, n->inputs[k]));
    g_assert(terms->len >= 2);
    const char *acc = terms->pdata[0];
    g_autofree char *partial = NULL;
    for (guint k = 1; k < terms->len; k++) {
      g_autofree char *next = k + 1 == terms->len ? g_strdup(out) : fresh(e, out);
      emit(e, "Add", (const char *[]){acc, terms->pdata[k]}, 2, next, NULL, 0);
      g_free(partial);
      partial = g_steal_pointer(&next);
      acc = partial;
    }
    return TRUE;
  }
  case SIEVE_OP_CONCAT: {
    /* Concat takes no broadcast: with a symbolic batch a constant input
     * (one row) is expanded to the N rows of the others.  (Add and Mul
     * broadcast a row themselves.) */
    g_autofree const char **ins = g_new(const char *, n->n_inputs);
    g_autoptr(GPtrArray) expanded = g_ptr_array_new_with_free_func(g_free);
    for (guint k = 0; k < n->n_inputs; k++) {
      ins[k] = materialise(e, n->inputs[k]);
      if (e->batch == 0 && e->constant[n->inputs[k]]) {
        char *rows = fresh(e, "batch_rows");
        emit_expand_to_batch(e, ins[k], n->inputs[k], FALSE, rows);
        g_ptr_array_add(expanded, rows);
        ins[k] = rows;
      }
    }
    emit(e, "Concat", ins, n->n_inputs, out, (Attr[]){{"axis", ATTR_INT, .i = 1}}, 1);
    return TRUE;
  }
  case SIEVE_OP_GLOBAL_AVG_POOL:
    emit(e, "GlobalAveragePool", &x, 1, out, NULL, 0);
    return TRUE;
  case SIEVE_OP_MUL:
    /* ONNX's Mul broadcasts an N x C x 1 x 1 gate as graph.h does, either
     * side; the gate goes first because OpenCV 4.6's importer, given x
     * first, returns a tensor of the gate's shape. */
    emit(e, "Mul", (const char *[]){materialise(e, n->inputs[1]), x}, 2, out, NULL, 0);
    return TRUE;
  case SIEVE_OP_LINEAR: {
    guint64 fan_in = (guint64)in0->shape.c * in0->shape.h * in0->shape.w;
    guint64 wd[2] = {a->out_channels, fan_in};
    g_autofree char *w = param(e, v, "weight", 2, wd);
    guint64 bd = a->out_channels;
    g_autofree char *b = a->bias ? param(e, v, "bias", 1, &bd) : NULL;
    if (w == NULL || (a->bias && b == NULL))
      return FALSE;
    g_autofree char *flat = fresh(e, "flatten");
    emit(e, "Flatten", &x, 1, flat, (Attr[]){{"axis", ATTR_INT, .i = 1}}, 1);
    /* Inside the network every tensor is NCHW (sieve's c x 1 x 1); only
     * the model's output keeps Gemm's N x K, as a classifier's logits. */
    g_autofree char *gemm = final_output ? g_strdup(out) : fresh(e, "gemm");
    emit(e, "Gemm", (const char *[]){flat, w, b}, a->bias ? 3 : 2, gemm, (Attr[]){{"transB", ATTR_INT, .i = 1}}, 1);
    if (!final_output) {
      /* Reshape to (the same batch, K, 1, 1): 0 copies the batch, which
       * may be symbolic.  (OpenCV 4.6 has no Unsqueeze of two axes.) */
      g_autofree char *shape = fresh(e, "nchw_shape");
      add_initializer_i64(e, shape, 4, (gint64[]){0, a->out_channels, 1, 1});
      emit(e, "Reshape", (const char *[]){gemm, shape}, 2, out, NULL, 0);
    }
    return TRUE;
  }
  case SIEVE_OP_IDENTITY:
    emit(e, "Identity", &x, 1, out, NULL, 0);
    return TRUE;
  case SIEVE_OP_CROP: {
    /* Slice (opset >= 10: starts, ends, axes as inputs) on H and W. */
    g_autofree char *starts = fresh(e, "crop_starts");
    g_autofree char *ends = fresh(e, "crop_ends");
    g_autofree char *axes = fresh(e, "crop_axes");
    add_initializer_i64(e, starts, 2, (gint64[]){a->pad[0], a->pad[1]});
    add_initializer_i64(e, ends, 2, (gint64[]){(gint64)a->pad[0] + a->kernel[0], (gint64)a->pad[1] + a->kernel[1]});
    add_initializer_i64(e, axes, 2, (gint64[]){2, 3});
    emit(e, "Slice", (const char *[]){x, starts, ends, axes}, 4, out, NULL, 0);
    return TRUE;
  }
  default:
    g_set_error(e->error, SIEVE_ERROR, SIEVE_ERROR_GRAPH, "node %u (%s) has no ONNX form", v,
                sieve_op_kind_name(n->kind));
    return FALSE;
  }
}

static Pb *
value_info(const char *name, guint ndims, const gint64 *dims)
{
  Pb *shape = g_byte_array_new();
  for (guint d = 0; d < ndims; d++) {
    Pb *dim = g_byte_array_new();
    if (dims[d] > 0)
      pb_int(dim, 1, dims[d]);
    else
      pb_string(dim, 2, "N");
    pb_msg(shape, 1, dim);
  }
  Pb *tensor = g_byte_array_new();
  pb_int(tensor, 1, ONNX_FLOAT);
  pb_msg(tensor, 2, shape);
  Pb *type = g_byte_array_new();
  pb_msg(type, 1, tensor);
  Pb *vi = g_byte_array_new();
  pb_string(vi, 1, name);
  pb_msg(vi, 2, type);
  return vi;
}


GBytes *
sieve_onnx_encode(const SieveGraph *graph, const SieveWeights *weights, const SieveOnnxOptions *options,
                  GError **error)
{
  g_return_val_if_fail(graph != NULL && weights != NULL, NULL);
  guint n_nodes = sieve_graph_n_nodes(graph);
  guint output = sieve_graph_output(graph);
  if (output == SIEVE_NODE_INVALID) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH, "graph %s is not finished", sieve_graph_name(graph) ?: "");
    return NULL;
  }
  /* The loss is training's: the model ends in its logits. */
  if (sieve_graph_node(graph, output)->kind == SIEVE_OP_SOFTMAX_CE)
    output = sieve_graph_node(graph, output)->inputs[0];
  Enc e = {.graph = graph, .weights = weights, .batch = options ? options->batch : 1, .error = error};
  e.nodes = g_byte_array_new();
  e.initializers = g_byte_array_new();
  e.name = g_new0(char *, n_nodes);
  e.zero = g_new0(gboolean, n_nodes);
  e.output = output;
  e.written = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  /* constant[v]: v does not depend on the input (zeros and what only they feed). */
  g_autofree gboolean *constant = g_new0(gboolean, n_nodes);
  e.constant = constant;
  gboolean ok = TRUE;
  for (guint v = 0; ok && v < n_nodes; v++) {
    const SieveGraphNode *n = sieve_graph_node(graph, v);
    if (!sieve_graph_node_live(graph, v) || v > output)
      continue;
    if (n->kind == SIEVE_OP_INPUT) {
      e.name[v] = g_strdup(INPUT_NAME);
      continue;
    }
    gboolean is_output = v == output;
    guint live = 0, last = 0;
    gboolean all_constant = TRUE;
    for (guint k = 0; k < n->n_inputs; k++)
      if (!(n->kind == SIEVE_OP_ADD && e.zero[n->inputs[k]])) {
        live++;
        last = n->inputs[k];
        all_constant &= constant[n->inputs[k]];
      }
    if (n->kind == SIEVE_OP_ZERO || (n->kind == SIEVE_OP_ADD && live == 0)) {
      e.zero[v] = constant[v] = TRUE;
    } else if (n->kind == SIEVE_OP_IDENTITY && !is_output) {
      e.zero[v] = e.zero[last];
      constant[v] = constant[last];
      e.name[v] = g_strdup(e.name[last]);
      continue;
    } else if (all_constant) {
      constant[v] = TRUE;
    } else if (n->kind == SIEVE_OP_ADD && live == 1) {
      if (!is_output) {
        e.name[v] = g_strdup(materialise(&e, last));
      } else {
        const char *x = materialise(&e, last);
        e.name[v] = g_strdup(OUTPUT_NAME);
        if (constant[last])
          emit_constant_output(&e, x);
        else
          emit(&e, "Identity", &x, 1, OUTPUT_NAME, NULL, 0);
      }
      continue;
    }
    if (constant[v]) {
      /* Computed only where something reads it (materialise). */
      if (is_output)
        emit_constant_output(&e, materialise(&e, v));
      continue;
    }
    g_autofree char *prefix = sieve_weights_node_name(graph, v);
    e.name[v] = is_output ? g_strdup(OUTPUT_NAME) : g_strdup(prefix);
    ok = emit_node(&e, v, e.name[v], is_output);
  }
  /* The weights of what became constants: no node reads them, but sieve
   * rebuilds the network from the file (model info, model eval), and its
   * runtime needs every parameter, not the constants computed from them. */
  for (guint i = 0; ok && i < sieve_weights_n_tensors(weights); i++) {
    const char *name = sieve_weights_tensor_name(weights, i);
    guint ndims = 0;
    const guint64 *dims = NULL;
    const float *data = sieve_weights_lookup(weights, name, &ndims, &dims);
    if (!g_hash_table_contains(e.written, name))
      add_initializer_f32(&e, name, ndims, dims, data);
  }
  ok = ok && (error == NULL || *error == NULL);
  g_clear_pointer(&e.constants, sieve_runtime_free);
  Pb *model = NULL;
  if (ok) {
    const SieveGraphNode *in = sieve_graph_node(graph, sieve_graph_input_node(graph));
    const SieveGraphNode *out = sieve_graph_node(graph, output);
    gint64 b = e.batch;
    gint64 in_dims[4] = {b, in->shape.c, in->shape.h, in->shape.w};
    gboolean flat = out->kind == SIEVE_OP_LINEAR;
    gint64 out_dims[4] = {b, out->shape.c, out->shape.h, out->shape.w};
    Pb *g = g_byte_array_new();
    g_byte_array_append(g, e.nodes->data, e.nodes->len);
    pb_string(g, 2, sieve_graph_name(graph) ? sieve_graph_name(graph) : "sieve");
    g_byte_array_append(g, e.initializers->data, e.initializers->len);
    pb_msg(g, 11, value_info(INPUT_NAME, 4, in_dims));
    pb_msg(g, 12, value_info(OUTPUT_NAME, flat ? 2 : 4, out_dims));

    model = g_byte_array_new();
    pb_int(model, 1, ONNX_IR_VERSION);
    pb_string(model, 2, options && options->producer ? options->producer : "sieve");
    pb_string(model, 3, sieve_version_string());
    pb_string(model, 6, "a network found by sieve, in eval mode (batch norm uses its running statistics)");
    pb_msg(model, 7, g);
    Pb *opset = g_byte_array_new();
    pb_string(opset, 1, "");
    pb_int(opset, 2, SIEVE_ONNX_OPSET);
    pb_msg(model, 8, opset);
    g_autofree const char **keys = sieve_weights_meta_keys(weights);
    for (guint k = 0; keys[k]; k++) {
      Pb *entry = g_byte_array_new();
      pb_string(entry, 1, keys[k]);
      pb_string(entry, 2, sieve_weights_get_meta(weights, keys[k]));
      pb_msg(model, 14, entry);
    }
  }
  for (guint v = 0; v < n_nodes; v++)
    g_free(e.name[v]);
  g_free(e.name);
  g_free(e.zero);
  g_hash_table_unref(e.written);
  g_byte_array_unref(e.nodes);
  g_byte_array_unref(e.initializers);
  if (!ok)
    return NULL;
  return g_byte_array_free_to_bytes(model);
}

/* ---- reading back --------------------------------------------------------------- */

typedef struct {
  const guint8 *p, *end;
} Rd;

static gboolean
rd_varint(Rd *r, guint64 *out)
{
  guint64 v = 0;
  for (guint shift = 0; shift < 64; shift += 7) {
    if (r->p >= r->end)
      return FALSE;
    guint8 byte = *r->p++;
    v |= (guint64)(byte & 0x7f) << shift;
    if (!(byte & 0x80)) {
      *out = v;
      return TRUE;
    }
  }
  return FALSE;
}

/* The next field: its number and wire type; for BYTES its contents in
 * *sub, for VARINT its value in *value; others skipped.  FALSE at the end
 * or on malformed input (*broken set). */
static gboolean
rd_field(Rd *r, guint *field, guint *wire, Rd *sub, guint64 *value, gboolean *broken)
{
  if (r->p >= r->end)
    return FALSE;
  guint64 key, n;
  *broken = TRUE;
  if (!rd_varint(r, &key))
    return FALSE;
  *field = (guint)(key >> 3);
  *wire = key & 7;
  switch (*wire) {
  case WIRE_VARINT:
    if (!rd_varint(r, value))
      return FALSE;
    break;
  case WIRE_BYTES:
    if (!rd_varint(r, &n) || n > (guint64)(r->end - r->p))
      return FALSE;
    sub->p = r->p;
    sub->end = r->p + n;
    r->p += n;
    break;
  case WIRE_FIXED32:
    if (r->end - r->p < 4)
      return FALSE;
    r->p += 4;
    break;
  case 1: /* fixed 64 bits */
    if (r->end - r->p < 8)
      return FALSE;
    r->p += 8;
    break;
  default:
    return FALSE;
  }
  *broken = FALSE;
  return TRUE;
}

gboolean
sieve__model_is_onnx(GBytes *bytes)
{
  gsize size = 0;
  const guint8 *p = g_bytes_get_data(bytes, &size);
  /* safetensors: a little-endian length, then the JSON header's '{'. */
  return !(size >= 9 && p[8] == '{');
}

static const char *const param_suffixes[] = {".weight", ".bias", ".gamma", ".beta", ".running_mean",
                                             ".running_var", NULL};

static gboolean
is_param_name(const char *name)
{
  for (guint k = 0; param_suffixes[k]; k++)
    if (g_str_has_suffix(name, param_suffixes[k]))
      return TRUE;
  return FALSE;
}

/* One TensorProto: a float32 one with raw_data becomes a tensor of w. */
static gboolean
read_tensor(Rd t, SieveWeights *w, const char *origin, GError **error)
{
  guint field, wire;
  guint64 value, dims[SIEVE_WEIGHTS_MAX_DIMS];
  guint ndims = 0;
  gint64 type = 0;
  Rd sub = {0}, raw = {0}, packed = {0};
  g_autofree char *name = NULL;
  gboolean broken = FALSE, has_raw = FALSE;
  while (rd_field(&t, &field, &wire, &sub, &value, &broken)) {
    if (field == 1 && wire == WIRE_VARINT) {
      if (ndims == SIEVE_WEIGHTS_MAX_DIMS)
        goto bad;
      dims[ndims++] = value;
    } else if (field == 1 && wire == WIRE_BYTES) {
      packed = sub;
      while (packed.p < packed.end)
        if (ndims == SIEVE_WEIGHTS_MAX_DIMS || !rd_varint(&packed, &dims[ndims++]))
          goto bad;
    } else if (field == 2 && wire == WIRE_VARINT) {
      type = (gint64)value;
    } else if (field == 8 && wire == WIRE_BYTES) {
      g_free(name);
      name = g_strndup((const char *)sub.p, sub.end - sub.p);
    } else if (field == 9 && wire == WIRE_BYTES) {
      raw = sub;
      has_raw = TRUE;
    }
  }
  if (broken)
    goto bad;
  if (name == NULL || type != ONNX_FLOAT || !is_param_name(name))
    return TRUE; /* shapes, constants: the export's own, not weights */
  guint64 count = 1;
  for (guint d = 0; d < ndims; d++)
    count *= dims[d];
  if (!has_raw || (guint64)(raw.end - raw.p) != count * 4) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "%s: initializer '%s' has no raw float data of its shape",
                origin, name);
    return FALSE;
  }
  /* Not g_autofree: a 'goto bad' above would jump past its initialisation
   * and free an undefined pointer on the way out. */
  float *values = g_new(float, MAX(count, 1));
  for (guint64 k = 0; k < count; k++) {
    guint32 bits;
    memcpy(&bits, raw.p + 4 * k, 4);
    bits = GUINT32_FROM_LE(bits);
    memcpy(&values[k], &bits, 4);
  }
  sieve_weights_add(w, name, ndims, dims, values);
  g_free(values);
  return TRUE;
bad:
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "%s: not a valid ONNX file: a malformed initializer", origin);
  return FALSE;
}

SieveWeights *
sieve_onnx_decode(GBytes *bytes, const char *origin, GError **error)
{
  gsize size = 0;
  const guint8 *p = g_bytes_get_data(bytes, &size);
  Rd r = {p, p + size}, sub;
  guint field, wire;
  guint64 value;
  gboolean broken = FALSE, has_graph = FALSE;
  g_autoptr(SieveWeights) w = sieve_weights_new();
  while (rd_field(&r, &field, &wire, &sub, &value, &broken)) {
    if (field == 14 && wire == WIRE_BYTES) {
      Rd e = sub, s;
      g_autofree char *key = NULL, *val = NULL;
      while (rd_field(&e, &field, &wire, &s, &value, &broken)) {
        if (wire != WIRE_BYTES)
          continue;
        char **slot = field == 1 ? &key : field == 2 ? &val : NULL;
        if (slot) {
          g_free(*slot);
          *slot = g_strndup((const char *)s.p, s.end - s.p);
        }
      }
      if (broken)
        break;
      if (key && val)
        sieve_weights_set_meta(w, key, val);
    } else if (field == 7 && wire == WIRE_BYTES) {
      has_graph = TRUE;
      Rd g = sub, t;
      while (rd_field(&g, &field, &wire, &t, &value, &broken))
        if (field == 5 && wire == WIRE_BYTES && !read_tensor(t, w, origin, error))
          return NULL;
      if (broken)
        break;
    }
  }
  if (broken || !has_graph) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE,
                "%s: neither a safetensors weights file nor a valid ONNX model (%s)", origin,
                broken ? "truncated or corrupted" : "no graph");
    return NULL;
  }
  return g_steal_pointer(&w);
}
