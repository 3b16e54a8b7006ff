/* sieve: batches over a dataset, shuffled per epoch, optionally augmented.
 *
 * Determinism: one generator seeded from options->seed draws, at the start
 * of every epoch, that epoch's permutation (Fisher-Yates, Durstenfeld 1964,
 * over the previous epoch's order, which is as uniform as shuffling from the
 * identity) and then the seed of the epoch's augmentation stream.  The
 * augmentation stream is saved at the start of the epoch so that reset
 * replays the epoch exactly, crops and flips included.  Per example, the
 * augmentation draws the crop's top, its left (when crop_pad > 0), then the
 * flip (when flip is on).
 *
 * Augmentation follows torchvision's RandomCrop(size, padding=p) then
 * RandomHorizontalFlip(0.5), the recipe of the ResNet papers for CIFAR
 * (He et al., "Deep Residual Learning for Image Recognition", 2016, sec. 4.2):
 * out[i][j] = in[i + top - p][j' + left - p] with j' = W-1-j when flipped,
 * zero where that falls outside the image.
 */
#include <string.h>

#include "data/data-private.h"

struct _SieveBatcher {
  const SieveDataset *ds;
  SieveBatcherOptions options;
  guint *order;      /* this epoch's order of the examples */
  guint pos;         /* next position in order */
  guint epoch;       /* 1-based */
  gboolean ended;    /* next() returned 0: the next call starts an epoch */
  SieveRng rng;      /* permutations and augmentation seeds */
  SieveRng aug_start; /* the augmentation stream at the start of this epoch */
  SieveRng aug;
};

static void
start_epoch(SieveBatcher *b)
{
  b->epoch++;
  guint n = b->ds->n;
  if (b->options.shuffle)
    for (guint i = n; i > 1; i--) {
      guint j = (guint) sieve_rng_below(&b->rng, i);
      guint t = b->order[i - 1];
      b->order[i - 1] = b->order[j];
      b->order[j] = t;
    }
  sieve_rng_split(&b->rng, &b->aug_start);
  b->aug = b->aug_start;
  b->pos = 0;
  b->ended = FALSE;
}

SieveBatcher *
sieve_batcher_new(const SieveDataset *ds, const SieveBatcherOptions *options)
{
  g_return_val_if_fail(ds != NULL && options != NULL, NULL);
  g_return_val_if_fail(options->batch_size > 0, NULL);
  /* Crops and flips of a 1x1 "image" would only zero or keep tabular rows. */
  g_return_val_if_fail((options->crop_pad == 0 && !options->flip) || ds->height > 1 || ds->width > 1, NULL);
  SieveBatcher *b = g_new0(SieveBatcher, 1);
  b->ds = ds;
  b->options = *options;
  b->order = g_new(guint, MAX(ds->n, 1));
  for (guint i = 0; i < ds->n; i++)
    b->order[i] = i;
  sieve_rng_seed(&b->rng, options->seed);
  start_epoch(b);
  return b;
}

void
sieve_batcher_free(SieveBatcher *b)
{
  if (b == NULL)
    return;
  g_free(b->order);
  g_free(b);
}

guint
sieve_batcher_batches_per_epoch(const SieveBatcher *b)
{
  g_return_val_if_fail(b != NULL, 0);
  guint n = b->ds->n, size = b->options.batch_size;
  return b->options.drop_last ? n / size : n / size + (n % size != 0);
}

guint
sieve_batcher_get_epoch(const SieveBatcher *b)
{
  g_return_val_if_fail(b != NULL, 0);
  return b->epoch;
}

void
sieve_batcher_reset(SieveBatcher *b)
{
  g_return_if_fail(b != NULL);
  b->pos = 0;
  b->aug = b->aug_start;
  b->ended = FALSE;
}

/* One example, cropped (shifted by dy, dx with zeros coming in) and maybe
 * mirrored, from src to dst (both C x H x W). */
static void
augment_one(const float *src, float *dst, guint channels, guint height, guint width, int dy, int dx,
            gboolean flip)
{
  int h = (int) height, w = (int) width;
  for (guint c = 0; c < channels; c++)
    for (int i = 0; i < h; i++) {
      float *out = dst + ((gsize) c * height + (gsize) i) * width;
      int si = i + dy;
      if (si < 0 || si >= h) {
        memset(out, 0, width * sizeof(float));
        continue;
      }
      const float *in = src + ((gsize) c * height + (gsize) si) * width;
      if (!flip) {
        for (int j = 0; j < w; j++) {
          int sj = j + dx;
          out[j] = sj >= 0 && sj < w ? in[sj] : 0.0f;
        }
      } else {
        for (int j = 0; j < w; j++) {
          int sj = w - 1 - j + dx;
          out[j] = sj >= 0 && sj < w ? in[sj] : 0.0f;
        }
      }
    }
}

guint
sieve_batcher_next(SieveBatcher *b, float *x, gint32 *y)
{
  g_return_val_if_fail(b != NULL && x != NULL && y != NULL, 0);
  if (b->ended)
    start_epoch(b);
  const SieveDataset *ds = b->ds;
  guint size = b->options.batch_size;
  guint k = MIN(size, ds->n - b->pos);
  if (k == 0 || (b->options.drop_last && k < size)) {
    b->ended = TRUE;
    return 0;
  }

  gsize per = sieve_dataset_example_size(ds);
  guint pad = b->options.crop_pad;
  gboolean flip = b->options.flip;
  for (guint i = 0; i < k; i++) {
    guint idx = b->order[b->pos + i];
    const float *src = ds->x + (gsize) idx * per;
    float *dst = x + (gsize) i * per;
    y[i] = ds->y[idx];
    int dy = 0, dx = 0;
    gboolean mirror = FALSE;
    if (pad > 0) {
      dy = (int) sieve_rng_below(&b->aug, 2 * (guint64) pad + 1) - (int) pad;
      dx = (int) sieve_rng_below(&b->aug, 2 * (guint64) pad + 1) - (int) pad;
    }
    if (flip)
      mirror = sieve_rng_next(&b->aug) >> 63;
    if (dy == 0 && dx == 0 && !mirror)
      memcpy(dst, src, per * sizeof(float));
    else
      augment_one(src, dst, ds->channels, ds->height, ds->width, dy, dx, mirror);
  }
  b->pos += k;
  return k;
}
