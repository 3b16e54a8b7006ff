#!/bin/sh
# A YAML search, a final training of its best network, model.onnx, and the
# ONNX file run by OpenCV (a runtime that is not sieve).  SIEVE: the sieve
# executable (default: sieve on PATH).
set -eu
SIEVE=${SIEVE:-sieve}
cd "$(dirname "$0")"
rm -f winner.sieve winner.sieve-*
"$SIEVE" run search.yaml
"$SIEVE" final winner.sieve --best 1 --epochs 2
"$SIEVE" model export winner.sieve --final 0 -o model.onnx
"$SIEVE" model info model.onnx
"$SIEVE" model eval model.onnx --dataset fashion-mnist
/usr/bin/python3 run_onnx.py model.onnx
