/* A plugin whose init dies of SIGSEGV, for test_bounds.py: sieve must name
 * this file before the signal takes it. */
#include <signal.h>
#include <sieve/plugin.h>

static gboolean
crash_init(SieveRegistry *registry, GError **error)
{
  raise(SIGSEGV);
  return TRUE;
}

SIEVE_PLUGIN_DEFINE("crash-init", "0.1.0", "dies in its init", "MIT", crash_init);
