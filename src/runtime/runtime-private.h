/* sieve: the runtime area's private header: what a backend implements.
 * runtime.c checks arguments and dispatches; a backend sees only valid
 * calls.  Backends:
 * cpu/ (oneDNN; cpu/cpu-private.h maps its files).  Nothing device-specific
 * leaves a backend's files. */
#pragma once

#include "sieve-config.h"

#include "base/base-private.h"

#include <sieve/rng.h>
#include <sieve/latency.h>
#include <sieve/runtime.h>

typedef struct {
  const char *name;
  /* (transfer full) backend state; NULL + error. */
  gpointer (*compile)(const SieveGraph *graph, const SieveRuntimeOptions *options, GError **error);
  void (*destroy)(gpointer impl);
  const char *(*describe)(gpointer impl);
  gboolean (*forward)(gpointer impl, const float *x, const gint32 *labels, SieveMode mode, GError **error);
  double (*loss)(gpointer impl);
  gboolean (*read)(gpointer impl, guint node, float *out, GError **error);
  /* input_only: skip what only parameter gradients need. */
  gboolean (*backward)(gpointer impl, const float *output_grad, gboolean input_only, GError **error);
  gboolean (*read_input_grad)(gpointer impl, float *out, GError **error);
  guint (*n_params)(gpointer impl);
  const SieveParamInfo *(*param_info)(gpointer impl, guint i);
  gboolean (*get_param)(gpointer impl, guint i, float *out, GError **error);
  gboolean (*set_param)(gpointer impl, guint i, const float *values, GError **error);
  gboolean (*get_grad)(gpointer impl, guint i, float *out, GError **error);
  gboolean (*sgd_step)(gpointer impl, const SieveSgd *sgd, GError **error);
  guint64 (*memory_bytes)(gpointer impl);
  /* Added for the proxies: node gradients and batch norm running statistics. */
  gboolean (*read_grad)(gpointer impl, guint node, float *out, GError **error);
  gboolean (*get_running)(gpointer impl, guint node, float *mean, float *var, GError **error);
  gboolean (*set_running)(gpointer impl, guint node, const float *mean, const float *var, GError **error);
  gboolean (*freeze)(gpointer impl, gboolean freeze, GError **error);
  gboolean (*read_signs)(gpointer impl, guint node, guint64 *codes, GError **error);
  gboolean (*read_channel_dots)(gpointer impl, guint node, double *dots, GError **error);
  /* Added for continued trainings: the SGD momentum buffers. */
  gboolean (*get_velocity)(gpointer impl, guint i, float *out, GError **error);
  gboolean (*set_velocity)(gpointer impl, guint i, const float *values, GError **error);
} SieveBackendClass;

extern const SieveBackendClass sieve_backend_cpu;
#ifdef SIEVE_HAVE_CUDA
extern const SieveBackendClass sieve_backend_cuda;
/* Whether a CUDA device can be used; when not, why (transfer full, nullable). */
gboolean sieve__cuda_available(char **why);
#endif

/* The initial values of a parameter tensor (info->size floats into out),
 * the same on every backend for one seed: backends draw their parameters
 * in the order they number them, from one generator. */
void sieve__param_initial(const SieveGraph *graph, const SieveParamInfo *info, SieveRng *rng, float *out);

/* "oneDNN 3.0.0": the CPU backend's kernel library and its version, which
 * the latency table's entries depend on. (transfer none) */
const char *sieve__cpu_library(void);
/* The bytes of the largest cache level below the shared last level (L2 on
 * current x86 and Arm servers), from sysfs; 1 MiB where it says nothing. */
SIEVE_INTERNAL_API gsize sieve__latency_private_cache_bytes(void);
/* sieve_latency_measure_nodes, with the private caches flushed before each
 * timed forward (cold: what an operation finds in a network whose
 * parameters do not fit them) or not (each timed forward right after an
 * untimed one of the same graph: what it finds in a network that fits
 * them, run request after request). */
gboolean sieve__latency_measure_nodes_caches(const SieveGraph *const *graphs, const guint *nodes, guint n,
                                             const SieveLatencyOptions *options, gboolean cold, SieveLatency *out,
                                             GError **error);

/* For messages: "node 12 (conv2d "stage1.cell0.edge_1_0.conv")", valid
 * until the thread's next call. (transfer none) */
const char *sieve__node_desc(const SieveGraph *graph, guint v);

/* Whether node's output is exactly zero whenever its first input is, for
 * every value of its parameters (it has none): a pooling or cropping of
 * zeros, or an activation with f(0) = 0.  A backend skips such a node
 * when its input is a zero (a `none` edge of NAS-Bench-201 feeding a pool:
 * nothing to compute forward or backward, and no plain-layout zero tensor
 * sent through a slow kernel); the latency table folds it the same way. */
gboolean sieve__node_keeps_zero(const SieveGraphNode *node);
