"""The GPU path of the Python package (issue #23) with CuPy and PyTorch, against SciPy.

Every test needs spmvkit's GPU and CuPy or PyTorch with CUDA. Without them the tests are skipped
with the reason (``pytest -rs`` lists them); with ``SPMVKIT_REQUIRE_GPU=1`` a missing GPU, CuPy
or PyTorch is a failure instead, as in the Rust GPU tests.
"""

import os

import numpy as np
import pytest
import scipy.sparse as sp

import spmvkit

REQUIRE = os.environ.get("SPMVKIT_REQUIRE_GPU", "") not in ("", "0")


def _unavailable(reason):
    if REQUIRE:
        pytest.fail(f"SPMVKIT_REQUIRE_GPU=1, but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def gpu():
    """spmvkit's GPU works (a plan on it can be made)."""
    try:
        plan = spmvkit.Plan(sp.identity(4, format="csr"), method="csr-vector", backend="gpu")
    except Exception as e:  # the reason is the library's own message
        _unavailable(f"no GPU for spmvkit: {e}")
    assert plan.backend == "gpu" and plan.device == 0
    return plan.device


@pytest.fixture(scope="module")
def cupy(gpu):
    try:
        import cupy
        import cupyx.scipy.sparse  # noqa: F401
        import cupyx.scipy.sparse.linalg  # noqa: F401

        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        _unavailable(f"CuPy with CUDA is not usable: {e!r}")
    return cupy


@pytest.fixture(scope="module")
def torch(gpu):
    try:
        import torch
    except Exception as e:
        _unavailable(f"PyTorch is not importable: {e!r}")
    if not torch.cuda.is_available():
        _unavailable("PyTorch sees no CUDA device")
    return torch


DTYPES = [np.float32, np.float64]
METHODS = ["auto", "csr-vector", "merge", "cusparse", "csr-packed", "cusparse-bsr",
           "csr-vector[reorder=rcm]", "merge[windows=3]"]


def matrices():
    yield "rect 300x420", sp.random(300, 420, density=0.02, format="csr", random_state=3)
    yield "poisson", sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(1000, 1000), format="csr")
    dense_row = sp.lil_matrix((257, 257))
    dense_row[7, :] = np.linspace(-1, 1, 257)
    dense_row.setdiag(1.0)
    yield "dense row", dense_row.tocsr()


CASES = list(matrices())
# (name, A, method): a reordering needs a square matrix
GRID = [pytest.param(name, A, m, id=f"{name}-{m}") for name, A in CASES for m in METHODS
        if "reorder" not in m or A.shape[0] == A.shape[1]]


def tol(dtype):
    return dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-11)


def square(n=500, seed=5, dtype=np.float64):
    return (sp.random(n, n, density=0.01, format="csr", random_state=seed)
            + sp.identity(n, format="csr")).astype(dtype).tocsr()


# ---- results against SciPy -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,A,method", GRID)
def test_cupy_matches_scipy(cupy, name, A, method, dtype):
    import cupyx.scipy.sparse as csp

    A = A.astype(dtype)
    # a method whose layout is not the CSR arrays needs the matrix on the host: asked for
    native = method.split("[")[0] in spmvkit.device_methods() and "[" not in method
    plan = spmvkit.Plan(csp.csr_matrix(A), method=method, host_copy=not native)
    assert plan.backend == "gpu" and plan.dtype == dtype
    assert plan.built_from_device == native
    rng = np.random.default_rng(11)
    x = rng.standard_normal(A.shape[1]).astype(dtype)
    y0 = rng.standard_normal(A.shape[0]).astype(dtype)
    out = plan @ cupy.asarray(x)
    assert isinstance(out, cupy.ndarray) and out.dtype == dtype
    np.testing.assert_allclose(out.get(), A @ x, **tol(dtype))
    y = cupy.asarray(y0)
    assert plan.apply(cupy.asarray(x), y, alpha=-1.5, beta=0.5) is y
    np.testing.assert_allclose(y.get(), -1.5 * (A @ x) + 0.5 * y0, **tol(dtype))


