//! The oracle's verdicts must catch a wrong kernel (issue #18). Every registered method, on its
//! CPU mirror and on the GPU, in f32 and f64, runs an exact problem ([`ExactProblem`]) on a
//! matrix with rows of 10^3, 10^4 and 10^5 entries, then the same method prepared on a mutant of
//! that matrix: one nonzero dropped from a row of each length, one product changed by an integer
//! and, in f64, one product changed by a relative 2^−20 on a row of 10^5 entries. The clean run
//! must pass both the exact check and the tolerance check; a mutant must fail the exact check on
//! exactly the mutated rows, and in f64 the tolerance check too (the worst-case bound it replaced
//! let the 2^−20 product through).
//!
//! The GPU half skips without a GPU unless `SPMVKIT_REQUIRE_GPU=1`.

mod common;

use spmvkit::cpu::{check, check_exact, failing_rows, failing_rows_exact, ExactProblem};
use spmvkit::methods::{registry, Backend, Method, Plan, PlanOptions};
use spmvkit::{Csr, PrepareFor, Scalar};

const NCOLS: usize = 120_000;
/// (row, length) of the long rows; every other row has 1 to 40 entries.
const LONG: [(usize, usize); 5] = [
    (8, 1000),
    (16, 10_000),
    (24, 100_000),
    (32, 100_000),
    (40, 100_000),
];
const NROWS: usize = 48;

/// The pattern: short rows, and the long rows of [`LONG`], columns spread over all of x.
fn pattern() -> Csr<f64> {
    let mut ptr = vec![0u32];
    let mut cols: Vec<u32> = Vec::new();
    for i in 0..NROWS {
        let len = LONG
            .iter()
            .find(|&&(r, _)| r == i)
            .map_or(1 + (i * 7) % 40, |&(_, l)| l);
        let step = NCOLS as f64 / len as f64;
        cols.extend(
            (0..len).map(|k| ((k as f64 * step) as usize + (i % step.max(1.0) as usize)) as u32),
        );
        ptr.push(cols.len() as u32);
    }
    let vals = vec![1.0; cols.len()];
    Csr::new(NROWS, NCOLS, ptr, cols, vals).expect("valid pattern")
}

/// What a mutant changes, and the rows it changes.
struct Mutant<T> {
    a: Csr<T>,
    rows: Vec<usize>,
}

/// One nonzero dropped from rows 8, 16 and 24 (10^3, 10^4, 10^5 entries), row 32's 8th value
/// moved one further from zero, and in f64 row 40's 4th value scaled by 1 + 2^−20.
fn mutant<T: Scalar>(a: &Csr<T>) -> Mutant<T> {
    let f64_only = T::PRECISION == spmvkit::scalar::Precision::F64;
    let (mut ptr, mut cols, mut vals) = (vec![0u32], Vec::new(), Vec::new());
    for i in 0..a.nrows() {
        let (rc, rv) = a.row(i);
        for (k, (&c, &v)) in rc.iter().zip(rv).enumerate() {
            let v = v.to_f64();
            let v = match (i, k) {
                (8 | 16 | 24, k) if k == rc.len() / 2 => continue,
                (32, 7) => v + v.signum(),
                (40, 3) if f64_only => v * (1.0 + 2f64.powi(-20)),
                _ => v,
            };
            cols.push(c);
            vals.push(T::from_f64(v));
        }
        ptr.push(cols.len() as u32);
    }
    let mut rows = vec![8, 16, 24, 32];
    if f64_only {
        rows.push(40);
    }
    Mutant {
        a: Csr::new(a.nrows(), a.ncols(), ptr, cols, vals).expect("valid mutant"),
        rows,
    }
}

/// y of `method` on `a` for the problem `p` (vectors and scalars), on `backend`.
fn run<T: PrepareFor>(
    method: &'static dyn Method,
    backend: Backend,
    a: &Csr<T>,
    p: &ExactProblem<T>,
) -> Vec<T> {
    let opts = PlanOptions {
        backend: Some(backend),
        ..Default::default()
    };
    let name = method.info().name;
    let mut plan = Plan::with_method(method, a, &opts)
        .unwrap_or_else(|e| panic!("{name} ({:?}, {}): prepare: {e}", backend, T::PRECISION));
    let mut y = p.y0.clone();
    plan.apply(p.alpha, &p.x, p.beta, &mut y)
        .unwrap_or_else(|e| panic!("{name} ({:?}, {}): apply: {e}", backend, T::PRECISION));
    y
}

fn verdicts<T: PrepareFor>(method: &'static dyn Method, backend: Backend) {
    let what = format!("{} ({backend:?}, {})", method.info().name, T::PRECISION);
    let p = ExactProblem::new(&pattern().cast::<T>(), 18).expect("exact problem");
    let y = run(method, backend, &p.a, &p);
    let c = check_exact(&p.reference, &y);
    assert!(
        c.ok,
        "{what}: exact problem: row {} off by {:.3e}",
        c.worst_row, c.max_rel_err
    );
    assert!(
        check(&p.reference, &y).ok,
        "{what}: tolerance check failed on a correct run"
    );

    let m = mutant(&p.a);
    let y = run(method, backend, &m.a, &p);
    assert_eq!(
        failing_rows_exact(&p.reference, &y),
        m.rows,
        "{what}: the exact check must flag exactly the mutated rows"
    );
    let tol = failing_rows(&p.reference, &y);
    if T::PRECISION == spmvkit::scalar::Precision::F64 {
        assert_eq!(
            tol, m.rows,
            "{what}: the f64 tolerance check must flag every mutation"
        );
    } else {
        // f32: the 10^3-entry row's dropped product is above the rounding bound
        assert!(
            tol.contains(&8),
            "{what}: the f32 tolerance check missed row 8: {tol:?}"
        );
    }
}

#[test]
fn every_cpu_mirror_fails_on_a_dropped_nonzero_or_a_wrong_product() {
    for m in registry().iter().copied().filter(|m| m.info().cpu) {
        verdicts::<f64>(m, Backend::Cpu);
        verdicts::<f32>(m, Backend::Cpu);
    }
}

#[test]
fn every_gpu_method_fails_on_a_dropped_nonzero_or_a_wrong_product() {
    let Some((_gpu, _lock)) =
        common::gpu_or_skip("every_gpu_method_fails_on_a_dropped_nonzero_or_a_wrong_product")
    else {
        return;
    };
    for m in registry().iter().copied().filter(|m| m.info().gpu) {
        verdicts::<f64>(m, Backend::Gpu);
        verdicts::<f32>(m, Backend::Gpu);
    }
}

/// The old worst-case bound, 2·(len+2)·ε·magnitude, let the f64 2^−20 product through on a row of
/// 10^5 entries; the √len bound does not.
#[test]
fn the_sqrt_bound_is_tighter_than_the_worst_case_where_it_matters() {
    let p = ExactProblem::new(&pattern(), 18).expect("exact problem");
    let m = mutant(&p.a);
    let y: Vec<f64> = (0..m.a.nrows())
        .map(|i| {
            let (cols, vals) = m.a.row(i);
            let s: f64 = cols
                .iter()
                .zip(vals)
                .map(|(&c, &v)| v * p.x[c as usize])
                .sum();
            p.alpha * s + p.beta * p.y0[i]
        })
        .collect();
    let old_tol = 2.0 * (100_000.0 + 2.0) * f64::EPSILON * p.reference.scale[40];
    assert!(
        (y[40] - p.reference.y[40]).abs() <= old_tol,
        "the old bound would have caught it"
    );
    assert!(failing_rows(&p.reference, &y).contains(&40));
}
