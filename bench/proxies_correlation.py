#!/usr/bin/env python3
"""How well sieve's zero-cost proxies rank NAS-Bench-201, beside the PyTorch peer and the literature.

Over the 996 architectures of ../shared/data/nb201/peer_proxies_randn.jsonl, at C=16, N=5, 10 classes,
one batch of 64 random-normal 3x32x32 inputs (sieve's seeded batch; no CIFAR-10 images are available
here, see that folder's README.md), `sieve proxies` scores every architecture with every proxy.
For each proxy the script prints:

  - Spearman and Kendall correlation of sieve's score with cifar10_test_acc;
  - the peer's Spearman on the same architectures (from the file's scores);
  - the published value on CIFAR-10 data (the README's table);
  - the Spearman between sieve's and the peer's scores across the architectures (their agreement),
    beside the issue's target for it (params and flops: the peer's count_params and count_flops
    of its own NB201 module, computed here when torch is there; the file holds neither).

Correlations use the architectures where both numbers are finite (naswot's kernel is singular for a
few networks whose every path is cut: -inf), and say how many those are.

Ensembles (rank aggregation, as sieve_proxy_rank_aggregate: rank 0 = worst, ties averaged, NaN lowest):
  - mean rank over a set chosen beforehand: synflow, naswot, jacob_cov, snip (Abdelfattah et al.'s
    vote used synflow, jacob_cov and snip; naswot is Mellor et al.'s);
  - weighted mean rank, weights fitted on one half of the architectures (random.Random(0) split) and
    the Spearman reported on the other half.  The fit: non-negative weights, coordinate search
    (each weight in turn scaled by 0, 1/2, 4/5, 5/4, 2 or, from 0, set to the mean weight; a change is
    kept when it raises the fit half's Spearman; until no change helps), started from equal weights
    over every proxy; ranks are taken within each half, as a screen ranks the candidates it is given.

sieve's scores are cached in --results (one JSON line per architecture, as `sieve proxies` prints
them), so an interrupted run resumes and a rerun only redoes the statistics.

    make bench-proxies    # or: /usr/bin/python3 bench/proxies_correlation.py --build build
"""
import argparse, json, math, os, random, re, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "shared", "data", "nb201")
PROXIES = ["grad_norm", "snip", "plain", "l2_norm", "grasp", "fisher", "jacob_cov", "naswot", "synflow", "zen",
           "gradsign", "params", "flops"]
# Spearman between sieve's and the peer's scores that issue 9 asks for.
AGREEMENT = {"grad_norm": 0.97, "snip": 0.97, "synflow": 0.97, "naswot": 0.97, "zen": 0.97, "fisher": 0.95,
             "jacob_cov": 0.92, "grasp": 0.85, "params": 0.99, "flops": 0.99}
VOTE = ["synflow", "naswot", "jacob_cov", "snip"]


def number(v):
    if isinstance(v, str):
        return {"inf": math.inf, "-inf": -math.inf}.get(v, math.nan)
    return float(v)


def published_table(readme):
    """proxy -> (peer random-input figure, published CIFAR-10 figure) from the data README's table."""
    out = {}
    with open(readme) as f:
        for line in f:
            m = re.match(r"\|\s*([a-z_]+)\s*\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|\s*$", line)
            if m and m.group(1) != "proxy":
                out[m.group(1)] = (m.group(2), m.group(3))
    return out


def finite_pairs(a, b):
    xs, ys = [], []
    for x, y in zip(a, b):
        if math.isfinite(x) and math.isfinite(y):
            xs.append(x)
            ys.append(y)
    return xs, ys


def spearman(a, b):
    from scipy.stats import spearmanr
    xs, ys = finite_pairs(a, b)
    return (spearmanr(xs, ys)[0] if len(xs) > 2 else math.nan), len(xs)


def kendall(a, b):
    from scipy.stats import kendalltau
    xs, ys = finite_pairs(a, b)
    return kendalltau(xs, ys)[0] if len(xs) > 2 else math.nan


def ranks(scores):
    """0 = worst, ties averaged, NaN lowest (sieve_proxy_rank_aggregate's convention)."""
    from scipy.stats import rankdata
    return rankdata([-math.inf if math.isnan(s) else s for s in scores], method="average") - 1


def aggregate(table, names, idx, weights=None):
    """Weighted mean rank of candidates idx over the proxies names."""
    w = weights or {n: 1.0 for n in names}
    total = sum(w[n] for n in names)
    out = [0.0] * len(idx)
    for n in names:
        if w[n] == 0:
            continue
        r = ranks([table[n][i] for i in idx])
        for k in range(len(idx)):
            out[k] += w[n] * r[k] / total
    return out


