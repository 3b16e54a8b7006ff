/* sieve: the base area: the node tree and YAML reader, option validation, results, rng, text helpers.
 * Not installed: not part of the plugin ABI. */
#pragma once

#include <glib.h>
#include <sieve/node.h>
#include <sieve/options.h>

G_BEGIN_DECLS

/* ==== exported internal API ==== */
/* sieve: the engine's own interface between libsieve and the `sieve`
 * command (and the tests).  These functions are exported from the shared
 * library so that the command can call them, but they are declared only in
 * headers that are not installed: they are not part of the plugin ABI and
 * may change between any two versions. */

#define SIEVE_INTERNAL_API __attribute__((visibility("default"))) extern

/* ==== output files ==== */
/* Write size bytes of data to path whole: a regular file (or a new one)
 * through a temporary file renamed over it, fsync'ed first when durable; a
 * device or a pipe that exists (/dev/null, a FIFO) written into, never
 * replaced.  Errors are SIEVE_ERROR_IO "PATH: cannot write: why". */
SIEVE_INTERNAL_API gboolean sieve__file_write(const char *path, const void *data, gsize size, gboolean durable,
                                              GError **error);
/* Whether path exists and is neither a regular file nor a folder (a device,
 * a pipe, a socket): written into, never replaced. */
SIEVE_INTERNAL_API gboolean sieve__file_is_special(const char *path);
/* Opens such a file for writing: a descriptor, or -1 and an error
 * "PATH: cannot write: why" (SIEVE_ERROR_IO). */
SIEVE_INTERNAL_API int sieve__file_open_in_place(const char *path, GError **error);

/* ==== options as JSON ==== */
/* Every option of a validated set, defaults included, as one JSON object in
 * the table's order: numbers and booleans as JSON's, strings, lists, and an
 * any-value option as its tree.  What a weights file carries to build its
 * network again (the cache key's text is engine's sieve_options_to_canonical,
 * which must not change).  (transfer full) */
SIEVE_INTERNAL_API char *sieve__options_to_json(const SieveOptions *options);
/* The folder options' relative paths resolved against, as sieve_options_new
 * was given it: an option tree holding more components (a composite
 * space's parts) resolves theirs against it too. (transfer none) (nullable) */
SIEVE_INTERNAL_API const char *sieve__options_get_base_dir(const SieveOptions *options);
/* The entry of spec (nullable) named name, or NULL. (transfer none) */
SIEVE_INTERNAL_API const SieveOptionSpec *sieve__option_spec_find(const SieveOptionSpec *spec, const char *name);
/* Checks a component's option table before the registry takes it: each
 * name valid (a letter, then letters, digits, '_', '-'), declared once and
 * not one of reserved (NULL-terminated, nullable); a known type; a range
 * whose minimum is not above its maximum; choices for a choice; a default
 * its own option accepts, and none on a required one.  The error names the
 * option and what is wrong (SIEVE_ERROR_PLUGIN). */
SIEVE_INTERNAL_API gboolean sieve__option_spec_check(const SieveOptionSpec *spec, const char *const *reserved,
                                                     GError **error);
/* Parses such an object into a map for sieve_options_new (a null is an
 * option left unset); also reads what sieve wrote before: a float option as
 * a quoted number, an any-value option as a string of YAML.  Errors name
 * origin. (transfer full) */
SIEVE_INTERNAL_API SieveNode *sieve__options_json_parse(const SieveOptionSpec *spec, const char *json,
                                                        const char *origin, GError **error);

/* ==== the inside of SieveNode ==== */
/* sieve: the inside of SieveNode, shared by node.c (the tree), node-yaml.c
 * (the parser) and options.c (validation).  Not installed. */

struct _SieveNode {
  gatomicrefcount ref_count;
  SieveNodeKind kind;
  char *origin; /* a GRefString: the many nodes of one file share it */
  guint line, column;
  char *text;      /* scalars */
  gboolean quoted; /* scalars: written quoted or as a block scalar: always a string */
  GPtrArray *keys;   /* maps: scalar nodes, parallel to values */
  GPtrArray *values; /* maps and lists */
};

/* Like sieve_node_new_scalar, but origin is already a GRefString (acquired here). */
G_GNUC_INTERNAL SieveNode *sieve__node_new(SieveNodeKind kind, const char *ref_origin, guint line,
                                           guint column);

/* A value given on the command line ("--set KEY=VALUE"'s VALUE) parsed as
 * a YAML flow value: the value itself is at line 0, column 0 (its origin
 * alone locates it: "--set a.b=x: ..."); in a one-line value the nodes
 * inside it and parse errors are at line 0 and a column of the value
 * ("--set a=[1, 2 (column 6 of the value): ..."); a value of several
 * lines has real lines and columns.  (transfer full) */
G_GNUC_INTERNAL SieveNode *sieve__node_parse_value(const char *text, const char *origin, GError **error);

/* sieve_node_parse_string, except that a map key written again with the
 * same scalar value (quoting included) is read once; again with another
 * value is an error at the second value.  For files an older sieve wrote
 * with repeated keys.  (transfer full) */
SIEVE_INTERNAL_API SieveNode *sieve__node_parse_string_repeats(const char *text, const char *origin, GError **error);

/* What sieve_node_where says for a node at origin, line, column.
 * (transfer full) */
G_GNUC_INTERNAL char *sieve__node_where_at(const char *origin, guint line, guint column);

/* Append key -> value without looking for an existing key (the parser has
 * checked).  Takes ownership of both. */
G_GNUC_INTERNAL void sieve__node_map_append(SieveNode *map, SieveNode *key, SieveNode *value);

/* Typed reads shared by sieve_node_get_* and option validation: NULL when
 * node reads as the type (and *out is set), else what was found instead, to
 * follow "got ": "'ten'", "a map", "'1.5' (a float)".  (transfer full) */
G_GNUC_INTERNAL char *sieve__node_read_bool(const SieveNode *node, gboolean *out);
G_GNUC_INTERNAL char *sieve__node_read_int(const SieveNode *node, gint64 *out);
G_GNUC_INTERNAL char *sieve__node_read_double(const SieveNode *node, double *out);
/* Any scalar but a plain null (when allow_null is FALSE). */
G_GNUC_INTERNAL char *sieve__node_read_string(const SieveNode *node, gboolean allow_null,
                                              const char **out);

/* "a map", "a list", "a scalar". (transfer none) */
G_GNUC_INTERNAL const char *sieve__node_kind_noun(SieveNodeKind kind);

G_END_DECLS
