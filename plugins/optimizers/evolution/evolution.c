/* sieve plugin: regularized (aging) evolution (Real, Aggarwal, Huang & Le,
 * "Regularized Evolution for Image Classifier Architecture Search", AAAI
 * 2019), with an NSGA-II selection for several objectives (Deb, Pratap,
 * Agarwal & Meyarivan, "A fast and elitist multiobjective genetic algorithm:
 * NSGA-II", IEEE TEVC 2002).
 *
 * Aging evolution (Real et al., Algorithm 1): the first `population`
 * proposals are random; then each proposal is a mutation (one decision
 * changed, conditions respected) of the best of `sample_size` members drawn
 * at random, with replacement, from the population; each finished child
 * joins the population and the oldest member dies.  Optional uniform
 * crossover of two tournament winners precedes the mutation.
 *
 * NSGA-II (selection: nsga2): steady state, as Durillo, Nebro, Luna & Alba
 * ("On the effect of the steady-state selection scheme in multi-objective
 * genetic algorithms", EMO 2009) run it: each finished child joins the
 * population and, once it is full, the member of the worst non-dominated
 * front with the smallest crowding distance leaves; parents are chosen by
 * the crowded comparison (rank, then crowding distance) in tournaments of
 * `sample_size`.  The summary of a multi-objective study prints the Pareto
 * front of every trial.
 *
 * Constraints (a candidate rejected before evaluation, status REJECTED):
 * aging evolution leaves it out of the population (it never was a model to
 * breed from; the next ask breeds again, and the engine's rejections cost
 * no evaluation); NSGA-II takes it in under Deb's constrained domination
 * (Deb et al. 2002, section III-E): a feasible member dominates an
 * infeasible one, and of two infeasible members the one with the smaller
 * constraint_violation dominates, so infeasible members fill the worst
 * fronts, leave first, and win a tournament only against worse violators.
 *
 * A pruned child (status PRUNED) joins the population ranked below every
 * finished member, among the pruned by the step it reached, then its last
 * value (opt_tier, the order tpe takes from Optuna): its value was measured
 * before the full training, and a value that looks good early must not
 * make it a parent over a finished member (it wins only against pruned and
 * failed ones).  It ages out as any member.
 * (A pruner judges one objective, so NSGA-II never sees a pruned child.)
 *
 * Asynchronous use: children join when their tell arrives, in any order;
 * while the population is still empty (every proposal pending) proposals
 * stay random, so ask() never waits.  A child whose genotype was proposed
 * before is bred again (up to a bound, then a random unseen genotype is
 * proposed): evaluations are distinct genotypes.
 */
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

static const char *const selection_names[] = {"aging", "nsga2", NULL};

static const SieveOptionSpec evolution_options[] = {
  SIEVE_OPTION_INT("population", "50", 2, 1e6, "members alive at once (the first this many proposals are random)"),
  SIEVE_OPTION_INT("sample_size", "10", 1, 1e6, "members drawn for each parent's tournament (<= population)"),
  SIEVE_OPTION_FLOAT("crossover", "0", 0, 1, "probability that a child is a uniform crossover of two winners "
                     "(then mutated)"),
  SIEVE_OPTION_CHOICE("selection", "aging", selection_names,
                      "aging: the oldest dies (one objective); nsga2: non-dominated sorting and crowding over "
                      "every objective"),
  SIEVE_OPTION_END,
};

/* Breeding attempts before a random unseen genotype is proposed instead. */
#define MAX_BREED_TRIES 64

typedef struct {
  SieveGenotype *genotype;
  double *objectives; /* n_objectives, larger is better, NAN when missing */
  double violation;   /* 0: feasible; > 0: rejected by a constraint, how far (SIEVE_METRIC_CONSTRAINT_VIOLATION) */
  double tier;        /* opt_tier of the first objective: below +INFINITY, pruned */
  /* NSGA-II bookkeeping, recomputed when needed */
  guint rank;
  double crowding;
} Member;

