/* The zero-cost proxies on networks small enough to work out by hand (a
 * linear layer, a convolution into a linear layer, ReLUs on chosen
 * inputs), the finite-difference Hessian-vector product against the
 * analytic one, grasp against second differences of the double-precision
 * reference, the NASWOT kernel against a naive count, the linear algebra,
 * rank aggregation, degenerate networks, and bad input. */
#include <math.h>
#include <string.h>

#include <sieve/sieve.h>

#include "proxy/proxy-private.h"
#include "reference.h"

#define JACOB_K 1e-5

/* ---- helpers ----------------------------------------------------------------- */

static SieveGraph *
finish(SieveGraph *g, guint out)
{
  GError *error = NULL;
  sieve_graph_finish(g, out, &error);
  g_assert_no_error(error);
  return g;
}

/* Scores of names on graph with the given batch (x, y may be NULL). */
static void
compute(const SieveGraph *g, const char *names, guint batch, guint64 seed, const float *x, const gint32 *y,
        double *scores)
{
  g_auto(GStrv) v = g_strsplit(names, ",", -1);
  SieveProxyOptions o = {.batch = batch, .threads = 2, .seed = seed, .inputs = x, .labels = y};
  GError *error = NULL;
  gboolean ok = sieve_proxy_compute(g, (const char *const *)v, g_strv_length(v), &o, scores, NULL, &error);
  g_assert_no_error(error);
  g_assert_true(ok);
}

/* The initial values sieve_proxy_compute's network gets from seed: those of
 * any runtime compiled from the same graph and seed. */
static double *
param(const SieveGraph *g, guint64 seed, guint i)
{
  GError *error = NULL;
  g_autoptr(SieveRuntime) rt = sieve_runtime_new(g, &(SieveRuntimeOptions){.batch = 1, .seed = seed}, &error);
  g_assert_no_error(error);
  const SieveParamInfo *info = sieve_runtime_param_info(rt, i);
  g_autofree float *f = g_new(float, info->size);
  sieve_runtime_get_param(rt, i, f, &error);
  g_assert_no_error(error);
  double *d = g_new(double, info->size);
  for (guint64 k = 0; k < info->size; k++)
    d[k] = f[k];
  return d;
}

static void
assert_close(double got, double want, double rtol, const char *what)
{
  if (!(fabs(got - want) <= rtol * fabs(want) + 1e-12))
    g_error("%s: %.9g, expected %.9g (relative error %.2g, allowed %.2g)", what, got, want,
            fabs(got - want) / fabs(want), rtol);
}

static void
softmax(const double *z, guint k, double *p)
{
  double m = z[0], s = 0;
  for (guint i = 1; i < k; i++)
    m = MAX(m, z[i]);
  for (guint i = 0; i < k; i++)
    s += (p[i] = exp(z[i] - m));
  for (guint i = 0; i < k; i++)
    p[i] /= s;
}

static double
sign(double v)
{
  return (v > 0) - (v < 0);
}

/* ---- the table --------------------------------------------------------------------- */

