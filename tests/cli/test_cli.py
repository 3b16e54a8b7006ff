#!/usr/bin/env python3
"""The `sieve` command end to end: real plugins, real SQLite stores, real
processes killed with SIGKILL at many points and resumed."""
import csv
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

ROOT = os.environ["SIEVE_SOURCE_ROOT"]
CONFIGS = os.path.join(ROOT, "configs")
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import sieve_cli  # noqa: E402
from sieve_cli import PROGRESS, SIEVE, export_rows, sieve  # noqa: E402


class Workdir(sieve_cli.Workdir):
    prefix = "sieve-cli-"
    write_config = sieve_cli.Workdir.write


class TestPlugins(unittest.TestCase):
    def test_list(self):
        out = sieve("plugins", check=0).stdout
        sections = re.split(r"^(spaces|optimizers|evaluators):$", out, flags=re.M)
        listing = dict(zip(sections[1::2], sections[2::2]))
        for kind, names in {"spaces": ["nb201", "hpo"], "optimizers": ["random"],
                            "evaluators": ["tabular", "function", "command"]}.items():
            for name in names:
                self.assertRegex(listing[kind], rf"(?m)^  {name} ", f"{name} not listed under {kind}")

    def test_describe(self):
        out = sieve("plugins", "--describe", "tabular", check=0).stdout
        self.assertIn("evaluator tabular:", out)
        self.assertRegex(out, r"(?m)^  table \(")
        self.assertIn("required", out)
        p = sieve("plugins", "--describe", "tabulr", check=1)
        self.assertIn("did you mean 'tabular'?", p.stderr)
        # The pruner: section is no plugin, but is described from its option table too.
        out = sieve("plugins", "--describe", "pruner", check=0).stdout
        self.assertIn("experiment section pruner:", out)
        self.assertRegex(out, r"(?m)^  warmup_steps \(integer, default 0")
        self.assertIn("did you mean 'pruner'?", sieve("plugins", "--describe", "prunr", check=1).stderr)

    def test_describe_seed_follows_the_experiment(self):
        # Bug hunt 3: evaluators said "seed (integer, default 0" while they
        # take the experiment's top-level seed, as the optimizers say.
        for name in ("function", "train", "proxy"):
            with self.subTest(evaluator=name):
                out = sieve("plugins", "--describe", name, check=0).stdout
                seed = re.search(r"(?m)^  seed \((.*)\)\n      (.*)$", out)
                self.assertIsNotNone(seed, out)
                self.assertNotIn("default", seed.group(1))
                self.assertIn("default: the experiment's seed", seed.group(2))
        out = sieve("plugins", "--describe", "random", check=0).stdout
        self.assertIn("seed (integer, default: the experiment's seed)", out)

    def test_every_stage_example_runs(self):
        # Bug hunt 4 (C4): the screen stage's example read
        # `- screen: {proxies: ...}`, refused when pasted. Every stage's
        # example, taken from `--describe`, runs in a small study; the
        # components' examples are created by tests/plugins and tests/lua
        # (test_component_example), and none may hold a placeholder.
        out = sieve("plugins", check=0).stdout
        stages = re.findall(r"(?m)^  (\w+) ", out.split("\npipeline stages")[1])
        components = re.findall(r"(?m)^  (\w+) ", out.split("\npipeline stages")[0])
        self.assertEqual(sorted(stages), ["dedupe", "latency", "screen"])
        for name in components + stages:
            text = sieve("plugins", "--describe", name, check=0).stdout
            for example in re.findall(r"(?m)^example.*:\n((?:  .*\n)+)", text):
                self.assertNotIn("...", example, f"{name}: {example}")
        table = os.path.join(ROOT, "data", "nb201", "nb201.csv")
        for name in stages:
            with self.subTest(stage=name), tempfile.TemporaryDirectory(prefix="sieve-cli-") as tmp:
                text = sieve("plugins", "--describe", name, check=0).stdout
                example = re.search(r"(?m)^pipeline stage .*(?:\n.*)*?\nexample:\n((?:  .*\n)+)", text)
                self.assertIsNotNone(example, text)
                config = os.path.join(tmp, "ex.yaml")
                with open(config, "w") as f:
                    f.write("space: {plugin: nb201, C: 4, N: 1}\noptimizer: {plugin: random}\n"
                            f"evaluator: {{plugin: tabular, table: {table}, metrics: [cifar10_valid_acc]}}\n"
                            "objective: {metric: cifar10_valid_acc}\nbudget: {evaluations: 2}\n"
                            + textwrap.dedent(example.group(1)))
                p = sieve("run", config, "--store", os.path.join(tmp, "ex.sieve"), "-q", cwd=tmp)
                self.assertEqual(p.returncode, 0, f"{example.group(1)}{p.stderr}")

    def test_describe_both_evaluator_and_stage(self):
        # Bug hunt 4 (C6): latency is an evaluator and a pipeline stage;
        # --describe printed only the evaluator.
        out = sieve("plugins", "--describe", "latency", check=0).stdout
        self.assertIn("evaluator latency:", out)
        self.assertIn("pipeline stage latency:", out)
        self.assertIn("  pipeline:\n    - latency", out)
        self.assertIn("pipeline stage", sieve("plugins", "--help", check=0).stdout)

    def test_help_everywhere(self):
        for cmd in ("run", "plugins", "export"):
            p = sieve(cmd, "--help", check=0)
            self.assertIn("Usage:", p.stdout)
        self.assertIn("did you mean 'run'", sieve("rnu", check=2).stderr)


