/* sieve lua [--allow LIBS] [--path DIR]... [limits] SCRIPT.lua [ARGS...] */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli-private.h"
#include "lua/lua-private.h"

int
sieve_cmd_lua(int argc, char **argv)
{
  g_autofree char *allow = NULL;
  g_auto(GStrv) paths = NULL;
  g_autofree char *instructions_text = NULL, *seconds_text = NULL, *memory_text = NULL;
  gint64 instructions = 0, memory_mb = -1;
  double seconds = 0;
  GOptionEntry entries[] = {
      {"allow", 'a', 0, G_OPTION_ARG_STRING, &allow,
       "grant the script these rights beyond the sandbox: io, os, debug, package (libraries), command (the command "
       "evaluator), plugins (plugin_path of configs it runs) (comma-separated)",
       "GRANTS"},
      {"path", 'p', 0, G_OPTION_ARG_FILENAME_ARRAY, &paths, "also let require find modules in DIR", "DIR"},
      {"instructions", 0, 0, G_OPTION_ARG_STRING, &instructions_text, "stop the script after N Lua instructions (0: never)",
       "N"},
      {"seconds", 0, 0, G_OPTION_ARG_STRING, &seconds_text, "stop the script after S seconds of running Lua (0: never)",
       "S"},
      {"memory-mb", 0, 0, G_OPTION_ARG_STRING, &memory_text, "cap the script's Lua memory at M MiB (0: none; default 1024)",
       "M"},
      {NULL},
  };
  g_autoptr(GOptionContext) context = g_option_context_new("SCRIPT.lua [ARGS...] - run a Lua script with the sieve API");
  g_option_context_set_description(
      context, "Runs SCRIPT with the `sieve` module loaded (see lua/README.md), in a sandbox: base, string,\n"
               "table, math, utf8, coroutine and os.clock/time/date/difftime; --allow adds io, os, debug,\n"
               "package, command or plugins; what the script starts (sieve.run, sieve.evaluator) gets no more.  require finds modules in the script's folder, --path folders and sieve's lua/.\n"
               "The script sees its arguments in `arg` (arg[0] is the script) and in `...`.\n"
               "Exit status: 0 done, 1 a Lua error (printed with file:line and a traceback), 2 usage.");
  g_option_context_add_main_entries(context, entries, NULL);
  /* Options after the script belong to the script. */
  g_option_context_set_strict_posix(context, TRUE);
  GError *error = NULL;
  if (!g_option_context_parse(context, &argc, &argv, &error))
    return sieve_cli_fail(error);
  if (argc < 2) {
    fprintf(stderr, "sieve lua: expected a SCRIPT.lua argument (see 'sieve lua --help')\n");
    return SIEVE_EXIT_USAGE;
  }
  /* 2^44 MiB: the most whose bytes still fit a guint64. */
  if (!sieve_cli_parse_int("--instructions", instructions_text, 0, G_MAXINT64, &instructions, &error) ||
      !sieve_cli_parse_double("--seconds", seconds_text, 0, FALSE, INFINITY, &seconds, &error) ||
      !sieve_cli_parse_int("--memory-mb", memory_text, 0, G_GINT64_CONSTANT(1) << 44, &memory_mb, &error))
    return sieve_cli_fail(error);

  SieveLuaSettings settings;
  sieve_lua_settings_init(&settings);
  if (allow != NULL) {
    g_auto(GStrv) words = g_strsplit_set(allow, ", ", -1);
    g_autoptr(GPtrArray) nonempty = g_ptr_array_new();
    for (guint i = 0; words[i]; i++)
      if (words[i][0])
        g_ptr_array_add(nonempty, words[i]);
    g_ptr_array_add(nonempty, NULL);
    if (!sieve_lua_allow_parse((const char *const *) nonempty->pdata, &settings.allow, &error)) {
      g_prefix_error(&error, "--allow: ");
      return sieve_cli_fail(error);
    }
  }
  if (paths != NULL) {
    settings.paths = g_new0(char *, g_strv_length(paths) + 1);
    for (guint i = 0; paths[i]; i++)
      settings.paths[i] = g_canonicalize_filename(paths[i], NULL);
  }
  /* The script's grants are the most anything it starts may hold, in any
   * thread: the components of the configs it runs included. */
  sieve_lua_limit_process(settings.allow, NULL);
  settings.instructions = instructions;
  settings.seconds = seconds;
  if (memory_mb >= 0)
    settings.memory = (guint64) memory_mb << 20;

  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  g_autoptr(GPtrArray) refused = g_ptr_array_new_with_free_func((GDestroyNotify) g_error_free);
  sieve_registry_load_default(registry, NULL, refused);
  sieve_cli_warn_refused(refused);
  g_autoptr(SieveLuaHost) host = sieve_lua_host_new(&settings, registry, &error);
  sieve_lua_settings_clear(&settings);
  if (host == NULL)
    return sieve_cli_fail(error);
  fflush(stdout);
  gboolean ok = sieve_lua_host_run_file(host, argv[1], (const char *const *) argv + 2, &error);
  fflush(stdout);
  if (!ok)
    return sieve_cli_fail(error);
  return SIEVE_EXIT_OK;
}
