/* Tests of configuration trees: parsing with locations, typed reads,
 * refused constructs, --set overrides, canonical YAML, suggestions. */
#include <math.h>
#include <string.h>

#include <sieve/node.h>

static char *
fixture(const char *name)
{
  const char *root = g_getenv("SIEVE_SOURCE_ROOT");
  if (root)
    return g_build_filename(root, "tests", "base", "fixtures", name, NULL);
  return g_test_build_filename(G_TEST_DIST, "fixtures", name, NULL);
}

static SieveNode *
parse_fixture(const char *name)
{
  g_autofree char *path = fixture(name);
  g_autoptr(GError) error = NULL;
  SieveNode *root = sieve_node_parse_file(path, &error);
  g_assert_no_error(error);
  g_assert_nonnull(root);
  return root;
}

/* The error message of parsing fixture name, with the folder taken off. */
static char *
fixture_error(const char *name)
{
  g_autofree char *path = fixture(name);
  g_autoptr(GError) error = NULL;
  g_autoptr(SieveNode) root = sieve_node_parse_file(path, &error);
  g_assert_null(root);
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
  g_assert_true(g_str_has_prefix(error->message, path));
  return g_strdup_printf("%s%s", name, error->message + strlen(path));
}

static SieveNode *
at(const SieveNode *root, const char *dotted)
{
  g_auto(GStrv) parts = g_strsplit(dotted, ".", -1);
  const SieveNode *node = root;
  for (guint i = 0; parts[i]; i++) {
    if (sieve_node_kind(node) == SIEVE_NODE_LIST)
      node = sieve_node_nth(node, (guint)g_ascii_strtoull(parts[i], NULL, 10));
    else
      node = sieve_node_lookup(node, parts[i]);
    g_assert_nonnull(node);
  }
  return (SieveNode *)node;
}

static void
assert_mark(const SieveNode *node, guint line, guint column)
{
  g_assert_cmpuint(sieve_node_line(node), ==, line);
  g_assert_cmpuint(sieve_node_column(node), ==, column);
}

/* Same kinds, texts, quotedness, keys and order; locations are not compared,
 * nor whether keys were quoted (a key is always a string). */
static gboolean
tree_equal(const SieveNode *a, const SieveNode *b)
{
  if (sieve_node_kind(a) != sieve_node_kind(b))
    return FALSE;
  if (sieve_node_kind(a) == SIEVE_NODE_SCALAR)
    return g_strcmp0(sieve_node_text(a), sieve_node_text(b)) == 0 &&
           sieve_node_is_quoted(a) == sieve_node_is_quoted(b);
  if (sieve_node_size(a) != sieve_node_size(b))
    return FALSE;
  for (guint i = 0; i < sieve_node_size(a); i++) {
    if (sieve_node_kind(a) == SIEVE_NODE_MAP &&
        g_strcmp0(sieve_node_text(sieve_node_nth_key(a, i)), sieve_node_text(sieve_node_nth_key(b, i))))
      return FALSE;
    if (!tree_equal(sieve_node_nth(a, i), sieve_node_nth(b, i)))
      return FALSE;
  }
  return TRUE;
}

