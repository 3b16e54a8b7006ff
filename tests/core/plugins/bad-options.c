/* An optimizer whose option table holds a default out of its own range:
 * the loader must refuse the plugin at load, naming the file, the
 * component and the option, not fail later when a study uses it. */
#include <math.h>
#include "common.h"

static const SieveOptionSpec options[] = {
    SIEVE_OPTION_INT("population", "0", 2, 100, "individuals kept alive"),
    SIEVE_OPTION_END,
};
static const SieveComponentInfo info = {SIEVE_KIND_OPTIMIZER, "test-bad-default", "default out of range", options,
                                        &test_class};

static gboolean
init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &info, error);
}

SIEVE_PLUGIN_DEFINE("test-bad-options", "1.0", "loader test: a bad option table", "MIT", init);
