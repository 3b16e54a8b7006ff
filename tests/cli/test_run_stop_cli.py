#!/usr/bin/env python3
"""What `sieve run` says when a study stops on an error: --resume is
suggested only where it can help (bug hunt, item 6: it was suggested for a
corrupt store and for an experiment whose network does not fit its data,
both of which --resume meets again at once)."""
import contextlib
import os
import sqlite3
import sys
import unittest

ROOT = os.environ["SIEVE_SOURCE_ROOT"]
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import sieve_cli  # noqa: E402
from sieve_cli import export_rows, sieve  # noqa: E402

BRANIN = sieve_cli.branin_config("stop", 3)


class TestStopMessage(sieve_cli.Workdir):
    prefix = "sieve-stop-"

    def test_corrupt_store(self):
        cfg = self.write("b.yaml", BRANIN)
        store = self.path("c.sieve")
        sieve("run", cfg, "--store", store, "-q", check=0)
        con = sqlite3.connect(store)
        con.execute("update state set data=randomblob(100)")
        con.commit()
        con.close()
        p = sieve("run", cfg, "--store", store, "--resume", "--set", "budget.evaluations=6", check=1)
        self.assertNotIn("continue with --resume", p.stderr)
        self.assertIn("stopped on an error of its store", p.stderr)
        self.assertIn("--resume would meet the same error", p.stderr)
        self.assertIn("corrupt store", p.stderr)
        # Kept as it was: the three trials still read.
        self.assertEqual(len(export_rows(store)), 3)

    def test_experiment_error(self):
        # The objective is never reported: the fix is in the experiment file
        # (the metric's name; another store) or in the program (--resume).
        prog = self.write("miss.sh", "#!/bin/sh\necho '{\"other\": 1.5}'\n")
        os.chmod(prog, 0o755)
        cfg = self.write("m.yaml", f"""\
name: miss
space: {{plugin: hpo, parameters: {{x1: {{type: float, low: -5, high: 10}}}}}}
optimizer: {{plugin: random}}
evaluator: {{plugin: command, argv: [{prog}, "{{trial}}"]}}
objective: {{metric: value, direction: minimize}}
budget: {{evaluations: 2}}
""")
        store = self.path("m.sieve")
        p = sieve("run", cfg, "--store", store, check=2)
        self.assertIn("did not report the objective metric 'value'; it reported: other (trial 0 finished without it "
                      "and no trial before it reported it: the study stops rather than fail every trial the same "
                      "way)", p.stderr)
        self.assertNotIn("continue with --resume once", p.stderr)
        self.assertIn("stopped on an error of its experiment", p.stderr)
        self.assertIn("start it with another --store", p.stderr)
        # The program fixed, the study resumes from the same store.
        self.write("miss.sh", "#!/bin/sh\necho '{\"value\": 1.5}'\n")
        os.chmod(prog, 0o755)
        sieve("run", cfg, "--store", store, "--resume", "-q", check=0)
        statuses = [r["status"] for r in export_rows(store)]
        self.assertEqual(len(statuses), 2)  # the budget counts the trial that stopped it
        self.assertEqual(statuses[-1], "ok")

