/* The zero-cost proxies: their table, name checks, and sieve_proxy_compute,
 * which compiles the network once for everything the named proxies need and
 * runs the passes they share in an order that lets each read what it
 * needs before the next pass overwrites it:
 *
 *   compile (backward when a gradient proxy is named; the input's gradient
 *            for jacob_cov; convolutions, ReLUs or the features kept for
 *            fisher, naswot and zen)
 *   l2_norm: the initial weights' norms
 *   synflow: its double-precision pass over the initial weights
 *   train forward of the batch ........ grad_norm snip plain grasp fisher jacob_cov naswot
 *     naswot reads the ReLUs
 *   backward of the cross-entropy ..... grad_norm snip plain grasp fisher
 *     grad_norm, snip, plain read the weight gradients; fisher the convolutions'
 *   backward of the logits' sum ....... jacob_cov
 *   two forward/backward passes ....... grasp (weights moved, then restored)
 *   zen: N(0,1) weights, two forwards   (changes the weights: last)
 *   gradsign: its own batch-1 runtime
 *   params, flops: the graph's counts
 *
 * Times: each step's wall time is split evenly among the named proxies that
 * use it, so that the times of one call add up to its total. */
#include <math.h>

#include <sieve/rng.h>

#include "proxy/proxy-private.h"

typedef enum {
  P_GRAD_NORM,
  P_SNIP,
  P_PLAIN,
  P_L2_NORM,
  P_GRASP,
  P_FISHER,
  P_JACOB_COV,
  P_NASWOT,
  P_SYNFLOW,
  P_ZEN,
  P_GRADSIGN,
  P_PARAMS,
  P_FLOPS,
  P_N
} ProxyId;

/* What a proxy needs of the shared passes. */
enum {
  USE_RUNTIME = 1 << 0,    /* the network compiled for the batch */
  USE_FORWARD = 1 << 1,    /* a train forward of the batch */
  USE_BACKWARD = 1 << 2,   /* the cross-entropy's backward */
  USE_INPUT_GRAD = 1 << 3, /* the input's gradient compiled */
  USE_DATA = 1 << 4,       /* the batch's values */
  KEEP_CONVS = 1 << 5,
  KEEP_RELUS = 1 << 6,
  KEEP_FEATURES = 1 << 7,
  USE_WEIGHT_GRADS = 1 << 8, /* the backward's parameter gradients (else it runs input-only) */
};

#define GRAD (USE_RUNTIME | USE_FORWARD | USE_BACKWARD | USE_DATA)
/* The proxies that read the weights' gradients. */
#define WEIGHT_GRAD (GRAD | USE_WEIGHT_GRADS)

static const struct {
  SieveProxyInfo info;
  guint uses;
} proxies[P_N] = {
  [P_GRAD_NORM] = {{"grad_norm", "sum over conv/linear layers of the norm of the weights' gradient "
                                 "(Abdelfattah et al., ICLR 2021)", TRUE}, WEIGHT_GRAD},
  [P_SNIP] = {{"snip", "sum of |w * dL/dw| over conv/linear weights (Lee et al., ICLR 2019; as a proxy, "
                       "Abdelfattah et al., ICLR 2021)", TRUE}, WEIGHT_GRAD},
  [P_PLAIN] = {{"plain", "sum of w * dL/dw over conv/linear weights: snip without the absolute value "
                         "(zero-cost-nas's baseline, Abdelfattah et al., ICLR 2021)", TRUE}, WEIGHT_GRAD},
  [P_L2_NORM] = {{"l2_norm", "sum over conv/linear layers of the norm of the initial weights (zero-cost-nas; "
                             "NAS-Bench-Suite-Zero, Krishnakumar et al., NeurIPS 2022)", FALSE},
                 USE_RUNTIME},
  [P_GRASP] = {{"grasp", "-sum of w * (H g) over conv/linear weights, H g by finite differences of gradients "
                         "(Wang et al., ICLR 2020; as a proxy, Abdelfattah et al., ICLR 2021)", TRUE}, WEIGHT_GRAD},
  [P_FISHER] = {{"fisher", "sum over conv channels of 0.5 * batch mean of (sum of activation * its gradient)^2 "
                           "(Theis et al. 2018; as a proxy, Abdelfattah et al., ICLR 2021)", TRUE},
                GRAD | KEEP_CONVS},
  [P_JACOB_COV] = {{"jacob_cov", "-sum of log(v + 1e-5) + 1/(v + 1e-5) over the eigenvalues v of the correlation "
                                 "of the input Jacobians (Mellor et al., arXiv 2020)", TRUE},
                   USE_RUNTIME | USE_FORWARD | USE_INPUT_GRAD | USE_DATA},
  [P_NASWOT] = {{"naswot", "log |det| of the ReLU codes' agreement kernel, summed over the ReLUs "
                           "(Mellor et al., ICML 2021)", TRUE},
                USE_RUNTIME | USE_FORWARD | USE_DATA | KEEP_RELUS},
  [P_SYNFLOW] = {{"synflow", "sum of |w| * dR/d|w| over conv/linear weights, R the output of the network with "
                             "absolute weights on an all-ones input, in double (Tanaka et al., NeurIPS 2020; as a "
                             "proxy, Abdelfattah et al., ICLR 2021)", FALSE},
                 USE_RUNTIME},
  [P_ZEN] = {{"zen", "log of the features' response to a small input perturbation plus the batch norms' "
                     "log scales, Gaussian weights and inputs (Lin et al., ICCV 2021)", FALSE},
             USE_RUNTIME | KEEP_FEATURES},
  [P_GRADSIGN] = {{"gradsign", "sum over conv/linear weights of |sum over examples of the gradient's sign| "
                               "(Zhang & Jia, ICLR 2022)", TRUE}, USE_DATA},
  [P_PARAMS] = {{"params", "parameters of the network (weights, biases, batch norm scales and shifts)", FALSE}, 0},
  [P_FLOPS] = {{"flops", "multiply-accumulates per example of the conv and linear layers (NAS papers' FLOPs)",
                FALSE}, 0},
};

