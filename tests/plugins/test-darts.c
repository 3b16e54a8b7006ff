/* The darts space plugin (DARTS / NAS-Bench-301 cells), loaded from the
 * build tree: its decisions and size, the published genotypes' parameter
 * counts, the Genotype(...) text in both directions and its errors, hashes,
 * and every bundled optimizer on it. */
#include <math.h>
#include <string.h>

#include <sieve/sieve.h>

#include "test-support.h"

static SieveRegistry *registry;

/* Published genotypes, as the authors' repositories print them. */

/* Liu, Simonyan & Yang, "DARTS: Differentiable Architecture Search", ICLR
 * 2019, Table 1 (second order, 3.3M parameters; first order, 3.3M); the
 * genotypes from the authors' cnn/genotypes.py. */
#define DARTS_V2                                                                                                  \
  "Genotype(normal=[('sep_conv_3x3', 0), ('sep_conv_3x3', 1), ('sep_conv_3x3', 0), ('sep_conv_3x3', 1), "        \
  "('sep_conv_3x3', 1), ('skip_connect', 0), ('skip_connect', 0), ('dil_conv_3x3', 2)], normal_concat=[2, 3, 4, " \
  "5], reduce=[('max_pool_3x3', 0), ('max_pool_3x3', 1), ('skip_connect', 2), ('max_pool_3x3', 1), "              \
  "('max_pool_3x3', 0), ('skip_connect', 2), ('skip_connect', 2), ('max_pool_3x3', 1)], reduce_concat=[2, 3, 4, 5])"
#define DARTS_V1                                                                                                  \
  "Genotype(normal=[('sep_conv_3x3', 1), ('sep_conv_3x3', 0), ('skip_connect', 0), ('sep_conv_3x3', 1), "        \
  "('skip_connect', 0), ('sep_conv_3x3', 1), ('sep_conv_3x3', 0), ('skip_connect', 2)], normal_concat=[2, 3, 4, " \
  "5], reduce=[('max_pool_3x3', 0), ('max_pool_3x3', 1), ('skip_connect', 2), ('max_pool_3x3', 0), "              \
  "('max_pool_3x3', 0), ('skip_connect', 2), ('skip_connect', 2), ('avg_pool_3x3', 0)], reduce_concat=[2, 3, 4, 5])"
/* Xu et al., "PC-DARTS: Partial Channel Connections for Memory-Efficient
 * Architecture Search", ICLR 2020, Table 1: 3.6M; the authors' genotypes.py
 * (PC_DARTS_cifar, with range(2, 6)). */
#define PC_DARTS                                                                                                   \
  "Genotype(normal=[('sep_conv_3x3', 1), ('skip_connect', 0), ('sep_conv_3x3', 0), ('dil_conv_3x3', 1), "         \
  "('sep_conv_5x5', 0), ('sep_conv_3x3', 1), ('avg_pool_3x3', 0), ('dil_conv_3x3', 1)], normal_concat=range(2, "  \
  "6), reduce=[('sep_conv_5x5', 1), ('max_pool_3x3', 0), ('sep_conv_5x5', 1), ('sep_conv_5x5', 2), "              \
  "('sep_conv_3x3', 0), ('sep_conv_3x3', 3), ('sep_conv_3x3', 1), ('sep_conv_3x3', 2)], reduce_concat=range(2, 6))"
/* Chen, Xie, Wu & Tian, "Progressive Differentiable Architecture Search",
 * ICCV 2019, Table 1 (CIFAR-10): 3.4M; the authors' genotypes.py (PDARTS,
 * spacing as there). */
#define P_DARTS                                                                                                    \
  "Genotype(normal=[('skip_connect', 0), ('dil_conv_3x3', 1), ('skip_connect', 0),('sep_conv_3x3', 1), "          \
  "('sep_conv_3x3', 1), ('sep_conv_3x3', 3), ('sep_conv_3x3',0), ('dil_conv_5x5', 4)], normal_concat=range(2, "   \
  "6), reduce=[('avg_pool_3x3', 0), ('sep_conv_5x5', 1), ('sep_conv_3x3', 0), ('dil_conv_5x5', 2), "              \
  "('max_pool_3x3', 0), ('dil_conv_3x3', 1), ('dil_conv_3x3', 1), ('dil_conv_5x5', 3)], reduce_concat=range(2, 6))"

