/* sieve: inference latency measured here (sieve/latency.h says the protocol). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sieve/latency.h>

#include "runtime/runtime-private.h"

void
sieve_latency_options_init(SieveLatencyOptions *options)
{
  g_return_if_fail(options != NULL);
  *options = (SieveLatencyOptions){.batch = 1, .threads = 1, .warmup = 10, .min_runs = 20, .max_runs = 1000,
                                   .rel_ci = 0.02, .max_seconds = 2};
}

void
sieve_latency_options_read(const SieveOptions *options, SieveLatencyOptions *out)
{
  g_return_if_fail(options != NULL && out != NULL);
  sieve_latency_options_init(out);
  out->batch = (guint) sieve_options_get_int(options, "batch");
  out->threads = (guint) sieve_options_get_int(options, "threads");
  out->warmup = (guint) sieve_options_get_int(options, "warmup");
  out->min_runs = (guint) sieve_options_get_int(options, "min_runs");
  out->max_runs = (guint) MAX(sieve_options_get_int(options, "max_runs"), out->min_runs);
  out->rel_ci = sieve_options_get_double(options, "rel_ci");
  out->max_seconds = sieve_options_get_double(options, "max_seconds");
}

/* Nanoseconds of CLOCK_MONOTONIC: g_get_monotonic_time's microseconds are
 * too coarse for one small operation. */
