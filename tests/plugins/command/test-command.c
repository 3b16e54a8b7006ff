/* The `command` evaluator, loaded from the build tree's plugins and run on
 * real programs: /bin/sh scripts written to a temporary folder.  Every
 * failure mode (exit status, signal, timeout with a grandchild, garbage,
 * silence, a missing program, a failure the program reports) is provoked
 * for real and its reason checked word for word. */
#include <errno.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>

#include <sieve/sieve.h>

#include "test-support.h"

static SieveRegistry *registry;
static const SieveComponent *command;
static SieveSpace *space; /* opt: [sgd, adam], lr (log float), layers (int), momentum (only for sgd) */
static char *tmpdir;

/* Space text: momentum after opt, so the condition's parent comes first. */
static const char space_yaml[] = "parameters:\n"
                                 "  opt: [sgd, adam]\n"
                                 "  lr: {type: float, low: 0.0001, high: 1, log: true}\n"
                                 "  layers: {type: int, low: 1, high: 8}\n"
                                 "  momentum: {type: float, low: 0, high: 0.99, condition: {opt: [sgd]}}\n";

/* ---- helpers ------------------------------------------------------------ */

/* Writes an executable /bin/sh script called name into tmpdir. (transfer full) */
static char *
write_script(const char *name, const char *body)
{
  char *path = g_build_filename(tmpdir, name, NULL);
  g_autofree char *text = g_strdup_printf("#!/bin/sh\n%s\n", body);
  GError *error = NULL;
  g_file_set_contents(path, text, -1, &error);
  g_assert_no_error(error);
  g_assert_cmpint(g_chmod(path, 0755), ==, 0);
  return path;
}

static char *
read_tmp(const char *name)
{
  g_autofree char *path = g_build_filename(tmpdir, name, NULL);
  char *text = NULL;
  GError *error = NULL;
  g_file_get_contents(path, &text, NULL, &error);
  g_assert_no_error(error);
  return text;
}

static SieveEvaluator *
evaluator_try(const char *yaml, GError **error)
{
  GError *local = NULL;
  g_autoptr(SieveNode) map = sieve_node_parse_string(yaml, -1, "test.yaml", &local);
  g_assert_no_error(local);
  static const char *const reserved[] = {"plugin", NULL};
  g_autoptr(SieveOptions) options = sieve_options_new(sieve_component_get_info(command)->options, map, reserved,
                                                      tmpdir, "evaluator 'command'", error);
  if (options == NULL)
    return NULL;
  return sieve_evaluator_new(command, space, options, error);
}

static SieveEvaluator *
evaluator_new(const char *yaml)
{
  GError *error = NULL;
  SieveEvaluator *e = evaluator_try(yaml, &error);
  g_assert_no_error(error);
  g_assert_nonnull(e);
  return e;
}

/* argv: [script] for a script written into tmpdir. */
static SieveEvaluator *
script_evaluator(const char *name, const char *body, const char *more_yaml)
{
  g_autofree char *path = write_script(name, body);
  g_autofree char *yaml = g_strdup_printf("argv: ['%s']\n%s", path, more_yaml ? more_yaml : "");
  return evaluator_new(yaml);
}

static SieveCandidate *
candidate_new(const char *text, gint64 trial, double fidelity)
{
  GError *error = NULL;
  SieveGenotype *g = sieve_space_parse(space, text, &error);
  g_assert_no_error(error);
  SieveCandidate *c = sieve_candidate_new(g, fidelity);
  sieve_candidate_set_trial(c, trial);
  return c;
}

static SieveResult *
evaluate(SieveEvaluator *e, gint64 trial, double fidelity)
{
  g_autoptr(SieveCandidate) c = candidate_new("opt=adam,lr=0.01,layers=3", trial, fidelity);
  GError *error = NULL;
  SieveResult *r = sieve_evaluator_evaluate(e, c, &error);
  g_assert_no_error(error);
  g_assert_nonnull(r);
  return r;
}

static void
assert_failed(const SieveResult *r, const char *reason)
{
  g_assert_cmpstr(sieve_status_to_string(sieve_result_get_status(r)), ==, "failed");
  g_assert_cmpstr(sieve_result_get_reason(r), ==, reason);
}

/* Whether pid is gone: no such process, or a zombie waiting for init. */
static gboolean
process_gone(pid_t pid)
{
  if (kill(pid, 0) != 0)
    return errno == ESRCH;
  g_autofree char *stat_path = g_strdup_printf("/proc/%d/stat", (int) pid);
  g_autofree char *stat = NULL;
  if (!g_file_get_contents(stat_path, &stat, NULL, NULL))
    return TRUE;
  const char *close = strrchr(stat, ')'); /* "pid (comm) S ..." */
  return close != NULL && (close[2] == 'Z' || close[2] == 'X');
}

static pid_t
read_pid(const char *name)
{
  g_autofree char *text = read_tmp(name);
  gint64 pid = g_ascii_strtoll(text, NULL, 10);
  g_assert_cmpint(pid, >, 1);
  return (pid_t) pid;
}

static void
assert_gone_soon(pid_t pid)
{
  /* SIGKILL is delivered at once, but the kernel may take a moment to tear
   * the process down. */
  for (guint i = 0; i < 100 && !process_gone(pid); i++)
    g_usleep(20000);
  g_assert_true(process_gone(pid));
}

/* ---- tests ---------------------------------------------------------------- */

static void
test_metrics(void)
{
  g_autoptr(SieveEvaluator) e = script_evaluator("good.sh",
                                                 "echo 'starting'\n"
                                                 "echo 'epoch 1 done' >&2\n"
                                                 "echo '{\"acc\": 0.9, \"loss\": 1e-3, \"epochs\": 5, \"converged\": true, "
                                                 "\"diverged\": false, \"note\": \"fine\", \"curve\": [1, 2], \"x\": null}'\n"
                                                 "echo ''\n",
                                                 NULL);
  g_assert_true(sieve_evaluator_is_concurrent(e));
  g_autoptr(SieveResult) r = evaluate(e, 0, NAN);
  g_assert_cmpint(sieve_result_get_status(r), ==, SIEVE_STATUS_OK);
  g_assert_null(sieve_result_get_reason(r));
  g_assert_cmpuint(sieve_result_n_metrics(r), ==, 5);
  const char *names[] = {"acc", "loss", "epochs", "converged", "diverged"};
  const double values[] = {0.9, 1e-3, 5, 1, 0};
  for (guint i = 0; i < 5; i++) {
    g_assert_cmpstr(sieve_result_metric_name(r, i), ==, names[i]);
    g_assert_cmpfloat(sieve_result_metric_value(r, i), ==, values[i]);
  }
  g_assert_cmpfloat(sieve_result_get_cost(r), >, 0);
  g_assert_cmpfloat(sieve_result_get_cost(r), <, 5);
}

