/* sieve: the evaluation queue of a study on PostgreSQL (store-private.h).
 *
 * The claim is the work-queue idiom PostgreSQL documents for SKIP LOCKED:
 * one UPDATE whose row comes from a sub-select FOR UPDATE SKIP LOCKED, so
 * that any number of workers claim at once, each a different row, none
 * waiting on another's lock.  A row is claimable when queued, or running
 * under a lease past its expiry (its worker is presumed dead).
 *
 * A write that the driver sends again after the server came back
 * (store-db-pg.c), its first try's answer lost, must be harmless twice:
 * queue and delete are; a result written again under the same lease
 * matches its own row, done by the first try, and writes the same bytes
 * (only this claim's worker knows that lease number); a claim whose answer
 * was lost leaves its row running under a lease nobody renews, claimed
 * again when it expires, as after a dead worker. */
#include <math.h>

#include "sieve-config.h"

#include "store/store-private.h"

#define NOW "extract(epoch from clock_timestamp())"

static const char queue_sql[] =
    "CREATE TABLE IF NOT EXISTS queue (\n"
    "  trial INTEGER PRIMARY KEY REFERENCES trials(number),\n"
    "  genotype TEXT NOT NULL,\n"
    "  fidelity REAL,\n"
    "  state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done')),\n"
    "  lease INTEGER NOT NULL DEFAULT 0,\n"
    "  attempts INTEGER NOT NULL DEFAULT 0,\n"
    "  worker TEXT,\n"
    "  expires REAL,\n"
    "  started REAL,\n"
    "  finished REAL,\n"
    "  result BLOB);\n";

/* A result as a GVariant: status, reason, cost, metrics in order, and the
 * intermediate values (step, fidelity, value) by step. */
#define RESULT_TYPE "(smsda(sd)a(xdd))"

void
sieve__queue_item_free(SieveQueueItem *item)
{
  if (item == NULL)
    return;
  g_free(item->genotype);
  g_free(item->previous);
  g_free(item->worker);
  sieve_result_free(item->result);
  if (item->intermediate != NULL)
    g_array_unref(item->intermediate);
  g_free(item);
}

static gboolean
fail(SieveStore *store, GError **error, const char *what)
{
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE, "%s: %s: %s", sieve_store_get_path(store), what,
              sieve__db_errmsg(sieve__store_get_db(store)));
  return FALSE;
}

static gboolean
run(SieveStore *store, SieveDbStmt *stmt, const char *what, GError **error)
{
  gboolean ok = sieve__db_step(stmt) != SIEVE_DB_ERROR;
  if (!ok)
    fail(store, error, what);
  sieve__db_finalize(stmt);
  return ok;
}

static SieveDbStmt *
prepare(SieveStore *store, const char *sql, GError **error)
{
  SieveDbStmt *stmt = sieve__db_prepare(sieve__store_get_db(store), sql, FALSE);
  if (stmt == NULL)
    fail(store, error, "the evaluation queue");
  return stmt;
}

gboolean
sieve__queue_setup(SieveStore *store, GError **error)
{
  SieveDb *db = sieve__store_get_db(store);
  if (!sieve__db_exec(db, queue_sql))
    return fail(store, error, "cannot create the evaluation queue");
  if (!sieve__db_exec(db, "DELETE FROM queue WHERE trial IN (SELECT number FROM trials WHERE status <> 'pending')"))
    return fail(store, error, "cannot clean the evaluation queue");
  return TRUE;
}

gboolean
sieve__queue_put(SieveStore *store, gint64 trial, const char *genotype, double fidelity, GError **error)
{
  SieveDbStmt *stmt = prepare(store,
                              "INSERT INTO queue (trial, genotype, fidelity, state) VALUES (?1, ?2, ?3, 'queued') "
                              "ON CONFLICT (trial) DO NOTHING",
                              error);
  if (stmt == NULL)
    return FALSE;
  sieve__db_bind_int64(stmt, 1, trial);
  sieve__db_bind_text(stmt, 2, genotype);
  isnan(fidelity) ? sieve__db_bind_null(stmt, 3) : sieve__db_bind_double(stmt, 3, fidelity);
  return run(store, stmt, "cannot queue an evaluation", error);
}

