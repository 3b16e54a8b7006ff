/* The training loop: SGD with momentum over seeded batches, a warm-up then
 * cosine learning rate (Loshchilov & Hutter, "SGDR", 2017, without
 * restarts), evaluation with batch norm's running statistics. */
#include <math.h>
#include <string.h>
#include <sys/resource.h>

#include <sieve/runtime.h>
#include <sieve/train.h>

void
sieve_train_options_init(SieveTrainOptions *o)
{
  /* The recipe of the NAS-Bench-201 paper and the PyTorch peer. */
  *o = (SieveTrainOptions){
    .batch_size = 128,
    .epochs = 1,
    .lr = 0.1,
    .momentum = 0.9,
    .nesterov = TRUE,
    .weight_decay = 5e-4,
    .cosine = TRUE,
  };
}

void
sieve_train_data_clear(SieveTrainData *d)
{
  g_clear_pointer(&d->train, sieve_dataset_free);
  g_clear_pointer(&d->val, sieve_dataset_free);
  g_clear_pointer(&d->test, sieve_dataset_free);
}

gboolean
sieve_train_data_load(const char *dataset, const char *dir, guint validation, guint train_limit, gboolean with_test,
                      gboolean normalize, guint64 seed, SieveTrainData *out, GError **error)
{
  *out = (SieveTrainData){0};
  g_autoptr(SieveDataset) all = sieve_dataset_open(dataset, dir, "train", error);
  if (all == NULL)
    return FALSE;
  if (validation >= all->n) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "validation %u must be smaller than the %u training examples of %s",
                validation, all->n, all->name);
    return FALSE;
  }
  if (validation > 0) {
    sieve_dataset_split(all, validation, seed, &out->train, &out->val);
  } else {
    out->train = g_steal_pointer(&all);
  }
  if (train_limit > 0 && train_limit < out->train->n) {
    /* A seeded, class-stratified subset: the rest of the split is dropped. */
    SieveDataset *keep = NULL, *drop = NULL;
    sieve_dataset_split(out->train, out->train->n - train_limit, seed + 1, &keep, &drop);
    sieve_dataset_free(drop);
    sieve_dataset_free(out->train);
    out->train = keep;
  }
  if (with_test && !(out->test = sieve_dataset_open(dataset, dir, "test", error))) {
    sieve_train_data_clear(out);
    return FALSE;
  }
  if (normalize)
    sieve_train_data_normalize(out, NULL, NULL);
  return TRUE;
}

void
sieve_train_data_normalize(SieveTrainData *d, float *mean_out, float *std_out)
{
  g_return_if_fail(d != NULL && d->train != NULL);
  guint C = d->train->channels;
  g_autofree float *mean = g_new(float, C);
  g_autofree float *std = g_new(float, C);
  sieve_dataset_channel_stats(d->train, mean, std);
  sieve_dataset_normalize(d->train, mean, std);
  if (d->val)
    sieve_dataset_normalize(d->val, mean, std);
  if (d->test)
    sieve_dataset_normalize(d->test, mean, std);
  if (mean_out)
    memcpy(mean_out, mean, C * sizeof(float));
  if (std_out)
    memcpy(std_out, std, C * sizeof(float));
}

guint64
sieve_peak_rss(void)
{
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0)
    return 0;
  return (guint64)ru.ru_maxrss * 1024; /* Linux reports kilobytes */
}

double
sieve_train_lr(const SieveTrainOptions *o, guint t, guint steps, guint steps_per_epoch)
{
  guint warm = (guint)ceil(o->warmup_epochs * steps_per_epoch);
  if (warm > steps)
    warm = steps;
  if (t < warm)
    return o->lr * (t + 1) / warm;
  if (!o->cosine || steps <= warm)
    return o->lr;
  double progress = (double)(t - warm) / (steps - warm);
  return o->lr * 0.5 * (1 + cos(G_PI * progress));
}

static guint
argmax(const float *row, guint k)
{
  guint best = 0;
  for (guint j = 1; j < k; j++)
    if (row[j] > row[best])
      best = j;
  return best;
}

/* Accuracy over a whole dataset in eval mode; the last partial batch is
 * padded with zeros (running statistics make examples independent). */
