#!/usr/bin/env python3
"""The optimizer plugins through the `sieve` command: every shipped config at
a small budget, option mistakes located at file:line:col, SIGKILL at many
points and --resume giving the uninterrupted study exactly, several workers
finishing in any order."""
import os
import random
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli import CONFIGS, ROOT, SIEVE, Workdir, export_rows, sieve  # noqa: E402
import test_cli  # noqa: E402

NEW_CONFIGS = ["nb201-evolution", "nb201-local_search", "nb201-tpe", "nb201-reinforce", "nb201-nsga2",
               "branin-tpe", "hartmann6-tpe", "hartmann6-evolution", "rosenbrock4-local_search",
               "branin-reinforce", "branin-successive_halving", "branin-hyperband", "hartmann6-bohb"]
MULTI_FIDELITY = {"successive_halving", "hyperband", "bohb"}

STUDY = """name: opt
seed: 5
space: {plugin: hpo, file: %(space)s}
optimizer: %(optimizer)s
evaluator: {plugin: function, function: branin, delay: %(delay)s%(fidelity)s}
objective: {metric: value, direction: minimize}
budget: {evaluations: %(n)d}
workers: %(workers)d
"""
FIDELITY = ", fidelity: {name: budget, min: 1, max: 9, integer: true}"
OPTIMIZERS = {
    "evolution": "{plugin: evolution, population: 8, sample_size: 3, crossover: 0.3}",
    "local_search": "{plugin: local_search, initial: 4}",
    "tpe": "{plugin: tpe, n_startup: 5}",
    "successive_halving": "{plugin: successive_halving}",
    "hyperband": "{plugin: hyperband}",
    "bohb": "{plugin: bohb, min_points: 3}",
    "reinforce": "{plugin: reinforce}",
    "asha": "{plugin: asha}",
    # the model from the first rung with 3 results (branin's 2 decisions + 1), rung 0's and
    # then higher ones as they fill
    "asha-tpe": "{plugin: asha, sampler: tpe}",
}
# the OPTIMIZERS entries that need the evaluator's fidelity
WITH_FIDELITY = MULTI_FIDELITY | {"asha", "asha-tpe"}