static SieveSpace *
space_new(const char *yaml)
{
  return test_space_new(registry, "darts", yaml, NULL);
}

static SieveGenotype *
parse_ok(const SieveSpace *space, const char *text)
{
  GError *error = NULL;
  SieveGenotype *g = sieve_space_parse(space, text, &error);
  g_assert_no_error(error);
  return g;
}

static guint64
params_of(const SieveSpace *space, const char *text)
{
  g_autoptr(SieveGenotype) g = parse_ok(space, text);
  GError *error = NULL;
  g_autoptr(SieveGraph) net = sieve_space_build(space, g, &error);
  g_assert_no_error(error);
  return sieve_graph_params(net);
}

static guint
count_kind(const SieveGraph *g, SieveOpKind kind)
{
  guint n = 0;
  for (guint i = 0; i < sieve_graph_n_nodes(g); i++)
    n += sieve_graph_node(g, i)->kind == kind && sieve_graph_node_live(g, i);
  return n;
}

static void
test_decisions(void)
{
  g_autoptr(SieveSpace) space = space_new(NULL);
  g_assert_cmpuint(sieve_space_n_decisions(space), ==, 24);
  static const guint pairs[4] = {1, 3, 6, 10};
  for (guint t = 0; t < 2; t++)
    for (guint k = 0; k < 4; k++) {
      const SieveDecision *in = sieve_space_decision(space, (t * 4 + k) * 3);
      g_autofree char *name = g_strdup_printf("%s_node%u_inputs", t ? "reduce" : "normal", k + 2);
      g_assert_cmpstr(in->name, ==, name);
      g_assert_cmpuint(in->n_choices, ==, pairs[k]);
      g_assert_cmpuint(sieve_space_decision(space, (t * 4 + k) * 3 + 1)->n_choices, ==, 7);
      g_assert_cmpuint(sieve_space_decision(space, (t * 4 + k) * 3 + 2)->n_choices, ==, 7);
    }
  g_assert_cmpstr(sieve_space_decision(space, 0)->choices[0], ==, "0_1");
  g_assert_cmpstr(sieve_space_decision(space, 9)->choices[9], ==, "3_4");
  /* NAS-Bench-301 (Siems et al. 2020, section 2) gives the space as ~10^18:
   * per cell 7^8 * (1 * 3 * 6 * 10) unordered pairs of distinct inputs =
   * 49 * 147 * 294 * 490 = 1,037,664,180, squared for the two cells. */
  double per_cell = 49.0 * 147 * 294 * 490;
  g_assert_cmpfloat(per_cell, ==, 1037664180.0);
  g_assert_cmpfloat(fabs(sieve_space_size(space) / (per_cell * per_cell) - 1), <, 1e-12);
  /* A size that a reduction would halve to an odd extent is refused, naming it. */
  GError *error = NULL;
  g_autoptr(SieveSpace) bad = test_space_try(registry, "darts", "size: 30\n", NULL, &error);
  g_assert_null(bad);
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
  g_assert_nonnull(strstr(error->message, "test.yaml:1:7"));
  g_assert_nonnull(strstr(error->message, "odd extent 15"));
  g_clear_error(&error);
}

/* Parameter counts at the paper's CIFAR-10 setting (C = 36, 20 cells, 10
 * classes), without the auxiliary head, as the papers count them.  The
 * exact figures are those of the PyTorch peer bench/torch_darts.py
 * (tests/plugins/test_darts_torch.py checks them against it); DARTS-V2's
 * 3,349,342 is also what the authors' train.py prints for DARTS_V2
 * ("param size = 3.349342MB"). */
