#!/usr/bin/env bash
# Exploration run 2 (session 2026-11-22): FastLoad/CB-SpMV/CSR-Overlap variants, ncu of two kernels.
set -uo pipefail
OUT=$1
B=.gpu-bin/bin/spmv
export SPMVKIT_CACHE_DIR=/tmp/spmvkit-cache
M='cusparse,fastload,fastload[fuse=two],fastload[fuse=two;blocks_per_warp=8],fastload[fuse=two;blocks_per_warp=2],fastload[fuse=two;threads=128],fastload[fuse=two;permute_x=kernel;blocks_per_warp=8],fastload[fuse=two;height=2],fastload[fuse=two;height=8],fastload[fuse=two;height=unlimited],cb-spmv[accumulate=run;prologue=kernel],cb-spmv[accumulate=run;prologue=kernel;bpw=8],cb-spmv[accumulate=run;prologue=kernel;bpw=2],cb-spmv[accumulate=run;prologue=kernel;dense_min=257],csr-overlap[threads=256;long_chunk=4096],csr-overlap[threads=512;long_chunk=4096],csr-overlap[threads=256;long_chunk=4096;vector=2],csr-overlap[threads=256;long_chunk=4096;vector=4]'
timeout 240 $B bench poisson3d:160 uniform:4000000,16 kron:20,48 --methods "$M" --precision f64 --warmup 1 --reps 10 --samples 3 --max-sample-ms 200 --out /tmp/ex2 2>&1 | tail -2
timeout 60 $B bench .gpu/matrices/GHS_psdef/copter2.mtx.gz .gpu/matrices/HB/bcsstk33.mtx.gz .gpu/matrices/NYPA/Maragal_6.mtx.gz .gpu/matrices/Bai/af23560.mtx.gz .gpu/matrices/Cylshell/s1rmq4m1.mtx.gz .gpu/matrices/Gleich/wb-cs-stanford.mtx.gz --methods "$M" --precision f64 --out /tmp/ex2s 2>&1 | tail -2
tar czf $OUT/ex2.tgz -C /tmp ex2 ex2s
NCU="ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --launch-count 1"
timeout 90 $NCU --kernel-name fastload_spmv --launch-skip 1 $B run poisson3d:160 --method fastload --param fuse=two --precision f64 > $OUT/ncu-fastload.txt 2>&1
timeout 90 $NCU --kernel-name cb_spmv $B run poisson3d:160 --method cb-spmv --param accumulate=run --param prologue=kernel --precision f64 > $OUT/ncu-cbspmv.txt 2>&1
tail -5 $OUT/ncu-fastload.txt
