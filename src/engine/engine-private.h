/* sieve: the engine area: the study loop, dedupe, screen, progress and summaries, opening a study.
 * Not installed: not part of the plugin ABI. */
#pragma once

#include <stdio.h>
#include <glib.h>
#include <sieve/proxy.h>
#include <sieve/result.h>
#include <sieve/store.h>
#include "base/base-private.h"
#include "core/core-private.h"

G_BEGIN_DECLS

/* ==== progress (progress.c) ==== */
/* sieve: what a running study prints.
 *
 * On a terminal, one status line redrawn in place (trials done / budget,
 * best so far, rate, ETA); otherwise one plain line per finished trial, so
 * that logs and CI output stay readable.  At the end, a summary table of the
 * best trials read back from the store.
 */

typedef struct _SieveProgress SieveProgress;

/* out (nullable): where it prints; NULL counts and calls the hook but prints
 * nothing (--quiet).  budget: evaluations to reach (0: none); already:
 * finished before this run. (transfer full) */
SIEVE_INTERNAL_API SieveProgress *sieve_progress_new(FILE *out, gboolean interactive, gint64 budget, gint64 already,
                                  const char *objective, gboolean maximize);
SIEVE_INTERNAL_API void sieve_progress_free(SieveProgress *progress);

/* An evaluation finished. objective: its objective metric value (NAN if none). */
SIEVE_INTERNAL_API void sieve_progress_trial(SieveProgress *progress, gint64 number, SieveStatus status, double objective,
                          const char *genotype, double cost, const char *reason);
/* A proposal answered by the dedupe stage with the result of trial
 * original (objective: that result's; origin, nullable: where that trial
 * is when not in this run, "run 1" or another store's name), or screened out by the screen stage
 * (score: its aggregate proxy rank in its round).  Neither counts towards
 * the evaluations shown against the budget. */
SIEVE_INTERNAL_API void sieve_progress_cached(SieveProgress *progress, gint64 number, gint64 original,
                                              const char *origin, double objective, const char *genotype);
SIEVE_INTERNAL_API void sieve_progress_screened(SieveProgress *progress, gint64 number, double score,
                                                const char *genotype);
/* What earlier runs of the study did (resume): evaluations (ok and failed
 * among them), cache hits, screened. */
SIEVE_INTERNAL_API void sieve_progress_set_counts(SieveProgress *progress, gint64 evaluations, gint64 ok,
                                                  gint64 failed, gint64 cached, gint64 screened);
/* A proposal rejected by a constraint (reason: which); does not count
 * towards the budget.  set_rejected: what earlier runs rejected. */
SIEVE_INTERNAL_API void sieve_progress_rejected(SieveProgress *progress, gint64 number, const char *reason,
                                                const char *genotype);
SIEVE_INTERNAL_API void sieve_progress_set_rejected(SieveProgress *progress, gint64 rejected);
/* What a running trial is doing ("epoch 1.5/2 step 700/936 loss 0.41"):
 * on a terminal, shown at the end of the status line; otherwise printed at
 * most every few seconds.  Safe to call from worker threads. */
SIEVE_INTERNAL_API void sieve_progress_activity(SieveProgress *progress, gint64 trial, const char *text);
/* The best so far, as known before this run (resume). */
/* The incumbent, from now on told by the caller (the engine's: the best at
 * the highest fidelity, shown with it unless fidelity is NAN), not worked
 * out from each trial's objective. */
SIEVE_INTERNAL_API void sieve_progress_set_best(SieveProgress *progress, gint64 number, double objective,
                                                double fidelity);
/* Print a message on its own line without garbling the status line. */
SIEVE_INTERNAL_API void sieve_progress_message(SieveProgress *progress, const char *format, ...) G_GNUC_PRINTF(2, 3);
/* A message printed even by a quiet progress: why a study stopped short
 * of its budget, or a warning about what it could not do. */
SIEVE_INTERNAL_API void sieve_progress_notice(SieveProgress *progress, const char *format, ...) G_GNUC_PRINTF(2, 3);
/* A quiet progress (`sieve run --quiet`) prints only notices: no trial,
 * activity or message lines, no status line; its hook is still called. */
SIEVE_INTERNAL_API void sieve_progress_set_quiet(SieveProgress *progress, gboolean quiet);
SIEVE_INTERNAL_API gboolean sieve_progress_get_quiet(const SieveProgress *progress);
/* Called (on the engine's thread, after the store's commit) each time a
 * trial is stored finished, cached or screened: what `sieve run --report
 * --report-every` hangs its rewrite on.  hook NULL removes it. */