/* Mixed into the seed for the batch drawn when the caller gives none. */
#define BATCH_STREAM 0x6261746368ULL

guint
sieve_proxy_count(void)
{
  return P_N;
}

const SieveProxyInfo *
sieve_proxy_info(guint i)
{
  g_return_val_if_fail(i < P_N, NULL);
  return &proxies[i].info;
}

static gint
proxy_id(const char *name)
{
  for (guint i = 0; name && i < P_N; i++)
    if (g_str_equal(name, proxies[i].info.name))
      return (gint)i;
  return -1;
}

const SieveProxyInfo *
sieve_proxy_lookup(const char *name)
{
  gint i = proxy_id(name);
  return i < 0 ? NULL : &proxies[i].info;
}

gboolean
sieve_proxy_check_names(const char *const *names, guint n, GError **error)
{
  g_return_val_if_fail(n == 0 || names != NULL, FALSE);
  for (guint i = 0; i < n; i++) {
    if (proxy_id(names[i]) >= 0)
      continue;
    g_autoptr(GString) known = g_string_new(NULL);
    for (guint k = 0; k < P_N; k++)
      g_string_append_printf(known, "%s%s", k ? ", " : "", proxies[k].info.name);
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND, "unknown proxy \"%s\" (known: %s)",
                names[i] ? names[i] : "(null)", known->str);
    return FALSE;
  }
  return TRUE;
}

/* ---- timing ----------------------------------------------------------------- */

typedef struct {
  guint want;       /* bit per requested ProxyId */
  double ms[P_N];
  gint64 start;
} Clock;

/* The proxies whose uses include bit. */
static guint
users(guint bit)
{
  guint mask = 0;
  for (guint p = 0; p < P_N; p++)
    if (proxies[p].uses & bit)
      mask |= 1u << p;
  return mask;
}

#define ONLY(p) (1u << (p))

/* Splits the time since the last charge evenly among the requested
 * proxies in mask. */
static void
charge(Clock *k, guint mask)
{
  gint64 now = g_get_monotonic_time();
  double ms = (now - k->start) / 1000.0;
  k->start = now;
  mask &= k->want;
  guint count = (guint)__builtin_popcount(mask);
  for (guint p = 0; p < P_N; p++)
    if (mask >> p & 1)
      k->ms[p] += ms / count;
}

/* ---- the passes ----------------------------------------------------------------- */

static gboolean
wants(guint want, ProxyId p)
{
  return (want >> p & 1) != 0;
}

static guint
uses_of(guint want)
{
  guint u = 0;
  for (guint p = 0; p < P_N; p++)
    if (wants(want, p))
      u |= proxies[p].uses;
  return u;
}

