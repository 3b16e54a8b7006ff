/* sieve: the Lua area: the host (states, sandbox), the bindings that let
 * scripts call C objects, and the components written in Lua that C calls.
 * Not installed: not part of the plugin ABI.
 *
 * The files:
 *   the host
 *     lua-host.c            states, limits, protected calls and their errors; the `sieve` module
 *     lua-sandbox.c         the libraries a script may use, and a require confined to the host's folders
 *     lua-convert.c         Lua values <-> config trees, YAML flow text and GVariants; sieve.serialize
 *     lua-experiment.c      the Lua step of loading an experiment (the scripts of lua.load)
 *   bindings: scripts calling C objects
 *     lua-bind-space.c      sieve.space: spaces, genotypes, and the builder a Lua space's create() gets
 *     lua-bind-graph.c      sieve.graph: networks built op by op, their hashes
 *     lua-bind-optimizer.c  sieve.optimizer: optimizers (C or Lua) driven from a script
 *     lua-bind-evaluator.c  sieve.evaluator: evaluators driven from a script
 *     lua-bind-study.c      sieve.study and sieve.run: studies over a store
 *     lua-study-key.c       what makes a store's study the one sieve.study opens again
 *     lua-bind-result.c     sieve.result: evaluation results
 *     lua-bind-rng.c        sieve.rng: the seeded generator
 *     lua-bind-proxy.c      sieve.proxies, sieve.proxy_list, sieve.rank_aggregate
 *     lua-bind-shared.c     what the bindings share: classes, the sieve table's functions, components, objectives
 *   components written in Lua: C calling scripts
 *     lua-def.c             definitions, and sieve.register_optimizer/space/evaluator that make them
 *     lua-def-options.c     the option table (and probe) a definition declares, read into a SieveOptionSpec
 *     lua-instance.c        instances: self, the host-thread check, calls into their methods
 *     lua-impl-optimizer.c  the SieveOptimizerClass of optimizers written in Lua
 *     lua-impl-evaluator.c  the SieveEvaluatorClass of evaluators written in Lua
 *     lua-impl-space.c      the SieveSpaceClass of spaces written in Lua
 *     lua-builtin.c         the builtin `lua` components, a static plugin (sieve_lua_register_static)
 */
#pragma once

#include <glib.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <sieve/data.h>
#include <sieve/graph.h>
#include <sieve/hash.h>
#include <sieve/proxy.h>
#include <sieve/registry.h>
#include <sieve/result.h>
#include <sieve/rng.h>
#include <sieve/runtime.h>
#include <sieve/store.h>
#include <sieve/text.h>
#include "base/base-private.h"
#include "core/core-private.h"

G_BEGIN_DECLS

/* ==== the host ==== */
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

typedef enum {
  SIEVE_LUA_ALLOW_IO = 1 << 0,      /* the io library, loadfile and dofile */
  SIEVE_LUA_ALLOW_OS = 1 << 1,      /* all of os (execute, remove, exit, getenv ...) */
  SIEVE_LUA_ALLOW_DEBUG = 1 << 2,   /* the debug library */
  SIEVE_LUA_ALLOW_PACKAGE = 1 << 3, /* package.loadlib, C modules on package.cpath, binary chunks */
  SIEVE_LUA_ALLOW_COMMAND = 1 << 4, /* the `command` evaluator (runs programs), from Lua or a config it runs */
  SIEVE_LUA_ALLOW_PLUGINS = 1 << 5, /* a config's plugin_path (native code) in a config run from Lua */
} SieveLuaAllow;

/* The grants: the bits above, each with the name `--allow` and `lua: allow`
 * take.  A script's grants are fixed by whoever started it (the `sieve lua`
 * flags, or the `lua:` section of the config that `sieve run` runs) and only
 * shrink on the way down: a host made while another runs (a component of a
 * config the script runs, an evaluator it makes) may not hold a grant the
 * running one lacks, and a config run from Lua may not ask for more. */
#define SIEVE_LUA_ALLOW_ALL 0x3fu

typedef struct {
  guint allow;          /* SieveLuaAllow bits */
  char **paths;         /* extra folders require searches, absolute (owned, NULL-terminated, may be NULL) */
  gint64 instructions;  /* per call into Lua; 0: no limit */
  double seconds;       /* wall seconds per call into Lua; 0: no limit */
  guint64 memory;       /* bytes for the whole state; 0: no limit */
  gboolean from_config; /* the grants come from a config's `lua:` section, not `sieve lua --allow` (for hints) */
} SieveLuaSettings;

