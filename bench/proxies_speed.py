#!/usr/bin/env python3
"""Zero-cost proxy speed of sieve against the PyTorch peer, in one run.

The architectures are the peer's own `time-proxies --archs 10` sample (random_arch with
random.Random(0), taken from the peer module so that both sides score the same ten), at
C=16, N=5, one batch of 64 random-normal 3x32x32 inputs, 2 threads.  For each proxy:

  - sieve per proxy: `sieve proxies --proxies NAME --threads 2 --jobs 1 ARCH...`, the time_ms that
    sieve reports for each architecture (the proxy's computation, runtime compilation included;
    not process start or plugin loading), median over the ten;
  - sieve shared pass: every proxy named in one call, as a screening stage runs them; each
    architecture's total time, median over the ten, beside the per-proxy medians summed;
  - the peer: `/usr/bin/python3 torch_nb201.py time-proxies --archs 10 --threads 2` run in the same
    session, its median per proxy (it times each proxy call on a freshly built network).

How close to the machine the gradient proxies get: a forward and backward pass of the cross-entropy
does about 3 x 2 x MACs x batch floating-point operations (forward, data gradient and weight gradient of
every conv/linear layer; MACs from `sieve proxies --proxies flops`).  The bench prints, for grad_norm's
median-time architecture and in total over the ten, that count divided by sieve's grad_norm time, beside
the machine's float32 ceiling measured in the same run by bench/machine-peak (the FMA peak of its vector
units on the same threads, and oneDNN's rate on one large 3x3 convolution's forward and backward): the
rate a compute-bound pass could reach.  Then where the time goes: the median-time architecture is scored
three times in one process with oneDNN's verbose mode, which times every primitive it runs; the third run
is split into convolutions (and their GFLOP/s), the other primitives by kind, and what lies outside any
primitive (runtime compilation, weight initialisation, sieve's own additions and copies, reading the
gradients).

Prints the medians and the ratios peer/sieve (larger: sieve faster).  Runs are alternated sieve,
peer, sieve, peer for --repeat rounds and the median of the rounds is reported, because the
machines these run on vary by 2x from hour to hour.

    make bench-proxies      # or: /usr/bin/python3 bench/proxies_speed.py --build build
"""
import argparse, json, os, random, re, statistics, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import peer_proxies  # noqa: E402

PROXIES = ["grad_norm", "snip", "grasp", "fisher", "jacob_cov", "naswot", "synflow", "zen"]


def peer_archs(peer, n, seed=0):
    rng = random.Random(seed)
    return [peer.random_arch(rng) for _ in range(n)]


def sieve_times(sieve, archs, names, threads, C, N, batch):
    cmd = [sieve, "proxies", "--space", "nb201", "--set", f"space.C={C}", "--set", f"space.N={N}",
           "--proxies", ",".join(names), "--batch", str(batch), "--threads", str(threads), "--jobs", "1"] + archs
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"sieve proxies failed ({p.returncode}):\n{p.stderr}")
    rows = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    return [r["time_ms"] for r in rows]


CONV_DESC = re.compile(r"(?:g(\d+))?mb(\d+)_ic(\d+)oc(\d+)_.*?oh(\d+)kh(\d+).*?ow(\d+)kw(\d+)")


def profile(sieve, arch, name, threads, C, N, batch):
    """{wall_ms, conv_ms, conv_gflop, other: {kind: ms}} for the third of three runs of arch in one process,
    from oneDNN's verbose timing of each primitive (ONEDNN_VERBOSE=1 prints them on stdout, in order with
    sieve's JSON lines)."""
    cmd = [sieve, "proxies", "--space", "nb201", "--set", f"space.C={C}", "--set", f"space.N={N}",
           "--proxies", name, "--batch", str(batch), "--threads", str(threads), "--jobs", "1"] + [arch] * 3
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, ONEDNN_VERBOSE="1"))
    if p.returncode != 0:
        raise SystemExit(f"sieve proxies failed ({p.returncode}):\n{p.stderr}")
    runs, execs = [], []
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            runs.append((json.loads(line)["time_ms"][name], execs))
            execs = []
        elif line.startswith("onednn_verbose,exec,"):
            execs.append(line.split(","))
    wall, last = runs[-1]
    out = {"wall_ms": wall, "conv_ms": 0.0, "conv_gflop": 0.0, "other": {}}
    for f in last:
        kind, ms = f[3], float(f[-1])
        if kind == "convolution":
            g, mb, ic, oc, oh, kh, ow, kw = (int(x) if x else 1 for x in CONV_DESC.search(f[-2]).groups())
            out["conv_ms"] += ms
            out["conv_gflop"] += 2 * mb * ic // g * oc * oh * ow * kh * kw / 1e9
        else:
            out["other"][kind] = out["other"].get(kind, 0.0) + ms
    return out


