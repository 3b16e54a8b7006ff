#!/usr/bin/env python3
"""`sieve proxies` end to end: one JSON object per architecture in the order
given, a malformed line on stdin reported with its number while the others
are still scored, degenerate networks, usage errors, workers, a real batch."""
import json
import math
import os
import subprocess
import tempfile
import unittest

SIEVE = os.environ["SIEVE_EXE"]
ALL = "grad_norm,snip,plain,l2_norm,grasp,fisher,jacob_cov,naswot,synflow,zen,gradsign,params,flops"
# Small networks keep the test fast.
SMALL = ["--set", "space.C=4", "--set", "space.N=1", "--input", "3x8x8", "--batch", "8", "--threads", "2"]
A1 = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"
A2 = "|nor_conv_1x1~0|+|none~0|skip_connect~1|+|avg_pool_3x3~0|nor_conv_3x3~1|none~2|"
EMPTY = "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|"
JACOB_K = 1e-5


def sieve(*args, stdin=None, check=None, timeout=300):
    p = subprocess.run([SIEVE, "proxies", *args], input=stdin, capture_output=True, text=True, timeout=timeout)
    if check is not None and p.returncode != check:
        raise AssertionError(f"sieve proxies {' '.join(args)} exited {p.returncode}, wanted {check}\n"
                             f"stdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}")
    return p


def lines(out):
    return [json.loads(l) for l in out.splitlines()]