/* Defaults: nothing allowed, no extra path, no instruction or time limit,
 * memory 1 GiB. */
SIEVE_INTERNAL_API void sieve_lua_settings_init(SieveLuaSettings *settings);
SIEVE_INTERNAL_API void sieve_lua_settings_clear(SieveLuaSettings *settings);
SIEVE_INTERNAL_API void sieve_lua_settings_copy(const SieveLuaSettings *src, SieveLuaSettings *dst);
/* Parses "io,os" (names of SieveLuaAllow) into bits; errors name the word
 * and the choices. */
SIEVE_INTERNAL_API gboolean sieve_lua_allow_parse(const char *const *words, guint *out, GError **error);
/* The name of one grant bit ("command"). (transfer none) */
SIEVE_INTERNAL_API const char *sieve_lua_allow_name(guint bit);
/* Caps every Lua host this process makes from now on at grants (the bits
 * only ever go: a later call cannot give one back).  `sieve lua` calls it
 * with the script's grants, so nothing the script starts, in any thread,
 * can hold more.  hint (static, nullable; the first one given stays) says
 * in an error what the user can do when a script asks for a grant the cap
 * lacks; NULL: "sieve lua --allow NAME". */
SIEVE_INTERNAL_API void sieve_lua_limit_process(guint grants, const char *hint);
/* Caps every Lua host this process makes from now on at seconds per call
 * and memory bytes per state, whatever its settings say (0, no limit,
 * included): for viewers of stores from anyone.  Call before any host
 * exists; limits only ever go down. */
SIEVE_INTERNAL_API void sieve_lua_limit_process_calls(double seconds, guint64 memory);
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
/* The limits of a viewer (sieve report, serve) on a store's scripts, which
 * only register components and build a space: whatever the store's config
 * says, a script from anyone must not hold the page back for long. */
#define SIEVE_LUA_VIEWER_SECONDS 10.0
/* A Lua state's memory cap unless its settings say otherwise (1 GiB). */
#define SIEVE_LUA_DEFAULT_MEMORY (G_GUINT64_CONSTANT(1024) << 20)

/* The Lua layer's share of loading an experiment, run between
 * sieve_experiment_parse and sieve_experiment_resolve: each script of the
 * `lua: {load: [...]}` section runs in a host of its own with the section's
 * sandbox and registers its components in registry (the hosts are attached
 * to the experiment: they outlive every instance of those components), and
 * a section naming a builtin `lua` component without a `lua:` map of its
 * own gets a copy of the experiment's (written into the tree, so it is part
 * of the study's identity). */
SIEVE_INTERNAL_API gboolean sieve_lua_experiment_prepare(SieveExperiment *experiment, SieveRegistry *registry,
                                                         GError **error);
/* Runs the `load` scripts of a `lua:` section (relative paths against dir),
 * each in a host of its own with the section's sandbox, registering their
 * components in registry; appends the hosts to hosts (transfer full each:
 * free them with sieve_lua_host_free after every component they registered
 * is done with), also those loaded before a script that failed.  What
 * sieve_lua_experiment_prepare runs, and what `sieve report` and `sieve
 * serve` run to rebuild a stored study's space. */
SIEVE_INTERNAL_API gboolean sieve_lua_load_scripts(const SieveNode *lua, const char *dir, SieveRegistry *registry,
                                                   GPtrArray *hosts, GError **error);
/* parse, prepare and resolve: what `sieve run` and sieve.run() load.
 * (transfer full) */
SIEVE_INTERNAL_API SieveExperiment *sieve_lua_experiment_load(const char *path, const char *const *overrides,
                                                              SieveRegistry *registry, GPtrArray *plugin_errors,
                                                              GError **error);
SIEVE_INTERNAL_API SieveExperiment *sieve_lua_experiment_load_string(const char *text, const char *origin,
                                                                     const char *base_dir,
                                                                     const char *const *overrides,
                                                                     SieveRegistry *registry,
                                                                     GPtrArray *plugin_errors, GError **error);

