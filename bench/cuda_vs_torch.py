#!/usr/bin/env python3
"""sieve's runtime device against PyTorch on the same GPU, in one call (issue 27).

For each row of the issue's Targets table it runs the PyTorch peer
(torch_nb201_gpu.py, --peer) in each of its modes and our bench/cuda-train
(--exe) on --device, and prints the table with sieve/PyTorch ratios against
PyTorch's best mode of the row, the target each ratio is held to, and for the
training rows the effective TFLOP/s and the fraction of the GPU's memory
bandwidth the step reaches.

  python3 bench/cuda_vs_torch.py --exe build/bench/cuda-train --peer ../shared/peers/torch_nb201_gpu.py
  python3 bench/cuda_vs_torch.py --quick --device cpu     # a smoke test: few steps, the peer n/a without CUDA

Effective TFLOP/s = 2 * 3 * MACs per image * images/s: a multiply-add is two
floating-point operations, and a training step counts three times the
forward's (forward, gradient of the input, gradient of the weights), the
usual convention, which the peer uses too.

Memory-bandwidth fraction: bytes a step must move / step time / peak.  The
bytes are an estimate from the graph (cuda-train's activation_bytes_per_image:
every live node's fp32 output but for the input, identities, zeros and the
loss): forward writes each activation once and reads it once (2A), backward
reads the saved activation, writes its gradient and reads that once (3A), so
5 * A * batch; plus the parameters, read in forward and backward, their
gradient written and read by the update, which reads and writes the weights
and the momentum (8 * 4 bytes * params).  A backend that fuses passes
(batch-norm statistics into the convolution, apply + ReLU into the next one)
moves less than this model, so the fraction is "of the unfused traffic".
The peak is measured in the same run: a 1 GiB device-to-device copy with
torch (read + write = 2 GiB per copy), the best of 12.

A mode or a run that fails (no GPU, torch.compile unavailable, out of
memory) is printed n/a; the table is printed anyway.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ARCH1 = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"
# The proxies of the table (the peer's set).
TABLE_PROXIES = ["grad_norm", "snip", "grasp", "fisher", "jacob_cov", "naswot", "synflow", "zen"]

# name: (label, network, peer modes, target: sieve / best PyTorch at least)
TRAIN_ROWS = {
    "train256": ("train C16N5, 3x32x32, batch 256 (img/s)", dict(C=16, N=5, in_ch=3, size=32, batch=256),
                 ["eager", "cl", "graph", "compile"], 2.0),
    "train64": ("train C16N5, batch 64 (img/s)", dict(C=16, N=5, in_ch=3, size=32, batch=64),
                ["eager", "graph", "compile"], 1.5),
    "train-c8n1": ("train C8N1, 1x28x28, batch 128 (img/s)", dict(C=8, N=1, in_ch=1, size=28, batch=128),
                   ["eager", "graph"], 1.0),
}
ROWS = ["train256", "train64", "train-c8n1", "many", "proxies", "memory", "screen"]


def run_json(cmd, timeout, what):
    """Runs cmd; the JSON lines it printed, or None (and why on stderr)."""
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"  {what}: n/a ({type(e).__name__}: {e})", file=sys.stderr)
        return None
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"  {what}: n/a (exit {p.returncode}: {tail[:300]})", file=sys.stderr)
        return None
    print(f"  {what}: {time.time() - t0:.1f} s", file=sys.stderr)
    return lines


def peer_archs(peer, n, seed=0):
    """The architectures the peer draws for its train-many and time-proxies
    (torch_nb201.random_arch over random.Random(seed)), so that both sides
    run the same cells; None when its module cannot be imported here."""
    try:
        import random
        sys.path.insert(0, os.path.dirname(os.path.abspath(peer)))
        import torch_nb201
        rng = random.Random(seed)
        return [torch_nb201.random_arch(rng) for _ in range(n)]
    except Exception as e:  # no torch here: each side draws its own
        print(f"  the peer's architectures: n/a ({type(e).__name__}: {e}); sieve draws its own", file=sys.stderr)
        return None


class Bench:
    def __init__(self, args):
        self.a = args
        self.q = args.quick

    def peer(self, *argv):
        mode = argv[argv.index("--mode") + 1] if "--mode" in argv else ""
        return run_json([self.a.python, self.a.peer, *argv], self.a.timeout, f"PyTorch {argv[0]} {mode}")

    def ours(self, *argv):
        return run_json([self.a.exe, *argv, "--device", self.a.device], self.a.timeout,
                        f"sieve {self.a.device} " + " ".join(argv[:1]))

    def same_archs(self, n):
        """--arch-file with the peer's n architectures (or nothing)."""
        archs = peer_archs(self.a.peer, n)
        if not archs:
            return []
        path = os.path.join(self.a.workdir, f"archs-{n}.txt")
        with open(path, "w") as f:
            f.write("\n".join(archs) + "\n")
        return ["--arch-file", path]

    def steps(self):
        return ("5", "2") if self.q else ("200", "20")

    def net_args(self, net, batch=True):
        out = ["--C", str(net["C"]), "--N", str(net["N"]), "--in-ch", str(net["in_ch"]), "--size", str(net["size"])]
        return out + (["--batch", str(net["batch"])] if batch else [])

    def train_row(self, name):
        label, net, modes, target = TRAIN_ROWS[name]
        iters, warmup = self.steps()
        common = [*self.net_args(net), "--iters", iters, "--warmup", warmup]
        peer = {}
        for m in modes:
            if m in self.a.skip_modes:
                continue
            r = self.peer("train", "--arch", ARCH1, *common, "--mode", m)
            peer[m] = r[0] if r else None
        r = self.ours("train", "--arch", ARCH1, *common)
        ours = r[0] if r else None
        rates = {m: (p["train_images_per_s"] if p else None) for m, p in peer.items()}
        best = max((v for v in rates.values() if v), default=None)
        row = {"row": name, "label": label, "pytorch": rates, "pytorch_best": best, "target": target,
               "sieve": ours["img_per_s"] if ours else None, "sieve_run": ours,
               "pytorch_peak_mem_mb": {m: (p["peak_mem_mb"] if p else None) for m, p in peer.items()}}
        row["ratio"] = row["sieve"] / best if row["sieve"] and best else None
        if ours:
            row["tflops"] = 6 * ours["macs_per_image"] * ours["img_per_s"] / 1e12
            per_step = 5 * ours["activation_bytes_per_image"] * net["batch"] + 8 * 4 * ours["params"]
            row["bytes_per_step"] = per_step
            row["bandwidth_gbs"] = per_step / (ours["ms_per_step"] / 1e3) / 1e9
        if best:
            p = max((p for p in peer.values() if p), key=lambda p: p["train_images_per_s"])
            row["pytorch_tflops"] = 6 * p["macs_per_image"] * best / 1e12
        return row

    def many_row(self):
        n, steps = ("3", "4") if self.q else ("16", "70")
        k = str(self.a.concurrent)
        warm = "2" if self.q else "20"
        peer_iters = str(int(steps) - int(warm))  # the peer counts its warm-up steps too
        r = self.peer("train-many", "--archs", n, "--iters", peer_iters, "--warmup", warm, "--mode", "eager")
        best = r[0]["aggregate_images_per_s"] if r else None
        same = self.same_archs(int(n))
        seq = self.ours("train-many", "--archs", n, "--iters", steps, "--concurrent", "1", *same)
        conc = self.ours("train-many", "--archs", n, "--iters", steps, "--concurrent", k, *same)
        ours = conc[0]["aggregate_img_per_s"] if conc else None
        return {"row": "many", "label": f"{n} random C16N5 candidates x {steps} steps, batch 256 (aggregate img/s)",
                "pytorch": {"eager, one after another": best}, "pytorch_best": best, "target": 3.0,
                "sieve": ours, "sieve_one_after_another": seq[0]["aggregate_img_per_s"] if seq else None,
                "concurrent": int(k), "ratio": ours / best if ours and best else None}

    def proxies_row(self):
        n = "2" if self.q else "10"
        names = ",".join(TABLE_PROXIES)
        r = self.peer("time-proxies", "--archs", n, "--batch", "64", "--C", "16", "--N", "5")
        peer = {k: v["median_ms"] for k, v in r[0]["proxies"].items()} if r else {}
        # All of them in one call for the total (they share passes); each
        # alone for its own time, as the peer times them.
        same = self.same_archs(int(n))
        o = self.ours("proxies", "--archs", n, "--batch", "64", "--C", "16", "--N", "5", "--proxies", names, *same)
        ours = {}
        for p in TABLE_PROXIES:
            one = self.ours("proxies", "--archs", n, "--batch", "64", "--C", "16", "--N", "5", "--proxies", p, *same)
            if one:
                ours[p] = one[0]["median_ms"].get(p)
        ratios = {p: peer[p] / ours[p] for p in TABLE_PROXIES if peer.get(p) and ours.get(p)}
        return {"row": "proxies", "label": "proxies per architecture, C16N5, batch 64 (ms)", "pytorch": peer,
                "sieve": ours, "sieve_total_ms": o[0]["median_total_ms"] if o else None,
                "speedups": ratios, "target": 5.0, "target_total_ms": 10.0,
                "ratio": min(ratios.values()) if len(ratios) == len(TABLE_PROXIES) else None}

    def memory_row(self, train256):
        # the smallest peak of the modes measured (eager's unless it was skipped)
        mems = [v for v in (train256["pytorch_peak_mem_mb"].values() if train256 else []) if v]
        peer = min(mems) if mems else None
        ours = train256["sieve_run"]["memory_bytes"] / 2**20 if train256 and train256["sieve_run"] else None
        return {"row": "memory", "label": "peak GPU memory, C16N5 batch 256 (MB)", "pytorch": {"smallest of the modes run": peer},
                "pytorch_best": peer, "sieve": ours, "target": "below PyTorch's",
                "ratio": ours / peer if ours and peer else None}

    def screen_row(self):
        n = "8" if self.q else str(self.a.screen_archs)
        k = self.a.screen_concurrent or self.a.concurrent
        # The "all proxies": the eight of its table (the peer's set).
        o = self.ours("screen", "--archs", n, "--batch", "64", "--C", "16", "--N", "5",
                      "--concurrent", str(k), "--proxies", ",".join(TABLE_PROXIES))
        wall = o[0]["wall_s"] if o else None
        per_10k = wall * 10000 / int(n) if wall else None
        return {"row": "screen", "label": f"screen {n} NB201 C16N5, batch 64, the table's 8 proxies, {k} at once (s)",
                "pytorch": {}, "sieve": wall, "target": "under 120 s for 10,000 on one H100",
                "sieve_10000_s": per_10k, "sieve_run": o[0] if o else None}