/* The nodes the named proxies read, for the runtime's keep list. */
static GArray *
keep_list(const SieveGraph *g, guint uses)
{
  GArray *keep = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint v = 0; v < sieve_graph_n_nodes(g); v++) {
    const SieveGraphNode *n = sieve_graph_node(g, v);
    if (!sieve_graph_node_live(g, v))
      continue;
    if (((uses & KEEP_CONVS) && n->kind == SIEVE_OP_CONV2D) ||
        ((uses & KEEP_RELUS) && n->kind == SIEVE_OP_ACTIVATION && n->attrs.activation == SIEVE_ACT_RELU))
      g_array_append_val(keep, v);
  }
  if (uses & KEEP_FEATURES) {
    guint f = sieve__proxy_zen_features(g);
    g_array_append_val(keep, f);
  }
  return keep;
}

static gboolean
check_graph(const SieveGraph *graph, GError **error)
{
  guint out = sieve_graph_output(graph);
  if (out == SIEVE_NODE_INVALID) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH, "graph %s is not finished (no output)",
                sieve_graph_name(graph));
    return FALSE;
  }
  if (sieve_graph_node(graph, out)->kind == SIEVE_OP_SOFTMAX_CE) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH,
                "graph %s ends in a loss: proxies score a network that ends in its logits", sieve_graph_name(graph));
    return FALSE;
  }
  return TRUE;
}

/* The batch: the caller's, or seeded N(0, 1) inputs and uniform labels. */
static gboolean
make_batch(SieveProxyRun *run, const SieveProxyOptions *o, float **x_owned, gint32 **y_owned, GError **error)
{
  SieveRng rng;
  sieve_rng_seed(&rng, run->seed ^ BATCH_STREAM);
  gsize n = (gsize)run->batch * run->in_size;
  if (o->inputs) {
    run->x = o->inputs;
  } else {
    *x_owned = g_new(float, n);
    g_autofree double *draw = g_new(double, n);
    sieve_rng_normal_fill(&rng, draw, n, run->threads);
    for (gsize k = 0; k < n; k++)
      (*x_owned)[k] = (float)draw[k];
    run->x = *x_owned;
  }
  if (o->labels) {
    for (guint b = 0; b < run->batch; b++)
      if (o->labels[b] < 0 || (guint)o->labels[b] >= run->n_classes) {
        g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "label %d of example %u is outside 0..%u (the logits)",
                    o->labels[b], b, run->n_classes - 1);
        return FALSE;
      }
    run->labels = o->labels;
  } else {
    *y_owned = g_new(gint32, run->batch);
    for (guint b = 0; b < run->batch; b++)
      (*y_owned)[b] = (gint32)sieve_rng_below(&rng, run->n_classes);
    run->labels = *y_owned;
  }
  return TRUE;
}

