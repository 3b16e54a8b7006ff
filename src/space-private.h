/* sieve: helpers shared between the library's files (not installed). */
#pragma once

#include <glib.h>

/* Shortest decimal text that reads back as exactly value ("0.1", "1e-05"). (transfer full) */
char *sieve__format_double(double value);
/* Append s to out as a JSON string literal with quotes. */
void sieve__json_append_string(GString *out, const char *s);
/* Append a number as JSON (non-finite values as the strings "nan", "inf", "-inf"). */
void sieve__json_append_number(GString *out, double value);
