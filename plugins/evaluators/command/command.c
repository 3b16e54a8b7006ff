/* sieve plugin: the `command` evaluator runs an external program per trial.
 *
 *   evaluator:
 *     plugin: command
 *     argv: [python3, train.py, --lr={lr}, --layers={layers}, --out=run-{trial}]
 *     stdin: json        # or give the parameters on stdin as one JSON object
 *     timeout: 600       # seconds; the program and its children are killed
 *     cwd: .             # default: the experiment file's folder
 *     env: {OMP_NUM_THREADS: 2, TRIAL: "{trial}"}
 *
 * Each argv item and each env value is a template: {genotype} (canonical
 * text), {trial} (number), {fidelity} (empty when the evaluator chooses),
 * {json} (the parameters as a JSON object) and {NAME} for each decision
 * (empty while inactive); {{ and }} are literal braces.  argv is run as is,
 * without a shell: write [sh, -c, "..."] for one.
 *
 * With stdin: json the program reads one line
 *   {"trial": 3, "genotype": "x1=0.5,x2=2", "fidelity": null, "params": {"x1": 0.5, "x2": 2}}
 * and end of file; otherwise its stdin is /dev/null.
 *
 * Output protocol: the LAST non-empty line the program writes on stdout,
 * progress lines (below) aside, must be a JSON object.  Its numeric members are the trial's metrics, in the
 * order written; true and false count as 1 and 0 (a flag such as
 * "diverged" can then be a metric); strings, arrays, objects and null are
 * ignored, except "status": "ok" | "failed" and "reason": "...", with which
 * a program reports a failed trial on purpose (its numeric members are kept).
 * NaN, Infinity and -Infinity, as Python's json module writes them, are read
 * as those numbers.
 * Anything else is a failed trial whose reason says what happened: a
 * non-zero exit status (with the last line of stderr), a signal, the
 * timeout, a missing or malformed last line, a program that cannot run.
 * A failed trial never stops the study.  cost = the program's wall time.
 *
 * Progress (intermediate values, for a pruner): before its last line the
 * program may write lines
 *   {"intermediate": {"step": 3, "value": 0.71}}
 * (optionally "fidelity": N beside them, the fidelity reached), one per
 * measurement, flushed as written (Python's output is made unbuffered:
 * PYTHONUNBUFFERED=1 unless the environment sets it to a value).  Each is
 * reported as the program writes it.  When the pruner decides the trial
 * should stop, the program's process group gets SIGTERM: it may end at
 * once (the default in Python) or catch it and exit soon; anything it
 * writes after that is ignored, and the trial is stored as pruned with the
 * last value it reported.  "fidelity" must be finite, >= 0 and at most the
 * evaluator's fidelity max; "value" may be NaN or +-Infinity (a diverged
 * training).  A line that begins with {"intermediate" but is not exactly of
 * that form (a member twice included), or that is meant as one (the first
 * key within two edits of "intermediate" or in Python's single quotes,
 * followed by an object with a "step" or "value" member: protocol.h) is a
 * failed trial whose reason quotes it (the program is stopped there too): a
 * typo must not be read as "no progress".  The progress line after a line
 * that could be the metrics line (a JSON object with a number, after the
 * first progress line: one before it is a log, a config printed first) is
 * held: if the program writes no other line after it, it has finished, and
 * it is neither reported nor able to stop it; the next line, of any kind
 * (a JSON log line was not the metrics), reports it then.  A last line
 * without its line end counts.  A program that prints only progress lines fails its trial.
 *
 * When the program exits, whatever it left running in its process group is
 * killed too, so a trial leaves no processes behind.
 */
#define _GNU_SOURCE
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include <sieve/candidate.h>
#include <sieve/component.h>
#include <sieve/evaluator.h>
#include <sieve/node.h>
#include <sieve/options.h>
#include <sieve/plugin.h>
#include <sieve/result.h>
#include <sieve/space.h>
#include <sieve/text.h>

#include "process.h"
#include "protocol.h"
#include "template.h"

static const char *const stdin_modes[] = {"none", "json", NULL};

static const SieveOptionSpec command_options[] = {
  {"argv", SIEVE_OPTION_TYPE_STRING_LIST, NULL, 0, 0, NULL,
   "the program and its arguments, each a template ({genotype} {trial} {fidelity} {json} {NAME})",
   SIEVE_OPTION_REQUIRED, {NULL}},
  SIEVE_OPTION_CHOICE("stdin", "none", stdin_modes,
                      "json: write {trial, genotype, fidelity, params} as one JSON object on the program's stdin"),
  /* At most 10^7 s (about 16 weeks): the deadline is counted in gint64
   * microseconds, which an infinite timeout overflowed. */
  SIEVE_OPTION_FLOAT("timeout", "0", 0, 1e7,
                     "seconds before the program and its children are killed and the trial fails (0: none)"),
  SIEVE_OPTION_PATH("cwd", ".", "folder the program runs in (default: the experiment file's folder)"),
  SIEVE_OPTION_NODE("env", "map of extra environment variables; the values are templates too"),
  SIEVE_OPTION_NODE("fidelity", "the fidelity the program accepts as {fidelity}: {name: epochs, min: 1, max: 81, "
                                "integer: true} (default: none)"),
  SIEVE_OPTION_END,
};

