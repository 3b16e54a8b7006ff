/* sieve: the Lua host: states, limits, protected calls and their errors,
 * and the `sieve` module, to which each binding (lua-bind-*.c) adds its part.
 *
 * Calls follow lua.c's docall: the function runs under lua_pcall with a
 * message handler that turns the error into "file:line: message" plus a
 * traceback; the host then turns that into one GError.  The limits follow
 * Redis's script_lua.c: a count hook that raises an error once the call has
 * run too many instructions or too long (and keeps raising, so a script
 * cannot pcall its way past it), and a lua_Alloc that refuses to grow past
 * the cap (Lua then collects and retries before it gives up with a memory
 * error, which unwinds the script cleanly).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lua/lua-private.h"

/* The hook runs every HOOK_EVERY instructions: cheap enough not to show,
 * often enough to stop a loop within microseconds of its limit. */
#define HOOK_EVERY 1000

/* ---- settings ---------------------------------------------------------- */

static const char *const allow_names[] = {"io", "os", "debug", "package", "command", "plugins", NULL};

/* What a long C call may do per second of a time limit, in the steps
 * sieve__lua_steps_left counts: a pattern-matching step or 64 bytes copied
 * take a few nanoseconds; this leaves the estimate on the safe side. */
#define STEPS_PER_SECOND 1e8

/* The cap of every host this process makes (sieve_lua_limit_process). */
static guint process_grants = SIEVE_LUA_ALLOW_ALL;
/* The innermost host whose Lua code runs on this thread. */
static _Thread_local SieveLuaHost *running_host;

const char *
sieve_lua_allow_name(guint bit)
{
  for (guint k = 0; allow_names[k]; k++)
    if (bit == 1u << k)
      return allow_names[k];
  return "?";
}

/* What the user can do when a script asks for a grant the cap lacks (the
 * first caller's; NULL: `sieve lua --allow NAME`). */
static const char *process_hint;

void
sieve_lua_limit_process(guint grants, const char *hint)
{
  if (hint != NULL && process_hint == NULL)
    process_hint = hint;
  g_atomic_int_and(&process_grants, grants);
}

/* What a limit message says when the process's ceiling is the limit. */
#define CAPPED_HINT                                                                                                    \
  "the most this command lets a script from a model file or a store take; its lua: options cannot raise it"

/* The ceilings of sieve_lua_limit_process_calls; 0: none.  Set once, by a
 * viewer's main thread before any host exists. */
static double process_seconds;
static guint64 process_memory;

void
sieve_lua_limit_process_calls(double seconds, guint64 memory)
{
  g_return_if_fail(seconds > 0 && memory > 0);
  process_seconds = process_seconds > 0 ? MIN(process_seconds, seconds) : seconds;
  process_memory = process_memory > 0 ? MIN(process_memory, memory) : memory;
}

SieveLuaHost *
sieve__lua_running_host(void)
{
  return running_host;
}

guint
sieve__lua_grant_ceiling(void)
{
  guint ceiling = (guint) g_atomic_int_get(&process_grants);
  if (running_host != NULL)
    ceiling &= running_host->settings.allow;
  return ceiling;
}

/* capped: the process's cap lacks bit (not only the script's grants). */
static char *
grant_hint(gboolean from_config, gboolean capped, guint bit)
{
  const char *name = sieve_lua_allow_name(bit);
  if (capped && process_hint != NULL)
    return g_strdup(process_hint);
  return from_config ? g_strdup_printf("lua: {allow: [%s]} in the config that starts the script", name)
                     : g_strdup_printf("sieve lua --allow %s", name);
}

gboolean
sieve__lua_host_check_grant(SieveLuaHost *host, guint bit, const char *what, GError **error)
{
  if ((host->settings.allow & bit) && (sieve__lua_grant_ceiling() & bit))
    return TRUE;
  g_autofree char *hint =
      grant_hint(host->settings.from_config, (host->settings.allow & bit) && !(sieve__lua_grant_ceiling() & bit), bit);
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "%s needs the '%s' grant, which this script was not given (%s)",
              what, sieve_lua_allow_name(bit), hint);
  return FALSE;
}

