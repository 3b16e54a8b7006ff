/* sieve optimizers: helpers shared by the bundled optimizer plugins
 * (compiled into each as a static library, so no symbol leaves a plugin).
 *
 *   OptSeen seen;
 *   opt_seen_init(&seen, space);
 *   g_autoptr(SieveGenotype) child = opt_mutate(space, parent, &rng);
 *   g_autofree char *text = sieve_space_format(space, child);
 *   if (opt_seen_add(&seen, text, child)) // TRUE: never proposed before
 *     ...
 *   GVariant *v = opt_seen_save(&seen);   // "ay", proposal order
 *   opt_seen_clear(&seen);
 *
 * Everything here is deterministic given the SieveRng passed in, and every
 * piece of state has a GVariant form so that a plugin's save() is exact.
 */
#pragma once

#include <math.h>

#include <sieve/candidate.h>
#include <sieve/optimizer.h>
#include <sieve/result.h>
#include <sieve/rng.h>
#include <sieve/space.h>

G_BEGIN_DECLS

/* ---- state helpers ----------------------------------------------------- */

/* Checks that state is an a{sv}. */
gboolean opt_state_check(GVariant *state, GError **error);
/* FALSE + an error when the study has several objectives: what ("it
 * ranks candidates", or a setting that does) ranks by one, and would pass the others
 * over without a word (it was so until 2026-11-27). */
gboolean opt_one_objective(const SieveStudyInfo *study, const char *what, GError **error);
/* The value under key with the given type, or NULL + an error naming the
 * key. (transfer full) */
GVariant *opt_state_lookup(GVariant *state, const char *key, const GVariantType *type, GError **error);

/* An array of n elements of size bytes each, copied from data, for a
 * fixed-size element type of which every bit pattern is a value (y, q, u,
 * t, n, i, x, d; not b): g_variant_new_fixed_array's value marked trusted,
 * so that a store's normal-form check is O(1), not one call per element.
 * (transfer floating) */
GVariant *opt_array_new(const GVariantType *element, gconstpointer data, gsize n, gsize size);
/* A genotype as its values, "ad" (NAN for inactive decisions). (transfer floating) */
GVariant *opt_genotype_save(const SieveGenotype *genotype);
/* Inverse of opt_genotype_save, validated against the space. (transfer full) */
SieveGenotype *opt_genotype_load(const SieveSpace *space, GVariant *values, GError **error);
/* An array of genotypes, "aad". (transfer floating) */
GVariant *opt_genotypes_save(GPtrArray *genotypes);
/* (transfer full) element-type SieveGenotype */
GPtrArray *opt_genotypes_load(const SieveSpace *space, GVariant *array, GError **error);

/* ---- proposals already made ------------------------------------------- */

/* Canonical texts of every genotype proposed, so that an optimizer can
 * avoid proposing one twice.  Beside the texts it keeps the genotypes'
 * values as binary keys: asking whether a fresh genotype was seen then
 * costs a hash of its values, not a formatting (which dominated the time
 * of an ask when a converged model keeps drawing known genotypes). */
typedef struct {
  const SieveSpace *space;
  GHashTable *set;    /* text (owned) -> itself */
  GHashTable *values; /* GBytes of the values -> itself (owned) */
  GByteArray *packed; /* the texts in order, each ended by a NUL: what save() writes */
} OptSeen;

void opt_seen_init(OptSeen *seen, const SieveSpace *space);
void opt_seen_clear(OptSeen *seen);
/* TRUE if text (g's canonical text, sieve_space_format) was new; it is
 * added.  g gives the values directly: a text is never parsed back here, so
 * a space whose parse cannot read its own format fails the study elsewhere
 * with an error rather than aborting an optimizer. */
gboolean opt_seen_add(OptSeen *seen, const char *text, const SieveGenotype *g);
gboolean opt_seen_contains(const OptSeen *seen, const char *text);
/* Whether a genotype equal to g was added. */
gboolean opt_seen_has_genotype(const OptSeen *seen, const SieveGenotype *g);
guint opt_seen_size(const OptSeen *seen);
/* The texts in proposal order, each ended by a NUL, as one "ay" (transfer
 * floating).  States saved before 2026-11-27 hold an "as" of the same
 * texts: opt_texts_lookup and opt_seen_load read both. */
GVariant *opt_seen_save(const OptSeen *seen);
/* Saved texts under key, "ay" (each ended by a NUL, as opt_seen_save
 * writes them) or "as"; NULL + an error naming the key when absent or of
 * another type. (transfer full) */
GVariant *opt_texts_lookup(GVariant *state, const char *key, GError **error);
/* The texts of such a value, *n of them, pointing into it; NULL + error
 * when its bytes are not NUL-ended UTF-8 texts (a state is input).
 * (transfer container) NULL-terminated */
const char **opt_saved_texts(GVariant *texts, gsize *n, GError **error);
/* Replaces seen by saved texts; FALSE + error on a text the space cannot
 * parse, seen then left as it was (a failed load() must not leave an
 * optimizer half restored). */
