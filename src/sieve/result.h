/* sieve: the outcome of one evaluation.
 *
 *   SieveResult *r = sieve_result_new();
 *   sieve_result_set_metric(r, "val_acc", 91.2);
 *   sieve_result_set_cost(r, 3.5);            // seconds the evaluation took
 *   ...
 *   sieve_result_set_failed(r, "loss became NaN at epoch %d", 3);
 *
 * Metrics are named doubles in insertion order.  A failed trial is a result
 * with status FAILED and a reason, never a GError: the study goes on.
 */
#pragma once

#include <glib.h>
#include <sieve/abi.h>

G_BEGIN_DECLS

/* An evaluator returns OK, FAILED or (with intermediate values) PRUNED:
 * the others are the engine's to set (sieve/evaluator.h). */
typedef enum {
  SIEVE_STATUS_PENDING,  /* asked, not finished */
  SIEVE_STATUS_OK,
  SIEVE_STATUS_FAILED,   /* the evaluation failed; reason says why */
  SIEVE_STATUS_SCREENED, /* stopped by a cheap stage (proxies); metrics hold its scores */
  SIEVE_STATUS_CACHED,   /* answered from the hash cache */
  SIEVE_STATUS_PRUNED,   /* stopped early by the pruner (ABI 2.2); metrics hold its last intermediate value */
  SIEVE_STATUS_REJECTED, /* broke a constraint before evaluation (ABI 2.2); metrics hold the values checked,
                          * "constraint_violation" how far past its bounds, reason which constraint */
} SieveStatus;

/* The metric of a rejected result that says how far it is from feasible
 * (the sum of its relative excesses over the bounds it broke; ABI 2.2). */
#define SIEVE_METRIC_CONSTRAINT_VIOLATION "constraint_violation"

/* "pending", "ok", "failed", "screened", "cached", "pruned", "rejected" (transfer none) */
SIEVE_API const char *sieve_status_to_string(SieveStatus status);
SIEVE_API gboolean sieve_status_from_string(const char *text, SieveStatus *out);

typedef struct _SieveResult SieveResult;

SIEVE_API SieveResult *sieve_result_new(void); /* status OK, no metrics (transfer full) */
SIEVE_API SieveResult *sieve_result_copy(const SieveResult *result);
SIEVE_API void sieve_result_free(SieveResult *result);

SIEVE_API SieveStatus sieve_result_get_status(const SieveResult *result);
SIEVE_API void sieve_result_set_status(SieveResult *result, SieveStatus status);
/* (transfer none) (nullable) */
SIEVE_API const char *sieve_result_get_reason(const SieveResult *result);
SIEVE_API void sieve_result_set_reason(SieveResult *result, const char *reason);
/* Status FAILED with a formatted reason. */
SIEVE_API void sieve_result_set_failed(SieveResult *result, const char *format, ...) G_GNUC_PRINTF(2, 3);

/* Sets or replaces a metric. */
SIEVE_API void sieve_result_set_metric(SieveResult *result, const char *name, double value);
SIEVE_API gboolean sieve_result_get_metric(const SieveResult *result, const char *name, double *out);
SIEVE_API guint sieve_result_n_metrics(const SieveResult *result);
SIEVE_API const char *sieve_result_metric_name(const SieveResult *result, guint i);
SIEVE_API double sieve_result_metric_value(const SieveResult *result, guint i);

/* Seconds of work the evaluation represents (wall time unless the evaluator
 * knows better, e.g. a table's recorded training time).  Optional: left at
 * 0, sieve_evaluator_evaluate() sets the wall time; a cost that is negative,
 * NAN or infinite fails the trial ("reported cost -5 s; a cost is a finite
 * number of seconds >= 0"). */
SIEVE_API double sieve_result_get_cost(const SieveResult *result);
SIEVE_API void sieve_result_set_cost(SieveResult *result, double seconds);

/* A trained network to keep with the trial (the `train` evaluator's
 * keep_weights): weights is its weights file's bytes (sieve/model.h), a
 * reference is taken (NULL drops them); keep_top: the study keeps the
 * weights of only its keep_top best trials by the objective (0: every
 * trial's).  The engine stores them with the result; a copy shares them. */
SIEVE_API void sieve_result_set_weights(SieveResult *result, GBytes *weights, guint keep_top);
/* (transfer none) (nullable) */
SIEVE_API GBytes *sieve_result_get_weights(const SieveResult *result, guint *keep_top);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveResult, sieve_result_free)

G_END_DECLS
