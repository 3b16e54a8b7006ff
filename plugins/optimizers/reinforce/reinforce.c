/* sieve plugin: REINFORCE (Williams, "Simple statistical gradient-following
 * algorithms for connectionist reinforcement learning", Machine Learning
 * 1992), the policy-gradient baseline of NAS-Bench-201 (Dong & Yang, ICLR
 * 2020, after Zoph & Le 2017's controller without its RNN).
 *
 * The policy is one softmax per decision (categoricals and ints of at most
 * 16 values: one logit per value; wider ints and floats: `bins` equal bins
 * of the (log-)unit interval, a value drawn uniformly in the chosen bin).
 * A proposal samples the decisions in order, so only active ones are drawn;
 * each finished trial updates the logits of its active decisions by
 * lr * A * (onehot(action) - softmax), where the advantage A is the reward
 * minus an exponential moving average baseline (NB201's), divided by a
 * moving estimate of its spread so that lr does not depend on the metric's
 * scale.  Tells may come in any order: each updates the policy it finds.
 * A sampled genotype proposed before is drawn again (a bounded number of
 * times, then a random unseen genotype is taken).
 *
 * A pruned trial's reward is the lowest reward of a finished trial told so
 * far (none before the first): it ranks below every finished trial, as tpe
 * ranks it after Optuna (opt_tier), and its own last value, measured before
 * the full training, is no reward on the finished trials' scale (a value
 * that looks good early must not draw the policy its way).
 */
#include <math.h>
#include <string.h>

#include <sieve/abi.h>
#include <sieve/candidate.h>
#include <sieve/component.h>
#include <sieve/optimizer.h>
#include <sieve/options.h>
#include <sieve/plugin.h>
#include <sieve/result.h>
#include <sieve/rng.h>
#include <sieve/space.h>

#include "optcommon.h"

static const SieveOptionSpec reinforce_options[] = {
  SIEVE_OPTION_FLOAT("lr", "0.5", 1e-6, 100, "step size of the policy gradient (on normalised advantages)"),
  SIEVE_OPTION_FLOAT("baseline_decay", "0.9", 0, 0.9999, "decay of the moving-average reward baseline"),
  SIEVE_OPTION_INT("bins", "10", 2, 1000, "bins of a float or wide int decision"),
  SIEVE_OPTION_END,
};

#define MAX_POLICY_TRIES 100
/* Half of sqrt(DBL_MAX): with a reward and the baseline (an average of
 * rewards) within it, an advantage squared stays finite. */
#define MAX_REWARD 6.7e153

typedef struct {
  const SieveSpace *space;
  SieveRng rng;
  double lr, decay;
  guint bins;
  guint D;
  guint *width;  /* actions of each decision */
  guint *offset; /* its first logit */
  GArray *logits;
  double baseline, spread; /* moving mean of rewards and of squared advantages */
  guint64 rewards;
  double lowest; /* the lowest finished reward (a pruned trial's), +INFINITY before one */
  double space_size;
  OptSeen seen;
} Reinforce;

static guint
action_count(const SieveDecision *d, guint bins)
{
  if (d->kind == SIEVE_DECISION_CATEGORICAL)
    return d->n_choices;
  if (d->kind == SIEVE_DECISION_INT && d->high - d->low + 1 <= 16)
    return (guint) (d->high - d->low + 1);
  return bins;
}

static void
reinforce_destroy(gpointer instance)
{
  Reinforce *self = instance;
  if (self == NULL)
    return;
  g_free(self->width);
  g_free(self->offset);
  g_clear_pointer(&self->logits, g_array_unref);
  opt_seen_clear(&self->seen);
  g_free(self);
}

static gpointer
reinforce_create(const SieveSpace *space, const SieveOptions *options, const SieveStudyInfo *study, GError **error)
{
  if (!opt_one_objective(study, "it ranks candidates", error))
    return NULL;
  Reinforce *self = g_new0(Reinforce, 1);
  self->space = space;
  sieve_rng_seed(&self->rng, study->seed);
  self->lowest = INFINITY;
  self->lr = sieve_options_get_double(options, "lr");
  self->decay = sieve_options_get_double(options, "baseline_decay");
  self->bins = (guint) sieve_options_get_int(options, "bins");
  self->D = sieve_space_n_decisions(space);
  self->width = g_new(guint, self->D);
  self->offset = g_new(guint, self->D);
  guint total = 0;
  for (guint d = 0; d < self->D; d++) {
    self->offset[d] = total;
    total += self->width[d] = action_count(sieve_space_decision(space, d), self->bins);
  }
  self->logits = g_array_sized_new(FALSE, TRUE, sizeof(double), total);
  g_array_set_size(self->logits, total);
  self->space_size = sieve_space_size(space);
  opt_seen_init(&self->seen, space);
  return self;
}