@pytest.mark.parametrize("fmt", ["csc", "coo"])
def test_cupyx_csc_and_coo_matrices(cupy, fmt):
    import cupyx.scipy.sparse as csp

    A = sp.random(200, 150, density=0.05, format=fmt, random_state=9)
    Ad = {"csc": csp.csc_matrix, "coo": csp.coo_matrix}[fmt](A)
    plan = spmvkit.Plan(Ad, method="csr-vector")
    x = np.linspace(-1, 1, 150)
    np.testing.assert_allclose((plan @ cupy.asarray(x)).get(), A @ x, rtol=1e-12, atol=1e-12)
    assert plan.prep_seconds > 0


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["csr", "coo", "csc"])
@pytest.mark.parametrize("method", ["auto", "csr-vector", "cusparse"])
def test_torch_matches_scipy(torch, method, layout, dtype):
    A = sp.random(400, 300, density=0.02, format="csr", random_state=4).astype(dtype)
    tdt = torch.float32 if dtype == np.float32 else torch.float64
    At = torch.tensor(A.toarray(), dtype=tdt, device="cuda")
    At = {"csr": At.to_sparse_csr, "coo": At.to_sparse, "csc": At.to_sparse_csc}[layout]()
    plan = spmvkit.Plan(At, method=method)
    assert plan.built_from_device
    x = np.random.default_rng(2).standard_normal(300).astype(dtype)
    out = plan @ torch.tensor(x, device="cuda")
    assert isinstance(out, torch.Tensor) and out.is_cuda and out.dtype == tdt
    np.testing.assert_allclose(out.cpu().numpy(), A @ x, **tol(dtype))
    y0 = np.arange(400, dtype=dtype)
    y = torch.tensor(y0, device="cuda")
    assert plan.apply(torch.tensor(x, device="cuda"), y, alpha=2.0, beta=-1.0) is y
    np.testing.assert_allclose(y.cpu().numpy(), 2.0 * (A @ x) - y0, **tol(dtype))


def test_numpy_vectors_on_a_gpu_plan_are_copied(cupy):
    A = square()
    plan = spmvkit.Plan(A, method="csr-vector", backend="gpu")
    x = np.ones(A.shape[1])
    out = plan @ x
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, A @ x, rtol=1e-12)


# ---- zero copy, in place, on the caller's stream ----------------------------------------------


@pytest.mark.parametrize("method", ["auto", "csr-vector", "cusparse", "merge[windows=2]"])
def test_cupy_zero_copy_in_place_and_no_host_round_trip(cupy, method):
    A = square()
    plan = spmvkit.Plan(A, method=method, backend="gpu")
    calls = []
    core = plan._core

    class Spy:
        """Records which door of the core each call takes."""

        def __getattr__(self, name):
            calls.append(name)
            return getattr(core, name)

    plan._core = Spy()
    x = cupy.asarray(np.linspace(-1, 1, A.shape[1]))
    y = cupy.zeros(A.shape[0])
    px, py = x.data.ptr, y.data.ptr
    # Captured into a CUDA graph on a stream of the caller's: a host copy or a synchronisation
    # inside the call would break the capture.
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        plan.apply(x, cupy.zeros(A.shape[0]))  # warm-up outside the capture (CUDA's advice)
        assert calls == ["apply_device"], calls
        calls.clear()
        s.begin_capture()
        out = plan.apply(x, y, alpha=1.0, beta=1.0)
        graph = s.end_capture()
    assert out is y and x.data.ptr == px and y.data.ptr == py
    assert calls == ["apply_device"], calls
    for _ in range(3):
        graph.launch(stream=s)
    s.synchronize()
    np.testing.assert_allclose(y.get(), 3.0 * (A @ x.get()), rtol=1e-12, atol=1e-12)


def test_torch_zero_copy_in_place_and_captured_in_a_torch_graph(torch):
    A = square()
    plan = spmvkit.Plan(A, method="csr-vector", backend="gpu")
    x = torch.linspace(-1, 1, A.shape[1], dtype=torch.float64, device="cuda")
    y = torch.zeros(A.shape[0], dtype=torch.float64, device="cuda")
    px, py = x.data_ptr(), y.data_ptr()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # warm-up on a side stream, as torch.cuda.graph asks
        plan.apply(x, torch.empty_like(y))
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = plan.apply(x, y, alpha=1.0, beta=1.0)
    assert out is y and x.data_ptr() == px and y.data_ptr() == py
    for _ in range(2):
        g.replay()
    torch.cuda.synchronize()
    np.testing.assert_allclose(y.cpu().numpy(), 2.0 * (A @ x.cpu().numpy()), rtol=1e-12)


