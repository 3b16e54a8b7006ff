/* Pruners (src/core/pruner.c) on synthetic learning curves whose answers
 * are worked out by hand from the rules of Optuna 3.1
 * (optuna/pruners/_percentile.py, _patient.py), which sieve's follow:
 * bench/training_aware.py checks the same decisions against Optuna itself. */
#include <math.h>
#include <string.h>

#include "core/core-private.h"
#include "engine/engine-private.h"

static SievePruner *
pruner_new(const char *yaml, gboolean maximize)
{
  GError *error = NULL;
  g_autoptr(SieveNode) node = sieve_node_parse_string(yaml, -1, "test", &error);
  g_assert_no_error(error);
  SievePruner *p = sieve_pruner_new(node, ".", maximize, &error);
  g_assert_no_error(error);
  return p;
}

/* A curve: values at steps 1, 2, ... (NAN allowed). */
static void
complete(SievePruner *p, const double *values, guint n)
{
  SieveIntermediate v[16];
  for (guint i = 0; i < n; i++)
    v[i] = (SieveIntermediate){.trial = 0, .step = i + 1, .fidelity = NAN, .value = values[i]};
  sieve_pruner_add_completed(p, v, n);
}

static gboolean
judge(SievePruner *p, const double *values, guint n)
{
  SieveIntermediate v[16];
  for (guint i = 0; i < n; i++)
    v[i] = (SieveIntermediate){.trial = 9, .step = i + 1, .fidelity = NAN, .value = values[i]};
  return sieve_pruner_judge(p, v, n);
}

/* Three completed accuracy curves: medians 0.3 at step 1, 0.4 at step 2. */
static const double t1[] = {0.5, 0.6, 0.7}, t2[] = {0.3, 0.4, 0.5}, t3[] = {0.1, 0.2, 0.3};

static SievePruner *
with_three(const char *yaml, gboolean maximize)
{
  SievePruner *p = pruner_new(yaml, maximize);
  complete(p, t1, 3);
  complete(p, t2, 3);
  complete(p, t3, 3);
  return p;
}

static void
test_median(void)
{
  g_autoptr(SievePruner) p = with_three("{kind: median, startup_trials: 3}", TRUE);
  g_assert_true(judge(p, (double[]){0.25}, 1));       /* 0.25 < median 0.3 */
  g_assert_false(judge(p, (double[]){0.3}, 1));       /* not below */
  g_assert_false(judge(p, (double[]){0.35, 0.45}, 2)); /* best 0.45 >= 0.4 */
  /* The best so far counts, not the last value: 0.5 then 0.1 is kept at step 2. */
  g_assert_false(judge(p, (double[]){0.5, 0.1}, 2));
  g_assert_true(judge(p, (double[]){0.25, 0.35}, 2)); /* best 0.35 < 0.4 */
  /* No completed trial reported step 5: no decision. */
  g_assert_false(judge(p, (double[]){0, 0, 0, 0, 0}, 5));
  /* Every value NaN: pruned (Optuna's rule). */
  g_assert_true(judge(p, (double[]){NAN}, 1));
}

/* The percentile is numpy's to the last bit (Optuna 3.1 on numpy 1.24):
 * over 0.0194 and 0.4094, the 90th (maximize, percentile 10) is
 * 0.4094 - 0.39 * 0.1 = 0.3704 exactly, where 0.0194 + 0.39 * 0.9 rounds
 * to 0.37040000000000006; a trial at 0.3704 (1852 of 5000 validation
 * images) is not below it: Optuna keeps it (checked with
 * optuna.pruners.PercentilePruner(10.0, n_startup_trials=1) on this
 * machine's /usr/bin/python3). */
static void
test_percentile_rounding(void)
{
  g_autoptr(SievePruner) p = pruner_new("{kind: percentile, percentile: 10, startup_trials: 1}", TRUE);
  complete(p, (double[]){0.0194}, 1);
  complete(p, (double[]){0.4094}, 1);
  g_assert_false(judge(p, (double[]){0.3704}, 1));
  g_assert_true(judge(p, (double[]){nextafter(0.3704, 0)}, 1));
}

