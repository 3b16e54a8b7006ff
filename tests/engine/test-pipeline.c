/* tests/engine: the experiment's `pipeline:` (stages, options, located
 * errors), the dedupe cache key, the store's schema upgrade, and the engine's
 * dedupe stage in process on real plugins and real SQLite files (the
 * NAS-Bench-201 table, the hpo space). */
#include <math.h>
#include <sqlite3.h>
#include <string.h>

#include <glib/gstdio.h>
#include <sieve/hash.h>
#include <sieve/sieve.h>

#include "core/core-private.h"
#include "engine/engine-private.h"
#include "test-support.h"

static SieveRegistry *registry;
static char *table_path; /* the NAS-Bench-201 CSV */
static char *tmp_dir;

/* The study every config test varies; %s: the table, then extra lines. */
static const char base_yaml[] = "space: {plugin: nb201}\n"
                                "optimizer: {plugin: random, seed: 3}\n"
                                "evaluator: {plugin: tabular, table: %s, metrics: [cifar10_valid_acc]}\n"
                                "objective: {metric: cifar10_valid_acc}\n"
                                "budget: {evaluations: 10}\n"
                                "%s";

static SieveExperiment *
load(const char *extra, GError **error)
{
  g_autofree char *text = g_strdup_printf(base_yaml, table_path, extra);
  return sieve_experiment_load_string(text, "test.yaml", tmp_dir, NULL, registry, NULL, error);
}

static SieveExperiment *
load_ok(const char *extra)
{
  GError *error = NULL;
  SieveExperiment *exp = load(extra, &error);
  g_assert_no_error(error);
  g_assert_nonnull(exp);
  return exp;
}

/* ---- config ------------------------------------------------------------ */

