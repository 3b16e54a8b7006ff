/* sieve plugin: random search, the baseline every NAS and HPO method must
 * beat (Li & Talwalkar, "Random Search and Reproducibility for Neural
 * Architecture Search", UAI 2019; Bergstra & Bengio, JMLR 2012).
 *
 * Each proposal is sieve_space_sample() from the optimizer's own SieveRng.
 * With `unique`, a proposal whose canonical text was proposed before is
 * drawn again; a finite space is known to be exhausted when every one of
 * its genotypes has been proposed, and an infinite one after a bounded
 * number of draws that bring nothing new.
 *
 * The state of a unique search is the rng as seeded, the rng now and the
 * number proposed, not the texts: the proposals are the first distinct
 * draws from the seeded rng (tells change nothing), so load draws them
 * again.  Saved after every
 * tell, the list of texts made a study of n trials write O(n^2) bytes
 * (3,000 trials of nb201: 6.3 s against 0.66 s without unique).
 *
 * Constraints need nothing here: the engine rejects a proposal that breaks
 * one before it is evaluated and asks again, which is sampling within the
 * constraints by rejection; the experiment's constraint_tries caps the
 * rejections in a row, and the summary reports how many there were.
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

static const SieveOptionSpec random_options[] = {
  SIEVE_OPTION_BOOL("unique", "false", "never propose the same genotype (canonical text) twice; the study ends when a finite space is used up"),
  SIEVE_OPTION_END,
};

/* Draws per ask that may bring nothing new before a space that is not known
 * to be finite counts as exhausted. */
#define MAX_MISSES_INFINITE 1000
/* A safety bound for finite spaces too, where the expected number of draws
 * for the last unseen genotype is the size of the space. */
#define MAX_MISSES_FINITE 10000000

typedef struct {
  const SieveSpace *space;
  SieveRng rng;
  SieveRng start;     /* as seeded: where the proposals are drawn again from on load */
  guint64 draws;      /* samples drawn since start (repeats and misses included) */
  gboolean by_text;   /* a study begun before "proposed": its state keeps the texts (they need not replay from start) */
  gboolean unique;
  double size;        /* distinct genotypes, INFINITY when a float decision exists */
  GHashTable *seen;   /* canonical text (owned by order) -> itself */
  GPtrArray *order;   /* texts in the order proposed, for a stable save */
} RandomSearch;

static void
random_destroy(gpointer instance)
{
  RandomSearch *self = instance;
  if (self == NULL)
    return;
  g_clear_pointer(&self->seen, g_hash_table_unref);
  g_clear_pointer(&self->order, g_ptr_array_unref);
  g_free(self);
}

static gpointer
random_create(const SieveSpace *space, const SieveOptions *options, const SieveStudyInfo *study, GError **error)
{
  RandomSearch *self = g_new0(RandomSearch, 1);
  self->space = space;
  sieve_rng_seed(&self->rng, study->seed);
  self->start = self->rng;
  self->unique = sieve_options_get_bool(options, "unique");
  self->size = sieve_space_size(space);
  self->seen = g_hash_table_new(g_str_hash, g_str_equal);
  self->order = g_ptr_array_new_with_free_func(g_free);
  return self;
}

static void
remember(RandomSearch *self, char *text)
{
  g_ptr_array_add(self->order, text);
  g_hash_table_add(self->seen, text);
}

/* One sample from rng; with unique, remembered when its text is new
 * (*fresh: FALSE for a repeat), as an ask draws and a load draws again.
 * (transfer full) */
static SieveGenotype *
draw(RandomSearch *self, SieveRng *rng, gboolean *fresh)
{
  SieveGenotype *genotype = sieve_space_sample(self->space, rng);
  *fresh = TRUE;
  if (self->unique) {
    char *text = sieve_space_format(self->space, genotype);
    *fresh = !g_hash_table_contains(self->seen, text);
    if (*fresh)
      remember(self, text);
    else
      g_free(text);
  }
  return genotype;
}

static gboolean
random_ask(gpointer instance, guint n, GPtrArray *out, GError **error)
{
  RandomSearch *self = instance;
  guint added = 0;
  guint64 misses = 0;
  guint64 max_misses = isfinite(self->size) ? MAX_MISSES_FINITE : MAX_MISSES_INFINITE;
  while (added < n) {
    if (self->unique && (double) self->order->len >= self->size)
      break; /* every genotype of a finite space has been proposed */
    gboolean fresh;
    g_autoptr(SieveGenotype) genotype = draw(self, &self->rng, &fresh);
    self->draws++;
    if (!fresh) {
      if (++misses >= max_misses)
        break;
      continue;
    }
    g_ptr_array_add(out, sieve_candidate_new(g_steal_pointer(&genotype), NAN));
    added++;
  }
  return TRUE; /* fewer than n: the space is exhausted (see sieve/optimizer.h) */
}

static gboolean
random_tell(gpointer instance, const SieveCandidate *candidate, const SieveResult *result, const double *objectives,
            GError **error)
{
  return TRUE; /* random search learns nothing */
}

/* State: {"rng": (tttt), "start": (tttt), "proposed": t, "draws": t} (a
 * state saved before "proposed", {"rng", "seen": as}, the texts
 * themselves, is read too). */