static void
test_warmup_interval_startup(void)
{
  g_autoptr(SievePruner) warm = with_three("{kind: median, startup_trials: 3, warmup_steps: 2}", TRUE);
  g_assert_false(judge(warm, (double[]){0.25}, 1));       /* step 1 < warm-up 2 */
  g_assert_true(judge(warm, (double[]){0.25, 0.35}, 2));
  /* interval 2 from warm-up 0: judged at the first report in [0,2), [2,4) ... */
  g_autoptr(SievePruner) every2 = with_three("{kind: median, startup_trials: 3, interval_steps: 2}", TRUE);
  g_assert_true(judge(every2, (double[]){0.25}, 1));             /* first in [0, 2) */
  g_assert_true(judge(every2, (double[]){0.25, 0.35}, 2));       /* first in [2, 4) */
  g_assert_false(judge(every2, (double[]){0.25, 0.35, 0.4}, 3)); /* second in [2, 4) */
  g_autoptr(SievePruner) early = with_three("{kind: median, startup_trials: 4}", TRUE);
  g_assert_false(judge(early, (double[]){0.0}, 1)); /* 3 completed < 4 startup trials */
  g_autoptr(SievePruner) few = with_three("{kind: median, startup_trials: 0, min_trials: 4}", TRUE);
  g_assert_false(judge(few, (double[]){0.0}, 1)); /* 3 values at step 1 < min_trials 4 */
  g_autoptr(SievePruner) none = pruner_new("{kind: median, startup_trials: 0}", TRUE);
  g_assert_false(judge(none, (double[]){0.0}, 1)); /* no completed trial at all */
}

static void
test_percentile(void)
{
  /* Maximize, percentile 25: pruned below the 75th percentile of [0.5, 0.3, 0.1]
   * at step 1: position 0.75 * 2 = 1.5, 0.3 + 0.5 (0.5 - 0.3) = 0.4. */
  g_autoptr(SievePruner) p = with_three("{kind: percentile, percentile: 25, startup_trials: 3}", TRUE);
  g_assert_true(judge(p, (double[]){0.39}, 1));
  g_assert_false(judge(p, (double[]){0.41}, 1));
  /* Minimize (losses 0.5, 0.3, 0.1 at step 1): the 25th percentile is
   * 0.1 + 0.5 (0.3 - 0.1) = 0.2; pruned above it. */
  g_autoptr(SievePruner) q = with_three("{kind: percentile, percentile: 25, startup_trials: 3}", FALSE);
  g_assert_true(judge(q, (double[]){0.21}, 1));
  g_assert_false(judge(q, (double[]){0.19}, 1));
}

static void
test_patience(void)
{
  /* patience 2: the best of the last 3 values against the best before them. */
  g_autoptr(SievePruner) p = pruner_new("{kind: patience, patience: 2}", TRUE);
  g_assert_false(judge(p, (double[]){0.5, 0.6, 0.55}, 3));            /* only 3 values: not more than 3 */
  g_assert_true(judge(p, (double[]){0.5, 0.6, 0.55, 0.58, 0.59}, 5));  /* 0.59 < 0.6 */
  g_assert_false(judge(p, (double[]){0.5, 0.6, 0.55, 0.58, 0.61}, 5)); /* improved */
  g_autoptr(SievePruner) d = pruner_new("{kind: patience, patience: 2, min_delta: 0.02}", TRUE);
  g_assert_false(judge(d, (double[]){0.5, 0.6, 0.55, 0.58, 0.59}, 5)); /* 0.6 - 0.02 > 0.59 is false */
  g_autoptr(SievePruner) loss = pruner_new("{kind: patience, patience: 1}", FALSE);
  g_assert_true(judge(loss, (double[]){1.0, 0.8, 0.9, 0.85}, 4));   /* min(0.9, 0.85) > 0.8 */
  g_assert_false(judge(loss, (double[]){1.0, 0.8, 0.9, 0.75}, 4));
}

static void
test_bad_config(void)
{
  GError *error = NULL;
  g_autoptr(SieveNode) node = sieve_node_parse_string("{kind: mean}", -1, "exp.yaml", &error);
  g_assert_no_error(error);
  g_assert_null(sieve_pruner_new(node, ".", TRUE, &error));
  g_assert_nonnull(error);
  g_assert_true(g_str_has_prefix(error->message, "exp.yaml:1:"));
  g_test_message("%s", error->message);
  g_clear_error(&error);
  g_autoptr(SieveNode) typo = sieve_node_parse_string("{kind: median, warmup: 2}", -1, "exp.yaml", &error);
  g_assert_null(sieve_pruner_new(typo, ".", TRUE, &error));
  g_assert_nonnull(strstr(error->message, "warmup_steps"));
  g_clear_error(&error);
  /* No kind at all: a located error naming the option, not a NULL kind read later. */
  g_autoptr(SieveNode) none = sieve_node_parse_string("{warmup_steps: 2}", -1, "exp.yaml", &error);
  g_assert_null(sieve_pruner_new(none, ".", TRUE, &error));
  g_assert_nonnull(error);
  g_assert_true(g_str_has_prefix(error->message, "exp.yaml:1:"));
  g_assert_nonnull(strstr(error->message, "kind"));
  g_test_message("%s", error->message);
  g_clear_error(&error);
}

