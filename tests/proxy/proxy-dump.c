/* proxy-dump --arch ARCH --out DIR [--C 16 --N 5 --size 32 --in-channels 3 --classes 10]
 *            [--seed S] [--batch 64] [--batch-seed S]
 *
 * Test support for the cross-check against the PyTorch peer
 * (bench/proxies_crosscheck.py): builds the nb201 network as `sieve
 * proxies` does (the plugin from the build tree, a runtime initialised from
 * --seed) and writes
 *   DIR/weights.npz  its initial weights under the peer's state_dict names
 *                    (../shared/peers/torch_nb201.py, class NB201), with the
 *                    batch norms' running statistics at PyTorch's initial
 *                    mean 0, variance 1, and num_batches_tracked 0;
 *   DIR/inputs.npy   a batch of N(0, 1) inputs, float32 [batch, c, h, w];
 *   DIR/labels.npy   uniform class ids, int64 [batch];
 * both from --batch-seed.  Prints a JSON line with the paths, the counts and
 * sieve's synflow of the network (src/proxy-synflow.c), which needs no
 * batch: a check of the executor and of the weights' names at once.
 * The names are derived from the builder's node labels
 * (plugins/spaces/nb201/nb201-network.c); a label it does not know is an error,
 * so a change to the builder cannot pass unnoticed. */
#include <stdio.h>
#include <string.h>

#include <sieve/sieve.h>

#include "data/data-private.h"
#include "proxy/proxy-private.h"
#include "sieve-config.h"

typedef struct {
  GPtrArray *names;  /* char*, owned */
  GPtrArray *arrays; /* GBytes*, owned */
} Npz;

static void
npz_add(Npz *z, char *name, GBytes *array)
{
  g_ptr_array_add(z->names, name);
  g_ptr_array_add(z->arrays, array);
}

static void
npz_add_f32(Npz *z, const char *prefix, const char *what, const float *v, guint ndims, const guint64 *dims)
{
  npz_add(z, g_strdup_printf("%s.%s", prefix, what), sieve__npy_encode(SIEVE_NPY_F32, ndims, dims, v));
}

/* The peer's module path of a node label's layer: "features.0" for
 * "stem.conv", "features.7.edges.4" for "stage1.cell6.edge_3_1.conv" ...
 * and the part of the label after it ("conv", "bn"), or NULL. */
static char *
peer_module(const char *label, guint N, const char **part)
{
  guint s, c, j, i, r;
  char tail[16];
  *part = NULL;
  if (g_str_equal(label, "stem.conv") || g_str_equal(label, "stem.bn")) {
    *part = label + 5;
    return g_strdup(g_str_equal(*part, "conv") ? "features.0" : "features.1");
  }
  if (g_str_equal(label, "head.bn")) {
    *part = "bn";
    return g_strdup_printf("features.%u", 3 * N + 4);
  }
  if (g_str_equal(label, "head.linear")) {
    *part = "linear";
    return g_strdup("classifier");
  }
  int used = 0;
  if (sscanf(label, "stage%u.cell%u.edge_%u_%u.%15s%n", &s, &c, &j, &i, tail, &used) == 5 &&
      label[used] == '\0' && (g_str_equal(tail, "conv") || g_str_equal(tail, "bn"))) {
    *part = strrchr(label, '.') + 1;
    return g_strdup_printf("features.%u.edges.%u", 2 + (s - 1) * (N + 1) + (c - 1), j * (j - 1) / 2 + i);
  }
  char branch[16];
  if (sscanf(label, "reduce%u.%15[a-z].%15s%n", &r, branch, tail, &used) == 3 && label[used] == '\0' &&
      (g_str_equal(tail, "conv") || g_str_equal(tail, "bn"))) {
    *part = strrchr(label, '.') + 1;
    if (g_str_equal(branch, "shortcut"))
      return g_strdup_printf("features.%u.down", 1 + r * (N + 1));
    return g_strdup_printf("features.%u.%s", 1 + r * (N + 1), branch);
  }
  return NULL;
}