void
sieve_lua_settings_init(SieveLuaSettings *settings)
{
  g_return_if_fail(settings != NULL);
  memset(settings, 0, sizeof *settings);
  settings->memory = SIEVE_LUA_DEFAULT_MEMORY;
}

void
sieve_lua_settings_clear(SieveLuaSettings *settings)
{
  if (settings == NULL)
    return;
  g_strfreev(settings->paths);
  settings->paths = NULL;
}

void
sieve_lua_settings_copy(const SieveLuaSettings *src, SieveLuaSettings *dst)
{
  g_return_if_fail(src != NULL && dst != NULL);
  *dst = *src;
  dst->paths = g_strdupv(src->paths);
}

gboolean
sieve_lua_allow_parse(const char *const *words, guint *out, GError **error)
{
  guint bits = 0;
  for (guint i = 0; words && words[i]; i++) {
    guint k = 0;
    while (allow_names[k] && strcmp(allow_names[k], words[i]) != 0)
      k++;
    if (allow_names[k] == NULL) {
      const char *guess = sieve_suggest(words[i], allow_names);
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "cannot allow '%s'%s%s%s: expected some of io, os, debug, package, command, plugins",
                  words[i], guess ? " (did you mean '" : "", guess ? guess : "", guess ? "'?)" : "");
      return FALSE;
    }
    bits |= 1u << k;
  }
  *out = bits;
  return TRUE;
}

static const SieveOptionSpec settings_spec_scripts[] = {
    SIEVE_OPTION_STRING_LIST("allow", NULL, "what scripts may do beyond the sandbox: io, os, debug, package (libraries), command (the command evaluator), plugins (plugin_path of a config a script runs)"),
    SIEVE_OPTION_STRING_LIST("path", NULL, "extra folders where require finds Lua modules (relative to the file)"),
    {"instructions", SIEVE_OPTION_TYPE_INT, NULL, 0, 1e18, NULL,
     "Lua instructions one call into a script may run (0: no limit)", SIEVE_OPTION_HAS_MIN | SIEVE_OPTION_HAS_MAX, {NULL}},
    {"seconds", SIEVE_OPTION_TYPE_FLOAT, NULL, 0, 1e9, NULL,
     "wall seconds one call into a script may run (0: no limit)", SIEVE_OPTION_HAS_MIN | SIEVE_OPTION_HAS_MAX, {NULL}},
    {"memory_mb", SIEVE_OPTION_TYPE_INT, NULL, 0, 1e9, NULL,
     "MiB a script's Lua state may hold (0: no limit; default 1024)", SIEVE_OPTION_HAS_MIN | SIEVE_OPTION_HAS_MAX, {NULL}},
    SIEVE_OPTION_STRING_LIST("load", NULL,
                             "Lua files (relative to the file) run before the sections are read; the components they "
                             "register can be named like plugins"),
    SIEVE_OPTION_END,
};

const SieveOptionSpec *
sieve_lua_settings_spec(gboolean scripts)
{
  if (scripts)
    return settings_spec_scripts;
  /* The same table without its last entry (load). */
  static SieveOptionSpec plain[G_N_ELEMENTS(settings_spec_scripts) - 1];
  static gsize once;
  if (g_once_init_enter(&once)) {
    guint n = 0;
    for (const SieveOptionSpec *o = settings_spec_scripts; o->name; o++)
      if (strcmp(o->name, "load") != 0)
        plain[n++] = *o;
    plain[n] = (SieveOptionSpec) SIEVE_OPTION_END;
    g_once_init_leave(&once, 1);
  }
  return plain;
}

