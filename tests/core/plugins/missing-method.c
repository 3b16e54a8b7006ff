/* An optimizer class without tell(); init ignores the refusal on purpose to
 * show the loader refuses the plugin anyway. */
#include <math.h>
#include "common.h"

static const SieveOptimizerClass no_tell = {
    .create = test_create, .destroy = g_free, .ask = test_ask, .save = test_save, .load = test_load,
};
static const SieveComponentInfo info = {SIEVE_KIND_OPTIMIZER, "test-no-tell", "missing tell", NULL, &no_tell};

static gboolean
init(SieveRegistry *registry, GError **error)
{
  sieve_registry_add(registry, &info, NULL);
  return TRUE;
}

SIEVE_PLUGIN_DEFINE("test-missing-method", "1.0", "loader test: missing method", "MIT", init);
