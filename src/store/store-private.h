/* store: the small SQL driver under the study store, one per database engine.
 *
 *   SieveDbStmt *stmt = sieve__db_prepare(db, "SELECT value FROM meta WHERE key = ?1", FALSE, &error);
 *   sieve__db_bind_text(stmt, 1, "seed");
 *   if (sieve__db_step(stmt) == SIEVE_DB_ROW)
 *     puts(sieve__db_column_text(stmt, 0));
 *   sieve__db_finalize(stmt);
 *
 * store.c writes its schema and its queries once, as text both engines
 * read: `?N` placeholders (the PostgreSQL driver turns them into `$N`),
 * INSERT ... ON CONFLICT instead of INSERT OR REPLACE, COALESCE, and in
 * table definitions SQLite's type names INTEGER, REAL, BLOB and
 * `INTEGER PRIMARY KEY AUTOINCREMENT`, which the PostgreSQL driver maps to
 * BIGINT, DOUBLE PRECISION, BYTEA and an identity column.  A metric column,
 * which SQLite leaves untyped so that it keeps 'nan' and 'inf' as text, is
 * written as the name followed by the SQL comment `double` in slash-star
 * brackets (SIEVE_DB_ANY_DOUBLE), which PostgreSQL reads as DOUBLE PRECISION:
 * that holds non-finite values itself.  Statements that are one engine's own (PRAGMA, pg_catalog)
 * stay in that engine's branch of store.c or in its driver.
 *
 * The drivers: store-db-sqlite.c (a file) and store-db-pg.c (a PostgreSQL
 * server through libpq, when sieve is built with it).
 */
#pragma once

#include <glib.h>
#include <sieve/store.h>

#include "base/base-private.h"

G_BEGIN_DECLS

/* The type of a metric column: none on SQLite, DOUBLE PRECISION on PostgreSQL. */
#define SIEVE_DB_ANY_DOUBLE "/*double*/"

typedef struct _SieveDb SieveDb;
typedef struct _SieveDbStmt SieveDbStmt;

typedef enum { SIEVE_DB_ROW, SIEVE_DB_DONE, SIEVE_DB_ERROR } SieveDbStep;
typedef enum { SIEVE_DB_NULL, SIEVE_DB_INTEGER, SIEVE_DB_FLOAT, SIEVE_DB_TEXT, SIEVE_DB_BLOB } SieveDbType;
/* What the last failure was, for the caller's choice of error code. */
typedef enum {
  SIEVE_DB_FAIL_OTHER,
  SIEVE_DB_FAIL_BUSY,       /* locked by another connection: try again later */
  SIEVE_DB_FAIL_NOT_A_DB,   /* the file is not a database */
  SIEVE_DB_FAIL_CONNECTION, /* the server went away */
} SieveDbFailure;

typedef struct {
  const char *engine; /* "SQLite", "PostgreSQL" */
  void (*close)(SieveDb *db);
  SieveDbStmt *(*prepare)(SieveDb *db, const char *sql, gboolean persistent);
  void (*finalize)(SieveDbStmt *stmt);
  void (*reset)(SieveDbStmt *stmt); /* also clears the bindings */
  gboolean (*bind_null)(SieveDbStmt *stmt, int i);
  gboolean (*bind_int64)(SieveDbStmt *stmt, int i, gint64 value);
  gboolean (*bind_double)(SieveDbStmt *stmt, int i, double value);
  gboolean (*bind_text)(SieveDbStmt *stmt, int i, const char *text);
  gboolean (*bind_blob)(SieveDbStmt *stmt, int i, const void *data, gsize size);
  SieveDbStep (*step)(SieveDbStmt *stmt);
  int (*column_count)(SieveDbStmt *stmt);
  const char *(*column_name)(SieveDbStmt *stmt, int i);
  SieveDbType (*column_type)(SieveDbStmt *stmt, int i);
  gint64 (*column_int64)(SieveDbStmt *stmt, int i);
  double (*column_double)(SieveDbStmt *stmt, int i);
  const char *(*column_text)(SieveDbStmt *stmt, int i);
  const void *(*column_blob)(SieveDbStmt *stmt, int i, gsize *size);
  gint64 (*changes)(SieveDb *db);
  gboolean (*exec)(SieveDb *db, const char *sql);
  gboolean (*in_transaction)(SieveDb *db);
  const char *begin_sql; /* a write transaction: "BEGIN IMMEDIATE" on SQLite */
  /* (nullable: engines without notifications) see sieve__db_wait */
  gboolean (*wait)(SieveDb *db, const char *what, double timeout_s);
  /* a read transaction that sees one moment of the study throughout */
  const char *begin_read_sql;
} SieveDbClass;

