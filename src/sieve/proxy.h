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
#include <sieve/options.h>

G_BEGIN_DECLS

typedef struct {
  const char *name; /* "grad_norm", "snip", ... */
  const char *help; /* one line, with the paper */
  gboolean needs_data; /* uses the batch (FALSE: params, flops, synflow) */
} SieveProxyInfo;
SIEVE_ABI_SIZE(SieveProxyInfo, 24);

typedef struct {
  guint batch;           /* examples; 0 = 64 */
  guint threads;         /* 0 = every core */
  guint64 seed;          /* initial weights, and the batch when inputs is NULL */
  const float *inputs;   /* batch x input shape, plain NCHW; NULL: seeded N(0,1) */
  const gint32 *labels;  /* batch class ids; NULL: seeded uniform over the classes */
  /* Added in the reserved room (ABI 2.2): the runtime device every pass
   * runs on, as SieveRuntimeOptions.device ("cpu", "cuda", "auto"); NULL
   * means "cpu". */
  const char *device;
  gpointer reserved[3];
} SieveProxyOptions;
SIEVE_ABI_SIZE(SieveProxyOptions, 64);

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

/* ---- the batch ------------------------------------------------------------
 *
 * Proxies score every candidate on the same batch, so that scores compare:
 * seeded N(0,1) inputs (SieveProxyOptions.inputs NULL), or one of these.
 * The screen stage, the `proxy` evaluator and `sieve proxies` draw theirs
 * with sieve_proxy_batch_draw, so one seed gives one batch everywhere. */

typedef struct {
  guint n;            /* examples */
  guint classes;      /* classes of the dataset drawn from, or 1 + a labels file's largest id; 0 when unknown */
  SieveShape shape;   /* of one example */
  float *x;           /* n x shape, plain NCHW (owned) */
  gint32 *y;          /* n class ids; NULL when a batch file came without labels (owned) */
  char *source;       /* "dataset fashion-mnist", "X.npy": what messages name it by (owned) */
  gpointer reserved[4];
} SieveProxyBatch;
SIEVE_ABI_SIZE(SieveProxyBatch, 80);

/* n distinct examples of the training split of dataset (a name
 * sieve_dataset_open takes; data_dir may be NULL), drawn with a generator
 * seeded with seed (a partial Fisher-Yates shuffle of the indices) and
 * normalised per channel with the whole split's mean and deviation.
 * (transfer full) */
SIEVE_API SieveProxyBatch *sieve_proxy_batch_draw(const char *dataset, const char *data_dir, guint n, guint64 seed,
                                                  GError **error);
/* A batch from .npy files (numpy.save): inputs float32 or float64 of shape
 * (n, C, H, W); labels (may be NULL) integers >= 0 of shape (n,).
 * (transfer full) */
SIEVE_API SieveProxyBatch *sieve_proxy_batch_read(const char *inputs, const char *labels, GError **error);
SIEVE_API void sieve_proxy_batch_free(SieveProxyBatch *batch);
/* Whether graph (a network ending in its logits) takes the batch's
 * examples and has an output for each of its classes; the error names the
 * batch's source and what builds the network (builder, e.g. "space nb201"). */
SIEVE_API gboolean sieve_proxy_batch_check(const SieveProxyBatch *batch, const SieveGraph *graph,
                                           const char *builder, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveProxyBatch, sieve_proxy_batch_free)

/* ---- options ------------------------------------------------------------
 *
 * What every component that scores with proxies reads the same way. */

/* Option-table rows for a batch drawn from a dataset: `dataset` and
 * `data_dir`, both optional strings. */
#define SIEVE_PROXY_DATA_OPTIONS                                                                                 \
  {"dataset", SIEVE_OPTION_TYPE_STRING, NULL, 0, 0, NULL,                                                        \
   "take the batch from this dataset's training split (fashion-mnist, mnist, cifar10, csv:FILE ...): a seeded "  \
   "sample, normalised per channel, as `sieve proxies --dataset`; default: N(0,1) inputs and uniform labels",    \
   0, {NULL}},                                                                                                   \
  {"data_dir", SIEVE_OPTION_TYPE_STRING, NULL, 0, 0, NULL,                                                       \
   "where the dataset's files are (default: its usual place)", 0, {NULL}}

/* The option-table row `device`: the runtime device the proxies' passes
 * run on, cpu (default), cuda or auto (a GPU when one is present). */
#define SIEVE_PROXY_DEVICE_OPTION                                                                                \
  SIEVE_OPTION_CHOICE("device", "cpu", ((const char *const[]){"cpu", "cuda", "auto", NULL}),                    \
                      "runtime device of the proxies' passes: cpu (oneDNN), cuda (a GPU; without one scoring "  \
                      "fails with \"no CUDA device\") or auto (a GPU when one is present, else cpu)")

/* The `proxies` (a string list) and `weights` (a node) options of
 * options, as the screen stage and the proxy evaluator read them: at least
 * one proxy, none listed twice; weights, where written, one finite number
 * >= 0 per proxy, not all zero.  On success *names (NULL-terminated,
 * *n_names long) and *weights (*n_names values, NULL when not written:
 * equal) are (transfer full); on failure they are untouched.  Errors point
 * at the option as written.  Whether each name is a known proxy is
 * sieve_proxy_check_names's to say. */
SIEVE_API gboolean sieve_proxy_options_read(const SieveOptions *options, char ***names, guint *n_names,
                                            double **weights, GError **error);

G_END_DECLS
