/* The mobilenet space (plugins/spaces/mobilenet): parameter and
 * multiply-accumulate counts against hand computations and MobileNetV2's
 * published count, the genotype text and its errors, the space's size, the
 * hashes that see skips as depth, and a short Fashion-MNIST training. */
#include <math.h>
#include <string.h>

#include <sieve/sieve.h>

#include "test-support.h"

static SieveRegistry *registry;

static SieveSpace *
space_new(const char *yaml)
{
  return test_space_new(registry, "mobilenet", yaml, NULL);
}

static SieveGraph *
build(const SieveSpace *space, const char *text)
{
  GError *error = NULL;
  g_autoptr(SieveGenotype) g = sieve_space_parse(space, text, &error);
  g_assert_no_error(error);
  g_autofree char *again = sieve_space_format(space, g);
  g_assert_cmpstr(again, ==, text); /* the text is canonical */
  SieveGraph *graph = sieve_space_build(space, g, &error);
  g_assert_no_error(error);
  return graph;
}

/* ---- a ProxylessNAS-style configuration, counted by hand ------------------ */

/* 32x32x3 in, stem 16, first block 16 -> 8, stage 1: 16 channels, stride 2,
 * two positions; stage 2: 24 channels, stride 2, one position; head conv
 * 24 -> 64, 10 classes.  Genotype k5_e3_se,k3_e6_hs/k7_e6.  Each line:
 * weights (+ BN gamma and beta, + biases), and MACs = output elements x
 * inputs per output. */
#define SMALL "{stem_channels: 16, first_channels: 8, stages: '16:2:2,24:2:1', last_channels: 64}"

static void
test_hand_count(void)
{
  g_autoptr(SieveSpace) space = space_new(SMALL);
  g_autoptr(SieveGraph) g = build(space, "k5_e3_se,k3_e6_hs/k7_e6");
  guint64 params =
    /* stem conv3x3 3->16 + BN */ 16 * 3 * 9 + 2 * 16 +
    /* first: dw3x3 on 16 + BN, project 16->8 + BN */ 16 * 9 + 2 * 16 + 16 * 8 + 2 * 8 +
    /* s1b1 (8->16, s2, mid 24): expand 8->24 + BN, dw5x5 + BN */ 8 * 24 + 2 * 24 + 24 * 25 + 2 * 24 +
    /*   SE: 24->8 (make_divisible(24/4, 8) = 8) + bias, 8->24 + bias */ 24 * 8 + 8 + 8 * 24 + 24 +
    /*   project 24->16 + BN */ 24 * 16 + 2 * 16 +
    /* s1b2 (16->16, mid 96): expand + BN, dw3x3 + BN, project + BN */ 16 * 96 + 2 * 96 + 96 * 9 + 2 * 96 +
    96 * 16 + 2 * 16 +
    /* s2b1 (16->24, s2, mid 96): expand + BN, dw7x7 + BN, project + BN */ 16 * 96 + 2 * 96 + 96 * 49 + 2 * 96 +
    96 * 24 + 2 * 24 +
    /* head conv1x1 24->64 + BN, linear 64->10 + bias */ 24 * 64 + 2 * 64 + 64 * 10 + 10;
  guint64 macs =
    /* stem: 16x32x32 outputs x 27 */ 16 * 32 * 32 * 27 +
    /* first: dw 16x32x32 x 9, project 8x32x32 x 16 */ 16 * 32 * 32 * 9 + 8 * 32 * 32 * 16 +
    /* s1b1: expand 24x32x32 x 8, dw 24x16x16 x 25, SE 8 x 24 + 24 x 8, project 16x16x16 x 24 */
    24 * 32 * 32 * 8 + 24 * 16 * 16 * 25 + 8 * 24 + 24 * 8 + 16 * 16 * 16 * 24 +
    /* s1b2 at 16x16: expand 96 x 16, dw 96 x 9, project 16 x 96 */
    96 * 16 * 16 * 16 + 96 * 16 * 16 * 9 + 16 * 16 * 16 * 96 +
    /* s2b1: expand 96x16x16 x 16, dw 96x8x8 x 49, project 24x8x8 x 96 */
    96 * 16 * 16 * 16 + 96 * 8 * 8 * 49 + 24 * 8 * 8 * 96 +
    /* head: 64x8x8 x 24, linear 10 x 64 */ 64 * 8 * 8 * 24 + 10 * 64;
  g_assert_cmpuint(sieve_graph_params(g), ==, params);
  g_assert_cmpuint(sieve_graph_macs(g), ==, macs);

  /* Skipping s1b2 removes exactly its expand, dw and project (and the residual). */
  g_autoptr(SieveGraph) s = build(space, "k5_e3_se,skip/k7_e6");
  g_assert_cmpuint(sieve_graph_params(s), ==, params - (16 * 96 + 2 * 96 + 96 * 9 + 2 * 96 + 96 * 16 + 2 * 16));
  g_assert_cmpuint(sieve_graph_macs(s), ==, macs - (96 * 16 * 16 * 16 + 96 * 16 * 16 * 9 + 16 * 16 * 16 * 96));
}

