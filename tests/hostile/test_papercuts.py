"""The papercuts of issue 20: small first impressions, one reproducer each,
asserting the exact outcome (message with file:line:col and the suggestion,
exit status, nothing written where a command was refused)."""
import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile import ROOT, SIEVE, Scratch, sieve  # noqa: E402

BRANIN = os.path.join(ROOT, "search_spaces", "branin.yaml")
NB201 = os.path.join(ROOT, "data", "nb201", "nb201.csv")
ARCH = "|nor_conv_3x3~0|+|none~0|nor_conv_3x3~1|+|skip_connect~0|none~1|nor_conv_3x3~2|"


def branin(space="{plugin: hpo, file: %s}" % BRANIN, optimizer="{plugin: random}",
           evaluator="{plugin: function, function: branin}", evaluations=4):
    return (f"name: cut\nseed: 0\nspace: {space}\noptimizer: {optimizer}\nevaluator: {evaluator}\n"
            f"objective: {{metric: value, direction: minimize}}\nbudget: {{evaluations: {evaluations}}}\n")


class Papercuts(Scratch):
    def listing(self):
        return sorted(os.listdir(self.dir))

    # 1. A misspelt key is named at its line and column, with the suggestion.
    def test_misspelt_plugin_key(self):
        cfg = self.write("cut.yaml", branin(space="{plugn: hpo, file: %s}" % BRANIN))
        before = self.listing()
        p = sieve("run", cfg, cwd=self.dir)
        # line 3 `space: {plugn: ...}`: the key starts at column 9.
        self.expect(p, 2, f"{cfg}:3:9: unknown key 'plugn' in 'space' (did you mean 'plugin'?)")
        self.assertNotIn("needs a 'plugin' key", p.stderr)
        self.assertEqual(self.listing(), before, "a refused config writes no store")
        # Every other map already rejects its unknown keys the same way.
        cfg = self.write("cut.yaml", branin().replace("budget: {evaluations", "budget: {evaluatons"))
        p = sieve("run", cfg, cwd=self.dir)
        self.expect(p, 2, f"{cfg}:7:10: unknown option 'evaluatons'", "(did you mean 'evaluations'?)")
        self.assertEqual(self.listing(), before)

    # 2. A misspelt objective metric is refused before the first trial, by
    # the metrics the evaluator declares; nothing is written.
    def test_misspelt_objective_metric(self):
        cfg = self.write("cut.yaml", branin().replace("{metric: value,", "{metric: valeu,"))
        before = self.listing()
        p = sieve("run", cfg, cwd=self.dir)
        self.expect(p, 2, f"{cfg}:6:21: evaluator 'function' does not report the objective metric 'valeu' "
                          "(did you mean 'value'?); it reports: value, regret")
        self.assertEqual(self.listing(), before, "a refused config writes no store")
        # The train evaluator declares val_acc only where a validation split exists.
        cfg = self.write("train.yaml", "name: t\nspace: {plugin: nb201, C: 4, N: 1, in_channels: 1, size: 28}\n"
                         "optimizer: {plugin: random}\nevaluator: {plugin: train, dataset: fashion-mnist, "
                         "train_limit: 200, validation: 0, test: false}\n"
                         "objective: {metric: val_acc, direction: maximize}\nbudget: {evaluations: 1}\n")
        before = self.listing()
        p = sieve("run", cfg, cwd=self.dir, timeout=120)
        self.expect(p, 2, f"{cfg}:5:21: evaluator 'train' does not report the objective metric 'val_acc'")
        self.assertNotIn("val_acc", p.stderr.split("it reports:")[1])
        self.assertEqual(self.listing(), before)
        # The proxy evaluator declares each score, its time, the ensemble's z-scores and `score`.
        p = sieve("run", os.path.join(ROOT, "configs", "nb201-proxy.yaml"), "--store", self.path("p.sieve"),
                  "--set", "objective.metric=scor", cwd=self.dir, timeout=120)
        self.expect(p, 2, "evaluator 'proxy' does not report the objective metric 'scor' (did you mean 'score'?); "
                          "it reports: naswot, naswot_ms, naswot_z, synflow, synflow_ms, synflow_z, score")
        self.assertEqual(self.listing(), before)

    # 3. A fraction of an epoch runs (one step at least): the default
    # min_epochs, which the user did not set, no longer refuses it.
    def test_train_tiny_epochs(self):
        p = sieve("train", "-q", "--arch", ARCH, "--set", "space.C=4", "--set", "space.N=1", "--train-limit", "200",
                  "--validation", "100", "--batch", "50", "--epochs", "0.01", "--set", "evaluator.test=false",
                  timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        out = json.loads(p.stdout)
        self.assertEqual(out["status"], "ok")
        self.assertEqual(out["epochs"], 0.01)
        # A min_epochs the user did write above epochs is still a contradiction.
        p = sieve("train", "-q", "--arch", ARCH, "--epochs", "0.01", "--set", "evaluator.min_epochs=0.5")
        self.expect(p, 2, "min_epochs 0.5 is more than epochs 0.01")

    # 4. Hyperband ranks each configuration at the highest fidelity it reached.
    def test_hyperband_summary_by_fidelity(self):
        cfg = self.write("cut.yaml", branin(
            optimizer="{plugin: hyperband, eta: 3}",
            evaluator="{plugin: function, function: branin, fidelity: {name: budget, min: 1, max: 9, "
                      "integer: true}, fidelity_bias: 20}", evaluations=30))
        p = sieve("run", "-q", cfg, cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("at the highest fidelity each configuration reached", p.stdout)
        lines = p.stdout[p.stdout.index("top "):].splitlines()
        self.assertEqual(lines[1].split()[:3], ["rank", "trial", "fidelity"])
        rows = [l.split() for l in lines[2:] if re.match(r"\s*\d+ ", l)]
        self.assertTrue(rows, p.stdout)
        fid = [float(r[2]) for r in rows]
        self.assertEqual(fid, sorted(fid, reverse=True), "higher fidelity ranks first")
        genotypes = [" ".join(r[4:]) for r in rows]  # rank trial fidelity value genotype...
        self.assertEqual(len(genotypes), len(set(genotypes)), "each configuration once")

    # 5. The run-yaml example writes under build/, not into the current folder.
    def test_run_yaml_example_writes_under_build(self):
        os.mkdir(self.path("build"))
        p = sieve("lua", os.path.join(ROOT, "examples", "lua", "run-yaml.lua"), cwd=self.dir, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.listing(), ["build"], "nothing in the current folder")
        stores = sorted(f for f in os.listdir(self.path("build")) if f.endswith(".sieve"))
        self.assertEqual(stores, ["nb201-evolution-seed1.sieve", "nb201-evolution-seed2.sieve"])

    # 6. Slow trials show seconds per trial, quick ones trials per second.
    def progress_line(self, evaluator):
        cfg = self.write("cut.yaml", branin(evaluator=evaluator, evaluations=2))
        if os.path.exists(self.path("cut.sieve")):
            os.remove(self.path("cut.sieve"))
        pid, fd = pty.fork()
        if pid == 0:
            os.chdir(self.dir)
            os.execv(SIEVE, [SIEVE, "run", cfg])
        out, deadline = b"", time.time() + 30
        while time.time() < deadline:
            r, _, _ = select.select([fd], [], [], 1)
            if r:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0, out)
        draws = [l for l in out.decode().split("\r") if l.startswith("\033[K[2/2]")]
        self.assertTrue(draws, out)
        return draws[-1]

    def test_progress_rate_reads_naturally(self):
        script = self.write("slow.sh", "#!/bin/sh\nsleep 1.2\necho '{\"value\": 1.5}'\n")
        os.chmod(script, 0o755)
        slow = self.progress_line("{plugin: command, argv: [%s]}" % script)
        self.assertRegex(slow, r"\| 1\.\d+ s/trial \|")
        self.assertNotIn("trials/s", slow)
        quick = self.progress_line("{plugin: function, function: branin}")
        self.assertRegex(quick, r"\| [\d.e+]+ trials/s \|")

    # 7. Numbers are written in the shortest text that reads back the same.
    def test_shortest_doubles(self):
        cfg = self.write("nb.yaml", "name: nb\nseed: 0\nspace: {plugin: nb201}\noptimizer: {plugin: random}\n"
                         f"evaluator: {{plugin: tabular, table: {NB201}, key: arch_str, "
                         "metrics: [cifar10_valid_acc]}\n"
                         "objective: {metric: cifar10_valid_acc, direction: maximize}\nbudget: {evaluations: 5}\n")
        p = sieve("run", "-q", cfg, cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        for fmt in ("json", "csv"):
            e = sieve("export", "--format", fmt, self.path("nb.sieve"), cwd=self.dir)
            self.assertEqual(e.returncode, 0, e.stderr)
            for number in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", e.stdout):
                self.assertEqual(number, repr(float(number)), f"{fmt}: {number}")
        t = sieve("train", "-q", "--arch", ARCH, "--set", "space.C=4", "--set", "space.N=1", "--train-limit", "200",
                  "--validation", "100", "--batch", "50", "--epochs", "1", "--set", "evaluator.test=false",
                  timeout=120)
        self.assertEqual(t.returncode, 0, t.stderr)
        for number in re.findall(r":(-?\d+\.\d+(?:e-?\d+)?)", t.stdout):
            self.assertEqual(number, repr(float(number)), t.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
