/* The plugin loader: what it accepts, what it refuses and how it says so. */
#include <string.h>

#include <glib/gstdio.h>
#include <math.h>
#include <sieve/sieve.h>

#include "plugins/common.h"

static char *
plugin_path(const char *name)
{
  return g_strdup_printf("%s/test-%s.so", TEST_PLUGIN_DIR, name);
}

static void
assert_refused(const char *name, gint code, const char *reason)
{
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  g_autofree char *path = plugin_path(name);
  GError *error = NULL;
  /* The good plugin first, so a duplicate has something to clash with. */
  g_autofree char *good = plugin_path("good");
  g_assert_true(sieve_registry_load_file(registry, good, NULL));
  g_assert_false(sieve_registry_load_file(registry, path, &error));
  g_assert_error(error, SIEVE_ERROR, code);
  g_test_message("%s", error->message);
  g_assert_true(g_str_has_prefix(error->message, path));
  if (strstr(error->message, reason) == NULL)
    g_error("message '%s' lacks '%s'", error->message, reason);
  g_error_free(error);
  /* The earlier plugin is untouched. */
  g_assert_nonnull(sieve_registry_lookup(registry, SIEVE_KIND_OPTIMIZER, "test-good"));
}

static void
test_good(void)
{
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  g_autofree char *path = plugin_path("good");
  GError *error = NULL;
  g_assert_true(sieve_registry_load_file(registry, path, &error));
  g_assert_no_error(error);
  const SieveComponent *c = sieve_registry_lookup(registry, SIEVE_KIND_OPTIMIZER, "test-good");
  g_assert_nonnull(c);
  g_assert_cmpstr(sieve_component_get_plugin_name(c), ==, "test-good");
  g_assert_cmpstr(sieve_component_get_plugin_version(c), ==, "1.0");
  g_assert_cmpstr(sieve_component_get_plugin_license(c), ==, "MIT");
  g_assert_null(sieve_registry_lookup(registry, SIEVE_KIND_EVALUATOR, "test-good"));
  /* Loading the same file again (another search-path entry) is a no-op. */
  g_assert_true(sieve_registry_load_file(registry, path, &error));
  g_autoptr(GPtrArray) files = sieve_registry_loaded_files(registry);
  g_assert_cmpuint(files->len, ==, 1);
}

static void
test_abi_major(void)
{
  g_autofree char *expected = g_strdup_printf("was built for sieve ABI %d.0, this sieve provides ABI %d.%d",
                                              SIEVE_ABI_MAJOR + 1, SIEVE_ABI_MAJOR, SIEVE_ABI_MINOR);
  assert_refused("abi-major", SIEVE_ERROR_ABI, expected);
}

static void
test_abi_minor(void)
{
  g_autofree char *expected = g_strdup_printf("was built for sieve ABI %d.%d, this sieve provides ABI %d.%d",
                                              SIEVE_ABI_MAJOR, SIEVE_ABI_MINOR + 1, SIEVE_ABI_MAJOR, SIEVE_ABI_MINOR);
  assert_refused("abi-minor", SIEVE_ERROR_ABI, expected);
}

static void
test_no_descriptor(void)
{
  assert_refused("no-descriptor", SIEVE_ERROR_PLUGIN, "not a sieve plugin (no 'sieve_plugin_descriptor' symbol");
}

static void
test_duplicate(void)
{
  assert_refused("duplicate", SIEVE_ERROR_PLUGIN, "optimizer 'test-good' is already registered by ");
  /* All or nothing: the fresh name of the refused plugin is not there. */
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  g_autofree char *good = plugin_path("good"), *dup = plugin_path("duplicate");
  g_assert_true(sieve_registry_load_file(registry, good, NULL));
  g_assert_false(sieve_registry_load_file(registry, dup, NULL));
  g_assert_null(sieve_registry_lookup(registry, SIEVE_KIND_OPTIMIZER, "test-fresh"));
}

static void
test_missing_method(void)
{
  assert_refused("missing-method", SIEVE_ERROR_PLUGIN, "optimizer 'test-no-tell' has no 'tell' method");
}

