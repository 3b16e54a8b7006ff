/* sieve plugin: asynchronous successive halving (ASHA; Li, Jamieson,
 * Rostamizadeh, Gonina, Ben-tzur, Hardt, Recht & Talwalkar, "A System for
 * Massively Parallel Hyperparameter Tuning", MLSys 2020, Algorithm 2).
 *
 * Rungs k = 0..K at fidelity max eta^(k-K) (the top rung is the full
 * fidelity, the bottom one at least min_fidelity; K = floor(log_eta(max /
 * min))).  Every ask is the paper's get_job(): from the rung below the top
 * down to rung 0, the first configuration that is among the best
 * floor(n_k / eta) of the n_k finished results of its rung and was not
 * promoted yet goes up one rung; when none can, a new random configuration
 * starts at rung 0 (at its bracket's first rung, below).  So no rung ever waits for a rung to fill: a worker is
 * never idle, and a result promotes as soon as it ranks in its rung's top
 * 1/eta (early stopping rate s = 0, as the paper's experiments use).
 *
 * Asynchronous Hyperband (`brackets: B`, the variant the same paper runs):
 * B brackets of ASHA with early-stopping rates s = 0 .. B-1, bracket s
 * starting its configurations at rung s.  Each bracket ranks only its own
 * results.  New configurations go to the brackets in a loop, as
 * Hyperband's (Li et al., JMLR 2018) brackets follow each other: the next
 * n_s to bracket s, with Hyperband's n_s = ceil((K + 1) eta^(K-s) /
 * (K - s + 1)), most aggressive first, so one pass of the loop starts the
 * configurations of one Hyperband iteration.  A promotion in any bracket
 * goes before a new configuration.  The loop's position is not state of
 * its own: it is the number of configurations started so far.
 *
 * Results: a failed or pruned trial ranks below every finished one (a
 * pruned trial's last value was measured below its rung's fidelity, so it
 * is no evidence at that rung); ties keep the earlier result first.  A
 * configuration the pipeline never trained at its first rung (screened out
 * by the zero-cost proxies, or rejected by a constraint) is no result of
 * that rung at all: it is withdrawn, and does not count in n_k (the model
 * still reads it, as the worst: the screen or a constraint said no there).
 * Counted as the worst of rung 0, screened configurations would scale
 * every promotion up by 1/keep_fraction (a screen keeping 1/4 under eta 4
 * would promote every configuration it let through).  It still counts as
 * started (it had its place in the brackets' loop) and is never drawn again.
 * A promotion the constraints reject (promotions skip the screen) is a
 * result of -inf at its rung, as in the synchronous brackets.
 *
 * New configurations (`sampler`): random draws, as random search's, or
 * (`tpe`) a multivariate TPE with BOHB's settings (Falkner, Klein &
 * Hutter, "BOHB: Robust and Efficient Hyperparameter Optimization at
 * Scale", ICML 2018; ../common/bohb-model.h), a random_fraction of the
 * draws staying random, fitted (`model`) on
 *   reached (the default): every configuration once, ranked by the
 *     highest rung where it has a result, then by its value there, as
 *     Optuna's TPESampler ranks the trials its SuccessiveHalvingPruner
 *     stopped: the good group is what climbed furthest and did best
 *     there, every rung's evidence kept;
 *   highest_rung: BOHB's rule, the results of the highest rung with at
 *     least n_min of them (ASHA's top rung holds only promoted
 *     configurations: once it fills, that model splits good from slightly
 *     less good and never sees what failed below).
 * Until the model has n_min = decisions + 1 results (configurations for
 * reached), every draw is sampler: random's, the same configurations.  It
 * reads the results by the same rules as the promotions (a pruned or
 * failed trial at -inf, in the worse group; under reached, a promotion's
 * leaves its configuration at the rung below), and a withdrawn configuration
 * at -inf too (the promotions leave it out), in ask order (Optuna's trial
 * order: the TPE's weights favour the later ones); the model is fitted
 * again at each draw from the entries, so the saved entries and rng are
 * its whole state and a resumed study draws exactly what the
 * uninterrupted one would.
 */
