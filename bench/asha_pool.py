#!/usr/bin/python3
"""Why ASHA ties random search at half the budget, and what the screen adds
(issue 25, target (b)): a pool of random NB201 cells, each trained by
`sieve train` at ASHA's low fidelities and at the full one and scored by
the zero-cost proxies, then ASHA (Li et al. 2020, Algorithm 2, one worker),
random search and both behind sieve's screen replayed on the pool many
times over: the expected test accuracy of each method's incumbent, and
how much of it depends on which cells the pool happened to draw
(bootstrap resamples of the pool).

  /usr/bin/python3 bench/asha_pool.py collect --sieve build/src/cli/sieve --n 64 --out pool.jsonl   # 20 minutes
  /usr/bin/python3 bench/asha_pool.py simulate pool.jsonl

collect: --n cells drawn uniformly (seed --seed), each trained with its own
seed for 1/16, 1/8, 1/4 and 1 epoch of the 55,000 Fashion-MNIST training
images (each its own schedule, as ASHA's rungs without continuation train
them; C=8, N=1, batch 64, lr 0.05, 5,000 validation images, one thread),
then scored (`score`, which a pool can also be given again) by each proxy
of PROXIES on the screen's batch of 64 training images, and timed with the
screen's proxies alone (--screen: one call computing them together, as the
screen stage does; several proxies share passes, so a proxy's time within
a larger set says little of the screen's).

simulate: each replay draws configurations from the pool with replacement
(so a cell's training noise is the one its pool training had); random
search trains its first 8 (or 4) at full fidelity; ASHA starts new ones at
its lowest rung and promotes as soon as a result is in the top 1/eta of its
rung, while it has spent less than the budget (4 epochs, half of random
search's 8); the screen ranks each round of 16 proposals by the mean rank
of its proxies and trains the best quarter, its proxies' time counted in
epochs (one epoch's training time from the pool).  The incumbent is the
best validation accuracy at full fidelity; the figure is its test accuracy.
"""
import argparse
import concurrent.futures
import json
import math
import random
import statistics
import subprocess
import sys

OPS = ["none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3"]
FIDELITIES = (0.0625, 0.125, 0.25, 1.0)
PROXIES = "synflow,naswot,jacob_cov,snip,gradsign,params"
SCREEN = "synflow,naswot,jacob_cov,snip"  # the mean rank README's "Zero-cost proxies" reports at 0.841 on NB201
SPACE = ["--set", "space.C=8", "--set", "space.N=1"]


def collect(args):
    rng = random.Random(args.seed)
    cells = ["|%s~0|+|%s~0|%s~1|+|%s~0|%s~1|%s~2|" % tuple(rng.choice(OPS) for _ in range(6)) for _ in range(args.n)]

    def train(cell, seed, epochs):
        p = subprocess.run([args.sieve, "train", *SPACE, "--arch", cell, "--epochs", "%g" % epochs, "--batch", "64",
                            "--lr", "0.05", "--seed", str(seed), "--validation", "5000", "--threads", "1", "-q"],
                           check=True, capture_output=True, text=True)
        return json.loads(p.stdout.strip().splitlines()[-1])

    def one(i):
        row = {"arch": cells[i], "seed": 1000 + i}
        for f in FIDELITIES:
            out = train(cells[i], 1000 + i, f)
            row["val_%g" % f], row["test_%g" % f] = out["val_acc"], out["test_acc"]
            row["train_s_%g" % f] = out["train_s"]
        return row

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex, open(args.out, "w") as f:
        for row in ex.map(one, range(args.n)):
            f.write(json.dumps(row) + "\n")
            f.flush()
    args.pool = args.out
    score_pool(args)


def run_proxies(sieve, cells, proxies):
    """sieve proxies on the screen's batch (64 Fashion-MNIST training images, seed 0), one thread."""
    p = subprocess.run([sieve, "proxies", "--space", "nb201", *SPACE, "--set", "space.in_channels=1",
                        "--set", "space.size=28", "--dataset", "fashion-mnist", "--threads", "1", "--proxies",
                        proxies, "-"], input="\n".join(cells) + "\n", check=True, capture_output=True, text=True)
    return [json.loads(line) for line in p.stdout.splitlines()]


