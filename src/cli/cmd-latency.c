/* sieve latency --space S [--set space.KEY=VAL] --arch TEXT [--predict] [--store FILE] [options]
 * sieve latency --table --space S [--store FILE] [--samples N] [options]
 *
 * One candidate: measures its inference latency here (sieve/latency.h: the
 * protocol) and prints one JSON object: latency_ms (the median),
 * latency_iqr_ms, the median's 95% interval, runs, peak_mem_mb, params,
 * macs, and with --predict the latency table's predicted_latency_ms (the
 * sum of its entries, or with --calibrate its calibrated sum; then
 * predicted_sum_ms is the plain sum).
 *
 * --arch-file FILE: one candidate a line, each measured in turn; with
 * --together all compiled first and timed in rounds
 * (sieve_latency_measure_together), for a ranking that the machine's
 * drifting speed does not reorder.  A line that is no candidate is
 * reported with its FILE:LINE and the others are still measured, as `sieve
 * hash` and `sieve proxies` do; the exit status is then 1.
 *
 * --table: the per-operation latency table of a space (ProxylessNAS,
 * FBNet): every distinct operation key that the space's networks contain
 * (all candidates of a space of at most 100,000, else 1000 drawn; --samples
 * N draws N),
 * each read from --store or measured and written there, printed one per
 * line as "ms<TAB>key", after a header naming the machine the entries
 * belong to, how long measuring took, and the calibration on --calibrate
 * networks of the space measured whole (0: none, the plain sum). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli-private.h"
#include "engine/engine-private.h"

#define ENUMERATE_MAX 100000.0

typedef struct {
  guint batch, threads, warmup, runs, max_runs;
  double rel_ci, seconds;
} Flags;

static gboolean
options_from_flags(const Flags *f, SieveLatencyOptions *o, GError **error)
{
  sieve_latency_options_init(o);
  if (f->batch == 0) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "--batch must be at least 1");
    return FALSE;
  }
  o->batch = f->batch;
  o->threads = f->threads;
  o->warmup = f->warmup;
  o->min_runs = MAX(f->runs, 3u);
  o->max_runs = MAX(f->max_runs, o->min_runs);
  o->rel_ci = f->rel_ci;
  o->max_seconds = f->seconds;
  return TRUE;
}

/* The candidate arch ("--arch", or "FILE:LINE" of --arch-file: where) and
 * its network; an exit code other than SIEVE_EXIT_OK when it is not one. */
static int
build_candidate(const SieveSpace *space, const char *arch, const char *where, SieveGenotype **genotype,
                SieveGraph **graph)
{
  GError *error = NULL;
  *graph = NULL;
  *genotype = sieve_space_parse(space, arch, &error);
  if (*genotype == NULL) {
    fprintf(stderr, "sieve latency: %s: %s\n", where, error->message);
    g_error_free(error);
    return SIEVE_EXIT_USAGE;
  }
  *graph = sieve_space_build(space, *genotype, &error);
  if (*graph)
    return SIEVE_EXIT_OK;
  /* A network the space cannot build from a well-formed text: named by
   * where too, as a line that does not parse. */
  fprintf(stderr, "sieve latency: %s: %s\n", where, error->message);
  int code = g_error_matches(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG) ? SIEVE_EXIT_USAGE : SIEVE_EXIT_FAILURE;
  g_error_free(error);
  return code;
}

