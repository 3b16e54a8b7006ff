/* sieve: the search loop: ask -> store -> evaluate -> store + tell.
 *
 *   g_autoptr(SieveEngine) engine = sieve_engine_new(experiment, store, &error);
 *   sieve_engine_run(engine, progress, &error);
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

/* Builds space, optimizer and evaluator, and restores the optimizer's state
 * from the store when it has one.  experiment and store must outlive it.
 * (transfer full) */
SIEVE_INTERNAL_API SieveEngine *sieve_engine_new(const SieveExperiment *experiment, SieveStore *store, GError **error);
SIEVE_INTERNAL_API void sieve_engine_free(SieveEngine *engine);

/* Runs until the budget is spent, the optimizer has nothing left, an
 * interrupt (SIGINT/SIGTERM: finish the trials in flight, then stop) or a
 * fatal error.  progress may be NULL. */
SIEVE_INTERNAL_API gboolean sieve_engine_run(SieveEngine *engine, SieveProgress *progress, GError **error);

/* Ask the run in progress to stop after the trials in flight (signal safe). */
SIEVE_INTERNAL_API void sieve_engine_request_stop(void);

/* Objective value of a result for the experiment (NAN when not OK or missing). */
SIEVE_INTERNAL_API double sieve_engine_objective(const SieveExperiment *experiment, const SieveResult *result);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveEngine, sieve_engine_free)

G_END_DECLS
