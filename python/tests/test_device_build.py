"""Plans from a matrix on the GPU (issue #23, "nothing on the device is copied to the host")
without a GPU: stand-ins for CuPy arrays and a cupyx.scipy.sparse matrix (NumPy behind them, every
host copy recorded) and for the core's ``from_device``, so that CI checks what the package hands to
Rust (addresses and lengths of 32-bit indices and values of the precision, shape, device, stream,
method) and that the structure never comes to the host on that route; the host-copy route
(``host_copy=True``, the only route before) is seen copying. The real thing runs in test_gpu.py."""

import sys
import types

import numpy as np
import pytest
import scipy.sparse as sp

import spmvkit


class _Device:
    id = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def fake_cupy(copies):
    """CuPy arrays over NumPy arrays: each has its own address; ``get`` records a host copy."""
    cupy = types.ModuleType("cupy")

    class ndarray:
        _next = 1 << 24

        def __init__(self, a):
            self.a = np.asarray(a)
            self.device = _Device()
            self.data = types.SimpleNamespace(ptr=ndarray._next, device=self.device)
            ndarray._next += 1 << 16

        shape = property(lambda self: self.a.shape)
        ndim = property(lambda self: self.a.ndim)
        dtype = property(lambda self: self.a.dtype)
        size = property(lambda self: self.a.size)

        def astype(self, dtype, copy=True):
            if not copy and np.dtype(dtype) == self.a.dtype:
                return self
            return ndarray(self.a.astype(dtype))

        def ravel(self):
            return self

        def get(self, *args, **kw):
            copies.append(self.a.size)
            return self.a.copy()

        def __lt__(self, v):
            return ndarray(self.a < v)

        def __gt__(self, v):
            return ndarray(self.a > v)

        def __or__(self, o):
            return ndarray(self.a | o.a)

        def any(self):
            return bool(self.a.any())  # one scalar

    class _Stream:
        ptr = 0xABC0

    cupy.ndarray = ndarray
    cupy.int32 = np.int32
    cupy.ascontiguousarray = lambda a: a
    cupy.cuda = types.SimpleNamespace(get_current_stream=lambda device=-1: _Stream())
    return cupy


def fake_csr(cupy, A):
    """A cupyx.scipy.sparse.csr_matrix stand-in over a SciPy matrix."""
    A = A.tocsr()

    class csr_matrix:
        def __init__(self, A):
            self.indptr = cupy.ndarray(A.indptr)
            self.indices = cupy.ndarray(A.indices)
            self.data = cupy.ndarray(A.data)
            self.shape = A.shape
            self.nnz = A.nnz

        def tocsr(self):
            return self

        def get(self):
            return sp.csr_matrix(
                (self.data.get(), self.indices.get(), self.indptr.get()), shape=self.shape
            )

        def tocoo(self, copy=False):
            m = self.get().tocoo()
            out = types.SimpleNamespace(
                sum_duplicates=m.sum_duplicates, tocsr=lambda: csr_matrix(m.tocsr())
            )
            return out

    csr_matrix.__module__ = "cupyx.scipy.sparse._csr"
    return csr_matrix(A)


class FakeDeviceCore:
    deterministic = True
    device = 0
    built_from_device = True
    prep_seconds = 0.0


@pytest.fixture
def env(monkeypatch):
    copies, built = [], []
    cupy = fake_cupy(copies)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setattr(spmvkit, "_KINDS", {})
    real = spmvkit._core

    class CorePlan:
        def __new__(cls, *args):
            return real.CorePlan(*args)

        @staticmethod
        def from_device(*args):
            built.append(args)
            if len(built) == 1 and env.unsorted_first:
                raise ValueError("invalid CSR matrix: device arrays: row 0: column indices are "
                                 "not strictly increasing (unsorted or duplicates)")
            return FakeDeviceCore()

    core = types.SimpleNamespace(CorePlan=CorePlan, device_methods=real.device_methods,
                                 methods=real.methods)
    monkeypatch.setattr(spmvkit, "_core", core)
    env = types.SimpleNamespace(cupy=cupy, copies=copies, built=built, unsorted_first=False)
    return env


