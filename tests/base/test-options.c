/* Tests of option tables: validation of every type, messages with their
 * locations, defaults, paths, and the --describe text. */
#include <math.h>
#include <string.h>

#include <sieve/options.h>

static const char *const kinds[] = {"aging", "plain", "tournament", NULL};

static const SieveOptionSpec spec[] = {
    SIEVE_OPTION_INT("population", "50", 2, 1e6, "individuals kept alive"),
    SIEVE_OPTION_CHOICE("kind", "aging", kinds, "which individual dies"),
    SIEVE_OPTION_FLOAT("mutation_rate", "1.0", 0, 1, "probability of mutating a decision"),
    SIEVE_OPTION_BOOL("verbose", "false", "print every generation"),
    SIEVE_OPTION_STRING("name", "evo", "a label"),
    SIEVE_OPTION_PATH("table", NULL, "benchmark table"),
    SIEVE_OPTION_PATH("cache", "~/cache.db", "result cache"),
    SIEVE_OPTION_PATH("log", "logs/run.txt", "log file"),
    SIEVE_OPTION_STRING_LIST("tags", "[default, evo]", "labels"),
    SIEVE_OPTION_NODE("schedule", "learning-rate schedule"),
    {"temperature", SIEVE_OPTION_TYPE_FLOAT, "1e-3", 0, 0, NULL, "selection temperature",
     SIEVE_OPTION_HAS_MIN, {NULL}},
    {"note", SIEVE_OPTION_TYPE_STRING, NULL, 0, 0, NULL, "optional note", 0, {NULL}},
    {"offset", SIEVE_OPTION_TYPE_INT, "-0x10", 0, 0, NULL, "unbounded", 0, {NULL}},
    SIEVE_OPTION_END,
};

static const char *const reserved[] = {"plugin", NULL};

static char *
fixture(const char *name)
{
  const char *root = g_getenv("SIEVE_SOURCE_ROOT");
  if (root)
    return g_build_filename(root, "tests", "base", "fixtures", name, NULL);
  return g_test_build_filename(G_TEST_DIST, "fixtures", name, NULL);
}

/* Validate the options of "optimizer:" in text (origin "exp.yaml"). */
static SieveOptions *
validate(const SieveOptionSpec *table, const char *text, GError **error)
{
  g_autoptr(GError) parse_error = NULL;
  g_autoptr(SieveNode) root = sieve_node_parse_string(text, -1, "exp.yaml", &parse_error);
  g_assert_no_error(parse_error);
  return sieve_options_new(table, sieve_node_lookup(root, "optimizer"), reserved, "/base/dir",
                           "optimizer 'evolution'", error);
}

/* The message validation of text gives; checks the code too. */
static char *
validation_error(const SieveOptionSpec *table, const char *text)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(SieveOptions) options = validate(table, text, &error);
  g_assert_null(options);
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
  return g_strdup(error->message);
}

#define ASSERT_ERROR(table, text, expected)                                                        \
  do {                                                                                             \
    g_autofree char *message_ = validation_error((table), (text));                                \
    g_assert_cmpstr(message_, ==, (expected));                                                     \
  } while (0)

