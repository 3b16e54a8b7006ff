/* sieve-halton: a third-party optimizer plugin, built out of tree against
 * the installed sieve (only its public headers and pkg-config).
 *
 * The Halton sequence (Halton 1960, "On the efficiency of certain
 * quasi-random sequences of points in evaluating multi-dimensional
 * integrals", Numerische Mathematik 2) spreads points over the unit cube
 * more evenly than independent random draws: point n has, in dimension i,
 * the radical inverse of n in the i-th prime base b,
 *     u_i(n) = sum_j d_j(n) b^-(j+1)   where n = sum_j d_j(n) b^j.
 * Each decision of the space is one dimension.  Floats map linearly (or
 * log-linearly where the decision is log) onto [low, high]; ints and
 * categoricals by floor(u * count) (log ints on a log scale over
 * [low, high + 1)).  Decisions that a condition makes inactive are cleared
 * by sieve_genotype_repair().  Index 0 (the all-zero corner) is skipped.
 *
 * In high dimensions the plain sequence shows strong correlations between
 * dimensions with large neighbouring primes.  `scramble: true` permutes the
 * digits of each dimension with a random permutation of 1..b-1 (0 stays 0
 * so that the infinite run of leading zeros still adds nothing), drawn from
 * the study's seed: the permuted Halton idea of Braaten & Weller (1979, J.
 * Comput. Phys. 33) with random permutations as in Mascagni & Chi (2004,
 * "On the scrambled Halton sequence", Monte Carlo Methods Appl. 10).
 *
 * Halton is not adaptive: tell() learns nothing.  The state saved for a
 * resume is the next index and the seed of the permutations.
 */
#include <math.h>
#include <string.h>

#include <sieve/abi.h>
#include <sieve/candidate.h>
#include <sieve/component.h>
#include <sieve/optimizer.h>
#include <sieve/options.h>
#include <sieve/plugin.h>
#include <sieve/result.h>
#include <sieve/rng.h>
#include <sieve/space.h>

static const SieveOptionSpec halton_options[] = {
  SIEVE_OPTION_BOOL("scramble", "false", "permute each dimension's digits at random (seeded) to break correlations"),
  SIEVE_OPTION_INT("skip", "0", 0, 1e15, "points of the sequence to leave out at its start"),
  SIEVE_OPTION_END,
};

typedef struct {
  const SieveSpace *space;
  guint dimension;
  guint *bases;        /* the first `dimension` primes */
  guint **permutation;  /* per dimension, b digits; NULL when not scrambling */
  gboolean scramble;
  guint64 seed;
  guint64 next; /* index of the next point */
} Halton;

/* The first n primes, by trial division (n is the number of decisions). */
static guint *
first_primes(guint n)
{
  guint *primes = g_new(guint, MAX(n, 1));
  guint found = 0;
  for (guint candidate = 2; found < n; candidate++) {
    gboolean prime = TRUE;
    for (guint k = 0; k < found && primes[k] * primes[k] <= candidate; k++)
      if (candidate % primes[k] == 0) {
        prime = FALSE;
        break;
      }
    if (prime)
      primes[found++] = candidate;
  }
  return primes;
}

static void
free_permutations(Halton *self)
{
  if (self->permutation == NULL)
    return;
  for (guint i = 0; i < self->dimension; i++)
    g_free(self->permutation[i]);
  g_clear_pointer(&self->permutation, g_free);
}

/* Fisher-Yates over 1..b-1 per dimension, from the seed alone, so that the
 * same seed gives the same sequence and load() can rebuild it. */
static void
make_permutations(Halton *self)
{
  free_permutations(self);
  if (!self->scramble)
    return;
  SieveRng rng;
  sieve_rng_seed(&rng, self->seed);
  self->permutation = g_new0(guint *, self->dimension);
  for (guint i = 0; i < self->dimension; i++) {
    guint b = self->bases[i];
    guint *p = g_new(guint, b);
    for (guint d = 0; d < b; d++)
      p[d] = d;
    for (guint d = b - 1; d > 1; d--) {
      guint k = 1 + (guint) sieve_rng_below(&rng, d); /* 1..d */
      guint t = p[d];
      p[d] = p[k];
      p[k] = t;
    }
    self->permutation[i] = p;
  }
}

static void
halton_destroy(gpointer instance)
{
  Halton *self = instance;
  if (self == NULL)
    return;
  free_permutations(self);
  g_free(self->bases);
  g_free(self);
}

