/* command evaluator: running one program to completion.
 *
 *   CommandRun run;
 *   command_run(argv, envp, cwd, stdin_text, timeout, &run);
 *   if (run.outcome == COMMAND_EXITED && run.status == 0) ... run.out->str ...
 *   command_run_clear(&run);
 *
 * The program runs in a process group of its own.  When it ends, or when
 * the timeout strikes, what is left of the group (background children,
 * grandchildren) is killed with SIGKILL, so no trial leaves processes
 * behind.  Its stdout and stderr are read as they come (no deadlock however
 * much it prints); their tails are kept (see COMMAND_KEEP_*).  If sieve
 * dies (kill -9 included), a watcher process that leads the group kills it
 * (see process.c).  Safe to call from several threads at once: the forked
 * side makes only async-signal-safe calls, signal masks are per thread,
 * every descriptor is close-on-exec.
 */
#pragma once

#include <glib.h>

/* Bytes kept of each stream: the protocol only needs the last lines. */
#define COMMAND_KEEP_STDOUT (4u << 20)
#define COMMAND_KEEP_STDERR (64u << 10)

typedef enum {
  COMMAND_NOT_STARTED, /* spawn failed: error_text says why */
  COMMAND_EXITED,      /* status is the exit code */
  COMMAND_SIGNALED,    /* status is the signal number */
  COMMAND_TIMED_OUT,
} CommandOutcome;

typedef struct {
  CommandOutcome outcome;
  int status;
  char *error_text; /* COMMAND_NOT_STARTED */
  GString *out;     /* tail of stdout */
  GString *err;     /* tail of stderr */
  double seconds;   /* wall time from spawn to reap */
  gboolean stopped; /* on_line asked to stop it: its group was sent SIGTERM */
} CommandRun;

/* Called with each complete stdout line (without its line end) as the
 * program writes it, and with a last line left without one when the
 * program exits (not after a timeout); returning FALSE stops the program: its process group
 * gets SIGTERM (once), and the run goes on until it exits or times out. */
typedef gboolean (*CommandLineFunc)(gpointer user_data, const char *line);

/* argv[0] is looked up in the PATH of envp unless it holds a '/'; a
 * relative argv[0] with a '/' is taken relative to cwd.  stdin_text NULL
 * gives the program /dev/null.  timeout <= 0: none. */
void command_run(char **argv, char **envp, const char *cwd, const char *stdin_text, double timeout,
                 CommandRun *run);
/* Same, watching stdout line by line (on_line may be NULL). */
void command_run_watched(char **argv, char **envp, const char *cwd, const char *stdin_text, double timeout,
                         CommandLineFunc on_line, gpointer user_data, CommandRun *run);
void command_run_clear(CommandRun *run);

/* Last non-empty line of text without its line end, or NULL. (transfer full) */
char *command_last_line(const GString *text);
