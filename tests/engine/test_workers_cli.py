#!/usr/bin/env python3
"""Parallel trainings through `sieve run`: an NB201 architecture and its
recipe (a compose space) trained on real Fashion-MNIST by the train
evaluator with workers: 2 give the trials of workers: 1 bit for bit (the
thread count per training fixed by threads_per_worker), and a SIGKILL in
the middle of a two-worker study loses nothing: --resume ends with the same
trials.  And tell_order: trial makes a model-based optimizer's study with
four workers the same in every run, whatever finishes first."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from test_cli import ROOT, Workdir, export_rows, sieve  # noqa: E402
import test_cli  # noqa: E402

HAVE_DATA = any(os.path.exists(os.path.join("/usr/share/datasets/fashion-mnist", f))
                for f in ("train-images-idx3-ubyte.gz", "train-images-idx3-ubyte"))

STUDY = """name: workers
seed: 4
space:
  plugin: compose
  parts:
    - {plugin: nb201, C: 4, N: 1, in_channels: 1, size: 28}
    - plugin: hpo
      parameters:
        lr: {type: float, low: 0.02, high: 0.3, log: true}
        momentum: {type: float, low: 0.5, high: 0.9}
optimizer: {plugin: random}
evaluator: {plugin: train, train_limit: 512, validation: 256, test: false, batch_size: 32, epochs: 1,
            threads_per_worker: 1}
objective: {metric: val_acc, direction: maximize}
pipeline: [dedupe]
budget: {evaluations: %(n)d}
workers: %(workers)d
tell_order: trial
"""
# What a trial computed; timings, memory and the worker's number differ run to run.
COMPARED = ("number", "status", "genotype", "val_acc", "train_loss", "train_acc", "epochs", "params", "hash",
            "cached_from")


def computed(rows):
    return [{k: r[k] for k in COMPARED} for r in rows]


@unittest.skipUnless(HAVE_DATA, "no Fashion-MNIST under /usr/share/datasets (dataset-fashion-mnist)")
class TestWorkers(Workdir):
    N = 6
    run_until = test_cli.TestKillResume.run_until

    def study(self, workers):
        return self.write_config(f"w{workers}.yaml", STUDY % {"n": self.N, "workers": workers})

    def test_two_workers_equal_one_and_survive_kill(self):
        ref = self.path("w1.sieve")
        self.run_until(self.study(1), ref, resume=False)
        reference = computed(export_rows(ref))
        self.assertEqual(len(reference), self.N)
        self.assertTrue(all(r["status"] == "ok" for r in reference), reference)
        # Six different recipes: six trials, none answered from another's result.
        self.assertEqual(len({r["hash"] for r in reference}), self.N)

        two = self.study(2)
        store = self.path("w2.sieve")
        self.run_until(two, store, resume=False)
        rows = export_rows(store, stable=False)
        self.assertEqual(computed(rows), reference)
        self.assertEqual({r["worker"] for r in rows}, {"0", "1"}, "the two workers did not both train")

        killed = self.path("w2-killed.sieve")
        self.run_until(two, killed, resume=False, kill_at=2)
        done = [r for r in computed(export_rows(killed)) if r["status"] != "pending"]
        self.assertGreaterEqual(len(done), 2, "a finished trial was lost")
        self.assertEqual(done, reference[:len(done)])
        self.run_until(two, killed, resume=True)
        self.assertEqual(computed(export_rows(killed)), reference)

    def test_more_threads_than_cores_is_warned_about(self):
        """Two workers of one more thread each than half the cores ask for more threads than there are: OpenMP's
        threads then wait on each other (a small network trained 140 times slower), and sieve says so, once."""
        cores = os.cpu_count()
        cfg = self.write_config("over.yaml", (STUDY % {"n": 2, "workers": 2}).replace(
            "threads_per_worker: 1", f"threads_per_worker: {cores // 2 + 1}").replace(
            "train_limit: 512, validation: 256", "train_limit: 64, validation: 32"))
        p = sieve("run", cfg, "--store", self.path("over.sieve"), "--quiet", check=0)
        self.assertEqual(p.stderr.count("training thread(s) at once"), 1, p.stderr)
        self.assertIn(f"{2 * (cores // 2 + 1)} training thread(s) at once (2 worker(s) x {cores // 2 + 1}) on "
                      f"{cores} cores", p.stderr)
        p = sieve("run", self.study(2), "--store", self.path("fit.sieve"), "--quiet", "--set", "budget.evaluations=1",
                  check=0)
        self.assertNotIn("training thread(s) at once", p.stderr)
        # One thread each already: the way out is fewer workers (it advised threads <= 1).
        many = self.write_config("many.yaml", (STUDY % {"n": cores + 1, "workers": cores + 1}).replace(
            "train_limit: 512, validation: 256", "train_limit: 64, validation: 32"))
        p = sieve("run", many, "--store", self.path("many.sieve"), "--quiet", check=0)
        self.assertIn(f"{cores + 1} training thread(s) at once ({cores + 1} worker(s) x 1) on {cores} cores", p.stderr)
        self.assertIn(f"(set workers to at most {cores})", p.stderr)

    def test_a_lua_space_trains_on_one_worker(self):
        """A Lua space builds its networks on its script's thread only: with workers: 2 the train evaluator
        failed every trial ("called from another thread"), and the run exited 0; it now runs one at a time."""
        cfg = self.write_config("lua.yaml", f"""name: lua-workers
