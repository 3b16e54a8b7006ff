/* sieve: labelled datasets in memory, their loaders, and a batcher.
 *
 *   g_autoptr(SieveDataset) all = sieve_dataset_open("fashion-mnist", NULL, "train", &error);
 *   SieveDataset *train, *val;
 *   sieve_dataset_split(all, 10000, seed, &train, &val);       // stratified by class
 *   float mean[1], std[1];
 *   sieve_dataset_channel_stats(train, mean, std);
 *   sieve_dataset_normalize(train, mean, std);                 // and val, test with the same numbers
 *   SieveBatcherOptions o = { .batch_size = 128, .shuffle = TRUE, .drop_last = TRUE, .seed = seed };
 *   g_autoptr(SieveBatcher) b = sieve_batcher_new(train, &o);
 *   for (guint k; (k = sieve_batcher_next(b, x, y)) > 0;)    // one epoch
 *     step(x, y, k);
 *
 * Formats: IDX (MNIST, Fashion-MNIST; gzipped or not), the CIFAR-10/100
 * binary batches, and CSV with a header row for tabular data.  Every loader
 * reads the whole set into one float array (NCHW), because the sets sieve
 * trains on fit in memory many times over and a batch is then a memcpy.
 */
#pragma once

#include <glib.h>
#include <sieve/abi.h> /* SIEVE_API */
#include <sieve/rng.h>

G_BEGIN_DECLS

/* An in-memory labelled dataset. Images: NCHW float32 (after load: pixel/255 in [0,1]);
 * tabular: channels = features, height = width = 1. Labels: 0 .. n_classes-1. */
typedef struct {
  guint n;            /* examples */
  guint channels, height, width;
  guint n_classes;
  float *x;           /* n * channels * height * width, owned */
  gint32 *y;          /* n, owned */
  char *name;         /* e.g. "fashion-mnist/train", for messages, owned */
  /* Added after the contract above: the class names when the data has them
   * (CSV string labels, the named image sets): n_classes strings and a NULL,
   * owned; NULL when the classes are only numbers. */
  char **class_names;
} SieveDataset;
SIEVE_ABI_SIZE(SieveDataset, 56);

/* Loaders (transfer full); NULL + GError naming the file and what is wrong
 * (missing, truncated, bad magic, count mismatch, label out of range...).
 * Codes: SIEVE_ERROR_NOT_FOUND for a missing file, SIEVE_ERROR_IO for one
 * that cannot be read, SIEVE_ERROR_PARSE for one whose content is wrong. */

/* IDX images (magic 0x00000803: unsigned bytes, 3 dims) and labels (0x00000801), each
 * .gz or raw (told by content, not by name). Labels must lie in 0..9 (the MNIST family). */
SIEVE_API SieveDataset *sieve_dataset_load_idx(const char *images_path, const char *labels_path, GError **error); /* .gz or raw */
/* The same with another number of classes (EMNIST, KMNIST-49 ...); 0 = the largest label + 1. */
SIEVE_API SieveDataset *sieve_dataset_load_idx_classes(const char *images_path, const char *labels_path,
                                                       guint n_classes, GError **error);
/* CIFAR binary batches, read in the order given: records of 1 label byte (CIFAR-10) or
 * 2 (coarse, fine: CIFAR-100, the fine label is used) and 3072 bytes of R, G, B planes 32x32. */
SIEVE_API SieveDataset *sieve_dataset_load_cifar(const char *const *batch_paths, guint n_paths, guint n_classes /*10|100*/, GError **error);
/* label_column: name from the header, or NULL = last column; CSV with a header row, numeric features;
 * labels are numbers or class names. Errors give file:line:col.
 * Precisely: when every label is an integral number in 0..65535, however written ("3", "+3",
 * "3.0"), the numbers are the class ids (n_classes = largest + 1); when they are all integers
 * and some negative (-1/+1), the classes are numbered by value, smallest first, and class_names
 * holds the first text written for each; when all are text (hex, "nan" and "1st" are text),
 * each distinct text gets the next id in order of first appearance and class_names holds the
 * texts.  Any other number, or numbers mixed with text, is an error.  The file (gzipped or not) is read by
 * sieve/csv.h's reader and follows its rules: RFC 4180 quoting, spaces around fields and
 * blank lines ignored. */
SIEVE_API SieveDataset *sieve_dataset_load_csv(const char *path, const char *label_column, GError **error);

