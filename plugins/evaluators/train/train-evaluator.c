/* sieve plugin: the `train` evaluator.  Builds the candidate's network with
 * its space, trains it on a real dataset with the in-process runtime
 * (oneDNN on the CPU), and reports validation and test accuracy, loss,
 * throughput and memory.  Its fidelity is the number of epochs, fractional
 * ones allowed, so multi-fidelity optimizers (Hyperband, BOHB) can ask for
 * short trainings.
 *
 * A space with a recipe (a `compose` space whose parts include, say, an
 * `hpo` space of learning rates) sets the options named in train-recipe.c
 * per candidate; any other recipe decision is refused at create.
 *
 * The data are loaded once, at create, and shared, read-only, by every
 * trial.  With `workers: W` the engine runs W trainings at once, each with
 * its share of the threads (threads_per_worker); a training's result
 * depends only on its candidate, its options and its thread count.  On a
 * GPU, with workers unset, it asks the engine for per_gpu trainings at
 * once: a NAS candidate is too small to keep a GPU busy alone.
 */
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>
#include <xxhash.h>

#include <sieve/abi.h>
#include <sieve/candidate.h>
#include <sieve/component.h>
#include <sieve/evaluator.h>
#include <sieve/graph.h>
#include <sieve/model.h>
#include <sieve/options.h>
#include <sieve/plugin.h>
#include <sieve/result.h>
#include <sieve/runtime.h>
#include <sieve/space.h>
#include <sieve/text.h>
#include <sieve/train.h>

#include "train-recipe.h"

static const char *const devices[] = {"cpu", "cuda", "auto", NULL};
static const char *const keeps[] = {"none", "top", "all", NULL};

static const SieveOptionSpec train_options[] = {
  SIEVE_OPTION_STRING("dataset", "fashion-mnist",
                      "fashion-mnist, mnist, cifar10, cifar100 or csv:PATH"),
  {"data_dir", SIEVE_OPTION_TYPE_STRING, NULL, 0, 0, NULL,
   "directory holding the dataset's files (default: /usr/share/datasets/NAME or $SIEVE_DATA_DIR/NAME)", 0, {NULL}},
  SIEVE_OPTION_INT("validation", "5000", 0, 1e7, "training examples held out for validation accuracy"),
  SIEVE_OPTION_INT("train_limit", "0", 0, 1e8, "train on at most this many examples (0: all)"),
  SIEVE_OPTION_BOOL("test", "true", "also report accuracy on the test set"),
  SIEVE_OPTION_BOOL("normalize", "true", "normalise each channel with the training split's mean and deviation"),
  SIEVE_OPTION_FLOAT("epochs", "1", 0.001, 1e4, "epochs of full training; the fidelity's maximum"),
  SIEVE_OPTION_FLOAT("min_epochs", "0.1", 0.001, 1e4, "the fidelity's minimum, for multi-fidelity optimizers"),
  SIEVE_OPTION_INT("batch_size", "128", 1, 65536, "examples per step"),
  SIEVE_OPTION_FLOAT("lr", "0.1", 0, 100, "peak learning rate"),
  SIEVE_OPTION_FLOAT("momentum", "0.9", 0, 0.9999, "SGD momentum (0: none)"),
  SIEVE_OPTION_BOOL("nesterov", "true", "Nesterov momentum"),
  SIEVE_OPTION_FLOAT("weight_decay", "5e-4", 0, 1, "L2 weight decay"),
  SIEVE_OPTION_FLOAT("warmup_epochs", "0", 0, 1e4, "linear warm-up before the cosine schedule"),
  SIEVE_OPTION_BOOL("cosine", "true", "cosine learning-rate decay to zero (false: constant)"),
  SIEVE_OPTION_FLOAT("label_smoothing", "0", 0, 0.999, "label smoothing of the cross-entropy"),
  SIEVE_OPTION_INT("crop_pad", "0", 0, 64, "random-crop augmentation with this much zero padding (0: off)"),
  SIEVE_OPTION_BOOL("flip", "false", "random horizontal flips"),
  SIEVE_OPTION_INT("threads", "0", 0, 1024,
                  "threads of all trainings together (0: every core); with workers W each training gets "
                  "floor(threads / W), at least 1"),
  SIEVE_OPTION_INT("threads_per_worker", "0", 0, 1024,
                   "threads of each training, whatever the workers (0: the share above); fix it to compare "
                   "studies run with different workers bit for bit"),
  SIEVE_OPTION_INT("seed", "0", 0, G_MAXINT32, "initialisation, data order and split seed"),
  SIEVE_OPTION_CHOICE("device", "cpu", devices,
                      "where networks train: cpu (oneDNN), cuda (a GPU; without one each trial fails with \"no CUDA "
                      "device\") or auto (a GPU when one is present, else cpu)"),
  SIEVE_OPTION_INT("per_gpu", "4", 1, 256,
                   "on a GPU (device cuda, or auto that found one) and with the experiment's workers unset: the "
                   "trainings that share the GPU at once, each with its own runtime (memory) and its share of the "
                   "threads; a written workers wins; on the CPU unused (workers applies)"),
  SIEVE_OPTION_CHOICE("keep_weights", "none", keeps,
                      "keep trained weights in the store: none, the keep_top best trials by the objective, or all"),
  SIEVE_OPTION_INT("keep_top", "1", 1, 1e6, "with keep_weights: top, how many trials keep their weights"),
  SIEVE_OPTION_BOOL("continuation", "false",
                    "a configuration asked again at a higher fidelity continues from where its lower one stopped "
                    "(weights, momentum, batch norm, data order); every training then follows the schedule of the "
                    "full fidelity (epochs), so that a continued one equals an uninterrupted one bit for bit"),
  {"state_dir", SIEVE_OPTION_TYPE_STRING, NULL, 0, 0, NULL,
   "with continuation: keep the states in files in this folder, so that they survive a kill (default: in memory; "
   "a lost state costs a retraining, never a different result)", 0, {NULL}},
  SIEVE_OPTION_INT("report_every", "0", 0, 1e9,
                   "steps between intermediate validation accuracies for a pruner (0: at the end of each epoch)"),
  SIEVE_OPTION_END,
};

