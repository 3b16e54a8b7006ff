/* The networks of the nb201 space (loaded from the build tree, as sieve
 * loads it): their structure, their options, and their parameter and
 * multiply-accumulate counts against the NAS-Bench-201 table and the
 * PyTorch peer. */
#include <math.h>
#include <string.h>

#include <sieve/sieve.h>

#include "sieve-config.h"

#include "test-support.h"

static SieveRegistry *registry;
static const char *source_root;

static SieveSpace *
space_try(const char *yaml, GError **error)
{
  return test_space_try(registry, "nb201", yaml, NULL, error);
}

static SieveSpace *
space_new(const char *yaml)
{
  return test_space_new(registry, "nb201", yaml, NULL);
}

static SieveGraph *
build(const SieveSpace *space, const char *arch)
{
  GError *error = NULL;
  g_autoptr(SieveGenotype) genotype = sieve_space_parse(space, arch, &error);
  g_assert_no_error(error);
  SieveGraph *graph = sieve_space_build(space, genotype, &error);
  g_assert_no_error(error);
  g_assert_nonnull(graph);
  return graph;
}

/* The node labelled label (exactly one must be). */
static guint
find_label(const SieveGraph *g, const char *label)
{
  guint found = SIEVE_NODE_INVALID;
  for (guint i = 0; i < sieve_graph_n_nodes(g); i++)
    if (g_strcmp0(sieve_graph_node(g, i)->label, label) == 0) {
      g_assert_cmpuint(found, ==, SIEVE_NODE_INVALID);
      found = i;
    }
  if (found == SIEVE_NODE_INVALID)
    g_error("no node labelled '%s'", label);
  return found;
}

static void
assert_node(const SieveGraph *g, const char *label, SieveOpKind kind, guint c, guint h, guint w)
{
  const SieveGraphNode *n = sieve_graph_node(g, find_label(g, label));
  g_assert_cmpstr(sieve_op_kind_name(n->kind), ==, sieve_op_kind_name(kind));
  g_assert_cmpuint(n->shape.c, ==, c);
  g_assert_cmpuint(n->shape.h, ==, h);
  g_assert_cmpuint(n->shape.w, ==, w);
}

static guint
count_kind(const SieveGraph *g, SieveOpKind kind)
{
  guint n = 0;
  for (guint i = 0; i < sieve_graph_n_nodes(g); i++)
    n += sieve_graph_node(g, i)->kind == kind;
  return n;
}

/* ---- structure ---------------------------------------------------------- */

#define ARCH1 "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"

