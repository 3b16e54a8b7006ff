/* One network's weights: named float32 tensors and string metadata, taken
 * from and put into a runtime, and their safetensors file (the format is in
 * docs/weights-format.md). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include <sieve/text.h>

#include "model/model-private.h"
#include "base/base-private.h"

typedef struct {
  char *name;
  guint ndims;
  guint64 dims[SIEVE_WEIGHTS_MAX_DIMS];
  guint64 size;
  float *data;
} Tensor;

struct _SieveWeights {
  GPtrArray *tensors;  /* Tensor*, insertion order */
  GHashTable *index;   /* name -> Tensor* (borrowed) */
  GPtrArray *meta_keys; /* char*, insertion order */
  GHashTable *meta;    /* key (borrowed from meta_keys) -> value (owned) */
};

static void
tensor_free(gpointer p)
{
  Tensor *t = p;
  g_free(t->name);
  g_free(t->data);
  g_free(t);
}

SieveWeights *
sieve_weights_new(void)
{
  SieveWeights *w = g_new0(SieveWeights, 1);
  w->tensors = g_ptr_array_new_with_free_func(tensor_free);
  w->index = g_hash_table_new(g_str_hash, g_str_equal);
  w->meta_keys = g_ptr_array_new_with_free_func(g_free);
  w->meta = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
  return w;
}

void
sieve_weights_free(SieveWeights *w)
{
  if (w == NULL)
    return;
  g_hash_table_destroy(w->index);
  g_ptr_array_unref(w->tensors);
  g_hash_table_destroy(w->meta);
  g_ptr_array_unref(w->meta_keys);
  g_free(w);
}

void
sieve_weights_add(SieveWeights *w, const char *name, guint ndims, const guint64 *dims, const float *data)
{
  g_return_if_fail(w != NULL && name != NULL && ndims <= SIEVE_WEIGHTS_MAX_DIMS);
  Tensor *t = g_new0(Tensor, 1);
  t->name = g_strdup(name);
  t->ndims = ndims;
  t->size = 1;
  for (guint d = 0; d < ndims; d++) {
    t->dims[d] = dims[d];
    t->size *= dims[d];
  }
  t->data = g_memdup2(data, t->size * sizeof(float));
  Tensor *old = g_hash_table_lookup(w->index, name);
  if (old != NULL) {
    guint i = 0;
    g_ptr_array_find(w->tensors, old, &i);
    g_hash_table_remove(w->index, name);
    tensor_free(g_steal_pointer(&w->tensors->pdata[i]));
    w->tensors->pdata[i] = t;
  } else {
    g_ptr_array_add(w->tensors, t);
  }
  g_hash_table_insert(w->index, t->name, t);
}

guint
sieve_weights_n_tensors(const SieveWeights *w)
{
  return w->tensors->len;
}

const char *
sieve_weights_tensor_name(const SieveWeights *w, guint i)
{
  g_return_val_if_fail(i < w->tensors->len, NULL);
  return ((Tensor *)w->tensors->pdata[i])->name;
}

const float *
sieve_weights_lookup(const SieveWeights *w, const char *name, guint *ndims, const guint64 **dims)
{
  Tensor *t = g_hash_table_lookup(w->index, name);
  if (t == NULL)
    return NULL;
  if (ndims)
    *ndims = t->ndims;
  if (dims)
    *dims = t->dims;
  return t->data;
}

guint64
sieve_weights_n_elements(const SieveWeights *w)
{
  guint64 n = 0;
  for (guint i = 0; i < w->tensors->len; i++)
    n += ((Tensor *)w->tensors->pdata[i])->size;
  return n;
}

void
sieve_weights_set_meta(SieveWeights *w, const char *key, const char *value)
{
  g_return_if_fail(w != NULL && key != NULL);
  guint i = 0;
  gboolean present = g_ptr_array_find_with_equal_func(w->meta_keys, key, g_str_equal, &i);
  if (value == NULL) {
    if (present) {
      g_hash_table_remove(w->meta, key);
      g_ptr_array_remove_index(w->meta_keys, i);
    }
    return;
  }
  if (!present) {
    g_ptr_array_add(w->meta_keys, g_strdup(key));
    i = w->meta_keys->len - 1;
  }
  g_hash_table_insert(w->meta, w->meta_keys->pdata[i], g_strdup(value));
}

