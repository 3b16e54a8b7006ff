/* sieve: configuration trees that remember where each value was written.
 *
 *   g_autoptr(GError) error = NULL;
 *   g_autoptr(SieveNode) root = sieve_node_parse_file("exp.yaml", &error);
 *   SieveNode *budget = sieve_node_lookup(root, "budget");
 *   if (budget && !sieve_node_get_int(sieve_node_lookup(budget, "evaluations"), &n, &error))
 *     ... // error->message: "exp.yaml:7:16: expected an integer, got 'ten'"
 *
 * A YAML document (libyaml) becomes a tree of scalars, maps (ordered, keys
 * are scalar nodes with their own location) and lists.  Every node carries
 * its origin ("exp.yaml", "--set #2", a Lua chunk...) and 1-based line and
 * column, and every error about a value names them.  Scalars keep their text
 * and whether they were quoted, so "1" stays a string and 1 an integer.
 * Lua tables and --set values are turned into the same trees, so validation
 * (see options.h) exists once.
 */
#pragma once

#include <glib.h>
#include <sieve/abi.h>

G_BEGIN_DECLS

typedef enum {
  SIEVE_NODE_SCALAR,
  SIEVE_NODE_MAP,
  SIEVE_NODE_LIST,
} SieveNodeKind;

typedef struct _SieveNode SieveNode;

/* Parse a YAML file / text holding one document.  An empty document gives an
 * empty map.  Anchors and aliases are refused (configs are plain data).
 * (transfer full) */
SIEVE_API SieveNode *sieve_node_parse_file(const char *path, GError **error);
SIEVE_API SieveNode *sieve_node_parse_string(const char *text, gssize len, const char *origin,
                                             GError **error);

/* Constructors, for --set, Lua tables and tests.  (transfer full) */
SIEVE_API SieveNode *sieve_node_new_scalar(const char *text, gboolean quoted, const char *origin,
                                           guint line, guint column);
SIEVE_API SieveNode *sieve_node_new_map(const char *origin, guint line, guint column);
SIEVE_API SieveNode *sieve_node_new_list(const char *origin, guint line, guint column);
/* Appends to a map; replaces the value if the key exists.  Takes ownership of value. */
SIEVE_API void sieve_node_map_set(SieveNode *map, const char *key, SieveNode *value);
/* Appends to a list.  Takes ownership of value. */
SIEVE_API void sieve_node_list_append(SieveNode *list, SieveNode *value);
/* Removes a key from a map; TRUE if it was there. */
SIEVE_API gboolean sieve_node_map_remove(SieveNode *map, const char *key);

SIEVE_API SieveNode *sieve_node_ref(SieveNode *node);
SIEVE_API void sieve_node_unref(SieveNode *node);
/* Deep copy. (transfer full) */
SIEVE_API SieveNode *sieve_node_copy(const SieveNode *node);

SIEVE_API SieveNodeKind sieve_node_kind(const SieveNode *node);
/* Where the node was written. (transfer none) */
SIEVE_API const char *sieve_node_origin(const SieveNode *node);
SIEVE_API guint sieve_node_line(const SieveNode *node);
SIEVE_API guint sieve_node_column(const SieveNode *node);
/* "origin:line:col"; "origin:line" for a node made at column 0 (Lua gives
 * a line, no column); origin alone for a node made at line 0, column 0 (a
 * value given as a command-line flag: "--lr 0.5"); "origin (column C of
 * the value)" at line 0, column C (inside a one-line --set value).
 * (transfer full) */
SIEVE_API char *sieve_node_where(const SieveNode *node);

/* Scalars. (transfer none) */
SIEVE_API const char *sieve_node_text(const SieveNode *node);
SIEVE_API gboolean sieve_node_is_quoted(const SieveNode *node);
/* TRUE for a plain null, ~ or empty scalar. */
SIEVE_API gboolean sieve_node_is_null(const SieveNode *node);

/* Maps and lists: number of entries; for maps the i-th key (a scalar node)
 * and value, in written order.  (transfer none) */
SIEVE_API guint sieve_node_size(const SieveNode *node);
SIEVE_API SieveNode *sieve_node_nth(const SieveNode *node, guint i);
SIEVE_API SieveNode *sieve_node_nth_key(const SieveNode *map, guint i);
/* (transfer none) (nullable) */
SIEVE_API SieveNode *sieve_node_lookup(const SieveNode *map, const char *key);

/* Typed reads of a scalar (YAML 1.2 core schema: true/false, integers with
 * optional sign and 0x, floats incl. 1e-3, .inf, .nan).  A quoted scalar is
 * never a number or bool.  Errors name the node's location and what was
 * expected. */
SIEVE_API gboolean sieve_node_get_bool(const SieveNode *node, gboolean *out, GError **error);
SIEVE_API gboolean sieve_node_get_int(const SieveNode *node, gint64 *out, GError **error);
/* Integers are accepted as floats. */
SIEVE_API gboolean sieve_node_get_double(const SieveNode *node, double *out, GError **error);
/* Any scalar. (transfer none) */
SIEVE_API const char *sieve_node_get_string(const SieveNode *node, GError **error);

/* Set a GError SIEVE_ERROR_CONFIG whose message is "origin:line:col: " + the
 * formatted text. */
SIEVE_API void sieve_node_set_error(GError **error, const SieveNode *node, const char *format, ...)
    G_GNUC_PRINTF(3, 4);

/* Override the value at a dotted path ("optimizer.seed", "budget.evaluations",
 * "objective.1.metric": a list's items by 0-based index), creating maps on
 * the way; value_text is parsed as a YAML flow value ("3", "[a, b]",
 * "{x: 1}") located by origin alone ("--set a.x=3: ..."), what is inside a
 * one-line flow map or list and a parse error by origin and a column of
 * the value ("--set a=[1, 2 (column 6 of the value): ...").  A path through
 * a scalar, or an index a list does not have, is an error and changes
 * nothing. */
SIEVE_API gboolean sieve_node_set_path(SieveNode *root, const char *path, const char *value_text,
                                       const char *origin, GError **error);

/* Canonical YAML text of the tree (block style, keys in written order,
 * scalars quoted where needed), used to store and compare configs.
 * (transfer full) */
SIEVE_API char *sieve_node_to_yaml(const SieveNode *node);

/* Edit distance (Levenshtein plus adjacent swaps, "optimal string
 * alignment"), used for "did you mean" suggestions. */
SIEVE_API guint sieve_edit_distance(const char *a, const char *b);
/* The candidate closest to word if it is close enough to suggest, else NULL.
 * candidates is NULL-terminated. (transfer none) (nullable) */
SIEVE_API const char *sieve_suggest(const char *word, const char *const *candidates);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveNode, sieve_node_unref)

G_END_DECLS