/* What sieve.run loads: the same, for a config run by the script of host,
 * which may not ask for more than that script was granted: plugin_path
 * needs 'plugins', a `plugin: command` anywhere 'command', and each word of
 * any `lua: allow` the grant of that name; the error names the grant and
 * where the config asks for it. (transfer full) */
SIEVE_INTERNAL_API SieveExperiment *sieve_lua_experiment_load_granted(SieveLuaHost *host, const char *path,
                                                                      const char *const *overrides,
                                                                      GPtrArray *plugin_errors, GError **error);

/* Registers the Lua layer as a static plugin (sieve_plugin_register_static):
 * the builtin `lua` space, optimizer and evaluator (script: a Lua file that
 * registers one) then come with every registry sieve_registry_load_default
 * fills.  Idempotent; sieve_lua_host_new calls it. */
SIEVE_INTERNAL_API void sieve_lua_register_static(void);
/* TRUE for the builtin `lua` components, whose section takes a `lua:`
 * sandbox map that defaults to the experiment's. */
SIEVE_INTERNAL_API gboolean sieve_lua_component_is_builtin(const SieveComponent *component);
/* Appends (char*, owned) the Lua modules that the scripts of space's
 * builtin `lua` parts (space itself included) have required so far from
 * their own folder or a folder below it, each once: what a model file
 * carries beside the script (the project's lua/ and lua.path folders are
 * not the script's). */
SIEVE_INTERNAL_API void sieve_lua_space_add_modules(const SieveSpace *space, GPtrArray *paths);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveLuaHost, sieve_lua_host_free)

/* ==== inside the host ==== */
/* sieve: what the Lua host's files share (not installed).
 *
 * Layout of the bindings: one file per C type, each registering one
 * metatable named "sieve.<type>" and its constructors in the `sieve`
 * table.  A binding pushes a userdata that either owns its C object (freed
 * by __gc or __close) or borrows it from the engine (a component's space),
 * in which case the engine invalidates the box before freeing the object
 * and every later use is a Lua error, not a use after free.  Userdata that
 * depend on another keep it alive through a user value (a genotype holds
 * its space).  A graph (lua-bind-graph.c) owns its SieveGraph and depends on
 * nothing: space:build(g) hands over a graph of its own.
 */

#define SIEVE_LUA_SPACE "sieve.space"
#define SIEVE_LUA_BUILDER "sieve.space_builder"
#define SIEVE_LUA_GENOTYPE "sieve.genotype"
#define SIEVE_LUA_RNG "sieve.rng"
#define SIEVE_LUA_RESULT "sieve.result"
#define SIEVE_LUA_OPTIMIZER "sieve.optimizer"
#define SIEVE_LUA_EVALUATOR "sieve.evaluator"
#define SIEVE_LUA_STUDY "sieve.study"
#define SIEVE_LUA_GRAPH "sieve.graph"

struct _SieveLuaHost {
  lua_State *L;
  SieveLuaSettings settings;
  SieveRegistry *registry;     /* borrowed, or own_registry */
  SieveRegistry *own_registry; /* (nullable) */
  GPtrArray *require_dirs;     /* char* absolute, searched in order */
  GPtrArray *required;         /* char*: the files require loaded (restricted_searcher), in order */
  /* memory cap (lua_Alloc wrapper) */
  guint64 mem_used, mem_peak;
  gboolean mem_exceeded;
  /* time limits (count hook), per outermost call */
  guint depth;
  gint64 used_instructions;
  gint64 deadline; /* monotonic microseconds, 0: none */
  const char *limit_hit; /* "instruction", "time" or NULL */
  SieveLuaHost *caller;  /* the host whose call was running on this thread when this one entered (nesting) */
  char *main_chunk;      /* the script run_file ran, for messages */
  GThread *thread;       /* the thread that created it: the only one that may call in */
};

/* The host of a state (kept in its extra space). */
static inline SieveLuaHost *
sieve__lua_host(lua_State *L)
{
  return *(SieveLuaHost **) lua_getextraspace(L);
}

/* Calls the function below nargs arguments on the stack under lua_pcall
 * with the traceback handler and the host's limits; on success leaves
 * nresults values, on failure pops everything and sets error (a Lua
 * message with file:line and traceback). */