def peer_times(peer_path, n_archs, names, threads, C, N, batch):
    cmd = ["/usr/bin/python3", peer_path, "time-proxies", "--archs", str(n_archs), "--threads", str(threads),
           "--C", str(C), "--N", str(N), "--batch", str(batch), "--proxies", ",".join(names)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"the peer failed ({p.returncode}):\n{p.stderr}")
    res = json.loads(p.stdout.strip().splitlines()[-1])
    return {n: res["proxies"][n]["median_ms"] for n in names}, res["torch"]


def sieve_macs(sieve, archs, C, N):
    cmd = [sieve, "proxies", "--space", "nb201", "--set", f"space.C={C}", "--set", f"space.N={N}",
           "--proxies", "flops"] + archs
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return [json.loads(line)["flops"] for line in p.stdout.splitlines() if line.strip()]


def machine_peak(build, threads):
    """{fma_gflops, conv_gflops}: bench/machine-peak.c's float32 FMA peak and oneDNN's rate on a large 3x3
    convolution's forward and backward, on the same threads.  Measured once per round and the best kept:
    on a shared machine a neighbour can halve one measurement."""
    p = subprocess.run([os.path.join(build, "bench", "machine-peak"), "--threads", str(threads)],
                       capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--peer", default=None, help="torch_nb201.py (default ../shared/peers/ or $SIEVE_TORCH_PEER)")
    ap.add_argument("--archs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--C", type=int, default=16)
    ap.add_argument("--N", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--proxies", default=",".join(PROXIES))
    ap.add_argument("--json", help="also write the figures here")
    a = ap.parse_args()
    peer_path = a.peer or os.environ.get("SIEVE_TORCH_PEER") or peer_proxies.DEFAULT_PEER
    peer = peer_proxies.load_peer(peer_path)
    sieve = os.path.join(a.build, "src", "cli", "sieve")
    names = a.proxies.split(",")
    archs = peer_archs(peer, a.archs)
    print(f"{len(archs)} architectures of `torch_nb201.py time-proxies --archs {a.archs}` (random.Random(0)), "
          f"C={a.C} N={a.N}, batch {a.batch} of 3x32x32, {a.threads} threads, {a.repeat} alternated rounds",
          flush=True)

    macs = sieve_macs(sieve, archs, a.C, a.N)
    per_arch = {n: [] for n in names}  # per round: sieve's time of each architecture, one proxy per call
    per = {n: [] for n in names}      # per round: median over archs of sieve's time, one proxy per call
    shared = {n: [] for n in names}   # per round: median of this proxy's share in the shared call
    shared_total, peer_ms = [], {n: [] for n in names}
    torch_version, peak = None, None
    for r in range(a.repeat):
        for n in names:
            ts = sieve_times(sieve, archs, [n], a.threads, a.C, a.N, a.batch)
            per[n].append(statistics.median(t[n] for t in ts))
            per_arch[n].append([t[n] for t in ts])
        ts = sieve_times(sieve, archs, names, a.threads, a.C, a.N, a.batch)
        for n in names:
            shared[n].append(statistics.median(t[n] for t in ts))
        shared_total.append(statistics.median(sum(t.values()) for t in ts))
        pm, torch_version = peer_times(peer_path, a.archs, names, a.threads, a.C, a.N, a.batch)
        for n in names:
            peer_ms[n].append(pm[n])
        if "grad_norm" in names:
            m = machine_peak(a.build, a.threads)
            peak = m if peak is None else {k: max(v, m[k]) if isinstance(v, float) else v for k, v in peak.items()}
        print(f"round {r + 1}: sieve shared pass {shared_total[-1]:.1f} ms/arch, peer all proxies "
              f"{sum(pm.values()):.1f} ms/arch", flush=True)

    med = statistics.median
    print(f"\nmedian ms per architecture (peer: PyTorch {torch_version})")
    print(f"{'proxy':10s} {'sieve':>9s} {'shared':>9s} {'peer':>9s} {'ratio':>7s}")
    rows = {}
    for n in names:
        s, sh, p = med(per[n]), med(shared[n]), med(peer_ms[n])
        rows[n] = {"sieve_ms": s, "sieve_shared_ms": sh, "peer_ms": p, "ratio": p / s}
        print(f"{n:10s} {s:9.1f} {sh:9.1f} {p:9.1f} {p / s:6.1f}x")
    total_peer = sum(med(peer_ms[n]) for n in names)
    total_per = sum(med(per[n]) for n in names)
    total_shared = med(shared_total)
    print(f"{'all':10s} {total_per:9.1f} {total_shared:9.1f} {total_peer:9.1f} {total_peer / total_per:6.1f}x "
          f"per proxy, {total_peer / total_shared:.1f}x shared pass")
    grad_norm_ms = profile_out = None
    if "grad_norm" in names:
        # Each architecture's median time over the rounds, then the architecture at the median.
        t = grad_norm_ms = [med(r[k] for r in per_arch["grad_norm"]) for k in range(len(archs))]
        order = sorted(range(len(archs)), key=lambda k: t[k])
        mid = order[len(order) // 2]
        rate = [6 * macs[k] * a.batch / (t[k] / 1e3) / 1e9 for k in range(len(archs))]
        total = 6 * sum(macs) * a.batch / (sum(t) / 1e3) / 1e9
        fma, conv = peak["fma_gflops"], peak["conv_gflops"]
        print(f"\ngrad_norm's forward+backward against the machine ({a.threads} threads): FMA peak {fma:.0f} "
              f"GFLOP/s ({peak['isa']}), oneDNN on one large 3x3 conv {conv:.0f} GFLOP/s")
        big = max(range(len(archs)), key=lambda k: macs[k])
        for label, k in (("median-time architecture", mid), ("largest architecture", big)):
            print(f"  {label} ({macs[k] / 1e6:.1f} M MACs/example, {t[k]:.1f} ms): {rate[k]:.0f} GFLOP/s = "
                  f"{rate[k] / fma:.0%} of the FMA peak, {rate[k] / conv:.0%} of the large conv")
        print(f"  all ten together: {total:.0f} GFLOP/s = {total / fma:.0%} of the FMA peak, "
              f"{total / conv:.0%} of the large conv")
        # The first architecture of a process also pays oneDNN's kernel
        # generation and the arena's first page faults.
        warm = 6 * sum(macs[1:]) * a.batch / (sum(t[1:]) / 1e3) / 1e9
        print(f"  all but the first of the process (no kernel generation, no fresh pages): {warm:.0f} GFLOP/s = "
              f"{warm / fma:.0%} of the FMA peak, {warm / conv:.0%} of the large conv")
        prof = profile(sieve, archs[mid], "grad_norm", a.threads, a.C, a.N, a.batch)
        conv_rate = prof["conv_gflop"] / (prof["conv_ms"] / 1e3)
        inside = prof["conv_ms"] + sum(prof["other"].values())
        others = ", ".join(f"{k.replace('_', ' ')} {v:.1f}" for k, v in
                           sorted(prof["other"].items(), key=lambda kv: -kv[1]) if v >= 0.05)
        print(f"  where the median-time architecture's {prof['wall_ms']:.1f} ms go (its third run in one process, "
              f"oneDNN's verbose timing):\n"
              f"    convolutions {prof['conv_ms']:.1f} ms at {conv_rate:.0f} GFLOP/s = {conv_rate / fma:.0%} of the "
              f"FMA peak, {conv_rate / conv:.0%} of the large conv\n"
              f"    other primitives (ms): {others}\n"
              f"    outside any primitive: {prof['wall_ms'] - inside:.1f} ms")
        profile_out = dict(prof, arch=archs[mid], conv_gflops=conv_rate)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"archs": archs, "threads": a.threads, "torch": torch_version, "proxies": rows,
                       "all": {"sieve_ms": total_per, "sieve_shared_ms": total_shared, "peer_ms": total_peer},
                       "machine": peak, "macs": macs,
                       "grad_norm_arch_ms": grad_norm_ms, "grad_norm_profile": profile_out}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