class TestNothingRanked(sieve_cli.Workdir):
    prefix = "sieve-stop-"

    def test_every_trial_failed_exits_1(self):
        # Left out at stop 41: a study whose every trial failed exited 0, so a
        # script or a scheduler took it for a result. The trials stay stored.
        prog = self.write("boom.sh", "#!/bin/sh\necho \"boom $1\" >&2\nexit 3\n")
        os.chmod(prog, 0o755)
        cfg = self.write("f.yaml", f"""\
name: allfail
space: {{plugin: hpo, parameters: {{x1: {{type: float, low: -5, high: 10}}}}}}
optimizer: {{plugin: random}}
evaluator: {{plugin: command, argv: [{prog}, "{{trial}}"]}}
objective: {{metric: value, direction: minimize}}
budget: {{evaluations: 3}}
""")
        store = self.path("f.sieve")
        p = sieve("run", cfg, "--store", store, "-q", check=1)
        self.assertIn("3 trials: 0 ok, 3 failed", p.stdout)
        self.assertIn("no trial of study 'allfail' has a value of 'value' (3 trials: 3 failed; the first failed, "
                      "trial 0: exited with status 3: boom 0)", p.stderr)
        self.assertEqual([r["status"] for r in export_rows(store)], ["failed"] * 3)
        # The program mended, the resumed study has a result and exits 0.
        self.write("boom.sh", "#!/bin/sh\necho '{\"value\": 2.5}'\n")
        os.chmod(prog, 0o755)
        sieve("run", cfg, "--store", store, "--resume", "--set", "budget.evaluations=4", "-q", check=0)
        self.assertEqual([r["status"] for r in export_rows(store)], ["failed"] * 3 + ["ok"])


class TestStoppedShortWithQuiet(sieve_cli.Workdir):
    prefix = "sieve-stop-"

    def test_quiet_still_says_why_a_study_stopped_short(self):
        # Bug hunt 4 (C12): with -q a study that ended below its budget said
        # nothing about why. Each "stopping:" reason is printed with -q too,
        # and nothing else of the progress.
        grid = ("name: g\nspace: {plugin: hpo, parameters: {x1: {type: int, low: 0, high: 1}, "
                "x2: {type: int, low: 0, high: 1}}}\noptimizer: {plugin: random}\n"
                "evaluator: {plugin: function, function: branin}\nobjective: {metric: value, direction: minimize}\n"
                "pipeline: [{dedupe: {max_consecutive_hits: 5}}]\nbudget: {evaluations: 50}\n")
        out = sieve("run", self.write("g.yaml", grid), "--store", self.path("g.sieve"), "-q", check=0).stdout
        self.assertIn("stopping: the last 5 proposals were all duplicates", out)
        self.assertNotRegex(out, r"(?m)^\[\d+/")
        table = os.path.join(ROOT, "data", "nb201", "nb201.csv")
        nb = ("name: n\nspace: {plugin: nb201, C: 4, N: 1}\noptimizer: {plugin: random}\n"
              f"evaluator: {{plugin: tabular, table: {table}, metrics: [cifar10_valid_acc]}}\n"
              "objective: {metric: cifar10_valid_acc}\nbudget: {evaluations: 20}\nconstraint_tries: 5\n"
              "constraints: [{metric: params, max: 1}]\n")
        p = sieve("run", self.write("n.yaml", nb), "--store", self.path("n.sieve"), "-q", check=1)
        out = p.stdout
        self.assertIn("stopping: the last 5 proposals all broke a constraint", out)
        # Nothing met the constraint: no result, so not a success either.
        self.assertIn("no trial of study 'n' has a value of 'cifar10_valid_acc' (5 trials: 5 rejected by a "
                      "constraint)", p.stderr)
        self.assertNotRegex(out, r"(?m)^\[\d+/")


