/* sieve worker STORE [--threads T] [--lease S] [--idle-exit S]: evaluations
 * of a study on a PostgreSQL server, claimed from its queue (store-private.h).
 *
 * The worker rebuilds the study's evaluator from the experiment stored
 * with the study, with this machine's plugins: a plugin it lacks or an
 * option it does not know fails the load, and a different sieve version is
 * refused, before anything is claimed.  Each thread has its own connection
 * and claims one evaluation at a time; one more connection renews the
 * leases of the evaluations under way every third of the lease, so that a
 * worker that dies (kill -9, a lost machine) loses them within one lease
 * and another worker evaluates them again. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <signal.h>
#include <unistd.h>

#include "cli/cli-private.h"
#include "core/core-private.h"
#include "engine/engine-private.h"
#include "sieve-config.h"
#include "store/store-private.h"

/* The longest an idle worker waits before it looks for work again. */
#define CLAIM_WAIT_S 1.0

typedef struct {
  const char *url;
  SieveEngine *engine;
  double lease_s;
  double idle_exit_s;
  gboolean quiet;
  GMutex lock;
  GHashTable *held; /* trial (gint64*) -> lease (gint64*) under way */
  SieveStore *first; /* the connection that read the study, for the first thread */
  gint stop;        /* set: the threads are done, the renewer ends */
  gint failures;    /* threads that ended on an error */
} Worker;

static void
say(Worker *w, const char *format, ...) G_GNUC_PRINTF(2, 3);

static void
say(Worker *w, const char *format, ...)
{
  if (w->quiet)
    return;
  va_list ap;
  va_start(ap, format);
  g_autofree char *text = g_strdup_vprintf(format, ap);
  va_end(ap);
  fprintf(stderr, "sieve worker %d: %s\n", (int) getpid(), text);
}

/* Whether the coordinator closed the queue (the study ran to its end). */
static gboolean
queue_closed(SieveStore *store)
{
  g_autofree char *state = sieve_store_get_meta(store, "queue", NULL);
  return g_strcmp0(state, "closed") == 0;
}

static gpointer
renew_leases(gpointer data)
{
  Worker *w = data;
  g_autoptr(GError) error = NULL;
  /* Opened at the first renewal: evaluations shorter than a third of the
   * lease need none, and 64 workers starting at once open one connection
   * each fewer. */
  g_autoptr(SieveStore) store = NULL;
  gint64 period = (gint64) (w->lease_s / 3 * G_USEC_PER_SEC);
  while (!g_atomic_int_get(&w->stop)) {
    g_usleep(MIN(period, 100000)); /* wakes often to see stop */
    static __thread gint64 last;
    gint64 now = g_get_monotonic_time();
    if (now - last < period)
      continue;
    last = now;
    g_mutex_lock(&w->lock);
    if (store == NULL && g_hash_table_size(w->held) > 0 &&
        (store = sieve_store_open(w->url, SIEVE_STORE_READ, &error)) == NULL) {
      g_mutex_unlock(&w->lock);
      say(w, "cannot renew leases: %s", error->message);
      return NULL;
    }
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, w->held);
    while (g_hash_table_iter_next(&it, &k, &v)) {
      gboolean held = TRUE;
      g_clear_error(&error);
      if (!sieve__queue_renew(store, *(gint64 *) k, *(gint64 *) v, w->lease_s, &held, &error))
        say(w, "cannot renew the lease of trial %" G_GINT64_FORMAT ": %s", *(gint64 *) k, error->message);
      else if (!held)
        say(w, "trial %" G_GINT64_FORMAT ": lease lost (it expired); its result will be discarded",
            *(gint64 *) k);
    }
    g_mutex_unlock(&w->lock);
  }
  return NULL;
}

