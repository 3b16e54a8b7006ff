/* Hash values, their text form, and a candidate's hash from its space
 * (sieve/hash.h).  The hashes themselves: hash-structural.c and
 * hash-functional.c. */
#include <string.h>

#include "hash/hash-private.h"

const char *
sieve_hash_kind_name(SieveHashKind kind)
{
  switch (kind) {
  case SIEVE_HASH_STRUCTURAL:
    return "structural";
  case SIEVE_HASH_FUNCTIONAL:
    return "functional";
  }
  return "?";
}

gboolean
sieve_hash_kind_from_name(const char *name, SieveHashKind *out)
{
  g_return_val_if_fail(out != NULL, FALSE);
  if (g_strcmp0(name, "structural") == 0)
    *out = SIEVE_HASH_STRUCTURAL;
  else if (g_strcmp0(name, "functional") == 0)
    *out = SIEVE_HASH_FUNCTIONAL;
  else
    return FALSE;
  return TRUE;
}

void
sieve_hash_format(const SieveHash *hash, char *text)
{
  g_return_if_fail(hash != NULL && text != NULL);
  g_snprintf(text, SIEVE_HASH_TEXT_LEN, "%016" G_GINT64_MODIFIER "x%016" G_GINT64_MODIFIER "x", hash->hi, hash->lo);
}

gboolean
sieve_hash_parse(const char *text, SieveHash *out)
{
  g_return_val_if_fail(out != NULL, FALSE);
  if (text == NULL || strlen(text) != 32)
    return FALSE;
  guint64 half[2] = {0, 0};
  for (guint i = 0; i < 32; i++) {
    int d = g_ascii_xdigit_value(text[i]);
    if (d < 0)
      return FALSE;
    half[i / 16] = half[i / 16] << 4 | (guint64)d;
  }
  out->hi = half[0];
  out->lo = half[1];
  return TRUE;
}

gboolean
sieve_hash_equal(const SieveHash *a, const SieveHash *b)
{
  g_return_val_if_fail(a != NULL && b != NULL, FALSE);
  return a->hi == b->hi && a->lo == b->lo;
}

/* All zeros: easy to recognise in a listing, and a real 128-bit hash
 * reaches it with probability 2^-128. */
const SieveHash *
sieve_hash_degenerate(void)
{
  static const SieveHash degenerate = {0, 0};
  return &degenerate;
}
