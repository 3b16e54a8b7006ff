/* sieve: the search loop. */
#include <math.h>
#include <signal.h>
#include <string.h>

#include "engine.h"

struct _SieveEngine {
  const SieveExperiment *exp;
  SieveStore *store;
  SieveSpace *space;
  SieveOptimizer *optimizer;
  SieveEvaluator *evaluator;
};

/* One evaluation on its way back to the loop. */
typedef struct {
  SieveCandidate *candidate;
  SieveResult *result; /* NULL when the evaluator failed fatally */
  GError *error;
  double started, finished; /* unix seconds */
  gint worker;
} Job;

static volatile sig_atomic_t stop_requested;

void
sieve_engine_request_stop(void)
{
  stop_requested = 1;
}

static void
job_free(Job *job)
{
  sieve_candidate_free(job->candidate);
  if (job->result)
    sieve_result_free(job->result);
  g_clear_error(&job->error);
  g_free(job);
}

double
sieve_engine_objective(const SieveExperiment *experiment, const SieveResult *result)
{
  double v;
  if (sieve_result_get_status(result) != SIEVE_STATUS_OK ||
      !sieve_result_get_metric(result, experiment->objectives[0].metric, &v))
    return NAN;
  return v;
}

void
sieve_engine_oriented_objectives(const SieveExperiment *experiment, const SieveResult *result, double *out)
{
  gboolean ok = sieve_result_get_status(result) == SIEVE_STATUS_OK;
  for (guint i = 0; i < experiment->n_objectives; i++) {
    double v;
    if (!ok || !sieve_result_get_metric(result, experiment->objectives[i].metric, &v))
      out[i] = NAN;
    else
      out[i] = experiment->objectives[i].maximize ? v : -v;
  }
}

void
sieve_engine_free(SieveEngine *engine)
{
  if (engine == NULL)
    return;
  sieve_evaluator_free(engine->evaluator);
  sieve_optimizer_free(engine->optimizer);
  sieve_space_free(engine->space);
  g_free(engine);
}

/* A plugin's create() that fails without saying where gets the place of
 * its section, so that every config mistake points into the file. */
static void
locate_error(GError **error, const SieveSection *section)
{
  if (error == NULL || *error == NULL)
    return;
  const char *origin = sieve_node_origin(section->node);
  if (origin != NULL && g_str_has_prefix((*error)->message, origin))
    return;
  g_autofree char *where = sieve_node_where(section->node);
  g_prefix_error(error, "%s: %s '%s': ", where,
                 sieve_component_kind_to_string(sieve_component_get_kind(section->component)),
                 sieve_component_get_name(section->component));
}

SieveEngine *
sieve_engine_new(const SieveExperiment *experiment, GError **error)
{
  g_return_val_if_fail(experiment != NULL, NULL);
  g_autoptr(SieveEngine) engine = g_new0(SieveEngine, 1);
  engine->exp = experiment;
  engine->space = sieve_space_new(experiment->space.component, experiment->space.options, error);
  if (engine->space == NULL) {
    locate_error(error, &experiment->space);
    return NULL;
  }
  /* The evaluator first: the optimizer may need the fidelity it offers. */
  engine->evaluator = sieve_evaluator_new(experiment->evaluator.component, engine->space,
                                          experiment->evaluator.options, error);
  if (engine->evaluator == NULL) {
    locate_error(error, &experiment->evaluator);
    return NULL;
  }
  SieveStudyInfo study = {
      .seed = experiment->optimizer_seed,
      .n_objectives = experiment->n_objectives,
      .objective_names = experiment->objective_names,
      .fidelity = sieve_evaluator_get_fidelity(engine->evaluator),
  };
  engine->optimizer = sieve_optimizer_new(experiment->optimizer.component, engine->space,
                                          experiment->optimizer.options, &study, error);
  if (engine->optimizer == NULL) {
    locate_error(error, &experiment->optimizer);
    return NULL;
  }
  return g_steal_pointer(&engine);
}

