#!/usr/bin/env python3
"""Intermediate values, pruning and ASHA through `sieve run`: the command
evaluator's progress protocol (examples/progress/curve.py, a real Python
process per trial), a malformed progress line, a pruner on an evaluator
that reports nothing, and a pruned study killed with SIGKILL and resumed."""
import csv
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

SIEVE = os.environ["SIEVE_EXE"]
ROOT = os.environ["SIEVE_SOURCE_ROOT"]
EXAMPLE = os.path.join(ROOT, "examples", "progress")


def sieve(*args, check=None, timeout=120):
    p = subprocess.run([SIEVE, *args], capture_output=True, text=True, timeout=timeout)
    if check is not None and p.returncode != check:
        raise AssertionError(f"sieve {' '.join(args)} exited {p.returncode}, wanted {check}\n"
                             f"stdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}")
    return p


def rows(store, *extra):
    out = sieve("export", store, "--format", "csv", *extra, check=0).stdout
    return list(csv.DictReader(io.StringIO(out)))


CONFIG = """\
space: {{plugin: hpo, file: {example}/space.yaml}}
optimizer: {{plugin: {optimizer}}}
evaluator:
  plugin: command
  argv: [{python}, {example}/curve.py, --epochs, "9", --sleep, "{sleep}"]
  stdin: json
{extra}
pruner: {{kind: median, startup_trials: 3, warmup_steps: 2}}
objective: {{metric: val_acc, direction: maximize}}
budget: {{evaluations: {budget}}}
seed: 1
"""


