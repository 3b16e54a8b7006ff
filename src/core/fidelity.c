/* sieve: a fidelity declared in a config, {name: epochs, min: 1, max: 81,
 * integer: true} (sieve_fidelity_read in sieve/candidate.h), validated as
 * options are. */
#include <math.h>

#include <sieve/candidate.h>
#include <sieve/options.h>

static const SieveOptionSpec fidelity_spec[] = {
    SIEVE_OPTION_STRING("name", NULL, "what the number means, e.g. epochs"),
    /* Finite: optimizers compute rungs as max eta^-k and evaluators run at them. */
    SIEVE_OPTION_FLOAT("min", NULL, 0, G_MAXDOUBLE, "the cheapest fidelity (> 0)"),
    SIEVE_OPTION_FLOAT("max", NULL, 0, G_MAXDOUBLE, "the full fidelity"),
    SIEVE_OPTION_BOOL("integer", "false", "only whole values make sense"),
    SIEVE_OPTION_END,
};

gboolean
sieve_fidelity_read(const SieveNode *node, SieveFidelity *out, GError **error)
{
  g_return_val_if_fail(node != NULL && out != NULL, FALSE);
  if (sieve_node_kind(node) != SIEVE_NODE_MAP) {
    sieve_node_set_error(error, node, "a fidelity is a map {name: epochs, min: 1, max: 81, integer: true}");
    return FALSE;
  }
  g_autoptr(SieveOptions) options = sieve_options_new(fidelity_spec, node, NULL, NULL, "fidelity", error);
  if (options == NULL)
    return FALSE;
  double min = sieve_options_get_double(options, "min"), max = sieve_options_get_double(options, "max");
  gboolean integer = sieve_options_get_bool(options, "integer");
  if (!(min > 0)) {
    sieve_options_set_error(options, "min", error, "the fidelity's min must be > 0, got %g", min);
    return FALSE;
  }
  if (max < min) {
    sieve_options_set_error(options, "max", error, "the fidelity's max (%g) is below its min (%g)", max, min);
    return FALSE;
  }
  if (integer && (min != floor(min) || max != floor(max))) {
    sieve_options_set_error(options, "min", error, "an integer fidelity needs whole min and max, got %g and %g",
                            min, max);
    return FALSE;
  }
  *out = (SieveFidelity){.name = g_strdup(sieve_options_get_string(options, "name")),
                         .min = min, .max = max, .integer = integer};
  return TRUE;
}
