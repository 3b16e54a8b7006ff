#!/usr/bin/python3
"""Training-aware search, measured (issue 25).

Part 1, pruners against Optuna (seconds): the same synthetic learning
curves go through a real `sieve run` (a command evaluator that prints each
trial's curve as progress lines, pruned by sieve's median / percentile /
patience pruner) and through Optuna's MedianPruner / PercentilePruner /
PatientPruner in the same process; the bench prints, per rule, how many
trials each pruned and at which step, and how many decisions differ.

Part 2, NB201 on Fashion-MNIST (C=8, N=1): random search, Hyperband
without and with continuation, ASHA with median pruning, and BOHB (with
continuation), each over about 8 epochs-equivalent of training (the full
fidelity is one epoch; the budget is set in evaluations that make about
8 epochs for each method and the bench reports the compute actually used,
sum of epochs_run); for each, the incumbent (best val_acc at full fidelity)
is trained again by `sieve train` with the same settings and schedule
(exact: continuation equals an uninterrupted training) for its test
accuracy.  --seeds, --train-limit, --validation and --threads scale it.

  python3 bench/training_aware.py --sieve build/src/cli/sieve [--seeds 1,2,3,4,5] [--skip-nb201]
"""
import argparse
import csv
import io
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time

import optuna

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# ---- part 1: pruners against Optuna ---------------------------------------

CURVE_PROGRAM = r'''
import json, sys
curves = json.load(open(sys.argv[1]))
request = json.load(sys.stdin)
curve = curves[request["trial"]]
for step, value in enumerate(curve, start=1):
    print(json.dumps({"intermediate": {"step": step, "value": value}}), flush=True)
print(json.dumps({"val_acc": curve[-1]}), flush=True)
'''


def make_curves(n_trials, n_steps, seed):
    """Learning curves of different heights and speeds with seeded noise."""
    rng = random.Random(seed)
    curves = []
    for _ in range(n_trials):
        top, tau, noise = rng.uniform(0.5, 0.95), rng.uniform(0.5, 4.0), rng.uniform(0.0, 0.03)
        curves.append([top * (1 - math.exp(-s / tau)) + rng.gauss(0, noise) for s in range(1, n_steps + 1)])
    return curves


RULES = {
    "median": ("{kind: median, startup_trials: 5, warmup_steps: 2}",
               lambda: optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=2)),
    "percentile": ("{kind: percentile, percentile: 25, startup_trials: 5, warmup_steps: 1, interval_steps: 2}",
                   lambda: optuna.pruners.PercentilePruner(25.0, n_startup_trials=5, n_warmup_steps=1,
                                                           interval_steps=2)),
    "patience": ("{kind: patience, patience: 2}", lambda: optuna.pruners.PatientPruner(None, patience=2)),
}


def sieve_prunes(sieve, workdir, curves, rule):
    curves_path = os.path.join(workdir, "curves.json")
    with open(curves_path, "w") as f:
        json.dump(curves, f)
    program = os.path.join(workdir, "curve.py")
    with open(program, "w") as f:
        f.write(CURVE_PROGRAM)
    cfg = os.path.join(workdir, f"prune-{rule}.yaml")
    with open(cfg, "w") as f:
        f.write(f"space: {{plugin: hpo, parameters: {{x: {{type: float, low: 0, high: 1}}}}}}\n"
                f"optimizer: random\n"
                f"evaluator: {{plugin: command, argv: [{sys.executable}, {program}, {curves_path}], stdin: json}}\n"
                f"pruner: {RULES[rule][0]}\n"
                f"objective: {{metric: val_acc, direction: maximize}}\n"
                f"budget: {{evaluations: {len(curves)}}}\nseed: 1\n")
    store = os.path.join(workdir, f"prune-{rule}.sieve")
    subprocess.run([sieve, "run", cfg, "--store", store, "--quiet"], check=True, capture_output=True)
    out = subprocess.run([sieve, "export", store, "--format", "csv"], check=True, capture_output=True,
                         text=True).stdout
    decisions = {}
    for row in csv.DictReader(io.StringIO(out)):
        decisions[int(row["number"])] = int(float(row["step"])) if row["status"] == "pruned" else None
    return [decisions[i] for i in range(len(curves))]