@pytest.mark.parametrize("method", ["csr-vector", "cusparse", "csr-vector[reorder=rcm]"])
def test_cupy_work_on_a_non_default_stream_is_ordered(cupy, method):
    A = square(2000, seed=8)
    n = A.shape[0]
    plan = spmvkit.Plan(A, method=method, backend="gpu")
    want = np.cos(np.arange(n))
    x = cupy.full(n, np.nan)
    y = cupy.full(n, np.nan)
    big = cupy.ones(1 << 26)
    cupy.cuda.Device().synchronize()
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        for _ in range(8):  # a long job first, so that a call on another stream runs too early
            big *= 1.0000001
        x[...] = cupy.cos(cupy.arange(n, dtype=cupy.float64))
        plan.apply(x, y)
        got = y.get(stream=s)  # copies on s, then waits for s only
    np.testing.assert_allclose(got, A @ want, rtol=1e-12, atol=1e-12)


def test_torch_work_on_a_non_default_stream_is_ordered(torch):
    A = square(2000, seed=8)
    n = A.shape[0]
    plan = spmvkit.Plan(A, method="auto", backend="gpu")
    x = torch.full((n,), float("nan"), dtype=torch.float64, device="cuda")
    y = torch.full((n,), float("nan"), dtype=torch.float64, device="cuda")
    big = torch.ones(1 << 26, device="cuda")
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(8):
            big.mul_(1.0000001)
        x.copy_(torch.cos(torch.arange(n, dtype=torch.float64, device="cuda")))
        plan.apply(x, y)
        got = y.cpu()  # waits for the current stream, s
    np.testing.assert_allclose(got.numpy(), A @ np.cos(np.arange(n)), rtol=1e-12, atol=1e-12)


def test_calls_alternating_between_streams_stay_in_order(cupy):
    A = square(3000, seed=2)
    n = A.shape[0]
    plan = spmvkit.Plan(A, method="csr-vector[reorder=rcm]", backend="gpu")
    streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(2)]
    xs = [cupy.asarray(np.sin(np.arange(n) * (k + 1))) for k in range(6)]
    ys = [cupy.zeros(n) for _ in range(6)]
    cupy.cuda.Device().synchronize()
    for k in range(6):
        with streams[k % 2]:
            plan.apply(xs[k], ys[k])
    cupy.cuda.Device().synchronize()
    for k in range(6):
        np.testing.assert_allclose(ys[k].get(), A @ xs[k].get(), rtol=1e-12, atol=1e-12)


# ---- determinism -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_deterministic_plans_repeat_bit_for_bit(cupy, dtype):
    A = sp.random(5000, 5000, density=0.002, format="csr", random_state=1).astype(dtype)
    plan = spmvkit.Plan(A, method="auto", deterministic=True, backend="gpu")
    assert plan.deterministic
    x = cupy.asarray(np.random.default_rng(3).standard_normal(5000).astype(dtype))
    first = (plan @ x).get()
    for _ in range(5):
        assert np.array_equal((plan @ x).get().view(np.uint8), first.view(np.uint8))
    np.testing.assert_allclose(first, A @ x.get(), **tol(dtype))


# ---- bad input -------------------------------------------------------------------------------


def test_bad_cupy_vectors_are_refused_clearly(cupy):
    A = sp.random(10, 12, density=0.3, format="csr", random_state=1)
    plan = spmvkit.Plan(A, method="csr-vector", backend="gpu")
    with pytest.raises(TypeError, match="dtype float32"):
        plan @ cupy.ones(12, dtype=cupy.float32)
    with pytest.raises(TypeError, match="dtype int32"):
        plan @ cupy.ones(12, dtype=cupy.int32)
    with pytest.raises(ValueError, match="12 entries"):
        plan @ cupy.ones(11)
    with pytest.raises(ValueError, match=r"x must be a 2-D array of shape \(12, k\)"):
        plan @ cupy.ones((11, 3))
    with pytest.raises(ValueError, match="not contiguous"):
        plan @ cupy.ones(24)[::2]
    with pytest.raises(ValueError, match="10 entries"):
        plan.apply(cupy.ones(12), cupy.ones(9))
    with pytest.raises(TypeError, match="CuPy array too"):
        plan.apply(cupy.ones(12), np.ones(10))
    with pytest.raises(TypeError, match="host array"):
        plan.apply(np.ones(12), cupy.ones(10))
    with pytest.raises(ValueError, match="beta != 0 needs y"):
        plan.apply(cupy.ones(12), beta=1.0)
    # The Rust side's own checks (what the Python half cannot see): device, lengths, overlap.
    x, y = cupy.ones(12), cupy.ones(10)
    with pytest.raises(ValueError, match="device 1"):
        plan._core.apply_device(x.data.ptr, 12, y.data.ptr, 10, 1, 0, 1.0, 0.0)
    with pytest.raises(ValueError, match="overlap"):
        plan._core.apply_device(x.data.ptr, 12, x.data.ptr + 8, 10, 0, 0, 1.0, 0.0)
    with pytest.raises(ValueError, match="x must have 12 entries"):
        plan._core.apply_device(x.data.ptr, 13, y.data.ptr, 10, 0, 0, 1.0, 0.0)
    with pytest.raises(ValueError, match="aligned"):
        plan._core.apply_device(x.data.ptr + 1, 12, y.data.ptr, 10, 0, 0, 1.0, 0.0)
    square_plan = spmvkit.Plan(square(50), method="csr-vector", backend="gpu")
    v = cupy.ones(50)
    with pytest.raises(ValueError, match="overlap"):
        square_plan.apply(v, v)
    cpu_plan = spmvkit.Plan(A, method="csr-vector", backend="cpu")
    with pytest.raises(TypeError, match="plan on the GPU"):
        cpu_plan @ cupy.ones(12)


