/* sieve: the study store, one SQLite file per study (WAL mode), or one
 * study of a PostgreSQL database (a postgresql:// URL; its `study`
 * parameter names the study, "sieve" by default).
 *
 *   g_autoptr(SieveStore) store = sieve_store_open("study.sieve", SIEVE_STORE_WRITE, &error);
 *   sieve_store_begin(store, &error);
 *   gint64 n = sieve_store_add_trial(store, "|nor_conv_3x3~0|+...", NAN, &error);
 *   sieve_store_save_state(store, "optimizer", state, &error);
 *   sieve_store_commit(store, &error);
 *
 * What must survive a kill is written inside one transaction with the state
 * it goes with (a new pending trial with the optimizer state after the ask;
 * a finished trial with the state after the tell), so that the file always
 * holds a consistent point to resume from.  A writer holds an exclusive lock
 * on the file for as long as it is open: a second writer gets
 * SIEVE_ERROR_STORE_BUSY ("store is in use by process N"); readers
 * (export) do not need the lock.
 *
 * Tables: meta(key, value), trials, metrics(trial, name, value),
 * state(name, type, data) for optimizer and engine state, and for the
 * pipeline's dedupe stage cache(kind, hash, key, trial) with
 * cache_keys(key, text); trained networks in weights(owner, number, data)
 * and `sieve final`'s trainings in finals and final_metrics; intermediate
 * values in intermediate(trial, step, fidelity, value).  A file written by an older sieve is upgraded when
 * opened for writing (nothing in it is lost) and read as it is otherwise.
 */
#pragma once

#include <gio/gio.h>
#include <glib.h>
#include <sieve/abi.h>
#include <sieve/result.h>

G_BEGIN_DECLS

typedef struct _SieveStore SieveStore;

typedef enum {
  SIEVE_STORE_READ,  /* read-only; the file must exist */
  SIEVE_STORE_WRITE, /* created when missing; exclusive writer lock */
} SieveStoreMode;

typedef struct {
  gint64 number;       /* 0-based, in ask order */
  char *genotype;      /* canonical text */
  SieveStatus status;
  double fidelity;     /* NAN: the evaluator's default */
  char *reason;        /* (nullable) why it failed / was screened */
  SieveResult *result; /* metrics (status mirrors the trial's); never NULL */
  double started;      /* unix seconds; NAN while pending */
  double finished;     /* unix seconds; NAN while pending */
  gint worker;         /* -1 while pending */
  gint64 cached_from;  /* trial whose result this reuses, or -1 */
  /* Since schema version 2 (NULL / 0 in trials stored before): */
  gint64 run;          /* the run (sieve_store_begin_run) that proposed it, 0 when unknown */
  char *hash_kind;     /* (nullable) "functional", "structural", "genotype": the dedupe stage's hash */
  char *hash;          /* (nullable) that hash, in hex */
  char *stage;         /* (nullable) how far a pending trial got: "evaluate" once past the screen */
} SieveTrial;
SIEVE_ABI_SIZE(SieveTrial, 112);

SIEVE_API void sieve_trial_free(SieveTrial *trial);

/* (transfer full) */
SIEVE_API SieveStore *sieve_store_open(const char *path, SieveStoreMode mode, GError **error);
SIEVE_API void sieve_store_close(SieveStore *store);
/* The file name, or the URL without its password. (transfer none) */
SIEVE_API const char *sieve_store_get_path(const SieveStore *store);
/* A store name as given by a user: a postgresql:// or postgres:// URL
 * unchanged, a file name made absolute. (transfer full) */
SIEVE_API char *sieve_store_canonical_name(const char *name);
/* Whether name is a PostgreSQL store's URL rather than a file name. */
SIEVE_API gboolean sieve_store_is_url(const char *name);
/* Copies every table of src, a study on either engine, into dst, opened
 * for writing and holding no trial yet (a new store), in one transaction. */
SIEVE_API gboolean sieve_store_copy(SieveStore *src, SieveStore *dst, GError **error);

/* Transactions; nesting is a programming error. */
SIEVE_API gboolean sieve_store_begin(SieveStore *store, GError **error);
SIEVE_API gboolean sieve_store_commit(SieveStore *store, GError **error);
SIEVE_API void sieve_store_rollback(SieveStore *store);

/* Study metadata (config text, seed, objective...).  get: (transfer full) (nullable) */
SIEVE_API char *sieve_store_get_meta(SieveStore *store, const char *key, GError **error);
SIEVE_API gboolean sieve_store_set_meta(SieveStore *store, const char *key, const char *value,
                                        GError **error);

