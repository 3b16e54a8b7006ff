/* sieve: CSV files, read one record at a time (the training datasets of
 * sieve_dataset_load_csv and the tabular evaluator's tables both read
 * theirs with this).
 *
 *   g_autoptr(SieveCsvReader) csv = sieve_csv_reader_new("table.csv", error);
 *   if (csv == NULL)
 *     return FALSE;                                   // missing, unreadable
 *   if (!sieve_csv_reader_next(csv, error))           // the header row
 *     ...;                                            // *error unset: nothing in the file
 *   while (sieve_csv_reader_next(csv, error))         // each data row
 *     for (guint i = 0; i < sieve_csv_reader_n_fields(csv); i++)
 *       use(sieve_csv_reader_field(csv, i, NULL));
 *   if (*error != NULL) ...                           // "table.csv:7:12: ..."
 *
 * The rules: RFC 4180 with two allowances for files written by hand.
 *  - The first record is the header; every later record must have as many
 *    fields as it, or next() fails naming the row's line and the header's
 *    count.
 *  - Fields are separated by ','.  A field in '"' quotes may hold commas,
 *    line breaks (kept as they are in the file) and quotes, each written "".
 *    A '"' inside an unquoted field is an error.
 *  - Records end with LF or CRLF; the last one may end with the file.  In a
 *    file with no LF at all, each CR ends a line (classic Mac OS exports).
 *  - Allowance 1: spaces and tabs around a field are not part of it
 *    (` 6.4 , "a, b" ` reads as `6.4` and `a, b`); write a field in quotes
 *    to keep spaces inside it.  RFC 4180 would keep them; no file sieve
 *    reads means them, and a number or a genotype text with a stray space
 *    would not parse.
 *  - Allowance 2: a line holding only spaces (or nothing) is no record; it
 *    still counts for line numbers.  Files often end with one.
 *  - A UTF-8 byte-order mark at the start is skipped; a UTF-16 or UTF-32
 *    one is an error that names the encoding (the text is read as UTF-8).
 *  - A record has at most 1,048,576 (2^20) fields; more is an error at the
 *    first field over.
 *
 * Every error of the reader is a SIEVE_ERROR_PARSE whose message reads
 * `path:line:col: what was wrong, what was expected` (line and col counted
 * from 1, col in bytes); sieve_csv_reader_set_error() writes the caller's
 * own errors about a field (not a number, unknown label) the same way.
 */
#pragma once

#include <glib.h>
#include <sieve/abi.h>

G_BEGIN_DECLS

typedef struct _SieveCsvReader SieveCsvReader;

/* A reader over the file at path, read whole (gzip or not, told by its
 * first two bytes).  NULL + an error naming the file when it is missing
 * (SIEVE_ERROR_NOT_FOUND), unreadable (SIEVE_ERROR_IO) or bad gzip
 * (SIEVE_ERROR_PARSE). (transfer full) */
SIEVE_API SieveCsvReader *sieve_csv_reader_new(const char *path, GError **error);
/* A reader over a copy of text (length bytes, or up to its NUL when length
 * is -1); name stands for the path in messages. (transfer full) */
SIEVE_API SieveCsvReader *sieve_csv_reader_new_from_data(const char *name, const char *text, gssize length);
SIEVE_API void sieve_csv_reader_free(SieveCsvReader *reader);

/* Reads the next record: TRUE when there is one, FALSE at the end of the
 * file (*error unset) or on a syntax error (*error set, the reader is spent
 * and later calls return FALSE). */
SIEVE_API gboolean sieve_csv_reader_next(SieveCsvReader *reader, GError **error);
/* Fields in the current record (0 before the first next()). */
SIEVE_API guint sieve_csv_reader_n_fields(const SieveCsvReader *reader);
/* Field index of the current record, unquoted and trimmed, NUL-terminated;
 * its length in bytes into *length when length is not NULL. (transfer none):
 * the text stays valid until the next call to next() or free(). */
SIEVE_API const char *sieve_csv_reader_field(const SieveCsvReader *reader, guint index, gsize *length);
/* The line the current record starts on. */
SIEVE_API guint sieve_csv_reader_get_line(const SieveCsvReader *reader);
/* Sets a SIEVE_ERROR_PARSE "path:line:col: " + the formatted text, where
 * line:col is the first character of field index of the current record
 * (its opening quote when quoted). */
SIEVE_API void sieve_csv_reader_set_error(const SieveCsvReader *reader, guint index, GError **error,
                                          const char *format, ...) G_GNUC_PRINTF(4, 5);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveCsvReader, sieve_csv_reader_free)

G_END_DECLS
