#!/usr/bin/env python3
"""Hardware-aware search through the `sieve` command: `sieve latency` for
one candidate and for a space's table (cached in a real store: a second
run measures nothing), and a constrained study killed with SIGKILL and
resumed, whose rejections survive and never cost an evaluation."""
import csv
import io
import json
import os
import re
import signal
import subprocess
import tempfile
import unittest

SIEVE = os.environ["SIEVE_EXE"]
ROOT = os.environ["SIEVE_SOURCE_ROOT"]
ARCH = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_1x1~1|skip_connect~2|"
QUICK = ["--warmup", "1", "--runs", "3", "--max-runs", "3", "--max-seconds", "0.05"]
PROGRESS = re.compile(r"^\[(\d+)/")


def sieve(*args, check=0, timeout=180):
    p = subprocess.run([SIEVE, *args], capture_output=True, text=True, timeout=timeout)
    if check is not None and p.returncode != check:
        raise AssertionError(f"sieve {' '.join(args)} exited {p.returncode}, wanted {check}\n"
                             f"stdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}")
    return p


def table_path():
    for p in (os.path.join(ROOT, "..", "shared", "data", "nb201", "nb201.csv"),
              os.path.join(ROOT, "data", "nb201", "nb201.csv")):
        if os.path.exists(p):
            return os.path.realpath(p)
    raise unittest.SkipTest("no NAS-Bench-201 table")


def latency_study(directory, space, seed, rest):
    """directory/c.yaml: random search on space, each candidate's latency measured briefly, then rest."""
    cfg = os.path.join(directory, "c.yaml")
    with open(cfg, "w") as f:
        f.write(f"space: {space}\n"
                f"optimizer: {{plugin: random, seed: {seed}}}\n"
                "evaluator: {plugin: latency, warmup: 1, min_runs: 3, max_runs: 3, max_seconds: 0.05}\n"
                "objective: {metric: latency_ms, direction: minimize}\n" + rest)
    return cfg