gboolean
sieve_lua_settings_read(const SieveNode *map, const char *base_dir, const SieveLuaSettings *defaults,
                        gboolean scripts, SieveLuaSettings *out, GError **error)
{
  SieveLuaSettings result;
  if (defaults)
    sieve_lua_settings_copy(defaults, &result);
  else
    sieve_lua_settings_init(&result);
  if (map != NULL && sieve_node_kind(map) != SIEVE_NODE_MAP) {
    sieve_node_set_error(error, map, "'lua' must be a map {allow: [io, os], memory_mb: N, ...}");
    sieve_lua_settings_clear(&result);
    return FALSE;
  }
  g_autoptr(SieveOptions) options =
      sieve_options_new(sieve_lua_settings_spec(scripts), map, NULL, base_dir, "lua", error);
  if (options == NULL) {
    sieve_lua_settings_clear(&result);
    return FALSE;
  }
  result.from_config = TRUE;
  if (sieve_options_is_set(options, "allow")) {
    GError *local = NULL;
    if (!sieve_lua_allow_parse(sieve_options_get_strv(options, "allow"), &result.allow, &local)) {
      g_autofree char *where = sieve_node_where(sieve_options_node(options, "allow"));
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "%s: %s", where, local->message);
      g_error_free(local);
      sieve_lua_settings_clear(&result);
      return FALSE;
    }
  }
  if (sieve_options_is_set(options, "path")) {
    const char *const *paths = sieve_options_get_strv(options, "path");
    guint n = g_strv_length((char **) paths);
    g_strfreev(result.paths);
    result.paths = g_new0(char *, n + 1);
    for (guint i = 0; i < n; i++)
      result.paths[i] = g_canonicalize_filename(paths[i], base_dir);
  }
  if (sieve_options_is_set(options, "instructions"))
    result.instructions = sieve_options_get_int(options, "instructions");
  if (sieve_options_is_set(options, "seconds"))
    result.seconds = sieve_options_get_double(options, "seconds");
  if (sieve_options_is_set(options, "memory_mb"))
    result.memory = (guint64) sieve_options_get_int(options, "memory_mb") << 20;
  *out = result;
  return TRUE;
}

/* ---- the allocator and the hook --------------------------------------- */

static void *
host_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
  SieveLuaHost *host = ud;
  size_t old = ptr != NULL ? osize : 0; /* without a block, osize tells its type */
  if (nsize == 0) {
    free(ptr);
    host->mem_used -= old;
    return NULL;
  }
  if (host->settings.memory > 0 && nsize > old && host->mem_used - old + nsize > host->settings.memory) {
    host->mem_exceeded = TRUE;
    return NULL; /* Lua collects garbage and retries before raising LUA_ERRMEM */
  }
  void *block = realloc(ptr, nsize);
  if (block != NULL) {
    host->mem_used = host->mem_used - old + nsize;
    if (host->mem_used > host->mem_peak)
      host->mem_peak = host->mem_used;
  }
  return block;
}

static void
limit_hook(lua_State *L, lua_Debug *ar)
{
  SieveLuaHost *host = sieve__lua_host(L);
  if (host->limit_hit == NULL) {
    /* The count this thread's hook runs at: a coroutine made while the
     * hook ran every instruction still does. */
    host->used_instructions += lua_gethookcount(L);
    if (host->settings.instructions > 0 && host->used_instructions > host->settings.instructions)
      host->limit_hit = "instruction";
    else if (host->deadline > 0 && g_get_monotonic_time() > host->deadline)
      host->limit_hit = "time";
    else
      return;
    /* From now on on every instruction: a script that catches the error
     * with pcall meets it again at its very next instruction outside. */
    lua_sethook(L, limit_hook, LUA_MASKCOUNT, 1);
  }
  sieve__lua_check_limit(L);
}