static void
test_valid(void)
{
  g_autofree char *path = fixture("options-evolution.yaml");
  g_autoptr(GError) error = NULL;
  g_autoptr(SieveNode) root = sieve_node_parse_file(path, &error);
  g_assert_no_error(error);
  SieveNode *section = sieve_node_lookup(root, "optimizer");
  g_autoptr(SieveOptions) options =
      sieve_options_new(spec, section, reserved, "/base/dir", "optimizer 'evolution'", &error);
  g_assert_no_error(error);
  g_assert_nonnull(options);
  g_assert_true(sieve_options_spec(options) == spec);

  /* Written values. */
  g_assert_cmpint(sieve_options_get_int(options, "population"), ==, 20);
  g_assert_cmpstr(sieve_options_get_string(options, "kind"), ==, "plain");
  g_assert_cmpfloat(sieve_options_get_double(options, "mutation_rate"), ==, 0.25);
  g_assert_true(sieve_options_get_bool(options, "verbose"));
  g_assert_cmpstr(sieve_options_get_string(options, "table"), ==, "/base/dir/data/nb201.csv");
  const char *const *tags = sieve_options_get_strv(options, "tags");
  g_assert_cmpuint(g_strv_length((char **)tags), ==, 2);
  g_assert_cmpstr(tags[0], ==, "fast");
  g_assert_cmpstr(tags[1], ==, "small");
  const SieveNode *schedule = sieve_options_get_node(options, "schedule");
  g_assert_cmpint(sieve_node_kind(schedule), ==, SIEVE_NODE_MAP);
  g_assert_cmpstr(sieve_node_text(sieve_node_lookup(schedule, "warmup")), ==, "3");
  g_assert_true(sieve_options_is_set(options, "population"));
  g_assert_true(sieve_options_is_set(options, "schedule"));

  /* Defaults. */
  g_assert_false(sieve_options_is_set(options, "name"));
  g_assert_cmpstr(sieve_options_get_string(options, "name"), ==, "evo");
  g_autofree char *cache = g_build_filename(g_get_home_dir(), "cache.db", NULL);
  g_assert_cmpstr(sieve_options_get_string(options, "cache"), ==, cache);
  g_assert_cmpstr(sieve_options_get_string(options, "log"), ==, "/base/dir/logs/run.txt");
  g_assert_cmpfloat(sieve_options_get_double(options, "temperature"), ==, 1e-3);
  g_assert_cmpint(sieve_options_get_int(options, "offset"), ==, -16);
  g_assert_null(sieve_options_get_string(options, "note"));
  g_assert_false(sieve_options_is_set(options, "note"));

  /* Where: the value as written, else the section. */
  const SieveNode *where = sieve_options_node(options, "population");
  g_assert_cmpuint(sieve_node_line(where), ==, 3);
  g_assert_cmpuint(sieve_node_column(where), ==, 15);
  g_assert_true(sieve_options_node(options, "name") == section);

  g_autoptr(GError) custom = NULL;
  sieve_options_set_error(options, "population", &custom, "population %d does not divide %d", 20, 7);
  g_autofree char *expected = g_strdup_printf("%s:3:15: population 20 does not divide 7", path);
  g_assert_error(custom, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
  g_assert_cmpstr(custom->message, ==, expected);
  g_clear_error(&custom);
  sieve_options_set_error(options, "name", &custom, "no");
  g_autofree char *expected_section = g_strdup_printf("%s:2:3: no", path);
  g_assert_cmpstr(custom->message, ==, expected_section);

  /* The options own what they hand out: the tree can go first. */
  g_clear_pointer(&root, sieve_node_unref);
  g_assert_cmpuint(sieve_node_size(sieve_options_get_node(options, "schedule")), ==, 2);
  g_assert_cmpuint(sieve_node_line(sieve_options_node(options, "name")), ==, 2);
}

static void
test_defaults(void)
{
  static const SieveOptionSpec optional[] = {
      SIEVE_OPTION_INT("population", "50", 2, 1e6, "individuals"),
      SIEVE_OPTION_STRING("empty", "", "empty string default"),
      SIEVE_OPTION_STRING_LIST("none", NULL, "no default"),
      SIEVE_OPTION_NODE("tree", "no default"),
      SIEVE_OPTION_BOOL("flag", "TRUE", "core-schema capital"),
      SIEVE_OPTION_FLOAT("x", ".inf", -INFINITY, INFINITY, "no effective bounds"),
      SIEVE_OPTION_END,
  };
  g_autoptr(GError) error = NULL;
  g_autoptr(SieveOptions) options = sieve_options_new(optional, NULL, NULL, NULL, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpint(sieve_options_get_int(options, "population"), ==, 50);
  g_assert_cmpstr(sieve_options_get_string(options, "empty"), ==, "");
  g_assert_null(sieve_options_get_strv(options, "none"));
  g_assert_null(sieve_options_get_node(options, "tree"));
  g_assert_null(sieve_options_node(options, "population"));
  g_assert_true(sieve_options_get_bool(options, "flag"));
  g_assert_true(isinf(sieve_options_get_double(options, "x")));

  /* No spec at all and nothing written. */
  g_autoptr(SieveOptions) nothing = sieve_options_new(NULL, NULL, NULL, NULL, NULL, &error);
  g_assert_no_error(error);
  g_assert_nonnull(nothing);

  /* A default that does not validate is the component's bug. */
  static const SieveOptionSpec broken[] = {
      SIEVE_OPTION_INT("population", "ten", 2, 10, "bad default"),
      SIEVE_OPTION_END,
  };
  g_autoptr(SieveOptions) bad = sieve_options_new(broken, NULL, NULL, NULL, NULL, &error);
  g_assert_null(bad);
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED);
  g_assert_cmpstr(error->message, ==,
                  "the default of option 'population': option 'population' expects an integer, got 'ten'");
}

static void
test_unknown(void)
{
  ASSERT_ERROR(spec, "optimizer:\n  plugin: evolution\n  table: t\n  populaton: 10\n",
               "exp.yaml:4:3: unknown option 'populaton' for optimizer 'evolution' "
               "(did you mean 'population'?)");
  ASSERT_ERROR(spec, "optimizer:\n  table: t\n  Verbose: true\n",
               "exp.yaml:3:3: unknown option 'Verbose' for optimizer 'evolution' "
               "(did you mean 'verbose'?)");
  ASSERT_ERROR(spec, "optimizer: {table: t, zzz: 1}\n",
               "exp.yaml:1:23: unknown option 'zzz' for optimizer 'evolution' (valid options: "
               "population, kind, mutation_rate, verbose, name, table, cache, log, tags, schedule, "
               "temperature, note, offset, plugin)");
  static const SieveOptionSpec empty[] = {SIEVE_OPTION_END};
  ASSERT_ERROR(empty, "optimizer:\n  plugin: random\n  seed: 1\n",
               "exp.yaml:3:3: unknown option 'seed' for optimizer 'evolution' (it takes no options)");
  /* Reserved keys belong to the caller. */
  g_autoptr(GError) error = NULL;
  g_autoptr(SieveOptions) ok = validate(empty, "optimizer:\n  plugin: random\n", &error);
  g_assert_no_error(error);
  g_assert_nonnull(ok);

  /* No context: the message still reads. */
  g_autoptr(SieveNode) root = sieve_node_parse_string("x: 1\n", -1, "c.yaml", NULL);
  g_autoptr(SieveOptions) none = sieve_options_new(empty, root, NULL, NULL, NULL, &error);
  g_assert_null(none);
  g_assert_cmpstr(error->message, ==, "c.yaml:1:1: unknown option 'x' (it takes no options)");
}

static void
test_wrong_type(void)
{
  struct {
    const char *text, *message;
  } cases[] = {
      {"population: ten", "option 'population' expects an integer, got 'ten'"},
      {"population: 1.5", "option 'population' expects an integer, got '1.5' (a float)"},
      {"population: 1e3", "option 'population' expects an integer, got '1e3' (a float; write 1000)"},
      {"population: \"10\"", "option 'population' expects an integer, got '10' (a quoted string)"},
      {"population: {a: 1}", "option 'population' expects an integer, got a map"},
      {"population:", "option 'population' expects an integer, got nothing"},
      {"mutation_rate: high", "option 'mutation_rate' expects a number, got 'high'"},
      {"mutation_rate: [1]", "option 'mutation_rate' expects a number, got a list"},
      {"verbose: yes", "option 'verbose' expects true or false, got 'yes'"},
      {"verbose: 1", "option 'verbose' expects true or false, got '1'"},
      {"name: {first: a}", "option 'name' expects a string, got a map"},
      {"name: ~", "option 'name' expects a string, got '~' (null)"},
      {"kind: [aging]", "option 'kind' expects one of: aging, plain, tournament, got a list"},
      {"table: [a, b]", "option 'table' expects a path, got a list"},
      {"tags: {a: 1}", "option 'tags' expects a string or list of strings, got a map"},
  };
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    /* Line 3 holds the case; line 2 gives the required table unless the case does. */
    const char *filler = g_str_has_prefix(cases[k].text, "table") ? "plugin: x" : "table: t";
    g_autofree char *text = g_strdup_printf("optimizer:\n  %s\n  %s\n", filler, cases[k].text);
    /* The value sits after "key: ", or at the end of the line when empty. */
    const char *colon = strchr(cases[k].text, ':');
    guint column = 3 + (guint)(colon - cases[k].text) + (colon[1] ? 2 : 1);
    g_autofree char *expected = g_strdup_printf("exp.yaml:3:%u: %s", column, cases[k].message);
    ASSERT_ERROR(spec, text, expected);
  }
  /* A bad item of a list points at the item. */
  ASSERT_ERROR(spec, "optimizer:\n  table: t\n  tags: [a, [b]]\n",
               "exp.yaml:3:13: option 'tags' expects a list of strings, got a list as item 2");
  ASSERT_ERROR(spec, "optimizer: [population]\n",
               "exp.yaml:1:12: expected a map of options for optimizer 'evolution', got a list");
}

