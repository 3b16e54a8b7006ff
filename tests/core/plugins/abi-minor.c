/* Needs a newer minor than this sieve provides. */
#include <math.h>
#include "common.h"

static const SieveComponentInfo info = {SIEVE_KIND_OPTIMIZER, "test-abi-minor", "newer minor", NULL, &test_class};

static gboolean
init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &info, error);
}

G_MODULE_EXPORT const SievePluginDescriptor sieve_plugin_descriptor = {
    SIEVE_ABI_MAJOR, SIEVE_ABI_MINOR + 1, "test-abi-minor", "1.0", "loader test: newer minor", "MIT", init, {NULL}};