gboolean
sieve_train_accuracy(SieveRuntime *rt, guint logits, guint k, const SieveDataset *ds, double *out, GError **error)
{
  guint B = sieve_runtime_batch(rt);
  gsize ex = (gsize)ds->channels * ds->height * ds->width;
  g_autofree float *x = g_new(float, B * ex);
  g_autofree float *z = g_new(float, (gsize)B * k);
  guint correct = 0;
  for (guint start = 0; start < ds->n; start += B) {
    guint n = MIN(B, ds->n - start);
    memcpy(x, ds->x + start * ex, n * ex * sizeof(float));
    if (n < B)
      memset(x + n * ex, 0, (B - n) * ex * sizeof(float));
    if (!sieve_runtime_forward(rt, x, NULL, SIEVE_MODE_EVAL, error) || !sieve_runtime_read(rt, logits, z, error))
      return FALSE;
    for (guint b = 0; b < n; b++)
      correct += argmax(z + (gsize)b * k, k) == (guint)ds->y[start + b];
  }
  *out = ds->n ? (double)correct / ds->n : NAN;
  return TRUE;
}

/* Accuracy as sieve_train reports it, with its progress report. */
static gboolean
accuracy(SieveRuntime *rt, guint logits, guint k, const SieveDataset *ds, const SieveTrainOptions *o,
         const char *phase, double *out, GError **error)
{
  if (!sieve_train_accuracy(rt, logits, k, ds, out, error))
    return FALSE;
  if (o->progress)
    o->progress(o->progress_data, phase, o->epochs, o->epochs, 0, 0, *out);
  return TRUE;
}

static gboolean
check_data(const SieveGraph *net, const SieveDataset *ds, const char *what, GError **error)
{
  if (ds == NULL)
    return TRUE;
  const SieveGraphNode *in = sieve_graph_node(net, sieve_graph_input_node(net));
  const SieveGraphNode *out = sieve_graph_node(net, sieve_graph_output(net));
  if (in->shape.c != ds->channels || in->shape.h != ds->height || in->shape.w != ds->width) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                "the %s data (%s) is %ux%ux%u per example but the network takes %ux%ux%u", what, ds->name,
                ds->channels, ds->height, ds->width, in->shape.c, in->shape.h, in->shape.w);
    return FALSE;
  }
  if (out->shape.h != 1 || out->shape.w != 1 || out->shape.c < ds->n_classes) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                "the network ends in %ux%ux%u outputs but the %s data (%s) has %u classes", out->shape.c,
                out->shape.h, out->shape.w, what, ds->name, ds->n_classes);
    return FALSE;
  }
  return TRUE;
}

static SieveRuntime *
compile(const SieveGraph *with_loss, const SieveTrainOptions *o, GError **error)
{
  SieveRuntimeOptions ro = {
    .device = o->device, .batch = o->batch_size, .threads = o->threads, .backward = TRUE, .seed = o->seed};
  return sieve_runtime_new(with_loss, &ro, error);
}

SieveRuntime *
sieve_train_compile(const SieveGraph *net, const SieveTrainOptions *o, guint *logits, GError **error)
{
  g_return_val_if_fail(net != NULL && o != NULL, NULL);
  g_autoptr(SieveGraph) g = sieve_graph_copy(net);
  if (logits)
    *logits = sieve_graph_output(g);
  if (!sieve_graph_add_loss(g, o->label_smoothing, error))
    return NULL;
  return compile(g, o, error);
}

/* ---- continued trainings ---------------------------------------------- */

/* A state: (t seed, u steps done, u steps of the schedule, u steps per
 * epoch, ad per-step losses, au per-step correct counts, aay parameters,
 * aay velocities, a(uayay) batch norm node, mean, var).  Floats are kept as
 * their bytes: a state serves the machine that wrote it. */
#define STATE_TYPE "(tuuuadauaayaaya(uayay))"

static GVariant *
floats_variant(const float *v, gsize n)
{
  return g_variant_new_fixed_array(G_VARIANT_TYPE_BYTE, v, n * sizeof(float), 1);
}

static gboolean
floats_from(GVariant *v, float *out, gsize n)
{
  gsize len = 0;
  const guint8 *data = g_variant_get_fixed_array(v, &len, 1);
  if (len != n * sizeof(float))
    return FALSE;
  memcpy(out, data, len);
  return TRUE;
}

static gboolean
is_batch_norm(const SieveGraph *g, guint i)
{
  return sieve_graph_node(g, i)->kind == SIEVE_OP_BATCH_NORM;
}

