#!/usr/bin/env python3
"""The train evaluator's faults through `sieve run` and `sieve final`, on a
400 + 100 image cut of real Fashion-MNIST: continuation states belong to
one training recipe (two studies sharing a state_dir never see each other's
states); a damaged state is dropped with a warning naming its file and the
configuration retrained to the same result; a recipe's batch size larger
than the training split fails that trial, not the study; and what the
evaluator's own options make impossible for every trial (a test split of
another shape, a batch size or validation split larger than the data) is a
config error at the option, before a store or a final is written."""
import gzip
import os
import re
import sqlite3
import struct
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from test_cli import Workdir, export_rows, sieve  # noqa: E402

SOURCE = "/usr/share/datasets/fashion-mnist"
HAVE_DATA = os.path.exists(os.path.join(SOURCE, "train-images-idx3-ubyte.gz"))

# 400 training images, 100 held out for validation: 300 train, 9 steps of 32 per epoch.
STUDY = """name: %(name)s
space: {plugin: nb201, C: 4, N: 1, in_channels: 1, size: 28}
optimizer: {plugin: hyperband, eta: 2}
evaluator: {plugin: train, dataset: fashion-mnist, data_dir: %(data)s, validation: 100, epochs: 1, min_epochs: 0.25,
            batch_size: 32, threads: 1, continuation: true, state_dir: %(states)s%(extra)s}
objective: {metric: val_acc, direction: maximize}
budget: {evaluations: %(n)d}
"""
RECIPE = """name: recipe
seed: 1
space: {plugin: compose, parts: [{plugin: nb201, C: 4, N: 1, in_channels: 1, size: 28},
                                  {plugin: hpo, parameters: {batch_size: ["16", "512"]}}]}
optimizer: {plugin: random}
evaluator: {plugin: train, dataset: fashion-mnist, data_dir: %(data)s, validation: 100, test: false, epochs: 0.25,
            threads: 1}
objective: {metric: val_acc, direction: maximize}
budget: {evaluations: 6}
"""
# What a trial computed; timings, memory and the worker differ run to run.
COMPUTED = ("number", "status", "genotype", "fidelity", "val_acc", "test_acc", "train_loss", "train_acc", "epochs")


