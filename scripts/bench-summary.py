#!/usr/bin/env python3
"""Geomean speedup over cusparse (stream and graph, same run) of each method in a bench CSV, where
   `cusparse` is the best of cusparse, cusparse-alg1 and cusparse-alg2 per matrix and timing mode,
   as in the report:
   scripts/bench-summary.py results.csv ...   (per-matrix times too when a run has <= 10 matrices)"""
import collections
import csv
import math
import sys


def geomean(v):
    return math.exp(sum(math.log(s) for s in v) / len(v)) if v else float("nan")


for path in sys.argv[1:]:
    rows = list(csv.DictReader(open(path)))
    ok = [r for r in rows if r["status"] == "ok"]
    cus = {}
    for r in ok:
        if r["method"] not in ("cusparse", "cusparse-alg1", "cusparse-alg2"):
            continue
        best = cus.setdefault(r["matrix"], {"time_median_us": "inf", "graph_median_us": ""})
        if float(r["time_median_us"]) < float(best["time_median_us"]):
            best["time_median_us"] = r["time_median_us"]
        g = r["graph_median_us"]
        if g and (not best["graph_median_us"] or float(g) < float(best["graph_median_us"])):
            best["graph_median_us"] = g
    sp, gp = collections.defaultdict(list), collections.defaultdict(list)
    for r in ok:
        c = cus.get(r["matrix"])
        if c is None:
            continue
        t = float(r["time_median_us"])
        sp[r["method"]].append((r["matrix"].split("/")[-1][:22], t, float(c["time_median_us"]) / t))
        if r["graph_median_us"] and c["graph_median_us"]:
            gp[r["method"]].append(float(c["graph_median_us"]) / float(r["graph_median_us"]))
    print(f"== {path}")
    for m, v in sp.items():
        line = (f"{m:40s} stream {geomean([s for _, _, s in v]):.3f}x graph {geomean(gp[m]):.3f}x "
                f"faster on {sum(s > 1 for _, _, s in v)}/{len(v)}")
        if len(v) <= 10:
            line += "  " + " ".join(f"{n}={t:.1f}us({s:.2f}x)" for n, t, s in v)
        print(line)
    bad = [(r["matrix"], r["method"], r["status"]) for r in rows
           if r["status"] != "ok" and "unsupported" not in r["status"]]
    print("not ok:", bad[:5])
