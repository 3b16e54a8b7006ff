#!/usr/bin/env python3
"""`sieve export` and `sieve final` (bug hunt, items 2-5): the export's
alternatives are exclusive, CSV column names are unique (a metric named as
a fixed column is written metric.NAME) so that csv.DictReader reads the
right one, the finals' JSON has their timings, and `sieve final`'s progress
names the trial it trains again, not the final's own number."""
import contextlib
import csv
import io
import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import unittest

ROOT = os.environ["SIEVE_SOURCE_ROOT"]
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import sieve_cli  # noqa: E402
from sieve_cli import sieve  # noqa: E402

DATA = os.environ.get("SIEVE_DATA_DIR", "/usr/share/datasets")

# A program whose metrics are named like the export's fixed columns.
PROGRAM = """\
import json, sys
json.load(sys.stdin)
print(json.dumps({"value": 1.5, "fidelity": 4, "cost_s": 3, "metric.value": 2, "number": 7}))
"""
COMMAND = """\
name: clash
space: {plugin: hpo, parameters: {x: {type: float, low: 0, high: 1}}}
optimizer: {plugin: random}
evaluator: {plugin: command, argv: [%s, clash.py], stdin: json, timeout: 30}
objective: {metric: value, direction: minimize}
budget: {evaluations: 2}
""" % json.dumps(sys.executable)


def csv_rows(text):
    return list(csv.DictReader(io.StringIO(text)))


class TestExport(sieve_cli.Workdir):
    prefix = "sieve-export-"

    def test_unique_columns(self):
        self.write("clash.py", PROGRAM)
        cfg = self.write("clash.yaml", COMMAND)
        store = self.path("clash.sieve")
        sieve("run", cfg, "--store", store, "-q", check=0)
        out = sieve("export", store, check=0).stdout
        header = out.splitlines()[0].split(",")
        self.assertEqual(len(header), len(set(header)), header)
        self.assertEqual(header[:9], ["number", "status", "genotype", "fidelity", "value", "metric.fidelity",
                                      "metric.cost_s", "metric.metric.value", "metric.number"])
        rows = csv_rows(out)
        self.assertEqual([r["number"] for r in rows], ["0", "1"])
        for r in rows:
            self.assertEqual(r["status"], "ok")
            self.assertEqual(r["fidelity"], "")  # the trial's: none chosen
            self.assertEqual((r["value"], r["metric.fidelity"], r["metric.cost_s"], r["metric.metric.value"],
                              r["metric.number"]), ("1.5", "4", "3", "2", "7"))
            self.assertNotEqual(r["cost_s"], "3")  # the evaluation's wall time
        # JSON keeps the metrics apart under their own names.
        data = json.loads(sieve("export", store, "-f", "json", check=0).stdout)
        self.assertEqual(data[0]["metrics"], {"value": 1.5, "fidelity": 4, "cost_s": 3, "metric.value": 2,
                                              "number": 7})
        self.assertIsNone(data[0]["fidelity"])

    def test_alternatives(self):
        cfg = self.write("clash.yaml", COMMAND)
        self.write("clash.py", PROGRAM)
        store = self.path("a.sieve")
        sieve("run", cfg, "--store", store, "-q", check=0)
        for a, b in [("--summary", "--finals"), ("--finals", "--intermediate"), ("--summary", "--intermediate")]:
            p = sieve("export", store, a, b, check=2)
            self.assertIn(f"{a} and {b} are alternatives", p.stderr)
            self.assertEqual(p.stdout, "")
        # Without dedupe there are no hashes: distinct_evaluated is not known, not 0 (new-user review).
        summary = csv_rows(sieve("export", store, "--summary", check=0).stdout)[0]
        self.assertEqual((summary["evaluated"], summary["distinct_evaluated"], summary["hash_kind"]), ("2", "", ""))
        summary = json.loads(sieve("export", store, "--summary", "-f", "json", check=0).stdout)
        self.assertIsNone(summary["distinct_evaluated"])

    def test_failed_write_keeps_the_old_file(self):
        # Review of damaged stores, item 6: on a full disk `sieve export -o`
        # renamed its truncated temporary over the old file. A file-size
        # limit (RLIMIT_FSIZE, SIGXFSZ ignored) fails the write as a full
        # disk does, without root; report -o and model export -o share the
        # writer (sieve__file_write), checked here too.
        cfg = self.write("b.yaml", sieve_cli.branin_config("big", 600))
        store = self.path("b.sieve")
        sieve("run", cfg, "--store", store, "-q", check=0)

        def limited():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))

        arch = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_1x1~2|"
        for args, name in ((["export", store, "--format", "csv", "-o"], "t.csv"),
                           (["export", store, "--format", "json", "-o"], "t.json"),
                           (["report", store, "-o"], "r.html"),
                           (["model", "export", "--space", "nb201", "-a", arch, "-o"], "m.onnx")):
            with self.subTest(name=name):
                out = self.path(name + ".d")  # a folder each
                os.mkdir(out)
                target = os.path.join(out, name)
                with open(target, "w") as f:
                    f.write("old\n")
                p = subprocess.run([sieve_cli.SIEVE, *args, target], capture_output=True, text=True, timeout=120,
                                   preexec_fn=limited)
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertIn(f"sieve: {target}: cannot write:", p.stderr)
                self.assertNotIn(f"{store}:", p.stderr)
                with open(target) as f:
                    self.assertEqual(f.read(), "old\n")
                self.assertEqual(os.listdir(out), [name])  # no temporary left

    def test_final_epochs_flag_and_set(self):
        # Review of damaged stores, item 7: `sieve final --epochs 1 --set
        # evaluator.epochs=2` trained 1 epoch and stored the settings
        # 'evaluator.epochs=2'. Refused as sieve train refuses a flag and a
        # --set of the same option, in either order, before anything is stored.
        cfg = self.write("b.yaml", sieve_cli.branin_config("fe", 2))
        store = self.path("b.sieve")
        sieve("run", cfg, "--store", store, "-q", check=0)
        for args in (["--epochs", "1", "--set", "evaluator.epochs=2"], ["--set", "evaluator.epochs=2", "--epochs", "1"]):
            p = sieve("final", store, *args, check=2)
            self.assertIn("sieve: --epochs 1 and --set evaluator.epochs=2 both set evaluator.epochs: give one of them",
                          p.stderr)
        with contextlib.closing(sqlite3.connect(store)) as con:
            self.assertEqual(con.execute("select count(*) from finals").fetchone()[0], 0)