static GBytes *
state_save(SieveRuntime *rt, const SieveGraph *g, guint64 seed, guint done, guint total, guint per_epoch,
           GArray *losses, GArray *corrects, GError **error)
{
  GVariantBuilder params, velocities, stats;
  g_variant_builder_init(&params, G_VARIANT_TYPE("aay"));
  g_variant_builder_init(&velocities, G_VARIANT_TYPE("aay"));
  g_variant_builder_init(&stats, G_VARIANT_TYPE("a(uayay)"));
  for (guint i = 0; i < sieve_runtime_n_params(rt); i++) {
    gsize n = sieve_runtime_param_info(rt, i)->size;
    g_autofree float *buf = g_new(float, n);
    if (!sieve_runtime_get_param(rt, i, buf, error))
      goto fail;
    g_variant_builder_add_value(&params, floats_variant(buf, n));
    if (!sieve_runtime_get_velocity(rt, i, buf, error))
      goto fail;
    g_variant_builder_add_value(&velocities, floats_variant(buf, n));
  }
  for (guint i = 0; i < sieve_graph_n_nodes(g); i++) {
    if (!is_batch_norm(g, i))
      continue;
    guint c = sieve_graph_node(g, i)->shape.c;
    g_autofree float *mean = g_new(float, c);
    g_autofree float *var = g_new(float, c);
    if (!sieve_runtime_get_running_stats(rt, i, mean, var, error))
      goto fail;
    g_variant_builder_add(&stats, "(u@ay@ay)", i, floats_variant(mean, c), floats_variant(var, c));
  }
  GVariant *v = g_variant_new("(tuuu@ad@auaayaaya(uayay))", seed, done, total, per_epoch,
                              g_variant_new_fixed_array(G_VARIANT_TYPE_DOUBLE, losses->data, losses->len, sizeof(double)),
                              g_variant_new_fixed_array(G_VARIANT_TYPE_UINT32, corrects->data, corrects->len,
                                                        sizeof(guint32)),
                              &params, &velocities, &stats);
  g_variant_ref_sink(v);
  GBytes *bytes = g_variant_get_data_as_bytes(v);
  g_variant_unref(v);
  return bytes;
fail:
  g_variant_builder_clear(&params);
  g_variant_builder_clear(&velocities);
  g_variant_builder_clear(&stats);
  return NULL;
}

/* Loads a state into the runtime; *done: its steps. */
static gboolean
state_load(SieveRuntime *rt, const SieveGraph *g, GBytes *from, guint64 seed, guint total, guint per_epoch,
           guint *done, GArray *losses, GArray *corrects, GError **error)
{
  g_autoptr(GVariant) v = g_variant_new_from_bytes(G_VARIANT_TYPE(STATE_TYPE), from, FALSE);
  if (!g_variant_is_normal_form(v)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "a training state to continue from is damaged");
    return FALSE;
  }
  guint64 s_seed;
  guint s_total, s_per_epoch;
  g_autoptr(GVariant) l = NULL, c = NULL, params = NULL, velocities = NULL, stats = NULL;
  g_variant_get(v, "(tuuu@ad@au@aay@aay@a(uayay))", &s_seed, done, &s_total, &s_per_epoch, &l, &c, &params,
                &velocities, &stats);
  guint n_params = sieve_runtime_n_params(rt);
  if (s_seed != seed || s_total != total || s_per_epoch != per_epoch || g_variant_n_children(params) != n_params ||
      g_variant_n_children(velocities) != n_params || *done > total) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                "the training state to continue from belongs to another training (seed %" G_GUINT64_FORMAT
                ", %u scheduled steps of %u per epoch, %" G_GSIZE_FORMAT " parameters; this one: seed %" G_GUINT64_FORMAT
                ", %u of %u, %u)",
                s_seed, s_total, s_per_epoch, g_variant_n_children(params), seed, total, per_epoch, n_params);
    return FALSE;
  }
  gsize n_l = 0, n_c = 0;
  const double *lv = g_variant_get_fixed_array(l, &n_l, sizeof(double));
  const guint32 *cv = g_variant_get_fixed_array(c, &n_c, sizeof(guint32));
  if (n_l != *done || n_c != *done) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "a training state to continue from is damaged");
    return FALSE;
  }
  g_array_append_vals(losses, lv, n_l);
  g_array_append_vals(corrects, cv, n_c);
  for (guint i = 0; i < n_params; i++) {
    gsize n = sieve_runtime_param_info(rt, i)->size;
    g_autofree float *buf = g_new(float, n);
    g_autoptr(GVariant) p = g_variant_get_child_value(params, i);
    g_autoptr(GVariant) q = g_variant_get_child_value(velocities, i);
    if (!floats_from(p, buf, n) || !sieve_runtime_set_param(rt, i, buf, error) || !floats_from(q, buf, n) ||
        !sieve_runtime_set_velocity(rt, i, buf, error)) {
      if (error && !*error)
        g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "the training state's parameter %u has another size", i);
      return FALSE;
    }
  }
  for (gsize k = 0; k < g_variant_n_children(stats); k++) {
    guint node;
    g_autoptr(GVariant) mv = NULL, vv = NULL;
    g_variant_get_child(stats, k, "(u@ay@ay)", &node, &mv, &vv);
    if (node >= sieve_graph_n_nodes(g) || !is_batch_norm(g, node)) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "the training state names node %u, not a batch norm", node);
      return FALSE;
    }
    guint ch = sieve_graph_node(g, node)->shape.c;
    g_autofree float *mean = g_new(float, ch);
    g_autofree float *var = g_new(float, ch);
    if (!floats_from(mv, mean, ch) || !floats_from(vv, var, ch)) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "the training state's node %u has another width", node);
      return FALSE;
    }
    if (!sieve_runtime_set_running_stats(rt, node, mean, var, error))
      return FALSE;
  }
  return TRUE;
}

