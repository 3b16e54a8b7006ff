/* sieve plugin: local search as White, Nolen & Savani study it for NAS
 * ("Exploring the Loss Landscape in Neural Architecture Search", UAI 2021;
 * first as "Local Search is State of the Art for NAS Benchmarks", 2020):
 * evaluate `initial` random genotypes and climb from the best; a step
 * evaluates the one-decision neighbourhood of the current genotype (every
 * other value of each active categorical, a few Gaussian steps of each
 * numeric decision) and moves to its best member if that beats the current
 * one; at a local optimum the climb restarts from a new random genotype.
 * With first_improvement the climb moves as soon as a better neighbour is
 * known.
 *
 * Genotypes evaluated before are never proposed again: their values, known
 * from earlier trials, take part in each step's comparison as they are.
 *
 * Asynchronous use: when every neighbour has been proposed but some are
 * still pending, the climb moves to the best finished neighbour if it is
 * already better (a step taken early); otherwise the proposal is a random
 * genotype, kept as a starting point for the next restart, so ask() never
 * waits.  With one worker the method is exactly the sequential algorithm.
 *
 * A neighbour rejected by a constraint (status REJECTED, NAN objective)
 * counts as the worst value: never a step, so the climb stays inside the
 * feasible region; a random start that breaks one is followed by another.
 * A pruned one (status PRUNED) ranks below every finished genotype, among
 * the pruned by the step it reached, then its last value (opt_tier, the
 * order tpe takes from Optuna): its value was measured before the full
 * training, so a value that looks good early never makes it a step from a
 * finished centre.
 */
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

static const SieveOptionSpec local_search_options[] = {
  SIEVE_OPTION_INT("initial", "10", 1, 1e6, "random genotypes evaluated before the first climb starts from the best"),
  SIEVE_OPTION_INT("numeric_steps", "8", 1, 1e4,
                   "neighbours per int or float decision (Gaussian steps; small ints list every value)"),
  SIEVE_OPTION_BOOL("first_improvement", "false", "move to the first better neighbour instead of the best one"),
  SIEVE_OPTION_END,
};


typedef enum { PHASE_SAMPLING, PHASE_CLIMB } Phase;

typedef struct {
  const SieveSpace *space;
  SieveRng rng;
  guint initial, numeric_steps;
  gboolean first_improvement;
  double space_size;
  OptSeen seen;
  GHashTable *values; /* text (owned by value_order) -> double* fitness */
  GPtrArray *value_order;
  GByteArray *value_packed; /* value_order's texts, each ended by a NUL: what save() writes */
  GArray *value_list; /* double, same order */
  GArray *value_tiers; /* double, opt_tier of each value, same order */
  Phase phase;
  guint need;         /* SAMPLING: finished samples needed before climbing */
  GPtrArray *pool;    /* SieveCandidate* sampled in this phase */
  GPtrArray *spare;   /* SieveCandidate* proposed at random while a step waited */
  SieveGenotype *centre;
  double centre_value, centre_tier;
  GPtrArray *neighbours; /* SieveGenotype* of the centre */
  GPtrArray *neighbour_texts;
  guint pos;             /* next neighbour to propose */
} LocalSearch;

static void
local_search_destroy(gpointer instance)
{
  LocalSearch *self = instance;
  if (self == NULL)
    return;
  opt_seen_clear(&self->seen);
  g_clear_pointer(&self->values, g_hash_table_unref);
  g_clear_pointer(&self->value_order, g_ptr_array_unref);
  g_clear_pointer(&self->value_packed, g_byte_array_unref);
  g_clear_pointer(&self->value_list, g_array_unref);
  g_clear_pointer(&self->value_tiers, g_array_unref);
  g_clear_pointer(&self->pool, g_ptr_array_unref);
  g_clear_pointer(&self->spare, g_ptr_array_unref);
  g_clear_pointer(&self->centre, sieve_genotype_free);
  g_clear_pointer(&self->neighbours, g_ptr_array_unref);
  g_clear_pointer(&self->neighbour_texts, g_ptr_array_unref);
  g_free(self);
}