/* Python's json.dumps writes NaN and Infinity; they are numbers here, but
 * the same words inside strings stay strings. */
static void
test_nonfinite(void)
{
  g_autoptr(SieveEvaluator) e = script_evaluator(
      "nan.sh", "echo '{\"loss\": NaN, \"best\": Infinity, \"worst\": -Infinity, \"note\": \"NaN, Infinity\", "
                "\"acc\": 0.5}'", NULL);
  g_autoptr(SieveResult) r = evaluate(e, 0, NAN);
  g_assert_cmpint(sieve_result_get_status(r), ==, SIEVE_STATUS_OK);
  g_assert_cmpuint(sieve_result_n_metrics(r), ==, 4);
  g_assert_true(isnan(test_metric(r, "loss")));
  g_assert_cmpfloat(test_metric(r, "best"), ==, INFINITY);
  g_assert_cmpfloat(test_metric(r, "worst"), ==, -INFINITY);
  g_assert_cmpfloat(test_metric(r, "acc"), ==, 0.5);

  /* A word that only looks like one is still garbage. */
  g_autoptr(SieveEvaluator) bad = script_evaluator("nanx.sh", "echo '{\"loss\": NaNa}'", NULL);
  g_autoptr(SieveResult) r2 = evaluate(bad, 0, NAN);
  assert_failed(r2, "last stdout line is not a JSON object: '{\"loss\": NaNa}'");
}

static void
test_placeholders(void)
{
  g_autofree char *path = write_script("args.sh", "for a in \"$@\"; do printf '%s\\n' \"$a\"; done > args.txt\n"
                                                  "printf '%s\\n' \"$SIEVE_TEST_VAR\" \"$HOME\" > env.txt\n"
                                                  "echo '{\"done\": 1}'\n");
  g_autofree char *yaml = g_strdup_printf("argv: ['%s', '{genotype}', '{trial}', '{fidelity}', '--lr={lr}', "
                                          "'{opt}/{layers}', '[{momentum}]', '{{literal}}', '{json}']\n"
                                          "env: {SIEVE_TEST_VAR: 't{trial}-{opt}'}\n"
                                          "fidelity: {name: epochs, min: 0.25, max: 4}\n",
                                          path);
  g_autoptr(SieveEvaluator) e = evaluator_new(yaml);

  g_autoptr(SieveCandidate) c = candidate_new("opt=adam,lr=0.01,layers=3", 7, 0.5);
  GError *error = NULL;
  g_autoptr(SieveResult) r = sieve_evaluator_evaluate(e, c, &error);
  g_assert_no_error(error);
  g_assert_cmpint(sieve_result_get_status(r), ==, SIEVE_STATUS_OK);
  g_assert_cmpfloat(test_metric(r, "done"), ==, 1);

  /* The program ran in cwd's default, the experiment's folder (tmpdir here). */
  g_autofree char *args = read_tmp("args.txt");
  g_autofree char *json = sieve_space_to_json(space, sieve_candidate_get_genotype(c));
  g_autofree char *expected = g_strdup_printf("%s\n7\n0.5\n--lr=0.01\nadam/3\n[]\n{literal}\n%s\n",
                                              sieve_candidate_get_text(c), json);
  g_assert_cmpstr(args, ==, expected);
  g_assert_nonnull(strstr(json, "\"lr\": 0.01"));
  g_autofree char *env = read_tmp("env.txt");
  g_autofree char *expected_env = g_strdup_printf("t7-adam\n%s\n", g_getenv("HOME") ? g_getenv("HOME") : "");
  g_assert_cmpstr(env, ==, expected_env);

  /* No fidelity: {fidelity} is empty; an active momentum shows. */
  g_autoptr(SieveCandidate) c2 = candidate_new("opt=sgd,lr=0.5,layers=8,momentum=0.25", 8, NAN);
  g_autoptr(SieveResult) r2 = sieve_evaluator_evaluate(e, c2, &error);
  g_assert_no_error(error);
  g_assert_cmpint(sieve_result_get_status(r2), ==, SIEVE_STATUS_OK);
  g_autofree char *args2 = read_tmp("args.txt");
  g_autofree char *json2 = sieve_space_to_json(space, sieve_candidate_get_genotype(c2));
  g_autofree char *expected2 = g_strdup_printf("%s\n8\n\n--lr=0.5\nsgd/8\n[0.25]\n{literal}\n%s\n",
                                               sieve_candidate_get_text(c2), json2);
  g_assert_cmpstr(args2, ==, expected2);
}

static void
test_stdin_json(void)
{
  g_autoptr(SieveEvaluator) e = script_evaluator("stdin.sh", "cat > stdin.txt\necho '{\"read\": 1}'",
                                                "stdin: json\nfidelity: {name: epochs, min: 0.25, max: 4}\n");
  g_autoptr(SieveCandidate) c = candidate_new("opt=sgd,lr=0.001,layers=2,momentum=0.9", 3, NAN);
  GError *error = NULL;
  g_autoptr(SieveResult) r = sieve_evaluator_evaluate(e, c, &error);
  g_assert_no_error(error);
  g_assert_cmpint(sieve_result_get_status(r), ==, SIEVE_STATUS_OK);

  g_autofree char *text = read_tmp("stdin.txt");
  g_assert_true(g_str_has_suffix(text, "}\n"));
  g_assert_true(strchr(text, '\n') == text + strlen(text) - 1); /* one line */
  g_autoptr(JsonParser) parser = json_parser_new();
  json_parser_load_from_data(parser, text, -1, &error);
  g_assert_no_error(error);
  JsonObject *o = json_node_get_object(json_parser_get_root(parser));
  g_assert_cmpint(json_object_get_int_member(o, "trial"), ==, 3);
  g_assert_cmpstr(json_object_get_string_member(o, "genotype"), ==, sieve_candidate_get_text(c));
  g_assert_true(json_object_get_null_member(o, "fidelity"));
  JsonObject *params = json_object_get_object_member(o, "params");
  g_assert_cmpuint(json_object_get_size(params), ==, 4);
  g_assert_cmpstr(json_object_get_string_member(params, "opt"), ==, "sgd");
  g_assert_cmpfloat(json_object_get_double_member(params, "lr"), ==, 0.001);
  g_assert_cmpint(json_object_get_int_member(params, "layers"), ==, 2);
  g_assert_cmpfloat(json_object_get_double_member(params, "momentum"), ==, 0.9);

  /* With a fidelity, it is a number. */
  g_autoptr(SieveResult) r2 = evaluate(e, 4, 0.25);
  g_assert_cmpint(sieve_result_get_status(r2), ==, SIEVE_STATUS_OK);
  g_autofree char *text2 = read_tmp("stdin.txt");
  g_assert_nonnull(strstr(text2, "\"fidelity\": 0.25,"));

  /* A fidelity outside the declared range is the optimizer's mistake: an
   * error, not a trial run under a false label. */
  g_autoptr(SieveCandidate) c3 = candidate_new("opt=adam,lr=0.01,layers=3", 5, 8);
  g_autoptr(SieveResult) r4 = sieve_evaluator_evaluate(e, c3, &error);
  g_assert_null(r4);
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_EVALUATOR);
  g_assert_cmpstr(error->message, ==, "evaluator 'command': trial 5 asks for epochs = 8, outside [0.25, 4]");
  g_clear_error(&error);

  /* A program that never reads its stdin is fine too (and must not kill us
   * with SIGPIPE when it exits before we wrote). */
  g_autoptr(SieveEvaluator) deaf = script_evaluator("deaf.sh", "exec 0<&-\necho '{\"v\": 2}'", "stdin: json\n");
  for (guint i = 0; i < 20; i++) {
    g_autoptr(SieveResult) r3 = evaluate(deaf, i, NAN);
    g_assert_cmpint(sieve_result_get_status(r3), ==, SIEVE_STATUS_OK);
    g_assert_cmpfloat(test_metric(r3, "v"), ==, 2);
  }
}

