/* sieve: what the proxy files share inside libsieve. */
#pragma once

#include <sieve/graph.h>
#include <sieve/runtime.h>

#include "internal.h"

G_BEGIN_DECLS

/* SynFlow (Tanaka et al. 2020; as a proxy, Abdelfattah et al. 2021) in
 * double precision: every parameter of runtime (its float values, as
 * initialised) made absolute, batch norm bypassed, an all-ones input of
 * one example; score = sum over the conv2d and linear weights of
 * |w| * dR/d|w| with R = sum of the outputs (biases enter R but are not
 * scored, as in the authors' code and the PyTorch peer).  graph: the
 * network runtime was compiled from (or that network with a loss appended,
 * whose input then counts as the output).  threads: 0 = every core.
 * A network whose output does not depend on its input scores 0. */
SIEVE_INTERNAL_API gboolean sieve_proxy_synflow(const SieveGraph *graph, SieveRuntime *runtime, guint threads,
                                                double *score, GError **error);

G_END_DECLS
