/* Registers the name of a bundled optimizer, 'random': loaded after the
 * program's own plugins, it must be refused and leave 'random' the bundled
 * one. */
#include <math.h>
#include "../common.h"

static const SieveComponentInfo shadow = {SIEVE_KIND_OPTIMIZER, "random", "a user's plugin taking a bundled name",
                                          NULL, &test_class};

static gboolean
init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &shadow, error);
}

SIEVE_PLUGIN_DEFINE("test-shadow", "1.0", "loader test: a bundled component's name", "MIT", init);