const char *
sieve_weights_get_meta(const SieveWeights *w, const char *key)
{
  return g_hash_table_lookup(w->meta, key);
}

const char **
sieve_weights_meta_keys(const SieveWeights *w)
{
  const char **keys = g_new0(const char *, w->meta_keys->len + 1);
  for (guint i = 0; i < w->meta_keys->len; i++)
    keys[i] = w->meta_keys->pdata[i];
  return keys;
}

/* ---- names ---------------------------------------------------------------- */

char *
sieve_weights_node_name(const SieveGraph *graph, guint node)
{
  const char *label = sieve_graph_node(graph, node)->label;
  if (label != NULL && *label != '\0') {
    /* Labels are optional and a space may repeat one: only a label no
     * other node carries can name tensors unambiguously. */
    gboolean unique = TRUE;
    for (guint i = 0; unique && i < sieve_graph_n_nodes(graph); i++)
      unique = i == node || g_strcmp0(sieve_graph_node(graph, i)->label, label) != 0;
    if (unique)
      return g_strdup(label);
  }
  return g_strdup_printf("node%u", node);
}

/* ---- runtime ---------------------------------------------------------------- */

SieveWeights *
sieve_weights_from_runtime(SieveRuntime *rt, const SieveGraph *graph, GError **error)
{
  g_autoptr(SieveWeights) w = sieve_weights_new();
  for (guint i = 0; i < sieve_runtime_n_params(rt); i++) {
    const SieveParamInfo *info = sieve_runtime_param_info(rt, i);
    g_autofree float *data = g_new(float, info->size);
    if (!sieve_runtime_get_param(rt, i, data, error))
      return NULL;
    g_autofree char *prefix = sieve_weights_node_name(graph, info->node);
    g_autofree char *name = g_strdup_printf("%s.%s", prefix, info->name);
    sieve_weights_add(w, name, info->ndims, info->dims, data);
  }
  for (guint v = 0; v < sieve_graph_n_nodes(graph); v++) {
    const SieveGraphNode *n = sieve_graph_node(graph, v);
    if (n->kind != SIEVE_OP_BATCH_NORM || !sieve_graph_node_live(graph, v))
      continue;
    guint64 c = n->shape.c;
    g_autofree float *mean = g_new(float, c);
    g_autofree float *var = g_new(float, c);
    if (!sieve_runtime_get_running_stats(rt, v, mean, var, error))
      return NULL;
    g_autofree char *prefix = sieve_weights_node_name(graph, v);
    g_autofree char *mean_name = g_strdup_printf("%s.running_mean", prefix);
    g_autofree char *var_name = g_strdup_printf("%s.running_var", prefix);
    sieve_weights_add(w, mean_name, 1, &c, mean);
    sieve_weights_add(w, var_name, 1, &c, var);
  }
  return g_steal_pointer(&w);
}

static char *
shape_text(guint ndims, const guint64 *dims)
{
  GString *s = g_string_new("[");
  for (guint d = 0; d < ndims; d++)
    g_string_append_printf(s, "%s%" G_GUINT64_FORMAT, d ? ", " : "", dims[d]);
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

/* The tensor the runtime expects under name, checked. */
static const float *
expect(const SieveWeights *w, GHashTable *used, const char *name, guint ndims, const guint64 *dims, const char *origin,
       GError **error)
{
  Tensor *t = g_hash_table_lookup(w->index, name);
  if (t == NULL) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                "%s: no tensor '%s': the weights are for another network (genotype %s, space %s)", origin, name,
                sieve_weights_get_meta(w, "genotype") ?: "unknown", sieve_weights_get_meta(w, "space") ?: "unknown");
    return NULL;
  }
  gboolean same = t->ndims == ndims;
  for (guint d = 0; same && d < ndims; d++)
    same = t->dims[d] == dims[d];
  if (!same) {
    g_autofree char *have = shape_text(t->ndims, t->dims);
    g_autofree char *want = shape_text(ndims, dims);
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                "%s: tensor '%s' has shape %s but the network needs %s: the weights are for another network "
                "(genotype %s)",
                origin, name, have, want, sieve_weights_get_meta(w, "genotype") ?: "unknown");
    return NULL;
  }
  g_hash_table_add(used, t->name);
  return t->data;
}

