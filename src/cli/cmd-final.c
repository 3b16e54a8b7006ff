/* sieve final STORE [--best K | --trial N] [--epochs E] [--set evaluator.KEY=V]...
 *
 * Trains chosen trials of a study again at full budget (the evaluator's
 * own epochs, or --epochs) with the study's evaluator settings, keeps each
 * one's weights, and stores each outcome as a final record linked to its
 * trial, apart from the search's trials.
 *
 * Resume: the finals to run are stored as pending, all in one transaction,
 * before the first training starts; each outcome is stored with its
 * weights in one transaction.  Running the same command again after a
 * kill trains what is still pending and nothing twice (a final counts as
 * the same when it has the same trial, epochs and --set settings). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli-private.h"
#include "core/core-private.h"
#include "engine/engine-private.h"
#include "lua/lua-private.h"

static void
on_report(gpointer user_data, const SieveCandidate *candidate, const char *text, double fraction)
{
  sieve_progress_activity(user_data, sieve_candidate_get_trial(candidate), text);
}

/* A final training to run: its number among the finals, and its trial. */
typedef struct {
  gint64 final, trial;
} FinalJob;

/* Whether f ran (or is to run) with these evaluator overrides and epochs:
 * the same request again resumes it rather than training anew. */
static gboolean
same_settings(const SieveFinal *f, const char *settings, double epochs)
{
  return g_strcmp0(f->settings, settings) == 0 && (isnan(f->epochs) ? isnan(epochs) : f->epochs == epochs);
}

/* Fails the jobs' finals that an earlier run left pending with settings
 * the evaluator refuses (reason): a final the same request can never train
 * is failed with its reason, not pending forever. */
static gboolean
fail_pending(SieveStore *store, GArray *jobs, const char *reason)
{
  GError *error = NULL;
  g_autoptr(SieveResult) result = sieve_result_new();
  sieve_result_set_failed(result, "%s", reason);
  double now = g_get_real_time() / 1e6;
  if (!sieve_store_begin(store, &error))
    goto fail;
  for (guint i = 0; i < jobs->len; i++) {
    gint64 final = g_array_index(jobs, FinalJob, i).final;
    if (final >= 0 && !sieve_store_finish_final(store, final, result, now, now, &error)) {
      sieve_store_rollback(store);
      goto fail;
    }
  }
  if (sieve_store_commit(store, &error))
    return TRUE;
  sieve_store_rollback(store);
fail:
  g_error_free(error);
  return FALSE;
}

/* The store at path opened in mode, with the study's config (*config,
 * transfer full); NULL with error when it cannot be opened or holds no
 * study. (transfer full) */
static SieveStore *
open_study(const char *path, SieveStoreMode mode, char **config, GError **error)
{
  g_autoptr(SieveStore) store = sieve_store_open(path, mode, error);
  if (store == NULL)
    return NULL;
  GError *local = NULL;
  *config = sieve_store_get_meta(store, "config", &local);
  if (*config == NULL) {
    if (local == NULL)
      g_set_error(&local, SIEVE_ERROR, SIEVE_ERROR_STORE, "%s: holds no study", path);
    g_propagate_error(error, local);
    return NULL;
  }
  return g_steal_pointer(&store);
}