class TrainingAware(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="sieve-ta-")
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def config(self, name, optimizer="random", sleep=0, budget=12, extra=""):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(CONFIG.format(example=EXAMPLE, optimizer=optimizer, python=sys.executable, sleep=sleep,
                                  budget=budget, extra=extra))
        return path

    def program_study(self, name, program, rest, args=""):
        """A study of the command evaluator running this Python program (its text) with args; rest: the
        config's other lines. Returns the config's path and its store's."""
        script = os.path.join(self.dir, name + ".py")
        with open(script, "w") as f:
            f.write(program)
        cfg = os.path.join(self.dir, name + ".yaml")
        with open(cfg, "w") as f:
            f.write(f"space: {{plugin: hpo, file: {EXAMPLE}/space.yaml}}\noptimizer: random\n"
                    f"evaluator: {{plugin: command, argv: [{sys.executable}, {script}{args}], stdin: json}}\n"
                    "objective: {metric: val_acc}\n" + rest)
        return cfg, os.path.join(self.dir, name + ".sieve")

    def test_example_prunes_with_curves(self):
        """The README's example: trials below the median at step 2 stop there, with their curve kept."""
        store = os.path.join(self.dir, "prune.sieve")
        sieve("run", os.path.join(EXAMPLE, "prune.yaml"), "--store", store, "--quiet", check=0)
        trials = rows(store)
        curves = rows(store, "--intermediate")
        pruned = [t for t in trials if t["status"] == "pruned"]
        ok = [t for t in trials if t["status"] == "ok"]
        self.assertEqual(len(trials), 20)
        self.assertTrue(pruned and ok)
        by_trial = {}
        for c in curves:
            by_trial.setdefault(c["trial"], []).append(c)
        for t in ok:
            self.assertEqual([int(c["step"]) for c in by_trial[t["number"]]], list(range(1, 10)))
            self.assertAlmostEqual(float(by_trial[t["number"]][-1]["value"]), float(t["val_acc"]), places=12)
        for t in pruned:
            steps = by_trial[t["number"]]
            last = steps[-1]
            # Stored with its last value and step, at the fidelity it reached.
            self.assertEqual(float(t["val_acc"]), float(last["value"]))
            self.assertEqual(float(t["step"]), float(last["step"]))
            self.assertEqual(float(t["fidelity"]), float(last["fidelity"]))
            # the value as the progress line shows values: six significant digits, a '.' (the exact value is
            # the metric)
            self.assertEqual(t["reason"], "pruned at step %d (val_acc %s)" % (int(last["step"]),
                                                                              "%.6g" % float(last["value"])))
            # Optuna's median rule: the best so far below the completed trials' median at that step.
            step = int(last["step"])
            self.assertGreaterEqual(step, 2)
            finished_before = [o for o in ok if int(o["number"]) < int(t["number"])]
            at = sorted(float(by_trial[o["number"]][step - 1]["value"]) for o in finished_before)
            n = len(at)
            median = (at[(n - 1) // 2] + at[n // 2]) / 2
            self.assertLess(max(float(c["value"]) for c in steps), median)
        summary = next(csv.DictReader(io.StringIO(sieve("export", store, "--summary", check=0).stdout)))
        self.assertEqual(int(summary["pruned"]), len(pruned))
        self.assertEqual(int(summary["evaluated"]), 20)

    def test_malformed_progress_line(self):
        """A progress line that is not of the protocol's form fails its trial with the line quoted."""
        cfg, store = self.program_study(
            "bad", 'import sys, json\njson.load(sys.stdin)\n'
            'print(json.dumps({"intermediate": {"step": 1, "value": 0.5}}), flush=True)\n'
            'print(\'{"intermediate": {"step": "two", "value": 0.6}}\', flush=True)\n'
            'print(json.dumps({"val_acc": 0.7}))\n', "budget: {evaluations: 2}\n")
        p = sieve("run", cfg, "--store", store, "--quiet", check=1)  # (every trial failed: exit 1)
        self.assertIn("2 trials: 2 failed", p.stderr)
        trials = rows(store)
        self.assertEqual([t["status"] for t in trials], ["failed", "failed"])
        self.assertIn('"step" must be an integer', trials[0]["reason"])
        self.assertIn('{"intermediate": {"step": "two"', trials[0]["reason"])
        # What came before the bad line is kept.
        self.assertEqual(len(rows(store, "--intermediate")), 2)

    def test_non_finite_values_export(self):
        """A diverged training's values (NaN, +-Infinity, as Python prints them) are stored and exported as
        the trials' non-finite metrics are: nan, inf, -inf in CSV, and the same strings in JSON (not null,
        which reads as a missing value)."""
        cfg, store = self.program_study(
            "nonfinite", "import sys, json\njson.load(sys.stdin)\n"
            "for s, v in enumerate([0.5, float('nan'), float('inf'), float('-inf')]):\n"
            "    print(json.dumps({'intermediate': {'step': s, 'value': v}}), flush=True)\n"
            "print(json.dumps({'val_acc': 0.5}), flush=True)\n",
            "budget: {evaluations: 1}\n")
        sieve("run", cfg, "--store", store, "--quiet", check=0)
        self.assertEqual([c["value"] for c in rows(store, "--intermediate")], ["0.5", "nan", "inf", "-inf"])
        out = sieve("export", store, "--intermediate", "--format", "json", check=0).stdout
        self.assertEqual([c["value"] for c in json.loads(out)], [0.5, "nan", "inf", "-inf"])

    def test_a_step_reported_again_keeps_its_first_value(self):
        """As Optuna's trial.report ignores a repeated step: trial 0 completes at 0.5; trial 1 reports step 1 as
        0.9, then again as 0.1. Kept first, it beats the median (0.5) and completes; replaced (as before), the
        0.1 was judged and pruned it."""
        cfg, store = self.program_study(
            "again", "import sys, json\ntrial = json.load(sys.stdin)['trial']\n"
            "for v in ([0.5] if trial == 0 else [0.9, 0.1]):\n"
            "    print(json.dumps({'intermediate': {'step': 1, 'value': v}}), flush=True)\n"
            "print(json.dumps({'val_acc': 0.5}), flush=True)\n",
            "pruner: {kind: median, startup_trials: 1}\nbudget: {evaluations: 2}\n")
        p = sieve("run", cfg, "--store", store, "--quiet", check=0)
        self.assertEqual([r["status"] for r in rows(store)], ["ok", "ok"])
        self.assertEqual([(c["trial"], c["step"], c["value"]) for c in rows(store, "--intermediate")],
                         [("0", "1", "0.5"), ("1", "1", "0.9")])
        self.assertIn("warning: trial 1 reported step 1 again: the first value is kept", p.stdout)

    def test_a_pruner_that_gets_no_value_is_warned_about(self):
        """A program that writes its progress lines to stderr (where Python's logging writes) reports nothing:
        the pruner cannot judge, and sieve says so once instead of leaving it silently off."""
        cfg, store = self.program_study(
            "stderr", "import sys, json\njson.load(sys.stdin)\n"
            "print(json.dumps({'intermediate': {'step': 1, 'value': 0.5}}), file=sys.stderr, flush=True)\n"
            "print(json.dumps({'val_acc': 0.5}), flush=True)\n",
            "pruner: {kind: median, startup_trials: 1}\nbudget: {evaluations: 3}\n")
        p = sieve("run", cfg, "--store", store, "--quiet", check=0)
        self.assertEqual(p.stdout.count("finished without reporting an intermediate value"), 1, p.stdout)
        self.assertIn("warning: trial 0 finished without reporting an intermediate value, so the pruner could not "
                      "judge it", p.stdout)

    def test_pruner_needs_intermediate_values(self):
        cfg = os.path.join(self.dir, "fn.yaml")
        with open(cfg, "w") as f:
            f.write("space: {plugin: hpo, file: %s/search_spaces/branin.yaml}\noptimizer: random\n"
                    "evaluator: {plugin: function, function: branin}\nobjective: {metric: value, direction: minimize}\n"
                    "pruner: {kind: median}\nbudget: {evaluations: 3}\n" % ROOT)
        p = sieve("run", cfg, "--store", os.path.join(self.dir, "fn.sieve"), check=2)
        self.assertIn(f"{cfg}:5:", p.stderr)
        self.assertIn("a pruner needs intermediate values, and evaluator 'function' reports none", p.stderr)

    @unittest.skipUnless(any(os.path.exists(os.path.join("/usr/share/datasets/fashion-mnist", f))
                             for f in ("train-images-idx3-ubyte.gz", "train-images-idx3-ubyte")),
                         "no Fashion-MNIST under /usr/share/datasets (dataset-fashion-mnist)")
    def test_pruner_judges_the_metric_the_evaluator_reports(self):
        """The train evaluator reports val_acc: a pruner on another objective (it would judge val_acc and
        store it as test_acc or train_loss), or with no validation split (it reports nothing), is refused
        at the pruner's line before any training."""
        for name, objective, validation, wanted in [
                ("test", "{metric: test_acc, direction: maximize}", 128,
                 "a pruner judges the objective 'test_acc', and evaluator 'train' reports intermediate values of "
                 "'val_acc'"),
                ("loss", "{metric: train_loss, direction: minimize}", 128,
                 "a pruner judges the objective 'train_loss', and evaluator 'train' reports intermediate values of "
                 "'val_acc'"),
                ("none", "{metric: test_acc, direction: maximize}", 0,
                 "a pruner needs intermediate values, and evaluator 'train' reports none with these options")]:
            with self.subTest(objective=objective, validation=validation):
                cfg = os.path.join(self.dir, name + ".yaml")
                with open(cfg, "w") as f:
                    f.write("space: {plugin: nb201, C: 4, N: 1, in_channels: 1, size: 28}\noptimizer: random\n"
                            "evaluator: {plugin: train, train_limit: 64, validation: %d, test: true, epochs: 1, batch_size: 32, "
                            "threads: 1}\nobjective: %s\npruner: {kind: median}\nbudget: {evaluations: 2}\n"
                            % (validation, objective))
                store = os.path.join(self.dir, name + ".sieve")
                p = sieve("run", cfg, "--store", store, check=2)
                self.assertIn(f"{cfg}:5:", p.stderr)
                self.assertIn(wanted, p.stderr)

    def test_pruner_with_several_objectives_is_refused(self):
        """A pruner judges the first objective only: with several, it would stop trials on the Pareto front of
        the others (and store them without those objectives). A config error at the pruner's line, as Optuna
        refuses trial.report in a multi-objective study; nothing is stored."""
        cfg, store = self.program_study(
            "pareto", "import sys, json\njson.load(sys.stdin)\nprint(json.dumps({'val_acc': 0.5, 'ms': 1}))\n",
            "pruner: {kind: median}\nbudget: {evaluations: 1}\n")
        with open(cfg) as f:
            text = f.read().replace("objective: {metric: val_acc}",
                                    "objective: [{metric: val_acc}, {metric: ms, direction: minimize}]")
        with open(cfg, "w") as f:
            f.write(text)
        p = sieve("run", cfg, "--store", store, check=2)
        self.assertIn(f"{cfg}:5:", p.stderr)
        self.assertIn("a pruner judges one objective, and this study has 2", p.stderr)
        self.assertFalse(os.path.exists(store))

    def test_tell_order_trial_makes_pruning_reproducible(self):
        """tell_order: trial with 2 workers: trial 1 (bad) runs beside trial 0 (good), slowly or not; it is
        judged against the trials completed before it was dispatched (none), not against trial 0 if that
        happened to finish first. Trial 2 is dispatched after trial 0 is told, and pruned in both runs."""
        statuses = {}
        for delay in ("0", "1.5"):
            cfg, store = self.program_study(
                "order" + delay, "import sys, json, time\nreq = json.load(sys.stdin)\nt = req['trial']\n"
                "v = 0.9 if t == 0 else 0.1\n"
                "if t == 1: time.sleep(float(sys.argv[1]))\n"
                "for s in range(1, 4):\n"
                "    print(json.dumps({'intermediate': {'step': s, 'value': v}}), flush=True)\n"
                "    time.sleep(0.1)\n"
                "print(json.dumps({'val_acc': v}), flush=True)\n",
                "pruner: {kind: median, startup_trials: 1}\nbudget: {evaluations: 3}\nworkers: 2\n"
                "tell_order: trial\nseed: 1\n", args=f", '{delay}'")
            sieve("run", cfg, "--store", store, "--quiet", check=0)
            statuses[delay] = [t["status"] for t in rows(store)]
        self.assertEqual(statuses["1.5"], ["ok", "ok", "pruned"])
        self.assertEqual(statuses["0"], statuses["1.5"])

    def test_tell_order_trial_pruning_survives_sigkill(self):
        """tell_order: trial, 2 workers, killed with SIGKILL while trial 1 (bad, slow) runs and after trial 0
        (good) was stored: the resumed trial 1 is judged against the trials completed when it was asked (none),
        as in a run that was not killed (ok), not against trial 0, which completed while it ran (pruned)."""
        cfg, store = self.program_study(
            "orderkill", "import sys, json, time\nreq = json.load(sys.stdin)\nt = req['trial']\n"
            "v = 0.9 if t == 0 else 0.1\n"
            "if t == 1: time.sleep(2)\n"
            "for s in range(1, 4):\n"
            "    print(json.dumps({'intermediate': {'step': s, 'value': v}}), flush=True)\n"
            "print(json.dumps({'val_acc': v}), flush=True)\n",
            "pruner: {kind: median, startup_trials: 1}\nbudget: {evaluations: 3}\nworkers: 2\n"
            "tell_order: trial\nseed: 1\n")
        proc = subprocess.Popen([SIEVE, "run", cfg, "--store", store, "--quiet"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        done = []
        while time.time() < deadline and not done:
            time.sleep(0.1)
            if os.path.exists(store):
                try:
                    done = [t["number"] for t in rows(store) if t["status"] != "pending"]
                except AssertionError:
                    continue
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        self.assertEqual(done, ["0"], "the kill did not come while trial 1 ran")
        sieve("run", cfg, "--store", store, "--resume", "--quiet", check=0)
        self.assertEqual([t["status"] for t in rows(store)], ["ok", "ok", "pruned"])

    def test_resume_counts_completed_trials_without_values(self):
        """A trial that completed without reporting a value counts towards startup_trials (as Optuna counts
        every completed trial), in the run that completed it and in a resumed one alike: trial 2 is judged,
        and pruned, after a resume as it is in one run."""
        program = ("import sys, json\nreq = json.load(sys.stdin)\nt = req['trial']\nv = 0.1 if t == 2 else 0.9\n"
                   "if t > 0: print(json.dumps({'intermediate': {'step': 1, 'value': v}}), flush=True)\n"
                   "print(json.dumps({'intermediate': {'step': 2, 'value': v}}) if t > 0 else '', flush=True)\n"
                   "print(json.dumps({'val_acc': v}), flush=True)\n")
        statuses = {}
        for name, runs in (("whole", [["--set", "budget.evaluations=3"]]),
                           ("resumed", [["--set", "budget.evaluations=2"],
                                        ["--set", "budget.evaluations=3", "--resume"]])):
            cfg, store = self.program_study(name, program, "pruner: {kind: median, startup_trials: 2}\nseed: 1\n"
                                            "budget: {evaluations: 3}\n")
            for args in runs:
                sieve("run", cfg, "--store", store, "--quiet", *args, check=0)
            statuses[name] = [t["status"] for t in rows(store)]
        self.assertEqual(statuses["whole"], ["ok", "ok", "pruned"])
        self.assertEqual(statuses["resumed"], statuses["whole"])

    def test_many_reports_are_judged_quickly(self):
        """40,000 reports under a patience pruner: each judged in O(1) amortised (1.7 s here; copying and
        sorting the curve at each report took 89 to 250 s, past this test's 60 s)."""
        cfg, store = self.program_study(
            "many", "import sys, json\njson.load(sys.stdin)\nw = sys.stdout.write\n"
            "for s in range(40000):\n"
            "    w('{\"intermediate\": {\"step\": %d, \"value\": %r}}\\n' % (s, 0.5 + s * 1e-9))\n"
            "sys.stdout.flush()\nprint(json.dumps({'val_acc': 0.5}))\n",
            "pruner: {kind: patience, patience: 1000000}\nbudget: {evaluations: 1}\n")
        sieve("run", cfg, "--store", store, "--quiet", check=0, timeout=60)
        self.assertEqual([t["status"] for t in rows(store)], ["ok"])
        self.assertEqual(len(rows(store, "--intermediate")), 40000)

    def test_sigkill_and_resume(self):
        """Killed with SIGKILL while trials run and some are pruned: the resumed study keeps every
        finished trial (pruned ones with their curves) and ends with the full budget."""
        cfg = self.config("kill.yaml", sleep=0.05, budget=14)
        store = os.path.join(self.dir, "kill.sieve")
        proc = subprocess.Popen([SIEVE, "run", cfg, "--store", store, "--quiet"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        before = []
        while time.time() < deadline:
            time.sleep(0.3)
            if os.path.exists(store):
                try:
                    before = [t for t in rows(store) if t["status"] != "pending"]
                except AssertionError:
                    continue
                if any(t["status"] == "pruned" for t in before):
                    break
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        self.assertTrue(any(t["status"] == "pruned" for t in before), "no trial was pruned before the kill")
        kept = {t["number"]: t for t in rows(store) if t["status"] != "pending"}
        curves_before = [c for c in rows(store, "--intermediate") if c["trial"] in kept]
        sieve("run", cfg, "--store", store, "--resume", "--quiet", check=0, timeout=180)
        after = {t["number"]: t for t in rows(store)}
        self.assertEqual(sum(t["status"] != "pending" for t in after.values()), 14)
        for number, t in kept.items():
            self.assertEqual((after[number]["status"], after[number]["val_acc"]), (t["status"], t["val_acc"]))
        curves_after = [c for c in rows(store, "--intermediate") if c["trial"] in kept]
        self.assertEqual(curves_before, curves_after)

    def test_asha_with_median_pruning(self):
        """ASHA over the program's epochs with the pruner on: promotions reach the full 9 epochs."""
        cfg = self.config("asha.yaml", optimizer="asha", budget=20,
                          extra="  fidelity: {name: epochs, min: 1, max: 9, integer: true}")
        store = os.path.join(self.dir, "asha.sieve")
        out = sieve("run", cfg, "--store", store, check=0).stdout
        trials = rows(store)
        fidelities = sorted({float(t["fidelity"]) for t in trials if t["status"] == "ok"})
        self.assertIn(9.0, fidelities)
        self.assertIn("fidelity", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
