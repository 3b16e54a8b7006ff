/* Tests of options as JSON (base/options-json.c), what a weights or ONNX
 * file carries as "space_options": every space in the box, each option set
 * to a value other than its default, written and read back the same; the
 * numbers are JSON numbers; files older sieve wrote (a float as a quoted
 * string, an any-value option as YAML text) read back the same too. */
#include <math.h>
#include <string.h>

#include <json-glib/json-glib.h>

#include <sieve/component.h>
#include <sieve/registry.h>

#include "base/base-private.h"
#include "engine/engine-private.h"
#include "lua/lua-private.h"

static const char *const reserved[] = {"plugin", NULL};

/* A value of o's type other than its default, as YAML. */
static char *
other_value(const SieveOptionSpec *o)
{
  const char *def = o->default_text;
  switch (o->type) {
  case SIEVE_OPTION_TYPE_BOOL:
    return g_strdup(def && strcmp(def, "true") == 0 ? "false" : "true");
  case SIEVE_OPTION_TYPE_INT: {
    gint64 v = (o->flags & SIEVE_OPTION_HAS_MIN) ? (gint64)o->min + 3 : 7;
    if ((o->flags & SIEVE_OPTION_HAS_MAX) && v > o->max)
      v = (gint64)o->max;
    if (def)
      g_assert_cmpint(v, !=, g_ascii_strtoll(def, NULL, 0));
    return g_strdup_printf("%" G_GINT64_FORMAT, v);
  }
  case SIEVE_OPTION_TYPE_FLOAT: {
    /* A third of the range: no short decimal, every digit must survive. */
    double lo = (o->flags & SIEVE_OPTION_HAS_MIN) ? o->min : 0;
    double hi = (o->flags & SIEVE_OPTION_HAS_MAX) ? o->max : 1;
    double v = lo + (hi - lo) / 3;
    if (def)
      g_assert_cmpfloat(v, !=, g_ascii_strtod(def, NULL));
    return g_strdup_printf("%.17g", v);
  }
  case SIEVE_OPTION_TYPE_STRING:
    return g_strdup("'a \"quoted\" text: 0.5'");
  case SIEVE_OPTION_TYPE_CHOICE: {
    guint n = g_strv_length((char **)o->choices);
    g_assert_cmpuint(n, >=, 2);
    const char *pick = def && strcmp(o->choices[n - 1], def) == 0 ? o->choices[0] : o->choices[n - 1];
    return g_strdup(pick);
  }
  case SIEVE_OPTION_TYPE_PATH:
    return g_strdup("sub/file 1.yaml");
  case SIEVE_OPTION_TYPE_STRING_LIST:
    return g_strdup("[x, '1', y z]");
  case SIEVE_OPTION_TYPE_NODE:
    return g_strdup("{a: [1, 0.1, '2', true, ~, text, -3.5e-7], b: {c: 0x10, d: [[]]}}");
  }
  g_assert_not_reached();
}

static SieveOptions *
options_from(const SieveOptionSpec *spec, const SieveNode *map, const char *what)
{
  GError *error = NULL;
  SieveOptions *options = sieve_options_new(spec, map, reserved, "/base/dir", what, &error);
  g_assert_no_error(error);
  return options;
}

/* The space's options read back from json as model files read them. */
static char *
reread(const SieveOptionSpec *spec, const char *json)
{
  GError *error = NULL;
  g_autoptr(SieveNode) map = sieve__options_json_parse(spec, json, "model.safetensors (metadata space_options)", &error);
  g_assert_no_error(error);
  g_autoptr(SieveOptions) again = options_from(spec, map, "space (read back)");
  return sieve__options_to_json(again);
}

static void
check_json_types(const SieveOptionSpec *spec, const char *json)
{
  GError *error = NULL;
  g_autoptr(JsonParser) parser = json_parser_new();
  g_assert_true(json_parser_load_from_data(parser, json, -1, &error));
  g_assert_no_error(error);
  JsonObject *obj = json_node_get_object(json_parser_get_root(parser));
  for (const SieveOptionSpec *o = spec; o->name; o++) {
    JsonNode *m = json_object_get_member(obj, o->name);
    g_assert_nonnull(m);
    GType want = o->type == SIEVE_OPTION_TYPE_BOOL    ? G_TYPE_BOOLEAN
                 : o->type == SIEVE_OPTION_TYPE_INT   ? G_TYPE_INT64
                 : o->type == SIEVE_OPTION_TYPE_FLOAT ? G_TYPE_DOUBLE
                 : o->type == SIEVE_OPTION_TYPE_STRING_LIST || o->type == SIEVE_OPTION_TYPE_NODE ? G_TYPE_INVALID
                                                                                                  : G_TYPE_STRING;
    if (want == G_TYPE_INVALID) {
      g_assert_cmpint(json_node_get_node_type(m), !=, JSON_NODE_VALUE);
      continue;
    }
    g_assert_cmpint(json_node_get_node_type(m), ==, JSON_NODE_VALUE);
    g_assert_true(json_node_get_value_type(m) == want);
  }
}