static GVariant *
random_save(gpointer instance, GError **error)
{
  RandomSearch *self = instance;
  GVariantDict dict;
  g_variant_dict_init(&dict, NULL);
  g_variant_dict_insert_value(&dict, "rng", sieve_rng_save(&self->rng));
  if (self->by_text) {
    g_variant_dict_insert_value(&dict, "seen",
                                g_variant_new_strv((const char *const *) self->order->pdata, self->order->len));
  } else {
    g_variant_dict_insert_value(&dict, "start", sieve_rng_save(&self->start));
    g_variant_dict_insert_value(&dict, "proposed", g_variant_new_uint64(self->order->len));
    /* An ask that ends in draws bringing nothing new moves the rng past
     * the last proposal: the count of draws replays those too. */
    g_variant_dict_insert_value(&dict, "draws", g_variant_new_uint64(self->draws));
  }
  return g_variant_dict_end(&dict);
}

/* The `draws` samples from start (G_MAXUINT64: as many as the first
 * `proposed` distinct ones take) into seen and order, as random_ask drew
 * them; FALSE when they give another number of proposals, or end at
 * another rng state than the one saved (another space than the study's). */
static gboolean
replay(RandomSearch *self, const SieveRng *start, guint64 proposed, guint64 draws, const SieveRng *saved,
       GError **error)
{
  SieveRng rng = *start;
  guint64 drawn = 0;
  while (drawn < draws && (draws != G_MAXUINT64 || self->order->len < proposed)) {
    if (draws == G_MAXUINT64 && (double) self->order->len >= self->size)
      break;
    drawn++;
    gboolean fresh;
    sieve_genotype_free(draw(self, &rng, &fresh));
  }
  g_autoptr(GVariant) got = g_variant_ref_sink(sieve_rng_save(&rng));
  g_autoptr(GVariant) want = g_variant_ref_sink(sieve_rng_save(saved));
  if (self->order->len != proposed || !g_variant_equal(got, want)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE,
                "the state's %" G_GUINT64_FORMAT " proposals do not draw again in this space (%u did, to another "
                "random state): it was saved for another space",
                proposed, self->order->len);
    return FALSE;
  }
  return TRUE;
}

static gboolean
random_load(gpointer instance, GVariant *state, GError **error)
{
  RandomSearch *self = instance;
  if (!g_variant_is_of_type(state, G_VARIANT_TYPE_VARDICT)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "expected a state of type a{sv}, got %s",
                g_variant_get_type_string(state));
    return FALSE;
  }
  g_autoptr(GVariant) rng = g_variant_lookup_value(state, "rng", NULL);
  g_autoptr(GVariant) proposed = g_variant_lookup_value(state, "proposed", G_VARIANT_TYPE_UINT64);
  g_autoptr(GVariant) start_state = g_variant_lookup_value(state, "start", NULL);
  g_autoptr(GVariant) draws = g_variant_lookup_value(state, "draws", G_VARIANT_TYPE_UINT64);
  g_autoptr(GVariant) seen = g_variant_lookup_value(state, "seen", G_VARIANT_TYPE_STRING_ARRAY);
  if (rng == NULL || (proposed == NULL && seen == NULL) || (proposed != NULL && start_state == NULL)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "the state lacks '%s'",
                rng == NULL ? "rng" : proposed == NULL ? "proposed" : "start");
    return FALSE;
  }
  SieveRng restored, start = self->start;
  if (!sieve_rng_load(&restored, rng, error) || (start_state != NULL && !sieve_rng_load(&start, start_state, error)))
    return FALSE;
  /* Drawn into fresh sets, so that a failed load leaves the optimizer as
   * it was. */
  GHashTable *old_seen = self->seen;
  GPtrArray *old_order = self->order;
  self->seen = g_hash_table_new(g_str_hash, g_str_equal);
  self->order = g_ptr_array_new_with_free_func(g_free);
  gboolean ok = TRUE;
  if (proposed != NULL) {
    if (self->unique) /* (only a unique search remembers, and counts, what it proposed) */
      ok = replay(self, &start, g_variant_get_uint64(proposed), draws ? g_variant_get_uint64(draws) : G_MAXUINT64,
                  &restored, error);
  } else if (self->unique) {
    gsize n = 0;
    g_autofree const char **texts = g_variant_get_strv(seen, &n);
    for (gsize i = 0; i < n; i++)
      if (!g_hash_table_contains(self->seen, texts[i]))
        remember(self, g_strdup(texts[i]));
  }
  if (!ok) {
    g_hash_table_unref(self->seen);
    g_ptr_array_unref(self->order);
    self->seen = old_seen;
    self->order = old_order;
    return FALSE;
  }
  g_hash_table_unref(old_seen);
  g_ptr_array_unref(old_order);
  self->rng = restored;
  self->start = start;
  self->draws = draws ? g_variant_get_uint64(draws) : 0;
  self->by_text = proposed == NULL;
  return TRUE;
}

static const SieveOptimizerClass random_class = {
  .create = random_create,
  .destroy = random_destroy,
  .ask = random_ask,
  .tell = random_tell,
  .save = random_save,
  .load = random_load,
};

static const SieveComponentInfo random_info = {
  .kind = SIEVE_KIND_OPTIMIZER,
  .name = "random",
  .summary = "uniform random search (optionally without repeats)",
  .options = random_options,
  .klass = &random_class,
};

static gboolean
random_init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &random_info, error);
}

SIEVE_PLUGIN_DEFINE("random", "0.1.0", "Random search", "MIT", random_init);
