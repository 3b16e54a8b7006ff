/* Registers a fresh name, then one test-good already took: the loader must
 * refuse the whole plugin, the fresh name included. */
#include <math.h>
#include "common.h"

static const SieveComponentInfo fresh = {SIEVE_KIND_OPTIMIZER, "test-fresh", "would be fine alone", NULL, &test_class};
static const SieveComponentInfo taken = {SIEVE_KIND_OPTIMIZER, "test-good", "name already taken", NULL, &test_class};

static gboolean
init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &fresh, error) && sieve_registry_add(registry, &taken, error);
}

SIEVE_PLUGIN_DEFINE("test-duplicate", "1.0", "loader test: duplicate name", "MIT", init);
