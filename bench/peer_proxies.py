#!/usr/bin/env python3
"""The PyTorch peer's zero-cost proxies on weights and a batch read from files.

    peer_proxies.py --arch ARCH --weights W.npz --inputs X.npy --labels Y.npy
                    [--proxies synflow,snip,...] [--C 16 --N 5 --classes 10 --in-ch 3] [--peer FILE]

The peer (../shared/peers/torch_nb201.py, or --peer / $SIEVE_TORCH_PEER) is imported unchanged:
its NB201 module and its proxy functions.  Each proxy gets a fresh network loaded with the weights
(load_state_dict strict: every name and shape must match what tests/proxy/proxy-dump wrote),
as the peer's own `proxies` command gives each proxy a fresh make_net().  Prints one JSON line
with each score, and params/flops from the peer's counters.

zen is refused: it redraws every weight and its two inputs from torch's global generator
(nn.init.normal_, randn_like), so it cannot be computed on weights and inputs given from outside.

The peer has no plain or l2_norm; EXTRA defines them here on its network and its `weighted` layers
(conv and linear), as zero-cost-nas computes them: plain = sum of w * dL/dw, l2_norm = sum over
layers of |w|.
"""
import argparse, importlib.util, json, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_PEER = os.path.join(HERE, "..", "..", "shared", "peers", "torch_nb201.py")
NOT_FROM_FILES = {"zen": "redraws its weights and inputs from torch's generator"}


def load_peer(path=None):
    """The peer module, imported from its file (it is not a package)."""
    path = path or os.environ.get("SIEVE_TORCH_PEER") or DEFAULT_PEER
    spec = importlib.util.spec_from_file_location("torch_nb201", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def p_plain(peer, net, x, y):
    import torch.nn.functional as F
    net.zero_grad()
    F.cross_entropy(net(x), y).backward()
    return sum((m.weight.grad * m.weight).sum().item() for m in peer.weighted(net) if m.weight.grad is not None)


def p_l2_norm(peer, net, x, y):
    return sum(m.weight.norm().item() for m in peer.weighted(net))


EXTRA = {"plain": p_plain, "l2_norm": p_l2_norm}


def load_net(peer, arch, weights, C=16, N=5, classes=10, in_ch=3):
    import numpy as np
    import torch
    net = peer.NB201(arch, C, N, classes, in_ch)
    with np.load(weights) as z:
        state = {k: torch.from_numpy(z[k].copy()) for k in z.files}
    net.load_state_dict(state, strict=True)
    return net


def peer_scores(peer, arch, weights, inputs, labels, proxies, C=16, N=5, classes=10, in_ch=3, threads=2):
    import numpy as np
    import torch
    torch.set_num_threads(threads)
    x = torch.from_numpy(np.load(inputs).astype(np.float32))
    y = torch.from_numpy(np.load(labels).astype(np.int64))
    out = {"arch": arch}
    for name in proxies:
        if name in NOT_FROM_FILES:
            raise SystemExit(f"peer_proxies: {name} cannot be computed from files: {NOT_FROM_FILES[name]}")
        net = load_net(peer, arch, weights, C, N, classes, in_ch)
        if name == "params":
            out[name] = peer.count_params(net)
        elif name == "flops":
            out[name] = peer.count_flops(net, x)
        elif name in EXTRA:
            out[name] = float(EXTRA[name](peer, net, x, y))
        else:
            out[name] = float(peer.PROXIES[name](net, x, y))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--labels", required=True)
    ap.add_argument("--proxies", default="grad_norm,snip,grasp,fisher,jacob_cov,naswot,synflow,params,flops")
    ap.add_argument("--C", type=int, default=16)
    ap.add_argument("--N", type=int, default=5)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--in-ch", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--peer", default=None)
    a = ap.parse_args()
    peer = load_peer(a.peer)
    print(json.dumps(peer_scores(peer, a.arch, a.weights, a.inputs, a.labels, a.proxies.split(","), a.C, a.N,
                                 a.classes, a.in_ch, a.threads)))


if __name__ == "__main__":
    main()
