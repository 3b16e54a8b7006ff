/* sieve report STORE [-o FILE] [--open] */
#include <gio/gio.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli-private.h"
#include "report/report-private.h"
#include "base/base-private.h"

/* "runs/study.sieve" -> "runs/study.html": the report beside its store. */
static char *
default_output(const char *store)
{
  g_autofree char *stem = g_str_has_suffix(store, ".sieve") ? g_strndup(store, strlen(store) - 6) : g_strdup(store);
  return g_strconcat(stem, ".html", NULL);
}

int
sieve_cmd_report(int argc, char **argv)
{
  g_autofree char *output = NULL;
  gboolean open_it = FALSE;
  GOptionEntry entries[] = {
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "write the page to FILE (default: STORE with .html)", "FILE"},
      {"open", 0, 0, G_OPTION_ARG_NONE, &open_it, "open the page in the desktop's browser", NULL},
      {NULL},
  };
  g_autoptr(GOptionContext) context = g_option_context_new("STORE - write a study's report as one HTML file");
  g_option_context_set_description(
      context, "One self-contained HTML page (inline SVG, nothing fetched from elsewhere, readable with\n"
               "scripting off): the study's header, the funnel of the sieve, the optimization history,\n"
               "the Pareto front, objective against fidelity, proxies against the objective, decision\n"
               "importance and the top trials with their networks, each where the study has the data.\n"
               "The store may belong to a study still running; it is only read.");
  g_option_context_add_main_entries(context, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(context, &argc, &argv, &error))
    return sieve_cli_fail(error);
  if (argc != 2) {
    fprintf(stderr, "sieve report: expected one STORE argument (see 'sieve report --help')\n");
    return SIEVE_EXIT_USAGE;
  }
  g_autofree char *path = output ? g_strdup(output) : default_output(argv[1]);
  if (!sieve_cli_check_output(argv[1], path, output ? "--output" : "the report", &error))
    return sieve_cli_fail(error);
  g_autoptr(SieveStore) store = sieve_store_open(argv[1], SIEVE_STORE_READ, &error);
  if (store == NULL)
    return sieve_cli_fail(error);
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  g_autoptr(GPtrArray) refused = g_ptr_array_new_with_free_func((GDestroyNotify) g_error_free);
  sieve_registry_load_default(registry, NULL, refused);
  sieve_cli_warn_refused(refused);
  g_autoptr(SieveSpace) space = NULL;
  g_autoptr(SieveReport) report = sieve_report_load(store, registry, &space, &error);
  if (report == NULL)
    return sieve_cli_fail(error);
  g_autofree char *html = sieve_report_to_html(report, NULL);
  if (!sieve__file_write(path, html, strlen(html), FALSE, &error))
    return sieve_cli_fail(error);
  printf("report: %s (%u trials, %zu KB)\n", path, report->trials->len, (strlen(html) + 1023) / 1024);
  if (open_it) {
    g_autoptr(GFile) file = g_file_new_for_commandline_arg(path);
    g_autofree char *uri = g_file_get_uri(file);
    if (!g_app_info_launch_default_for_uri(uri, NULL, &error))
      return sieve_cli_fail(error);
  }
  return SIEVE_EXIT_OK;
}