/* A training stopped below the full fidelity, to continue from. */
typedef struct {
  double epochs;
  GBytes *bytes;
} State;

static void
state_free(State *s)
{
  g_bytes_unref(s->bytes);
  g_free(s);
}

typedef struct {
  const SieveSpace *space;
  SieveTrainData data;
  SieveTrainOptions train;
  SieveFidelity fidelity;
  char *dataset;
  char *device;
  char *mean, *std; /* the normalisation, as text for the weights' metadata; NULL when off */
  gboolean keep;    /* keep_weights is not none */
  guint keep_top;   /* 0: all */
  guint report_every; /* steps between intermediate values, 0: each epoch */
  gboolean continuation;
  char *state_dir;    /* (nullable) where continuation states live, else states */
  char *data_digest;  /* with continuation: the training split's content (XXH3-128, hex) */
  GMutex lock;        /* guards states and state_dir's files */
  GHashTable *states; /* state_key -> State* at the highest fidelity below the full one */
  GPtrArray *metrics; /* the names evaluate() reports, NULL-terminated */
  TrainRecipe *recipe; /* the options the genotype sets */
  guint threads_per_worker; /* 0: threads / workers */
  guint per_gpu;            /* trainings at once the engine is asked for: per_gpu on a GPU, else 1 */
  gint oversubscribed;      /* the warning that threads exceed the cores was given (atomic) */
  gint epochs_overridden;   /* the warning that the fidelity overrides the recipe's epochs was given (atomic) */
} Trainer;

/* The device trained on (transfer none): "cpu" or "cuda" as written (a
 * machine without a GPU then fails each trial with the runtime's message),
 * "auto" resolved once here, which it says on stderr ("device auto: cuda",
 * or "device auto: cpu (why)"; stdout may be JSON).  Once: every training
 * and every state key then name the same device, so a state trained on the
 * GPU is never continued on the CPU because auto resolved otherwise later. */
static const char *
resolve_device(const char *device)
{
  if (!g_str_equal(device, "auto"))
    return device;
  g_autofree char *note = NULL;
  const char *took = sieve_runtime_resolve_device(device, &note);
  g_printerr("%s\n", note);
  return took;
}

/* "0.2860,..." as sieve writes numbers. */
static char *
floats_text(const float *v, guint n)
{
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < n; i++) {
    if (i)
      g_string_append_c(s, ',');
    sieve_text_append_double(s, v[i]);
  }
  return g_string_free(s, FALSE);
}

/* The content of ds, normalised as trained on (transfer full): its shape,
 * examples and labels through XXH3-128, fast enough for the full sets
 * (Fashion-MNIST's training split in tens of milliseconds). */
static char *
dataset_digest(const SieveDataset *ds)
{
  XXH3_state_t *state = XXH3_createState();
  XXH3_128bits_reset(state);
  guint32 dims[5] = {ds->n, ds->channels, ds->height, ds->width, ds->n_classes};
  XXH3_128bits_update(state, dims, sizeof dims);
  XXH3_128bits_update(state, ds->x, (gsize)ds->n * ds->channels * ds->height * ds->width * sizeof(float));
  XXH3_128bits_update(state, ds->y, (gsize)ds->n * sizeof(gint32));
  XXH128_hash_t h = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  return g_strdup_printf("%016" G_GINT64_MODIFIER "x%016" G_GINT64_MODIFIER "x", (guint64)h.high64, (guint64)h.low64);
}

static void train_destroy(gpointer instance);

/* Whether the dataset named is one read from files (a known name, or
 * csv: with a file name): its errors may then be the files'. */
static gboolean
dataset_has_files(const SieveOptions *options)
{
  static const char *const named[] = {"fashion-mnist", "mnist", "cifar10", "cifar100", NULL};
  const char *dataset = sieve_options_get_string(options, "dataset");
  return (g_str_has_prefix(dataset, "csv:") && dataset[4] != '\0') || g_strv_contains(named, dataset);
}

/* The option a problem with the dataset's files is written at: data_dir
 * when it was written and the files are looked for there (a named dataset,
 * or csv: with a relative path: an absolute one ignores data_dir), else
 * dataset (also for an unknown name, the dataset's fault). */
static const char *
files_option(const SieveOptions *options)
{
  const char *dataset = sieve_options_get_string(options, "dataset");
  gboolean absolute = g_str_has_prefix(dataset, "csv:") && g_path_is_absolute(dataset + 4);
  gboolean in_dir = dataset_has_files(options) && !absolute;
  return in_dir && sieve_options_is_set(options, "data_dir") ? "data_dir" : "dataset";
}

/* The test split against the training split: a network that trains on one
 * must take the other, or every trial would fail at its test pass. */
static gboolean
check_test_split(const SieveOptions *options, const SieveDataset *train, const SieveDataset *test, GError **error)
{
  if (test == NULL)
    return TRUE;
  if (test->channels == train->channels && test->height == train->height && test->width == train->width &&
      test->n_classes <= train->n_classes)
    return TRUE;
  sieve_options_set_error(options, files_option(options), error,
                          "the test split of dataset '%s' is %ux%ux%u per example with %u classes, but its training "
                          "split is %ux%ux%u with %u classes: the two splits must match (or set test: false)",
                          sieve_options_get_string(options, "dataset"), test->channels, test->height, test->width,
                          test->n_classes, train->channels, train->height, train->width, train->n_classes);
  return FALSE;
}