class TestConfigs(Workdir):
    def test_every_config_runs(self):
        for name in NEW_CONFIGS:
            with self.subTest(config=name):
                store = self.path(name + ".sieve")
                p = sieve("run", os.path.join(CONFIGS, name + ".yaml"), "--store", store, "--quiet",
                          "--set", "budget.evaluations=30", check=0)
                self.assertIn("30 trials: 30 ok, 0 failed, 0 pending", p.stdout)
                rows = export_rows(store)
                if not any(m in name for m in MULTI_FIDELITY):
                    self.assertEqual(len({r["genotype"] for r in rows}), 30, "a genotype was proposed twice")

    def test_pareto_front(self):
        store = self.path("mo.sieve")
        p = sieve("run", os.path.join(CONFIGS, "nb201-nsga2.yaml"), "--store", store, "--quiet",
                  "--set", "budget.evaluations=60", check=0)
        m = re.search(r"Pareto front over cifar10_valid_acc \(maximize\), lat_ms_gold_6226 \(minimize\): "
                      r"(\d+) non-dominated trials", p.stdout)
        self.assertIsNotNone(m, p.stdout)
        rows = [r for r in export_rows(store)]
        pts = [(float(r["cifar10_valid_acc"]), -float(r["lat_ms_gold_6226"]), r["number"]) for r in rows]
        front = {n for a, b, n in pts
                 if not any((a2 >= a and b2 >= b) and (a2 > a or b2 > b) for a2, b2, _ in pts)}
        self.assertEqual(int(m.group(1)), len(front))
        listed = set(re.findall(r"(?m)^\s+(\d+)\s+\S+\s+\S+\s+\|", p.stdout.split("Pareto front")[1]))
        self.assertEqual(listed, front)

    def test_pareto_front_at_the_highest_fidelity(self):
        # Bug hunt 3: the summary's front mixed a multi-fidelity study's
        # rungs (21 trials at fidelities 1 to 27) where the report's was over
        # the highest fidelity reached; both are now that one.
        # (hyperband refuses two objectives since 2026-11-27: a Lua
        # optimizer asks at its rungs' fidelities instead)
        store = self.path("mf.sieve")
        self.write_config("rungs.lua", """
sieve.register_optimizer{name = "rungs", create = function(self) self.state.asked = 0 end,
  ask = function(self, n)
    local out = {}
    for i = 1, n do
      self.state.asked = self.state.asked + 1
      out[i] = {genotype = self.space:sample(self.rng), fidelity = ({1, 3, 9, 27})[self.state.asked % 4 + 1]}
    end
    return out
  end}
""")
        p = sieve("run", os.path.join(CONFIGS, "branin-hyperband.yaml"), "--store", store, "--quiet",
                  "--set", "objective=[{metric: value, direction: minimize}, {metric: regret, direction: maximize}]",
                  "--set", "optimizer={plugin: lua, script: %s}" % self.path("rungs.lua"),
                  "--set", "budget.evaluations=40", check=0)
        m = re.search(r"Pareto front over value \(minimize\), regret \(maximize\) at fidelity (\S+) \(the highest "
                      r"reached\): (\d+) non-dominated trials", p.stdout)
        self.assertIsNotNone(m, p.stdout)
        rows = [r for r in export_rows(store) if r["status"] == "ok"]
        top = max(float(r["fidelity"]) for r in rows)
        self.assertLess(min(float(r["fidelity"]) for r in rows), top, "the study has one fidelity only")
        self.assertEqual(float(m.group(1)), top)
        pts = [(-float(r["value"]), float(r["regret"]), r["number"]) for r in rows if float(r["fidelity"]) == top]
        front = {n for a, b, n in pts
                 if not any((a2 >= a and b2 >= b) and (a2 > a or b2 > b) for a2, b2, _ in pts)}
        self.assertEqual(int(m.group(2)), len(front))
        listed = set(re.findall(r"(?m)^\s+(\d+)\s+\S+\s+\S+\s+x1=", p.stdout.split("Pareto front")[1]))
        self.assertEqual(listed, front)
        html = self.path("mf.html")
        sieve("report", store, "-o", html, check=0)
        with open(html) as f:
            self.assertRegex(f.read(), r"<p>%d non-dominated of %d evaluated trials" % (len(front), len(pts)))


