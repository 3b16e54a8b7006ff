/* sieve report STORE [-o FILE|-] [--open] */
#include <errno.h>
#include <gio/gio.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli-private.h"
#include "report/report-private.h"
#include "base/base-private.h"

/* "runs/study.sieve" -> "runs/study.html": the report beside its store.
 * A PostgreSQL study has no file to sit beside: STUDY.html in the current
 * folder, STUDY the URL's `study` parameter ("sieve" when absent, as the
 * store reads it), a '/' in it made '_'. */
static char *
default_output(const char *store)
{
  if (sieve_store_is_url(store)) {
    const char *query = strchr(store, '?');
    g_autoptr(GHashTable) params =
        query ? g_uri_parse_params(query + 1, -1, "&", G_URI_PARAMS_NONE, NULL) : NULL;
    const char *study = params ? g_hash_table_lookup(params, "study") : NULL;
    g_autofree char *name = g_strdup(study && study[0] && strcmp(study, ".") != 0 && strcmp(study, "..") != 0
                                         ? study : "sieve");
    g_strdelimit(name, G_DIR_SEPARATOR_S, '_');
    return g_strconcat(name, ".html", NULL);
  }
  g_autofree char *stem = g_str_has_suffix(store, ".sieve") ? g_strndup(store, strlen(store) - 6) : g_strdup(store);
  return g_strconcat(stem, ".html", NULL);
}

int
sieve_cmd_report(int argc, char **argv)
{
  g_autofree char *output = NULL;
  gboolean open_it = FALSE;
  GOptionEntry entries[] = {
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
       "write the page to FILE; - for standard output (default: STORE with .html, or STUDY.html in the current "
       "folder for a postgresql:// store)",
       "FILE"},
      {"open", 0, 0, G_OPTION_ARG_NONE, &open_it, "open the page in the desktop's browser", NULL},
      {NULL},
  };
  g_autoptr(GOptionContext) context = g_option_context_new("STORE - write a study's report as one HTML file");
  g_option_context_set_description(
      context, "One self-contained HTML page (inline SVG, nothing fetched from elsewhere, readable with\n"
               "scripting off): the study's header, the funnel of the sieve, the optimization history,\n"
               "the Pareto front, objective against fidelity, proxies against the objective, decision\n"
               "importance and the top trials with their networks, each where the study has the data.\n"
               "The store may belong to a study still running; it is only read.  Without -o the page goes\n"
               "beside the store (runs/s.sieve -> runs/s.html); for a postgresql:// store, to STUDY.html in\n"
               "the current folder, STUDY the URL's study parameter (sieve by default).  -o - writes it to\n"
               "standard output.");
  g_option_context_add_main_entries(context, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(context, &argc, &argv, &error))
    return sieve_cli_fail(error);
  if (argc != 2) {
    fprintf(stderr, "sieve report: expected one STORE argument (see 'sieve report --help')\n");
    return SIEVE_EXIT_USAGE;
  }
  g_autofree char *path = output ? g_strdup(output) : default_output(argv[1]);
  gboolean to_stdout = strcmp(path, "-") == 0;
  if (to_stdout && open_it) {
    fprintf(stderr, "sieve report: --open needs a file: -o - writes the page to standard output\n");
    return SIEVE_EXIT_USAGE;
  }
  if (!to_stdout && (!sieve_cli_check_output(argv[1], path, output ? "--output" : "the report", &error) ||
                     !sieve_cli_check_writable(path, output ? "--output" : "the report", &error)))
    return sieve_cli_fail(error);
  g_autoptr(SieveStore) store = sieve_store_open(argv[1], SIEVE_STORE_READ, &error);
  if (store == NULL)
    return sieve_cli_fail(error);
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  g_autoptr(GPtrArray) refused = g_ptr_array_new_with_free_func((GDestroyNotify) g_error_free);
  sieve_registry_load_default(registry, NULL, refused);
  sieve_cli_warn_refused(refused);
  /* Freed after the space its scripts' components made. */
  g_auto(SieveCliStudyLua) lua = {0};
  g_autoptr(SieveSpace) space = NULL;
  g_autoptr(SieveReport) report = sieve_cli_report_load(store, registry, &lua, &space, &error);
  if (report == NULL)
    return sieve_cli_fail(error);
  g_autofree char *html = sieve_report_to_html(report, NULL);
  if (to_stdout) {
    /* The page alone on standard output; the line that says what was
     * written goes to standard error. */
    if (fwrite(html, 1, strlen(html), stdout) != strlen(html) || fflush(stdout) != 0) {
      fprintf(stderr, "sieve: standard output: cannot write: %s\n", g_strerror(errno));
      return SIEVE_EXIT_FAILURE;
    }
    fprintf(stderr, "report: standard output (%u trials, %zu KB)\n", report->trials->len, (strlen(html) + 1023) / 1024);
    return SIEVE_EXIT_OK;
  }
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
