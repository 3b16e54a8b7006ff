/* cuda-train: NB201 training and proxy throughput of one runtime device,
 * through the public API only, for bench/cuda_vs_torch.py (issue 27).
 *
 *   cuda-train train      --device D [--arch TEXT] [--C 16 --N 5 --in-ch 3 --size 32] [--batch 256]
 *                         [--iters 200] [--warmup 20]
 *   cuda-train train-many --device D [--archs 16] [--iters 70] [--concurrent K] [--seed S] ...
 *   cuda-train proxies    --device D [--archs 10] [--batch 64] [--proxies all|A,B,...] ...
 *   cuda-train screen     --device D [--archs 10000] [--concurrent K] [--batch 64] ...
 *
 * Each prints one JSON line.  The protocol follows the PyTorch peer
 * (shared/peers/torch_nb201_gpu.py) so that the two compare: the network
 * built by the nb201 space plugin with a softmax cross-entropy appended,
 * one fixed seeded N(0,1) batch with uniform labels already in place, SGD
 * with Nesterov momentum 0.9, lr 0.1, weight decay 5e-4; warm-up steps
 * untimed, then the timed steps, the loss read once at the end (reading it
 * every step would wait for the device each step, which PyTorch's loop does
 * not).  train-many times everything (compile included) over the wall, as
 * the peer does, with each architecture's steps all counted.  proxies:
 * each proxy's median milliseconds (sieve_proxy_compute's times_ms, the
 * passes shared by the named proxies split among them) and the median
 * total per architecture, after one untimed warm-up architecture.  Random
 * architectures are drawn by the space with --seed; they are not the
 * peer's (it draws with Python's generator), only as many and as random. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sieve/sieve.h>

typedef struct {
  char *device, *arch, *proxies, *arch_file;
  GStrv listed; /* the architectures of --arch-file, one a line */
  gint C, N, in_ch, size, batch, iters, warmup, archs, concurrent, threads;
  gint64 seed;
} Args;

#define ARCH1 "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"
#define CLASSES 10

static void G_GNUC_NORETURN
die(GError *error)
{
  fprintf(stderr, "cuda-train: %s\n", error->message);
  exit(1);
}

/* The nb201 space with the network's size options. */
static SieveSpace *
open_space(SieveRegistry *registry, const Args *a)
{
  GError *error = NULL;
  const SieveComponent *c = sieve_registry_lookup(registry, SIEVE_KIND_SPACE, "nb201");
  if (c == NULL) {
    fprintf(stderr, "cuda-train: no nb201 space plugin found\n");
    exit(1);
  }
  g_autofree char *yaml = g_strdup_printf("{C: %d, N: %d, in_channels: %d, size: %d, classes: %d}", a->C, a->N,
                                          a->in_ch, a->size, CLASSES);
  g_autoptr(SieveNode) map = sieve_node_parse_string(yaml, -1, "cuda-train", &error);
  static const char *const reserved[] = {"plugin", NULL};
  g_autoptr(SieveOptions) o =
      map ? sieve_options_new(sieve_component_get_info(c)->options, map, reserved, ".", "space nb201", &error) : NULL;
  SieveSpace *space = o ? sieve_space_new(c, o, &error) : NULL;
  if (space == NULL)
    die(error);
  return space;
}

/* The network of text (NULL: drawn by rng) with its loss appended. */
static SieveGraph *
build(const SieveSpace *space, const char *text, SieveRng *rng, gboolean loss, char **arch)
{
  GError *error = NULL;
  g_autoptr(SieveGenotype) g = text ? sieve_space_parse(space, text, &error) : sieve_space_sample(space, rng);
  if (g == NULL)
    die(error);
  SieveGraph *net = sieve_space_build(space, g, &error);
  if (net == NULL || (loss && !sieve_graph_add_loss(net, 0, &error)))
    die(error);
  if (arch)
    *arch = sieve_space_format(space, g);
  return net;
}

