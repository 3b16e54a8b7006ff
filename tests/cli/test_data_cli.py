#!/usr/bin/env python3
"""Bug hunt, datasets, model files and the command: a model file's space
options read back (numbers as JSON numbers, older files' quoted floats
too), empty .npy inputs, augmentation on tabular data, CSV datasets' test
split, labels and advice, flags that clash with --set, and the proxies'
label check."""
import json
import os
import struct
import sys
import unittest

ROOT = os.environ["SIEVE_SOURCE_ROOT"]
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import sieve_cli  # noqa: E402
from sieve_cli import sieve  # noqa: E402

NB101_ARCH = ("matrix=[[0,1,1,0,0,0,0],[0,0,0,1,1,0,1],[0,0,0,1,1,0,0],[0,0,0,0,1,1,1],[0,0,0,0,0,0,0],"
              "[0,0,0,0,0,0,0],[0,0,0,0,0,0,0]],ops=[input,conv1x1-bn-relu,conv3x3-bn-relu,conv1x1-bn-relu,"
              "maxpool3x3,conv3x3-bn-relu,output]")
NB101_SET = ["--set", "space.stem_channels=8", "--set", "space.stacks=1", "--set", "space.cells=1",
             "--set", "space.in_channels=1", "--set", "space.size=28"]


def safetensors_meta(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        rest = f.read()
    return header, rest


def safetensors_write(path, header, rest):
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + rest)


class TestModelMetadata(sieve_cli.Workdir):
    prefix = "sieve-data-"

    def test_nb101_float_option(self):
        """nb101's bn_momentum is a JSON number in the file, and the file
        builds again; a file with the quoted number older sieve wrote too."""
        g = self.path("g.safetensors")
        sieve("model", "export", "--space", "nb101", "--arch", NB101_ARCH, *NB101_SET,
              "--set", "space.bn_momentum=0.1", "-o", g, check=0)
        header, rest = safetensors_meta(g)
        options = json.loads(header["__metadata__"]["space_options"])
        self.assertEqual(options["bn_momentum"], 0.1)
        self.assertEqual(options["stem_channels"], 8)
        info = sieve("model", "info", g, check=0).stdout
        self.assertIn('"bn_momentum":0.1', info)
        sieve("model", "export", "--space", "nb101", "--arch", NB101_ARCH, *NB101_SET, "--set",
              "space.bn_momentum=0.1", "--weights", g, "-o", self.path("g.onnx"), check=0)
        # As sieve wrote it before: the float as a string.
        header["__metadata__"]["space_options"] = header["__metadata__"]["space_options"].replace(
            '"bn_momentum":0.1', '"bn_momentum":"0.1"')
        old = self.path("old.safetensors")
        safetensors_write(old, header, rest)
        info = sieve("model", "info", old, check=0).stdout
        self.assertIn("parameters: ", info)

    def test_metadata_of_a_larger_network_refused_before_allocation(self):
        """A model file's metadata naming a network far larger than its
        tensors (C: 1024 over a C: 4 file of 64 KiB) is refused by counting
        before the runtime allocates it: it took 9 GB and a minute to find
        the first tensor's shape wrong."""
        import resource
        import subprocess
        g = self.path("small.safetensors")
        sieve("model", "export", "--space", "nb201", "--arch", NB201_ARCH, *NB201_SMALL, "-o", g, check=0)
        header, rest = safetensors_meta(g)
        options = json.loads(header["__metadata__"]["space_options"])
        options.update(C=1024, N=3)
        header["__metadata__"]["space_options"] = json.dumps(options)
        big = self.path("big.safetensors")
        safetensors_write(big, header, rest)
        values = 0  # the floats the file holds, from its header's shapes
        for name, t in header.items():
            if name != "__metadata__":
                n = 1
                for d in t["shape"]:
                    n *= d
                values += n

        def cap():
            resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        # AddressSanitizer reserves terabytes of address space for its shadow: no cap there (the message is checked).
        with open(sieve_cli.SIEVE, "rb") as f:
            asan = b"__asan_init" in f.read()
        p = subprocess.run([sieve_cli.SIEVE, "model", "info", big], capture_output=True, text=True, timeout=60,
                           preexec_fn=None if asan else cap)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn(f"big.safetensors: holds {values} values but its network (space nb201, genotype {NB201_ARCH}) "
                      "has ", p.stderr)
        self.assertIn(" parameters: the weights are for another network", p.stderr)


