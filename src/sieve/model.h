/* sieve: a trained network that outlives its trial: named weights, their
 * file (safetensors), and the network as ONNX.
 *
 *   g_autoptr(SieveWeights) w = sieve_weights_from_runtime(rt, net, error);  // after training
 *   sieve_weights_set_meta(w, "genotype", text);
 *   if (!sieve_weights_save(w, "net.safetensors", error)) ...               // atomic: old or new file
 *
 *   g_autoptr(SieveWeights) back = sieve_weights_load("net.safetensors", error);
 *   if (!sieve_weights_to_runtime(back, rt2, net, error)) ...                // names and shapes checked
 *   g_autoptr(GBytes) onnx = sieve_onnx_encode(net, back, &(SieveOnnxOptions){.batch = 1}, error);
 *   if (!sieve_model_write_file("net.onnx", onnx, error)) ...
 *
 * A SieveWeights holds one network's tensors, float32, each named
 * "NODE.weight", "NODE.bias", "NODE.gamma", "NODE.beta",
 * "NODE.running_mean" or "NODE.running_var", where NODE is the graph node's
 * label when it has one that no other node shares, else "node<index>"
 * (sieve_weights_node_name), and string metadata (genotype, space, the
 * normalisation the network was trained with ...).  The file format is
 * safetensors (docs/weights-format.md): an 8-byte little-endian header
 * length, a JSON header, raw little-endian float32 data; numpy reads it in
 * a few lines without sieve.
 */
#pragma once

#include <gio/gio.h>
#include <glib.h>
#include <sieve/abi.h>
#include <sieve/graph.h>
#include <sieve/runtime.h>

G_BEGIN_DECLS

typedef struct _SieveWeights SieveWeights;

/* (transfer full) empty: no tensors, no metadata. */
SIEVE_API SieveWeights *sieve_weights_new(void);
SIEVE_API void sieve_weights_free(SieveWeights *weights);

/* Adds (or replaces) a tensor; data (size = product of dims floats) is copied. */
SIEVE_API void sieve_weights_add(SieveWeights *weights, const char *name, guint ndims, const guint64 *dims,
                                 const float *data);
SIEVE_API guint sieve_weights_n_tensors(const SieveWeights *weights);
/* (transfer none) in insertion order. */
SIEVE_API const char *sieve_weights_tensor_name(const SieveWeights *weights, guint i);
/* (transfer none) (nullable: no such tensor) the data; *ndims and *dims
 * (transfer none) describe its shape. */
SIEVE_API const float *sieve_weights_lookup(const SieveWeights *weights, const char *name, guint *ndims,
                                            const guint64 **dims);
/* Elements over every tensor. */
SIEVE_API guint64 sieve_weights_n_elements(const SieveWeights *weights);

/* String metadata ("genotype", "space" ...); value NULL removes the key. */
SIEVE_API void sieve_weights_set_meta(SieveWeights *weights, const char *key, const char *value);
/* (transfer none) (nullable) */
SIEVE_API const char *sieve_weights_get_meta(const SieveWeights *weights, const char *key);
/* (transfer container) the keys in insertion order, NULL-terminated. */
SIEVE_API const char **sieve_weights_meta_keys(const SieveWeights *weights);

/* (transfer full) the prefix of node i's tensors in graph. */
SIEVE_API char *sieve_weights_node_name(const SieveGraph *graph, guint node);

/* (transfer full) the parameters and batch-norm running statistics a
 * runtime compiled from graph (or from graph with a loss appended) holds. */
SIEVE_API SieveWeights *sieve_weights_from_runtime(SieveRuntime *runtime, const SieveGraph *graph, GError **error);
/* Sets them in runtime.  Every parameter and running statistic the runtime
 * has must be present with the same shape, and no tensor may be left over;
 * otherwise an error that names origin (the file, or "trial 12") and the
 * tensor, and runtime is left unchanged. */
SIEVE_API gboolean sieve_weights_to_runtime(const SieveWeights *weights, SieveRuntime *runtime,
                                            const SieveGraph *graph, const char *origin, GError **error);

/* (transfer full) the safetensors encoding. */
SIEVE_API GBytes *sieve_weights_encode(const SieveWeights *weights);
/* (transfer full) parses a safetensors encoding; origin names it in errors
 * (a truncated, corrupted or foreign file is an error, never a partial
 * result). */
SIEVE_API SieveWeights *sieve_weights_decode(GBytes *bytes, const char *origin, GError **error);
/* Writes the file atomically (a temporary beside it, fsync, rename). */
SIEVE_API gboolean sieve_weights_save(const SieveWeights *weights, const char *path, GError **error);
/* (transfer full) reads a safetensors file, or an ONNX file that sieve
 * wrote (its initializers and metadata), by its content. */
SIEVE_API SieveWeights *sieve_weights_load(const char *path, GError **error);

typedef struct {
  guint batch;           /* the input's batch dimension; 0: symbolic ("N") */
  const char *producer;  /* NULL: "sieve" */
  gpointer reserved[4];
} SieveOnnxOptions;
SIEVE_ABI_SIZE(SieveOnnxOptions, 48);

/* The opset the encoder writes (the default domain). */
#define SIEVE_ONNX_OPSET 13

/* (transfer full) graph (finished; a softmax_ce output is dropped: the
 * model ends in its logits) in eval mode as an ONNX ModelProto: weights'
 * tensors as initializers (every one the graph needs must be there), zero
 * operations pruned, weights' metadata as the model's metadata_props. */
SIEVE_API GBytes *sieve_onnx_encode(const SieveGraph *graph, const SieveWeights *weights,
                                    const SieveOnnxOptions *options, GError **error);
/* (transfer full) the initializers and metadata_props of an ONNX model
 * (float32 initializers only, as sieve writes them). */
SIEVE_API SieveWeights *sieve_onnx_decode(GBytes *bytes, const char *origin, GError **error);

/* Writes bytes to path atomically: a temporary file in the same folder,
 * fsync, rename, so that a kill leaves the old file or the new one. */
SIEVE_API gboolean sieve_model_write_file(const char *path, GBytes *bytes, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveWeights, sieve_weights_free)

G_END_DECLS
