/* sieve: zero-cost proxies, scores of an untrained network from one batch.
 *
 *   const char *names[] = {"synflow", "naswot"};
 *   double scores[2], ms[2];
 *   SieveProxyOptions o = {.batch = 64, .seed = 0};
 *   if (!sieve_proxy_compute(graph, names, 2, &o, scores, ms, error)) ...
 *
 * graph is a network ending in its logits (what a space builds).  Each
 * proxy follows its paper; the choices papers leave open (batch, batch-norm
 * mode, precision) are documented beside its code.  Proxies named together
 * share the forward and backward passes they have in common.  Larger is
 * better for every score as returned (a proxy whose paper ranks the other
 * way is negated and says so in its help).
 */
#pragma once

#include <glib.h>
#include <sieve/abi.h>
#include <sieve/graph.h>

G_BEGIN_DECLS

typedef struct {
  const char *name; /* "grad_norm", "snip", ... */
  const char *help; /* one line, with the paper */
  gboolean needs_data; /* uses the batch (FALSE: params, flops, synflow) */
} SieveProxyInfo;

typedef struct {
  guint batch;           /* examples; 0 = 64 */
  guint threads;         /* 0 = every core */
  guint64 seed;          /* initial weights, and the batch when inputs is NULL */
  const float *inputs;   /* batch x input shape, plain NCHW; NULL: seeded N(0,1) */
  const gint32 *labels;  /* batch class ids; NULL: seeded uniform over the classes */
  gpointer reserved[4];
} SieveProxyOptions;

SIEVE_API guint sieve_proxy_count(void);
/* (transfer none) i < sieve_proxy_count() */
SIEVE_API const SieveProxyInfo *sieve_proxy_info(guint i);
/* (transfer none) (nullable) */
SIEVE_API const SieveProxyInfo *sieve_proxy_lookup(const char *name);
/* Checks every name; an unknown one is an error listing the known ones. */
SIEVE_API gboolean sieve_proxy_check_names(const char *const *names, guint n, GError **error);

/* scores[i] (and times_ms[i] when times_ms is not NULL: the wall time
 * attributed to names[i]) for each of the n names.  A network whose output
 * does not depend on its input gets the documented value of each proxy
 * (never a NaN passed on silently). */
SIEVE_API gboolean sieve_proxy_compute(const SieveGraph *graph, const char *const *names, guint n,
                                       const SieveProxyOptions *options, double *scores, double *times_ms,
                                       GError **error);

/* Ensembles: rank aggregation.  scores: n_candidates x n_proxies, row-major;
 * weights: n_proxies (NULL = equal: the mean rank).  out[c]: the weighted
 * mean of candidate c's ranks (0 = worst, ties averaged), larger is better;
 * NaN scores rank lowest. */
SIEVE_API void sieve_proxy_rank_aggregate(const double *scores, guint n_candidates, guint n_proxies,
                                          const double *weights, double *out);

G_END_DECLS