class Latency(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="sieve-hardware-")
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def test_one_candidate(self):
        out = json.loads(sieve("latency", "--space", "nb201", "--arch", ARCH, "--predict", *QUICK).stdout)
        self.assertEqual(out["genotype"], ARCH)
        self.assertGreater(out["latency_ms"], 0)
        self.assertLessEqual(out["ci_ms"][0], out["latency_ms"])
        self.assertGreater(out["predicted_latency_ms"], 0)
        a, b = out["fit"]
        self.assertAlmostEqual(out["predicted_latency_ms"], a + b * out["predicted_sum_ms"], delta=1e-4)
        self.assertEqual((out["batch"], out["threads"]), (1, 1))
        # several in one process, one JSON a line; a bad line is named by file and line
        other = "|skip_connect~0|+|none~0|none~1|+|skip_connect~0|none~1|none~2|"
        listing = os.path.join(self.dir, "archs.txt")
        with open(listing, "w") as f:
            f.write(f"# two cells\n{ARCH}\n\n{other}\n")
        store = os.path.join(self.dir, "lat.sieve")
        lines = sieve("latency", "--space", "nb201", "--arch-file", listing, "--predict", "--store", store,
                      *QUICK).stdout.splitlines()
        got = [json.loads(l) for l in lines]
        self.assertEqual([g["genotype"] for g in got], [ARCH, other])
        self.assertLess(got[1]["predicted_latency_ms"], got[0]["predicted_latency_ms"])
        # --together: the same candidates in the file's order, measured in rounds (as many timed forwards
        # each); the cell of convolutions is far slower than the one of skips and zeros
        together = [json.loads(l) for l in sieve("latency", "--space", "nb201", "--arch-file", listing,
                                                 "--together", "--predict", "--store", store,
                                                 *QUICK).stdout.splitlines()]
        self.assertEqual([g["genotype"] for g in together], [ARCH, other])
        self.assertEqual(together[0]["runs"], together[1]["runs"])
        self.assertGreater(together[0]["latency_ms"], together[1]["latency_ms"])
        # the table's entries read from the store the first run wrote
        self.assertEqual([g["predicted_latency_ms"] for g in together], [g["predicted_latency_ms"] for g in got])
        bad = sieve("latency", "--space", "nb201", "--arch", ARCH, "--together", check=2)
        self.assertIn("--together", bad.stderr)
        # a line that is no candidate is named by file and line, the others are still measured (as
        # `sieve hash` and `sieve proxies` do), and the exit status is 1
        with open(listing, "w") as f:
            f.write(f"{ARCH}\n|nor_conv_3x3~0|\n{other}\n")
        for mode in ([], ["--together"]):
            bad = sieve("latency", "--space", "nb201", "--arch-file", listing, *mode, *QUICK, check=1)
            self.assertIn(f"{listing}:2", bad.stderr)
            self.assertIn(f"1 of 3 candidates of {listing} could not be measured", bad.stderr)
            self.assertEqual([json.loads(l)["genotype"] for l in bad.stdout.splitlines()], [ARCH, other])
        with open(listing, "w") as f:
            f.write("|nor_conv_3x3~0|\n")
        for mode in ([], ["--together"]):
            bad = sieve("latency", "--space", "nb201", "--arch-file", listing, *mode, *QUICK, check=1)
            self.assertIn(f"{listing}:1", bad.stderr)
            self.assertEqual(bad.stdout, "")
        bad = sieve("latency", "--space", "nb201", "--arch", "|nor_conv_3x3~0|", check=2)
        self.assertIn("--arch", bad.stderr)
        sieve("latency", "--space", "nb201", check=2)

    def test_unbuildable_line_named(self):
        # A line that parses but that the space cannot build a network from is named by file and
        # line too, the others still measured.
        script = os.path.join(self.dir, "two.lua")
        with open(script, "w") as f:
            f.write("""sieve.register_space{
  name = "two", summary = "a network for 'good', none for 'bad'",
  create = function(self, b) b:categorical("op", {"good", "bad"}) end,
  format = function(self, g) return g:values().op end,
  parse = function(self, text)
    if text ~= "good" and text ~= "bad" then return nil, "expected good or bad" end
    return {op = text}
  end,
  build = function(self, g)
    if g:values().op == "bad" then error("no network for bad", 0) end
    local n = sieve.graph.new("two")
    local x = n:input(1, 4, 4, {})
    x = n:global_avg_pool(x, {})
    return n:finish(n:linear(x, {out = 2, bias = true}))
  end,
}
""")
        listing = os.path.join(self.dir, "two.txt")
        with open(listing, "w") as f:
            f.write("good\nbad\n")
        for mode in ([], ["--together"]):
            bad = sieve("latency", "--space", "lua", "--set", f"space.script={script}", "--arch-file", listing,
                        *mode, *QUICK, check=1)
            self.assertIn(f"sieve latency: {listing}:2: ", bad.stderr)
            self.assertIn("no network for bad", bad.stderr)
            self.assertEqual([json.loads(l)["genotype"] for l in bad.stdout.splitlines()], ["good"])

    def test_flags_that_do_nothing_refused(self):
        # refused with a message rather than silently ignored (or overridden)
        cases = [(["--arch", ARCH, "--runs", "50", "--max-runs", "5"], "--max-runs 5 is fewer than --runs 50"),
                 (["--table", "--together"], "--together measures the candidates of --arch-file"),
                 (["--arch", ARCH, "--calibrate", "2"], "--calibrate fits the latency table's prediction")]
        for args, message in cases:
            p = sieve("latency", "--space", "nb201", *args, check=2)
            self.assertIn(message, p.stderr)
            self.assertEqual(p.stdout, "")

    def test_constraint_tries_without_constraints_warned_and_threads_0_named(self):
        cfg = latency_study(self.dir, "{plugin: nb201, C: 4, N: 1}", 1,
                            "budget: {evaluations: 1}\n"
                            "constraint_tries: 40\n"
                            "pipeline: [latency: {threads: 0, warmup: 1, min_runs: 3, max_runs: 3, "
                            "max_seconds: 0.05}]\n")
        p = sieve("run", cfg, "--store", os.path.join(self.dir, "c.sieve"), "-q")
        self.assertIn(f"{cfg}:6:19: warning: constraint_tries does nothing without constraints", p.stderr)
        # threads: 0 is a thread per core, said so rather than "0 threads"
        self.assertRegex(p.stdout, r"latency \(batch 1, a thread per core: \d+\) ->")

    def test_arch_file_with_byte_order_mark(self):
        listing = os.path.join(self.dir, "bom.txt")
        with open(listing, "w", encoding="utf-8-sig") as f:  # writes the BOM first
            f.write(ARCH + "\n")
        for mode in ([], ["--together"]):
            out = sieve("latency", "--space", "nb201", "--arch-file", listing, *mode, *QUICK).stdout
            self.assertEqual([json.loads(l)["genotype"] for l in out.splitlines()], [ARCH])

    def test_table_cached(self):
        store = os.path.join(self.dir, "lat.sieve")
        args = ["latency", "--table", "--space", "nb201", "--store", store, "--samples", "40", *QUICK]
        first = sieve(*args).stdout
        head = first.splitlines()[0]
        m = re.search(r"(\d+) operations from 40 candidates; (\d+) measured now, (\d+) read", head)
        self.assertIsNotNone(m, head)
        n, measured, read = map(int, m.groups())
        self.assertGreater(n, 10)
        self.assertEqual(measured, n)
        rows = [l.split("\t") for l in first.splitlines() if not l.startswith("#")]
        self.assertEqual(len(rows), n)
        self.assertTrue(any(k.startswith("conv2d 16x32x32 out=16 k=3x3") for _, k in rows))
        second = sieve(*args).stdout
        self.assertIn(f"0 measured now, {n} read", second.splitlines()[0])
        self.assertEqual(first.splitlines()[3:], second.splitlines()[3:])  # the same entries
        # the calibration on networks measured whole: fitted once, then read with the same line
        args += ["--calibrate", "12"]
        first, second = sieve(*args).stdout, sieve(*args).stdout
        fit = re.compile(r"^# calibration: latency = (\S+) \+ (\S+) \* sum of entries .* over 12 networks")
        m1, m2 = fit.match(first.splitlines()[2]), fit.match(second.splitlines()[2])
        self.assertIsNotNone(m1, first.splitlines()[2])
        self.assertIsNotNone(m2, second.splitlines()[2])
        self.assertIn("measured now", first.splitlines()[2])
        self.assertIn("read from the store", second.splitlines()[2])
        self.assertEqual(m1.groups(), m2.groups())
        self.assertGreater(float(m1.group(2)), 0)
        plain = sieve(*args[:-2]).stdout.splitlines()[2]  # the default: no calibration
        self.assertIn("calibration: none", plain)

    def test_table_counts_calibration_entries(self):
        # One drawn candidate holds fewer operations than the 3 calibration
        # networks: their extra entries are measured, counted and listed too.
        store = os.path.join(self.dir, "lat.sieve")
        args = ["latency", "--table", "--space", "mobilenet", "--set", "space.size=16", "--set", "space.width=0.25",
                "--set", "space.stages=16:1:1,24:1:2", "--store", store, "--samples", "1", "--calibrate", "3", *QUICK]
        head = re.compile(r"(\d+) operations from 1 candidates and 3 calibration networks; (\d+) measured now, "
                          r"(\d+) read from ")
        first = sieve(*args).stdout
        m = head.search(first.splitlines()[0])
        self.assertIsNotNone(m, first.splitlines()[0])
        n, measured, read = map(int, m.groups())
        self.assertEqual((measured, read), (n, 0))
        self.assertEqual(len([l for l in first.splitlines() if not l.startswith("#")]), n)
        only = sieve(*args[:-len(QUICK) - 2], *QUICK).stdout.splitlines()[0]  # the candidate's entries alone
        self.assertLess(int(re.search(r"(\d+) operations", only).group(1)), n)