static gint64
clock_ns(clockid_t clock)
{
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (gint64) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static gint64
now_ns(void)
{
  return clock_ns(CLOCK_MONOTONIC);
}

static int
compare_double(const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

/* Linear interpolation between order statistics (Hyndman & Fan type 7,
 * numpy's default) of sorted[0..n). */
static double
quantile(const double *sorted, guint n, double q)
{
  double h = (n - 1) * q;
  guint lo = (guint) floor(h);
  guint hi = MIN(lo + 1, n - 1);
  return sorted[lo] + (h - lo) * (sorted[hi] - sorted[lo]);
}

/* Median, IQR and the median's distribution-free 95% confidence interval:
 * the order statistics at n/2 -+ 1.96 sqrt(n)/2 (the binomial(n, 1/2)
 * count below the median, in its normal approximation). */
static void
summarise(GArray *times, SieveLatency *out)
{
  guint n = times->len;
  g_autofree double *sorted = g_memdup2(times->data, sizeof(double) * n);
  qsort(sorted, n, sizeof(double), compare_double);
  out->median_ms = quantile(sorted, n, 0.5);
  out->iqr_ms = quantile(sorted, n, 0.75) - quantile(sorted, n, 0.25);
  double half = 0.98 * sqrt((double) n);
  gint lo = (gint) floor(n / 2.0 - half), hi = (gint) ceil(n / 2.0 + half);
  out->ci_low_ms = sorted[CLAMP(lo, 0, (gint) n - 1)];
  out->ci_high_ms = sorted[CLAMP(hi, 0, (gint) n - 1)];
  out->runs = n;
}

/* What a forward finds in the caches inside a network: its input just
 * written by its producer (hot), its weights last touched one forward ago,
 * since when the rest of the network's parameters and activations went
 * through the core's private caches (cold).  An operation timed alone in a
 * loop finds its weights hot instead, and undercounts a network by what
 * those loads cost (on this project's machine a 3x3 convolution of 64
 * channels, 147 KB of weights, took 0.053 ms alone and 0.079 ms inside a
 * NAS-Bench-201 network).  So between two timed forwards of an operation
 * the private caches are flushed by reading a buffer of twice the largest
 * of them (untimed); the producer inside the timed forward then makes the
 * input hot again, as in the network.  That holds for a network whose
 * parameters do not fit those caches; one whose do (a small mobilenet at
 * 28x28: a quarter of the L2) runs request after request with everything
 * hot, and flushed entries charged it 2.5 to 3.5 times its measured
 * latency, so the latency table asks for such entries unflushed
 * (sieve__latency_measure_nodes_caches; engine/latency-table.c picks). */
typedef struct {
  volatile const guint8 *bytes;
  gsize size;
} Evict;

gsize
sieve__latency_private_cache_bytes(void)
{
  gsize best = 0;
  for (guint i = 0; i < 8; i++) {
    g_autofree char *level = NULL, *size = NULL;
    g_autofree char *lp = g_strdup_printf("/sys/devices/system/cpu/cpu0/cache/index%u/level", i);
    g_autofree char *sp = g_strdup_printf("/sys/devices/system/cpu/cpu0/cache/index%u/size", i);
    if (!g_file_get_contents(lp, &level, NULL, NULL) || !g_file_get_contents(sp, &size, NULL, NULL))
      break;
    char *end = NULL;
    guint64 n = g_ascii_strtoull(size, &end, 10);
    if (end && *end == 'K')
      n <<= 10;
    else if (end && *end == 'M')
      n <<= 20;
    if (atoi(level) <= 2)
      best = MAX(best, (gsize) n);
  }
  return best ? best : (gsize) 1 << 20;
}

static void
evict_run(const Evict *e)
{
  if (e == NULL)
    return;
  guint sum = 0;
  for (gsize i = 0; i < e->size; i += 64) /* one read per cache line: reads leave no dirty lines to write back */
    sum += e->bytes[i];
  (void) sum;
}

/* Times forwards of rts[0..n) (rts[r] reading xs[r]) in turn, one timed
 * forward of each per run, so that a change of the machine's load in the
 * middle moves them all alike; until each median's CI is narrower than
 * rel_ci of it, or max_runs or max_seconds.  rewarm: each timed forward
 * follows an untimed one of the same network, so that it finds the caches
 * as back-to-back requests to that network leave them (sieve_latency_measure's
 * state), not as the other networks of the round left them; each run
 * starts one network further on, so that no network always follows the
 * same one. */
static gboolean
time_forwards(SieveRuntime **rts, guint n, const float *const *xs, const SieveLatencyOptions *o,
              const Evict *evict, gboolean rewarm, SieveLatency *out, GError **error)
{
  for (guint i = 0; i < o->warmup; i++)
    for (guint r = 0; r < n; r++) {
      evict_run(evict);
      if (!sieve_runtime_forward(rts[r], xs[r], NULL, SIEVE_MODE_EVAL, error))
        return FALSE;
    }
  g_autofree GArray **times = g_new0(GArray *, n);
  g_autofree GArray **cpu = g_new0(GArray *, n);
  for (guint r = 0; r < n; r++) {
    times[r] = g_array_new(FALSE, FALSE, sizeof(double));
    cpu[r] = g_array_new(FALSE, FALSE, sizeof(double));
  }
  gboolean ok = TRUE;
  gint64 start = now_ns();
  guint max_runs = MAX(o->max_runs, o->min_runs);
  while (ok && times[0]->len < max_runs) {
    guint round = MIN(MAX(o->min_runs, 1u), max_runs - times[0]->len);
    for (guint i = 0; ok && i < round; i++) {
      guint first = rewarm ? times[0]->len % n : 0;
      for (guint k = 0; ok && k < n; k++) {
        guint r = (first + k) % n;
        if (rewarm && !sieve_runtime_forward(rts[r], xs[r], NULL, SIEVE_MODE_EVAL, error)) {
          ok = FALSE;
          break;
        }
        evict_run(evict);
        gint64 c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), t0 = now_ns();
        ok = sieve_runtime_forward(rts[r], xs[r], NULL, SIEVE_MODE_EVAL, error);
        double ms = (now_ns() - t0) / 1e6, cpu_ms = (clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / 1e6;
        g_array_append_val(times[r], ms);
        g_array_append_val(cpu[r], cpu_ms);
      }
    }
    if (!ok)
      break;
    gboolean narrow = TRUE;
    for (guint r = 0; r < n; r++) {
      summarise(times[r], &out[r]);
      narrow = narrow && out[r].ci_high_ms - out[r].ci_low_ms <= o->rel_ci * out[r].median_ms;
    }
    if (narrow || (now_ns() - start) / 1e9 >= o->max_seconds)
      break;
  }
  for (guint r = 0; r < n; r++) {
    if (ok) {
      out[r].memory_bytes = sieve_runtime_memory_bytes(rts[r]);
      qsort(cpu[r]->data, cpu[r]->len, sizeof(double), compare_double);
      out[r].cpu_median_ms = quantile((const double *) cpu[r]->data, cpu[r]->len, 0.5);
    }
    g_array_unref(times[r]);
    g_array_unref(cpu[r]);
  }
  return ok;
}

/* A fixed input: the values do not change how long dense kernels take, as
 * long as they are normal numbers (no denormals). */
static float *
make_input(const SieveGraph *graph, guint batch)
{
  SieveShape s = sieve_graph_node(graph, sieve_graph_input_node(graph))->shape;
  gsize n = (gsize) batch * s.c * s.h * s.w;
  float *x = g_new(float, n);
  for (gsize i = 0; i < n; i++)
    x[i] = (float) (((i * 2654435761u) >> 16) & 1023) / 512.0f - 1.0f + 1.0f / 1024;
  return x;
}

/* graphs[0..n) compiled for inference by the options into *rts, each with
 * its input (make_input) in *inputs, index for index. */
static gboolean
compile_all(const SieveGraph *const *graphs, guint n, const SieveLatencyOptions *options, GPtrArray **rts,
            GPtrArray **inputs, GError **error)
{
  SieveRuntimeOptions ro = {.batch = MAX(options->batch, 1u), .threads = options->threads, .seed = 1};
  *rts = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_runtime_free);
  *inputs = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < n; i++) {
    SieveRuntime *rt = sieve_runtime_new(graphs[i], &ro, error);
    if (rt == NULL)
      return FALSE;
    g_ptr_array_add(*rts, rt);
    g_ptr_array_add(*inputs, make_input(graphs[i], ro.batch));
  }
  return TRUE;
}

