#include <math.h>

#include <glib/gstdio.h>

#include "test-support.h"

#include "sieve-config.h"

SieveRegistry *
test_registry_load(void)
{
  const char *build_root = g_getenv("SIEVE_BUILD_ROOT");
  g_autofree char *plugin_dir = g_build_filename(build_root ? build_root : SIEVE_BUILD_ROOT, "plugins", NULL);
  SieveRegistry *registry = sieve_registry_new();
  g_autoptr(GPtrArray) refused = g_ptr_array_new_with_free_func((GDestroyNotify)g_error_free);
  sieve_registry_load_dir(registry, plugin_dir, TRUE, refused);
  for (guint i = 0; i < refused->len; i++)
    g_test_message("plugin refused: %s", ((GError *)refused->pdata[i])->message);
  return registry;
}

const SieveComponent *
test_component(SieveRegistry *registry, SieveComponentKind kind, const char *name)
{
  const SieveComponent *c = sieve_registry_lookup(registry, kind, name);
  if (c == NULL)
    g_error("plugin component %s '%s' is not in the build tree", sieve_component_kind_to_string(kind), name);
  return c;
}

SieveOptions *
test_options_from(const SieveComponent *c, const char *yaml, const char *base_dir, GError **error)
{
  g_autoptr(SieveNode) map = NULL;
  if (yaml != NULL) {
    GError *local = NULL;
    map = sieve_node_parse_string(yaml, -1, "test.yaml", &local);
    g_assert_no_error(local);
  }
  static const char *const reserved[] = {"plugin", NULL};
  return sieve_options_new(sieve_component_get_info(c)->options, map, reserved, base_dir, "test", error);
}

SieveSpace *
test_space_try(SieveRegistry *registry, const char *name, const char *yaml, const char *base_dir, GError **error)
{
  const SieveComponent *c = test_component(registry, SIEVE_KIND_SPACE, name);
  g_autoptr(SieveOptions) options = test_options_from(c, yaml, base_dir, error);
  if (options == NULL)
    return NULL;
  return sieve_space_new(c, options, error);
}

SieveSpace *
test_space_new(SieveRegistry *registry, const char *name, const char *yaml, const char *base_dir)
{
  GError *error = NULL;
  SieveSpace *space = test_space_try(registry, name, yaml, base_dir, &error);
  g_assert_no_error(error);
  g_assert_nonnull(space);
  return space;
}

SieveGraph *
test_space_net(const SieveSpace *space, const char *arch, gboolean loss)
{
  GError *error = NULL;
  g_autoptr(SieveGenotype) genotype = sieve_space_parse(space, arch, &error);
  g_assert_no_error(error);
  SieveGraph *graph = sieve_space_build(space, genotype, &error);
  g_assert_no_error(error);
  if (loss) {
    sieve_graph_add_loss(graph, 0.1, &error);
    g_assert_no_error(error);
  }
  return graph;
}

SieveEvaluator *
test_evaluator_try(SieveRegistry *registry, const char *name, const SieveSpace *space, const char *yaml,
                   const char *base_dir, GError **error)
{
  const SieveComponent *c = test_component(registry, SIEVE_KIND_EVALUATOR, name);
  g_autoptr(SieveOptions) options = test_options_from(c, yaml, base_dir, error);
  if (options == NULL)
    return NULL;
  return sieve_evaluator_new(c, space, options, error);
}

SieveEvaluator *
test_evaluator_new(SieveRegistry *registry, const char *name, const SieveSpace *space, const char *yaml,
                   const char *base_dir)
{
  GError *error = NULL;
  SieveEvaluator *e = test_evaluator_try(registry, name, space, yaml, base_dir, &error);
  g_assert_no_error(error);
  g_assert_nonnull(e);
  return e;
}

double
test_metric(const SieveResult *result, const char *name)
{
  double v = NAN;
  if (!sieve_result_get_metric(result, name, &v))
    g_error("result lacks metric '%s'", name);
  return v;
}

