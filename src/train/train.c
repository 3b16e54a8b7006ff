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

gboolean
sieve_train(const SieveGraph *net, const SieveDataset *train, const SieveDataset *val, const SieveDataset *test,
            const SieveTrainOptions *o, SieveTrainReport *report, GError **error)
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
  g_autoptr(SieveBatcher) batcher = sieve_batcher_new(train, &bo);
  guint per_epoch = sieve_batcher_batches_per_epoch(batcher);
  guint steps = (guint)ceil(o->epochs * per_epoch - 1e-9);
  steps = MAX(steps, 1);
  gsize ex = (gsize)train->channels * train->height * train->width;
  g_autofree float *x = g_new(float, o->batch_size * ex);
  g_autofree gint32 *y = g_new(gint32, o->batch_size);
  g_autofree float *z = g_new(float, (gsize)o->batch_size * k);
  double loss_sum = 0;
  guint loss_n = 0, correct = 0;
  gint64 train_us = 0;
  for (guint t = 0; t < steps; t++) {
    if (sieve_batcher_next(batcher, x, y) == 0 && sieve_batcher_next(batcher, x, y) == 0) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "the batcher over %s gave no batch", train->name);
      return FALSE;
    }
    gint64 s0 = g_get_monotonic_time();
    SieveSgd sgd = {.lr = sieve_train_lr(o, t, steps, per_epoch),
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
    /* Statistics of the last epoch only: what "train loss" means after training. */
    if (steps - t <= per_epoch) {
      loss_sum += loss;
      loss_n++;
      if (!sieve_runtime_read(rt, logits, z, error))
        return FALSE;
      for (guint b = 0; b < o->batch_size; b++)
        correct += argmax(z + (gsize)b * k, k) == (guint)y[b];
    }
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
  /* NAN when stopped before the last epoch began. */
  report->train_loss = loss_n ? loss_sum / loss_n : NAN;
  report->train_acc = loss_n ? (double)correct / ((double)loss_n * o->batch_size) : NAN;
  report->train_s = train_us / 1e6;
  report->images_per_s = (double)steps * o->batch_size / report->train_s;
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
