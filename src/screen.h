/* sieve: the screen stage's scoring of one round of proposals with
 * zero-cost proxies (see pipeline.h, sieve/proxy.h).
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
#pragma once

#include <sieve/sieve.h>

#include "internal.h"
#include "pipeline.h"

G_BEGIN_DECLS

typedef struct {
  guint n;
  SieveResult **scores; /* n: each proxy's score by its name, and "screen_score" (owned) */
  char **errors;        /* n: why candidate i has no scores, NULL when it has (owned) */
  double *aggregate;    /* n: the rank aggregate, the value the round is sorted by */
  guint *order;         /* n: candidate indexes, best first (ties: the earlier first) */
} SieveScreenRound;

/* The proxies' batch taken from the stage's dataset. */
typedef struct {
  guint n, classes;
  SieveShape shape; /* per example */
  float *x;         /* n x shape, NCHW (owned) */
  gint32 *y;        /* n (owned) */
} SieveScreenBatch;

/* The stage's batch of real examples: batch_size distinct examples of the
 * dataset's training split drawn with the stage's seed (a partial
 * Fisher-Yates shuffle), normalised per channel with the whole split's
 * statistics, exactly as `sieve proxies --dataset --seed --batch` takes
 * them.  Checked against the networks of space (their input shape, their
 * number of outputs).  NULL and no error when the stage names no dataset.
 * (transfer full) */
SIEVE_INTERNAL_API SieveScreenBatch *sieve_screen_batch_load(const SieveScreenStage *stage, const SieveSpace *space,
                                                             GError **error);
/* The same batch from explicit settings: n examples of dataset (data_dir
 * nullable: its usual place) drawn with seed, checked against space's
 * networks.  The proxy evaluator takes its batch here, so that it scores a
 * network exactly as the screen stage and `sieve proxies` do.
 * (transfer full) */
SIEVE_INTERNAL_API SieveScreenBatch *sieve_screen_batch_load_dataset(const char *dataset, const char *data_dir,
                                                                     guint n, guint64 seed, const SieveSpace *space,
                                                                     GError **error);
SIEVE_INTERNAL_API void sieve_screen_batch_free(SieveScreenBatch *batch);

/* Name of the aggregate metric every scored candidate carries. */
#define SIEVE_SCREEN_SCORE "screen_score"

/* Scores genotypes[0..n) of space with the stage's proxies, on batch
 * (nullable: a seeded N(0,1) batch).  Errors of one candidate are kept in
 * the round, not returned. (transfer full) */
SIEVE_INTERNAL_API SieveScreenRound *sieve_screen_round_new(const SieveScreenStage *stage, const SieveSpace *space,
                                                            const SieveScreenBatch *batch,
                                                            const SieveGenotype *const *genotypes, guint n);
SIEVE_INTERNAL_API void sieve_screen_round_free(SieveScreenRound *round);

/* How many of a round of n pass: keep_top, or keep_fraction of n rounded
 * up, at least 1, and at most room (what the evaluation budget allows). */
SIEVE_INTERNAL_API guint sieve_screen_keep_count(const SieveScreenStage *stage, guint n, gint64 room);

G_END_DECLS
