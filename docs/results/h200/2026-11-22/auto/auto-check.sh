#!/usr/bin/env bash
# GPU suite with `auto` registered, then auto against cuSPARSE on the shared suite (f32, f64) and
# gpu-large (f64). In-sample: the model was fitted on these matrices' earlier runs
# (docs/results/auto-model.md has the held-out evaluation).
set -uo pipefail
OUT=$1
B=.gpu/bin/spmv
export SPMVKIT_MATRICES="$PWD/.gpu/matrices"
export SPMVKIT_CACHE_DIR=/tmp/spmvkit-cache
SPMVKIT_REQUIRE_GPU=1 .gpu/run-tests > $OUT/gpu-tests.log 2>&1; echo "run-tests rc=$?"
grep -E "^(test result|FAILED|failures:|    [a-z_:]+$)|panicked" $OUT/gpu-tests.log | grep -v "result: ok" | head -30
mkdir -p /tmp/auto-shared /tmp/auto-large
timeout 150 $B bench --suite shared --methods 'cusparse,auto,auto[calls=1]' --precision f32,f64 --out /tmp/auto-shared 2>&1 | tail -1
timeout 200 $B bench --suite gpu-large --methods 'cusparse,auto' --precision f64 --warmup 1 --reps 5 --samples 3 --out /tmp/auto-large 2>&1 | tail -1
tar czf $OUT/auto.tgz -C /tmp auto-shared auto-large
