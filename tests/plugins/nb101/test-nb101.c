/* The nb101 space (loaded from the build tree, as sieve loads it): its
 * genotype text, membership, graph hash, channel split and the parameter
 * counts of published cells.
 *
 * Sources of the known answers:
 * - parameter counts: the NAS-Bench-101 dataset's `trainable_parameters`
 *   (Ying et al., ICML 2019), as printed by the authors' colab
 *   (google-research/nasbench, NASBench.ipynb, "Basic usage": the
 *   Inception-like cell of the paper's figure 1 queried, 2,694,282) and the
 *   dataset's largest count, 49,979,274 (the maximum of
 *   `trainable_parameters` over the whole dataset, quoted as MAX_TP by code
 *   that reads the dataset).  The cells attaining the largest and the
 *   smallest count (227,274) were found by an exhaustive search over every
 *   valid cell with an independent count written from model_builder.py (in
 *   Python, outside this tree); the smallest figure could not be checked
 *   against a published source here, so it stands on that search and on the
 *   PyTorch peer (tests/plugins/nb101/test_nb101_cli.py), not on a paper.
 * - channel splits: the authors' nasbench/tests/model_builder_test.py
 *   (compute_vertex_channels), every case. */
#include <string.h>

#include <sieve/sieve.h>

#include "nb101-cell.h"
#include "test-support.h"

static SieveRegistry *registry;

/* The Inception-like cell as the nasbench README writes it ... */
#define INCEPTION_README                                                                                         \
  "ModelSpec(matrix=[[0, 1, 1, 1, 0, 1, 0], [0, 0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 1, 0, 0]," \
  " [0, 0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0, 0]], ops=['input', 'conv1x1-bn-relu',"    \
  " 'conv3x3-bn-relu', 'conv3x3-bn-relu', 'conv3x3-bn-relu', 'maxpool3x3', 'output'])"
/* ... with Python's keywords in the other order ... */
#define INCEPTION_README_OPS_FIRST                                                                      \
  "ModelSpec(ops=[\"input\", \"conv1x1-bn-relu\", \"conv3x3-bn-relu\", \"conv3x3-bn-relu\", \"conv3x3-bn-relu\", " \
  "\"maxpool3x3\", \"output\"], matrix=[[0, 1, 1, 1, 0, 1, 0], [0, 0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0, 1], "      \
  "[0, 0, 0, 0, 1, 0, 0], [0, 0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0, 0]])"
/* ... and as the dataset stores it (module_adjacency, module_operations). */
#define INCEPTION_DATASET                                                                                \
  "matrix=[[0,1,1,1,1,0,0],[0,0,0,0,0,0,1],[0,0,0,0,0,0,1],[0,0,0,0,0,0,1],[0,0,0,0,0,1,0],[0,0,0,0,0,0,1]," \
  "[0,0,0,0,0,0,0]],ops=[input,conv3x3-bn-relu,conv1x1-bn-relu,maxpool3x3,conv3x3-bn-relu,conv3x3-bn-relu,output]"
/* The largest network of the dataset: five 3x3 convolutions in a chain,
 * the input projected into three of them (9 edges). */
#define LARGEST                                                                                          \
  "matrix=[[0,1,0,0,1,1,1],[0,0,1,0,0,0,0],[0,0,0,1,0,0,0],[0,0,0,0,1,0,0],[0,0,0,0,0,1,0],[0,0,0,0,0,0,1]," \
  "[0,0,0,0,0,0,0]],ops=[input,conv3x3-bn-relu,conv3x3-bn-relu,conv3x3-bn-relu,conv3x3-bn-relu,"           \
  "conv3x3-bn-relu,output]"

/* The smallest network: the input projected into one max pool that feeds
 * three more, the four splitting the output. */
#define SMALLEST                                                                                             \
  "matrix=[[0,1,0,0,0,0],[0,0,1,1,1,1],[0,0,0,0,0,1],[0,0,0,0,0,1],[0,0,0,0,0,1],[0,0,0,0,0,0]],ops=[input," \
  "maxpool3x3,maxpool3x3,maxpool3x3,maxpool3x3,output]"

