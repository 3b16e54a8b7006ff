/* The CUDA backend: finding the GPU, compiling (cuda-plan.c's passes, the
 * arena, initial values), destroying, the class table. */
#include <string.h>

#include "runtime/cuda/cuda-private.h"

gboolean
sieve__cuda_available(char **why)
{
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    if (why)
      *why = g_strdup(e != cudaSuccess ? cudaGetErrorString(e) : "the driver sees no GPU");
    (void)cudaGetLastError();
    return FALSE;
  }
  return TRUE;
}

static void
cuda_destroy(gpointer impl)
{
  Cu *c = impl;
  if (!c)
    return;
  if (c->stream)
    cudaStreamSynchronize(c->stream);
  if (c->profile)
    sieve__cuda_profile_print(c);
  for (guint k = 0; c->marks && k <= c->n_order; k++)
    cudaEventDestroy(c->marks[k]);
  g_free(c->marks);
  g_free(c->prof_node[0]);
  g_free(c->prof_node[1]);
  for (int s = 0; s < N_SEQ; s++)
    if (c->exec[s])
      cudaGraphExecDestroy(c->exec[s]);
  sieve__cuda_plan_free(c);
  gboolean idle = TRUE;
  if (c->lane) {
    sieve__cuda_release(c->lane, c->arena);
    sieve__cuda_release(c->lane, c->reduce);
    /* Waits for the stream: the staging buffer is idle after it. */
    idle = sieve__cuda_lane_give(c->lane);
  }
  if (idle)
    sieve__cuda_pinned_give(c->staging, c->staging_cap);
  else if (c->staging)
    cudaFreeHost(c->staging);
  g_free(c->mirror[MIRROR_VALUES]);
  g_free(c->mirror[MIRROR_GRADS]);
  g_free(c->written);
  g_free(c->written_seq[0]);
  g_free(c->written_seq[1]);
  g_free(c->describe);
  sieve_graph_free(c->graph);
  g_free(c);
}

static gboolean
fill(Cu *c, gint buf, float value, gsize n, GError **error)
{
  sieve__cu_fill(c->stream, cu_ptr(c, buf), value, n);
  CU_TRY(cudaGetLastError(), "filling a buffer");
  return TRUE;
}

/* Initial values as every backend draws them (sieve__param_initial),
 * momentum 0, running mean 0 and variance 1, the constant tensors. */
static gboolean
init(Cu *c, GError **error)
{
  SieveRng rng;
  sieve_rng_seed(&rng, c->options.seed);
  gsize pf = MAX(c->n_param_floats, 1);
  g_autofree float *host = g_new0(float, pf);
  for (guint i = 0; i < c->params->len; i++) {
    Param *p = &g_array_index(c->params, Param, i);
    sieve__param_initial(c->graph, &p->info, &rng, host + p->offset);
  }
  /* Everything on the runtime's own stream, which does not wait for the
   * legacy one; the sync at the end makes host's buffer free again. */
  CU_TRY(cudaMemcpyAsync(cu_ptr(c, c->values), host, pf * sizeof(float), cudaMemcpyHostToDevice, c->stream),
         "initial values");
  CU_TRY(cudaMemsetAsync(cu_ptr(c, c->grads), 0, pf * sizeof(float), c->stream), "clearing gradients");
  CU_TRY(cudaMemsetAsync(cu_ptr(c, c->velocity), 0, pf * sizeof(float), c->stream), "clearing velocities");
  if (c->labels >= 0)
    CU_TRY(cudaMemsetAsync(cu_ptr(c, c->labels), 0, c->options.batch * sizeof(gint32), c->stream),
           "clearing labels");
  for (guint v = 0; v < c->n_nodes; v++) {
    CNode *x = &c->nodes[v];
    if (x->role == ROLE_ZERO_BUF && !fill(c, x->out, 0, x->elems, error))
      return FALSE;
    if (x->rmean >= 0 && (!fill(c, x->rmean, 0, x->n->shape.c, error) || !fill(c, x->rvar, 1, x->n->shape.c, error)))
      return FALSE;
  }
  return sieve__cuda_sync(c, error);
}

static gpointer
cuda_compile(const SieveGraph *graph, const SieveRuntimeOptions *options, GError **error)
{
  g_autofree char *why = NULL;
  if (!sieve__cuda_available(&why)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "no CUDA device (%s)", why);
    return NULL;
  }
  const char *precision = options->precision ? options->precision : "tf32";
  if (!g_str_equal(precision, "tf32") && !g_str_equal(precision, "fp32")) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "unknown precision \"%s\" (expected tf32 or fp32)", precision);
    return NULL;
  }
  Cu *c = g_new0(Cu, 1);
  c->graph = sieve_graph_copy(graph);
  c->options = *options;
  c->strict_fp32 = g_str_equal(precision, "fp32");
  c->n_nodes = sieve_graph_n_nodes(c->graph);
  c->nodes = g_new0(CNode, c->n_nodes);
  c->graphs = g_getenv("SIEVE_CUDA_GRAPHS") == NULL || !g_str_equal(g_getenv("SIEVE_CUDA_GRAPHS"), "0");
  c->written = g_new0(gboolean, c->n_nodes);
  c->written_seq[0] = g_new0(gboolean, c->n_nodes);
  c->written_seq[1] = g_new0(gboolean, c->n_nodes);
  /* SIEVE_CUDA_PROFILE=1: where compiling goes, printed with the passes */
  gint64 t0 = g_get_monotonic_time();
