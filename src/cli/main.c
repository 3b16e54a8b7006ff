/* sieve: the command line front end. */
#include <locale.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli-private.h"
#include "lua/lua-private.h"

static const struct {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
} commands[] = {
    {"run", sieve_cmd_run, "run or resume a study from an experiment file"},
    {"plugins", sieve_cmd_plugins, "list the plugins' components, or describe one's options"},
    {"export", sieve_cmd_export, "print a study's trials as CSV or JSON"},
    {"report", sieve_cmd_report, "write a study's report: one HTML page with SVG plots"},
    {"serve", sieve_cmd_serve, "serve a study's report live over HTTP while it runs"},
    {"train", sieve_cmd_train, "train one candidate network and print a JSON summary"},
    {"lua", sieve_cmd_lua, "run a Lua script with the sieve API (sandboxed)"},
    {"hash", sieve_cmd_hash, "print candidates' structural and functional hashes"},
    {"proxies", sieve_cmd_proxies, "score architectures with zero-cost proxies (one JSON line each)"},
    {"final", sieve_cmd_final, "train a study's best candidates again at full budget, keeping their weights"},
    {"model", sieve_cmd_model, "export a kept network as ONNX, evaluate it, describe it"},
    {"worker", sieve_cmd_worker, "evaluate a PostgreSQL study's queued candidates (any number, any machine)"},
    {"store", sieve_cmd_store, "copy a study between stores (SQLite files, PostgreSQL servers)"},
    {"latency", sieve_cmd_latency, "measure a candidate's inference latency here, or a space's latency table"},
};

int
sieve_cli_fail(GError *error)
{
  int code = error->domain == SIEVE_ERROR && error->code == SIEVE_ERROR_CONFIG ? SIEVE_EXIT_USAGE : SIEVE_EXIT_FAILURE;
  if (error->domain == G_OPTION_ERROR)
    code = SIEVE_EXIT_USAGE;
  fprintf(stderr, "sieve: %s\n", error->message);
  g_error_free(error);
  return code;
}

void
sieve_cli_set_both_error(GError **error, const char *flag, const char *override, const char *section, const char *key)
{
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "%s and --set %s both set %s.%s: give one of them", flag,
              override, section, key);
}

void
sieve_cli_warn_refused(GPtrArray *refused)
{
  for (guint i = 0; refused && i < refused->len; i++)
    fprintf(stderr, "sieve: warning: plugin refused: %s\n", ((GError *) refused->pdata[i])->message);
}

static void
usage(FILE *out)
{
  fprintf(out, "Usage: sieve COMMAND [OPTION...]\n\nsieve %s: AutoML and neural architecture search.\n\nCommands:\n",
          sieve_version_string());
  for (guint i = 0; i < G_N_ELEMENTS(commands); i++)
    fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].summary);
  fprintf(out, "\n'sieve COMMAND --help' describes a command's options.\n");
}

int
main(int argc, char **argv)
{
  /* Messages in the user's language, but numbers always with '.': stores,
   * exports and genotype texts must read the same everywhere. */
  setlocale(LC_ALL, "");
  setlocale(LC_NUMERIC, "C");
  /* The command hosts the Lua layer: its builtin components join every
   * registry the commands make. */
  sieve_lua_register_static();
  if (argc < 2) {
    usage(stderr);
    return SIEVE_EXIT_USAGE;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
    usage(stdout);
    return SIEVE_EXIT_OK;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("sieve %s (plugin ABI %d.%d)\n", sieve_version_string(), SIEVE_ABI_MAJOR, SIEVE_ABI_MINOR);
    return SIEVE_EXIT_OK;
  }
  for (guint i = 0; i < G_N_ELEMENTS(commands); i++)
    if (strcmp(argv[1], commands[i].name) == 0)
      return commands[i].run(argc - 1, argv + 1);
  const char *names[G_N_ELEMENTS(commands) + 1] = {0};
  for (guint i = 0; i < G_N_ELEMENTS(commands); i++)
    names[i] = commands[i].name;
  const char *guess = sieve_suggest(argv[1], names);
  fprintf(stderr, "sieve: unknown command '%s'%s%s%s\n", argv[1], guess ? " (did you mean '" : "", guess ? guess : "",
          guess ? "'?)" : "");
  usage(stderr);
  return SIEVE_EXIT_USAGE;
}
