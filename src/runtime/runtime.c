/* The runtime's public face: argument checks, then the chosen backend. */
#include <math.h>

#include "runtime/runtime-private.h"

struct _SieveRuntime {
  const SieveBackendClass *klass;
  gpointer impl;
  guint batch;
  gboolean backward_compiled;
  gboolean input_grad;
  gboolean forward_done;  /* a forward ran since compile */
  gboolean backward_done; /* a backward ran after the last forward */
  gboolean last_train;
  gboolean grads_done;    /* parameter gradients from the last backward (not an input-only one) */
  guint n_classes;        /* the logits of a loss output; 0 when the output is no loss */
  gboolean has_labels;    /* the last forward had labels for the loss */
};

static const SieveBackendClass *const backends[] = {
  &sieve_backend_cpu,
#ifdef SIEVE_HAVE_CUDA
  &sieve_backend_cuda,
#endif
};

const char *
sieve_runtime_resolve_device(const char *device, char **note)
{
  if (note)
    *note = NULL;
  if (device == NULL)
    return "cpu";
  if (!g_str_equal(device, "auto"))
    return device;
  g_autofree char *why = NULL;
#ifdef SIEVE_HAVE_CUDA
  const char *took = sieve__cuda_available(&why) ? "cuda" : "cpu";
#else
  const char *took = "cpu";
  why = g_strdup("this build has no CUDA backend");
#endif
  if (note)
    *note = why ? g_strdup_printf("device auto: %s (%s)", took, why) : g_strdup_printf("device auto: %s", took);
  return took;
}

/* "auto": the GPU when this build has the CUDA backend and the machine a
 * GPU, else the CPU; sieve_runtime_describe says which it took. */
static const char *
resolve_device(const char *device, GError **error)
{
  if (device == NULL || g_str_equal(device, "auto"))
    return sieve_runtime_resolve_device(device, NULL);
#ifndef SIEVE_HAVE_CUDA
  if (g_str_equal(device, "cuda")) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
                "device \"cuda\": this build has no CUDA backend (it needs nvcc and cuDNN at build time; "
                "meson setup -Dcuda=enabled says what is missing)");
    return NULL;
  }
#endif
  return device;
}

SieveRuntime *
sieve_runtime_new(const SieveGraph *graph, const SieveRuntimeOptions *options, GError **error)
{
  g_return_val_if_fail(graph != NULL && options != NULL, NULL);
  g_return_val_if_fail(options->n_keep == 0 || options->keep != NULL, NULL);
  const char *device = resolve_device(options->device, error);
  if (device == NULL)
    return NULL;
  const SieveBackendClass *klass = NULL;
  for (guint i = 0; i < G_N_ELEMENTS(backends); i++)
    if (g_str_equal(backends[i]->name, device))
      klass = backends[i];
  if (klass == NULL) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "unknown device \"%s\" (expected cpu, cuda or auto)", device);
    return NULL;
  }
  if (options->batch == 0) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "batch size must be at least 1");
    return NULL;
  }
  if (sieve_graph_output(graph) == SIEVE_NODE_INVALID) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH, "graph %s is not finished (no output)",
                sieve_graph_name(graph));
    return NULL;
  }
  gpointer impl = klass->compile(graph, options, error);
  if (impl == NULL)
    return NULL;
  SieveRuntime *rt = g_new0(SieveRuntime, 1);
  const SieveGraphNode *out = sieve_graph_node(graph, sieve_graph_output(graph));
  if (out->kind == SIEVE_OP_SOFTMAX_CE) {
    SieveShape ls = sieve_graph_node(graph, out->inputs[0])->shape;
    rt->n_classes = ls.c * ls.h * ls.w;
  }
  rt->klass = klass;
  rt->impl = impl;
  rt->batch = options->batch;
  rt->backward_compiled = options->backward;
  rt->input_grad = options->input_grad;
  return rt;
}

void
sieve_runtime_free(SieveRuntime *rt)
{
  if (!rt)
    return;
  rt->klass->destroy(rt->impl);
  g_free(rt);
}

const char *
sieve_runtime_describe(const SieveRuntime *rt)
{
  return rt->klass->describe(rt->impl);
}

guint
sieve_runtime_batch(const SieveRuntime *rt)
{
  return rt->batch;
}

