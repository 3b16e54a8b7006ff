#!/usr/bin/env python3
"""The dedupe stage on the NAS-Bench-201 table (configs/nb201-dedupe.yaml):
for regularized evolution and random search (unique genotypes), several seeds,
300 evaluations each, with and without `pipeline: [dedupe]`.

Prints, per optimizer: the share of proposals answered from the cache; whether
every evaluation went to a distinct network (distinct functional hashes among
the evaluated trials == evaluations, from the store's own hashes); and, for the
same search without dedupe, how many distinct networks its 300 evaluations
reached (functional hashes by `sieve hash`) and the CIFAR-10 test accuracy of
the best-by-validation trial of both.

  /usr/bin/python3 bench/dedupe_nb201.py --build build --seeds 10
"""
import argparse
import csv
import io
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(ROOT, "configs", "nb201-dedupe.yaml")
OPTIMIZERS = {
    "evolution": "{plugin: evolution, population: 20, sample_size: 5}",
    "random": "{plugin: random, unique: true}",
}


def run(sieve, *args):
    p = subprocess.run([sieve, *args], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"sieve {' '.join(args)} failed ({p.returncode}):\n{p.stderr}")
    return p.stdout


def rows(sieve, store):
    return list(csv.DictReader(io.StringIO(run(sieve, "export", store))))


def best_test(trials):
    ok = [r for r in trials if r["status"] == "ok"]
    best = max(ok, key=lambda r: (float(r["cifar10_valid_acc"]), -int(r["number"])))
    return float(best["cifar10_test_acc"])


def functional_hashes(sieve, genotypes):
    out = subprocess.run([sieve, "hash", "--space", "nb201", "--kind", "functional", "-"], input="\n".join(genotypes),
                         capture_output=True, text=True, check=True).stdout
    return [line.split("\t")[2] for line in out.splitlines()]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--evaluations", type=int, default=300)
    args = ap.parse_args()
    sieve = os.path.join(args.build, "src", "cli", "sieve")
    print(f"NAS-Bench-201 table, {args.evaluations} evaluations, seeds 0..{args.seeds - 1}, "
          f"functional hash ({CONFIG})")
    print(f"{'optimizer':<10} {'proposals':>9} {'cached':>7} {'cache share':>18} {'distinct==evals':>15} "
          f"{'no dedupe: distinct':>20} {'test acc dedupe':>15} {'test acc plain':>14}")
    with tempfile.TemporaryDirectory(prefix="sieve-dedupe-bench-") as tmp:
        for name, optimizer in OPTIMIZERS.items():
            shares, proposals, cached, distinct_plain, acc_dedupe, acc_plain = [], [], [], [], [], []
            all_distinct = True
            for seed in range(args.seeds):
                common = ["--set", f"seed={seed}", "--set", f"optimizer={optimizer}",
                          "--set", f"budget.evaluations={args.evaluations}", "-q"]
                store = os.path.join(tmp, f"{name}-{seed}.sieve")
                run(sieve, "run", CONFIG, "--store", store, *common)
                s = next(csv.DictReader(io.StringIO(run(sieve, "export", store, "--summary"))))
                assert int(s["evaluated"]) == args.evaluations, s
                all_distinct &= s["distinct_evaluated"] == s["evaluated"]
                proposals.append(int(s["trials"]))
                cached.append(int(s["cached"]))
                shares.append(float(s["cache_fraction"]))
                acc_dedupe.append(best_test(rows(sieve, store)))

                plain = os.path.join(tmp, f"{name}-{seed}-plain.sieve")
                run(sieve, "run", CONFIG, "--store", plain, "--set", "pipeline=[]", *common)
                trials = rows(sieve, plain)
                distinct_plain.append(len(set(functional_hashes(sieve, [r["genotype"] for r in trials]))))
                acc_plain.append(best_test(trials))
            print(f"{name:<10} {statistics.mean(proposals):9.1f} {statistics.mean(cached):7.1f} "
                  f"{statistics.mean(shares) * 100:6.1f}% [{min(shares) * 100:4.1f}-{max(shares) * 100:4.1f}%] "
                  f"{'yes' if all_distinct else 'NO':>15} {statistics.mean(distinct_plain):11.1f} of {args.evaluations:<5} "
                  f"{statistics.mean(acc_dedupe):15.2f} {statistics.mean(acc_plain):14.2f}")


if __name__ == "__main__":
    main()
