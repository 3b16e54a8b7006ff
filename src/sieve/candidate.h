/* sieve: a candidate is a proposal on its way through the pipeline: the
 * genotype, the fidelity it should be evaluated at, and, once the engine has
 * stored it, its trial number and canonical text.
 */
#pragma once

#include <glib.h>
#include <sieve/abi.h>
#include <sieve/space.h>

G_BEGIN_DECLS

typedef struct _SieveCandidate SieveCandidate;

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

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveCandidate, sieve_candidate_free)

G_END_DECLS
