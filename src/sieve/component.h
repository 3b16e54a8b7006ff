/* sieve: components (spaces, optimizers, evaluators) as the registry holds them.
 *
 * A component is what a plugin registers: a kind, a name, a one-line
 * summary, an option table and a class (the const struct of function
 * pointers for its kind).  The registry owns lookup; a SieveComponent also
 * remembers which plugin file it came from.
 */
#pragma once

#include <glib.h>
#include <sieve/abi.h>
#include <sieve/options.h>

G_BEGIN_DECLS

typedef enum {
  SIEVE_KIND_SPACE,
  SIEVE_KIND_OPTIMIZER,
  SIEVE_KIND_EVALUATOR,
} SieveComponentKind;

/* "space", "optimizer", "evaluator" (transfer none) */
SIEVE_API const char *sieve_component_kind_to_string(SieveComponentKind kind);

typedef struct {
  SieveComponentKind kind;
  const char *name;               /* unique within its kind, [a-z0-9_-]+ */
  const char *summary;            /* one line */
  const SieveOptionSpec *options; /* terminated by SIEVE_OPTION_END; may be NULL */
  gconstpointer klass;            /* const SieveSpaceClass / SieveOptimizerClass / SieveEvaluatorClass * */
  /* A section that validates and creates, YAML flow with paths relative to
   * the source tree: "{plugin: hpo, file: search_spaces/branin.yaml}";
   * NULL: {plugin: NAME} is one (ABI 2.2).  `sieve plugins --describe`
   * shows it. */
  const char *example;
  gpointer reserved[3];
} SieveComponentInfo;
SIEVE_ABI_SIZE(SieveComponentInfo, 72);

typedef struct _SieveRegistry SieveRegistry;
typedef struct _SieveComponent SieveComponent;

/* (transfer none) */
SIEVE_API const SieveComponentInfo *sieve_component_get_info(const SieveComponent *component);
SIEVE_API const char *sieve_component_get_name(const SieveComponent *component);
SIEVE_API SieveComponentKind sieve_component_get_kind(const SieveComponent *component);
/* The plugin file, its descriptor name, version and licence. (transfer none) */
SIEVE_API const char *sieve_component_get_path(const SieveComponent *component);
SIEVE_API const char *sieve_component_get_plugin_name(const SieveComponent *component);
SIEVE_API const char *sieve_component_get_plugin_version(const SieveComponent *component);
SIEVE_API const char *sieve_component_get_plugin_license(const SieveComponent *component);

G_END_DECLS
