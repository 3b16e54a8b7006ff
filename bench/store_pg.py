#!/usr/bin/env python3
"""The store's cost per trial on a PostgreSQL server beside an SQLite file,
and Optuna's RDB storage on the same server, measured in the same run.

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
evaluator: {plugin: function, function: branin}
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


def run_sieve(sieve, cfg, store):
    t0 = time.perf_counter()
    subprocess.run([sieve, "run", cfg, "--store", store, "--quiet"], check=True, capture_output=True)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--optuna-procs", default="1,4,16")
    args = ap.parse_args()
    sieve = os.path.join(os.path.abspath(args.build), "src", "cli", "sieve")
    skip = PgServer.skip_reason()
    if skip:
        sys.exit(f"store_pg: {skip}")
    with tempfile.TemporaryDirectory() as tmp, PgServer() as pg:
        cfg = os.path.join(tmp, "bench.yaml")
        with open(cfg, "w") as f:
            f.write(CONFIG % (os.path.join(ROOT, "search_spaces", "branin.yaml"), args.trials))
        t_sqlite = run_sieve(sieve, cfg, os.path.join(tmp, "bench.sieve"))
        t_pg = run_sieve(sieve, cfg, pg.url("bench"))
        n = args.trials
        print(f"sieve, one coordinator, {n} zero-cost trials:")
        print(f"  SQLite file      {n / t_sqlite:8.0f} trials/s  ({1e3 * t_sqlite / n:.2f} ms/trial)")
        print(f"  PostgreSQL       {n / t_pg:8.0f} trials/s  ({1e3 * t_pg / n:.2f} ms/trial)")
        for procs in [int(p) for p in args.optuna_procs.split(",")]:
            rate = run_optuna(pg, procs, min(n, 200 * procs))
            print(f"Optuna RDBStorage, {procs:2d} processes: {rate:8.1f} trials/s   "
                  f"sieve/PostgreSQL is {n / t_pg / rate:.1f}x")


if __name__ == "__main__":
    main()
