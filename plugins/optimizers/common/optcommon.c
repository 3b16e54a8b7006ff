/* sieve optimizers: shared helpers (state, proposals seen, mutation,
 * neighbourhoods).  See optcommon.h. */
#include <string.h>

#include <sieve/abi.h>
#include <sieve/rng.h>
#include <sieve/space.h>
#include <sieve/text.h>

#include "optcommon.h"

/* ---- state helpers ----------------------------------------------------- */

gboolean
opt_state_check(GVariant *state, GError **error)
{
  if (!g_variant_is_of_type(state, G_VARIANT_TYPE_VARDICT)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "expected a state of type a{sv}, got %s",
                g_variant_get_type_string(state));
    return FALSE;
  }
  return TRUE;
}

gboolean
opt_one_objective(const SieveStudyInfo *study, const char *what, GError **error)
{
  if (study->n_objectives <= 1)
    return TRUE;
  g_autoptr(GString) names = g_string_new(NULL);
  for (guint k = 0; k < study->n_objectives; k++) /* (not NULL-terminated) */
    g_string_append_printf(names, "%s%s", k ? ", " : "", study->objective_names[k]);
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
              "%s by one objective, and this study has %u (%s): use `evolution` with "
              "`selection: nsga2` for a Pareto front (or `random`); or keep one objective, since every metric the "
              "evaluator reports is stored and exported anyway",
              what, study->n_objectives, names->str);
  return FALSE;
}

GVariant *
opt_state_lookup(GVariant *state, const char *key, const GVariantType *type, GError **error)
{
  GVariant *v = g_variant_lookup_value(state, key, type);
  if (v == NULL) {
    g_autofree char *wanted = g_variant_type_dup_string(type);
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "the state lacks '%s' of type %s", key, wanted);
  }
  return v;
}

GVariant *
opt_array_new(const GVariantType *element, gconstpointer data, gsize n, gsize size)
{
  g_return_val_if_fail(!g_variant_type_equal(element, G_VARIANT_TYPE_BOOLEAN), NULL);
  g_autoptr(GVariantType) type = g_variant_type_new_array(element);
  /* Trusted: every bit pattern of these elements is in normal form.  An
   * untrusted one (g_variant_new_fixed_array's) is checked element by
   * element when the store takes its normal form, at every save. */
  GBytes *bytes = g_bytes_new(data, n * size);
  GVariant *v = g_variant_new_from_bytes(type, bytes, TRUE);
  g_bytes_unref(bytes);
  return v;
}

GVariant *
opt_genotype_save(const SieveGenotype *genotype)
{
  guint n = sieve_genotype_size(genotype);
  double values[n ? n : 1];
  for (guint i = 0; i < n; i++)
    values[i] = sieve_genotype_get(genotype, i);
  return opt_array_new(G_VARIANT_TYPE_DOUBLE, values, n, sizeof(double));
}

SieveGenotype *
opt_genotype_load(const SieveSpace *space, GVariant *values, GError **error)
{
  gsize n = 0;
  const double *v = g_variant_get_fixed_array(values, &n, sizeof(double));
  if (n != sieve_space_n_decisions(space)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "a saved genotype has %zu values, the space %u decisions",
                n, sieve_space_n_decisions(space));
    return NULL;
  }
  g_autoptr(SieveGenotype) g = sieve_genotype_new(space);
  for (gsize i = 0; i < n; i++)
    sieve_genotype_set(g, (guint) i, v[i]);
  if (!sieve_space_validate(space, g, error))
    return NULL;
  return g_steal_pointer(&g);
}

GVariant *
opt_genotypes_save(GPtrArray *genotypes)
{
  GVariantBuilder b;
  g_variant_builder_init(&b, G_VARIANT_TYPE("aad"));
  for (guint i = 0; i < genotypes->len; i++)
    g_variant_builder_add_value(&b, opt_genotype_save(genotypes->pdata[i]));
  return g_variant_builder_end(&b);
}

