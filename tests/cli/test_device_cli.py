#!/usr/bin/env python3
"""The runtime device (issue 27) from everything outside the runtime: `device:`
of the train and proxy evaluators and of the screen stage, `sieve train
--device`, `sieve proxies --device`, and train's per_gpu.  On a machine
without a GPU (this test's): device cpu changes nothing, device cuda fails
each trial (not the study) with the runtime's message, a misspelt device is
a config error at its file:line:col, and per_gpu asks the engine for that
many trainings at once only where the device is a GPU."""
import json
import os
import re
import shutil
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from sieve_cli import Workdir, export_rows, sieve  # noqa: E402

HAVE_DATA = any(os.path.exists(os.path.join("/usr/share/datasets/fashion-mnist", f))
                for f in ("train-images-idx3-ubyte.gz", "train-images-idx3-ubyte"))
A1 = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"
A2 = "|nor_conv_1x1~0|+|none~0|skip_connect~1|+|avg_pool_3x3~0|nor_conv_3x3~1|none~2|"
# What the runtime says for cuda without a GPU: a build with the backend and
# no device, or a build without it.
NO_CUDA = re.compile(r"no CUDA device|no CUDA backend")
# These cases are about a machine without a GPU; on one (the device tool's
# GPU machine) the runtime tests under tests/runtime check the GPU itself.
HAVE_GPU = shutil.which("nvidia-smi") is not None and os.path.exists("/dev/nvidiactl")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

TRAIN = """name: dev
seed: 2
space: {plugin: nb201, C: 4, N: 1, in_channels: 1, size: 28}
optimizer: {plugin: random}
evaluator: {plugin: train, train_limit: 256, validation: 64, test: false, batch_size: 32, epochs: 1,
            threads_per_worker: 1%(extra)s}
objective: {metric: val_acc, direction: maximize}
budget: {evaluations: 3}
"""
COMPARED = ("number", "status", "genotype", "val_acc", "train_loss", "train_acc", "params")


def no_cuda(test, reason):
    """Asserts reason is the runtime's no-GPU message."""
    test.assertRegex(reason, NO_CUDA)


