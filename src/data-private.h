/* sieve: helpers shared by the data loaders (not installed). */
#pragma once

#include <glib.h>
#include <sieve/data.h>

/* The whole content of a file, inflated when it is gzip (told by its first
 * two bytes, not by its name).  Errors name the file. (transfer full) */
G_GNUC_INTERNAL GBytes *sieve__data_read_file(const char *path, GError **error);

/* Sets a SIEVE_ERROR whose message is "PATH: " + the formatted text. */
G_GNUC_INTERNAL void sieve__data_error(GError **error, SieveErrorCode code, const char *path, const char *format,
                                       ...) G_GNUC_PRINTF(4, 5);

/* pixel / 255 for every byte value: a table lookup is what keeps converting
 * 47 million Fashion-MNIST pixels in the tens of milliseconds. */
G_GNUC_INTERNAL const float *sieve__data_byte_scale(void);

/* The name of a file for a dataset's name: its base name. (transfer full) */
G_GNUC_INTERNAL char *sieve__data_name_from_path(const char *path);