static void
test_exit_status(void)
{
  g_autoptr(SieveEvaluator) e = script_evaluator("exit3.sh",
                                                 "echo '{\"acc\": 1}'\n"
                                                 "echo 'loading data' >&2\n"
                                                 "echo 'fatal: out of memory' >&2\n"
                                                 "echo '' >&2\n"
                                                 "exit 3",
                                                 NULL);
  g_autoptr(SieveResult) r = evaluate(e, 0, NAN);
  assert_failed(r, "exited with status 3: fatal: out of memory");
  g_assert_cmpuint(sieve_result_n_metrics(r), ==, 0);

  g_autoptr(SieveEvaluator) quiet = script_evaluator("exit2.sh", "exit 2", NULL);
  g_autoptr(SieveResult) r2 = evaluate(quiet, 0, NAN);
  assert_failed(r2, "exited with status 2 (nothing on stderr)");
}

static void
test_signal(void)
{
  g_autoptr(SieveEvaluator) e = script_evaluator("segv.sh", "ulimit -c 0\nkill -SEGV $$\nsleep 5", NULL);
  g_autoptr(SieveResult) r = evaluate(e, 0, NAN);
  assert_failed(r, "killed by signal 11 (Segmentation fault)");
}

static void
test_timeout(void)
{
  g_autoptr(SieveEvaluator) e = script_evaluator("slow.sh", "sleep 100 &\necho $! > grandchild.pid\nsleep 30",
                                                 "timeout: 0.5\n");
  gint64 start = g_get_monotonic_time();
  g_autoptr(SieveResult) r = evaluate(e, 0, NAN);
  double seconds = (double) (g_get_monotonic_time() - start) / G_USEC_PER_SEC;
  assert_failed(r, "timed out after 0.5 s");
  g_assert_cmpfloat(seconds, >=, 0.5);
  g_assert_cmpfloat(seconds, <, 5);
  g_assert_cmpfloat(sieve_result_get_cost(r), >=, 0.5);
  assert_gone_soon(read_pid("grandchild.pid"));
}

/* A program that exits while a background child still holds its stdout:
 * the trial ends when the program does, and the child is killed. */
static void
test_leftover_child(void)
{
  g_autoptr(SieveEvaluator) e = script_evaluator("bg.sh",
                                                 "sleep 100 &\necho $! > background.pid\necho '{\"v\": 4}'", NULL);
  gint64 start = g_get_monotonic_time();
  g_autoptr(SieveResult) r = evaluate(e, 0, NAN);
  double seconds = (double) (g_get_monotonic_time() - start) / G_USEC_PER_SEC;
  g_assert_cmpint(sieve_result_get_status(r), ==, SIEVE_STATUS_OK);
  g_assert_cmpfloat(test_metric(r, "v"), ==, 4);
  g_assert_cmpfloat(seconds, <, 5);
  assert_gone_soon(read_pid("background.pid"));
}

static void
test_garbage(void)
{
  g_autoptr(SieveEvaluator) e = script_evaluator("garbage.sh",
                                                 "echo '{\"acc\": 0.5}'\n"
                                                 "echo 'Traceback (most recent call last): File \"train.py\", line 12, "
                                                 "in <module> ValueError: something went wrong in the data loader'\n",
                                                 NULL);
  g_autoptr(SieveResult) r = evaluate(e, 0, NAN);
  assert_failed(r, "last stdout line is not a JSON object: 'Traceback (most recent call last): File \"train.py\", "
                   "line 12, in <module> ValueEr...'");

  g_autoptr(SieveEvaluator) array = script_evaluator("array.sh", "echo '[1, 2]'", NULL);
  g_autoptr(SieveResult) r2 = evaluate(array, 0, NAN);
  assert_failed(r2, "last stdout line is not a JSON object: '[1, 2]'");

  g_autoptr(SieveEvaluator) cut = script_evaluator("cut.sh", "echo '{\"acc\": 0.5'", NULL);
  g_autoptr(SieveResult) r3 = evaluate(cut, 0, NAN);
  assert_failed(r3, "last stdout line is not a JSON object: '{\"acc\": 0.5'");

  /* A NUL byte: C read the line up to it, so that the first was taken for
   * {"acc": 0.5} and the second for an empty stdout (found by fuzzing). */
  const char *nul_lines[][2] = {{"printf '{\"acc\": 0.5}\\000{\"acc\": 9}\\n'", "13"},
                                {"printf '\\000{\"acc\": 0.5}\\n'", "1"}};
  for (guint i = 0; i < G_N_ELEMENTS(nul_lines); i++) {
    g_autoptr(SieveEvaluator) nul = script_evaluator("nul.sh", nul_lines[i][0], NULL);
    g_autoptr(SieveResult) rn = evaluate(nul, 0, NAN);
    g_autofree char *reason = g_strdup_printf("last stdout line holds a NUL byte (at character %s); it must be a "
                                              "JSON object of metrics", nul_lines[i][1]);
    assert_failed(rn, reason);
  }

  /* A metric's name is a column of every table: an empty one was dropped
   * without a word, a newline broke sieve run's summary table. */
  const char *names[][2] = {{"echo '{\"acc\": 0.5, \"\": 3}'", "evaluator 'command' reported a metric named \"\": a "
                                                               "metric needs a name"},
                            {"printf '%s\\n' '{\"acc\": 0.5, \"a\\nb\": 3}'",
                             "evaluator 'command' reported a metric named \"a\\nb\": a metric needs a name without "
                             "control characters (newlines, tabs)"},
                            {"printf '%s\\n' '{\"acc\": 0.5, \"\": \"text\", \"note\\t\": [1]}'", NULL}};
  for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
    g_autoptr(SieveEvaluator) named = script_evaluator("names.sh", names[i][0], NULL);
    g_autoptr(SieveResult) rn = evaluate(named, 0, NAN);
    if (names[i][1] != NULL) {
      assert_failed(rn, names[i][1]);
    } else { /* what is no metric (a string, a list) is not judged */
      g_assert_cmpint(sieve_result_get_status(rn), ==, SIEVE_STATUS_OK);
      g_assert_cmpuint(sieve_result_n_metrics(rn), ==, 1);
    }
  }
}