/* The limit's message, "file:line: time limit exceeded: ..." (transfer full). */
static char *
limit_message(SieveLuaHost *host, lua_State *L)
{
  /* Where the script was when it ran out: the function the hook interrupted. */
  guint line = 0;
  g_autofree char *file = L != NULL ? sieve__lua_where(L, 0, &line) : g_strdup(host->main_chunk ? host->main_chunk : "lua");
  g_autofree char *where = line > 0 ? g_strdup_printf("%s:%u", file, line) : g_strdup(file);
  if (strcmp(host->limit_hit, "instruction") == 0)
    return g_strdup_printf("%s: instruction limit exceeded: more than %" G_GINT64_FORMAT
                           " instructions in one call into Lua (raise lua.instructions, or 0 for no limit)",
                           where, host->settings.instructions);
  /* Under the process's cap (sieve model, report, serve) the options
   * cannot raise it: say so, not "raise lua.seconds". */
  if (process_seconds > 0 && host->settings.seconds >= process_seconds)
    return g_strdup_printf("%s: time limit exceeded: more than %.1f seconds in one call into Lua (%s)", where,
                           host->settings.seconds, CAPPED_HINT);
  return g_strdup_printf("%s: time limit exceeded: more than %.1f seconds in one call into Lua (raise lua.seconds, "
                         "or 0 for no limit)",
                         where, host->settings.seconds);
}

void
sieve__lua_check_limit(lua_State *L)
{
  SieveLuaHost *host = sieve__lua_host(L);
  if (host->limit_hit == NULL)
    return;
  char *msg = limit_message(host, L);
  lua_pushstring(L, msg);
  g_free(msg); /* lua_error does not return */
  lua_error(L);
}

double
sieve__lua_steps_left(SieveLuaHost *host)
{
  double left = INFINITY;
  if (host->limit_hit != NULL)
    return 0;
  if (host->settings.instructions > 0)
    left = MAX(0.0, (double) (host->settings.instructions - host->used_instructions));
  if (host->deadline > 0)
    left = MIN(left, MAX(0.0, (double) (host->deadline - g_get_monotonic_time()) / 1e6 * STEPS_PER_SECOND));
  return left;
}

/* The limits count per outermost call: a nested call (a component of an
 * experiment this script runs) spends the same allowance. */
static void
budget_begin(SieveLuaHost *host)
{
  host->used_instructions = 0;
  if (host->limit_hit != NULL)
    lua_sethook(host->L, limit_hook, LUA_MASKCOUNT, HOOK_EVERY);
  host->limit_hit = NULL;
  host->mem_exceeded = FALSE;
  host->deadline = host->settings.seconds > 0 ? g_get_monotonic_time() + (gint64) (host->settings.seconds * 1e6) : 0;
}

void
sieve__lua_call_hooked(lua_State *L, int nargs)
{
  SieveLuaHost *host = sieve__lua_host(L);
  if (host->limit_hit != NULL) { /* spent: no more of the script's code runs, not even to clean up */
    lua_pop(L, nargs + 1);
    return;
  }
  if (host->depth == 0) /* the collector at rest or lua_close: a budget of its own */
    budget_begin(host);
  host->depth++;
  /* A fresh thread: Lua turns hooks off on the thread that runs a
   * finalizer, not on a thread the finalizer resumes. */
  lua_State *co = lua_newthread(L);
  lua_insert(L, -(nargs + 2));
  lua_xmove(L, co, nargs + 1);
  if (host->settings.instructions > 0 || host->settings.seconds > 0)
    lua_sethook(co, limit_hook, LUA_MASKCOUNT, HOOK_EVERY);
  int nres = 0;
  int status = lua_resume(co, L, nargs, &nres);
  if (status != LUA_OK && status != LUA_YIELD)
    lua_resetthread(co); /* runs its pending __close, under the same hook */
  lua_pop(L, 1);
  host->depth--;
}

/* ---- calls -------------------------------------------------------------- */

