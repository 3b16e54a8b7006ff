#!/usr/bin/env bash
# Installs the Debian packages sieve needs to build, test and run.
# Idempotent: installs only what is missing; needs root or sudo for that.
set -euo pipefail

packages=(
  meson ninja-build pkg-config gcc make
  libglib2.0-dev libyaml-dev libsqlite3-dev libjson-glib-dev
  libdnnl-dev liblua5.4-dev lua5.4 libxxhash-dev zlib1g-dev
  dataset-fashion-mnist
  python3 sqlite3
  # stores on PostgreSQL (libpq) and the throwaway server of tests/store
  postgresql libpq-dev
  # tests/report: the embedded server, a real browser, the SVG checker
  libsoup-3.0-dev chromium libxml2-utils
  # tests/model: independent consumers of the ONNX files sieve writes
  python3-onnx python3-opencv python3-numpy
  # tests/proxy (proxies-crosscheck) and tests/plugins/nb101: the PyTorch peer
  # they check sieve's numbers against, with /usr/bin/python3
  python3-torch
)

# `setup.sh bench`: also the peers the benchmarks run beside sieve.
if [[ "${1:-}" == bench ]]; then
  packages+=(python3-optuna python3-numpy python3-scipy python3-plotly python3-psycopg2)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "setup: installing missing Debian packages: ${missing[*]}"
if [[ $(id -u) -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "setup: these packages are missing and this user is not root and has no sudo:" >&2
  echo "  ${missing[*]}" >&2
  echo "setup: install them as root (apt-get install ${missing[*]}) and run make again" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
