/* sieve: what an optimizer plugin implements.
 *
 * Lifecycle: create(space, options, seed) -> ask(n) / tell(...) many times
 * -> destroy.  save() and load() carry the whole state across a kill: the
 * engine saves after every ask and every tell in the same store transaction
 * as the trials they concern, so load() + the same calls must reproduce the
 * same proposals.  An optimizer must be deterministic for a seed: use the
 * SieveRng it keeps, never a global or time-seeded source.
 *
 * ask(n) appends n candidates, or fewer (even none, which is no error) when
 * it has nothing to propose until pending candidates' results come back
 * (e.g. a rung waiting to fill) or when its space is exhausted: the engine
 * then waits for a running evaluation's result and asks again, and ends
 * the study only when an ask gives none with nothing running.  tell() may
 * come in any order, and for a candidate screened or answered from the
 * cache too (see the result's status): a cached result
 * carries the metrics of the evaluation it reuses, and its objectives as
 * that one's; a screened one carries the proxies' scores (and
 * "screen_score", its rank aggregate in its round) as metrics and NAN
 * objectives.
 *
 * Objectives: the experiment names one or more metrics, each to maximize or
 * minimize.  tell() receives them already turned into "larger is better"
 * (a minimized metric negated), in the experiment's order, NAN where the
 * trial did not report one (failed, screened).  A single-objective method
 * uses objectives[0].
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

/* What the engine tells an optimizer about the study it serves. */
typedef struct {
  guint64 seed;                       /* the only source of randomness allowed */
  guint n_objectives;                 /* >= 1: tell() gets this many values */
  const char *const *objective_names; /* n_objectives metric names */
  const SieveFidelity *fidelity;      /* the evaluator's, NULL when it offers none */
  gpointer reserved[8];
} SieveStudyInfo;
SIEVE_ABI_SIZE(SieveStudyInfo, 96);

typedef struct {
  /* (transfer full) instance; NULL + error when options do not suit the
   * space or the study (e.g. a multi-fidelity method without a fidelity);
   * NULL without an error is refused ("create returned nothing and no error").
   * study and what it points to live only during the call: copy what is kept. */
  gpointer (*create)(const SieveSpace *space, const SieveOptions *options, const SieveStudyInfo *study,
                     GError **error);
  void (*destroy)(gpointer instance);
  /* Append n SieveCandidate* (transfer full) to out. */
  gboolean (*ask)(gpointer instance, guint n, GPtrArray *out, GError **error);
  /* result: status and metrics; objectives: study->n_objectives values,
   * larger is better, NAN where missing. */
  gboolean (*tell)(gpointer instance, const SieveCandidate *candidate, const SieveResult *result,
                   const double *objectives, GError **error);
  /* (transfer floating) any GVariant; NULL + error on failure. */
  GVariant *(*save)(gpointer instance, GError **error);
  gboolean (*load)(gpointer instance, GVariant *state, GError **error);
  gpointer reserved[10];
} SieveOptimizerClass;
SIEVE_ABI_SIZE(SieveOptimizerClass, 128);

/* An instance of an optimizer component, as the engine and Lua use it.
 * The space must outlive it; study is copied. (transfer full) */
typedef struct _SieveOptimizer SieveOptimizer;
SIEVE_API SieveOptimizer *sieve_optimizer_new(const SieveComponent *component, const SieveSpace *space,
                                              const SieveOptions *options, const SieveStudyInfo *study,
                                              GError **error);
SIEVE_API void sieve_optimizer_free(SieveOptimizer *optimizer);
/* Appends candidates (transfer full) to out; checks each genotype against the space. */
SIEVE_API gboolean sieve_optimizer_ask(SieveOptimizer *optimizer, guint n, GPtrArray *out, GError **error);
/* objectives: as many as the study has, larger is better, NAN where missing. */
SIEVE_API gboolean sieve_optimizer_tell(SieveOptimizer *optimizer, const SieveCandidate *candidate,
                                        const SieveResult *result, const double *objectives, GError **error);
/* Number of objectives the optimizer was created for. */
SIEVE_API guint sieve_optimizer_n_objectives(const SieveOptimizer *optimizer);
/* (transfer full) a non-floating GVariant */
SIEVE_API GVariant *sieve_optimizer_save(SieveOptimizer *optimizer, GError **error);
SIEVE_API gboolean sieve_optimizer_load(SieveOptimizer *optimizer, GVariant *state, GError **error);
SIEVE_API const SieveComponent *sieve_optimizer_get_component(const SieveOptimizer *optimizer);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveOptimizer, sieve_optimizer_free)

G_END_DECLS