class TestNb201(Workdir):
    def test_300_random_trials_and_export(self):
        store = self.path("nb.sieve")
        t0 = time.monotonic()
        p = sieve("run", os.path.join(CONFIGS, "nb201-random.yaml"), "--store", store, check=0)
        took = time.monotonic() - t0
        print(f"nb201-random: 300 trials in {took:.2f} s", file=sys.stderr)
        self.assertLess(took, 30, "300 table lookups should take seconds")
        self.assertIn("300 trials: 300 ok, 0 failed, 0 pending", p.stdout)
        self.assertIn("top 10 by cifar10_valid_acc (maximize):", p.stdout)
        rows = export_rows(store, stable=False)
        self.assertEqual(len(rows), 300)
        self.assertEqual([int(r["number"]) for r in rows], list(range(300)))
        # Each exported metric is the table's value for that architecture.
        table = {}
        with open(os.path.join(ROOT, "data", "nb201", "nb201.csv")) as f:
            for r in csv.DictReader(f):
                table[r["arch_str"]] = r
        for r in rows:
            self.assertEqual(r["status"], "ok")
            ref = table[r["genotype"]]
            for m in ("cifar10_valid_acc", "cifar10_test_acc"):
                self.assertAlmostEqual(float(r[m]), float(ref[m]), places=9)
        data = json.loads(sieve("export", store, "--format", "json", check=0).stdout)
        self.assertEqual(len(data), 300)
        self.assertEqual(data[5]["genotype"], rows[5]["genotype"])
        self.assertAlmostEqual(data[5]["metrics"]["cifar10_test_acc"], float(rows[5]["cifar10_test_acc"]))
        # The summary's best is the export's best.
        best = max(rows, key=lambda r: float(r["cifar10_valid_acc"]))
        self.assertRegex(p.stdout, rf"(?m)^\s+1\s+{best['number']}\s+{float(best['cifar10_valid_acc']):.6g}")

    def test_existing_store_is_never_overwritten(self):
        store = self.path("s.sieve")
        cfg = os.path.join(CONFIGS, "nb201-random.yaml")
        sieve("run", cfg, "--store", store, "--set", "budget.evaluations=20", check=0)
        before = export_rows(store, stable=False)
        p = sieve("run", cfg, "--store", store, "--set", "budget.evaluations=20", check=1)
        self.assertIn("already holds study 'nb201-random' (20 trials)", p.stderr)
        p = sieve("run", cfg, "--store", store, "--resume", "--set", "seed=5", check=1)
        self.assertIn("the experiment differs from the study stored there", p.stderr)
        self.assertIn("seed", p.stderr)
        self.assertEqual(export_rows(store, stable=False), before)
        # A larger budget on --resume extends the study.
        sieve("run", cfg, "--store", store, "--resume", "--set", "budget.evaluations=30", check=0)
        rows = export_rows(store, stable=False)
        self.assertEqual(len(rows), 30)
        self.assertEqual(rows[:20], before)

    def test_refused_queue_options_touch_no_store(self):
        """--local-workers, --in-flight, --lease and --reconnect-timeout need a server: refused on an
        SQLite store (the last two were once accepted and ignored) before the store is created, and
        before a --resume --set rewrites the stored config."""
        cfg = self.write("b.yaml", sieve_cli.branin_config("b", 3))
        refused = (["--local-workers", "2"], ["--in-flight", "3"], ["--lease", "5"], ["--reconnect-timeout", "0"])
        for extra in refused:
            p = sieve("run", "b.yaml", *extra, cwd=self.dir, check=2)
            self.assertIn(f"sieve run: {extra[0]} needs a postgresql:// store", p.stderr)
            self.assertEqual(sorted(os.listdir(self.dir)), ["b.yaml"], extra)
        store = self.path("b.sieve")
        sieve("run", cfg, "--store", store, "--quiet", check=0)

        def dump():
            with sqlite3.connect(store) as db:
                return list(db.iterdump())

        before = dump()
        self.assertTrue(any("budget:\n  evaluations: 3\n" in line for line in before))
        for extra in refused:
            p = sieve("run", cfg, "--store", store, "--resume", "--set", "budget.evaluations=5", *extra, check=2)
            self.assertIn(f"{extra[0]} needs a postgresql:// store", p.stderr)
            self.assertEqual(dump(), before, extra)
        # Still a study of 3 trials that --resume extends.
        sieve("run", cfg, "--store", store, "--resume", "--set", "budget.evaluations=5", "--quiet", check=0)
        self.assertEqual(len(export_rows(store)), 5)

    def test_two_objectives(self):
        """Several objectives: each is checked against the results, and the
        first one drives the summary."""
        store = self.path("mo.sieve")
        cfg = os.path.join(CONFIGS, "nb201-random.yaml")
        text = open(cfg).read().replace(
            "objective: {metric: cifar10_valid_acc, direction: maximize}",
            "objective: [{metric: cifar10_valid_acc}, {metric: lat_ms_gold_6226, direction: minimize}]")
        mo = self.write_config("mo.yaml", text.replace("../data/nb201/nb201.csv",
                                                       os.path.join(ROOT, "data", "nb201", "nb201.csv")))
        p = sieve("run", mo, "--store", store, "--set", "budget.evaluations=12", check=0)
        self.assertIn("top 10 by cifar10_valid_acc (maximize):", p.stdout)
        self.assertEqual(len(export_rows(store)), 12)
        p = sieve("run", mo, "--store", self.path("mo2.sieve"), "--set", "objective.1.metric=lat_ms_gold6226",
                  check=2)
        self.assertRegex(p.stderr, r"sieve: --set objective\.1\.metric=lat_ms_gold6226: evaluator 'tabular' does not "
                                   r"report the objective metric 'lat_ms_gold6226' \(did you mean 'lat_ms_gold_6226'\?\)")
        self.assertFalse(os.path.exists(self.path("mo2.sieve")), "refused before the store is written")

    def test_progress_names_the_incumbent_fidelity(self):
        """A multi-fidelity study's best is the best at the highest fidelity reached, which may be lower than an
        earlier best at a lower one: the progress line says at which fidelity, and only then."""
        out = sieve("run", os.path.join(CONFIGS, "branin-successive_halving.yaml"), "--store", self.path("f.sieve"),
                    "--set", "budget.evaluations=40", check=0).stdout
        self.assertRegex(out, r"(?m) ok value=\S+ \(\S+ s\) best=\S+ \(#\d+ at fidelity 27\) \| ")
        out = sieve("run", os.path.join(CONFIGS, "branin-random.yaml"), "--store", self.path("r.sieve"),
                    "--set", "budget.evaluations=3", check=0).stdout
        self.assertRegex(out, r"(?m) ok value=\S+ \(\S+ s\) best=\S+ \(#\d+\) \| ")
        self.assertNotIn("at fidelity", out)

    def test_set_overrides(self):
        store = self.path("o.sieve")
        cfg = os.path.join(CONFIGS, "nb201-random.yaml")
        a = sieve("run", cfg, "--store", store, "--set", "budget.evaluations=7", "--set", "optimizer.seed=3",
                  check=0)
        self.assertEqual(len(export_rows(store)), 7)
        b = sieve("run", cfg, "--store", self.path("o2.sieve"), "--set", "budget.evaluations=7",
                  "--set", "optimizer.seed=4", check=0)
        self.assertNotEqual(export_rows(store), export_rows(self.path("o2.sieve")))
        p = sieve("run", cfg, "--store", self.path("x.sieve"), "--set", "budget.evaluations=ten", check=2)
        self.assertRegex(p.stderr, r"sieve: --set budget\.evaluations=ten: .*integer")
        p = sieve("run", cfg, "--store", self.path("x.sieve"), "--set", "budget.evalutions=3", check=2)
        self.assertIn("did you mean 'evaluations'?", p.stderr)
        p = sieve("run", cfg, "--store", self.path("x.sieve"), "--set", "optimizer.sed=3", check=2)
        self.assertIn("unknown option 'sed' for optimizer 'random' (did you mean 'seed'?)", p.stderr)
        p = sieve("run", cfg, "--store", self.path("x.sieve"), "--set", "workers=0", check=2)
        self.assertIn("sieve: --set workers=0: ", p.stderr)
        p = sieve("run", cfg, "--store", self.path("x.sieve"), "--set", "noequals", check=2)
        self.assertIn("expected KEY=VALUE", p.stderr)
        # A --set value has no line: what is wrong is located by the --set
        # alone, and inside a flow map or list by a column of the value.
        for setting, wanted in [("budget.evaluations=-2", "sieve: --set budget.evaluations=-2: option 'evaluations'"),
                                ("budget={evaluations: 3, secs: 2}", "sieve: --set budget={evaluations: 3, secs: 2} "
                                 "(column 18 of the value): unknown option 'secs' for budget"),
                                ("budget={evaluations: [3}", "sieve: --set budget={evaluations: [3} (column 17 of "
                                 "the value): did not find expected ',' or ']'"),
                                ("budget={evaluations: 3, evaluations: 4}", "sieve: --set budget={evaluations: 3, "
                                 "evaluations: 4} (column 18 of the value): duplicate key 'evaluations' (first "
                                 "written at column 2)")]:
            p = sieve("run", cfg, "--store", self.path("x.sieve"), "--set", setting, check=2)
            self.assertIn(wanted, p.stderr)
            self.assertNotIn(":1:", p.stderr)
        self.assertFalse(os.path.exists(self.path("x.sieve")), "a refused config must not create a store")