def fit_weights(table, names, idx, acc):
    target = [acc[i] for i in idx]
    rk = {n: ranks([table[n][i] for i in idx]) for n in names}

    def score(w):
        total = sum(w.values())
        if total == 0:
            return -1.0
        agg = [sum(w[n] * rk[n][k] for n in names) / total for k in range(len(idx))]
        return spearman(agg, target)[0]

    w = {n: 1.0 for n in names}
    best = score(w)
    for _ in range(50):
        changed = False
        for n in names:
            mean = sum(w.values()) / len(w)
            for cand in ([0.0, w[n] * 0.5, w[n] * 0.8, w[n] * 1.25, w[n] * 2] if w[n] > 0 else [mean]):
                trial = dict(w, **{n: cand})
                s = score(trial)
                if s > best + 1e-9:
                    w, best, changed = trial, s, True
        if not changed:
            break
    total = sum(w.values())
    return {n: w[n] / total for n in names}, best


def run_sieve(sieve, archs, names, results, seed, threads, jobs, rescore=()):
    """arch -> {proxy: score}: the cache's lines merged, then `sieve proxies` for what is missing
    (architectures grouped by the proxies they lack, so that adding a proxy later scores only it)."""
    done = {}
    if os.path.exists(results):
        with open(results) as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    done.setdefault(r["arch"], {}).update({k: v for k, v in r.items()
                                                           if k not in ("arch", "time_ms") and k not in rescore})
    groups = {}
    for x in archs:
        lack = tuple(n for n in names if n not in done.get(x, {}))
        if lack:
            groups.setdefault(lack, []).append(x)
    for lack, todo in groups.items():
        print(f"sieve proxies: {len(todo)} architectures to score with {','.join(lack)} (cache: {results})",
              flush=True)
        cmd = [sieve, "proxies", "--space", "nb201", "--set", "space.C=16", "--set", "space.N=5", "--proxies",
               ",".join(lack), "--batch", "64", "--seed", str(seed), "--threads", str(threads)]
        if jobs:
            cmd += ["--jobs", str(jobs)]
        t0 = time.time()
        with open(results, "a") as out:
            p = subprocess.Popen(cmd + ["-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            p.stdin.write("".join(x + "\n" for x in todo))
            p.stdin.close()
            for k, line in enumerate(p.stdout):
                out.write(line)
                out.flush()
                r = json.loads(line)
                done.setdefault(r["arch"], {}).update({n: r[n] for n in lack})
                if (k + 1) % 50 == 0:
                    print(f"  {k + 1}/{len(todo)} in {time.time() - t0:.0f} s", flush=True)
            if p.wait() != 0:
                print(f"sieve proxies exited with {p.returncode}; the lines it printed are kept", flush=True)
    return {x: r for x, r in done.items() if all(n in r for n in names)}


def peer_counts(archs, cache):
    """arch -> {params, flops} from the peer's own counters (count_params, count_flops on its NB201 at
    C=16, N=5), cached; the data file holds no params or flops.  Empty without torch."""
    done = {}
    if os.path.exists(cache):
        with open(cache) as f:
            for line in f:
                r = json.loads(line)
                done[r["arch"]] = r
    todo = [x for x in archs if x not in done]
    if todo:
        try:
            import torch
            sys.path.insert(0, HERE)
            import peer_proxies
        except ImportError as e:
            print(f"no peer counts of params and flops ({e})")
            return done
        peer = peer_proxies.load_peer()
        x = torch.zeros(1, 3, 32, 32)
        print(f"the peer's params and flops of {len(todo)} architectures (cache: {cache})", flush=True)
        with open(cache, "a") as out:
            for arch in todo:
                net = peer.NB201(arch, 16, 5, 10, 3)
                r = {"arch": arch, "params": peer.count_params(net), "flops": peer.count_flops(net, x)}
                out.write(json.dumps(r) + "\n")
                done[arch] = r
    return done


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--results", default=None, help="cache of sieve's scores (default BUILD/proxies-nb201.jsonl)")
    ap.add_argument("--proxies", default=",".join(PROXIES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=2,
                    help="sieve proxies --jobs: architectures at once, threads/jobs threads each (default 2)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N architectures (a quick look)")
    ap.add_argument("--rescore", default="", help="proxies whose cached scores are ignored (after a change to them)")
    ap.add_argument("--json", help="also write the figures here")
    a = ap.parse_args()
    names = a.proxies.split(",")
    with open(os.path.join(a.data, "peer_proxies_randn.jsonl")) as f:
        peer_rows = [json.loads(line) for line in f if line.strip()]
    if a.limit:
        peer_rows = peer_rows[:a.limit]
    archs = [r["arch"] for r in peer_rows]
    acc = [r["cifar10_test_acc"] for r in peer_rows]
    results = a.results or os.path.join(a.build, "proxies-nb201.jsonl")
    ours = run_sieve(os.path.join(a.build, "src", "cli", "sieve"), archs, names, results, a.seed, a.threads, a.jobs,
                     [n for n in a.rescore.split(",") if n])
    missing = [x for x in archs if x not in ours]
    if missing:
        print(f"{len(missing)} architectures have no scores from sieve (see its messages); they are left out")
    keep = [i for i, x in enumerate(archs) if x in ours]
    table = {n: [number(ours[archs[i]][n]) for i in keep] for n in names}
    acc = [acc[i] for i in keep]
    peer = {n: [number(peer_rows[i][n]) for i in keep] for n in names if n in peer_rows[0]}
    if "params" in names or "flops" in names:
        counts = peer_counts([archs[i] for i in keep], os.path.join(a.build, "peer-counts-nb201.jsonl"))
        for n in ("params", "flops"):
            if n in names and all(archs[i] in counts for i in keep):
                peer[n] = [float(counts[archs[i]][n]) for i in keep]
    pub = published_table(os.path.join(a.data, "README.md"))

    print(f"\n{len(keep)} NAS-Bench-201 architectures, C=16 N=5, batch 64 of N(0,1) 3x32x32, seed {a.seed}; "
          f"correlation with cifar10_test_acc")
    head = (f"{'proxy':10s} {'Spearman':>9s} {'Kendall':>8s} {'peer':>7s} {'published':>10s} "
            f"{'vs peer':>8s} {'target':>7s}")
    print(head)
    figures = {}
    for n in names:
        rho, m = spearman(table[n], acc)
        tau = kendall(table[n], acc)
        prho = spearman(peer[n], acc)[0] if n in peer else math.nan
        agree = spearman(table[n], peer[n])[0] if n in peer else math.nan
        published = pub.get(n, ("-", "-"))[1]
        target = AGREEMENT.get(n)
        figures[n] = {"spearman": rho, "kendall": tau, "n": m, "peer_spearman": prho, "published": published,
                      "spearman_vs_peer": agree, "target_vs_peer": target}
        note = "" if m == len(keep) else f"  ({m} finite)"
        print(f"{n:10s} {rho:9.3f} {tau:8.3f} {prho:7.3f} {published:>10s} {agree:8.3f} "
              f"{target if target else '-':>7}{note}")

    # Ensembles.
    idx = list(range(len(keep)))
    vote = [n for n in VOTE if n in names]
    mean_rank = aggregate(table, vote, idx)
    rho_vote = spearman(mean_rank, acc)[0]
    rho_all = spearman(aggregate(table, names, idx), acc)[0]
    order = idx[:]
    random.Random(0).shuffle(order)
    fit, held = sorted(order[:len(order) // 2]), sorted(order[len(order) // 2:])
    weights, fit_rho = fit_weights(table, names, fit, acc)
    held_acc = [acc[i] for i in held]
    held_rho = spearman(aggregate(table, names, held, weights), held_acc)[0]
    held_vote = spearman(aggregate(table, vote, held), held_acc)[0]
    best_single = max(names, key=lambda n: spearman([table[n][i] for i in fit], [acc[i] for i in fit])[0])
    held_single = spearman([table[best_single][i] for i in held], held_acc)[0]
    print(f"\nensembles (Spearman with cifar10_test_acc)")
    print(f"  mean rank of {'+'.join(vote)}: {rho_vote:.3f} (all {len(keep)}), {held_vote:.3f} (held-out half)")
    print(f"  mean rank of all {len(names)} proxies: {rho_all:.3f}")
    print(f"  weighted mean rank, fitted on {len(fit)}: {fit_rho:.3f} on the fit half, "
          f"{held_rho:.3f} on the held-out {len(held)}")
    print(f"  best single proxy on the fit half ({best_single}) on the held-out half: {held_single:.3f}")
    print("  fitted weights: " + ", ".join(f"{n} {w:.3f}" for n, w in weights.items() if w > 0))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"n": len(keep), "seed": a.seed, "proxies": figures,
                       "ensembles": {"vote": vote, "vote_spearman": rho_vote, "vote_heldout": held_vote,
                                     "all_mean_rank": rho_all, "weights": weights, "fit_spearman": fit_rho,
                                     "heldout_spearman": held_rho, "best_single": best_single,
                                     "best_single_heldout": held_single}}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