static void
test_table(void)
{
  const char *expected[] = {"grad_norm", "snip", "plain", "l2_norm", "grasp", "fisher", "jacob_cov",
                            "naswot", "synflow", "zen", "gradsign", "params", "flops"};
  g_assert_cmpuint(sieve_proxy_count(), >=, G_N_ELEMENTS(expected));
  for (guint i = 0; i < G_N_ELEMENTS(expected); i++) {
    const SieveProxyInfo *info = sieve_proxy_lookup(expected[i]);
    g_assert_nonnull(info);
    g_assert_cmpstr(info->name, ==, expected[i]);
    g_assert_cmpuint(strlen(info->help), >, 20);
  }
  for (guint i = 0; i < sieve_proxy_count(); i++)
    g_assert_true(sieve_proxy_lookup(sieve_proxy_info(i)->name) == sieve_proxy_info(i));
  g_assert_false(sieve_proxy_lookup("params")->needs_data);
  g_assert_false(sieve_proxy_lookup("zen")->needs_data);
  g_assert_false(sieve_proxy_lookup("synflow")->needs_data);
  g_assert_false(sieve_proxy_lookup("l2_norm")->needs_data);
  g_assert_true(sieve_proxy_lookup("plain")->needs_data);
  g_assert_true(sieve_proxy_lookup("naswot")->needs_data);
  g_assert_null(sieve_proxy_lookup("synflw"));
  g_assert_null(sieve_proxy_lookup(NULL));

  const char *names[] = {"snip", "synflw"};
  GError *error = NULL;
  g_assert_true(sieve_proxy_check_names(names, 1, &error));
  g_assert_false(sieve_proxy_check_names(names, 2, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND);
  g_assert_nonnull(strstr(error->message, "\"synflw\""));
  for (guint i = 0; i < sieve_proxy_count(); i++)
    if (!strstr(error->message, sieve_proxy_info(i)->name))
      g_error("\"%s\" does not list %s", error->message, sieve_proxy_info(i)->name);
  g_clear_error(&error);
}

/* ---- a linear layer: every gradient proxy by hand ---------------------------------------- */

/* z = W x + b, 3 inputs, 2 classes, 2 examples. */
static void
test_linear(void)
{
  SieveGraph *gr = sieve_graph_new("linear");
  guint x = sieve_graph_input(gr, 3, 1, 1);
  g_autoptr(SieveGraph) g = finish(gr, sieve_graph_linear(gr, x, 2, TRUE));
  const float xs[] = {1, 2, -1, 0.5f, -1, 2};
  const gint32 ys[] = {0, 1};
  const guint B = 2;
  g_autofree double *w = param(g, 7, 0), *b = param(g, 7, 1);
  double grad[6] = {0}, p[2][2], h[6] = {0};
  for (guint n = 0; n < B; n++) {
    double z[2];
    for (guint k = 0; k < 2; k++)
      z[k] = b[k] + w[k * 3] * xs[n * 3] + w[k * 3 + 1] * xs[n * 3 + 1] + w[k * 3 + 2] * xs[n * 3 + 2];
    softmax(z, 2, p[n]);
    for (guint k = 0; k < 2; k++)
      for (guint i = 0; i < 3; i++)
        grad[k * 3 + i] += (p[n][k] - (k == (guint)ys[n])) / B * xs[n * 3 + i];
  }
  /* H[V] = 1/B sum_n (diag p - p p^T)(V x_n) x_n^T, with V = the gradient. */
  for (guint n = 0; n < B; n++) {
    double vx[2] = {0};
    for (guint k = 0; k < 2; k++)
      for (guint i = 0; i < 3; i++)
        vx[k] += grad[k * 3 + i] * xs[n * 3 + i];
    double pv = p[n][0] * vx[0] + p[n][1] * vx[1];
    for (guint k = 0; k < 2; k++)
      for (guint i = 0; i < 3; i++)
        h[k * 3 + i] += p[n][k] * (vx[k] - pv) * xs[n * 3 + i] / B;
  }
  double norm = 0, snip = 0, plain = 0, l2 = 0, grasp = 0;
  for (guint j = 0; j < 6; j++) {
    norm += grad[j] * grad[j];
    snip += fabs(grad[j] * w[j]);
    plain += grad[j] * w[j];
    l2 += w[j] * w[j];
    grasp -= w[j] * h[j];
  }
  norm = sqrt(norm);
  l2 = sqrt(l2);
  /* gradsign: each example alone. */
  double votes[6] = {0};
  for (guint n = 0; n < B; n++)
    for (guint k = 0; k < 2; k++)
      for (guint i = 0; i < 3; i++)
        votes[k * 3 + i] += sign((p[n][k] - (k == (guint)ys[n])) * xs[n * 3 + i]);
  double gradsign = 0;
  for (guint j = 0; j < 6; j++)
    gradsign += fabs(votes[j]);
  /* jacob_cov: every row of the Jacobian is W^T 1, so the correlation is
   * all ones: eigenvalues B and 0 (B - 1 times). */
  double jacob = -(log(B + JACOB_K) + 1 / (B + JACOB_K)) - (B - 1) * (log(JACOB_K) + 1 / JACOB_K);

  double s[10];
  compute(g, "grad_norm,snip,grasp,fisher,jacob_cov,naswot,gradsign,params,flops,zen", B, 7, xs, ys, s);
  assert_close(s[0], norm, 1e-5, "grad_norm");
  assert_close(s[1], snip, 1e-5, "snip");
  assert_close(s[2], grasp, 1e-3, "grasp");
  g_assert_cmpfloat(s[3], ==, 0);  /* fisher counts convolutions only */
  assert_close(s[4], jacob, 1e-9, "jacob_cov");
  g_assert_cmpfloat(s[5], ==, -INFINITY); /* no ReLU: a zero kernel */
  g_assert_cmpfloat(s[6], ==, gradsign);
  g_assert_cmpfloat(gradsign, <, 6 * B); /* the examples disagree somewhere */
  g_assert_cmpfloat(s[7], ==, 8);
  g_assert_cmpfloat(s[8], ==, 6);
  g_assert_true(isfinite(s[9]));
  /* plain keeps the signs snip drops (they differ here), l2_norm reads the
   * weights alone (the bias does not count). */
  compute(g, "plain,l2_norm,snip", B, 7, xs, ys, s);
  assert_close(s[0], plain, 1e-5, "plain");
  g_assert_cmpfloat(fabs(plain), <, snip * (1 - 1e-3));
  assert_close(s[1], l2, 1e-6, "l2_norm");
  assert_close(s[2], snip, 1e-5, "snip (beside plain)");
}

/* ---- a convolution into a linear layer: fisher and the per-layer norms ------------------- */

/* a = conv3x3(x) (one channel, one position), z = L a + c. */
static void
test_conv_fisher(void)
{
  SieveGraph *gr = sieve_graph_new("conv");
  guint x = sieve_graph_input(gr, 1, 3, 3);
  guint a = sieve_graph_conv2d(gr, x, 1, 3, 1, 0, FALSE);
  g_autoptr(SieveGraph) g = finish(gr, sieve_graph_linear(gr, a, 2, TRUE));
  const guint B = 3;
  float xs[27];
  for (guint k = 0; k < 27; k++)
    xs[k] = (float)sin(1.7 * k + 0.3);
  const gint32 ys[] = {1, 0, 1};
  g_autofree double *w = param(g, 3, 0), *l = param(g, 3, 1), *c = param(g, 3, 2);
  double dw[9] = {0}, dl[2] = {0}, fisher = 0;
  for (guint n = 0; n < B; n++) {
    double act = 0, z[2], p[2];
    for (guint k = 0; k < 9; k++)
      act += w[k] * xs[n * 9 + k];
    for (guint k = 0; k < 2; k++)
      z[k] = l[k] * act + c[k];
    softmax(z, 2, p);
    double da = 0;
    for (guint k = 0; k < 2; k++) {
      double dz = (p[k] - (k == (guint)ys[n])) / B;
      dl[k] += dz * act;
      da += dz * l[k];
    }
    for (guint k = 0; k < 9; k++)
      dw[k] += da * xs[n * 9 + k];
    fisher += 0.5 * (act * da) * (act * da) / B;
  }
  double nw = 0, nl = 0, snip = 0, plain = 0, ww = 0, wl = 0;
  for (guint k = 0; k < 9; k++) {
    nw += dw[k] * dw[k];
    snip += fabs(dw[k] * w[k]);
    plain += dw[k] * w[k];
    ww += w[k] * w[k];
  }
  for (guint k = 0; k < 2; k++) {
    nl += dl[k] * dl[k];
    snip += fabs(dl[k] * l[k]);
    plain += dl[k] * l[k];
    wl += l[k] * l[k];
  }
  double s[7];
  compute(g, "grad_norm,snip,fisher,params,flops,plain,l2_norm", B, 3, xs, ys, s);
  assert_close(s[0], sqrt(nw) + sqrt(nl), 1e-5, "grad_norm (a sum of per-layer norms)");
  assert_close(s[1], snip, 1e-5, "snip");
  assert_close(s[2], fisher, 1e-4, "fisher");
  g_assert_cmpfloat(s[3], ==, 9 + 2 + 2);
  g_assert_cmpfloat(s[4], ==, 9 + 2);
  assert_close(s[5], plain, 1e-5, "plain");
  assert_close(s[6], sqrt(ww) + sqrt(wl), 1e-6, "l2_norm (a sum of per-layer norms)");
}

/* ---- naswot on chosen codes ------------------------------------------------------------ */

/* input (4 units) -> `relus` ReLUs of it, summed -> linear. */
static SieveGraph *
relu_net(guint relus)
{
  SieveGraph *g = sieve_graph_new("relu");
  guint x = sieve_graph_input(g, 4, 1, 1);
  guint r[2];
  for (guint i = 0; i < relus; i++)
    r[i] = sieve_graph_relu(g, x);
  guint h = relus == 1 ? r[0] : sieve_graph_sum(g, r, relus);
  return finish(g, sieve_graph_linear(g, h, 2, TRUE));
}

static void
test_naswot(void)
{
  /* Codes 1010, 1100, 0111: agreements K = [[4,2,1],[2,4,1],[1,1,4]], det 44. */
  const float xs[] = {1, -1, 2, -3, 1, 1, -1, -1, -1, 2, 3, 4};
  double s;
  g_autoptr(SieveGraph) one = relu_net(1);
  compute(one, "naswot", 3, 0, xs, NULL, &s);
  assert_close(s, log(44), 1e-12, "naswot, one ReLU");
  /* Two ReLUs of one tensor count twice (the runtime computes one): K
   * doubles, det x 8. */
  g_autoptr(SieveGraph) two = relu_net(2);
  compute(two, "naswot", 3, 0, xs, NULL, &s);
  assert_close(s, log(352), 1e-12, "naswot, the same ReLU twice");
  /* Two examples with one code: a singular kernel, -inf (not NaN). */
  const float same[] = {1, -1, 2, -3, 1, 1, -1, -1, 5, -2, 1, -1};
  compute(one, "naswot", 3, 0, same, NULL, &s);
  g_assert_cmpfloat(s, ==, -INFINITY);
}

/* The packed kernel against a naive count, across word boundaries and on
 * the threaded path. */
static void
test_naswot_kernel(void)
{
  SieveRng rng;
  sieve_rng_seed(&rng, 9);
  const struct {
    guint n;
    gsize len;
  } cases[] = {{5, 130}, {7, 64}, {3, 1}, {40, 10000}};
  for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
    guint n = cases[c].n;
    gsize len = cases[c].len, words = (len + 63) / 64;
    g_autofree float *x = g_new(float, n * len);
    for (gsize k = 0; k < n * len; k++)
      x[k] = (float)(sieve_rng_uniform(&rng) - 0.5);
    g_autofree guint64 *codes = g_new(guint64, n * words);
    memset(codes, 0, n * words * sizeof(guint64));
    for (guint i = 0; i < n; i++)
      for (gsize u = 0; u < len; u++)
        codes[i * words + u / 64] |= (guint64)(x[i * len + u] > 0) << (u % 64);
    g_autofree gint64 *k = g_new0(gint64, n * n);
    sieve__naswot_kernel_add(codes, n, words, len, 3, 2, k);
    for (guint i = 0; i < n; i++)
      for (guint j = 0; j < n; j++) {
        gint64 agree = 0;
        for (gsize u = 0; u < len; u++)
          agree += (x[i * len + u] > 0) == (x[j * len + u] > 0);
        g_assert_cmpint(k[i * n + j], ==, 3 * agree);
      }
  }
}

