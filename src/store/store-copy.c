/* sieve: a study copied from one store to another, whatever their engines
 * (`sieve store copy`).  Table by table, column by column, by the names the
 * source's rows carry, so that a table added to the schema needs only its
 * name in sieve__store_tables. */
#include <math.h>

#include "store/store-private.h"

static void
set_error(SieveStore *store, GError **error, const char *what)
{
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE, "%s: %s: %s", sieve_store_get_path(store), what,
              sieve__db_errmsg(sieve__store_get_db(store)));
}

/* One value of the source row as the destination's parameter i.  A
 * non-finite double goes as the text SQLite keeps it as ('nan', 'inf',
 * '-inf'), which PostgreSQL's DOUBLE PRECISION reads as the value. */
static gboolean
bind_column(SieveDbStmt *src, int col, SieveDbStmt *dst, int i)
{
  switch (sieve__db_column_type(src, col)) {
  case SIEVE_DB_NULL:
    return sieve__db_bind_null(dst, i);
  case SIEVE_DB_INTEGER:
    return sieve__db_bind_int64(dst, i, sieve__db_column_int64(src, col));
  case SIEVE_DB_FLOAT: {
    double value = sieve__db_column_double(src, col);
    if (isnan(value))
      return sieve__db_bind_text(dst, i, "nan");
    if (isinf(value))
      return sieve__db_bind_text(dst, i, value > 0 ? "inf" : "-inf");
    return sieve__db_bind_double(dst, i, value);
  }
  case SIEVE_DB_BLOB: {
    gsize size = 0;
    const void *data = sieve__db_column_blob(src, col, &size);
    return sieve__db_bind_blob(dst, i, data, size);
  }
  default:
    return sieve__db_bind_text(dst, i, sieve__db_column_text(src, col));
  }
}

static gboolean
copy_table(SieveStore *src, SieveStore *dst, const char *table, gint64 *n_rows, GError **error)
{
  /* In the order of the first column (a trial's number, or the trial a
   * row belongs to): a server returns rows in no set order, and a trial's
   * cached_from names an earlier trial, which must be there first. */
  g_autofree char *select = g_strdup_printf("SELECT * FROM %s ORDER BY 1", table);
  SieveDbStmt *rows = sieve__db_prepare(sieve__store_get_db(src), select, FALSE);
  if (rows == NULL) {
    set_error(src, error, "cannot read the study");
    return FALSE;
  }
  SieveDbStmt *insert = NULL;
  SieveDbStep rc;
  gboolean ok = TRUE;
  while (ok && (rc = sieve__db_step(rows)) == SIEVE_DB_ROW) {
    int n = sieve__db_column_count(rows);
    if (insert == NULL) {
      GString *sql = g_string_new(NULL);
      g_string_append_printf(sql, "INSERT INTO %s (", table);
      for (int c = 0; c < n; c++)
        g_string_append_printf(sql, "%s%s", c ? ", " : "", sieve__db_column_name(rows, c));
      g_string_append(sql, ") VALUES (");
      for (int c = 0; c < n; c++)
        g_string_append_printf(sql, "%s?%d", c ? ", " : "", c + 1);
      g_string_append(sql, ")");
      insert = sieve__db_prepare(sieve__store_get_db(dst), sql->str, TRUE);
      g_string_free(sql, TRUE);
      if (insert == NULL) {
        set_error(dst, error, "cannot write the copy");
        ok = FALSE;
        break;
      }
    }
    sieve__db_reset(insert);
    for (int c = 0; ok && c < n; c++)
      ok = bind_column(rows, c, insert, c + 1);
    ok = ok && sieve__db_step(insert) == SIEVE_DB_DONE;
    if (!ok)
      set_error(dst, error, "cannot write the copy");
    (*n_rows)++;
  }
  if (ok && rc != SIEVE_DB_DONE) {
    set_error(src, error, "cannot read the study");
    ok = FALSE;
  }
  sieve__db_finalize(insert);
  sieve__db_finalize(rows);
  return ok;
}

gboolean
sieve_store_copy(SieveStore *src, SieveStore *dst, GError **error)
{
  g_return_val_if_fail(src != NULL && dst != NULL, FALSE);
  gint64 n = sieve_store_count_trials(dst, -1, error);
  if (n < 0)
    return FALSE;
  g_autofree char *runs = sieve_store_get_meta(dst, "runs", NULL);
  if (n > 0 || runs != NULL) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE,
                "%s: the copy's destination already holds a study (%" G_GINT64_FORMAT " trials); give a new store",
                sieve_store_get_path(dst), n);
    return FALSE;
  }
  /* One moment of the source: a run may be writing it, and tables read
   * at different moments mix them (a trial's metrics without the trial,
   * an optimizer state ahead of the trials). */
  SieveDb *src_db = sieve__store_get_db(src);
  if (!sieve__db_begin_read(src_db)) {
    set_error(src, error, "cannot begin reading the study");
    return FALSE;
  }
  if (!sieve_store_begin(dst, error)) {
    sieve__db_exec(src_db, "ROLLBACK");
    return FALSE;
  }
  gint64 n_rows = 0;
  gboolean is_url = sieve__db_name_is_url(sieve_store_get_path(src));
  gboolean ok = TRUE;
  for (guint i = 0; ok && sieve__store_tables[i] != NULL; i++) {
    /* An older SQLite source may lack the tables of later versions (not
     * probed on a server, where a failed statement ends the transaction). */
    if (!is_url) {
      g_autofree char *probe = g_strdup_printf("SELECT 1 FROM %s WHERE 1 = 0", sieve__store_tables[i]);
      SieveDbStmt *stmt = sieve__db_prepare(src_db, probe, FALSE);
      gboolean present = stmt != NULL && sieve__db_step(stmt) == SIEVE_DB_DONE;
      sieve__db_finalize(stmt);
      if (!present)
        continue;
    }
    ok = copy_table(src, dst, sieve__store_tables[i], &n_rows, error);
  }
  /* Read only: nothing of the source to keep or undo. */
  sieve__db_exec(src_db, "ROLLBACK");
  if (!ok) {
    sieve_store_rollback(dst);
    return FALSE;
  }
  return sieve_store_commit(dst, error);
}