static void
test_every_space(void)
{
  sieve_lua_register_static();
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  sieve_registry_load_default(registry, NULL, NULL);
  g_autoptr(GPtrArray) spaces = sieve_registry_list(registry, SIEVE_KIND_SPACE);
  const char *want[] = {"compose", "darts", "hpo", "lua", "mobilenet", "nb101", "nb201"};
  guint found = 0;
  for (guint s = 0; s < spaces->len; s++) {
    const SieveComponent *c = spaces->pdata[s];
    const SieveOptionSpec *spec = sieve_component_get_info(c)->options;
    g_autoptr(SieveNode) map = sieve_node_new_map("test", 1, 1);
    for (const SieveOptionSpec *o = spec; o->name; o++) {
      g_autofree char *yaml = other_value(o);
      GError *error = NULL;
      SieveNode *v = sieve_node_parse_string(yaml, -1, o->name, &error);
      g_assert_no_error(error);
      sieve_node_map_set(map, o->name, v);
    }
    g_autoptr(SieveOptions) options = options_from(spec, map, sieve_component_get_name(c));
    g_autofree char *json = sieve__options_to_json(options);
    g_test_message("%s: %s", sieve_component_get_name(c), json);
    check_json_types(spec, json);
    g_autofree char *back = reread(spec, json);
    g_assert_cmpstr(back, ==, json);
    /* What sieve wrote before (the cache key's form) reads the same. */
    g_autofree char *old = sieve_options_to_canonical(options);
    g_autofree char *from_old = reread(spec, old);
    g_assert_cmpstr(from_old, ==, json);
    /* Defaults: only what is required given, so options left unset (a
     * string without a default is written null) read back as unset. */
    g_autoptr(SieveNode) least = sieve_node_new_map("test", 1, 1);
    for (const SieveOptionSpec *o = spec; o->name; o++)
      if (o->flags & SIEVE_OPTION_REQUIRED) {
        g_autofree char *yaml = other_value(o);
        sieve_node_map_set(least, o->name, sieve_node_parse_string(yaml, -1, o->name, NULL));
      }
    g_autoptr(SieveOptions) defaults = options_from(spec, least, sieve_component_get_name(c));
    g_autofree char *json0 = sieve__options_to_json(defaults);
    g_autofree char *back0 = reread(spec, json0);
    g_assert_cmpstr(back0, ==, json0);
    for (guint i = 0; i < G_N_ELEMENTS(want); i++)
      found += strcmp(want[i], sieve_component_get_name(c)) == 0;
  }
  g_assert_cmpuint(found, ==, G_N_ELEMENTS(want));
}

/* The case: nb101's bn_momentum, and the tree of an any-value
 * option keeps its numbers numbers and its quoted strings strings. */
/* NEL and the Unicode line separators are escaped: YAML, which reads the
 * metadata back, folds them raw inside a quoted string. */
static void
test_separators(void)
{
  const char *text = "a\xc2\x85" "b\xe2\x80\xa8" "c\xe2\x80\xa9" "d\xc3\xa9" "\xc2\x80\xc2\x9f\xef\xbf\xbe\xef\xbf\xbf"
                     "\xe2\x82\xac";
  g_autoptr(GString) out = g_string_new(NULL);
  sieve_json_append_string(out, text);
  g_assert_cmpstr(out->str, ==, "\"a\\u0085b\\u2028c\\u2029d\xc3\xa9\\u0080\\u009f\\ufffe\\uffff\xe2\x82\xac\"");
  GError *error = NULL;
  g_autoptr(SieveNode) back = sieve_node_parse_string(out->str, -1, "json", &error);
  g_assert_no_error(error);
  g_assert_cmpstr(sieve_node_text(back), ==, text);
}

/* The options yaml gives under spec, written as JSON (checked against
 * want) and read back as a model file reads them. (transfer full) */
static SieveOptions *
written_and_read(const SieveOptionSpec *spec, const char *yaml, const char *want)
{
  GError *error = NULL;
  g_autoptr(SieveNode) map = sieve_node_parse_string(yaml, -1, "t", &error);
  g_assert_no_error(error);
  g_autoptr(SieveOptions) options = sieve_options_new(spec, map, NULL, NULL, "t", &error);
  g_assert_no_error(error);
  g_autofree char *json = sieve__options_to_json(options);
  g_assert_cmpstr(json, ==, want);
  g_autoptr(SieveNode) back = sieve__options_json_parse(spec, json, "f", &error);
  g_assert_no_error(error);
  SieveOptions *again = sieve_options_new(spec, back, NULL, NULL, "t", &error);
  g_assert_no_error(error);
  return again;
}

