#!/usr/bin/env python3
"""A training-like program for sieve's `command` evaluator that reports
intermediate values, so that a pruner can stop it early.

sieve writes one JSON object on stdin ({"trial", "genotype", "fidelity",
"params"}); this program "trains" for --epochs epochs (the fidelity when
sieve gives one) and after each epoch prints a progress line

    {"intermediate": {"step": EPOCH, "value": ACCURACY, "fidelity": EPOCH}}

then, at the end, its metrics as the last line: {"val_acc": ..., "epochs": ...}.
When sieve's pruner decides to stop the trial it sends SIGTERM: this program
lets Python's default handler end it; one that keeps checkpoints could catch
it and save first.

The learning curve is synthetic and deterministic: accuracy after e epochs
is a_max * (1 - exp(-e / tau)), with a_max and tau set by the parameters
(lr near 0.1 and a large width train best).  --sleep slows each epoch down,
as a real training would be.
"""
import argparse
import json
import math
import sys
import time


def curve(params, epoch):
    lr = float(params.get("lr", 0.1))
    width = float(params.get("width", 16))
    a_max = 0.95 - 0.25 * abs(math.log10(lr) + 1.0) - 2.0 / width
    tau = 1.0 + 3.0 * abs(math.log10(lr) + 1.0)
    return a_max * (1.0 - math.exp(-epoch / tau))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=9)
    parser.add_argument("--sleep", type=float, default=0.0, help="seconds per epoch")
    args = parser.parse_args()
    request = json.load(sys.stdin)
    epochs = int(request["fidelity"]) if request.get("fidelity") is not None else args.epochs
    acc = 0.0
    for epoch in range(1, epochs + 1):
        time.sleep(args.sleep)
        acc = curve(request["params"], epoch)
        print(json.dumps({"intermediate": {"step": epoch, "value": acc, "fidelity": epoch}}), flush=True)
    print(json.dumps({"val_acc": acc, "epochs": epochs}), flush=True)


if __name__ == "__main__":
    main()
