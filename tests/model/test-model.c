/* tests/model: saved weights give back the very network (bit-identical
 * eval-mode outputs), broken files are refused with their name, and the
 * ONNX writer's initializers read back as the tensors it was given. */
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>
#include <sieve/sieve.h>

#define BATCH 8

/* A network with every parameterised operation: grouped and dilated
 * convolutions with and without bias, affine and plain batch norm, a
 * linear layer. */
static SieveGraph *
small_net(guint width)
{
  SieveGraph *g = sieve_graph_new("small");
  guint x = sieve_graph_input(g, 2, 12, 12);
  guint h = sieve_graph_conv2d(g, x, width, 3, 1, 1, TRUE);
  sieve_graph_set_label(g, h, "stem.conv");
  h = sieve_graph_batch_norm(g, h);
  sieve_graph_set_label(g, h, "stem.bn");
  h = sieve_graph_relu(g, h);
  SieveOpAttrs a = {.out_channels = width, .kernel = {3, 3}, .stride = {1, 1}, .pad = {2, 2}, .dilation = {2, 2},
                    .groups = 2};
  guint d = sieve_graph_add(g, SIEVE_OP_CONV2D, &h, 1, &a);
  SieveOpAttrs plain = {.eps = 1e-5, .momentum = 0.1, .affine = FALSE};
  d = sieve_graph_add(g, SIEVE_OP_BATCH_NORM, &d, 1, &plain);
  guint sum[2] = {h, d};
  h = sieve_graph_sum(g, sum, 2);
  h = sieve_graph_pool(g, h, SIEVE_POOL_MAX, 3, 2, 1);
  h = sieve_graph_global_avg_pool(g, h);
  h = sieve_graph_linear(g, h, 5, TRUE);
  g_assert_true(sieve_graph_finish(g, h, NULL));
  return g;
}

static void
random_batch(float *x, gint32 *y, guint n, guint64 seed)
{
  GRand *r = g_rand_new_with_seed((guint32)seed);
  for (guint i = 0; i < n; i++)
    x[i] = (float)g_rand_double_range(r, -1, 1);
  for (guint b = 0; y && b < BATCH; b++)
    y[b] = g_rand_int_range(r, 0, 5);
  g_rand_free(r);
}

/* A few training steps, so that weights and running statistics are not
 * their initial values. */
static SieveRuntime *
trained(const SieveGraph *net, guint64 seed)
{
  SieveTrainOptions o;
  sieve_train_options_init(&o);
  o.batch_size = BATCH;
  o.threads = 1;
  o.seed = seed;
  guint logits = 0;
  GError *error = NULL;
  SieveRuntime *rt = sieve_train_compile(net, &o, &logits, &error);
  g_assert_no_error(error);
  float x[BATCH * 2 * 12 * 12];
  gint32 y[BATCH];
  SieveSgd sgd = {.lr = 0.05, .momentum = 0.9};
  for (guint step = 0; step < 5; step++) {
    random_batch(x, y, G_N_ELEMENTS(x), seed * 100 + step);
    g_assert_true(sieve_runtime_forward(rt, x, y, SIEVE_MODE_TRAIN, &error));
    g_assert_true(sieve_runtime_backward(rt, NULL, &error));
    g_assert_true(sieve_runtime_sgd_step(rt, &sgd, &error));
  }
  g_assert_no_error(error);
  return rt;
}

static void
eval_logits(SieveRuntime *rt, guint node, float *out)
{
  float x[BATCH * 2 * 12 * 12];
  random_batch(x, NULL, G_N_ELEMENTS(x), 4242);
  GError *error = NULL;
  g_assert_true(sieve_runtime_forward(rt, x, NULL, SIEVE_MODE_EVAL, &error));
  g_assert_true(sieve_runtime_read(rt, node, out, &error));
  g_assert_no_error(error);
}

static char *
temp_path(const char *name)
{
  g_autofree char *dir = g_dir_make_tmp("sieve-model-XXXXXX", NULL);
  return g_build_filename(dir, name, NULL);
}

/* Saved, loaded into a fresh runtime (other initial weights), the
 * network computes bit for bit what it did. */
