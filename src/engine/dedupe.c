/* sieve: a proposal's hash and the cache key of the dedupe stage (see
 * dedupe.h).  After Gillard et al., "Unified Functional Hashing in Automatic
 * Machine Learning" (2023): a result is reused for every proposal that
 * hashes equal under the same evaluator settings. */
#include <math.h>
#include <string.h>

#include <json-glib/json-glib.h>

#include <sieve/hash.h>
#include <sieve/text.h>

#include "engine/engine-private.h"

/* ---- hashes ----------------------------------------------------------- */

static void
sha256_128(const char *text, char *out)
{
  g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);
  g_checksum_update(sum, (const guchar *) text, (gssize) strlen(text));
  /* 64 hex digits; the first 32 are the first 128 bits. */
  memcpy(out, g_checksum_get_string(sum), SIEVE_DEDUPE_HASH_LEN - 1);
  out[SIEVE_DEDUPE_HASH_LEN - 1] = '\0';
}

gboolean
sieve_dedupe_hash(const SieveSpace *space, const SieveGenotype *genotype, SieveDedupeHash kind, char *out,
                  GError **error)
{
  g_return_val_if_fail(space != NULL && genotype != NULL && out != NULL, FALSE);
  if (kind == SIEVE_DEDUPE_GENOTYPE) {
    g_autofree char *text = sieve_space_format(space, genotype);
    sha256_128(text, out);
    return TRUE;
  }
  SieveHash h;
  if (!sieve_space_hash(space, genotype, kind == SIEVE_DEDUPE_STRUCTURAL ? SIEVE_HASH_STRUCTURAL : SIEVE_HASH_FUNCTIONAL,
                        &h, error))
    return FALSE;
  G_STATIC_ASSERT(SIEVE_DEDUPE_HASH_LEN == SIEVE_HASH_TEXT_LEN);
  sieve_hash_format(&h, out);
  /* The recipe of a composite space (its decisions that do not shape the
   * network) makes a different trial of the same network: it joins the key. */
  g_autoptr(GString) keyed = NULL;
  for (guint i = 0; i < sieve_genotype_size(genotype); i++) {
    double v = sieve_genotype_get(genotype, i);
    if (sieve_space_is_architecture(space, i) || isnan(v))
      continue;
    if (keyed == NULL)
      keyed = g_string_new(out);
    g_autofree char *value = sieve_space_format_value(space, i, v);
    g_string_append_printf(keyed, "\n%s=%s", sieve_space_decision(space, i)->name, value);
  }
  if (keyed != NULL)
    sha256_128(keyed->str, out);
  return TRUE;
}

/* ---- cache keys ------------------------------------------------------- */

static void
add_option(JsonBuilder *b, const SieveOptions *options, const SieveOptionSpec *o)
{
  json_builder_set_member_name(b, o->name);
  switch (o->type) {
  case SIEVE_OPTION_TYPE_BOOL:
    json_builder_add_boolean_value(b, sieve_options_get_bool(options, o->name));
    return;
  case SIEVE_OPTION_TYPE_INT:
    json_builder_add_int_value(b, sieve_options_get_int(options, o->name));
    return;
  case SIEVE_OPTION_TYPE_FLOAT: {
    /* As text: JSON generators print doubles in their own ways.  The cache
     * keys of every store hold this text, so it stays as it is; files that
     * carry options write sieve__options_to_json's real numbers. */
    char buf[SIEVE_TEXT_DOUBLE_SIZE];
    sieve_text_format_double_buf(sieve_options_get_double(options, o->name), buf);
    json_builder_add_string_value(b, buf);
    return;
  }
  case SIEVE_OPTION_TYPE_STRING:
  case SIEVE_OPTION_TYPE_CHOICE:
  case SIEVE_OPTION_TYPE_PATH: {
    const char *s = sieve_options_get_string(options, o->name);
    if (s == NULL)
      json_builder_add_null_value(b);
    else
      json_builder_add_string_value(b, s);
    return;
  }
  case SIEVE_OPTION_TYPE_STRING_LIST: {
    const char *const *v = sieve_options_get_strv(options, o->name);
    if (v == NULL) {
      json_builder_add_null_value(b);
      return;
    }
    json_builder_begin_array(b);
    for (guint i = 0; v[i]; i++)
      json_builder_add_string_value(b, v[i]);
    json_builder_end_array(b);
    return;
  }
  case SIEVE_OPTION_TYPE_NODE: {
    const SieveNode *node = sieve_options_get_node(options, o->name);
    if (node == NULL) {
      json_builder_add_null_value(b);
      return;
    }
    g_autofree char *yaml = sieve_node_to_yaml(node);
    json_builder_add_string_value(b, yaml);
    return;
  }
  }
  g_assert_not_reached();
}

char *
sieve_options_to_canonical(const SieveOptions *options)
{
  g_return_val_if_fail(options != NULL, NULL);
  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_object(b);
  for (const SieveOptionSpec *o = sieve_options_spec(options); o && o->name; o++)
    add_option(b, options, o);
  json_builder_end_object(b);
  g_autoptr(JsonNode) root = json_builder_get_root(b);
  g_autoptr(JsonGenerator) gen = json_generator_new();
  json_generator_set_root(gen, root);
  return json_generator_to_data(gen, NULL);
}

char *
sieve_dedupe_key_text(const SieveExperiment *experiment, double fidelity)
{
  g_return_val_if_fail(experiment != NULL, NULL);
  g_autofree char *evaluator = sieve_options_to_canonical(experiment->evaluator.options);
  g_autofree char *space = sieve_options_to_canonical(experiment->space.options);
  char fid[SIEVE_TEXT_DOUBLE_SIZE];
  if (isnan(fidelity))
    g_strlcpy(fid, "default", sizeof fid);
  else
    sieve_text_format_double_buf(fidelity, fid);
  return g_strdup_printf("sieve cache key 1\n"
                         "evaluator: %s %s\n"
                         "fidelity: %s\n"
                         "space: %s %s\n",
                         sieve_component_get_name(experiment->evaluator.component), evaluator, fid,
                         sieve_component_get_name(experiment->space.component), space);
}

char *
sieve_dedupe_key_digest(const char *text)
{
  g_return_val_if_fail(text != NULL, NULL);
  return g_compute_checksum_for_string(G_CHECKSUM_SHA256, text, -1);
}