typedef struct {
  const SieveSpace *space;
  GPtrArray *argv;       /* CommandTemplate* */
  GPtrArray *env_names;  /* char* */
  GPtrArray *env_values; /* CommandTemplate* */
  char **base_env;       /* sieve's environment when the evaluator was made */
  gboolean stdin_json;
  double timeout;
  char *cwd;
  gboolean has_fidelity;
  SieveFidelity fidelity; /* name owned */
} Command;

static void
command_destroy(gpointer instance)
{
  Command *self = instance;
  if (self == NULL)
    return;
  g_clear_pointer(&self->argv, g_ptr_array_unref);
  g_clear_pointer(&self->env_names, g_ptr_array_unref);
  g_clear_pointer(&self->env_values, g_ptr_array_unref);
  g_strfreev(self->base_env);
  g_free(self->cwd);
  g_free((char *) self->fidelity.name);
  g_free(self);
}

static gboolean
parse_argv(Command *self, const SieveOptions *options, GError **error)
{
  const char *const *argv = sieve_options_get_strv(options, "argv");
  const SieveNode *where = sieve_options_node(options, "argv");
  if (argv == NULL || argv[0] == NULL) {
    sieve_options_set_error(options, "argv", error, "argv needs at least the program to run");
    return FALSE;
  }
  for (guint i = 0; argv[i]; i++) {
    g_autofree char *problem = NULL;
    CommandTemplate *tmpl = command_template_parse(argv[i], self->space, &problem);
    if (tmpl == NULL) {
      gboolean is_list = where != NULL && sieve_node_kind(where) == SIEVE_NODE_LIST;
      const SieveNode *item = is_list && i < sieve_node_size(where) ? sieve_node_nth(where, i) : where;
      sieve_node_set_error(error, item, "argv item %u '%s': %s", i + 1, argv[i], problem);
      return FALSE;
    }
    g_ptr_array_add(self->argv, tmpl);
  }
  return TRUE;
}

/* Environment names as POSIX shells accept them. */
static gboolean
valid_env_name(const char *name)
{
  if (!(g_ascii_isalpha(name[0]) || name[0] == '_'))
    return FALSE;
  for (const char *p = name; *p; p++)
    if (!(g_ascii_isalnum(*p) || *p == '_'))
      return FALSE;
  return TRUE;
}

static gboolean
parse_env(Command *self, const SieveOptions *options, GError **error)
{
  const SieveNode *env = sieve_options_get_node(options, "env");
  if (env == NULL || (sieve_node_kind(env) == SIEVE_NODE_SCALAR && sieve_node_is_null(env)))
    return TRUE;
  if (sieve_node_kind(env) != SIEVE_NODE_MAP) {
    sieve_node_set_error(error, env, "env must be a map of variable names to values");
    return FALSE;
  }
  for (guint i = 0; i < sieve_node_size(env); i++) {
    const SieveNode *key = sieve_node_nth_key(env, i);
    const SieveNode *value = sieve_node_nth(env, i);
    const char *name = sieve_node_text(key);
    if (!valid_env_name(name)) {
      sieve_node_set_error(error, key, "'%s' is not an environment variable name (letters, digits and _)", name);
      return FALSE;
    }
    if (sieve_node_kind(value) != SIEVE_NODE_SCALAR) {
      sieve_node_set_error(error, value, "the value of environment variable '%s' must be a scalar", name);
      return FALSE;
    }
    g_autofree char *problem = NULL;
    CommandTemplate *tmpl = command_template_parse(sieve_node_text(value), self->space, &problem);
    if (tmpl == NULL) {
      sieve_node_set_error(error, value, "environment variable '%s': %s", name, problem);
      return FALSE;
    }
    g_ptr_array_add(self->env_names, g_strdup(name));
    g_ptr_array_add(self->env_values, tmpl);
  }
  return TRUE;
}