/* ---- linear algebra -------------------------------------------------------------------- */

static void
test_linalg(void)
{
  /* A zero first pivot (a row swap); det = 0 - 2 (1 - 0) + (0 - 3) = -5. */
  double a[] = {0, 2, 1, 1, 1, 0, 3, 0, 1};
  assert_close(sieve__logabsdet(a, 3), log(5), 1e-14, "log |det|");
  double singular[] = {1, 2, 3, 2, 4, 6, 1, 0, 1};
  g_assert_cmpfloat(sieve__logabsdet(singular, 3), ==, -INFINITY);
  double t[] = {2, 1, 0, 1, 2, 1, 0, 1, 2}, w[3];
  sieve__sym_eigenvalues(t, 3, w);
  assert_close(w[0], 2 - sqrt(2), 1e-13, "eigenvalue 0");
  assert_close(w[1], 2, 1e-13, "eigenvalue 1");
  assert_close(w[2], 2 + sqrt(2), 1e-13, "eigenvalue 2");
  /* A random symmetric 30x30: trace and Frobenius norm are kept. */
  SieveRng rng;
  sieve_rng_seed(&rng, 4);
  const guint n = 30;
  double m[30 * 30], ev[30], tr = 0, fro = 0;
  for (guint i = 0; i < n; i++)
    for (guint j = 0; j <= i; j++) {
      m[i * n + j] = m[j * n + i] = sieve_rng_normal(&rng);
      tr += i == j ? m[i * n + i] : 0;
      fro += (i == j ? 1 : 2) * m[i * n + j] * m[i * n + j];
    }
  sieve__sym_eigenvalues(m, n, ev);
  double s1 = 0, s2 = 0;
  for (guint i = 0; i < n; i++) {
    s1 += ev[i];
    s2 += ev[i] * ev[i];
    if (i)
      g_assert_cmpfloat(ev[i], >=, ev[i - 1]);
  }
  assert_close(s1, tr, 1e-10, "sum of eigenvalues");
  assert_close(s2, fro, 1e-10, "sum of squared eigenvalues");
}