/* lua.c's msghandler: a traceback under the message; a non-string error
 * object is shown through its __tostring or by its type.  Lua raises a
 * yield it cannot do ("attempt to yield from outside a coroutine", "...
 * across a C-call boundary") inside coroutine.yield, a C function, so with
 * no location: it gets the script line that called it, as every other
 * error of a script has. */
static int
message_handler(lua_State *L)
{
  const char *msg = lua_tostring(L, 1);
  lua_Debug ar;
  if (msg != NULL && lua_type(L, 1) == LUA_TSTRING && g_str_has_prefix(msg, "attempt to yield ") &&
      lua_getstack(L, 1, &ar) && lua_getinfo(L, "S", &ar) && strcmp(ar.what, "C") == 0) {
    guint line = 0;
    g_autofree char *where = sieve__lua_where(L, 1, &line);
    if (line > 0)
      msg = lua_pushfstring(L, "%s:%d: %s", where, (int) line, msg);
  }
  if (msg == NULL) {
    /* Once the limit is spent no script code runs (this handler may run
     * with hooks off): a __tostring could loop for ever. */
    if (sieve__lua_host(L)->limit_hit == NULL && luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
      msg = lua_tostring(L, -1);
    else
      msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

char *
sieve__lua_where(lua_State *L, int level, guint *line)
{
  lua_Debug ar;
  if (line)
    *line = 0;
  /* The nearest Lua function at or above level (C functions have no line). */
  for (int l = level; lua_getstack(L, l, &ar); l++) {
    lua_getinfo(L, "Sl", &ar);
    if (ar.currentline > 0) {
      if (line)
        *line = (guint) ar.currentline;
      /* The whole file name (short_src cuts long ones): it also identifies
       * the script that registered a component. */
      if (ar.source[0] == '@' || ar.source[0] == '=')
        return g_strdup(ar.source + 1);
      return g_strdup(ar.short_src);
    }
  }
  return g_strdup("?");
}

int
sieve__lua_error_gerror(lua_State *L, GError *error)
{
  /* "file:line: " of the Lua caller, unless the message already starts
   * there (an option error located at the same line). */
  luaL_where(L, 1);
  size_t n;
  const char *where = lua_tolstring(L, -1, &n);
  /* A callee that failed without setting its GError (a g_return_val_if_fail
   * guard, which only logs a critical) must not crash the host: a Lua
   * error that says so instead. */
  if (error == NULL)
    return luaL_error(L, "internal error: a sieve call failed without saying why (see the log for a critical)");
  if (n > 2 && strncmp(error->message, where, n - 2) == 0)
    lua_pushstring(L, error->message);
  else
    lua_pushfstring(L, "%s%s", where, error->message);
  g_error_free(error);
  return lua_error(L);
}

static GError *
status_error(SieveLuaHost *host, int status)
{
  const char *msg = lua_tostring(host->L, -1);
  if (status == LUA_ERRMEM && host->mem_exceeded && process_memory > 0 && host->settings.memory >= process_memory)
    return g_error_new(SIEVE_ERROR, SIEVE_ERROR_FAILED,
                       "%s: memory limit exceeded: the Lua state needed more than %" G_GUINT64_FORMAT " MiB (%s)",
                       host->main_chunk ? host->main_chunk : "lua", host->settings.memory >> 20, CAPPED_HINT);
  if (status == LUA_ERRMEM && host->mem_exceeded)
    return g_error_new(SIEVE_ERROR, SIEVE_ERROR_FAILED,
                       "%s: memory limit exceeded: the Lua state needed more than %" G_GUINT64_FORMAT
                       " MiB (raise lua.memory_mb, or 0 for no limit)",
                       host->main_chunk ? host->main_chunk : "lua", host->settings.memory >> 20);
  return g_error_new(SIEVE_ERROR, SIEVE_ERROR_FAILED, "%s", msg ? msg : "(error without a message)");
}

gboolean
sieve__lua_call(SieveLuaHost *host, int nargs, int nresults, GError **error)
{
  lua_State *L = host->L;
  int base = lua_gettop(L) - nargs; /* the function's index */
  lua_pushcfunction(L, message_handler);
  lua_insert(L, base);
  if (host->depth++ == 0)
    budget_begin(host);
  SieveLuaHost *caller = running_host;
  running_host = host;
  int status = lua_pcall(L, nargs, nresults, base);
  running_host = caller;
  host->depth--;
  if (status == LUA_OK && host->depth == 0 && host->limit_hit != NULL) {
    /* The script caught the limit's error and returned: it still ran out. */
    char *msg = limit_message(host, NULL);
    lua_settop(L, base - 1);
    g_set_error_literal(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, msg);
    g_free(msg);
    return FALSE;
  }
  if (status != LUA_OK) {
    GError *local = status_error(host, status);
    lua_settop(L, base - 1);
    if (host->depth == 0)
      lua_gc(L, LUA_GCCOLLECT); /* give back what a runaway script took */
    g_propagate_error(error, local);
    return FALSE;
  }
  lua_remove(L, base);
  return TRUE;
}

/* ---- the host ------------------------------------------------------------ */

static int
open_host(lua_State *L)
{
  SieveLuaHost *host = lua_touserdata(L, 1);
  sieve__lua_sandbox_open(host);
  /* The sieve module: global and require("sieve"). */
  lua_newtable(L);
  int sieve_idx = lua_gettop(L);
  lua_pushstring(L, sieve_version_string());
  lua_setfield(L, sieve_idx, "version");
  sieve__lua_open_space(L, sieve_idx);
  sieve__lua_open_graph(L, sieve_idx);
  sieve__lua_open_proxy(L, sieve_idx);
  sieve__lua_open_rng(L, sieve_idx);
  sieve__lua_open_result(L, sieve_idx);
  sieve__lua_open_optimizer(L, sieve_idx);
  sieve__lua_open_evaluator(L, sieve_idx);
  sieve__lua_open_study(L, sieve_idx);
  sieve__lua_open_register(L, sieve_idx);
  sieve__lua_open_convert(L, sieve_idx);
  lua_pushvalue(L, sieve_idx);
  lua_setglobal(L, "sieve");
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_pushvalue(L, sieve_idx);
  lua_setfield(L, -2, "sieve");
  return 0;
}

SieveLuaHost *
sieve_lua_host_new(const SieveLuaSettings *settings, SieveRegistry *registry, GError **error)
{
  SieveLuaHost *host = g_new0(SieveLuaHost, 1);
  if (settings)
    sieve_lua_settings_copy(settings, &host->settings);
  else
    sieve_lua_settings_init(&host->settings);
  sieve_lua_register_static();
  if (registry == NULL) {
    host->own_registry = sieve_registry_new();
    sieve_registry_load_default(host->own_registry, NULL, NULL);
    registry = host->own_registry;
  }
  /* A settings' 0 is no limit: under a ceiling it is the ceiling. */
  if (process_seconds > 0 && (host->settings.seconds <= 0 || host->settings.seconds > process_seconds))
    host->settings.seconds = process_seconds;
  if (process_memory > 0 && (host->settings.memory == 0 || host->settings.memory > process_memory))
    host->settings.memory = process_memory;
  host->registry = registry;
  host->thread = g_thread_self();
  host->require_dirs = g_ptr_array_new_with_free_func(g_free);
  host->required = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; host->settings.paths && host->settings.paths[i]; i++)
    g_ptr_array_add(host->require_dirs, g_strdup(host->settings.paths[i]));
  g_ptr_array_add(host->require_dirs, sieve__lua_project_dir());

  guint ceiling = sieve__lua_grant_ceiling();
  if (host->settings.allow & ~ceiling) {
    guint missing = host->settings.allow & ~ceiling;
    guint bit = missing & -missing;
    /* The grants of whoever starts this host: the running script's, or
     * the process's (sieve lua). */
    g_autofree char *hint = grant_hint(running_host ? running_host->settings.from_config : FALSE,
                                       !(g_atomic_int_get(&process_grants) & bit), bit);
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                "a Lua sandbox that allows %s needs the '%s' grant, which this script was not given (%s)",
                sieve_lua_allow_name(bit), sieve_lua_allow_name(bit), hint);
    sieve_lua_host_free(host);
    return NULL;
  }
  host->L = lua_newstate(host_alloc, host);
  if (host->L == NULL) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "cannot create a Lua state (out of memory)");
    sieve_lua_host_free(host);
    return NULL;
  }
  *(SieveLuaHost **) lua_getextraspace(host->L) = host;
  if (host->settings.instructions > 0 || host->settings.seconds > 0)
    lua_sethook(host->L, limit_hook, LUA_MASKCOUNT, HOOK_EVERY);
  lua_pushcfunction(host->L, open_host);
  lua_pushlightuserdata(host->L, host);
  if (!sieve__lua_call(host, 1, 0, error)) {
    g_prefix_error(error, "cannot set up the Lua host: ");
    sieve_lua_host_free(host);
    return NULL;
  }
  return host;
}

