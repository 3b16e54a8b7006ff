/* What the proxies read out of a runtime: node gradients (keep_all and a
 * keep list) against central differences of the reference with respect to
 * each node's output, a shared ReLU reading the sum of its readers'
 * gradients, a node no gradient reaches reading zeros, batch norm running
 * statistics against the reference's PyTorch rule, frozen ReLUs against
 * the reference with the same masks, and the errors. */
#include <math.h>
#include <string.h>

#include "check.h"

#define FD_STEP 1e-6
#define RTOL 2e-4
#define ATOL 2e-4
#define ENTRIES 10

static gsize
numel(SieveShape s)
{
  return (gsize)s.c * s.h * s.w;
}

typedef struct {
  guint x, c1, b1, r1, r2, c2, c3, dead_conv, zero, s, pool, gap, lin, loss;
} Net;

/* x -> conv -> BN -> relu (twice: r2 shares r1's tensor) -> conv 3x3 (from
 * r1) and conv 1x1 (from r2), plus a conv whose only reader is a zero, all
 * summed -> avg pool -> global pool -> linear -> loss. */
static SieveGraph *
net_build(Net *n)
{
  SieveGraph *g = sieve_graph_new("read");
  n->x = sieve_graph_input(g, 3, 6, 6);
  n->c1 = sieve_graph_conv2d(g, n->x, 4, 3, 1, 1, TRUE);
  n->b1 = sieve_graph_batch_norm(g, n->c1);
  n->r1 = sieve_graph_relu(g, n->b1);
  n->r2 = sieve_graph_relu(g, n->b1);
  n->c2 = sieve_graph_conv2d(g, n->r1, 5, 3, 1, 1, FALSE);
  n->c3 = sieve_graph_conv2d(g, n->r2, 5, 1, 1, 0, TRUE);
  n->dead_conv = sieve_graph_conv2d(g, n->x, 5, 1, 1, 0, FALSE);
  n->zero = sieve_graph_zero(g, n->dead_conv);
  n->s = sieve_graph_sum(g, (guint[]){n->c2, n->c3, n->zero}, 3);
  n->pool = sieve_graph_pool(g, n->s, SIEVE_POOL_AVG, 3, 1, 1);
  n->gap = sieve_graph_global_avg_pool(g, n->pool);
  n->lin = sieve_graph_linear(g, n->gap, 4, TRUE);
  n->loss = sieve_graph_softmax_ce(g, n->lin, 0);
  GError *error = NULL;
  sieve_graph_finish(g, n->loss, &error);
  g_assert_no_error(error);
  return g;
}

/* d objective / d (node v's output)[k] by central differences of the reference. */
static double
fd_node(Case *c, guint v, gsize k)
{
  double *y = ref_net_output_writable(c->ref, v);
  double keep = y[k];
  y[k] = keep + FD_STEP;
  ref_net_forward_from(c->ref, v + 1, c->xd, c->labels, SIEVE_MODE_TRAIN);
  double up = ref_net_objective(c->ref, c->wd);
  y[k] = keep - FD_STEP;
  ref_net_forward_from(c->ref, v + 1, c->xd, c->labels, SIEVE_MODE_TRAIN);
  double down = ref_net_objective(c->ref, c->wd);
  y[k] = keep;
  ref_net_forward(c->ref, c->xd, c->labels, SIEVE_MODE_TRAIN);
  return (up - down) / (2 * FD_STEP);
}

static float *
grad_of(SieveRuntime *rt, const SieveGraph *g, guint v)
{
  float *out = g_new(float, sieve_runtime_batch(rt) * numel(sieve_graph_node(g, v)->shape));
  GError *error = NULL;
  sieve_runtime_read_grad(rt, v, out, &error);
  g_assert_no_error(error);
  return out;
}

/* Compares node v's gradient in both runtimes with fd(v) (+ fd(also) when
 * also is not SIEVE_NODE_INVALID: two nodes sharing one tensor) on sampled
 * entries; returns the largest |fd| seen. */
