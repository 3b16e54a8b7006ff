/* sieve: the store's SQL driver for SQLite 3 (store-private.h). */
#include <sqlite3.h>

#include "store/store-private.h"

typedef struct {
  SieveDb parent;
  sqlite3 *db;
} DbSqlite;

typedef struct {
  SieveDbStmt parent;
  sqlite3_stmt *stmt;
} StmtSqlite;

#define DB(d) (((DbSqlite *) (d))->db)
#define STMT(s) (((StmtSqlite *) (s))->stmt)

/* Records SQLite's last failure on the connection. */
static void
fail(SieveDb *db)
{
  int code = sqlite3_errcode(DB(db));
  SieveDbFailure kind = code == SQLITE_NOTADB                          ? SIEVE_DB_FAIL_NOT_A_DB
                        : code == SQLITE_BUSY || code == SQLITE_LOCKED ? SIEVE_DB_FAIL_BUSY
                                                                       : SIEVE_DB_FAIL_OTHER;
  sieve__db_set_failure(db, kind, sqlite3_errmsg(DB(db)));
}

static gboolean
bind_ok(SieveDbStmt *stmt, int rc)
{
  if (rc == SQLITE_OK)
    return TRUE;
  fail(stmt->db);
  return FALSE;
}

static void
db_close(SieveDb *db)
{
  if (sqlite3_close(DB(db)) != SQLITE_OK)
    g_warning("closing a store: %s", sqlite3_errmsg(DB(db)));
  g_free(db);
}

static SieveDbStmt *
db_prepare(SieveDb *db, const char *sql, gboolean persistent)
{
  sqlite3_stmt *raw = NULL;
  if (sqlite3_prepare_v3(DB(db), sql, -1, persistent ? SQLITE_PREPARE_PERSISTENT : 0, &raw, NULL) != SQLITE_OK) {
    fail(db);
    sqlite3_finalize(raw);
    return NULL;
  }
  StmtSqlite *stmt = g_new0(StmtSqlite, 1);
  stmt->parent.db = db;
  stmt->stmt = raw;
  return &stmt->parent;
}

static void
db_finalize(SieveDbStmt *stmt)
{
  sqlite3_finalize(STMT(stmt));
  g_free(stmt);
}

static void
db_reset(SieveDbStmt *stmt)
{
  sqlite3_reset(STMT(stmt));
  sqlite3_clear_bindings(STMT(stmt));
}

static gboolean
db_bind_null(SieveDbStmt *stmt, int i)
{
  return bind_ok(stmt, sqlite3_bind_null(STMT(stmt), i));
}

static gboolean
db_bind_int64(SieveDbStmt *stmt, int i, gint64 value)
{
  return bind_ok(stmt, sqlite3_bind_int64(STMT(stmt), i, value));
}

static gboolean
db_bind_double(SieveDbStmt *stmt, int i, double value)
{
  return bind_ok(stmt, sqlite3_bind_double(STMT(stmt), i, value));
}

static gboolean
db_bind_text(SieveDbStmt *stmt, int i, const char *text)
{
  return bind_ok(stmt, sqlite3_bind_text(STMT(stmt), i, text, -1, SQLITE_TRANSIENT));
}

/* An empty blob is a zero-length blob, never NULL. */
static gboolean
db_bind_blob(SieveDbStmt *stmt, int i, const void *data, gsize size)
{
  return bind_ok(stmt, size == 0 || data == NULL ? sqlite3_bind_zeroblob(STMT(stmt), i, 0)
                                                 : sqlite3_bind_blob64(STMT(stmt), i, data, size, SQLITE_TRANSIENT));
}

static SieveDbStep
db_step(SieveDbStmt *stmt)
{
  int rc = sqlite3_step(STMT(stmt));
  if (rc == SQLITE_ROW)
    return SIEVE_DB_ROW;
  if (rc == SQLITE_DONE)
    return SIEVE_DB_DONE;
  fail(stmt->db);
  return SIEVE_DB_ERROR;
}

