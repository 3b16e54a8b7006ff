#!/bin/bash
# A third-party plugin, end to end: install sieve into a scratch destdir,
# build examples/plugin-optimizer (the `halton` optimizer) out of tree
# against that install's headers and sieve.pc only, then have the sieve
# command load it from SIEVE_PLUGIN_PATH, run a study with it and export
# the trials.
set -euo pipefail

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

: "${SIEVE_BUILD_ROOT:?set by meson test}" "${SIEVE_SOURCE_ROOT:?set by meson test}" "${SIEVE_EXE:?set by meson test}"
for tool in meson ninja pkg-config python3; do
  command -v "$tool" >/dev/null || fail "'$tool' is needed to build the example plugin"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sieve-thirdparty-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# ---- 1. a fresh install of sieve ------------------------------------------
meson install --no-rebuild --quiet -C "$SIEVE_BUILD_ROOT" --destdir "$tmp/root" >"$tmp/install.log" 2>&1 ||
  fail "meson install --destdir failed: $(tail -5 "$tmp/install.log")"
pc=$(find "$tmp/root" -name sieve.pc -print -quit)
[ -n "$pc" ] || fail "the install has no sieve.pc"
header=$(find "$tmp/root" -path '*/include/sieve/sieve.h' -print -quit)
[ -n "$header" ] || fail "the install has no include/sieve/sieve.h"

# The installed command finds its library without LD_LIBRARY_PATH: its
# run path is the library folder of the prefix it was configured for.
exe=$(find "$tmp/root" -path '*/bin/sieve' -print -quit)
[ -n "$exe" ] || fail "the install has no bin/sieve"
lib=$(find "$tmp/root" -name 'libsieve.so.0' -print -quit)
[ -n "$lib" ] || fail "the install has no libsieve.so.0"
libdir=${lib#"$tmp/root"}
libdir=${libdir%/libsieve.so.0}
runpath=$(readelf -d "$exe" | sed -n 's/.*(RUNPATH).*\[\(.*\)\].*/\1/p; s/.*(RPATH).*\[\(.*\)\].*/\1/p')
case ":$runpath:" in
  *":$libdir:"*) ;;
  *) fail "the installed sieve's run path ($runpath) does not name the library folder $libdir" ;;
esac
# sieve.pc names its absolute install prefix, which lives under the destdir
# here.  PKG_CONFIG_SYSROOT_DIR would also prefix glib's own -I paths (they
# are not in the destdir), so point a copy of sieve.pc at the destdir instead,
# as anyone who relocates an install does.
mkdir "$tmp/pkgconfig"
sed "s|^prefix=/|prefix=$tmp/root/|" "$pc" >"$tmp/pkgconfig/sieve.pc"
export PKG_CONFIG_PATH="$tmp/pkgconfig"
cflags=$(pkg-config --cflags sieve) || fail "pkg-config cannot read the installed sieve.pc"
case "$cflags" in
  *"$tmp/root/"*) ;;
  *) fail "pkg-config --cflags sieve does not point into the install: $cflags" ;;
esac

# ---- 2. the example plugin, built out of tree ----------------------------
example="$SIEVE_SOURCE_ROOT/examples/plugin-optimizer"
meson setup "$tmp/halton-build" "$example" >"$tmp/setup.log" 2>&1 ||
  fail "meson setup of the example failed: $(tail -20 "$tmp/setup.log")"
grep -q "$tmp/root/" "$tmp/halton-build/build.ninja" ||
  fail "the example build does not use the installed sieve"
ninja -C "$tmp/halton-build" >"$tmp/build.log" 2>&1 || fail "building the example failed: $(tail -20 "$tmp/build.log")"
plugin="$tmp/halton-build/sieve-halton.so"
[ -f "$plugin" ] || fail "the example build made no sieve-halton.so"
if grep -E "warning:" "$tmp/build.log"; then
  fail "the example plugin compiles with warnings"
fi

# ---- 3. sieve finds it -----------------------------------------------------
export SIEVE_PLUGIN_PATH="$tmp/halton-build"
"$SIEVE_EXE" plugins >"$tmp/plugins.txt" 2>"$tmp/plugins.err" || fail "sieve plugins failed: $(cat "$tmp/plugins.err")"
grep -qw halton "$tmp/plugins.txt" || fail "sieve plugins does not list halton: $(cat "$tmp/plugins.txt" "$tmp/plugins.err")"
if grep -q "refused" "$tmp/plugins.err"; then
  fail "a plugin was refused: $(cat "$tmp/plugins.err")"
fi
"$SIEVE_EXE" plugins --describe halton >"$tmp/describe.txt" 2>&1 || fail "sieve plugins --describe halton failed"
grep -q scramble "$tmp/describe.txt" || fail "--describe halton does not show the 'scramble' option: $(cat "$tmp/describe.txt")"
grep -q skip "$tmp/describe.txt" || fail "--describe halton does not show the 'skip' option"

# ---- 4. a study with it ------------------------------------------------------
cat >"$tmp/halton-branin.yaml" <<EOF
name: halton-branin
seed: 0
space: {plugin: hpo, file: $SIEVE_SOURCE_ROOT/search_spaces/branin.yaml}
optimizer: {plugin: halton}
evaluator: {plugin: function, function: branin}
objective: {metric: value, direction: minimize}
budget: {evaluations: 40}
EOF
"$SIEVE_EXE" run "$tmp/halton-branin.yaml" --store "$tmp/s.sieve" >"$tmp/run.log" 2>&1 ||
  fail "sieve run with the halton optimizer failed: $(tail -20 "$tmp/run.log")"
"$SIEVE_EXE" export "$tmp/s.sieve" --format csv >"$tmp/trials.csv" 2>"$tmp/export.err" ||
  fail "sieve export failed: $(cat "$tmp/export.err")"

# 40 finished trials, and the first is Halton's first point: index 1 is
# 1/2 in base 2 and 1/3 in base 3, so x1 = -5 + 15/2 = 2.5, x2 = 15/3 = 5.
python3 - "$tmp/trials.csv" <<'EOF' || fail "the exported trials are not what halton should give (see above)"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
columns = rows[0].keys() if rows else []
for needed in ("status", "genotype"):
    if needed not in columns:
        sys.exit("export has no '%s' column: %s" % (needed, list(columns)))
ok = [r for r in rows if r["status"] == "ok"]
if len(rows) != 40 or len(ok) != 40:
    sys.exit("expected 40 finished trials, got %d rows of which %d ok" % (len(rows), len(ok)))
first = rows[0]["genotype"]
values = dict(item.split("=") for item in first.split(","))
if abs(float(values["x1"]) - 2.5) > 1e-12 or abs(float(values["x2"]) - 5.0) > 1e-12:
    sys.exit("first trial %s is not Halton's first point x1=2.5,x2=5" % first)
if len({r["genotype"] for r in rows}) != 40:
    sys.exit("the Halton points are not all distinct")
EOF

echo "ok: halton built out of tree, listed, ran 40 trials"
