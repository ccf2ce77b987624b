#!/usr/bin/env bash
# Measurement run 6 (session 2026-11-22, third): cb-spmv's lean accumulate=run kernels
# (cb_spmv_run*, issue #8) against the general kernel, cusparse and fastload, on the mid-size
# bandwidth-bound stand-ins, poisson3d:160, the six small matrices of the authors' comparison
# and the shared suite (f64); the cb-spmv GPU tests first; an ncu profile of the run kernel.
#   docs/results/h100/2026-11-22c/explore6.sh OUT [quick]   (from the repository root)
set -uo pipefail
OUT=$1
B=.gpu/bin/spmv
export SPMVKIT_CACHE_DIR=/tmp/spmvkit-cache
export SPMVKIT_MATRICES=$PWD/.gpu/matrices
mkdir -p /tmp/ex6
nvidia-smi -L
SPMVKIT_REQUIRE_GPU=1 timeout 200 .gpu/run-tests cb_spmv > $OUT/gpu-tests-cb.log 2>&1
echo "cb_spmv GPU tests: rc $?"; grep -E "test result|FAILED|panicked" $OUT/gpu-tests-cb.log | head -8
S=.gpu/matrices
M=${M:-'cusparse,fastload,cb-spmv,cb-spmv[min_ctas=regs],cb-spmv[bpw=4],cb-spmv[bpw=16],cb-spmv[accumulate=block]'}
timeout 150 $B bench poisson2d:1250 uniform:1600000,5 poisson3d:160 --methods "$M" --precision f64 --warmup 1 --reps 10 --samples 3 --max-sample-ms 200 --out /tmp/ex6/mid 2>&1 | tail -1
timeout 60 $B bench $S/GHS_psdef/copter2.mtx.gz $S/HB/bcsstk33.mtx.gz $S/NYPA/Maragal_6.mtx.gz $S/Bai/af23560.mtx.gz $S/Cylshell/s1rmq4m1.mtx.gz $S/Gleich/wb-cs-stanford.mtx.gz --methods "$M" --precision f64 --out /tmp/ex6/small 2>&1 | tail -1
if [ "${2:-}" != quick ]; then
  timeout 200 $B bench --suite shared --methods 'cusparse,cb-spmv,cb-spmv[min_ctas=regs]' --precision f64 --out /tmp/ex6/shared 2>&1 | tail -1
fi
B=$B scripts/profile-cb.sh $OUT poisson2d:1250 p2d-run cb_spmv_run_o8 --method cb-spmv > /dev/null 2>&1
grep -E "Duration|Executed Instructions  |Registers Per|Achieved Occ" $OUT/p2d-run.txt | head -6
tar czf $OUT/ex6.tgz -C /tmp ex6
# the speedups over cusparse (geomean, wins / ties / losses; graph timing, then stream) from each summary.md
for d in mid small shared; do [ -f /tmp/ex6/$d/summary.md ] && echo "== $d" && sed -n '/^### Speedup over cusparse/,/^### Performance profile/p' /tmp/ex6/$d/summary.md; done