static void
test_parse_marks(void)
{
  g_autoptr(SieveNode) root = parse_fixture("node-basic.yaml");
  g_autofree char *path = fixture("node-basic.yaml");

  g_assert_cmpint(sieve_node_kind(root), ==, SIEVE_NODE_MAP);
  g_assert_cmpuint(sieve_node_size(root), ==, 12);
  g_assert_cmpstr(sieve_node_origin(root), ==, path);
  assert_mark(root, 2, 1);

  /* Keys keep their own location, in written order. */
  g_assert_cmpstr(sieve_node_text(sieve_node_nth_key(root, 0)), ==, "name");
  assert_mark(sieve_node_nth_key(root, 0), 2, 1);
  g_assert_cmpstr(sieve_node_text(sieve_node_nth_key(root, 11)), ==, "nested");
  assert_mark(sieve_node_nth_key(root, 11), 24, 1);

  assert_mark(at(root, "name"), 2, 7);
  assert_mark(at(root, "budget"), 5, 3);
  assert_mark(at(root, "budget.evaluations"), 5, 16);
  assert_mark(at(root, "flags.2"), 7, 22);
  assert_mark(at(root, "ints.1"), 10, 5);
  assert_mark(at(root, "strings.literal"), 17, 12);
  assert_mark(at(root, "nested.0.values.1"), 26, 17);
  assert_mark(at(root, "nested.1.1"), 28, 7);

  g_autofree char *where = sieve_node_where(at(root, "budget.evaluations"));
  g_autofree char *expected = g_strdup_printf("%s:5:16", path);
  g_assert_cmpstr(where, ==, expected);
  /* Line 0, a flag's value: its origin alone, in messages too. */
  g_autoptr(SieveNode) flag = sieve_node_new_scalar("0.5", FALSE, "--lr 0.5", 0, 0);
  g_autofree char *flag_where = sieve_node_where(flag);
  g_assert_cmpstr(flag_where, ==, "--lr 0.5");
  g_autoptr(GError) flag_error = NULL;
  sieve_node_set_error(&flag_error, flag, "too %s", "high");
  g_assert_cmpstr(flag_error->message, ==, "--lr 0.5: too high");
  /* Column 0, a Lua call's value: the line, no made-up column. */
  g_autoptr(SieveNode) from_lua = sieve_node_new_scalar("bad", TRUE, "run.lua", 12, 0);
  g_autofree char *lua_where = sieve_node_where(from_lua);
  g_assert_cmpstr(lua_where, ==, "run.lua:12");

  g_assert_cmpstr(sieve_node_text(at(root, "strings.plain")), ==, "hello world");
  g_assert_cmpstr(sieve_node_text(at(root, "strings.literal")), ==, "line one\nline two\n");
  g_assert_true(sieve_node_is_quoted(at(root, "strings.literal")));
  g_assert_true(sieve_node_is_quoted(at(root, "strings.quoted")));
  g_assert_false(sieve_node_is_quoted(at(root, "seed")));
  g_assert_true(sieve_node_is_null(at(root, "nothing")));
  g_assert_true(sieve_node_is_null(at(root, "tilde")));
  g_assert_false(sieve_node_is_null(at(root, "strings.quoted")));
  g_assert_cmpint(sieve_node_kind(at(root, "empty_list")), ==, SIEVE_NODE_LIST);
  g_assert_cmpuint(sieve_node_size(at(root, "empty_list")), ==, 0);
  g_assert_cmpint(sieve_node_kind(at(root, "empty_map")), ==, SIEVE_NODE_MAP);
  g_assert_cmpuint(sieve_node_size(at(root, "empty_map")), ==, 0);
  g_assert_null(sieve_node_lookup(root, "missing"));
  g_assert_null(sieve_node_lookup(at(root, "seed"), "x"));
}

