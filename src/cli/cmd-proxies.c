/* sieve proxies --space nb201 --proxies naswot,snip [--batch 64] [--input CxHxW | --dataset NAME]
 *               [--seed S] [--threads T] [--jobs J] [--device cpu|cuda|auto] [--set space.KEY=VALUE]...
 *               ARCH... | -
 *
 * Scores architectures with zero-cost proxies and prints one JSON object
 * per architecture, in the order given:
 *
 *   {"arch":"|nor_conv_3x3~0|+...","naswot":812.4,"snip":53.1,"time_ms":{"naswot":41.2,"snip":60.3}}
 *
 * time_ms holds each proxy's share of the wall time (passes the named
 * proxies share are split evenly among them, so the times add up to the
 * architecture's total).  Several architectures are scored by J workers at
 * once, each with T/J threads; the default J is what measured fastest (see
 * the README).  A line that does not parse or a network that fails is
 * reported on stderr with its line number, the other lines are still
 * scored, and the exit status is 1. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli-private.h"

/* The most examples --batch takes (see the check in the command). */
#define SIEVE_PROXIES_MAX_BATCH 8192

typedef struct {
  char *text;    /* the architecture as given */
  char *where;   /* "line 3" / "argument 2", for messages */
  char *json;    /* the output line, or NULL */
  char *error;   /* the message, or NULL */
  gboolean done;
} Item;

typedef struct {
  SieveSpace *space;
  GMutex space_lock; /* parse and build: a space need not be thread-safe (Lua) */
  const char **names;
  guint n_names;
  SieveProxyOptions options;
  SieveShape want_input; /* c == 0: any */
  Item *items;
  guint n_items;
  gint next;             /* atomic: the next item to take */
  GMutex lock;
  GCond cond;
} Job;

static char *
score_one(Job *job, Item *item, GError **error)
{
  g_mutex_lock(&job->space_lock);
  g_autoptr(SieveGenotype) g = sieve_space_parse(job->space, item->text, error);
  g_autoptr(SieveGraph) net = g ? sieve_space_build(job->space, g, error) : NULL;
  g_autofree char *canonical = g ? sieve_space_format(job->space, g) : NULL;
  g_mutex_unlock(&job->space_lock);
  if (net == NULL)
    return NULL;
  SieveShape in = sieve_graph_node(net, sieve_graph_input_node(net))->shape;
  if (job->want_input.c && (in.c != job->want_input.c || in.h != job->want_input.h || in.w != job->want_input.w)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                "the space's network takes %ux%ux%u inputs, not the %ux%ux%u of the batch (set the space's input "
                "size with --set space.KEY=VALUE)",
                in.c, in.h, in.w, job->want_input.c, job->want_input.h, job->want_input.w);
    return NULL;
  }
  g_autofree double *scores = g_new(double, job->n_names);
  g_autofree double *ms = g_new(double, job->n_names);
  if (!sieve_proxy_compute(net, job->names, job->n_names, &job->options, scores, ms, error))
    return NULL;
  GString *out = g_string_new("{\"arch\":");
  sieve_json_append_string(out, canonical);
  for (guint i = 0; i < job->n_names; i++) {
    g_string_append_c(out, ',');
    sieve_json_append_string(out, job->names[i]);
    g_string_append_c(out, ':');
    sieve_json_append_double(out, scores[i]);
  }
  g_string_append(out, ",\"time_ms\":{");
  for (guint i = 0; i < job->n_names; i++) {
    if (i)
      g_string_append_c(out, ',');
    sieve_json_append_string(out, job->names[i]);
    g_string_append_printf(out, ":%.3f", ms[i]);
  }
  g_string_append(out, "}}");
  return g_string_free(out, FALSE);
}