def test_bad_torch_vectors_are_refused_clearly(torch):
    A = sp.random(10, 12, density=0.3, format="csr", random_state=1).astype(np.float32)
    plan = spmvkit.Plan(A, method="csr-vector", backend="gpu")
    assert plan.dtype == np.float32
    cuda = dict(device="cuda")
    with pytest.raises(TypeError, match="torch.float64"):
        plan @ torch.ones(12, dtype=torch.float64, **cuda)
    with pytest.raises(TypeError, match="torch.float16"):
        plan @ torch.ones(12, dtype=torch.float16, **cuda)
    with pytest.raises(ValueError, match="12 entries"):
        plan @ torch.ones(13, **cuda)
    with pytest.raises(ValueError, match=r"x must be a 2-D array of shape \(12, k\)"):
        plan @ torch.ones(13, 2, **cuda)
    with pytest.raises(ValueError, match="not contiguous"):
        plan @ torch.ones(12, 2, **cuda)[:, 0]
    with pytest.raises(TypeError, match="CUDA tensor too"):
        plan.apply(torch.ones(12, **cuda), torch.ones(10))
    with pytest.raises(TypeError, match="dense tensor|layout"):
        spmvkit.Plan(torch.ones(3, 3, **cuda))
    cpu_plan = spmvkit.Plan(A, method="csr-vector", backend="cpu")
    with pytest.raises(TypeError, match="plan on the GPU"):
        cpu_plan @ torch.ones(12, **cuda)
    # a CPU tensor on a CPU plan is a host array
    out = cpu_plan @ torch.ones(12)
    np.testing.assert_allclose(out, A @ np.ones(12, dtype=np.float32), rtol=1e-5)


# ---- solvers and a GNN step --------------------------------------------------------------------


def test_cupyx_cg_converges_on_the_linear_operator(cupy):
    import cupyx.scipy.sparse.linalg as cla

    n = 2000
    A = sp.diags([-1.0, 2.5, -1.0], [-1, 0, 1], shape=(n, n), format="csr")
    plan = spmvkit.Plan(A, method="auto", backend="gpu")
    op = plan.as_linear_operator()
    assert type(op).__module__.startswith("cupyx")
    b = cupy.asarray(A @ np.ones(n))
    x, info = cla.cg(op, b, tol=1e-10) if _cg_takes_tol(cla) else cla.cg(op, b, rtol=1e-10)
    assert info == 0
    np.testing.assert_allclose(x.get(), 1.0, atol=1e-6)
    x, info = cla.gmres(op, b)
    assert info == 0
    np.testing.assert_allclose(x.get(), 1.0, atol=1e-3)
    assert type(plan.as_linear_operator("scipy")).__module__.startswith("scipy")


def _cg_takes_tol(cla):
    import inspect

    return "tol" in inspect.signature(cla.cg).parameters


def test_torch_gnn_propagation_step(torch):
    # Symmetric normalised adjacency of a random graph with self-loops, D^-1/2 (A + I) D^-1/2.
    n, f = 3000, 16
    adj = sp.random(n, n, density=0.002, format="csr", random_state=6)
    adj = ((adj + adj.T) > 0).astype(np.float32) + sp.identity(n, dtype=np.float32)
    d = np.asarray(adj.sum(axis=1)).ravel() ** -0.5
    norm = (sp.diags(d) @ adj @ sp.diags(d)).tocsr().astype(np.float32)
    At = torch.sparse_csr_tensor(
        torch.tensor(norm.indptr, dtype=torch.int64), torch.tensor(norm.indices, dtype=torch.int64),
        torch.tensor(norm.data), size=norm.shape).cuda()
    plan = spmvkit.Plan(At, method="auto", calls=100)
    H = torch.randn(n, f, device="cuda")
    W = torch.randn(f, f, device="cuda")
    XW = H @ W
    step = torch.relu(plan @ XW)  # all f feature columns in one multi-vector call
    ref = torch.relu(torch.sparse.mm(At, XW))
    torch.testing.assert_close(step, ref, rtol=1e-4, atol=1e-4)


