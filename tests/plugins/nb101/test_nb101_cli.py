#!/usr/bin/env python3
"""The nb101 space end to end: `sieve hash`, parameter counts against an
independent PyTorch build of the NAS-Bench-101 network (bench/torch_nb101.py,
which truncates by slicing as the benchmark does), one candidate trained on
Fashion-MNIST above chance, and the two configs run through every stage."""
import hashlib
import json
import os
import re
import sqlite3
import subprocess
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
# the cell of input and output only, the smallest network and the largest.
CELLS = [
    INCEPTION_DATASET,
    "matrix=[[0,1,1,0,0],[0,0,0,1,1],[0,0,0,0,1],[0,0,0,0,1],[0,0,0,0,0]],"
    "ops=[input,conv3x3-bn-relu,maxpool3x3,conv1x1-bn-relu,output]",
    "matrix=[[0,1,1,0,0],[0,0,0,1,1],[0,0,0,0,1],[0,0,0,0,1],[0,0,0,0,0]],"
    "ops=[input,maxpool3x3,conv3x3-bn-relu,conv3x3-bn-relu,output]",
    "matrix=[[0,1,0,0,1,0,0],[0,0,1,1,0,0,0],[0,0,0,0,0,1,1],[0,0,0,0,0,0,1],[0,0,0,0,0,1,0],[0,0,0,0,0,0,1],"
    "[0,0,0,0,0,0,0]],ops=[input,conv3x3-bn-relu,maxpool3x3,conv1x1-bn-relu,conv3x3-bn-relu,conv3x3-bn-relu,output]",
    "matrix=[[0,1],[0,0]],ops=[input,output]",
    "matrix=[[0,1,0,0,0,0],[0,0,1,1,1,1],[0,0,0,0,0,1],[0,0,0,0,0,1],[0,0,0,0,0,1],[0,0,0,0,0,0]],"
    "ops=[input,maxpool3x3,maxpool3x3,maxpool3x3,maxpool3x3,output]",
    "matrix=[[0,1,0,0,1,1,1],[0,0,1,0,0,0,0],[0,0,0,1,0,0,0],[0,0,0,0,1,0,0],[0,0,0,0,0,1,0],[0,0,0,0,0,0,1],"
    "[0,0,0,0,0,0,0]],ops=[input,conv3x3-bn-relu,conv3x3-bn-relu,conv3x3-bn-relu,conv3x3-bn-relu,"
    "conv3x3-bn-relu,output]",
]


