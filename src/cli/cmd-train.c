/* sieve train --space nb201 --arch ARCH [--set space.C=8] [--dataset ...] [--epochs 1] ...
 *
 * Trains one candidate with the `train` evaluator and prints a JSON summary.
 * The flags become an experiment in memory (space and evaluator sections),
 * so --set reaches every option of both with the same checks and located
 * messages as an experiment file. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli-private.h"
#include "core/core-private.h"

static void
on_report(gpointer user_data, const SieveCandidate *candidate, const char *text, double fraction)
{
  gboolean tty = GPOINTER_TO_INT(user_data);
  static gint64 last;
  gint64 now = g_get_monotonic_time();
  if (tty) {
    fprintf(stderr, "\r\033[K%s", text);
  } else if (now - last > 5000000 || fraction >= 1.0) {
    fprintf(stderr, "%s\n", text);
    last = now;
  }
  fflush(stderr);
}

/* map[key] = text, a scalar that names the flag it came from ("--dataset
 * foo"), or the command when flag is NULL.  Line 0: a flag has no line
 * and column, its messages read "--dataset foo: ...". */
static void
set_value(SieveNode *map, const char *key, const char *text, gboolean quoted, const char *flag)
{
  g_autofree char *origin = flag ? g_strdup_printf("%s %s", flag, text) : g_strdup("sieve train");
  sieve_node_map_set(map, key, sieve_node_new_scalar(text, quoted, origin, 0, 0));
}

/* A flag and a --set of the same option would disagree with no way to
 * tell which one counts: refused, naming both. */
static gboolean
check_not_set_twice(const char *section, const char *key, const char *flag, const char *text, char **overrides,
                    GError **error)
{
  g_autofree char *prefix = g_strdup_printf("%s.%s=", section, key);
  for (guint i = 0; text && overrides && overrides[i]; i++)
    if (g_str_has_prefix(overrides[i], prefix)) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                  "%s %s and --set %s both set %s.%s: give one of them", flag, text, overrides[i], section, key);
      return FALSE;
    }
  return TRUE;
}

