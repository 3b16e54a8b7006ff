/* sieve: a candidate's hash (sieve_space_hash in sieve/space.h): the space
 * builds the genotype's network, for the functional kind at its probe
 * scale, and the hash area hashes it; equal structures are hashed
 * functionally once per space (its memo). */
#include <sieve/hash.h>
#include <sieve/space.h>

#include "core/core-private.h"
#include "hash/hash-private.h"

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
  /* A composite space's network is its architecture part's. */
  guint first = 0;
  const SieveSpace *arch = sieve__space_arch_part(space, &first);
  if (arch != NULL) {
    g_autoptr(SieveGenotype) part = sieve_genotype_new(arch);
    for (guint i = 0; i < sieve_genotype_size(part); i++)
      sieve_genotype_set(part, i, sieve_genotype_get(genotype, first + i));
    return sieve_space_hash(arch, part, kind, out, error);
  }
  const SieveSpaceClass *klass = sieve__space_get_class(space);
  if (kind == SIEVE_HASH_STRUCTURAL && klass != NULL && klass->hash != NULL) {
    if (!sieve_space_validate(space, genotype, error))
      return FALSE;
    return klass->hash(sieve_space_get_instance(space), space, genotype, out, error);
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
