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
 * and column, its messages read "--dataset foo: ...". (transfer none) */
static SieveNode *
set_value(SieveNode *map, const char *key, const char *text, gboolean quoted, const char *flag)
{
  g_autofree char *origin = flag ? g_strdup_printf("%s %s", flag, text) : g_strdup("sieve train");
  SieveNode *node = sieve_node_new_scalar(text, quoted, origin, 0, 0);
  sieve_node_map_set(map, key, node);
  return node;
}

/* What sieve train put in its space and evaluator sections: a flag's value
 * (a --set of the same option is refused: the two would disagree with no
 * way to tell which one counts) or one of its defaults (a --set replaces
 * it).  A --set of a whole section ("evaluator={epochs: 2, lr: 0.1}") means
 * what a --set of each of its keys means: what it leaves out keeps the
 * flags' and the defaults' values. */
typedef struct {
  const char *section, *key;
  SieveNode *node; /* a reference; NULL once a --set replaced a default */
  gboolean flag;
} Given;

static void
given_clear(gpointer data)
{
  Given *g = data;
  if (g->node)
    sieve_node_unref(g->node);
}

static void
given_add(GArray *given, const char *section, const char *key, SieveNode *node, gboolean flag)
{
  Given g = {section, key, sieve_node_ref(node), flag};
  g_array_append_val(given, g);
}

/* After the --set `override`: each given value back in its section if the
 * --set left it out, or refused (a flag) or dropped (a default) if the
 * --set gave that option another value. */
static gboolean
given_reconcile(SieveNode *root, GArray *given, const char *override, GError **error)
{
  for (guint i = 0; i < given->len; i++) {
    Given *g = &g_array_index(given, Given, i);
    SieveNode *section = g->node ? sieve_node_lookup(root, g->section) : NULL;
    if (section && sieve_node_kind(section) == SIEVE_NODE_SCALAR && !sieve_node_is_null(section)) {
      /* "evaluator=train": a section given by its plugin's name alone, as
       * a file may; the map it stands for. */
      SieveNode *map = sieve_node_new_map(sieve_node_origin(section), sieve_node_line(section),
                                          sieve_node_column(section));
      sieve_node_map_set(map, "plugin", sieve_node_ref(section));
      sieve_node_map_set(root, g->section, map);
      section = map;
    }
    /* A list or a null section: the experiment says what is wrong with it. */
    if (section == NULL || sieve_node_kind(section) != SIEVE_NODE_MAP)
      continue;
    SieveNode *now = sieve_node_lookup(section, g->key);
    if (now == g->node)
      continue;
    if (now == NULL) {
      sieve_node_map_set(section, g->key, sieve_node_ref(g->node));
    } else if (g->flag) {
      sieve_cli_set_both_error(error, sieve_node_origin(g->node), override, g->section, g->key);
      return FALSE;
    } else {
      g_clear_pointer(&g->node, sieve_node_unref);
    }
  }
  return TRUE;
}

/* sieve train's defaults (dataset: fashion-mnist) are the train
 * evaluator's: when a --set made the evaluator another plugin, those left
 * in its section go, so that it gets its own defaults (a proxy evaluator
 * kept dataset and took its batch from Fashion-MNIST instead of N(0,1)
 * inputs; one without a dataset option was refused).  Flags given stay:
 * one the evaluator lacks is refused, naming the flag. */
static void
drop_train_defaults(SieveNode *root, GArray *given)
{
  SieveNode *section = sieve_node_lookup(root, "evaluator");
  if (section == NULL || sieve_node_kind(section) != SIEVE_NODE_MAP)
    return;
  SieveNode *plugin = sieve_node_lookup(section, "plugin");
  if (plugin == NULL || sieve_node_kind(plugin) != SIEVE_NODE_SCALAR || g_str_equal(sieve_node_text(plugin), "train"))
    return;
  for (guint i = 0; i < given->len; i++) {
    Given *g = &g_array_index(given, Given, i);
    if (!g->flag && g->node && g_str_equal(g->section, "evaluator") && !g_str_equal(g->key, "plugin") &&
        sieve_node_lookup(section, g->key) == g->node)
      sieve_node_map_remove(section, g->key);
  }
}

