#!/usr/bin/env bash
# Measurement run 5 (session 2026-11-22, second day): the new launch defaults of fastload
# (fuse=grid / permute_x=auto / hub rows) and cb-spmv (prologue=grid) against the old ones and
# cusparse on the shared suite (f64), the six small matrices of the authors' comparison and four
# large generated ones; then CG and PageRank against the cuSPARSE loop. One .tgz in $OUT.
set -uo pipefail
OUT=$1
B=.gpu/bin/spmv
export SPMVKIT_CACHE_DIR=/tmp/spmvkit-cache
export SPMVKIT_MATRICES=$PWD/.gpu/matrices
mkdir -p /tmp/ex5
nvidia-smi -L
S=.gpu/matrices
M='cusparse,fastload,fastload[fuse=two;permute_x=gather;hub=off;blocks_per_warp=4],fastload[fuse=two],fastload-atomic,cb-spmv,cb-spmv[prologue=kernel]'
timeout 200 $B bench --suite shared --methods "$M" --precision f64 --out /tmp/ex5/shared 2>&1 | tail -2
timeout 120 $B bench poisson3d:160 uniform:4000000,16 powerlaw:4000000,8 kron:20,48 --methods "$M" --precision f64 --warmup 1 --reps 10 --samples 3 --max-sample-ms 200 --out /tmp/ex5/large 2>&1 | tail -1
timeout 100 $B solve cg poisson3d:160 --graph both --compare cusparse > /tmp/ex5/cg-f64.txt 2>&1; tail -4 /tmp/ex5/cg-f64.txt
timeout 60 $B solve cg poisson3d:160 --graph both --compare cusparse --json > /tmp/ex5/cg-f64.json 2>/dev/null
timeout 80 $B pagerank kron:20 --graph both --compare cusparse > /tmp/ex5/pr-f64.txt 2>&1; tail -4 /tmp/ex5/pr-f64.txt
timeout 60 $B pagerank kron:20 --graph both --compare cusparse --json --no-reference > /tmp/ex5/pr-f64.json 2>/dev/null
tar czf $OUT/ex5.tgz -C /tmp ex5
for d in shared large; do python3 - /tmp/ex5/$d/*.csv <<'PY'
import csv, sys, math, collections
rows = list(csv.DictReader(open(sys.argv[1])))
cus = {r['matrix']: float(r['time_median_us']) for r in rows if r['method'] == 'cusparse' and r['status'] == 'ok'}
sp = collections.defaultdict(list)
for r in rows:
    if r['status'] == 'ok' and r['matrix'] in cus:
        sp[r['method']].append(cus[r['matrix']] / float(r['time_median_us']))
for m, v in sp.items():
    print(f"{m:<60} n={len(v):3d} geomean over cusparse {math.exp(sum(map(math.log, v))/len(v)):.3f}")
small = ['copter2','bcsstk33','Maragal_6','af23560','s1rmq4m1','wb-cs-stanford','poisson3d:160','uniform:4000000,16','powerlaw:4000000,8','kron:20,48']
for r in rows:
    if r['matrix'] in small:
        print(f"{r['matrix'][:20]:<20} {r['method']:<58} {r['status']:<6} {float(r['time_median_us'] or 'nan'):9.1f}")
PY
done
