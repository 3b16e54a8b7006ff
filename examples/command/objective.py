#!/usr/bin/env python3
"""An objective for sieve's `command` evaluator: a noisy Rosenbrock function.

sieve (evaluator `command` with `stdin: json`) writes one JSON object on
stdin:

    {"trial": 3, "genotype": "x1=0.5,...", "fidelity": null,
     "params": {"x1": 0.5, "x2": -1.25, "x3": 2.0, "x4": 0.75}}

and reads the LAST line this program prints on stdout, a JSON object whose
numbers are the trial's metrics.  Anything may come before it (progress,
logs); stderr is free-form and its last line is quoted if the program fails.

The function is Rosenbrock's (Rosenbrock 1960) in d dimensions,
f(x) = sum_{i<d} 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2, minimum 0 at
(1, ..., 1), plus Gaussian noise of relative size --noise (default 1%),
seeded by the trial number so that a rerun of a trial gives the same value.
Only the standard library is used.
"""
import argparse
import json
import math
import random
import sys


def rosenbrock(x):
    return sum(100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2 for i in range(len(x) - 1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--noise", type=float, default=0.01, help="relative standard deviation of the noise")
    args = parser.parse_args()

    request = json.load(sys.stdin)
    params = request["params"]
    names = sorted((k for k in params if k.startswith("x") and k[1:].isdigit()), key=lambda k: int(k[1:]))
    if len(names) < 2:
        # A failed trial reported on purpose: sieve records the reason and goes on.
        print(json.dumps({"status": "failed", "reason": "need parameters x1..xd with d >= 2, got %s" % sorted(params)}))
        return 0
    x = [float(params[k]) for k in names]

    value = rosenbrock(x)
    print("trial %s: f(%s) = %.6g" % (request["trial"], ", ".join("%.4g" % v for v in x), value), file=sys.stderr)
    rng = random.Random(int(request["trial"]))
    noisy = value * (1.0 + args.noise * rng.gauss(0.0, 1.0))
    distance = math.sqrt(sum((v - 1.0) ** 2 for v in x))
    print(json.dumps({"value": noisy, "true_value": value, "distance_to_optimum": distance}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
