/* sieve optimizers: BOHB's model over multi-fidelity results.  See
 * bohb-model.h (Falkner, Klein & Hutter, ICML 2018). */
#include <math.h>

#include "bohb-model.h"

const char *const opt_bohb_model_option_names[] = {"random_fraction", "top_fraction", "n_candidates",
                                                   "bandwidth_factor", "min_points", NULL};

void
opt_bohb_model_init(OptBohbModel *model, const SieveSpace *space, const SieveOptions *options)
{
  /* Falkner et al. 2018, section 4 and their HpBandSter defaults */
  model->tpe = (OptTpeParams) OPT_TPE_DEFAULTS;
  model->tpe.multivariate = TRUE;
  model->tpe.gamma = sieve_options_get_double(options, "top_fraction");
  model->tpe.gamma_max = G_MAXUINT;
  model->tpe.n_candidates = (guint) sieve_options_get_int(options, "n_candidates");
  model->tpe.bandwidth_factor = sieve_options_get_double(options, "bandwidth_factor");
  model->random_fraction = sieve_options_get_double(options, "random_fraction");
  model->min_points = sieve_options_is_set(options, "min_points") ? (guint) sieve_options_get_int(options, "min_points")
                                                                  : sieve_space_n_decisions(space) + 1;
}

typedef struct {
  double fidelity;
  guint count;
} FidelityCount;

double
opt_bohb_model_fidelity(const OptBohbModel *model, const OptTpeData *data, const double *fidelity)
{
  /* One pass, counting per distinct fidelity (a study has a few: its rungs),
   * where a count per result made each draw quadratic in the results. */
  g_autoptr(GArray) counts = g_array_new(FALSE, FALSE, sizeof(FidelityCount));
  guint n = opt_tpe_data_size(data);
  for (guint i = 0; i < n; i++) {
    if (isnan(fidelity[i]))
      continue; /* equal to nothing, itself included */
    guint k = 0;
    while (k < counts->len && g_array_index(counts, FidelityCount, k).fidelity != fidelity[i])
      k++;
    if (k == counts->len)
      g_array_append_val(counts, ((FidelityCount){fidelity[i], 0}));
    g_array_index(counts, FidelityCount, k).count++;
  }
  double best = NAN;
  for (guint k = 0; k < counts->len; k++) {
    const FidelityCount *c = &g_array_index(counts, FidelityCount, k);
    if (c->count >= model->min_points && !(c->fidelity <= best))
      best = c->fidelity;
  }
  return best;
}

SieveGenotype *
opt_bohb_model_suggest(const OptBohbModel *model, const SieveSpace *space, const OptTpeData *data,
                       const double *fidelity, double at, SieveRng *rng, const OptSeen *seen)
{
  OptTpeData here;
  opt_tpe_data_init(&here, space);
  guint n = opt_tpe_data_size(data);
  for (guint i = 0; i < n; i++)
    if (fidelity[i] == at)
      opt_tpe_data_add_from(&here, data, i);
  SieveGenotype *g = opt_tpe_suggest(space, &here, &model->tpe, rng, seen);
  opt_tpe_data_clear(&here);
  return g;
}
