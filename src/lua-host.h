/* sieve: the Lua 5.4 host: one sandboxed Lua state per script run, and the
 * `sieve` module it exposes.
 *
 *   SieveLuaSettings settings;
 *   sieve_lua_settings_init(&settings);            // sandboxed, 1 GiB, no time limit
 *   g_autoptr(SieveLuaHost) host = sieve_lua_host_new(&settings, registry, &error);
 *   if (!sieve_lua_host_run_file(host, "search.lua", argv, &error))
 *     g_printerr("%s\n", error->message);          // "search.lua:12: boom\nstack traceback:\n..."
 *
 * As careful hosts do (lua.c's docall, Redis's script_lua.c, mpv's
 * player/lua.c): every call into Lua runs under lua_pcall with a message
 * handler that appends a traceback, and a Lua error becomes one GError
 * whose message starts with the script's file:line.  The sandbox is an
 * allow-list: base (without dofile/loadfile, and load() of text only),
 * string, table, math, utf8, coroutine and a harmless part of os (clock,
 * time, date, difftime); io, the rest of os, debug and package's C loaders
 * only when allowed.  require finds Lua files only in the script's folder,
 * the configured paths and the project's lua/ folder.  Two limits end a
 * runaway script with an error, never a hang or a crash of the host: an
 * instruction-count hook (instructions and wall seconds per call into Lua)
 * and a lua_Alloc wrapper (a memory cap for the whole state).
 *
 * The same host runs `sieve lua SCRIPT`, the Lua components of experiments
 * (plugin `lua`, and components a script registers by name) and the
 * experiments a script runs.  None of this is part of the plugin ABI.
 */
#pragma once

#include <sieve/sieve.h>

#include "internal.h"

G_BEGIN_DECLS

typedef enum {
  SIEVE_LUA_ALLOW_IO = 1 << 0,      /* the io library, loadfile and dofile */
  SIEVE_LUA_ALLOW_OS = 1 << 1,      /* all of os (execute, remove, exit, getenv ...) */
  SIEVE_LUA_ALLOW_DEBUG = 1 << 2,   /* the debug library */
  SIEVE_LUA_ALLOW_PACKAGE = 1 << 3, /* package.loadlib, C modules on package.cpath, binary chunks */
} SieveLuaAllow;

typedef struct {
  guint allow;          /* SieveLuaAllow bits */
  char **paths;         /* extra folders require searches, absolute (owned, NULL-terminated, may be NULL) */
  gint64 instructions;  /* per call into Lua; 0: no limit */
  double seconds;       /* wall seconds per call into Lua; 0: no limit */
  guint64 memory;       /* bytes for the whole state; 0: no limit */
} SieveLuaSettings;

/* Defaults: nothing allowed, no extra path, no instruction or time limit,
 * memory 1 GiB. */
SIEVE_INTERNAL_API void sieve_lua_settings_init(SieveLuaSettings *settings);
SIEVE_INTERNAL_API void sieve_lua_settings_clear(SieveLuaSettings *settings);
SIEVE_INTERNAL_API void sieve_lua_settings_copy(const SieveLuaSettings *src, SieveLuaSettings *dst);
/* Parses "io,os" (names of SieveLuaAllow) into bits; errors name the word
 * and the choices. */
SIEVE_INTERNAL_API gboolean sieve_lua_allow_parse(const char *const *words, guint *out, GError **error);
/* The option table of a `lua:` section (allow, path, instructions, seconds,
 * memory_mb, and with scripts=TRUE also `load`). (transfer none) */
SIEVE_INTERNAL_API const SieveOptionSpec *sieve_lua_settings_spec(gboolean scripts);
/* Validates a `lua:` map (NULL: defaults) into settings; relative paths
 * resolve against base_dir.  defaults: the settings before this section
 * (may be NULL for sieve_lua_settings_init's). */
SIEVE_INTERNAL_API gboolean sieve_lua_settings_read(const SieveNode *map, const char *base_dir,
                                                    const SieveLuaSettings *defaults, gboolean scripts,
                                                    SieveLuaSettings *out, GError **error);

typedef struct _SieveLuaHost SieveLuaHost;

/* A new state with the sandbox of settings (copied) and the `sieve` module
 * (global `sieve`, also require("sieve")).  registry: where sieve.space()
 * and friends find components, and where the script's registered components
 * go (borrowed: must outlive the host); NULL makes a private one with the
 * default plugins.  (transfer full) */
SIEVE_INTERNAL_API SieveLuaHost *sieve_lua_host_new(const SieveLuaSettings *settings, SieveRegistry *registry,
                                                    GError **error);
SIEVE_INTERNAL_API void sieve_lua_host_free(SieveLuaHost *host);

/* Runs a script file as the main chunk, with the global `arg` as lua.c
 * makes it (arg[0] the script, arg[1..] args) and ... = args.  The
 * script's folder joins the require path.  (args may be NULL.) */
SIEVE_INTERNAL_API gboolean sieve_lua_host_run_file(SieveLuaHost *host, const char *path, const char *const *args,
                                                    GError **error);
/* Runs a chunk of text named chunkname ("=(test)" or "@file.lua"). */
SIEVE_INTERNAL_API gboolean sieve_lua_host_run_string(SieveLuaHost *host, const char *code, const char *chunkname,
                                                      GError **error);
/* (transfer none) */
SIEVE_INTERNAL_API SieveRegistry *sieve_lua_host_get_registry(SieveLuaHost *host);
/* Bytes the state holds now, and the most it held. */
SIEVE_INTERNAL_API guint64 sieve_lua_host_memory(SieveLuaHost *host, guint64 *peak);

/* Default time limit per call into a component's script: an ask() that
 * loops for a minute is a bug, and a study must not hang on it. */
#define SIEVE_LUA_COMPONENT_SECONDS 60.0

/* Runs the `load` scripts of an experiment's `lua:` section (may be NULL),
 * each in a host of its own with the section's sandbox, registering their
 * components in registry.  The hosts must outlive every instance of those
 * components. (transfer full) element-type SieveLuaHost */
SIEVE_INTERNAL_API GPtrArray *sieve_lua_load_experiment_scripts(const SieveNode *lua, const char *base_dir,
                                                                SieveRegistry *registry, GError **error);

/* Registers the builtin `lua` space, optimizer and evaluator (script: a Lua
 * file that registers one), once per registry. */
SIEVE_INTERNAL_API void sieve_lua_register_builtins(SieveRegistry *registry);
/* TRUE for the builtin `lua` components, whose section takes a `lua:`
 * sandbox map that defaults to the experiment's. */
SIEVE_INTERNAL_API gboolean sieve_lua_component_is_builtin(const SieveComponent *component);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveLuaHost, sieve_lua_host_free)

G_END_DECLS
