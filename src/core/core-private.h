/* sieve: the core area: experiments, the pipeline section, spaces' internals.
 * Not installed: not part of the plugin ABI. */
#pragma once

#include <glib.h>
#include <sieve/candidate.h>
#include <sieve/component.h>
#include <sieve/evaluator.h>
#include <sieve/latency.h>
#include <sieve/node.h>
#include <sieve/optimizer.h>
#include <sieve/options.h>
#include <sieve/plugin.h>
#include <sieve/registry.h>
#include <sieve/space.h>
#include <sieve/store.h>
#include "base/base-private.h"

G_BEGIN_DECLS

/* ==== the pipeline section ==== */
/* sieve: the experiment's `pipeline:`, the stages a proposal passes before
 * the evaluator (the top-level `evaluator:` section, always the last stage).
 *
 *   pipeline:
 *     - dedupe                          # or: - dedupe: {hash: structural}
 *     - latency: {batch: 1, threads: 1}   # measured inference latency, see below
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
  char *device;             /* runtime device of the proxies ("cpu", "cuda", "auto") (owned) */
  const SieveNode *dataset_node;
  const SieveNode *device_node;
} SieveScreenStage;

/* latency measures each proposal, before dedupe (a duplicate keeps its own
 * network's timing), for inference on this machine (sieve/latency.h: its protocol and options) and keeps latency_ms,
 * latency_iqr_ms, latency_cpu_ms and peak_mem_mb with the trial, for constraints and
 * objectives; its batch and threads also key the latency table that
 * predicted_latency_ms sums (engine: the constraints). */
typedef struct {
  gboolean enabled;
  const SieveNode *node;
  SieveLatencyOptions options;
} SieveLatencyStage;

typedef struct {
  SieveDedupeStage dedupe;
  SieveScreenStage screen;
  SieveLatencyStage latency;
} SievePipeline;

/* A bound on a metric known before evaluation (the `constraints:` list):
 * min <= value <= max, each -/+INFINITY when not written. */
typedef struct {
  char *metric;
  double min, max;
  const SieveNode *node;        /* the constraint's map (borrowed from the experiment's tree) */
  const SieveNode *metric_node; /* where metric was written */
} SieveConstraint;

/* The metrics a constraint may name, besides the zero-cost proxies
 * (sieve/proxy.h), NULL-terminated: what is known of a candidate before
 * it is evaluated. (transfer none) */
SIEVE_INTERNAL_API const char *const *sieve_constraint_metrics(void);
/* Reads `constraints:` (node may be NULL: none): a list of {metric: NAME,
 * max: X, min: Y}.  Errors say file:line:col.  (*out owned: free with
 * sieve_constraints_free) */
SIEVE_INTERNAL_API gboolean sieve_constraints_load(const SieveNode *node, SieveConstraint **out, guint *n_out,
                                                   GError **error);
SIEVE_INTERNAL_API void sieve_constraints_free(SieveConstraint *constraints, guint n);

/* Reads `pipeline:` (node may be NULL: no stages) into out, which the
 * caller zeroed.  seed: the experiment's, the screen's default; base_dir
 * resolves relative paths.  Errors say file:line:col.  On failure out may
 * hold partial values: clear it. */
SIEVE_INTERNAL_API gboolean sieve_pipeline_load(SievePipeline *out, const SieveNode *node, guint64 seed,
                                                const char *base_dir, GError **error);
SIEVE_INTERNAL_API void sieve_pipeline_clear(SievePipeline *pipeline);

/* "functional", "structural", "genotype" (transfer none) */
SIEVE_INTERNAL_API const char *sieve_dedupe_hash_name(SieveDedupeHash hash);
/* The hash of that name (functional, structural, genotype) into *out;
 * FALSE for another name. */
SIEVE_INTERNAL_API gboolean sieve_dedupe_hash_from_name(const char *name, SieveDedupeHash *out);

/* The stages, in their order (NULL-terminated), for docs (`sieve plugins`).
 * (transfer none) */
SIEVE_INTERNAL_API const char *const *sieve_pipeline_stage_names(void);
/* A stage's one-line summary and option table; NULL when there is no such
 * stage. (transfer none) */
SIEVE_INTERNAL_API const char *sieve_pipeline_stage_summary(const char *name);
SIEVE_INTERNAL_API const SieveOptionSpec *sieve_pipeline_stage_spec(const char *name);
/* A `pipeline:` list item using the stage that works as written (YAML, for
 * `sieve plugins --describe`); NULL when there is no such stage.
 * (transfer none) */
SIEVE_INTERNAL_API const char *sieve_pipeline_stage_example(const char *name);

/* ==== the registry ==== */