@unittest.skipUnless(os.path.isdir(os.path.join(DATA, "fashion-mnist")), "no Fashion-MNIST")
class TestFinal(sieve_cli.Workdir):
    prefix = "sieve-final-"

    def test_final_export_and_progress(self):
        cfg = self.write("w.yaml", f"""\
name: w
space: {{plugin: nb201, C: 4, N: 1, in_channels: 1, size: 28}}
optimizer: {{plugin: random}}
evaluator: {{plugin: train, dataset: fashion-mnist, data_dir: {os.path.join(DATA, "fashion-mnist")},
  train_limit: 64, validation: 32, batch_size: 16, epochs: 1, test: false, threads: 1}}
objective: {{metric: val_acc}}
budget: {{evaluations: 3}}
""")
        store = self.path("w.sieve")
        sieve("run", cfg, "--store", store, "-q", check=0)
        p = sieve("final", store, "--trial", "2", "--epochs", "1", check=0)
        # The final is number 0 and trains trial 2: its lines say trial 2.
        self.assertRegex(p.stdout, r"(?m)^0\s+2\s")
        self.assertRegex(p.stderr, r"(?m)^\[1/1\] final of trial 2 ok ")
        self.assertRegex(p.stderr, r"(?m)^  final of trial #2 epoch ")
        self.assertNotIn("trial 0", p.stderr)
        self.assertNotIn("#0", p.stderr)
        # What is stored is the final's: number 0, trial 2, with its weights.
        out = sieve("export", store, "--finals", check=0).stdout
        header = out.splitlines()[0].split(",")
        self.assertEqual(len(header), len(set(header)), header)
        (row,) = csv_rows(out)
        self.assertEqual((row["final"], row["trial"], row["status"], row["epochs"]), ("0", "2", "ok", "1"))
        self.assertEqual(row["metric.epochs"], "1")  # the train evaluator's metric, apart from the column
        (final,) = json.loads(sieve("export", store, "--finals", "-f", "json", check=0).stdout)
        self.assertEqual((final["final"], final["trial"]), (0, 2))
        self.assertEqual(final["metrics"]["epochs"], 1)
        self.assertAlmostEqual(final["started"], float(row["started"]), places=3)
        self.assertAlmostEqual(final["finished"], float(row["finished"]), places=3)
        self.assertLessEqual(final["started"], final["finished"])
        sieve("model", "export", store, "--final", "0", "-o", self.path("f.safetensors"), check=0)
        # -q prints nothing and still stores the final (it crashed writing
        # its progress line to no stream).
        p = sieve("final", store, "--trial", "1", "--epochs", "0.5", "-q", check=0)
        self.assertEqual(p.stderr, "")
        finals = json.loads(sieve("export", store, "--finals", "-f", "json", check=0).stdout)
        self.assertEqual([(f["final"], f["trial"], f["status"]) for f in finals], [(0, 2, "ok"), (1, 1, "ok")])
        # keep_weights other than all is refused, not overridden in silence; nothing trained
        p = sieve("final", store, "--trial", "0", "--epochs", "0.5", "--set", "evaluator.keep_weights=none", check=2)
        self.assertIn("--set evaluator.keep_weights=none: a final always keeps its weights", p.stderr)
        self.assertEqual(len(json.loads(sieve("export", store, "--finals", "-f", "json", check=0).stdout)), 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