/* The text of root.section.key when it is a scalar, else NULL. (transfer none) */
static const char *
text_at(SieveNode *root, const char *section, const char *key)
{
  SieveNode *map = sieve_node_lookup(root, section);
  SieveNode *node = map && sieve_node_kind(map) == SIEVE_NODE_MAP ? sieve_node_lookup(map, key) : NULL;
  return node && sieve_node_kind(node) == SIEVE_NODE_SCALAR ? sieve_node_text(node) : NULL;
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
  /* The experiment the flags describe, built as a tree: each value a
   * scalar node that names its flag, so that a bad one is reported as
   * "--dataset foo: ..." and no text can change the structure. */
  g_autoptr(GArray) given = g_array_new(FALSE, FALSE, sizeof(Given));
  g_array_set_clear_func(given, given_clear);
  g_autoptr(SieveNode) root = sieve_node_new_map("sieve train", 0, 0);
  set_value(root, "name", "train", TRUE, NULL);
  g_autofree char *space_flag = space ? g_strdup_printf("--space %s", space) : g_strdup("sieve train");
  SieveNode *space_map = sieve_node_new_map(space_flag, 0, 0); /* what is wrong with it: said at --space */
  sieve_node_map_set(root, "space", space_map);
  given_add(given, "space", "plugin", set_value(space_map, "plugin", space ? space : "nb201", TRUE, "--space"),
            space != NULL);
  set_value(root, "optimizer", "random", TRUE, NULL);
  SieveNode *ev_map = sieve_node_new_map("sieve train", 0, 0);
  sieve_node_map_set(root, "evaluator", ev_map);
  given_add(given, "evaluator", "plugin", set_value(ev_map, "plugin", "train", TRUE, NULL), FALSE);
  if (dataset) {
    given_add(given, "evaluator", "dataset", set_value(ev_map, "dataset", dataset, TRUE, "--dataset"), TRUE);
  } else {
    SieveNode *node = sieve_node_new_scalar("fashion-mnist", TRUE, "sieve train's default dataset", 0, 0);
    sieve_node_map_set(ev_map, "dataset", node);
    given_add(given, "evaluator", "dataset", node, FALSE);
  }
  const struct {
    const char *key, *text, *flag;
    gboolean quoted; /* a name, never a number */
  } flags[] = {{"data_dir", data_dir, "--data-dir", TRUE}, {"device", device, "--device", TRUE},
               {"epochs", epochs, "--epochs", FALSE},       {"lr", lr, "--lr", FALSE},
               {"batch_size", batch, "--batch", FALSE},     {"threads", threads, "--threads", FALSE},
               {"seed", seed, "--seed", FALSE},             {"validation", validation, "--validation", FALSE},
               {"train_limit", limit, "--train-limit", FALSE}};
  for (guint i = 0; i < G_N_ELEMENTS(flags); i++)
    if (flags[i].text != NULL)
      given_add(given, "evaluator", flags[i].key,
                set_value(ev_map, flags[i].key, flags[i].text, flags[i].quoted, flags[i].flag), TRUE);
  SieveNode *objective = sieve_node_new_map("sieve train", 0, 0);
  sieve_node_map_set(root, "objective", objective);
  set_value(objective, "metric", "val_acc", TRUE, NULL);
  set_value(objective, "direction", "maximize", TRUE, NULL);
  SieveNode *budget = sieve_node_new_map("sieve train", 0, 0);
  sieve_node_map_set(root, "budget", budget);
  set_value(budget, "evaluations", "1", FALSE, NULL);
  for (guint i = 0; overrides && overrides[i]; i++)
    if (!sieve_experiment_apply_override(root, overrides[i], &error) ||
        !given_reconcile(root, given, overrides[i], &error))
      return sieve_cli_fail(error);
  drop_train_defaults(root, given);

  /* What follows from the dataset the evaluator gets, where no --set says
   * otherwise: nb201 on a one-channel 28x28 dataset, and no test split of
   * a CSV file, which has none (sieve_train_data_load). */
  const char *ds = text_at(root, "evaluator", "dataset");
  const char *space_name = text_at(root, "space", "plugin");
  SieveNode *space_now = sieve_node_lookup(root, "space"), *ev_now = sieve_node_lookup(root, "evaluator");
  if (ds && (g_str_equal(ds, "fashion-mnist") || g_str_equal(ds, "mnist")) && space_name &&
      g_str_equal(space_name, "nb201")) {
    g_autofree char *origin = g_strdup_printf("sieve train (nb201 on %s)", ds);
    if (sieve_node_lookup(space_now, "in_channels") == NULL)
      sieve_node_map_set(space_now, "in_channels", sieve_node_new_scalar("1", FALSE, origin, 0, 0));
    if (sieve_node_lookup(space_now, "size") == NULL)
      sieve_node_map_set(space_now, "size", sieve_node_new_scalar("28", FALSE, origin, 0, 0));
  }
  if (ds && g_str_has_prefix(ds, "csv:") && sieve_node_lookup(ev_now, "test") == NULL)
    sieve_node_map_set(ev_now, "test", sieve_node_new_scalar("false", FALSE, "sieve train (csv: has no test split)", 0, 0));

  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  g_autoptr(GPtrArray) refused = g_ptr_array_new_with_free_func((GDestroyNotify)g_error_free);
  sieve_registry_load_default(registry, NULL, refused);
  g_autofree char *cwd = g_get_current_dir();
  g_autoptr(SieveExperiment) exp = sieve_experiment_parse_tree(root, "sieve train", cwd, NULL, registry, refused, &error);
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
  /* Another evaluator (--set evaluator=...) may have no threads option. */
  gint64 nthreads = 0;
  for (const SieveOptionSpec *o = sieve_options_spec(exp->evaluator.options); o && o->name; o++)
    if (g_str_equal(o->name, "threads") && o->type == SIEVE_OPTION_TYPE_INT)
      nthreads = sieve_options_get_int(exp->evaluator.options, "threads");
  g_string_append_printf(out, ",\"threads\":%" G_GINT64_FORMAT "}", nthreads ?: (gint64)g_get_num_processors());
  printf("%s\n", out->str);
  g_string_free(out, TRUE);
  return sieve_result_get_status(r) == SIEVE_STATUS_FAILED ? SIEVE_EXIT_FAILURE : SIEVE_EXIT_OK;
}