/* One JSON object a line for a measured candidate. table: NULL without --predict. */
static int
print_candidate(const SieveSpace *space, const SieveGenotype *g, const SieveGraph *graph, const SieveLatency *l,
                const SieveLatencyOptions *o, SieveLatencyTable *table)
{
  GError *error = NULL;
  g_autofree char *text = sieve_space_format(space, g);
  GString *out = g_string_new("{\"genotype\":");
  sieve_json_append_string(out, text);
  g_string_append_printf(out, ",\"latency_ms\":%.6g,\"latency_iqr_ms\":%.6g,\"ci_ms\":[%.6g,%.6g],\"runs\":%u,\"latency_cpu_ms\":%.6g,"
                              "\"peak_mem_mb\":%.6g,\"params\":%" G_GUINT64_FORMAT ",\"macs\":%" G_GUINT64_FORMAT,
                         l->median_ms, l->iqr_ms, l->ci_low_ms, l->ci_high_ms, l->runs, l->cpu_median_ms,
                         l->memory_bytes / 1048576.0,
                         sieve_graph_params(graph), sieve_graph_macs(graph));
  if (table != NULL) {
    double ms, sum, a, b;
    if (!sieve_latency_table_predict(table, graph, &ms, &error) ||
        !sieve_latency_table_sum(table, graph, &sum, &error)) {
      g_string_free(out, TRUE);
      return sieve_cli_fail(error);
    }
    sieve_latency_table_get_fit(table, &a, &b, NULL, NULL, NULL);
    g_string_append_printf(out, ",\"predicted_latency_ms\":%.6g,\"predicted_sum_ms\":%.6g,\"fit\":[%.6g,%.6g],"
                                "\"table_entries_measured\":%u",
                           ms, sum, a, b, sieve_latency_table_n_measured(table));
  }
  g_string_append_printf(out, ",\"batch\":%u,\"threads\":%u}\n", o->batch, o->threads);
  fputs(out->str, stdout);
  fflush(stdout);
  g_string_free(out, TRUE);
  return SIEVE_EXIT_OK;
}

/* A built candidate measured and printed. */
static int
measure_candidate(const SieveSpace *space, const SieveGenotype *g, const SieveGraph *graph,
                  const SieveLatencyOptions *o, SieveLatencyTable *table)
{
  GError *error = NULL;
  SieveLatency l;
  if (!sieve_latency_measure(graph, o, &l, &error))
    return sieve_cli_fail(error);
  return print_candidate(space, g, graph, &l, o, table);
}

static int
one_candidate(const SieveSpace *space, const char *arch, const char *where, const SieveLatencyOptions *o,
              SieveLatencyTable *table)
{
  g_autoptr(SieveGenotype) g = NULL;
  g_autoptr(SieveGraph) graph = NULL;
  int rc = build_candidate(space, arch, where, &g, &graph);
  if (rc != SIEVE_EXIT_OK)
    return rc;
  return measure_candidate(space, g, graph, o, table);
}

/* After the lines of --arch-file: how many were no candidate (reported as
 * they came), and the exit status. */
static int
arch_file_status(const char *file, guint failed, guint total)
{
  if (failed == 0)
    return SIEVE_EXIT_OK;
  fprintf(stderr, "sieve latency: %u of %u candidate%s of %s could not be measured\n", failed, total,
          total == 1 ? "" : "s", file);
  return SIEVE_EXIT_FAILURE;
}

/* --arch-file --together: every candidate compiled first, then measured in
 * rounds (sieve_latency_measure_together), printed in the file's order. */
static int
together(const SieveSpace *space, char **lines, const char *file, const SieveLatencyOptions *o,
         SieveLatencyTable *table)
{
  guint failed = 0, total = 0;
  GError *error = NULL;
  g_autoptr(GPtrArray) genotypes = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_genotype_free);
  g_autoptr(GPtrArray) graphs = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_graph_free);
  for (guint i = 0; lines[i] != NULL; i++) {
    if (lines[i][0] == '\0' || lines[i][0] == '#')
      continue;
    g_autofree char *where = g_strdup_printf("%s:%u", file, i + 1);
    SieveGenotype *g;
    SieveGraph *graph;
    total++;
    if (build_candidate(space, lines[i], where, &g, &graph) != SIEVE_EXIT_OK) {
      g_clear_pointer(&g, sieve_genotype_free);
      failed++;
      continue;
    }
    g_ptr_array_add(genotypes, g);
    g_ptr_array_add(graphs, graph);
  }
  if (graphs->len == 0)
    return arch_file_status(file, failed, total);
  /* The table's entries these candidates miss, measured together first. */
  if (table != NULL &&
      !sieve_latency_table_fill(table, (const SieveGraph *const *) graphs->pdata, graphs->len, &error))
    return sieve_cli_fail(error);
  g_autofree SieveLatency *l = g_new0(SieveLatency, MAX(graphs->len, 1u));
  if (!sieve_latency_measure_together((const SieveGraph *const *) graphs->pdata, graphs->len, o, l, &error))
    return sieve_cli_fail(error);
  for (guint i = 0; i < graphs->len; i++) {
    int rc = print_candidate(space, genotypes->pdata[i], graphs->pdata[i], &l[i], o, table);
    if (rc != SIEVE_EXIT_OK)
      return rc;
  }
  return arch_file_status(file, failed, total);
}