typedef struct {
  const SieveSpace *space;
  SieveRng rng;
  guint population, sample_size, n_objectives;
  double crossover;
  gboolean nsga2;
  double space_size;
  OptSeen seen;
  GPtrArray *members; /* Member*, oldest first */
  guint64 proposed;
} Evolution;

static void
member_free(Member *m)
{
  sieve_genotype_free(m->genotype);
  g_free(m->objectives);
  g_free(m);
}

static void
evolution_destroy(gpointer instance)
{
  Evolution *self = instance;
  if (self == NULL)
    return;
  opt_seen_clear(&self->seen);
  g_clear_pointer(&self->members, g_ptr_array_unref);
  g_free(self);
}

static gpointer
evolution_create(const SieveSpace *space, const SieveOptions *options, const SieveStudyInfo *study, GError **error)
{
  gint64 population = sieve_options_get_int(options, "population");
  gint64 sample_size = sieve_options_get_int(options, "sample_size");
  if (sample_size > population) {
    sieve_options_set_error(options, sieve_options_is_set(options, "sample_size") ? "sample_size" : "population",
                            error, "sample_size (%" G_GINT64_FORMAT ") must not exceed population (%" G_GINT64_FORMAT
                            "): the tournament draws from the population",
                            sample_size, population);
    return NULL;
  }
  gboolean nsga2 = strcmp(sieve_options_get_string(options, "selection"), "nsga2") == 0;
  if (nsga2 && study->n_objectives < 2) {
    sieve_options_set_error(options, "selection", error,
                            "selection nsga2 needs two or more objectives; the experiment has %u "
                            "(objective: [{metric: a}, {metric: b, direction: minimize}])",
                            study->n_objectives);
    return NULL;
  }
  if (!nsga2 && !opt_one_objective(study, "selection aging ranks the population", error))
    return NULL;
  Evolution *self = g_new0(Evolution, 1);
  self->space = space;
  sieve_rng_seed(&self->rng, study->seed);
  self->population = (guint) population;
  self->sample_size = (guint) sample_size;
  self->crossover = sieve_options_get_double(options, "crossover");
  self->nsga2 = nsga2;
  self->n_objectives = study->n_objectives;
  self->space_size = sieve_space_size(space);
  opt_seen_init(&self->seen, space);
  self->members = g_ptr_array_new_with_free_func((GDestroyNotify) member_free);
  return self;
}

/* ---- NSGA-II ranking ---------------------------------------------------- */

/* Deb's constrained domination (Deb et al. 2002, section III-E). */
static gboolean
dominates(const Member *a, const Member *b, guint m)
{
  if (a->violation > 0 || b->violation > 0)
    return a->violation < b->violation;
  gboolean strictly = FALSE;
  for (guint k = 0; k < m; k++) {
    double x = opt_fitness(a->objectives[k]), y = opt_fitness(b->objectives[k]);
    if (x < y)
      return FALSE;
    if (x > y)
      strictly = TRUE;
  }
  return strictly;
}

/* Member indices by values[index], ties by index: a total order, so any
 * sort gives the same front order.  values comes as the sort's user data,
 * not a global, so that studies in several threads do not share it. */
static gint
compare_by_value(gconstpointer a, gconstpointer b, gpointer user_data)
{
  const double *values = user_data;
  guint i = *(const guint *) a, j = *(const guint *) b;
  double x = values[i], y = values[j];
  if (x != y)
    return x < y ? -1 : 1;
  return i < j ? -1 : i > j ? 1 : 0;
}

/* Non-dominated sorting (Deb et al. 2002, section III-A) and crowding
 * distance (III-B) of every member. */