seed: 3
space: {{plugin: lua, script: {ROOT}/search_spaces/nb201.lua, options: {{C: 4, N: 1, in_channels: 1, size: 28}}}}
optimizer: {{plugin: random}}
evaluator: {{plugin: train, train_limit: 64, validation: 32, test: false, epochs: 0.5, batch_size: 32,
            threads_per_worker: 1}}
objective: {{metric: val_acc, direction: maximize}}
budget: {{evaluations: 3}}
workers: 2
""")
        p = sieve("run", cfg, "--store", self.path("lua.sieve"), check=0)
        self.assertIn("space 'lua' runs in Lua, on one thread, and evaluator 'train' builds its networks: using 1 "
                      "worker, not 2", p.stdout + p.stderr)
        self.assertEqual([r["status"] for r in export_rows(self.path("lua.sieve"))], ["ok"] * 3)
        # The same as the architecture part of a composite space (the diff review found it failing there).
        with open(cfg) as f:
            text = f.read()
        lua_space = f"{{plugin: lua, script: {ROOT}/search_spaces/nb201.lua, options: {{C: 4, N: 1, in_channels: 1, size: 28}}}}"
        composed = text.replace(f"space: {lua_space}", "space: {plugin: compose, parts: [" + lua_space +
                                ", {plugin: hpo, parameters: {lr: {type: float, low: 0.01, high: 0.1}}}]}")
        self.assertNotEqual(composed, text)
        cfg2 = self.write_config("lua-compose.yaml", composed)
        p = sieve("run", cfg2, "--store", self.path("lua-compose.sieve"), check=0)
        self.assertIn("space 'lua' runs in Lua, on one thread", p.stdout + p.stderr)
        self.assertEqual([r["status"] for r in export_rows(self.path("lua-compose.sieve"))], ["ok"] * 3)


    def test_an_epochs_decision_under_a_fidelity_is_warned_about(self):
        """asha asks for each trial's epochs as its fidelity: a recipe decision 'epochs' then has no effect,
        though the optimizer goes on searching it; sieve says so, once."""
        cfg = self.write_config("fid.yaml", (STUDY % {"n": 3, "workers": 1}).replace(
            "momentum: {type: float, low: 0.5, high: 0.9}", "epochs: {type: float, low: 0.25, high: 1}").replace(
            "optimizer: {plugin: random}", "optimizer: {plugin: asha, eta: 2}").replace(
            "train_limit: 512, validation: 256", "train_limit: 64, validation: 32, min_epochs: 0.5"))
        p = sieve("run", cfg, "--store", self.path("fid.sieve"), "--quiet", check=0)
        self.assertEqual(p.stderr.count("the recipe decision 'epochs' has no effect"), 1, p.stderr)
        rows = export_rows(self.path("fid.sieve"))
        self.assertTrue(all(float(r["epochs"]) == float(r["fidelity"]) for r in rows), rows)


class TestRecipeErrors(Workdir):
    def test_unknown_recipe_decision(self):
        """Run from the config's folder with relative paths: the part's file
        resolves against the config, and the decision the train evaluator
        does not take is named at its line and column."""
        self.write_config("recipe.yaml", "parameters:\n  lr: {type: float, low: 0.01, high: 0.4}\n"
                                         "  lrate: {type: float, low: 0.01, high: 0.4}\n")
        self.write_config("bad.yaml", """space:
  plugin: compose
  parts:
    - {plugin: nb201, C: 4, N: 1, in_channels: 1, size: 28}
    - {plugin: hpo, file: recipe.yaml}
optimizer: {plugin: random}
evaluator: {plugin: train, train_limit: 256, validation: 0, test: false}
objective: {metric: train_acc}
budget: {evaluations: 1}
""")
        p = sieve("run", "bad.yaml", "--store", "bad.sieve", check=2, cwd=self.dir)
        self.assertRegex(p.stderr, r"recipe\.yaml:3:3: recipe decision 'lrate' is not an option the train "
                                   r"evaluator takes from a genotype \(did you mean 'lr'\?\)")


TPE = """name: ordered
seed: 2
space: {plugin: hpo, file: %(space)s}
optimizer: {plugin: tpe, n_startup: 4}
evaluator: {plugin: function, function: branin, delay: 0.01}
objective: {metric: value, direction: minimize}
budget: {evaluations: 40}
workers: 4
tell_order: trial
"""


class TestTellOrder(Workdir):
    def test_same_study_every_run(self):
        cfg = self.write_config("tpe.yaml", TPE % {"space": os.path.join(ROOT, "search_spaces", "branin.yaml")})
        studies = []
        for k in range(3):
            store = self.path(f"tpe{k}.sieve")
            sieve("run", cfg, "--store", store, "--quiet", check=0)
            studies.append(export_rows(store))
        self.assertEqual(len(studies[0]), 40)
        self.assertEqual(studies[1], studies[0])
        self.assertEqual(studies[2], studies[0])


if __name__ == "__main__":
    unittest.main(verbosity=2)
