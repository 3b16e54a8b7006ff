#!/usr/bin/env python3
"""Depthwise convolutions at MobileNet sizes, sieve's CPU runtime against
PyTorch in the same run: conv (groups = channels, pad k/2, no bias) + batch
norm + ReLU, batch 128, forward and backward, median ms per step.

    python3 bench/depthwise_vs_torch.py [--depthwise build/bench/depthwise] [--threads 2]
"""
import argparse, json, os, statistics, subprocess, sys, time

import torch
import torch.nn as nn

# (channels, extent, stride): MobileNetV2/ProxylessNAS expanded widths at CIFAR scale.
SHAPES = [(96, 32, 1), (144, 16, 2), (240, 8, 1), (480, 4, 1)]


def torch_ms(c, h, k, s, steps):
    net = nn.Sequential(nn.Conv2d(c, c, k, s, k // 2, groups=c, bias=False), nn.BatchNorm2d(c), nn.ReLU())
    x = torch.randn(128, c, h, h)
    times = []
    for i in range(steps + 2):
        t0 = time.perf_counter()
        y = net(x)
        y.backward(torch.ones_like(y) * 1e-3)
        if i >= 2:
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--depthwise", default=os.path.join(here, "..", "build", "bench", "depthwise"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    for k in (3, 5, 7):
        for c, h, s in SHAPES:
            out = subprocess.run([args.depthwise, str(c), str(h), str(k), str(s), str(args.threads), str(args.steps)],
                                 check=True, capture_output=True, text=True).stdout
            sv = json.loads(out.strip().splitlines()[-1])["ms"]
            tv = torch_ms(c, h, k, s, args.steps)
            rows.append({"k": k, "C": c, "H": h, "stride": s, "sieve_ms": sv, "torch_ms": tv, "speedup": tv / sv})
            print(f"k={k} C={c:3d} {h:2d}x{h:<2d} s={s}: sieve {sv:7.2f} ms  pytorch {tv:7.2f} ms  "
                  f"sieve is {tv / sv:4.2f}x PyTorch's speed", flush=True)
    print(json.dumps({"threads": args.threads, "batch": 128, "rows": rows}))


if __name__ == "__main__":
    sys.exit(main())
