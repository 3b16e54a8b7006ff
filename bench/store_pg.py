#!/usr/bin/env python3
"""Studies on a PostgreSQL server: `sieve worker` processes against the
ideal, the store's cost per trial beside an SQLite file, and Optuna's RDB
storage on the same server, measured in the same run.

Workers: a function evaluator that sleeps --delay s per evaluation (a
sleeping process costs no CPU, so a 2-core machine can stand for 64
machines), N worker processes and a coordinator keeping --ahead x N
evaluations queued or running (2N by default: a worker that finishes finds
the next one queued, instead of waiting for the coordinator to record its
result and ask again), --per-worker x N evaluations.  Two throughputs, both
against the ideal N / delay, both from the times the store keeps:
  span: all evaluations over the seconds from the first one's start to the
    last one's end.  It counts the workers' start (64 processes loading the
    study at once on a 2-core machine start up to a second apart, which
    machines of a cluster would not) and the end, where workers run out.
  busy: the share of each worker's time, from its first start to its last
    end, spent evaluating (all workers together), times the ideal: the rate
    the coordinator and the server sustain once the workers are up.

A zero-cost objective (branin, no delay) makes every trial pure store
traffic: sieve's coordinator adds the pending trial with the optimizer's
state after the ask, then records the result with the state after the tell,
one transaction each, as it does for every study.  The peer: N processes
of Optuna (Debian's python3-optuna, with psycopg2) each running
study.optimize on one shared study in RDBStorage on the same server,
random sampler, the same function.  The server is the throwaway one of the
tests (tests/support/pg_server.py: a temporary folder, Unix socket only,
fsync off for both).  Figures are trials per second of wall time.

    /usr/bin/python3 bench/store_pg.py --build build [--trials 2000] [--optuna-procs 1,4,16]
        [--workers 1,2,4,8,16,64] [--delay 1]
"""
import argparse
import math
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from pg_server import PgServer  # noqa: E402

CONFIG = """name: bench
seed: 1
space: {plugin: hpo, file: %s}
optimizer: {plugin: random}
evaluator: {plugin: function, function: branin, delay: %s}
objective: {metric: value, direction: minimize}
budget: {evaluations: %d}
"""


def branin(x1, x2):
    a, b, c, r, s, t = 1, 5.1 / (4 * math.pi ** 2), 5 / math.pi, 6, 10, 1 / (8 * math.pi)
    return a * (x2 - b * x1 ** 2 + c * x1 - r) ** 2 + s * (1 - t) * math.cos(x1) + s


def optuna_worker(url, n):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.load_study(study_name="bench", storage=url, sampler=optuna.samplers.RandomSampler())
    study.optimize(lambda t: branin(t.suggest_float("x1", -5, 10), t.suggest_float("x2", 0, 15)), n_trials=n)


