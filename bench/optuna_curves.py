#!/usr/bin/env python3
"""Runs the Optuna peer (../shared/peers/optuna_nb201.py) unchanged and keeps
every study it creates, so that the comparison gets per-seed curves (for
bootstrap intervals) and not only the peer's means.

  /usr/bin/python3 bench/optuna_curves.py PEER.py [peer arguments...]

Prints one JSON object: the peer's own final line ("peer") and, per seed,
the --report value of the best-by---metric trial after each trial
("curves"), counting every trial as the peer does, plus how many of the
trials were distinct architectures ("distinct").
"""
import contextlib
import csv
import importlib.util
import io
import json
import sys

import optuna


def main():
    peer_path, args = sys.argv[1], sys.argv[2:]
    spec = importlib.util.spec_from_file_location("optuna_peer", peer_path)
    peer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peer)
    studies = []
    create = optuna.create_study

    def recording_create_study(*a, **k):
        study = create(*a, **k)
        studies.append(study)
        return study

    peer.optuna.create_study = recording_create_study
    sys.argv = [peer_path] + args
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        peer.main()
    line = out.getvalue().strip().splitlines()[-1]
    peer_result = json.loads(line)
    table = {}
    with open(args[args.index("--table") + 1]) as f:
        for row in csv.DictReader(f):
            table[row["arch_str"]] = (float(row[peer_result["metric"]]), float(row[peer_result["report"]]))
    curves, distinct = [], []
    for study in studies:
        best, curve, seen = (-1.0, 0.0), [], set()
        for trial in study.trials:
            ops = [trial.params[f"edge_{i}{j}"] for i, j in peer.EDGES]
            arch = peer.arch_str(ops)
            seen.add(arch)
            val, test = table[arch]
            if val > best[0]:
                best = (val, test)
            curve.append(best[1])
        curves.append(curve)
        distinct.append(len(seen))
    print(json.dumps({"peer": peer_result, "curves": curves, "distinct": distinct}))


if __name__ == "__main__":
    main()
