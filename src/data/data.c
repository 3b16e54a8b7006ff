/* sieve: the in-memory dataset: creation, subsets, the seeded stratified
 * split, and per-channel normalisation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/data-private.h"

SieveDataset *
sieve_dataset_new(guint n, guint channels, guint height, guint width, guint n_classes, const char *name)
{
  g_return_val_if_fail(channels > 0 && height > 0 && width > 0, NULL);
  guint64 per = (guint64) channels * height * width;
  g_return_val_if_fail(n == 0 || per <= G_MAXSIZE / sizeof(float) / n, NULL);
  SieveDataset *ds = g_new0(SieveDataset, 1);
  ds->n = n;
  ds->channels = channels;
  ds->height = height;
  ds->width = width;
  ds->n_classes = n_classes;
  /* calloc: the kernel hands out zero pages lazily, so zeroing costs
   * nothing for the loaders that overwrite every value anyway. */
  ds->x = g_new0(float, (gsize) per * n);
  ds->y = g_new0(gint32, n);
  ds->name = g_strdup(name ? name : "dataset");
  return ds;
}

void
sieve_dataset_free(SieveDataset *ds)
{
  if (ds == NULL)
    return;
  g_free(ds->x);
  g_free(ds->y);
  g_free(ds->name);
  g_strfreev(ds->class_names);
  g_free(ds);
}

/* ds's name without the annotation a subset or split added: a subset of a
 * subset says what it is once ("fashion-mnist/train (64 examples)"), not
 * "(split: 59968 kept) (split: 64 kept)".  Only that suffix goes, " (N
 * examples)" or " (N held out)" at the end: a folder named "x (v2)" keeps
 * its name. (transfer full) */
static char *
base_name(const SieveDataset *ds)
{
  const char *open = g_strrstr(ds->name, " (");
  if (open != NULL) {
    const char *p = open + 2, *digits = p;
    while (g_ascii_isdigit(*p))
      p++;
    if (p > digits && (strcmp(p, " examples)") == 0 || strcmp(p, " held out)") == 0))
      return g_strndup(ds->name, (gsize) (open - ds->name));
  }
  return g_strdup(ds->name);
}

static SieveDataset *
subset_named(const SieveDataset *ds, const guint *indices, guint n, char *name /* (transfer full) */)
{
  SieveDataset *out = sieve_dataset_new(n, ds->channels, ds->height, ds->width, ds->n_classes, NULL);
  g_free(out->name);
  out->name = name;
  out->class_names = g_strdupv(ds->class_names);
  gsize per = sieve_dataset_example_size(ds);
  for (guint i = 0; i < n; i++) {
    guint k = indices[i];
    if (k >= ds->n) {
      g_critical("sieve_dataset_subset: index %u at position %u is out of range for %s (%u examples)", k, i,
                 ds->name, ds->n);
      sieve_dataset_free(out);
      return NULL;
    }
    memcpy(out->x + (gsize) i * per, ds->x + (gsize) k * per, per * sizeof(float));
    out->y[i] = ds->y[k];
  }
  return out;
}

SieveDataset *
sieve_dataset_subset(const SieveDataset *ds, const guint *indices, guint n)
{
  g_return_val_if_fail(ds != NULL, NULL);
  g_return_val_if_fail(indices != NULL || n == 0, NULL);
  g_autofree char *base = base_name(ds);
  return subset_named(ds, indices, n, g_strdup_printf("%s (%u examples)", base, n));
}

typedef struct {
  guint64 remainder;
  guint cls;
} Quota;

/* Largest remainder first; ties to the lower class, so the split is the same everywhere. */
static int
quota_cmp(const void *pa, const void *pb)
{
  const Quota *a = pa, *b = pb;
  if (a->remainder != b->remainder)
    return a->remainder > b->remainder ? -1 : 1;
  return a->cls < b->cls ? -1 : a->cls > b->cls;
}

