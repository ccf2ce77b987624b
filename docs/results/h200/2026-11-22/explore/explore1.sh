#!/usr/bin/env bash
# Exploration run 1 (session 2026-11-22): method variants on four large matrices, f64.
set -uo pipefail
OUT=$1
B=.gpu/bin/spmv
export SPMVKIT_CACHE_DIR=/tmp/spmvkit-cache
nvidia-smi -L
which ncu nsys 2>&1; ls /usr/local/cuda/bin 2>/dev/null | tr '\n' ' '; echo
M='cusparse,fastload,fastload[fuse=two],fastload[permute_x=kernel],fastload[permute_x=kernel;blocks_per_warp=1],fastload[permute_x=kernel;blocks_per_warp=8],fastload[fuse=two;threads=64;blocks_per_warp=1],fastload-atomic,cb-spmv,cb-spmv[accumulate=run;prologue=kernel],cb-spmv[bpw=1],cb-spmv[prologue=kernel],csr-overlap,csr-overlap[long_chunk=4096],csr-overlap[ctas_per_sm=16],csr-overlap[threads=256],hbp,hbp[compete=warp],hbp[hash=sort],hbp[block_cols=16384],hbp[phase=spmv],hbp[phase=combine],teb,merge'
timeout 330 $B bench poisson3d:160 uniform:4000000,16 powerlaw:4000000,8 kron:20,48 --methods "$M" --precision f64 --warmup 1 --reps 10 --samples 3 --max-sample-ms 200 --out /tmp/ex1 2>&1 | tail -5
tar czf $OUT/ex1.tgz -C /tmp/ex1 .
if command -v nsys >/dev/null; then
  cd /tmp && timeout 100 nsys profile -o /tmp/fl --force-overwrite true $OLDPWD/$B run poisson3d:160 --method fastload --param fuse=two --precision f64 >/dev/null 2>&1
  timeout 60 nsys stats --report cuda_gpu_kern_sum /tmp/fl.nsys-rep 2>&1 | head -30
fi