GPtrArray *
opt_genotypes_load(const SieveSpace *space, GVariant *array, GError **error)
{
  g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_genotype_free);
  gsize n = g_variant_n_children(array);
  for (gsize i = 0; i < n; i++) {
    g_autoptr(GVariant) child = g_variant_get_child_value(array, i);
    SieveGenotype *g = opt_genotype_load(space, child, error);
    if (g == NULL)
      return NULL;
    g_ptr_array_add(out, g);
  }
  return g_steal_pointer(&out);
}

/* ---- proposals already made ------------------------------------------- */

void
opt_seen_init(OptSeen *seen, const SieveSpace *space)
{
  seen->space = space;
  seen->set = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  seen->values = g_hash_table_new_full(g_bytes_hash, g_bytes_equal, (GDestroyNotify) g_bytes_unref, NULL);
  seen->packed = g_byte_array_new();
}

void
opt_seen_clear(OptSeen *seen)
{
  g_clear_pointer(&seen->set, g_hash_table_unref);
  g_clear_pointer(&seen->values, g_hash_table_unref);
  g_clear_pointer(&seen->packed, g_byte_array_unref);
}

/* The values of g with one bit pattern per value: NAN and -0 normalised,
 * so that equal genotypes (sieve_genotype_equal) give equal keys. */
static GBytes *
values_key(const SieveGenotype *g)
{
  guint n = sieve_genotype_size(g);
  double *v = g_new(double, n ? n : 1);
  for (guint i = 0; i < n; i++) {
    double x = sieve_genotype_get(g, i);
    v[i] = isnan(x) ? NAN : x == 0 ? 0.0 : x;
  }
  return g_bytes_new_take(v, n * sizeof(double));
}

gboolean
opt_seen_add(OptSeen *seen, const char *text, const SieveGenotype *g)
{
  if (g_hash_table_contains(seen->set, text))
    return FALSE;
  g_hash_table_add(seen->set, g_strdup(text));
  g_hash_table_add(seen->values, values_key(g));
  g_byte_array_append(seen->packed, (const guint8 *) text, strlen(text) + 1);
  return TRUE;
}

gboolean
opt_seen_contains(const OptSeen *seen, const char *text)
{
  return g_hash_table_contains(seen->set, text);
}

gboolean
opt_seen_has_genotype(const OptSeen *seen, const SieveGenotype *g)
{
  g_autoptr(GBytes) key = values_key(g);
  return g_hash_table_contains(seen->values, key);
}

guint
opt_seen_size(const OptSeen *seen)
{
  return g_hash_table_size(seen->set);
}

GVariant *
opt_seen_save(const OptSeen *seen)
{
  /* One copy of bytes kept as they are added: a "as" of the same texts
   * built a GVariant per text at every save, after every ask and tell,
   * which made a study of n trials cost O(n^2) allocations (38 s of
   * saving at 4,000 evolution trials). */
  return opt_array_new(G_VARIANT_TYPE_BYTE, seen->packed->data, seen->packed->len, 1);
}

GVariant *
opt_texts_lookup(GVariant *state, const char *key, GError **error)
{
  GVariant *v = g_variant_lookup_value(state, key, NULL);
  if (v != NULL && (g_variant_is_of_type(v, G_VARIANT_TYPE_BYTESTRING) ||
                    g_variant_is_of_type(v, G_VARIANT_TYPE_STRING_ARRAY)))
    return v;
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "the state lacks '%s' of type ay (or as)", key);
  g_clear_pointer(&v, g_variant_unref);
  return NULL;
}

