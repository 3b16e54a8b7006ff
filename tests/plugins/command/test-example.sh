#!/bin/bash
# configs/command-example.yaml as shipped: the command evaluator running
# examples/command/objective.py (Debian's python3, standard library only)
# through the sieve command, four trials at a time.
set -euo pipefail

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

: "${SIEVE_SOURCE_ROOT:?set by meson test}" "${SIEVE_EXE:?set by meson test}"
command -v python3 >/dev/null || fail "python3 is needed by examples/command/objective.py"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sieve-command-example-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

config="$SIEVE_SOURCE_ROOT/configs/command-example.yaml"
# Run from elsewhere: the program's cwd must be the config's folder anyway.
(cd "$tmp" && "$SIEVE_EXE" run "$config" --store "$tmp/s.sieve" --set budget.evaluations=12) >"$tmp/run.log" 2>&1 ||
  fail "sieve run $config failed: $(tail -20 "$tmp/run.log")"
"$SIEVE_EXE" export "$tmp/s.sieve" --format csv >"$tmp/trials.csv" 2>"$tmp/export.err" ||
  fail "sieve export failed: $(cat "$tmp/export.err")"

# Every trial ok, and its metrics are Rosenbrock's value at its parameters
# (recomputed here from the genotype), so they came from the program.
python3 - "$tmp/trials.csv" <<'PY' || fail "the trials are not what objective.py computes (see above)"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
if len(rows) != 12 or any(r["status"] != "ok" for r in rows):
    sys.exit("expected 12 ok trials, got %s" % [(r["status"], r.get("reason")) for r in rows])
for r in rows:
    x = [float(v.split("=")[1]) for v in r["genotype"].split(",")]
    f = sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(3))
    if abs(float(r["true_value"]) - f) > 1e-9 * max(1.0, f):
        sys.exit("trial %s: true_value %s, Rosenbrock gives %r" % (r["number"], r["true_value"], f))
    if abs(float(r["value"]) - f) > 0.1 * f + 1e-9:
        sys.exit("trial %s: noisy value %s is far from %r" % (r["number"], r["value"], f))
PY
echo "ok: command-example ran 12 trials"