/* The fixed batch: seeded N(0,1) inputs and uniform labels. */
typedef struct {
  float *x;
  gint32 *y;
} Batch;

static Batch
make_batch(const Args *a)
{
  SieveRng rng;
  sieve_rng_seed(&rng, (guint64)a->seed);
  gsize n = (gsize)a->batch * a->in_ch * a->size * a->size;
  Batch b = {g_new(float, n), g_new(gint32, a->batch)};
  for (gsize i = 0; i < n; i++)
    b.x[i] = (float)sieve_rng_normal(&rng);
  for (gint i = 0; i < a->batch; i++)
    b.y[i] = (gint32)sieve_rng_below(&rng, CLASSES);
  return b;
}

static const SieveSgd SGD = {.lr = 0.1, .momentum = 0.9, .weight_decay = 5e-4, .nesterov = TRUE};

static SieveRuntime *
compile(const SieveGraph *net, const Args *a, guint threads, guint64 seed)
{
  GError *error = NULL;
  SieveRuntimeOptions o = {.device = a->device, .batch = (guint)a->batch, .threads = threads, .backward = TRUE,
                           .seed = seed};
  SieveRuntime *rt = sieve_runtime_new(net, &o, &error);
  if (rt == NULL)
    die(error);
  return rt;
}

static void
steps(SieveRuntime *rt, const Batch *b, gint n)
{
  GError *error = NULL;
  for (gint i = 0; i < n; i++)
    if (!sieve_runtime_forward(rt, b->x, b->y, SIEVE_MODE_TRAIN, &error) || !sieve_runtime_backward(rt, NULL, &error) ||
        !sieve_runtime_sgd_step(rt, &SGD, &error))
      die(error);
}

/* Bytes of one example's activations: each live node's output in fp32,
 * but for the input, identities and zeros (which hold no tensor of their
 * own) and the loss.  What cuda_vs_torch.py's memory-traffic estimate
 * starts from; a backend that fuses or shares buffers moves less. */
static guint64
activation_bytes(const SieveGraph *net)
{
  guint64 bytes = 0;
  for (guint i = 0; i < sieve_graph_n_nodes(net); i++) {
    const SieveGraphNode *n = sieve_graph_node(net, i);
    if (!sieve_graph_node_live(net, i) || n->kind == SIEVE_OP_INPUT || n->kind == SIEVE_OP_IDENTITY ||
        n->kind == SIEVE_OP_ZERO || n->kind == SIEVE_OP_SOFTMAX_CE)
      continue;
    bytes += (guint64)n->shape.c * n->shape.h * n->shape.w * sizeof(float);
  }
  return bytes;
}

static int
cmd_train(SieveRegistry *registry, const Args *a)
{
  g_autoptr(SieveSpace) space = open_space(registry, a);
  g_autofree char *arch = NULL;
  g_autoptr(SieveGraph) net = build(space, a->arch ? a->arch : ARCH1, NULL, TRUE, &arch);
  Batch b = make_batch(a);
  gint64 t0 = g_get_monotonic_time();
  g_autoptr(SieveRuntime) rt = compile(net, a, (guint)a->threads, (guint64)a->seed);
  double compile_s = (g_get_monotonic_time() - t0) / 1e6;
  t0 = g_get_monotonic_time();
  steps(rt, &b, a->warmup);
  double warmup_s = (g_get_monotonic_time() - t0) / 1e6;
  t0 = g_get_monotonic_time();
  steps(rt, &b, a->iters);
  /* The loss waits for the last step: the timed span ends with the work. */
  double loss = sieve_runtime_loss(rt);
  double dt = (g_get_monotonic_time() - t0) / 1e6;
  g_autoptr(GString) s = g_string_new(NULL);
  g_autofree char *describe = g_strescape(sieve_runtime_describe(rt), NULL);
  g_string_append_printf(s,
                         "{\"what\": \"train\", \"device\": \"%s\", \"describe\": \"%s\", \"arch\": \"%s\", \"C\": %d, "
                         "\"N\": %d, \"in\": \"%dx%dx%d\", \"batch\": %d, \"iters\": %d, \"warmup\": %d, ",
                         a->device, describe, arch, a->C, a->N, a->in_ch, a->size, a->size, a->batch, a->iters,
                         a->warmup);
  g_string_append_printf(s,
                         "\"img_per_s\": %.1f, \"ms_per_step\": %.4f, \"loss\": %.6g, \"memory_bytes\": %" G_GUINT64_FORMAT
                         ", \"macs_per_image\": %" G_GUINT64_FORMAT ", \"params\": %" G_GUINT64_FORMAT
                         ", \"activation_bytes_per_image\": %" G_GUINT64_FORMAT
                         ", \"compile_s\": %.3f, \"warmup_s\": %.3f}",
                         a->iters * (double)a->batch / dt, 1e3 * dt / a->iters, loss, sieve_runtime_memory_bytes(rt),
                         sieve_graph_macs(net), sieve_graph_params(net), activation_bytes(net), compile_s, warmup_s);
  puts(s->str);
  g_free(b.x);
  g_free(b.y);
  return isfinite(loss) ? 0 : 1;
}