static gpointer
command_create(const SieveSpace *space, const SieveOptions *options, GError **error)
{
  /* Initialise the parser's class here, once, rather than in the first
   * concurrent trials (GObject makes that safe, but race detectors such as
   * helgrind cannot tell, and would drown real reports). */
  g_object_unref(json_parser_new_immutable());

  Command *self = g_new0(Command, 1);
  self->space = space;
  self->argv = g_ptr_array_new_with_free_func((GDestroyNotify) command_template_free);
  self->env_names = g_ptr_array_new_with_free_func(g_free);
  self->env_values = g_ptr_array_new_with_free_func((GDestroyNotify) command_template_free);
  /* Progress must arrive as it is written, and Python writes to a pipe in
   * blocks: every line would come at the program's exit, after it ran to
   * its end, and a pruner's stop would turn the finished trial into a
   * pruned one.  So Python's output is unbuffered: PYTHONUNBUFFERED=1
   * unless sieve's environment sets it to something (Python reads an empty
   * value as unset, so that is set too); the experiment's env: may still
   * set it. */
  self->base_env = g_get_environ();
  const char *unbuffered = g_environ_getenv(self->base_env, "PYTHONUNBUFFERED");
  if (unbuffered == NULL || unbuffered[0] == '\0')
    self->base_env = g_environ_setenv(self->base_env, "PYTHONUNBUFFERED", "1", TRUE);
  self->stdin_json = strcmp(sieve_options_get_string(options, "stdin"), "json") == 0;
  self->timeout = sieve_options_get_double(options, "timeout");
  self->cwd = g_strdup(sieve_options_get_string(options, "cwd"));

  if (!parse_argv(self, options, error) || !parse_env(self, options, error)) {
    command_destroy(self);
    return NULL;
  }
  const SieveNode *fidelity = sieve_options_get_node(options, "fidelity");
  if (fidelity != NULL) {
    if (!sieve_fidelity_read(fidelity, &self->fidelity, error)) {
      command_destroy(self);
      return NULL;
    }
    self->has_fidelity = TRUE;
  }
  if (!g_file_test(self->cwd, G_FILE_TEST_IS_DIR)) {
    sieve_options_set_error(options, "cwd", error, "cwd '%s' is not a folder", self->cwd);
    command_destroy(self);
    return NULL;
  }
  return self;
}

/* ---- one trial ----------------------------------------------------------- */

static char *
stdin_payload(const Command *self, const SieveCandidate *candidate)
{
  GString *out = g_string_new(NULL);
  g_string_append_printf(out, "{\"trial\": %" G_GINT64_FORMAT ", \"genotype\": ", sieve_candidate_get_trial(candidate));
  sieve_json_append_string(out, sieve_candidate_get_text(candidate));
  double fidelity = sieve_candidate_get_fidelity(candidate);
  if (isnan(fidelity)) {
    g_string_append(out, ", \"fidelity\": null");
  } else {
    g_autofree char *text = sieve_text_format_double(fidelity);
    /* JSON has no inf: an infinite fidelity goes as null too. */
    g_string_append_printf(out, ", \"fidelity\": %s", isinf(fidelity) ? "null" : text);
  }
  g_autofree char *params = sieve_space_to_json(self->space, sieve_candidate_get_genotype(candidate));
  g_string_append_printf(out, ", \"params\": %s}\n", params);
  return g_string_free(out, FALSE);
}

static void
describe_exit(const CommandRun *run, const Command *self, SieveResult *result)
{
  switch (run->outcome) {
  case COMMAND_NOT_STARTED:
    sieve_result_set_failed(result, "%s", run->error_text);
    break;
  case COMMAND_TIMED_OUT: {
    g_autofree char *limit = sieve_text_format_double(self->timeout);
    sieve_result_set_failed(result, "timed out after %s s", limit);
    break;
  }
  case COMMAND_SIGNALED: {
    const char *what = sigdescr_np(run->status);
    sieve_result_set_failed(result, "killed by signal %d (%s)", run->status, what ? what : "unknown signal");
    break;
  }
  case COMMAND_EXITED:
    if (run->status == 0) {
      command_read_output(run->out, self->has_fidelity ? &self->fidelity : NULL, result);
    } else {
      g_autofree char *last = command_last_line(run->err);
      if (last != NULL) {
        g_autofree char *shown = command_quote(last);
        sieve_result_set_failed(result, "exited with status %d: %s", run->status, shown);
      } else {
        sieve_result_set_failed(result, "exited with status %d (nothing on stderr)", run->status);
      }
    }
    break;
  }
}

/* Progress lines as they come (the header's protocol).  The evaluator does
 * not know the objective's name, so any line that could be the metrics
 * line (a JSON object with a number) holds the progress line after it: if
 * the program ends there, it finished, and a pruner must not turn a
 * finished trial into a pruned one (in Optuna a trial whose objective
 * returned is COMPLETE).  The next line of any kind, a progress line
 * included (the program goes on training), shows it was a log line; the
 * held line is then reported, so JSON logs between progress lines leave
 * the pruner on, one line late. */
