/* sieve model: the files a model file's space read, in its metadata.
 *
 * A model file carries its space's options with every path absolute
 * (sieve__space_options_json), and in "space_files" a JSON object of what
 * those files held when it was written ({"/abs/recipe.yaml": "parameters:
 * ..."}): it builds the same space from any folder, and after the config's
 * folder is moved or deleted. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <glib/gstdio.h>

#include "cli/cli-private.h"
#include "core/core-private.h"
#include "lua/lua-private.h"

/* Files that are not UTF-8 text, or larger than this, are named by their
 * path only. */
#define EMBED_MAX (1u << 20)

/* (transfer full) path's bytes when it is a regular file of at most max
 * bytes, else NULL: a device or a FIFO (which a model file's space_files
 * may name) is never read, it could block for ever or fill memory. */
static char *
read_regular(const char *path, gsize max, gsize *size)
{
  GStatBuf st;
  char *text = NULL;
  if (g_stat(path, &st) != 0 || !S_ISREG(st.st_mode) || (guint64)st.st_size > max ||
      !g_file_get_contents(path, &text, size, NULL))
    return NULL;
  if (*size > max)
    g_clear_pointer(&text, g_free); /* it grew since */
  return text;
}

static void
describe_files(SieveWeights *w, const SieveSpace *space)
{
  g_autoptr(GPtrArray) paths = g_ptr_array_new_with_free_func(g_free);
  sieve__space_add_files(space, paths);
  sieve_lua_space_add_modules(space, paths);
  g_autoptr(GString) out = g_string_new("{");
  for (guint i = 0; i < paths->len; i++) {
    gsize size = 0;
    g_autofree char *text = read_regular(paths->pdata[i], EMBED_MAX, &size);
    if (text == NULL || strlen(text) != size || !g_utf8_validate(text, (gssize)size, NULL))
      continue;
    if (out->len > 1)
      g_string_append_c(out, ',');
    sieve_json_append_string(out, paths->pdata[i]);
    g_string_append_c(out, ':');
    sieve_json_append_string(out, text);
  }
  g_string_append_c(out, '}');
  /* None: no key, not the one a loaded file (--weights) carried. */
  sieve_weights_set_meta(w, "space_files", out->len > 2 ? out->str : NULL);
}

gboolean
sieve_cli_model_describe_space(SieveWeights *w, const SieveSpace *space, GError **error)
{
  g_autofree char *options = sieve__space_options_json(space, error);
  if (options == NULL)
    return FALSE;
  sieve_weights_set_meta(w, "space", sieve_space_get_name(space));
  sieve_weights_set_meta(w, "space_options", options);
  describe_files(w, space);
  return TRUE;
}

void
sieve_cli_restored_clear(SieveCliRestored *r)
{
  GHashTableIter it;
  gpointer copy;
  if (r->copies != NULL)
    g_hash_table_iter_init(&it, r->copies);
  while (r->copies != NULL && g_hash_table_iter_next(&it, NULL, &copy)) {
    g_unlink(copy);
    /* Its folders up to r->dir, those left empty. */
    g_autofree char *parent = g_path_get_dirname(copy);
    while (g_str_has_prefix(parent, r->dir) && strlen(parent) > strlen(r->dir) && g_rmdir(parent) == 0) {
      char *up = g_path_get_dirname(parent);
      g_free(parent);
      parent = up;
    }
  }
  if (r->dir != NULL)
    g_rmdir(r->dir);
  g_clear_pointer(&r->copies, g_hash_table_unref);
  g_clear_pointer(&r->dir, g_free);
}

/* Writes text to r->dir + path, its folders made as needed. */
static gboolean
write_copy(SieveCliRestored *r, const char *path, const char *text, GError **error)
{
  char *copy = g_build_filename(r->dir, path, NULL);
  g_hash_table_insert(r->copies, g_strdup(path), copy);
  g_autofree char *folder = g_path_get_dirname(copy);
  if (g_mkdir_with_parents(folder, 0700) != 0) {
    int saved = errno;
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_IO, "%s: cannot write the copy of %s: %s", folder, path,
                g_strerror(saved));
    return FALSE;
  }
  if (!g_file_set_contents(copy, text, -1, error)) {
    g_prefix_error(error, "cannot write the copy of %s: ", path);
    return FALSE;
  }
  return TRUE;
}