static gpointer
worker(gpointer data)
{
  Job *job = data;
  for (;;) {
    gint i = g_atomic_int_add(&job->next, 1);
    if (i >= (gint)job->n_items)
      return NULL;
    Item *item = &job->items[i];
    GError *error = NULL;
    char *json = score_one(job, item, &error);
    g_mutex_lock(&job->lock);
    item->json = json;
    if (error) {
      item->error = g_strdup(error->message);
      g_error_free(error);
    }
    item->done = TRUE;
    g_cond_broadcast(&job->cond);
    g_mutex_unlock(&job->lock);
  }
}

/* "3x32x32" -> shape. */
static gboolean
parse_shape(const char *text, SieveShape *s, GError **error)
{
  guint64 v[3];
  g_auto(GStrv) parts = g_strsplit(text, "x", -1);
  gboolean ok = g_strv_length(parts) == 3;
  for (guint i = 0; ok && i < 3; i++)
    ok = g_ascii_string_to_unsigned(parts[i], 10, 1, 65536, &v[i], NULL);
  if (!ok) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "--input '%s': expected CxHxW, e.g. 3x32x32", text);
    return FALSE;
  }
  *s = (SieveShape){(guint)v[0], (guint)v[1], (guint)v[2]};
  return TRUE;
}

/* The space section: --set space.KEY=VALUE applied to an empty map, then
 * the nb201 input options the batch implies, where the user set none. */
static SieveSpace *
space_open(SieveRegistry *registry, const char *name, char **overrides, SieveShape in, guint classes,
           const char *in_origin, GError **error)
{
  /* Errors about the section point at the flag (a flag has no line). */
  g_autofree char *flag = g_strdup_printf("--space %s", name);
  g_autoptr(SieveNode) root = sieve_node_new_map(flag, 0, 0);
  for (guint i = 0; overrides && overrides[i]; i++) {
    const char *eq = strchr(overrides[i], '=');
    if (!g_str_has_prefix(overrides[i], "space.") || eq == NULL) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                  "--set '%s': expected space.KEY=VALUE (only the space has options here), e.g. --set space.C=8",
                  overrides[i]);
      return NULL;
    }
    g_autofree char *key = g_strndup(overrides[i] + 6, eq - overrides[i] - 6);
    g_autofree char *origin = g_strdup_printf("--set %s", overrides[i]);
    if (!sieve_node_set_path(root, key, eq + 1, origin, error))
      return NULL;
  }
  if (in.c && g_str_equal(name, "nb201")) {
    if (in.h != in.w) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "%s: nb201 takes square inputs, not %ux%u", in_origin,
                  in.h, in.w);
      return NULL;
    }
    char num[32];
    struct {
      const char *key;
      guint value;
    } implied[] = {{"in_channels", in.c}, {"size", in.h}, {"classes", classes}};
    for (guint i = 0; i < G_N_ELEMENTS(implied); i++) {
      if (implied[i].value == 0 || sieve_node_lookup(root, implied[i].key))
        continue;
      g_snprintf(num, sizeof num, "%u", implied[i].value);
      if (!sieve_node_set_path(root, implied[i].key, num, in_origin, error))
        return NULL;
    }
  }
  const SieveComponent *c = sieve_registry_require(registry, SIEVE_KIND_SPACE, name, NULL, error);
  if (c == NULL)
    return NULL;
  g_autofree char *context = g_strdup_printf("space '%s'", name);
  g_autofree char *cwd = g_get_current_dir();
  g_autoptr(SieveOptions) options =
    sieve_options_new(sieve_component_get_info(c)->options, root, NULL, cwd, context, error);
  if (options == NULL)
    return NULL;
  SieveSpace *space = sieve_space_new(c, options, error);
  if (space && !sieve_space_can_build(space)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "space '%s' builds no networks: proxies need one", name);
    g_clear_pointer(&space, sieve_space_free);
  }
  return space;
}

/* Architectures from the arguments, or from stdin ("-"), one per line;
 * blank lines and lines starting with '#' are skipped. */
