/* sieve optimizers: the tree-structured Parzen estimator (Bergstra, Bardenet,
 * Bengio & Kégl, "Algorithms for Hyper-Parameter Optimization", NeurIPS
 * 2011), shared by the `tpe` and `bohb` plugins.
 *
 *   OptTpeData data;                      // finished observations
 *   opt_tpe_data_init(&data, space);
 *   opt_tpe_data_add(&data, genotype, fitness);
 *   OptTpeParams p = OPT_TPE_DEFAULTS;
 *   SieveGenotype *g = opt_tpe_suggest(space, &data, &p, &rng, &seen);
 *
 * The observations are split by value into the best ("below", l(x)) and
 * the rest ("above", g(x)); each is a Parzen mixture with one kernel per
 * observation plus a prior kernel, and the proposal maximises l(x)/g(x)
 * among candidates drawn from l.  Details follow Optuna's TPESampler
 * (Watanabe, "Tree-Structured Parzen Estimator: Understanding Its Algorithm
 * Components and Their Roles for Better Empirical Performance", 2023,
 * describes them): gamma(n) = min(ceil(gamma n), gamma_max); the older
 * observations of each group weigh less (a ramp) once it has more than 25;
 * numeric kernels are truncated normals on the (log-)domain with
 * neighbour-distance bandwidths clipped below at range / min(100, n + 1)
 * (univariate) or Scott-like 0.2 n^(-1/(d+4)) range (multivariate);
 * categorical kernels put 1 on the observed choice plus
 * prior_weight / (n + 1) on every choice; ints are scored by the mass of
 * their unit interval.
 *
 * Conditions: a decision's estimator uses only the observations where it
 * is active, and decisions are drawn in order, so a child is drawn only
 * when its parent's drawn value activates it.  Multivariate mode scores a
 * candidate with the joint mixture, where an observation lacking an active
 * decision contributes the prior kernel for it.
 */
#pragma once

#include <sieve/rng.h>
#include <sieve/space.h>

#include "optcommon.h"

G_BEGIN_DECLS

typedef struct {
  guint n_candidates;   /* draws from l(x) per proposal (24) */
  double gamma;         /* fraction of observations in the good group (0.1) */
  guint gamma_max;      /* at most this many good observations (25) */
  double prior_weight;  /* weight of the prior kernel (1.0) */
  gboolean multivariate;
  double bandwidth_factor; /* multiplies every numeric bandwidth when drawing candidates, not when scoring them (1;
                            * BOHB widens by 3) */
} OptTpeParams;

#define OPT_TPE_DEFAULTS {24, 0.1, 25, 1.0, FALSE, 1.0}

/* Finished observations in trial order: values of each decision (NAN where
 * inactive) and a fitness, larger is better (-INFINITY for failed trials).
 * They rank by tier first, then by fitness (opt_tier: every trial
 * completed with a measured value above every pruned one, pruned trials
 * above the failed by how far they got, then by their last value, as
 * Optuna's TPESampler ranks them, its _get_observation_pairs, 3.x). */
typedef struct {
  guint n_decisions;
  GArray *x;    /* double, n * n_decisions */
  GArray *y;    /* double */
  GArray *tier; /* double */
} OptTpeData;

void opt_tpe_data_init(OptTpeData *data, const SieveSpace *space);
void opt_tpe_data_clear(OptTpeData *data);
void opt_tpe_data_add(OptTpeData *data, const SieveGenotype *genotype, double fitness);
/* An observation of any tier (opt_tier; NAN ranks with the failed). */
void opt_tpe_data_add_ranked(OptTpeData *data, const SieveGenotype *genotype, double fitness, double tier);
/* Observation i of from, appended to data (of the same space). */
void opt_tpe_data_add_from(OptTpeData *data, const OptTpeData *from, guint i);
guint opt_tpe_data_size(const OptTpeData *data);
/* {"x": ad (flattened), "y": ad, "tier": ad} as entries of dict under
 * prefix (a state without "tier", saved before it existed, loads with the
 * tiers opt_tpe_data_add gives). */
void opt_tpe_data_save(const OptTpeData *data, GVariantDict *dict, const char *prefix);
gboolean opt_tpe_data_load(OptTpeData *data, GVariant *state, const char *prefix, GError **error);

/* The best candidate whose text is not in seen (seen may be NULL), or NULL
 * when every candidate drawn (a few rounds) was seen.  data must hold at
 * least one observation. (transfer full) (nullable) */
SieveGenotype *opt_tpe_suggest(const SieveSpace *space, const OptTpeData *data, const OptTpeParams *params,
                               SieveRng *rng, const OptSeen *seen);

G_END_DECLS
