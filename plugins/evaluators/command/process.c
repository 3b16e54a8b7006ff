/* command evaluator: running one program (see process.h).
 *
 * Why posix_spawn and a poll() loop rather than GSubprocess: a trial needs
 * its own process group (to kill grandchildren on a timeout), a deadline
 * without a main context per thread, and a way to notice that the program
 * exited while something it started in the background still holds its
 * pipes.  posix_spawn (glibc: clone(CLONE_VFORK) + exec) is safe from many
 * threads, and POSIX_SPAWN_SETPGROUP makes the group before exec, so the
 * group exists by the time posix_spawn returns.
 */
#define _GNU_SOURCE
#include "process.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
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
    /* Checked here too, not only by exec: where posix_spawn cannot report
     * exec's errno (e.g. under valgrind, which turns vfork into fork) the
     * reason would otherwise be a bare "exited with status 127". */
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

/* One read on a readable pipe; closes it at end of file. */
static void
read_some(int *fd, GString *buffer, gsize keep)
{
  char chunk[16384];
  ssize_t n;
  do
    n = read(*fd, chunk, sizeof chunk);
  while (n < 0 && errno == EINTR);
  if (n > 0)
    keep_tail(buffer, chunk, (gsize) n, keep);
  else if (n == 0 || errno != EAGAIN)
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

void
command_run(char **argv, char **envp, const char *cwd, const char *stdin_text, double timeout,
            CommandRun *run)
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

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stdin_text != NULL)
    posix_spawn_file_actions_adddup2(&actions, in_pipe[0], STDIN_FILENO);
  else
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  posix_spawn_file_actions_addchdir_np(&actions, cwd);
  /* Descriptors other threads opened without O_CLOEXEC must not leak into
   * the program (a leaked pipe end would keep another trial from seeing EOF). */
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none, defaults;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigemptyset(&defaults);
  static const int reset[] = {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD, SIGTSTP, SIGTTIN, SIGTTOU};
  for (guint i = 0; i < G_N_ELEMENTS(reset); i++)
    sigaddset(&defaults, reset[i]);
  posix_spawnattr_setsigdefault(&attr, &defaults);

  /* A program that does not read its stdin makes our write fail with
   * EPIPE; block SIGPIPE in this thread only (it is thread-directed), so
   * the write returns an error instead of killing sieve. */
  sigset_t pipe_set, old_mask;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_mask);

  gint64 start = g_get_monotonic_time();
  pid_t pid = -1;
  int rc = posix_spawn(&pid, program, &actions, &attr, argv, envp);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close_fd(&in_pipe[0]);
  close_fd(&out_pipe[1]);
  close_fd(&err_pipe[1]);
  int in_fd = in_pipe[1], out_fd = out_pipe[0], err_fd = err_pipe[0];
  if (rc != 0) {
    run->outcome = COMMAND_NOT_STARTED;
    run->error_text = g_strdup_printf("cannot run '%s': %s", argv[0], g_strerror(rc));
    close_fd(&in_fd), close_fd(&out_fd), close_fd(&err_fd);
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
        read_some(&out_fd, run->out, COMMAND_KEEP_STDOUT);
      else if (pfd[k].fd == err_fd)
        read_some(&err_fd, run->err, COMMAND_KEEP_STDERR);
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
          read_some(&out_fd, run->out, COMMAND_KEEP_STDOUT);
        else
          read_some(&err_fd, run->err, COMMAND_KEEP_STDERR);
      }
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
