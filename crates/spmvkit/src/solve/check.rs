//! Checking a solver's answer (issue #20 item 6): the default stopping tolerances and iteration
//! limits, the single-process CPU reference solves, the error norms against them and the bounds
//! an answer must meet to count as agreeing with the reference. `spmv solve cg`,
//! `spmv pagerank` and their distributed forms (`spmv dist solve cg`, `spmv dist pagerank`) all
//! check their runs with these.
//!
//! CG solves A x = b with b = A·1 ([`CgSystem::ones_solution`]), so every CG answer is compared
//! with the exact answer (all ones) and, unless skipped, with an f64 CG solve on the CPU
//! ([`cg_reference`]). PageRank answers are compared with the serial f64 power iteration
//! ([`pagerank_reference`](super::pagerank_reference)).
//!
//! [`CgSystem::ones_solution`]: super::CgSystem::ones_solution

use crate::error::Result;
use crate::matrix::Csr;
use crate::methods::{Backend, Plan, PlanOptions};
use crate::scalar::{Precision, Scalar};

use super::{SolveOptions, SolveReport};

/// Iteration limit of CG when none is given.
pub const CG_MAX_ITER: usize = 10_000;
/// Iteration limit of PageRank when none is given.
pub const PAGERANK_MAX_ITER: usize = 1000;

/// CG's stopping tolerance (on ‖r‖/‖b‖) when none is given: 1e-8 in f64, 1e-5 in f32.
pub fn cg_default_tol(precision: Precision) -> f64 {
    match precision {
        Precision::F32 => 1e-5,
        Precision::F64 => 1e-8,
    }
}

/// PageRank's stopping tolerance (on the L1 change per iteration) when none is given: 1e-6 in
/// f64, 1e-5 in f32.
pub fn pagerank_default_tol(precision: Precision) -> f64 {
    match precision {
        Precision::F32 => 1e-5,
        Precision::F64 => 1e-6,
    }
}

/// The CPU reference for CG: f64 CG with the `csr` method on the CPU, on `a` cast to f64 and the
/// right-hand side `b`, with `opts` except that the tolerance is at most 1e-10. Returns the
/// answer and the reference solve's report (whose `stop` says whether it converged; the answer
/// is returned either way).
pub fn cg_reference<T: Scalar>(
    a: &Csr<T>,
    b: &[f64],
    opts: &SolveOptions,
) -> Result<(Vec<f64>, SolveReport)> {
    let a64: Csr<f64> = a.cast();
    let po = PlanOptions {
        backend: Some(Backend::Cpu),
        ..PlanOptions::default()
    };
    let mut p = Plan::new("csr", &a64, &po)?;
    let ro = SolveOptions {
        tol: opts.tol.min(1e-10),
        ..*opts
    };
    super::cg(&mut p, b, &ro)
}

/// ‖x − r‖₂ / ‖r‖₂ in f64, with `r(i)` the reference's entry i (‖x − r‖₂ when r is zero).
pub fn rel_err<T: Scalar>(x: &[T], r: impl Fn(usize) -> f64) -> f64 {
    let (mut num, mut den) = (0.0, 0.0);
    for (i, v) in x.iter().enumerate() {
        let d = v.to_f64() - r(i);
        num += d * d;
        den += r(i) * r(i);
    }
    if den > 0.0 {
        (num / den).sqrt()
    } else {
        num.sqrt()
    }
}

/// ‖x − r‖₁ in f64 (over the shorter of the two).
pub fn l1_err<T: Scalar>(x: &[T], r: &[f64]) -> f64 {
    x.iter().zip(r).map(|(v, w)| (v.to_f64() - w).abs()).sum()
}

/// The checks of a CG answer, named as the commands print them: `err_ref` (relative 2-norm
/// error against `reference`, when given) and `err_exact` (against all ones).
pub fn cg_checks<T: Scalar>(x: &[T], reference: Option<&[f64]>) -> Vec<(&'static str, f64)> {
    let mut v = vec![("err_exact", rel_err(x, |_| 1.0))];
    if let Some(r) = reference {
        v.insert(0, ("err_ref", rel_err(x, |i| r[i])));
    }
    v
}

/// The checks of a PageRank answer: `err_ref_l1` (L1 error against `reference`, when given)
/// and `rank_sum` (the sum of the ranks, 1 for an exact answer).
pub fn pagerank_checks<T: Scalar>(x: &[T], reference: Option<&[f64]>) -> Vec<(&'static str, f64)> {
    let sum: f64 = x.iter().map(|v| v.to_f64()).sum();
    let mut v = vec![("rank_sum", sum)];
    if let Some(r) = reference {
        v.insert(0, ("err_ref_l1", l1_err(x, r)));
    }
    v
}

