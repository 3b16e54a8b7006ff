/* Structural and functional hashes (sieve/hash.h): hand-built graphs whose
 * variants must hash equal (node order, dead branches, zeros, identities,
 * nested sums) or differ (genuinely different networks), the degenerate
 * case, the functional hash's stability across thread counts, and
 * sieve_space_hash on the nb201 plugin (probe scale, threads, all 15,625
 * cells).  The whole-space partitions are checked against an independent
 * model in tests/cli/test_hash_cli.py. */
#include <math.h>
#include <string.h>

#include <sieve/sieve.h>

#include "core/core-private.h"

#include "test-support.h"

static SieveRegistry *registry;

/* ---- helpers ----------------------------------------------------------------- */

static SieveHash
structural(const SieveGraph *g)
{
  GError *error = NULL;
  SieveHash h;
  g_assert_true(sieve_graph_hash_structural(g, &h, &error));
  g_assert_no_error(error);
  return h;
}

static SieveHash
functional_with(const SieveGraph *g, guint threads)
{
  GError *error = NULL;
  SieveHash h;
  SieveFunctionalHashOptions o = {.threads = threads};
  g_assert_true(sieve_graph_hash_functional(g, &o, &h, &error));
  g_assert_no_error(error);
  return h;
}

static SieveHash
functional(const SieveGraph *g)
{
  return functional_with(g, 0);
}