static void
test_published(void)
{
  g_autoptr(SieveSpace) space = space_new(NULL);
  struct {
    const char *name, *text;
    guint64 params;
    double paper_m; /* the paper's figure, in millions, to its one decimal */
  } cases[] = {
    {"DARTS-V2", DARTS_V2, 3349342, 3.3},
    {"PC-DARTS", PC_DARTS, 3634678, 3.6},
    {"P-DARTS", P_DARTS, 3433798, 3.4},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    guint64 p = params_of(space, cases[i].text);
    g_test_message("%s: %" G_GUINT64_FORMAT " parameters (paper %.1fM)", cases[i].name, p, cases[i].paper_m);
    g_assert_cmpuint(p, ==, cases[i].params);
    g_assert_cmpfloat(round(p / 1e5) / 10, ==, cases[i].paper_m);
  }
  /* DARTS-V1 (first order) counts 3,169,414 here and in the PyTorch peer,
   * which rounds to 3.2M, not the paper's 3.3M: the table gives one figure
   * for both orders.  Checked exactly, not against the table. */
  g_assert_cmpuint(params_of(space, DARTS_V1), ==, 3169414);

  /* The network's shape: 20 cells, the stem at 108 channels, the last cell's
   * output 4 * 144 = 576 channels at 8x8; a factorized reduction in each
   * cell after a reduction (DARTS-V2's reduce cell has no skip on its
   * inputs), so 2 crops. */
  g_autoptr(SieveGenotype) g = parse_ok(space, DARTS_V2);
  GError *error = NULL;
  g_autoptr(SieveGraph) net = sieve_space_build(space, g, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(count_kind(net, SIEVE_OP_CROP), ==, 2);
  g_assert_cmpuint(count_kind(net, SIEVE_OP_CONCAT), ==, 20 + 2);
  const SieveGraphNode *head = sieve_graph_node(net, sieve_graph_node(net, sieve_graph_output(net))->inputs[0]);
  const SieveGraphNode *last = sieve_graph_node(net, head->inputs[0]);
  g_assert_cmpuint(last->kind, ==, SIEVE_OP_CONCAT);
  g_assert_cmpuint(last->shape.c, ==, 576);
  g_assert_cmpuint(last->shape.h, ==, 8);
  /* A skip on a reduce cell's input is a factorized reduction too. */
  g_autoptr(SieveGenotype) skip = sieve_genotype_copy(g);
  sieve_genotype_set(skip, 12 + 1, 2); /* reduce_node2_op_a (input 0): skip_connect */
  g_autoptr(SieveGraph) net2 = sieve_space_build(space, skip, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(count_kind(net2, SIEVE_OP_CROP), ==, 2 + 2);
}

static void
test_round_trip(void)
{
  g_autoptr(SieveSpace) space = space_new(NULL);
  /* The canonical text: DARTS's repr, each node's pair in ascending input order. */
  g_autoptr(SieveGenotype) v2 = parse_ok(space, DARTS_V2);
  g_autofree char *text = sieve_space_format(space, v2);
  g_assert_cmpstr(text, ==,
                  "Genotype(normal=[('sep_conv_3x3', 0), ('sep_conv_3x3', 1), ('sep_conv_3x3', 0), ('sep_conv_3x3', "
                  "1), ('skip_connect', 0), ('sep_conv_3x3', 1), ('skip_connect', 0), ('dil_conv_3x3', 2)], "
                  "normal_concat=[2, 3, 4, 5], reduce=[('max_pool_3x3', 0), ('max_pool_3x3', 1), ('max_pool_3x3', "
                  "1), ('skip_connect', 2), ('max_pool_3x3', 0), ('skip_connect', 2), ('max_pool_3x3', 1), "
                  "('skip_connect', 2)], reduce_concat=[2, 3, 4, 5])");
  /* Other spellings of the same genotype: range(2, 6), double quotes,
   * line breaks, trailing commas, keyword order. */
  g_autoptr(SieveGenotype) alt = parse_ok(
    space, "Genotype(\n  reduce=[(\"max_pool_3x3\", 1), (\"max_pool_3x3\", 0), (\"skip_connect\", 2), "
           "(\"max_pool_3x3\", 1), (\"max_pool_3x3\", 0), (\"skip_connect\", 2), (\"skip_connect\", 2), "
           "(\"max_pool_3x3\", 1),],\n  reduce_concat=range(2, 6),\n  normal=[('sep_conv_3x3', 1), ('sep_conv_3x3', "
           "0), ('sep_conv_3x3', 0), ('sep_conv_3x3', 1), ('sep_conv_3x3', 1), ('skip_connect', 0), "
           "('skip_connect', 0), ('dil_conv_3x3', 2)], normal_concat=[2, 3, 4, 5],\n)\n");
  g_assert_true(sieve_genotype_equal(v2, alt));
  const char *published[] = {DARTS_V1, PC_DARTS, P_DARTS};
  for (guint i = 0; i < G_N_ELEMENTS(published); i++) {
    g_autoptr(SieveGenotype) g = parse_ok(space, published[i]);
    g_autofree char *t = sieve_space_format(space, g);
    g_autoptr(SieveGenotype) back = parse_ok(space, t);
    g_assert_true(sieve_genotype_equal(g, back));
  }
  /* Samples: valid, and their text reads back equal. */
  SieveRng rng;
  sieve_rng_seed(&rng, 5);
  for (guint k = 0; k < 500; k++) {
    g_autoptr(SieveGenotype) g = sieve_space_sample(space, &rng);
    GError *error = NULL;
    g_assert_true(sieve_space_validate(space, g, &error));
    g_autofree char *t = sieve_space_format(space, g);
    g_autoptr(SieveGenotype) back = parse_ok(space, t);
    g_assert_true(sieve_genotype_equal(g, back));
  }
}

static void
test_bad_strings(void)
{
  g_autoptr(SieveSpace) space = space_new(NULL);
  /* A valid cell list to splice into the cases. */
#define CELL "[('sep_conv_3x3', 0), ('sep_conv_3x3', 1), ('sep_conv_3x3', 0), ('sep_conv_3x3', 1), " \
             "('sep_conv_3x3', 1), ('skip_connect', 0), ('skip_connect', 0), ('dil_conv_3x3', 2)]"
#define OPS "(expected one of max_pool_3x3, avg_pool_3x3, skip_connect, sep_conv_3x3, sep_conv_5x5, dil_conv_3x3, " \
            "dil_conv_5x5)"
  struct {
    const char *text;
    const char *message;
  } cases[] = {
    {"", "at character 1: expected Genotype(normal=[...], normal_concat=[...], reduce=[...], reduce_concat=[...]), "
         "got the end of the text"},
    {"Genotipe(normal=[])", "at character 1: expected 'Genotype', got 'Genotipe'"},
    {"Genotype(normal=[('sep_conv_3x3', 0), ('conv_3x3', 1)])",
     "at character 41: unknown operation 'conv_3x3' in pair 2 of normal " OPS},
    {"Genotype(normal=[('none', 0), ('sep_conv_3x3', 1)])",
     "at character 20: unknown operation 'none' in pair 1 of normal: 'none' belongs to the search supernet, not to "
     "a derived cell " OPS},
    {"Genotype(normal=[('sep_conv_3x3', 0), ('sep_conv_3x3', 2)])",
     "at character 56: input 2 of pair 2 of normal: node 2 may read states 0..1 (the cell's two inputs and the "
     "nodes before it)"},
    {"Genotype(normal=[('sep_conv_3x3', 1), ('sep_conv_3x3', 1)])",
     "at character 39: pairs 1 and 2 of normal both read state 1: node 2 takes two distinct inputs"},
    {"Genotype(normal=[('sep_conv_3x3', 0), ('sep_conv_3x3', 1)], normal_concat=[2, 3, 4, 5])",
     "at character 17: normal has 2 (operation, input) pairs, expected 8 (2 for each of 4 nodes)"},
    {"Genotype(normal=" CELL ", normal_concat=[2, 3, 4], reduce=" CELL ", reduce_concat=[2, 3, 4, 5])",
     "at character 201: normal_concat is [2, 3, 4]; this space concatenates every intermediate node, [2, 3, 4, 5] "
     "or range(2, 6), as DARTS and NAS-Bench-301 do"},
    {"Genotype(normal=" CELL ", normal_concat=range(-9223372036854775807, 6), reduce=" CELL ")",
     "at character 201: normal_concat is range(-9223372036854775807, 6); this space concatenates every "
     "intermediate node, [2, 3, 4, 5] or range(2, 6), as DARTS and NAS-Bench-301 do"},
    {"Genotype(normal=" CELL ", normal_concat=range(2, 6), reduce=" CELL ")",
     "at character 389: Genotype(...) lacks reduce_concat (DARTS writes all four fields: ..., "
     "normal_concat=range(2, 6), ...)"},
    /* (it said "expected ',' between the fields, got ')'": a review read it as a syntax error) */
    {"Genotype(normal=" CELL ", reduce=" CELL ",)",
     "at character 362: Genotype(...) lacks normal_concat and reduce_concat (DARTS writes all four fields: ..., "
     "normal_concat=range(2, 6), ...)"},
    {"Genotype(normal=" CELL ", normal_concat=range(2, 6), normal=" CELL ")",
     "at character 214: field normal given twice"},
    {"Genotype(normal=" CELL ", concat=range(2, 6))",
     "at character 187: unknown field 'concat' (expected normal, normal_concat, reduce or reduce_concat)"},
    {"Genotype(normal=[('sep_conv_3x3' 0)])", "at character 34: expected ',' after the operation name, got '0'"},
    {"Genotype(normal=[('sep_conv_3x3', 0) ('sep_conv_3x3', 1)])",
     "at character 38: expected ',' or ']' between the elements of normal, got '('"},
    {"Genotype(normal=[('sep_conv_3x3, 0)])",
     "at character 19: the operation name in pair 1 of normal has no closing '"},
    {"Genotype(normal=[('sep_conv_3x3', x)])",
     "at character 35: expected the input of pair 1 of normal (an integer), got 'x'"},
    /* Non-ASCII: whole characters quoted (a fullwidth digit is not an
     * integer), positions counted in characters. */
    {"Genotype(normal=[('sep_conv_3x3', \xef\xbc\x90)])",
     "at character 35: expected the input of pair 1 of normal (an integer), got '\xef\xbc\x90'"},
    {"Genotype(normal=[('s\xc3\xa9p_conv_3x3', 0), ('sep_conv_3x3', 1)])",
     "at character 20: unknown operation 's\xc3\xa9p_conv_3x3' in pair 1 of normal " OPS},
    {"Genotype(\xc3\xa9=[])",
     "at character 10: expected a field name (normal, normal_concat, reduce, reduce_concat), got '\xc3\xa9'"},
    {"Genotype(normal=[('sep_conv_3x3', 0) \xe2\x80\x94 ('sep_conv_3x3', 1)])",
     "at character 38: expected ',' or ']' between the elements of normal, got '\xe2\x80\x94'"},
    {"Genotype(normal=[('sep_conv_3x3', 99999999999999999999)])",
     "at character 35: the input of pair 1 of normal 99999999999999999999 is out of range (a 64-bit integer)"},
    {"Genotype(normal=" CELL ", normal_concat=range(2, 6), reduce=" CELL ", reduce_concat=[2, 3, 4, 5]) x",
     "at character 419: unexpected 'x' after the closing ')'"},
  };
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    GError *error = NULL;
    g_autoptr(SieveGenotype) g = sieve_space_parse(space, cases[k].text, &error);
    g_assert_null(g);
    g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE);
    g_autofree char *expected =
      g_strdup_printf("bad genotype '%s' for space 'darts': darts genotype: %s", cases[k].text, cases[k].message);
    g_assert_cmpstr(error->message, ==, expected);
    g_error_free(error);
  }
#undef CELL
#undef OPS
}

