/* sieve: a study's identity in its store (shared by `sieve run` and the
 * Lua host's sieve.run).
 *
 *   if (!sieve_study_open(store, experiment, resume, &error)) ...
 */
#pragma once

#include <sieve/sieve.h>

#include "config.h"
#include "internal.h"

G_BEGIN_DECLS

/* Creates the study's metadata, or checks that the experiment is the one
 * already stored (without resume, a store holding a study is refused).
 * Nothing stored is changed when the check fails. */
SIEVE_INTERNAL_API gboolean sieve_study_open(SieveStore *store, const SieveExperiment *experiment, gboolean resume,
                                             GError **error);

G_END_DECLS
