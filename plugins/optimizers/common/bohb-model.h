/* sieve optimizers: BOHB's model over multi-fidelity results (Falkner,
 * Klein & Hutter, "BOHB: Robust and Efficient Hyperparameter Optimization
 * at Scale", ICML 2018, section 4 and Algorithm 2), shared by `bohb`
 * (Hyperband's brackets) and `asha` with `sampler: tpe` (ASHA's rungs).
 *
 *   OptBohbModel m;
 *   opt_bohb_model_init(&m, space, options);  // options from OPT_BOHB_MODEL_OPTIONS
 *   double at = opt_bohb_model_fidelity(&m, &data, fidelity);
 *   if (!isnan(at) && sieve_rng_uniform(&rng) >= m.random_fraction)
 *     g = opt_bohb_model_suggest(&m, space, &data, fidelity, at, &rng, &seen);
 *   if (g == NULL)
 *     g = opt_sample_unseen(space, &seen, &rng, OPT_RANDOM_TRIES);
 *
 * (`bohb` draws the coin first, `asha` only once a fidelity has enough
 * results, as HpBandSter's get_config does: see each.)
 *
 * With probability random_fraction a new configuration is random;
 * otherwise it is drawn from a multivariate TPE fitted on the results at
 * the highest fidelity that has at least min_points (n_min, by default
 * the number of decisions + 1) of them, a fidelity's results being equal
 * evidence only among themselves; with no such fidelity it is random.
 * The TPE has the paper's settings (HpBandSter's defaults): the best 15 %
 * form l(x), 64 candidates, kernels widened 3-fold when drawing them.
 */
#pragma once

#include <sieve/options.h>
#include <sieve/rng.h>
#include <sieve/space.h>

#include "optcommon.h"
#include "tpe-model.h"

G_BEGIN_DECLS

/* The model's options, for an optimizer's option table. */
#define OPT_BOHB_MODEL_OPTIONS                                                                                   \
  SIEVE_OPTION_FLOAT("random_fraction", "0.333333", 0, 1, "share of configurations drawn at random"),           \
  SIEVE_OPTION_FLOAT("top_fraction", "0.15", 0.001, 1, "share of a fidelity's results forming the good density"), \
  SIEVE_OPTION_INT("n_candidates", "64", 1, 1e5, "candidates drawn from the good density per configuration"),   \
  SIEVE_OPTION_FLOAT("bandwidth_factor", "3", 0.01, 100, "widening of the kernels when drawing candidates"),     \
  {"min_points", SIEVE_OPTION_TYPE_INT, NULL, 2, 1e6, NULL,                                                      \
   "results a fidelity needs before its model is used (default: decisions + 1)",                               \
   SIEVE_OPTION_HAS_MIN | SIEVE_OPTION_HAS_MAX, {NULL}}

/* The names in OPT_BOHB_MODEL_OPTIONS, NULL-terminated. */
extern const char *const opt_bohb_model_option_names[];

typedef struct {
  OptTpeParams tpe;
  double random_fraction;
  guint min_points;
} OptBohbModel;

/* Reads the OPT_BOHB_MODEL_OPTIONS of options. */
void opt_bohb_model_init(OptBohbModel *model, const SieveSpace *space, const SieveOptions *options);

/* The highest fidelity among fidelity[0 .. n) (n: the results in data)
 * with at least min_points results, or NAN when none has. */
double opt_bohb_model_fidelity(const OptBohbModel *model, const OptTpeData *data, const double *fidelity);

/* A configuration not in seen from the TPE of data's results at fidelity
 * at (one of opt_bohb_model_fidelity's), or NULL when every candidate drawn
 * was seen.  (transfer full) (nullable) */
SieveGenotype *opt_bohb_model_suggest(const OptBohbModel *model, const SieveSpace *space, const OptTpeData *data,
                                      const double *fidelity, double at, SieveRng *rng, const OptSeen *seen);

G_END_DECLS
