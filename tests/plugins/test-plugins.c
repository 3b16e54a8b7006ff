/* The bundled plugins (nb201, hpo, random, tabular, function), loaded from
 * the build tree exactly as sieve loads them, and checked against data read
 * independently here (the NAS-Bench-201 CSV, hand-computed function values). */
#include <errno.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include <sieve/sieve.h>

#include "sieve-config.h"

#include "test-support.h"

static SieveRegistry *registry;
static const char *source_root;

/* ---- helpers ------------------------------------------------------------ */

static char *
source_path(const char *relative)
{
  return g_build_filename(source_root, relative, NULL);
}

static const SieveComponent *
component(SieveComponentKind kind, const char *name)
{
  return test_component(registry, kind, name);
}

static SieveSpace *
space_try(const char *name, const char *yaml, GError **error)
{
  return test_space_try(registry, name, yaml, source_root, error);
}

static SieveSpace *
space_new(const char *name, const char *yaml)
{
  return test_space_new(registry, name, yaml, source_root);
}

static SieveOptimizer *
optimizer_new(const SieveSpace *space, const char *yaml, guint64 seed)
{
  const SieveComponent *c = component(SIEVE_KIND_OPTIMIZER, "random");
  GError *error = NULL;
  g_autoptr(SieveOptions) options = test_options_from(c, yaml, NULL, &error);
  g_assert_no_error(error);
  static const char *const names[] = {"value", NULL};
  SieveStudyInfo study = {.seed = seed, .n_objectives = 1, .objective_names = names};
  SieveOptimizer *o = sieve_optimizer_new(c, space, options, &study, &error);
  g_assert_no_error(error);
  return o;
}

static SieveEvaluator *
evaluator_try(const char *name, const SieveSpace *space, const char *yaml, const char *base_dir, GError **error)
{
  return test_evaluator_try(registry, name, space, yaml, base_dir, error);
}

static SieveEvaluator *
evaluator_new(const char *name, const SieveSpace *space, const char *yaml, const char *base_dir)
{
  return test_evaluator_new(registry, name, space, yaml, base_dir);
}

static SieveCandidate *
candidate_parse(const SieveSpace *space, const char *text)
{
  GError *error = NULL;
  SieveGenotype *g = sieve_space_parse(space, text, &error);
  g_assert_no_error(error);
  return sieve_candidate_new(g, NAN);
}

static char *
write_temp(const char *dir, const char *name, const char *contents)
{
  char *path = g_build_filename(dir, name, NULL);
  GError *error = NULL;
  g_file_set_contents(path, contents, -1, &error);
  g_assert_no_error(error);
  return path;
}

static void
remove_tree(const char *dir)
{
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name(d)) != NULL) {
    g_autofree char *path = g_build_filename(dir, name, NULL);
    g_remove(path);
  }
  g_rmdir(dir);
}

/* The NAS-Bench-201 CSV read here without the plugin: it holds no quotes,
 * so lines split on ','.  rows[i] is a NULL-terminated field vector. */
typedef struct {
  char **header;
  GPtrArray *rows; /* char ** */
} Table;

static void
table_free(Table *t)
{
  g_strfreev(t->header);
  g_ptr_array_unref(t->rows);
  g_free(t);
}

static Table *
read_nb201(void)
{
  g_autofree char *path = source_path("data/nb201/nb201.csv");
  g_autofree char *text = NULL;
  GError *error = NULL;
  g_file_get_contents(path, &text, NULL, &error);
  g_assert_no_error(error);
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  Table *t = g_new0(Table, 1);
  t->header = g_strsplit(lines[0], ",", -1);
  t->rows = g_ptr_array_new_with_free_func((GDestroyNotify) g_strfreev);
  for (guint i = 1; lines[i] != NULL; i++)
    if (lines[i][0] != '\0')
      g_ptr_array_add(t->rows, g_strsplit(lines[i], ",", -1));
  return t;
}

static gint
column(const Table *t, const char *name)
{
  for (guint c = 0; t->header[c]; c++)
    if (strcmp(t->header[c], name) == 0)
      return (gint) c;
  g_error("nb201.csv has no column '%s'", name);
}

/* ---- nb201 -------------------------------------------------------------- */

static void
test_nb201_decisions(void)
{
  g_autoptr(SieveSpace) space = space_new("nb201", NULL);
  static const char *const names[] = {"edge_1_0", "edge_2_0", "edge_2_1", "edge_3_0", "edge_3_1", "edge_3_2"};
  static const char *const ops[] = {"none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3"};
  g_assert_cmpuint(sieve_space_n_decisions(space), ==, 6);
  for (guint i = 0; i < 6; i++) {
    const SieveDecision *d = sieve_space_decision(space, i);
    g_assert_cmpstr(d->name, ==, names[i]);
    g_assert_cmpint(d->kind, ==, SIEVE_DECISION_CATEGORICAL);
    g_assert_cmpuint(d->n_choices, ==, 5);
    g_assert_cmpint(d->parent, ==, -1);
    for (guint k = 0; k < 5; k++)
      g_assert_cmpstr(d->choices[k], ==, ops[k]);
  }
  /* Edge edge_j_i is op~i of node j: setting one edge shows where it lands. */
  g_autoptr(SieveGenotype) g = sieve_genotype_new(space);
  for (guint i = 0; i < 6; i++)
    sieve_genotype_set(g, i, 0);
  sieve_genotype_set(g, 4, 3); /* edge_3_1 */
  g_autofree char *text = sieve_space_format(space, g);
  g_assert_cmpstr(text, ==, "|none~0|+|none~0|none~1|+|none~0|nor_conv_3x3~1|none~2|");
  /* Options are the network's sizes (tests/graph checks them); others are refused. */
  GError *error = NULL;
  g_autoptr(SieveSpace) bad = space_try("nb201", "channels: 16\n", &error);
  g_assert_null(bad);
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
  g_assert_true(g_str_has_prefix(error->message, "test.yaml:1:1: unknown option 'channels'"));
  g_clear_error(&error);
}

static void
test_nb201_round_trip(void)
{
  g_autoptr(SieveSpace) space = space_new("nb201", NULL);
  Table *t = read_nb201();
  gint arch = column(t, "arch_str");
  g_assert_cmpuint(t->rows->len, ==, 15625);
  g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint r = 0; r < t->rows->len; r++) {
    const char *text = ((char **) t->rows->pdata[r])[arch];
    GError *error = NULL;
    g_autoptr(SieveGenotype) g = sieve_space_parse(space, text, &error);
    g_assert_no_error(error);
    g_autofree char *back = sieve_space_format(space, g);
    g_assert_cmpstr(back, ==, text);
    /* Distinct strings, distinct genotypes: the 15,625 cover the space. */
    GString *key = g_string_new(NULL);
    for (guint i = 0; i < 6; i++)
      g_string_append_printf(key, "%d", (int) sieve_genotype_get(g, i));
    g_assert_true(g_hash_table_add(seen, g_string_free(key, FALSE)));
  }
  g_assert_cmpuint(g_hash_table_size(seen), ==, 15625);
  table_free(t);
}