def peak_bandwidth():
    """GB/s of a 1 GiB device-to-device copy (read + write), best of 12; None without CUDA."""
    try:
        import torch
        if not torch.cuda.is_available():
            return None, "no CUDA device for torch"
        a = torch.empty(2**28, dtype=torch.float32, device="cuda")
        b = torch.empty_like(a)
        best = 0.0
        for _ in range(12):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            b.copy_(a)
            torch.cuda.synchronize()
            best = max(best, 2 * a.numel() * 4 / (time.perf_counter() - t0) / 1e9)
        return best, torch.cuda.get_device_name(0)
    except Exception as e:  # no torch, no GPU: the fraction is n/a
        return None, f"{type(e).__name__}: {e}"


def fmt(v, nd=1):
    if v is None:
        return "n/a"
    if isinstance(v, str):
        return v
    return f"{v:,.{nd}f}"


def print_header(peak, gpu):
    print(f"\nGPU: {gpu}; peak device-to-device copy: {fmt(peak)} GB/s")
    print("| case | PyTorch (per mode) | PyTorch best | sieve | sieve/PyTorch | target | TFLOP/s sieve (PyTorch) "
          "| bandwidth of the unfused traffic |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |", flush=True)


def print_table(rows, peak, gpu):
    for r in rows:
        modes = ", ".join(f"{m} {fmt(v)}" for m, v in r.get("pytorch", {}).items()) or "-"
        extra_t = extra_b = "-"
        if "tflops" in r:
            extra_t = f"{fmt(r['tflops'], 2)} ({fmt(r.get('pytorch_tflops'), 2)})"
            frac = r["bandwidth_gbs"] / peak if peak else None
            extra_b = f"{fmt(r['bandwidth_gbs'])} GB/s = {fmt(frac * 100 if frac else None)}%"
        target = r["target"] if isinstance(r["target"], str) else f">= {r['target']}x"
        sieve = fmt(r.get("sieve")) if not isinstance(r.get("sieve"), dict) else \
            ", ".join(f"{k} {fmt(v, 2)}" for k, v in r["sieve"].items())
        if r["row"] == "many":
            sieve += f" ({r['concurrent']} at once; one after another {fmt(r['sieve_one_after_another'])})"
        if r["row"] == "screen" and r.get("sieve_10000_s") and "10000 " not in r["label"]:
            sieve += f" (10,000 at this rate: {fmt(r['sieve_10000_s'])} s)"
        if r["row"] == "proxies":
            sieve += f"; total {fmt(r['sieve_total_ms'], 2)} ms"
            ratio = ", ".join(f"{k} {v:.1f}x" for k, v in r["speedups"].items()) or "n/a"
            target = f"each >= {r['target']}x, total <= {r['target_total_ms']} ms"
        elif r["row"] == "memory":
            ratio = fmt(r["ratio"], 2)
        else:
            ratio = fmt(r.get("ratio"), 2) + ("x" if r.get("ratio") else "")
        print(f"| {r['label']} | {modes} | {fmt(r.get('pytorch_best'))} | {sieve} | {ratio} | {target} | {extra_t} "
              f"| {extra_b} |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--exe", default=os.path.join(HERE, "..", "build", "bench", "cuda-train"), help="cuda-train")
    ap.add_argument("--peer", default=os.path.join(HERE, "..", "..", "shared", "peers", "torch_nb201_gpu.py"),
                    help="torch_nb201_gpu.py (with torch_nb201.py beside it)")
    ap.add_argument("--python", default=sys.executable, help="the Python that runs the peer (PyTorch with CUDA)")
    ap.add_argument("--device", default="cuda", help="sieve's runtime device (default cuda; cpu for a smoke test)")
    ap.add_argument("--rows", default=",".join(ROWS), help="rows to run, of: " + ", ".join(ROWS))
    ap.add_argument("--concurrent", type=int, default=4, help="candidates at once in the many and screen rows")
    ap.add_argument("--quick", action="store_true", help="few steps and architectures: a smoke test, not a figure")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per run")
    ap.add_argument("--out", help="also write the rows as JSON to this file")
    ap.add_argument("--skip-modes", default="", type=lambda v: [m for m in v.split(",") if m],
                    help="PyTorch modes not to run in the training rows (torch.compile compiles for minutes; the "
                         "issue's figures put it and eager below channels-last and the CUDA graph)")
    ap.add_argument("--screen-concurrent", type=int, default=0,
                    help="architectures at once in the screen row (default: --concurrent)")
    ap.add_argument("--screen-archs", type=int, default=10000,
                    help="architectures of the screen row (the issue's 10,000; fewer where a call's time is short)")
    a = ap.parse_args()
    import atexit
    import shutil
    import tempfile
    a.workdir = tempfile.mkdtemp(prefix="cuda-bench-")
    atexit.register(shutil.rmtree, a.workdir, True)
    rows = [r.strip() for r in a.rows.split(",") if r.strip()]
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        ap.error(f"unknown rows {unknown}; known: {ROWS}")
    if not os.access(a.exe, os.X_OK):
        ap.error(f"{a.exe} is not an executable (build it: ninja -C build bench/cuda-train)")
    peak, gpu = peak_bandwidth()
    b = Bench(a)
    out = []
    train256 = None
    print_header(peak, gpu)

    def save():
        if a.out:
            with open(a.out, "w") as f:
                json.dump({"gpu": gpu, "peak_copy_gbs": peak, "device": a.device, "quick": a.quick, "rows": out,
                           "date": time.strftime("%Y-%m-%d")}, f, indent=1)

    for name in rows:
        print(f"{name}:", file=sys.stderr)
        if name in TRAIN_ROWS:
            r = b.train_row(name)
            if name == "train256":
                train256 = r
        elif name == "many":
            r = b.many_row()
        elif name == "proxies":
            r = b.proxies_row()
        elif name == "memory":
            r = b.memory_row(train256 or (b.train_row("train256") if "train256" not in rows else None))
        else:
            r = b.screen_row()
        out.append(r)
        print_table([r], peak, gpu)  # each row as soon as it is measured
        save()
    if a.quick:
        print("(--quick: a smoke test of the driver, not figures to report)")


if __name__ == "__main__":
    main()
