#!/usr/bin/env python3
"""spmvkit from Python on the GPU (issue #23, item 5): per-call overhead and the shared suite.

  python gpu_bench.py OUT_DIR [--matrices DIR] [--commit SHA] [--budget SECONDS]

(a) Per-call overhead on small matrices (1k-100k rows): N calls of ``plan.apply(x, y)`` on
    CuPy arrays and on PyTorch CUDA tensors from a Python loop, then one synchronisation, wall
    clock per call (the loop alone: "enqueue"; with the synchronisation: "total"), against the
    same N calls of the Rust ``Plan::apply_device`` looped inside Rust (``_time_apply_device``,
    internal), median of 9 samples. The overhead is Python minus Rust.
(b) The shared suite (Matrix Market files under --matrices): spmvkit ``auto`` (``plan.apply``
    on CuPy arrays), cupyx ``csr_matrix @ x`` and PyTorch sparse CSR ``A @ x``, each timed the
    same way: CUDA events around N back-to-back calls from Python on the library's current
    stream after warm-up, median of 5 samples; every result checked against SciPy in float64.
    Per matrix: microseconds per call and the ratios; geomeans of cupyx/spmvkit and
    torch/spmvkit (above 1: spmvkit is faster).

Writes OUT_DIR/gpu_bench.json and OUT_DIR/gpu_bench.md and prints the table. Needs CuPy and
PyTorch with CUDA, SciPy, and the spmvkit wheel; the whole run stays within --budget seconds
(default 200): matrices left when it runs out are listed as not run.
"""

import argparse
import json
import math
import pathlib
import platform
import subprocess
import sys
import time

import numpy as np
import scipy.sparse as sp

import spmvkit

OVERHEAD_N, OVERHEAD_SAMPLES = 200, 9
SUITE_WARMUP, SUITE_N, SUITE_SAMPLES = 10, 50, 5


def median(v):
    return float(np.median(np.asarray(v, dtype=float)))


