/* The runtime's state and contracts: batch norm running statistics (updated
 * by training forwards, used by evaluation ones), the SGD step against a
 * hand-computed update, seeded Kaiming initialisation, and every error a
 * caller can provoke. */
#include <math.h>
#include <string.h>

#include "check.h"

static SieveGraph *
finish(SieveGraph *g, guint out)
{
  GError *error = NULL;
  sieve_graph_finish(g, out, &error);
  g_assert_no_error(error);
  return g;
}

static SieveRuntime *
compile(const SieveGraph *g, SieveRuntimeOptions o)
{
  GError *error = NULL;
  if (o.threads == 0)
    o.threads = 2;
  SieveRuntime *rt = sieve_runtime_new(g, &o, &error);
  g_assert_no_error(error);
  return rt;
}

static void
fill(float *x, double *xd, gsize n, guint64 seed)
{
  SieveRng rng;
  sieve_rng_seed(&rng, seed);
  for (gsize k = 0; k < n; k++) {
    x[k] = (float)(4 * sieve_rng_uniform(&rng) - 1); /* mean 1: running means move */
    if (xd)
      xd[k] = x[k];
  }
}

/* ---- running statistics ------------------------------------------------------------ */

/* conv -> BN (momentum 0.1) -> relu -> conv -> BN (momentum 0.3, not affine) -> pool:
 * after several training forwards, an evaluation forward of both the
 * runtime and the reference (which applies PyTorch's rule itself) agree on
 * every node, so the running statistics agree. */
static void
test_running(void)
{
  SieveGraph *g = sieve_graph_new("running");
  guint x = sieve_graph_input(g, 3, 5, 4);
  guint h = sieve_graph_batch_norm(g, sieve_graph_conv2d(g, x, 5, 3, 1, 1, TRUE));
  h = sieve_graph_conv2d(g, sieve_graph_relu(g, h), 17, 3, 1, 1, FALSE);
  SieveOpAttrs a = {.affine = FALSE, .eps = 1e-4, .momentum = 0.3};
  h = sieve_graph_add(g, SIEVE_OP_BATCH_NORM, &h, 1, &a);
  g_autoptr(Case) c = case_new(finish(g, sieve_graph_global_avg_pool(g, h)), 4, 7, FALSE);
  case_randomise_params(c, 8);

  /* Before any training: mean 0, variance 1. */
  double e0 = case_check_forward(c, SIEVE_MODE_EVAL, 1e-4, 1e-5);
  for (guint step = 0; step < 3; step++) {
    fill(c->x, c->xd, c->batch * c->in_size, 100 + step);
    case_check_forward(c, SIEVE_MODE_TRAIN, 1e-4, 1e-5);
    ref_net_update_running(c->ref);
    /* An evaluation forward in between changes nothing. */
    case_check_forward(c, SIEVE_MODE_EVAL, 1e-4, 1e-5);
  }
  fill(c->x, c->xd, c->batch * c->in_size, 200);
  double e1 = case_check_forward(c, SIEVE_MODE_EVAL, 1e-4, 1e-5);
  g_test_message("running statistics: worst eval error %.2g, %.2g of the tolerance", e0, e1);

  /* And eval really is not train: the same input normalised with batch
   * statistics gives another output. */
  guint out = sieve_graph_output(c->graph);
  gsize n = c->batch * 17;
  g_autofree float *ev = g_new(float, n);
  g_autofree float *tr = g_new(float, n);
  GError *error = NULL;
  sieve_runtime_read(c->rt, out, ev, &error);
  g_assert_no_error(error);
  sieve_runtime_forward(c->rt, c->x, NULL, SIEVE_MODE_TRAIN, &error);
  g_assert_no_error(error);
  sieve_runtime_read(c->rt, out, tr, &error);
  g_assert_no_error(error);
  double diff = 0;
  for (gsize k = 0; k < n; k++)
    diff = MAX(diff, fabs(ev[k] - tr[k]));
  g_assert_cmpfloat(diff, >, 1e-2);
}

/* ---- SGD --------------------------------------------------------------------------- */

typedef struct {
  double lr, momentum, wd;
  gboolean nesterov;
} SgdCase;

static const SgdCase sgd_cases[] = {
  {0.1, 0, 0, FALSE},
  {0.05, 0.9, 0, FALSE},
  {0.1, 0.9, 5e-4, TRUE},
  {0.2, 0.5, 1e-2, FALSE},
  {0.02, 0, 1e-1, FALSE},
};