/* The dataset against the networks the space builds (their input shape,
 * their outputs), checked at create so that a mismatch is a config error at
 * the dataset's line before the study stores a trial, not a failed first
 * trial.  The hint names the options the bundled network spaces take. */
static gboolean
check_shapes(const SieveSpace *space, const SieveOptions *options, const SieveDataset *ds, GError **error)
{
  GError *local = NULL;
  g_autoptr(SieveGraph) net = sieve_space_build_sample(space, 0, &local);
  if (net == NULL) {
    g_propagate_error(error, local);
    return FALSE;
  }
  const SieveGraphNode *in = sieve_graph_node(net, sieve_graph_input_node(net));
  const SieveGraphNode *out = sieve_graph_node(net, sieve_graph_output(net));
  gboolean input = in->shape.c == ds->channels && in->shape.h == ds->height && in->shape.w == ds->width;
  gboolean classes = out->shape.c >= ds->n_classes;
  if (input && classes)
    return TRUE;
  /* Rows of features are 1x1 "images": of the network spaces in the box
   * only nb101 takes them (its pooling is between stacks, the others
   * halve their input twice or more), so "size: 1" is no advice for them. */
  if (!input && ds->height == 1 && ds->width == 1) {
    sieve_options_set_error(options, "dataset", error,
                            "dataset '%s' is tabular (%u features per example, %u classes), but space '%s' builds "
                            "networks that take %ux%ux%u inputs: for tabular data use a space whose networks take "
                            "1x1 inputs, such as nb101 with stacks: 1, size: 1, in_channels: %u, classes: %u "
                            "(nb201, darts and mobilenet need images of at least 4x4)",
                            sieve_options_get_string(options, "dataset"), ds->channels, ds->n_classes,
                            sieve_space_get_name(space), in->shape.c, in->shape.h, in->shape.w, ds->channels,
                            MAX(ds->n_classes, 2));
    return FALSE;
  }
  /* What to set, as a config writes it and as a command line does
   * (sieve train, sieve model export: --set space.KEY=VALUE). */
  g_autoptr(GString) set = g_string_new(NULL), flags = g_string_new(NULL);
  if (in->shape.c != ds->channels) {
    g_string_append_printf(set, "in_channels: %u, ", ds->channels);
    g_string_append_printf(flags, "--set space.in_channels=%u ", ds->channels);
  }
  if (in->shape.h != ds->height || in->shape.w != ds->width) {
    if (ds->height == ds->width) {
      g_string_append_printf(set, "size: %u, ", ds->height);
      g_string_append_printf(flags, "--set space.size=%u ", ds->height);
    } else {
      g_string_append_printf(set, "an input of %ux%u, ", ds->height, ds->width);
    }
  }
  if (!classes) {
    g_string_append_printf(set, "classes: %u, ", ds->n_classes);
    g_string_append_printf(flags, "--set space.classes=%u ", ds->n_classes);
  }
  g_string_truncate(set, set->len - 2);
  if (flags->len > 0)
    g_string_truncate(flags, flags->len - 1);
  sieve_options_set_error(options, "dataset", error,
                          "dataset '%s' is %ux%ux%u per example with %u classes, but space '%s' builds networks "
                          "that take %ux%ux%u and give %u outputs: set %s in the space%s%s%s",
                          sieve_options_get_string(options, "dataset"), ds->channels, ds->height, ds->width,
                          ds->n_classes, sieve_space_get_name(space), in->shape.c, in->shape.h, in->shape.w,
                          out->shape.c, set->str, flags->len ? " (on a command line: " : "", flags->str,
                          flags->len ? ")" : "");
  return FALSE;
}

/* Crops and flips of a 1x1 "image" would only zero or keep tabular rows
 * (the batcher refuses them): a config error at the option's line. */
static gboolean
check_augmentation(const SieveOptions *options, const SieveDataset *ds, GError **error)
{
  if (ds->height > 1 || ds->width > 1)
    return TRUE;
  gint64 pad = sieve_options_get_int(options, "crop_pad");
  if (pad == 0 && !sieve_options_get_bool(options, "flip"))
    return TRUE;
  const char *name = pad > 0 ? "crop_pad" : "flip";
  sieve_options_set_error(options, name, error,
                          "augmentation needs images: %s %s pictures, but dataset '%s' is %ux%ux%u per example "
                          "(tabular data); set %s",
                          name, pad > 0 ? "pads and crops" : "mirrors", sieve_options_get_string(options, "dataset"),
                          ds->channels, ds->height, ds->width, pad > 0 ? "crop_pad: 0" : "flip: false");
  return FALSE;
}