const char **
opt_saved_texts(GVariant *texts, gsize *n, GError **error)
{
  if (g_variant_is_of_type(texts, G_VARIANT_TYPE_STRING_ARRAY))
    return g_variant_get_strv(texts, n);
  if (!g_variant_is_of_type(texts, G_VARIANT_TYPE_BYTESTRING)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "saved proposals of type %s, not ay or as",
                g_variant_get_type_string(texts));
    return NULL;
  }
  gsize len = 0;
  const char *data = g_variant_get_fixed_array(texts, &len, 1);
  if (len > 0 && data[len - 1] != '\0') {
    g_set_error_literal(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "the saved proposals do not end with a NUL byte");
    return NULL;
  }
  GPtrArray *out = g_ptr_array_new();
  for (gsize at = 0; at < len; at += strlen(data + at) + 1) {
    if (!g_utf8_validate(data + at, -1, NULL)) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "saved proposal #%u is not UTF-8", out->len + 1);
      g_ptr_array_unref(out);
      return NULL;
    }
    g_ptr_array_add(out, (gpointer) (data + at));
  }
  *n = out->len;
  g_ptr_array_add(out, NULL);
  return (const char **) g_ptr_array_free(out, FALSE);
}

gboolean
opt_seen_parse(OptSeen *out, const SieveSpace *space, GVariant *texts, GError **error)
{
  opt_seen_init(out, space);
  gsize n = 0;
  g_autofree const char **v = opt_saved_texts(texts, &n, error);
  if (v == NULL) {
    opt_seen_clear(out);
    return FALSE;
  }
  for (gsize i = 0; i < n; i++) {
    /* A saved state is input (a store, possibly of another version of the
     * space): a text the space cannot read is an error, not an abort. */
    GError *local = NULL;
    g_autoptr(SieveGenotype) g = sieve_space_parse(space, v[i], &local);
    if (g == NULL) {
      g_propagate_prefixed_error(error, local, "saved proposal #%" G_GSIZE_FORMAT ": ", i + 1);
      opt_seen_clear(out);
      return FALSE;
    }
    opt_seen_add(out, v[i], g);
  }
  return TRUE;
}

void
opt_seen_replace(OptSeen *seen, OptSeen *loaded)
{
  opt_seen_clear(seen);
  *seen = *loaded;
  *loaded = (OptSeen){0};
}

gboolean
opt_seen_load(OptSeen *seen, GVariant *texts, GError **error)
{
  OptSeen loaded;
  if (!opt_seen_parse(&loaded, seen->space, texts, error))
    return FALSE;
  opt_seen_replace(seen, &loaded);
  return TRUE;
}

char *
opt_key(const char *text, double fidelity)
{
  if (isnan(fidelity))
    return g_strdup(text);
  char buf[SIEVE_TEXT_DOUBLE_SIZE];
  return g_strconcat(sieve_text_format_double_buf(fidelity, buf), "@", text, NULL);
}

/* ---- the space --------------------------------------------------------- */

void
opt_domain_bounds(const SieveDecision *d, double *lo, double *hi)
{
  double low = d->low, high = d->high;
  if (d->kind == SIEVE_DECISION_INT) {
    low -= 0.5;
    high += 0.5;
  }
  if (d->log) {
    low = log(low);
    high = log(high);
  }
  *lo = low;
  *hi = high;
}

double
opt_to_unit(const SieveDecision *d, double value)
{
  double lo, hi;
  opt_domain_bounds(d, &lo, &hi);
  if (hi <= lo)
    return 0.5;
  double x = d->log ? log(value) : value;
  return CLAMP((x - lo) / (hi - lo), 0.0, 1.0);
}

double
opt_from_unit(const SieveDecision *d, double unit)
{
  double lo, hi;
  opt_domain_bounds(d, &lo, &hi);
  double x = lo + CLAMP(unit, 0.0, 1.0) * (hi - lo);
  if (d->log)
    x = exp(x);
  if (d->kind == SIEVE_DECISION_INT)
    x = round(x);
  return CLAMP(x, d->low, d->high);
}

/* Number of values decision d can take, INFINITY for floats. */
static double
decision_values(const SieveDecision *d)
{
  switch (d->kind) {
  case SIEVE_DECISION_CATEGORICAL:
    return d->n_choices;
  case SIEVE_DECISION_INT:
    return d->high - d->low + 1;
  case SIEVE_DECISION_FLOAT:
    return d->high > d->low ? INFINITY : 1;
  }
  return 1;
}

