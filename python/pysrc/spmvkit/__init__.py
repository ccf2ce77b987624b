"""spmvkit from Python: sparse matrix-vector multiplication y = alpha*A*x + beta*y.

A thin layer over the Rust library's ``Plan`` (issue #23): a matrix is analysed once by a
method and applied many times. ``A`` may be a SciPy sparse matrix, a ``cupyx.scipy.sparse``
matrix, a PyTorch sparse CSR/COO/CSC tensor or ``(indptr, indices, data, shape)``; ``x`` and
``y`` NumPy arrays (the CPU path, or copies to and from a GPU plan) or CuPy / PyTorch CUDA
arrays, used in place on the GPU (no copy) and enqueued on the caller's current stream. Without
a GPU (or with ``backend="cpu"``) every method runs its CPU path.

>>> import numpy as np, scipy.sparse as sp, spmvkit
>>> A = sp.random(200, 200, density=0.05, format="csr", random_state=1)
>>> plan = spmvkit.Plan(A, method="csr", backend="cpu")
>>> x = np.ones(200)
>>> bool(np.allclose(plan @ x, A @ x))
True

On the GPU with CuPy (x and y stay on the device; the call is enqueued on CuPy's current
stream):

>>> import cupy as cp, cupyx.scipy.sparse as csp                       # doctest: +SKIP
>>> Ad = csp.csr_matrix(A)                                             # doctest: +SKIP
>>> plan = spmvkit.Plan(Ad, method="auto", calls=1000)                 # doctest: +SKIP
>>> y = plan @ cp.ones(200)                                            # doctest: +SKIP
>>> bool(cp.allclose(y, Ad @ cp.ones(200)))                            # doctest: +SKIP
True
"""

from __future__ import annotations

import sys
import time
import types

import numpy as np

from . import _core

__all__ = ["Plan", "methods", "device_methods", "load"]

_INDEX_LIMIT = 2**32 - 1

# What kind of array a vector is, cached by type (torch CPU and CUDA tensors share one type and
# are told apart per object).
_HOST, _CUPY, _TORCH, _DLPACK = 0, 1, 2, 3
_KINDS: dict = {}

# DLPack device types (dlpack.h, DLDeviceType)
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13


def _classify(t) -> int:
    if issubclass(t, np.ndarray):
        return _HOST
    cupy = sys.modules.get("cupy")
    if cupy is not None and issubclass(t, cupy.ndarray):
        return _CUPY
    torch = sys.modules.get("torch")
    if torch is not None and issubclass(t, torch.Tensor):
        return _TORCH
    if hasattr(t, "__dlpack__") and hasattr(t, "__dlpack_device__"):
        return _DLPACK
    if hasattr(t, "__cuda_array_interface__"):
        raise TypeError(
            f"{t.__module__}.{t.__name__}: device arrays are taken from CuPy and PyTorch, or "
            "through DLPack (convert with cupy.asarray, which shares the memory)"
        )
    return _HOST


def _from_dlpack(v):
    """A DLPack array (``__dlpack__``) as the NumPy, CuPy or PyTorch array that shares its
    memory: NumPy for host memory; on a CUDA device CuPy when it can be imported, else PyTorch
    (their ``from_dlpack`` hands the producer their current stream)."""
    dev_type, _ = v.__dlpack_device__()
    if dev_type == _DL_CPU:
        return np.from_dlpack(v)
    if dev_type in (_DL_CUDA, _DL_CUDA_MANAGED):
        for name in ("cupy", "torch"):
            try:
                lib = __import__(name)
            except ImportError:
                continue
            return lib.from_dlpack(v)
        raise TypeError(f"{type(v).__name__}: a DLPack array on a CUDA device needs CuPy or "
                        "PyTorch to be taken without a copy")
    raise TypeError(f"{type(v).__name__}: a DLPack array on device type {dev_type}; spmvkit "
                    f"takes host ({_DL_CPU}) and CUDA ({_DL_CUDA}) memory")


def _kind(v) -> int:
    t = type(v)
    k = _KINDS.get(t)
    if k is None:
        k = _KINDS[t] = _classify(t)
    return k


def _torch_stream():
    """The raw handle of PyTorch's current stream on a device, as a function of the device."""
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda device: torch.cuda.current_stream(device).cuda_stream


def methods() -> list[str]:
    """The registered method names, in listing order (``spmv methods`` describes them)."""
    return list(_core.methods())


def device_methods() -> list[str]:
    """The methods that build a plan from a matrix on the GPU without copying it to the host."""
    return list(_core.device_methods())


def load(path: str):
    """A Matrix Market file (optionally gzipped) or spmvkit binary cache as a SciPy CSR matrix
    of float64 (SciPy must be installed)."""
    import scipy.sparse as sp

    indptr, indices, data, shape = _core.load(str(path))
    return sp.csr_matrix(
        (
            np.frombuffer(data, dtype="<f8"),
            np.frombuffer(indices, dtype="<u4"),
            np.frombuffer(indptr, dtype="<u4"),
        ),
        shape=shape,
    )


def _to_host(a):
    """A NumPy view or copy of a host, CuPy or PyTorch array."""
    k = _kind(a)
    if k == _CUPY:
        return a.get()
    if k == _TORCH:
        return a.detach().cpu().numpy()
    return np.asarray(a)