/* A resumed study: the optimizer continues from its last saved state. */
static gboolean
restore_optimizer(SieveEngine *engine, GError **error)
{
  GError *local = NULL;
  g_autoptr(GVariant) state = sieve_store_load_state(engine->store, "optimizer", &local);
  if (local != NULL) {
    g_propagate_error(error, local);
    return FALSE;
  }
  return state == NULL || sieve_optimizer_load(engine->optimizer, state, error);
}

/* ---- evaluation ------------------------------------------------------- */

static GPrivate worker_id_key;
static gint next_worker_id;

static gint
current_worker(void)
{
  gint id = GPOINTER_TO_INT(g_private_get(&worker_id_key));
  if (id == 0) {
    id = g_atomic_int_add(&next_worker_id, 1) + 1;
    g_private_set(&worker_id_key, GINT_TO_POINTER(id));
  }
  return id - 1;
}

/* An evaluator's progress inside a trial (epochs, batches) to the display. */
static void
report_activity(gpointer user_data, const SieveCandidate *candidate, const char *text, double fraction_done)
{
  sieve_progress_activity(user_data, sieve_candidate_get_trial(candidate), text);
}

static void
run_job(Job *job, SieveEvaluator *evaluator)
{
  job->worker = current_worker();
  job->started = g_get_real_time() / 1e6;
  job->result = sieve_evaluator_evaluate(evaluator, job->candidate, &job->error);
  job->finished = g_get_real_time() / 1e6;
}

typedef struct {
  SieveEvaluator *evaluator;
  GAsyncQueue *done;
} PoolData;

static void
pool_func(gpointer data, gpointer user_data)
{
  PoolData *pd = user_data;
  run_job(data, pd->evaluator);
  g_async_queue_push(pd->done, data);
}

/* ---- store transactions ---------------------------------------------- */

static gboolean
save_optimizer(SieveEngine *engine, GError **error)
{
  g_autoptr(GVariant) state = sieve_optimizer_save(engine->optimizer, error);
  return state != NULL && sieve_store_save_state(engine->store, "optimizer", state, error);
}

/* Ask for up to n candidates and store them, with the state after the ask,
 * in one transaction.  Appends the stored candidates to out. */
static gboolean
ask_and_store(SieveEngine *engine, guint n, GQueue *out, GError **error)
{
  g_autoptr(GPtrArray) asked = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_candidate_free);
  if (!sieve_optimizer_ask(engine->optimizer, n, asked, error))
    return FALSE;
  if (asked->len == 0)
    return TRUE;
  if (!sieve_store_begin(engine->store, error))
    return FALSE;
  for (guint i = 0; i < asked->len; i++) {
    SieveCandidate *c = asked->pdata[i];
    gint64 number = sieve_store_add_trial(engine->store, sieve_candidate_get_text(c),
                                          sieve_candidate_get_fidelity(c), error);
    if (number < 0)
      goto fail;
    sieve_candidate_set_trial(c, number);
  }
  if (!save_optimizer(engine, error) || !sieve_store_commit(engine->store, error))
    goto fail;
  g_ptr_array_set_free_func(asked, NULL); /* the queue owns them now */
  for (guint i = 0; i < asked->len; i++)
    g_queue_push_tail(out, asked->pdata[i]);
  return TRUE;
fail:
  sieve_store_rollback(engine->store);
  return FALSE;
}

static gboolean
finish_and_store(SieveEngine *engine, Job *job, double elapsed, GError **error)
{
  double told[engine->exp->n_objectives];
  sieve_engine_oriented_objectives(engine->exp, job->result, told);
  if (!sieve_store_begin(engine->store, error))
    return FALSE;
  g_autofree char *elapsed_text = g_strdup_printf("%.3f", elapsed);
  if (!sieve_store_finish_trial(engine->store, sieve_candidate_get_trial(job->candidate), job->result,
                                job->started, job->finished, job->worker, -1, error) ||
      !sieve_optimizer_tell(engine->optimizer, job->candidate, job->result, told, error) ||
      !save_optimizer(engine, error) ||
      !sieve_store_set_meta(engine->store, "elapsed_s", elapsed_text, error) ||
      !sieve_store_commit(engine->store, error)) {
    sieve_store_rollback(engine->store);
    return FALSE;
  }
  return TRUE;
}

