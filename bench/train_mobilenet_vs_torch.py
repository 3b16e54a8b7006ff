#!/usr/bin/env python3
"""Training throughput and peak memory of sieve against PyTorch on one
mid-sized candidate of the mobilenet space, in one run.

Both train the same network (bench/torch_mobilenet.py is the PyTorch peer,
built from the same genotype text and options) on Fashion-MNIST at batch
128 with the same thread count for the same number of steps.  Each side is
run `--repeat` times alternately; the medians are reported, with the ratio
sieve/PyTorch and each one's peak RSS.  Also checks that both count the same
parameters, and that the peer's MobileNetV2 has torchvision's 3,504,872.

    python3 bench/train_mobilenet_vs_torch.py --sieve build/src/cli/sieve
"""
import argparse, json, os, statistics, subprocess, sys

# 28x28 Fashion-MNIST, the space's default stages at half width: every
# kernel, both expansions, SE, hard-swish and skips.
OPTS = {"in_channels": 1, "size": 28, "width": 0.5, "last_channels": 640}
ARCH = ("k3_e3,k5_e3,skip,skip/k5_e6_se,k3_e3_hs,skip,skip/k7_e6_hs,k3_e3,k5_e3_se,skip/"
        "k3_e6_se_hs,skip,skip,skip/k5_e6_se_hs,k3_e3,skip,skip/k3_e6")


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def sieve_train(exe, iters, batch, threads):
    cmd = [exe, "train", "-q", "--space", "mobilenet", "--arch", ARCH, "--dataset", "fashion-mnist",
           "--validation", "0", "--train-limit", str(iters * batch), "--batch", str(batch), "--epochs", "1",
           "--threads", str(threads), "--set", "evaluator.test=false", "--set", "evaluator.normalize=true"]
    for k, v in OPTS.items():
        cmd += ["--set", f"space.{k}={v}"]
    r = run_json(cmd)
    return r["images_per_s"], r["peak_rss_mb"], r["params"]


def torch_train(peer, iters, batch, threads):
    r = run_json(["/usr/bin/python3", peer, "train", "--arch", ARCH, "--opts", json.dumps(OPTS), "--iters", str(iters),
                  "--batch", str(batch), "--threads", str(threads)])
    return r["train_images_per_s"], r["peak_rss_mb"], r["params"]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--sieve", default=os.path.join(here, "..", "build", "src", "cli", "sieve"))
    ap.add_argument("--peer", default=os.path.join(here, "torch_mobilenet.py"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    v2 = run_json(["/usr/bin/python3", args.peer, "mobilenet-v2"])["params"]
    print(f"PyTorch peer's MobileNetV2 (224x224, 1000 classes): {v2:,} parameters (torchvision: 3,504,872)")
    s_ips, t_ips, s_rss, t_rss = [], [], [], []
    for _ in range(args.repeat):
        a, b, sp = sieve_train(args.sieve, args.iters, args.batch, args.threads)
        s_ips.append(a); s_rss.append(b)
        print(f"  sieve   {a:8.1f} img/s  peak RSS {b:7.1f} MB", flush=True)
        a, b, tp = torch_train(args.peer, args.iters, args.batch, args.threads)
        t_ips.append(a); t_rss.append(b)
        print(f"  pytorch {a:8.1f} img/s  peak RSS {b:7.1f} MB", flush=True)
        if sp != tp:
            sys.exit(f"parameter counts differ: sieve {sp}, pytorch {tp}")
    s, t = statistics.median(s_ips), statistics.median(t_ips)
    print(f"mobilenet {ARCH}\n  {sp:,} parameters, {args.iters} steps of {args.batch}, {args.threads} threads: "
          f"sieve {s:.1f} img/s  pytorch {t:.1f} img/s  ratio {s / t:.2f}x  "
          f"peak RSS sieve {max(s_rss):.1f} MB  pytorch {max(t_rss):.1f} MB", flush=True)
    print(json.dumps({"threads": args.threads, "batch": args.batch, "steps": args.iters, "params": sp,
                      "sieve_ips": s, "torch_ips": t, "ratio": s / t, "sieve_rss_mb": max(s_rss),
                      "torch_rss_mb": max(t_rss), "torch_mobilenet_v2_params": v2}))


if __name__ == "__main__":
    sys.exit(main())
