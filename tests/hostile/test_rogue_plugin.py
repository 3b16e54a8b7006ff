"""A C plugin that breaks the public API's contracts (rogue-plugin.c) is
contained: its misbehaviour fails the one trial with a reason that names the
component, or refuses the study before anything is stored, and never ends
as an error of the store or a crash."""
import csv
import io
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile import Scratch, sieve  # noqa: E402

PLUGIN = os.environ["HOSTILE_ROGUE_PLUGIN"]

CONFIG = """name: rogue
seed: 1
plugin_path: [%s]
space: {plugin: rogue_space}
optimizer: %s
evaluator: %s
objective: {metric: score, direction: maximize}
budget: {evaluations: 3}
"""


class RoguePlugin(Scratch):
    def run_study(self, evaluator, optimizer="{plugin: random}", code=0, *needles):
        config = self.write("study.yaml", CONFIG % (PLUGIN, optimizer, evaluator))
        self.studies = getattr(self, "studies", 0) + 1
        store = self.path("s%d.sieve" % self.studies)
        p = sieve("run", config, "--store", store, "-q", timeout=60)
        self.expect(p, code, *needles)
        self.assertNotIn("CRITICAL", p.stderr)
        self.assertNotIn("error of its store", p.stderr)
        return p, store

    def rows(self, store):
        return list(csv.DictReader(io.StringIO(sieve("export", store, "--format", "csv").stdout)))

    def failed_trials(self, evaluator, reason):
        """Trial 0 ok, trials 1 and 2 failed with reason; the study ran to its budget."""
        p, store = self.run_study(evaluator)
        rows = self.rows(store)
        self.assertEqual([r["status"] for r in rows], ["ok", "failed", "failed"], rows)
        for r in rows[1:]:
            self.assertIn(reason, r["reason"], rows)
        return rows

    # ---- 1: the status an evaluator's result carries --------------------------
    def test_status_not_an_evaluators(self):
        for status in ("pending", "cached", "screened", "rejected"):
            with self.subTest(status=status):
                self.failed_trials("{plugin: rogue_eval, mode: status_%s}" % status,
                                   "evaluator 'rogue_eval' returned a result of status %s; an evaluator "
                                   "returns ok or failed (pruned with intermediate values)" % status)

    def test_status_out_of_the_enum(self):
        self.failed_trials("{plugin: rogue_eval, mode: status_99}",
                           "evaluator 'rogue_eval' returned a result of status 99")

    def test_pruned_without_intermediate_values(self):
        # rogue_eval does not declare SIEVE_EVALUATOR_INTERMEDIATE: nothing could have pruned it.
        self.failed_trials("{plugin: rogue_eval, mode: status_pruned}",
                           "evaluator 'rogue_eval' returned a result of status pruned")

    # ---- 2: evaluate returning NULL -------------------------------------------
    def test_null_without_error_fails_the_trial(self):
        self.failed_trials("{plugin: rogue_eval, mode: no_result}", "evaluator 'rogue_eval' returned no result and no error")

    def test_null_with_error_stops_the_study(self):
        # As evaluator.h says: the study stops on the evaluator's error, trial 1 stays pending for --resume.
        p, store = self.run_study("{plugin: rogue_eval, mode: null_error}", "{plugin: random}", 1,
                                  "evaluator 'rogue_eval': cannot work at all")
        self.assertEqual([r["status"] for r in self.rows(store)], ["ok", "pending"])

    # ---- 3: create returning nothing and no error -----------------------------
    def test_create_returning_nothing(self):
        p, store = self.run_study("{plugin: rogue_eval}", "{plugin: rogue_opt, mode: create_nothing}", 1,
                                  "optimizer 'rogue_opt': create returned nothing and no error")
        self.assertEqual(p.returncode, 1)  # refused, not a signal
        # An evaluator may keep no state (as a space may): its methods get NULL (a review found
        # the refusal above, applied to evaluators too, broke such plugins).
        p, store = self.run_study("{plugin: rogue_eval, mode: create_nothing}", "{plugin: rogue_opt}")
        self.assertEqual([r["status"] for r in self.rows(store)], ["ok"] * 3)

    def test_rogue_opt_works(self):
        p, store = self.run_study("{plugin: rogue_eval}", "{plugin: rogue_opt}")
        self.assertEqual([r["status"] for r in self.rows(store)], ["ok"] * 3)

    # ---- 4: costs -------------------------------------------------------------
    def test_cost_not_a_number_of_seconds(self):
        for mode, shown in (("cost_negative", "-5"), ("cost_nan", "nan"), ("cost_inf", "inf")):
            with self.subTest(mode=mode):
                rows = self.failed_trials("{plugin: rogue_eval, mode: %s}" % mode,
                                          "evaluator 'rogue_eval' reported cost %s s; a cost is a finite number of "
                                          "seconds >= 0" % shown)
                for r in rows:
                    self.assertGreaterEqual(float(r["cost_s"]), 0, rows)

    def test_huge_cost_is_kept(self):
        p, store = self.run_study("{plugin: rogue_eval, mode: cost_huge}")
        self.assertEqual([r["status"] for r in self.rows(store)], ["ok"] * 3)

    # ---- 5: the fidelity an evaluator offers ----------------------------------
    def test_fidelity_out_of_its_bounds(self):
        for options, shown in (("min: 0", "[0, 9]"), ("min: -3", "[-3, 9]"), ("min: 5, max: 2", "[5, 2]"),
                               ("inf_max: true", "[1, inf]")):
            with self.subTest(options=options):
                config = self.write("study.yaml", CONFIG % (PLUGIN, "{plugin: random}",
                                                            "{plugin: rogue_fid, %s}" % options))
                store = self.path("never.sieve")
                p = sieve("run", config, "--store", store, "-q", timeout=60)
                self.expect(p, 2, "study.yaml:6:", "evaluator 'rogue_fid' offers the fidelity epochs in %s: a "
                            "fidelity has a name and 0 < min <= max, both finite" % shown)
                self.assertFalse(os.path.exists(store), "refused before any store is written")

    def test_fidelity_within_its_bounds(self):
        p, store = self.run_study("{plugin: rogue_fid, min: 1, max: 1}")
        self.assertEqual([r["status"] for r in self.rows(store)], ["ok"] * 3)

    # ---- 6: intermediate steps ------------------------------------------------
    def test_step_that_goes_back(self):
        self.failed_trials("{plugin: rogue_fid, steps: [1, 2, 5, 3, 4]}",
                           "evaluator 'rogue_fid' reported step 3 after step 5; a step grows within one evaluation")

    def test_negative_step(self):
        self.failed_trials("{plugin: rogue_fid, steps: [-1, 0, 1]}",
                           "evaluator 'rogue_fid' reported step -1; a step is a whole number >= 0")

    def test_step_reported_again_is_kept_once(self):
        # Optuna's repeat: ignored with a warning, not a failure.
        p, store = self.run_study("{plugin: rogue_fid, steps: [0, 1, 1, 2]}")
        self.assertEqual([r["status"] for r in self.rows(store)], ["ok"] * 3)

    # ---- 7: metric names ------------------------------------------------------
    def test_metric_name_a_column_cannot_have(self):
        self.failed_trials("{plugin: rogue_eval, mode: name_empty}",
                           "evaluator 'rogue_eval' reported a metric named \"\": a metric needs a name")
        self.failed_trials("{plugin: rogue_eval, mode: name_newline}",
                           "evaluator 'rogue_eval' reported a metric named \"a\\nb\": a metric needs a name "
                           "without control characters (newlines, tabs)")

    def test_odd_metric_name_is_kept(self):
        p, store = self.run_study("{plugin: rogue_eval, mode: name_odd}")
        self.assertEqual([r["status"] for r in self.rows(store)], ["ok"] * 3)

    # ---- 8: a space's check that gives no reason ------------------------------
    def test_check_without_a_reason(self):
        p, store = self.run_study("{plugin: rogue_eval}", "{plugin: rogue_opt, mode: odd}", 1,
                                  "optimizer 'rogue_opt' proposed an invalid genotype: space 'rogue_space' rejected "
                                  "it without a reason")
        self.assertNotIn("another space", p.stderr)
        self.assertEqual([r["status"] for r in self.rows(store)], ["ok"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
