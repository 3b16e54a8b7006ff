/* bench-optimizers: runs one sieve optimizer through the library API for
 * many seeds and prints, per seed, one JSON line with its progress curve
 * and its own time per ask+tell.  bench/compare.py drives it beside
 * Optuna (not part of `meson test`).
 *
 *   bench-optimizers --target nb201 --table nb201.csv --optimizer tpe \
 *       [--options '{n_startup: 10}'] --seeds 20 --evals 300
 *   bench-optimizers --target branin --optimizer tpe --seeds 20 --evals 200
 *
 * nb201: searches cifar10_valid_acc; the curve is the cifar10_test_acc of
 * the best-by-validation architecture after each distinct evaluation
 * (a genotype evaluated before in the run is answered from the run's own
 * cache, told to the optimizer as CACHED, and not counted: the engine's
 * dedupe stage does the same once it exists).  Functions: the curve is the
 * regret of the best value so far, every proposal counted (floats do not
 * repeat).
 *
 * Timing: wall time inside sieve_optimizer_ask() and
 * sieve_optimizer_tell() only (evaluation and bookkeeping excluded).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <sieve/sieve.h>

#include "sieve-config.h"

typedef struct {
  double valid, test;
} Row;

static GHashTable *
load_table(const char *path)
{
  g_autofree char *text = NULL;
  GError *error = NULL;
  if (!g_file_get_contents(path, &text, NULL, &error))
    g_error("%s", error->message);
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  g_auto(GStrv) header = g_strsplit(lines[0], ",", -1);
  gint arch = -1, valid = -1, test = -1;
  for (gint k = 0; header[k]; k++) {
    if (strcmp(header[k], "arch_str") == 0)
      arch = k;
    else if (strcmp(header[k], "cifar10_valid_acc") == 0)
      valid = k;
    else if (strcmp(header[k], "cifar10_test_acc") == 0)
      test = k;
  }
  if (arch < 0 || valid < 0 || test < 0)
    g_error("%s lacks arch_str, cifar10_valid_acc or cifar10_test_acc", path);
  GHashTable *table = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  for (guint i = 1; lines[i] && *lines[i]; i++) {
    g_auto(GStrv) f = g_strsplit(lines[i], ",", -1);
    Row *row = g_new(Row, 1);
    row->valid = g_ascii_strtod(f[valid], NULL);
    row->test = g_ascii_strtod(f[test], NULL);
    g_hash_table_insert(table, g_strdup(f[arch]), row);
  }
  return table;
}

static SieveOptions *
options_from(const SieveComponent *c, const char *yaml, const char *where)
{
  g_autoptr(SieveNode) map = NULL;
  GError *error = NULL;
  if (yaml != NULL && *yaml) {
    map = sieve_node_parse_string(yaml, -1, where, &error);
    if (map == NULL)
      g_error("%s", error->message);
  }
  static const char *const reserved[] = {"plugin", NULL};
  SieveOptions *o = sieve_options_new(sieve_component_get_info(c)->options, map, reserved, SIEVE_SOURCE_ROOT,
                                      where, &error);
  if (o == NULL)
    g_error("%s", error->message);
  return o;
}

int
main(int argc, char **argv)
{
  g_autofree char *target = g_strdup("nb201"), *table_path = NULL, *optimizer = NULL, *opts = NULL;
  gint seeds = 20, evals = 300, first_seed = 0;
  GOptionEntry entries[] = {
      {"target", 0, 0, G_OPTION_ARG_STRING, &target, "nb201, branin, hartmann6 or rosenbrock", "T"},
      {"table", 0, 0, G_OPTION_ARG_FILENAME, &table_path, "the NB201 CSV", "PATH"},
      {"optimizer", 0, 0, G_OPTION_ARG_STRING, &optimizer, "optimizer component", "NAME"},
      {"options", 0, 0, G_OPTION_ARG_STRING, &opts, "its options as a YAML map", "YAML"},
      {"seeds", 0, 0, G_OPTION_ARG_INT, &seeds, "seeds 0..N-1 (from --first-seed)", "N"},
      {"first-seed", 0, 0, G_OPTION_ARG_INT, &first_seed, "first seed", "S"},
      {"evals", 0, 0, G_OPTION_ARG_INT, &evals, "counted evaluations per seed", "N"},
      {NULL},
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("- benchmark a sieve optimizer");
  g_option_context_add_main_entries(ctx, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &error) || optimizer == NULL) {
    fprintf(stderr, "bench-optimizers: %s\n", error ? error->message : "--optimizer is required");
    return 2;
  }
  gboolean nb201 = strcmp(target, "nb201") == 0;
  g_autoptr(GHashTable) table = nb201 ? load_table(table_path) : NULL;

  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  g_autofree char *plugin_dir = g_build_filename(SIEVE_BUILD_ROOT, "plugins", NULL);
  g_autoptr(GPtrArray) refused = g_ptr_array_new_with_free_func((GDestroyNotify) g_error_free);
  sieve_registry_load_dir(registry, plugin_dir, TRUE, refused);

  const SieveComponent *sc = sieve_registry_lookup(registry, SIEVE_KIND_SPACE, nb201 ? "nb201" : "hpo");
  g_autofree char *space_yaml = NULL;
  if (!nb201)
    space_yaml = g_strdup_printf("{file: search_spaces/%s.yaml}",
                                 strcmp(target, "rosenbrock") == 0 ? "rosenbrock4" : target);
  g_autoptr(SieveOptions) sopts = options_from(sc, space_yaml, "space");
  g_autoptr(SieveSpace) space = sieve_space_new(sc, sopts, &error);
  if (space == NULL)
    g_error("%s", error->message);
  g_autoptr(SieveEvaluator) evaluator = NULL;
  if (!nb201) {
    const SieveComponent *ec = sieve_registry_lookup(registry, SIEVE_KIND_EVALUATOR, "function");
    g_autofree char *eyaml = g_strdup_printf("{function: %s%s}", target,
                                             strcmp(target, "rosenbrock") == 0 ? ", dimension: 4" : "");
    g_autoptr(SieveOptions) eopts = options_from(ec, eyaml, "evaluator");
    evaluator = sieve_evaluator_new(ec, space, eopts, &error);
    if (evaluator == NULL)
      g_error("%s", error->message);
  }
  const SieveComponent *oc = sieve_registry_lookup(registry, SIEVE_KIND_OPTIMIZER, optimizer);
  if (oc == NULL)
    g_error("no optimizer '%s'", optimizer);
  g_autoptr(SieveOptions) oopts = options_from(oc, opts, "optimizer");
  static const char *const names[] = {"objective", NULL};

  for (gint seed = first_seed; seed < first_seed + seeds; seed++) {
    SieveStudyInfo study = {.seed = (guint64) seed, .n_objectives = 1, .objective_names = names};
    g_autoptr(SieveOptimizer) opt = sieve_optimizer_new(oc, space, oopts, &study, &error);
    if (opt == NULL)
      g_error("%s", error->message);
    g_autoptr(GHashTable) evaluated = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    GString *curve = g_string_new("[");
    double best = -INFINITY, best_report = NAN;
    gint64 spent = 0, calls = 0, proposals = 0, repeats = 0;
    gint counted = 0;
    while (counted < evals && proposals < (gint64) evals * 50) {
      g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_candidate_free);
      gint64 t0 = g_get_monotonic_time();
      gboolean ok = sieve_optimizer_ask(opt, 1, out, &error);
      spent += g_get_monotonic_time() - t0;
      if (!ok)
        g_error("%s", error->message);
      if (out->len == 0)
        break;
      SieveCandidate *c = out->pdata[0];
      sieve_candidate_set_trial(c, proposals++);
      const char *text = sieve_candidate_get_text(c);
      g_autoptr(SieveResult) result = sieve_result_new();
      double objective, report;
      double *cached = nb201 ? g_hash_table_lookup(evaluated, text) : NULL;
      if (cached != NULL) {
        objective = cached[0];
        sieve_result_set_status(result, SIEVE_STATUS_CACHED);
        repeats++;
      } else if (nb201) {
        const Row *row = g_hash_table_lookup(table, text);
        if (row == NULL)
          g_error("'%s' is not in the table", text);
        objective = row->valid;
        report = row->test;
        double *v = g_new(double, 1);
        *v = objective;
        g_hash_table_insert(evaluated, g_strdup(text), v);
      } else {
        g_autoptr(SieveResult) r = sieve_evaluator_evaluate(evaluator, c, &error);
        if (r == NULL)
          g_error("%s", error->message);
        double value, regret;
        sieve_result_get_metric(r, "value", &value);
        sieve_result_get_metric(r, "regret", &regret);
        objective = -value;
        report = regret;
      }
      sieve_result_set_metric(result, "objective", objective);
      t0 = g_get_monotonic_time();
      ok = sieve_optimizer_tell(opt, c, result, &objective, &error);
      spent += g_get_monotonic_time() - t0;
      calls++;
      if (!ok)
        g_error("%s", error->message);
      if (cached != NULL)
        continue;
      counted++;
      if (objective > best) {
        best = objective;
        best_report = report;
      }
      g_string_append_printf(curve, "%s%.6g", counted > 1 ? "," : "", best_report);
    }
    g_string_append(curve, "]");
    printf("{\"optimizer\": \"%s\", \"options\": \"%s\", \"target\": \"%s\", \"seed\": %d, \"evaluations\": %d, "
           "\"proposals\": %" G_GINT64_FORMAT ", \"repeats\": %" G_GINT64_FORMAT ", \"us_per_ask_tell\": %.3f, "
           "\"curve\": %s}\n",
           optimizer, opts ? opts : "", target, seed, counted, proposals, repeats,
           calls ? (double) spent / calls : 0.0, curve->str);
    fflush(stdout);
    g_string_free(curve, TRUE);
  }
  return 0;
}
