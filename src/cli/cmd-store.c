/* sieve store copy SRC DST: a study from one store to another, SQLite or
 * PostgreSQL either way (to move a study to a shared server, or to take
 * one home as a file). */
#include <stdio.h>
#include <string.h>

#include <glib/gstdio.h>

#include "cli/cli-private.h"

int
sieve_cmd_store(int argc, char **argv)
{
  g_autoptr(GOptionContext) context = g_option_context_new("copy SRC DST - copy a study between stores");
  g_option_context_set_description(context,
                                   "Every table of the study in SRC (a file or a postgresql:// URL) is copied\n"
                                   "into DST, a new store (a file or a study on a server, made on first use),\n"
                                   "in one transaction: trials, metrics, the optimizer's state, the dedupe\n"
                                   "cache, kept weights and final trainings.  `sieve run --resume` then goes\n"
                                   "on from DST exactly as it would have from SRC.");
  GError *error = NULL;
  if (!g_option_context_parse(context, &argc, &argv, &error))
    return sieve_cli_fail(error);
  if (argc != 4 || strcmp(argv[1], "copy") != 0) {
    fprintf(stderr, "sieve store: expected: sieve store copy SRC DST\n");
    return SIEVE_EXIT_USAGE;
  }
  g_autofree char *src_name = sieve_store_canonical_name(argv[2]);
  g_autofree char *dst_name = sieve_store_canonical_name(argv[3]);
  /* A copy onto its own source (or the source's -wal) would lose both. */
  if (!sieve_cli_check_output(src_name, dst_name, "DST", &error))
    return sieve_cli_fail(error);
  g_autoptr(SieveStore) src = sieve_store_open(src_name, SIEVE_STORE_READ, &error);
  if (src == NULL)
    return sieve_cli_fail(error);
  /* A copy that fails leaves no file behind that was not there (an empty
   * store, its -wal, -shm, -journal), and never removes one that was. */
  static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
  gboolean made[G_N_ELEMENTS(suffixes)] = {FALSE};
  for (guint i = 0; !sieve_store_is_url(dst_name) && i < G_N_ELEMENTS(suffixes); i++) {
    g_autofree char *file = g_strconcat(dst_name, suffixes[i], NULL);
    made[i] = !g_file_test(file, G_FILE_TEST_EXISTS);
  }
  g_autoptr(SieveStore) dst = sieve_store_open(dst_name, SIEVE_STORE_WRITE, &error);
  if (dst == NULL || !sieve_store_copy(src, dst, &error)) {
    g_clear_pointer(&dst, sieve_store_close);
    for (guint i = 0; made[0] && i < G_N_ELEMENTS(suffixes); i++) {
      g_autofree char *file = g_strconcat(dst_name, suffixes[i], NULL);
      if (made[i])
        g_unlink(file);
    }
    return sieve_cli_fail(error);
  }
  gint64 n = sieve_store_count_trials(dst, -1, &error);
  if (n < 0)
    return sieve_cli_fail(error);
  printf("copied %" G_GINT64_FORMAT " trials from %s to %s\n", n, sieve_store_get_path(src), sieve_store_get_path(dst));
  return SIEVE_EXIT_OK;
}
