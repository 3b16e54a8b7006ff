/* bench/report-store: a large study for bench/report_speed.py, written
 * through sieve's own store API in one transaction (a real `sieve run` of
 * 100,000 table lookups commits once per trial and takes most of an hour
 * on a busy 2-core machine; the report reads the same tables either way).
 *
 *   report-store STORE N TABLE
 *
 * The trials: N uniform random NAS-Bench-201 cells (seed 0), scored by the
 * published table TABLE (cifar10_valid_acc, lat_ms_gold_6226), stored as
 * configs/nb201-nsga2.yaml would store them, with that config, so that the
 * report rebuilds the space and shows every section the study has. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <sieve/csv.h>
#include <sieve/sieve.h>

static const char *const ops[] = {"none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3"};

int
main(int argc, char **argv)
{
  if (argc != 4) {
    fprintf(stderr, "usage: report-store STORE N TABLE\n");
    return 2;
  }
  g_autoptr(GError) error = NULL;
  guint64 n = g_ascii_strtoull(argv[2], NULL, 10);
  /* The table: arch_str -> (accuracy, latency), read as text lines. */
  g_autofree char *text = NULL;
  if (!g_file_get_contents(argv[3], &text, NULL, &error)) {
    fprintf(stderr, "report-store: %s\n", error->message);
    return 1;
  }
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  g_auto(GStrv) header = g_strsplit(lines[0], ",", -1);
  gint arch = -1, acc = -1, lat = -1;
  for (gint c = 0; header[c]; c++) {
    arch = strcmp(header[c], "arch_str") == 0 ? c : arch;
    acc = strcmp(header[c], "cifar10_valid_acc") == 0 ? c : acc;
    lat = strcmp(header[c], "lat_ms_gold_6226") == 0 ? c : lat;
  }
  if (arch < 0 || acc < 0 || lat < 0) {
    fprintf(stderr, "report-store: %s lacks arch_str, cifar10_valid_acc or lat_ms_gold_6226\n", argv[3]);
    return 1;
  }
  g_autoptr(GHashTable) table = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify) g_strfreev);
  for (guint l = 1; lines[l]; l++) {
    char **cells = g_strsplit(lines[l], ",", -1);
    if (g_strv_length(cells) > (guint) MAX(arch, MAX(acc, lat)))
      g_hash_table_insert(table, cells[arch], cells);
    else
      g_strfreev(cells);
  }
  g_autoptr(SieveStore) store = sieve_store_open(argv[1], SIEVE_STORE_WRITE, &error);
  if (store == NULL || !sieve_store_begin(store, &error)) {
    fprintf(stderr, "report-store: %s\n", error->message);
    return 1;
  }
  g_autofree char *config = g_strdup_printf(
      "name: report-bench\nseed: 0\nspace: {plugin: nb201}\noptimizer: {plugin: random}\n"
      "evaluator: {plugin: tabular, table: %s, metrics: [cifar10_valid_acc, lat_ms_gold_6226]}\n"
      "objective: [{metric: cifar10_valid_acc, direction: maximize}, {metric: lat_ms_gold_6226, direction: minimize}]\n"
      "budget: {evaluations: %" G_GUINT64_FORMAT "}\n", argv[3], n);
  sieve_store_set_meta(store, "config", config, NULL);
  sieve_store_set_meta(store, "name", "report-bench", NULL);
  GRand *rand = g_rand_new_with_seed(0);
  double now = 1.7e9;
  for (guint64 i = 0; i < n; i++) {
    char genotype[160];
    g_snprintf(genotype, sizeof genotype, "|%s~0|+|%s~0|%s~1|+|%s~0|%s~1|%s~2|", ops[g_rand_int_range(rand, 0, 5)],
               ops[g_rand_int_range(rand, 0, 5)], ops[g_rand_int_range(rand, 0, 5)], ops[g_rand_int_range(rand, 0, 5)],
               ops[g_rand_int_range(rand, 0, 5)], ops[g_rand_int_range(rand, 0, 5)]);
    gint64 number = sieve_store_add_trial(store, genotype, NAN, &error);
    char **row = g_hash_table_lookup(table, genotype);
    g_autoptr(SieveResult) result = sieve_result_new();
    if (row == NULL) {
      sieve_result_set_failed(result, "not in the table");
    } else {
      sieve_result_set_metric(result, "cifar10_valid_acc", g_ascii_strtod(row[acc], NULL));
      sieve_result_set_metric(result, "lat_ms_gold_6226", g_ascii_strtod(row[lat], NULL));
    }
    sieve_result_set_cost(result, 1e-5);
    if (number < 0 || !sieve_store_finish_trial(store, number, result, now, now + 1e-5, 0, -1, &error)) {
      fprintf(stderr, "report-store: %s\n", error->message);
      return 1;
    }
    now += 2e-5;
  }
  g_rand_free(rand);
  if (!sieve_store_commit(store, &error)) {
    fprintf(stderr, "report-store: %s\n", error->message);
    return 1;
  }
  return 0;
}