SieveQueueItem *
sieve__queue_claim(SieveStore *store, const char *worker, double lease_s, GError **error)
{
  /* The old worker is read in the sub-select, before the UPDATE replaces it. */
  SieveDbStmt *stmt = prepare(store,
                              "UPDATE queue q SET state = 'running', lease = q.lease + 1, attempts = q.attempts + 1, "
                              "worker = ?1, expires = " NOW " + ?2 FROM ("
                              " SELECT trial, worker AS previous, state AS was FROM queue"
                              " WHERE state = 'queued' OR (state = 'running' AND expires < " NOW ")"
                              " ORDER BY trial LIMIT 1 FOR UPDATE SKIP LOCKED) c "
                              "WHERE q.trial = c.trial "
                              "RETURNING q.trial, q.genotype, q.fidelity, q.lease, q.attempts, "
                              "CASE WHEN c.was = 'running' THEN c.previous END",
                              error);
  if (stmt == NULL)
    return NULL;
  sieve__db_bind_text(stmt, 1, worker);
  sieve__db_bind_double(stmt, 2, lease_s);
  SieveQueueItem *item = NULL;
  switch (sieve__db_step(stmt)) {
  case SIEVE_DB_ROW:
    item = g_new0(SieveQueueItem, 1);
    item->trial = sieve__db_column_int64(stmt, 0);
    item->genotype = g_strdup(sieve__db_column_text(stmt, 1));
    item->fidelity = sieve__db_column_type(stmt, 2) == SIEVE_DB_NULL ? NAN : sieve__db_column_double(stmt, 2);
    item->lease = sieve__db_column_int64(stmt, 3);
    item->attempts = sieve__db_column_int64(stmt, 4);
    item->previous = g_strdup(sieve__db_column_text(stmt, 5));
    break;
  case SIEVE_DB_DONE:
    break;
  default:
    fail(store, error, "cannot claim an evaluation");
  }
  sieve__db_finalize(stmt);
  return item;
}

gboolean
sieve__queue_renew(SieveStore *store, gint64 trial, gint64 lease, double lease_s, gboolean *held, GError **error)
{
  SieveDbStmt *stmt = prepare(store,
                              "UPDATE queue SET expires = " NOW " + ?3 WHERE trial = ?1 AND lease = ?2 "
                              "AND state = 'running'",
                              error);
  if (stmt == NULL)
    return FALSE;
  sieve__db_bind_int64(stmt, 1, trial);
  sieve__db_bind_int64(stmt, 2, lease);
  sieve__db_bind_double(stmt, 3, lease_s);
  gboolean ok = run(store, stmt, "cannot renew a lease", error);
  *held = ok && sieve__db_changes(sieve__store_get_db(store)) == 1;
  return ok;
}

gboolean
sieve__queue_complete(SieveStore *store, gint64 trial, gint64 lease, const SieveResult *result,
                      const SieveIntermediate *intermediate, guint n, double started, double finished, gboolean *kept,
                      GError **error)
{
  GVariantBuilder metrics, values;
  g_variant_builder_init(&metrics, G_VARIANT_TYPE("a(sd)"));
  for (guint i = 0; i < sieve_result_n_metrics(result); i++)
    g_variant_builder_add(&metrics, "(sd)", sieve_result_metric_name(result, i), sieve_result_metric_value(result, i));
  g_variant_builder_init(&values, G_VARIANT_TYPE("a(xdd)"));
  for (guint i = 0; i < n; i++)
    g_variant_builder_add(&values, "(xdd)", intermediate[i].step, intermediate[i].fidelity, intermediate[i].value);
  g_autoptr(GVariant) v = g_variant_ref_sink(
      g_variant_new(RESULT_TYPE, sieve_status_to_string(sieve_result_get_status(result)),
                    sieve_result_get_reason(result), sieve_result_get_cost(result), &metrics, &values));
  g_autoptr(GBytes) bytes = g_variant_get_data_as_bytes(v);
  SieveDbStmt *stmt = prepare(store,
                              "UPDATE queue SET state = 'done', result = ?3, started = ?4, finished = ?5 "
                              "WHERE trial = ?1 AND lease = ?2 AND state IN ('running', 'done')",
                              error);
  if (stmt == NULL)
    return FALSE;
  gsize size = 0;
  const void *data = g_bytes_get_data(bytes, &size);
  sieve__db_bind_int64(stmt, 1, trial);
  sieve__db_bind_int64(stmt, 2, lease);
  sieve__db_bind_blob(stmt, 3, data, size);
  sieve__db_bind_double(stmt, 4, started);
  sieve__db_bind_double(stmt, 5, finished);
  gboolean ok = run(store, stmt, "cannot write a result", error);
  *kept = ok && sieve__db_changes(sieve__store_get_db(store)) == 1;
  /* The coordinator waits for it (sieve__queue_wait). */
  return ok && (!*kept || sieve__queue_announce(store, "done", error));
}