static SieveSpace *
space_new(const char *yaml)
{
  return test_space_new(registry, "nb101", yaml, NULL);
}

static SieveGenotype *
parse(const SieveSpace *space, const char *text)
{
  GError *error = NULL;
  SieveGenotype *g = sieve_space_parse(space, text, &error);
  g_assert_no_error(error);
  return g;
}

static guint64
params(const SieveSpace *space, const char *text)
{
  g_autoptr(SieveGenotype) g = parse(space, text);
  GError *error = NULL;
  g_autoptr(SieveGraph) graph = sieve_space_build(space, g, &error);
  g_assert_no_error(error);
  return sieve_graph_params(graph);
}

static void
test_published_params(void)
{
  g_autoptr(SieveSpace) space = space_new(NULL);
  g_assert_cmpuint(params(space, INCEPTION_DATASET), ==, 2694282);
  g_assert_cmpuint(params(space, INCEPTION_README), ==, 2694282);
  /* Python's keywords in the other order call the same ModelSpec. */
  g_assert_cmpuint(params(space, INCEPTION_README_OPS_FIRST), ==, 2694282);
  g_assert_cmpuint(params(space, LARGEST), ==, 49979274);
  g_assert_cmpuint(params(space, SMALLEST), ==, 227274);
}

/* Text in, canonical text out, and back. */
static void
test_text(void)
{
  g_autoptr(SieveSpace) space = space_new(NULL);
  g_autoptr(SieveGenotype) g = parse(space, INCEPTION_README);
  g_autofree char *text = sieve_space_format(space, g);
  g_assert_cmpstr(text, ==,
                  "matrix=[[0,1,1,1,0,1,0],[0,0,0,0,0,0,1],[0,0,0,0,0,0,1],[0,0,0,0,1,0,0],[0,0,0,0,0,0,1],"
                  "[0,0,0,0,0,0,1],[0,0,0,0,0,0,0]],ops=[input,conv1x1-bn-relu,conv3x3-bn-relu,conv3x3-bn-relu,"
                  "conv3x3-bn-relu,maxpool3x3,output]");
  g_autoptr(SieveGenotype) back = parse(space, text);
  g_assert_true(sieve_genotype_equal(g, back));
  /* A smaller matrix: its output becomes vertex 6. */
  g_autoptr(SieveGenotype) small = parse(space, "matrix=[[0,1,1],[0,0,1],[0,0,0]] ops=[input,maxpool3x3,output]");
  g_autofree char *small_text = sieve_space_format(space, small);
  g_assert_cmpstr(small_text, ==,
                  "matrix=[[0,1,0,0,0,0,1],[0,0,0,0,0,0,1],[0,0,0,0,0,0,0],[0,0,0,0,0,0,0],[0,0,0,0,0,0,0],"
                  "[0,0,0,0,0,0,0],[0,0,0,0,0,0,0]],ops=[input,maxpool3x3,conv3x3-bn-relu,conv3x3-bn-relu,"
                  "conv3x3-bn-relu,conv3x3-bn-relu,output]");
}