static gboolean
dump_weights(const SieveGraph *net, SieveRuntime *rt, guint N, const char *path, guint *n_arrays, GError **error)
{
  Npz z = {g_ptr_array_new_with_free_func(g_free), g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref)};
  gboolean ok = TRUE;
  for (guint v = 0; v < sieve_graph_n_nodes(net) && ok; v++) {
    const SieveGraphNode *n = sieve_graph_node(net, v);
    if (n->kind != SIEVE_OP_CONV2D && n->kind != SIEVE_OP_BATCH_NORM && n->kind != SIEVE_OP_LINEAR)
      continue;
    const char *part;
    g_autofree char *module = n->label ? peer_module(n->label, N, &part) : NULL;
    if (module == NULL) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH, "node %u (%s, label %s) has no counterpart in the peer", v,
                  sieve_op_kind_name(n->kind), n->label ? n->label : "none");
      ok = FALSE;
      break;
    }
    /* In the peer, a ReLUConvBN is Sequential(ReLU, Conv2d, BatchNorm2d):
     * its conv is ".1" and its batch norm ".2"; the stem, the shortcut's
     * Sequential(AvgPool2d, Conv2d) and the head are addressed directly. */
    gboolean in_sequential = g_str_has_suffix(module, ".a") || g_str_has_suffix(module, ".b") ||
                             strstr(module, ".edges.") != NULL;
    g_autofree char *prefix =
      in_sequential ? g_strdup_printf("%s.%s", module, g_str_equal(part, "conv") ? "1" : "2")
      : g_str_has_suffix(module, ".down") ? g_strdup_printf("%s.1", module)
                                          : g_strdup(module);
    guint c = n->shape.c;
    g_autofree float *gamma = g_new(float, c), *beta = g_new0(float, c), *zeros = g_new0(float, c);
    for (guint k = 0; k < c; k++)
      gamma[k] = 1;
    for (guint i = 0; i < sieve_runtime_n_params(rt) && ok; i++) {
      const SieveParamInfo *info = sieve_runtime_param_info(rt, i);
      if (info->node != v)
        continue;
      g_autofree float *values = g_new(float, info->size);
      ok = sieve_runtime_get_param(rt, i, values, error);
      if (!ok)
        break;
      if (g_str_equal(info->name, "gamma"))
        memcpy(gamma, values, c * sizeof(float));
      else if (g_str_equal(info->name, "beta"))
        memcpy(beta, values, c * sizeof(float));
      else
        npz_add_f32(&z, prefix, info->name, values, info->ndims, info->dims);
    }
    if (n->kind == SIEVE_OP_BATCH_NORM) {
      guint64 dim = c;
      npz_add_f32(&z, prefix, "weight", gamma, 1, &dim);
      npz_add_f32(&z, prefix, "bias", beta, 1, &dim);
      npz_add_f32(&z, prefix, "running_mean", zeros, 1, &dim);
      for (guint k = 0; k < c; k++)
        zeros[k] = 1;
      npz_add_f32(&z, prefix, "running_var", zeros, 1, &dim);
      gint64 tracked = 0;
      npz_add(&z, g_strdup_printf("%s.num_batches_tracked", prefix),
              sieve__npy_encode(SIEVE_NPY_I64, 0, NULL, &tracked));
    }
  }
  if (ok)
    ok = sieve__npz_write(path, (const char *const *)z.names->pdata, (GBytes *const *)z.arrays->pdata, z.names->len,
                          error);
  *n_arrays = z.names->len;
  g_ptr_array_unref(z.names);
  g_ptr_array_unref(z.arrays);
  return ok;
}

static SieveGraph *
build(const char *arch, guint C, guint N, guint size, guint in_ch, guint classes, GError **error)
{
  const char *root = g_getenv("SIEVE_BUILD_ROOT");
  g_autofree char *plugin_dir = g_build_filename(root ? root : SIEVE_BUILD_ROOT, "plugins", NULL);
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  g_autoptr(GPtrArray) refused = g_ptr_array_new_with_free_func((GDestroyNotify)g_error_free);
  sieve_registry_load_dir(registry, plugin_dir, TRUE, refused);
  const SieveComponent *c = sieve_registry_require(registry, SIEVE_KIND_SPACE, "nb201", NULL, error);
  if (c == NULL)
    return NULL;
  g_autofree char *yaml = g_strdup_printf("C: %u\nN: %u\nsize: %u\nin_channels: %u\nclasses: %u\n", C, N, size,
                                          in_ch, classes);
  g_autoptr(SieveNode) map = sieve_node_parse_string(yaml, -1, "proxy-dump", error);
  if (map == NULL)
    return NULL;
  static const char *const reserved[] = {"plugin", NULL};
  g_autoptr(SieveOptions) options =
    sieve_options_new(sieve_component_get_info(c)->options, map, reserved, NULL, "proxy-dump", error);
  if (options == NULL)
    return NULL;
  g_autoptr(SieveSpace) space = sieve_space_new(c, options, error);
  if (space == NULL)
    return NULL;
  g_autoptr(SieveGenotype) genotype = sieve_space_parse(space, arch, error);
  if (genotype == NULL)
    return NULL;
  return sieve_space_build(space, genotype, error);
}

