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

G_BEGIN_DECLS

/* Called after every training step and after each evaluation pass.
 * phase: "train", "val" or "test". */
typedef void (*SieveTrainProgressFunc)(gpointer user_data, const char *phase, double epoch, double epochs,
                                       guint step, guint steps, double loss);

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
  gpointer reserved[4];
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
  gpointer reserved[8];
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
/* val and test may be NULL.  Fills report on success. */
SIEVE_API gboolean sieve_train(const SieveGraph *net, const SieveDataset *train, const SieveDataset *val,
                               const SieveDataset *test, const SieveTrainOptions *options, SieveTrainReport *report,
                               GError **error);
/* The learning rate at step t of steps (warm-up, then cosine or constant). */
SIEVE_API double sieve_train_lr(const SieveTrainOptions *options, guint t, guint steps, guint steps_per_epoch);
/* Peak resident set size of this process in bytes (0 when unknown). */
SIEVE_API guint64 sieve_peak_rss(void);

G_END_DECLS
