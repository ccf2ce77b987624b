#!/usr/bin/env python3
"""Builds the training table of the `auto` method from committed benchmark results.

    scripts/auto-table.py > crates/spmvkit/src/methods/auto/table.csv

One row per (matrix, precision) of the runs below, with the matrix features `auto` computes at
run time (spmvkit::matrix::MatrixStats) and, per candidate method, the per-call time (µs, stream
timing) and the preprocessing time (ms, prepare + upload) where the method ran and was verified.
Variants (NAME[...]) and methods whose timed call means something else (cusparse-e2e and
csr-full-overlap include the host-to-device copy) are left out. Commas in matrix names (GEN-SPECs)
become ";" so that the table splits on commas alone.
"""
import csv
import gzip
import io
import sys

RUNS = [
    "docs/results/h200/2026-11-22/shared/results.csv.gz",
    "docs/results/h200/2026-11-22/gpu-large/results.csv",
    "docs/results/h200/2026-11-22/gpu-large-f32/results.csv",
]
SKIP = {"cusparse-e2e", "csr-full-overlap", "csr"}
FEATURES = ["nrows", "ncols", "nnz", "row_len_mean", "row_len_std", "row_len_max", "empty_rows",
            "bandwidth", "fits_l2"]


def read(path):
    if path.endswith(".gz"):
        return list(csv.DictReader(io.TextIOWrapper(gzip.open(path), encoding="utf-8")))
    return list(csv.DictReader(open(path)))


def main():
    rows = []
    for p in RUNS:
        rows += read(p)
    methods = []
    table = {}
    for r in rows:
        m = r["method"]
        if "[" in m or m in SKIP or r["status"] != "ok" or r["backend"] != "gpu":
            continue
        if m not in methods:
            methods.append(m)
        key = (r["matrix"], r["precision"])
        entry = table.setdefault(key, {"features": [r[f] for f in FEATURES], "t": {}})
        prep = float(r["prep_ms"] or 0) + float(r["upload_ms"] or 0)
        entry["t"][m] = (float(r["time_median_us"]), prep)
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["matrix", "precision"] + FEATURES + [f"{m}:{k}" for m in methods for k in ("us", "prep_ms")])
    for (mat, prec), e in table.items():
        cells = []
        for m in methods:
            t = e["t"].get(m)
            cells += [f"{t[0]:.3f}", f"{t[1]:.3f}"] if t else ["", ""]
        out.writerow([mat.replace(",", ";"), prec] + e["features"] + cells)


if __name__ == "__main__":
    main()
