"""Hole 3 of issue 20: nothing a `command` evaluator prints can crash the
study or be stored as a success it is not.  Trial 0 of each study reports a
good objective; every later trial prints one kind of hostile output, which
must fail that trial with the reason while the study runs to its budget."""
import csv
import io
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile import Scratch, sieve  # noqa: E402

PROGRAM = r'''
import sys
trial, mode = int(sys.argv[1]), sys.argv[2]
out = sys.stdout
if trial == 0:
    out.write('{"value": 1}\n')
elif mode == "ok":
    out.write('{"value": %d}\n' % trial)
elif mode == "deep_array":
    out.write("[" * 100000 + "]" * 100000 + "\n")
elif mode == "deep_object":
    out.write('{"a":' * 100000 + "1" + "}" * 100000 + "\n")
elif mode == "null":
    out.write('{"value": null}\n')
elif mode == "missing":
    out.write('{"loss": 2}\n')
elif mode == "string":
    out.write('{"value": "0.5"}\n')
elif mode == "nan":
    out.write('{"value": NaN}\n')
elif mode == "inf":
    out.write('{"value": -Infinity}\n')
elif mode == "huge_line":
    out.write('{"value": 1, "pad": "' + "x" * (6 << 20) + '"}\n')
elif mode == "no_newline":
    out.write("y" * (6 << 20))
'''

CONFIG = """name: hostile
seed: 1
space: {plugin: hpo, file: space.yaml}
optimizer: {plugin: random}
evaluator:
  plugin: command
  argv: [%s, program.py, "{trial}", "%s"]
objective: {metric: value, direction: minimize}
budget: {evaluations: 4}
"""

REASONS = {
    "deep_array": "last stdout line nests 100000 levels deep, more than the 32",
    "deep_object": "last stdout line nests 100000 levels deep, more than the 32",
    "null": "no number for the objective metric 'value'",
    "missing": "no number for the objective metric 'value' (numeric metrics reported: loss)",
    "string": "no number for the objective metric 'value'",
    "nan": "the objective metric 'value' is nan, not a finite number",
    "inf": "the objective metric 'value' is -inf, not a finite number",
    "huge_line": "more than the 1048576 a JSON object of metrics may have",
    "no_newline": "more than the 1048576 a JSON object of metrics may have",
}


class EvaluatorBoundary(Scratch):
    def study(self, mode):
        self.write("space.yaml", "parameters:\n  x: {type: int, low: 0, high: 1000}\n")
        self.write("program.py", PROGRAM)
        config = self.write("study.yaml", CONFIG % (sys.executable, mode))
        store = self.path("s.sieve")
        p = sieve("run", config, "--store", store, "-q", timeout=60)
        self.expect(p, 0)
        rows = list(csv.DictReader(io.StringIO(sieve("export", store, "--format", "csv").stdout)))
        return p, rows

    def check(self, mode):
        p, rows = self.study(mode)
        # The study went on to its budget: trial 0 ok, each hostile one failed with its reason.
        self.assertEqual([r["status"] for r in rows], ["ok", "failed", "failed", "failed"], rows)
        for r in rows[1:]:
            self.assertIn(REASONS[mode], r["reason"])
        # And --resume reads every stored record back without a crash.
        r = sieve("run", self.path("study.yaml"), "--store", self.path("s.sieve"), "--resume", "-q",
                  "--set", "budget.evaluations=5")
        self.expect(r, 0)


for _mode in REASONS:
    setattr(EvaluatorBoundary, f"test_{_mode}", lambda self, m=_mode: self.check(m))


GLUED = r'''
import sys
if int(sys.argv[1]) == 0:
    print('{"value": 1}')
else:
    print('{"value": 2}{"value": 3}')  # two objects glued: not one object (json-glib 1.6 leaked on it)
'''


class Glued(Scratch):
    def test_two_values_glued(self):
        self.write("space.yaml", "parameters:\n  x: {type: int, low: 0, high: 1000}\n")
        self.write("program.py", GLUED)
        config = self.write("study.yaml", CONFIG % (sys.executable, "glued"))
        self.expect(sieve("run", config, "--store", self.path("s.sieve"), "-q", timeout=60), 0)
        rows = list(csv.DictReader(io.StringIO(sieve("export", self.path("s.sieve"), "--format", "csv").stdout)))
        self.assertEqual([r["status"] for r in rows], ["ok", "failed", "failed", "failed"], rows)
        self.assertIn("last stdout line is not a JSON object", rows[1]["reason"])


class UnreadableRecord(Scratch):
    def test_pending_trial_that_cannot_be_read_back(self):
        # A stored pending trial whose genotype the space cannot read (an
        # edited store, a changed space file): reported, failed with the
        # reason, and the study goes on to its budget on --resume.
        self.write("space.yaml", "parameters:\n  x: {type: int, low: 0, high: 1000}\n")
        self.write("program.py", PROGRAM)
        config = self.write("study.yaml", CONFIG % (sys.executable, "ok"))
        store = self.path("s.sieve")
        self.expect(sieve("run", config, "--store", store, "-q", "--set", "budget.evaluations=1", timeout=60), 0)
        import sqlite3
        db = sqlite3.connect(store)
        db.execute("INSERT INTO trials (number, genotype, status) VALUES (1, 'x=banana', 'pending')")
        db.commit()
        db.close()
        p = sieve("run", config, "--store", store, "--resume", "-q", timeout=60)
        self.expect(p, 0, "pending trial 1 skipped: its stored genotype cannot be read back")
        rows = list(csv.DictReader(io.StringIO(sieve("export", store, "--format", "csv").stdout)))
        self.assertEqual([r["status"] for r in rows], ["ok", "failed", "ok", "ok"], rows)
        self.assertIn("cannot be read back", rows[1]["reason"])


class ObjectiveTypo(Scratch):
    def test_first_trial_without_objective_stops_the_study(self):
        # A metric name that no trial has ever reported is a config mistake:
        # stop at once (exit 2, the config's line named), the trial stored as failed, not ok.
        self.write("space.yaml", "parameters:\n  x: {type: int, low: 0, high: 9}\n")
        self.write("program.py", "print('{\"loss\": 1}')\n")
        config = self.write("study.yaml", CONFIG.replace('"{trial}", "%s"', '') % sys.executable)
        p = sieve("run", config, "--store", self.path("s.sieve"), "-q")
        self.expect(p, 2, "study.yaml:8:", "did not report the objective metric 'value'", "it reported: loss")
        rows = list(csv.DictReader(io.StringIO(sieve("export", self.path("s.sieve"), "--format", "csv").stdout)))
        self.assertEqual([r["status"] for r in rows], ["failed"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