/* ---- the Hessian-vector product -------------------------------------------------------- */

/* The finite difference against the analytic Hessian of a linear softmax
 * layer, along a random direction over weight and bias. */
static void
test_hvp(void)
{
  const guint B = 4, I = 5, K = 3;
  SieveGraph *gr = sieve_graph_new("hvp");
  guint x = sieve_graph_input(gr, I, 1, 1);
  g_autoptr(SieveGraph) g = finish(gr, sieve_graph_linear(gr, x, K, TRUE));
  SieveRng rng;
  sieve_rng_seed(&rng, 12);
  float xs[4 * 5];
  gint32 ys[] = {0, 2, 1, 2};
  for (guint k = 0; k < B * I; k++)
    xs[k] = (float)sieve_rng_normal(&rng);
  GError *error = NULL;
  SieveProxyRun run = {.graph = g, .batch = B, .threads = 2, .in_size = I, .n_classes = K, .x = xs, .labels = ys};
  run.rt = sieve_runtime_new(g, &(SieveRuntimeOptions){.batch = B, .threads = 2, .backward = TRUE, .seed = 5}, &error);
  g_assert_no_error(error);
  float w[15], b[3], vw[15], vb[3];
  sieve_runtime_get_param(run.rt, 0, w, &error);
  sieve_runtime_get_param(run.rt, 1, b, &error);
  g_assert_no_error(error);
  for (guint k = 0; k < 15; k++)
    vw[k] = (float)sieve_rng_normal(&rng);
  for (guint k = 0; k < 3; k++)
    vb[k] = (float)sieve_rng_normal(&rng);
  /* Analytic: per example, dz = (diag p - p p^T)(V x + v_b); H[V]_w = dz x^T / B, H[V]_b = dz / B. */
  double hw[15] = {0}, hb[3] = {0};
  for (guint n = 0; n < B; n++) {
    double z[3], p[3], u[3], pu = 0;
    for (guint k = 0; k < K; k++) {
      z[k] = b[k];
      u[k] = vb[k];
      for (guint i = 0; i < I; i++) {
        z[k] += w[k * I + i] * xs[n * I + i];
        u[k] += vw[k * I + i] * xs[n * I + i];
      }
    }
    softmax(z, K, p);
    for (guint k = 0; k < K; k++)
      pu += p[k] * u[k];
    for (guint k = 0; k < K; k++) {
      double dz = p[k] * (u[k] - pu) / B;
      hb[k] += dz;
      for (guint i = 0; i < I; i++)
        hw[k * I + i] += dz * xs[n * I + i];
    }
  }
  g_assert_true(sieve__proxy_forward(&run, &error));
  g_assert_no_error(error);
  g_autoptr(GArray) params = g_array_new(FALSE, FALSE, sizeof(guint));
  guint idx[] = {0, 1};
  g_array_append_vals(params, idx, 2);
  g_autoptr(GPtrArray) v = g_ptr_array_new();
  g_ptr_array_add(v, vw);
  g_ptr_array_add(v, vb);
  g_autoptr(GPtrArray) hv = g_ptr_array_new_with_free_func(g_free);
  g_assert_true(sieve__proxy_hvp(&run, params, v, 1e-2, hv, &error));
  g_assert_no_error(error);
  double scale = 0;
  for (guint k = 0; k < 15; k++)
    scale = MAX(scale, fabs(hw[k]));
  const double *gw = hv->pdata[0], *gb = hv->pdata[1];
  for (guint k = 0; k < 15; k++)
    if (!(fabs(gw[k] - hw[k]) <= 1e-3 * scale))
      g_error("H v, weight %u: finite difference %.9g, analytic %.9g", k, gw[k], hw[k]);
  for (guint k = 0; k < 3; k++)
    if (!(fabs(gb[k] - hb[k]) <= 1e-3 * scale))
      g_error("H v, bias %u: finite difference %.9g, analytic %.9g", k, gb[k], hb[k]);
  /* The parameters are restored. */
  float after[15];
  sieve_runtime_get_param(run.rt, 0, after, &error);
  g_assert_cmpmem(after, sizeof after, w, sizeof w);
  sieve_runtime_free(run.rt);
  g_free(run.logits);
}