gboolean
sieve_weights_to_runtime(const SieveWeights *w, SieveRuntime *rt, const SieveGraph *graph, const char *origin,
                         GError **error)
{
  g_return_val_if_fail(w != NULL && rt != NULL && graph != NULL, FALSE);
  origin = origin ? origin : "weights";
  /* Everything is checked before anything is set: a refused file leaves
   * the runtime as it was. */
  g_autoptr(GHashTable) used = g_hash_table_new(g_str_hash, g_str_equal);
  guint n_params = sieve_runtime_n_params(rt);
  g_autofree const float **params = g_new0(const float *, n_params + 1);
  for (guint i = 0; i < n_params; i++) {
    const SieveParamInfo *info = sieve_runtime_param_info(rt, i);
    g_autofree char *prefix = sieve_weights_node_name(graph, info->node);
    g_autofree char *name = g_strdup_printf("%s.%s", prefix, info->name);
    if (!(params[i] = expect(w, used, name, info->ndims, info->dims, origin, error)))
      return FALSE;
  }
  GArray *bn = g_array_new(FALSE, FALSE, sizeof(guint));
  g_autoptr(GPtrArray) stats = g_ptr_array_new();
  for (guint v = 0; v < sieve_graph_n_nodes(graph); v++) {
    const SieveGraphNode *n = sieve_graph_node(graph, v);
    if (n->kind != SIEVE_OP_BATCH_NORM || !sieve_graph_node_live(graph, v))
      continue;
    guint64 c = n->shape.c;
    g_autofree char *prefix = sieve_weights_node_name(graph, v);
    g_autofree char *mean_name = g_strdup_printf("%s.running_mean", prefix);
    g_autofree char *var_name = g_strdup_printf("%s.running_var", prefix);
    const float *mean = expect(w, used, mean_name, 1, &c, origin, error);
    const float *var = mean ? expect(w, used, var_name, 1, &c, origin, error) : NULL;
    if (var == NULL) {
      g_array_unref(bn);
      return FALSE;
    }
    g_array_append_val(bn, v);
    g_ptr_array_add(stats, (gpointer)mean);
    g_ptr_array_add(stats, (gpointer)var);
  }
  for (guint i = 0; i < w->tensors->len; i++) {
    const Tensor *t = w->tensors->pdata[i];
    if (!g_hash_table_contains(used, t->name)) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                  "%s: tensor '%s' belongs to no parameter of this network: the weights are for another network "
                  "(genotype %s)",
                  origin, t->name, sieve_weights_get_meta(w, "genotype") ?: "unknown");
      g_array_unref(bn);
      return FALSE;
    }
  }
  gboolean ok = TRUE;
  for (guint i = 0; ok && i < n_params; i++)
    ok = sieve_runtime_set_param(rt, i, params[i], error);
  for (guint k = 0; ok && k < bn->len; k++)
    ok = sieve_runtime_set_running_stats(rt, g_array_index(bn, guint, k), stats->pdata[2 * k],
                                         stats->pdata[2 * k + 1], error);
  g_array_unref(bn);
  return ok;
}

/* ---- safetensors -------------------------------------------------------------- */

/* The checksum of the data section, kept in the metadata: safetensors has
 * none, and a flipped bit in a weight must not pass for a network. */
#define CHECKSUM_KEY "sieve.data_sha256"