typedef void (*SieveProgressHook)(gpointer data);
/* What a line calls the numbers it shows (default "trial"): `sieve final`
 * shows its trainings by their trial's number as "final of trial". */
SIEVE_INTERNAL_API void sieve_progress_set_noun(SieveProgress *progress, const char *noun);
SIEVE_INTERNAL_API void sieve_progress_set_hook(SieveProgress *progress, SieveProgressHook hook, gpointer data);
/* Ends the status line. */
SIEVE_INTERNAL_API void sieve_progress_end(SieveProgress *progress);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveProgress, sieve_progress_free)

/* ==== the incumbent (incumbent.c) ==== */

/* Whether value at fidelity beats best_value at best_fidelity by the
 * incumbent rule: the higher fidelity wins (NAN fidelity is the evaluator's
 * full one), then the better value; a NAN value never wins, and anything
 * beats a NAN best_value. */
SIEVE_INTERNAL_API gboolean sieve_incumbent_better(double fidelity, double value, double best_fidelity,
                                                   double best_value, gboolean maximize);
/* Whether trial's result counts in the study's rankings (best, top lists,
 * Pareto front): an ok trial, or one answered from another store's cache
 * (dedupe.cache_from); not a duplicate answered from this store's own
 * trial, which would count that result twice. */
SIEVE_INTERNAL_API gboolean sieve_trial_is_ranked(const SieveTrial *trial);
/* The ranked trials (sieve_trial_is_ranked) with a value of objective, as
 * indices into trials, best first by the incumbent rule (ties by number).
 * When their fidelities differ (*by_fidelity, nullable, set TRUE) each
 * configuration (genotype) appears once, at the highest fidelity it
 * reached: what the summary, the report and Lua's study:best() rank.
 * (transfer full) */
SIEVE_INTERNAL_API GArray *sieve_trials_rank(GPtrArray *trials, const char *objective, gboolean maximize,
                                             gboolean *by_fidelity);
/* The trials a Pareto front over metrics[0..n) is drawn from, as indices
 * into trials in their order: the ranked trials with a value of every
 * metric, at the highest fidelity any of them reached (NAN counting as the
 * evaluator's full one).  What the summary and the report share.
 * (transfer full) element-type guint */
SIEVE_INTERNAL_API GArray *sieve_trials_pareto_points(GPtrArray *trials, const char *const *metrics, guint n);
/* The non-dominated trials among those points over metrics[k] (larger is
 * better where maximize[k]), as indices into trials, sorted by the first
 * metric, best first (ties by number): the front the summary prints and
 * Lua's study:best_trials() returns.  (transfer full) element-type guint */
SIEVE_INTERNAL_API GArray *sieve_trials_pareto_front(GPtrArray *trials, const char *const *metrics,
                                                     const gboolean *maximize, guint n);

/* ==== the summary (summary.c) ==== */

/* Summary table of the top trials of a store: rank, trial, objective, the
 * other metrics (up to four), genotype; before it the counts (evaluated,
 * answered from the cache, screened out, pending).  top = 0 prints counts only. */
SIEVE_INTERNAL_API gboolean sieve_print_summary(FILE *out, SieveStore *store, const char *objective, gboolean maximize, guint top,
                             GError **error);

/* The non-dominated trials over n objectives (metrics[k], maximize[k]),
 * sorted by the first; for studies with two or more objectives. */
SIEVE_INTERNAL_API gboolean sieve_print_pareto(FILE *out, SieveStore *store, const char *const *metrics,
                                               const gboolean *maximize, guint n, GError **error);

/* ==== the search loop ==== */
/* sieve: the search loop: ask -> store -> evaluate -> store + tell.
 *
 *   g_autoptr(SieveEngine) engine = sieve_engine_new(experiment, &error);
 *   sieve_engine_run(engine, store, progress, &error);
 *
 * Durability: each batch of proposals is stored as pending trials in one
 * transaction with the optimizer's state after the ask; each finished trial
 * is stored in one transaction with the state after its tell.  So the store
 * always holds a consistent point: a run killed at any moment resumes by
 * loading the last state and evaluating the trials still pending, and with
 * one worker and a deterministic evaluator it ends with exactly the trials
 * an uninterrupted run would have.
 */

