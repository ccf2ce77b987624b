#!/usr/bin/env bash
# Exploration run 3 (session 2026-11-22): GPU suite after the tuning commits, then the tuned
# defaults against cusparse on four large matrices and six small ones, and ncu of FastLoad's
# block kernel on a uniform matrix.
set -uo pipefail
OUT=$1
B=.gpu/bin/spmv
export SPMVKIT_CACHE_DIR=/tmp/spmvkit-cache
SPMVKIT_REQUIRE_GPU=1 .gpu/run-tests > $OUT/gpu-tests.log 2>&1; echo "run-tests rc=$?"
grep -E "^(=== |test result|FAILED|failures:|    [a-z_:]+$|thread .* panicked)" $OUT/gpu-tests.log | grep -v "test result: ok" | head -40
M='cusparse,cusparse-e2e,csr-overlap,csr-overlap[threads=256],csr-full-overlap,fastload,fastload[phase=prologue],fastload[phase=blocks],fastload[blocks_per_warp=8],cb-spmv,cb-spmv[accumulate=block],teb,merge'
timeout 200 $B bench poisson3d:160 uniform:4000000,16 powerlaw:4000000,8 kron:20,48 --methods "$M" --precision f64 --warmup 1 --reps 10 --samples 3 --max-sample-ms 200 --out /tmp/ex3 2>&1 | tail -1
S=.gpu/matrices
timeout 60 $B bench $S/GHS_psdef/copter2.mtx.gz $S/HB/bcsstk33.mtx.gz $S/NYPA/Maragal_6.mtx.gz $S/Bai/af23560.mtx.gz $S/Cylshell/s1rmq4m1.mtx.gz $S/Gleich/wb-cs-stanford.mtx.gz --methods "$M" --precision f64,f32 --out /tmp/ex3s 2>&1 | tail -1
tar czf $OUT/ex3.tgz -C /tmp ex3 ex3s
timeout 90 ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --launch-count 1 --kernel-name fastload_spmv --launch-skip 1 $B run uniform:4000000,16 --method fastload --precision f64 > $OUT/ncu-fastload-uniform.txt 2>&1
grep -E "Duration|DRAM Through|L2 Hit|L2 Cache Thr|Memory Throughput" $OUT/ncu-fastload-uniform.txt
