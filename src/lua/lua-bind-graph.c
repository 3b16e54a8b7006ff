/* sieve: binding (scripts call C): sieve.graph, networks in Lua, built op
 * by op or by a space.
 *
 *   local g = sieve.graph.new("tiny")
 *   local x = g:input(1, 28, 28)
 *   local h = g:conv2d(x, {out = 8, kernel = 3, pad = 1})
 *   h = g:relu(g:batch_norm(h))
 *   h = g:linear(g:global_avg_pool(h), {out = 10})
 *   g:finish(h)
 *   print(g.params, g.flops, g:dump())
 *
 *   local net = space:build(genotype)        -- the same userdata, finished
 *   net:hash()  net:hash("functional")       -- 32 hex digits (sieve/hash.h)
 *
 * A node is its index in the graph, the number the dump prints after '%'
 * (0 is the first node): plain integers keep a space's build loop cheap.
 * Each builder maps onto one sieve_graph_add() with the attributes the C
 * convenience builders of sieve/graph.h would give, so that a network
 * written in Lua and one written in C are the same graph (same dump, same
 * hashes).  A builder that the graph refuses (a shape mismatch, a kernel
 * that does not fit) raises at once, at the script's line, with the
 * graph's message; the graph keeps that error, so later builders and
 * finish() raise it too.  A finished graph is read-only.
 *
 * `flops` is the multiply-accumulate count per example of the live
 * convolutions and linear layers (sieve_graph_macs), which is what the NAS
 * literature (NAS-Bench-201's "FLOPs" column among others) calls FLOPs;
 * `macs` is the same number under its exact name.
 */
#include <string.h>

#include <sieve/hash.h>

#include "lua/lua-private.h"

typedef struct {
  SieveGraph *graph; /* owned; NULL once closed */
  gboolean finished;
} GraphBox;

/* ---- boxes ------------------------------------------------------------------ */

/* The collector sees a graph as its small box, while the nodes live in C:
 * a loop that builds and drops thousands of networks would hold them all
 * before a collection came.  A step of the size of the C side, as if Lua
 * had allocated it, keeps the pace (measured: 20,000 NAS-Bench-201 networks
 * built and dropped peaked at 290 MB without it). */
static void
account(lua_State *L, const SieveGraph *graph)
{
  /* A node, its inputs, label and the arrays' slots: ~160 bytes. */
  int kb = (int) MIN(sieve_graph_n_nodes(graph) * 160u / 1024u, (guint) G_MAXINT);
  if (kb > 0)
    lua_gc(L, LUA_GCSTEP, kb);
}

void
sieve__lua_push_graph(lua_State *L, SieveGraph *graph)
{
  GraphBox *box = lua_newuserdatauv(L, sizeof(GraphBox), 0);
  box->graph = graph;
  box->finished = sieve_graph_output(graph) != SIEVE_NODE_INVALID;
  luaL_setmetatable(L, SIEVE_LUA_GRAPH);
  account(L, graph);
}

static GraphBox *
check_box(lua_State *L, int idx)
{
  GraphBox *box = luaL_checkudata(L, idx, SIEVE_LUA_GRAPH);
  if (box->graph == NULL)
    luaL_error(L, "this graph is closed");
  return box;
}

const SieveGraph *
sieve__lua_check_graph(lua_State *L, int idx, gboolean finished)
{
  GraphBox *box = check_box(L, idx);
  if (finished && !box->finished)
    luaL_error(L, "graph '%s' is not finished: call g:finish(output) first", sieve_graph_name(box->graph));
  return box->graph;
}

const SieveGraph *
sieve__lua_to_graph(lua_State *L, int idx, gboolean *finished)
{
  GraphBox *box = luaL_testudata(L, idx, SIEVE_LUA_GRAPH);
  if (box == NULL || box->graph == NULL)
    return NULL;
  *finished = box->finished;
  return box->graph;
}

/* A box that builders may still add to. */
static GraphBox *
check_open(lua_State *L)
{
  GraphBox *box = check_box(L, 1);
  if (box->finished)
    luaL_error(L, "graph '%s' is finished: it cannot take more nodes (build a new one, or g:copy() before "
                  "finishing)",
               sieve_graph_name(box->graph));
  return box;
}

static int
graph_gc(lua_State *L)
{
  GraphBox *box = luaL_checkudata(L, 1, SIEVE_LUA_GRAPH);
  g_clear_pointer(&box->graph, sieve_graph_free);
  return 0;
}

