#!/usr/bin/env python3
"""`sieve proxies --batch-file X.npy [--labels-file Y.npy]` end to end, with files that
tests/proxy/proxy-dump writes (no NumPy needed): the batch and labels are the ones scored,
the weights are the ones --seed gives (proxy-dump's synflow on the same seed is reproduced), and
every misuse is refused with a message that names the file or the flags."""
import json, os, subprocess, sys, tempfile, unittest

BUILD = os.environ.get("SIEVE_BUILD_ROOT", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
SIEVE = os.environ.get("SIEVE_EXE", os.path.join(BUILD, "src", "cli", "sieve"))
DUMP = os.path.join(BUILD, "tests", "proxy", "proxy-dump")
ARCH = "|nor_conv_3x3~0|+|nor_conv_1x1~0|avg_pool_3x3~1|+|skip_connect~0|none~1|nor_conv_3x3~2|"
NET = ["--set", "space.C=4", "--set", "space.N=1"]


def run(args):
    return subprocess.run([SIEVE, "proxies"] + args, capture_output=True, text=True)


class BatchFile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="sieve-batch-file-")
        cls.files = {}
        for name, batch_seed, size in (("a", 1, 16), ("b", 2, 16), ("small", 1, 8)):
            d = os.path.join(cls.tmp.name, name)
            p = subprocess.run([DUMP, "--arch", ARCH, "--out", d, "--C", "4", "--N", "1", "--size", str(size),
                                "--batch", "6", "--seed", "5", "--batch-seed", str(batch_seed)],
                               capture_output=True, text=True, check=True)
            cls.files[name] = json.loads(p.stdout)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def scores(self, args, names="naswot,snip,params"):
        p = run(NET + ["--proxies", names, "--seed", "5", "--threads", "1"] + args + [ARCH])
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def test_the_file_is_scored(self):
        a, b = self.files["a"], self.files["b"]
        one = self.scores(["--batch-file", a["inputs"], "--labels-file", a["labels"]])
        again = self.scores(["--batch-file", a["inputs"], "--labels-file", a["labels"]])
        other = self.scores(["--batch-file", b["inputs"], "--labels-file", b["labels"]])
        self.assertEqual(one["naswot"], again["naswot"])
        self.assertEqual(one["snip"], again["snip"])
        self.assertNotEqual(one["naswot"], other["naswot"])  # another batch, another kernel
        self.assertEqual(one["params"], a["params"])
        # The size (16x16) and channels came from the file, not nb201's 32x32 default.
        seeded = self.scores(["--input", "3x16x16", "--batch", "6"])
        self.assertNotEqual(one["naswot"], seeded["naswot"])

    def test_labels(self):
        a, b = self.files["a"], self.files["b"]
        mine = self.scores(["--batch-file", a["inputs"], "--labels-file", a["labels"]], "snip")
        others = self.scores(["--batch-file", a["inputs"], "--labels-file", b["labels"]], "snip")
        self.assertNotEqual(mine["snip"], others["snip"])
        unlabelled = self.scores(["--batch-file", a["inputs"]], "naswot")  # seeded labels
        self.assertIn("naswot", unlabelled)

    def test_same_weights_as_the_seed(self):
        known = run(["--list"]).stdout.split()
        if "synflow" not in known:
            self.skipTest("this sieve's proxies do not list synflow yet")
        a = self.files["a"]
        r = self.scores(["--batch-file", a["inputs"]], "synflow")
        self.assertAlmostEqual(r["synflow"] / a["synflow"], 1.0, delta=1e-12)

    def test_refused(self):
        a = self.files["a"]
        cases = [
            (["--batch-file", a["inputs"], "--batch", "7"], 2, "holds 6 examples"),
            (["--batch-file", a["inputs"], "--input", "3x16x16"], 2, "exclusive"),
            (["--labels-file", a["labels"]], 2, "--labels-file goes with --batch-file"),
            (["--batch-file", a["labels"]], 1, "shape (batch, channels, height, width)"),
            (["--batch-file", a["inputs"], "--labels-file", a["inputs"]], 1, "one class id per example"),
            (["--batch-file", os.path.join(self.tmp.name, "missing.npy")], 1, "missing.npy"),
            (["--batch-file", self.files["small"]["inputs"], "--set", "space.size=16"], 2,
             "has 3x8x8 examples, but space nb201 builds networks for 3x16x16 inputs"),
        ]
        for args, status, fragment in cases:
            with self.subTest(args=args):
                p = run(NET + ["--proxies", "naswot", "--threads", "1"] + args + [ARCH])
                self.assertEqual(p.returncode, status, p.stderr)
                self.assertIn(fragment, p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