def test_update_values_from_device_data(cupy):
    import cupyx.scipy.sparse as csp

    A = square(300)
    Ad = csp.csr_matrix(A)
    plan = spmvkit.Plan(Ad, method="csr-vector")
    Ad.data *= 3.0
    assert plan.update_values(Ad.data) in ("gathered", "reencoded", "reprepared")
    x = cupy.ones(300)
    np.testing.assert_allclose((plan @ x).get(), 3.0 * (A @ np.ones(300)), rtol=1e-12)


# ---- plans from device matrices: no host copy of the structure --------------------------------


class HostCopies:
    """Records the size of every array that CuPy or PyTorch copies to the host while it is
    installed: ``cupy.asnumpy``, ``cupy.ndarray.get`` (when the type takes a patch), the
    ``get`` of cupyx.scipy.sparse matrices, and ``torch.Tensor.cpu/numpy/tolist/to`` (a CUDA
    tensor moved to the CPU)."""

    def __init__(self, monkeypatch, cupy=None, torch=None):
        self.sizes = []
        if cupy is not None:
            import cupyx.scipy.sparse as csp

            self._wrap(monkeypatch, cupy, "asnumpy", lambda a, *k, **kw: a.size)
            if _patchable(cupy.ndarray):  # else an extension type: the matrices' get and
                # asnumpy still record
                self._wrap(monkeypatch, cupy.ndarray, "get", lambda a, *k, **kw: a.size)
            for cls in (csp.csr_matrix, csp.csc_matrix, csp.coo_matrix):
                self._wrap(monkeypatch, cls, "get", lambda m, *k, **kw: m.nnz)
        if torch is not None:
            for name in ("cpu", "numpy", "tolist"):
                self._wrap(monkeypatch, torch.Tensor, name,
                           lambda t, *k, **kw: t.numel() if t.is_cuda else 0)
            orig_to = torch.Tensor.to

            def to(t, *a, **kw):
                out = orig_to(t, *a, **kw)
                if t.is_cuda and not out.is_cuda:
                    self.sizes.append(t.numel())
                return out

            monkeypatch.setattr(torch.Tensor, "to", to)

    def _wrap(self, monkeypatch, owner, name, size_of):
        orig = getattr(owner, name)

        def wrapper(*a, **kw):
            self.sizes.append(size_of(*a, **kw))
            return orig(*a, **kw)

        monkeypatch.setattr(owner, name, wrapper)

    def large(self, n):
        """The recorded copies of at least n elements."""
        return [s for s in self.sizes if s >= n]


def _patchable(cls):
    """Whether attributes of cls can be set (not an extension type)."""
    try:
        cls._spmvkit_probe = 1
        del cls._spmvkit_probe
        return True
    except (TypeError, AttributeError):
        return False


def _cupyx(fmt, A):
    import cupyx.scipy.sparse as csp

    return {"csr": csp.csr_matrix, "csc": csp.csc_matrix, "coo": csp.coo_matrix}[fmt](
        A.asformat(fmt))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("method", ["auto", "csr-vector", "csr-scalar", "cusparse",
                                    "cusparse-alg2", "auto[deterministic=1]"])