def geomean(v):
    v = [x for x in v if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def commit(arg):
    if arg:
        return arg
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except Exception:
        return "unknown"


def check(name, got, A64, x64, dtype):
    """got (host) against SciPy's float64 product of the same (rounded) A and x, per row:
    |err| <= 16·sqrt(len_i + 2)·eps·(|A||x|)_i, eps of the precision computed in."""
    ref = A64 @ x64
    scale = abs(A64) @ abs(x64)
    lens = np.diff(A64.indptr)
    eps = np.finfo(dtype).eps
    bound = 16.0 * np.sqrt(lens + 2.0) * eps * scale + 1e-300
    err = np.abs(got.astype(np.float64) - ref)
    bad = np.flatnonzero(~(err <= bound))
    if bad.size:
        i = int(bad[0])
        raise AssertionError(f"{name}: row {i} off by {err[i]:.3g} (bound {bound[i]:.3g}), "
                             f"{bad.size} rows wrong")


# ---- (a) per-call overhead -------------------------------------------------------------------


def host_loop(call, sync, n):
    """(enqueue seconds, total seconds) of n calls then one synchronisation."""
    t0 = time.perf_counter()
    for _ in range(n):
        call()
    t1 = time.perf_counter()
    sync()
    return t1 - t0, time.perf_counter() - t0


def overhead(cp, torch):
    rows = []
    for n in (1_000, 10_000, 100_000):
        # eight random columns a row plus the diagonal (scipy.sparse.random draws from all n²
        # positions, which takes minutes at n = 100,000)
        rng = np.random.default_rng(n)
        ri = np.repeat(np.arange(n), 8)
        ci = rng.integers(0, n, size=8 * n)
        A = (sp.csr_matrix((rng.standard_normal(8 * n), (ri, ci)), shape=(n, n))
             + sp.identity(n, format="csr")).tocsr()
        for method in ("csr-vector", "auto"):
            plan = spmvkit.Plan(A, method=method, backend="gpu")
            xc, yc = cp.ones(n), cp.zeros(n)
            xt = torch.ones(n, dtype=torch.float64, device="cuda")
            yt = torch.zeros(n, dtype=torch.float64, device="cuda")
            sync_c = cp.cuda.Device().synchronize
            sync_t = torch.cuda.synchronize
            calls = {
                "rust": None,
                "cupy": (lambda: plan.apply(xc, yc), sync_c),
                "torch": (lambda: plan.apply(xt, yt), sync_t),
            }
            samples = {k: ([], []) for k in calls}
            for k, c in calls.items():  # warm-up
                if c is None:
                    plan._time_apply_device(20)
                else:
                    host_loop(c[0], c[1], 20)
            for _ in range(OVERHEAD_SAMPLES):
                for k, c in calls.items():
                    e, t = (plan._time_apply_device(OVERHEAD_N) if c is None
                            else host_loop(c[0], c[1], OVERHEAD_N))
                    samples[k][0].append(e / OVERHEAD_N * 1e6)
                    samples[k][1].append(t / OVERHEAD_N * 1e6)
            check(f"overhead n={n} {method} (cupy)", yc.get(), A, np.ones(n), np.float64)
            check(f"overhead n={n} {method} (torch)", yt.cpu().numpy(), A, np.ones(n),
                  np.float64)
            row = {"rows": n, "nnz": int(A.nnz), "method": plan.method}
            for k, (e, t) in samples.items():
                row[f"{k}_enqueue_us"] = median(e)
                row[f"{k}_total_us"] = median(t)
            for k in ("cupy", "torch"):
                row[f"{k}_overhead_enqueue_us"] = row[f"{k}_enqueue_us"] - row["rust_enqueue_us"]
                row[f"{k}_overhead_total_us"] = row[f"{k}_total_us"] - row["rust_total_us"]
            rows.append(row)
            print(f"overhead {n:>7} rows {plan.method:<12} rust {row['rust_enqueue_us']:6.2f}"
                  f"/{row['rust_total_us']:6.2f} µs  cupy +{row['cupy_overhead_enqueue_us']:5.2f}"
                  f"/+{row['cupy_overhead_total_us']:5.2f}  torch "
                  f"+{row['torch_overhead_enqueue_us']:5.2f}/+{row['torch_overhead_total_us']:5.2f}"
                  " (enqueue/total)", flush=True)
    return rows


# ---- (b) the shared suite --------------------------------------------------------------------


def event_time(make_event, record, elapsed_ms, call, sync):
    """Median µs per call: SUITE_SAMPLES samples of SUITE_N calls between two events."""
    for _ in range(SUITE_WARMUP):
        call()
    sync()
    out = []
    for _ in range(SUITE_SAMPLES):
        a, b = make_event(), make_event()
        record(a)
        for _ in range(SUITE_N):
            call()
        record(b)
        sync()
        out.append(elapsed_ms(a, b) * 1e3 / SUITE_N)
    return median(out)


def suite(cp, csp, torch, files, dtype, deadline):
    rows, not_run = [], []
    tdt = torch.float32 if dtype == np.float32 else torch.float64
    cupy_time = dict(
        make_event=cp.cuda.Event, record=lambda e: e.record(),
        elapsed_ms=lambda a, b: cp.cuda.get_elapsed_time(a, b),
        sync=cp.cuda.get_current_stream().synchronize)
    torch_time = dict(
        make_event=lambda: torch.cuda.Event(enable_timing=True), record=lambda e: e.record(),
        elapsed_ms=lambda a, b: a.elapsed_time(b), sync=torch.cuda.synchronize)
    for f in files:
        name = str(f.relative_to(f.parents[1])).removesuffix(".mtx.gz").removesuffix(".mtx")
        if time.perf_counter() > deadline:
            not_run.append(name)
            continue
        try:
            A64 = spmvkit.load(f)
        except Exception as e:  # complex or otherwise unsupported files
            print(f"suite {name}: not loaded: {e}", flush=True)
            not_run.append(f"{name} (not loaded: {str(e).splitlines()[0][:80]})")
            continue
        if A64.nnz == 0 or min(A64.shape) == 0:
            not_run.append(f"{name} (empty)")
            continue
        A = A64.astype(dtype)
        x = np.cos(np.arange(A.shape[1], dtype=np.float64)).astype(dtype)
        # the reference: SciPy in float64 on the values as rounded to the precision measured
        A64, x64 = A.astype(np.float64), x.astype(np.float64)
        row = {"matrix": name, "rows": A.shape[0], "cols": A.shape[1], "nnz": int(A.nnz)}
        try:
            t0 = time.perf_counter()
            plan = spmvkit.Plan(A, method="auto", calls=1000, backend="gpu")
            row["spmvkit_plan_s"] = time.perf_counter() - t0
            row["method"] = plan.method
            xc = cp.asarray(x)
            yc = cp.zeros(A.shape[0], dtype=dtype)
            row["spmvkit_us"] = event_time(call=lambda: plan.apply(xc, yc), **cupy_time)
            check(f"{name} spmvkit", yc.get(), A64, x64, dtype)
            Ac = csp.csr_matrix(A)
            out = {}

            def cupyx_call():
                out["y"] = Ac @ xc
            row["cupyx_us"] = event_time(call=cupyx_call, **cupy_time)
            check(f"{name} cupyx", out["y"].get(), A64, x64, dtype)
            # the plan built from the cupyx matrix on the device (no host copy; auto's trial
            # among the device-native methods)
            t0 = time.perf_counter()
            dplan = spmvkit.Plan(Ac, method="auto", calls=1000)
            row["device_plan_s"] = time.perf_counter() - t0
            row["device_method"] = dplan.method
            row["device_us"] = event_time(call=lambda: dplan.apply(xc, yc), **cupy_time)
            check(f"{name} spmvkit from device", yc.get(), A64, x64, dtype)
            del dplan
            At = torch.sparse_csr_tensor(
                torch.from_numpy(A.indptr.astype(np.int64)),
                torch.from_numpy(A.indices.astype(np.int64)),
                torch.from_numpy(A.data), size=A.shape, dtype=tdt).cuda()
            xt = torch.from_numpy(x).cuda()

            def torch_call():
                out["t"] = At @ xt
            row["torch_us"] = event_time(call=torch_call, **torch_time)
            check(f"{name} torch", out["t"].cpu().numpy(), A64, x64, dtype)
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {e}"
            print(f"suite {name}: {row['error']}", flush=True)
            rows.append(row)
            continue
        row["cupyx_over_spmvkit"] = row["cupyx_us"] / row["spmvkit_us"]
        row["torch_over_spmvkit"] = row["torch_us"] / row["spmvkit_us"]
        rows.append(row)
        print(f"suite {np.dtype(dtype).name} {name:<32} {row['method']:<14} spmvkit "
              f"{row['spmvkit_us']:8.2f} µs  cupyx {row['cupyx_us']:8.2f} "
              f"({row['cupyx_over_spmvkit']:.2f}x)  torch {row['torch_us']:8.2f} "
              f"({row['torch_over_spmvkit']:.2f}x)  from device {row['device_method']} "
              f"{row['device_us']:8.2f} µs (plan {row['device_plan_s']:.3f} s, host route "
              f"{row['spmvkit_plan_s']:.3f} s)", flush=True)
    return rows, not_run


# ---- the report ------------------------------------------------------------------------------


def markdown(meta, over, suites):
    out = [f"# spmvkit from Python on {meta['gpu']}", "",
           f"Commit `{meta['commit']}`; spmvkit {meta['spmvkit']}, CuPy {meta['cupy']}, "
           f"PyTorch {meta['torch']}, Python {meta['python']}. `python/bench/gpu_bench.py`.", "",
           "## (a) Per-call overhead of the Python binding over the Rust `Plan::apply_device`",
           "",
           f"{OVERHEAD_N} calls in a loop, then one synchronisation; µs per call, median of "
           f"{OVERHEAD_SAMPLES} samples, float64. Enqueue: the loop alone; total: with the "
           "synchronisation. Overhead: Python minus Rust.", "",
           "| rows | nnz | method | Rust enqueue | Rust total | CuPy enqueue | CuPy total "
           "| torch enqueue | torch total | CuPy overhead (enq/total) "
           "| torch overhead (enq/total) |",
           "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in over:
        out.append(
            f"| {r['rows']} | {r['nnz']} | {r['method']} | {r['rust_enqueue_us']:.2f} | "
            f"{r['rust_total_us']:.2f} | {r['cupy_enqueue_us']:.2f} | {r['cupy_total_us']:.2f} "
            f"| {r['torch_enqueue_us']:.2f} | {r['torch_total_us']:.2f} | "
            f"{r['cupy_overhead_enqueue_us']:+.2f} / {r['cupy_overhead_total_us']:+.2f} | "
            f"{r['torch_overhead_enqueue_us']:+.2f} / {r['torch_overhead_total_us']:+.2f} |")
    if over:
        worst = max(max(r["cupy_overhead_enqueue_us"], r["torch_overhead_enqueue_us"])
                    for r in over)
        out += ["", f"Largest overhead (enqueue): {worst:.2f} µs per call (goal: at most 5)."]
    for dtype, (rows, not_run) in suites.items():
        ok = [r for r in rows if "error" not in r]
        gc = geomean([r["cupyx_over_spmvkit"] for r in ok])
        gt = geomean([r["torch_over_spmvkit"] for r in ok])
        out += ["", f"## (b) The shared suite, {dtype}: spmvkit `auto` against cupyx and PyTorch",
                "",
                f"CUDA events around {SUITE_N} back-to-back calls from Python on the current "
                f"stream after {SUITE_WARMUP} warm-up calls, median of {SUITE_SAMPLES} samples; "
                "µs per call; every result checked against SciPy (float64). Ratios above 1: "
                "spmvkit is faster.", "",
                f"**Geomean over {len(ok)} matrices: cupyx/spmvkit {gc:.2f}x, "
                f"torch/spmvkit {gt:.2f}x.**", "",
                "| matrix | rows | nnz | auto chose | spmvkit µs | cupyx µs | torch µs "
                "| cupyx/spmvkit | torch/spmvkit |",
                "|---|---:|---:|---|---:|---:|---:|---:|---:|"]
        for r in rows:
            if "error" in r:
                out.append(f"| {r['matrix']} | {r['rows']} | {r['nnz']} | error: "
                           f"{r['error'][:100]} | | | | | |")
                continue
            out.append(f"| {r['matrix']} | {r['rows']} | {r['nnz']} | {r['method']} | "
                       f"{r['spmvkit_us']:.2f} | {r['cupyx_us']:.2f} | {r['torch_us']:.2f} | "
                       f"{r['cupyx_over_spmvkit']:.2f} | {r['torch_over_spmvkit']:.2f} |")
        if not_run:
            out += ["", f"Not run ({len(not_run)}): " + ", ".join(not_run)]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=pathlib.Path, help="directory for gpu_bench.json and .md")
    ap.add_argument("--matrices", type=pathlib.Path, default=None,
                    help="Matrix Market files (default: .gpu/matrices, else ../shared/matrices)")
    ap.add_argument("--commit", default=None, help="the commit measured (default: git)")
    ap.add_argument("--budget", type=float, default=200.0,
                    help="seconds for the whole run (default 200)")
    ap.add_argument("--precisions", default="f64,f32", help="suite precisions (default f64,f32)")
    args = ap.parse_args()
    start = time.perf_counter()

    import cupy as cp
    import cupyx.scipy.sparse as csp
    import torch

    args.out.mkdir(parents=True, exist_ok=True)
    mdir = args.matrices
    if mdir is None:
        mdir = next((p for p in (pathlib.Path(".gpu/matrices"), pathlib.Path("../shared/matrices"))
                     if p.is_dir()), None)
    files = sorted(mdir.rglob("*.mtx*")) if mdir is not None and mdir.is_dir() else []
    meta = {
        "gpu": torch.cuda.get_device_name(0),
        "commit": commit(args.commit),
        "spmvkit": getattr(spmvkit, "__version__", "0.1.0"),
        "cupy": cp.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "matrices": str(mdir),
    }
    print(f"GPU: {meta['gpu']}  commit: {meta['commit']}  matrices: {mdir} ({len(files)} files)",
          flush=True)
    over = overhead(cp, torch)
    suites = {}
    precisions = [p.strip() for p in args.precisions.split(",") if p.strip()]
    for i, p in enumerate(precisions):
        dtype = {"f32": np.float32, "f64": np.float64}[p]
        # the remaining budget shared by the precisions still to run
        left = args.budget - (time.perf_counter() - start)
        deadline = time.perf_counter() + left / (len(precisions) - i)
        suites[p] = suite(cp, csp, torch, files, dtype, deadline)
    meta["seconds"] = time.perf_counter() - start
    report = {"meta": meta, "overhead": over,
              "suite": {p: {"rows": r, "not_run": n} for p, (r, n) in suites.items()}}
    (args.out / "gpu_bench.json").write_text(json.dumps(report, indent=1))
    md = markdown(meta, over, suites)
    (args.out / "gpu_bench.md").write_text(md)
    print()
    print(md)
    errors = sum(1 for rows, _ in suites.values() for r in rows if "error" in r)
    print(f"gpu_bench: {meta['seconds']:.0f} s, {errors} matrices with errors; wrote "
          f"{args.out / 'gpu_bench.json'} and {args.out / 'gpu_bench.md'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
