/* sieve: the experiment's `pipeline:`, the stages a proposal passes before
 * the evaluator (the top-level `evaluator:` section, always the last stage).
 *
 *   pipeline:
 *     - dedupe                          # or: - dedupe: {hash: structural}
 *     - screen: {proxies: [naswot, snip], keep_top: 4, batch: 16}
 *
 * dedupe answers a proposal whose hash is already in the store's cache (or
 * is being evaluated right now, or is in the cache of one of the stores
 * named by cache_from) without evaluating it.  Its hash is
 *   functional  (default for spaces that build networks) what the network
 *               computes, see sieve/hash.h;
 *   structural  the canonical graph;
 *   genotype    the canonical genotype text (the default, and the only kind,
 *               for spaces that build no networks, e.g. hyper-parameter spaces).
 * screen asks the optimizer for `batch` proposals at a time, scores the ones
 * dedupe let through with zero-cost proxies (one proxy, or several ranked
 * together: the mean rank, weighted by `weights`) and passes only the best
 * keep_top / keep_fraction to the evaluator.
 *
 * Each stage's options are validated by an option table (unknown keys and
 * bad values are located errors with suggestions), as plugin sections are.
 */
#pragma once

#include <sieve/sieve.h>

#include "internal.h"

G_BEGIN_DECLS

typedef enum {
  SIEVE_DEDUPE_FUNCTIONAL,
  SIEVE_DEDUPE_STRUCTURAL,
  SIEVE_DEDUPE_GENOTYPE,
} SieveDedupeHash;

typedef struct {
  gboolean enabled;
  const SieveNode *node;    /* the stage as written (borrowed from the experiment's tree) */
  SieveDedupeHash hash;
  gboolean hash_set;        /* written by the user (else the default for the space) */
  gint64 max_consecutive_hits;
  char **cache_from;        /* NULL-terminated absolute paths of other stores (owned) */
  const SieveNode *cache_from_node;
} SieveDedupeStage;

typedef struct {
  gboolean enabled;
  const SieveNode *node;
  char **proxies;           /* NULL-terminated (owned) */
  guint n_proxies;
  double *weights;          /* n_proxies, NULL: equal (the mean rank) (owned) */
  const SieveNode *proxies_node; /* where the names were written, for errors */
  double keep_fraction;     /* 0 when keep_top is used */
  gint64 keep_top;          /* 0 when keep_fraction is used */
  gint64 batch;             /* proposals asked per screening round */
  gint64 proxy_batch;       /* examples of the proxies' batch */
  guint64 seed;             /* the proxies' weights and batch */
  char *dataset;            /* the batch's examples from this dataset (owned, nullable: N(0,1)) */
  char *data_dir;           /* (owned, nullable) */
  const SieveNode *dataset_node;
} SieveScreenStage;

typedef struct {
  SieveDedupeStage dedupe;
  SieveScreenStage screen;
} SievePipeline;

/* Reads `pipeline:` (node may be NULL: no stages) into out, which the
 * caller zeroed.  seed: the experiment's, the screen's default; base_dir
 * resolves relative paths.  Errors say file:line:col.  On failure out may
 * hold partial values: clear it. */
SIEVE_INTERNAL_API gboolean sieve_pipeline_load(SievePipeline *out, const SieveNode *node, guint64 seed,
                                                const char *base_dir, GError **error);
SIEVE_INTERNAL_API void sieve_pipeline_clear(SievePipeline *pipeline);

/* The `proxies` (a string list) and `weights` (a node) options of o, read
 * as the screen stage and the proxy evaluator take them: at least one
 * proxy, none listed twice; weights, where written, one finite number >= 0
 * per proxy, not all zero.  On success *names (NULL-terminated, n_names
 * long) and *weights (n_names values, NULL when not written: equal) are
 * (transfer full); on failure they are untouched.  Errors point at the
 * option as written.  Whether each name is a known proxy is
 * sieve_proxy_check_names's to say. */
SIEVE_INTERNAL_API gboolean sieve_pipeline_proxies_load(const SieveOptions *o, char ***names, guint *n_names,
                                                        double **weights, GError **error);

/* The option-table entries `dataset` and `data_dir` of the proxies' batch,
 * read by the screen stage and the proxy evaluator alike (one text for
 * both, in their docs and their errors). */
#define SIEVE_SCREEN_DATA_OPTIONS                                                                                \
  {"dataset", SIEVE_OPTION_TYPE_STRING, NULL, 0, 0, NULL,                                                        \
   "take the batch from this dataset's training split (fashion-mnist, mnist, cifar10, csv:FILE ...): a seeded "  \
   "sample, normalised per channel, as `sieve proxies --dataset`; default: N(0,1) inputs and uniform labels",    \
   0, {NULL}},                                                                                                   \
  {"data_dir", SIEVE_OPTION_TYPE_STRING, NULL, 0, 0, NULL,                                                       \
   "where the dataset's files are (default: its usual place)", 0, {NULL}}

/* "functional", "structural", "genotype" (transfer none) */
SIEVE_INTERNAL_API const char *sieve_dedupe_hash_name(SieveDedupeHash hash);

/* The stages, in their order (NULL-terminated), for docs (`sieve plugins`).
 * (transfer none) */
SIEVE_INTERNAL_API const char *const *sieve_pipeline_stage_names(void);
/* A stage's one-line summary and option table; NULL when there is no such
 * stage. (transfer none) */
SIEVE_INTERNAL_API const char *sieve_pipeline_stage_summary(const char *name);
SIEVE_INTERNAL_API const SieveOptionSpec *sieve_pipeline_stage_spec(const char *name);

G_END_DECLS