static gpointer
local_search_create(const SieveSpace *space, const SieveOptions *options, const SieveStudyInfo *study,
                    GError **error)
{
  if (!opt_one_objective(study, "it ranks candidates", error))
    return NULL;
  LocalSearch *self = g_new0(LocalSearch, 1);
  self->space = space;
  sieve_rng_seed(&self->rng, study->seed);
  self->initial = (guint) sieve_options_get_int(options, "initial");
  self->numeric_steps = (guint) sieve_options_get_int(options, "numeric_steps");
  self->first_improvement = sieve_options_get_bool(options, "first_improvement");
  self->space_size = sieve_space_size(space);
  opt_seen_init(&self->seen, space);
  self->values = g_hash_table_new(g_str_hash, g_str_equal);
  self->value_order = g_ptr_array_new_with_free_func(g_free);
  self->value_packed = g_byte_array_new();
  self->value_list = g_array_new(FALSE, FALSE, sizeof(double));
  self->value_tiers = g_array_new(FALSE, FALSE, sizeof(double));
  self->phase = PHASE_SAMPLING;
  self->need = self->initial;
  self->pool = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_candidate_free);
  self->spare = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_candidate_free);
  self->neighbours = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_genotype_free);
  self->neighbour_texts = g_ptr_array_new_with_free_func(g_free);
  return self;
}

static void
record_value(LocalSearch *self, const char *text, double value, double tier)
{
  double *old = g_hash_table_lookup(self->values, text);
  if (old != NULL)
    return; /* a genotype told twice (a resumed pending trial) keeps its first value */
  char *key = g_strdup(text);
  g_ptr_array_add(self->value_order, key);
  g_byte_array_append(self->value_packed, (const guint8 *) key, strlen(key) + 1);
  g_array_append_val(self->value_list, value);
  g_array_append_val(self->value_tiers, tier);
  /* The array may move when it grows: index, not pointer. */
  g_hash_table_insert(self->values, key, GUINT_TO_POINTER(self->value_list->len));
}

static gboolean
lookup_value(LocalSearch *self, const char *text, double *out, double *tier)
{
  guint index = GPOINTER_TO_UINT(g_hash_table_lookup(self->values, text));
  if (index == 0)
    return FALSE;
  *out = g_array_index(self->value_list, double, index - 1);
  *tier = g_array_index(self->value_tiers, double, index - 1);
  return TRUE;
}

static void
set_centre(LocalSearch *self, SieveGenotype *centre, double value, double tier)
{
  g_clear_pointer(&self->centre, sieve_genotype_free);
  self->centre = centre;
  self->centre_value = value;
  self->centre_tier = tier;
  self->phase = PHASE_CLIMB;
  g_ptr_array_unref(self->neighbours);
  self->neighbours = opt_neighbours(self->space, centre, self->numeric_steps, &self->rng);
  g_ptr_array_set_size(self->neighbour_texts, 0);
  for (guint i = 0; i < self->neighbours->len; i++)
    g_ptr_array_add(self->neighbour_texts, sieve_space_format(self->space, self->neighbours->pdata[i]));
  self->pos = 0;
}

/* Random samples and spare proposals left from a wait become the pool of
 * the new sampling phase. */
static void
restart(LocalSearch *self)
{
  self->phase = PHASE_SAMPLING;
  self->need = 1;
  g_ptr_array_set_size(self->pool, 0);
  g_ptr_array_extend_and_steal(self->pool, g_steal_pointer(&self->spare));
  self->spare = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_candidate_free);
}

/* Advance the state machine as far as what is known allows.  Returns FALSE
 * when nothing changed. */