/* An OK result without an objective metric means a typo in the experiment
 * or the wrong evaluator: stop at once rather than spend the budget. */
static gboolean
check_objective(SieveEngine *engine, const SieveResult *result, GError **error)
{
  if (sieve_result_get_status(result) != SIEVE_STATUS_OK)
    return TRUE;
  for (guint k = 0; k < engine->exp->n_objectives; k++) {
    const SieveObjective *objective = &engine->exp->objectives[k];
    if (sieve_result_get_metric(result, objective->metric, NULL))
      continue;
    guint n = sieve_result_n_metrics(result);
    g_autofree const char **names = g_new0(const char *, n + 1);
    for (guint i = 0; i < n; i++)
      names[i] = sieve_result_metric_name(result, i);
    const char *guess = sieve_suggest(objective->metric, names);
    g_autofree char *all = n ? g_strjoinv(", ", (char **) names) : g_strdup("none");
    g_autofree char *hint = guess ? g_strdup_printf(" (did you mean '%s'?)", guess) : g_strdup("");
    sieve_node_set_error(error, objective->node,
                         "evaluator '%s' did not report the objective metric '%s'%s; it reported: %s",
                         sieve_component_get_name(engine->exp->evaluator.component), objective->metric, hint, all);
    return FALSE;
  }
  return TRUE;
}

/* ---- the loop --------------------------------------------------------- */

typedef struct {
  SieveEngine *engine;
  SieveProgress *progress;
  gint64 finished;
  gint64 best_number;
  double best;
} RunState;

static void
note_best(RunState *rs, gint64 number, double objective)
{
  if (isnan(objective))
    return;
  gboolean better = rs->best_number < 0 ||
                    (rs->engine->exp->objectives[0].maximize ? objective > rs->best : objective < rs->best);
  if (better) {
    rs->best = objective;
    rs->best_number = number;
  }
}

/* Trials stored but never finished (a kill, a crash, an interrupt) go back
 * to the evaluator, in trial order, before anything new is asked. */
static gboolean
load_pending(RunState *rs, GQueue *queue, GError **error)
{
  SieveEngine *engine = rs->engine;
  g_autoptr(GPtrArray) trials = sieve_store_list_trials(engine->store, FALSE, error);
  if (trials == NULL)
    return FALSE;
  for (guint i = 0; i < trials->len; i++) {
    SieveTrial *t = trials->pdata[i];
    if (t->status != SIEVE_STATUS_PENDING) {
      rs->finished++;
      note_best(rs, t->number, sieve_engine_objective(engine->exp, t->result));
      continue;
    }
    GError *local = NULL;
    SieveGenotype *g = sieve_space_parse(engine->space, t->genotype, &local);
    if (g == NULL) {
      g_propagate_prefixed_error(error, local, "%s: pending trial %" G_GINT64_FORMAT ": ",
                                 sieve_store_get_path(engine->store), t->number);
      return FALSE;
    }
    SieveCandidate *c = sieve_candidate_new(g, t->fidelity);
    sieve_candidate_set_trial(c, t->number);
    g_queue_push_tail(queue, c);
  }
  return TRUE;
}