def _host_matrix(A):
    """(A with host arrays, the CUDA device A was on or None). A device matrix's structure and
    values are copied to the host once: the plan's analysis runs there."""
    mod = type(A).__module__
    if mod.startswith("cupyx.scipy.sparse") and hasattr(A, "get"):
        return A.get(), int(A.data.device.id)
    if _kind(A) == _TORCH:
        import torch

        _check_torch_sparse(A, torch)
        if A.layout == torch.sparse_coo:
            A = A.coalesce()
        vals = A.values()
        if vals.is_complex():
            raise TypeError("complex values: spmvkit computes in float32 or float64")
        if vals.dtype not in (torch.float32, torch.float64):
            vals = vals.to(torch.float64)
        device = A.device.index if A.is_cuda else None
        shape = tuple(A.shape)
        vals = _to_host(vals)
        if A.layout == torch.sparse_csr:
            return (_to_host(A.crow_indices()), _to_host(A.col_indices()), vals, shape), device
        import scipy.sparse as sp  # COO and CSC: SciPy puts them in CSR order on the host

        if A.layout == torch.sparse_coo:
            rows, cols = _to_host(A.indices())
            return sp.coo_matrix((vals, (rows, cols)), shape=shape), device
        return sp.csc_matrix((vals, _to_host(A.row_indices()), _to_host(A.ccol_indices())),
                             shape=shape), device
    if isinstance(A, tuple) and len(A) == 4:
        return tuple(_to_host(p) for p in A[:3]) + (A[3],), None
    return A, None


# spmvkit's indices are 32-bit and at most 2^31-1 (the library's index limit).
_DEVICE_INDEX_LIMIT = 2**31 - 1


def _device_matrix(A):
    """(library kind, A as a CSR matrix of that library, device) when A lives on a CUDA device:
    a ``cupyx.scipy.sparse`` matrix (csc and coo converted on the device), a PyTorch sparse
    CUDA tensor (COO and CSC converted on the device) or an (indptr, indices, data, shape) tuple
    of CuPy arrays or CUDA tensors; ``None`` for anything else. Nothing is copied to the host."""
    mod = type(A).__module__
    if mod.startswith("cupyx.scipy.sparse") and hasattr(A, "tocsr"):
        return _CUPY, A.tocsr(), int(A.data.device.id)
    if isinstance(A, tuple) and len(A) == 4:
        k = _kind(A[0])
        if k == _CUPY:
            # the arrays as they are (cupyx's constructor would narrow 64-bit indices unchecked)
            indptr, indices, data, shape = A
            m = types.SimpleNamespace(indptr=indptr, indices=indices, data=data,
                                      shape=tuple(int(s) for s in shape))
            return _CUPY, m, int(indptr.device.id)
        if k == _TORCH and A[0].is_cuda:
            import torch

            indptr, indices, data, shape = A
            m = torch.sparse_csr_tensor(indptr, indices, data, size=tuple(int(s) for s in shape))
            return _TORCH, m, indptr.get_device()
        return None
    if _kind(A) == _TORCH and A.is_cuda:
        import torch

        _check_torch_sparse(A, torch)
        if A.layout == torch.sparse_coo:
            A = A.coalesce().to_sparse_csr()
        elif A.layout == torch.sparse_csc:
            try:
                A = A.to_sparse_csr()
            except (RuntimeError, NotImplementedError):
                A = _torch_coo(A, torch).coalesce().to_sparse_csr()
        return _TORCH, A, A.get_device()
    return None


def _check_torch_sparse(A, torch):
    layouts = (torch.sparse_csr, torch.sparse_coo, torch.sparse_csc)
    if A.layout not in layouts:
        raise TypeError(
            f"a PyTorch tensor of layout {A.layout}: A must be sparse (A.to_sparse_csr())"
        )
    if A.dim() != 2 or A.dense_dim() != 0:
        raise ValueError(
            f"a PyTorch sparse tensor of shape {tuple(A.shape)} with {A.dense_dim()} dense "
            "dimensions: A must be a 2-D matrix of scalars"
        )


def _canonical(kind, A):
    """A (a CSR matrix of CuPy or PyTorch) with sorted column indices and duplicates summed, on
    the device."""
    if kind == _CUPY:
        if not hasattr(A, "tocoo"):  # a tuple's arrays, their range already checked
            import cupyx.scipy.sparse as csp

            with A.data.device:
                A = csp.csr_matrix((A.data, A.indices, A.indptr), shape=A.shape)
        c = A.tocoo(copy=True)
        c.sum_duplicates()
        return c.tocsr()
    import torch

    # A COO tensor made from the CSR arrays: PyTorch marks one converted from CSR as coalesced
    # already, so coalesce() would neither sort nor sum it.
    col, crow = A.col_indices(), A.crow_indices()
    rows = torch.repeat_interleave(
        torch.arange(A.shape[0], device=col.device, dtype=col.dtype), crow.diff(),
        output_size=col.numel(),
    )
    coo = torch.sparse_coo_tensor(torch.stack([rows, col]), A.values(), size=tuple(A.shape))
    return coo.coalesce().to_sparse_csr()


def _torch_coo(A, torch):
    """A sparse compressed tensor as COO, on its device."""
    try:
        return A.to_sparse(layout=torch.sparse_coo)
    except TypeError:  # a PyTorch whose to_sparse takes no layout
        return A.to_sparse()


