#!/bin/sh
# A YAML search, a final training of its best network, model.onnx, and the
# ONNX file run by OpenCV (a runtime that is not sieve).  SIEVE: the sieve
# executable (default: sieve on PATH); OUT: where the store and the model go
# (default: a new temporary folder).
set -eu
SIEVE=${SIEVE:-sieve}
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
cd "$OUT"
echo "writing into $OUT"
rm -f winner.sieve winner.sieve-*
"$SIEVE" run "$here/search.yaml" --store winner.sieve
"$SIEVE" final winner.sieve --best 1 --epochs 2
"$SIEVE" model export winner.sieve --final 0 -o model.onnx
"$SIEVE" model info model.onnx
"$SIEVE" model eval model.onnx --dataset fashion-mnist
/usr/bin/python3 "$here/run_onnx.py" model.onnx
