"""The CPU path of the Python package (issue #23) against SciPy, in f32 and f64."""

import pathlib

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import spmvkit

DATA = pathlib.Path(__file__).resolve().parents[2] / "crates" / "spmvkit" / "tests" / "data" / "valid"


def edge_cases():
    """Small matrices that break careless code: empty, empty rows, a dense row, rectangular."""
    rng = np.random.default_rng(7)
    yield "empty 0x0", sp.csr_matrix((0, 0))
    yield "no entries 5x3", sp.csr_matrix((5, 3))
    yield "one entry", sp.csr_matrix(([2.5], ([3], [1])), shape=(4, 4))
    dense_row = sp.lil_matrix((50, 50))
    dense_row[7, :] = rng.standard_normal(50)
    dense_row[20, 3] = 1.0
    yield "one dense row", dense_row.tocsr()
    yield "rectangular 40x90", sp.random(40, 90, density=0.1, format="csr", random_state=3)
    yield "random 500", sp.random(500, 500, density=0.02, format="csr", random_state=5)
    yield "poisson-like", sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(300, 300), format="csr")


CASES = list(edge_cases())
METHODS = ["csr", "csr-vector", "csr-packed", "merge", "auto"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name,A", CASES, ids=[c[0] for c in CASES])
def test_apply_matches_scipy(name, A, method, dtype):
    A = A.astype(dtype)
    plan = spmvkit.Plan(A, method=method, backend="cpu")
    rng = np.random.default_rng(11)
    x = rng.standard_normal(A.shape[1]).astype(dtype)
    y0 = rng.standard_normal(A.shape[0]).astype(dtype)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    assert np.allclose(plan @ x, A @ x, rtol=tol, atol=tol)
    y = y0.copy()
    out = plan.apply(x, y=y, alpha=-1.5, beta=0.5)
    assert out is y
    assert np.allclose(y, -1.5 * (A @ x) + 0.5 * y0, rtol=tol, atol=tol)


@pytest.mark.parametrize("fmt", ["csc", "coo"])
def test_other_scipy_formats_and_a_csr_tuple(fmt):
    A = sp.random(60, 70, density=0.1, format=fmt, random_state=2)
    x = np.linspace(-1, 1, 70)
    assert np.allclose(spmvkit.Plan(A, method="csr", backend="cpu") @ x, A @ x)
    c = A.tocsr()
    parts = (c.indptr, c.indices, c.data, c.shape)
    assert np.allclose(spmvkit.Plan(parts, method="merge", backend="cpu") @ x, A @ x)


def test_a_matrix_market_file_loads_and_runs():
    A = spmvkit.load(DATA / "coordinate_real_general.mtx")
    assert sp.isspmatrix_csr(A)
    x = np.ones(A.shape[1])
    assert np.allclose(spmvkit.Plan(A, backend="cpu") @ x, A @ x)


def test_properties_and_value_updates():
    A = sp.random(200, 200, density=0.05, format="csr", random_state=4)
    plan = spmvkit.Plan(A, method="csr-packed", backend="cpu")
    assert plan.method == "csr-packed" and plan.backend == "cpu" and plan.deterministic
    assert plan.prep_seconds >= 0.0
    assert any(k == "bytes per nonzero" for k, _ in plan.notes)
    B = A.copy()
    B.data = B.data * 3.0 - 1.0
    assert plan.update_values(B.data) in ("gathered", "reencoded", "reprepared")
    x = np.arange(200.0)
    assert np.allclose(plan @ x, B @ x)


def test_auto_says_what_it_chose_and_keeps_to_deterministic_methods():
    A = sp.random(400, 400, density=0.02, format="csr", random_state=8)
    plan = spmvkit.Plan(A, method="auto", calls=10, deterministic=True, backend="cpu")
    assert plan.method in spmvkit.methods() and plan.method != "auto"
    assert plan.deterministic


def test_scipy_cg_runs_on_a_plan():
    n = 200
    A = sp.diags([-1.0, 2.5, -1.0], [-1, 0, 1], shape=(n, n), format="csr")
    b = A @ np.ones(n)
    x, info = spla.cg(spmvkit.Plan(A, method="csr", backend="cpu").as_linear_operator(), b)
    assert info == 0 and np.allclose(x, 1.0, atol=1e-4)


def test_bad_input_raises_clear_python_errors():
    A = sp.random(10, 12, density=0.3, format="csr", random_state=1)
    plan = spmvkit.Plan(A, method="csr", backend="cpu")
    with pytest.raises(ValueError, match="x must be a 1-D array of 12 entries"):
        plan @ np.ones(11)
    with pytest.raises(ValueError, match="beta != 0 needs y"):
        plan.apply(np.ones(12), beta=1.0)
    with pytest.raises(ValueError, match="unknown method|no-such-method"):
        spmvkit.Plan(A, method="no-such-method", backend="cpu")
    with pytest.raises(ValueError, match="precision"):
        spmvkit.Plan(A, precision="f16")
    with pytest.raises(TypeError, match="SciPy sparse matrix"):
        spmvkit.Plan([[1, 2], [3, 4]])
    with pytest.raises(ValueError, match="backend"):
        spmvkit.Plan(A, backend="tpu")
    bad = (np.array([0, 1, 2]), np.array([0, 9]), np.array([1.0, 2.0]), (2, 3))
    with pytest.raises(ValueError):
        spmvkit.Plan(bad, method="csr", backend="cpu")
    assert "csr" in spmvkit.methods()
