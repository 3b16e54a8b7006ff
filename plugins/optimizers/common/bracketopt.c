/* sieve optimizers: bracket-scheduled optimizers.  See bracketopt.h. */
#include <math.h>

#include <sieve/abi.h>
#include <sieve/candidate.h>
#include <sieve/optimizer.h>
#include <sieve/options.h>
#include <sieve/result.h>
#include <sieve/rng.h>
#include <sieve/space.h>

#include "bracketopt.h"


typedef struct {
  const SieveSpace *space;
  SieveRng rng;
  OptBracketsMethod method;
  OptBrackets brackets;
  /* BOHB */
  OptBohbModel model;
  OptTpeData data;       /* every finished evaluation */
  GArray *data_fidelity; /* double, its fidelity */
} BracketOpt;

void
opt_bracketopt_destroy(gpointer instance)
{
  BracketOpt *self = instance;
  if (self == NULL)
    return;
  opt_brackets_clear(&self->brackets);
  opt_tpe_data_clear(&self->data);
  g_clear_pointer(&self->data_fidelity, g_array_unref);
  g_free(self);
}

static const char *const method_names[] = {"successive_halving", "hyperband", "bohb"};

gpointer
opt_bracketopt_create(const SieveSpace *space, const SieveOptions *options, const SieveStudyInfo *study,
                      OptBracketsMethod method, GError **error)
{
  if (!opt_one_objective(study, "it ranks candidates", error))
    return NULL;
  BracketOpt *self = g_new0(BracketOpt, 1);
  self->space = space;
  self->method = method;
  sieve_rng_seed(&self->rng, study->seed);
  opt_tpe_data_init(&self->data, space);
  self->data_fidelity = g_array_new(FALSE, FALSE, sizeof(double));
  if (!opt_brackets_init(&self->brackets, space, study, options, method != OPT_BRACKETS_SUCCESSIVE_HALVING,
                         method_names[method], error)) {
    opt_bracketopt_destroy(self);
    return NULL;
  }
  if (method == OPT_BRACKETS_BOHB)
    opt_bohb_model_init(&self->model, space, options);
  return self;
}

static SieveGenotype *
sample(gpointer user, OptBrackets *b, double fidelity)
{
  BracketOpt *self = user;
  SieveGenotype *g = NULL;
  /* The coin first, whether or not a model can be fitted yet (asha draws
   * it only once one can; kept here, so that bohb's runs stay the same). */
  if (self->method == OPT_BRACKETS_BOHB && sieve_rng_uniform(&self->rng) >= self->model.random_fraction) {
    const double *f = (const double *) self->data_fidelity->data;
    double at = opt_bohb_model_fidelity(&self->model, &self->data, f);
    if (!isnan(at))
      g = opt_bohb_model_suggest(&self->model, self->space, &self->data, f, at, &self->rng, &b->sampled);
  }
  if (g == NULL)
    g = opt_sample_unseen(self->space, &b->sampled, &self->rng, OPT_RANDOM_TRIES);
  return g;
}

gboolean
opt_bracketopt_ask(gpointer instance, guint n, GPtrArray *out, GError **error)
{
  BracketOpt *self = instance;
  for (guint k = 0; k < n; k++) {
    SieveCandidate *c = opt_brackets_next(&self->brackets, sample, self);
    if (c == NULL)
      break; /* no configuration left that was not started */
    g_ptr_array_add(out, c);
  }
  return TRUE;
}

gboolean
opt_bracketopt_tell(gpointer instance, const SieveCandidate *candidate, const SieveResult *result,
                    const double *objectives, GError **error)
{
  BracketOpt *self = instance;
  /* A pruned trial's value was measured below its rung's fidelity (the
   * step the pruner stopped it at): no evidence at the rung, so it ranks
   * with the failed ones and is never promoted, as in asha (Optuna's
   * samplers, too, rank a pruned trial below every completed one). */
  SieveStatus status = sieve_result_get_status(result);
  gboolean measured = status == SIEVE_STATUS_OK || status == SIEVE_STATUS_CACHED;
  double fitness = measured ? opt_fitness(objectives[0]) : -INFINITY;
  /* Never trained (screened out, rejected): no result of its rung (BOHB's
   * model still reads it as the worst: the screen or a constraint said no
   * there, and it learns to stay away). */
  gboolean untrained = status == SIEVE_STATUS_SCREENED || status == SIEVE_STATUS_REJECTED;
  if (!(untrained ? opt_brackets_withdraw(&self->brackets, candidate)
                  : opt_brackets_tell(&self->brackets, candidate, fitness)))
    return TRUE; /* not one of ours (nothing to learn for the schedule) */
  if (self->method == OPT_BRACKETS_BOHB) {
    double f = sieve_candidate_get_fidelity(candidate);
    opt_tpe_data_add(&self->data, sieve_candidate_get_genotype(candidate), fitness);
    g_array_append_val(self->data_fidelity, f);
  }
  return TRUE;
}

/* State: {"rng", "opened", "brackets", "sampled"} and for BOHB
 * {"x", "y", "tier", "fidelity": ad}. */
GVariant *
opt_bracketopt_save(gpointer instance, GError **error)
{
  BracketOpt *self = instance;
  GVariantDict dict;
  g_variant_dict_init(&dict, NULL);
  g_variant_dict_insert_value(&dict, "rng", sieve_rng_save(&self->rng));
  opt_brackets_save(&self->brackets, &dict);
  if (self->method == OPT_BRACKETS_BOHB) {
    opt_tpe_data_save(&self->data, &dict, "");
    g_variant_dict_insert_value(&dict, "fidelity",
                                opt_array_new(G_VARIANT_TYPE_DOUBLE, self->data_fidelity->data,
                                                          self->data_fidelity->len, sizeof(double)));
  }
  return g_variant_dict_end(&dict);
}

gboolean
opt_bracketopt_load(gpointer instance, GVariant *state, GError **error)
{
  BracketOpt *self = instance;
  if (!opt_state_check(state, error))
    return FALSE;
  g_autoptr(GVariant) rng = opt_state_lookup(state, "rng", G_VARIANT_TYPE("(tttt)"), error);
  SieveRng restored;
  if (rng == NULL || !sieve_rng_load(&restored, rng, error))
    return FALSE;
  /* All or nothing: BOHB's data is read into a temporary and checked
   * before the brackets (which replace theirs only on success) are loaded;
   * everything is kept only when all parts have loaded. */
  g_autoptr(GVariant) fid = NULL;
  OptTpeData data;
  opt_tpe_data_init(&data, self->space);
  gboolean ok = TRUE;
  if (self->method == OPT_BRACKETS_BOHB) {
    ok = (fid = opt_state_lookup(state, "fidelity", G_VARIANT_TYPE("ad"), error)) != NULL &&
         opt_tpe_data_load(&data, state, "", error);
    if (ok && g_variant_n_children(fid) != opt_tpe_data_size(&data)) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "the state has %zu fidelities for %u results",
                  g_variant_n_children(fid), opt_tpe_data_size(&data));
      ok = FALSE;
    }
  }
  if (ok)
    ok = opt_brackets_load(&self->brackets, state, error);
  if (ok && fid != NULL) {
    OptTpeData old = self->data;
    self->data = data;
    data = old; /* freed below */
    gsize n = 0;
    const double *v = g_variant_get_fixed_array(fid, &n, sizeof(double));
    g_array_set_size(self->data_fidelity, 0);
    g_array_append_vals(self->data_fidelity, v, (guint) n);
  }
  opt_tpe_data_clear(&data);
  if (ok)
    self->rng = restored;
  return ok;
}
