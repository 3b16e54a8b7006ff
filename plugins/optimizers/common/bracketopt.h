/* sieve optimizers: the ask/tell/save cycle around OptBrackets, shared by
 * `successive_halving` and `hyperband` (random configurations) and `bohb`
 * (configurations from a TPE model, Falkner, Klein & Hutter, "BOHB: Robust
 * and Efficient Hyperparameter Optimization at Scale", ICML 2018).
 *
 * BOHB's model (random_fraction, a TPE of the highest fidelity with
 * enough results): bohb-model.h, shared with `asha`'s `sampler: tpe`.
 */
#pragma once

#include <sieve/candidate.h>
#include <sieve/optimizer.h>
#include <sieve/options.h>
#include <sieve/result.h>
#include <sieve/space.h>

#include "bohb-model.h"
#include "brackets.h"

G_BEGIN_DECLS

typedef enum {
  OPT_BRACKETS_SUCCESSIVE_HALVING,
  OPT_BRACKETS_HYPERBAND,
  OPT_BRACKETS_BOHB,
} OptBracketsMethod;

gpointer opt_bracketopt_create(const SieveSpace *space, const SieveOptions *options, const SieveStudyInfo *study,
                               OptBracketsMethod method, GError **error);
void opt_bracketopt_destroy(gpointer instance);
gboolean opt_bracketopt_ask(gpointer instance, guint n, GPtrArray *out, GError **error);
gboolean opt_bracketopt_tell(gpointer instance, const SieveCandidate *candidate, const SieveResult *result,
                             const double *objectives, GError **error);
GVariant *opt_bracketopt_save(gpointer instance, GError **error);
gboolean opt_bracketopt_load(gpointer instance, GVariant *state, GError **error);

G_END_DECLS
