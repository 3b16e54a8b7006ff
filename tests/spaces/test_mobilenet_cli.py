#!/usr/bin/env python3
"""The mobilenet space through the `sieve` command: `sieve hash` (skips in
different positions of a stage hash equal, a malformed text is reported with
its character), every optimizer with the dedupe stage and the zero-cost
proxy evaluator, `sieve plugins --describe`, and the shipped configs at a
tiny budget."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from test_cli import CONFIGS, Workdir, export_rows, sieve  # noqa: E402

SMALL = ["--set", "space.size=16", "--set", "space.width=0.25", "--set", "space.stages=8:1:2,16:2:3",
         "--set", "space.last_channels=32"]
STUDY = """name: mb-%(name)s
seed: 3
space: {plugin: mobilenet, in_channels: 1, size: 16, width: 0.25, stages: "8:1:2,16:2:3", last_channels: 32}
optimizer: %(optimizer)s
evaluator: {plugin: proxy, proxies: [naswot, synflow], batch_size: 8, reference: 4}
objective: {metric: score, direction: maximize}
pipeline:
  - dedupe: {hash: structural}
budget: {evaluations: %(n)d}
workers: 1
"""
OPTIMIZERS = {
    "random": "{plugin: random, unique: true}",
    "evolution": "{plugin: evolution, population: 4, sample_size: 2}",
    "local_search": "{plugin: local_search, initial: 2}",
    "tpe": "{plugin: tpe, n_startup: 3}",
    "reinforce": "{plugin: reinforce}",
}


class TestMobilenetCli(Workdir):
    def test_hash(self):
        a, b = "k3_e6,skip/k5_e3_hs,skip,k7_e6_se", "k3_e6,skip/k5_e3_hs,k7_e6_se,skip"
        p = sieve("hash", "--space", "mobilenet", *SMALL, a, b, check=0)
        rows = [line.split("\t") for line in p.stdout.splitlines()]
        self.assertEqual([r[0] for r in rows], [a, b])
        self.assertEqual(rows[0][1:], rows[1][1:], "a skip's position within a stage is no change")
        p = sieve("hash", "--space", "mobilenet", *SMALL, "k3_e6,skip/k5_e3,k9_e6,skip", check=1)
        self.assertIn("block s2b2 at character 18: 'k9_e6' is not skip or an MBConv", p.stderr)

    def test_describe(self):
        p = sieve("plugins", "--describe", "mobilenet", check=0)
        for option in ("stages", "width", "kernels", "expansions", "se", "activation", "last_channels"):
            self.assertIn(option, p.stdout)

    def test_every_optimizer(self):
        for name, opt in OPTIMIZERS.items():
            with self.subTest(optimizer=name):
                cfg = self.write_config(name + ".yaml", STUDY % {"name": name, "optimizer": opt, "n": 6})
                store = self.path(name + ".sieve")
                p = sieve("run", cfg, "--store", store, "--quiet", check=0, timeout=300)
                self.assertIn("6 trials: 6 ok", p.stdout)
                self.assertEqual(len(export_rows(store)), 6)

    def test_configs(self):
        for name in ("mobilenet-random", "mobilenet-evolution"):
            with self.subTest(config=name):
                store = self.path(name + ".sieve")
                p = sieve("run", os.path.join(CONFIGS, name + ".yaml"), "--store", store, "--quiet",
                          "--set", "budget.evaluations=2", "--set", "evaluator.train_limit=256",
                          "--set", "evaluator.validation=128", "--set", "evaluator.threads=1", check=0, timeout=300)
                self.assertIn("2 trials: 2 ok", p.stdout)


if __name__ == "__main__":
    unittest.main()
