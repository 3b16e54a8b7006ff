/* sieve: xoshiro256** seeded by splitmix64.
 *
 * Blackman & Vigna, "Scrambled linear pseudorandom number generators"
 * (ACM TOMS 2021).  Chosen because its whole state is four words (cheap to
 * store after every ask) and its output is the same on every platform.
 */
#include <math.h>
#include <sieve/rng.h>

static guint64
splitmix64(guint64 *x)
{
  guint64 z = (*x += G_GUINT64_CONSTANT(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * G_GUINT64_CONSTANT(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * G_GUINT64_CONSTANT(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

static inline guint64
rotl(guint64 x, int k)
{
  return (x << k) | (x >> (64 - k));
}

void
sieve_rng_seed(SieveRng *rng, guint64 seed)
{
  g_return_if_fail(rng != NULL);
  guint64 x = seed;
  for (int i = 0; i < 4; i++)
    rng->s[i] = splitmix64(&x);
}

guint64
sieve_rng_next(SieveRng *rng)
{
  guint64 *s = rng->s;
  const guint64 result = rotl(s[1] * 5, 7) * 9;
  const guint64 t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double
sieve_rng_uniform(SieveRng *rng)
{
  return (double) (sieve_rng_next(rng) >> 11) * 0x1.0p-53;
}

/* Lemire, "Fast random integer generation in an interval" (TOMACS 2019). */
guint64
sieve_rng_below(SieveRng *rng, guint64 n)
{
  g_return_val_if_fail(n > 0, 0);
  unsigned __int128 m = (unsigned __int128) sieve_rng_next(rng) * n;
  guint64 low = (guint64) m;
  if (low < n) {
    guint64 threshold = -n % n;
    while (low < threshold) {
      m = (unsigned __int128) sieve_rng_next(rng) * n;
      low = (guint64) m;
    }
  }
  return (guint64) (m >> 64);
}

double
sieve_rng_normal(SieveRng *rng)
{
  double u1;
  do
    u1 = sieve_rng_uniform(rng);
  while (u1 <= 0.0);
  double u2 = sieve_rng_uniform(rng);
  return sqrt(-2.0 * log(u1)) * cos(2.0 * G_PI * u2);
}

/* Box-Muller costs a log, a square root and a cosine per deviate, several
 * times the generator itself: the zero-cost proxies draw millions (Zen-NAS
 * draws every weight and two batches), so the transform runs in parallel
 * once the draws are done. */
void
sieve_rng_normal_fill(SieveRng *rng, double *out, gsize n, guint threads)
{
  g_return_if_fail(rng != NULL && (out != NULL || n == 0));
  if (n < 16384) {
    for (gsize k = 0; k < n; k++)
      out[k] = sieve_rng_normal(rng);
    return;
  }
  /* In chunks, so that the second uniforms take a bounded buffer. */
  const gsize chunk = (gsize)1 << 20;
  g_autofree double *u2 = g_new(double, MIN(n, chunk));
  int nt = threads ? (int)threads : (int)g_get_num_processors();
  for (gsize at = 0; at < n; at += chunk) {
    gsize m = MIN(chunk, n - at);
    double *o = out + at;
    for (gsize k = 0; k < m; k++) {
      double u1;
      do
        u1 = sieve_rng_uniform(rng);
      while (u1 <= 0.0);
      o[k] = u1;
      u2[k] = sieve_rng_uniform(rng);
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (gsize k = 0; k < m; k++)
      o[k] = sqrt(-2.0 * log(o[k])) * cos(2.0 * G_PI * u2[k]);
  }
}

void
sieve_rng_split(SieveRng *rng, SieveRng *child)
{
  sieve_rng_seed(child, sieve_rng_next(rng));
}

GVariant *
sieve_rng_save(const SieveRng *rng)
{
  return g_variant_new("(tttt)", rng->s[0], rng->s[1], rng->s[2], rng->s[3]);
}

gboolean
sieve_rng_load(SieveRng *rng, GVariant *state, GError **error)
{
  if (state == NULL || !g_variant_is_of_type(state, G_VARIANT_TYPE("(tttt)"))) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "random state has type '%s', expected '(tttt)'",
                state ? g_variant_get_type_string(state) : "none");
    return FALSE;
  }
  g_variant_get(state, "(tttt)", &rng->s[0], &rng->s[1], &rng->s[2], &rng->s[3]);
  if ((rng->s[0] | rng->s[1] | rng->s[2] | rng->s[3]) == 0) {
    g_set_error_literal(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "random state is all zero");
    return FALSE;
  }
  return TRUE;
}