static gpointer
claim_loop(gpointer data)
{
  Worker *w = data;
  static gint next_thread;
  guint thread = (guint) g_atomic_int_add(&next_thread, 1);
  g_autofree char *name = g_strdup_printf("%s:%d:%u", g_get_host_name(), (int) getpid(), thread);
  g_autoptr(GError) error = NULL;
  g_autoptr(SieveStore) store = g_atomic_pointer_exchange(&w->first, NULL);
  if (store == NULL && (store = sieve_store_open(w->url, SIEVE_STORE_READ, &error)) == NULL)
    goto fail;
  gint64 idle_since = g_get_monotonic_time();
  for (;;) {
    g_autoptr(SieveQueueItem) item = sieve__queue_claim(store, name, w->lease_s, &error);
    if (error != NULL)
      goto fail;
    if (item == NULL) {
      if (queue_closed(store)) {
        say(w, "the study is finished; exiting");
        return NULL;
      }
      if ((g_get_monotonic_time() - idle_since) / 1e6 >= w->idle_exit_s) {
        if (w->idle_exit_s == 0)
          say(w, "nothing to evaluate; exiting (--idle-exit 0)");
        else
          say(w, "nothing to evaluate for %g s; exiting", w->idle_exit_s);
        return NULL;
      }
      /* Woken when the coordinator queues more (or closes the queue);
       * the time-out sees leases that expired, which nobody announces. */
      sieve__queue_wait(store, "queued", CLAIM_WAIT_S);
      continue;
    }
    if (item->previous != NULL)
      say(w, "trial %" G_GINT64_FORMAT ": the lease of %s expired; evaluating it again (attempt %" G_GINT64_FORMAT
          ")", item->trial, item->previous, item->attempts);
    gint64 *key = g_new(gint64, 1), *lease = g_new(gint64, 1);
    *key = item->trial;
    *lease = item->lease;
    g_mutex_lock(&w->lock);
    g_hash_table_insert(w->held, key, lease);
    g_mutex_unlock(&w->lock);
    say(w, "trial %" G_GINT64_FORMAT ": evaluating", item->trial);
    double started = g_get_real_time() / 1e6;
    GError *eval_error = NULL;
    g_autoptr(GArray) intermediate = NULL;
    g_autoptr(SieveResult) result = sieve_engine_evaluate_text(w->engine, store, item->trial, item->genotype,
                                                               item->fidelity, &intermediate, &eval_error);
    double finished = g_get_real_time() / 1e6;
    if (result == NULL) {
      /* The evaluator could not run at all here: recorded as this trial's
       * failure, with the reason, rather than lost. */
      result = sieve_result_new();
      sieve_result_set_failed(result, "worker %s: %s", name, eval_error->message);
      g_error_free(eval_error);
    }
    g_mutex_lock(&w->lock);
    g_hash_table_remove(w->held, &item->trial);
    g_mutex_unlock(&w->lock);
    gboolean kept = FALSE;
    if (!sieve__queue_complete(store, item->trial, item->lease, result,
                               intermediate ? (const SieveIntermediate *) intermediate->data : NULL,
                               intermediate ? intermediate->len : 0, started, finished, &kept, &error))
      goto fail;
    if (!kept)
      say(w, "trial %" G_GINT64_FORMAT ": result discarded: the lease expired and the evaluation went to another "
          "worker", item->trial);
    else
      say(w, "trial %" G_GINT64_FORMAT ": %s", item->trial, sieve_status_to_string(sieve_result_get_status(result)));
    idle_since = g_get_monotonic_time();
  }
fail:
  say(w, "%s", error ? error->message : "unknown error");
  g_atomic_int_inc(&w->failures);
  return NULL;
}

/* (transfer full) the study's experiment, as this machine's sieve reads it
 * with registry's plugins (refused: those that did not load). */
static SieveExperiment *
load_study(SieveStore *store, SieveRegistry *registry, GPtrArray *refused, GError **error)
{
  g_autofree char *config = sieve_store_get_meta(store, "config", error);
  if (config == NULL) {
    if (error && *error == NULL)
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE, "%s: holds no study", sieve_store_get_path(store));
    return NULL;
  }
  g_autofree char *version = sieve_store_get_meta(store, "sieve_version", NULL);
  if (version != NULL && strcmp(version, SIEVE_VERSION) != 0) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE,
                "%s: the study is coordinated by sieve %s and this is sieve %s: a worker must run the same version",
                sieve_store_get_path(store), version, SIEVE_VERSION);
    return NULL;
  }
  g_autofree char *dir = sieve_cli_study_dir(store);
  SieveExperiment *exp =
      sieve_experiment_load_string(config, sieve_store_get_path(store), dir, NULL, registry, refused, error);
  sieve_cli_warn_refused(refused);
  if (exp == NULL) {
    g_prefix_error(error, "this worker cannot run the study's evaluator as stored (plugins, options): ");
    return NULL;
  }
  /* The default name comes from the origin (here the store's URL): the
   * study's is the one its coordinator stored. */
  g_autofree char *name = sieve_store_get_meta(store, "name", NULL);
  if (name != NULL) {
    g_free(exp->name);
    exp->name = g_steal_pointer(&name);
  }
  return exp;
}