GBytes *
sieve_weights_encode(const SieveWeights *w)
{
  gsize data_bytes = 0;
  for (guint i = 0; i < w->tensors->len; i++)
    data_bytes += ((Tensor *)w->tensors->pdata[i])->size * sizeof(float);
  guint8 *data = g_malloc(MAX(data_bytes, 1));
  gsize at = 0;
  GString *h = g_string_new("{\"__metadata__\":{");
  for (guint i = 0; i < w->meta_keys->len; i++) {
    const char *key = w->meta_keys->pdata[i];
    if (g_str_equal(key, CHECKSUM_KEY))
      continue;
    if (h->str[h->len - 1] != '{')
      g_string_append_c(h, ',');
    sieve_json_append_string(h, key);
    g_string_append_c(h, ':');
    sieve_json_append_string(h, g_hash_table_lookup(w->meta, key));
  }
  GString *tensors = g_string_new(NULL);
  for (guint i = 0; i < w->tensors->len; i++) {
    const Tensor *t = w->tensors->pdata[i];
    g_string_append_c(tensors, ',');
    sieve_json_append_string(tensors, t->name);
    g_string_append(tensors, ":{\"dtype\":\"F32\",\"shape\":[");
    for (guint d = 0; d < t->ndims; d++)
      g_string_append_printf(tensors, "%s%" G_GUINT64_FORMAT, d ? "," : "", t->dims[d]);
    g_string_append_printf(tensors, "],\"data_offsets\":[%" G_GSIZE_FORMAT ",%" G_GSIZE_FORMAT "]}", at,
                           at + t->size * sizeof(float));
    for (guint64 k = 0; k < t->size; k++) {
      guint32 bits;
      memcpy(&bits, &t->data[k], 4);
      bits = GUINT32_TO_LE(bits);
      memcpy(data + at + 4 * k, &bits, 4);
    }
    at += t->size * sizeof(float);
  }
  g_autofree char *sum = g_compute_checksum_for_data(G_CHECKSUM_SHA256, data, data_bytes);
  if (h->str[h->len - 1] != '{')
    g_string_append_c(h, ',');
  sieve_json_append_string(h, CHECKSUM_KEY);
  g_string_append_c(h, ':');
  sieve_json_append_string(h, sum);
  g_string_append_c(h, '}');
  g_string_append_len(h, tensors->str, tensors->len);
  g_string_append_c(h, '}');
  g_string_free(tensors, TRUE);
  /* The data start at an 8-byte boundary, padded with spaces, as the
   * reference implementation writes it. */
  while ((8 + h->len) % 8 != 0)
    g_string_append_c(h, ' ');
  gsize total = 8 + h->len + data_bytes;
  guint8 *out = g_malloc(total);
  guint64 n = GUINT64_TO_LE((guint64)h->len);
  memcpy(out, &n, 8);
  memcpy(out + 8, h->str, h->len);
  memcpy(out + 8 + h->len, data, data_bytes);
  g_free(data);
  g_string_free(h, TRUE);
  return g_bytes_new_take(out, total);
}

static gboolean
bad(GError **error, const char *origin, const char *format, ...) G_GNUC_PRINTF(3, 4);

static gboolean
bad(GError **error, const char *origin, const char *format, ...)
{
  va_list ap;
  va_start(ap, format);
  g_autofree char *what = g_strdup_vprintf(format, ap);
  va_end(ap);
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "%s: not a valid weights file: %s", origin, what);
  return FALSE;
}

/* An integer >= 0 of the header: a JSON integer that fits 64 bits (the
 * header is read with sieve_json_widen_integers, so one beyond is a double
 * here rather than wrapped to a small number). */
static gboolean
header_integer(JsonNode *node, gint64 *out)
{
  if (node == NULL || !JSON_NODE_HOLDS_VALUE(node) || json_node_get_value_type(node) != G_TYPE_INT64 ||
      json_node_get_int(node) < 0)
    return FALSE;
  *out = json_node_get_int(node);
  return TRUE;
}