/* grasp on conv -> BN -> ReLU -> conv -> BN -> ReLU -> pool -> linear
 * against -theta . H g from the reference in double: the mixed second
 * difference of L(theta + s theta + t g) (smooth there: every ReLU input
 * is kept away from zero). */
static void
test_grasp_reference(void)
{
  SieveGraph *gr = sieve_graph_new("grasp");
  guint x = sieve_graph_input(gr, 2, 5, 5);
  guint h = sieve_graph_relu(gr, sieve_graph_batch_norm(gr, sieve_graph_conv2d(gr, x, 4, 3, 1, 1, FALSE)));
  h = sieve_graph_relu(gr, sieve_graph_batch_norm(gr, sieve_graph_conv2d(gr, h, 4, 3, 1, 1, FALSE)));
  guint skip = sieve_graph_conv2d(gr, x, 4, 1, 1, 0, FALSE); /* no batch norm: not scale-invariant */
  h = sieve_graph_sum(gr, (guint[]){h, skip}, 2);
  g_autoptr(SieveGraph) g = finish(gr, sieve_graph_linear(gr, sieve_graph_global_avg_pool(gr, h), 3, TRUE));
  g_autoptr(SieveGraph) lossy = sieve_graph_copy(g);
  GError *error = NULL;
  sieve_graph_add_loss(lossy, 0, &error);
  g_assert_no_error(error);
  const guint B = 4;
  const guint64 seed = 21;
  g_autoptr(SieveRuntime) rt =
    sieve_runtime_new(lossy, &(SieveRuntimeOptions){.batch = B, .threads = 2, .backward = TRUE, .seed = seed}, &error);
  g_assert_no_error(error);
  RefNet *ref = ref_net_new(lossy, B);
  ref_net_load_params(ref, rt, &error);
  g_assert_no_error(error);
  float xs[4 * 50];
  double xd[4 * 50];
  gint32 ys[] = {0, 2, 1, 1};
  /* An input whose ReLUs are well away from their kinks. */
  SieveRng rng;
  for (guint64 s = 0;; s++) {
    g_assert_cmpuint(s, <, 100);
    sieve_rng_seed(&rng, 100 + s);
    for (guint k = 0; k < B * 50; k++)
      xd[k] = xs[k] = (float)sieve_rng_normal(&rng);
    ref_net_forward(ref, xd, ys, SIEVE_MODE_TRAIN);
    if (ref_net_kink_margin(ref) > 2e-3)
      break;
  }
  /* g: the runtime's gradient (what the proxy uses, to float rounding). */
  sieve_runtime_forward(rt, xs, ys, SIEVE_MODE_TRAIN, &error);
  g_assert_no_error(error);
  sieve_runtime_backward(rt, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(GArray) weights = sieve__proxy_weight_params(rt, lossy);
  g_assert_cmpuint(weights->len, ==, 4);
  g_autoptr(GPtrArray) theta = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) grad = g_ptr_array_new_with_free_func(g_free);
  double tn = 0, gn = 0;
  for (guint k = 0; k < weights->len; k++) {
    guint i = g_array_index(weights, guint, k);
    guint64 size = sieve_runtime_param_info(rt, i)->size;
    float *gf = g_new(float, size);
    sieve_runtime_get_grad(rt, i, gf, &error);
    g_assert_no_error(error);
    double *gd = g_new(double, size), *td = g_new(double, size);
    memcpy(td, ref_net_param(ref, i), size * sizeof(double));
    for (guint64 j = 0; j < size; j++) {
      gd[j] = gf[j];
      gn += gd[j] * gd[j];
      tn += td[j] * td[j];
    }
    g_free(gf);
    g_ptr_array_add(theta, td);
    g_ptr_array_add(grad, gd);
  }
  double hs = 1e-4, ht = 1e-4 * sqrt(tn / gn), f[2][2];
  for (int a = 0; a < 2; a++)
    for (int b2 = 0; b2 < 2; b2++) {
      double s = a ? -hs : hs, t = b2 ? -ht : ht;
      for (guint k = 0; k < weights->len; k++) {
        guint i = g_array_index(weights, guint, k);
        double *p = ref_net_param(ref, i);
        const double *td = theta->pdata[k], *gd = grad->pdata[k];
        for (guint64 j = 0; j < ref_net_param_size(ref, i); j++)
          p[j] = td[j] * (1 + s) + t * gd[j];
      }
      ref_net_forward(ref, xd, ys, SIEVE_MODE_TRAIN);
      g_assert_cmpfloat(ref_net_kink_margin(ref), >, 1e-3);
      f[a][b2] = ref_net_loss(ref);
    }
  double want = -(f[0][0] - f[0][1] - f[1][0] + f[1][1]) / (4 * hs * ht);
  double s;
  compute(g, "grasp", B, seed, xs, ys, &s);
  g_test_message("grasp %.9g, reference %.9g", s, want);
  g_assert_cmpfloat(fabs(want), >, 1e-6);
  assert_close(s, want, 5e-3, "grasp against the reference's second differences");
  ref_net_free(ref);
}