static void
test_typed_reads(void)
{
  g_autoptr(SieveNode) root = parse_fixture("node-basic.yaml");
  g_autofree char *path = fixture("node-basic.yaml");
  g_autoptr(GError) error = NULL;
  gint64 i = 0;
  double d = 0;
  gboolean b = FALSE;

  g_assert_true(sieve_node_get_int(at(root, "seed"), &i, &error));
  g_assert_cmpint(i, ==, 42);
  g_assert_true(sieve_node_get_int(at(root, "ints.0"), &i, NULL));
  g_assert_cmpint(i, ==, 31);
  g_assert_true(sieve_node_get_int(at(root, "ints.1"), &i, NULL));
  g_assert_cmpint(i, ==, -7);
  g_assert_true(sieve_node_get_int(at(root, "ints.2"), &i, NULL));
  g_assert_cmpint(i, ==, 3);

  g_assert_true(sieve_node_get_bool(at(root, "flags.0"), &b, NULL));
  g_assert_true(b);
  g_assert_true(sieve_node_get_bool(at(root, "flags.1"), &b, NULL));
  g_assert_false(b);
  g_assert_true(sieve_node_get_bool(at(root, "flags.2"), &b, NULL));
  g_assert_true(b);

  g_assert_true(sieve_node_get_double(at(root, "floats.0"), &d, NULL));
  g_assert_cmpfloat(d, ==, 1e-3);
  g_assert_true(sieve_node_get_double(at(root, "floats.1"), &d, NULL));
  g_assert_true(isinf(d) && d > 0);
  g_assert_true(sieve_node_get_double(at(root, "floats.2"), &d, NULL));
  g_assert_true(isinf(d) && d < 0);
  g_assert_true(sieve_node_get_double(at(root, "floats.3"), &d, NULL));
  g_assert_true(isnan(d));
  g_assert_true(sieve_node_get_double(at(root, "floats.4"), &d, NULL));
  g_assert_cmpfloat(d, ==, 2.0);
  g_assert_true(sieve_node_get_double(at(root, "floats.5"), &d, NULL));
  g_assert_cmpfloat(d, ==, -0.5);
  g_assert_true(sieve_node_get_double(at(root, "budget.seconds"), &d, NULL));
  g_assert_cmpfloat(d, ==, 150.0);

  g_assert_cmpstr(sieve_node_get_string(at(root, "strings.quoted"), NULL), ==, "10");
  g_assert_cmpstr(sieve_node_get_string(at(root, "seed"), NULL), ==, "42");

  /* Failures name the location and what was found. */
  struct {
    const char *path;
    int kind; /* 0 int, 1 double, 2 bool, 3 string */
    const char *message;
  } bad[] = {
      {"budget.seconds", 0, "6:12: expected an integer, got '1.5e2' (a float; write 150)"},
      {"floats.5", 0, "12:38: expected an integer, got '-0.5' (a float)"},
      {"name", 0, "2:7: expected an integer, got 'quickstart'"},
      {"strings.quoted", 0, "14:11: expected an integer, got '10' (a quoted string)"},
      {"nothing", 0, "20:9: expected an integer, got nothing"},
      {"budget", 0, "5:3: expected an integer, got a map"},
      {"strings.single", 2, "15:11: expected true or false, got 'yes' (a quoted string)"},
      {"ints.0", 2, "9:5: expected true or false, got '0x1F'"},
      {"tilde", 1, "21:8: expected a number, got '~' (null)"},
      {"flags", 1, "7:8: expected a number, got a list"},
      {"nested", 3, "25:3: expected a string, got a list"},
  };
  for (guint k = 0; k < G_N_ELEMENTS(bad); k++) {
    g_autoptr(GError) e = NULL;
    SieveNode *node = at(root, bad[k].path);
    gboolean ok;
    switch (bad[k].kind) {
    case 0:
      ok = sieve_node_get_int(node, &i, &e);
      break;
    case 1:
      ok = sieve_node_get_double(node, &d, &e);
      break;
    case 2:
      ok = sieve_node_get_bool(node, &b, &e);
      break;
    default:
      ok = sieve_node_get_string(node, &e) != NULL;
    }
    g_assert_false(ok);
    g_assert_error(e, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
    g_autofree char *expected = g_strdup_printf("%s:%s", path, bad[k].message);
    g_assert_cmpstr(e->message, ==, expected);
  }
}

static void
test_scalar_schema(void)
{
  /* YAML 1.2 core schema, one scalar at a time. */
  struct {
    const char *text;
    gboolean is_int;
    gint64 i;
    gboolean is_double;
    double d;
  } cases[] = {
      {"0", TRUE, 0, TRUE, 0},
      {"-0x10", TRUE, -16, TRUE, -16},
      {"0o17", TRUE, 15, TRUE, 15},
      {"9223372036854775807", TRUE, G_MAXINT64, TRUE, 9223372036854775807.0},
      {"-9223372036854775808", TRUE, G_MININT64, TRUE, -9223372036854775808.0},
      {"9223372036854775808", FALSE, 0, TRUE, 9223372036854775808.0},
      {"1.5", FALSE, 0, TRUE, 1.5},
      {"1e3", FALSE, 0, TRUE, 1000},
      {"+.5", FALSE, 0, TRUE, 0.5},
      {"1.", FALSE, 0, TRUE, 1},
      {"1e", FALSE, 0, FALSE, 0},
      {"0x", FALSE, 0, FALSE, 0},
      {"1_000", FALSE, 0, FALSE, 0},
      {"1e999", FALSE, 0, FALSE, 0},
      {"inf", FALSE, 0, FALSE, 0},
      {"", FALSE, 0, FALSE, 0},
  };
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    g_autoptr(SieveNode) node = sieve_node_new_scalar(cases[k].text, FALSE, "t", 1, 1);
    gint64 i = 0;
    double d = 0;
    g_assert_cmpint(sieve_node_get_int(node, &i, NULL), ==, cases[k].is_int);
    if (cases[k].is_int)
      g_assert_cmpint(i, ==, cases[k].i);
    g_assert_cmpint(sieve_node_get_double(node, &d, NULL), ==, cases[k].is_double);
    if (cases[k].is_double)
      g_assert_cmpfloat(d, ==, cases[k].d);
  }
  g_autoptr(GError) error = NULL;
  gint64 i;
  g_autoptr(SieveNode) big = sieve_node_new_scalar("99999999999999999999", FALSE, "--set #1", 1, 1);
  g_assert_false(sieve_node_get_int(big, &i, &error));
  g_assert_cmpstr(error->message, ==,
                  "--set #1:1:1: expected an integer, got '99999999999999999999' "
                  "(too large for a 64-bit integer)");

  /* Booleans are true/false only: yes/no/on/off are YAML 1.1. */
  const char *bools[] = {"true", "True", "TRUE", "false", "False", "FALSE"};
  for (guint k = 0; k < G_N_ELEMENTS(bools); k++) {
    g_autoptr(SieveNode) node = sieve_node_new_scalar(bools[k], FALSE, "t", 1, 1);
    gboolean b = -1;
    g_assert_true(sieve_node_get_bool(node, &b, NULL));
    g_assert_cmpint(b, ==, bools[k][0] == 't' || bools[k][0] == 'T');
  }
  const char *not_bools[] = {"yes", "no", "on", "off", "y", "1", "tRue"};
  for (guint k = 0; k < G_N_ELEMENTS(not_bools); k++) {
    g_autoptr(SieveNode) node = sieve_node_new_scalar(not_bools[k], FALSE, "t", 1, 1);
    gboolean b;
    g_assert_false(sieve_node_get_bool(node, &b, NULL));
  }
  g_autoptr(SieveNode) quoted = sieve_node_new_scalar("true", TRUE, "t", 1, 1);
  gboolean b;
  g_assert_false(sieve_node_get_bool(quoted, &b, NULL));
}

