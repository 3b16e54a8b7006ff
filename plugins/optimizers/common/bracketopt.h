/* sieve optimizers: the ask/tell/save cycle around OptBrackets, shared by
 * `successive_halving` and `hyperband` (random configurations) and `bohb`
 * (configurations from a TPE model, Falkner, Klein & Hutter, "BOHB: Robust
 * and Efficient Hyperparameter Optimization at Scale", ICML 2018).
 *
 * BOHB's model: with probability random_fraction a configuration is
 * random; otherwise the model is fitted on the results at the highest
 * fidelity that has at least min_points of them (any fidelity's results
 * being equally valid evidence only at that fidelity), as a multivariate
 * TPE with the paper's settings: the best 15 % form l(x), 64 candidates,
 * kernels widened 3-fold when drawing candidates.
 */
#pragma once

#include <sieve/candidate.h>
#include <sieve/optimizer.h>
#include <sieve/options.h>
#include <sieve/result.h>
#include <sieve/space.h>

#include "brackets.h"
#include "tpe-model.h"

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