static void
test_nb201_bad_strings(void)
{
  g_autoptr(SieveSpace) space = space_new("nb201", NULL);
  static const char *const ops = "(expected one of none, skip_connect, nor_conv_1x1, nor_conv_3x3, avg_pool_3x3)";
  struct {
    const char *text;
    const char *message;
  } cases[] = {
    {"|conv_3x3~0|+|none~0|none~1|+|none~0|none~1|none~2|", "unknown operation 'conv_3x3' at character 2 @OPS@"},
    {"none~0|+|none~0|none~1|+|none~0|none~1|none~2|",
     "missing leading '|' at character 1 (an arch string looks like |op~0|+|op~0|op~1|+|op~0|op~1|op~2|)"},
    {"|none~0|+|none~0|+|none~0|none~1|none~2|", "node 2 needs 2 inputs, got 1 (at character 18)"},
    {"|none|+|none~0|none~1|+|none~0|none~1|none~2|",
     "expected '~0' after 'none' at character 6, got nothing"},
    {"|none~1|+|none~0|none~1|+|none~0|none~1|none~2|", "expected '~0' after 'none' at character 6, got '~1'"},
    {"|none~0|+|none~0|none~1|+|none~0|none~1|none~12|",
     "expected '~2' after 'none' at character 45, got '~12'"},
    {"|none~0|none~1|+|none~0|none~1|+|none~0|none~1|none~2|",
     "node 1 needs 1 input, got 2 (extra operation at character 9)"},
    {"|none~0|+|none~0|none~1|+|none~0|none~1|none~2|none~3|",
     "node 3 needs 3 inputs, got 4 (extra operation at character 48)"},
    {"|none~0|+|none~0|none~1|+|none~0|none~1|none~2|+|none~0|",
     "unexpected '+' at character 48: the cell has only 3 nodes"},
    {"|none~0|+|none~0|none~1|+|none~0|none~1|none~2|x",
     "trailing characters at character 48 after the last node: 'x'"},
    {"|none~0|+|none~0|none~1|+|none~0|none~1|none~2| ",
     "trailing characters at character 48 after the last node: ' '"},
    {"|none~0|x+|none~0|none~1|+|none~0|none~1|none~2|", "expected '+|' after node 1 at character 9, got 'x'"},
    {"|none~0|+|none~0|none~1|", "the text ends after node 2 at character 25; expected '+|' and node 3"},
    {"|none~0|+none~0|none~1|+|none~0|none~1|none~2|", "expected '|' after '+' at character 10, got 'n'"},
    {"|none~0+|none~0|none~1|+|none~0|none~1|none~2|", "expected '|' at character 8, got '+'"},
    {"|none~0|+||none~0|none~1|+|none~0|none~1|none~2|",
     "expected an operation at character 11, got '|' @OPS@"},
    {"", "missing leading '|' at character 1 (an arch string looks like |op~0|+|op~0|op~1|+|op~0|op~1|op~2|)"},
    {"|none~0|+|none~0|none~1|+|none~0|none~1|NONE~2|", "unknown operation 'NONE' at character 41 @OPS@"},
  };
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    GError *error = NULL;
    g_autoptr(SieveGenotype) g = sieve_space_parse(space, cases[k].text, &error);
    g_assert_null(g);
    g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE);
    GString *inner = g_string_new(cases[k].message);
    g_string_replace(inner, "@OPS@", ops, 0);
    g_autofree char *expected = g_strdup_printf("bad genotype '%s' for space 'nb201': %s", cases[k].text, inner->str);
    g_string_free(inner, TRUE);
    g_assert_cmpstr(error->message, ==, expected);
    g_error_free(error);
  }
}

/* ---- hpo ---------------------------------------------------------------- */

/* Every genotype sampled validates and its text reads back equal. */
static void
check_samples(const SieveSpace *space, guint n)
{
  SieveRng rng;
  sieve_rng_seed(&rng, 7);
  for (guint k = 0; k < n; k++) {
    g_autoptr(SieveGenotype) g = sieve_space_sample(space, &rng);
    GError *error = NULL;
    g_assert_true(sieve_space_validate(space, g, &error));
    g_assert_no_error(error);
    g_autofree char *text = sieve_space_format(space, g);
    g_autoptr(SieveGenotype) back = sieve_space_parse(space, text, &error);
    g_assert_no_error(error);
    g_assert_true(sieve_genotype_equal(g, back));
  }
}

static void
test_hpo_files(void)
{
  g_autofree char *dir = source_path("search_spaces");
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  g_assert_nonnull(d);
  guint n_files = 0;
  const char *name;
  while ((name = g_dir_read_name(d)) != NULL) {
    if (!g_str_has_suffix(name, ".yaml"))
      continue;
    g_autofree char *yaml = g_strdup_printf("file: search_spaces/%s\n", name);
    g_autoptr(SieveSpace) space = space_new("hpo", yaml);
    g_test_message("%s: %u decisions", name, sieve_space_n_decisions(space));
    check_samples(space, 500);
    n_files++;
  }
  g_assert_cmpuint(n_files, >=, 4);

  /* The shapes the function evaluator relies on. */
  struct {
    const char *file;
    guint n;
    double low, high;
  } boxes[] = {
    {"search_spaces/branin.yaml", 2, -5, 10},
    {"search_spaces/hartmann6.yaml", 6, 0, 1},
    {"search_spaces/rosenbrock4.yaml", 4, -5, 10},
  };
  for (guint k = 0; k < G_N_ELEMENTS(boxes); k++) {
    g_autofree char *yaml = g_strdup_printf("file: %s\n", boxes[k].file);
    g_autoptr(SieveSpace) space = space_new("hpo", yaml);
    g_assert_cmpuint(sieve_space_n_decisions(space), ==, boxes[k].n);
    for (guint i = 0; i < boxes[k].n; i++) {
      const SieveDecision *dec = sieve_space_decision(space, i);
      g_autofree char *x = g_strdup_printf("x%u", i + 1);
      g_assert_cmpstr(dec->name, ==, x);
      g_assert_cmpint(dec->kind, ==, SIEVE_DECISION_FLOAT);
      if (k == 0 && i == 1) /* branin's x2 in [0, 15] */
        g_assert_true(dec->low == 0 && dec->high == 15);
      else
        g_assert_true(dec->low == boxes[k].low && dec->high == boxes[k].high);
    }
  }
}

static void
test_hpo_mlp(void)
{
  g_autoptr(SieveSpace) space = space_new("hpo", "file: search_spaces/mlp.yaml\n");
  gint opt = sieve_space_find(space, "optimizer");
  g_assert_cmpint(opt, ==, 0);
  struct {
    const char *name;
    SieveDecisionKind kind;
    gint parent;
    guint64 mask;
    gboolean log;
  } expect[] = {
    {"lr", SIEVE_DECISION_FLOAT, -1, 0, TRUE},
    {"momentum", SIEVE_DECISION_FLOAT, 0, 1u << 0, FALSE},
    {"nesterov", SIEVE_DECISION_CATEGORICAL, 0, 1u << 0, FALSE},
    {"beta1", SIEVE_DECISION_FLOAT, 0, 1u << 1, FALSE},
    {"weight_decay", SIEVE_DECISION_FLOAT, -1, 0, TRUE},
    {"batch_size", SIEVE_DECISION_INT, -1, 0, TRUE},
    {"layers", SIEVE_DECISION_INT, -1, 0, FALSE},
    {"activation", SIEVE_DECISION_CATEGORICAL, -1, 0, FALSE},
  };
  for (guint k = 0; k < G_N_ELEMENTS(expect); k++) {
    gint i = sieve_space_find(space, expect[k].name);
    g_assert_cmpint(i, >, 0);
    const SieveDecision *d = sieve_space_decision(space, (guint) i);
    g_assert_cmpint(d->kind, ==, expect[k].kind);
    g_assert_cmpint(d->parent, ==, expect[k].parent);
    if (d->parent >= 0)
      g_assert_cmpuint(d->parent_mask, ==, expect[k].mask);
    g_assert_cmpint(d->log, ==, expect[k].log);
  }
  /* A text with sgd must not carry beta1; one with adam must. */
  GError *error = NULL;
  g_autoptr(SieveGenotype) g = sieve_space_parse(
      space, "optimizer=adam,lr=0.001,beta1=0.9,weight_decay=0.0001,batch_size=64,layers=2,hidden=128,"
             "activation=relu,dropout=0.1", &error);
  g_assert_no_error(error);
  g_autoptr(SieveGenotype) bad = sieve_space_parse(
      space, "optimizer=sgd,lr=0.001,beta1=0.9,weight_decay=0.0001,batch_size=64,layers=2,hidden=128,"
             "activation=relu,dropout=0.1", &error);
  g_assert_null(bad);
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE);
  g_clear_error(&error);
}

static void
test_hpo_inline(void)
{
  g_autoptr(SieveSpace) space = space_new("hpo",
                                          "parameters:\n"
                                          "  kind: [a, b, c]\n"
                                          "  n: {type: int, low: -3, high: 3}\n"
                                          "  scale: {type: float, low: 0.5, high: 2, log: true, condition: {kind: [b, c]}}\n"
                                          "  tag: {type: categorical, choices: [16, 32], condition: {kind: a}}\n");
  g_assert_cmpuint(sieve_space_n_decisions(space), ==, 4);
  const SieveDecision *scale = sieve_space_decision(space, 2);
  g_assert_cmpint(scale->parent, ==, 0);
  g_assert_cmpuint(scale->parent_mask, ==, (1u << 1) | (1u << 2));
  g_assert_true(scale->log);
  const SieveDecision *tag = sieve_space_decision(space, 3);
  g_assert_cmpstr(tag->choices[1], ==, "32");
  g_assert_cmpuint(tag->parent_mask, ==, 1u << 0);
  check_samples(space, 300);
}