static void
test_round_trip(void)
{
  g_autoptr(SieveGraph) net = small_net(8);
  g_autoptr(SieveRuntime) a = trained(net, 1);
  GError *error = NULL;
  g_autoptr(SieveWeights) w = sieve_weights_from_runtime(a, net, &error);
  g_assert_no_error(error);
  /* 2 convs (weight, bias / weight), 2 BN (gamma, beta, stats / stats), linear. */
  g_assert_nonnull(sieve_weights_lookup(w, "stem.conv.weight", NULL, NULL));
  g_assert_nonnull(sieve_weights_lookup(w, "stem.conv.bias", NULL, NULL));
  g_assert_nonnull(sieve_weights_lookup(w, "stem.bn.gamma", NULL, NULL));
  g_assert_nonnull(sieve_weights_lookup(w, "stem.bn.running_var", NULL, NULL));
  g_assert_nonnull(sieve_weights_lookup(w, "node5.running_mean", NULL, NULL));
  g_assert_null(sieve_weights_lookup(w, "node5.gamma", NULL, NULL));
  sieve_weights_set_meta(w, "genotype", "small-8");
  g_autofree char *path = temp_path("net.safetensors");
  g_assert_true(sieve_weights_save(w, path, &error));
  g_assert_no_error(error);

  g_autoptr(SieveWeights) back = sieve_weights_load(path, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(sieve_weights_get_meta(back, "genotype"), ==, "small-8");
  g_assert_null(sieve_weights_get_meta(back, "sieve.data_sha256")); /* checked, not shown */
  g_autoptr(SieveRuntime) b = trained(net, 2);
  g_assert_true(sieve_weights_to_runtime(back, b, net, path, &error));
  g_assert_no_error(error);
  guint out = sieve_graph_output(net);
  float za[BATCH * 5], zb[BATCH * 5];
  eval_logits(a, out, za);
  eval_logits(b, out, zb);
  g_assert_cmpmem(za, sizeof za, zb, sizeof zb);

  /* And the ONNX file's initializers are the same tensors. */
  g_autoptr(GBytes) onnx = sieve_onnx_encode(net, w, &(SieveOnnxOptions){.batch = 1}, &error);
  g_assert_no_error(error);
  g_autoptr(SieveWeights) from_onnx = sieve_onnx_decode(onnx, "net.onnx", &error);
  g_assert_no_error(error);
  g_assert_cmpstr(sieve_weights_get_meta(from_onnx, "genotype"), ==, "small-8");
  g_assert_cmpuint(sieve_weights_n_tensors(from_onnx), ==, sieve_weights_n_tensors(w));
  for (guint i = 0; i < sieve_weights_n_tensors(w); i++) {
    const char *name = sieve_weights_tensor_name(w, i);
    guint n1 = 0, n2 = 0;
    const guint64 *d1 = NULL, *d2 = NULL;
    const float *v1 = sieve_weights_lookup(w, name, &n1, &d1);
    const float *v2 = sieve_weights_lookup(from_onnx, name, &n2, &d2);
    g_assert_nonnull(v2);
    g_assert_cmpuint(n1, ==, n2);
    guint64 count = 1;
    for (guint k = 0; k < n1; k++) {
      g_assert_cmpuint(d1[k], ==, d2[k]);
      count *= d1[k];
    }
    g_assert_cmpmem(v1, count * 4, v2, count * 4);
  }
  g_autoptr(SieveRuntime) c = trained(net, 3);
  g_assert_true(sieve_weights_to_runtime(from_onnx, c, net, "net.onnx", &error));
  float zc[BATCH * 5];
  eval_logits(c, out, zc);
  g_assert_cmpmem(za, sizeof za, zc, sizeof zc);
}

/* Another network's weights: refused, naming the origin and the tensor,
 * and the runtime keeps its own. */
static void
test_wrong_network(void)
{
  g_autoptr(SieveGraph) net = small_net(8);
  g_autoptr(SieveGraph) wider = small_net(16);
  g_autoptr(SieveRuntime) a = trained(net, 1);
  g_autoptr(SieveRuntime) b = trained(wider, 2);
  GError *error = NULL;
  g_autoptr(SieveWeights) w = sieve_weights_from_runtime(a, net, &error);
  float before[BATCH * 5], after[BATCH * 5];
  eval_logits(b, sieve_graph_output(wider), before);
  g_assert_false(sieve_weights_to_runtime(w, b, wider, "small.safetensors", &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
  g_assert_nonnull(strstr(error->message, "small.safetensors"));
  g_assert_nonnull(strstr(error->message, "stem.conv.weight"));
  g_clear_error(&error);
  eval_logits(b, sieve_graph_output(wider), after);
  g_assert_cmpmem(before, sizeof before, after, sizeof after);
  /* A tensor too many is refused as well. */
  guint64 one = 1;
  float v = 1;
  sieve_weights_add(w, "extra.weight", 1, &one, &v);
  g_assert_false(sieve_weights_to_runtime(w, a, net, "x", &error));
  g_assert_nonnull(strstr(error->message, "extra.weight"));
  g_clear_error(&error);
}

/* Truncated at every length, a flipped byte in the data or the header:
 * never a network, always the file's name. */
static void
test_broken_files(void)
{
  g_autoptr(SieveGraph) net = small_net(4);
  g_autoptr(SieveRuntime) a = trained(net, 1);
  GError *error = NULL;
  g_autoptr(SieveWeights) w = sieve_weights_from_runtime(a, net, &error);
  g_autoptr(GBytes) bytes = sieve_weights_encode(w);
  gsize size = 0;
  const guint8 *p = g_bytes_get_data(bytes, &size);
  for (gsize cut = 0; cut < size; cut += 1 + cut / 7) {
    g_autoptr(GBytes) part = g_bytes_new(p, cut);
    g_autoptr(SieveWeights) back = sieve_weights_decode(part, "cut.safetensors", &error);
    g_assert_null(back);
    g_assert_nonnull(strstr(error->message, "cut.safetensors"));
    g_clear_error(&error);
  }
  guint64 header = 0;
  memcpy(&header, p, 8);
  gsize spots[] = {size - 1, 8 + header + 5, 8 + 3, 0};
  for (guint i = 0; i < G_N_ELEMENTS(spots); i++) {
    g_autofree guint8 *copy = g_memdup2(p, size);
    copy[spots[i]] ^= 0x41;
    g_autoptr(GBytes) bad = g_bytes_new(copy, size);
    g_autoptr(SieveWeights) back = sieve_weights_decode(bad, "bad.safetensors", &error);
    g_assert_null(back);
    g_assert_nonnull(strstr(error->message, "bad.safetensors"));
    g_clear_error(&error);
  }
  g_autoptr(SieveWeights) missing = sieve_weights_load("/nonexistent/x.safetensors", &error);
  g_assert_null(missing);
  g_assert_nonnull(strstr(error->message, "/nonexistent/x.safetensors"));
  g_clear_error(&error);
  /* An output path that cannot be written. */
  g_assert_false(sieve_weights_save(w, "/nonexistent/dir/x.safetensors", &error));
  g_assert_nonnull(strstr(error->message, "/nonexistent/dir/x.safetensors"));
  g_clear_error(&error);
}

/* A safetensors file of one 1-float tensor "a" whose header is the n
 * bytes of json. */
static SieveWeights *
decode_header_n(const char *json, guint64 n, GError **error)
{
  g_autoptr(GByteArray) bytes = g_byte_array_new();
  guint64 le = GUINT64_TO_LE(n);
  float v = 2;
  g_byte_array_append(bytes, (const guint8 *) &le, 8);
  g_byte_array_append(bytes, (const guint8 *) json, (guint) n);
  g_byte_array_append(bytes, (const guint8 *) &v, 4);
  g_autoptr(GBytes) file = g_bytes_new(bytes->data, bytes->len);
  return sieve_weights_decode(file, "big.safetensors", error);
}

static SieveWeights *
decode_header(const char *json, GError **error)
{
  return decode_header_n(json, strlen(json), error);
}

/* json-glib wraps an integer beyond 64 bits without a word: the shape
 * -18446744073709551615 once read as 1.  Such numbers, and numbers that
 * are not integers, are refused. */
static void
test_header_numbers(void)
{
  GError *error = NULL;
  g_autoptr(SieveWeights) good = decode_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", &error);
  g_assert_no_error(error);
  g_assert_nonnull(good);
  const char *bad[] = {
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[-18446744073709551615],\"data_offsets\":[0,4]}}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-18446744073709551616,4]}}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,18446744073709551620]}}",
  };
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autoptr(SieveWeights) w = decode_header(bad[i], &error);
    g_assert_null(w);
    g_assert_nonnull(strstr(error->message, "big.safetensors"));
    g_assert_nonnull(strstr(error->message, "tensor 'a'"));
    g_clear_error(&error);
  }
  /* A NUL byte is no JSON: refused, also where an integer after it is
   * widened (the widened copy was read up to the NUL, the rest ignored). */
  const char nul[] = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}\0 99999999999999999999999 ";
  for (guint big = 0; big < 2; big++) {
    g_autoptr(SieveWeights) w = decode_header_n(nul, big ? sizeof nul - 1 : strlen(nul) + 4, &error);
    g_assert_null(w);
    g_assert_nonnull(strstr(error->message, "big.safetensors"));
    g_clear_error(&error);
  }
}

/* An ONNX model whose one initializer is cut short: a parse error naming the
 * file (the decoder once freed an undefined pointer on this path). */
static void
test_broken_initializer(void)
{
  /* ModelProto.graph (7) { GraphProto.initializer (5) { TensorProto.name (8):
   * a length of 16 with no bytes after it } } */
  static const guint8 model[] = {0x3A, 0x04, 0x2A, 0x02, 0x42, 0x10};
  g_autoptr(GBytes) bytes = g_bytes_new_static(model, sizeof model);
  GError *error = NULL;
  g_assert_null(sieve_onnx_decode(bytes, "cut.onnx", &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE);
  g_assert_nonnull(strstr(error->message, "cut.onnx"));
  g_assert_nonnull(strstr(error->message, "malformed initializer"));
  g_error_free(error);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/model/weights/round-trip", test_round_trip);
  g_test_add_func("/model/weights/wrong-network", test_wrong_network);
  g_test_add_func("/model/weights/broken-files", test_broken_files);
  g_test_add_func("/model/weights/header-numbers", test_header_numbers);
  g_test_add_func("/model/onnx/broken-initializer", test_broken_initializer);
  return g_test_run();
}
