/* sieve run CONFIG [--resume] [--store PATH] [--set KEY=VALUE]... */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "cli/cli-private.h"
#include "store/store-private.h"
#include "core/core-private.h"
#include "engine/engine-private.h"
#include "lua/lua-private.h"
#include "report/report-private.h"

static volatile sig_atomic_t interrupts;

static void
on_signal(int sig)
{
  if (++interrupts > 1)
    _exit(SIEVE_EXIT_INTERRUPTED); /* the store is consistent at every instant */
  sieve_engine_request_stop();
  static const char msg[] = "\nsieve: stopping after the trials in flight (interrupt again to quit now)\n";
  ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
  (void) ignored;
}

/* --report FILE --report-every N: the page rewritten as the study goes. */
typedef struct {
  SieveStore *store;
  const SieveSpace *space;
  const char *path;
  gint every;
  guint64 seen;
} ReportEvery;

static void
on_trial(gpointer data)
{
  ReportEvery *r = data;
  if (++r->seen % (guint64) r->every != 0)
    return;
  g_autoptr(GError) error = NULL;
  /* A report that cannot be written must not stop the study: warn. */
  if (!sieve_report_write(r->store, r->space, r->path, &error))
    fprintf(stderr, "sieve: warning: cannot write the report: %s\n", error->message);
}

/* A study that ends with nothing to rank failed, whatever its trials'
 * count: every trial failed, or none reported the objective.  A script or a
 * scheduler that runs `sieve run` must see it in the exit status, as an
 * Optuna user sees the objective's exception.  The stored trials stay. */
static gboolean
check_ranked(SieveStore *store, const SieveExperiment *exp, GError **error)
{
  g_autoptr(GPtrArray) trials = sieve_store_list_trials(store, FALSE, error);
  if (trials == NULL)
    return FALSE;
  const char *metric = exp->objectives[0].metric;
  g_autoptr(GArray) ranked = sieve_trials_rank(trials, metric, exp->objectives[0].maximize, NULL);
  if (ranked->len > 0 || trials->len == 0)
    return TRUE;
  guint counts[SIEVE_STATUS_REJECTED + 1] = {0};
  const SieveTrial *first = NULL; /* the first failed trial, whose reason is quoted */
  for (guint i = 0; i < trials->len; i++) {
    const SieveTrial *t = trials->pdata[i];
    counts[t->status]++;
    if (t->status == SIEVE_STATUS_FAILED && first == NULL)
      first = t;
  }
  static const struct {
    SieveStatus status;
    const char *what;
  } outcomes[] = {
    {SIEVE_STATUS_FAILED, "failed"},           {SIEVE_STATUS_REJECTED, "rejected by a constraint"},
    {SIEVE_STATUS_PRUNED, "pruned"},           {SIEVE_STATUS_SCREENED, "screened out"},
    {SIEVE_STATUS_OK, "ok without a value"},   {SIEVE_STATUS_CACHED, "answered from the cache"},
    {SIEVE_STATUS_PENDING, "pending"},
  };
  g_autoptr(GString) what = g_string_new(NULL);
  for (guint k = 0; k < G_N_ELEMENTS(outcomes); k++)
    if (counts[outcomes[k].status] > 0)
      g_string_append_printf(what, "%s%u %s", what->len ? ", " : "", counts[outcomes[k].status], outcomes[k].what);
  if (first != NULL)
    g_string_append_printf(what, "; the first failed, trial %" G_GINT64_FORMAT ": %s", first->number,
                           first->reason ? first->reason : "(no reason)");
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "no trial of study '%s' has a value of '%s' (%u trials: %s)",
              exp->name, metric, trials->len, what->str);
  return FALSE;
}

/* --local-workers: `sieve worker` processes of this executable, the URL in
 * their environment (not on their command line, which `ps` shows), ended
 * with this process if it dies. */
