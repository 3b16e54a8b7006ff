/* sieve optimizers: successive-halving brackets.  See brackets.h. */
#include <math.h>
#include <string.h>

#include <sieve/abi.h>
#include <sieve/candidate.h>
#include <sieve/optimizer.h>
#include <sieve/options.h>
#include <sieve/space.h>

#include "brackets.h"

typedef enum { ENTRY_WAITING, ENTRY_PENDING, ENTRY_DONE } EntryState;

typedef struct {
  SieveGenotype *genotype;
  char *key; /* opt_key(text, fidelity) */
  double value;
  EntryState state;
} Entry;

static void
entry_free(Entry *e)
{
  sieve_genotype_free(e->genotype);
  g_free(e->key);
  g_free(e);
}

static Entry *
entry_new(const SieveSpace *space, SieveGenotype *genotype, double fidelity)
{
  Entry *e = g_new0(Entry, 1);
  e->genotype = genotype;
  g_autofree char *text = sieve_space_format(space, genotype);
  e->key = opt_key(text, fidelity);
  e->value = NAN;
  e->state = ENTRY_WAITING;
  return e;
}

static void
bracket_free(OptBracket *k)
{
  for (guint i = 0; i < k->rungs; i++)
    g_ptr_array_unref(k->entries[i]);
  g_free(k->entries);
  g_free(k->size);
  g_free(k->fidelity);
  g_free(k);
}

static OptBracket *
bracket_alloc(guint rungs)
{
  OptBracket *k = g_new0(OptBracket, 1);
  k->rungs = rungs;
  k->size = g_new0(guint, rungs);
  k->fidelity = g_new0(double, rungs);
  k->entries = g_new0(GPtrArray *, rungs);
  for (guint i = 0; i < rungs; i++)
    k->entries[i] = g_ptr_array_new_with_free_func((GDestroyNotify) entry_free);
  return k;
}

/* Fidelity max eta^-j, whole where the evaluator wants whole numbers. */
static double
fidelity_at(const OptBrackets *b, guint j)
{
  if (j == 0)
    return b->max_fidelity;
  double r = b->max_fidelity * pow(b->eta, -(double) j);
  if (b->integer)
    r = round(r);
  return CLAMP(r, b->min_fidelity, b->max_fidelity);
}