/* ProxylessNAS's default stages at 32x32 (stride 1 in the stem and the
 * first stage), every block k3_e6 without SE: the published MobileNetV2
 * block at CIFAR scale.  Per block with c_in -> c_out, mid = 6 c_in, kernel
 * 3: 6 c_in (c_in + 2) [expand + BN] + 6 c_in (9 + 2) [dw + BN] + c_out (6
 * c_in + 2) [project + BN]. */
static guint64
block_params(guint64 in, guint64 out, guint64 e, guint64 k)
{
  guint64 mid = in * e;
  return (e == 1 ? 0 : mid * (in + 2)) + mid * (k * k + 2) + out * (mid + 2);
}

static void
test_default_stages(void)
{
  g_autoptr(SieveSpace) space = space_new("{se: off, activation: relu}");
  const char *text = "k3_e6,k3_e6,k3_e6,k3_e6/k3_e6,k3_e6,k3_e6,k3_e6/k3_e6,k3_e6,k3_e6,k3_e6/"
                     "k3_e6,k3_e6,k3_e6,k3_e6/k3_e6,k3_e6,k3_e6,k3_e6/k3_e6";
  g_autoptr(SieveGraph) g = build(space, text);
  static const guint ch[] = {24, 40, 80, 96, 192, 320}, nb[] = {4, 4, 4, 4, 4, 1};
  guint64 p = 32 * 3 * 9 + 2 * 32 + block_params(32, 16, 1, 3);
  guint in = 16;
  for (guint s = 0; s < 6; s++)
    for (guint b = 0; b < nb[s]; b++) {
      p += block_params(in, ch[s], 6, 3);
      in = ch[s];
    }
  p += 320 * 1280 + 2 * 1280 + 1280 * 10 + 10;
  g_assert_cmpuint(sieve_graph_params(g), ==, p);
  /* Extents 32, 32, 16, 8, 8, 4, 4: the last stage's output is 320x4x4. */
  guint last = sieve_graph_node(g, sieve_graph_output(g))->inputs[0];
  const SieveGraphNode *pool = sieve_graph_node(g, last);
  const SieveGraphNode *conv = sieve_graph_node(g, pool->inputs[0]);
  g_assert_cmpuint(sieve_graph_node(g, conv->inputs[0])->shape.h, ==, 4);
}

/* MobileNetV2 (Sandler et al. 2018, table 2: t, c, n, s = 1,16,1,1;
 * 6,24,2,2; 6,32,3,2; 6,64,4,2; 6,96,3,1; 6,160,3,2; 6,320,1,1; a 3x3
 * stride-2 stem of 32, a 1x1 conv to 1280, 1000 classes, 224x224) as a
 * setting of this space.  Table 4 of the paper gives 3.4M parameters and
 * 300M multiply-adds; torchvision's mobilenet_v2 has 3,504,872 parameters
 * (sum of p.numel() over model.parameters(), also in torchvision's model
 * table as 3,504,872), which bench/train_mobilenet_vs_torch.py --count
 * reproduces with PyTorch in the same run. */
static void
test_mobilenet_v2(void)
{
  g_autoptr(SieveSpace) space =
    space_new("{size: 224, classes: 1000, stem_stride: 2, stages: '24:2:2,32:2:3,64:2:4,96:1:3,160:2:3,320:1:1', "
              "kernels: '3', expansions: '6', se: off, activation: relu}");
  g_autoptr(SieveGraph) g = build(space, "k3_e6,k3_e6/k3_e6,k3_e6,k3_e6/k3_e6,k3_e6,k3_e6,k3_e6/k3_e6,k3_e6,k3_e6/"
                                         "k3_e6,k3_e6,k3_e6/k3_e6");
  g_assert_cmpuint(sieve_graph_params(g), ==, 3504872);
  /* The paper's 300M, to its rounding. */
  g_test_message("MobileNetV2: %" G_GUINT64_FORMAT " parameters, %" G_GUINT64_FORMAT " MACs", sieve_graph_params(g),
                 sieve_graph_macs(g));
  g_assert_cmpfloat(fabs(sieve_graph_macs(g) / 1e6 - 300), <, 5);

}

