#!/usr/bin/env bash
# Exploration run 4 (session 2026-11-22, second day): FastLoad's new options (blocks_per_warp,
# prefetch, plain loads, permute_x, hub rows) and CB-SpMV's one-launch prologue on the six small
# shared matrices of the authors' comparison and four large generated ones, after the fastload GPU
# tests.
set -uo pipefail
OUT=$1
B=.gpu/bin/spmv
export SPMVKIT_CACHE_DIR=/tmp/spmvkit-cache
export SPMVKIT_MATRICES=$PWD/.gpu/matrices
nvidia-smi -L
SPMVKIT_REQUIRE_GPU=1 timeout 300 .gpu/run-tests fastload > $OUT/gpu-fastload-tests.log 2>&1; echo "fastload gpu tests rc=$?"
grep -E "test result|FAILED|panicked" $OUT/gpu-fastload-tests.log | head -20
S=.gpu/matrices
F='fastload,fastload[blocks_per_warp=1],fastload[blocks_per_warp=2],fastload[blocks_per_warp=4],fastload[permute_x=kernel],fastload[permute_x=kernel;blocks_per_warp=1],fastload[permute_x=kernel;blocks_per_warp=2],fastload[prefetch=1],fastload[prefetch=1;permute_x=kernel],fastload[prefetch=1;blocks_per_warp=1],fastload[loads=plain],fastload[threads=64;blocks_per_warp=1],fastload[fuse=one;permute_x=kernel],fastload[phase=blocks],fastload[phase=prologue]'
C='cb-spmv,cb-spmv[accumulate=block;prologue=fused],cb-spmv[accumulate=block;prologue=fused;balance=off],cb-spmv[bpw=1],cb-spmv[bpw=2],cb-spmv[accumulate=block;bpw=1]'
timeout 150 $B bench $S/GHS_psdef/copter2.mtx.gz $S/HB/bcsstk33.mtx.gz $S/NYPA/Maragal_6.mtx.gz $S/Bai/af23560.mtx.gz $S/Cylshell/s1rmq4m1.mtx.gz $S/Gleich/wb-cs-stanford.mtx.gz --methods "cusparse,$F,$C" --precision f64 --out /tmp/ex4s 2>&1 | tail -1
L='cusparse,fastload,fastload[blocks_per_warp=2],fastload[prefetch=1],fastload[loads=plain],fastload[prefetch=1;loads=plain],fastload[permute_x=kernel],fastload[permute_x=kernel;prefetch=1],fastload[hub=off],fastload[hub=1024],fastload[hub_slots=1024],fastload[phase=blocks],fastload[prefetch=1;blocks_per_warp=8]'
timeout 240 $B bench poisson3d:160 uniform:4000000,16 powerlaw:4000000,8 kron:20,48 --methods "$L" --precision f64 --warmup 1 --reps 10 --samples 3 --max-sample-ms 200 --out /tmp/ex4l 2>&1 | tail -1
tar czf $OUT/ex4.tgz -C /tmp ex4s ex4l
for d in ex4s ex4l; do python3 - /tmp/$d/*.csv <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cus = {r['matrix']: float(r['time_median_us']) for r in rows if r['method'] == 'cusparse' and r['status'] == 'ok'}
for r in rows:
    t = r['time_median_us']
    print(f"{r['matrix'][:20]:<20} {r['method']:<55} {r['status']:<6} {float(t) if t else float('nan'):9.1f}")
PY
done
