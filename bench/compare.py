#!/usr/bin/env python3
"""sieve's search strategies beside Optuna, in one run (`make bench-optimizers`).

NAS-Bench-201 table: every strategy searches cifar10_valid_acc; the figure is
the cifar10_test_acc of the best-by-validation architecture after N
evaluations, mean over seeds with a 95% percentile-bootstrap interval of the
mean (Agarwal et al., "Deep RL at the Edge of the Statistical Precipice",
NeurIPS 2021), and the relative improvement over random search,
RI = 100 (acc - acc_random) / acc_random (Yang, Esperança & Carlucci, "NAS
evaluation is frustratingly hard", ICLR 2020).  Then each optimizer's own
time per ask+tell at 1000 trials against Optuna TPE's, and the standard
functions (regret of the best value) against Optuna TPE.

  /usr/bin/python3 bench/compare.py [--build build] [--seeds 20]
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CHECKPOINTS = [10, 30, 50, 100, 150, 200, 300]
FUNCTION_CHECKPOINTS = [10, 25, 50, 100, 200]

# (label, optimizer, options): what sieve runs on the table.  The
# multi-fidelity strategies (successive_halving, hyperband, bohb) need a
# fidelity the table does not have (it holds final accuracies only).
NB201 = [
    ("sieve random (unique)", "random", "{unique: true}"),
    ("sieve evolution", "evolution", "{population: 20, sample_size: 5}"),
    ("sieve local_search", "local_search", "{}"),
    ("sieve local_search (first improvement)", "local_search", "{first_improvement: true}"),
    ("sieve tpe", "tpe", "{}"),
    ("sieve tpe (multivariate)", "tpe", "{multivariate: true}"),
    ("sieve reinforce", "reinforce", "{}"),
]
FUNCTIONS = [
    ("sieve random", "random", "{}"),
    ("sieve evolution", "evolution", "{population: 20, sample_size: 5}"),
    ("sieve local_search", "local_search", "{}"),
    ("sieve tpe", "tpe", "{}"),
    ("sieve tpe (multivariate)", "tpe", "{multivariate: true}"),
    ("sieve reinforce", "reinforce", "{bins: 20}"),
]


def bootstrap(values, rng, n=10000):
    values = np.asarray(values, dtype=float)
    means = values[rng.integers(0, len(values), size=(n, len(values)))].mean(axis=1)
    return values.mean(), np.percentile(means, 2.5), np.percentile(means, 97.5)


def harness(build, target, optimizer, options, seeds, evals, table):
    cmd = [os.path.join(build, "bench", "bench-optimizers"), "--target", target, "--optimizer", optimizer,
           "--options", options, "--seeds", str(seeds), "--evals", str(evals)]
    if table:
        cmd += ["--table", table]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def log(message):
    print(message, file=sys.stderr, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--table", default=os.path.join(ROOT, "..", "shared", "data", "nb201", "nb201.csv"))
    ap.add_argument("--peer", default=os.path.join(ROOT, "..", "shared", "peers", "optuna_nb201.py"))
    ap.add_argument("--python", default="/usr/bin/python3", help="the Python that has Debian's python3-optuna")
    ap.add_argument("--function-seeds", type=int, default=20)
    args = ap.parse_args()
    rng = np.random.default_rng(20261123)
    table = os.path.abspath(args.table)
    started = time.time()

    rows = {}  # label -> list of per-seed curves
    notes = {}
    for label, optimizer, options in NB201:
        log(f"NB201: {label} ({args.seeds} seeds)")
        runs = harness(args.build, "nb201", optimizer, options, args.seeds, 300, table)
        rows[label] = [r["curve"] for r in runs]
        repeats = sum(r["repeats"] for r in runs)
        if repeats:
            notes[label] = f"{repeats} re-proposals answered from the run's cache over {args.seeds} seeds"
    for sampler in ("tpe", "random"):
        log(f"NB201: Optuna {sampler} via {args.peer} ({args.seeds} seeds)")
        out = subprocess.run([args.python, os.path.join(HERE, "optuna_curves.py"), args.peer, "--table", table,
                              "--sampler", sampler, "--trials", "300", "--seeds", str(args.seeds)],
                             check=True, capture_output=True, text=True).stdout
        data = json.loads(out)
        label = f"Optuna {data['peer']['optuna']} {sampler.upper() if sampler == 'tpe' else sampler}"
        rows[label] = data["curves"]
        notes[label] = (f"every trial counted, as the peer counts; distinct architectures in 300 trials: "
                        f"mean {np.mean(data['distinct']):.1f}")
        # The peer's own means must agree with the curves rebuilt here.
        for c, mean in data["peer"]["mean_report_at"].items():
            assert abs(np.mean([curve[int(c) - 1] for curve in data["curves"]]) - mean) < 1e-3, (label, c)

    random_label = "sieve random (unique)"
    print(f"## NAS-Bench-201: CIFAR-10 test accuracy of the best-by-validation architecture\n")
    print(f"{args.seeds} seeds (0..{args.seeds - 1}); mean [95% bootstrap interval of the mean]; "
          f"sieve counts an evaluation only for an architecture not evaluated before in that run "
          f"(re-proposals are answered from the run's own cache, standing in for the engine's dedupe stage); "
          f"the optimum of the table is 94.37.\n")
    print("| strategy | " + " | ".join(f"{c} evals" for c in CHECKPOINTS) + " | RI@100 | RI@300 |")
    print("|---|" + "---|" * (len(CHECKPOINTS) + 2))
    base = {c: np.mean([curve[c - 1] for curve in rows[random_label]]) for c in (100, 300)}
    for label, curves in rows.items():
        cells = []
        for c in CHECKPOINTS:
            m, lo, hi = bootstrap([curve[c - 1] for curve in curves], rng)
            cells.append(f"{m:.2f} [{lo:.2f}, {hi:.2f}]")
        ri = [100 * (np.mean([curve[c - 1] for curve in curves]) - base[c]) / base[c] for c in (100, 300)]
        print(f"| {label} | " + " | ".join(cells) + f" | {ri[0]:+.3f}% | {ri[1]:+.3f}% |")
    print()
    for label, note in notes.items():
        print(f"- {label}: {note}")
    print(f"- RI: relative improvement over {random_label}, 100 (acc - acc_random) / acc_random.")
    print("- successive_halving, hyperband and bohb are not in this table: the table holds final accuracies "
          "only, no fidelity to halve over (they run on the function evaluator's synthetic fidelity).")

    # Overhead per ask+tell at 1000 trials.
    log("overhead: Optuna TPE at 1000 trials (1 seed)")
    out = subprocess.run([args.python, args.peer, "--table", table, "--sampler", "tpe", "--trials", "1000",
                          "--seeds", "1"], check=True, capture_output=True, text=True).stdout
    optuna_ms = json.loads(out.strip().splitlines()[-1])["median_ms_per_trial"]
    print(f"\n## Optimizer time per ask+tell at 1000 trials (NB201 space)\n")
    print(f"Optuna TPE: {optuna_ms:.2f} ms per trial (the peer's own measure: its loop, ask, suggest, tell). "
          f"sieve: time inside sieve_optimizer_ask() and sieve_optimizer_tell() (genotype validation "
          f"included, evaluation excluded), median over 3 seeds.\n")
    print("| optimizer | µs per ask+tell | share of Optuna TPE's |")
    print("|---|---|---|")
    for label, optimizer, options in NB201:
        log(f"overhead: {label}")
        runs = harness(args.build, "nb201", optimizer, options, 3, 1000, table)
        us = float(np.median([r["us_per_ask_tell"] for r in runs]))
        print(f"| {label} | {us:.1f} | 1/{optuna_ms * 1000 / us:.0f} |")

    # Standard functions.
    print(f"\n## Standard functions: regret of the best value (mean over {args.function_seeds} seeds "
          f"[95% bootstrap interval])\n")
    for fn in ("branin", "hartmann6", "rosenbrock"):
        log(f"functions: {fn}")
        frows = {}
        for label, optimizer, options in FUNCTIONS:
            runs = harness(args.build, fn, optimizer, options, args.function_seeds, 200, None)
            frows[label] = [r["curve"] for r in runs]
        out = subprocess.run([args.python, os.path.join(HERE, "optuna_functions.py"), fn, "200",
                              str(args.function_seeds)], check=True, capture_output=True, text=True).stdout
        data = json.loads(out)
        frows[f"Optuna {data['optuna']} TPE"] = data["curves"]
        dims = {"branin": 2, "hartmann6": 6, "rosenbrock": 4}[fn]
        print(f"### {fn} ({dims}-d)\n")
        print("| strategy | " + " | ".join(f"{c} evals" for c in FUNCTION_CHECKPOINTS) + " |")
        print("|---|" + "---|" * len(FUNCTION_CHECKPOINTS))
        for label, curves in frows.items():
            cells = []
            for c in FUNCTION_CHECKPOINTS:
                m, lo, hi = bootstrap([curve[c - 1] for curve in curves], rng)
                cells.append(f"{m:.3g} [{lo:.3g}, {hi:.3g}]")
            print(f"| {label} | " + " | ".join(cells) + " |")
        print()
    print(f"Run: {time.strftime('%Y-%m-%d')}, {platform.platform()}, {os.cpu_count()} CPUs, "
          f"{time.time() - started:.0f} s.")


if __name__ == "__main__":
    main()