static void
test_range(void)
{
  ASSERT_ERROR(spec, "optimizer:\n  table: t\n  population: 1\n",
               "exp.yaml:3:15: option 'population' expects an integer in [2, 1000000], got 1");
  ASSERT_ERROR(spec, "optimizer:\n  table: t\n  population: 0x7fffffff\n",
               "exp.yaml:3:15: option 'population' expects an integer in [2, 1000000], got 0x7fffffff");
  ASSERT_ERROR(spec, "optimizer:\n  table: t\n  mutation_rate: 1.5\n",
               "exp.yaml:3:18: option 'mutation_rate' expects a float in [0, 1], got 1.5");
  ASSERT_ERROR(spec, "optimizer:\n  table: t\n  mutation_rate: .nan\n",
               "exp.yaml:3:18: option 'mutation_rate' expects a float in [0, 1], got .nan");
  ASSERT_ERROR(spec, "optimizer:\n  table: t\n  temperature: -1e-9\n",
               "exp.yaml:3:16: option 'temperature' expects a float >= 0, got -1e-9");

  /* Bounds are inclusive, ints are floats, unbounded means unbounded. */
  g_autoptr(GError) error = NULL;
  g_autoptr(SieveOptions) options = validate(
      spec,
      "optimizer:\n  table: t\n  population: 1000000\n  mutation_rate: 0\n  temperature: .inf\n"
      "  offset: -9223372036854775808\n",
      &error);
  g_assert_no_error(error);
  g_assert_cmpint(sieve_options_get_int(options, "population"), ==, 1000000);
  g_assert_cmpfloat(sieve_options_get_double(options, "mutation_rate"), ==, 0.0);
  g_assert_true(isinf(sieve_options_get_double(options, "temperature")));
  g_assert_cmpint(sieve_options_get_int(options, "offset"), ==, G_MININT64);
}

