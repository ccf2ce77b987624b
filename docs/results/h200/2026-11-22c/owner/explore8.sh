#!/usr/bin/env bash
# Measurement run 8 (session 2026-11-22, third): cb-spmv's owner epilogue (one launch, no
# scaling pass) against the atomic one and cusparse, after the cb-spmv GPU tests.
#   docs/results/h200/2026-11-22c/owner/explore8.sh OUT   (from the repository root)
set -uo pipefail
OUT=$1
B=.gpu/bin/spmv
S=.gpu/matrices
export SPMVKIT_CACHE_DIR=/tmp/spmvkit-cache
export SPMVKIT_MATRICES=$PWD/.gpu/matrices
nvidia-smi -L
SPMVKIT_REQUIRE_GPU=1 timeout 200 .gpu/run-tests cb_spmv > "$OUT/gpu-tests-cb.log" 2>&1
echo "cb_spmv GPU tests: rc $?"; grep -E "^test .*(gpu|FAILED)|panicked" "$OUT/gpu-tests-cb.log" | head -8
M='cusparse,cb-spmv,cb-spmv[epilogue=atomic]'
mkdir -p /tmp/ex8
timeout 120 $B bench poisson2d:1250 uniform:1600000,5 poisson3d:160 kron:21 --methods "$M" --precision f64 --warmup 1 --reps 10 --samples 3 --max-sample-ms 200 --out /tmp/ex8/mid > /dev/null 2>&1
timeout 60 $B bench $S/GHS_psdef/copter2.mtx.gz $S/HB/bcsstk33.mtx.gz $S/NYPA/Maragal_6.mtx.gz $S/Bai/af23560.mtx.gz $S/Cylshell/s1rmq4m1.mtx.gz $S/Gleich/wb-cs-stanford.mtx.gz --methods "$M" --precision f64 --out /tmp/ex8/small > /dev/null 2>&1
timeout 200 $B bench --suite shared --methods "$M" --precision f64 --out /tmp/ex8/shared > /dev/null 2>&1
# the speedups over cusparse (geomean, wins / ties / losses; graph timing, then stream) from each summary.md
for d in mid small shared; do [ -f /tmp/ex8/$d/results.csv ] && echo "== $d" && sed -n '/^### Speedup over cusparse/,/^### Performance profile/p' /tmp/ex8/$d/summary.md && gzip -c /tmp/ex8/$d/results.csv > "$OUT/$d.csv.gz"; done
