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
continuation), each with a budget of 8 epochs of training (stated in
compute: a study starts trials while the sum of its epochs_run is below 8;
it is extended with --resume until it has spent them).  Hyperband and
BOHB share eta 2 and fidelities 1/8 .. 1 epoch (see ETA); ASHA has its own
setting, eta 4 from 1/4 epoch without continuation (see ASHA_ETA).
For each: the incumbent (best val_acc at full fidelity) is trained again by
`sieve train` with the same settings and schedule (exact: continuation
equals an uninterrupted training) for its test accuracy.  Target (a):
Hyperband's schedule within the budget (the same evaluations at the same
fidelities) costs >= 25% less with continuation, at equal results; target
(b): ASHA's incumbent after half the budget is at least random search's
after the whole.  --seeds, --jobs, --train-limit, --validation and
--threads scale it; --out / --add keep and merge runs.  --full-epochs
sets the full fidelity (random search's training, and the top rung) and
--asha-eta / --asha-min ASHA's rungs (--asha-sampler tpe: its new
configurations from BOHB's model of the rung results, model: highest_rung;
tpe-reached: from the TPE of every configuration ranked by the rung it
reached, asha's default model): with a full fidelity of 2 epochs
and ASHA at eta 8 from 1/4 epoch, ASHA screens twice the configurations
random search trains within half its budget (README, "Training-aware
search").  --screen P1,P2,.. puts sieve's zero-cost proxy screen (the mean
rank of the proxies, the best --screen-keep of each round of 16 proposals
trained) before ASHA's studies and before those of the method random+screen
(random search behind the same screen, the control); the proxies' compute
is counted, in epochs, with the training's.

  /usr/bin/python3 bench/training_aware.py --sieve build/src/cli/sieve [--seeds 1,2,3,4,5] [--jobs 2] [--skip-nb201]
"""
import argparse
import concurrent.futures
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

# The multi-fidelity setting every method shares: fidelity in epochs from
# 1/8 to the full 1 epoch, eta = 2, i.e. successive halving as Jamieson &
# Talwalkar (AISTATS 2016) and Karnin, Koren & Somekh (ICML 2013) define
# it: keep the better half, double the training.  Hyperband (Li et al.,
# JMLR 2018) then has s_max = 3 and its brackets are 8@1/8 -> 4@1/4 ->
# 2@1/2 -> 1@1 (4 epochs), 6@1/4 -> 3@1/2 -> 1@1 (4 epochs), 4@1/2 -> 2@1
# (4 epochs), 4@1 (4 epochs).  eta = 3 (Hyperband's and BOHB's default) or
# 4 (ASHA's experiments) climb fewer rungs inside 8 epochs, and a promoted
# configuration's lower rungs are all continuation can save: per bracket of
# s + 1 rungs about s / (eta (s + 1)) of its compute.
ETA = 2
MIN_EPOCHS = 0.125
BUDGET = 8.0  # epochs of training (the sum of epochs_run) each method may start trials within

EVALUATOR = """\
evaluator:
  plugin: train
  dataset: fashion-mnist
  validation: {validation}
  train_limit: {train_limit}
  test: false
  epochs: {epochs:g}
  min_epochs: {min_epochs}
  batch_size: 64
  lr: 0.05
  threads: {threads}
  seed: {seed}
  continuation: {continuation}
  state_dir: {state_dir}
  report_every: {report_every}
"""

# ASHA's own setting: eta 4 (the reduction factor of Li et al.'s experiments)
# from 1/4 epoch, so rungs of 1/4 and 1 epoch, each training with its own
# schedule (no continuation).  Measured on the earlier runs of this bench: a
# configuration's validation accuracy after 1/8 epoch ranks the full epoch's
# no better than chance (Spearman 0.04 over 40 configurations), after 1/4
# epoch of its own schedule 0.76 (25), and after 1/8, 1/4 or 1/2 of the full
# schedule cut short, as continuation trains them, 0.07 to 0.22: rungs cut
# from the full schedule rank badly here, so ASHA would promote by chance.
ASHA_ETA = 4
# --asha-sampler: asha's options for each.
ASHA_SAMPLERS = {"random": "", "tpe": ", sampler: tpe, model: highest_rung", "tpe-reached": ", sampler: tpe"}
ASHA_MIN = 0.25
# Median pruning with MedianPruner's defaults (5 startup trials, 1 trial
# per step), judged on the validation accuracy the train evaluator reports
# every 1/8 epoch (report_every), from 3/4 of the full epoch on
# (warmup_steps): ASHA decides at the rung of 1/4 epoch, and the pruner
# stops a finalist whose curve falls below the median of the earlier
# finalists' once the cosine schedule's rate has fallen to 15% of its
# peak.  Earlier (at 1/4 and 1/2 epoch, while the rate is high) a
# finalist's validation accuracy swings between 0.25 and 0.7 from one
# report to the next and ranks the finalists by chance (the same Spearman
# 0.07 to 0.22 as above): a warm-up of 1/4 epoch pruned 4 of the 5 or 6
# finalists of each seed's 8 epochs.  With no warm-up at all (Optuna's
# default) the pruner also judges every rung's own last value against
# the finalists' at that step.
PRUNE_FROM = 0.75


def pruner_for(args):
    return "{kind: median, startup_trials: 5, warmup_steps: %d}" % math.ceil(
        steps_per_epoch(args) * args.full_epochs * PRUNE_FROM)


def methods(args):
    """name: (optimizer, continuation, pruner).  Fidelities are in epochs; the full one is
    --full-epochs (1 unless asked), ASHA's rungs --asha-min * --asha-eta^k up to it."""
    hb = "{plugin: %%s, eta: %g, min_fidelity: %g}" % (ETA, MIN_EPOCHS)
    return {
        "random": ("{plugin: random}", False, None),
        "hyperband": (hb % "hyperband", False, None),
        "hyperband+cont": (hb % "hyperband", True, None),
        "asha+median": ("{plugin: asha, eta: %g, min_fidelity: %g%s}" % (
            args.asha_eta, args.asha_min, ASHA_SAMPLERS[args.asha_sampler]), False, pruner_for),
        "bohb+cont": (hb % "bohb", True, None),
        "random+screen": ("{plugin: random}", False, None),
    }


SCREEN_METHODS = ("asha+median", "random+screen")  # the methods --screen puts the screen before


def screened(name, args):
    """Whether a method's study runs the zero-cost proxy screen (--screen)."""
    return bool(args.screen) and name in SCREEN_METHODS


def screen_stage(args):
    return ("pipeline:\n  - screen: {proxies: [%s], keep_fraction: %g, batch: 16, dataset: fashion-mnist}\n"
            % (", ".join(args.screen.split(",")), args.screen_keep))


def screen_seconds(sieve, genotypes, seed, args, cache):
    """Seconds the screen's proxies take on each genotype, measured by `sieve proxies` with the stage's
    settings (its batch of 64 Fashion-MNIST examples, the study's seed, --threads): the compute a screened
    or screened-in trial cost before any training.  cache: genotype -> seconds, filled in."""
    unscored = sorted({g for g in genotypes if g not in cache})
    if not unscored:
        return cache
    p = subprocess.run([sieve, "proxies", "--space", "nb201", "--set", "space.C=8", "--set", "space.N=1",
                        "--set", "space.in_channels=1", "--set", "space.size=28", "--dataset", "fashion-mnist",
                        "--seed", str(seed), "--threads", str(args.threads), "--proxies", args.screen, "-"],
                       input="\n".join(unscored) + "\n", check=True, capture_output=True, text=True)
    for line in p.stdout.splitlines():
        d = json.loads(line)
        cache[d["arch"]] = sum(d["time_ms"].values()) / 1000.0
    return cache


METHOD_NAMES = ["random", "hyperband", "hyperband+cont", "asha+median", "bohb+cont"]  # and random+screen, asked
# A first guess of the evaluations 8 epochs take; the study is extended
# (--resume with a larger budget) until they are spent.
FIRST_GUESS = {"random": 8, "hyperband": 25, "hyperband+cont": 31, "asha+median": 22, "bohb+cont": 31,
               "random+screen": 8}


def steps_per_epoch(args):
    """What sieve_batcher_batches_per_epoch gives: whole batches of 64."""
    n = 60000 - args.validation
    if args.train_limit:
        n = min(n, args.train_limit)
    return n // 64


def budget_of(name, args):
    """Epochs a method's study may start trials within: --budget, or --asha-budget for ASHA (target (b)
    reads ASHA after half of --budget only, so --asha-budget 4 saves the rest of its compute)."""
    return args.asha_budget if name == "asha+median" and args.asha_budget else args.budget


def cost(row):
    """A trial's compute in epochs: its training, and its share of the screen (row["screen_epochs"], set by
    run_method for a study with the screen: the proxies' seconds over the study's seconds per epoch)."""
    return float(row["epochs_run"] or 0) + row.get("screen_epochs", 0.0)


def within(rows, budget):
    """The trials a study runs with `budget` epochs: in order, each one
    started while less than the budget had been spent (so the last may end
    a little past it); and the compute they used."""
    out, spent = [], 0.0
    for r in rows:
        # Past the budget, only the rest of the last screen round: its proposals screened out after the
        # last trial (numbered when asked, their proxies run with the round's).
        if spent >= budget - 1e-9 and not (out and r["status"] == "screened"):
            break
        out.append(r)
        spent += cost(r)
    return out, spent


def at_full(row, args):
    """Whether a trial ran at the full fidelity (a study without fidelities has none: every trial is full)."""
    return not row["fidelity"] or float(row["fidelity"]) >= args.full_epochs - 1e-6


def incumbent(rows, args):
    """The best validation accuracy among the trials finished at the full fidelity (never a test figure)."""
    full = [r for r in rows if r["status"] == "ok" and at_full(r, args)]
    return max(full, key=lambda r: float(r["val_acc"])) if full else None


def export(sieve, store):
    out = subprocess.run([sieve, "export", store, "--format", "csv"], check=True, capture_output=True,
                         text=True).stdout
    return sorted(csv.DictReader(io.StringIO(out)), key=lambda r: int(r["number"]))


def add_screen_cost(sieve, rows, seed, args, cache):
    """Sets each scored trial's screen_epochs: the proxies' seconds on its genotype over the study's
    training seconds per epoch (its trained trials' train_s over their epochs_run, the same machine and
    threads).  A trial the screen never scored (a promotion) has none."""
    trained = [r for r in rows if r.get("train_s") and r.get("epochs_run")]
    per_epoch = sum(float(r["train_s"]) for r in trained) / max(sum(float(r["epochs_run"]) for r in trained), 1e-9)
    scored = [r for r in rows if r.get("screen_score")]
    screen_seconds(sieve, [r["genotype"] for r in scored], seed, args, cache)
    for r in scored:
        r["screen_epochs"] = cache[r["genotype"]] / per_epoch if trained else 0.0
    return sum(cache[r["genotype"]] for r in scored), per_epoch


def run_method(sieve, workdir, name, seed, args):
    optimizer, continuation, pruner = methods(args)[name]
    cfg = os.path.join(workdir, f"{name}-{seed}.yaml")
    report_every = math.ceil(steps_per_epoch(args) * MIN_EPOCHS) if pruner else 0
    screen = screened(name, args)
    with open(cfg, "w") as f:
        f.write(f"name: {name}\nseed: {seed}\n"
                "space: {plugin: nb201, C: 8, N: 1, in_channels: 1, size: 28}\n"
                f"optimizer: {optimizer}\n")
        f.write(EVALUATOR.format(epochs=args.full_epochs, validation=args.validation, train_limit=args.train_limit, threads=args.threads,
                                 seed=seed, continuation="true" if continuation else "false",
                                 min_epochs=min(MIN_EPOCHS, args.asha_min), state_dir=os.path.join(workdir, f"{name}-{seed}.states"),
                                 report_every=report_every))
        if pruner:
            f.write(f"pruner: {pruner(args)}\n")
        if screen:
            f.write(screen_stage(args))
        f.write("objective: {metric: val_acc, direction: maximize}\nbudget: {evaluations: 1}\n")
    store = os.path.join(workdir, f"{name}-{seed}.sieve")
    t0 = time.time()
    budget = budget_of(name, args)
    evaluations, rows, resume = max(1, int(FIRST_GUESS[name] * budget / BUDGET / args.full_epochs)), [], []
    screen_cache, screen_s, per_epoch = {}, 0.0, 0.0
    while True:
        subprocess.run([sieve, "run", cfg, "--store", store, "--quiet", "--set", f"budget.evaluations={evaluations}",
                        *resume], check=True, capture_output=True)
        rows = export(sieve, store)
        if screen:
            screen_s, per_epoch = add_screen_cost(sieve, rows, seed, args, screen_cache)
        spent = sum(cost(r) for r in rows)
        if spent >= budget - 1e-9:
            break
        # Not spent yet: extend the study (a larger budget continues it, continuation states kept in state_dir).
        n_evaluated = max(1, sum(r["status"] != "screened" for r in rows))
        evaluations += max(1, math.ceil((budget - spent) / max(spent / n_evaluated, 1e-3)))
        resume = ["--resume"]
    wall = time.time() - t0
    kept, compute = within(rows, budget)
    half, half_compute = within(rows, args.budget / 2)
    best, best_half = incumbent(kept, args), incumbent(half, args)
    evaluated = [r for r in kept if r["status"] != "screened"]
    return {"method": name, "seed": seed, "compute": compute, "trials": len(evaluated),
            "screened": len(kept) - len(evaluated),
            "screen_compute": sum(r.get("screen_epochs", 0.0) for r in kept), "screen_s_per_epoch": per_epoch,
            "half_screened": sum(r["status"] == "screened" for r in half),
            "half_screen_compute": sum(r.get("screen_epochs", 0.0) for r in half),
            "pruned": sum(r["status"] == "pruned" for r in kept), "full": sum(at_full(r, args) and r["status"] == "ok" for r in kept),
            "genotype": best["genotype"] if best else None, "val": float(best["val_acc"]) if best else float("nan"),
            "half_compute": half_compute, "half_genotype": best_half["genotype"] if best_half else None,
            "half_val": float(best_half["val_acc"]) if best_half else float("nan"),
            "prefix": [cost(r) for r in kept], "prefix_genotypes":
            [(r["genotype"], r["status"], float(r["fidelity"] or 1), float(r["val_acc"] or "nan")) for r in kept],
            "wall": wall}


def test_accuracy(sieve, genotype, seed, args):
    """The incumbent trained again as it was trained (--full-epochs, the same seed, data and schedule:
    a continued training equals this one bit for bit) for its test accuracy."""
    p = subprocess.run([sieve, "train", "--set", "space.C=8", "--set", "space.N=1", "--arch", genotype,
                        "--epochs", "%g" % args.full_epochs, "--batch", "64", "--lr", "0.05", "--seed", str(seed),
                        "--validation", str(args.validation), "--train-limit", str(args.train_limit),
                        "--threads", str(args.threads), "-q"], check=True, capture_output=True, text=True)
    out = json.loads(p.stdout.strip().splitlines()[-1])
    return out["val_acc"], out["test_acc"]


def mean_sd(xs):
    xs = [x for x in xs if not math.isnan(x)]
    if not xs:
        return float("nan"), float("nan")
    m = sum(xs) / len(xs)
    return m, (math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0)


def part_nb201(sieve, seeds, args):
    print("\n== NB201 (C=8, N=1) on Fashion-MNIST: %s training examples per epoch (%d steps of 64), %d validation, "
          "%d thread(s); full fidelity %g epoch(s); Hyperband and BOHB eta %g, fidelity from %g epoch; ASHA eta %g, "
          "fidelity from %g epoch, %s sampler, median pruning from %g of the full training; each method starts trials while it "
          "has spent < %g epochs"
          % (args.train_limit or "all", steps_per_epoch(args), args.validation, args.threads, args.full_epochs, ETA,
             MIN_EPOCHS, args.asha_eta, args.asha_min, args.asha_sampler, PRUNE_FROM, args.budget), flush=True)
    if args.screen:
        print("screen (ASHA's and random+screen's studies): proxies %s, the best %g of each round of 16 proposals "
              "trained; its compute counted in epochs: the proxies' seconds (sieve proxies, --threads) over the "
              "study's training seconds per epoch" % (args.screen, args.screen_keep), flush=True)
    tasks = [(m, s) for s in seeds for m in args.methods]
    results = []
    with tempfile.TemporaryDirectory(prefix="sieve-bench-nb201-") as workdir, \
            concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for r in pool.map(lambda t: run_method(sieve, workdir, t[0], t[1], args), tasks):
            results.append(r)
            print("  %-15s seed %d: %3d trials (%2d pruned, %d at full fidelity%s), compute %.3f epochs, incumbent "
                  "val_acc %.4f, %.0f s" % (r["method"], r["seed"], r["trials"], r["pruned"], r["full"],
                                            ", %d screened out, screen %.3f epochs" % (r["screened"], r["screen_compute"])
                                            if r.get("screened") else "",
                                            r["compute"], r["val"], r["wall"]), flush=True)
    # Test accuracy of every incumbent, each (genotype, seed) trained once.
    wanted = {(g, r["seed"]) for r in results
              for g in (r["genotype"], r["half_genotype"] if r["method"] in ("asha+median", "random+screen") else None)
              if g}
    tested = {}
    if not args.no_test:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            for key, acc in zip(wanted, pool.map(lambda k: test_accuracy(sieve, k[0], k[1], args), wanted)):
                tested[key] = acc
    for r in results:
        r["test"] = tested.get((r["genotype"], r["seed"]), (None, float("nan")))[1]
        r["half_test"] = tested.get((r["half_genotype"], r["seed"]), (None, float("nan")))[1]
        retrained_val = tested.get((r["genotype"], r["seed"]), (None, None))[0]
        if retrained_val is not None and abs(retrained_val - r["val"]) > 1e-9:
            print("  note: %s seed %d: the retrained incumbent's val_acc %.4f differs from the study's %.4f"
                  % (r["method"], r["seed"], retrained_val, r["val"]))
    by = {m: [r for r in results if r["method"] == m] for m in args.methods}
    # Hyperband with continuation over Hyperband's own schedule: the trials Hyperband ran within the budget
    # (the same brackets, the same number of evaluations at each fidelity), and what they cost with continuation.
    if "hyperband" in by and "hyperband+cont" in by:
        for a in by["hyperband"]:
            b = next(x for x in by["hyperband+cont"] if x["seed"] == a["seed"])
            n = a["trials"]
            b["schedule_same"] = [x[2] for x in a["prefix_genotypes"]] == [x[2] for x in b["prefix_genotypes"][:n]]
            b["schedule_compute"] = sum(b["prefix"][:n])
            sched = [x for x in b["prefix_genotypes"][:n] if x[1] == "ok" and x[2] >= args.full_epochs - 1e-6]
            g = max(sched, key=lambda x: x[3]) if sched else None
            b["schedule_genotype"], b["schedule_val"] = (g[0], g[3]) if g else (None, float("nan"))
            key = (b["schedule_genotype"], b["seed"])
            if b["schedule_genotype"] and key not in tested and not args.no_test:
                tested[key] = test_accuracy(sieve, key[0], key[1], args)
            b["schedule_test"] = tested.get(key, (None, float("nan")))[1]
    old = []
    for path in args.add or []:
        with open(path) as f:
            run = json.load(f)
        # Both samplers' studies are "asha+median": merged, one would replace the other unseen.
        other = run.get("args", {}).get("asha_sampler", "random")
        if other != args.asha_sampler and any(r["method"] == "asha+median" for r in run["results"]):
            sys.exit("training_aware.py: %s holds ASHA with --asha-sampler %s, this run %s: merge runs of one sampler"
                     % (path, other, args.asha_sampler))
        # Runs from before --screen have no screen: "".
        theirs = (run.get("args", {}).get("screen") or "", run.get("args", {}).get("screen_keep", 0.25))
        ours = (args.screen or "", args.screen_keep)
        if (theirs[0] != ours[0] or (ours[0] and theirs[1] != ours[1])) and \
                any(r["method"] in SCREEN_METHODS for r in run["results"]):
            sys.exit("training_aware.py: %s holds studies with --screen %r (keep %g), this run %r (keep %g): merge "
                     "runs of one screen" % (path, theirs[0], theirs[1], ours[0], ours[1]))
        old += run["results"]
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=1)
    merged = {(r["method"], r["seed"]): r for r in old + results}  # a later run replaces an earlier one
    summarize(list(merged.values()), args.methods)


