/* sieve: training a network on a dataset, the loop a PyTorch user would write.
 *
 *   SieveTrainOptions o;
 *   sieve_train_options_init(&o);   // batch 128, lr 0.1, momentum 0.9 (Nesterov), wd 5e-4, cosine
 *   o.epochs = 1;
 *   SieveTrainReport r;
 *   if (!sieve_train(net, train, val, test, &o, &r, error)) ...
 *
 * net ends in logits (as spaces build it); the trainer appends the softmax
 * cross-entropy.  A NaN or infinite loss stops training with
 * SIEVE_ERROR_DIVERGED and the step it happened at, so an evaluator can fail
 * that trial and let the study go on.
 */
#pragma once

#include <glib.h>
#include <sieve/abi.h>
#include <sieve/data.h>
#include <sieve/graph.h>
#include <sieve/runtime.h>

G_BEGIN_DECLS

/* Called after every training step and after each evaluation pass.
 * phase: "train", "val" or "test". */
typedef void (*SieveTrainProgressFunc)(gpointer user_data, const char *phase, double epoch, double epochs,
                                       guint step, guint steps, double loss);
/* Called once, after training and the evaluation passes, with the trained
 * runtime (transfer none: valid during the call only) and the network it
 * was compiled from (net with the loss appended): what an evaluator that
 * keeps a trial's weights reads them from.  Returning FALSE (with error
 * set) fails the training. */
typedef gboolean (*SieveTrainDoneFunc)(gpointer user_data, SieveRuntime *runtime, const SieveGraph *graph,
                                       GError **error);

/* Called after every training step (ABI 2.2) with the runtime being trained
 * (transfer none), its logits node and their count, the step just done (1-based), the
 * steps in all and per epoch: an evaluator measures what it needs there
 * (sieve_train_accuracy on its validation set) and reports it.  Setting
 * *stop ends training after this step (the final evaluation passes still
 * run); returning FALSE (with error set) fails the training. */
typedef gboolean (*SieveTrainStepFunc)(gpointer user_data, SieveRuntime *runtime, guint logits, guint classes,
                                       guint step, guint steps, guint steps_per_epoch, gboolean *stop,
                                       GError **error);

typedef struct {
  const char *device;     /* runtime device, NULL = "cpu" */
  guint threads;          /* 0 = every core */
  guint batch_size;
  double epochs;          /* fractional allowed: steps = ceil(epochs * batches per epoch) */
  double lr;
  double momentum;
  gboolean nesterov;
  double weight_decay;
  double warmup_epochs;   /* linear warm-up from 0, then cosine to 0 */
  gboolean cosine;        /* FALSE: constant learning rate after warm-up */
  double label_smoothing;
  guint crop_pad;         /* random-crop augmentation padding (0: off) */
  gboolean flip;          /* random horizontal flips */
  guint64 seed;           /* initialisation, shuffling and augmentation */
  SieveTrainProgressFunc progress;
  gpointer progress_data;
  /* Added in the reserved room (the struct keeps its size). */
  SieveTrainDoneFunc done; /* may be NULL */
  gpointer done_data;
  SieveTrainStepFunc step_check; /* may be NULL (ABI 2.2) */
  gpointer step_data;
} SieveTrainOptions;
SIEVE_ABI_SIZE(SieveTrainOptions, 144);

typedef struct {
  double train_loss;      /* mean loss over the last epoch's steps (or all, if less than one) */
  double train_acc;       /* on the same steps */
  double val_acc;         /* NAN without a validation set */
  double test_acc;        /* NAN without a test set */
  double images_per_s;    /* training throughput (forward + backward + update) */
  double train_s;         /* seconds spent in training steps */
  double wall_s;          /* seconds from compile to the last evaluation */
  double compile_s;
  guint steps;
  guint64 params;
  guint64 peak_rss;       /* bytes: the process's peak resident set so far */
  guint64 runtime_bytes;  /* bytes the runtime holds */
  guint64 steps_resumed;  /* steps taken over from a continued state, not run again (ABI 2.2) */
  gpointer reserved[7];
} SieveTrainReport;
SIEVE_ABI_SIZE(SieveTrainReport, 160);

