/* A shared object that is not a sieve plugin. */
#include <gmodule.h>

G_MODULE_EXPORT int not_a_sieve_plugin(void);

G_MODULE_EXPORT int
not_a_sieve_plugin(void)
{
  return 42;
}