static void
test_empty(void)
{
  const char *bodies[] = {"exit 0", "echo ''\necho '   '\necho 'only stderr' >&2"};
  for (guint i = 0; i < G_N_ELEMENTS(bodies); i++) {
    g_autoptr(SieveEvaluator) e = script_evaluator("empty.sh", bodies[i], NULL);
    g_autoptr(SieveResult) r = evaluate(e, 0, NAN);
    assert_failed(r, "the program wrote nothing on stdout (its last line must be a JSON object of metrics)");
  }
}

static void
test_not_found(void)
{
  g_autoptr(SieveEvaluator) e = evaluator_new("argv: [nosuchprog-sieve-test, --help]\n");
  g_autoptr(SieveResult) r = evaluate(e, 0, NAN);
  assert_failed(r, "cannot run 'nosuchprog-sieve-test': No such file or directory");

  /* A relative path with a '/' is taken from cwd. */
  g_autoptr(SieveEvaluator) rel = evaluator_new("argv: [./missing.sh]\n");
  g_autoptr(SieveResult) r2 = evaluate(rel, 0, NAN);
  assert_failed(r2, "cannot run './missing.sh': No such file or directory");

  /* Not executable. */
  g_autofree char *path = write_script("noexec.sh", "echo '{}'");
  g_assert_cmpint(g_chmod(path, 0644), ==, 0);
  g_autoptr(SieveEvaluator) noexec = evaluator_new("argv: [./noexec.sh]\n");
  g_autoptr(SieveResult) r3 = evaluate(noexec, 0, NAN);
  assert_failed(r3, "cannot run './noexec.sh': Permission denied");

  /* PATH comes from env when it sets one. */
  g_autofree char *bin = g_build_filename(tmpdir, "bin", NULL);
  g_assert_cmpint(g_mkdir(bin, 0755), ==, 0);
  g_autofree char *tool = write_script("bin/my-tool", "echo '{\"tool\": 1}'");
  g_autoptr(SieveEvaluator) via_path = evaluator_new("argv: [my-tool]\nenv: {PATH: 'bin:/usr/bin:/bin'}\n");
  g_autoptr(SieveResult) r4 = evaluate(via_path, 0, NAN);
  g_assert_cmpint(sieve_result_get_status(r4), ==, SIEVE_STATUS_OK);
  g_assert_cmpfloat(test_metric(r4, "tool"), ==, 1);
}

static void
test_reported_failure(void)
{
  g_autoptr(SieveEvaluator) e = script_evaluator(
      "reported.sh", "echo '{\"status\": \"failed\", \"reason\": \"loss became NaN at epoch 3\", \"epoch\": 3}'", NULL);
  g_autoptr(SieveResult) r = evaluate(e, 0, NAN);
  assert_failed(r, "loss became NaN at epoch 3");
  g_assert_cmpfloat(test_metric(r, "epoch"), ==, 3);

  g_autoptr(SieveEvaluator) bare = script_evaluator("bare.sh", "echo '{\"status\": \"failed\"}'", NULL);
  g_autoptr(SieveResult) r2 = evaluate(bare, 0, NAN);
  assert_failed(r2, "the program reported a failure");

  g_autoptr(SieveEvaluator) ok = script_evaluator("ok.sh", "echo '{\"status\": \"ok\", \"acc\": 2}'", NULL);
  g_autoptr(SieveResult) r3 = evaluate(ok, 0, NAN);
  g_assert_cmpint(sieve_result_get_status(r3), ==, SIEVE_STATUS_OK);
  g_assert_cmpfloat(test_metric(r3, "acc"), ==, 2);

  g_autoptr(SieveEvaluator) odd = script_evaluator("odd.sh", "echo '{\"status\": \"crashed\", \"acc\": 2}'", NULL);
  g_autoptr(SieveResult) r4 = evaluate(odd, 0, NAN);
  assert_failed(r4, "the program's \"status\" must be \"ok\" or \"failed\", got 'crashed'");
}

/* ---- the progress protocol ---------------------------------------------- */

/* What a program reported as it ran, as the engine would see it. */
typedef struct {
  guint n;
  gint64 steps[8];
  double fidelities[8], values[8];
} Reports;

/* The report (1, 2, ...) at which the pruner says stop; 0: never. */
static guint stop_at_report;

static gboolean
record_report(gpointer user_data, const SieveCandidate *candidate, gint64 step, double fidelity, double value)
{
  Reports *reports = user_data;
  g_assert_cmpuint(reports->n, <, G_N_ELEMENTS(reports->steps));
  reports->steps[reports->n] = step;
  reports->fidelities[reports->n] = fidelity;
  reports->values[reports->n++] = value;
  return reports->n != stop_at_report;
}

/* A program that prints stdout (a here-document, so that any quote goes
 * as written) under an evaluator with fidelity: {min: 1, max: 9}. */
static SieveResult *
run_script_with(const char *body, const char *more_yaml, Reports *reports)
{
  g_autofree char *yaml = g_strconcat("fidelity: {name: epochs, min: 1, max: 9}\n", more_yaml, NULL);
  g_autoptr(SieveEvaluator) e = script_evaluator("progress.sh", body, yaml);
  g_autoptr(SieveCandidate) c = candidate_new("opt=adam,lr=0.01,layers=3", 0, 9);
  memset(reports, 0, sizeof *reports);
  sieve_candidate_set_intermediate_func(c, record_report, reports);
  GError *error = NULL;
  SieveResult *r = sieve_evaluator_evaluate(e, c, &error);
  g_assert_no_error(error);
  return r;
}

static SieveResult *
run_script(const char *body, Reports *reports)
{
  return run_script_with(body, "", reports);
}