@unittest.skipIf(HAVE_GPU, "this machine has a GPU: these cases are about one without")
class TestDevice(Workdir):
    prefix = "sieve-device-"

    def run_study(self, name, extra, check=0):
        cfg = self.write(f"{name}.yaml", TRAIN % {"extra": extra})
        p = sieve("run", cfg, "--store", self.path(f"{name}.sieve"), check=check, timeout=300)
        return p, cfg

    @unittest.skipUnless(HAVE_DATA, "no Fashion-MNIST under /usr/share/datasets (dataset-fashion-mnist)")
    def test_train_cpu_unchanged_and_per_gpu_unused(self):
        self.run_study("default", "")
        ref = export_rows(self.path("default.sieve"))
        self.assertEqual([r["status"] for r in ref], ["ok"] * 3, ref)
        p, _ = self.run_study("cpu", ", device: cpu, per_gpu: 3")
        rows = export_rows(self.path("cpu.sieve"), stable=False)
        self.assertEqual([{k: r[k] for k in COMPARED} for r in rows], [{k: r[k] for k in COMPARED} for r in ref])
        # On the CPU per_gpu asks for nothing: one training at a time.
        self.assertEqual({r["worker"] for r in rows}, {"0"})
        self.assertNotIn("evaluations at once", p.stdout)

    def test_train_cuda_fails_each_trial_with_per_gpu_at_once(self):
        p, _ = self.run_study("cuda", ", device: cuda, per_gpu: 3", check=1)  # (all fail: exit 1)
        self.assertIn("evaluator 'train' runs 3 evaluations at once", p.stdout)
        rows = export_rows(self.path("cuda.sieve"), stable=False)
        # (Which worker ran which trial is left to timing: a trial failing at
        # once frees its worker for the next.)
        self.assertEqual([r["status"] for r in rows], ["failed"] * 3)
        # A written workers wins over per_gpu.
        p, _ = self.run_study("cuda1", ", device: cuda, per_gpu: 3}\nworkers: 1\n#", check=1)
        self.assertNotIn("evaluations at once", p.stdout)
        self.assertEqual({r["worker"] for r in export_rows(self.path("cuda1.sieve"), stable=False)}, {"0"})
        for r in rows:
            no_cuda(self, r["reason"])

    @unittest.skipUnless(HAVE_DATA, "no Fashion-MNIST under /usr/share/datasets (dataset-fashion-mnist)")
    def test_train_auto_without_gpu_is_cpu(self):
        p, _ = self.run_study("auto", ", device: auto, per_gpu: 3")
        self.assertNotIn("evaluations at once", p.stdout)
        # auto says what it took, on stderr (stdout may be JSON)
        self.assertRegex(p.stderr, r"device auto: cpu \((no CUDA|this build has no CUDA|CUDA driver)")
        rows = export_rows(self.path("auto.sieve"), stable=False)
        self.assertEqual([r["status"] for r in rows], ["ok"] * 3, rows)
        self.assertEqual({r["worker"] for r in rows}, {"0"})

    def test_per_gpu_with_a_lua_space_stays_at_one(self):
        """A Lua space builds networks on its script's thread only: per_gpu
        does not move the evaluations to other threads."""
        script = os.path.join(ROOT, "search_spaces", "nb201.lua")
        text = (TRAIN % {"extra": ", device: cuda, per_gpu: 3"}).replace(
            "space: {plugin: nb201, C: 4, N: 1, in_channels: 1, size: 28}",
            "space: {plugin: lua, script: %s, options: {C: 4, N: 1, in_channels: 1, size: 28}}" % script)
        cfg = self.write("lua.yaml", text)
        # (no GPU here: every trial fails, so the run exits 1)
        p = sieve("run", cfg, "--store", self.path("lua.sieve"), check=1, timeout=300)
        self.assertIn("evaluator 'train' would run 3 evaluations at once, but space 'lua' runs in Lua, on one "
                      "thread: 1 worker", p.stdout)
        rows = export_rows(self.path("lua.sieve"), stable=False)
        self.assertEqual({r["worker"] for r in rows}, {"0"})
        for r in rows:  # the runtime's message, not the Lua thread's
            no_cuda(self, r["reason"])

    def test_bad_device_is_a_config_error(self):
        p, cfg = self.run_study("bad", ", device: gpu", check=2)
        self.assertRegex(p.stderr, re.escape(cfg) + r":6:\d+: option 'device' expects one of cpu, cuda, auto; "
                                   r"got 'gpu'")
        self.assertFalse(os.path.exists(self.path("bad.sieve")))
        screen = TRAIN % {"extra": ""} + ("pipeline:\n  - screen: {proxies: [snip], keep_top: 1, batch: 2,\n"
                                          "             device: cpuu}\n")
        cfg = self.write("screen.yaml", screen)
        p = sieve("run", cfg, "--store", self.path("screen.sieve"), check=2)
        self.assertRegex(p.stderr, re.escape(cfg) + r":11:22: option 'device' expects one of cpu, cuda, auto; "
                                   r"got 'cpuu' \(did you mean 'cpu'\?\)")
        p = sieve("train", "--arch", A1, "--device", "gpu", check=2)
        self.assertIn("--device gpu: option 'device' expects one of cpu, cuda, auto", p.stderr)

    def test_sieve_train_cuda(self):
        p = sieve("train", "--arch", A1, "--device", "cuda", "--set", "space.C=4", "--set", "space.N=1",
                  "--train-limit", "64", "--validation", "32", "--batch", "32", "-q", check=1)
        out = json.loads(p.stdout)
        self.assertEqual(out["status"], "failed")
        no_cuda(self, out["reason"])

    def test_proxy_evaluator(self):
        cfg = self.write("proxy.yaml", """name: px
space: {plugin: nb201, C: 4, N: 1, size: 8}
optimizer: {plugin: random}
evaluator: {plugin: proxy, proxies: [snip], batch_size: 8, threads: 1, device: %s}
objective: {metric: score, direction: maximize}
budget: {evaluations: 2}
""" % "cpu")
        sieve("run", cfg, "--store", self.path("cpu.sieve"), check=0)
        self.assertEqual([r["status"] for r in export_rows(self.path("cpu.sieve"))], ["ok", "ok"])
        with open(cfg) as f:
            text = f.read().replace("device: cpu", "device: cuda")
        cfg = self.write("proxy-cuda.yaml", text)
        sieve("run", cfg, "--store", self.path("cuda.sieve"), check=1)  # (every trial failed: exit 1)
        rows = export_rows(self.path("cuda.sieve"))
        self.assertEqual([r["status"] for r in rows], ["failed", "failed"])
        no_cuda(self, rows[0]["reason"])

    def test_screen_stage(self):
        """The screen scores a round to choose which candidates go on: with device cuda and no GPU
        it once kept the first proposals unscored, exit 0.  Now a config error before the store is
        made; auto falls back to the CPU and says so."""
        text = """name: s4
seed: 0
space: {plugin: nb201, C: 4, N: 1}
optimizer: {plugin: random}
evaluator: {plugin: proxy, proxies: [params], batch_size: 2}
objective: {metric: score, direction: maximize}
pipeline: [{screen: {proxies: [synflow], keep_top: 1, batch: 3, batch_size: 2, device: %s}}]
budget: {evaluations: 2}
"""
        cfg = self.write("s-cuda.yaml", text % "cuda")
        p = sieve("run", cfg, "--store", self.path("s-cuda.sieve"), check=2)
        self.assertRegex(p.stderr, re.escape(cfg) + r":7:\d+: stage 'screen': device cuda: (no CUDA device|this build "
                         r"has no CUDA backend).*use device: auto")
        self.assertFalse(os.path.exists(self.path("s-cuda.sieve")))
        cfg = self.write("s-auto.yaml", text % "auto")
        p = sieve("run", cfg, "--store", self.path("s-auto.sieve"), check=0)
        self.assertRegex(p.stderr, r"stage 'screen': device auto: cpu \(")
        rows = export_rows(self.path("s-auto.sieve"))
        self.assertEqual(sorted(r["status"] for r in rows), ["ok", "ok", "screened", "screened", "screened",
                                                             "screened"])
        self.assertTrue(all(r["synflow"] not in ("", "nan") for r in rows), rows)


@unittest.skipIf(HAVE_GPU, "this machine has a GPU: these cases are about one without")
class TestProxiesDevice(unittest.TestCase):
    SMALL = ["--set", "space.C=4", "--set", "space.N=1", "--input", "3x8x8", "--batch", "8", "--threads", "1",
             "--proxies", "snip,naswot,gradsign,synflow"]

    def test_cpu_is_the_default(self):
        plain = sieve("proxies", *self.SMALL, A1, A2, check=0).stdout.splitlines()
        cpu = sieve("proxies", *self.SMALL, "--device", "cpu", A1, A2, check=0).stdout.splitlines()
        strip = lambda rows: [{k: v for k, v in json.loads(r).items() if k != "time_ms"} for r in rows]  # noqa: E731
        self.assertEqual(strip(cpu), strip(plain))

    def test_cuda_and_bad_name(self):
        p = sieve("proxies", *self.SMALL, "--device", "gpu", A1, check=2)
        self.assertIn("--device gpu: expected cpu, cuda or auto", p.stderr)
        p = sieve("proxies", *self.SMALL, "--device", "cuda", A1, check=1)
        self.assertEqual(p.stdout, "")
        no_cuda(self, p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