int
sieve_cmd_train(int argc, char **argv)
{
  g_autofree char *space = NULL, *arch = NULL, *dataset = NULL, *data_dir = NULL, *device = NULL;
  /* The numbers as given: the option tables check them (range, type) as
   * they would in an experiment file, naming the flag; NULL: not given. */
  g_autofree char *epochs = NULL, *lr = NULL, *batch = NULL, *threads = NULL, *seed = NULL, *validation = NULL,
                  *limit = NULL;
  gboolean dump = FALSE, quiet = FALSE;
  g_auto(GStrv) overrides = NULL;
  GOptionEntry entries[] = {
      {"space", 0, 0, G_OPTION_ARG_STRING, &space, "architecture space plugin (default nb201)", "NAME"},
      {"arch", 'a', 0, G_OPTION_ARG_STRING, &arch, "the candidate, in the space's text form", "TEXT"},
      {"dataset", 'd', 0, G_OPTION_ARG_STRING, &dataset, "fashion-mnist (default), mnist, cifar10, cifar100, csv:PATH",
       "NAME"},
      {"data-dir", 0, 0, G_OPTION_ARG_FILENAME, &data_dir, "where the dataset's files are", "DIR"},
      {"epochs", 'e', 0, G_OPTION_ARG_STRING, &epochs, "epochs (fractional allowed; default 1)", "E"},
      {"batch", 'b', 0, G_OPTION_ARG_STRING, &batch, "batch size (default 128)", "N"},
      {"lr", 0, 0, G_OPTION_ARG_STRING, &lr, "peak learning rate (default 0.1)", "LR"},
      {"threads", 't', 0, G_OPTION_ARG_STRING, &threads, "threads (default: every core)", "N"},
      {"seed", 0, 0, G_OPTION_ARG_STRING, &seed, "seed of initialisation and data order (default 0)", "S"},
      {"validation", 0, 0, G_OPTION_ARG_STRING, &validation, "training examples held out (default 5000)", "N"},
      {"train-limit", 0, 0, G_OPTION_ARG_STRING, &limit, "train on at most N examples (default all)", "N"},
      {"device", 0, 0, G_OPTION_ARG_STRING, &device,
       "cpu (default), cuda (a GPU; an error when none) or auto (a GPU when one is present, else cpu)", "DEVICE"},
      {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &overrides,
       "set an option of the space or evaluator, e.g. --set space.C=8 --set evaluator.weight_decay=3e-4",
       "KEY=VALUE"},
      {"dump", 0, 0, G_OPTION_ARG_NONE, &dump, "print the network's graph to stderr first", NULL},
      {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "no progress on stderr", NULL},
      {NULL},
  };
  g_autoptr(GOptionContext) context = g_option_context_new("- train one candidate and print a JSON summary");
  g_option_context_set_description(
      context, "Example:\n  sieve train --space nb201 --set space.C=8 --set space.N=1 --set space.in_channels=1 \\\n"
               "    --set space.size=28 --arch '|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|"
               "nor_conv_3x3~1|skip_connect~2|' --dataset fashion-mnist --epochs 1\n"
               "For nb201 on a one-channel 28x28 dataset, in_channels and size are set for you when not given;\n"
               "a csv: dataset has no test split, so test_acc is left out (evaluator.test=false).");
  g_option_context_add_main_entries(context, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(context, &argc, &argv, &error))
    return sieve_cli_fail(error);
  if (arch == NULL || argc != 1) {
    fprintf(stderr, "sieve train: expected --arch TEXT and no other arguments (see 'sieve train --help')\n");
    return SIEVE_EXIT_USAGE;
  }
  const char *ds = dataset ? dataset : "fashion-mnist";
  GError *twice = NULL;
  if (!check_not_set_twice("space", "plugin", "--space", space, overrides, &twice) ||
      !check_not_set_twice("evaluator", "dataset", "--dataset", dataset, overrides, &twice) ||
      !check_not_set_twice("evaluator", "data_dir", "--data-dir", data_dir, overrides, &twice) ||
      !check_not_set_twice("evaluator", "device", "--device", device, overrides, &twice))
    return sieve_cli_fail(twice);
  /* The experiment the flags describe, built as a tree: each value a
   * scalar node that names its flag, so that a bad one is reported as
   * "--dataset foo: ..." and no text can change the structure. */
  g_autoptr(SieveNode) root = sieve_node_new_map("sieve train", 0, 0);
  set_value(root, "name", "train", TRUE, NULL);
  SieveNode *space_map = sieve_node_new_map("sieve train", 0, 0);
  sieve_node_map_set(root, "space", space_map);
  set_value(space_map, "plugin", space ? space : "nb201", TRUE, "--space");
  for (guint i = 0; overrides && overrides[i]; i++)
    if (g_str_has_prefix(overrides[i], "evaluator.dataset="))
      ds = overrides[i] + strlen("evaluator.dataset="); /* the one the evaluator gets */
  gboolean gray = g_str_equal(ds, "fashion-mnist") || g_str_equal(ds, "mnist");
  gboolean user_in = FALSE, user_size = FALSE;
  for (guint i = 0; overrides && overrides[i]; i++) {
    user_in |= g_str_has_prefix(overrides[i], "space.in_channels=");
    user_size |= g_str_has_prefix(overrides[i], "space.size=");
  }
  if (gray && (space == NULL || g_str_equal(space, "nb201"))) {
    if (!user_in)
      set_value(space_map, "in_channels", "1", FALSE, "--dataset");
    if (!user_size)
      set_value(space_map, "size", "28", FALSE, "--dataset");
  }
  set_value(root, "optimizer", "random", TRUE, NULL);
  SieveNode *ev_map = sieve_node_new_map("sieve train", 0, 0);
  sieve_node_map_set(root, "evaluator", ev_map);
  set_value(ev_map, "plugin", "train", TRUE, NULL);
  if (dataset)
    set_value(ev_map, "dataset", ds, TRUE, "--dataset");
  else
    sieve_node_map_set(ev_map, "dataset", sieve_node_new_scalar(ds, TRUE, "sieve train's default dataset", 0, 0));
  if (data_dir)
    set_value(ev_map, "data_dir", data_dir, TRUE, "--data-dir");
  if (device)
    set_value(ev_map, "device", device, TRUE, "--device");
  const struct {
    const char *key, *text, *flag;
  } numbers[] = {{"epochs", epochs, "--epochs"},      {"lr", lr, "--lr"},
                 {"batch_size", batch, "--batch"},    {"threads", threads, "--threads"},
                 {"seed", seed, "--seed"},            {"validation", validation, "--validation"},
                 {"train_limit", limit, "--train-limit"}};
  /* A CSV file has no test split (sieve_train_data_load): none is asked of
   * it unless a --set does. */
  if (g_str_has_prefix(ds, "csv:"))
    sieve_node_map_set(ev_map, "test", sieve_node_new_scalar("false", FALSE, "sieve train (csv: has no test split)", 0, 0));
  for (guint i = 0; i < G_N_ELEMENTS(numbers); i++) {
    if (!check_not_set_twice("evaluator", numbers[i].key, numbers[i].flag, numbers[i].text, overrides, &error))
      return sieve_cli_fail(error);
    if (numbers[i].text != NULL)
      set_value(ev_map, numbers[i].key, numbers[i].text, FALSE, numbers[i].flag);
  }
  SieveNode *objective = sieve_node_new_map("sieve train", 0, 0);
  sieve_node_map_set(root, "objective", objective);
  set_value(objective, "metric", "val_acc", TRUE, NULL);
  set_value(objective, "direction", "maximize", TRUE, NULL);
  SieveNode *budget = sieve_node_new_map("sieve train", 0, 0);
  sieve_node_map_set(root, "budget", budget);
  set_value(budget, "evaluations", "1", FALSE, NULL);

  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  g_autoptr(GPtrArray) refused = g_ptr_array_new_with_free_func((GDestroyNotify)g_error_free);
  sieve_registry_load_default(registry, NULL, refused);
  g_autofree char *cwd = g_get_current_dir();
  g_autoptr(SieveExperiment) exp = sieve_experiment_parse_tree(root, "sieve train", cwd,
                                                               (const char *const *)overrides, registry, refused, &error);
  sieve_cli_warn_refused(refused);
  if (exp == NULL || !sieve_experiment_resolve(exp, registry, &error))
    return sieve_cli_fail(error);
  g_autoptr(SieveSpace) sp = sieve_space_new(exp->space.component, exp->space.options, &error);
  if (sp == NULL)
    return sieve_cli_fail(error);
  g_autoptr(SieveGenotype) g = sieve_space_parse(sp, arch, &error);
  if (g == NULL)
    return sieve_cli_fail(error);
  g_autoptr(SieveGraph) net = sieve_space_build(sp, g, &error);
  if (net == NULL)
    return sieve_cli_fail(error);
  if (dump) {
    g_autofree char *d = sieve_graph_dump(net);
    fputs(d, stderr);
  }
  g_autoptr(SieveEvaluator) ev = sieve_evaluator_new(exp->evaluator.component, sp, exp->evaluator.options, &error);
  if (ev == NULL)
    return sieve_cli_fail(error);
  g_autoptr(SieveCandidate) cand = sieve_candidate_new(g_steal_pointer(&g), NAN);
  gboolean tty = isatty(STDERR_FILENO);
  if (!quiet)
    sieve_candidate_set_report_func(cand, on_report, GINT_TO_POINTER(tty));
  g_autoptr(SieveResult) r = sieve_evaluator_evaluate(ev, cand, &error);
  if (!quiet && tty)
    fputc('\n', stderr);
  if (r == NULL)
    return sieve_cli_fail(error);

  /* Whole numbers (params, macs, epochs) print as integers. */
  GString *out = g_string_new("{\"arch\":");
  sieve_json_append_string(out, sieve_candidate_get_text(cand));
  g_string_append(out, ",\"status\":");
  sieve_json_append_string(out, sieve_status_to_string(sieve_result_get_status(r)));
  if (sieve_result_get_reason(r)) {
    g_string_append(out, ",\"reason\":");
    sieve_json_append_string(out, sieve_result_get_reason(r));
  }
  for (guint i = 0; i < sieve_result_n_metrics(r); i++) {
    g_string_append_c(out, ',');
    sieve_json_append_string(out, sieve_result_metric_name(r, i));
    g_string_append_c(out, ':');
    double v = sieve_result_metric_value(r, i);
    if (v == floor(v) && fabs(v) < 1e15)
      g_string_append_printf(out, "%" G_GINT64_FORMAT, (gint64)v);
    else
      sieve_json_append_double(out, v);
  }
  g_string_append(out, ",\"wall_s\":");
  sieve_json_append_double(out, sieve_result_get_cost(r));
  g_string_append_printf(out, ",\"threads\":%" G_GINT64_FORMAT "}",
                         sieve_options_get_int(exp->evaluator.options, "threads") ?: (gint64)g_get_num_processors());
  printf("%s\n", out->str);
  g_string_free(out, TRUE);
  return sieve_result_get_status(r) == SIEVE_STATUS_FAILED ? SIEVE_EXIT_FAILURE : SIEVE_EXIT_OK;
}