void
sieve_lua_host_free(SieveLuaHost *host)
{
  if (host == NULL)
    return;
  sieve__lua_defs_forget_host(host);
  if (host->L)
    lua_close(host->L); /* runs every __gc and __close: the C objects go with it */
  if (host->require_dirs)
    g_ptr_array_unref(host->require_dirs);
  if (host->required)
    g_ptr_array_unref(host->required);
  sieve_registry_free(host->own_registry);
  sieve_lua_settings_clear(&host->settings);
  g_free(host->main_chunk);
  g_free(host);
}

SieveRegistry *
sieve_lua_host_get_registry(SieveLuaHost *host)
{
  g_return_val_if_fail(host != NULL, NULL);
  return host->registry;
}

guint64
sieve_lua_host_memory(SieveLuaHost *host, guint64 *peak)
{
  g_return_val_if_fail(host != NULL, 0);
  if (peak)
    *peak = host->mem_peak;
  return host->mem_used;
}

static gboolean
load_error(SieveLuaHost *host, int status, const char *what, GError **error)
{
  const char *msg = lua_tostring(host->L, -1);
  /* A script that cannot be read or does not compile is named by the
   * configuration (lua.load, a component's script, `sieve lua FILE`): a
   * configuration error (exit 2), as a missing space file is.  What the
   * script raises as it runs stays a failure (sieve__lua_call). */
  if (status == LUA_ERRFILE)
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "%s", msg ? msg : what);
  else if (status == LUA_ERRMEM && host->mem_exceeded)
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "%s: memory limit exceeded while loading", what);
  else if (status == LUA_ERRSYNTAX) /* "file:line: message near 'x'" */
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "%s", msg ? msg : what);
  else
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "%s", msg ? msg : what);
  lua_pop(host->L, 1);
  return FALSE;
}