def npy_f32(path, shape, values=None):
    """An .npy of '<f4' as numpy.save writes it."""
    count = 1
    for d in shape:
        count *= d
    text = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else ""))
    text += " " * ((64 - (10 + len(text) + 1) % 64) % 64) + "\n"
    data = struct.pack("<%df" % count, *(values or [0.5] * count))
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text.encode() + data)


NB201_ARCH = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|"
NB201_SMALL = ["--set", "space.C=4", "--set", "space.N=1", "--set", "space.in_channels=1", "--set", "space.size=8"]


class TestEmptyInputs(sieve_cli.Workdir):
    prefix = "sieve-data-"

    def test_model_eval_empty(self):
        """No examples is an error that says so, for weights and ONNX files
        alike; a zero elsewhere in the shape is the wrong shape, named."""
        for model in ("net.safetensors", "net.onnx"):
            sieve("model", "export", "--space", "nb201", "--arch", NB201_ARCH, *NB201_SMALL, "-o", self.path(model),
                  check=0)
        npy_f32(self.path("zero.npy"), (0, 1, 8, 8))
        npy_f32(self.path("zeroc.npy"), (3, 0, 8, 8))
        npy_f32(self.path("two.npy"), (2, 1, 8, 8))
        for model in ("net.safetensors", "net.onnx"):
            p = sieve("model", "eval", self.path(model), "--input", self.path("zero.npy"), "-o", self.path("z.npy"),
                      check=2)
            self.assertIn("zero.npy: shape (0, 1, 8, 8): no examples to evaluate", p.stderr)
            p = sieve("model", "eval", self.path(model), "--input", self.path("zeroc.npy"), "-o", self.path("z.npy"),
                      check=2)
            self.assertIn("zeroc.npy: shape (3, 0, 8, 8), expected (N, 1, 8, 8)", p.stderr)
            self.assertFalse(os.path.exists(self.path("z.npy")))
            sieve("model", "eval", self.path(model), "--input", self.path("two.npy"), "-o", self.path("y.npy"),
                  check=0)
            with open(self.path("y.npy"), "rb") as f:
                self.assertIn(b"'shape': (2, 10)", f.read(128))

    def test_model_eval_non_finite_inputs(self):
        """A NaN or infinite input is refused where it is: oneDNN's ReLU
        returns 0 for NaN, so the logits came out finite where PyTorch,
        ONNX Runtime and OpenCV give NaN."""
        sieve("model", "export", "--space", "nb201", "--arch", NB201_ARCH, *NB201_SMALL, "-o", self.path("n.onnx"),
              check=0)
        for bad, word in ((float("nan"), "nan"), (float("-inf"), "-inf")):
            values = [0.5] * 128
            values[64 + 3 * 8 + 5] = bad  # example 1, channel 0, row 3, column 5
            npy_f32(self.path("bad.npy"), (2, 1, 8, 8), values)
            p = sieve("model", "eval", self.path("n.onnx"), "--input", self.path("bad.npy"), "-o", self.path("o.npy"),
                      check=1)
            self.assertIn(f"bad.npy: element [1, 0, 3, 5] is {word}: a network's inputs must be finite", p.stderr)
            self.assertFalse(os.path.exists(self.path("o.npy")))


