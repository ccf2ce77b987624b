"""The Python half of the device path (issue #23) without a GPU: a stand-in for CuPy (the array
metadata the package reads) and a stand-in for the core's ``apply_device``, so that CI checks what
the package hands to Rust (addresses, lengths, device, stream, alpha, beta), that y is written in
place or allocated by the array's library, and that bad arrays are refused before Rust is reached.
The real thing runs in test_gpu.py on the GPU machine."""

import sys
import types

import numpy as np
import pytest
import scipy.sparse as sp

import spmvkit


class _Device:
    def __init__(self, i):
        self.id = i

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Flags:
    def __init__(self, c, f=False):
        self.c_contiguous = c
        self.f_contiguous = f


class _Mem:
    def __init__(self, ptr, device_id=0):
        self.ptr = ptr
        self.device_id = device_id


def fake_cupy():
    """A module with just what spmvkit reads from CuPy arrays and streams."""
    cupy = types.ModuleType("cupy")
    made = []

    class ndarray:
        _next = 1 << 20

        def __init__(self, shape, dtype=np.float64, device=0, contiguous=True, order="C"):
            self.shape = tuple(shape)
            self.ndim = len(self.shape)
            self.size = int(np.prod(self.shape))
            self.dtype = np.dtype(dtype)
            self.strides = (self.dtype.itemsize if contiguous else 2 * self.dtype.itemsize,)
            # a block of one vector or one row is both C- and Fortran-contiguous
            trivial = self.ndim < 2 or 1 in self.shape
            self.flags = _Flags(contiguous and (order == "C" or trivial),
                                contiguous and (order == "F" or trivial))
            self.device = _Device(device)
            self.data = _Mem(ndarray._next, device)
            ndarray._next += 1 << 16

    def empty(n, dtype, order="C"):
        a = ndarray((n,) if isinstance(n, int) else n, dtype, order=order)
        made.append(a)
        return a

    class _Stream:
        ptr = 0xABC0

    cupy.ndarray = ndarray
    cupy.empty = empty
    cupy.cuda = types.SimpleNamespace(get_current_stream=lambda device=-1: _Stream())
    cupy.made = made
    return cupy


class FakeCore:
    """Records apply_device calls; everything else goes to the real core."""

    def __init__(self, core):
        self.core, self.calls = core, []

    def apply_device(self, *args):
        self.calls.append(args)

    def apply_multi_device(self, *args):
        self.calls.append(("multi",) + args)
        return "row-split"

    def __getattr__(self, name):
        return getattr(self.core, name)


@pytest.fixture
def cupy(monkeypatch):
    fake = fake_cupy()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(spmvkit, "_KINDS", {})
    return fake


def plan_of(A, **kw):
    plan = spmvkit.Plan(A, method="csr", backend="cpu", **kw)
    plan._core = FakeCore(plan._core)
    return plan


def test_the_core_gets_addresses_lengths_device_and_stream(cupy):
    plan = plan_of(sp.random(10, 12, density=0.3, format="csr", random_state=1))
    x, y = cupy.ndarray((12,)), cupy.ndarray((10,))
    assert plan.apply(x, y, alpha=2.0, beta=-1.0) is y
    assert plan._core.calls == [(x.data.ptr, 12, y.data.ptr, 10, 0, 0xABC0, 2.0, -1.0)]
    out = plan @ x
    assert out is cupy.made[-1] and out.shape == (10,) and out.dtype == np.float64
    assert plan._core.calls[-1] == (x.data.ptr, 12, out.data.ptr, 10, 0, 0xABC0, 1.0, 0.0)


def test_an_f32_plan_takes_float32_only(cupy):
    A = sp.random(5, 4, density=0.5, format="csr", random_state=2).astype(np.float32)
    plan = plan_of(A)
    assert plan.dtype == np.float32
    plan @ cupy.ndarray((4,), np.float32)
    with pytest.raises(TypeError, match="dtype float64"):
        plan @ cupy.ndarray((4,), np.float64)
    assert len(plan._core.calls) == 1