gboolean sieve__lua_call(SieveLuaHost *host, int nargs, int nresults, GError **error);
/* luaL_loadfilex, except that an error raised while compiling without a
 * place ("C stack overflow": expressions nested too deep) gets the file and
 * line where compiling stopped, and is LUA_ERRSYNTAX. */
int sieve__lua_load_file(lua_State *L, const char *path, const char *mode);
/* The script's file:line at call level (1: the Lua caller of the running C
 * function), "?" when unknown.  (transfer full) */
char *sieve__lua_where(lua_State *L, int level, guint *line);
/* Raises a Lua error with a GError's message (frees it). */
int sieve__lua_error_gerror(lua_State *L, GError *error);
/* The host whose Lua code runs on this thread now (innermost), or NULL. */
SieveLuaHost *sieve__lua_running_host(void);
/* The grants a new host may hold here: the process's cap, less what the
 * running host lacks. */
guint sieve__lua_grant_ceiling(void);
/* FALSE and an error "WHAT needs the 'NAME' grant, which this script was
 * not given (HINT)" when the host lacks bit. */
gboolean sieve__lua_host_check_grant(SieveLuaHost *host, guint bit, const char *what, GError **error);
/* How many simple steps (pattern-matching steps, bytes copied) one C call
 * may still take before the call's instruction or time limit (INFINITY
 * without limits): what the string wrappers hold long C calls to. */
double sieve__lua_steps_left(SieveLuaHost *host);
/* Raises the limit error when the host's limit is spent (a flag a C
 * function checks before it does long work). */
void sieve__lua_check_limit(lua_State *L);
/* Runs the function on top of L (one argument below it) in a thread of
 * its own with the host's limit hook on, for code Lua would run with hooks
 * off (finalizers); errors are dropped, as Lua drops a finalizer's. */
void sieve__lua_call_hooked(lua_State *L, int nargs);

/* lua-sandbox.c: opens the allowed libraries and the restricted require,
 * and puts the limits where Lua's own hook does not reach (xpcall's
 * handler, __gc, the string functions that run long in one C call). */
void sieve__lua_sandbox_open(SieveLuaHost *host);
/* The project's lua/ folder (source tree when uninstalled). (transfer full) */
char *sieve__lua_project_dir(void);

/* lua-convert.c */
/* A Lua value as a config tree, located at origin:line with column 0 (Lua
 * tells no column); tables: sequences become lists, others maps with
 * string keys in sorted order. */
SieveNode *sieve__lua_to_node(lua_State *L, int idx, const char *origin, guint line, GError **error);
/* A config tree as a Lua value (scalars typed as YAML reads them). */
void sieve__lua_push_node(lua_State *L, const SieveNode *node);
/* A Lua value as YAML flow text, for --set style overrides. (transfer full) */
char *sieve__lua_to_yaml_flow(lua_State *L, int idx, GError **error);
/* Serialisable values <-> GVariant: nil, booleans, integers, floats,
 * strings, tables of them (acyclic), genotypes of space_idx's space and
 * rngs.  what names the value in errors ("state").  (transfer floating) */
GVariant *sieve__lua_to_variant(lua_State *L, int idx, const char *what, GError **error);
/* space_idx: a space userdata for genotypes, 0 when none is expected. */
gboolean sieve__lua_push_variant(lua_State *L, GVariant *value, int space_idx, GError **error);
/* Saved state as text (what sieve.serialize and opt:save give) back into a
 * value (transfer full), or NULL and an error "cannot read the saved state:
 * character N ('...'): what GVariant's parser says". */
GVariant *sieve__lua_parse_state(const char *text, GError **error);
/* sieve.serialize and sieve.deserialize. */
void sieve__lua_open_convert(lua_State *L, int sieve_idx);
/* Validated options as a Lua table {name = value}. */
void sieve__lua_push_options(lua_State *L, const SieveOptions *options);

/* lua-bind-space.c */
void sieve__lua_open_space(lua_State *L, int sieve_idx);
/* owned: the box frees the space on __gc; else it is borrowed. */
void sieve__lua_push_space(lua_State *L, SieveSpace *space, gboolean owned);
/* (transfer none); raises a Lua error when idx is not a live space */
SieveSpace *sieve__lua_check_space(lua_State *L, int idx);
/* (transfer none) (nullable) the live space at idx, without raising. */
SieveSpace *sieve__lua_to_space(lua_State *L, int idx);
/* Counts a call that holds the space of the userdata at owner (its user
 * value 1: a study, evaluator or optimizer) across the script's callbacks
 * (delta +1 before, -1 after): closing the space meanwhile is an error. */