/* ---- several at once --------------------------------------------------- */

/* a->archs networks drawn by the space with a->seed (or --arch-file's),
 * built beforehand:
 * spaces build from one thread, and building is the same on any device. */
static GPtrArray *
random_nets(const SieveSpace *space, const Args *a, gboolean loss)
{
  SieveRng rng;
  sieve_rng_seed(&rng, (guint64)a->seed);
  GPtrArray *nets = g_ptr_array_new_with_free_func((GDestroyNotify)sieve_graph_free);
  for (gint i = 0; i < a->archs; i++)
    g_ptr_array_add(nets, build(space, a->listed ? a->listed[i] : NULL, &rng, loss, NULL));
  return nets;
}

/* Seconds that k threads of func(data) take, all started at once. */
static double
timed_threads(GThreadFunc func, gpointer data, gint k)
{
  gint64 t0 = g_get_monotonic_time();
  g_autoptr(GPtrArray) threads = g_ptr_array_new();
  for (gint i = 0; i < k; i++)
    g_ptr_array_add(threads, g_thread_new("worker", func, data));
  for (guint i = 0; i < threads->len; i++)
    g_thread_join(threads->pdata[i]);
  return (g_get_monotonic_time() - t0) / 1e6;
}

typedef struct {
  const Args *a;
  GPtrArray *nets; /* SieveGraph*, from random_nets */
  const Batch *b;
  gint next;       /* the next network to train (atomic) */
  guint threads;   /* of each runtime */
  guint64 peak;    /* the most memory one runtime held (under lock) */
  GMutex lock;
} Many;

static gpointer
train_worker(gpointer data)
{
  Many *m = data;
  for (gint i; (i = g_atomic_int_add(&m->next, 1)) < (gint)m->nets->len;) {
    g_autoptr(SieveRuntime) rt = compile(m->nets->pdata[i], m->a, m->threads, (guint64)m->a->seed + (guint64)i);
    steps(rt, m->b, m->a->iters);
    if (!isfinite(sieve_runtime_loss(rt)))
      fprintf(stderr, "cuda-train: architecture %d: the loss is not finite\n", i);
    g_mutex_lock(&m->lock);
    m->peak = MAX(m->peak, sieve_runtime_memory_bytes(rt));
    g_mutex_unlock(&m->lock);
  }
  return NULL;
}

static guint
share(const Args *a)
{
  return a->threads > 0 ? (guint)MAX(1, a->threads / a->concurrent) : 0;
}