static double
check_node(Case *c, SieveRuntime *listed, guint v, guint also, SieveRng *rng)
{
  gsize n = c->batch * numel(sieve_graph_node(c->graph, v)->shape);
  g_autofree float *a = grad_of(c->rt, c->graph, v);
  g_autofree float *b = grad_of(listed, c->graph, v);
  double fds[ENTRIES], scale = 0;
  gsize idx[ENTRIES];
  for (guint j = 0; j < ENTRIES; j++) {
    idx[j] = (gsize)sieve_rng_below(rng, n);
    fds[j] = fd_node(c, v, idx[j]) + (also != SIEVE_NODE_INVALID ? fd_node(c, also, idx[j]) : 0);
    scale = MAX(scale, fabs(fds[j]));
  }
  for (guint j = 0; j < ENTRIES; j++) {
    double allowed = RTOL * fabs(fds[j]) + ATOL * MAX(scale, 1e-4);
    if (!(fabs(a[idx[j]] - fds[j]) <= allowed) || !(fabs(b[idx[j]] - fds[j]) <= allowed))
      g_error("node %u (%s) element %" G_GSIZE_FORMAT ": keep_all %.9g, keep list %.9g, finite difference %.9g", v,
              sieve_op_kind_name(sieve_graph_node(c->graph, v)->kind), idx[j], a[idx[j]], b[idx[j]], fds[j]);
  }
  return scale;
}

static void
test_node_grads(void)
{
  Net n;
  g_autoptr(Case) c = case_new(net_build(&n), 3, 11, FALSE);
  case_randomise_params(c, 12);
  case_pick_input(c, 1e-3);
  guint keep[] = {n.c1, n.b1, n.r1, n.c2, n.c3, n.dead_conv, n.s, n.pool, n.lin};
  SieveRuntimeOptions o = {
    .batch = c->batch, .threads = 2, .backward = TRUE, .seed = c->seed, .keep = keep, .n_keep = G_N_ELEMENTS(keep)};
  GError *error = NULL;
  g_autoptr(SieveRuntime) listed = sieve_runtime_new(c->graph, &o, &error);
  g_assert_no_error(error);
  for (guint i = 0; i < sieve_runtime_n_params(c->rt); i++) {
    g_autofree float *v = g_new(float, sieve_runtime_param_info(c->rt, i)->size);
    sieve_runtime_get_param(c->rt, i, v, &error);
    g_assert_no_error(error);
    sieve_runtime_set_param(listed, i, v, &error);
    g_assert_no_error(error);
  }
  g_autofree float *early = g_new(float, c->batch * 4 * 36);
  g_assert_false(sieve_runtime_read_grad(listed, n.c1, early, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME);
  g_clear_error(&error);
  SieveRuntime *rts[2] = {c->rt, listed};
  for (int r = 0; r < 2; r++) {
    sieve_runtime_forward(rts[r], c->x, c->labels, SIEVE_MODE_TRAIN, &error);
    g_assert_no_error(error);
    sieve_runtime_backward(rts[r], NULL, &error);
    g_assert_no_error(error);
  }
  ref_net_forward(c->ref, c->xd, c->labels, SIEVE_MODE_TRAIN);
  SieveRng rng;
  sieve_rng_seed(&rng, 5);
  guint plain[] = {n.c1, n.b1, n.c2, n.c3, n.s, n.pool, n.lin};
  for (guint i = 0; i < G_N_ELEMENTS(plain); i++)
    g_assert_cmpfloat(check_node(c, listed, plain[i], SIEVE_NODE_INVALID, &rng), >, 0);
  /* r2 shares r1's tensor: both read the sum of their readers' gradients. */
  g_assert_cmpfloat(check_node(c, listed, n.r1, n.r2, &rng), >, 0);
  g_autofree float *g1 = grad_of(c->rt, c->graph, n.r1);
  g_autofree float *g2 = grad_of(c->rt, c->graph, n.r2);
  g_assert_cmpmem(g1, c->batch * 4 * 36 * sizeof(float), g2, c->batch * 4 * 36 * sizeof(float));
  /* A conv read only by a zero: no gradient reaches it. */
  g_autofree float *dead = grad_of(listed, c->graph, n.dead_conv);
  for (gsize k = 0; k < c->batch * 5 * 36; k++)
    g_assert_cmpfloat(dead[k], ==, 0);
  g_assert_cmpfloat(fd_node(c, n.dead_conv, 7), ==, 0);
  /* Errors: not kept, a folded zero, the loss, the input without input_grad. */
  g_autofree float *buf = g_new(float, c->batch * 5 * 36);
  guint bad[] = {n.gap, n.zero, n.loss, n.x};
  const char *what[] = {"not kept", "zero", "loss", "input_grad"};
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_assert_false(sieve_runtime_read_grad(listed, bad[i], buf, &error));
    g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME);
    if (!strstr(error->message, what[i]))
      g_error("read_grad of node %u: \"%s\" does not say %s", bad[i], error->message, what[i]);
    g_clear_error(&error);
  }
  /* Kept outputs stay readable without keep_all. */
  g_autofree float *relu = g_new(float, c->batch * 4 * 36);
  sieve_runtime_read(listed, n.r1, relu, &error);
  g_assert_no_error(error);
  const double *want = ref_net_output(c->ref, n.r1);
  for (gsize k = 0; k < c->batch * 4 * 36; k++)
    g_assert_cmpfloat(fabs(relu[k] - want[k]), <=, 1e-4 + 1e-4 * fabs(want[k]));
}