void sieve__lua_space_busy(lua_State *L, int owner, int delta);
/* Drops a borrowed space box's pointer (its owner is about to free it). */
void sieve__lua_invalidate_space(lua_State *L, int idx);
/* Pushes a genotype userdata owning g, whose space is the space userdata at space_idx. */
void sieve__lua_push_genotype(lua_State *L, int space_idx, SieveGenotype *g);
/* (transfer none) */
SieveGenotype *sieve__lua_check_genotype(lua_State *L, int idx);
/* Pushes the space userdata a genotype userdata belongs to. */
void sieve__lua_push_genotype_space(lua_State *L, int idx);
/* A genotype from a genotype userdata, a text (parsed) or a table
 * {name = value} for space at space_idx.  (transfer full) */
SieveGenotype *sieve__lua_to_genotype(lua_State *L, int idx, int space_idx, GError **error);
/* A builder for a Lua space's create(); invalidate after the call. */
void sieve__lua_push_builder(lua_State *L, SieveSpace *space);
void sieve__lua_invalidate_builder(lua_State *L, int idx);

/* lua-bind-graph.c */
void sieve__lua_open_graph(lua_State *L, int sieve_idx);
/* Pushes a graph userdata owning graph (finished when it has an output). */
void sieve__lua_push_graph(lua_State *L, SieveGraph *graph);
/* (transfer none) the graph at idx; raises unless it is a live graph (and,
 * with finished, a finished one). */
const SieveGraph *sieve__lua_check_graph(lua_State *L, int idx, gboolean finished);
/* (transfer none) (nullable) the same without raising, for C callers
 * outside a protected call; *finished says whether it is finished. */
const SieveGraph *sieve__lua_to_graph(lua_State *L, int idx, gboolean *finished);

/* "structural" (the default) or "functional" at argument arg, else a Lua error. */
SieveHashKind sieve__lua_check_hash_kind(lua_State *L, int arg);
/* Pushes a hash as its 32 hex digits. */
void sieve__lua_push_hash(lua_State *L, const SieveHash *hash);

/* lua-bind-proxy.c: sieve.proxies, sieve.proxy_list, sieve.rank_aggregate. */
void sieve__lua_open_proxy(lua_State *L, int sieve_idx);

/* lua-bind-rng.c */
void sieve__lua_open_rng(lua_State *L, int sieve_idx);
SieveRng *sieve__lua_push_rng(lua_State *L, const SieveRng *init);
SieveRng *sieve__lua_check_rng(lua_State *L, int idx);

/* lua-bind-result.c */
void sieve__lua_open_result(lua_State *L, int sieve_idx);
/* Takes ownership of result. */
void sieve__lua_push_result(lua_State *L, SieveResult *result);
/* A result userdata or a table {status=, metrics=, reason=, cost=}
 * (transfer full); NULL + error when neither. */
SieveResult *sieve__lua_to_result(lua_State *L, int idx, GError **error);
/* A result's metrics as a fresh table {name = value}. */
void sieve__lua_push_metrics(lua_State *L, const SieveResult *result);

/* lua-bind-optimizer.c */
void sieve__lua_open_optimizer(lua_State *L, int sieve_idx);

/* lua-bind-evaluator.c */
void sieve__lua_open_evaluator(lua_State *L, int sieve_idx);
/* (transfer none) (nullable) the live evaluator at idx, without raising. */
SieveEvaluator *sieve__lua_to_evaluator(lua_State *L, int idx);
/* Evaluates c with the evaluator userdata at idx (its space marked busy, the
 * evaluator not closable meanwhile).  (transfer full) */
SieveResult *sieve__lua_evaluator_run(lua_State *L, int idx, SieveCandidate *c, GError **error);
/* A fidelity as a table {name, min, max, integer}. */
void sieve__lua_push_fidelity(lua_State *L, const SieveFidelity *fidelity);

/* lua-impl-evaluator.c: the arguments step, value [, fidelity] from first
 * on, as c.report and study:report take them (range: the evaluator's
 * fidelity, NULL: none); an argument error at the caller's line when one is
 * not a step >= 0, a number, or a fidelity finite, >= 0 and within range. */