GPtrArray *
sieve__queue_take_done(SieveStore *store, GError **error)
{
  SieveDbStmt *stmt = prepare(store,
                              "SELECT trial, result, started, finished, worker FROM queue WHERE state = 'done' "
                              "ORDER BY trial",
                              error);
  if (stmt == NULL)
    return NULL;
  g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify) sieve__queue_item_free);
  SieveDbStep rc;
  while ((rc = sieve__db_step(stmt)) == SIEVE_DB_ROW) {
    SieveQueueItem *item = g_new0(SieveQueueItem, 1);
    g_ptr_array_add(out, item);
    item->trial = sieve__db_column_int64(stmt, 0);
    gsize size = 0;
    const void *data = sieve__db_column_blob(stmt, 1, &size);
    g_autoptr(GBytes) bytes = g_bytes_new(data, size);
    g_autoptr(GVariant) v = g_variant_ref_sink(g_variant_new_from_bytes(G_VARIANT_TYPE(RESULT_TYPE), bytes, FALSE));
    const char *status = NULL, *reason = NULL;
    double cost = NAN;
    g_autoptr(GVariantIter) metrics = NULL, values = NULL;
    g_variant_get(v, "(&sm&sda(sd)a(xdd))", &status, &reason, &cost, &metrics, &values);
    item->result = sieve_result_new();
    SieveStatus st = SIEVE_STATUS_FAILED;
    if (!g_variant_is_normal_form(v) || !sieve_status_from_string(status, &st)) {
      sieve_result_set_failed(item->result, "the worker's result could not be read back");
    } else {
      sieve_result_set_status(item->result, st);
      sieve_result_set_reason(item->result, reason);
      sieve_result_set_cost(item->result, cost);
      const char *name;
      double value;
      while (g_variant_iter_next(metrics, "(&sd)", &name, &value))
        sieve_result_set_metric(item->result, name, value);
      item->intermediate = g_array_new(FALSE, FALSE, sizeof(SieveIntermediate));
      SieveIntermediate iv = {.trial = item->trial};
      while (g_variant_iter_next(values, "(xdd)", &iv.step, &iv.fidelity, &iv.value))
        g_array_append_val(item->intermediate, iv);
    }
    item->started = sieve__db_column_double(stmt, 2);
    item->finished = sieve__db_column_double(stmt, 3);
    item->worker = g_strdup(sieve__db_column_text(stmt, 4));
  }
  sieve__db_finalize(stmt);
  if (rc != SIEVE_DB_DONE) {
    fail(store, error, "cannot read finished evaluations");
    return NULL;
  }
  return g_steal_pointer(&out);
}

gboolean
sieve__queue_delete(SieveStore *store, gint64 trial, GError **error)
{
  SieveDbStmt *stmt = prepare(store, "DELETE FROM queue WHERE trial = ?1", error);
  if (stmt == NULL)
    return FALSE;
  sieve__db_bind_int64(stmt, 1, trial);
  return run(store, stmt, "cannot update the evaluation queue", error);
}

gboolean
sieve__queue_announce(SieveStore *store, const char *what, GError **error)
{
  SieveDbStmt *stmt = prepare(store, "SELECT pg_notify(left(current_schema(), 55) || '.' || ?1, '')", error);
  if (stmt == NULL)
    return FALSE;
  sieve__db_bind_text(stmt, 1, what);
  return run(store, stmt, "cannot notify the study's processes", error);
}

void
sieve__queue_wait(SieveStore *store, const char *what, double timeout_s)
{
  sieve__db_wait(sieve__store_get_db(store), what, timeout_s);
}

void
sieve__store_wait_for_queue(const char *url, double timeout_s)
{
#ifdef SIEVE_HAVE_POSTGRESQL
  sieve__db_pg_wait_for_queue(url, timeout_s);
#else
  g_usleep((gulong) (timeout_s * G_USEC_PER_SEC));
#endif
}

gboolean
sieve__queue_counts(SieveStore *store, gint64 *queued, gint64 *running, GError **error)
{
  SieveDbStmt *stmt = prepare(store,
                              "SELECT COALESCE(SUM(CASE WHEN state = 'queued' THEN 1 ELSE 0 END), 0), "
                              "COALESCE(SUM(CASE WHEN state = 'running' THEN 1 ELSE 0 END), 0) FROM queue",
                              error);
  if (stmt == NULL)
    return FALSE;
  gboolean ok = sieve__db_step(stmt) == SIEVE_DB_ROW;
  if (ok) {
    if (queued)
      *queued = sieve__db_column_int64(stmt, 0);
    if (running)
      *running = sieve__db_column_int64(stmt, 1);
  } else
    fail(store, error, "cannot count queued evaluations");
  sieve__db_finalize(stmt);
  return ok;
}
