#!/usr/bin/env bash
# Where a CUDA training step's time goes, on the GPU machine (issue 27;
# README, "Where the time goes"), after scripts/gpu-pack.sh here: a C16N5
# step by batch (16 to 256), SIEVE_CUDA_PROFILE's table per operation at
# batch 64 and 256, the eight proxies, screening and 16 trainings at 1 to 32
# at once, and Nsight Compute's time of each kernel of one batch-64 step
# (ncu64.csv).  About two minutes; what it writes goes to $OUT.
#   usage: bash scripts/gpu-profile.sh
set -u
root=$PWD; out=${OUT:-$root/.gpu/out}; mkdir -p "$out"
bash scripts/gpu-check.sh setup || { echo "gpu-profile: the build could not be set up" >&2; exit 2; }
build=$(cat .gpu/build-root)
export LD_LIBRARY_PATH=$root/.gpu/lib:${LD_LIBRARY_PATH:-} SIEVE_BUILD_ROOT=$build SIEVE_DATA_DIR=$root/.gpu/data
ct=$build/bench/cuda-train
P=grad_norm,snip,grasp,fisher,jacob_cov,naswot,synflow,zen
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
for b in 16 32 64 128 256; do timeout 30 $ct train --device cuda --batch $b --iters 200 | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print("train b%d %.3f ms/step %.0f img/s"%(d["batch"],d["ms_per_step"],d["img_per_s"]))'; done
for b in 64 256; do SIEVE_CUDA_PROFILE=1 timeout 30 $ct train --device cuda --batch $b --iters 20 --warmup 2 > /dev/null 2> $out/profile$b.txt; head -40 $out/profile$b.txt; done
timeout 60 $ct proxies --device cuda --archs 20 --proxies $P | tee $out/proxies.json
SIEVE_CUDA_PROFILE=1 timeout 30 $ct proxies --device cuda --archs 2 --proxies $P > /dev/null 2> $out/profile-proxies.txt; grep -E 'profile (forward|backward|compile)' $out/profile-proxies.txt | head -30
for k in 1 4 8 16 32; do n=$((k==1?60:300)); timeout 60 $ct screen --device cuda --archs $n --concurrent $k --proxies $P | tee -a $out/rows.json; done
for k in 4 8 16; do timeout 60 $ct train-many --device cuda --concurrent $k | tee -a $out/rows.json; done
echo ncu; timeout 100 ncu --clock-control none --metrics gpu__time_duration.sum --csv --launch-skip 2500 --launch-count 700 $ct train --device cuda --batch 64 --iters 8 --warmup 2 > $out/ncu64.csv 2> $out/ncu.err; echo "ncu rc $?"; wc -l $out/ncu64.csv; tail -3 $out/ncu.err
