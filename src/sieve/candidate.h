/* sieve: a candidate is a proposal on its way through the pipeline: the
 * genotype, the fidelity it should be evaluated at, and, once the engine has
 * stored it, its trial number and canonical text.
 */
#pragma once

#include <glib.h>
#include <sieve/abi.h>
#include <sieve/node.h>
#include <sieve/space.h>

G_BEGIN_DECLS

typedef struct _SieveCandidate SieveCandidate;

/* A fidelity an evaluator offers: a number that buys a cheaper, rougher
 * evaluation (training epochs, a subset's size ...).  An evaluation at max is
 * a full one; a candidate whose fidelity is NAN gets the evaluator's own
 * choice (its options).  Multi-fidelity optimizers (successive halving,
 * Hyperband, BOHB) propose candidates with a fidelity in [min, max]. */
typedef struct {
  const char *name; /* what the number means: "epochs" */
  double min, max;  /* 0 < min <= max */
  gboolean integer; /* only whole values make sense */
  gpointer reserved[2];
} SieveFidelity;
SIEVE_ABI_SIZE(SieveFidelity, 48);

/* Reads a fidelity written in a config, {name: epochs, min: 1, max: 81,
 * integer: true}, validating it as options are (located errors).  On
 * success out->name is a new string the caller frees with g_free(). */
SIEVE_API gboolean sieve_fidelity_read(const SieveNode *node, SieveFidelity *out, GError **error);

/* fidelity: NAN leaves it to the evaluator (its full fidelity).
 * Takes ownership of genotype. (transfer full) */
SIEVE_API SieveCandidate *sieve_candidate_new(SieveGenotype *genotype, double fidelity);
SIEVE_API void sieve_candidate_free(SieveCandidate *candidate);

/* (transfer none) */
SIEVE_API const SieveGenotype *sieve_candidate_get_genotype(const SieveCandidate *candidate);
SIEVE_API const SieveSpace *sieve_candidate_get_space(const SieveCandidate *candidate);
SIEVE_API double sieve_candidate_get_fidelity(const SieveCandidate *candidate);
/* Trial number in the study (0-based), -1 before the engine stored it. */
SIEVE_API gint64 sieve_candidate_get_trial(const SieveCandidate *candidate);
SIEVE_API void sieve_candidate_set_trial(SieveCandidate *candidate, gint64 trial);
/* Canonical genotype text. (transfer none) */
SIEVE_API const char *sieve_candidate_get_text(const SieveCandidate *candidate);

/* How many evaluations the engine runs at once, this one included (the
 * experiment's `workers` when its evaluator is concurrent, else 1): an
 * evaluator that uses several threads gives each evaluation its share
 * (the train evaluator: threads / workers, see its threads_per_worker).
 * The same for every trial of a run, so a trial's thread count, and with it
 * its result, does not depend on what runs beside it (ABI 2.2). */
SIEVE_API guint sieve_candidate_get_workers(const SieveCandidate *candidate);
SIEVE_API void sieve_candidate_set_workers(SieveCandidate *candidate, guint workers);

/* Progress inside one evaluation (epochs and batches of a training):
 * evaluators call sieve_candidate_report(); whoever runs the evaluation
 * (the engine's progress display, `sieve train`) installs the function.
 * text: a short status such as "epoch 1.4/2 step 300/936 loss 0.412". */
typedef void (*SieveCandidateReportFunc)(gpointer user_data, const SieveCandidate *candidate, const char *text,
                                         double fraction_done);
SIEVE_API void sieve_candidate_set_report_func(SieveCandidate *candidate, SieveCandidateReportFunc func,
                                               gpointer user_data);
SIEVE_API void sieve_candidate_report(const SieveCandidate *candidate, const char *text, double fraction_done);

/* Intermediate values (ABI 2.2): an evaluator that trains in steps reports
 * its objective after each step it measures (an epoch, N batches), as
 * Optuna's trial.report() does:
 *
 *   for (epoch = 1; epoch <= epochs; epoch++) {
 *     ... train one epoch, measure val_acc ...
 *     if (!sieve_candidate_report_intermediate(candidate, epoch, epoch, val_acc))
 *       return the result so far;   // the pruner stopped it: stop training
 *   }
 *
 * step: a whole number >= 0 that grows within one evaluation (the epoch,
 * the batch count): a step reported again is ignored (its first value
 * kept), and under `sieve run` one below 0 or below a step reported before
 * returns FALSE and fails the trial, whatever the evaluator returns, with
 * the reason "evaluator 'NAME' reported step 3 after step 5; ..."; fidelity: what the evaluation has reached in the
 * evaluator's fidelity unit (NAN when it has none); value: the objective's
 * metric at that step (or the one its class names in
 * SieveEvaluatorClass.intermediate_metric: a pruner then needs that
 * objective).  Returns FALSE when the evaluation should stop now
 * (the experiment's pruner judged it, or the study is stopping, or the step
 * went back): the evaluator returns whatever result it has and the engine
 * stores the trial as pruned with its last value (failed, for a step that
 * went back).  Without a handler (a bare evaluation,
 * `sieve train`) it returns TRUE.  Thread-safe as the handler is. */
typedef gboolean (*SieveCandidateIntermediateFunc)(gpointer user_data, const SieveCandidate *candidate,
                                                   gint64 step, double fidelity, double value);
SIEVE_API void sieve_candidate_set_intermediate_func(SieveCandidate *candidate, SieveCandidateIntermediateFunc func,
                                                     gpointer user_data);
SIEVE_API gboolean sieve_candidate_report_intermediate(const SieveCandidate *candidate, gint64 step, double fidelity,
                                                       double value);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveCandidate, sieve_candidate_free)

G_END_DECLS
