/* sieve: the study store on SQLite 3 (one file per study, WAL journal).
 *
 * Durability: the journal is WAL with synchronous=NORMAL.  A commit appends
 * its pages to the -wal file with write() before COMMIT returns, so the
 * data is in the kernel's page cache: a killed process (SIGKILL, crash,
 * OOM killer) loses nothing committed, because the kernel still writes
 * those pages out and the next open replays the WAL.  What NORMAL gives up
 * is the fsync() per commit, so a power loss or kernel panic may lose the
 * last commits (never corrupt the file: WAL frames carry checksums and the
 * WAL is synced before each checkpoint).  FULL would cost one fsync per
 * trial, which dominates studies whose evaluations take milliseconds.
 *
 * The writer lock is an open-file-description lock (F_OFD_SETLK) on one
 * byte of the database file itself, far past any byte SQLite locks: the
 * lock belongs to the file (device and inode), so a symlink or a hard link
 * to a store in use is refused like its own name, and the kernel drops it
 * when the writer dies, leaving no lock file behind.  OFD locks, unlike
 * POSIX ones, do not vanish when another descriptor of the file is closed.
 * The reverse hazard remains: closing OUR descriptor drops every POSIX lock
 * that SQLite holds on the file in this process (sqlite.org/howtocorrupt.html,
 * section 2.2).  So the process keeps one table of the store files it has
 * open (readers and writers), and a lock descriptor is only closed once no
 * connection of this process has that file open; until then it is parked.
 * The table also lets a second writer in the same process name the path
 * the first one used.
 */
#define _GNU_SOURCE /* F_OFD_SETLK */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include "sieve-config.h"
#include <sieve/store.h>

#include "store/store-private.h"

/* The version of the tables below; a store written by a newer sieve (higher
 * user_version) is refused rather than misread, an older one is brought up
 * to date when opened for writing (migrate) and read as it is otherwise.
 *   1: meta, trials, metrics, state, cache(hash, key, trial)
 *   2: trials gain run, hash_kind, hash and stage; cache becomes
 *      cache(kind, hash, key, trial); cache_keys holds each key's text
 *   3: weights(owner, number, data) keeps trained networks; finals and
 *      final_metrics hold `sieve final`'s trainings, apart from the trials
 *   4: intermediate(trial, step, fidelity, value) holds what evaluations
 *      reported while they ran; a trial's status may be 'pruned' */
#define SCHEMA_VERSION 4
/* PRAGMA application_id: 'SIEV', tells our files from other SQLite files. */
#define APPLICATION_ID 0x53494556

/* Added in version 2 (migrate adds them to older files, in this order).
 * run: the `sieve run` (1, 2, ... counted in meta 'runs') that proposed the
 * trial; hash_kind, hash: the dedupe stage's hash of it; stage: how far a
 * pending trial got ('evaluate': past the screen, waiting for the evaluator). */
static const char *const trial_v2_columns[][2] = {
    {"run", "INTEGER"}, {"hash_kind", "TEXT"}, {"hash", "TEXT"}, {"stage", "TEXT"}};
#define TRIAL_V2_COLUMNS "  run INTEGER,\n  hash_kind TEXT,\n  hash TEXT,\n  stage TEXT"

/* The hash -> result cache of the dedupe stage: trial holds the result for
 * proposals whose `kind` hash is `hash`, under the evaluator settings that
 * `key` names (a digest; cache_keys has the text it digests). */
#define CACHE_SQL                                                                                          \
  "CREATE TABLE IF NOT EXISTS cache (\n"                                                                    \
  "  kind TEXT NOT NULL,\n"                                                                                 \
  "  hash TEXT NOT NULL,\n"                                                                                 \
  "  key TEXT NOT NULL,\n"                                                                                  \
  "  trial INTEGER NOT NULL REFERENCES trials(number),\n"                                                   \
  "  PRIMARY KEY (kind, hash, key));\n"                                                                     \
  "CREATE TABLE IF NOT EXISTS cache_keys (\n"                                                               \
  "  key TEXT PRIMARY KEY,\n"                                                                               \
  "  text TEXT NOT NULL);\n"

/* Added in version 3.  weights: one network's safetensors file (the bytes
 * sieve_weights_encode writes), of a trial or of a final training; a blob
 * in the store, so that it is written in the same transaction as the
 * result it belongs to and a kill leaves both or neither.  finals: `sieve
 * final`'s trainings of chosen trials at full budget, kept apart from the
 * search's trials (no optimizer, export or summary mixes them). */
#define V3_SQL                                                                                             \
  "CREATE TABLE IF NOT EXISTS weights (\n"                                                                 \
  "  owner TEXT NOT NULL CHECK (owner IN ('trial', 'final')),\n"                                           \
  "  number INTEGER NOT NULL,\n"                                                                           \
  "  data BLOB NOT NULL,\n"                                                                                \
  "  PRIMARY KEY (owner, number));\n"                                                                      \
  "CREATE TABLE IF NOT EXISTS finals (\n"                                                                  \
  "  number INTEGER PRIMARY KEY,\n"                                                                        \
  "  trial INTEGER NOT NULL REFERENCES trials(number),\n"                                                  \
  "  genotype TEXT NOT NULL,\n"                                                                            \
  "  status TEXT NOT NULL CHECK (status IN ('pending', 'ok', 'failed')),\n"                                \
  "  epochs REAL,\n"                                                                                       \
  "  settings TEXT NOT NULL,\n"                                                                            \
  "  reason TEXT,\n"                                                                                       \
  "  cost REAL,\n"                                                                                         \
  "  started REAL,\n"                                                                                      \
  "  finished REAL);\n"                                                                                    \
  "CREATE TABLE IF NOT EXISTS final_metrics (\n"                                                           \
  "  final INTEGER NOT NULL REFERENCES finals(number),\n"                                                  \
  "  idx INTEGER NOT NULL,\n"                                                                              \
  "  name TEXT NOT NULL,\n"                                                                                \
  "  value " SIEVE_DB_ANY_DOUBLE ",\n"                                                                                             \
  "  PRIMARY KEY (final, name));\n"

/* Added in version 4: the intermediate values of each trial (value typed
 * as in metrics, so that a NaN survives). */
#define V4_SQL                                                                                             \
  "CREATE TABLE IF NOT EXISTS intermediate (\n"                                                             \
  "  trial INTEGER NOT NULL REFERENCES trials(number),\n"                                                  \
  "  step INTEGER NOT NULL,\n"                                                                              \
  "  fidelity REAL,\n"                                                                                      \
  "  value " SIEVE_DB_ANY_DOUBLE ",\n"                                                                       \
  "  PRIMARY KEY (trial, step));\n"

