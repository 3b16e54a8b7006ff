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
#pragma once

#include <sieve/sieve.h>

#include "internal.h"

#include "config.h"
#include "progress.h"

G_BEGIN_DECLS

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

/* "dedupe (functional hash) -> screen (naswot, best 4 of 16) -> tabular",
 * or NULL when the experiment has no pipeline stages. (transfer full) */
SIEVE_INTERNAL_API char *sieve_engine_describe_pipeline(const SieveEngine *engine);

/* Ask the run in progress to stop after the trials in flight (signal safe). */
SIEVE_INTERNAL_API void sieve_engine_request_stop(void);

/* The primary objective's value of a result, as reported (NAN when not OK or missing). */
SIEVE_INTERNAL_API double sieve_engine_objective(const SieveExperiment *experiment, const SieveResult *result);
/* All the experiment's objectives of a result, larger is better (minimized
 * metrics negated), NAN where missing: what optimizers are told.
 * out: n_objectives values. */
SIEVE_INTERNAL_API void sieve_engine_oriented_objectives(const SieveExperiment *experiment, const SieveResult *result,
                                                         double *out);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveEngine, sieve_engine_free)

G_END_DECLS