/* Three steps on a conv + BN + linear + loss network; after each, every
 * parameter against PyTorch's rule worked out here in double from the
 * gradients the runtime reported: g' = g + wd w; v = m v + g';
 * w -= lr (nesterov ? g' + m v : v) (v = g' on the first step; without
 * momentum the step is g'). */
static void
test_sgd(gconstpointer data)
{
  const SgdCase *k = data;
  SieveGraph *g = sieve_graph_new("sgd");
  guint x = sieve_graph_input(g, 3, 4, 4);
  guint h = sieve_graph_batch_norm(g, sieve_graph_conv2d(g, x, 5, 3, 1, 1, TRUE));
  h = sieve_graph_linear(g, sieve_graph_relu(g, h), 4, TRUE);
  g_autoptr(SieveGraph) graph = finish(g, sieve_graph_softmax_ce(g, h, 0));
  g_autoptr(SieveRuntime) rt = compile(graph, (SieveRuntimeOptions){.batch = 3, .backward = TRUE, .seed = 5});
  guint np = sieve_runtime_n_params(rt);
  g_assert_cmpuint(np, ==, 6);
  g_autoptr(GPtrArray) w = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) v = g_ptr_array_new_with_free_func(g_free);
  GError *error = NULL;
  for (guint i = 0; i < np; i++) {
    const SieveParamInfo *info = sieve_runtime_param_info(rt, i);
    g_autofree float *f = g_new(float, info->size);
    sieve_runtime_get_param(rt, i, f, &error);
    g_assert_no_error(error);
    double *d = g_new(double, info->size);
    for (guint64 j = 0; j < info->size; j++)
      d[j] = f[j];
    g_ptr_array_add(w, d);
    g_ptr_array_add(v, g_new0(double, info->size));
  }
  float xs[3 * 3 * 4 * 4];
  gint32 labels[3] = {0, 3, 1};
  double moved = 0;
  for (guint step = 0; step < 3; step++) {
    fill(xs, NULL, G_N_ELEMENTS(xs), 40 + step);
    sieve_runtime_forward(rt, xs, labels, SIEVE_MODE_TRAIN, &error);
    g_assert_no_error(error);
    sieve_runtime_backward(rt, NULL, &error);
    g_assert_no_error(error);
    g_autoptr(GPtrArray) grads = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < np; i++) {
      float *gr = g_new(float, sieve_runtime_param_info(rt, i)->size);
      sieve_runtime_get_grad(rt, i, gr, &error);
      g_assert_no_error(error);
      g_ptr_array_add(grads, gr);
    }
    SieveSgd sgd = {.lr = k->lr, .momentum = k->momentum, .weight_decay = k->wd, .nesterov = k->nesterov};
    sieve_runtime_sgd_step(rt, &sgd, &error);
    g_assert_no_error(error);
    for (guint i = 0; i < np; i++) {
      const SieveParamInfo *info = sieve_runtime_param_info(rt, i);
      double *wi = w->pdata[i], *vi = v->pdata[i];
      const float *gi = grads->pdata[i];
      g_autofree float *got = g_new(float, info->size);
      sieve_runtime_get_param(rt, i, got, &error);
      g_assert_no_error(error);
      for (guint64 j = 0; j < info->size; j++) {
        double gp = gi[j] + k->wd * wi[j], upd = gp;
        if (k->momentum != 0) {
          vi[j] = step == 0 ? gp : k->momentum * vi[j] + gp;
          upd = k->nesterov ? gp + k->momentum * vi[j] : vi[j];
        }
        double want = wi[j] - k->lr * upd;
        if (fabs(got[j] - want) > 1e-6 + 1e-5 * fabs(want))
          g_error("step %u, parameter %u (%s) element %" G_GUINT64_FORMAT ": %.9g, by hand %.9g", step, i,
                  info->name, j, got[j], want);
        moved = MAX(moved, fabs(want - wi[j]));
        wi[j] = got[j]; /* carry on from the runtime's float values */
      }
    }
  }
  g_assert_cmpfloat(moved, >, 1e-4);
}

/* ---- initialisation -------------------------------------------------------------------- */

static SieveGraph *
init_graph(void)
{
  SieveGraph *g = sieve_graph_new("init");
  guint x = sieve_graph_input(g, 64, 4, 4);
  guint h = sieve_graph_batch_norm(g, sieve_graph_conv2d(g, x, 64, 3, 1, 1, TRUE));
  SieveOpAttrs a = {
    .out_channels = 32, .kernel = {3, 3}, .stride = {1, 1}, .pad = {1, 1}, .dilation = {1, 1}, .groups = 4};
  h = sieve_graph_add(g, SIEVE_OP_CONV2D, &h, 1, &a);
  return finish(g, sieve_graph_linear(g, h, 300, TRUE));
}