def test_the_second_call_takes_the_fast_path_with_the_same_arguments(cupy):
    plan = plan_of(sp.random(10, 12, density=0.3, format="csr", random_state=1))
    x, y = cupy.ndarray((12,)), cupy.ndarray((10,))
    for _ in range(3):
        assert plan.apply(x, y, alpha=2.0, beta=-1.0) is y
    assert plan._cupy_stream is not None  # the first call found the stream function
    assert plan._core.calls == [(x.data.ptr, 12, y.data.ptr, 10, 0, 0xABC0, 2.0, -1.0)] * 3


@pytest.mark.parametrize("warm", [False, True])
def test_bad_device_arrays_never_reach_the_core(cupy, warm):
    plan = plan_of(sp.random(10, 12, density=0.3, format="csr", random_state=1))
    if warm:  # the fast path is armed: what it lets through must still be refused
        plan.apply(cupy.ndarray((12,)), cupy.ndarray((10,)))
        plan._core.calls.clear()
    bad = [
        ((cupy.ndarray((11,)),), ValueError, "12 entries"),
        ((cupy.ndarray((11, 2)),), ValueError, r"x must be a 2-D array of shape \(12, k\)"),
        ((cupy.ndarray((12, 2, 2)),), ValueError, "12 entries"),
        ((cupy.ndarray((12, 2), contiguous=False),), ValueError, "x is not contiguous"),
        ((cupy.ndarray((12, 2), np.int32),), TypeError, "dtype int32"),
        ((cupy.ndarray((12,), contiguous=False),), ValueError, "not contiguous"),
        ((cupy.ndarray((12,), np.int32),), TypeError, "dtype int32"),
        ((cupy.ndarray((12,)), cupy.ndarray((9,))), ValueError, "10 entries"),
        # with y given (the fast path's call)
        ((cupy.ndarray((12,), contiguous=False), cupy.ndarray((10,))), ValueError,
         "not contiguous"),
        ((cupy.ndarray((12,)), cupy.ndarray((10,), contiguous=False)), ValueError,
         "not contiguous"),
        ((cupy.ndarray((12,), np.int32), cupy.ndarray((10,))), TypeError, "dtype int32"),
        ((cupy.ndarray((12,)), cupy.ndarray((10,), np.float32)), TypeError, "dtype float32"),
        ((cupy.ndarray((12, 2)), cupy.ndarray((10,))), ValueError,
         r"y must be a 2-D array of shape \(10, 2\)"),
        ((cupy.ndarray((12, 2)), cupy.ndarray((10, 3))), ValueError, r"shape \(10, 2\)"),
        ((cupy.ndarray((12, 2)), cupy.ndarray((10, 2), order="F")), ValueError, "one order"),
        ((cupy.ndarray((12, 2), order="F"), cupy.ndarray((10, 2))), ValueError, "one order"),
        ((cupy.ndarray((12, 2)), cupy.ndarray((10, 2), contiguous=False)), ValueError,
         "y is not contiguous"),
        ((cupy.ndarray((12, 2)), cupy.ndarray((10, 2), np.float32)), TypeError,
         "dtype float32"),
        ((cupy.ndarray((12, 2)), cupy.ndarray((10, 2), device=1)), ValueError, "device 1"),
        ((cupy.ndarray((12, 2)), np.zeros((10, 2))), TypeError, "CuPy array too"),
        ((np.zeros((12, 2)), cupy.ndarray((10, 2))), TypeError, "host array"),
        ((cupy.ndarray((12,)), cupy.ndarray((10,), device=1)), ValueError, "device 1"),
        ((cupy.ndarray((12,)), np.zeros(10)), TypeError, "CuPy array too"),
        ((np.zeros(12), cupy.ndarray((10,))), TypeError, "host array"),
    ]
    for args, err, msg in bad:
        with pytest.raises(err, match=msg):
            plan.apply(*args)
    with pytest.raises(ValueError, match="beta != 0 needs y"):
        plan.apply(cupy.ndarray((12,)), beta=0.5)
    with pytest.raises(ValueError, match="beta != 0 needs y"):
        plan.apply(cupy.ndarray((12, 2)), beta=0.5)
    assert plan._core.calls == []