static SieveResult *
run_printing(const char *stdout_text, Reports *reports)
{
  g_autofree char *body = g_strdup_printf("cat <<'END'\n%s\nEND", stdout_text);
  return run_script(body, reports);
}

static void
assert_progress_refused(const char *stdout_text, const char *reason)
{
  Reports reports;
  g_autoptr(SieveResult) r = run_printing(stdout_text, &reports);
  assert_failed(r, reason);
  g_assert_cmpuint(reports.n, ==, 0);
}

/* A Python program that prints its progress with a plain print(): to a
 * pipe Python writes in blocks, so every line would come at its exit, after
 * it ran to its end, and a pruner's stop would turn the finished trial
 * into a pruned one (its metrics lost).  The evaluator makes Python's
 * output unbuffered (PYTHONUNBUFFERED=1 unless the environment sets it to
 * a value; here it is empty, which Python reads as unset):
 * the stop at the first report ends the program in the sleep after it, so
 * it never writes the file it writes after that sleep. */
static void
test_progress_python_unbuffered(void)
{
  g_autofree char *python = g_find_program_in_path("python3");
  if (python == NULL) {
    g_test_skip("no python3 on PATH");
    return;
  }
  g_autofree char *saved = g_strdup(g_getenv("PYTHONUNBUFFERED"));
  g_setenv("PYTHONUNBUFFERED", "", TRUE); /* Python reads empty as unset: block-buffered */
  g_autofree char *marker = g_build_filename(tmpdir, "after-sleep", NULL);
  g_remove(marker);
  g_autofree char *body = g_strdup_printf(
      "exec %s -c '\n"
      "import json, time\n"
      "for step in (1, 2):\n"
      "    print(json.dumps({\"intermediate\": {\"step\": step, \"value\": 0.5}}))\n"
      "    time.sleep(3)\n"
      "    open(\"%s\", \"w\").close()\n"
      "print(json.dumps({\"val_acc\": 0.5}))\n"
      "'",
      python, marker);
  Reports reports;
  stop_at_report = 1;
  g_autoptr(SieveResult) r = run_script(body, &reports);
  stop_at_report = 0;
  if (saved != NULL)
    g_setenv("PYTHONUNBUFFERED", saved, TRUE);
  else
    g_unsetenv("PYTHONUNBUFFERED");
  g_assert_cmpuint(reports.n, ==, 1);
  g_assert_cmpuint(sieve_result_n_metrics(r), ==, 0); /* stopped: the engine stores it as pruned */
  g_assert_false(g_file_test(marker, G_FILE_TEST_EXISTS));
}

/* The metrics are the last line that is not a progress line; progress
 * lines after them are not reported, so a pruner that would say stop
 * cannot turn the finished trial into a pruned one (Optuna: a trial whose
 * objective returned is COMPLETE).  JSON log lines between progress lines
 * only delay those: the next line reports them. */
static void
test_progress_after_metrics(void)
{
  Reports reports;
  stop_at_report = 2;
  g_autoptr(SieveResult) r = run_printing("{\"intermediate\": {\"step\": 1, \"value\": 0.5}}\n"
                                          "{\"val_acc\": 0.6}\n"
                                          "{\"intermediate\": {\"step\": 2, \"value\": 0.7}}\n",
                                          &reports);
  stop_at_report = 0;
  g_assert_cmpint(sieve_result_get_status(r), ==, SIEVE_STATUS_OK);
  g_assert_cmpuint(sieve_result_n_metrics(r), ==, 1);
  g_assert_cmpfloat(test_metric(r, "val_acc"), ==, 0.6);
  g_assert_cmpuint(reports.n, ==, 1);
  g_assert_cmpint(reports.steps[0], ==, 1);

  g_autoptr(SieveResult) logs = run_printing("{\"epoch\": 1, \"loss\": 0.9}\n"
                                             "{\"intermediate\": {\"step\": 1, \"value\": 0.5}}\n"
                                             "{\"epoch\": 2, \"loss\": 0.8}\n"
                                             "{\"intermediate\": {\"step\": 2, \"value\": 0.6}}\n"
                                             "epoch 2 done\n"
                                             "{\"val_acc\": 0.6}",
                                             &reports);
  g_assert_cmpint(sieve_result_get_status(logs), ==, SIEVE_STATUS_OK);
  g_assert_cmpuint(reports.n, ==, 2);
  g_assert_cmpint(reports.steps[1], ==, 2);
  g_assert_cmpfloat(reports.values[1], ==, 0.6);

  /* The pruner's stop on a released line stops the program: pruned, and
   * nothing it wrote after that is read. */
  stop_at_report = 1;
  g_autoptr(SieveResult) stopped = run_printing("{\"epoch\": 1, \"loss\": 0.9}\n"
                                                "{\"intermediate\": {\"step\": 1, \"value\": 0.5}}\n"
                                                "epoch 1 done\n"
                                                "{\"val_acc\": 0.6}",
                                                &reports);
  stop_at_report = 0;
  g_assert_cmpint(sieve_result_get_status(stopped), ==, SIEVE_STATUS_OK);
  g_assert_cmpuint(sieve_result_n_metrics(stopped), ==, 0);
  g_assert_cmpuint(reports.n, ==, 1);

  /* A JSON line before any progress (a config printed first) holds
   * nothing: the progress after it is reported at once. */
  g_autoptr(SieveResult) config = run_printing("{\"lr\": 0.1, \"epochs\": 3}\n"
                                               "{\"intermediate\": {\"step\": 1, \"value\": 0.5}}\n",
                                               &reports);
  g_assert_cmpuint(reports.n, ==, 1);

  /* Only progress lines: no metrics, and the reason says so. */
  g_autoptr(SieveResult) only = run_printing("{\"intermediate\": {\"step\": 1, \"value\": 0.3}}", &reports);
  assert_failed(only, "last stdout line is a progress line, not the JSON object of metrics (after its progress "
                      "lines a program prints one, such as {\"loss\": 0.25})");
  g_assert_cmpuint(reports.n, ==, 1);
}

/* Only the first progress line after a JSON log line waits for the next
 * line: a second shows that the program goes on training, so the first is
 * reported then and the pruner can stop the program there, not once it
 * has finished (a program that logs {"params": 1234} once, after its first
 * epoch, had every later report held to its end: pruning saved nothing). */