gboolean
opt_brackets_init(OptBrackets *b, const SieveSpace *space, const SieveStudyInfo *study, const SieveOptions *options,
                  gboolean hyperband, const char *who, GError **error)
{
  memset(b, 0, sizeof *b);
  if (study->fidelity == NULL) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                "%s needs an evaluator that offers a fidelity (e.g. epochs); this one offers none "
                "(the function and command evaluators take a `fidelity: {name: budget, min: 1, max: 27}` option; "
                "in Lua, a study without an evaluator takes fidelity = {name = \"epochs\", min = 1, max = 27})",
                who);
    return FALSE;
  }
  const SieveFidelity *f = study->fidelity;
  double min = f->min;
  if (sieve_options_is_set(options, "min_fidelity")) {
    min = sieve_options_get_double(options, "min_fidelity");
    if (min < f->min || min > f->max) {
      sieve_options_set_error(options, "min_fidelity", error,
                              "min_fidelity %g is outside the evaluator's fidelity '%s' [%g, %g]", min, f->name,
                              f->min, f->max);
      return FALSE;
    }
    /* The rungs run at whole fidelities between min and max (fidelity_at
     * rounds, then clamps to them), and the evaluator refuses any other. */
    if (f->integer && min != floor(min)) {
      sieve_options_set_error(options, "min_fidelity", error,
                              "min_fidelity %g is not whole, and the evaluator's fidelity '%s' takes only whole "
                              "values (use %g or %g)",
                              min, f->name, floor(min), ceil(min));
      return FALSE;
    }
  }
  double eta = sieve_options_get_double(options, "eta");
  /* The small tolerance keeps max/min = eta^k from losing a rung to rounding. */
  double levels = floor(log(f->max / min) / log(eta) + 1e-9);
  if (levels < 1) {
    sieve_options_set_error(options, "eta", error,
                            "the fidelity range [%g, %g] of '%s' is narrower than one step of eta = %g: no "
                            "rung could be promoted (lower eta or min_fidelity)",
                            min, f->max, f->name, eta);
    return FALSE;
  }
  /* The most aggressive bracket starts eta^levels configurations to bring
   * one to the full fidelity (and ASHA's bottom rung needs as many before
   * its top rung sees one): past a limit the range is a mistake, and a
   * count that does not fit a guint would wrap. */
  double first = pow(eta, levels);
  if (!(first <= OPT_BRACKETS_MAX_CONFIGS)) {
    sieve_options_set_error(options, "eta", error,
                            "the fidelity range [%g, %g] of '%s' with eta = %g has %.0f rungs above the first, so "
                            "one configuration reaches the full fidelity for every %.3g started; at most %d are "
                            "allowed (raise min_fidelity or eta, or narrow the evaluator's fidelity)",
                            min, f->max, f->name, eta, levels, first, OPT_BRACKETS_MAX_CONFIGS);
    return FALSE;
  }
  b->space = space;
  b->eta = eta;
  b->min_fidelity = min;
  b->max_fidelity = f->max;
  b->integer = f->integer;
  b->s_max = (guint) levels;
  b->hyperband = hyperband;
  b->n_first = (guint) ceil(pow(eta, b->s_max) - 1e-9);
  if (!hyperband && sieve_options_is_set(options, "n_configs")) {
    gint64 n = sieve_options_get_int(options, "n_configs");
    if ((double) n < eta) {
      sieve_options_set_error(options, "n_configs", error,
                              "n_configs %" G_GINT64_FORMAT " is too few to keep the best 1/eta (eta = %g)", n, eta);
      return FALSE;
    }
    b->n_first = (guint) n;
  }
  b->active = g_ptr_array_new_with_free_func((GDestroyNotify) bracket_free);
  b->pending = g_hash_table_new(g_str_hash, g_str_equal);
  opt_seen_init(&b->sampled, space);
  return TRUE;
}

void
opt_brackets_clear(OptBrackets *b)
{
  g_clear_pointer(&b->pending, g_hash_table_unref);
  g_clear_pointer(&b->active, g_ptr_array_unref);
  if (b->sampled.set)
    opt_seen_clear(&b->sampled);
}

/* The shape of the next bracket: s counts the rungs above the first. */
static OptBracket *
bracket_open(OptBrackets *b)
{
  guint s = b->hyperband ? b->s_max - (guint) (b->opened % (b->s_max + 1)) : b->s_max;
  OptBracket *k = bracket_alloc(s + 1);
  k->id = b->opened++;
  double n = b->hyperband ? ceil((b->s_max + 1.0) / (s + 1.0) * pow(b->eta, s) - 1e-9) : b->n_first;
  for (guint i = 0; i <= s; i++) {
    k->size[i] = (guint) MAX(1.0, floor(n * pow(b->eta, -(double) i) + 1e-9));
    k->fidelity[i] = fidelity_at(b, s - i);
  }
  g_ptr_array_add(b->active, k);
  return k;
}

static SieveCandidate *
propose(OptBrackets *b, Entry *e, double fidelity)
{
  e->state = ENTRY_PENDING;
  g_hash_table_insert(b->pending, e->key, e);
  return sieve_candidate_new(sieve_genotype_copy(e->genotype), fidelity);
}

/* A promotion of bracket k waiting to be proposed (highest rung first), or
 * NULL. */
static SieveCandidate *
bracket_promotion(OptBrackets *b, OptBracket *k)
{
  for (guint i = k->rungs; i-- > 0;)
    for (guint j = 0; j < k->entries[i]->len; j++) {
      Entry *e = k->entries[i]->pdata[j];
      if (e->state == ENTRY_WAITING && !g_hash_table_contains(b->pending, e->key))
        return propose(b, e, k->fidelity[i]);
    }
  return NULL;
}

/* A space with fewer new configurations than rung 0 of k wanted: the rung
 * makes do with the n it has, and the rungs above keep the best 1/eta of
 * it as they would of a full one (n eta^-i, at least one while n > 0). */