static GArray *
read_items(int argc, char **argv)
{
  GArray *items = g_array_new(FALSE, TRUE, sizeof(Item));
  if (argc == 2 && g_str_equal(argv[1], "-")) {
    GString *line = g_string_new(NULL);
    guint number = 0;
    int ch;
    do {
      ch = getchar();
      if (ch != '\n' && ch != EOF) {
        g_string_append_c(line, (char)ch);
        continue;
      }
      if (ch == EOF && line->len == 0)
        break;
      number++;
      g_strstrip(line->str);
      if (line->str[0] && line->str[0] != '#') {
        Item it = {.text = g_strdup(line->str), .where = g_strdup_printf("line %u", number)};
        g_array_append_val(items, it);
      }
      g_string_truncate(line, 0);
    } while (ch != EOF);
    g_string_free(line, TRUE);
    return items;
  }
  for (int i = 1; i < argc; i++) {
    Item it = {.text = g_strdup(argv[i]), .where = g_strdup_printf("argument %d", i)};
    g_array_append_val(items, it);
  }
  return items;
}

int
sieve_cmd_proxies(int argc, char **argv)
{
  g_autofree char *space_name = NULL, *list = NULL, *input = NULL, *dataset = NULL, *data_dir = NULL;
  g_autofree char *batch_file = NULL, *labels_file = NULL, *device = NULL;
  g_autofree char *batch_text = NULL;
  gint threads = 0, jobs = 0;
  gint64 batch = -1; /* -1: not given */
  gint64 seed = 0;
  gboolean list_proxies = FALSE;
  g_auto(GStrv) overrides = NULL;
  GOptionEntry entries[] = {
    {"space", 0, 0, G_OPTION_ARG_STRING, &space_name, "architecture space plugin (default nb201)", "NAME"},
    {"proxies", 'p', 0, G_OPTION_ARG_STRING, &list, "comma-separated proxies (see --list)", "A,B,..."},
    {"batch", 'b', 0, G_OPTION_ARG_STRING, &batch_text, "examples in the batch (default 64)", "N"},
    {"input", 0, 0, G_OPTION_ARG_STRING, &input,
     "shape of the random N(0,1) batch, e.g. 3x32x32 (default: the network's input; nb201's input options follow it)",
     "CxHxW"},
    {"dataset", 'd', 0, G_OPTION_ARG_STRING, &dataset,
     "take a real batch from a dataset's training split instead (fashion-mnist, mnist, cifar10, ...)", "NAME"},
    {"data-dir", 0, 0, G_OPTION_ARG_FILENAME, &data_dir, "where the dataset's files are", "DIR"},
    {"batch-file", 0, 0, G_OPTION_ARG_FILENAME, &batch_file,
     "take the batch from an .npy file (numpy.save), float32 or float64, shape (batch, C, H, W)", "X.npy"},
    {"labels-file", 0, 0, G_OPTION_ARG_FILENAME, &labels_file,
     "class ids of --batch-file's examples, an .npy of integers, shape (batch,) (default: seeded uniform)", "Y.npy"},
    {"seed", 0, 0, G_OPTION_ARG_INT64, &seed, "seed of the initial weights and the batch (default 0)", "S"},
    {"threads", 't', 0, G_OPTION_ARG_INT, &threads, "threads in all (default: every core)", "T"},
    {"device", 0, 0, G_OPTION_ARG_STRING, &device,
     "runtime device of the passes: cpu (default), cuda (a GPU; an error when none), auto (a GPU when one is "
     "present)", "DEVICE"},
    {"jobs", 'j', 0, G_OPTION_ARG_INT, &jobs,
     "architectures scored at once, each with T/J threads (default: 1, which measured fastest)", "J"},
    {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &overrides, "set an option of the space, e.g. --set space.C=16",
     "space.KEY=VALUE"},
    {"list", 'l', 0, G_OPTION_ARG_NONE, &list_proxies, "list the proxies and exit", NULL},
    {NULL},
  };
  g_autoptr(GOptionContext) context = g_option_context_new("ARCH... | - - score architectures with zero-cost proxies");
  g_autoptr(GString) desc = g_string_new(
    "Prints one JSON object per architecture, in the order given, e.g.\n"
    "  {\"arch\":\"...\",\"naswot\":812.4,\"snip\":53.1,\"time_ms\":{\"naswot\":41.2,\"snip\":60.3}}\n"
    "time_ms: each proxy's share of the wall time (passes shared by the named proxies are split evenly).\n"
    "Larger is better for every score.  A score JSON cannot hold is the string \"-inf\" (naswot of a\n"
    "singular kernel).  '-' reads architectures from stdin, one per line; a line that fails is reported\n"
    "on stderr with its number, the others are still scored, and the exit status is then 1.\n\n"
    "Example:\n  sieve proxies --space nb201 --proxies naswot,snip,synflow \\\n"
    "    '|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|'\n\n"
    "Proxies:\n");
  for (guint i = 0; i < sieve_proxy_count(); i++)
    g_string_append_printf(desc, "  %-10s %s\n", sieve_proxy_info(i)->name, sieve_proxy_info(i)->help);
  g_option_context_set_description(context, desc->str);
  g_option_context_add_main_entries(context, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(context, &argc, &argv, &error))
    return sieve_cli_fail(error);
  if (list_proxies) {
    for (guint i = 0; i < sieve_proxy_count(); i++)
      printf("%-10s %s%s\n", sieve_proxy_info(i)->name, sieve_proxy_info(i)->help,
             sieve_proxy_info(i)->needs_data ? "" : " [no data]");
    return SIEVE_EXIT_OK;
  }
  if (list == NULL || argc < 2) {
    fprintf(stderr, "sieve proxies: expected --proxies A,B,... and architectures (or '-' for stdin); "
                    "see 'sieve proxies --help'\n");
    return SIEVE_EXIT_USAGE;
  }
  /* Bounded before anything is allocated by it: a proxy's batch is tens to
   * hundreds of examples, and a typo such as 100000000 would otherwise end
   * in an abort inside the allocator. */
  if (!sieve_cli_parse_int("--batch", batch_text, 1, SIEVE_PROXIES_MAX_BATCH, &batch, &error))
    return sieve_cli_fail(error);
  if (threads < 0 || jobs < 0) {
    fprintf(stderr, "sieve proxies: --threads and --jobs take a positive count\n");
    return SIEVE_EXIT_USAGE;
  }
  if (device && !g_strv_contains((const char *const[]){"cpu", "cuda", "auto", NULL}, device)) {
    fprintf(stderr, "sieve proxies: --device %s: expected cpu, cuda or auto\n", device);
    return SIEVE_EXIT_USAGE;
  }
  if ((input != NULL) + (dataset != NULL) + (batch_file != NULL) > 1) {
    fprintf(stderr, "sieve proxies: --input, --dataset and --batch-file are exclusive (a dataset or a file brings "
                    "its own shape)\n");
    return SIEVE_EXIT_USAGE;
  }
  if (labels_file && !batch_file) {
    fprintf(stderr, "sieve proxies: --labels-file goes with --batch-file\n");
    return SIEVE_EXIT_USAGE;
  }
  g_auto(GStrv) names = g_strsplit(list, ",", -1);
  for (guint i = 0; names[i]; i++)
    g_strstrip(names[i]);
  guint n_names = g_strv_length(names);
  if (!sieve_proxy_check_names((const char *const *)names, n_names, &error)) {
    sieve_cli_fail(error);
    return SIEVE_EXIT_USAGE; /* a bad --proxies is a usage error */
  }

  Job job = {.names = (const char **)names, .n_names = n_names};
  job.options.batch = batch > 0 ? (guint)batch : 64;
  job.options.seed = (guint64)seed;
  job.options.device = device;
  if (device && g_str_equal(device, "auto")) {
    g_autofree char *note = NULL;
    sieve_runtime_resolve_device(device, &note);
    fprintf(stderr, "%s\n", note);
  }
  guint total_threads = threads ? (guint)threads : g_get_num_processors();
  guint classes = 0;
  g_autofree char *in_origin = NULL;
  g_autoptr(SieveProxyBatch) given = NULL;
  if (batch_file) {
    given = sieve_proxy_batch_read(batch_file, labels_file, &error);
    if (given == NULL)
      return sieve_cli_fail(error);
    if (batch > 0 && (guint)batch != given->n) {
      fprintf(stderr, "sieve proxies: --batch %" G_GINT64_FORMAT ", but %s holds %u examples\n", batch, batch_file,
              given->n);
      return SIEVE_EXIT_USAGE;
    }
    in_origin = g_strdup_printf("--batch-file %s", batch_file);
  } else if (dataset) {
    given = sieve_proxy_batch_draw(dataset, data_dir, job.options.batch, job.options.seed, &error);
    if (given == NULL)
      return sieve_cli_fail(error);
    classes = given->classes;
    in_origin = g_strdup_printf("--dataset %s", dataset);
  } else if (input) {
    if (!parse_shape(input, &job.want_input, &error))
      return sieve_cli_fail(error);
    in_origin = g_strdup_printf("--input %s", input);
  }
  if (given != NULL) {
    job.options.batch = given->n;
    job.options.inputs = given->x;
    job.options.labels = given->y;
    job.want_input = given->shape;
  }
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  g_autoptr(GPtrArray) refused = g_ptr_array_new_with_free_func((GDestroyNotify)g_error_free);
  sieve_registry_load_default(registry, NULL, refused);
  sieve_cli_warn_refused(refused);
  job.space = space_open(registry, space_name ? space_name : "nb201", overrides, job.want_input, classes, in_origin,
                         &error);
  if (job.space == NULL)
    return sieve_cli_fail(error);
  /* The screen stage's check, before any candidate: a batch whose labels
   * the space's networks cannot give fails here whatever examples the
   * draw happened to take. */
  if (given != NULL) {
    g_autoptr(SieveGraph) sample = sieve_space_build_sample(job.space, job.options.seed, &error);
    g_autofree char *builder = g_strdup_printf("space %s", sieve_space_get_name(job.space));
    if (sample == NULL || !sieve_proxy_batch_check(given, sample, builder, &error)) {
      sieve_space_free(job.space);
      return sieve_cli_fail(error);
    }
  }

  g_autoptr(GArray) items = read_items(argc, argv);
  job.items = (Item *)items->data;
  job.n_items = items->len;
  guint n_jobs = MIN(jobs ? (guint)jobs : 1, MAX(job.n_items, 1));
  n_jobs = MIN(n_jobs, total_threads);
  job.options.threads = MAX(total_threads / n_jobs, 1);
  g_mutex_init(&job.lock);
  g_mutex_init(&job.space_lock);
  g_cond_init(&job.cond);
  g_autoptr(GPtrArray) threads_run = g_ptr_array_new();
  for (guint i = 0; i < n_jobs; i++)
    g_ptr_array_add(threads_run, g_thread_new("proxies", worker, &job));
  /* In order, each as soon as it and those before it are done. */
  int status = SIEVE_EXIT_OK;
  for (guint i = 0; i < job.n_items; i++) {
    Item *item = &job.items[i];
    g_mutex_lock(&job.lock);
    while (!item->done)
      g_cond_wait(&job.cond, &job.lock);
    g_mutex_unlock(&job.lock);
    if (item->json) {
      printf("%s\n", item->json);
      fflush(stdout);
    } else {
      fprintf(stderr, "sieve: %s (\"%s\"): %s\n", item->where, item->text, item->error);
      status = SIEVE_EXIT_FAILURE;
    }
  }
  for (guint i = 0; i < threads_run->len; i++)
    g_thread_join(threads_run->pdata[i]);
  for (guint i = 0; i < job.n_items; i++) {
    g_free(job.items[i].text);
    g_free(job.items[i].where);
    g_free(job.items[i].json);
    g_free(job.items[i].error);
  }
  g_mutex_clear(&job.lock);
  g_mutex_clear(&job.space_lock);
  g_cond_clear(&job.cond);
  sieve_space_free(job.space);
  return status;
}