#define assert_hash_eq(a, b)                                                                                  \
  G_STMT_START {                                                                                              \
    SieveHash a_ = (a), b_ = (b);                                                                             \
    if (!sieve_hash_equal(&a_, &b_)) {                                                                        \
      char ta[SIEVE_HASH_TEXT_LEN], tb[SIEVE_HASH_TEXT_LEN];                                                  \
      sieve_hash_format(&a_, ta);                                                                             \
      sieve_hash_format(&b_, tb);                                                                             \
      g_error("%s:%d: %s = %s differs from %s = %s", __FILE__, __LINE__, #a, ta, #b, tb);                    \
    }                                                                                                         \
  } G_STMT_END

#define assert_hash_ne(a, b)                                                                                  \
  G_STMT_START {                                                                                              \
    SieveHash a_ = (a), b_ = (b);                                                                             \
    if (sieve_hash_equal(&a_, &b_)) {                                                                         \
      char ta[SIEVE_HASH_TEXT_LEN];                                                                           \
      sieve_hash_format(&a_, ta);                                                                             \
      g_error("%s:%d: %s and %s both hash to %s", __FILE__, __LINE__, #a, #b, ta);                           \
    }                                                                                                         \
  } G_STMT_END

static SieveGraph *
finish(SieveGraph *g, guint out)
{
  GError *error = NULL;
  g_assert_true(sieve_graph_finish(g, out, &error));
  g_assert_no_error(error);
  return g;
}

/* relu-conv-bn, NAS-Bench-201's edge operation. */
static guint
rcb(SieveGraph *g, guint x, guint channels, guint kernel)
{
  x = sieve_graph_relu(g, x);
  x = sieve_graph_conv2d(g, x, channels, kernel, 1, kernel / 2, FALSE);
  return sieve_graph_batch_norm(g, x);
}

static guint
head(SieveGraph *g, guint x)
{
  x = sieve_graph_global_avg_pool(g, x);
  return sieve_graph_linear(g, x, 5, TRUE);
}

/* The reference network: out = head(rcb3(x) + avgpool(x)), with x the
 * stem conv of the input; variants below must hash like it. */
static SieveGraph *
reference(void)
{
  SieveGraph *g = sieve_graph_new("reference");
  guint x = sieve_graph_input(g, 3, 8, 8);
  x = sieve_graph_conv2d(g, x, 4, 3, 1, 1, FALSE);
  guint a = rcb(g, x, 4, 3);
  guint p = sieve_graph_pool(g, x, SIEVE_POOL_AVG, 3, 1, 1);
  guint s = sieve_graph_sum(g, (guint[]){a, p}, 2);
  return finish(g, head(g, s));
}

/* ---- text forms -------------------------------------------------------------- */

static void
test_text(void)
{
  SieveHash h = {G_GUINT64_CONSTANT(0x0123456789abcdef), G_GUINT64_CONSTANT(0xfedcba9876543210)}, back;
  char text[SIEVE_HASH_TEXT_LEN];
  sieve_hash_format(&h, text);
  g_assert_cmpstr(text, ==, "0123456789abcdeffedcba9876543210");
  g_assert_true(sieve_hash_parse(text, &back));
  g_assert_true(sieve_hash_equal(&h, &back));
  g_assert_true(sieve_hash_parse("0123456789ABCDEFFEDCBA9876543210", &back));
  g_assert_true(sieve_hash_equal(&h, &back));
  g_assert_false(sieve_hash_parse("0123456789abcdeffedcba987654321", &back));   /* 31 digits */
  g_assert_false(sieve_hash_parse("0123456789abcdeffedcba98765432100", &back)); /* 33 */
  g_assert_false(sieve_hash_parse("0123456789abcdefgedcba9876543210", &back));  /* 'g' */
  g_assert_false(sieve_hash_parse(NULL, &back));
  sieve_hash_format(sieve_hash_degenerate(), text);
  g_assert_cmpstr(text, ==, "00000000000000000000000000000000");

  SieveHashKind k;
  g_assert_true(sieve_hash_kind_from_name("structural", &k));
  g_assert_cmpint(k, ==, SIEVE_HASH_STRUCTURAL);
  g_assert_true(sieve_hash_kind_from_name("functional", &k));
  g_assert_cmpint(k, ==, SIEVE_HASH_FUNCTIONAL);
  g_assert_false(sieve_hash_kind_from_name("both", &k));
  g_assert_cmpstr(sieve_hash_kind_name(SIEVE_HASH_STRUCTURAL), ==, "structural");
  g_assert_cmpstr(sieve_hash_kind_name(SIEVE_HASH_FUNCTIONAL), ==, "functional");
}

/* ---- equal: variants of the reference ------------------------------------------ */

/* The same network with the pool built first, the sum's inputs swapped and
 * labels on the nodes. */
static SieveGraph *
reordered(void)
{
  SieveGraph *g = sieve_graph_new("reordered");
  guint x = sieve_graph_input(g, 3, 8, 8);
  sieve_graph_set_label(g, x, "in");
  x = sieve_graph_conv2d(g, x, 4, 3, 1, 1, FALSE);
  guint p = sieve_graph_pool(g, x, SIEVE_POOL_AVG, 3, 1, 1);
  sieve_graph_set_label(g, p, "the pool");
  guint a = rcb(g, x, 4, 3);
  guint s = sieve_graph_sum(g, (guint[]){p, a}, 2);
  return finish(g, head(g, s));
}

/* With branches that cannot reach the output. */
static SieveGraph *
dead_branches(void)
{
  SieveGraph *g = sieve_graph_new("dead");
  guint x = sieve_graph_input(g, 3, 8, 8);
  x = sieve_graph_conv2d(g, x, 4, 3, 1, 1, FALSE);
  guint dead = rcb(g, x, 4, 1);
  dead = sieve_graph_pool(g, dead, SIEVE_POOL_MAX, 3, 1, 1);
  guint a = rcb(g, x, 4, 3);
  sieve_graph_sum(g, (guint[]){a, dead}, 2); /* dead too: nothing reads it */
  guint p = sieve_graph_pool(g, x, SIEVE_POOL_AVG, 3, 1, 1);
  guint s = sieve_graph_sum(g, (guint[]){a, p}, 2);
  rcb(g, s, 4, 3); /* after the sum, unused */
  return finish(g, head(g, s));
}

/* Zeros and identities: out = head(id(rcb3(x)) + 0 + id(id(pool(x))) + pool(conv1(relu(0)))). */
static SieveGraph *
zeros_identities(void)
{
  SieveGraph *g = sieve_graph_new("zeros");
  guint x = sieve_graph_input(g, 3, 8, 8);
  x = sieve_graph_conv2d(g, x, 4, 3, 1, 1, FALSE);
  guint a = sieve_graph_identity(g, rcb(g, x, 4, 3));
  guint z = sieve_graph_zero(g, x);
  guint p = sieve_graph_identity(g, sieve_graph_identity(g, sieve_graph_pool(g, x, SIEVE_POOL_AVG, 3, 1, 1)));
  /* A bias-free conv and a pool of zero are zero (a batch norm is not: its shift). */
  guint fed_by_zero = sieve_graph_conv2d(g, sieve_graph_relu(g, z), 4, 1, 1, 0, FALSE);
  fed_by_zero = sieve_graph_pool(g, fed_by_zero, SIEVE_POOL_AVG, 3, 1, 1);
  guint s = sieve_graph_sum(g, (guint[]){a, z, p, fed_by_zero}, 4);
  return finish(g, head(g, s));
}

/* Sums nested: ((a + p) + 0), with a sum of one term around a. */
static SieveGraph *
nested_sums(void)
{
  SieveGraph *g = sieve_graph_new("nested");
  guint x = sieve_graph_input(g, 3, 8, 8);
  x = sieve_graph_conv2d(g, x, 4, 3, 1, 1, FALSE);
  guint a = sieve_graph_sum(g, (guint[]){rcb(g, x, 4, 3)}, 1);
  guint p = sieve_graph_pool(g, x, SIEVE_POOL_AVG, 3, 1, 1);
  guint inner = sieve_graph_sum(g, (guint[]){p, a}, 2);
  guint s = sieve_graph_sum(g, (guint[]){inner, sieve_graph_zero(g, inner)}, 2);
  return finish(g, head(g, s));
}

static void
test_equal_variants(void)
{
  g_autoptr(SieveGraph) ref = reference();
  SieveHash s = structural(ref), f = functional(ref);
  SieveGraph *(*variants[])(void) = {reordered, dead_branches, zeros_identities, nested_sums};
  for (guint i = 0; i < G_N_ELEMENTS(variants); i++) {
    g_autoptr(SieveGraph) v = variants[i]();
    g_test_message("variant %s", sieve_graph_name(v));
    assert_hash_eq(structural(v), s);
    assert_hash_eq(functional(v), f);
  }
}

/* Three terms summed in every grouping and order hash alike. */
static void
test_associative(void)
{
  SieveHash first = {0, 0};
  for (guint shape = 0; shape < 4; shape++) {
    g_autoptr(SieveGraph) g = sieve_graph_new("assoc");
    guint x = sieve_graph_input(g, 3, 8, 8);
    guint a = rcb(g, x, 3, 3), b = rcb(g, x, 3, 1), c = sieve_graph_pool(g, x, SIEVE_POOL_MAX, 3, 1, 1);
    guint s;
    switch (shape) {
    case 0: s = sieve_graph_sum(g, (guint[]){a, b, c}, 3); break;
    case 1: s = sieve_graph_sum(g, (guint[]){sieve_graph_sum(g, (guint[]){a, b}, 2), c}, 2); break;
    case 2: s = sieve_graph_sum(g, (guint[]){c, sieve_graph_sum(g, (guint[]){b, a}, 2)}, 2); break;
    default: s = sieve_graph_sum(g, (guint[]){b, sieve_graph_identity(g, sieve_graph_sum(g, (guint[]){c, a}, 2))}, 2);
    }
    finish(g, head(g, s));
    if (shape == 0)
      first = structural(g);
    else
      assert_hash_eq(structural(g), first);
  }
}

/* ---- different networks ------------------------------------------------------ */

typedef struct {
  const char *what;
  guint kernel, channels;
  SieveActivation act;
  SievePoolKind pool;
  gboolean swap_concat, bias, twice;
} Variant;

/* head(concat(act-conv(x), pool(x))), or with the sum term twice. */
static SieveGraph *
small(const Variant *v)
{
  SieveGraph *g = sieve_graph_new(v->what);
  guint x = sieve_graph_input(g, 3, 8, 8);
  guint a = sieve_graph_activation(g, x, v->act, 0);
  a = sieve_graph_conv2d(g, a, v->channels, v->kernel, 1, v->kernel / 2, FALSE);
  guint p = sieve_graph_pool(g, x, v->pool, 3, 1, 1);
  guint parts[2] = {a, p};
  if (v->swap_concat)
    parts[0] = p, parts[1] = a;
  guint c = sieve_graph_concat(g, parts, 2);
  if (v->twice)
    c = sieve_graph_sum(g, (guint[]){c, c}, 2);
  c = sieve_graph_global_avg_pool(g, c);
  return finish(g, sieve_graph_linear(g, c, 5, v->bias));
}

static void
test_different(void)
{
  const Variant variants[] = {
    {"base", 3, 4, SIEVE_ACT_RELU, SIEVE_POOL_AVG, FALSE, TRUE, FALSE},
    {"kernel 1", 1, 4, SIEVE_ACT_RELU, SIEVE_POOL_AVG, FALSE, TRUE, FALSE},
    {"8 channels", 3, 8, SIEVE_ACT_RELU, SIEVE_POOL_AVG, FALSE, TRUE, FALSE},
    {"tanh", 3, 4, SIEVE_ACT_TANH, SIEVE_POOL_AVG, FALSE, TRUE, FALSE},
    {"max pool", 3, 4, SIEVE_ACT_RELU, SIEVE_POOL_MAX, FALSE, TRUE, FALSE},
    {"concat swapped", 3, 4, SIEVE_ACT_RELU, SIEVE_POOL_AVG, TRUE, TRUE, FALSE},
    {"no bias", 3, 4, SIEVE_ACT_RELU, SIEVE_POOL_AVG, FALSE, FALSE, FALSE},
    {"doubled", 3, 4, SIEVE_ACT_RELU, SIEVE_POOL_AVG, FALSE, TRUE, TRUE},
  };
  guint n = G_N_ELEMENTS(variants);
  SieveHash s[G_N_ELEMENTS(variants)], f[G_N_ELEMENTS(variants)];
  for (guint i = 0; i < n; i++) {
    g_autoptr(SieveGraph) g = small(&variants[i]);
    s[i] = structural(g);
    f[i] = functional(g);
    g_assert_false(sieve_hash_equal(&s[i], sieve_hash_degenerate()));
    g_assert_false(sieve_hash_equal(&f[i], sieve_hash_degenerate()));
  }
  for (guint i = 0; i < n; i++)
    for (guint j = i + 1; j < n; j++) {
      if (sieve_hash_equal(&s[i], &s[j]) || sieve_hash_equal(&f[i], &f[j]))
        g_error("'%s' and '%s' hash alike", variants[i].what, variants[j].what);
    }
  /* The input's shape is part of what a network is. */
  g_autoptr(SieveGraph) a = sieve_graph_new("a");
  finish(a, head(a, sieve_graph_input(a, 3, 8, 8)));
  g_autoptr(SieveGraph) b = sieve_graph_new("b");
  finish(b, head(b, sieve_graph_input(b, 3, 4, 4)));
  assert_hash_ne(structural(a), structural(b));
  assert_hash_ne(functional(a), functional(b));
}

/* pool(a + b) and pool(a) + pool(b): different graphs, one function (average
 * pooling is linear).  The functional hash is there to join them. */
static void
test_functional_joins_more(void)
{
  SieveHash s[2], f[2];
  for (guint v = 0; v < 2; v++) {
    g_autoptr(SieveGraph) g = sieve_graph_new(v ? "pool of sum" : "sum of pools");
    guint x = sieve_graph_input(g, 3, 8, 8);
    x = sieve_graph_conv2d(g, x, 4, 3, 1, 1, FALSE);
    guint a = rcb(g, x, 4, 3);
    guint out;
    if (v)
      out = sieve_graph_pool(g, sieve_graph_sum(g, (guint[]){x, a}, 2), SIEVE_POOL_AVG, 3, 1, 1);
    else
      out = sieve_graph_sum(g, (guint[]){sieve_graph_pool(g, x, SIEVE_POOL_AVG, 3, 1, 1),
                                         sieve_graph_pool(g, a, SIEVE_POOL_AVG, 3, 1, 1)}, 2);
    out = rcb(g, out, 4, 3); /* downstream weights see the same function either way */
    finish(g, head(g, out));
    s[v] = structural(g);
    f[v] = functional(g);
  }
  assert_hash_ne(s[0], s[1]);
  assert_hash_eq(f[0], f[1]);
}

/* ---- operations of a zero ------------------------------------------------------- */

/* The network's outputs for 2 fixed examples, with parameters drawn from
 * their node's label and their name: two graphs share the values of their
 * common (labelled) nodes.  Every value, gamma and beta included, is
 * drawn in [0.1, 0.6): no shift or bias is zero by chance. */
static GArray *
forward_out(const SieveGraph *g)
{
  GError *error = NULL;
  SieveRuntimeOptions o = {.batch = 2, .threads = 1};
  g_autoptr(SieveRuntime) rt = sieve_runtime_new(g, &o, &error);
  g_assert_no_error(error);
  for (guint i = 0; i < sieve_runtime_n_params(rt); i++) {
    const SieveParamInfo *info = sieve_runtime_param_info(rt, i);
    SieveRng rng;
    const char *label = sieve_graph_node(g, info->node)->label;
    sieve_rng_seed(&rng, g_str_hash(label ? label : "") * 1000003u + g_str_hash(info->name));
    g_autofree float *v = g_new(float, info->size);
    for (guint64 k = 0; k < info->size; k++)
      v[k] = (float)(0.1 + 0.5 * sieve_rng_uniform(&rng));
    g_assert_true(sieve_runtime_set_param(rt, i, v, &error));
    g_assert_no_error(error);
  }
  SieveShape in = sieve_graph_node(g, sieve_graph_input_node(g))->shape;
  gsize n_in = 2 * (gsize)in.c * in.h * in.w;
  g_autofree float *x = g_new(float, n_in);
  SieveRng rng;
  sieve_rng_seed(&rng, 42);
  for (gsize k = 0; k < n_in; k++)
    x[k] = (float)(2 * sieve_rng_uniform(&rng) - 1);
  g_assert_true(sieve_runtime_forward(rt, x, NULL, SIEVE_MODE_EVAL, &error));
  g_assert_no_error(error);
  SieveShape s = sieve_graph_node(g, sieve_graph_output(g))->shape;
  GArray *y = g_array_new(FALSE, TRUE, sizeof(float));
  g_array_set_size(y, 2 * (gsize)s.c * s.h * s.w);
  g_assert_true(sieve_runtime_read(rt, sieve_graph_output(g), (float *)y->data, &error));
  g_assert_no_error(error);
  return y;
}

static double
max_abs_diff(const GArray *a, const GArray *b)
{
  g_assert_cmpuint(a->len, ==, b->len);
  double m = 0;
  for (guint k = 0; k < a->len; k++)
    m = MAX(m, fabs(g_array_index(a, float, k) - g_array_index(b, float, k)));
  return m;
}

typedef enum {
  Z_NONE, /* the base network */
  /* f(0) = 0 for every parameter value: the same function */
  Z_RELU,
  Z_TANH,
  Z_HARD_SWISH,
  Z_CONV,
  Z_POOL,
  Z_CONV_POOL_RELU,
  Z_MUL,
  /* f(0) a constant: another function */
  Z_SIGMOID,
  Z_HARD_SIGMOID,
  Z_BATCH_NORM,
  Z_CONV_BIAS,
  Z_CONV_BN, /* NAS-Bench-201's ReLU-conv-BN edge reading a `none` */
  Z_N
} ZeroCase;
#define Z_FIRST_CONSTANT Z_SIGMOID

/* input 2x8x8 -> conv1x1 (c) -> [c + op(zero(x))] -> global pool -> linear:
 * the network of the report, with each operation of a zero added to c. */
static SieveGraph *
zero_case(ZeroCase z)
{
  SieveGraph *g = sieve_graph_new("zero case");
  guint x = sieve_graph_input(g, 2, 8, 8);
  guint c = sieve_graph_conv2d(g, x, 2, 1, 1, 0, FALSE);
  sieve_graph_set_label(g, c, "c");
  guint o = sieve_graph_zero(g, x), t = SIEVE_NODE_INVALID;
  switch (z) {
  case Z_NONE:
    break;
  case Z_RELU:
  case Z_TANH:
  case Z_HARD_SWISH:
  case Z_SIGMOID:
  case Z_HARD_SIGMOID: {
    static const SieveActivation act[Z_N] = {[Z_RELU] = SIEVE_ACT_RELU, [Z_TANH] = SIEVE_ACT_TANH,
                                             [Z_HARD_SWISH] = SIEVE_ACT_HARD_SWISH, [Z_SIGMOID] = SIEVE_ACT_SIGMOID,
                                             [Z_HARD_SIGMOID] = SIEVE_ACT_HARD_SIGMOID};
    t = sieve_graph_activation(g, o, act[z], 0);
    break;
  }
  case Z_CONV:
    t = sieve_graph_conv2d(g, o, 2, 3, 1, 1, FALSE);
    break;
  case Z_POOL:
    t = sieve_graph_pool(g, o, SIEVE_POOL_AVG, 3, 1, 1);
    break;
  case Z_CONV_POOL_RELU:
    t = sieve_graph_relu(g, sieve_graph_pool(g, sieve_graph_conv2d(g, o, 2, 1, 1, 0, FALSE), SIEVE_POOL_MAX, 3, 1, 1));
    break;
  case Z_MUL:
    t = sieve_graph_mul(g, o, sieve_graph_global_avg_pool(g, c));
    break;
  case Z_BATCH_NORM:
    t = sieve_graph_batch_norm(g, o);
    break;
  case Z_CONV_BIAS:
    t = sieve_graph_conv2d(g, o, 2, 1, 1, 0, TRUE);
    break;
  case Z_CONV_BN:
    t = rcb(g, o, 2, 3);
    break;
  case Z_N:
    g_assert_not_reached();
  }
  guint y = t == SIEVE_NODE_INVALID ? c : sieve_graph_sum(g, (guint[]){c, t}, 2);
  y = sieve_graph_linear(g, sieve_graph_global_avg_pool(g, y), 3, TRUE);
  sieve_graph_set_label(g, y, "head");
  return finish(g, y);
}

/* An operation of a zero is zero only when f(0) = 0 whatever its
 * parameters: those networks hash like the base one and compute what it
 * computes; the others (a constant added: sigmoid(0) = 1/2, a batch norm's
 * shift, a conv's bias) hash apart and compute something else. */
static void
test_zero_operations(void)
{
  g_autoptr(SieveGraph) base = zero_case(Z_NONE);
  g_autoptr(GArray) y0 = forward_out(base);
  SieveHash s0 = structural(base), f0 = functional(base);
  for (ZeroCase z = Z_NONE + 1; z < Z_N; z++) {
    g_autoptr(SieveGraph) g = zero_case(z);
    g_autoptr(GArray) y = forward_out(g);
    double diff = max_abs_diff(y, y0);
    g_test_message("case %d: outputs differ by %g", z, diff);
    if (z < Z_FIRST_CONSTANT) {
      g_assert_cmpfloat(diff, <, 1e-6);
      assert_hash_eq(structural(g), s0);
      assert_hash_eq(functional(g), f0);
    } else {
      g_assert_cmpfloat(diff, >, 1e-3);
      assert_hash_ne(structural(g), s0);
      assert_hash_ne(functional(g), f0);
    }
  }
  /* sigmoid(0) and hard_sigmoid(0) are both 1/2: one function, two structures. */
  g_autoptr(SieveGraph) a = zero_case(Z_SIGMOID);
  g_autoptr(SieveGraph) b = zero_case(Z_HARD_SIGMOID);
  g_autoptr(GArray) ya = forward_out(a);
  g_autoptr(GArray) yb = forward_out(b);
  g_assert_cmpfloat(max_abs_diff(ya, yb), <, 1e-6);
  assert_hash_ne(structural(a), structural(b));
  assert_hash_eq(functional(a), functional(b));
}

/* ---- degenerate -------------------------------------------------------------- */

static void
test_degenerate(void)
{
  /* Output fed by zeros only, however deep. */
  g_autoptr(SieveGraph) g = sieve_graph_new("zero cell");
  guint x = sieve_graph_input(g, 3, 8, 8);
  guint z = sieve_graph_sum(g, (guint[]){sieve_graph_zero(g, x), sieve_graph_zero(g, x)}, 2);
  z = rcb(g, z, 4, 3);
  z = sieve_graph_sum(g, (guint[]){z, sieve_graph_identity(g, z)}, 2);
  finish(g, head(g, z));
  assert_hash_eq(structural(g), *sieve_hash_degenerate());
  assert_hash_eq(functional(g), *sieve_hash_degenerate());

  /* A different degenerate network: the same value. */
  g_autoptr(SieveGraph) h = sieve_graph_new("zero input");
  x = sieve_graph_input(h, 1, 4, 4);
  finish(h, sieve_graph_linear(h, sieve_graph_zero(h, x), 3, TRUE));
  assert_hash_eq(structural(h), *sieve_hash_degenerate());
  assert_hash_eq(functional(h), *sieve_hash_degenerate());

  /* Not degenerate: one live path next to the zeros. */
  g_autoptr(SieveGraph) k = sieve_graph_new("alive");
  x = sieve_graph_input(k, 3, 8, 8);
  z = sieve_graph_sum(k, (guint[]){sieve_graph_zero(k, x), sieve_graph_pool(k, x, SIEVE_POOL_MAX, 3, 1, 1)}, 2);
  finish(k, head(k, z));
  assert_hash_ne(structural(k), *sieve_hash_degenerate());
  assert_hash_ne(functional(k), *sieve_hash_degenerate());
}

/* ---- errors and odd graphs ---------------------------------------------------- */

static void
test_errors(void)
{
  GError *error = NULL;
  SieveHash h;
  g_autoptr(SieveGraph) open = sieve_graph_new("open");
  sieve_graph_input(open, 3, 8, 8);
  g_assert_false(sieve_graph_hash_structural(open, &h, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH);
  g_assert_nonnull(strstr(error->message, "not finished"));
  g_clear_error(&error);
  g_assert_false(sieve_graph_hash_functional(open, NULL, &h, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH);
  g_clear_error(&error);

  g_autoptr(SieveGraph) ref = reference();
  SieveFunctionalHashOptions one = {.batch = 1};
  g_assert_false(sieve_graph_hash_functional(ref, &one, &h, &error));
  g_assert_nonnull(strstr(error->message, "at least 2"));
  g_clear_error(&error);

  /* A concat part that is zero keeps its channels.  Built from a tensor of
   * its shape it runs; a zero of a shape nothing else has cannot be rebuilt,
   * which only the functional hash needs. */
  g_autoptr(SieveGraph) c = sieve_graph_new("concat zero");
  guint x = sieve_graph_input(c, 3, 8, 8);
  guint a = rcb(c, x, 4, 3);
  finish(c, head(c, sieve_graph_concat(c, (guint[]){a, sieve_graph_zero(c, a)}, 2)));
  g_autoptr(SieveGraph) c2 = sieve_graph_new("concat");
  x = sieve_graph_input(c2, 3, 8, 8);
  a = rcb(c2, x, 4, 3);
  finish(c2, head(c2, sieve_graph_concat(c2, (guint[]){a, a}, 2)));
  assert_hash_ne(structural(c), structural(c2));
  assert_hash_ne(functional(c), functional(c2));

  /* A zero of a shape no other tensor has is rebuilt from the operations
   * that made it, applied to its witness: conv(zero(x)) as zero(conv(x)). */
  g_autoptr(SieveGraph) d = sieve_graph_new("concat conv of zero");
  x = sieve_graph_input(d, 3, 8, 8);
  guint odd = sieve_graph_conv2d(d, sieve_graph_zero(d, x), 7, 1, 1, 0, FALSE); /* 7 channels: no other */
  finish(d, head(d, sieve_graph_concat(d, (guint[]){x, odd}, 2)));
  g_autoptr(SieveGraph) d2 = sieve_graph_new("concat zero of conv");
  x = sieve_graph_input(d2, 3, 8, 8);
  odd = sieve_graph_zero(d2, sieve_graph_conv2d(d2, x, 7, 1, 1, 0, FALSE));
  finish(d2, head(d2, sieve_graph_concat(d2, (guint[]){x, odd}, 2)));
  assert_hash_eq(structural(d), structural(d2));
  assert_hash_eq(functional(d), functional(d2));

  /* A network with its loss is hashed by its logits and the loss. */
  g_autoptr(SieveGraph) l = reference();
  g_assert_true(sieve_graph_add_loss(l, 0.0, &error));
  g_assert_no_error(error);
  assert_hash_ne(structural(l), structural(ref));
  assert_hash_ne(functional(l), functional(ref));
}

/* ---- nb201 -------------------------------------------------------------------- */

static SieveSpace *
nb201(const char *yaml)
{
  const SieveComponent *c = sieve_registry_lookup(registry, SIEVE_KIND_SPACE, "nb201");
  if (c == NULL)
    g_error("space 'nb201' is not in the build tree's plugins");
  GError *error = NULL;
  g_autoptr(SieveNode) map = yaml ? sieve_node_parse_string(yaml, -1, "test.yaml", &error) : NULL;
  g_assert_no_error(error);
  static const char *const reserved[] = {"plugin", NULL};
  g_autoptr(SieveOptions) options = sieve_options_new(sieve_component_get_info(c)->options, map, reserved, NULL,
                                                      "test", &error);
  g_assert_no_error(error);
  SieveSpace *space = sieve_space_new(c, options, &error);
  g_assert_no_error(error);
  return space;
}

static SieveHash
space_hash(const SieveSpace *space, const char *arch, SieveHashKind kind)
{
  GError *error = NULL;
  g_autoptr(SieveGenotype) g = sieve_space_parse(space, arch, &error);
  g_assert_no_error(error);
  SieveHash h;
  g_assert_true(sieve_space_hash(space, g, kind, &h, &error));
  g_assert_no_error(error);
  return h;
}

#define S SIEVE_HASH_STRUCTURAL
#define F SIEVE_HASH_FUNCTIONAL

static void
test_nb201_cells(void)
{
  g_autoptr(SieveSpace) space = nb201(NULL);
  /* The identity cell, written three ways (dead edges, skips, zeros). */
  const char *identity[] = {
    "|none~0|+|none~0|none~1|+|skip_connect~0|none~1|none~2|",
    "|skip_connect~0|+|none~0|skip_connect~1|+|none~0|none~1|skip_connect~2|",
    "|nor_conv_3x3~0|+|avg_pool_3x3~0|nor_conv_1x1~1|+|skip_connect~0|none~1|none~2|",
  };
  for (guint i = 1; i < G_N_ELEMENTS(identity); i++) {
    assert_hash_eq(space_hash(space, identity[i], S), space_hash(space, identity[0], S));
    assert_hash_eq(space_hash(space, identity[i], F), space_hash(space, identity[0], F));
  }
  /* Sums of the same terms grouped differently: x + conv(x) via node 2, or directly. */
  assert_hash_eq(space_hash(space, "|nor_conv_3x3~0|+|skip_connect~0|skip_connect~1|+|none~0|none~1|skip_connect~2|", S),
                 space_hash(space, "|nor_conv_3x3~0|+|none~0|none~1|+|skip_connect~0|skip_connect~1|none~2|", S));
  /* Cells whose output is zero: the whole network ignores its input. */
  const char *zero[] = {
    "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|",
    "|nor_conv_3x3~0|+|nor_conv_1x1~0|avg_pool_3x3~1|+|none~0|none~1|none~2|",
    "|none~0|+|none~0|nor_conv_3x3~1|+|none~0|avg_pool_3x3~1|nor_conv_1x1~2|",
  };
  for (guint i = 0; i < G_N_ELEMENTS(zero); i++) {
    assert_hash_eq(space_hash(space, zero[i], S), *sieve_hash_degenerate());
    assert_hash_eq(space_hash(space, zero[i], F), *sieve_hash_degenerate());
  }
  /* Genuinely different cells. */
  const char *distinct[] = {
    "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|",
    "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_1x1~1|skip_connect~2|",
    "|nor_conv_1x1~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|",
    "|avg_pool_3x3~0|+|none~0|none~1|+|none~0|none~1|skip_connect~2|",
    identity[0],
  };
  for (guint i = 0; i < G_N_ELEMENTS(distinct); i++)
    for (guint j = i + 1; j < G_N_ELEMENTS(distinct); j++) {
      assert_hash_ne(space_hash(space, distinct[i], S), space_hash(space, distinct[j], S));
      assert_hash_ne(space_hash(space, distinct[i], F), space_hash(space, distinct[j], F));
    }
  /* Average pooling is linear: pool(x + conv(x)) = pool(x) + pool(conv(x)).
   * Two structures, one function. */
  const char *p = "|nor_conv_3x3~0|+|skip_connect~0|skip_connect~1|+|none~0|none~1|avg_pool_3x3~2|";
  const char *q = "|nor_conv_3x3~0|+|none~0|none~1|+|avg_pool_3x3~0|avg_pool_3x3~1|none~2|";
  assert_hash_ne(space_hash(space, p, S), space_hash(space, q, S));
  assert_hash_eq(space_hash(space, p, F), space_hash(space, q, F));
}

/* sieve_space_hash runs the functional hash at the plugin's probe scale
 * (C=4, N=1, size=16) over the user's other options; the structural one at
 * the space's own scale. */
static void
test_nb201_probe_scale(void)
{
  const char *arch = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|";
  g_autoptr(SieveSpace) space = nb201("{classes: 7, in_channels: 1}");
  g_autoptr(SieveSpace) small = nb201("{classes: 7, in_channels: 1, C: 4, N: 1, size: 16}");
  GError *error = NULL;
  const SieveSpace *probe = sieve__space_probe(space, &error);
  g_assert_no_error(error);
  g_assert_true(probe == sieve__space_probe(space, NULL)); /* made once */
  g_autoptr(SieveGenotype) gs = sieve_space_parse(space, arch, &error);
  g_autoptr(SieveGenotype) gm = sieve_space_parse(small, arch, &error);
  g_assert_no_error(error);
  g_autoptr(SieveGraph) full = sieve_space_build(space, gs, &error);
  g_autoptr(SieveGraph) by_hand = sieve_space_build(small, gm, &error);
  g_assert_no_error(error);
  assert_hash_eq(space_hash(space, arch, F), functional(by_hand));
  assert_hash_eq(space_hash(space, arch, S), structural(full));
  assert_hash_ne(structural(full), structural(by_hand));

  /* The user's options that the probe keeps reach it (another class count:
   * another hash); those it replaces do not (C). */
  g_autoptr(SieveSpace) classes = nb201("{classes: 10, in_channels: 1}");
  g_autoptr(SieveSpace) wide = nb201("{classes: 7, in_channels: 1, C: 32}");
  assert_hash_ne(space_hash(classes, arch, F), space_hash(space, arch, F));
  assert_hash_eq(space_hash(wide, arch, F), space_hash(space, arch, F));
  assert_hash_ne(space_hash(wide, arch, S), space_hash(space, arch, S));

  /* A genotype of another space is refused. */
  SieveHash h;
  g_assert_false(sieve_space_hash(classes, gs, F, &h, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH);
  g_clear_error(&error);
}

/* A space that builds nothing has nothing to hash. */
static void
test_no_networks(void)
{
  g_autoptr(SieveSpace) space = sieve_space_new(NULL, NULL, NULL);
  sieve_space_add_int(space, "n", 1, 3, FALSE);
  g_autoptr(SieveGenotype) g = sieve_genotype_new(space);
  sieve_genotype_set(g, 0, 2);
  GError *error = NULL;
  SieveHash h;
  g_assert_false(sieve_space_hash(space, g, S, &h, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH);
  g_assert_nonnull(strstr(error->message, "builds no networks"));
  g_clear_error(&error);
}

/* Every step-th cell of the space (step coprime with 5 mixes all edges). */
static GPtrArray *
sample_cells(const SieveSpace *space, guint step)
{
  GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)sieve_genotype_free);
  for (guint k = 0; k < 15625; k += step) {
    SieveGenotype *g = sieve_genotype_new(space);
    for (guint e = 0, v = k; e < 6; e++, v /= 5)
      sieve_genotype_set(g, e, v % 5);
    g_ptr_array_add(out, g);
  }
  return out;
}

/* The rounding to 8 mantissa bits makes the hash independent of how oneDNN
 * splits its sums across threads (checked on 680 networks). */
static void
test_threads(void)
{
  g_autoptr(SieveSpace) space = nb201("{C: 4, N: 1, size: 16}");
  g_autoptr(GPtrArray) cells = sample_cells(space, 23);
  for (guint i = 0; i < cells->len; i++) {
    GError *error = NULL;
    g_autoptr(SieveGraph) g = sieve_space_build(space, cells->pdata[i], &error);
    g_assert_no_error(error);
    assert_hash_eq(functional_with(g, 1), functional_with(g, 2));
  }
}

typedef struct {
  const SieveSpace *space;
  GPtrArray *cells;
  SieveHash *out; /* 2 per cell */
} Work;

static gpointer
hash_all(gpointer data)
{
  Work *w = data;
  for (guint i = 0; i < w->cells->len; i++) {
    GError *error = NULL;
    if (!sieve_space_hash(w->space, w->cells->pdata[i], S, &w->out[2 * i], &error) ||
        !sieve_space_hash(w->space, w->cells->pdata[i], F, &w->out[2 * i + 1], &error))
      g_error("%s", error->message);
  }
  return NULL;
}

/* Two threads on one space (its probe copy and memo are shared) agree with
 * a fresh space hashing alone. */
static void
test_space_threads(void)
{
  g_autoptr(SieveSpace) shared = nb201(NULL);
  g_autoptr(SieveSpace) alone = nb201(NULL);
  g_autoptr(GPtrArray) cells = sample_cells(shared, 97);
  g_autoptr(GPtrArray) cells2 = sample_cells(alone, 97);
  g_autofree SieveHash *a = g_new(SieveHash, 2 * cells->len), *b = g_new(SieveHash, 2 * cells->len),
                       *c = g_new(SieveHash, 2 * cells->len);
  Work wa = {shared, cells, a}, wb = {shared, cells, b}, wc = {alone, cells2, c};
  GThread *t1 = g_thread_new("a", hash_all, &wa), *t2 = g_thread_new("b", hash_all, &wb);
  g_thread_join(t1);
  g_thread_join(t2);
  hash_all(&wc);
  for (guint i = 0; i < 2 * cells->len; i++) {
    assert_hash_eq(a[i], c[i]);
    assert_hash_eq(b[i], c[i]);
  }
}

/* All 15,625 cells: 5,147 structural classes (README.md explains why not
 * the authors' 6,466), and the functional hash never splits one.  The
 * functional hash of every 5th cell, of all under -m slow (the CLI test
 * checks all of them against an independent model). */
static void
test_all_cells(void)
{
  g_autoptr(SieveSpace) space = nb201(NULL);
  g_autoptr(GPtrArray) cells = sample_cells(space, 1);
  /* structural text -> functional text ("" until one is computed) */
  g_autoptr(GHashTable) classes = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GHashTable) functional_classes = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; i < cells->len; i++) {
    GError *error = NULL;
    SieveHash s, f;
    char ts[SIEVE_HASH_TEXT_LEN], tf[SIEVE_HASH_TEXT_LEN];
    g_assert_true(sieve_space_hash(space, cells->pdata[i], S, &s, &error));
    g_assert_no_error(error);
    sieve_hash_format(&s, ts);
    if (!g_hash_table_contains(classes, ts))
      g_hash_table_insert(classes, g_strdup(ts), g_strdup(""));
    if (!g_test_slow() && i % 7 != 0)
      continue;
    g_assert_true(sieve_space_hash(space, cells->pdata[i], F, &f, &error));
    g_assert_no_error(error);
    sieve_hash_format(&f, tf);
    const char *seen = g_hash_table_lookup(classes, ts);
    if (seen[0] == '\0')
      g_hash_table_insert(classes, g_strdup(ts), g_strdup(tf));
    else if (strcmp(seen, tf) != 0)
      g_error("structural class %s has functional hashes %s and %s", ts, seen, tf);
    g_hash_table_add(functional_classes, g_strdup(tf));
  }
  g_assert_cmpuint(g_hash_table_size(classes), ==, 5147);
  g_test_message("5147 structural classes; %u functional classes among the cells hashed both ways",
                 g_hash_table_size(functional_classes));
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  registry = test_registry_load();

  g_test_add_func("/hash/text", test_text);
  g_test_add_func("/hash/equal/variants", test_equal_variants);
  g_test_add_func("/hash/equal/associative", test_associative);
  g_test_add_func("/hash/different", test_different);
  g_test_add_func("/hash/functional/joins-more", test_functional_joins_more);
  g_test_add_func("/hash/zero-operations", test_zero_operations);
  g_test_add_func("/hash/degenerate", test_degenerate);
  g_test_add_func("/hash/errors", test_errors);
  g_test_add_func("/hash/nb201/cells", test_nb201_cells);
  g_test_add_func("/hash/nb201/probe-scale", test_nb201_probe_scale);
  g_test_add_func("/hash/space/no-networks", test_no_networks);
  g_test_add_func("/hash/functional/threads", test_threads);
  g_test_add_func("/hash/space/threads", test_space_threads);
  g_test_add_func("/hash/nb201/all", test_all_cells);
  int status = g_test_run();
  sieve_registry_free(registry);
  return status;
}
