/* sieve: the per-operation latency table (the latency table section of
 * engine/engine-private.h).
 *
 * ProxylessNAS (Cai, Zhu & Han, ICLR 2019, section 3.3) and FBNet (Wu et
 * al., CVPR 2019, section 3.2) predict a network's latency on a device as
 * the sum of its operations' latencies, each measured once on that device
 * and looked up afterwards; the search then needs no device in its loop.
 * Here an entry is one operation at its input shapes (sieve_latency_node_key)
 * measured alone (sieve_latency_measure_node), and the table lives in the
 * study's store under the machine it was measured on, so a store carried
 * to another machine measures again instead of answering for the wrong one.
 *
 * The sum of entries measured one by one misses what a whole network
 * pays between them and undercounts it (on this project's machine by a
 * quarter on NAS-Bench-201): the kernels of a network find their weights
 * colder than a kernel timed in a loop, and there are per-primitive calls
 * and memory traffic no single entry holds.  So, as nn-Meter (Zhang et al.,
 * MobiSys 2021, section 4) and the latency predictors of Once-for-All (Cai
 * et al., ICLR 2020) fit the table to networks measured whole, the table
 * can be calibrated for a space: a few networks drawn from it (12) are
 * measured whole, and the least-squares line latency = a + b * sum(entries)
 * through them is stored beside the entries (under the machine, keyed by
 * the space's name and a digest of the entries those networks hold and of
 * their structures, so another width or depth of the space fits again) and applied to every
 * prediction.  The line changes the scale, not the order: b > 0. */
#include <math.h>
#include <string.h>

#include <sieve/hash.h>
#include <sieve/latency.h>

#include "engine/engine-private.h"
#include "runtime/runtime-private.h"

struct _SieveLatencyTable {
  SieveStore *store; /* nullable: entries kept in memory only */
  SieveLatencyOptions options;
  char *machine;
  GHashTable *entries; /* key -> double* ms, what this table has read or measured */
  guint measured;
  double a, b; /* the calibration: prediction = a + b * sum (0 and 1 until calibrated) */
  guint fit_networks; /* networks the calibration was fitted on (0: none) */
  double fit_rms;     /* the fit's root-mean-square residual, ms */
  gboolean fit_measured; /* measured now, not read from the store */
  gsize cache_bytes;      /* the core's private caches (sieve__latency_private_cache_bytes) */
};

/* The suffix of the entries measured with the caches warm. */
#define WARM " warm"

/* Whether graph's parameters fit the core's private caches, so that served
 * request after request it finds its weights there: its entries are then
 * timed warm (suffix WARM), else cold, the caches flushed before each
 * forward (runtime/runtime-latency.c, Evict, says why).  Flushed entries
 * pay a floor of 0.01 to 0.026 ms each (an output layer of 2,570
 * parameters 0.026 ms) that a small network whose weights stay in the L2
 * does not: a mobilenet of 23,000 to 88,000 parameters at 28x28 was
 * predicted at 3.3 times its measured latency cold and 0.9 times warm,
 * while NAS-Bench-201 at C=16 with convolutions (185,000 to 1.5 million
 * parameters, above the L2) stays within a few percent cold (README,
 * Hardware-aware search).  Parameters only: the small mobilenets' 0.6 to
 * 1.6 MB of activations did not make them predict like networks whose
 * weights miss the L2 (NAS-Bench-201's cells without a convolution, whose
 * weights fit, are predicted at about 0.8 of their latency warm: their
 * 64 KB activations do not stay in the L2). */
static gboolean
fits_caches(const SieveLatencyTable *table, const SieveGraph *graph)
{
  return sieve_graph_params(graph) * sizeof(float) <= table->cache_bytes;
}

GPtrArray *
sieve_latency_table_keys(const SieveLatencyTable *table, const SieveGraph *graph)
{
  g_return_val_if_fail(table != NULL && graph != NULL, NULL);
  GPtrArray *keys = sieve_latency_node_keys(graph);
  if (fits_caches(table, graph))
    for (guint i = 0; i < keys->len; i++)
      if (keys->pdata[i] != NULL) {
        char *warm = g_strconcat(keys->pdata[i], WARM, NULL);
        g_free(keys->pdata[i]);
        keys->pdata[i] = warm;
      }
  return keys;
}

