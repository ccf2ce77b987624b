#!/usr/bin/env bash
# Multi-GPU runs on nvidia-h200-x2 (issue #12). Build here with gpu-pack, carry .gpu, then
#   scripts/dist-run.sh check "$OUT"     # the GPU suite (incl. 2-GPU NCCL tests), then 2-GPU
#                                        # results against the oracle (β ≠ 0) on shared matrices
#                                        # and kron:22, both exchange strategies
#   scripts/dist-run.sh scaling "$OUT" M...   # strong scaling 1 → 2 GPUs, JSON + text
#   scripts/dist-run.sh solve "$OUT"     # the 2-GPU solver tests, then distributed CG and
#                                        # PageRank on 1 and 2 GPUs (speedup), f64 and f32
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0 here and in every rank).
set -uo pipefail
export NCCL_NVLS_ENABLE=0
B=.gpu/bin/spmv
export SPMVKIT_MATRICES=$PWD/.gpu/matrices
export SPMVKIT_CACHE_DIR=/tmp/spmvkit-cache
step=$1
out=$2
shift 2
nvidia-smi -L
case "$step" in
  suite)
    SPMVKIT_REQUIRE_GPUS=2 timeout 420 scripts/run-gpu-tests.sh >"$out/gpu-tests.log" 2>&1
    echo "run-tests rc=$?"
    grep -E "^(=== |FAILED|failures:|thread .* panicked)|test result" "$out/gpu-tests.log" | grep -v " 0 passed" | head -60
    sed -n '/^skipped tests: /,$p' "$out/gpu-tests.log"
    # cb-spmv's variants on the mid-size bandwidth-bound matrices (the notes' 7.7M-nnz circuit
    # matrix is a 2D grid like poisson2d:1250).
    timeout 100 $B bench poisson2d:1250 uniform:1600000,5 --methods 'cusparse,cb-spmv,cb-spmv[bpw=1],cb-spmv[bpw=8],cb-spmv[gather=off],cb-spmv[gather=on],cb-spmv[accumulate=block],cb-spmv[format=off],fastload[permute_x=gather],fastload[blocks_per_warp=8]' --precision f64 --out /tmp/mid2 2>&1 | tail -1
    tar czf "$out/mid2.tgz" -C /tmp mid2
    python3 - /tmp/mid2/results.csv <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(f"{r['matrix']:<20} {r['method']:<32} {r['status']:<5} {float(r['time_median_us']):8.1f}")
PY
    ;;
  check)
    SPMVKIT_REQUIRE_GPUS=2 timeout 420 scripts/run-gpu-tests.sh >"$out/gpu-tests.log" 2>&1
    echo "run-tests rc=$?"
    grep -E "^(=== |FAILED|failures:|thread .* panicked)|test result" "$out/gpu-tests.log" | grep -v " 0 passed" | head -60
    sed -n '/^skipped tests: /,$p' "$out/gpu-tests.log"
    for m in $(ls $SPMVKIT_MATRICES/*/*.mtx.gz | awk 'NR % 8 == 1') kron:22; do
      for s in halo allgather; do
        timeout 60 $B dist run "$m" --gpus 2 --strategy $s --beta -0.75 --reps 5 --samples 3 --json >>"$out/dist-check.jsonl" 2>>"$out/dist-check.err" ||
          echo "FAIL $m $s" | tee -a "$out/dist-check.err"
      done
    done
    echo "dist checks: $(wc -l <"$out/dist-check.jsonl") results"; grep -c FAIL "$out/dist-check.err"; tail -5 "$out/dist-check.err"
    # 7.7M-nnz bandwidth-bound matrices like the notes' circuit matrix (G3_circuit is a 2D grid
    # of 1.58M rows): fastload and cb-spmv against cusparse, one GPU.
    timeout 120 $B bench poisson2d:1250 uniform:1600000,5 --methods cusparse,fastload,cb-spmv --precision f64 --out /tmp/mid 2>&1 | tail -1
    tar czf "$out/mid.tgz" -C /tmp mid
    grep -A12 "stream timing" /tmp/mid/summary.md | head -14
    # auto (#11) in both modes against cusparse on the shared suite, f64 (in-sample: the model
    # was fitted on these matrices; the held-out figures are auto_eval's).
    timeout 150 $B bench --suite shared --methods 'cusparse,auto,auto[mode=trial;calls=1000000],auto[deterministic=1]' --precision f64 --out /tmp/auto 2>&1 | tail -1
    tar czf "$out/auto.tgz" -C /tmp auto
    grep -A10 "stream timing" /tmp/auto/summary.md | head -12
    ;;
  solve)
    # Distributed CG and PageRank, 1 and 2 ranks (the GPU suite's dist-test runs the 2-rank
    # solver checks); f64 as JSON, f32 as text.
    timeout 240 $B dist solve cg poisson3d:160 --gpus 1,2 --json >"$out/dist-cg.json" 2>>"$out/dist-solve.err"
    echo "cg f64 rc=$?"
    timeout 200 $B dist pagerank kron:20 --gpus 1,2 --json >"$out/dist-pagerank.json" 2>>"$out/dist-solve.err"
    echo "pagerank f64 rc=$?"
    timeout 100 $B dist pagerank kron:20 --gpus 1,2 --precision f32 2>&1 | tee -a "$out/dist-solve.txt" | tail -4
    timeout 100 $B dist pagerank kron:20 --gpus 1,2 --check-every 1 2>&1 | tee -a "$out/dist-solve.txt" | tail -4
    timeout 100 $B dist solve cg poisson3d:160 --gpus 1,2 --check-every 1 --no-reference 2>&1 | tee -a "$out/dist-solve.txt" | tail -4
    tail -5 "$out/dist-solve.err"
    python3 -c 'import json,sys; [print(json.dumps(json.load(open(f)))[:1800]) for f in sys.argv[1:]]' "$out/dist-cg.json" "$out/dist-pagerank.json"
    ;;
  diag)
    # Where the 2-rank solver loop loses time: the SpMV alone, then CG with another method and
    # the other exchange.
    timeout 60 $B dist scaling poisson3d:160 --gpus 1,2 2>&1 | tail -4
    timeout 60 $B dist solve cg poisson3d:160 --gpus 2 --method csr-vector --no-reference 2>&1 | tail -3
    timeout 60 $B dist solve cg poisson3d:160 --gpus 2 --strategy allgather --no-reference 2>&1 | tail -3
    ;;
  scaling)
    # One matrix at a time, so that a slow one cannot take the others' results with it.
    for m in "$@"; do
      t0=$(date +%s)
      timeout 250 $B dist scaling "$m" --gpus 1,2 --json >>"$out/scaling.json" 2>>"$out/scaling.err"
      echo "scaling $m rc=$? $(( $(date +%s) - t0 )) s"
    done
    tail -5 "$out/scaling.err"
    python3 - "$out/scaling.json" <<'PY'
import json, sys
txt = open(sys.argv[1]).read()
dec, i = json.JSONDecoder(), 0
while i < len(txt):
    while i < len(txt) and txt[i].isspace():
        i += 1
    if i >= len(txt):
        break
    o, i = dec.raw_decode(txt, i)
    print(json.dumps(o)[:1500])
PY
    ;;
esac
