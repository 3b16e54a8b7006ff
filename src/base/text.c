/* sieve: numbers and JSON strings as sieve writes them (sieve/text.h). */
#include <math.h>

#include <sieve/text.h>

char *
sieve_text_format_double_buf(double value, char buf[SIEVE_TEXT_DOUBLE_SIZE])
{
  if (!isfinite(value)) {
    g_strlcpy(buf, isnan(value) ? "nan" : value > 0 ? "inf" : "-inf", SIEVE_TEXT_DOUBLE_SIZE);
    return buf;
  }
  /* 15 digits read back for most doubles and are far easier on the eye
   * than 17; 17 always read back (IEEE 754 binary64). */
  static const char *const formats[] = {"%.15g", "%.16g", "%.17g"};
  for (guint i = 0; i < G_N_ELEMENTS(formats); i++) {
    g_ascii_formatd(buf, SIEVE_TEXT_DOUBLE_SIZE, formats[i], value);
    if (g_ascii_strtod(buf, NULL) == value)
      break;
  }
  return buf;
}

char *
sieve_text_format_double(double value)
{
  char buf[SIEVE_TEXT_DOUBLE_SIZE];
  return g_strdup(sieve_text_format_double_buf(value, buf));
}

void
sieve_text_append_double(GString *out, double value)
{
  char buf[SIEVE_TEXT_DOUBLE_SIZE];
  g_string_append(out, sieve_text_format_double_buf(value, buf));
}

void
sieve_json_append_string(GString *out, const char *text)
{
  g_return_if_fail(out != NULL);
  if (text == NULL) {
    g_string_append(out, "null");
    return;
  }
  g_autofree char *valid = g_utf8_validate(text, -1, NULL) ? NULL : g_utf8_make_valid(text, -1);
  g_string_append_c(out, '"');
  for (const unsigned char *p = (const unsigned char *) (valid ? valid : text); *p; p++) {
    switch (*p) {
    case '"': g_string_append(out, "\\\""); break;
    case '\\': g_string_append(out, "\\\\"); break;
    case '\b': g_string_append(out, "\\b"); break;
    case '\f': g_string_append(out, "\\f"); break;
    case '\n': g_string_append(out, "\\n"); break;
    case '\r': g_string_append(out, "\\r"); break;
    case '\t': g_string_append(out, "\\t"); break;
    default:
      if (*p < 0x20 || *p == 0x7f)
        g_string_append_printf(out, "\\u%04x", *p);
      else
        g_string_append_c(out, (char) *p);
    }
  }
  g_string_append_c(out, '"');
}

void
sieve_json_append_double(GString *out, double value)
{
  g_return_if_fail(out != NULL);
  if (!isfinite(value)) {
    sieve_json_append_string(out, isnan(value) ? "nan" : value > 0 ? "inf" : "-inf");
    return;
  }
  sieve_text_append_double(out, value);
}