/* Malformed and invalid texts: the error names the character or the rule. */
static void
test_errors(void)
{
  g_autoptr(SieveSpace) space = space_new(NULL);
  static const struct {
    const char *text, *message;
  } cases[] = {
    {"", "at character 1: expected 'matrix='"},
    {"matrix=[[0,1],[0,0]],ops=[input,output", "at character 39: expected ']' closing the op list"},
    {"matrix=[[0,2],[0,0]],ops=[input,output]", "at character 12: expected 0 or 1"},
    {"matrix=[[0,1],[1,0]],ops=[input,output]", "at character 16: row 1, column 0 of the matrix is 1, but "
                                                "NAS-Bench-101 matrices are upper-triangular"},
    {"matrix=[[0,1,0],[0,0]],ops=[input,output]", "row 1 of the matrix has 2 entries, row 0 has 3"},
    {"matrix=[[0,1,1],[0,0,1],[0,0,0]],ops=[input,conv5x5,output]",
     "at character 45: unknown operation 'conv5x5' for op 1"},
    {"matrix=[[0,1],[0,0]],ops=[conv3x3-bn-relu,output]", "at character 27: op 0 must be 'input'"},
    {"matrix=[[0,1,1],[0,0,1],[0,0,0]],ops=[input,output]", "at character 45: op 1 is 'output', but the matrix has 3 vertices"},
    {"matrix=[[0,1],[0,0]],ops=[input,output] x", "at character 41: expected the end of the text, got 'x'"},
    /* Non-ASCII: the whole name or character quoted, positions in characters. */
    {"matrix=[[0,1,1],[0,0,1],[0,0,0]],ops=[input,c\xc3\xb6nv3x3-bn-relu,output]",
     "at character 45: unknown operation 'c\xc3\xb6nv3x3-bn-relu' for op 1"},
    {"matrix=[[0,1,1],[0,0,1],[0,0,0]],ops=[input,'c\xc3\xb6nv3x3-bn-relu',output]",
     "at character 46: unknown operation 'c\xc3\xb6nv3x3-bn-relu' for op 1"},
    {"matrix=[[0,1],[0,0]],ops=[input,output] \xc3\xb6x", "at character 41: expected the end of the text, got '\xc3\xb6x'"},
    {"matrix=[[0,1],[0,0]],ops=[input,output] \xef\xbc\x90", "at character 41: expected the end of the text, got '\xef\xbc\x90'"},
    {"matrix=[[0,1],[0,\xc3\xb6]],ops=[input,output]", "at character 18: expected 0 or 1 (an entry of the adjacency matrix), "
     "got '\xc3\xb6'"},
    /* The ops before the matrix: checked against it, positions in the op list. */
    {"ModelSpec(ops=['input','output'],matrix=[[0,1,1],[0,0,1],[0,0,0]])",
     "at character 25: op 1 is 'output', but the matrix has 3 vertices"},
    {"ModelSpec(ops=['input','output','output'],matrix=[[0,1],[0,0]])",
     "at character 32: expected ']' closing the op list after 2 ops (one per vertex of the matrix), got ','"},
    {"ModelSpec(ops=['input',conv5x5,'output'],matrix=[[0,1,1],[0,0,1],[0,0,0]])",
     "at character 24: unknown operation 'conv5x5' for op 1"},
    {"ModelSpec(ops=['input' 'output'],matrix=[[0,1],[0,0]])", "at character 24: expected ',' or ']' in the op list"},
    {"ops=[input,output],matrix=[[0,1],[0,0]", "at character 39: expected ',' or ']' after a row of the matrix, got the end of the text"},
    {"ops=[input,output]", "at character 19: expected 'matrix=' after the op list, got the end of the text"},
    {"matrix=[[0,1,0],[0,0,0],[0,0,0]],ops=[input,maxpool3x3,output]",
     "the cell is disconnected: no path leads from its input (vertex 0) to its output"},
    {"matrix=[[0,1,1,1,1,1,1],[0,0,1,1,0,0,0],[0,0,0,1,0,0,0],[0,0,0,0,1,0,0],[0,0,0,0,0,1,0],[0,0,0,0,0,0,1],"
     "[0,0,0,0,0,0,0]],ops=[input,conv3x3-bn-relu,conv3x3-bn-relu,conv3x3-bn-relu,conv3x3-bn-relu,maxpool3x3,"
     "output]",
     "the cell has 12 edges on paths from its input to its output; NAS-Bench-101 allows at most 9"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    GError *error = NULL;
    g_autoptr(SieveGenotype) g = sieve_space_parse(space, cases[i].text, &error);
    g_assert_null(g);
    g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE);
    if (strstr(error->message, cases[i].message) == NULL)
      g_error("case %u: '%s' does not contain '%s'", i, error->message, cases[i].message);
    g_clear_error(&error);
  }
}