static void
test_values(void)
{
  static const SieveOptionSpec spec[] = {
      SIEVE_OPTION_FLOAT("bn_momentum", "0.003", 0, 1, "momentum"),
      {"scale", SIEVE_OPTION_TYPE_FLOAT, "1", 0, 0, NULL, "unbounded", 0, {NULL}},
      SIEVE_OPTION_NODE("parts", "a tree"),
      SIEVE_OPTION_END,
  };
  GError *error = NULL;
  g_autoptr(SieveOptions) again =
      written_and_read(spec, "{parts: [{plugin: nb101, bn_momentum: 0.1, tag: '7'}], scale: .inf}",
                       "{\"bn_momentum\":0.003,\"scale\":Infinity,"
                       "\"parts\":[{\"plugin\":\"nb101\",\"bn_momentum\":0.1,\"tag\":\"7\"}]}");
  g_assert_cmpfloat(sieve_options_get_double(again, "bn_momentum"), ==, 0.003);
  g_assert_cmpfloat(sieve_options_get_double(again, "scale"), ==, INFINITY);
  const SieveNode *part = sieve_node_nth(sieve_options_get_node(again, "parts"), 0);
  g_assert_false(sieve_node_is_quoted(sieve_node_lookup(part, "bn_momentum")));
  g_assert_true(sieve_node_is_quoted(sieve_node_lookup(part, "tag")));
  /* Not an object: an error that names the file. */
  g_autoptr(SieveNode) bad = sieve__options_json_parse(spec, "[1]", "f.onnx (metadata space_options)", &error);
  g_assert_null(bad);
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE);
  g_assert_nonnull(strstr(error->message, "f.onnx (metadata space_options): expected a JSON object"));
  g_clear_error(&error);
}

/* Infinities (a float option takes no NaN) and NaN inside an any-value option's
 * tree, read back as the same numbers (they were the strings ".inf" and
 * ".nan" inside trees); quoted texts that look like them stay strings. */
static void
test_non_finite(void)
{
  static const SieveOptionSpec spec[] = {
      {"scale", SIEVE_OPTION_TYPE_FLOAT, "1", 0, 0, NULL, "unbounded", 0, {NULL}},
      {"low", SIEVE_OPTION_TYPE_FLOAT, "1", 0, 0, NULL, "unbounded", 0, {NULL}},
      SIEVE_OPTION_NODE("options", "a tree"),
      SIEVE_OPTION_END,
  };
  const char *json = "{\"scale\":Infinity,\"low\":-Infinity,\"options\":{\"hi\":Infinity,"
                     "\"lo\":[-Infinity,NaN,2],\"s\":\".inf\",\"t\":\"Infinity\",\"u\":\"NaN\"}}";
  g_autoptr(SieveOptions) again = written_and_read(
      spec, "{scale: .inf, low: -.Inf, options: {hi: .inf, lo: [-.inf, .NaN, 2], s: '.inf', t: Infinity, u: 'NaN'}}",
      json);
  GError *error = NULL;
  g_assert_cmpfloat(sieve_options_get_double(again, "scale"), ==, INFINITY);
  g_assert_cmpfloat(sieve_options_get_double(again, "low"), ==, -INFINITY);
  const SieveNode *tree = sieve_options_get_node(again, "options");
  double d = 0;
  g_assert_true(sieve_node_get_double(sieve_node_lookup(tree, "hi"), &d, &error));
  g_assert_cmpfloat(d, ==, INFINITY);
  const SieveNode *lo = sieve_node_lookup(tree, "lo");
  g_assert_true(sieve_node_get_double(sieve_node_nth(lo, 0), &d, &error));
  g_assert_cmpfloat(d, ==, -INFINITY);
  g_assert_true(sieve_node_get_double(sieve_node_nth(lo, 1), &d, &error));
  g_assert_true(isnan(d));
  g_assert_no_error(error);
  for (const char *const *k = (const char *const[]){"s", "t", "u", NULL}; *k; k++)
    g_assert_true(sieve_node_is_quoted(sieve_node_lookup(tree, *k)));
  g_assert_cmpstr(sieve_node_text(sieve_node_lookup(tree, "t")), ==, "Infinity");
  /* Written again, the same text. */
  g_autofree char *twice = sieve__options_to_json(again);
  g_assert_cmpstr(twice, ==, json);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/options-json/every-space", test_every_space);
  g_test_add_func("/options-json/values", test_values);
  g_test_add_func("/options-json/non-finite", test_non_finite);
  g_test_add_func("/options-json/separators", test_separators);
  return g_test_run();
}