gboolean opt_seen_load(OptSeen *seen, GVariant *texts, GError **error);
/* The two halves of opt_seen_load, for a load() with several fallible
 * parts: parse initialises out (cleared again on failure); replace moves
 * loaded into seen, freeing seen's old contents. */
gboolean opt_seen_parse(OptSeen *out, const SieveSpace *space, GVariant *texts, GError **error);
void opt_seen_replace(OptSeen *seen, OptSeen *loaded);

/* Key of a genotype at a fidelity: the text alone when fidelity is NAN,
 * else "fidelity@text" (fidelity in shortest round-trip form). (transfer full) */
char *opt_key(const char *text, double fidelity);

/* ---- the space --------------------------------------------------------- */

/* A numeric decision's domain as the models see it: log(low)..log(high)
 * for a log decision; ints widened by half a unit each side, so that each
 * integer has an equal share (as sieve_space_sample draws them). */
void opt_domain_bounds(const SieveDecision *d, double *lo, double *hi);

/* A decision's value <-> [0, 1]: linear over opt_domain_bounds (so
 * logarithmic where the decision says so). */
double opt_to_unit(const SieveDecision *d, double value);
double opt_from_unit(const SieveDecision *d, double unit);

/* Whether g is a member of its space: inside the decisions' domains and,
 * for a space with a check (sieve/space.h), accepted by it. */
gboolean opt_member(const SieveSpace *space, const SieveGenotype *g);

/* A copy of parent with exactly one active decision changed (categoricals
 * to another choice, ints and floats by a Gaussian step of sd 0.1 in unit
 * space, redrawn until the value differs), then repaired so that the
 * decisions its conditions switch on get random values and those switched
 * off become NAN; redrawn until the child is a member of the space (up to
 * 100 tries, then a copy).  A space with no changeable decision gives a copy.
 * (transfer full) */
SieveGenotype *opt_mutate(const SieveSpace *space, const SieveGenotype *parent, SieveRng *rng);

/* Uniform crossover: each decision from a or b with probability 1/2, then
 * repaired; redrawn until a member (up to 100 tries, then a copy of a).
 * (transfer full) */
SieveGenotype *opt_crossover(const SieveSpace *space, const SieveGenotype *a, const SieveGenotype *b, SieveRng *rng);

/* The one-decision neighbourhood of g (White et al. 2020): every other
 * choice of each active categorical and of each int with at most 16
 * values; for wider ints and floats, max_numeric Gaussian steps each;
 * only members of the space.  Shuffled with rng. (transfer full) element-type SieveGenotype */
GPtrArray *opt_neighbours(const SieveSpace *space, const SieveGenotype *g, guint max_numeric, SieveRng *rng);

/* A random genotype whose text is not in seen, trying up to max_tries
 * draws; NULL when all of them were seen. (transfer full) (nullable) */
SieveGenotype *opt_sample_unseen(const SieveSpace *space, const OptSeen *seen, SieveRng *rng, guint max_tries);

/* Draws opt_propose makes before it takes a finite space as exhausted. */
#define OPT_RANDOM_TRIES 10000

/* The last step of every ask(): proposes g (taken), or when g is NULL a
 * random genotype not in seen (OPT_RANDOM_TRIES draws); its candidate joins
 * seen and out.  (transfer none) the candidate, or NULL when g was NULL and
 * every draw had been proposed before (the space is exhausted). */
SieveCandidate *opt_propose(GPtrArray *out, OptSeen *seen, const SieveSpace *space, SieveRng *rng, SieveGenotype *g);

/* Fitness ordering with NAN (a failed or screened trial) below everything. */
static inline double
opt_fitness(double objective)
{
  return isnan(objective) ? -INFINITY : objective;
}

/* The order the samplers share for what they were told, in two parts: a
 * tier, then the fitness within it.  A finished trial's tier is +INFINITY,
 * a failed one's (fitness -INFINITY) -INFINITY; a pruned trial's is the
 * step it reached (-1 when it told none, -INFINITY when that is not a
 * number), so it ranks below every finished trial and above the failed,
 * and the pruned by how far they got.  This is Optuna's TPESampler's order
 * for pruned trials (its last value was measured below the full fidelity:
 * no evidence against a finished trial's, and a value that looks good at
 * an early step must not draw the search its way). */
double opt_tier(const SieveResult *result, double fitness);

/* A finished trial's tier (opt_tier). */
static inline double
opt_tier_finished(double fitness)
{
  return fitness == -INFINITY ? -INFINITY : INFINITY;
}

/* Whether (tier, fitness) ranks strictly above (other_tier, other_fitness). */
static inline gboolean
opt_ranks_above(double tier, double fitness, double other_tier, double other_fitness)
{
  return tier != other_tier ? tier > other_tier : fitness > other_fitness;
}

G_END_DECLS