class TestBadOptions(Workdir):
    def check(self, text, pattern):
        cfg = self.write_config("bad.yaml", text)
        p = sieve("run", cfg, "--store", self.path("bad.sieve"), check=2)
        self.assertRegex(p.stderr, pattern)
        self.assertFalse(os.path.exists(self.path("bad.sieve")), "a refused config must not create a store")

    def base(self, optimizer, fidelity=""):
        return STUDY % {"space": os.path.join(ROOT, "search_spaces", "branin.yaml"), "optimizer": optimizer,
                        "delay": 0, "fidelity": fidelity, "n": 5, "workers": 1}

    def test_population_below_sample_size(self):
        self.check(self.base("{plugin: evolution, population: 10, sample_size: 20}"),
                   r"bad\.yaml:4:61: sample_size \(20\) must not exceed population \(10\)")

    def test_nsga2_one_objective(self):
        self.check(self.base("{plugin: evolution, selection: nsga2}"),
                   r"bad\.yaml:4:43: selection nsga2 needs two or more objectives; the experiment has 1")

    def test_one_objective_methods_refuse_two(self):
        # A new-user review (2026-11-27): tpe and the others ranked by the
        # first objective of two without a word, while the summary printed a
        # Pareto front as if the search had sought one.
        two = "objective: [{metric: value, direction: minimize}, {metric: regret, direction: minimize}]"
        for name, optimizer in sorted(OPTIMIZERS.items()):
            fidelity = FIDELITY if name in WITH_FIDELITY else ""
            text = self.base(optimizer, fidelity).replace("objective: {metric: value, direction: minimize}", two)
            what = "selection aging ranks the population" if name == "evolution" else "it ranks candidates"
            with self.subTest(optimizer=name):
                self.check(text, rf"bad\.yaml:4:12: optimizer '{name.split('-')[0]}': {what} by one objective, and "
                                 r"this study has 2 \(value, regret\): use `evolution` with `selection: nsga2`")
        # What it points to runs.
        text = self.base("{plugin: evolution, selection: nsga2, population: 4, sample_size: 2}").replace(
            "objective: {metric: value, direction: minimize}", two)
        sieve("run", self.write_config("ok.yaml", text), "--store", self.path("ok.sieve"), "-q", check=0)

    def test_multi_fidelity_without_fidelity(self):
        for name in sorted(MULTI_FIDELITY):
            self.check(self.base("{plugin: %s}" % name),
                       rf"bad\.yaml:4:12: optimizer '{name}': {name} needs an evaluator that offers a fidelity")

    def test_min_fidelity_out_of_range(self):
        self.check(self.base("{plugin: hyperband, min_fidelity: 20}", FIDELITY),
                   r"bad\.yaml:4:46: min_fidelity 20 is outside the evaluator's fidelity 'budget' \[1, 9\]")

    def test_min_fidelity_not_whole(self):
        """An integer fidelity takes whole values only: a min_fidelity of
        3.3 is refused where it is written, not by the evaluator at run time
        (a trial left pending that --resume could never finish)."""
        for name in ("asha", "bohb", "hyperband", "successive_halving"):
            with self.subTest(optimizer=name):
                text = self.base("{plugin: %s, eta: 2, min_fidelity: 3.3}" % name, FIDELITY)
                col = text.splitlines()[3].index("min_fidelity") + 15
                self.check(text, rf"bad\.yaml:4:{col}: min_fidelity 3\.3 is not whole, and the evaluator's "
                                 rf"fidelity 'budget' takes only whole values \(use 3 or 4\)")

    def test_unknown_option(self):
        self.check(self.base("{plugin: tpe, n_startp: 3}"),
                   r"bad\.yaml:4:26: unknown option 'n_startp' for optimizer 'tpe' \(did you mean 'n_startup'\?\)")


SMALL = """name: small
seed: 3
space: {plugin: hpo, parameters: {x1: {type: int, low: -4, high: -2}, x2: {type: int, low: 10, high: 13}}}
optimizer: %(optimizer)s
evaluator: {plugin: function, function: branin, fidelity: {name: budget, min: 1, max: 27, integer: true}}
objective: {metric: value, direction: minimize}
budget: {evaluations: 100}
workers: %(workers)d
"""