typedef struct _SieveEngine SieveEngine;

/* Builds space, evaluator and optimizer (so that a component refusing its
 * options is reported before any store is touched).  experiment must
 * outlive it. (transfer full) */
SIEVE_INTERNAL_API SieveEngine *sieve_engine_new(const SieveExperiment *experiment, GError **error);
SIEVE_INTERNAL_API void sieve_engine_free(SieveEngine *engine);

/* Restores the optimizer's state from store when it holds one, then runs
 * until the budget is spent, the optimizer has nothing left, an interrupt
 * (SIGINT/SIGTERM: finish the trials in flight, then stop) or a fatal
 * error.  Once per engine; store must outlive the call.  progress may be NULL. */
SIEVE_INTERNAL_API gboolean sieve_engine_run(SieveEngine *engine, SieveStore *store, SieveProgress *progress,
                                             GError **error);

/* Evaluations go to the store's queue (a PostgreSQL store), for `sieve
 * worker` processes, with at most in_flight queued or running at once;
 * the run takes their results as they arrive.  Call before sieve_engine_run. */
SIEVE_INTERNAL_API void sieve_engine_set_queue(SieveEngine *engine, guint in_flight);
/* A worker's evaluation: genotype (the space's text) of trial at fidelity
 * (NAN: the evaluator's default) by the engine's evaluator. (transfer full)
 * *intermediate (nullable; transfer full, element-type SieveIntermediate):
 * the values it reported, by step.  With a pruner in the experiment, it
 * judges them against the trials completed in store (transfer none) when
 * the evaluation starts, and a pruned result comes back as such. */
SIEVE_INTERNAL_API SieveResult *sieve_engine_evaluate_text(SieveEngine *engine, SieveStore *store, gint64 trial,
                                                         const char *genotype, double fidelity,
                                                         GArray **intermediate, GError **error);

/* "dedupe (functional hash) -> screen (naswot, best 4 of 16) -> tabular",
 * or NULL when the experiment has no pipeline stages. (transfer full) */
SIEVE_INTERNAL_API char *sieve_engine_describe_pipeline(const SieveEngine *engine);

/* Ask the run in progress to stop after the trials in flight (signal safe). */
SIEVE_INTERNAL_API void sieve_engine_request_stop(void);

/* The engine's rule for an OK result's objectives (metrics[0..n)), shared
 * with Lua studies: one that is not a finite number, or missing, fails the
 * result with the reason.  Returns the index of the first missing one, with
 * *missing (transfer full; may be NULL) "the objective metric 'm' (did you
 * mean ...); it reported: ..."; -1 otherwise. */
SIEVE_INTERNAL_API gint sieve_engine_check_objectives(SieveResult *result, const char *const *metrics, guint n,
                                                      char **missing);
/* Keeps v in values (SieveIntermediate by step; a step reported again is
 * ignored, its first value kept, as Optuna's trial.report ignores it): how
 * an evaluation's reported values are kept, by the engine and by Lua
 * studies.  Returns the index v now has, or values->len when it was
 * ignored (nothing changed). */
SIEVE_INTERNAL_API guint sieve_engine_keep_intermediate(GArray *values, const SieveIntermediate *v);
/* Pruners outside the engine's loop (Lua studies), by the engine's rules:
 * why a pruner cannot judge a study of objectives[0..n) evaluated by
 * evaluator (nullable: checks the objectives only): more than one
 * objective, or an evaluator that reports no intermediate values or
 * another metric's; NULL when it can (transfer full);
 * a pruner's reference curves from the trials in store that finished OK
 * (a resumed study's); and a result marked as the pruned trial whose last
 * intermediate value is last (status, the objective metric and "step" set
 * to its, the reason "pruned at step S (metric V)"). */
SIEVE_INTERNAL_API char *sieve_engine_pruner_refusal(const SieveEvaluator *evaluator, const char *const *objectives,
                                                     guint n);
SIEVE_INTERNAL_API gboolean sieve_engine_restore_pruner(SievePruner *pruner, SieveStore *store, GError **error);
/* The optimizer's saved state loaded from store; none saved is an empty
 * study's, and with trials stored a corrupt store (an error). */
SIEVE_INTERNAL_API gboolean sieve_engine_restore_optimizer(SieveOptimizer *optimizer, SieveStore *store,
                                                           GError **error);
