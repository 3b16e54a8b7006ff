/* sieve: the search loop, and the pipeline stages a proposal passes on its
 * way to the evaluator (the pipeline section of core/core-private.h).
 *
 * A proposal's path: the optimizer's ask -> stored pending (with its hash)
 * -> constraints (the metrics known before evaluation computed from its own
 * genotype; a proposal that breaks a constraint is finished as rejected,
 * told to the optimizer as infeasible, and costs no evaluation) -> dedupe:
 * answered from the store's cache (with its own metrics of before), or
 * attached to an identical proposal already on its way (in the same batch
 * or being evaluated), or a miss -> screen (a round of new proposals scored
 * by zero-cost proxies; the best go on, the others are finished as
 * screened; a promotion to a higher fidelity goes on unscreened) -> the evaluator ->
 * stored with its result (and, when OK, put in the cache), told to the
 * optimizer, and every proposal attached to it answered in the same
 * transaction.
 *
 * Durability: every change of a trial's state is one transaction together
 * with the optimizer's state after the tells it implies, so a kill at any
 * instant leaves a consistent store.  On resume the pending trials run
 * through the stages again in trial order: a cache hit stays a hit, a
 * duplicate attaches to the same original, a round whose screening was not
 * stored is screened again, and a trial stored as past the screen (stage
 * 'evaluate') goes straight to the evaluator.  Evaluations happen in trial
 * order, so one worker and a deterministic evaluator end with exactly the
 * trials of an uninterrupted run.
 *
 * What the dedupe cache holds: only OK results.  A failed evaluation may be
 * transient (a crash, a timeout, memory), so a later duplicate of it is
 * evaluated again; one attached to it while it ran is evaluated after it.
 */
#include <math.h>
#include <signal.h>
#include <string.h>

#include <sieve/proxy.h>
#include <sieve/runtime.h>
#include <sieve/text.h>

#include "engine/engine-private.h"
#include "sieve-config.h"
#include "store/store-private.h"

/* The longest a coordinator waits for results before it looks again: a
 * worker's notification wakes it sooner (sieve__queue_wait). */
#define QUEUE_WAIT_S 1.0

/* One cache key: the evaluator settings at one fidelity. */
typedef struct {
  double fidelity;
  char *digest;
  char *text;
} CacheKey;

struct _SieveEngine {
  const SieveExperiment *exp;
  SieveStore *store;
  SieveSpace *space;
  SieveOptimizer *optimizer;
  SieveEvaluator *evaluator;
  gboolean dedupe;
  SieveDedupeHash hash_kind; /* effective: the stage's, or its default for the space */
  GPtrArray *keys;           /* CacheKey*, one per fidelity met */
  GPtrArray *shared;         /* SieveStore* of dedupe.cache_from, read-only, during a run */
  SieveProxyBatch *screen_batch; /* the screen's batch of real examples, NULL: random */
  guint queue_in_flight;         /* > 0: evaluations go to the store's queue (sieve_engine_set_queue) */
  SievePruner *pruner;           /* the experiment's pruner, NULL: none */
  /* tell_order: trial with a pruner: trial -> the completed trials it is
   * judged against (gint64 in pointers), of the trials asked and not
   * finished, saved with each ask (state "pruner_seen") so that a resumed
   * trial is judged as it would have been; NULL otherwise. */
  GHashTable *pruner_seen;
  /* Kept with pruner_seen: trial finished OK -> the trials told OK before
   * it, saved with each tell (state "pruner_order"), so that a resumed run
   * numbers the references in the order they were told. */
  GHashTable *pruner_order;
  /* Trial -> the failed original whose place it took (finish_told), saved
   * with the hand-over (state "waited_for"): a resumed run counts it as the
   * cache hit it was in the runs "in a row". */
  GHashTable *waited_for;
  SieveConstrainer *constrainer; /* metrics before evaluation and constraints, NULL: none */
  gboolean scripts_known;        /* scripts computed (on the first cache key) */
  char *scripts;                 /* the cache key's scripts line, NULL: none (sieve__study_key_changed_scripts) */
};

/* A stored trial on its way through the pipeline. */
typedef struct Proposal Proposal;
struct Proposal {
  SieveCandidate *candidate;
  char hash[SIEVE_DEDUPE_HASH_LEN]; /* "" when not hashed */
  const CacheKey *key;              /* with a hash */
  char *slot;                       /* hash + key: the in-flight table's key (nullable) */
  char *hash_error;                 /* why it has no hash (nullable) */
  gboolean screened_in;             /* past the screen: goes to the evaluator */
  gboolean unchecked;               /* the constraints could not be checked (not built or measured) */
  gboolean counted;                 /* resumed: its place in the runs "in a row" is counted (resume_trials) */
  gboolean waited;                  /* resumed: it waited for an original that failed (a hit "in a row") */
  gint64 seen;                      /* tell_order: trial: the completed trials the pruner judges it against,
                                     * fixed when it was asked; -1: not fixed (a store from before) */
  SieveResult *scores;              /* its proxy scores, kept with its result (nullable) */
  GPtrArray *waiters;               /* Proposal*: duplicates answered with its result (owned, nullable) */
};

/* One evaluation on its way back to the loop. */
typedef struct {
  Proposal *proposal;
  SieveResult *result; /* NULL when the evaluator failed fatally */
  GError *error;
  double started, finished; /* unix seconds */
  gint worker;
  SievePruner *pruner;   /* (nullable) borrowed from the engine */
  gint64 seen;             /* the completed trials the pruner judges it against (G_MAXINT64: all) */
  SievePrunerCurve *curve; /* (nullable) what the pruner keeps of this trial between its reports */
  GArray *intermediate;  /* SieveIntermediate: what the evaluation reported, by step */
  gboolean pruned;       /* the pruner stopped it */
  gboolean repeated;      /* it reported a step again (the first: repeated_step), for a warning */
  gint64 repeated_step;
  gboolean misreported;   /* it reported a step below 0 or below one it reported before: the trial fails */
  gint64 bad_step, bad_after; /* that step, and the largest before it (-1: none) */
  gboolean arrived; /* back from its worker (tell_order: trial holds it until its turn) */
} Job;

static volatile sig_atomic_t stop_requested;

void
sieve_engine_request_stop(void)
{
  stop_requested = 1;
}

static void
proposal_free(Proposal *p)
{
  if (p == NULL)
    return;
  sieve_candidate_free(p->candidate);
  g_free(p->slot);
  g_free(p->hash_error);
  if (p->scores)
    sieve_result_free(p->scores);
  if (p->waiters)
    g_ptr_array_unref(p->waiters);
  g_free(p);
}

static Proposal *
proposal_new(SieveCandidate *candidate)
{
  Proposal *p = g_new0(Proposal, 1);
  p->candidate = candidate;
  p->seen = -1;
  return p;
}

static gint64
proposal_number(const Proposal *p)
{
  return sieve_candidate_get_trial(p->candidate);
}

static void
job_free(Job *job)
{
  proposal_free(job->proposal);
  if (job->result)
    sieve_result_free(job->result);
  g_clear_error(&job->error);
  if (job->intermediate)
    g_array_unref(job->intermediate);
  sieve_pruner_curve_free(job->curve);
  g_free(job);
}

static void
cache_key_free(CacheKey *key)
{
  g_free(key->digest);
  g_free(key->text);
  g_free(key);
}

/* A result's value of the primary objective as reported, whatever its status. */
static double
metric_value(const SieveExperiment *experiment, const SieveResult *result)
{
  double v;
  return sieve_result_get_metric(result, experiment->objectives[0].metric, &v) ? v : NAN;
}

double
sieve_engine_objective(const SieveExperiment *experiment, const SieveResult *result)
{
  if (sieve_result_get_status(result) != SIEVE_STATUS_OK)
    return NAN;
  return metric_value(experiment, result);
}

/* A cached result is an OK result reused: optimizers see its objectives. */
void
sieve_engine_oriented_objectives(const SieveExperiment *experiment, const SieveResult *result, double *out)
{
  SieveStatus status = sieve_result_get_status(result);
  /* A pruned trial is told with its last value, at the fidelity it reached. */
  gboolean ok = status == SIEVE_STATUS_OK || status == SIEVE_STATUS_CACHED || status == SIEVE_STATUS_PRUNED;
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
  if (engine->keys)
    g_ptr_array_unref(engine->keys);
  if (engine->shared)
    g_ptr_array_unref(engine->shared);
  sieve_proxy_batch_free(engine->screen_batch);
  sieve_pruner_free(engine->pruner);
  if (engine->pruner_seen)
    g_hash_table_unref(engine->pruner_seen);
  if (engine->pruner_order)
    g_hash_table_unref(engine->pruner_order);
  if (engine->waited_for)
    g_hash_table_unref(engine->waited_for);
  sieve_constrainer_free(engine->constrainer);
  g_free(engine->scripts);
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
  g_autofree char *whose = g_strdup_printf("%s '%s': ",
                                           sieve_component_kind_to_string(sieve_component_get_kind(section->component)),
                                           sieve_component_get_name(section->component));
  /* (an error that names the component already: its location only) */
  if (g_str_has_prefix((*error)->message, whose))
    g_prefix_error(error, "%s: ", where);
  else
    g_prefix_error(error, "%s: %s", where, whose);
}

/* The stores of dedupe.cache_from, opened read-only with the engine,
 * so that a missing one is reported before the study's store is touched. */
static gboolean
open_shared(SieveEngine *engine, GError **error)
{
  const SieveDedupeStage *dedupe = &engine->exp->pipeline.dedupe;
  for (guint i = 0; engine->dedupe && dedupe->cache_from[i]; i++) {
    GError *local = NULL;
    SieveStore *other = sieve_store_open(dedupe->cache_from[i], SIEVE_STORE_READ, &local);
    if (other == NULL) {
      g_autofree char *where = sieve_node_where(dedupe->cache_from_node);
      g_propagate_prefixed_error(error, local, "%s: stage 'dedupe': cache_from: ", where);
      return FALSE;
    }
    g_ptr_array_add(engine->shared, other);
  }
  return TRUE;
}

/* The space whose networks a study builds: a composite's architecture
 * part, or the space itself. (transfer none) */
static const SieveSpace *
network_space(const SieveSpace *space)
{
  guint first = 0;
  const SieveSpace *arch = sieve__space_arch_part(space, &first);
  return arch != NULL ? arch : space;
}

/* The stages' needs the config alone cannot check: what the space builds. */
static gboolean
check_pipeline(SieveEngine *engine, GError **error)
{
  const SievePipeline *pipeline = &engine->exp->pipeline;
  gboolean networks = sieve_space_can_build(engine->space);
  const char *space = sieve_component_get_name(engine->exp->space.component);
  if (pipeline->dedupe.enabled) {
    engine->dedupe = TRUE;
    engine->hash_kind = pipeline->dedupe.hash;
    if (!pipeline->dedupe.hash_set) {
      engine->hash_kind = networks ? SIEVE_DEDUPE_FUNCTIONAL : SIEVE_DEDUPE_GENOTYPE;
      /* A space with a structural hash of its own (nb101's: the
       * benchmark's graph hash) joins cells whose networks differ (an
       * isomorphic relabelling splits channels and concatenates in vertex
       * order), which the functional hash of the network tells apart:
       * there the space's identity is the default. */
      const SieveSpaceClass *klass = sieve__space_get_class(network_space(engine->space));
      if (networks && klass != NULL && klass->hash != NULL)
        engine->hash_kind = SIEVE_DEDUPE_STRUCTURAL;
    }
    else if (!networks && engine->hash_kind != SIEVE_DEDUPE_GENOTYPE) {
      sieve_node_set_error(error, pipeline->dedupe.node,
                           "stage 'dedupe': space '%s' builds no networks, so it has no %s hash; use hash: genotype",
                           space, sieve_dedupe_hash_name(engine->hash_kind));
      return FALSE;
    }
    engine->keys = g_ptr_array_new_with_free_func((GDestroyNotify) cache_key_free);
    engine->shared = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_store_close);
    if (!open_shared(engine, error))
      return FALSE;
  }
  if (pipeline->screen.enabled && !networks) {
    sieve_node_set_error(error, pipeline->screen.node,
                         "stage 'screen': space '%s' builds no networks, so there is nothing for the proxies to score",
                         space);
    return FALSE;
  }
  GError *local = NULL;
  if (pipeline->screen.enabled &&
      !sieve_proxy_check_names((const char *const *) pipeline->screen.proxies, pipeline->screen.n_proxies, &local)) {
    g_autofree char *where = sieve_node_where(pipeline->screen.proxies_node);
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "%s: stage 'screen': %s", where, local->message);
    g_error_free(local);
    return FALSE;
  }
  /* The screen keeps the best of a round by their scores: where none can
   * be scored it would keep the first proposed, so a device that is not
   * here is refused now (the evaluators fail each trial instead, which
   * shows).  auto says what it took. */
  if (pipeline->screen.enabled && pipeline->screen.device != NULL &&
      !g_str_equal(pipeline->screen.device, "cpu")) {
    g_autofree char *note = NULL;
    gboolean gpu = g_str_equal(sieve_runtime_resolve_device("auto", &note), "cuda");
    if (g_str_equal(pipeline->screen.device, "auto")) {
      g_printerr("stage 'screen': %s\n", note);
    } else if (!gpu) {
      const char *why = strchr(note, '(');
      g_autofree char *reason = why ? g_strndup(why + 1, strlen(why + 1) - 1) : g_strdup("no GPU");
      g_autofree char *where = sieve_node_where(pipeline->screen.device_node ? pipeline->screen.device_node
                                                                             : pipeline->screen.node);
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                  "%s: stage 'screen': device cuda: %s%s: its proxies could score no candidate; use device: auto "
                  "(the CPU where there is no GPU) or cpu", where,
                  g_str_has_prefix(reason, "this build") ? "" : "no CUDA device: ", reason);
      return FALSE;
    }
  }
  if (pipeline->screen.enabled && pipeline->screen.dataset != NULL) {
    engine->screen_batch = sieve_screen_batch_load(&pipeline->screen, engine->space, &local);
    if (engine->screen_batch == NULL) {
      g_autofree char *where = sieve_node_where(pipeline->screen.dataset_node);
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "%s: stage 'screen': %s", where, local->message);
      g_error_free(local);
      return FALSE;
    }
  }
  return TRUE;
}