/* ---- the space: size, round trips, errors -------------------------------- */

static void
test_space(void)
{
  g_autoptr(SieveSpace) space = space_new(NULL);
  /* First positions: 6 MBConvs x SE x activation = 24; the others add skip:
   * 25.  Six stages of 4, 4, 4, 4, 4, 1 positions. */
  g_assert_cmpfloat(sieve_space_size(space), ==, pow(24, 6) * pow(25, 15));
  g_assert_cmpuint(sieve_space_n_decisions(space), ==, 21 * 3);
  SieveRng rng;
  sieve_rng_seed(&rng, 5);
  g_autoptr(SieveSpace) probe = space_new("{size: 16, width: 0.25, last_channels: 32}");
  for (guint i = 0; i < 20; i++) {
    g_autoptr(SieveGenotype) g = sieve_space_sample(space, &rng);
    g_autofree char *text = sieve_space_format(space, g);
    GError *error = NULL;
    g_autoptr(SieveGenotype) back = sieve_space_parse(space, text, &error);
    g_assert_no_error(error);
    g_assert_true(sieve_genotype_equal(g, back));
    g_autoptr(SieveGenotype) small = sieve_space_parse(probe, text, &error);
    g_assert_no_error(error);
    g_autoptr(SieveGraph) net = sieve_space_build(probe, small, &error);
    g_assert_no_error(error);
  }
  g_autoptr(SieveSpace) fixed = space_new("{se: on, activation: hard_swish, kernels: '3,5', expansions: '4'}");
  g_assert_cmpfloat(sieve_space_size(fixed), ==, pow(2, 6) * pow(3, 15));
}

static void
test_bad_text(void)
{
  g_autoptr(SieveSpace) space = space_new(SMALL);
  g_autoptr(SieveSpace) fixed = space_new("{stem_channels: 16, first_channels: 8, stages: '16:2:2,24:2:1', "
                                          "last_channels: 64, se: off, activation: relu}");
  static const struct {
    gboolean fixed;
    const char *text, *message;
  } cases[] = {
    {FALSE, "skip,k3_e6/k7_e6", "block s1b1 at character 1: the first block of a stage cannot be skip"},
    {FALSE, "k3_e6,k4_e6/k7_e6", "block s1b2 at character 7: 'k4_e6' is not skip or an MBConv of this space"},
    {FALSE, "k3_e6/k7_e6", "stage 1 has 2 block positions, the text gives 1 (at character 6: expected ',')"},
    {FALSE, "k3_e6,k3_e3,skip/k7_e6", "stage 1 has 2 block positions, the text gives more (at character 12: expected '/')"},
    {FALSE, "k3_e6,k3_e3/k7_e6/k3_e3", "the space has 2 stages; unexpected '/' at character 18"},
    {FALSE, "k3_e6,,/k7_e6", "expected block s1b2 at character 7, got ','"},
    {FALSE, "k3_e6,k3_e3/", "expected block s2b1 at character 13, got the end of the text"},
    {FALSE, "k3_e6_hs_se,k3_e3/k7_e6", "block s1b1 at character 1: 'k3_e6_hs_se' is not"},
    {TRUE, "k3_e6_se,k3_e3/k7_e6", "block s1b1 at character 1: the suffix _se is not a decision in this space (option se: off)"},
    {TRUE, "k3_e6,k3_e3_hs/k7_e6", "block s1b2 at character 7: the suffix _hs is not a decision in this space (option activation: relu)"},
  };
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    GError *error = NULL;
    g_autoptr(SieveGenotype) g = sieve_space_parse(cases[k].fixed ? fixed : space, cases[k].text, &error);
    g_assert_null(g);
    g_assert_nonnull(error);
    if (!strstr(error->message, cases[k].message))
      g_error("'%s': got \"%s\", expected \"%s\"", cases[k].text, error->message, cases[k].message);
    g_clear_error(&error);
  }
  /* Options: where and what. */
  static const struct {
    const char *yaml, *message;
  } opts[] = {
    {"{stages: '24:1'}", "stage 1 '24:1' is not channels:stride:max_blocks"},
    {"{stages: '24:1:4,x:2:2'}", "stage 2: channels 'x' is not an integer"},
    {"{kernels: '3,4'}", "kernels: 4 is even"},
    {"{expansions: '3,3'}", "expansions: 3 is listed twice"},
  };
  for (guint k = 0; k < G_N_ELEMENTS(opts); k++) {
    GError *error = NULL;
    g_autoptr(SieveSpace) bad = test_space_try(registry, "mobilenet", opts[k].yaml, NULL, &error);
    g_assert_null(bad);
    g_assert_nonnull(error);
    if (!strstr(error->message, opts[k].message))
      g_error("%s: got \"%s\", expected \"%s\"", opts[k].yaml, error->message, opts[k].message);
    g_clear_error(&error);
  }
}