static gboolean
decide(LocalSearch *self)
{
  if (self->phase == PHASE_SAMPLING) {
    guint finished = 0;
    gint best = -1;
    double best_value = -INFINITY, best_tier = -INFINITY, v, t;
    for (guint i = 0; i < self->pool->len; i++)
      if (lookup_value(self, sieve_candidate_get_text(self->pool->pdata[i]), &v, &t)) {
        finished++;
        if (best < 0 || opt_ranks_above(t, v, best_tier, best_value)) {
          best = (gint) i;
          best_value = v;
          best_tier = t;
        }
      }
    if (finished < self->need)
      return FALSE;
    SieveGenotype *g = sieve_genotype_copy(sieve_candidate_get_genotype(self->pool->pdata[best]));
    g_ptr_array_set_size(self->pool, 0);
    set_centre(self, g, best_value, best_tier);
    return TRUE;
  }
  guint finished = 0, pending = 0;
  gint best = -1;
  double best_value = -INFINITY, best_tier = -INFINITY, v, t;
  for (guint i = 0; i < self->neighbours->len; i++) {
    const char *text = self->neighbour_texts->pdata[i];
    if (lookup_value(self, text, &v, &t)) {
      finished++;
      if (best < 0 || opt_ranks_above(t, v, best_tier, best_value)) {
        best = (gint) i;
        best_value = v;
        best_tier = t;
      }
    } else if (i < self->pos || opt_seen_contains(&self->seen, text)) {
      pending++;
    }
  }
  gboolean all_known = finished == self->neighbours->len;
  gboolean all_asked = pending + finished == self->neighbours->len;
  gboolean better = best >= 0 && opt_ranks_above(best_tier, best_value, self->centre_tier, self->centre_value);
  if (better && (self->first_improvement || all_known || all_asked)) {
    /* all_asked but not all_known: an early step, taken rather than wait */
    set_centre(self, sieve_genotype_copy(self->neighbours->pdata[best]), best_value, best_tier);
    return TRUE;
  }
  if (all_known) {
    restart(self); /* a local optimum */
    return TRUE;
  }
  return FALSE;
}

static gboolean
local_search_ask(gpointer instance, guint n, GPtrArray *out, GError **error)
{
  LocalSearch *self = instance;
  guint added = 0;
  while (added < n && opt_seen_size(&self->seen) < self->space_size) {
    /* Each change either moves to a strictly better centre or restarts,
     * so this settles. */
    while (decide(self))
      ;
    SieveGenotype *g = NULL;
    gboolean spare = FALSE;
    if (self->phase == PHASE_CLIMB) {
      while (self->pos < self->neighbours->len && g == NULL) {
        guint i = self->pos++;
        if (!opt_seen_contains(&self->seen, self->neighbour_texts->pdata[i]))
          g = sieve_genotype_copy(self->neighbours->pdata[i]);
      }
      if (g == NULL) {
        /* Some neighbours are still pending and none finished is better (or
         * decide() would have moved): propose a random genotype for later. */
        if (decide(self))
          continue;
        spare = TRUE;
      }
    }
    SieveCandidate *c = opt_propose(out, &self->seen, self->space, &self->rng, g);
    if (c == NULL)
      break;
    if (self->phase == PHASE_SAMPLING || spare)
      g_ptr_array_add(self->phase == PHASE_SAMPLING ? self->pool : self->spare,
                      sieve_candidate_new(sieve_genotype_copy(sieve_candidate_get_genotype(c)), NAN));
    added++;
  }
  return TRUE; /* fewer than n only when no unproposed genotype is left */
}

static gboolean
local_search_tell(gpointer instance, const SieveCandidate *candidate, const SieveResult *result,
                  const double *objectives, GError **error)
{
  LocalSearch *self = instance;
  double fitness = opt_fitness(objectives[0]);
  record_value(self, sieve_candidate_get_text(candidate), fitness, opt_tier(result, fitness));
  while (decide(self))
    ;
  return TRUE;
}

static GVariant *
texts_of(GPtrArray *candidates)
{
  g_autofree const char **texts = g_new(const char *, candidates->len + 1);
  for (guint i = 0; i < candidates->len; i++)
    texts[i] = sieve_candidate_get_text(candidates->pdata[i]);
  return g_variant_new_strv(texts, candidates->len);
}

/* State: {"rng", "seen": ay, "known": ay (each text ended by a NUL; "as" before 2026-11-27), "values": ad (fitness of known),
 *  "tiers": ad (opt_tier of known), "phase": u, "need": u, "pool": as,
 *  "spare": as, "centre": ad (empty before the first climb), "centre_value":
 *  d, "centre_tier": d, "neighbours": aad, "pos": u} */