SieveLatencyTable *
sieve_latency_table_new(SieveStore *store, const SieveLatencyOptions *options)
{
  g_return_val_if_fail(options != NULL, NULL);
  SieveLatencyTable *t = g_new0(SieveLatencyTable, 1);
  t->store = store;
  t->options = *options;
  t->machine = sieve_latency_machine(options);
  t->entries = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  t->b = 1;
  t->cache_bytes = sieve__latency_private_cache_bytes();
  return t;
}

void
sieve_latency_table_free(SieveLatencyTable *table)
{
  if (table == NULL)
    return;
  g_free(table->machine);
  g_hash_table_unref(table->entries);
  g_free(table);
}

const char *
sieve_latency_table_machine(const SieveLatencyTable *table)
{
  return table->machine;
}

guint
sieve_latency_table_n_measured(const SieveLatencyTable *table)
{
  return table->measured;
}

GHashTable *
sieve_latency_table_held(const SieveLatencyTable *table)
{
  g_return_val_if_fail(table != NULL, NULL);
  return table->entries;
}

/* What the table holds of a measurement: with one thread, the median CPU
 * time of the forward, which is the wall-clock latency of an idle device
 * and which other processes on a shared machine do not inflate by taking
 * turns on its cores (the wall-clock median of a 2-core machine running
 * four builds is 2 to 5 times it); with more threads, where the calling
 * thread's CPU time is only its share, the wall-clock median. */
static double
measure_of(const SieveLatencyTable *table, const SieveLatency *l)
{
  return table->options.threads == 1 ? l->cpu_median_ms : l->median_ms;
}

/* The entry of key held in memory or in the store: *ms, or NAN when neither has it. */
static gboolean
known_entry(SieveLatencyTable *table, const char *key, double *ms, GError **error)
{
  const double *known = g_hash_table_lookup(table->entries, key);
  *ms = known ? *known : NAN;
  if (known == NULL && table->store != NULL &&
      !sieve_store_latency_get(table->store, table->machine, key, ms, NULL, error))
    return FALSE;
  if (known == NULL && !isnan(*ms))
    g_hash_table_insert(table->entries, g_strdup(key), g_memdup2(ms, sizeof *ms));
  return TRUE;
}

/* Measures the entries keys[i] (node nodes[i] of graphs[i], i < n; keys
 * distinct and missing) together (sieve_latency_measure_nodes: a drift of
 * the machine's speed while they are timed moves them all alike), and
 * keeps and stores them. */
static gboolean
measure_entries(SieveLatencyTable *table, const SieveGraph *const *graphs, const guint *nodes, char **keys, guint n,
                GError **error)
{
  if (n == 0)
    return TRUE;
  g_autofree SieveLatency *l = g_new0(SieveLatency, n);
  /* The cold entries together, then the warm ones (keys ending in WARM). */
  g_autofree const SieveGraph **sub_graphs = g_new(const SieveGraph *, n);
  g_autofree guint *sub_nodes = g_new(guint, n), *sub_index = g_new(guint, n);
  g_autofree SieveLatency *sub = g_new0(SieveLatency, n);
  for (int warm = 0; warm <= 1; warm++) {
    guint m = 0;
    for (guint i = 0; i < n; i++)
      if (g_str_has_suffix(keys[i], WARM) == warm) {
        sub_graphs[m] = graphs[i];
        sub_nodes[m] = nodes[i];
        sub_index[m++] = i;
      }
    if (m > 0 && !sieve__latency_measure_nodes_caches(sub_graphs, sub_nodes, m, &table->options, !warm, sub, error))
      return FALSE;
    for (guint j = 0; j < m; j++)
      l[sub_index[j]] = sub[j];
  }
  for (guint i = 0; i < n; i++) {
    /* An operation lost in the noise of its bare graph costs nothing
     * rather than a negative time. */
    double value = MAX(measure_of(table, &l[i]), 0.0);
    table->measured++;
    if (table->store != NULL &&
        !sieve_store_latency_put(table->store, table->machine, keys[i], value, l[i].iqr_ms, l[i].runs, error))
      return FALSE;
    g_hash_table_insert(table->entries, g_strdup(keys[i]), g_memdup2(&value, sizeof value));
  }
  return TRUE;
}