char *
sieve_engine_objective_undeclared(const char *evaluator, const char *const *declared, const char *metric)
{
  if (declared == NULL || g_strv_contains(declared, metric))
    return NULL;
  const char *guess = sieve_suggest(metric, declared);
  g_autofree char *all = declared[0] ? g_strjoinv(", ", (char **) declared) : g_strdup("none");
  return g_strdup_printf("evaluator '%s' does not report the objective metric '%s'%s%s%s; it reports: %s", evaluator,
                         metric, guess ? " (did you mean '" : "", guess ? guess : "", guess ? "'?)" : "", all);
}

/* An objective the evaluator says it never reports is refused before the
 * store is opened and before any evaluation (a misspelt metric would
 * otherwise show only after a first, perhaps long, training). */
static gboolean
check_objectives_declared(SieveEngine *engine, GError **error)
{
  const char *const *metrics = sieve_evaluator_get_metrics(engine->evaluator);
  for (guint k = 0; k < engine->exp->n_objectives; k++) {
    const SieveObjective *objective = &engine->exp->objectives[k];
    if (sieve_constrainer_computes(engine->exp, objective->metric))
      continue;
    g_autofree char *message = sieve_engine_objective_undeclared(
        sieve_component_get_name(engine->exp->evaluator.component), metrics, objective->metric);
    if (message != NULL) {
      sieve_node_set_error(error, objective->node, "%s", message);
      return FALSE;
    }
  }
  return TRUE;
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
  if (!check_pipeline(engine, error))
    return NULL;
  /* The evaluator first: the optimizer may need the fidelity it offers. */
  engine->evaluator = sieve_evaluator_new(experiment->evaluator.component, engine->space,
                                          experiment->evaluator.options, error);
  if (engine->evaluator == NULL) {
    locate_error(error, &experiment->evaluator);
    return NULL;
  }
  if (!check_objectives_declared(engine, error))
    return NULL;
  if (experiment->pruner != NULL) {
    g_autofree char *refusal =
        sieve_engine_pruner_refusal(engine->evaluator, experiment->objective_names, experiment->n_objectives);
    if (refusal != NULL) {
      sieve_node_set_error(error, experiment->pruner, "%s", refusal);
      return NULL;
    }
    engine->pruner = sieve_pruner_new(experiment->pruner, experiment->dir, experiment->objectives[0].maximize, error);
    if (engine->pruner == NULL)
      return NULL;
  }
  engine->constrainer = sieve_constrainer_new(experiment, sieve_evaluator_get_metrics(engine->evaluator));
  if (engine->constrainer != NULL && !sieve_space_can_build(engine->space)) {
    sieve_node_set_error(error, experiment->n_constraints ? experiment->constraints[0].node
                                : experiment->pipeline.latency.node ? experiment->pipeline.latency.node
                                                                    : experiment->objectives[0].node,
                         "space '%s' builds no networks: nothing to measure or count before evaluation",
                         sieve_component_get_name(experiment->space.component));
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

char *
sieve_engine_describe_pipeline(const SieveEngine *engine)
{
  g_return_val_if_fail(engine != NULL, NULL);
  const SievePipeline *pipeline = &engine->exp->pipeline;
  if (!pipeline->dedupe.enabled && !pipeline->screen.enabled && !pipeline->latency.enabled &&
      engine->exp->n_constraints == 0)
    return NULL;
  GString *text = g_string_new(NULL);
  /* In the order admit() runs them: what is known before evaluation first. */
  if (pipeline->latency.enabled && pipeline->latency.options.threads == 0) /* threads: 0 is every core */
    g_string_append_printf(text, "latency (batch %u, a thread per core: %u) -> ", pipeline->latency.options.batch,
                           g_get_num_processors());
  else if (pipeline->latency.enabled)
    g_string_append_printf(text, "latency (batch %u, %u thread%s) -> ", pipeline->latency.options.batch,
                           pipeline->latency.options.threads, pipeline->latency.options.threads == 1 ? "" : "s");
  if (engine->exp->n_constraints > 0)
    g_string_append_printf(text, "constraints (%u) -> ", engine->exp->n_constraints);
  if (pipeline->dedupe.enabled)
    g_string_append_printf(text, "dedupe (%s hash) -> ", sieve_dedupe_hash_name(engine->hash_kind));
  if (pipeline->screen.enabled) {
    g_autofree char *names = g_strjoinv("+", pipeline->screen.proxies);
    if (pipeline->screen.keep_top > 0)
      g_string_append_printf(text, "screen (%s, best %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT ") -> ", names,
                             pipeline->screen.keep_top, pipeline->screen.batch);
    else
      g_string_append_printf(text, "screen (%s, best %g%% of %" G_GINT64_FORMAT ") -> ", names,
                             100 * pipeline->screen.keep_fraction, pipeline->screen.batch);
  }
  g_string_append_printf(text, "%s", sieve_component_get_name(engine->exp->evaluator.component));
  return g_string_free(text, FALSE);
}

/* A resumed study: the optimizer continues from its last saved state. */
gboolean
sieve_engine_restore_optimizer(SieveOptimizer *optimizer, SieveStore *store, GError **error)
{
  g_return_val_if_fail(optimizer != NULL && store != NULL, FALSE);
  GError *local = NULL;
  g_autoptr(GVariant) state = sieve_store_load_state(store, "optimizer", &local);
  if (local != NULL) {
    g_propagate_error(error, local);
    return FALSE;
  }
  if (state != NULL)
    return sieve_optimizer_load(optimizer, state, error);
  /* The state is saved in the transaction of every ask (sieve run and
   * sieve.study alike): trials without it are a damaged store, and a fresh
   * optimizer would not continue the study as it ran. */
  gint64 n = sieve_store_count_trials(store, -1, error);
  if (n < 0)
    return FALSE;
  if (n > 0) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE,
                "%s: corrupt store: %" G_GINT64_FORMAT " trial%s stored but no state 'optimizer' (expected the "
                "optimizer's state, saved with every ask; a fresh optimizer would not continue the study as it ran)",
                sieve_store_get_path(store), n, n == 1 ? "" : "s");
    return FALSE;
  }
  return TRUE;
}

static gboolean
restore_optimizer(SieveEngine *engine, GError **error)
{
  return sieve_engine_restore_optimizer(engine->optimizer, engine->store, error);
}

/* A state that maps trials to numbers (a{xx}: pruner_seen, pruner_order,
 * waited_for); *out stays NULL when none was saved (a store from before,
 * or a study that does not keep it). */
static gboolean
load_trial_map(SieveStore *store, const char *name, GHashTable **out, GError **error)
{
  GError *local = NULL;
  g_autoptr(GVariant) state = sieve_store_load_state(store, name, &local);
  if (local != NULL) {
    g_propagate_error(error, local);
    return FALSE;
  }
  if (state == NULL || !g_variant_is_of_type(state, G_VARIANT_TYPE("a{xx}")))
    return TRUE;
  *out = g_hash_table_new(g_direct_hash, g_direct_equal);
  GVariantIter it;
  gint64 trial, value;
  g_variant_iter_init(&it, state);
  while (g_variant_iter_next(&it, "{xx}", &trial, &value))
    if (trial >= 0 && value >= 0)
      g_hash_table_insert(*out, GSIZE_TO_POINTER((gsize) trial), GSIZE_TO_POINTER((gsize) value));
  return TRUE;
}

static gboolean
save_trial_map(SieveStore *store, const char *name, GHashTable *map, GError **error)
{
  GVariantBuilder b;
  g_variant_builder_init(&b, G_VARIANT_TYPE("a{xx}"));
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, map);
  while (g_hash_table_iter_next(&it, &k, &v))
    g_variant_builder_add(&b, "{xx}", (gint64) GPOINTER_TO_SIZE(k), (gint64) GPOINTER_TO_SIZE(v));
  return sieve_store_save_state(store, name, g_variant_builder_end(&b), error);
}

/* One trial that finished OK: its place among those told (-1 when not
 * saved: before any saved), and its values. */
typedef struct {
  gint64 place, number;
  guint first, n;
} Completed;

static gint
completed_compare(gconstpointer a, gconstpointer b)
{
  const Completed *x = a, *y = b;
  gboolean xs = x->place >= 0, ys = y->place >= 0;
  if (xs != ys)
    return xs ? 1 : -1;
  if (x->place != y->place)
    return x->place < y->place ? -1 : 1;
  return x->number < y->number ? -1 : x->number > y->number;
}

/* A pruner's reference curves: those of the trials in store that finished
 * OK (a resumed study's earlier runs; for a worker, the study so far).
 * *order (nullable) gets the places saved (state "pruner_order"). */
static gboolean
add_completed_curves(SievePruner *pruner, SieveStore *store, GHashTable **order, GError **error)
{
  g_autoptr(GArray) values = sieve_store_list_intermediate(store, -1, error);
  if (values == NULL)
    return FALSE;
  g_autoptr(GPtrArray) trials = sieve_store_list_trials(store, FALSE, error);
  if (trials == NULL)
    return FALSE;
  g_autoptr(GHashTable) places = NULL;
  if (!load_trial_map(store, "pruner_order", &places, error))
    return FALSE;
  /* Every trial that finished OK, in the order it was told where that was
   * saved (tell_order: trial: a duplicate that took a failed original's
   * place is told after later trials), else (a store from before) in trial
   * order and before those, with the values it reported (sorted by trial,
   * then step), none included: one that reported none counts towards
   * startup_trials as it did when it completed, and the order numbers the
   * references (tell_order: trial). */
  g_autoptr(GArray) done = g_array_new(FALSE, FALSE, sizeof(Completed));
  guint i = 0;
  for (guint k = 0; k < trials->len; k++) {
    const SieveTrial *t = trials->pdata[k];
    while (i < values->len && g_array_index(values, SieveIntermediate, i).trial < t->number)
      i++;
    guint j = i;
    while (j < values->len && g_array_index(values, SieveIntermediate, j).trial == t->number)
      j++;
    gpointer place;
    if (t->status == SIEVE_STATUS_OK) {
      Completed c = {-1, t->number, i, j - i};
      if (places != NULL && g_hash_table_lookup_extended(places, GSIZE_TO_POINTER((gsize) t->number), NULL, &place))
        c.place = (gint64) GPOINTER_TO_SIZE(place);
      g_array_append_val(done, c);
    }
    i = j;
  }
  g_array_sort(done, completed_compare);
  for (guint k = 0; k < done->len; k++) {
    const Completed *c = &g_array_index(done, Completed, k);
    sieve_pruner_add_completed(pruner, c->n > 0 ? &g_array_index(values, SieveIntermediate, c->first) : NULL, c->n);
  }
  if (order != NULL)
    *order = g_steal_pointer(&places);
  return TRUE;
}