class KillResume(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="sieve-hardware-")
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def test_rejections_survive_sigkill(self):
        cfg = latency_study(self.dir, "{plugin: nb201}", 11,
                            "constraints: [{metric: params, max: 600000}]\n"
                            "budget: {evaluations: 24}\n")
        store = os.path.join(self.dir, "s.sieve")
        proc = subprocess.Popen([SIEVE, "run", cfg, "--store", store], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        seen_rejected = False
        for line in proc.stdout:
            seen_rejected |= " rejected (" in line
            m = PROGRESS.match(line)
            if seen_rejected and m and int(m.group(1)) >= 6:
                proc.send_signal(signal.SIGKILL)
                break
        proc.communicate()
        self.assertEqual(proc.returncode, -signal.SIGKILL, "the run ended before the kill point")
        before = self.rows(store)
        rejected_before = {r["number"]: r for r in before if r["status"] == "rejected"}
        self.assertGreater(len(rejected_before), 0)

        out = sieve("run", cfg, "--store", store, "--resume").stdout
        self.assertIn("rejected before evaluation", out)
        after = self.rows(store)
        for number, r in rejected_before.items():
            again = next(a for a in after if a["number"] == number)
            self.assertEqual((again["status"], again["reason"], again["params"]),
                             ("rejected", r["reason"], r["params"]))
        self.assertEqual(sum(r["status"] == "ok" for r in after), 24)
        for r in after:
            over = float(r["params"]) > 600000
            self.assertEqual(r["status"] == "rejected", over, r)
            if over:  # never evaluated: no latency, no cost
                self.assertEqual(r["latency_ms"], "")
                self.assertEqual(float(r["cost_s"]), 0)
        summary = next(csv.DictReader(io.StringIO(sieve("export", store, "--summary").stdout)))
        self.assertEqual(int(summary["rejected"]), sum(r["status"] == "rejected" for r in after))
        self.assertEqual(int(summary["evaluated"]), 24)

    def rows(self, store):
        out = sieve("export", store, "--format", "csv").stdout
        return list(csv.DictReader(io.StringIO(out)))


if __name__ == "__main__":
    unittest.main()