/* Append a pending trial; returns its number (count of trials so far), -1 on error. */
SIEVE_API gint64 sieve_store_add_trial(SieveStore *store, const char *genotype, double fidelity,
                                       GError **error);
/* Record the outcome of trial number: status, reason and metrics from result. */
SIEVE_API gboolean sieve_store_finish_trial(SieveStore *store, gint64 number, const SieveResult *result,
                                            double started, double finished, gint worker,
                                            gint64 cached_from, GError **error);
/* (transfer full) (nullable: NULL + no error when there is no such trial) */
SIEVE_API SieveTrial *sieve_store_get_trial(SieveStore *store, gint64 number, GError **error);
/* All trials in number order; with only_pending, those still pending.
 * (transfer full) element-type SieveTrial, freed with the array */
SIEVE_API GPtrArray *sieve_store_list_trials(SieveStore *store, gboolean only_pending, GError **error);
/* Number of trials with the given status (-1 for any); -1 and error when
 * the store cannot be read. */
SIEVE_API gint64 sieve_store_count_trials(SieveStore *store, gint status, GError **error);

/* Named GVariant blobs ("optimizer", "engine").  load: (transfer full)
 * (nullable: NULL + no error when never saved) */
SIEVE_API gboolean sieve_store_save_state(SieveStore *store, const char *name, GVariant *state,
                                          GError **error);
SIEVE_API GVariant *sieve_store_load_state(SieveStore *store, const char *name, GError **error);

/* A new run of the study (one `sieve run`, first or resumed): counts it in
 * meta 'runs' and records its number with the trials added from now on.
 * Returns the run's number (1, 2 ...), -1 on error. */
SIEVE_API gint64 sieve_store_begin_run(SieveStore *store, GError **error);
/* The dedupe stage's hash of trial number (kind: "functional" ...). */
SIEVE_API gboolean sieve_store_set_trial_hash(SieveStore *store, gint64 number, const char *kind,
                                              const char *hash, GError **error);
/* How far a pending trial got in the pipeline (stage NULL: just proposed);
 * scores (nullable) replace its metrics (the screen's proxy scores). */
SIEVE_API gboolean sieve_store_set_trial_stage(SieveStore *store, gint64 number, const char *stage,
                                               const SieveResult *scores, GError **error);

/* Hash cache: trial holds the result for proposals whose kind hash is hash
 * under key, a digest of what the result depends on (evaluator, its
 * options, fidelity, space ...; add_key records the text it digests).
 * lookup returns the trial number, or -1 when absent (or on error). */
SIEVE_API gboolean sieve_store_cache_put(SieveStore *store, const char *kind, const char *hash, const char *key,
                                         gint64 trial, GError **error);
SIEVE_API gint64 sieve_store_cache_lookup(SieveStore *store, const char *kind, const char *hash, const char *key,
                                          GError **error);
SIEVE_API gboolean sieve_store_cache_add_key(SieveStore *store, const char *key, const char *text,
                                             GError **error);

/* Trained networks (schema version 3): the bytes of one network's weights
 * file (sieve/model.h's safetensors encoding) per trial ("trial") or final
 * training ("final"), replaced when put again.  Written inside the caller's
 * transaction with the result they belong to.  get: (transfer full)
 * (nullable: NULL + no error when none is kept). */
SIEVE_API gboolean sieve_store_put_weights(SieveStore *store, const char *owner, gint64 number, GBytes *weights,
                                           GError **error);
SIEVE_API GBytes *sieve_store_get_weights(SieveStore *store, const char *owner, gint64 number, GError **error);
/* Keeps the weights of the keep trials best by metric (ties: the earlier
 * trial) and deletes the others' (keep_weights: top); as the summary ranks
 * them: a higher fidelity first, and each genotype once (at its highest)
 * when the fidelities differ. */
SIEVE_API gboolean sieve_store_prune_weights(SieveStore *store, const char *metric, gboolean maximize, guint keep,
                                             GError **error);
/* (transfer full) element-type gint64: the numbers of owner's kept weights, in order. */
SIEVE_API GArray *sieve_store_list_weights(SieveStore *store, const char *owner, GError **error);

/* Intermediate values (schema version 4, ABI 2.2): what an evaluation
 * reported while it ran (sieve_candidate_report_intermediate), one row per
 * trial and step, in table intermediate(trial, step, fidelity, value). */