/* Queues the entries of graph (keys: sieve_latency_node_keys's) that
 * neither memory nor the store holds and that are not queued already. */
static gboolean
queue_missing(SieveLatencyTable *table, const SieveGraph *graph, GPtrArray *keys, GPtrArray *graphs, GArray *nodes,
              GPtrArray *missing, GHashTable *queued, GError **error)
{
  for (guint v = 0; v < keys->len; v++) {
    const char *key = keys->pdata[v];
    double ms;
    if (key == NULL || g_hash_table_contains(queued, key)) /* dead, no kernel, or queued already */
      continue;
    if (!known_entry(table, key, &ms, error))
      return FALSE;
    if (!isnan(ms))
      continue;
    g_ptr_array_add(graphs, (gpointer) graph);
    g_array_append_val(nodes, v);
    g_ptr_array_add(missing, g_strdup(key));
    g_hash_table_add(queued, missing->pdata[missing->len - 1]);
  }
  return TRUE;
}

/* Every entry of graphs[0..n) (keysets[i]: graphs[i]'s node keys) missing,
 * measured together. */
static gboolean
fill(SieveLatencyTable *table, const SieveGraph *const *graphs, GPtrArray *const *keysets, guint n, GError **error)
{
  g_autoptr(GPtrArray) missing_graphs = g_ptr_array_new();
  g_autoptr(GArray) missing_nodes = g_array_new(FALSE, FALSE, sizeof(guint));
  g_autoptr(GPtrArray) missing_keys = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GHashTable) queued = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < n; i++)
    if (!queue_missing(table, graphs[i], keysets[i], missing_graphs, missing_nodes, missing_keys, queued, error))
      return FALSE;
  return measure_entries(table, (const SieveGraph *const *) missing_graphs->pdata, (const guint *) missing_nodes->data,
                         (char **) missing_keys->pdata, missing_keys->len, error);
}

gboolean
sieve_latency_table_fill(SieveLatencyTable *table, const SieveGraph *const *graphs, guint n, GError **error)
{
  g_return_val_if_fail(table != NULL && (graphs != NULL || n == 0), FALSE);
  g_autoptr(GPtrArray) keysets = g_ptr_array_new_with_free_func((GDestroyNotify) g_ptr_array_unref);
  for (guint i = 0; i < n; i++)
    g_ptr_array_add(keysets, sieve_latency_table_keys(table, graphs[i]));
  return fill(table, graphs, (GPtrArray *const *) keysets->pdata, n, error);
}

/* The entry of key, node of graph (measured on a miss). */
static gboolean
entry(SieveLatencyTable *table, const SieveGraph *graph, guint node, const char *key, double *ms, GError **error)
{
  if (!known_entry(table, key, ms, error))
    return FALSE;
  if (isnan(*ms)) {
    char *keys[1] = {(char *) key};
    if (!measure_entries(table, &graph, &node, keys, 1, error))
      return FALSE;
    *ms = *(const double *) g_hash_table_lookup(table->entries, key);
  }
  return TRUE;
}

gboolean
sieve_latency_table_entry(SieveLatencyTable *table, const SieveGraph *graph, guint node, double *ms,
                          GError **error)
{
  g_return_val_if_fail(table != NULL && graph != NULL && ms != NULL, FALSE);
  if (sieve_latency_node_is_free(graph, node)) {
    *ms = 0; /* no kernel runs: nothing to measure or store */
    return TRUE;
  }
  g_autofree char *key = sieve_latency_node_key(graph, node);
  if (fits_caches(table, graph)) {
    char *warm = g_strconcat(key, WARM, NULL);
    g_free(key);
    key = warm;
  }
  return entry(table, graph, node, key, ms, error);
}