def test_cupyx_plans_are_built_on_the_device(cupy, monkeypatch, method, fmt, dtype):
    A = sp.random(700, 500, density=0.01, format="csr", random_state=12).astype(dtype)
    Ad = _cupyx(fmt, A)
    copies = HostCopies(monkeypatch, cupy=cupy)
    plan = spmvkit.Plan(Ad, method=method)
    monkeypatch.undo()
    assert copies.large(100) == [], copies.sizes
    assert plan.built_from_device and plan.dtype == dtype
    assert ("built from", "device arrays (no host copy)") in plan.notes
    if method.startswith("auto"):
        assert plan.method in spmvkit.device_methods()
    if "deterministic" in method:
        assert plan.deterministic
    x = np.random.default_rng(1).standard_normal(500).astype(dtype)
    np.testing.assert_allclose((plan @ cupy.asarray(x)).get(), A @ x, **tol(dtype))
    np.testing.assert_allclose(plan @ x, A @ x, **tol(dtype))  # host vectors: copied, matrix not


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["csr", "coo", "csc"])
def test_torch_plans_are_built_on_the_device(torch, monkeypatch, layout, dtype):
    A = sp.random(600, 450, density=0.01, format="csr", random_state=13).astype(dtype)
    tdt = torch.float32 if dtype == np.float32 else torch.float64
    dense = torch.tensor(A.toarray(), dtype=tdt, device="cuda")
    At = {"csr": dense.to_sparse_csr, "coo": dense.to_sparse, "csc": dense.to_sparse_csc}[layout]()
    copies = HostCopies(monkeypatch, torch=torch)
    plan = spmvkit.Plan(At, method="auto")
    monkeypatch.undo()
    assert copies.large(100) == [], copies.sizes
    assert plan.built_from_device
    x = np.random.default_rng(2).standard_normal(450).astype(dtype)
    out = plan @ torch.tensor(x, device="cuda")
    np.testing.assert_allclose(out.cpu().numpy(), A @ x, **tol(dtype))


def test_the_host_copy_guard_sees_the_host_route(cupy, torch, monkeypatch):
    """The guard of the two tests above trips on the host-copy route (host_copy=True, the route
    every device matrix took before): a test that could not fail would prove nothing."""
    A = sp.random(700, 500, density=0.01, format="csr", random_state=12)
    copies = HostCopies(monkeypatch, cupy=cupy)
    plan = spmvkit.Plan(_cupyx("csr", A), method="csr-vector", host_copy=True)
    monkeypatch.undo()
    assert not plan.built_from_device
    assert copies.large(100), "a host copy of a cupyx matrix went unseen"
    At = torch.tensor(A.toarray(), device="cuda").to_sparse_csr()
    copies = HostCopies(monkeypatch, torch=torch)
    spmvkit.Plan(At, method="csr-vector", host_copy=True)
    monkeypatch.undo()
    assert copies.large(100), "a host copy of a torch tensor went unseen"


def test_device_matrices_unsorted_int64_and_malformed(cupy, torch):
    # unsorted columns with a duplicate, int64 indices: sorted and summed on the device
    indptr = torch.tensor([0, 3, 4], device="cuda")
    indices = torch.tensor([2, 0, 2, 1], device="cuda")
    data = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64, device="cuda")
    plan = spmvkit.Plan((indptr, indices, data, (2, 3)), method="csr-vector")
    assert plan.built_from_device
    want = np.array([[2.0, 0.0, 4.0], [0.0, 4.0, 0.0]]) @ np.array([1.0, 10.0, 100.0])
    np.testing.assert_allclose((plan @ np.array([1.0, 10.0, 100.0])), want)
    # the same as CuPy arrays
    plan = spmvkit.Plan((cupy.asarray(np.array([0, 3, 4], dtype=np.int32)),
                         cupy.asarray(np.array([2, 0, 2, 1], dtype=np.int32)),
                         cupy.asarray(np.array([1.0, 2.0, 3.0, 4.0])), (2, 3)), method="csr-vector")
    assert plan.built_from_device
    np.testing.assert_allclose((plan @ np.array([1.0, 10.0, 100.0])), want)
    # a column out of range: the device check names the row
    bad = cupy.asarray(np.array([0, 5, 1], dtype=np.int32))
    with pytest.raises(ValueError, match="row 0 has a column index >= ncols"):
        spmvkit.Plan((cupy.asarray(np.array([0, 2, 3], dtype=np.int32)), bad,
                      cupy.ones(3), (2, 3)), method="cusparse")
    # 64-bit indices beyond 2^31-1
    with pytest.raises(ValueError, match="32-bit"):
        spmvkit.Plan((torch.tensor([0, 1], device="cuda"),
                      torch.tensor([2**33], device="cuda"),
                      torch.ones(1, dtype=torch.float64, device="cuda"), (1, 3)),
                     method="csr-vector")
    # a method that needs the host: refused, with the way out
    import cupyx.scipy.sparse as csp

    Ad = csp.csr_matrix(square(100))
    with pytest.raises(ValueError, match="host_copy=True"):
        spmvkit.Plan(Ad, method="merge")
    assert not spmvkit.Plan(Ad, method="merge", host_copy=True).built_from_device