SIEVE_INTERNAL_API void sieve_engine_mark_pruned(SieveResult *result, const char *metric,
                                                 const SieveIntermediate *last);
/* The warnings, said once a run: a trial that reported a step again (its
 * first value kept), and one that finished OK without reporting a value to
 * the pruner.  (transfer full) */
SIEVE_INTERNAL_API char *sieve_engine_repeated_step_text(gint64 trial, gint64 step);
SIEVE_INTERNAL_API char *sieve_engine_silent_trial_text(gint64 trial);
/* NULL when an evaluator that declares the metrics it reports (declared,
 * NULL: it does not say) reports metric; else the error message, with a
 * did-you-mean (transfer full). */
SIEVE_INTERNAL_API char *sieve_engine_objective_undeclared(const char *evaluator, const char *const *declared,
                                                           const char *metric);

/* The primary objective's value of a result, as reported (NAN when not OK or missing). */
SIEVE_INTERNAL_API double sieve_engine_objective(const SieveExperiment *experiment, const SieveResult *result);
/* All the experiment's objectives of a result, larger is better (minimized
 * metrics negated), NAN where missing: what optimizers are told.
 * out: n_objectives values. */
SIEVE_INTERNAL_API void sieve_engine_oriented_objectives(const SieveExperiment *experiment, const SieveResult *result,
                                                         double *out);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveEngine, sieve_engine_free)

/* ==== dedupe ==== */
/* sieve: what the dedupe stage needs besides the store: a proposal's hash
 * and the cache key of the evaluator settings its result depends on.
 *
 *   char hash[SIEVE_DEDUPE_HASH_LEN];
 *   if (!sieve_dedupe_hash(space, genotype, SIEVE_DEDUPE_FUNCTIONAL, hash, &error)) ...
 *   g_autofree char *text = sieve_dedupe_key_text(experiment, fidelity);
 *   g_autofree char *key = sieve_dedupe_key_digest(text);
 *   gint64 original = sieve_store_cache_lookup(store, "functional", hash, key, &error);
 *
 * The key text names everything an evaluation's result depends on besides
 * the candidate itself: the evaluator plugin and every one of its options
 * (defaults included, paths resolved, so that two configs written
 * differently but meaning the same share entries), the space plugin and its
 * options (a network hash taken at the probe scale does not see the channel
 * count the evaluator trains), and the fidelity.  Different settings never
 * share an entry; settings that cannot change a result (a thread count) still
 * separate entries: safe, if sometimes wasteful.  What a path points to is
 * not part of it: a table file rewritten in place keeps its entries.  A
 * script is, once it differs from what the study was first stored with
 * (--accept-changed-scripts): the engine appends a "scripts:" line
 * (sieve__study_key_changed_scripts), so a changed evaluator runs again.
 */

/* 32 hex digits and the terminating NUL, as SIEVE_HASH_TEXT_LEN. */
#define SIEVE_DEDUPE_HASH_LEN 33

/* The hash of the kind asked for, in hex (32 digits).  genotype: the first
 * 128 bits of SHA-256 over the canonical genotype text; structural and
 * functional: sieve_space_hash (sieve/hash.h), and when the space has a
 * recipe (decisions that do not shape the network, a composite space's)
 * the first 128 bits of SHA-256 over that hash and the recipe's values:
 * the same network trained two ways is two trials. */
SIEVE_INTERNAL_API gboolean sieve_dedupe_hash(const SieveSpace *space, const SieveGenotype *genotype,
                                              SieveDedupeHash kind, char *out, GError **error);

/* The canonical text of the cache key for a result at fidelity (NAN: the
 * evaluator's default), one "what: value" line each. (transfer full) */
SIEVE_INTERNAL_API char *sieve_dedupe_key_text(const SieveExperiment *experiment, double fidelity);
/* SHA-256 of the text, in hex: the cache table's key column. (transfer full) */
SIEVE_INTERNAL_API char *sieve_dedupe_key_digest(const char *text);

/* Every option of a validated set, defaults included, as one JSON object in
 * the table's order (a canonical form). (transfer full) */
SIEVE_INTERNAL_API char *sieve_options_to_canonical(const SieveOptions *options);

