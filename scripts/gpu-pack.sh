#!/usr/bin/env bash
# Packs a build made here (with the cuda feature) for the GPU machine of the
# `device` tool, which has the CUDA libraries but not GLib, Lua or oneDNN:
# the build's programs, plugins and tests (stripped), the libraries they lack
# there (../shared/device/bundle-libs), the PyTorch peer and Fashion-MNIST,
# into .gpu/ (ignored by .gitignore; name .gpu in the run's carry),
# then on that machine: bash scripts/gpu-check.sh.
#   usage: scripts/gpu-pack.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
shared=$(realpath ../shared)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/build" "$stage/lib" .gpu/data/fashion-mnist
(cd "$build" && find src plugins tests bench -maxdepth 4 -type f \( -name '*.so*' -o -perm -u+x \) \
   ! -path '*.p/*' ! -name '*.py' ! -name '*.sh' ! -name '*.lua') | while read -r f; do
  mkdir -p "$stage/build/$(dirname "$f")"
  cp -a "$build/$f" "$stage/build/$f"
  strip --strip-debug "$stage/build/$f" 2>/dev/null || true
done
"$shared/device/bundle-libs" "$stage/lib" "$build/src" "$build/plugins" "$build/tests" "$build/bench" >/dev/null
strip --strip-debug "$stage/lib"/*.so* 2>/dev/null || true
# The build's own paths are compiled in (rpaths, the plugin folder): the
# check recreates them there as links.
echo "$build" > "$stage/build-root"
realpath . > "$stage/source-root"
tar cJf .gpu/payload.tar.xz -C "$stage" build lib build-root source-root
cp -u /usr/share/datasets/fashion-mnist/*.gz .gpu/data/fashion-mnist/
cp -u "$shared"/peers/torch_nb201.py "$shared"/peers/torch_nb201_gpu.py .gpu/
du -sh .gpu