def matrix(dtype=np.float64):
    return sp.random(40, 30, density=0.2, format="csr", random_state=7).astype(dtype)


def test_the_core_gets_device_addresses_and_nothing_comes_to_the_host(env):
    A = matrix()
    Ad = fake_csr(env.cupy, A)
    plan = spmvkit.Plan(Ad, method="csr-vector")
    assert env.copies == []
    assert plan.built_from_device and plan.shape == (40, 30) and plan.dtype == np.float64
    ((indptr, indices, data, shape, device, stream, method, precision, items),) = env.built
    # int32 indices and float64 values are the matrix's own arrays
    assert indptr == (Ad.indptr.data.ptr, 41)
    assert indices == (Ad.indices.data.ptr, A.nnz)
    assert data == (Ad.data.data.ptr, A.nnz)
    assert (shape, device, stream, method, precision) == ((40, 30), 0, 0xABC0, "csr-vector",
                                                          "f64")
    assert items == []


def test_indices_and_values_are_converted_on_the_device(env):
    A = matrix(np.float32)
    Ad = fake_csr(env.cupy, A)
    Ad.indices = env.cupy.ndarray(A.indices.astype(np.int64))
    plan = spmvkit.Plan(Ad, method="auto", calls=50, precision="f64", deterministic=True)
    assert env.copies == [] and plan.dtype == np.float64
    ((_, indices, data, _, _, _, method, precision, items),) = env.built
    assert indices[0] != Ad.indices.data.ptr and indices[1] == A.nnz  # a new int32 array
    assert data[0] != Ad.data.data.ptr  # float32 -> float64
    assert (method, precision) == ("auto", "f64")
    assert items == ["calls=50", "deterministic=1"]


def test_64_bit_indices_beyond_the_limit_are_refused(env):
    Ad = fake_csr(env.cupy, matrix())
    big = Ad.indices.a.astype(np.int64)
    big[3] = 2**31
    Ad.indices = env.cupy.ndarray(big)
    with pytest.raises(ValueError, match="32-bit"):
        spmvkit.Plan(Ad, method="csr-vector")
    assert env.built == [] and env.copies == []


def test_unsorted_columns_are_sorted_and_summed_then_built_again(env):
    env.unsorted_first = True
    plan = spmvkit.Plan(fake_csr(env.cupy, matrix()), method="cusparse")
    assert plan.built_from_device and len(env.built) == 2


def test_other_methods_need_host_copy_which_copies(env):
    A = matrix()
    Ad = fake_csr(env.cupy, A)
    with pytest.raises(ValueError, match="host_copy=True"):
        spmvkit.Plan(Ad, method="merge")
    assert env.built == [] and env.copies == []
    # the opt-in: the host route, which the recorder sees copying the structure
    plan = spmvkit.Plan(Ad, method="merge", host_copy=True, backend="cpu")
    assert not plan.built_from_device
    assert sorted(env.copies) == sorted([41, A.nnz, A.nnz])
    x = np.linspace(-1, 1, 30)
    np.testing.assert_allclose(plan @ x, A @ x, rtol=1e-12)


def test_device_methods_are_listed():
    assert spmvkit.device_methods() == ["auto", "csr-vector", "csr-scalar", "cusparse",
                                        "cusparse-alg1", "cusparse-alg2"]


def test_a_tuple_of_device_arrays_is_taken_as_it_is(env):
    A = matrix()
    c = env.cupy
    indptr, indices, data = c.ndarray(A.indptr), c.ndarray(A.indices), c.ndarray(A.data)
    plan = spmvkit.Plan((indptr, indices, data, A.shape), method="csr-scalar")
    assert plan.built_from_device and env.copies == []
    ((p, i, d, shape, *_),) = env.built
    assert (p, i, d, shape) == ((indptr.data.ptr, 41), (indices.data.ptr, A.nnz),
                                (data.data.ptr, A.nnz), (40, 30))
    # 64-bit indices are checked before anything narrows them
    big = A.indices.astype(np.int64)
    big[0] = 2**32 + 1
    with pytest.raises(ValueError, match="32-bit"):
        spmvkit.Plan((indptr, c.ndarray(big), data, A.shape), method="csr-scalar")
