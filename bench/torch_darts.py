#!/usr/bin/env python3
"""The DARTS evaluation network in PyTorch: the peer sieve's `darts` space is checked and measured against.

Written from the paper's definitions (Liu, Simonyan & Yang, "DARTS: Differentiable Architecture Search",
ICLR 2019, section 3 and appendix A.1, the evaluation network `NetworkCIFAR` of the authors' code): stem
conv3x3(3C)+BN; `layers` cells, reductions at layers//3 and 2*layers//3; a cell preprocesses its two inputs
(ReLU-conv1x1-BN, or a factorized reduction after a reduction cell), sums two operations per intermediate
node and concatenates the intermediate nodes; global average pool, linear.  No auxiliary head and no
drop-path, as sieve's space (they are training devices, not part of the network).

Needs Debian's python3-torch. Run with /usr/bin/python3.

  torch_darts.py params GENOTYPE [--C 36 --layers 20 --classes 10 --in-ch 3 --size 32]   (prints JSON)
  torch_darts.py train GENOTYPE [--C 16 --layers 8 --iters 30 --batch 128 --threads 2]   (Fashion-MNIST)
"""
import argparse, os, ast, json, sys, time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "peers"))
from torch_nb201 import fashion, rss_mb  # noqa: E402  (the peers' shared data reader)


def parse_genotype(text):
    """DARTS's Genotype(normal=[...], normal_concat=..., reduce=[...], reduce_concat=...) text -> dict."""
    call = ast.parse(text.strip(), mode="eval").body
    out = {}
    for kw in call.keywords:
        if isinstance(kw.value, ast.Call):  # range(a, b)
            out[kw.arg] = list(range(*[ast.literal_eval(a) for a in kw.value.args]))
        else:
            out[kw.arg] = ast.literal_eval(kw.value)
    return out


class ReLUConvBN(nn.Sequential):
    def __init__(self, cin, cout, k=1, stride=1, pad=0):
        super().__init__(nn.ReLU(inplace=False), nn.Conv2d(cin, cout, k, stride, pad, bias=False), nn.BatchNorm2d(cout))


class FactorizedReduce(nn.Module):
    """ReLU, then 1x1 stride-2 convolutions of x and of x shifted by one pixel, concatenated, BN."""

    def __init__(self, cin, cout):
        super().__init__()
        self.conv_1 = nn.Conv2d(cin, cout // 2, 1, stride=2, bias=False)
        self.conv_2 = nn.Conv2d(cin, cout // 2, 1, stride=2, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        x = F.relu(x)
        return self.bn(torch.cat([self.conv_1(x), self.conv_2(x[:, :, 1:, 1:])], dim=1))


def dw_pw(c, k, stride, pad, dil):
    return [nn.ReLU(inplace=False), nn.Conv2d(c, c, k, stride, pad, dilation=dil, groups=c, bias=False),
            nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c)]


def make_op(name, c, stride):
    if name == "max_pool_3x3":
        return nn.MaxPool2d(3, stride, 1)
    if name == "avg_pool_3x3":
        return nn.AvgPool2d(3, stride, 1, count_include_pad=False)
    if name == "skip_connect":
        return nn.Identity() if stride == 1 else FactorizedReduce(c, c)
    if name in ("sep_conv_3x3", "sep_conv_5x5"):
        k = int(name[-1])
        return nn.Sequential(*dw_pw(c, k, stride, k // 2, 1), *dw_pw(c, k, 1, k // 2, 1))
    if name in ("dil_conv_3x3", "dil_conv_5x5"):
        k = int(name[-1])
        return nn.Sequential(*dw_pw(c, k, stride, k - 1, 2))
    raise ValueError(f"unknown operation {name!r}")


class Cell(nn.Module):
    def __init__(self, pairs, concat, c_pp, c_p, c, reduction, reduction_prev):
        super().__init__()
        self.pre0 = FactorizedReduce(c_pp, c) if reduction_prev else ReLUConvBN(c_pp, c)
        self.pre1 = ReLUConvBN(c_p, c)
        self.inputs = [i for _, i in pairs]
        self.ops = nn.ModuleList(make_op(op, c, 2 if reduction and i < 2 else 1) for op, i in pairs)
        self.concat = list(concat)

    def forward(self, s0, s1):
        states = [self.pre0(s0), self.pre1(s1)]
        for k in range(len(self.ops) // 2):
            states.append(self.ops[2 * k](states[self.inputs[2 * k]]) +
                          self.ops[2 * k + 1](states[self.inputs[2 * k + 1]]))
        return torch.cat([states[i] for i in self.concat], dim=1)


class Network(nn.Module):
    def __init__(self, genotype, C=36, layers=20, classes=10, in_ch=3):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(in_ch, 3 * C, 3, padding=1, bias=False), nn.BatchNorm2d(3 * C))
        c_pp, c_p, c = 3 * C, 3 * C, C
        self.cells = nn.ModuleList()
        reduction_prev = False
        for i in range(layers):
            reduction = i in (layers // 3, 2 * layers // 3)
            if reduction:
                c *= 2
            kind = "reduce" if reduction else "normal"
            cell = Cell(genotype[kind], genotype[kind + "_concat"], c_pp, c_p, c, reduction, reduction_prev)
            self.cells.append(cell)
            reduction_prev = reduction
            c_pp, c_p = c_p, len(cell.concat) * c
        self.classifier = nn.Linear(c_p, classes)

    def forward(self, x):
        s0 = s1 = self.stem(x)
        for cell in self.cells:
            s0, s1 = s1, cell(s0, s1)
        return self.classifier(F.adaptive_avg_pool2d(s1, 1).flatten(1))


def count_params(net):
    return sum(p.numel() for p in net.parameters())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["params", "train"])
    ap.add_argument("genotype")
    ap.add_argument("--C", type=int, default=36)
    ap.add_argument("--layers", type=int, default=20)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--in-ch", type=int, default=3)
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    genotype = parse_genotype(args.genotype)
    if args.cmd == "params":
        net = Network(genotype, args.C, args.layers, args.classes, args.in_ch)
        with torch.no_grad():  # the network runs at this size (shapes fit)
            net.eval()(torch.zeros(1, args.in_ch, args.size, args.size))
        print(json.dumps({"params": count_params(net)}))
        return 0
    xs, ys = fashion()
    net = Network(genotype, args.C, args.layers, 10, 1)
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
    print(json.dumps({"params": count_params(net), "steps": args.iters, "batch": args.batch,
                      "train_images_per_s": round(ips, 1), "final_loss": loss.item(),
                      "peak_rss_mb": round(rss_mb(), 1),
                      "threads": args.threads, "torch": torch.__version__}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