static float *
param(SieveRuntime *rt, guint i)
{
  GError *error = NULL;
  float *v = g_new(float, sieve_runtime_param_info(rt, i)->size);
  sieve_runtime_get_param(rt, i, v, &error);
  g_assert_no_error(error);
  return v;
}

/* Same seed, same values, bit for bit; another seed, other values; and
 * the distributions the runtime promises: conv weights N(0, 2/fan_in)
 * (fan_in counts one group's inputs), linear weights and biases
 * U(+-1/sqrt(fan_in)), batch norm gamma 1, beta 0. */
static void
test_init(void)
{
  g_autoptr(SieveGraph) g = init_graph();
  g_autoptr(SieveRuntime) a = compile(g, (SieveRuntimeOptions){.batch = 1, .seed = 42});
  g_autoptr(SieveRuntime) b = compile(g, (SieveRuntimeOptions){.batch = 2, .backward = TRUE, .seed = 42});
  g_autoptr(SieveRuntime) c = compile(g, (SieveRuntimeOptions){.batch = 1, .seed = 43});
  guint np = sieve_runtime_n_params(a);
  g_assert_cmpuint(np, ==, 7);
  for (guint i = 0; i < np; i++) {
    const SieveParamInfo *info = sieve_runtime_param_info(a, i);
    g_autofree float *va = param(a, i), *vb = param(b, i), *vc = param(c, i);
    /* The shapes graph.h documents. */
    const SieveGraphNode *pn = sieve_graph_node(g, info->node);
    SieveShape ps = sieve_graph_node(g, pn->inputs[0])->shape;
    guint64 shape[4] = {0};
    guint nd = 1;
    if (g_str_equal(info->name, "weight") && pn->kind == SIEVE_OP_CONV2D) {
      nd = 4;
      memcpy(shape, (guint64[]){pn->attrs.out_channels, ps.c / pn->attrs.groups, 3, 3}, sizeof shape);
    } else if (g_str_equal(info->name, "weight")) {
      nd = 2;
      memcpy(shape, (guint64[]){pn->attrs.out_channels, (guint64)ps.c * ps.h * ps.w, 0, 0}, sizeof shape);
    } else {
      shape[0] = pn->kind == SIEVE_OP_BATCH_NORM ? pn->shape.c : pn->attrs.out_channels;
    }
    g_assert_cmpuint(info->ndims, ==, nd);
    for (guint d = 0; d < nd; d++)
      g_assert_cmpuint(info->dims[d], ==, shape[d]);
    g_assert_cmpmem(va, info->size * sizeof(float), vb, info->size * sizeof(float));
    gboolean random = !g_str_equal(info->name, "gamma") && !g_str_equal(info->name, "beta");
    guint64 same = 0;
    double sum = 0, sq = 0, top = 0;
    for (guint64 k = 0; k < info->size; k++) {
      same += va[k] == vc[k];
      sum += va[k];
      sq += (double)va[k] * va[k];
      top = MAX(top, fabs(va[k]));
    }
    double mean = sum / info->size, sd = sqrt(sq / info->size - mean * mean);
    const SieveGraphNode *n = sieve_graph_node(g, info->node);
    SieveShape is = sieve_graph_node(g, n->inputs[0])->shape;
    g_test_message("param %u (%s %s): mean %.3g, sd %.4g, max |v| %.4g", i, sieve_op_kind_name(n->kind), info->name,
                   mean, sd, top);
    if (!random) {
      for (guint64 k = 0; k < info->size; k++)
        g_assert_cmpfloat(va[k], ==, g_str_equal(info->name, "gamma") ? 1 : 0);
      continue;
    }
    g_assert_cmpuint(same, <, info->size / 100 + 1);
    {
      /* PyTorch's default (kaiming_uniform_ with a = sqrt(5)): U(+-1/sqrt(fan_in)). */
      double fan_in = n->kind == SIEVE_OP_LINEAR ? (double)is.c * is.h * is.w
                                                 : (double)is.c / n->attrs.groups * n->attrs.kernel[0] *
                                                     n->attrs.kernel[1];
      double bound = 1 / sqrt(fan_in);
      g_assert_cmpfloat(top, <=, bound);
      /* Uniform on +-bound: sd bound/sqrt(3), and the extremes get close. */
      g_assert_cmpfloat(top, >, 0.9 * bound);
      if (info->size > 1000)
        g_assert_cmpfloat(fabs(sd * sqrt(3) / bound - 1), <, 0.05);
    }
  }
}

