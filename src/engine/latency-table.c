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
 * to another machine measures again instead of answering for the wrong one. */
#include <math.h>

#include <sieve/latency.h>

#include "engine/engine-private.h"

struct _SieveLatencyTable {
  SieveStore *store; /* nullable: entries kept in memory only */
  SieveLatencyOptions options;
  char *machine;
  GHashTable *entries; /* key -> double* ms, what this table has read or measured */
  guint measured;
};

SieveLatencyTable *
sieve_latency_table_new(SieveStore *store, const SieveLatencyOptions *options)
{
  g_return_val_if_fail(options != NULL, NULL);
  SieveLatencyTable *t = g_new0(SieveLatencyTable, 1);
  t->store = store;
  t->options = *options;
  t->machine = sieve_latency_machine(options);
  t->entries = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
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

/* The entry of key, node of graph (measured on a miss). */
static gboolean
entry(SieveLatencyTable *table, const SieveGraph *graph, guint node, const char *key, double *ms, GError **error)
{
  const double *known = g_hash_table_lookup(table->entries, key);
  if (known != NULL) {
    *ms = *known;
    return TRUE;
  }
  double value = NAN;
  if (table->store != NULL && !sieve_store_latency_get(table->store, table->machine, key, &value, NULL, error))
    return FALSE;
  if (isnan(value)) {
    SieveLatency l;
    if (!sieve_latency_measure_node(graph, node, &table->options, &l, error))
      return FALSE;
    /* An operation lost in the noise of its bare graph costs nothing
     * rather than a negative time. */
    value = MAX(l.median_ms, 0.0);
    table->measured++;
    if (table->store != NULL &&
        !sieve_store_latency_put(table->store, table->machine, key, value, l.iqr_ms, l.runs, error))
      return FALSE;
  }
  g_hash_table_insert(table->entries, g_strdup(key), g_memdup2(&value, sizeof value));
  *ms = value;
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
  return entry(table, graph, node, key, ms, error);
}

gboolean
sieve_latency_table_predict(SieveLatencyTable *table, const SieveGraph *graph, double *ms, GError **error)
{
  g_return_val_if_fail(table != NULL && graph != NULL && ms != NULL, FALSE);
  double sum = 0;
  g_autoptr(GPtrArray) keys = sieve_latency_node_keys(graph);
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
