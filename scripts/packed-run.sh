#!/usr/bin/env bash
# The device steps behind issue #19's figures (docs/results/h200/<date>/README.md names the
# commit and the command of each). Build here with ../shared/tools/gpu-pack --matrices
# ../shared/matrices and pack .gpu into .gpu-pack/ as for scripts/trust-run.sh, then on the GPU
# machine:
#
#   scripts/trust-run.sh unpack                unpacks .gpu-pack into .gpu/
#   scripts/trust-run.sh tests OUT             the whole GPU suite
#   scripts/packed-run.sh first OUT SECONDS    csr-packed (prefetch on and off) against csr-scalar
#                                              and both cuSPARSE algorithms on stencils and a band
#                                              (FIRST_EXTRA: more inputs, FIRST_METHODS: other methods), f64, plus ncu's DRAM
#                                              bytes, time and stalls of one csr-packed call on
#                                              poisson3d:160 with and without prefetch
#   scripts/packed-run.sh stream OUT SECONDS [MATRIX...]
#                                              the goals' run: the stream-large suite with
#                                              csr-packed, csr-scalar and every cuSPARSE entry
#   scripts/packed-run.sh train OUT SECONDS    csr-packed and cuSPARSE on shared, gpu-large,
#                                              large-train and large-test, for auto's table
#   scripts/packed-run.sh table OUT            auto's table from docs/results/h200 and the train
#                                              runs (after `train`), to OUT/table.csv
#   scripts/packed-run.sh autorun OUT TABLE SECONDS
#                                              auto (1000 calls and ~infinity) with TABLE beside
#                                              csr-packed and cuSPARSE on stream-large, large-test
#                                              and three random-column matrices
#   scripts/packed-run.sh ab OUT SECONDS METHODS MATRIX...
#                                              any methods on any inputs (f64), e.g. an A/B of a
#                                              csr-packed option with auto and cuSPARSE beside it;
#                                              written to OUT/$AB_NAME.tgz (default ab)
#
# Each step writes its run folders (as .tgz) and logs into OUT and prints a short summary.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
B=.gpu/bin/spmv
export SPMVKIT_MATRICES="$here/.gpu/matrices"
export SPMVKIT_CACHE_DIR=/tmp/spmvkit-cache
step=$1
out=$2
shift 2
TIMING='--warmup 3 --reps 20 --samples 5 --max-sample-ms 100'
case "$step" in
  first)
    secs=$1
    mkdir -p /tmp/first
    # shellcheck disable=SC2086
    timeout "$secs" $B bench poisson3d:160 poisson2d:1250 stencil27:100 banded:4000000,16 ${FIRST_EXTRA:-} \
      --methods "${FIRST_METHODS:-csr-packed,csr-packed[prefetch=off],csr-scalar,cusparse-alg1,cusparse-alg2}" \
      --precision f64 $TIMING --out /tmp/first 2>&1 | tail -12
    tar czf "$out/first.tgz" -C /tmp/first .
    if command -v ncu >/dev/null; then
      for pf in on off; do
        timeout 200 ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
          -k regex:"csr_packed" -c 1 $B run poisson3d:160 --method csr-packed --param prefetch=$pf --precision f64 >"$out/ncu-packed-$pf.log" 2>&1
        echo "prefetch=$pf"; grep -E "Duration|Throughput|Hit Rate|Stall|Achieved Occupancy|Registers|Bytes" "$out/ncu-packed-$pf.log" | head -24
      done
    fi
    ;;
  ab)
    secs=$1 methods=$2
    shift 2
    mkdir -p /tmp/ab
    # shellcheck disable=SC2086
    timeout "$secs" $B bench "$@" --methods "$methods" --precision f64 $TIMING --out /tmp/ab 2>&1 | tail -40
    tar czf "$out/${AB_NAME:-ab}.tgz" -C /tmp/ab .
    ;;
  stream)
    # The goals' run: the stream-large suite (and any extra inputs), csr-packed against csr-scalar
    # and every cuSPARSE entry (STREAM_METHODS: others, e.g. auto with SPMVKIT_AUTO_TABLE set),
    # f64, with the limits probe in the run record; written to OUT/$STREAM_NAME.tgz.
    secs=$1
    shift
    mkdir -p /tmp/stream
    # shellcheck disable=SC2086
    timeout "$secs" $B bench --suite stream-large "$@" \
      --methods "${STREAM_METHODS:-csr-packed,csr-scalar,cusparse-alg1,cusparse-alg2,cusparse}" \
      --precision f64 $TIMING --out /tmp/stream 2>&1 | tail -20
    tar czf "$out/${STREAM_NAME:-stream}.tgz" -C /tmp/stream .
    ;;
  train)
    # auto's data: csr-packed (and the cuSPARSE baselines) on the shared suite (f64, f32),
    # gpu-large (f64, f32), large-train (f64) and the held-out large-test (f64).
    secs=$1
    for s in shared:f64,f32 gpu-large:f64,f32 large-train:f64 large-test:f64; do
      name=${s%%:*} prec=${s#*:}
      mkdir -p "/tmp/train-$name"
      # shellcheck disable=SC2086
      timeout "$secs" $B bench --suite "$name" --methods 'csr-packed,cusparse-alg1,cusparse-alg2' \
        --precision "$prec" $TIMING --out "/tmp/train-$name" 2>&1 | grep -E "matrices on|record:"
      tar czf "$out/train-$name.tgz" -C "/tmp/train-$name" .
    done
    ;;
  table)
    # auto's table from the committed H200 runs plus this session's train runs (the large-test
    # matrices stay held out by name; the stream-large run is not training data), to OUT/table.csv.
    $B auto table docs/results/h200 /tmp/train-shared /tmp/train-gpu-large /tmp/train-large-train \
      -o "$out/table.csv" 2>&1 | tail -3
    ;;
  autorun)
    # auto measured with the table TABLE (SPMVKIT_AUTO_TABLE) at 1000 calls and at ~infinity, with
    # csr-packed and cuSPARSE beside it: the stream-large suite (families auto never trained on),
    # the held-out large-test suite and gpu-large's random-column matrices; then `spmv auto eval`.
    table=$1 secs=$2
    export SPMVKIT_AUTO_TABLE="$table"
    mkdir -p /tmp/auto
    # shellcheck disable=SC2086
    for inputs in "--suite stream-large" "--suite large-test uniform:4000000,16 kron:21 powerlaw:4000000,8"; do
      # shellcheck disable=SC2086
      timeout "$secs" $B bench $inputs \
        --methods 'auto,auto[calls=1000000000],csr-packed,cusparse-alg1,cusparse-alg2' \
        --precision f64 $TIMING --out /tmp/auto 2>&1 | grep -E "matrices on|record:"
    done
    tar czf "$out/auto.tgz" -C /tmp/auto .
    ;;
  *)
    echo "unknown step '$step'" >&2
    exit 2
    ;;
esac
