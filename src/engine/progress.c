/* sieve: the progress display of a running study (one status line on a
 * terminal, a line per trial and every few seconds in a log). */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "engine/engine-private.h"

struct _SieveProgress {
  FILE *out;
  gboolean interactive;
  gint64 budget;
  gint64 done;     /* evaluations finished, all runs */
  gint64 this_run; /* evaluations finished in this run */
  gint64 n_ok, n_failed;       /* all runs */
  gint64 n_cached, n_screened; /* all runs */
  gint64 n_rejected;           /* all runs: broke a constraint */
  char *objective;
  gboolean maximize;
  gint64 best_number;
  double best;
  double best_fidelity; /* the incumbent's fidelity, NAN: none (a study without one) */
  gboolean told_best; /* the best comes from sieve_progress_set_best only */
  gint64 start;     /* monotonic us */
  gint64 last_draw; /* monotonic us */
  gboolean line_open;
  GMutex lock;      /* activity comes from worker threads */
  char *activity;   /* shown after the status line, NULL when none */
  gint64 last_activity_print;
  SieveProgressHook hook; /* after each finished proposal (nullable) */
  gpointer hook_data;
  char *noun; /* "trial", or what the caller's numbers count */
  FILE *notices; /* where notices go: out, also when quiet */
};

void
sieve_progress_set_noun(SieveProgress *progress, const char *noun)
{
  g_free(progress->noun);
  progress->noun = g_strdup(noun);
}

void
sieve_progress_set_quiet(SieveProgress *progress, gboolean quiet)
{
  if (quiet) {
    progress->out = NULL; /* what prints to out prints nothing */
    progress->interactive = FALSE;
  } else {
    progress->out = progress->notices;
  }
}

gboolean
sieve_progress_get_quiet(const SieveProgress *progress)
{
  return progress->out == NULL && progress->notices != NULL;
}

void
sieve_progress_set_hook(SieveProgress *progress, SieveProgressHook hook, gpointer data)
{
  progress->hook = hook;
  progress->hook_data = data;
}

/* Outside the lock: a hook may take its time (write a report). */
static void
call_hook(SieveProgress *progress)
{
  if (progress->hook != NULL)
    progress->hook(progress->hook_data);
}

SieveProgress *
sieve_progress_new(FILE *out, gboolean interactive, gint64 budget, gint64 already, const char *objective,
                   gboolean maximize)
{
  SieveProgress *p = g_new0(SieveProgress, 1);
  p->out = out;
  p->notices = out;
  p->interactive = interactive && out != NULL;
  p->budget = budget;
  p->done = already;
  p->objective = g_strdup(objective);
  p->noun = g_strdup("trial");
  p->maximize = maximize;
  p->best_number = -1;
  p->best = NAN;
  p->best_fidelity = NAN;
  p->start = g_get_monotonic_time();
  g_mutex_init(&p->lock);
  return p;
}

void
sieve_progress_free(SieveProgress *progress)
{
  if (progress == NULL)
    return;
  g_free(progress->objective);
  g_free(progress->noun);
  g_free(progress->activity);
  g_mutex_clear(&progress->lock);
  g_free(progress);
}

void
sieve_progress_set_best(SieveProgress *progress, gint64 number, double objective, double fidelity)
{
  g_mutex_lock(&progress->lock);
  progress->best_number = number;
  progress->best = objective;
  progress->best_fidelity = fidelity;
  progress->told_best = TRUE;
  g_mutex_unlock(&progress->lock);
}

static char *
format_duration(double seconds)
{
  if (!isfinite(seconds) || seconds < 0)
    return g_strdup("?");
  guint64 s = (guint64) llround(seconds);
  if (s >= 3600)
    return g_strdup_printf("%" G_GUINT64_FORMAT ":%02u:%02u", s / 3600, (guint) (s / 60 % 60), (guint) (s % 60));
  return g_strdup_printf("%u:%02u", (guint) (s / 60), (guint) (s % 60));
}

/* The rate as a person reads it: "12.5 trials/s" when trials are quick,
 * but "42.1 s/trial" once a trial takes longer than a second, where a
 * rate such as "0.0238 trials/s" would have to be inverted in the head.
 * Before the first trial of this run finishes there is no rate to show. */
static char *
format_rate(gint64 trials, double elapsed)
{
  if (trials <= 0 || !(elapsed > 0))
    return g_strdup("- s/trial");
  double rate = trials / elapsed;
  if (rate >= 1)
    return g_strdup_printf("%.3g trials/s", rate);
  return g_strdup_printf("%.3g s/trial", 1 / rate);
}