/* ==== screen ==== */
/* sieve: the screen stage's scoring of one round of proposals with
 * zero-cost proxies (the pipeline section of core/core-private.h, sieve/proxy.h).
 *
 *   SieveScreenRound *round = sieve_screen_round_new(stage, space, genotypes, n);
 *   guint keep = sieve_screen_keep_count(stage, n, room);
 *   for (guint r = 0; r < n; r++) {
 *     guint i = round->order[r];            // best first
 *     ... r < keep ? evaluate(i) : screen_out(i, round->scores[i]) ...
 *   }
 *   sieve_screen_round_free(round);
 *
 * Each network is built at the space's own scale (what the evaluator
 * trains) and scored by every proxy of the stage on one seeded batch (random
 * normal, or examples of the stage's dataset): the
 * same weights seed and batch for every candidate of every round, so that
 * scores compare across candidates and a resumed study scores a round
 * exactly as before.  Several proxies are ranked together: each candidate's
 * weighted mean rank among the round (sieve_proxy_rank_aggregate; 0 = the
 * worst, larger is better).  A candidate whose network cannot be built or
 * scored gets NaN scores, which rank lowest, and its reason.
 */

typedef struct {
  guint n;
  SieveResult **scores; /* n: each proxy's score by its name, and "screen_score" (owned) */
  char **errors;        /* n: why candidate i has no scores, NULL when it has (owned) */
  double *aggregate;    /* n: the rank aggregate, the value the round is sorted by */
  guint *order;         /* n: candidate indexes, best first (ties: the earlier first) */
} SieveScreenRound;

/* The stage's batch of real examples (its dataset is set), drawn as
 * sieve_proxy_batch_draw draws and checked against a network of the
 * space. (transfer full) */
SIEVE_INTERNAL_API SieveProxyBatch *sieve_screen_batch_load(const SieveScreenStage *stage, const SieveSpace *space,
                                                            GError **error);

/* Name of the aggregate metric every scored candidate carries. */
#define SIEVE_SCREEN_SCORE "screen_score"

/* Scores genotypes[0..n) of space with the stage's proxies, on batch
 * (nullable: a seeded N(0,1) batch).  Errors of one candidate are kept in
 * the round, not returned. (transfer full) */
SIEVE_INTERNAL_API SieveScreenRound *sieve_screen_round_new(const SieveScreenStage *stage, const SieveSpace *space,
                                                            const SieveProxyBatch *batch,
                                                            const SieveGenotype *const *genotypes, guint n);
SIEVE_INTERNAL_API void sieve_screen_round_free(SieveScreenRound *round);

/* How many of a round of n pass: keep_top, or keep_fraction of n rounded
 * up, at least 1, and at most room (what the evaluation budget allows). */
SIEVE_INTERNAL_API guint sieve_screen_keep_count(const SieveScreenStage *stage, guint n, gint64 room);

/* ==== the latency table (latency-table.c) ==== */
/* sieve: predicted latency as the sum of per-operation entries measured
 * once on this machine (ProxylessNAS, FBNet), cached in a store, with an
 * optional linear calibration on whole networks of a space (nn-Meter).
 *
 *   g_autoptr(SieveLatencyTable) t = sieve_latency_table_new(store, &options);
 *   double ms;
 *   if (!sieve_latency_table_predict(t, graph, &ms, &error)) ...
 *
 * An entry is keyed by sieve_latency_node_key under sieve_latency_machine;
 * those missing from the store are measured (sieve_latency_measure_nodes,
 * a network's together) and written to it at once (its own transaction:
 * call outside the engine's). */
typedef struct _SieveLatencyTable SieveLatencyTable;

/* store: nullable (entries kept in this object only); borrowed. (transfer full) */
SIEVE_INTERNAL_API SieveLatencyTable *sieve_latency_table_new(SieveStore *store, const SieveLatencyOptions *options);
SIEVE_INTERNAL_API void sieve_latency_table_free(SieveLatencyTable *table);
/* The entry of graph's node (read, or measured and stored). */
SIEVE_INTERNAL_API gboolean sieve_latency_table_entry(SieveLatencyTable *table, const SieveGraph *graph, guint node,
                                                      double *ms, GError **error);
/* Every entry of graphs[0..n) that neither the table nor its store holds,
 * measured together (sieve_latency_measure_nodes) and stored: a table
 * built this way is not skewed by the machine's speed drifting while it is
 * measured. */
SIEVE_INTERNAL_API gboolean sieve_latency_table_fill(SieveLatencyTable *table, const SieveGraph *const *graphs,
                                                     guint n, GError **error);