static void
bracket_shrink(OptBrackets *b, OptBracket *k)
{
  guint n = k->entries[0]->len;
  if (n >= k->size[0])
    return;
  k->size[0] = n;
  for (guint i = 1; i < k->rungs; i++)
    k->size[i] = MIN(k->size[i], (guint) MAX(1.0, floor(n * pow(b->eta, -(double) i) + 1e-9)));
}

/* The next job of bracket k: a promotion waiting, or a new configuration
 * while rung 0 is not full. */
static SieveCandidate *
bracket_next(OptBrackets *b, OptBracket *k, OptBracketSample sample, gpointer user, gboolean *exhausted)
{
  SieveCandidate *c = bracket_promotion(b, k);
  if (c != NULL)
    return c;
  if (k->entries[0]->len >= k->size[0] || *exhausted)
    return NULL;
  SieveGenotype *g = sample(user, b, k->fidelity[0]);
  if (g == NULL) {
    *exhausted = TRUE;
    return NULL;
  }
  Entry *e = entry_new(b->space, g, k->fidelity[0]);
  g_autofree char *text = sieve_space_format(b->space, g);
  opt_seen_add(&b->sampled, text, g);
  g_ptr_array_add(k->entries[0], e);
  return propose(b, e, k->fidelity[0]);
}

static gboolean bracket_advance(OptBrackets *b, OptBracket *k);

/* Promotes from every complete rung and drops the brackets that have
 * finished. */
static void
brackets_advance(OptBrackets *b)
{
  for (guint i = b->active->len; i-- > 0;)
    if (bracket_advance(b, b->active->pdata[i]))
      g_ptr_array_remove_index(b->active, i);
}

SieveCandidate *
opt_brackets_next(OptBrackets *b, OptBracketSample sample, gpointer user)
{
  gboolean exhausted = FALSE;
  for (guint i = 0; i < b->active->len; i++) {
    SieveCandidate *c = bracket_next(b, b->active->pdata[i], sample, user, &exhausted);
    if (c != NULL)
      return c;
  }
  if (!exhausted) {
    SieveCandidate *c = bracket_next(b, bracket_open(b), sample, user, &exhausted);
    if (c != NULL || !exhausted)
      return c;
  }
  /* The space has no configuration left that was not started: every rung 0
   * not full makes do with what it has, which may complete it (its results
   * all in) and so promote now, not at a tell that will never come. */
  for (guint i = 0; i < b->active->len; i++)
    bracket_shrink(b, b->active->pdata[i]);
  brackets_advance(b);
  for (guint i = 0; i < b->active->len; i++) {
    SieveCandidate *c = bracket_promotion(b, b->active->pdata[i]);
    if (c != NULL)
      return c;
  }
  return NULL;
}

static gint
compare_entries(gconstpointer a, gconstpointer b)
{
  const Entry *x = *(Entry *const *) a, *y = *(Entry *const *) b;
  if (x->value != y->value)
    return x->value > y->value ? -1 : 1;
  return 0; /* g_ptr_array_sort is stable: rung order among equals */
}

/* Promote from every complete rung of k; TRUE when k has finished (its
 * top rung is done, or a rung has nothing it may promote). */
static gboolean
bracket_advance(OptBrackets *b, OptBracket *k)
{
  for (guint i = 0; i < k->rungs; i++) {
    GPtrArray *rung = k->entries[i];
    if (rung->len < k->size[i])
      return FALSE;
    for (guint j = 0; j < rung->len; j++)
      if (((Entry *) rung->pdata[j])->state != ENTRY_DONE)
        return FALSE;
    if (i + 1 == k->rungs)
      return TRUE;
    if (k->entries[i + 1]->len > 0)
      continue; /* promoted already */
    /* A failed or constraint-rejected result (-inf) is never promoted, as
     * in asha: the rung promotes fewer, and none ends the bracket. */
    g_autoptr(GPtrArray) ranked = g_ptr_array_new();
    for (guint j = 0; j < rung->len; j++)
      if (((Entry *) rung->pdata[j])->value > -INFINITY)
        g_ptr_array_add(ranked, rung->pdata[j]);
    g_ptr_array_sort(ranked, compare_entries);
    guint keep = MIN(k->size[i + 1], ranked->len);
    if (keep == 0)
      return TRUE;
    k->size[i + 1] = keep;
    for (guint j = 0; j < keep; j++) {
      const Entry *e = ranked->pdata[j];
      g_ptr_array_add(k->entries[i + 1], entry_new(b->space, sieve_genotype_copy(e->genotype), k->fidelity[i + 1]));
    }
  }
  return FALSE;
}