/* Feeds a file to lua_load one line at a time, counting them: when the
 * compiler stops, the line it was reading is the last one fed. */
typedef struct {
  FILE *file;
  char *buf;
  size_t cap;
  guint line;
} LineReader;

static const char *
read_line(lua_State *L, void *data, size_t *size)
{
  (void)L;
  LineReader *r = data;
  ssize_t n = getline(&r->buf, &r->cap, r->file);
  if (n <= 0) {
    *size = 0;
    return NULL;
  }
  r->line++;
  if (r->line == 1 && r->buf[0] == '#') /* a '#!' line, which luaL_loadfilex skips keeping its newline */
    return *size = 1, "\n";
  if (r->line == 1 && n >= 3 && memcmp(r->buf, "\xEF\xBB\xBF", 3) == 0) /* a UTF-8 BOM, skipped too */
    return *size = (size_t)n - 3, r->buf + 3;
  *size = (size_t)n;
  return r->buf;
}

/* The line at which compiling path stops, 0 when unknown. */
static guint
failing_line(lua_State *L, const char *path, const char *mode)
{
  LineReader r = {.file = fopen(path, "rb")};
  if (r.file == NULL)
    return 0;
  int status = lua_load(L, read_line, &r, "=line", mode);
  lua_pop(L, 1);
  fclose(r.file);
  free(r.buf);
  return status == LUA_OK ? 0 : r.line;
}

