/* sieve: numbers and JSON as sieve writes them everywhere (stores, exports,
 * genotype texts, proxy lines, command templates).
 *
 *   g_autofree char *text = sieve_text_format_double(0.1);    // "0.1"
 *   GString *line = g_string_new("{");
 *   sieve_json_append_string(line, "arch");                    // "arch"
 *   g_string_append_c(line, ':');
 *   sieve_json_append_double(line, score);                     // 812.4, or "-inf"
 *
 * One formatter, so that the same double reads the same in every file sieve
 * writes, and reads back to the same double.  JSON is written by these
 * helpers rather than json-glib's generator, which prints doubles with 17
 * digits (0.1 as 0.10000000000000001).
 */
#pragma once

#include <glib.h>
#include <sieve/abi.h>

G_BEGIN_DECLS

/* Room for any text sieve_text_format_double_buf writes, with its NUL. */
#define SIEVE_TEXT_DOUBLE_SIZE 32

/* The shortest of %.15g, %.16g and %.17g that reads back to the same
 * double, with '.' as the decimal point whatever the locale ("0.1",
 * "100000", "1e+20", "0.30000000000000004"); "nan", "inf", "-inf" for the
 * non-finite values.  Returns buf. */
SIEVE_API char *sieve_text_format_double_buf(double value, char buf[SIEVE_TEXT_DOUBLE_SIZE]);
/* The same. (transfer full) */
SIEVE_API char *sieve_text_format_double(double value);
/* Appends value as sieve_text_format_double writes it. */
SIEVE_API void sieve_text_append_double(GString *out, double value);

/* Appends text as a JSON string: quoted, with '"', '\', and control
 * characters escaped; bytes that are not UTF-8 become U+FFFD (JSON text is
 * UTF-8).  NULL appends null. */
SIEVE_API void sieve_json_append_string(GString *out, const char *text);
/* Appends a finite value as sieve_text_format_double writes it, and a
 * non-finite one as the string "nan", "inf" or "-inf" (JSON has no
 * infinities; sieve's readers take these strings back). */
SIEVE_API void sieve_json_append_double(GString *out, double value);

/* json-glib reads an integer literal into a gint64 and wraps one beyond it
 * without a word (99999999999999999999 reads as -1, 9223372036854775808 as
 * its negative).  A copy of the JSON text json (length bytes, or up to its
 * NUL when -1) where each integer literal outside the 64-bit range, strings
 * skipped, is written as a real number (its digits and ".0"), which
 * json-glib reads as the nearest double; NULL when there is none.  A reader
 * that needs an integer sees a double there and refuses it.
 * (transfer full) (nullable) */
SIEVE_API char *sieve_json_widen_integers(const char *json, gssize length);

/* For a parser's messages: the 1-based number of the character at in text,
 * counting UTF-8 characters (bytes where text is not valid UTF-8 up to at). */
SIEVE_API guint sieve_text_char_number(const char *text, const char *at);
/* For a parser's messages: what stands at p, quoted whole: the run of
 * ASCII letters and digits, characters of extra (nullable) and non-ASCII
 * characters there, at most max characters of it; else the one character
 * there ('ö', not half of it; a byte that is not UTF-8 as \xNN); "the end
 * of the text" at its end.  (transfer full) */
SIEVE_API char *sieve_text_quote_at(const char *p, const char *extra, guint max);

G_END_DECLS