static gpointer
train_create(const SieveSpace *space, const SieveOptions *options, GError **error)
{
  if (!sieve_space_can_build(space)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                "the train evaluator needs an architecture space that builds networks; space '%s' does not",
                sieve_space_get_name(space));
    return NULL;
  }
  double epochs = sieve_options_get_double(options, "epochs");
  double min_epochs = sieve_options_get_double(options, "min_epochs");
  /* min_epochs is the multi-fidelity optimizers' lowest rung; its default
   * (0.1) must not refuse a short run (`sieve train --epochs 0.01`, a smoke
   * test) that never asked for rungs, so unset it follows epochs down.
   * Any epochs above zero runs: a fraction of an epoch is rounded up to
   * one whole step in sieve_train. Only a min_epochs that the user wrote
   * above epochs is a contradiction to refuse. */
  if (!sieve_options_is_set(options, "min_epochs"))
    min_epochs = MIN(min_epochs, epochs);
  if (min_epochs > epochs) {
    sieve_options_set_error(options, "min_epochs", error, "min_epochs %g is more than epochs %g", min_epochs, epochs);
    return NULL;
  }
  GError *local = NULL;
  TrainRecipe *recipe = train_recipe_new(space, train_options, &local);
  if (recipe == NULL) {
    g_propagate_error(error, local);
    return NULL;
  }
  Trainer *self = g_new0(Trainer, 1);
  self->space = space;
  self->recipe = recipe;
  self->threads_per_worker = (guint)sieve_options_get_int(options, "threads_per_worker");
  SieveTrainOptions *t = &self->train;
  sieve_train_options_init(t);
  t->epochs = epochs;
  t->batch_size = (guint)sieve_options_get_int(options, "batch_size");
  t->lr = sieve_options_get_double(options, "lr");
  t->momentum = sieve_options_get_double(options, "momentum");
  t->nesterov = sieve_options_get_bool(options, "nesterov");
  t->weight_decay = sieve_options_get_double(options, "weight_decay");
  t->warmup_epochs = sieve_options_get_double(options, "warmup_epochs");
  t->cosine = sieve_options_get_bool(options, "cosine");
  t->label_smoothing = sieve_options_get_double(options, "label_smoothing");
  t->crop_pad = (guint)sieve_options_get_int(options, "crop_pad");
  t->flip = sieve_options_get_bool(options, "flip");
  t->threads = (guint)sieve_options_get_int(options, "threads");
  t->seed = (guint64)sieve_options_get_int(options, "seed");
  /* Kept: the options need not outlive the evaluator. */
  self->device = g_strdup(resolve_device(sieve_options_get_string(options, "device")));
  t->device = self->device;
  self->per_gpu = g_str_equal(self->device, "cuda") ? (guint)sieve_options_get_int(options, "per_gpu") : 1;
  self->fidelity = (SieveFidelity){.name = "epochs", .min = min_epochs, .max = epochs, .integer = FALSE};
  const char *keep = sieve_options_get_string(options, "keep_weights");
  self->keep = !g_str_equal(keep, "none");
  self->keep_top = g_str_equal(keep, "top") ? (guint)sieve_options_get_int(options, "keep_top") : 0;
  self->report_every = (guint)sieve_options_get_int(options, "report_every");
  self->continuation = sieve_options_get_bool(options, "continuation");
  if (sieve_options_is_set(options, "state_dir"))
    self->state_dir = g_strdup(sieve_options_get_string(options, "state_dir"));
  g_mutex_init(&self->lock);
  self->states = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify) state_free);
  self->dataset = g_strdup(sieve_options_get_string(options, "dataset"));
  /* As train_evaluate sets them: the accuracies only where their split exists. */
  self->metrics = g_ptr_array_new();
  if (sieve_options_get_int(options, "validation") > 0)
    g_ptr_array_add(self->metrics, "val_acc");
  if (sieve_options_get_bool(options, "test"))
    g_ptr_array_add(self->metrics, "test_acc");
  static const char *const always[] = {"train_loss", "train_acc", "epochs", "epochs_run", "params", "macs", "images_per_s",
                                       "train_s", "peak_rss_mb"};
  for (guint i = 0; i < G_N_ELEMENTS(always); i++)
    g_ptr_array_add(self->metrics, (gpointer) always[i]);
  g_ptr_array_add(self->metrics, NULL);
  /* Before the loader, which says the same as a config error that would
   * read as the validation split's: located at test, or at the dataset
   * when test is its default. */
  if (sieve_options_get_bool(options, "test") && g_str_has_prefix(self->dataset, "csv:")) {
    sieve_options_set_error(options, sieve_options_is_set(options, "test") ? "test" : "dataset", error,
                            "%s has no test split: a CSV file is one set of examples, of which only the validation "
                            "examples are held out; set test: false",
                            self->dataset);
    train_destroy(self);
    return NULL;
  }
  if (!sieve_train_data_load(self->dataset, sieve_options_get_string(options, "data_dir"),
                             (guint)sieve_options_get_int(options, "validation"),
                             (guint)sieve_options_get_int(options, "train_limit"),
                             sieve_options_get_bool(options, "test"), FALSE, t->seed, &self->data, &local)) {
    /* A config error of the loader is the validation split that does not
     * fit; the others are the files'. */
    const char *at = g_error_matches(local, SIEVE_ERROR, SIEVE_ERROR_CONFIG) ? "validation" : files_option(options);
    sieve_options_set_error(options, at, error, "%s", local->message);
    /* A file's error (missing, unreadable, damaged) keeps its own code, not
     * CONFIG: the same settings may work once the files are back, so
     * `sieve final` keeps the finals it refuses pending. */
    gboolean files = local->domain == SIEVE_ERROR && (local->code == SIEVE_ERROR_NOT_FOUND ||
                                                      local->code == SIEVE_ERROR_IO || local->code == SIEVE_ERROR_PARSE);
    if (error && *error && files && dataset_has_files(options))
      (*error)->code = local->code;
    g_error_free(local);
    train_destroy(self);
    return NULL;
  }
  if (!check_shapes(space, options, self->data.train, error) ||
      !check_test_split(options, self->data.train, self->data.test, error) ||
      !check_augmentation(options, self->data.train, error)) {
    train_destroy(self);
    return NULL;
  }
  /* A batch size a candidate's recipe does not set holds for every trial:
   * one larger than the training split fails them all, so it is refused
   * here; one a recipe sets fails only its own trials (train_evaluate). */
  if (!train_recipe_sets(recipe, "batch_size") && t->batch_size > self->data.train->n) {
    sieve_options_set_error(options, "batch_size", error,
                            "batch_size %u needs at least that many training examples, but the training split of "
                            "dataset '%s' has %u (after validation and train_limit)",
                            t->batch_size, self->dataset, self->data.train->n);
    train_destroy(self);
    return NULL;
  }
  if (sieve_options_get_bool(options, "normalize")) {
    /* Kept, so that a saved network can be fed as it was in training. */
    guint C = self->data.train->channels;
    g_autofree float *mean = g_new(float, C);
    g_autofree float *std = g_new(float, C);
    sieve_train_data_normalize(&self->data, mean, std);
    self->mean = floats_text(mean, C);
    self->std = floats_text(std, C);
  }
  if (self->continuation)
    self->data_digest = dataset_digest(self->data.train);
  return self;
}

