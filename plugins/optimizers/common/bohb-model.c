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

/* The model of the highest fidelity with min_points results, or NULL. */
static SieveGenotype *
model_sample(const OptBohbModel *model, const SieveSpace *space, const OptTpeData *data, const double *fid,
             SieveRng *rng, const OptSeen *seen)
{
  guint n = opt_tpe_data_size(data);
  double best = -INFINITY;
  guint count_best = 0;
  for (guint i = 0; i < n; i++) {
    if (fid[i] <= best)
      continue;
    guint count = 0;
    for (guint j = 0; j < n; j++)
      count += fid[j] == fid[i];
    if (count >= model->min_points) {
      best = fid[i];
      count_best = count;
    }
  }
  if (count_best == 0)
    return NULL;
  OptTpeData at;
  opt_tpe_data_init(&at, space);
  guint D = data->n_decisions;
  for (guint i = 0; i < n; i++)
    if (fid[i] == best) {
      g_array_append_vals(at.x, &g_array_index(data->x, double, i * D), D);
      g_array_append_val(at.y, g_array_index(data->y, double, i));
    }
  SieveGenotype *g = opt_tpe_suggest(space, &at, &model->tpe, rng, seen);
  opt_tpe_data_clear(&at);
  return g;
}

SieveGenotype *
opt_bohb_model_sample(const OptBohbModel *model, const SieveSpace *space, const OptTpeData *data,
                      const double *fidelity, SieveRng *rng, const OptSeen *seen)
{
  SieveGenotype *g = NULL;
  if (sieve_rng_uniform(rng) >= model->random_fraction)
    g = model_sample(model, space, data, fidelity, rng, seen);
  if (g == NULL)
    g = opt_sample_unseen(space, seen, rng, OPT_RANDOM_TRIES);
  return g;
}
