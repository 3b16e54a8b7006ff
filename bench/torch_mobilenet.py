#!/usr/bin/env python3
"""PyTorch peer of sieve's mobilenet space (plugins/spaces/mobilenet).

The same network as mobilenet-network.c, written from the papers and
torchvision's MobileNetV2 / MobileNetV3 code: a stem conv3x3-BN-ReLU, a fixed
MBConv(k3, e1) block, the genotype's blocks, a 1x1 conv to last_channels,
global pooling and a linear layer; SE as torchvision's MobileNetV3
(squeeze make_divisible(mid / 4, 8), ReLU, hard-sigmoid), ReLU where sieve
has ReLU (the IR has no ReLU6).

    python3 bench/torch_mobilenet.py params --arch TEXT [--opts JSON]
    python3 bench/torch_mobilenet.py train --arch TEXT --opts JSON --iters 30 --batch 128 --threads 2
    python3 bench/torch_mobilenet.py mobilenet-v2      # parameters of MobileNetV2 built by this peer
"""
import argparse, os, json, sys, time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "peers"))
from torch_nb201 import fashion, rss_mb  # noqa: E402  (the peers' shared data reader)

DEFAULTS = {"in_channels": 3, "size": 32, "classes": 10, "stem_channels": 32, "stem_stride": 1,
            "first_channels": 16, "stages": "24:1:4,40:2:4,80:2:4,96:1:4,192:2:4,320:1:1",
            "last_channels": 1280, "width": 1.0}


def make_divisible(v, d=8):
    n = max(d, int(v + d / 2) // d * d)
    return n + d if n < 0.9 * v else n


def conv_bn(cin, cout, k, s, groups=1, act=None):
    layers = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act())
    return layers


class SE(nn.Module):
    def __init__(self, c):
        super().__init__()
        s = make_divisible(c / 4, 8)
        self.fc1, self.fc2 = nn.Conv2d(c, s, 1), nn.Conv2d(s, c, 1)

    def forward(self, x):
        g = F.adaptive_avg_pool2d(x, 1)
        return x * F.hardsigmoid(self.fc2(F.relu(self.fc1(g))))


class MBConv(nn.Module):
    def __init__(self, cin, cout, k, e, stride, se=False, hs=False):
        super().__init__()
        act = nn.Hardswish if hs else nn.ReLU
        mid = int(round(cin * e))
        layers = [] if e == 1 else conv_bn(cin, mid, 1, 1, act=act)
        layers += conv_bn(mid, mid, k, stride, groups=mid, act=act)
        if se:
            layers.append(SE(mid))
        layers += conv_bn(mid, cout, 1, 1)
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.body(x)
        return x + y if self.residual else y


def parse_block(tok):
    if tok == "skip":
        return None
    parts = tok.split("_")
    return {"k": int(parts[0][1:]), "e": int(parts[1][1:]), "se": "se" in parts[2:], "hs": "hs" in parts[2:]}


class Net(nn.Module):
    def __init__(self, arch, opts):
        super().__init__()
        o = dict(DEFAULTS, **opts)
        w = float(o["width"])
        stem = make_divisible(o["stem_channels"] * w)
        layers = conv_bn(o["in_channels"], stem, 3, o["stem_stride"], act=nn.ReLU)
        c = stem
        if o["first_channels"]:
            f = make_divisible(o["first_channels"] * w)
            layers.append(MBConv(c, f, 3, 1, 1))
            c = f
        stages = [tuple(int(v) for v in s.split(":")) for s in o["stages"].split(",")]
        texts = arch.split("/")
        assert len(texts) == len(stages), "stage count"
        for (ch, stride, nb), text in zip(stages, texts):
            blocks = text.split(",")
            assert len(blocks) == nb, "block count"
            out = make_divisible(ch * w)
            for j, tok in enumerate(blocks):
                b = parse_block(tok)
                if b is None:
                    continue
                layers.append(MBConv(c, out, b["k"], b["e"], stride if j == 0 else 1, b["se"], b["hs"]))
                c = out
        if o["last_channels"]:
            last = make_divisible(o["last_channels"] * max(1.0, w))
            layers += conv_bn(c, last, 1, 1, act=nn.ReLU)
            c = last
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(c, o["classes"])

    def forward(self, x):
        return self.classifier(F.adaptive_avg_pool2d(self.features(x), 1).flatten(1))


MOBILENET_V2 = ({"size": 224, "classes": 1000, "stem_stride": 2,
                 "stages": "24:2:2,32:2:3,64:2:4,96:1:3,160:2:3,320:1:1"},
                "k3_e6,k3_e6/k3_e6,k3_e6,k3_e6/k3_e6,k3_e6,k3_e6,k3_e6/k3_e6,k3_e6,k3_e6/k3_e6,k3_e6,k3_e6/k3_e6")


def count_params(net):
    return sum(p.numel() for p in net.parameters())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["params", "train", "mobilenet-v2"])
    ap.add_argument("--arch")
    ap.add_argument("--opts", default="{}")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    if args.cmd == "mobilenet-v2":
        print(json.dumps({"params": count_params(Net(MOBILENET_V2[1], MOBILENET_V2[0]))}))
        return
    net = Net(args.arch, json.loads(args.opts))
    if args.cmd == "params":
        print(json.dumps({"arch": args.arch, "params": count_params(net)}))
        return
    xs, ys = fashion()
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    g = torch.Generator().manual_seed(args.seed)
    net.train()
    t0 = time.perf_counter()
    for _ in range(args.iters):
        idx = torch.randint(0, len(xs), (args.batch,), generator=g)
        loss = F.cross_entropy(net(xs[idx]), ys[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    ips = args.iters * args.batch / (time.perf_counter() - t0)
    print(json.dumps({"params": count_params(net), "train_images_per_s": round(ips, 1), "final_loss": loss.item(),
                      "peak_rss_mb": round(rss_mb(), 1),
                      "threads": args.threads, "torch": torch.__version__}))


if __name__ == "__main__":
    sys.exit(main())
