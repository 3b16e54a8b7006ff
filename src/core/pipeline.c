/* sieve: the `pipeline:` list of an experiment: stage names, order and
 * options (the pipeline section of core-private.h). */
#include <math.h>
#include <string.h>

#include <sieve/proxy.h>

#include "core/core-private.h"

/* Stages in the only order they may take; the evaluator follows. */
static const char *const stage_names[] = {"dedupe", "latency", "screen", NULL};

static const char *const hash_names[] = {"functional", "structural", "genotype", NULL};

/* The hash's default depends on the space (genotype for spaces that build
 * no networks), so the table has none and the engine decides. */
static const SieveOptionSpec dedupe_spec[] = {
    {"hash", SIEVE_OPTION_TYPE_CHOICE, NULL, 0, 0, hash_names,
     "what makes two proposals the same: functional (what the network computes; the default), structural "
     "(the canonical graph) or genotype (the canonical text; the default for spaces that build no networks)",
     0, {NULL}},
    SIEVE_OPTION_STRING_LIST("cache_from", NULL,
                             "stores of other studies whose caches answer too, read-only (relative to the "
                             "experiment file); only their entries made under the same evaluator settings count"),
    SIEVE_OPTION_INT("max_consecutive_hits", "1000", 1, 1e12,
                     "stop the study after this many proposals in a row were all answered without an evaluation "
                     "(an optimizer that only re-proposes what it has seen, e.g. on an exhausted finite space)"),
    SIEVE_OPTION_END,
};

static const SieveOptionSpec screen_spec[] = {
    {"proxies", SIEVE_OPTION_TYPE_STRING_LIST, NULL, 0, 0, NULL,
     "a zero-cost proxy, or a list of them ranked together (the mean rank): see `sieve proxies`",
     SIEVE_OPTION_REQUIRED, {NULL}},
    SIEVE_OPTION_NODE("weights", "one weight >= 0 per proxy for the rank aggregation (default: equal)"),
    {"keep_fraction", SIEVE_OPTION_TYPE_FLOAT, NULL, 0, 1, NULL,
     "fraction of each round's proposals passed to the evaluator (rounded up; give this or keep_top)",
     SIEVE_OPTION_HAS_MIN | SIEVE_OPTION_HAS_MAX, {NULL}},
    {"keep_top", SIEVE_OPTION_TYPE_INT, NULL, 1, 1e9, NULL,
     "number of each round's proposals passed to the evaluator (give this or keep_fraction)",
     SIEVE_OPTION_HAS_MIN | SIEVE_OPTION_HAS_MAX, {NULL}},
    SIEVE_OPTION_INT("batch", "16", 1, 1e6, "proposals asked from the optimizer per screening round"),
    SIEVE_OPTION_INT("batch_size", "64", 1, 65536, "examples in the proxies' batch"),
    {"seed", SIEVE_OPTION_TYPE_INT, NULL, 0, 9007199254740992.0, NULL,
     "seed of the proxies' initial weights and batch (default: the experiment's seed)",
     SIEVE_OPTION_HAS_MIN | SIEVE_OPTION_HAS_MAX, {NULL}},
    SIEVE_PROXY_DATA_OPTIONS,
    SIEVE_PROXY_DEVICE_OPTION,
    SIEVE_OPTION_END,
};

static const SieveOptionSpec latency_spec[] = {
    SIEVE_LATENCY_OPTIONS,
    SIEVE_OPTION_END,
};

static const char *const stage_summaries[] = {
    "answer proposals that hash equal to one already evaluated (or on its way) from the store's cache",
    "measure each proposal's inference latency on this machine (latency_ms, latency_iqr_ms, latency_cpu_ms, "
    "peak_mem_mb), for "
    "constraints and objectives; its batch and threads also key the latency table (predicted_latency_ms)",
    "score each round of proposals with zero-cost proxies and pass only the best to the evaluator",
};
static const SieveOptionSpec *const stage_specs[] = {dedupe_spec, latency_spec, screen_spec};
/* A list item that works as written in any pipeline: screen needs its
 * proxies and keep_top or keep_fraction (checked when loading), which an
 * example built from the table's required options would lack. */
static const char *const stage_examples[] = {
    "dedupe",
    "latency: {batch: 1, threads: 1, max_seconds: 0.5}",
    "screen: {proxies: [naswot, synflow], keep_top: 2, batch: 8, batch_size: 16}",
};

static gint
stage_index(const char *name)
{
  for (guint i = 0; stage_names[i]; i++)
    if (g_strcmp0(name, stage_names[i]) == 0)
      return (gint) i;
  return -1;
}

const char *const *
sieve_pipeline_stage_names(void)
{
  return stage_names;
}

const char *
sieve_pipeline_stage_summary(const char *name)
{
  gint i = stage_index(name);
  return i < 0 ? NULL : stage_summaries[i];
}

const SieveOptionSpec *
sieve_pipeline_stage_spec(const char *name)
{
  gint i = stage_index(name);
  return i < 0 ? NULL : stage_specs[i];
}