static int
cmd_train_many(SieveRegistry *registry, const Args *a)
{
  g_autoptr(SieveSpace) space = open_space(registry, a);
  Batch b = make_batch(a);
  Many m = {a, random_nets(space, a, TRUE), &b, 0, share(a), 0};
  g_mutex_init(&m.lock);
  double dt = timed_threads(train_worker, &m, a->concurrent);
  printf("{\"what\": \"train-many\", \"device\": \"%s\", \"archs\": %d, \"concurrent\": %d, \"C\": %d, \"N\": %d, "
         "\"batch\": %d, \"steps_per_arch\": %d, \"aggregate_img_per_s\": %.1f, \"wall_s\": %.3f, "
         "\"max_memory_bytes\": %" G_GUINT64_FORMAT "}\n",
         a->device, a->archs, a->concurrent, a->C, a->N, a->batch, a->iters,
         (double)a->archs * a->iters * a->batch / dt, dt, m.peak);
  g_ptr_array_unref(m.nets);
  g_mutex_clear(&m.lock);
  g_free(b.x);
  g_free(b.y);
  return 0;
}

/* ---- proxies ------------------------------------------------------------ */

static GStrv
proxy_names(const Args *a)
{
  if (a->proxies && !g_str_equal(a->proxies, "all"))
    return g_strsplit(a->proxies, ",", -1);
  GStrv names = g_new0(char *, sieve_proxy_count() + 1);
  for (guint i = 0; i < sieve_proxy_count(); i++)
    names[i] = g_strdup(sieve_proxy_info(i)->name);
  return names;
}