/* A Gaussian step of sd 0.1 in unit space, reflected into [0, 1], redrawn
 * (up to a bound) until the decision's value changes. */
static double
numeric_step(const SieveDecision *d, double value, SieveRng *rng)
{
  double u = opt_to_unit(d, value);
  for (guint tries = 0; tries < 64; tries++) {
    double v = u + 0.1 * sieve_rng_normal(rng);
    while (v < 0 || v > 1)
      v = v < 0 ? -v : 2 - v;
    double x = opt_from_unit(d, v);
    if (x != value)
      return x;
  }
  /* A narrow int far from where steps land: any other value. */
  if (d->kind == SIEVE_DECISION_INT) {
    double x = d->low + (double) sieve_rng_below(rng, (guint64) (d->high - d->low));
    return x >= value ? x + 1 : x;
  }
  return value;
}

/* Tries at a change that keeps a genotype a member of its space (a space
 * with a check, sieve/space.h) before a copy is given instead. */
#define MEMBER_TRIES 100

gboolean
opt_member(const SieveSpace *space, const SieveGenotype *g)
{
  return sieve_space_validate(space, g, NULL);
}

static SieveGenotype *
mutate_once(const SieveSpace *space, const SieveGenotype *parent, SieveRng *rng)
{
  SieveGenotype *child = sieve_genotype_copy(parent);
  guint n = sieve_space_n_decisions(space);
  guint changeable[n ? n : 1], m = 0;
  for (guint i = 0; i < n; i++)
    if (sieve_space_is_active(space, parent, i) && decision_values(sieve_space_decision(space, i)) > 1)
      changeable[m++] = i;
  if (m == 0)
    return child;
  guint i = changeable[sieve_rng_below(rng, m)];
  const SieveDecision *d = sieve_space_decision(space, i);
  double value = sieve_genotype_get(parent, i);
  if (d->kind == SIEVE_DECISION_CATEGORICAL) {
    double other = (double) sieve_rng_below(rng, d->n_choices - 1);
    sieve_genotype_set(child, i, other >= value ? other + 1 : other);
  } else {
    sieve_genotype_set(child, i, numeric_step(d, value, rng));
  }
  /* Children of a changed categorical: those switched on get a value, and
   * those switched off lose theirs. */
  for (guint c = i + 1; c < n; c++)
    if (!sieve_space_is_active(space, child, c))
      sieve_genotype_set(child, c, NAN);
  sieve_genotype_repair(child, rng);
  return child;
}

SieveGenotype *
opt_mutate(const SieveSpace *space, const SieveGenotype *parent, SieveRng *rng)
{
  /* Redrawn until a member, as NAS-Bench-101's own mutate_spec() does. */
  for (guint t = 0; t < MEMBER_TRIES; t++) {
    SieveGenotype *child = mutate_once(space, parent, rng);
    if (opt_member(space, child))
      return child;
    sieve_genotype_free(child);
  }
  return sieve_genotype_copy(parent);
}

static SieveGenotype *
crossover_once(const SieveSpace *space, const SieveGenotype *a, const SieveGenotype *b, SieveRng *rng)
{
  SieveGenotype *child = sieve_genotype_copy(a);
  guint n = sieve_space_n_decisions(space);
  for (guint i = 0; i < n; i++)
    if (sieve_rng_below(rng, 2))
      sieve_genotype_set(child, i, sieve_genotype_get(b, i));
  /* A value taken where the new parent values switch the decision off goes;
   * one missing where they switch it on is drawn. */
  for (guint i = 0; i < n; i++)
    if (!sieve_space_is_active(space, child, i))
      sieve_genotype_set(child, i, NAN);
  sieve_genotype_repair(child, rng);
  return child;
}

SieveGenotype *
opt_crossover(const SieveSpace *space, const SieveGenotype *a, const SieveGenotype *b, SieveRng *rng)
{
  for (guint t = 0; t < MEMBER_TRIES; t++) {
    SieveGenotype *child = crossover_once(space, a, b, rng);
    if (opt_member(space, child))
      return child;
    sieve_genotype_free(child);
  }
  return sieve_genotype_copy(a);
}