gboolean
opt_brackets_tell(OptBrackets *b, const SieveCandidate *candidate, double fitness)
{
  g_autofree char *key = opt_key(sieve_candidate_get_text(candidate), sieve_candidate_get_fidelity(candidate));
  Entry *e = g_hash_table_lookup(b->pending, key);
  if (e == NULL)
    return FALSE;
  g_hash_table_remove(b->pending, key);
  e->value = fitness;
  e->state = ENTRY_DONE;
  brackets_advance(b);
  return TRUE;
}

/* Whether bracket k is still filling its first rung (nothing promoted). */
static gboolean
bracket_filling(const OptBracket *k)
{
  return k->rungs < 2 || k->entries[1]->len == 0;
}

/* The place a withdrawn configuration left in the first rung of bracket
 * i is taken by a configuration of the last bracket opened after it that
 * is still filling a first rung at the same fidelity (a finished one
 * before a pending one): all were drawn alike for such a rung, so the
 * earliest bracket fills first and the later ones wait as its reserve.
 * Else a screen's round (16 proposals, 4 trained) would open a bracket
 * for what the first one's places could not take, and every round
 * another, each filling a few trained at a time: the first promotion
 * would wait for many more trainings than a bracket's n. */
static void
bracket_refill(OptBrackets *b, guint i)
{
  OptBracket *k = b->active->pdata[i];
  for (guint m = b->active->len; m-- > i + 1;) {
    OptBracket *later = b->active->pdata[m];
    GPtrArray *rung = later->entries[0];
    if (!bracket_filling(later) || later->fidelity[0] != k->fidelity[0] || rung->len == 0)
      continue;
    guint take = 0;
    while (take < rung->len && ((Entry *) rung->pdata[take])->state != ENTRY_DONE)
      take++;
    g_ptr_array_add(k->entries[0], g_ptr_array_steal_index(rung, take < rung->len ? take : 0));
    brackets_advance(b); /* k may be complete now */
    return;
  }
}

gboolean
opt_brackets_withdraw(OptBrackets *b, const SieveCandidate *candidate)
{
  g_autofree char *key = opt_key(sieve_candidate_get_text(candidate), sieve_candidate_get_fidelity(candidate));
  Entry *e = g_hash_table_lookup(b->pending, key);
  if (e == NULL)
    return FALSE;
  for (guint i = 0; i < b->active->len; i++) {
    OptBracket *k = b->active->pdata[i];
    if (g_ptr_array_find(k->entries[0], e, NULL)) {
      g_hash_table_remove(b->pending, key);
      g_ptr_array_remove(k->entries[0], e); /* frees it */
      bracket_refill(b, i);
      return TRUE;
    }
  }
  return opt_brackets_tell(b, candidate, -INFINITY);
}

void
opt_brackets_save(const OptBrackets *b, GVariantDict *dict)
{
  GVariantBuilder brackets;
  g_variant_builder_init(&brackets, G_VARIANT_TYPE("a(tauadaa(addy))"));
  for (guint i = 0; i < b->active->len; i++) {
    const OptBracket *k = b->active->pdata[i];
    GVariantBuilder rungs;
    g_variant_builder_init(&rungs, G_VARIANT_TYPE("aa(addy)"));
    for (guint r = 0; r < k->rungs; r++) {
      g_variant_builder_open(&rungs, G_VARIANT_TYPE("a(addy)"));
      for (guint j = 0; j < k->entries[r]->len; j++) {
        const Entry *e = k->entries[r]->pdata[j];
        g_variant_builder_add(&rungs, "(@addy)", opt_genotype_save(e->genotype), e->value, (guchar) e->state);
      }
      g_variant_builder_close(&rungs);
    }
    g_variant_builder_add(&brackets, "(t@au@ad@aa(addy))", k->id,
                          opt_array_new(G_VARIANT_TYPE_UINT32, k->size, k->rungs, sizeof(guint32)),
                          opt_array_new(G_VARIANT_TYPE_DOUBLE, k->fidelity, k->rungs, sizeof(double)),
                          g_variant_builder_end(&rungs));
  }
  g_variant_dict_insert_value(dict, "opened", g_variant_new_uint64(b->opened));
  g_variant_dict_insert_value(dict, "brackets", g_variant_builder_end(&brackets));
  g_variant_dict_insert_value(dict, "sampled", opt_seen_save(&b->sampled));
}