/// The error floor of the acceptance bounds: 1e-3 in f32, 1e-9 in f64.
fn floor(precision: Precision) -> f64 {
    match precision {
        Precision::F32 => 1e-3,
        Precision::F64 => 1e-9,
    }
}

/// Largest `err_ref` of a converged CG answer that agrees with the reference:
/// ‖x − x_ref‖/‖x_ref‖ ≤ κ·tol, with a loose factor (1e4) that keeps ill-conditioned inputs
/// passing, and never below the precision's floor (1e-3 in f32, 1e-9 in f64).
pub fn cg_error_bound(tol: f64, precision: Precision) -> f64 {
    (1e4 * tol).max(floor(precision))
}

/// Largest `err_ref_l1` of a converged PageRank answer that agrees with the reference: the L1
/// error of a power iteration stopped at an L1 change of tol is ≲ tol·d/(1−d); the bound is
/// 10·tol/(1−d), never below the precision's floor (1e-3 in f32, 1e-9 in f64).
pub fn pagerank_error_bound(tol: f64, damping: f64, precision: Precision) -> f64 {
    (10.0 * tol / (1.0 - damping)).max(floor(precision))
}

/// Whether every reference error among `checks` (the names starting with `err_ref`) is at most
/// `bound`; true when there is none (no reference was computed).
pub fn within_bound(checks: &[(&str, f64)], bound: f64) -> bool {
    checks
        .iter()
        .filter(|(k, _)| k.starts_with("err_ref"))
        .all(|(_, v)| *v <= bound)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solve::{CgSystem, Stop};

    #[test]
    fn rel_err_is_relative_and_falls_back_to_absolute() {
        let x = [1.0f64, 2.0, 2.0];
        assert_eq!(rel_err(&x, |_| 0.0), 3.0);
        let e = rel_err(&[1.5f32, 1.0], |_| 1.0);
        assert!((e - (0.25f64 / 2.0).sqrt()).abs() < 1e-15);
        assert_eq!(rel_err(&[3.0f64, 4.0], |i| [3.0, 4.0][i]), 0.0);
    }

    #[test]
    fn l1_err_sums_absolute_differences() {
        assert_eq!(l1_err(&[1.0f64, -1.0, 0.5], &[0.0, 0.0, 1.0]), 2.5);
    }

    #[test]
    fn checks_are_named_and_ordered() {
        let x = [1.0f64, 1.0];
        let c = cg_checks(&x, Some(&[1.0, 1.0]));
        assert_eq!(c, vec![("err_ref", 0.0), ("err_exact", 0.0)]);
        assert_eq!(cg_checks(&x, None), vec![("err_exact", 0.0)]);
        let p = pagerank_checks(&[0.25f32, 0.75], Some(&[0.5, 0.5]));
        assert_eq!(p, vec![("err_ref_l1", 0.5), ("rank_sum", 1.0)]);
        assert_eq!(
            pagerank_checks(&[0.5f64, 0.5], None),
            vec![("rank_sum", 1.0)]
        );
    }

    #[test]
    fn bounds_follow_tolerance_and_precision() {
        assert_eq!(cg_error_bound(1e-8, Precision::F64), 1e-4);
        assert_eq!(cg_error_bound(1e-16, Precision::F64), 1e-9);
        assert_eq!(cg_error_bound(1e-9, Precision::F32), 1e-3);
        let b = pagerank_error_bound(1e-6, 0.5, Precision::F64);
        assert!((b - 2e-5).abs() < 1e-20);
        assert_eq!(pagerank_error_bound(1e-12, 0.85, Precision::F32), 1e-3);
        assert!(within_bound(&[("err_ref", 1e-5), ("err_exact", 1.0)], 1e-4));
        assert!(!within_bound(&[("err_ref_l1", 1e-3)], 1e-4));
        assert!(within_bound(&[("rank_sum", 1.0)], 0.0));
    }

    #[test]
    fn defaults() {
        assert_eq!(cg_default_tol(Precision::F64), 1e-8);
        assert_eq!(cg_default_tol(Precision::F32), 1e-5);
        assert_eq!(pagerank_default_tol(Precision::F64), 1e-6);
        assert_eq!(pagerank_default_tol(Precision::F32), 1e-5);
        assert_eq!((CG_MAX_ITER, PAGERANK_MAX_ITER), (10_000, 1000));
    }

    #[test]
    fn cg_reference_solves_the_ones_system() {
        let a = crate::gen::generate_f64("poisson2d:8").unwrap();
        let b = CgSystem::ones_solution(&a).b;
        let (x, rep) = cg_reference(&a, &b, &SolveOptions::default()).unwrap();
        assert_eq!(rep.stop, Stop::Converged);
        assert!(cg_checks(&x, None)[0].1 < 1e-8);
    }
}