static void
softmax(const double *logits, guint n, double *out)
{
  double top = logits[0];
  for (guint i = 1; i < n; i++)
    top = MAX(top, logits[i]);
  double sum = 0;
  for (guint i = 0; i < n; i++)
    sum += out[i] = exp(logits[i] - top);
  for (guint i = 0; i < n; i++)
    out[i] /= sum;
}

static SieveGenotype *
policy_sample(Reinforce *self)
{
  SieveGenotype *g = sieve_genotype_new(self->space);
  for (guint d = 0; d < self->D; d++) {
    if (!sieve_space_is_active(self->space, g, d))
      continue;
    const SieveDecision *dec = sieve_space_decision(self->space, d);
    guint w = self->width[d];
    double p[w];
    softmax(&g_array_index(self->logits, double, self->offset[d]), w, p);
    double u = sieve_rng_uniform(&self->rng), acc = 0;
    guint a = w - 1;
    for (guint i = 0; i + 1 < w; i++) {
      acc += p[i];
      if (u < acc) {
        a = i;
        break;
      }
    }
    double v;
    if (dec->kind == SIEVE_DECISION_CATEGORICAL)
      v = a;
    else if (dec->kind == SIEVE_DECISION_INT && dec->high - dec->low + 1 <= 16)
      v = dec->low + a;
    else
      v = opt_from_unit(dec, (a + sieve_rng_uniform(&self->rng)) / w);
    sieve_genotype_set(g, d, v);
  }
  return g;
}

/* The action that produced value v of decision d. */
static guint
action_of(const Reinforce *self, guint d, double v)
{
  const SieveDecision *dec = sieve_space_decision(self->space, d);
  if (dec->kind == SIEVE_DECISION_CATEGORICAL)
    return (guint) v;
  if (dec->kind == SIEVE_DECISION_INT && dec->high - dec->low + 1 <= 16)
    return (guint) (v - dec->low);
  guint a = (guint) floor(opt_to_unit(dec, v) * self->width[d]);
  return MIN(a, self->width[d] - 1);
}

static gboolean
reinforce_ask(gpointer instance, guint n, GPtrArray *out, GError **error)
{
  Reinforce *self = instance;
  for (guint k = 0; k < n && opt_seen_size(&self->seen) < self->space_size; k++) {
    SieveGenotype *g = NULL;
    for (guint t = 0; t < MAX_POLICY_TRIES && g == NULL; t++) {
      g = policy_sample(self);
      if (opt_seen_has_genotype(&self->seen, g) || !opt_member(self->space, g))
        g_clear_pointer(&g, sieve_genotype_free);
    }
    if (opt_propose(out, &self->seen, self->space, &self->rng, g) == NULL)
      break;
  }
  return TRUE; /* fewer than n only when no unproposed genotype is left */
}

static gboolean
reinforce_tell(gpointer instance, const SieveCandidate *candidate, const SieveResult *result,
               const double *objectives, GError **error)
{
  Reinforce *self = instance;
  double r = objectives[0];
  /* A failed trial carries no reward to learn from; nor does one beyond
   * MAX_REWARD (a -DBL_MAX penalty): its advantage squared would make the
   * spread infinite and every later step zero, and as the first reward,
   * the baseline, it would do that to every reward after it. */
  if (sieve_result_get_status(result) == SIEVE_STATUS_PRUNED)
    r = self->lowest; /* +INFINITY before a finished one: no reward yet */
  if (!isfinite(r) || fabs(r) > MAX_REWARD)
    return TRUE;
  self->lowest = MIN(self->lowest, r);
  if (self->rewards++ == 0) {
    self->baseline = r;
    return TRUE;
  }
  double advantage = r - self->baseline;
  self->spread = self->rewards == 2 ? advantage * advantage
                                    : self->decay * self->spread + (1 - self->decay) * advantage * advantage;
  self->baseline = self->decay * self->baseline + (1 - self->decay) * r;
  double step = self->lr * advantage / (sqrt(self->spread) + 1e-12);
  const SieveGenotype *g = sieve_candidate_get_genotype(candidate);
  for (guint d = 0; d < self->D; d++) {
    double v = sieve_genotype_get(g, d);
    if (isnan(v))
      continue;
    guint w = self->width[d], a = action_of(self, d, v);
    double *logits = &g_array_index(self->logits, double, self->offset[d]);
    double p[w];
    softmax(logits, w, p);
    for (guint i = 0; i < w; i++)
      logits[i] += step * ((i == a ? 1 : 0) - p[i]);
  }
  return TRUE;
}