typedef struct {
  gint64 trial;
  gint64 step;
  double fidelity; /* NAN: the evaluator has no fidelity */
  double value;    /* the objective's metric at that step */
} SieveIntermediate;
SIEVE_ABI_SIZE(SieveIntermediate, 32);
/* Replaces trial's intermediate values with values[0..n) (their trial
 * fields are ignored): written with the trial's result, in its transaction. */
SIEVE_API gboolean sieve_store_set_intermediate(SieveStore *store, gint64 trial, const SieveIntermediate *values,
                                                guint n, GError **error);
/* (transfer full) element-type SieveIntermediate: trial's values (trial < 0:
 * every trial's), by trial then step; empty for a store older than version 4. */
SIEVE_API GArray *sieve_store_list_intermediate(SieveStore *store, gint64 trial, GError **error);
/* The fidelity a trial reached, when it differs from the one it was asked
 * for (a pruned trial counts as an evaluation of the fidelity it reached). */
SIEVE_API gboolean sieve_store_set_trial_fidelity(SieveStore *store, gint64 number, double fidelity,
                                                  GError **error);

/* A final training (`sieve final`): trial trained again at full budget,
 * stored apart from the search's trials. */
typedef struct {
  gint64 number;       /* 0-based, in the order they were asked for */
  gint64 trial;        /* the trial it trains again */
  char *genotype;
  SieveStatus status;  /* pending, ok or failed */
  double epochs;       /* NAN: the evaluator's full budget */
  char *settings;      /* the evaluator overrides it ran with, one "key=value" a line ("" for none) */
  char *reason;        /* (nullable) */
  SieveResult *result; /* never NULL */
  double started, finished; /* NAN while pending */
  gpointer reserved[4];
} SieveFinal;
SIEVE_ABI_SIZE(SieveFinal, 112);

SIEVE_API void sieve_final_free(SieveFinal *final);
/* Appends a pending final training; returns its number, -1 on error. */
SIEVE_API gint64 sieve_store_add_final(SieveStore *store, gint64 trial, const char *genotype, double epochs,
                                       const char *settings, GError **error);
/* Its outcome (status OK or FAILED, reason, metrics, cost). */
SIEVE_API gboolean sieve_store_finish_final(SieveStore *store, gint64 number, const SieveResult *result,
                                            double started, double finished, GError **error);
/* (transfer full) element-type SieveFinal, in number order (empty for a
 * store older than version 3). */
SIEVE_API GPtrArray *sieve_store_list_finals(SieveStore *store, GError **error);

/* The per-operation latency table (sieve/latency.h): the entry of
 * operation key op measured on machine (sieve_latency_machine's text).
 * get: *ms (and *iqr_ms, nullable) NAN when there is none.  put: adds or
 * replaces it (runs: forwards timed). */
SIEVE_API gboolean sieve_store_latency_get(SieveStore *store, const char *machine, const char *op, double *ms,
                                           double *iqr_ms, GError **error);
SIEVE_API gboolean sieve_store_latency_put(SieveStore *store, const char *machine, const char *op, double ms,
                                           double iqr_ms, guint runs, GError **error);

typedef enum {
  SIEVE_EXPORT_CSV,
  SIEVE_EXPORT_JSON,
} SieveExportFormat;

/* Every trial with its genotype, status, fidelity, each metric as its own
 * column / key, cost, timings, worker, hash, the trial it reuses and reason. */
SIEVE_API gboolean sieve_store_export(SieveStore *store, SieveExportFormat format, GOutputStream *out,
                                      GError **error);
/* The counts of the trials' outcomes (evaluated, cached, screened, pending,
 * distinct hashes among the evaluated, the fraction answered from the
 * cache), then the final trainings' (finals, finals_ok, finals_failed,
 * finals_pending: counted apart, never as trials), then the pruned trials (counted as evaluated) as a CSV header and row,
 * or one JSON object. */
/* The intermediate values, one row per trial and step (long format):
 * trial, step, fidelity, value; a JSON array of such objects. (ABI 2.2) */
SIEVE_API gboolean sieve_store_export_intermediate(SieveStore *store, SieveExportFormat format, GOutputStream *out,
                                                   GError **error);
SIEVE_API gboolean sieve_store_export_summary(SieveStore *store, SieveExportFormat format, GOutputStream *out,
                                              GError **error);

/* The final trainings (sieve final), never mixed with the trials: final,
 * trial, status, genotype, epochs, settings, each metric, cost, timings,
 * reason. */
SIEVE_API gboolean sieve_store_export_finals(SieveStore *store, SieveExportFormat format, GOutputStream *out,
                                             GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveStore, sieve_store_close)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveTrial, sieve_trial_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveFinal, sieve_final_free)

G_END_DECLS