static gboolean
read_offsets(JsonObject *o, const char *name, guint64 *begin, guint64 *end, guint *ndims, guint64 *dims,
             const char *origin, GError **error)
{
  JsonNode *dtype = json_object_get_member(o, "dtype");
  JsonNode *shape = json_object_get_member(o, "shape");
  JsonNode *offs = json_object_get_member(o, "data_offsets");
  if (!dtype || !JSON_NODE_HOLDS_VALUE(dtype) || json_node_get_value_type(dtype) != G_TYPE_STRING)
    return bad(error, origin, "tensor '%s' has no dtype", name);
  if (!g_str_equal(json_node_get_string(dtype), "F32"))
    return bad(error, origin, "tensor '%s' is %s; sieve networks are F32", name, json_node_get_string(dtype));
  if (!shape || !JSON_NODE_HOLDS_ARRAY(shape) || !offs || !JSON_NODE_HOLDS_ARRAY(offs))
    return bad(error, origin, "tensor '%s' has no shape or data_offsets", name);
  JsonArray *s = json_node_get_array(shape), *d = json_node_get_array(offs);
  if (json_array_get_length(s) > SIEVE_WEIGHTS_MAX_DIMS || json_array_get_length(d) != 2)
    return bad(error, origin, "tensor '%s' has a shape of more than %d dimensions or bad data_offsets", name,
               SIEVE_WEIGHTS_MAX_DIMS);
  *ndims = json_array_get_length(s);
  for (guint k = 0; k < *ndims; k++) {
    gint64 v;
    if (!header_integer(json_array_get_element(s, k), &v) || v > G_MAXINT32)
      return bad(error, origin, "tensor '%s' has a dimension that is not an integer from 0 to %d", name,
                 G_MAXINT32);
    dims[k] = (guint64)v;
  }
  gint64 b, e;
  if (!header_integer(json_array_get_element(d, 0), &b) || !header_integer(json_array_get_element(d, 1), &e))
    return bad(error, origin, "tensor '%s' has data_offsets that are not integers >= 0", name);
  if (e < b)
    return bad(error, origin, "tensor '%s' has data_offsets [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]", name, b, e);
  *begin = (guint64)b;
  *end = (guint64)e;
  return TRUE;
}

SieveWeights *
sieve_weights_decode(GBytes *bytes, const char *origin, GError **error)
{
  gsize size = 0;
  const guint8 *p = g_bytes_get_data(bytes, &size);
  if (size < 8) {
    bad(error, origin, "%" G_GSIZE_FORMAT " bytes, shorter than the 8-byte header length (truncated?)", size);
    return NULL;
  }
  guint64 n;
  memcpy(&n, p, 8);
  n = GUINT64_FROM_LE(n);
  if (n < 2 || n > size - 8) {
    bad(error, origin, "the header length says %" G_GUINT64_FORMAT " bytes but the file has %" G_GSIZE_FORMAT
        " (truncated?)", n, size - 8);
    return NULL;
  }
  /* No JSON holds a NUL byte; the widened copy below would be read up to
   * one, the rest ignored. */
  if (memchr(p + 8, '\0', n) != NULL) {
    bad(error, origin, "its JSON header holds a NUL byte");
    return NULL;
  }
  g_autoptr(JsonParser) parser = json_parser_new();
  GError *local = NULL;
  g_autofree char *widened = sieve_json_widen_integers((const char *)p + 8, (gssize)n);
  if (!json_parser_load_from_data(parser, widened ? widened : (const char *)p + 8, widened ? -1 : (gssize)n,
                                  &local)) {
    bad(error, origin, "its JSON header does not parse (%s)", local->message);
    g_error_free(local);
    return NULL;
  }
  JsonNode *root = json_parser_get_root(parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
    bad(error, origin, "its header is not a JSON object");
    return NULL;
  }
  JsonObject *obj = json_node_get_object(root);
  const guint8 *data = p + 8 + n;
  guint64 data_size = size - 8 - n;
  g_autoptr(SieveWeights) w = sieve_weights_new();
  JsonNode *meta = json_object_get_member(obj, "__metadata__");
  if (meta != NULL) {
    if (!JSON_NODE_HOLDS_OBJECT(meta)) {
      bad(error, origin, "__metadata__ is not an object");
      return NULL;
    }
    g_autoptr(GList) keys = json_object_get_members(json_node_get_object(meta));
    for (GList *k = keys; k; k = k->next) {
      JsonNode *v = json_object_get_member(json_node_get_object(meta), k->data);
      if (!JSON_NODE_HOLDS_VALUE(v) || json_node_get_value_type(v) != G_TYPE_STRING) {
        bad(error, origin, "metadata '%s' is not a string", (const char *)k->data);
        return NULL;
      }
      sieve_weights_set_meta(w, k->data, json_node_get_string(v));
    }
  }
  guint64 covered = 0;
  g_autoptr(GList) names = json_object_get_members(obj);
  for (GList *l = names; l; l = l->next) {
    const char *name = l->data;
    if (g_str_equal(name, "__metadata__"))
      continue;
    JsonNode *t = json_object_get_member(obj, name);
    if (!JSON_NODE_HOLDS_OBJECT(t)) {
      bad(error, origin, "tensor '%s' is not described by an object", name);
      return NULL;
    }
    guint64 begin = 0, end = 0, dims[SIEVE_WEIGHTS_MAX_DIMS] = {0}, count = 1;
    guint ndims = 0;
    if (!read_offsets(json_node_get_object(t), name, &begin, &end, &ndims, dims, origin, error))
      return NULL;
    for (guint d = 0; d < ndims; d++)
      count *= dims[d];
    if (end > data_size) {
      bad(error, origin, "tensor '%s' ends at byte %" G_GUINT64_FORMAT " of the data but the file holds %" G_GUINT64_FORMAT
          " (truncated?)", name, end, data_size);
      return NULL;
    }
    if (end - begin != count * sizeof(float)) {
      bad(error, origin, "tensor '%s' has %" G_GUINT64_FORMAT " bytes for %" G_GUINT64_FORMAT " floats", name,
          end - begin, count);
      return NULL;
    }
    g_autofree float *values = g_new(float, MAX(count, 1));
    for (guint64 k = 0; k < count; k++) {
      guint32 bits;
      memcpy(&bits, data + begin + 4 * k, 4);
      bits = GUINT32_FROM_LE(bits);
      memcpy(&values[k], &bits, 4);
    }
    sieve_weights_add(w, name, ndims, dims, values);
    covered = MAX(covered, end);
  }
  if (covered != data_size) {
    bad(error, origin, "%" G_GUINT64_FORMAT " bytes of data follow the header but the tensors use %" G_GUINT64_FORMAT,
        data_size, covered);
    return NULL;
  }
  const char *sum = sieve_weights_get_meta(w, CHECKSUM_KEY);
  if (sum != NULL) {
    g_autofree char *actual = g_compute_checksum_for_data(G_CHECKSUM_SHA256, data, data_size);
    if (!g_str_equal(actual, sum)) {
      bad(error, origin, "its data do not match the checksum in its header (corrupted)");
      return NULL;
    }
    sieve_weights_set_meta(w, CHECKSUM_KEY, NULL);
  }
  return g_steal_pointer(&w);
}

