/* sieve: scoring a round of proposals for the screen stage (declared in
 * the screen section of engine/engine-private.h).
 * Zero-cost proxies choose which candidates are worth training, as
 * Abdelfattah et al., "Zero-Cost Proxies for Lightweight NAS" (ICLR 2021)
 * use them to steer a search; several proxies are combined by their mean
 * rank (sieve_proxy_rank_aggregate). */
#include <math.h>
#include <string.h>

#include <sieve/data.h>
#include <sieve/proxy.h>
#include <sieve/rng.h>

#include "engine/engine-private.h"

void
sieve_screen_round_free(SieveScreenRound *round)
{
  if (round == NULL)
    return;
  for (guint i = 0; i < round->n; i++) {
    if (round->scores[i])
      sieve_result_free(round->scores[i]);
    g_free(round->errors[i]);
  }
  g_free(round->scores);
  g_free(round->errors);
  g_free(round->aggregate);
  g_free(round->order);
  g_free(round);
}

SieveProxyBatch *
sieve_screen_batch_load(const SieveScreenStage *stage, const SieveSpace *space, GError **error)
{
  g_return_val_if_fail(stage != NULL && space != NULL && stage->dataset != NULL, NULL);
  g_autoptr(SieveProxyBatch) batch =
      sieve_proxy_batch_draw(stage->dataset, stage->data_dir, (guint) stage->proxy_batch, stage->seed, error);
  if (batch == NULL)
    return NULL;
  g_autoptr(SieveGraph) sample = sieve_space_build_sample(space, stage->seed, error);
  g_autofree char *builder = g_strdup_printf("space %s", sieve_space_get_name(space));
  if (sample == NULL || !sieve_proxy_batch_check(batch, sample, builder, error))
    return NULL;
  return g_steal_pointer(&batch);
}

/* One candidate's scores into row (n_proxies values); NaN and a reason
 * when its network cannot be built or scored. */
static void
score_one(const SieveScreenStage *stage, const SieveSpace *space, const SieveProxyBatch *batch,
          const SieveGenotype *genotype, double *row, char **error_text)
{
  GError *error = NULL;
  g_autoptr(SieveGraph) graph = sieve_space_build(space, genotype, &error);
  SieveProxyOptions options = {.batch = (guint) stage->proxy_batch,
                               .seed = stage->seed,
                               .device = stage->device,
                               .inputs = batch ? batch->x : NULL,
                               .labels = batch ? batch->y : NULL};
  if (graph == NULL ||
      !sieve_proxy_compute(graph, (const char *const *) stage->proxies, stage->n_proxies, &options, row, NULL,
                           &error)) {
    for (guint k = 0; k < stage->n_proxies; k++)
      row[k] = NAN;
    *error_text = g_strdup(error->message);
    g_error_free(error);
  }
}

typedef struct {
  const double *aggregate;
} SortData;

static gint
compare_best_first(gconstpointer a, gconstpointer b, gpointer user_data)
{
  const SortData *d = user_data;
  guint i = *(const guint *) a, j = *(const guint *) b;
  double x = d->aggregate[i], y = d->aggregate[j];
  /* NaN aggregates (none expected: rank_aggregate ranks NaN scores lowest) last. */
  if (isnan(x) != isnan(y))
    return isnan(x) ? 1 : -1;
  if (x != y && !isnan(x))
    return x > y ? -1 : 1;
  return i < j ? -1 : i > j;
}

SieveScreenRound *
sieve_screen_round_new(const SieveScreenStage *stage, const SieveSpace *space, const SieveProxyBatch *batch,
                       const SieveGenotype *const *genotypes, guint n)
{
  g_return_val_if_fail(stage != NULL && space != NULL && (genotypes != NULL || n == 0), NULL);
  SieveScreenRound *round = g_new0(SieveScreenRound, 1);
  guint p = stage->n_proxies;
  round->n = n;
  round->scores = g_new0(SieveResult *, n);
  round->errors = g_new0(char *, n);
  round->aggregate = g_new0(double, n);
  round->order = g_new0(guint, n);
  g_autofree double *matrix = g_new0(double, (gsize) n * p);
  for (guint i = 0; i < n; i++)
    score_one(stage, space, batch, genotypes[i], matrix + (gsize) i * p, &round->errors[i]);
  sieve_proxy_rank_aggregate(matrix, n, p, stage->weights, round->aggregate);
  for (guint i = 0; i < n; i++) {
    SieveResult *r = sieve_result_new();
    for (guint k = 0; k < p; k++)
      sieve_result_set_metric(r, stage->proxies[k], matrix[(gsize) i * p + k]);
    sieve_result_set_metric(r, SIEVE_SCREEN_SCORE, round->aggregate[i]);
    round->scores[i] = r;
    round->order[i] = i;
  }
  SortData data = {round->aggregate};
  g_qsort_with_data(round->order, (gint) n, sizeof(guint), compare_best_first, &data);
  return round;
}

guint
sieve_screen_keep_count(const SieveScreenStage *stage, guint n, gint64 room)
{
  g_return_val_if_fail(stage != NULL, 0);
  if (n == 0 || room <= 0)
    return 0;
  gint64 keep = stage->keep_top > 0 ? stage->keep_top : (gint64) ceil(stage->keep_fraction * n - 1e-9);
  keep = CLAMP(keep, 1, (gint64) n);
  return (guint) MIN(keep, room);
}