static void
test_init_fails(void)
{
  assert_refused("init-fails", SIEVE_ERROR_PLUGIN, "plugin 'test-init-fails' init failed: licence server unreachable");
}

static void
test_bad_options_plugin(void)
{
  assert_refused("bad-options", SIEVE_ERROR_PLUGIN,
                 "test-bad-options.so: optimizer 'test-bad-default': the default of option 'population': "
                 "option 'population' expects an integer in [2, 100], got 0");
}

/* ---- option tables, checked as the registry takes a component ---------- */

static gboolean
null_ask(gpointer instance, guint n, GPtrArray *out, GError **error)
{
  g_ptr_array_add(out, NULL);
  return TRUE;
}

static const SieveOptimizerClass null_ask_class = {
    .create = test_create, .destroy = g_free, .ask = null_ask, .tell = test_tell, .save = test_save, .load = test_load,
};

static gpointer
ev_create(const SieveSpace *space, const SieveOptions *options, GError **error)
{
  return g_new0(int, 1);
}

static SieveResult *
ev_evaluate(gpointer instance, const SieveCandidate *candidate, GError **error)
{
  return sieve_result_new();
}

static const SieveEvaluatorClass test_evaluator_class = {.create = ev_create, .destroy = g_free, .evaluate = ev_evaluate};

static const char *const ab[] = {"a", "b", NULL};
static const SieveOptionSpec t_range[] = {SIEVE_OPTION_INT("pop", "0", 2, 100, "x"), SIEVE_OPTION_END};
static const SieveOptionSpec t_type[] = {SIEVE_OPTION_INT("pop", "abc", 2, 100, "x"), SIEVE_OPTION_END};
static const SieveOptionSpec t_choice[] = {SIEVE_OPTION_CHOICE("c", "z", ab, "x"), SIEVE_OPTION_END};
static const SieveOptionSpec t_no_choices[] = {SIEVE_OPTION_CHOICE("c", "a", NULL, "x"), SIEVE_OPTION_END};
static const SieveOptionSpec t_dup[] = {SIEVE_OPTION_INT("pop", "3", 2, 100, "x"), SIEVE_OPTION_INT("pop", "4", 2, 100, "y"),
                                        SIEVE_OPTION_END};
static const SieveOptionSpec t_plugin[] = {SIEVE_OPTION_STRING("plugin", "x", "x"), SIEVE_OPTION_END};
static const SieveOptionSpec t_seed[] = {SIEVE_OPTION_STRING("seed", "x", "x"), SIEVE_OPTION_END};
static const SieveOptionSpec t_name[] = {SIEVE_OPTION_INT("Bad Name<&>", "3", 2, 100, "x"), SIEVE_OPTION_END};
static const SieveOptionSpec t_minmax[] = {SIEVE_OPTION_FLOAT("f", "5", 10, 1, "x"), SIEVE_OPTION_END};
static const SieveOptionSpec t_yaml[] = {SIEVE_OPTION_STRING_LIST("l", "[a, b", "x"), SIEVE_OPTION_END};
static const SieveOptionSpec t_type_id[] = {{"t", (SieveOptionType) 77, "3", 0, 10, NULL, "x", 0, {NULL}}, SIEVE_OPTION_END};
static const SieveOptionSpec t_required[] = {{"r", SIEVE_OPTION_TYPE_STRING, "x", 0, 0, NULL, "x", SIEVE_OPTION_REQUIRED, {NULL}},
                                             SIEVE_OPTION_END};
/* Fine: an evaluator or a space may have a seed of its own. */
static const SieveOptionSpec t_own_seed[] = {SIEVE_OPTION_INT("seed", "0", 0, 1e9, "x"), SIEVE_OPTION_END};