/* The trials' status check, before and after version 4 added 'pruned'. */
#define STATUS_CHECK_V3 "'pending', 'ok', 'failed', 'screened', 'cached')"
#define STATUS_CHECK "'pending', 'ok', 'failed', 'screened', 'cached', 'pruned')"

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS meta (\n"
    "  key TEXT PRIMARY KEY,\n"
    "  value TEXT NOT NULL);\n"
    "CREATE TABLE IF NOT EXISTS trials (\n"
    "  number INTEGER PRIMARY KEY,\n" /* 0-based, in ask order */
    "  genotype TEXT NOT NULL,\n"
    "  status TEXT NOT NULL CHECK (status IN (" STATUS_CHECK "),\n"
    "  fidelity REAL,\n" /* NULL: NAN */
    "  reason TEXT,\n"
    "  cost REAL,\n"     /* NULL: NAN */
    "  started REAL,\n"  /* NULL while pending */
    "  finished REAL,\n" /* NULL while pending */
    "  worker INTEGER,\n" /* NULL while pending */
    "  cached_from INTEGER REFERENCES trials(number),\n"
    TRIAL_V2_COLUMNS ");\n"
    /* value has no declared type so that SQLite converts nothing: a finite
     * value is a REAL, a non-finite one the TEXT 'nan', 'inf' or '-inf'
     * (SQLite would store NaN as NULL).  idx keeps the result's order. */
    "CREATE TABLE IF NOT EXISTS metrics (\n"
    "  trial INTEGER NOT NULL REFERENCES trials(number),\n"
    "  idx INTEGER NOT NULL,\n"
    "  name TEXT NOT NULL,\n"
    "  value " SIEVE_DB_ANY_DOUBLE ",\n"
    "  PRIMARY KEY (trial, name));\n"
    "CREATE TABLE IF NOT EXISTS state (\n"
    "  name TEXT PRIMARY KEY,\n"
    "  type TEXT NOT NULL,\n" /* GVariant type string */
    "  data BLOB NOT NULL);\n" /* serialised normal form */
    CACHE_SQL V3_SQL V4_SQL;

typedef enum {
  STMT_GET_META,
  STMT_SET_META,
  STMT_DELETE_META,
  STMT_NEXT_NUMBER,
  STMT_ADD_TRIAL,
  STMT_FINISH_TRIAL,
  STMT_DELETE_METRICS,
  STMT_ADD_METRIC,
  STMT_GET_TRIAL,
  STMT_LIST_TRIALS,
  STMT_LIST_PENDING,
  STMT_COUNT_ALL,
  STMT_COUNT_STATUS,
  STMT_SAVE_STATE,
  STMT_LOAD_STATE,
  STMT_CACHE_PUT,
  STMT_CACHE_LOOKUP,
  STMT_CACHE_KEY,
  STMT_SET_HASH,
  STMT_SET_STAGE,
  STMT_COUNT_REJECTED,
  STMT_LATENCY_GET,
  STMT_LATENCY_PUT,
  N_STMTS
} StmtId;

#define TRIAL_COLUMNS_WITH(v2)                                                                              \
  "SELECT t.number, t.genotype, t.status, t.fidelity, t.reason, t.cost, t.started, t.finished, t.worker, " \
  "t.cached_from, " v2 ", m.name, m.value FROM trials t LEFT JOIN metrics m ON m.trial = t.number "
#define TRIAL_COLUMNS TRIAL_COLUMNS_WITH("t.run, t.hash_kind, t.hash, t.stage")
/* A version 1 file opened read-only cannot gain the columns. */
#define TRIAL_COLUMNS_V1 TRIAL_COLUMNS_WITH("NULL, NULL, NULL, NULL")

/* Column indexes of TRIAL_COLUMNS. */
enum { COL_NUMBER, COL_GENOTYPE, COL_STATUS, COL_FIDELITY, COL_REASON, COL_COST, COL_STARTED, COL_FINISHED,
       COL_WORKER, COL_CACHED_FROM, COL_RUN, COL_HASH_KIND, COL_HASH, COL_STAGE, COL_METRIC_NAME,
       COL_METRIC_VALUE };

static const char *const stmt_sql[N_STMTS] = {
    [STMT_GET_META] = "SELECT value FROM meta WHERE key = ?1",
    [STMT_SET_META] = "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    [STMT_DELETE_META] = "DELETE FROM meta WHERE key = ?1",
    [STMT_NEXT_NUMBER] = "SELECT COALESCE(MAX(number) + 1, 0) FROM trials",
    [STMT_ADD_TRIAL] = "INSERT INTO trials (number, genotype, status, fidelity, cost, run) "
                       "VALUES (?1, ?2, 'pending', ?3, 0.0, ?4)",
    [STMT_FINISH_TRIAL] = "UPDATE trials SET status = ?2, reason = ?3, cost = ?4, started = ?5, finished = ?6, "
                          "worker = ?7, cached_from = ?8 WHERE number = ?1",
    [STMT_DELETE_METRICS] = "DELETE FROM metrics WHERE trial = ?1",
    [STMT_ADD_METRIC] = "INSERT INTO metrics (trial, idx, name, value) VALUES (?1, ?2, ?3, ?4)",
    [STMT_GET_TRIAL] = TRIAL_COLUMNS "WHERE t.number = ?1 ORDER BY m.idx",
    [STMT_LIST_TRIALS] = TRIAL_COLUMNS "ORDER BY t.number, m.idx",
    [STMT_LIST_PENDING] = TRIAL_COLUMNS "WHERE t.status = 'pending' ORDER BY t.number, m.idx",
    [STMT_COUNT_ALL] = "SELECT count(*) FROM trials",
    [STMT_COUNT_STATUS] = "SELECT count(*) FROM trials WHERE status = ?1 AND COALESCE(stage, '') <> 'rejected'",
    [STMT_SAVE_STATE] = "INSERT INTO state (name, type, data) VALUES (?1, ?2, ?3) "
                         "ON CONFLICT (name) DO UPDATE SET type = excluded.type, data = excluded.data",
    [STMT_LOAD_STATE] = "SELECT type, data FROM state WHERE name = ?1",
    [STMT_CACHE_PUT] = "INSERT INTO cache (kind, hash, key, trial) VALUES (?1, ?2, ?3, ?4) "
                         "ON CONFLICT (kind, hash, key) DO UPDATE SET trial = excluded.trial",
    [STMT_CACHE_LOOKUP] = "SELECT trial FROM cache WHERE kind = ?1 AND hash = ?2 AND key = ?3",
    [STMT_CACHE_KEY] = "INSERT INTO cache_keys (key, text) VALUES (?1, ?2) ON CONFLICT (key) DO NOTHING",
    [STMT_SET_HASH] = "UPDATE trials SET hash_kind = ?2, hash = ?3 WHERE number = ?1",
    [STMT_SET_STAGE] = "UPDATE trials SET stage = ?2 WHERE number = ?1",
    [STMT_COUNT_REJECTED] = "SELECT count(*) FROM trials WHERE status = 'screened' AND stage = 'rejected'",
    [STMT_LATENCY_GET] = "SELECT ms, iqr_ms FROM latency_ops WHERE machine = ?1 AND op = ?2",
    [STMT_LATENCY_PUT] = "INSERT INTO latency_ops (machine, op, ms, iqr_ms, runs, measured) "
                         "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (machine, op) DO UPDATE SET "
                         "ms = excluded.ms, iqr_ms = excluded.iqr_ms, runs = excluded.runs, "
                         "measured = excluded.measured",
};

/* A rejected trial (broke a constraint before evaluation) is stored as
 * status 'screened' with stage 'rejected': stopped before the evaluator,
 * as a screened one is, and written so that the status CHECK of files
 * made before rejections existed holds without rebuilding their trials
 * table.  Reading turns the pair back into SIEVE_STATUS_REJECTED. */
#define REJECTED_STAGE "rejected"

/* The per-operation latency table (sieve/latency.h; the engine's latency
 * table): one row per operation key and machine (the text of
 * sieve_latency_machine: host, CPU, kernel library, threads, batch), so
 * that a store moved to another machine measures again.  Created with
 * the store (so that `sieve store copy` has it to fill), by migrate, and
 * on first use in a file of schema version 4 made before it existed. */
#define LATENCY_SQL                                                                                        \
  "CREATE TABLE IF NOT EXISTS latency_ops (\n"                                                             \
  "  machine TEXT NOT NULL,\n"                                                                             \
  "  op TEXT NOT NULL,\n"                                                                                  \
  "  ms REAL NOT NULL,\n"                                                                                  \
  "  iqr_ms REAL NOT NULL,\n"                                                                              \
  "  runs INTEGER NOT NULL,\n"                                                                             \
  "  measured REAL NOT NULL,\n"                                                                            \
  "  PRIMARY KEY (machine, op));\n"

/* The statements that differ on a version 1 file opened read-only. */
static const char *
stmt_sql_v1(StmtId id)
{
  switch (id) {
  case STMT_GET_TRIAL:
    return TRIAL_COLUMNS_V1 "WHERE t.number = ?1 ORDER BY m.idx";
  case STMT_LIST_TRIALS:
    return TRIAL_COLUMNS_V1 "ORDER BY t.number, m.idx";
  case STMT_LIST_PENDING:
    return TRIAL_COLUMNS_V1 "WHERE t.status = 'pending' ORDER BY t.number, m.idx";
  case STMT_COUNT_STATUS:
    return "SELECT count(*) FROM trials WHERE status = ?1";
  default:
    return stmt_sql[id];
  }
}

struct _SieveStore {
  char *path;
  SieveStoreMode mode;
  SieveDb *db;
  gboolean pg; /* a PostgreSQL store; path is its URL without the password */
  gboolean savepoint_began; /* savepoint() began a transaction that release() ends */
  int lock_fd; /* the writer lock's descriptor, -1 in READ mode */
  char *file_key; /* "dev:ino" of the file in the table of open files, or NULL */
  gboolean v1;  /* a version 1 file opened read-only: no version 2 columns */
  gint64 version; /* the file's schema version (older files opened read-only stay as they are) */
  gint64 run;   /* recorded with new trials; 0: none (NULL) */
  gboolean latency_table; /* latency_ops exists (created or found) */
  gboolean wal_writer;    /* a writer of a file in WAL mode: checkpoints at close */
  SieveDbStmt *stmts[N_STMTS]; /* prepared on first use, kept until close */
};

/* ---- errors ------------------------------------------------------------ */

/* Every database failure goes through here: the path, what we were doing, and
 * the engine's own message. */
static void
set_db_error(SieveStore *store, GError **error, const char *what)
{
  SieveDbFailure failure = sieve__db_failure(store->db);
  const char *msg = sieve__db_errmsg(store->db);
  if (failure == SIEVE_DB_FAIL_NOT_A_DB)
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE, "%s: not a sieve store (%s)", store->path, msg);
  else if (failure == SIEVE_DB_FAIL_BUSY)
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE_BUSY, "%s: %s: %s", store->path, what, msg);
  else
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE, "%s: %s: %s", store->path, what, msg);
}

static void
set_corrupt_error(SieveStore *store, GError **error, const char *format, ...) G_GNUC_PRINTF(3, 4);

static void
set_corrupt_error(SieveStore *store, GError **error, const char *format, ...)
{
  va_list ap;
  va_start(ap, format);
  g_autofree char *what = g_strdup_vprintf(format, ap);
  va_end(ap);
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE, "%s: corrupt store: %s", store->path, what);
}

static gboolean
check_writable(SieveStore *store, GError **error)
{
  if (store->mode == SIEVE_STORE_WRITE)
    return TRUE;
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE, "%s: store is open read-only", store->path);
  return FALSE;
}

/* ---- statements -------------------------------------------------------- */

/* The cached statement id, reset and unbound, ready for new bindings. */
static SieveDbStmt *
get_stmt(SieveStore *store, StmtId id, GError **error)
{
  SieveDbStmt *stmt = store->stmts[id];
  if (stmt == NULL) {
    const char *sql = store->v1 ? stmt_sql_v1(id) : stmt_sql[id];
    if ((stmt = sieve__db_prepare(store->db, sql, TRUE)) == NULL) {
      set_db_error(store, error, "cannot prepare a statement");
      return NULL;
    }
    store->stmts[id] = stmt;
  }
  sieve__db_reset(stmt);
  return stmt;
}

/* Resets a statement after use so that it holds no read snapshot open. */
static void
done_stmt(SieveDbStmt *stmt)
{
  sieve__db_reset(stmt);
}

static gboolean
bind_ok(SieveStore *store, gboolean ok, GError **error)
{
  if (ok)
    return TRUE;
  set_db_error(store, error, "cannot bind a value");
  return FALSE;
}

static gboolean
bind_text(SieveDbStmt *stmt, int i, const char *text)
{
  return sieve__db_bind_text(stmt, i, text);
}

/* NAN is NULL: SQLite itself would turn a NaN into NULL, so say so. */
static gboolean
bind_real(SieveDbStmt *stmt, int i, double value)
{
  return isnan(value) ? sieve__db_bind_null(stmt, i) : sieve__db_bind_double(stmt, i, value);
}

static double
column_real(SieveDbStmt *stmt, int i)
{
  return sieve__db_column_type(stmt, i) == SIEVE_DB_NULL ? NAN : sieve__db_column_double(stmt, i);
}

/* Runs a statement that returns no rows (or whose rows we do not need). */
static gboolean
step_done(SieveStore *store, SieveDbStmt *stmt, const char *what, GError **error)
{
  SieveDbStep rc = sieve__db_step(stmt);
  while (rc == SIEVE_DB_ROW)
    rc = sieve__db_step(stmt);
  if (rc != SIEVE_DB_DONE) {
    set_db_error(store, error, what);
    done_stmt(stmt);
    return FALSE;
  }
  done_stmt(stmt);
  return TRUE;
}

static gboolean
exec(SieveStore *store, const char *sql, const char *what, GError **error)
{
  if (sieve__db_exec(store->db, sql))
    return TRUE;
  set_db_error(store, error, what);
  return FALSE;
}

/* A single integer from a one-row query such as a PRAGMA. */
static gboolean
query_int(SieveStore *store, const char *sql, gint64 *out, GError **error)
{
  SieveDbStmt *stmt = sieve__db_prepare(store->db, sql, FALSE);
  if (stmt == NULL) {
    set_db_error(store, error, "cannot read the store");
    return FALSE;
  }
  SieveDbStep rc = sieve__db_step(stmt);
  if (rc == SIEVE_DB_ROW)
    *out = sieve__db_column_int64(stmt, 0);
  else if (rc == SIEVE_DB_DONE)
    *out = 0;
  else
    set_db_error(store, error, "cannot read the store");
  sieve__db_finalize(stmt);
  return rc == SIEVE_DB_ROW || rc == SIEVE_DB_DONE;
}

/* ---- open and close ---------------------------------------------------- */

/* The lock's byte: beyond any file SQLite writes and any byte it locks
 * (its lock page sits at 1 GiB). */
#define WRITER_LOCK_OFFSET ((off_t) 1 << 62)

/* One store file open in this process, by device and inode. */
typedef struct {
  guint users;        /* connections (readers and writers) of this process */
  char *writer;       /* path the writer opened it by, or NULL */
  GArray *parked_fds; /* lock descriptors to close with the last user */
} OpenFile;

static GMutex open_files_mutex;
static GHashTable *open_files; /* "dev:ino" -> OpenFile* */

static void
open_file_free(gpointer data)
{
  OpenFile *f = data;
  for (guint i = 0; i < f->parked_fds->len; i++)
    close(g_array_index(f->parked_fds, int, i));
  g_array_unref(f->parked_fds);
  g_free(f->writer);
  g_free(f);
}

/* (mutex held) the entry of key, made on first use */
static OpenFile *
open_file_get(const char *key)
{
  if (open_files == NULL)
    open_files = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, open_file_free);
  OpenFile *f = g_hash_table_lookup(open_files, key);
  if (f == NULL) {
    f = g_new0(OpenFile, 1);
    f->parked_fds = g_array_new(FALSE, FALSE, sizeof(int));
    g_hash_table_insert(open_files, g_strdup(key), f);
  }
  return f;
}

/* (mutex held) one user fewer; the entry goes with its last user. */
static void
open_file_release(const char *key)
{
  OpenFile *f = open_files ? g_hash_table_lookup(open_files, key) : NULL;
  if (f != NULL && --f->users == 0)
    g_hash_table_remove(open_files, key);
}