/* The sum of graph's entries (measured on a miss). */
static gboolean
sum_entries(SieveLatencyTable *table, const SieveGraph *graph, double *ms, GError **error)
{
  /* A network's missing entries measured together first (its keys built once for both). */
  g_autoptr(GPtrArray) keys = sieve_latency_table_keys(table, graph);
  if (!fill(table, &graph, &keys, 1, error))
    return FALSE;
  double sum = 0;
  for (guint i = 0; i < keys->len; i++) {
    double e;
    if (keys->pdata[i] == NULL) /* dead, or no kernel runs */
      continue;
    if (!entry(table, graph, i, keys->pdata[i], &e, error))
      return FALSE;
    sum += e;
  }
  *ms = sum;
  return TRUE;
}

gboolean
sieve_latency_table_sum(SieveLatencyTable *table, const SieveGraph *graph, double *ms, GError **error)
{
  g_return_val_if_fail(table != NULL && graph != NULL && ms != NULL, FALSE);
  return sum_entries(table, graph, ms, error);
}

gboolean
sieve_latency_table_predict(SieveLatencyTable *table, const SieveGraph *graph, double *ms, GError **error)
{
  g_return_val_if_fail(table != NULL && graph != NULL && ms != NULL, FALSE);
  double sum;
  if (!sum_entries(table, graph, &sum, error))
    return FALSE;
  *ms = table->a + table->b * sum;
  return TRUE;
}

void
sieve_latency_fit(const double *x, const double *y, guint n, double *a, double *b)
{
  g_return_if_fail(a != NULL && b != NULL && (n == 0 || (x != NULL && y != NULL)));
  double mx = 0, my = 0;
  for (guint i = 0; i < n; i++) {
    mx += x[i] / n;
    my += y[i] / n;
  }
  double sxx = 0, sxy = 0;
  for (guint i = 0; i < n; i++) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  if (n >= 2 && sxx > 0 && sxy > 0) {
    *b = sxy / sxx;
    *a = my - *b * mx;
  } else {
    /* All sums alike, or a slope that would reverse the order: keep the
     * order and fit the scale only (through the origin, the ratio of means). */
    *a = 0;
    *b = n > 0 && mx > 0 && my > 0 ? my / mx : 1;
  }
}

void
sieve_latency_table_set_fit(SieveLatencyTable *table, double a, double b, guint networks)
{
  g_return_if_fail(table != NULL && b > 0);
  table->a = a;
  table->b = b;
  table->fit_networks = networks;
}

gboolean
sieve_latency_table_get_fit(const SieveLatencyTable *table, double *a, double *b, guint *networks, double *rms_ms,
                            gboolean *measured)
{
  g_return_val_if_fail(table != NULL, FALSE);
  if (a)
    *a = table->a;
  if (b)
    *b = table->b;
  if (networks)
    *networks = table->fit_networks;
  if (rms_ms)
    *rms_ms = table->fit_rms;
  if (measured)
    *measured = table->fit_measured;
  return table->fit_networks > 0;
}