#include <math.h>
#include <string.h>

#include <sieve/component.h>
#include <sieve/optimizer.h>
#include <sieve/options.h>
#include <sieve/plugin.h>
#include <sieve/result.h>
#include <sieve/rng.h>
#include <sieve/space.h>

#include "bohb-model.h"
#include "brackets.h"
#include "optcommon.h"

static const char *const sampler_names[] = {"random", "tpe", NULL};
static const char *const model_names[] = {"reached", "highest_rung", NULL};

static const SieveOptionSpec asha_options[] = {
  OPT_BRACKET_OPTIONS,
  SIEVE_OPTION_INT("brackets", "1", 1, 64,
                   "asynchronous Hyperband: brackets of ASHA starting at rungs 0 .. brackets-1, new "
                   "configurations given to them in Hyperband's proportions (1: plain ASHA)"),
  SIEVE_OPTION_CHOICE("sampler", "random", sampler_names,
                      "how a new configuration is drawn: random: uniformly, as random search does; tpe: from a "
                      "multivariate TPE with BOHB's settings (Falkner et al. 2018) fitted on the results `model` "
                      "names (random until it has min_points of them), random_fraction of the draws staying "
                      "random; the six options below apply with tpe only"),
  SIEVE_OPTION_CHOICE("model", "reached", model_names,
                      "the results the TPE is fitted on: reached: every configuration once, ranked by the highest "
                      "rung it reached, then by its value there (as Optuna's TPESampler ranks the trials an ASHA "
                      "pruner stopped); highest_rung: BOHB's rule, the results of the highest rung that has "
                      "min_points of them"),
  OPT_BOHB_MODEL_OPTIONS,
  SIEVE_OPTION_END,
};

typedef struct {
  SieveGenotype *genotype;
  guint bracket;     /* its early-stopping rate: the rung it started at */
  guint rung;
  gboolean done;     /* its result came */
  double fitness;    /* larger is better; -INFINITY when it failed; NAN once done: withdrawn */
  gboolean promoted; /* a copy went up a rung */
} Entry;

/* A configuration told as never trained (screened, rejected): no result of
 * its rung.  Saved as done with a NAN fitness (a state saved before this
 * rule holds -INFINITY for them, and keeps counting them). */
static gboolean
entry_withdrawn(const Entry *e)
{
  return e->done && isnan(e->fitness);
}

typedef struct {
  const SieveSpace *space;
  SieveRng rng;
  double eta;
  guint top;          /* K: the top rung */
  double *fidelity;   /* top + 1 rungs */
  guint brackets;     /* B */
  guint *loop;        /* B: new configurations bracket s takes per pass */
  guint loop_length;  /* their sum */
  GPtrArray *entries; /* Entry*, in ask order */
  GHashTable *index;  /* opt_key(text, fidelity) -> Entry* of a pending one */
  OptSeen seen;       /* configurations started (each once, in one bracket) */
  gboolean tpe;       /* sampler: tpe */
  gboolean reached;   /* its model: reached (else highest_rung) */
  gboolean model_set; /* the experiment names the model (else a resumed state's model stays) */
  OptBohbModel model; /* its settings */
} Asha;

static void
entry_free(Entry *e)
{
  sieve_genotype_free(e->genotype);
  g_free(e);
}

static void
asha_destroy(gpointer instance)
{
  Asha *self = instance;
  if (self == NULL)
    return;
  g_clear_pointer(&self->index, g_hash_table_unref);
  g_clear_pointer(&self->entries, g_ptr_array_unref);
  if (self->seen.set)
    opt_seen_clear(&self->seen);
  g_free(self->fidelity);
  g_free(self->loop);
  g_free(self);
}

