/* The trainer on real data: a short Fashion-MNIST training must beat a
 * stated accuracy; the schedule, divergence, data mismatches; and the
 * `sieve train` command's JSON summary. */
#include <math.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include <json-glib/json-glib.h>
#include <sieve/sieve.h>

#include "test-support.h"

static SieveRegistry *registry;
static SieveTrainData fmnist; /* 3,000 training, 1,000 validation examples, the test set */

#define ARCH1 "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"

static SieveGraph *
nb201_net(const char *arch, guint C, guint N)
{
  const SieveComponent *c = sieve_registry_lookup(registry, SIEVE_KIND_SPACE, "nb201");
  g_assert_nonnull(c);
  g_autofree char *yaml = g_strdup_printf("{C: %u, N: %u, in_channels: 1, size: 28}", C, N);
  g_autoptr(GError) error = NULL;
  g_autoptr(SieveNode) map = sieve_node_parse_string(yaml, -1, "test", &error);
  g_assert_no_error(error);
  g_autoptr(SieveOptions) options =
    sieve_options_new(sieve_component_get_info(c)->options, map, NULL, NULL, "test", &error);
  g_assert_no_error(error);
  g_autoptr(SieveSpace) space = sieve_space_new(c, options, &error);
  g_assert_no_error(error);
  g_autoptr(SieveGenotype) g = sieve_space_parse(space, arch, &error);
  g_assert_no_error(error);
  SieveGraph *net = sieve_space_build(space, g, &error);
  g_assert_no_error(error);
  return net;
}

/* The accuracy bar: an NB201 cell at C=8, N=1 trained for two epochs on
 * 3,000 images (2 x 46 steps of 64) reaches 0.73-0.74 on the whole test set
 * (measured with `sieve train --train-limit 3000 --validation 1000 --epochs 2
 * --batch 64 --lr 0.05`, seeds 1-3: 0.741, 0.738, 0.731); 0.68 leaves room
 * for seeds and thread counts while failing anything that learns badly (a
 * constant prediction scores 0.10, one epoch about 0.65). */
static void
test_fashion_mnist(void)
{
  g_autoptr(SieveGraph) net = nb201_net(ARCH1, 8, 1);
  SieveTrainOptions o;
  sieve_train_options_init(&o);
  o.batch_size = 64;
  o.lr = 0.05;
  o.epochs = 2;
  o.seed = 3;
  SieveTrainReport r;
  g_autoptr(GError) error = NULL;
  g_assert_true(sieve_train(net, fmnist.train, fmnist.val, fmnist.test, &o, &r, &error));
  g_assert_no_error(error);
  g_test_message("test %.4f val %.4f train loss %.4f, %.0f img/s, peak RSS %.0f MB", r.test_acc, r.val_acc,
                 r.train_loss, r.images_per_s, r.peak_rss / 1048576.0);
  g_assert_cmpuint(r.steps, ==, 2 * (3000 / 64));
  g_assert_cmpfloat(r.test_acc, >=, 0.68);
  g_assert_cmpfloat(r.val_acc, >=, 0.68);
  g_assert_cmpfloat(r.train_loss, <, 1.2);
  g_assert_cmpfloat(r.images_per_s, >, 0);
  g_assert_cmpuint(r.params, ==, 55218); /* the PyTorch peer's count for this network */
  g_assert_cmpuint(r.peak_rss, >, 0);

  /* Same seed, same numbers: training is deterministic for a seed (oneDNN
   * with a fixed thread count reduces in a fixed order). */
  SieveTrainReport r2;
  g_assert_true(sieve_train(net, fmnist.train, fmnist.val, fmnist.test, &o, &r2, &error));
  g_assert_cmpfloat(r2.test_acc, ==, r.test_acc);
  g_assert_cmpfloat(r2.train_loss, ==, r.train_loss);
}

/* Continuation: rungs of 0.11, 0.33 and 1 epoch, each continuing the one
 * before under the 1-epoch schedule, end bit for bit where one 1-epoch
 * training ends (one thread, so that reductions run in one order), with
 * augmentation on so that the replayed draws matter too. */
static gboolean
keep_params(gpointer user_data, SieveRuntime *rt, const SieveGraph *graph, GError **error)
{
  GByteArray *out = user_data;
  for (guint i = 0; i < sieve_runtime_n_params(rt); i++) {
    gsize n = sieve_runtime_param_info(rt, i)->size;
    g_autofree float *buf = g_new(float, n);
    if (!sieve_runtime_get_param(rt, i, buf, error))
      return FALSE;
    g_byte_array_append(out, (const guint8 *)buf, (guint)(n * sizeof(float)));
  }
  return TRUE;
}

