/* sieve: writing an output file (a report, a weights file, an .npy) whole. */
#include "base/base-private.h"

#include <sieve/abi.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int
sieve__file_open_in_place(const char *path, GError **error)
{
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_IO, "%s: cannot write: %s", path, g_strerror(e));
  }
  return fd;
}

gboolean
sieve__file_is_special(const char *path)
{
  struct stat st;
  /* stat, not lstat: a link to a device is a device. */
  return stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

/* Into a file that exists and is not a regular file: a device or a pipe. */
static gboolean
write_in_place(const char *path, const char *data, gsize size, GError **error)
{
  int fd = sieve__file_open_in_place(path, error);
  if (fd < 0)
    return FALSE;
  gsize done = 0;
  while (done < size) {
    gssize n = write(fd, data + done, size - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int e = n < 0 ? errno : EIO;
      close(fd);
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_IO, "%s: cannot write: %s", path, g_strerror(e));
      return FALSE;
    }
    done += (gsize) n;
  }
  if (close(fd) != 0) {
    int e = errno;
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_IO, "%s: cannot write: %s", path, g_strerror(e));
    return FALSE;
  }
  return TRUE;
}

/* What a symbolic link at path names, or NULL when path is no link.
 * (transfer full) */
static char *
link_target(const char *path)
{
  struct stat st;
  if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode))
    return NULL;
  char *real = realpath(path, NULL);
  if (real != NULL) {
    char *copy = g_strdup(real);
    free(real);
    return copy;
  }
  /* A dangling link: the file it would name, made where it points. */
  g_autofree char *text = g_file_read_link(path, NULL);
  if (text == NULL)
    return NULL;
  g_autofree char *dir = g_path_get_dirname(path);
  g_autofree char *absolute = g_canonicalize_filename(dir, NULL);
  return g_canonicalize_filename(text, absolute);
}

gboolean
sieve__file_write(const char *path, const void *data, gsize size, gboolean durable, GError **error)
{
  g_return_val_if_fail(path != NULL && (data != NULL || size == 0), FALSE);
  const char *bytes = data != NULL ? data : "";
  if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_IO, "%s: cannot write: it is a folder", path);
    return FALSE;
  }
  if (sieve__file_is_special(path)) {
    /* A regular file is replaced by a temporary one renamed over it, so
     * that a reader never sees half of it; done to /dev/null or a FIFO, that
     * rename would replace the device itself with a plain file (as root,
     * `--report /dev/null` did). Those are written into instead. */
    return write_in_place(path, bytes, size, error);
  }
  /* A link to a regular file (or to none yet): the file it names is
   * replaced, the link kept. */
  g_autofree char *target = link_target(path);
  if (target != NULL)
    path = target;
  GError *local = NULL;
  GFileSetContentsFlags flags = G_FILE_SET_CONTENTS_CONSISTENT | (durable ? G_FILE_SET_CONTENTS_DURABLE : 0);
  if (!g_file_set_contents_full(path, bytes, (gssize) size, flags, 0666, &local)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_IO, "%s: cannot write: %s", path, local->message);
    g_error_free(local);
    return FALSE;
  }
  return TRUE;
}