class TestProxiesCli(unittest.TestCase):
    def test_json_per_arch(self):
        p = sieve(*SMALL, "--proxies", ALL, A1, A2, check=0)
        rows = lines(p.stdout)
        self.assertEqual([r["arch"] for r in rows], [A1, A2])
        names = ALL.split(",")
        for r in rows:
            self.assertEqual(list(r), ["arch", *names, "time_ms"])
            self.assertEqual(list(r["time_ms"]), names)
            for n in names:
                self.assertIsInstance(r[n], (int, float), n)
                self.assertTrue(math.isfinite(r[n]), n)
                self.assertGreaterEqual(r["time_ms"][n], 0)
            self.assertIsInstance(r["params"], int)
            self.assertIsInstance(r["flops"], int)
        # Seeded: the same command gives the same scores, another seed others.
        again = lines(sieve(*SMALL, "--proxies", "naswot,snip", A1, check=0).stdout)[0]
        self.assertEqual(again["naswot"], rows[0]["naswot"])
        self.assertEqual(again["snip"], rows[0]["snip"])
        other = lines(sieve(*SMALL, "--seed", "3", "--proxies", "snip", A1, check=0).stdout)[0]
        self.assertNotEqual(other["snip"], rows[0]["snip"])

    def test_stdin_malformed_line(self):
        text = f"{A1}\n\n# a comment\n|nor_conv_3x3~0|+|bogus~0|\n{A2}\n{A1}"
        p = sieve(*SMALL, "--proxies", "naswot,snip", "-", stdin=text, check=1)
        rows = lines(p.stdout)
        self.assertEqual([r["arch"] for r in rows], [A1, A2, A1])
        self.assertIn("line 4", p.stderr)
        self.assertIn("bogus", p.stderr)
        self.assertEqual(p.stderr.count("sieve:"), 1)

    def test_degenerate(self):
        p = sieve(*SMALL, "--proxies", ALL, EMPTY, check=0)
        r = lines(p.stdout)[0]
        self.assertNotIn("nan", p.stdout)
        self.assertEqual(r["naswot"], "-inf")  # a singular kernel, as a JSON string
        self.assertAlmostEqual(r["jacob_cov"], -8 * (math.log(JACOB_K) + 1 / JACOB_K), delta=1e-6)
        for n in ("grad_norm", "snip", "plain", "grasp", "fisher", "gradsign", "synflow"):
            self.assertEqual(r[n], 0, n)
        self.assertGreater(r["l2_norm"], 0)  # the classifier's weights are there, whatever feeds them
        self.assertAlmostEqual(r["zen"], math.log(1e-9) + 0, delta=5)  # plus the batch norm term

    def test_jobs_agree(self):
        archs = "\n".join([A1, A2, EMPTY, A2])
        one = lines(sieve(*SMALL, "--proxies", "naswot,grad_norm,zen", "-", stdin=archs, check=0).stdout)
        two = lines(sieve(*SMALL, "--jobs", "2", "--proxies", "naswot,grad_norm,zen", "-", stdin=archs,
                          check=0).stdout)
        strip = lambda rows: [{k: v for k, v in r.items() if k != "time_ms"} for r in rows]
        self.assertEqual(len(one), 4)
        a, b = strip(one), strip(two)
        self.assertEqual([r["arch"] for r in a], [r["arch"] for r in b])
        for x, y in zip(a, b):
            for k in ("grad_norm", "zen"):
                self.assertAlmostEqual(x[k], y[k], delta=1e-4 * abs(x[k]))
            self.assertEqual(x["naswot"], y["naswot"])

    def test_usage_errors(self):
        p = sieve(*SMALL, "--proxies", "snip,synflw", A1, check=2)
        self.assertIn('"synflw"', p.stderr)
        for name in ALL.split(","):
            self.assertIn(name, p.stderr)
        p = sieve(*SMALL[:-4], "--batch", "0", "--proxies", "snip", A1, check=2)
        self.assertIn("--batch 0", p.stderr)
        p = sieve("--set", "optimizer.seed=3", "--proxies", "snip", A1, check=2)
        self.assertIn("space.KEY=VALUE", p.stderr)
        p = sieve("--set", "space.C=0", "--proxies", "snip", A1, check=2)
        self.assertIn("space.C", p.stderr)
        p = sieve("--input", "3x8x9", "--proxies", "snip", A1, check=2)
        self.assertIn("square", p.stderr)
        p = sieve("--input", "3x8", "--proxies", "snip", A1, check=2)
        self.assertIn("CxHxW", p.stderr)
        sieve("--proxies", "snip", check=2)
        p = sieve("--list", check=0)
        for name in ALL.split(","):
            self.assertIn(name, p.stdout)

    def test_proxy_evaluator_study(self):
        # Training-free NAS: the study's stored scores are what `sieve proxies`
        # gives the same architectures with the same batch, seed and threads.
        cfg = os.path.join(os.environ["SIEVE_SOURCE_ROOT"], "configs", "nb201-proxy.yaml")
        with tempfile.TemporaryDirectory() as d:
            run = subprocess.run([SIEVE, "run", cfg, "--set", "evaluator.threads=2", "--set", "budget.evaluations=8"],
                                 cwd=d, capture_output=True, text=True, timeout=300)
            self.assertEqual(run.returncode, 0, run.stderr)
            store = os.path.join(d, "nb201-proxy.sieve")
            ex = subprocess.run([SIEVE, "export", store, "--format", "json"], capture_output=True, text=True,
                                timeout=60, check=True)
            trials = json.loads(ex.stdout)
        self.assertEqual(len(trials), 8)
        archs = [t["genotype"] for t in trials]
        p = sieve("--set", "space.C=8", "--set", "space.N=1", "--batch", "32", "--seed", "0", "--threads", "2",
                  "--proxies", "naswot,synflow", *archs, check=0)
        for t, r in zip(trials, lines(p.stdout)):
            self.assertEqual(t["status"], "ok")
            for k in ("naswot", "synflow"):
                self.assertAlmostEqual(t["metrics"][k], r[k], delta=1e-9 * abs(r[k]), msg=k)
            self.assertTrue(math.isfinite(t["metrics"]["score"]))
        # The objective orders the trials as its documented formula does.
        best = max(trials, key=lambda t: t["metrics"]["score"])
        self.assertGreaterEqual(best["metrics"]["naswot_z"] + best["metrics"]["synflow_z"],
                                max(t["metrics"]["naswot_z"] + t["metrics"]["synflow_z"] for t in trials) - 1e-12)

    @unittest.skipUnless(os.path.exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")
                         or os.environ.get("SIEVE_DATA_DIR"), "Fashion-MNIST is not installed")
    def test_dataset_batch(self):
        # nb201's input options follow the dataset (1x28x28, 10 classes).
        p = sieve("--set", "space.C=4", "--set", "space.N=1", "--batch", "16", "--dataset", "fashion-mnist",
                  "--proxies", "naswot,snip,jacob_cov", A1, check=0)
        r = lines(p.stdout)[0]
        self.assertTrue(all(math.isfinite(r[k]) for k in ("naswot", "snip", "jacob_cov")))
        # A space set to another shape is an error naming both, before any
        # candidate (the screen stage's check).
        p = sieve("--set", "space.C=4", "--set", "space.N=1", "--set", "space.size=32", "--batch", "16",
                  "--dataset", "fashion-mnist", "--proxies", "snip", A1, check=2)
        self.assertIn("1x28x28", p.stderr)
        self.assertIn("1x32x32", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
