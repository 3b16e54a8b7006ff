#!/usr/bin/env python3
"""Hardware-aware search on this machine: the latency table against networks
measured whole, the stability of a measurement, and search under latency.

  /usr/bin/python3 bench/hardware_aware.py --build build [--samples 200 --seeds 10]
  /usr/bin/python3 bench/hardware_aware.py --only stability          # < 1 minute
  /usr/bin/python3 bench/hardware_aware.py --only predict --spaces mobilenet --samples 200

Parts (--only, comma-separated; default all):
  predict   For each of --spaces (nb201 at C=16, N=5, and mobilenet at its
            defaults; also mobilenet-small, configs/mobilenet-latency.yaml's
            space, and nb201-small, C=4 and N=1): the latency table built into a store (`sieve latency
            --table`: every distinct operation, then the optional calibration
            on 12 networks measured whole, --calibrate 12; how long it took), --samples random
            candidates (drawn by a random study), each measured whole in
            --passes separate processes (`sieve latency --arch-file
            --together`, one process a pass over all of them: compiled
            first, then timed in rounds, one forward of each per round, so
            that the machine's drifting speed slows them all alike; with
            --mode in-turn each is measured alone in turn, in a new order
            each pass), and the table's prediction against the median
            of its passes: Spearman, median absolute percentage error, for
            the wall-clock medians and for the forwards' CPU time, for the
            calibrated prediction and for the plain sum (the default).  nb201 also: our
            measured latencies against the NB201 table's CPU latency column
            (lat_ms_gold_6226, another CPU).
  peer      PyTorch's eager latency of 60 of the nb201 cells (the peer,
            ../shared/peers/torch_nb201.py, 1 thread, batch 1, eval,
            no_grad), measured in the same run: sieve/PyTorch ratio.
  stability One cell measured in five separate processes by the default
            protocol (--stability-rounds times, --stability-gap s apart):
            the medians, their spread (max/min - 1), for the wall
            clock and for CPU time.
  cap       A constrained study (aging evolution, table accuracy) under a
            measured latency cap: the best candidate's latency as stored and
            re-measured.
  front     The accuracy-latency Pareto front: NSGA-II and random search, 300
            evaluations each, --seeds seeds, table accuracy and the latency
            table's prediction; hypervolume as a fraction of the true front's
            over all 15,625 cells; Optuna's NSGAIISampler beside them (peer).

--lock FILE takes an exclusive flock on FILE around each timed step (the
table, each pass, the stability check), so that on a shared machine timing
benches take turns without one hold lasting the whole run.
"""
import argparse
import contextlib
import csv
import fcntl
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


STABLE_ARCH = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_1x1~1|skip_connect~2|"
TABLE_SAMPLES = {"nb201": None, "mobilenet": 1000, "mobilenet-small": 300, "nb201-small": None}  # None: every cell
# Spaces at other settings: the plugin and its options.  mobilenet-small is
# configs/mobilenet-latency.yaml's (23,000 to 88,000 parameters, within the
# L2: its entries are timed warm), nb201-small NAS-Bench-201 at C=4, N=1.
SPACES = {"mobilenet-small": ("mobilenet", {"in_channels": 1, "size": 28, "width": 0.5, "stem_channels": 16,
                                            "first_channels": 8, "stages": "16:2:2,24:2:2,40:2:2,80:1:1",
                                            "last_channels": 256}),
          "nb201-small": ("nb201", {"C": 4, "N": 1})}


def space_args(space):
    """--space and --set flags of `sieve latency` for a name of SPACES or a plugin at its defaults."""
    plugin, options = SPACES.get(space, (space, {}))
    args = ["--space", plugin]
    for k, v in options.items():
        args += ["--set", f"space.{k}={v}"]
    return args


def space_yaml(space):
    plugin, options = SPACES.get(space, (space, {}))
    return "{" + ", ".join([f"plugin: {plugin}"] + [f"{k}: '{v}'" if isinstance(v, str) else f"{k}: {v}"
                                                   for k, v in options.items()]) + "}"