/* Registers a component whose file is origin (a script), as the registry
 * names a plugin's file. */
SIEVE_INTERNAL_API gboolean sieve__registry_add_from(SieveRegistry *registry, const SieveComponentInfo *info,
                                                     const char *origin, GError **error);

/* The registry that holds component. (transfer none) */
SIEVE_INTERNAL_API const SieveRegistry *sieve__component_get_registry(const SieveComponent *component);
/* The keys of a section that the registry reads itself, not the component
 * ("plugin"; an optimizer's "seed" too): no option may take these names.
 * NULL-terminated. (transfer none) */
const char *const *sieve__component_reserved_keys(SieveComponentKind kind);

/* ==== spaces' internals ==== */

/* The builtin `compose` space (space-compose.c), which every registry holds. */
extern const SieveComponentInfo sieve__compose_info;
/* The part of a composite space that builds its networks and the index of
 * its first decision in the composite; NULL when space is not composite or
 * has no such part. (transfer none) */
SIEVE_INTERNAL_API const SieveSpace *sieve__space_arch_part(const SieveSpace *space, guint *first);
/* (transfer none) (nullable): NULL for a space built by hand */
const SieveSpaceClass *sieve__space_get_class(const SieveSpace *space);
/* The plugin component a space was made from, NULL for one built by hand. */
SIEVE_INTERNAL_API const SieveComponent *sieve__space_get_component(const SieveSpace *space);
/* The registry of the space's component. (transfer none) (nullable) */
const SieveRegistry *sieve__space_get_registry(const SieveSpace *space);
/* Part k of a composite space; NULL past its last part or when space is not
 * composite. (transfer none) */
SIEVE_INTERNAL_API const SieveSpace *sieve__space_part(const SieveSpace *space, guint k);
/* The options the user wrote, paths resolved (a composite's parts' too), as
 * a map. (transfer full) */
SIEVE_INTERNAL_API SieveNode *sieve__space_get_written(const SieveSpace *space);
/* Replaces them, from inside the space's create(). (transfer none: written
 * is referenced) */
SIEVE_INTERNAL_API void sieve__space_set_written(SieveSpace *space, SieveNode *written);
/* Every option of the space, defaults included, as sieve__options_to_json
 * writes them, with its paths and its parts' paths absolute: what a model
 * file carries to build the space again from any folder.  (transfer full) */
SIEVE_INTERNAL_API char *sieve__space_options_json(const SieveSpace *space, GError **error);
/* Appends (char*, owned) the files the space's options and its parts'
 * name, absolute, each once (paths already in the array are skipped):
 * what it read when it was created. */
SIEVE_INTERNAL_API void sieve__space_add_files(const SieveSpace *space, GPtrArray *paths);
/* sieve_space_set_decision_where with the text already made (nullable). */
void sieve__space_set_where_text(SieveSpace *space, guint i, const char *where);

/* The generic "name=value,..." text form, for spaces whose own format
 * defers to it (Lua spaces without a format function). (transfer full) */
SIEVE_INTERNAL_API char *sieve__space_generic_format(const SieveSpace *space, const SieveGenotype *genotype);
SIEVE_INTERNAL_API SieveGenotype *sieve__space_generic_parse(const SieveSpace *space, const char *text, GError **error);

/* Replaces the class of a space from inside its create(): the builtin `lua`
 * space is whatever the script it runs defines (format, build, probe scale).
 * klass must outlive the space and share its create and destroy. */
SIEVE_INTERNAL_API void sieve__space_set_class(SieveSpace *space, const SieveSpaceClass *klass);
/* (transfer none) (nullable) the class of a space (NULL for one built by hand). */

/* The space at the probe scale its class declares (SieveSpaceClass.probe_options
 * over the options the user wrote), made on first use and kept; the space
 * itself when it declares none.  Thread-safe.  (transfer none) */
SIEVE_INTERNAL_API const SieveSpace *sieve__space_probe(const SieveSpace *space, GError **error);
/* A memo of functional hashes by the structural hash of the probe network
 * (the functional hash is a function of the canonical form, so this is
 * exact).  Thread-safe; bounded (later entries are not kept). */
gboolean sieve__space_memo_get(const SieveSpace *space, const SieveHash *key, SieveHash *value);
void sieve__space_memo_put(const SieveSpace *space, const SieveHash *key, const SieveHash *value);