static gpointer
asha_create(const SieveSpace *space, const SieveOptions *options, const SieveStudyInfo *study, GError **error)
{
  if (!opt_one_objective(study, "it ranks candidates", error))
    return NULL;
  /* The rungs as Hyperband's brackets validate and space them (eta,
   * min_fidelity against the evaluator's fidelity). */
  OptBrackets rungs;
  if (!opt_brackets_init(&rungs, space, study, options, TRUE, "asha", error))
    return NULL;
  double eta = rungs.eta, min = rungs.min_fidelity, max = rungs.max_fidelity;
  gboolean integer = rungs.integer;
  guint levels = rungs.s_max;
  opt_brackets_clear(&rungs);
  guint brackets = (guint) sieve_options_get_int(options, "brackets");
  if (brackets > levels + 1) {
    sieve_options_set_error(options, "brackets", error,
                            "brackets %u is more than the %u rungs of the fidelity range [%g, %g] with eta = %g "
                            "(one bracket can start at each rung; one starting at the top rung is random search)",
                            brackets, levels + 1, min, max, eta);
    return NULL;
  }
  gboolean tpe = strcmp(sieve_options_get_string(options, "sampler"), "tpe") == 0;
  /* The model and its options mean nothing to random draws: a mistake. */
  if (!tpe && sieve_options_is_set(options, "model")) {
    sieve_options_set_error(options, "model", error, "model applies only to sampler: tpe, and the sampler is random");
    return NULL;
  }
  for (guint i = 0; !tpe && opt_bohb_model_option_names[i] != NULL; i++)
    if (sieve_options_is_set(options, opt_bohb_model_option_names[i])) {
      sieve_options_set_error(options, opt_bohb_model_option_names[i], error,
                              "%s applies only to the model of sampler: tpe, and the sampler is random",
                              opt_bohb_model_option_names[i]);
      return NULL;
    }
  Asha *self = g_new0(Asha, 1);
  self->space = space;
  self->tpe = tpe;
  self->reached = strcmp(sieve_options_get_string(options, "model"), "reached") == 0;
  self->model_set = sieve_options_is_set(options, "model");
  if (tpe)
    opt_bohb_model_init(&self->model, space, options);
  sieve_rng_seed(&self->rng, study->seed);
  self->eta = eta;
  self->top = levels;
  self->fidelity = g_new(double, self->top + 1);
  for (guint k = 0; k <= self->top; k++) {
    double r = max * pow(eta, (double) k - (double) self->top);
    if (integer)
      r = round(r);
    self->fidelity[k] = k == self->top ? max : CLAMP(r, min, max);
  }
  self->brackets = brackets;
  self->loop = g_new(guint, brackets);
  for (guint s = 0; s < brackets; s++) {
    /* Hyperband's bracket with top - s rungs above its first (levels is at
     * most log_eta(10^6), so this fits). */
    guint above = self->top - s;
    self->loop[s] = (guint) ceil((double) (self->top + 1) * pow(eta, above) / (above + 1) - 1e-9);
    self->loop_length += self->loop[s];
  }
  self->entries = g_ptr_array_new_with_free_func((GDestroyNotify) entry_free);
  self->index = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  opt_seen_init(&self->seen, space);
  return self;
}

static Entry *
add_entry(Asha *self, SieveGenotype *genotype, guint bracket, guint rung)
{
  Entry *e = g_new0(Entry, 1);
  e->genotype = genotype;
  e->bracket = bracket;
  e->rung = rung;
  e->fitness = NAN;
  g_ptr_array_add(self->entries, e);
  g_autofree char *text = sieve_space_format(self->space, genotype);
  g_hash_table_insert(self->index, opt_key(text, self->fidelity[rung]), e);
  return e;
}

static gint
compare_fitness(gconstpointer a, gconstpointer b)
{
  const Entry *x = *(const Entry *const *) a, *y = *(const Entry *const *) b;
  return (x->fitness < y->fitness) - (x->fitness > y->fitness);
}

/* The promotable configuration of rung k of bracket b: the first not yet
 * promoted among the best floor(n / eta) of its n finished results; NULL
 * when none.  exhausted: no new configuration can start, so a rung whose
 * results are all in (nothing running at or below it in its bracket) will
 * get no more, and keeps at least its best one, as a rung of successive
 * halving that made do with fewer configurations would: a small finite
 * space still reaches the full fidelity. */