@contextlib.contextmanager
def held(lock):
    if lock is None:
        yield
        return
    with open(lock, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def mdape(pred, meas):
    return statistics.median(abs(p - m) / m for p, m in zip(pred, meas)) * 100


def compare(label, pred, meas):
    ratio = statistics.median(p / m for p, m in zip(pred, meas))
    print(f"[predict] {label}: Spearman {spearman(pred, meas):.3f}, median |error| {mdape(pred, meas):.1f}%, "
          f"median predicted/measured {ratio:.3f}")


def draw(sieve, tmp, space, n, seed=1):
    """n distinct random candidates of space, in the space's text form (a
    random study whose evaluator times each for a few forwards only)."""
    store = os.path.join(tmp, f"draw-{space}.sieve")
    cfg = os.path.join(tmp, f"draw-{space}.yaml")
    write(cfg, f"""space: {space_yaml(space)}
optimizer: {{plugin: random, seed: {seed}, unique: true}}
evaluator: {{plugin: latency, warmup: 0, min_runs: 3, max_runs: 3}}
objective: {{metric: latency_ms, direction: minimize}}
budget: {{evaluations: {n}}}
""")
    run(sieve, "run", cfg, "--store", store)
    return [r["genotype"] for r in export(sieve, store) if r["status"] == "ok"]


def predict(args, sieve, tmp, space, gold):
    store = os.path.join(tmp, f"table-{space}.sieve")
    extra = [] if TABLE_SAMPLES[space] is None else ["--samples", str(TABLE_SAMPLES[space])]
    with held(args.lock):
        t0 = time.time()
        head = run(sieve, "latency", "--table", *space_args(space), "--store", store, "--calibrate", "12",
                   *extra).splitlines()[:3]
    print(f"[table] {space}: {head[0][2:]}\n[table] {head[2][2:]}\n[table] built in {time.time() - t0:.1f} s "
          f"(wall, with the enumeration); {head[1][2:]}")
    archs = draw(sieve, tmp, space, args.samples)
    meas = {a: [] for a in archs}
    pred, plain = {}, {}
    for p in range(args.passes):
        order = archs[:]
        random.Random(p).shuffle(order)  # a drift of the machine lands on other candidates each pass
        listing = os.path.join(tmp, f"pass-{space}.txt")
        write(listing, "".join(a + "\n" for a in order))
        cmd = [sieve, "latency", *space_args(space), "--arch-file", listing, "--max-seconds", str(args.max_seconds)]
        if args.mode == "together":
            cmd.append("--together")
        if p == 0:
            cmd += ["--predict", "--store", store, "--calibrate", "12"]
        with held(args.lock):
            tp = time.time()
            load = os.getloadavg()[0]
            out = run(*cmd)
        for line in out.splitlines():
            r = json.loads(line)
            a = r["genotype"]
            meas[a].append((r["latency_ms"], r["latency_cpu_ms"]))
            if p == 0:
                pred[a], plain[a] = r["predicted_latency_ms"], r["predicted_sum_ms"]
        print(f"[predict] {space}: pass {p + 1}/{args.passes} over {len(archs)} candidates in "
              f"{time.time() - tp:.0f} s (load average {load:.1f} at its start, {os.getloadavg()[0]:.1f} at its end)")
    wall = [statistics.median(w for w, _ in meas[a]) for a in archs]
    best = [min(w for w, _ in meas[a]) for a in archs]
    cpu = [statistics.median(c for _, c in meas[a]) for a in archs]
    spread = [max(w for w, _ in meas[a]) / min(w for w, _ in meas[a]) - 1 for a in archs]
    pr = [pred[a] for a in archs]
    pl = [plain[a] for a in archs]
    print(f"[predict] {space}: {len(archs)} random candidates, each measured whole in {args.passes} processes "
          f"({args.mode}): median latency {statistics.median(wall):.3f} ms "
          f"(from {min(wall):.3f} to {max(wall):.3f}); median spread of a candidate's {args.passes} process "
          f"medians (max/min - 1) {statistics.median(spread) * 100:.1f}%; CPU time / wall "
          f"{statistics.median(c / w for c, w in zip(cpu, wall)):.3f}")
    compare(f"{space} calibrated prediction vs wall median (median of the passes)", pr, wall)
    compare(f"{space} calibrated prediction vs CPU time (median of the passes)", pr, cpu)
    compare(f"{space} calibrated prediction vs the fastest pass's wall median", pr, best)
    compare(f"{space} plain sum of entries vs wall median", pl, wall)
    compare(f"{space} plain sum of entries vs CPU time", pl, cpu)
    if space == "nb201":  # (the table's column is of C=16, N=5 networks)
        g = [gold[a] for a in archs]
        print(f"[predict] nb201: measured here vs NB201 lat_ms_gold_6226 (Xeon Gold 6226): Spearman "
              f"{spearman(wall, g):.3f} (wall), {spearman(cpu, g):.3f} (CPU time); the prediction vs it: "
              f"{spearman(pr, g):.3f}")
    return archs, wall


def stability(args, sieve, arch=STABLE_ARCH, space="nb201", n=5):
    """--stability-rounds rounds of n processes each, --stability-gap seconds apart: one
    round is the issue's check; several show how often it holds on this machine."""
    print(f"[stable] {space} cell {arch} in {n} separate processes a round (default protocol: 10 "
          f"warm-up forwards, then until the median's 95% interval is within 2%, at most 2 s):")
    spreads = []
    for r in range(args.stability_rounds):
        if r:
            time.sleep(args.stability_gap)
        with held(args.lock):
            before = os.getloadavg()[0]
            five = [json.loads(run(sieve, "latency", "--space", space, "--arch", arch)) for _ in range(n)]
            after = os.getloadavg()[0]
        wall = [v["latency_ms"] for v in five]
        cpu = [v["latency_cpu_ms"] for v in five]
        spread = (max(wall) / min(wall) - 1) * 100
        spreads.append(spread)
        print(f"[stable] round {r + 1} at {time.strftime('%H:%M:%S')}: wall medians "
              f"{', '.join(f'{v:.3f}' for v in wall)} ms: spread (max/min - 1) {spread:.1f}%; CPU-time "
              f"medians {', '.join(f'{v:.3f}' for v in cpu)} ms: spread {(max(cpu) / min(cpu) - 1) * 100:.1f}% "
              f"(load average {before:.1f} before, {after:.1f} after)")
    met = sum(s <= 10 for s in spreads)
    print(f"[stable] {met} of {len(spreads)} rounds within the target (at most 10% on an idle machine); "
          f"spreads {', '.join(f'{s:.1f}%' for s in spreads)}; median {statistics.median(spreads):.1f}%")


def peer(archs, wall):
    sys.path.insert(0, PEERS)
    try:
        import torch
        import torch_nb201
    except ImportError as e:
        print(f"[peer] PyTorch not available: {e}")
        return
    torch.set_num_threads(1)
    ours, theirs = [], []
    for a, w in list(zip(archs, wall))[:60]:
        net = torch_nb201.NB201(a).eval()
        x = torch.randn(1, 3, 32, 32)
        with torch.no_grad():
            for _ in range(10):
                net(x)
            ts = []
            for _ in range(30):
                t = time.perf_counter()
                net(x)
                ts.append((time.perf_counter() - t) * 1e3)
        ours.append(w)
        theirs.append(statistics.median(ts))
    print(f"[peer] PyTorch {torch.__version__} eager (1 thread, batch 1, 30 runs) on {len(ours)} of the nb201 "
          f"cells: median {statistics.median(theirs):.3f} ms; sieve/PyTorch median ratio "
          f"{statistics.median(s / p for s, p in zip(ours, theirs)):.3f}; Spearman sieve vs PyTorch "
          f"{spearman(ours, theirs):.3f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--only", default="predict,peer,stability,cap,front")
    ap.add_argument("--spaces", default="nb201,mobilenet")
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--passes", type=int, default=3, help="separate processes per candidate")
    ap.add_argument("--max-seconds", type=float, default=0.3, help="timing of one candidate in one process")
    ap.add_argument("--mode", choices=("together", "in-turn"), default="together",
                    help="a pass measures its candidates together, in rounds (`--together`), or each in turn")
    ap.add_argument("--lock", help="flock this file around each timed step")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--evaluations", type=int, default=300)
    ap.add_argument("--stability-rounds", type=int, default=1, help="rounds of the stability part")
    ap.add_argument("--stability-gap", type=float, default=20, help="seconds between stability rounds")
    args = ap.parse_args()
    parts = set(args.only.split(","))
    sieve = os.path.join(os.path.abspath(args.build), "src", "cli", "sieve")
    table = table_csv()
    acc, gold = {}, {}
    with open(table) as f:
        for r in csv.DictReader(f):
            acc[r["arch_str"]] = float(r["cifar10_valid_acc"])
            gold[r["arch_str"]] = float(r["lat_ms_gold_6226"])
    tmp = tempfile.mkdtemp(prefix="sieve-hw-")
    print(f"machine: {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at start")
    if "stability" in parts:
        stability(args, sieve)
    meas = None
    if "predict" in parts or "peer" in parts or "cap" in parts:
        for space in args.spaces.split(","):
            if space != "nb201" and "predict" not in parts:
                continue
            archs, wall = predict(args, sieve, tmp, space, gold)
            if space == "nb201":
                meas, nb_archs = wall, archs
        if meas is not None and "peer" in parts:
            peer(nb_archs, meas)
    if not parts & {"cap", "front"}:
        shutil.rmtree(tmp)
        return
    base = os.path.join(tmp, "table-nb201.sieve")
    if not os.path.exists(base):
        with held(args.lock):
            run(sieve, "latency", "--table", "--space", "nb201", "--store", base)

    def study(name, yaml, store_from_base=True):
        store = os.path.join(tmp, name + ".sieve")
        if store_from_base:
            shutil.copy(base, store)
        cfg = os.path.join(tmp, name + ".yaml")
        write(cfg, yaml)
        run(sieve, "run", cfg, "--store", store)
        return export(sieve, store)

    # 4. a constrained study under a measured-latency cap
    if "cap" in parts and meas is not None:
        cap_study(args, sieve, table, study, meas)
    if "front" in parts:
        front_part(args, sieve, table, study, acc)
    shutil.rmtree(tmp)


def cap_study(args, sieve, table, study, meas):
    cap = round(statistics.median(meas), 2)
    t0 = time.time()
    with held(args.lock):
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


def front_part(args, sieve, table, study, acc):
    """The Pareto front: every cell's prediction from the same table."""
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


if __name__ == "__main__":
    main()
