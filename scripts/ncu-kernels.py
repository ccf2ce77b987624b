#!/usr/bin/env python3
"""Per-kernel medians from `ncu --csv` output (see docs/results/h200/2026-11-25/spmm-floor/).

    scripts/ncu-kernels.py FILE.csv[.gz] ...

Groups the profiled launches by (kernel name, grid, block, registers) in launch order and prints,
per group, the number of launches and the median and minimum of `gpu__time_duration.sum` (ns),
with the median `smsp__inst_executed.sum` and `sm__cycles_active.max` when they were collected.
The CSV must come from `ncu --csv --metrics gpu__time_duration.sum,...`.
"""
import collections
import csv
import gzip
import sys


def groups(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        rows = [r for r in csv.reader(f) if len(r) > 10]
    if not rows:
        raise SystemExit(f"{path}: no ncu CSV rows (was ncu run with --csv?)")
    hdr = rows[0]
    col = {name: hdr.index(name) for name in ("ID", "Kernel Name", "Metric Name", "Metric Value")}
    launches = {}
    for r in rows[1:]:
        key = (int(r[col["ID"]]), r[col["Kernel Name"]][:60])
        launches.setdefault(key, {})[r[col["Metric Name"]]] = r[col["Metric Value"]].replace(",", "")
    out = collections.OrderedDict()
    for (_, name), m in sorted(launches.items()):
        key = (name, m.get("launch__grid_size"), m.get("launch__block_size"),
               m.get("launch__registers_per_thread"))
        out.setdefault(key, []).append(m)
    return out


def median(values):
    values = sorted(values)
    return values[len(values) // 2] if values else float("nan")


def main(paths):
    if not paths:
        raise SystemExit(__doc__)
    for path in paths:
        print(f"== {path}")
        print("launches | kernel | grid | block | regs | median ns | min ns | inst | cycles")
        for (name, grid, block, regs), ms in groups(path).items():
            ns = [float(m["gpu__time_duration.sum"]) for m in ms]
            inst = [float(m["smsp__inst_executed.sum"]) for m in ms if "smsp__inst_executed.sum" in m]
            cyc = [float(m["sm__cycles_active.max"]) for m in ms if "sm__cycles_active.max" in m]
            print(f"{len(ms)} | {name} | {grid} | {block} | {regs} | {median(ns):.0f} | {min(ns):.0f} "
                  f"| {median(inst):.0f} | {median(cyc):.0f}")


if __name__ == "__main__":
    main(sys.argv[1:])
