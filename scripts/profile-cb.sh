#!/usr/bin/env bash
# Nsight Compute profile of one cb-spmv kernel launch (issue #8: where the instructions go):
#   scripts/profile-cb.sh OUT MATRIX TAG KERNEL [spmv run args...]
# Leaves OUT/<tag>.txt (sections) and OUT/<tag>-sass.csv (per-SASS-instruction counts).
set -uo pipefail
OUT=$1; M=$2; TAG=$3; KERNEL=$4; shift 4
B=${B:-.gpu/bin/spmv}
export SPMVKIT_CACHE_DIR=/tmp/spmvkit-cache
timeout 150 ncu -o /tmp/$TAG -f --kernel-name "$KERNEL" --launch-skip 3 --launch-count 1 \
  --section SpeedOfLight --section Occupancy --section WarpStateStats --section InstructionStats \
  --section SourceCounters --section LaunchStats --section MemoryWorkloadAnalysis --import-source no \
  $B run "$M" --precision f64 "$@" > "$OUT/$TAG-run.txt" 2>&1
ncu -i /tmp/$TAG.ncu-rep --print-details all > "$OUT/$TAG.txt" 2>&1
ncu -i /tmp/$TAG.ncu-rep --page source --print-source sass --csv > "$OUT/$TAG-sass.csv" 2>&1
gzip -f "$OUT/$TAG-sass.csv"
grep -E "Duration|Compute \(SM\) Th|DRAM Through|Registers Per|Achieved Occ|Warp Cycles Per Issued|Executed Ipc A|Issue Slots Busy|Executed Instructions " "$OUT/$TAG.txt" | head -20