static void
test_option_tables(void)
{
  static const struct {
    const SieveOptionSpec *options;
    SieveComponentKind kind;
    const char *example;
    const char *message; /* NULL: accepted */
  } cases[] = {
      {t_range, SIEVE_KIND_OPTIMIZER, NULL,
       "the default of option 'pop': option 'pop' expects an integer in [2, 100], got 0"},
      {t_type, SIEVE_KIND_OPTIMIZER, NULL, "the default of option 'pop': option 'pop' expects an integer, got 'abc'"},
      {t_choice, SIEVE_KIND_OPTIMIZER, NULL, "the default of option 'c': option 'c' expects one of a, b; got 'z'"},
      {t_no_choices, SIEVE_KIND_OPTIMIZER, NULL, "option 'c': it is a choice without choices"},
      {t_dup, SIEVE_KIND_OPTIMIZER, NULL, "option 'pop': it is declared twice"},
      {t_plugin, SIEVE_KIND_EVALUATOR, NULL, "option 'plugin': the name is reserved: the registry reads 'plugin' itself"},
      {t_seed, SIEVE_KIND_OPTIMIZER, NULL, "option 'seed': the name is reserved: the registry reads 'seed' itself"},
      {t_own_seed, SIEVE_KIND_EVALUATOR, NULL, NULL},
      {t_name, SIEVE_KIND_OPTIMIZER, NULL,
       "option 'Bad Name<&>': its name is not valid (a letter, then letters, digits, '_' and '-')"},
      {t_minmax, SIEVE_KIND_OPTIMIZER, NULL, "option 'f': its range is empty: minimum 10 is above maximum 1"},
      {t_yaml, SIEVE_KIND_OPTIMIZER, NULL, "the default of option 'l':1:"},
      {t_type_id, SIEVE_KIND_OPTIMIZER, NULL, "option 't': its type 77 is not an option type"},
      {t_required, SIEVE_KIND_OPTIMIZER, NULL, "option 'r': it is required but has a default (x)"},
      {NULL, SIEVE_KIND_OPTIMIZER, "{plugin: x, nope: [1", "its example:1:"},
      {NULL, SIEVE_KIND_OPTIMIZER, "- plugin: x", "its example is not a section"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(SieveRegistry) registry = sieve_registry_new();
    g_autofree char *name = g_strdup_printf("case-%u", i);
    gconstpointer klass = cases[i].kind == SIEVE_KIND_EVALUATOR ? (gconstpointer) &test_evaluator_class : &test_class;
    const SieveComponentInfo info = {cases[i].kind, name, "a table under test", cases[i].options, klass,
                                     cases[i].example, {NULL}};
    GError *error = NULL;
    gboolean ok = sieve_registry_add(registry, &info, &error);
    if (cases[i].message == NULL) {
      g_assert_no_error(error);
      g_assert_true(ok);
      continue;
    }
    g_assert_false(ok);
    g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_PLUGIN);
    g_test_message("%s", error->message);
    g_autofree char *want = g_strdup_printf("<builtin>: %s '%s': %s", sieve_component_kind_to_string(cases[i].kind),
                                            name, cases[i].message);
    if (!g_str_has_prefix(error->message, want))
      g_error("case %u: '%s' does not start with '%s'", i, error->message, want);
    g_error_free(error);
    g_assert_null(sieve_registry_lookup(registry, cases[i].kind, name));
  }
}

/* Every plugin built with sieve passes the registry's checks. */
static void
test_shipped_plugins(void)
{
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  g_autoptr(GPtrArray) errors = g_ptr_array_new_with_free_func((GDestroyNotify) g_error_free);
  sieve_registry_load_default(registry, NULL, errors);
  for (guint i = 0; i < errors->len; i++)
    g_test_message("refused: %s", ((GError *) errors->pdata[i])->message);
  g_assert_cmpuint(errors->len, ==, 0);
  g_autoptr(GPtrArray) files = sieve_registry_loaded_files(registry);
  g_assert_cmpuint(files->len, >=, 10);
  guint n = 0;
  for (SieveComponentKind k = SIEVE_KIND_SPACE; k <= SIEVE_KIND_EVALUATOR; k++) {
    g_autoptr(GPtrArray) list = sieve_registry_list(registry, k);
    n += list->len;
  }
  g_test_message("%u plugin files, %u components", files->len, n);
  g_assert_nonnull(sieve_registry_lookup(registry, SIEVE_KIND_OPTIMIZER, "tpe"));
  g_assert_nonnull(sieve_registry_lookup(registry, SIEVE_KIND_SPACE, "nb201"));
}