def summarize(results, methods):
    seeds = sorted({r["seed"] for r in results})
    by = {m: sorted([r for r in results if r["method"] == m], key=lambda r: r["seed"]) for m in methods}
    fmt = lambda xs, d=4: "%.*f ± %.*f" % (d, mean_sd(xs)[0], d, mean_sd(xs)[1])
    print("\nper method, mean ± sd over %d seed(s):" % len(seeds))
    print("%-15s %8s %8s %8s %18s %18s %18s" % ("method", "trials", "screened", "pruned", "compute (epochs)",
                                                "incumbent val_acc", "test_acc"))
    for m, rs in by.items():
        print("%-15s %8.1f %8.1f %8.1f %18s %18s %18s" % (m, mean_sd([r["trials"] for r in rs])[0],
                                                   mean_sd([r.get("screened", 0) for r in rs])[0],
                                                   mean_sd([r["pruned"] for r in rs])[0],
                                                   fmt([r["compute"] for r in rs], 3), fmt([r["val"] for r in rs]),
                                                   fmt([r["test"] for r in rs])))
    verdicts = []
    if "hyperband" in by and "hyperband+cont" in by:
        hb, hc = by["hyperband"], by["hyperband+cont"]
        a, b = mean_sd([r["compute"] for r in hb])[0], mean_sd([r["schedule_compute"] for r in hc])[0]
        cut = 100 * (1 - b / a)
        print("\n(a) Hyperband's schedule (%s evaluations, the same fidelities in the same order: %s) costs "
              "%s epochs without continuation, %s with it: continuation cuts the compute by %.1f%% (target >= 25%%)"
              % ("/".join(str(r["trials"]) for r in hb), all(r["schedule_same"] for r in hc),
                 fmt([r["compute"] for r in hb], 3), fmt([r["schedule_compute"] for r in hc], 3), cut))
        print("    its incumbent: test_acc %s without, %s with continuation (val_acc %s, %s); with the rest of the "
              "budget spent, %s" % (fmt([r["test"] for r in hb]), fmt([r["schedule_test"] for r in hc]),
                                    fmt([r["val"] for r in hb]), fmt([r["schedule_val"] for r in hc]),
                                    fmt([r["test"] for r in hc])))
        verdicts.append("(a) compute cut %.1f%%: %s" % (cut, "holds" if cut >= 25 else "does NOT hold"))
    if "random" in by and "asha+median" in by:
        ra, asha = by["random"], by["asha+median"]
        target = mean_sd([r["test"] for r in ra])[0]
        got = mean_sd([r["half_test"] for r in asha])[0]
        ratio = mean_sd([r["half_compute"] for r in asha])[0] / mean_sd([r["compute"] for r in ra])[0]
        wins = sum(x["half_test"] >= y["test"] for x, y in zip(asha, ra))
        print("(b) ASHA+median with half the budget (%s epochs, %.2f of random search's %s): incumbent test_acc %s "
              "(val_acc %s) against random search's %s (val_acc %s); at least random's on %d of %d seeds; with the "
              "whole budget, %s" % (fmt([r["half_compute"] for r in asha], 3), ratio,
                                    fmt([r["compute"] for r in ra], 3), fmt([r["half_test"] for r in asha]),
                                    fmt([r["half_val"] for r in asha]), fmt([r["test"] for r in ra]),
                                    fmt([r["val"] for r in ra]), wins, len(ra),
                                    fmt([r["test"] for r in asha]) if not ARGS.asha_budget else
                                    "not run (--asha-budget %g)" % ARGS.asha_budget))
        if any(r.get("half_screened") for r in asha):
            print("    ASHA's screen within half the budget: %s proposals screened out, the proxies' compute %s epochs "
                  "(counted in the compute above)" % (fmt([r["half_screened"] for r in asha], 1),
                                                      fmt([r["half_screen_compute"] for r in asha], 3)))
        if "random+screen" in by:
            rs = by["random+screen"]
            print("    random search with the same screen: test_acc %s with the whole budget (%s epochs), %s with half "
                  "of it (%s)" % (fmt([r["test"] for r in rs]), fmt([r["compute"] for r in rs], 3),
                                  fmt([r["half_test"] for r in rs]), fmt([r["half_compute"] for r in rs], 3)))
        verdicts.append("(b) ASHA%s at %.2f of the compute: mean test_acc %.4f vs %.4f: %s" % (
            " with the screen" if any(r.get("half_screened") for r in asha) else "",
            ratio, got, target, "holds" if got >= target and ratio <= 0.5 + 1e-9 else "does NOT hold"))
    for v in verdicts:
        print(v)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sieve", default=os.path.join(ROOT, "build", "src", "cli", "sieve"))
    parser.add_argument("--seeds", default="1,2,3,4,5")
    parser.add_argument("--pruner-seeds", default="1,2,3")
    parser.add_argument("--train-limit", type=int, default=0, help="training examples per epoch (0: all 55,000)")
    parser.add_argument("--validation", type=int, default=5000)
    parser.add_argument("--threads", type=int, default=1, help="threads per training (compute is counted in epochs)")
    parser.add_argument("--jobs", type=int, default=1, help="studies run at once (each a process of --threads)")
    parser.add_argument("--budget", type=float, default=BUDGET, help="epochs of training per method")
    parser.add_argument("--out", help="write every study's figures to this JSON file")
    parser.add_argument("--add", action="append", help="a JSON file of --out from other seeds, summarized with these")
    parser.add_argument("--methods", default=",".join(METHOD_NAMES))
    parser.add_argument("--full-epochs", type=float, default=1.0,
                        help="the full fidelity: epochs a configuration trains at the top rung, and random search's")
    parser.add_argument("--asha-eta", type=float, default=ASHA_ETA, help="ASHA's reduction factor")
    parser.add_argument("--asha-min", type=float, default=ASHA_MIN, help="ASHA's lowest rung, in epochs")
    parser.add_argument("--asha-sampler", choices=list(ASHA_SAMPLERS), default="random",
                        help="how ASHA draws new configurations: random (as random search), tpe (BOHB's model of "
                             "the highest rung with decisions + 1 results, a third of the draws random: the runs of "
                             "2026-11-26) or tpe-reached (the TPE of every configuration ranked by the rung it "
                             "reached, asha's default model)")
    parser.add_argument("--asha-budget", type=float, default=0,
                        help="epochs ASHA's studies run (0: --budget); target (b) reads them after --budget / 2")
    parser.add_argument("--screen", default="",
                        help="zero-cost proxies (comma-separated) of a screen stage in ASHA's studies and "
                             "random+screen's: sieve's sieve before training (its compute counted)")
    parser.add_argument("--screen-keep", type=float, default=0.25, help="the screen's keep_fraction")
    parser.add_argument("--no-test", action="store_true", help="skip the incumbents' test accuracy")
    parser.add_argument("--skip-nb201", action="store_true")
    args = parser.parse_args()
    global ARGS
    ARGS = args
    args.methods = args.methods.split(",")
    if "random+screen" in args.methods and not args.screen:
        parser.error("random+screen needs --screen")
    differ = part_pruners(args.sieve, [int(s) for s in args.pruner_seeds.split(",") if s])
    if not args.skip_nb201:
        part_nb201(args.sieve, [int(s) for s in args.seeds.split(",") if s], args)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