/* The sum of the entries of graph's live nodes. */
SIEVE_INTERNAL_API gboolean sieve_latency_table_sum(SieveLatencyTable *table, const SieveGraph *graph, double *ms,
                                                    GError **error);
/* graph's predicted latency: a + b * its sum, with the table's calibration
 * (a = 0, b = 1, the plain sum, until one is set or fitted). */
SIEVE_INTERNAL_API gboolean sieve_latency_table_predict(SieveLatencyTable *table, const SieveGraph *graph,
                                                        double *ms, GError **error);
/* Calibrates the table for space (latency-table.c says why): reads the
 * fit from the store, or measures `networks` networks drawn from space
 * whole (and the entries they miss), fits latency = a + b * sum by least
 * squares and stores it.  networks 0, or a table already calibrated: nothing. */
SIEVE_INTERNAL_API gboolean sieve_latency_table_calibrate(SieveLatencyTable *table, const SieveSpace *space,
                                                          guint networks, GError **error);
/* Sets the calibration (b > 0) fitted on `networks` networks. */
SIEVE_INTERNAL_API void sieve_latency_table_set_fit(SieveLatencyTable *table, double a, double b, guint networks);
/* The calibration (each out nullable): TRUE when there is one; rms_ms its
 * residual, measured whether it was fitted now rather than read. */
SIEVE_INTERNAL_API gboolean sieve_latency_table_get_fit(const SieveLatencyTable *table, double *a, double *b,
                                                        guint *networks, double *rms_ms, gboolean *measured);
/* The least-squares line y = a + b x through n points; where it is flat,
 * undefined or falling (b <= 0), the ratio of the means through the origin
 * (a = 0), so that a prediction keeps the order of the sums. */
SIEVE_INTERNAL_API void sieve_latency_fit(const double *x, const double *y, guint n, double *a, double *b);
/* (transfer none) the machine text its entries are stored under. */
SIEVE_INTERNAL_API const char *sieve_latency_table_machine(const SieveLatencyTable *table);
/* Entries this object measured (not found in its store). */
SIEVE_INTERNAL_API guint sieve_latency_table_n_measured(const SieveLatencyTable *table);
/* (transfer full) graph's entry keys, node by node (NULL: dead or free;
 * sieve_latency_node_keys), as this table stores them: with " warm"
 * appended when graph's parameters fit the core's private caches, whose
 * entries are timed without flushing them (latency-table.c says why). */
SIEVE_INTERNAL_API GPtrArray *sieve_latency_table_keys(const SieveLatencyTable *table, const SieveGraph *graph);
/* (transfer none) every entry this object holds, read or measured (its
 * calibration networks' too): key -> const double *ms. */
SIEVE_INTERNAL_API GHashTable *sieve_latency_table_held(const SieveLatencyTable *table);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveLatencyTable, sieve_latency_table_free)

/* ==== constraints (constrain.c) ==== */
/* sieve: the metrics known before evaluation and the experiment's
 * constraints on them: a proposal that breaks one is stored as rejected
 * and costs no evaluation.
 *
 *   SieveConstrainer *c = sieve_constrainer_new(experiment, evaluator_metrics);  // NULL: nothing to do
 *   sieve_constrainer_attach(c, store);      // where the latency table lives
 *   gboolean feasible;
 *   g_autoptr(SieveResult) pre = sieve_constrainer_check(c, space, genotype, &feasible, &error);
 */
typedef struct _SieveConstrainer SieveConstrainer;

/* NULL when the experiment needs no metric before evaluation (no
 * constraint, no latency stage, no such objective the evaluator misses).
 * evaluator_metrics: what the evaluator declares (nullable). (transfer full) */
SIEVE_INTERNAL_API SieveConstrainer *sieve_constrainer_new(const SieveExperiment *experiment,
                                                           const char *const *evaluator_metrics);
SIEVE_INTERNAL_API void sieve_constrainer_free(SieveConstrainer *constrainer);
/* The store the latency table reads and writes (nullable). */
SIEVE_INTERNAL_API void sieve_constrainer_attach(SieveConstrainer *constrainer, SieveStore *store);
/* Whether metric is one the constrainer can compute before evaluation. */
SIEVE_INTERNAL_API gboolean sieve_constrainer_computes(const SieveExperiment *experiment, const char *metric);
/* Whether the value of metric that the constraints checked is the one a
 * trial stores: a metric a constraint names, or an objective the
 * constrainer computes (known before evaluation, not in evaluator_metrics,
 * nullable), and with a latency metric the other metrics of the same
 * measurement. */