static void
test_hpo_errors(void)
{
  /* fixture, line, column, message (after "path:line:col: ") */
  struct {
    const char *fixture;
    guint line, column;
    const char *message;
  } cases[] = {
    {"hpo-unknown-key.yaml", 4, 34, "unknown key 'lo' in parameter 'lr' (did you mean 'low'?)"},
    {"hpo-low-high.yaml", 3, 34, "'high' of 'x' must be greater than 'low' (2), got 1"},
    {"hpo-too-wide.yaml", 3, 39, "the range of 'x' (-1e308 to 1e308) is wider than the largest double "
                                 "(1.79769e+308): narrow it"},
    {"hpo-log-low.yaml", 3, 26, "'lr' is on a log scale, so 'low' must be > 0, got 0"},
    {"hpo-int-log.yaml", 2, 23, "'n' is on a log scale, so 'low' must be > 0, got -1"},
    {"hpo-empty-choices.yaml", 3, 37, "categorical parameter 'act' needs at least one choice"},
    {"hpo-duplicate-choice.yaml", 2, 15, "choice 'relu' of 'act' is listed twice"},
    {"hpo-bad-type.yaml", 2, 13, "unknown type 'flot' for 'x': expected categorical, int or float (did you mean 'float'?)"},
    {"hpo-missing-type.yaml", 2, 6, "parameter 'x' needs a 'type' (categorical, int or float)"},
    {"hpo-missing-high.yaml", 2, 6, "float parameter 'x' needs 'high'"},
    {"hpo-wrong-key.yaml", 2, 26, "'choices' does not apply to int parameter 'n' (it takes type, low, high, log, condition)"},
    {"hpo-condition-later.yaml", 3, 56, "condition of 'momentum' names 'optimizer', which is not an earlier parameter "
                                        "(a parent must be declared before the parameters that depend on it)"},
    {"hpo-condition-typo.yaml", 3, 56, "condition of 'momentum' names 'optimiser', which is not an earlier "
                                       "parameter (did you mean 'optimizer'?)"},
    {"hpo-condition-value.yaml", 3, 73, "'adamw' is not a choice of 'optimizer' (one of: sgd, adam) (did you mean 'adam'?)"},
    {"hpo-condition-float.yaml", 3, 49, "condition of 'y' names 'x', which is a float parameter; a parent must be categorical"},
    {"hpo-condition-65.yaml", 4, 51, "'big' has 65 choices; a condition's parent may have at most 64"},
    {"hpo-not-a-number.yaml", 2, 32, "expected an integer, got 'eight'"},
    {"hpo-no-parameters.yaml", 2, 1, "a search space file needs a top-level 'parameters' map"},
    {"hpo-top-typo.yaml", 2, 1, "unknown key 'parameter' in a search space file (it takes parameters, description) "
                                "(did you mean 'parameters'?)"},
    {"hpo-scalar.yaml", 2, 6, "parameter 'x' must be a map like {type: float, low: 0, high: 1} or a list of choices, got a scalar"},
    {"hpo-bad-name.yaml", 2, 3, "parameter name 'learning rate,1' must start with a letter or '_' and hold only letters, digits, '_', '.' and '-'"},
  };
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    g_autofree char *relative = g_build_filename("tests/plugins/fixtures", cases[k].fixture, NULL);
    g_autofree char *path = source_path(relative);
    g_assert_true(g_file_test(path, G_FILE_TEST_EXISTS));
    g_autofree char *yaml = g_strdup_printf("file: %s\n", path);
    GError *error = NULL;
    g_autoptr(SieveSpace) space = space_try("hpo", yaml, &error);
    g_assert_null(space);
    g_assert_nonnull(error);
    g_autofree char *expected = g_strdup_printf("%s:%u:%u: %s", path, cases[k].line, cases[k].column,
                                                cases[k].message);
    if (g_strcmp0(error->message, expected) != 0)
      g_error("%s:\n  got      %s\n  expected %s", cases[k].fixture, error->message, expected);
    g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
    g_error_free(error);
  }

  /* Option-level mistakes point into the experiment. */
  struct {
    const char *yaml;
    const char *message;
  } options[] = {
    {"description: none\n", "test.yaml:1:1: unknown option 'description' for test"},
    {"file: search_spaces/branin.yaml\nparameters: {x: [a]}\n",
     "test.yaml:2:13: space 'hpo' takes 'file' or 'parameters', not both"},
    {"file: search_spaces/nope.yaml\n", "test.yaml:1:7: cannot read search space: "},
    {"parameters: [a, b]\n", "test.yaml:1:13: 'parameters' must be a map of parameter names to their domains, got a list"},
    {"parameters: {}\n", "test.yaml:1:13: 'parameters' declares no parameter"},
  };
  for (guint k = 0; k < G_N_ELEMENTS(options); k++) {
    GError *error = NULL;
    g_autoptr(SieveSpace) space = space_try("hpo", options[k].yaml, &error);
    g_assert_null(space);
    g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
    if (!g_str_has_prefix(error->message, options[k].message))
      g_error("got '%s', expected a message starting '%s'", error->message, options[k].message);
    g_error_free(error);
  }
  /* Neither file nor parameters: no location to point at without a map. */
  const SieveComponent *hpo = component(SIEVE_KIND_SPACE, "hpo");
  g_autoptr(SieveOptions) none = test_options_from(hpo, NULL, NULL, NULL);
  GError *error = NULL;
  g_autoptr(SieveSpace) space = sieve_space_new(hpo, none, &error);
  g_assert_null(space);
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
  g_assert_cmpstr(error->message, ==,
                  "space 'hpo' needs 'file' (a YAML search space) or 'parameters' (inline)");
  g_clear_error(&error);
  g_autoptr(SieveSpace) empty_map = space_try("hpo", "{}\n", &error);
  g_assert_null(empty_map);
  g_assert_cmpstr(error->message, ==,
                  "test.yaml:1:1: space 'hpo' needs 'file' (a YAML search space) or 'parameters' (inline)");
  g_clear_error(&error);
}

/* ---- random ------------------------------------------------------------- */

static GPtrArray *
ask_texts(SieveOptimizer *o, guint n)
{
  g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_candidate_free);
  GError *error = NULL;
  g_assert_true(sieve_optimizer_ask(o, n, out, &error));
  g_assert_no_error(error);
  GPtrArray *texts = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < out->len; i++)
    g_ptr_array_add(texts, g_strdup(sieve_candidate_get_text(out->pdata[i])));
  return texts;
}

static void
assert_same_texts(GPtrArray *a, GPtrArray *b)
{
  g_assert_cmpuint(a->len, ==, b->len);
  for (guint i = 0; i < a->len; i++)
    g_assert_cmpstr(a->pdata[i], ==, b->pdata[i]);
}

static void
test_random_determinism(void)
{
  g_autoptr(SieveSpace) space = space_new("hpo", "file: search_spaces/mlp.yaml\n");
  g_autoptr(SieveOptimizer) a = optimizer_new(space, NULL, 42);
  g_autoptr(SieveOptimizer) b = optimizer_new(space, NULL, 42);
  g_autoptr(SieveOptimizer) c = optimizer_new(space, NULL, 43);
  g_autoptr(GPtrArray) ta = ask_texts(a, 20);
  /* Batching does not change the stream. */
  g_autoptr(GPtrArray) tb = g_ptr_array_new_with_free_func(g_free);
  for (guint k = 0; k < 4; k++) {
    g_autoptr(GPtrArray) part = ask_texts(b, 5);
    for (guint i = 0; i < part->len; i++)
      g_ptr_array_add(tb, g_strdup(part->pdata[i]));
  }
  assert_same_texts(ta, tb);
  g_autoptr(GPtrArray) tc = ask_texts(c, 20);
  guint same = 0;
  for (guint i = 0; i < 20; i++)
    same += strcmp(ta->pdata[i], tc->pdata[i]) == 0;
  g_assert_cmpuint(same, <, 20);
  /* The stream is the space's uniform sample from a generator seeded 42. */
  SieveRng rng;
  sieve_rng_seed(&rng, 42);
  for (guint i = 0; i < 20; i++) {
    g_autoptr(SieveGenotype) g = sieve_space_sample(space, &rng);
    g_autofree char *text = sieve_space_format(space, g);
    g_assert_cmpstr(text, ==, ta->pdata[i]);
  }
}

static void
check_continuation(const SieveSpace *space, const char *yaml)
{
  g_autoptr(SieveOptimizer) a = optimizer_new(space, yaml, 5);
  g_autoptr(GPtrArray) first = ask_texts(a, 7);
  /* A tell in between changes nothing for random search, but goes through. */
  g_autoptr(SieveCandidate) cand = candidate_parse(space, first->pdata[0]);
  g_autoptr(SieveResult) result = sieve_result_new();
  GError *error = NULL;
  const double objectives[] = {1.0};
  g_assert_true(sieve_optimizer_tell(a, cand, result, objectives, &error));
  g_assert_no_error(error);
  g_autoptr(GVariant) state = sieve_optimizer_save(a, &error);
  g_assert_no_error(error);
  /* Through bytes, as the store keeps it. */
  g_autoptr(GBytes) bytes = g_variant_get_data_as_bytes(state);
  g_autoptr(GVariant) restored = g_variant_ref_sink(
      g_variant_new_from_bytes(g_variant_get_type(state), bytes, FALSE));
  g_autoptr(GPtrArray) expected = ask_texts(a, 30);

  g_autoptr(SieveOptimizer) b = optimizer_new(space, yaml, 999); /* another seed: load must override it */
  g_assert_true(sieve_optimizer_load(b, restored, &error));
  g_assert_no_error(error);
  g_autoptr(GPtrArray) got = ask_texts(b, 30);
  assert_same_texts(expected, got);
}

