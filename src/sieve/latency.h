/* sieve: inference latency of a network measured on this machine, and of
 * one operation of it (the entries of a ProxylessNAS/FBNet latency table).
 *
 *   SieveLatencyOptions o;
 *   sieve_latency_options_init(&o);            // batch 1, 1 thread, as a device runs it
 *   SieveLatency l;
 *   if (!sieve_latency_measure(graph, &o, &l, error)) ...
 *   printf("%.3f ms (IQR %.3f) over %u runs\n", l.median_ms, l.iqr_ms, l.runs);
 *
 * The protocol (README, "Hardware-aware search"): the graph is compiled
 * once for inference (SIEVE_MODE_EVAL, no backward, the options' batch and
 * threads); `warmup` forwards are run and dropped (first-touch page faults,
 * oneDNN's kernel generation, caches); then forwards are timed one by one
 * with CLOCK_MONOTONIC (g_get_monotonic_time), in rounds of min_runs, until
 * the distribution-free 95% confidence interval of the median (order
 * statistics n/2 +- 0.98 sqrt(n)) is narrower than rel_ci times the median,
 * or max_runs or max_seconds is reached.  What is timed: one
 * sieve_runtime_forward (the copy of a plain NCHW input into the network's
 * own layout included, reading the output not).  The median and the
 * interquartile range are reported, so that a run slowed by a preemption
 * moves neither; beside them the median CPU time of the forward
 * (CLOCK_THREAD_CPUTIME_ID), what a loaded machine does not inflate.
 *
 * An operation (sieve_latency_measure_node) is timed as a graph of its own:
 * input -> 1x1 convolution (so that the operation reads its input in the
 * layout a network hands over, not a graph input's plain NCHW) -> the node,
 * minus the same graph without the node, the two timed in turn and each
 * forward after the core's private caches are flushed (its weights cold,
 * its input hot, as inside a network); the network's input node is the
 * bare graph input -> identity (the call and input copy that a whole
 * network pays once).  So the
 * sum over a network's live nodes estimates its latency without running it
 * (engine: the latency table in the store).
 */
#pragma once

#include <glib.h>
#include <sieve/abi.h>
#include <sieve/graph.h>
#include <sieve/options.h>

G_BEGIN_DECLS

typedef struct {
  guint batch;        /* examples per forward (1) */
  guint threads;      /* threads of a forward (1); 0 = every core */
  guint warmup;       /* forwards run and dropped first (10) */
  guint min_runs;     /* timed forwards per round, and at least (20) */
  guint max_runs;     /* at most (1000) */
  double rel_ci;      /* stop when the median's 95% CI is narrower than this fraction of it (0.02) */
  double max_seconds; /* stop timing after this long, whatever the CI (2) */
  gpointer reserved[4];
} SieveLatencyOptions;
SIEVE_ABI_SIZE(SieveLatencyOptions, 72);

typedef struct {
  double median_ms;
  double iqr_ms;          /* the 75th minus the 25th percentile */
  double ci_low_ms, ci_high_ms; /* the median's 95% confidence interval */
  guint runs;             /* forwards timed */
  guint64 memory_bytes;   /* what the compiled runtime holds: activations and parameters (its peak) */
  /* The median CPU time of the calling thread per forward
   * (CLOCK_THREAD_CPUTIME_ID): with 1 thread, the work of a forward, which
   * other processes on a shared machine do not inflate as they do the
   * wall-clock median (with more threads, the calling thread's share). */
  double cpu_median_ms;
  gpointer reserved[1];
} SieveLatency;
SIEVE_ABI_SIZE(SieveLatency, 64);

/* The defaults above. */
SIEVE_API void sieve_latency_options_init(SieveLatencyOptions *options);

/* The option table rows of the settings above (batch, threads, warmup,
 * min_runs, max_runs, rel_ci, max_seconds), shared by the `latency`
 * evaluator and pipeline stage; read with sieve_latency_options_read. */
#define SIEVE_LATENCY_OPTIONS                                                                                  \
  SIEVE_OPTION_INT("batch", "1", 1, 65536, "examples per timed forward (1: as a device serves one request)"), \
  SIEVE_OPTION_INT("threads", "1", 0, 1024, "threads of a forward (0: every core)"),                        \
  SIEVE_OPTION_INT("warmup", "10", 0, 100000, "forwards run and dropped before timing"),                     \
  SIEVE_OPTION_INT("min_runs", "20", 3, 1000000, "timed forwards per round, and at least"),                  \
  SIEVE_OPTION_INT("max_runs", "1000", 3, 1000000, "timed forwards at most"),                                \
  SIEVE_OPTION_FLOAT("rel_ci", "0.02", 0, 1,                                                                 \
                     "stop once the median's 95% confidence interval is narrower than this fraction of it"), \
  SIEVE_OPTION_FLOAT("max_seconds", "2", 0, 1e6, "stop timing one network after this long")