class TestConfigErrors(Workdir):
    """Each malformed config names file:line:col and what was expected."""

    BASE = """name: t
space: {plugin: nb201}
optimizer: {plugin: random}
evaluator: {plugin: tabular, table: %s}
objective: {metric: cifar10_valid_acc}
budget: {evaluations: 5}
""" % os.path.join(ROOT, "data", "nb201", "nb201.csv")

    def test_tabular_of_another_space_is_a_config_error(self):
        # Bug hunt 3: exit status 1 (a failure) instead of 2 (a bad config).
        p = sieve("run", os.path.join(CONFIGS, "nb201-random.yaml"), "--store", self.path("t.sieve"),
                  "--set", "space={plugin: hpo, file: %s}" % os.path.join(ROOT, "search_spaces", "branin.yaml"),
                  check=2)
        self.assertIn("no key of column 'arch_str' is a genotype of space 'hpo'", p.stderr)

    def check(self, text, pattern):
        cfg = self.write_config("bad.yaml", text)
        p = sieve("run", cfg, "--store", self.path("bad.sieve"), check=2)
        self.assertRegex(p.stderr, pattern)
        self.assertFalse(os.path.exists(self.path("bad.sieve")))

    def test_bad_yaml(self):
        self.check(self.BASE + "workers: [1, 2\n", r"bad\.yaml:\d+:\d+: ")

    def test_unknown_key(self):
        self.check(self.BASE.replace("optimizer: {plugin: random}", "optimizer: {plugin: random, uniqe: true}"),
                   r"bad\.yaml:3:29: unknown option 'uniqe'.*did you mean 'unique'\?")
        self.check(self.BASE + "buget: {evaluations: 3}\n", r"bad\.yaml:7:1: .*'buget'.*did you mean 'budget'\?")

    def test_wrong_type(self):
        self.check(self.BASE.replace("evaluations: 5", "evaluations: lots"),
                   r"bad\.yaml:6:23: .*'evaluations'.*integer.*'lots'")

    def test_out_of_range(self):
        self.check(self.BASE + "workers: 0\n", r"bad\.yaml:7:10: .*'workers'.*\[1, 1024\]")

    def test_missing_plugin(self):
        self.check(self.BASE.replace("plugin: random", "plugin: randon"),
                   r"bad\.yaml:3:21: no optimizer plugin named 'randon' \(did you mean 'random'\?\)")

    def test_objectives(self):
        two = "objective:\n  - {metric: cifar10_valid_acc}\n  - {metric: cifar10_valid_acc, direction: minimize}\n"
        self.check(self.BASE.replace("objective: {metric: cifar10_valid_acc}\n", two),
                   r"bad\.yaml:7:14: metric 'cifar10_valid_acc' is already objective #1")
        self.check(self.BASE.replace("objective: {metric: cifar10_valid_acc}", "objective: []"),
                   r"bad\.yaml:5:12: 'objective' is an empty list")
        self.check(self.BASE.replace("objective: {metric: cifar10_valid_acc}", "objective: [{metric: a, dir: up}]"),
                   r"bad\.yaml:5:25: unknown option 'dir' for objective #1 \(did you mean 'direction'\?\)")

    def test_missing_section(self):
        self.check(self.BASE.replace("budget: {evaluations: 5}\n", ""), r"bad\.yaml:1:1: missing 'budget' section")

    def test_wrong_objective_metric(self):
        cfg = self.write_config("obj.yaml", self.BASE.replace("metric: cifar10_valid_acc", "metric: cifar10_valid"))
        p = sieve("run", cfg, "--store", self.path("obj.sieve"), check=2)
        # The table's columns are known before any trial: refused before the
        # store is written (an evaluator that cannot tell, such as a command,
        # is checked after its first trial: tests/hostile).
        self.assertRegex(p.stderr, r"obj\.yaml:5:21: evaluator 'tabular' does not report the objective metric "
                                   r"'cifar10_valid' \(did you mean 'cifar10_valid_acc'\?\)")
        self.assertFalse(os.path.exists(self.path("obj.sieve")))


