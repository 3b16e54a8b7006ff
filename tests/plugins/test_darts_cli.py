#!/usr/bin/env python3
"""The darts space end to end: `sieve plugins --describe`, `sieve hash`, one candidate trained on
Fashion-MNIST above chance, and parameter counts equal to the PyTorch peer's (bench/torch_darts.py)
for published and random genotypes (skipped when /usr/bin/python3 has no torch)."""
import json
import os
import random
import subprocess
import sys
import tempfile
import unittest

SIEVE = os.environ["SIEVE_EXE"]
ROOT = os.environ["SIEVE_SOURCE_ROOT"]
PEER = os.path.join(ROOT, "bench", "torch_darts.py")
OPS = ["max_pool_3x3", "avg_pool_3x3", "skip_connect", "sep_conv_3x3", "sep_conv_5x5", "dil_conv_3x3", "dil_conv_5x5"]

# Liu et al., ICLR 2019 (DARTS, Table 1: 3.3M); the authors' genotypes.py.
V2_NORMAL = [("sep_conv_3x3", 0), ("sep_conv_3x3", 1), ("sep_conv_3x3", 0), ("sep_conv_3x3", 1),
             ("sep_conv_3x3", 1), ("skip_connect", 0), ("skip_connect", 0), ("dil_conv_3x3", 2)]
V2_REDUCE = [("max_pool_3x3", 0), ("max_pool_3x3", 1), ("skip_connect", 2), ("max_pool_3x3", 1),
             ("max_pool_3x3", 0), ("skip_connect", 2), ("skip_connect", 2), ("max_pool_3x3", 1)]
# Xu et al., ICLR 2020 (PC-DARTS, Table 1: 3.6M); Chen et al., ICCV 2019 (P-DARTS, Table 1: 3.4M).
PC_NORMAL = [("sep_conv_3x3", 1), ("skip_connect", 0), ("sep_conv_3x3", 0), ("dil_conv_3x3", 1),
             ("sep_conv_5x5", 0), ("sep_conv_3x3", 1), ("avg_pool_3x3", 0), ("dil_conv_3x3", 1)]
PC_REDUCE = [("sep_conv_5x5", 1), ("max_pool_3x3", 0), ("sep_conv_5x5", 1), ("sep_conv_5x5", 2),
             ("sep_conv_3x3", 0), ("sep_conv_3x3", 3), ("sep_conv_3x3", 1), ("sep_conv_3x3", 2)]
PD_NORMAL = [("skip_connect", 0), ("dil_conv_3x3", 1), ("skip_connect", 0), ("sep_conv_3x3", 1),
             ("sep_conv_3x3", 1), ("sep_conv_3x3", 3), ("sep_conv_3x3", 0), ("dil_conv_5x5", 4)]
PD_REDUCE = [("avg_pool_3x3", 0), ("sep_conv_5x5", 1), ("sep_conv_3x3", 0), ("dil_conv_5x5", 2),
             ("max_pool_3x3", 0), ("dil_conv_3x3", 1), ("dil_conv_3x3", 1), ("dil_conv_5x5", 3)]


def text(normal, reduce, concat="[2, 3, 4, 5]"):
    cell = lambda pairs: "[" + ", ".join(f"('{op}', {i})" for op, i in pairs) + "]"
    return f"Genotype(normal={cell(normal)}, normal_concat={concat}, reduce={cell(reduce)}, reduce_concat={concat})"


def random_cell(rng):
    pairs = []
    for k in range(4):
        i, j = rng.sample(range(k + 2), 2)
        pairs += [(rng.choice(OPS), i), (rng.choice(OPS), j)]
    return pairs