static GVariant *
local_search_save(gpointer instance, GError **error)
{
  LocalSearch *self = instance;
  GVariantDict dict;
  g_variant_dict_init(&dict, NULL);
  g_variant_dict_insert_value(&dict, "rng", sieve_rng_save(&self->rng));
  g_variant_dict_insert_value(&dict, "seen", opt_seen_save(&self->seen));
  g_variant_dict_insert_value(&dict, "known",
                              opt_array_new(G_VARIANT_TYPE_BYTE, self->value_packed->data, self->value_packed->len, 1));
  g_variant_dict_insert_value(&dict, "values",
                              opt_array_new(G_VARIANT_TYPE_DOUBLE, self->value_list->data,
                                                        self->value_list->len, sizeof(double)));
  g_variant_dict_insert_value(&dict, "tiers",
                              opt_array_new(G_VARIANT_TYPE_DOUBLE, self->value_tiers->data,
                                                        self->value_tiers->len, sizeof(double)));
  g_variant_dict_insert_value(&dict, "phase", g_variant_new_uint32(self->phase));
  g_variant_dict_insert_value(&dict, "need", g_variant_new_uint32(self->need));
  g_variant_dict_insert_value(&dict, "pool", texts_of(self->pool));
  g_variant_dict_insert_value(&dict, "spare", texts_of(self->spare));
  g_variant_dict_insert_value(&dict, "centre",
                              self->centre ? opt_genotype_save(self->centre)
                                           : opt_array_new(G_VARIANT_TYPE_DOUBLE, NULL, 0, sizeof(double)));
  g_variant_dict_insert_value(&dict, "centre_value", g_variant_new_double(self->centre_value));
  g_variant_dict_insert_value(&dict, "centre_tier", g_variant_new_double(self->centre_tier));
  g_variant_dict_insert_value(&dict, "neighbours", opt_genotypes_save(self->neighbours));
  g_variant_dict_insert_value(&dict, "pos", g_variant_new_uint32(self->pos));
  return g_variant_dict_end(&dict);
}

/* Saved texts back into candidates of the space (a state is input: a text
 * the space cannot read is an error). */
static GPtrArray *
load_candidates(const SieveSpace *space, GVariant *strv, GError **error)
{
  g_autoptr(GPtrArray) loaded = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_candidate_free);
  gsize n = 0;
  g_autofree const char **v = g_variant_get_strv(strv, &n);
  for (gsize i = 0; i < n; i++) {
    SieveGenotype *g = sieve_space_parse(space, v[i], error);
    if (g == NULL)
      return NULL;
    g_ptr_array_add(loaded, sieve_candidate_new(g, NAN));
  }
  return g_steal_pointer(&loaded);
}

