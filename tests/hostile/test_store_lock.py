"""Hole 4 of issue 20: one writer per store FILE, whatever name reaches it.
A study holds the store (its evaluator sleeps); a second `sieve run` on the
same file through a symlink or a hard link must be refused (exit 1, both
the name used and the lock named) and leave the store unchanged; a clean
exit leaves no lock file behind."""
import os
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile import SIEVE, Scratch, sieve  # noqa: E402

CONFIG = """name: lock
seed: 1
space: {plugin: hpo, file: space.yaml}
optimizer: {plugin: random}
evaluator:
  plugin: command
  argv: [sh, -c, "sleep $HOSTILE_SLEEP; echo '{{\\"value\\": 1}}'"]
objective: {metric: value, direction: minimize}
budget: {evaluations: 2}
"""


class StoreLock(Scratch):
    def setUp(self):
        super().setUp()
        self.write("space.yaml", "parameters:\n  x: {type: int, low: 0, high: 1000}\n")
        self.fast = self.write("study.yaml", CONFIG)
        os.environ["HOSTILE_SLEEP"] = "0"
        self.store = self.path("s.sieve")
        self.assertEqual(sieve("run", self.fast, "--store", self.store, "-q").returncode, 0)

    def holding(self):
        """A writer that holds the store until killed."""
        p = subprocess.Popen([SIEVE, "run", self.fast, "--store", self.store, "--resume", "-q",
                              "--set", "budget.evaluations=3"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=dict(os.environ, HOSTILE_SLEEP="30"))
        self.addCleanup(lambda: (p.kill(), p.wait()))
        time.sleep(1.0)  # the lock is taken before the first trial starts
        self.assertIsNone(p.poll(), "the holding study ended early")
        return p

    def refused_through(self, other):
        self.holding()
        before = sieve("export", self.store, "--format", "csv").stdout
        p = sieve("run", self.fast, "--store", other, "--resume", "-q", "--set", "budget.evaluations=5", timeout=30)
        self.expect(p, 1, f"{other}: store is in use by another sieve process", "the lock is on the file")
        self.assertEqual(sieve("export", self.store, "--format", "csv").stdout, before)
        self.assertFalse(os.path.exists(other + "-wal") and other != self.store and not os.path.islink(other),
                         "the refused writer made a WAL of its own")

    def test_symlink(self):
        link = self.path("link.sieve")
        os.symlink(self.store, link)
        self.refused_through(link)

    def test_hard_link(self):
        os.makedirs(self.path("elsewhere"))
        link = self.path("elsewhere", "hard.sieve")
        os.link(self.store, link)
        self.refused_through(link)

    def test_same_name(self):
        self.refused_through(self.store)

    def test_no_lock_file_left(self):
        self.assertEqual(sorted(f for f in os.listdir(self.dir) if "lock" in f), [])

    def test_lock_dies_with_the_writer(self):
        p = self.holding()
        p.send_signal(signal.SIGKILL)
        p.wait()
        q = sieve("run", self.fast, "--store", self.store, "--resume", "-q", "--set", "budget.evaluations=4")
        self.expect(q, 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
