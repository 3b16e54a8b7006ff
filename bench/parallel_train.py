#!/usr/bin/env python3
"""Parallel trainings: W=2 workers x 1 thread against W=1 worker x 2 threads,
for sieve and for the PyTorch peer, in one run.

sieve runs one study (random search over NB201 cells at C=8, N=1 on
Fashion-MNIST, K trainings of the same length) twice: `workers: 1` with
`threads: 2`, then `workers: 2` with one thread per training
(`threads_per_worker: 1`).  The peer (../shared/peers/torch_nb201.py) trains
the same K cells for the same number of steps, one after the other with 2
threads, then two processes at a time with 1 thread each.  Printed: wall
seconds of each, the speedup of 2x1 over 1x2 for each, and their ratio.

    python3 bench/parallel_train.py --sieve build/src/cli/sieve [--trainings 6 --steps 24]
"""
import argparse, csv, io, os, subprocess, sys, tempfile, time

STUDY = """name: parallel
seed: 3
space: {plugin: nb201, C: 8, N: 1, in_channels: 1, size: 28}
optimizer: {plugin: random}
evaluator: {plugin: train, train_limit: %(limit)d, validation: 512, test: false, batch_size: %(batch)d,
            epochs: 1, threads: 2, threads_per_worker: %(tpw)d}
objective: {metric: val_acc, direction: maximize}
budget: {evaluations: %(k)d}
workers: %(workers)d
tell_order: trial
"""


def sieve_study(exe, folder, k, steps, batch, workers):
    cfg = os.path.join(folder, f"w{workers}.yaml")
    with open(cfg, "w") as f:
        f.write(STUDY % {"k": k, "limit": steps * batch, "batch": batch, "workers": workers,
                         "tpw": 1 if workers == 2 else 0})
    store = os.path.join(folder, f"w{workers}.sieve")
    t0 = time.monotonic()
    subprocess.run([exe, "run", cfg, "--store", store, "--quiet"], check=True, capture_output=True)
    wall = time.monotonic() - t0
    out = subprocess.run([exe, "export", store, "--format", "csv"], check=True, capture_output=True, text=True).stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    return wall, rows


def torch_all(peer, archs, steps, batch, threads, at_once):
    cmd = lambda arch: ["/usr/bin/python3", peer, "train", "--arch", arch, "--C", "8", "--N", "1", "--in-ch", "1",
                        "--size", "28", "--iters", str(steps), "--batch", str(batch), "--threads", str(threads)]
    t0 = time.monotonic()
    pending = list(archs)
    while pending:
        procs = [subprocess.Popen(cmd(a), stdout=subprocess.DEVNULL) for a in pending[:at_once]]
        pending = pending[at_once:]
        for p in procs:
            if p.wait() != 0:
                sys.exit("the PyTorch peer failed")
    return time.monotonic() - t0


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--sieve", default=os.path.join(here, "..", "build", "src", "cli", "sieve"))
    ap.add_argument("--peer", default=os.path.join(here, "..", "..", "shared", "peers", "torch_nb201.py"))
    ap.add_argument("--trainings", type=int, default=6)
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--batch", type=int, default=128)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sieve-parallel-") as folder:
        s1, rows1 = sieve_study(args.sieve, folder, args.trainings, args.steps, args.batch, 1)
        s2, rows2 = sieve_study(args.sieve, folder, args.trainings, args.steps, args.batch, 2)
    archs = [r["genotype"] for r in rows1]
    assert archs == [r["genotype"] for r in rows2], "the two studies trained different cells"
    t1 = torch_all(args.peer, archs, args.steps, args.batch, 2, 1)
    t2 = torch_all(args.peer, archs, args.steps, args.batch, 1, 2)
    print(f"{args.trainings} NB201 cells (C=8, N=1), {args.steps} steps of {args.batch} Fashion-MNIST images each, "
          f"{os.cpu_count()} cores")
    print(f"{'':8} {'1 worker x 2 threads':>22} {'2 workers x 1 thread':>22} {'speedup':>8}")
    print(f"{'sieve':8} {s1:20.1f} s {s2:20.1f} s {s1 / s2:7.2f}x")
    print(f"{'PyTorch':8} {t1:20.1f} s {t2:20.1f} s {t1 / t2:7.2f}x")
    print(f"sieve 2x1 against PyTorch 2x1: {t2 / s2:.2f}x as fast; speedup ratio sieve/PyTorch {(s1 / s2) / (t1 / t2):.2f}")


if __name__ == "__main__":
    main()