/* An option of another kind is an error located at it, not a setting
 * silently ignored ({kind: patience, warmup_steps: 5} pruned at step 3). */
static void
test_option_of_another_kind(void)
{
  static const struct {
    const char *yaml, *option;
    guint column;
  } bad[] = {
      {"{kind: patience, patience: 1, warmup_steps: 5}", "warmup_steps", 45},
      {"{kind: patience, startup_trials: 3}", "startup_trials", 34},
      {"{kind: patience, interval_steps: 2}", "interval_steps", 34},
      {"{kind: patience, min_trials: 2}", "min_trials", 30},
      {"{kind: patience, percentile: 25}", "percentile", 30},
      {"{kind: median, percentile: 10}", "percentile", 28},
      {"{kind: median, patience: 3}", "patience", 26},
      {"{kind: percentile, min_delta: 0.1}", "min_delta", 31},
  };
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    GError *error = NULL;
    g_autoptr(SieveNode) node = sieve_node_parse_string(bad[i].yaml, -1, "exp.yaml", &error);
    g_assert_no_error(error);
    g_assert_null(sieve_pruner_new(node, ".", TRUE, &error));
    g_assert_nonnull(error);
    g_test_message("%s", error->message);
    g_autofree char *at = g_strdup_printf("exp.yaml:1:%u:", bad[i].column);
    g_assert_true(g_str_has_prefix(error->message, at));
    g_assert_nonnull(strstr(error->message, bad[i].option));
    g_assert_nonnull(strstr(error->message, "does not apply"));
    g_clear_error(&error);
  }
  /* Median is percentile 50 (Optuna's MedianPruner): 50 written is the default. */
  g_autoptr(SievePruner) fifty = pruner_new("{kind: median, percentile: 50, warmup_steps: 0, startup_trials: 5}", TRUE);
  g_autoptr(SievePruner) patient = pruner_new("{kind: patience, patience: 1, min_delta: 0}", TRUE);
}

/* Patience from its definition: nanmax of the values before the last
 * patience + 1 against nanmax of those (maximizing). */
static gboolean
naive_patience(const double *v, guint n, guint patience, double min_delta)
{
  if (n <= patience + 1)
    return FALSE;
  double before = NAN, after = NAN;
  for (guint i = 0; i < n; i++) {
    double *best = i < n - patience - 1 ? &before : &after;
    if (!isnan(v[i]) && (isnan(*best) || v[i] > *best))
      *best = v[i];
  }
  return before - min_delta > after;
}

/* A trial judged report by report (sieve_pruner_judge_curve, O(1) per
 * report appended) decides as its whole curve judged from scratch, and as
 * the rule's definition, with steps reported again, out of order, and NaN. */