static void
rank_members(Evolution *self)
{
  GPtrArray *ms = self->members;
  guint n = ms->len, m = self->n_objectives;
  if (n == 0)
    return;
  g_autofree guint *dominated_by = g_new0(guint, n);
  for (guint i = 0; i < n; i++)
    for (guint j = 0; j < n; j++)
      if (i != j && dominates(ms->pdata[j], ms->pdata[i], m))
        dominated_by[i]++;
  g_autofree guint *front = g_new(guint, n);
  g_autofree gboolean *done = g_new0(gboolean, n);
  g_autofree double *values = g_new(double, n);
  guint placed = 0;
  for (guint rank = 0; placed < n; rank++) {
    guint len = 0;
    for (guint i = 0; i < n; i++)
      if (!done[i] && dominated_by[i] == 0)
        front[len++] = i;
    for (guint f = 0; f < len; f++) {
      Member *a = ms->pdata[front[f]];
      a->rank = rank;
      a->crowding = 0;
      done[front[f]] = TRUE;
    }
    for (guint k = 0; k < m; k++) {
      for (guint f = 0; f < len; f++)
        values[front[f]] = opt_fitness(((Member *) ms->pdata[front[f]])->objectives[k]);
      g_qsort_with_data(front, (gint) len, sizeof(guint), compare_by_value, values);
      double span = values[front[len - 1]] - values[front[0]];
      ((Member *) ms->pdata[front[0]])->crowding = INFINITY;
      ((Member *) ms->pdata[front[len - 1]])->crowding = INFINITY;
      if (!(span > 0) || !isfinite(span))
        continue;
      for (guint f = 1; f + 1 < len; f++)
        ((Member *) ms->pdata[front[f]])->crowding += (values[front[f + 1]] - values[front[f - 1]]) / span;
    }
    for (guint f = 0; f < len; f++)
      for (guint j = 0; j < n; j++)
        if (!done[j] && dominates(ms->pdata[front[f]], ms->pdata[j], m))
          dominated_by[j]--;
    placed += len;
  }
}

/* The crowded comparison: lower rank, then larger crowding distance. */
static gboolean
crowded_better(const Member *a, const Member *b)
{
  if (a->rank != b->rank)
    return a->rank < b->rank;
  return a->crowding > b->crowding;
}

/* ---- breeding ----------------------------------------------------------- */

static const Member *
tournament(Evolution *self)
{
  const Member *best = NULL;
  for (guint k = 0; k < self->sample_size; k++) {
    const Member *c = self->members->pdata[sieve_rng_below(&self->rng, self->members->len)];
    if (best == NULL)
      best = c;
    else if (self->nsga2 ? crowded_better(c, best)
                         : opt_ranks_above(c->tier, opt_fitness(c->objectives[0]), best->tier,
                                           opt_fitness(best->objectives[0])))
      best = c;
  }
  return best;
}

static SieveGenotype *
breed(Evolution *self)
{
  const Member *parent = tournament(self);
  if (self->crossover > 0 && sieve_rng_uniform(&self->rng) < self->crossover) {
    const Member *other = tournament(self);
    g_autoptr(SieveGenotype) mixed = opt_crossover(self->space, parent->genotype, other->genotype, &self->rng);
    return opt_mutate(self->space, mixed, &self->rng);
  }
  return opt_mutate(self->space, parent->genotype, &self->rng);
}

static gboolean
evolution_ask(gpointer instance, guint n, GPtrArray *out, GError **error)
{
  Evolution *self = instance;
  if (self->nsga2)
    rank_members(self);
  for (guint k = 0; k < n; k++) {
    if (opt_seen_size(&self->seen) >= self->space_size)
      break; /* every genotype of a finite space was proposed */
    SieveGenotype *g = NULL;
    if (self->proposed >= self->population && self->members->len > 0) {
      for (guint t = 0; t < MAX_BREED_TRIES && g == NULL; t++) {
        g = breed(self);
        if (opt_seen_has_genotype(&self->seen, g))
          g_clear_pointer(&g, sieve_genotype_free);
      }
    }
    if (opt_propose(out, &self->seen, self->space, &self->rng, g) == NULL)
      break;
    self->proposed++;
  }
  return TRUE; /* fewer than n only when no unproposed genotype is left */
}

