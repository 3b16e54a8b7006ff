/* The runtime against the reference: forward values and finite differences. */
#include <math.h>
#include <string.h>

#include "check.h"

static gsize
numel(SieveShape s)
{
  return (gsize)s.c * s.h * s.w;
}

gboolean
case_is_loss(const Case *c)
{
  return sieve_graph_node(c->graph, sieve_graph_output(c->graph))->kind == SIEVE_OP_SOFTMAX_CE;
}

static void
draw_input(Case *c, guint64 seed)
{
  SieveRng rng;
  sieve_rng_seed(&rng, seed);
  for (gsize k = 0; k < c->batch * c->in_size; k++) {
    c->x[k] = (float)(2 * sieve_rng_uniform(&rng) - 1);
    c->xd[k] = c->x[k];
  }
}

Case *
case_new(SieveGraph *graph, guint batch, guint64 seed, gboolean input_grad)
{
  Case *c = g_new0(Case, 1);
  c->graph = graph;
  c->batch = batch;
  c->seed = seed;
  /* SIEVE_TEST_DEVICE=cuda holds the CUDA backend to the same reference
   * and tolerances (in strict float32: TF32 would not meet them). */
  SieveRuntimeOptions o = {.device = g_getenv("SIEVE_TEST_DEVICE"), .precision = "fp32", .batch = batch,
                           .threads = 2, .backward = TRUE, .input_grad = input_grad, .keep_all = TRUE, .seed = seed};
  GError *error = NULL;
  c->rt = sieve_runtime_new(graph, &o, &error);
  g_assert_no_error(error);
  o.keep_all = FALSE;
  c->lean = sieve_runtime_new(graph, &o, &error);
  g_assert_no_error(error);
  c->in_size = numel(sieve_graph_node(graph, sieve_graph_input_node(graph))->shape);
  c->x = g_new(float, batch * c->in_size);
  c->xd = g_new(double, batch * c->in_size);
  draw_input(c, seed);
  SieveRng rng;
  sieve_rng_seed(&rng, seed ^ 0x5eed);
  if (case_is_loss(c)) {
    guint K = sieve_graph_node(graph, sieve_graph_node(graph, sieve_graph_output(graph))->inputs[0])->shape.c;
    c->labels = g_new(gint32, batch);
    for (guint b = 0; b < batch; b++)
      c->labels[b] = (gint32)sieve_rng_below(&rng, K);
  } else {
    c->out_size = numel(sieve_graph_node(graph, sieve_graph_output(graph))->shape);
    c->w = g_new(float, batch * c->out_size);
    c->wd = g_new(double, batch * c->out_size);
    for (gsize k = 0; k < batch * c->out_size; k++) {
      c->w[k] = (float)(2 * sieve_rng_uniform(&rng) - 1);
      c->wd[k] = c->w[k];
    }
  }
  c->ref = ref_net_new(graph, batch);
  case_sync(c);
  return c;
}

void
case_free(Case *c)
{
  if (!c)
    return;
  ref_net_free(c->ref);
  sieve_runtime_free(c->rt);
  sieve_runtime_free(c->lean);
  sieve_graph_free(c->graph);
  g_free(c->x);
  g_free(c->xd);
  g_free(c->labels);
  g_free(c->w);
  g_free(c->wd);
  g_free(c);
}

void
case_sync(Case *c)
{
  GError *error = NULL;
  ref_net_load_params(c->ref, c->rt, &error);
  g_assert_no_error(error);
  for (guint i = 0; i < sieve_runtime_n_params(c->rt); i++) {
    g_autofree float *v = g_new(float, sieve_runtime_param_info(c->rt, i)->size);
    sieve_runtime_get_param(c->rt, i, v, &error);
    g_assert_no_error(error);
    sieve_runtime_set_param(c->lean, i, v, &error);
    g_assert_no_error(error);
  }
}