def test_update_values_of_a_device_built_plan_stay_on_the_device(cupy, torch, monkeypatch):
    import cupyx.scipy.sparse as csp

    A = square(300)
    Ad = csp.csr_matrix(A)
    plan = spmvkit.Plan(Ad, method="cusparse")
    assert plan.built_from_device
    copies = HostCopies(monkeypatch, cupy=cupy)
    assert plan.update_values(Ad.data * 3.0) == "gathered"
    monkeypatch.undo()
    assert copies.large(100) == [], copies.sizes
    x = cupy.ones(300)
    np.testing.assert_allclose((plan @ x).get(), 3.0 * (A @ np.ones(300)), rtol=1e-12)
    plan.update_values(A.data * 2.0)  # host values go to the device
    np.testing.assert_allclose((plan @ x).get(), 2.0 * (A @ np.ones(300)), rtol=1e-12)
    with pytest.raises(ValueError, match="values for the pattern entries"):
        plan.update_values(cupy.ones(A.nnz + 1))


def test_dlpack_device_vectors_are_used_in_place(cupy, torch):
    class DL:
        """A CUDA array known only through DLPack (as a JAX array would be)."""

        def __init__(self, t):
            self.t = t

        def __dlpack__(self, **kw):
            return self.t.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    A = square(200)
    plan = spmvkit.Plan(A, method="csr-vector", backend="gpu")
    x = torch.linspace(-1, 1, 200, dtype=torch.float64, device="cuda")
    y = torch.ones(200, dtype=torch.float64, device="cuda")
    yd = DL(y)
    assert plan.apply(DL(x), yd, alpha=2.0, beta=-1.0) is yd
    cupy.cuda.get_current_stream().synchronize()
    xh = x.cpu().numpy()
    np.testing.assert_allclose(y.cpu().numpy(), 2.0 * (A @ xh) - 1.0, rtol=1e-12, atol=1e-12)
    out = plan @ DL(x)  # a new y of the library that took x (CuPy)
    assert isinstance(out, cupy.ndarray)
    np.testing.assert_allclose(out.get(), A @ xh, rtol=1e-12, atol=1e-12)


# ---- blocks of vectors (issue #24 item 5) ------------------------------------------------------

BLOCK_METHODS = ["auto", "csr-vector", "merge", "cusparse", "csr-packed", "csr-scalar"]


def _spy(plan):
    """Records which door of the core each call of ``plan`` takes."""
    calls, core = [], plan._core

    class Spy:
        def __getattr__(self, name):
            calls.append(name)
            return getattr(core, name)

    plan._core = Spy()
    return calls


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("k", [1, 3, 33])
@pytest.mark.parametrize("method", BLOCK_METHODS)
def test_cupy_blocks_in_place_on_the_callers_stream(cupy, method, k, order, dtype):
    import cupyx.scipy.sparse as csp

    A = sp.random(300, 420, density=0.02, format="csr", random_state=3).astype(dtype)
    plan = spmvkit.Plan(A, method=method, backend="gpu")
    calls = _spy(plan)
    Ad = csp.csr_matrix(A)
    rng = np.random.default_rng(4)
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        X = cupy.asarray(rng.standard_normal((420, k)).astype(dtype), order=order)
        Y0 = cupy.asarray(rng.standard_normal((300, k)).astype(dtype), order=order)
        Y = Y0.copy(order=order)
        px, py = X.data.ptr, Y.data.ptr
        out = plan.apply(X, Y, alpha=-1.5, beta=0.5)
        new = plan @ X
        ref = -1.5 * (Ad @ X) + 0.5 * Y0
        ref_new = Ad @ X
    s.synchronize()
    assert out is Y and X.data.ptr == px and Y.data.ptr == py
    assert calls == ["apply_multi_device", "apply_multi_device"], calls
    assert new.shape == (300, k) and new.dtype == dtype
    assert new.flags.c_contiguous if order == "C" else new.flags.f_contiguous
    cupy.testing.assert_allclose(Y, ref, **tol(dtype))
    cupy.testing.assert_allclose(new, ref_new, **tol(dtype))
    if method in ("csr-vector", "merge", "cusparse", "csr-packed"):
        assert plan._block_path != "columns (k SpMV calls)", plan._block_path


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("k", [1, 3, 33])
def test_torch_blocks_in_place_on_the_callers_stream(torch, k, order, dtype):
    A = sp.random(300, 420, density=0.02, format="csr", random_state=3).astype(dtype)
    At = torch.sparse_csr_tensor(
        torch.tensor(A.indptr, dtype=torch.int64), torch.tensor(A.indices, dtype=torch.int64),
        torch.tensor(A.data), size=A.shape).cuda()
    plan = spmvkit.Plan(At, method="csr-vector")
    calls = _spy(plan)
    tdt = torch.float32 if dtype == np.float32 else torch.float64

    def dense(n):
        t = torch.randn(n, k, dtype=tdt, device="cuda")
        return t if order == "C" else t.t().contiguous().t()

    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        X, Y0 = dense(420), dense(300)
        Y = Y0.clone()
        px, py = X.data_ptr(), Y.data_ptr()
        out = plan.apply(X, Y, alpha=2.0, beta=-1.0)
        new = plan @ X
        ref = 2.0 * torch.sparse.mm(At, X) - Y0
    torch.cuda.synchronize()
    assert out is Y and X.data_ptr() == px and Y.data_ptr() == py
    assert calls == ["apply_multi_device", "apply_multi_device"], calls
    assert new.shape == (300, k) and new.dtype == tdt
    assert new.is_contiguous() if order == "C" else new.t().is_contiguous()
    torch.testing.assert_close(Y, ref, **tol(dtype))
    torch.testing.assert_close(new, torch.sparse.mm(At, X), **tol(dtype))


