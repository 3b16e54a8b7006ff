#!/usr/bin/env python3
"""Hardware-aware search on NAS-Bench-201 (C=16, N=5), on this machine.

  /usr/bin/python3 bench/hardware_aware.py --build build [--samples 200 --seeds 10]

1. The latency table: `sieve latency --table --space nb201` into a store
   (how long building it took).
2. Prediction against measurement: for --samples random cells, the
   latency table's prediction beside the network measured whole (the
   `latency` evaluator: batch 1, 1 thread): Spearman, median absolute
   percentage error; the measured latencies against the NB201 table's CPU
   column (lat_ms_gold_6226, another CPU); and PyTorch's eager latency of
   the same cells (the peer, ../shared/peers/torch_nb201.py, 1 thread,
   batch 1, eval, no_grad), measured in the same run: sieve/PyTorch ratio.
3. Stability: one cell measured in five separate processes.
4. A constrained study (aging evolution, table accuracy) under a measured
   latency cap: the best candidate's latency as stored and re-measured.
5. The accuracy-latency Pareto front: NSGA-II (evolution, selection nsga2)
   and random search, 300 evaluations each, --seeds seeds, table accuracy
   (cifar10_valid_acc) and the latency table's prediction; hypervolume of
   the front found as a fraction of the true front's, over all 15,625
   cells (predictions of every cell from the same table); Optuna's
   NSGAIISampler on the same objectives beside them (the peer).
"""
import argparse
import csv
import io
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS = os.path.join(ROOT, "..", "shared", "peers")
OPS = ["none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3"]


def table_csv():
    for p in (os.path.join(ROOT, "..", "shared", "data", "nb201", "nb201.csv"),
              os.path.join(ROOT, "data", "nb201", "nb201.csv")):
        if os.path.exists(p):
            return os.path.realpath(p)
    sys.exit("no NAS-Bench-201 table")