static gboolean
evolution_tell(gpointer instance, const SieveCandidate *candidate, const SieveResult *result,
               const double *objectives, GError **error)
{
  Evolution *self = instance;
  double violation = 0;
  if (sieve_result_get_status(result) == SIEVE_STATUS_REJECTED) {
    if (!self->nsga2)
      return TRUE; /* aging evolution: never a member (see the top of the file) */
    if (!sieve_result_get_metric(result, SIEVE_METRIC_CONSTRAINT_VIOLATION, &violation) || !(violation > 0))
      violation = 1;
  }
  Member *m = g_new0(Member, 1);
  m->genotype = sieve_genotype_copy(sieve_candidate_get_genotype(candidate));
  m->objectives = g_memdup2(objectives, sizeof(double) * self->n_objectives);
  m->violation = violation;
  m->tier = opt_tier(result, opt_fitness(objectives[0]));
  g_ptr_array_add(self->members, m);
  if (self->members->len <= self->population)
    return TRUE;
  if (!self->nsga2) {
    g_ptr_array_remove_index(self->members, 0); /* aging: the oldest dies */
    return TRUE;
  }
  /* NSGA-II: the most crowded member of the worst front leaves (the oldest
   * among equals, so that the choice is deterministic). */
  rank_members(self);
  guint worst = 0;
  for (guint i = 1; i < self->members->len; i++) {
    const Member *a = self->members->pdata[i], *w = self->members->pdata[worst];
    if (a->rank > w->rank || (a->rank == w->rank && a->crowding < w->crowding))
      worst = i;
  }
  g_ptr_array_remove_index(self->members, worst);
  return TRUE;
}

/* State: {"rng": (tttt), "seen": ay, "proposed": t,
 *         "members": a(adad) oldest first (genotype, objectives),
 *         "violations": ad, one per member (0: feasible),
 *         "tiers": ad, one per member (opt_tier)} */
static GVariant *
evolution_save(gpointer instance, GError **error)
{
  Evolution *self = instance;
  GVariantBuilder members, violations, tiers;
  g_variant_builder_init(&members, G_VARIANT_TYPE("a(adad)"));
  g_variant_builder_init(&violations, G_VARIANT_TYPE("ad"));
  g_variant_builder_init(&tiers, G_VARIANT_TYPE("ad"));
  for (guint i = 0; i < self->members->len; i++) {
    const Member *m = self->members->pdata[i];
    g_variant_builder_add(&violations, "d", m->violation);
    g_variant_builder_add(&tiers, "d", m->tier);
    g_variant_builder_add(&members, "(@ad@ad)", opt_genotype_save(m->genotype),
                          opt_array_new(G_VARIANT_TYPE_DOUBLE, m->objectives, self->n_objectives,
                                                    sizeof(double)));
  }
  GVariantDict dict;
  g_variant_dict_init(&dict, NULL);
  g_variant_dict_insert_value(&dict, "rng", sieve_rng_save(&self->rng));
  g_variant_dict_insert_value(&dict, "seen", opt_seen_save(&self->seen));
  g_variant_dict_insert_value(&dict, "proposed", g_variant_new_uint64(self->proposed));
  g_variant_dict_insert_value(&dict, "members", g_variant_builder_end(&members));
  g_variant_dict_insert_value(&dict, "violations", g_variant_builder_end(&violations));
  g_variant_dict_insert_value(&dict, "tiers", g_variant_builder_end(&tiers));
  return g_variant_dict_end(&dict);
}