static void
test_config_forms(void)
{
  g_autoptr(SieveExperiment) none = load_ok("");
  g_assert_false(none->pipeline.dedupe.enabled);
  g_assert_false(none->pipeline.screen.enabled);

  g_autoptr(SieveExperiment) bare = load_ok("pipeline: [dedupe]\n");
  g_assert_true(bare->pipeline.dedupe.enabled);
  g_assert_false(bare->pipeline.dedupe.hash_set);
  g_assert_cmpint(bare->pipeline.dedupe.max_consecutive_hits, ==, 1000);
  g_assert_nonnull(bare->pipeline.dedupe.cache_from);
  g_assert_null(bare->pipeline.dedupe.cache_from[0]);

  g_autoptr(SieveExperiment) block = load_ok("pipeline:\n"
                                             "  - dedupe:\n"
                                             "  - screen: {proxies: synflow, keep_fraction: 0.25}\n");
  g_assert_true(block->pipeline.dedupe.enabled);
  g_assert_true(block->pipeline.screen.enabled);
  g_assert_cmpuint(block->pipeline.screen.n_proxies, ==, 1);
  g_assert_cmpstr(block->pipeline.screen.proxies[0], ==, "synflow");
  g_assert_null(block->pipeline.screen.weights);
  g_assert_cmpfloat(block->pipeline.screen.keep_fraction, ==, 0.25);
  g_assert_cmpint(block->pipeline.screen.keep_top, ==, 0);
  g_assert_cmpint(block->pipeline.screen.batch, ==, 16);
  g_assert_cmpint(block->pipeline.screen.proxy_batch, ==, 64);
  g_assert_cmpuint(block->pipeline.screen.seed, ==, 0); /* the experiment's */

  g_autoptr(SieveExperiment) full = load_ok(
      "seed: 9\n"
      "pipeline:\n"
      "  - dedupe: {hash: structural, max_consecutive_hits: 5, cache_from: [old.sieve, /abs/other.sieve]}\n"
      "  - screen: {proxies: [synflow, naswot], weights: [2, 0.5], keep_top: 3, batch: 8, batch_size: 16}\n");
  const SievePipeline *p = &full->pipeline;
  g_assert_true(p->dedupe.hash_set);
  g_assert_cmpint(p->dedupe.hash, ==, SIEVE_DEDUPE_STRUCTURAL);
  g_assert_cmpint(p->dedupe.max_consecutive_hits, ==, 5);
  g_autofree char *old = g_build_filename(tmp_dir, "old.sieve", NULL);
  g_assert_cmpstr(p->dedupe.cache_from[0], ==, old); /* relative to the experiment file */
  g_assert_cmpstr(p->dedupe.cache_from[1], ==, "/abs/other.sieve");
  g_assert_cmpuint(p->screen.n_proxies, ==, 2);
  g_assert_cmpfloat(p->screen.weights[0], ==, 2);
  g_assert_cmpfloat(p->screen.weights[1], ==, 0.5);
  g_assert_cmpint(p->screen.keep_top, ==, 3);
  g_assert_cmpint(p->screen.batch, ==, 8);
  g_assert_cmpint(p->screen.proxy_batch, ==, 16);
  g_assert_cmpuint(p->screen.seed, ==, 9);

  /* The pipeline is part of the study's identity; the budget is not. */
  g_autofree char *id_bare = sieve_experiment_identity(bare);
  g_autofree char *id_none = sieve_experiment_identity(none);
  g_assert_cmpstr(id_bare, !=, id_none);
  g_autofree char *text = g_strdup_printf(base_yaml, table_path, "pipeline: [dedupe]\n");
  const char *overrides[] = {"budget={proposals: 50}", NULL};
  GError *error = NULL;
  g_autoptr(SieveExperiment) proposals =
      sieve_experiment_load_string(text, "test.yaml", tmp_dir, overrides, registry, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpint(proposals->budget_proposals, ==, 50);
  g_assert_cmpint(proposals->budget_evaluations, ==, 0);
  g_autofree char *id_proposals = sieve_experiment_identity(proposals);
  g_assert_cmpstr(id_bare, ==, id_proposals);
}

typedef struct {
  const char *extra;
  const char *message; /* the whole message, location included */
} BadCase;

static void
test_config_errors(void)
{
  /* The base text has five lines: `pipeline:` is on line 6. */
  static const BadCase cases[] = {
      {"pipeline: dedupe\n",
       "test.yaml:6:11: 'pipeline' must be a list of stages, e.g. [dedupe] or [dedupe, {screen: {proxies: [naswot], "
       "keep_top: 4}}]"},
      {"pipeline: [dedup]\n",
       "test.yaml:6:12: unknown pipeline stage 'dedup' (did you mean 'dedupe'?); known stages: dedupe, latency, screen"},
      {"pipeline: [tabular]\n", "test.yaml:6:12: unknown pipeline stage 'tabular'; known stages: dedupe, latency, screen"},
      {"pipeline: [dedupe, evaluator]\n",
       "test.yaml:6:20: the evaluator is always the last stage and is set by the top-level 'evaluator:' section; list "
       "only the stages before it (dedupe, latency, screen)"},
      {"pipeline: [dedupe, dedupe]\n", "test.yaml:6:20: stage 'dedupe' is listed twice (first at test.yaml:6:12)"},
      {"pipeline:\n  - screen: {proxies: [synflow], keep_top: 2}\n  - dedupe\n",
       "test.yaml:8:5: stage 'dedupe' must come before 'screen': the screen comes last and scores only the proposals "
       "dedupe lets through"},
      /* Review 5: the latency stage measures every proposal before dedupe
       * (its own latency, for the constraints): not said to be spared. */
      {"pipeline: [latency, dedupe]\n",
       "test.yaml:6:21: stage 'dedupe' must come before 'latency': the stages are listed in the order dedupe, latency, "
       "screen (the latency stage measures every proposal before dedupe, wherever it is listed: a duplicate's own "
       "latency)"},
      {"pipeline: [{dedupe: {hsh: structural}}]\n",
       "test.yaml:6:22: unknown option 'hsh' for stage 'dedupe' (did you mean 'hash'?)"},
      {"pipeline: [{dedupe: {hash: structual}}]\n",
       "test.yaml:6:28: option 'hash' expects one of functional, structural, genotype; got 'structual' (did you "
       "mean 'structural'?)"},
      {"pipeline: [{dedupe: {max_consecutive_hits: 0}}]\n",
       "test.yaml:6:44: option 'max_consecutive_hits' expects an integer in [1, 1000000000000], got 0"},
      {"pipeline: [{dedupe: 3}]\n", "test.yaml:6:21: the options of stage 'dedupe' must be a map, e.g. {hash: structural}"},
      {"pipeline: [{dedupe: {}, screen: {}}]\n",
       "test.yaml:6:12: a pipeline stage is a name (- dedupe) or a map of its name to its options (- screen: "
       "{proxies: [naswot], keep_top: 4})"},
      {"pipeline: [screen]\n",
       "test.yaml:6:12: stage 'screen' needs its options, e.g. - screen: {proxies: [naswot], keep_top: 4}"},
      {"pipeline: [{screen: {keep_top: 2}}]\n",
       "test.yaml:6:21: missing required option 'proxies' for stage 'screen'"},
      {"pipeline: [{screen: {proxies: [synflow]}}]\n",
       "test.yaml:6:12: stage 'screen' needs keep_top (a number of proposals) or keep_fraction (a fraction of them) "
       "to pass to the evaluator"},
      {"pipeline: [{screen: {proxies: [synflow], keep_top: 2, keep_fraction: 0.5}}]\n",
       "test.yaml:6:52: give either keep_top or keep_fraction, not both"},
      {"pipeline: [{screen: {proxies: [synflow], keep_top: 16}}]\n",
       "test.yaml:6:52: keep_top (16) must be smaller than batch (16), or the screen passes everything"},
      {"pipeline: [{screen: {proxies: [synflow], keep_fraction: 0}}]\n",
       "test.yaml:6:57: keep_fraction must be > 0 (and at most 1), got 0"},
      {"pipeline: [{screen: {proxies: [synflow], keep_fraction: 1.5}}]\n",
       "test.yaml:6:57: option 'keep_fraction' expects a float in [0, 1], got 1.5"},
      {"pipeline: [{screen: {proxies: [], keep_top: 2}}]\n",
       "test.yaml:6:31: 'proxies' is empty: name at least one proxy"},
      {"pipeline: [{screen: {proxies: [synflow, synflow], keep_top: 2}}]\n",
       "test.yaml:6:31: proxy 'synflow' is listed twice"},
      {"pipeline: [{screen: {proxies: [synflow, naswot], weights: [1], keep_top: 2}}]\n",
       "test.yaml:6:59: 'weights' has 1 values for 2 proxies"},
      {"pipeline: [{screen: {proxies: [synflow], weights: [-1], keep_top: 2}}]\n",
       "test.yaml:6:52: a weight must be a finite number >= 0, got -1"},
      {"pipeline: [{screen: {proxies: [synflow, naswot], weights: [0, 0], keep_top: 2}}]\n",
       "test.yaml:6:59: 'weights' are all zero: at least one proxy must count"},
      {"pipeline: [{screen: {proxies: [synflow], weights: 1, keep_top: 2}}]\n",
       "test.yaml:6:51: 'weights' must be a list of numbers, one per proxy"},
  };
  guint wrong = 0;
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    GError *error = NULL;
    g_autoptr(SieveExperiment) exp = load(cases[i].extra, &error);
    g_assert_null(exp);
    g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
    if (strcmp(error->message, cases[i].message) != 0) {
      g_printerr("case %u (%s):\n got  %s\n want %s\n", i, cases[i].extra, error->message, cases[i].message);
      wrong++;
    }
    g_clear_error(&error);
  }
  g_assert_cmpuint(wrong, ==, 0);
  /* The budget's new limit is validated as the others. */
  {
    g_autofree char *text = g_strdup_printf(base_yaml, table_path, "");
    const char *overrides[] = {"budget.proposals=-1", NULL};
    GError *error = NULL;
    g_assert_null(sieve_experiment_load_string(text, "test.yaml", tmp_dir, overrides, registry, NULL, &error));
    g_assert_cmpstr(error->message, ==,
                    "--set budget.proposals=-1: option 'proposals' expects an integer in [0, 1000000000000000], got -1");
    g_clear_error(&error);
  }
  /* A budget with no limit names proposals among the limits. */
  g_autofree char *text =
      g_strdup_printf("space: nb201\noptimizer: random\nevaluator: {plugin: tabular, table: %s}\n"
                      "objective: {metric: cifar10_valid_acc}\nbudget: {evaluations: 0}\n",
                      table_path);
  GError *error = NULL;
  g_assert_null(sieve_experiment_load_string(text, "test.yaml", tmp_dir, NULL, registry, NULL, &error));
  g_assert_cmpstr(error->message, ==,
                  "test.yaml:5:23: the budget sets no limit (0 is none): give 'evaluations', 'proposals' or "
                  "'seconds' > 0");
  g_clear_error(&error);
  /* Set to 0 by --set, the limit is the --set's, not the file's line that
   * holds a real one. */
  {
    g_autofree char *limited = g_strdup_printf(base_yaml, table_path, "");
    const char *overrides[] = {"budget.evaluations=0", NULL};
    g_assert_null(sieve_experiment_load_string(limited, "test.yaml", tmp_dir, overrides, registry, NULL, &error));
    g_assert_cmpstr(error->message, ==,
                    "--set budget.evaluations=0: the budget sets no limit (0 is none): give 'evaluations', "
                    "'proposals' or 'seconds' > 0");
    g_clear_error(&error);
  }
}

/* The checks that need the space: a space without networks has only the
 * genotype hash. */