/* (mutex held) closes fd now if no connection of this process has the
 * file open, otherwise later with the last one (see the top of the file). */
static void
park_or_close(OpenFile *f, int fd)
{
  if (f->users == 0)
    close(fd);
  else
    g_array_append_val(f->parked_fds, fd);
}

static char *
file_key(const struct stat *st)
{
  return g_strdup_printf("%ju:%ju", (uintmax_t) st->st_dev, (uintmax_t) st->st_ino);
}

/* Takes the writer lock on the database file (made empty if missing) and
 * registers the file as open in this process; store->file_key set. */
static gboolean
take_writer_lock(SieveStore *store, GError **error)
{
  g_mutex_lock(&open_files_mutex);
  /* The table is asked before a descriptor is opened, so that a refusal
   * in this process closes nothing of SQLite's. */
  struct stat st;
  if (stat(store->path, &st) == 0) {
    g_autofree char *key = file_key(&st);
    OpenFile *f = open_files ? g_hash_table_lookup(open_files, key) : NULL;
    if (f != NULL && f->writer != NULL) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE_BUSY,
                  "%s: store is in use by another writer in this process (pid %d), which opened it as %s",
                  store->path, (int) getpid(), f->writer);
      g_mutex_unlock(&open_files_mutex);
      return FALSE;
    }
  }
  int fd = g_open(store->path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0 || fstat(fd, &st) != 0) {
    int saved = errno;
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE, "%s: cannot open the store for writing: %s", store->path,
                g_strerror(saved));
    if (fd >= 0)
      close(fd);
    g_mutex_unlock(&open_files_mutex);
    return FALSE;
  }
  store->file_key = file_key(&st);
  OpenFile *f = open_file_get(store->file_key);
  struct flock lock = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = WRITER_LOCK_OFFSET, .l_len = 1};
  if (fcntl(fd, F_OFD_SETLK, &lock) != 0) {
    int saved = errno;
    if (saved == EAGAIN || saved == EACCES)
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE_BUSY,
                  "%s: store is in use by another sieve process (the lock is on the file, device:inode %s, "
                  "whatever name it was opened by)",
                  store->path, store->file_key);
    else
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE, "%s: cannot lock the store: %s", store->path,
                  g_strerror(saved));
    park_or_close(f, fd);
    if (f->users == 0)
      g_hash_table_remove(open_files, store->file_key);
    g_clear_pointer(&store->file_key, g_free);
    g_mutex_unlock(&open_files_mutex);
    return FALSE;
  }
  f->users++;
  f->writer = g_strdup(store->path);
  store->lock_fd = fd;
  g_mutex_unlock(&open_files_mutex);
  return TRUE;
}

/* A reader is registered too: its SQLite locks are what parking protects. */
static void
register_reader(SieveStore *store)
{
  struct stat st;
  if (stat(store->path, &st) != 0)
    return;
  g_mutex_lock(&open_files_mutex);
  store->file_key = file_key(&st);
  open_file_get(store->file_key)->users++;
  g_mutex_unlock(&open_files_mutex);
}

/* After the connection is closed: gives up the lock and the registration. */
static void
release_file(SieveStore *store)
{
  if (store->file_key == NULL)
    return;
  g_mutex_lock(&open_files_mutex);
  OpenFile *f = g_hash_table_lookup(open_files, store->file_key);
  if (store->lock_fd >= 0) {
    struct flock unlock = {.l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = WRITER_LOCK_OFFSET, .l_len = 1};
    fcntl(store->lock_fd, F_OFD_SETLK, &unlock);
    g_clear_pointer(&f->writer, g_free);
    f->users--;
    park_or_close(f, store->lock_fd);
    f->users++;
    store->lock_fd = -1;
  }
  open_file_release(store->file_key);
  g_mutex_unlock(&open_files_mutex);
  g_clear_pointer(&store->file_key, g_free);
}

/* Whether table has column (PRAGMA table_info). */
static gboolean
has_column(SieveStore *store, const char *table, const char *column, gboolean *out, GError **error)
{
  g_autofree char *sql = g_strdup_printf("PRAGMA table_info(%s)", table);
  SieveDbStmt *stmt = sieve__db_prepare(store->db, sql, FALSE);
  if (stmt == NULL) {
    set_db_error(store, error, "cannot read the schema");
    return FALSE;
  }
  *out = FALSE;
  SieveDbStep rc;
  while ((rc = sieve__db_step(stmt)) == SIEVE_DB_ROW)
    if (g_strcmp0(sieve__db_column_text(stmt, 1), column) == 0)
      *out = TRUE;
  sieve__db_finalize(stmt);
  if (rc != SIEVE_DB_DONE) {
    set_db_error(store, error, "cannot read the schema");
    return FALSE;
  }
  return TRUE;
}

/* (transfer full) text as an SQL string literal: quoted, its quotes doubled. */
static char *
sql_quote(const char *text)
{
  g_auto(GStrv) parts = g_strsplit(text, "'", -1);
  g_autofree char *doubled = g_strjoinv("''", parts);
  return g_strdup_printf("'%s'", doubled);
}

/* Older versions -> the current one.  1 -> 2, in one transaction (a failure leaves the file as it was):
 * the trials' new columns are added (NULL in existing rows), and the old
 * cache table, keyed without the hash kind, is replaced.  No sieve ever
 * wrote to that table, so it is dropped when empty; a non-empty one (written
 * by another program) is kept as cache_v1 rather than lost. */
static gboolean
migrate(SieveStore *store, gint64 version, GError **error)
{
  if (!exec(store, "BEGIN IMMEDIATE", "cannot begin the schema upgrade", error))
    return FALSE;
  gboolean ok = TRUE;
  for (guint i = 0; ok && version < 2 && i < G_N_ELEMENTS(trial_v2_columns); i++) {
    gboolean present = FALSE;
    ok = has_column(store, "trials", trial_v2_columns[i][0], &present, error);
    if (ok && !present) {
      g_autofree char *sql =
          g_strdup_printf("ALTER TABLE trials ADD COLUMN %s %s", trial_v2_columns[i][0], trial_v2_columns[i][1]);
      ok = exec(store, sql, "cannot upgrade the trials table", error);
    }
  }
  gboolean keyed_by_kind = version >= 2;
  if (ok && !keyed_by_kind)
    ok = has_column(store, "cache", "kind", &keyed_by_kind, error);
  if (ok && !keyed_by_kind) {
    gint64 rows = 0;
    ok = query_int(store, "SELECT count(*) FROM cache", &rows, error) &&
         exec(store, rows == 0 ? "DROP TABLE cache" : "ALTER TABLE cache RENAME TO cache_v1",
              "cannot upgrade the cache table", error);
  }
  /* Version 3 -> 4 widens the trials' status check to admit 'pruned'.  A
   * CHECK constraint is not part of the stored rows, so SQLite's documented
   * way to change one is to edit the table's text in sqlite_schema and bump
   * the schema cookie (https://sqlite.org/lang_altertable.html, "making
   * other kinds of table schema changes"): no row is copied or touched. */
  gint64 cookie = 0;
  if (ok && version < 4)
    ok = query_int(store, "PRAGMA schema_version", &cookie, error);
  if (ok && version < 4) {
    g_autofree char *from = sql_quote(STATUS_CHECK_V3), *to = sql_quote(STATUS_CHECK);
    g_autofree char *edit = g_strdup_printf("PRAGMA writable_schema = ON;\n"
                                            "UPDATE sqlite_schema SET sql = replace(sql, %s, %s)"
                                            " WHERE type = 'table' AND name = 'trials';\n"
                                            "PRAGMA schema_version = %" G_GINT64_FORMAT ";\n"
                                            "PRAGMA writable_schema = OFF;",
                                            from, to, cookie + 1);
    ok = exec(store, edit, "cannot upgrade the trials' status check", error);
  }
  /* Versions 2 -> 3 and 3 -> 4 otherwise only add tables. */
  g_autofree char *sql = g_strdup_printf(CACHE_SQL V3_SQL V4_SQL LATENCY_SQL "PRAGMA user_version = %d;", SCHEMA_VERSION);
  ok = ok && exec(store, sql, "cannot upgrade the cache table", error) &&
       exec(store, "COMMIT", "cannot commit the schema upgrade", error);
  if (!ok)
    sieve__db_exec(store->db, "ROLLBACK");
  return ok;
}

/* A store written by a newer sieve is refused rather than misread. */
static gboolean
check_not_newer(SieveStore *store, gint64 version, GError **error)
{
  if (version <= SCHEMA_VERSION)
    return TRUE;
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE,
              "%s: the store has schema version %" G_GINT64_FORMAT
              ", newer than this sieve understands (%d); use a newer sieve",
              store->path, version, SCHEMA_VERSION);
  return FALSE;
}

/* Checks (READ) or creates (WRITE, new file) the schema. */
static gboolean
check_schema(SieveStore *store, GError **error)
{
  gint64 app_id = 0, version = 0, n_tables = 0;
  /* The first read of the file: a file that is not SQLite fails here with
   * SIEVE_DB_FAIL_NOT_A_DB, which set_db_error words as "not a sieve store". */
  if (!query_int(store, "SELECT count(*) FROM sqlite_schema", &n_tables, error) ||
      !query_int(store, "PRAGMA application_id", &app_id, error) ||
      !query_int(store, "PRAGMA user_version", &version, error))
    return FALSE;
  gboolean empty = n_tables == 0 && app_id == 0 && version == 0;
  if (empty && store->mode == SIEVE_STORE_READ) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE, "%s: not a sieve store (an empty database)", store->path);
    return FALSE;
  }
  if (!empty && (app_id != APPLICATION_ID || version <= 0)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE,
                "%s: not a sieve store (an SQLite database written by another program)", store->path);
    return FALSE;
  }
  if (!check_not_newer(store, version, error))
    return FALSE;
  store->version = empty ? SCHEMA_VERSION : version;
  if (store->mode == SIEVE_STORE_READ) {
    store->v1 = version == 1;
    return TRUE;
  }

  /* WAL must be chosen outside a transaction; it is persistent in the file,
   * so readers see it too. */
  SieveDbStmt *stmt = sieve__db_prepare(store->db, "PRAGMA journal_mode=WAL", FALSE);
  if (stmt == NULL || sieve__db_step(stmt) != SIEVE_DB_ROW) {
    set_db_error(store, error, "cannot set the WAL journal");
    sieve__db_finalize(stmt);
    return FALSE;
  }
  gboolean wal = g_ascii_strcasecmp(sieve__db_column_text(stmt, 0), "wal") == 0;
  sieve__db_finalize(stmt);
  if (!wal) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE,
                "%s: cannot use a WAL journal here (a file system without shared memory?)", store->path);
    return FALSE;
  }
  store->wal_writer = TRUE;
  if (!exec(store, "PRAGMA synchronous=NORMAL", "cannot set synchronous", error))
    return FALSE;
  if (!empty)
    return version == SCHEMA_VERSION || (migrate(store, version, error) && (store->version = SCHEMA_VERSION));
  g_autofree char *sql = g_strdup_printf("BEGIN IMMEDIATE;\n%s" LATENCY_SQL
                                         "PRAGMA application_id = %d;\n"
                                         "PRAGMA user_version = %d;\n"
                                         "COMMIT;\n",
                                         schema_sql, APPLICATION_ID, SCHEMA_VERSION);
  if (!exec(store, sql, "cannot create the tables", error)) {
    sieve__db_exec(store->db, "ROLLBACK");
    return FALSE;
  }
  return TRUE;
}