/* "0.8874 (#12)", or in a multi-fidelity study "0.8874 (#12 at fidelity
 * 1)": its best is the best at the highest fidelity reached, which may be
 * lower than an earlier best at a lower fidelity; the fidelity says why.
 * (transfer full) */
static char *
best_text(const SieveProgress *p)
{
  if (isnan(p->best_fidelity))
    return g_strdup_printf("%.6g (#%" G_GINT64_FORMAT ")", p->best, p->best_number);
  return g_strdup_printf("%.6g (#%" G_GINT64_FORMAT " at fidelity %g)", p->best, p->best_number, p->best_fidelity);
}

static void
draw(SieveProgress *p)
{
  double elapsed = (g_get_monotonic_time() - p->start) / 1e6;
  double rate = elapsed > 0 ? p->this_run / elapsed : 0;
  g_autofree char *shown = p->best_number >= 0 ? best_text(p) : NULL;
  g_autofree char *best = shown ? g_strconcat("best ", shown, NULL) : g_strdup("best -");
  g_autofree char *eta = NULL;
  if (p->budget > 0 && rate > 0)
    eta = format_duration((p->budget - p->done) / rate);
  g_autofree char *took = format_duration(elapsed);
  g_autofree char *shown_rate = format_rate(p->this_run, elapsed);
  g_autofree char *budget = p->budget > 0 ? g_strdup_printf("%" G_GINT64_FORMAT, p->budget) : g_strdup("-");
  g_autofree char *cached = p->n_cached > 0 ? g_strdup_printf(" cached %" G_GINT64_FORMAT, p->n_cached) : g_strdup("");
  g_autofree char *screened =
      p->n_screened > 0 ? g_strdup_printf(" screened %" G_GINT64_FORMAT, p->n_screened) : g_strdup("");
  g_autofree char *rejected =
      p->n_rejected > 0 ? g_strdup_printf(" rejected %" G_GINT64_FORMAT, p->n_rejected) : g_strdup("");
  fprintf(p->out, "\r\033[K[%" G_GINT64_FORMAT "/%s] %s | ok %" G_GINT64_FORMAT " failed %" G_GINT64_FORMAT
                  "%s%s%s | %s | %s elapsed%s%s%s%s",
          p->done, budget, best, p->n_ok, p->n_failed, cached, screened, rejected, shown_rate, took, eta ? ", ETA " : "",
          eta ? eta : "", p->activity ? " | " : "", p->activity ? p->activity : "");
  fflush(p->out);
  p->line_open = TRUE;
  p->last_draw = g_get_monotonic_time();
}

void
sieve_progress_activity(SieveProgress *p, gint64 trial, const char *text)
{
  g_mutex_lock(&p->lock);
  g_free(p->activity);
  p->activity = g_strdup_printf("#%" G_GINT64_FORMAT " %s", trial, text);
  gint64 now = g_get_monotonic_time();
  if (p->interactive) {
    if (now - p->last_draw > 100000)
      draw(p);
  } else if (p->out != NULL && now - p->last_activity_print > 5000000) {
    /* Logs get a line every few seconds, not one per batch. */
    fprintf(p->out, "  %s %s\n", p->noun, p->activity);
    fflush(p->out);
    p->last_activity_print = now;
  }
  g_mutex_unlock(&p->lock);
}

void
sieve_progress_trial(SieveProgress *progress, gint64 number, SieveStatus status, double objective,
                     const char *genotype, double cost, const char *reason)
{
  SieveProgress *p = progress;
  g_mutex_lock(&p->lock);
  g_clear_pointer(&p->activity, g_free);
  p->last_activity_print = 0;
  p->done++;
  p->this_run++;
  if (status == SIEVE_STATUS_FAILED)
    p->n_failed++;
  else if (status != SIEVE_STATUS_PRUNED)
    p->n_ok++;
  if (!p->told_best && !isnan(objective) &&
      (p->best_number < 0 || (p->maximize ? objective > p->best : objective < p->best))) {
    p->best = objective;
    p->best_number = number;
  }
  if (p->interactive) {
    /* Redraw at most ten times a second: fast evaluators finish thousands
     * of trials a second and the terminal must not be the bottleneck. */
    if (g_get_monotonic_time() - p->last_draw > 100000 || p->done == p->budget)
      draw(p);
    g_mutex_unlock(&p->lock);
    call_hook(p);
    return;
  }
  if (p->out == NULL) {
    g_mutex_unlock(&p->lock);
    call_hook(p);
    return;
  }
  g_autofree char *budget = p->budget > 0 ? g_strdup_printf("/%" G_GINT64_FORMAT, p->budget) : g_strdup("");
  if (status == SIEVE_STATUS_FAILED || status == SIEVE_STATUS_PRUNED)
    fprintf(p->out, "[%" G_GINT64_FORMAT "%s] %s %" G_GINT64_FORMAT " %s (%.3g s): %s | %s\n", p->done, budget,
            p->noun, number, sieve_status_to_string(status), cost, reason ? reason : "no reason given", genotype);
  else {
    g_autofree char *best = best_text(p);
    fprintf(p->out, "[%" G_GINT64_FORMAT "%s] %s %" G_GINT64_FORMAT " %s %s=%.6g (%.3g s) best=%s | %s\n", p->done,
            budget, p->noun, number, sieve_status_to_string(status), p->objective, objective, cost, best, genotype);
  }
  fflush(p->out);
  g_mutex_unlock(&p->lock);
  call_hook(p);
}

