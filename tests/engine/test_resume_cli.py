#!/usr/bin/env python3
"""What `sieve run --resume` accepts: the same study, however its defaults
are written, with only budget, workers and report changed; and nothing
else, the contents of the files that define it (a space file) included.
Each refusal names the setting (or file) and both values."""
import os
import sqlite3
import sys

sys.path.insert(0, os.path.join(os.environ["SIEVE_SOURCE_ROOT"], "tests", "support"))
from sieve_cli import Workdir, export_rows, sieve, sieve_tty, status_lines  # noqa: E402

SPACE = "parameters:\n  x1: {type: float, low: -5, high: 10}\n  x2: {type: float, low: 0, high: 15}\n"
CONFIG = """name: r
seed: 0
space: {plugin: hpo, file: sp.yaml}
optimizer: {plugin: random}
evaluator: {plugin: function, function: branin}
objective: {metric: value, direction: minimize}
budget: {evaluations: 3}
"""


class Resume(Workdir):
    prefix = "sieve-resume-"

    def setUp(self):
        super().setUp()
        self.write("sp.yaml", SPACE)
        self.config = self.write("r.yaml", CONFIG)
        self.store = self.path("r.sieve")
        sieve("run", self.config, "--store", self.store, "--quiet", check=0)
        self.evaluations = 3

    def resume(self, *sets, check):
        self.evaluations += 1
        args = ["run", self.config, "--store", self.store, "--resume", "--quiet",
                "--set", f"budget.evaluations={self.evaluations}"]
        for s in sets:
            args += ["--set", s]
        return sieve(*args, check=check)

    def test_defaults_written_out_are_the_same_study(self):
        # Each was refused when the comparison was on the config's text.
        for s in ["tell_order=completion", "optimizer.seed=0", "pipeline=[]", "constraint_tries=1000",
                  "objective.direction=minimize", "evaluator.function=branin", "workers=1", "report.top=3"]:
            with self.subTest(set=s):
                self.resume(s, check=0)

    def test_changes_are_refused_with_the_setting_named(self):
        for s, first in [("constraint_tries=5", "constraint_tries: stored '1000', now '5'"),
                         ("optimizer.seed=4", "optimizer.seed: stored '0', now '4'"),
                         ("tell_order=trial", "tell_order: stored 'completion', now 'trial'"),
                         ("evaluator.function=rosenbrock", "evaluator.function: stored 'branin', now 'rosenbrock'")]:
            with self.subTest(set=s):
                p = self.resume(s, check=None)
                self.assertNotEqual(p.returncode, 0)
                self.assertIn("the experiment differs from the study stored there", p.stderr)
                self.assertIn("first difference: " + first, p.stderr)
                self.evaluations -= 1

    def test_a_changed_space_file_is_refused(self):
        self.write("sp.yaml", SPACE.replace("low: -5, high: 10", "low: 50, high: 100"))
        p = self.resume(check=None)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(f"first difference: space.file: the file {self.path('sp.yaml')} changed since the study "
                      "was stored", p.stderr)
        # The same contents again: the same study.
        self.write("sp.yaml", SPACE)
        self.evaluations -= 1
        self.resume(check=0)

    def test_a_component_that_gains_an_option_resumes(self):
        # The key holds a component's options that differ from their
        # defaults only: a plugin that gains an option with a default that
        # keeps its old behaviour resumes the studies it started. Here the
        # function evaluator's 'noise' stands for such an option: a key
        # stored without it resumes; one whose value differs does not.
        with sqlite3.connect(self.store) as db:
            key = db.execute("SELECT value FROM meta WHERE key = 'study_key'").fetchone()[0]
        self.assertIn("evaluator.function\tbranin", key)
        self.assertNotIn("evaluator.noise", key)
        self.resume("evaluator.noise=0", check=0)
        p = self.resume("evaluator.noise=0.5", check=None)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("first difference: evaluator.noise: stored (not set), now '0.5'", p.stderr)
        # A space file given as ~/...: digested as the component reads it.
        home = self.path("home")
        os.mkdir(home)
        self.write(os.path.join("home", "sp.yaml"), SPACE)
        env = dict(os.environ, HOME=home)
        config = self.write("h.yaml", CONFIG.replace("file: sp.yaml", "file: ~/sp.yaml"))
        store = self.path("h.sieve")
        sieve("run", config, "--store", store, "--quiet", check=0, env=env)
        self.write(os.path.join("home", "sp.yaml"), SPACE.replace("high: 15", "high: 14"))
        p = sieve("run", config, "--store", store, "--resume", "--quiet", "--set", "budget.evaluations=4",
                  check=None, env=env)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("space.file: the file", p.stderr)

    def test_a_store_from_before_the_key_resumes_and_gets_it(self):
        # A store written before the study key: meta has no study_key.
        with sqlite3.connect(self.store) as db:
            db.execute("DELETE FROM meta WHERE key = 'study_key'")
        # Its files were never digested: a changed one is not checked (as
        # before), and the key is stored on this first resume ...
        self.write("sp.yaml", SPACE.replace("high: 15", "high: 14"))
        self.resume(check=0)
        with sqlite3.connect(self.store) as db:
            self.assertEqual(db.execute("SELECT count(*) FROM meta WHERE key = 'study_key'").fetchone()[0], 1)
        # ... so the next change is.
        self.write("sp.yaml", SPACE)
        p = self.resume(check=None)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("space.file: the file", p.stderr)

    def test_status_line_counts_every_run(self):
        # Bug hunt 3: a resumed run's status line counted ok and failed of
        # this run only ("[8/8] ... ok 3") while the summary said 8 ok.
        code, out = sieve_tty("run", self.config, "--store", self.store, "--resume",
                              "--set", "budget.evaluations=8")
        self.assertEqual(code, 0, out)
        self.assertIn("8 trials: 8 ok, 0 failed, 0 pending", out)
        last = status_lines(out)[-1]
        self.assertRegex(last, r"^\[8/8\] best \S+ \(#\d+\) \| ok 8 failed 0 \|", out)

    def test_status_line_counts_a_pending_trial_that_cannot_be_read_back(self):
        # Review 5: a pending trial whose genotype no longer reads is stored
        # failed and counted an evaluation, but the status line's failed
        # count left it out ("[5/5] ... ok 4 failed 0").
        with sqlite3.connect(self.store) as db:
            db.execute("INSERT INTO trials (number, genotype, status) VALUES (3, 'x1=banana', 'pending')")
        code, out = sieve_tty("run", self.config, "--store", self.store, "--resume",
                              "--set", "budget.evaluations=5")
        self.assertEqual(code, 0, out)
        self.assertIn("pending trial 3 skipped: its stored genotype cannot be read back", out)
        self.assertIn("5 trials: 4 ok, 1 failed, 0 pending", out)
        self.assertRegex(status_lines(out)[-1], r"^\[5/5\] best \S+ \(#\d+\) \| ok 4 failed 1 \|", out)

    def test_a_spent_budget_is_said_with_how_to_go_on(self):
        # New-user review: a resume with the budget the study already spent ran nothing, silently (an
        # Optuna user's n_trials counts one optimize call; sieve's budget is the study's total).
        p = sieve("run", self.config, "--store", self.store, "--resume", "--set", "budget.evaluations=2", check=0)
        self.assertIn("3 trials stored: the evaluation budget (2, the study's total, not this run's) is spent "
                      "already, so nothing runs (--set budget.evaluations=5 runs 2 more)", p.stdout)
        self.assertEqual(len(export_rows(self.store)), 3)
        p = sieve("run", self.config, "--store", self.store, "--resume", "--set", "budget.evaluations=5", check=0)
        self.assertIn("3 trials stored\n", p.stdout)
        self.assertEqual(len(export_rows(self.store)), 5)

    def test_a_spent_time_budget_is_said_with_how_to_go_on(self):
        # Review of damaged stores, item 8: the seconds budget spent, a
        # resume printed the summary and nothing about why nothing ran.
        with sqlite3.connect(self.store) as db:
            db.execute("UPDATE meta SET value = '5.25' WHERE key = 'elapsed_s'")
        p = sieve("run", self.config, "--store", self.store, "--resume", "--set", "budget.evaluations=0",
                  "--set", "budget.seconds=5", check=0)
        self.assertIn("3 trials stored: the time budget (5 s, the study's total over its runs, not this run's) is "
                      "spent already (5.250 s), so nothing runs (--set budget.seconds=11 runs about 5 s more)",
                      p.stdout)
        self.assertEqual(len(export_rows(self.store)), 3)
        p = sieve("run", self.config, "--store", self.store, "--resume", "--set", "budget.evaluations=5",
                  "--set", "budget.seconds=60", check=0)
        self.assertIn("3 trials stored\n", p.stdout)
        self.assertEqual(len(export_rows(self.store)), 5)

    def test_pending_beyond_a_spent_budget_is_said_to_stay(self):
        # Bug hunt 3: a resume whose budget was spent said "1 of them
        # unfinished and run again", then left it pending.
        with sqlite3.connect(self.store) as db:
            db.execute("DELETE FROM metrics WHERE trial = 2")
            db.execute("UPDATE trials SET status = 'pending', cost = NULL, started = NULL, finished = NULL, "
                       "worker = NULL WHERE number = 2")
        for budget, said in [(2, "3 trials stored, 1 of them unfinished: the evaluation budget (2) is spent, so "
                                 "they stay pending unless the cache or a constraint answers them, which costs no evaluation (a larger "
                                 "budget.evaluations and --resume evaluate the others)"),
                             (3, "3 trials stored, 1 of them unfinished and run again")]:
            with self.subTest(budget=budget):
                p = sieve("run", self.config, "--store", self.store, "--resume", "--set",
                          f"budget.evaluations={budget}", check=0)
                self.assertIn(said, p.stdout)
        self.assertEqual([r["status"] for r in export_rows(self.store)], ["ok"] * 3)