gboolean
sieve_runtime_forward(SieveRuntime *rt, const float *x, const gint32 *labels, SieveMode mode, GError **error)
{
  g_return_val_if_fail(x != NULL, FALSE);
  /* Checked here for every backend: a label is an index into the logits. */
  if (labels && rt->n_classes)
    for (guint b = 0; b < rt->batch; b++)
      if (labels[b] < 0 || (guint)labels[b] >= rt->n_classes) {
        g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "label %d of example %u is outside 0..%u", labels[b], b,
                    rt->n_classes - 1);
        return FALSE;
      }
  if (!rt->klass->forward(rt->impl, x, labels, mode, error))
    return FALSE;
  rt->has_labels = labels && rt->n_classes;
  rt->forward_done = TRUE;
  rt->backward_done = FALSE;
  rt->last_train = mode == SIEVE_MODE_TRAIN;
  return TRUE;
}

double
sieve_runtime_loss(const SieveRuntime *rt)
{
  return rt->forward_done ? rt->klass->loss(rt->impl) : NAN;
}

/* The reads of node values need a forward, those of node gradients a
 * backward after it. */
static gboolean
need_forward(const SieveRuntime *rt, GError **error)
{
  if (!rt->forward_done)
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "read before any forward pass");
  return rt->forward_done;
}

static gboolean
need_backward(const SieveRuntime *rt, GError **error)
{
  if (!rt->backward_done)
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "node gradients need a backward pass first");
  return rt->backward_done;
}

gboolean
sieve_runtime_read(SieveRuntime *rt, guint node, float *out, GError **error)
{
  return need_forward(rt, error) && rt->klass->read(rt->impl, node, out, error);
}

static gboolean
backward(SieveRuntime *rt, const float *output_grad, gboolean input_only, GError **error)
{
  if (!rt->backward_compiled) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "this runtime was compiled without a backward pass");
    return FALSE;
  }
  if (!rt->forward_done || !rt->last_train) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "backward needs a forward pass in train mode first");
    return FALSE;
  }
  if (rt->n_classes && !rt->has_labels) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "backward through a loss needs the forward's labels");
    return FALSE;
  }
  if (!rt->klass->backward(rt->impl, output_grad, input_only, error))
    return FALSE;
  rt->backward_done = TRUE;
  rt->grads_done = !input_only;
  return TRUE;
}

gboolean
sieve_runtime_backward(SieveRuntime *rt, const float *output_grad, GError **error)
{
  return backward(rt, output_grad, FALSE, error);
}

gboolean
sieve_runtime_backward_input(SieveRuntime *rt, const float *output_grad, GError **error)
{
  return backward(rt, output_grad, TRUE, error);
}

gboolean
sieve_runtime_read_signs(SieveRuntime *rt, guint node, guint64 *codes, GError **error)
{
  return need_forward(rt, error) && rt->klass->read_signs(rt->impl, node, codes, error);
}

gboolean
sieve_runtime_read_input_grad(SieveRuntime *rt, float *out, GError **error)
{
  if (!rt->input_grad || !rt->backward_done) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
                "the input gradient needs input_grad at compile time and a backward pass");
    return FALSE;
  }
  return rt->klass->read_input_grad(rt->impl, out, error);
}

gboolean
sieve_runtime_read_grad(SieveRuntime *rt, guint node, float *out, GError **error)
{
  return need_backward(rt, error) && rt->klass->read_grad(rt->impl, node, out, error);
}

gboolean
sieve_runtime_read_channel_dots(SieveRuntime *rt, guint node, double *dots, GError **error)
{
  return need_backward(rt, error) && rt->klass->read_channel_dots(rt->impl, node, dots, error);
}

gboolean
sieve_runtime_get_running_stats(SieveRuntime *rt, guint node, float *mean, float *var, GError **error)
{
  return rt->klass->get_running(rt->impl, node, mean, var, error);
}

gboolean
sieve_runtime_set_running_stats(SieveRuntime *rt, guint node, const float *mean, const float *var, GError **error)
{
  return rt->klass->set_running(rt->impl, node, mean, var, error);
}

gboolean
sieve_runtime_freeze_activations(SieveRuntime *rt, gboolean freeze, GError **error)
{
  if (freeze && (!rt->forward_done || !rt->backward_compiled)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
                "freezing activations needs a runtime compiled with backward and a forward pass first");
    return FALSE;
  }
  return rt->klass->freeze(rt->impl, freeze, error);
}

guint
sieve_runtime_n_params(const SieveRuntime *rt)
{
  return rt->klass->n_params(rt->impl);
}

const SieveParamInfo *
sieve_runtime_param_info(const SieveRuntime *rt, guint i)
{
  g_return_val_if_fail(i < sieve_runtime_n_params(rt), NULL);
  return rt->klass->param_info(rt->impl, i);
}

static gboolean
check_param(const SieveRuntime *rt, guint i, GError **error)
{
  if (i >= sieve_runtime_n_params(rt)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "parameter %u does not exist (the graph has %u)", i,
                sieve_runtime_n_params(rt));
    return FALSE;
  }
  return TRUE;
}

