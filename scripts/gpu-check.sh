#!/usr/bin/env bash
# On the GPU machine, in the repository's root, after scripts/gpu-pack.sh
# here: the CUDA tests (against the CPU backend, and the CPU runtime's own
# tests on the GPU), then bench/cuda_vs_torch.py with the PyTorch peer in the
# same call.  Logs and the bench's JSON go to $OUT (or .gpu/out).
#   usage: bash scripts/gpu-check.sh [tests|bench|all|setup] [extra cuda_vs_torch.py arguments]
# (setup: only unpack the build and make its paths; scripts/gpu-profile.sh starts so)
set -uo pipefail
what=${1:-all}
shift || true
root=$PWD
out=${OUT:-$root/.gpu/out}
mkdir -p "$out"
tar xJf .gpu/payload.tar.xz -C .gpu
build=$(cat .gpu/build-root)
# The carried build must be the one that runs: a folder already at that
# path (a stale build) is an error, a link is pointed at the carried one.
if [[ -e $build && ! -L $build ]]; then
  echo "gpu-check: $build exists and is not the carried build; move it away" >&2
  exit 2
fi
mkdir -p "$(dirname "$build")" && ln -sfn "$root/.gpu/build" "$build"
src=$(cat .gpu/source-root)
[[ -e $src ]] || { mkdir -p "$(dirname "$src")" && ln -sfn "$root" "$src"; }
export LD_LIBRARY_PATH=$root/.gpu/lib:${LD_LIBRARY_PATH:-} SIEVE_BUILD_ROOT=$build SIEVE_DATA_DIR=$root/.gpu/data
export G_DEBUG=fatal-criticals PYTHONUNBUFFERED=1
[[ $what == setup ]] && exit 0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
status=0
if [[ $what == tests || $what == all ]]; then
  timeout 120 "$build/tests/runtime/test-runtime-cuda" > "$out/cuda.log" 2>&1 || status=1
  echo "runtime-cuda: $(grep -c '^ok' "$out/cuda.log") ok, $(grep -c '^not ok' "$out/cuda.log") not ok"
  for t in ops net read state; do
    SIEVE_TEST_DEVICE=cuda timeout 120 "$build/tests/runtime/test-runtime-$t" > "$out/$t.log" 2>&1 || status=1
    echo "runtime-$t on cuda: $(grep -c '^ok' "$out/$t.log") ok, $(grep -c '^not ok' "$out/$t.log") not ok"
  done
  SIEVE_TEST_PARITY=1 timeout 300 "$build/tests/runtime/test-runtime-cuda" -p /runtime/cuda/train-parity \
    > "$out/parity.log" 2>&1 || status=1
  grep -E "test accuracy|ok" "$out/parity.log"
fi
if [[ $what == bench || $what == all ]]; then
  python3 bench/cuda_vs_torch.py --exe "$build/bench/cuda-train" --peer .gpu/torch_nb201_gpu.py --python python3 \
    --out "$out/bench.json" "$@" 2> "$out/bench.err" || status=1
fi
exit $status