static gboolean
start_local_workers(const char *url, gint n, double lease_s, GArray *children, GError **error)
{
  g_auto(GStrv) env = g_environ_setenv(g_get_environ(), "SIEVE_STORE_URL", url, TRUE);
  char lease[G_ASCII_DTOSTR_BUF_SIZE], reconnect[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_dtostr(lease, sizeof lease, lease_s);
  g_ascii_dtostr(reconnect, sizeof reconnect, sieve__db_get_reconnect_timeout());
  for (gint i = 0; i < n; i++) {
    char *argv[] = {(char *) "/proc/self/exe", (char *) "worker", (char *) "-", (char *) "--with-parent",
                    (char *) "--quiet", (char *) "--lease", lease, (char *) "--reconnect-timeout", reconnect, NULL};
    GPid pid;
    if (!g_spawn_async(NULL, argv, env, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid, error)) {
      g_prefix_error(error, "cannot start a local worker: ");
      return FALSE;
    }
    g_array_append_val(children, pid);
  }
  return TRUE;
}

static void
stop_local_workers(GArray *children, gboolean now)
{
  for (guint i = 0; i < children->len; i++) {
    GPid pid = g_array_index(children, GPid, i);
    if (now)
      kill(pid, SIGTERM);
    int status;
    waitpid(pid, &status, 0);
    g_spawn_close_pid(pid);
  }
  g_array_set_size(children, 0);
}

/* What a failed run leaves and what to do next.  --resume keeps the stored
 * experiment (only budget, workers and report may change) and reads the
 * same store: a fix to the experiment file needs another store, a fix
 * outside it (the program an evaluator runs, a data file) can resume, and
 * an error of the store's content would stop it again at once. */
static void
explain_stop(const char *store, const GError *error)
{
  gboolean experiment = error->domain == SIEVE_ERROR &&
                        (error->code == SIEVE_ERROR_CONFIG || error->code == SIEVE_ERROR_GRAPH);
  /* A server's store fails when the server is away, which --resume
   * outlasts; a file's store error is about its content. */
  gboolean in_store = error->domain == SIEVE_ERROR && error->code == SIEVE_ERROR_STORE && !sieve_store_is_url(store);
  if (experiment)
    fprintf(stderr, "sieve: the study stopped on an error of its experiment (below); what finished is kept in %s. "
                    "A resumed study keeps its experiment: if the fix is in the experiment file, start it with "
                    "another --store; if it lies outside (a program the evaluator runs, a data file), continue "
                    "with --resume\n", store);
  else if (in_store)
    fprintf(stderr, "sieve: the study stopped on an error of its store (below); %s is left as it is, and --resume "
                    "would meet the same error unless its cause lies outside the file (a full disk, a lost server)\n",
            store);
  else
    fprintf(stderr, "sieve: the study stopped; finished trials are kept in %s (continue with --resume once the "
                    "error below is dealt with)\n", store);
}

/* What a resumed study holds and what becomes of its unfinished trials: the
 * engine evaluates them first, but only as far as the evaluation budget
 * goes; beyond it they stay pending, kept for a larger budget. */
static gboolean
print_resumed(SieveStore *store, const SieveExperiment *exp, gint64 total, gint64 pending, GError **error)
{
  gint64 evaluated = 0;
  static const SieveStatus evaluations[] = {SIEVE_STATUS_OK, SIEVE_STATUS_FAILED, SIEVE_STATUS_PRUNED};
  for (guint i = 0; i < G_N_ELEMENTS(evaluations); i++) {
    gint64 n = sieve_store_count_trials(store, evaluations[i], error);
    if (n < 0)
      return FALSE;
    evaluated += n;
  }
  gint64 left = exp->budget_evaluations > 0 ? exp->budget_evaluations - evaluated : G_MAXINT64;
  /* The seconds of earlier runs (a value that is no time is the engine's
   * to refuse, below). */
  g_autofree char *elapsed_text = sieve_store_get_meta(store, "elapsed_s", NULL);
  double spent = elapsed_text ? g_ascii_strtod(elapsed_text, NULL) : 0;
  gboolean time_spent = exp->budget_seconds > 0 && isfinite(spent) && spent >= exp->budget_seconds;
  printf("  %" G_GINT64_FORMAT " trials stored", total);
  if (pending == 0 && left <= 0)
    /* The budget is the study's total, where Optuna's n_trials counts the
     * trials of one optimize call: a resume with the same number runs
     * nothing, which is said with how to go on. */
    printf(": the evaluation budget (%" G_GINT64_FORMAT ", the study's total, not this run's) is spent "
           "already, so nothing runs (--set budget.evaluations=%" G_GINT64_FORMAT " runs %" G_GINT64_FORMAT
           " more)\n",
           exp->budget_evaluations, evaluated + exp->budget_evaluations, exp->budget_evaluations);
  else if (pending == 0 && time_spent)
    /* The same for the time budget: no new trial starts past it. */
    printf(": the time budget (%g s, the study's total over its runs, not this run's) is spent already (%.3f s), "
           "so nothing runs (--set budget.seconds=%g runs about %g s more)\n",
           exp->budget_seconds, spent, ceil(spent + exp->budget_seconds), exp->budget_seconds);
  else if (pending == 0)
    printf("\n");
  else if (left <= 0)
    printf(", %" G_GINT64_FORMAT " of them unfinished: the evaluation budget (%" G_GINT64_FORMAT
           ") is spent, so they stay pending unless the cache or a constraint answers them, which costs no "
           "evaluation (a larger budget.evaluations and --resume evaluate the others)\n",
           pending, exp->budget_evaluations);
  else if (left < pending)
    printf(", %" G_GINT64_FORMAT " of them unfinished and run again as far as the evaluation budget goes (%"
           G_GINT64_FORMAT " more evaluations; a duplicate answered from the cache costs none)\n", pending, left);
  else
    printf(", %" G_GINT64_FORMAT " of them unfinished and run again\n", pending);
  return TRUE;
}

int
sieve_cmd_run(int argc, char **argv)
{
  gboolean resume = FALSE, quiet = FALSE, accept_scripts = FALSE;
  g_autofree char *store_path = NULL, *lua_allow = NULL;
  g_auto(GStrv) overrides = NULL;
  g_autofree char *report_path = NULL;
  gint report_every = 0, local_workers = 0, in_flight = 0;
  double lease_s = 30, reconnect_s = 60;
  g_autofree char *lease_text = NULL, *reconnect_text = NULL;
  GOptionEntry entries[] = {
      {"local-workers", 0, 0, G_OPTION_ARG_INT, &local_workers,
       "with a postgresql:// store, start N `sieve worker` processes on this machine", "N"},
      {"lease", 0, 0, G_OPTION_ARG_STRING, &lease_text,
       "the --local-workers' lease: a killed run's evaluations go to other workers after S seconds (default 30)",
       "S"},
      {"in-flight", 0, 0, G_OPTION_ARG_INT, &in_flight,
       "with a postgresql:// store, evaluations queued or running at once (default: --local-workers, or "
       "the experiment's workers)",
       "N"},
      {"reconnect-timeout", 0, 0, G_OPTION_ARG_STRING, &reconnect_text,
       "with a postgresql:// store, seconds to keep reconnecting to a server that went away before failing "
       "(default 60; 0: fail at once); the --local-workers too",
       "S"},
      {"report", 0, 0, G_OPTION_ARG_FILENAME, &report_path,
       "write the study's HTML report to FILE at the end (as `sieve report` does)", "FILE"},
      {"report-every", 0, 0, G_OPTION_ARG_INT, &report_every,
       "with --report, also rewrite it every N finished proposals", "N"},
      {"resume", 'r', 0, G_OPTION_ARG_NONE, &resume,
       "continue the study in the store (re-running trials a kill left unfinished)", NULL},
      {"accept-changed-scripts", 0, 0, G_OPTION_ARG_NONE, &accept_scripts,
       "with --resume, go on although the experiment's Lua scripts changed (a bug fixed): the stored trials "
       "stay, later ones run the new scripts, and the store records the change",
       NULL},
      {"store", 's', 0, G_OPTION_ARG_FILENAME, &store_path, "the study's SQLite file or postgresql:// URL (default: the config's 'store')",
       "PATH"},
      {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &overrides,
       "override a config key, e.g. --set optimizer.seed=3 --set budget.evaluations=50", "KEY=VALUE"},
      {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "no progress, only why a study stopped short of its budget and the summary",
       NULL},
      {"lua-allow", 0, 0, G_OPTION_ARG_STRING, &lua_allow,
       "grant the experiment's Lua scripts io, os, debug, package, command or plugins (comma-separated; same as --set lua.allow=[...])",
       "LIBS"},
      {NULL},
  };
  g_autoptr(GOptionContext) context = g_option_context_new("CONFIG - run a study");
  g_option_context_set_description(
      context, "Runs the experiment in CONFIG (YAML) until its budget is spent, storing every trial in an\n"
               "SQLite store.  A study killed at any point continues with --resume; Ctrl-C stops after the\n"
               "trials in flight.  Exit status: 0 done, 1 failure, 2 bad config or usage, 130 interrupted.");
  g_option_context_add_main_entries(context, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(context, &argc, &argv, &error))
    return sieve_cli_fail(error);
  if (argc != 2) {
    fprintf(stderr, "sieve run: expected one CONFIG argument (see 'sieve run --help')\n");
    return SIEVE_EXIT_USAGE;
  }
  if (!sieve_cli_parse_double("--lease", lease_text, 1, FALSE, INFINITY, &lease_s, &error) ||
      !sieve_cli_parse_double("--reconnect-timeout", reconnect_text, 0, FALSE, INFINITY, &reconnect_s, &error))
    return sieve_cli_fail(error);
  if (local_workers < 0 || in_flight < 0) {
    fprintf(stderr, "sieve run: --local-workers and --in-flight take a positive N, --lease at least 1 s, "
                    "--reconnect-timeout 0 s or more\n");
    return SIEVE_EXIT_USAGE;
  }
  if (accept_scripts && !resume) {
    fprintf(stderr, "sieve run: --accept-changed-scripts goes with --resume (a new study has no scripts to compare)\n");
    return SIEVE_EXIT_USAGE;
  }
  if (store_path != NULL && store_path[0] == '\0') {
    fprintf(stderr, "sieve run: --store '': expected a file name or a postgresql:// URL\n");
    return SIEVE_EXIT_USAGE;
  }
  sieve__db_set_reconnect_timeout(reconnect_s);
  if (report_every < 0 || (report_every > 0 && report_path == NULL)) {
    fprintf(stderr, "sieve run: --report-every needs --report FILE and a positive N\n");
    return SIEVE_EXIT_USAGE;
  }
  if (lua_allow != NULL) {
    /* An override like any other: validated, located, and part of the
     * study's identity (a resumed study needs the same permissions). */
    guint n = overrides ? g_strv_length(overrides) : 0;
    overrides = g_renew(char *, overrides, n + 2);
    overrides[n] = g_strdup_printf("lua.allow=[%s]", lua_allow);
    overrides[n + 1] = NULL;
  }

  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  g_autoptr(GPtrArray) refused = g_ptr_array_new_with_free_func((GDestroyNotify) g_error_free);
  sieve_registry_load_default(registry, NULL, refused);
  g_autoptr(SieveExperiment) exp =
      sieve_lua_experiment_load(argv[1], (const char *const *) overrides, registry, refused, &error);
  sieve_cli_warn_refused(refused);
  if (exp == NULL)
    return sieve_cli_fail(error);

  g_autoptr(SieveEngine) engine = sieve_engine_new(exp, &error);
  if (engine == NULL)
    return sieve_cli_fail(error);
  g_autofree char *path = store_path ? sieve_store_canonical_name(store_path) : g_strdup(exp->store_path);
  /* sieve creates the store's file, never its folder: a missing one is a
   * mistake in what names the store (the flag or the config's key), said
   * there and before anything is created. */
  g_autofree char *store_dir = sieve_store_is_url(path) ? NULL : g_path_get_dirname(path);
  if (store_dir != NULL && !g_file_test(store_dir, G_FILE_TEST_IS_DIR)) {
    const SieveNode *key = store_path ? NULL : sieve_node_lookup(exp->root, "store");
    if (key != NULL)
      sieve_node_set_error(&error, key, "store %s: the folder %s does not exist (sieve creates the store's file, "
                           "not its folder)", sieve_node_text(key), store_dir);
    else
      g_set_error(&error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                  "%s %s: the folder %s does not exist (sieve creates the store's file, not its folder)",
                  store_path ? "--store" : "store", store_path ? store_path : path, store_dir);
    return sieve_cli_fail(error);
  }
  /* A folder where the store's file goes: the same mistake, said there. */
  if (store_dir != NULL && g_file_test(path, G_FILE_TEST_IS_DIR)) {
    const SieveNode *key = store_path ? NULL : sieve_node_lookup(exp->root, "store");
    if (key != NULL)
      sieve_node_set_error(&error, key, "store %s is a folder; name the store's file in it (%s/study.sieve)",
                           sieve_node_text(key), sieve_node_text(key));
    else
      g_set_error(&error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "%s %s is a folder; name the store's file in it",
                  store_path ? "--store" : "store", store_path ? store_path : path);
    return sieve_cli_fail(error);
  }
  /* A report that cannot be written is known now, not after the study.
   * Standard output carries the run's progress and summary: `-` is not
   * the page's place here (`sieve report STORE -o -` writes it there). */
  if (report_path != NULL && strcmp(report_path, "-") == 0) {
    g_set_error(&error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                "--report -: standard output carries the run's progress and summary; give a file name (sieve "
                "report STORE -o - writes the page to standard output)");
    return sieve_cli_fail(error);
  }
  if (!sieve_cli_check_output(path, report_path, "--report", &error) ||
      !sieve_cli_check_writable(report_path, "--report", &error))
    return sieve_cli_fail(error);
  /* A study on a server: evaluations go to its queue, for workers.  Known
   * from the command line alone, so refused before the store is created or
   * its study touched (a --resume --set writes the stored config). */
  gboolean queued = sieve_store_is_url(path);
  const char *server_only = local_workers > 0 ? "--local-workers"
                            : in_flight > 0   ? "--in-flight"
                            : lease_text      ? "--lease"
                            : reconnect_text  ? "--reconnect-timeout"
                                              : NULL;
  if (!queued && server_only != NULL) {
    fprintf(stderr, "sieve run: %s needs a postgresql:// store (--local-workers, --in-flight, --lease and "
                    "--reconnect-timeout are for a study on a server)\n", server_only);
    return SIEVE_EXIT_USAGE;
  }
  g_autoptr(SieveStore) store = sieve_store_open(path, SIEVE_STORE_WRITE, &error);
  g_autofree char *accepted = NULL;
  if (store == NULL || !sieve_study_open_full(store, exp, resume, accept_scripts, &accepted, &error))
    return sieve_cli_fail(error);
  if (accepted != NULL)
    printf("accepted changed scripts (recorded in the store): %s\n", accepted);

  g_autoptr(GArray) children = g_array_new(FALSE, FALSE, sizeof(GPid));
  if (queued) {
    sieve_engine_set_queue(engine, in_flight > 0 ? (guint) in_flight : MAX((guint) local_workers, MAX(exp->workers, 1)));
    if (!start_local_workers(path, local_workers, lease_s, children, &error))
      return sieve_cli_fail(error);
  }

  gint64 total = sieve_store_count_trials(store, -1, &error);
  gint64 pending = total < 0 ? -1 : sieve_store_count_trials(store, SIEVE_STATUS_PENDING, &error);
  if (pending < 0)
    return sieve_cli_fail(error);
  gboolean interactive = !quiet && isatty(STDOUT_FILENO);
  printf("study '%s': %s %s on %s, evaluated by %s; store %s\n", exp->name, resume && total > 0 ? "resuming" : "running",
         sieve_component_get_name(exp->optimizer.component), sieve_component_get_name(exp->space.component),
         sieve_component_get_name(exp->evaluator.component), sieve_store_get_path(store));
  g_autofree char *stages = sieve_engine_describe_pipeline(engine);
  if (stages != NULL)
    printf("  pipeline: %s\n", stages);
  if (resume && total > 0 && !print_resumed(store, exp, total, pending, &error))
    return sieve_cli_fail(error);
  fflush(stdout);
  g_autoptr(SieveProgress) progress = sieve_progress_new(stdout, interactive, exp->budget_evaluations,
                                                         total - pending, exp->objectives[0].metric, exp->objectives[0].maximize);

  /* The report's space is rebuilt from the stored config, as `sieve
   * report` does, so that both pages are the same page. */
  g_autoptr(SieveSpace) report_space = report_path ? sieve_report_space_new(store, registry, NULL) : NULL;
  ReportEvery every = {store, report_space, report_path, report_every, 0};
  /* With --quiet the progress prints only notices: why a study stops
   * short of its budget, warnings (and it still calls the hook). */
  sieve_progress_set_quiet(progress, quiet);
  SieveProgress *shown = progress;
  if (report_every > 0)
    sieve_progress_set_hook(shown, on_trial, &every);

  struct sigaction sa = {0};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  if (queued && !quiet)
    printf("  evaluations go to the store's queue: %d local worker%s; start more with `sieve worker URL`\n",
           local_workers, local_workers == 1 ? "" : "s");
  fflush(stdout);
  gboolean ok = sieve_engine_run(engine, store, shown, &error);
  /* They exit once the study is finished; otherwise they are stopped. */
  stop_local_workers(children, !ok || interrupts);
  if (report_path != NULL) {
    /* Also when the study stopped on an error: what finished is worth seeing. */
    g_autoptr(GError) report_error = NULL;
    if (sieve_report_write(store, report_space, report_path, &report_error))
      printf("report: %s\n", report_path);
    else
      fprintf(stderr, "sieve: warning: cannot write the report: %s\n", report_error->message);
  }
  if (!ok) {
    /* What finished is stored; say so, then report the failure. */
    explain_stop(sieve_store_get_path(store), error);
    return sieve_cli_fail(error);
  }
  if (!sieve_print_summary(stdout, store, exp->objectives[0].metric, exp->objectives[0].maximize, exp->report_top, &error))
    return sieve_cli_fail(error);
  if (exp->n_objectives >= 2) {
    gboolean maximize[exp->n_objectives];
    for (guint k = 0; k < exp->n_objectives; k++)
      maximize[k] = exp->objectives[k].maximize;
    printf("\n");
    if (!sieve_print_pareto(stdout, store, exp->objective_names, maximize, exp->n_objectives, &error))
      return sieve_cli_fail(error);
  }
  /* The store's own name: a URL without its password. */
  printf("\nstore: %s  (sieve export %s --format csv)\n", sieve_store_get_path(store), sieve_store_get_path(store));
  if (interrupts)
    return SIEVE_EXIT_INTERRUPTED;
  fflush(stdout);
  if (!check_ranked(store, exp, &error))
    return sieve_cli_fail(error);
  return SIEVE_EXIT_OK;
}