/* Version 3 (the first on PostgreSQL) -> 4: the intermediate and latency
 * tables (the latter made on first use on SQLite), and
 * 'pruned' in the trials' status check (PostgreSQL's default name for the
 * CHECK of trials.status is trials_status_check), in one transaction. */
static gboolean
migrate_pg(SieveStore *store, GError **error)
{
  g_autofree char *sql = g_strdup_printf(V4_SQL LATENCY_SQL
                                         "ALTER TABLE trials DROP CONSTRAINT IF EXISTS trials_status_check;\n"
                                         "ALTER TABLE trials ADD CONSTRAINT trials_status_check"
                                         " CHECK (status IN (" STATUS_CHECK ");\n"
                                         "UPDATE sieve_schema SET version = %d;\n",
                                         SCHEMA_VERSION);
  if (!sieve__db_begin(store->db) || !sieve__db_exec(store->db, sql) || !sieve__db_exec(store->db, "COMMIT")) {
    set_db_error(store, error, "cannot upgrade the schema");
    sieve__db_exec(store->db, "ROLLBACK");
    return FALSE;
  }
  store->version = SCHEMA_VERSION;
  return TRUE;
}

/* The schema of a study on PostgreSQL: the same tables, and the version in
 * a table of its own (SQLite keeps it in the file header). */
static gboolean
check_schema_pg(SieveStore *store, GError **error)
{
  gint64 n_tables = 0, has_version = 0, version = 0;
  if (!query_int(store,
                 "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()",
                 &n_tables, error) ||
      !query_int(store,
                 "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() "
                 "AND table_name = 'sieve_schema'",
                 &has_version, error) ||
      (has_version > 0 && !query_int(store, "SELECT MAX(version) FROM sieve_schema", &version, error)))
    return FALSE;
  gboolean empty = n_tables == 0;
  if (empty && store->mode == SIEVE_STORE_READ) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE, "%s: not a sieve store (an empty study)", store->path);
    return FALSE;
  }
  if (!empty && version <= 0) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE,
                "%s: not a sieve store (the study's schema holds tables of another program)", store->path);
    return FALSE;
  }
  if (!check_not_newer(store, version, error))
    return FALSE;
  store->version = empty ? SCHEMA_VERSION : version;
  if (store->mode == SIEVE_STORE_READ || (!empty && version == SCHEMA_VERSION))
    return TRUE;
  if (!empty)
    return migrate_pg(store, error);
  g_autofree char *sql = g_strdup_printf("%s" LATENCY_SQL
                                         "CREATE TABLE sieve_schema (version INTEGER NOT NULL);\n"
                                         "INSERT INTO sieve_schema (version) VALUES (%d);\n",
                                         schema_sql, SCHEMA_VERSION);
  if (!sieve__db_begin(store->db) || !sieve__db_exec(store->db, sql) || !sieve__db_exec(store->db, "COMMIT")) {
    set_db_error(store, error, "cannot create the tables");
    sieve__db_exec(store->db, "ROLLBACK");
    return FALSE;
  }
  return TRUE;
}

static gboolean
open_pg(SieveStore *store, GError **error)
{
#ifdef SIEVE_HAVE_POSTGRESQL
  g_autofree char *url = g_steal_pointer(&store->path);
  store->pg = TRUE;
  store->db = sieve__db_pg_open(url, store->mode, &store->path, error);
  return store->db != NULL && check_schema_pg(store, error);
#else
  g_autofree char *display = sieve__db_redact_url(store->path);
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE,
              "%s: this sieve was built without PostgreSQL (install libpq-dev and build again)", display);
  return FALSE;
#endif
}

/* The SQLite URI a reader opens the store at path by (transfer full), or
 * NULL for the path itself, read-only; *writable: the URI opens it
 * read-write, and the reader must refuse writes (query_only).
 *
 * A WAL store needs its -shm file, which SQLite makes even to read; in a
 * folder this user cannot write, with no -wal left (so no writer can be at
 * work: it could not have made one), the file is read as immutable, which
 * needs neither.  A read-only connection cannot remove the -wal and -shm
 * files when it closes last (SQLite needs to write to checkpoint first), so
 * a study only read would be left as three files: where this user may
 * write, a reader opens read-write, never creating, and closing last, it
 * folds and removes them as a writer does.  Elsewhere it opens the path
 * read-only. */
static char *
reader_uri(const char *path, gboolean *writable)
{
  g_autofree char *dir = g_path_get_dirname(path);
  g_autofree char *wal = g_strconcat(path, "-wal", NULL);
  /* The URI names the absolute path after an empty authority ("file://"):
   * after "file:" alone a path that starts with "//" would be read as an
   * authority (SQLite refuses any but localhost). */
  g_autofree char *cwd = g_path_is_absolute(path) ? NULL : g_get_current_dir();
  g_autofree char *absolute = cwd ? g_build_filename(cwd, path, NULL) : g_strdup(path);
  g_autofree char *escaped = g_uri_escape_string(absolute, "/", FALSE);
  *writable = access(dir, W_OK) == 0 && access(path, W_OK) == 0;
  if (access(dir, W_OK) != 0 && !g_file_test(wal, G_FILE_TEST_EXISTS))
    return g_strconcat("file://", escaped, "?immutable=1", NULL);
  return *writable ? g_strconcat("file://", escaped, "?mode=rw", NULL) : NULL;
}

SieveStore *
sieve_store_open(const char *path, SieveStoreMode mode, GError **error)
{
  g_return_val_if_fail(path != NULL, NULL);
  g_return_val_if_fail(mode == SIEVE_STORE_READ || mode == SIEVE_STORE_WRITE, NULL);
  g_autoptr(SieveStore) store = g_new0(SieveStore, 1);
  store->path = g_strdup(path);
  store->mode = mode;
  store->lock_fd = -1;

  if (sieve__db_name_is_url(path))
    return open_pg(store, error) ? g_steal_pointer(&store) : NULL;

  if (mode == SIEVE_STORE_READ && !g_file_test(path, G_FILE_TEST_EXISTS)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND, "%s: no such store", path);
    return NULL;
  }
  if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE, "%s: not a sieve store (a directory)", path);
    return NULL;
  }
  /* The lock comes first, so a refused writer touches nothing. */
  if (mode == SIEVE_STORE_WRITE && !take_writer_lock(store, error))
    return NULL;
  if (mode == SIEVE_STORE_READ)
    register_reader(store);

  gboolean writable = FALSE;
  g_autofree char *uri = mode == SIEVE_STORE_READ ? reader_uri(path, &writable) : NULL;
  g_autofree char *errmsg = NULL;
  if ((store->db = sieve__db_sqlite_open(uri ? uri : path, mode == SIEVE_STORE_WRITE || writable, uri != NULL,
                                         &errmsg)) == NULL) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE, "%s: cannot open the store: %s", path, errmsg);
    return NULL;
  }
  if (writable && !exec(store, "PRAGMA query_only=ON", "cannot open the store for reading only", error))
    return NULL;
  if (!exec(store, "PRAGMA foreign_keys=ON", "cannot enable foreign keys", error) || !check_schema(store, error))
    return NULL;
  return g_steal_pointer(&store);
}

/* A writer leaves the whole study in the main file when it closes.  SQLite
 * checkpoints the WAL at close only when no other connection has the file
 * open: with a reader at work (`sieve serve`, a report) every trial would
 * stay in the -wal file, and a copy of the .sieve file alone would be an
 * empty database.  A read-only reader cannot checkpoint (reader_uri), so
 * the writer does it, TRUNCATE leaving an empty -wal.  The busy timeout lets a
 * reader's running query finish first; a reader that holds an old snapshot
 * longer keeps the frames past it out of the main file, and then we say so
 * (nothing is lost: the -wal holds them, and the next writer checkpoints). */
static void
checkpoint_sqlite(SieveStore *store)
{
  SieveDbStmt *stmt = sieve__db_prepare(store->db, "PRAGMA wal_checkpoint(TRUNCATE)", FALSE);
  g_autofree char *why = NULL;
  if (stmt == NULL || sieve__db_step(stmt) != SIEVE_DB_ROW) {
    why = g_strdup(sieve__db_errmsg(store->db));
  } else {
    /* (busy, frames in the WAL, frames copied): busy with every frame
     * copied is a reader still reading the -wal; the main file holds all. */
    gint64 busy = sieve__db_column_int64(stmt, 0), frames = sieve__db_column_int64(stmt, 1);
    gint64 copied = sieve__db_column_int64(stmt, 2);
    if (frames < 0 || copied != frames)
      why = g_strdup_printf("%s; %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT " pages copied",
                            busy ? "a reader held an older view of the study" : "the checkpoint stopped", MAX(copied, 0),
                            frames);
  }
  sieve__db_finalize(stmt);
  if (why != NULL)
    g_warning("%s: the last trials stay in %s-wal (%s); copy that file with the store, or copy the study with "
              "`sieve store copy`, which reads both (the next writer folds it in)",
              store->path, store->path, why);
}

void
sieve_store_close(SieveStore *store)
{
  if (store == NULL)
    return;
  if (store->db != NULL) {
    /* Uncommitted work is dropped, as a kill would drop it. */
    if (sieve__db_in_transaction(store->db))
      sieve__db_exec(store->db, "ROLLBACK");
    for (guint i = 0; i < N_STMTS; i++)
      sieve__db_finalize(store->stmts[i]);
    if (store->wal_writer)
      checkpoint_sqlite(store);
    sieve__db_close(store->db);
  }
  /* After closing the connection, so that the lock outlives every write. */
  release_file(store);
  g_free(store->path);
  g_free(store);
}

const char *
sieve_store_get_path(const SieveStore *store)
{
  g_return_val_if_fail(store != NULL, NULL);
  return store->path;
}

char *
sieve_store_canonical_name(const char *name)
{
  g_return_val_if_fail(name != NULL, NULL);
  return sieve__db_name_is_url(name) ? g_strdup(name) : g_canonicalize_filename(name, NULL);
}

gboolean
sieve_store_is_url(const char *name)
{
  return sieve__db_name_is_url(name);
}

SieveDb *
sieve__store_get_db(SieveStore *store)
{
  return store->db;
}

/* Parents before children, so that foreign keys hold at each insert. */
const char *const sieve__store_tables[] = {"meta",   "trials", "metrics", "intermediate", "state",
                                           "cache_keys", "cache",  "weights", "finals", "final_metrics",
                                           "latency_ops", NULL};

gboolean
sieve__store_first_filled_table(SieveStore *store, const char **table, GError **error)
{
  *table = NULL;
  for (guint i = 0; sieve__store_tables[i] != NULL && *table == NULL; i++) {
    const char *name = sieve__store_tables[i];
    if (strcmp(name, "meta") == 0 || strcmp(name, "latency_ops") == 0)
      continue;
    g_autofree char *sql = g_strdup_printf("SELECT 1 FROM %s LIMIT 1", name);
    SieveDbStmt *stmt = sieve__db_prepare(store->db, sql, FALSE);
    SieveDbStep rc = stmt != NULL ? sieve__db_step(stmt) : SIEVE_DB_ERROR;
    sieve__db_finalize(stmt);
    if (rc == SIEVE_DB_ERROR) {
      set_db_error(store, error, "cannot read the study");
      return FALSE;
    }
    if (rc == SIEVE_DB_ROW)
      *table = name;
  }
  return TRUE;
}

