#!/usr/bin/env python3
"""Numeric options of the commands: a value given but out of range or not
finite is an error (exit status 2) naming the option and what it accepts,
never taken for "not given" (bug hunt, item 7: `sieve train --batch 0`
trained with 128, `sieve lua --seconds nan` ran without a limit)."""
import os
import sys
import unittest

ROOT = os.environ["SIEVE_SOURCE_ROOT"]
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import sieve_cli  # noqa: E402
from sieve_cli import sieve  # noqa: E402

ARCH = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"
CONFIG = sieve_cli.branin_config("options", 3)


class TestNumericOptions(sieve_cli.Workdir):
    prefix = "sieve-options-"

    def bad(self, args, *wanted):
        p = sieve(*args, check=2, timeout=60, cwd=self.dir)
        for w in wanted:
            self.assertIn(w, p.stderr, f"sieve {' '.join(args)}")
        self.assertEqual(p.stdout, "", f"sieve {' '.join(args)} did work")

    def test_integer_bounds_compared_as_integers(self):
        # The top-level seed's range is [0, 2^53]; 2^53 + 1 compared as a double rounds to 2^53 and
        # was accepted (found by fuzzing --set values).
        cfg = self.write("o.yaml", CONFIG)
        self.bad(["run", cfg, "--set", "seed=9007199254740993", "--store", self.path("s.sieve")],
                 "--set seed=9007199254740993: option 'seed' expects an integer in [0, 9007199254740992], "
                 "got 9007199254740993")
        sieve("run", cfg, "--set", "seed=9007199254740992", "--store", self.path("s.sieve"), "-q", check=0,
              cwd=self.dir)

    def test_train(self):
        # Checked by the train evaluator's option table, located at the flag.
        for flag, value, key in [("--batch", "0", "batch_size"), ("--batch", "-5", "batch_size"),
                                 ("--validation", "-1", "validation"), ("--threads", "-2", "threads"),
                                 ("--seed", "-1", "seed"), ("--train-limit", "-1", "train_limit"),
                                 ("--epochs", "0", "epochs"), ("--epochs", "nan", "epochs"),
                                 ("--lr", "inf", "lr")]:
            self.bad(["train", "-q", "--arch", ARCH, flag, value], f"{flag} {value}: option '{key}'")
        self.bad(["train", "-q", "--arch", ARCH, "--batch", "-5"], "[1, 65536]")

    def test_lua(self):
        script = self.write("ok.lua", "print('ran')\n")
        for flag, value, wanted in [("--seconds", "nan", "a finite number of at least 0"),
                                    ("--seconds", "-1", "a finite number of at least 0"),
                                    ("--memory-mb", "-1", "a whole number from 0 to 17592186044416"),
                                    ("--instructions", "-3", "a whole number of at least 0"),
                                    ("--instructions", "1e3", "a whole number")]:
            self.bad(["lua", flag, value, script], f"{flag} {value}: expected {wanted}")
        p = sieve("lua", "--seconds", "30", "--memory-mb", "64", "--instructions", "0", script, check=0)
        self.assertEqual(p.stdout, "ran\n")

    def test_proxies(self):
        for value in ("0", "-1", "8193"):
            self.bad(["proxies", "--proxies", "naswot", "--batch", value, ARCH],
                     f"--batch {value}: expected a whole number from 1 to 8192")

    def test_final_worker_run_model(self):
        cfg = self.write("o.yaml", CONFIG)
        store = self.path("o.sieve")
        sieve("run", cfg, "--store", store, "-q", check=0)
        self.bad(["final", store, "--epochs", "nan"], "--epochs nan: expected a finite number above 0")
        self.bad(["final", store, "--best", "0"], "--best 0: expected a whole number of at least 1")
        self.bad(["final", store, "--trial", "-1"], "--trial -1: expected a whole number of at least 0")
        self.bad(["worker", "postgresql://nowhere/x", "--lease", "nan"], "--lease nan: expected a finite number")
        self.bad(["worker", "postgresql://nowhere/x", "--idle-exit", "-1"], "--idle-exit -1: expected")
        self.bad(["run", cfg, "--store", self.path("n.sieve"), "--reconnect-timeout", "nan"],
                 "--reconnect-timeout nan: expected a finite number of at least 0")
        self.assertFalse(os.path.exists(self.path("n.sieve")))
        self.bad(["model", "eval", "m.onnx", "--dataset", "mnist", "--batch", "-3"],
                 "--batch -3: expected a whole number from 1 to 65536")
        self.bad(["model", "eval", "m.onnx", "--dataset", "mnist", "--threads", "-1"], "--threads -1: expected")
        self.bad(["model", "eval", "m.onnx", "--dataset", "mnist", "--repeat", "0"],
                 "--repeat 0: expected the number of timed one-example runs, >= 1")

    def test_latency_flags_of_another_mode(self):
        # A flag that would do nothing in the mode given is refused (README), not ignored: --samples
        # and --seed draw --table's candidates, --predict adds to a candidate's measurement.
        arch = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|"
        for args, message in [(["--arch", arch, "--samples", "5"], "--samples and --seed draw the candidates of --table"),
                              (["--arch", arch, "--seed", "3"], "--samples and --seed draw the candidates of --table"),
                              (["--table", "--predict"], "--predict goes with --arch or --arch-file")]:
            p = sieve("latency", "--space", "nb201", *args, "--max-seconds", "0.01")
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertIn(f"sieve latency: {message}", p.stderr)
            self.assertEqual(p.stdout, "")