gboolean
sieve_cli_restore_files(SieveCliRestored *r, const char *json, const char *origin, GError **error)
{
  r->copies = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  /* A file twice under one key (files an older sieve wrote when two parts
   * read it) is read once. */
  g_autoptr(SieveNode) files = sieve__node_parse_string_repeats(json, origin, error);
  if (files == NULL)
    return FALSE;
  if (sieve_node_kind(files) != SIEVE_NODE_MAP) {
    sieve_node_set_error(error, files, "expected a JSON object of files and their texts");
    return FALSE;
  }
  gboolean all_here = TRUE;
  for (guint i = 0; i < sieve_node_size(files); i++) {
    const char *path = sieve_node_text(sieve_node_nth_key(files, i));
    const SieveNode *value = sieve_node_nth(files, i);
    /* sieve writes absolute paths of files, with no "." or ".." in them
     * (their copies go to the same path under a private folder): anything
     * else (a relative path would also match option values that are no
     * path) is refused. */
    g_autofree char *clean = g_canonicalize_filename(path, G_DIR_SEPARATOR_S);
    if (!g_path_is_absolute(path) || !g_str_equal(clean, path) || g_str_equal(path, G_DIR_SEPARATOR_S)) {
      g_autofree char *quoted = g_strescape(path, NULL);
      sieve_node_set_error(error, sieve_node_nth_key(files, i), "expected an absolute file path as the key, got \"%s\"",
                           quoted);
      return FALSE;
    }
    if (sieve_node_kind(value) != SIEVE_NODE_SCALAR || !sieve_node_is_quoted(value)) {
      sieve_node_set_error(error, value, "expected the text of %s as a string", path);
      return FALSE;
    }
    const char *text = sieve_node_text(value);
    gsize size = 0;
    g_autofree char *here = read_regular(path, strlen(text), &size);
    all_here = all_here && here != NULL && size == strlen(text) && memcmp(here, text, size) == 0;
  }
  /* Every file unchanged: read in place.  Else all of them from the copies,
   * each at its path under a private folder, so that a Lua script's copy
   * finds the copies of the modules it required beside it (a script edited
   * here with its modules, or the other way round, never mixes the two). */
  if (all_here)
    return TRUE;
  /* The errors name the model file (origin) and its metadata key: a
   * folder of TMPDIR alone would not say what was being read. */
  if ((r->dir = g_dir_make_tmp("sieve-space-files-XXXXXX", error)) == NULL) {
    g_prefix_error(error, "%s: cannot make a private folder for the copies of its files: ", origin);
    return FALSE;
  }
  for (guint i = 0; i < sieve_node_size(files); i++)
    if (!g_hash_table_contains(r->copies, sieve_node_text(sieve_node_nth_key(files, i))) &&
        !write_copy(r, sieve_node_text(sieve_node_nth_key(files, i)), sieve_node_text(sieve_node_nth(files, i)), error)) {
      g_prefix_error(error, "%s: ", origin);
      return FALSE;
    }
  return TRUE;
}

/* Every path of node's tree that r copied, the copy's. */
static void
point_to_copies(SieveNode *node, GHashTable *copies)
{
  if (node->kind == SIEVE_NODE_SCALAR) {
    const char *copy = node->quoted ? g_hash_table_lookup(copies, node->text) : NULL;
    if (copy != NULL) {
      g_free(node->text);
      node->text = g_strdup(copy);
    }
    return;
  }
  for (guint i = 0; i < node->values->len; i++)
    point_to_copies(node->values->pdata[i], copies);
}

/* A Lua space (map: its options) whose script r copied: its lua.path
 * folders' copies (the modules carried from a folder below the script's
 * that lua.path names) before the folders themselves, and the script's own
 * folder, where it still is, after them, so that the modules that the file
 * does not carry are found from the copy as they are now. */
static void
add_script_folder(SieveNode *map, const SieveCliRestored *r)
{
  const SieveNode *script = sieve_node_lookup(map, "script");
  if (script == NULL || script->kind != SIEVE_NODE_SCALAR || !script->quoted ||
      !g_hash_table_contains(r->copies, script->text))
    return;
  SieveNode *lua = (SieveNode *)sieve_node_lookup(map, "lua");
  if (lua == NULL || sieve_node_is_null(lua)) {
    lua = sieve_node_new_map(map->origin, map->line, map->column);
    sieve_node_map_set(map, "lua", lua);
  }
  if (lua->kind != SIEVE_NODE_MAP)
    return; /* refused as it is by the option's check */
  SieveNode *path = (SieveNode *)sieve_node_lookup(lua, "path");
  if (path != NULL && path->kind == SIEVE_NODE_LIST) {
    SieveNode *list = sieve_node_new_list(path->origin, path->line, path->column);
    for (guint i = 0; i < path->values->len; i++) {
      SieveNode *item = path->values->pdata[i];
      g_autofree char *copy = item->kind == SIEVE_NODE_SCALAR && item->quoted && g_path_is_absolute(item->text)
                                  ? g_build_filename(r->dir, item->text, NULL)
                                  : NULL;
      if (copy != NULL && g_file_test(copy, G_FILE_TEST_IS_DIR))
        sieve_node_list_append(list, sieve_node_new_scalar(copy, TRUE, item->origin, item->line, item->column));
      sieve_node_list_append(list, sieve_node_ref(item));
    }
    sieve_node_map_set(lua, "path", list);
    path = list;
  }
  g_autofree char *dir = g_path_get_dirname(script->text);
  if (!g_file_test(dir, G_FILE_TEST_IS_DIR))
    return;
  if (path == NULL || sieve_node_is_null(path)) {
    path = sieve_node_new_list(map->origin, map->line, map->column);
    sieve_node_map_set(lua, "path", path);
  }
  if (path->kind == SIEVE_NODE_LIST)
    sieve_node_list_append(path, sieve_node_new_scalar(dir, TRUE, map->origin, map->line, map->column));
}

