#!/usr/bin/env python3
"""NAS-Bench-101 network in PyTorch: the peer the nb101 space is measured against.

Written from the authors' model_builder.py and base_ops.py (Ying et al., ICML 2019): channel
split among the vertices feeding the output, 1x1 projections of the cell input, truncation
by slicing, concatenation at the output plus the projected input, BN eps 1e-5.  Independent
of sieve's construction (which replaces slicing by split convolutions).  Run with
/usr/bin/python3 (Debian's python3-torch).

  torch_nb101.py params SPEC... [--stem 128 --stacks 3 --cells 3 --in-ch 3 --classes 10] (one JSON line each)
  torch_nb101.py train --spec SPEC [--stem 16 --cells 1 --iters 50 --batch 128] (Fashion-MNIST)

SPEC is sieve's nb101 text: matrix=[[...],...],ops=[input,...,output].
"""
import argparse, json, os, re, sys, time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "peers"))
from torch_nb201 import fashion, rss_mb  # noqa: E402  (the peers' shared data reader)

OPS = ["conv3x3-bn-relu", "conv1x1-bn-relu", "maxpool3x3"]


def parse_spec(text):
    m = re.fullmatch(r"\s*matrix=(\[.*\])\s*,\s*ops=\[(.*)\]\s*", text)
    matrix = json.loads(m.group(1))
    ops = [o.strip().strip("'\"") for o in m.group(2).split(",")]
    return matrix, ops


def prune(matrix, ops):
    """model_spec._prune: keep the vertices on an input-to-output path."""
    n = len(matrix)
    fwd, bwd = {0}, {n - 1}
    for i in range(n):
        if i in fwd:
            fwd |= {j for j in range(n) if matrix[i][j]}
    for i in range(n - 1, -1, -1):
        if any(matrix[i][j] for j in bwd):
            bwd.add(i)
    keep = sorted(fwd & bwd)
    assert 0 in keep and n - 1 in keep, "disconnected"
    return [[matrix[i][j] for j in keep] for i in keep], [ops[i] for i in keep]


def vertex_channels(cin, cout, m):
    n = len(m)
    ch = [0] * n
    ch[0], ch[-1] = cin, cout
    if n == 2:
        return ch
    fan = sum(m[v][n - 1] for v in range(1, n - 1))
    base, corr = cout // fan, cout % fan
    for v in range(1, n - 1):
        if m[v][n - 1]:
            ch[v] = base + (1 if corr > 0 else 0)
            corr -= 1 if corr > 0 else 0
    for v in range(n - 3, 0, -1):
        if not m[v][n - 1]:
            for d in range(v + 1, n - 1):
                if m[v][d]:
                    ch[v] = max(ch[v], ch[d])
    return ch


class ConvBnRelu(nn.Sequential):
    def __init__(self, cin, cout, k, momentum=0.003):
        super().__init__(nn.Conv2d(cin, cout, k, 1, k // 2, bias=False), nn.BatchNorm2d(cout, eps=1e-5, momentum=momentum),
                         nn.ReLU(inplace=False))


class Cell(nn.Module):
    def __init__(self, m, ops, cin, cout, momentum):
        super().__init__()
        self.m, self.n = m, len(m)
        self.ch = vertex_channels(cin, cout, m)
        n = self.n
        self.proj = nn.ModuleDict()
        self.op = nn.ModuleDict()
        for t in range(1, n - 1):
            if m[0][t]:
                self.proj[str(t)] = ConvBnRelu(cin, self.ch[t], 1, momentum)
            if ops[t] == "conv3x3-bn-relu":
                self.op[str(t)] = ConvBnRelu(self.ch[t], self.ch[t], 3, momentum)
            elif ops[t] == "conv1x1-bn-relu":
                self.op[str(t)] = ConvBnRelu(self.ch[t], self.ch[t], 1, momentum)
            else:
                self.op[str(t)] = nn.MaxPool2d(3, 1, 1)
        if m[0][n - 1]:
            self.proj[str(n - 1)] = ConvBnRelu(cin, cout, 1, momentum)

    def forward(self, x):
        n, m = self.n, self.m
        if n == 2:
            return self.proj[str(1)](x)
        vals, outs = [x], []
        for t in range(1, n - 1):
            terms = [vals[s][:, :self.ch[t]] for s in range(1, t) if m[s][t]]  # truncate
            if m[0][t]:
                terms.append(self.proj[str(t)](x))
            v = self.op[str(t)](sum(terms))
            vals.append(v)
            if m[t][n - 1]:
                outs.append(v)
        y = torch.cat(outs, 1) if len(outs) > 1 else outs[0]
        if m[0][n - 1]:
            y = y + self.proj[str(n - 1)](x)
        return y


class NB101(nn.Module):
    def __init__(self, spec, stem=128, stacks=3, cells=3, in_ch=3, classes=10, momentum=0.003):
        super().__init__()
        m, ops = prune(*parse_spec(spec))
        layers = [ConvBnRelu(in_ch, stem, 3, momentum)]
        c, cin = stem, stem
        for s in range(stacks):
            if s > 0:
                layers.append(nn.MaxPool2d(2, 2))
                c *= 2
            for _ in range(cells):
                layers.append(Cell(m, ops, cin, c, momentum))
                cin = c
        self.features = nn.Sequential(*layers)
        self.dense = nn.Linear(c, classes)

    def forward(self, x):
        return self.dense(self.features(x).mean((2, 3)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["params", "train"])
    ap.add_argument("specs", nargs="*")
    ap.add_argument("--spec", dest="spec_opt")
    ap.add_argument("--stem", type=int, default=128)
    ap.add_argument("--stacks", type=int, default=3)
    ap.add_argument("--cells", type=int, default=3)
    ap.add_argument("--in-ch", type=int, default=3)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--momentum", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.cmd == "params":
        for spec in args.specs:
            net = NB101(spec, args.stem, args.stacks, args.cells, args.in_ch, args.classes, args.momentum)
            print(json.dumps({"spec": spec, "params": sum(p.numel() for p in net.parameters())}), flush=True)
        return
    spec = args.spec_opt or args.specs[0]
    net = NB101(spec, args.stem, args.stacks, args.cells, args.in_ch, args.classes, args.momentum)
    xs, ys = fashion()
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, args.iters)
    g = torch.Generator().manual_seed(args.seed)
    net.train()
    t0 = time.perf_counter()
    for _ in range(args.iters):
        idx = torch.randint(0, len(xs), (args.batch,), generator=g)
        loss = F.cross_entropy(net(xs[idx]), ys[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    ips = args.iters * args.batch / (time.perf_counter() - t0)
    print(json.dumps({"spec": spec, "stem": args.stem, "cells": args.cells, "batch": args.batch, "steps": args.iters,
                      "train_images_per_s": round(ips, 1), "final_loss": loss.item(),
                      "peak_rss_mb": round(rss_mb(), 1), "threads": args.threads, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