/* State: {"rng", "seen": ay, "logits": ad, "baseline": d, "spread": d, "rewards": t, "lowest": d} */
static GVariant *
reinforce_save(gpointer instance, GError **error)
{
  Reinforce *self = instance;
  GVariantDict dict;
  g_variant_dict_init(&dict, NULL);
  g_variant_dict_insert_value(&dict, "rng", sieve_rng_save(&self->rng));
  g_variant_dict_insert_value(&dict, "seen", opt_seen_save(&self->seen));
  g_variant_dict_insert_value(&dict, "logits", opt_array_new(G_VARIANT_TYPE_DOUBLE, self->logits->data,
                                                                         self->logits->len, sizeof(double)));
  g_variant_dict_insert_value(&dict, "baseline", g_variant_new_double(self->baseline));
  g_variant_dict_insert_value(&dict, "spread", g_variant_new_double(self->spread));
  g_variant_dict_insert_value(&dict, "rewards", g_variant_new_uint64(self->rewards));
  g_variant_dict_insert_value(&dict, "lowest", g_variant_new_double(self->lowest));
  return g_variant_dict_end(&dict);
}

static gboolean
reinforce_load(gpointer instance, GVariant *state, GError **error)
{
  Reinforce *self = instance;
  if (!opt_state_check(state, error))
    return FALSE;
  g_autoptr(GVariant) rng = opt_state_lookup(state, "rng", G_VARIANT_TYPE("(tttt)"), error);
  g_autoptr(GVariant) seen = rng ? opt_texts_lookup(state, "seen", error) : NULL;
  g_autoptr(GVariant) logits = seen ? opt_state_lookup(state, "logits", G_VARIANT_TYPE("ad"), error) : NULL;
  g_autoptr(GVariant) baseline = logits ? opt_state_lookup(state, "baseline", G_VARIANT_TYPE_DOUBLE, error) : NULL;
  g_autoptr(GVariant) spread = baseline ? opt_state_lookup(state, "spread", G_VARIANT_TYPE_DOUBLE, error) : NULL;
  g_autoptr(GVariant) rewards = spread ? opt_state_lookup(state, "rewards", G_VARIANT_TYPE_UINT64, error) : NULL;
  if (rewards == NULL)
    return FALSE;
  gsize n = 0;
  const double *v = g_variant_get_fixed_array(logits, &n, sizeof(double));
  if (n != self->logits->len) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "the state has %zu logits, the policy %u", n,
                self->logits->len);
    return FALSE;
  }
  /* All or nothing: the rng into a temporary, seen last (it is). */
  SieveRng restored;
  if (!sieve_rng_load(&restored, rng, error) || !opt_seen_load(&self->seen, seen, error))
    return FALSE;
  self->rng = restored;
  memcpy(self->logits->data, v, n * sizeof(double));
  self->baseline = g_variant_get_double(baseline);
  self->spread = g_variant_get_double(spread);
  self->rewards = g_variant_get_uint64(rewards);
  /* Absent from states saved before pruned trials had a reward: pruned
   * trials are skipped (no reward) until a finished one is told, and the
   * lowest counts from then on. */
  g_autoptr(GVariant) lowest = g_variant_lookup_value(state, "lowest", G_VARIANT_TYPE_DOUBLE);
  self->lowest = lowest && !isnan(g_variant_get_double(lowest)) ? g_variant_get_double(lowest) : INFINITY;
  return TRUE;
}

static const SieveOptimizerClass reinforce_class = {
  .create = reinforce_create,
  .destroy = reinforce_destroy,
  .ask = reinforce_ask,
  .tell = reinforce_tell,
  .save = reinforce_save,
  .load = reinforce_load,
};

static const SieveComponentInfo reinforce_info = {
  .kind = SIEVE_KIND_OPTIMIZER,
  .name = "reinforce",
  .summary = "REINFORCE policy gradient over independent softmax policies per decision (NB201's baseline)",
  .options = reinforce_options,
  .klass = &reinforce_class,
};

static gboolean
reinforce_init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &reinforce_info, error);
}

SIEVE_PLUGIN_DEFINE("reinforce", "0.1.0", "REINFORCE", "MIT", reinforce_init);