static void
train_destroy(gpointer instance)
{
  Trainer *self = instance;
  sieve_train_data_clear(&self->data);
  g_ptr_array_unref(self->metrics);
  train_recipe_free(self->recipe);
  g_free(self->device);
  g_free(self->dataset);
  g_hash_table_unref(self->states);
  g_free(self->state_dir);
  g_free(self->data_digest);
  g_mutex_clear(&self->lock);
  g_free(self->mean);
  g_free(self->std);
  g_free(self);
}

typedef struct {
  const SieveCandidate *candidate;
  gint64 last; /* monotonic us of the last report */
  Trainer *trainer;
  const SieveTrainOptions *options;
  GBytes *weights; /* what on_done kept (owned) */
  gboolean stopped; /* told to stop by the engine (pruned) */
  guint per_epoch;  /* steps per epoch, as the trainer counts them (0: no step ran) */
} Reporter;

/* Intermediate values: the validation accuracy after every report_every
 * steps (or epoch), reported as step = training steps done, fidelity =
 * epochs done.  The last step is left to the final evaluation pass, which
 * train_evaluate reports, so that it is measured once. */
static gboolean
on_step(gpointer user_data, SieveRuntime *runtime, guint logits, guint classes, guint step, guint steps,
        guint per_epoch, gboolean *stop, GError **error)
{
  Reporter *r = user_data;
  Trainer *self = r->trainer;
  r->per_epoch = per_epoch;
  guint every = self->report_every ? self->report_every : per_epoch;
  if (self->data.val == NULL || step == steps || step % every != 0)
    return TRUE;
  double acc;
  if (!sieve_train_accuracy(runtime, logits, classes, self->data.val, &acc, error))
    return FALSE;
  if (!sieve_candidate_report_intermediate(r->candidate, step, (double) step / per_epoch, acc))
    *stop = r->stopped = TRUE;
  return TRUE;
}

/* The trained network's weights with what it takes to use them again:
 * the genotype, the input and classes, the normalisation, the batch size
 * of training's evaluation (which makes sieve model eval repeat it). */
static gboolean
on_done(gpointer user_data, SieveRuntime *runtime, const SieveGraph *graph, GError **error)
{
  Reporter *r = user_data;
  Trainer *self = r->trainer;
  g_autoptr(SieveWeights) w = sieve_weights_from_runtime(runtime, graph, error);
  if (w == NULL)
    return FALSE;
  const SieveGraphNode *in = sieve_graph_node(graph, sieve_graph_input_node(graph));
  const SieveGraphNode *out = sieve_graph_node(graph, sieve_graph_node(graph, sieve_graph_output(graph))->inputs[0]);
  g_autofree char *input = g_strdup_printf("%ux%ux%u", in->shape.c, in->shape.h, in->shape.w);
  g_autofree char *classes = g_strdup_printf("%u", out->shape.c);
  g_autofree char *batch = g_strdup_printf("%u", r->options->batch_size);
  g_autofree char *epochs = sieve_text_format_double(r->options->epochs);
  g_autofree char *seed = g_strdup_printf("%" G_GUINT64_FORMAT, r->options->seed);
  sieve_weights_set_meta(w, "format", "sieve-weights-1");
  sieve_weights_set_meta(w, "sieve_version", sieve_version_string());
  sieve_weights_set_meta(w, "space", sieve_space_get_name(self->space));
  sieve_weights_set_meta(w, "genotype", sieve_candidate_get_text(r->candidate));
  sieve_weights_set_meta(w, "input", input);
  sieve_weights_set_meta(w, "classes", classes);
  sieve_weights_set_meta(w, "dataset", self->dataset);
  sieve_weights_set_meta(w, "normalize_mean", self->mean);
  sieve_weights_set_meta(w, "normalize_std", self->std);
  sieve_weights_set_meta(w, "batch_size", batch);
  sieve_weights_set_meta(w, "epochs", epochs);
  sieve_weights_set_meta(w, "seed", seed);
  r->weights = sieve_weights_encode(w);
  return TRUE;
}

static void
on_progress(gpointer user_data, const char *phase, double epoch, double epochs, guint step, guint steps, double loss)
{
  Reporter *r = user_data;
  gint64 now = g_get_monotonic_time();
  /* A report per step would cost more than the display is worth. */
  if (g_str_equal(phase, "train") && step != steps && now - r->last < 100000)
    return;
  r->last = now;
  g_autofree char *text = g_str_equal(phase, "train")
                              ? g_strdup_printf("epoch %.2f/%g step %u/%u loss %.4f", epoch, epochs, step, steps, loss)
                              : g_strdup_printf("%s accuracy %.4f", phase, loss);
  sieve_candidate_report(r->candidate, text, steps ? (double)step / steps : 1.0);
}

