#!/usr/bin/env python3
"""Per-paper tables for the issue notes, from `spmv bench` results.csv files (one run each).

    scripts/claims-tables.py SECTION results.csv [results.csv ...]

SECTION: fastload, cbspmv, overlap, teb, hbp, peers. Prints markdown. Ratios are geometric means
of t_baseline / t_method over matrices where both ran and were verified, stream timing, per
precision; `n` counts the matrices; `cusparse` is the best of cusparse, cusparse-alg1 and
cusparse-alg2 per matrix, as in the report.
"""
import csv
import collections
import math
import sys


def load(files):
    rows = []
    for f in files:
        rows += list(csv.DictReader(open(f)))
    return rows


def times(rows, prec, ok_only=True):
    t = collections.defaultdict(dict)
    info = {}
    for r in rows:
        if r["precision"] != prec:
            continue
        info[r["matrix"]] = r
        good = r["status"] == "ok" or (not ok_only and r["status"] == "wrong")
        if good and r["time_median_us"]:
            t[r["matrix"]][r["method"]] = (float(r["time_median_us"]), r)
    # `cusparse` as a baseline is the best of the three cuSPARSE entries, as the report has it.
    for m in t:
        best = [t[m][k] for k in ("cusparse", "cusparse-alg1", "cusparse-alg2") if k in t[m]]
        if best:
            t[m]["cusparse"] = min(best, key=lambda v: v[0])
    return t, info


def gm(v):
    return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")


def ratio(t, base, meth, sel=lambda m: True):
    v = [t[m][base][0] / t[m][meth][0] for m in t if sel(m) and base in t[m] and meth in t[m]]
    return gm(v), len(v), (max(v) if v else float("nan"))


def fx(g, n):
    return f"{g:.2f}× (n={n})" if n else "–"


def sel_of(info, kind):
    if kind == "all":
        return lambda m: True
    if kind == "large":
        return lambda m: info[m]["fits_l2"] == "false"
    return lambda m: info[m]["fits_l2"] == "true"


def methods_like(t, prefix):
    out = []
    for m in t:
        for k in t[m]:
            if (k == prefix or k.startswith(prefix + "[")) and k not in out:
                out.append(k)
    return out


def speed_table(rows, methods, bases, precs=("f64",), kinds=("all",)):
    print("| precision | matrices | method | " + " | ".join(f"× over {b}" for b in bases) + " |")
    print("|---|---|---|" + "---|" * len(bases))
    for p in precs:
        t, info = times(rows, p)
        for kind in kinds:
            s = sel_of(info, kind)
            for m in methods:
                cells = [fx(*ratio(t, b, m, s)[:2]) for b in bases]
                if all(c == "–" for c in cells):
                    continue
                print(f"| {p} | {kind} | `{m}` | " + " | ".join(cells) + " |")


def per_matrix(rows, prec, methods, mats=None):
    t, info = times(rows, prec, ok_only=False)
    mats = mats or list(t)
    print("| matrix | nnz | " + " | ".join(f"`{m}` µs" for m in methods) + " |")
    print("|---|---|" + "---|" * len(methods))
    for mat in mats:
        if mat not in t:
            continue
        cells = []
        for m in methods:
            v = t[mat].get(m)
            cells.append(f"{v[0]:.1f}" + ("" if v[1]["status"] == "ok" else "*") if v else "–")
        print(f"| {mat} | {info[mat]['nnz']} | " + " | ".join(cells) + " |")


def main():
    sec, files = sys.argv[1], sys.argv[2:]
    rows = load(files)
    kinds = ("all", "large", "l2")
    if sec == "fastload":
        ms = ["fastload"] + [f"fastload[height={h}]" for h in (2, 4, 8, 16, 32, "unlimited")] + [
            "fastload-atomic", "fastload[fuse=one]"]
        print("Speedup of each variant (Table I heights, Fig. 9 atomic) over cusparse, csc, csr5, tilespmv:\n")
        speed_table(rows, ms, ["cusparse", "csc", "csr5", "tilespmv"], kinds=kinds)
        print("\nFig. 9: `fastload-atomic` time / `fastload` time (optimised adds):\n")
        for p in ("f64", "f32"):
            t, info = times(rows, p)
            for kind in kinds:
                g, n, mx = ratio(t, "fastload-atomic", "fastload", sel_of(info, kind))
                if n:
                    print(f"- {p}, {kind}: {g:.3f}× (n={n}, max {mx:.2f}×)")
        print("\nCost of the honest timing (prologue = y zeroing + x permutation, alone):\n")
        t, info = times(rows, "f64", ok_only=False)
        share = [t[m]["fastload[phase=prologue]"][0] / t[m]["fastload"][0] for m in t
                 if "fastload[phase=prologue]" in t[m] and "fastload" in t[m]]
        big = [t[m]["fastload[phase=prologue]"][0] / t[m]["fastload"][0] for m in t
               if "fastload[phase=prologue]" in t[m] and "fastload" in t[m] and info[m]["fits_l2"] == "false"]
        if share:
            print(f"- f64: prologue / whole call: median {sorted(share)[len(share)//2]:.2f} over {len(share)} matrices; "
                  f"bandwidth-bound ones: {', '.join(f'{v:.2f}' for v in big)}")
    elif sec == "cbspmv":
        ms = methods_like(times(rows, "f64")[0], "cb-spmv")
        speed_table(rows, ms, ["cusparse", "csr-vector", "cusparse-bsr", "tilespmv", "dasp", "merge"], kinds=kinds)
    elif sec == "overlap":
        t, _ = times(rows, "f64")
        ms = methods_like(t, "csr-overlap") + ["csr-full-overlap"]
        speed_table(rows, ms, ["cusparse", "csr-vector", "csr-scalar"], precs=("f32", "f64"), kinds=kinds)
    elif sec == "teb":
        ms = ["teb", "teb-vector"]
        speed_table(rows, ms, ["amf-csr", "pbc", "csr-scalar", "csr5", "cusparse"], precs=("f32", "f64"), kinds=kinds)
    elif sec == "hbp":
        t, _ = times(rows, "f64", ok_only=False)
        ms = ["hbp", "hbp-paper", "2d"] + [m for m in methods_like(t, "hbp") if "[" in m]
        speed_table(rows, ms, ["cusparse", "csr-vector", "2d"], kinds=("all",))
        print()
        per_matrix(rows, "f64", ["cusparse", "csr-vector", "2d", "hbp", "hbp-paper", "hbp[hash=sort]", "hbp[hash=dp]",
                                 "hbp[phase=spmv]", "hbp[phase=combine]"])
    elif sec == "peers":
        speed_table(rows, ["csr5", "tilespmv", "dasp", "cusparse-bsr", "merge"], ["cusparse", "csr5"], precs=("f32", "f64"), kinds=kinds)
    else:
        sys.exit(f"unknown section {sec}")


if __name__ == "__main__":
    main()