static void
test_parse_empty(void)
{
  const char *texts[] = {"", "# only a comment\n", "---\n", "--- # c\n...\n", "\n\n"};
  for (guint k = 0; k < G_N_ELEMENTS(texts); k++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(SieveNode) root = sieve_node_parse_string(texts[k], -1, "empty", &error);
    g_assert_no_error(error);
    g_assert_cmpint(sieve_node_kind(root), ==, SIEVE_NODE_MAP);
    g_assert_cmpuint(sieve_node_size(root), ==, 0);
  }
  g_autoptr(SieveNode) file = parse_fixture("node-empty.yaml");
  g_assert_cmpint(sieve_node_kind(file), ==, SIEVE_NODE_MAP);
  g_assert_cmpuint(sieve_node_size(file), ==, 0);

  /* A document of one scalar stays a scalar; an explicit null too. */
  g_autoptr(SieveNode) scalar = sieve_node_parse_string("~", -1, "s", NULL);
  g_assert_cmpint(sieve_node_kind(scalar), ==, SIEVE_NODE_SCALAR);
  g_assert_true(sieve_node_is_null(scalar));
}

static void
test_parse_errors(void)
{
  struct {
    const char *fixture, *message;
  } cases[] = {
      {"node-bad-syntax.yaml",
       "node-bad-syntax.yaml:4:7: did not find expected ',' or ']' (while parsing a flow sequence)"},
      {"node-tab.yaml", "node-tab.yaml:3:1: found character that cannot start any token "
                        "(while scanning for the next token); a tab cannot indent YAML: use spaces"},
      {"node-anchor.yaml",
       "node-anchor.yaml:1:11: anchors are not supported ('&base'): write the value out in full"},
      {"node-duplicate.yaml",
       "node-duplicate.yaml:4:3: duplicate key 'seed' (first written at line 3, column 3)"},
      {"node-multidoc.yaml",
       "node-multidoc.yaml:2:1: only one YAML document is allowed here (found a second one)"},
  };
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    g_autofree char *message = fixture_error(cases[k].fixture);
    g_assert_cmpstr(message, ==, cases[k].message);
  }

  struct {
    const char *text, *message;
  } strings[] = {
      {"a: *x\n", "s:1:4: aliases are not supported ('*x'): write the value out in full"},
      {"a: 1\nb: [1, 2\n", "s:3:1: did not find expected ',' or ']' (while parsing a flow sequence)"},
      {"a: b: c\n", "s:1:5: mapping values are not allowed in this context"},
      {"x: !!int 3\n", "s:1:4: tags are not supported ('!!int')"},
      {"x: !custom 3\n", "s:1:4: tags are not supported ('!custom')"},
      /* !!str applies to scalars; on a map it was dropped silently. */
      {"budget: !!str {evaluations: 3}\n", "s:1:9: '!!str' makes a scalar a string; it cannot tag a map"},
      {"budget: !!str [1]\n", "s:1:9: '!!str' makes a scalar a string; it cannot tag a list"},
      {"? [a]\n: 1\n", "s:1:3: map keys must be scalars, not a list"},
      {"ok: 1\nbad: \"\xff\"\n", "s:2:7: invalid leading UTF-8 octet"},
      {"{a: 1, a: 2}", "s:1:8: duplicate key 'a' (first written at line 1, column 2)"},
      /* The tab is found by line and character column (after a 2-byte é). */
      {"\xc3\xa9: 1\nb:\n\tc: 2\n", "s:3:1: found character that cannot start any token "
                                  "(while scanning for the next token); a tab cannot indent YAML: use spaces"},
      /* libyaml names the tab itself here: no second hint. */
      {"a: 1\nb:\n  c: 2\n\t d: 3\n",
       "s:4:1: found a tab character that violates indentation (while scanning a plain scalar)"},
      /* After a byte order mark, marks count from the first character. */
      {"\xef\xbb\xbf" "a: 1\nb: [1, 2\n", "s:3:1: did not find expected ',' or ']' (while parsing a flow sequence)"},
      /* The escape \0 (a raw NUL byte is libyaml's error): the text was cut at it ("random\0junk" loaded random). */
      {"plugin: \"random\\0junk\"\n", "s:1:9: a NUL character (\\0) in a text: texts end at one, so this one would "
                                    "be cut short; write it without"},
      {"\"a\\0b\": 1\n", "s:1:1: a NUL character (\\0) in a text: texts end at one, so this one would be cut short; "
                        "write it without"},
  };
  for (guint k = 0; k < G_N_ELEMENTS(strings); k++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(SieveNode) root = sieve_node_parse_string(strings[k].text, -1, "s", &error);
    g_assert_null(root);
    g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
    g_assert_cmpstr(error->message, ==, strings[k].message);
  }

  /* A UTF-8 byte order mark (Windows editors) is skipped, not content:
   * it gave "did not find expected <document start>". */
  {
    g_autoptr(GError) bom_error = NULL;
    g_autoptr(SieveNode) bom = sieve_node_parse_string("\xef\xbb\xbf" "a: 1\n", -1, "s", &bom_error);
    g_assert_no_error(bom_error);
    const SieveNode *a = sieve_node_lookup(bom, "a");
    g_assert_nonnull(a);
    g_assert_cmpstr(sieve_node_text(a), ==, "1");
    g_assert_cmpuint(sieve_node_column(sieve_node_nth_key(bom, 0)), ==, 1);
  }

  /* Nesting past any sane depth is refused, not a stack overflow. */
  g_autofree char *deep = g_strnfill(10000, '[');
  g_autoptr(GError) error = NULL;
  g_autoptr(SieveNode) root = sieve_node_parse_string(deep, -1, "deep", &error);
  g_assert_null(root);
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
  g_assert_true(g_str_has_prefix(error->message, "deep:1:258: nesting deeper than 256 levels"));

  g_autoptr(GError) missing = NULL;
  g_autoptr(SieveNode) none = sieve_node_parse_file("/nonexistent/sieve/exp.yaml", &missing);
  g_assert_null(none);
  g_assert_error(missing, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND);
  g_assert_nonnull(strstr(missing->message, "/nonexistent/sieve/exp.yaml"));
}

