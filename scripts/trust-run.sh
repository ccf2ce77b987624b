#!/usr/bin/env bash
# The device steps behind issue #18's figures (docs/results/h200/2026-11-24/README.md). Build here
# with ../shared/tools/gpu-pack --matrices ../shared/matrices, pack .gpu (and, for `same`, the
# spmv binary of the commit to compare against) into a carried folder, then on the GPU machine:
#
#   scripts/trust-run.sh unpack                 unpacks .gpu-pack/{bin,mtx}.tar.xz into .gpu/ (the
#                                               matrices travel as xz'd text, 14 MB instead of 24)
#   scripts/trust-run.sh tests OUT              the GPU suite (scripts/run-gpu-tests.sh), one GPU
#   scripts/trust-run.sh same OUT OLD-SPMV [SECONDS]  the methods whose kernels the index audit touched,
#                                               old and new binary side by side on the same
#                                               matrices, f64 (speed must be unchanged)
#   scripts/trust-run.sh bsr OUT SECONDS        cusparse-bsr with the Plan's padded vectors against
#                                               cb-spmv and every cuSPARSE entry, shared suite f64
#
# Each step writes its logs or run folders (as .tgz) into OUT and prints a short summary.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
B=.gpu/bin/spmv
export SPMVKIT_MATRICES="$here/.gpu/matrices"
export SPMVKIT_CACHE_DIR=/tmp/spmvkit-cache
step=$1
if [ "$step" = unpack ]; then
  tar xJf .gpu-pack/bin.tar.xz && mkdir -p .gpu/matrices && tar xJf .gpu-pack/mtx.tar.xz -C .gpu/matrices &&
    find .gpu/matrices -name '*.mtx' -print0 | xargs -0 -P "$(nproc)" -n 4 gzip -1
  exit $?
fi
out=$2
shift 2
# The methods with kernels or launch code the audit changed, and the cuSPARSE baseline.
AUDITED='cusparse-alg1,cusparse-alg2,csr-scalar,merge,amf-csr,pbc,teb,teb-vector,dasp,csr5,hbp,csr-overlap,csr-full-overlap,cusparse-bsr'
SAME_MATRICES="poisson3d:160 kron:21 uniform:4000000,16 powerlaw:4000000,8 $SPMVKIT_MATRICES/GHS_psdef/copter2.mtx.gz $SPMVKIT_MATRICES/HB/bcsstk33.mtx.gz $SPMVKIT_MATRICES/Gleich/wb-cs-stanford.mtx.gz $SPMVKIT_MATRICES/Bai/af23560.mtx.gz"
case "$step" in
  tests)
    nvidia-smi -L
    scripts/run-gpu-tests.sh >"$out/gpu-tests.log" 2>&1
    rc=$?
    grep -E "^(=== |test result|FAILED|failures:|    [a-z_:]+$|skipped tests:)|panicked" "$out/gpu-tests.log" | grep -v "test result: ok" | head -60
    echo "run-gpu-tests exit code: $rc"
    exit $rc
    ;;
  same)
    old=$1 secs=${2:-300}
    for round in 1; do
      for which in old new; do
        bin=$B
        [ "$which" = old ] && bin=$old
        mkdir -p "/tmp/same-$which-$round"
        # shellcheck disable=SC2086
        timeout "$secs" "$bin" bench $SAME_MATRICES --methods "$AUDITED" --precision f64 \
          --warmup 2 --reps 20 --samples 5 --max-sample-ms 100 --out "/tmp/same-$which-$round" >/dev/null 2>&1
        echo "$which round $round rc=$?"
      done
    done
    tar czf "$out/same.tgz" -C /tmp same-old-1 same-new-1
    ;;
  bsr)
    secs=$1
    mkdir -p /tmp/bsr
    timeout "$secs" $B bench --suite shared --methods 'cusparse,cusparse-alg1,cusparse-alg2,cusparse-bsr,cb-spmv' \
      --precision f64 --out /tmp/bsr 2>&1 | tail -3
    tar czf "$out/bsr.tgz" -C /tmp/bsr .
    ;;
  *)
    echo "unknown step $step" >&2
    exit 2
    ;;
esac
