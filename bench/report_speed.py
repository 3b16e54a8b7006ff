#!/usr/bin/env python3
"""How long `sieve report` takes on a large study, and how big the page is,
beside optuna.visualization drawing the same trials (Debian's
python3-optuna and python3-plotly), measured in the same run.

The study: --trials uniform random NAS-Bench-201 cells scored by the
published table (accuracy and latency: two objectives), written through
sieve's store API by BUILD/bench/report-store in one transaction (a `sieve
run` of as many table lookups commits each trial and takes most of an hour
on a busy 2-core machine); kept in BUILD/bench-report-N.sieve and reused.  The peer gets the same
trials (the six decisions as categorical parameters, the same objective)
added to an in-memory Optuna study, and draws what sieve's page draws that
Optuna has: the optimization history, parallel coordinates and the slice
plot, written as one self-contained HTML file (plotly.js inlined once), as
sieve's page is self-contained.  Optuna's parameter importances need
scikit-learn's random forest (fANOVA); they are timed only where it is
installed.

    /usr/bin/python3 bench/report_speed.py --build build [--trials 100000] [--repeat 3]
"""
import argparse
import csv
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time


def sieve(build, *args, **kw):
    return subprocess.run([os.path.join(build, "src", "cli", "sieve"), *args], check=True, capture_output=True,
                          text=True, **kw)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--trials", type=int, default=100000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    store = os.path.abspath(os.path.join(a.build, f"bench-report-{a.trials}.sieve"))
    if not os.path.exists(store):
        t = time.perf_counter()
        table = os.path.join(root, "data", "nb201", "nb201.csv")
        subprocess.run([os.path.join(a.build, "bench", "report-store"), store, str(a.trials), table], check=True)
        print(f"store: {a.trials} trials written by bench/report-store in {time.perf_counter() - t:.1f} s: {store}")
    out = tempfile.mkdtemp(prefix="sieve-bench-report-")
    page = os.path.join(out, "report.html")
    times = []
    for _ in range(a.repeat):
        t = time.perf_counter()
        sieve(a.build, "report", store, "-o", page)
        times.append(time.perf_counter() - t)
    sieve_s = statistics.median(times)
    sieve_mb = os.path.getsize(page) / 1e6
    print(f"sieve report: {a.trials} trials in {sieve_s:.2f} s (median of {a.repeat}: "
          f"{', '.join(f'{x:.2f}' for x in times)}), page {sieve_mb:.2f} MB")

    try:
        import optuna
        import plotly
    except ImportError as e:
        print(f"peer: not measured ({e}); apt-get install python3-optuna python3-plotly")
        return
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    rows = list(csv.DictReader(io.StringIO(sieve(a.build, "export", store).stdout)))
    ops = ["none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3"]
    dist = {f"edge{k}": optuna.distributions.CategoricalDistribution(ops) for k in range(6)}
    trials = []
    for r in rows:
        if r["status"] != "ok":
            continue
        edges = [tok.split("~")[0] for part in r["genotype"].split("+") for tok in part.split("|") if tok]
        trials.append(optuna.trial.create_trial(params={f"edge{k}": e for k, e in enumerate(edges)},
                                                distributions=dist, value=float(r["cifar10_valid_acc"])))
    peer_times = []
    for _ in range(a.repeat):
        study = optuna.create_study(direction="maximize")
        study.add_trials(trials)
        peer_page = os.path.join(out, "optuna.html")
        t = time.perf_counter()
        figures = [optuna.visualization.plot_optimization_history(study),
                   optuna.visualization.plot_parallel_coordinate(study),
                   optuna.visualization.plot_slice(study)]
        with open(peer_page, "w") as f:
            for i, fig in enumerate(figures):
                f.write(fig.to_html(full_html=False, include_plotlyjs=(i == 0)))
        peer_times.append(time.perf_counter() - t)
    peer_s = statistics.median(peer_times)
    peer_mb = os.path.getsize(peer_page) / 1e6
    print(f"optuna {optuna.__version__} + plotly {plotly.__version__}: history, parallel coordinates and slice of "
          f"{len(trials)} trials in {peer_s:.2f} s (median of {a.repeat}: "
          f"{', '.join(f'{x:.2f}' for x in peer_times)}), page {peer_mb:.2f} MB")
    try:
        import sklearn  # noqa: F401  (fANOVA's random forest)
        t = time.perf_counter()
        optuna.visualization.plot_param_importances(study)
        print(f"optuna parameter importances (fANOVA): {time.perf_counter() - t:.2f} s")
    except ImportError:
        print("optuna parameter importances: not measured (needs scikit-learn, not installed)")
    print(f"ratio: optuna takes {peer_s / sieve_s:.1f}x sieve's time; its page is {peer_mb / sieve_mb:.1f}x the size")


if __name__ == "__main__":
    sys.exit(main())