static void
test_build(void)
{
  g_autoptr(SieveNode) map = sieve_node_new_map("lua", 3, 1);
  sieve_node_map_set(map, "a", sieve_node_new_scalar("1", FALSE, "lua", 3, 5));
  sieve_node_map_set(map, "b", sieve_node_new_list("lua", 4, 5));
  sieve_node_list_append(sieve_node_lookup(map, "b"), sieve_node_new_scalar("x", TRUE, "lua", 4, 6));
  sieve_node_map_set(map, "c", sieve_node_new_scalar("3", FALSE, "lua", 5, 5));
  g_assert_cmpuint(sieve_node_size(map), ==, 3);
  /* The key takes the value's location. */
  assert_mark(sieve_node_nth_key(map, 1), 4, 5);

  /* Replacing keeps the written order. */
  sieve_node_map_set(map, "a", sieve_node_new_scalar("2", FALSE, "lua", 9, 9));
  g_assert_cmpuint(sieve_node_size(map), ==, 3);
  g_assert_cmpstr(sieve_node_text(sieve_node_nth_key(map, 0)), ==, "a");
  g_assert_cmpstr(sieve_node_text(sieve_node_nth(map, 0)), ==, "2");

  g_autoptr(SieveNode) copy = sieve_node_copy(map);
  g_assert_true(tree_equal(map, copy));
  assert_mark(sieve_node_lookup(copy, "a"), 9, 9);
  g_assert_cmpstr(sieve_node_origin(copy), ==, "lua");

  g_assert_true(sieve_node_map_remove(map, "a"));
  g_assert_false(sieve_node_map_remove(map, "a"));
  g_assert_cmpuint(sieve_node_size(map), ==, 2);
  g_assert_cmpstr(sieve_node_text(sieve_node_nth_key(map, 0)), ==, "b");
  /* The copy is deep: untouched. */
  g_assert_cmpuint(sieve_node_size(copy), ==, 3);
  g_assert_false(tree_equal(map, copy));

  /* A ref outlives its parent. */
  SieveNode *b = sieve_node_ref(sieve_node_lookup(copy, "b"));
  g_clear_pointer(&copy, sieve_node_unref);
  g_assert_cmpuint(sieve_node_size(b), ==, 1);
  g_assert_cmpstr(sieve_node_text(sieve_node_nth(b, 0)), ==, "x");
  sieve_node_unref(b);

  g_autoptr(GError) error = NULL;
  sieve_node_set_error(&error, sieve_node_lookup(map, "c"), "bad %s %d", "thing", 7);
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
  g_assert_cmpstr(error->message, ==, "lua:5:5: bad thing 7");
}