typedef struct {
  gint64 step;
  double fidelity, value;
} HeldProgress;

typedef struct {
  const SieveCandidate *candidate;
  const SieveFidelity *range; /* the evaluator's fidelity; NULL: none */
  char *problem; /* the first malformed progress line's reason */
  gboolean pruned;
  gboolean seen_progress; /* a progress line came */
  gboolean after_metrics; /* the last line could be the metrics line */
  gboolean holding;       /* held is the progress line after that line */
  HeldProgress held;
} Progress;

/* Reports one value; FALSE once the pruner says stop. */
static gboolean
report(Progress *progress, gint64 step, double fidelity, double value)
{
  if (!sieve_candidate_report_intermediate(progress->candidate, step, fidelity, value))
    progress->pruned = TRUE;
  return !progress->pruned;
}

/* Reports the held line, if any; FALSE once the pruner says stop. */
static gboolean
release(Progress *progress)
{
  if (!progress->holding)
    return TRUE;
  progress->holding = FALSE;
  return report(progress, progress->held.step, progress->held.fidelity, progress->held.value);
}

static gboolean
on_line(gpointer user_data, const char *line)
{
  Progress *progress = user_data;
  gint64 step;
  double fidelity, value;
  switch (command_read_progress_line(line, progress->range, &step, &fidelity, &value, &progress->problem)) {
  case COMMAND_LINE_OTHER: {
    g_autofree char *text = g_strstrip(g_strdup(line));
    if (text[0] == '\0')
      return TRUE;
    if (!release(progress))
      return FALSE;
    /* Before any progress a JSON line is a log (a config printed first):
     * the metrics come after the progress lines. */
    progress->after_metrics = progress->seen_progress && command_line_holds_metrics(text);
    return TRUE;
  }
  case COMMAND_LINE_MALFORMED:
    return FALSE;
  case COMMAND_LINE_PROGRESS:
    break;
  }
  progress->seen_progress = TRUE;
  if (progress->after_metrics) {
    progress->after_metrics = FALSE;
    progress->held = (HeldProgress){step, fidelity, value};
    progress->holding = TRUE;
    return TRUE;
  }
  return release(progress) && report(progress, step, fidelity, value);
}

static SieveResult *
command_evaluate(gpointer instance, const SieveCandidate *candidate, GError **error)
{
  const Command *self = instance;
  guint n = self->argv->len;
  g_auto(GStrv) argv = g_new0(char *, n + 1);
  for (guint i = 0; i < n; i++)
    argv[i] = command_template_expand(self->argv->pdata[i], candidate);

  g_auto(GStrv) envp = g_strdupv(self->base_env);
  for (guint i = 0; i < self->env_names->len; i++) {
    g_autofree char *value = command_template_expand(self->env_values->pdata[i], candidate);
    envp = g_environ_setenv(envp, self->env_names->pdata[i], value, TRUE);
  }

  g_autofree char *payload = self->stdin_json ? stdin_payload(self, candidate) : NULL;
  CommandRun run;
  Progress progress = {candidate, self->has_fidelity ? &self->fidelity : NULL};
  /* A line still held after the last line is not reported (above). */
  command_run_watched(argv, envp, self->cwd, payload, self->timeout, on_line, &progress, &run);

  SieveResult *result = sieve_result_new();
  if (progress.problem != NULL)
    sieve_result_set_failed(result, "%s", progress.problem);
  else if (!progress.pruned) /* a pruned one: the engine stores its last value */
    describe_exit(&run, self, result);
  g_free(progress.problem);
  /* A program that never started has no time of its own; the engine then
   * records the evaluate() call's wall time. */
  if (run.seconds > 0)
    sieve_result_set_cost(result, run.seconds);
  command_run_clear(&run);
  return result;
}

static const SieveFidelity *
command_fidelity(gpointer instance)
{
  const Command *self = instance;
  return self->has_fidelity ? &self->fidelity : NULL;
}

static const SieveEvaluatorClass command_class = {
  .create = command_create,
  .destroy = command_destroy,
  .evaluate = command_evaluate,
  .flags = SIEVE_EVALUATOR_CONCURRENT | SIEVE_EVALUATOR_INTERMEDIATE,
  .fidelity = command_fidelity,
};

static const SieveComponentInfo command_info = {
  .kind = SIEVE_KIND_EVALUATOR,
  .name = "command",
  .summary = "runs a program per trial; its last stdout line, a JSON object, gives the metrics",
  .options = command_options,
  .klass = &command_class,
  .example = "{plugin: command, argv: [python3, examples/command/objective.py], stdin: json, timeout: 60}",
};

static gboolean
command_init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &command_info, error);
}

SIEVE_PLUGIN_DEFINE("command", "0.1.0", "external programs as evaluators", "MIT", command_init);