static void
test_progress_held_once(void)
{
  Reports reports;
  stop_at_report = 2;
  g_autoptr(SieveResult) r = run_script_with("echo '{\"intermediate\": {\"step\": 1, \"value\": 0.5}}'\n"
                                             "echo '{\"params\": 1234}'\n"
                                             "echo '{\"intermediate\": {\"step\": 2, \"value\": 0.4}}'\n"
                                             "echo '{\"intermediate\": {\"step\": 3, \"value\": 0.3}}'\n"
                                             "sleep 30\n"
                                             "echo '{\"val_acc\": 0.3}'\n",
                                             "timeout: 10\n", &reports);
  stop_at_report = 0;
  /* Stopped at step 2 (as the "stopped" case above), not timed out. */
  g_assert_cmpint(sieve_result_get_status(r), ==, SIEVE_STATUS_OK);
  g_assert_cmpuint(sieve_result_n_metrics(r), ==, 0);
  g_assert_cmpuint(reports.n, ==, 2);
  g_assert_cmpint(reports.steps[1], ==, 2);
}

/* A last progress line without a line end is reported too, when the
 * program exits. */
static void
test_progress_no_newline(void)
{
  Reports reports;
  g_autoptr(SieveResult) r = run_script("printf '%s' '{\"intermediate\": {\"step\": 4, \"value\": 0.25}}'", &reports);
  assert_failed(r, "last stdout line is a progress line, not the JSON object of metrics (after its progress "
                   "lines a program prints one, such as {\"loss\": 0.25})");
  g_assert_cmpuint(reports.n, ==, 1);
  g_assert_cmpint(reports.steps[0], ==, 4);
  g_assert_cmpfloat(reports.values[0], ==, 0.25);
}

/* A line meant as a progress line but misspelt fails the trial: read as "no
 * progress", it would silently turn the pruner off.  Log lines pass. */
static void
test_progress_misspelt(void)
{
  assert_progress_refused("{'intermediate': {'step': 1, 'value': 0.1}}\n{\"val_acc\": 0.3}",
                          "progress line '{'intermediate': {'step': 1, 'value': 0.1}}' is Python's repr of a dict "
                          "(single quotes), not JSON: print json.dumps(...) of it; expected {\"intermediate\": "
                          "{\"step\": INTEGER >= 0, \"value\": NUMBER}}");
  assert_progress_refused("{\"intermedate\": {\"step\": 1, \"value\": 0.5}}\n{\"val_acc\": 0.3}",
                          "progress line '{\"intermedate\": {\"step\": 1, \"value\": 0.5}}' has the key "
                          "\"intermedate\": expected {\"intermediate\": {\"step\": INTEGER >= 0, \"value\": NUMBER}}");
  assert_progress_refused(" { \"Intermediate\" : {\"step\": 1, \"value\": 0.5}}\n{\"val_acc\": 0.3}",
                          "progress line ' { \"Intermediate\" : {\"step\": 1, \"value\": 0.5}}' has the key "
                          "\"Intermediate\": expected {\"intermediate\": {\"step\": INTEGER >= 0, \"value\": NUMBER}}");
  assert_progress_refused("{\"intremediate\": {\"step\": 1, \"value\": 0.5}}\n{\"val_acc\": 0.3}",
                          "progress line '{\"intremediate\": {\"step\": 1, \"value\": 0.5}}' has the key "
                          "\"intremediate\": expected {\"intermediate\": {\"step\": INTEGER >= 0, \"value\": NUMBER}}");

  assert_progress_refused("{\"intermediates\": {\"value\": 0.5}}\n{\"val_acc\": 0.3}",
                          "progress line '{\"intermediates\": {\"value\": 0.5}}' has the key "
                          "\"intermediates\": expected {\"intermediate\": {\"step\": INTEGER >= 0, \"value\": NUMBER}}");

  /* Ordinary log lines: another first key, a near key whose value is no
   * object, a key three edits away, a dict printed by Python, near keys
   * whose objects have no "step" or "value" of their own (debug dicts). */
  Reports reports;
  g_autoptr(SieveResult) r = run_printing("{'lr': 0.1, 'intermediate': {'step': 1}}\n"
                                          "{\"intermediates\": 3}\n"
                                          "{\"intermediate_size\": {\"a\": 1}}\n"
                                          "{\"internmedias\": {\"a\": 1}}\n"
                                          "{\"intermediates\": {\"shape\": [1, 64]}}\n"
                                          "{\"intermediate_1\": {\"shape\": [1, 64]}}\n"
                                          "{\"intermediate_x\": {\"steps\": 3, \"values\": [1]}}\n"
                                          "{\"intermediary\": {\"layer\": \"conv1\"}}\n"
                                          "{\"intermediat\": {\"conv1\": {\"step\": 1, \"value\": 2}}}\n"
                                          "{'Intermediate': {'shape': (1, 64), 'note': 'step: 1'}}\n"
                                          "{\"val_acc\": 0.3}",
                                          &reports);
  g_assert_cmpint(sieve_result_get_status(r), ==, SIEVE_STATUS_OK);
  g_assert_cmpfloat(test_metric(r, "val_acc"), ==, 0.3);
  g_assert_cmpuint(reports.n, ==, 0);
}

/* Fidelity finite, >= 0 and within the evaluator's max; no member twice;
 * a value may be NaN or infinite (a diverged training, as in Optuna). */
static void
test_progress_numbers(void)
{
  assert_progress_refused("{\"intermediate\": {\"step\": 1, \"value\": 0.3, \"fidelity\": -5}}\n{\"val_acc\": 0.5}",
                          "progress line '{\"intermediate\": {\"step\": 1, \"value\": 0.3, \"fidelity\": -5}}': "
                          "\"fidelity\" must be a finite number >= 0");
  assert_progress_refused("{\"intermediate\": {\"step\": 1, \"value\": 0.3, \"fidelity\": Infinity}}\n"
                          "{\"val_acc\": 0.5}",
                          "progress line '{\"intermediate\": {\"step\": 1, \"value\": 0.3, \"fidelity\": Infinity}}': "
                          "\"fidelity\" must be a finite number >= 0");
  assert_progress_refused("{\"intermediate\": {\"step\": 1, \"value\": 0.3, \"fidelity\": NaN}}\n{\"val_acc\": 0.5}",
                          "progress line '{\"intermediate\": {\"step\": 1, \"value\": 0.3, \"fidelity\": NaN}}': "
                          "\"fidelity\" must be a finite number >= 0");
  assert_progress_refused("{\"intermediate\": {\"step\": 1, \"value\": 0.3, \"fidelity\": 1000000000}}\n"
                          "{\"val_acc\": 0.5}",
                          "progress line '{\"intermediate\": {\"step\": 1, \"value\": 0.3, \"fidelity\": 1000000000}}': "
                          "\"fidelity\" 1000000000 is above the evaluator's fidelity max 9");
  assert_progress_refused("{\"intermediate\": {\"step\": 1, \"step\": 2, \"value\": 0.3}}\n{\"val_acc\": 0.5}",
                          "progress line '{\"intermediate\": {\"step\": 1, \"step\": 2, \"value\": 0.3}}': "
                          "\"step\" appears twice in one object");
  assert_progress_refused("{\"intermediate\": {\"step\": 1, \"value\": 0.3}, \"intermediate\": {\"step\": 2, "
                          "\"value\": 0.4}}\n{\"val_acc\": 0.5}",
                          "progress line '{\"intermediate\": {\"step\": 1, \"value\": 0.3}, \"intermediate\": "
                          "{\"step\": 2, \"value\":...': \"intermediate\" appears twice in one object");

  /* Below the range's min is progress (half an epoch), and so are NaN and
   * infinite values. */
  Reports reports;
  g_autoptr(SieveResult) r = run_printing("{\"intermediate\": {\"step\": 1, \"value\": NaN, \"fidelity\": 0.5}}\n"
                                          "{\"intermediate\": {\"step\": 2, \"value\": -Infinity, \"fidelity\": 9}}\n"
                                          "{\"val_acc\": 0.5}",
                                          &reports);
  g_assert_cmpint(sieve_result_get_status(r), ==, SIEVE_STATUS_OK);
  g_assert_cmpuint(reports.n, ==, 2);
  g_assert_true(isnan(reports.values[0]));
  g_assert_cmpfloat(reports.fidelities[0], ==, 0.5);
  g_assert_cmpfloat(reports.values[1], ==, -INFINITY);
  g_assert_cmpfloat(reports.fidelities[1], ==, 9);
}