def run(*args, **kw):
    p = subprocess.run(list(args), capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return p.stdout


def export(sieve, store):
    return list(csv.DictReader(io.StringIO(run(sieve, "export", store, "--format", "csv"))))


def ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.fmean(ra), statistics.fmean(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    return cov / (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5


def front(points):
    """Non-dominated (acc up, lat down) points, sorted by latency."""
    pts = sorted(set(points), key=lambda p: (p[1], -p[0]))
    out, best = [], float("-inf")
    for acc, lat in pts:
        if acc > best:
            out.append((acc, lat))
            best = acc
    return out


def hypervolume(points, ref_acc, ref_lat):
    """Area dominated by the front and bounded by (ref_acc, ref_lat)."""
    hv, prev_lat = 0.0, None
    f = [p for p in front(points) if p[0] > ref_acc and p[1] < ref_lat]
    # sweep by latency: each point covers acc above ref up to the next point's latency
    for i, (acc, lat) in enumerate(f):
        nxt = f[i + 1][1] if i + 1 < len(f) else ref_lat
        hv += (acc - ref_acc) * (nxt - lat)
    return hv


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--evaluations", type=int, default=300)
    args = ap.parse_args()
    sieve = os.path.join(os.path.abspath(args.build), "src", "cli", "sieve")
    table = table_csv()
    acc, gold = {}, {}
    with open(table) as f:
        for r in csv.DictReader(f):
            acc[r["arch_str"]] = float(r["cifar10_valid_acc"])
            gold[r["arch_str"]] = float(r["lat_ms_gold_6226"])
    tmp = tempfile.mkdtemp(prefix="sieve-hw-")
    base = os.path.join(tmp, "table.sieve")
    print(f"machine: {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at start")

    # 1. the table
    t0 = time.time()
    head = run(sieve, "latency", "--table", "--space", "nb201", "--store", base).splitlines()[:2]
    print(f"[table] {head[0][2:]}\n[table] {head[1][2:]} (wall {time.time() - t0:.1f} s)")

    def study(name, yaml, store_from_base=True):
        store = os.path.join(tmp, name + ".sieve")
        if store_from_base:
            shutil.copy(base, store)
        cfg = os.path.join(tmp, name + ".yaml")
        write(cfg, yaml)
        run(sieve, "run", cfg, "--store", store)
        return export(sieve, store)

    # 2. prediction against measurement, on random cells
    t0 = time.time()
    rows = study("measured", f"""space: {{plugin: nb201}}
optimizer: {{plugin: random, seed: 1, unique: true}}
evaluator: {{plugin: latency, rel_ci: 0.03, max_seconds: 0.5}}
objective: [{{metric: latency_ms, direction: minimize}}, {{metric: predicted_latency_ms, direction: minimize}}]
budget: {{evaluations: {args.samples}}}
""")
    rows = [r for r in rows if r["status"] == "ok"]
    meas = [float(r["latency_ms"]) for r in rows]
    pred = [float(r["predicted_latency_ms"]) for r in rows]
    iqr = [float(r["latency_iqr_ms"]) for r in rows]
    mdape = statistics.median(abs(p - m) / m for p, m in zip(pred, meas)) * 100
    print(f"[predict] {len(rows)} random cells measured whole in {time.time() - t0:.0f} s: "
          f"median {statistics.median(meas):.3f} ms (median IQR {statistics.median(iqr):.3f} ms)")
    print(f"[predict] table prediction vs measured: Spearman {spearman(pred, meas):.3f}, "
          f"median |error| {mdape:.1f}%, median ratio predicted/measured "
          f"{statistics.median(p / m for p, m in zip(pred, meas)):.3f}")
    cpu = [float(r["latency_cpu_ms"]) for r in rows]
    print(f"[predict] table prediction vs the forwards' CPU time (latency_cpu_ms, what other processes do not "
          f"inflate): Spearman {spearman(pred, cpu):.3f}, median |error| "
          f"{statistics.median(abs(p - c) / c for p, c in zip(pred, cpu)) * 100:.1f}%, median ratio "
          f"{statistics.median(p / c for p, c in zip(pred, cpu)):.3f}; CPU time vs wall median "
          f"{statistics.median(c / m for c, m in zip(cpu, meas)):.3f}")
    print(f"[predict] measured here vs NB201 lat_ms_gold_6226 (Xeon Gold 6226): Spearman "
          f"{spearman(meas, [gold[r['genotype']] for r in rows]):.3f}; prediction vs it: "
          f"{spearman(pred, [gold[r['genotype']] for r in rows]):.3f}")

    # the peer: PyTorch eager on the same cells, same settings
    sys.path.insert(0, PEERS)
    try:
        import torch
        import torch_nb201
        torch.set_num_threads(1)
        peer = []
        sample = rows[: min(len(rows), 60)]
        for r in sample:
            net = torch_nb201.NB201(r["genotype"]).eval()
            x = torch.randn(1, 3, 32, 32)
            with torch.no_grad():
                for _ in range(10):
                    net(x)
                ts = []
                for _ in range(30):
                    t = time.perf_counter()
                    net(x)
                    ts.append((time.perf_counter() - t) * 1e3)
            peer.append(statistics.median(ts))
        sv = [float(r["latency_ms"]) for r in sample]
        print(f"[peer] PyTorch {torch.__version__} eager (1 thread, batch 1, 30 runs) on {len(sample)} of them: "
              f"median {statistics.median(peer):.3f} ms; sieve/PyTorch median ratio "
              f"{statistics.median(s / p for s, p in zip(sv, peer)):.3f}; Spearman sieve vs PyTorch "
              f"{spearman(sv, peer):.3f}")
    except ImportError as e:
        print(f"[peer] PyTorch not available: {e}")

    # 3. stability: one cell, five processes
    arch = rows[0]["genotype"]
    five = [json.loads(run(sieve, "latency", "--space", "nb201", "--arch", arch)) for _ in range(5)]
    wall = [v["latency_ms"] for v in five]
    cpu5 = [v["latency_cpu_ms"] for v in five]
    print(f"[stable] one cell in 5 processes: wall medians {', '.join(f'{v:.3f}' for v in wall)} ms, "
          f"max/min {max(wall) / min(wall):.3f}; CPU-time medians {', '.join(f'{v:.3f}' for v in cpu5)} ms, "
          f"max/min {max(cpu5) / min(cpu5):.3f}; load average {os.getloadavg()[0]:.1f}")

    # 4. a constrained study under a measured-latency cap
    cap = round(statistics.median(meas), 2)
    t0 = time.time()
    crows = study("capped", f"""space: {{plugin: nb201}}
optimizer: {{plugin: evolution, population: 10, sample_size: 3, seed: 2}}
pipeline: [{{latency: {{rel_ci: 0.03, max_seconds: 0.5}}}}]
evaluator: {{plugin: tabular, table: {table}, key: arch_str, metrics: [cifar10_valid_acc]}}
objective: {{metric: cifar10_valid_acc}}
constraints: [{{metric: latency_ms, max: {cap}}}]
budget: {{evaluations: 30}}
""")
    ok = [r for r in crows if r["status"] == "ok"]
    rej = [r for r in crows if r["status"] == "rejected"]
    best = max(ok, key=lambda r: float(r["cifar10_valid_acc"]))
    again = json.loads(run(sieve, "latency", "--space", "nb201", "--arch", best["genotype"]))["latency_ms"]
    print(f"[cap] latency_ms <= {cap} (the sample's median): {len(ok)} evaluated, {len(rej)} rejected "
          f"({time.time() - t0:.0f} s); best {float(best['cifar10_valid_acc']):.2f}% at "
          f"{float(best['latency_ms']):.3f} ms as measured in the search (within the cap: "
          f"{float(best['latency_ms']) <= cap}), {again:.3f} ms measured again in a new process; "
          f"every evaluated one within the cap: {all(float(r['latency_ms']) <= cap for r in ok)}")

    # 5. the Pareto front: every cell's prediction from the same table
    t0 = time.time()
    allrows = study("all", f"""space: {{plugin: nb201}}
optimizer: {{plugin: random, seed: 0, unique: true}}
evaluator: {{plugin: tabular, table: {table}, key: arch_str, metrics: [cifar10_valid_acc]}}
objective: [{{metric: cifar10_valid_acc}}, {{metric: predicted_latency_ms, direction: minimize}}]
budget: {{evaluations: 15625}}
""")
    predicted = {r["genotype"]: float(r["predicted_latency_ms"]) for r in allrows if r["status"] == "ok"}
    print(f"[front] predicted latency of all {len(predicted)} cells in {time.time() - t0:.0f} s")
    truth = [(acc[a], predicted[a]) for a in predicted]
    ref_acc = min(p[0] for p in truth)
    ref_lat = max(p[1] for p in truth)
    hv_true = hypervolume(truth, ref_acc, ref_lat)
    tf = front(truth)
    print(f"[front] true front: {len(tf)} cells, from {tf[0][1]:.3f} ms ({tf[0][0]:.2f}%) to "
          f"{tf[-1][1]:.3f} ms ({tf[-1][0]:.2f}%); reference point ({ref_acc:.2f}%, {ref_lat:.3f} ms)")

    def fraction(genotypes):
        return hypervolume([(acc[g], predicted[g]) for g in genotypes], ref_acc, ref_lat) / hv_true

    results = {}
    for name, opt in (("nsga2", "{plugin: evolution, selection: nsga2, population: 30, sample_size: 2, seed: %d}"),
                      ("random", "{plugin: random, unique: true, seed: %d}")):
        fr, t0 = [], time.time()
        for seed in range(args.seeds):
            rows_s = study(f"{name}{seed}", f"""space: {{plugin: nb201}}
optimizer: {opt % seed}
evaluator: {{plugin: tabular, table: {table}, key: arch_str, metrics: [cifar10_valid_acc]}}
objective: [{{metric: cifar10_valid_acc}}, {{metric: predicted_latency_ms, direction: minimize}}]
budget: {{evaluations: {args.evaluations}}}
""")
            fr.append(fraction([r["genotype"] for r in rows_s if r["status"] == "ok"]))
        results[name] = fr
        print(f"[front] sieve {name}: hypervolume after {args.evaluations} evaluations = "
              f"{statistics.fmean(fr):.4f} of the true front's (sd {statistics.pstdev(fr):.4f}, "
              f"{args.seeds} seeds, {time.time() - t0:.0f} s)")
    try:
        import optuna
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        fr, t0 = [], time.time()
        for seed in range(args.seeds):
            def objective(trial):
                ops = [trial.suggest_categorical(f"e{i}", OPS) for i in range(6)]
                o = iter(ops)
                a = "+".join("|" + "|".join(f"{next(o)}~{i}" for i in range(j)) + "|" for j in (1, 2, 3))
                trial.set_user_attr("arch", a)
                return acc[a], predicted[a]
            st = optuna.create_study(directions=["maximize", "minimize"],
                                     sampler=optuna.samplers.NSGAIISampler(population_size=30, seed=seed))
            st.optimize(objective, n_trials=args.evaluations)
            fr.append(fraction([t.user_attrs["arch"] for t in st.trials]))
        print(f"[front] Optuna {optuna.__version__} NSGAIISampler (peer): {statistics.fmean(fr):.4f} "
              f"(sd {statistics.pstdev(fr):.4f}, {time.time() - t0:.0f} s); sieve nsga2 / Optuna "
              f"{statistics.fmean(results['nsga2']) / statistics.fmean(fr):.3f}")
    except ImportError as e:
        print(f"[front] Optuna not available: {e}")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