/* graphs[0..n) timed in turn (time_forwards), sharing one input shape. */
static gboolean
measure_many(const SieveGraph *const *graphs, guint n, const SieveLatencyOptions *options, gboolean rewarm,
             SieveLatency *out, GError **error)
{
  memset(out, 0, n * sizeof *out);
  SieveShape in = sieve_graph_node(graphs[0], sieve_graph_input_node(graphs[0]))->shape;
  for (guint i = 0; i < n; i++) {
    guint output = sieve_graph_output(graphs[i]);
    if (output != SIEVE_NODE_INVALID && sieve_graph_node(graphs[i], output)->kind == SIEVE_OP_SOFTMAX_CE) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH,
                  "graph %s ends in a loss: latency is measured on the network that serves requests (its logits)",
                  sieve_graph_name(graphs[i]));
      return FALSE;
    }
    SieveShape s = sieve_graph_node(graphs[i], sieve_graph_input_node(graphs[i]))->shape;
    if (s.c != in.c || s.h != in.h || s.w != in.w) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH, "graph %s takes %ux%ux%u inputs, graph %s %ux%ux%u: "
                  "networks measured in turn share one input", sieve_graph_name(graphs[i]), s.c, s.h, s.w,
                  sieve_graph_name(graphs[0]), in.c, in.h, in.w);
      return FALSE;
    }
  }
  g_autoptr(GPtrArray) rts = NULL, inputs = NULL;
  return compile_all(graphs, n, options, &rts, &inputs, error) &&
         time_forwards((SieveRuntime **) rts->pdata, n, (const float *const *) inputs->pdata, options, NULL, rewarm,
                       out, error);
}

gboolean
sieve_latency_measure(const SieveGraph *graph, const SieveLatencyOptions *options, SieveLatency *out,
                      GError **error)
{
  g_return_val_if_fail(graph != NULL && options != NULL && out != NULL, FALSE);
  return measure_many(&graph, 1, options, FALSE, out, error);
}

gboolean
sieve_latency_measure_together(const SieveGraph *const *graphs, guint n, const SieveLatencyOptions *options,
                               SieveLatency *out, GError **error)
{
  g_return_val_if_fail((graphs != NULL || n == 0) && options != NULL && (out != NULL || n == 0), FALSE);
  if (n == 0)
    return TRUE;
  /* max_seconds and max_runs are each network's, as if measured alone. */
  SieveLatencyOptions o = *options;
  o.max_seconds = options->max_seconds * n;
  return measure_many(graphs, n, &o, n > 1, out, error);
}