/* ---- zen ------------------------------------------------------------------------------------ */

/* The features are the input itself (no layer before the pool): zen is
 * log(alpha E|N(0,1)|) = log(0.01 sqrt(2/pi)), to sampling error. */
static void
test_zen_identity(void)
{
  SieveGraph *gr = sieve_graph_new("zen");
  guint x = sieve_graph_input(gr, 4, 8, 8);
  g_autoptr(SieveGraph) g = finish(gr, sieve_graph_linear(gr, sieve_graph_global_avg_pool(gr, x), 3, TRUE));
  double s;
  compute(g, "zen", 64, 1, NULL, NULL, &s);
  g_assert_cmpfloat(fabs(s - log(0.01 * sqrt(2 / G_PI))), <, 0.03);
}

/* ---- degenerate networks ----------------------------------------------------------------- */

static void
test_degenerate(void)
{
  const char *all = "grad_norm,snip,grasp,fisher,jacob_cov,naswot,zen,gradsign,params,flops,synflow";
  const guint B = 8;
  /* conv -> relu -> zero -> pool -> linear: the output is the bias. */
  SieveGraph *gr = sieve_graph_new("cut");
  guint x = sieve_graph_input(gr, 3, 6, 6);
  guint h = sieve_graph_zero(gr, sieve_graph_relu(gr, sieve_graph_conv2d(gr, x, 4, 3, 1, 1, FALSE)));
  g_autoptr(SieveGraph) cut = finish(gr, sieve_graph_linear(gr, sieve_graph_global_avg_pool(gr, h), 3, TRUE));
  double s[11];
  compute(cut, all, B, 2, NULL, NULL, s);
  double jacob = -(double)B * (log(JACOB_K) + 1 / JACOB_K);
  g_assert_cmpfloat(s[0], ==, 0);
  g_assert_cmpfloat(s[1], ==, 0);
  g_assert_cmpfloat(s[2], ==, 0);
  g_assert_cmpfloat(s[3], ==, 0);
  assert_close(s[4], jacob, 1e-12, "jacob_cov of a constant network");
  g_assert_true(isfinite(s[5])); /* the ReLU still sees the input */
  assert_close(s[6], log(1e-9), 1e-12, "zen of a constant network");
  g_assert_cmpfloat(s[7], ==, 0);
  g_assert_cmpfloat(s[8], ==, 4 * 27 + 3 * 4 + 3);
  g_assert_cmpfloat(s[9], ==, 4 * 27 * 36 + 12);
  g_assert_cmpfloat(s[10], ==, 0); /* synflow: R does not depend on the weights it scores */
  /* plain: no gradient reaches the cut-off weights and the classifier's
   * input is zero; l2_norm counts the weights whether they matter or not. */
  compute(cut, "plain,l2_norm", B, 2, NULL, NULL, s);
  g_assert_cmpfloat(s[0], ==, 0);
  g_assert_cmpfloat(s[1], >, 0);

  /* zero -> relu -> conv -> BN -> pool -> linear: no ReLU sees the input. */
  gr = sieve_graph_new("blind");
  x = sieve_graph_input(gr, 3, 6, 6);
  h = sieve_graph_batch_norm(gr, sieve_graph_conv2d(gr, sieve_graph_relu(gr, sieve_graph_zero(gr, x)), 4, 3, 1, 1,
                                                    FALSE));
  g_autoptr(SieveGraph) blind = finish(gr, sieve_graph_linear(gr, sieve_graph_global_avg_pool(gr, h), 3, TRUE));
  compute(blind, all, B, 2, NULL, NULL, s);
  for (guint i = 0; i < 11; i++)
    g_assert_false(isnan(s[i]));
  g_assert_cmpfloat(s[5], ==, -INFINITY);
  assert_close(s[4], jacob, 1e-12, "jacob_cov of a blind network");
  g_assert_true(isfinite(s[6]));
  g_assert_cmpfloat(s[6], <, log(1e-9) + 20); /* log(1e-9) + the batch norm term, small here */
}