static gboolean
local_search_load(gpointer instance, GVariant *state, GError **error)
{
  LocalSearch *self = instance;
  if (!opt_state_check(state, error))
    return FALSE;
  const struct {
    const char *key;
    const char *type;
  } keys[] = {{"rng", "(tttt)"}, {"seen", NULL},  {"known", NULL}, {"values", "ad"},       {"phase", "u"},
              {"need", "u"},     {"pool", "as"},  {"spare", "as"}, {"centre", "ad"},        {"centre_value", "d"},
              {"neighbours", "aad"}, {"pos", "u"}};
  GVariant *v[G_N_ELEMENTS(keys)] = {NULL};
  gboolean ok = TRUE;
  for (guint k = 0; k < G_N_ELEMENTS(keys) && ok; k++)
    ok = (v[k] = keys[k].type ? opt_state_lookup(state, keys[k].key, G_VARIANT_TYPE(keys[k].type), error)
                              : opt_texts_lookup(state, keys[k].key, error)) != NULL; /* NULL type: "ay" or "as" */
  g_autoptr(SieveGenotype) centre = NULL;
  g_autoptr(GPtrArray) neighbours = NULL, pool = NULL, spare = NULL;
  gsize n_known = 0, n_values = 0;
  g_autofree const char **known = NULL;
  if (ok) {
    known = opt_saved_texts(v[2], &n_known, error);
    g_variant_get_fixed_array(v[3], &n_values, sizeof(double));
    if (known == NULL)
      ok = FALSE;
    else if (n_known != n_values) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "the state has %zu known genotypes but %zu values",
                  n_known, n_values);
      ok = FALSE;
    }
  }
  /* Absent from states saved before pruned trials were ranked: every
   * value as finished. */
  g_autoptr(GVariant) tiers = ok ? g_variant_lookup_value(state, "tiers", G_VARIANT_TYPE("ad")) : NULL;
  g_autoptr(GVariant) centre_tier = ok ? g_variant_lookup_value(state, "centre_tier", G_VARIANT_TYPE_DOUBLE) : NULL;
  gsize n_tiers = 0;
  const double *ts = tiers ? g_variant_get_fixed_array(tiers, &n_tiers, sizeof(double)) : NULL;
  if (ok && tiers != NULL && n_tiers != n_values) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "the state has %zu values but %zu tiers", n_values, n_tiers);
    ok = FALSE;
  }
  if (ok && g_variant_n_children(v[8]) > 0)
    ok = (centre = opt_genotype_load(self->space, v[8], error)) != NULL;
  if (ok)
    ok = (neighbours = opt_genotypes_load(self->space, v[10], error)) != NULL;
  SieveRng restored;
  if (ok)
    ok = sieve_rng_load(&restored, v[0], error);
  if (ok)
    ok = (pool = load_candidates(self->space, v[6], error)) != NULL &&
         (spare = load_candidates(self->space, v[7], error)) != NULL;
  if (ok)
    ok = opt_seen_load(&self->seen, v[1], error);
  if (ok) {
    self->rng = restored;
    g_hash_table_remove_all(self->values);
    g_ptr_array_set_size(self->value_order, 0);
    g_byte_array_set_size(self->value_packed, 0);
    g_array_set_size(self->value_list, 0);
    g_array_set_size(self->value_tiers, 0);
    const double *values = g_variant_get_fixed_array(v[3], &n_values, sizeof(double));
    /* a NAN tier (a hand-edited state) ranks with the failed: never unordered */
    for (gsize i = 0; i < n_values; i++)
      record_value(self, known[i], values[i],
                   ts ? opt_fitness(ts[i]) : opt_tier_finished(opt_fitness(values[i])));
    self->phase = g_variant_get_uint32(v[4]) == PHASE_CLIMB ? PHASE_CLIMB : PHASE_SAMPLING;
    self->need = g_variant_get_uint32(v[5]);
    g_ptr_array_unref(self->pool);
    self->pool = g_steal_pointer(&pool);
    g_ptr_array_unref(self->spare);
    self->spare = g_steal_pointer(&spare);
    g_clear_pointer(&self->centre, sieve_genotype_free);
    self->centre = g_steal_pointer(&centre);
    self->centre_value = g_variant_get_double(v[9]);
    self->centre_tier = centre_tier ? opt_fitness(g_variant_get_double(centre_tier))
                                    : opt_tier_finished(opt_fitness(self->centre_value));
    g_ptr_array_unref(self->neighbours);
    self->neighbours = g_steal_pointer(&neighbours);
    g_ptr_array_set_size(self->neighbour_texts, 0);
    for (guint i = 0; i < self->neighbours->len; i++)
      g_ptr_array_add(self->neighbour_texts, sieve_space_format(self->space, self->neighbours->pdata[i]));
    self->pos = MIN(g_variant_get_uint32(v[11]), self->neighbours->len);
    if (self->phase == PHASE_CLIMB && self->centre == NULL) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "the state climbs without a centre");
      ok = FALSE;
    }
  }
  for (guint k = 0; k < G_N_ELEMENTS(keys); k++)
    if (v[k])
      g_variant_unref(v[k]);
  return ok;
}

static const SieveOptimizerClass local_search_class = {
  .create = local_search_create,
  .destroy = local_search_destroy,
  .ask = local_search_ask,
  .tell = local_search_tell,
  .save = local_search_save,
  .load = local_search_load,
};

static const SieveComponentInfo local_search_info = {
  .kind = SIEVE_KIND_OPTIMIZER,
  .name = "local_search",
  .summary = "hill climbing over one-decision neighbourhoods with random restarts (White et al.)",
  .options = local_search_options,
  .klass = &local_search_class,
};

static gboolean
local_search_init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &local_search_info, error);
}

SIEVE_PLUGIN_DEFINE("local_search", "0.1.0", "Local search", "MIT", local_search_init);