/* NaN is refused by every float option, bounded or not; a bound of
 * G_MAXDOUBLE keeps infinity out and says so. */
static void
test_nan_and_finite(void)
{
  static const SieveOptionSpec floats[] = {
      {"bound", SIEVE_OPTION_TYPE_FLOAT, NULL, 0, 0, NULL, "unbounded, optional", 0, {NULL}},
      SIEVE_OPTION_FLOAT("seconds", "0", 0, G_MAXDOUBLE, "finite"),
      SIEVE_OPTION_END,
  };
  ASSERT_ERROR(floats, "optimizer: {bound: .nan}\n", "exp.yaml:1:20: option 'bound' expects a float, got .nan");
  ASSERT_ERROR(floats, "optimizer: {seconds: .inf}\n",
               "exp.yaml:1:22: option 'seconds' expects a finite float >= 0, got .inf");
  g_autoptr(GError) error = NULL;
  g_autoptr(SieveOptions) options = validate(floats, "optimizer: {bound: -.inf, seconds: 1e308}\n", &error);
  g_assert_no_error(error);
  g_assert_true(isinf(sieve_options_get_double(options, "bound")));
  g_assert_cmpfloat(sieve_options_get_double(options, "seconds"), ==, 1e308);
  g_autofree char *text = sieve_option_spec_describe(floats);
  g_assert_nonnull(strstr(text, "seconds (float, default 0, range >= 0, finite)"));
}

static void
test_choice(void)
{
  ASSERT_ERROR(spec, "optimizer:\n  table: t\n  kind: agin\n",
               "exp.yaml:3:9: option 'kind' expects one of aging, plain, tournament; got 'agin' "
               "(did you mean 'aging'?)");
  ASSERT_ERROR(spec, "optimizer:\n  table: t\n  kind: random\n",
               "exp.yaml:3:9: option 'kind' expects one of aging, plain, tournament; got 'random'");
  g_autoptr(GError) error = NULL;
  g_autoptr(SieveOptions) options = validate(spec, "optimizer:\n  table: t\n  kind: 'tournament'\n", &error);
  g_assert_no_error(error);
  g_assert_cmpstr(sieve_options_get_string(options, "kind"), ==, "tournament");
}