static Entry *
promotable(Asha *self, guint b, guint k, gboolean exhausted)
{
  g_autoptr(GPtrArray) done = g_ptr_array_new();
  gboolean settled = exhausted;
  for (guint i = 0; i < self->entries->len; i++) {
    Entry *e = self->entries->pdata[i];
    if (e->bracket == b && e->rung == k && e->done && !entry_withdrawn(e))
      g_ptr_array_add(done, e);
    if (e->bracket == b && e->rung <= k && !e->done)
      settled = FALSE;
  }
  guint keep = (guint) floor(done->len / self->eta + 1e-9);
  if (settled)
    keep = MAX(keep, MIN(done->len, 1));
  if (keep == 0)
    return NULL;
  /* A stable sort: equal fitness keeps the earlier result first. */
  g_ptr_array_sort(done, compare_fitness);
  for (guint i = 0; i < keep; i++) {
    Entry *e = done->pdata[i];
    if (!e->promoted && e->fitness > -INFINITY)
      return e;
  }
  return NULL;
}

/* The bracket the next new configuration goes to: its place in the loop is
 * the number started so far (an entry at its bracket's first rung is a
 * start; one above it a promotion). */
static guint
next_bracket(const Asha *self)
{
  guint64 started = 0;
  for (guint i = 0; i < self->entries->len; i++) {
    const Entry *e = self->entries->pdata[i];
    started += e->rung == e->bracket;
  }
  guint place = (guint) (started % self->loop_length);
  guint s = 0;
  while (place >= self->loop[s])
    place -= self->loop[s++];
  return s;
}

/* A genotype's values, hashed for grouping a configuration's entries
 * (sieve_genotype_equal compares them; every NAN hashes alike). */
static guint
genotype_hash(gconstpointer key)
{
  const SieveGenotype *g = key;
  guint h = 2166136261u;
  for (guint i = 0; i < sieve_genotype_size(g); i++) {
    double v = sieve_genotype_get(g, i);
    guint64 bits = 0;
    if (!isnan(v)) {
      v = v == 0 ? 0 : v; /* -0 as 0 */
      memcpy(&bits, &v, sizeof bits);
    }
    h = (h ^ (guint) bits ^ (guint) (bits >> 32)) * 16777619u;
  }
  return h;
}

static gboolean
genotype_equal(gconstpointer a, gconstpointer b)
{
  return sieve_genotype_equal(a, b);
}

/* model: reached.  One observation per configuration with a result, in
 * the order it started: its tier the highest rung where it has a measured
 * result, its value there (opt_tpe_data_add_ranked), so the TPE's good
 * group is the configurations that climbed furthest and did best there,
 * as Optuna's TPESampler ranks the trials an ASHA pruner (its
 * SuccessiveHalvingPruner) stopped: every rung's evidence counts, and a
 * configuration stopped low stays in the bad group.  A promotion that
 * failed, was rejected or pruned is no evidence at its rung (as Optuna's
 * TPESampler leaves failed trials out): the configuration keeps the rung
 * below and its value there.  One with no measured result at all (failed,
 * pruned, or withdrawn at its first rung) ranks with the failed.  Returns
 * the observations' count. */
static guint
reached_data(Asha *self, OptTpeData *data)
{
  g_autoptr(GHashTable) slot = g_hash_table_new(genotype_hash, genotype_equal);
  g_autoptr(GArray) tier = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) fitness = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GPtrArray) genotypes = g_ptr_array_new();
  for (guint i = 0; i < self->entries->len; i++) {
    const Entry *e = self->entries->pdata[i];
    if (!e->done)
      continue;
    gboolean measured = !entry_withdrawn(e) && e->fitness > -INFINITY;
    double t = measured ? (double) e->rung : -INFINITY, f = measured ? e->fitness : -INFINITY;
    gpointer at;
    if (g_hash_table_lookup_extended(slot, e->genotype, NULL, &at)) {
      guint j = GPOINTER_TO_UINT(at);
      if (t > g_array_index(tier, double, j)) {
        g_array_index(tier, double, j) = t;
        g_array_index(fitness, double, j) = f;
      }
      continue;
    }
    g_hash_table_insert(slot, e->genotype, GUINT_TO_POINTER(genotypes->len));
    g_ptr_array_add(genotypes, e->genotype);
    g_array_append_val(tier, t);
    g_array_append_val(fitness, f);
  }
  for (guint j = 0; j < genotypes->len; j++)
    opt_tpe_data_add_ranked(data, genotypes->pdata[j], g_array_index(fitness, double, j),
                            g_array_index(tier, double, j));
  return genotypes->len;
}

