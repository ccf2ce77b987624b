#!/usr/bin/env bash
# Last GPU call of the 2026-11-22 session: the whole GPU suite after the last kernel edits
# (cta_gather_sum in the prelude, cb-spmv's COO x loads), then cb-spmv against cuSPARSE and the
# authors' figures again on the matrices of shared/notes/methods.md §0, in one run.
set -uo pipefail
OUT=$1
B=.gpu/bin/spmv
S=.gpu/matrices
export SPMVKIT_CACHE_DIR=/tmp/spmvkit-cache
SPMVKIT_REQUIRE_GPU=1 .gpu/run-tests > $OUT/gpu-tests.log 2>&1; echo "run-tests rc=$?"
grep -E "^(test result|FAILED|failures:|    [a-z_:]+$)|panicked" $OUT/gpu-tests.log | grep -v "result: ok" | head -30
mkdir -p /tmp/cb
timeout 240 $B bench $S/GHS_psdef/copter2.mtx.gz $S/HB/bcsstk33.mtx.gz $S/NYPA/Maragal_6.mtx.gz $S/Bai/af23560.mtx.gz $S/Cylshell/s1rmq4m1.mtx.gz $S/Gleich/wb-cs-stanford.mtx.gz poisson3d:160 stencil27:100 kron:21 uniform:4000000,16 powerlaw:4000000,8 kron:20,48 \
  --methods 'cusparse,cb-spmv,cb-spmv[accumulate=block],csr-vector,teb-vector,csr-overlap' --precision f64 --warmup 1 --reps 10 --samples 3 --max-sample-ms 150 --out /tmp/cb 2>&1 | tail -1
tar czf $OUT/cb.tgz -C /tmp/cb .