/* From options validated against a table holding SIEVE_LATENCY_OPTIONS. */
SIEVE_API void sieve_latency_options_read(const SieveOptions *options, SieveLatencyOptions *out);

/* Measures graph (finished; a softmax_ce loss at its end is left out) as
 * the protocol above says. */
SIEVE_API gboolean sieve_latency_measure(const SieveGraph *graph, const SieveLatencyOptions *options,
                                         SieveLatency *out, GError **error);

/* Measures graphs[0..n) (finished, one input shape; borrowed) together, for a
 * ranking that a machine whose speed drifts from one minute to the next
 * cannot reorder: all are compiled first, then timed in rounds, one timed
 * forward of each network per round (after an untimed one of the same
 * network, so that each finds the caches as sieve_latency_measure's
 * back-to-back forwards leave them), each round starting one network
 * further on.  A slowdown then lands on every network alike instead of on
 * those measured during it.  Stops once every median's interval is within
 * rel_ci, after max_runs rounds, or after n * max_seconds (each network's
 * budget, untimed forwards included: about half the timed forwards it
 * would get alone).  out[i] (the caller's array of n) is graphs[i]'s.
 * Holds all n compiled networks at once. */
SIEVE_API gboolean sieve_latency_measure_together(const SieveGraph *const *graphs, guint n,
                                                  const SieveLatencyOptions *options, SieveLatency *out,
                                                  GError **error);

/* The latency table's key of node of graph: its kind, every attribute it
 * uses and its input shapes, e.g. "conv2d 16x32x32 out=16 k=3x3 s=1x1 p=1x1
 * d=1x1 g=1".  Two nodes with equal keys run the same kernel on the same
 * sizes. (transfer full) */
SIEVE_API char *sieve_latency_node_key(const SieveGraph *graph, guint node);
/* Whether the runtime runs no kernel for node: an identity, a zero, a
 * loss, a sum of at most one non-zero term, a second activation of a
 * tensor already activated the same way (the runtime shares the first),
 * a pool, crop or activation with f(0) = 0 of a zero (itself a zero).
 * Such a node adds 0 to a prediction and is not measured. */
SIEVE_API gboolean sieve_latency_node_is_free(const SieveGraph *graph, guint node);
/* The key of every node a prediction sums over (live and not free), NULL
 * for the others: one per node, in node order (one pass over the graph
 * instead of a liveness walk per node). (transfer full) */
SIEVE_API GPtrArray *sieve_latency_node_keys(const SieveGraph *graph);
/* Measures node of graph alone (see the header comment); out->median_ms
 * may be slightly negative where the operation is lost in the noise. */
SIEVE_API gboolean sieve_latency_measure_node(const SieveGraph *graph, guint node, const SieveLatencyOptions *options,
                                              SieveLatency *out, GError **error);
/* Measures node nodes[i] of graphs[i] for every i < n as
 * sieve_latency_measure_node does, but together: every operation's pair of
 * graphs compiled first (all 2n held at once), then all timed in rounds
 * (one forward of each per round), so that a machine whose speed drifts
 * over the minutes the whole takes slows every entry alike.  max_seconds
 * is each operation's budget.  An input node is the bare call, timed on
 * its own before the rounds; a free node (sieve_latency_node_is_free) is
 * not measured: its out is all zeros, runs 0.  graphs and nodes are
 * borrowed; out[i] (the caller's array of n) is nodes[i]'s. */
SIEVE_API gboolean sieve_latency_measure_nodes(const SieveGraph *const *graphs, const guint *nodes, guint n,
                                               const SieveLatencyOptions *options, SieveLatency *out,
                                               GError **error);
/* What the latency of this machine depends on besides the network, one
 * "what=value" per line: host, cpu (the model /proc/cpuinfo names), the
 * kernel library and its version, the revision of sieve's own kernels,
 * threads, batch. (transfer full) */
SIEVE_API char *sieve_latency_machine(const SieveLatencyOptions *options);

G_END_DECLS