/* ---- transactions ------------------------------------------------------ */

gboolean
sieve_store_begin(SieveStore *store, GError **error)
{
  g_return_val_if_fail(store != NULL, FALSE);
  g_return_val_if_fail(!sieve__db_in_transaction(store->db), FALSE); /* no nesting */
  if (!check_writable(store, error))
    return FALSE;
  if (sieve__db_begin(store->db))
    return TRUE;
  set_db_error(store, error, "cannot begin a transaction");
  return FALSE;
}

gboolean
sieve_store_commit(SieveStore *store, GError **error)
{
  g_return_val_if_fail(store != NULL, FALSE);
  g_return_val_if_fail(sieve__db_in_transaction(store->db), FALSE); /* begin first */
  return exec(store, "COMMIT", "cannot commit", error);
}

/* Safe to call whatever happened before: after a failed begin or a failed
 * commit that already ended the transaction, there is nothing to undo. */
void
sieve_store_rollback(SieveStore *store)
{
  g_return_if_fail(store != NULL);
  if (!sieve__db_in_transaction(store->db))
    return;
  if (!sieve__db_exec(store->db, "ROLLBACK"))
    g_warning("%s: rollback: %s", store->path, sieve__db_errmsg(store->db));
}

/* Several statements that must happen together run inside a savepoint
 * of the caller's transaction, or in a transaction of their own outside
 * one (PostgreSQL has no savepoint outside a transaction; SQLite's would
 * begin a deferred one). */
static gboolean
savepoint(SieveStore *store, GError **error)
{
  store->savepoint_began = !sieve__db_in_transaction(store->db);
  if (store->savepoint_began) {
    if (sieve__db_begin(store->db))
      return TRUE;
    set_db_error(store, error, "cannot begin a transaction");
    return FALSE;
  }
  return exec(store, "SAVEPOINT sieve_op", "cannot begin a savepoint", error);
}

static gboolean
release(SieveStore *store, gboolean ok, GError **error)
{
  if (store->savepoint_began) {
    store->savepoint_began = FALSE;
    if (ok)
      return exec(store, "COMMIT", "cannot commit", error);
    sieve__db_exec(store->db, "ROLLBACK");
    return FALSE;
  }
  if (ok)
    return exec(store, "RELEASE sieve_op", "cannot commit", error);
  sieve__db_exec(store->db, "ROLLBACK TO SAVEPOINT sieve_op");
  sieve__db_exec(store->db, "RELEASE SAVEPOINT sieve_op");
  return FALSE;
}

/* ---- meta -------------------------------------------------------------- */

char *
sieve_store_get_meta(SieveStore *store, const char *key, GError **error)
{
  g_return_val_if_fail(store != NULL && key != NULL, NULL);
  SieveDbStmt *stmt = get_stmt(store, STMT_GET_META, error);
  if (stmt == NULL || !bind_ok(store, bind_text(stmt, 1, key), error))
    return NULL;
  char *value = NULL;
  SieveDbStep rc = sieve__db_step(stmt);
  if (rc == SIEVE_DB_ROW)
    value = g_strdup(sieve__db_column_text(stmt, 0));
  else if (rc != SIEVE_DB_DONE)
    set_db_error(store, error, "cannot read meta");
  done_stmt(stmt);
  return value;
}

/* A NULL value removes the key. */
gboolean
sieve_store_set_meta(SieveStore *store, const char *key, const char *value, GError **error)
{
  g_return_val_if_fail(store != NULL && key != NULL, FALSE);
  if (!check_writable(store, error))
    return FALSE;
  SieveDbStmt *stmt = get_stmt(store, value ? STMT_SET_META : STMT_DELETE_META, error);
  if (stmt == NULL || !bind_ok(store, bind_text(stmt, 1, key), error) ||
      (value && !bind_ok(store, bind_text(stmt, 2, value), error)))
    return FALSE;
  return step_done(store, stmt, "cannot write meta", error);
}

/* ---- trials ------------------------------------------------------------ */

void
sieve_trial_free(SieveTrial *trial)
{
  if (trial == NULL)
    return;
  g_free(trial->genotype);
  g_free(trial->reason);
  g_free(trial->hash_kind);
  g_free(trial->hash);
  g_free(trial->stage);
  sieve_result_free(trial->result);
  g_free(trial);
}

gint64
sieve_store_add_trial(SieveStore *store, const char *genotype, double fidelity, GError **error)
{
  g_return_val_if_fail(store != NULL && genotype != NULL, -1);
  if (!check_writable(store, error) || !savepoint(store, error))
    return -1;
  /* Numbers are dense (trials are never deleted), so MAX + 1 is the count;
   * MAX on the primary key is a single b-tree lookup. */
  gint64 number = -1;
  SieveDbStmt *stmt = get_stmt(store, STMT_NEXT_NUMBER, error);
  gboolean ok = stmt != NULL;
  if (ok) {
    if (sieve__db_step(stmt) == SIEVE_DB_ROW)
      number = sieve__db_column_int64(stmt, 0);
    else {
      set_db_error(store, error, "cannot count trials");
      ok = FALSE;
    }
    done_stmt(stmt);
  }
  if (ok) {
    stmt = get_stmt(store, STMT_ADD_TRIAL, error);
    ok = stmt != NULL && bind_ok(store, sieve__db_bind_int64(stmt, 1, number), error) &&
         bind_ok(store, bind_text(stmt, 2, genotype), error) && bind_ok(store, bind_real(stmt, 3, fidelity), error) &&
         bind_ok(store, store->run > 0 ? sieve__db_bind_int64(stmt, 4, store->run) : sieve__db_bind_null(stmt, 4),
                 error) &&
         step_done(store, stmt, "cannot add a trial", error);
  }
  if (!release(store, ok, error))
    return -1;
  return number;
}

/* Non-finite metric values are stored as TEXT (SQLite keeps no NaN);
 * PostgreSQL's DOUBLE PRECISION reads the same text as the value. */
static gboolean
bind_metric(SieveDbStmt *stmt, int i, double value)
{
  if (isnan(value))
    return sieve__db_bind_text(stmt, i, "nan");
  if (isinf(value))
    return sieve__db_bind_text(stmt, i, value > 0 ? "inf" : "-inf");
  return sieve__db_bind_double(stmt, i, value);
}

static gboolean
column_metric(SieveDbStmt *stmt, int i, double *out)
{
  switch (sieve__db_column_type(stmt, i)) {
  case SIEVE_DB_FLOAT:
  case SIEVE_DB_INTEGER:
    *out = sieve__db_column_double(stmt, i);
    return TRUE;
  case SIEVE_DB_NULL: /* what another program writing a NaN leaves */
    *out = NAN;
    return TRUE;
  case SIEVE_DB_TEXT: {
    const char *text = sieve__db_column_text(stmt, i);
    if (g_strcmp0(text, "nan") == 0)
      *out = NAN;
    else if (g_strcmp0(text, "inf") == 0)
      *out = INFINITY;
    else if (g_strcmp0(text, "-inf") == 0)
      *out = -INFINITY;
    else
      return FALSE;
    return TRUE;
  }
  default:
    return FALSE;
  }
}

gboolean
sieve_store_finish_trial(SieveStore *store, gint64 number, const SieveResult *result, double started,
                         double finished, gint worker, gint64 cached_from, GError **error)
{
  g_return_val_if_fail(store != NULL && result != NULL, FALSE);
  if (!check_writable(store, error) || !savepoint(store, error))
    return FALSE;
  gboolean rejected = sieve_result_get_status(result) == SIEVE_STATUS_REJECTED;
  SieveDbStmt *stmt = get_stmt(store, STMT_FINISH_TRIAL, error);
  gboolean ok =
      stmt != NULL && bind_ok(store, sieve__db_bind_int64(stmt, 1, number), error) &&
      bind_ok(store, bind_text(stmt, 2, sieve_status_to_string(rejected ? SIEVE_STATUS_SCREENED
                                                                        : sieve_result_get_status(result))),
              error) &&
      bind_ok(store, bind_text(stmt, 3, sieve_result_get_reason(result)), error) &&
      bind_ok(store, bind_real(stmt, 4, sieve_result_get_cost(result)), error) &&
      bind_ok(store, bind_real(stmt, 5, started), error) && bind_ok(store, bind_real(stmt, 6, finished), error) &&
      bind_ok(store, worker < 0 ? sieve__db_bind_null(stmt, 7) : sieve__db_bind_int64(stmt, 7, worker), error) &&
      bind_ok(store, cached_from < 0 ? sieve__db_bind_null(stmt, 8) : sieve__db_bind_int64(stmt, 8, cached_from),
              error) &&
      step_done(store, stmt, "cannot finish a trial", error);
  if (ok && sieve__db_changes(store->db) != 1) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND, "%s: no trial %" G_GINT64_FORMAT, store->path, number);
    ok = FALSE;
  }
  if (ok && rejected) {
    stmt = get_stmt(store, STMT_SET_STAGE, error);
    ok = stmt != NULL && bind_ok(store, sieve__db_bind_int64(stmt, 1, number), error) &&
         bind_ok(store, bind_text(stmt, 2, REJECTED_STAGE), error) &&
         step_done(store, stmt, "cannot store a rejection", error);
  }
  if (ok) {
    stmt = get_stmt(store, STMT_DELETE_METRICS, error);
    ok = stmt != NULL && bind_ok(store, sieve__db_bind_int64(stmt, 1, number), error) &&
         step_done(store, stmt, "cannot replace metrics", error);
  }
  for (guint i = 0; ok && i < sieve_result_n_metrics(result); i++) {
    stmt = get_stmt(store, STMT_ADD_METRIC, error);
    ok = stmt != NULL && bind_ok(store, sieve__db_bind_int64(stmt, 1, number), error) &&
         bind_ok(store, sieve__db_bind_int64(stmt, 2, (int) i), error) &&
         bind_ok(store, bind_text(stmt, 3, sieve_result_metric_name(result, i)), error) &&
         bind_ok(store, bind_metric(stmt, 4, sieve_result_metric_value(result, i)), error) &&
         step_done(store, stmt, "cannot store a metric", error);
  }
  return release(store, ok, error);
}

/* Reads the rows of one trial (one per metric, or one with NULL metric
 * columns) starting at the current row.  Returns the trial, and in *rc the
 * step code after its last row.  NULL with error on corrupt data. */
