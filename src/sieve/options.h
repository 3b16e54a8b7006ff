/* sieve: option tables, declared once per component and used for YAML
 * validation, `sieve plugins --describe` and the Lua constructors.
 *
 *   static const char *const kinds[] = {"aging", "plain", NULL};
 *   static const SieveOptionSpec evo_options[] = {
 *     SIEVE_OPTION_INT("population", "50", 2, 1e6, "individuals kept alive"),
 *     SIEVE_OPTION_CHOICE("kind", "aging", kinds, "which individual dies"),
 *     SIEVE_OPTION_FLOAT("mutation_rate", "1.0", 0, 1, "..."),
 *     SIEVE_OPTION_END,
 *   };
 *   ...
 *   gint64 pop = sieve_options_get_int(options, "population");
 *
 * Validation refuses unknown keys (suggesting the closest declared name),
 * wrong types and out-of-range values, each with the file:line:col of the
 * offending node.  Defaults are written as YAML text so they print as the
 * user would type them.
 */
#pragma once

#include <glib.h>
#include <sieve/abi.h>
#include <sieve/node.h>

G_BEGIN_DECLS

typedef enum {
  SIEVE_OPTION_TYPE_BOOL,
  SIEVE_OPTION_TYPE_INT,
  SIEVE_OPTION_TYPE_FLOAT,
  SIEVE_OPTION_TYPE_STRING,
  SIEVE_OPTION_TYPE_CHOICE,      /* a string from choices */
  SIEVE_OPTION_TYPE_PATH,        /* a string; relative paths resolve against the config's folder */
  SIEVE_OPTION_TYPE_STRING_LIST, /* a list of scalars (a single scalar is a list of one) */
  SIEVE_OPTION_TYPE_NODE,        /* any YAML value, handed over as a tree */
} SieveOptionType;

typedef enum {
  SIEVE_OPTION_REQUIRED = 1 << 0, /* no default: must be given */
  SIEVE_OPTION_HAS_MIN = 1 << 1,
  SIEVE_OPTION_HAS_MAX = 1 << 2,
} SieveOptionFlags;

typedef struct {
  const char *name;
  SieveOptionType type;
  const char *default_text;   /* YAML text of the default, NULL for none */
  double min, max;            /* inclusive, where flags say so (INT and FLOAT) */
  const char *const *choices; /* CHOICE: NULL-terminated */
  const char *help;           /* one line */
  guint flags;
  gpointer reserved[2];
} SieveOptionSpec;
SIEVE_ABI_SIZE(SieveOptionSpec, 80);

#define SIEVE_OPTION_BOOL(n, def, help) {(n), SIEVE_OPTION_TYPE_BOOL, (def), 0, 0, NULL, (help), 0, {NULL}}
#define SIEVE_OPTION_INT(n, def, lo, hi, help)                                                      \
  {(n), SIEVE_OPTION_TYPE_INT, (def), (lo), (hi), NULL, (help),                        \
   SIEVE_OPTION_HAS_MIN | SIEVE_OPTION_HAS_MAX | ((def) ? 0 : SIEVE_OPTION_REQUIRED), {NULL}}
#define SIEVE_OPTION_FLOAT(n, def, lo, hi, help)                                                    \
  {(n), SIEVE_OPTION_TYPE_FLOAT, (def), (lo), (hi), NULL, (help),                      \
   SIEVE_OPTION_HAS_MIN | SIEVE_OPTION_HAS_MAX | ((def) ? 0 : SIEVE_OPTION_REQUIRED), {NULL}}
#define SIEVE_OPTION_STRING(n, def, help) {(n), SIEVE_OPTION_TYPE_STRING, (def), 0, 0, NULL, (help), (def) ? 0 : SIEVE_OPTION_REQUIRED, {NULL}}
#define SIEVE_OPTION_CHOICE(n, def, ch, help) {(n), SIEVE_OPTION_TYPE_CHOICE, (def), 0, 0, (ch), (help), (def) ? 0 : SIEVE_OPTION_REQUIRED, {NULL}}
#define SIEVE_OPTION_PATH(n, def, help) {(n), SIEVE_OPTION_TYPE_PATH, (def), 0, 0, NULL, (help), (def) ? 0 : SIEVE_OPTION_REQUIRED, {NULL}}
#define SIEVE_OPTION_STRING_LIST(n, def, help) {(n), SIEVE_OPTION_TYPE_STRING_LIST, (def), 0, 0, NULL, (help), 0, {NULL}}
#define SIEVE_OPTION_NODE(n, help) {(n), SIEVE_OPTION_TYPE_NODE, NULL, 0, 0, NULL, (help), 0, {NULL}}
#define SIEVE_OPTION_END {NULL, 0, NULL, 0, 0, NULL, NULL, 0, {NULL}}

/* Validated option values of one component instance. */
typedef struct _SieveOptions SieveOptions;

/* Validate map (a SIEVE_NODE_MAP, or NULL for "all defaults") against spec.
 * Keys listed in reserved (NULL-terminated, may be NULL) belong to the
 * caller (e.g. "plugin") and are skipped.  base_dir resolves relative PATH
 * options (NULL: the current directory).  context names the section in
 * messages ("optimizer 'random'").  (transfer full) */
SIEVE_API SieveOptions *sieve_options_new(const SieveOptionSpec *spec, const SieveNode *map,
                                          const char *const *reserved, const char *base_dir,
                                          const char *context, GError **error);
SIEVE_API void sieve_options_free(SieveOptions *options);

/* Accessors: name must be declared in the spec with a matching type (a
 * mismatch is a programming error: g_critical and a zero value). */
SIEVE_API gboolean sieve_options_get_bool(const SieveOptions *options, const char *name);
SIEVE_API gint64 sieve_options_get_int(const SieveOptions *options, const char *name);
SIEVE_API double sieve_options_get_double(const SieveOptions *options, const char *name);
/* STRING, CHOICE and PATH (resolved, absolute). NULL when optional and unset. (transfer none) */
SIEVE_API const char *sieve_options_get_string(const SieveOptions *options, const char *name);
/* STRING_LIST; NULL-terminated, NULL when unset and no default. (transfer none) */
SIEVE_API const char *const *sieve_options_get_strv(const SieveOptions *options, const char *name);
/* NODE. (transfer none) (nullable) */
SIEVE_API const SieveNode *sieve_options_get_node(const SieveOptions *options, const char *name);
/* TRUE if the user wrote the option (not a default). */
SIEVE_API gboolean sieve_options_is_set(const SieveOptions *options, const char *name);
/* Where the option was written, or the section when it took its default. (transfer none) */
SIEVE_API const SieveNode *sieve_options_node(const SieveOptions *options, const char *name);
/* The table the options were validated against. (transfer none) */
SIEVE_API const SieveOptionSpec *sieve_options_spec(const SieveOptions *options);
/* A SIEVE_ERROR_CONFIG pointing at where option name was written. */
SIEVE_API void sieve_options_set_error(const SieveOptions *options, const char *name, GError **error,
                                       const char *format, ...) G_GNUC_PRINTF(4, 5);

/* Human text of a spec, one option per paragraph (for --describe). (transfer full) */
SIEVE_API char *sieve_option_spec_describe(const SieveOptionSpec *spec);
/* "integer", "float", "one of: a, b, c" ... (transfer full) */
SIEVE_API char *sieve_option_spec_expected(const SieveOptionSpec *option);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveOptions, sieve_options_free)

G_END_DECLS