int
sieve_cmd_worker(int argc, char **argv)
{
  gint threads = 1;
  double lease_s = 30, idle_exit_s = INFINITY, reconnect_s = 60; /* idle: never, until the study is finished */
  g_autofree char *lease_text = NULL, *idle_text = NULL, *reconnect_text = NULL;
  gboolean quiet = FALSE, with_parent = FALSE;
  GOptionEntry entries[] = {
      {"threads", 't', 0, G_OPTION_ARG_INT, &threads, "evaluations at once in this process (default 1)", "T"},
      {"lease", 0, 0, G_OPTION_ARG_STRING, &lease_text,
       "seconds a claim stays valid without renewal: a dead worker's evaluations go elsewhere after this (default 30)",
       "S"},
      {"idle-exit", 0, 0, G_OPTION_ARG_STRING, &idle_text,
       "exit after S seconds with nothing to evaluate (0: as soon as nothing is; default: only when the study "
       "is finished)", "S"},
      {"reconnect-timeout", 0, 0, G_OPTION_ARG_STRING, &reconnect_text,
       "seconds to keep reconnecting to a server that went away before failing (default 60; 0: fail at once)",
       "S"},
      {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "print only errors", NULL},
      {"with-parent", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_NONE, &with_parent,
       "(sieve run --local-workers) exit with the process that started this one", NULL},
      {NULL},
  };
  g_autoptr(GOptionContext) context = g_option_context_new("STORE - evaluate a study's queued candidates");
  g_option_context_set_description(
      context, "Claims the evaluations that `sieve run CONFIG --store postgresql://...` queues, runs the study's\n"
               "evaluator on them and writes the results back, until the study is finished.  Start any number,\n"
               "on any machine that reaches the server and has the same sieve, plugins and data.  STORE '-'\n"
               "reads the URL from the environment variable SIEVE_STORE_URL (kept out of `ps`).");
  g_option_context_add_main_entries(context, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(context, &argc, &argv, &error))
    return sieve_cli_fail(error);
  if (!sieve_cli_parse_double("--lease", lease_text, 1, FALSE, INFINITY, &lease_s, &error) ||
      !sieve_cli_parse_double("--idle-exit", idle_text, 0, FALSE, INFINITY, &idle_exit_s, &error) ||
      !sieve_cli_parse_double("--reconnect-timeout", reconnect_text, 0, FALSE, INFINITY, &reconnect_s, &error))
    return sieve_cli_fail(error);
  if (argc != 2 || threads < 1) {
    fprintf(stderr, "sieve worker: expected one STORE argument, --threads >= 1, --lease >= 1, "
                    "--reconnect-timeout >= 0\n");
    return SIEVE_EXIT_USAGE;
  }
  sieve__db_set_reconnect_timeout(reconnect_s);
  if (with_parent)
    prctl(PR_SET_PDEATHSIG, SIGTERM);
  const char *url = strcmp(argv[1], "-") == 0 ? g_getenv("SIEVE_STORE_URL") : argv[1];
  if (url == NULL || !sieve_store_is_url(url)) {
    fprintf(stderr, "sieve worker: STORE must be a postgresql:// URL (an SQLite file has no workers)\n");
    return SIEVE_EXIT_USAGE;
  }
  /* The plugins first: a worker started before its study loads them while
   * it waits, not when the study comes (64 workers loading at that moment
   * would delay the first evaluations on a small machine). */
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  g_autoptr(GPtrArray) refused = g_ptr_array_new_with_free_func((GDestroyNotify) g_error_free);
  sieve_registry_load_default(registry, NULL, refused);
  /* A worker started before its study (a Slurm array beside the
   * coordinator) waits for it, as long as it would wait for work: woken
   * when its first evaluations are queued. */
  g_autoptr(SieveStore) store = NULL;
  gint64 since = g_get_monotonic_time();
  for (;;) {
    store = sieve_store_open(url, SIEVE_STORE_READ, &error);
    g_autofree char *config = store ? sieve_store_get_meta(store, "config", NULL) : NULL;
    /* The study is stored before its coordinator sets up the queue (meta
     * "queue" says it has): a worker that claimed in between met no queue
     * table and stopped. */
    g_autofree char *queue = config ? sieve_store_get_meta(store, "queue", NULL) : NULL;
    if (queue != NULL)
      break;
    gboolean absent = store != NULL || g_error_matches(error, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND) ||
                      (error && g_str_has_suffix(error->message, "not a sieve store (an empty study)"));
    if (!absent || (g_get_monotonic_time() - since) / 1e6 >= idle_exit_s) {
      if (error == NULL && config != NULL)
        g_set_error(&error, SIEVE_ERROR, SIEVE_ERROR_STORE, "%s: its study has no queue open for workers (its "
                    "coordinator, `sieve run` on this store, has not started)", sieve_store_get_path(store));
      else if (error == NULL)
        g_set_error(&error, SIEVE_ERROR, SIEVE_ERROR_STORE, "%s: holds no study", sieve_store_get_path(store));
      return sieve_cli_fail(error);
    }
    g_clear_error(&error);
    g_clear_pointer(&store, sieve_store_close);
    gint64 waited = g_get_monotonic_time();
    sieve__store_wait_for_queue(url, CLAIM_WAIT_S);
    if (g_get_monotonic_time() - waited < 50000) /* nothing to wait on: the server is away */
      g_usleep(200000);
  }
  g_autoptr(SieveExperiment) exp = load_study(store, registry, refused, &error);
  if (exp == NULL)
    return sieve_cli_fail(error);
  /* The coordinator screens (on its own device, with its own batch): a
   * worker only evaluates what passed. */
  exp->pipeline.screen.enabled = FALSE;
  g_autoptr(SieveEngine) engine = sieve_engine_new(exp, &error);
  if (engine == NULL) {
    g_prefix_error(&error, "this worker cannot run the study's evaluator as stored: ");
    return sieve_cli_fail(error);
  }
  Worker w = {.url = url, .engine = engine, .lease_s = lease_s, .idle_exit_s = idle_exit_s, .quiet = quiet};
  g_mutex_init(&w.lock);
  w.held = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
  /* A Lua component runs on the thread that loaded its script (this one):
   * more threads would each claim an evaluation only to fail it, "called
   * from another thread".  Said, as the study loop says it for workers. */
  const SieveComponent *in_lua = sieve__component_in_lua(exp->evaluator.component) ? exp->evaluator.component
                                 : sieve__component_in_lua(exp->space.component)   ? exp->space.component
                                                                                   : NULL;
  if (in_lua != NULL && threads > 1) {
    say(&w, "%s '%s' runs in Lua, on one thread: 1 thread, not %d", in_lua == exp->space.component ? "space"
        : "evaluator", sieve_component_get_name(in_lua), threads);
    threads = 1;
  }
  say(&w, "study '%s' on %s: %d thread%s, lease %g s", exp->name, sieve_store_get_path(store), threads,
      threads == 1 ? "" : "s", lease_s);
  w.first = g_steal_pointer(&store);
  GThread *renewer = g_thread_new("renew", renew_leases, &w);
  /* The first claim loop runs on this thread, where the engine was built. */
  GThread *pool[threads];
  for (gint i = 1; i < threads; i++)
    pool[i] = g_thread_new("claim", claim_loop, &w);
  claim_loop(&w);
  for (gint i = 1; i < threads; i++)
    g_thread_join(pool[i]);
  g_atomic_int_set(&w.stop, 1);
  g_thread_join(renewer);
  g_hash_table_unref(w.held);
  g_clear_pointer(&w.first, sieve_store_close);
  g_mutex_clear(&w.lock);
  return w.failures > 0 ? SIEVE_EXIT_FAILURE : SIEVE_EXIT_OK;
}
