/* sieve: opening a study in its store: the metadata of a new one, or the
 * check that a resumed one is the same experiment. */
#include <string.h>

#include "engine/engine-private.h"
#include "store/store-private.h"

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

/* Appends changes (sieve__study_key_script_changes' lines) to the meta
 * `script_changes`, each with the time: the study's history of its
 * scripts, what a reader of its results needs to know.  (in a transaction) */
static gboolean
record_script_changes(SieveStore *store, GPtrArray *changes, GError **error)
{
  GError *local = NULL;
  g_autofree char *before = sieve_store_get_meta(store, "script_changes", &local);
  if (local != NULL) {
    g_propagate_error(error, local);
    return FALSE;
  }
  g_autoptr(GDateTime) now = g_date_time_new_now_utc();
  g_autofree char *time = g_date_time_format_iso8601(now);
  GString *history = g_string_new(before);
  for (guint i = 0; i < changes->len; i++)
    g_string_append_printf(history, "%s\t%s\n", time, (const char *) changes->pdata[i]);
  g_autofree char *text = g_string_free(history, FALSE);
  return sieve_store_set_meta(store, "script_changes", text, error);
}

/* "lua.load[0] (/x/opt.lua)", for what was accepted. (transfer full) */
static char *
describe_changes(GPtrArray *changes)
{
  GString *out = g_string_new(NULL);
  for (guint i = 0; i < changes->len; i++) {
    g_auto(GStrv) parts = g_strsplit(changes->pdata[i], "\t", 4);
    g_string_append_printf(out, "%s%s (%s, sha256 %.12s... now %.12s...)", i ? ", " : "", parts[0], parts[3], parts[1],
                           parts[2]);
  }
  return g_string_free(out, FALSE);
}

/* A lua.load script may register the space the study uses: accepted only
 * when every stored genotype still reads in the space it defines now, since
 * a space's script is part of what the stored trials mean (as a space
 * `file` is), and nothing is recorded before that is known. */
static gboolean
stored_trials_parse(SieveStore *store, const SieveExperiment *exp, GPtrArray *changes, GError **error)
{
  g_autoptr(SieveSpace) space = sieve_space_new(exp->space.component, exp->space.options, error);
  if (space == NULL)
    return FALSE;
  g_autoptr(GPtrArray) trials = sieve_store_list_trials(store, FALSE, error);
  g_autoptr(GPtrArray) finals = trials ? sieve_store_list_finals(store, error) : NULL;
  if (finals == NULL)
    return FALSE;
  for (guint i = 0; i < trials->len + finals->len; i++) {
    gboolean final = i >= trials->len;
    gint64 number = final ? ((SieveFinal *) finals->pdata[i - trials->len])->number
                          : ((SieveTrial *) trials->pdata[i])->number;
    const char *text = final ? ((SieveFinal *) finals->pdata[i - trials->len])->genotype
                             : ((SieveTrial *) trials->pdata[i])->genotype;
    g_autoptr(GError) local = NULL;
    g_autoptr(SieveGenotype) g = sieve_space_parse(space, text, &local);
    if (g == NULL) {
      g_autofree char *what = describe_changes(changes);
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE,
                  "%s: --accept-changed-scripts refused: with the changed %s, stored %s #%" G_GINT64_FORMAT
                  " '%s' no longer reads in space '%s' (%s); a script that defines the space is part of what the "
                  "stored trials mean, as a space `file` is: restore it, or start a new study",
                  sieve_store_get_path(store), what, final ? "final" : "trial", number, text,
                  sieve_component_get_name(exp->space.component), local->message);
      return FALSE;
    }
  }
  return TRUE;
}

gboolean
sieve_study_open(SieveStore *store, const SieveExperiment *exp, gboolean resume, GError **error)
{
  return sieve_study_open_full(store, exp, resume, FALSE, NULL, error);
}

/* Creates the study's metadata, or checks that the experiment is the one
 * already stored.  Nothing stored is changed when the check fails. */
