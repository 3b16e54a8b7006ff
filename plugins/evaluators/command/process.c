/* command evaluator: running one program (see process.h).
 *
 * Why fork and a watcher process rather than GSubprocess or posix_spawn: a
 * trial's processes must not outlive sieve, however sieve ends (a second
 * Ctrl-C, SIGTERM, a crash, kill -9), and a trial needs its own process
 * group (to kill grandchildren on a timeout), a deadline without a main
 * context per thread, and a way to notice that the program exited while
 * something it started in the background still holds its pipes.
 *
 * PR_SET_PDEATHSIG cannot do it: posix_spawn cannot set it, it fires when
 * the spawning *thread* ends (sieve's worker threads come and go), and it
 * reaches only the direct child, not what the program starts.  So:
 *
 *   - a process-wide "life pipe" is made once; sieve holds its write end
 *     (close-on-exec) for its whole life and never writes to it.  When sieve
 *     dies by any means, kill -9 included, the kernel closes it and the read
 *     end reports end of file.
 *   - sieve forks a watcher that leads the trial's process group.  Between
 *     fork and exit it makes only async-signal-safe calls (sieve has
 *     threads): it keeps the stdio pipe ends and the life pipe's read end at
 *     known numbers and closes every other descriptor (so it holds no copy
 *     of the life pipe's write end, nor of other trials' pipes), then forks
 *     the program (which resets signals, closes fds from 3 up, chdirs and
 *     execs).  It then sleeps in ppoll() on the life pipe, woken by SIGCHLD:
 *     when the program ends, the watcher ends with the same exit status or
 *     the same signal, so sieve reads the program's status from the
 *     watcher; when the life pipe reports end of file, sieve is gone and
 *     the watcher kills its whole group (the program and everything it
 *     started that stayed in the group) with SIGKILL.
 *   - sieve waits on the watcher (a pidfd), and on a timeout or when the
 *     program ends kills the group (-pid) as before.  A chdir or exec that
 *     fails in the program is reported through a close-on-exec pipe, so the
 *     error is still "cannot run 'X': <reason>".
 *
 * A process that leaves the group (setsid, setpgid) escapes both the
 * timeout's kill and the watcher's; a trial's program must not do that.
 * The cost: fork() copies sieve's page tables, and sieve's pages are
 * copied on write while the watcher lives; measured on a loaded 2-core
 * machine, a trial that runs `sh -c echo` took a median 6 to 7 ms of wall
 * time against 1.4 ms with posix_spawn.  The trials a command evaluator
 * runs take seconds at least.
 */
#define _GNU_SOURCE
#include "process.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* How long to keep reading after the group was killed: a process that
 * left the group (setsid) may still hold the pipes, and must not hang us. */
#define DRAIN_MS 1000

static void
close_fd(int *fd)
{
  if (*fd >= 0)
    close(*fd);
  *fd = -1;
}

/* The file to exec, found the way a shell would, but in envp's PATH (the
 * evaluator's env may set its own) and with relative entries taken from cwd. */
static char *
find_program(const char *name, char **envp, const char *cwd, int *error_code)
{
  if (strchr(name, '/') != NULL) {
    g_autofree char *full = g_path_is_absolute(name) ? g_strdup(name) : g_build_filename(cwd, name, NULL);
    /* Checked here too, not only by exec: before the fork, so that the
     * common mistake costs no process. */
    if (access(full, X_OK) != 0) {
      *error_code = errno;
      return NULL;
    }
    return g_steal_pointer(&full);
  }
  const char *path = g_environ_getenv(envp, "PATH");
  if (path == NULL)
    path = "/usr/local/bin:/usr/bin:/bin";
  g_auto(GStrv) dirs = g_strsplit(path, ":", -1);
  *error_code = ENOENT;
  for (guint i = 0; dirs[i]; i++) {
    const char *dir = dirs[i][0] ? dirs[i] : ".";
    g_autofree char *full = g_path_is_absolute(dir) ? g_build_filename(dir, name, NULL)
                                                    : g_build_filename(cwd, dir, name, NULL);
    if (!g_file_test(full, G_FILE_TEST_IS_REGULAR))
      continue;
    if (access(full, X_OK) == 0)
      return g_steal_pointer(&full);
    *error_code = EACCES; /* found, but not executable: say so unless a later entry runs */
  }
  return NULL;
}