static void
test_set_path(void)
{
  g_autoptr(SieveNode) root = parse_fixture("node-basic.yaml");
  g_autoptr(GError) error = NULL;
  gint64 i = 0;

  /* Override an existing value: position kept, location is the --set alone (line 0). */
  g_assert_true(sieve_node_set_path(root, "budget.evaluations", "7", "--set #1", &error));
  g_assert_no_error(error);
  SieveNode *ev = at(root, "budget.evaluations");
  g_assert_true(sieve_node_get_int(ev, &i, NULL));
  g_assert_cmpint(i, ==, 7);
  g_assert_cmpstr(sieve_node_origin(ev), ==, "--set #1");
  assert_mark(ev, 0, 0);
  g_assert_cmpstr(sieve_node_text(sieve_node_nth_key(at(root, "budget"), 0)), ==, "evaluations");

  /* Create maps on the way. */
  g_assert_true(sieve_node_set_path(root, "optimizer.mutation.rate", "1e-2", "--set #2", &error));
  SieveNode *optimizer = at(root, "optimizer");
  g_assert_cmpint(sieve_node_kind(optimizer), ==, SIEVE_NODE_MAP);
  g_assert_cmpstr(sieve_node_origin(optimizer), ==, "--set #2");
  double d = 0;
  g_assert_true(sieve_node_get_double(at(root, "optimizer.mutation.rate"), &d, NULL));
  g_assert_cmpfloat(d, ==, 0.01);

  /* Flow values. */
  g_assert_true(sieve_node_set_path(root, "optimizer.tags", "[a, \"b\"]", "--set #3", &error));
  SieveNode *tags = at(root, "optimizer.tags");
  g_assert_cmpint(sieve_node_kind(tags), ==, SIEVE_NODE_LIST);
  g_assert_cmpuint(sieve_node_size(tags), ==, 2);
  g_assert_true(sieve_node_is_quoted(sieve_node_nth(tags, 1)));
  assert_mark(sieve_node_nth(tags, 1), 0, 5); /* column 5 of the value */
  g_assert_true(sieve_node_set_path(root, "name", "{x: 1}", "--set #4", &error));
  g_assert_cmpint(sieve_node_kind(at(root, "name")), ==, SIEVE_NODE_MAP);
  g_assert_true(sieve_node_set_path(root, "seed", "", "--set #5", &error));
  g_assert_true(sieve_node_is_null(at(root, "seed")));
  g_assert_true(sieve_node_set_path(root, "seed", "'12'", "--set #6", &error));
  g_assert_true(sieve_node_is_quoted(at(root, "seed")));
  g_assert_no_error(error);

  /* Through a scalar or a list: refused, naming the path. */
  g_autofree char *path = fixture("node-basic.yaml");
  g_assert_false(sieve_node_set_path(root, "strings.plain.x", "1", "--set #7", &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
  g_autofree char *expected = g_strdup_printf(
      "--set #7: cannot set 'strings.plain.x': 'strings.plain' is a scalar (%s:16:10), not a map or a list",
      path);
  g_assert_cmpstr(error->message, ==, expected);
  g_clear_error(&error);
  /* A list's items by 0-based index... */
  g_assert_true(sieve_node_set_path(root, "flags.1", "yes", "--set #8", &error));
  g_assert_cmpstr(sieve_node_text(sieve_node_nth(at(root, "flags"), 1)), ==, "yes");
  g_assert_cmpuint(sieve_node_size(at(root, "flags")), ==, 3);
  g_assert_true(sieve_node_set_path(root, "nested.0.values", "[3]", "--set #8b", &error));
  g_assert_cmpuint(sieve_node_size(sieve_node_lookup(sieve_node_nth(at(root, "nested"), 0), "values")), ==, 1);
  g_assert_no_error(error);
  /* ...but only those it has. */
  g_assert_false(sieve_node_set_path(root, "flags.3", "1", "--set #8c", &error));
  g_autofree char *expected_list = g_strdup_printf(
      "--set #8c: cannot set 'flags.3': '3' is not an index of the list at %s:7:8 (0 to 2)", path);
  g_assert_cmpstr(error->message, ==, expected_list);
  g_clear_error(&error);
  g_assert_false(sieve_node_set_path(root, "flags.x", "1", "--set #8d", &error));
  g_assert_nonnull(strstr(error->message, "'x' is not an index of the list"));
  g_clear_error(&error);

  g_assert_false(sieve_node_set_path(root, "a..b", "1", "--set #9", &error));
  g_assert_cmpstr(error->message, ==, "--set #9: invalid option path 'a..b' (empty component)");
  g_clear_error(&error);
  g_assert_false(sieve_node_set_path(root, "a", "[1, 2", "--set #10", &error));
  g_assert_cmpstr(error->message, ==,
                  "--set #10 (column 6 of the value): did not find expected ',' or ']' (while parsing a flow sequence)");
  g_clear_error(&error);
  /* A one-line value has no line: the value itself is named by its origin
   * alone, what is inside a flow map or list by a column of the value. */
  g_assert_true(sieve_node_set_path(root, "b", "{x: 1, y: [2, 3]}", "--set #11", &error));
  SieveNode *b = at(root, "b");
  g_autofree char *where_b = sieve_node_where(b);
  g_assert_cmpstr(where_b, ==, "--set #11");
  g_autofree char *where_y = sieve_node_where(sieve_node_lookup(b, "y"));
  g_assert_cmpstr(where_y, ==, "--set #11 (column 11 of the value)");
  g_autofree char *where_3 = sieve_node_where(sieve_node_nth(sieve_node_lookup(b, "y"), 1));
  g_assert_cmpstr(where_3, ==, "--set #11 (column 15 of the value)");
  g_assert_true(sieve_node_set_path(root, "c.d", "'x'", "--set #12", &error));
  g_autofree char *where_c = sieve_node_where(at(root, "c"));
  g_assert_cmpstr(where_c, ==, "--set #12");
  g_assert_no_error(error);
  g_assert_false(sieve_node_set_path(root, "a", "{k: 1, k: 2}", "--set #13", &error));
  g_assert_cmpstr(error->message, ==, "--set #13 (column 8 of the value): duplicate key 'k' (first written at column 2)");
  g_clear_error(&error);
  /* A value of several lines has lines of its own. */
  g_assert_false(sieve_node_set_path(root, "a", "{k: 1,\n k: 2}", "--set #14", &error));
  g_assert_cmpstr(error->message, ==, "--set #14:2:2: duplicate key 'k' (first written at line 1, column 2)");
  g_clear_error(&error);
  /* Nothing was created by the failed calls. */
  g_assert_null(sieve_node_lookup(root, "a"));
}

static void
assert_round_trip(const SieveNode *tree)
{
  g_autofree char *text = sieve_node_to_yaml(tree);
  g_autoptr(GError) error = NULL;
  g_autoptr(SieveNode) again = sieve_node_parse_string(text, -1, "round-trip", &error);
  g_assert_no_error(error);
  if (!tree_equal(tree, again))
    g_error("tree changed through:\n%s", text);
  g_autofree char *text2 = sieve_node_to_yaml(again);
  g_assert_cmpstr(text, ==, text2);
}

static void
test_to_yaml(void)
{
  g_autoptr(SieveNode) root = parse_fixture("node-basic.yaml");
  assert_round_trip(root);

  g_autoptr(SieveNode) small =
      sieve_node_parse_string("b: [1, \"1\", {c: d}]\na: {}\nn:\nl: [[x, y], []]\n", -1, "s", NULL);
  g_autofree char *text = sieve_node_to_yaml(small);
  g_assert_cmpstr(text, ==,
                  "b:\n"
                  "  - 1\n"
                  "  - \"1\"\n"
                  "  - c: d\n"
                  "a: {}\n"
                  "n:\n"
                  "l:\n"
                  "  - - x\n"
                  "    - y\n"
                  "  - []\n");

  /* Strings that would read as something else, or break the syntax. */
  const char *tricky[] = {"1",    "true", "~",    "",     "null", "a: b", "#x",  "x #y", "- a",
                          "-",    "[a]",  "{a}",  "*a",   "&a",   "!a",   "|",   ">",    "'q'",
                          "\"q\"", "%x",  "@x",   "`x",   "a\nb", "tab\t", " lead", "trail ",
                          "c:",   "---",  "...",  "back\\slash", "h\xc3\xa9llo", "\x01"};
  g_autoptr(SieveNode) map = sieve_node_new_map("t", 1, 1);
  g_autoptr(SieveNode) list = sieve_node_new_list("t", 1, 1);
  for (guint k = 0; k < G_N_ELEMENTS(tricky); k++) {
    g_autofree char *key = g_strdup_printf("%s%u", tricky[k], k);
    sieve_node_map_set(map, key, sieve_node_new_scalar(tricky[k], TRUE, "t", 1, 1));
    sieve_node_list_append(list, sieve_node_new_scalar(tricky[k], TRUE, "t", 1, 1));
  }
  assert_round_trip(map);
  assert_round_trip(list);

  /* Plain scalars that are safe stay plain and typed. */
  g_autoptr(SieveNode) plain = sieve_node_new_list("t", 1, 1);
  const char *plains[] = {"1", "-1", "1e-3", ".inf", "true", "~", "a,b", "x:y", "a b", "-x", "h\xc3\xa9llo"};
  for (guint k = 0; k < G_N_ELEMENTS(plains); k++)
    sieve_node_list_append(plain, sieve_node_new_scalar(plains[k], FALSE, "t", 1, 1));
  sieve_node_list_append(plain, sieve_node_new_scalar("", FALSE, "t", 1, 1));
  assert_round_trip(plain);

  /* Roots that are not collections. */
  g_autoptr(SieveNode) scalar = sieve_node_new_scalar("x", FALSE, "t", 1, 1);
  g_autofree char *scalar_text = sieve_node_to_yaml(scalar);
  g_assert_cmpstr(scalar_text, ==, "x\n");
  g_autoptr(SieveNode) empty = sieve_node_new_map("t", 1, 1);
  g_autofree char *empty_text = sieve_node_to_yaml(empty);
  g_assert_cmpstr(empty_text, ==, "{}\n");
  assert_round_trip(empty);
  g_autoptr(SieveNode) empty_list = sieve_node_new_list("t", 1, 1);
  assert_round_trip(empty_list);
}

static void
test_suggest(void)
{
  g_assert_cmpuint(sieve_edit_distance("", ""), ==, 0);
  g_assert_cmpuint(sieve_edit_distance("abc", ""), ==, 3);
  g_assert_cmpuint(sieve_edit_distance("", "abc"), ==, 3);
  g_assert_cmpuint(sieve_edit_distance("kitten", "sitting"), ==, 3);
  g_assert_cmpuint(sieve_edit_distance("populaton", "population"), ==, 1);
  /* A swap of neighbours is one edit (optimal string alignment)... */
  g_assert_cmpuint(sieve_edit_distance("ab", "ba"), ==, 1);
  g_assert_cmpuint(sieve_edit_distance("rnu", "run"), ==, 1);
  /* ...but a swapped pair is not edited again: "ca" -> "abc" is 3 here, 2 in full Damerau. */
  g_assert_cmpuint(sieve_edit_distance("ca", "abc"), ==, 3);
  g_assert_cmpuint(sieve_edit_distance("flaw", "lawn"), ==, 2);

  const char *const names[] = {"population", "mutation_rate", "kind", "seed", "sample_size", NULL};
  g_assert_cmpstr(sieve_suggest("populaton", names), ==, "population");
  g_assert_cmpstr(sieve_suggest("mutation-rate", names), ==, "mutation_rate");
  g_assert_cmpstr(sieve_suggest("Kind", names), ==, "kind");
  g_assert_cmpstr(sieve_suggest("sed", names), ==, "seed");
  g_assert_cmpstr(sieve_suggest("pop", names), ==, "population");
  g_assert_cmpstr(sieve_suggest("sample", names), ==, "sample_size");
  g_assert_null(sieve_suggest("xyz", names));
  g_assert_null(sieve_suggest("learning_rate", names));
  g_assert_null(sieve_suggest("kd", names)); /* two edits from "kind": too far for two letters */
  g_assert_null(sieve_suggest("anything", NULL));
  const char *const none[] = {NULL};
  g_assert_null(sieve_suggest("x", none));
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/node/parse/marks", test_parse_marks);
  g_test_add_func("/node/parse/typed-reads", test_typed_reads);
  g_test_add_func("/node/parse/scalar-schema", test_scalar_schema);
  g_test_add_func("/node/parse/empty", test_parse_empty);
  g_test_add_func("/node/parse/errors", test_parse_errors);
  g_test_add_func("/node/build", test_build);
  g_test_add_func("/node/set-path", test_set_path);
  g_test_add_func("/node/to-yaml", test_to_yaml);
  g_test_add_func("/node/suggest", test_suggest);
  return g_test_run();
}
