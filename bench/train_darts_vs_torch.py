#!/usr/bin/env python3
"""Training throughput of a darts candidate, sieve against the PyTorch peer, in one run.

Both train DARTS-V2 (Liu et al., ICLR 2019) as a mid-sized network, C=16 and 8 cells on 28x28
Fashion-MNIST (sieve's `darts` space; bench/torch_darts.py, the same network in PyTorch: equal
parameter counts are checked), batch 128, SGD momentum 0.9 Nesterov, weight decay 5e-4, cosine
schedule, the same thread count and number of steps.  Prints images/s, the ratio sieve/PyTorch and
each one's peak RSS; each side runs `--repeat` times, alternating, and the median is reported.

    python3 bench/train_darts_vs_torch.py [--sieve build/src/cli/sieve] [--C 16 --layers 8 --steps 20]
"""
import argparse, json, os, statistics, subprocess, sys

V2 = ("Genotype(normal=[('sep_conv_3x3', 0), ('sep_conv_3x3', 1), ('sep_conv_3x3', 0), ('sep_conv_3x3', 1), "
      "('sep_conv_3x3', 1), ('skip_connect', 0), ('skip_connect', 0), ('dil_conv_3x3', 2)], normal_concat=[2, 3, 4, 5], "
      "reduce=[('max_pool_3x3', 0), ('max_pool_3x3', 1), ('skip_connect', 2), ('max_pool_3x3', 1), ('max_pool_3x3', 0), "
      "('skip_connect', 2), ('skip_connect', 2), ('max_pool_3x3', 1)], reduce_concat=[2, 3, 4, 5])")


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def sieve_train(args):
    r = run_json([args.sieve, "train", "-q", "--space", "darts", "--arch", V2, "--set", f"space.C={args.C}",
                  "--set", f"space.layers={args.layers}", "--set", "space.in_channels=1", "--set", "space.size=28",
                  "--dataset", "fashion-mnist", "--validation", "0", "--train-limit", str(args.steps * args.batch),
                  "--batch", str(args.batch), "--epochs", "1", "--threads", str(args.threads),
                  "--set", "evaluator.test=false"])
    return r["images_per_s"], r["peak_rss_mb"], r["params"]


def torch_train(args):
    r = run_json(["/usr/bin/python3", args.peer, "train", V2, "--C", str(args.C), "--layers", str(args.layers),
                  "--iters", str(args.steps), "--batch", str(args.batch), "--threads", str(args.threads)])
    return r["train_images_per_s"], r["peak_rss_mb"], r["params"]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--sieve", default=os.path.join(here, "..", "build", "src", "cli", "sieve"))
    ap.add_argument("--peer", default=os.path.join(here, "torch_darts.py"))
    ap.add_argument("--C", type=int, default=16)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    s_ips, t_ips, s_rss, t_rss = [], [], [], []
    for _ in range(args.repeat):
        a, b, sp = sieve_train(args)
        s_ips.append(a); s_rss.append(b)
        a, b, tp = torch_train(args)
        t_ips.append(a); t_rss.append(b)
        if sp != tp:
            sys.exit(f"the networks differ: sieve {sp} parameters, PyTorch {tp}")
    s, t = statistics.median(s_ips), statistics.median(t_ips)
    print(f"DARTS-V2 C={args.C} {args.layers} cells, {sp} params, {args.steps} steps of {args.batch}, "
          f"{args.threads} threads: sieve {s:7.1f} img/s  pytorch {t:7.1f} img/s  ratio {s / t:5.2f}x  "
          f"peak RSS sieve {max(s_rss):7.1f} MB  pytorch {max(t_rss):7.1f} MB", flush=True)
    print(json.dumps({"C": args.C, "layers": args.layers, "params": sp, "steps": args.steps, "batch": args.batch,
                      "threads": args.threads, "sieve_ips": s, "torch_ips": t, "ratio": s / t,
                      "sieve_ips_all": s_ips, "torch_ips_all": t_ips,
                      "sieve_rss_mb": max(s_rss), "torch_rss_mb": max(t_rss)}))


if __name__ == "__main__":
    sys.exit(main())
