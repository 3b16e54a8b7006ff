/* sieve: spaces written in Lua: the SieveSpaceClass whose create, format,
 * parse and build call the script's functions (C calling Lua).  Spaces
 * used from Lua are lua-bind-space.c.
 */
#include "lua/lua-private.h"
#include "core/core-private.h"

/* lua.path in the options the space keeps as written (what a model file
 * carries): the folders as resolved, absolute, so that the file reads them
 * from any working folder (it resolved "lib" against the reader's).  A
 * path written as one text ("path: lib") is one folder: written as the
 * list of it. */
static void
resolve_written_paths(SieveSpace *space, const SieveLuaHost *host)
{
  g_autoptr(SieveNode) written = sieve__space_get_written(space);
  SieveNode *lua = (SieveNode *) sieve_node_lookup(written, "lua");
  SieveNode *path = lua && sieve_node_kind(lua) == SIEVE_NODE_MAP ? (SieveNode *) sieve_node_lookup(lua, "path") : NULL;
  if (host == NULL || path == NULL || sieve_node_is_null(path) || host->settings.paths == NULL)
    return;
  gboolean listed = sieve_node_kind(path) == SIEVE_NODE_LIST;
  SieveNode *list = sieve_node_new_list(sieve_node_origin(path), sieve_node_line(path), sieve_node_column(path));
  for (guint i = 0; host->settings.paths[i]; i++) {
    const SieveNode *item = listed && i < sieve_node_size(path) ? sieve_node_nth(path, i) : path;
    sieve_node_list_append(list, sieve_node_new_scalar(host->settings.paths[i], TRUE, sieve_node_origin(item),
                                                       sieve_node_line(item), sieve_node_column(item)));
  }
  sieve_node_map_set(lua, "path", list);
  sieve__space_set_written(space, written);
}

static gpointer
space_create(SieveSpace *space, const SieveOptions *options, GError **error)
{
  SieveLuaInstance *inst = sieve__lua_any_instance_new(SIEVE_KIND_SPACE, space, options, NULL, error);
  /* The builtin `lua` space is whatever its script defines. */
  if (inst != NULL && sieve_options_spec(options) == sieve__lua_builtin_options) {
    sieve__space_set_class(space, &inst->def->builtin_klass);
    resolve_written_paths(space, inst->own_host);
  }
  return inst;
}

/* format cannot fail by its C signature; a Lua error is reported and the
 * generic text stands in (and the round trip through parse will then fail
 * loudly at the next resume rather than silently). */
static char *
space_format(gpointer instance, const SieveSpace *space, const SieveGenotype *genotype)
{
  SieveLuaInstance *inst = instance;
  if (inst == NULL || !inst->def->has_format)
    return sieve__space_generic_format(space, genotype);
  GError *thread_error = NULL;
  if (!sieve__lua_instance_on_host_thread(inst, "format", &thread_error)) {
    g_warning("%s", thread_error->message);
    g_error_free(thread_error);
    return sieve__space_generic_format(space, genotype);
  }
  lua_State *L = inst->host->L;
  int top = lua_gettop(L);
  sieve__lua_instance_push_method(inst, "format");
  lua_getfield(L, -1, "space");
  sieve__lua_push_genotype(L, -1, sieve_genotype_copy(genotype));
  lua_remove(L, -2);
  GError *error = NULL;
  if (sieve__lua_instance_call(inst, "format", 1, 1, &error) && lua_type(L, -1) == LUA_TSTRING) {
    char *text = g_strdup(lua_tostring(L, -1));
    lua_settop(L, top);
    return text;
  }
  if (error != NULL)
    g_warning("%s", error->message);
  else {
    g_autofree char *prefix = sieve__lua_instance_prefix(inst, "format");
    g_warning("%smust return a string, got a %s (the generic text stands in)", prefix, luaL_typename(L, -1));
  }
  g_clear_error(&error);
  lua_settop(L, top);
  return sieve__space_generic_format(space, genotype);
}

static SieveGenotype *
space_parse(gpointer instance, const SieveSpace *space, const char *text, GError **error)
{
  SieveLuaInstance *inst = instance;
  if (inst == NULL || !inst->def->has_format)
    return sieve__space_generic_parse(space, text, error);
  if (!sieve__lua_instance_on_host_thread(inst, "parse", error))
    return NULL;
  lua_State *L = inst->host->L;
  int top = lua_gettop(L);
  sieve__lua_instance_push_method(inst, "parse");
  lua_pushstring(L, text);
  if (!sieve__lua_instance_call(inst, "parse", 1, 2, error))
    return NULL;
  if (lua_isnil(L, -2)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "%s",
                lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "parse() returned nil");
    lua_settop(L, top);
    return NULL;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, inst->self_ref);
  lua_getfield(L, -1, "space");
  SieveGenotype *g = sieve__lua_to_genotype(L, top + 1, lua_gettop(L), error);
  lua_settop(L, top);
  return g;
}