SLOW = """name: slow
seed: 7
space: {plugin: hpo, file: %s}
optimizer: {plugin: random}
evaluator: {plugin: function, function: branin, delay: %s}
objective: {metric: value, direction: minimize}
budget: {evaluations: %d}
"""


class TestKillResume(Workdir):
    N = 40

    def config(self, delay=0.02, n=None):
        return self.write_config("slow.yaml", SLOW % (os.path.join(ROOT, "search_spaces", "branin.yaml"), delay,
                                                       n or self.N))

    def run_until(self, cfg, store, resume, kill_at=None, kill_after_s=None):
        """Run sieve; SIGKILL it when kill_at trials have been reported (or
        after kill_after_s seconds).  Returns True if it was killed."""
        args = ["run", cfg, "--store", store] + (["--resume"] if resume else [])
        if kill_after_s is not None:
            proc = subprocess.Popen([SIEVE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(kill_after_s)
            killed = proc.poll() is None
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
            return killed
        sieve_cli.run_until(self, args, kill_at)
        return kill_at is not None

    def test_kill_at_many_points(self):
        cfg = self.config()
        ref = self.path("ref.sieve")
        self.run_until(cfg, ref, resume=False)
        reference = export_rows(ref)
        self.assertEqual(len(reference), self.N)

        # One study killed again and again at chosen trial counts.
        store = self.path("chain.sieve")
        resume = False
        for k in (1, 2, 9, 10, 23, 38):
            self.run_until(cfg, store, resume, kill_at=k)
            resume = True
            rows = export_rows(store)
            done = [r for r in rows if r["status"] != "pending"]
            self.assertGreaterEqual(len(done), k, "a finished trial was lost")
            self.assertEqual(done, reference[:len(done)])
        self.run_until(cfg, store, resume=True)
        self.assertEqual(export_rows(store), reference)

        # Kills at random moments, startup included.
        rng = random.Random(int(os.environ.get("SIEVE_TEST_SEED", "20261122")))
        for i in range(4):
            store = self.path(f"random{i}.sieve")
            resume = False
            for _ in range(3):
                self.run_until(cfg, store, resume, kill_after_s=rng.uniform(0.0, 0.6))
                resume = True
            self.run_until(cfg, store, resume=True)
            self.assertEqual(export_rows(store), reference, f"random kill run {i}")

    def test_store_in_use(self):
        cfg = self.config(delay=0.05, n=200)
        store = self.path("busy.sieve")
        proc = subprocess.Popen([SIEVE, "run", cfg, "--store", store], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            for line in proc.stdout:
                if PROGRESS.match(line):
                    break
            p = sieve("run", cfg, "--store", store, "--resume", check=1)
            self.assertIn("store is in use", p.stderr)
            # Readers are welcome while it runs.
            self.assertGreaterEqual(len(export_rows(store, stable=False)), 1)
        finally:
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        # Ctrl-C: the trials in flight finish, the summary is printed, exit 130.
        self.assertEqual(proc.returncode, 130, err)
        self.assertIn("stopping after the trials in flight", err)
        rows = export_rows(store)
        self.assertTrue(all(r["status"] == "ok" for r in rows))


if __name__ == "__main__":
    unittest.main(verbosity=2)
