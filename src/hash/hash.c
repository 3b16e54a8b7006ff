/* Hash values, their text form, and a candidate's hash from its space
 * (sieve/hash.h).  The hashes themselves: hash-structural.c and
 * hash-functional.c. */
#include <string.h>

#include "hash/hash-private.h"
#include "core/core-private.h"

const char *
sieve_hash_kind_name(SieveHashKind kind)
{
  switch (kind) {
  case SIEVE_HASH_STRUCTURAL:
    return "structural";
  case SIEVE_HASH_FUNCTIONAL:
    return "functional";
  }
  return "?";
}

gboolean
sieve_hash_kind_from_name(const char *name, SieveHashKind *out)
{
  g_return_val_if_fail(out != NULL, FALSE);
  if (g_strcmp0(name, "structural") == 0)
    *out = SIEVE_HASH_STRUCTURAL;
  else if (g_strcmp0(name, "functional") == 0)
    *out = SIEVE_HASH_FUNCTIONAL;
  else
    return FALSE;
  return TRUE;
}

void
sieve_hash_format(const SieveHash *hash, char *text)
{
  g_return_if_fail(hash != NULL && text != NULL);
  g_snprintf(text, SIEVE_HASH_TEXT_LEN, "%016" G_GINT64_MODIFIER "x%016" G_GINT64_MODIFIER "x", hash->hi, hash->lo);
}

gboolean
sieve_hash_parse(const char *text, SieveHash *out)
{
  g_return_val_if_fail(out != NULL, FALSE);
  if (text == NULL || strlen(text) != 32)
    return FALSE;
  guint64 half[2] = {0, 0};
  for (guint i = 0; i < 32; i++) {
    int d = g_ascii_xdigit_value(text[i]);
    if (d < 0)
      return FALSE;
    half[i / 16] = half[i / 16] << 4 | (guint64)d;
  }
  out->hi = half[0];
  out->lo = half[1];
  return TRUE;
}

gboolean
sieve_hash_equal(const SieveHash *a, const SieveHash *b)
{
  g_return_val_if_fail(a != NULL && b != NULL, FALSE);
  return a->hi == b->hi && a->lo == b->lo;
}

/* All zeros: easy to recognise in a listing, and a real 128-bit hash
 * reaches it with probability 2^-128. */
const SieveHash *
sieve_hash_degenerate(void)
{
  static const SieveHash degenerate = {0, 0};
  return &degenerate;
}

gboolean
sieve_space_hash(const SieveSpace *space, const SieveGenotype *genotype, SieveHashKind kind, SieveHash *out,
                 GError **error)
{
  g_return_val_if_fail(space != NULL && genotype != NULL && out != NULL, FALSE);
  if (!sieve_space_can_build(space)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH,
                "space %s builds no networks (it is not an architecture space): there is nothing to hash",
                sieve_space_get_name(space));
    return FALSE;
  }
  if (sieve_genotype_get_space(genotype) != space) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH, "a genotype of another space was given to space %s",
                sieve_space_get_name(space));
    return FALSE;
  }
  if (kind == SIEVE_HASH_STRUCTURAL) {
    g_autoptr(SieveGraph) g = sieve_space_build(space, genotype, error);
    return g != NULL && sieve_graph_hash_structural(g, out, error);
  }
  g_return_val_if_fail(kind == SIEVE_HASH_FUNCTIONAL, FALSE);
  const SieveSpace *probe = sieve__space_probe(space, error);
  if (probe == NULL)
    return FALSE;
  /* The genotype belongs to space; the probe copy has the same decisions. */
  g_autoptr(SieveGenotype) copy = sieve_genotype_new(probe);
  for (guint i = 0; i < sieve_genotype_size(genotype); i++)
    sieve_genotype_set(copy, i, sieve_genotype_get(genotype, i));
  g_autoptr(SieveGraph) g = sieve_space_build(probe, copy, error);
  if (g == NULL)
    return FALSE;
  /* The functional hash is a function of the canonical form, which the
   * structural hash names: equal structures run once per space. */
  g_autoptr(SieveCanon) canon = sieve__canon_new(g, error);
  if (canon == NULL)
    return FALSE;
  if (sieve__space_memo_get(space, &canon->hash, out))
    return TRUE;
  if (!sieve__canon_hash_functional(canon, NULL, out, error))
    return FALSE;
  sieve__space_memo_put(space, &canon->hash, out);
  return TRUE;
}
