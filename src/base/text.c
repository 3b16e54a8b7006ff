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

/* Whether the integer literal [p, end) ('-' and digits) fits a gint64. */
static gboolean
integer_fits(const char *p, const char *end)
{
  gsize n = (gsize) (end - p);
  if (n > 24) /* past 20 digits whatever the zeros: JSON has no leading ones */
    return FALSE;
  char buf[32];
  memcpy(buf, p, n);
  buf[n] = '\0';
  return g_ascii_string_to_signed(buf, 10, G_MININT64, G_MAXINT64, NULL, NULL);
}

char *
sieve_json_widen_integers(const char *json, gssize length)
{
  g_return_val_if_fail(json != NULL, NULL);
  const char *end = json + (length < 0 ? (gssize) strlen(json) : length);
  GString *out = NULL;
  const char *copied = json; /* what is before this is in out already */
  gboolean in_string = FALSE;
  for (const char *p = json; p < end;) {
    if (in_string) {
      if (*p == '\\' && p + 1 < end)
        p++;
      else if (*p == '"')
        in_string = FALSE;
      p++;
      continue;
    }
    if (*p == '"') {
      in_string = TRUE;
      p++;
      continue;
    }
    gboolean starts = (*p == '-' || g_ascii_isdigit(*p)) &&
                      (p == json || !(g_ascii_isalnum(p[-1]) || p[-1] == '_' || p[-1] == '.'));
    if (!starts) {
      p++;
      continue;
    }
    /* The whole number token: -?digits(.digits)?([eE][+-]?digits)?, so
     * that an exponent's digits are not taken for an integer. */
    const char *start = p, *q = p + (*p == '-');
    while (q < end && g_ascii_isdigit(*q))
      q++;
    const char *digits_end = q;
    gboolean real = FALSE;
    if (q < end && *q == '.') {
      real = TRUE;
      for (q++; q < end && g_ascii_isdigit(*q); q++)
        ;
    }
    if (q < end && (*q == 'e' || *q == 'E')) {
      real = TRUE;
      q++;
      if (q < end && (*q == '+' || *q == '-'))
        q++;
      while (q < end && g_ascii_isdigit(*q))
        q++;
    }
    if (!real && digits_end > start + (*start == '-') && !integer_fits(start, digits_end)) {
      if (out == NULL)
        out = g_string_sized_new((gsize) (end - json) + 16);
      g_string_append_len(out, copied, digits_end - copied);
      g_string_append(out, ".0");
      copied = digits_end;
    }
    p = q > p ? q : p + 1;
  }
  if (out == NULL)
    return NULL;
  g_string_append_len(out, copied, end - copied);
  return g_string_free(out, FALSE);
}