/* build(self, genotype) must return a finished sieve.graph; the engine gets
 * a copy, so the script may keep its own (a cache, say). */
static SieveGraph *
space_build(gpointer instance, const SieveSpace *space, const SieveGenotype *genotype, GError **error)
{
  SieveLuaInstance *inst = instance;
  if (!sieve__lua_instance_on_host_thread(inst, "build", error))
    return NULL;
  lua_State *L = inst->host->L;
  int top = lua_gettop(L);
  sieve__lua_instance_push_method(inst, "build");
  lua_getfield(L, -1, "space");
  sieve__lua_push_genotype(L, -1, sieve_genotype_copy(genotype));
  lua_remove(L, -2);
  if (!sieve__lua_instance_call(inst, "build", 1, 1, error))
    return NULL;
  gboolean finished = FALSE;
  const SieveGraph *graph = sieve__lua_to_graph(L, -1, &finished);
  if (graph == NULL || !finished) {
    if (graph != NULL)
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH,
                  "space '%s', build(): returned graph '%s', which is not finished (end with g:finish(output))",
                  inst->def->name, sieve_graph_name(graph));
    else
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH, "space '%s', build(): must return a sieve.graph, got %s",
                  inst->def->name, luaL_typename(L, -1));
    lua_settop(L, top);
    return NULL;
  }
  SieveGraph *copy = sieve_graph_copy(graph);
  lua_settop(L, top);
  return copy;
}

/* What the builtin `lua` space is until its script has run (create() then
 * sets the class of the script's definition). */
const SieveSpaceClass sieve__lua_impl_space_class = {
    .create = space_create,
    .destroy = sieve__lua_instance_destroy,
};

void
sieve__lua_impl_space_class_init(SieveLuaDef *def)
{
  /* The class says what exists: sieve_space_can_build() and the generic
   * text form follow from it. */
  def->klass = (SieveSpaceClass){
      .create = space_create,
      .destroy = sieve__lua_instance_destroy,
      .format = def->has_format ? space_format : NULL,
      .parse = def->has_format ? space_parse : NULL,
      .build = def->has_build ? space_build : NULL,
      .probe_options = (const char *const *) def->probe,
  };
  /* Through the builtin `lua` space the script's options are the
   * builtin's `options` map: the same overrides, one level down. */
  def->builtin_klass = def->klass;
  def->builtin_klass.probe_options = (const char *const *) def->builtin_probe;
}

/* The modules of one builtin `lua` space's host under its script's folder. */
static void
add_host_modules(const SieveSpace *space, GPtrArray *paths)
{
  const SieveLuaInstance *inst = sieve_space_get_instance(space);
  const SieveLuaHost *host = inst ? (inst->own_host ? inst->own_host : inst->host) : NULL;
  if (host == NULL || host->main_chunk == NULL || host->required == NULL)
    return;
  g_autofree char *dir = g_path_get_dirname(host->main_chunk);
  g_autofree char *canonical = g_canonicalize_filename(dir, NULL);
  g_autofree char *prefix = g_str_has_suffix(canonical, G_DIR_SEPARATOR_S)
                                ? g_strdup(canonical)
                                : g_strconcat(canonical, G_DIR_SEPARATOR_S, NULL);
  for (guint i = 0; i < host->required->len; i++) {
    const char *path = host->required->pdata[i];
    g_autofree char *clean = g_canonicalize_filename(path, NULL);
    if (g_str_has_prefix(clean, prefix) && !g_ptr_array_find_with_equal_func(paths, clean, g_str_equal, NULL))
      g_ptr_array_add(paths, g_steal_pointer(&clean));
  }
}

void
sieve_lua_space_add_modules(const SieveSpace *space, GPtrArray *paths)
{
  g_return_if_fail(space != NULL && paths != NULL);
  /* The builtin space's name is `lua`, and its instance a SieveLuaInstance
   * with a host of its own (sieve__lua_builtin_instance_new). */
  if (g_strcmp0(sieve_space_get_name(space), "lua") == 0)
    add_host_modules(space, paths);
  for (guint k = 0; sieve__space_part(space, k) != NULL; k++)
    sieve_lua_space_add_modules(sieve__space_part(space, k), paths);
}
