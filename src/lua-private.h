/* sieve: what the Lua host's files share (not installed).
 *
 * Layout of the bindings: one file per C type, each registering one
 * metatable named "sieve.<type>" and its constructors in the `sieve`
 * table.  A binding pushes a userdata that either owns its C object (freed
 * by __gc or __close) or borrows it from the engine (a component's space),
 * in which case the engine invalidates the box before freeing the object
 * and every later use is a Lua error, not a use after free.  Userdata that
 * depend on another keep it alive through a user value (a genotype holds
 * its space).  A graph (lua-graph.c) owns its SieveGraph and depends on
 * nothing: space:build(g) hands over a graph of its own.
 */
#pragma once

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include <sieve/hash.h>

#include "lua-host.h"

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
  /* memory cap (lua_Alloc wrapper) */
  guint64 mem_used, mem_peak;
  gboolean mem_exceeded;
  /* time limits (count hook), per outermost call */
  guint depth;
  gint64 used_instructions;
  gint64 deadline; /* monotonic microseconds, 0: none */
  const char *limit_hit; /* "instruction", "time" or NULL */
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
/* The script's file:line at call level (1: the Lua caller of the running C
 * function), "?" when unknown.  (transfer full) */
char *sieve__lua_where(lua_State *L, int level, guint *line);
/* Raises a Lua error with a GError's message (frees it). */
int sieve__lua_error_gerror(lua_State *L, GError *error);

/* lua-sandbox.c: opens the allowed libraries and the restricted require. */
void sieve__lua_sandbox_open(SieveLuaHost *host);
/* The project's lua/ folder (source tree when uninstalled). (transfer full) */
char *sieve__lua_project_dir(void);

/* lua-convert.c */
/* A Lua value as a config tree, located at origin:line (tables: sequences
 * become lists, others maps with string keys in sorted order). */
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
/* sieve.serialize and sieve.deserialize. */
void sieve__lua_open_convert(lua_State *L, int sieve_idx);
/* Validated options as a Lua table {name = value}. */
void sieve__lua_push_options(lua_State *L, const SieveOptions *options);

/* lua-space.c */
void sieve__lua_open_space(lua_State *L, int sieve_idx);
/* owned: the box frees the space on __gc; else it is borrowed. */
void sieve__lua_push_space(lua_State *L, SieveSpace *space, gboolean owned);
/* (transfer none); raises a Lua error when idx is not a live space */
SieveSpace *sieve__lua_check_space(lua_State *L, int idx);
/* Drops a borrowed space box's pointer (its owner is about to free it). */
void sieve__lua_invalidate_space(lua_State *L, int idx);
/* Pushes a genotype userdata owning g, whose space is the space userdata at space_idx. */
void sieve__lua_push_genotype(lua_State *L, int space_idx, SieveGenotype *g);
/* (transfer none) */
SieveGenotype *sieve__lua_check_genotype(lua_State *L, int idx);
/* Pushes the space userdata a genotype userdata belongs to. */
void sieve__lua_push_genotype_space(lua_State *L, int idx);
/* A builder for a Lua space's create(); invalidate after the call. */
void sieve__lua_push_builder(lua_State *L, SieveSpace *space);
void sieve__lua_invalidate_builder(lua_State *L, int idx);

/* lua-graph.c */
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

/* lua-proxy.c: sieve.proxies, sieve.proxy_list, sieve.rank_aggregate. */
void sieve__lua_open_proxy(lua_State *L, int sieve_idx);

/* lua-rng.c */
void sieve__lua_open_rng(lua_State *L, int sieve_idx);
SieveRng *sieve__lua_push_rng(lua_State *L, const SieveRng *init);
SieveRng *sieve__lua_check_rng(lua_State *L, int idx);

/* lua-result.c */
void sieve__lua_open_result(lua_State *L, int sieve_idx);
/* Takes ownership of result. */
void sieve__lua_push_result(lua_State *L, SieveResult *result);
/* A result userdata or a table {status=, metrics=, reason=, cost=}
 * (transfer full); NULL + error when neither. */
SieveResult *sieve__lua_to_result(lua_State *L, int idx, GError **error);

/* lua-optimizer.c, lua-evaluator.c, lua-study.c, lua-component.c */
void sieve__lua_open_optimizer(lua_State *L, int sieve_idx);
void sieve__lua_open_evaluator(lua_State *L, int sieve_idx);
void sieve__lua_open_study(lua_State *L, int sieve_idx);
void sieve__lua_open_component(lua_State *L, int sieve_idx);
/* Components registered by the host's scripts lose their state when it
 * closes: later instances fail with a clear error. */
void sieve__lua_components_forget_host(SieveLuaHost *host);

/* Checks that the value at idx is a table of options and turns it into
 * validated options for spec (errors at the caller's file:line).
 * (transfer full) */
SieveOptions *sieve__lua_check_options(lua_State *L, int idx, const SieveOptionSpec *spec,
                                       const char *context, GError **error);
/* The component kind and name, or a Lua error naming the closest one. */
const SieveComponent *sieve__lua_check_component(lua_State *L, SieveComponentKind kind, const char *name);
/* A genotype from a genotype userdata, a text (parsed) or a table
 * {name = value} for space at space_idx.  (transfer full) */
SieveGenotype *sieve__lua_to_genotype(lua_State *L, int idx, int space_idx, GError **error);

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

/* registry.c: registers a component whose file is origin (a script). */
gboolean sieve__registry_add_from(SieveRegistry *registry, const SieveComponentInfo *info, const char *origin,
                                  GError **error);