def score_pool(args):
    """Each cell's proxy scores (PROXIES) and the screen's time on it (its proxies in one call), in place."""
    rows = [json.loads(line) for line in open(args.pool)]
    cells = [r["arch"] for r in rows]
    scores, timed = run_proxies(args.sieve, cells, PROXIES), run_proxies(args.sieve, cells, args.screen)
    with open(args.pool, "w") as f:
        for row, s, t in zip(rows, scores, timed):
            row["proxies"] = {k: v for k, v in s.items() if k not in ("arch", "time_ms")}
            row.pop("proxy_ms", None)
            row["screen"], row["screen_ms"] = args.screen, sum(t["time_ms"].values())
            f.write(json.dumps(row) + "\n")


def score(row, name):
    v = row["proxies"].get(name)
    return -math.inf if not isinstance(v, (int, float)) else v


def screen_round(rows, proxies):
    """The best quarter of a round by the mean rank of the proxies (sieve's screen, keep_fraction 0.25)."""
    total = [0.0] * len(rows)
    for name in proxies:
        order = sorted(range(len(rows)), key=lambda i: score(rows[i], name))
        for rank, i in enumerate(order):
            total[i] += rank
    best = sorted(range(len(rows)), key=lambda i: -total[i])
    return [rows[i] for i in best[:math.ceil(0.25 * len(rows))]]


class Source:
    """New configurations: random draws from the pool, or the screen's picks of rounds of 16, its compute
    counted (the proxies' milliseconds over one epoch's training seconds)."""

    def __init__(self, pool, rng, proxies, epoch_s):
        self.pool, self.rng, self.proxies, self.epoch_s, self.kept = pool, rng, proxies, epoch_s, []

    def next(self):
        if not self.proxies:
            return self.rng.choice(self.pool), 0.0
        cost = 0.0
        if not self.kept:
            rnd = [self.rng.choice(self.pool) for _ in range(16)]
            cost = sum(r["screen_ms"] for r in rnd) / 1000 / self.epoch_s
            self.kept = screen_round(rnd, self.proxies)
        return self.kept.pop(0), cost


def random_search(src, budget):
    got, spent = [], 0.0
    while spent < budget - 1e-9:
        row, cost = src.next()
        got.append(row)
        spent += cost + 1
    return max(got, key=lambda r: r["val_1"])["test_1"]


