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
#                                               matrices, f64 (speed must be unchanged);
#                                               SAME_ONLY_METHODS / SAME_ONLY_MATRICES narrow it
#   scripts/trust-run.sh refactor OUT OLD-SPMV PART SECONDS
#                                               a refactor's check (issue #20): every method, old
#                                               and new binary one after the other, f64, on PART =
#                                               shared (the shared suite) or large (poisson3d:160,
#                                               kron:21, uniform:4000000,16, powerlaw:4000000,8);
#                                               REFACTOR_ORDER="new old" swaps the order; then
#                                               `spmv report NEW --against OLD` here
#   scripts/trust-run.sh bsr OUT SECONDS        cusparse-bsr with the Plan's padded vectors against
#                                               cb-spmv and every cuSPARSE entry, shared suite f64
#   scripts/trust-run.sh autotrain OUT SECONDS  the large-train suite with every method of auto's
#                                               table (f64), then `spmv auto table` over the
#                                               committed runs and this one into OUT/table.csv
#   scripts/trust-run.sh autotest OUT TABLE SECONDS SPEC...
#                                               large-test matrices with every table method and
#                                               auto (model mode at 1000 calls and ∞, trial mode)
#                                               on the table TABLE (SPMVKIT_AUTO_TABLE; `shipped`:
#                                               the table compiled in), then
#                                               `spmv auto eval`
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
# The methods of auto's training table.
TABLE_METHODS='csr-scalar,csr-vector,csr-light,merge,csc,cusparse-alg1,cusparse-alg2,cusparse,csr5,dasp,tilespmv,cusparse-bsr,csr-overlap,teb,teb-vector,pbc,amf-csr,cb-spmv,hbp,hbp-paper,2d,fastload,fastload-atomic'
TIMING='--warmup 2 --reps 10 --samples 3 --max-sample-ms 100'
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
        timeout "$secs" "$bin" bench ${SAME_ONLY_MATRICES:-$SAME_MATRICES} --methods "${SAME_ONLY_METHODS:-$AUDITED}" --precision f64 \
          --warmup 2 --reps 20 --samples 5 --max-sample-ms 100 --out "/tmp/same-$which-$round" >/dev/null 2>&1
        echo "$which round $round rc=$?"
      done
    done
    tar czf "$out/same.tgz" -C /tmp same-old-1 same-new-1
    ;;
  refactor)
    # REFACTOR_ORDER="new old" runs the new binary first (to see an order effect); the folders
    # are named after the order, so a second order on a warm machine does not merge into the first.
    old=$1 part=$2 secs=$3
    order=${REFACTOR_ORDER:-old new}
    tag=$(echo "$order" | tr ' ' '-')
    if [ "$part" = shared ]; then inputs='--suite shared'; else inputs='poisson3d:160 kron:21 uniform:4000000,16 powerlaw:4000000,8'; fi
    for which in $order; do
      bin=$B
      [ "$which" = old ] && bin=$old
      dir="refactor-$part-$tag-$which"
      mkdir -p "/tmp/$dir"
      # shellcheck disable=SC2086
      timeout "$secs" "$bin" bench $inputs --methods all --precision f64 --warmup 2 --reps 10 --samples 3 \
        --max-sample-ms 20 --out "/tmp/$dir" >"$out/$dir.log" 2>&1
      echo "$which rc=$?"
    done
    tar czf "$out/refactor-$part-$tag.tgz" -C /tmp "refactor-$part-$tag-old" "refactor-$part-$tag-new"
    ;;
  bsr)
    secs=$1
    mkdir -p /tmp/bsr
    timeout "$secs" $B bench --suite shared --methods 'cusparse,cusparse-alg1,cusparse-alg2,cusparse-bsr,cb-spmv' \
      --precision f64 --out /tmp/bsr 2>&1 | tail -3
    tar czf "$out/bsr.tgz" -C /tmp/bsr .
    ;;
  autotrain)
    secs=$1
    mkdir -p /tmp/train
    # shellcheck disable=SC2086
    timeout "$secs" $B bench --suite large-train --precision f64 --methods "$TABLE_METHODS" $TIMING \
      --out /tmp/train 2>&1 | tail -3
    $B auto table docs/results/h200 /tmp/train -o "$out/table.csv"
    tar czf "$out/large-train.tgz" -C /tmp/train .
    ;;
  autotest)
    table=$1 secs=$2
    shift 2
    label=large-test-$(echo "$1" | tr -c 'a-z0-9' '-' | cut -c1-20)
    mkdir -p "/tmp/$label"
    if [ "$table" != shipped ]; then export SPMVKIT_AUTO_TABLE=$table; fi
    # shellcheck disable=SC2086
    timeout "$secs" $B bench "$@" --precision f64 \
      --methods "$TABLE_METHODS,auto,auto[calls=1000000000],auto[mode=trial;calls=1000000000]" $TIMING \
      --out "/tmp/$label" 2>&1 | tail -3
    $B auto eval "/tmp/$label" | tee "$out/$label-eval.md" | tail -30
    tar czf "$out/$label.tgz" -C "/tmp/$label" .
    ;;
  *)
    echo "unknown step $step" >&2
    exit 2
    ;;
esac
