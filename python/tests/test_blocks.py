"""Blocks of vectors (issue #24 item 5): a 2-D NumPy x of shape (ncols, k) through the plan's
one multi-vector call, against SciPy's ``A @ X``, in both orders, f32 and f64."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import spmvkit

MATRICES = [
    ("rectangular 40x90", sp.random(40, 90, density=0.1, format="csr", random_state=3)),
    ("empty rows 60", sp.random(60, 60, density=0.01, format="csr", random_state=9)),
    ("poisson-like", sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(300, 300), format="csr")),
]
METHODS = ["csr", "merge", "csr-packed", "auto", "csr-scalar"]


def tol(dtype):
    return dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)


def block(n, k, dtype, order, seed=11):
    return np.asarray(np.random.default_rng(seed).standard_normal((n, k)), dtype=dtype,
                      order=order)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("k", [1, 3, 33])
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name,A", MATRICES, ids=[m[0] for m in MATRICES])
def test_blocks_match_scipy(name, A, method, k, order, dtype):
    A = A.astype(dtype)
    plan = spmvkit.Plan(A, method=method, backend="cpu")
    X = block(A.shape[1], k, dtype, order)
    Y0 = block(A.shape[0], k, dtype, order, seed=12)
    Y = plan @ X
    assert Y.shape == (A.shape[0], k) and Y.dtype == dtype
    np.testing.assert_allclose(Y, A @ X, **tol(dtype))
    out = plan.apply(X, Y0.copy(order="K"), alpha=-1.5, beta=0.5)
    np.testing.assert_allclose(out, -1.5 * (A @ X) + 0.5 * Y0, **tol(dtype))


def test_y_is_updated_in_place_in_either_order_and_a_strided_x_is_copied():
    A = sp.random(70, 50, density=0.1, format="csr", random_state=1)
    plan = spmvkit.Plan(A, method="csr", backend="cpu")
    X = block(50, 6, np.float64, "C")
    for order in "CF":
        Y = block(70, 6, np.float64, order, seed=3)
        ref = 2.0 * (A @ X) - Y
        assert plan.apply(X, Y, alpha=2.0, beta=-1.0) is Y
        np.testing.assert_allclose(Y, ref, rtol=1e-12, atol=1e-12)
    wide = block(50, 12, np.float64, "C")
    np.testing.assert_allclose(plan @ wide[:, ::2], A @ wide[:, ::2], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(plan @ X.astype(np.int64), A @ X.astype(np.int64), rtol=1e-12)


def test_the_core_gets_the_block_order_and_one_call():
    A = sp.random(30, 20, density=0.2, format="csr", random_state=4)
    plan = spmvkit.Plan(A, method="csr", backend="cpu")
    calls = []
    core = plan._core

    class Spy:
        def __getattr__(self, name):
            attr = getattr(core, name)
            if name == "apply_multi":
                def spy(x, y, k, order, alpha, beta):
                    calls.append((k, order))
                    return attr(x, y, k, order, alpha, beta)
                return spy
            return attr

    plan._core = Spy()
    plan @ block(20, 5, np.float64, "C")
    plan @ block(20, 5, np.float64, "F")
    plan @ block(20, 1, np.float64, "F")
    assert calls == [(5, "row"), (5, "col"), (1, "row")]


def test_scipy_matmat_and_lobpcg_use_the_block_path():
    n = 200
    A = sp.diags([-1.0, 2.5, -1.0], [-1, 0, 1], shape=(n, n), format="csr")
    op = spmvkit.Plan(A, method="csr", backend="cpu").as_linear_operator()
    X = block(n, 4, np.float64, "F")
    np.testing.assert_allclose(op.matmat(X), A @ X, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(op @ X, A @ X, rtol=1e-12, atol=1e-12)
    vals, _ = spla.lobpcg(op, block(n, 3, np.float64, "C", seed=5), largest=False, tol=1e-6,
                          maxiter=1000)
    ref = np.sort(np.linalg.eigvalsh(A.toarray()))[:3]
    np.testing.assert_allclose(np.sort(vals), ref, rtol=1e-6)


def test_bad_blocks_raise_clear_errors():
    A = sp.random(10, 12, density=0.3, format="csr", random_state=1)
    plan = spmvkit.Plan(A, method="csr", backend="cpu")
    with pytest.raises(ValueError, match=r"x must be a 2-D array of shape \(12, k\)"):
        plan @ np.ones((11, 3))
    with pytest.raises(ValueError, match=r"y must be a 2-D array of shape \(10, 3\)"):
        plan.apply(np.ones((12, 3)), np.ones((10, 4)))
    with pytest.raises(ValueError, match=r"y must be a 2-D array of shape \(10, 3\)"):
        plan.apply(np.ones((12, 3)), np.ones(10))
    with pytest.raises(ValueError, match="x must be a 1-D array of 12 entries"):
        plan @ np.ones((12, 3, 2))
    with pytest.raises(TypeError, match="x must be real"):
        plan @ np.ones((12, 3), dtype=complex)
    with pytest.raises(TypeError, match="y must be real"):
        plan.apply(np.ones((12, 3)), np.ones((10, 3), dtype=complex))
    with pytest.raises(ValueError, match="beta != 0 needs y"):
        plan.apply(np.ones((12, 3)), beta=1.0)
    with pytest.raises(ValueError, match="k = 0|k=0|no vectors|0 vectors"):
        plan @ np.ones((12, 0))