def asha(src, budget, eta, low):
    fids = [1.0]
    while fids[0] / eta >= low - 1e-9:
        fids.insert(0, fids[0] / eta)
    rungs, promoted, confs, full, spent = [[] for _ in fids], [set() for _ in fids], [], [], 0.0
    while spent < budget - 1e-9:
        job = None
        for k in range(len(fids) - 2, -1, -1):
            top = sorted(rungs[k], key=lambda t: -t[0])[:len(rungs[k]) // eta]
            job = next(((i, k + 1) for v, i in top if i not in promoted[k]), None)
            if job:
                promoted[k].add(job[0])
                break
        if job is None:
            row, cost = src.next()
            spent += cost
            confs.append(row)
            job = (len(confs) - 1, 0)
        i, k = job
        rungs[k].append((confs[i]["val_%g" % fids[k]], i))
        spent += fids[k]
        if k == len(fids) - 1:
            full.append(confs[i])
    return max(full, key=lambda r: r["val_1"])["test_1"] if full else math.nan


def simulate(args):
    pool = [json.loads(line) for line in open(args.pool)]
    if any(r.get("screen") != args.screen for r in pool):
        sys.exit("asha_pool.py: %s was timed for the screen %s, not %s: run `score` with --screen %s first"
                 % (args.pool, pool[0].get("screen"), args.screen, args.screen))
    epoch_s = statistics.mean(r["train_s_1"] for r in pool)
    proxies = args.screen.split(",")
    cases = [("random search, 8 epochs", lambda s: random_search(s, 8), False),
             ("random search, 4 epochs", lambda s: random_search(s, 4), False)]
    for eta, low in ((4, 0.25), (8, 0.125), (16, 0.0625)):
        cases.append(("ASHA eta %d from %g epoch, 4 epochs" % (eta, low), lambda s, e=eta, l=low: asha(s, 4, e, l),
                      False))
    cases += [("random search + screen, 8 epochs", lambda s: random_search(s, 8), True),
              ("random search + screen, 4 epochs", lambda s: random_search(s, 4), True)]
    for eta, low in ((8, 0.125), (16, 0.0625)):
        cases.append(("ASHA eta %d from %g epoch + screen, 4 epochs" % (eta, low),
                      lambda s, e=eta, l=low: asha(s, 4, e, l), True))
    live = [r for r in pool if r["val_1"] > 0.2]
    target = [r["val_1"] for r in live]
    print("pool: %d cells (%d that learn), one epoch %.1f s of training, the screen %.0f ms a cell; Spearman with the "
          "full epoch's val_acc among those that learn: val_acc after %s; proxies %s; screen: %s"
          % (len(pool), len(live), epoch_s, statistics.mean(r["screen_ms"] for r in pool),
             ", ".join("%g epoch %.2f" % (f, spearman([r["val_%g" % f] for r in live], target))
                       for f in FIDELITIES[:-1]),
             ", ".join("%s %.2f" % (p, spearman([score(r, p) for r in live], target)) for p in PROXIES.split(",")),
             args.screen))
    # The replays' spread is not the uncertainty of these figures: the pool is one sample of cells.  Each
    # bootstrap pool (cells drawn with replacement) is replayed --replays / --pools times per method, the same
    # draws for every method; the difference from random search's 8 epochs is reported over the pools.
    boot = random.Random(args.seed)
    pools = [pool] + [[boot.choice(pool) for _ in pool] for _ in range(args.pools - 1)]
    per_pool = max(1, args.replays // args.pools)
    means = {}
    for label, fn, screened in cases:
        means[label] = []
        for k, p in enumerate(pools):
            rng = random.Random(args.seed + k)
            xs = [fn(Source(p, rng, proxies if screened else [], epoch_s)) for _ in range(per_pool)]
            xs = [x for x in xs if not math.isnan(x)]
            means[label].append(statistics.mean(xs) if xs else math.nan)
    base = means[cases[0][0]]
    print("%-48s %9s %9s %21s %s" % ("method", "test_acc", "vs 8 ep", "5-95%% over %d pools" % args.pools,
                                     "pools where >= random 8"))
    for label, _, _ in cases:
        d = sorted(m - b0 for m, b0 in zip(means[label], base))
        lo, hi = d[int(0.05 * (len(d) - 1))], d[int(0.95 * (len(d) - 1))]
        print("%-48s %9.4f %+9.4f %10.4f .. %+.4f %4d of %d" % (label, means[label][0], means[label][0] - base[0], lo,
                                                              hi, sum(x >= 0 for x in d), len(d)))


def spearman(x, y):
    def ranks(v):
        r = [0] * len(v)
        for k, i in enumerate(sorted(range(len(v)), key=lambda i: v[i])):
            r[i] = k
        return r
    a, b = ranks(x), ranks(y)
    ma, mb = statistics.mean(a), statistics.mean(b)
    return sum((p - ma) * (q - mb) for p, q in zip(a, b)) / math.sqrt(
        sum((p - ma) ** 2 for p in a) * sum((q - mb) ** 2 for q in b))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--sieve", default="build/src/cli/sieve")
    c.add_argument("--n", type=int, default=64)
    c.add_argument("--seed", type=int, default=20261127)
    c.add_argument("--jobs", type=int, default=2)
    c.add_argument("--out", required=True)
    c.add_argument("--screen", default=SCREEN)
    sc = sub.add_parser("score")
    sc.add_argument("pool")
    sc.add_argument("--sieve", default="build/src/cli/sieve")
    sc.add_argument("--screen", default=SCREEN)
    s = sub.add_parser("simulate")
    s.add_argument("pool")
    s.add_argument("--replays", type=int, default=40000, help="replays of each method in all, split over the pools")
    s.add_argument("--pools", type=int, default=40, help="the pool itself, then bootstrap resamples of its cells")
    s.add_argument("--seed", type=int, default=11)
    s.add_argument("--screen", default=SCREEN)
    args = parser.parse_args()
    {"collect": collect, "score": score_pool, "simulate": simulate}[args.cmd](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