/* A plugin's ask that appends NULL: a clear error naming it, no critical. */
static void
test_ask_null(void)
{
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  const SieveComponentInfo info = {SIEVE_KIND_OPTIMIZER, "test-null-ask", "appends NULL", NULL, &null_ask_class};
  GError *error = NULL;
  g_assert_true(sieve_registry_add(registry, &info, &error));
  const SieveComponent *c = sieve_registry_lookup(registry, SIEVE_KIND_OPTIMIZER, "test-null-ask");
  g_autoptr(SieveSpace) space = sieve_space_new(NULL, NULL, NULL);
  sieve_space_add_int(space, "layers", 1, 8, FALSE);
  g_autoptr(SieveOptions) options = sieve_options_new(NULL, NULL, NULL, NULL, NULL, &error);
  const char *names[] = {"acc", NULL};
  SieveStudyInfo study = {.seed = 1, .n_objectives = 1, .objective_names = names};
  g_autoptr(SieveOptimizer) o = sieve_optimizer_new(c, space, options, &study, &error);
  g_assert_no_error(error);
  g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_candidate_free);
  g_assert_false(sieve_optimizer_ask(o, 1, out, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED);
  g_assert_cmpstr(error->message, ==, "optimizer 'test-null-ask' appended a NULL candidate (item 1 of its ask)");
  g_error_free(error);
}

/* A space plugin whose create() gets a builder call wrong: the space is
 * refused with the first mistake, naming the plugin (a new-user review: it
 * was a critical, and the study ran on another space than the plugin
 * meant). */
static guint misuse_mode;

static gpointer
misuse_create(SieveSpace *space, const SieveOptions *options, GError **error)
{
  static const char *const twice[] = {"relu", "relu"};
  static const char *const two[] = {"a", "b"};
  switch (misuse_mode) {
  case 0:
    sieve_space_add_int(space, "width", 1, 8, FALSE);
    sieve_space_add_int(space, "width", 1, 4, FALSE);
    break;
  case 1:
    sieve_space_add_int(space, "width", 5, 1, FALSE);
    break;
  case 2:
    sieve_space_add_float(space, "lr", 0, 1, TRUE);
    break;
  case 3:
    sieve_space_add_categorical(space, "act", 2, twice);
    break;
  case 4:
    sieve_space_add_int(space, "big", 0, G_MAXINT64, FALSE);
    break;
  case 5:
    sieve_space_add_int(space, "width", 1, 8, FALSE);
    sieve_space_add_categorical(space, "kind", 2, two);
    sieve_space_set_condition(space, 0, 1, 1); /* on a later parent */
    break;
  case 7:
    sieve_space_add_int(space, "width", 1, 8, FALSE);
    sieve_space_add_categorical(space, "kind", 2, two);
    sieve_space_set_condition(space, 1, 0, 1); /* on a parent that is no categorical */
    break;
  case 6:
    sieve_space_add_float(space, "x", NAN, 1, FALSE);
    break;
  default: /* all well */
    sieve_space_add_int(space, "big", -G_GINT64_CONSTANT(9007199254740992), G_GINT64_CONSTANT(9007199254740992),
                        FALSE);
    sieve_space_add_categorical(space, "kind", 2, two);
    sieve_space_add_float(space, "x", 1e-3, 1, TRUE);
    sieve_space_set_condition(space, 2, 1, 1);
  }
  return NULL;
}

static const SieveSpaceClass misuse_class = {.create = misuse_create};