/* ---- bad input ---------------------------------------------------------------------------- */

static void
test_errors(void)
{
  SieveGraph *gr = sieve_graph_new("small");
  guint x = sieve_graph_input(gr, 3, 1, 1);
  g_autoptr(SieveGraph) g = finish(gr, sieve_graph_linear(gr, x, 2, TRUE));
  double s[2];
  GError *error = NULL;
  SieveProxyOptions o = {.batch = 2, .threads = 1};
  const char *bad[] = {"snip", "gradnorm"};
  g_assert_false(sieve_proxy_compute(g, bad, 2, &o, s, NULL, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND);
  g_assert_nonnull(strstr(error->message, "grad_norm"));
  g_clear_error(&error);
  /* Nothing asked: nothing to do. */
  g_assert_true(sieve_proxy_compute(g, NULL, 0, &o, NULL, NULL, &error));
  /* Labels outside the logits. */
  const char *snip[] = {"snip"};
  const gint32 labels[] = {0, 2};
  o.labels = labels;
  g_assert_false(sieve_proxy_compute(g, snip, 1, &o, s, NULL, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME);
  g_assert_nonnull(strstr(error->message, "example 1"));
  g_clear_error(&error);
  o.labels = NULL;
  /* A NaN in the batch: an error, not a NaN score. */
  const float nan_x[] = {1, NAN, 2, 0, 1, 1};
  o.inputs = nan_x;
  g_assert_false(sieve_proxy_compute(g, snip, 1, &o, s, NULL, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_DIVERGED);
  g_assert_nonnull(strstr(error->message, "NaN"));
  g_clear_error(&error);
  o.inputs = NULL;
  /* A graph that ends in its loss, and one not finished. */
  g_autoptr(SieveGraph) lossy = sieve_graph_copy(g);
  sieve_graph_add_loss(lossy, 0, &error);
  g_assert_no_error(error);
  g_assert_false(sieve_proxy_compute(lossy, snip, 1, &o, s, NULL, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH);
  g_assert_nonnull(strstr(error->message, "logits"));
  g_clear_error(&error);
  g_autoptr(SieveGraph) open = sieve_graph_new("open");
  sieve_graph_input(open, 1, 1, 1);
  g_assert_false(sieve_proxy_compute(open, snip, 1, &o, s, NULL, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH);
  g_clear_error(&error);
  /* batch 0 is the documented default of 64 examples. */
  o.batch = 0;
  g_assert_true(sieve_proxy_compute(g, snip, 1, &o, s, NULL, &error));
  g_assert_no_error(error);
  g_assert_true(isfinite(s[0]) && s[0] > 0);
}

/* ---- sharing passes, times ---------------------------------------------------------------------- */

/* Every proxy named together gives what it gives alone, and the times add
 * up to the call's wall time. */
static void
test_shared(void)
{
  SieveGraph *gr = sieve_graph_new("shared");
  guint x = sieve_graph_input(gr, 3, 8, 8);
  guint a = sieve_graph_relu(gr, sieve_graph_batch_norm(gr, sieve_graph_conv2d(gr, x, 8, 3, 1, 1, FALSE)));
  guint b = sieve_graph_relu(gr, sieve_graph_batch_norm(gr, sieve_graph_conv2d(gr, a, 8, 3, 1, 1, FALSE)));
  guint c2 = sieve_graph_batch_norm(gr, sieve_graph_conv2d(gr, sieve_graph_relu(gr, a), 8, 1, 1, 0, FALSE));
  guint h = sieve_graph_sum(gr, (guint[]){b, c2}, 2);
  g_autoptr(SieveGraph) g =
    finish(gr, sieve_graph_linear(gr, sieve_graph_global_avg_pool(gr, sieve_graph_relu(gr, h)), 5, TRUE));
  const char *names[] = {"grad_norm", "snip", "grasp", "fisher", "jacob_cov", "naswot", "synflow", "zen",
                         "gradsign", "params", "flops"};
  const guint n = G_N_ELEMENTS(names);
  double together[11], ms[11], alone;
  SieveProxyOptions o = {.batch = 16, .threads = 2, .seed = 4};
  GError *error = NULL;
  gint64 t0 = g_get_monotonic_time();
  g_assert_true(sieve_proxy_compute(g, names, n, &o, together, ms, &error));
  double wall = (g_get_monotonic_time() - t0) / 1000.0;
  g_assert_no_error(error);
  double sum = 0;
  for (guint i = 0; i < n; i++) {
    g_assert_cmpfloat(ms[i], >=, 0);
    sum += ms[i];
  }
  g_assert_cmpfloat(sum, <=, wall + 0.01);
  g_assert_cmpfloat(sum, >=, 0.9 * wall - 1);
  for (guint i = 0; i < n; i++) {
    g_assert_true(sieve_proxy_compute(g, &names[i], 1, &o, &alone, NULL, &error));
    g_assert_no_error(error);
    g_autofree char *what = g_strdup_printf("%s named with every other proxy", names[i]);
    assert_close(together[i], alone, 1e-5, what);
  }
}

/* ---- params and flops ------------------------------------------------------------------------ */

static void
test_params_flops(void)
{
  SieveGraph *gr = sieve_graph_new("counts");
  guint x = sieve_graph_input(gr, 3, 8, 8);
  guint h = sieve_graph_relu(gr, sieve_graph_batch_norm(gr, sieve_graph_conv2d(gr, x, 8, 3, 1, 1, TRUE)));
  h = sieve_graph_conv2d(gr, sieve_graph_pool(gr, h, SIEVE_POOL_MAX, 2, 2, 0), 16, 1, 1, 0, FALSE);
  g_autoptr(SieveGraph) g = finish(gr, sieve_graph_linear(gr, sieve_graph_global_avg_pool(gr, h), 10, TRUE));
  double s[2];
  compute(g, "params,flops", 1, 0, NULL, NULL, s);
  /* conv 8*3*9 + 8, BN 2*8, conv 16*8, linear 16*10 + 10. */
  g_assert_cmpfloat(s[0], ==, 224 + 16 + 128 + 170);
  /* conv 8x8 positions * 8 * 27, conv 4x4 * 16 * 8, linear 160. */
  g_assert_cmpfloat(s[1], ==, 13824 + 2048 + 160);
}

/* The NAS-Bench-201 network at the benchmark's scale: the PyTorch peer's
 * count_params and count_flops for this cell (torch_nb201.py params). */
static void
test_params_flops_nb201(void)
{
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  sieve_registry_load_default(registry, NULL, NULL);
  const SieveComponent *c = sieve_registry_lookup(registry, SIEVE_KIND_SPACE, "nb201");
  g_assert_nonnull(c);
  GError *error = NULL;
  g_autoptr(SieveOptions) options = sieve_options_new(sieve_component_get_info(c)->options, NULL, NULL, NULL, "t", &error);
  g_assert_no_error(error);
  g_autoptr(SieveSpace) space = sieve_space_new(c, options, &error);
  g_assert_no_error(error);
  g_autoptr(SieveGenotype) geno = sieve_space_parse(
    space, "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|", &error);
  g_assert_no_error(error);
  g_autoptr(SieveGraph) g = sieve_space_build(space, geno, &error);
  g_assert_no_error(error);
  double s[2];
  compute(g, "params,flops", 64, 0, NULL, NULL, s);
  g_assert_cmpfloat(s[0], ==, 802426);
  g_assert_cmpfloat(s[1], ==, 113951360);
}

/* ---- rank aggregation ---------------------------------------------------------------------- */

static void
test_rank(void)
{
  /* Proxy 0: 1, 3, 3, NaN -> ranks 1, 2.5, 2.5, 0 (ties share, NaN lowest).
   * Proxy 1: -inf, 0, 5, 2 -> ranks 0, 1, 3, 2. */
  const double scores[] = {1, -INFINITY, 3, 0, 3, 5, NAN, 2};
  double out[5];
  sieve_proxy_rank_aggregate(scores, 4, 2, NULL, out);
  const double mean[] = {0.5, 1.75, 2.75, 1};
  for (guint c = 0; c < 4; c++)
    g_assert_cmpfloat(out[c], ==, mean[c]);
  const double w[] = {3, 1};
  sieve_proxy_rank_aggregate(scores, 4, 2, w, out);
  const double weighted[] = {0.75, 2.125, 2.625, 0.5};
  for (guint c = 0; c < 4; c++)
    g_assert_cmpfloat(out[c], ==, weighted[c]);
  /* All tied (every score NaN): everyone gets the middle rank. */
  const double nans[] = {NAN, NAN, NAN};
  sieve_proxy_rank_aggregate(nans, 3, 1, NULL, out);
  for (guint c = 0; c < 3; c++)
    g_assert_cmpfloat(out[c], ==, 1);
  /* One proxy, distinct scores: the ranks themselves. */
  const double one[] = {0.3, -2, 7, 1e30, 0};
  sieve_proxy_rank_aggregate(one, 5, 1, NULL, out);
  const double ranks[] = {2, 0, 3, 4, 1};
  for (guint c = 0; c < 5; c++)
    g_assert_cmpfloat(out[c], ==, ranks[c]);
  sieve_proxy_rank_aggregate(NULL, 0, 2, NULL, NULL);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/proxy/table", test_table);
  g_test_add_func("/proxy/linear", test_linear);
  g_test_add_func("/proxy/conv-fisher", test_conv_fisher);
  g_test_add_func("/proxy/naswot", test_naswot);
  g_test_add_func("/proxy/naswot-kernel", test_naswot_kernel);
  g_test_add_func("/proxy/linalg", test_linalg);
  g_test_add_func("/proxy/hvp", test_hvp);
  g_test_add_func("/proxy/grasp-reference", test_grasp_reference);
  g_test_add_func("/proxy/zen-identity", test_zen_identity);
  g_test_add_func("/proxy/degenerate", test_degenerate);
  g_test_add_func("/proxy/errors", test_errors);
  g_test_add_func("/proxy/shared", test_shared);
  g_test_add_func("/proxy/params-flops", test_params_flops);
  g_test_add_func("/proxy/params-flops-nb201", test_params_flops_nb201);
  g_test_add_func("/proxy/rank", test_rank);
  return g_test_run();
}