void
case_randomise_params(Case *c, guint64 seed)
{
  SieveRng rng;
  sieve_rng_seed(&rng, seed);
  for (guint i = 0; i < sieve_runtime_n_params(c->rt); i++) {
    const SieveParamInfo *info = sieve_runtime_param_info(c->rt, i);
    if (g_str_equal(info->name, "weight"))
      continue;
    double lo = g_str_equal(info->name, "gamma") ? 0.5 : -0.5;
    g_autofree float *v = g_new(float, info->size);
    for (guint64 k = 0; k < info->size; k++)
      v[k] = (float)(lo + sieve_rng_uniform(&rng));
    GError *error = NULL;
    sieve_runtime_set_param(c->rt, i, v, &error);
    g_assert_no_error(error);
  }
  case_sync(c);
}

double
case_pick_input(Case *c, double margin)
{
  for (guint64 s = c->seed; s < c->seed + 50; s++) {
    draw_input(c, s);
    ref_net_forward(c->ref, c->xd, c->labels, SIEVE_MODE_TRAIN);
    double m = ref_net_kink_margin(c->ref);
    if (m >= margin)
      return m;
  }
  g_error("no input among 50 seeds keeps every kink %g away", margin);
}

static double
worse(double worst, double err, double allowed)
{
  return MAX(worst, err / allowed);
}

double
case_check_forward(Case *c, SieveMode mode, double rtol, double atol)
{
  GError *error = NULL;
  sieve_runtime_forward(c->rt, c->x, c->labels, mode, &error);
  g_assert_no_error(error);
  ref_net_forward(c->ref, c->xd, c->labels, mode);
  double worst = 0;
  g_autofree float *got = NULL;
  for (guint v = 0; v < sieve_graph_n_nodes(c->graph); v++) {
    if (!sieve_graph_node_live(c->graph, v))
      continue;
    const SieveGraphNode *n = sieve_graph_node(c->graph, v);
    if (n->kind == SIEVE_OP_SOFTMAX_CE) {
      double want = ref_net_loss(c->ref), have = sieve_runtime_loss(c->rt);
      g_assert_true(isfinite(want));
      double allowed = atol + rtol * fabs(want);
      if (fabs(have - want) > allowed)
        g_error("loss %.9g, the reference's %.9g", have, want);
      worst = worse(worst, fabs(have - want), allowed);
      continue;
    }
    gsize size = c->batch * numel(n->shape);
    got = g_renew(float, got, size);
    sieve_runtime_read(c->rt, v, got, &error);
    g_assert_no_error(error);
    const double *want = ref_net_output(c->ref, v);
    for (gsize k = 0; k < size; k++) {
      double allowed = atol + rtol * fabs(want[k]);
      double err = fabs(got[k] - want[k]);
      if (!(err <= allowed))
        g_error("node %u (%s), element %" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT ": runtime %.9g, reference %.9g", v,
                sieve_op_kind_name(n->kind), k, size, got[k], want[k]);
      worst = worse(worst, err, allowed);
    }
  }
  return worst;
}

/* Central difference of the reference's objective in *p. */
static double
central(Case *c, guint from, double *p, double h)
{
  double keep = *p;
  *p = keep + h;
  ref_net_forward_from(c->ref, from, c->xd, c->labels, SIEVE_MODE_TRAIN);
  double up = ref_net_objective(c->ref, c->wd);
  *p = keep - h;
  ref_net_forward_from(c->ref, from, c->xd, c->labels, SIEVE_MODE_TRAIN);
  double down = ref_net_objective(c->ref, c->wd);
  *p = keep;
  return (up - down) / (2 * h);
}

/* One tensor's sampled entries: the runtime's gradient and the central
 * difference of the reference's objective. */
typedef struct {
  char *what;
  gsize n, m;
  gsize *idx;
  double *got[2], *fd; /* the keep_all and the lean runtime's */
  double scale;         /* largest |fd| */
} Sample;

static void
sample_free(gpointer p)
{
  Sample *s = p;
  g_free(s->what);
  g_free(s->idx);
  g_free(s->got[0]);
  g_free(s->got[1]);
  g_free(s->fd);
  g_free(s);
}