static void
test_hashes(void)
{
  g_autoptr(SieveSpace) space = space_new(NULL);
  g_autoptr(SieveGenotype) v1 = parse_ok(space, DARTS_V1);
  g_autoptr(SieveGenotype) v2 = parse_ok(space, DARTS_V2);
  GError *error = NULL;
  SieveHash s1, s2, f1, f2, f2again;
  g_assert_true(sieve_space_hash(space, v1, SIEVE_HASH_STRUCTURAL, &s1, &error));
  g_assert_true(sieve_space_hash(space, v2, SIEVE_HASH_STRUCTURAL, &s2, &error));
  g_assert_true(sieve_space_hash(space, v1, SIEVE_HASH_FUNCTIONAL, &f1, &error));
  g_assert_true(sieve_space_hash(space, v2, SIEVE_HASH_FUNCTIONAL, &f2, &error));
  g_assert_no_error(error);
  g_assert_false(sieve_hash_equal(&s1, &s2));
  g_assert_false(sieve_hash_equal(&f1, &f2));
  /* The functional hash of a fresh space (its own probe networks) agrees. */
  g_autoptr(SieveSpace) again = space_new(NULL);
  g_autoptr(SieveGenotype) v2b = parse_ok(again, DARTS_V2);
  g_assert_true(sieve_space_hash(again, v2b, SIEVE_HASH_FUNCTIONAL, &f2again, &error));
  g_assert_true(sieve_hash_equal(&f2, &f2again));
  /* Distinct genotypes of a few samples hash apart structurally. */
  SieveRng rng;
  sieve_rng_seed(&rng, 9);
  g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint k = 0; k < 20; k++) {
    g_autoptr(SieveGenotype) g = sieve_space_sample(space, &rng);
    SieveHash h;
    g_assert_true(sieve_space_hash(space, g, SIEVE_HASH_STRUCTURAL, &h, &error));
    char hex[SIEVE_HASH_TEXT_LEN];
    sieve_hash_format(&h, hex);
    g_assert_true(g_hash_table_add(seen, g_strdup(hex)));
  }
}

