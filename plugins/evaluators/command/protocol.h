/* command evaluator: the protocol line, the last line a program writes on
 * stdout, read into a result (the rules are in command.c's header).
 *
 *   command_read_metrics_line("{\"loss\": 0.5}", result);   // metric loss = 0.5
 *
 * A file of its own, with no process in it, so that tests/fuzz can build
 * it into a driver and feed it any bytes: this is where a program's
 * output meets sieve's memory, and nothing a program prints may crash it. */
#pragma once

#include <sieve/candidate.h>
#include <sieve/result.h>

/* Sets result's metrics from line, or marks it failed with the reason (too
 * long, too deep, not a JSON object, a bad "status"). */
void command_read_metrics_line(const char *line, SieveResult *result);
/* Whether line could be the metrics line: a JSON object that
 * command_read_metrics_line() reads without failing, with a metric. */
gboolean command_line_holds_metrics(const char *line);
/* Progress lines: {"intermediate": {"step": 3, "value": 0.71}} with an
 * optional "fidelity" number beside them.  A line is one when, blanks
 * aside, it begins with {"intermediate" ; such a line must then be exactly
 * that: one object whose only member is "intermediate", an object with an
 * integer step >= 0, a number value (NaN and +-Infinity allowed, as Python
 * writes them) and optionally a finite fidelity >= 0 and at most range's
 * max (range NULL: the evaluator declares none), nothing else, no name
 * twice.  A line meant as one is malformed too: blanks aside, { and a
 * first key in double or single quotes within two edits of "intermediate"
 * (case ignored), then : and an object with a member "step" or "value"
 * ({'intermediate': {'step': 1, ...}} from Python's print(dict),
 * {"intermedate": {"step": 1, ...}}); {"intermediates": {"shape": [1]}}
 * is an ordinary line.
 * Returns COMMAND_LINE_OTHER for any other line, COMMAND_LINE_PROGRESS with
 * the numbers filled in (fidelity NAN when absent), or
 * COMMAND_LINE_MALFORMED with *problem (transfer full) saying what is wrong. */
typedef enum { COMMAND_LINE_OTHER, COMMAND_LINE_PROGRESS, COMMAND_LINE_MALFORMED } CommandLineKind;
CommandLineKind command_read_progress_line(const char *line, const SieveFidelity *range, gint64 *step,
                                           double *fidelity, double *value, char **problem);
/* Reads the program's stdout (its kept tail) into result: the metrics are
 * the last non-empty line that is not a progress line (progress lines after
 * it were reported as they came).  Fails result when there is none (only
 * progress lines, or nothing) or the line is bad. */
void command_read_output(const GString *out, const SieveFidelity *range, SieveResult *result);
/* (transfer full) text cut to 80 characters (on a UTF-8 boundary) with "...",
 * for quoting a program's output in a reason. */
char *command_quote(const char *text);