/* The key of a training's state: the SHA-256 of everything that decides
 * the training up to any step.  The network as built (the genotype text and
 * the space's options both shape it), the options after the candidate's
 * recipe (batch size, learning rate, schedule, augmentation, seed, and the
 * thread count and device, which decide its numbers bit for bit), the
 * schedule's epochs, and the training split's content (dataset, data_dir,
 * validation, train_limit, normalize).  Not the epochs trained: a state
 * continues into a higher fidelity.  A study with another recipe sharing
 * state_dir gets other keys, so it neither reads nor overwrites this one's
 * states. */
static char *
state_key(const Trainer *self, const SieveGraph *net, const char *text, const SieveTrainOptions *o)
{
  g_autofree char *graph = sieve_graph_dump(net);
  g_autoptr(GString) s = g_string_new("sieve-train-state 2\n");
  g_string_append_printf(s, "genotype %s\n%s", text, graph);
  /* The dump writes the nodes' real attributes with %g (6 digits): each
   * one exactly here, so that bn_momentum 0.003 and 0.0030000001 key apart. */
  for (guint i = 0; i < sieve_graph_n_nodes(net); i++) {
    const SieveOpAttrs *a = &sieve_graph_node(net, i)->attrs;
    if (a->eps != 0 || a->momentum != 0 || a->alpha != 0 || a->label_smoothing != 0)
      g_string_append_printf(s, "attrs %%%u eps %a momentum %a alpha %a smoothing %a\n", i, a->eps, a->momentum,
                             a->alpha, a->label_smoothing);
  }
  g_string_append_printf(s, "data %s\n", self->data_digest);
  /* %a: every double exactly. */
  g_string_append_printf(s,
                         "schedule %a\nbatch_size %u\nlr %a\nmomentum %a\nnesterov %d\nweight_decay %a\nwarmup %a\n"
                         "cosine %d\nlabel_smoothing %a\ncrop_pad %u\nflip %d\nseed %" G_GUINT64_FORMAT
                         "\nthreads %u\ndevice %s\n",
                         self->fidelity.max, o->batch_size, o->lr, o->momentum, o->nesterov != 0, o->weight_decay,
                         o->warmup_epochs, o->cosine != 0, o->label_smoothing, o->crop_pad, o->flip != 0, o->seed,
                         o->threads ? o->threads : (guint)g_get_num_processors(), o->device ? o->device : "cpu");
  return g_compute_checksum_for_string(G_CHECKSUM_SHA256, s->str, (gssize)s->len);
}

/* A state file, named by its key: its epochs (8 bytes), the SHA-256 of the
 * key and the trainer's state (32 bytes), then the state.  The key in the
 * digest makes a file copied or renamed to another training's name as
 * unusable as a damaged one. */
#define STATE_HEADER (sizeof(double) + 32)

static char *
state_path(const Trainer *self, const char *key)
{
  g_autofree char *name = g_strconcat(key, ".state", NULL);
  return g_build_filename(self->state_dir, name, NULL);
}

/* The digest a state file of key holds for its state. */
static void
state_digest(const char *key, const guint8 *state, gsize len, guint8 digest[32])
{
  g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);
  g_checksum_update(sum, (const guchar *) key, -1);
  g_checksum_update(sum, state, len);
  gsize n = 32;
  g_checksum_get_digest(sum, digest, &n);
}

/* Whether data is the state file key's training wrote, unchanged. */
static gboolean
state_file_intact(const char *key, const guint8 *data, gsize len)
{
  if (len <= STATE_HEADER)
    return FALSE;
  guint8 digest[32];
  state_digest(key, data + STATE_HEADER, len - STATE_HEADER, digest);
  return memcmp(digest, data + sizeof(double), sizeof digest) == 0;
}

/* Forgets key's state, saying why on stderr (naming its file): a lost state
 * costs a retraining, never a different result nor a stopped study.  Called
 * with the lock held. */
static void
state_drop_locked(Trainer *self, const char *key, const char *why)
{
  if (self->state_dir == NULL) {
    g_hash_table_remove(self->states, key);
    g_printerr("sieve: warning: dropped the training state kept in memory (%s); the configuration trains from the "
               "start\n", why);
    return;
  }
  g_autofree char *path = state_path(self, key);
  g_unlink(path);
  g_printerr("sieve: warning: dropped the training state %s (%s); the configuration trains from the start\n", path,
             why);
}

static void
state_drop(Trainer *self, const char *key, const char *why)
{
  g_mutex_lock(&self->lock);
  state_drop_locked(self, key, why);
  g_mutex_unlock(&self->lock);
}

/* The state key's training stopped at, below epochs (transfer full)
 * (nullable). */
static State *
state_take(Trainer *self, const char *key, double epochs)
{
  g_mutex_lock(&self->lock);
  State *found = NULL;
  if (self->state_dir == NULL) {
    State *s = g_hash_table_lookup(self->states, key);
    if (s != NULL && s->epochs <= epochs) {
      found = g_new(State, 1);
      *found = (State){s->epochs, g_bytes_ref(s->bytes)};
    }
  } else {
    g_autofree char *path = state_path(self, key);
    g_autofree char *data = NULL;
    gsize len = 0;
    GError *local = NULL;
    double e;
    if (!g_file_get_contents(path, &data, &len, &local)) {
      if (!g_error_matches(local, G_FILE_ERROR, G_FILE_ERROR_NOENT))
        state_drop_locked(self, key, local->message);
      g_error_free(local);
    } else if (!state_file_intact(key, (const guint8 *) data, len)) {
      state_drop_locked(self, key, "it is damaged, or another training's");
    } else {
      memcpy(&e, data, sizeof e);
      if (e <= epochs) {
        found = g_new(State, 1);
        *found = (State){e, g_bytes_new(data + STATE_HEADER, len - STATE_HEADER)};
      }
    }
  }
  g_mutex_unlock(&self->lock);
  return found;
}