static void
test_random_save_load(void)
{
  g_autoptr(SieveSpace) mlp = space_new("hpo", "file: search_spaces/mlp.yaml\n");
  check_continuation(mlp, NULL);
  check_continuation(mlp, "unique: true\n");
  g_autoptr(SieveSpace) nb201 = space_new("nb201", NULL);
  check_continuation(nb201, "unique: true\n");

  /* unique's seen set survives a load: a 6-genotype space, 4 proposed
   * before the save, only 2 new ones after it. */
  g_autoptr(SieveSpace) tiny = space_new("hpo", "parameters: {a: [x, y, z], b: [p, q]}\n");
  g_autoptr(SieveOptimizer) a = optimizer_new(tiny, "unique: true\n", 1);
  g_autoptr(GPtrArray) first = ask_texts(a, 4);
  GError *error = NULL;
  g_autoptr(GVariant) state = sieve_optimizer_save(a, &error);
  g_autoptr(SieveOptimizer) b = optimizer_new(tiny, "unique: true\n", 1);
  g_assert_true(sieve_optimizer_load(b, state, &error));
  g_autoptr(GPtrArray) rest = ask_texts(b, 10);
  g_assert_cmpuint(rest->len, ==, 2);
  for (guint i = 0; i < rest->len; i++)
    for (guint j = 0; j < first->len; j++)
      g_assert_cmpstr(rest->pdata[i], !=, first->pdata[j]);

  /* A state of the wrong shape is refused, naming the optimizer. */
  g_autoptr(GVariant) wrong = g_variant_ref_sink(g_variant_new_string("nope"));
  g_assert_false(sieve_optimizer_load(b, wrong, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE);
  g_assert_cmpstr(error->message, ==,
                  "optimizer 'random': cannot restore its saved state: expected a state of type a{sv}, got s");
  g_clear_error(&error);
}

/* A unique search's state is its seeded and current rng and a count: its
 * proposals are drawn again on load.  The texts themselves, saved after
 * every tell, made a study of n trials write O(n^2) bytes.  A state saved
 * with the texts (before the count) still loads and stays in that form;
 * one that does not replay in this space is refused, the optimizer as it
 * was. */
static void
test_random_unique_state(void)
{
  g_autoptr(SieveSpace) nb201 = space_new("nb201", NULL);
  g_autoptr(SieveOptimizer) a = optimizer_new(nb201, "unique: true\n", 4);
  g_autoptr(GPtrArray) first = ask_texts(a, 3000);
  GError *error = NULL;
  g_autoptr(GVariant) state = sieve_optimizer_save(a, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(g_variant_get_size(state), <, 200);
  g_autoptr(GPtrArray) expected = ask_texts(a, 500);
  g_autoptr(SieveOptimizer) b = optimizer_new(nb201, "unique: true\n", 77);
  g_assert_true(sieve_optimizer_load(b, state, &error));
  g_assert_no_error(error);
  g_autoptr(GPtrArray) got = ask_texts(b, 500);
  assert_same_texts(expected, got);

  /* The form before: {"rng", "seen": texts}. */
  GVariantDict old;
  g_variant_dict_init(&old, state);
  g_variant_dict_remove(&old, "start");
  g_variant_dict_remove(&old, "proposed");
  g_variant_dict_insert_value(&old, "seen", g_variant_new_strv((const char *const *) first->pdata, first->len));
  g_autoptr(GVariant) legacy = g_variant_ref_sink(g_variant_dict_end(&old));
  g_autoptr(SieveOptimizer) c = optimizer_new(nb201, "unique: true\n", 78);
  g_assert_true(sieve_optimizer_load(c, legacy, &error));
  g_assert_no_error(error);
  g_autoptr(GPtrArray) from_texts = ask_texts(c, 500);
  assert_same_texts(expected, from_texts);
  g_autoptr(GVariant) again = sieve_optimizer_save(c, &error);
  g_autoptr(GVariant) texts = g_variant_lookup_value(again, "seen", G_VARIANT_TYPE_STRING_ARRAY);
  g_assert_nonnull(texts);
  g_assert_cmpuint(g_variant_n_children(texts), ==, 3500);

  /* An ask that ends in draws bringing nothing new (a space counted as
   * infinite, a float, with few distinct texts) moves the rng past the last
   * proposal: the state counts those draws too, and loads (it was refused,
   * "do not draw again in this space", a review found). */
  g_autoptr(SieveSpace) few = space_new("hpo", "parameters:\n"
                                               "  x1: {type: float, low: 1, high: 1.0000000000000004}\n"
                                               "  x2: {type: int, low: 0, high: 1}\n");
  g_autoptr(SieveOptimizer) e = optimizer_new(few, "unique: true\n", 9);
  g_autoptr(GPtrArray) all = ask_texts(e, 20);
  g_assert_cmpuint(all->len, <, 20);
  g_autoptr(GVariant) e_state = sieve_optimizer_save(e, &error);
  g_autoptr(SieveOptimizer) f = optimizer_new(few, "unique: true\n", 9);
  g_assert_true(sieve_optimizer_load(f, e_state, &error));
  g_assert_no_error(error);
  g_autoptr(GVariant) f_state = sieve_optimizer_save(f, &error);
  g_assert_true(g_variant_equal(e_state, f_state));

  /* Saved in another space: its draws end elsewhere. */
  g_autoptr(SieveSpace) mlp = space_new("hpo", "file: search_spaces/mlp.yaml\n");
  g_autoptr(SieveOptimizer) d = optimizer_new(mlp, "unique: true\n", 4);
  g_autoptr(GPtrArray) before = ask_texts(d, 3);
  g_autoptr(GVariant) d_state = sieve_optimizer_save(d, &error);
  g_assert_false(sieve_optimizer_load(d, state, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE);
  g_assert_nonnull(strstr(error->message, "proposals do not draw again in this space"));
  g_clear_error(&error);
  g_autoptr(GVariant) d_after = sieve_optimizer_save(d, &error);
  g_assert_true(g_variant_equal(d_state, d_after));
}

static void
test_random_unique_exhaustion(void)
{
  /* a=x: b in 1..3 (3 genotypes); a=y: b inactive (1 genotype): 4 in all. */
  g_autoptr(SieveSpace) space = space_new("hpo", "parameters:\n"
                                                 "  a: [x, y]\n"
                                                 "  b: {type: int, low: 1, high: 3, condition: {a: [x]}}\n");
  g_autoptr(SieveOptimizer) o = optimizer_new(space, "unique: true\n", 3);
  g_autoptr(GPtrArray) first = ask_texts(o, 3);
  g_assert_cmpuint(first->len, ==, 3);
  g_autoptr(GPtrArray) second = ask_texts(o, 3); /* only one is left */
  g_assert_cmpuint(second->len, ==, 1);
  g_autoptr(GHashTable) all = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < 3; i++)
    g_hash_table_add(all, first->pdata[i]);
  g_hash_table_add(all, second->pdata[0]);
  g_assert_cmpuint(g_hash_table_size(all), ==, 4);
  g_assert_true(g_hash_table_contains(all, "a=y"));
  g_assert_true(g_hash_table_contains(all, "a=x,b=1"));
  g_assert_true(g_hash_table_contains(all, "a=x,b=3"));

  /* Exhausted: an ask gives none, which is no error (sieve/optimizer.h),
   * and again after that. */
  g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_candidate_free);
  GError *error = NULL;
  for (guint i = 0; i < 2; i++) {
    g_assert_true(sieve_optimizer_ask(o, 2, out, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(out->len, ==, 0);
  }

  /* Without unique, the same space repeats freely. */
  g_autoptr(SieveOptimizer) plain = optimizer_new(space, NULL, 3);
  g_autoptr(GPtrArray) many = ask_texts(plain, 50);
  g_assert_cmpuint(many->len, ==, 50);

  /* All 15,625 NAS-Bench-201 cells, each once, then nothing. */
  g_autoptr(SieveSpace) nb201 = space_new("nb201", NULL);
  g_autoptr(SieveOptimizer) u = optimizer_new(nb201, "unique: true\n", 11);
  g_autoptr(GPtrArray) cells = ask_texts(u, 20000);
  g_assert_cmpuint(cells->len, ==, 15625);
  g_assert_true(sieve_optimizer_ask(u, 1, out, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(out->len, ==, 0);
}

/* ---- tabular ------------------------------------------------------------ */

static void
test_tabular_nb201(void)
{
  g_autoptr(SieveSpace) space = space_new("nb201", NULL);
  g_autofree char *data = source_path("data/nb201");
  gint64 start = g_get_monotonic_time();
  g_autoptr(SieveEvaluator) all = evaluator_new("tabular", space, "table: nb201.csv\n", data);
  g_test_message("loading 15,625 rows (all metrics): %.3f s", (g_get_monotonic_time() - start) / 1e6);
  g_autoptr(SieveEvaluator) some = evaluator_new(
      "tabular", space, "table: nb201.csv\nmetrics: [cifar10_valid_acc, params_m]\ncost: lat_ms_pixel3\n", data);
  g_assert_true(sieve_evaluator_is_concurrent(all));

  Table *t = read_nb201();
  gint arch = column(t, "arch_str");
  guint n_checked = 0;
  for (guint r = 0; r < t->rows->len; r += 37) {
    char **row = t->rows->pdata[r];
    g_autoptr(SieveCandidate) cand = candidate_parse(space, row[arch]);
    GError *error = NULL;
    g_autoptr(SieveResult) full = sieve_evaluator_evaluate(all, cand, &error);
    g_assert_no_error(error);
    g_assert_cmpint(sieve_result_get_status(full), ==, SIEVE_STATUS_OK);
    /* Default metrics: every column but the key, in table order. */
    g_assert_cmpuint(sieve_result_n_metrics(full), ==, g_strv_length(t->header) - 1);
    guint m = 0;
    for (guint c = 0; t->header[c]; c++) {
      if ((gint) c == arch)
        continue;
      g_assert_cmpstr(sieve_result_metric_name(full, m), ==, t->header[c]);
      g_assert_cmpfloat(sieve_result_metric_value(full, m), ==, g_ascii_strtod(row[c], NULL));
      m++;
    }
    g_autoptr(SieveResult) part = sieve_evaluator_evaluate(some, cand, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(sieve_result_n_metrics(part), ==, 2);
    g_assert_cmpstr(sieve_result_metric_name(part, 0), ==, "cifar10_valid_acc");
    g_assert_cmpfloat(test_metric(part, "cifar10_valid_acc"), ==,
                      g_ascii_strtod(row[column(t, "cifar10_valid_acc")], NULL));
    g_assert_cmpfloat(test_metric(part, "params_m"), ==, g_ascii_strtod(row[column(t, "params_m")], NULL));
    g_assert_cmpfloat(sieve_result_get_cost(part), ==, g_ascii_strtod(row[column(t, "lat_ms_pixel3")], NULL));
    n_checked++;
  }
  g_assert_cmpuint(n_checked, >, 400);
  /* The README's known fact: the best CIFAR-10 test accuracy is 94.3733. */
  g_autoptr(SieveCandidate) best = candidate_parse(space, ((char **) t->rows->pdata[6111])[arch]);
  g_autoptr(SieveResult) r = sieve_evaluator_evaluate(all, best, NULL);
  g_assert_cmpfloat(test_metric(r, "cifar10_test_acc"), ==, 94.3733);
  g_assert_cmpfloat(test_metric(r, "arch_index"), ==, 6111);
  table_free(t);
}

static void
test_tabular_missing_genotype(void)
{
  g_autofree char *dir = g_dir_make_tmp("sieve-tabular-XXXXXX", NULL);
  g_autoptr(SieveSpace) space = space_new("nb201", NULL);
  const char *present = "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|";
  g_autofree char *csv = g_strdup_printf("arch_str,acc\n%s,1.5\n", present);
  g_autofree char *path = write_temp(dir, "small.csv", csv);
  g_autoptr(SieveEvaluator) e = evaluator_new("tabular", space, "table: small.csv\n", dir);
  const char *absent = "|skip_connect~0|+|none~0|none~1|+|none~0|none~1|none~2|";
  g_autoptr(SieveCandidate) cand = candidate_parse(space, absent);
  GError *error = NULL;
  g_autoptr(SieveResult) r = sieve_evaluator_evaluate(e, cand, &error);
  g_assert_no_error(error);
  g_assert_cmpint(sieve_result_get_status(r), ==, SIEVE_STATUS_FAILED);
  g_autofree char *reason = g_strdup_printf("'%s' is not in %s", absent, path);
  g_assert_cmpstr(sieve_result_get_reason(r), ==, reason);
  g_assert_cmpuint(sieve_result_n_metrics(r), ==, 0);
  g_autoptr(SieveCandidate) hit = candidate_parse(space, present);
  g_autoptr(SieveResult) ok = sieve_evaluator_evaluate(e, hit, &error);
  g_assert_cmpfloat(test_metric(ok, "acc"), ==, 1.5);
  remove_tree(dir);
}

static void
test_tabular_quotes(void)
{
  /* Generic texts hold commas, so their keys are quoted (RFC 4180), with
   * CRLF line ends and "" inside a quoted note. */
  g_autofree char *dir = g_dir_make_tmp("sieve-tabular-XXXXXX", NULL);
  g_autoptr(SieveSpace) space = space_new("hpo", "parameters: {a: [x, y], n: {type: int, low: 1, high: 2}}\n");
  g_autofree char *path = write_temp(dir, "hpo.csv",
                                     "note,config,loss,seconds\r\n"
                                     "\"say \"\"hi\"\"\",\"a=x,n=1\",0.25,10\r\n"
                                     "\"two\nlines\",\"a=y,n=2\",-1e-3,20\r\n"
                                     "plain,\"a=x,n=2\",3,30\r\n");
  g_autoptr(SieveEvaluator) e = evaluator_new("tabular", space, "table: hpo.csv\nkey: config\ncost: seconds\n", dir);
  struct {
    const char *text;
    double loss, seconds;
  } rows[] = {{"a=x,n=1", 0.25, 10}, {"a=y,n=2", -1e-3, 20}, {"a=x,n=2", 3, 30}};
  for (guint k = 0; k < G_N_ELEMENTS(rows); k++) {
    g_autoptr(SieveCandidate) cand = candidate_parse(space, rows[k].text);
    g_autoptr(SieveResult) r = sieve_evaluator_evaluate(e, cand, NULL);
    g_assert_cmpint(sieve_result_get_status(r), ==, SIEVE_STATUS_OK);
    /* Default metrics: numeric columns (the notes are not). */
    g_assert_cmpuint(sieve_result_n_metrics(r), ==, 2);
    g_assert_cmpfloat(test_metric(r, "loss"), ==, rows[k].loss);
    g_assert_cmpfloat(sieve_result_get_cost(r), ==, rows[k].seconds);
  }
  remove_tree(dir);
}

static void
test_tabular_csv_rules(void)
{
  /* The table is read by sieve/csv.h's rules, as datasets are: a byte-order
   * mark, spaces around fields (a quoted key's too), blank lines, and a
   * gzipped file. */
  g_autofree char *dir = g_dir_make_tmp("sieve-tabular-XXXXXX", NULL);
  g_autoptr(SieveSpace) space = space_new("hpo", "parameters: {a: [x, y], n: {type: int, low: 1, high: 2}}\n");
  const char *text = "\xEF\xBB\xBF" "config , \"loss\"\r\n"
                     "\r\n"
                     "  \"a=x,n=1\" , 0.25 \r\n"
                     "\"a=y,n=2\",\t-1e-3\r\n"
                     "\n";
  g_autofree char *plain = write_temp(dir, "plain.csv", text);
  g_autoptr(GZlibCompressor) z = g_zlib_compressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP, 6);
  g_autoptr(GOutputStream) mem = g_memory_output_stream_new_resizable();
  g_autoptr(GOutputStream) out = g_converter_output_stream_new(mem, G_CONVERTER(z));
  GError *error = NULL;
  g_assert_true(g_output_stream_write_all(out, text, strlen(text), NULL, NULL, &error));
  g_assert_true(g_output_stream_close(out, NULL, &error));
  g_autoptr(GBytes) gz = g_memory_output_stream_steal_as_bytes(G_MEMORY_OUTPUT_STREAM(mem));
  g_autofree char *zipped = g_build_filename(dir, "table.csv.gz", NULL);
  g_file_set_contents(zipped, g_bytes_get_data(gz, NULL), (gssize) g_bytes_get_size(gz), &error);
  g_assert_no_error(error);

  const char *yamls[] = {"table: plain.csv\nkey: config\n", "table: table.csv.gz\nkey: config\n"};
  for (guint k = 0; k < G_N_ELEMENTS(yamls); k++) {
    g_autoptr(SieveEvaluator) e = evaluator_new("tabular", space, yamls[k], dir);
    g_autoptr(SieveCandidate) first = candidate_parse(space, "a=x,n=1");
    g_autoptr(SieveResult) r1 = sieve_evaluator_evaluate(e, first, NULL);
    g_assert_cmpint(sieve_result_get_status(r1), ==, SIEVE_STATUS_OK);
    g_assert_cmpuint(sieve_result_n_metrics(r1), ==, 1);
    g_assert_cmpfloat(test_metric(r1, "loss"), ==, 0.25);
    g_autoptr(SieveCandidate) second = candidate_parse(space, "a=y,n=2");
    g_autoptr(SieveResult) r2 = sieve_evaluator_evaluate(e, second, NULL);
    g_assert_cmpfloat(test_metric(r2, "loss"), ==, -1e-3);
  }
  remove_tree(dir);
}

static void
test_tabular_bad_tables(void)
{
  g_autofree char *dir = g_dir_make_tmp("sieve-tabular-XXXXXX", NULL);
  g_autoptr(SieveSpace) space = space_new("nb201", NULL);
  const char *a = "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|";
  const char *b = "|skip_connect~0|+|none~0|none~1|+|none~0|none~1|none~2|";
  g_autofree char *good = g_strdup_printf("arch_str,acc,params\n%s,1,2\n%s,3,4\n", a, b);
  g_autofree char *ragged = g_strdup_printf("arch_str,acc,params\n%s,1,2\n%s,3\n", a, b);
  g_autofree char *text_cell = g_strdup_printf("arch_str,acc,params\n%s,1,2\n%s,n/a,4\n", a, b);
  g_autofree char *dup = g_strdup_printf("arch_str,acc\n%s,1\n%s,2\n%s,3\n", a, b, a);
  const char *wrong_space = "arch_str,acc\nlr=0.1,1\n";
  g_autofree char *unclosed = g_strdup_printf("arch_str,acc\n%s,\"1\n", a);
  g_autofree char *p_good = write_temp(dir, "good.csv", good);
  g_autofree char *p_ragged = write_temp(dir, "ragged.csv", ragged);
  g_autofree char *p_text = write_temp(dir, "text.csv", text_cell);
  g_autofree char *p_dup = write_temp(dir, "dup.csv", dup);
  g_autofree char *p_wrong = write_temp(dir, "wrong.csv", wrong_space);
  g_autofree char *p_empty = write_temp(dir, "empty.csv", "");
  g_autofree char *p_header = write_temp(dir, "header.csv", "arch_str,acc\n");
  g_autofree char *p_unclosed = write_temp(dir, "unclosed.csv", unclosed);
  g_autofree char *p_missing = g_build_filename(dir, "missing.csv", NULL);

  struct {
    const char *yaml;
    gint code;
    char *message; /* printf'd below */
  } cases[] = {
    {"table: missing.csv\n", SIEVE_ERROR_CONFIG, g_strdup_printf("test.yaml:1:8: cannot read table: ")},
    {"table: good.csv\nkey: arch\n", SIEVE_ERROR_CONFIG,
     g_strdup_printf("test.yaml:2:6: column 'arch' is not in %s (did you mean 'arch_str'?)", p_good)},
    {"table: good.csv\nmetrics: [acc, param]\n", SIEVE_ERROR_CONFIG,
     g_strdup_printf("test.yaml:2:10: column 'param' is not in %s (did you mean 'params'?)", p_good)},
    {"table: good.csv\ncost: zzz_total\n", SIEVE_ERROR_CONFIG,
     g_strdup_printf("test.yaml:2:7: column 'zzz_total' is not in %s", p_good)},
    /* The reader's errors (sieve/csv.h) give line:col: the missing field's place, the quote's. */
    {"table: ragged.csv\n", SIEVE_ERROR_PARSE,
     g_strdup_printf("%s:3:%zu: expected 3 fields as in the header (line 1), found 2", p_ragged, strlen(b) + 3)},
    {"table: text.csv\nmetrics: [acc]\n", SIEVE_ERROR_PARSE,
     g_strdup_printf("%s:3: column 'acc' holds 'n/a', not a number", p_text)},
    {"table: dup.csv\n", SIEVE_ERROR_PARSE, g_strdup_printf("%s:4: key '%s' already appears on line 2", p_dup, a)},
    /* A table of another space is a mistake of the experiment (bug hunt 3:
     * it was a parse error, exit status 1 instead of 2). */
    {"table: wrong.csv\n", SIEVE_ERROR_CONFIG,
     g_strdup_printf("%s: no key of column 'arch_str' is a genotype of space 'nb201' in its canonical text "
                     "(line 2: bad genotype 'lr=0.1' for space 'nb201': missing leading '|' at character 1 (an "
                     "arch string looks like |op~0|+|op~0|op~1|+|op~0|op~1|op~2|))", p_wrong)},
    {"table: empty.csv\n", SIEVE_ERROR_PARSE, g_strdup_printf("%s: the table is empty (it needs a header row)", p_empty)},
    {"table: header.csv\n", SIEVE_ERROR_PARSE, g_strdup_printf("%s: the table has a header but no rows", p_header)},
    {"table: unclosed.csv\n", SIEVE_ERROR_PARSE,
     g_strdup_printf("%s:2:%zu: unterminated quoted field: the quote opened here is not closed before the end of "
                     "the file, expected a closing '\"' (a '\"' inside quotes is written \"\")", p_unclosed,
                     strlen(a) + 2)},
  };
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    GError *error = NULL;
    g_autoptr(SieveEvaluator) e = evaluator_try("tabular", space, cases[k].yaml, dir, &error);
    g_assert_null(e);
    g_assert_nonnull(error);
    if (!g_str_has_prefix(error->message, cases[k].message) ||
        (k > 0 && strcmp(error->message, cases[k].message) != 0))
      g_error("case %u:\n  got      %s\n  expected %s", k, error->message, cases[k].message);
    g_assert_error(error, SIEVE_ERROR, cases[k].code);
    if (k == 0) /* the missing file is named */
      g_assert_nonnull(strstr(error->message, p_missing));
    g_error_free(error);
    g_free(cases[k].message);
  }
  /* The good table loads. */
  g_autoptr(SieveEvaluator) e = evaluator_new("tabular", space, "table: good.csv\n", dir);
  /* And the table option is required. */
  GError *error = NULL;
  g_autoptr(SieveEvaluator) none = evaluator_try("tabular", space, "key: arch_str\n", dir, &error);
  g_assert_null(none);
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
  g_test_message("%s", error->message);
  g_clear_error(&error);
  remove_tree(dir);
}

/* ---- function ----------------------------------------------------------- */

static double
evaluate_at(SieveEvaluator *e, const SieveSpace *space, const double *x, guint n, gint64 trial, double *regret)
{
  g_autoptr(SieveGenotype) g = sieve_genotype_new(space);
  for (guint i = 0; i < n; i++)
    sieve_genotype_set(g, i, x[i]);
  g_autoptr(SieveCandidate) cand = sieve_candidate_new(g_steal_pointer(&g), NAN);
  sieve_candidate_set_trial(cand, trial);
  GError *error = NULL;
  g_autoptr(SieveResult) r = sieve_evaluator_evaluate(e, cand, &error);
  g_assert_no_error(error);
  g_assert_cmpint(sieve_result_get_status(r), ==, SIEVE_STATUS_OK);
  if (regret)
    *regret = test_metric(r, "regret");
  return test_metric(r, "value");
}

static void
test_function_optima(void)
{
  g_autoptr(SieveSpace) bs = space_new("hpo", "file: search_spaces/branin.yaml\n");
  g_autoptr(SieveEvaluator) branin = evaluator_new("function", bs, "function: branin\n", NULL);
  g_assert_true(sieve_evaluator_is_concurrent(branin));
  const double minima[3][2] = {{-G_PI, 12.275}, {G_PI, 2.275}, {9.42478, 2.475}};
  for (guint k = 0; k < 3; k++) {
    double regret;
    double v = evaluate_at(branin, bs, minima[k], 2, 0, &regret);
    g_assert_cmpfloat_with_epsilon(v, 0.397887, 1e-6);
    g_assert_cmpfloat_with_epsilon(regret, 0, 1e-6);
  }
  /* Hand computation at the origin: (-6)^2 + 10 (1 - 1/(8 pi)) cos 0 + 10
   * = 56 - 5/(4 pi). */
  double v = evaluate_at(branin, bs, (double[]){0, 0}, 2, 0, NULL);
  g_assert_cmpfloat_with_epsilon(v, 56 - 5 / (4 * G_PI), 1e-12);
  /* And at (1, 2): u = 2 - 5.1/(4 pi^2) + 5/pi - 6; value 21.6276353920624
   * (worked out by hand to 6 digits, and in Python to the last). */
  v = evaluate_at(branin, bs, (double[]){1, 2}, 2, 0, NULL);
  g_assert_cmpfloat_with_epsilon(v, 21.6276353920624, 1e-9);

  g_autoptr(SieveSpace) hs = space_new("hpo", "file: search_spaces/hartmann6.yaml\n");
  g_autoptr(SieveEvaluator) hartmann = evaluator_new("function", hs, "function: hartmann6\ndimension: 6\n", NULL);
  double regret;
  v = evaluate_at(hartmann, hs, (double[]){0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573}, 6, 0, &regret);
  g_assert_cmpfloat_with_epsilon(v, -3.32237, 1e-5);
  g_assert_cmpfloat_with_epsilon(regret, 0, 1e-5);
  /* At the centre of the cube, computed independently in Python. */
  v = evaluate_at(hartmann, hs, (double[]){0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, 6, 0, &regret);
  g_assert_cmpfloat_with_epsilon(v, -0.5053149917022333, 1e-12);
  g_assert_cmpfloat_with_epsilon(regret, -0.5053149917022333 + 3.32236801141551, 1e-9);

  g_autoptr(SieveSpace) rs = space_new("hpo", "file: search_spaces/rosenbrock4.yaml\n");
  g_autoptr(SieveEvaluator) rosen = evaluator_new("function", rs, "function: rosenbrock\ndimension: 4\n", NULL);
  g_assert_cmpfloat(evaluate_at(rosen, rs, (double[]){1, 1, 1, 1}, 4, 0, NULL), ==, 0);
  /* By hand: at the origin each of the 3 terms is (0 - 1)^2 = 1; at
   * (1, 2, 1, 1): 100 (2 - 1)^2 + 100 (1 - 4)^2 + (2 - 1)^2 + 0 = 1001. */
  g_assert_cmpfloat(evaluate_at(rosen, rs, (double[]){0, 0, 0, 0}, 4, 0, NULL), ==, 3);
  g_assert_cmpfloat(evaluate_at(rosen, rs, (double[]){1, 2, 1, 1}, 4, 0, NULL), ==, 1001);
  /* By hand at (1, 2, 7, 7): 100 (2 - 1)^2 + 0 + 100 (7 - 4)^2 + (2 - 1)^2
   * + 100 (7 - 49)^2 + (7 - 1)^2 = 100 + 901 + 176436 = 177437 (all four
   * inputs read). */
  g_assert_cmpfloat(evaluate_at(rosen, rs, (double[]){1, 2, 7, 7}, 4, 0, NULL), ==, 177437);
}

static void
test_function_noise(void)
{
  g_autoptr(SieveSpace) bs = space_new("hpo", "file: search_spaces/branin.yaml\n");
  g_autoptr(SieveEvaluator) a = evaluator_new("function", bs, "function: branin\nnoise: 0.5\nseed: 3\n", NULL);
  g_autoptr(SieveEvaluator) b = evaluator_new("function", bs, "function: branin\nnoise: 0.5\nseed: 3\n", NULL);
  g_autoptr(SieveEvaluator) c = evaluator_new("function", bs, "function: branin\nnoise: 0.5\nseed: 4\n", NULL);
  const double x[2] = {G_PI, 2.275};
  double sum = 0, sum2 = 0;
  const guint n = 2000;
  for (guint t = 0; t < n; t++) {
    double regret;
    double va = evaluate_at(a, bs, x, 2, t, &regret);
    /* Same seed and trial, same noise, whichever instance. */
    g_assert_cmpfloat(va, ==, evaluate_at(b, bs, x, 2, t, NULL));
    g_assert_cmpfloat(va, !=, evaluate_at(c, bs, x, 2, t, NULL));
    g_assert_cmpfloat_with_epsilon(regret, 0, 1e-9); /* regret is noise-free */
    double e = va - 5 / (4 * G_PI);
    sum += e;
    sum2 += e * e;
  }
  /* Mean 0 (sd of the mean 0.011), sd 0.5. */
  g_assert_cmpfloat(fabs(sum / n), <, 0.05);
  g_assert_cmpfloat(fabs(sqrt(sum2 / n) - 0.5), <, 0.03);
  g_assert_cmpfloat(evaluate_at(a, bs, x, 2, 1, NULL), !=, evaluate_at(a, bs, x, 2, 2, NULL));
}

static void
test_function_delay(void)
{
  g_autoptr(SieveSpace) bs = space_new("hpo", "file: search_spaces/branin.yaml\n");
  g_autoptr(SieveEvaluator) e = evaluator_new("function", bs, "function: branin\ndelay: 0.2\n", NULL);
  gint64 start = g_get_monotonic_time();
  evaluate_at(e, bs, (double[]){0, 0}, 2, 0, NULL);
  g_assert_cmpint(g_get_monotonic_time() - start, >=, 200000);
}

static void
test_function_errors(void)
{
  g_autoptr(SieveSpace) bs = space_new("hpo", "file: search_spaces/branin.yaml\n");
  g_autoptr(SieveSpace) one = space_new("hpo", "parameters: {x1: {type: float, low: 0, high: 1}}\n");
  g_autoptr(SieveSpace) cat = space_new("hpo", "parameters: {x1: [a, b], x2: {type: int, low: 0, high: 3}}\n");
  g_autoptr(SieveSpace) cond = space_new("hpo", "parameters: {s: [on, off], x1: {type: int, low: 0, high: 3},"
                                                " x2: {type: float, low: 0, high: 1, condition: {s: [on]}}}\n");
  g_autoptr(SieveSpace) rs = space_new("hpo", "file: search_spaces/rosenbrock4.yaml\n");
  g_autoptr(SieveSpace) three = space_new("hpo", "parameters: {x1: {type: float, low: 0, high: 1}, "
                                                 "x2: {type: float, low: 0, high: 1}, x3: {type: int, low: 0, high: 3}}\n");
  struct {
    const SieveSpace *space;
    const char *yaml;
    const char *message;
  } cases[] = {
    {bs, "function: branin\ndimension: 3\n", "test.yaml:2:12: function 'branin' is 2-dimensional, got dimension 3"},
    {bs, "function: hartmann6\n",
     "test.yaml:1:11: function 'hartmann6' needs decisions x1..x6, each an int or float, from space 'hpo'; 'x3' "
     "does not fit: it has no such decision"},
    {one, "function: branin\n",
     "test.yaml:1:11: function 'branin' needs decisions x1..x2, each an int or float, from space 'hpo'; 'x2' "
     "does not fit: it has no such decision"},
    {cat, "function: rosenbrock\n",
     "test.yaml:1:11: function 'rosenbrock' needs decisions x1..x2 (without dimension, 2), "
     "each an int or float, from space 'hpo'; 'x1' does not fit: it is categorical"},
    {cond, "function: rosenbrock\ndimension: 2\n",
     "test.yaml:1:11: function 'rosenbrock' needs decisions x1..x2, each an int or float, from space 'hpo'; "
     "'x2' does not fit: it is conditional (the function needs every input)"},
    /* Bug hunt 3: a decision the function does not read was ignored. */
    {rs, "function: rosenbrock\ndimension: 2\n",
     "test.yaml:2:12: function 'rosenbrock' reads x1..x2 but space 'hpo' has 4 decisions: 'x3' would be searched "
     "for nothing; set dimension: 4"},
    /* Without dimension it is 2-d (a default from the space would change a
     * stored study's function on resume): the same refusal, at the function. */
    {rs, "function: rosenbrock\n",
     "test.yaml:1:11: function 'rosenbrock' reads x1..x2 (dimension defaults to 2) but space 'hpo' has 4 decisions: "
     "'x3' would be searched for nothing; set dimension: 4"},
    {three, "function: branin\n",
     "test.yaml:1:11: function 'branin' is 2-dimensional (x1..x2) but space 'hpo' has 3 decisions: 'x3' would be "
     "searched for nothing; remove it from the space"},
    {bs, "function: branni\n", "test.yaml:1:11: option 'function' expects one of branin, hartmann6, rosenbrock; "
                               "got 'branni' (did you mean 'branin'?)"},
    {bs, "function: branin\nnoise: -1\n", "test.yaml:2:8: option 'noise' expects a finite float >= 0, got -1"},
    {bs, "function: branin\nnoise: .inf\n", "test.yaml:2:8: option 'noise' expects a finite float >= 0, got .inf"},
    /* An infinite delay was cast to gulong microseconds: no sleep at all. */
    {bs, "function: branin\ndelay: .inf\n", "test.yaml:2:8: option 'delay' expects a float in [0, 86400], got .inf"},
    {bs, "function: branin\ndelay: 1e300\n", "test.yaml:2:8: option 'delay' expects a float in [0, 86400], got 1e300"},
    {bs, "function: branin\nfidelity_bias: .inf\n",
     "test.yaml:2:16: option 'fidelity_bias' expects a finite float >= 0, got .inf"},
    {bs, "function: rosenbrock\ndimension: 1\n", "test.yaml:2:12: option 'dimension' expects an integer in [2, 1000], got 1"},
  };
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    GError *error = NULL;
    g_autoptr(SieveEvaluator) e = evaluator_try("function", cases[k].space, cases[k].yaml, NULL, &error);
    g_assert_null(e);
    g_assert_nonnull(error);
    if (strcmp(error->message, cases[k].message) != 0)
      g_error("case %u:\n  got      %s\n  expected %s", k, error->message, cases[k].message);
    g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
    g_error_free(error);
  }
  /* An int decision is a valid input. */
  g_autoptr(SieveSpace) ints = space_new("hpo", "parameters: {x1: {type: int, low: -2, high: 2}, "
                                                "x2: {type: int, low: -2, high: 2}}\n");
  g_autoptr(SieveEvaluator) e = evaluator_new("function", ints, "function: rosenbrock\n", NULL);
  g_assert_cmpfloat(evaluate_at(e, ints, (double[]){1, 1}, 2, 0, NULL), ==, 0);
}

/* Fashion-MNIST (1x28x28, 10 classes) against networks of another shape is
 * refused when the evaluator is created, at the dataset's line, naming the
 * space options to set; it was a failed first trial of a stored study. */
static void
test_train_shapes(void)
{
  static const struct {
    const char *space, *message;
  } cases[] = {
      {"{C: 4, N: 1}", "test.yaml:1:11: dataset 'fashion-mnist' is 1x28x28 per example with 10 classes, but space "
                       "'nb201' builds networks that take 3x32x32 and give 10 outputs: set in_channels: 1, size: 28 "
                       "in the space (on a command line: --set space.in_channels=1 --set space.size=28)"},
      {"{C: 4, N: 1, in_channels: 1, size: 28, classes: 5}",
       "test.yaml:1:11: dataset 'fashion-mnist' is 1x28x28 per example with 10 classes, but space 'nb201' builds "
       "networks that take 1x28x28 and give 5 outputs: set classes: 10 in the space (on a command line: --set "
       "space.classes=10)"},
  };
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    g_autoptr(SieveSpace) space = space_new("nb201", cases[k].space);
    GError *error = NULL;
    g_autoptr(SieveEvaluator) e = test_evaluator_try(
        registry, "train", space, "{dataset: fashion-mnist, train_limit: 64, validation: 32, test: false}", NULL,
        &error);
    g_assert_null(e);
    g_assert_nonnull(error);
    g_assert_cmpstr(error->message, ==, cases[k].message);
    g_error_free(error);
  }
  g_autoptr(SieveSpace) fits = space_new("nb201", "{C: 4, N: 1, in_channels: 1, size: 28}");
  g_autoptr(SieveEvaluator) e = test_evaluator_new(
      registry, "train", fits, "{dataset: fashion-mnist, train_limit: 64, validation: 32, test: false, batch_size: 32}",
      NULL);
  g_assert_nonnull(e);
}

/* `sieve plugins --describe` ends with an example section: each must work
 * as written (compose's and hpo's were {plugin: NAME}, which they refuse). */
static void
test_examples(void)
{
  guint n = 0;
  const SieveComponentKind kinds[] = {SIEVE_KIND_SPACE, SIEVE_KIND_OPTIMIZER, SIEVE_KIND_EVALUATOR};
  for (guint k = 0; k < G_N_ELEMENTS(kinds); k++) {
    g_autoptr(GPtrArray) components = sieve_registry_list(registry, kinds[k]);
    for (guint i = 0; i < components->len; i++, n++) {
      g_test_message("%s", sieve_component_get_name(components->pdata[i]));
      test_component_example(registry, components->pdata[i]);
    }
  }
  g_assert_cmpuint(n, >=, 21); /* 6 spaces and compose, 9 optimizers, 6 evaluators */
}

/* Categorical choices written unquoted as numbers or true/false keep their
 * type in the JSON a command evaluator reads, as Optuna's
 * suggest_categorical keeps them (a new-user review: 2.5 arrived as
 * "2.5"); quoted ones and names stay strings, and a composite space keeps
 * the types of its parts. */
static void
test_hpo_typed_choices(void)
{
  static const char *const yaml =
      "parameters:\n  c: {type: categorical, choices: [1, 2.5, true, '4', relu, .5, 0x10, -0, 1e-3, .inf]}\n";
  static const char *const want[] = {"{\"c\": 1}",   "{\"c\": 2.5}",   "{\"c\": true}",
                                     "{\"c\": \"4\"}", "{\"c\": \"relu\"}", "{\"c\": 0.5}",
                                     "{\"c\": 16}",  "{\"c\": 0}",     "{\"c\": 0.001}",
                                     "{\"c\": \".inf\"}"};
  g_autoptr(SieveSpace) space = space_new("hpo", yaml);
  for (guint k = 0; k < G_N_ELEMENTS(want); k++) {
    g_autoptr(SieveGenotype) g = sieve_genotype_new(space);
    sieve_genotype_set(g, 0, k);
    g_autofree char *json = sieve_space_to_json(space, g);
    g_assert_cmpstr(json, ==, want[k]);
  }
  /* Only a JSON number or true/false is taken. */
  g_assert_false(sieve_space_set_choice_json(space, 0, 4, "0x10"));
  g_assert_false(sieve_space_set_choice_json(space, 0, 4, "nan"));
  g_assert_false(sieve_space_set_choice_json(space, 0, 4, "1e999"));
  g_assert_false(sieve_space_set_choice_json(space, 0, 4, "01"));
  g_assert_true(sieve_space_set_choice_json(space, 0, 4, "-1.5E+2"));
  g_assert_cmpstr(sieve_space_choice_json(space, 0, 4), ==, "-1.5E+2");
  /* A composite space keeps its parts' types. */
  g_autofree char *compose = g_strdup_printf("parts:\n  - {plugin: hpo, parameters: {c: {type: categorical, "
                                             "choices: [8, x]}}}\n  - {plugin: hpo, parameters: {d: {type: float, "
                                             "low: 0, high: 1}}}\n");
  g_autoptr(SieveSpace) both = space_new("compose", compose);
  g_autoptr(SieveGenotype) g = sieve_genotype_new(both);
  sieve_genotype_set(g, 0, 0);
  sieve_genotype_set(g, 1, 0.25);
  g_autofree char *json = sieve_space_to_json(both, g);
  g_assert_cmpstr(json, ==, "{\"c\": 8, \"d\": 0.25}");
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  source_root = g_getenv("SIEVE_SOURCE_ROOT");
  if (source_root == NULL)
    source_root = SIEVE_SOURCE_ROOT;
  registry = test_registry_load();

  g_test_add_func("/plugins/examples", test_examples);
  g_test_add_func("/plugins/train/shapes", test_train_shapes);
  g_test_add_func("/plugins/nb201/decisions", test_nb201_decisions);
  g_test_add_func("/plugins/nb201/round-trip", test_nb201_round_trip);
  g_test_add_func("/plugins/nb201/bad-strings", test_nb201_bad_strings);
  g_test_add_func("/plugins/hpo/files", test_hpo_files);
  g_test_add_func("/plugins/hpo/mlp", test_hpo_mlp);
  g_test_add_func("/plugins/hpo/inline", test_hpo_inline);
  g_test_add_func("/plugins/hpo/typed-choices", test_hpo_typed_choices);
  g_test_add_func("/plugins/hpo/errors", test_hpo_errors);
  g_test_add_func("/plugins/random/determinism", test_random_determinism);
  g_test_add_func("/plugins/random/save-load", test_random_save_load);
  g_test_add_func("/plugins/random/unique-exhaustion", test_random_unique_exhaustion);
  g_test_add_func("/plugins/random/unique-state", test_random_unique_state);
  g_test_add_func("/plugins/tabular/nb201", test_tabular_nb201);
  g_test_add_func("/plugins/tabular/missing-genotype", test_tabular_missing_genotype);
  g_test_add_func("/plugins/tabular/quotes", test_tabular_quotes);
  g_test_add_func("/plugins/tabular/csv-rules", test_tabular_csv_rules);
  g_test_add_func("/plugins/tabular/bad-tables", test_tabular_bad_tables);
  g_test_add_func("/plugins/function/optima", test_function_optima);
  g_test_add_func("/plugins/function/noise", test_function_noise);
  g_test_add_func("/plugins/function/delay", test_function_delay);
  g_test_add_func("/plugins/function/errors", test_function_errors);
  int status = g_test_run();
  sieve_registry_free(registry);
  return status;
}