static int
cmp_double(const void *x, const void *y)
{
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

static double
median(double *v, guint n)
{
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int
cmd_proxies(SieveRegistry *registry, const Args *a)
{
  g_autoptr(SieveSpace) space = open_space(registry, a);
  g_auto(GStrv) names = proxy_names(a);
  guint n = g_strv_length(names);
  GError *error = NULL;
  if (!sieve_proxy_check_names((const char *const *)names, n, &error))
    die(error);
  SieveRng rng;
  sieve_rng_seed(&rng, (guint64)a->seed);
  SieveProxyOptions o = {.batch = (guint)a->batch, .threads = (guint)a->threads, .seed = (guint64)a->seed,
                         .device = a->device};
  g_autofree double *scores = g_new(double, n), *ms = g_new(double, n);
  g_autofree double *per = g_new(double, (gsize)n * a->archs), *total = g_new(double, a->archs);
  /* Architecture -1 warms the device up (library handles, autotuning) and is not counted. */
  for (gint i = -1; i < a->archs; i++) {
    /* the warm-up is the first architecture again, as the peer's */
    g_autoptr(SieveGraph) net = build(space, a->listed ? a->listed[MAX(i, 0)] : NULL, &rng, FALSE, NULL);
    gint64 t0 = g_get_monotonic_time();
    if (!sieve_proxy_compute(net, (const char *const *)names, n, &o, scores, ms, &error))
      die(error);
    if (i < 0)
      continue;
    total[i] = (g_get_monotonic_time() - t0) / 1e3;
    for (guint k = 0; k < n; k++)
      per[(gsize)k * a->archs + i] = ms[k];
  }
  g_autoptr(GString) s = g_string_new(NULL);
  g_string_append_printf(s, "{\"what\": \"proxies\", \"device\": \"%s\", \"archs\": %d, \"batch\": %d, \"C\": %d, "
                            "\"N\": %d, \"median_ms\": {", a->device, a->archs, a->batch, a->C, a->N);
  for (guint k = 0; k < n; k++)
    g_string_append_printf(s, "%s\"%s\": %.3f", k ? ", " : "", names[k], median(per + (gsize)k * a->archs, a->archs));
  g_string_append_printf(s, "}, \"median_total_ms\": %.3f}", median(total, a->archs));
  puts(s->str);
  return 0;
}

typedef struct {
  const Args *a;
  GPtrArray *nets;
  const char *const *names;
  guint n;
  guint threads;
  gint next;
  gint failed;
} Screen;

static gpointer
screen_worker(gpointer data)
{
  Screen *s = data;
  SieveProxyOptions o = {.batch = (guint)s->a->batch, .threads = s->threads, .seed = (guint64)s->a->seed,
                         .device = s->a->device};
  g_autofree double *scores = g_new(double, s->n);
  for (gint i; (i = g_atomic_int_add(&s->next, 1)) < (gint)s->nets->len;) {
    GError *error = NULL;
    if (!sieve_proxy_compute(s->nets->pdata[i], s->names, s->n, &o, scores, NULL, &error)) {
      if (g_atomic_int_add(&s->failed, 1) == 0)
        fprintf(stderr, "cuda-train: architecture %d: %s\n", i, error->message);
      g_error_free(error);
    }
  }
  return NULL;
}

static int
cmd_screen(SieveRegistry *registry, const Args *a)
{
  g_autoptr(SieveSpace) space = open_space(registry, a);
  g_auto(GStrv) names = proxy_names(a);
  GError *error = NULL;
  guint n = g_strv_length(names);
  if (!sieve_proxy_check_names((const char *const *)names, n, &error))
    die(error);
  Screen s = {a, random_nets(space, a, FALSE), (const char *const *)names, n, share(a), 0, 0};
  double dt = timed_threads(screen_worker, &s, a->concurrent);
  printf("{\"what\": \"screen\", \"device\": \"%s\", \"archs\": %d, \"concurrent\": %d, \"batch\": %d, \"C\": %d, "
         "\"N\": %d, \"proxies\": %u, \"wall_s\": %.3f, \"archs_per_s\": %.1f, \"failed\": %d}\n",
         a->device, a->archs, a->concurrent, a->batch, a->C, a->N, n, dt, a->archs / dt, s.failed);
  g_ptr_array_unref(s.nets);
  return s.failed ? 1 : 0;
}

int
main(int argc, char **argv)
{
  Args a = {.C = 16, .N = 5, .in_ch = 3, .size = 32, .batch = -1, .iters = -1, .warmup = 20, .archs = -1,
            .concurrent = 1, .threads = 0, .seed = 0};
  GOptionEntry entries[] = {
      {"device", 0, 0, G_OPTION_ARG_STRING, &a.device, "runtime device: cpu, cuda or auto (default cpu)", "D"},
      {"arch", 0, 0, G_OPTION_ARG_STRING, &a.arch, "train: the architecture (default NB201 arch 1)", "TEXT"},
      {"C", 0, 0, G_OPTION_ARG_INT, &a.C, "nb201 channels (default 16)", "C"},
      {"N", 0, 0, G_OPTION_ARG_INT, &a.N, "nb201 cells per stage (default 5)", "N"},
      {"in-ch", 0, 0, G_OPTION_ARG_INT, &a.in_ch, "input channels (default 3)", "C"},
      {"size", 0, 0, G_OPTION_ARG_INT, &a.size, "input height and width (default 32)", "S"},
      {"batch", 0, 0, G_OPTION_ARG_INT, &a.batch, "examples per step (default 256; proxies, screen: 64)", "B"},
      {"iters", 0, 0, G_OPTION_ARG_INT, &a.iters, "timed steps (default 200; train-many: 70 per architecture)", "I"},
      {"warmup", 0, 0, G_OPTION_ARG_INT, &a.warmup, "train: untimed steps first (default 20)", "W"},
      {"archs", 0, 0, G_OPTION_ARG_INT, &a.archs,
       "random architectures (default: train-many 16, proxies 10, screen 10000)", "A"},
      {"concurrent", 0, 0, G_OPTION_ARG_INT, &a.concurrent, "train-many, screen: threads at once (default 1)", "K"},
      {"threads", 0, 0, G_OPTION_ARG_INT, &a.threads, "CPU threads in all (default: the runtime's)", "T"},
      {"proxies", 0, 0, G_OPTION_ARG_STRING, &a.proxies, "proxies, screen: all (default) or A,B,...", "LIST"},
      {"seed", 0, 0, G_OPTION_ARG_INT64, &a.seed, "weights, batch and architectures (default 0)", "S"},
      {"arch-file", 0, 0, G_OPTION_ARG_FILENAME, &a.arch_file,
       "train-many, proxies, screen: these architectures, one a line, instead of drawn ones (the peer's, say)", "FILE"},
      {NULL},
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("train|train-many|proxies|screen - NB201 on a runtime device");
  g_option_context_add_main_entries(ctx, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &error))
    die(error);
  const char *cmd = argc == 2 ? argv[1] : "";
  gboolean proxyish = g_str_equal(cmd, "proxies") || g_str_equal(cmd, "screen");
  if (a.batch < 0)
    a.batch = proxyish ? 64 : 256;
  if (a.iters < 0)
    a.iters = g_str_equal(cmd, "train-many") ? 70 : 200;
  if (a.arch_file) {
    g_autofree char *text = NULL;
    if (!g_file_get_contents(a.arch_file, &text, NULL, &error))
      die(error);
    g_auto(GStrv) lines = g_strsplit(g_strstrip(text), "\n", -1);
    GPtrArray *kept = g_ptr_array_new();
    for (guint i = 0; lines[i]; i++)
      if (*g_strstrip(lines[i]))
        g_ptr_array_add(kept, g_strdup(lines[i]));
    g_ptr_array_add(kept, NULL);
    a.listed = (GStrv)g_ptr_array_free(kept, FALSE);
    if (a.archs < 0)
      a.archs = (gint)g_strv_length(a.listed);
    if (a.archs > (gint)g_strv_length(a.listed)) {
      fprintf(stderr, "cuda-train: --archs %d but %s holds %u architectures\n", a.archs, a.arch_file,
              g_strv_length(a.listed));
      return 2;
    }
  }
  if (a.archs < 0)
    a.archs = g_str_equal(cmd, "screen") ? 10000 : g_str_equal(cmd, "proxies") ? 10 : 16;
  if (a.device == NULL)
    a.device = g_strdup("cpu");
  if (a.batch < 1 || a.iters < 1 || a.warmup < 0 || a.archs < 1 || a.concurrent < 1 || a.threads < 0) {
    fprintf(stderr, "cuda-train: --batch, --iters, --archs and --concurrent take at least 1, --warmup and --threads "
                    "at least 0\n");
    return 2;
  }
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  g_autoptr(GPtrArray) refused = g_ptr_array_new_with_free_func((GDestroyNotify)g_error_free);
  /* The plugins of the build tree this program is in, found from where it
   * lies (build/bench/ -> build/plugins/), so that a build carried to
   * another machine finds them wherever it was put; then the usual path. */
  g_autofree char *exe = g_file_read_link("/proc/self/exe", NULL);
  g_autofree char *bench_dir = exe ? g_path_get_dirname(exe) : g_strdup(".");
  g_autofree char *plugin_dir = g_build_filename(bench_dir, "..", "plugins", NULL);
  if (g_file_test(plugin_dir, G_FILE_TEST_IS_DIR))
    sieve_registry_load_dir(registry, plugin_dir, TRUE, refused);
  else
    sieve_registry_load_default(registry, NULL, refused);
  int rc;
  if (g_str_equal(cmd, "train"))
    rc = cmd_train(registry, &a);
  else if (g_str_equal(cmd, "train-many"))
    rc = cmd_train_many(registry, &a);
  else if (g_str_equal(cmd, "proxies"))
    rc = cmd_proxies(registry, &a);
  else if (g_str_equal(cmd, "screen"))
    rc = cmd_screen(registry, &a);
  else {
    fprintf(stderr, "cuda-train: expected one of train, train-many, proxies, screen (see --help)\n");
    rc = 2;
  }
  g_free(a.device);
  g_free(a.arch);
  g_free(a.proxies);
  g_free(a.arch_file);
  g_strfreev(a.listed);
  return rc;
}