static void
structural(const SieveSpace *space, const char *text, char out[SIEVE_HASH_TEXT_LEN])
{
  g_autoptr(SieveGenotype) g = parse(space, text);
  SieveHash h;
  GError *error = NULL;
  g_assert_true(sieve_space_hash(space, g, SIEVE_HASH_STRUCTURAL, &h, &error));
  g_assert_no_error(error);
  sieve_hash_format(&h, out);
}

/* Isomorphic cells share the benchmark's hash; pruned vertices do not count;
 * another label or edge changes it. */
static void
test_hash(void)
{
  g_autoptr(SieveSpace) space = space_new(NULL);
  char a[SIEVE_HASH_TEXT_LEN], b[SIEVE_HASH_TEXT_LEN], c[SIEVE_HASH_TEXT_LEN], d[SIEVE_HASH_TEXT_LEN];
  structural(space, INCEPTION_README, a);
  structural(space, INCEPTION_DATASET, b);
  g_assert_cmpstr(a, ==, b);
  /* The same cell with a dangling vertex 5 (maxpool fed by the input, feeding nothing). */
  structural(space, "matrix=[[0,1,1,0,0,0],[0,0,0,0,0,1],[0,0,0,0,0,1],[0,0,0,0,0,0],[0,0,0,0,0,0],[0,0,0,0,0,0]],"
                    "ops=[input,conv3x3-bn-relu,conv1x1-bn-relu,maxpool3x3,maxpool3x3,output]", c);
  structural(space, "matrix=[[0,1,1,1,0,0],[0,0,0,0,0,1],[0,0,0,0,0,1],[0,0,0,0,0,0],[0,0,0,0,0,0],[0,0,0,0,0,0]],"
                    "ops=[input,conv1x1-bn-relu,conv3x3-bn-relu,maxpool3x3,maxpool3x3,output]", d);
  g_assert_cmpstr(c, ==, d);
  g_assert_cmpstr(a, !=, c);
  structural(space, "matrix=[[0,1,1,0,0,0],[0,0,0,0,0,1],[0,0,0,0,0,1],[0,0,0,0,0,0],[0,0,0,0,0,0],[0,0,0,0,0,0]],"
                    "ops=[input,conv3x3-bn-relu,conv3x3-bn-relu,maxpool3x3,maxpool3x3,output]", d);
  g_assert_cmpstr(c, !=, d);
}

/* Uniform draws and the optimizers' moves stay inside the space. */
static void
test_members(void)
{
  g_autoptr(SieveSpace) space = space_new(NULL);
  SieveRng rng;
  sieve_rng_seed(&rng, 7);
  guint edges_hist[NB101_MAX_EDGES + 1] = {0};
  for (guint i = 0; i < 2000; i++) {
    g_autoptr(SieveGenotype) g = sieve_space_sample(space, &rng);
    GError *error = NULL;
    g_assert_true(sieve_space_validate(space, g, &error));
    g_assert_no_error(error);
    guint edges = 0;
    for (guint e = 0; e < NB101_EDGE_SLOTS; e++)
      edges += sieve_genotype_get(g, e) == 1;
    edges_hist[MIN(edges, NB101_MAX_EDGES)]++;
  }
  /* Not a constant: the draws spread over edge counts. */
  guint spread = 0;
  for (guint e = 0; e <= NB101_MAX_EDGES; e++)
    spread += edges_hist[e] > 0;
  g_assert_cmpuint(spread, >=, 5);
}

/* compute_vertex_channels against every case of nasbench's own test. */
static void
check_channels(guint n, const char *rows, guint cin, guint cout, const guint *want)
{
  Nb101Cell c = {.n = n};
  for (guint i = 0; i < n; i++)
    for (guint j = 0; j < n; j++)
      if (rows[i * n + j] == '1')
        c.succ[i] |= 1u << j;
  guint ch[NB101_MAX_VERTICES];
  GError *error = NULL;
  g_assert_true(nb101_cell_channels(&c, cin, cout, ch, &error));
  g_assert_no_error(error);
  for (guint v = 0; v < n; v++)
    if (ch[v] != want[v])
      g_error("matrix %s, %u -> %u: vertex %u has %u channels, nasbench's test says %u", rows, cin, cout, v, ch[v],
              want[v]);
}

