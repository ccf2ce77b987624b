#!/usr/bin/env bash
# The Python package's GPU tests and benchmark (issue #23), in two steps:
#
#   scripts/python-gpu.sh pack             here (Rust, network): builds the abi3 wheel into
#                                          .gpu-py/ (ignored; carry it to the GPU machine with
#                                          the working tree) with the commit it was built from
#   scripts/python-gpu.sh run OUT_DIR      on the GPU machine, from the repository root (Python
#                                          with numpy, scipy, pytest, CuPy and PyTorch; no Rust,
#                                          no network): installs the wheel into a temporary
#                                          --target directory, runs every Python test with
#                                          SPMVKIT_REQUIRE_GPU=1 (a missing GPU, CuPy or PyTorch
#                                          fails), then python/bench/gpu_bench.py; the pytest log,
#                                          gpu_bench.json and gpu_bench.md go to OUT_DIR
#
# Environment: PYTHON (default python3); MATRICES (default .gpu/matrices, else ../shared/matrices);
# BENCH_BUDGET seconds for the benchmark (default 200).
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
dir=.gpu-py

case "${1:-}" in
pack)
  command -v maturin >/dev/null || { echo "python-gpu pack: maturin not found (pip install maturin)" >&2; exit 2; }
  rm -rf "$dir" && mkdir -p "$dir"
  maturin build --quiet --release --manifest-path python/Cargo.toml --out "$dir"
  commit=$(git rev-parse HEAD)
  git diff --quiet HEAD -- crates python || commit="$commit+dirty"
  echo "$commit" > "$dir/COMMIT"
  ls -l "$dir"
  echo "python-gpu pack: carry $dir/ ($(du -sh "$dir" | cut -f1)); on the GPU machine: scripts/python-gpu.sh run OUT_DIR"
  ;;
run)
  out=${2:?usage: scripts/python-gpu.sh run OUT_DIR}
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  shopt -s nullglob
  wheels=("$dir"/spmvkit-*.whl)
  if [ "${#wheels[@]}" -ne 1 ]; then
    echo "python-gpu run: expected one wheel in $dir/, found ${#wheels[@]}; build it with 'scripts/python-gpu.sh pack' and carry $dir" >&2
    exit 2
  fi
  site=$(mktemp -d "${TMPDIR:-/tmp}/spmvkit-site.XXXXXX")
  trap 'rm -rf "$site"' EXIT
  echo "== installing ${wheels[0]} into $site"
  if ! "$py" -m pip install --quiet --no-index --no-deps --target "$site" "${wheels[0]}"; then
    # pip refuses a wheel whose platform tag this machine does not list (an older glibc tag
    # than the build host's): the abi3 extension is plain files, so unpack it instead.
    echo "python-gpu run: pip refused the wheel; unpacking it into $site instead" >&2
    "$py" -m zipfile -e "${wheels[0]}" "$site"
  fi
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
  "$py" -c 'import spmvkit, sys; print("spmvkit from", spmvkit.__file__, "on Python", sys.version.split()[0])'
  commit=$(cat "$dir/COMMIT" 2>/dev/null || echo unknown)
  matrices=${MATRICES:-}
  if [ -z "$matrices" ]; then
    for m in .gpu/matrices ../shared/matrices; do
      if [ -d "$m" ]; then matrices=$m; break; fi
    done
  fi
  echo "== pytest (SPMVKIT_REQUIRE_GPU=1), commit $commit"
  status=0
  (cd python && SPMVKIT_REQUIRE_GPU=1 "$py" -m pytest -q -rs -p no:cacheprovider tests) \
    2>&1 | tee "$out/pytest.log" || status=$?
  echo "== doctests"
  "$py" -m pytest -q -p no:cacheprovider --doctest-modules "$site/spmvkit/__init__.py" \
    2>&1 | tee -a "$out/pytest.log" || status=$?
  echo "== benchmark (matrices: ${matrices:-none})"
  "$py" python/bench/gpu_bench.py "$out" --commit "$commit" --budget "${BENCH_BUDGET:-200}" \
    ${matrices:+--matrices "$matrices"} || status=$?
  echo "python-gpu run: outputs in $out (pytest.log, gpu_bench.json, gpu_bench.md); status $status"
  exit "$status"
  ;;
*)
  echo "usage: scripts/python-gpu.sh pack | run OUT_DIR" >&2
  exit 2
  ;;
esac