/* A new configuration not started yet, or NULL when the space has none
 * left: random, or from a TPE of the finished results (model: reached,
 * above, or highest_rung: BOHB's model, every bracket's results by rung
 * fidelity, in ask order).  (transfer full) (nullable) */
static SieveGenotype *
draw(Asha *self)
{
  if (!self->tpe)
    return opt_sample_unseen(self->space, &self->seen, &self->rng, OPT_RANDOM_TRIES);
  OptTpeData data;
  opt_tpe_data_init(&data, self->space);
  g_autoptr(GArray) fidelity = g_array_new(FALSE, FALSE, sizeof(double));
  gboolean ready;
  double at = NAN;
  if (self->reached) {
    ready = reached_data(self, &data) >= self->model.min_points;
  } else {
    for (guint i = 0; i < self->entries->len; i++) {
      const Entry *e = self->entries->pdata[i];
      if (!e->done)
        continue;
      /* a withdrawn one, as the worst: where the screen or a constraint said no */
      opt_tpe_data_add(&data, e->genotype, entry_withdrawn(e) ? -INFINITY : e->fitness);
      g_array_append_val(fidelity, self->fidelity[e->rung]);
    }
    at = opt_bohb_model_fidelity(&self->model, &data, (const double *) fidelity->data);
    ready = !isnan(at);
  }
  SieveGenotype *g = NULL;
  /* The coin only once the model has enough results, as HpBandSter's
   * get_config does (Falkner et al.'s implementation): until then the
   * draws, rng and all, are sampler: random's. */
  if (ready && sieve_rng_uniform(&self->rng) >= self->model.random_fraction)
    g = self->reached ? opt_tpe_suggest(self->space, &data, &self->model.tpe, &self->rng, &self->seen)
                      : opt_bohb_model_suggest(&self->model, self->space, &data, (const double *) fidelity->data,
                                               at, &self->rng, &self->seen);
  opt_tpe_data_clear(&data);
  if (g == NULL)
    g = opt_sample_unseen(self->space, &self->seen, &self->rng, OPT_RANDOM_TRIES);
  return g;
}

/* A promotion in any bracket, from the rung below the top down. */
static Entry *
next_promotion(Asha *self, gboolean exhausted)
{
  Entry *up = NULL;
  for (guint b = 0; b < self->brackets && up == NULL; b++)
    for (guint k = self->top; k-- > b && up == NULL;)
      up = promotable(self, b, k, exhausted);
  return up;
}

static gboolean
asha_ask(gpointer instance, guint n, GPtrArray *out, GError **error)
{
  Asha *self = instance;
  gboolean exhausted = FALSE;
  for (guint i = 0; i < n; i++) {
    Entry *up = next_promotion(self, exhausted);
    g_autoptr(SieveGenotype) g = NULL;
    if (up == NULL && !exhausted) {
      g = draw(self);
      /* NULL: a finite space, every configuration started */
      exhausted = g == NULL;
      if (exhausted)
        up = next_promotion(self, exhausted);
    }
    if (up != NULL) {
      up->promoted = TRUE;
      Entry *e = add_entry(self, sieve_genotype_copy(up->genotype), up->bracket, up->rung + 1);
      g_ptr_array_add(out, sieve_candidate_new(sieve_genotype_copy(e->genotype), self->fidelity[e->rung]));
      continue;
    }
    if (g == NULL)
      break;
    g_autofree char *text = sieve_space_format(self->space, g);
    opt_seen_add(&self->seen, text, g);
    guint b = next_bracket(self);
    Entry *e = add_entry(self, sieve_genotype_copy(g), b, b);
    g_ptr_array_add(out, sieve_candidate_new(sieve_genotype_copy(e->genotype), self->fidelity[b]));
  }
  return TRUE; /* fewer than n: no promotion until results come, or none at all (see sieve/optimizer.h) */
}

