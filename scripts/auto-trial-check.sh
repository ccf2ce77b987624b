#!/usr/bin/env bash
# GPU check of `auto` model and trial modes (issue #11 points 1 and 4): the auto GPU tests, then
# auto (model), auto (trial, with enough calls for the trial to run), deterministic auto and
# cuSPARSE in one run per suite, shared (f32, f64) and gpu-large (f64). In-sample: the model
# was fitted on these matrices' earlier runs; docs/results/auto-model.md has the held-out
# evaluation. Run from the repository root on the GPU machine with the pack unpacked in .gpu.
set -uo pipefail
OUT=$1
B=.gpu/bin/spmv
export SPMVKIT_MATRICES="$PWD/.gpu/matrices"
export SPMVKIT_CACHE_DIR=/tmp/spmvkit-cache
SPMVKIT_REQUIRE_GPU=1 .gpu/run-tests > $OUT/gpu-tests.log 2>&1; echo "run-tests rc=$?"
grep -E "^(test result|FAILED|failures:|    [a-z_:]+$)|panicked" $OUT/gpu-tests.log | grep -v "result: ok" | head -30
METHODS='cusparse,auto,auto[mode=trial;calls=1000000],auto[deterministic=1],auto[mode=trial;calls=1000000;deterministic=1]'
mkdir -p /tmp/auto-trial-shared /tmp/auto-trial-large
timeout 240 $B bench --suite shared --methods "$METHODS" --precision f32,f64 --out /tmp/auto-trial-shared 2>&1 | tail -1
timeout 240 $B bench --suite gpu-large --methods 'cusparse,auto,auto[mode=trial;calls=1000000]' --precision f64 --warmup 1 --reps 5 --samples 3 --out /tmp/auto-trial-large 2>&1 | tail -1
tar czf $OUT/auto-trial.tgz -C /tmp auto-trial-shared auto-trial-large