static void
test_continuation(void)
{
  g_autoptr(SieveGraph) net = nb201_net(ARCH1, 8, 1);
  /* 640 examples: 10 steps of 64 per epoch, rungs of 2, 4 and 10 steps. */
  guint first[640];
  for (guint i = 0; i < G_N_ELEMENTS(first); i++)
    first[i] = i;
  g_autoptr(SieveDataset) small = sieve_dataset_subset(fmnist.train, first, G_N_ELEMENTS(first));
  SieveTrainOptions o;
  sieve_train_options_init(&o);
  o.batch_size = 64;
  o.lr = 0.05;
  o.seed = 11;
  o.threads = 1;
  o.crop_pad = 2;
  o.flip = TRUE;
  o.epochs = 1;
  g_autoptr(GByteArray) whole = g_byte_array_new(), continued = g_byte_array_new();
  SieveTrainReport a, b;
  g_autoptr(GError) error = NULL;
  o.done = keep_params;
  o.done_data = whole;
  g_assert_true(sieve_train(net, small, fmnist.val, NULL, &o, &a, &error));
  g_assert_no_error(error);

  g_autoptr(GBytes) state = NULL;
  static const double rungs[] = {0.11, 0.33, 1};
  for (guint i = 0; i < G_N_ELEMENTS(rungs); i++) {
    GBytes *next = NULL;
    o.epochs = rungs[i];
    o.done_data = continued;
    g_byte_array_set_size(continued, 0);
    g_assert_true(sieve_train_continue(net, small, fmnist.val, NULL, &o, 1.0, state, &next, &b, &error));
    g_assert_no_error(error);
    g_clear_pointer(&state, g_bytes_unref);
    state = next;
    /* 10 steps per epoch: ceil(0.11 * 10) = 2, ceil(0.33 * 10) = 4. */
    static const guint resumed[] = {0, 2, 4};
    g_assert_cmpuint(b.steps_resumed, ==, resumed[i]);
  }
  g_assert_cmpuint(a.steps, ==, b.steps);
  g_assert_cmpuint(whole->len, ==, continued->len);
  g_assert_cmpint(memcmp(whole->data, continued->data, whole->len), ==, 0);
  g_assert_cmpfloat(a.val_acc, ==, b.val_acc);
  g_assert_cmpfloat(a.train_loss, ==, b.train_loss);
  g_assert_cmpfloat(a.train_acc, ==, b.train_acc);

  /* A state of another seed is refused, not misused. */
  o.seed = 12;
  o.done = NULL;
  g_assert_false(sieve_train_continue(net, small, fmnist.val, NULL, &o, 1.0, state, NULL, &b, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
  g_assert_nonnull(strstr(error->message, "belongs to another training"));
}

static void
test_fractional_epochs(void)
{
  g_autoptr(SieveGraph) net = nb201_net("|skip_connect~0|+|none~0|skip_connect~1|+|none~0|none~1|nor_conv_1x1~2|", 4, 1);
  SieveTrainOptions o;
  sieve_train_options_init(&o);
  o.epochs = 0.25;
  o.batch_size = 100;
  SieveTrainReport r;
  g_autoptr(GError) error = NULL;
  g_assert_true(sieve_train(net, fmnist.train, NULL, NULL, &o, &r, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(r.steps, ==, 8); /* ceil(0.25 * 30) */
  g_assert_true(isnan(r.val_acc) && isnan(r.test_acc));
}

static void
test_schedule(void)
{
  SieveTrainOptions o;
  sieve_train_options_init(&o);
  o.lr = 1.0;
  /* Cosine from the peak to zero over the steps (PyTorch's CosineAnnealingLR). */
  g_assert_cmpfloat_with_epsilon(sieve_train_lr(&o, 0, 100, 10), 1.0, 1e-12);
  g_assert_cmpfloat_with_epsilon(sieve_train_lr(&o, 50, 100, 10), 0.5, 1e-12);
  g_assert_cmpfloat_with_epsilon(sieve_train_lr(&o, 25, 100, 10), 0.5 * (1 + cos(G_PI / 4)), 1e-12);
  /* Warm-up: 2 epochs of 10 steps rise linearly, then cosine over the other 80. */
  o.warmup_epochs = 2;
  g_assert_cmpfloat_with_epsilon(sieve_train_lr(&o, 0, 100, 10), 0.05, 1e-12);
  g_assert_cmpfloat_with_epsilon(sieve_train_lr(&o, 19, 100, 10), 1.0, 1e-12);
  g_assert_cmpfloat_with_epsilon(sieve_train_lr(&o, 20, 100, 10), 1.0, 1e-12);
  g_assert_cmpfloat_with_epsilon(sieve_train_lr(&o, 60, 100, 10), 0.5, 1e-12);
  o.cosine = FALSE;
  g_assert_cmpfloat_with_epsilon(sieve_train_lr(&o, 90, 100, 10), 1.0, 1e-12);
}

/* A NaN or infinite loss ends training with SIEVE_ERROR_DIVERGED and the
 * step.  Made to happen for sure: one pixel of the data is infinite and the
 * network (pool, linear) carries it straight into the logits.  (Through a
 * ReLU it might not: oneDNN's max(x, 0) turns a NaN into 0.) */
static void
test_divergence(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(SieveGraph) net = sieve_graph_new("linear");
  guint h = sieve_graph_linear(net, sieve_graph_global_avg_pool(net, sieve_graph_input(net, 1, 28, 28)), 10, TRUE);
  g_assert_true(sieve_graph_finish(net, h, &error));
  guint idx[200];
  for (guint i = 0; i < 200; i++)
    idx[i] = i;
  g_autoptr(SieveDataset) bad = sieve_dataset_subset(fmnist.train, idx, 200);
  bad->x[150 * 28 * 28 + 400] = INFINITY;
  SieveTrainOptions o;
  sieve_train_options_init(&o);
  o.batch_size = 100;
  SieveTrainReport r;
  g_assert_false(sieve_train(net, bad, NULL, NULL, &o, &r, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_DIVERGED);
  g_assert_nonnull(strstr(error->message, "training diverged: loss"));
  g_assert_nonnull(strstr(error->message, "at step"));
}

static void
test_mismatch(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(SieveGraph) g = sieve_graph_new("rgb");
  guint x = sieve_graph_input(g, 3, 32, 32);
  guint h = sieve_graph_linear(g, sieve_graph_global_avg_pool(g, x), 10, TRUE);
  g_assert_true(sieve_graph_finish(g, h, &error));
  SieveTrainOptions o;
  sieve_train_options_init(&o);
  SieveTrainReport r;
  g_assert_false(sieve_train(g, fmnist.train, NULL, NULL, &o, &r, &error));
  g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
  g_assert_nonnull(strstr(error->message, "1x28x28 per example but the network takes 3x32x32"));
}

/* Crop and flip on tabular rows (4x1x1): an error that says augmentation
 * needs images, not the batcher's failed assertion. */
static void
test_augmentation_tabular(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(SieveGraph) net = sieve_graph_new("tabular");
  guint h = sieve_graph_linear(net, sieve_graph_input(net, 4, 1, 1), 3, TRUE);
  g_assert_true(sieve_graph_finish(net, h, &error));
  g_autoptr(SieveDataset) rows = sieve_dataset_new(8, 4, 1, 1, 3, "rows");
  for (guint i = 0; i < 8; i++)
    rows->y[i] = (gint32)(i % 3);
  for (guint with_flip = 0; with_flip < 2; with_flip++) {
    SieveTrainOptions o;
    sieve_train_options_init(&o);
    o.batch_size = 4;
    o.threads = 1;
    o.crop_pad = with_flip ? 0 : 2;
    o.flip = with_flip;
    SieveTrainReport r;
    g_assert_false(sieve_train(net, rows, NULL, NULL, &o, &r, &error));
    g_assert_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG);
    g_assert_nonnull(strstr(error->message, "augmentation needs images"));
    g_assert_nonnull(strstr(error->message, "4x1x1"));
    g_clear_error(&error);
  }
}

static void
test_command(void)
{
  const char *exe = g_getenv("SIEVE_EXE");
  g_assert_nonnull(exe);
  const char *argv[] = {exe, "train", "-q", "--arch", ARCH1, "--set", "space.C=4", "--set", "space.N=1",
                        "--train-limit", "1000", "--validation", "500", "--epochs", "1", "--batch", "50",
                        "--set", "evaluator.test=false", NULL};
  g_autofree char *out = NULL, *err = NULL;
  int status;
  g_autoptr(GError) error = NULL;
  g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error));
  g_assert_true(g_spawn_check_wait_status(status, &error));
  g_autoptr(JsonParser) p = json_parser_new();
  g_assert_true(json_parser_load_from_data(p, out, -1, &error));
  JsonObject *o = json_node_get_object(json_parser_get_root(p));
  g_assert_cmpstr(json_object_get_string_member(o, "arch"), ==, ARCH1);
  g_assert_cmpstr(json_object_get_string_member(o, "status"), ==, "ok");
  for (const char *const *k = (const char *const[]){"val_acc", "train_loss", "images_per_s", "peak_rss_mb", "params",
                                                    "macs", NULL};
       *k; k++)
    g_assert_true(json_object_has_member(o, *k));
  g_assert_false(json_object_has_member(o, "test_acc"));
  /* Accuracy is the business of /train/fashion-mnist; here the summary's shape. */
  double acc = json_object_get_double_member(o, "val_acc");
  g_assert_cmpfloat(acc, >=, 0);
  g_assert_cmpfloat(acc, <=, 1);
  g_assert_cmpint(json_object_get_int_member(o, "params"), ==, 14062); /* the peer's count at C=4, N=1 */

  /* A bad option is refused with where it was written. */
  const char *bad[] = {exe, "train", "--arch", ARCH1, "--set", "evaluator.batch_size=0", NULL};
  g_clear_pointer(&out, g_free);
  g_clear_pointer(&err, g_free);
  g_assert_true(g_spawn_sync(NULL, (char **)bad, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error));
  g_assert_cmpint(WEXITSTATUS(status), ==, 2);
  g_assert_nonnull(strstr(err, "batch_size"));
}

/* Flags become nodes of the experiment, not YAML text: a folder named with
 * any characters works, and a bad flag's value is named by its flag. */
static void
test_command_data_dir(void)
{
  const char *exe = g_getenv("SIEVE_EXE");
  g_assert_nonnull(exe);
  g_autoptr(GError) error = NULL;
  g_autofree char *tmp = g_dir_make_tmp("sieve-train-XXXXXX", &error);
  g_assert_no_error(error);
  g_autofree char *dir = g_build_filename(tmp, "données \"é\" 数据\\x", NULL);
  g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
  static const char *const files[] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                                      "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};
  for (guint i = 0; i < G_N_ELEMENTS(files); i++) {
    g_autofree char *from = g_build_filename("/usr/share/datasets/fashion-mnist", files[i], NULL);
    g_autofree char *to = g_build_filename(dir, files[i], NULL);
    g_assert_cmpint(symlink(from, to), ==, 0);
  }
  const char *argv[] = {exe, "train", "-q", "--arch", ARCH1, "--set", "space.C=4", "--set", "space.N=1",
                        "--data-dir", dir, "--train-limit", "500", "--validation", "200", "--epochs", "1",
                        "--batch", "50", "--set", "evaluator.test=false", NULL};
  g_autofree char *out = NULL, *err = NULL;
  int status;
  g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error));
  g_assert_no_error(error);
  if (!g_spawn_check_wait_status(status, NULL))
    g_error("sieve train --data-dir '%s' failed: %s", dir, err);
  g_autoptr(JsonParser) p = json_parser_new();
  g_assert_true(json_parser_load_from_data(p, out, -1, &error));
  g_assert_cmpstr(json_object_get_string_member(json_node_get_object(json_parser_get_root(p)), "status"), ==, "ok");

  const char *bad[] = {exe, "train", "--arch", ARCH1, "--dataset", "no-such-set", "--data-dir", dir, NULL};
  g_clear_pointer(&out, g_free);
  g_clear_pointer(&err, g_free);
  g_assert_true(g_spawn_sync(NULL, (char **)bad, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error));
  g_assert_cmpint(WEXITSTATUS(status), ==, 2);
  g_assert_nonnull(strstr(err, "--dataset no-such-set: "));
  for (guint i = 0; i < G_N_ELEMENTS(files); i++) {
    g_autofree char *to = g_build_filename(dir, files[i], NULL);
    g_unlink(to);
  }
  g_rmdir(dir);
  g_rmdir(tmp);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  registry = test_registry_load();
  g_autoptr(GError) error = NULL;
  if (!sieve_train_data_load("fashion-mnist", NULL, 1000, 3000, TRUE, TRUE, 7, &fmnist, &error))
    g_error("%s", error->message);
  g_test_add_func("/train/fashion-mnist", test_fashion_mnist);
  g_test_add_func("/train/fractional-epochs", test_fractional_epochs);
  g_test_add_func("/train/schedule", test_schedule);
  g_test_add_func("/train/continuation", test_continuation);
  g_test_add_func("/train/divergence", test_divergence);
  g_test_add_func("/train/mismatch", test_mismatch);
  g_test_add_func("/train/augmentation-tabular", test_augmentation_tabular);
  g_test_add_func("/train/command", test_command);
  g_test_add_func("/train/command-data-dir", test_command_data_dir);
  int status = g_test_run();
  sieve_train_data_clear(&fmnist);
  sieve_registry_free(registry);
  return status;
}
