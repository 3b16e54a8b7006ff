/* sieve: experiment files.
 *
 *   g_autoptr(SieveExperiment) exp =
 *       sieve_experiment_load("configs/nb201-random.yaml", overrides, registry, refused, &error);
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
 *   pipeline:  [dedupe]       # stages before the evaluator (see pipeline.h)
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
#pragma once

#include <sieve/sieve.h>

#include "internal.h"
#include "pipeline.h"

G_BEGIN_DECLS

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
  gint64 budget_evaluations; /* 0: no limit; cache hits and screened proposals do not count */
  gint64 budget_proposals;   /* 0: no limit; every proposal counts */
  double budget_seconds;     /* 0: no limit */
  guint workers;
  guint report_top;
  GPtrArray *lua_hosts; /* the Lua states of `lua: {load: [...]}` scripts (owned) */
} SieveExperiment;

/* overrides: NULL-terminated "dotted.key=value" strings (may be NULL).
 * Loads plugin_path entries into registry (refusals appended to
 * plugin_errors, may be NULL). (transfer full) */
SIEVE_INTERNAL_API SieveExperiment *sieve_experiment_load(const char *path, const char *const *overrides,
                                       SieveRegistry *registry, GPtrArray *plugin_errors, GError **error);
/* Same, from a YAML text; origin names it in messages, base_dir resolves its
 * relative paths. (transfer full) */
SIEVE_INTERNAL_API SieveExperiment *sieve_experiment_load_string(const char *text, const char *origin, const char *base_dir,
                                              const char *const *overrides, SieveRegistry *registry,
                                              GPtrArray *plugin_errors, GError **error);
SIEVE_INTERNAL_API void sieve_experiment_free(SieveExperiment *experiment);

/* Canonical text of the experiment without the keys that may change on
 * resume (budget, workers, report). (transfer full) */
SIEVE_INTERNAL_API char *sieve_experiment_identity(const SieveExperiment *experiment);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveExperiment, sieve_experiment_free)

G_END_DECLS