/* sieve.graph.new([name]) */
static int
graph_new(lua_State *L)
{
  const char *name = luaL_optstring(L, 1, "lua");
  sieve__lua_push_graph(L, sieve_graph_new(name));
  return 1;
}

/* ---- arguments ---------------------------------------------------------------- */

/* A node of the graph in box at argument arg. */
static guint
check_node(lua_State *L, GraphBox *box, int arg)
{
  guint n = sieve_graph_n_nodes(box->graph);
  int isint = 0;
  lua_Integer i = lua_tointegerx(L, arg, &isint);
  if (!isint || lua_type(L, arg) != LUA_TNUMBER) {
    const char *msg = lua_pushfstring(L, "expected a node (an integer 0..%d), got %s", (int) n - 1,
                                      lua_type(L, arg) == LUA_TNUMBER ? lua_tostring(L, arg) : luaL_typename(L, arg));
    luaL_argerror(L, arg, msg);
  }
  if (i < 0 || (lua_Unsigned) i >= n) {
    if (n == 0)
      luaL_argerror(L, arg, lua_pushfstring(L, "node %I does not exist: graph '%s' has no nodes yet (begin with "
                                               "g:input(c, h, w))", i, sieve_graph_name(box->graph)));
    luaL_argerror(L, arg, lua_pushfstring(L, "node %I does not exist: graph '%s' has nodes 0..%d", i,
                                          sieve_graph_name(box->graph), (int) n - 1));
  }
  return (guint) i;
}

/* The options table of an op at arg (or none): every key must be one of
 * keys, else an error naming the closest. */
static void
check_keys(lua_State *L, int arg, const char *op, const char *const *keys)
{
  if (lua_isnoneornil(L, arg))
    return;
  luaL_checktype(L, arg, LUA_TTABLE);
  sieve__lua_check_keys(L, arg, op, keys);
}

/* An unsigned integer field of the options at arg; dflt < 0: required. */
static guint
get_uint(lua_State *L, int arg, const char *op, const char *key, gint64 dflt, guint min)
{
  int type = lua_isnoneornil(L, arg) ? LUA_TNIL : lua_getfield(L, arg, key);
  if (type == LUA_TNIL) {
    if (!lua_isnoneornil(L, arg))
      lua_pop(L, 1);
    if (dflt < 0)
      luaL_error(L, "%s: option '%s' is required", op, key);
    return (guint) dflt;
  }
  int isint = 0;
  lua_Integer v = lua_tointegerx(L, -1, &isint);
  if (!isint || type != LUA_TNUMBER || v < (lua_Integer) min || v > G_MAXUINT)
    luaL_error(L, "%s: option '%s' expects an integer >= %d, got %s", op, key, (int) min,
               type == LUA_TNUMBER ? lua_tostring(L, -1) : luaL_typename(L, -1));
  lua_pop(L, 1);
  return (guint) v;
}