def sieve(*args, check=0, timeout=600):
    p = subprocess.run([SIEVE, *args], capture_output=True, text=True, timeout=timeout)
    if check is not None and p.returncode != check:
        raise AssertionError(f"sieve {' '.join(args)[:300]} exited {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p


class Darts(unittest.TestCase):
    def test_describe(self):
        out = sieve("plugins", "--describe", "darts").stdout
        for option in ("C (integer, default 36", "layers (integer, default 20", "size (integer, default 32"):
            self.assertIn(option, out)

    def test_hash(self):
        v2 = text(V2_NORMAL, V2_REDUCE)
        # The same cells with each node's two pairs swapped and range(2, 6): the same genotype.
        swapped = lambda pairs: [p for k in range(4) for p in (pairs[2 * k + 1], pairs[2 * k])]
        v2b = text(swapped(V2_NORMAL), swapped(V2_REDUCE), "range(2, 6)")
        pc = text(PC_NORMAL, PC_REDUCE)
        lines = sieve("hash", "--space", "darts", "--threads", "1", v2, v2b, pc).stdout.splitlines()
        self.assertEqual(len(lines), 3)
        rows = [line.split("\t") for line in lines]
        self.assertEqual(rows[0], rows[1])
        self.assertNotEqual(rows[0][1], rows[2][1])
        self.assertNotEqual(rows[0][2], rows[2][2])
        wrong = v2.replace("'dil_conv_3x3', 2", "'dil_conv_3x3', 6")
        bad = sieve("hash", "--space", "darts", wrong, check=1)
        at = wrong.index("6)]") + 1  # 1-based: the input that is out of range
        self.assertIn(f"at character {at}: input 6 of pair 8 of normal: node 5 may read states 0..4", bad.stderr)

    def test_train_above_chance(self):
        # C=4, 3 cells on 28x28 Fashion-MNIST, 2 epochs of 1,500 images: measured validation accuracy
        # 0.466 (seed 0); chance is 0.10.  One thread: the suite runs tests side by side.
        r = sieve("train", "-q", "--space", "darts", "--arch", text(V2_NORMAL, V2_REDUCE), "--set", "space.C=4",
                  "--set", "space.layers=3", "--set", "space.in_channels=1", "--set", "space.size=28",
                  "--dataset", "fashion-mnist", "--train-limit", "1500", "--validation", "500", "--epochs", "2",
                  "--batch", "50", "--lr", "0.05", "--threads", "1", "--set", "evaluator.test=false")
        summary = json.loads(r.stdout.strip().splitlines()[-1])
        self.assertEqual(summary["status"], "ok")
        self.assertEqual(summary["params"], 2642)
        self.assertGreater(summary["val_acc"], 0.3, summary)

    def test_params_against_pytorch(self):
        if subprocess.run(["/usr/bin/python3", "-c", "import torch"], capture_output=True).returncode != 0:
            self.skipTest("/usr/bin/python3 cannot import torch")
        rng = random.Random(23)
        cases = [(text(V2_NORMAL, V2_REDUCE), 36, 20, 3, 32), (text(PC_NORMAL, PC_REDUCE), 36, 20, 3, 32),
                 (text(PD_NORMAL, PD_REDUCE), 36, 20, 3, 32)]
        cases += [(text(random_cell(rng), random_cell(rng)), 8, 5, 1, 28) for _ in range(4)]
        cases += [(text(random_cell(rng), random_cell(rng)), 6, 7, 3, 32) for _ in range(3)]
        with tempfile.TemporaryDirectory() as d:
            script = os.path.join(d, "params.lua")
            with open(script, "w") as f:
                f.write("local o = {C = tonumber(arg[2]), layers = tonumber(arg[3]), in_channels = tonumber(arg[4]),\n"
                        "           size = tonumber(arg[5])}\n"
                        "print(sieve.space('darts', o):build(arg[1]).params)\n")
            for genotype, C, layers, ch, size in cases:
                mine = int(sieve("lua", script, genotype, str(C), str(layers), str(ch), str(size)).stdout.split()[-1])
                peer = subprocess.run(["/usr/bin/python3", PEER, "params", genotype, "--C", str(C), "--layers",
                                       str(layers), "--in-ch", str(ch), "--size", str(size), "--threads", "1"],
                                      capture_output=True, text=True, check=True, timeout=300)
                self.assertEqual(mine, json.loads(peer.stdout)["params"], genotype)


if __name__ == "__main__":
    unittest.main(verbosity=2)
