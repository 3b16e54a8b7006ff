#!/usr/bin/env python3
"""Continuation and pruning with the train evaluator through `sieve run`,
on real Fashion-MNIST: a successive-halving study whose promoted
configurations continue from states kept in state_dir, killed with SIGKILL
after its first promotion and resumed, ends with the trials of an
uninterrupted run, and the promotions run after the kill still continue
(their states survived it); and a training the pruner stops counts, in
epochs_run, the steps it ran, not the fidelity it was asked for."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from test_cli import Workdir, export_rows  # noqa: E402
import test_cli  # noqa: E402

HAVE_DATA = any(os.path.exists(os.path.join("/usr/share/datasets/fashion-mnist", f))
                for f in ("train-images-idx3-ubyte.gz", "train-images-idx3-ubyte"))

# 256 training images in batches of 32: 8 steps per epoch.
EVALUATOR = """evaluator: {plugin: train, train_limit: 256, validation: 128, test: false, batch_size: 32, epochs: 1,
            min_epochs: 0.25, lr: 0.05, threads: 1, seed: 3, continuation: true, state_dir: %(states)s,
            report_every: %(every)d}
"""
HALVING = """name: continued
seed: 5
space: {plugin: nb201, C: 4, N: 1, in_channels: 1, size: 28}
optimizer: {plugin: successive_halving, eta: 2}
objective: {metric: val_acc, direction: maximize}
budget: {evaluations: 7}
""" + EVALUATOR
PRUNED = """name: pruned
seed: 2
space: {plugin: nb201, C: 4, N: 1, in_channels: 1, size: 28}
optimizer: {plugin: random}
pruner: {kind: percentile, percentile: 1, startup_trials: 1}
objective: {metric: val_acc, direction: maximize}
budget: {evaluations: 5}
""" + EVALUATOR
STOPPED = """name: stopped
seed: 5
space: {plugin: nb201, C: 4, N: 1, in_channels: 1, size: 28}
optimizer: {plugin: successive_halving, eta: 2}
pruner: {kind: patience, patience: 0}
objective: {metric: val_acc, direction: maximize}
budget: {evaluations: 3}
""" + EVALUATOR.replace("min_epochs: 0.25", "min_epochs: 0.5")
ENDED = """name: ended
seed: 4
space: {plugin: nb201, C: 4, N: 1, in_channels: 1, size: 28}
optimizer: {plugin: successive_halving, eta: 2, n_configs: 6}
pruner: {kind: median, startup_trials: 1}
objective: {metric: val_acc, direction: maximize}
budget: {evaluations: 6}
""" + EVALUATOR.replace("min_epochs: 0.25", "min_epochs: 0.5")
COMPARED = ("number", "status", "genotype", "fidelity", "val_acc", "train_loss", "train_acc")


@unittest.skipUnless(HAVE_DATA, "no Fashion-MNIST under /usr/share/datasets (dataset-fashion-mnist)")
class TestContinuation(Workdir):
    run_until = test_cli.TestKillResume.run_until

    def test_continued_trials_survive_kill(self):
        ref_cfg = self.write_config("ref.yaml", HALVING % {"states": self.path("ref-states"), "every": 0})
        ref = self.path("ref.sieve")
        self.run_until(ref_cfg, ref, resume=False)
        reference = export_rows(ref)
        # successive halving, eta 2 from 1/4 epoch: 4 at 0.25, 2 at 0.5, 1 at 1.
        self.assertEqual([float(r["fidelity"]) for r in reference], [0.25] * 4 + [0.5] * 2 + [1.0])
        self.assertTrue(all(r["status"] == "ok" for r in reference), reference)
        # Each promotion ran only what its lower rung had not: 2 of 4 steps, then 4 of 8.
        self.assertEqual([float(r["epochs_run"]) for r in reference], [0.25] * 6 + [0.5])
        # One state per configuration below the full fidelity; the one that reached it needs none.
        self.assertEqual(len(os.listdir(self.path("ref-states"))), 3)

        cfg = self.write_config("kill.yaml", HALVING % {"states": self.path("states"), "every": 0})
        store = self.path("kill.sieve")
        self.run_until(cfg, store, resume=False, kill_at=5)
        before = [r for r in export_rows(store) if r["status"] != "pending"]
        self.assertGreaterEqual(len(before), 5, "a finished trial was lost")
        self.assertLess(len(before), 7, "the study ended before the kill")
        self.run_until(cfg, store, resume=True)
        after = export_rows(store)
        self.assertEqual([{k: r[k] for k in COMPARED} for r in after], [{k: r[k] for k in COMPARED} for r in reference])
        for r in after[len(before):]:
            # Promotions run after the kill continued from the states in state_dir: less than their fidelity.
            self.assertLess(float(r["epochs_run"]), float(r["fidelity"]), r)
        self.assertEqual(len(os.listdir(self.path("states"))), 3)

    def pruned_study(self, name, template, every):
        """Runs template's study (states in NAME-states) to its end: its trials, and the pruned ones."""
        cfg = self.write_config(name + ".yaml", template % {"states": self.path(name + "-states"), "every": every})
        store = self.path(name + ".sieve")
        self.run_until(cfg, store, resume=False)
        rows = export_rows(store)
        pruned = [r for r in rows if r["status"] == "pruned"]
        self.assertTrue(pruned, "no training was pruned: the test shows nothing")
        return rows, pruned

    def test_pruned_training_counts_what_it_ran(self):
        rows, pruned = self.pruned_study("pruned", PRUNED, 2)
        for r in pruned:
            steps = float(r["step"])
            self.assertLess(steps, 8, r)
            # 8 steps per epoch: what it ran, not the 1 epoch it was asked for.
            self.assertAlmostEqual(float(r["epochs_run"]), steps / 8, places=12, msg=r)
            self.assertAlmostEqual(float(r["epochs"]), steps / 8, places=12, msg=r)
            self.assertAlmostEqual(float(r["fidelity"]), steps / 8, places=12, msg=r)
        for r in rows:
            if r["status"] == "ok":
                self.assertEqual(float(r["epochs_run"]), 1.0, r)

    def test_a_pruned_training_keeps_no_state(self):
        """A training the pruner stopped below the full fidelity is never promoted: no state of it stays in
        state_dir (one file each, before), only those of the configurations that finished their rung."""
        rows, _ = self.pruned_study("stopped", STOPPED, 1)
        ok = [r for r in rows if r["status"] == "ok" and float(r["fidelity"]) < 1]
        self.assertEqual(len(os.listdir(self.path("stopped-states"))), len({r["genotype"] for r in ok}), rows)


    def test_a_training_pruned_at_its_last_step_keeps_no_state(self):
        """A rung's last value comes from the final evaluation pass (report_every 4 of its 4 steps: the only one),
        and the pruner may stop the trial there too, as an Optuna loop prunes after its last epoch's report: then
        its state is not kept either (it stayed in state_dir, before, for a configuration never promoted)."""
        rows, pruned = self.pruned_study("ended", ENDED, 4)
        for r in pruned:
            self.assertEqual(float(r["step"]), 4, r)
        ok = [r for r in rows if r["status"] == "ok"]
        self.assertEqual(len(os.listdir(self.path("ended-states"))), len(ok), rows)


if __name__ == "__main__":
    unittest.main(verbosity=2)
