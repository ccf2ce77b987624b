# Where the per-call overhead of plan.apply on CuPy arrays goes: the full call, the core call
# with the arguments ready (no Python checks), the Python checks alone, and Rust's own loop.
import time, statistics, sys
import numpy as np, scipy.sparse as sp, cupy as cp, spmvkit
N, S = 400, 9
def per_call(f):
    out = []
    for _ in range(S):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for _ in range(N):
            f()
        out.append((time.perf_counter() - t0) / N * 1e6)
    cp.cuda.Device().synchronize()
    return statistics.median(out)
n = 10000
rng = np.random.default_rng(1)
A = (sp.csr_matrix((rng.standard_normal(8 * n), (np.repeat(np.arange(n), 8), rng.integers(0, n, 8 * n))), shape=(n, n)) + sp.identity(n)).tocsr()
plan = spmvkit.Plan(A, method="csr-vector", backend="gpu")
x, y = cp.ones(n), cp.zeros(n)
core = plan._core
xp, yp = x.data.ptr, y.data.ptr
dev = x.device.id
stream = cp.cuda.get_current_stream(dev).ptr
for _ in range(3):
    r = {}
    r["full plan.apply"] = per_call(lambda: plan.apply(x, y))
    r["core.apply_device (args ready)"] = per_call(lambda: core.apply_device(xp, n, yp, n, dev, stream, 1.0, 0.0))
    r["python checks only"] = per_call(lambda: (plan._cupy_vec(x, n, "x"), plan._cupy_vec(y, n, "y"), x.device.id, cp.cuda.get_current_stream(dev).ptr))
    r["get_current_stream(dev).ptr"] = per_call(lambda: cp.cuda.get_current_stream(dev).ptr)
    e, t = plan._time_apply_device(N * S)
    r["rust apply_device loop (enqueue)"] = e / (N * S) * 1e6
    for k, v in r.items():
        print("%-36s %6.2f us" % (k, v))
    print()