/* ==== experiment files ==== */
/* sieve: experiment files.
 *
 *   g_autoptr(SieveExperiment) exp =
 *       sieve_experiment_load("configs/nb201-random.yaml", overrides, registry, refused, &error);
 *
 * (or parse and resolve, below, with a host layer between them).
 *
 * An experiment file is YAML:
 *
 *   name: nb201-random          # default: the file's stem
 *   seed: 0                     # default seed of every component
 *   store: nb201-random.sieve   # default: <name>.sieve; relative to the current folder
 *   plugin_path: [plugins/]     # extra plugin files or folders (relative to the file)
 *   space:     {plugin: nb201}
 *   optimizer: {plugin: random, seed: 3}
 *   evaluator: {plugin: tabular, table: ../data/nb201/nb201.csv}
 *   objective: {metric: cifar10_valid_acc, direction: maximize}
 *                               # or a list of them (multi-objective)
 *   pipeline:  [dedupe]       # stages before the evaluator (pipeline.c)
 *   budget:    {evaluations: 300, seconds: 0, proposals: 0}
 *   workers: 1
 *   report:    {top: 10}
 *
 * A section may be written as just the plugin name (`optimizer: random`).
 * Overrides ("optimizer.seed=3") are applied to the tree before anything is
 * validated, so they get exactly the same checks and located messages.
 * Every top-level key and every section is validated against an option
 * table; plugin sections against the plugin's own.
 */

typedef struct {
  SieveNode *node;                 /* the section as written (borrowed from root) */
  const SieveComponent *component; /* the plugin component it names */
  SieveOptions *options;           /* validated (owned) */
} SieveSection;

typedef struct {
  char *metric;
  gboolean maximize;
  const SieveNode *node; /* where metric was written, for run-time errors */
} SieveObjective;

typedef struct {
  gpointer data;
  GDestroyNotify destroy;
} SieveAttachment;

typedef struct {
  char *path;         /* the experiment file as given */
  char *dir;          /* its folder, absolute */
  SieveNode *root;    /* the effective tree, overrides applied (owned) */
  char *text;         /* canonical YAML of root, as stored in the study (owned) */
  char *name;
  guint64 seed;
  guint64 optimizer_seed;
  char *store_path;   /* absolute */
  GStrv plugin_path;  /* absolute */
  SieveSection space, optimizer, evaluator;
  /* One or more; the first is the primary one that progress, the summary
   * and single-objective optimizers use. */
  SieveObjective *objectives;
  guint n_objectives;
  const char **objective_names; /* n_objectives + NULL, borrowed from objectives */
  SievePipeline pipeline;    /* the stages before the evaluator */
  SieveConstraint *constraints; /* n_constraints (owned) */
  guint n_constraints;
  gint64 constraint_tries;   /* proposals rejected in a row after which the study stops */
  gint64 budget_evaluations; /* 0: no limit; cache hits and screened proposals do not count */
  gint64 budget_proposals;   /* 0: no limit; every proposal counts */
  double budget_seconds;     /* 0: no limit */
  guint workers;
  gboolean workers_set;   /* written in the file (else the evaluator's own count applies) */
  gboolean tell_in_order; /* tell_order: trial (with several workers) */
  guint report_top;
  const SieveNode *pruner;   /* the `pruner:` section (borrowed from root), NULL: none */
  /* What a host layer attached between parse and resolve (the Lua host's
   * states of `lua: {load: [...]}` scripts), freed last, latest first. */
  SieveAttachment *attachments;
  guint n_attachments;
  gboolean resolved;
} SieveExperiment;

/* Loading happens in two steps, so that a host layer (the Lua host) can
 * act between them without the core calling up into it:
 *
 *   exp = sieve_experiment_parse(path, overrides, registry, refused, &error);
 *   ... the host registers the components the file's scripts define,
 *       attaches what must outlive them, adds to the tree ...
 *   sieve_experiment_resolve(exp, registry, &error);
 *
 * parse: the YAML tree with the overrides ("dotted.key=value", may be NULL)
 * applied, the top-level keys (name, seed, store, plugin_path, workers)
 * validated, and the plugin_path loaded into registry (may be NULL;
 * refusals appended to plugin_errors, may be NULL).  (transfer full) */
SIEVE_INTERNAL_API SieveExperiment *sieve_experiment_parse(const char *path, const char *const *overrides,
                                                           SieveRegistry *registry, GPtrArray *plugin_errors,
                                                           GError **error);
/* Same, from a YAML text; origin names it in messages, base_dir resolves its
 * relative paths. (transfer full) */
SIEVE_INTERNAL_API SieveExperiment *sieve_experiment_parse_string(const char *text, const char *origin,
                                                                  const char *base_dir,
                                                                  const char *const *overrides,
                                                                  SieveRegistry *registry,
                                                                  GPtrArray *plugin_errors, GError **error);
/* Same, from a tree built in code (root: borrowed, a reference is taken;
 * its nodes' origins say where each value came from, e.g. the flag). */