/* ---- errors -------------------------------------------------------------------------- */

static void
assert_error(GError **error, const char *part)
{
  g_assert_error(*error, SIEVE_ERROR, (*error)->code);
  if (strstr((*error)->message, part) == NULL)
    g_error("the message \"%s\" does not say \"%s\"", (*error)->message, part);
  g_clear_error(error);
}

static SieveGraph *
small_graph(gboolean loss)
{
  SieveGraph *g = sieve_graph_new("small");
  guint x = sieve_graph_input(g, 3, 4, 4);
  guint h = sieve_graph_conv2d(g, x, 5, 3, 1, 1, FALSE);
  h = sieve_graph_relu(g, h);
  h = sieve_graph_conv2d(g, h, 6, 3, 1, 1, FALSE);
  h = sieve_graph_linear(g, h, 4, TRUE);
  return finish(g, loss ? sieve_graph_softmax_ce(g, h, 0) : h);
}

static void
test_errors_compile(void)
{
  GError *error = NULL;
  g_autoptr(SieveGraph) g = small_graph(TRUE);
  SieveRuntimeOptions o = {.batch = 2, .device = "tpu"};
  g_assert_null(sieve_runtime_new(g, &o, &error));
  assert_error(&error, "unknown device \"tpu\"");
  o = (SieveRuntimeOptions){.batch = 0};
  g_assert_null(sieve_runtime_new(g, &o, &error));
  assert_error(&error, "batch size");
  g_autoptr(SieveGraph) open = sieve_graph_new("open");
  sieve_graph_conv2d(open, sieve_graph_input(open, 1, 4, 4), 2, 3, 1, 1, FALSE);
  o = (SieveRuntimeOptions){.batch = 1};
  g_assert_null(sieve_runtime_new(open, &o, &error));
  assert_error(&error, "not finished");
}

static void
test_errors_run(void)
{
  GError *error = NULL;
  g_autoptr(SieveGraph) g = small_graph(TRUE);
  g_autoptr(SieveRuntime) rt = compile(g, (SieveRuntimeOptions){.batch = 2, .backward = TRUE, .seed = 1});
  float x[2 * 3 * 4 * 4] = {0}, out[2 * 6 * 4 * 4], grad[2 * 3 * 4 * 4];
  for (guint k = 0; k < G_N_ELEMENTS(x); k++)
    x[k] = (float)(k % 7) - 3;
  g_assert_true(isnan(sieve_runtime_loss(rt)));

  /* Nothing before a forward. */
  g_assert_false(sieve_runtime_backward(rt, NULL, &error));
  assert_error(&error, "forward pass in train mode");
  g_assert_false(sieve_runtime_read(rt, 4, out, &error));
  assert_error(&error, "before any forward");
  g_assert_false(sieve_runtime_get_grad(rt, 0, out, &error));
  assert_error(&error, "backward pass first");
  g_assert_false(sieve_runtime_sgd_step(rt, &(SieveSgd){.lr = 0.1}, &error));
  assert_error(&error, "backward pass first");

  /* Bad labels, either side. */
  g_assert_false(sieve_runtime_forward(rt, x, (gint32[]){0, 4}, SIEVE_MODE_TRAIN, &error));
  assert_error(&error, "label 4 of example 1 is outside 0..3");
  g_assert_false(sieve_runtime_forward(rt, x, (gint32[]){-1, 0}, SIEVE_MODE_TRAIN, &error));
  assert_error(&error, "label -1 of example 0");

  /* A loss without labels has no value and no gradient. */
  g_assert_true(sieve_runtime_forward(rt, x, NULL, SIEVE_MODE_TRAIN, &error));
  g_assert_no_error(error);
  g_assert_true(isnan(sieve_runtime_loss(rt)));
  g_assert_false(sieve_runtime_backward(rt, NULL, &error));
  assert_error(&error, "needs the forward's labels");

  /* An evaluation forward cannot be differentiated. */
  g_assert_true(sieve_runtime_forward(rt, x, (gint32[]){1, 2}, SIEVE_MODE_EVAL, &error));
  g_assert_true(isfinite(sieve_runtime_loss(rt)));
  g_assert_false(sieve_runtime_backward(rt, NULL, &error));
  assert_error(&error, "train mode");

  /* Without keep_all, a tensor nothing needs any more is gone; the logits
   * stay; nodes outside the graph are refused. */
  g_assert_true(sieve_runtime_forward(rt, x, (gint32[]){1, 2}, SIEVE_MODE_TRAIN, &error));
  g_assert_no_error(error);
  g_assert_false(sieve_runtime_read(rt, 1, out, &error));
  assert_error(&error, "keep_all");
  g_assert_true(sieve_runtime_read(rt, 4, out, &error));
  g_assert_no_error(error);
  g_assert_false(sieve_runtime_read(rt, 99, out, &error));
  assert_error(&error, "node 99");

  /* The input's gradient needs input_grad; parameters must exist. */
  g_assert_true(sieve_runtime_backward(rt, NULL, &error));
  g_assert_no_error(error);
  g_assert_false(sieve_runtime_read_input_grad(rt, grad, &error));
  assert_error(&error, "input_grad");
  g_assert_false(sieve_runtime_get_param(rt, 7, out, &error));
  assert_error(&error, "parameter 7 does not exist");
  g_assert_false(sieve_runtime_set_param(rt, 7, out, &error));
  assert_error(&error, "parameter 7 does not exist");
  g_assert_false(sieve_runtime_get_grad(rt, 7, out, &error));
  assert_error(&error, "parameter 7 does not exist");

  /* A forward after a backward invalidates the gradients' use. */
  g_assert_true(sieve_runtime_forward(rt, x, (gint32[]){1, 2}, SIEVE_MODE_TRAIN, &error));
  g_assert_false(sieve_runtime_sgd_step(rt, &(SieveSgd){.lr = 0.1}, &error));
  assert_error(&error, "backward pass first");
}

