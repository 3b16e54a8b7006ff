#!/usr/bin/env python3
"""The dedupe stage through `sieve run`: real processes, real stores, an
evaluator program that logs every evaluation it makes (so that "never
evaluated twice" is checked from outside), a Lua optimizer that writes down
every tell, and kills with SIGKILL at many points."""
import csv
import io
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import unittest

ROOT = os.environ["SIEVE_SOURCE_ROOT"]
HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import sieve_cli  # noqa: E402
from sieve_cli import SIEVE, Workdir as _Workdir, export_rows, sieve, sieve_tty, status_lines  # noqa: E402


def by_number(rows):
    return {r["number"]: r for r in rows}


def summary(store):
    out = sieve("export", store, "--summary", check=0).stdout
    return next(csv.DictReader(io.StringIO(out)))


class Workdir(_Workdir):
    prefix = "sieve-dedupe-"

    def grid(self, name, *sizes):
        """An hpo space of integer decisions x1, x2 ... with sizes values each."""
        lines = ["parameters:"] + [f"  x{i + 1}: {{type: int, low: 0, high: {n - 1}}}" for i, n in enumerate(sizes)]
        return self.write(name, "\n".join(lines) + "\n")

    def check_answers(self, rows):
        """Each cached trial repeats an earlier trial's metrics, whose genotype
        it has; no genotype is evaluated (ok) twice.  Returns the cached rows."""
        by_number = {int(r["number"]): r for r in rows}
        evaluated = [r["genotype"] for r in rows if r["status"] == "ok"]
        self.assertEqual(len(evaluated), len(set(evaluated)), "a candidate was evaluated twice")
        cached = [r for r in rows if r["status"] == "cached"]
        for r in cached:
            o = by_number[int(r["cached_from"])]
            self.assertLess(int(o["number"]), int(r["number"]))
            self.assertEqual(o["genotype"], r["genotype"])
            self.assertEqual(o["hash"], r["hash"])
            self.assertEqual(o["value"], r["value"])
            self.assertEqual(r["worker"] if "worker" in r else "", "")
        return cached


COMMAND = """name: cmd
seed: %(seed)d
space: {plugin: hpo, file: space.yaml}
optimizer: {plugin: random}
evaluator:
  plugin: command
  argv: [python3, %(evaluate)s, "{genotype}", %(log)s, "%(delay)s"]
  env: {PYTHONDONTWRITEBYTECODE: "1", FAIL_ON: "%(fail_on)s"}
objective: {metric: value, direction: minimize}
pipeline: [{dedupe: {max_consecutive_hits: %(hits)d}}]
budget: {evaluations: %(n)d}
workers: %(workers)d
"""

# Branin on a 4x4 grid; the evaluator's seed is fixed, so that stores of
# other optimizer seeds answer each other (dedupe.cache_from).
GRID = """name: grid
space: {plugin: hpo, parameters: {x1: {type: int, low: 0, high: 3}, x2: {type: int, low: 1, high: 4}}}
optimizer: {plugin: random, seed: %(seed)d}
evaluator: {plugin: function, function: branin, seed: 0}
objective: {metric: value, direction: minimize}
pipeline: [{dedupe: {max_consecutive_hits: 500%(cache_from)s}}]
budget: {evaluations: %(n)d}
report: {top: 30}
"""