static void
test_incremental_equals_from_scratch(void)
{
  static const char *const rules[] = {
      "{kind: median, startup_trials: 2}",
      "{kind: percentile, percentile: 30, startup_trials: 1, warmup_steps: 3, interval_steps: 2, min_trials: 2}",
      "{kind: patience, patience: 0}",
      "{kind: patience, patience: 3}",
      "{kind: patience, patience: 2, min_delta: 0.05}",
  };
  GRand *rand = g_rand_new_with_seed(7);
  for (guint r = 0; r < G_N_ELEMENTS(rules); r++)
    for (guint maximize = 0; maximize < 2; maximize++) {
      g_autoptr(SievePruner) p = pruner_new(rules[r], maximize);
      for (guint t = 0; t < 4; t++) {
        double c[16];
        for (guint i = 0; i < 16; i++)
          c[i] = g_rand_int_range(rand, 0, 8) == 0 ? NAN : g_rand_double(rand);
        complete(p, c, 10 + t);
      }
      guint pruned = 0, kept = 0; /* reports judged each way: both, or the comparison proves nothing */
      for (guint trial = 0; trial < 30; trial++) {
        g_autoptr(GArray) values = g_array_new(FALSE, FALSE, sizeof(SieveIntermediate));
        g_autoptr(SievePrunerCurve) curve = sieve_pruner_curve_new(G_MAXINT64);
        guint decisions = 0;
        for (guint k = 0; k < 60; k++) {
          /* Mostly the next step; sometimes one reported again or an earlier one. */
          gint64 last = values->len ? g_array_index(values, SieveIntermediate, values->len - 1).step : 0;
          guint roll = g_rand_int_range(rand, 0, 10);
          gint64 step = roll == 0 && last > 0 ? last : roll == 1 && last > 2 ? g_rand_int_range(rand, 1, (gint32) last)
                                                                              : last + 1;
          SieveIntermediate v = {.trial = 9, .step = step, .fidelity = NAN,
                                 .value = g_rand_int_range(rand, 0, 10) == 0 ? NAN : g_rand_double(rand)};
          guint changed = sieve_engine_keep_intermediate(values, &v);
          const SieveIntermediate *data = (const SieveIntermediate *) values->data;
          gboolean now = sieve_pruner_judge_curve(p, curve, data, values->len, changed);
          g_assert_cmpint(now, ==, sieve_pruner_judge(p, data, values->len));
          if (strstr(rules[r], "patience:") != NULL && maximize) {
            double plain[128];
            for (guint i = 0; i < values->len; i++)
              plain[i] = data[i].value;
            guint patience = (guint) g_ascii_strtoull(strstr(rules[r], "patience: ") + 10, NULL, 10);
            double delta = strstr(rules[r], "min_delta") ? 0.05 : 0;
            g_assert_cmpint(now, ==, naive_patience(plain, values->len, patience, delta));
          }
          decisions += now;
        }
        g_test_message("%s maximize %u trial %u: pruned on %u of 60 reports", rules[r], maximize, trial, decisions);
        pruned += decisions;
        kept += 60 - decisions;
      }
      g_assert_cmpuint(pruned, >, 0);
      g_assert_cmpuint(kept, >, 0);
    }
  g_rand_free(rand);
}

/* Judged against the first `seen` completed trials only (tell_order:
 * trial): the ones completed later do not count, neither for startup_trials
 * nor at the step. */
static void
test_seen(void)
{
  g_autoptr(SievePruner) p = with_three("{kind: median, startup_trials: 1}", TRUE);
  SieveIntermediate v = {.trial = 9, .step = 1, .fidelity = NAN, .value = 0.25};
  g_autoptr(SievePrunerCurve) none = sieve_pruner_curve_new(0);
  g_assert_false(sieve_pruner_judge_curve(p, none, &v, 1, 0)); /* no completed trial seen */
  g_autoptr(SievePrunerCurve) first = sieve_pruner_curve_new(1);
  g_assert_true(sieve_pruner_judge_curve(p, first, &v, 1, 0)); /* 0.25 < t1's 0.5 alone */
  v.value = 0.6;
  g_assert_false(sieve_pruner_judge_curve(p, first, &v, 1, 0));
  v.value = 0.45;
  g_assert_true(sieve_pruner_judge_curve(p, first, &v, 1, 0)); /* 0.45 < 0.5 */
  g_autoptr(SievePrunerCurve) all = sieve_pruner_curve_new(G_MAXINT64);
  g_assert_false(sieve_pruner_judge_curve(p, all, &v, 1, 0)); /* 0.45 >= median 0.3 of the three */
  g_assert_cmpint(sieve_pruner_count_completed(p), ==, 3);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/pruner/median", test_median);
  g_test_add_func("/pruner/warmup-interval-startup", test_warmup_interval_startup);
  g_test_add_func("/pruner/percentile", test_percentile);
  g_test_add_func("/pruner/percentile-rounding", test_percentile_rounding);
  g_test_add_func("/pruner/patience", test_patience);
  g_test_add_func("/pruner/bad-config", test_bad_config);
  g_test_add_func("/pruner/option-of-another-kind", test_option_of_another_kind);
  g_test_add_func("/pruner/incremental-equals-from-scratch", test_incremental_equals_from_scratch);
  g_test_add_func("/pruner/seen", test_seen);
  return g_test_run();
}