/* What the CPU runtime folds away at compile time (runtime/cpu/cpu-plan.c),
 * so that the table charges a network for the kernels it really runs: an
 * identity is its input; a zero, and a sum of nothing but zeros, is no
 * tensor; a sum of one non-zero term is that term; a second activation of
 * the same tensor with the same settings is the first one's output; a
 * pool, crop or activation with f(0) = 0 of a zero is a zero. */
typedef struct {
  guint *root;    /* the node whose tensor each node shares */
  gboolean *zero; /* no tensor at all */
  gboolean *live; /* reaches the output */
} Folding;

/* One pass in node order (inputs come before the nodes that read them). */
static void
folding_init(Folding *f, const SieveGraph *graph)
{
  guint n = sieve_graph_n_nodes(graph);
  f->root = g_new(guint, n);
  f->zero = g_new0(gboolean, n);
  f->live = g_new0(gboolean, n);
  guint out = sieve_graph_output(graph);
  if (out != SIEVE_NODE_INVALID)
    f->live[out] = TRUE;
  for (guint v = n; v-- > 0;) /* nodes only read earlier nodes: one backward sweep */
    for (guint i = 0; f->live[v] && i < sieve_graph_node(graph, v)->n_inputs; i++)
      f->live[sieve_graph_node(graph, v)->inputs[i]] = TRUE;
  for (guint v = 0; v < n; v++) {
    const SieveGraphNode *node = sieve_graph_node(graph, v);
    f->root[v] = v;
    if (node->kind == SIEVE_OP_ZERO) {
      f->zero[v] = TRUE;
    } else if (node->kind == SIEVE_OP_IDENTITY) {
      f->root[v] = f->root[node->inputs[0]];
      f->zero[v] = f->zero[node->inputs[0]];
    } else if (node->n_inputs == 1 && sieve__node_keeps_zero(node)) {
      f->zero[v] = f->zero[node->inputs[0]]; /* as the runtime folds it (runtime-private.h) */
    } else if (node->kind == SIEVE_OP_ADD) {
      guint terms = 0, last = v;
      for (guint i = 0; i < node->n_inputs; i++)
        if (!f->zero[node->inputs[i]]) {
          terms++;
          last = node->inputs[i];
        }
      f->zero[v] = terms == 0;
      if (terms == 1)
        f->root[v] = f->root[last];
    }
  }
}

static void
folding_clear(Folding *f)
{
  g_free(f->root);
  g_free(f->zero);
  g_free(f->live);
}

/* The inputs a node's kernel reads: a sum skips its zero terms; any other
 * operation reads its input, zero or not (the runtime makes a zero tensor). */
static guint
live_inputs(const SieveGraph *graph, const SieveGraphNode *n, guint *out)
{
  Folding f = {NULL, NULL, NULL};
  if (n->kind == SIEVE_OP_ADD)
    folding_init(&f, graph);
  guint k = 0;
  for (guint i = 0; i < n->n_inputs; i++)
    if (n->kind != SIEVE_OP_ADD || !f.zero[n->inputs[i]])
      out[k++] = n->inputs[i];
  folding_clear(&f);
  return k;
}

static gboolean
node_free(const SieveGraph *graph, const Folding *f, guint node)
{
  const SieveGraphNode *n = sieve_graph_node(graph, node);
  if (f->zero[node])
    return TRUE; /* no tensor: nothing runs */
  switch (n->kind) {
  case SIEVE_OP_IDENTITY:
  case SIEVE_OP_ZERO:
  case SIEVE_OP_SOFTMAX_CE:
    return TRUE;
  case SIEVE_OP_ADD: {
    guint terms = 0;
    for (guint i = 0; i < n->n_inputs; i++)
      terms += !f->zero[n->inputs[i]];
    return terms <= 1;
  }
  case SIEVE_OP_ACTIVATION: {
    guint r = f->root[n->inputs[0]];
    for (guint w = 0; w < node; w++) {
      const SieveGraphNode *y = sieve_graph_node(graph, w);
      if (y->kind == SIEVE_OP_ACTIVATION && f->live[w] && y->attrs.activation == n->attrs.activation &&
          y->attrs.alpha == n->attrs.alpha && f->root[y->inputs[0]] == r)
        return TRUE;
    }
    return FALSE;
  }
  default:
    return FALSE;
  }
}