/* --arch or --arch-file: each candidate compiled, measured and freed in
 * turn in this one process (or all together); one JSON object a line. */
static int
candidates(const SieveSpace *space, const char *arch, const char *file, const SieveLatencyOptions *o,
           SieveStore *store, gboolean predict, guint calibrate, gboolean all_together)
{
  GError *error = NULL;
  g_autoptr(SieveLatencyTable) table = NULL;
  if (predict) {
    table = sieve_latency_table_new(store, o);
    if (!sieve_latency_table_calibrate(table, space, calibrate, &error))
      return sieve_cli_fail(error);
  }
  if (file == NULL)
    return one_candidate(space, arch, "--arch", o, table);
  g_autofree char *text = NULL;
  if (!g_file_get_contents(file, &text, NULL, &error))
    return sieve_cli_fail(error);
  /* A UTF-8 byte order mark (some editors write one) is no part of the first line. */
  g_auto(GStrv) lines = g_strsplit(g_str_has_prefix(text, "\xef\xbb\xbf") ? text + 3 : text, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    g_strstrip(lines[i]);
  if (all_together)
    return together(space, lines, file, o, table);
  guint failed = 0, total = 0;
  for (guint i = 0; lines[i] != NULL; i++) {
    if (lines[i][0] == '\0' || lines[i][0] == '#')
      continue;
    g_autofree char *where = g_strdup_printf("%s:%u", file, i + 1);
    total++;
    g_autoptr(SieveGenotype) g = NULL;
    g_autoptr(SieveGraph) graph = NULL;
    if (build_candidate(space, lines[i], where, &g, &graph) != SIEVE_EXIT_OK) {
      failed++;
      continue;
    }
    int rc = measure_candidate(space, g, graph, o, table);
    if (rc != SIEVE_EXIT_OK)
      return rc;
  }
  return arch_file_status(file, failed, total);
}

typedef struct {
  char *key;
  SieveGraph *graph; /* the first network holding it (shared, reference in graphs) */
  guint node;
  double ms;
} Entry;

static gint
compare_entries(gconstpointer a, gconstpointer b)
{
  return strcmp(((const Entry *) a)->key, ((const Entry *) b)->key);
}

static int
table(const SieveSpace *space, const SieveLatencyOptions *o, SieveStore *store, guint samples, guint64 seed,
      guint calibrate)
{
  GError *error = NULL;
  g_autoptr(GPtrArray) genotypes = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_genotype_free);
  double size = sieve_space_size(space);
  gboolean all = samples == 0 && size <= ENUMERATE_MAX;
  if (samples == 0)
    samples = 1000;
  if (all) {
    g_autoptr(SieveGenotype) g = sieve_genotype_new(space);
    sieve_cli_enumerate(space, g, 0, genotypes);
  } else {
    SieveRng rng;
    sieve_rng_seed(&rng, seed);
    for (guint i = 0; i < samples; i++)
      g_ptr_array_add(genotypes, sieve_space_sample(space, &rng));
  }
  g_autoptr(SieveLatencyTable) t = sieve_latency_table_new(store, o);
  g_autoptr(GPtrArray) graphs = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_graph_free);
  g_autoptr(GArray) entries = g_array_new(FALSE, FALSE, sizeof(Entry));
  g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; i < genotypes->len; i++) {
    SieveGraph *graph = sieve_space_build(space, genotypes->pdata[i], &error);
    if (graph == NULL)
      return sieve_cli_fail(error);
    gboolean used = FALSE;
    g_autoptr(GPtrArray) keys = sieve_latency_table_keys(t, graph);
    for (guint n = 0; n < keys->len; n++) {
      /* Dead and free nodes (NULL) are no entries: no kernel runs for them. */
      if (keys->pdata[n] == NULL || g_hash_table_contains(seen, keys->pdata[n]))
        continue;
      char *key = g_strdup(keys->pdata[n]);
      g_hash_table_add(seen, key);
      Entry e = {key, graph, n, NAN};
      g_array_append_val(entries, e);
      used = TRUE;
    }
    if (used)
      g_ptr_array_add(graphs, graph);
    else
      sieve_graph_free(graph);
  }
  gint64 start = g_get_monotonic_time();
  /* Every missing entry measured together, then read. */
  if (!sieve_latency_table_fill(t, (const SieveGraph *const *) graphs->pdata, graphs->len, &error))
    return sieve_cli_fail(error);
  for (guint i = 0; i < entries->len; i++) {
    Entry *e = &g_array_index(entries, Entry, i);
    if (!sieve_latency_table_entry(t, e->graph, e->node, &e->ms, &error))
      return sieve_cli_fail(error);
  }
  double took = (g_get_monotonic_time() - start) / 1e6;
  start = g_get_monotonic_time();
  if (!sieve_latency_table_calibrate(t, space, calibrate, &error))
    return sieve_cli_fail(error);
  double took_fit = (g_get_monotonic_time() - start) / 1e6;
  double a, b, rms;
  guint n;
  gboolean fresh = FALSE;
  gboolean fitted = sieve_latency_table_get_fit(t, &a, &b, &n, &rms, &fresh);
  /* A calibration fitted now also read or measured the entries of its
   * networks that the candidates lack: they are listed and counted too, so
   * that measured + read is what is listed. */
  GHashTableIter it;
  gpointer key, ms;
  g_hash_table_iter_init(&it, sieve_latency_table_held(t));
  while (g_hash_table_iter_next(&it, &key, &ms))
    if (!g_hash_table_contains(seen, key)) {
      Entry e = {g_strdup(key), NULL, 0, *(const double *) ms};
      g_hash_table_add(seen, e.key);
      g_array_append_val(entries, e);
    }
  g_array_sort(entries, compare_entries);
  g_autofree char *machine = g_strdup(sieve_latency_table_machine(t));
  g_strdelimit(machine, "\n", ';');
  g_autofree char *also = fitted && fresh ? g_strdup_printf(" and %u calibration networks", n) : g_strdup("");
  printf("# latency table of space %s: %u operations from %s%u candidates%s; %u measured now, %u read from %s, "
         "in %.1f s\n# machine: %s\n",
         sieve_space_get_name(space), entries->len, all ? "all " : "", genotypes->len, also,
         sieve_latency_table_n_measured(t), entries->len - sieve_latency_table_n_measured(t),
         store ? sieve_store_get_path(store) : "(no store)", took, machine);
  if (fitted)
    printf("# calibration: latency = %.6f + %.6f * sum of entries (ms; least squares over %u networks of the "
           "space measured whole, residual rms %.4f ms), %s in %.1f s\n",
           a, b, n, rms, fresh ? "measured now" : "read from the store", took_fit);
  else
    printf("# calibration: none (--calibrate 0): the prediction is the sum of the entries\n");
  for (guint i = 0; i < entries->len; i++) {
    const Entry *e = &g_array_index(entries, Entry, i);
    printf("%.6f\t%s\n", e->ms, e->key);
  }
  return SIEVE_EXIT_OK;
}