static void
keep_tail(GString *buffer, const char *data, gsize n, gsize keep)
{
  g_string_append_len(buffer, data, (gssize) n);
  /* Trim in big steps so that a chatty program costs amortised O(1) per byte. */
  if (buffer->len > 2 * keep)
    g_string_erase(buffer, 0, (gssize) (buffer->len - keep));
}

/* Lines longer than this are not progress lines: they are not split out. */
#define COMMAND_MAX_WATCHED_LINE (1u << 20)

/* Complete lines of stdout for the watcher: appended raw, handed to on_line
 * one by one; stops calling once it said stop. */
typedef struct {
  GString *partial;
  CommandLineFunc func;
  gpointer data;
  gboolean stop;
  gboolean overlong; /* the current line passed the cap: dropped up to its end */
} LineWatch;

static void
watch_lines(LineWatch *w, const char *data, gsize n)
{
  if (w == NULL || w->func == NULL)
    return;
  for (gsize i = 0; i < n; i++) {
    if (data[i] != '\n') {
      if (!w->overlong)
        g_string_append_c(w->partial, data[i]);
      if (w->partial->len > COMMAND_MAX_WATCHED_LINE) {
        w->overlong = TRUE;
        g_string_truncate(w->partial, 0);
      }
      continue;
    }
    if (!w->overlong && !w->stop) {
      if (w->partial->len > 0 && w->partial->str[w->partial->len - 1] == '\r')
        g_string_truncate(w->partial, w->partial->len - 1);
      if (!w->func(w->data, w->partial->str))
        w->stop = TRUE;
    }
    w->overlong = FALSE;
    g_string_truncate(w->partial, 0);
  }
}

/* One read on a readable pipe; closes it at end of file. */
static void
read_some(int *fd, GString *buffer, gsize keep, LineWatch *lines)
{
  char chunk[16384];
  ssize_t n;
  do
    n = read(*fd, chunk, sizeof chunk);
  while (n < 0 && errno == EINTR);
  if (n > 0) {
    keep_tail(buffer, chunk, (gsize) n, keep);
    watch_lines(lines, chunk, (gsize) n);
  } else if (n == 0 || errno != EAGAIN)
    close_fd(fd);
}

static gboolean
has_exited(pid_t pid)
{
  siginfo_t info;
  memset(&info, 0, sizeof info);
  /* WNOWAIT: leave the zombie, so that the group id stays ours until we
   * have killed what is left of the group. */
  return waitid(P_PID, (id_t) pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}

static int
open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
  int fd = (int) syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0)
    fcntl(fd, F_SETFD, FD_CLOEXEC);
  return fd;
#else
  return -1;
#endif
}

static gboolean
make_pipe(int fds[2], CommandRun *run)
{
  if (pipe2(fds, O_CLOEXEC) == 0)
    return TRUE;
  run->outcome = COMMAND_NOT_STARTED;
  run->error_text = g_strdup_printf("cannot create a pipe: %s", g_strerror(errno));
  return FALSE;
}

/* ---- the life pipe and the watcher ---------------------------------------- */

static int life_fds[2] = {-1, -1};
static int life_errno;

static gpointer
make_life_pipe(gpointer data)
{
  (void) data;
  /* Close-on-exec: no program inherits the write end; a watcher closes its
   * copy right after fork.  Sieve never writes to it and never closes it. */
  if (pipe2(life_fds, O_CLOEXEC) != 0)
    life_errno = errno;
  return NULL;
}