/* Keeps key's state at epochs (bytes NULL: none is needed any more, the
 * full fidelity was reached); a file is replaced atomically. */
static void
state_put(Trainer *self, const char *key, double epochs, GBytes *bytes)
{
  g_mutex_lock(&self->lock);
  if (self->state_dir == NULL) {
    if (bytes == NULL)
      g_hash_table_remove(self->states, key);
    else {
      State *s = g_new(State, 1);
      *s = (State){epochs, g_bytes_ref(bytes)};
      g_hash_table_replace(self->states, g_strdup(key), s);
    }
  } else {
    g_autofree char *path = state_path(self, key);
    if (bytes == NULL) {
      g_unlink(path);
    } else {
      gsize len = 0;
      const guint8 *data = g_bytes_get_data(bytes, &len);
      g_autofree guint8 *buf = g_malloc(len + STATE_HEADER);
      memcpy(buf, &epochs, sizeof epochs);
      state_digest(key, data, len, buf + sizeof epochs);
      memcpy(buf + STATE_HEADER, data, len);
      g_mkdir_with_parents(self->state_dir, 0700);
      /* A state that cannot be written costs a retraining later, not a result. */
      g_file_set_contents(path, (const char *) buf, (gssize)(len + STATE_HEADER), NULL);
    }
  }
  g_mutex_unlock(&self->lock);
}

static SieveResult *
train_evaluate(gpointer instance, const SieveCandidate *candidate, GError **error)
{
  Trainer *self = instance;
  SieveResult *result = sieve_result_new();
  GError *local = NULL;
  g_autoptr(SieveGraph) net = sieve_space_build(self->space, sieve_candidate_get_genotype(candidate), &local);
  if (net == NULL) {
    sieve_result_set_failed(result, "%s", local->message);
    g_error_free(local);
    return result;
  }
  SieveTrainOptions o = self->train;
  train_recipe_apply(self->recipe, sieve_candidate_get_genotype(candidate), &o);
  /* The thread split: fixed for the whole run, so that a trial's thread
   * count (and its result) does not depend on what trains beside it. */
  guint workers = sieve_candidate_get_workers(candidate);
  guint all = self->train.threads ? self->train.threads : (guint)g_get_num_processors();
  if (self->threads_per_worker > 0)
    o.threads = self->threads_per_worker;
  else if (workers > 1)
    o.threads = MAX(1, all / workers);
  /* More threads than cores is no error, but OpenMP's threads then wait on
   * each other at every barrier and a small network trains tens of times
   * slower (0.3 epoch: 212 s against 1.5 s with 64 threads on 2 cores):
   * said once, on the CPU. */
  guint cores = (guint)g_get_num_processors();
  guint asked = (o.threads ? o.threads : cores) * MAX(1, workers);
  if (asked > cores && strcmp(self->device, "cuda") != 0 &&
      g_atomic_int_compare_and_exchange(&self->oversubscribed, 0, 1)) {
    /* The way out: fewer threads per training while there are more than
     * one, else fewer workers. */
    guint per = o.threads ? o.threads : cores;
    g_autofree char *advice = per > 1 && cores / MAX(1, workers) >= 1
                                  ? g_strdup_printf("set threads or threads_per_worker to at most %u",
                                                    MAX(1, cores / MAX(1, workers)))
                                  : g_strdup_printf("set workers to at most %u", MAX(1, cores / per));
    g_printerr("sieve: warning: %u training thread(s) at once (%u worker(s) x %u) on %u cores: OpenMP's threads will "
               "wait on each other and each training runs far slower (%s)\n",
               asked, MAX(1, workers), per, cores, advice);
  }
  double fidelity = sieve_candidate_get_fidelity(candidate);
  if (!isnan(fidelity))
    o.epochs = fidelity;
  /* A multi-fidelity optimizer asks for each trial's epochs as its
   * fidelity: a recipe decision of that name then has no effect, though
   * the optimizer goes on searching it.  Said once. */
  if (!isnan(fidelity) && train_recipe_sets(self->recipe, "epochs") &&
      g_atomic_int_compare_and_exchange(&self->epochs_overridden, 0, 1))
    g_printerr("sieve: warning: the recipe decision 'epochs' has no effect: the optimizer asks for each trial's "
               "epochs as its fidelity (remove the decision, or search it with an optimizer without a fidelity)\n");
  if (o.batch_size > self->data.train->n) {
    /* This candidate's recipe asks for it (the configured batch size was
     * checked at create): its trial fails, the study goes on. */
    sieve_result_set_failed(result, "batch size %u needs at least that many training examples, but the training "
                            "split of dataset '%s' has %u", o.batch_size, self->dataset, self->data.train->n);
    return result;
  }
  Reporter reporter = {candidate, 0, self, &o, NULL, FALSE, 0};
  o.progress = on_progress;
  o.progress_data = &reporter;
  o.step_check = on_step;
  o.step_data = &reporter;
  if (self->keep) {
    o.done = on_done;
    o.done_data = &reporter;
  }
  SieveTrainReport r;
  g_autoptr(GBytes) next = NULL;
  g_autofree char *key = self->continuation ? state_key(self, net, sieve_candidate_get_text(candidate), &o) : NULL;
  State *from = key ? state_take(self, key, o.epochs) : NULL;
  /* With continuation every training follows the full fidelity's schedule. */
  double schedule = self->continuation ? MAX(self->fidelity.max, o.epochs) : o.epochs;
  gboolean keep_state = self->continuation && o.epochs < self->fidelity.max;
  gboolean trained = sieve_train_continue(net, self->data.train, self->data.val, self->data.test, &o, schedule,
                                          from ? from->bytes : NULL, keep_state ? &next : NULL, &r, &local);
  if (!trained && from != NULL && g_error_matches(local, SIEVE_ERROR, SIEVE_ERROR_CONFIG)) {
    /* The state was refused before any step (the data and batch size were
     * checked above): dropped, and the configuration trained from the
     * start, as if it had been lost. */
    state_drop(self, key, local->message);
    g_clear_error(&local);
    g_clear_pointer(&from, state_free);
    reporter = (Reporter){candidate, 0, self, &o, NULL, FALSE, 0};
    trained = sieve_train_continue(net, self->data.train, self->data.val, self->data.test, &o, schedule, NULL,
                                   keep_state ? &next : NULL, &r, &local);
  }
  if (from)
    state_free(from);
  /* The last step's value, measured by the final evaluation pass: the
   * pruner may stop the trial there too (as an Optuna loop prunes after
   * its last epoch's report), before its state is kept. */
  gboolean pruned_at_end = FALSE;
  if (trained && !isnan(r.val_acc) && !reporter.stopped)
    pruned_at_end = !sieve_candidate_report_intermediate(candidate, r.steps, o.epochs, r.val_acc);
  /* A training the pruner stopped is never promoted (asha ranks it last,
   * the bracket optimizers never promote it): its state, and the one it
   * continued from, would only fill memory or state_dir. */
  if (trained && self->continuation)
    state_put(self, key, o.epochs, reporter.stopped || pruned_at_end ? NULL : next);
  g_autoptr(GBytes) weights = g_steal_pointer(&reporter.weights);
  if (!trained) {
    if (g_error_matches(local, SIEVE_ERROR, SIEVE_ERROR_DIVERGED) ||
        g_error_matches(local, SIEVE_ERROR, SIEVE_ERROR_RUNTIME)) {
      /* This network's failure, not the study's. */
      sieve_result_set_failed(result, "%s", local->message);
      g_error_free(local);
      return result;
    }
    g_propagate_error(error, local);
    sieve_result_free(result);
    return NULL;
  }
  if (!isnan(r.val_acc))
    sieve_result_set_metric(result, "val_acc", r.val_acc);
  if (!isnan(r.test_acc))
    sieve_result_set_metric(result, "test_acc", r.test_acc);
  sieve_result_set_metric(result, "train_loss", r.train_loss);
  sieve_result_set_metric(result, "train_acc", r.train_acc);
  /* A training the pruner stopped ran r.steps of the steps o.epochs asked for. */
  sieve_result_set_metric(result, "epochs", reporter.stopped ? (double)r.steps / reporter.per_epoch : o.epochs);
  /* The training this evaluation ran, without the steps it continued from:
   * in epochs of steps actually taken, so that a stopped training counts
   * what it ran, not what it was asked for. */
  sieve_result_set_metric(result, "epochs_run",
                          reporter.per_epoch ? (double)(r.steps - r.steps_resumed) / reporter.per_epoch : 0);
  sieve_result_set_metric(result, "params", (double)r.params);
  sieve_result_set_metric(result, "macs", (double)sieve_graph_macs(net));
  sieve_result_set_metric(result, "images_per_s", r.images_per_s);
  sieve_result_set_metric(result, "train_s", r.train_s);
  sieve_result_set_metric(result, "peak_rss_mb", r.peak_rss / 1048576.0);
  sieve_result_set_cost(result, r.wall_s);
  if (weights)
    sieve_result_set_weights(result, weights, self->keep_top);
  return result;
}

