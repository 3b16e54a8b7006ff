#include <math.h>
#include "common.h"

static const SieveComponentInfo info = {SIEVE_KIND_OPTIMIZER, "test-good", "a valid test optimizer", NULL, &test_class};

static gboolean
init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &info, error);
}

SIEVE_PLUGIN_DEFINE("test-good", "1.0", "loader test: valid", "MIT", init);