static gboolean
evolution_load(gpointer instance, GVariant *state, GError **error)
{
  Evolution *self = instance;
  if (!opt_state_check(state, error))
    return FALSE;
  g_autoptr(GVariant) rng = opt_state_lookup(state, "rng", G_VARIANT_TYPE("(tttt)"), error);
  if (rng == NULL)
    return FALSE;
  g_autoptr(GVariant) seen = opt_texts_lookup(state, "seen", error);
  if (seen == NULL)
    return FALSE;
  g_autoptr(GVariant) proposed = opt_state_lookup(state, "proposed", G_VARIANT_TYPE_UINT64, error);
  if (proposed == NULL)
    return FALSE;
  g_autoptr(GVariant) members = opt_state_lookup(state, "members", G_VARIANT_TYPE("a(adad)"), error);
  if (members == NULL)
    return FALSE;
  /* Absent from states saved before constraints existed: all feasible. */
  g_autoptr(GVariant) violations = g_variant_lookup_value(state, "violations", G_VARIANT_TYPE("ad"));
  gsize n_violations = 0;
  const double *vs = violations ? g_variant_get_fixed_array(violations, &n_violations, sizeof(double)) : NULL;
  /* Absent from states saved before pruned children were ranked: every
   * member as finished. */
  g_autoptr(GVariant) tiers = g_variant_lookup_value(state, "tiers", G_VARIANT_TYPE("ad"));
  gsize n_tiers = 0;
  const double *ts = tiers ? g_variant_get_fixed_array(tiers, &n_tiers, sizeof(double)) : NULL;
  if (tiers != NULL && n_tiers != g_variant_n_children(members)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "the state has %zu members but %zu tiers",
                (gsize) g_variant_n_children(members), n_tiers);
    return FALSE;
  }
  g_autoptr(GPtrArray) loaded = g_ptr_array_new_with_free_func((GDestroyNotify) member_free);
  for (gsize i = 0; i < g_variant_n_children(members); i++) {
    g_autoptr(GVariant) genotype = NULL, objectives = NULL;
    g_variant_get_child(members, i, "(@ad@ad)", &genotype, &objectives);
    gsize n = 0;
    const double *v = g_variant_get_fixed_array(objectives, &n, sizeof(double));
    if (n != self->n_objectives) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "a saved member has %zu objectives, the study %u", n,
                  self->n_objectives);
      return FALSE;
    }
    SieveGenotype *g = opt_genotype_load(self->space, genotype, error);
    if (g == NULL)
      return FALSE;
    Member *m = g_new0(Member, 1);
    m->genotype = g;
    m->objectives = g_memdup2(v, sizeof(double) * n);
    m->violation = i < n_violations ? vs[i] : 0;
    /* a NAN tier (a hand-edited state) ranks with the failed: never unordered */
    m->tier = i < n_tiers ? opt_fitness(ts[i]) : opt_tier_finished(opt_fitness(v[0]));
    g_ptr_array_add(loaded, m);
  }
  /* All or nothing: the rng into a temporary, seen last (it is). */
  SieveRng restored;
  if (!sieve_rng_load(&restored, rng, error))
    return FALSE;
  if (!opt_seen_load(&self->seen, seen, error))
    return FALSE;
  self->rng = restored;
  self->proposed = g_variant_get_uint64(proposed);
  g_ptr_array_unref(self->members);
  self->members = g_steal_pointer(&loaded);
  return TRUE;
}

static const SieveOptimizerClass evolution_class = {
  .create = evolution_create,
  .destroy = evolution_destroy,
  .ask = evolution_ask,
  .tell = evolution_tell,
  .save = evolution_save,
  .load = evolution_load,
};

static const SieveComponentInfo evolution_info = {
  .kind = SIEVE_KIND_OPTIMIZER,
  .name = "evolution",
  .summary = "regularized (aging) evolution; NSGA-II selection for several objectives",
  .options = evolution_options,
  .klass = &evolution_class,
};

static gboolean
evolution_init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &evolution_info, error);
}

SIEVE_PLUGIN_DEFINE("evolution", "0.1.0", "Regularized evolution and NSGA-II", "MIT", evolution_init);