static void
test_errors_no_backward(void)
{
  GError *error = NULL;
  g_autoptr(SieveGraph) g = small_graph(FALSE);
  g_autoptr(SieveRuntime) rt = compile(g, (SieveRuntimeOptions){.batch = 2, .seed = 1});
  float x[2 * 3 * 4 * 4] = {0}, out[2 * 4];
  g_assert_true(sieve_runtime_forward(rt, x, NULL, SIEVE_MODE_TRAIN, &error));
  g_assert_true(isnan(sieve_runtime_loss(rt)));
  g_assert_false(sieve_runtime_backward(rt, out, &error));
  assert_error(&error, "without a backward pass");

  /* A non-loss output needs its gradient. */
  g_autoptr(SieveRuntime) bw = compile(g, (SieveRuntimeOptions){.batch = 2, .backward = TRUE, .seed = 1});
  g_assert_true(sieve_runtime_forward(bw, x, NULL, SIEVE_MODE_TRAIN, &error));
  g_assert_false(sieve_runtime_backward(bw, NULL, &error));
  assert_error(&error, "give its gradient");
}

/* The loss node itself is the output, and the header promises the output
 * is readable: one value per example, each the batch's mean loss. */
static void
test_read_loss(void)
{
  GError *error = NULL;
  g_autoptr(SieveGraph) g = small_graph(TRUE);
  g_autoptr(SieveRuntime) rt = compile(g, (SieveRuntimeOptions){.batch = 2, .seed = 1});
  float x[2 * 3 * 4 * 4], out[2] = {0};
  for (guint k = 0; k < G_N_ELEMENTS(x); k++)
    x[k] = (float)(k % 5) - 2;
  g_assert_true(sieve_runtime_forward(rt, x, (gint32[]){1, 2}, SIEVE_MODE_EVAL, &error));
  sieve_runtime_read(rt, sieve_graph_output(g), out, &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(out[0], ==, (float)sieve_runtime_loss(rt));
  g_assert_cmpfloat(out[1], ==, (float)sieve_runtime_loss(rt));
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/runtime/state/running-stats", test_running);
  for (guint i = 0; i < G_N_ELEMENTS(sgd_cases); i++) {
    g_autofree char *path = g_strdup_printf("/runtime/state/sgd/%u", i);
    g_test_add_data_func(path, &sgd_cases[i], test_sgd);
  }
  g_test_add_func("/runtime/state/init", test_init);
  g_test_add_func("/runtime/state/errors/compile", test_errors_compile);
  g_test_add_func("/runtime/state/errors/run", test_errors_run);
  g_test_add_func("/runtime/state/errors/no-backward", test_errors_no_backward);
  g_test_add_func("/runtime/state/read-loss", test_read_loss);
  return g_test_run();
}