/* json-glib keeps an integer in a gint64 and wraps one beyond it without a
 * word (99999999999999999999 read as -1, 2^63 as -2^63); such a number is
 * its double here, in metrics and in progress values alike, and a step
 * beyond 64 bits is refused rather than wrapped. */
static void
test_big_integers(void)
{
  g_autoptr(SieveEvaluator) e = script_evaluator(
      "big.sh", "echo '{\"value\": 99999999999999999999, \"m\": 9223372036854775808, \"u\": 18446744073709551616, "
                "\"n\": -9223372036854775809, \"max\": 9223372036854775807, \"min\": -9223372036854775808, "
                "\"e\": 1e+99999999999999999999, \"note\": \"99999999999999999999\"}'", NULL);
  g_autoptr(SieveResult) r = evaluate(e, 0, NAN);
  g_assert_cmpint(sieve_result_get_status(r), ==, SIEVE_STATUS_OK);
  g_assert_cmpuint(sieve_result_n_metrics(r), ==, 7);
  g_assert_cmpfloat(test_metric(r, "value"), ==, 1e20);
  g_assert_cmpfloat(test_metric(r, "m"), ==, 9223372036854775808.0);
  g_assert_cmpfloat(test_metric(r, "u"), ==, 18446744073709551616.0);
  g_assert_cmpfloat(test_metric(r, "n"), ==, -9223372036854775808.0);
  g_assert_cmpfloat(test_metric(r, "max"), ==, 9223372036854775807.0);
  g_assert_cmpfloat(test_metric(r, "min"), ==, -9223372036854775808.0);
  g_assert_cmpfloat(test_metric(r, "e"), ==, INFINITY);

  Reports reports;
  g_autoptr(SieveResult) p = run_printing("{\"intermediate\": {\"step\": 1, \"value\": 99999999999999999999}}\n"
                                          "{\"intermediate\": {\"step\": 2, \"value\": -18446744073709551615}}\n"
                                          "{\"val_acc\": 0.5}",
                                          &reports);
  g_assert_cmpint(sieve_result_get_status(p), ==, SIEVE_STATUS_OK);
  g_assert_cmpuint(reports.n, ==, 2);
  g_assert_cmpfloat(reports.values[0], ==, 1e20);
  g_assert_cmpfloat(reports.values[1], ==, -18446744073709551615.0);
  assert_progress_refused("{\"intermediate\": {\"step\": 18446744073709551617, \"value\": 0.3}}\n{\"val_acc\": 0.5}",
                          "progress line '{\"intermediate\": {\"step\": 18446744073709551617, \"value\": 0.3}}': "
                          "\"step\" must be an integer from 0 to 9223372036854775807");
}

static void
assert_create_error(const char *yaml, const char *message)
{
  GError *error = NULL;
  g_autoptr(SieveEvaluator) e = evaluator_try(yaml, &error);
  g_assert_null(e);
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
  g_assert_cmpstr(error->message, ==, message);
  g_error_free(error);
}

static void
test_create_errors(void)
{
  assert_create_error("argv:\n"
                      "  - /bin/echo\n"
                      "  - --lr={lrr}\n",
                      "test.yaml:3:5: argv item 2 '--lr={lrr}': unknown placeholder {lrr} (did you mean {lr}?); "
                      "valid placeholders: {genotype}, {trial}, {fidelity}, {json}, {opt}, {lr}, {layers}, "
                      "{momentum} (write {{ and }} for literal braces)");
  assert_create_error("argv: ['echo {x']\n",
                      "test.yaml:1:8: argv item 1 'echo {x': unclosed '{' at character 6 (write {{ for a literal "
                      "brace)");
  assert_create_error("argv: [echo, 'a}b']\n",
                      "test.yaml:1:14: argv item 2 'a}b': unmatched '}' at character 2 (write }} for a literal brace)");
  assert_create_error("argv: []\n", "test.yaml:1:7: argv needs at least the program to run");
  /* An infinite timeout overflowed the gint64 deadline. */
  assert_create_error("argv: [echo]\ntimeout: .inf\n",
                      "test.yaml:2:10: option 'timeout' expects a float in [0, 10000000], got .inf");
  assert_create_error("argv: [echo]\nenv: {'A=B': x}\n",
                      "test.yaml:2:7: 'A=B' is not an environment variable name (letters, digits and _)");
  assert_create_error("argv: [echo]\nenv: {A: '{nope}'}\n",
                      "test.yaml:2:10: environment variable 'A': unknown placeholder {nope}; valid placeholders: "
                      "{genotype}, {trial}, {fidelity}, {json}, {opt}, {lr}, {layers}, {momentum} (write {{ and }} "
                      "for literal braces)");
  assert_create_error("argv: [echo]\nenv: [A]\n", "test.yaml:2:6: env must be a map of variable names to values");
  assert_create_error("argv: [echo]\ncwd: /nonexistent/sieve-test\n",
                      "test.yaml:2:6: cwd '/nonexistent/sieve-test' is not a folder");
  assert_create_error("argv: [echo]\nfidelity: {name: epochs, min: 4, max: 2}\n",
                      "test.yaml:2:39: the fidelity's max (2) is below its min (4)");
  assert_create_error("argv: [echo]\nfidelity: {name: epochs, min: 1, max: .inf}\n",
                      "test.yaml:2:39: option 'max' expects a finite float >= 0, got .inf");
  assert_create_error("argv: [echo]\nfidelity: {name: epochs, min: .nan, max: 2}\n",
                      "test.yaml:2:31: option 'min' expects a finite float >= 0, got .nan");
  assert_create_error("argv: [echo]\nfidelity: {name: epochs, min: 0, max: 2}\n",
                      "test.yaml:2:31: the fidelity's min must be > 0, got 0");
  assert_create_error("argv: [echo]\nfidelity: {name: epochs, min: 1, mx: 2}\n",
                      "test.yaml:2:34: unknown option 'mx' for fidelity (did you mean 'max'?)");
  assert_create_error("argv: [echo]\nfidelity: {name: epochs, min: 1.5, max: 2, integer: true}\n",
                      "test.yaml:2:31: an integer fidelity needs whole min and max, got 1.5 and 2");
}