#define LAP(k)                                                                                                     \
  G_STMT_START {                                                                                                   \
    gint64 t_ = g_get_monotonic_time();                                                                            \
    c->prof_compile[k] = (t_ - t0) / 1e3;                                                                          \
    t0 = t_;                                                                                                       \
  }                                                                                                                \
  G_STMT_END
  SieveCudaDevice dev;
  gboolean got = sieve__cuda_device_info(&dev, error);
  LAP(0);
  if (!got || !sieve__cuda_lane_take(&c->lane, error)) {
    cuda_destroy(c);
    return NULL;
  }
  c->stream = c->lane->stream;
  c->cudnn = c->lane->cudnn;
  c->staged = c->lane->staged;
  sieve__cu_set_multiprocessors(dev.multiprocessors);
  LAP(1);
  if (!sieve__cuda_plan(c, error)) {
    cuda_destroy(c);
    return NULL;
  }
  c->options.keep = NULL; /* read during compilation only */
  c->options.n_keep = 0;
  LAP(2);
  gsize free_b = sieve__cuda_free_bytes();
  if (!sieve__cuda_alloc(c->lane, c->arena_bytes, (void **)&c->arena)) {
    sieve__cuda_oom(c, free_b, error);
    cuda_destroy(c);
    return NULL;
  }
  LAP(3);
  c->profile = g_strcmp0(g_getenv("SIEVE_CUDA_PROFILE"), "1") == 0;
  if (c->profile) {
    c->marks = g_new0(cudaEvent_t, c->n_order + 1);
    c->prof_node[0] = g_new0(double, c->n_order);
    c->prof_node[1] = g_new0(double, c->n_order);
    for (guint k = 0; k <= c->n_order; k++)
      cudaEventCreate(&c->marks[k]);
  }
  CNode *in = &c->nodes[c->input];
  c->staging_bytes = MAX(in->elems * sizeof(float) + c->options.batch * sizeof(gint32),
                         MAX(c->nodes[c->output].elems * sizeof(float), sizeof(SieveCuSgd)));
  c->staging = sieve__cuda_pinned_take(c->staging_bytes, &c->staging_cap);
  if (c->staging == NULL) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "out of pinned host memory (%zu bytes)", c->staging_bytes);
    cuda_destroy(c);
    return NULL;
  }
  LAP(4);
  if (!init(c, error)) {
    cuda_destroy(c);
    return NULL;
  }
  LAP(5);
#undef LAP
  /* cuDNN 9 numbers itself MMmmpp, cuDNN 8 Mmpp */
  size_t v = cudnnGetVersion();
  size_t major = v >= 90000 ? v / 10000 : v / 1000, minor = v >= 90000 ? v / 100 % 100 : v / 100 % 10;
  c->describe = g_strdup_printf("cuda (%s, cuDNN %zu.%zu.%zu, %s)", dev.name, major, minor, v % 100,
                                c->strict_fp32 ? "strict fp32" : "tf32 convolutions");
  return c;
}

static const char *
cuda_describe(gpointer impl)
{
  return ((Cu *)impl)->describe;
}

/* The arena, the pinned staging buffer, the reads' scratch and the frozen
 * ReLUs' masks (not cuDNN's handle or the CUDA context). */
static guint64
cuda_memory_bytes(gpointer impl)
{
  Cu *c = impl;
  guint64 bytes = c->arena_bytes + c->staging_bytes + c->reduce_bytes;
  for (guint k = 0; k < c->n_order; k++)
    if (c->nodes[c->order[k]].mask)
      bytes += c->nodes[c->order[k]].elems;
  return bytes;
}

const SieveBackendClass sieve_backend_cuda = {
  .name = "cuda",
  .compile = cuda_compile,
  .destroy = cuda_destroy,
  .describe = cuda_describe,
  .forward = sieve__cuda_forward,
  .loss = sieve__cuda_loss,
  .read = sieve__cuda_read,
  .backward = sieve__cuda_backward,
  .read_input_grad = sieve__cuda_read_input_grad,
  .n_params = sieve__cuda_n_params,
  .param_info = sieve__cuda_param_info,
  .get_param = sieve__cuda_get_param,
  .set_param = sieve__cuda_set_param,
  .get_grad = sieve__cuda_get_grad,
  .sgd_step = sieve__cuda_sgd_step,
  .memory_bytes = cuda_memory_bytes,
  .read_grad = sieve__cuda_read_grad,
  .get_running = sieve__cuda_get_running,
  .set_running = sieve__cuda_set_running,
  .freeze = sieve__cuda_freeze,
  .read_signs = sieve__cuda_read_signs,
  .read_channel_dots = sieve__cuda_read_channel_dots,
  .get_velocity = sieve__cuda_get_velocity,
  .set_velocity = sieve__cuda_set_velocity,
};
