#!/usr/bin/env python3
"""Optuna's TPE on the standard test functions, for the comparison with
sieve's function evaluator (same definitions and known minima as
plugins/evaluators/function/function.c, after Surjanovic & Bingham's
Virtual Library of Simulation Experiments).

  /usr/bin/python3 bench/optuna_functions.py FUNCTION TRIALS SEEDS

Prints one JSON object: per seed, the regret of the best value after each
trial, and the median sampler time per trial in ms.
"""
import json
import math
import sys
import time

import optuna

HARTMANN_A = [[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14], [3, 3.5, 1.7, 10, 17, 8],
              [17, 8, 0.05, 10, 0.1, 14]]
HARTMANN_P = [[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
              [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]]
HARTMANN_ALPHA = [1.0, 1.2, 3.0, 3.2]


def branin(x):
    b, c, t = 5.1 / (4 * math.pi ** 2), 5 / math.pi, 1 / (8 * math.pi)
    return (x[1] - b * x[0] ** 2 + c * x[0] - 6) ** 2 + 10 * (1 - t) * math.cos(x[0]) + 10


def hartmann6(x):
    return -sum(a * math.exp(-sum(HARTMANN_A[i][j] * (x[j] - HARTMANN_P[i][j] * 1e-4) ** 2 for j in range(6)))
                for i, a in enumerate(HARTMANN_ALPHA))


def rosenbrock(x):
    return sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (x[i] - 1) ** 2 for i in range(len(x) - 1))


FUNCTIONS = {  # function, bounds, known minimum
    "branin": (branin, [(-5, 10), (0, 15)], 5 / (4 * math.pi)),
    "hartmann6": (hartmann6, [(0, 1)] * 6, -3.32236801141551),
    "rosenbrock": (rosenbrock, [(-5, 10)] * 4, 0.0),
}


def main():
    name, trials, seeds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    fn, bounds, minimum = FUNCTIONS[name]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    curves, ms = [], []
    for seed in range(seeds):
        study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed))
        best, curve, spent = math.inf, [], 0.0
        for _ in range(trials):
            t0 = time.perf_counter()
            trial = study.ask()
            x = [trial.suggest_float(f"x{i + 1}", lo, hi) for i, (lo, hi) in enumerate(bounds)]
            spent += time.perf_counter() - t0
            value = fn(x)
            t0 = time.perf_counter()
            study.tell(trial, value)
            spent += time.perf_counter() - t0
            best = min(best, value)
            curve.append(best - minimum)
        curves.append(curve)
        ms.append(spent * 1e3 / trials)
    ms.sort()
    print(json.dumps({"function": name, "optuna": optuna.__version__, "curves": curves, "median_ms_per_trial": ms[len(ms) // 2]}))


if __name__ == "__main__":
    main()