/* Every bundled optimizer asks genotypes the space validates and builds,
 * and takes their outcomes (a made-up objective: fewer parameters). */
static void
test_optimizers(void)
{
  g_autoptr(SieveSpace) space = space_new("{C: 4, layers: 3, size: 16}");
  g_autoptr(GPtrArray) list = sieve_registry_list(registry, SIEVE_KIND_OPTIMIZER);
  static const SieveFidelity fidelity = {"budget", 1, 9, TRUE, {NULL}};
  guint tried = 0;
  for (guint i = 0; i < list->len; i++) {
    const SieveComponent *c = list->pdata[i];
    const SieveComponentInfo *info = sieve_component_get_info(c);
    GError *error = NULL;
    g_autoptr(SieveOptions) options = test_options_from(c, NULL, NULL, &error);
    g_assert_no_error(error);
    static const char *const names[] = {"score", NULL};
    SieveStudyInfo study = {.seed = 3, .n_objectives = 1, .objective_names = names, .fidelity = &fidelity};
    g_autoptr(SieveOptimizer) opt = sieve_optimizer_new(c, space, options, &study, &error);
    if (opt == NULL) { /* one that needs no fidelity may refuse one: try without */
      g_clear_error(&error);
      study.fidelity = NULL;
      opt = sieve_optimizer_new(c, space, options, &study, &error);
    }
    g_assert_no_error(error);
    for (guint round = 0; round < 3; round++) {
      g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_candidate_free);
      g_assert_true(sieve_optimizer_ask(opt, 4, out, &error));
      g_assert_no_error(error);
      for (guint k = 0; k < out->len; k++) {
        const SieveGenotype *g = sieve_candidate_get_genotype(out->pdata[k]);
        g_assert_true(sieve_space_validate(space, g, &error));
        g_autoptr(SieveGraph) net = sieve_space_build(space, g, &error);
        g_assert_no_error(error);
        double objective = -(double) sieve_graph_params(net);
        g_autoptr(SieveResult) r = sieve_result_new();
        sieve_result_set_metric(r, "score", objective);
        g_assert_true(sieve_optimizer_tell(opt, out->pdata[k], r, &objective, &error));
        g_assert_no_error(error);
      }
    }
    g_test_message("optimizer %s: 3 rounds on darts", info->name);
    tried++;
  }
  g_assert_cmpuint(tried, >=, 8);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  registry = test_registry_load();
  g_test_add_func("/plugins/darts/decisions", test_decisions);
  g_test_add_func("/plugins/darts/published", test_published);
  g_test_add_func("/plugins/darts/round-trip", test_round_trip);
  g_test_add_func("/plugins/darts/bad-strings", test_bad_strings);
  g_test_add_func("/plugins/darts/hashes", test_hashes);
  g_test_add_func("/plugins/darts/optimizers", test_optimizers);
  int status = g_test_run();
  sieve_registry_free(registry);
  return status;
}