class TestNamesAndMessages(sieve_cli.Workdir):
    """Bug hunt, item 8: an empty store, a name that moves or hides the
    default store, a bogus location, an internal --set in a message."""
    prefix = "sieve-names-"

    def test_store_and_name(self):
        os.mkdir(self.path("sub"))
        for extra, wanted in [('store: ""', 'e.yaml:6:8: store: expected a file name or a postgresql:// URL'),
                              ('name: ""', "e.yaml:6:7: name '': expected a study name without '/'"),
                              ("name: ../escaped", "e.yaml:6:7: name '../escaped': expected a study name")]:
            body = CONFIG.replace("name: options\n", "")
            self.write(os.path.join("sub", "e.yaml"), body + extra + "\n")
            p = sieve("run", "e.yaml", check=2, cwd=self.path("sub"))
            self.assertIn(wanted, p.stderr)
            self.assertEqual(sorted(os.listdir(self.dir)), ["sub"])
            self.assertEqual(sorted(os.listdir(self.path("sub"))), ["e.yaml"])
        cfg = self.write("o.yaml", CONFIG)
        p = sieve("run", cfg, "--store", "", check=2, cwd=self.dir)
        self.assertIn("--store '': expected a file name or a postgresql:// URL", p.stderr)
        self.assertNotIn("a directory", p.stderr)

    def test_locations_and_plain_messages(self):
        p = sieve("hash", "--space", "hpo", "--all", check=2)
        self.assertIn("sieve: --space hpo: space 'hpo' needs", p.stderr)
        self.assertNotIn(":0:0:", p.stderr)
        # Every command's --set locates its value the same way: no :1:1.
        arch = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|"
        p = sieve("hash", "--space", "nb201", "--set", "space.C=abc", arch, check=2)
        self.assertIn("sieve: --set space.C=abc: option 'C' expects an integer, got 'abc'", p.stderr)
        p = sieve("model", "export", "--space", "nb201", "--arch", arch, "--set", "space.C=[1", "-o",
                  self.path("m.onnx"), check=2)
        self.assertIn("sieve: --set space.C=[1 (column 3 of the value): did not find expected ',' or ']'", p.stderr)
        self.assertNotIn(":1:", p.stderr)
        # ... and its --space as hash's (it said "sieve model export:1:1: ...").
        p = sieve("model", "export", "--space", "hpo", "--arch", "x", "-o", self.path("m.onnx"), check=2)
        self.assertIn("sieve: --space hpo: space 'hpo' needs", p.stderr)
        self.assertNotIn(":1:", p.stderr)
        p = sieve("proxies", "--space", "hpo", "--proxies", "naswot", "x", check=2)
        self.assertIn("sieve: --space hpo: space 'hpo' needs", p.stderr)
        self.assertNotIn(":1:", p.stderr)
        p = sieve("train", "--space", "hpo", "--arch", "x", check=2)
        self.assertIn("sieve: --space hpo: space 'hpo' needs", p.stderr)
        store = self.path("f.sieve")
        sieve("run", self.write("o.yaml", CONFIG), "--store", store, "-q", check=0)
        p = sieve("final", store, check=2)
        self.assertIn(f"{store}: the study's evaluator 'function' keeps no weights", p.stderr)
        self.assertNotIn("--set", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