static gboolean
asha_tell(gpointer instance, const SieveCandidate *candidate, const SieveResult *result, const double *objectives,
          GError **error)
{
  Asha *self = instance;
  g_autofree char *key = opt_key(sieve_candidate_get_text(candidate), sieve_candidate_get_fidelity(candidate));
  Entry *e = g_hash_table_lookup(self->index, key);
  if (e == NULL)
    return TRUE; /* not one of ours (a resumed study's older trials) */
  g_hash_table_remove(self->index, key);
  SieveStatus status = sieve_result_get_status(result);
  gboolean measured = status == SIEVE_STATUS_OK || status == SIEVE_STATUS_CACHED;
  gboolean untrained = (status == SIEVE_STATUS_SCREENED || status == SIEVE_STATUS_REJECTED) && e->rung == e->bracket;
  e->done = TRUE;
  e->fitness = measured ? opt_fitness(objectives[0]) : untrained ? NAN : -INFINITY;
  return TRUE;
}

/* State: {"rng": (tttt), "seen": ay, "entries": a(uadbdb)} (rung, values,
 * done, fitness, promoted), in ask order, and "brackets": au, each entry's
 * bracket (absent from states saved before brackets existed: all 0), and
 * with sampler: tpe "model": s (absent from states saved before the
 * option: the model was highest_rung). */
static GVariant *
asha_save(gpointer instance, GError **error)
{
  Asha *self = instance;
  GVariantBuilder entries, brackets;
  g_variant_builder_init(&entries, G_VARIANT_TYPE("a(uadbdb)"));
  g_variant_builder_init(&brackets, G_VARIANT_TYPE("au"));
  for (guint i = 0; i < self->entries->len; i++) {
    const Entry *e = self->entries->pdata[i];
    g_variant_builder_add(&entries, "(u@adbdb)", e->rung, opt_genotype_save(e->genotype), e->done, e->fitness,
                          e->promoted);
    g_variant_builder_add(&brackets, "u", e->bracket);
  }
  GVariantDict dict;
  g_variant_dict_init(&dict, NULL);
  g_variant_dict_insert_value(&dict, "rng", sieve_rng_save(&self->rng));
  g_variant_dict_insert_value(&dict, "seen", opt_seen_save(&self->seen));
  g_variant_dict_insert_value(&dict, "entries", g_variant_builder_end(&entries));
  g_variant_dict_insert_value(&dict, "brackets", g_variant_builder_end(&brackets));
  if (self->tpe)
    g_variant_dict_insert_value(&dict, "model", g_variant_new_string(self->reached ? "reached" : "highest_rung"));
  return g_variant_dict_end(&dict);
}