typedef struct {
  SieveEvaluator *evaluator;
  SieveCandidate *candidate;
  SieveResult *result;
} Job;

static gpointer
run_job(gpointer data)
{
  Job *job = data;
  GError *error = NULL;
  job->result = sieve_evaluator_evaluate(job->evaluator, job->candidate, &error);
  g_assert_no_error(error);
  return NULL;
}

static void
test_concurrent(void)
{
  /* Each program sleeps a little so that all eight overlap, and answers
   * with its own inputs; stderr output checks no stream is crossed. */
  g_autofree char *path = write_script("echoer.sh",
                                       "echo \"trial $1\" >&2\n"
                                       "sleep 0.3\n"
                                       "echo \"{\\\"trial\\\": $1, \\\"layers\\\": $2}\"\n"
                                       "[ \"$1\" = 5 ] && { echo \"trial $1 fails\" >&2; exit 1; }\n"
                                       "exit 0");
  g_autofree char *yaml = g_strdup_printf("argv: ['%s', '{trial}', '{layers}']\nstdin: json\n", path);
  g_autoptr(SieveEvaluator) with_args = evaluator_new(yaml);

  Job jobs[8];
  GThread *threads[8];
  gint64 start = g_get_monotonic_time();
  for (guint i = 0; i < 8; i++) {
    g_autofree char *text = g_strdup_printf("opt=adam,lr=0.01,layers=%u", i + 1);
    jobs[i] = (Job){with_args, candidate_new(text, i, NAN), NULL};
    threads[i] = g_thread_new("evaluate", run_job, &jobs[i]);
  }
  for (guint i = 0; i < 8; i++)
    g_thread_join(threads[i]);
  double seconds = (double) (g_get_monotonic_time() - start) / G_USEC_PER_SEC;
  for (guint i = 0; i < 8; i++) {
    if (i == 5) {
      assert_failed(jobs[i].result, "exited with status 1: trial 5 fails");
    } else {
      if (sieve_result_get_status(jobs[i].result) != SIEVE_STATUS_OK)
        g_error("job %u: %s", i, sieve_result_get_reason(jobs[i].result));
      g_assert_cmpfloat(test_metric(jobs[i].result, "trial"), ==, i);
      g_assert_cmpfloat(test_metric(jobs[i].result, "layers"), ==, i + 1);
    }
    sieve_result_free(jobs[i].result);
    sieve_candidate_free(jobs[i].candidate);
  }
  /* Eight 0.3 s programs one after another would take 2.4 s. */
  if (!g_getenv("SIEVE_TEST_SLOW"))
    g_assert_cmpfloat(seconds, <, 2.4);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);

  registry = test_registry_load();
  command = test_component(registry, SIEVE_KIND_EVALUATOR, "command");
  const SieveComponent *hpo = test_component(registry, SIEVE_KIND_SPACE, "hpo");

  GError *error = NULL;
  g_autoptr(SieveNode) space_map = sieve_node_parse_string(space_yaml, -1, "space.yaml", &error);
  g_assert_no_error(error);
  g_autoptr(SieveOptions) space_options = sieve_options_new(sieve_component_get_info(hpo)->options, space_map, NULL,
                                                            NULL, "space 'hpo'", &error);
  g_assert_no_error(error);
  space = sieve_space_new(hpo, space_options, &error);
  g_assert_no_error(error);

  tmpdir = g_dir_make_tmp("sieve-command-XXXXXX", &error);
  g_assert_no_error(error);

  g_test_add_func("/command/metrics", test_metrics);
  g_test_add_func("/command/nonfinite", test_nonfinite);
  g_test_add_func("/command/placeholders", test_placeholders);
  g_test_add_func("/command/stdin-json", test_stdin_json);
  g_test_add_func("/command/exit-status", test_exit_status);
  g_test_add_func("/command/signal", test_signal);
  g_test_add_func("/command/timeout", test_timeout);
  g_test_add_func("/command/leftover-child", test_leftover_child);
  g_test_add_func("/command/garbage", test_garbage);
  g_test_add_func("/command/empty", test_empty);
  g_test_add_func("/command/not-found", test_not_found);
  g_test_add_func("/command/reported-failure", test_reported_failure);
  g_test_add_func("/command/create-errors", test_create_errors);
  g_test_add_func("/command/concurrent", test_concurrent);
  g_test_add_func("/command/progress-after-metrics", test_progress_after_metrics);
  g_test_add_func("/command/progress-python-unbuffered", test_progress_python_unbuffered);
  g_test_add_func("/command/progress-misspelt", test_progress_misspelt);
  g_test_add_func("/command/progress-held-once", test_progress_held_once);
  g_test_add_func("/command/progress-no-newline", test_progress_no_newline);
  g_test_add_func("/command/progress-numbers", test_progress_numbers);
  g_test_add_func("/command/big-integers", test_big_integers);
  int status = g_test_run();

  /* Remove the scripts and what they wrote (one level of sub-folders). */
  g_autoptr(GDir) dir = g_dir_open(tmpdir, 0, NULL);
  for (const char *name; dir && (name = g_dir_read_name(dir));) {
    g_autofree char *path = g_build_filename(tmpdir, name, NULL);
    if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
      g_autoptr(GDir) sub = g_dir_open(path, 0, NULL);
      for (const char *inner; sub && (inner = g_dir_read_name(sub));) {
        g_autofree char *inner_path = g_build_filename(path, inner, NULL);
        g_unlink(inner_path);
      }
      g_rmdir(path);
    } else {
      g_unlink(path);
    }
  }
  g_rmdir(tmpdir);
  g_free(tmpdir);
  sieve_space_free(space);
  sieve_registry_free(registry);
  return status;
}