static void
test_channels(void)
{
  const char *linear = "0100" "0010" "0001" "0000";
  check_channels(4, linear, 8, 8, (guint[]){8, 8, 8, 8});
  check_channels(4, linear, 8, 16, (guint[]){8, 16, 16, 16});
  check_channels(4, linear, 16, 8, (guint[]){16, 8, 8, 8});
  check_channels(2, "0100", 1, 1, (guint[]){1, 1});
  check_channels(2, "0100", 1, 5, (guint[]){1, 5});
  check_channels(2, "0100", 5, 1, (guint[]){5, 1});
  const char *no_out_branch = "01100" "00010" "00010" "00001" "00000";
  check_channels(5, no_out_branch, 8, 8, (guint[]){8, 8, 8, 8, 8});
  check_channels(5, no_out_branch, 8, 16, (guint[]){8, 16, 16, 16, 16});
  check_channels(5, no_out_branch, 16, 8, (guint[]){16, 8, 8, 8, 8});
  const char *branch = "0110" "0001" "0001" "0000";
  check_channels(4, branch, 8, 8, (guint[]){8, 4, 4, 8});
  check_channels(4, branch, 8, 16, (guint[]){8, 8, 8, 16});
  check_channels(4, branch, 16, 8, (guint[]){16, 4, 4, 8});
  check_channels(4, branch, 8, 15, (guint[]){8, 8, 7, 15});
  const char *branch3 = "01110" "00001" "00001" "00001" "00000";
  check_channels(5, branch3, 8, 8, (guint[]){8, 3, 3, 2, 8});
  check_channels(5, branch3, 8, 15, (guint[]){8, 5, 5, 5, 15});
  const char *max1 = "01000" "00110" "00001" "00001" "00000";
  check_channels(5, max1, 8, 8, (guint[]){8, 4, 4, 4, 8});
  check_channels(5, max1, 8, 9, (guint[]){8, 5, 5, 4, 9});
  const char *max2 = "01010" "00101" "00010" "00001" "00000";
  check_channels(5, max2, 8, 8, (guint[]){8, 4, 4, 4, 8});
  check_channels(5, max2, 8, 15, (guint[]){8, 8, 7, 7, 15});
}

/* Options: the defaults are the benchmark's; a size the stacks cannot halve
 * is refused, naming the option. */
static void
test_options(void)
{
  GError *error = NULL;
  g_autoptr(SieveSpace) bad = test_space_try(registry, "nb101", "size: 30", NULL, &error);
  g_assert_null(bad);
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
  g_assert_nonnull(strstr(error->message, "size 30 is not divisible by 4"));
  g_clear_error(&error);
  g_autoptr(SieveSpace) small = space_new("stem_channels: 16\ncells: 1\nin_channels: 1\nsize: 28");
  g_autoptr(SieveGenotype) g = parse(small, INCEPTION_DATASET);
  g_autoptr(SieveGraph) graph = sieve_space_build(small, g, &error);
  g_assert_no_error(error);
  const SieveGraphNode *in = sieve_graph_node(graph, sieve_graph_input_node(graph));
  g_assert_cmpuint(in->shape.c, ==, 1);
  g_assert_cmpuint(in->shape.h, ==, 28);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  registry = test_registry_load();
  g_test_add_func("/nb101/published-params", test_published_params);
  g_test_add_func("/nb101/text", test_text);
  g_test_add_func("/nb101/errors", test_errors);
  g_test_add_func("/nb101/hash", test_hash);
  g_test_add_func("/nb101/members", test_members);
  g_test_add_func("/nb101/channels", test_channels);
  g_test_add_func("/nb101/options", test_options);
  int status = g_test_run();
  sieve_registry_free(registry);
  return status;
}
