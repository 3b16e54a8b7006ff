/* sieve: opening a study in its store: the metadata of a new one, or the
 * check that a resumed one is the same experiment. */
#include <string.h>

#include "engine/engine-private.h"

/* The first line where two canonical configs differ, for the resume error. */
static char *
first_difference(const char *stored, const char *current)
{
  g_auto(GStrv) a = g_strsplit(stored, "\n", -1);
  g_auto(GStrv) b = g_strsplit(current, "\n", -1);
  for (guint i = 0;; i++) {
    if (a[i] == NULL || b[i] == NULL || strcmp(a[i], b[i]) != 0)
      return g_strdup_printf("stored: '%s', now: '%s'", a[i] ? a[i] : "(end)", b[i] ? b[i] : "(end)");
  }
}

/* Creates the study's metadata, or checks that the experiment is the one
 * already stored.  Nothing stored is changed when the check fails. */
gboolean
sieve_study_open(SieveStore *store, const SieveExperiment *exp, gboolean resume, GError **error)
{
  g_autofree char *identity = sieve_experiment_identity(exp);
  g_autofree char *key = sieve__study_key(exp);
  GError *local = NULL;
  g_autofree char *stored = sieve_store_get_meta(store, "identity", &local);
  g_autofree char *stored_key = local ? NULL : sieve_store_get_meta(store, "study_key", &local);
  if (local != NULL) {
    g_propagate_error(error, local);
    return FALSE;
  }
  if (stored != NULL && !resume) {
    gint64 n = sieve_store_count_trials(store, -1, NULL);
    g_autofree char *name = sieve_store_get_meta(store, "name", NULL);
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE,
                "%s already holds study '%s' (%" G_GINT64_FORMAT " trials); continue it with --resume, "
                "or give another --store",
                sieve_store_get_path(store), name ? name : "?", n);
    return FALSE;
  }
  /* A store written before the study key (sieve 2.1) is checked as it was,
   * on its canonical text, and gets the key on this first resume. */
  g_autofree char *diff = stored_key != NULL          ? sieve__study_key_difference(stored_key, key)
                          : stored != NULL && strcmp(stored, identity) != 0 ? first_difference(stored, identity)
                                                                             : NULL;
  /* A store keyed before the pruner went through its option table: the
   * same study when its key is the pruner as written, and keyed anew. */
  gboolean rekey = FALSE;
  if (diff != NULL && stored_key != NULL && exp->pruner != NULL) {
    g_autofree char *as_written = sieve__study_key_as_written(exp);
    g_autofree char *old_diff = sieve__study_key_difference(stored_key, as_written);
    if (old_diff == NULL) {
      g_clear_pointer(&diff, g_free);
      rekey = TRUE;
    }
  }
  if (diff != NULL) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE,
                "%s: the experiment differs from the study stored there (only budget, workers and report may "
                "change on --resume); first difference: %s",
                sieve_store_get_path(store), diff);
    return FALSE;
  }
  if (!sieve_store_begin(store, error))
    return FALSE;
  gboolean ok = sieve_store_set_meta(store, "config", exp->text, error);
  if (ok && (stored_key == NULL || rekey))
    ok = sieve_store_set_meta(store, "study_key", key, error);
  if (ok && stored == NULL) {
    g_autofree char *seed = g_strdup_printf("%" G_GUINT64_FORMAT, exp->seed);
    g_autoptr(GDateTime) now = g_date_time_new_now_utc();
    g_autofree char *created = g_date_time_format_iso8601(now);
    ok = sieve_store_set_meta(store, "identity", identity, error) &&
         sieve_store_set_meta(store, "name", exp->name, error) &&
         sieve_store_set_meta(store, "config_path", exp->path, error) &&
         sieve_store_set_meta(store, "config_dir", exp->dir, error) &&
         sieve_store_set_meta(store, "seed", seed, error) &&
         sieve_store_set_meta(store, "objective", exp->objectives[0].metric, error) &&
         sieve_store_set_meta(store, "direction", exp->objectives[0].maximize ? "maximize" : "minimize", error) &&
         sieve_store_set_meta(store, "created", created, error) &&
         sieve_store_set_meta(store, "sieve_version", sieve_version_string(), error);
  }
  if (!ok || !sieve_store_commit(store, error)) {
    sieve_store_rollback(store);
    return FALSE;
  }
  return TRUE;
}
