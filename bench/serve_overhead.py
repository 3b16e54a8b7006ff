#!/usr/bin/env python3
"""Does a live viewer slow a study down?  One run of each, alternating:

  - the study alone;
  - the same study with `sieve serve` on its store and a client that acts as
    the page does (GET /status every second, and the whole page / whenever
    the status changed, which a running study's does every second).

The study is random search on Branin (`function` evaluator) for N
evaluations: the cheapest trials sieve has, so the store is written as fast
as it can be and any cost of a reader shows as much as it ever will.  Prints
each run's wall time and the median ratio watched / alone.

    /usr/bin/python3 bench/serve_overhead.py --build build [--evaluations 20000] [--repeat 3]
"""
import argparse
import os
import re
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SERVING = re.compile(r"^serving .* on (http://[0-9.]+:\d+/)")

STUDY = """name: overhead
seed: 1
space: {plugin: hpo, file: %s}
optimizer: {plugin: random}
evaluator: {plugin: function, function: branin}
objective: {metric: value, direction: minimize}
budget: {evaluations: %d}
report: {top: 0}
"""


def run_study(sieve, config, store):
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(store + suffix):
            os.remove(store + suffix)
    t0 = time.monotonic()
    subprocess.run([sieve, "run", config, "--store", store, "--quiet"], check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - t0


def watched(sieve, config, store):
    """The study with a server and a page-like client on its store."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(store + suffix):
            os.remove(store + suffix)
    server = None
    stop = threading.Event()
    requests = [0, 0]

    def client(base):
        last = None
        while not stop.is_set():
            with urllib.request.urlopen(base + "status", timeout=30) as r:
                status = r.read()
            requests[0] += 1
            if status != last:
                with urllib.request.urlopen(base, timeout=30) as r:
                    r.read()
                requests[1] += 1
                last = status
            stop.wait(1.0)

    t0 = time.monotonic()
    study = subprocess.Popen([sieve, "run", config, "--store", store, "--quiet"], stdout=subprocess.DEVNULL)
    # The server refuses a file that is not (yet) a sieve store: start it once
    # the study has written its first trial.
    while study.poll() is None:
        if os.path.exists(store):
            probe = subprocess.run([sieve, "export", store, "--summary", "--format", "json"],
                                   capture_output=True, text=True)
            if probe.returncode == 0 and '"trials":0,' not in probe.stdout:
                break
        time.sleep(0.01)
    server = subprocess.Popen([sieve, "serve", store, "--port", "0"], stdout=subprocess.PIPE, text=True)
    base = None
    for line in server.stdout:
        m = SERVING.match(line)
        if m:
            base = m.group(1)
            break
    thread = threading.Thread(target=client, args=(base,), daemon=True)
    thread.start()
    study.wait()
    elapsed = time.monotonic() - t0
    stop.set()
    thread.join()
    server.kill()
    server.wait()
    return elapsed, requests


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--evaluations", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sieve = os.path.join(args.build, "src", "cli", "sieve")
    with tempfile.TemporaryDirectory(prefix="sieve-serve-bench-") as tmp:
        config = os.path.join(tmp, "study.yaml")
        with open(config, "w") as f:
            f.write(STUDY % (os.path.join(HERE, "..", "search_spaces", "branin.yaml"), args.evaluations))
        store = os.path.join(tmp, "study.sieve")
        ratios = []
        for r in range(args.repeat):
            alone = run_study(sieve, config, store)
            with_view, requests = watched(sieve, config, store)
            ratios.append(with_view / alone)
            print(f"run {r + 1}: {args.evaluations} trials alone {alone:6.2f} s, watched {with_view:6.2f} s "
                  f"({requests[0]} status polls, {requests[1]} pages): ratio {with_view / alone:.3f}", flush=True)
        print(f"median ratio watched / alone: {statistics.median(ratios):.3f} over {args.repeat} runs")


if __name__ == "__main__":
    main()
