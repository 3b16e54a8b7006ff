/* sieve: what an optimizer plugin implements.
 *
 * Lifecycle: create(space, options, seed) -> ask(n) / tell(...) many times
 * -> destroy.  save() and load() carry the whole state across a kill: the
 * engine saves after every ask and every tell in the same store transaction
 * as the trials they concern, so load() + the same calls must reproduce the
 * same proposals.  An optimizer must be deterministic for a seed: use the
 * SieveRng it keeps, never a global or time-seeded source.
 *
 * ask(n) appends n candidates (it may append fewer only when the space is
 * exhausted); tell() may come in any order, and for a candidate screened or
 * answered from the cache too (see the result's status).
 */
#pragma once

#include <glib.h>
#include <sieve/abi.h>
#include <sieve/candidate.h>
#include <sieve/component.h>
#include <sieve/options.h>
#include <sieve/result.h>
#include <sieve/space.h>

G_BEGIN_DECLS

typedef struct {
  /* (transfer full) instance; NULL + error when options do not suit the space */
  gpointer (*create)(const SieveSpace *space, const SieveOptions *options, guint64 seed,
                     GError **error);
  void (*destroy)(gpointer instance);
  /* Append n SieveCandidate* (transfer full) to out. */
  gboolean (*ask)(gpointer instance, guint n, GPtrArray *out, GError **error);
  /* result: status and metrics; objective is the experiment's objective metric
   * already turned into "larger is better" (NAN when the trial has none). */
  gboolean (*tell)(gpointer instance, const SieveCandidate *candidate, const SieveResult *result,
                   double objective, GError **error);
  /* (transfer floating) any GVariant; NULL + error on failure. */
  GVariant *(*save)(gpointer instance, GError **error);
  gboolean (*load)(gpointer instance, GVariant *state, GError **error);
  gpointer reserved[10];
} SieveOptimizerClass;

/* An instance of an optimizer component, as the engine and Lua use it.
 * The space must outlive it. (transfer full) */
typedef struct _SieveOptimizer SieveOptimizer;
SIEVE_API SieveOptimizer *sieve_optimizer_new(const SieveComponent *component, const SieveSpace *space,
                                              const SieveOptions *options, guint64 seed, GError **error);
SIEVE_API void sieve_optimizer_free(SieveOptimizer *optimizer);
/* Appends candidates (transfer full) to out; checks each genotype against the space. */
SIEVE_API gboolean sieve_optimizer_ask(SieveOptimizer *optimizer, guint n, GPtrArray *out, GError **error);
SIEVE_API gboolean sieve_optimizer_tell(SieveOptimizer *optimizer, const SieveCandidate *candidate,
                                        const SieveResult *result, double objective, GError **error);
/* (transfer full) a non-floating GVariant */
SIEVE_API GVariant *sieve_optimizer_save(SieveOptimizer *optimizer, GError **error);
SIEVE_API gboolean sieve_optimizer_load(SieveOptimizer *optimizer, GVariant *state, GError **error);
SIEVE_API const SieveComponent *sieve_optimizer_get_component(const SieveOptimizer *optimizer);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveOptimizer, sieve_optimizer_free)

G_END_DECLS