def nasbench_hash(text):
    """graph_util.hash_module of the pruned cell with api._hash_spec's labels,
    written here from the benchmark's definitions (not from sieve)."""
    m = re.fullmatch(r"matrix=(\[.*\]),ops=\[(.*)\]", text)
    matrix, ops = json.loads(m.group(1)), m.group(2).split(",")
    n = len(matrix)
    fwd, bwd = {0}, {n - 1}
    for i in range(n):
        if i in fwd:
            fwd |= {j for j in range(n) if matrix[i][j]}
    for i in reversed(range(n)):
        if any(matrix[i][j] for j in bwd):
            bwd.add(i)
    keep = sorted(fwd & bwd)
    matrix = [[matrix[i][j] for j in keep] for i in keep]
    labels = [-1] + [["conv3x3-bn-relu", "conv1x1-bn-relu", "maxpool3x3"].index(ops[i]) for i in keep[1:-1]] + [-2]
    n = len(keep)
    md5 = lambda s: hashlib.md5(s.encode("utf-8")).hexdigest()
    ins = [sum(matrix[i][j] for i in range(n)) for j in range(n)]
    outs = [sum(row) for row in matrix]
    hashes = [md5(str(h)) for h in zip(outs, ins, labels)]
    for _ in range(n):
        hashes = [md5("".join(sorted(hashes[w] for w in range(n) if matrix[w][v])) + "|" +
                      "".join(sorted(hashes[w] for w in range(n) if matrix[v][w])) + "|" + hashes[v])
                  for v in range(n)]
    return md5(str(sorted(hashes)))


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
        # Byte for byte the benchmark's own hash (the dataset's key), on the
        # canonical texts of published, truncating and pruned cells.
        p = sieve("hash", "--space", "nb101", "--kind", "structural", "--threads", "1", *CELLS)
        for line in p.stdout.splitlines():
            text, structural, _ = line.split("\t")
            self.assertEqual(structural, nasbench_hash(text), text)
        bad = sieve("hash", "--space", "nb101", "matrix=[[0,0],[0,0]],ops=[input,output]", check=1)
        self.assertIn("disconnected", bad.stderr)

    def test_proxies(self):
        p = sieve("proxies", "--space", "nb101", "--set", "space.stem_channels=8", "--set", "space.cells=1",
                  "--set", "space.size=16", "--proxies", "synflow,naswot,params", "--threads", "1", INCEPTION_DATASET)
        r = json.loads(p.stdout.strip().splitlines()[-1])
        for name in ("synflow", "naswot", "params"):
            self.assertGreater(r[name], 0, r)

    def test_params_against_pytorch(self):
        # Debian's python3-torch (scripts/setup.sh), as the other peers run.
        peer = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "bench", "torch_nb101.py"), "params", *CELLS],
                              capture_output=True, text=True, timeout=300)
        self.assertEqual(peer.returncode, 0, peer.stderr[-2000:])
        theirs = [json.loads(line)["params"] for line in peer.stdout.splitlines()]
        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, "params.lua")
            with open(script, "w") as f:
                f.write("local nb = sieve.space('nb101')\n"
                        "for _, s in ipairs(arg) do print(nb:build(s).params) end\n")
            ours = [int(x) for x in sieve("lua", script, *CELLS).stdout.split()]
        self.assertEqual(ours, theirs)
        self.assertEqual(ours[0], 2694282)   # the dataset's trainable_parameters (NASBench.ipynb)
        self.assertEqual(ours[-2], 227274)    # the least count over every valid cell
        self.assertEqual(ours[-1], 49979274)  # the dataset's largest count

    def test_train_above_chance(self):
        p = sieve("train", "-q", "--space", "nb101", "--arch", INCEPTION_DATASET, "--set", "space.stem_channels=8",
                  "--set", "space.cells=1", "--set", "space.in_channels=1", "--set", "space.size=28",
                  "--set", "space.bn_momentum=0.1", "--dataset", "fashion-mnist", "--train-limit", "1920",
                  "--validation", "500", "--epochs", "1", "--batch", "32", "--lr", "0.05", "--threads", "2",
                  "--set", "evaluator.test=false")
        r = json.loads(p.stdout.strip().splitlines()[-1])
        # Chance is 0.1; over 500 validation images its standard deviation is
        # 0.013, so 0.2 is far above it.
        self.assertGreater(r["val_acc"], 0.2, r)

    def test_every_optimizer(self):
        """30 proposals each, scored by a cheap proxy: every trial builds, so
        no optimizer proposed an invalid cell, and none twice."""
        for name, options in (("random", ""), ("evolution", ", population: 8, sample_size: 3, crossover: 0.3"),
                              ("local_search", ", initial: 4"), ("tpe", ", n_startup: 5"), ("reinforce", "")):
            with self.subTest(optimizer=name), tempfile.TemporaryDirectory() as tmp:
                cfg = os.path.join(tmp, "opt.yaml")
                with open(cfg, "w") as f:
                    f.write("name: opt\nseed: 5\nspace: {plugin: nb101, stem_channels: 8, cells: 1, size: 16}\n"
                            f"optimizer: {{plugin: {name}{options}}}\n"
                            "evaluator: {plugin: proxy, proxies: params}\n"
                            "objective: {metric: score, direction: maximize}\nbudget: {evaluations: 30}\n")
                p = sieve("run", cfg, "--store", os.path.join(tmp, "s.sieve"), "--quiet")
                self.assertIn("30 trials: 30 ok, 0 failed, 0 pending", p.stdout)
                texts = sieve("export", os.path.join(tmp, "s.sieve"), "--format", "csv").stdout
                genotypes = [line for line in texts.splitlines() if "matrix=" in line]
                self.assertEqual(len(genotypes), 30)

    def test_dedupe_trains_an_isomorphic_cell_once(self):
        """Two labellings of one cell share the benchmark's hash, but their networks differ (the output
        concatenates in vertex order), so the functional hash told them apart and the default dedupe trained
        both: with a space that has its own structural hash, that hash is the default."""
        a = "matrix=[[0,1,1,0],[0,0,0,1],[0,0,0,1],[0,0,0,0]],ops=[input,conv3x3-bn-relu,maxpool3x3,output]"
        b = "matrix=[[0,1,1,0],[0,0,0,1],[0,0,0,1],[0,0,0,0]],ops=[input,maxpool3x3,conv3x3-bn-relu,output]"
        rows = [line.split("\t") for line in sieve("hash", "--space", "nb101", a, b).stdout.splitlines()]
        self.assertEqual(rows[0][1], rows[1][1], "one class by the benchmark's hash")
        self.assertNotEqual(rows[0][2], rows[1][2], "two networks by their function at the probe scale")
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "two.lua"), "w") as f:
                f.write(f"local texts = {{{json.dumps(a)}, {json.dumps(b)}}}\n"
                        "sieve.register_optimizer{name = 'two', create = function(self) self.state.i = 0 end,\n"
                        "  ask = function(self, n) local out = {}\n"
                        "    for k = 1, n do self.state.i = self.state.i + 1; out[k] = texts[(self.state.i - 1) % 2 + 1] "
                        "end\n    return out end, tell = function(self, t) end}\n")
            cfg = os.path.join(tmp, "dd.yaml")
            with open(cfg, "w") as f:
                f.write("name: dd\nseed: 0\nlua: {load: [two.lua]}\n"
                        "space: {plugin: nb101, stem_channels: 8, cells: 1, size: 16}\n"
                        "optimizer: {plugin: two}\npipeline: [dedupe]\n"
                        "evaluator: {plugin: proxy, proxies: params}\n"
                        "objective: {metric: score, direction: maximize}\nbudget: {proposals: 2}\n")
            store = os.path.join(tmp, "s.sieve")
            sieve("run", cfg, "--store", store, "--quiet")
            rows = sieve("export", store).stdout.splitlines()
            self.assertEqual([r.split(",")[1] for r in rows[1:]], ["ok", "cached"])
            summary = sieve("export", store, "--summary").stdout.splitlines()
            self.assertEqual(summary[1].split(",")[-1], "structural")
            # A study begun with the default before this one (functional) keeps its hash on resume: its cache
            # keyed by the new default retrained what it had answered (the diff review's case).
            old = os.path.join(tmp, "old.sieve")
            with open(cfg) as f:
                text = f.read()
            written = os.path.join(tmp, "written.yaml")
            with open(written, "w") as f:
                f.write(text.replace("pipeline: [dedupe]", "pipeline: [{dedupe: {hash: functional}}]"))
            sieve("run", written, "--store", old, "--quiet")
            db = sqlite3.connect(old)
            with db:  # the key the earlier version wrote for `pipeline: [dedupe]`
                db.execute("UPDATE meta SET value = replace(value, 'pipeline[0].dedupe.hash' || char(9) || "
                           "'functional', 'pipeline[0]' || char(9) || 'dedupe') WHERE key = 'study_key'")
            db.close()
            sieve("run", cfg, "--store", old, "--resume", "--quiet", "--set", "budget.proposals=4")
            rows = [r.split(",") for r in sieve("export", old).stdout.splitlines()[1:]]
            self.assertEqual([r[1] for r in rows], ["ok", "ok", "cached", "cached"])
            summary = sieve("export", old, "--summary").stdout.splitlines()
            self.assertEqual(summary[1].split(",")[-1], "functional")

    def test_configs(self):
        """The shipped configs, trained at a token scale (their own scale is minutes)."""
        for name, budget in (("nb101-random.yaml", 2), ("nb101-evolution.yaml", 3)):
            with tempfile.TemporaryDirectory() as tmp:
                p = sieve("run", os.path.join(ROOT, "configs", name), "--store", os.path.join(tmp, "s.sieve"),
                          "--quiet", "--set", f"budget.evaluations={budget}", "--set", "optimizer.population=2"
                          if "evolution" in name else "seed=1", "--set", "optimizer.sample_size=1"
                          if "evolution" in name else "seed=1", "--set", "evaluator.train_limit=128",
                          "--set", "evaluator.validation=64", "--set", "evaluator.test=false", timeout=600)
                # Every trial trained or answered by the dedupe's cache (an isomorphic cell).
                m = re.search(r"(\d+) trials: (\d+) ok, 0 failed, 0 pending", p.stdout)
                self.assertIsNotNone(m, p.stdout)
                self.assertGreaterEqual(int(m.group(1)), budget)
                self.assertGreater(int(m.group(2)), 0)


if __name__ == "__main__":
    unittest.main()
