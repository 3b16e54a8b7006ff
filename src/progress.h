/* sieve: what a running study prints.
 *
 * On a terminal, one status line redrawn in place (trials done / budget,
 * best so far, rate, ETA); otherwise one plain line per finished trial, so
 * that logs and CI output stay readable.  At the end, a summary table of the
 * best trials read back from the store.
 */
#pragma once

#include <stdio.h>

#include <sieve/sieve.h>

#include "internal.h"

G_BEGIN_DECLS

typedef struct _SieveProgress SieveProgress;

/* budget: evaluations to reach (0: none); already: finished before this run. (transfer full) */
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
/* What earlier runs of the study did (resume): evaluations, cache hits, screened. */
SIEVE_INTERNAL_API void sieve_progress_set_counts(SieveProgress *progress, gint64 evaluations, gint64 cached,
                                                  gint64 screened);
/* What a running trial is doing ("epoch 1.5/2 step 700/936 loss 0.41"):
 * on a terminal, shown at the end of the status line; otherwise printed at
 * most every few seconds.  Safe to call from worker threads. */
SIEVE_INTERNAL_API void sieve_progress_activity(SieveProgress *progress, gint64 trial, const char *text);
/* The best so far, as known before this run (resume). */
SIEVE_INTERNAL_API void sieve_progress_set_best(SieveProgress *progress, gint64 number, double objective);
/* Print a message on its own line without garbling the status line. */
SIEVE_INTERNAL_API void sieve_progress_message(SieveProgress *progress, const char *format, ...) G_GNUC_PRINTF(2, 3);
/* Ends the status line. */
SIEVE_INTERNAL_API void sieve_progress_end(SieveProgress *progress);

/* Summary table of the top trials of a store: rank, trial, objective, the
 * other metrics (up to four), genotype; before it the counts (evaluated,
 * answered from the cache, screened out, pending).  top = 0 prints counts only. */
SIEVE_INTERNAL_API gboolean sieve_print_summary(FILE *out, SieveStore *store, const char *objective, gboolean maximize, guint top,
                             GError **error);

/* The non-dominated trials over n objectives (metrics[k], maximize[k]),
 * sorted by the first; for studies with two or more objectives. */
SIEVE_INTERNAL_API gboolean sieve_print_pareto(FILE *out, SieveStore *store, const char *const *metrics,
                                               const gboolean *maximize, guint n, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveProgress, sieve_progress_free)

G_END_DECLS