def run_optuna(pg, procs, trials):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    url = f"postgresql+psycopg2://sieve@/sieve?host={pg.socket_dir}"
    name = "bench"
    try:
        optuna.delete_study(study_name=name, storage=url)
    except KeyError:
        pass
    optuna.create_study(study_name=name, storage=url)
    per = max(1, trials // procs)
    ctx = multiprocessing.get_context("fork")
    workers = [ctx.Process(target=optuna_worker, args=(url, per)) for _ in range(procs)]
    t0 = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    dt = time.perf_counter() - t0
    return per * procs / dt


def run_sieve(sieve, cfg, store, *extra):
    t0 = time.perf_counter()
    subprocess.run([sieve, "run", cfg, "--store", store, "--quiet", *extra], check=True, capture_output=True)
    return time.perf_counter() - t0


def span(sieve, store):
    """(evaluations, seconds from the first one's start to the last one's
    end, the workers' busy share between their first start and last end)."""
    import csv
    import io
    out = subprocess.run([sieve, "export", store, "--format", "csv"], check=True, capture_output=True,
                         text=True).stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    by_worker = {}
    for r in rows:
        by_worker.setdefault(r["worker"], []).append((float(r["started"]), float(r["finished"])))
    busy = sum(f - s for v in by_worker.values() for s, f in v)
    up = sum(max(f for _, f in v) - min(s for s, _ in v) for v in by_worker.values())
    return len(rows), max(float(r["finished"]) for r in rows) - min(float(r["started"]) for r in rows), busy / up


def run_workers(sieve, tmp, pg, n, delay, trials, warmup=0.0, ahead=2.0):
    cfg = os.path.join(tmp, f"w{n}.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG % (os.path.join(ROOT, "search_spaces", "branin.yaml"), delay, trials))
    url = pg.url(f"workers{n}_{str(delay).replace('.', '_')}")
    env = dict(os.environ, SIEVE_STORE_URL=url)
    # Workers first, as on a cluster where they are up before the study:
    # they wait for it, so their start-up (plugins, oneDNN) is not measured.
    workers = [subprocess.Popen([sieve, "worker", "-", "--quiet"], env=env, stderr=subprocess.DEVNULL)
               for _ in range(n)]
    time.sleep(warmup)
    in_flight = max(n, int(round(ahead * n)))
    coordinator = subprocess.Popen([sieve, "run", cfg, "--store", url, "--quiet", "--in-flight", str(in_flight)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    coordinator.wait()
    for w in workers:
        w.wait()
    if coordinator.returncode != 0:
        sys.exit(f"store_pg: the coordinator failed: {coordinator.stderr.read().decode()}")
    return span(sieve, url)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--optuna-procs", default="1,4,16")
    ap.add_argument("--workers", default="1,2,4,8,16,64")
    ap.add_argument("--delay", type=float, default=1.0)
    ap.add_argument("--per-worker", type=int, default=20, help="evaluations per worker")
    ap.add_argument("--warmup", type=float, default=0.0, help="seconds the workers get to start before the study")
    ap.add_argument("--ahead", type=float, default=2.0, help="evaluations in flight per worker (--in-flight)")
    ap.add_argument("--only-workers", action="store_true", help="skip the zero-cost and Optuna parts")
    args = ap.parse_args()
    sieve = os.path.join(os.path.abspath(args.build), "src", "cli", "sieve")
    skip = PgServer.skip_reason()
    if skip:
        sys.exit(f"store_pg: {skip}")
    with tempfile.TemporaryDirectory() as tmp, PgServer() as pg:
        cfg = os.path.join(tmp, "bench.yaml")
        with open(cfg, "w") as f:
            f.write(CONFIG % (os.path.join(ROOT, "search_spaces", "branin.yaml"), 0, args.trials))
        print(f"workers, evaluations of {args.delay:g} s, {args.per_worker} per worker, {args.warmup:g} s to start, "
              f"{args.ahead:g} in flight per worker:")
        for n in [int(x) for x in args.workers.split(",") if x]:
            done, dt, busy = run_workers(sieve, tmp, pg, n, args.delay, args.per_worker * n, warmup=args.warmup,
                                           ahead=args.ahead)
            rate = done / dt
            ideal = n / args.delay
            print(f"  {n:3d} workers: span {rate:7.2f} trials/s, {100 * rate / ideal:5.1f}% of ideal {ideal:g}; "
                  f"busy {busy * ideal:7.2f} trials/s, {100 * busy:5.1f}%")
        if args.only_workers:
            return
        done, dt, _ = run_workers(sieve, tmp, pg, 4, 0, args.trials, ahead=args.ahead)
        print(f"  4 workers, zero-cost evaluator: {done / dt:7.0f} trials/s "
              f"(claim, evaluate, result, coordinator records: {1e3 * dt / done:.2f} ms/trial)")
        t_sqlite = run_sieve(sieve, cfg, os.path.join(tmp, "bench.sieve"))
        t_pg = run_sieve(sieve, cfg, pg.url("bench"), "--local-workers", "1")
        n = args.trials
        print(f"sieve, one coordinator, {n} zero-cost trials:")
        print(f"  SQLite file      {n / t_sqlite:8.0f} trials/s  ({1e3 * t_sqlite / n:.2f} ms/trial)")
        print(f"  PostgreSQL, 1 worker {n / t_pg:8.0f} trials/s  ({1e3 * t_pg / n:.2f} ms/trial)")
        for procs in [int(p) for p in args.optuna_procs.split(",")]:
            rate = run_optuna(pg, procs, min(n, 20 * procs))
            print(f"Optuna RDBStorage, {procs:2d} processes: {rate:8.1f} trials/s   "
                  f"sieve/PostgreSQL is {n / t_pg / rate:.1f}x")


if __name__ == "__main__":
    main()