PRUNED = """name: p
seed: 0
space: {{plugin: hpo, file: {example}/space.yaml}}
optimizer: {{plugin: random}}
evaluator: {{plugin: command, argv: [{python}, {example}/curve.py, --epochs, "3"], stdin: json}}
objective: {{metric: val_acc, direction: maximize}}
pruner: {pruner}
budget: {{evaluations: 1}}
"""


class ResumePruner(Workdir):
    """The pruner is keyed through its option table, as a component's options are."""
    prefix = "sieve-resume-pruner-"

    def study(self, name, pruner):
        example = os.path.join(os.environ["SIEVE_SOURCE_ROOT"], "examples", "progress")
        config = self.write(name + ".yaml", PRUNED.format(example=example, python=sys.executable, pruner=pruner))
        store = self.path(name + ".sieve")
        sieve("run", config, "--store", store, "--quiet", check=0)
        return config, store

    def test_pruner_defaults_written_out_are_the_same_study(self):
        config, store = self.study("m", "{kind: median}")
        for s in ["pruner.interval_steps=1", "pruner.startup_trials=5", "pruner.min_trials=1",
                  "pruner.warmup_steps=0", "pruner.percentile=50"]:
            with self.subTest(set=s):
                sieve("run", config, "--store", store, "--resume", "--quiet", "--set", s, check=0)
        p = sieve("run", config, "--store", store, "--resume", "--quiet", "--set", "pruner.warmup_steps=2",
                  check=None)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("first difference: pruner.warmup_steps: stored (not set), now '2'", p.stderr)
        # A float written as 25.0 or 25 is one setting.
        config, store = self.study("q", "{kind: percentile, percentile: 25.0}")
        sieve("run", config, "--store", store, "--resume", "--quiet", "--set", "pruner.percentile=25", check=0)

    def test_a_store_keyed_with_the_pruner_as_written_resumes(self):
        # Until 2026-11-26 the key held the pruner's lines as written
        # (pruner.warmup_steps 0 when written): such a store resumes with
        # the same config, and gets the key of today on that resume.
        config, store = self.study("o", "{kind: median, warmup_steps: 0, percentile: 50.0}")
        with sqlite3.connect(store) as db:
            key = db.execute("SELECT value FROM meta WHERE key = 'study_key'").fetchone()[0]
            self.assertNotIn("pruner.warmup_steps", key)
            lines = key.splitlines() + ["pruner.warmup_steps\t0", "pruner.percentile\t50.0"]
            old = "\n".join(sorted(lines)) + "\n"
            db.execute("UPDATE meta SET value = ? WHERE key = 'study_key'", (old,))
        sieve("run", config, "--store", store, "--resume", "--quiet", "--set", "budget.evaluations=2", check=0)
        with sqlite3.connect(store) as db:
            self.assertEqual(db.execute("SELECT value FROM meta WHERE key = 'study_key'").fetchone()[0], key)
        # A different pruner is still refused, by the key of today.
        p = sieve("run", config, "--store", store, "--resume", "--quiet", "--set", "pruner.warmup_steps=3",
                  check=None)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("first difference: pruner.warmup_steps: stored (not set), now '3'", p.stderr)


if __name__ == "__main__":
    import unittest
    unittest.main()