static SieveTrial *
read_trial(SieveStore *store, SieveDbStmt *stmt, SieveDbStep *rc, GError **error)
{
  g_autoptr(SieveTrial) t = g_new0(SieveTrial, 1);
  t->number = sieve__db_column_int64(stmt, COL_NUMBER);
  t->genotype = g_strdup(sieve__db_column_text(stmt, COL_GENOTYPE));
  const char *status_text = sieve__db_column_text(stmt, COL_STATUS);
  if (t->genotype == NULL || !sieve_status_from_string(status_text, &t->status)) {
    set_corrupt_error(store, error, "trial %" G_GINT64_FORMAT " has status '%s'", t->number,
                      status_text ? status_text : "(null)");
    return NULL;
  }
  t->fidelity = column_real(stmt, COL_FIDELITY);
  t->reason = g_strdup(sieve__db_column_text(stmt, COL_REASON));
  t->started = column_real(stmt, COL_STARTED);
  t->finished = column_real(stmt, COL_FINISHED);
  t->worker = sieve__db_column_type(stmt, COL_WORKER) == SIEVE_DB_NULL ? -1 : sieve__db_column_int64(stmt, COL_WORKER);
  t->cached_from =
      sieve__db_column_type(stmt, COL_CACHED_FROM) == SIEVE_DB_NULL ? -1 : sieve__db_column_int64(stmt, COL_CACHED_FROM);
  t->run = sieve__db_column_type(stmt, COL_RUN) == SIEVE_DB_NULL ? 0 : sieve__db_column_int64(stmt, COL_RUN);
  t->hash_kind = g_strdup(sieve__db_column_text(stmt, COL_HASH_KIND));
  t->hash = g_strdup(sieve__db_column_text(stmt, COL_HASH));
  t->stage = g_strdup(sieve__db_column_text(stmt, COL_STAGE));
  if (t->status == SIEVE_STATUS_SCREENED && g_strcmp0(t->stage, REJECTED_STAGE) == 0)
    t->status = SIEVE_STATUS_REJECTED;
  t->result = sieve_result_new();
  sieve_result_set_status(t->result, t->status);
  sieve_result_set_reason(t->result, t->reason);
  sieve_result_set_cost(t->result, column_real(stmt, COL_COST));
  do {
    if (sieve__db_column_int64(stmt, COL_NUMBER) != t->number)
      break;
    const char *name = sieve__db_column_text(stmt, COL_METRIC_NAME);
    if (name == NULL) /* LEFT JOIN: a trial without metrics */
      continue;
    double value;
    if (!column_metric(stmt, COL_METRIC_VALUE, &value)) {
      set_corrupt_error(store, error, "trial %" G_GINT64_FORMAT " metric '%s' is not a number", t->number, name);
      return NULL;
    }
    sieve_result_set_metric(t->result, name, value);
  } while ((*rc = sieve__db_step(stmt)) == SIEVE_DB_ROW);
  return g_steal_pointer(&t);
}

SieveTrial *
sieve_store_get_trial(SieveStore *store, gint64 number, GError **error)
{
  g_return_val_if_fail(store != NULL, NULL);
  SieveDbStmt *stmt = get_stmt(store, STMT_GET_TRIAL, error);
  if (stmt == NULL || !bind_ok(store, sieve__db_bind_int64(stmt, 1, number), error))
    return NULL;
  SieveDbStep rc = sieve__db_step(stmt);
  SieveTrial *trial = NULL;
  if (rc == SIEVE_DB_ROW) {
    rc = SIEVE_DB_DONE;
    trial = read_trial(store, stmt, &rc, error);
    if (trial == NULL) {
      done_stmt(stmt);
      return NULL;
    }
  }
  if (rc != SIEVE_DB_DONE) {
    set_db_error(store, error, "cannot read a trial");
    g_clear_pointer(&trial, sieve_trial_free);
  }
  done_stmt(stmt);
  return trial;
}

GPtrArray *
sieve_store_list_trials(SieveStore *store, gboolean only_pending, GError **error)
{
  g_return_val_if_fail(store != NULL, NULL);
  /* One statement, so one snapshot: a writer committing meanwhile cannot
   * give us a trial without its metrics. */
  SieveDbStmt *stmt = get_stmt(store, only_pending ? STMT_LIST_PENDING : STMT_LIST_TRIALS, error);
  if (stmt == NULL)
    return NULL;
  g_autoptr(GPtrArray) trials = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_trial_free);
  SieveDbStep rc = sieve__db_step(stmt);
  while (rc == SIEVE_DB_ROW) {
    rc = SIEVE_DB_DONE;
    SieveTrial *t = read_trial(store, stmt, &rc, error);
    if (t == NULL) {
      done_stmt(stmt);
      return NULL;
    }
    g_ptr_array_add(trials, t);
  }
  if (rc != SIEVE_DB_DONE) {
    set_db_error(store, error, "cannot list trials");
    done_stmt(stmt);
    return NULL;
  }
  done_stmt(stmt);
  return g_steal_pointer(&trials);
}

gint64
sieve_store_count_trials(SieveStore *store, gint status, GError **error)
{
  g_return_val_if_fail(store != NULL, -1);
  gboolean rejected = status == SIEVE_STATUS_REJECTED;
  if (rejected && store->v1)
    return 0;
  SieveDbStmt *stmt = get_stmt(store, status < 0 ? STMT_COUNT_ALL : rejected ? STMT_COUNT_REJECTED : STMT_COUNT_STATUS, error);
  if (stmt == NULL ||
      (status >= 0 && !rejected && !bind_ok(store, bind_text(stmt, 1, sieve_status_to_string((SieveStatus) status)), error)))
    return -1;
  gint64 n = -1;
  if (sieve__db_step(stmt) == SIEVE_DB_ROW)
    n = sieve__db_column_int64(stmt, 0);
  else
    set_db_error(store, error, "cannot count trials");
  done_stmt(stmt);
  return n;
}

/* ---- state ------------------------------------------------------------- */

gboolean
sieve_store_save_state(SieveStore *store, const char *name, GVariant *state, GError **error)
{
  g_return_val_if_fail(store != NULL && name != NULL && state != NULL, FALSE);
  g_autoptr(GVariant) owned = g_variant_ref_sink(state); /* takes a floating state */
  if (!check_writable(store, error))
    return FALSE;
  g_autoptr(GVariant) normal = g_variant_get_normal_form(owned);
  g_autoptr(GBytes) bytes = g_variant_get_data_as_bytes(normal);
  gsize size = 0;
  gconstpointer data = g_bytes_get_data(bytes, &size);
  SieveDbStmt *stmt = get_stmt(store, STMT_SAVE_STATE, error);
  if (stmt == NULL)
    return FALSE;
  /* A NULL pointer would bind SQL NULL; an empty serialisation (e.g. an
   * empty array) is a zero-length blob. */
  gboolean rc = sieve__db_bind_blob(stmt, 3, data, size);
  return bind_ok(store, bind_text(stmt, 1, name), error) &&
         bind_ok(store, bind_text(stmt, 2, g_variant_get_type_string(normal)), error) &&
         bind_ok(store, rc, error) && step_done(store, stmt, "cannot save state", error);
}

GVariant *
sieve_store_load_state(SieveStore *store, const char *name, GError **error)
{
  g_return_val_if_fail(store != NULL && name != NULL, NULL);
  SieveDbStmt *stmt = get_stmt(store, STMT_LOAD_STATE, error);
  if (stmt == NULL || !bind_ok(store, bind_text(stmt, 1, name), error))
    return NULL;
  SieveDbStep rc = sieve__db_step(stmt);
  if (rc != SIEVE_DB_ROW) {
    if (rc != SIEVE_DB_DONE)
      set_db_error(store, error, "cannot load state");
    done_stmt(stmt);
    return NULL;
  }
  /* Copied (as g_bytes_new copies the blob): column memory goes with the reset below. */
  g_autofree char *type = g_strdup(sieve__db_column_text(stmt, 0));
  if (type == NULL || !g_variant_type_string_is_valid(type) ||
      !g_variant_type_is_definite(G_VARIANT_TYPE(type))) {
    set_corrupt_error(store, error, "state '%s' has an invalid type '%s'", name, type ? type : "(null)");
    done_stmt(stmt);
    return NULL;
  }
  g_autoptr(GVariantType) vtype = g_variant_type_new(type);
  gsize size = 0;
  const void *data = sieve__db_column_blob(stmt, 1, &size);
  g_autoptr(GBytes) bytes = g_bytes_new(data, data ? size : 0);
  done_stmt(stmt);
  /* Untrusted: GVariant then checks every offset it reads, and a blob that
   * is not in normal form (truncated, garbled) is refused, not guessed at. */
  GVariant *value = g_variant_ref_sink(g_variant_new_from_bytes(vtype, bytes, FALSE));
  if (!g_variant_is_normal_form(value)) {
    g_variant_unref(value);
    set_corrupt_error(store, error, "state '%s' is not a valid '%s' value", name, type);
    return NULL;
  }
  return value;
}

/* ---- runs, hashes, stages -------------------------------------------- */

gint64
sieve_store_begin_run(SieveStore *store, GError **error)
{
  g_return_val_if_fail(store != NULL, -1);
  if (!check_writable(store, error))
    return -1;
  GError *local = NULL;
  g_autofree char *text = sieve_store_get_meta(store, "runs", &local);
  if (local != NULL) {
    g_propagate_error(error, local);
    return -1;
  }
  /* Runs count from 1: a count that is not a whole number from 0 (or
   * whose next would overflow) would number this run <= 0. */
  guint64 runs = 0;
  if (text != NULL && !g_ascii_string_to_unsigned(text, 10, 0, G_MAXINT64 - 1, &runs, NULL)) {
    set_corrupt_error(store, error, "meta 'runs' is '%s' (expected a whole number from 0 to %" G_GINT64_FORMAT ")",
                      text, G_MAXINT64 - 1);
    return -1;
  }
  gint64 run = (gint64) runs + 1;
  g_autofree char *next = g_strdup_printf("%" G_GINT64_FORMAT, run);
  if (!sieve_store_set_meta(store, "runs", next, error))
    return -1;
  store->run = run;
  return run;
}

/* Runs a one-row UPDATE of trial number; no such trial is an error. */
static gboolean
update_trial(SieveStore *store, SieveDbStmt *stmt, gint64 number, const char *what, GError **error)
{
  if (!step_done(store, stmt, what, error))
    return FALSE;
  if (sieve__db_changes(store->db) != 1) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND, "%s: no trial %" G_GINT64_FORMAT, store->path, number);
    return FALSE;
  }
  return TRUE;
}

gboolean
sieve_store_set_trial_hash(SieveStore *store, gint64 number, const char *kind, const char *hash, GError **error)
{
  g_return_val_if_fail(store != NULL && kind != NULL && hash != NULL, FALSE);
  if (!check_writable(store, error))
    return FALSE;
  SieveDbStmt *stmt = get_stmt(store, STMT_SET_HASH, error);
  return stmt != NULL && bind_ok(store, sieve__db_bind_int64(stmt, 1, number), error) &&
         bind_ok(store, bind_text(stmt, 2, kind), error) && bind_ok(store, bind_text(stmt, 3, hash), error) &&
         update_trial(store, stmt, number, "cannot store a hash", error);
}

gboolean
sieve_store_set_trial_stage(SieveStore *store, gint64 number, const char *stage, const SieveResult *scores,
                            GError **error)
{
  g_return_val_if_fail(store != NULL, FALSE);
  if (!check_writable(store, error) || !savepoint(store, error))
    return FALSE;
  SieveDbStmt *stmt = get_stmt(store, STMT_SET_STAGE, error);
  gboolean ok = stmt != NULL && bind_ok(store, sieve__db_bind_int64(stmt, 1, number), error) &&
                bind_ok(store, bind_text(stmt, 2, stage), error) &&
                update_trial(store, stmt, number, "cannot store a trial's stage", error);
  if (ok && scores != NULL) {
    stmt = get_stmt(store, STMT_DELETE_METRICS, error);
    ok = stmt != NULL && bind_ok(store, sieve__db_bind_int64(stmt, 1, number), error) &&
         step_done(store, stmt, "cannot replace metrics", error);
    for (guint i = 0; ok && i < sieve_result_n_metrics(scores); i++) {
      stmt = get_stmt(store, STMT_ADD_METRIC, error);
      ok = stmt != NULL && bind_ok(store, sieve__db_bind_int64(stmt, 1, number), error) &&
           bind_ok(store, sieve__db_bind_int64(stmt, 2, (int) i), error) &&
           bind_ok(store, bind_text(stmt, 3, sieve_result_metric_name(scores, i)), error) &&
           bind_ok(store, bind_metric(stmt, 4, sieve_result_metric_value(scores, i)), error) &&
           step_done(store, stmt, "cannot store a metric", error);
    }
  }
  return release(store, ok, error);
}