gboolean
sieve_engine_run(SieveEngine *engine, SieveStore *store, SieveProgress *progress, GError **error)
{
  g_return_val_if_fail(engine != NULL && store != NULL, FALSE);
  g_return_val_if_fail(engine->store == NULL, FALSE); /* one run per engine */
  engine->store = store;
  if (!restore_optimizer(engine, error))
    return FALSE;
  const SieveExperiment *exp = engine->exp;
  RunState rs = {engine, progress, 0, -1, NAN};
  g_autoptr(GAsyncQueue) done = g_async_queue_new();
  GQueue ready = G_QUEUE_INIT; /* SieveCandidate* stored and waiting for a worker */
  GError *fatal = NULL;
  gboolean exhausted = FALSE;
  guint inflight = 0;
  stop_requested = 0;

  if (!load_pending(&rs, &ready, error)) {
    g_queue_clear_full(&ready, (GDestroyNotify) sieve_candidate_free);
    return FALSE;
  }
  if (progress != NULL && rs.best_number >= 0)
    sieve_progress_set_best(progress, rs.best_number, rs.best);

  guint workers = exp->workers;
  if (workers > 1 && !sieve_evaluator_is_concurrent(engine->evaluator)) {
    if (progress)
      sieve_progress_message(progress, "evaluator '%s' cannot run concurrently: using 1 worker, not %u",
                             sieve_component_get_name(exp->evaluator.component), workers);
    workers = 1;
  }
  PoolData pool_data = {engine->evaluator, done};
  GThreadPool *pool = NULL;
  if (workers > 1)
    pool = g_thread_pool_new(pool_func, &pool_data, (gint) workers, FALSE, NULL);

  double elapsed_before = 0;
  g_autofree char *elapsed_text = sieve_store_get_meta(engine->store, "elapsed_s", NULL);
  if (elapsed_text)
    elapsed_before = g_ascii_strtod(elapsed_text, NULL);
  gint64 start = g_get_monotonic_time();
#define ELAPSED() (elapsed_before + (g_get_monotonic_time() - start) / 1e6)

  for (;;) {
    /* Fill the free workers: pending trials first, then new proposals. */
    while (!stop_requested && fatal == NULL && inflight < workers) {
      if (g_queue_is_empty(&ready)) {
        gint64 left = G_MAXINT64;
        if (exp->budget_evaluations > 0)
          left = exp->budget_evaluations - rs.finished - inflight;
        if (left <= 0 || exhausted || (exp->budget_seconds > 0 && ELAPSED() >= exp->budget_seconds))
          break;
        guint want = (guint) MIN((gint64) (workers - inflight), left);
        if (!ask_and_store(engine, want, &ready, &fatal))
          break;
        if (g_queue_is_empty(&ready)) {
          exhausted = TRUE;
          if (progress)
            sieve_progress_message(progress, "optimizer '%s' has no more candidates",
                                   sieve_component_get_name(exp->optimizer.component));
          break;
        }
        continue;
      }
      Job *job = g_new0(Job, 1);
      job->candidate = g_queue_pop_head(&ready);
      if (progress)
        sieve_candidate_set_report_func(job->candidate, report_activity, progress);
      inflight++;
      if (pool != NULL)
        g_thread_pool_push(pool, job, NULL);
      else {
        run_job(job, engine->evaluator);
        g_async_queue_push(done, job);
      }
    }
    if (inflight == 0)
      break;

    Job *job = g_async_queue_pop(done);
    inflight--;
    if (job->result == NULL) {
      if (fatal == NULL)
        fatal = g_steal_pointer(&job->error);
      job_free(job);
      continue;
    }
    /* A trial that failed after an interrupt was most likely killed by it
     * (the terminal sends SIGINT to the evaluator's processes too): leave it
     * pending so --resume runs it again instead of recording a false failure. */
    if (stop_requested && sieve_result_get_status(job->result) == SIEVE_STATUS_FAILED) {
      job_free(job);
      continue;
    }
    GError *local = NULL;
    if (!finish_and_store(engine, job, ELAPSED(), &local)) {
      if (fatal == NULL)
        fatal = local;
      else
        g_error_free(local);
      job_free(job);
      continue;
    }
    rs.finished++;
    double objective = sieve_engine_objective(exp, job->result);
    note_best(&rs, sieve_candidate_get_trial(job->candidate), objective);
    if (progress)
      sieve_progress_trial(progress, sieve_candidate_get_trial(job->candidate), sieve_result_get_status(job->result),
                           objective, sieve_candidate_get_text(job->candidate), sieve_result_get_cost(job->result),
                           sieve_result_get_reason(job->result));
    if (fatal == NULL && !check_objective(engine, job->result, &local))
      fatal = local;
    job_free(job);
  }
#undef ELAPSED

  if (pool != NULL)
    g_thread_pool_free(pool, FALSE, TRUE);
  g_queue_clear_full(&ready, (GDestroyNotify) sieve_candidate_free);
  if (progress)
    sieve_progress_end(progress);
  if (fatal != NULL) {
    g_propagate_error(error, fatal);
    return FALSE;
  }
  return TRUE;
}