static int
life_read_end(void)
{
  static GOnce once = G_ONCE_INIT;
  g_once(&once, make_life_pipe, NULL);
  return life_fds[0];
}

/* Where the watcher keeps what it needs: 0-2 the program's stdio, then: */
enum { LIFE_FD = 3, REPORT_FD = 4 };

/* From here to the end of watch(): the forked side.  Async-signal-safe
 * calls only; no malloc, no GLib, no stdio. */

static void
on_sigchld(int sig)
{
  (void) sig; /* only to interrupt ppoll() */
}

static _Noreturn void
fail_child(int code)
{
  ssize_t ignored = write(REPORT_FD, &code, sizeof code);
  (void) ignored;
  _exit(127);
}

/* fd moved to the lowest free number >= 10, so that the dup2s onto 0-4 that
 * follow cannot clobber a descriptor still to be moved. */
static int
lift(int fd, int report_fd)
{
  int high = fcntl(fd, F_DUPFD, 10);
  if (high < 0) {
    int code = errno;
    ssize_t ignored = write(report_fd, &code, sizeof code);
    (void) ignored;
    _exit(127);
  }
  return high;
}

static _Noreturn void
watch(int life_fd, int in_fd, int out_fd, int err_fd, int report_fd, const char *program, char **argv,
      char **envp, const char *cwd)
{
  setpgid(0, 0);

  /* Signals: sieve's handlers must not run here.  Those a program may send
   * to its own group (a script's `trap 'kill 0' EXIT`) are ignored, so the
   * watcher lives to pass on the program's own status; SIGCHLD wakes it. */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);
  sa.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; sig++)
    sigaction(sig, &sa, NULL); /* fails harmlessly for SIGKILL, SIGSTOP and libc's own */
  sa.sa_handler = SIG_IGN;
  static const int ignored_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1,
                                        SIGUSR2, SIGALRM, SIGTSTP, SIGTTIN, SIGTTOU};
  for (size_t i = 0; i < sizeof ignored_signals / sizeof ignored_signals[0]; i++)
    sigaction(ignored_signals[i], &sa, NULL);
  sa.sa_handler = on_sigchld;
  sa.sa_flags = SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, NULL);

  /* Descriptors: 0-2 the program's stdio, 3 the life pipe, 4 the report
   * pipe; nothing else (fork copied every descriptor of sieve's, the life
   * pipe's write end and other trials' pipes included). */
  if (in_fd < 0) {
    in_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in_fd < 0) {
      int code = errno;
      ssize_t ignored = write(report_fd, &code, sizeof code);
      (void) ignored;
      _exit(127);
    }
  }
  report_fd = lift(report_fd, report_fd);
  in_fd = lift(in_fd, report_fd);
  out_fd = lift(out_fd, report_fd);
  err_fd = lift(err_fd, report_fd);
  life_fd = lift(life_fd, report_fd);
  if (dup2(report_fd, REPORT_FD) < 0 || dup2(in_fd, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
      dup2(err_fd, STDERR_FILENO) < 0 || dup2(life_fd, LIFE_FD) < 0) {
    int code = errno;
    ssize_t ignored = write(report_fd, &code, sizeof code);
    (void) ignored;
    _exit(127);
  }
  fcntl(REPORT_FD, F_SETFD, FD_CLOEXEC);
  closefrom(REPORT_FD + 1);

  /* vfork: the watcher is single-threaded and the child only makes
   * syscalls before execve or _exit, with every signal blocked until its
   * dispositions are reset; it spares a second copy of sieve's page tables. */
  pid_t child = vfork();
  if (child < 0)
    fail_child(errno);
  if (child == 0) {
    close(LIFE_FD);
    if (chdir(cwd) != 0)
      fail_child(errno);
    sa.sa_handler = SIG_DFL;
    sa.sa_flags = 0;
    for (int sig = 1; sig < NSIG; sig++)
      sigaction(sig, &sa, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(program, argv, envp);
    fail_child(errno);
  }

  /* The program holds the pipes now; the watcher lets go of them. */
  close(REPORT_FD);
  close(STDIN_FILENO);
  close(STDOUT_FILENO);
  close(STDERR_FILENO);
  sigset_t wait_mask;
  sigfillset(&wait_mask);
  sigdelset(&wait_mask, SIGCHLD);
  for (;;) {
    int status;
    pid_t got = waitpid(child, &status, WNOHANG);
    if (got == child && WIFEXITED(status))
      _exit(WEXITSTATUS(status));
    if (got == child && WIFSIGNALED(status)) {
      int sig = WTERMSIG(status);
      struct rlimit no_core = {0, 0};
      setrlimit(RLIMIT_CORE, &no_core); /* the program's crash, not a second core file */
      sa.sa_handler = SIG_DFL;
      sa.sa_flags = 0;
      sigaction(sig, &sa, NULL);
      kill(getpid(), sig);
      sigset_t just;
      sigemptyset(&just);
      sigaddset(&just, sig);
      sigprocmask(SIG_UNBLOCK, &just, NULL);
      _exit(128 + sig); /* not reached for a signal whose default ends a process */
    }
    if (got < 0 && errno == ECHILD)
      _exit(127); /* cannot happen: the program is our only child */
    struct pollfd life = {LIFE_FD, POLLIN, 0};
    if (ppoll(&life, 1, NULL, &wait_mask) > 0 && life.revents != 0) {
      /* Sieve is gone: nothing will read the program's result. */
      kill(0, SIGKILL);
      _exit(137);
    }
  }
}

/* ---- end of the forked side ------------------------------------------------ */

void
command_run(char **argv, char **envp, const char *cwd, const char *stdin_text, double timeout,
            CommandRun *run)
{
  command_run_watched(argv, envp, cwd, stdin_text, timeout, NULL, NULL, run);
}

void
command_run_watched(char **argv, char **envp, const char *cwd, const char *stdin_text, double timeout,
                    CommandLineFunc on_line, gpointer user_data, CommandRun *run)
{
  g_return_if_fail(argv != NULL && argv[0] != NULL && cwd != NULL && run != NULL);
  memset(run, 0, sizeof *run);
  run->out = g_string_new(NULL);
  run->err = g_string_new(NULL);
  if (envp == NULL)
    envp = environ;

  int error_code = 0;
  g_autofree char *program = find_program(argv[0], envp, cwd, &error_code);
  if (program == NULL) {
    run->outcome = COMMAND_NOT_STARTED;
    run->error_text = g_strdup_printf("cannot run '%s': %s", argv[0], g_strerror(error_code));
    return;
  }

  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  if ((stdin_text != NULL && !make_pipe(in_pipe, run)) || !make_pipe(out_pipe, run) || !make_pipe(err_pipe, run)) {
    close_fd(&in_pipe[0]), close_fd(&in_pipe[1]), close_fd(&out_pipe[0]), close_fd(&out_pipe[1]);
    return;
  }

  int report[2] = {-1, -1}; /* chdir/exec failure: the program's errno */
  int life_fd = life_read_end();
  if (life_fd < 0 || !make_pipe(report, run)) {
    if (life_fd < 0) {
      run->outcome = COMMAND_NOT_STARTED;
      run->error_text = g_strdup_printf("cannot create a pipe: %s", g_strerror(life_errno));
    }
    close_fd(&in_pipe[0]), close_fd(&in_pipe[1]), close_fd(&out_pipe[0]), close_fd(&out_pipe[1]);
    close_fd(&err_pipe[0]), close_fd(&err_pipe[1]);
    return;
  }

  /* A program that does not read its stdin makes our write fail with
   * EPIPE; block SIGPIPE in this thread only (it is thread-directed), so
   * the write returns an error instead of killing sieve. */
  sigset_t pipe_set, old_mask;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_mask);

  /* Every signal blocked across fork: the watcher must not run sieve's
   * handlers before it has reset them. */
  sigset_t all, pipe_mask;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &pipe_mask);
  gint64 start = g_get_monotonic_time();
  pid_t pid = fork();
  if (pid == 0)
    watch(life_fd, in_pipe[0], out_pipe[1], err_pipe[1], report[1], program, argv, envp, cwd);
  int fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &pipe_mask, NULL);
  if (pid > 0)
    setpgid(pid, pid); /* also here, so that kill(-pid) works at once */
  close_fd(&in_pipe[0]);
  close_fd(&out_pipe[1]);
  close_fd(&err_pipe[1]);
  close_fd(&report[1]);
  int in_fd = in_pipe[1], out_fd = out_pipe[0], err_fd = err_pipe[0];
  int exec_errno = 0;
  if (pid > 0) {
    /* End of file once the program has exec'd (or the watcher died). */
    ssize_t got;
    do
      got = read(report[0], &exec_errno, sizeof exec_errno);
    while (got < 0 && errno == EINTR);
    if (got != (ssize_t) sizeof exec_errno)
      exec_errno = 0;
  }
  close_fd(&report[0]);
  if (pid < 0 || exec_errno != 0) {
    run->outcome = COMMAND_NOT_STARTED;
    run->error_text = g_strdup_printf("cannot run '%s': %s", argv[0], g_strerror(pid < 0 ? fork_errno : exec_errno));
    close_fd(&in_fd), close_fd(&out_fd), close_fd(&err_fd);
    if (pid > 0) {
      kill(-pid, SIGKILL);
      while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    }
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    return;
  }

  fcntl(out_fd, F_SETFL, O_NONBLOCK);
  fcntl(err_fd, F_SETFL, O_NONBLOCK);
  if (in_fd >= 0)
    fcntl(in_fd, F_SETFL, O_NONBLOCK);
  int pidfd = open_pidfd(pid);
  gsize in_done = 0, in_len = stdin_text ? strlen(stdin_text) : 0;
  if (in_fd >= 0 && in_len == 0)
    close_fd(&in_fd);
  gboolean got_epipe = FALSE, exited = FALSE, timed_out = FALSE;
  g_autoptr(GString) partial = g_string_new(NULL);
  LineWatch lines = {partial, on_line, user_data, FALSE, FALSE};
  gint64 deadline = timeout > 0 ? start + (gint64) (timeout * G_USEC_PER_SEC) : G_MAXINT64;

  while (!exited && !timed_out) {
    struct pollfd pfd[4];
    nfds_t n = 0;
    if (out_fd >= 0)
      pfd[n++] = (struct pollfd){out_fd, POLLIN, 0};
    if (err_fd >= 0)
      pfd[n++] = (struct pollfd){err_fd, POLLIN, 0};
    if (in_fd >= 0)
      pfd[n++] = (struct pollfd){in_fd, POLLOUT, 0};
    if (pidfd >= 0)
      pfd[n++] = (struct pollfd){pidfd, POLLIN, 0};
    /* Without a pidfd, exit is noticed by polling every 20 ms. */
    int wait_ms = pidfd >= 0 ? -1 : 20;
    if (deadline != G_MAXINT64) {
      gint64 left = (deadline - g_get_monotonic_time() + 999) / 1000;
      int left_ms = (int) CLAMP(left, 0, G_MAXINT);
      wait_ms = wait_ms < 0 ? left_ms : MIN(wait_ms, left_ms);
    }
    if (poll(pfd, n, wait_ms) < 0 && errno != EINTR)
      g_usleep(1000); /* cannot happen with valid descriptors; do not spin */

    for (nfds_t k = 0; k < n; k++) {
      if (pfd[k].revents == 0)
        continue;
      if (pfd[k].fd == out_fd)
        read_some(&out_fd, run->out, COMMAND_KEEP_STDOUT, &lines);
      else if (pfd[k].fd == err_fd)
        read_some(&err_fd, run->err, COMMAND_KEEP_STDERR, NULL);
      else if (pfd[k].fd == in_fd) {
        ssize_t w = write(in_fd, stdin_text + in_done, in_len - in_done);
        if (w > 0)
          in_done += (gsize) w;
        else if (w < 0 && errno != EAGAIN && errno != EINTR) {
          got_epipe = got_epipe || errno == EPIPE;
          close_fd(&in_fd); /* the program does not want (more of) it */
        }
        if (in_done == in_len)
          close_fd(&in_fd); /* end of file tells the program the object is complete */
      }
    }
    /* Told to stop: the program's group gets SIGTERM once, and may use
     * what is left of its timeout to finish (a checkpoint, say). */
    if (lines.stop && !run->stopped) {
      run->stopped = TRUE;
      kill(-pid, SIGTERM);
    }
    if (has_exited(pid))
      exited = TRUE;
    else if (g_get_monotonic_time() >= deadline)
      timed_out = TRUE;
  }
  run->seconds = (double) (g_get_monotonic_time() - start) / G_USEC_PER_SEC;

  /* The leader is still a zombie, so -pid is still its group: kill whatever
   * of it is left (everything, on a timeout). */
  kill(-pid, SIGKILL);
  close_fd(&in_fd);
  gint64 drain_end = g_get_monotonic_time() + DRAIN_MS * 1000;
  while ((out_fd >= 0 || err_fd >= 0) && g_get_monotonic_time() < drain_end) {
    struct pollfd pfd[2];
    nfds_t n = 0;
    if (out_fd >= 0)
      pfd[n++] = (struct pollfd){out_fd, POLLIN, 0};
    if (err_fd >= 0)
      pfd[n++] = (struct pollfd){err_fd, POLLIN, 0};
    if (poll(pfd, n, 50) <= 0)
      continue;
    for (nfds_t k = 0; k < n; k++)
      if (pfd[k].revents != 0) {
        if (pfd[k].fd == out_fd)
          read_some(&out_fd, run->out, COMMAND_KEEP_STDOUT, &lines);
        else
          read_some(&err_fd, run->err, COMMAND_KEEP_STDERR, NULL);
      }
  }
  /* A last line without its line end (a final write with no newline) is a
   * line too: the program has ended, nothing more will complete it. */
  if (on_line != NULL && !timed_out && partial->len > 0 && !lines.overlong && !lines.stop) {
    if (partial->str[partial->len - 1] == '\r')
      g_string_truncate(partial, partial->len - 1);
    if (!on_line(user_data, partial->str))
      lines.stop = TRUE;
  }
  close_fd(&out_fd);
  close_fd(&err_fd);
  close_fd(&pidfd);

  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (timed_out) {
    run->outcome = COMMAND_TIMED_OUT;
  } else if (WIFSIGNALED(status)) {
    run->outcome = COMMAND_SIGNALED;
    run->status = WTERMSIG(status);
  } else {
    run->outcome = COMMAND_EXITED;
    run->status = WEXITSTATUS(status);
  }

  if (got_epipe) {
    /* Take the SIGPIPE our write raised before unblocking it. */
    const struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, NULL, &zero) == SIGPIPE)
      ;
  }
  pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
}

void
command_run_clear(CommandRun *run)
{
  if (run == NULL)
    return;
  g_free(run->error_text);
  if (run->out)
    g_string_free(run->out, TRUE);
  if (run->err)
    g_string_free(run->err, TRUE);
  memset(run, 0, sizeof *run);
}

char *
command_last_line(const GString *text)
{
  if (text == NULL)
    return NULL;
  gsize end = text->len;
  while (end > 0) {
    gsize begin = end;
    while (begin > 0 && text->str[begin - 1] != '\n')
      begin--;
    g_autofree char *line = g_strndup(text->str + begin, end - begin);
    g_strstrip(line);
    if (line[0] != '\0')
      return g_steal_pointer(&line);
    end = begin > 0 ? begin - 1 : 0;
  }
  return NULL;
}