class TestDedupe(Workdir):
    def command_config(self, n, workers=1, delay=0.0, hits=1000, seed=5, fail_on=""):
        return self.write("cmd.yaml", COMMAND % dict(seed=seed, evaluate=os.path.join(FIXTURES, "evaluate.py"),
                                                     log=self.path("evaluations.log"), delay=delay, hits=hits, n=n,
                                                     workers=workers, fail_on=fail_on))

    def logged(self):
        if not os.path.exists(self.path("evaluations.log")):
            return []
        with open(self.path("evaluations.log")) as f:
            return f.read().split()

    def test_second_run_answers_from_the_cache(self):
        self.grid("space.yaml", 6)
        cfg = self.command_config(n=3)
        store = self.path("s.sieve")
        sieve("run", cfg, "--store", store, check=0)
        first = export_rows(store)
        self.assertEqual(len(self.logged()), 3)
        out = sieve("run", cfg, "--store", store, "--resume", "--set", "budget.evaluations=6", check=0).stdout
        self.assertIn("pipeline: dedupe (genotype hash) -> command", out)
        rows = export_rows(store)
        self.assertEqual(rows[:len(first)], first)
        # Six evaluations in all, each of another cell, each logged once.
        log = self.logged()
        self.assertEqual(len(log), 6)
        self.assertEqual(len(set(log)), 6)
        self.assertEqual(sorted(log), sorted(r["genotype"] for r in rows if r["status"] == "ok"))
        cached = self.check_answers(rows)
        later = [r for r in cached if int(r["number"]) >= len(first) and int(r["cached_from"]) < len(first)]
        self.assertTrue(later, "the second run never reused a result of the first")
        self.assertRegex(out, r"cached value=\S+ from #\d+ \(run 1\)")
        s = summary(store)
        self.assertEqual((s["evaluated"], s["distinct_evaluated"], s["cached"]), ("6", "6", str(len(cached))))
        self.assertEqual(s["hash_kind"], "genotype")

    def test_results_of_another_store_rank(self):
        # Bug hunt 3: a result answered from dedupe.cache_from (a real
        # measurement of the candidate) was never the study's best, in the
        # status line, the summary, the report or Lua's study:best(); a
        # duplicate within the store is its original's result again, and
        # never listed twice.
        a = self.path("a.sieve")
        sieve("run", self.write("a.yaml", GRID % dict(seed=1, cache_from="", n=15)), "--store", a, "--quiet",
              check=0)
        # B evaluates the one cell A left out, the rest answered from A.
        cfg = self.write("b.yaml", GRID % dict(seed=5, cache_from=f", cache_from: [{a}]", n=1))
        b = self.path("b.sieve")
        code, out = sieve_tty("run", cfg, "--store", b)
        self.assertEqual(code, 0, out)
        rows = export_rows(b)
        ranked = [r for r in rows if r["status"] == "ok" or (r["status"] == "cached" and r["cached_from"] == "")]
        best = min(ranked, key=lambda r: float(r["value"]))
        self.assertEqual(best["status"], "cached", rows)
        self.assertTrue([r for r in rows if r["cached_from"]], "no duplicate within the store")
        self.assertTrue([r for r in rows if r["status"] == "ok"], "nothing evaluated")
        m = re.search(r"best (\S+) \(#(\d+)\)", status_lines(out)[-1])
        self.assertEqual(m.group(2), best["number"], out)
        self.assertAlmostEqual(float(m.group(1)), float(best["value"]), places=4)
        # The summary's top list: the best first, each configuration once.
        top = re.findall(r"(?m)^\s+\d+\s+(\d+)\s+\S+\s+\S+\s+(x1=\S+)$", out.split("top ")[1].replace("\r", ""))
        self.assertEqual(top[0][0], best["number"], out)
        self.assertEqual(len(top), len({g for _, g in top}), out)
        self.assertEqual(len(top), len({r["genotype"] for r in ranked}))
        sieve("report", b, "-o", self.path("b.html"), check=0)
        with open(self.path("b.html")) as f:
            self.assertIn(f'id="best" data-trial="{best["number"]}"', f.read())
        lua = self.write("best.lua", f'print(sieve.run("{cfg}", {{store = "{b}", resume = true}}):best().number)\n')
        self.assertEqual(sieve("lua", lua, check=0).stdout.split()[-1], best["number"])

    def test_results_of_another_store_meet_this_studys_rules(self):
        # Review of bug hunt 3: a result copied from another store became this
        # study's best though it broke this study's constraint (the other
        # study had none), or its objective was inf there (the other study's
        # objective was another metric).  Such a copy is a miss now: the
        # proposal is rejected or evaluated here, by this study's rules.
        table = os.path.join(ROOT, "data", "nb201", "nb201.csv")
        nb = ("name: nb\nseed: 0\nspace: {plugin: nb201}\noptimizer: {plugin: random, seed: 3}\n"
              "evaluator: {plugin: tabular, table: %s, key: arch_str, metrics: [cifar10_valid_acc, params_m]}\n"
              "objective: {metric: cifar10_valid_acc, direction: maximize}\n"
              "pipeline: [{dedupe: {max_consecutive_hits: 500%%s}}]\nbudget: {evaluations: %%d}\n%%s" % table)
        a = self.path("nba.sieve")
        sieve("run", self.write("nba.yaml", nb % ("", 30, "")), "--store", a, "--quiet", check=0)
        heavy = [r for r in export_rows(a) if float(r["params_m"]) > 0.4]
        self.assertTrue(heavy, "every network of A is within the bound: the test checks nothing")
        b = self.path("nbb.sieve")
        out = sieve("run", self.write("nbb.yaml", nb % (f", cache_from: [{a}]", 3,
                                                          "constraints: [{metric: params, max: 400000}]\n")),
                    "--store", b, check=0).stdout
        rows = export_rows(b)
        foreign = [r for r in rows if r["status"] == "cached" and r["cached_from"] == ""]
        self.assertTrue(foreign, "no result was taken from A")
        # The constraint's params are sieve's count of the network it builds
        # (a branch that computes zero is folded away), not the table's.
        counted = subprocess.run([SIEVE, "proxies", "-p", "params", "-"], capture_output=True, text=True, check=True,
                                 input="".join(r["genotype"] + "\n" for r in rows), timeout=120).stdout
        params = {d["arch"]: d["params"] for d in map(json.loads, counted.split("\n")[:-1])}
        for r in foreign:
            self.assertLessEqual(params[r["genotype"]], 400000, r)
        rejected = [r["genotype"] for r in rows if r["status"] == "rejected"]
        self.assertTrue(set(rejected) & {r["genotype"] for r in heavy}, "none of A's heavy networks was proposed")
        self.assertTrue(all(params[g] > 400000 for g in rejected))
        best = re.search(r"(?m)^\s+1\s+(\d+)\s", out.split("top ")[1])
        self.assertNotEqual(by_number(rows)[best.group(1)]["status"], "rejected")
        self.assertLessEqual(params[by_number(rows)[best.group(1)]["genotype"]], 400000)
        # A metric that is inf in A, where it was not the objective, is this
        # study's objective: not taken; evaluated here, the trial fails.
        prog = self.write("inf.py", "import json, sys\nx = json.load(sys.stdin)['params']['x1']\n"
                                    "print(json.dumps({'acc': 1.0, 'score': float('inf') if x == 2 else x}))\n")
        prog_cfg = ("name: inf\nseed: 1\nspace: {plugin: hpo, parameters: {x1: {type: int, low: 0, high: 3}}}\n"
                    "optimizer: {plugin: random}\nevaluator: {plugin: command, argv: [python3, %s], stdin: json}\n"
                    "objective: {metric: %%s, direction: maximize}\n"
                    "pipeline: [{dedupe: {max_consecutive_hits: 500%%s}}]\nbudget: {evaluations: %%d}\n" % prog)
        ia = self.path("ia.sieve")
        sieve("run", self.write("ia.yaml", prog_cfg % ("acc", "", 12)), "--store", ia, "--quiet", check=0)
        ib = self.path("ib.sieve")
        sieve("run", self.write("ib.yaml", prog_cfg % ("score", f", cache_from: [{ia}]", 4)), "--store", ib,
              "--quiet", check=0)
        rows = export_rows(ib)
        self.assertIn("x1=2", [r["genotype"] for r in rows])
        for r in rows:
            if r["genotype"] == "x1=2":
                self.assertEqual(r["status"], "failed", r)
                self.assertIn("is inf, not a finite number", r["reason"])
            elif r["status"] == "cached" and r["cached_from"] == "":
                self.assertNotEqual(r["score"], "inf")

    def fixed_study(self, genotypes, rest, evaluator=None):
        """An nb201 study (on the table unless evaluator is given) whose Lua
        optimizer proposes genotypes in turn, again and again; rest: the
        config's last lines."""
        lua = self.write("fixed.lua", "local list = {\n" + "".join(f' "{g}",\n' for g in genotypes) + "}\n" + """
sieve.register_optimizer{
  name = "fixed",
  create = function(self) self.state.i = 0 end,
  ask = function(self, n)
    local out = {}
    for k = 1, n do self.state.i = self.state.i + 1; out[k] = list[(self.state.i - 1) % #list + 1] end
    return out
  end,
  tell = function(self, t) end,
}
""")
        table = os.path.join(ROOT, "data", "nb201", "nb201.csv")
        evaluator = evaluator or f"{{plugin: tabular, table: {table}, key: arch_str, metrics: [cifar10_valid_acc]}}"
        return self.write("fixed.yaml", f"name: fixed\nseed: 0\nspace: {{plugin: nb201}}\nlua: {{load: [{lua}]}}\n"
                          f"optimizer: {{plugin: fixed}}\nevaluator: {evaluator}\n"
                          "objective: {metric: cifar10_valid_acc, direction: maximize}\n" + rest)

    def test_duplicates_meet_the_constraints_with_their_own_metrics(self):
        # Bug hunt 4: a cache hit skipped the constraints and stored its
        # twin's params and macs.  Three functional twins (one hash) of
        # 73306, 316346 and 101306 parameters: the heavy one breaks the bound
        # though its twin was evaluated; the light one is answered from the
        # cache with its own counts.
        twins = ["|none~0|+|none~0|none~1|+|skip_connect~0|none~1|none~2|",
                 "|nor_conv_1x1~0|+|none~0|nor_conv_3x3~1|+|skip_connect~0|none~1|none~2|",
                 "|nor_conv_1x1~0|+|none~0|nor_conv_1x1~1|+|skip_connect~0|none~1|none~2|"]
        other = "|nor_conv_1x1~0|+|none~0|skip_connect~1|+|none~0|none~1|skip_connect~2|"
        cfg = self.fixed_study(twins + [other], "pipeline: [dedupe]\nconstraints: [{metric: params, max: 2.0e5}]\n"
                               "budget: {evaluations: 2}\n")
        store = self.path("s.sieve")
        sieve("run", cfg, "--store", store, check=0)
        rows = export_rows(store)
        self.assertEqual([r["status"] for r in rows], ["ok", "rejected", "cached", "ok"], rows)
        self.assertEqual(len({r["hash"] for r in rows[:3]}), 1, "not one functional hash: the test checks nothing")
        # (the flops proxy counts the multiply-accumulates the macs metric does)
        counted = subprocess.run([SIEVE, "proxies", "-p", "params,flops", "-"], capture_output=True, text=True,
                                 check=True, input="".join(r["genotype"] + "\n" for r in rows), timeout=120).stdout
        own = {d["arch"]: d for d in map(json.loads, counted.split("\n")[:-1])}
        self.assertEqual([own[g]["params"] for g in twins], [73306, 344346, 129306])
        def own_counts(rows):
            for r in rows:
                self.assertEqual(float(r["params"]), own[r["genotype"]]["params"], r)
                self.assertEqual(float(r["macs"]), own[r["genotype"]]["flops"], r)
        own_counts(rows)
        self.assertIn("params = 344346 > max", rows[1]["reason"])
        # The evaluation reused is the twin's.
        self.assertEqual(rows[2]["cached_from"], "0")
        self.assertEqual(rows[2]["cifar10_valid_acc"], rows[0]["cifar10_valid_acc"])
        # The same with four workers and a slow evaluator: the light twin
        # waits for the first one's evaluation, and is stored with its own.
        slow = self.write("slow.sh", 'sleep 0.5; echo "{\\"cifar10_valid_acc\\": 1}"\n')
        cfg = self.fixed_study(twins + [other], "pipeline: [dedupe]\nconstraints: [{metric: params, max: 2.0e5}]\n"
                               "budget: {evaluations: 2}\nworkers: 4\n", evaluator=f"{{plugin: command, argv: [sh, {slow}]}}")
        store = self.path("w.sieve")
        sieve("run", cfg, "--store", store, check=0)
        rows = export_rows(store, stable=False)
        self.assertEqual([r["status"] for r in rows], ["ok", "rejected", "cached", "ok"], rows)
        self.assertLess(float(rows[3]["started"]), float(rows[0]["finished"]), "trial 2 did not wait for trial 0")
        own_counts(rows)
        # Screened by the params proxy and no constraint: a hit was not
        # screened, and keeps none of its twin's screen scores.
        def screened_by_params(name, rest):
            cfg = self.fixed_study([twins[0], twins[2], other], "pipeline: [dedupe, {screen: {proxies: [params], "
                                   "keep_top: 1, " + rest)
            sieve("run", cfg, "--store", self.path(name), check=0)
            return export_rows(self.path(name))
        rows = screened_by_params("screen.sieve", "batch: 2}}]\nbudget: {evaluations: 2}\n")
        self.assertEqual([r["status"] for r in rows[:3]], ["ok", "cached", "ok"], rows)
        self.assertEqual(rows[0]["params"], "73306")
        self.assertNotEqual(rows[0]["screen_score"], "")
        self.assertEqual((rows[1]["params"], rows[1]["screen_score"]), ("", ""), rows[1])
        self.assertEqual(rows[1]["cifar10_valid_acc"], rows[0]["cifar10_valid_acc"])
        # Review 4: a duplicate screened out with its twin (it waited for
        # the twin's screen) is stored with its own counts, not its twin's.
        rows = screened_by_params("screened.sieve", "batch: 3}}]\nconstraints: [{metric: params, max: 2.0e5}]\n"
                                  "budget: {evaluations: 1}\n")
        self.assertEqual([r["status"] for r in rows[:3]], ["screened", "screened", "ok"], rows)
        self.assertEqual(rows[1]["cached_from"], "0")
        own_counts(rows[:3])

    def small_study(self, genotypes, evaluator, objective, pipeline):
        """fixed_study on a small nb201 (C 8, N 1) with objective (YAML) and
        pipeline (YAML list), two evaluations."""
        cfg = self.fixed_study(genotypes, f"pipeline: {pipeline}\nbudget: {{evaluations: 2}}\n", evaluator=evaluator)
        text = open(cfg).read().replace("space: {plugin: nb201}", "space: {plugin: nb201, C: 8, N: 1}")
        text = text.replace("objective: {metric: cifar10_valid_acc, direction: maximize}", "objective: " + objective)
        return self.write("small.yaml", text)

    def test_cache_hits_and_evaluations_store_one_value_per_metric(self):
        # Review 4: a metric known before evaluation got two values.  Two
        # twins (one hash), then another network.
        twins = ["|none~0|+|none~0|none~1|+|skip_connect~0|none~1|none~2|",
                 "|nor_conv_1x1~0|+|none~0|nor_conv_1x1~1|+|skip_connect~0|none~1|none~2|"]
        other = "|nor_conv_1x1~0|+|none~0|skip_connect~1|+|none~0|none~1|skip_connect~2|"
        table = os.path.join(ROOT, "data", "nb201", "nb201.csv")
        tabular = f"{{plugin: tabular, table: {table}, key: arch_str, metrics: [cifar10_valid_acc]}}"
        screen = "{screen: {proxies: [naswot], keep_top: 2, batch: 3, batch_size: 16}}"
        objective = "[{metric: cifar10_valid_acc, direction: maximize}, {metric: naswot, direction: maximize}]"
        # An objective the engine computes (naswot, with the settings a
        # constraint on it uses), screened by the same proxy on another
        # batch: an evaluated trial stores the engine's value, as its hit does.
        rows = {}
        for name, pipeline in (("plain", "[dedupe]"), ("screened", f"[dedupe, {screen}]")):
            store = self.path(name + ".sieve")
            sieve("run", self.small_study(twins + [other], tabular, objective, pipeline), "--store", store, check=0)
            rows[name] = export_rows(store)
            self.assertEqual([r["status"] for r in rows[name]], ["ok", "cached", "ok"], rows[name])
        self.assertEqual([r["naswot"] for r in rows["screened"]], [r["naswot"] for r in rows["plain"]])
        # An evaluator that reports a metric of the screen proxy's name: a
        # hit keeps the value the evaluator reported.
        store = self.path("proxy.sieve")
        sieve("run", self.small_study(twins + [other], "{plugin: proxy, proxies: [naswot, synflow], batch_size: 32}",
                                      "{metric: score, direction: maximize}", f"[dedupe, {screen}]"),
              "--store", store, check=0)
        rows = export_rows(store)
        self.assertEqual([r["status"] for r in rows], ["ok", "cached", "ok"], rows)
        self.assertNotEqual(rows[0]["naswot"], "")
        self.assertEqual(rows[1]["naswot"], rows[0]["naswot"])
        # A latency evaluator (batch 32) and a latency stage (batch 1), no
        # constraint: the hit is told the evaluator's timing, not the stage's.
        store = self.path("latency.sieve")
        sieve("run", self.small_study(twins + [other], "{plugin: latency, batch: 32, threads: 1, warmup: 1, min_runs: 3, "
                                      "max_runs: 3}", "{metric: latency_ms, direction: minimize}",
                                      "[dedupe, {latency: {batch: 1, threads: 1}}]"), "--store", store, check=0)
        rows = export_rows(store, stable=False)
        self.assertEqual([r["status"] for r in rows], ["ok", "cached", "ok"], rows)
        self.assertEqual(rows[1]["latency_ms"], rows[0]["latency_ms"])

    def test_cache_hits_break_a_run_of_rejections(self):
        # Bug hunt 4: constraint_tries counted rejections with cache hits
        # between them as "in a row".  Two heavy networks, then one light
        # network again and again: never three rejections in a row; the
        # hits stop the study (max_consecutive_hits), rejections between
        # them do not start the count of hits again.
        heavy = ["|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|nor_conv_3x3~0|nor_conv_3x3~1|nor_conv_3x3~2|",
                 "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|nor_conv_3x3~0|nor_conv_1x1~1|nor_conv_3x3~2|"]
        light = "|skip_connect~0|+|none~0|skip_connect~1|+|none~0|none~1|skip_connect~2|"
        cfg = self.fixed_study(heavy + [light, light], "pipeline: [{dedupe: {max_consecutive_hits: 6}}]\n"
                               "constraints: [{metric: params, max: 2.0e5}]\nconstraint_tries: 3\n"
                               "budget: {evaluations: 2}\n")
        store = self.path("s.sieve")
        out = sieve("run", cfg, "--store", store, check=0).stdout
        self.assertNotIn("broke a constraint", out)
        self.assertIn("stopping: the last 6 proposals that met the constraints were all duplicates", out)
        rows = export_rows(store)
        self.assertEqual([r["status"] for r in rows],
                         ["rejected", "rejected", "ok", "cached"] + ["rejected", "rejected", "cached", "cached"] * 2
                         + ["rejected", "rejected", "cached"], rows)
        # Rejections alone still stop it after constraint_tries.
        cfg = self.fixed_study(heavy, "pipeline: [dedupe]\nconstraints: [{metric: params, max: 2.0e5}]\n"
                               "constraint_tries: 3\nbudget: {evaluations: 2}\n")
        # (no trial met the constraint: no result, exit 1)
        out = sieve("run", cfg, "--store", self.path("h.sieve"), check=1).stdout
        self.assertIn("stopping: the last 3 proposals all broke a constraint", out)
        self.assertEqual(summary(self.path("h.sieve"))["trials"], "3")
        # Review 4: a resumed run counts the rejections in a row the stored
        # trials end with: two, then one more stops it.
        cfg = self.fixed_study(heavy, "pipeline: [dedupe]\nconstraints: [{metric: params, max: 2.0e5}]\n"
                               "constraint_tries: 3\nbudget: {evaluations: 2, proposals: 2}\n")
        store = self.path("r.sieve")
        sieve("run", cfg, "--store", store, check=1)
        self.assertEqual(summary(store)["trials"], "2")
        out = sieve("run", cfg, "--store", store, "--resume", "--set", "budget.proposals=10", check=1).stdout
        self.assertIn("stopping: the last 3 proposals all broke a constraint", out)
        self.assertEqual(summary(store)["trials"], "3")

    def test_runs_in_a_row_resume_past_a_pending_trial(self):
        # Review 5: a resumed run counted the rejections (cache hits) in a
        # row without the pending trials, then ran those through the stages
        # after every stored trial: a trial in flight when the run was
        # killed started the count again after the rejections (hits) that
        # followed it, and the resumed study asked for more than an
        # unbroken run.  Two workers; the first network sleeps while the
        # others are rejected (answered from the cache) until the study
        # gives up, and the run is killed then.
        light = "|skip_connect~0|+|none~0|skip_connect~1|+|none~0|none~1|skip_connect~2|"
        heavy = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|nor_conv_3x3~0|nor_conv_3x3~1|nor_conv_3x3~2|"
        other = "|nor_conv_1x1~0|+|none~0|skip_connect~1|+|none~0|none~1|skip_connect~2|"
        slow = self.write("slow.sh", f'case "$1" in "{light}") sleep 3;; esac\necho "{{\\"cifar10_valid_acc\\": 1}}"\n')
        evaluator = f"{{plugin: command, argv: [sh, {slow}, \"{{genotype}}\"]}}"
        for name, genotypes, rest, stop in (
                ("rejections", [light] + [heavy] * 7, "pipeline: [dedupe]\nconstraints: [{metric: params, max: 2.0e5}]\n"
                 "constraint_tries: 3\n", "proposals all broke a constraint"),
                ("hits", [light] + [other] * 7, "pipeline: [{dedupe: {max_consecutive_hits: 3}}]\n",
                 "proposals were all duplicates")):
            with self.subTest(name):
                cfg = self.fixed_study(genotypes, rest + "budget: {evaluations: 6}\nworkers: 2\n", evaluator=evaluator)
                ref = self.path(name + "-ref.sieve")
                sieve("run", cfg, "--store", ref, check=0)
                reference = export_rows(ref)
                store = self.path(name + ".sieve")
                proc = subprocess.Popen([SIEVE, "run", cfg, "--store", store], stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True)
                seen = []
                for line in proc.stdout:
                    seen.append(line)
                    if stop in line:
                        proc.send_signal(signal.SIGKILL)
                        break
                proc.communicate()
                self.assertEqual(proc.returncode, -signal.SIGKILL, "".join(seen))
                self.assertEqual(export_rows(store)[0]["status"], "pending", "the first trial was not in flight")
                sieve("run", cfg, "--store", store, "--resume", check=0)
                self.assertEqual(export_rows(store), reference)

    def test_a_duplicate_screened_with_its_twin_resumes_as_a_hit(self):
        # Review 5: a resumed run took a duplicate screened out with its twin
        # (it waited for the twin's screen: a hit) for one that passed
        # dedupe, and started the count of hits again.  Rounds of three, the
        # heavy network kept: [X, A, A] (one hit), then [X, X, X] (three
        # more: four in a row stop the study).  Resumed after the first
        # round, the study stops there too.
        heavy = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|nor_conv_3x3~0|nor_conv_3x3~1|nor_conv_3x3~2|"
        light = "|skip_connect~0|+|none~0|skip_connect~1|+|none~0|none~1|skip_connect~2|"
        cfg = self.fixed_study([heavy, light, light, heavy, heavy, heavy],
                               "pipeline: [{dedupe: {max_consecutive_hits: 4}}, {screen: {proxies: [params], "
                               "keep_top: 1, batch: 3}}]\nbudget: {evaluations: 10, proposals: 12}\n")
        ref = self.path("ref.sieve")
        out = sieve("run", cfg, "--store", ref, check=0).stdout
        self.assertIn("stopping: the last 4 proposals were all duplicates", out)
        reference = export_rows(ref)
        self.assertEqual([r["status"] for r in reference], ["ok", "screened", "screened"] + ["cached"] * 3, reference)
        self.assertEqual(reference[2]["cached_from"], "1")
        store = self.path("s.sieve")
        sieve("run", cfg, "--store", store, "--set", "budget.proposals=3", check=0)
        self.assertEqual(len(export_rows(store)), 3)
        out = sieve("run", cfg, "--store", store, "--resume", check=0).stdout
        self.assertIn("stopping: the last 4 proposals were all duplicates", out)
        self.assertEqual(export_rows(store), reference)

    def test_a_duplicate_that_took_a_failed_originals_place_resumes_as_a_hit(self):
        # Review 5b: a duplicate that waited for an original that then failed
        # (a cache hit where admit met it) takes the original's place and is
        # evaluated; a resumed run took it for one that passed dedupe and
        # started the count of hits again.  The same network every time,
        # two workers, trial 0 fails: trial 1 waits (one hit), then 2, 3, 4
        # (four in a row stop the study); trial 1 takes 0's place.  Stopped
        # after three proposals and resumed, the study stops there too.
        net = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|nor_conv_3x3~0|nor_conv_3x3~1|nor_conv_3x3~2|"
        prog = self.write("fail0.py", "import sys, json, time\nreq = json.load(sys.stdin)\n"
                          "if req['trial'] == 0:\n    time.sleep(0.5)\n    sys.exit(1)\n"
                          "time.sleep(1)\nprint(json.dumps({'cifar10_valid_acc': 0.5}))\n")
        cfg = self.fixed_study([net], "pipeline: [{dedupe: {max_consecutive_hits: 4}}]\n"
                               "budget: {evaluations: 10, proposals: 10}\nworkers: 2\n",
                               evaluator=f"{{plugin: command, argv: [python3, {prog}], stdin: json}}")
        ref = self.path("ref.sieve")
        out = sieve("run", cfg, "--store", ref, check=0).stdout
        self.assertIn("stopping: the last 4 proposals were all duplicates", out)
        reference = [(r["number"], r["status"], r["cached_from"]) for r in export_rows(ref)]
        self.assertEqual(reference, [("0", "failed", ""), ("1", "ok", "")] + [(str(n), "cached", "1") for n in (2, 3, 4)])
        store = self.path("s.sieve")
        sieve("run", cfg, "--store", store, "--set", "budget.proposals=3", check=0)
        self.assertEqual([r["status"] for r in export_rows(store)], ["failed", "ok", "cached"])
        out = sieve("run", cfg, "--store", store, "--resume", check=0).stdout
        self.assertIn("stopping: the last 4 proposals were all duplicates", out)
        self.assertEqual([(r["number"], r["status"], r["cached_from"]) for r in export_rows(store)], reference)

    def test_tell_order_trial_references_resume_in_tell_order(self):
        # Review 5b: under tell_order: trial the pruner judges a trial
        # against the first N trials told (fixed when it was asked); a
        # resumed run rebuilt them in trial order.  Two workers, the first
        # network proposed twice: trial 0 fails and trial 1, its duplicate,
        # takes its place, dispatched (and told) after trial 2; trial 3 is
        # asked then, judged against trial 2 (bad), not trial 1 (good).
        # Killed with SIGKILL once trial 1 is stored (3 and 4 still run) and
        # resumed, every trial ends as in a run that was not killed.
        good = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|nor_conv_3x3~0|nor_conv_3x3~1|nor_conv_3x3~2|"
        nets = [good, good, "|skip_connect~0|+|none~0|skip_connect~1|+|none~0|none~1|skip_connect~2|",
                "|nor_conv_1x1~0|+|none~0|skip_connect~1|+|none~0|none~1|skip_connect~2|",
                "|avg_pool_3x3~0|+|nor_conv_1x1~0|skip_connect~1|+|nor_conv_1x1~0|skip_connect~1|skip_connect~2|"]
        prog = self.write("order.py", "import sys, json, time\nreq = json.load(sys.stdin)\nt = req['trial']\n"
                          "if t == 0: sys.exit(1)\n"
                          "v = {'|nor_conv_3x3~0|': 0.9, '|skip_connect~0|': 0.1}.get(req['genotype'].split('+')[0], 0.5)\n"
                          "if t == 1: time.sleep(1)\n"
                          "if t in (3, 4): time.sleep(4)\n"
                          "for s in range(1, 4):\n"
                          "    print(json.dumps({'intermediate': {'step': s, 'value': v}}), flush=True)\n"
                          "print(json.dumps({'cifar10_valid_acc': v}), flush=True)\n")
        cfg = self.fixed_study(nets, "pipeline: [dedupe]\npruner: {kind: median, startup_trials: 1}\n"
                               "budget: {evaluations: 5}\nworkers: 2\ntell_order: trial\n",
                               evaluator=f"{{plugin: command, argv: [python3, {prog}], stdin: json}}")
        ref = self.path("ref.sieve")
        sieve("run", cfg, "--store", ref, "--quiet", check=0)
        reference = [(r["number"], r["status"]) for r in export_rows(ref)]
        self.assertEqual(reference, [("0", "failed"), ("1", "ok"), ("2", "ok"), ("3", "ok"), ("4", "ok")])
        store = self.path("k.sieve")
        proc = subprocess.Popen([SIEVE, "run", cfg, "--store", store, "--quiet"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        status = {}
        while time.time() < deadline and status.get("1") != "ok":
            time.sleep(0.1)
            if os.path.exists(store):
                try:
                    status = {r["number"]: r["status"] for r in export_rows(store)}
                except AssertionError:  # the store not yet readable
                    continue
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        self.assertEqual(status.get("1"), "ok", "the run was not killed after trial 1 was stored")
        self.assertEqual(status.get("3"), "pending", "the kill did not come while trial 3 ran")
        sieve("run", cfg, "--store", store, "--resume", "--quiet", check=0)
        self.assertEqual([(r["number"], r["status"]) for r in export_rows(store)], reference)

    def test_promotions_are_not_screened_again(self):
        # Bug hunt 4: the screen ranked a Hyperband promotion (a configuration
        # past the screen and evaluated at a lower fidelity) against new
        # configurations and dropped it, so most promotions never ran.  A
        # promotion goes to the evaluator; the screen ranks the new
        # configurations among themselves and keeps its keep_top of them.
        # (16 evaluations: a first rung of 9 takes 9 trained configurations,
        # a screened one's place going to a new one, before it promotes.)
        prog = self.write("f.sh", 'echo "{\\"value\\": $1}"\n')
        for optimizer in ("{plugin: hyperband, eta: 3}", "{plugin: successive_halving, eta: 3, n_configs: 9}",
                          "{plugin: asha, eta: 3}", "{plugin: bohb, eta: 3}"):
            with self.subTest(optimizer=optimizer):
                cfg = self.write("hb.yaml", "name: hb\nseed: 0\nspace: {plugin: nb201, C: 4, N: 1}\n"
                                 f"optimizer: {optimizer}\n"
                                 f"evaluator: {{plugin: command, argv: [sh, {prog}, \"{{fidelity}}\"], "
                                 "fidelity: {name: budget, min: 1, max: 9, integer: true}}\n"
                                 "objective: {metric: value, direction: maximize}\n"
                                 "pipeline: [dedupe, {screen: {proxies: [synflow], keep_top: 2, batch: 4, "
                                 "batch_size: 2}}]\nbudget: {evaluations: 16}\n")
                store = self.path(f"hb{optimizer.split(',')[0][9:]}.sieve")
                sieve("run", cfg, "--store", store, check=0)
                rows = export_rows(store)
                seen, promoted = {}, 0
                for r in rows:
                    g = r["genotype"]
                    if g in seen:
                        promoted += 1
                        self.assertNotEqual(r["status"], "screened", f"promotion of trial {seen[g]['number']}: {r}")
                        self.assertGreater(float(r["fidelity"]), float(seen[g]["fidelity"]))
                    seen.setdefault(g, r)
                self.assertGreater(promoted, 0, "no promotion: the test checks nothing")
                # The new configurations: at most keep_top of each round of
                # four (fewer when the budget left is less) go on, ranked
                # among themselves.
                new = [r for r in rows if seen[r["genotype"]] is r]
                self.assertTrue([r for r in new if r["status"] == "screened"], "the screen dropped nothing")
                for r in new:
                    if r["status"] == "screened":
                        m = re.search(r"rank (\d) of (\d) by synflow; kept: the best (\d)$", r["reason"])
                        self.assertTrue(m, r)
                        rank, of, kept = map(int, m.groups())
                        self.assertTrue(kept < rank <= of <= 4 and kept <= 2, r)
                self.assertEqual(summary(store)["evaluated"], "16")
                # Review 5: within the budget the promotions leave: none kept
                # past the screen stays pending (keep counted the budget as
                # if the round's promotions took none of it).
                self.assertEqual([r["number"] for r in rows if r["status"] == "pending" and r["screen_score"]], [])

    def test_asha_promotes_from_what_the_screen_let_through(self):
        # A configuration the screen dropped was never trained: it is no
        # result of ASHA's first rung.  Counted there (as the worst), three
        # screened out of every four would have ASHA promote the top third of
        # all four, every one trained, instead of the top third of the trained.
        # The value is a function of the genotype only, the same at every
        # fidelity; one worker, so each promotion (asked before the new
        # configurations of its round) saw every earlier trial's result.
        prog = self.write("f.sh", 'echo "{\\"value\\": $(printf %s "$1" | cksum | cut -c1-6)}"\n')
        cfg = self.write("asha.yaml", "name: asha\nseed: 3\nspace: {plugin: nb201, C: 4, N: 1}\n"
                         "optimizer: {plugin: asha, eta: 3}\n"
                         f"evaluator: {{plugin: command, argv: [sh, {prog}, \"{{genotype}}\"], "
                         "fidelity: {name: budget, min: 1, max: 9, integer: true}}\n"
                         "objective: {metric: value, direction: maximize}\n"
                         "pipeline: [{screen: {proxies: [synflow], keep_top: 1, batch: 4, batch_size: 2}}]\n"
                         "budget: {evaluations: 30}\n")
        store = self.path("asha.sieve")
        sieve("run", cfg, "--store", store, check=0)
        rows = sorted(export_rows(store), key=lambda r: int(r["number"]))
        trained = {1.0: [], 3.0: [], 9.0: []}  # values of the finished trainings at each fidelity, so far
        promotions = 0
        for r in rows:
            f = float(r["fidelity"])
            if f > 1:
                below = trained[f / 3]
                better = sum(v > float(r["value"]) for v in below)
                self.assertLess(better, len(below) // 3,
                                f"trial {r['number']} promoted to {f:g} ranks {better + 1} of {len(below)} trained")
                promotions += 1
            if r["status"] == "ok":
                trained[f].append(float(r["value"]))
        self.assertEqual(summary(store)["evaluated"], "30")
        self.assertGreater(int(summary(store)["screened"]), 30)
        self.assertGreater(promotions, 2, "too few promotions: the test checks little")
        self.assertTrue(trained[9.0], "nothing reached the top rung")

    def test_duplicates_in_flight_wait_for_their_original(self):
        # Three cells, four workers: the first four proposals hold a duplicate
        # of one still being evaluated.
        self.grid("space.yaml", 3)
        cfg = self.command_config(n=10, workers=4, delay=0.4, hits=12)
        store = self.path("s.sieve")
        out = sieve("run", cfg, "--store", store, check=0).stdout
        self.assertIn("stopping: the last 12 proposals were all duplicates", out)
        log = self.logged()
        self.assertEqual(sorted(log), sorted(set(log)))
        self.assertEqual(len(log), 3)
        rows = export_rows(store, stable=False)
        cached = self.check_answers(rows)
        early = [r for r in cached if int(r["number"]) < 4]
        self.assertTrue(early, "no duplicate among the first four proposals")
        for r in early:
            self.assertLess(int(r["cached_from"]), 4)
        # The last 12 proposals are the hits that stopped the study.
        self.assertTrue(all(r["status"] == "cached" for r in rows[-12:]))
        self.assertEqual(summary(store)["pending"], "0")

    def test_failures_are_not_cached(self):
        # x1=1 always fails: its duplicates, waiting or later, are evaluated
        # again (a failure may be transient); the others are answered.
        self.grid("space.yaml", 3)
        cfg = self.command_config(n=9, workers=3, delay=0.3, hits=10, fail_on="x1=1")
        store = self.path("s.sieve")
        sieve("run", cfg, "--store", store, check=0)
        rows = export_rows(store, stable=False)
        failed = [r for r in rows if r["status"] == "failed"]
        self.assertGreaterEqual(len(failed), 2)
        self.assertTrue(all(r["genotype"] == "x1=1" and r["reason"] == "told to fail" for r in failed))
        self.assertEqual(self.logged().count("x1=1"), len(failed))
        for g in ("x1=0", "x1=2"):
            self.assertEqual(self.logged().count(g), 1)
        by_number = {r["number"]: r for r in rows}
        for r in rows:
            if r["status"] == "cached":
                self.assertEqual(by_number[r["cached_from"]]["status"], "ok")
        self.assertEqual(sum(r["status"] in ("ok", "failed") for r in rows), 9)

    def test_budgets(self):
        self.grid("space.yaml", 4, 4)
        cfg = self.command_config(n=8)
        store = self.path("e.sieve")
        sieve("run", cfg, "--store", store, check=0)
        s = summary(store)
        self.assertEqual(s["evaluated"], "8")
        self.assertEqual(int(s["trials"]), 8 + int(s["cached"]))
        self.assertGreater(int(s["cached"]), 0)
        store = self.path("p.sieve")
        sieve("run", cfg, "--store", store, "--set", "budget={proposals: 5, evaluations: 0}", check=0)
        self.assertEqual(summary(store)["trials"], "5")

    def test_told_to_the_optimizer(self):
        self.grid("space.yaml", 2, 3)
        tells = self.path("tells.log")
        cfg = self.write("lua.yaml", f"""name: told
seed: 3
lua: {{allow: [io], load: [{os.path.join(FIXTURES, 'recorder.lua')}]}}
space: {{plugin: hpo, file: space.yaml}}
optimizer: {{plugin: recorder, log: {tells}}}
evaluator: {{plugin: function, function: branin}}
objective: {{metric: value, direction: minimize}}
pipeline: [{{dedupe: {{max_consecutive_hits: 15}}}}]
budget: {{evaluations: 20}}
""")
        store = self.path("s.sieve")
        sieve("run", cfg, "--store", store, check=0)
        rows = export_rows(store)
        cached = self.check_answers(rows)
        self.assertTrue(cached)
        with open(tells) as f:
            told = {int(n): (status, objective, text) for n, status, objective, text in
                    (line.split(" ", 3) for line in f.read().splitlines())}
        # Every trial told once, with its status; a hit with the objective
        # its original was told with.
        self.assertEqual(sorted(told), [int(r["number"]) for r in rows])
        for r in rows:
            status, objective, text = told[int(r["number"])]
            self.assertEqual(status, r["status"])
            self.assertEqual(text, r["genotype"])
            if r["status"] == "cached":
                self.assertEqual(objective, told[int(r["cached_from"])][1])
                self.assertNotEqual(objective, "nil")

    def test_stages_described(self):
        out = sieve("plugins", check=0).stdout
        self.assertIn("pipeline stages (the experiment's pipeline: list, before the evaluator):", out)
        self.assertRegex(out, r"\n  dedupe +answer proposals")
        out = sieve("plugins", "--describe", "dedupe", check=0).stdout
        self.assertTrue(out.startswith("pipeline stage dedupe: "))
        self.assertIn("max_consecutive_hits (integer, default 1000", out)
        out = sieve("plugins", "--describe", "screen", check=0).stdout
        self.assertIn("  proxies (string list, required)", out)
        self.assertIn("- screen: {proxies: [naswot, synflow], keep_top: 2", out)
        p = sieve("plugins", "--describe", "dedup", check=1)
        self.assertIn("no component named 'dedup' (did you mean 'dedupe'?)", p.stderr)

    def test_bad_pipeline_is_refused_before_any_store(self):
        self.grid("space.yaml", 3)
        cfg = self.command_config(n=3)
        with open(cfg) as f:
            text = f.read()
        bad = self.write("bad.yaml", text.replace("pipeline: [{dedupe:", "pipeline: [{dedup:"))
        store = self.path("bad.sieve")
        p = sieve("run", bad, "--store", store, check=2)
        self.assertIn(f"{bad}:10:13: unknown pipeline stage 'dedup' (did you mean 'dedupe'?); "
                      "known stages: dedupe, latency, screen", p.stderr)
        p = sieve("run", cfg, "--store", store, "--set", "pipeline.0.dedupe.hash=structural", check=2)
        self.assertIn("stage 'dedupe': space 'hpo' builds no networks, so it has no structural hash; "
                      "use hash: genotype", p.stderr)
        self.assertFalse(os.path.exists(store))
        # A study cannot change its pipeline on resume (its results would mean something else).
        sieve("run", cfg, "--store", store, check=0)
        p = sieve("run", cfg, "--store", store, "--resume", "--set", "pipeline=[]", check=1)
        self.assertIn("the experiment differs from the study stored there", p.stderr)


SLOW = """name: slow
seed: 7
space: {plugin: hpo, file: space.yaml}
optimizer: {plugin: random}
evaluator: {plugin: function, function: branin, delay: 0.02}
objective: {metric: value, direction: minimize}
pipeline: [dedupe]
budget: {evaluations: 24}
"""


class TestKillResume(Workdir):
    def run_until(self, cfg, store, resume, kill_at=None, kill_after_s=None):
        """Run sieve; SIGKILL it when kill_at evaluations have been reported
        (or after kill_after_s seconds)."""
        args = ["run", cfg, "--store", store] + (["--resume"] if resume else [])
        if kill_after_s is not None:
            proc = subprocess.Popen([SIEVE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                proc.wait(timeout=kill_after_s)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
            proc.communicate()
            return
        sieve_cli.run_until(self, args, kill_at)

    def test_promotions_resume_in_trial_order(self):
        # Review 4: promotions (past the screen unscreened) were not stored
        # as past it, so a resumed run queued the kept new configurations
        # before them and evaluated other trials than an unbroken run.
        prog = self.write("f.sh", 'case "$1" in 1) sleep 0.05;; *) sleep 0.3;; esac\n'
                          'echo "{\\"value\\": $(printf %s "$2" | cksum | cut -c1-4)$1}"\n')
        cfg = self.write("hb.yaml", "name: hb\nseed: 0\nspace: {plugin: nb201, C: 4, N: 1}\n"
                         "optimizer: {plugin: hyperband, eta: 3}\n"
                         f"evaluator: {{plugin: command, argv: [sh, {prog}, \"{{fidelity}}\", \"{{genotype}}\"], "
                         "fidelity: {name: budget, min: 1, max: 9, integer: true}}\n"
                         "objective: {metric: value, direction: maximize}\n"
                         "pipeline: [dedupe, {screen: {proxies: [synflow], keep_top: 2, batch: 4, batch_size: 2}}]\n"
                         "workers: 2\ntell_order: trial\nbudget: {evaluations: 16}\n")
        ref = self.path("ref.sieve")
        self.run_until(cfg, ref, resume=False)
        reference = export_rows(ref)
        self.assertGreater(sum(float(r["fidelity"]) > 1 for r in reference if r["status"] == "ok"), 0,
                           "no promotion: the test checks nothing")
        for k in (5, 8, 11):
            with self.subTest(kill_at=k):
                store = self.path(f"k{k}.sieve")
                self.run_until(cfg, store, resume=False, kill_at=k)
                self.run_until(cfg, store, resume=True)
                self.assertEqual(export_rows(store), reference)

    def test_kill_at_many_points(self):
        self.grid("space.yaml", 5, 5)
        cfg = self.write("slow.yaml", SLOW)
        ref = self.path("ref.sieve")
        self.run_until(cfg, ref, resume=False)
        reference = export_rows(ref)
        self.assertEqual(sum(r["status"] == "ok" for r in reference), 24)
        self.assertGreater(sum(r["status"] == "cached" for r in reference), 5)
        self.check_answers(reference)

        store = self.path("chain.sieve")
        resume = False
        for k in (1, 2, 9, 15, 22):
            self.run_until(cfg, store, resume, kill_at=k)
            resume = True
            rows = export_rows(store)
            done = [r for r in rows if r["status"] != "pending"]
            self.assertGreaterEqual(sum(r["status"] == "ok" for r in done), k, "a finished trial was lost")
            self.assertEqual(done, reference[:len(done)])
        self.run_until(cfg, store, resume=True)
        self.assertEqual(export_rows(store), reference)

        rng = random.Random(int(os.environ.get("SIEVE_TEST_SEED", "20261123")))
        for i in range(3):
            store = self.path(f"random{i}.sieve")
            resume = False
            for _ in range(3):
                self.run_until(cfg, store, resume, kill_after_s=rng.uniform(0.0, 0.5))
                resume = True
            self.run_until(cfg, store, resume=True)
            self.assertEqual(export_rows(store), reference, f"random kill run {i}")

    def test_nb201_functional_kills(self):
        # configs/nb201-dedupe.yaml: regularized evolution on the table with
        # the functional hash, killed at random moments and resumed.
        cfg = os.path.join(ROOT, "configs", "nb201-dedupe.yaml")
        budget = ["--set", "budget.evaluations=150"]
        ref = self.path("ref.sieve")
        sieve("run", cfg, "--store", ref, "-q", *budget, check=0)
        reference = export_rows(ref)
        s = summary(ref)
        self.assertEqual((s["evaluated"], s["distinct_evaluated"], s["hash_kind"]), ("150", "150", "functional"))
        self.assertGreater(int(s["cached"]), 10)
        rng = random.Random(int(os.environ.get("SIEVE_TEST_SEED", "20261123")) + 1)
        for i in range(3):
            store = self.path(f"nb{i}.sieve")
            for k in range(3):
                args = [SIEVE, "run", cfg, "--store", store, "-q", *budget] + (["--resume"] if k else [])
                proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                try:
                    proc.wait(timeout=rng.uniform(0.02, 0.3))
                except subprocess.TimeoutExpired:
                    proc.send_signal(signal.SIGKILL)
                    proc.wait()
            sieve("run", cfg, "--store", store, "--resume", "-q", *budget, check=0)
            self.assertEqual(export_rows(store), reference, f"kill run {i}")



def table_path():
    shared = os.path.join(ROOT, "..", "shared", "data", "nb201", "nb201.csv")
    return os.path.abspath(shared if os.path.exists(shared) else os.path.join(ROOT, "data", "nb201", "nb201.csv"))


# The screen on a small NB201 scale (fast proxies; the table does not care).
SCREEN = """name: screen
seed: 2
space: {plugin: nb201, C: 4, N: 1, size: 8}
%(optimizer)s
evaluator: {plugin: tabular, table: %(table)s, metrics: [cifar10_valid_acc]}
objective: {metric: cifar10_valid_acc}
pipeline:
  - dedupe
  - screen: {proxies: [naswot, params], keep_top: 2, batch: 5, batch_size: 8}
budget: {evaluations: %(n)d}
"""


class TestScreen(Workdir):
    def test_screened_are_stored_and_told(self):
        tells = self.path("tells.log")
        optimizer = (f"lua: {{allow: [io], load: [{os.path.join(FIXTURES, 'recorder.lua')}]}}\n"
                     f"optimizer: {{plugin: recorder, log: {tells}}}")
        cfg = self.write("s.yaml", SCREEN % dict(optimizer=optimizer, table=table_path(), n=4))
        store = self.path("s.sieve")
        out = sieve("run", cfg, "--store", store, check=0).stdout
        self.assertIn("pipeline: dedupe (functional hash) -> screen (naswot+params, best 2 of 5) -> tabular", out)
        self.assertRegex(out, r"trial \d+ screened \(score [0-9.]+\)")
        rows = export_rows(store)
        s = summary(store)
        self.assertEqual(s["evaluated"], "4")
        self.assertGreaterEqual(int(s["screened"]), 5)
        with open(tells) as f:
            told = {int(n): (status, objective) for n, status, objective, _ in
                    (line.split(" ", 3) for line in f.read().splitlines())}
        self.assertEqual(sorted(told), [int(r["number"]) for r in rows])
        for r in rows:
            self.assertEqual(told[int(r["number"])][0], r["status"])
            if r["status"] == "screened":
                # Their scores are their metrics; no objective.
                self.assertNotEqual(r["naswot"], "")
                self.assertEqual(r["cifar10_valid_acc"], "")
                self.assertIn(told[int(r["number"])][1], ("nan", "-nan", "nil"))
            if r["status"] == "ok":
                self.assertNotEqual(r["screen_score"], "")
                self.assertEqual(float(told[int(r["number"])][1]), float(r["cifar10_valid_acc"]))

    def test_screen_on_real_examples(self):
        # dataset: the proxies' batch is real examples, drawn as `sieve proxies --dataset` draws them.
        if not os.path.isdir("/usr/share/datasets/fashion-mnist") and not os.environ.get("SIEVE_DATA_DIR"):
            self.skipTest("Fashion-MNIST is not installed (Debian's dataset-fashion-mnist)")
        cfg = self.write("fm.yaml", f"""name: fm
seed: 3
space: {{plugin: nb201, C: 4, N: 1, in_channels: 1, size: 28}}
optimizer: {{plugin: random}}
evaluator: {{plugin: tabular, table: {table_path()}, metrics: [cifar10_valid_acc]}}
objective: {{metric: cifar10_valid_acc}}
pipeline:
  - screen: {{proxies: [naswot, snip], keep_top: 1, batch: 3, batch_size: 16, dataset: fashion-mnist}}
budget: {{evaluations: 1}}
""")
        store = self.path("fm.sieve")
        sieve("run", cfg, "--store", store, "-q", check=0)
        rows = export_rows(store)
        self.assertEqual([r["status"] for r in rows].count("screened"), 2)
        for r in rows:
            if r["status"] == "screened":
                self.assertRegex(r["reason"], r"^rank [23] of 3 by naswot\+snip; kept: the best 1$")
        out = sieve("proxies", "--dataset", "fashion-mnist", "--seed", "3", "--batch", "16", "--set", "space.C=4",
                    "--set", "space.N=1", "--proxies", "naswot,snip", *(r["genotype"] for r in rows), check=0).stdout
        for r, line in zip(rows, out.splitlines()):
            scores = json.loads(line)
            self.assertEqual(float(r["naswot"]), scores["naswot"])
            self.assertEqual(float(r["snip"]), scores["snip"])
        # The default input shape does not fit: said before anything runs.
        p = sieve("run", cfg, "--store", self.path("bad.sieve"), "--set", "space.size=32", check=2)
        self.assertIn(f"{cfg}:8:87: stage 'screen': dataset fashion-mnist has 1x28x28 examples in 10 classes, but "
                      "space nb201 builds networks for 1x32x32 inputs with 10 outputs", p.stderr)
        self.assertFalse(os.path.exists(self.path("bad.sieve")))

    def test_round_that_cannot_be_scored_is_said(self):
        """A round none of whose candidates the proxies could score keeps the first proposed, not
        the best: said in the progress, with the reason (it once passed without a word)."""
        script = self.write("bad.lua", """sieve.register_space{
  name = "unbuildable", summary = "networks that never build",
  create = function(self, b) b:categorical("op", {"a", "b", "c", "d"}) end,
  format = function(self, g) return g:values().op end,
  parse = function(self, text) return {op = text} end,
  build = function(self, g) error("no network for " .. g:values().op, 0) end,
}
""")
        cfg = self.write("u.yaml", f"""name: u
seed: 1
space: {{plugin: lua, script: {script}}}
optimizer: {{plugin: random}}
evaluator: {{plugin: proxy, proxies: [params]}}
objective: {{metric: score, direction: maximize}}
pipeline:
  - screen: {{proxies: [params], keep_top: 1, batch: 3}}
budget: {{evaluations: 1}}
""")
        # (the kept one cannot be built either: its trial fails, and so does the run)
        p = sieve("run", cfg, "--store", self.path("u.sieve"), check=1)
        self.assertIn("no trial of study 'u' has a value of 'score' (3 trials: 1 failed, 2 screened out; the first "
                      "failed, trial 0: space 'unbuildable', build(): no network for", p.stderr)
        self.assertRegex(p.stdout, r"stage 'screen': no candidate of this round of 3 could be scored \(space "
                         r"'unbuildable', build\(\): no network for [abcd]\); the 1 kept are the first proposed, "
                         r"not the best\n")

    def test_kill_resume_with_screen(self):
        optimizer = "optimizer: {plugin: evolution, population: 5, sample_size: 2}"
        cfg = self.write("s.yaml", SCREEN % dict(optimizer=optimizer, table=table_path(), n=6))
        ref = self.path("ref.sieve")
        sieve("run", cfg, "--store", ref, "-q", check=0)
        reference = export_rows(ref)
        self.assertEqual(sum(r["status"] == "ok" for r in reference), 6)
        rng = random.Random(int(os.environ.get("SIEVE_TEST_SEED", "20261123")) + 2)
        for i in range(2):
            store = self.path(f"k{i}.sieve")
            for k in range(3):
                args = [SIEVE, "run", cfg, "--store", store, "-q"] + (["--resume"] if k else [])
                proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                try:
                    proc.wait(timeout=rng.uniform(0.1, 1.5))
                except subprocess.TimeoutExpired:
                    proc.send_signal(signal.SIGKILL)
                    proc.wait()
            sieve("run", cfg, "--store", store, "--resume", "-q", check=0)
            self.assertEqual(export_rows(store), reference, f"kill run {i}")


if __name__ == "__main__":
    unittest.main(verbosity=2)
