/* sieve: what an evaluator plugin implements.
 *
 * evaluate() turns a candidate into a SieveResult.  A trial that fails (the
 * program crashed, the genotype is not in the table, the loss diverged) is a
 * result with status FAILED and a reason; returning NULL with a GError stops
 * the whole study (the error names the evaluator; the trial stays pending,
 * for --resume) and is for an evaluator that cannot work at all.  NULL
 * without a GError is a plugin's bug, not a reason to stop: that trial
 * fails with the reason "evaluator 'NAME' returned no result and no error".
 *
 * A result's status is OK or FAILED, or PRUNED from an evaluator with
 * SIEVE_EVALUATOR_INTERMEDIATE (it stopped on its own, as an Optuna
 * objective raises TrialPruned); the others are the pipeline's (pending,
 * screened, cached, rejected), and sieve_evaluator_evaluate() turns a
 * result that carries one, or a number outside SieveStatus, into a failed
 * trial whose reason names the evaluator and the status.
 *
 * With SIEVE_EVALUATOR_CONCURRENT the engine may call evaluate() from several
 * threads at once on the same instance (workers > 1).
 */
#pragma once

#include <glib.h>
#include <sieve/abi.h>
#include <sieve/candidate.h>
#include <sieve/component.h>
#include <sieve/options.h>
#include <sieve/result.h>
#include <sieve/space.h>

G_BEGIN_DECLS

typedef enum {
  SIEVE_EVALUATOR_CONCURRENT = 1 << 0, /* evaluate() is thread-safe */
  /* evaluate() may report intermediate values (sieve_candidate_report_intermediate)
   * and stops when told to: what a pruner needs (ABI 2.2). */
  SIEVE_EVALUATOR_INTERMEDIATE = 1 << 1,
  /* evaluate() builds the candidate's network (sieve_space_build) on the
   * thread that calls it: with a space that runs on one thread only (a Lua
   * space) the engine runs one evaluation at a time (ABI 2.2). */
  SIEVE_EVALUATOR_BUILDS = 1 << 2,
} SieveEvaluatorFlags;

typedef struct {
  /* (transfer full) instance; NULL + error when the options do not suit
   * the space.  NULL without an error is an evaluator that keeps no state:
   * its methods get NULL. */
  gpointer (*create)(const SieveSpace *space, const SieveOptions *options, GError **error);
  void (*destroy)(gpointer instance);
  /* (transfer full) */
  SieveResult *(*evaluate)(gpointer instance, const SieveCandidate *candidate, GError **error);
  guint flags; /* SieveEvaluatorFlags */
  /* The fidelity it offers, NULL for none; may be NULL itself.  (transfer none):
   * valid as long as the instance.  sieve_evaluator_new() refuses an
   * instance whose fidelity has no name or breaks 0 < min <= max (both
   * finite), naming the evaluator. */
  const SieveFidelity *(*fidelity)(gpointer instance);
  /* The names of the metrics evaluate() reports when it succeeds,
   * NULL-terminated; NULL when it cannot tell before it runs (a program, a
   * script).  The engine checks the objectives against it before the first
   * trial, so a misspelt metric costs no evaluation.  (transfer none): valid
   * as long as the instance.  May be NULL itself (ABI 2.1). */
  const char *const *(*metrics)(gpointer instance);
  /* The evaluations the instance runs at once when the experiment does not
   * write `workers` (with SIEVE_EVALUATOR_CONCURRENT only): the train
   * evaluator's per_gpu, the trainings that share one GPU.  0, or the
   * field NULL itself: 1 (ABI 2.2). */
  guint (*workers)(gpointer instance);
  /* The metric its intermediate values are values of (with
   * SIEVE_EVALUATOR_INTERMEDIATE): the train evaluator's "val_acc"; NULL
   * when it reports none with these options (the train evaluator without a
   * validation split).  The field NULL: they are the objective's, whatever
   * it is (a program's, a script's, as sieve_candidate_report_intermediate
   * says).  The engine refuses a pruner whose objective is another metric,
   * which it would judge and store under the objective's name.  (transfer
   * none): valid as long as the instance (ABI 2.2). */
  const char *(*intermediate_metric)(gpointer instance);
  gpointer reserved[7];
} SieveEvaluatorClass;
SIEVE_ABI_SIZE(SieveEvaluatorClass, 120);

typedef struct _SieveEvaluator SieveEvaluator;
/* The space must outlive it. (transfer full) */
SIEVE_API SieveEvaluator *sieve_evaluator_new(const SieveComponent *component, const SieveSpace *space,
                                              const SieveOptions *options, GError **error);
SIEVE_API void sieve_evaluator_free(SieveEvaluator *evaluator);
/* Runs evaluate(); fills in the cost (wall seconds) when the plugin left it
 * at zero. (transfer full) */
SIEVE_API SieveResult *sieve_evaluator_evaluate(SieveEvaluator *evaluator, const SieveCandidate *candidate,
                                                GError **error);
SIEVE_API gboolean sieve_evaluator_is_concurrent(const SieveEvaluator *evaluator);
/* Whether evaluate() builds networks on its calling thread (SIEVE_EVALUATOR_BUILDS). */
SIEVE_API gboolean sieve_evaluator_builds_networks(const SieveEvaluator *evaluator);
/* The evaluations it asks to run at once when the experiment leaves
 * `workers` unset (SieveEvaluatorClass.workers): >= 1, and 1 for an
 * evaluator that is not concurrent. */
SIEVE_API guint sieve_evaluator_get_workers(const SieveEvaluator *evaluator);
/* Whether it reports intermediate values (SIEVE_EVALUATOR_INTERMEDIATE). */
SIEVE_API gboolean sieve_evaluator_reports_intermediate(const SieveEvaluator *evaluator);
/* The metric its intermediate values are values of, with these options:
 * SieveEvaluatorClass.intermediate_metric, or objective when the class
 * leaves it to the objective; NULL when it reports none.  (transfer none) */
SIEVE_API const char *sieve_evaluator_get_intermediate_metric(const SieveEvaluator *evaluator,
                                                              const char *objective);
/* (transfer none) (nullable): the fidelity it offers */
SIEVE_API const SieveFidelity *sieve_evaluator_get_fidelity(const SieveEvaluator *evaluator);
/* (transfer none) (nullable): the metrics it reports, NULL-terminated; NULL
 * when the evaluator cannot tell before it runs. */
SIEVE_API const char *const *sieve_evaluator_get_metrics(const SieveEvaluator *evaluator);
SIEVE_API const SieveComponent *sieve_evaluator_get_component(const SieveEvaluator *evaluator);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveEvaluator, sieve_evaluator_free)

G_END_DECLS
