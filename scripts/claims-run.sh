#!/usr/bin/env bash
# The paper-claim runs of issues #5-#10 on the GPU machine (after scripts/device-run.sh tests):
#   scripts/claims-run.sh STEP OUT
# STEP: shared (every method + the papers' variants on the shared suite, f32 and f64),
#       large1, large2 (the same on the two halves of gpu-large, f64), hbp (HBP's matrix kinds, f64), f32large (CSR-Overlap
#       and TEB families on gpu-large in f32, as their papers ran), ncu (L1/L2 sector hit rates of
#       cb-spmv, csr-vector and cusparse-alg1 on 12 matrices, CB-SpMV Fig. 10).
# Each step leaves one .tgz (bench output) or one .csv (ncu) in OUT.
set -uo pipefail
step=$1 OUT=$2
B=.gpu/bin/spmv
S=.gpu/matrices
export SPMVKIT_MATRICES="$PWD/.gpu/matrices"
export SPMVKIT_CACHE_DIR=/tmp/spmvkit-cache
# Every registered method, then the variants the papers' tables and ablations need.
ALL=$($B methods --json | python3 -c 'import json,sys; print(",".join(m["name"] for m in json.load(sys.stdin)))')
VARIANTS='fastload[height=2],fastload[height=4],fastload[height=8],fastload[height=16],fastload[height=32],fastload[height=unlimited],fastload[phase=prologue],fastload[phase=blocks],fastload[fuse=one],cb-spmv[accumulate=block],cb-spmv[accumulate=block;aggregate=off],cb-spmv[accumulate=block;gather=off],cb-spmv[accumulate=block;format=off],cb-spmv[accumulate=block;balance=off],cb-spmv[accumulate=block;aggregate=off;gather=off;format=off;balance=off],csr-overlap[long_chunk=0],csr-overlap[switch_points=17,34,64,122,216;long_chunk=0],csr-overlap[threads=256],tilespmv[deferred=0]'
HBPV='hbp[hash=dp],hbp[hash=sort],hbp[hash=sampled],hbp[hash=fixed],hbp[phase=spmv],hbp[phase=combine]'
bench() {  # bench LABEL SECONDS ARGS...
  local label=$1 secs=$2; shift 2
  mkdir -p /tmp/$label
  timeout "$secs" $B bench "$@" --out /tmp/$label 2>&1 | tail -3
  tar czf "$OUT/$label.tgz" -C /tmp/$label .
}
case "$step" in
  shared)
    bench shared 400 --suite shared --methods "$ALL,$VARIANTS,$HBPV" --precision f32,f64 --warmup 2 --reps 10 --samples 3
    ;;
  large1|large2)
    # gpu-large in two halves (a call on the GPU machine lasts at most 10 minutes); HBP's
    # variants have their own step.
    if [ "$step" = large1 ]; then set -- poisson3d:160 stencil27:100 kron:21 uniform:4000000,16 powerlaw:4000000,8
    else set -- banded:4000000,16 blockdiag:40000,64 hugerow:8000000,4 uniform:30000000,2; fi
    LV=${VARIANTS//fastload\[height=16\],fastload\[height=32\],/}
    bench "$step" 540 "$@" --methods "$ALL,$LV" --precision f64 --warmup 1 --reps 5 --samples 3 --max-sample-ms 150
    ;;
  hbp)
    bench hbp 330 $S/Rajat/rajat01.mtx.gz $S/Hamm/add32.mtx.gz kron:18,48 kron:19,48 kron:20,48 powerlaw:4000000,8 uniform:4000000,16 kron:21,48 \
      --methods 'cusparse,csr-vector,2d,hbp,hbp-paper,hbp[hash=sort],hbp[hash=dp],hbp[hash=sampled],hbp[phase=spmv],hbp[phase=combine]' \
      --precision f64 --warmup 1 --reps 5 --samples 3 --max-sample-ms 150
    ;;
  f32large)
    bench f32large 400 --suite gpu-large --methods 'cusparse,cusparse-e2e,csr-scalar,csr5,csr-overlap,csr-overlap[long_chunk=0],csr-full-overlap,teb,teb-vector,pbc,amf-csr,fastload,cb-spmv' --precision f32 --warmup 1 --reps 5 --samples 3 --max-sample-ms 150
    ;;
  ncu)
    echo "matrix,method,kernel,duration_ns,l1_hit_pct,l2_hit_pct" > "$OUT/ncu-hit-rates.csv"
    for m in $S/GHS_psdef/copter2.mtx.gz $S/HB/bcsstk33.mtx.gz $S/NYPA/Maragal_6.mtx.gz $S/Bai/af23560.mtx.gz $S/Cylshell/s1rmq4m1.mtx.gz $S/Gleich/wb-cs-stanford.mtx.gz poisson3d:100 uniform:1000000,16 powerlaw:1000000,8 kron:18,48; do
      for meth in cb-spmv csr-vector cusparse-alg1; do
        timeout 60 ncu --csv --page raw --metrics gpu__time_duration.sum,l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct \
          --launch-skip 4 --launch-count 4 $B run "$m" --method "$meth" --precision f64 2>/dev/null |
          python3 -c '
import csv, sys
m, meth = sys.argv[1], sys.argv[2]
rows = [r for r in csv.reader(l for l in sys.stdin if l.startswith("\""))]
if not rows: sys.exit()
h = rows[0]
ix = {k: h.index(k) for k in ("Kernel Name", "gpu__time_duration.sum", "l1tex__t_sector_hit_rate.pct", "lts__t_sector_hit_rate.pct") if k in h}
for r in rows[2:]:
    print(",".join([m.split("/")[-1].replace(",", ";"), meth, r[ix["Kernel Name"]].split("(")[0].replace(",", ";")[:60]] + [r[ix[k]].replace(",", "") for k in ("gpu__time_duration.sum", "l1tex__t_sector_hit_rate.pct", "lts__t_sector_hit_rate.pct")]))
' "$m" "$meth" >> "$OUT/ncu-hit-rates.csv"
      done
    done
    wc -l "$OUT/ncu-hit-rates.csv"; head -5 "$OUT/ncu-hit-rates.csv"
    ;;
  *) echo "unknown step $step" >&2; exit 2 ;;
esac