def _device_index(kind, a, name):
    """A 1-D device integer array as 32-bit indices (the same array when it is 32-bit already);
    64-bit indices above 2^31-1 or negative are a ValueError (one scalar comes to the host)."""
    if kind == _CUPY:
        import cupy

        if a.ndim != 1 or a.dtype.kind not in "iu":
            raise TypeError(f"{name} must be a 1-D integer array, not {a.dtype} of shape {a.shape}")
        if a.dtype.itemsize == 4:
            return cupy.ascontiguousarray(a)
        if a.dtype.itemsize == 8 and a.size and bool(((a < 0) | (a > _DEVICE_INDEX_LIMIT)).any()):
            raise ValueError(f"{name} has entries outside 0..{_DEVICE_INDEX_LIMIT}: spmvkit's "
                             "indices are 32-bit")
        return cupy.ascontiguousarray(a.astype(cupy.int32))
    import torch

    if a.dim() != 1 or a.dtype not in (torch.int8, torch.uint8, torch.int16, torch.int32,
                                       torch.int64):
        raise TypeError(f"{name} must be a 1-D integer tensor, not {a.dtype} of shape "
                        f"{tuple(a.shape)}")
    if a.dtype == torch.int32:
        return a.contiguous()
    if a.dtype == torch.int64 and a.numel() and bool(((a < 0) | (a > _DEVICE_INDEX_LIMIT)).any()):
        raise ValueError(f"{name} has entries outside 0..{_DEVICE_INDEX_LIMIT}: spmvkit's "
                         "indices are 32-bit")
    return a.to(torch.int32).contiguous()


def _device_arrays(kind, A, dtype):
    """(indptr, indices, data, shape) of a CSR matrix of CuPy or PyTorch: 32-bit indices and
    data of ``dtype``, contiguous, on the device."""
    if kind == _CUPY:
        import cupy

        with A.data.device:
            indptr = _device_index(kind, A.indptr, "indptr")
            indices = _device_index(kind, A.indices, "indices")
            data = cupy.ascontiguousarray(A.data.astype(dtype, copy=False))
        return indptr, indices, data, tuple(int(s) for s in A.shape)
    import torch

    vals = A.values()
    if vals.is_complex():
        raise TypeError("complex values: spmvkit computes in float32 or float64")
    tdtype = torch.float32 if dtype == np.float32 else torch.float64
    return (
        _device_index(kind, A.crow_indices(), "indptr"),
        _device_index(kind, A.col_indices(), "indices"),
        vals.to(tdtype).contiguous(),
        tuple(int(s) for s in A.shape),
    )


def _ptr(kind, a):
    return (a.data.ptr, a.size) if kind == _CUPY else (a.data_ptr(), a.numel())


def _current_stream(kind, device):
    if kind == _CUPY:
        return sys.modules["cupy"].cuda.get_current_stream(device).ptr
    return _torch_stream()(device)


def _value_dtype(kind, A):
    """The NumPy dtype of a device CSR matrix's values."""
    if kind == _CUPY:
        return np.dtype(A.data.dtype)
    import torch

    return np.dtype(np.float32 if A.values().dtype == torch.float32 else np.float64)


def _csr_parts(A):
    """(indptr, indices, data, shape) of a SciPy sparse matrix or of such a tuple."""
    if isinstance(A, tuple):
        if len(A) != 4:
            raise TypeError("a CSR tuple must be (indptr, indices, data, shape)")
        indptr, indices, data, shape = A
    elif hasattr(A, "tocsr") and hasattr(A, "shape"):
        csr = A.tocsr()
        csr.sort_indices()
        indptr, indices, data, shape = csr.indptr, csr.indices, csr.data, csr.shape
    else:
        raise TypeError(
            "A must be a SciPy sparse matrix, a cupyx.scipy.sparse matrix, a PyTorch sparse "
            f"tensor or (indptr, indices, data, shape), not {type(A).__name__}"
        )
    shape = tuple(int(s) for s in shape)
    if len(shape) != 2 or min(shape) < 0:
        raise ValueError(f"shape must be two non-negative sizes, not {shape}")
    indptr, indices = np.asarray(indptr), np.asarray(indices)
    for name, a in (("indptr", indptr), ("indices", indices)):
        if a.ndim != 1 or a.dtype.kind not in "iu":
            raise TypeError(f"{name} must be a 1-D integer array")
        if a.size and (int(a.min()) < 0 or int(a.max()) > _INDEX_LIMIT):
            raise ValueError(f"{name} has entries outside 0..{_INDEX_LIMIT}")
    data = np.asarray(data)
    if data.ndim != 1 or data.dtype.kind not in "fiu":
        raise TypeError("data must be a 1-D real array")
    return indptr, indices, data, shape


def _le(a, dtype) -> bytes:
    return np.ascontiguousarray(a, dtype=np.dtype(dtype).newbyteorder("<")).tobytes()


def _block_order(x_c, x_f, y_c=True, y_f=True):
    """The order a block call takes, from the C- and Fortran-contiguity of x (and of y when
    given): ``"row"`` (C order, a row's k values contiguous) when both are C-contiguous, else
    ``"col"`` (Fortran order, each vector contiguous) when both are Fortran-contiguous, else
    ``None``. A block of one vector or one row is both, and goes as ``"row"``."""
    if x_c and y_c:
        return "row"
    if x_f and y_f:
        return "col"
    return None


def _order_error(x_c, x_f, y_c, y_f, strides):
    """The ValueError of device blocks that are not contiguous in one common order."""
    if not (x_c or x_f):
        return ValueError(f"x is not contiguous (strides {strides[0]}): pass a C- or "
                          "Fortran-contiguous block (x.copy() or cupy.asfortranarray(x), "
                          "x.contiguous() or x.t().contiguous().t())")
    if not (y_c or y_f):
        return ValueError(f"y is not contiguous (strides {strides[1]}): pass a C- or "
                          "Fortran-contiguous block")
    return ValueError(f"x is {'C' if x_c else 'Fortran'}-contiguous and y "
                      f"{'C' if y_c else 'Fortran'}-contiguous: give both blocks in one order")