/* add_script_folder for node (options of a Lua space when lua) and every
 * part of it that names plugin lua. */
static void
add_script_folders(SieveNode *node, gboolean lua, const SieveCliRestored *r)
{
  if (node->kind == SIEVE_NODE_SCALAR)
    return;
  if (node->kind == SIEVE_NODE_MAP && lua)
    add_script_folder(node, r);
  for (guint i = 0; i < node->values->len; i++) {
    SieveNode *child = node->values->pdata[i];
    const SieveNode *plugin = child->kind == SIEVE_NODE_MAP ? sieve_node_lookup(child, "plugin") : NULL;
    add_script_folders(child, plugin != NULL && g_strcmp0(plugin->text, "lua") == 0, r);
  }
}

void
sieve_cli_restored_apply(const SieveCliRestored *r, SieveNode *options, gboolean lua)
{
  if (r == NULL || r->copies == NULL)
    return;
  add_script_folders(options, lua, r);
  point_to_copies(options, r->copies);
}

/* Whether path (which exists, a regular file of size 0) lies under /proc or
 * /sys, where such a file is generated as it is read and may never end
 * (/proc/self/pagemap): its size says nothing of what reading it costs. */
static gboolean
is_generated(const char *path)
{
  g_autofree char *real = realpath(path, NULL);
  return real != NULL && (g_str_has_prefix(real, "/proc/") || g_str_has_prefix(real, "/sys/"));
}

static gboolean
check_texts(const SieveNode *node, GError **error)
{
  if (node->kind == SIEVE_NODE_SCALAR) {
    GStatBuf st;
    /* Any text that names something, absolute or against the folder the
     * options resolve relative texts in (the current one): the option
     * tables of the parts are not known yet, and no other text names a
     * FIFO or a device. */
    if (!node->quoted || node->text == NULL || node->text[0] == '\0' || g_stat(node->text, &st) != 0)
      return TRUE;
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
      sieve_node_set_error(error, node,
                           "%s is not a regular file (a FIFO, a socket or a device): a model file's space reads "
                           "regular files only",
                           node->text);
      return FALSE;
    }
    if (S_ISREG(st.st_mode) && st.st_size == 0 && is_generated(node->text)) {
      sieve_node_set_error(error, node,
                           "%s is generated by the kernel as it is read (under /proc or /sys, of size 0): a model "
                           "file's space reads regular files only",
                           node->text);
      return FALSE;
    }
    return TRUE;
  }
  for (guint i = 0; i < node->values->len; i++)
    if (!check_texts(node->values->pdata[i], error))
      return FALSE;
  return TRUE;
}

gboolean
sieve_cli_model_check_paths(const SieveOptionSpec *spec, const SieveNode *options, GError **error)
{
  /* sieve writes every path option absolute (sieve__space_options_json):
   * a relative one came from someone else, and would name whatever lies
   * at that place from the folder the file is read in (a FIFO there, or
   * "../../dev/stdin", blocked for ever). */
  for (guint i = 0; spec != NULL && spec[i].name != NULL; i++) {
    const SieveNode *value = spec[i].type == SIEVE_OPTION_TYPE_PATH ? sieve_node_lookup(options, spec[i].name) : NULL;
    if (value != NULL && value->kind == SIEVE_NODE_SCALAR && value->text != NULL &&
        !sieve_node_is_null(value) && !g_path_is_absolute(value->text)) {
      sieve_node_set_error(error, value, "%s: expected an absolute path (sieve writes a model file's paths "
                           "absolute), got %s", spec[i].name, value->text);
      return FALSE;
    }
  }
  return check_texts(options, error);
}