gboolean
sieve_train(const SieveGraph *net, const SieveDataset *train, const SieveDataset *val, const SieveDataset *test,
            const SieveTrainOptions *o, SieveTrainReport *report, GError **error)
{
  return sieve_train_continue(net, train, val, test, o, o->epochs, NULL, NULL, report, error);
}

gboolean
sieve_train_continue(const SieveGraph *net, const SieveDataset *train, const SieveDataset *val,
                     const SieveDataset *test, const SieveTrainOptions *o, double schedule_epochs, GBytes *from,
                     GBytes **state, SieveTrainReport *report, GError **error)
{
  *report = (SieveTrainReport){.val_acc = NAN, .test_acc = NAN, .train_loss = NAN, .train_acc = NAN};
  if (!check_data(net, train, "training", error) || !check_data(net, val, "validation", error) ||
      !check_data(net, test, "test", error))
    return FALSE;
  if (o->batch_size == 0 || train->n < o->batch_size) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "batch size %u needs at least that many training examples (%s has %u)",
                o->batch_size, train->name, train->n);
    return FALSE;
  }
  if (!(o->epochs > 0)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "epochs must be positive, got %g", o->epochs);
    return FALSE;
  }
  gint64 t0 = g_get_monotonic_time();
  g_autoptr(SieveGraph) g = sieve_graph_copy(net);
  guint logits = sieve_graph_output(g);
  guint k = sieve_graph_node(g, logits)->shape.c;
  if (!sieve_graph_add_loss(g, o->label_smoothing, error))
    return FALSE;
  g_autoptr(SieveRuntime) rt = compile(g, o, error);
  if (rt == NULL)
    return FALSE;
  report->compile_s = (g_get_monotonic_time() - t0) / 1e6;
  report->params = sieve_graph_params(net);
  report->runtime_bytes = sieve_runtime_memory_bytes(rt);

  SieveBatcherOptions bo = {.batch_size = o->batch_size,
                            .shuffle = TRUE,
                            .drop_last = TRUE,
                            .crop_pad = o->crop_pad,
                            .flip = o->flip,
                            .seed = o->seed ^ 0x9e3779b97f4a7c15ull};
  /* The batcher's precondition, as an error: a recipe may set these per trial. */
  if ((o->crop_pad > 0 || o->flip) && train->height <= 1 && train->width <= 1) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                "augmentation needs images: crop_pad and flip crop and mirror pictures, but the examples are "
                "%ux%ux%u (tabular data); set crop_pad: 0 and flip: false",
                train->channels, train->height, train->width);
    return FALSE;
  }
  g_autoptr(SieveBatcher) batcher = sieve_batcher_new(train, &bo);
  guint per_epoch = sieve_batcher_batches_per_epoch(batcher);
  guint steps = (guint)ceil(o->epochs * per_epoch - 1e-9);
  steps = MAX(steps, 1);
  if (!(schedule_epochs >= o->epochs)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "the schedule's %g epochs are fewer than the %g trained",
                schedule_epochs, o->epochs);
    return FALSE;
  }
  /* The learning rate follows the schedule of this many steps (ours when
   * schedule_epochs is epochs). */
  guint scheduled = MAX((guint)ceil(schedule_epochs * per_epoch - 1e-9), steps);
  g_autoptr(GArray) losses = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) corrects = g_array_new(FALSE, FALSE, sizeof(guint32));
  guint start = 0;
  if (from != NULL && !state_load(rt, g, from, o->seed, scheduled, per_epoch, &start, losses, corrects, error))
    return FALSE;
  if (start > steps) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                "the training state to continue from is %u steps in, past the %u steps asked for", start, steps);
    return FALSE;
  }
  report->steps_resumed = start;
  gsize ex = (gsize)train->channels * train->height * train->width;
  g_autofree float *x = g_new(float, o->batch_size * ex);
  g_autofree gint32 *y = g_new(gint32, o->batch_size);
  g_autofree float *z = g_new(float, (gsize)o->batch_size * k);
  gint64 train_us = 0;
  /* The data order and augmentation draws of the steps already done,
   * replayed (cheap next to training them): the batcher is seeded. */
  for (guint t = 0; t < start; t++)
    if (sieve_batcher_next(batcher, x, y) == 0)
      sieve_batcher_next(batcher, x, y);
  for (guint t = start; t < steps; t++) {
    if (sieve_batcher_next(batcher, x, y) == 0 && sieve_batcher_next(batcher, x, y) == 0) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "the batcher over %s gave no batch", train->name);
      return FALSE;
    }
    gint64 s0 = g_get_monotonic_time();
    SieveSgd sgd = {.lr = sieve_train_lr(o, t, scheduled, per_epoch),
                    .momentum = o->momentum,
                    .nesterov = o->nesterov,
                    .weight_decay = o->weight_decay};
    if (!sieve_runtime_forward(rt, x, y, SIEVE_MODE_TRAIN, error))
      return FALSE;
    double loss = sieve_runtime_loss(rt);
    if (!isfinite(loss)) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_DIVERGED, "training diverged: loss %g at step %u of %u (lr %g)",
                  loss, t + 1, steps, sgd.lr);
      return FALSE;
    }
    if (!sieve_runtime_backward(rt, NULL, error) || !sieve_runtime_sgd_step(rt, &sgd, error))
      return FALSE;
    train_us += g_get_monotonic_time() - s0;
    /* Every step's loss and hits: the last epoch's make the statistics
     * (what "train loss" means after training), and a continued training
     * needs those of the steps before it. */
    if (!sieve_runtime_read(rt, logits, z, error))
      return FALSE;
    guint32 hits = 0;
    for (guint b = 0; b < o->batch_size; b++)
      hits += argmax(z + (gsize)b * k, k) == (guint)y[b];
    g_array_append_val(losses, loss);
    g_array_append_val(corrects, hits);
    if (o->progress)
      o->progress(o->progress_data, "train", (double)(t + 1) / per_epoch, o->epochs, t + 1, steps, loss);
    gboolean stop = FALSE;
    if (o->step_check && !o->step_check(o->step_data, rt, logits, k, t + 1, steps, per_epoch, &stop, error))
      return FALSE;
    if (stop) {
      steps = t + 1; /* stopped early: the report says how far it went */
      break;
    }
  }
  report->steps = steps;
  double loss_sum = 0;
  guint loss_n = 0;
  guint64 correct = 0;
  for (guint t = steps > per_epoch ? steps - per_epoch : 0; t < steps; t++) {
    loss_sum += g_array_index(losses, double, t);
    correct += g_array_index(corrects, guint32, t);
    loss_n++;
  }
  report->train_loss = loss_sum / loss_n;
  report->train_acc = (double)correct / ((double)loss_n * o->batch_size);
  if (state != NULL && (*state = state_save(rt, g, o->seed, steps, scheduled, per_epoch, losses, corrects, error)) == NULL)
    return FALSE;
  report->train_s = train_us / 1e6;
  report->images_per_s = (double)(steps - start) * o->batch_size / report->train_s;
  if (val && !accuracy(rt, logits, k, val, o, "val", &report->val_acc, error))
    return FALSE;
  if (test && !accuracy(rt, logits, k, test, o, "test", &report->test_acc, error))
    return FALSE;
  if (o->done && !o->done(o->done_data, rt, g, error))
    return FALSE;
  report->wall_s = (g_get_monotonic_time() - t0) / 1e6;
  report->peak_rss = sieve_peak_rss();
  return TRUE;
}