SIEVE_INTERNAL_API SieveExperiment *sieve_experiment_parse_tree(SieveNode *root, const char *origin,
                                                                const char *base_dir,
                                                                const char *const *overrides,
                                                                SieveRegistry *registry,
                                                                GPtrArray *plugin_errors, GError **error);
/* One override ("dotted.key=value") applied to root as parse applies each:
 * a text that is not KEY=VALUE is refused, the value is located by
 * "--set KEY=VALUE" (sieve_node_set_path).  For a host that builds the
 * tree and applies overrides one at a time (sieve train's flags). */
SIEVE_INTERNAL_API gboolean sieve_experiment_apply_override(SieveNode *root, const char *override, GError **error);
/* The experiment's plugin_path loaded into registry after the program's
 * own plugins (sieve_registry_load_default); each refusal appended to
 * errors (nullable), a missing entry at its line in the file. */
SIEVE_INTERNAL_API void sieve__experiment_load_plugins(const SieveExperiment *experiment, SieveRegistry *registry,
                                                       GPtrArray *errors);
/* resolve: each section against its component's option table, the
 * objectives, the pipeline, the budget and the report.  Once only. */
SIEVE_INTERNAL_API gboolean sieve_experiment_resolve(SieveExperiment *experiment, SieveRegistry *registry,
                                                     GError **error);
/* parse + resolve, for callers with no host layer. (transfer full) */
SIEVE_INTERNAL_API SieveExperiment *sieve_experiment_load(const char *path, const char *const *overrides,
                                                          SieveRegistry *registry, GPtrArray *plugin_errors,
                                                          GError **error);
SIEVE_INTERNAL_API SieveExperiment *sieve_experiment_load_string(const char *text, const char *origin,
                                                                 const char *base_dir,
                                                                 const char *const *overrides,
                                                                 SieveRegistry *registry,
                                                                 GPtrArray *plugin_errors, GError **error);
/* Keeps data until the experiment is freed, after its sections' options
 * (destroy may be NULL). */
SIEVE_INTERNAL_API void sieve_experiment_attach(SieveExperiment *experiment, gpointer data,
                                                GDestroyNotify destroy);
SIEVE_INTERNAL_API void sieve_experiment_free(SieveExperiment *experiment);

/* Canonical text of the experiment without the keys that may change on
 * resume (budget, workers, report). (transfer full) */
SIEVE_INTERNAL_API char *sieve_experiment_identity(const SieveExperiment *experiment);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveExperiment, sieve_experiment_free)

/* Pruners (pruner.c): the experiment's `pruner:` section, judging a running
 * evaluation on its intermediate values against the completed trials'. */
typedef struct _SievePruner SievePruner;
SIEVE_INTERNAL_API const SieveOptionSpec *sieve_pruner_spec(void);
/* node: the section; maximize: the objective's direction. (transfer full) */
SIEVE_INTERNAL_API SievePruner *sieve_pruner_new(const SieveNode *node, const char *base_dir, gboolean maximize,
                                                 GError **error);
SIEVE_INTERNAL_API void sieve_pruner_free(SievePruner *pruner);
/* A trial that finished OK, with its values (any order). Thread-safe. */
SIEVE_INTERNAL_API void sieve_pruner_add_completed(SievePruner *pruner, const SieveIntermediate *values, guint n);
/* The completed trials added so far. Thread-safe. */
SIEVE_INTERNAL_API gint64 sieve_pruner_count_completed(SievePruner *pruner);
/* Whether a running trial with these values (any order) should stop now,
 * judged from scratch against every completed trial. Thread-safe. */
SIEVE_INTERNAL_API gboolean sieve_pruner_judge(SievePruner *pruner, const SieveIntermediate *values, guint n);
/* A running trial's state between its reports (one per trial, used by one
 * thread at a time): judged against the first seen completed trials
 * (G_MAXINT64: all, whenever added).  (transfer full) */
typedef struct _SievePrunerCurve SievePrunerCurve;
SIEVE_INTERNAL_API SievePrunerCurve *sieve_pruner_curve_new(gint64 seen);
SIEVE_INTERNAL_API void sieve_pruner_curve_free(SievePrunerCurve *curve);
/* sieve_pruner_judge in O(1) amortised per report appended: values sorted
 * by step, each step once (as sieve_engine_keep_intermediate keeps them),
 * of which values[changed..n) are new or changed since the curve's last
 * judge.  The same decisions as sieve_pruner_judge.  Thread-safe. */
SIEVE_INTERNAL_API gboolean sieve_pruner_judge_curve(SievePruner *pruner, SievePrunerCurve *curve,
                                                     const SieveIntermediate *values, guint n, guint changed);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SievePruner, sieve_pruner_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SievePrunerCurve, sieve_pruner_curve_free)

G_END_DECLS