class TestCorruptMeta(sieve_cli.Workdir):
    """A store whose meta rows were edited by hand is refused as corrupt,
    naming the row, and nothing stored is changed (review of damaged stores)."""
    prefix = "sieve-stop-"

    def damaged(self, *sql, config=BRANIN):
        """A three-trial study's store after the statements sql."""
        cfg = self.write("b.yaml", config)
        store = self.path("d.sieve")
        sieve("run", cfg, "--store", store, "-q", check=0)
        con = sqlite3.connect(store)
        for statement in sql:
            con.execute(statement)
        con.commit()
        con.close()
        return cfg, store

    def test_runs_out_of_range(self):
        # Item 1: a count of runs whose next is <= 0 or overflows made the
        # engine fail without an error, and `sieve run` crashed on it.
        for value in ["-2", "9223372036854775807", "99999999999999999999", "-2147483648", "abc"]:
            with self.subTest(value=value):
                cfg, store = self.damaged(f"update meta set value='{value}' where key='runs'")
                p = sieve("run", cfg, "--store", store, "--resume", "--set", "budget.evaluations=6", check=1)
                self.assertIn(f"corrupt store: meta 'runs' is '{value}' (expected a whole number from 0 to "
                              "9223372036854775806)", p.stderr)
                self.assertEqual(len(export_rows(store)), 3)
                os.remove(store)

    def test_elapsed_not_a_time(self):
        # Item 2: budget.seconds counts from meta 'elapsed_s'; NaN or -1e300
        # never let it be spent (the resume ran forever), and text read as 0.
        for value in ["NaN", "-1e300", "abc", "inf", "-1", "2.5s"]:
            with self.subTest(value=value):
                cfg, store = self.damaged(f"update meta set value='{value}' where key='elapsed_s'")
                p = sieve("run", cfg, "--store", store, "--resume", "--set", "budget.seconds=1", check=1, timeout=60)
                self.assertIn(f"corrupt store: meta 'elapsed_s' is '{value}' (expected a finite number of seconds "
                              "from 0)", p.stderr)
                self.assertEqual(len(export_rows(store)), 3)
                os.remove(store)

    def test_meta_gone_with_trials_stored(self):
        # Item 4: a store whose meta was emptied but whose trials stayed was
        # taken as empty, and another study was written among its trials.
        cfg, store = self.damaged("delete from meta", "delete from state")
        other = self.write("o.yaml", sieve_cli.branin_config("other", 2))
        for args in (["run", other, "--store", store], ["run", cfg, "--store", store, "--resume"]):
            with self.subTest(args=args[2:]):
                p = sieve(*args, "-q", check=1)
                self.assertIn(f"{store}: corrupt store: meta has no 'identity' but table 'trials' holds rows "
                              "(expected a study's meta with its rows, or an empty store)", p.stderr)
        with contextlib.closing(sqlite3.connect(store)) as con:
            self.assertEqual(con.execute("select count(*) from trials").fetchone()[0], 3)
            self.assertEqual(con.execute("select count(*) from meta").fetchone()[0], 0)

    def test_store_of_a_lua_study(self):
        # A store sieve.study made holds no 'identity' either, but is no
        # damaged store: said as what it is (a review found "corrupt store").
        store = self.path("lua.sieve")
        script = self.write("s.lua", f"""
local st = sieve.study{{space = sieve.space("hpo", {{parameters = {{x = {{type = "float", low = 0, high = 1}}}}}}),
                       optimizer = "random", objective = {{metric = "v"}}, seed = 1, store = "{store}"}}
for i = 1, 2 do local t = st:ask(); st:tell(t, {{metrics = {{v = t.genotype:get("x")}}}}) end
""")
        sieve("lua", "--allow", "io", script, check=0)
        cfg = self.write("b.yaml", BRANIN)
        for args in (["--store", store], ["--store", store, "--resume"]):
            with self.subTest(args=args[2:]):
                p = sieve("run", cfg, *args, "-q", check=1)
                self.assertIn(f"{store} holds a study a Lua script made (sieve.study, 2 trials), which a config "
                              "cannot continue", p.stderr)
                self.assertNotIn("corrupt", p.stderr)
        self.assertEqual(len(export_rows(store)), 2)

    def test_optimizer_state_gone(self):
        # Item 5: a study's trials without the optimizer's state (saved with
        # every ask) resumed with a fresh optimizer, unlike the study that ran.
        for sql in ("delete from state", "update state set name='xyz' where name='optimizer'"):
            with self.subTest(sql=sql):
                cfg, store = self.damaged(sql)
                p = sieve("run", cfg, "--store", store, "--resume", "--set", "budget.evaluations=6", check=1)
                self.assertIn(f"{store}: corrupt store: 3 trials stored but no state 'optimizer' (expected the "
                              "optimizer's state, saved with every ask", p.stderr)
                self.assertEqual(len(export_rows(store)), 3)
                os.remove(store)


if __name__ == "__main__":
    unittest.main(verbosity=2)