int
main(int argc, char **argv)
{
  g_autofree char *arch = NULL, *out = NULL;
  gint C = 16, N = 5, size = 32, in_ch = 3, classes = 10, batch = 64;
  gint64 seed = 0, batch_seed = 0;
  GOptionEntry entries[] = {
      {"arch", 0, 0, G_OPTION_ARG_STRING, &arch, "nb201 architecture string", "ARCH"},
      {"out", 0, 0, G_OPTION_ARG_FILENAME, &out, "directory for weights.npz, inputs.npy, labels.npy", "DIR"},
      {"C", 0, 0, G_OPTION_ARG_INT, &C, "channels of the first stage (16)", "C"},
      {"N", 0, 0, G_OPTION_ARG_INT, &N, "cells per stage (5)", "N"},
      {"size", 0, 0, G_OPTION_ARG_INT, &size, "input height and width (32)", "S"},
      {"in-channels", 0, 0, G_OPTION_ARG_INT, &in_ch, "input channels (3)", "C"},
      {"classes", 0, 0, G_OPTION_ARG_INT, &classes, "classes (10)", "K"},
      {"seed", 0, 0, G_OPTION_ARG_INT64, &seed, "seed of the initial weights, as sieve proxies --seed (0)", "S"},
      {"batch", 0, 0, G_OPTION_ARG_INT, &batch, "examples in the batch (64)", "B"},
      {"batch-seed", 0, 0, G_OPTION_ARG_INT64, &batch_seed, "seed of the inputs and labels (0)", "S"},
      {NULL},
  };
  g_autoptr(GOptionContext) context = g_option_context_new("- write an nb201 network's initial weights and a batch");
  g_option_context_add_main_entries(context, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(context, &argc, &argv, &error) || arch == NULL || out == NULL || argc != 1 ||
      C < 1 || N < 1 || batch < 1 || classes < 2) {
    fprintf(stderr, "proxy-dump: %s\n",
            error ? error->message : "expected --arch ARCH --out DIR, positive sizes and no other arguments");
    return 2;
  }
  g_autoptr(SieveGraph) net = build(arch, C, N, size, in_ch, classes, &error);
  SieveRuntimeOptions o = {.batch = 1, .threads = 1, .seed = (guint64)seed};
  g_autoptr(SieveRuntime) rt = net ? sieve_runtime_new(net, &o, &error) : NULL;
  if (rt == NULL || g_mkdir_with_parents(out, 0755) != 0) {
    fprintf(stderr, "proxy-dump: %s\n", error ? error->message : "cannot create the output directory");
    return 1;
  }
  g_autofree char *wpath = g_build_filename(out, "weights.npz", NULL);
  g_autofree char *xpath = g_build_filename(out, "inputs.npy", NULL);
  g_autofree char *ypath = g_build_filename(out, "labels.npy", NULL);
  guint n_arrays = 0;
  if (!dump_weights(net, rt, N, wpath, &n_arrays, &error)) {
    fprintf(stderr, "proxy-dump: %s\n", error->message);
    return 1;
  }
  SieveRng rng;
  sieve_rng_seed(&rng, (guint64)batch_seed);
  gsize n_in = (gsize)batch * in_ch * size * size;
  g_autofree float *x = g_new(float, n_in);
  g_autofree gint64 *y = g_new(gint64, batch);
  for (gsize k = 0; k < n_in; k++)
    x[k] = (float)sieve_rng_normal(&rng);
  for (gint b = 0; b < batch; b++)
    y[b] = (gint64)sieve_rng_below(&rng, classes);
  g_autoptr(GBytes) xb = sieve__npy_encode(SIEVE_NPY_F32, 4, (guint64[]){batch, in_ch, size, size}, x);
  g_autoptr(GBytes) yb = sieve__npy_encode(SIEVE_NPY_I64, 1, (guint64[]){batch}, y);
  if (!g_file_set_contents(xpath, g_bytes_get_data(xb, NULL), g_bytes_get_size(xb), &error) ||
      !g_file_set_contents(ypath, g_bytes_get_data(yb, NULL), g_bytes_get_size(yb), &error)) {
    fprintf(stderr, "proxy-dump: %s\n", error->message);
    return 1;
  }
  double synflow;
  if (!sieve_proxy_synflow(net, rt, 0, &synflow, &error)) {
    fprintf(stderr, "proxy-dump: %s\n", error->message);
    return 1;
  }
  printf("{\"arch\": \"%s\", \"weights\": \"%s\", \"inputs\": \"%s\", \"labels\": \"%s\", \"arrays\": %u, "
         "\"params\": %" G_GUINT64_FORMAT ", \"synflow\": %.17g}\n",
         arch, wpath, xpath, ypath, n_arrays, sieve_graph_params(net), synflow);
  return 0;
}