static gboolean
asha_load(gpointer instance, GVariant *state, GError **error)
{
  Asha *self = instance;
  if (!opt_state_check(state, error))
    return FALSE;
  g_autoptr(GVariant) rng = opt_state_lookup(state, "rng", G_VARIANT_TYPE("(tttt)"), error);
  g_autoptr(GVariant) seen = rng ? opt_texts_lookup(state, "seen", error) : NULL;
  g_autoptr(GVariant) entries = seen ? opt_state_lookup(state, "entries", G_VARIANT_TYPE("a(uadbdb)"), error) : NULL;
  if (entries == NULL)
    return FALSE;
  /* Absent: a state from before brackets; present, it must be right. */
  g_autoptr(GVariant) any_brackets = g_variant_lookup_value(state, "brackets", NULL);
  g_autoptr(GVariant) brackets = NULL;
  if (any_brackets != NULL && (brackets = opt_state_lookup(state, "brackets", G_VARIANT_TYPE("au"), error)) == NULL)
    return FALSE;
  gsize n_brackets = 0;
  const guint32 *bracket = brackets ? g_variant_get_fixed_array(brackets, &n_brackets, sizeof(guint32)) : NULL;
  if (brackets != NULL && n_brackets != g_variant_n_children(entries)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "asha state: %" G_GSIZE_FORMAT " brackets for %" G_GSIZE_FORMAT
                " entries", n_brackets, g_variant_n_children(entries));
    return FALSE;
  }
  /* The model a study began with stays, unless the experiment names one:
   * a study from before the option (BOHB's rule, then the only model) goes
   * on with it, and naming another is refused, not silently switched. */
  gboolean reached = self->reached;
  if (self->tpe) {
    g_autoptr(GVariant) model = g_variant_lookup_value(state, "model", G_VARIANT_TYPE_STRING);
    const char *was = model ? g_variant_get_string(model, NULL) : "highest_rung";
    gboolean was_reached = strcmp(was, "reached") == 0;
    if (self->model_set && was_reached != self->reached) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                  "asha: this study's model is %s, and the experiment asks for model: %s; a model cannot change "
                  "in the middle of a study (start a new store, or set model: %s)",
                  was, self->reached ? "reached" : "highest_rung", was);
      return FALSE;
    }
    reached = was_reached;
  }
  SieveRng restored;
  if (!sieve_rng_load(&restored, rng, error))
    return FALSE;
  g_autoptr(GPtrArray) loaded = g_ptr_array_new_with_free_func((GDestroyNotify) entry_free);
  for (gsize i = 0; i < g_variant_n_children(entries); i++) {
    guint rung;
    gboolean done, promoted;
    double fitness;
    g_autoptr(GVariant) values = NULL;
    g_variant_get_child(entries, i, "(u@adbdb)", &rung, &values, &done, &fitness, &promoted);
    guint b = bracket ? bracket[i] : 0;
    if (rung > self->top) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "asha state: entry %" G_GSIZE_FORMAT " is at rung %u of %u",
                  i, rung, self->top);
      return FALSE;
    }
    if (b >= self->brackets || rung < b) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE,
                  "asha state: entry %" G_GSIZE_FORMAT " is in bracket %u (of %u) at rung %u", i, b, self->brackets,
                  rung);
      return FALSE;
    }
    SieveGenotype *g = opt_genotype_load(self->space, values, error);
    if (g == NULL)
      return FALSE;
    Entry *e = g_new0(Entry, 1);
    *e = (Entry){g, b, rung, done, fitness, promoted};
    g_ptr_array_add(loaded, e);
  }
  /* seen is the last part that can fail, and leaves self as it was. */
  if (!opt_seen_load(&self->seen, seen, error)) {
    g_prefix_error(error, "asha state: ");
    return FALSE;
  }
  self->rng = restored;
  self->reached = reached;
  g_ptr_array_unref(self->entries);
  self->entries = g_steal_pointer(&loaded);
  g_hash_table_remove_all(self->index);
  for (guint i = 0; i < self->entries->len; i++) {
    Entry *e = self->entries->pdata[i];
    if (!e->done) {
      g_autofree char *text = sieve_space_format(self->space, e->genotype);
      g_hash_table_insert(self->index, opt_key(text, self->fidelity[e->rung]), e);
    }
  }
  return TRUE;
}

static const SieveOptimizerClass asha_class = {
  .create = asha_create,
  .destroy = asha_destroy,
  .ask = asha_ask,
  .tell = asha_tell,
  .save = asha_save,
  .load = asha_load,
};

static const SieveComponentInfo asha_info = {
  .kind = SIEVE_KIND_OPTIMIZER,
  .name = "asha",
  .summary = "asynchronous successive halving: promote a rung's top 1/eta as soon as they finish; with brackets, "
             "asynchronous Hyperband (Li et al. 2020); sampler: tpe draws new ones from a TPE of the rung results",
  .options = asha_options,
  .klass = &asha_class,
};

static gboolean
asha_init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &asha_info, error);
}

SIEVE_PLUGIN_DEFINE("asha", "0.1.0", "Asynchronous successive halving", "MIT", asha_init);