def optuna_prunes(curves, rule):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", pruner=RULES[rule][1]())
    decisions = []

    def objective(trial):
        curve = curves[trial.number]
        for step, value in enumerate(curve, start=1):
            trial.report(value, step)
            if trial.should_prune():
                decisions.append(step)
                raise optuna.TrialPruned()
        decisions.append(None)
        return curve[-1]

    study.optimize(objective, n_trials=len(curves))
    return decisions


def part_pruners(sieve, seeds):
    print("== pruners: sieve against Optuna %s on the same synthetic learning curves" % optuna.__version__)
    print("%-10s %5s %7s %13s %14s %10s" % ("rule", "seed", "trials", "sieve pruned", "optuna pruned", "differ"))
    total_differ = 0
    for rule in RULES:
        for seed in seeds:
            curves = make_curves(40, 10, seed)
            with tempfile.TemporaryDirectory(prefix="sieve-bench-ta-") as workdir:
                ours = sieve_prunes(sieve, workdir, curves, rule)
            theirs = optuna_prunes(curves, rule)
            differ = sum(a != b for a, b in zip(ours, theirs))
            total_differ += differ
            print("%-10s %5d %7d %13d %14d %10d" % (rule, seed, len(curves), sum(d is not None for d in ours),
                                                    sum(d is not None for d in theirs), differ))
    print("decisions that differ (trial pruned or not, and at which step): %d" % total_differ)
    return total_differ


# ---- part 2: NB201 on Fashion-MNIST ------------------------------------------

EVALUATOR = """\
evaluator:
  plugin: train
  dataset: fashion-mnist
  validation: {validation}
  train_limit: {train_limit}
  test: false
  epochs: 1
  min_epochs: 0.111111111111
  batch_size: 64
  lr: 0.05
  threads: {threads}
  seed: {seed}
  continuation: {continuation}
"""

# name: (optimizer, continuation, pruner, evaluations); evaluations chosen so
# that each method trains about 8 epochs-equivalent (one Hyperband cycle at
# eta 3 from 1/9 epoch is 22 evaluations, 8.7 epochs without continuation).
METHODS = {
    "random": ("{plugin: random}", False, None, 8),
    "hyperband": ("{plugin: hyperband, eta: 3}", False, None, 22),
    "hyperband+cont": ("{plugin: hyperband, eta: 3}", True, None, 22),
    "asha+median": ("{plugin: asha, eta: 3}", True, "{kind: median, startup_trials: 3, warmup_steps: 0}", 22),
    "bohb+cont": ("{plugin: bohb, eta: 3}", True, None, 22),
}


def run_method(sieve, workdir, name, seed, args):
    optimizer, continuation, pruner, evaluations = METHODS[name]
    cfg = os.path.join(workdir, f"{name}-{seed}.yaml")
    with open(cfg, "w") as f:
        f.write(f"name: {name}\nseed: {seed}\n"
                "space: {plugin: nb201, C: 8, N: 1, in_channels: 1, size: 28}\n"
                f"optimizer: {optimizer}\n")
        f.write(EVALUATOR.format(validation=args.validation, train_limit=args.train_limit, threads=args.threads,
                                 seed=seed, continuation="true" if continuation else "false"))
        if pruner:
            f.write(f"pruner: {pruner}\n")
        f.write(f"objective: {{metric: val_acc, direction: maximize}}\nbudget: {{evaluations: {evaluations}}}\n")
    store = os.path.join(workdir, f"{name}-{seed}.sieve")
    t0 = time.time()
    subprocess.run([sieve, "run", cfg, "--store", store, "--quiet"], check=True, capture_output=True)
    wall = time.time() - t0
    out = subprocess.run([sieve, "export", store, "--format", "csv"], check=True, capture_output=True,
                         text=True).stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    compute = sum(float(r["epochs_run"]) for r in rows if r.get("epochs_run") not in (None, ""))
    full = [r for r in rows if r["status"] == "ok" and float(r["fidelity"] or 1) >= 0.999]
    best = max(full, key=lambda r: float(r["val_acc"])) if full else None
    test_acc = float("nan")
    if best is not None and not args.no_test:
        # The incumbent trained again, as it was (1 epoch, the same seed and
        # schedule: a continued training equals this one), for its test accuracy.
        p = subprocess.run([sieve, "train", "--set", "space.C=8", "--set", "space.N=1", "--arch", best["genotype"],
                            "--epochs", "1", "--batch", "64", "--lr", "0.05", "--seed", str(seed),
                            "--validation", str(args.validation), "--train-limit", str(args.train_limit),
                            "--threads", str(args.threads), "-q"], check=True, capture_output=True, text=True)
        test_acc = json.loads(p.stdout.strip().splitlines()[-1])["test_acc"]
    return {"compute": compute, "val": float(best["val_acc"]) if best else float("nan"), "test": test_acc,
            "trials": len(rows), "pruned": sum(r["status"] == "pruned" for r in rows), "wall": wall}