def test_numpy_blocks_on_a_gpu_plan_and_cupyx_matmat(cupy):
    A = square(400)
    plan = spmvkit.Plan(A, method="csr-vector", backend="gpu")
    for order in "CF":
        X = np.asarray(np.random.default_rng(2).standard_normal((400, 8)), order=order)
        np.testing.assert_allclose(plan @ X, A @ X, rtol=1e-11, atol=1e-11)
    op = plan.as_linear_operator()
    X = cupy.asarray(np.random.default_rng(3).standard_normal((400, 5)))
    cupy.testing.assert_allclose(op.matmat(X), cupy.asarray(A @ X.get()), rtol=1e-11,
                                 atol=1e-11)


def test_bad_device_blocks_are_refused_clearly(cupy, torch):
    A = sp.random(10, 12, density=0.3, format="csr", random_state=1)
    plan = spmvkit.Plan(A, method="csr-vector", backend="gpu")
    with pytest.raises(TypeError, match="dtype float32"):
        plan @ cupy.ones((12, 3), dtype=cupy.float32)
    with pytest.raises(ValueError, match=r"y must be a 2-D array of shape \(10, 3\)"):
        plan.apply(cupy.ones((12, 3)), cupy.ones((10, 4)))
    with pytest.raises(ValueError, match="not contiguous"):
        plan @ cupy.ones((12, 6))[:, ::2]
    with pytest.raises(ValueError, match="one order"):
        plan.apply(cupy.ones((12, 3)), cupy.ones((10, 3), order="F"))
    with pytest.raises(TypeError, match="host array"):
        plan.apply(np.ones((12, 3)), cupy.ones((10, 3)))
    with pytest.raises(TypeError, match="CuPy array too"):
        plan.apply(cupy.ones((12, 3)), np.ones((10, 3)))
    with pytest.raises(ValueError, match="beta != 0 needs y"):
        plan.apply(cupy.ones((12, 3)), beta=1.0)
    x, y = cupy.ones((12, 3)), cupy.ones((10, 3))
    with pytest.raises(ValueError, match="overlap"):
        plan._core.apply_multi_device((x.data.ptr, 36), (x.data.ptr + 8, 30), 3, "row", 0, 0,
                                      1.0, 0.0)
    with pytest.raises(ValueError, match="X needs 12x3"):
        plan._core.apply_multi_device((x.data.ptr, 35), (y.data.ptr, 30), 3, "row", 0, 0,
                                      1.0, 0.0)
    with pytest.raises(ValueError, match="order"):
        plan._core.apply_multi_device((x.data.ptr, 36), (y.data.ptr, 30), 3, "diag", 0, 0,
                                      1.0, 0.0)
    cuda = dict(device="cuda", dtype=torch.float64)
    with pytest.raises(TypeError, match="torch.float32"):
        plan @ torch.ones(12, 3, device="cuda", dtype=torch.float32)
    with pytest.raises(ValueError, match="not contiguous"):
        plan @ torch.ones(12, 6, **cuda)[:, ::2]
    with pytest.raises(ValueError, match="one order"):
        plan.apply(torch.ones(12, 3, **cuda), torch.ones(3, 10, **cuda).t())
    with pytest.raises(TypeError, match="CUDA tensor too"):
        plan.apply(torch.ones(12, 3, **cuda), torch.ones(10, 3, dtype=torch.float64))
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        plan @ x  # warm-up
        s.begin_capture()
        try:
            with pytest.raises(ValueError, match="CUDA graph"):
                plan.apply(x, y)
        finally:
            s.end_capture()