@pytest.mark.parametrize("order,core_order", [("C", "row"), ("F", "col")])
def test_blocks_reach_the_core_as_one_call_in_their_order(cupy, order, core_order):
    plan = plan_of(sp.random(10, 12, density=0.3, format="csr", random_state=1))
    x, y = cupy.ndarray((12, 5), order=order), cupy.ndarray((10, 5), order=order)
    assert plan.apply(x, y, alpha=2.0, beta=-1.0) is y
    assert plan._core.calls == [("multi", (x.data.ptr, 60), (y.data.ptr, 50), 5, core_order, 0,
                                 0xABC0, 2.0, -1.0)]
    out = plan @ x
    assert out is cupy.made[-1] and out.shape == (10, 5) and out.dtype == np.float64
    assert out.flags.c_contiguous if order == "C" else out.flags.f_contiguous
    assert plan._core.calls[-1] == ("multi", (x.data.ptr, 60), (out.data.ptr, 50), 5,
                                    core_order, 0, 0xABC0, 1.0, 0.0)
    # one vector as a block: both orders at once, taken as the row order unless y says otherwise
    x1 = cupy.ndarray((12, 1))
    plan.apply(x1, cupy.ndarray((10, 1)))
    assert plan._core.calls[-1][4] == "row"
    plan.apply(x1, cupy.ndarray((10, 1), order="F"))
    assert plan._core.calls[-1][3:5] == (1, "row")


def test_other_cuda_array_interface_objects_are_refused():
    class Foreign:
        __cuda_array_interface__ = {}

    plan = spmvkit.Plan(sp.identity(3, format="csr"), method="csr", backend="cpu")
    with pytest.raises(TypeError, match="CuPy and PyTorch"):
        plan @ Foreign()


def test_the_linear_operator_library_is_chosen_or_refused():
    plan = spmvkit.Plan(sp.identity(3, format="csr"), method="csr", backend="cpu")
    assert type(plan.as_linear_operator()).__module__.startswith("scipy")
    with pytest.raises(ValueError, match="library"):
        plan.as_linear_operator("jax")


class DL:
    """An array known only through DLPack (as a JAX array would be)."""

    def __init__(self, a, device=None):
        self.a, self.device = a, device

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.device or self.a.__dlpack_device__()


def test_dlpack_host_arrays_take_the_host_path_in_place():
    A = sp.random(10, 12, density=0.3, format="csr", random_state=1)
    plan = spmvkit.Plan(A, method="csr", backend="cpu")
    x, y = np.linspace(-1, 1, 12), np.arange(10.0)
    want = 2.0 * (A @ x) - y
    out = plan @ DL(x)
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, A @ x, rtol=1e-12)
    yd = DL(y)
    assert plan.apply(DL(x), yd, alpha=2.0, beta=-1.0) is yd
    np.testing.assert_allclose(y, want, rtol=1e-12)  # written in place, through DLPack
    with pytest.raises(ValueError, match="12 entries"):
        plan @ DL(np.ones(11))


def test_dlpack_cuda_arrays_go_through_cupy(cupy):
    plan = plan_of(sp.random(10, 12, density=0.3, format="csr", random_state=1))
    taken = []

    def from_dlpack(v):
        taken.append(v)
        return cupy.ndarray(v.a.shape)

    cupy.from_dlpack = from_dlpack
    x, y = DL(np.ones(12), (2, 0)), DL(np.ones(10), (2, 0))
    assert plan.apply(x, y) is y
    assert taken == [x, y] and len(plan._core.calls) == 1
    with pytest.raises(TypeError, match="device type 7"):
        plan @ DL(np.ones(12), (7, 0))