class TestFiniteSpace(Workdir):
    """A space of 12 configurations, smaller than the 27 Hyperband's first
    bracket wants: the rung makes do with 12, its best 1/eta go up, and
    one configuration reaches the full fidelity 27; then the study ends
    cleanly ("has no more candidates", exit 0), with one worker or three
    (an ask that is empty while evaluations run waits for them)."""

    def run_small(self, optimizer, workers, store):
        cfg = self.write_config("small.yaml", SMALL % {"optimizer": optimizer, "workers": workers})
        p = sieve("run", cfg, "--store", store, check=0)
        self.assertIn("has no more candidates", p.stdout + p.stderr)
        return export_rows(store)

    def test_brackets_promote(self):
        for name in ("hyperband", "bohb", "successive_halving"):
            for workers in (1, 3):
                with self.subTest(optimizer=name, workers=workers):
                    store = self.path(f"{name}-{workers}.sieve")
                    rows = self.run_small("{plugin: %s}" % name, workers, store)
                    by_fid = {}
                    for r in rows:
                        self.assertEqual(r["status"], "ok")
                        by_fid.setdefault(float(r["fidelity"]), []).append(r)
                    self.assertEqual({f: len(v) for f, v in by_fid.items()}, {1: 12, 3: 4, 9: 1, 27: 1})
                    # each rung holds the best 1/eta of the one below
                    for lo, hi in ((1, 3), (3, 9), (9, 27)):
                        ranked = sorted(by_fid[lo], key=lambda r: float(r["value"]))
                        self.assertEqual({r["genotype"] for r in ranked[:len(by_fid[hi])]},
                                         {r["genotype"] for r in by_fid[hi]})
                    p = sieve("run", self.path("small.yaml"), "--store", store, "--resume", check=0)
                    self.assertIn("18 trials: 18 ok", p.stdout)

    def test_asha_promotes(self):
        for workers in (1, 3):
            with self.subTest(workers=workers):
                rows = self.run_small("{plugin: asha}", workers, self.path(f"asha-{workers}.sieve"))
                fids = [float(r["fidelity"]) for r in rows]
                self.assertEqual(fids.count(1), 12)
                # asynchronous: a later result may displace one promoted
                self.assertGreaterEqual(fids.count(27), 1)
                self.assertTrue(all(r["status"] == "ok" for r in rows))

    def test_random_unique_ends(self):
        store = self.path("random.sieve")
        rows = self.run_small("{plugin: random, unique: true}", 1, store)
        self.assertEqual(len({r["genotype"] for r in rows}), 12)
        self.assertEqual(len(rows), 12)
        p = sieve("run", self.path("small.yaml"), "--store", store, "--resume", check=0)
        self.assertIn("has no more candidates", p.stdout + p.stderr)
        self.assertIn("12 trials: 12 ok", p.stdout)


class TestResume(Workdir):
    """SIGKILL at chosen and random moments; --resume must give the
    uninterrupted study row for row, for each optimizer."""
    N = 40
    run_until = test_cli.TestKillResume.run_until

    def study(self, name, workers=1, delay=0.01, n=None):
        return self.write_config(f"{name}.yaml", STUDY % {
            "space": os.path.join(ROOT, "search_spaces", "branin.yaml"), "optimizer": OPTIMIZERS[name],
            "delay": delay, "fidelity": FIDELITY if name in WITH_FIDELITY else "", "n": n or self.N,
            "workers": workers})

    def test_kill_at_many_points(self):
        rng = random.Random(int(os.environ.get("SIEVE_TEST_SEED", "20261123")))
        for name in OPTIMIZERS:
            with self.subTest(optimizer=name):
                cfg = self.study(name)
                ref = self.path(f"{name}-ref.sieve")
                self.run_until(cfg, ref, resume=False)
                reference = export_rows(ref)
                self.assertEqual(len(reference), self.N)
                store = self.path(f"{name}-chain.sieve")
                resume = False
                for k in (2, 13, 29):
                    self.run_until(cfg, store, resume, kill_at=k)
                    resume = True
                    done = [r for r in export_rows(store) if r["status"] != "pending"]
                    self.assertGreaterEqual(len(done), k)
                    self.assertEqual(done, reference[:len(done)])
                self.run_until(cfg, store, resume=True)
                self.assertEqual(export_rows(store), reference)
                store = self.path(f"{name}-random.sieve")
                self.run_until(cfg, store, False, kill_after_s=rng.uniform(0.05, 0.35))
                self.run_until(cfg, store, resume=True)
                self.assertEqual(export_rows(store), reference)

    def test_workers_out_of_order(self):
        """Four workers with delays that reorder the tells: every study
        completes its budget, without repeating a genotype."""
        for name in OPTIMIZERS:
            with self.subTest(optimizer=name):
                cfg = self.study(name, workers=4, delay=0.005, n=60)
                store = self.path(f"{name}-w4.sieve")
                p = sieve("run", cfg, "--store", store, "--quiet", check=0)
                self.assertIn("60 trials: 60 ok", p.stdout)
                rows = export_rows(store)
                keys = [(r["genotype"], r["fidelity"]) for r in rows]
                self.assertEqual(len(set(keys)), 60)

if __name__ == "__main__":
    unittest.main(verbosity=2)
