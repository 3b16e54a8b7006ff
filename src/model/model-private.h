/* sieve: the model area: weights files, ONNX, what a saved network is.
 * Not installed: not part of the plugin ABI. */
#pragma once

#include <glib.h>
#include <sieve/model.h>
#include <sieve/text.h>

G_BEGIN_DECLS

/* The most dimensions a tensor of a sieve network has (a conv weight). */
#define SIEVE_WEIGHTS_MAX_DIMS 4

/* Whether bytes look like an ONNX ModelProto rather than a safetensors
 * file (which starts with a length and then '{'). */
G_GNUC_INTERNAL gboolean sieve__model_is_onnx(GBytes *bytes);

G_END_DECLS
