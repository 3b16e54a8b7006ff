#include <math.h>
#include "common.h"

static gboolean
init(SieveRegistry *registry, GError **error)
{
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PLUGIN, "licence server unreachable");
  return FALSE;
}

SIEVE_PLUGIN_DEFINE("test-init-fails", "1.0", "loader test: failing init", "MIT", init);