struct _SieveDb {
  const SieveDbClass *klass;
  char *errmsg;           /* the last failure's message */
  SieveDbFailure failure; /* and its kind */
};

struct _SieveDbStmt {
  SieveDb *db;
};

/* The driver of a store name: PostgreSQL for postgresql:// and
 * postgres:// URLs, SQLite for anything else (a file name). */
gboolean sieve__db_name_is_url(const char *name);

/* (transfer full) a SQLite connection, read-write (the file made when
 * missing) or read-only; uri: filename is a file: URI.  NULL
 * with *errmsg (transfer full) set.  A file that is not SQLite fails at its
 * first read, with SIEVE_DB_FAIL_NOT_A_DB. */
SieveDb *sieve__db_sqlite_open(const char *filename, gboolean write, gboolean uri, char **errmsg);

/* (transfer full) a PostgreSQL connection to the study of url (its
 * `study` parameter, "sieve" by default), whose tables live in the schema
 * (name space) of that name, created for WRITE and required for READ.
 * WRITE also takes the study's advisory lock, held for the session: a
 * second writer gets SIEVE_ERROR_STORE_BUSY.  *display (transfer full) is
 * the URL without its password, for messages. */
SieveDb *sieve__db_pg_open(const char *url, SieveStoreMode mode, char **display, GError **error);
/* The seconds a PostgreSQL store keeps trying to reconnect to a server
 * that went away before it fails (store-db-pg.c), for the stores opened
 * after the call; a URL's reconnect_timeout= wins.  60 by default; 0
 * fails at once. */
SIEVE_INTERNAL_API void sieve__db_set_reconnect_timeout(double seconds);
SIEVE_INTERNAL_API double sieve__db_get_reconnect_timeout(void);
/* sieve__store_wait_for_queue on a PostgreSQL server. */
void sieve__db_pg_wait_for_queue(const char *url, double timeout_s);
/* (transfer full) url with its password (user:PASSWORD@ or
 * password=...) shown as ***, for messages; never print a URL otherwise. */
char *sieve__db_redact_url(const char *url);

void sieve__db_close(SieveDb *db);
/* (transfer full) (nullable: NULL on failure, with db's errmsg) persistent:
 * kept for many uses (prepared once on the server). */
SieveDbStmt *sieve__db_prepare(SieveDb *db, const char *sql, gboolean persistent);
void sieve__db_finalize(SieveDbStmt *stmt);
void sieve__db_reset(SieveDbStmt *stmt);
gboolean sieve__db_bind_null(SieveDbStmt *stmt, int i);
gboolean sieve__db_bind_int64(SieveDbStmt *stmt, int i, gint64 value);
gboolean sieve__db_bind_double(SieveDbStmt *stmt, int i, double value);
/* text NULL binds SQL NULL */
gboolean sieve__db_bind_text(SieveDbStmt *stmt, int i, const char *text);
gboolean sieve__db_bind_blob(SieveDbStmt *stmt, int i, const void *data, gsize size);
SieveDbStep sieve__db_step(SieveDbStmt *stmt);
int sieve__db_column_count(SieveDbStmt *stmt);
const char *sieve__db_column_name(SieveDbStmt *stmt, int i);
SieveDbType sieve__db_column_type(SieveDbStmt *stmt, int i);
gint64 sieve__db_column_int64(SieveDbStmt *stmt, int i);
double sieve__db_column_double(SieveDbStmt *stmt, int i);
/* (transfer none) valid until the next step or reset; NULL for SQL NULL */
const char *sieve__db_column_text(SieveDbStmt *stmt, int i);
const void *sieve__db_column_blob(SieveDbStmt *stmt, int i, gsize *size);
/* Rows changed by the last INSERT, UPDATE or DELETE. */
gint64 sieve__db_changes(SieveDb *db);
/* One or more statements without parameters. */
gboolean sieve__db_exec(SieveDb *db, const char *sql);
gboolean sieve__db_in_transaction(SieveDb *db);
gboolean sieve__db_begin(SieveDb *db);
/* A read transaction: every read until its ROLLBACK sees the study as it
 * was at the first, whatever is written meanwhile. */
gboolean sieve__db_begin_read(SieveDb *db);
/* Waits up to timeout_s for a notification `what` of the study (on
 * PostgreSQL: LISTEN on the channel "STUDY.what", STUDY cut at 55 bytes,
 * which statements raise with pg_notify), or sleeps timeout_s
 * where the engine has none.  The first call only starts listening and
 * returns at once, so that the caller looks again for what it waits for
 * before waiting: nothing sent in between is missed.  FALSE: the session
 * failed (the next statement finds out). */