char *
test_nb201_table(void)
{
  const char *root = g_getenv("SIEVE_SOURCE_ROOT");
  g_assert_nonnull(root);
  g_autofree char *path = g_build_filename(root, "..", "shared", "data", "nb201", "nb201.csv", NULL);
  if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
    g_free(path);
    path = g_build_filename(root, "data", "nb201", "nb201.csv", NULL);
  }
  return g_canonicalize_filename(path, NULL);
}

void
test_remove_dir(const char *dir)
{
  GDir *d = g_dir_open(dir, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name(d)) != NULL) {
    g_autofree char *p = g_build_filename(dir, name, NULL);
    g_unlink(p);
  }
  if (d)
    g_dir_close(d);
  g_rmdir(dir);
}

void
test_component_example(SieveRegistry *registry, const SieveComponent *c)
{
  const SieveComponentInfo *info = sieve_component_get_info(c);
  const char *root = g_getenv("SIEVE_SOURCE_ROOT");
  g_assert_nonnull(root);
  g_autofree char *fallback = g_strdup_printf("{plugin: %s}", info->name);
  const char *example = info->example ? info->example : fallback;
  const char *kind = sieve_component_kind_to_string(info->kind);
  GError *error = NULL;
  /* From the root, as `sieve run` from there: compose resolves its parts'
   * paths against the experiment file's folder, here the current one. */
  g_autofree char *cwd = g_get_current_dir();
  g_assert_cmpint(g_chdir(root), ==, 0);
  g_autoptr(SieveNode) map = sieve_node_parse_string(example, -1, "example", &error);
  g_autoptr(SieveOptions) options = NULL;
  if (map != NULL) {
    const SieveNode *plugin = sieve_node_lookup(map, "plugin");
    if (plugin == NULL || g_strcmp0(sieve_node_text(plugin), info->name) != 0)
      g_error("%s %s: the example %s does not name plugin %s", kind, info->name, example, info->name);
    static const char *const plain[] = {"plugin", NULL}, *const optimizer[] = {"plugin", "seed", NULL};
    options = sieve_options_new(info->options, map, info->kind == SIEVE_KIND_OPTIMIZER ? optimizer : plain, root,
                                kind, &error);
  }
  gboolean ok = options != NULL;
  if (ok && info->kind == SIEVE_KIND_SPACE) {
    g_autoptr(SieveSpace) space = sieve_space_new(c, options, &error);
    ok = space != NULL;
  } else if (ok && info->kind == SIEVE_KIND_OPTIMIZER) {
    g_autoptr(SieveSpace) nb201 = test_space_new(registry, "nb201", NULL, root);
    static const SieveFidelity budget = {"budget", 1, 27, TRUE, {NULL}};
    static const char *const names[] = {"value", NULL};
    SieveStudyInfo study = {.seed = 1, .n_objectives = 1, .objective_names = names, .fidelity = &budget};
    g_autoptr(SieveOptimizer) optimizer = sieve_optimizer_new(c, nb201, options, &study, &error);
    ok = optimizer != NULL;
  } else if (ok) {
    g_autoptr(SieveSpace) nb201 = test_space_new(registry, "nb201", NULL, root);
    g_autoptr(SieveEvaluator) on_nb201 = sieve_evaluator_new(c, nb201, options, &error);
    ok = on_nb201 != NULL;
    /* Then nb201 shaped for Fashion-MNIST (as `sieve train` shapes it), and
     * a space of float decisions x1, x2. */
    static const struct {
      const char *name, *yaml;
    } others[] = {{"nb201", "{in_channels: 1, size: 28}"}, {"hpo", "{file: search_spaces/branin.yaml}"}};
    for (guint i = 0; i < G_N_ELEMENTS(others) && !ok; i++) {
      g_test_message("%s %s refuses the last space (%s): trying %s %s", kind, info->name, error->message,
                     others[i].name, others[i].yaml);
      g_clear_error(&error);
      g_autoptr(SieveSpace) other = test_space_new(registry, others[i].name, others[i].yaml, root);
      g_autoptr(SieveEvaluator) on_other = sieve_evaluator_new(c, other, options, &error);
      ok = on_other != NULL;
    }
  }
  g_assert_cmpint(g_chdir(cwd), ==, 0);
  if (!ok)
    g_error("%s %s: its example %s does not work: %s", kind, info->name, example, error->message);
}
