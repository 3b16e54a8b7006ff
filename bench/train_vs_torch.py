#!/usr/bin/env python3
"""Training throughput of sieve against the PyTorch peer, in one run.

Both train NAS-Bench-201 arch 1 on Fashion-MNIST (batch 128, SGD momentum
0.9 Nesterov, weight decay 5e-4, cosine schedule, same thread count) for the
same number of steps, at the benchmark's scale (C=16, N=5) and at the small
scale where framework overhead dominates (C=8, N=1).  Prints images/s,
the ratio sieve/PyTorch and each one's peak RSS.  Each configuration is run
`--repeat` times alternating sieve and PyTorch; the median is reported.

    make bench-train            # or: python3 bench/train_vs_torch.py --sieve build/src/cli/sieve
"""
import argparse, json, os, statistics, subprocess, sys

ARCH = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"


def run_json(cmd, env=None):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def sieve_train(exe, C, N, iters, batch, threads):
    r = run_json([exe, "train", "-q", "--arch", ARCH, "--set", f"space.C={C}", "--set", f"space.N={N}",
                  "--dataset", "fashion-mnist", "--validation", "0", "--train-limit", str(iters * batch),
                  "--batch", str(batch), "--epochs", "1", "--threads", str(threads),
                  "--set", "evaluator.test=false", "--set", "evaluator.normalize=true"])
    return r["images_per_s"], r["peak_rss_mb"]


def torch_train(peer, C, N, iters, batch, threads):
    r = run_json(["/usr/bin/python3", peer, "train", "--arch", ARCH, "--C", str(C), "--N", str(N), "--in-ch", "1",
                  "--size", "28", "--iters", str(iters), "--batch", str(batch), "--threads", str(threads)])
    return r["train_images_per_s"], r["peak_rss_mb"]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--sieve", default=os.path.join(here, "..", "build", "src", "cli", "sieve"))
    ap.add_argument("--peer", default=os.path.join(here, "..", "..", "shared", "peers", "torch_nb201.py"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quality", action="store_true", help="also train C=8,N=1 for one full epoch and print test accuracy")
    args = ap.parse_args()
    rows = []
    for C, N, iters in ((16, 5, 30), (8, 1, 100)):
        s_ips, t_ips, s_rss, t_rss = [], [], [], []
        for _ in range(args.repeat):
            a, b = sieve_train(args.sieve, C, N, iters, args.batch, args.threads)
            s_ips.append(a); s_rss.append(b)
            a, b = torch_train(args.peer, C, N, iters, args.batch, args.threads)
            t_ips.append(a); t_rss.append(b)
        s, t = statistics.median(s_ips), statistics.median(t_ips)
        rows.append((C, N, iters, s, t, s / t, max(s_rss), max(t_rss)))
        print(f"C={C:2d} N={N} {iters:3d} steps: sieve {s:8.1f} img/s  pytorch {t:8.1f} img/s  "
              f"ratio {s / t:5.2f}x  peak RSS sieve {max(s_rss):7.1f} MB  pytorch {max(t_rss):7.1f} MB", flush=True)
    if args.quality:
        r = run_json([args.sieve, "train", "-q", "--arch", ARCH, "--set", "space.C=8", "--set", "space.N=1",
                      "--dataset", "fashion-mnist", "--epochs", "1", "--threads", str(args.threads)])
        print(f"quality: C=8 N=1 one epoch: test accuracy {r['test_acc']:.4f}, val {r['val_acc']:.4f}")
    print(json.dumps({"threads": args.threads, "batch": args.batch, "rows": [
        {"C": C, "N": N, "steps": it, "sieve_ips": s, "torch_ips": t, "ratio": q, "sieve_rss_mb": sr, "torch_rss_mb": tr}
        for C, N, it, s, t, q, sr, tr in rows]}))


if __name__ == "__main__":
    sys.exit(main())
