#!/usr/bin/python3
"""sieve model and sieve final end to end on real Fashion-MNIST (tiny
networks, small subsets): kept weights, sieve model eval's accuracy equal to
the trial's stored test accuracy, bad input refused with the file or trial
named and the store unchanged, sieve final killed with SIGKILL and resumed,
finals kept apart from the trials in export."""
import csv
import hashlib
import io
import json
import os
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile
import unittest

SIEVE = os.environ["SIEVE_EXE"]
DATA = os.environ.get("SIEVE_DATA_DIR", "/usr/share/datasets")
if not os.path.isdir(os.path.join(DATA, "fashion-mnist")):
    print("SKIP: Fashion-MNIST (Debian's dataset-fashion-mnist) is not installed", file=sys.stderr)
    sys.exit(77)

CONFIG = """name: tiny
seed: 1
space: {plugin: nb201, C: 4, N: 1, in_channels: 1, size: 28}
optimizer: {plugin: random}
evaluator: {plugin: train, dataset: fashion-mnist, train_limit: 512, validation: 256, epochs: 0.25,
            batch_size: 64, lr: 0.05, keep_weights: top, keep_top: 2, threads: 1}
objective: {metric: val_acc, direction: maximize}
budget: {evaluations: 3}
"""


def sieve(*args, check=None, timeout=300, cwd=None, env=None):
    p = subprocess.run([SIEVE, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)
    if check is not None and p.returncode != check:
        raise AssertionError(f"sieve {' '.join(args)} exited {p.returncode}, wanted {check}\n"
                             f"stdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}")
    return p


def digest(path):
    """The store's content as SQLite reads it (the WAL included)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    h = hashlib.sha256()
    for table in ("trials", "metrics", "weights", "finals", "final_metrics", "meta"):
        for row in db.execute(f"SELECT * FROM {table} ORDER BY 1, 2"):
            h.update(repr(row).encode())
    db.close()
    return h.hexdigest()


class ModelCli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory(prefix="sieve-model-")
        cls.dir = cls._tmp.name
        with open(os.path.join(cls.dir, "tiny.yaml"), "w") as f:
            f.write(CONFIG)
        sieve("run", "tiny.yaml", "--quiet", check=0, cwd=cls.dir)
        cls.store = os.path.join(cls.dir, "tiny.sieve")
        rows = list(csv.DictReader(io.StringIO(sieve("export", cls.store, check=0).stdout)))
        cls.rows = {int(r["number"]): r for r in rows}
        db = sqlite3.connect(cls.store)
        cls.kept = [n for (n,) in db.execute("SELECT number FROM weights WHERE owner = 'trial' ORDER BY number")]
        db.close()

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def test_keep_top(self):
        # keep_top: 2 of 3 trials, the two best by val_acc.
        self.assertEqual(len(self.kept), 2)
        by_acc = sorted(self.rows, key=lambda n: (-float(self.rows[n]["val_acc"]), n))
        self.assertEqual(sorted(self.kept), sorted(by_acc[:2]))

    def test_eval_equals_stored_test_accuracy(self):
        trial = self.kept[0]
        for ext in ("safetensors", "onnx"):
            out = self.path(f"t{trial}.{ext}")
            sieve("model", "export", self.store, "--trial", str(trial), "-o", out, check=0)
            line = json.loads(sieve("model", "eval", out, "--dataset", "fashion-mnist", "--threads", "1",
                                    check=0).stdout)
            self.assertEqual(line["test_acc"], float(self.rows[trial]["test_acc"]), ext)
            self.assertEqual(line["examples"], 10000)
            self.assertGreater(line["latency_ms"], 0)
        info = sieve("model", "info", self.path(f"t{trial}.onnx"), check=0).stdout
        self.assertIn(f"genotype: {self.rows[trial]['genotype']}", info)
        self.assertIn(f"parameters: {int(float(self.rows[trial]['params']))}", info)
        self.assertIn(f"macs: {int(float(self.rows[trial]['macs']))}", info)

    def test_eval_refuses_a_network_that_does_not_fit_the_dataset(self):
        # The exported default nb201 takes 3x32x32 images (it read past Fashion-MNIST's 1x28x28 buffer:
        # a crash), and the trained weights exported at size 32 or for 3 classes gave an accuracy
        # that meant nothing, exit 0.
        arch = self.rows[self.kept[0]]["genotype"]
        trained = self.path("fit.safetensors")
        sieve("model", "export", self.store, "--trial", str(self.kept[0]), "-o", trained, check=0)
        tiny = ["--set", "space.C=4", "--set", "space.N=1", "--set", "space.in_channels=1"]
        for name, sets, weights in (("default.onnx", [], []),
                                    ("size32.onnx", tiny + ["--set", "space.size=32"], ["--weights", trained]),
                                    ("classes3.onnx", tiny + ["--set", "space.size=28", "--set", "space.classes=3"],
                                     [])):
            sieve("model", "export", "--space", "nb201", "--arch", arch, *sets, *weights, "-o", self.path(name),
                  check=0)
            p = sieve("model", "eval", self.path(name), "--dataset", "fashion-mnist", "--threads", "1")
            self.assertEqual(p.returncode, 2, name + p.stderr)
            self.assertIn(self.path(name), p.stderr)
            self.assertIn("and fashion-mnist/test has 1x28x28 images of 10 classes", p.stderr)
            self.assertEqual(p.stdout, "", name)

    def test_lua_space_weights_build_again(self):
        # A Lua space's options in a file's metadata: the script's own options (a node, written as its
        # YAML text) and the options left unset (null) read back, so the file builds its network again.
        # The script is named relative to the config, in a folder of its own, and the store is read
        # from another working folder: relative paths are the config's (meta config_dir).
        # The script requires a module beside it as it loads, and another below its folder as it builds:
        # the file carries both, and builds its network and runs a forward pass after the config's
        # folder is deleted (it carried the script alone, and require found neither).
        os.makedirs(self.path(os.path.join("cfg", "lib")))
        with open(os.path.join(os.environ["SIEVE_SOURCE_ROOT"], "search_spaces", "nb201.lua")) as f:
            body = f.read()
        # A third through lua.path (lib, relative to the config): sieve model export and sieve final of the
        # store, kept apart from the config, looked for it beside the store; the file named it relative,
        # and looked for it in the reader's working folder.
        modules = {"helper.lua": "return {x = 1}\n", os.path.join("lib", "late.lua"): "return {y = 2}\n",
                   os.path.join("lib", "viapath.lua"): "return {z = 3}\n"}
        for name, text in modules.items():
            with open(self.path(os.path.join("cfg", name)), "w") as f:
                f.write(text)
        with open(self.path(os.path.join("cfg", "space.lua")), "w") as f:
            f.write('assert(require("helper").x == 1)\nassert(require("viapath").z == 3)\n'
                    'local register = sieve.register_space\n'
                    'sieve.register_space = function(def)\n  local build = def.build\n'
                    '  def.build = function(self, g) assert(require("lib.late").y == 2) return build(self, g) end\n'
                    '  return register(def)\nend\n' + body)
        with open(self.path(os.path.join("cfg", "lua.yaml")), "w") as f:
            f.write(CONFIG.replace("name: tiny", "name: lua").replace(
                "space: {plugin: nb201, C: 4, N: 1, in_channels: 1, size: 28}",
                "space: {plugin: lua, script: space.lua, lua: {path: [lib]}, "
                "options: {C: 4, N: 1, in_channels: 1, size: 28}}")
                .replace("evaluations: 3", "evaluations: 1").replace("train_limit: 512", "train_limit: 320"))
        store = self.path("lua.sieve")
        sieve("run", os.path.join("cfg", "lua.yaml"), "--store", store, "--quiet", check=0, cwd=self.dir)
        row = next(csv.DictReader(io.StringIO(sieve("export", store, check=0).stdout)))
        out = self.path("lua0.safetensors")
        sieve("model", "export", store, "--trial", "0", "-o", out, check=0, cwd="/")
        info = sieve("model", "info", out, check=0).stdout
        self.assertIn(f"genotype: {row['genotype']}", info)
        self.assertIn(f"parameters: {int(float(row['params']))}", info)
        cfg = os.path.realpath(self.path("cfg"))
        self.assertIn('"lua":{"path":[%s]}' % json.dumps(os.path.join(cfg, "lib")), info)
        for name, text in modules.items():
            self.assertIn(f"space_file: {os.path.join(cfg, name)} ({len(text)} bytes)", info)
        x = self.path("lua-x.npy")
        with open(x, "wb") as f:  # numpy's .npy format 1.0: two 1x28x28 images
            header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1, 28, 28), }"
            header += " " * (-(len(header) + 11) % 64) + "\n"
            f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
            f.write(struct.pack("<1568f", *(i % 97 / 97 - 0.5 for i in range(1568))))
        y = [self.path("lua-y0.npy"), self.path("lua-y1.npy")]
        sieve("model", "eval", out, "--input", x, "--output", y[0], check=0)
        shutil.rmtree(cfg)
        tmp = self.path("lua-tmp")
        os.mkdir(tmp)
        env = dict(os.environ, TMPDIR=tmp)
        self.assertIn(f"genotype: {row['genotype']}", sieve("model", "info", out, check=0, env=env).stdout)
        sieve("model", "eval", out, "--input", x, "--output", y[1], check=0, env=env)
        with open(y[0], "rb") as f0, open(y[1], "rb") as f1:
            self.assertEqual(f0.read(), f1.read())
        self.assertEqual(os.listdir(tmp), [])

    def test_lua_path_text_written_absolute(self):
        # lua.path written as one text ("path: lib") is one folder, relative to the config's: the file
        # writes it absolute as a list, as it does a list (it wrote "lib", which the reader then looked
        # for in its own working folder).
        folder = self.path("lpath")
        os.makedirs(os.path.join(folder, "lib"))
        script = os.path.join(os.environ["SIEVE_SOURCE_ROOT"], "search_spaces", "nb201.lua")
        with open(os.path.join(folder, "lpath.yaml"), "w") as f:
            f.write(CONFIG.replace("name: tiny", "name: lpath").replace(
                "space: {plugin: nb201, C: 4, N: 1, in_channels: 1, size: 28}",
                f"space: {{plugin: lua, script: {script}, lua: {{path: lib}}, "
                "options: {C: 4, N: 1, in_channels: 1, size: 28}}")
                .replace("evaluations: 3", "evaluations: 1").replace("train_limit: 512", "train_limit: 320"))
        store = self.path("lpath.sieve")
        sieve("run", os.path.join("lpath", "lpath.yaml"), "--store", store, "--quiet", check=0, cwd=self.dir)
        out = self.path("lpath.safetensors")
        sieve("model", "export", store, "--trial", "0", "-o", out, check=0, cwd="/")
        info = sieve("model", "info", out, check=0).stdout
        self.assertIn('"lua":{"path":[%s]}' % json.dumps(os.path.join(os.path.realpath(folder), "lib")), info)

    def test_compose_recipe_file_travels(self):
        # A composite space whose recipe part is a file named relative to the config, the store kept in
        # another folder: `sieve final` and `sieve model export` from a third folder read the recipe
        # beside the config (they looked beside the store, then in the working folder); the model file
        # names it by its absolute path and carries its text (metadata space_files), so it builds its
        # network again after the recipe is edited and after the config's folder is deleted.
        cfg = self.path("recipe-cfg")
        os.mkdir(cfg)
        recipe = "parameters:\n  lr: {type: float, low: 0.01, high: 0.1, log: true}\n"
        with open(os.path.join(cfg, "recipe.yaml"), "w") as f:
            f.write(recipe)
        with open(os.path.join(cfg, "compose.yaml"), "w") as f:
            f.write(CONFIG.replace("name: tiny", "name: compose").replace(
                "space: {plugin: nb201, C: 4, N: 1, in_channels: 1, size: 28}",
                "space: {plugin: compose, parts: [{plugin: nb201, C: 4, N: 1, in_channels: 1, size: 28}, "
                "{plugin: hpo, file: recipe.yaml}]}")
                .replace("evaluations: 3", "evaluations: 1").replace("train_limit: 512", "train_limit: 320"))
        store = self.path("compose.sieve")
        sieve("run", os.path.join("recipe-cfg", "compose.yaml"), "--store", store, "--quiet", check=0, cwd=self.dir)
        sieve("final", store, "--trial", "0", "--epochs", "0.1", "-q", check=0, cwd="/")
        row = next(csv.DictReader(io.StringIO(sieve("export", store, check=0).stdout)))
        tmp = self.path("tmp")
        os.mkdir(tmp)
        env = dict(os.environ, TMPDIR=tmp)
        outs = [self.path("compose0.safetensors"), self.path("compose0.onnx"), self.path("composef.safetensors")]
        for out, what in zip(outs, (["--trial", "0"], ["--trial", "0"], ["--final", "0"])):
            sieve("model", "export", store, *what, "-o", out, check=0, cwd="/")
        with open(outs[0], "rb") as f:
            size = int.from_bytes(f.read(8), "little")
            meta = json.loads(f.read(size))["__metadata__"]
        path = os.path.realpath(os.path.join(cfg, "recipe.yaml"))
        self.assertEqual(json.loads(meta["space_options"])["parts"][1], {"plugin": "hpo", "file": path})
        self.assertEqual(json.loads(meta["space_files"]), {path: recipe})
        # The recipe edited so that the trial's lr is outside it, then deleted with its folder: the
        # files build the network they hold from the text they carry, and leave no copy behind.
        with open(os.path.join(cfg, "recipe.yaml"), "w") as f:
            f.write(recipe.replace("low: 0.01, high: 0.1", "low: 0.5, high: 0.9"))
        for step in ("edited", "deleted"):
            for out in outs:
                info = sieve("model", "info", out, check=0, cwd=tmp, env=env).stdout
                self.assertIn(f"genotype: {row['genotype']}", info, (step, out))
                self.assertIn(f"parameters: {int(float(row['params']))}", info, (step, out))
                self.assertIn(f"space_file: {path} ({len(recipe)} bytes)", info, (step, out))
            if step == "edited":
                shutil.rmtree(cfg)
        self.assertEqual(os.listdir(tmp), [])

    def copy_store(self, name, *statements):
        """A copy of the class's store (the other tests see the search alone), statements (SQL, args) run on it."""
        store = self.path(name)
        src = sqlite3.connect(self.store)
        dst = sqlite3.connect(store)
        src.backup(dst)
        src.close()
        for sql, args in statements:
            dst.execute(sql, args)
        dst.commit()
        dst.close()
        return store

    def rewrite_meta(self, src, dst, change):
        """dst: src's safetensors file with its metadata strings changed by change(meta)."""
        with open(src, "rb") as f:
            size = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(size))
            data = f.read()
        change(header["__metadata__"])
        text = json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        with open(dst, "wb") as f:
            f.write(len(text).to_bytes(8, "little") + text + data)

    def test_bad_metadata_names_the_file(self):
        # A model file whose metadata names no space plugin, or holds a genotype its space cannot
        # read, is refused naming the file and the key (it said "no space plugin named 'x'" alone,
        # as if the command line had named it; found by fuzzing `sieve model info`).
        arch = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"
        out = self.path("meta.safetensors")
        sieve("model", "export", "--space", "nb201", "--set", "space.C=2", "--set", "space.N=1", "--arch", arch,
              "-o", out, check=0)
        for key, value, says in [("space", "3x99999x99999", "no space plugin named '3x99999x99999'"),
                                 ("genotype", "|nor_conv_3x3~0|+|bogus~0|", "unknown operation 'bogus'")]:
            bad = self.path(f"meta-{key}.safetensors")
            self.rewrite_meta(out, bad, lambda meta: meta.update({key: value}))
            p = sieve("model", "info", bad, check=1)
            self.assertIn(f"sieve: {bad} (metadata {key}): ", p.stderr)
            self.assertIn(says, p.stderr)

    def test_one_file_read_by_two_parts(self):
        # Two Lua parts of a composite space from one script with other options: the model file
        # carries the script once (it carried it twice, under one JSON key, and could not be read
        # back: "duplicate key"); a file an older sieve wrote so still reads, while the same key with
        # another text is refused where it is.
        folder = self.path("two-parts")
        os.mkdir(folder)
        script = os.path.join(folder, "pre.lua")
        with open(script, "w") as f:
            f.write('sieve.register_space{\n  name = "pre",\n  options = {prefix = {type = "string", default = "a"}},\n'
                    '  create = function(self, b) b:float(self.options.prefix .. "_lr", 0.01, 0.1) end,\n}\n')
        with open(script) as f:
            text = f.read()
        arch = self.rows[self.kept[0]]["genotype"] + ";a_lr=0.05;b_lr=0.05"
        parts = ("space.parts=[{plugin: nb201, C: 4, N: 1, in_channels: 1, size: 28}, "
                 f"{{plugin: lua, script: {script}, options: {{prefix: a}}}}, "
                 f"{{plugin: lua, script: {script}, options: {{prefix: b}}}}]")
        out = self.path("two-parts.safetensors")
        sieve("model", "export", "--space", "compose", "--set", parts, "--arch", arch, "-o", out, check=0)
        with open(out, "rb") as f:
            size = int.from_bytes(f.read(8), "little")
            files = f.read(size).decode()
        files = json.loads(json.loads(files)["__metadata__"]["space_files"], object_pairs_hook=list)
        self.assertEqual(files, [(os.path.realpath(script), text)])
        self.assertIn(f"genotype: {arch}", sieve("model", "info", out, check=0).stdout)
        twice = json.dumps({script: text})[:-1] + "," + json.dumps({script: text})[1:]
        old = self.path("two-parts-old.safetensors")
        self.rewrite_meta(out, old, lambda meta: meta.update(space_files=twice))
        info = sieve("model", "info", old, check=0).stdout
        self.assertIn(f"genotype: {arch}", info)
        # ... and lists the file, once (it listed none: its own parse refused the repeated key).
        self.assertEqual([l for l in info.splitlines() if l.startswith("space_file: ")],
                         [f"space_file: {script} ({len(text.encode())} bytes)"])
        other = json.dumps({script: text})[:-1] + "," + json.dumps({script: text + "-- edited\n"})[1:]
        bad = self.path("two-parts-bad.safetensors")
        self.rewrite_meta(out, bad, lambda meta: meta.update(space_files=other))
        p = sieve("model", "info", bad)
        self.assertIn(p.returncode, (1, 2))
        self.assertIn("metadata space_files", p.stderr)
        self.assertIn("again with another value", p.stderr)

    def test_edited_lua_script_requires_beside_it(self):
        # A Lua space whose script requires a module beside it, edited after the export: the file
        # builds from the script's text it carries, copied away, and require still finds the module
        # in the script's folder (it did not, and the file could not be read).
        folder = self.path("req")
        os.mkdir(folder)
        with open(os.path.join(os.environ["SIEVE_SOURCE_ROOT"], "search_spaces", "nb201.lua")) as f:
            body = f.read()
        script = os.path.join(folder, "req.lua")
        with open(script, "w") as f:
            f.write('local helper = require("helper")\nassert(helper.x == 1)\n' + body)
        with open(os.path.join(folder, "helper.lua"), "w") as f:
            f.write("return {x = 1}\n")
        arch = self.rows[self.kept[0]]["genotype"]
        out = self.path("req.safetensors")
        sieve("model", "export", "--space", "lua", "--set", f"space.script={script}",
              "--set", "space.options={C: 4, N: 1, in_channels: 1, size: 28}", "--arch", arch, "-o", out, check=0)
        with open(script, "a") as f:
            f.write("-- edited after the export\n")
        tmp = self.path("req-tmp")
        os.mkdir(tmp)
        info = sieve("model", "info", out, check=0, env=dict(os.environ, TMPDIR=tmp)).stdout
        self.assertIn(f"genotype: {arch}", info)
        self.assertEqual(os.listdir(tmp), [])
        # The module travels in the file too: the folder deleted, the file still builds.
        shutil.rmtree(folder)
        info = sieve("model", "info", out, check=0, env=dict(os.environ, TMPDIR=tmp)).stdout
        self.assertIn(f"genotype: {arch}", info)
        self.assertEqual(os.listdir(tmp), [])

    def test_hostile_space_files(self):
        # space_files comes from whoever wrote the file: a key naming a FIFO or a device is never read
        # (comparing it with the text blocked for ever on a FIFO, or filled memory from /dev/zero), and a
        # key that is not an absolute file path is refused where it is.
        good = self.path("hostile-good.safetensors")
        sieve("model", "export", self.store, "--trial", str(self.kept[0]), "-o", good, check=0)
        fifo = self.path("hostile.fifo")
        os.mkfifo(fifo)
        tmp = self.path("hostile-tmp")
        os.mkdir(tmp)
        env = dict(os.environ, TMPDIR=tmp)
        quiet = self.path("hostile-fifo.safetensors")
        self.rewrite_meta(good, quiet, lambda meta: meta.update(space_files=json.dumps({fifo: "x: 1\n"})))
        info = sieve("model", "info", quiet, check=0, timeout=60, env=env).stdout
        self.assertIn(f"genotype: {self.rows[self.kept[0]]['genotype']}", info)
        self.assertEqual(os.listdir(tmp), [])
        # Nor do the space's options: a path there that names a FIFO or a device is refused at its place
        # (a Lua script or a recipe file at a FIFO blocked for ever, at /dev/urandom filled memory).
        for space, options, column in (("lua", {"script": fifo}, 12), ("hpo", {"file": "/dev/urandom"}, 10),
                                       ("lua", {"script": "/dev/stdin"}, 12)):
            bad = self.path("hostile-path.safetensors")
            self.rewrite_meta(good, bad, lambda meta: meta.update(space=space, space_options=json.dumps(options)))
            p = subprocess.run([SIEVE, "model", "info", bad], capture_output=True, text=True, timeout=60, env=env,
                               stdin=subprocess.PIPE)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(f"hostile-path.safetensors (metadata space_options):1:{column}: "
                          f"{list(options.values())[0]} is not a regular file (a FIFO, a socket or a device): a model "
                          "file's space reads regular files only", p.stderr)
        # A relative path option is refused where it is (sieve writes them absolute): it named whatever lay
        # there from the reader's folder, a FIFO or "../../dev/stdin", and blocked for ever. A file of size 0
        # under /proc never ends (/proc/self/pagemap filled memory): refused too.
        up = "../" * (os.path.realpath(self.dir).count("/") + 1) + "dev/stdin"
        for space, options, column, message in (
                ("lua", {"script": "hostile.fifo"}, 12, "script: expected an absolute path (sieve writes a model "
                 "file's paths absolute), got hostile.fifo"),
                ("lua", {"script": up}, 12, f"script: expected an absolute path (sieve writes a model file's paths "
                 f"absolute), got {up}"),
                ("hpo", {"file": "/proc/self/pagemap"}, 10, "/proc/self/pagemap is generated by the kernel as it is "
                 "read (under /proc or /sys, of size 0): a model file's space reads regular files only")):
            bad = self.path("hostile-rel.safetensors")
            self.rewrite_meta(good, bad, lambda meta: meta.update(space=space, space_options=json.dumps(options)))
            p = subprocess.run([SIEVE, "model", "info", bad], capture_output=True, text=True, timeout=20, env=env,
                               stdin=subprocess.PIPE, cwd=self.dir)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(f"hostile-rel.safetensors (metadata space_options):1:{column}: {message}", p.stderr)
        for key in ("recipe.yaml", "/x/..", "/", ""):
            bad = self.path("hostile-key.safetensors")
            self.rewrite_meta(good, bad, lambda meta: meta.update(space_files=json.dumps({key: "x: 1\n"})))
            p = sieve("model", "info", bad, timeout=60, env=env)
            self.assertEqual(p.returncode, 2, (key, p.stderr))
            self.assertIn("hostile-key.safetensors (metadata space_files):1:2: ", p.stderr)
            self.assertIn(f"expected an absolute file path as the key, got {json.dumps(key)}", p.stderr)
            self.assertEqual(os.listdir(tmp), [])

    def test_space_files_copy_errors_name_the_file(self):
        # A copy of space_files that cannot be written (its key's folder name too long, TMPDIR missing)
        # says which model file and metadata key it was restoring: it named a folder of TMPDIR alone.
        good = self.path("copy-good.safetensors")
        sieve("model", "export", self.store, "--trial", str(self.kept[0]), "-o", good, check=0)
        tmp = self.path("copy-tmp")
        os.mkdir(tmp)
        long = "/" + "a" * 300 + "/x.yaml"
        for key, env, message in (
                (long, dict(os.environ, TMPDIR=tmp), f"cannot write the copy of {long}: "),
                ("/nonexistent-sieve/x.yaml", dict(os.environ, TMPDIR=self.path("no-such-tmp")),
                 "cannot make a private folder for the copies of its files: ")):
            bad = self.path("copy-bad.safetensors")
            self.rewrite_meta(good, bad, lambda meta: meta.update(space_files=json.dumps({key: "x: 1\n"})))
            p = sieve("model", "info", bad, timeout=60, env=env)
            self.assertNotEqual(p.returncode, 0, p.stderr)
            self.assertIn("copy-bad.safetensors (metadata space_files): ", p.stderr)
            self.assertIn(message, p.stderr)
            self.assertEqual(os.listdir(tmp), [])

    def test_model_file_scripts_run_without_grants(self):
        # A model file carries its Lua space's script (space_files) and the grants its options give it:
        # a file from anyone must not run a command when it is read. Its scripts run in the bare
        # sandbox, as a viewer runs a store's: one that asks for a grant is refused (it ran this one
        # with `os`, and the command ran).
        folder = self.path("grants")
        os.mkdir(folder)
        marker = self.path("grants-ran")
        script = os.path.join(folder, "ev.lua")
        with open(script, "w") as f:
            f.write(f'if os.execute then os.execute("touch {marker}") end\n'
                    'sieve.register_space{name = "ev", create = function(self, b) b:float("lr", 0.01, 0.1) end}\n')
        arch = self.rows[self.kept[0]]["genotype"] + ";lr=0.05"
        parts = ("space.parts=[{plugin: nb201, C: 4, N: 1, in_channels: 1, size: 28}, "
                 f"{{plugin: lua, script: {script}, lua: {{allow: [os]}}}}]")
        out = self.path("grants.safetensors")
        sieve("model", "export", "--space", "compose", "--set", parts, "--arch", arch, "-o", out, check=0)
        self.assertTrue(os.path.exists(marker), "the command line granted os to the export")
        os.remove(marker)
        shutil.rmtree(folder)
        for command in (["info", out], ["eval", out, "--input", self.path("none.npy"), "--output", self.path("o.npy")]):
            p = sieve("model", *command)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("needs the 'os' grant", p.stderr)
            # The hint fits the command (it said "(sieve lua --allow os)", which a model file cannot use).
            self.assertIn("(sieve model runs a model file's Lua with no grants, whatever its space asks for: a file "
                          "whose space's script needs one cannot be read; export the network from a space whose "
                          "script needs none)", p.stderr)
            self.assertNotIn("sieve lua", p.stderr)
            self.assertFalse(os.path.exists(marker), "reading the model file ran a command")

    def test_weights_file_space_files_not_kept(self):
        # --arch with --weights FILE writes the space it was given: FILE's space_files (of the space
        # FILE was trained in) are not carried over when this space read no file.
        arch = self.rows[self.kept[0]]["genotype"]
        good = self.path("sf-good.safetensors")
        sieve("model", "export", self.store, "--trial", str(self.kept[0]), "-o", good, check=0)
        stale = self.path("sf-stale.safetensors")
        self.rewrite_meta(good, stale, lambda meta: meta.update(space_files=json.dumps({"/nowhere/r.yaml": "x: 1\n"})))
        out = self.path("sf-out.safetensors")
        sieve("model", "export", "--space", "nb201", "--set", "space.C=4", "--set", "space.N=1",
              "--set", "space.in_channels=1", "--set", "space.size=28", "--arch", arch, "--weights", stale,
              "-o", out, check=0)
        with open(out, "rb") as f:
            size = int.from_bytes(f.read(8), "little")
            meta = json.loads(f.read(size))["__metadata__"]
        self.assertNotIn("space_files", meta)
        self.assertEqual(meta["genotype"], arch)

    def test_bad_input(self):
        before = digest(self.store)
        missing = [n for n in self.rows if n not in self.kept][0]
        p = sieve("model", "export", self.store, "--trial", str(missing), "-o", self.path("x.onnx"))
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"trial {missing}", p.stderr)
        self.assertIn("no weights kept", p.stderr)
        p = sieve("model", "export", self.store, "--trial", "99", "-o", self.path("x.onnx"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("no trial 99", p.stderr)
        p = sieve("model", "export", self.store, "--trial", str(self.kept[0]), "-o", "/nonexistent/dir/m.onnx")
        self.assertEqual(p.returncode, 1)
        self.assertIn("/nonexistent/dir/m.onnx", p.stderr)
        self.assertFalse(os.path.exists(self.path("x.onnx")))
        # Weights for another genotype, and for another space scale.
        good = self.path("good.safetensors")
        sieve("model", "export", self.store, "--trial", str(self.kept[0]), "-o", good, check=0)
        other = self.rows[missing]["genotype"]
        p = sieve("model", "export", "--space", "nb201", "--set", "space.C=4", "--set", "space.N=1",
                  "--set", "space.in_channels=1", "--set", "space.size=28", "--arch", other, "--weights", good)
        self.assertIn(p.returncode, (1, 2))
        self.assertIn(good, p.stderr)
        same = self.rows[self.kept[0]]["genotype"]
        p = sieve("model", "export", "--space", "nb201", "--set", "space.C=8", "--set", "space.N=1",
                  "--set", "space.in_channels=1", "--set", "space.size=28", "--arch", same, "--weights", good)
        self.assertIn(p.returncode, (1, 2))
        self.assertIn(good, p.stderr)
        self.assertIn("shape", p.stderr)
        # Truncated and corrupted files.
        with open(good, "rb") as f:
            blob = f.read()
        for name, data in (("cut.safetensors", blob[: len(blob) // 2]),
                           ("flip.safetensors", blob[:-9] + bytes([blob[-9] ^ 0x10]) + blob[-8:])):
            with open(self.path(name), "wb") as f:
                f.write(data)
            for cmd in (["model", "info", self.path(name)],
                        ["model", "eval", self.path(name), "--dataset", "fashion-mnist"]):
                p = sieve(*cmd)
                self.assertIn(p.returncode, (1, 2), cmd)
                self.assertIn(self.path(name), p.stderr)
        sieve("model", "export", self.store, "--trial", str(self.kept[0]), "-o", self.path("whole.onnx"), check=0)
        with open(self.path("whole.onnx"), "rb") as f:
            onnx = f.read()
        with open(self.path("cut.onnx"), "wb") as f:
            f.write(onnx[: len(onnx) - 100])
        p = sieve("model", "info", self.path("cut.onnx"))
        self.assertIn(p.returncode, (1, 2))
        self.assertIn("cut.onnx", p.stderr)
        # Two batch dimensions asked for: refused, not one of them ignored.
        for batch in (["--batch", "3", "--dynamic-batch"], ["--dynamic-batch", "--batch", "1"]):
            p = sieve("model", "export", self.store, "--trial", str(self.kept[0]), *batch, "-o", self.path("b.onnx"))
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("--dynamic-batch", p.stderr)
            self.assertFalse(os.path.exists(self.path("b.onnx")))
        p = sieve("model", "export", self.store, "--trial", str(self.kept[0]), "--batch", "0", "-o", self.path("b.onnx"))
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--batch 0: expected a whole number from 1", p.stderr)
        # A store where a model file was expected is named as one, with the way out of it.
        for cmd in (["model", "info", self.store], ["model", "eval", self.store, "--dataset", "fashion-mnist"]):
            p = sieve(*cmd)
            self.assertEqual(p.returncode, 1, cmd)
            self.assertIn(f"{self.store}: an SQLite file (a study's store?), not a model file: write a trial's "
                          f"network to one with `sieve model export {self.store} --trial N -o model.onnx`", p.stderr)
        self.assertEqual(digest(self.store), before)
        # A study whose evaluator keeps no networks gets no advice to keep them.
        cfg = os.path.join(self.dir, "fn.yaml")
        with open(cfg, "w") as f:
            f.write("name: fn\nspace: {plugin: hpo, file: %s}\noptimizer: {plugin: random}\n"
                    "evaluator: {plugin: function, function: branin}\nobjective: {metric: value, direction: minimize}\n"
                    "budget: {evaluations: 2}\n" % os.path.join(os.environ["SIEVE_SOURCE_ROOT"], "search_spaces", "branin.yaml"))
        sieve("run", cfg, "--store", self.path("fn.sieve"), "-q", check=0)
        p = sieve("model", "export", self.path("fn.sieve"), "--trial", "1", "-o", self.path("fn.onnx"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("no weights: the study's evaluator 'function' trains no network that sieve keeps", p.stderr)
        self.assertFalse(os.path.exists(self.path("fn.onnx")))

    def test_lua_load_space_final_and_export(self):
        # A space registered by the config's lua.load scripts: sieve final runs those scripts as sieve run
        # does (it said "no space plugin named 'lua_nb201'"), and sieve model export says why it cannot
        # write a model file of it (the file carries no lua.load script, so nothing could read it back).
        folder = self.path("lua-load")
        os.mkdir(folder)
        shutil.copy(os.path.join(os.environ["SIEVE_SOURCE_ROOT"], "search_spaces", "nb201.lua"),
                    os.path.join(folder, "nb201.lua"))
        with open(os.path.join(folder, "ll.yaml"), "w") as f:
            f.write("lua: {load: [nb201.lua]}\n" + CONFIG.replace("name: tiny", "name: ll").replace(
                "space: {plugin: nb201, ", "space: {plugin: lua_nb201, ")
                .replace("evaluations: 3", "evaluations: 1").replace("train_limit: 512", "train_limit: 320"))
        store = self.path("ll.sieve")
        sieve("run", os.path.join(folder, "ll.yaml"), "--store", store, "--quiet", check=0, cwd="/")
        sieve("final", store, "--trial", "0", "--epochs", "0.1", "--set", "evaluator.test=false", "-q", check=0, cwd="/")
        finals = json.loads(sieve("export", store, "--finals", "--format", "json", check=0).stdout)
        self.assertEqual([(f["trial"], f["status"]) for f in finals], [(0, "ok")])
        out = self.path("ll.onnx")
        p = sieve("model", "export", store, "--final", "0", "-o", out, check=2, cwd="/")
        self.assertIn(f"sieve: {store} final 0: the study's space 'lua_nb201' is registered by its config's lua.load "
                      "scripts, which a model file does not carry", p.stderr)
        self.assertFalse(os.path.exists(out))

    def test_export_of_unfinished_training(self):
        # A trial or final that failed or is still pending has no weights: the message says so, with the
        # reason (it said "no weights kept (train with keep_weights: top or all, or run sieve final)",
        # which does not help when sieve final itself failed).
        failed, pending = self.kept[0], self.kept[1]
        store = self.copy_store(
            "unfinished.sieve",
            ("UPDATE trials SET status = 'failed', reason = 'diverged: loss is NaN' WHERE number = ?", (failed,)),
            ("UPDATE trials SET status = 'pending' WHERE number = ?", (pending,)),
            ("DELETE FROM weights WHERE number IN (?, ?)", (failed, pending)))
        out = self.path("unfinished.onnx")
        p = sieve("model", "export", store, "--trial", str(failed), "-o", out, check=1)
        self.assertIn(f"sieve: {store} trial {failed}: failed (diverged: loss is NaN): no weights (only a training that "
                      "succeeded keeps them)", p.stderr)
        p = sieve("model", "export", store, "--trial", str(pending), "-o", out, check=1)
        self.assertIn(f"sieve: {store} trial {pending}: has not finished (pending): no weights yet", p.stderr)
        self.assertFalse(os.path.exists(out))

    def test_final_leaves_what_is_no_study_alone(self):
        # An empty file was given a store's tables (86 KB) before "holds no study", and then read as an
        # empty study by export; a folder was "no such store". Now as export and report say it.
        empty = self.path("empty.sieve")
        open(empty, "w").close()
        p = sieve("final", empty, "--best", "1")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("empty.sieve: not a sieve store (an empty database)", p.stderr)
        self.assertEqual(os.path.getsize(empty), 0)
        p = sieve("final", self.dir, "--best", "1")
        self.assertIn("not a sieve store (a directory)", p.stderr)
        p = sieve("final", self.path("missing.sieve"))
        self.assertIn("missing.sieve: no such store", p.stderr)
        self.assertFalse(os.path.exists(self.path("missing.sieve")))

    def test_final_best_distinct_networks(self):
        # --best K takes K distinct networks: a genotype two trials evaluated (random search may propose
        # one again) was trained twice, the same network, and the K-th best network was left out.
        ranked = sorted(self.rows, key=lambda n: (-float(self.rows[n]["val_acc"]), n))
        # The second best becomes the best's genotype: the third is the next network.
        store = self.copy_store("final-dup.sieve", ("UPDATE trials SET genotype = ? WHERE number = ?",
                                                    (self.rows[ranked[0]]["genotype"], ranked[1])))
        sieve("final", store, "--best", "2", "--epochs", "0.1", "--set", "evaluator.test=false", "-q", check=0)
        finals = json.loads(sieve("export", store, "--finals", "--format", "json", check=0).stdout)
        self.assertEqual(sorted(f["trial"] for f in finals), sorted([ranked[0], ranked[2]]))

    def test_final_without_validation(self):
        # A final on all the data (validation 0) reports no val_acc: its row
        # said "nan" beside "ok" (new-user review); it says "-" and why.
        store = self.copy_store("final-noval.sieve")
        p = sieve("final", store, "--trial", "0", "--epochs", "0.1", "--set", "evaluator.validation=0",
                  "--set", "evaluator.test=false", check=0)
        self.assertNotIn("nan", p.stdout)
        self.assertRegex(p.stdout, r"(?m)^0\s+0\s+\S+\s+-\s+ok$")
        self.assertIn("(-: the final reported no val_acc, e.g. with no validation split", p.stdout)

    def test_final_killed_and_resumed(self):
        store = self.copy_store("final.sieve")
        # 6 epochs: 24 steps of 64 images per final, so that the kill below
        # lands inside the first training, however loaded the machine.
        args = [SIEVE, "final", store, "--best", "2", "--epochs", "6", "--set", "evaluator.test=false"]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Killed at the first progress line of a training (its first step, which
        # the finals' being stored as pending precedes): 47 steps are still to run.
        for line in proc.stderr:
            if line.lstrip().startswith("final of trial #") and " step " in line:
                break
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        db = sqlite3.connect(store)
        pending = db.execute("SELECT count(*) FROM finals WHERE status = 'pending'").fetchone()[0]
        db.close()
        self.assertGreaterEqual(pending, 1, "the kill came after the finals finished; nothing to resume")
        p = subprocess.run(args, capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        finals = json.loads(sieve("export", store, "--finals", "--format", "json", check=0).stdout)
        self.assertEqual(len(finals), 2)  # resumed, nothing trained twice
        best = sorted(self.rows, key=lambda n: (-float(self.rows[n]["val_acc"]), n))[:2]
        self.assertEqual(sorted(f["trial"] for f in finals), sorted(best))
        for f in finals:
            self.assertEqual(f["status"], "ok")
            self.assertEqual(f["genotype"], self.rows[f["trial"]]["genotype"])
            self.assertEqual(f["metrics"]["epochs"], 6)
        # The trials export and the summary are the search's alone.
        rows = list(csv.DictReader(io.StringIO(sieve("export", store, check=0).stdout)))
        self.assertEqual(len(rows), len(self.rows))
        summary = json.loads(sieve("export", store, "--summary", "--format", "json", check=0).stdout)
        self.assertEqual(summary["evaluated"], len(self.rows))
        self.assertEqual(summary["trials"], len(self.rows))
        # The finals are counted apart, never as trials.
        self.assertEqual((summary["finals"], summary["finals_ok"], summary["finals_pending"]), (2, 2, 0))
        # The summary `sieve run` prints lists them below the search's ranking, each beside its trial.
        p = sieve("run", os.path.join(self.dir, "tiny.yaml"), "--resume", "--store", store, check=0)
        tail = p.stdout[p.stdout.index("final trainings"):]
        self.assertIn("2 done, 0 pending", tail)
        for f in finals:
            self.assertRegex(tail, r"\n\s*%d\s+%d\s" % (f["final"], f["trial"]))
        # Run again: nothing left to train.
        p = sieve("final", store, "--best", "2", "--epochs", "6", "--set", "evaluator.test=false", check=0)
        self.assertEqual(len(json.loads(sieve("export", store, "--finals", "--format", "json", check=0).stdout)), 2)
        # The final network exports.
        sieve("model", "export", store, "--final", "0", "-o", self.path("final0.onnx"), check=0)
        p = sieve("model", "export", store, "--final", "7", "-o", self.path("final7.onnx"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("no final training 7", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