static gint
compare_keys(gconstpointer a, gconstpointer b)
{
  return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* The store's key of space's calibration on n networks: the space's name
 * and a digest of the distinct entry keys the networks hold and of each
 * network's structural hash, so that the same space at another width
 * (other shapes, other keys) or depth (the same keys, more of them in each
 * network) fits again, and one at the same settings finds its fit. */
static char *
fit_key(const SieveSpace *space, GPtrArray *graphs, GError **error)
{
  g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
  g_autoptr(GPtrArray) all = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < graphs->len; i++) {
    GPtrArray *keys = sieve_latency_node_keys(graphs->pdata[i]);
    for (guint k = 0; k < keys->len; k++)
      if (keys->pdata[k] != NULL && !g_hash_table_contains(seen, keys->pdata[k])) {
        g_hash_table_add(seen, keys->pdata[k]);
        g_ptr_array_add(all, g_steal_pointer(&keys->pdata[k]));
      }
    g_ptr_array_unref(keys);
  }
  g_ptr_array_sort(all, compare_keys);
  GString *text = g_string_new(NULL);
  for (guint i = 0; i < all->len; i++)
    g_string_append_printf(text, "%s\n", (const char *) all->pdata[i]);
  for (guint i = 0; i < graphs->len; i++) {
    SieveHash h;
    char hex[SIEVE_HASH_TEXT_LEN];
    if (!sieve_graph_hash_structural(graphs->pdata[i], &h, error)) {
      g_string_free(text, TRUE);
      return NULL;
    }
    sieve_hash_format(&h, hex);
    g_string_append_printf(text, "network %s\n", hex);
  }
  g_autofree char *digest = g_compute_checksum_for_string(G_CHECKSUM_SHA1, text->str, text->len);
  g_string_free(text, TRUE);
  return g_strdup_printf("fit %s %.16s n=%u", sieve_space_get_name(space), digest, graphs->len);
}

gboolean
sieve_latency_table_calibrate(SieveLatencyTable *table, const SieveSpace *space, guint networks, GError **error)
{
  g_return_val_if_fail(table != NULL && space != NULL, FALSE);
  if (networks == 0 || table->fit_networks > 0)
    return TRUE;
  g_autoptr(GPtrArray) graphs = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_graph_free);
  for (guint i = 0; i < networks; i++) {
    /* Seeds of their own: the same networks every time, whatever the study's seed. */
    SieveGraph *g = sieve_space_build_sample(space, 0x1a7e0000u + i, error);
    if (g == NULL)
      return FALSE;
    g_ptr_array_add(graphs, g);
  }
  g_autofree char *key = fit_key(space, graphs, error);
  if (key == NULL)
    return FALSE;
  g_autofree char *key_a = g_strconcat(key, " a", NULL), *key_b = g_strconcat(key, " b", NULL);
  double a = NAN, b = NAN, rms = NAN;
  if (table->store != NULL && (!sieve_store_latency_get(table->store, table->machine, key_a, &a, &rms, error) ||
                               !sieve_store_latency_get(table->store, table->machine, key_b, &b, NULL, error)))
    return FALSE;
  if (isnan(a) || isnan(b) || !(b > 0)) {
    g_autofree double *x = g_new(double, networks), *y = g_new(double, networks);
    g_autofree SieveLatency *l = g_new0(SieveLatency, networks);
    /* The networks' missing entries first, then the networks together
     * (sieve_latency_measure_together: each forward after one of its own,
     * as `sieve latency` serves a network, and a drift of the machine's
     * speed slowing all of them alike, not the line's one end). */
    if (!sieve_latency_table_fill(table, (const SieveGraph *const *) graphs->pdata, networks, error))
      return FALSE;
    for (guint i = 0; i < networks; i++)
      if (!sum_entries(table, graphs->pdata[i], &x[i], error))
        return FALSE;
    if (!sieve_latency_measure_together((const SieveGraph *const *) graphs->pdata, networks, &table->options, l,
                                        error)) {
      g_prefix_error(error, "calibrating the latency table of %s: ", sieve_space_get_name(space));
      return FALSE;
    }
    for (guint i = 0; i < networks; i++)
      y[i] = measure_of(table, &l[i]);
    sieve_latency_fit(x, y, networks, &a, &b);
    double ss = 0;
    for (guint i = 0; i < networks; i++)
      ss += (a + b * x[i] - y[i]) * (a + b * x[i] - y[i]);
    rms = sqrt(ss / networks);
    table->fit_measured = TRUE;
    if (table->store != NULL && (!sieve_store_latency_put(table->store, table->machine, key_a, a, rms, networks, error) ||
                                 !sieve_store_latency_put(table->store, table->machine, key_b, b, rms, networks, error)))
      return FALSE;
  }
  sieve_latency_table_set_fit(table, a, b, networks);
  table->fit_rms = rms;
  return TRUE;
}