gboolean
sieve_model_write_file(const char *path, GBytes *bytes, GError **error)
{
  g_return_val_if_fail(path != NULL && bytes != NULL, FALSE);
  gsize size = 0;
  const char *data = g_bytes_get_data(bytes, &size);
  return sieve__file_write(path, data, size, TRUE, error);
}

gboolean
sieve_weights_save(const SieveWeights *w, const char *path, GError **error)
{
  g_autoptr(GBytes) bytes = sieve_weights_encode(w);
  return sieve_model_write_file(path, bytes, error);
}

SieveWeights *
sieve_weights_load(const char *path, GError **error)
{
  g_return_val_if_fail(path != NULL, NULL);
  char *contents = NULL;
  gsize size = 0;
  GError *local = NULL;
  if (!g_file_get_contents(path, &contents, &size, &local)) {
    g_set_error(error, SIEVE_ERROR, local->code == G_FILE_ERROR_NOENT ? SIEVE_ERROR_NOT_FOUND : SIEVE_ERROR_IO,
                "%s: cannot read: %s", path, local->message);
    g_error_free(local);
    return NULL;
  }
  g_autoptr(GBytes) bytes = g_bytes_new_take(contents, size);
  /* A study's store where a model file was expected: say what it is and
   * how a model comes out of it (a new-user review; it was "neither a
   * safetensors weights file nor a valid ONNX model"). */
  static const char sqlite_magic[] = "SQLite format 3";
  if (size >= sizeof sqlite_magic && memcmp(contents, sqlite_magic, sizeof sqlite_magic) == 0) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE,
                "%s: an SQLite file (a study's store?), not a model file: write a trial's network to one with "
                "`sieve model export %s --trial N -o model.onnx` (or -o net.safetensors)",
                path, path);
    return NULL;
  }
  if (sieve__model_is_onnx(bytes))
    return sieve_onnx_decode(bytes, path, error);
  return sieve_weights_decode(bytes, path, error);
}