static void
test_space_builder_misuse(void)
{
  static const char *const messages[] = {
      "decision 'width' declared twice (names must be unique)",
      "int 'width': low 5 is above high 1",
      "float 'lr': a log scale needs low > 0, got 0",
      "categorical 'act': choice 'relu' is listed twice",
      "int 'big': [0, 9223372036854775807] reaches beyond +-2^53",
      "a condition of decision 0 on decision 1: the parent must be declared before the child",
      "float 'x': [nan, 1] is no finite range with low <= high",
      "'kind' is conditioned on 'width', which is not a categorical of at most 64 choices",
  };
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  const SieveComponentInfo info = {SIEVE_KIND_SPACE, "test-misuse", "builder calls gone wrong", NULL, &misuse_class};
  GError *error = NULL;
  g_assert_true(sieve_registry_add(registry, &info, &error));
  const SieveComponent *c = sieve_registry_lookup(registry, SIEVE_KIND_SPACE, "test-misuse");
  g_autoptr(SieveOptions) options = sieve_options_new(NULL, NULL, NULL, NULL, NULL, &error);
  for (misuse_mode = 0; misuse_mode <= G_N_ELEMENTS(messages); misuse_mode++) {
    g_autoptr(SieveSpace) space = sieve_space_new(c, options, &error);
    if (misuse_mode == G_N_ELEMENTS(messages)) {
      g_assert_no_error(error);
      g_assert_cmpuint(sieve_space_n_decisions(space), ==, 3);
      continue;
    }
    g_assert_null(space);
    g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
    g_autofree char *want = g_strdup_printf("space 'test-misuse': its create() declared a decision wrongly: %s",
                                            messages[misuse_mode]);
    if (!g_str_has_prefix(error->message, want))
      g_error("mode %u: got '%s', want '%s...'", misuse_mode, error->message, want);
    g_clear_error(&error);
  }
}