class TestTrainFlags(sieve_cli.Workdir):
    prefix = "sieve-data-"

    def train(self, *args, check=2):
        return sieve("train", "-q", "--arch", NB201_ARCH, "--set", "space.C=4", "--set", "space.N=1", "--threads", "1",
                     *args, check=check, cwd=self.dir)

    def test_flag_and_set_clash(self):
        """A flag and a --set of the same option: refused in either order,
        naming both, before anything trains."""
        for args, flag, setting in [(["--lr", "0.5", "--set", "evaluator.lr=0.01"], "--lr 0.5", "evaluator.lr=0.01"),
                                    (["--set", "evaluator.lr=0.01", "--lr", "0.5"], "--lr 0.5", "evaluator.lr=0.01"),
                                    (["--epochs", "3", "--set", "evaluator.epochs=2"], "--epochs 3",
                                     "evaluator.epochs=2"),
                                    (["--data-dir", "small", "--set", "evaluator.data_dir=c10"], "--data-dir small",
                                     "evaluator.data_dir=c10"),
                                    (["--dataset", "mnist", "--set", "evaluator.dataset=cifar10"], "--dataset mnist",
                                     "evaluator.dataset=cifar10")]:
            p = self.train(*args)
            self.assertIn(f"sieve: {flag} and --set {setting} both set {setting.split('=')[0]}: give one of them",
                          p.stderr)
            self.assertEqual(p.stdout, "")

    def test_locations(self):
        """A flag's value has no line and column; a data_dir from --set is
        named where the dataset does not load."""
        os.mkdir(self.path("c10"))
        p = self.train("--set", "evaluator.data_dir=c10", check=1)  # a data file error: exit 1
        self.assertIn("sieve: --set evaluator.data_dir=c10: fashion-mnist: no train images in c10", p.stderr)
        p = self.train("--dataset", "no-such-set")
        self.assertIn("sieve: --dataset no-such-set: unknown dataset 'no-such-set'", p.stderr)
        p = self.train("--batch", "0")
        self.assertIn("sieve: --batch 0: option 'batch_size'", p.stderr)
        # A --set value has no line either; inside a flow map, a column of it.
        p = self.train("--set", "evaluator.lr=abc")
        self.assertIn("sieve: --set evaluator.lr=abc: option 'lr' expects a number, got 'abc'", p.stderr)
        p = self.train("--set", "evaluator={plugin: train, epochs: 0}")
        self.assertIn("sieve: --set evaluator={plugin: train, epochs: 0} (column 25 of the value): option 'epochs' "
                      "expects a float", p.stderr)
        p = self.train("--set", "evaluator={plugin: train, epochs: [1}")
        self.assertIn("sieve: --set evaluator={plugin: train, epochs: [1} (column 27 of the value): did not find "
                      "expected ',' or ']'", p.stderr)
        self.assertNotIn(":1:", p.stderr)

    def test_whole_section_set_keeps_flags(self):
        """A --set of a whole section means a --set of each of its keys: the
        flags' values (and sieve train's defaults) stay, a flag and the same
        option in the section are refused naming both, in either order."""
        p = sieve("train", "-q", "--arch", NB201_ARCH, "--set", "space={plugin: nb201, C: 4, N: 1}", "--threads", "1",
                  "--batch", "16", "--epochs", "0.5", "--set", "evaluator={train_limit: 64, validation: 32, test: false}",
                  check=0, cwd=self.dir)
        summary = json.loads(p.stdout)
        self.assertEqual((summary["status"], summary["epochs"], summary["params"]), ("ok", 0.5, 20222))
        for args in (["--lr", "0.5", "--set", "evaluator={plugin: train, lr: 0.01}"],
                     ["--set", "evaluator={plugin: train, lr: 0.01}", "--lr", "0.5"]):
            p = self.train(*args)
            self.assertIn("sieve: --lr 0.5 and --set evaluator={plugin: train, lr: 0.01} both set evaluator.lr: "
                          "give one of them", p.stderr)
            self.assertEqual(p.stdout, "")
        p = self.train("--space", "nb201", "--set", "space={plugin: darts}")
        self.assertIn("sieve: --space nb201 and --set space={plugin: darts} both set space.plugin", p.stderr)
        # A flag's value is checked where the section was given whole, or by its plugin's name.
        for section in ("evaluator={epochs: 2}", "evaluator=train"):
            p = self.train("--batch", "0", "--set", section)
            self.assertIn("sieve: --batch 0: option 'batch_size' expects an integer in [1, 65536], got 0", p.stderr)

    def test_other_evaluator_gets_its_own_defaults(self):
        """sieve train's defaults (dataset: fashion-mnist) are the train
        evaluator's: a --set that makes the evaluator another plugin runs it
        with its own (latency has no dataset option and was refused: "sieve
        train's default dataset: unknown option 'dataset'"); a flag that the
        evaluator lacks is refused naming the flag."""
        for section in ("evaluator={plugin: latency, max_seconds: 0.2}", "evaluator=latency"):
            p = self.train("--set", section, "--set", "evaluator.max_seconds=0.2", check=0)
            summary = json.loads(p.stdout)
            self.assertEqual(summary["status"], "ok")
            self.assertGreater(summary["latency_ms"], 0)
            self.assertEqual(summary["threads"], 1)
        p = self.train("--set", "evaluator=latency", "--epochs", "2")
        self.assertIn("sieve: --epochs 2: unknown option 'epochs' for evaluator 'latency'", p.stderr)
        self.assertEqual(p.stdout, "")