/* Named datasets: "fashion-mnist", "mnist" (dir default /usr/share/datasets/<name>/ or $SIEVE_DATA_DIR/<name>),
 * "cifar10", "cifar100" (dir = root containing cifar-10-batches-bin / cifar-100-binary, or given),
 * "csv:<path>" (split "train" = whole file). split is "train" or "test". dir may be NULL = default.
 * Unknown name: error listing the known ones.
 * $SIEVE_DATA_DIR, when set, wins over /usr/share/datasets.  For cifar the dir may also be the
 * batches folder itself.  A relative csv path is taken relative to dir when dir is given. */
SIEVE_API SieveDataset *sieve_dataset_open(const char *name, const char *dir, const char *split, GError **error);

/* An empty dataset of the given shape: x and y zeroed, no class names. (transfer full) */
SIEVE_API SieveDataset *sieve_dataset_new(guint n, guint channels, guint height, guint width, guint n_classes,
                                          const char *name);
SIEVE_API void sieve_dataset_free(SieveDataset *ds);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveDataset, sieve_dataset_free)

/* Floats per example: channels * height * width. */
static inline gsize
sieve_dataset_example_size(const SieveDataset *ds)
{
  return (gsize) ds->channels * ds->height * ds->width;
}

/* Take a subset (copies), e.g. for train/validation splits and for using only k examples. (transfer full)
 * Indices may repeat; each must be < ds->n. */
SIEVE_API SieveDataset *sieve_dataset_subset(const SieveDataset *ds, const guint *indices, guint n);
/* Seeded split of ds into two: the first gets n - n_second examples. Deterministic for the seed
 * (stratified is a nice-to-have). (transfer full) both.
 * It is stratified: each class goes to the second part in proportion to its size (largest
 * remainders settle the rounding), so a validation set has the training set's class mix.
 * Both parts keep the examples in their original relative order. */
SIEVE_API void sieve_dataset_split(const SieveDataset *ds, guint n_second, guint64 seed,
                                   SieveDataset **first, SieveDataset **second);

/* Per-channel mean and std (population) of ds; mean/std arrays of ds->channels. */
SIEVE_API void sieve_dataset_channel_stats(const SieveDataset *ds, float *mean, float *std);
/* x = (x - mean[c]) / std[c] in place. std 0 -> left at x - mean. */
SIEVE_API void sieve_dataset_normalize(SieveDataset *ds, const float *mean, const float *std);

/* Batches over a dataset: seeded shuffling per epoch, optional augmentation (images only).
 * Augmentation: random crop with zero padding `crop_pad` pixels (0 = off), horizontal flip with p=0.5.
 * Deterministic for the seed. The batcher does not own ds (ds must outlive it).
 * Crop then flip, as torchvision's RandomCrop(padding) + RandomHorizontalFlip; asking for either
 * on tabular data (height = width = 1) is a caller error. */
typedef struct {
  guint batch_size;
  gboolean shuffle;
  gboolean drop_last;     /* training: TRUE; evaluation: FALSE */
  guint crop_pad;
  gboolean flip;
  guint64 seed;
  gpointer reserved[4];
} SieveBatcherOptions;
SIEVE_ABI_SIZE(SieveBatcherOptions, 64);
typedef struct _SieveBatcher SieveBatcher;
SIEVE_API SieveBatcher *sieve_batcher_new(const SieveDataset *ds, const SieveBatcherOptions *options); /* (transfer full) */
SIEVE_API void sieve_batcher_free(SieveBatcher *b);
/* Fills x (batch_size*C*H*W floats) and y (batch_size labels) with the next batch; returns the number of
 * examples written (< batch_size only for the last batch when !drop_last), 0 at the end of an epoch —
 * the next call after 0 starts a new epoch (reshuffled with the next seed-derived permutation). */
SIEVE_API guint sieve_batcher_next(SieveBatcher *b, float *x, gint32 *y);
SIEVE_API guint sieve_batcher_batches_per_epoch(const SieveBatcher *b);
SIEVE_API void sieve_batcher_reset(SieveBatcher *b); /* back to the start of the current epoch order */
/* The epoch the batcher is in, counting from 1; it moves on at the call to next after the 0 that
 * ended the epoch. Added after the contract. */
SIEVE_API guint sieve_batcher_get_epoch(const SieveBatcher *b);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveBatcher, sieve_batcher_free)

G_END_DECLS
