#!/usr/bin/env bash
# Steps run on the GPU machine (no Rust toolchain there): build here with
# ../shared/tools/gpu-pack --matrices ../shared/matrices, carry .gpu, then e.g.
#   scripts/device-run.sh tests "$OUT"            # the GPU suite (scripts/run-gpu-tests.sh)
#   scripts/device-run.sh run "$OUT"             # every method on poisson3d:160, kron:20, copter2 (f64)
#   scripts/device-run.sh bench shared "$OUT" 400 --suite shared --precision f32,f64
#   scripts/device-run.sh bench large1 "$OUT" 500 poisson3d:160 kron:21 --precision f64
# Each step leaves one log or one .tgz in the output folder.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
B=.gpu/bin/spmv
export SPMVKIT_MATRICES="$here/.gpu/matrices"
export SPMVKIT_CACHE_DIR=/tmp/spmvkit-cache
step=$1
shift
case "$step" in
  tests)
    out=$1
    nvidia-smi -L
    scripts/run-gpu-tests.sh >"$out/gpu-tests.log" 2>&1
    rc=$?
    grep -E "^(=== |test result|FAILED|failures:|    [a-z_:]+$)" "$out/gpu-tests.log"
    sed -n '/^skipped tests: /,$p' "$out/gpu-tests.log"
    echo "run-tests exit code: $rc"
    exit $rc
    ;;
  run)
    out=$1
    methods=$($B methods --json | python3 -c 'import json,sys; print(" ".join(m["name"] for m in json.load(sys.stdin) if m["gpu"]))')
    for m in poisson3d:160 kron:20 "$SPMVKIT_MATRICES/GHS_psdef/copter2.mtx.gz"; do
      for meth in $methods; do
        $B run "$m" --method "$meth" --precision f64 --json >>"$out/run-f64.jsonl" 2>>"$out/run-f64.err" ||
          echo "{\"matrix\":\"$m\",\"method\":\"$meth\",\"failed\":true}" >>"$out/run-f64.jsonl"
      done
    done
    python3 - "$out/run-f64.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(f"{'matrix':<34} {'method':<18} {'us':>10} {'graph us':>10} {'x cusparse':>10} {'graph x':>8}")
for r in rows:
    if r.get("failed"):
        print(f"{r['matrix'][-34:]:<34} {r['method']:<18} FAILED"); continue
    f = lambda v, w, p: (f"{v:{w}.{p}f}" if isinstance(v, (int, float)) else f"{'-':>{w}}")
    print(f"{r['matrix'][-34:]:<34} {r['method']:<18} {f(r['time_us'],10,2)} {f(r.get('graph_time_us'),10,2)} {f(r.get('speedup_vs_cusparse'),10,3)} {f(r.get('graph_speedup_vs_cusparse'),8,3)}")
PY
    ;;
  bench)
    # bench LABEL OUT SECONDS BENCH-ARGS...: runs `spmv bench BENCH-ARGS` for at most SECONDS and
    # packs whatever it wrote (the run record is saved after every matrix) into OUT/LABEL.tgz.
    label=$1 out=$2 secs=$3
    shift 3
    mkdir -p "/tmp/bench-$label"
    timeout "$secs" $B bench "$@" --out "/tmp/bench-$label" 2>&1 | tail -40
    tar czf "$out/$label.tgz" -C "/tmp/bench-$label" .
    ;;
  *)
    echo "unknown step $step" >&2
    exit 2
    ;;
esac