const char *
sieve_pipeline_stage_example(const char *name)
{
  gint i = stage_index(name);
  return i < 0 ? NULL : stage_examples[i];
}

const char *
sieve_dedupe_hash_name(SieveDedupeHash hash)
{
  g_return_val_if_fail(hash <= SIEVE_DEDUPE_GENOTYPE, NULL);
  return hash_names[hash];
}

gboolean
sieve_dedupe_hash_from_name(const char *name, SieveDedupeHash *out)
{
  for (guint i = 0; name != NULL && hash_names[i]; i++)
    if (strcmp(name, hash_names[i]) == 0) {
      *out = (SieveDedupeHash) i;
      return TRUE;
    }
  return FALSE;
}

void
sieve_pipeline_clear(SievePipeline *pipeline)
{
  if (pipeline == NULL)
    return;
  g_strfreev(pipeline->dedupe.cache_from);
  g_strfreev(pipeline->screen.proxies);
  g_free(pipeline->screen.dataset);
  g_free(pipeline->screen.data_dir);
  g_free(pipeline->screen.device);
  g_free(pipeline->screen.weights);
  memset(pipeline, 0, sizeof *pipeline);
}

static gboolean
load_dedupe(SieveDedupeStage *out, const SieveNode *stage, const SieveNode *options_node, const char *base_dir,
            GError **error)
{
  g_autoptr(SieveOptions) o = sieve_options_new(dedupe_spec, options_node, NULL, NULL, "stage 'dedupe'", error);
  if (o == NULL)
    return FALSE;
  out->enabled = TRUE;
  out->node = stage;
  out->hash_set = sieve_options_is_set(o, "hash");
  if (!sieve_dedupe_hash_from_name(sieve_options_get_string(o, "hash"), &out->hash))
    out->hash = SIEVE_DEDUPE_FUNCTIONAL;
  out->max_consecutive_hits = sieve_options_get_int(o, "max_consecutive_hits");
  const char *const *from = sieve_options_get_strv(o, "cache_from");
  guint n = from ? g_strv_length((char **) from) : 0;
  out->cache_from = g_new0(char *, n + 1);
  out->cache_from_node = sieve_options_node(o, "cache_from");
  for (guint i = 0; i < n; i++)
    out->cache_from[i] = g_canonicalize_filename(from[i], base_dir);
  return TRUE;
}

static gboolean
load_screen(SieveScreenStage *out, const SieveNode *stage, const SieveNode *options_node, guint64 seed,
            GError **error)
{
  if (options_node == NULL) {
    sieve_node_set_error(error, stage,
                         "stage 'screen' needs its options, e.g. - screen: {proxies: [naswot], keep_top: 4}");
    return FALSE;
  }
  g_autoptr(SieveOptions) o = sieve_options_new(screen_spec, options_node, NULL, NULL, "stage 'screen'", error);
  if (o == NULL)
    return FALSE;
  out->enabled = TRUE;
  out->node = stage;
  out->proxies_node = sieve_options_node(o, "proxies");
  if (!sieve_proxy_options_read(o, &out->proxies, &out->n_proxies, &out->weights, error))
    return FALSE;

  gboolean has_fraction = sieve_options_is_set(o, "keep_fraction");
  gboolean has_top = sieve_options_is_set(o, "keep_top");
  if (has_fraction == has_top) {
    sieve_node_set_error(error, has_top ? sieve_options_node(o, "keep_top") : stage,
                         has_top ? "give either keep_top or keep_fraction, not both"
                                 : "stage 'screen' needs keep_top (a number of proposals) or keep_fraction "
                                   "(a fraction of them) to pass to the evaluator");
    return FALSE;
  }
  out->batch = sieve_options_get_int(o, "batch");
  if (has_fraction) {
    out->keep_fraction = sieve_options_get_double(o, "keep_fraction");
    if (out->keep_fraction <= 0) {
      sieve_options_set_error(o, "keep_fraction", error, "keep_fraction must be > 0 (and at most 1), got %g",
                              out->keep_fraction);
      return FALSE;
    }
  } else {
    out->keep_top = sieve_options_get_int(o, "keep_top");
    if (out->keep_top >= out->batch) {
      sieve_options_set_error(o, "keep_top", error,
                              "keep_top (%" G_GINT64_FORMAT ") must be smaller than batch (%" G_GINT64_FORMAT
                              "), or the screen passes everything",
                              out->keep_top, out->batch);
      return FALSE;
    }
  }
  out->proxy_batch = sieve_options_get_int(o, "batch_size");
  out->dataset = g_strdup(sieve_options_get_string(o, "dataset"));
  out->data_dir = g_strdup(sieve_options_get_string(o, "data_dir"));
  out->device = g_strdup(sieve_options_get_string(o, "device"));
  out->dataset_node = sieve_options_node(o, "dataset");
  out->device_node = sieve_options_node(o, "device");
  out->seed = sieve_options_is_set(o, "seed") ? (guint64) sieve_options_get_int(o, "seed") : seed;
  return TRUE;
}