void sieve__lua_check_report(lua_State *L, int first, const SieveFidelity *range, gint64 *step, double *value,
                             double *fidelity);

/* lua-bind-study.c */
void sieve__lua_open_study(lua_State *L, int sieve_idx);
/* A candidate as a table {number, text, fidelity (when it has one), genotype of the space at space_idx}. */
void sieve__lua_push_candidate(lua_State *L, const SieveCandidate *c, int space_idx);

/* lua-bind-shared.c */
/* Makes the metatable name: metamethods in it, methods as its __index (either may be NULL). */
void sieve__lua_new_class(lua_State *L, const char *name, const luaL_Reg *methods, const luaL_Reg *metamethods);
/* Sets funcs in the `sieve` table at sieve_idx. */
void sieve__lua_set_funcs(lua_State *L, int sieve_idx, const luaL_Reg *funcs);
/* The component kind and name, and the options table at idx validated against its option table (errors
 * at the caller's file:line); raises a Lua error on either.  (transfer full) */
SieveOptions *sieve__lua_check_component_options(lua_State *L, SieveComponentKind kind, const char *name, int idx,
                                                 const SieveComponent **component);

/* Raises "FILE:LINE: what: unknown option 'k' (did you mean ...)" for a key
 * of the table at idx (when it is one) not among keys (NULL-terminated). */
void sieve__lua_check_keys(lua_State *L, int idx, const char *what, const char *const *keys);
/* A fidelity table {name, min, max, integer} at idx, validated as a
 * config's (errors at the caller's line); out->name is the caller's to
 * g_free. */
gboolean sieve__lua_to_fidelity(lua_State *L, int idx, SieveFidelity *out, GError **error);

/* The objectives of a study written in Lua: `objective = "name"`,
 * {metric = "name", direction = "minimize"} or a list of those. */
typedef struct {
  guint n;
  char **metrics;      /* n + NULL (owned) */
  gboolean *maximize;  /* n (owned) */
} SieveLuaObjectives;
/* Reads the objective field of the table at idx (default: "value",
 * maximize); raises a Lua error on a bad one. */
void sieve__lua_check_objectives(lua_State *L, int idx, SieveLuaObjectives *out);
void sieve__lua_objectives_clear(SieveLuaObjectives *objectives);
/* Larger-is-better values of a result for the objectives (NAN where missing). */
void sieve__lua_orient(const SieveLuaObjectives *objectives, const SieveResult *result, double *out);

/* lua-study-key.c: what makes a store's study the one a script opens with
 * sieve.study (all borrowed; optimizer_options, pruner (its options) and
 * fidelity may be NULL). */
typedef struct {
  const SieveLuaObjectives *objectives;
  const char *optimizer;
  const SieveOptions *optimizer_options;
  gint64 seed;
  const SieveSpace *space;
  const SieveOptions *pruner;
  const SieveFidelity *fidelity;
} SieveLuaStudyKey;
/* The key's text, one "path<TAB>value" line per setting. (transfer full) */
char *sieve__lua_study_key(const SieveLuaStudyKey *key);
/* FALSE, with the first setting that differs and both values, when the key
 * stored with the study at store is not the one wanted. */
gboolean sieve__lua_study_key_check(const char *stored, const char *wanted, const char *store, GError **error);

/* ==== components written in Lua ==== */
/* A component a script registered (lua-def.c). */
typedef struct {
  SieveComponentKind kind;
  char *name;
  char *origin;           /* the script that registered it */
  SieveComponentInfo info;
  SieveOptionSpec *spec;  /* owned, with strings in `strings` */
  GPtrArray *strings;
  SieveFidelity fidelity; /* evaluators that declared one */
  gboolean has_fidelity;
  gboolean has_format;    /* spaces */
  gboolean has_build;     /* spaces that build networks */
  char **probe;           /* spaces: "option=value" of `probe`, NULL-terminated (in strings), or NULL */
  char **builtin_probe;   /* the same as "options.option=value", for the builtin `lua` space */
  SieveSpaceClass klass;  /* spaces: what the script defines (format, build, probe scale) */
  SieveSpaceClass builtin_klass; /* the same for an instance of the builtin `lua` space */
  SieveLuaHost *host;     /* the latest live binding's host, NULL when none is left */
  int table_ref;          /* the definition table in host's registry */
  GArray *bindings;       /* Binding: the same script run by several hosts, latest last */
} SieveLuaDef;