SIEVE_API void sieve_train_options_init(SieveTrainOptions *options);

/* The data of one training setup: train and validation split from the
 * training set (seeded), the test set, all normalised per channel with the
 * training split's statistics. */
typedef struct {
  SieveDataset *train, *val, *test; /* owned; val/test NULL when not asked for */
} SieveTrainData;
SIEVE_ABI_SIZE(SieveTrainData, 24);

/* dataset, dir: as sieve_dataset_open (dir NULL = default location).
 * validation: examples held out of the training set (0 = none).
 * train_limit: use at most this many training examples (0 = all).
 * Clear out with sieve_train_data_clear. */
SIEVE_API gboolean sieve_train_data_load(const char *dataset, const char *dir, guint validation, guint train_limit,
                                         gboolean with_test, gboolean normalize, guint64 seed, SieveTrainData *out,
                                         GError **error);
SIEVE_API void sieve_train_data_clear(SieveTrainData *data);
/* Normalises every split of data per channel with the training split's
 * mean and deviation, and gives them (mean, std: channels floats each, may
 * be NULL): what a saved network needs to see its inputs as in training.
 * sieve_train_data_load does this when asked to normalise. */
SIEVE_API void sieve_train_data_normalize(SieveTrainData *data, float *mean, float *std);
/* (transfer full) the runtime sieve_train trains net in (net with the
 * softmax cross-entropy appended, options' batch size, threads and device,
 * backward compiled): an evaluation in it gives the very numbers training
 * reported.  *logits: the node holding the logits. */
SIEVE_API SieveRuntime *sieve_train_compile(const SieveGraph *net, const SieveTrainOptions *options, guint *logits,
                                            GError **error);
/* Accuracy over every example of ds in eval mode (classes: the logits
 * node's channels), batch by batch (the last
 * batch padded with zeros), as sieve_train reports it. */
SIEVE_API gboolean sieve_train_accuracy(SieveRuntime *runtime, guint logits, guint classes, const SieveDataset *ds,
                                        double *out, GError **error);
/* val and test may be NULL.  Fills report on success. */
SIEVE_API gboolean sieve_train(const SieveGraph *net, const SieveDataset *train, const SieveDataset *val,
                               const SieveDataset *test, const SieveTrainOptions *options, SieveTrainReport *report,
                               GError **error);
/* The learning rate at step t of steps (warm-up, then cosine or constant). */
/* Continued training (ABI 2.2): a training of options->epochs whose
 * learning-rate schedule is that of schedule_epochs (>= epochs; the
 * multi-fidelity rungs' choice: the full fidelity's schedule throughout, so
 * that every rung is a prefix of the full training).  With from (nullable),
 * a state an earlier call of the same network, options, data and schedule
 * left after fewer steps, it starts where that one stopped: weights, SGD
 * momentum buffers, batch norm statistics, the data order and augmentation
 * draws (replayed from the seed), the last epoch's loss statistics.  With
 * state (nullable) it returns the state it ends in (transfer full).  On
 * one thread count the result is bit for bit that of one uninterrupted
 * call to the same epochs: tests/train checks it.  A state of another
 * network, schedule or seed is refused (SIEVE_ERROR_CONFIG). */
SIEVE_API gboolean sieve_train_continue(const SieveGraph *net, const SieveDataset *train, const SieveDataset *val,
                                        const SieveDataset *test, const SieveTrainOptions *options,
                                        double schedule_epochs, GBytes *from, GBytes **state,
                                        SieveTrainReport *report, GError **error);
SIEVE_API double sieve_train_lr(const SieveTrainOptions *options, guint t, guint steps, guint steps_per_epoch);
/* Peak resident set size of this process in bytes (0 when unknown). */
SIEVE_API guint64 sieve_peak_rss(void);

G_END_DECLS