static void
test_structure(void)
{
  g_autoptr(SieveSpace) space = space_new(NULL);
  g_assert_true(sieve_space_can_build(space));
  g_autoptr(SieveGraph) g = build(space, ARCH1);
  g_assert_cmpstr(sieve_graph_name(g), ==, ARCH1);

  assert_node(g, "stem.input", SIEVE_OP_INPUT, 3, 32, 32);
  g_assert_cmpuint(sieve_graph_input_node(g), ==, find_label(g, "stem.input"));
  assert_node(g, "stem.conv", SIEVE_OP_CONV2D, 16, 32, 32);
  assert_node(g, "stem.bn", SIEVE_OP_BATCH_NORM, 16, 32, 32);
  /* Cell edges: op~i of node j is edge_j_i. */
  assert_node(g, "stage1.cell1.edge_1_0.relu", SIEVE_OP_ACTIVATION, 16, 32, 32);
  assert_node(g, "stage1.cell2.edge_2_0.conv", SIEVE_OP_CONV2D, 16, 32, 32);
  assert_node(g, "stage1.cell2.edge_2_1.pool", SIEVE_OP_POOL, 16, 32, 32);
  assert_node(g, "stage1.cell2.edge_3_0.skip", SIEVE_OP_IDENTITY, 16, 32, 32);
  assert_node(g, "stage1.cell5.edge_3_1.bn", SIEVE_OP_BATCH_NORM, 16, 32, 32);
  assert_node(g, "stage1.cell5.node2", SIEVE_OP_ADD, 16, 32, 32);
  assert_node(g, "stage1.cell5.node3", SIEVE_OP_ADD, 16, 32, 32);
  /* Reduction blocks. */
  assert_node(g, "reduce1.a.conv", SIEVE_OP_CONV2D, 32, 16, 16);
  assert_node(g, "reduce1.b.conv", SIEVE_OP_CONV2D, 32, 16, 16);
  assert_node(g, "reduce1.shortcut.pool", SIEVE_OP_POOL, 16, 16, 16);
  assert_node(g, "reduce1.shortcut.conv", SIEVE_OP_CONV2D, 32, 16, 16);
  assert_node(g, "reduce1.add", SIEVE_OP_ADD, 32, 16, 16);
  assert_node(g, "stage2.cell3.edge_3_1.conv", SIEVE_OP_CONV2D, 32, 16, 16);
  assert_node(g, "reduce2.add", SIEVE_OP_ADD, 64, 8, 8);
  assert_node(g, "stage3.cell5.node3", SIEVE_OP_ADD, 64, 8, 8);
  assert_node(g, "head.bn", SIEVE_OP_BATCH_NORM, 64, 8, 8);
  assert_node(g, "head.relu", SIEVE_OP_ACTIVATION, 64, 8, 8);
  assert_node(g, "head.pool", SIEVE_OP_GLOBAL_AVG_POOL, 64, 1, 1);
  assert_node(g, "head.linear", SIEVE_OP_LINEAR, 10, 1, 1);
  g_assert_cmpuint(sieve_graph_output(g), ==, find_label(g, "head.linear"));

  /* Attributes as the benchmark has them. */
  const SieveGraphNode *a = sieve_graph_node(g, find_label(g, "reduce1.a.conv"));
  g_assert_cmpuint(a->attrs.stride[0], ==, 2);
  g_assert_cmpuint(a->attrs.pad[0], ==, 1);
  g_assert_false(a->attrs.bias);
  const SieveGraphNode *sc = sieve_graph_node(g, find_label(g, "reduce1.shortcut.pool"));
  g_assert_cmpint(sc->attrs.pool, ==, SIEVE_POOL_AVG);
  g_assert_cmpuint(sc->attrs.kernel[0], ==, 2);
  g_assert_cmpuint(sc->attrs.stride[0], ==, 2);
  const SieveGraphNode *pool = sieve_graph_node(g, find_label(g, "stage1.cell2.edge_2_1.pool"));
  g_assert_cmpuint(pool->attrs.kernel[0], ==, 3);
  g_assert_cmpuint(pool->attrs.stride[0], ==, 1);
  g_assert_cmpuint(pool->attrs.pad[0], ==, 1);
  g_assert_true(sieve_graph_node(g, find_label(g, "head.linear"))->attrs.bias);
  /* The shortcut adds conv(pool(x)) and b(a(x)); a reads the block's input. */
  const SieveGraphNode *add = sieve_graph_node(g, find_label(g, "reduce1.add"));
  g_assert_cmpuint(add->n_inputs, ==, 2);
  g_assert_cmpuint(add->inputs[0], ==, find_label(g, "reduce1.shortcut.conv"));
  g_assert_cmpuint(add->inputs[1], ==, find_label(g, "reduce1.b.bn"));
  g_assert_cmpuint(sieve_graph_node(g, find_label(g, "reduce1.a.relu"))->inputs[0], ==,
                   find_label(g, "stage1.cell5.node3"));
  g_assert_cmpuint(sc->inputs[0], ==, find_label(g, "stage1.cell5.node3"));

  /* Every edge has its own ReLU: edges 1_0 and 2_0 both read the cell's
   * input through separate nodes (merging them is the runtime's business). */
  guint r10 = find_label(g, "stage2.cell1.edge_1_0.relu"), r20 = find_label(g, "stage2.cell1.edge_2_0.relu");
  g_assert_cmpuint(r10, !=, r20);
  g_assert_cmpuint(sieve_graph_node(g, r10)->inputs[0], ==, sieve_graph_node(g, r20)->inputs[0]);
  g_assert_cmpuint(sieve_graph_node(g, r10)->inputs[0], ==, find_label(g, "reduce1.add"));
  /* Node 3 sums its three edges in order. */
  const SieveGraphNode *n3 = sieve_graph_node(g, find_label(g, "stage2.cell1.node3"));
  g_assert_cmpuint(n3->n_inputs, ==, 3);
  g_assert_cmpuint(n3->inputs[0], ==, find_label(g, "stage2.cell1.edge_3_0.skip"));
  g_assert_cmpuint(n3->inputs[1], ==, find_label(g, "stage2.cell1.edge_3_1.bn"));
  g_assert_cmpuint(n3->inputs[2], ==, find_label(g, "stage2.cell1.edge_3_2.skip"));
  g_assert_cmpuint(sieve_graph_node(g, find_label(g, "stage2.cell1.edge_3_2.skip"))->inputs[0], ==,
                   find_label(g, "stage2.cell1.node2"));

  /* Counts: 3 conv edges per cell, 15 cells, plus stem and 3 per reduction;
   * every node is live. */
  g_assert_cmpuint(count_kind(g, SIEVE_OP_CONV2D), ==, 1 + 3 * 15 + 2 * 3);
  g_assert_cmpuint(count_kind(g, SIEVE_OP_BATCH_NORM), ==, 1 + 3 * 15 + 2 * 2 + 1);
  g_assert_cmpuint(count_kind(g, SIEVE_OP_ACTIVATION), ==, 3 * 15 + 2 * 2 + 1);
  g_assert_cmpuint(count_kind(g, SIEVE_OP_IDENTITY), ==, 2 * 15);
  g_assert_cmpuint(count_kind(g, SIEVE_OP_ADD), ==, 2 * 15 + 2);
  for (guint i = 0; i < sieve_graph_n_nodes(g); i++)
    g_assert_true(sieve_graph_node_live(g, i));

  /* All-none: each cell is zeros summed, but the graph is whole. */
  g_autoptr(SieveGraph) none = build(space, "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|");
  g_assert_cmpuint(count_kind(none, SIEVE_OP_ZERO), ==, 6 * 15);
  g_assert_cmpuint(count_kind(none, SIEVE_OP_CONV2D), ==, 1 + 2 * 3);

  /* The built network takes a loss like any other. */
  GError *error = NULL;
  g_assert_true(sieve_graph_add_loss(g, 0, &error));
  g_assert_no_error(error);
}

