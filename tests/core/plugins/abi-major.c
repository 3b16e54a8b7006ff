/* Built as if against a future sieve with another ABI major. */
#include <math.h>
#include "common.h"

static const SieveComponentInfo info = {SIEVE_KIND_OPTIMIZER, "test-abi-major", "wrong ABI", NULL, &test_class};

static gboolean
init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &info, error);
}

G_MODULE_EXPORT const SievePluginDescriptor sieve_plugin_descriptor = {
    SIEVE_ABI_MAJOR + 1, 0, "test-abi-major", "1.0", "loader test: wrong major", "MIT", init, {NULL}};
