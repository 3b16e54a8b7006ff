#!/usr/bin/env python3
"""Training throughput of an nb101 candidate in sieve against the PyTorch peer, in one run.

Both train the NAS-Bench-101 Inception-like cell (the paper's figure 1, as the dataset stores
it) on Fashion-MNIST (batch 128, SGD momentum 0.9 Nesterov, weight decay 5e-4, cosine
schedule, same thread count) for the same number of steps, at settings of the benchmark's
skeleton (3 stacks; `--settings stem:cells,...`): the published network (stem 128, 3 cells
per stack: the issue's mid-sized candidate, 2.7M parameters at CIFAR-10 size, between the
space's smallest network of 0.23M and largest of 50M), and the narrower 32:3, 16:3 and
32:1, whose vertices of 4-16 channels make them overhead-bound.  The peer is bench/torch_nb101.py (PyTorch
from the authors' model_builder.py).  Prints images/s, the ratio sieve/PyTorch and each
one's peak RSS; each configuration runs `--repeat` times alternating the two, medians
reported.

    make bench-nb101-train     # or: python3 bench/train_nb101_vs_torch.py --sieve build/src/cli/sieve
    ... --before OTHER/src/cli/sieve   # an older build alternating in the same run
"""
import argparse, json, os, statistics, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_vs_torch import run_json  # noqa: E402

SPEC = ("matrix=[[0,1,1,1,1,0,0],[0,0,0,0,0,0,1],[0,0,0,0,0,0,1],[0,0,0,0,0,0,1],[0,0,0,0,0,1,0],"
        "[0,0,0,0,0,0,1],[0,0,0,0,0,0,0]],ops=[input,conv3x3-bn-relu,conv1x1-bn-relu,maxpool3x3,"
        "conv3x3-bn-relu,conv3x3-bn-relu,output]")


def sieve_train(exe, stem, cells, iters, batch, threads):
    r = run_json([exe, "train", "-q", "--space", "nb101", "--arch", SPEC, "--set", f"space.stem_channels={stem}",
                  "--set", f"space.cells={cells}", "--set", "space.in_channels=1", "--set", "space.size=28",
                  "--set", "space.bn_momentum=0.1", "--dataset", "fashion-mnist", "--validation", "0",
                  "--train-limit", str(iters * batch), "--batch", str(batch), "--epochs", "1",
                  "--threads", str(threads), "--set", "evaluator.test=false", "--set", "evaluator.normalize=true"])
    return r["images_per_s"], r["peak_rss_mb"]


def torch_train(peer, stem, cells, iters, batch, threads):
    r = run_json(["/usr/bin/python3", peer, "train", "--spec", SPEC, "--stem", str(stem), "--cells", str(cells),
                  "--in-ch", "1", "--iters", str(iters), "--batch", str(batch), "--threads", str(threads)])
    return r["train_images_per_s"], r["peak_rss_mb"]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--sieve", default=os.path.join(here, "..", "build", "src", "cli", "sieve"))
    ap.add_argument("--peer", default=os.path.join(here, "torch_nb101.py"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--settings", default="128:3,32:3,16:3,32:1",
                    help="stem channels:cells per stack, comma-separated (3 stacks each)")
    ap.add_argument("--before", help="another sieve (an older build) run in the same alternation: its images/s "
                    "and ratio too, so that a change is measured under the same load")
    args = ap.parse_args()
    rows = []
    for stem, cells in (tuple(int(v) for v in x.split(":")) for x in args.settings.split(",")):
        s_ips, t_ips, s_rss, t_rss, b_ips = [], [], [], [], []
        for _ in range(args.repeat):
            a, b = sieve_train(args.sieve, stem, cells, args.iters, args.batch, args.threads)
            s_ips.append(a); s_rss.append(b)
            a, b = torch_train(args.peer, stem, cells, args.iters, args.batch, args.threads)
            t_ips.append(a); t_rss.append(b)
            if args.before:
                b_ips.append(sieve_train(args.before, stem, cells, args.iters, args.batch, args.threads)[0])
        s, t = statistics.median(s_ips), statistics.median(t_ips)
        rows.append((stem, cells, s, t, s / t, max(s_rss), max(t_rss)))
        print(f"stem={stem:3d} cells={cells} {args.iters} steps: sieve {s:7.1f} img/s  pytorch {t:7.1f} img/s  "
              f"ratio {s / t:5.2f}x  peak RSS sieve {max(s_rss):7.1f} MB  pytorch {max(t_rss):7.1f} MB", flush=True)
        if args.before:
            bm = statistics.median(b_ips)
            print(f"  before: sieve {bm:7.1f} img/s  ratio {bm / t:5.2f}x  (runs: "
                  f"{' '.join(f'{v:.1f}' for v in b_ips)}; after: {' '.join(f'{v:.1f}' for v in s_ips)}; "
                  f"pytorch: {' '.join(f'{v:.1f}' for v in t_ips)})", flush=True)
    print(json.dumps({"threads": args.threads, "batch": args.batch, "steps": args.iters, "rows": [
        {"stem": st, "cells": c, "sieve_ips": s, "torch_ips": t, "ratio": q, "sieve_rss_mb": sr, "torch_rss_mb": tr}
        for st, c, s, t, q, sr, tr in rows]}))


if __name__ == "__main__":
    sys.exit(main())
