#!/usr/bin/env bash
# The device steps behind issue #19's figures (docs/results/h200/<date>/README.md names the
# commit and the command of each). Build here with ../shared/tools/gpu-pack --matrices
# ../shared/matrices and pack .gpu into .gpu-pack/ as for scripts/trust-run.sh, then on the GPU
# machine:
#
#   scripts/trust-run.sh unpack                unpacks .gpu-pack into .gpu/
#   scripts/trust-run.sh tests OUT             the whole GPU suite
#   scripts/packed-run.sh first OUT SECONDS    csr-packed against csr-scalar and both cuSPARSE
#                                              algorithms on stencils, a band and two gather-bound
#                                              matrices, f64 (poisson3d also f32), plus ncu's DRAM
#                                              bytes and time of one csr-packed call on poisson3d:160
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
    timeout "$secs" $B bench poisson3d:160 poisson2d:1250 stencil27:100 banded:4000000,16 uniform:4000000,16 kron:21 \
      --methods 'csr-packed,csr-packed[sort=off],csr-scalar,cusparse-alg1,cusparse-alg2' \
      --precision f64 $TIMING --out /tmp/first 2>&1 | tail -40
    # shellcheck disable=SC2086
    timeout 120 $B bench poisson3d:160 --methods 'csr-packed,csr-scalar,cusparse-alg1,cusparse-alg2' \
      --precision f32 $TIMING --out /tmp/first 2>&1 | tail -12
    tar czf "$out/first.tgz" -C /tmp/first .
    if command -v ncu >/dev/null; then
      for m in csr-packed csr-scalar; do
        timeout 200 ncu --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread \
          -k regex:"csr_packed|csr_scalar" -c 3 $B run poisson3d:160 --method "$m" --precision f64 >"$out/ncu-$m.log" 2>&1
        grep -E "csr_|duration|bytes|sectors|warps_active|registers" "$out/ncu-$m.log" | head -20
      done
    fi
    ;;
  *)
    echo "unknown step '$step'" >&2
    exit 2
    ;;
esac
