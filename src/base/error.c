/* sieve: error domain and version. */
#include "sieve-config.h"

#include <sieve/abi.h>

G_DEFINE_QUARK(sieve-error-quark, sieve_error)

const char *
sieve_version_string(void)
{
  return SIEVE_VERSION;
}
