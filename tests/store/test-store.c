/* tests/store: the SQLite study store and its exports, on real files. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <sieve/store.h>

typedef struct {
  char *dir;
  char *path; /* DIR/study.sieve, not created */
} Fixture;

static void
fixture_setup(Fixture *f, gconstpointer data)
{
  GError *error = NULL;
  f->dir = g_dir_make_tmp("sieve-store-XXXXXX", &error);
  g_assert_no_error(error);
  f->path = g_build_filename(f->dir, "study.sieve", NULL);
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
  GDir *dir = g_dir_open(f->dir, 0, NULL);
  const char *name;
  while (dir && (name = g_dir_read_name(dir)) != NULL) {
    g_autofree char *p = g_build_filename(f->dir, name, NULL);
    g_unlink(p);
  }
  if (dir)
    g_dir_close(dir);
  g_rmdir(f->dir);
  g_free(f->dir);
  g_free(f->path);
}

#define TEST(path, func) g_test_add(path, Fixture, NULL, fixture_setup, func, fixture_teardown)

static SieveStore *
open_ok(const char *path, SieveStoreMode mode)
{
  GError *error = NULL;
  SieveStore *store = sieve_store_open(path, mode, &error);
  g_assert_no_error(error);
  g_assert_nonnull(store);
  return store;
}

/* Adds a trial and finishes it with the given result, in one transaction. */
static gint64
add_finished(SieveStore *store, const char *genotype, double fidelity, SieveResult *result, double started,
             double finished, gint worker, gint64 cached_from)
{
  GError *error = NULL;
  g_assert_true(sieve_store_begin(store, &error));
  g_assert_no_error(error);
  gint64 n = sieve_store_add_trial(store, genotype, fidelity, &error);
  g_assert_no_error(error);
  g_assert_cmpint(n, >=, 0);
  g_assert_true(sieve_store_finish_trial(store, n, result, started, finished, worker, cached_from, &error));
  g_assert_no_error(error);
  g_assert_true(sieve_store_commit(store, &error));
  g_assert_no_error(error);
  return n;
}

/* Runs raw SQL on a store file, to damage it on purpose. */
static void
raw_sql(const char *path, const char *sql)
{
  sqlite3 *db = NULL;
  g_assert_cmpint(sqlite3_open(path, &db), ==, SQLITE_OK);
  char *msg = NULL;
  int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
  if (rc != SQLITE_OK)
    g_error("%s: %s", sql, msg);
  sqlite3_close(db);
}

/* ---- open -------------------------------------------------------------- */

static void
test_create_reopen(Fixture *f, gconstpointer data)
{
  GError *error = NULL;
  SieveStore *store = open_ok(f->path, SIEVE_STORE_WRITE);
  g_assert_cmpstr(sieve_store_get_path(store), ==, f->path);
  g_assert_true(g_file_test(f->path, G_FILE_TEST_IS_REGULAR));
  g_assert_cmpint(sieve_store_count_trials(store, -1, &error), ==, 0);
  g_assert_no_error(error);
  g_assert_null(sieve_store_get_meta(store, "name", &error));
  g_assert_no_error(error);
  g_assert_true(sieve_store_set_meta(store, "name", "first", &error));
  g_assert_true(sieve_store_set_meta(store, "name", "second", &error));
  g_assert_true(sieve_store_set_meta(store, "gone", "x", &error));
  g_assert_true(sieve_store_set_meta(store, "gone", NULL, &error));
  g_assert_no_error(error);
  sieve_store_close(store);

  store = open_ok(f->path, SIEVE_STORE_WRITE);
  g_autofree char *name = sieve_store_get_meta(store, "name", &error);
  g_assert_no_error(error);
  g_assert_cmpstr(name, ==, "second");
  g_assert_null(sieve_store_get_meta(store, "gone", &error));
  g_assert_no_error(error);
  sieve_store_close(store);

  store = open_ok(f->path, SIEVE_STORE_READ);
  g_autofree char *again = sieve_store_get_meta(store, "name", &error);
  g_assert_cmpstr(again, ==, "second");
  sieve_store_close(store);

  /* The file is in WAL mode (persistent in its header). */
  sqlite3 *db = NULL;
  sqlite3_stmt *stmt = NULL;
  g_assert_cmpint(sqlite3_open(f->path, &db), ==, SQLITE_OK);
  g_assert_cmpint(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &stmt, NULL), ==, SQLITE_OK);
  g_assert_cmpint(sqlite3_step(stmt), ==, SQLITE_ROW);
  g_assert_cmpstr((const char *) sqlite3_column_text(stmt, 0), ==, "wal");
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

static void
test_missing(Fixture *f, gconstpointer data)
{
  GError *error = NULL;
  g_assert_null(sieve_store_open(f->path, SIEVE_STORE_READ, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND);
  g_autofree char *want = g_strdup_printf("%s: no such store", f->path);
  g_assert_cmpstr(error->message, ==, want);
  g_clear_error(&error);
  g_assert_false(g_file_test(f->path, G_FILE_TEST_EXISTS));

  g_autofree char *nodir = g_build_filename(f->dir, "no", "such", "dir.sieve", NULL);
  g_assert_null(sieve_store_open(nodir, SIEVE_STORE_WRITE, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE);
  g_assert_true(g_str_has_prefix(error->message, nodir));
  g_clear_error(&error);
}

static void
test_not_a_store(Fixture *f, gconstpointer data)
{
  GError *error = NULL;
  g_assert_true(g_file_set_contents(f->path, "number,status\n0,ok\n this is a CSV file, not SQLite at all\n"
                                             "padding padding padding padding padding padding padding\n",
                                    -1, &error));
  g_autofree char *want = g_strdup_printf("%s: not a sieve store (file is not a database)", f->path);
  for (int mode = SIEVE_STORE_READ; mode <= SIEVE_STORE_WRITE; mode++) {
    g_assert_null(sieve_store_open(f->path, (SieveStoreMode) mode, &error));
    g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE);
    g_assert_cmpstr(error->message, ==, want);
    g_clear_error(&error);
  }
  /* The refused writer changed nothing. */
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(f->path, &text, NULL, NULL));
  g_assert_true(g_str_has_prefix(text, "number,status\n"));

  /* An SQLite database of some other program. */
  g_autofree char *other = g_build_filename(f->dir, "other.db", NULL);
  raw_sql(other, "CREATE TABLE t (x); INSERT INTO t VALUES (1);");
  g_autofree char *want_other =
      g_strdup_printf("%s: not a sieve store (an SQLite database written by another program)", other);
  for (int mode = SIEVE_STORE_READ; mode <= SIEVE_STORE_WRITE; mode++) {
    g_assert_null(sieve_store_open(other, (SieveStoreMode) mode, &error));
    g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE);
    g_assert_cmpstr(error->message, ==, want_other);
    g_clear_error(&error);
  }

  /* An empty SQLite file: fine to write, but no store to read. */
  g_autofree char *empty = g_build_filename(f->dir, "empty.sieve", NULL);
  g_assert_true(g_file_set_contents(empty, "", 0, NULL));
  g_assert_null(sieve_store_open(empty, SIEVE_STORE_READ, &error));
  g_autofree char *want_empty = g_strdup_printf("%s: not a sieve store (an empty database)", empty);
  g_assert_cmpstr(error->message, ==, want_empty);
  g_clear_error(&error);
  sieve_store_close(open_ok(empty, SIEVE_STORE_WRITE));
  sieve_store_close(open_ok(empty, SIEVE_STORE_READ));

  /* A directory. */
  g_assert_null(sieve_store_open(f->dir, SIEVE_STORE_READ, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE);
  g_clear_error(&error);
}