def part_nb201(sieve, seeds, args):
    print("\n== NB201 (C=8, N=1) on Fashion-MNIST: %s training examples per epoch, %d validation, %d thread(s)"
          % (args.train_limit or "all", args.validation, args.threads))
    print("%-15s %4s %7s %7s %15s %9s %9s %7s" % ("method", "seed", "trials", "pruned", "compute (ep.)",
                                                   "val_acc", "test_acc", "wall s"))
    results = {m: [] for m in args.methods}
    with tempfile.TemporaryDirectory(prefix="sieve-bench-nb201-") as workdir:
        for seed in seeds:
            for m in args.methods:
                r = run_method(sieve, workdir, m, seed, args)
                results[m].append(r)
                print("%-15s %4d %7d %7d %15.3f %9.4f %9.4f %7.0f" % (m, seed, r["trials"], r["pruned"],
                                                                      r["compute"], r["val"], r["test"], r["wall"]),
                      flush=True)
    mean = lambda xs: sum(xs) / len(xs)
    print("\nmeans over %d seed(s):" % len(seeds))
    for m, rs in results.items():
        print("%-15s compute %.3f epochs, incumbent val_acc %.4f, test_acc %.4f" % (
            m, mean([r["compute"] for r in rs]), mean([r["val"] for r in rs]), mean([r["test"] for r in rs])))
    if "hyperband" in results and "hyperband+cont" in results:
        a, b = mean([r["compute"] for r in results["hyperband"]]), mean([r["compute"] for r in results["hyperband+cont"]])
        print("continuation cuts Hyperband's compute by %.1f%% (target >= 25%%); incumbent val_acc %.4f vs %.4f" % (
            100 * (1 - b / a), mean([r["val"] for r in results["hyperband+cont"]]),
            mean([r["val"] for r in results["hyperband"]])))
    if "random" in results and "asha+median" in results:
        a, b = mean([r["compute"] for r in results["random"]]), mean([r["compute"] for r in results["asha+median"]])
        print("ASHA+median uses %.2f of random search's compute (target <= 0.5); val_acc %.4f vs %.4f" % (
            b / a, mean([r["val"] for r in results["asha+median"]]), mean([r["val"] for r in results["random"]])))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sieve", default=os.path.join(ROOT, "build", "src", "cli", "sieve"))
    parser.add_argument("--seeds", default="1,2,3,4,5")
    parser.add_argument("--pruner-seeds", default="1,2,3")
    parser.add_argument("--train-limit", type=int, default=0, help="training examples per epoch (0: all 55,000)")
    parser.add_argument("--validation", type=int, default=5000)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--no-test", action="store_true", help="skip the incumbents' test accuracy")
    parser.add_argument("--skip-nb201", action="store_true")
    args = parser.parse_args()
    args.methods = args.methods.split(",")
    differ = part_pruners(args.sieve, [int(s) for s in args.pruner_seeds.split(",")])
    if not args.skip_nb201:
        part_nb201(args.sieve, [int(s) for s in args.seeds.split(",")], args)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
