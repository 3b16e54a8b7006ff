/* sieve: the numeric options of the commands, read from their text.
 *
 * GOption's own G_OPTION_ARG_INT and _DOUBLE leave a command no way to
 * tell a value given from the default it started with, and _DOUBLE takes
 * "nan" and "inf": `sieve train --batch 0` trained with 128 and `sieve lua
 * --seconds nan` ran without a limit.  Read as text instead, an option is
 * either not given (NULL: the default stays) or checked here, and a value
 * out of range is an error naming the option and what it accepts. */
#include <math.h>

#include "cli/cli-private.h"

gboolean
sieve_cli_parse_int(const char *flag, const char *text, gint64 min, gint64 max, gint64 *value, GError **error)
{
  if (text == NULL)
    return TRUE;
  gint64 v = 0;
  if (g_ascii_string_to_signed(text, 10, min, max, &v, NULL)) {
    *value = v;
    return TRUE;
  }
  /* G_MAXINT and G_MAXINT64 say "no bound of its own"; any other is one. */
  if (max == G_MAXINT || max == G_MAXINT64)
    g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                "%s %s: expected a whole number of at least %" G_GINT64_FORMAT, flag, text, min);
  else
    g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                "%s %s: expected a whole number from %" G_GINT64_FORMAT " to %" G_GINT64_FORMAT, flag, text, min, max);
  return FALSE;
}

gboolean
sieve_cli_parse_double(const char *flag, const char *text, double min, gboolean above_min, double max, double *value,
                       GError **error)
{
  if (text == NULL)
    return TRUE;
  char *end = NULL;
  double v = g_ascii_strtod(text, &end);
  if (end != text && *end == '\0' && isfinite(v) && (above_min ? v > min : v >= min) && v <= max) {
    *value = v;
    return TRUE;
  }
  char low[G_ASCII_DTOSTR_BUF_SIZE], high[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_dtostr(low, sizeof low, min);
  g_ascii_dtostr(high, sizeof high, max);
  g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "%s %s: expected a finite number %s %s%s%s", flag, text,
              above_min ? "above" : "of at least", low, isfinite(max) ? " and at most " : "", isfinite(max) ? high : "");
  return FALSE;
}
