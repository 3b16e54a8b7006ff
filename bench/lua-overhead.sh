#!/usr/bin/env bash
# Per-trial overhead of a trivial Lua optimizer against the C `random`
# optimizer: N trials (default 20000) of Branin through the function
# evaluator, whole `sieve run` studies (store included), best of R runs
# (default 3); then the same without the time-limit hook; then ask+tell+save
# in-process (no store).  Not a test: run by hand or `make bench-lua`.
#   bench/lua-overhead.sh [BUILD_DIR] [N] [R]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
n=${2:-20000}
reps=${3:-3}
sieve="$build/src/cli/sieve"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

config() { # name optimizer-section
  cat > "$tmp/$1.yaml" <<YAML
name: $1
space: {plugin: hpo, file: $PWD/search_spaces/branin.yaml}
optimizer: $2
evaluator: {plugin: function, function: branin}
objective: {metric: value, direction: minimize}
budget: {evaluations: $n}
report: {top: 0}
YAML
}
config c-random "{plugin: random}"
config lua-trivial "{plugin: lua, script: $PWD/bench/lua/trivial.lua}"
config lua-nohook "{plugin: lua, script: $PWD/bench/lua/trivial.lua, lua: {seconds: 0}}"

best() { # name -> best wall seconds over reps
  local best=""
  for r in $(seq "$reps"); do
    rm -f "$tmp/$1.sieve"*
    local t0 t1
    t0=$(date +%s.%N)
    "$sieve" run "$tmp/$1.yaml" --store "$tmp/$1.sieve" --quiet > /dev/null
    t1=$(date +%s.%N)
    best=$(python3 -c "import sys; a=$t1-$t0; b='$best'; print(a if not b else min(a, float(b)))")
  done
  echo "$best"
}

c=$(best c-random)
l=$(best lua-trivial)
h=$(best lua-nohook)
python3 - "$n" "$c" "$l" "$h" <<'PY'
import sys
n, c, l, h = int(sys.argv[1]), *map(float, sys.argv[2:])
us = lambda s: s / n * 1e6
print(f"sieve run, {n} trials (best of runs, store included):")
print(f"  random (C)              {c:7.3f} s  {us(c):7.2f} us/trial")
print(f"  trivial (Lua)           {l:7.3f} s  {us(l):7.2f} us/trial  (+{us(l) - us(c):.2f} us, x{l / c:.3f})")
print(f"  trivial (Lua, no hook)  {h:7.3f} s  {us(h):7.2f} us/trial  (+{us(h) - us(c):.2f} us, x{h / c:.3f})")
PY
meson compile -C "$build" bench-lua-overhead > /dev/null
"$build/bench/lua/bench-lua-overhead" "$PWD" "$n" "$reps"
