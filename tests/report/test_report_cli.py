#!/usr/bin/env python3
"""`sieve report` of a study run with a relative config path, from another
folder: the space is rebuilt against the config's folder (its hpo file
found).  The store keeps the config's path as given ('r.yaml'); the report
resolved the space's file against that relative folder and crashed
(SIGSEGV)."""
import os
import sqlite3
import sys

sys.path.insert(0, os.path.join(os.environ["SIEVE_SOURCE_ROOT"], "tests", "support"))
from sieve_cli import Workdir, sieve  # noqa: E402

CONFIG = """name: r
space: {plugin: hpo, file: sp.yaml}
optimizer: {plugin: random}
evaluator: {plugin: function, function: branin}
objective: {metric: value, direction: minimize}
budget: {evaluations: 6}
"""
SPACE = "parameters:\n  x1: {type: float, low: -5, high: 10}\n  x2: {type: float, low: 0, high: 15}\n"


class RelativeConfig(Workdir):
    prefix = "sieve-report-cli-"

    def report(self, store="r.sieve"):
        out = self.path("r.html")
        sieve("report", self.path(store), "-o", out, check=0, cwd="/")
        with open(out) as f:
            html = f.read()
        self.assertNotIn("could not be rebuilt", html)
        self.assertIn('<section id="importance">', html)

    def setUp(self):
        super().setUp()
        self.write("sp.yaml", SPACE)
        self.write("r.yaml", CONFIG)
        sieve("run", "r.yaml", "--quiet", check=0, cwd=self.dir)

    def test_relative_config(self):
        with sqlite3.connect(self.path("r.sieve")) as db:
            self.assertEqual(db.execute("SELECT value FROM meta WHERE key = 'config_path'").fetchone()[0], "r.yaml")
        self.report()

    def test_store_elsewhere(self):
        # The config relative to the cwd, the store in another folder: the
        # store keeps the config's folder (config_dir), not only its path.
        os.mkdir(self.path("out"))
        sieve("run", "r.yaml", "--store", "out/o.sieve", "--quiet", check=0, cwd=self.dir)
        self.report("out/o.sieve")


if __name__ == "__main__":
    import unittest
    unittest.main()