static void
test_not_shared_object(void)
{
  g_autofree char *dir = g_dir_make_tmp("sieve-registry-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "garbage.so", NULL);
  g_assert_true(g_file_set_contents(path, "this is not ELF\n", -1, NULL));
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  GError *error = NULL;
  g_assert_false(sieve_registry_load_file(registry, path, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_PLUGIN);
  g_assert_true(g_str_has_prefix(error->message, path));
  g_assert_nonnull(strstr(error->message, "not a loadable shared object"));
  g_error_free(error);
  g_unlink(path);
  g_rmdir(dir);
}

/* A folder mixing good and bad plugins: every bad one is reported, the good
 * one loads anyway. */
static void
test_load_dir(void)
{
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  g_autoptr(GPtrArray) errors = g_ptr_array_new_with_free_func((GDestroyNotify) g_error_free);
  guint loaded = sieve_registry_load_dir(registry, TEST_PLUGIN_DIR, FALSE, errors);
  /* Files load in name order: test-duplicate.so comes before test-good.so,
   * so it takes 'test-good' and the good plugin is the one refused as a
   * duplicate; abi-major, abi-minor, bad-options, init-fails,
   * missing-method and no-descriptor are refused for their own reasons. */
  g_assert_cmpuint(loaded, ==, 1);
  g_assert_cmpuint(errors->len, ==, 7);
  const SieveComponent *fresh = sieve_registry_lookup(registry, SIEVE_KIND_OPTIMIZER, "test-fresh");
  const SieveComponent *good = sieve_registry_lookup(registry, SIEVE_KIND_OPTIMIZER, "test-good");
  g_assert_nonnull(fresh);
  g_assert_nonnull(good);
  g_assert_cmpstr(sieve_component_get_plugin_name(good), ==, "test-duplicate");
  gboolean saw_good_refused = FALSE;
  for (guint i = 0; i < errors->len; i++) {
    GError *e = errors->pdata[i];
    g_test_message("refused: %s", e->message);
    g_assert_true(g_str_has_prefix(e->message, TEST_PLUGIN_DIR));
    if (strstr(e->message, "test-good.so: optimizer 'test-good' is already registered by"))
      saw_good_refused = TRUE;
  }
  g_assert_true(saw_good_refused);
}

/* A user's plugin (a path after the program's own) that registers a bundled
 * component's name is refused, naming its file: it replaced the bundled
 * 'random' for every config, a plugin-author review found. */
static void
test_bundled_names_kept(void)
{
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  g_autoptr(GPtrArray) errors = g_ptr_array_new_with_free_func((GDestroyNotify) g_error_free);
  const char *const paths[] = {TEST_SHADOW_DIR, NULL};
  sieve_registry_load_default(registry, paths, errors);
  const SieveComponent *random = sieve_registry_lookup(registry, SIEVE_KIND_OPTIMIZER, "random");
  g_assert_nonnull(random);
  g_assert_cmpstr(sieve_component_get_plugin_name(random), !=, "test-shadow");
  gboolean refused = FALSE;
  for (guint i = 0; i < errors->len; i++) {
    GError *e = errors->pdata[i];
    refused |= g_str_has_prefix(e->message, TEST_SHADOW_DIR "/test-shadow.so: optimizer 'random' is already "
                                            "registered by ");
  }
  g_assert_true(refused);
}

static void
test_require_suggests(void)
{
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  g_autofree char *good = plugin_path("good");
  g_assert_true(sieve_registry_load_file(registry, good, NULL));
  g_autoptr(SieveNode) where = sieve_node_new_scalar("test-godo", FALSE, "exp.yaml", 4, 20);
  GError *error = NULL;
  g_assert_null(sieve_registry_require(registry, SIEVE_KIND_OPTIMIZER, "test-godo", where, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
  g_assert_cmpstr(error->message, ==,
                  "exp.yaml:4:20: no optimizer plugin named 'test-godo' (did you mean 'test-good'?); available: test-good");
  g_error_free(error);
}

static void
test_plugin_path_env(void)
{
  /* SIEVE_PLUGIN_PATH entries may be files; a missing entry is reported. */
  g_autofree char *good = plugin_path("good");
  g_autofree char *env = g_strdup_printf("%s:/nonexistent/sieve-plugins", good);
  g_setenv("SIEVE_PLUGIN_PATH", env, TRUE);
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  g_autoptr(GPtrArray) errors = g_ptr_array_new_with_free_func((GDestroyNotify) g_error_free);
  sieve_registry_load_default(registry, NULL, errors);
  g_unsetenv("SIEVE_PLUGIN_PATH");
  g_assert_nonnull(sieve_registry_lookup(registry, SIEVE_KIND_OPTIMIZER, "test-good"));
  g_assert_cmpuint(errors->len, ==, 1);
  g_assert_cmpstr(((GError *) errors->pdata[0])->message, ==, "/nonexistent/sieve-plugins: no such plugin file or folder");
  /* Uninstalled, the build tree's own plugins come along. */
  g_assert_nonnull(sieve_registry_lookup(registry, SIEVE_KIND_OPTIMIZER, "random"));
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/registry/good", test_good);
  g_test_add_func("/registry/abi-major", test_abi_major);
  g_test_add_func("/registry/abi-minor", test_abi_minor);
  g_test_add_func("/registry/no-descriptor", test_no_descriptor);
  g_test_add_func("/registry/duplicate", test_duplicate);
  g_test_add_func("/registry/missing-method", test_missing_method);
  g_test_add_func("/registry/init-fails", test_init_fails);
  g_test_add_func("/registry/bad-options-plugin", test_bad_options_plugin);
  g_test_add_func("/registry/option-tables", test_option_tables);
  g_test_add_func("/registry/shipped-plugins", test_shipped_plugins);
  g_test_add_func("/registry/ask-null", test_ask_null);
  g_test_add_func("/registry/space-builder-misuse", test_space_builder_misuse);
  g_test_add_func("/registry/bundled-names-kept", test_bundled_names_kept);
  g_test_add_func("/registry/not-shared-object", test_not_shared_object);
  g_test_add_func("/registry/load-dir", test_load_dir);
  g_test_add_func("/registry/require-suggests", test_require_suggests);
  g_test_add_func("/registry/plugin-path-env", test_plugin_path_env);
  return g_test_run();
}
