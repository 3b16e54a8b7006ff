/* sieve: the store's SQL driver, the calls every engine shares
 * (store-private.h); each forwards to the connection's driver. */
#include <string.h>

#include "store/store-private.h"

gboolean
sieve__db_name_is_url(const char *name)
{
  return name != NULL && (g_str_has_prefix(name, "postgresql://") || g_str_has_prefix(name, "postgres://"));
}

/* Set once by the command line, before any store is opened. */
static double reconnect_timeout = 60;

void
sieve__db_set_reconnect_timeout(double seconds)
{
  reconnect_timeout = seconds;
}

double
sieve__db_get_reconnect_timeout(void)
{
  return reconnect_timeout;
}

void
sieve__db_set_failure(SieveDb *db, SieveDbFailure failure, const char *errmsg)
{
  g_free(db->errmsg);
  db->errmsg = g_strdup(errmsg ? errmsg : "unknown error");
  /* libpq's messages end with a newline; ours never do. */
  g_strchomp(db->errmsg);
  db->failure = failure;
}

void
sieve__db_close(SieveDb *db)
{
  if (db == NULL)
    return;
  char *errmsg = db->errmsg;
  db->klass->close(db);
  g_free(errmsg);
}

SieveDbStmt *
sieve__db_prepare(SieveDb *db, const char *sql, gboolean persistent)
{
  return db->klass->prepare(db, sql, persistent);
}

void
sieve__db_finalize(SieveDbStmt *stmt)
{
  if (stmt != NULL)
    stmt->db->klass->finalize(stmt);
}

void
sieve__db_reset(SieveDbStmt *stmt)
{
  if (stmt != NULL)
    stmt->db->klass->reset(stmt);
}

gboolean
sieve__db_bind_null(SieveDbStmt *stmt, int i)
{
  return stmt->db->klass->bind_null(stmt, i);
}

gboolean
sieve__db_bind_int64(SieveDbStmt *stmt, int i, gint64 value)
{
  return stmt->db->klass->bind_int64(stmt, i, value);
}

gboolean
sieve__db_bind_double(SieveDbStmt *stmt, int i, double value)
{
  return stmt->db->klass->bind_double(stmt, i, value);
}

gboolean
sieve__db_bind_text(SieveDbStmt *stmt, int i, const char *text)
{
  return text ? stmt->db->klass->bind_text(stmt, i, text) : stmt->db->klass->bind_null(stmt, i);
}

gboolean
sieve__db_bind_blob(SieveDbStmt *stmt, int i, const void *data, gsize size)
{
  return stmt->db->klass->bind_blob(stmt, i, data, size);
}

SieveDbStep
sieve__db_step(SieveDbStmt *stmt)
{
  return stmt->db->klass->step(stmt);
}

int
sieve__db_column_count(SieveDbStmt *stmt)
{
  return stmt->db->klass->column_count(stmt);
}

const char *
sieve__db_column_name(SieveDbStmt *stmt, int i)
{
  return stmt->db->klass->column_name(stmt, i);
}

SieveDbType
sieve__db_column_type(SieveDbStmt *stmt, int i)
{
  return stmt->db->klass->column_type(stmt, i);
}

gint64
sieve__db_column_int64(SieveDbStmt *stmt, int i)
{
  return stmt->db->klass->column_int64(stmt, i);
}

double
sieve__db_column_double(SieveDbStmt *stmt, int i)
{
  return stmt->db->klass->column_double(stmt, i);
}

const char *
sieve__db_column_text(SieveDbStmt *stmt, int i)
{
  return stmt->db->klass->column_text(stmt, i);
}

const void *
sieve__db_column_blob(SieveDbStmt *stmt, int i, gsize *size)
{
  return stmt->db->klass->column_blob(stmt, i, size);
}

gint64
sieve__db_changes(SieveDb *db)
{
  return db->klass->changes(db);
}

gboolean
sieve__db_exec(SieveDb *db, const char *sql)
{
  return db->klass->exec(db, sql);
}

gboolean
sieve__db_in_transaction(SieveDb *db)
{
  return db->klass->in_transaction(db);
}

gboolean
sieve__db_begin(SieveDb *db)
{
  return db->klass->exec(db, db->klass->begin_sql);
}

gboolean
sieve__db_begin_read(SieveDb *db)
{
  return db->klass->exec(db, db->klass->begin_read_sql);
}

gboolean
sieve__db_wait(SieveDb *db, const char *what, double timeout_s)
{
  if (db->klass->wait != NULL)
    return db->klass->wait(db, what, timeout_s);
  g_usleep((gulong) (timeout_s * G_USEC_PER_SEC));
  return TRUE;
}

const char *
sieve__db_errmsg(SieveDb *db)
{
  return db->errmsg ? db->errmsg : "no error";
}

SieveDbFailure
sieve__db_failure(SieveDb *db)
{
  return db->failure;
}

/* The password of a URL is what follows "user:" up to the "@" of the
 * authority, and any password= parameter up to the next "&". */
char *
sieve__db_redact_url(const char *url)
{
  GString *out = g_string_new(NULL);
  const char *scheme_end = strstr(url, "://");
  const char *p = url;
  if (scheme_end != NULL) {
    const char *auth = scheme_end + 3;
    const char *auth_end = auth + strcspn(auth, "/?#");
    const char *at = g_strrstr_len(auth, auth_end - auth, "@");
    const char *colon = at ? memchr(auth, ':', at - auth) : NULL;
    if (colon != NULL) {
      g_string_append_len(out, url, colon + 1 - url);
      g_string_append(out, "***");
      p = at;
    }
  }
  while (*p != '\0') {
    const char *hit = strstr(p, "password=");
    if (hit == NULL || (hit != url && hit[-1] != '?' && hit[-1] != '&' && hit[-1] != ' ')) {
      if (hit == NULL) {
        g_string_append(out, p);
        break;
      }
      g_string_append_len(out, p, hit + 1 - p);
      p = hit + 1;
      continue;
    }
    g_string_append_len(out, p, hit + strlen("password=") - p);
    g_string_append(out, "***");
    p = hit + strlen("password=");
    p += strcspn(p, "& ");
  }
  return g_string_free(out, FALSE);
}