/* ---- cache ------------------------------------------------------------- */

gboolean
sieve_store_cache_put(SieveStore *store, const char *kind, const char *hash, const char *key, gint64 trial,
                      GError **error)
{
  g_return_val_if_fail(store != NULL && kind != NULL && hash != NULL && key != NULL && trial >= 0, FALSE);
  if (!check_writable(store, error))
    return FALSE;
  SieveDbStmt *stmt = get_stmt(store, STMT_CACHE_PUT, error);
  return stmt != NULL && bind_ok(store, bind_text(stmt, 1, kind), error) &&
         bind_ok(store, bind_text(stmt, 2, hash), error) && bind_ok(store, bind_text(stmt, 3, key), error) &&
         bind_ok(store, sieve__db_bind_int64(stmt, 4, trial), error) &&
         step_done(store, stmt, "cannot write the cache", error);
}

gint64
sieve_store_cache_lookup(SieveStore *store, const char *kind, const char *hash, const char *key, GError **error)
{
  g_return_val_if_fail(store != NULL && kind != NULL && hash != NULL && key != NULL, -1);
  if (store->v1)
    return -1; /* a version 1 file has no usable cache */
  SieveDbStmt *stmt = get_stmt(store, STMT_CACHE_LOOKUP, error);
  if (stmt == NULL || !bind_ok(store, bind_text(stmt, 1, kind), error) ||
      !bind_ok(store, bind_text(stmt, 2, hash), error) || !bind_ok(store, bind_text(stmt, 3, key), error))
    return -1;
  gint64 trial = -1;
  SieveDbStep rc = sieve__db_step(stmt);
  if (rc == SIEVE_DB_ROW)
    trial = sieve__db_column_int64(stmt, 0);
  else if (rc != SIEVE_DB_DONE)
    set_db_error(store, error, "cannot read the cache");
  done_stmt(stmt);
  return trial;
}

gboolean
sieve_store_cache_add_key(SieveStore *store, const char *key, const char *text, GError **error)
{
  g_return_val_if_fail(store != NULL && key != NULL && text != NULL, FALSE);
  if (!check_writable(store, error))
    return FALSE;
  SieveDbStmt *stmt = get_stmt(store, STMT_CACHE_KEY, error);
  return stmt != NULL && bind_ok(store, bind_text(stmt, 1, key), error) &&
         bind_ok(store, bind_text(stmt, 2, text), error) && step_done(store, stmt, "cannot write the cache", error);
}

/* ---- the latency table ---------------------------------------------------- */

/* Whether latency_ops is there, creating it in a store open for writing. */
static gboolean
latency_table(SieveStore *store, GError **error)
{
  if (store->latency_table)
    return TRUE;
  if (store->mode == SIEVE_STORE_WRITE) {
    if (!exec(store, LATENCY_SQL, "cannot create the latency table", error))
      return FALSE;
    store->latency_table = TRUE;
    return TRUE;
  }
  /* Read-only: a store without the table has no entries.  Asked of the
   * catalog: on PostgreSQL a failed statement would end the transaction. */
  gint64 n = 0;
  if (!query_int(store,
                 store->pg ? "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() "
                             "AND table_name = 'latency_ops'"
                           : "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'latency_ops'",
                 &n, error))
    return FALSE;
  store->latency_table = n > 0;
  return store->latency_table;
}

gboolean
sieve_store_latency_get(SieveStore *store, const char *machine, const char *op, double *ms, double *iqr_ms,
                        GError **error)
{
  g_return_val_if_fail(store != NULL && machine != NULL && op != NULL && ms != NULL, FALSE);
  *ms = NAN;
  if (iqr_ms)
    *iqr_ms = NAN;
  GError *local = NULL;
  if (!latency_table(store, &local)) {
    if (local == NULL)
      return TRUE;
    g_propagate_error(error, local);
    return FALSE;
  }
  SieveDbStmt *stmt = get_stmt(store, STMT_LATENCY_GET, error);
  if (stmt == NULL || !bind_ok(store, bind_text(stmt, 1, machine), error) ||
      !bind_ok(store, bind_text(stmt, 2, op), error))
    return FALSE;
  SieveDbStep rc = sieve__db_step(stmt);
  if (rc == SIEVE_DB_ROW) {
    *ms = column_real(stmt, 0);
    if (iqr_ms)
      *iqr_ms = column_real(stmt, 1);
  } else if (rc != SIEVE_DB_DONE) {
    set_db_error(store, error, "cannot read the latency table");
    done_stmt(stmt);
    return FALSE;
  }
  done_stmt(stmt);
  return TRUE;
}

gboolean
sieve_store_latency_put(SieveStore *store, const char *machine, const char *op, double ms, double iqr_ms,
                        guint runs, GError **error)
{
  g_return_val_if_fail(store != NULL && machine != NULL && op != NULL && isfinite(ms), FALSE);
  if (!check_writable(store, error) || !latency_table(store, error))
    return FALSE;
  SieveDbStmt *stmt = get_stmt(store, STMT_LATENCY_PUT, error);
  return stmt != NULL && bind_ok(store, bind_text(stmt, 1, machine), error) &&
         bind_ok(store, bind_text(stmt, 2, op), error) && bind_ok(store, sieve__db_bind_double(stmt, 3, ms), error) &&
         bind_ok(store, sieve__db_bind_double(stmt, 4, isfinite(iqr_ms) ? iqr_ms : 0), error) &&
         bind_ok(store, sieve__db_bind_int64(stmt, 5, runs), error) &&
         bind_ok(store, sieve__db_bind_double(stmt, 6, g_get_real_time() / 1e6), error) &&
         step_done(store, stmt, "cannot write the latency table", error);
}

/* ---- weights and finals (schema version 3) ------------------------------ */

/* A statement prepared for one use (these run a few times per trial). */
static SieveDbStmt *
prepare(SieveStore *store, const char *sql, GError **error)
{
  SieveDbStmt *stmt = sieve__db_prepare(store->db, sql, FALSE);
  if (stmt == NULL)
    set_db_error(store, error, "cannot prepare a statement");
  return stmt;
}

static gboolean
run_once(SieveStore *store, SieveDbStmt *stmt, const char *what, GError **error)
{
  gboolean ok = step_done(store, stmt, what, error);
  sieve__db_finalize(stmt);
  return ok;
}

static gboolean
check_owner(const char *owner)
{
  return g_strcmp0(owner, "trial") == 0 || g_strcmp0(owner, "final") == 0;
}

gboolean
sieve_store_put_weights(SieveStore *store, const char *owner, gint64 number, GBytes *weights, GError **error)
{
  g_return_val_if_fail(store != NULL && check_owner(owner) && weights != NULL, FALSE);
  if (!check_writable(store, error))
    return FALSE;
  SieveDbStmt *stmt = prepare(store, "INSERT INTO weights (owner, number, data) VALUES (?1, ?2, ?3) "
                         "ON CONFLICT (owner, number) DO UPDATE SET data = excluded.data", error);
  gsize size = 0;
  gconstpointer data = g_bytes_get_data(weights, &size);
  if (stmt == NULL)
    return FALSE;
  if (!bind_ok(store, bind_text(stmt, 1, owner), error) || !bind_ok(store, sieve__db_bind_int64(stmt, 2, number), error) ||
      !bind_ok(store, sieve__db_bind_blob(stmt, 3, data, size), error)) {
    sieve__db_finalize(stmt);
    return FALSE;
  }
  return run_once(store, stmt, "cannot store weights", error);
}

GBytes *
sieve_store_get_weights(SieveStore *store, const char *owner, gint64 number, GError **error)
{
  g_return_val_if_fail(store != NULL && check_owner(owner), NULL);
  if (store->version < 3)
    return NULL;
  SieveDbStmt *stmt = prepare(store, "SELECT data FROM weights WHERE owner = ?1 AND number = ?2", error);
  if (stmt == NULL)
    return NULL;
  GBytes *out = NULL;
  if (bind_ok(store, bind_text(stmt, 1, owner), error) && bind_ok(store, sieve__db_bind_int64(stmt, 2, number), error)) {
    SieveDbStep rc = sieve__db_step(stmt);
    if (rc == SIEVE_DB_ROW) {
      gsize n = 0;
      const void *bytes = sieve__db_column_blob(stmt, 0, &n);
      out = g_bytes_new(bytes, n);
    }
    else if (rc != SIEVE_DB_DONE)
      set_db_error(store, error, "cannot read weights");
  }
  sieve__db_finalize(stmt);
  return out;
}

gboolean
sieve_store_prune_weights(SieveStore *store, const char *metric, gboolean maximize, guint keep, GError **error)
{
  g_return_val_if_fail(store != NULL && metric != NULL && keep > 0, FALSE);
  if (!check_writable(store, error))
    return FALSE;
  /* The summary's ranking (sieve_trials_rank), so that its top trials are
   * the ones `sieve model export` finds weights for: a higher fidelity
   * first (none: the full one), then the metric; when the fidelities
   * differ, each genotype once, at its highest (a lucky low rung, or the
   * winner's own lower rungs, kept the weights and the winner lost its).
   * Ties go to the earlier trial; a trial without a finite value of the
   * metric never ranks among the kept (in SQLite, a 'nan' or 'inf' is
   * TEXT, above every number; in PostgreSQL NaN is above every number). */
  g_autofree char *sql = g_strdup_printf(
      "DELETE FROM weights WHERE owner = 'trial' AND number NOT IN ("
      " SELECT number FROM ("
      "  SELECT w.number AS number, COALESCE(t.fidelity, 1e308) AS f, m.value AS v,"
      "   ROW_NUMBER() OVER (PARTITION BY CASE WHEN (SELECT COUNT(DISTINCT COALESCE(u.fidelity, 1e308))"
      "     FROM weights x JOIN trials u ON u.number = x.number WHERE x.owner = 'trial') > 1"
      "     THEN t.genotype ELSE CAST(w.number AS TEXT) END"
      "    ORDER BY COALESCE(t.fidelity, 1e308) DESC, m.value %s, w.number) AS r"
      "  FROM weights w JOIN trials t ON t.number = w.number JOIN metrics m ON m.trial = w.number AND m.name = ?1"
      "  WHERE w.owner = 'trial' AND m.value >= -1.7976931348623157e308 AND m.value <= 1.7976931348623157e308"
      " ) AS k WHERE r = 1 ORDER BY f DESC, v %s, number LIMIT ?2)",
      maximize ? "DESC" : "ASC", maximize ? "DESC" : "ASC");
  SieveDbStmt *stmt = prepare(store, sql, error);
  if (stmt == NULL)
    return FALSE;
  if (!bind_ok(store, bind_text(stmt, 1, metric), error) || !bind_ok(store, sieve__db_bind_int64(stmt, 2, keep), error)) {
    sieve__db_finalize(stmt);
    return FALSE;
  }
  return run_once(store, stmt, "cannot prune weights", error);
}