static void
test_required(void)
{
  ASSERT_ERROR(spec, "# a comment\noptimizer:\n  plugin: evolution\n  population: 10\n",
               "exp.yaml:3:3: missing required option 'table' for optimizer 'evolution'");
  g_autoptr(GError) error = NULL;
  g_autoptr(SieveOptions) options = sieve_options_new(spec, NULL, NULL, NULL, "evaluator 'tabular'", &error);
  g_assert_null(options);
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
  g_assert_cmpstr(error->message, ==, "missing required option 'table' for evaluator 'tabular'");
}

static void
test_path(void)
{
  struct {
    const char *text, *base, *expected;
  } cases[] = {
      {"/abs/../kept.csv", "/base", "/abs/../kept.csv"},
      {"data/t.csv", "/base/dir", "/base/dir/data/t.csv"},
      {"../t.csv", "/base/dir", "/base/t.csv"},
      {"./t.csv", "/base/dir/", "/base/dir/t.csv"},
  };
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    g_autofree char *text = g_strdup_printf("optimizer:\n  table: '%s'\n", cases[k].text);
    g_autoptr(SieveNode) root = sieve_node_parse_string(text, -1, "exp.yaml", NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(SieveOptions) options =
        sieve_options_new(spec, sieve_node_lookup(root, "optimizer"), NULL, cases[k].base, NULL, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(sieve_options_get_string(options, "table"), ==, cases[k].expected);
  }

  /* ~/ is the home folder; no base_dir is the current folder. */
  g_autoptr(SieveNode) root = sieve_node_parse_string("table: ~/t.csv\nlog: rel/x.txt\n", -1, "e", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(SieveOptions) options = sieve_options_new(spec, root, NULL, NULL, NULL, &error);
  g_assert_no_error(error);
  g_autofree char *home = g_build_filename(g_get_home_dir(), "t.csv", NULL);
  g_assert_cmpstr(sieve_options_get_string(options, "table"), ==, home);
  g_autofree char *cwd = g_get_current_dir();
  g_autofree char *rel = g_build_filename(cwd, "rel", "x.txt", NULL);
  g_assert_cmpstr(sieve_options_get_string(options, "log"), ==, rel);
  g_assert_true(g_path_is_absolute(sieve_options_get_string(options, "cache")));
}

static void
test_string_list(void)
{
  struct {
    const char *text;
    const char *joined;
  } cases[] = {
      {"tags: one", "one"},
      {"tags: [a, 'b', 3]", "a|b|3"},
      {"tags:\n    - x\n    - y", "x|y"},
      {"tags: []", ""},
  };
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    g_autofree char *text = g_strdup_printf("optimizer:\n  table: t\n  %s\n", cases[k].text);
    g_autoptr(GError) error = NULL;
    g_autoptr(SieveOptions) options = validate(spec, text, &error);
    g_assert_no_error(error);
    const char *const *strv = sieve_options_get_strv(options, "tags");
    g_assert_nonnull(strv);
    g_autofree char *joined = g_strjoinv("|", (char **)strv);
    g_assert_cmpstr(joined, ==, cases[k].joined);
  }
  /* The default is YAML too. */
  g_autoptr(GError) error = NULL;
  g_autoptr(SieveOptions) options = validate(spec, "optimizer:\n  table: t\n", &error);
  g_assert_no_error(error);
  g_autofree char *joined = g_strjoinv("|", (char **)sieve_options_get_strv(options, "tags"));
  g_assert_cmpstr(joined, ==, "default|evo");
}

static void
test_node(void)
{
  const char *values[] = {"schedule: 3", "schedule: [1, {a: b}]", "schedule:", "schedule: {x: {y: z}}"};
  SieveNodeKind kinds_expected[] = {SIEVE_NODE_SCALAR, SIEVE_NODE_LIST, SIEVE_NODE_SCALAR, SIEVE_NODE_MAP};
  for (guint k = 0; k < G_N_ELEMENTS(values); k++) {
    g_autofree char *text = g_strdup_printf("optimizer:\n  table: t\n  %s\n", values[k]);
    g_autoptr(GError) error = NULL;
    g_autoptr(SieveOptions) options = validate(spec, text, &error);
    g_assert_no_error(error);
    const SieveNode *node = sieve_options_get_node(options, "schedule");
    g_assert_nonnull(node);
    g_assert_cmpint(sieve_node_kind(node), ==, kinds_expected[k]);
    g_assert_cmpuint(sieve_node_line(node), ==, 3);
    g_assert_true(node == sieve_options_node(options, "schedule"));
  }
}

static void
test_misuse(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(SieveOptions) options = validate(spec, "optimizer:\n  table: t\n", &error);
  g_assert_no_error(error);

  g_test_expect_message("sieve", G_LOG_LEVEL_CRITICAL, "option 'populaton' is not declared");
  g_assert_cmpint(sieve_options_get_int(options, "populaton"), ==, 0);
  g_test_assert_expected_messages();

  g_test_expect_message("sieve", G_LOG_LEVEL_CRITICAL, "option 'population' is declared as integer: wrong accessor");
  g_assert_null(sieve_options_get_string(options, "population"));
  g_test_assert_expected_messages();

  g_test_expect_message("sieve", G_LOG_LEVEL_CRITICAL, "option 'kind' is declared as choice: wrong accessor");
  g_assert_cmpfloat(sieve_options_get_double(options, "kind"), ==, 0.0);
  g_test_assert_expected_messages();

  g_test_expect_message("sieve", G_LOG_LEVEL_CRITICAL, "option 'verbose' is declared as bool: wrong accessor");
  g_assert_null(sieve_options_get_strv(options, "verbose"));
  g_test_assert_expected_messages();
}

static void
test_describe(void)
{
  g_autofree char *text = sieve_option_spec_describe(spec);
  g_assert_cmpstr(text, ==,
                  "  population (integer, default 50, range [2, 1000000])\n"
                  "      individuals kept alive\n"
                  "  kind (choice, default aging, one of: aging, plain, tournament)\n"
                  "      which individual dies\n"
                  "  mutation_rate (float, default 1.0, range [0, 1])\n"
                  "      probability of mutating a decision\n"
                  "  verbose (bool, default false)\n"
                  "      print every generation\n"
                  "  name (string, default evo)\n"
                  "      a label\n"
                  "  table (path, required)\n"
                  "      benchmark table\n"
                  "  cache (path, default ~/cache.db)\n"
                  "      result cache\n"
                  "  log (path, default logs/run.txt)\n"
                  "      log file\n"
                  "  tags (string list, default [default, evo])\n"
                  "      labels\n"
                  "  schedule (any value)\n"
                  "      learning-rate schedule\n"
                  "  temperature (float, default 1e-3, range >= 0)\n"
                  "      selection temperature\n"
                  "  note (string)\n"
                  "      optional note\n"
                  "  offset (integer, default -0x10)\n"
                  "      unbounded\n");
  static const SieveOptionSpec empty[] = {SIEVE_OPTION_END};
  g_autofree char *none = sieve_option_spec_describe(empty);
  g_assert_cmpstr(none, ==, "  (no options)\n");

  const char *expected[] = {"integer in [2, 1000000]", "one of: aging, plain, tournament",
                            "float in [0, 1]", "true or false", "string", "path",
                            "path", "path", "string or list of strings", "any value",
                            "float >= 0", "string", "integer"};
  for (guint k = 0; k < G_N_ELEMENTS(expected); k++) {
    g_autofree char *e = sieve_option_spec_expected(&spec[k]);
    g_assert_cmpstr(e, ==, expected[k]);
  }
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/options/valid", test_valid);
  g_test_add_func("/options/defaults", test_defaults);
  g_test_add_func("/options/unknown", test_unknown);
  g_test_add_func("/options/wrong-type", test_wrong_type);
  g_test_add_func("/options/range", test_range);
  g_test_add_func("/options/nan-and-finite", test_nan_and_finite);
  g_test_add_func("/options/choice", test_choice);
  g_test_add_func("/options/required", test_required);
  g_test_add_func("/options/path", test_path);
  g_test_add_func("/options/string-list", test_string_list);
  g_test_add_func("/options/node", test_node);
  g_test_add_func("/options/misuse", test_misuse);
  g_test_add_func("/options/describe", test_describe);
  return g_test_run();
}
