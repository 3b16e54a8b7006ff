#!/usr/bin/env python3
"""The nb101 space end to end: `sieve hash`, parameter counts against an
independent PyTorch build of the NAS-Bench-101 network (bench/torch_nb101.py,
which truncates by slicing as the benchmark does), one candidate trained on
Fashion-MNIST above chance, and the two configs run through every stage."""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

SIEVE = os.environ["SIEVE_EXE"]
ROOT = os.environ["SIEVE_SOURCE_ROOT"]
HEX = re.compile(r"^[0-9a-f]{32}$")

INCEPTION_DATASET = ("matrix=[[0,1,1,1,1,0,0],[0,0,0,0,0,0,1],[0,0,0,0,0,0,1],[0,0,0,0,0,0,1],[0,0,0,0,0,1,0],"
                     "[0,0,0,0,0,0,1],[0,0,0,0,0,0,0]],ops=[input,conv3x3-bn-relu,conv1x1-bn-relu,maxpool3x3,"
                     "conv3x3-bn-relu,conv3x3-bn-relu,output]")
INCEPTION_README = ("matrix=[[0,1,1,1,0,1,0],[0,0,0,0,0,0,1],[0,0,0,0,0,0,1],[0,0,0,0,1,0,0],[0,0,0,0,0,0,1],"
                    "[0,0,0,0,0,0,1],[0,0,0,0,0,0,0]],ops=[input,conv1x1-bn-relu,conv3x3-bn-relu,conv3x3-bn-relu,"
                    "conv3x3-bn-relu,maxpool3x3,output]")
# Cells whose channel split makes the benchmark truncate (3 vertices feed the
# output, so 128 = 43 + 43 + 42, and a 43-channel vertex feeds a 42-channel one),
# the smallest cell (input to output), and the dataset's largest network.
CELLS = [
    INCEPTION_DATASET,
    "matrix=[[0,1,1,0,0],[0,0,0,1,1],[0,0,0,0,1],[0,0,0,0,1],[0,0,0,0,0]],"
    "ops=[input,conv3x3-bn-relu,maxpool3x3,conv1x1-bn-relu,output]",
    "matrix=[[0,1,1,0,0],[0,0,0,1,1],[0,0,0,0,1],[0,0,0,0,1],[0,0,0,0,0]],"
    "ops=[input,maxpool3x3,conv3x3-bn-relu,conv3x3-bn-relu,output]",
    "matrix=[[0,1,0,0,1,0,0],[0,0,1,1,0,0,0],[0,0,0,0,0,1,1],[0,0,0,0,0,0,1],[0,0,0,0,0,1,0],[0,0,0,0,0,0,1],"
    "[0,0,0,0,0,0,0]],ops=[input,conv3x3-bn-relu,maxpool3x3,conv1x1-bn-relu,conv3x3-bn-relu,conv3x3-bn-relu,output]",
    "matrix=[[0,1],[0,0]],ops=[input,output]",
    "matrix=[[0,1,0,0,1,1,1],[0,0,1,0,0,0,0],[0,0,0,1,0,0,0],[0,0,0,0,1,0,0],[0,0,0,0,0,1,0],[0,0,0,0,0,0,1],"
    "[0,0,0,0,0,0,0]],ops=[input,conv3x3-bn-relu,conv3x3-bn-relu,conv3x3-bn-relu,conv3x3-bn-relu,"
    "conv3x3-bn-relu,output]",
]


def sieve(*args, check=0, timeout=300):
    p = subprocess.run([SIEVE, *args], capture_output=True, text=True, timeout=timeout)
    if check is not None and p.returncode != check:
        raise AssertionError(f"sieve {' '.join(args)} exited {p.returncode}, wanted {check}\n"
                             f"stdout:\n{p.stdout[-2000:]}\nstderr:\n{p.stderr[-2000:]}")
    return p


class Nb101(unittest.TestCase):
    def test_hash(self):
        p = sieve("hash", "--space", "nb101", "--threads", "1", INCEPTION_DATASET, INCEPTION_README)
        rows = [line.split("\t") for line in p.stdout.splitlines()]
        self.assertEqual(len(rows), 2)
        for text, structural, functional in rows:
            self.assertRegex(structural, HEX)
            self.assertRegex(functional, HEX)
        # Isomorphic: one class under the benchmark's graph hash.
        self.assertEqual(rows[0][1], rows[1][1])
        self.assertEqual(rows[1][0], INCEPTION_README)
        bad = sieve("hash", "--space", "nb101", "matrix=[[0,0],[0,0]],ops=[input,output]", check=1)
        self.assertIn("disconnected", bad.stderr)

    def test_params_against_pytorch(self):
        sys.path.insert(0, os.path.join(ROOT, "bench"))
        try:
            import torch_nb101
        except ImportError as e:  # python3-torch missing: the peer cannot run
            self.skipTest(f"PyTorch peer unavailable: {e}")
        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, "params.lua")
            with open(script, "w") as f:
                f.write("local nb = sieve.space('nb101')\n"
                        "for _, s in ipairs(arg) do print(nb:build(s).params) end\n")
            ours = [int(x) for x in sieve("lua", script, *CELLS).stdout.split()]
        theirs = [sum(p.numel() for p in torch_nb101.NB101(s).parameters()) for s in CELLS]
        self.assertEqual(ours, theirs)
        self.assertEqual(ours[0], 2694282)   # the dataset's trainable_parameters (NASBench.ipynb)
        self.assertEqual(ours[-1], 49979274)  # the dataset's largest count

    def test_train_above_chance(self):
        p = sieve("train", "-q", "--space", "nb101", "--arch", INCEPTION_DATASET, "--set", "space.stem_channels=8",
                  "--set", "space.cells=1", "--set", "space.in_channels=1", "--set", "space.size=28",
                  "--set", "space.bn_momentum=0.1", "--dataset", "fashion-mnist", "--train-limit", "3000",
                  "--validation", "1000", "--epochs", "1", "--batch", "64", "--lr", "0.05", "--threads", "2",
                  "--set", "evaluator.test=false")
        r = json.loads(p.stdout.strip().splitlines()[-1])
        self.assertGreater(r["val_acc"], 0.3, r)  # chance is 0.1

    def test_configs(self):
        for name, budget in (("nb101-random.yaml", 3), ("nb101-evolution.yaml", 6)):
            with tempfile.TemporaryDirectory() as tmp:
                store = os.path.join(tmp, "s.sieve")
                sieve("run", os.path.join(ROOT, "configs", name), "--store", store,
                      "--set", f"budget.evaluations={budget}", "--set", "evaluator.train_limit=1000",
                      "--set", "evaluator.validation=500", timeout=600)
                self.assertTrue(os.path.exists(store))


if __name__ == "__main__":
    unittest.main()