gboolean
opt_brackets_load(OptBrackets *b, GVariant *state, GError **error)
{
  g_autoptr(GVariant) opened = opt_state_lookup(state, "opened", G_VARIANT_TYPE_UINT64, error);
  if (opened == NULL)
    return FALSE;
  g_autoptr(GVariant) brackets = opt_state_lookup(state, "brackets", G_VARIANT_TYPE("a(tauadaa(addy))"), error);
  if (brackets == NULL)
    return FALSE;
  g_autoptr(GVariant) sampled = opt_texts_lookup(state, "sampled", error);
  if (sampled == NULL)
    return FALSE;
  g_autoptr(GPtrArray) active = g_ptr_array_new_with_free_func((GDestroyNotify) bracket_free);
  for (gsize i = 0; i < g_variant_n_children(brackets); i++) {
    guint64 id;
    g_autoptr(GVariant) sizes = NULL, fidelities = NULL, rungs = NULL;
    g_variant_get_child(brackets, i, "(t@au@ad@aa(addy))", &id, &sizes, &fidelities, &rungs);
    gsize ns = 0, nf = 0;
    const guint32 *size = g_variant_get_fixed_array(sizes, &ns, sizeof(guint32));
    const double *fidelity = g_variant_get_fixed_array(fidelities, &nf, sizeof(double));
    if (ns == 0 || ns != nf || ns != g_variant_n_children(rungs)) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "a saved bracket has %zu sizes, %zu fidelities and %zu "
                  "rungs", ns, nf, g_variant_n_children(rungs));
      return FALSE;
    }
    OptBracket *k = bracket_alloc((guint) ns);
    g_ptr_array_add(active, k);
    k->id = id;
    for (gsize r = 0; r < ns; r++) {
      k->size[r] = size[r];
      k->fidelity[r] = fidelity[r];
      g_autoptr(GVariant) rung = g_variant_get_child_value(rungs, r);
      for (gsize j = 0; j < g_variant_n_children(rung); j++) {
        g_autoptr(GVariant) values = NULL;
        double value;
        guchar st;
        g_variant_get_child(rung, j, "(@addy)", &values, &value, &st);
        SieveGenotype *g = opt_genotype_load(b->space, values, error);
        if (g == NULL)
          return FALSE;
        Entry *e = entry_new(b->space, g, fidelity[r]);
        e->value = value;
        e->state = st <= ENTRY_DONE ? (EntryState) st : ENTRY_WAITING;
        g_ptr_array_add(k->entries[r], e);
      }
    }
  }
  /* The last part that can fail, and it leaves b->sampled as it was. */
  if (!opt_seen_load(&b->sampled, sampled, error))
    return FALSE;
  g_hash_table_remove_all(b->pending);
  g_ptr_array_unref(b->active);
  b->active = g_steal_pointer(&active);
  for (guint i = 0; i < b->active->len; i++) {
    OptBracket *k = b->active->pdata[i];
    for (guint r = 0; r < k->rungs; r++)
      for (guint j = 0; j < k->entries[r]->len; j++) {
        Entry *e = k->entries[r]->pdata[j];
        if (e->state == ENTRY_PENDING)
          g_hash_table_insert(b->pending, e->key, e);
      }
  }
  b->opened = g_variant_get_uint64(opened);
  return TRUE;
}