int
sieve_cmd_final(int argc, char **argv)
{
  g_autofree char *best_text = NULL, *trial_text = NULL, *epochs_given = NULL;
  gint64 best = 0;
  gint64 trial = -1;
  double epochs = NAN;
  gboolean quiet = FALSE;
  g_auto(GStrv) sets = NULL;
  GOptionEntry entries[] = {
      {"best", 'k', 0, G_OPTION_ARG_STRING, &best_text, "train the K best trials by the objective (default 1)", "K"},
      {"trial", 0, 0, G_OPTION_ARG_STRING, &trial_text, "train trial N", "N"},
      {"epochs", 'e', 0, G_OPTION_ARG_STRING, &epochs_given, "epochs (default: the evaluator's full budget)", "E"},
      {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &sets, "override an evaluator option, e.g. --set evaluator.lr=0.05",
       "evaluator.KEY=VALUE"},
      {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "no progress on stderr", NULL},
      {NULL},
  };
  g_autoptr(GOptionContext) context = g_option_context_new("STORE - train a study's best candidates at full budget");
  g_option_context_add_main_entries(context, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(context, &argc, &argv, &error))
    return sieve_cli_fail(error);
  if (!sieve_cli_parse_int("--best", best_text, 1, G_MAXINT, &best, &error) ||
      !sieve_cli_parse_int("--trial", trial_text, 0, G_MAXINT64, &trial, &error) ||
      !sieve_cli_parse_double("--epochs", epochs_given, 0, TRUE, INFINITY, &epochs, &error))
    return sieve_cli_fail(error);
  if (argc != 2 || (best > 0 && trial >= 0)) {
    fprintf(stderr, "sieve final: expected STORE [--best K | --trial N] [--epochs E] (see 'sieve final --help')\n");
    return SIEVE_EXIT_USAGE;
  }
  for (guint i = 0; sets && sets[i]; i++)
    if (!g_str_has_prefix(sets[i], "evaluator.") || !strchr(sets[i], '=')) {
      fprintf(stderr, "sieve final: --set %s: only evaluator.KEY=VALUE may change\n", sets[i]);
      return SIEVE_EXIT_USAGE;
    }
  /* --epochs is evaluator.epochs: with a --set of it too, the training
   * would run one and the final's settings record the other. */
  for (guint i = 0; epochs_given != NULL && sets && sets[i]; i++)
    if (g_str_has_prefix(sets[i], "evaluator.epochs=")) {
      g_autofree char *flag = g_strdup_printf("--epochs %s", epochs_given);
      sieve_cli_set_both_error(&error, flag, sets[i], "evaluator", "epochs");
      return sieve_cli_fail(error);
    }
  if (best == 0 && trial < 0)
    best = 1;
  const char *path = argv[1];
  /* Read first, as export and report read it: opened for writing, a file
   * that is no study (an empty one) would get a store's tables before it
   * was refused. */
  g_autofree char *config = NULL;
  {
    g_autoptr(SieveStore) probe = open_study(path, SIEVE_STORE_READ, &config, &error);
    if (probe == NULL)
      return sieve_cli_fail(error);
    g_clear_pointer(&config, g_free);
  }
  g_autoptr(SieveStore) store = open_study(path, SIEVE_STORE_WRITE, &config, &error);
  if (store == NULL)
    return sieve_cli_fail(error);
  /* The study's evaluator, its options overridden, weights kept. */
  g_autoptr(GPtrArray) overrides = g_ptr_array_new();
  for (guint i = 0; sets && sets[i]; i++) {
    /* Not overridden in silence: a final is trained for its weights. */
    if (g_str_has_prefix(sets[i], "evaluator.keep_weights=") && !g_str_equal(sets[i], "evaluator.keep_weights=all")) {
      fprintf(stderr, "sieve final: --set %s: a final always keeps its weights (what `sieve model export --final` "
              "writes); leave keep_weights out\n", sets[i]);
      return SIEVE_EXIT_USAGE;
    }
    g_ptr_array_add(overrides, sets[i]);
  }
  g_ptr_array_add(overrides, (gpointer) "evaluator.keep_weights=all");
  /* --epochs is the full budget of this training (the evaluator's fidelity
   * range ends there), not a fidelity inside the search's range. */
  char epochs_text[SIEVE_TEXT_DOUBLE_SIZE];
  g_autofree char *epochs_set =
      isnan(epochs) ? NULL : g_strdup_printf("evaluator.epochs=%s", sieve_text_format_double_buf(epochs, epochs_text));
  if (epochs_set)
    g_ptr_array_add(overrides, epochs_set);
  g_ptr_array_add(overrides, NULL);
  g_autofree char *dir = sieve_cli_study_dir(store);
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  g_autoptr(GPtrArray) refused = g_ptr_array_new_with_free_func((GDestroyNotify)g_error_free);
  sieve_registry_load_default(registry, NULL, refused);
  g_autoptr(SieveExperiment) exp = sieve_lua_experiment_load_string(
      config, path, dir, (const char *const *)overrides->pdata, registry, refused, &error);
  sieve_cli_warn_refused(refused);
  if (exp == NULL) {
    /* The refused option is the one added above, not one the user wrote:
     * say what it means instead. */
    if (g_str_has_prefix(error->message, "--set evaluator.keep_weights=all:")) {
      g_autoptr(SieveExperiment) plain =
          sieve_lua_experiment_load_string(config, path, dir, NULL, registry, NULL, NULL);
      const char *name = plain ? sieve_component_get_name(plain->evaluator.component) : "?";
      g_clear_error(&error);
      g_set_error(&error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                  "%s: the study's evaluator '%s' keeps no weights; sieve final trains candidates again with an "
                  "evaluator that does (train)", path, name);
    }
    return sieve_cli_fail(error);
  }

  /* Which trials. */
  g_autoptr(GPtrArray) trials = sieve_store_list_trials(store, FALSE, &error);
  if (trials == NULL)
    return sieve_cli_fail(error);
  g_autoptr(GPtrArray) chosen = g_ptr_array_new();
  if (trial >= 0) {
    if (trial >= (gint64)trials->len) {
      g_set_error(&error, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND, "%s: no trial %" G_GINT64_FORMAT " (it has %u)", path,
                  trial, trials->len);
      return sieve_cli_fail(error);
    }
    g_ptr_array_add(chosen, trials->pdata[trial]);
  } else {
    /* The summary's ranking: in a multi-fidelity study each configuration
     * once, at the highest fidelity it reached (not a lucky low rung, nor
     * one configuration twice). */
    g_autoptr(GArray) ranked = sieve_trials_rank(trials, exp->objectives[0].metric, exp->objectives[0].maximize, NULL);
    /* Each network once at one fidelity too: a genotype proposed twice (random
     * search with repeats) was trained twice, the same network. */
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < ranked->len && chosen->len < (guint)best; i++) {
      SieveTrial *t = trials->pdata[g_array_index(ranked, guint, i)];
      if (g_hash_table_add(seen, t->genotype))
        g_ptr_array_add(chosen, t);
    }
    if (chosen->len == 0) {
      g_set_error(&error, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND, "%s: no finished trial to train again", path);
      return sieve_cli_fail(error);
    }
  }
  g_autofree char *settings = sets ? g_strjoinv("\n", sets) : g_strdup("");

  /* The finals to run: pending ones of this selection first (a killed
   * run), new ones stored as pending before any training. */
  g_autoptr(GPtrArray) finals = sieve_store_list_finals(store, &error);
  if (finals == NULL)
    return sieve_cli_fail(error);
  /* The finals still to train: those a kill left pending (final >= 0) and
   * new ones (final -1, stored below). */
  g_autoptr(GArray) to_train = g_array_new(FALSE, FALSE, sizeof(FinalJob));
  gint64 already = 0;
  for (guint i = 0; i < chosen->len; i++) {
    const SieveTrial *t = chosen->pdata[i];
    const SieveFinal *same = NULL;
    for (guint j = 0; j < finals->len && !same; j++) {
      const SieveFinal *f = finals->pdata[j];
      if (f->trial == t->number && same_settings(f, settings, epochs))
        same = f;
    }
    if (same && same->status != SIEVE_STATUS_PENDING) {
      already++;
      continue;
    }
    FinalJob job = {same ? same->number : -1, t->number};
    g_array_append_val(to_train, job);
  }

  /* The evaluator before anything is stored: settings it refuses (--set
   * evaluator.batch_size larger than the data) leave no final pending. */
  g_autoptr(SieveSpace) space = sieve_space_new(exp->space.component, exp->space.options, &error);
  if (space == NULL)
    return sieve_cli_fail(error);
  g_autoptr(SieveEvaluator) evaluator =
      to_train->len ? sieve_evaluator_new(exp->evaluator.component, space, exp->evaluator.options, &error) : NULL;
  if (to_train->len && evaluator == NULL) {
    /* Refused at one of this request's own --set settings (the error
     * starts there), which are part of a final's identity: finals an
     * earlier run left pending with them can never train.  Only a CONFIG
     * error repeats for sure: a file's (a data folder gone, even one a
     * --set names) has its own code and may pass, as may a refusal at the
     * study's own file; those finals stay pending. */
    if (g_error_matches(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG) && g_str_has_prefix(error->message, "--set ") &&
        !fail_pending(store, to_train, error->message))
      fprintf(stderr, "sieve: warning: the refused finals could not be marked failed\n");
    return sieve_cli_fail(error);
  }
  if (!sieve_store_begin(store, &error))
    return sieve_cli_fail(error);
  for (guint i = 0; i < to_train->len; i++) {
    FinalJob *job = &g_array_index(to_train, FinalJob, i);
    if (job->final >= 0)
      continue;
    const SieveTrial *t = trials->pdata[job->trial];
    if ((job->final = sieve_store_add_final(store, t->number, t->genotype, epochs, settings, &error)) < 0) {
      sieve_store_rollback(store);
      return sieve_cli_fail(error);
    }
  }
  if (!sieve_store_commit(store, &error)) {
    sieve_store_rollback(store);
    return sieve_cli_fail(error);
  }

  const SieveObjective *objective = &exp->objectives[0];
  g_autoptr(SieveProgress) progress =
      sieve_progress_new(quiet ? NULL : stderr, !quiet && isatty(STDERR_FILENO), (gint64)(to_train->len + already), already,
                         objective->metric, objective->maximize);
  /* Its lines name the trial trained again, not the final's own number
   * (the table below has both). */
  sieve_progress_set_noun(progress, "final of trial");
  if (!quiet)
    sieve_progress_message(progress, "final training of %u trial%s (%" G_GINT64_FORMAT " done before), epochs %s",
                           to_train->len, to_train->len == 1 ? "" : "s", already,
                           isnan(epochs) ? "as the evaluator's full budget" : sieve_text_format_double_buf(epochs,
                                                                                          (char[SIEVE_TEXT_DOUBLE_SIZE]){0}));
  int status = SIEVE_EXIT_OK;
  for (guint i = 0; i < to_train->len; i++) {
    gint64 number = g_array_index(to_train, FinalJob, i).final;
    const SieveTrial *t = trials->pdata[g_array_index(to_train, FinalJob, i).trial];
    g_autoptr(SieveGenotype) g = sieve_space_parse(space, t->genotype, &error);
    if (g == NULL)
      return sieve_cli_fail(error);
    g_autoptr(SieveCandidate) candidate = sieve_candidate_new(g_steal_pointer(&g), NAN);
    /* The trial's number: what an evaluator's messages and the progress
     * name; the outcome is stored under the final's own number. */
    sieve_candidate_set_trial(candidate, t->number);
    if (!quiet)
      sieve_candidate_set_report_func(candidate, on_report, progress);
    double started = g_get_real_time() / 1e6;
    g_autoptr(SieveResult) result = sieve_evaluator_evaluate(evaluator, candidate, &error);
    if (result == NULL)
      return sieve_cli_fail(error);
    double finished = g_get_real_time() / 1e6;
    GBytes *weights = sieve_result_get_weights(result, NULL);
    gboolean ok = sieve_result_get_status(result) == SIEVE_STATUS_OK;
    if (!sieve_store_begin(store, &error) ||
        !sieve_store_finish_final(store, number, result, started, finished, &error) ||
        (ok && weights && !sieve_store_put_weights(store, "final", number, weights, &error)) ||
        !sieve_store_commit(store, &error)) {
      sieve_store_rollback(store);
      return sieve_cli_fail(error);
    }
    if (!ok)
      status = SIEVE_EXIT_FAILURE;
    sieve_progress_trial(progress, t->number, sieve_result_get_status(result), sieve_engine_objective(exp, result),
                         t->genotype, sieve_result_get_cost(result), sieve_result_get_reason(result));
  }
  sieve_progress_end(progress);

  /* What the finals of this selection reached, beside the search's figure. */
  g_autoptr(GPtrArray) now = sieve_store_list_finals(store, &error);
  if (now == NULL)
    return sieve_cli_fail(error);
  printf("%-6s %-6s %12s %12s  %s\n", "final", "trial", "search", "final", objective->metric);
  gboolean missing = FALSE; /* a final ok without the objective: no validation split */
  for (guint j = 0; j < now->len; j++) {
    const SieveFinal *f = now->pdata[j];
    gboolean mine = FALSE;
    for (guint i = 0; i < chosen->len; i++)
      mine |= ((SieveTrial *)chosen->pdata[i])->number == f->trial;
    if (!mine || !same_settings(f, settings, epochs))
      continue;
    const SieveTrial *t = trials->pdata[f->trial];
    double search = sieve_engine_objective(exp, t->result), final = sieve_engine_objective(exp, f->result);
    char a[32] = "-", b[32] = "-";
    if (!isnan(search))
      g_snprintf(a, sizeof a, "%.6g", search);
    if (!isnan(final))
      g_snprintf(b, sizeof b, "%.6g", final);
    missing |= isnan(final) && f->status == SIEVE_STATUS_OK;
    printf("%-6" G_GINT64_FORMAT " %-6" G_GINT64_FORMAT " %12s %12s  %s\n", f->number, f->trial, a, b,
           f->status == SIEVE_STATUS_OK ? "ok" : sieve_status_to_string(f->status));
  }
  if (missing)
    printf("(-: the final reported no %s, e.g. with no validation split (evaluator.validation=0); its other "
           "metrics: sieve export %s --finals)\n",
           objective->metric, path);
  return status;
}