void
sieve_progress_set_counts(SieveProgress *progress, gint64 evaluations, gint64 ok, gint64 failed, gint64 cached,
                          gint64 screened)
{
  g_mutex_lock(&progress->lock);
  progress->done = evaluations;
  progress->n_ok = ok;
  progress->n_failed = failed;
  progress->n_cached = cached;
  progress->n_screened = screened;
  g_mutex_unlock(&progress->lock);
}

/* A proposal that needed no evaluation: counted, a line in logs, a redraw
 * now and then on a terminal. */
static void
note_unevaluated(SieveProgress *p, const char *line)
{
  if (p->interactive) {
    if (g_get_monotonic_time() - p->last_draw > 100000)
      draw(p);
    return;
  }
  if (p->out == NULL)
    return;
  g_autofree char *budget = p->budget > 0 ? g_strdup_printf("/%" G_GINT64_FORMAT, p->budget) : g_strdup("");
  fprintf(p->out, "[%" G_GINT64_FORMAT "%s] %s\n", p->done, budget, line);
  fflush(p->out);
}

void
sieve_progress_cached(SieveProgress *progress, gint64 number, gint64 original, const char *origin,
                      double objective, const char *genotype)
{
  g_mutex_lock(&progress->lock);
  progress->n_cached++;
  g_autofree char *run = origin ? g_strdup_printf(" (%s)", origin) : g_strdup("");
  g_autofree char *line =
      g_strdup_printf("trial %" G_GINT64_FORMAT " cached %s=%.6g from #%" G_GINT64_FORMAT "%s | %s", number,
                      progress->objective, objective, original, run, genotype);
  note_unevaluated(progress, line);
  g_mutex_unlock(&progress->lock);
  call_hook(progress);
}

void
sieve_progress_screened(SieveProgress *progress, gint64 number, double score, const char *genotype)
{
  g_mutex_lock(&progress->lock);
  progress->n_screened++;
  g_autofree char *line =
      g_strdup_printf("trial %" G_GINT64_FORMAT " screened (score %.4g) | %s", number, score, genotype);
  note_unevaluated(progress, line);
  g_mutex_unlock(&progress->lock);
  call_hook(progress);
}

void
sieve_progress_rejected(SieveProgress *progress, gint64 number, const char *reason, const char *genotype)
{
  g_mutex_lock(&progress->lock);
  progress->n_rejected++;
  g_autofree char *line = g_strdup_printf("trial %" G_GINT64_FORMAT " rejected (%s) | %s", number, reason, genotype);
  note_unevaluated(progress, line);
  g_mutex_unlock(&progress->lock);
  call_hook(progress);
}

void
sieve_progress_set_rejected(SieveProgress *progress, gint64 rejected)
{
  g_mutex_lock(&progress->lock);
  progress->n_rejected = rejected;
  g_mutex_unlock(&progress->lock);
}

/* Prints a line to out without garbling the status line. */
static void
print_line(SieveProgress *progress, FILE *out, const char *format, va_list ap)
{
  g_autofree char *text = g_strdup_vprintf(format, ap);
  if (progress->interactive && progress->line_open)
    fputs("\r\033[K", out);
  fprintf(out, "%s\n", text);
  if (progress->interactive && progress->line_open)
    draw(progress);
  fflush(out);
}

void
sieve_progress_message(SieveProgress *progress, const char *format, ...)
{
  if (progress->out == NULL)
    return;
  va_list ap;
  va_start(ap, format);
  print_line(progress, progress->out, format, ap);
  va_end(ap);
}

void
sieve_progress_notice(SieveProgress *progress, const char *format, ...)
{
  if (progress->notices == NULL)
    return;
  va_list ap;
  va_start(ap, format);
  print_line(progress, progress->notices, format, ap);
  va_end(ap);
}

void
sieve_progress_end(SieveProgress *progress)
{
  if (progress->interactive && progress->this_run > 0) {
    draw(progress);
    fputc('\n', progress->out);
    progress->line_open = FALSE;
  }
  if (progress->out != NULL)
    fflush(progress->out);
}
