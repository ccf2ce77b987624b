#!/usr/bin/env bash
# The GPU test suite on the GPU machine: runs the packed test executables (.gpu/run-tests, built
# here by ../shared/tools/gpu-pack) with every skip logged, then prints how many tests were
# skipped and which, and exits with run-tests' status.
#
#   scripts/run-gpu-tests.sh [TEST-ARGS...]                            one GPU
#   SPMVKIT_REQUIRE_GPUS=2 scripts/run-gpu-tests.sh [TEST-ARGS...]     two GPUs (NCCL tests too)
#
# SPMVKIT_REQUIRE_GPU defaults to 1 here: a missing GPU, libnvrtc or shared test matrix is a
# failure, not a skip. Tests that need more GPUs than SPMVKIT_REQUIRE_GPUS asks for are skipped
# (and listed). TEST-ARGS go to every test binary (e.g. a name filter). Skip lines have the form
# `skipped: <test>: <reason>` (spmvkit::testing).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
runner="$here/.gpu/run-tests"
if [ ! -x "$runner" ]; then
  echo "run-gpu-tests: $runner not found; build it with ../shared/tools/gpu-pack --matrices ../shared/matrices" >&2
  exit 2
fi
export SPMVKIT_REQUIRE_GPU=${SPMVKIT_REQUIRE_GPU:-1}
log=$(mktemp "${TMPDIR:-/tmp}/spmvkit-skips.XXXXXX")
trap 'rm -f "$log"' EXIT
export SPMVKIT_SKIP_LOG="$log"
"$runner" "$@"
rc=$?
echo "skipped tests: $(grep -c '^skipped: ' "$log")"
sort "$log"
exit $rc