gboolean
sieve_runtime_get_param(SieveRuntime *rt, guint i, float *out, GError **error)
{
  return check_param(rt, i, error) && rt->klass->get_param(rt->impl, i, out, error);
}

gboolean
sieve_runtime_set_param(SieveRuntime *rt, guint i, const float *values, GError **error)
{
  return check_param(rt, i, error) && rt->klass->set_param(rt->impl, i, values, error);
}

gboolean
sieve_runtime_get_velocity(SieveRuntime *rt, guint i, float *out, GError **error)
{
  return check_param(rt, i, error) && rt->klass->get_velocity(rt->impl, i, out, error);
}

gboolean
sieve_runtime_set_velocity(SieveRuntime *rt, guint i, const float *values, GError **error)
{
  return check_param(rt, i, error) && rt->klass->set_velocity(rt->impl, i, values, error);
}

gboolean
sieve_runtime_get_grad(SieveRuntime *rt, guint i, float *out, GError **error)
{
  if (!check_param(rt, i, error))
    return FALSE;
  if (!rt->backward_done || !rt->grads_done) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
                rt->backward_done ? "the last backward computed no parameter gradients (sieve_runtime_backward_input)"
                                  : "gradients need a backward pass first");
    return FALSE;
  }
  return rt->klass->get_grad(rt->impl, i, out, error);
}

gboolean
sieve_runtime_sgd_step(SieveRuntime *rt, const SieveSgd *sgd, GError **error)
{
  if (!rt->backward_done || !rt->grads_done) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "an SGD step needs a backward pass first%s",
                rt->backward_done ? " (the last one was input-only: no parameter gradients)" : "");
    return FALSE;
  }
  return rt->klass->sgd_step(rt->impl, sgd, error);
}

guint64
sieve_runtime_memory_bytes(const SieveRuntime *rt)
{
  return rt->klass->memory_bytes(rt->impl);
}

/* Kaiming-style initial values as PyTorch draws them by default
 * (kaiming_uniform_ with a = sqrt(5); He et al. 2015, "Delving deep into
 * rectifiers"): convolution and linear weights and biases U(-b, b) with
 * b = 1/sqrt(fan_in); batch norm gamma 1, beta 0.  The gain sqrt(2) of
 * He's ReLU derivation is deliberately not used: with batch norm after every convolution the scale of a weight does
 * not change the function, only the effective learning rate (lr/|w|^2), and
 * PyTorch's smaller weights are what NAS training recipes were tuned with. */
void
sieve__param_initial(const SieveGraph *graph, const SieveParamInfo *info, SieveRng *rng, float *out)
{
  const SieveGraphNode *n = sieve_graph_node(graph, info->node);
  if (n->kind == SIEVE_OP_BATCH_NORM) {
    for (guint64 k = 0; k < info->size; k++)
      out[k] = g_str_equal(info->name, "gamma") ? 1.0f : 0.0f;
    return;
  }
  SieveShape is = sieve_graph_node(graph, n->inputs[0])->shape;
  double fan_in = n->kind == SIEVE_OP_CONV2D ? (double)is.c / n->attrs.groups * n->attrs.kernel[0] * n->attrs.kernel[1]
                                             : (double)is.c * is.h * is.w;
  double root = sqrt(fan_in);
  for (guint64 k = 0; k < info->size; k++)
    out[k] = (float)((2 * sieve_rng_uniform(rng) - 1) / root);
}

const char *
sieve__node_desc(const SieveGraph *graph, guint v)
{
  static GPrivate buf = G_PRIVATE_INIT(g_free);
  const SieveGraphNode *n = sieve_graph_node(graph, v);
  char *s = n->label ? g_strdup_printf("node %u (%s \"%s\")", v, sieve_op_kind_name(n->kind), n->label)
                     : g_strdup_printf("node %u (%s)", v, sieve_op_kind_name(n->kind));
  g_private_replace(&buf, s);
  return s;
}

gboolean
sieve__node_keeps_zero(const SieveGraphNode *node)
{
  switch (node->kind) {
  case SIEVE_OP_POOL:
  case SIEVE_OP_GLOBAL_AVG_POOL:
  case SIEVE_OP_CROP:
    return TRUE;
  case SIEVE_OP_ACTIVATION:
    /* sigmoid(0) = hard_sigmoid(0) = 1/2; every other one maps 0 to 0. */
    return node->attrs.activation != SIEVE_ACT_SIGMOID && node->attrs.activation != SIEVE_ACT_HARD_SIGMOID;
  default:
    return FALSE;
  }
}
