/* sieve: numbers and JSON strings as sieve writes them (sieve/text.h). */
#include <math.h>
#include <string.h>

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
      if (*p < 0x20 || *p == 0x7f) {
        g_string_append_printf(out, "\\u%04x", *p);
      } else if (*p >= 0xc2) {
        /* The C1 controls, the line and paragraph separators and the two
         * noncharacters are valid JSON raw, but YAML (which reads the model
         * files' metadata back) folds or refuses them: escaped.  The text is
         * valid UTF-8 here. */
        gunichar u = g_utf8_get_char((const char *) p);
        int len = g_unichar_to_utf8(u, NULL);
        if ((u >= 0x80 && u <= 0x9f) || u == 0x2028 || u == 0x2029 || u == 0xfffe || u == 0xffff)
          g_string_append_printf(out, "\\u%04x", u);
        else
          g_string_append_len(out, (const char *) p, len);
        p += len - 1;
      } else {
        g_string_append_c(out, (char) *p);
      }
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

guint
sieve_text_char_number(const char *text, const char *at)
{
  g_return_val_if_fail(text != NULL && at >= text, 0);
  if (g_utf8_validate(text, at - text, NULL))
    return (guint) g_utf8_pointer_to_offset(text, at) + 1;
  return (guint) (at - text) + 1;
}

/* The length in bytes of the valid UTF-8 character at p, 0 if none. */
static gsize
utf8_char_length(const char *p)
{
  gunichar c = g_utf8_get_char_validated(p, -1);
  if (c == (gunichar) -1 || c == (gunichar) -2 || c == 0)
    return 0;
  return (gsize) (g_utf8_next_char(p) - p);
}

char *
sieve_text_quote_at(const char *p, const char *extra, guint max)
{
  g_return_val_if_fail(p != NULL, NULL);
  if (*p == '\0')
    return g_strdup("the end of the text");
  const char *end = p;
  for (guint n = 0; n < max && *end != '\0'; n++) {
    gsize len = 0;
    if (g_ascii_isalnum(*end) || (extra != NULL && !((guchar) *end & 0x80) && strchr(extra, *end) != NULL))
      len = 1;
    else if ((guchar) *end & 0x80)
      len = utf8_char_length(end);
    if (len == 0)
      break;
    end += len;
  }
  if (end > p)
    return g_strdup_printf("'%.*s'", (int) (end - p), p);
  gsize len = utf8_char_length(p);
  if (len > 0)
    return g_strdup_printf("'%.*s'", (int) len, p);
  return g_strdup_printf("\\x%02X", (guchar) *p);
}