static const SieveFidelity *
train_fidelity(gpointer instance)
{
  return &((Trainer *)instance)->fidelity;
}

static const char *const *
train_metrics(gpointer instance)
{
  Trainer *self = instance;
  return (const char *const *) self->metrics->pdata;
}

/* What on_step reports: the validation accuracy, none without a
 * validation split. */
static const char *
train_intermediate_metric(gpointer instance)
{
  return ((Trainer *)instance)->data.val != NULL ? "val_acc" : NULL;
}

static guint
train_workers(gpointer instance)
{
  return ((Trainer *)instance)->per_gpu;
}

static const SieveEvaluatorClass train_class = {
  .create = train_create,
  .destroy = train_destroy,
  .evaluate = train_evaluate,
  /* Concurrent: each training has its own runtime, batcher and threads. */
  .flags = SIEVE_EVALUATOR_CONCURRENT | SIEVE_EVALUATOR_INTERMEDIATE | SIEVE_EVALUATOR_BUILDS,
  .fidelity = train_fidelity,
  .metrics = train_metrics,
  .workers = train_workers,
  .intermediate_metric = train_intermediate_metric,
};

static const SieveComponentInfo train_info = {
  .kind = SIEVE_KIND_EVALUATOR,
  .name = "train",
  .summary = "trains the candidate's network on a dataset (SGD, cosine schedule) and reports its accuracy",
  .options = train_options,
  .klass = &train_class,
  .example = "{plugin: train, dataset: fashion-mnist, train_limit: 6000, epochs: 1}"
             "  # 1x28x28 images: the space needs in_channels: 1, size: 28",
};

static gboolean
train_init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &train_info, error);
}

SIEVE_PLUGIN_DEFINE("train", "0.1.0", "Training evaluator (oneDNN runtime)", "MIT", train_init);