/* A skip anywhere after a stage's first block is the same network: one
 * structural and one functional hash, which dedupe and the store key on. */
static void
test_hash_skips(void)
{
  g_autoptr(SieveSpace) space = space_new(SMALL);
  const char *a = "k5_e3_se,skip/k7_e6", *b = "k5_e3,skip/k7_e6";
  SieveHash ha[2], hb[2];
  for (int kind = 0; kind < 2; kind++) {
    GError *error = NULL;
    g_autoptr(SieveGenotype) ga = sieve_space_parse(space, a, &error);
    g_autoptr(SieveGenotype) gb = sieve_space_parse(space, b, &error);
    g_assert_no_error(error);
    SieveHashKind k = kind ? SIEVE_HASH_FUNCTIONAL : SIEVE_HASH_STRUCTURAL;
    g_assert_true(sieve_space_hash(space, ga, k, &ha[kind], &error));
    g_assert_true(sieve_space_hash(space, gb, k, &hb[kind], &error));
    g_assert_no_error(error);
    g_assert_false(sieve_hash_equal(&ha[kind], &hb[kind])); /* SE changes the function */
  }
  g_autoptr(SieveSpace) deep = space_new("{stem_channels: 16, first_channels: 8, stages: '16:2:3', last_channels: 64}");
  const char *texts[] = {"k3_e6,k5_e3_hs,skip", "k3_e6,skip,k5_e3_hs"};
  SieveHash h[2][2];
  for (guint t = 0; t < 2; t++)
    for (int kind = 0; kind < 2; kind++) {
      GError *error = NULL;
      g_autoptr(SieveGenotype) g = sieve_space_parse(deep, texts[t], &error);
      g_assert_no_error(error);
      g_assert_true(
        sieve_space_hash(deep, g, kind ? SIEVE_HASH_FUNCTIONAL : SIEVE_HASH_STRUCTURAL, &h[t][kind], &error));
      g_assert_no_error(error);
    }
  g_assert_true(sieve_hash_equal(&h[0][0], &h[1][0]));
  g_assert_true(sieve_hash_equal(&h[0][1], &h[1][1]));
}

/* ---- training -------------------------------------------------------------- */

/* One candidate (SE and hard-swish included) at Fashion-MNIST's 28x28, two
 * epochs on 2,000 images, one thread (a loaded machine stalls OpenMP's
 * barriers): it must beat chance (0.10) by far on 1,000 held-out images. */
static void
test_train(void)
{
  g_autoptr(SieveSpace) space =
    space_new("{in_channels: 1, size: 28, stem_channels: 16, first_channels: 8, stages: '16:2:2,24:2:2,32:2:1', "
              "last_channels: 128}");
  g_autoptr(SieveGraph) net = build(space, "k3_e3,k5_e3_se/k3_e6_hs,skip/k5_e3_se_hs");
  SieveTrainData d;
  g_autoptr(GError) error = NULL;
  if (!sieve_train_data_load("fashion-mnist", NULL, 1000, 2000, FALSE, TRUE, 7, &d, &error))
    g_error("%s", error->message);
  SieveTrainOptions o;
  sieve_train_options_init(&o);
  o.batch_size = 64;
  o.lr = 0.05;
  o.epochs = 2;
  o.seed = 3;
  o.threads = 1;
  SieveTrainReport r;
  g_assert_true(sieve_train(net, d.train, d.val, d.test, &o, &r, &error));
  g_assert_no_error(error);
  g_test_message("val %.4f train loss %.4f, %.0f img/s", r.val_acc, r.train_loss, r.images_per_s);
  g_assert_cmpfloat(r.val_acc, >=, 0.5);
  g_assert_cmpuint(r.params, ==, sieve_graph_params(net));
  sieve_train_data_clear(&d);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  registry = test_registry_load();
  g_test_add_func("/mobilenet/hand-count", test_hand_count);
  g_test_add_func("/mobilenet/default-stages", test_default_stages);
  g_test_add_func("/mobilenet/mobilenet-v2", test_mobilenet_v2);
  g_test_add_func("/mobilenet/space", test_space);
  g_test_add_func("/mobilenet/bad-text", test_bad_text);
  g_test_add_func("/mobilenet/hash-skips", test_hash_skips);
  g_test_add_func("/mobilenet/train", test_train);
  int status = g_test_run();
  sieve_registry_free(registry);
  return status;
}