int
sieve_cmd_latency(int argc, char **argv)
{
  g_autofree char *space_name = NULL, *arch = NULL, *arch_file = NULL, *store_path = NULL;
  g_auto(GStrv) overrides = NULL;
  gboolean as_table = FALSE, predict = FALSE, all_together = FALSE;
  /* G_MININT, G_MININT64: not given (0 then), so that a flag of --table
   * given in another mode is refused rather than ignored. */
  gint samples = G_MININT, calibrate = 0;
  gint64 seed = G_MININT64;
  SieveLatencyOptions d;
  sieve_latency_options_init(&d);
  /* max_runs -1: not given (the default, or --runs where that is more). */
  gint batch = (gint) d.batch, threads = (gint) d.threads, warmup = (gint) d.warmup, runs = (gint) d.min_runs,
       max_runs = -1;
  double rel_ci = d.rel_ci, seconds = d.max_seconds;
  GOptionEntry entries[] = {
      {"space", 's', 0, G_OPTION_ARG_STRING, &space_name, "architecture space plugin (default nb201)", "NAME"},
      {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &overrides, "set an option of the space, e.g. --set space.C=8",
       "space.KEY=VALUE"},
      {"arch", 'a', 0, G_OPTION_ARG_STRING, &arch, "the candidate, in the space's text form", "TEXT"},
      {"arch-file", 0, 0, G_OPTION_ARG_FILENAME, &arch_file, "candidates, one a line (# comments), measured in "
       "turn in this process: one JSON object a line", "FILE"},
      {"together", 0, 0, G_OPTION_ARG_NONE, &all_together, "with --arch-file: compile every candidate first, "
       "then time them in rounds, one forward of each per round, so that a machine whose speed drifts slows "
       "them all alike (for a ranking; --max-seconds is then each candidate's share)", NULL},
      {"table", 0, 0, G_OPTION_ARG_NONE, &as_table, "build and print the space's per-operation latency table", NULL},
      {"predict", 0, 0, G_OPTION_ARG_NONE, &predict, "with --arch: also the latency table's prediction", NULL},
      {"store", 0, 0, G_OPTION_ARG_FILENAME, &store_path,
       "store holding the latency table (read, and written with what is measured); default: none", "FILE"},
      {"samples", 0, 0, G_OPTION_ARG_INT, &samples, "--table: draw N candidates instead of enumerating the space "
       "(default: every candidate of a space of at most 100,000, else 1000 drawn)", "N"},
      {"seed", 0, 0, G_OPTION_ARG_INT64, &seed, "seed of those draws (default 0)", "N"},
      {"calibrate", 0, 0, G_OPTION_ARG_INT, &calibrate, "fit prediction = a + b * sum of entries on N networks of "
       "the space measured whole (default 0: the plain sum; 12 is nn-Meter's kind of fit)", "N"},
      {"batch", 'b', 0, G_OPTION_ARG_INT, &batch, "examples per forward (default 1)", "N"},
      {"threads", 't', 0, G_OPTION_ARG_INT, &threads, "threads per forward (default 1; 0: every core)", "N"},
      {"warmup", 0, 0, G_OPTION_ARG_INT, &warmup, "forwards dropped before timing (default 10)", "N"},
      {"runs", 0, 0, G_OPTION_ARG_INT, &runs, "timed forwards per round, and at least (default 20)", "N"},
      {"max-runs", 0, 0, G_OPTION_ARG_INT, &max_runs, "timed forwards at most, not fewer than --runs (default "
       "1000, or --runs where that is more)", "N"},
      {"rel-ci", 0, 0, G_OPTION_ARG_DOUBLE, &rel_ci, "stop when the median's 95% interval is narrower than this "
       "fraction of it (default 0.02)", "X"},
      {"max-seconds", 0, 0, G_OPTION_ARG_DOUBLE, &seconds, "stop timing one network after this long (default 2)",
       "S"},
      {NULL},
  };
  g_autoptr(GOptionContext) context =
      g_option_context_new("--arch TEXT | --arch-file FILE | --table - measure inference latency on this machine");
  g_option_context_set_description(
      context, "Protocol: compile for inference (eval mode), warm up, time single forwards with CLOCK_MONOTONIC\n"
               "until the median's 95% confidence interval is within --rel-ci of it (or --max-runs, --max-seconds);\n"
               "report the median and interquartile range.\n\nExamples:\n"
               "  sieve latency --space nb201 --arch '|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|"
               "skip_connect~0|nor_conv_3x3~1|skip_connect~2|' --predict\n"
               "  sieve latency --table --space nb201 --store latency.sieve");
  g_option_context_add_main_entries(context, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(context, &argc, &argv, &error))
    return sieve_cli_fail(error);
  if ((guint) as_table + (arch != NULL) + (arch_file != NULL) != 1 || argc > 1) {
    fprintf(stderr, "sieve latency: give --arch TEXT (one candidate), --arch-file FILE (several) or --table "
                    "(see 'sieve latency --help')\n");
    return SIEVE_EXIT_USAGE;
  }
  if (batch < 1 || threads < 0 || warmup < 0 || runs < 3 || (max_runs != -1 && max_runs < 3) || (samples != G_MININT && samples < 0) ||
      calibrate < 0 || !(rel_ci >= 0) || !(seconds >= 0)) {
    fprintf(stderr, "sieve latency: --batch, --runs and --max-runs must be at least 1, 3 and 3; --threads, "
                    "--warmup, --rel-ci, --max-seconds, --samples and --calibrate at least 0\n");
    return SIEVE_EXIT_USAGE;
  }
  if (max_runs != -1 && max_runs < runs) {
    fprintf(stderr, "sieve latency: --max-runs %d is fewer than --runs %d (the timed forwards of one round, and "
                    "the least timed)\n", max_runs, runs);
    return SIEVE_EXIT_USAGE;
  }
  if (max_runs == -1)
    max_runs = MAX((gint) d.max_runs, runs);
  /* Flags that would do nothing with the mode given are refused, not ignored. */
  if (all_together && arch_file == NULL) {
    fprintf(stderr, "sieve latency: --together measures the candidates of --arch-file together\n");
    return SIEVE_EXIT_USAGE;
  }
  if (!as_table && (samples != G_MININT || seed != G_MININT64)) {
    fprintf(stderr, "sieve latency: --samples and --seed draw the candidates of --table: give --table with them\n");
    return SIEVE_EXIT_USAGE;
  }
  if (as_table && predict) {
    fprintf(stderr, "sieve latency: --predict goes with --arch or --arch-file (--table prints the entries a "
                    "prediction sums)\n");
    return SIEVE_EXIT_USAGE;
  }
  samples = MAX(samples, 0);
  seed = seed == G_MININT64 ? 0 : seed;
  if (calibrate > 0 && !as_table && !predict) {
    fprintf(stderr, "sieve latency: --calibrate fits the latency table's prediction: give --predict with it "
                    "(or use --table)\n");
    return SIEVE_EXIT_USAGE;
  }
  Flags f = {(guint) batch, (guint) threads, (guint) warmup, (guint) runs, (guint) max_runs, rel_ci, seconds};
  SieveLatencyOptions o;
  if (!options_from_flags(&f, &o, &error))
    return sieve_cli_fail(error);

  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  g_autoptr(GPtrArray) refused = g_ptr_array_new_with_free_func((GDestroyNotify) g_error_free);
  sieve_registry_load_default(registry, NULL, refused);
  sieve_cli_warn_refused(refused);
  g_autoptr(SieveSpace) space =
      sieve_cli_open_space(registry, space_name ? space_name : "nb201", overrides, "measure", &error);
  if (space == NULL)
    return sieve_cli_fail(error);
  g_autoptr(SieveStore) store = NULL;
  if (store_path != NULL && !(store = sieve_store_open(store_path, SIEVE_STORE_WRITE, &error)))
    return sieve_cli_fail(error);
  if (as_table)
    return table(space, &o, store, (guint) samples, (guint64) seed, (guint) calibrate);
  return candidates(space, arch, arch_file, &o, store, predict, (guint) calibrate, all_together);
}