/* An instance of a definition: what the component classes' create() return (lua-instance.c). */
typedef struct {
  SieveLuaDef *def;
  SieveLuaHost *host;
  SieveLuaHost *own_host; /* the builtin `lua` component's private host */
  int self_ref;
  SieveSpace *space;      /* borrowed */
} SieveLuaInstance;

/* lua-def.c */
/* sieve.register_optimizer, register_space and register_evaluator. */
void sieve__lua_open_register(lua_State *L, int sieve_idx);
/* Components registered by the host's scripts lose their state when it
 * closes: later instances fail with a clear error. */
void sieve__lua_defs_forget_host(SieveLuaHost *host);
/* Hands owned to the definition (freed with it) and returns it. */
const char *sieve__lua_def_keep(SieveLuaDef *def, char *owned);
/* The definition whose option table options were validated against, or NULL. */
SieveLuaDef *sieve__lua_def_for_options(const SieveOptions *options);
/* host's definition of kind named wanted (NULL: its only one); *found counts them, names lists them. */
SieveLuaDef *sieve__lua_def_find(SieveLuaHost *host, SieveComponentKind kind, const char *wanted, guint *found,
                                 GString *names);

/* lua-def-options.c: def->spec from the `options` field of the definition table at idx (raises on a bad one). */
void sieve__lua_def_read_options(lua_State *L, SieveLuaDef *def, int idx);
/* def->probe and def->builtin_probe from the `probe` field of a space's definition table at idx. */
void sieve__lua_def_read_probe(lua_State *L, SieveLuaDef *def, int idx);

/* lua-instance.c */
/* A new instance of def, create(self) run; takes own_host (the builtin's private host, or NULL). */
SieveLuaInstance *sieve__lua_instance_new(SieveLuaDef *def, SieveLuaHost *own_host, SieveSpace *space,
                                          const SieveOptions *options, const SieveStudyInfo *study, GError **error);
/* The same for options validated against a definition's table or the builtin `lua` component's. */
SieveLuaInstance *sieve__lua_any_instance_new(SieveComponentKind kind, SieveSpace *space, const SieveOptions *options,
                                              const SieveStudyInfo *study, GError **error);
/* The classes' destroy. */
void sieve__lua_instance_destroy(gpointer instance);
/* Pushes the definition's function field (or nil) and self. */
void sieve__lua_instance_push_method(SieveLuaInstance *inst, const char *field);
/* Whether the definition has a function field. */
gboolean sieve__lua_instance_has_method(SieveLuaInstance *inst, const char *field);
/* The prefix of an error about what method field returned: "KIND 'NAME', field() (FILE:LINE): ", without
 * the component where the core adds it.  (transfer full) */
char *sieve__lua_instance_prefix(SieveLuaInstance *inst, const char *field);
/* Calls the method pushed below nargs arguments; errors name the component and the method. */
gboolean sieve__lua_instance_call(SieveLuaInstance *inst, const char *field, int nargs, int nresults, GError **error);
/* FALSE and an error when called from another thread than the host's. */
gboolean sieve__lua_instance_on_host_thread(SieveLuaInstance *inst, const char *field, GError **error);

/* lua-impl-optimizer.c, lua-impl-evaluator.c, lua-impl-space.c: the classes the engine calls. */
extern const SieveOptimizerClass sieve__lua_impl_optimizer_class;
extern const SieveEvaluatorClass sieve__lua_impl_evaluator_class;
/* The builtin `lua` space's class until its script has run. */
extern const SieveSpaceClass sieve__lua_impl_space_class;
/* def->klass and def->builtin_klass from what a space's definition has. */
void sieve__lua_impl_space_class_init(SieveLuaDef *def);

/* lua-builtin.c */
/* The option table of the builtin `lua` components (script, name, options, lua). */
extern const SieveOptionSpec sieve__lua_builtin_options[];
/* An instance of the component of kind that the builtin's script registers, in a host of its own. */
SieveLuaInstance *sieve__lua_builtin_instance_new(SieveComponentKind kind, SieveSpace *space,
                                                  const SieveOptions *options, const SieveStudyInfo *study,
                                                  GError **error);

G_END_DECLS