gboolean
sieve_latency_node_is_free(const SieveGraph *graph, guint node)
{
  g_return_val_if_fail(graph != NULL && node < sieve_graph_n_nodes(graph), TRUE);
  Folding f;
  folding_init(&f, graph);
  gboolean free_node = node_free(graph, &f, node);
  folding_clear(&f);
  return free_node;
}

GPtrArray *
sieve_latency_node_keys(const SieveGraph *graph)
{
  g_return_val_if_fail(graph != NULL, NULL);
  guint n = sieve_graph_n_nodes(graph);
  GPtrArray *keys = g_ptr_array_new_full(n, g_free);
  Folding f;
  folding_init(&f, graph);
  for (guint v = 0; v < n; v++)
    g_ptr_array_add(keys, f.live[v] && !node_free(graph, &f, v) ? sieve_latency_node_key(graph, v) : NULL);
  folding_clear(&f);
  return keys;
}

static void
append_shape(GString *s, SieveShape shape)
{
  g_string_append_printf(s, " %ux%ux%u", shape.c, shape.h, shape.w);
}

char *
sieve_latency_node_key(const SieveGraph *graph, guint node)
{
  g_return_val_if_fail(graph != NULL && node < sieve_graph_n_nodes(graph), NULL);
  const SieveGraphNode *n = sieve_graph_node(graph, node);
  const SieveOpAttrs *a = &n->attrs;
  GString *s = g_string_new(sieve_op_kind_name(n->kind));
  if (n->kind == SIEVE_OP_INPUT)
    append_shape(s, n->shape);
  g_autofree guint *ins = g_new(guint, n->n_inputs + 1);
  guint k = live_inputs(graph, n, ins);
  for (guint i = 0; i < k; i++)
    append_shape(s, sieve_graph_node(graph, ins[i])->shape);
  /* Every attribute that is set: the fields an operation does not use are
   * zero (graph.h), so this names each kernel's settings without a list
   * per kind, and a kind added later gets a key too. */
  if (a->out_channels)
    g_string_append_printf(s, " out=%u", a->out_channels);
  if (a->kernel[0] || a->kernel[1])
    g_string_append_printf(s, " k=%ux%u", a->kernel[0], a->kernel[1]);
  if (a->stride[0] || a->stride[1])
    g_string_append_printf(s, " s=%ux%u", a->stride[0], a->stride[1]);
  if (a->pad[0] || a->pad[1])
    g_string_append_printf(s, " p=%ux%u", a->pad[0], a->pad[1]);
  if (a->dilation[0] > 1 || a->dilation[1] > 1)
    g_string_append_printf(s, " d=%ux%u", a->dilation[0], a->dilation[1]);
  if (a->groups > 1)
    g_string_append_printf(s, " g=%u", a->groups);
  if (a->bias)
    g_string_append(s, " bias");
  if (a->affine)
    g_string_append(s, " affine");
  if (n->kind == SIEVE_OP_ACTIVATION)
    g_string_append_printf(s, " %s", sieve_activation_name(a->activation));
  if (a->alpha != 0)
    g_string_append_printf(s, " alpha=%g", a->alpha);
  if (n->kind == SIEVE_OP_POOL)
    g_string_append(s, a->pool == SIEVE_POOL_MAX ? " max" : " avg");
  return g_string_free(s, FALSE);
}

/* input of shape -> identity: what a network pays once per forward besides
 * its operations (the call, the input's copy into the runtime). */
static gboolean
measure_bare(SieveShape shape, const SieveLatencyOptions *options, SieveLatency *out, GError **error)
{
  g_autoptr(SieveGraph) g = sieve_graph_new("latency-bare");
  guint x = sieve_graph_input(g, shape.c, shape.h, shape.w);
  guint y = sieve_graph_identity(g, x);
  return sieve_graph_finish(g, y, error) && sieve_latency_measure(g, options, out, error);
}

