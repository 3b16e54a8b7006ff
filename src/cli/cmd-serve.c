/* sieve serve STORE [--port P] [--host H] */
#include <libsoup/soup.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli-private.h"
#include "report/report-private.h"

typedef struct {
  SieveStore *store;       /* read-only: the server never writes the study */
  SieveRegistry *registry;
  SieveCliStudyLua lua;    /* the stored study's lua.load scripts, run once it holds a config */
  SieveSpace *space;       /* rebuilt once the store holds a config */
  SieveReport *report;     /* the last one read, reused while nothing changed */
  gint64 total, pending;   /* what the cached report was read at */
} Server;

/* The report of the store as it is now: read again only when a trial was
 * added or finished, so that polling viewers cost the study almost nothing
 * (two counting queries). */
static SieveReport *
current_report(Server *server, GError **error)
{
  gint64 total = sieve_store_count_trials(server->store, -1, error);
  gint64 pending = total < 0 ? -1 : sieve_store_count_trials(server->store, SIEVE_STATUS_PENDING, error);
  if (pending < 0)
    return NULL;
  if (server->report != NULL && total == server->total && pending == server->pending)
    return server->report;
  g_clear_pointer(&server->report, sieve_report_free);
  if (server->space == NULL) {
    /* A study started after the server has no config at first. */
    g_autoptr(SieveReport) report =
        sieve_cli_report_load(server->store, server->registry, &server->lua, &server->space, error);
    if (report == NULL)
      return NULL;
    if (server->space == NULL) {
      server->report = g_steal_pointer(&report);
      server->total = total;
      server->pending = pending;
      return server->report;
    }
  }
  server->report = sieve_report_new(server->store, server->space, error);
  server->total = total;
  server->pending = pending;
  return server->report;
}

static void
respond(SoupServerMessage *msg, guint status, const char *type, char *body)
{
  soup_server_message_set_status(msg, status, NULL);
  SoupMessageHeaders *headers = soup_server_message_get_response_headers(msg);
  soup_message_headers_replace(headers, "Cache-Control", "no-store");
  soup_server_message_set_response(msg, type, SOUP_MEMORY_TAKE, body, strlen(body));
}

static void
handle(SoupServer *soup, SoupServerMessage *msg, const char *path, GHashTable *query, gpointer data)
{
  (void) soup;
  (void) query;
  Server *server = data;
  const char *method = soup_server_message_get_method(msg);
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
    respond(msg, SOUP_STATUS_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8", g_strdup("only GET and HEAD\n"));
    return;
  }
  gboolean page = strcmp(path, "/") == 0 || strcmp(path, "/index.html") == 0;
  gboolean status = strcmp(path, "/status") == 0;
  if (!page && !status) {
    respond(msg, SOUP_STATUS_NOT_FOUND, "text/plain; charset=utf-8",
            g_strdup_printf("404: no page %s here (the report is at /, its live status at /status)\n", path));
    return;
  }
  g_autoptr(GError) error = NULL;
  SieveReport *report = current_report(server, &error);
  if (report == NULL) {
    respond(msg, SOUP_STATUS_INTERNAL_SERVER_ERROR, "text/plain; charset=utf-8",
            g_strdup_printf("cannot read the study: %s\n", error->message));
    return;
  }
  if (status) {
    respond(msg, SOUP_STATUS_OK, "application/json", sieve_report_status_json(report));
  } else {
    SieveReportOptions options = {.live = TRUE, .status_path = "/status", .refresh_s = 5};
    respond(msg, SOUP_STATUS_OK, "text/html; charset=utf-8", sieve_report_to_html(report, &options));
  }
}

int
sieve_cmd_serve(int argc, char **argv)
{
  gint port = 8080;
  g_autofree char *host = NULL;
  GOptionEntry entries[] = {
      {"port", 'p', 0, G_OPTION_ARG_INT, &port, "TCP port (default 8080; 0 picks a free one)", "P"},
      {"host", 0, 0, G_OPTION_ARG_STRING, &host,
       "address to listen on (default 127.0.0.1, this machine only; 0.0.0.0 for every interface)", "H"},
      {NULL},
  };
  g_autoptr(GOptionContext) context = g_option_context_new("STORE - serve a study's report live over HTTP");
  g_option_context_set_description(
      context, "Serves the page `sieve report` writes at / (with the progress line and the running trials,\n"
               "refreshed as trials finish) and the live status as JSON at /status.  The store is opened\n"
               "read-only: the server never writes it and never holds the study's writer back.");
  g_option_context_add_main_entries(context, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(context, &argc, &argv, &error))
    return sieve_cli_fail(error);
  if (argc != 2) {
    fprintf(stderr, "sieve serve: expected one STORE argument (see 'sieve serve --help')\n");
    return SIEVE_EXIT_USAGE;
  }
  if (port < 0 || port > 65535) {
    fprintf(stderr, "sieve serve: --port %d is not a TCP port (0 to 65535)\n", port);
    return SIEVE_EXIT_USAGE;
  }
  Server server = {0};
  server.store = sieve_store_open(argv[1], SIEVE_STORE_READ, &error);
  if (server.store == NULL)
    return sieve_cli_fail(error);
  /* Fail now, not at the first request, on a file that is no study. */
  if (sieve_store_count_trials(server.store, -1, &error) < 0) {
    sieve_store_close(server.store);
    return sieve_cli_fail(error);
  }
  server.registry = sieve_registry_new();
  g_autoptr(GPtrArray) refused = g_ptr_array_new_with_free_func((GDestroyNotify) g_error_free);
  sieve_registry_load_default(server.registry, NULL, refused);
  sieve_cli_warn_refused(refused);

  g_autoptr(SoupServer) soup = soup_server_new("server-header", "sieve", NULL);
  soup_server_add_handler(soup, NULL, handle, &server, NULL);
  g_autoptr(GSocketAddress) address = g_inet_socket_address_new_from_string(host ? host : "127.0.0.1", (guint) port);
  int code = SIEVE_EXIT_OK;
  if (address == NULL) {
    fprintf(stderr, "sieve serve: --host '%s' is not an IP address (e.g. 127.0.0.1, ::1, 0.0.0.0)\n", host);
    code = SIEVE_EXIT_USAGE;
  } else if (!soup_server_listen(soup, address, 0, &error)) {
    g_prefix_error(&error, "cannot listen on %s port %d: ", host ? host : "127.0.0.1", port);
    code = sieve_cli_fail(error);
  } else {
    GSList *uris = soup_server_get_uris(soup);
    g_autofree char *uri = uris ? g_uri_to_string(uris->data) : g_strdup("?");
    g_slist_free_full(uris, (GDestroyNotify) g_uri_unref);
    printf("serving %s on %s (read-only; Ctrl-C stops)\n", argv[1], uri);
    fflush(stdout);
    g_autoptr(GMainLoop) loop = g_main_loop_new(NULL, FALSE);
    g_main_loop_run(loop);
  }
  g_clear_pointer(&server.report, sieve_report_free);
  g_clear_pointer(&server.space, sieve_space_free);
  sieve_cli_study_lua_clear(&server.lua);
  sieve_registry_free(server.registry);
  sieve_store_close(server.store);
  return code;
}