void
sieve_dataset_split(const SieveDataset *ds, guint n_second, guint64 seed, SieveDataset **first,
                    SieveDataset **second)
{
  g_return_if_fail(first != NULL && second != NULL);
  *first = *second = NULL;
  g_return_if_fail(ds != NULL && n_second <= ds->n);
  guint n = ds->n, n_classes = ds->n_classes;
  for (guint i = 0; i < n; i++)
    g_return_if_fail(ds->y[i] >= 0 && (guint) ds->y[i] < n_classes);

  /* Group the examples by class (a counting sort keeps each class in order). */
  g_autofree guint *count = g_new0(guint, n_classes + 1);
  g_autofree guint *start = g_new0(guint, n_classes + 1);
  for (guint i = 0; i < n; i++)
    count[ds->y[i]]++;
  for (guint c = 0; c < n_classes; c++)
    start[c + 1] = start[c] + count[c];
  g_autofree guint *by_class = g_new(guint, MAX(n, 1));
  g_autofree guint *fill = g_memdup2(start, sizeof(guint) * (n_classes + 1));
  for (guint i = 0; i < n; i++)
    by_class[fill[ds->y[i]]++] = i;

  /* Each class's share of the second part: n_second * count / n, rounded by
   * largest remainder (Hamilton's method) so that the shares sum to n_second. */
  g_autofree guint *take = g_new0(guint, MAX(n_classes, 1));
  g_autofree Quota *rest = g_new0(Quota, MAX(n_classes, 1));
  guint given = 0;
  for (guint c = 0; c < n_classes && n > 0; c++) {
    guint64 exact = (guint64) n_second * count[c];
    take[c] = (guint) (exact / n);
    rest[c] = (Quota) {exact % n, c};
    given += take[c];
  }
  qsort(rest, n_classes, sizeof(Quota), quota_cmp);
  for (guint j = 0; given < n_second; j++, given++)
    take[rest[j].cls]++; /* a class with a remainder has take < count, so it has one to give */

  /* Within each class, a partial Fisher-Yates shuffle (Durstenfeld 1964; Knuth's
   * Algorithm P) picks which go: each subset of the class's share is equally likely. */
  SieveRng rng;
  sieve_rng_seed(&rng, seed);
  g_autofree guint8 *chosen = g_new0(guint8, MAX(n, 1));
  for (guint c = 0; c < n_classes; c++) {
    guint *members = by_class + start[c];
    for (guint j = 0; j < take[c]; j++) {
      guint k = j + (guint) sieve_rng_below(&rng, count[c] - j);
      guint t = members[j];
      members[j] = members[k];
      members[k] = t;
      chosen[members[j]] = 1;
    }
  }

  g_autofree guint *idx_first = g_new(guint, MAX(n - n_second, 1));
  g_autofree guint *idx_second = g_new(guint, MAX(n_second, 1));
  guint a = 0, b = 0;
  for (guint i = 0; i < n; i++) {
    if (chosen[i])
      idx_second[b++] = i;
    else
      idx_first[a++] = i;
  }
  g_assert(a == n - n_second && b == n_second);
  g_autofree char *base = base_name(ds);
  *first = subset_named(ds, idx_first, a, g_strdup_printf("%s (%u examples)", base, a));
  *second = subset_named(ds, idx_second, b, g_strdup_printf("%s (%u held out)", base, b));
}

void
sieve_dataset_channel_stats(const SieveDataset *ds, float *mean, float *std)
{
  g_return_if_fail(ds != NULL && mean != NULL && std != NULL);
  guint channels = ds->channels;
  gsize plane = (gsize) ds->height * ds->width;
  double count = (double) ds->n * (double) plane;
  g_autofree double *sum = g_new0(double, channels);
  g_autofree double *sq = g_new0(double, channels);

  /* Two passes in double (mean, then squared deviations) rather than the
   * one-pass sum of squares, whose cancellation loses digits when the std
   * is small next to the mean (Chan, Golub and LeVeque, "Algorithms for
   * computing the sample variance", 1983). */
  const float *x = ds->x;
  for (guint i = 0; i < ds->n; i++)
    for (guint c = 0; c < channels; c++) {
      double s = 0;
      for (gsize p = 0; p < plane; p++)
        s += *x++;
      sum[c] += s;
    }
  for (guint c = 0; c < channels; c++)
    sum[c] = count > 0 ? sum[c] / count : 0.0; /* now the mean */
  x = ds->x;
  for (guint i = 0; i < ds->n; i++)
    for (guint c = 0; c < channels; c++) {
      double m = sum[c], s = 0;
      for (gsize p = 0; p < plane; p++, x++)
        s += (*x - m) * (*x - m);
      sq[c] += s;
    }
  for (guint c = 0; c < channels; c++) {
    mean[c] = (float) sum[c];
    std[c] = count > 0 ? (float) sqrt(sq[c] / count) : 0.0f;
  }
}

void
sieve_dataset_normalize(SieveDataset *ds, const float *mean, const float *std)
{
  g_return_if_fail(ds != NULL && mean != NULL && std != NULL);
  gsize plane = (gsize) ds->height * ds->width;
  float *x = ds->x;
  for (guint i = 0; i < ds->n; i++)
    for (guint c = 0; c < ds->channels; c++) {
      float m = mean[c], s = std[c];
      if (s == 0.0f)
        for (gsize p = 0; p < plane; p++, x++)
          *x = *x - m;
      else
        for (gsize p = 0; p < plane; p++, x++)
          *x = (*x - m) / s;
    }
}