static gboolean
run_passes(SieveProxyRun *run, guint want, Clock *clock, double *value, GError **error)
{
  guint uses = uses_of(want);
  if (uses & USE_RUNTIME) {
    g_autoptr(GArray) keep = keep_list(run->graph, uses);
    /* synflow and l2_norm read only the initial weights (which do not
     * depend on the batch size): alone, a runtime for one example is
     * enough. */
    gboolean weights_only = !(uses & (USE_FORWARD | USE_BACKWARD | USE_INPUT_GRAD | KEEP_FEATURES));
    SieveRuntimeOptions o = {
      .device = run->device,
      .batch = weights_only ? 1 : run->batch,
      .threads = run->threads,
      .backward = (uses & (USE_BACKWARD | USE_INPUT_GRAD)) != 0,
      .input_grad = (uses & USE_INPUT_GRAD) != 0,
      .seed = run->seed,
      .keep = (const guint *)keep->data,
      .n_keep = keep->len,
    };
    run->rt = sieve_runtime_new(run->graph, &o, error);
    if (run->rt == NULL)
      return FALSE;
    run->weights = sieve__proxy_weight_params(run->rt, run->graph);
    charge(clock, users(USE_RUNTIME));
  }
  /* The weights as initialised: before any pass moves them. */
  if (wants(want, P_L2_NORM)) {
    if (!sieve__proxy_l2_norm(run, &value[P_L2_NORM], error))
      return FALSE;
    charge(clock, ONLY(P_L2_NORM));
  }
  if (wants(want, P_SYNFLOW)) {
    if (!sieve_proxy_synflow(run->graph, run->rt, run->threads, &value[P_SYNFLOW], error))
      return FALSE;
    charge(clock, ONLY(P_SYNFLOW));
  }
  if (uses & USE_FORWARD) {
    if (!sieve__proxy_forward(run, error))
      return FALSE;
    charge(clock, users(USE_FORWARD));
  }
  if (wants(want, P_NASWOT)) {
    if (!sieve__proxy_naswot(run, &value[P_NASWOT], error))
      return FALSE;
    charge(clock, ONLY(P_NASWOT));
  }
  g_autoptr(GPtrArray) grads = g_ptr_array_new_with_free_func(g_free);
  if (uses & USE_BACKWARD) {
    /* fisher alone reads activations' gradients, not the weights': the
     * weight-gradient kernels (a third of the backward) are skipped. */
    gboolean weights = (uses & USE_WEIGHT_GRADS) != 0;
    if (!sieve__proxy_backward_ce(run, !weights, error))
      return FALSE;
    charge(clock, users(USE_BACKWARD));
    if (weights) {
      if (!sieve__proxy_grad_norm_snip(run, &value[P_GRAD_NORM], wants(want, P_SNIP) ? &value[P_SNIP] : NULL,
                                       wants(want, P_PLAIN) ? &value[P_PLAIN] : NULL,
                                       wants(want, P_GRASP) ? grads : NULL, error))
        return FALSE;
      charge(clock, users(USE_WEIGHT_GRADS));
    }
    if (wants(want, P_FISHER)) {
      if (!sieve__proxy_fisher(run, &value[P_FISHER], error))
        return FALSE;
      charge(clock, ONLY(P_FISHER));
    }
  }
  if (wants(want, P_JACOB_COV)) {
    if (!sieve__proxy_jacob_cov(run, &value[P_JACOB_COV], error))
      return FALSE;
    charge(clock, ONLY(P_JACOB_COV));
  }
  if (wants(want, P_GRASP)) {
    if (!sieve__proxy_grasp(run, grads, &value[P_GRASP], error))
      return FALSE;
    charge(clock, ONLY(P_GRASP));
  }
  if (wants(want, P_ZEN)) {
    if (!sieve__proxy_zen(run, sieve__proxy_zen_features(run->graph), &value[P_ZEN], error))
      return FALSE;
    charge(clock, ONLY(P_ZEN));
  }
  if (wants(want, P_GRADSIGN)) {
    if (!sieve__proxy_gradsign(run, &value[P_GRADSIGN], error))
      return FALSE;
    charge(clock, ONLY(P_GRADSIGN));
  }
  if (wants(want, P_PARAMS)) {
    value[P_PARAMS] = (double)sieve_graph_params(run->graph);
    charge(clock, ONLY(P_PARAMS));
  }
  if (wants(want, P_FLOPS)) {
    value[P_FLOPS] = (double)sieve_graph_macs(run->graph);
    charge(clock, ONLY(P_FLOPS));
  }
  return TRUE;
}

gboolean
sieve_proxy_compute(const SieveGraph *graph, const char *const *names, guint n, const SieveProxyOptions *options,
                    double *scores, double *times_ms, GError **error)
{
  g_return_val_if_fail(graph != NULL && options != NULL, FALSE);
  g_return_val_if_fail(n == 0 || (names != NULL && scores != NULL), FALSE);
  if (!sieve_proxy_check_names(names, n, error) || !check_graph(graph, error))
    return FALSE;
  Clock clock = {.start = g_get_monotonic_time()};
  for (guint i = 0; i < n; i++)
    clock.want |= 1u << proxy_id(names[i]);
  SieveShape in = sieve_graph_node(graph, sieve_graph_input_node(graph))->shape;
  SieveShape out = sieve_graph_node(graph, sieve_graph_output(graph))->shape;
  SieveProxyRun run = {
    .graph = graph,
    .batch = options->batch ? options->batch : 64,
    .threads = options->threads ? options->threads : (guint)g_get_num_processors(),
    .seed = options->seed,
    .device = options->device,
    .in_size = (gsize)in.c * in.h * in.w,
    .n_classes = out.c * out.h * out.w,
  };
  g_autofree float *x = NULL;
  g_autofree gint32 *y = NULL;
  double value[P_N];
  for (guint p = 0; p < P_N; p++)
    value[p] = NAN;
  gboolean ok = (!(uses_of(clock.want) & USE_DATA) || make_batch(&run, options, &x, &y, error)) &&
                run_passes(&run, clock.want, &clock, value, error);
  sieve_runtime_free(run.rt);
  g_free(run.logits);
  if (run.weights)
    g_array_unref(run.weights);
  if (!ok)
    return FALSE;
  for (guint i = 0; i < n; i++) {
    gint p = proxy_id(names[i]);
    /* Every documented degenerate case has a value; a NaN here means the
     * network's own values were not finite. */
    if (isnan(value[p])) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_DIVERGED,
                  "proxy %s of graph %s is NaN: the network's values are not finite for this batch", names[i],
                  sieve_graph_name(graph));
      return FALSE;
    }
    scores[i] = value[p];
    if (times_ms)
      times_ms[i] = clock.ms[p];
  }
  return TRUE;
}