static Sample *
sample(Case *c, char *what, guint from, const float *got, const float *lean, double *p, gsize n, double h,
       guint max_entries, SieveRng *rng)
{
  Sample *s = g_new0(Sample, 1);
  s->what = what;
  s->n = n;
  s->m = MIN(n, (gsize)max_entries);
  s->idx = g_new(gsize, s->m);
  s->got[0] = g_new(double, s->m);
  s->got[1] = g_new(double, s->m);
  s->fd = g_new(double, s->m);
  for (gsize j = 0; j < s->m; j++) {
    s->idx[j] = s->m == n ? j : (gsize)sieve_rng_below(rng, n);
    s->got[0][j] = got[s->idx[j]];
    s->got[1][j] = lean[s->idx[j]];
    s->fd[j] = central(c, from, &p[s->idx[j]], h);
    s->scale = MAX(s->scale, fabs(s->fd[j]));
  }
  return s;
}

double
case_check_grads(Case *c, double h, double rtol, double atol, guint max_entries, gboolean require_all)
{
  GError *error = NULL;
  SieveRuntime *rts[2] = {c->rt, c->lean};
  for (int r = 0; r < 2; r++) {
    sieve_runtime_forward(rts[r], c->x, c->labels, SIEVE_MODE_TRAIN, &error);
    g_assert_no_error(error);
    sieve_runtime_backward(rts[r], c->labels ? NULL : c->w, &error);
    g_assert_no_error(error);
  }
  SieveRng rng;
  sieve_rng_seed(&rng, c->seed + 17);
  /* The reference's outputs must be those of this very input. */
  ref_net_forward(c->ref, c->xd, c->labels, SIEVE_MODE_TRAIN);
  g_autoptr(GPtrArray) samples = g_ptr_array_new_with_free_func(sample_free);
  for (guint i = 0; i < sieve_runtime_n_params(c->rt); i++) {
    const SieveParamInfo *info = sieve_runtime_param_info(c->rt, i);
    g_autofree float *got = g_new(float, info->size);
    g_autofree float *lean = g_new(float, info->size);
    sieve_runtime_get_grad(c->rt, i, got, &error);
    g_assert_no_error(error);
    sieve_runtime_get_grad(c->lean, i, lean, &error);
    g_assert_no_error(error);
    char *what = g_strdup_printf("gradient of parameter %u (node %u %s, %s)", i, info->node,
                                 sieve_op_kind_name(sieve_graph_node(c->graph, info->node)->kind), info->name);
    g_ptr_array_add(samples,
                    sample(c, what, info->node, got, lean, ref_net_param(c->ref, i), info->size, h, max_entries, &rng));
  }
  g_autofree float *gx = g_new(float, c->batch * c->in_size);
  g_autofree float *gx_lean = g_new(float, c->batch * c->in_size);
  if (sieve_runtime_read_input_grad(c->rt, gx, NULL)) {
    sieve_runtime_read_input_grad(c->lean, gx_lean, &error);
    g_assert_no_error(error);
    g_ptr_array_add(samples, sample(c, g_strdup("input gradient"), 0, gx, gx_lean, c->xd, c->batch * c->in_size,
                                    h, max_entries, &rng));
  }
  /* x was perturbed and restored in place: the float copy still matches. */
  double global = 0;
  for (guint t = 0; t < samples->len; t++) {
    Sample *s = samples->pdata[t];
    if (require_all && s->scale == 0)
      g_error("%s: every finite difference is zero: nothing is checked", s->what);
    global = MAX(global, ((Sample *)samples->pdata[t])->scale);
  }
  if (global == 0)
    g_error("every gradient is zero: nothing is checked");
  double worst = 0;
  for (guint t = 0; t < samples->len; t++) {
    Sample *s = samples->pdata[t];
    /* A tensor whose gradient is (nearly) zero in exact arithmetic, such as
     * a batch norm's beta in front of another batch norm, still carries
     * float32 noise of the network's gradient scale. */
    double floor = MAX(s->scale, 1e-2 * global);
    for (int r = 0; r < 2; r++)
      for (gsize j = 0; j < s->m; j++) {
        double allowed = rtol * fabs(s->fd[j]) + atol * floor;
        double err = fabs(s->got[r][j] - s->fd[j]);
        if (!(err <= allowed))
          g_error("%s, element %" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT ": %s runtime %.9g, finite difference %.9g "
                  "(largest in the tensor %.3g, in the network %.3g)",
                  s->what, s->idx[j], s->n, r ? "lean" : "keep_all", s->got[r][j], s->fd[j], s->scale, global);
        worst = worse(worst, err, allowed);
      }
  }
  return worst;
}