/* A resumed study: the pruner continues from the earlier runs' trials. */
static gboolean
restore_pruner(SieveEngine *engine, GError **error)
{
  return engine->pruner == NULL || add_completed_curves(engine->pruner, engine->store, &engine->pruner_order, error);
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

guint
sieve_engine_keep_intermediate(GArray *values, const SieveIntermediate *v)
{
  /* From the end: steps mostly grow, and then this is O(1). */
  guint i = values->len;
  while (i > 0 && g_array_index(values, SieveIntermediate, i - 1).step > v->step)
    i--;
  /* A step reported again keeps its first value, as Optuna's trial.report
   * ignores it (with a warning): nothing changed. */
  if (i > 0 && g_array_index(values, SieveIntermediate, i - 1).step == v->step)
    return values->len;
  g_array_insert_val(values, i, *v);
  return i;
}

/* An intermediate value from the evaluation (any thread): kept with the job
 * (a step reported again is ignored, with a warning, its first value kept:
 * sieve_engine_keep_intermediate) and judged by the pruner (again, as
 * Optuna's should_prune after an ignored report: more trials may have
 * completed since).
 * Nothing reported after the decision to stop is kept (an evaluator that
 * goes on reporting, as the command evaluator ignores a stopped program's
 * lines): the pruned trial is what the pruner judged. */
static gboolean
on_intermediate(gpointer user_data, const SieveCandidate *candidate, gint64 step, double fidelity, double value)
{
  Job *job = user_data;
  if (job->pruned || job->misreported)
    return FALSE;
  /* A step grows within one evaluation (candidate.h): one that goes back
   * is told to stop, nothing of it kept, and fails the trial
   * (fail_misreported).  The same step again is Optuna's repeat, below. */
  gint64 last = job->intermediate->len
                    ? g_array_index(job->intermediate, SieveIntermediate, job->intermediate->len - 1).step
                    : -1;
  if (step < 0 || step < last) {
    job->misreported = TRUE;
    job->bad_step = step;
    job->bad_after = last;
    return FALSE;
  }
  SieveIntermediate v = {.trial = sieve_candidate_get_trial(candidate), .step = step, .fidelity = fidelity,
                         .value = value};
  guint changed = sieve_engine_keep_intermediate(job->intermediate, &v);
  if (changed == job->intermediate->len && !job->repeated) {
    job->repeated = TRUE; /* said by the loop's thread, not this worker's (sieve_engine_repeated_step_text) */
    job->repeated_step = step;
  }
  if (job->pruner == NULL)
    return TRUE;
  if (job->curve == NULL)
    job->curve = sieve_pruner_curve_new(job->seen);
  if (sieve_pruner_judge_curve(job->pruner, job->curve, (const SieveIntermediate *) job->intermediate->data,
                               job->intermediate->len, changed))
    job->pruned = TRUE;
  return !job->pruned;
}

/* The warning for a trial that reported a step twice (once a run: a
 * program that always does would repeat it for every trial). (transfer full) */
char *
sieve_engine_repeated_step_text(gint64 trial, gint64 step)
{
  return g_strdup_printf("trial %" G_GINT64_FORMAT " reported step %" G_GINT64_FORMAT " again: the first value is "
                         "kept, later ones are ignored (as Optuna's trial.report does)",
                         trial, step);
}

char *
sieve_engine_silent_trial_text(gint64 trial)
{
  return g_strdup_printf("trial %" G_GINT64_FORMAT " finished without reporting an intermediate value, so the pruner "
                         "could not judge it (the command evaluator reads {\"intermediate\": ...} lines on stdout; "
                         "Lua evaluators call c.report; train reports every report_every steps)",
                         trial);
}

/* The last intermediate value of a job (by step); NULL when none. */
static const SieveIntermediate *
last_intermediate(const Job *job)
{
  guint n = job->intermediate ? job->intermediate->len : 0;
  return n ? &g_array_index(job->intermediate, SieveIntermediate, n - 1) : NULL;
}

/* A trial whose evaluator reported a step that goes back (on_intermediate):
 * failed with the reason naming it, whatever it returned after it was told
 * to stop, with the seconds it ran. */
static void
fail_misreported(const Job *job, const SieveEvaluator *evaluator, SieveResult **result, GError **error,
                 double seconds)
{
  if (!job->misreported)
    return;
  g_clear_error(error);
  g_clear_pointer(result, sieve_result_free);
  *result = sieve_result_new();
  const char *name = sieve_component_get_name(sieve_evaluator_get_component(evaluator));
  if (job->bad_step < 0)
    sieve_result_set_failed(*result, "evaluator '%s' reported step %" G_GINT64_FORMAT "; a step is a whole number >= 0",
                            name, job->bad_step);
  else
    sieve_result_set_failed(*result,
                            "evaluator '%s' reported step %" G_GINT64_FORMAT " after step %" G_GINT64_FORMAT
                            "; a step grows within one evaluation",
                            name, job->bad_step, job->bad_after);
  sieve_result_set_cost(*result, seconds);
}

/* An evaluator told to stop may end with an error, as an Optuna objective
 * raises TrialPruned (a Lua evaluator's error("pruned") once c.report
 * returned false): the trial is pruned, not the study's fatal error.  Its
 * *result is then an empty one that cost the evaluation's seconds (the
 * evaluator's wrapper times results, not errors, and a pruned trial's time
 * was spent). */
static gboolean
stopped_by_error(const Job *job, SieveResult **result, GError **error, double seconds)
{
  if (*result != NULL || !job->pruned || last_intermediate(job) == NULL)
    return FALSE;
  g_clear_error(error);
  *result = sieve_result_new();
  sieve_result_set_cost(*result, seconds);
  return TRUE;
}

/* A trial the pruner stopped: stored as pruned with its last value as the
 * objective's metric (sieve_engine_new refused a pruner on an evaluator
 * whose intermediate values are another metric's) and the step it reached, whatever the evaluator
 * returned after it was told to stop (a program that was stopped may exit
 * with an error). */
static void
mark_pruned(const SieveExperiment *exp, Job *job)
{
  sieve_engine_mark_pruned(job->result, exp->objectives[0].metric, last_intermediate(job));
}

void
sieve_engine_mark_pruned(SieveResult *result, const char *metric, const SieveIntermediate *last)
{
  g_return_if_fail(result != NULL && metric != NULL && last != NULL);
  sieve_result_set_status(result, SIEVE_STATUS_PRUNED);
  sieve_result_set_metric(result, metric, last->value);
  sieve_result_set_metric(result, "step", (double) last->step);
  /* Six digits, as the progress line shows values (the exact value is the
   * stored metric); not the locale's decimal point. */
  char value[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd(value, sizeof value, "%.6g", last->value);
  g_autofree char *reason = g_strdup_printf("pruned at step %" G_GINT64_FORMAT " (%s %s)", last->step, metric, value);
  sieve_result_set_reason(result, reason);
}

char *
sieve_engine_pruner_refusal(const SieveEvaluator *evaluator, const char *const *objectives, guint n)
{
  g_return_val_if_fail(objectives != NULL && n > 0, NULL);
  /* A pruner ranks trials by one metric; with several objectives a trial
   * bad at the first may be on the Pareto front (fast, small), and a
   * pruned one has none of the others: Optuna refuses trial.report in a
   * multi-objective study, and so do we. */
  if (n > 1)
    return g_strdup_printf("a pruner judges one objective, and this study has %u: a trial it would stop for its '%s' "
                           "may be on the Pareto front of the others (Optuna refuses intermediate values in "
                           "multi-objective studies too); remove the pruner or keep one objective",
                           n, objectives[0]);
  if (evaluator == NULL)
    return NULL;
  const char *name = sieve_component_get_name(sieve_evaluator_get_component(evaluator));
  if (!sieve_evaluator_reports_intermediate(evaluator))
    return g_strdup_printf("a pruner needs intermediate values, and evaluator '%s' reports none (train, command "
                           "and lua evaluators do)",
                           name);
  /* The pruner judges the objective's values and a pruned trial stores
   * its last one under the objective's name: they must be that metric's. */
  const char *reported = sieve_evaluator_get_intermediate_metric(evaluator, objectives[0]);
  if (reported == NULL)
    return g_strdup_printf("a pruner needs intermediate values, and evaluator '%s' reports none with these options "
                           "(train: without a validation split)",
                           name);
  if (strcmp(reported, objectives[0]) != 0)
    return g_strdup_printf("a pruner judges the objective '%s', and evaluator '%s' reports intermediate values of "
                           "'%s': make '%s' the objective, or remove the pruner",
                           objectives[0], name, reported, reported);
  return NULL;
}

gboolean
sieve_engine_restore_pruner(SievePruner *pruner, SieveStore *store, GError **error)
{
  g_return_val_if_fail(pruner != NULL && store != NULL, FALSE);
  return add_completed_curves(pruner, store, NULL, error);
}

void
sieve_engine_set_queue(SieveEngine *engine, guint in_flight)
{
  g_return_if_fail(engine != NULL);
  engine->queue_in_flight = in_flight;
}

SieveResult *
sieve_engine_evaluate_text(SieveEngine *engine, SieveStore *store, gint64 trial, const char *genotype,
                           double fidelity, GArray **intermediate, GError **error)
{
  g_return_val_if_fail(engine != NULL && store != NULL && genotype != NULL, NULL);
  /* The study's pruner, fresh for this evaluation, judges it against the
   * trials completed so far (as the coordinator's would, and as Optuna's
   * pruners read the shared storage); its curves and status go back with
   * the result. */
  g_autoptr(SievePruner) pruner = NULL;
  if (engine->exp->pruner != NULL) {
    pruner = sieve_pruner_new(engine->exp->pruner, engine->exp->dir, engine->exp->objectives[0].maximize, error);
    if (pruner == NULL || !add_completed_curves(pruner, store, NULL, error))
      return NULL;
  }
  SieveGenotype *g = sieve_space_parse(engine->space, genotype, error);
  if (g == NULL)
    return NULL;
  SieveCandidate *c = sieve_candidate_new(g, fidelity);
  sieve_candidate_set_trial(c, trial);
  Job job = {.intermediate = g_array_new(FALSE, FALSE, sizeof(SieveIntermediate)), .pruner = pruner,
             .seen = G_MAXINT64};
  sieve_candidate_set_intermediate_func(c, on_intermediate, &job);
  /* A worker's threads share the evaluator: one at a time unless it says
   * it may run concurrently (as the study loop's pool does). */
  static GMutex serial;
  gboolean one_at_a_time = !sieve_evaluator_is_concurrent(engine->evaluator);
  if (one_at_a_time)
    g_mutex_lock(&serial);
  gint64 start = g_get_monotonic_time();
  SieveResult *result = sieve_evaluator_evaluate(engine->evaluator, c, error);
  double seconds = (g_get_monotonic_time() - start) / 1e6;
  if (one_at_a_time)
    g_mutex_unlock(&serial);
  sieve_candidate_free(c);
  stopped_by_error(&job, &result, error, seconds);
  fail_misreported(&job, engine->evaluator, &result, error, seconds);
  if (job.repeated) {
    /* a worker has no progress line: its own stderr */
    g_autofree char *text = sieve_engine_repeated_step_text(trial, job.repeated_step);
    g_printerr("sieve: warning: %s\n", text);
  }
  job.result = result;
  if (result != NULL && job.pruned && last_intermediate(&job) != NULL)
    mark_pruned(engine->exp, &job);
  if (intermediate != NULL && result != NULL)
    *intermediate = g_steal_pointer(&job.intermediate);
  g_clear_pointer(&job.intermediate, g_array_unref);
  sieve_pruner_curve_free(job.curve);
  return result;
}

static void
run_job(Job *job, SieveEvaluator *evaluator)
{
  job->intermediate = g_array_new(FALSE, FALSE, sizeof(SieveIntermediate));
  g_clear_pointer(&job->curve, sieve_pruner_curve_free);
  job->misreported = FALSE;
  sieve_candidate_set_intermediate_func(job->proposal->candidate, on_intermediate, job);
  job->worker = current_worker();
  job->started = g_get_real_time() / 1e6;
  gint64 start = g_get_monotonic_time();
  job->result = sieve_evaluator_evaluate(evaluator, job->proposal->candidate, &job->error);
  job->finished = g_get_real_time() / 1e6;
  double seconds = (g_get_monotonic_time() - start) / 1e6;
  stopped_by_error(job, &job->result, &job->error, seconds);
  fail_misreported(job, evaluator, &job->result, &job->error, seconds);
  sieve_candidate_set_intermediate_func(job->proposal->candidate, NULL, NULL);
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

/* The next finished evaluation to handle: whichever finishes first, or
 * (dispatched, tell_order: trial) the earliest dispatched, holding back the
 * ones that finish before it.  Dispatch happens in a fixed order at fixed
 * points, so in order the optimizer sees the same tells and asks at the
 * same points in every run of the study, whatever the timing. */
static Job *
next_done(GAsyncQueue *done, GQueue *dispatched)
{
  if (dispatched == NULL)
    return g_async_queue_pop(done);
  Job *head = g_queue_peek_head(dispatched);
  while (!head->arrived) {
    Job *job = g_async_queue_pop(done);
    job->arrived = TRUE;
  }
  return g_queue_pop_head(dispatched);
}

/* ---- the run's state -------------------------------------------------- */

typedef struct {
  SieveEngine *engine;
  SieveProgress *progress;
  gint64 evaluations; /* finished ok or failed, all runs */
  gint64 proposals;   /* trials stored, all runs */
  gint64 hits;        /* answered from the cache or an identical proposal, all runs */
  gint64 screened;
  gint64 rejected;    /* broke a constraint, all runs */
  gint64 consecutive_hits;
  gint64 consecutive_rejections;
  gint64 run;         /* this run's number in the store */
  gboolean gave_up;   /* dedupe.max_consecutive_hits or constraint_tries reached */
  gint64 best_number;
  double best;
  double best_fidelity;
  double elapsed_before; /* seconds of earlier runs */
  gint64 start;          /* monotonic us */
  GHashTable *inflight;  /* slot -> Proposal* (borrowed): originals not finished */
  guint running;         /* evaluations under way */
  GQueue ready;          /* Proposal* waiting for a worker, in trial order */
  gboolean objective_seen; /* some trial of the study reported every objective (see check_objective) */
  gboolean batch;          /* finish_evaluation inside the caller's transaction (record_batch) */
  gboolean warned_silent;  /* a trial that reported nothing to the pruner was warned about (once a run) */
  gboolean warned_repeat;  /* a step reported twice was warned about (once a run) */
} RunState;

/* A warning of the run: on its progress display, or on stderr when it has
 * none (sieve.run from Lua without progress = true), never dropped. */
static void
warn(RunState *rs, const char *text)
{
  if (rs->progress != NULL)
    sieve_progress_notice(rs->progress, "warning: %s", text);
  else
    g_printerr("sieve: warning: %s\n", text);
}

static double
elapsed(const RunState *rs)
{
  return rs->elapsed_before + (g_get_monotonic_time() - rs->start) / 1e6;
}

/* The incumbent: the best at the highest fidelity reached (incumbent.c). */
static void
note_best(RunState *rs, gint64 number, double fidelity, double objective)
{
  if (isnan(objective))
    return;
  if (rs->best_number < 0 ||
      sieve_incumbent_better(fidelity, objective, rs->best_fidelity, rs->best, rs->engine->exp->objectives[0].maximize)) {
    rs->best = objective;
    rs->best_number = number;
    rs->best_fidelity = fidelity;
  }
}

/* ---- dedupe: hashes and keys ----------------------------------------- */

static const CacheKey *
cache_key_for(SieveEngine *engine, double fidelity)
{
  for (guint i = 0; i < engine->keys->len; i++) {
    const CacheKey *k = engine->keys->pdata[i];
    if ((isnan(k->fidelity) && isnan(fidelity)) || k->fidelity == fidelity)
      return k;
  }
  if (!engine->scripts_known) {
    /* A result depends on the scripts' contents, not only their paths: a
     * script changed on resume (--accept-changed-scripts) keys its results
     * apart.  Scripts as the study was first stored with add nothing, so a
     * store of before keeps its entries. */
    g_autofree char *key = sieve__study_key(engine->exp);
    g_autofree char *history = sieve_store_get_meta(engine->store, "script_changes", NULL);
    engine->scripts = sieve__study_key_changed_scripts(key, history);
    engine->scripts_known = TRUE;
  }
  CacheKey *k = g_new0(CacheKey, 1);
  k->fidelity = fidelity;
  k->text = sieve_dedupe_key_text(engine->exp, fidelity);
  if (engine->scripts != NULL) {
    char *text = g_strconcat(k->text, "scripts:\n", engine->scripts, NULL);
    g_free(k->text);
    k->text = text;
  }
  k->digest = sieve_dedupe_key_digest(k->text);
  g_ptr_array_add(engine->keys, k);
  return k;
}

/* Sets p's key and slot for a hash already in p->hash. */
static void
set_slot(SieveEngine *engine, Proposal *p)
{
  p->key = cache_key_for(engine, sieve_candidate_get_fidelity(p->candidate));
  g_free(p->slot);
  p->slot = g_strconcat(p->hash, "/", p->key->digest, NULL);
}

/* A proposal that cannot be hashed (its network does not build, say) is
 * evaluated without dedupe; the reason is reported once it has a number. */
static void
hash_proposal(SieveEngine *engine, Proposal *p)
{
  GError *local = NULL;
  if (!sieve_dedupe_hash(engine->space, sieve_candidate_get_genotype(p->candidate), engine->hash_kind, p->hash,
                         &local)) {
    p->hash[0] = '\0';
    p->hash_error = g_strdup(local->message);
    g_error_free(local);
    return;
  }
  set_slot(engine, p);
}

static void
report_hash_error(RunState *rs, const Proposal *p)
{
  if (p->hash_error != NULL && rs->progress != NULL)
    sieve_progress_message(rs->progress, "trial %" G_GINT64_FORMAT ": no %s hash, evaluated without dedupe: %s",
                           proposal_number(p), sieve_dedupe_hash_name(rs->engine->hash_kind), p->hash_error);
}

/* Evaluations the budget still allows beyond those finished, running and in line. */
static gint64
evaluations_left(const RunState *rs)
{
  gint64 budget = rs->engine->exp->budget_evaluations;
  return budget > 0 ? budget - rs->evaluations - rs->running - (gint64) rs->ready.length : G_MAXINT64;
}

/* A proposal leaves the pipeline without an evaluation: no longer the
 * original its duplicates find. */
static void
forget(RunState *rs, Proposal *p)
{
  if (p->slot != NULL && g_hash_table_lookup(rs->inflight, p->slot) == p)
    g_hash_table_remove(rs->inflight, p->slot);
}

/* ---- store transactions ---------------------------------------------- */

static gboolean
save_optimizer(SieveEngine *engine, GError **error)
{
  g_autoptr(GVariant) state = sieve_optimizer_save(engine->optimizer, error);
  return state != NULL && sieve_store_save_state(engine->store, "optimizer", state, error);
}

/* The pending trials' pruner references (engine->pruner_seen) as a{xx}. */
static gboolean
save_pruner_seen(SieveEngine *engine, GError **error)
{
  return engine->pruner_seen == NULL || save_trial_map(engine->store, "pruner_seen", engine->pruner_seen, error);
}

/* Stores a finished trial and tells the optimizer, inside the caller's
 * transaction. */
static gboolean
record(SieveEngine *engine, const Proposal *p, const SieveResult *result, double started, double finished,
       gint worker, gint64 cached_from, GError **error)
{
  double told[engine->exp->n_objectives];
  sieve_engine_oriented_objectives(engine->exp, result, told);
  if (engine->pruner_seen)
    g_hash_table_remove(engine->pruner_seen, GSIZE_TO_POINTER((gsize) proposal_number(p)));
  return sieve_store_finish_trial(engine->store, proposal_number(p), result, started, finished, worker,
                                  cached_from, error) &&
         sieve_optimizer_tell(engine->optimizer, p->candidate, result, told, error);
}

/* What the stages before the evaluator found (proxy scores, the metrics
 * known before evaluation) stays with the trial, beside what the evaluator
 * reported, which wins where both have a metric. */
static void
add_missing_metrics(SieveResult *result, const SieveResult *from)
{
  for (guint i = 0; from && i < sieve_result_n_metrics(from); i++)
    if (!sieve_result_get_metric(result, sieve_result_metric_name(from, i), NULL))
      sieve_result_set_metric(result, sieve_result_metric_name(from, i), sieve_result_metric_value(from, i));
}

/* A metric a constraint checked keeps the value checked (one measurement
 * per candidate): the `latency` evaluator times the network again, the
 * screen scores its proxies on its own batch, and their value stored over
 * the checked one could show an ok trial breaking a hard cap. */
static gboolean
is_checked(const SieveEngine *engine, const char *metric)
{
  return sieve_constrainer_checked(engine->exp, sieve_evaluator_get_metrics(engine->evaluator), metric);
}

/* Whether the evaluator says it reports metric (FALSE when it does not say). */
static gboolean
evaluator_reports(const SieveEngine *engine, const char *metric)
{
  const char *const *metrics = sieve_evaluator_get_metrics(engine->evaluator);
  return metrics != NULL && g_strv_contains(metrics, metric);
}

/* What the stages found (from) joins the result of a later stage: a
 * metric result lacks is added (add_missing_metrics), and a metric a
 * constraint checked keeps the value checked. */
static void
add_stage_metrics(const SieveEngine *engine, SieveResult *result, const SieveResult *from)
{
  for (guint i = 0; from && i < sieve_result_n_metrics(from); i++) {
    const char *name = sieve_result_metric_name(from, i);
    if (is_checked(engine, name) || !sieve_result_get_metric(result, name, NULL))
      sieve_result_set_metric(result, name, sieve_result_metric_value(from, i));
  }
}

/* Whether metric is one the screen stage wrote (a proxy's score, the
 * rank aggregate) and not an objective. */
static gboolean
is_screen_metric(const SieveExperiment *exp, const char *metric)
{
  for (guint k = 0; k < exp->n_objectives; k++)
    if (strcmp(exp->objectives[k].metric, metric) == 0)
      return FALSE;
  if (strcmp(metric, "screen_score") == 0)
    return TRUE;
  const SieveScreenStage *stage = &exp->pipeline.screen;
  for (guint i = 0; stage->enabled && i < stage->n_proxies; i++)
    if (strcmp(stage->proxies[i], metric) == 0)
      return TRUE;
  return FALSE;
}

/* The result a duplicate p of a trial gets: the reused evaluation's metrics,
 * with what this study knows of p's own network before evaluation
 * (p->scores: params, macs, latencies, the constraints' proxies, computed
 * from p's genotype) in place of its twin's, with the precedence an
 * evaluation uses: a checked metric (add_stage_metrics) or one the
 * evaluator does not report.  Functionally equal networks may differ there
 * (a branch that only ever sees zeros still has weights).  The twin's
 * screen scores are dropped (p was not screened), not a metric of the same
 * name that the evaluator reports. */
static SieveResult *
cached_for(const SieveEngine *engine, const SieveResult *original, const Proposal *p)
{
  /* Its metrics only: no reason, no cost, not its weights. */
  SieveResult *r = sieve_result_new();
  sieve_result_set_status(r, SIEVE_STATUS_CACHED);
  sieve_result_set_cost(r, 0);
  for (guint i = 0; i < sieve_result_n_metrics(original); i++) {
    const char *name = sieve_result_metric_name(original, i);
    if (!is_screen_metric(engine->exp, name) || evaluator_reports(engine, name))
      sieve_result_set_metric(r, name, sieve_result_metric_value(original, i));
  }
  for (guint i = 0; p->scores && i < sieve_result_n_metrics(p->scores); i++) {
    const char *name = sieve_result_metric_name(p->scores, i);
    if (is_checked(engine, name) || !evaluator_reports(engine, name))
      sieve_result_set_metric(r, name, sieve_result_metric_value(p->scores, i));
  }
  return r;
}

/* Ask for up to n candidates, hash them, and store them with their hashes
 * and the optimizer's state after the ask, in one transaction.  Appends
 * the new proposals to out (in trial order). */
static gboolean
ask_and_store(RunState *rs, guint n, GPtrArray *out, GError **error)
{
  SieveEngine *engine = rs->engine;
  g_autoptr(GPtrArray) asked = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_candidate_free);
  if (!sieve_optimizer_ask(engine->optimizer, n, asked, error))
    return FALSE;
  if (asked->len == 0)
    return TRUE;
  g_autoptr(GPtrArray) proposals = g_ptr_array_new_with_free_func((GDestroyNotify) proposal_free);
  g_ptr_array_set_free_func(asked, NULL);
  for (guint i = 0; i < asked->len; i++) {
    Proposal *p = proposal_new(asked->pdata[i]);
    g_ptr_array_add(proposals, p);
    if (engine->dedupe)
      hash_proposal(engine, p);
  }
  if (!sieve_store_begin(engine->store, error))
    return FALSE;
  for (guint i = 0; i < proposals->len; i++) {
    Proposal *p = proposals->pdata[i];
    SieveCandidate *c = p->candidate;
    gint64 number = sieve_store_add_trial(engine->store, sieve_candidate_get_text(c),
                                          sieve_candidate_get_fidelity(c), error);
    if (number < 0)
      goto fail;
    sieve_candidate_set_trial(c, number);
    if (p->hash[0] != '\0' &&
        !sieve_store_set_trial_hash(engine->store, number, sieve_dedupe_hash_name(engine->hash_kind), p->hash, error))
      goto fail;
  }
  if (engine->pruner_seen != NULL) {
    /* Fixed now, in the transaction that stores them: the trials told so
     * far, as the optimizer that asked had been told. */
    gint64 seen = sieve_pruner_count_completed(engine->pruner);
    for (guint i = 0; i < proposals->len; i++) {
      Proposal *p = proposals->pdata[i];
      p->seen = seen;
      g_hash_table_insert(engine->pruner_seen, GSIZE_TO_POINTER((gsize) proposal_number(p)), GSIZE_TO_POINTER((gsize) seen));
    }
  }
  if (!save_optimizer(engine, error) || !save_pruner_seen(engine, error) || !sieve_store_commit(engine->store, error))
    goto fail;
  rs->proposals += proposals->len;
  for (guint i = 0; i < proposals->len; i++) {
    report_hash_error(rs, proposals->pdata[i]);
    g_ptr_array_add(out, proposals->pdata[i]);
  }
  g_ptr_array_set_free_func(proposals, NULL); /* out owns them now */
  return TRUE;
fail:
  sieve_store_rollback(engine->store);
  return FALSE;
}

/* Whether a result measured in another store passes what this study asks
 * of its own: every objective a finite number (that study checked its
 * objectives, not necessarily ours), and the proposal checked against this
 * study's constraints (that study may have had none).  One that does not is
 * a miss: the proposal goes on as a new one, to the evaluator. */
static gboolean
fits_this_study(RunState *rs, Proposal *p, const SieveResult *result)
{
  SieveEngine *engine = rs->engine;
  for (guint k = 0; k < engine->exp->n_objectives; k++) {
    double value;
    if (!sieve_result_get_metric(result, engine->exp->objectives[k].metric, &value) || !isfinite(value))
      return FALSE;
  }
  /* The constraints were checked before dedupe (constrain): p met them,
   * unless they could not be checked. */
  return !p->unchecked;
}

/* Answers p with the result of trial original of source (the study's own
 * store, or one of dedupe.cache_from), found in its cache.  *used is FALSE
 * (and nothing stored) when that trial holds no OK result (a cache written
 * by something else), or, from another store, one that does not fit this
 * study (fits_this_study): p is then a miss.  A hit from another store is
 * stored with that store's name and trial as its reason, and put in this
 * store's cache, so that later duplicates find it here.  Frees p when used. */
static gboolean
answer_from_cache(RunState *rs, Proposal *p, SieveStore *source, gint64 original, gboolean *used, GError **error)
{
  SieveEngine *engine = rs->engine;
  *used = FALSE;
  g_autoptr(SieveTrial) trial = sieve_store_get_trial(source, original, error);
  if (trial == NULL)
    return error == NULL || *error == NULL;
  /* cached: a hit this store itself imported from another store. */
  if (trial->status != SIEVE_STATUS_OK && trial->status != SIEVE_STATUS_CACHED)
    return TRUE;
  gboolean own = source == engine->store;
  if (!own && !fits_this_study(rs, p, trial->result))
    return TRUE;
  g_autoptr(SieveResult) result = cached_for(engine, trial->result, p);
  g_autofree char *reason = NULL;
  if (!own) {
    reason = g_strdup_printf("cached in %s (trial %" G_GINT64_FORMAT ")", sieve_store_get_path(source), original);
    sieve_result_set_reason(result, reason);
  }
  double now = g_get_real_time() / 1e6;
  g_autofree char *elapsed_text = g_strdup_printf("%.3f", elapsed(rs));
  if (!sieve_store_begin(engine->store, error))
    return FALSE;
  if (!record(engine, p, result, now, now, -1, own ? original : -1, error) ||
      (!own && (!sieve_store_cache_add_key(engine->store, p->key->digest, p->key->text, error) ||
                !sieve_store_cache_put(engine->store, sieve_dedupe_hash_name(engine->hash_kind), p->hash,
                                       p->key->digest, proposal_number(p), error))) ||
      !save_optimizer(engine, error) ||
      !sieve_store_set_meta(engine->store, "elapsed_s", elapsed_text, error) ||
      !sieve_store_commit(engine->store, error)) {
    sieve_store_rollback(engine->store);
    return FALSE;
  }
  *used = TRUE;
  rs->hits++;
  /* A result measured in another store is this study's too: it may be the
   * best (sieve_trial_is_ranked); one of this store's is counted already. */
  if (!own) {
    note_best(rs, proposal_number(p), sieve_candidate_get_fidelity(p->candidate), metric_value(engine->exp, result));
    if (rs->progress && rs->best_number >= 0)
      sieve_progress_set_best(rs->progress, rs->best_number, rs->best, rs->best_fidelity);
  }
  if (rs->progress) {
    g_autofree char *origin = !own ? g_strdup(sieve_store_get_path(source))
                              : trial->run != rs->run ? g_strdup_printf("run %" G_GINT64_FORMAT, trial->run)
                                                      : NULL;
    sieve_progress_cached(rs->progress, proposal_number(p), original, origin, metric_value(engine->exp, result),
                          sieve_candidate_get_text(p->candidate));
  }
  proposal_free(p);
  return TRUE;
}

/* An evaluation finished: its trial, its cache entry (OK only) and every
 * duplicate attached to it, with the state after all their tells, in one
 * transaction.  Takes the job's proposal; a failed one's first duplicate
 * becomes the proposal to evaluate (the rest attached to it), put first in
 * line. */
static void finish_told(RunState *rs, Job *job);

static gboolean
finish_evaluation(RunState *rs, Job *job, GError **error)
{
  SieveEngine *engine = rs->engine;
  Proposal *p = job->proposal;
  SieveResult *result = job->result;
  gboolean ok = sieve_result_get_status(result) == SIEVE_STATUS_OK;
  gint64 number = proposal_number(p);
  const char *kind = sieve_dedupe_hash_name(engine->hash_kind);
  g_autofree char *elapsed_text = g_strdup_printf("%.3f", elapsed(rs));
  double now = g_get_real_time() / 1e6;

  if (!rs->batch && !sieve_store_begin(engine->store, error))
    return FALSE;
  const SieveIntermediate *last = last_intermediate(job);
  /* The curve goes in with the result; a pruned trial counts as an
   * evaluation of the fidelity it reached. */
  gboolean stored = job->intermediate == NULL || job->intermediate->len == 0 ||
                    sieve_store_set_intermediate(engine->store, number,
                                                 (const SieveIntermediate *) job->intermediate->data,
                                                 job->intermediate->len, error);
  /* (a worker's pruned result arrives with its status: job->pruned is the
   * local pruner's) */
  /* (the reached fidelity only when finite, >= 0 and within the evaluator's
   * max: command and Lua evaluators refuse others, a C plugin may not) */
  const SieveFidelity *range = sieve_evaluator_get_fidelity(engine->evaluator);
  if (stored && last != NULL && sieve_result_get_status(result) == SIEVE_STATUS_PRUNED && isfinite(last->fidelity) &&
      last->fidelity >= 0 && (range == NULL || last->fidelity <= range->max))
    stored = sieve_store_set_trial_fidelity(engine->store, number, last->fidelity, error);
  stored = stored && record(engine, p, result, job->started, job->finished, job->worker, -1, error);
  guint keep_top = 0;
  GBytes *weights = ok ? sieve_result_get_weights(result, &keep_top) : NULL;
  /* A trained network goes in with its result, and the ones that fell out
   * of the best keep_top go in the same transaction. */
  if (stored && weights)
    stored = sieve_store_put_weights(engine->store, "trial", number, weights, error) &&
             (keep_top == 0 || sieve_store_prune_weights(engine->store, engine->exp->objectives[0].metric,
                                                         engine->exp->objectives[0].maximize, keep_top, error));
  if (stored && ok && p->slot != NULL)
    stored = sieve_store_cache_add_key(engine->store, p->key->digest, p->key->text, error) &&
             sieve_store_cache_put(engine->store, kind, p->hash, p->key->digest, number, error);
  for (guint i = 0; stored && ok && p->waiters && i < p->waiters->len; i++) {
    g_autoptr(SieveResult) answer = cached_for(engine, result, p->waiters->pdata[i]);
    stored = record(engine, p->waiters->pdata[i], answer, now, now, -1, number, error);
  }
  /* A failed original past the screen hands its place to its first
   * duplicate: stored as past the screen too, so that a resumed run does
   * not screen it again, with its own metrics before evaluation beside the
   * screen's scores it inherits. */
  if (stored && !ok && p->screened_in && p->waiters && p->waiters->len > 0) {
    Proposal *next = p->waiters->pdata[0];
    if (next->scores == NULL)
      next->scores = sieve_result_new();
    add_missing_metrics(next->scores, p->scores);
    stored = sieve_store_set_trial_stage(engine->store, proposal_number(next), "evaluate", next->scores, error);
  }
  /* Whichever the stage, the duplicate that takes the place was a cache
   * hit in the runs "in a row" (admit), as a resumed run counts it. */
  if (stored && !ok && p->waiters && p->waiters->len > 0) {
    if (engine->waited_for == NULL)
      engine->waited_for = g_hash_table_new(g_direct_hash, g_direct_equal);
    g_hash_table_insert(engine->waited_for, GSIZE_TO_POINTER((gsize) proposal_number(p->waiters->pdata[0])),
                        GSIZE_TO_POINTER((gsize) number));
    stored = save_trial_map(engine->store, "waited_for", engine->waited_for, error);
  }
  /* Its place among the pruner's references (finish_told), as told. */
  if (stored && ok && engine->pruner_order != NULL) {
    g_hash_table_insert(engine->pruner_order, GSIZE_TO_POINTER((gsize) number),
                        GSIZE_TO_POINTER((gsize) sieve_pruner_count_completed(engine->pruner)));
    stored = save_trial_map(engine->store, "pruner_order", engine->pruner_order, error);
  }
  /* In a batch the caller saves the state once, after the last tell. */
  stored = stored && (rs->batch || (save_optimizer(engine, error) &&
                                    sieve_store_set_meta(engine->store, "elapsed_s", elapsed_text, error) &&
                                    sieve_store_commit(engine->store, error)));
  if (!stored) {
    if (!rs->batch)
      sieve_store_rollback(engine->store);
    return FALSE;
  }
  if (!rs->batch)
    finish_told(rs, job);
  return TRUE;
}

/* What follows an evaluation's commit: counts, the pruner's curves, the
 * best so far, the progress line (printed once the trial is stored), and
 * its duplicates' fate.  Takes the job's proposal. */
static void
finish_told(RunState *rs, Job *job)
{
  SieveEngine *engine = rs->engine;
  Proposal *p = job->proposal;
  SieveResult *result = job->result;
  gboolean ok = sieve_result_get_status(result) == SIEVE_STATUS_OK;
  gint64 number = proposal_number(p);
  rs->evaluations++;
  if (ok && engine->pruner != NULL) /* one that reported nothing counts too, as add_completed_curves */
    sieve_pruner_add_completed(engine->pruner,
                               job->intermediate ? (const SieveIntermediate *) job->intermediate->data : NULL,
                               job->intermediate ? job->intermediate->len : 0);
  double objective = sieve_engine_objective(engine->exp, result);
  note_best(rs, number, sieve_candidate_get_fidelity(p->candidate), objective);
  if (rs->progress && rs->best_number >= 0)
    sieve_progress_set_best(rs->progress, rs->best_number, rs->best, rs->best_fidelity);
  if (rs->progress)
    sieve_progress_trial(rs->progress, number, sieve_result_get_status(result), objective,
                         sieve_candidate_get_text(p->candidate), sieve_result_get_cost(result),
                         sieve_result_get_reason(result));
  forget(rs, p);
  if (p->waiters == NULL || p->waiters->len == 0)
    return;
  if (ok) {
    rs->hits += p->waiters->len;
    for (guint i = 0; rs->progress && i < p->waiters->len; i++) {
      const Proposal *w = p->waiters->pdata[i];
      sieve_progress_cached(rs->progress, proposal_number(w), number, NULL, objective,
                            sieve_candidate_get_text(w->candidate));
    }
    return;
  }
  /* The first duplicate takes the failed one's place. */
  g_ptr_array_set_free_func(p->waiters, NULL);
  Proposal *next = g_ptr_array_steal_index(p->waiters, 0);
  /* (past the screen, it has the failed one's screen scores beside its
   * own counts and latencies: finish_evaluation) */
  next->screened_in = p->screened_in;
  if (p->waiters->len > 0) {
    next->waiters = p->waiters;
    g_ptr_array_set_free_func(next->waiters, (GDestroyNotify) proposal_free);
    p->waiters = NULL;
  }
  if (next->slot != NULL)
    g_hash_table_insert(rs->inflight, next->slot, next);
  g_queue_push_head(&rs->ready, next);
  return;
}

/* An OK result must carry every objective as a finite number: whatever an
 * evaluator reports (a program's null, a string, NaN, a missing member)
 * is checked here, before the result is stored, and a result that fails
 * the check is stored as a failed trial with the reason, so the study
 * goes on (Lua studies apply the same rule). */
gint
sieve_engine_check_objectives(SieveResult *result, const char *const *metrics, guint n, char **missing)
{
  if (sieve_result_get_status(result) != SIEVE_STATUS_OK)
    return -1;
  for (guint k = 0; k < n; k++) {
    double value;
    if (sieve_result_get_metric(result, metrics[k], &value)) {
      if (!isfinite(value)) {
        g_autofree char *text = sieve_text_format_double(value);
        sieve_result_set_failed(result, "the objective metric '%s' is %s, not a finite number", metrics[k], text);
        return -1;
      }
      continue;
    }
    guint n_reported = sieve_result_n_metrics(result);
    g_autofree const char **names = g_new0(const char *, n_reported + 1);
    for (guint i = 0; i < n_reported; i++)
      names[i] = sieve_result_metric_name(result, i);
    const char *guess = sieve_suggest(metrics[k], names);
    g_autofree char *all = n_reported ? g_strjoinv(", ", (char **) names) : g_strdup("none");
    g_autofree char *hint = guess ? g_strdup_printf(" (did you mean '%s'?)", guess) : g_strdup("");
    if (missing != NULL)
      *missing = g_strdup_printf("the objective metric '%s'%s; it reported: %s", metrics[k], hint, all);
    sieve_result_set_failed(result, "no number for the objective metric '%s'%s (numeric metrics reported: %s)",
                            metrics[k], hint, all);
    return (gint) k;
  }
  return -1;
}

/* The engine's use of that rule.  One exception: while no trial of the
 * study has reported the objective at all, a missing one means a typo in
 * the experiment or the wrong evaluator, and the study stops at once
 * (error set, FALSE) rather than spend the budget on trials that all fail
 * the same way. */
static gboolean
check_objective(RunState *rs, gint64 number, SieveResult *result, GError **error)
{
  SieveEngine *engine = rs->engine;
  if (sieve_result_get_status(result) != SIEVE_STATUS_OK)
    return TRUE;
  const char *metrics[engine->exp->n_objectives + 1];
  for (guint k = 0; k < engine->exp->n_objectives; k++)
    metrics[k] = engine->exp->objectives[k].metric;
  g_autofree char *missing = NULL;
  gint k = sieve_engine_check_objectives(result, metrics, engine->exp->n_objectives, &missing);
  if (k < 0) {
    rs->objective_seen = TRUE;
    return TRUE;
  }
  if (!rs->objective_seen)
    sieve_node_set_error(error, engine->exp->objectives[k].node,
                         "evaluator '%s' did not report %s (trial %" G_GINT64_FORMAT " finished without it and no "
                         "trial before it reported it: the study stops rather than fail every trial the same way)",
                         sieve_component_get_name(engine->exp->evaluator.component), missing, number);
  return rs->objective_seen;
}

/* ---- the stages ------------------------------------------------------- */

/* The genotype texts this study has evaluated (ok, failed, pruned) or
 * answered from a cache at a fidelity, each with the lowest it had. */
static GHashTable *
evaluated_fidelities(SieveStore *store, GError **error)
{
  g_autoptr(GPtrArray) trials = sieve_store_list_trials(store, FALSE, error);
  if (trials == NULL)
    return NULL;
  GHashTable *lowest = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  for (guint i = 0; i < trials->len; i++) {
    const SieveTrial *t = trials->pdata[i];
    if ((t->status != SIEVE_STATUS_OK && t->status != SIEVE_STATUS_FAILED && t->status != SIEVE_STATUS_PRUNED &&
         t->status != SIEVE_STATUS_CACHED) ||
        !isfinite(t->fidelity))
      continue;
    const double *known = g_hash_table_lookup(lowest, t->genotype);
    if (known == NULL || t->fidelity < *known)
      g_hash_table_insert(lowest, g_strdup(t->genotype), g_memdup2(&t->fidelity, sizeof t->fidelity));
  }
  return lowest;
}

/* A promotion by a multi-fidelity optimizer (successive halving, Hyperband,
 * ASHA, BOHB: a configuration this study evaluated at a lower fidelity, so
 * past the screen then, asked again at a higher one) goes to the evaluator
 * without the screen: ranking it again among new configurations would undo
 * the optimizer's choice, made on a measured result.  Moves those of round
 * to promoted (in order, past the screen); the new configurations stay in
 * round, in order, for the screen to rank among themselves.  Frees the
 * round on a store error. */
static gboolean
pass_promotions(RunState *rs, GPtrArray *round, GPtrArray *promoted, GError **error)
{
  gboolean fidelities = FALSE;
  for (guint i = 0; i < round->len; i++)
    fidelities |= isfinite(sieve_candidate_get_fidelity(((Proposal *) round->pdata[i])->candidate));
  if (!fidelities)
    return TRUE;
  g_autoptr(GHashTable) evaluated = evaluated_fidelities(rs->engine->store, error);
  if (evaluated == NULL) {
    for (guint i = 0; i < round->len; i++) {
      forget(rs, round->pdata[i]);
      proposal_free(round->pdata[i]);
    }
    g_ptr_array_set_size(round, 0);
    return FALSE;
  }
  guint n = 0;
  for (guint i = 0; i < round->len; i++) {
    Proposal *p = round->pdata[i];
    double fidelity = sieve_candidate_get_fidelity(p->candidate);
    const double *lower = g_hash_table_lookup(evaluated, sieve_candidate_get_text(p->candidate));
    if (lower != NULL && isfinite(fidelity) && *lower < fidelity) {
      p->screened_in = TRUE;
      g_ptr_array_add(promoted, p);
    } else
      round->pdata[n++] = p;
  }
  g_ptr_array_set_size(round, n);
  return TRUE;
}

/* Stores the promotions as past the screen, inside the caller's
 * transaction: a resumed run queues them as this one does. */
static gboolean
store_promoted(SieveEngine *engine, const GPtrArray *promoted, GError **error)
{
  gboolean ok = TRUE;
  for (guint i = 0; ok && i < promoted->len; i++)
    ok = sieve_store_set_trial_stage(engine->store, proposal_number(promoted->pdata[i]), "evaluate", NULL, error);
  return ok;
}

/* The screen: scores the round's proposals (in trial order), stores the
 * best as past the screen (with their scores) and finishes the others as
 * screened, each duplicate attached to one of them with it, in one
 * transaction with the optimizer's state after their tells.  The kept ones
 * go in line for the evaluator.  Promotions pass unscreened
 * (pass_promotions), stored as past the screen in the same transaction (a
 * resumed run queues them as this one does), and the budget they take is
 * not the new ones' to keep; they and the kept ones go in line in trial
 * order.  Takes the proposals. */
static gboolean
screen_round(RunState *rs, GPtrArray *round, GError **error)
{
  SieveEngine *engine = rs->engine;
  const SieveScreenStage *stage = &engine->exp->pipeline.screen;
  g_autoptr(GPtrArray) promoted = g_ptr_array_new();
  if (!pass_promotions(rs, round, promoted, error))
    return FALSE;
  g_autoptr(GPtrArray) owned = g_ptr_array_new_with_free_func((GDestroyNotify) proposal_free);
  for (guint i = 0; i < promoted->len; i++)
    g_ptr_array_add(owned, promoted->pdata[i]);
  for (guint i = 0; i < round->len; i++)
    g_ptr_array_add(owned, round->pdata[i]);
  /* Within the budget the promotions leave (they are not in line yet). */
  guint keep = sieve_screen_keep_count(stage, round->len, evaluations_left(rs) - (gint64) promoted->len);
  if (keep == 0) {
    /* The budget is spent: the round stays pending for a later run. */
    for (guint i = 0; i < round->len; i++)
      forget(rs, round->pdata[i]);
    if (promoted->len > 0 && !(sieve_store_begin(engine->store, error) && store_promoted(engine, promoted, error) &&
                               sieve_store_commit(engine->store, error))) {
      sieve_store_rollback(engine->store);
      return FALSE;
    }
    g_ptr_array_set_free_func(owned, NULL);
    for (guint i = promoted->len; i < owned->len; i++)
      proposal_free(owned->pdata[i]);
    for (guint i = 0; i < promoted->len; i++)
      g_queue_push_tail(&rs->ready, promoted->pdata[i]);
    return TRUE;
  }
  g_autofree const SieveGenotype **genotypes = g_new0(const SieveGenotype *, round->len);
  for (guint i = 0; i < round->len; i++)
    genotypes[i] = sieve_candidate_get_genotype(((Proposal *) round->pdata[i])->candidate);
  SieveScreenRound *scored = sieve_screen_round_new(stage, engine->space, engine->screen_batch, genotypes, round->len);
  guint unscored = 0;
  for (guint i = 0; i < round->len; i++)
    unscored += scored->errors[i] != NULL;
  /* Kept then are the first proposed, not the best: said, with why. */
  if (unscored == round->len && rs->progress) {
    const char *why = scored->errors[0];
    sieve_progress_notice(rs->progress, "stage 'screen': no candidate of this round of %u could be scored (%.*s); "
                          "the %u kept are the first proposed, not the best", round->len, (int) strcspn(why, "\n"),
                          why, keep);
  }
  for (guint i = 0; i < round->len; i++)
    add_stage_metrics(engine, scored->scores[i], ((Proposal *) round->pdata[i])->scores);
  g_autofree gboolean *kept = g_new0(gboolean, round->len);
  g_autofree guint *rank = g_new0(guint, round->len);
  for (guint r = 0; r < round->len; r++) {
    rank[scored->order[r]] = r + 1;
    kept[scored->order[r]] = r < keep;
  }
  g_autofree char *names = g_strjoinv("+", stage->proxies);
  double now = g_get_real_time() / 1e6;

  gboolean ok = sieve_store_begin(engine->store, error) && store_promoted(engine, promoted, error);
  for (guint i = 0; ok && i < round->len; i++) {
    Proposal *p = round->pdata[i];
    if (kept[i]) {
      ok = sieve_store_set_trial_stage(engine->store, proposal_number(p), "evaluate", scored->scores[i], error);
      continue;
    }
    g_autoptr(SieveResult) r = sieve_result_copy(scored->scores[i]);
    sieve_result_set_status(r, SIEVE_STATUS_SCREENED);
    g_autofree char *reason =
        scored->errors[i] ? g_strdup_printf("not scored (%s): %s", names, scored->errors[i])
                          : g_strdup_printf("rank %u of %u by %s; kept: the best %u", rank[i], round->len, names,
                                            keep);
    sieve_result_set_reason(r, reason);
    sieve_result_set_cost(r, 0);
    ok = record(engine, p, r, now, now, -1, -1, error);
    for (guint w = 0; ok && p->waiters && w < p->waiters->len; w++) {
      /* The waiter's own counts and latencies (its twin's may differ). */
      const Proposal *waiter = p->waiters->pdata[w];
      g_autoptr(SieveResult) own = sieve_result_copy(r);
      for (guint m = 0; waiter->scores && m < sieve_result_n_metrics(waiter->scores); m++)
        sieve_result_set_metric(own, sieve_result_metric_name(waiter->scores, m),
                                sieve_result_metric_value(waiter->scores, m));
      g_autofree char *same = g_strdup_printf("screened with trial %" G_GINT64_FORMAT ", the same network: %s",
                                              proposal_number(p), reason);
      sieve_result_set_reason(own, same);
      ok = record(engine, p->waiters->pdata[w], own, now, now, -1, proposal_number(p), error);
    }
  }
  ok = ok && save_optimizer(engine, error) && sieve_store_commit(engine->store, error);
  if (!ok) {
    sieve_store_rollback(engine->store);
    sieve_screen_round_free(scored);
    return FALSE;
  }
  g_ptr_array_set_free_func(owned, NULL);
  guint next_promoted = 0;
  for (guint i = 0; i < round->len; i++) {
    Proposal *p = round->pdata[i];
    if (kept[i]) {
      p->screened_in = TRUE;
      p->scores = g_steal_pointer(&scored->scores[i]);
      sieve_result_set_status(p->scores, SIEVE_STATUS_OK);
      while (next_promoted < promoted->len && proposal_number(promoted->pdata[next_promoted]) < proposal_number(p))
        g_queue_push_tail(&rs->ready, promoted->pdata[next_promoted++]);
      g_queue_push_tail(&rs->ready, p);
      continue;
    }
    guint n = 1 + (p->waiters ? p->waiters->len : 0);
    rs->screened += n;
    for (guint w = 0; w < n && rs->progress; w++) {
      const Proposal *q = w == 0 ? p : p->waiters->pdata[w - 1];
      sieve_progress_screened(rs->progress, proposal_number(q), scored->aggregate[i],
                              sieve_candidate_get_text(q->candidate));
    }
    forget(rs, p);
    proposal_free(p);
  }
  while (next_promoted < promoted->len)
    g_queue_push_tail(&rs->ready, promoted->pdata[next_promoted++]);
  sieve_screen_round_free(scored);
  return TRUE;
}

/* The constraints, before dedupe: computes the metrics known before
 * evaluation of each proposal (in trial order), keeps them with it, and
 * finishes those that break a constraint as rejected (none has duplicates
 * attached yet), in one transaction with the optimizer's
 * state after their tells (the optimizer sees status REJECTED, NAN
 * objectives and the constraint_violation metric).  Before dedupe, because
 * functionally equal networks may differ there (params, latency): a
 * duplicate of an evaluated network meets the bounds with its own numbers,
 * and keeps them if it is answered from the cache (cached_for).  A proposal
 * already past the screen on an earlier run is not rejected again.  Takes
 * the proposals; the feasible ones stay in props, in order. */
static gboolean
constrain(RunState *rs, GPtrArray *props, GError **error)
{
  SieveEngine *engine = rs->engine;
  if (engine->constrainer == NULL || props->len == 0)
    return TRUE;
  guint n = props->len;
  g_autoptr(GPtrArray) pre = g_ptr_array_new_full(n, (GDestroyNotify) sieve_result_free);
  g_autofree gboolean *rejected = g_new0(gboolean, n);
  guint n_rejected = 0;
  for (guint i = 0; i < n; i++) {
    Proposal *p = props->pdata[i];
    GError *local = NULL;
    gboolean feasible = TRUE;
    SieveResult *r = sieve_constrainer_check(engine->constrainer, engine->space,
                                             sieve_candidate_get_genotype(p->candidate), &feasible, &local);
    g_ptr_array_add(pre, r);
    if (r == NULL) {
      /* Not built or not measured: the evaluator meets the same network
       * and reports the failure as a trial's. */
      p->unchecked = TRUE;
      if (rs->progress)
        sieve_progress_message(rs->progress, "trial %" G_GINT64_FORMAT ": not checked against the constraints: %s",
                               proposal_number(p), local->message);
      g_error_free(local);
      continue;
    }
    rejected[i] = !feasible && !p->screened_in;
    n_rejected += rejected[i];
  }
  double now = g_get_real_time() / 1e6;
  gboolean ok = n_rejected == 0 || sieve_store_begin(engine->store, error);
  for (guint i = 0; ok && n_rejected > 0 && i < n; i++) {
    if (!rejected[i])
      continue;
    ok = record(engine, props->pdata[i], pre->pdata[i], now, now, -1, -1, error);
  }
  if (n_rejected > 0) {
    ok = ok && save_optimizer(engine, error) && sieve_store_commit(engine->store, error);
    if (!ok) {
      sieve_store_rollback(engine->store);
      for (guint i = 0; i < n; i++)
        proposal_free(props->pdata[i]);
      g_ptr_array_set_size(props, 0);
      return FALSE;
    }
  }
  guint kept = 0;
  for (guint i = 0; i < n; i++) {
    Proposal *p = props->pdata[i];
    SieveResult *r = pre->pdata[i];
    if (!rejected[i]) {
      if (r != NULL) {
        if (p->scores == NULL)
          p->scores = sieve_result_new();
        add_missing_metrics(p->scores, r);
      }
      /* Rejections "in a row": anything else between them (an evaluation,
       * a cache hit, one not checked) starts the count again. */
      if (!p->counted)
        rs->consecutive_rejections = 0;
      props->pdata[kept++] = p;
      continue;
    }
    rs->rejected++;
    if (!p->counted)
      rs->consecutive_rejections++;
    if (rs->progress)
      sieve_progress_rejected(rs->progress, proposal_number(p), sieve_result_get_reason(r),
                              sieve_candidate_get_text(p->candidate));
    proposal_free(p);
  }
  g_ptr_array_set_size(props, kept);
  if (rs->consecutive_rejections >= engine->exp->constraint_tries && !rs->gave_up) {
    rs->gave_up = TRUE;
    if (rs->progress)
      sieve_progress_notice(rs->progress,
                            "stopping: the last %" G_GINT64_FORMAT " proposals all broke a constraint (the "
                            "optimizer finds nothing feasible; see constraint_tries)",
                            rs->consecutive_rejections);
  }
  return TRUE;
}

/* Dedupe: p (past the constraints) waits for an identical proposal on its
 * way, attached to it, or is answered from a cache, this store's first,
 * then the others in the order given, and freed (*hit TRUE either way);
 * else it is registered as the original its duplicates find.  FALSE with
 * error (p kept) when a store fails. */
static gboolean
dedupe(RunState *rs, Proposal *p, gboolean *hit, GError **error)
{
  SieveEngine *engine = rs->engine;
  *hit = FALSE;
  if (p->slot != NULL && !p->screened_in) {
    Proposal *original = g_hash_table_lookup(rs->inflight, p->slot);
    if (original != NULL) {
      if (original->waiters == NULL)
        original->waiters = g_ptr_array_new_with_free_func((GDestroyNotify) proposal_free);
      g_ptr_array_add(original->waiters, p);
      *hit = TRUE;
      return TRUE;
    }
    const char *kind = sieve_dedupe_hash_name(engine->hash_kind);
    for (guint s = 0; !*hit && s <= engine->shared->len; s++) {
      SieveStore *source = s == 0 ? engine->store : engine->shared->pdata[s - 1];
      GError *local = NULL;
      gint64 cached = sieve_store_cache_lookup(source, kind, p->hash, p->key->digest, &local);
      if (local == NULL && cached >= 0 && !answer_from_cache(rs, p, source, cached, hit, &local))
        g_assert(local != NULL);
      if (local != NULL) {
        g_propagate_error(error, local);
        return FALSE;
      }
    }
    if (*hit)
      return TRUE;
  }
  if (p->slot != NULL)
    g_hash_table_insert(rs->inflight, p->slot, p);
  return TRUE;
}

/* Runs stored pending proposals (in trial order) through the constraints,
 * dedupe and screen; those that need an evaluation end in rs->ready.
 * Takes the proposals. */
static gboolean
admit(RunState *rs, GPtrArray *proposals, GError **error)
{
  SieveEngine *engine = rs->engine;
  /* The proposals move one by one to where they go; the array is ours to free. */
  g_ptr_array_set_free_func(proposals, NULL);
  g_autoptr(GPtrArray) owned = proposals;
  g_autoptr(GPtrArray) passed = g_ptr_array_new(); /* past dedupe */
  g_autoptr(GPtrArray) round = g_ptr_array_new();  /* for the screen */
  if (!constrain(rs, proposals, error))
    return FALSE;
  for (guint i = 0; i < proposals->len; i++) {
    Proposal *p = proposals->pdata[i];
    proposals->pdata[i] = NULL;
    gboolean counted = p->counted, hit = FALSE;
    if (!dedupe(rs, p, &hit, error)) {
      for (guint j = i; j < proposals->len; j++)
        proposal_free(proposals->pdata[j]);
      proposal_free(p);
      /* Those past dedupe are registered as originals: the loop ends. */
      g_ptr_array_set_free_func(passed, (GDestroyNotify) proposal_free);
      return FALSE;
    }
    if (!counted)
      rs->consecutive_hits = hit || p->waited ? rs->consecutive_hits + 1 : 0;
    if (!hit)
      g_ptr_array_add(passed, p);
  }
  for (guint i = 0; i < passed->len; i++) {
    Proposal *p = passed->pdata[i];
    if (engine->exp->pipeline.screen.enabled && !p->screened_in)
      g_ptr_array_add(round, p);
    else
      g_queue_push_tail(&rs->ready, p);
  }
  if (round->len > 0 && !screen_round(rs, round, error))
    return FALSE;
  /* Rejections between hits do not start their count again (nor do hits
   * that of rejections, constrain): an optimizer that only repeats itself
   * and breaks constraints stops too. */
  if (engine->dedupe && rs->consecutive_hits >= engine->exp->pipeline.dedupe.max_consecutive_hits && !rs->gave_up) {
    rs->gave_up = TRUE;
    if (rs->progress)
      sieve_progress_notice(rs->progress,
                            "stopping: the last %" G_GINT64_FORMAT " proposals%s were all duplicates of candidates "
                            "already evaluated (the optimizer seems to have exhausted the space; see the dedupe "
                            "stage's max_consecutive_hits)",
                            rs->consecutive_hits, engine->exp->n_constraints > 0 ? " that met the constraints" : "");
  }
  return TRUE;
}

/* ---- the loop --------------------------------------------------------- */

/* The proposal of stored pending trial t, with what it had (past the
 * screen, its scores, its hash).  NULL when its genotype cannot be read
 * back (then stored failed), or with error set when the store fails. */
static Proposal *
resume_pending(RunState *rs, const SieveTrial *t, GError **error)
{
  SieveEngine *engine = rs->engine;
  const char *kind = engine->dedupe ? sieve_dedupe_hash_name(engine->hash_kind) : NULL;
  GError *local = NULL;
  SieveGenotype *g = sieve_space_parse(engine->space, t->genotype, &local);
  if (g == NULL) {
    /* A record this space cannot read back (the store was edited, or the
     * space's file changed): the trial fails with the reason, the rest of
     * the study goes on.  The optimizer is not told: it has no candidate. */
    g_autoptr(SieveResult) failed = sieve_result_new();
    sieve_result_set_failed(failed, "its stored genotype cannot be read back: %s", local->message);
    if (rs->progress != NULL && !sieve_progress_get_quiet(rs->progress))
      sieve_progress_message(rs->progress, "%s: pending trial %" G_GINT64_FORMAT " skipped: %s",
                             sieve_store_get_path(engine->store), t->number, sieve_result_get_reason(failed));
    else
      g_printerr("sieve: %s: pending trial %" G_GINT64_FORMAT " skipped: %s\n",
                 sieve_store_get_path(engine->store), t->number, sieve_result_get_reason(failed));
    g_error_free(local);
    double now = (double) g_get_real_time() / G_USEC_PER_SEC;
    if (sieve_store_finish_trial(engine->store, t->number, failed, now, now, -1, -1, error))
      rs->evaluations++;
    return NULL;
  }
  SieveCandidate *c = sieve_candidate_new(g, t->fidelity);
  sieve_candidate_set_trial(c, t->number);
  Proposal *p = proposal_new(c);
  p->screened_in = g_strcmp0(t->stage, "evaluate") == 0;
  if (p->screened_in && sieve_result_n_metrics(t->result) > 0) {
    p->scores = sieve_result_copy(t->result);
    sieve_result_set_status(p->scores, SIEVE_STATUS_OK);
  }
  if (engine->dedupe && t->hash != NULL && g_strcmp0(t->hash_kind, kind) == 0 &&
      strlen(t->hash) == SIEVE_DEDUPE_HASH_LEN - 1) {
    memcpy(p->hash, t->hash, SIEVE_DEDUPE_HASH_LEN);
    set_slot(engine, p);
  } else if (engine->dedupe) {
    /* Stored without one (hashing failed then): try again. */
    hash_proposal(engine, p);
    if (p->hash[0] != '\0' && !sieve_store_set_trial_hash(engine->store, t->number, kind, p->hash, error)) {
      proposal_free(p);
      return NULL;
    }
    report_hash_error(rs, p);
  }
  return p;
}

/* What the store holds from earlier runs: counts, the best, and the pending
 * trials, which go through the stages again before anything new is asked. */
static gboolean
resume_trials(RunState *rs, GError **error)
{
  SieveEngine *engine = rs->engine;
  g_autoptr(GPtrArray) trials = sieve_store_list_trials(engine->store, FALSE, error);
  if (trials == NULL)
    return FALSE;
  /* A default hash the study began with stays its hash: a version whose
   * default differs (a space with a structural hash of its own) would key
   * its cache apart, and retrain what the store has answered before. */
  for (guint i = 0; engine->dedupe && !engine->exp->pipeline.dedupe.hash_set && i < trials->len; i++) {
    const char *stored = ((const SieveTrial *) trials->pdata[i])->hash_kind;
    if (stored != NULL) {
      sieve_dedupe_hash_from_name(stored, &engine->hash_kind);
      break;
    }
  }
  g_autoptr(GPtrArray) pending = g_ptr_array_new_with_free_func((GDestroyNotify) proposal_free);
  gint64 n_ok = 0, n_failed = 0;
  g_autoptr(GHashTable) seen = NULL;
  /* (none saved: the pending trials are judged as dispatched) */
  if (engine->pruner != NULL && !load_trial_map(engine->store, "pruner_seen", &seen, error))
    return FALSE;
  if (!load_trial_map(engine->store, "waited_for", &engine->waited_for, error))
    return FALSE;
  /* A pending trial before the last one finished went through the stages
   * in the live run (a batch is admitted whole before the next ask):
   * counted in the runs "in a row" here, at its place; those after it
   * are counted as admit meets them. */
  guint tail = trials->len;
  while (tail > 0 && ((SieveTrial *) trials->pdata[tail - 1])->status == SIEVE_STATUS_PENDING)
    tail--;
  g_autoptr(GHashTable) slots = g_hash_table_new(g_str_hash, g_str_equal); /* of the pending, borrowed */
  for (guint i = 0; i < trials->len; i++) {
    SieveTrial *t = trials->pdata[i];
    rs->proposals++;
    n_ok += t->status == SIEVE_STATUS_OK;
    n_failed += t->status == SIEVE_STATUS_FAILED;
    /* It took a failed original's place: a hit where admit met it. */
    gboolean waited = engine->waited_for != NULL &&
                      g_hash_table_contains(engine->waited_for, GSIZE_TO_POINTER((gsize) t->number));
    /* The counts "in a row" as the live run left them (constrain, admit). */
    if (t->status == SIEVE_STATUS_REJECTED)
      rs->consecutive_rejections++;
    else if (t->status != SIEVE_STATUS_PENDING || i < tail)
      rs->consecutive_rejections = 0;
    switch (t->status) {
    case SIEVE_STATUS_OK:
      rs->objective_seen = TRUE; /* stored ok only after check_objective passed */
      /* fall through */
    case SIEVE_STATUS_FAILED:
    case SIEVE_STATUS_PRUNED:
      rs->evaluations++;
      rs->consecutive_hits = waited ? rs->consecutive_hits + 1 : 0;
      note_best(rs, t->number, t->fidelity, sieve_engine_objective(engine->exp, t->result));
      continue;
    case SIEVE_STATUS_CACHED:
      rs->hits++;
      rs->consecutive_hits++;
      if (sieve_trial_is_ranked(t))
        note_best(rs, t->number, t->fidelity, metric_value(engine->exp, t->result));
      continue;
    case SIEVE_STATUS_SCREENED:
      rs->screened++;
      /* It passed dedupe, or waited for a twin screened with it (a hit). */
      rs->consecutive_hits = t->cached_from >= 0 ? rs->consecutive_hits + 1 : 0;
      continue;
    case SIEVE_STATUS_REJECTED:
      rs->rejected++;
      continue;
    case SIEVE_STATUS_PENDING:
      break;
    }
    GError *local = NULL;
    Proposal *p = resume_pending(rs, t, &local);
    if (p == NULL && local != NULL) {
      g_propagate_error(error, local);
      return FALSE;
    }
    if (p == NULL) {
      n_failed++; /* stored failed now */
      continue;
    }
    gpointer fixed;
    if (seen != NULL && g_hash_table_lookup_extended(seen, GSIZE_TO_POINTER((gsize) t->number), NULL, &fixed)) {
      p->seen = (gint64) GPOINTER_TO_SIZE(fixed);
      /* Kept for the next ask's save, whatever happens to the proposal (a duplicate waits). */
      if (engine->pruner_seen == NULL)
        engine->pruner_seen = g_hash_table_new(g_direct_hash, g_direct_equal);
      g_hash_table_insert(engine->pruner_seen, GSIZE_TO_POINTER((gsize) t->number), fixed);
    }
    g_ptr_array_add(pending, p);
    /* As admit meets it: a duplicate of a pending trial before it waits
     * for that one (a hit), as did one that took a failed original's
     * place; any other passed dedupe. */
    p->waited = waited;
    gboolean waits = p->slot != NULL && !p->screened_in && g_hash_table_contains(slots, p->slot);
    if (i < tail) {
      p->counted = TRUE;
      rs->consecutive_hits = waits || waited ? rs->consecutive_hits + 1 : 0;
    }
    if (p->slot != NULL && !waits)
      g_hash_table_add(slots, p->slot);
  }
  if (rs->progress != NULL) {
    sieve_progress_set_counts(rs->progress, rs->evaluations, n_ok, n_failed, rs->hits, rs->screened);
    sieve_progress_set_rejected(rs->progress, rs->rejected);
    if (rs->best_number >= 0)
      sieve_progress_set_best(rs->progress, rs->best_number, rs->best, rs->best_fidelity);
  }
  return admit(rs, g_steal_pointer(&pending), error);
}


static gint64
proposals_left(const RunState *rs)
{
  gint64 budget = rs->engine->exp->budget_proposals;
  return budget > 0 ? budget - rs->proposals : G_MAXINT64;
}

/* The next evaluation a worker finished, from the store's queue: waits
 * until one of jobs (trial -> Job*) is done.  NULL on an interrupt, or
 * with error set when the store fails. */
static Job *
wait_queue(RunState *rs, GHashTable *jobs, GQueue *done, GError **error)
{
  for (guint polls = 0; g_queue_is_empty(done); polls++) {
    if (stop_requested)
      return NULL;
    /* Woken by the worker that writes a result (sieve__queue_complete);
     * the time-out only covers a notification lost with a session. */
    if (polls > 0)
      sieve__queue_wait(rs->engine->store, "done", QUEUE_WAIT_S);
    g_autoptr(GPtrArray) items = sieve__queue_take_done(rs->engine->store, error);
    if (items == NULL)
      return NULL;
    for (guint i = 0; i < items->len; i++) {
      SieveQueueItem *item = items->pdata[i];
      gpointer key = NULL, value = NULL;
      if (!g_hash_table_steal_extended(jobs, &item->trial, &key, &value))
        continue; /* not this run's: it stays for the run that queued it */
      g_free(key); /* the job is ours now; its key was the table's */
      Job *job = value;
      job->result = g_steal_pointer(&item->result);
      job->intermediate = g_steal_pointer(&item->intermediate);
      job->started = item->started;
      job->finished = item->finished;
      /* "host:pid:thread": the worker's process id stands for it. */
      const char *pid = item->worker ? strchr(item->worker, ':') : NULL;
      job->worker = pid ? (gint) g_ascii_strtoll(pid + 1, NULL, 10) : -1;
      g_queue_push_tail(done, job);
    }
  }
  return g_queue_pop_head(done);
}

/* wait_queue in dispatch order (dispatched, tell_order: trial), as
 * next_done does for local workers.  A job that arrived before its turn
 * stays only in dispatched: the caller frees those left there. */
static Job *
next_queued(RunState *rs, GHashTable *jobs, GQueue *done, GQueue *dispatched, GError **error)
{
  if (dispatched == NULL)
    return wait_queue(rs, jobs, done, error);
  Job *head = g_queue_peek_head(dispatched);
  while (!head->arrived) {
    Job *job = wait_queue(rs, jobs, done, error);
    if (job == NULL)
      return NULL;
    job->arrived = TRUE;
  }
  return g_queue_pop_head(dispatched);
}

/* A finished job: its result checked, stored and told; its queue row
 * deleted (queued).  FALSE when the store failed (*fatal set).  In a batch
 * (rs->batch) the job goes to stored, for finish_told after the commit. */
static gboolean
process_job(RunState *rs, Job *job, gboolean queued, GPtrArray *stored_jobs, GError **fatal)
{
  const SieveExperiment *exp = rs->engine->exp;
  rs->running--;
  if (job->result == NULL) {
    if (*fatal == NULL)
      *fatal = g_steal_pointer(&job->error);
    job_free(job);
    return TRUE;
  }
  /* A trial that failed after an interrupt was most likely killed by it
   * (the terminal sends SIGINT to the evaluator's processes too): leave it
   * pending so --resume runs it again instead of recording a false failure. */
  if (stop_requested && sieve_result_get_status(job->result) == SIEVE_STATUS_FAILED) {
    job_free(job);
    return TRUE;
  }
  if (job->pruned && last_intermediate(job) != NULL)
    mark_pruned(exp, job);
  /* A pruner that never gets a value judges nothing: say so once, or a
   * program that writes its progress to stderr (Python's logging does)
   * would leave the pruner silently off. */
  if (exp->pruner != NULL && !rs->warned_silent && job->intermediate != NULL && job->intermediate->len == 0 &&
      sieve_result_get_status(job->result) == SIEVE_STATUS_OK) {
    rs->warned_silent = TRUE;
    g_autofree char *text = sieve_engine_silent_trial_text(proposal_number(job->proposal));
    warn(rs, text);
  }
  if (job->repeated && !rs->warned_repeat) {
    rs->warned_repeat = TRUE;
    g_autofree char *text = sieve_engine_repeated_step_text(proposal_number(job->proposal), job->repeated_step);
    warn(rs, text);
  }
  GError *local = NULL;
  add_stage_metrics(rs->engine, job->result, job->proposal->scores);
  /* Checked before storing, so the trial is stored as it will be read. */
  if (!check_objective(rs, proposal_number(job->proposal), job->result, &local) && *fatal == NULL)
    *fatal = g_steal_pointer(&local);
  g_clear_error(&local);
  gint64 number = proposal_number(job->proposal);
  gboolean stored = finish_evaluation(rs, job, &local) &&
                    (!queued || sieve__queue_delete(rs->engine->store, number, &local));
  if (!stored) {
    if (*fatal == NULL)
      *fatal = local;
    else
      g_error_free(local);
  }
  if (stored && rs->batch)
    g_ptr_array_add(stored_jobs, job);
  else
    job_free(job);
  return stored;
}

/* The results the workers sent back together, job and those that arrived
 * with it, recorded in one transaction: the optimizer told each in turn
 * and its state saved once, after the last tell, with their queue rows
 * deleted.  One result at a time would cost a transaction and a state
 * each, which bounds the trials a coordinator records per second (README,
 * "Many machines").  A failed batch leaves its results done in the queue,
 * where --resume finds them. */
static void
record_batch(RunState *rs, Job *job, GQueue *done, gboolean in_order, GError **fatal)
{
  SieveStore *store = rs->engine->store;
  if (!sieve_store_begin(store, fatal)) {
    rs->running--;
    job_free(job);
    return;
  }
  rs->batch = TRUE;
  g_autoptr(GPtrArray) told = g_ptr_array_new_with_free_func((GDestroyNotify) job_free);
  gboolean stored = TRUE;
  /* tell_order: trial asks again after each tell, as local workers do, so
   * that the study is theirs: one result at a time. */
  for (; job != NULL; job = stored && *fatal == NULL && !in_order ? g_queue_pop_head(done) : NULL)
    stored = process_job(rs, job, TRUE, told, fatal);
  rs->batch = FALSE;
  g_autofree char *elapsed_text = g_strdup_printf("%.3f", elapsed(rs));
  GError *local = NULL;
  if (stored && save_optimizer(rs->engine, &local) && sieve_store_set_meta(store, "elapsed_s", elapsed_text, &local) &&
      sieve_store_commit(store, &local)) {
    for (guint i = 0; i < told->len; i++)
      finish_told(rs, told->pdata[i]);
    return;
  }
  if (local != NULL && *fatal == NULL)
    *fatal = local;
  else if (local != NULL)
    g_error_free(local);
  sieve_store_rollback(store);
}

/* Commits the queue's new rows (putting: their jobs).  When that fails,
 * no worker will see them: their jobs are dropped (their trials stay
 * pending for --resume), *fatal set. */
static gboolean
end_puts(RunState *rs, GPtrArray *putting, GHashTable *jobs, GQueue *dispatched, GError **fatal)
{
  GError *local = NULL;
  gboolean ok = *fatal == NULL && sieve__queue_announce(rs->engine->store, "queued", &local) &&
                sieve_store_commit(rs->engine->store, &local);
  if (!ok) {
    sieve_store_rollback(rs->engine->store);
    for (guint i = 0; i < putting->len; i++) {
      Job *job = putting->pdata[i];
      gint64 number = proposal_number(job->proposal);
      rs->running--;
      g_queue_remove(dispatched, job);
      g_hash_table_remove(jobs, &number); /* frees the job */
    }
    if (*fatal == NULL)
      *fatal = local;
    else
      g_clear_error(&local);
  }
  g_ptr_array_set_size(putting, 0);
  return ok;
}

static gint64 *
trial_key(const Job *job)
{
  gint64 *key = g_new(gint64, 1);
  *key = proposal_number(job->proposal);
  return key;
}

/* A component written in Lua: the builtin lua plugin's, or one a script
 * registered (its file is the script). */
gboolean
sieve__component_in_lua(const SieveComponent *component)
{
  const char *path = sieve_component_get_path(component);
  return g_strcmp0(sieve_component_get_plugin_name(component), "lua") == 0 ||
         (path != NULL && g_str_has_suffix(path, ".lua"));
}

/* The space written in Lua that builds the study's networks (the space,
 * or a composite's architecture part), which runs on its script's thread
 * only; NULL when they are built in C. (transfer none) */
static const SieveSpace *
builds_in_lua(const SieveEngine *engine)
{
  const SieveSpace *builder = network_space(engine->space);
  const SieveComponent *c = builder != engine->space ? sieve__space_get_component(builder)
                                                     : engine->exp->space.component;
  return c != NULL && sieve__component_in_lua(c) ? builder : NULL;
}

gboolean
sieve_engine_run(SieveEngine *engine, SieveStore *store, SieveProgress *progress, GError **error)
{
  g_return_val_if_fail(engine != NULL && store != NULL, FALSE);
  g_return_val_if_fail(engine->store == NULL, FALSE); /* one run per engine */
  engine->store = store;
  if (!restore_optimizer(engine, error) || !restore_pruner(engine, error))
    return FALSE;
  /* budget.seconds counts from it: a value that is not a finite number
   * from 0 would never let the budget be spent, or spend it at once. */
  GError *local = NULL;
  g_autofree char *elapsed_text = sieve_store_get_meta(store, "elapsed_s", &local);
  if (local != NULL) {
    g_propagate_error(error, local);
    return FALSE;
  }
  double elapsed_before = 0;
  if (elapsed_text != NULL) {
    char *end = NULL;
    elapsed_before = g_ascii_strtod(elapsed_text, &end);
    if (end == elapsed_text || *end != '\0' || !isfinite(elapsed_before) || elapsed_before < 0) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE,
                  "%s: corrupt store: meta 'elapsed_s' is '%s' (expected a finite number of seconds from 0)",
                  sieve_store_get_path(store), elapsed_text);
      return FALSE;
    }
  }
  const SieveExperiment *exp = engine->exp;
  RunState rs = {.engine = engine, .progress = progress, .best_number = -1, .best = NAN,
               .best_fidelity = NAN};
  rs.inflight = g_hash_table_new(g_str_hash, g_str_equal);
  g_queue_init(&rs.ready);
  g_autoptr(GAsyncQueue) done = g_async_queue_new();
  GError *fatal = NULL;
  gboolean exhausted = FALSE;
  stop_requested = 0;

  rs.elapsed_before = elapsed_before;
  rs.start = g_get_monotonic_time();

  if (engine->constrainer != NULL)
    sieve_constrainer_attach(engine->constrainer, store);
  rs.run = sieve_store_begin_run(engine->store, error);
  if (rs.run < 0 || !resume_trials(&rs, error)) {
    g_queue_clear_full(&rs.ready, (GDestroyNotify) proposal_free);
    g_hash_table_unref(rs.inflight);
    return FALSE;
  }

  gboolean queued = engine->queue_in_flight > 0;
  guint workers = queued ? engine->queue_in_flight : exp->workers;
  /* An evaluator may ask for several at once (train's per_gpu on a GPU)
   * where the file leaves workers unset; a written workers wins. */
  if (!queued && !exp->workers_set && sieve_evaluator_get_workers(engine->evaluator) > 1) {
    /* A Lua space builds networks on its script's thread only, and the
     * evaluator builds them on its workers': stay at one. */
    if (builds_in_lua(engine)) {
      if (progress)
        sieve_progress_message(progress, "evaluator '%s' would run %u evaluations at once, but space '%s' runs in "
                               "Lua, on one thread: 1 worker", sieve_component_get_name(exp->evaluator.component),
                               sieve_evaluator_get_workers(engine->evaluator),
                               sieve_space_get_name(builds_in_lua(engine)));
    } else {
      workers = sieve_evaluator_get_workers(engine->evaluator);
      if (progress)
        sieve_progress_message(progress, "evaluator '%s' runs %u evaluations at once (its own count; set workers "
                               "to change it)", sieve_component_get_name(exp->evaluator.component), workers);
    }
  }
  g_autoptr(GHashTable) queue_jobs = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, (GDestroyNotify) job_free);
  GQueue queue_done = G_QUEUE_INIT;
  /* Workers check that they run what this sieve would (same version and
   * ABI; the plugins and options by loading the stored experiment). */
  /* Announced at once: workers that wait for the study start up while
   * the first evaluations are asked. */
  if (queued && (!sieve__queue_setup(store, error) || !sieve_store_set_meta(store, "sieve_version", SIEVE_VERSION, error) ||
                 !sieve_store_set_meta(store, "queue", "open", error) || !sieve__queue_announce(store, "queued", error))) {
    g_queue_clear_full(&rs.ready, (GDestroyNotify) proposal_free);
    g_hash_table_unref(rs.inflight);
    return FALSE;
  }
  /* A Lua space builds networks on its script's thread only: an evaluator
   * that builds them on its workers' threads failed every trial there. */
  if (!queued && workers > 1 && sieve_evaluator_builds_networks(engine->evaluator) && builds_in_lua(engine)) {
    if (progress)
      sieve_progress_message(progress, "space '%s' runs in Lua, on one thread, and evaluator '%s' builds its "
                             "networks: using 1 worker, not %u",
                             sieve_space_get_name(builds_in_lua(engine)),
                             sieve_component_get_name(exp->evaluator.component), workers);
    workers = 1;
  }
  if (!queued && workers > 1 && !sieve_evaluator_is_concurrent(engine->evaluator)) {
    if (progress)
      sieve_progress_message(progress, "evaluator '%s' cannot run concurrently: using 1 worker, not %u",
                             sieve_component_get_name(exp->evaluator.component), workers);
    workers = 1;
  }
  PoolData pool_data = {engine->evaluator, done};
  GThreadPool *pool = NULL;
  if (workers > 1)
    pool = g_thread_pool_new(pool_func, &pool_data, (gint) workers, FALSE, NULL);
  GQueue dispatched = G_QUEUE_INIT; /* Job* under way, in dispatch order (tell_order: trial) */
  gboolean in_order = workers > 1 && exp->tell_in_order;
  /* The references of the pending trials resumed (resume_trials), and of
   * those asked from now on, are kept only where they are used. */
  if (in_order && engine->pruner != NULL && !queued) {
    if (engine->pruner_seen == NULL)
      engine->pruner_seen = g_hash_table_new(g_direct_hash, g_direct_equal);
    if (engine->pruner_order == NULL)
      engine->pruner_order = g_hash_table_new(g_direct_hash, g_direct_equal);
  } else {
    g_clear_pointer(&engine->pruner_seen, g_hash_table_unref);
    g_clear_pointer(&engine->pruner_order, g_hash_table_unref);
  }

  /* The evaluations queued since the last ask, in one transaction: the
   * workers see them all at once, for one commit. */
  g_autoptr(GPtrArray) putting = g_ptr_array_new();
  for (;;) {
    /* Fill the free workers: proposals in line first, then new ones. */
    while (!stop_requested && fatal == NULL && rs.running < workers) {
      if (g_queue_is_empty(&rs.ready)) {
        if (putting->len > 0 && !end_puts(&rs, putting, queue_jobs, &dispatched, &fatal))
          break;
        gint64 evaluations = evaluations_left(&rs), proposals = proposals_left(&rs);
        if (evaluations <= 0 || proposals <= 0 || exhausted || rs.gave_up ||
            (exp->budget_seconds > 0 && elapsed(&rs) >= exp->budget_seconds))
          break;
        /* A screening round is asked whole; otherwise one per free worker. */
        gint64 n = exp->pipeline.screen.enabled ? exp->pipeline.screen.batch
                                                : MIN((gint64) (workers - rs.running), evaluations);
        guint want = (guint) MIN(n, proposals);
        g_autoptr(GPtrArray) asked = g_ptr_array_new();
        if (!ask_and_store(&rs, want, asked, &fatal))
          break;
        if (asked->len == 0) {
          /* Nothing to propose until a running evaluation reports (e.g. a
           * rung waiting for its results): wait for one and ask again.
           * Nothing running as well: the optimizer has nothing left. */
          if (rs.running > 0)
            break;
          exhausted = TRUE;
          if (progress)
            sieve_progress_notice(progress, "optimizer '%s' has no more candidates",
                                  sieve_component_get_name(exp->optimizer.component));
          break;
        }
        if (!admit(&rs, g_steal_pointer(&asked), &fatal))
          break;
        continue;
      }
      /* Only a duplicate that takes a failed original's place can be in
       * line beyond the budget: it stays pending for a later run. */
      if (exp->budget_evaluations > 0 && rs.evaluations + rs.running >= exp->budget_evaluations)
        break;
      Job *job = g_new0(Job, 1);
      job->proposal = g_queue_pop_head(&rs.ready);
      job->pruner = engine->pruner;
      /* tell_order: trial: judged against the trials completed when it
       * was asked (ask_and_store), which the order of tells fixes (the
       * optimizer that asked for it had been told the same), not against
       * whichever finished while it ran: the same decisions in every run,
       * a resumed one too. */
      job->seen = !in_order || job->pruner == NULL ? G_MAXINT64
                  : job->proposal->seen >= 0     ? job->proposal->seen
                                                 : sieve_pruner_count_completed(job->pruner);
      if (progress)
        sieve_candidate_set_report_func(job->proposal->candidate, report_activity, progress);
      sieve_candidate_set_workers(job->proposal->candidate, workers);
      if (in_order)
        g_queue_push_tail(&dispatched, job);
      rs.running++;
      if (queued) {
        SieveCandidate *c = job->proposal->candidate;
        if ((putting->len == 0 && !sieve_store_begin(store, &fatal)) ||
            !sieve__queue_put(store, proposal_number(job->proposal), sieve_candidate_get_text(c),
                              sieve_candidate_get_fidelity(c), &fatal)) {
          rs.running--;
          g_queue_remove(&dispatched, job);
          job_free(job);
          if (putting->len > 0)
            end_puts(&rs, putting, queue_jobs, &dispatched, &fatal);
          break;
        }
        g_hash_table_insert(queue_jobs, trial_key(job), job);
        g_ptr_array_add(putting, job);
      } else if (pool != NULL)
        g_thread_pool_push(pool, job, NULL);
      else {
        run_job(job, engine->evaluator);
        g_async_queue_push(done, job);
      }
    }
    if (putting->len > 0)
      end_puts(&rs, putting, queue_jobs, &dispatched, &fatal);
    if (rs.running == 0)
      break;

    Job *job = queued ? next_queued(&rs, queue_jobs, &queue_done, in_order ? &dispatched : NULL,
                                    fatal ? NULL : &fatal)
                      : next_done(done, in_order ? &dispatched : NULL);
    if (job == NULL)
      break; /* interrupted, or the store failed: what is queued stays for --resume */
    if (queued && fatal == NULL)
      record_batch(&rs, job, &queue_done, in_order, &fatal);
    else
      process_job(&rs, job, queued, NULL, &fatal);
  }

  if (pool != NULL)
    g_thread_pool_free(pool, FALSE, TRUE);
  g_queue_clear_full(&queue_done, (GDestroyNotify) job_free);
  /* Queued jobs that came back before their turn when the run stopped (the
   * others are still in queue_jobs, which frees them). */
  for (GList *l = dispatched.head; queued && l != NULL; l = l->next)
    if (((Job *) l->data)->arrived)
      job_free(l->data);
  g_queue_clear(&dispatched);
  /* A study that ran to its end closes the queue: its workers exit. */
  if (queued && fatal == NULL && !stop_requested &&
      (!sieve_store_set_meta(store, "queue", "closed", &fatal) || !sieve__queue_announce(store, "queued", &fatal)))
    g_prefix_error(&fatal, "cannot close the evaluation queue: ");
  if (fatal == NULL && !stop_requested && rs.ready.length > 0 && progress)
    sieve_progress_message(progress,
                           "%u proposal%s stay%s pending: the evaluation budget is spent (a larger budget and "
                           "--resume evaluate%s them)",
                           rs.ready.length, rs.ready.length == 1 ? "" : "s", rs.ready.length == 1 ? "s" : "",
                           rs.ready.length == 1 ? "s" : "");
  g_queue_clear_full(&rs.ready, (GDestroyNotify) proposal_free);
  g_hash_table_unref(rs.inflight);
  if (progress)
    sieve_progress_end(progress);
  if (fatal != NULL) {
    g_propagate_error(error, fatal);
    return FALSE;
  }
  return TRUE;
}
