/* The CPU backend on oneDNN: compile runs the passes described in
 * cpu-private.h, destroy frees what they built, and the class table at the
 * end is what runtime.c dispatches through. */
#include <math.h>
#include <omp.h>

#include "runtime/runtime-private.h"
#include "runtime/cpu/cpu-private.h"

/* ---- engine ------------------------------------------------------------- */

static dnnl_engine_t
cpu_engine(GError **error)
{
  static dnnl_engine_t engine;
  static dnnl_status_t status = dnnl_success;
  static gsize once;
  if (g_once_init_enter(&once)) {
    status = dnnl_engine_create(&engine, dnnl_cpu, 0);
    g_once_init_leave(&once, 1);
  }
  if (status != dnnl_success) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "oneDNN could not create a CPU engine: %s",
                dnnl_status2str(status));
    return NULL;
  }
  return engine;
}

static guint64
cpu_memory_bytes(gpointer impl)
{
  return ((Cpu *)impl)->bytes;
}

static const char *
cpu_describe(gpointer impl)
{
  return ((Cpu *)impl)->description;
}

static void
cpu_destroy(gpointer impl)
{
  Cpu *c = impl;
  if (!c)
    return;
  if (c->steps)
    g_ptr_array_unref(c->steps);
  for (guint v = 0; v < c->n_nodes; v++) {
    if (c->nodes[v].fwd_pd)
      dnnl_primitive_desc_destroy(c->nodes[v].fwd_pd);
    if (c->nodes[v].plain_pd)
      dnnl_primitive_desc_destroy(c->nodes[v].plain_pd);
    g_free(c->nodes[v].in);
    g_aligned_free(c->nodes[v].mask);
  }
  g_free(c->nodes);
  if (c->arena)
    sieve__cpu_arena_give(c->arena, c->arena_bytes);
  g_clear_pointer(&c->slots, g_array_unref);
  g_clear_pointer(&c->free, g_array_unref);
  g_clear_pointer(&c->pending, g_array_unref);
  g_clear_pointer(&c->fwd_train, g_array_unref);
  g_clear_pointer(&c->fwd_eval, g_array_unref);
  g_clear_pointer(&c->bwd, g_array_unref);
  g_clear_pointer(&c->params, g_array_unref);
  if (c->stream)
    dnnl_stream_destroy(c->stream);
  sieve_graph_free(c->graph);
  g_free(c->keep);
  g_free(c->labels);
  g_free(c->description);
  g_free(c);
}

static gpointer
cpu_compile(const SieveGraph *graph, const SieveRuntimeOptions *options, GError **error)
{
  Cpu *c = g_new0(Cpu, 1);
  c->options = *options;
  c->options.device = NULL;
  c->threads = options->threads ? options->threads : (guint)g_get_num_processors();
  omp_set_num_threads((int)c->threads);
  c->graph = sieve_graph_copy(graph);
  c->n_nodes = sieve_graph_n_nodes(graph);
  c->nodes = g_new0(CNode, c->n_nodes);
  c->input = sieve_graph_input_node(graph);
  c->output = sieve_graph_output(graph);
  c->slots = g_array_new(FALSE, TRUE, sizeof(Slot));
  c->free = g_array_new(FALSE, FALSE, sizeof(int));
  c->pending = g_array_new(FALSE, FALSE, sizeof(int));
  c->steps = g_ptr_array_new_with_free_func(sieve__cpu_step_free);
  c->fwd_train = g_array_new(FALSE, FALSE, sizeof(guint));
  c->fwd_eval = g_array_new(FALSE, FALSE, sizeof(guint));
  c->bwd = g_array_new(FALSE, FALSE, sizeof(guint));
  c->params = g_array_new(FALSE, TRUE, sizeof(Param));
  c->out_grad = -1;
  c->loss = NAN;
  const dnnl_version_t *ver = dnnl_version();
  c->description = g_strdup_printf("cpu (oneDNN %d.%d.%d, %u thread%s)", ver->major, ver->minor, ver->patch,
                                   c->threads, c->threads == 1 ? "" : "s");
  if (!(c->engine = cpu_engine(error)))
    goto fail;
  if (dnnl_stream_create(&c->stream, c->engine, dnnl_stream_default_flags) != dnnl_success) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "oneDNN could not create a CPU stream");
    goto fail;
  }
  sieve__cpu_resolve(c);
  /* The caller's keep list, on the nodes that hold the tensors. */
  c->keep = g_new0(gboolean, c->n_nodes);
  for (guint i = 0; i < options->n_keep; i++) {
    guint v = options->keep[i];
    if (v >= c->n_nodes || c->nodes[v].role == ROLE_DEAD) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "keep: node %u is not part of the graph's live nodes", v);
      goto fail;
    }
    c->keep[sieve__cpu_root(c, v)] = TRUE;
  }
  c->options.keep = NULL;
  c->options.n_keep = 0;
  if (c->nodes[c->input].role == ROLE_DEAD) {
    /* The output does not depend on the input: keep a buffer for it anyway. */
    c->nodes[c->input].role = ROLE_REAL;
  }
  if (!sieve__cpu_plan_forward(c, error))
    goto fail;
  if (options->backward && !sieve__cpu_plan_backward(c, error))
    goto fail;
  if (!sieve__cpu_bind(c, error) || !sieve__cpu_init_params(c, error))
    goto fail;
  return c;
fail:
  cpu_destroy(c);
  return NULL;
}

const SieveBackendClass sieve_backend_cpu = {
  .name = "cpu",
  .compile = cpu_compile,
  .destroy = cpu_destroy,
  .describe = cpu_describe,
  .forward = sieve__cpu_forward,
  .loss = sieve__cpu_loss,
  .read = sieve__cpu_read,
  .backward = sieve__cpu_backward,
  .read_input_grad = sieve__cpu_read_input_grad,
  .n_params = sieve__cpu_n_params,
  .param_info = sieve__cpu_param_info,
  .get_param = sieve__cpu_get_param,
  .set_param = sieve__cpu_set_param,
  .get_grad = sieve__cpu_get_grad,
  .sgd_step = sieve__cpu_sgd_step,
  .get_velocity = sieve__cpu_get_velocity,
  .set_velocity = sieve__cpu_set_velocity,
  .memory_bytes = cpu_memory_bytes,
  .read_grad = sieve__cpu_read_grad,
  .get_running = sieve__cpu_get_running,
  .set_running = sieve__cpu_set_running,
  .freeze = sieve__cpu_freeze,
  .read_signs = sieve__cpu_read_signs,
  .read_channel_dots = sieve__cpu_read_channel_dots,
};

const char *
sieve__cpu_library(void)
{
  static char text[48];
  static gsize done;
  if (g_once_init_enter(&done)) {
    const dnnl_version_t *ver = dnnl_version();
    g_snprintf(text, sizeof text, "oneDNN %d.%d.%d", ver->major, ver->minor, ver->patch);
    g_once_init_leave(&done, 1);
  }
  return text;
}
