/* sieve train --space nb201 --arch ARCH [--set space.C=8] [--dataset ...] [--epochs 1] ...
 *
 * Trains one candidate with the `train` evaluator and prints a JSON summary.
 * The flags become an experiment in memory (space and evaluator sections),
 * so --set reaches every option of both with the same checks and located
 * messages as an experiment file. */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include <json-glib/json-glib.h>

#include "cli.h"
#include "config.h"

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

int
sieve_cmd_train(int argc, char **argv)
{
  g_autofree char *space = NULL, *arch = NULL, *dataset = NULL, *data_dir = NULL, *device = NULL;
  double epochs = NAN, lr = NAN;
  gint batch = 0, threads = -1, seed = -1, validation = -1, limit = -1;
  gboolean dump = FALSE, quiet = FALSE;
  g_auto(GStrv) overrides = NULL;
  GOptionEntry entries[] = {
      {"space", 0, 0, G_OPTION_ARG_STRING, &space, "architecture space plugin (default nb201)", "NAME"},
      {"arch", 'a', 0, G_OPTION_ARG_STRING, &arch, "the candidate, in the space's text form", "TEXT"},
      {"dataset", 'd', 0, G_OPTION_ARG_STRING, &dataset, "fashion-mnist (default), mnist, cifar10, cifar100, csv:PATH",
       "NAME"},
      {"data-dir", 0, 0, G_OPTION_ARG_FILENAME, &data_dir, "where the dataset's files are", "DIR"},
      {"epochs", 'e', 0, G_OPTION_ARG_DOUBLE, &epochs, "epochs (fractional allowed; default 1)", "E"},
      {"batch", 'b', 0, G_OPTION_ARG_INT, &batch, "batch size (default 128)", "N"},
      {"lr", 0, 0, G_OPTION_ARG_DOUBLE, &lr, "peak learning rate (default 0.1)", "LR"},
      {"threads", 't', 0, G_OPTION_ARG_INT, &threads, "threads (default: every core)", "N"},
      {"seed", 0, 0, G_OPTION_ARG_INT, &seed, "seed of initialisation and data order (default 0)", "S"},
      {"validation", 0, 0, G_OPTION_ARG_INT, &validation, "training examples held out (default 5000)", "N"},
      {"train-limit", 0, 0, G_OPTION_ARG_INT, &limit, "train on at most N examples (default all)", "N"},
      {"device", 0, 0, G_OPTION_ARG_STRING, &device, "cpu (default)", "DEVICE"},
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
               "For nb201 on a one-channel 28x28 dataset, in_channels and size are set for you when not given.");
  g_option_context_add_main_entries(context, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(context, &argc, &argv, &error))
    return sieve_cli_fail(error);
  if (arch == NULL || argc != 1) {
    fprintf(stderr, "sieve train: expected --arch TEXT and no other arguments (see 'sieve train --help')\n");
    return SIEVE_EXIT_USAGE;
  }
  const char *ds = dataset ? dataset : "fashion-mnist";
  /* The experiment the flags describe; values are quoted YAML scalars so
   * that no text can change the document's structure. */
  GString *yaml = g_string_new("name: train\n");
  g_autofree char *q_space = g_strescape(space ? space : "nb201", NULL);
  g_string_append_printf(yaml, "space:\n  plugin: \"%s\"\n", q_space);
  gboolean gray = g_str_equal(ds, "fashion-mnist") || g_str_equal(ds, "mnist");
  gboolean user_in = FALSE, user_size = FALSE;
  for (guint i = 0; overrides && overrides[i]; i++) {
    user_in |= g_str_has_prefix(overrides[i], "space.in_channels=");
    user_size |= g_str_has_prefix(overrides[i], "space.size=");
  }
  if (gray && (space == NULL || g_str_equal(space, "nb201"))) {
    if (!user_in)
      g_string_append(yaml, "  in_channels: 1\n");
    if (!user_size)
      g_string_append(yaml, "  size: 28\n");
  }
  g_autofree char *q_ds = g_strescape(ds, NULL);
  g_string_append_printf(yaml, "optimizer: random\nevaluator:\n  plugin: train\n  dataset: \"%s\"\n", q_ds);
  if (data_dir) {
    g_autofree char *q = g_strescape(data_dir, NULL);
    g_string_append_printf(yaml, "  data_dir: \"%s\"\n", q);
  }
  if (device) {
    g_autofree char *q = g_strescape(device, NULL);
    g_string_append_printf(yaml, "  device: \"%s\"\n", q);
  }
  char num[G_ASCII_DTOSTR_BUF_SIZE];
  if (!isnan(epochs))
    g_string_append_printf(yaml, "  epochs: %s\n", g_ascii_dtostr(num, sizeof num, epochs));
  if (!isnan(lr))
    g_string_append_printf(yaml, "  lr: %s\n", g_ascii_dtostr(num, sizeof num, lr));
  if (batch > 0)
    g_string_append_printf(yaml, "  batch_size: %d\n", batch);
  if (threads >= 0)
    g_string_append_printf(yaml, "  threads: %d\n", threads);
  if (seed >= 0)
    g_string_append_printf(yaml, "  seed: %d\n", seed);
  if (validation >= 0)
    g_string_append_printf(yaml, "  validation: %d\n", validation);
  if (limit >= 0)
    g_string_append_printf(yaml, "  train_limit: %d\n", limit);
  g_string_append(yaml, "objective: {metric: val_acc, direction: maximize}\nbudget: {evaluations: 1}\n");
  g_autofree char *text = g_string_free(yaml, FALSE);

  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  g_autoptr(GPtrArray) refused = g_ptr_array_new_with_free_func((GDestroyNotify)g_error_free);
  sieve_registry_load_default(registry, NULL, refused);
  g_autofree char *cwd = g_get_current_dir();
  g_autoptr(SieveExperiment) exp = sieve_experiment_load_string(text, "sieve train", cwd,
                                                                (const char *const *)overrides, registry, refused, &error);
  sieve_cli_warn_refused(refused);
  if (exp == NULL)
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

  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "arch");
  json_builder_add_string_value(b, sieve_candidate_get_text(cand));
  json_builder_set_member_name(b, "status");
  json_builder_add_string_value(b, sieve_status_to_string(sieve_result_get_status(r)));
  if (sieve_result_get_reason(r)) {
    json_builder_set_member_name(b, "reason");
    json_builder_add_string_value(b, sieve_result_get_reason(r));
  }
  for (guint i = 0; i < sieve_result_n_metrics(r); i++) {
    json_builder_set_member_name(b, sieve_result_metric_name(r, i));
    double v = sieve_result_metric_value(r, i);
    if (v == floor(v) && fabs(v) < 1e15)
      json_builder_add_int_value(b, (gint64)v);
    else
      json_builder_add_double_value(b, v);
  }
  json_builder_set_member_name(b, "wall_s");
  json_builder_add_double_value(b, sieve_result_get_cost(r));
  json_builder_set_member_name(b, "threads");
  json_builder_add_int_value(b, sieve_options_get_int(exp->evaluator.options, "threads") ?: (gint64)g_get_num_processors());
  json_builder_end_object(b);
  g_autoptr(JsonGenerator) gen = json_generator_new();
  g_autoptr(JsonNode) root = json_builder_get_root(b);
  json_generator_set_root(gen, root);
  g_autofree char *out = json_generator_to_data(gen, NULL);
  printf("%s\n", out);
  return sieve_result_get_status(r) == SIEVE_STATUS_FAILED ? SIEVE_EXIT_FAILURE : SIEVE_EXIT_OK;
}