/* The operation's input as a network hands it over: the output of a
 * convolution, in the layout the backend picks for it (oneDNN: blocked,
 * nChw8c/16c), not the plain NCHW of a graph's input, which some kernels
 * (oneDNN's pooling) read several times slower.  A 1x1 convolution that
 * keeps the shape produces it; the base graph has it too, so it cancels. */
static guint
produced(SieveGraph *g, SieveShape shape)
{
  guint x = sieve_graph_input(g, shape.c, shape.h, shape.w);
  return sieve_graph_conv2d(g, x, shape.c, 1, 1, 0, FALSE);
}

/* The graphs an operation is timed with: producer -> the node's operation
 * (*op) and producer -> identity (*base).  Inputs of different shapes (a
 * concat of branches of different widths) are read as k inputs of their
 * mean channel count, the same bytes moved: the graph has one input. */
static gboolean
node_graphs(const SieveGraph *graph, guint node, SieveGraph **op, SieveGraph **base, GError **error)
{
  const SieveGraphNode *n = sieve_graph_node(graph, node);
  g_autofree guint *ins = g_new(guint, n->n_inputs + 1);
  guint k = live_inputs(graph, n, ins);
  SieveShape shape = sieve_graph_node(graph, ins[0])->shape;
  guint channels = 0;
  gboolean same = TRUE;
  for (guint i = 0; i < k; i++) {
    SieveShape si = sieve_graph_node(graph, ins[i])->shape;
    channels += si.c;
    same = same && si.c == shape.c && si.h == shape.h && si.w == shape.w;
  }
  if (!same)
    shape.c = (channels + k - 1) / k;
  g_autoptr(SieveGraph) g = sieve_graph_new("latency-op");
  g_autoptr(SieveGraph) b = sieve_graph_new("latency-op-base");
  guint x = produced(g, shape);
  g_autofree guint *xs = g_new(guint, k);
  for (guint i = 0; i < k; i++)
    xs[i] = x;
  SieveOpAttrs attrs = n->attrs;
  guint y = sieve_graph_add(g, n->kind, xs, k, &attrs);
  guint z = sieve_graph_identity(b, produced(b, shape));
  if (!sieve_graph_finish(g, y, error) || !sieve_graph_finish(b, z, error)) {
    g_prefix_error(error, "measuring %s: ", sieve_op_kind_name(n->kind));
    return FALSE;
  }
  *op = g_steal_pointer(&g);
  *base = g_steal_pointer(&b);
  return TRUE;
}

/* Each pair (producer -> operation, producer -> identity) of pairs[0..2n)
 * timed in turn, all pairs in one round (a load that changes midway moves
 * every one alike); cold: each forward after the private caches are
 * flushed (Evict: the operation's weights cold, its input hot, as inside a
 * network that does not fit them), else each right after an untimed
 * forward of its own graph (all of it hot, as in a network that fits
 * them); out[i] is the operation of pair i, less its base. */
static gboolean
measure_pairs(SieveGraph **pairs, guint n, const SieveLatencyOptions *options, gboolean cold, SieveLatency *out,
              GError **error)
{
  g_autoptr(GPtrArray) rts = NULL, inputs = NULL;
  if (!compile_all((const SieveGraph *const *) pairs, 2 * n, options, &rts, &inputs, error))
    return FALSE;
  Evict e = {.size = 2 * sieve__latency_private_cache_bytes()};
  g_autofree guint8 *buffer = g_malloc0(e.size);
  e.bytes = buffer;
  g_autofree SieveLatency *both = g_new0(SieveLatency, 2 * n);
  /* max_seconds is each operation's budget, as if measured alone. */
  SieveLatencyOptions o = *options;
  o.max_seconds = options->max_seconds * n;
  if (!time_forwards((SieveRuntime **) rts->pdata, 2 * n, (const float *const *) inputs->pdata, &o,
                     cold ? &e : NULL, !cold, both, error))
    return FALSE;
  for (guint i = 0; i < n; i++) {
    const SieveLatency *bare = &both[2 * i + 1];
    out[i] = both[2 * i];
    out[i].median_ms -= bare->median_ms;
    out[i].cpu_median_ms -= bare->cpu_median_ms;
    out[i].ci_low_ms -= bare->median_ms;
    out[i].ci_high_ms -= bare->median_ms;
  }
  return TRUE;
}

