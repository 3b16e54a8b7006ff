/* sieve: what the proxy files share inside libsieve. */
#pragma once

#include <sieve/graph.h>
#include <sieve/runtime.h>

#include "internal.h"

G_BEGIN_DECLS

/* SynFlow (Tanaka et al. 2020; as a proxy, Abdelfattah et al. 2021) in
 * double precision: every parameter of runtime (its float values, as
 * initialised) made absolute, batch norm bypassed, an all-ones input of
 * one example; score = sum over parameters of |theta| * dR/d|theta| with
 * R = sum of the outputs.  threads: 0 = every core. */
SIEVE_INTERNAL_API gboolean sieve_proxy_synflow(const SieveGraph *graph, SieveRuntime *runtime, guint threads,
                                                double *score, GError **error);

G_END_DECLS
