"""spmvkit from Python: sparse matrix-vector multiplication y = alpha*A*x + beta*y.

A thin layer over the Rust library's ``Plan`` (issue #23): a matrix is analysed once by a
method and applied many times. This first version takes host data: SciPy sparse matrices or
``(indptr, indices, data, shape)`` arrays, and NumPy vectors. Without a GPU (or with
``backend="cpu"``) every method runs its CPU path.

>>> import numpy as np, scipy.sparse as sp, spmvkit
>>> A = sp.random(200, 200, density=0.05, format="csr", random_state=1)
>>> plan = spmvkit.Plan(A, method="csr", backend="cpu")
>>> x = np.ones(200)
>>> bool(np.allclose(plan @ x, A @ x))
True
"""

from __future__ import annotations

import numpy as np

from . import _core

__all__ = ["Plan", "methods", "load"]

_INDEX_LIMIT = 2**32 - 1


def methods() -> list[str]:
    """The registered method names, in listing order (``spmv methods`` describes them)."""
    return list(_core.methods())


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
            f"A must be a SciPy sparse matrix or (indptr, indices, data, shape), not {type(A).__name__}"
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


class Plan:
    """A matrix prepared once by one method, for repeated y = alpha*A*x + beta*y.

    ``A``: a SciPy sparse matrix (csr, csc, coo, ...) or ``(indptr, indices, data, shape)``.
    ``method``: a name from :func:`methods` or a variant ``"name[key=value;...]"``; ``"auto"``
    chooses per matrix, weighing preprocessing over ``calls``; ``deterministic=True`` makes
    ``auto`` choose among bitwise-reproducible methods only. ``precision``: ``"f32"`` or
    ``"f64"`` (default: float32 data gives f32, anything else f64). ``backend``: ``"cpu"``,
    ``"gpu"`` or ``None`` (the GPU when one is usable). ``params``: more ``key=value`` method
    parameters.

    >>> import numpy as np, spmvkit
    >>> A = (np.array([0, 1, 3]), np.array([0, 0, 1]), np.array([2.0, 1.0, 3.0]), (2, 2))
    >>> plan = spmvkit.Plan(A, method="csr", backend="cpu")
    >>> plan.apply(np.array([1.0, 1.0]), y=np.array([1.0, 1.0]), alpha=2.0, beta=1.0)
    array([5., 9.])
    """

    def __init__(self, A, method="auto", calls=1000, deterministic=False, precision=None,
                 backend=None, params=None):
        indptr, indices, data, shape = _csr_parts(A)
        if precision is None:
            precision = "f32" if data.dtype == np.float32 else "f64"
        if precision not in ("f32", "f64"):
            raise ValueError(f"precision must be 'f32', 'f64' or None, not {precision!r}")
        self._dtype = np.float32 if precision == "f32" else np.float64
        items = list(params or [])
        if method.split("[", 1)[0].strip() == "auto":
            items.append(f"calls={calls}")
            if deterministic:
                items.append("deterministic=1")
        self._core = _core.CorePlan(
            _le(indptr, "u4"), _le(indices, "u4"), _le(data, self._dtype), shape, method,
            precision, items, backend,
        )
        if deterministic and not self._core.deterministic:
            raise ValueError(
                f"{method} is not bitwise deterministic; use method='auto' with deterministic=True "
                "or a deterministic method"
            )
        self.shape = shape

    def _vector(self, v, n, name):
        v = np.asarray(v)
        if v.ndim != 1 or v.shape[0] != n:
            raise ValueError(f"{name} must be a 1-D array of {n} entries, not shape {v.shape}")
        if v.dtype.kind not in "fiu":
            raise TypeError(f"{name} must be real, not {v.dtype}")
        return v

    def apply(self, x, y=None, alpha=1.0, beta=0.0):
        """y = alpha*A*x + beta*y. With ``y`` given it is updated in place and returned;
        otherwise a new array (beta must then be 0)."""
        nrows, ncols = self.shape
        x = self._vector(x, ncols, "x")
        if y is None:
            if beta != 0.0:
                raise ValueError("beta != 0 needs y")
            y0 = np.zeros(nrows, dtype=self._dtype)
        else:
            y0 = self._vector(y, nrows, "y")
        out = self._core.apply(_le(x, self._dtype), _le(y0, self._dtype), float(alpha), float(beta))
        result = np.frombuffer(out, dtype=np.dtype(self._dtype).newbyteorder("<")).astype(self._dtype)
        if y is None:
            return result
        y[...] = result
        return y

    def __matmul__(self, x):
        return self.apply(x)

    def update_values(self, data):
        """New values in the CSR order of the matrix the plan was made from (same pattern);
        returns how they were taken: ``"gathered"``, ``"reencoded"`` or ``"reprepared"``."""
        return self._core.update_values(_le(np.asarray(data), self._dtype))

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
    def notes(self) -> list[tuple[str, str]]:
        """What the layout reports about itself, as (key, value) pairs."""
        return list(self._core.notes)

    @property
    def prep_seconds(self) -> float:
        """Preprocessing time in seconds."""
        return self._core.prep_seconds

    def as_linear_operator(self):
        """A ``scipy.sparse.linalg.LinearOperator`` computing A @ x with this plan (host
        arrays), for ``scipy.sparse.linalg.cg``, ``gmres`` and the like."""
        from scipy.sparse.linalg import LinearOperator

        return LinearOperator(self.shape, matvec=self.apply, dtype=self._dtype)
