/* sieve: the checks every command that writes a file next to reading a
 * study makes first: the file must not be the study's store, and it must
 * be writable before hours of work end in writing it.
 *
 * `sieve report S -o S` once replaced the store with its own HTML page
 * (a small study survived only in its -wal file).  The store is SQLite: its
 * file and the side files SQLite keeps beside it (-wal, -shm, -journal)
 * are all the study.  A file that exists is compared by device and inode
 * (hard links, symbolic links, other spellings); one that does not yet
 * exist by its path with the folder resolved. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "cli/cli-private.h"
#include "base/base-private.h"

/* The absolute path with its folder's symbolic links and ".." resolved;
 * the name itself as given (it may not exist). */
static char *
resolved_path(const char *path)
{
  g_autofree char *absolute = g_canonicalize_filename(path, NULL);
  g_autofree char *dir = g_path_get_dirname(absolute);
  g_autofree char *base = g_path_get_basename(absolute);
  char *real = realpath(dir, NULL);
  if (real == NULL)
    return g_steal_pointer(&absolute);
  char *out = g_build_filename(real, base, NULL);
  free(real);
  return out;
}

static gboolean
same_file(const char *a, const char *b)
{
  GStatBuf sa, sb;
  if (g_stat(a, &sa) == 0 && g_stat(b, &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  g_autofree char *ra = resolved_path(a);
  g_autofree char *rb = resolved_path(b);
  return g_str_equal(ra, rb);
}

gboolean
sieve_cli_check_output(const char *store, const char *output, const char *what, GError **error)
{
  if (store == NULL || output == NULL || sieve_store_is_url(store))
    return TRUE;
  static const char *const sides[] = {"", "-wal", "-shm", "-journal"};
  /* SQLite names the side files after the store's path as opened; a
   * symbolic link's target may have its own. */
  g_autofree char *real = realpath(store, NULL);
  const char *stems[] = {store, real};
  for (guint s = 0; s < G_N_ELEMENTS(stems); s++)
    for (guint i = 0; stems[s] && i < G_N_ELEMENTS(sides); i++) {
      g_autofree char *file = g_strconcat(stems[s], sides[i], NULL);
      if (!same_file(output, file))
        continue;
      if (i == 0)
        g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                    "%s %s is the study's store %s: writing it would destroy the study (choose another file)", what,
                    output, store);
      else
        g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                    "%s %s is the SQLite %s file of the study's store %s: writing it would destroy the study "
                    "(choose another file)",
                    what, output, sides[i] + 1, store);
      return FALSE;
    }
  return TRUE;
}

gboolean
sieve_cli_check_writable(const char *output, const char *what, GError **error)
{
  if (output == NULL)
    return TRUE;
  if (g_file_test(output, G_FILE_TEST_IS_DIR)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "%s %s is a folder: expected the name of a file to write",
                what, output);
    return FALSE;
  }
  /* A device or a pipe is written into: it must take writing.  Any other
   * file is written as a temporary one beside it and renamed over it: its
   * folder must exist and take new files. */
  if (sieve__file_is_special(output)) {
    if (g_access(output, W_OK) == 0)
      return TRUE;
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "%s %s cannot be written: %s", what, output,
                g_strerror(errno));
    return FALSE;
  }
  g_autofree char *dir = g_path_get_dirname(output);
  if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "%s %s: the folder %s does not exist", what, output, dir);
    return FALSE;
  }
  if (g_access(dir, W_OK | X_OK) != 0) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "%s %s: the folder %s does not take new files: %s", what,
                output, dir, g_strerror(errno));
    return FALSE;
  }
  return TRUE;
}
