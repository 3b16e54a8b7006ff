/* What the C tests share to reach the plugins of the build tree, as sieve
 * itself loads them. */
#pragma once

#include <sieve/sieve.h>

/* A registry holding every plugin built under $SIEVE_BUILD_ROOT/plugins
 * (the build root compiled in when the variable is unset); each plugin the
 * loader refuses is logged as a test message.  (transfer full) */
SieveRegistry *test_registry_load(void);

/* registry's component of that kind and name; a missing one aborts the test
 * program, naming it.  (transfer none) */
const SieveComponent *test_component(SieveRegistry *registry, SieveComponentKind kind, const char *name);

/* Options of c from YAML text (NULL: none written), parsed as file
 * "test.yaml" so that errors read test.yaml:LINE:COL; the key "plugin" is
 * reserved as in an experiment file; relative paths resolve against
 * base_dir (nullable).  NULL with error set when they do not validate.
 * (transfer full) */
SieveOptions *test_options_from(const SieveComponent *c, const char *yaml, const char *base_dir, GError **error);

/* A space of registry's plugin name with options from YAML text, as
 * test_options_from reads them; NULL with error set when the options or
 * the space refuse.  (transfer full) */
SieveSpace *test_space_try(SieveRegistry *registry, const char *name, const char *yaml, const char *base_dir,
                           GError **error);
/* The same, where any error fails the test.  (transfer full) */
SieveSpace *test_space_new(SieveRegistry *registry, const char *name, const char *yaml, const char *base_dir);
/* The network space builds of the genotype text arch, with the softmax
 * cross-entropy appended (label smoothing 0.1) when loss; any error fails
 * the test.  (transfer full) */
SieveGraph *test_space_net(const SieveSpace *space, const char *arch, gboolean loss);

/* An evaluator of registry's plugin name for space, options from YAML text
 * as test_options_from reads them; NULL with error set when they or the
 * plugin refuse.  (transfer full) */
SieveEvaluator *test_evaluator_try(SieveRegistry *registry, const char *name, const SieveSpace *space,
                                   const char *yaml, const char *base_dir, GError **error);
/* The same, where any error fails the test.  (transfer full) */
SieveEvaluator *test_evaluator_new(SieveRegistry *registry, const char *name, const SieveSpace *space,
                                   const char *yaml, const char *base_dir);

/* c created from the example `sieve plugins --describe` shows
 * (SieveComponentInfo.example, else {plugin: NAME}) with its paths relative
 * to $SIEVE_SOURCE_ROOT: a space as it is, an optimizer on nb201 with a
 * fidelity (budget, 1 to 27), an evaluator on the first that fits it of
 * nb201, nb201 for one-channel 28x28 images and search_spaces/branin.yaml.  A refusal fails the test,
 * naming the component, its example and the error. */
void test_component_example(SieveRegistry *registry, const SieveComponent *c);

/* result's metric name; a missing one fails the test, naming it. */
double test_metric(const SieveResult *result, const char *name);

/* The NAS-Bench-201 table (nb201.csv) as an absolute path: ../shared/data
 * beside the source tree ($SIEVE_SOURCE_ROOT), else its data/.  (transfer full) */
char *test_nb201_table(void);
/* Removes dir and the files the tests left in it (one level). */
void test_remove_dir(const char *dir);