class Plan:
    """A matrix prepared once by one method, for repeated y = alpha*A*x + beta*y.

    ``A``: a SciPy sparse matrix (csr, csc, coo, ...), a ``cupyx.scipy.sparse`` matrix (csr,
    csc, coo), a PyTorch sparse tensor (CSR, COO or CSC; 2-D, scalar values) or ``(indptr,
    indices, data, shape)`` (NumPy, CuPy or PyTorch arrays). A matrix on the GPU stays there:
    its arrays are converted on the device (CSC and COO to CSR, indices to 32 bits, values to
    the precision; unsorted or duplicate column indices sorted and summed), copied device to
    device into the plan, and checked there; nothing of it comes to the host (only the check's
    few numbers). That route builds the methods whose layout is the CSR arrays
    (:func:`device_methods`: ``auto``, ``csr-vector``, ``csr-scalar``, ``cusparse``,
    ``cusparse-alg1``, ``cusparse-alg2``); ``auto`` then times one call of each candidate on the
    device and keeps the fastest (``csr-vector``, ``cusparse-alg1`` or ``cusparse-alg2`` with
    ``deterministic=True``, and ``csr-scalar`` when no row is longer than 32). Any other method
    with a matrix on the GPU is a ``ValueError`` unless ``host_copy=True``, which copies the
    matrix to the host once for the host analysis (counted in :attr:`prep_seconds`); so does
    ``backend="cpu"``. 64-bit indices above 2^31-1 are a ``ValueError``, a malformed structure a
    ``ValueError`` naming the row. ``method``: a name from :func:`methods` or a variant
    ``"name[key=value;...]"``; ``"auto"`` chooses per matrix, weighing preprocessing over
    ``calls``; ``deterministic=True`` makes ``auto`` choose among bitwise-reproducible methods
    only (and refuses a named method that is not). ``precision``: ``"f32"`` or ``"f64"``
    (default: float32 data gives f32, anything else f64). ``backend``: ``"cpu"``, ``"gpu"`` or
    ``None`` (the GPU when one is usable). ``params``: more ``key=value`` method parameters.

    spmvkit uses one GPU per process, the first one ``CUDA_VISIBLE_DEVICES`` shows (CUDA device
    0, the one CuPy and PyTorch call 0), in the device's primary context, the one CuPy and
    PyTorch use; a matrix or vector on another device is refused with a ``ValueError``.

    >>> import numpy as np, spmvkit
    >>> A = (np.array([0, 1, 3]), np.array([0, 0, 1]), np.array([2.0, 1.0, 3.0]), (2, 2))
    >>> plan = spmvkit.Plan(A, method="csr", backend="cpu")
    >>> plan.apply(np.array([1.0, 1.0]), y=np.array([1.0, 1.0]), alpha=2.0, beta=1.0)
    array([5., 9.])

    From PyTorch (a GNN-style propagation step, all feature columns in one SpMM call):

    >>> import torch                                                   # doctest: +SKIP
    >>> At = torch.sparse_csr_tensor(torch.tensor([0, 1, 3]), torch.tensor([0, 0, 1]),
    ...                              torch.tensor([2.0, 1.0, 3.0]), (2, 2)).cuda()  # doctest: +SKIP
    >>> plan = spmvkit.Plan(At, method="auto")                         # doctest: +SKIP
    >>> H = torch.ones(2, 4, device="cuda")                            # doctest: +SKIP
    >>> out = plan @ H                                                 # doctest: +SKIP
    """

    def __init__(self, A, method="auto", calls=1000, deterministic=False, precision=None,
                 backend=None, params=None, host_copy=False):
        if precision not in (None, "f32", "f64"):
            raise ValueError(f"precision must be 'f32', 'f64' or None, not {precision!r}")
        self._torch_dtype = None
        self._torch_raw_stream = None
        self._fetch_seconds = 0.0
        items = list(params or [])
        base = method.split("[", 1)[0].strip()
        if base == "auto":
            items.append(f"calls={calls}")
            if deterministic:
                items.append("deterministic=1")
        on_device = None if host_copy or backend == "cpu" else _device_matrix(A)
        if on_device is not None:
            shape = self._from_device(on_device, method, base, precision, items, backend)
        else:
            t0 = time.perf_counter()
            A, device = _host_matrix(A)
            indptr, indices, data, shape = _csr_parts(A)
            self._fetch_seconds = time.perf_counter() - t0 if device is not None else 0.0
            if precision is None:
                precision = "f32" if data.dtype == np.float32 else "f64"
            self._set_precision(precision)
            self._core = _core.CorePlan(
                _le(indptr, "u4"), _le(indices, "u4"), _le(data, self._dtype), shape, method,
                precision, items, backend,
            )
        if deterministic and not self._core.deterministic:
            raise ValueError(
                f"{method} is not bitwise deterministic; use method='auto' with deterministic=True "
                "or a deterministic method"
            )
        if (on_device is None and device is not None and self._core.device is not None
                and device != self._core.device):
            raise ValueError(
                f"A is on CUDA device {device}; spmvkit runs on device {self._core.device} "
                "(the first one CUDA_VISIBLE_DEVICES shows)"
            )
        self.shape = shape
        self._yshape, self._xshape = (shape[0],), (shape[1],)
        self._unit = (self._dtype.itemsize,)
        self._cupy_stream = None
        self._torch_strided = None

    def _set_precision(self, precision):
        self._dtype = np.dtype(np.float32 if precision == "f32" else np.float64)
        self._precision = precision

    def _from_device(self, on_device, method, base, precision, items, backend):
        """Builds the core plan from a matrix on the device (no host copy); returns its shape."""
        kind, A, device = on_device
        allowed = _core.device_methods()
        if base not in allowed:
            raise ValueError(
                f"{base}: a plan from a matrix on the GPU is built by {', '.join(allowed)} "
                "(their layout is the CSR arrays, which stay on the device); pass "
                "host_copy=True to copy the matrix to the host once and use any method"
            )
        if backend not in (None, "gpu"):
            raise ValueError(f"backend must be 'cpu', 'gpu' or None, not {backend!r}")
        if precision is None:
            precision = "f32" if _value_dtype(kind, A) == np.float32 else "f64"
        self._set_precision(precision)
        for attempt in (0, 1):
            indptr, indices, data, shape = _device_arrays(kind, A, self._dtype)
            stream = _current_stream(kind, device)
            try:
                self._core = _core.CorePlan.from_device(
                    _ptr(kind, indptr), _ptr(kind, indices), _ptr(kind, data), shape, device,
                    stream, method, precision, items,
                )
                return shape
            except ValueError as e:
                # unsorted columns or duplicates: sorted and summed on the device, once
                if attempt or "strictly increasing" not in str(e):
                    raise
                A = _canonical(kind, A)
        raise AssertionError("unreachable")

    # ---- the host path -------------------------------------------------------------------

    def _vector(self, v, n, name):
        v = np.asarray(v)
        if v.ndim != 1 or v.shape[0] != n:
            raise ValueError(f"{name} must be a 1-D array of {n} entries, not shape {v.shape}")
        if v.dtype.kind not in "fiu":
            raise TypeError(f"{name} must be real, not {v.dtype}")
        return v

    def _apply_host(self, x, y, alpha, beta):
        if y is not None and _kind(y) != _HOST and not (_kind(y) == _TORCH and not y.is_cuda):
            raise TypeError(f"x is a host array, y a {type(y).__module__} device array: "
                            "give both on the host or both on the device")
        nrows, ncols = self.shape
        if np.ndim(x) == 2:
            return self._apply_host_block(np.asarray(x), y, alpha, beta)
        x = self._vector(x, ncols, "x")
        if y is None:
            if beta != 0.0:
                raise ValueError("beta != 0 needs y")
            y0 = np.zeros(nrows, dtype=self._dtype)
        else:
            y0 = self._vector(y, nrows, "y")
        out = self._core.apply(_le(x, self._dtype), _le(y0, self._dtype), float(alpha), float(beta))
        result = np.frombuffer(out, dtype=self._dtype.newbyteorder("<")).astype(self._dtype)
        if y is None:
            return result
        y0[...] = result
        return y

    def _block(self, v, n, k, name):
        """A host block of shape (n, k) (k None: any), real; else the error naming it."""
        v = np.asarray(v)
        if v.ndim != 2 or v.shape[0] != n or (k is not None and v.shape[1] != k):
            want = f"({n}, {'k' if k is None else k})"
            raise ValueError(f"{name} must be a 2-D array of shape {want} for a {self.shape[0]}x"
                             f"{self.shape[1]} matrix{'' if k is None else f' and {k} vectors'}"
                             f", not shape {v.shape}")
        if v.dtype.kind not in "fiu":
            raise TypeError(f"{name} must be real, not {v.dtype}")
        return v

    def _apply_host_block(self, x, y, alpha, beta):
        """Y = alpha*A*X + beta*Y for host blocks: one ``apply_multi`` of the core. The blocks
        cross as bytes (a copy, as for vectors) in the order of x: Fortran order when x is
        Fortran-contiguous (and not C-contiguous), C order otherwise (a strided x is copied into
        C order then); y is read and written in place whatever its order."""
        nrows, ncols = self.shape
        x = self._block(x, ncols, None, "x")
        k = x.shape[1]
        if y is None:
            if beta != 0.0:
                raise ValueError("beta != 0 needs y")
            y0 = None
        else:
            y0 = self._block(y, nrows, k, "y")
        order = "col" if x.flags.f_contiguous and not x.flags.c_contiguous else "row"
        mem = "F" if order == "col" else "C"
        le = self._dtype.newbyteorder("<")
        xb = np.asarray(x, dtype=le).tobytes(order=mem)
        yb = bytes(nrows * k * self._dtype.itemsize) if y0 is None else np.asarray(
            y0, dtype=le).tobytes(order=mem)
        out, _ = self._core.apply_multi(xb, yb, k, order, float(alpha), float(beta))
        result = np.frombuffer(out, dtype=le).reshape((nrows, k), order=mem).astype(self._dtype)
        if y is None:
            return result
        y0[...] = result
        return y

    # ---- the device path -----------------------------------------------------------------

    def _cupy_vec(self, v, n, name):
        if v.dtype != self._dtype:
            raise TypeError(f"{name} has dtype {v.dtype}; this plan computes in {self._dtype} "
                            f"(convert with {name}.astype(cupy.{self._dtype}))")
        if v.ndim != 1 or v.shape[0] != n:
            raise ValueError(f"{name} must be a 1-D array of {n} entries, not shape {v.shape}")
        if not v.flags.c_contiguous:
            raise ValueError(f"{name} is not contiguous (strides {v.strides}): pass a contiguous "
                             f"array ({name}.copy())")
        return v.data.ptr

    def _apply_cupy(self, x, y, alpha, beta):
        cupy = sys.modules["cupy"]  # imported: x is one of its arrays
        nrows, ncols = self.shape
        if x.ndim == 2:
            return self._apply_cupy_block(cupy, x, y, alpha, beta)
        xp = self._cupy_vec(x, ncols, "x")
        device = x.device.id
        if y is None:
            if beta != 0.0:
                raise ValueError("beta != 0 needs y")
            with x.device:
                y = cupy.empty(nrows, dtype=self._dtype)
        elif _kind(y) != _CUPY:
            raise TypeError(f"x is a CuPy array, y a {type(y).__module__}.{type(y).__name__}: "
                            "give y as a CuPy array too")
        yp = self._cupy_vec(y, nrows, "y")
        if y.device.id != device:
            raise ValueError(f"x is on CUDA device {device}, y on device {y.device.id}")
        self._cupy_stream = cupy.cuda.get_current_stream
        stream = self._cupy_stream(device).ptr
        self._core.apply_device(xp, ncols, yp, nrows, device, stream, float(alpha), float(beta))
        return y

    def _device_block(self, v, n, k, name, dtype, convert):
        """Checks a device block's dtype and shape (n, k) (k None: any) and raises the error
        naming it; ``convert`` says how to convert the dtype."""
        if v.dtype != dtype:
            raise TypeError(f"{name} has dtype {v.dtype}; this plan computes in {dtype} "
                            f"(convert with {name}.{convert})")
        shape = tuple(v.shape)
        if len(shape) != 2 or shape[0] != n or (k is not None and shape[1] != k):
            want = f"({n}, {'k' if k is None else k})"
            raise ValueError(f"{name} must be a 2-D array of shape {want} for a {self.shape[0]}x"
                             f"{self.shape[1]} matrix{'' if k is None else f' and {k} vectors'}"
                             f", not shape {shape}")

    def _apply_cupy_block(self, cupy, x, y, alpha, beta):
        """Y = alpha*A*X + beta*Y for CuPy blocks, in place, one SpMM call ordered on CuPy's
        current stream (C order: ``"row"``, Fortran order: ``"col"``)."""
        nrows, ncols = self.shape
        convert = f"astype(cupy.{self._dtype})"
        self._device_block(x, ncols, None, "x", self._dtype, convert)
        k, device = x.shape[1], x.device.id
        xc, xf = x.flags.c_contiguous, x.flags.f_contiguous
        if y is None:
            if beta != 0.0:
                raise ValueError("beta != 0 needs y")
            order = _block_order(xc, xf)
            if order is None:
                raise _order_error(xc, xf, True, True, (x.strides, None))
            with x.device:
                y = cupy.empty((nrows, k), dtype=self._dtype, order="C" if order == "row" else "F")
        elif _kind(y) != _CUPY:
            raise TypeError(f"x is a CuPy array, y a {type(y).__module__}.{type(y).__name__}: "
                            "give y as a CuPy array too")
        self._device_block(y, nrows, k, "y", self._dtype, convert)
        yc, yf = y.flags.c_contiguous, y.flags.f_contiguous
        order = _block_order(xc, xf, yc, yf)
        if order is None:
            raise _order_error(xc, xf, yc, yf, (x.strides, y.strides))
        if y.device.id != device:
            raise ValueError(f"x is on CUDA device {device}, y on device {y.device.id}")
        stream = cupy.cuda.get_current_stream(device).ptr
        self._block_path = self._core.apply_multi_device(
            (x.data.ptr, x.size), (y.data.ptr, y.size), k, order, device, stream, float(alpha),
            float(beta))
        return y

    def _apply_torch_block(self, torch, x, y, alpha, beta):
        """As :meth:`_apply_cupy_block` for PyTorch CUDA tensors (contiguous: ``"row"``; the
        transpose of a contiguous tensor: ``"col"``), on PyTorch's current stream."""
        nrows, ncols = self.shape
        dt, convert = self._torch_dtype, f"to({self._torch_dtype})"
        if x.layout is not self._torch_strided:
            raise TypeError(f"x must be a dense tensor, not {x.layout}")
        self._device_block(x, ncols, None, "x", dt, convert)
        k, device = x.shape[1], x.get_device()
        xc, xf = x.is_contiguous(), x.t().is_contiguous()
        if y is None:
            if beta != 0.0:
                raise ValueError("beta != 0 needs y")
            order = _block_order(xc, xf)
            if order is None:
                raise _order_error(xc, xf, True, True, (x.stride(), None))
            if order == "row":
                y = torch.empty((nrows, k), dtype=dt, device=x.device)
            else:
                y = torch.empty((k, nrows), dtype=dt, device=x.device).t()
        elif _kind(y) != _TORCH or not y.is_cuda:
            raise TypeError(f"x is a CUDA tensor, y a {type(y).__module__}.{type(y).__name__}"
                            f"{'' if _kind(y) != _TORCH else ' on the CPU'}: give y as a CUDA "
                            "tensor too")
        if y.layout is not self._torch_strided:
            raise TypeError(f"y must be a dense tensor, not {y.layout}")
        self._device_block(y, nrows, k, "y", dt, convert)
        yc, yf = y.is_contiguous(), y.t().is_contiguous()
        order = _block_order(xc, xf, yc, yf)
        if order is None:
            raise _order_error(xc, xf, yc, yf, (x.stride(), y.stride()))
        if y.get_device() != device:
            raise ValueError(f"x is on CUDA device {device}, y on device {y.get_device()}")
        stream = self._torch_raw_stream(device)
        self._block_path = self._core.apply_multi_device(
            (x.data_ptr(), x.numel()), (y.data_ptr(), y.numel()), k, order, device, stream,
            float(alpha), float(beta))
        return y

    def _torch_vec(self, v, n, name):
        if v.layout is not self._torch_strided:
            raise TypeError(f"{name} must be a dense tensor, not {v.layout}")
        if v.dtype != self._torch_dtype:
            raise TypeError(f"{name} has dtype {v.dtype}; this plan computes in "
                            f"{self._torch_dtype} (convert with {name}.to({self._torch_dtype}))")
        if v.dim() != 1 or v.shape[0] != n:
            raise ValueError(f"{name} must be a 1-D tensor of {n} entries, not shape "
                             f"{tuple(v.shape)}")
        if n > 1 and v.stride(0) != 1:
            raise ValueError(f"{name} is not contiguous (stride {v.stride(0)}): pass "
                             f"{name}.contiguous()")
        return v.data_ptr()

    def _apply_torch(self, x, y, alpha, beta):
        if self._torch_dtype is None:
            import torch

            self._torch_dtype = torch.float32 if self._precision == "f32" else torch.float64
            self._torch_strided = torch.strided
            self._torch_raw_stream = _torch_stream()
        if not x.is_cuda:
            if y is not None and _kind(y) == _TORCH and y.is_cuda:
                raise TypeError("x is a CPU tensor, y a CUDA tensor: give both on one side")
            return self._apply_host(x, y, alpha, beta)
        if x.dim() == 2:
            return self._apply_torch_block(sys.modules["torch"], x, y, alpha, beta)
        nrows, ncols = self.shape
        xp = self._torch_vec(x, ncols, "x")
        device = x.get_device()
        if y is None:
            if beta != 0.0:
                raise ValueError("beta != 0 needs y")
            y = sys.modules["torch"].empty(nrows, dtype=x.dtype, device=x.device)
        elif _kind(y) != _TORCH or not y.is_cuda:
            raise TypeError(f"x is a CUDA tensor, y a {type(y).__module__}.{type(y).__name__}"
                            f"{'' if _kind(y) != _TORCH else ' on the CPU'}: give y as a CUDA "
                            "tensor too")
        yp = self._torch_vec(y, nrows, "y")
        if y.get_device() != device:
            raise ValueError(f"x is on CUDA device {device}, y on device {y.get_device()}")
        stream = self._torch_raw_stream(device)
        self._core.apply_device(xp, ncols, yp, nrows, device, stream, float(alpha), float(beta))
        return y

    # ---- the API -------------------------------------------------------------------------

    def apply(self, x, y=None, alpha=1.0, beta=0.0):
        """y = alpha*A*x + beta*y. With ``y`` given it is updated in place and returned;
        otherwise a new array (beta must then be 0).

        NumPy ``x`` and ``y``: the host path (on a GPU plan they are copied to the device and
        back, and the call waits for the result). CuPy arrays or PyTorch CUDA tensors: used in
        place, no copy; the call is enqueued on the library's current stream for x's device
        (``cupy.cuda.get_current_stream()``, ``torch.cuda.current_stream()``) and returns
        without waiting, so it orders with the caller's other work on that stream; a new y is
        allocated by the same library on that device. ``x`` and ``y`` must be 1-D, contiguous,
        of the plan's dtype (float32 for ``"f32"``, float64 for ``"f64"``), of lengths
        ``shape[1]`` and ``shape[0]``, on the plan's device, and must not overlap; anything else
        is a ``TypeError`` or ``ValueError`` naming the problem. A plan's calls run one at a time
        on the GPU, whatever their streams (a call on another stream waits for the previous one
        on the device). PyTorch autograd does not see the call. Other arrays that speak DLPack
        (``__dlpack__``, e.g. JAX) are taken through ``numpy.from_dlpack`` (host memory) or
        ``cupy.from_dlpack`` / ``torch.from_dlpack`` (CUDA memory), which share their memory:
        the same rules then apply, y is still updated in place, and a new y is an array of the
        library that took x.

        A 2-D ``x`` of shape ``(shape[1], k)`` is a block of k vectors (its columns): Y =
        alpha*A*X + beta*Y with Y of shape ``(shape[0], k)``, in one multi-vector (SpMM) call of
        the plan, which reads the matrix once for all k (``Plan::apply_multi``; the path per
        method is in docs/spmm.md). Device blocks (CuPy, PyTorch CUDA) are taken in place in
        either order: C-contiguous (a row's k values together) or Fortran-contiguous (each
        vector together; a PyTorch tensor whose transpose is contiguous); x and y must be in one
        order (a new y takes x's), anything else is a ``ValueError``. The call runs on the
        plan's own stream, ordered after the work on the library's current stream and before
        the work enqueued there afterwards (event waits; nothing synchronised); it cannot be
        captured into a CUDA graph. Host blocks are copied as vectors are (in Fortran order when
        x is Fortran-contiguous, else in C order: a strided x is copied into C order); y is
        updated in place whatever its order. The dtype rules are those of vectors; ``k = 1``
        (shape ``(n, 1)``) is a block too.

        >>> import numpy as np, scipy.sparse as sp, spmvkit
        >>> A = sp.random(50, 40, density=0.1, format="csr", random_state=2)
        >>> X = np.random.default_rng(0).standard_normal((40, 8))
        >>> Y = spmvkit.Plan(A, method="csr", backend="cpu") @ X
        >>> Y.shape, bool(np.allclose(Y, A @ X))
        ((50, 8), True)
        """
        t = type(x)
        k = _KINDS.get(t)
        if k is None:
            k = _kind(x)
        # The common device call (x and y of the plan's dtype, 1-D, of the right lengths,
        # contiguous, on one device) in the fewest Python steps. Any test that does not hold
        # sends the call down the full path, which checks everything again and refuses what is
        # wrong with its message; the Rust side checks device, lengths, overlap and alignment at
        # every call either way.
        if k == _CUPY:
            dt, unit, stream = self._dtype, self._unit, self._cupy_stream
            if (type(y) is t and stream and x.dtype is dt and y.dtype is dt
                    and x.shape == self._xshape and y.shape == self._yshape
                    and x.strides == unit and y.strides == unit):
                xd, yd = x.data, y.data
                device = getattr(xd, "device_id", -1)
                if device >= 0 and getattr(yd, "device_id", -1) == device:
                    self._core.apply_device(xd.ptr, self._xshape[0], yd.ptr, self._yshape[0],
                                            device, stream(device).ptr, alpha, beta)
                    return y
            return self._apply_cupy(x, y, alpha, beta)
        if k == _TORCH:
            tdt, strided = self._torch_dtype, self._torch_strided
            if (type(y) is t and tdt is not None and x.dtype is tdt and y.dtype is tdt
                    and x.is_cuda and y.is_cuda and x.layout is strided and y.layout is strided
                    and x.shape == self._xshape and y.shape == self._yshape
                    and x.is_contiguous() and y.is_contiguous()):
                device = x.get_device()
                if y.get_device() == device:
                    self._core.apply_device(x.data_ptr(), self._xshape[0], y.data_ptr(),
                                            self._yshape[0], device,
                                            self._torch_raw_stream(device), alpha, beta)
                    return y
            return self._apply_torch(x, y, alpha, beta)
        if k == _DLPACK or (y is not None and _kind(y) == _DLPACK):
            return self._apply_dlpack(x, y, alpha, beta)
        return self._apply_host(x, y, alpha, beta)

    def _apply_dlpack(self, x, y, alpha, beta):
        """x or y given through DLPack: taken as the NumPy, CuPy or PyTorch array that shares
        its memory (:func:`_from_dlpack`), then the call of that kind; y is returned as given,
        or a new array of the library x came as."""
        xa = _from_dlpack(x) if _kind(x) == _DLPACK else x
        ya = _from_dlpack(y) if y is not None and _kind(y) == _DLPACK else y
        out = self.apply(xa, ya, alpha, beta)
        return out if y is None else y

    def __matmul__(self, x):
        return self.apply(x)

    def update_values(self, data):
        """New values in the CSR order of the matrix the plan was made from (same pattern);
        returns how they were taken: ``"gathered"``, ``"reencoded"`` or ``"reprepared"``. On a
        plan built from a matrix on the GPU (:attr:`built_from_device`), CuPy or PyTorch CUDA
        values are copied device to device into the plan's value array (on the library's
        current stream; the call waits for it) and NumPy values are copied to the device;
        otherwise the values are copied to the host (the plan's analysis lives there)."""
        if _kind(data) == _DLPACK:
            data = _from_dlpack(data)
        k = _kind(data)
        on_device = k == _CUPY or (k == _TORCH and data.is_cuda)
        if on_device and self._core.built_from_device:
            if k == _CUPY:
                import cupy

                with data.device:
                    v = cupy.ascontiguousarray(data.ravel().astype(self._dtype, copy=False))
                device = int(data.device.id)
            else:
                import torch

                tdtype = torch.float32 if self._precision == "f32" else torch.float64
                v = data.reshape(-1).to(tdtype).contiguous()
                device = data.get_device()
            return self._core.update_values_device(_ptr(k, v), device, _current_stream(k, device))
        return self._core.update_values(_le(_to_host(data), self._dtype))

    @property
    def built_from_device(self) -> bool:
        """Whether the plan was built from a matrix on the GPU without a host copy (a
        ``cupyx.scipy.sparse`` matrix, a PyTorch sparse CUDA tensor or a tuple of device arrays,
        unless ``host_copy=True``)."""
        return self._core.built_from_device

    @property
    def method(self) -> str:
        """The method that runs (the one ``auto`` chose)."""
        return self._core.method

    @property
    def deterministic(self) -> bool:
        """Whether repeated calls give bitwise-equal results."""
        return self._core.deterministic

    @property
    def backend(self) -> str:
        """``"cpu"`` or ``"gpu"``."""
        return self._core.backend

    @property
    def device(self):
        """The CUDA device the plan runs on (0), or ``None`` on the CPU."""
        return self._core.device

    @property
    def dtype(self) -> np.dtype:
        """The dtype of the vectors the plan takes: float32 or float64."""
        return self._dtype

    @property
    def notes(self) -> list[tuple[str, str]]:
        """What the layout reports about itself, as (key, value) pairs."""
        return list(self._core.notes)

    @property
    def prep_seconds(self) -> float:
        """Preprocessing time in seconds: copying a device matrix to the host (when A was on
        the GPU), ordering, preparing and uploading."""
        return self._core.prep_seconds + self._fetch_seconds

    def _matvec(self, v):
        if v.ndim == 2 and v.shape[1] == 1:
            v = v.reshape(-1)
        return self.apply(v)

    def as_linear_operator(self, library=None):
        """A ``LinearOperator`` computing A @ x with this plan (and A @ X for a block X in one
        multi-vector call: ``matmat``), for ``cg``, ``gmres``, ``lobpcg`` and the like: ``library="cupy"`` gives a ``cupyx.scipy.sparse.linalg.LinearOperator`` (CuPy
        vectors, on the GPU, no copies), ``"scipy"`` a ``scipy.sparse.linalg.LinearOperator``
        (NumPy vectors; on a GPU plan each product copies x and y). ``None`` (the default):
        CuPy's when the plan runs on the GPU and CuPy can be imported, SciPy's otherwise.

        >>> import cupy as cp, cupyx.scipy.sparse.linalg as cla           # doctest: +SKIP
        >>> x, info = cla.cg(plan.as_linear_operator(), cp.ones(plan.shape[0]))  # doctest: +SKIP
        """
        if library is None:
            library = "scipy"
            if self.backend == "gpu":
                try:
                    import cupyx.scipy.sparse.linalg  # noqa: F401

                    library = "cupy"
                except ImportError:
                    pass
        if library == "cupy":
            from cupyx.scipy.sparse.linalg import LinearOperator
        elif library == "scipy":
            from scipy.sparse.linalg import LinearOperator
        else:
            raise ValueError(f"library must be 'cupy', 'scipy' or None, not {library!r}")
        return LinearOperator(self.shape, matvec=self._matvec, matmat=self.apply,
                              dtype=self._dtype)

    def _time_apply_device(self, n):
        """Internal (the benchmark): seconds for n calls of the Rust ``Plan::apply_device`` on
        the plan's own stream and vectors, (enqueued, enqueued and synchronised)."""
        return self._core._time_apply_device(int(n))