GArray *
sieve_store_list_weights(SieveStore *store, const char *owner, GError **error)
{
  g_return_val_if_fail(store != NULL && check_owner(owner), NULL);
  GArray *out = g_array_new(FALSE, FALSE, sizeof(gint64));
  if (store->version < 3)
    return out;
  SieveDbStmt *stmt = prepare(store, "SELECT number FROM weights WHERE owner = ?1 ORDER BY number", error);
  if (stmt == NULL || !bind_ok(store, bind_text(stmt, 1, owner), error)) {
    sieve__db_finalize(stmt);
    g_array_unref(out);
    return NULL;
  }
  SieveDbStep rc;
  while ((rc = sieve__db_step(stmt)) == SIEVE_DB_ROW) {
    gint64 n = sieve__db_column_int64(stmt, 0);
    g_array_append_val(out, n);
  }
  sieve__db_finalize(stmt);
  if (rc != SIEVE_DB_DONE) {
    set_db_error(store, error, "cannot list weights");
    g_array_unref(out);
    return NULL;
  }
  return out;
}

void
sieve_final_free(SieveFinal *final)
{
  if (final == NULL)
    return;
  g_free(final->genotype);
  g_free(final->settings);
  g_free(final->reason);
  sieve_result_free(final->result);
  g_free(final);
}

gint64
sieve_store_add_final(SieveStore *store, gint64 trial, const char *genotype, double epochs, const char *settings,
                      GError **error)
{
  g_return_val_if_fail(store != NULL && genotype != NULL && settings != NULL, -1);
  if (!check_writable(store, error))
    return -1;
  gint64 number = 0;
  if (!query_int(store, "SELECT COALESCE(MAX(number) + 1, 0) FROM finals", &number, error))
    return -1;
  SieveDbStmt *stmt = prepare(store,
                               "INSERT INTO finals (number, trial, genotype, status, epochs, settings) "
                               "VALUES (?1, ?2, ?3, 'pending', ?4, ?5)",
                               error);
  if (stmt == NULL)
    return -1;
  if (!bind_ok(store, sieve__db_bind_int64(stmt, 1, number), error) ||
      !bind_ok(store, sieve__db_bind_int64(stmt, 2, trial), error) || !bind_ok(store, bind_text(stmt, 3, genotype), error) ||
      !bind_ok(store, bind_real(stmt, 4, epochs), error) || !bind_ok(store, bind_text(stmt, 5, settings), error)) {
    sieve__db_finalize(stmt);
    return -1;
  }
  return run_once(store, stmt, "cannot add a final training", error) ? number : -1;
}

gboolean
sieve_store_finish_final(SieveStore *store, gint64 number, const SieveResult *result, double started, double finished,
                         GError **error)
{
  g_return_val_if_fail(store != NULL && result != NULL, FALSE);
  SieveStatus status = sieve_result_get_status(result);
  g_return_val_if_fail(status == SIEVE_STATUS_OK || status == SIEVE_STATUS_FAILED, FALSE);
  if (!check_writable(store, error) || !savepoint(store, error))
    return FALSE;
  SieveDbStmt *stmt = prepare(store,
                               "UPDATE finals SET status = ?2, reason = ?3, cost = ?4, started = ?5, finished = ?6 "
                               "WHERE number = ?1",
                               error);
  gboolean ok = stmt != NULL && bind_ok(store, sieve__db_bind_int64(stmt, 1, number), error) &&
                bind_ok(store, bind_text(stmt, 2, sieve_status_to_string(status)), error) &&
                bind_ok(store, bind_text(stmt, 3, sieve_result_get_reason(result)), error) &&
                bind_ok(store, bind_real(stmt, 4, sieve_result_get_cost(result)), error) &&
                bind_ok(store, bind_real(stmt, 5, started), error) &&
                bind_ok(store, bind_real(stmt, 6, finished), error) &&
                step_done(store, stmt, "cannot finish a final training", error);
  if (ok && sieve__db_changes(store->db) != 1) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND, "%s: no final training %" G_GINT64_FORMAT, store->path,
                number);
    ok = FALSE;
  }
  sieve__db_finalize(stmt);
  if (ok) {
    stmt = prepare(store, "DELETE FROM final_metrics WHERE final = ?1", error);
    ok = stmt != NULL && bind_ok(store, sieve__db_bind_int64(stmt, 1, number), error) &&
         step_done(store, stmt, "cannot replace metrics", error);
    sieve__db_finalize(stmt);
  }
  for (guint i = 0; ok && i < sieve_result_n_metrics(result); i++) {
    stmt = prepare(store, "INSERT INTO final_metrics (final, idx, name, value) VALUES (?1, ?2, ?3, ?4)", error);
    ok = stmt != NULL && bind_ok(store, sieve__db_bind_int64(stmt, 1, number), error) &&
         bind_ok(store, sieve__db_bind_int64(stmt, 2, (int)i), error) &&
         bind_ok(store, bind_text(stmt, 3, sieve_result_metric_name(result, i)), error) &&
         bind_ok(store, bind_metric(stmt, 4, sieve_result_metric_value(result, i)), error) &&
         step_done(store, stmt, "cannot store a metric", error);
    sieve__db_finalize(stmt);
  }
  return release(store, ok, error);
}

GPtrArray *
sieve_store_list_finals(SieveStore *store, GError **error)
{
  g_return_val_if_fail(store != NULL, NULL);
  g_autoptr(GPtrArray) finals = g_ptr_array_new_with_free_func((GDestroyNotify)sieve_final_free);
  if (store->version < 3)
    return g_steal_pointer(&finals);
  SieveDbStmt *stmt = prepare(store,
                               "SELECT f.number, f.trial, f.genotype, f.status, f.epochs, f.settings, f.reason, f.cost, "
                               "f.started, f.finished, m.name, m.value FROM finals f LEFT JOIN final_metrics m "
                               "ON m.final = f.number ORDER BY f.number, m.idx",
                               error);
  if (stmt == NULL)
    return NULL;
  /* One statement, one snapshot. */
  SieveFinal *f = NULL;
  SieveDbStep rc;
  while ((rc = sieve__db_step(stmt)) == SIEVE_DB_ROW) {
    gint64 number = sieve__db_column_int64(stmt, 0);
    if (f == NULL || f->number != number) {
      f = g_new0(SieveFinal, 1);
      g_ptr_array_add(finals, f);
      f->number = number;
      f->trial = sieve__db_column_int64(stmt, 1);
      f->genotype = g_strdup(sieve__db_column_text(stmt, 2));
      const char *status = sieve__db_column_text(stmt, 3);
      if (!sieve_status_from_string(status, &f->status)) {
        set_corrupt_error(store, error, "final %" G_GINT64_FORMAT " has status '%s'", number, status ?: "(null)");
        sieve__db_finalize(stmt);
        return NULL;
      }
      f->epochs = column_real(stmt, 4);
      f->settings = g_strdup(sieve__db_column_text(stmt, 5));
      f->reason = g_strdup(sieve__db_column_text(stmt, 6));
      f->started = column_real(stmt, 8);
      f->finished = column_real(stmt, 9);
      f->result = sieve_result_new();
      sieve_result_set_status(f->result, f->status);
      sieve_result_set_reason(f->result, f->reason);
      sieve_result_set_cost(f->result, column_real(stmt, 7));
    }
    const char *name = sieve__db_column_text(stmt, 10);
    double value;
    if (name != NULL) {
      if (!column_metric(stmt, 11, &value)) {
        set_corrupt_error(store, error, "final %" G_GINT64_FORMAT " metric '%s' is not a number", number, name);
        sieve__db_finalize(stmt);
        return NULL;
      }
      sieve_result_set_metric(f->result, name, value);
    }
  }
  sieve__db_finalize(stmt);
  if (rc != SIEVE_DB_DONE) {
    set_db_error(store, error, "cannot list final trainings");
    return NULL;
  }
  return g_steal_pointer(&finals);
}

/* ---- intermediate values (schema version 4) ---------------------------- */

gboolean
sieve_store_set_intermediate(SieveStore *store, gint64 trial, const SieveIntermediate *values, guint n,
                             GError **error)
{
  g_return_val_if_fail(store != NULL && (values != NULL || n == 0), FALSE);
  if (!check_writable(store, error) || !savepoint(store, error))
    return FALSE;
  SieveDbStmt *stmt = prepare(store, "DELETE FROM intermediate WHERE trial = ?1", error);
  gboolean ok = stmt != NULL && bind_ok(store, sieve__db_bind_int64(stmt, 1, trial), error) &&
                run_once(store, stmt, "cannot replace intermediate values", error);
  stmt = NULL;
  if (ok && n > 0)
    ok = (stmt = prepare(store,
                         "INSERT INTO intermediate (trial, step, fidelity, value) VALUES (?1, ?2, ?3, ?4)"
                         " ON CONFLICT (trial, step) DO UPDATE SET fidelity = excluded.fidelity,"
                         " value = excluded.value",
                         error)) != NULL;
  for (guint i = 0; ok && i < n; i++) {
    sieve__db_reset(stmt);
    ok = bind_ok(store, sieve__db_bind_int64(stmt, 1, trial), error) &&
         bind_ok(store, sieve__db_bind_int64(stmt, 2, values[i].step), error) &&
         bind_ok(store, bind_real(stmt, 3, values[i].fidelity), error) &&
         bind_ok(store, bind_metric(stmt, 4, values[i].value), error) &&
         step_done(store, stmt, "cannot store an intermediate value", error);
  }
  sieve__db_finalize(stmt);
  return release(store, ok, error);
}

GArray *
sieve_store_list_intermediate(SieveStore *store, gint64 trial, GError **error)
{
  g_return_val_if_fail(store != NULL, NULL);
  GArray *out = g_array_new(FALSE, FALSE, sizeof(SieveIntermediate));
  if (store->version < 4)
    return out;
  SieveDbStmt *stmt = prepare(store,
                               "SELECT trial, step, fidelity, value FROM intermediate"
                               " WHERE ?1 < 0 OR trial = ?1 ORDER BY trial, step",
                               error);
  if (stmt == NULL || !bind_ok(store, sieve__db_bind_int64(stmt, 1, trial), error)) {
    sieve__db_finalize(stmt);
    g_array_unref(out);
    return NULL;
  }
  SieveDbStep rc;
  while ((rc = sieve__db_step(stmt)) == SIEVE_DB_ROW) {
    SieveIntermediate v = {.trial = sieve__db_column_int64(stmt, 0),
                           .step = sieve__db_column_int64(stmt, 1),
                           .fidelity = column_real(stmt, 2)};
    if (!column_metric(stmt, 3, &v.value)) {
      set_corrupt_error(store, error, "trial %" G_GINT64_FORMAT " has a non-numeric intermediate value at step %"
                        G_GINT64_FORMAT, v.trial, v.step);
      rc = SIEVE_DB_ERROR;
      break;
    }
    g_array_append_val(out, v);
  }
  if (rc != SIEVE_DB_DONE) {
    if (error != NULL && *error == NULL)
      set_db_error(store, error, "cannot read intermediate values");
    sieve__db_finalize(stmt);
    g_array_unref(out);
    return NULL;
  }
  sieve__db_finalize(stmt);
  return out;
}

gboolean
sieve_store_set_trial_fidelity(SieveStore *store, gint64 number, double fidelity, GError **error)
{
  g_return_val_if_fail(store != NULL, FALSE);
  if (!check_writable(store, error))
    return FALSE;
  SieveDbStmt *stmt = prepare(store, "UPDATE trials SET fidelity = ?2 WHERE number = ?1", error);
  if (stmt == NULL || !bind_ok(store, sieve__db_bind_int64(stmt, 1, number), error) ||
      !bind_ok(store, bind_real(stmt, 2, fidelity), error)) {
    sieve__db_finalize(stmt);
    return FALSE;
  }
  return run_once(store, stmt, "cannot set a trial's fidelity", error);
}