/* The neighbour of g with decision i at value, or NULL when that is not a
 * member of the space. */
static SieveGenotype *
with_value(const SieveSpace *space, const SieveGenotype *g, guint i, double value, SieveRng *rng)
{
  SieveGenotype *n = sieve_genotype_copy(g);
  sieve_genotype_set(n, i, value);
  for (guint c = i + 1; c < sieve_space_n_decisions(space); c++)
    if (!sieve_space_is_active(space, n, c))
      sieve_genotype_set(n, c, NAN);
  sieve_genotype_repair(n, rng);
  if (!opt_member(space, n))
    g_clear_pointer(&n, sieve_genotype_free);
  return n;
}

static void
add_neighbour(GPtrArray *out, SieveGenotype *n)
{
  if (n != NULL)
    g_ptr_array_add(out, n);
}

GPtrArray *
opt_neighbours(const SieveSpace *space, const SieveGenotype *g, guint max_numeric, SieveRng *rng)
{
  GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_genotype_free);
  guint n = sieve_space_n_decisions(space);
  for (guint i = 0; i < n; i++) {
    if (!sieve_space_is_active(space, g, i))
      continue;
    const SieveDecision *d = sieve_space_decision(space, i);
    double value = sieve_genotype_get(g, i), count = decision_values(d);
    if (count <= 1)
      continue;
    if (d->kind == SIEVE_DECISION_CATEGORICAL || count <= 16) {
      double first = d->kind == SIEVE_DECISION_CATEGORICAL ? 0 : d->low;
      for (double v = first; v < first + count; v++)
        if (v != value)
          add_neighbour(out, with_value(space, g, i, v, rng));
      continue;
    }
    for (guint k = 0; k < max_numeric; k++) {
      double v = numeric_step(d, value, rng);
      if (v != value)
        add_neighbour(out, with_value(space, g, i, v, rng));
    }
  }
  /* Fisher-Yates, so that ties and first-improvement do not favour the
   * first decisions. */
  for (guint i = out->len; i > 1; i--) {
    guint j = (guint) sieve_rng_below(rng, i);
    gpointer t = out->pdata[i - 1];
    out->pdata[i - 1] = out->pdata[j];
    out->pdata[j] = t;
  }
  return out;
}

SieveCandidate *
opt_propose(GPtrArray *out, OptSeen *seen, const SieveSpace *space, SieveRng *rng, SieveGenotype *g)
{
  /* The last guard for every optimizer: what is not a member of the space
   * (sieve/space.h, SieveSpaceClass.check) is never proposed. */
  if (g != NULL && !opt_member(space, g))
    g_clear_pointer(&g, sieve_genotype_free);
  if (g == NULL)
    g = opt_sample_unseen(space, seen, rng, OPT_RANDOM_TRIES);
  if (g == NULL)
    return NULL;
  SieveCandidate *c = sieve_candidate_new(g, NAN);
  opt_seen_add(seen, sieve_candidate_get_text(c), sieve_candidate_get_genotype(c));
  g_ptr_array_add(out, c);
  return c;
}

SieveGenotype *
opt_sample_unseen(const SieveSpace *space, const OptSeen *seen, SieveRng *rng, guint max_tries)
{
  for (guint t = 0; t < max_tries; t++) {
    g_autoptr(SieveGenotype) g = sieve_space_sample(space, rng);
    if (!opt_seen_has_genotype(seen, g))
      return g_steal_pointer(&g);
  }
  return NULL;
}

double
opt_tier(const SieveResult *result, double fitness)
{
  if (sieve_result_get_status(result) != SIEVE_STATUS_PRUNED)
    return opt_tier_finished(fitness);
  double step;
  if (!sieve_result_get_metric(result, "step", &step))
    return -1; /* no step told: below every pruned trial that told one (steps are >= 0) */
  return opt_fitness(step); /* a step that is not a number ranks with the failed */
}