static int
db_column_count(SieveDbStmt *stmt)
{
  return sqlite3_column_count(STMT(stmt));
}

static const char *
db_column_name(SieveDbStmt *stmt, int i)
{
  return sqlite3_column_name(STMT(stmt), i);
}

static SieveDbType
db_column_type(SieveDbStmt *stmt, int i)
{
  switch (sqlite3_column_type(STMT(stmt), i)) {
  case SQLITE_INTEGER:
    return SIEVE_DB_INTEGER;
  case SQLITE_FLOAT:
    return SIEVE_DB_FLOAT;
  case SQLITE_TEXT:
    return SIEVE_DB_TEXT;
  case SQLITE_BLOB:
    return SIEVE_DB_BLOB;
  default:
    return SIEVE_DB_NULL;
  }
}

static gint64
db_column_int64(SieveDbStmt *stmt, int i)
{
  return sqlite3_column_int64(STMT(stmt), i);
}

static double
db_column_double(SieveDbStmt *stmt, int i)
{
  return sqlite3_column_double(STMT(stmt), i);
}

static const char *
db_column_text(SieveDbStmt *stmt, int i)
{
  return (const char *) sqlite3_column_text(STMT(stmt), i);
}

static const void *
db_column_blob(SieveDbStmt *stmt, int i, gsize *size)
{
  const void *data = sqlite3_column_blob(STMT(stmt), i);
  *size = (gsize) sqlite3_column_bytes(STMT(stmt), i);
  return data;
}

static gint64
db_changes(SieveDb *db)
{
  return sqlite3_changes64(DB(db));
}

static gboolean
db_exec(SieveDb *db, const char *sql)
{
  if (sqlite3_exec(DB(db), sql, NULL, NULL, NULL) == SQLITE_OK)
    return TRUE;
  fail(db);
  return FALSE;
}

static gboolean
db_in_transaction(SieveDb *db)
{
  return !sqlite3_get_autocommit(DB(db));
}

static const SieveDbClass sqlite_class = {
    .engine = "SQLite",
    .close = db_close,
    .prepare = db_prepare,
    .finalize = db_finalize,
    .reset = db_reset,
    .bind_null = db_bind_null,
    .bind_int64 = db_bind_int64,
    .bind_double = db_bind_double,
    .bind_text = db_bind_text,
    .bind_blob = db_bind_blob,
    .step = db_step,
    .column_count = db_column_count,
    .column_name = db_column_name,
    .column_type = db_column_type,
    .column_int64 = db_column_int64,
    .column_double = db_column_double,
    .column_text = db_column_text,
    .column_blob = db_column_blob,
    .changes = db_changes,
    .exec = db_exec,
    .in_transaction = db_in_transaction,
    .begin_sql = "BEGIN IMMEDIATE",
    /* Deferred: the snapshot (WAL) or shared lock is taken at the first read. */
    .begin_read_sql = "BEGIN",
};

SieveDb *
sieve__db_sqlite_open(const char *filename, gboolean write, gboolean uri, char **errmsg)
{
  int flags = (write ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY) | (uri ? SQLITE_OPEN_URI : 0);
  sqlite3 *raw = NULL;
  if (sqlite3_open_v2(filename, &raw, flags, NULL) != SQLITE_OK) {
    *errmsg = g_strdup(raw ? sqlite3_errmsg(raw) : "out of memory");
    sqlite3_close(raw);
    return NULL;
  }
  sqlite3_extended_result_codes(raw, 0);
  /* A reader may meet a writer in the middle of a checkpoint or WAL
   * recovery; waiting a little beats failing. */
  sqlite3_busy_timeout(raw, 5000);
  DbSqlite *db = g_new0(DbSqlite, 1);
  db->parent.klass = &sqlite_class;
  db->db = raw;
  return &db->parent;
}