SIEVE_INTERNAL_API gboolean sieve_constrainer_checked(const SieveExperiment *experiment,
                                                      const char *const *evaluator_metrics, const char *metric);
/* The metrics of genotype's network, status OK when *feasible, else
 * REJECTED with the broken constraints as its reason and
 * SIEVE_METRIC_CONSTRAINT_VIOLATION.  NULL + error when the network cannot
 * be built or measured. (transfer full) */
SIEVE_INTERNAL_API SieveResult *sieve_constrainer_check(SieveConstrainer *constrainer, const SieveSpace *space,
                                                        const SieveGenotype *genotype, gboolean *feasible,
                                                        GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveConstrainer, sieve_constrainer_free)

/* ==== opening a study ==== */
/* sieve: a study's identity in its store (shared by `sieve run` and the
 * Lua host's sieve.run).
 *
 *   if (!sieve_study_open(store, experiment, resume, &error)) ...
 */

/* A component written in Lua: the builtin lua plugin's, or one a script
 * registered (engine.c). */
SIEVE_INTERNAL_API gboolean sieve__component_in_lua(const SieveComponent *component);

/* The study key (study-key.c): what defines the study, one "path<TAB>value"
 * line per setting with defaults written out, and the sha256 of each file
 * that defines it; budget, workers, report and store left out.
 * (transfer full) */
char *sieve__study_key(const SieveExperiment *experiment);
/* The key's lines of an option table under key ("key.name<TAB>value\n"
 * each), those that differ from the table's defaults only, so that a
 * default written or omitted, or an option a component gains later, is the
 * same study: what Lua's sieve.study keys its optimizer and pruner with.
 * (transfer full) */
SIEVE_INTERNAL_API char *sieve__study_key_options(const char *key, const SieveOptions *options, const char *base_dir);
/* path -> value (unescaped) of a key's lines. (transfer full) */
SIEVE_INTERNAL_API GHashTable *sieve__study_key_lines(const char *key);
/* The key as written until 2026-11-26: the pruner's section as written,
 * not through its option table.  (transfer full) */
char *sieve__study_key_as_written(const SieveExperiment *experiment);
/* The first setting where two keys differ, "PATH: stored 'A', now 'B'" or
 * the changed file named; NULL when they agree.  skip_scripts: scripts
 * (see below) are not compared. (transfer full) */
char *sieve__study_key_difference(const char *stored, const char *current, gboolean skip_scripts);
/* When the only differences between two keys are scripts that changed
 * (lua.load's files, a Lua optimizer's or evaluator's `script`; not added,
 * not removed, not a space's) and optimizer or evaluator settings written
 * the same in stored_config (the stored config's text) as in exp (a
 * script's default changed): one "PATH<TAB>OLD_SHA256<TAB>NEW_SHA256<TAB>FILE"
 * line per script (transfer full); NULL otherwise, or when they agree. */
GPtrArray *sieve__study_key_script_changes(const char *stored, const char *current, const char *stored_config,
                                           const SieveExperiment *exp);
/* The cache's view of a study's scripts: "PATH SHA256" per script of key
 * (transfer full) when one of them is not what the study was first stored
 * with (history: the meta `script_changes`), NULL when all are. */
char *sieve__study_key_changed_scripts(const char *key, const char *history);

/* Creates the study's metadata, or checks that the experiment is the one
 * already stored (without resume, a store holding a study is refused).
 * Nothing stored is changed when the check fails. */
SIEVE_INTERNAL_API gboolean sieve_study_open(SieveStore *store, const SieveExperiment *experiment, gboolean resume,
                                             GError **error);
/* sieve_study_open, and with accept_changed_scripts (on resume) a study
 * whose only differences are changed scripts goes on: the new key is
 * stored and each change appended to the meta `script_changes` (one
 * "TIME<TAB>PATH<TAB>OLD_SHA256<TAB>NEW_SHA256<TAB>FILE" line each), and
 * *accepted (nullable, transfer full) says which, or is NULL. */
SIEVE_INTERNAL_API gboolean sieve_study_open_full(SieveStore *store, const SieveExperiment *experiment, gboolean resume,
                                                  gboolean accept_changed_scripts, char **accepted, GError **error);

G_END_DECLS