int
sieve__lua_load_file(lua_State *L, const char *path, const char *mode)
{
  int status = luaL_loadfilex(L, path, mode);
  if (status == LUA_OK || status == LUA_ERRFILE || status == LUA_ERRMEM)
    return status;
  const char *msg = lua_tostring(L, -1);
  g_autofree char *prefix = g_strdup_printf("%s:", path);
  if (msg == NULL || g_str_has_prefix(msg, prefix))
    return status;
  /* Loaded from a running script (require), the error handler of the call
   * in progress added its traceback to the message: cut it, the error
   * gets its own where it is raised again. */
  const char *end = strchr(msg, '\n');
  g_autofree char *text = end != NULL ? g_strndup(msg, end - msg) : g_strdup(msg);
  lua_pop(L, 1);
  guint line = failing_line(L, path, mode);
  const char *why = g_str_equal(text, "C stack overflow") ? " (expressions or blocks nested too deep)" : "";
  if (line > 0)
    lua_pushfstring(L, "%s:%d: %s%s", path, (int)line, text, why);
  else
    lua_pushfstring(L, "%s: %s%s", path, text, why);
  return LUA_ERRSYNTAX;
}

static const char *
load_mode(SieveLuaHost *host)
{
  /* Binary chunks can crash the VM (the manual says so): text only unless
   * the package permission lets native code in anyway. */
  return host->settings.allow & SIEVE_LUA_ALLOW_PACKAGE ? "bt" : "t";
}

gboolean
sieve_lua_host_run_file(SieveLuaHost *host, const char *path, const char *const *args, GError **error)
{
  g_return_val_if_fail(host != NULL && path != NULL, FALSE);
  lua_State *L = host->L;
  /* The script's folder first, so its own modules win. */
  g_autofree char *dir = g_path_get_dirname(path);
  g_ptr_array_insert(host->require_dirs, 0, g_canonicalize_filename(dir, NULL));
  g_free(host->main_chunk);
  host->main_chunk = g_strdup(path);

  guint n = args ? g_strv_length((char **) args) : 0;
  lua_createtable(L, (int) n, 1);
  lua_pushstring(L, path);
  lua_rawseti(L, -2, 0);
  for (guint i = 0; i < n; i++) {
    lua_pushstring(L, args[i]);
    lua_rawseti(L, -2, (lua_Integer) i + 1);
  }
  lua_setglobal(L, "arg");

  int status = sieve__lua_load_file(L, path, load_mode(host));
  if (status != LUA_OK)
    return load_error(host, status, path, error);
  for (guint i = 0; i < n; i++)
    lua_pushstring(L, args[i]);
  return sieve__lua_call(host, (int) n, 0, error);
}

gboolean
sieve_lua_host_run_string(SieveLuaHost *host, const char *code, const char *chunkname, GError **error)
{
  g_return_val_if_fail(host != NULL && code != NULL, FALSE);
  if (chunkname != NULL && (chunkname[0] == '@' || chunkname[0] == '=')) { /* what the limits' messages name */
    g_free(host->main_chunk);
    host->main_chunk = g_strdup(chunkname + 1);
  }
  int status = luaL_loadbufferx(host->L, code, strlen(code), chunkname ? chunkname : "=(string)", load_mode(host));
  if (status != LUA_OK)
    return load_error(host, status, chunkname ? chunkname : "(string)", error);
  return sieve__lua_call(host, 0, 0, error);
}