/* A height/width pair: a number for both, or {h, w}. */
static void
get_pair(lua_State *L, int arg, const char *op, const char *key, gint64 dflt, guint min, guint out[2])
{
  if (!lua_isnoneornil(L, arg) && lua_getfield(L, arg, key) == LUA_TTABLE) {
    int t = lua_gettop(L);
    for (int d = 0; d < 2; d++) {
      lua_rawgeti(L, t, d + 1);
      int isint = 0;
      lua_Integer v = lua_tointegerx(L, -1, &isint);
      if (lua_rawlen(L, t) != 2 || !isint || lua_type(L, -1) != LUA_TNUMBER || v < (lua_Integer) min ||
          v > G_MAXUINT)
        luaL_error(L, "%s: option '%s' expects an integer >= %d or a pair {height, width} of them", op, key,
                   (int) min);
      out[d] = (guint) v;
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return;
  }
  if (!lua_isnoneornil(L, arg))
    lua_pop(L, 1);
  out[0] = out[1] = get_uint(L, arg, op, key, dflt, min);
}

static double
get_number(lua_State *L, int arg, const char *op, const char *key, double dflt)
{
  if (lua_isnoneornil(L, arg) || lua_getfield(L, arg, key) == LUA_TNIL) {
    if (!lua_isnoneornil(L, arg))
      lua_pop(L, 1);
    return dflt;
  }
  if (lua_type(L, -1) != LUA_TNUMBER)
    luaL_error(L, "%s: option '%s' expects a number, got a %s", op, key, luaL_typename(L, -1));
  double v = lua_tonumber(L, -1);
  lua_pop(L, 1);
  return v;
}

static gboolean
get_bool(lua_State *L, int arg, const char *op, const char *key, gboolean dflt)
{
  if (lua_isnoneornil(L, arg) || lua_getfield(L, arg, key) == LUA_TNIL) {
    if (!lua_isnoneornil(L, arg))
      lua_pop(L, 1);
    return dflt;
  }
  if (lua_type(L, -1) != LUA_TBOOLEAN)
    luaL_error(L, "%s: option '%s' expects true or false, got a %s", op, key, luaL_typename(L, -1));
  gboolean v = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

/* ---- adding nodes ------------------------------------------------------------------ */

/* Adds the node, raising the graph's error at the script's line when it
 * refuses; labels it from the options' `label`; pushes its index. */
static int
add_node(lua_State *L, GraphBox *box, SieveOpKind kind, const guint *inputs, guint n, const SieveOpAttrs *attrs,
         int opts_arg)
{
  const char *label = NULL;
  if (!lua_isnoneornil(L, opts_arg)) {
    if (lua_getfield(L, opts_arg, "label") != LUA_TNIL && lua_type(L, -1) != LUA_TSTRING)
      return luaL_error(L, "%s: option 'label' expects a string, got a %s", sieve_op_kind_name(kind),
                        luaL_typename(L, -1));
    label = lua_tostring(L, -1); /* kept alive on the stack */
  }
  guint node = sieve_graph_add(box->graph, kind, inputs, n, attrs);
  if (node == SIEVE_NODE_INVALID) {
    GError *error = NULL;
    /* finish() hands back the graph's first error and changes nothing. */
    sieve_graph_finish(box->graph, 0, &error);
    return sieve__lua_error_gerror(L, error);
  }
  if (label != NULL)
    sieve_graph_set_label(box->graph, node, label);
  lua_pushinteger(L, node);
  return 1;
}

static const char *const label_keys[] = {"label", NULL};

/* g:input(c, h, w[, {label}]) */
static int
graph_input(lua_State *L)
{
  GraphBox *box = check_open(L);
  SieveOpAttrs a = {0};
  lua_Integer dims[3];
  for (int d = 0; d < 3; d++) {
    dims[d] = luaL_checkinteger(L, 2 + d);
    luaL_argcheck(L, dims[d] >= 1 && dims[d] <= G_MAXUINT, 2 + d, "expected a positive extent");
  }
  check_keys(L, 5, "input", label_keys);
  a.out_channels = (guint) dims[0];
  a.kernel[0] = (guint) dims[1];
  a.kernel[1] = (guint) dims[2];
  return add_node(L, box, SIEVE_OP_INPUT, NULL, 0, &a, 5);
}

/* g:conv2d(x, {out, kernel, stride = 1, pad = 0, dilation = 1, groups = 1, bias = false, label}) */
static int
graph_conv2d(lua_State *L)
{
  static const char *const keys[] = {"out", "kernel", "stride", "pad", "dilation", "groups", "bias", "label", NULL};
  GraphBox *box = check_open(L);
  guint x = check_node(L, box, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  check_keys(L, 3, "conv2d", keys);
  SieveOpAttrs a = {0};
  a.out_channels = get_uint(L, 3, "conv2d", "out", -1, 1);
  get_pair(L, 3, "conv2d", "kernel", -1, 1, a.kernel);
  get_pair(L, 3, "conv2d", "stride", 1, 1, a.stride);
  get_pair(L, 3, "conv2d", "pad", 0, 0, a.pad);
  get_pair(L, 3, "conv2d", "dilation", 1, 1, a.dilation);
  a.groups = get_uint(L, 3, "conv2d", "groups", 1, 1);
  a.bias = get_bool(L, 3, "conv2d", "bias", FALSE);
  return add_node(L, box, SIEVE_OP_CONV2D, &x, 1, &a, 3);
}

/* g:batch_norm(x[, {eps = 1e-5, momentum = 0.1, affine = true, label}]):
 * PyTorch's BatchNorm2d defaults, as sieve_graph_batch_norm. */
static int
graph_batch_norm(lua_State *L)
{
  static const char *const keys[] = {"eps", "momentum", "affine", "label", NULL};
  GraphBox *box = check_open(L);
  guint x = check_node(L, box, 2);
  check_keys(L, 3, "batch_norm", keys);
  SieveOpAttrs a = {0};
  a.eps = get_number(L, 3, "batch_norm", "eps", 1e-5);
  a.momentum = get_number(L, 3, "batch_norm", "momentum", 0.1);
  a.affine = get_bool(L, 3, "batch_norm", "affine", TRUE);
  return add_node(L, box, SIEVE_OP_BATCH_NORM, &x, 1, &a, 3);
}

/* PyTorch's default slopes; 0 where the activation has no parameter. */
static double
default_alpha(SieveActivation act)
{
  return act == SIEVE_ACT_LEAKY_RELU ? 0.01 : act == SIEVE_ACT_ELU ? 1.0 : 0.0;
}

static int
add_activation(lua_State *L, GraphBox *box, SieveActivation act, int x_arg, int opts_arg)
{
  static const char *const keys[] = {"alpha", "label", NULL};
  guint x = check_node(L, box, x_arg);
  check_keys(L, opts_arg, sieve_activation_name(act), keys);
  SieveOpAttrs a = {0};
  a.activation = act;
  a.alpha = get_number(L, opts_arg, sieve_activation_name(act), "alpha", default_alpha(act));
  return add_node(L, box, SIEVE_OP_ACTIVATION, &x, 1, &a, opts_arg);
}

/* g:activation(x, name[, {alpha, label}]) */
static int
graph_activation(lua_State *L)
{
  GraphBox *box = check_open(L);
  const char *name = luaL_checkstring(L, 3);
  SieveActivation act = sieve_activation_from_name(name);
  if (act == SIEVE_N_ACTIVATIONS) {
    const char *names[SIEVE_N_ACTIVATIONS + 1] = {NULL};
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int k = 0; k < SIEVE_N_ACTIVATIONS; k++) {
      names[k] = sieve_activation_name(k);
      if (k)
        luaL_addstring(&b, ", ");
      luaL_addstring(&b, names[k]);
    }
    luaL_pushresult(&b);
    const char *guess = sieve_suggest(name, names);
    return luaL_error(L, "unknown activation '%s'%s%s%s; expected one of: %s", name, guess ? " (did you mean '" : "",
                      guess ? guess : "", guess ? "'?)" : "", lua_tostring(L, -1));
  }
  lua_remove(L, 3);
  return add_activation(L, box, act, 2, 3);
}

/* g:relu(x), g:gelu(x) ...: the activation is the closure's upvalue. */
static int
graph_named_activation(lua_State *L)
{
  GraphBox *box = check_open(L);
  return add_activation(L, box, (SieveActivation) lua_tointeger(L, lua_upvalueindex(1)), 2, 3);
}

static int
add_pool(lua_State *L, GraphBox *box, gint kind, const char *op)
{
  static const char *const keys[] = {"kind", "kernel", "stride", "pad", "label", NULL};
  static const char *const keys_fixed[] = {"kernel", "stride", "pad", "label", NULL};
  guint x = check_node(L, box, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  check_keys(L, 3, op, kind < 0 ? keys : keys_fixed);
  if (kind < 0) {
    lua_getfield(L, 3, "kind");
    const char *k = lua_tostring(L, -1);
    if (k == NULL || (strcmp(k, "avg") != 0 && strcmp(k, "max") != 0))
      return luaL_error(L, "pool: option 'kind' expects \"avg\" or \"max\", got %s",
                        k ? k : luaL_typename(L, -1));
    kind = strcmp(k, "avg") == 0 ? SIEVE_POOL_AVG : SIEVE_POOL_MAX;
    lua_pop(L, 1);
  }
  SieveOpAttrs a = {0};
  a.pool = (SievePoolKind) kind;
  get_pair(L, 3, op, "kernel", -1, 1, a.kernel);
  /* The stride defaults to the kernel, as PyTorch's pooling layers. */
  gboolean strided = lua_getfield(L, 3, "stride") != LUA_TNIL;
  lua_pop(L, 1);
  if (strided)
    get_pair(L, 3, op, "stride", -1, 1, a.stride);
  else
    memcpy(a.stride, a.kernel, sizeof a.stride);
  get_pair(L, 3, op, "pad", 0, 0, a.pad);
  return add_node(L, box, SIEVE_OP_POOL, &x, 1, &a, 3);
}

/* g:pool(x, {kind = "avg"|"max", kernel, stride = kernel, pad = 0, label});
 * average pooling never counts the padding. */
static int
graph_pool(lua_State *L)
{
  return add_pool(L, check_open(L), -1, "pool");
}

static int
graph_avg_pool(lua_State *L)
{
  return add_pool(L, check_open(L), SIEVE_POOL_AVG, "avg_pool");
}

static int
graph_max_pool(lua_State *L)
{
  return add_pool(L, check_open(L), SIEVE_POOL_MAX, "max_pool");
}

/* g:add(a, b, ...) or g:add({a, b, ...}[, {label}]); concat alike. */
static int
add_variadic(lua_State *L, SieveOpKind kind)
{
  GraphBox *box = check_open(L);
  const char *op = sieve_op_kind_name(kind);
  int opts = 0;
  guint n;
  if (lua_istable(L, 2)) {
    opts = 3;
    lua_settop(L, 3); /* the options, or nil: the scratch below goes above them */
    check_keys(L, 3, op, label_keys);
    n = (guint) lua_rawlen(L, 2);
  } else
    n = (guint) (lua_gettop(L) - 1);
  if (n == 0)
    return luaL_error(L, "%s: needs at least one input node", op);
  if (!opts)
    lua_pushnil(L); /* stands for the options, so that the scratch below is not taken for them */
  guint *xs = lua_newuserdatauv(L, n * sizeof(guint), 0); /* collected even if a check raises */
  for (guint i = 0; i < n; i++) {
    if (opts) {
      lua_rawgeti(L, 2, (lua_Integer) i + 1);
      int isint = 0;
      lua_Integer v = lua_tointegerx(L, -1, &isint);
      if (!isint || lua_type(L, -1) != LUA_TNUMBER || v < 0 || (lua_Unsigned) v >= sieve_graph_n_nodes(box->graph))
        return luaL_error(L, "%s: input %d is not a node of graph '%s' (0..%d)", op, (int) i + 1,
                          sieve_graph_name(box->graph), (int) sieve_graph_n_nodes(box->graph) - 1);
      xs[i] = (guint) v;
      lua_pop(L, 1);
    } else
      xs[i] = check_node(L, box, (int) i + 2);
  }
  return add_node(L, box, kind, xs, n, NULL, opts ? opts : (int) n + 2);
}

static int
graph_add(lua_State *L)
{
  return add_variadic(L, SIEVE_OP_ADD);
}

static int
graph_concat(lua_State *L)
{
  return add_variadic(L, SIEVE_OP_CONCAT);
}

/* g:linear(x, {out, bias = true, label}) */
static int
graph_linear(lua_State *L)
{
  static const char *const keys[] = {"out", "bias", "label", NULL};
  GraphBox *box = check_open(L);
  guint x = check_node(L, box, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  check_keys(L, 3, "linear", keys);
  SieveOpAttrs a = {0};
  a.out_channels = get_uint(L, 3, "linear", "out", -1, 1);
  a.bias = get_bool(L, 3, "linear", "bias", TRUE);
  return add_node(L, box, SIEVE_OP_LINEAR, &x, 1, &a, 3);
}

/* Ops with one input and no attributes: g:global_avg_pool(x), g:identity(x), g:zero(x). */
static int
add_plain(lua_State *L, SieveOpKind kind)
{
  GraphBox *box = check_open(L);
  guint x = check_node(L, box, 2);
  check_keys(L, 3, sieve_op_kind_name(kind), label_keys);
  return add_node(L, box, kind, &x, 1, NULL, 3);
}

static int
graph_global_avg_pool(lua_State *L)
{
  return add_plain(L, SIEVE_OP_GLOBAL_AVG_POOL);
}

static int
graph_identity(lua_State *L)
{
  return add_plain(L, SIEVE_OP_IDENTITY);
}

static int
graph_zero(lua_State *L)
{
  return add_plain(L, SIEVE_OP_ZERO);
}

/* g:mul(x, gate[, {label}]): x * gate, a Cx1x1 gate scaling x's channels (graph.h). */
static int
graph_mul(lua_State *L)
{
  GraphBox *box = check_open(L);
  guint xs[2] = {check_node(L, box, 2), check_node(L, box, 3)};
  check_keys(L, 4, "mul", label_keys);
  return add_node(L, box, SIEVE_OP_MUL, xs, 2, NULL, 4);
}

/* g:crop(x, {size = {h, w}, offset = {top, left} or 0, label}): the window
 * x[:, top:top+h, left:left+w] (DARTS's factorized reduction reads x[:, 1:, 1:]). */
static int
graph_crop(lua_State *L)
{
  static const char *const keys[] = {"size", "offset", "label", NULL};
  GraphBox *box = check_open(L);
  guint x = check_node(L, box, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  check_keys(L, 3, "crop", keys);
  SieveOpAttrs a = {0};
  get_pair(L, 3, "crop", "size", -1, 1, a.kernel);
  get_pair(L, 3, "crop", "offset", 0, 0, a.pad);
  return add_node(L, box, SIEVE_OP_CROP, &x, 1, &a, 3);
}

/* g:label(node, text) -> node */
static int
graph_label(lua_State *L)
{
  GraphBox *box = check_open(L);
  guint x = check_node(L, box, 2);
  sieve_graph_set_label(box->graph, x, luaL_checkstring(L, 3));
  lua_pushinteger(L, x);
  return 1;
}

/* g:finish(output) -> g */
static int
graph_finish(lua_State *L)
{
  GraphBox *box = check_open(L);
  guint out = check_node(L, box, 2);
  GError *error = NULL;
  if (!sieve_graph_finish(box->graph, out, &error))
    return sieve__lua_error_gerror(L, error);
  box->finished = TRUE;
  account(L, box->graph);
  lua_settop(L, 1);
  return 1;
}

/* ---- hashes ---------------------------------------------------------------------------- */

SieveHashKind
sieve__lua_check_hash_kind(lua_State *L, int arg)
{
  const char *name = luaL_optstring(L, arg, "structural");
  SieveHashKind kind;
  if (!sieve_hash_kind_from_name(name, &kind))
    luaL_argerror(L, arg, lua_pushfstring(L, "expected \"structural\" or \"functional\", got \"%s\"", name));
  return kind;
}

void
sieve__lua_push_hash(lua_State *L, const SieveHash *hash)
{
  char text[SIEVE_HASH_TEXT_LEN];
  sieve_hash_format(hash, text);
  lua_pushstring(L, text);
}

/* g:hash([kind = "structural"][, {batch, threads}]) -> 32 hex digits.  The
 * functional hash runs the graph at its own scale (space:hash runs a
 * candidate at its space's probe scale). */
static int
graph_hash(lua_State *L)
{
  static const char *const keys[] = {"batch", "threads", NULL};
  const SieveGraph *graph = sieve__lua_check_graph(L, 1, TRUE);
  SieveHashKind kind = sieve__lua_check_hash_kind(L, 2);
  check_keys(L, 3, "hash", keys);
  SieveFunctionalHashOptions options = {0};
  options.batch = get_uint(L, 3, "hash", "batch", 0, 0);
  options.threads = get_uint(L, 3, "hash", "threads", 0, 0);
  if (kind == SIEVE_HASH_STRUCTURAL && !lua_isnoneornil(L, 3) && (options.batch || options.threads))
    return luaL_error(L, "hash: batch and threads are options of the functional hash");
  SieveHash hash;
  GError *error = NULL;
  gboolean ok = kind == SIEVE_HASH_STRUCTURAL ? sieve_graph_hash_structural(graph, &hash, &error)
                                              : sieve_graph_hash_functional(graph, &options, &hash, &error);
  if (!ok)
    return sieve__lua_error_gerror(L, error);
  sieve__lua_push_hash(L, &hash);
  return 1;
}

/* ---- reading -------------------------------------------------------------------------- */

/* g:shape(x) -> c, h, w */
static int
graph_shape(lua_State *L)
{
  GraphBox *box = check_box(L, 1);
  const SieveGraphNode *n = sieve_graph_node(box->graph, check_node(L, box, 2));
  lua_pushinteger(L, n->shape.c);
  lua_pushinteger(L, n->shape.h);
  lua_pushinteger(L, n->shape.w);
  return 3;
}

static void
set_pair(lua_State *L, const char *key, const guint v[2])
{
  lua_createtable(L, 2, 0);
  lua_pushinteger(L, v[0]);
  lua_rawseti(L, -2, 1);
  lua_pushinteger(L, v[1]);
  lua_rawseti(L, -2, 2);
  lua_setfield(L, -2, key);
}

/* g:node(i) -> {index, kind, inputs, shape = {c, h, w}, label, params, live,
 * and the op's attributes under the names its builder takes}. */
static int
graph_node(lua_State *L)
{
  GraphBox *box = check_box(L, 1);
  guint i = check_node(L, box, 2);
  const SieveGraphNode *n = sieve_graph_node(box->graph, i);
  const SieveOpAttrs *a = &n->attrs;
  lua_newtable(L);
  lua_pushinteger(L, i);
  lua_setfield(L, -2, "index");
  lua_pushstring(L, sieve_op_kind_name(n->kind));
  lua_setfield(L, -2, "kind");
  lua_createtable(L, (int) n->n_inputs, 0);
  for (guint k = 0; k < n->n_inputs; k++) {
    lua_pushinteger(L, n->inputs[k]);
    lua_rawseti(L, -2, (lua_Integer) k + 1);
  }
  lua_setfield(L, -2, "inputs");
  lua_createtable(L, 3, 0);
  lua_pushinteger(L, n->shape.c);
  lua_rawseti(L, -2, 1);
  lua_pushinteger(L, n->shape.h);
  lua_rawseti(L, -2, 2);
  lua_pushinteger(L, n->shape.w);
  lua_rawseti(L, -2, 3);
  lua_setfield(L, -2, "shape");
  if (n->label) {
    lua_pushstring(L, n->label);
    lua_setfield(L, -2, "label");
  }
  lua_pushinteger(L, (lua_Integer) sieve_graph_node_params(box->graph, i));
  lua_setfield(L, -2, "params");
  lua_pushboolean(L, sieve_graph_node_live(box->graph, i));
  lua_setfield(L, -2, "live");
  switch (n->kind) {
  case SIEVE_OP_CONV2D:
    lua_pushinteger(L, a->out_channels);
    lua_setfield(L, -2, "out");
    set_pair(L, "kernel", a->kernel);
    set_pair(L, "stride", a->stride);
    set_pair(L, "pad", a->pad);
    set_pair(L, "dilation", a->dilation);
    lua_pushinteger(L, a->groups);
    lua_setfield(L, -2, "groups");
    lua_pushboolean(L, a->bias);
    lua_setfield(L, -2, "bias");
    break;
  case SIEVE_OP_BATCH_NORM:
    lua_pushnumber(L, a->eps);
    lua_setfield(L, -2, "eps");
    lua_pushnumber(L, a->momentum);
    lua_setfield(L, -2, "momentum");
    lua_pushboolean(L, a->affine);
    lua_setfield(L, -2, "affine");
    break;
  case SIEVE_OP_ACTIVATION:
    lua_pushstring(L, sieve_activation_name(a->activation));
    lua_setfield(L, -2, "activation");
    lua_pushnumber(L, a->alpha);
    lua_setfield(L, -2, "alpha");
    break;
  case SIEVE_OP_POOL:
    lua_pushstring(L, a->pool == SIEVE_POOL_AVG ? "avg" : "max");
    lua_setfield(L, -2, "pool");
    set_pair(L, "kernel", a->kernel);
    set_pair(L, "stride", a->stride);
    set_pair(L, "pad", a->pad);
    break;
  case SIEVE_OP_LINEAR:
    lua_pushinteger(L, a->out_channels);
    lua_setfield(L, -2, "out");
    lua_pushboolean(L, a->bias);
    lua_setfield(L, -2, "bias");
    break;
  case SIEVE_OP_CROP:
    set_pair(L, "size", a->kernel);
    set_pair(L, "offset", a->pad);
    break;
  default:
    break;
  }
  return 1;
}

static int
graph_dump(lua_State *L)
{
  g_autofree char *text = sieve_graph_dump(check_box(L, 1)->graph);
  lua_pushstring(L, text);
  return 1;
}

static int
graph_copy(lua_State *L)
{
  sieve__lua_push_graph(L, sieve_graph_copy(check_box(L, 1)->graph));
  return 1;
}

static int
graph_tostring(lua_State *L)
{
  GraphBox *box = luaL_checkudata(L, 1, SIEVE_LUA_GRAPH);
  if (box->graph == NULL)
    lua_pushstring(L, "sieve.graph (closed)");
  else if (!box->finished)
    lua_pushfstring(L, "sieve.graph '%s' (%d nodes, not finished)", sieve_graph_name(box->graph),
                    (int) sieve_graph_n_nodes(box->graph));
  else
    lua_pushfstring(L, "sieve.graph '%s' (%d nodes, params %I, flops %I)", sieve_graph_name(box->graph),
                    (int) sieve_graph_n_nodes(box->graph), (lua_Integer) sieve_graph_params(box->graph),
                    (lua_Integer) sieve_graph_macs(box->graph));
  return 1;
}

static int
graph_len(lua_State *L)
{
  lua_pushinteger(L, sieve_graph_n_nodes(check_box(L, 1)->graph));
  return 1;
}

/* Fields first (params, flops, macs, name, output, finished), then
 * the methods (the upvalue). */
static int
graph_index(lua_State *L)
{
  const char *key = lua_tostring(L, 2);
  if (key != NULL && lua_type(L, 2) == LUA_TSTRING) {
    if (strcmp(key, "params") == 0 || strcmp(key, "flops") == 0 || strcmp(key, "macs") == 0) {
      const SieveGraph *g = sieve__lua_check_graph(L, 1, TRUE);
      lua_pushinteger(L, (lua_Integer) (key[0] == 'p' ? sieve_graph_params(g) : sieve_graph_macs(g)));
      return 1;
    }
    if (strcmp(key, "name") == 0) {
      lua_pushstring(L, sieve_graph_name(check_box(L, 1)->graph));
      return 1;
    }
    if (strcmp(key, "finished") == 0) {
      lua_pushboolean(L, check_box(L, 1)->finished);
      return 1;
    }
    if (strcmp(key, "output") == 0) { /* (g:input is a builder) */
      guint n = sieve_graph_output(check_box(L, 1)->graph);
      if (n == SIEVE_NODE_INVALID)
        lua_pushnil(L);
      else
        lua_pushinteger(L, n);
      return 1;
    }
  }
  lua_pushvalue(L, 2);
  lua_gettable(L, lua_upvalueindex(1));
  return 1;
}

/* ---- registration ---------------------------------------------------------------------- */

static const luaL_Reg graph_methods[] = {
    {"input", graph_input},
    {"conv2d", graph_conv2d},
    {"batch_norm", graph_batch_norm},
    {"activation", graph_activation},
    {"pool", graph_pool},
    {"avg_pool", graph_avg_pool},
    {"max_pool", graph_max_pool},
    {"add", graph_add},
    {"concat", graph_concat},
    {"global_avg_pool", graph_global_avg_pool},
    {"linear", graph_linear},
    {"identity", graph_identity},
    {"zero", graph_zero},
    {"mul", graph_mul},
    {"crop", graph_crop},
    {"label", graph_label},
    {"finish", graph_finish},
    {"shape", graph_shape},
    {"node", graph_node},
    {"dump", graph_dump},
    {"copy", graph_copy},
    {"hash", graph_hash},
    {NULL, NULL},
};

void
sieve__lua_open_graph(lua_State *L, int sieve_idx)
{
  luaL_newmetatable(L, SIEVE_LUA_GRAPH);
  lua_newtable(L); /* methods */
  luaL_setfuncs(L, graph_methods, 0);
  for (int k = 0; k < SIEVE_N_ACTIVATIONS; k++) {
    lua_pushinteger(L, k);
    lua_pushcclosure(L, graph_named_activation, 1);
    lua_setfield(L, -2, sieve_activation_name(k));
  }
  lua_pushcclosure(L, graph_index, 1);
  lua_setfield(L, -2, "__index");
  lua_pushstring(L, SIEVE_LUA_GRAPH);
  lua_setfield(L, -2, "__name");
  lua_pushcfunction(L, graph_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, graph_gc);
  lua_setfield(L, -2, "__close");
  lua_pushcfunction(L, graph_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushcfunction(L, graph_len);
  lua_setfield(L, -2, "__len");
  lua_pop(L, 1);

  /* sieve.graph = {new = ..., activations = {...}} */
  lua_newtable(L);
  lua_pushcfunction(L, graph_new);
  lua_setfield(L, -2, "new");
  lua_createtable(L, SIEVE_N_ACTIVATIONS, 0);
  for (int k = 0; k < SIEVE_N_ACTIVATIONS; k++) {
    lua_pushstring(L, sieve_activation_name(k));
    lua_rawseti(L, -2, k + 1);
  }
  lua_setfield(L, -2, "activations");
  /* What every network whose output ignores its input hashes to (functional). */
  sieve__lua_push_hash(L, sieve_hash_degenerate());
  lua_setfield(L, -2, "degenerate_hash");
  lua_setfield(L, sieve_idx, "graph");
}