static void
test_build_errors(void)
{
  g_autoptr(SieveSpace) space = space_new(NULL);
  GError *error = NULL;
  /* A genotype whose decisions were never set (NAN) is refused with the
   * decision named. */
  g_autoptr(SieveGenotype) unset = sieve_genotype_new(space);
  g_assert_null(sieve_space_build(space, unset, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH);
  g_assert_cmpstr(error->message, ==, "nb201: decision edge_1_0 has value nan, expected an operation 0..4");
  g_clear_error(&error);
}

static void
test_options(void)
{
  GError *error = NULL;
  struct {
    const char *yaml;
    const char *message_prefix;
  } bad[] = {
    {"size: 30\n", "test.yaml:1:7: size 30 is not a multiple of 4: the two reduction blocks each halve it"},
    {"classes: 1\n", "test.yaml:1:10: "},
    {"C: 0\n", "test.yaml:1:4: "},
    {"N: 0\n", "test.yaml:1:4: "},
    {"channels: 16\n", "test.yaml:1:1: unknown option 'channels'"},
  };
  for (guint k = 0; k < G_N_ELEMENTS(bad); k++) {
    g_autoptr(SieveSpace) space = space_try(bad[k].yaml, &error);
    g_assert_null(space);
    g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
    if (!g_str_has_prefix(error->message, bad[k].message_prefix))
      g_error("options %s: got '%s', expected a message starting '%s'", bad[k].yaml, error->message,
              bad[k].message_prefix);
    g_clear_error(&error);
  }

  /* Fashion-MNIST-sized input at a small scale. */
  g_autoptr(SieveSpace) small = space_new("C: 8\nN: 1\nin_channels: 1\nsize: 28\nclasses: 7\n");
  g_autoptr(SieveGraph) g = build(small, ARCH1);
  assert_node(g, "stem.input", SIEVE_OP_INPUT, 1, 28, 28);
  assert_node(g, "stage1.cell1.node3", SIEVE_OP_ADD, 8, 28, 28);
  assert_node(g, "reduce2.add", SIEVE_OP_ADD, 32, 7, 7);
  assert_node(g, "head.linear", SIEVE_OP_LINEAR, 7, 1, 1);
  g_assert_cmpuint(count_kind(g, SIEVE_OP_CONV2D), ==, 1 + 3 * 3 + 2 * 3);
  /* The space's text form is unchanged by the options. */
  g_autoptr(SieveGenotype) genotype = sieve_space_parse(small, ARCH1, &error);
  g_assert_no_error(error);
  g_autofree char *text = sieve_space_format(small, genotype);
  g_assert_cmpstr(text, ==, ARCH1);
}

/* ---- against the PyTorch peer ------------------------------------------- */

/* Counted by the peer, ../shared/peers/torch_nb201.py (PyTorch's own
 * parameter count, and its forward-hook count of conv and linear
 * multiply-accumulates for one example), with
 *   /usr/bin/python3 torch_nb201.py params ARCH --C C --N N --in-ch IN --size S [--classes K]
 * (Debian's python3-torch 1.13); the tests must not need torch, so the
 * numbers are kept here. */
static const struct {
  const char *arch;
  guint C, N, in_channels, size, classes;
  guint64 params, macs;
} peer[] = {
  {ARCH1, 16, 5, 3, 32, 10, 802426, 113951360},
  {"|avg_pool_3x3~0|+|nor_conv_1x1~0|skip_connect~1|+|nor_conv_1x1~0|skip_connect~1|skip_connect~2|", 16, 5, 3, 32,
   10, 129306, 15647360},
  {"|none~0|+|none~0|none~1|+|none~0|none~1|none~2|", 16, 5, 3, 32, 10, 73306, 7783040},
  {"|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|nor_conv_3x3~0|nor_conv_3x3~1|nor_conv_3x3~2|", 16, 5, 3, 32,
   10, 1531546, 220119680},
  {"|nor_conv_1x1~0|+|nor_conv_1x1~0|nor_conv_1x1~1|+|nor_conv_1x1~0|nor_conv_1x1~1|nor_conv_1x1~2|", 16, 5, 3, 32,
   10, 241306, 31376000},
  {"|skip_connect~0|+|none~0|nor_conv_1x1~1|+|nor_conv_3x3~0|avg_pool_3x3~1|none~2|", 16, 5, 3, 32, 10, 344346,
   47104640},
  {ARCH1, 8, 1, 1, 28, 10, 55218, 5525952},
  {"|nor_conv_1x1~0|+|skip_connect~0|nor_conv_3x3~1|+|avg_pool_3x3~0|none~1|nor_conv_1x1~2|", 12, 2, 1, 28, 7,
   108715, 10697232},
};

static void
test_peer(void)
{
  for (guint k = 0; k < G_N_ELEMENTS(peer); k++) {
    g_autofree char *yaml = g_strdup_printf("C: %u\nN: %u\nin_channels: %u\nsize: %u\nclasses: %u\n", peer[k].C,
                                            peer[k].N, peer[k].in_channels, peer[k].size, peer[k].classes);
    g_autoptr(SieveSpace) space = space_new(yaml);
    g_autoptr(SieveGraph) g = build(space, peer[k].arch);
    g_assert_cmpuint(sieve_graph_params(g), ==, peer[k].params);
    g_assert_cmpuint(sieve_graph_macs(g), ==, peer[k].macs);
  }
}

/* ---- against the NAS-Bench-201 table ------------------------------------ */

/* The table's params_m as it is printed: 6 significant digits (0.129306,
 * 1.04547), so a count is compared after the same rounding. */
static double
as_table_value(double params)
{
  char text[32];
  g_snprintf(text, sizeof text, "%.6g", params / 1e6);
  return g_ascii_strtod(text, NULL);
}

/* Table value -> hash key: millionths (the values have at most 6 decimals). */
static gint64 *
key_new(double value)
{
  gint64 *key = g_new(gint64, 1);
  *key = (gint64) (value * 1e6 + 0.5);
  return key;
}

/* Adds, as table values, the means of every multiset of k..4 of the counts
 * from counts[first] on, with sum and k already chosen. */
static void
add_means(GHashTable *means, const guint64 *counts, guint n, guint first, guint64 sum, guint k)
{
  if (k >= 2)
    g_hash_table_add(means, key_new(as_table_value(sum / k + (sum % k) / (double) k)));
  if (k == 4)
    return;
  for (guint i = first; i < n; i++)
    add_means(means, counts, n, i, sum + counts[i], k + 1);
}

/* Every architecture of data/nb201/nb201.csv is built at C=16, N=5 with 10
 * classes and its parameter count compared with the table's params_m.
 *
 * Which values are averaged: the data's README says about 1.5% of rows carry
 * "an averaged, non-integer-looking value".  The criterion used here is that
 * a value is averaged when it is none of the counts that any NB201 network
 * can have (the count depends only on how many 1x1 and 3x3 convolutions the
 * cell holds, so there are only 28 of them): such a value is the count of no
 * real network.  Each of the table's 204 such values is then checked to be
 * the mean of two to four real counts (0.119973 = (2 x 129306 + 101306) / 3
 * / 1e6, for instance), which is what "averaged" means.  Every other row must
 * equal its own architecture's count: a table value that is the count of some
 * other network is a failure, not an average.  The numbers of each kind are
 * pinned, so that a change in the builder that moved rows from one side to
 * the other fails too. */
static void
test_table(void)
{
  g_autoptr(SieveSpace) space = space_new(NULL); /* the defaults are C=16, N=5, 10 classes */
  g_autofree char *path = g_build_filename(source_root, "data", "nb201", "nb201.csv", NULL);
  g_autofree char *text = NULL;
  GError *error = NULL;
  g_file_get_contents(path, &text, NULL, &error);
  g_assert_no_error(error);
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  g_auto(GStrv) header = g_strsplit(lines[0], ",", -1);
  gint arch_col = -1, params_col = -1;
  for (gint c = 0; header[c]; c++) {
    if (strcmp(header[c], "arch_str") == 0)
      arch_col = c;
    if (strcmp(header[c], "params_m") == 0)
      params_col = c;
  }
  g_assert_cmpint(arch_col, >=, 0);
  g_assert_cmpint(params_col, >=, 0);

  g_autoptr(GArray) table = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) counts = g_array_new(FALSE, FALSE, sizeof(guint64));
  g_autoptr(GPtrArray) archs = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GHashTable) achievable = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
  guint64 smallest = G_MAXUINT64, largest = 0;
  for (guint i = 1; lines[i] != NULL; i++) {
    if (lines[i][0] == '\0')
      continue;
    g_auto(GStrv) fields = g_strsplit(lines[i], ",", -1);
    g_assert_cmpuint(g_strv_length(fields), ==, g_strv_length(header));
    g_autoptr(SieveGraph) g = build(space, fields[arch_col]);
    guint64 count = sieve_graph_params(g);
    char *end = NULL;
    double value = g_ascii_strtod(fields[params_col], &end);
    g_assert_true(end != fields[params_col] && *end == '\0');
    g_array_append_val(table, value);
    g_array_append_val(counts, count);
    g_ptr_array_add(archs, g_strdup(fields[arch_col]));
    g_hash_table_add(achievable, key_new(as_table_value(count)));
    smallest = MIN(smallest, count);
    largest = MAX(largest, count);
  }
  g_assert_cmpuint(table->len, ==, 15625);
  g_assert_cmpuint(g_hash_table_size(achievable), ==, 28);
  /* The distinct counts themselves (no two round to the same value). */
  g_autoptr(GArray) distinct = g_array_new(FALSE, FALSE, sizeof(guint64));
  g_autoptr(GHashTable) seen = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
  for (guint r = 0; r < counts->len; r++) {
    guint64 count = g_array_index(counts, guint64, r);
    gint64 *key = g_new(gint64, 1);
    *key = (gint64) count;
    if (g_hash_table_add(seen, key))
      g_array_append_val(distinct, count);
  }
  g_assert_cmpuint(distinct->len, ==, 28);
  g_autoptr(GHashTable) means = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
  add_means(means, (const guint64 *) distinct->data, distinct->len, 0, 0, 0);

  guint exact = 0;
  g_autoptr(GArray) averaged = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint r = 0; r < table->len; r++) {
    double value = g_array_index(table, double, r);
    guint64 count = g_array_index(counts, guint64, r);
    gint64 key = (gint64) (value * 1e6 + 0.5);
    if (!g_hash_table_contains(achievable, &key)) {
      if (!g_hash_table_contains(means, &key))
        g_error("line %u, %s: the table's %.6g M parameters is neither a network's count nor a mean of 2 to 4 of "
                "them", r + 2, (const char *) archs->pdata[r], value);
      g_array_append_val(averaged, value);
      g_assert_cmpfloat(value * 1e6, >, smallest);
      g_assert_cmpfloat(value * 1e6, <, largest);
      continue;
    }
    if (as_table_value(count) != value)
      g_error("line %u, %s: the table says %.6g M parameters, the network has %" G_GUINT64_FORMAT, r + 2,
              (const char *) archs->pdata[r], value, count);
    exact++;
  }
  g_test_message("nb201 params: %u of %u rows equal the built network's count, %u averaged values skipped", exact,
                 table->len, averaged->len);
  g_assert_cmpuint(exact, ==, 15421);
  g_assert_cmpuint(averaged->len, ==, 204);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  source_root = g_getenv("SIEVE_SOURCE_ROOT");
  if (source_root == NULL)
    source_root = SIEVE_SOURCE_ROOT;
  registry = test_registry_load();

  g_test_add_func("/graph/nb201/structure", test_structure);
  g_test_add_func("/graph/nb201/build-errors", test_build_errors);
  g_test_add_func("/graph/nb201/options", test_options);
  g_test_add_func("/graph/nb201/peer", test_peer);
  g_test_add_func("/graph/nb201/table", test_table);
  int status = g_test_run();
  sieve_registry_free(registry);
  return status;
}