gboolean sieve__db_wait(SieveDb *db, const char *what, double timeout_s);
const char *sieve__db_errmsg(SieveDb *db);
SieveDbFailure sieve__db_failure(SieveDb *db);
/* For drivers: records a failure. */
void sieve__db_set_failure(SieveDb *db, SieveDbFailure failure, const char *errmsg);

/* The store's connection, for store-copy.c. (transfer none) */
SieveDb *sieve__store_get_db(SieveStore *store);
/* The tables of a study, parents before children (copy order). */
extern const char *const sieve__store_tables[];
/* *table: the first table of the study's own (not meta, nor latency_ops,
 * which `sieve latency --store` fills without a study) that holds a row,
 * NULL when none does. */
gboolean sieve__store_first_filled_table(SieveStore *store, const char **table, GError **error);

G_END_DECLS

/* ---- the evaluation queue of a study on PostgreSQL (store-queue.c) ------
 *
 * The coordinator (`sieve run` on a postgresql:// store) puts each
 * evaluation in the table queue; `sieve worker` processes claim them with
 * SELECT ... FOR UPDATE SKIP LOCKED under a lease that they renew while
 * they run, and write the result back; the coordinator takes finished
 * ones, records them as trials and deletes them.  A claim bumps the row's
 * lease number, so a result written under an older lease (its worker was
 * presumed dead and the evaluation given to another) matches no row and is
 * discarded.  Times are the server's clock, so workers' clocks need not
 * agree. */
typedef struct {
  gint64 trial;
  char *genotype;
  double fidelity;
  gint64 lease;    /* the claim's number: complete and renew name it */
  gint64 attempts; /* claims so far, this one included */
  char *previous;  /* (nullable) the worker whose lease expired before this claim */
  SieveResult *result; /* done items (sieve__queue_take_done) */
  GArray *intermediate; /* SieveIntermediate, by step: what the evaluation reported (done items) */
  double started, finished;
  char *worker;
} SieveQueueItem;

SIEVE_INTERNAL_API void sieve__queue_item_free(SieveQueueItem *item);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveQueueItem, sieve__queue_item_free)
/* Creates the queue (IF NOT EXISTS) and drops the rows of trials that are
 * no longer pending (a coordinator killed between recording a result and
 * deleting its row). */
SIEVE_INTERNAL_API gboolean sieve__queue_setup(SieveStore *store, GError **error);
/* Queues trial, unless it is queued already (a resumed coordinator finds
 * the evaluations its predecessor queued, running or done). */
SIEVE_INTERNAL_API gboolean sieve__queue_put(SieveStore *store, gint64 trial, const char *genotype, double fidelity, GError **error);
/* (transfer full) (nullable: NULL and no error when nothing is claimable) */
SIEVE_INTERNAL_API SieveQueueItem *sieve__queue_claim(SieveStore *store, const char *worker, double lease_s, GError **error);
/* Extends the lease; FALSE without error when it was lost. */
SIEVE_INTERNAL_API gboolean sieve__queue_renew(SieveStore *store, gint64 trial, gint64 lease, double lease_s, gboolean *held,
                            GError **error);
/* Writes the result and its n intermediate values under the lease; *kept
 * FALSE when the lease was lost (the result is then discarded). */
SIEVE_INTERNAL_API gboolean sieve__queue_complete(SieveStore *store, gint64 trial, gint64 lease, const SieveResult *result,
                               const SieveIntermediate *intermediate, guint n, double started, double finished,
                               gboolean *kept, GError **error);
/* (transfer full) element-type SieveQueueItem: the finished evaluations, in
 * trial order. */
SIEVE_INTERNAL_API GPtrArray *sieve__queue_take_done(SieveStore *store, GError **error);
SIEVE_INTERNAL_API gboolean sieve__queue_delete(SieveStore *store, gint64 trial, GError **error);
/* Tells the workers (what "queued") or the coordinator ("done") that
 * there is something for them: delivered when the caller's transaction
 * commits, at once outside one. */
SIEVE_INTERNAL_API gboolean sieve__queue_announce(SieveStore *store, const char *what, GError **error);
/* Waits up to timeout_s for an announcement of what (sieve__db_wait). */
SIEVE_INTERNAL_API void sieve__queue_wait(SieveStore *store, const char *what, double timeout_s);
/* Waits up to timeout_s for the study of url to have a queue (a worker
 * started before its study), woken by the coordinator's first
 * announcement; returns at once when it has one.  One connection for the
 * whole wait, not one per look. */
SIEVE_INTERNAL_API void sieve__store_wait_for_queue(const char *url, double timeout_s);
/* Counts of queued and running rows (either may be NULL). */
SIEVE_INTERNAL_API gboolean sieve__queue_counts(SieveStore *store, gint64 *queued, gint64 *running, GError **error);