static void
test_keep_errors(void)
{
  Net n;
  g_autoptr(SieveGraph) g = net_build(&n);
  GError *error = NULL;
  guint bad = sieve_graph_n_nodes(g) + 3;
  SieveRuntimeOptions o = {.batch = 2, .threads = 2, .keep = &bad, .n_keep = 1};
  g_assert_null(sieve_runtime_new(g, &o, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME);
  g_assert_nonnull(strstr(error->message, "keep"));
  g_clear_error(&error);
}

/* Running statistics after training forwards: the reference's PyTorch rule;
 * replaced ones drive evaluation forwards. */
static void
test_running_stats(void)
{
  SieveGraph *g = sieve_graph_new("running");
  guint x = sieve_graph_input(g, 2, 5, 5);
  guint c1 = sieve_graph_conv2d(g, x, 6, 3, 1, 1, TRUE);
  guint bn = sieve_graph_batch_norm(g, c1);
  guint out = sieve_graph_linear(g, sieve_graph_global_avg_pool(g, sieve_graph_relu(g, bn)), 3, TRUE);
  GError *error = NULL;
  sieve_graph_finish(g, out, &error);
  g_assert_no_error(error);
  g_autoptr(Case) c = case_new(g, 4, 21, FALSE);
  case_randomise_params(c, 22);
  for (guint step = 0; step < 3; step++) {
    for (gsize k = 0; k < c->batch * c->in_size; k++) {
      c->x[k] = (float)(c->x[k] * 1.5 + 0.7);
      c->xd[k] = c->x[k];
    }
    case_check_forward(c, SIEVE_MODE_TRAIN, 1e-4, 1e-5);
    ref_net_update_running(c->ref);
  }
  float mean[6], var[6];
  sieve_runtime_get_running_stats(c->rt, bn, mean, var, &error);
  g_assert_no_error(error);
  double *rm = ref_net_running_mean(c->ref, bn), *rv = ref_net_running_var(c->ref, bn);
  double moved = 0;
  for (guint k = 0; k < 6; k++) {
    g_assert_cmpfloat(fabs(mean[k] - rm[k]), <=, 1e-5 + 1e-5 * fabs(rm[k]));
    g_assert_cmpfloat(fabs(var[k] - rv[k]), <=, 1e-5 + 1e-5 * fabs(rv[k]));
    moved = MAX(moved, fabs(var[k] - 1));
  }
  g_assert_cmpfloat(moved, >, 1e-2);
  /* Replaced: the evaluation forward normalises with the new values. */
  for (guint k = 0; k < 6; k++) {
    mean[k] = 0.1f * k - 0.2f;
    var[k] = 0.5f + 0.3f * k;
    rm[k] = mean[k];
    rv[k] = var[k];
  }
  sieve_runtime_set_running_stats(c->rt, bn, mean, var, &error);
  g_assert_no_error(error);
  case_check_forward(c, SIEVE_MODE_EVAL, 1e-4, 1e-5);
  float back[6];
  sieve_runtime_get_running_stats(c->rt, bn, NULL, back, &error);
  g_assert_no_error(error);
  g_assert_cmpmem(back, sizeof back, var, sizeof var);
  g_assert_false(sieve_runtime_get_running_stats(c->rt, c1, mean, var, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME);
  g_assert_nonnull(strstr(error->message, "batch norm"));
  g_clear_error(&error);
}

/* Frozen ReLUs: on an input far from the one they were frozen on, every
 * node follows the reference with the same masks, and the gradients its
 * finite differences (the frozen network is smooth); unfrozen, ordinary
 * ReLUs again. */
static void
test_freeze(void)
{
  Net n;
  g_autoptr(Case) c = case_new(net_build(&n), 3, 31, FALSE);
  case_randomise_params(c, 32);
  case_pick_input(c, 1e-3);
  GError *error = NULL;
  g_assert_false(sieve_runtime_freeze_activations(c->rt, TRUE, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME);
  g_clear_error(&error);
  SieveRuntime *rts[2] = {c->rt, c->lean};
  for (int r = 0; r < 2; r++) {
    sieve_runtime_forward(rts[r], c->x, c->labels, SIEVE_MODE_TRAIN, &error);
    g_assert_no_error(error);
    sieve_runtime_freeze_activations(rts[r], TRUE, &error);
    g_assert_no_error(error);
  }
  ref_net_forward(c->ref, c->xd, c->labels, SIEVE_MODE_TRAIN);
  ref_net_freeze(c->ref, TRUE);
  /* Another input: many ReLUs would now flip. */
  SieveRng rng;
  sieve_rng_seed(&rng, 33);
  for (gsize k = 0; k < c->batch * c->in_size; k++) {
    c->x[k] = (float)(2 * sieve_rng_uniform(&rng) - 1);
    c->xd[k] = c->x[k];
  }
  case_check_forward(c, SIEVE_MODE_TRAIN, 1e-4, 1e-5);
  gsize size = c->batch * 4 * 36, flipped = 0;
  g_autofree float *in = g_new(float, size);
  g_autofree float *out = g_new(float, size);
  sieve_runtime_read(c->rt, n.b1, in, &error);
  g_assert_no_error(error);
  sieve_runtime_read(c->rt, n.r1, out, &error);
  g_assert_no_error(error);
  for (gsize k = 0; k < size; k++)
    flipped += out[k] != MAX(in[k], 0.0f);
  g_assert_cmpuint(flipped, >, size / 20);
  case_check_grads(c, FD_STEP, RTOL, ATOL, ENTRIES, FALSE); /* the conv read by a zero has none */
  for (int r = 0; r < 2; r++) {
    sieve_runtime_freeze_activations(rts[r], FALSE, &error);
    g_assert_no_error(error);
  }
  ref_net_freeze(c->ref, FALSE);
  case_check_forward(c, SIEVE_MODE_TRAIN, 1e-4, 1e-5);
}

/* Signs packed by the runtime against the plain read: the same count of
 * set bits per example and the same Hamming distances between examples,
 * for layouts read straight (16 channels, blocked) and through a reorder
 * (5 channels, padded), a 2-D output and a folded zero. */
static guint
popcount(guint64 w)
{
  return (guint)__builtin_popcountll(w);
}

static void
test_signs(void)
{
  SieveGraph *g = sieve_graph_new("signs");
  guint x = sieve_graph_input(g, 3, 7, 9);
  guint a = sieve_graph_relu(g, sieve_graph_conv2d(g, x, 16, 3, 1, 1, TRUE));
  guint b = sieve_graph_relu(g, sieve_graph_conv2d(g, a, 5, 3, 1, 1, TRUE));
  guint z = sieve_graph_zero(g, a);
  guint h = sieve_graph_sum(g, (guint[]){sieve_graph_conv2d(g, b, 16, 1, 1, 0, TRUE), z}, 2);
  guint out = sieve_graph_linear(g, sieve_graph_global_avg_pool(g, h), 70, TRUE);
  GError *error = NULL;
  sieve_graph_finish(g, out, &error);
  g_assert_no_error(error);
  g_autoptr(Case) c = case_new(g, 5, 41, FALSE);
  case_randomise_params(c, 42);
  sieve_runtime_forward(c->rt, c->x, NULL, SIEVE_MODE_TRAIN, &error);
  g_assert_no_error(error);
  guint nodes[] = {x, a, b, z, out};
  for (guint i = 0; i < G_N_ELEMENTS(nodes); i++) {
    SieveShape s = sieve_graph_node(c->graph, nodes[i])->shape;
    gsize per = (gsize)s.c * s.h * s.w, words = (per + 63) / 64;
    g_autofree float *plain = g_new(float, c->batch * per);
    g_autofree guint64 *codes = g_new(guint64, c->batch * words);
    sieve_runtime_read(c->rt, nodes[i], plain, &error);
    g_assert_no_error(error);
    sieve_runtime_read_signs(c->rt, nodes[i], codes, &error);
    g_assert_no_error(error);
    for (guint p = 0; p < c->batch; p++) {
      guint set = 0, want = 0;
      for (gsize w = 0; w < words; w++)
        set += popcount(codes[p * words + w]);
      for (gsize k = 0; k < per; k++)
        want += plain[p * per + k] > 0;
      g_assert_cmpuint(set, ==, want);
      for (guint q = 0; q < c->batch; q++) {
        guint d = 0, dw = 0;
        for (gsize w = 0; w < words; w++)
          d += popcount(codes[p * words + w] ^ codes[q * words + w]);
        for (gsize k = 0; k < per; k++)
          dw += (plain[p * per + k] > 0) != (plain[q * per + k] > 0);
        g_assert_cmpuint(d, ==, dw);
      }
    }
  }
}

/* Channel dots (fisher's per-channel term) against the plain reads: convs
 * of 16 channels (oneDNN blocks them: read in place), of 5 (padded or
 * plain), the input (read by copies), after a full and an input-only
 * backward; and the errors of the reads for a folded zero. */
static void
test_channel_dots(void)
{
  SieveGraph *g = sieve_graph_new("dots");
  guint x = sieve_graph_input(g, 3, 7, 9);
  guint c1 = sieve_graph_conv2d(g, x, 16, 3, 1, 1, TRUE);
  guint a = sieve_graph_relu(g, sieve_graph_batch_norm(g, c1));
  guint c2 = sieve_graph_conv2d(g, a, 5, 3, 1, 1, TRUE);
  guint c3 = sieve_graph_conv2d(g, sieve_graph_relu(g, c2), 16, 1, 1, 0, FALSE);
  guint z = sieve_graph_zero(g, a);
  guint h = sieve_graph_sum(g, (guint[]){c3, z, a}, 3);
  guint out = sieve_graph_linear(g, sieve_graph_global_avg_pool(g, h), 7, TRUE);
  guint loss = sieve_graph_softmax_ce(g, out, 0);
  GError *error = NULL;
  sieve_graph_finish(g, loss, &error);
  g_assert_no_error(error);
  g_autoptr(Case) c = case_new(g, 5, 43, TRUE);
  case_randomise_params(c, 44);
  for (int pass = 0; pass < 2; pass++) {
    sieve_runtime_forward(c->rt, c->x, c->labels, SIEVE_MODE_TRAIN, &error);
    g_assert_no_error(error);
    if (pass == 0)
      sieve_runtime_backward(c->rt, NULL, &error);
    else
      sieve_runtime_backward_input(c->rt, NULL, &error);
    g_assert_no_error(error);
    guint nodes[] = {x, c1, c2, c3, a};
    for (guint i = 0; i < G_N_ELEMENTS(nodes); i++) {
      SieveShape s = sieve_graph_node(c->graph, nodes[i])->shape;
      gsize hw = (gsize)s.h * s.w, n = c->batch * s.c * hw;
      g_autofree float *v = g_new(float, n), *dv = g_new(float, n);
      g_autofree double *dots = g_new(double, c->batch * s.c);
      sieve_runtime_read(c->rt, nodes[i], v, &error);
      g_assert_no_error(error);
      sieve_runtime_read_grad(c->rt, nodes[i], dv, &error);
      g_assert_no_error(error);
      sieve_runtime_read_channel_dots(c->rt, nodes[i], dots, &error);
      g_assert_no_error(error);
      for (gsize bc = 0; bc < c->batch * s.c; bc++) {
        double want = 0, mag = 0;
        for (gsize k = 0; k < hw; k++) {
          want += (double)v[bc * hw + k] * dv[bc * hw + k];
          mag += fabs((double)v[bc * hw + k] * dv[bc * hw + k]);
        }
        g_assert_cmpfloat(fabs(dots[bc] - want), <=, 1e-12 * mag + 1e-30);
      }
    }
    double dots[5 * 16];
    g_assert_false(sieve_runtime_read_channel_dots(c->rt, z, dots, &error));
    g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME);
    g_assert_nonnull(strstr(error->message, "folds away"));
    g_clear_error(&error);
  }
}

/* An input-only backward: the input's and kept nodes' gradients of a full
 * one, and no parameter gradients. */
static void
test_backward_input(void)
{
  g_autoptr(SieveGraph) g = sieve_graph_new("input-only");
  guint x = sieve_graph_input(g, 3, 6, 6);
  guint h = sieve_graph_relu(g, sieve_graph_batch_norm(g, sieve_graph_conv2d(g, x, 8, 3, 1, 1, FALSE)));
  guint k = sieve_graph_conv2d(g, h, 8, 3, 1, 1, TRUE);
  guint out = sieve_graph_linear(g, sieve_graph_global_avg_pool(g, sieve_graph_relu(g, k)), 4, TRUE);
  GError *error = NULL;
  sieve_graph_finish(g, out, &error);
  g_assert_no_error(error);
  guint keep[] = {k};
  SieveRuntimeOptions o = {.batch = 3, .threads = 2, .backward = TRUE, .input_grad = TRUE, .seed = 2, .keep = keep,
                           .n_keep = 1};
  g_autoptr(SieveRuntime) rt = sieve_runtime_new(g, &o, &error);
  g_assert_no_error(error);
  float xs[3 * 108], dy[12], gx[2][3 * 108], gk[2][3 * 288];
  for (guint i = 0; i < G_N_ELEMENTS(xs); i++)
    xs[i] = (float)sin(0.37 * i);
  for (guint i = 0; i < G_N_ELEMENTS(dy); i++)
    dy[i] = (float)cos(1.3 * i);
  for (int pass = 0; pass < 2; pass++) {
    sieve_runtime_forward(rt, xs, NULL, SIEVE_MODE_TRAIN, &error);
    g_assert_no_error(error);
    if (pass == 0)
      sieve_runtime_backward(rt, dy, &error);
    else
      sieve_runtime_backward_input(rt, dy, &error);
    g_assert_no_error(error);
    sieve_runtime_read_input_grad(rt, gx[pass], &error);
    g_assert_no_error(error);
    sieve_runtime_read_grad(rt, k, gk[pass], &error);
    g_assert_no_error(error);
  }
  g_assert_cmpmem(gx[0], sizeof gx[0], gx[1], sizeof gx[1]);
  g_assert_cmpmem(gk[0], sizeof gk[0], gk[1], sizeof gk[1]);
  float w[8 * 27];
  g_assert_false(sieve_runtime_get_grad(rt, 0, w, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME);
  g_assert_nonnull(strstr(error->message, "no parameter gradients"));
  g_clear_error(&error);
}

/* Runtimes take their tensors' memory from arenas that earlier runtimes of
 * the process gave back: one compiled after a larger network has dirtied
 * that memory computes bit for bit what it computes on fresh pages. */
static SieveGraph *
arena_graph(guint channels, guint size)
{
  SieveGraph *g = sieve_graph_new("arena");
  guint x = sieve_graph_input(g, 3, size, size);
  guint h = sieve_graph_relu(g, sieve_graph_batch_norm(g, sieve_graph_conv2d(g, x, channels, 3, 1, 1, FALSE)));
  h = sieve_graph_sum(g, (guint[]){h, sieve_graph_conv2d(g, h, channels, 1, 1, 0, TRUE)}, 2);
  guint out = sieve_graph_linear(g, sieve_graph_global_avg_pool(g, h), 5, TRUE);
  GError *error = NULL;
  sieve_graph_finish(g, out, &error);
  g_assert_no_error(error);
  return g;
}

static void
arena_run(SieveGraph *g, guint batch, float *out, float *grad)
{
  SieveRuntimeOptions o = {.batch = batch, .threads = 2, .backward = TRUE, .input_grad = TRUE, .seed = 9};
  GError *error = NULL;
  g_autoptr(SieveRuntime) rt = sieve_runtime_new(g, &o, &error);
  g_assert_no_error(error);
  SieveShape in = sieve_graph_node(g, sieve_graph_input_node(g))->shape;
  gsize n = (gsize)batch * in.c * in.h * in.w;
  g_autofree float *x = g_new(float, n);
  g_autofree float *dy = g_new(float, batch * 5);
  for (gsize i = 0; i < n; i++)
    x[i] = (float)sin(0.11 * i);
  for (guint i = 0; i < batch * 5; i++)
    dy[i] = (float)cos(0.7 * i);
  sieve_runtime_forward(rt, x, NULL, SIEVE_MODE_TRAIN, &error);
  g_assert_no_error(error);
  if (out) {
    sieve_runtime_read(rt, sieve_graph_output(g), out, &error);
    g_assert_no_error(error);
    sieve_runtime_backward(rt, dy, &error);
    g_assert_no_error(error);
    sieve_runtime_read_input_grad(rt, grad, &error);
    g_assert_no_error(error);
    /* Eval mode reads the running statistics, which start from zero and one. */
    sieve_runtime_forward(rt, x, NULL, SIEVE_MODE_EVAL, &error);
    g_assert_no_error(error);
    sieve_runtime_read(rt, sieve_graph_output(g), out + batch * 5, &error);
    g_assert_no_error(error);
  }
}

static void
test_arena_reuse(void)
{
  g_autoptr(SieveGraph) small = arena_graph(5, 6), large = arena_graph(40, 24);
  float out[2][2 * 4 * 5], grad[2][4 * 3 * 36];
  arena_run(small, 4, out[0], grad[0]);
  for (int i = 0; i < 2; i++)
    arena_run(large, 16, NULL, NULL); /* fills the memory with its own values */
  arena_run(small, 4, out[1], grad[1]);
  g_assert_cmpmem(out[0], sizeof out[0], out[1], sizeof out[1]);
  g_assert_cmpmem(grad[0], sizeof grad[0], grad[1], sizeof grad[1]);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/runtime/read/node-grads", test_node_grads);
  g_test_add_func("/runtime/read/keep-errors", test_keep_errors);
  g_test_add_func("/runtime/read/running-stats", test_running_stats);
  g_test_add_func("/runtime/read/freeze", test_freeze);
  g_test_add_func("/runtime/read/signs", test_signs);
  g_test_add_func("/runtime/read/channel-dots", test_channel_dots);
  g_test_add_func("/runtime/read/backward-input", test_backward_input);
  g_test_add_func("/runtime/read/arena-reuse", test_arena_reuse);
  return g_test_run();
}
