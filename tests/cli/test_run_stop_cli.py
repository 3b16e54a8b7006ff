#!/usr/bin/env python3
"""What `sieve run` says when a study stops on an error: --resume is
suggested only where it can help (bug hunt, item 6: it was suggested for a
corrupt store and for an experiment whose network does not fit its data,
both of which --resume meets again at once)."""
import os
import sqlite3
import sys
import unittest

ROOT = os.environ["SIEVE_SOURCE_ROOT"]
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import sieve_cli  # noqa: E402
from sieve_cli import export_rows, sieve  # noqa: E402

DATA = os.environ.get("SIEVE_DATA_DIR", "/usr/share/datasets")
BRANIN = sieve_cli.branin_config("stop", 3)


class TestStopMessage(sieve_cli.Workdir):
    prefix = "sieve-stop-"

    def test_corrupt_store(self):
        cfg = self.write("b.yaml", BRANIN)
        store = self.path("c.sieve")
        sieve("run", cfg, "--store", store, "-q", check=0)
        con = sqlite3.connect(store)
        con.execute("update state set data=randomblob(100)")
        con.commit()
        con.close()
        p = sieve("run", cfg, "--store", store, "--resume", "--set", "budget.evaluations=6", check=1)
        self.assertNotIn("continue with --resume", p.stderr)
        self.assertIn("stopped on an error of its store", p.stderr)
        self.assertIn("--resume would meet the same error", p.stderr)
        self.assertIn("corrupt store", p.stderr)
        # Kept as it was: the three trials still read.
        self.assertEqual(len(export_rows(store)), 3)

    @unittest.skipUnless(os.path.isdir(os.path.join(DATA, "fashion-mnist")), "no Fashion-MNIST")
    def test_experiment_error(self):
        # nb201's default 3x32x32 input on 1x28x28 images: found at the first trial.
        cfg = self.write("t.yaml", f"""\
name: shape
space: {{plugin: nb201, C: 4, N: 1}}
optimizer: {{plugin: random}}
evaluator: {{plugin: train, dataset: fashion-mnist, data_dir: {os.path.join(DATA, "fashion-mnist")}, train_limit: 64, validation: 32, batch_size: 16}}
objective: {{metric: val_acc}}
budget: {{evaluations: 1}}
""")
        p = sieve("run", cfg, "--store", self.path("t.sieve"), check=2)
        self.assertIn("1x28x28 per example but the network takes 3x32x32", p.stderr)
        self.assertNotIn("continue with --resume", p.stderr)
        self.assertIn("stopped on an error of its experiment", p.stderr)
        self.assertIn("start it with another --store", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