static void
test_config_space(void)
{
  g_autofree char *branin = g_build_filename(g_getenv("SIEVE_SOURCE_ROOT"), "search_spaces", "branin.yaml", NULL);
  g_autofree char *head = g_strdup_printf("space: {plugin: hpo, file: %s}\noptimizer: random\n"
                                          "evaluator: {plugin: function, function: branin}\n"
                                          "objective: {metric: value, direction: minimize}\n"
                                          "budget: {evaluations: 5}\n",
                                          branin);
  GError *error = NULL;
  g_autofree char *bad = g_strconcat(head, "pipeline: [{dedupe: {hash: functional}}]\n", NULL);
  g_autoptr(SieveExperiment) exp = sieve_experiment_load_string(bad, "hpo.yaml", tmp_dir, NULL, registry, NULL, &error);
  g_assert_no_error(error);
  g_assert_null(sieve_engine_new(exp, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
  g_assert_cmpstr(error->message, ==,
                  "hpo.yaml:6:12: stage 'dedupe': space 'hpo' builds no networks, so it has no functional hash; "
                  "use hash: genotype");
  g_clear_error(&error);

  g_autofree char *good = g_strconcat(head, "pipeline: [dedupe]\n", NULL);
  g_autoptr(SieveExperiment) exp2 = sieve_experiment_load_string(good, "hpo.yaml", tmp_dir, NULL, registry, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(SieveEngine) engine = sieve_engine_new(exp2, &error);
  g_assert_no_error(error);
  g_autofree char *described = sieve_engine_describe_pipeline(engine);
  g_assert_cmpstr(described, ==, "dedupe (genotype hash) -> function");

  /* cache_from names a store that is not there: said before anything is run. */
  g_autofree char *missing = g_strconcat(head, "pipeline: [{dedupe: {cache_from: gone.sieve}}]\n", NULL);
  g_autoptr(SieveExperiment) exp3 = sieve_experiment_load_string(missing, "hpo.yaml", tmp_dir, NULL, registry, NULL, &error);
  g_assert_no_error(error);
  g_assert_null(sieve_engine_new(exp3, &error));
  g_autofree char *want = g_strdup_printf("hpo.yaml:6:34: stage 'dedupe': cache_from: %s/gone.sieve: no such store", tmp_dir);
  g_assert_cmpstr(error->message, ==, want);
  g_clear_error(&error);
}

/* ---- cache keys -------------------------------------------------------- */

static char *
key_of(const char *extra, double fidelity)
{
  g_autoptr(SieveExperiment) exp = load_ok(extra);
  return sieve_dedupe_key_text(exp, fidelity);
}

static void
test_key(void)
{
  g_autofree char *base = key_of("", NAN);
  /* What the key says: the evaluator with every option, the fidelity, the space. */
  g_assert_true(g_str_has_prefix(base, "sieve cache key 1\nevaluator: tabular {"));
  g_assert_nonnull(strstr(base, "\"key\":\"arch_str\"")); /* a default, written out */
  g_assert_nonnull(strstr(base, table_path));
  g_assert_nonnull(strstr(base, "\nfidelity: default\n"));
  g_assert_nonnull(strstr(base, "\nspace: nb201 {\"C\":16,\"N\":5,"));

  /* The same settings written otherwise: the same key. */
  g_autofree char *rel = g_build_filename("..", "..", "..", table_path, NULL); /* from tmp_dir, /tmp/x -> / */
  g_autofree char *same_text = g_strdup_printf(
      "space: {plugin: nb201, C: 16}\noptimizer: {plugin: evolution}\n"
      "evaluator: {plugin: tabular, table: %s, metrics: cifar10_valid_acc, key: arch_str}\n"
      "objective: {metric: cifar10_valid_acc}\nbudget: {evaluations: 99}\nworkers: 2\npipeline: [dedupe]\n",
      rel);
  GError *error = NULL;
  g_autoptr(SieveExperiment) same = sieve_experiment_load_string(same_text, "other.yaml", tmp_dir, NULL, registry, NULL, &error);
  g_assert_no_error(error);
  g_autofree char *same_key = sieve_dedupe_key_text(same, NAN);
  g_assert_cmpstr(same_key, ==, base);
  g_autofree char *d1 = sieve_dedupe_key_digest(base);
  g_autofree char *d2 = sieve_dedupe_key_digest(same_key);
  g_assert_cmpstr(d1, ==, d2);
  g_assert_cmpuint(strlen(d1), ==, 64);

  /* Anything the result depends on: another key. */
  g_autoptr(SieveExperiment) more = NULL;
  {
    g_autofree char *text = g_strdup_printf(
        "space: nb201\noptimizer: random\n"
        "evaluator: {plugin: tabular, table: %s, metrics: [cifar10_valid_acc, params_m]}\n"
        "objective: {metric: cifar10_valid_acc}\nbudget: {evaluations: 10}\n",
        table_path);
    more = sieve_experiment_load_string(text, "m.yaml", tmp_dir, NULL, registry, NULL, &error);
    g_assert_no_error(error);
  }
  g_autofree char *more_key = sieve_dedupe_key_text(more, NAN);
  g_assert_cmpstr(more_key, !=, base);
  g_autofree char *at_3 = key_of("", 3);
  g_autofree char *at_3b = key_of("", 3.0);
  g_autofree char *at_9 = key_of("", 9);
  g_assert_cmpstr(at_3, !=, base);
  g_assert_cmpstr(at_3, ==, at_3b);
  g_assert_cmpstr(at_3, !=, at_9);
  g_assert_nonnull(strstr(at_3, "\nfidelity: 3\n"));
  g_autoptr(SieveExperiment) wide = NULL;
  {
    g_autofree char *text = g_strdup_printf(
        "space: {plugin: nb201, C: 32}\noptimizer: random\n"
        "evaluator: {plugin: tabular, table: %s, metrics: [cifar10_valid_acc]}\n"
        "objective: {metric: cifar10_valid_acc}\nbudget: {evaluations: 10}\n",
        table_path);
    wide = sieve_experiment_load_string(text, "w.yaml", tmp_dir, NULL, registry, NULL, &error);
    g_assert_no_error(error);
  }
  g_autofree char *wide_key = sieve_dedupe_key_text(wide, NAN);
  g_assert_cmpstr(wide_key, !=, base);
}

static void
test_genotype_hash(void)
{
  g_autoptr(SieveExperiment) exp = load_ok("");
  GError *error = NULL;
  g_autoptr(SieveSpace) space = sieve_space_new(exp->space.component, exp->space.options, &error);
  g_assert_no_error(error);
  const char *arch = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|";
  g_autoptr(SieveGenotype) g = sieve_space_parse(space, arch, &error);
  g_assert_no_error(error);
  char h[SIEVE_DEDUPE_HASH_LEN];
  g_assert_true(sieve_dedupe_hash(space, g, SIEVE_DEDUPE_GENOTYPE, h, &error));
  /* SHA-256 of the canonical text, first 128 bits. */
  g_autofree char *full = g_compute_checksum_for_string(G_CHECKSUM_SHA256, arch, -1);
  g_assert_cmpuint(strlen(h), ==, 32);
  g_assert_true(strncmp(h, full, 32) == 0);
}

/* ---- store schema ------------------------------------------------------ */

/* Version 1 of the tables, as sieve 0.1 wrote them before the pipeline. */
static const char schema_v1[] =
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);\n"
    "CREATE TABLE trials (number INTEGER PRIMARY KEY, genotype TEXT NOT NULL,"
    " status TEXT NOT NULL CHECK (status IN ('pending', 'ok', 'failed', 'screened', 'cached')),"
    " fidelity REAL, reason TEXT, cost REAL, started REAL, finished REAL, worker INTEGER,"
    " cached_from INTEGER REFERENCES trials(number));\n"
    "CREATE TABLE metrics (trial INTEGER NOT NULL REFERENCES trials(number), idx INTEGER NOT NULL,"
    " name TEXT NOT NULL, value, PRIMARY KEY (trial, name));\n"
    "CREATE TABLE state (name TEXT PRIMARY KEY, type TEXT NOT NULL, data BLOB NOT NULL);\n"
    "CREATE TABLE cache (hash TEXT NOT NULL, key TEXT NOT NULL,"
    " trial INTEGER NOT NULL REFERENCES trials(number), PRIMARY KEY (hash, key));\n"
    "INSERT INTO meta VALUES ('name', 'old');\n"
    "INSERT INTO trials VALUES (0, 'a', 'ok', NULL, NULL, 1.5, 10, 11, 0, NULL);\n"
    "INSERT INTO trials VALUES (1, 'b', 'pending', NULL, NULL, 0, NULL, NULL, NULL, NULL);\n"
    "INSERT INTO metrics VALUES (0, 0, 'value', 0.25);\n"
    "PRAGMA application_id = 1397310806;\n" /* 'SIEV' */
    "PRAGMA user_version = 1;\n";

static char *
make_v1(const char *name, const char *extra_sql)
{
  char *path = g_build_filename(tmp_dir, name, NULL);
  g_unlink(path);
  sqlite3 *db = NULL;
  g_assert_cmpint(sqlite3_open(path, &db), ==, SQLITE_OK);
  g_autofree char *sql = g_strconcat(schema_v1, extra_sql, NULL);
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
    g_error("%s", msg);
  sqlite3_close(db);
  return path;
}

static gint64
count_rows(const char *path, const char *sql)
{
  sqlite3 *db = NULL;
  g_assert_cmpint(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
  sqlite3_stmt *stmt = NULL;
  g_assert_cmpint(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), ==, SQLITE_OK);
  g_assert_cmpint(sqlite3_step(stmt), ==, SQLITE_ROW);
  gint64 n = sqlite3_column_int64(stmt, 0);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return n;
}

static void
check_old_trials(SieveStore *store)
{
  GError *error = NULL;
  g_autoptr(GPtrArray) trials = sieve_store_list_trials(store, FALSE, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(trials->len, ==, 2);
  const SieveTrial *a = trials->pdata[0], *b = trials->pdata[1];
  g_assert_cmpstr(a->genotype, ==, "a");
  g_assert_cmpint(a->status, ==, SIEVE_STATUS_OK);
  double v = 0;
  g_assert_true(sieve_result_get_metric(a->result, "value", &v));
  g_assert_cmpfloat(v, ==, 0.25);
  g_assert_null(a->hash);
  g_assert_null(a->hash_kind);
  g_assert_null(a->stage);
  g_assert_cmpint(a->run, ==, 0);
  g_assert_cmpint(b->status, ==, SIEVE_STATUS_PENDING);
}

static void
test_schema_upgrade(void)
{
  GError *error = NULL;
  g_autofree char *path = make_v1("v1.sieve", "");
  /* Read-only: read as it is, the file untouched. */
  {
    g_autoptr(SieveStore) store = sieve_store_open(path, SIEVE_STORE_READ, &error);
    g_assert_no_error(error);
    check_old_trials(store);
    g_assert_cmpint(sieve_store_cache_lookup(store, "genotype", "h", "k", &error), ==, -1);
    g_assert_no_error(error);
  }
  g_assert_cmpint(count_rows(path, "PRAGMA user_version"), ==, 1);
  /* Written: upgraded in place, nothing lost. */
  {
    g_autoptr(SieveStore) store = sieve_store_open(path, SIEVE_STORE_WRITE, &error);
    g_assert_no_error(error);
    check_old_trials(store);
    g_assert_cmpint(sieve_store_begin_run(store, &error), ==, 1);
    g_assert_true(sieve_store_set_trial_hash(store, 0, "genotype", "00ff", &error));
    g_assert_true(sieve_store_cache_add_key(store, "k", "the settings", &error));
    g_assert_true(sieve_store_cache_put(store, "genotype", "00ff", "k", 0, &error));
    g_assert_no_error(error);
    g_assert_cmpint(sieve_store_cache_lookup(store, "genotype", "00ff", "k", &error), ==, 0);
    g_autofree char *name = sieve_store_get_meta(store, "name", &error);
    g_assert_cmpstr(name, ==, "old");
  }
  /* Through versions 2 and 3 to 4: the tables for kept weights and final
   * trainings, intermediate values, a status check that admits 'pruned'. */
  g_assert_cmpint(count_rows(path, "PRAGMA user_version"), ==, 4);
  g_assert_cmpint(count_rows(path, "SELECT count(*) FROM sqlite_schema WHERE name = 'intermediate'"), ==, 1);
  g_assert_cmpint(count_rows(path, "SELECT count(*) FROM sqlite_schema WHERE name = 'trials' AND "
                                   "sql LIKE '%''cached'', ''pruned'')%'"), ==, 1);
  g_assert_cmpint(count_rows(path, "SELECT count(*) FROM sqlite_schema WHERE name IN ('weights', 'finals', "
                                   "'final_metrics')"), ==, 3);
  g_assert_cmpint(count_rows(path, "SELECT count(*) FROM sqlite_schema WHERE name = 'cache_v1'"), ==, 0);
  g_assert_cmpint(count_rows(path, "SELECT count(*) FROM cache_keys"), ==, 1);
  /* Opened again: as it is. */
  {
    g_autoptr(SieveStore) store = sieve_store_open(path, SIEVE_STORE_READ, &error);
    g_assert_no_error(error);
    g_autoptr(SieveTrial) t = sieve_store_get_trial(store, 0, &error);
    g_assert_cmpstr(t->hash, ==, "00ff");
    g_assert_cmpstr(t->hash_kind, ==, "genotype");
  }

  /* An old cache table holding rows (no sieve wrote any, but something
   * might have) is kept under another name, not dropped. */
  g_autofree char *kept = make_v1("v1-cache.sieve", "INSERT INTO cache VALUES ('h', 'k', 0);\n");
  {
    g_autoptr(SieveStore) store = sieve_store_open(kept, SIEVE_STORE_WRITE, &error);
    g_assert_no_error(error);
    check_old_trials(store);
  }
  g_assert_cmpint(count_rows(kept, "SELECT count(*) FROM cache_v1"), ==, 1);
  g_assert_cmpint(count_rows(kept, "SELECT count(*) FROM cache"), ==, 0);
}

/* ---- the engine, in process ------------------------------------------ */

static SieveExperiment *
load_file_text(const char *name, const char *text)
{
  g_autofree char *path = g_build_filename(tmp_dir, name, NULL);
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
  GError *error = NULL;
  SieveExperiment *exp = sieve_experiment_load(path, NULL, registry, NULL, &error);
  g_assert_no_error(error);
  return exp;
}

/* Runs exp on its store (a new study, or resumed); returns the store's trials. */
static GPtrArray *
run_study(const SieveExperiment *exp, gboolean resume)
{
  GError *error = NULL;
  g_autoptr(SieveEngine) engine = sieve_engine_new(exp, &error);
  g_assert_no_error(error);
  g_autoptr(SieveStore) store = sieve_store_open(exp->store_path, SIEVE_STORE_WRITE, &error);
  g_assert_no_error(error);
  g_assert_true(sieve_study_open(store, exp, resume, &error));
  g_assert_true(sieve_engine_run(engine, store, NULL, &error));
  g_assert_no_error(error);
  GPtrArray *trials = sieve_store_list_trials(store, FALSE, &error);
  g_assert_no_error(error);
  return trials;
}

static const SieveTrial *
find_trial(GPtrArray *trials, gint64 number)
{
  g_assert_cmpint(number, >=, 0);
  g_assert_cmpint(number, <, trials->len);
  return trials->pdata[number];
}

/* Every cached trial repeats the metrics of an evaluated (or imported)
 * trial with the same hash and fidelity; every evaluated hash is distinct.
 * Returns the number of cached trials. */
static guint
check_dedupe_invariants(GPtrArray *trials)
{
  g_autoptr(GHashTable) evaluated = g_hash_table_new(g_str_hash, g_str_equal);
  guint cached = 0;
  for (guint i = 0; i < trials->len; i++) {
    const SieveTrial *t = trials->pdata[i];
    g_assert_nonnull(t->hash);
    if (t->status == SIEVE_STATUS_OK) {
      g_assert_true(g_hash_table_add(evaluated, t->hash)); /* never evaluated twice */
      continue;
    }
    g_assert_cmpint(t->status, ==, SIEVE_STATUS_CACHED);
    cached++;
    if (t->cached_from < 0)
      continue; /* from another store: checked by the caller */
    const SieveTrial *o = find_trial(trials, t->cached_from);
    g_assert_cmpint(o->number, <, t->number);
    g_assert_cmpstr(o->hash, ==, t->hash);
    g_assert_true(o->status == SIEVE_STATUS_OK || o->status == SIEVE_STATUS_CACHED);
    g_assert_cmpuint(sieve_result_n_metrics(t->result), ==, sieve_result_n_metrics(o->result));
    for (guint m = 0; m < sieve_result_n_metrics(o->result); m++)
      g_assert_cmpfloat(sieve_result_metric_value(t->result, m), ==, sieve_result_metric_value(o->result, m));
    g_assert_cmpfloat(sieve_result_get_cost(t->result), ==, 0);
    g_assert_cmpint(t->worker, ==, -1);
  }
  return cached;
}

/* Random search on a grid of 100 cells proposes the same cell again and
 * again; with dedupe the budget buys distinct cells only, and a resumed run
 * answers from the first run's cache. */
static void
test_engine_two_runs(void)
{
  g_autofree char *grid = g_build_filename(tmp_dir, "grid.yaml", NULL);
  g_assert_true(g_file_set_contents(grid,
                                    "parameters:\n  x1: {type: int, low: 0, high: 9}\n"
                                    "  x2: {type: int, low: 0, high: 9}\n",
                                    -1, NULL));
  g_autofree char *text = g_strdup_printf("name: grid\nstore: %s/grid.sieve\nspace: {plugin: hpo, file: grid.yaml}\n"
                                          "optimizer: {plugin: random, seed: 4}\n"
                                          "evaluator: {plugin: function, function: branin}\n"
                                          "objective: {metric: value, direction: minimize}\n"
                                          "pipeline: [dedupe]\n"
                                          "budget: {evaluations: 40}\n",
                                          tmp_dir);
  g_autoptr(SieveExperiment) first = load_file_text("grid-study.yaml", text);
  g_autoptr(GPtrArray) run1 = run_study(first, FALSE);
  guint cached1 = check_dedupe_invariants(run1);
  g_assert_cmpuint(run1->len - cached1, ==, 40);
  g_assert_cmpuint(cached1, >, 0);

  g_autoptr(SieveExperiment) second = load_file_text("grid-study.yaml", text);
  second->budget_evaluations = 80;
  g_autoptr(GPtrArray) run2 = run_study(second, TRUE);
  guint cached2 = check_dedupe_invariants(run2);
  g_assert_cmpuint(run2->len - cached2, ==, 80);
  /* Hits of the second run answered by trials of the first. */
  guint across = 0;
  for (guint i = run1->len; i < run2->len; i++) {
    const SieveTrial *t = run2->pdata[i];
    g_assert_cmpint(t->run, ==, 2);
    if (t->status == SIEVE_STATUS_CACHED && t->cached_from < (gint64) run1->len)
      across++;
  }
  g_assert_cmpuint(across, >, 0);
  for (guint i = 0; i < run1->len; i++)
    g_assert_cmpint(((const SieveTrial *) run2->pdata[i])->run, ==, 1);
}

/* Different evaluator settings never share an entry: a study whose cache_from
 * names a store made under other settings evaluates everything; one with the
 * same settings (written differently) evaluates nothing it can find there. */
static void
test_engine_settings_separate(void)
{
#define fmt                                                                                                   \
  "name: %s\nstore: %s/%s.sieve\nspace: nb201\n"                                                              \
  "optimizer: {plugin: random, seed: 11}\n"                                                                    \
  "evaluator: {plugin: tabular, table: %s, metrics: %s}\n"                                                     \
  "objective: {metric: cifar10_valid_acc}\n"                                                                   \
  "pipeline: [{dedupe: {hash: genotype%s}}]\n"                                                                 \
  "budget: {evaluations: %d}\n"
  g_autofree char *a_text =
      g_strdup_printf(fmt, "a", tmp_dir, "a", table_path, "[cifar10_valid_acc]", "", 40);
  g_autoptr(SieveExperiment) a = load_file_text("a.yaml", a_text);
  g_autoptr(GPtrArray) a_trials = run_study(a, FALSE);
  g_assert_cmpuint(a_trials->len - check_dedupe_invariants(a_trials), ==, 40);

  /* Same settings: the table through a relative path, metrics as a scalar.
   * The same seed proposes the same cells: the first 40 all come from a. */
  g_autofree char *b_text = g_strdup_printf(fmt, "b", tmp_dir, "b", table_path, "cifar10_valid_acc",
                                            ", cache_from: [a.sieve]", 50);
  g_autoptr(SieveExperiment) b = load_file_text("b.yaml", b_text);
  g_autoptr(GPtrArray) b_trials = run_study(b, FALSE);
  check_dedupe_invariants(b_trials);
  g_autofree char *a_path = g_build_filename(tmp_dir, "a.sieve", NULL);
  for (guint i = 0; i < a_trials->len; i++) {
    const SieveTrial *t = b_trials->pdata[i], *o = a_trials->pdata[i];
    g_assert_cmpstr(t->genotype, ==, o->genotype);
    g_assert_cmpint(t->status, ==, SIEVE_STATUS_CACHED);
    g_assert_cmpint(t->cached_from, ==, -1);
    /* a's own hits point at a's original, whose entry b finds. */
    g_autofree char *reason = g_strdup_printf("cached in %s (trial %" G_GINT64_FORMAT ")", a_path,
                                              o->status == SIEVE_STATUS_CACHED ? o->cached_from : o->number);
    g_assert_cmpstr(t->reason, ==, reason);
    double x, y;
    g_assert_true(sieve_result_get_metric(t->result, "cifar10_valid_acc", &x));
    g_assert_true(sieve_result_get_metric(o->result, "cifar10_valid_acc", &y));
    g_assert_cmpfloat(x, ==, y);
  }
  gint64 evaluated = 0;
  for (guint i = 0; i < b_trials->len; i++)
    evaluated += ((const SieveTrial *) b_trials->pdata[i])->status == SIEVE_STATUS_OK;
  g_assert_cmpint(evaluated, ==, 50);
  g_assert_cmpuint(b_trials->len, >=, a_trials->len + 50);

  /* Another metric list: another key, so a's entries do not count. */
  g_autofree char *c_text = g_strdup_printf(fmt, "c", tmp_dir, "c", table_path, "[cifar10_valid_acc, params_m]",
                                            ", cache_from: [a.sieve]", 20);
  g_autoptr(SieveExperiment) c = load_file_text("c.yaml", c_text);
  g_autoptr(GPtrArray) c_trials = run_study(c, FALSE);
  check_dedupe_invariants(c_trials);
  for (guint i = 0; i < 20; i++) {
    const SieveTrial *t = c_trials->pdata[i];
    g_assert_cmpstr(t->genotype, ==, ((const SieveTrial *) a_trials->pdata[i])->genotype);
    if (((const SieveTrial *) a_trials->pdata[i])->status == SIEVE_STATUS_OK)
      g_assert_cmpint(t->status, ==, SIEVE_STATUS_OK);
  }
}

/* budget.proposals counts every proposal; evaluations only evaluations; an
 * optimizer that only repeats itself is stopped. */
static void
test_engine_budgets(void)
{
  /* Four cells in the whole space: none~ and skip_connect everywhere but
   * the first edge... a small hpo space says it more simply. */
  g_autofree char *space = g_build_filename(tmp_dir, "tiny.yaml", NULL);
  g_assert_true(g_file_set_contents(space,
                                    "parameters:\n  x1: {type: int, low: 0, high: 1}\n"
                                    "  x2: {type: int, low: 0, high: 1}\n",
                                    -1, NULL));
#undef fmt
#define fmt                                                                                                   \
  "name: tiny\nstore: %s/%s.sieve\nspace: {plugin: hpo, file: tiny.yaml}\n"                                   \
  "optimizer: {plugin: random, seed: 2}\n"                                                                     \
  "evaluator: {plugin: function, function: branin}\n"                                                          \
  "objective: {metric: value, direction: minimize}\n"                                                          \
  "pipeline: [{dedupe: {max_consecutive_hits: 25}}]\n"                                                         \
  "budget: %s\n"
  g_autofree char *p_text = g_strdup_printf(fmt, tmp_dir, "proposals", "{proposals: 7, evaluations: 100}");
  g_autoptr(SieveExperiment) p = load_file_text("proposals.yaml", p_text);
  g_autoptr(GPtrArray) p_trials = run_study(p, FALSE);
  g_assert_cmpuint(p_trials->len, ==, 7);
  check_dedupe_invariants(p_trials);

  g_autofree char *e_text = g_strdup_printf(fmt, tmp_dir, "evaluations", "{evaluations: 3}");
  g_autoptr(SieveExperiment) e = load_file_text("evaluations.yaml", e_text);
  g_autoptr(GPtrArray) e_trials = run_study(e, FALSE);
  g_assert_cmpuint(e_trials->len - check_dedupe_invariants(e_trials), ==, 3);

  /* Four cells, a budget of 100 evaluations: all four, then 25 hits in a row. */
  g_autofree char *x_text = g_strdup_printf(fmt, tmp_dir, "exhausted", "{evaluations: 100}");
  g_autoptr(SieveExperiment) x = load_file_text("exhausted.yaml", x_text);
  g_autoptr(GPtrArray) x_trials = run_study(x, FALSE);
  g_assert_cmpuint(x_trials->len - check_dedupe_invariants(x_trials), ==, 4);
  g_assert_cmpuint(x_trials->len, >=, 4 + 25);
  for (guint i = x_trials->len - 25; i < x_trials->len; i++)
    g_assert_cmpint(((const SieveTrial *) x_trials->pdata[i])->status, ==, SIEVE_STATUS_CACHED);
  g_assert_cmpint(((const SieveTrial *) x_trials->pdata[x_trials->len - 26])->status, ==, SIEVE_STATUS_OK);
#undef fmt
}

static void
hash_of(const SieveSpace *space, const char *arch, SieveHashKind kind, char *out)
{
  GError *error = NULL;
  g_autoptr(SieveGenotype) g = sieve_space_parse(space, arch, &error);
  g_assert_no_error(error);
  SieveHash h;
  g_assert_true(sieve_space_hash(space, g, kind, &h, &error));
  g_assert_no_error(error);
  sieve_hash_format(&h, out);
}

/* NAS-Bench-201 with the default (functional) hash: random search without
 * repeated encodings still proposes networks equal to ones evaluated; each
 * hit's stored hash is the functional hash of its cell and of its original. */
static void
test_engine_nb201_functional(void)
{
  g_autofree char *text = g_strdup_printf("name: nb\nstore: %s/nb.sieve\nspace: nb201\n"
                                          "optimizer: {plugin: random, unique: true, seed: 1}\n"
                                          "evaluator: {plugin: tabular, table: %s, metrics: [cifar10_valid_acc]}\n"
                                          "objective: {metric: cifar10_valid_acc}\n"
                                          "pipeline: [dedupe]\n"
                                          "budget: {evaluations: 100}\n",
                                          tmp_dir, table_path);
  g_autoptr(SieveExperiment) exp = load_file_text("nb.yaml", text);
  GError *error = NULL;
  {
    g_autoptr(SieveEngine) engine = sieve_engine_new(exp, &error);
    g_assert_no_error(error);
    g_autofree char *described = sieve_engine_describe_pipeline(engine);
    g_assert_cmpstr(described, ==, "dedupe (functional hash) -> tabular");
  }
  g_autoptr(GPtrArray) trials = run_study(exp, FALSE);
  guint cached = check_dedupe_invariants(trials);
  g_assert_cmpuint(trials->len - cached, ==, 100);
  /* 8 with this seed (over 10 while batch norms of zeros were dropped, joining more). */
  g_assert_cmpuint(cached, >=, 5);
  g_autoptr(SieveSpace) space = sieve_space_new(exp->space.component, exp->space.options, &error);
  g_assert_no_error(error);
  guint merged = 0;
  for (guint i = 0; i < trials->len; i++) {
    const SieveTrial *t = trials->pdata[i];
    g_assert_cmpstr(t->hash_kind, ==, "functional");
    char h[SIEVE_HASH_TEXT_LEN];
    hash_of(space, t->genotype, SIEVE_HASH_FUNCTIONAL, h);
    g_assert_cmpstr(h, ==, t->hash);
    if (t->status != SIEVE_STATUS_CACHED)
      continue;
    const SieveTrial *o = find_trial(trials, t->cached_from);
    g_assert_cmpstr(o->genotype, !=, t->genotype); /* unique: true never repeats a text */
    hash_of(space, o->genotype, SIEVE_HASH_FUNCTIONAL, h);
    g_assert_cmpstr(h, ==, t->hash);
    merged++;
  }
  g_assert_cmpuint(merged, ==, cached);
}

/* ---- the screen ------------------------------------------------------ */

/* A small NB201 scale keeps the proxies fast; the table does not care. */
#define SMALL_NB201 "{plugin: nb201, C: 4, N: 1, size: 8}"

static void
test_screen_round(void)
{
  g_autoptr(SieveExperiment) exp = load_ok("");
  g_autoptr(SieveExperiment) small = NULL;
  GError *error = NULL;
  {
    g_autofree char *text = g_strdup_printf("space: " SMALL_NB201 "\noptimizer: random\n"
                                            "evaluator: {plugin: tabular, table: %s}\n"
                                            "objective: {metric: cifar10_valid_acc}\nbudget: {evaluations: 1}\n"
                                            "pipeline: [{screen: {proxies: [params, flops], weights: [1, 0], "
                                            "keep_fraction: 0.5, batch: 4}}]\n",
                                            table_path);
    small = sieve_experiment_load_string(text, "s.yaml", tmp_dir, NULL, registry, NULL, &error);
    g_assert_no_error(error);
  }
  g_autoptr(SieveSpace) space = sieve_space_new(small->space.component, small->space.options, &error);
  g_assert_no_error(error);
  static const char *const archs[] = {
      "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|",                                        /* no convolution */
      "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|nor_conv_3x3~0|nor_conv_3x3~1|nor_conv_3x3~2|",
      "|nor_conv_1x1~0|+|none~0|none~1|+|none~0|none~1|none~2|",
      "|nor_conv_3x3~0|+|none~0|none~1|+|none~0|none~1|none~2|",
  };
  const SieveGenotype *genotypes[G_N_ELEMENTS(archs)];
  guint64 params[G_N_ELEMENTS(archs)];
  for (guint i = 0; i < G_N_ELEMENTS(archs); i++) {
    genotypes[i] = sieve_space_parse(space, archs[i], &error);
    g_assert_no_error(error);
    g_autoptr(SieveGraph) g = sieve_space_build(space, genotypes[i], &error);
    g_assert_no_error(error);
    params[i] = sieve_graph_params(g);
  }
  g_assert_cmpuint(params[0], <, params[2]);
  g_assert_cmpuint(params[2], <, params[3]);
  g_assert_cmpuint(params[3], <, params[1]);
  SieveScreenRound *round =
      sieve_screen_round_new(&small->pipeline.screen, space, NULL, genotypes, G_N_ELEMENTS(archs));
  /* Ranked by params alone (flops weighs 0): 1, 3, 2, 0. */
  static const guint best_first[] = {1, 3, 2, 0};
  for (guint r = 0; r < G_N_ELEMENTS(archs); r++) {
    guint i = best_first[r];
    g_assert_cmpuint(round->order[r], ==, i);
    g_assert_null(round->errors[i]);
    double v;
    g_assert_true(sieve_result_get_metric(round->scores[i], "params", &v));
    g_assert_cmpfloat(v, ==, (double) params[i]);
    g_assert_true(sieve_result_get_metric(round->scores[i], "flops", &v));
    g_assert_true(sieve_result_get_metric(round->scores[i], SIEVE_SCREEN_SCORE, &v));
    g_assert_cmpfloat(v, ==, round->aggregate[i]);
    g_assert_cmpfloat(round->aggregate[i], ==, G_N_ELEMENTS(archs) - 1 - r); /* 0 = the worst */
  }
  sieve_screen_round_free(round);
  for (guint i = 0; i < G_N_ELEMENTS(archs); i++)
    sieve_genotype_free((SieveGenotype *) genotypes[i]);

  /* How many pass. */
  const SieveScreenStage *half = &small->pipeline.screen;
  g_assert_cmpuint(sieve_screen_keep_count(half, 4, G_MAXINT64), ==, 2);
  g_assert_cmpuint(sieve_screen_keep_count(half, 3, G_MAXINT64), ==, 2); /* rounded up */
  g_assert_cmpuint(sieve_screen_keep_count(half, 1, G_MAXINT64), ==, 1);
  g_assert_cmpuint(sieve_screen_keep_count(half, 4, 1), ==, 1);          /* the budget's room */
  g_assert_cmpuint(sieve_screen_keep_count(half, 4, 0), ==, 0);
  SieveScreenStage top = *half;
  top.keep_fraction = 0;
  top.keep_top = 3;
  g_assert_cmpuint(sieve_screen_keep_count(&top, 16, G_MAXINT64), ==, 3);
  g_assert_cmpuint(sieve_screen_keep_count(&top, 2, G_MAXINT64), ==, 2);

  /* Unknown proxies and spaces without networks are refused before any run. */
  g_autofree char *bad = g_strdup_printf("space: nb201\noptimizer: random\n"
                                         "evaluator: {plugin: tabular, table: %s}\n"
                                         "objective: {metric: cifar10_valid_acc}\nbudget: {evaluations: 1}\n"
                                         "pipeline: [{screen: {proxies: [snip, nasbot], keep_top: 2}}]\n",
                                         table_path);
  g_autoptr(SieveExperiment) bad_exp = sieve_experiment_load_string(bad, "b.yaml", tmp_dir, NULL, registry, NULL, &error);
  g_assert_no_error(error);
  g_assert_null(sieve_engine_new(bad_exp, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
  g_assert_true(g_str_has_prefix(error->message, "b.yaml:6:31: stage 'screen': unknown proxy \"nasbot\""));
  g_assert_nonnull(strstr(error->message, "nasbot"));
  g_assert_nonnull(strstr(error->message, "naswot"));
  g_clear_error(&error);
  (void) exp;
}

/* A study with dedupe and the screen: each round of `batch` proposals
 * keeps its best `keep_top` misses, the others are stored as screened with
 * their scores; the evaluation budget is spent exactly. */
static void
test_engine_screen(void)
{
  g_autofree char *text = g_strdup_printf("name: scr\nstore: %s/scr.sieve\nspace: " SMALL_NB201 "\n"
                                          "optimizer: {plugin: evolution, population: 6, sample_size: 2, seed: 1}\n"
                                          "evaluator: {plugin: tabular, table: %s, metrics: [cifar10_valid_acc]}\n"
                                          "objective: {metric: cifar10_valid_acc}\n"
                                          "pipeline:\n  - dedupe\n"
                                          "  - screen: {proxies: [naswot, params], keep_top: 2, batch: 5, batch_size: 8}\n"
                                          "budget: {evaluations: 5}\n",
                                          tmp_dir, table_path);
  g_autoptr(SieveExperiment) exp = load_file_text("scr.yaml", text);
  g_autoptr(GPtrArray) trials = run_study(exp, FALSE);
  guint ok = 0, screened = 0;
  /* Rounds are the blocks of 5 proposals asked together. */
  for (guint start = 0; start < trials->len; start += 5) {
    double worst_kept = INFINITY, best_screened = -INFINITY;
    guint kept = 0;
    for (guint i = start; i < MIN(start + 5, trials->len); i++) {
      const SieveTrial *t = trials->pdata[i];
      double score = NAN;
      if (t->status == SIEVE_STATUS_OK || (t->status == SIEVE_STATUS_SCREENED && t->cached_from < 0)) {
        g_assert_true(sieve_result_get_metric(t->result, "naswot", NULL));
        g_assert_true(sieve_result_get_metric(t->result, "params", NULL));
        g_assert_true(sieve_result_get_metric(t->result, SIEVE_SCREEN_SCORE, &score));
      }
      if (t->status == SIEVE_STATUS_OK) {
        ok++;
        kept++;
        worst_kept = MIN(worst_kept, score);
        g_assert_true(sieve_result_get_metric(t->result, "cifar10_valid_acc", NULL));
      } else if (t->status == SIEVE_STATUS_SCREENED) {
        screened++;
        g_assert_nonnull(t->reason);
        g_assert_false(sieve_result_get_metric(t->result, "cifar10_valid_acc", NULL));
        if (t->cached_from >= 0) {
          const SieveTrial *o = find_trial(trials, t->cached_from);
          g_assert_cmpint(o->status, ==, SIEVE_STATUS_SCREENED);
          g_assert_cmpstr(o->hash, ==, t->hash);
        } else {
          best_screened = MAX(best_screened, score);
          g_assert_true(g_str_has_prefix(t->reason, "rank "));
        }
      } else {
        g_assert_cmpint(t->status, ==, SIEVE_STATUS_CACHED);
      }
    }
    g_assert_cmpuint(kept, <=, 2);
    if (kept > 0 && best_screened > -INFINITY)
      g_assert_cmpfloat(worst_kept, >=, best_screened);
  }
  g_assert_cmpuint(ok, ==, 5); /* 2 + 2 + 1: the last round keeps what the budget allows */
  g_assert_cmpuint(screened, >=, 6);
}

/* A C evaluator that reports a reached fidelity of its option `reached`
 * (trial 0 reports steps 1-3 at fidelities 1-3 and completes; the others
 * report worse values and are pruned): the engine stores a pruned trial's
 * reached fidelity only when it lies in [0, the evaluator's max]. */
static const SieveFidelity liar_fidelity = {"epochs", 1, 9, TRUE, {NULL}};
static const SieveOptionSpec liar_options[] = {
  SIEVE_OPTION_FLOAT("reached", "1", -1e300, 1e300, "the fidelity every trial but the first reports"),
  SIEVE_OPTION_END,
};

static gpointer
liar_create(const SieveSpace *space, const SieveOptions *options, GError **error)
{
  double *reached = g_new(double, 1);
  *reached = sieve_options_get_double(options, "reached");
  return reached;
}

static SieveResult *
liar_evaluate(gpointer instance, const SieveCandidate *candidate, GError **error)
{
  const double *reached = instance;
  gboolean first = sieve_candidate_get_trial(candidate) == 0;
  SieveResult *result = sieve_result_new();
  for (gint64 step = 1; step <= 3; step++)
    if (!sieve_candidate_report_intermediate(candidate, step, first ? (double) step : *reached, first ? 1 : 0))
      return result;
  sieve_result_set_metric(result, "value", first ? 1 : 0);
  return result;
}

static const SieveFidelity *
liar_get_fidelity(gpointer instance)
{
  return &liar_fidelity;
}

static const SieveEvaluatorClass liar_class = {
  .create = liar_create,
  .destroy = g_free,
  .evaluate = liar_evaluate,
  .flags = SIEVE_EVALUATOR_INTERMEDIATE,
  .fidelity = liar_get_fidelity,
};

static void
test_engine_pruned_fidelity(void)
{
  static const SieveComponentInfo liar = {SIEVE_KIND_EVALUATOR, "fidelity-liar", "reports what fidelity it is told",
                                          liar_options, &liar_class, NULL, {NULL}};
  GError *error = NULL;
  g_assert_true(sieve_registry_add(registry, &liar, &error));
  g_assert_no_error(error);
  g_autofree char *space = g_build_filename(tmp_dir, "one.yaml", NULL);
  g_assert_true(g_file_set_contents(space, "parameters:\n  x: {type: float, low: 0, high: 1}\n", -1, NULL));
  const double reached[] = {1e9, -1, 2, 0.5};
  for (guint i = 0; i < G_N_ELEMENTS(reached); i++) {
    g_autofree char *text = g_strdup_printf("name: liar%u\nstore: %s/liar%u.sieve\nspace: {plugin: hpo, file: one.yaml}\n"
                                            "optimizer: {plugin: random, seed: 1}\n"
                                            "evaluator: {plugin: fidelity-liar, reached: %g}\n"
                                            "objective: {metric: value, direction: maximize}\n"
                                            "pruner: {kind: median, startup_trials: 1}\n"
                                            "budget: {evaluations: 3}\n",
                                            i, tmp_dir, i, reached[i]);
    g_autoptr(SieveExperiment) exp = load_file_text("liar.yaml", text);
    g_autoptr(GPtrArray) trials = run_study(exp, FALSE);
    g_assert_cmpuint(trials->len, ==, 3);
    for (guint t = 1; t < trials->len; t++) {
      const SieveTrial *trial = trials->pdata[t];
      g_assert_cmpint(trial->status, ==, SIEVE_STATUS_PRUNED);
      if (reached[i] >= 0 && reached[i] <= 9)
        g_assert_cmpfloat(trial->fidelity, ==, reached[i]); /* the fidelity it reached */
      else
        g_assert_true(isnan(trial->fidelity)); /* the one it was asked for: the evaluator's choice */
    }
  }
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  registry = sieve_registry_new();
  sieve_registry_load_default(registry, NULL, NULL);
  table_path = test_nb201_table();
  GError *error = NULL;
  tmp_dir = g_dir_make_tmp("sieve-pipeline-XXXXXX", &error);
  g_assert_no_error(error);

  g_test_add_func("/pipeline/config/forms", test_config_forms);
  g_test_add_func("/pipeline/config/errors", test_config_errors);
  g_test_add_func("/pipeline/config/space", test_config_space);
  g_test_add_func("/pipeline/key", test_key);
  g_test_add_func("/pipeline/hash/genotype", test_genotype_hash);
  g_test_add_func("/pipeline/store/upgrade", test_schema_upgrade);
  g_test_add_func("/pipeline/engine/two-runs", test_engine_two_runs);
  g_test_add_func("/pipeline/engine/settings-separate", test_engine_settings_separate);
  g_test_add_func("/pipeline/engine/budgets", test_engine_budgets);
  g_test_add_func("/pipeline/engine/nb201-functional", test_engine_nb201_functional);
  g_test_add_func("/pipeline/screen/round", test_screen_round);
  g_test_add_func("/pipeline/engine/screen", test_engine_screen);
  g_test_add_func("/pipeline/engine/pruned-fidelity", test_engine_pruned_fidelity);
  int rc = g_test_run();

  /* Remove the temporary folder and what the tests left in it. */
  test_remove_dir(tmp_dir);
  g_free(tmp_dir);
  g_free(table_path);
  sieve_registry_free(registry);
  return rc;
}