def write_idx(folder, images, labels, n_train, n_test, test_side=28):
    """IDX files of the first n_train training and n_test test images;
    test_side < 28 keeps the top left corner of each test image."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "train-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n_train, 28, 28) + images["train"][16:16 + n_train * 784])
    with open(os.path.join(folder, "train-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 0x801, n_train) + labels["train"][8:8 + n_train])
    test = images["t10k"][16:16 + n_test * 784]
    cut = b"".join(test[i * 784 + r * 28:i * 784 + r * 28 + test_side] for i in range(n_test) for r in range(test_side))
    with open(os.path.join(folder, "t10k-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n_test, test_side, test_side) + cut)
    with open(os.path.join(folder, "t10k-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 0x801, n_test) + labels["t10k"][8:8 + n_test])


def computed(rows):
    return [{k: r[k] for k in COMPUTED} for r in rows]


@unittest.skipUnless(HAVE_DATA, "no Fashion-MNIST under /usr/share/datasets (dataset-fashion-mnist)")
class TestTrainFaults(Workdir):
    @classmethod
    def setUpClass(cls):
        def read(name):
            with gzip.open(os.path.join(SOURCE, name)) as f:
                return f.read()
        cls.images = {s: read(f"{s}-images-idx3-ubyte.gz") for s in ("train", "t10k")}
        cls.labels = {s: read(f"{s}-labels-idx1-ubyte.gz") for s in ("train", "t10k")}

    def setUp(self):
        super().setUp()
        self.data = self.path("small")
        write_idx(self.data, self.images, self.labels, 400, 100)

    def study(self, name, states, n=3, extra="", epochs=1):
        text = STUDY % {"name": name, "data": self.data, "states": self.path(states), "n": n, "extra": extra}
        return self.write(name + ".yaml", text.replace("epochs: 1,", f"epochs: {epochs},"))

    def run_study(self, cfg, *args, check=0):
        store = cfg[:-len(".yaml")] + ".sieve"
        p = sieve("run", cfg, "--store", store, "--quiet", *args, check=check)
        return store, p

    def test_states_belong_to_their_recipe(self):
        """A second study in the same state_dir with another lr gets the
        results of a study alone, not the first one's states; one with
        another schedule runs; the first study's states stay."""
        first, _ = self.run_study(self.study("first", "states"))
        kept = set(os.listdir(self.path("states")))
        self.assertEqual(len(kept), 3, "one state per configuration below the full fidelity")
        other, _ = self.run_study(self.study("other", "states", extra=", lr: 0.05"))
        alone, _ = self.run_study(self.study("alone", "alone-states", extra=", lr: 0.05"))
        self.assertNotEqual(computed(export_rows(first)), computed(export_rows(alone)), "lr changes nothing here")
        self.assertEqual(computed(export_rows(other)), computed(export_rows(alone)))
        # Each trained what its fidelity asks: 3 of 9 steps, nothing taken from the first study.
        self.assertEqual([float(r["epochs_run"]) for r in export_rows(other)], [3 / 9] * 3)
        self.assertTrue(kept <= set(os.listdir(self.path("states"))), "the first study's states were replaced")
        # Another schedule (2 epochs: 18 steps, where a state of the first has 9) on the same
        # folder: a study of its own, not an error that stops it.
        longer, _ = self.run_study(self.study("longer", "states", epochs=2))
        rows = export_rows(longer)
        self.assertEqual([(r["status"], r["fidelity"]) for r in rows], [("ok", "0.25")] * 3)
        self.assertEqual(rows[0]["genotype"], export_rows(first)[0]["genotype"], "not the same configuration")
        # Promotions of the first study still continue from its own states.
        self.run_study(self.study("first", "states", n=6), "--resume")
        promoted = export_rows(first)[3:]
        self.assertEqual([float(r["fidelity"]) for r in promoted[1:]], [0.5, 0.5])
        for r in promoted[1:]:
            self.assertLess(float(r["epochs_run"]), 0.5, r)

    def test_damaged_state_is_retrained(self):
        cfg = self.study("damaged", "states")
        store, _ = self.run_study(cfg)
        ref, _ = self.run_study(self.study("ref", "ref-states"))
        self.run_study(self.study("ref", "ref-states", n=6), "--resume")
        files = sorted(os.listdir(self.path("states")))
        for name in files:
            os.truncate(os.path.join(self.path("states"), name), 100)
        _, p = self.run_study(self.study("damaged", "states", n=6), "--resume")
        dropped = re.findall(r"warning: dropped the training state (\S+) \(it is damaged", p.stderr)
        self.assertTrue(dropped, p.stderr)
        for path in dropped:
            self.assertIn(os.path.basename(path), files)
        # A lost state costs a retraining, never a different result.
        self.assertEqual(computed(export_rows(store)), computed(export_rows(ref)))
        promoted = [r for r in export_rows(store) if float(r["fidelity"]) == 0.5]
        self.assertTrue(promoted)
        for r in promoted:
            self.assertEqual(float(r["epochs_run"]), 5 / 9, r)

    def test_state_of_another_training_is_not_used(self):
        """State files renamed to each other's keys (what a copy between
        folders can do) are another training's: dropped, and retrained to the
        result of a study that kept its own."""
        store, _ = self.run_study(self.study("swapped", "states"))
        ref, _ = self.run_study(self.study("ref", "ref-states"))
        self.run_study(self.study("ref", "ref-states", n=6), "--resume")
        names = sorted(os.listdir(self.path("states")))
        paths = [os.path.join(self.path("states"), n) for n in names]
        contents = []
        for path in paths:
            with open(path, "rb") as f:
                contents.append(f.read())
        for path, content in zip(paths, contents[1:] + contents[:1]):
            with open(path, "wb") as f:
                f.write(content)
        _, p = self.run_study(self.study("swapped", "states", n=6), "--resume")
        self.assertRegex(p.stderr, r"warning: dropped the training state \S+ \(it is damaged, or another training's\)")
        self.assertEqual(computed(export_rows(store)), computed(export_rows(ref)))

    def test_recipe_batch_larger_than_data_fails_its_trial(self):
        cfg = self.write("recipe.yaml", RECIPE % {"data": self.data})
        store, _ = self.run_study(cfg)
        rows = export_rows(store)
        self.assertEqual(len(rows), 6)
        big = [r for r in rows if r["genotype"].endswith("batch_size=512")]
        small = [r for r in rows if r["genotype"].endswith("batch_size=16")]
        self.assertTrue(big and small, rows)
        for r in big:
            self.assertEqual(r["status"], "failed")
            self.assertIn("batch size 512 needs at least that many training examples", r["reason"])
            self.assertIn("has 300", r["reason"])
        self.assertTrue(all(r["status"] == "ok" for r in small), small)

    def assert_refused_at(self, cfg, option, value, message):
        with open(cfg) as f:
            text = f.read()
        store = cfg[:-len(".yaml")] + ".sieve"
        p = sieve("run", cfg, "--store", store, "--quiet", check=2)
        line = next(i for i, l in enumerate(text.splitlines(), 1) if f"{option}: {value}" in l)
        col = text.splitlines()[line - 1].index(f"{option}: {value}") + len(option) + 3
        self.assertIn(f"{cfg}:{line}:{col}: ", p.stderr)
        self.assertIn(message, p.stderr)
        self.assertFalse(os.path.exists(store), "refused before the store is written")

    def test_impossible_options_are_config_errors(self):
        odd = self.path("odd")
        write_idx(odd, self.images, self.labels, 400, 100, test_side=14)
        cfg = self.write("odd.yaml", (STUDY % {"name": "odd", "data": odd, "states": self.path("s"), "n": 1,
                                               "extra": ""}))
        self.assert_refused_at(cfg, "data_dir", odd, "the test split of dataset 'fashion-mnist' is 1x14x14 per "
                                                     "example with 10 classes, but its training split is 1x28x28")
        cfg = self.write("batch.yaml", (STUDY % {"name": "b", "data": self.data, "states": self.path("s"), "n": 1,
                                                 "extra": ""}).replace("batch_size: 32", "batch_size: 301"))
        self.assert_refused_at(cfg, "batch_size", 301, "batch_size 301 needs at least that many training examples, "
                                                       "but the training split of dataset 'fashion-mnist' has 300")
        cfg = self.write("val.yaml", (STUDY % {"name": "v", "data": self.data, "states": self.path("s"), "n": 1,
                                               "extra": ""}).replace("validation: 100", "validation: 400"))
        self.assert_refused_at(cfg, "validation", 400, "validation 400 must be smaller than the 400 training examples")

    def test_refused_final_is_not_left_pending(self):
        store, _ = self.run_study(self.study("final", "states", n=1))
        p = sieve("final", store, "--trial", "0", "--set", "evaluator.batch_size=500", "--quiet", check=2)
        self.assertIn("sieve: --set evaluator.batch_size=500: batch_size 500 needs at least", p.stderr)
        db = sqlite3.connect(store)
        try:
            self.assertEqual(db.execute("select count(*) from finals").fetchone()[0], 0)
        finally:
            db.close()
        summary = sieve("export", store, "--summary", check=0).stdout.splitlines()
        self.assertEqual(dict(zip(summary[0].split(","), summary[1].split(",")))["finals_pending"], "0")
        # A final an earlier version left pending with these refused settings is failed with the reason.
        db = sqlite3.connect(store)
        try:
            with db:
                db.execute("insert into finals (number, trial, genotype, status, settings) select 0, 0, genotype, "
                           "'pending', 'evaluator.batch_size=500' from trials where number = 0")
            sieve("final", store, "--trial", "0", "--set", "evaluator.batch_size=500", "--quiet", check=2)
            status, reason = db.execute("select status, reason from finals where number = 0").fetchone()
        finally:
            db.close()
        self.assertEqual(status, "failed")
        self.assertIn("batch_size 500 needs at least that many training examples", reason)

    def test_final_pending_at_a_missing_data_dir_trains_once_it_is_back(self):
        """A final a killed run left pending with --set evaluator.data_dir at
        a folder that is gone for now stays pending (the folder may come
        back), and trains when it is back."""
        store, _ = self.run_study(self.study("back", "states", n=1))
        later = self.path("later")
        db = sqlite3.connect(store)
        try:
            with db:
                db.execute("insert into finals (number, trial, genotype, status, settings) select 0, 0, genotype, "
                           "'pending', ? from trials where number = 0", (f"evaluator.data_dir={later}",))
        finally:
            db.close()
        p = sieve("final", store, "--trial", "0", "--set", f"evaluator.data_dir={later}", "--quiet", check=1)
        self.assertIn(f"sieve: --set evaluator.data_dir={later}: ", p.stderr)
        self.assertIn(f"no train images in {later}", p.stderr)
        db = sqlite3.connect(store)
        try:
            self.assertEqual(db.execute("select status from finals where number = 0").fetchone()[0], "pending")
        finally:
            db.close()
        write_idx(later, self.images, self.labels, 400, 100)
        sieve("final", store, "--trial", "0", "--set", f"evaluator.data_dir={later}", "--quiet", check=0)
        db = sqlite3.connect(store)
        try:
            rows = db.execute("select number, status from finals").fetchall()
        finally:
            db.close()
        self.assertEqual(rows, [(0, "ok")], "the pending final did not train (or trained twice)")

    def test_device_auto_keys_as_the_device_it_resolved_to(self):
        """device: auto resolved to the CPU keys its states as device: cpu
        does (and a GPU's states are never continued on the CPU)."""
        _, auto = self.run_study(self.study("auto", "auto-states", n=1, extra=", device: auto"))
        if "device auto: cuda" in auto.stderr:
            self.skipTest("auto resolves to a GPU here")
        self.run_study(self.study("cpu", "cpu-states", n=1, extra=", device: cpu"))
        names = sorted(os.listdir(self.path("auto-states")))
        self.assertTrue(names, "no state kept: the test shows nothing")
        self.assertEqual(names, sorted(os.listdir(self.path("cpu-states"))))

    def test_state_key_tells_close_attributes_apart(self):
        """Two nb101 studies whose bn_momentum differ past the 6 digits a
        graph dump writes train different networks: their states key apart."""
        names = []
        for i, m in enumerate(("0.003", "0.0030000001")):
            text = (STUDY % {"name": f"m{i}", "data": self.data, "states": self.path(f"m{i}-states"), "n": 1,
                             "extra": ""}).replace(
                "space: {plugin: nb201, C: 4, N: 1, in_channels: 1, size: 28}",
                f"space: {{plugin: nb101, stem_channels: 5, stacks: 1, cells: 1, in_channels: 1, size: 28, "
                f"bn_momentum: {m}}}")
            self.run_study(self.write(f"m{i}.yaml", text))
            names.append(os.listdir(self.path(f"m{i}-states")))
        self.assertEqual([len(n) for n in names], [1, 1], names)
        self.assertNotEqual(names[0], names[1])

    def test_missing_absolute_csv_is_named_at_dataset(self):
        """A csv: dataset at an absolute path ignores data_dir: its missing
        file is named at dataset (a file error, exit 1); a relative one at
        data_dir, where it was looked for."""
        for name, at in ((self.path("gone.csv"), "dataset"), ("gone.csv", "data_dir")):
            # test: false, or the missing test split of a CSV is refused first
            text = (STUDY % {"name": "csv", "data": self.data, "states": self.path("s"), "n": 1,
                             "extra": ", test: false"}).replace("dataset: fashion-mnist", f"dataset: csv:{name}")
            cfg = self.write("csv.yaml", text)
            p = sieve("run", cfg, "--store", self.path("csv.sieve"), "--quiet", check=1)
            line = next(i for i, l in enumerate(text.splitlines(), 1) if f"{at}: " in l)
            col = text.splitlines()[line - 1].index(f"{at}: ") + len(at) + 3
            self.assertIn(f"{cfg}:{line}:{col}: ", p.stderr)
            self.assertIn("gone.csv", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