static void
test_newer_schema(Fixture *f, gconstpointer data)
{
  sieve_store_close(open_ok(f->path, SIEVE_STORE_WRITE));
  raw_sql(f->path, "PRAGMA user_version = 99");
  GError *error = NULL;
  g_autofree char *want = g_strdup_printf(
      "%s: the store has schema version 99, newer than this sieve understands (4); use a newer sieve", f->path);
  for (int mode = SIEVE_STORE_READ; mode <= SIEVE_STORE_WRITE; mode++) {
    g_assert_null(sieve_store_open(f->path, (SieveStoreMode) mode, &error));
    g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE);
    g_assert_cmpstr(error->message, ==, want);
    g_clear_error(&error);
  }
}

/* A version 2 store: read as it is (no weights, no finals), upgraded to 3
 * when written, its trials kept; weights and finals then work, and a
 * pruned trial loses its weights in favour of the better ones. */
static void
test_v2_to_v3(Fixture *f, gconstpointer data)
{
  GError *error = NULL;
  {
    g_autoptr(SieveStore) s = open_ok(f->path, SIEVE_STORE_WRITE);
    for (int i = 0; i < 3; i++) {
      gint64 n = sieve_store_add_trial(s, "g", NAN, &error);
      g_autoptr(SieveResult) r = sieve_result_new();
      sieve_result_set_metric(r, "acc", 0.5 + 0.1 * i);
      g_assert_true(sieve_store_finish_trial(s, n, r, 1, 2, 0, -1, &error));
    }
    g_assert_no_error(error);
  }
  raw_sql(f->path, "DROP TABLE weights; DROP TABLE final_metrics; DROP TABLE finals; PRAGMA user_version = 2");
  {
    g_autoptr(SieveStore) s = open_ok(f->path, SIEVE_STORE_READ);
    g_autoptr(GPtrArray) finals = sieve_store_list_finals(s, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(finals->len, ==, 0);
    g_assert_null(sieve_store_get_weights(s, "trial", 0, &error));
    g_assert_no_error(error);
  }
  g_autoptr(SieveStore) s = open_ok(f->path, SIEVE_STORE_WRITE);
  g_assert_cmpint(sieve_store_count_trials(s, -1, &error), ==, 3);
  g_autoptr(GBytes) w = g_bytes_new_static("abc", 3);
  for (gint64 n = 0; n < 3; n++)
    g_assert_true(sieve_store_put_weights(s, "trial", n, w, &error));
  g_assert_true(sieve_store_prune_weights(s, "acc", TRUE, 2, &error));
  g_autoptr(GArray) kept = sieve_store_list_weights(s, "trial", &error);
  g_assert_no_error(error);
  g_assert_cmpuint(kept->len, ==, 2);
  g_assert_cmpint(g_array_index(kept, gint64, 0), ==, 1);
  g_assert_cmpint(g_array_index(kept, gint64, 1), ==, 2);
  gint64 fin = sieve_store_add_final(s, 2, "g", 3, "", &error);
  g_assert_cmpint(fin, ==, 0);
  g_autoptr(SieveResult) r = sieve_result_new();
  sieve_result_set_metric(r, "acc", 0.9);
  g_assert_true(sieve_store_finish_final(s, fin, r, 1, 2, &error));
  g_autoptr(GPtrArray) finals = sieve_store_list_finals(s, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(finals->len, ==, 1);
  const SieveFinal *final = finals->pdata[0];
  g_assert_cmpint(final->trial, ==, 2);
  g_assert_cmpint(final->status, ==, SIEVE_STATUS_OK);
  g_assert_cmpfloat(final->epochs, ==, 3);
  double acc = 0;
  g_assert_true(sieve_result_get_metric(final->result, "acc", &acc));
  g_assert_cmpfloat(acc, ==, 0.9);
  g_assert_cmpint(sieve_store_count_trials(s, -1, &error), ==, 3); /* finals are not trials */
}

/* keep_weights: top in a multi-fidelity study keeps the summary's top
 * trials: a higher fidelity first, each genotype once at its highest.  It
 * ranked by the metric alone and kept low rungs (0 and 4 here), so that
 * the winner (5, the one configuration at the full fidelity) lost its
 * weights and `sieve model export --trial 5` had none to write. */
static void
test_prune_weights_by_fidelity(Fixture *f, gconstpointer data)
{
  GError *error = NULL;
  g_autoptr(SieveStore) s = open_ok(f->path, SIEVE_STORE_WRITE);
  const struct {
    const char *genotype;
    double fidelity, acc;
  } trials[] = {{"a", 1, 0.9}, {"b", 1, 0.8}, {"a", 3, 0.5}, {"b", 3, 0.4}, {"c", 1, 0.95}, {"a", 9, 0.45}};
  g_autoptr(GBytes) w = g_bytes_new_static("abc", 3);
  for (guint i = 0; i < G_N_ELEMENTS(trials); i++) {
    gint64 n = sieve_store_add_trial(s, trials[i].genotype, trials[i].fidelity, &error);
    g_autoptr(SieveResult) r = sieve_result_new();
    sieve_result_set_metric(r, "acc", trials[i].acc);
    g_assert_true(sieve_store_finish_trial(s, n, r, 1, 2, 0, -1, &error));
    g_assert_true(sieve_store_put_weights(s, "trial", n, w, &error));
  }
  g_assert_no_error(error);
  g_assert_true(sieve_store_prune_weights(s, "acc", TRUE, 2, &error));
  g_assert_no_error(error);
  g_autoptr(GArray) kept = sieve_store_list_weights(s, "trial", &error);
  g_assert_cmpuint(kept->len, ==, 2);
  g_assert_cmpint(g_array_index(kept, gint64, 0), ==, 3); /* b at fidelity 3 (a's rung there is a again) */
  g_assert_cmpint(g_array_index(kept, gint64, 1), ==, 5); /* a at the full fidelity */
  g_assert_true(sieve_store_prune_weights(s, "acc", TRUE, 1, &error));
  g_autoptr(GArray) one = sieve_store_list_weights(s, "trial", &error);
  g_assert_cmpuint(one->len, ==, 1);
  g_assert_cmpint(g_array_index(one, gint64, 0), ==, 5);
}

/* A version 3 store (no intermediate table, a status check without
 * 'pruned', as sieve 3 wrote it): read as it is, upgraded to 4 when
 * written with every trial kept; it then takes pruned trials and their
 * intermediate values. */
static void
test_v3_to_v4(Fixture *f, gconstpointer data)
{
  GError *error = NULL;
  {
    g_autoptr(SieveStore) s = open_ok(f->path, SIEVE_STORE_WRITE);
    for (int i = 0; i < 3; i++) {
      gint64 n = sieve_store_add_trial(s, "g", i, &error);
      g_autoptr(SieveResult) r = sieve_result_new();
      sieve_result_set_metric(r, "acc", 0.5 + 0.1 * i);
      g_assert_true(sieve_store_finish_trial(s, n, r, 1, 2, 0, -1, &error));
    }
    g_assert_no_error(error);
  }
  raw_sql(f->path, "DROP TABLE intermediate; PRAGMA writable_schema = ON; "
                   "UPDATE sqlite_schema SET sql = replace(sql, ', ''pruned'')', ')') WHERE name = 'trials'; "
                   "PRAGMA writable_schema = OFF; PRAGMA user_version = 3");
  {
    g_autoptr(SieveStore) s = open_ok(f->path, SIEVE_STORE_READ);
    g_autoptr(GArray) none = sieve_store_list_intermediate(s, -1, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(none->len, ==, 0);
  }
  g_autoptr(SieveStore) s = open_ok(f->path, SIEVE_STORE_WRITE);
  g_autoptr(GPtrArray) trials = sieve_store_list_trials(s, FALSE, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(trials->len, ==, 3);
  for (guint i = 0; i < 3; i++) {
    const SieveTrial *t = trials->pdata[i];
    double acc = 0;
    g_assert_true(sieve_result_get_metric(t->result, "acc", &acc));
    g_assert_cmpfloat(acc, ==, 0.5 + 0.1 * i);
    g_assert_cmpfloat(t->fidelity, ==, i);
  }
  gint64 n = sieve_store_add_trial(s, "h", 9, &error);
  g_autoptr(SieveResult) r = sieve_result_new();
  sieve_result_set_status(r, SIEVE_STATUS_PRUNED);
  sieve_result_set_metric(r, "acc", 0.25);
  static const SieveIntermediate curve[] = {{0, 1, 1, 0.2}, {0, 2, 2, NAN}, {0, 3, 3, 0.25}};
  g_assert_true(sieve_store_begin(s, &error));
  g_assert_true(sieve_store_set_intermediate(s, n, curve, 3, &error));
  g_assert_true(sieve_store_set_trial_fidelity(s, n, 3, &error));
  g_assert_true(sieve_store_finish_trial(s, n, r, 1, 2, 0, -1, &error));
  g_assert_true(sieve_store_commit(s, &error));
  g_assert_no_error(error);
  g_autoptr(SieveTrial) t = sieve_store_get_trial(s, n, &error);
  g_assert_cmpint(t->status, ==, SIEVE_STATUS_PRUNED);
  g_assert_cmpfloat(t->fidelity, ==, 3);
  g_autoptr(GArray) values = sieve_store_list_intermediate(s, n, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(values->len, ==, 3);
  g_assert_cmpint(g_array_index(values, SieveIntermediate, 1).step, ==, 2);
  g_assert_true(isnan(g_array_index(values, SieveIntermediate, 1).value)); /* a NaN survives */
  g_assert_cmpfloat(g_array_index(values, SieveIntermediate, 2).value, ==, 0.25);
  /* Replaced, not appended, when the trial is stored again. */
  g_assert_true(sieve_store_set_intermediate(s, n, curve, 1, &error));
  g_autoptr(GArray) again = sieve_store_list_intermediate(s, -1, &error);
  g_assert_cmpuint(again->len, ==, 1);
}

/* ---- trials ------------------------------------------------------------ */

static void
test_trials(Fixture *f, gconstpointer data)
{
  GError *error = NULL;
  g_autoptr(SieveStore) store = open_ok(f->path, SIEVE_STORE_WRITE);

  g_assert_true(sieve_store_begin(store, &error));
  for (int i = 0; i < 3; i++) {
    g_autofree char *g = g_strdup_printf("g%d", i);
    g_assert_cmpint(sieve_store_add_trial(store, g, i == 1 ? 12.0 : NAN, &error), ==, i);
    g_assert_no_error(error);
  }
  g_assert_true(sieve_store_commit(store, &error));
  g_assert_no_error(error);
  g_assert_cmpint(sieve_store_count_trials(store, -1, NULL), ==, 3);
  g_assert_cmpint(sieve_store_count_trials(store, SIEVE_STATUS_PENDING, NULL), ==, 3);

  /* A pending trial. */
  g_autoptr(SieveTrial) pending = sieve_store_get_trial(store, 1, &error);
  g_assert_no_error(error);
  g_assert_nonnull(pending);
  g_assert_cmpint(pending->number, ==, 1);
  g_assert_cmpstr(pending->genotype, ==, "g1");
  g_assert_cmpint(pending->status, ==, SIEVE_STATUS_PENDING);
  g_assert_cmpfloat(pending->fidelity, ==, 12.0);
  g_assert_null(pending->reason);
  g_assert_true(isnan(pending->started) && isnan(pending->finished));
  g_assert_cmpint(pending->worker, ==, -1);
  g_assert_cmpint(pending->cached_from, ==, -1);
  g_assert_nonnull(pending->result);
  g_assert_cmpint(sieve_result_get_status(pending->result), ==, SIEVE_STATUS_PENDING);
  g_assert_cmpuint(sieve_result_n_metrics(pending->result), ==, 0);
  g_assert_cmpfloat(sieve_result_get_cost(pending->result), ==, 0.0);

  /* Finish 0 (ok) and 2 (failed), outside an explicit transaction. */
  g_autoptr(SieveResult) ok = sieve_result_new();
  sieve_result_set_metric(ok, "val_acc", 91.25);
  sieve_result_set_metric(ok, "params", 1200000);
  sieve_result_set_cost(ok, 3.5);
  g_assert_true(sieve_store_finish_trial(store, 0, ok, 100.0, 103.5, 2, -1, &error));
  g_assert_no_error(error);
  g_autoptr(SieveResult) failed = sieve_result_new();
  sieve_result_set_failed(failed, "loss became NaN at epoch %d", 3);
  sieve_result_set_cost(failed, 0.25);
  g_assert_true(sieve_store_finish_trial(store, 2, failed, 104.0, 104.25, 0, 0, &error));
  g_assert_no_error(error);

  g_assert_cmpint(sieve_store_count_trials(store, SIEVE_STATUS_PENDING, NULL), ==, 1);
  g_assert_cmpint(sieve_store_count_trials(store, SIEVE_STATUS_OK, NULL), ==, 1);
  g_assert_cmpint(sieve_store_count_trials(store, SIEVE_STATUS_FAILED, NULL), ==, 1);
  g_assert_cmpint(sieve_store_count_trials(store, SIEVE_STATUS_CACHED, NULL), ==, 0);

  g_autoptr(GPtrArray) all = sieve_store_list_trials(store, FALSE, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(all->len, ==, 3);
  for (guint i = 0; i < 3; i++)
    g_assert_cmpint(((SieveTrial *) all->pdata[i])->number, ==, i);
  SieveTrial *t0 = all->pdata[0];
  g_assert_cmpint(t0->status, ==, SIEVE_STATUS_OK);
  g_assert_true(isnan(t0->fidelity));
  g_assert_cmpfloat(t0->started, ==, 100.0);
  g_assert_cmpfloat(t0->finished, ==, 103.5);
  g_assert_cmpint(t0->worker, ==, 2);
  g_assert_cmpint(t0->cached_from, ==, -1);
  g_assert_cmpfloat(sieve_result_get_cost(t0->result), ==, 3.5);
  g_assert_cmpuint(sieve_result_n_metrics(t0->result), ==, 2);
  g_assert_cmpstr(sieve_result_metric_name(t0->result, 0), ==, "val_acc");
  g_assert_cmpfloat(sieve_result_metric_value(t0->result, 0), ==, 91.25);
  g_assert_cmpstr(sieve_result_metric_name(t0->result, 1), ==, "params");
  g_assert_cmpfloat(sieve_result_metric_value(t0->result, 1), ==, 1200000);
  SieveTrial *t2 = all->pdata[2];
  g_assert_cmpint(t2->status, ==, SIEVE_STATUS_FAILED);
  g_assert_cmpstr(t2->reason, ==, "loss became NaN at epoch 3");
  g_assert_cmpstr(sieve_result_get_reason(t2->result), ==, "loss became NaN at epoch 3");
  g_assert_cmpint(sieve_result_get_status(t2->result), ==, SIEVE_STATUS_FAILED);
  g_assert_cmpint(t2->cached_from, ==, 0);
  g_assert_cmpuint(sieve_result_n_metrics(t2->result), ==, 0);

  g_autoptr(GPtrArray) only = sieve_store_list_trials(store, TRUE, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(only->len, ==, 1);
  g_assert_cmpint(((SieveTrial *) only->pdata[0])->number, ==, 1);

  /* No such trial. */
  g_assert_null(sieve_store_get_trial(store, 3, &error));
  g_assert_no_error(error);
  g_assert_null(sieve_store_get_trial(store, -1, &error));
  g_assert_no_error(error);
  g_assert_false(sieve_store_finish_trial(store, 7, ok, 0, 1, 0, -1, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND);
  g_autofree char *want = g_strdup_printf("%s: no trial 7", f->path);
  g_assert_cmpstr(error->message, ==, want);
  g_clear_error(&error);
  /* A failed finish leaves no metrics behind (a foreign key would refuse them anyway). */
  g_assert_cmpint(sieve_store_count_trials(store, -1, NULL), ==, 3);

  /* Rollback drops the whole transaction. */
  g_assert_true(sieve_store_begin(store, &error));
  g_assert_cmpint(sieve_store_add_trial(store, "dropped", NAN, &error), ==, 3);
  g_assert_true(sieve_store_finish_trial(store, 1, ok, 1, 2, 0, -1, &error));
  sieve_store_rollback(store);
  sieve_store_rollback(store); /* harmless twice */
  g_assert_cmpint(sieve_store_count_trials(store, -1, NULL), ==, 3);
  g_autoptr(SieveTrial) still = sieve_store_get_trial(store, 1, &error);
  g_assert_cmpint(still->status, ==, SIEVE_STATUS_PENDING);
  /* The next number is the count again. */
  g_assert_cmpint(sieve_store_add_trial(store, "g3", NAN, &error), ==, 3);
  g_assert_no_error(error);
}

static void
test_metrics_round_trip(Fixture *f, gconstpointer data)
{
  GError *error = NULL;
  g_autoptr(SieveResult) r = sieve_result_new();
  /* Not alphabetical: the order must come back as inserted. */
  const char *names[] = {"zeta", "alpha", "nan", "inf", "minus_inf", "tiny", "third", "neg_zero", "big"};
  const double values[] = {1.5, -2.0, NAN, INFINITY, -INFINITY, 5e-324, 1.0 / 3.0, -0.0, 1.7976931348623157e308};
  for (guint i = 0; i < G_N_ELEMENTS(names); i++)
    sieve_result_set_metric(r, names[i], values[i]);
  sieve_result_set_status(r, SIEVE_STATUS_SCREENED);
  sieve_result_set_reason(r, "below the top 10%");
  sieve_result_set_cost(r, NAN);
  {
    g_autoptr(SieveStore) store = open_ok(f->path, SIEVE_STORE_WRITE);
    add_finished(store, "g", INFINITY, r, 1, 2, 0, -1);
  }
  g_autoptr(SieveStore) store = open_ok(f->path, SIEVE_STORE_READ);
  g_autoptr(SieveTrial) t = sieve_store_get_trial(store, 0, &error);
  g_assert_no_error(error);
  g_assert_cmpint(t->status, ==, SIEVE_STATUS_SCREENED);
  g_assert_cmpstr(t->reason, ==, "below the top 10%");
  g_assert_true(isinf(t->fidelity) && t->fidelity > 0);
  g_assert_true(isnan(sieve_result_get_cost(t->result)));
  g_assert_cmpuint(sieve_result_n_metrics(t->result), ==, G_N_ELEMENTS(names));
  for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
    double v = sieve_result_metric_value(t->result, i);
    g_assert_cmpstr(sieve_result_metric_name(t->result, i), ==, names[i]);
    if (isnan(values[i]))
      g_assert_true(isnan(v));
    else
      g_assert_cmpmem(&v, sizeof v, &values[i], sizeof values[i]); /* bit for bit, -0.0 included */
  }
  sieve_store_close(g_steal_pointer(&store));

  /* Finishing again replaces the metrics, not merges them. */
  store = open_ok(f->path, SIEVE_STORE_WRITE);
  g_autoptr(SieveResult) again = sieve_result_new();
  sieve_result_set_metric(again, "alpha", 7);
  g_assert_true(sieve_store_finish_trial(store, 0, again, 3, 4, 1, -1, &error));
  g_assert_no_error(error);
  g_autoptr(SieveTrial) t2 = sieve_store_get_trial(store, 0, &error);
  g_assert_cmpint(t2->status, ==, SIEVE_STATUS_OK);
  g_assert_null(t2->reason);
  g_assert_cmpuint(sieve_result_n_metrics(t2->result), ==, 1);
  g_assert_cmpfloat(sieve_result_metric_value(t2->result, 0), ==, 7);
}

static void
test_read_only(Fixture *f, gconstpointer data)
{
  GError *error = NULL;
  sieve_store_close(open_ok(f->path, SIEVE_STORE_WRITE));
  g_autoptr(SieveStore) store = open_ok(f->path, SIEVE_STORE_READ);
  g_autofree char *want = g_strdup_printf("%s: store is open read-only", f->path);
  g_assert_false(sieve_store_begin(store, &error));
  g_assert_cmpstr(error->message, ==, want);
  g_clear_error(&error);
  g_assert_cmpint(sieve_store_add_trial(store, "g", NAN, &error), ==, -1);
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE);
  g_clear_error(&error);
  g_assert_false(sieve_store_set_meta(store, "k", "v", &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE);
  g_clear_error(&error);
  g_assert_false(sieve_store_save_state(store, "optimizer", g_variant_new_int32(1), &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE);
  g_clear_error(&error);
}

/* A reader opens through a SQLite URI: a path that starts with "//" (the
 * same file to the kernel) must not become the URI's authority, and a
 * relative path is the file under the current folder. */
static void
test_reader_paths(Fixture *f, gconstpointer data)
{
  GError *error = NULL;
  {
    g_autoptr(SieveStore) store = open_ok(f->path, SIEVE_STORE_WRITE);
    g_assert_cmpint(sieve_store_add_trial(store, "g", NAN, &error), ==, 0);
    g_assert_no_error(error);
  }
  g_assert_true(g_path_is_absolute(f->path) && f->path[1] != '/');
  g_autofree char *slashes = g_strconcat("/", f->path, NULL);
  g_autofree char *here = g_get_current_dir();
  g_assert_cmpint(g_chdir(f->dir), ==, 0);
  const char *paths[] = {slashes, "study.sieve", "./study.sieve"};
  for (guint i = 0; i < G_N_ELEMENTS(paths); i++) {
    g_autoptr(SieveStore) store = sieve_store_open(paths[i], SIEVE_STORE_READ, &error);
    g_assert_no_error(error);
    g_assert_cmpint(sieve_store_count_trials(store, -1, &error), ==, 1);
    g_assert_no_error(error);
  }
  g_assert_cmpint(g_chdir(here), ==, 0);
}

/* ---- state and cache --------------------------------------------------- */

static void
test_state(Fixture *f, gconstpointer data)
{
  GError *error = NULL;
  {
    g_autoptr(SieveStore) store = open_ok(f->path, SIEVE_STORE_WRITE);
    g_assert_null(sieve_store_load_state(store, "optimizer", &error));
    g_assert_no_error(error);
    /* Floating references are sunk by save. */
    g_assert_true(sieve_store_save_state(
        store, "optimizer", g_variant_new_parsed("{'step': <int64 3>, 'names': <['a', 'b']>, 'x': <2.5>}"),
        &error));
    g_assert_no_error(error);
    g_autoptr(GVariant) held = g_variant_ref_sink(g_variant_new("(tas)", G_GUINT64_CONSTANT(7), NULL));
    g_assert_true(sieve_store_save_state(store, "engine", held, &error));
    g_assert_true(g_variant_is_of_type(held, G_VARIANT_TYPE("(tas)"))); /* still ours */
    /* An empty serialisation (zero bytes) is still a value. */
    g_assert_true(sieve_store_save_state(store, "empty", g_variant_new_strv(NULL, 0), &error));
    /* Saving again replaces. */
    g_assert_true(sieve_store_save_state(store, "replaced", g_variant_new_int32(1), &error));
    g_assert_true(sieve_store_save_state(store, "replaced", g_variant_new_string("two"), &error));
    g_assert_no_error(error);
  }
  g_autoptr(SieveStore) store = open_ok(f->path, SIEVE_STORE_READ);
  g_autoptr(GVariant) opt = sieve_store_load_state(store, "optimizer", &error);
  g_assert_no_error(error);
  g_autoptr(GVariant) want = g_variant_ref_sink(
      g_variant_new_parsed("{'step': <int64 3>, 'names': <['a', 'b']>, 'x': <2.5>}"));
  g_assert_true(g_variant_equal(opt, want));
  g_assert_false(g_variant_is_floating(opt));
  g_autoptr(GVariant) engine = sieve_store_load_state(store, "engine", &error);
  g_assert_cmpstr(g_variant_get_type_string(engine), ==, "(tas)");
  g_autoptr(GVariant) empty = sieve_store_load_state(store, "empty", &error);
  g_assert_no_error(error);
  g_assert_cmpstr(g_variant_get_type_string(empty), ==, "as");
  g_assert_cmpuint(g_variant_n_children(empty), ==, 0);
  g_autoptr(GVariant) replaced = sieve_store_load_state(store, "replaced", &error);
  g_assert_cmpstr(g_variant_get_string(replaced, NULL), ==, "two");
  sieve_store_close(g_steal_pointer(&store));

  /* Corrupt blobs and types are errors, never crashes. */
  raw_sql(f->path, "UPDATE state SET data = X'0102030405' WHERE name = 'engine';"
                   "UPDATE state SET type = 'a{sv' WHERE name = 'replaced';"
                   "INSERT INTO state VALUES ('indefinite', 'a*', X'00');"
                   "INSERT INTO state VALUES ('badstring', 's', X'41424300FF');");
  store = open_ok(f->path, SIEVE_STORE_READ);
  struct {
    const char *name, *message;
  } cases[] = {
      {"engine", "state 'engine' is not a valid '(tas)' value"},
      {"replaced", "state 'replaced' has an invalid type 'a{sv'"},
      {"indefinite", "state 'indefinite' has an invalid type 'a*'"},
      {"badstring", "state 'badstring' is not a valid 's' value"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_assert_null(sieve_store_load_state(store, cases[i].name, &error));
    g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE);
    g_autofree char *msg = g_strdup_printf("%s: corrupt store: %s", f->path, cases[i].message);
    g_assert_cmpstr(error->message, ==, msg);
    g_clear_error(&error);
  }
  /* The undamaged one still loads. */
  g_autoptr(GVariant) opt2 = sieve_store_load_state(store, "optimizer", &error);
  g_assert_no_error(error);
  g_assert_true(g_variant_equal(opt2, want));
}

static void
test_cache(Fixture *f, gconstpointer data)
{
  GError *error = NULL;
  g_autoptr(SieveStore) store = open_ok(f->path, SIEVE_STORE_WRITE);
  g_autoptr(SieveResult) r = sieve_result_new();
  add_finished(store, "a", NAN, r, 0, 1, 0, -1);
  add_finished(store, "b", NAN, r, 0, 1, 0, -1);
  g_assert_cmpint(sieve_store_cache_lookup(store, "functional", "h1", "tabular|epochs=12", &error), ==, -1);
  g_assert_no_error(error);
  g_assert_true(sieve_store_cache_put(store, "functional", "h1", "tabular|epochs=12", 0, &error));
  g_assert_true(sieve_store_cache_put(store, "functional", "h1", "tabular|epochs=200", 1, &error));
  g_assert_no_error(error);
  g_assert_cmpint(sieve_store_cache_lookup(store, "functional", "h1", "tabular|epochs=12", &error), ==, 0);
  g_assert_cmpint(sieve_store_cache_lookup(store, "functional", "h1", "tabular|epochs=200", &error), ==, 1);
  g_assert_cmpint(sieve_store_cache_lookup(store, "functional", "h2", "tabular|epochs=12", &error), ==, -1);
  g_assert_no_error(error);
  g_assert_true(sieve_store_cache_put(store, "functional", "h1", "tabular|epochs=12", 1, &error)); /* replace */
  g_assert_cmpint(sieve_store_cache_lookup(store, "functional", "h1", "tabular|epochs=12", &error), ==, 1);
  /* The hash kind is part of the key. */
  g_assert_cmpint(sieve_store_cache_lookup(store, "structural", "h1", "tabular|epochs=12", &error), ==, -1);
  g_assert_no_error(error);
  /* A trial that does not exist cannot be cached. */
  g_assert_false(sieve_store_cache_put(store, "functional", "h3", "k", 42, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE);
  g_assert_true(strstr(error->message, "FOREIGN KEY") != NULL);
  g_clear_error(&error);
  sieve_store_close(g_steal_pointer(&store));

  store = open_ok(f->path, SIEVE_STORE_READ);
  g_assert_cmpint(sieve_store_cache_lookup(store, "functional", "h1", "tabular|epochs=200", &error), ==, 1);
  g_assert_no_error(error);
}

/* ---- concurrency and kills --------------------------------------------- */

static void
test_busy(Fixture *f, gconstpointer data)
{
  GError *error = NULL;
  SieveStore *writer = open_ok(f->path, SIEVE_STORE_WRITE);
  g_autoptr(SieveResult) r = sieve_result_new();
  sieve_result_set_metric(r, "acc", 1);
  add_finished(writer, "a", NAN, r, 0, 1, 0, -1);

  /* A reader works beside the writer and sees what it committed... */
  g_autoptr(SieveStore) reader = open_ok(f->path, SIEVE_STORE_READ);
  g_assert_cmpint(sieve_store_count_trials(reader, -1, &error), ==, 1);

  /* ...but a second writer, even in this process, is refused and names us. */
  g_assert_null(sieve_store_open(f->path, SIEVE_STORE_WRITE, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE_BUSY);
  g_autofree char *want =
      g_strdup_printf("%s: store is in use by another writer in this process (pid %d), which opened it as %s",
                      f->path, (int) getpid(), f->path);
  g_assert_cmpstr(error->message, ==, want);
  g_clear_error(&error);

  /* The refused attempt left the writer's own locks alone. */
  add_finished(writer, "b", NAN, r, 0, 1, 0, -1);
  g_assert_true(sieve_store_begin(writer, &error));
  g_assert_cmpint(sieve_store_add_trial(writer, "uncommitted", NAN, &error), ==, 2);
  /* The reader sees committed trials only, while the writer is mid-transaction. */
  g_autoptr(GPtrArray) seen = sieve_store_list_trials(reader, FALSE, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(seen->len, ==, 2);
  g_assert_true(sieve_store_commit(writer, &error));
  g_assert_cmpint(sieve_store_count_trials(reader, -1, &error), ==, 3);
  g_assert_no_error(error);
  sieve_store_close(writer);

  /* Once the writer is gone, another may open it. */
  SieveStore *second = open_ok(f->path, SIEVE_STORE_WRITE);
  g_assert_cmpint(sieve_store_count_trials(second, -1, &error), ==, 3);
  sieve_store_close(second);
}

static void
write_line(int fd, const char *text)
{
  size_t len = strlen(text);
  while (len > 0) {
    ssize_t n = write(fd, text, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      _exit(4);
    text += n;
    len -= (size_t) n;
  }
}

/* One transaction as the engine writes it: trial, metrics, optimizer state. */
static gboolean
commit_trial(SieveStore *store, gint64 i, GError **error)
{
  g_autofree char *g = g_strdup_printf("trial-%" G_GINT64_FORMAT, i);
  g_autoptr(SieveResult) r = sieve_result_new();
  sieve_result_set_metric(r, "acc", (double) i);
  sieve_result_set_metric(r, "loss", 1.0 / (double) (i + 1));
  if (!sieve_store_begin(store, error))
    return FALSE;
  gint64 n = sieve_store_add_trial(store, g, NAN, error);
  gboolean ok = n == i && sieve_store_finish_trial(store, n, r, 1, 2, 0, -1, error) &&
                sieve_store_save_state(store, "optimizer", g_variant_new_int64(i), error) &&
                sieve_store_commit(store, error);
  if (!ok)
    sieve_store_rollback(store);
  return ok;
}

/* Child: commits first committed trials (then reports each on fd after its
 * commit returns, forever when stream is set), or opens an uncommitted
 * transaction, says "ready" and waits for the kill. */
static void G_GNUC_NORETURN
child_writer(const char *path, int fd, gint64 committed, gboolean stream)
{
  GError *error = NULL;
  SieveStore *store = sieve_store_open(path, SIEVE_STORE_WRITE, &error);
  if (store == NULL)
    _exit(3);
  for (gint64 i = 0; stream || i < committed; i++) {
    if (!commit_trial(store, i, &error))
      _exit(5);
    if (stream) {
      char line[32];
      g_snprintf(line, sizeof line, "%" G_GINT64_FORMAT "\n", i);
      write_line(fd, line);
    }
  }
  /* Work that must vanish with the kill. */
  g_autoptr(SieveResult) r = sieve_result_new();
  sieve_result_set_metric(r, "acc", -1);
  if (!sieve_store_begin(store, &error) || sieve_store_add_trial(store, "uncommitted", NAN, &error) != committed ||
      !sieve_store_finish_trial(store, 0, r, 5, 6, 1, -1, &error) ||
      !sieve_store_save_state(store, "optimizer", g_variant_new_int64(-1), &error))
    _exit(6);
  write_line(fd, "ready\n");
  for (;;)
    pause();
}

/* Reads fd until it has seen want lines (or "ready"); returns the last line. */
static char *
read_lines(int fd, guint want)
{
  GString *buf = g_string_new(NULL);
  guint lines = 0;
  char c;
  g_autofree char *last = NULL;
  while (lines < want) {
    ssize_t n = read(fd, &c, 1);
    if (n < 0 && errno == EINTR)
      continue;
    g_assert_cmpint(n, ==, 1);
    if (c == '\n') {
      g_free(last);
      last = g_strdup(buf->str);
      g_string_truncate(buf, 0);
      lines++;
      if (strcmp(last, "ready") == 0)
        break;
    } else {
      g_string_append_c(buf, c);
    }
  }
  g_string_free(buf, TRUE);
  return g_steal_pointer(&last);
}

static void
kill_child(pid_t pid)
{
  g_assert_cmpint(kill(pid, SIGKILL), ==, 0);
  int status = 0;
  g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
  g_assert_true(WIFSIGNALED(status));
  g_assert_cmpint(WTERMSIG(status), ==, SIGKILL);
}

/* Every trial present must be whole: finished, with its metrics, and the
 * optimizer state must be that of the last one. */
static void
check_consistent(const char *path, gint64 expected)
{
  GError *error = NULL;
  for (int mode = SIEVE_STORE_READ; mode <= SIEVE_STORE_WRITE; mode++) {
    g_autoptr(SieveStore) store = open_ok(path, (SieveStoreMode) mode);
    g_autoptr(GPtrArray) trials = sieve_store_list_trials(store, FALSE, &error);
    g_assert_no_error(error);
    g_assert_cmpint(trials->len, ==, expected);
    for (guint i = 0; i < trials->len; i++) {
      SieveTrial *t = trials->pdata[i];
      g_autofree char *g = g_strdup_printf("trial-%u", i);
      g_assert_cmpint(t->number, ==, i);
      g_assert_cmpstr(t->genotype, ==, g);
      g_assert_cmpint(t->status, ==, SIEVE_STATUS_OK);
      g_assert_cmpuint(sieve_result_n_metrics(t->result), ==, 2);
      g_assert_cmpfloat(sieve_result_metric_value(t->result, 0), ==, (double) i);
    }
    g_autoptr(GVariant) state = sieve_store_load_state(store, "optimizer", &error);
    g_assert_no_error(error);
    g_assert_cmpint(g_variant_get_int64(state), ==, expected - 1);
  }
}

static void
test_kill_after_commit(Fixture *f, gconstpointer data)
{
  const gint64 committed = 25;
  int fds[2];
  g_assert_cmpint(pipe(fds), ==, 0);
  pid_t pid = fork();
  g_assert_cmpint(pid, >=, 0);
  if (pid == 0) {
    close(fds[0]);
    child_writer(f->path, fds[1], committed, FALSE);
  }
  close(fds[1]);
  g_autofree char *last = read_lines(fds[0], 1);
  close(fds[0]);
  g_assert_cmpstr(last, ==, "ready");
  kill_child(pid);
  /* The kill left the WAL unmerged: the commits live in it. */
  g_autofree char *wal = g_strconcat(f->path, "-wal", NULL);
  g_assert_true(g_file_test(wal, G_FILE_TEST_EXISTS));
  check_consistent(f->path, committed);
}

static void
test_kill_during_writes(Fixture *f, gconstpointer data)
{
  const guint reported = 60;
  int fds[2];
  g_assert_cmpint(pipe(fds), ==, 0);
  pid_t pid = fork();
  g_assert_cmpint(pid, >=, 0);
  if (pid == 0) {
    close(fds[0]);
    child_writer(f->path, fds[1], 0, TRUE);
  }
  close(fds[1]);
  g_autofree char *last = read_lines(fds[0], reported);
  /* The child keeps writing; kill it wherever it is. */
  kill_child(pid);
  close(fds[0]);
  g_assert_cmpstr(last, ==, "59");
  /* Every reported commit is there; at most the one after it too, whole. */
  g_autoptr(SieveStore) store = open_ok(f->path, SIEVE_STORE_READ);
  gint64 n = sieve_store_count_trials(store, -1, NULL);
  sieve_store_close(g_steal_pointer(&store));
  g_assert_cmpint(n, >=, reported);
  check_consistent(f->path, n);
}

/* Child: a reader as `sieve serve` is one: it opens the store, reads it
 * (counts, lists, meta, state), says "ready" on out and stays open, idle,
 * until in is closed. */
static void G_GNUC_NORETURN
child_reader(const char *path, int out, int in)
{
  GError *error = NULL;
  SieveStore *store = sieve_store_open(path, SIEVE_STORE_READ, &error);
  if (store == NULL || sieve_store_count_trials(store, -1, &error) < 1)
    _exit(3);
  GPtrArray *trials = sieve_store_list_trials(store, FALSE, &error);
  g_autofree char *name = sieve_store_get_meta(store, "name", &error);
  GVariant *state = sieve_store_load_state(store, "optimizer", &error);
  if (trials == NULL || state == NULL || error != NULL)
    _exit(5);
  g_ptr_array_unref(trials);
  g_variant_unref(state);
  write_line(out, "ready\n");
  char c;
  while (read(in, &c, 1) != 0)
    ;
  sieve_store_close(store);
  _exit(0);
}

/* A writer that closes while a reader has the store open leaves every
 * trial in the main file: a copy of the .sieve alone (no -wal) holds the
 * whole study.  SQLite's own checkpoint at close is skipped while another
 * connection is open, so this is the store's explicit one. */
static void
test_reader_at_close(Fixture *f, gconstpointer data)
{
  const gint64 trials = 40;
  GError *error = NULL;
  SieveStore *store = open_ok(f->path, SIEVE_STORE_WRITE);
  g_assert_true(commit_trial(store, 0, &error));
  sieve_store_close(store);

  /* Forked while this process has no connection (SQLite's are not to be
   * carried across a fork). */
  int ready[2], release[2];
  g_assert_cmpint(pipe(ready), ==, 0);
  g_assert_cmpint(pipe(release), ==, 0);
  pid_t pid = fork();
  g_assert_cmpint(pid, >=, 0);
  if (pid == 0) {
    close(ready[0]);
    close(release[1]);
    child_reader(f->path, ready[1], release[0]);
  }
  close(ready[1]);
  close(release[0]);
  g_autofree char *last = read_lines(ready[0], 1);
  close(ready[0]);
  g_assert_cmpstr(last, ==, "ready");

  store = open_ok(f->path, SIEVE_STORE_WRITE);
  for (gint64 i = 1; i < trials; i++)
    g_assert_true(commit_trial(store, i, &error));
  g_assert_no_error(error);
  sieve_store_close(store);

  /* The reader is still open: the -wal stays, emptied. */
  g_autofree char *wal = g_strconcat(f->path, "-wal", NULL);
  GStatBuf st;
  g_assert_cmpint(g_stat(wal, &st), ==, 0);
  g_assert_cmpint(st.st_size, ==, 0);
  g_autofree char *copy = g_build_filename(f->dir, "copy.sieve", NULL);
  g_autofree char *bytes = NULL;
  gsize size = 0;
  g_assert_true(g_file_get_contents(f->path, &bytes, &size, NULL));
  g_assert_true(g_file_set_contents(copy, bytes, (gssize) size, NULL));
  check_consistent(copy, trials);

  close(release[1]);
  int status = 0;
  g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
  g_assert_true(WIFEXITED(status));
  g_assert_cmpint(WEXITSTATUS(status), ==, 0);
}

/* ---- export ------------------------------------------------------------ */

static void
fill_export_study(const char *path)
{
  g_autoptr(SieveStore) store = open_ok(path, SIEVE_STORE_WRITE);
  GError *error = NULL;
  g_autoptr(SieveResult) a = sieve_result_new();
  sieve_result_set_metric(a, "val_acc", 91.2);
  sieve_result_set_metric(a, "params", 1200000);
  sieve_result_set_cost(a, 0.1);
  add_finished(store, "|nor_conv_3x3~0|+|skip_connect~0|none~1|", 200, a, 1700000000.25, 1700000001.5, 0, -1);

  /* HPO genotypes have commas; reasons quotes and line breaks. */
  g_autoptr(SieveResult) b = sieve_result_new();
  sieve_result_set_failed(b, "exit status 1: \"out of memory\"\nat line 2, col 3");
  sieve_result_set_metric(b, "loss", NAN);
  sieve_result_set_metric(b, "val_acc", -INFINITY);
  sieve_result_set_cost(b, 1.0 / 3.0);
  add_finished(store, "lr=0.1,layers=3", NAN, b, 1700000002, 1700000002.125, 1, -1);

  g_autoptr(SieveResult) c = sieve_result_new();
  sieve_result_set_status(c, SIEVE_STATUS_CACHED);
  sieve_result_set_metric(c, "val_acc", 91.2);
  sieve_result_set_metric(c, "weird,name", 1e-7);
  add_finished(store, "|nor_conv_3x3~0|+|skip_connect~0|none~1|", 200, c, 1700000003, 1700000003, 0, 0);
  for (gint64 n = 0; n <= 2; n += 2)
    g_assert_true(sieve_store_set_trial_hash(store, n, "functional", "0123456789abcdef0123456789abcdef", &error));

  g_assert_true(sieve_store_begin(store, &error));
  g_assert_cmpint(sieve_store_add_trial(store, "tab\there \\ \"q\" é", 12, &error), ==, 3);
  g_assert_true(sieve_store_commit(store, &error));
  g_assert_no_error(error);
}

static char *
export_text(const char *path, SieveExportFormat format)
{
  GError *error = NULL;
  g_autoptr(SieveStore) store = open_ok(path, SIEVE_STORE_READ);
  g_autoptr(GOutputStream) out = g_memory_output_stream_new_resizable();
  g_assert_true(sieve_store_export(store, format, out, &error));
  g_assert_no_error(error);
  g_assert_true(g_output_stream_write_all(out, "", 1, NULL, NULL, NULL)); /* NUL */
  g_assert_true(g_output_stream_close(out, NULL, NULL));
  return g_memory_output_stream_steal_data(G_MEMORY_OUTPUT_STREAM(out));
}

static void
test_export_csv(Fixture *f, gconstpointer data)
{
  fill_export_study(f->path);
  g_autofree char *text = export_text(f->path, SIEVE_EXPORT_CSV);
  g_assert_cmpstr(text, ==,
                  "number,status,genotype,fidelity,val_acc,params,loss,\"weird,name\",cost_s,started,finished,worker,"
                  "hash_kind,hash,cached_from,reason\n"
                  "0,ok,|nor_conv_3x3~0|+|skip_connect~0|none~1|,200,91.2,1200000,,,0.1,1700000000.25,1700000001.5,0,"
                  "functional,0123456789abcdef0123456789abcdef,,\n"
                  "1,failed,\"lr=0.1,layers=3\",,-inf,,nan,,0.3333333333333333,1700000002,1700000002.125,1,,,,"
                  "\"exit status 1: \"\"out of memory\"\"\nat line 2, col 3\"\n"
                  "2,cached,|nor_conv_3x3~0|+|skip_connect~0|none~1|,200,91.2,,,1e-07,0,1700000003,1700000003,0,"
                  "functional,0123456789abcdef0123456789abcdef,0,\n"
                  "3,pending,\"tab\there \\ \"\"q\"\" é\",12,,,,,0,,,,,,,\n");
}

static void
test_export_json(Fixture *f, gconstpointer data)
{
  fill_export_study(f->path);
  g_autofree char *text = export_text(f->path, SIEVE_EXPORT_JSON);
  g_assert_cmpstr(
      text, ==,
      "[\n"
      "{\"number\":0,\"status\":\"ok\",\"genotype\":\"|nor_conv_3x3~0|+|skip_connect~0|none~1|\",\"fidelity\":200,"
      "\"metrics\":{\"val_acc\":91.2,\"params\":1200000},\"cost_s\":0.1,\"started\":1700000000.25,"
      "\"finished\":1700000001.5,\"worker\":0,\"hash_kind\":\"functional\","
      "\"hash\":\"0123456789abcdef0123456789abcdef\",\"cached_from\":null,\"reason\":null},\n"
      "{\"number\":1,\"status\":\"failed\",\"genotype\":\"lr=0.1,layers=3\",\"fidelity\":null,"
      "\"metrics\":{\"loss\":\"nan\",\"val_acc\":\"-inf\"},\"cost_s\":0.3333333333333333,\"started\":1700000002,"
      "\"finished\":1700000002.125,\"worker\":1,\"hash_kind\":null,\"hash\":null,\"cached_from\":null,"
      "\"reason\":\"exit status 1: \\\"out of memory\\\"\\nat line 2, col 3\"},\n"
      "{\"number\":2,\"status\":\"cached\",\"genotype\":\"|nor_conv_3x3~0|+|skip_connect~0|none~1|\",\"fidelity\":200,"
      "\"metrics\":{\"val_acc\":91.2,\"weird,name\":1e-07},\"cost_s\":0,\"started\":1700000003,"
      "\"finished\":1700000003,\"worker\":0,\"hash_kind\":\"functional\","
      "\"hash\":\"0123456789abcdef0123456789abcdef\",\"cached_from\":0,\"reason\":null},\n"
      "{\"number\":3,\"status\":\"pending\",\"genotype\":\"tab\\there \\\\ \\\"q\\\" é\",\"fidelity\":12,"
      "\"metrics\":{},\"cost_s\":0,\"started\":null,\"finished\":null,\"worker\":null,\"hash_kind\":null,"
      "\"hash\":null,\"cached_from\":null,"
      "\"reason\":null}\n"
      "]\n");
}

static void
test_export_empty(Fixture *f, gconstpointer data)
{
  sieve_store_close(open_ok(f->path, SIEVE_STORE_WRITE));
  g_autofree char *csv = export_text(f->path, SIEVE_EXPORT_CSV);
  g_assert_cmpstr(csv, ==,
                  "number,status,genotype,fidelity,cost_s,started,finished,worker,hash_kind,hash,cached_from,reason\n");
  g_autofree char *json = export_text(f->path, SIEVE_EXPORT_JSON);
  g_assert_cmpstr(json, ==, "[]\n");
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  TEST("/store/create-reopen", test_create_reopen);
  TEST("/store/missing", test_missing);
  TEST("/store/not-a-store", test_not_a_store);
  TEST("/store/newer-schema", test_newer_schema);
  TEST("/store/schema/v2-to-v3", test_v2_to_v3);
  TEST("/store/weights/prune-by-fidelity", test_prune_weights_by_fidelity);
  TEST("/store/schema/v3-to-v4", test_v3_to_v4);
  TEST("/store/trials", test_trials);
  TEST("/store/metrics-round-trip", test_metrics_round_trip);
  TEST("/store/read-only", test_read_only);
  TEST("/store/reader-paths", test_reader_paths);
  TEST("/store/state", test_state);
  TEST("/store/cache", test_cache);
  TEST("/store/busy", test_busy);
  TEST("/store/kill-after-commit", test_kill_after_commit);
  TEST("/store/kill-during-writes", test_kill_during_writes);
  TEST("/store/reader-at-close", test_reader_at_close);
  TEST("/store/export-csv", test_export_csv);
  TEST("/store/export-json", test_export_json);
  TEST("/store/export-empty", test_export_empty);
  return g_test_run();
}