gboolean
sieve_study_open_full(SieveStore *store, const SieveExperiment *exp, gboolean resume, gboolean accept_changed_scripts,
                      char **accepted, GError **error)
{
  if (accepted != NULL)
    *accepted = NULL;
  g_autofree char *identity = sieve_experiment_identity(exp);
  g_autofree char *key = sieve__study_key(exp);
  GError *local = NULL;
  g_autofree char *stored = sieve_store_get_meta(store, "identity", &local);
  g_autofree char *stored_key = local ? NULL : sieve_store_get_meta(store, "study_key", &local);
  if (local != NULL) {
    g_propagate_error(error, local);
    return FALSE;
  }
  /* The study's keys gone with its rows still there (meta emptied by
   * hand): writing another study into it would mix the two. */
  const char *filled = NULL;
  if (stored == NULL && !sieve__store_first_filled_table(store, &filled, error))
    return FALSE;
  g_autofree char *lua_key = filled != NULL ? sieve_store_get_meta(store, "lua_study_key", NULL) : NULL;
  if (lua_key != NULL) {
    /* Not damaged: a study a script made, which has no config to run. */
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE,
                "%s holds a study a Lua script made (sieve.study, %" G_GINT64_FORMAT " trials), which a config "
                "cannot continue: the script that made it can (sieve.study with the same store); give another "
                "--store",
                sieve_store_get_path(store), sieve_store_count_trials(store, -1, NULL));
    return FALSE;
  }
  if (filled != NULL) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE,
                "%s: corrupt store: meta has no 'identity' but table '%s' holds rows (expected a study's meta "
                "with its rows, or an empty store); give another --store",
                sieve_store_get_path(store), filled);
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
  g_autofree char *diff = stored_key != NULL          ? sieve__study_key_difference(stored_key, key, FALSE)
                          : stored != NULL && strcmp(stored, identity) != 0 ? first_difference(stored, identity)
                                                                             : NULL;
  /* A store keyed before the pruner went through its option table: the
   * same study when its key is the pruner as written, and keyed anew. */
  gboolean rekey = FALSE;
  if (diff != NULL && stored_key != NULL && exp->pruner != NULL) {
    g_autofree char *as_written = sieve__study_key_as_written(exp);
    g_autofree char *old_diff = sieve__study_key_difference(stored_key, as_written, FALSE);
    if (old_diff == NULL) {
      g_clear_pointer(&diff, g_free);
      rekey = TRUE;
    }
  }
  /* A script fixed after a bug (the user's own sampler or objective) is
   * what an Optuna user expects to continue from; but it may change what
   * later trials mean, so it takes the user's word, and the store keeps
   * the history. */
  g_autofree char *stored_config = diff != NULL && stored_key != NULL ? sieve_store_get_meta(store, "config", NULL) : NULL;
  g_autoptr(GPtrArray) script_changes =
      diff != NULL && stored_key != NULL ? sieve__study_key_script_changes(stored_key, key, stored_config, exp) : NULL;
  if (diff != NULL && accept_changed_scripts && script_changes == NULL && stored_key != NULL) {
    /* Say what the flag does not cover. */
    char *other = sieve__study_key_difference(stored_key, key, TRUE);
    if (other != NULL) {
      g_free(diff);
      diff = other;
    }
  }
  if (diff != NULL && !(script_changes != NULL && accept_changed_scripts)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE,
                "%s: the experiment differs from the study stored there (only budget, workers and report may "
                "change on --resume); first difference: %s%s",
                sieve_store_get_path(store), diff,
                script_changes == NULL ? ""
                                       : ". If the change is yours (a bug fixed), continue with --resume "
                                         "--accept-changed-scripts (in sieve.run: accept_changed_scripts = true): "
                                         "the stored trials stay as they are, the later ones run the new script, "
                                         "and the store records the change");
    return FALSE;
  }
  if (script_changes != NULL && !stored_trials_parse(store, exp, script_changes, error))
    return FALSE;
  if (!sieve_store_begin(store, error))
    return FALSE;
  gboolean ok = sieve_store_set_meta(store, "config", exp->text, error);
  if (ok && (stored_key == NULL || rekey || script_changes != NULL))
    ok = sieve_store_set_meta(store, "study_key", key, error);
  if (ok && script_changes != NULL)
    ok = record_script_changes(store, script_changes, error);
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
  if (accepted != NULL && script_changes != NULL)
    *accepted = describe_changes(script_changes);
  return TRUE;
}
