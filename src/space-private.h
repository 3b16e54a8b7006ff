/* sieve: helpers shared between the library's files (not installed). */
#pragma once

#include <glib.h>
#include <sieve/hash.h>
#include <sieve/space.h>

#include "internal.h"

/* Shortest decimal text that reads back as exactly value ("0.1", "1e-05"). (transfer full) */
char *sieve__format_double(double value);
/* Append s to out as a JSON string literal with quotes. */
void sieve__json_append_string(GString *out, const char *s);
/* Append a number as JSON (non-finite values as the strings "nan", "inf", "-inf"). */
void sieve__json_append_number(GString *out, double value);

/* The generic "name=value,..." text form, for spaces whose own format
 * defers to it (Lua spaces without a format function). (transfer full) */
char *sieve__space_generic_format(const SieveSpace *space, const SieveGenotype *genotype);
SieveGenotype *sieve__space_generic_parse(const SieveSpace *space, const char *text, GError **error);

/* Replaces the class of a space from inside its create(): the builtin `lua`
 * space is whatever the script it runs defines (format, build, probe scale).
 * klass must outlive the space and share its create and destroy. */
void sieve__space_set_class(SieveSpace *space, const SieveSpaceClass *klass);

/* The space at the probe scale its class declares (SieveSpaceClass.probe_options
 * over the options the user wrote), made on first use and kept; the space
 * itself when it declares none.  Thread-safe.  (transfer none) */
SIEVE_INTERNAL_API const SieveSpace *sieve__space_probe(const SieveSpace *space, GError **error);
/* A memo of functional hashes by the structural hash of the probe network
 * (the functional hash is a function of the canonical form, so this is
 * exact).  Thread-safe; bounded (later entries are not kept). */
gboolean sieve__space_memo_get(const SieveSpace *space, const SieveHash *key, SieveHash *value);
void sieve__space_memo_put(const SieveSpace *space, const SieveHash *key, const SieveHash *value);
