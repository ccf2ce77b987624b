#!/usr/bin/env bash
# Measurement run 7 (session 2026-11-22, third): issue #8's final figures for cb-spmv's run
# kernels, on an H200 (the GPU of shared/notes/methods.md §0).
#   docs/results/h200/2026-11-22c/explore7.sh STEP OUT   (from the repository root), STEP:
#   tests OUT   the whole GPU suite (SPMVKIT_REQUIRE_GPU=1 .gpu/run-tests)
#   bench OUT   mid-size stand-ins, the six small matrices of §0, the shared suite: cusparse,
#               fastload, cb-spmv and its ablations
#   large OUT   gpu-large: cusparse, fastload, cb-spmv (both builds)
#   ncu OUT     L1/L2 hit rates (scripts/claims-run.sh ncu)
# Each step leaves a log or one .tgz in OUT and prints geomeans over cusparse.
set -uo pipefail
step=$1 OUT=$2
B=.gpu/bin/spmv
S=.gpu/matrices
export SPMVKIT_CACHE_DIR=/tmp/spmvkit-cache
export SPMVKIT_MATRICES=$PWD/.gpu/matrices
nvidia-smi -L
summary() {  # summary DIR...: the speedups over cusparse of each DIR/summary.md (graph, then stream)
  for d in "$@"; do [ -f "$d/summary.md" ] && echo "== $d" && sed -n '/^### Speedup over cusparse/,/^### Performance profile/p' "$d/summary.md"; done
}
case "$step" in
  tests)
    SPMVKIT_REQUIRE_GPU=1 .gpu/run-tests > "$OUT/gpu-tests.log" 2>&1
    rc=$?
    grep -E "^(test result|FAILED|failures:)" "$OUT/gpu-tests.log" | sort | uniq -c | head
    echo "run-tests exit code: $rc"
    ;;
  bench)
    M='cusparse,fastload,cb-spmv,cb-spmv[min_ctas=regs],cb-spmv[min_ctas=8],cb-spmv[accumulate=block],cb-spmv[aggregate=off],cb-spmv[gather=off],cb-spmv[format=off]'
    mkdir -p /tmp/ex7
    timeout 150 $B bench poisson2d:1250 uniform:1600000,5 poisson3d:160 --methods "$M" --precision f64 --warmup 1 --reps 10 --samples 3 --max-sample-ms 200 --out /tmp/ex7/mid 2>&1 | tail -1
    timeout 60 $B bench $S/GHS_psdef/copter2.mtx.gz $S/HB/bcsstk33.mtx.gz $S/NYPA/Maragal_6.mtx.gz $S/Bai/af23560.mtx.gz $S/Cylshell/s1rmq4m1.mtx.gz $S/Gleich/wb-cs-stanford.mtx.gz --methods "$M" --precision f64 --out /tmp/ex7/small 2>&1 | tail -1
    timeout 240 $B bench --suite shared --methods 'cusparse,cb-spmv,cb-spmv[min_ctas=regs],cb-spmv[accumulate=block]' --precision f64 --out /tmp/ex7/shared 2>&1 | tail -1
    summary /tmp/ex7/mid /tmp/ex7/small /tmp/ex7/shared
    rm -rf /tmp/ex7/*/plots; tar czf "$OUT/ex7-bench.tgz" -C /tmp ex7
    ;;
  large)
    mkdir -p /tmp/ex7l
    timeout 540 $B bench --suite gpu-large --methods 'cusparse,fastload,cb-spmv,cb-spmv[min_ctas=regs],cb-spmv[accumulate=block]' --precision f64 --warmup 1 --reps 5 --samples 3 --max-sample-ms 150 --out /tmp/ex7l/large 2>&1 | tail -1
    summary /tmp/ex7l/large
    rm -rf /tmp/ex7l/*/plots; tar czf "$OUT/ex7-large.tgz" -C /tmp ex7l
    ;;
  ncu) scripts/claims-run.sh ncu "$OUT" ;;
  *) echo "unknown step $step" >&2; exit 2 ;;
esac
