/* sieve export STORE [--format csv|json] [--summary|--finals|--intermediate] */
#include <gio/gunixoutputstream.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli-private.h"
#include "base/base-private.h"

int
sieve_cmd_export(int argc, char **argv)
{
  g_autofree char *format = NULL;
  g_autofree char *output = NULL;
  gboolean summary = FALSE, finals = FALSE, intermediate = FALSE;
  GOptionEntry entries[] = {
      {"finals", 0, 0, G_OPTION_ARG_NONE, &finals, "print the final trainings (sieve final) instead of the trials",
       NULL},
      {"intermediate", 0, 0, G_OPTION_ARG_NONE, &intermediate,
       "print the intermediate values (trial, step, fidelity, value; one row each) instead of the trials", NULL},
      {"summary", 0, 0, G_OPTION_ARG_NONE, &summary,
       "print the counts of the trials' outcomes (evaluated, cached, screened, pending) instead", NULL},
      {"format", 'f', 0, G_OPTION_ARG_STRING, &format, "csv (default) or json", "FORMAT"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
       "write to FILE instead of standard output (- is standard output)", "FILE"},
      {NULL},
  };
  g_autoptr(GOptionContext) context = g_option_context_new("STORE - print a study's trials");
  g_option_context_set_description(context,
                                   "Every trial with its genotype, status, fidelity, one column per metric, cost,\n"
                                   "timings, worker, hash, the trial it reuses (cached_from) and reason; with\n"
                                   "--summary, the counts of the outcomes instead.  The store may belong to a\n"
                                   "study still running.");
  g_option_context_add_main_entries(context, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(context, &argc, &argv, &error))
    return sieve_cli_fail(error);
  if (argc != 2) {
    fprintf(stderr, "sieve export: expected one STORE argument\n");
    return SIEVE_EXIT_USAGE;
  }
  /* Alternatives: two of them would silently print only one. */
  const char *given[3];
  guint n_given = 0;
  if (summary)
    given[n_given++] = "--summary";
  if (finals)
    given[n_given++] = "--finals";
  if (intermediate)
    given[n_given++] = "--intermediate";
  if (n_given > 1) {
    fprintf(stderr, "sieve export: %s and %s are alternatives: give one of --summary, --finals, --intermediate\n",
            given[0], given[1]);
    return SIEVE_EXIT_USAGE;
  }
  SieveExportFormat fmt;
  if (format == NULL || strcmp(format, "csv") == 0)
    fmt = SIEVE_EXPORT_CSV;
  else if (strcmp(format, "json") == 0)
    fmt = SIEVE_EXPORT_JSON;
  else {
    fprintf(stderr, "sieve export: unknown format '%s' (expected csv or json)\n", format);
    return SIEVE_EXIT_USAGE;
  }
  /* "-" is standard output, as `sieve hash -` reads standard input. */
  if (output != NULL && strcmp(output, "-") == 0)
    g_clear_pointer(&output, g_free);
  if (!sieve_cli_check_output(argv[1], output, "--output", &error) ||
      !sieve_cli_check_writable(output, "--output", &error))
    return sieve_cli_fail(error);
  g_autoptr(SieveStore) store = sieve_store_open(argv[1], SIEVE_STORE_READ, &error);
  if (store == NULL)
    return sieve_cli_fail(error);
  /* A file is written whole or not at all, as a report or a model file
   * is (sieve__file_write): the export is made in memory first, so a
   * failed write (a full disk) leaves the old file and no temporary. */
  g_autoptr(GOutputStream) out =
      output != NULL ? g_memory_output_stream_new_resizable() : g_unix_output_stream_new(1, FALSE);
  gboolean ok = intermediate ? sieve_store_export_intermediate(store, fmt, out, &error)
                : finals  ? sieve_store_export_finals(store, fmt, out, &error)
                : summary ? sieve_store_export_summary(store, fmt, out, &error)
                          : sieve_store_export(store, fmt, out, &error);
  if (!ok || !g_output_stream_close(out, NULL, &error))
    return sieve_cli_fail(error);
  if (output != NULL) {
    GMemoryOutputStream *mem = G_MEMORY_OUTPUT_STREAM(out);
    if (!sieve__file_write(output, g_memory_output_stream_get_data(mem), g_memory_output_stream_get_data_size(mem),
                           FALSE, &error))
      return sieve_cli_fail(error);
  }
  return SIEVE_EXIT_OK;
}
