/* sieve: the seeded random number generator every component shares.
 *
 *   SieveRng rng;
 *   sieve_rng_seed(&rng, 42);
 *   double u = sieve_rng_uniform(&rng);      // [0, 1)
 *   guint64 k = sieve_rng_below(&rng, 10);   // 0..9, unbiased
 *
 * xoshiro256** (Blackman & Vigna 2018) seeded through splitmix64: the same
 * stream on every platform, so a seed reproduces a study anywhere.  Its
 * state is four words, saved and restored as a GVariant "(tttt)".
 */
#pragma once

#include <glib.h>
#include <sieve/abi.h>

G_BEGIN_DECLS

typedef struct {
  guint64 s[4];
} SieveRng;
SIEVE_ABI_SIZE(SieveRng, 32);

SIEVE_API void sieve_rng_seed(SieveRng *rng, guint64 seed);
SIEVE_API guint64 sieve_rng_next(SieveRng *rng);
/* Uniform double in [0, 1) with 53 random bits. */
SIEVE_API double sieve_rng_uniform(SieveRng *rng);
/* Uniform integer in [0, n); n > 0. Unbiased (Lemire's method). */
SIEVE_API guint64 sieve_rng_below(SieveRng *rng, guint64 n);
/* Standard normal deviate (Box-Muller, no cached second value so the
 * state alone determines the stream). */
SIEVE_API double sieve_rng_normal(SieveRng *rng);
/* n standard normal deviates into out (caller's), exactly the values n
 * calls of sieve_rng_normal would give, with the same state after: the
 * uniforms are drawn in order and the transform is spread over up to
 * threads threads (0: all processors). */
SIEVE_API void sieve_rng_normal_fill(SieveRng *rng, double *out, gsize n, guint threads);
/* Derive an independent generator for a sub-stream (e.g. one per worker). */
SIEVE_API void sieve_rng_split(SieveRng *rng, SieveRng *child);

/* (transfer floating) "(tttt)" */
SIEVE_API GVariant *sieve_rng_save(const SieveRng *rng);
SIEVE_API gboolean sieve_rng_load(SieveRng *rng, GVariant *state, GError **error);

G_END_DECLS