static gpointer
halton_create(const SieveSpace *space, const SieveOptions *options, const SieveStudyInfo *study, GError **error)
{
  guint dimension = sieve_space_n_decisions(space);
  if (dimension == 0) {
    /* The section's location: no single option is to blame. */
    sieve_options_set_error(options, "skip", error, "halton needs a space with at least one decision");
    return NULL;
  }
  Halton *self = g_new0(Halton, 1);
  self->space = space;
  self->dimension = dimension;
  self->bases = first_primes(dimension);
  self->scramble = sieve_options_get_bool(options, "scramble");
  self->seed = study->seed;
  self->next = 1 + (guint64) sieve_options_get_int(options, "skip");
  make_permutations(self);
  return self;
}

/* Radical inverse of n in dimension i, in [0, 1). */
static double
radical_inverse(const Halton *self, guint i, guint64 n)
{
  guint b = self->bases[i];
  const guint *p = self->permutation ? self->permutation[i] : NULL;
  double scale = 1.0 / b, u = 0;
  while (n > 0) {
    guint digit = (guint) (n % b);
    u += (p ? p[digit] : digit) * scale;
    scale /= b;
    n /= b;
  }
  return MIN(u, nextafter(1.0, 0.0));
}

static double
map_to_decision(const SieveDecision *d, double u)
{
  switch (d->kind) {
  case SIEVE_DECISION_CATEGORICAL:
    return MIN(floor(u * d->n_choices), d->n_choices - 1);
  case SIEVE_DECISION_INT: {
    double v;
    if (d->log && d->low > 0)
      v = floor(exp(log(d->low) + u * (log(d->high + 1) - log(d->low))));
    else
      v = d->low + floor(u * (d->high - d->low + 1));
    return CLAMP(v, d->low, d->high);
  }
  case SIEVE_DECISION_FLOAT: {
    double v = d->log && d->low > 0 ? exp(log(d->low) + u * (log(d->high) - log(d->low)))
                                    : d->low + u * (d->high - d->low);
    return CLAMP(v, d->low, d->high); /* exp() may round past high */
  }
  }
  g_assert_not_reached();
}

static gboolean
halton_ask(gpointer instance, guint n, GPtrArray *out, GError **error)
{
  Halton *self = instance;
  for (guint k = 0; k < n; k++, self->next++) {
    SieveGenotype *g = sieve_genotype_new(self->space);
    for (guint i = 0; i < self->dimension; i++)
      sieve_genotype_set(g, i, map_to_decision(sieve_space_decision(self->space, i),
                                                radical_inverse(self, i, self->next)));
    /* Every decision has a value, so repair only clears the inactive ones
     * and draws nothing from the generator. */
    SieveRng rng;
    sieve_rng_seed(&rng, self->seed ^ self->next);
    sieve_genotype_repair(g, &rng);
    g_ptr_array_add(out, sieve_candidate_new(g, NAN));
  }
  return TRUE;
}

static gboolean
halton_tell(gpointer instance, const SieveCandidate *candidate, const SieveResult *result, const double *objectives,
            GError **error)
{
  return TRUE; /* a fixed design: outcomes do not change the next points */
}

static GVariant *
halton_save(gpointer instance, GError **error)
{
  Halton *self = instance;
  return g_variant_new("(tt)", self->next, self->seed);
}

static gboolean
halton_load(gpointer instance, GVariant *state, GError **error)
{
  Halton *self = instance;
  if (!g_variant_is_of_type(state, G_VARIANT_TYPE("(tt)"))) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "halton state must be (tt), got %s",
                g_variant_get_type_string(state));
    return FALSE;
  }
  guint64 next, seed;
  g_variant_get(state, "(tt)", &next, &seed);
  if (next == 0) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "halton state has index 0, which is never used");
    return FALSE;
  }
  self->next = next;
  if (seed != self->seed) {
    self->seed = seed;
    make_permutations(self);
  }
  return TRUE;
}

static const SieveOptimizerClass halton_class = {
  .create = halton_create,
  .destroy = halton_destroy,
  .ask = halton_ask,
  .tell = halton_tell,
  .save = halton_save,
  .load = halton_load,
};

static const SieveComponentInfo halton_info = {
  .kind = SIEVE_KIND_OPTIMIZER,
  .name = "halton",
  .summary = "Halton low-discrepancy sequence over all decisions (optionally scrambled)",
  .options = halton_options,
  .klass = &halton_class,
};

static gboolean
halton_init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &halton_info, error);
}

SIEVE_PLUGIN_DEFINE("halton", "1.0.0", "Halton quasi-random sequence optimizer (example third-party plugin)", "MIT",
                    halton_init);
