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
 * not part of it: a table file rewritten in place keeps its entries.
 */
#pragma once

#include <sieve/sieve.h>

#include "config.h"
#include "internal.h"

G_BEGIN_DECLS

/* 32 hex digits and the terminating NUL, as SIEVE_HASH_TEXT_LEN. */
#define SIEVE_DEDUPE_HASH_LEN 33

/* The hash of the kind asked for, in hex (32 digits).  genotype: the first
 * 128 bits of SHA-256 over the canonical genotype text; structural and
 * functional: sieve_space_hash (sieve/hash.h). */
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

G_END_DECLS