def iris_like(path, rows=40, labels=None):
    """A small CSV of four features and a label column, as iris.csv."""
    with open(path, "w") as f:
        f.write("a,b,c,d,label\n")
        for i in range(rows):
            label = labels[i] if labels else str(i % 3)
            f.write(f"{i % 7 * 0.5},{i % 5},{(i * 3) % 11 / 10},{i % 2},{label}\n")


NB101_TABULAR = "{plugin: nb101, stem_channels: 8, stacks: 1, cells: 1, in_channels: 4, size: 1, classes: 3}"


class TestTabular(sieve_cli.Workdir):
    prefix = "sieve-data-"

    def config(self, evaluator, space=NB101_TABULAR):
        return self.write("exp.yaml", f"""\
name: tab
space: {space}
optimizer: {{plugin: random}}
evaluator: {{plugin: train, dataset: csv:rows.csv, validation: 8, epochs: 1, batch_size: 8, threads: 1{evaluator}}}
objective: {{metric: val_acc, direction: maximize}}
budget: {{evaluations: 1}}
""")

    def run_config(self, evaluator, check=2, space=NB101_TABULAR):
        return sieve("run", self.config(evaluator, space), "--quiet", "--store", self.path("s.sieve"), check=check,
                     cwd=self.dir)

    def test_augmentation_needs_images(self):
        """crop_pad or flip on rows: a config error at its line, no GLib
        critical, in a study and from sieve train's --set."""
        iris_like(self.path("rows.csv"))
        p = self.run_config(", test: false, crop_pad: 4")
        self.assertRegex(p.stderr, r"exp\.yaml:4:\d+: augmentation needs images: crop_pad pads and crops pictures, "
                                   r"but dataset 'csv:rows.csv' is 4x1x1 per example \(tabular data\); set crop_pad: 0")
        self.assertNotIn("CRITICAL", p.stderr)
        p = self.run_config(", test: false, flip: true")
        self.assertIn("augmentation needs images: flip mirrors pictures", p.stderr)
        p = sieve("train", "-q", "--space", "nb101", "--arch", NB101_ARCH, "--set", "space.stem_channels=8",
                  "--set", "space.stacks=1", "--set", "space.cells=1", "--set", "space.in_channels=4",
                  "--set", "space.size=1", "--set", "space.classes=3", "--dataset", "csv:rows.csv",
                  "--validation", "8", "--set", "evaluator.test=false", "--set", "evaluator.crop_pad=4",
                  "--threads", "1", check=2, cwd=self.dir)
        self.assertIn("sieve: --set evaluator.crop_pad=4: augmentation needs images", p.stderr)
        self.assertNotIn("CRITICAL", p.stderr)

    def test_no_test_split(self):
        """The default test: true on a CSV file says what to do; sieve
        train asks no test split of one, and its flags have no :1:1."""
        iris_like(self.path("rows.csv"))
        p = self.run_config("")
        self.assertRegex(p.stderr, r"exp\.yaml:4:\d+: csv:rows.csv has no test split: a CSV file is one set of "
                                   r"examples, of which only the validation examples are held out; set test: false")
        self.run_config(", test: false", check=0)
        args = ["train", "-q", "--space", "nb101", "--arch", NB101_ARCH, "--set", "space.stem_channels=8",
                "--set", "space.stacks=1", "--set", "space.cells=1", "--set", "space.in_channels=4",
                "--set", "space.size=1", "--set", "space.classes=3", "--dataset", "csv:rows.csv", "--threads", "1"]
        p = sieve(*args, check=2, cwd=self.dir)
        self.assertIn("sieve: sieve train: validation 5000 must be smaller than the 40 training examples", p.stderr)
        out = json.loads(sieve(*args, "--validation", "8", "--batch", "8", check=0, cwd=self.dir).stdout)
        self.assertEqual(out["status"], "ok")
        self.assertNotIn("test_acc", out)

    def test_tabular_advice(self):
        """Advice a space can take: nb201 (size >= 4) is told of nb101 with
        stacks: 1, and that advice runs."""
        iris_like(self.path("rows.csv"))
        p = self.run_config(", test: false", space="{plugin: nb201, C: 4, N: 1}")
        self.assertIn("dataset 'csv:rows.csv' is tabular (4 features per example, 3 classes), but space 'nb201' "
                      "builds networks that take 3x32x32 inputs: for tabular data use a space whose networks take "
                      "1x1 inputs, such as nb101 with stacks: 1, size: 1, in_channels: 4, classes: 3", p.stderr)
        self.assertNotIn("size: 1 in the space", p.stderr)
        p = self.run_config(", test: false", space="{plugin: nb101, stem_channels: 8, cells: 1}")
        self.assertIn("such as nb101 with stacks: 1, size: 1", p.stderr)
        self.run_config(", test: false", space="{plugin: nb101, stem_channels: 8, cells: 1, stacks: 1, size: 1, "
                        "in_channels: 4, classes: 3}", check=0)

    def test_numeric_labels(self):
        """0.5 or 70000 among class ids: an error at its row and column, not
        every label silently renumbered as a name (1.0 is class 1)."""
        labels = [str(i % 3) for i in range(40)]
        labels[9] = "1.0"
        for bad, line in [("0.5", 7), ("70000", 7)]:
            labels[5] = bad
            iris_like(self.path("rows.csv"), labels=labels)
            p = self.run_config(", test: false", check=1)  # a data file error: exit 1
            self.assertIn(f"rows.csv:{line}:", p.stderr)
            self.assertIn(f"label '{bad}' in column 'label' is a number but not a class id", p.stderr)
        iris_like(self.path("rows.csv"), labels=["cat", "dog", "bird"] * 13 + ["cat"])
        self.run_config(", test: false", check=0)

    def test_proxies_label_check(self):
        """sieve proxies on a CSV whose labels go past the space's classes:
        refused up front for any batch size, as the screen stage does."""
        iris_like(self.path("rows.csv"), labels=["0", "7"] + ["1"] * 38)
        args = ["proxies", "--space", "nb101", "--set", "space.stem_channels=8", "--set", "space.stacks=1",
                "--set", "space.cells=1", "--set", "space.in_channels=4", "--set", "space.size=1",
                "--set", "space.classes=3", "--dataset", "csv:rows.csv", "--proxies", "snip", "--threads", "1"]
        for batch in ("2", "4", "8"):
            p = sieve(*args, "--batch", batch, NB101_ARCH, check=2, cwd=self.dir)
            self.assertIn("sieve: dataset csv:rows.csv has 4x1x1 examples in 8 classes, but space nb101 builds "
                          "networks for 4x1x1 inputs with 3 outputs", p.stderr)
            self.assertEqual(p.stdout, "")
        args[args.index("space.classes=3")] = "space.classes=8"
        sieve(*args, "--batch", "4", NB101_ARCH, check=0, cwd=self.dir)


if __name__ == "__main__":
    unittest.main(verbosity=2)