static gboolean
load_latency(SieveLatencyStage *out, const SieveNode *stage, const SieveNode *options_node, GError **error)
{
  g_autoptr(SieveOptions) o = sieve_options_new(latency_spec, options_node, NULL, NULL, "stage 'latency'", error);
  if (o == NULL)
    return FALSE;
  out->enabled = TRUE;
  out->node = stage;
  sieve_latency_options_read(o, &out->options);
  return TRUE;
}

/* An item: a stage's name, or a map of one key (the name) to its options. */
static gboolean
split_item(const SieveNode *item, const char **name, const SieveNode **options, const SieveNode **name_node,
           GError **error)
{
  if (sieve_node_kind(item) == SIEVE_NODE_SCALAR) {
    *name = sieve_node_text(item);
    *name_node = item;
    *options = NULL;
    return TRUE;
  }
  if (sieve_node_kind(item) != SIEVE_NODE_MAP || sieve_node_size(item) != 1) {
    sieve_node_set_error(error, item,
                         "a pipeline stage is a name (- dedupe) or a map of its name to its options "
                         "(- screen: {proxies: [naswot], keep_top: 4})");
    return FALSE;
  }
  *name_node = sieve_node_nth_key(item, 0);
  *name = sieve_node_text(*name_node);
  *options = sieve_node_nth(item, 0);
  if (sieve_node_kind(*options) == SIEVE_NODE_SCALAR && sieve_node_is_null(*options))
    *options = NULL; /* `- dedupe:` with nothing after it */
  else if (sieve_node_kind(*options) != SIEVE_NODE_MAP) {
    sieve_node_set_error(error, *options, "the options of stage '%s' must be a map, e.g. {%s}", *name,
                         strcmp(*name, "screen") == 0 ? "proxies: [naswot], keep_top: 4" : "hash: structural");
    return FALSE;
  }
  return TRUE;
}

gboolean
sieve_pipeline_load(SievePipeline *out, const SieveNode *node, guint64 seed, const char *base_dir,
                    GError **error)
{
  g_return_val_if_fail(out != NULL, FALSE);
  if (node == NULL)
    return TRUE;
  if (sieve_node_kind(node) != SIEVE_NODE_LIST) {
    sieve_node_set_error(error, node, "'pipeline' must be a list of stages, e.g. [dedupe] or "
                                      "[dedupe, {screen: {proxies: [naswot], keep_top: 4}}]");
    return FALSE;
  }
  const SieveNode *seen[G_N_ELEMENTS(stage_names)] = {NULL};
  gint last = -1;
  for (guint i = 0; i < sieve_node_size(node); i++) {
    const SieveNode *item = sieve_node_nth(node, i), *options, *name_node;
    const char *name;
    if (!split_item(item, &name, &options, &name_node, error))
      return FALSE;
    gint k = -1;
    for (guint j = 0; stage_names[j]; j++)
      if (strcmp(name, stage_names[j]) == 0)
        k = (gint) j;
    if (k < 0) {
      if (strcmp(name, "evaluator") == 0 || strcmp(name, "evaluate") == 0) {
        sieve_node_set_error(error, name_node,
                             "the evaluator is always the last stage and is set by the top-level "
                             "'evaluator:' section; list only the stages before it (dedupe, latency, screen)");
        return FALSE;
      }
      const char *guess = sieve_suggest(name, (const char *const *) stage_names);
      g_autofree char *hint = guess ? g_strdup_printf(" (did you mean '%s'?)", guess) : g_strdup("");
      g_autofree char *known = g_strjoinv(", ", (char **) stage_names);
      sieve_node_set_error(error, name_node, "unknown pipeline stage '%s'%s; known stages: %s", name, hint, known);
      return FALSE;
    }
    if (seen[k] != NULL) {
      g_autofree char *first = sieve_node_where(seen[k]);
      sieve_node_set_error(error, name_node, "stage '%s' is listed twice (first at %s)", name, first);
      return FALSE;
    }
    if (k < last) {
      /* (the engine runs the latency stage with the constraints, before
       * dedupe: functionally equal networks may differ in latency) */
      sieve_node_set_error(error, name_node, "stage '%s' must come before '%s': %s", name, stage_names[last],
                           strcmp(stage_names[last], "screen") == 0
                               ? "the screen comes last and scores only the proposals dedupe lets through"
                               : "the stages are listed in the order dedupe, latency, screen (the latency stage "
                                 "measures every proposal before dedupe, wherever it is listed: a duplicate's own "
                                 "latency)");
      return FALSE;
    }
    seen[k] = name_node;
    last = k;
    gboolean ok = k == 0   ? load_dedupe(&out->dedupe, item, options, base_dir, error)
                  : k == 1 ? load_latency(&out->latency, item, options, error)
                           : load_screen(&out->screen, item, options, seed, error);
    if (!ok)
      return FALSE;
  }
  return TRUE;
}