gboolean
sieve_latency_measure_nodes(const SieveGraph *const *graphs, const guint *nodes, guint n,
                            const SieveLatencyOptions *options, SieveLatency *out, GError **error)
{
  return sieve__latency_measure_nodes_caches(graphs, nodes, n, options, TRUE, out, error);
}

gboolean
sieve__latency_measure_nodes_caches(const SieveGraph *const *graphs, const guint *nodes, guint n,
                                    const SieveLatencyOptions *options, gboolean cold, SieveLatency *out,
                                    GError **error)
{
  g_return_val_if_fail((n == 0 || (graphs != NULL && nodes != NULL && out != NULL)) && options != NULL, FALSE);
  for (guint i = 0; i < n; i++)
    g_return_val_if_fail(graphs[i] != NULL && nodes[i] < sieve_graph_n_nodes(graphs[i]), FALSE);
  if (n == 0)
    return TRUE;
  memset(out, 0, n * sizeof *out);
  g_autoptr(GPtrArray) pairs = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_graph_free);
  g_autofree guint *which = g_new(guint, n + 1); /* out index of each pair */
  guint m = 0;
  for (guint i = 0; i < n; i++) {
    const SieveGraphNode *node = sieve_graph_node(graphs[i], nodes[i]);
    if (node->kind == SIEVE_OP_INPUT) {
      /* input -> identity: what a network pays once per forward besides
       * its operations (the call, the input's copy into the runtime). */
      if (!measure_bare(node->shape, options, &out[i], error))
        return FALSE;
      continue;
    }
    if (sieve_latency_node_is_free(graphs[i], nodes[i]))
      continue;
    SieveGraph *op, *base;
    if (!node_graphs(graphs[i], nodes[i], &op, &base, error))
      return FALSE;
    g_ptr_array_add(pairs, op);
    g_ptr_array_add(pairs, base);
    which[m++] = i;
  }
  g_autofree SieveLatency *got = g_new0(SieveLatency, m + 1);
  if (m > 0 && !measure_pairs((SieveGraph **) pairs->pdata, m, options, cold, got, error))
    return FALSE;
  for (guint j = 0; j < m; j++)
    out[which[j]] = got[j];
  return TRUE;
}

gboolean
sieve_latency_measure_node(const SieveGraph *graph, guint node, const SieveLatencyOptions *options,
                           SieveLatency *out, GError **error)
{
  g_return_val_if_fail(graph != NULL && node < sieve_graph_n_nodes(graph) && options != NULL && out != NULL,
                       FALSE);
  return sieve_latency_measure_nodes(&graph, &node, 1, options, out, error);
}

/* The CPU's model as /proc/cpuinfo names it ("unknown" elsewhere). */
static char *
cpu_model(void)
{
  g_autofree char *text = NULL;
  if (g_file_get_contents("/proc/cpuinfo", &text, NULL, NULL)) {
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i]; i++)
      if (g_str_has_prefix(lines[i], "model name")) {
        const char *colon = strchr(lines[i], ':');
        if (colon)
          return g_strstrip(g_strdup(colon + 1));
      }
  }
  return g_strdup("unknown");
}

char *
sieve_latency_machine(const SieveLatencyOptions *options)
{
  g_return_val_if_fail(options != NULL, NULL);
  g_autofree char *cpu = cpu_model();
  g_autofree char *threads = options->threads ? g_strdup_printf("%u", options->threads)
                                              : g_strdup_printf("all (%u)", g_get_num_processors());
  /* kernels: the revision of what sieve runs around the library (its own
   * max pool, fused batch norm + ReLU, folded zeros: 2); raised whenever
   * that changes, so that a store measured before measures again. */
  return g_strdup_printf("host=%s\ncpu=%s\nlibrary=%s\nkernels=2\nthreads=%s\nbatch=%u\n", g_get_host_name(), cpu,
                         sieve__cpu_library(), threads, MAX(options->batch, 1u));
}
