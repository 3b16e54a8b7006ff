/* What the commands that rebuild a stored study share. */
#include "cli/cli-private.h"

char *
sieve_cli_study_dir(SieveStore *store)
{
  /* Relative paths (a space file, a command's script, data) are the config
   * file's: its folder as the run stored it (absolute), not this process's
   * working directory.  A store without it (or a folder this machine
   * lacks) keeps the config's path as typed. */
  char *dir = sieve_store_get_meta(store, "config_dir", NULL);
  if (dir != NULL && g_path_is_absolute(dir) && g_file_test(dir, G_FILE_TEST_IS_DIR))
    return dir;
  g_free(dir);
  g_autofree char *config_path = sieve_store_get_meta(store, "config_path", NULL);
  return config_path ? g_path_get_dirname(config_path) : g_get_current_dir();
}
