//! The host form of the solvers' iterations, written once over [`RowOperator`]: the rows this
//! process holds, the SpMV over them and the sum over ranks. The single-process CPU path of
//! [`crate::solve::cg()`] and [`crate::solve::pagerank()`] runs it over one rank ([`PlanRows`]); the
//! distributed solvers (`crate::dist::solve`) run it over P simulated ranks and over NCCL ranks.
//! Scalars live on the host and the vector updates are rayon loops over the local rows; a dot
//! product, a norm, PageRank's dangling mass and its L1 change are partial sums over each rank's
//! rows followed by an all-reduce.

use std::ops::Range;
use std::time::Instant;

use rayon::prelude::*;

use super::{
    check_options, dot_cpu, Launch, PageRankOptions, Renumbering, SolveOptions, SolveReport, Stop,
};
use crate::error::{Error, Result};
use crate::methods::{Backend, Plan, PrepareFor};
use crate::scalar::{Idx, Scalar};

/// What a distributed solver needs from the world it runs in: the rows this process holds, the
/// SpMV over them, and the sum over ranks.
///
/// Local vectors hold the rows `offset()..offset() + len` (len = the sum of the blocks' lengths),
/// one block per rank this process plays: every rank in the simulation, its own in a NCCL rank.
pub trait RowOperator<T: Scalar> {
    /// Global number of rows (= columns: the solvers need a square matrix).
    fn global_rows(&self) -> usize;
    /// The global rows of each rank this process plays, ascending and contiguous.
    fn blocks(&self) -> Vec<Range<usize>>;
    /// y = A x on the local rows (x: this process's rows of x; the operator exchanges the rest).
    fn apply(&mut self, x: &[T], y: &mut [T]) -> Result<()>;
    /// Sums every entry over the ranks of the world, in place (each rank passes its partials).
    fn all_reduce_sum(&mut self, v: &mut [f64]) -> Result<()>;
    /// Where the SpMV runs.
    fn backend(&self) -> Backend;

    /// Global row of local index 0.
    fn offset(&self) -> usize {
        self.blocks().first().map_or(0, |b| b.start)
    }
    /// Length of the local vectors.
    fn local_len(&self) -> usize {
        self.blocks().iter().map(|b| b.len()).sum()
    }
}

/// Global sums of `k` partial sums: `part(local rows, global rows)` over each block, the blocks'
/// partials added in rank order, then the all-reduce over the world.
pub(crate) fn global_sums<T: Scalar, O: RowOperator<T>>(
    op: &mut O,
    k: usize,
    part: impl Fn(Range<usize>, Range<usize>) -> Vec<f64>,
) -> Result<Vec<f64>> {
    let off = op.offset();
    let mut acc = vec![0.0; k];
    for b in op.blocks() {
        let p = part(b.start - off..b.end - off, b);
        acc.iter_mut().zip(&p).for_each(|(a, v)| *a += v);
    }
    op.all_reduce_sum(&mut acc)?;
    Ok(acc)
}

/// Global Σ aᵢ·bᵢ of two local vectors.
pub(crate) fn dot<T: Scalar, O: RowOperator<T>>(op: &mut O, a: &[T], b: &[T]) -> Result<f64> {
    Ok(global_sums(op, 1, |l, _| vec![dot_cpu(&a[l.clone()], &b[l])])?[0])
}

/// CG's checks on the options and the rank's rows of b, then ‖b‖² (over all ranks) and the
/// stopping threshold ([`super::cg_threshold`]).
pub(crate) fn cg_start<T: Scalar, O: RowOperator<T>>(
    op: &mut O,
    b: &[T],
    opts: &SolveOptions,
) -> Result<(f64, f64)> {
    check_options(opts)?;
    check_local(op, "b", b.len())?;
    let bb = dot(op, b, b)?;
    Ok((bb, super::cg_threshold(bb, opts)?))
}

/// [`cg_start`], then the host CGs' iterate x = 0 and residual r = b.
fn host_start<T: Scalar, O: RowOperator<T>>(
    op: &mut O,
    b: &[T],
    opts: &SolveOptions,
) -> Result<(f64, f64, Vec<T>, Vec<T>)> {
    let (bb, thresh) = cg_start(op, b, opts)?;
    Ok((bb, thresh, vec![T::zero(); b.len()], b.to_vec()))
}

pub(crate) fn check_local<T: Scalar, O: RowOperator<T>>(
    op: &O,
    what: &str,
    len: usize,
) -> Result<()> {
    if op.local_len() != len {
        return Err(Error::DimensionMismatch {
            what: format!("distributed solver: local {what}"),
            expected: op.local_len(),
            got: len,
        });
    }
    Ok(())
}

/// Conjugate gradient on A x = b from x = 0, stopping at ‖r‖/‖b‖ ≤ tol, every rank holding its
/// rows of b, x, r, p and q. `b` is this process's rows of b; the result is its rows of x. The
/// same iteration is [`crate::solve::cg()`]'s CPU path (over [`PlanRows`]).
///
/// ```
/// use spmvkit::{dist::{solve, SimRows, StrategyChoice}, gen, solve::{CgSystem, SolveOptions, Stop}};
/// let a = gen::generate_f64("poisson3d:6").unwrap();
/// let b = CgSystem::ones_solution(&a).b;
/// let mut op = SimRows::new(&a, 3, "csr", StrategyChoice::Auto).unwrap();
/// let (x, report) = solve::cg(&mut op, &b, &SolveOptions::default()).unwrap();
/// assert_eq!(report.stop, Stop::Converged);
/// assert!(x.iter().all(|v| (v - 1.0).abs() < 1e-6));
/// ```
pub fn cg<T: Scalar, O: RowOperator<T>>(
    op: &mut O,
    b: &[T],
    opts: &SolveOptions,
) -> Result<(Vec<T>, SolveReport)> {
    let (bb, thresh, mut x, mut r) = host_start(op, b, opts)?;
    let n = b.len();
    let mut p = b.to_vec();
    let mut q = vec![T::zero(); n];
    let mut rho = bb;
    let mut it = 0;
    let t0 = Instant::now();
    let stop = loop {
        if let Some(stop) = stop_before(rho, thresh, it, opts.max_iter) {
            break stop;
        }
        op.apply(&p, &mut q)?;
        let pq = dot(op, &p, &q)?;
        if !(pq > 0.0 && pq.is_finite()) {
            break Stop::Breakdown;
        }
        let alpha = T::from_f64(rho / pq);
        x.par_iter_mut()
            .zip(r.par_iter_mut())
            .zip(p.par_iter().zip(q.par_iter()))
            .for_each(|((xi, ri), (pi, qi))| {
                *xi += alpha * *pi;
                *ri = *ri - alpha * *qi;
            });
        let rr = dot(op, &r, &r)?;
        it += 1;
        if !rr.is_finite() {
            rho = rr;
            break Stop::Breakdown;
        }
        let beta = T::from_f64(rr / rho);
        rho = rr;
        p.par_iter_mut()
            .zip(r.par_iter())
            .for_each(|(pi, ri)| *pi = *ri + beta * *pi);
    };
    Ok((x, cg_report(op, it, stop, rho, bb, t0)))
}

/// Single-reduction conjugate gradient (Chronopoulos & Gear, "s-step iterative methods for
/// symmetric linear systems", J. Comput. Appl. Math. 25, 1989; issue #26): the same iterates as
/// [`cg`] in exact arithmetic, with the two dot products of an iteration (rᵀr and wᵀr, w = A r)
/// taken together, so each iteration makes **one** all-reduce of two values instead of two of
/// one. It keeps s = A p by the recurrence s = w + β s instead of computing A p, so per
/// iteration: w = A r, then (γ, δ) = (rᵀr, wᵀr) in one reduction, β = γ/γ_old,
/// α = γ/(δ − βγ/α_old), p = r + βp, s = w + βs, x += αp, r −= αs. The stopping rule is [`cg`]'s
/// (‖r‖/‖b‖ ≤ tol on the recurrence residual), and δ − βγ/α = pᵀAp ≤ 0 is a breakdown.
///
/// ```
/// use spmvkit::{dist::{solve, SimRows, StrategyChoice}, gen, solve::{CgSystem, SolveOptions, Stop}};
/// let a = gen::generate_f64("poisson3d:6").unwrap();
/// let b = CgSystem::ones_solution(&a).b;
/// let mut op = SimRows::new(&a, 3, "csr", StrategyChoice::Auto).unwrap();
/// let (x, report) = solve::cg_single_reduction(&mut op, &b, &SolveOptions::default()).unwrap();
/// assert_eq!(report.stop, Stop::Converged);
/// assert!(x.iter().all(|v| (v - 1.0).abs() < 1e-6));
/// ```
pub fn cg_single_reduction<T: Scalar, O: RowOperator<T>>(
    op: &mut O,
    b: &[T],
    opts: &SolveOptions,
) -> Result<(Vec<T>, SolveReport)> {
    let (bb, thresh, mut x, mut r) = host_start(op, b, opts)?;
    let n = b.len();
    let mut w = vec![T::zero(); n];
    let mut p = vec![T::zero(); n];
    let mut s = vec![T::zero(); n];
    let mut gamma = bb;
    let (mut gamma_old, mut alpha_old) = (1.0, 1.0);
    let mut it = 0;
    let t0 = Instant::now();
    let stop = loop {
        if let Some(stop) = stop_before(gamma, thresh, it, opts.max_iter) {
            break stop;
        }
        op.apply(&r, &mut w)?;
        // the one reduction of the iteration: γ = rᵀr and δ = wᵀr together
        let sums = global_sums(op, 2, |l, _| {
            vec![
                dot_cpu(&r[l.clone()], &r[l.clone()]),
                dot_cpu(&w[l.clone()], &r[l]),
            ]
        })?;
        let (g, delta) = (sums[0], sums[1]);
        if it > 0 {
            gamma = g;
            if gamma <= thresh {
                break Stop::Converged;
            }
        }
        if !gamma.is_finite() {
            break Stop::Breakdown;
        }
        let beta = if it == 0 { 0.0 } else { gamma / gamma_old };
        let pap = if it == 0 {
            delta
        } else {
            delta - beta * gamma / alpha_old
        };
        if !(pap > 0.0 && pap.is_finite()) {
            break Stop::Breakdown;
        }
        let alpha = gamma / pap;
        let (at, bt) = (T::from_f64(alpha), T::from_f64(beta));
        x.par_iter_mut()
            .zip(r.par_iter_mut())
            .zip(p.par_iter_mut().zip(s.par_iter_mut()))
            .zip(w.par_iter())
            .for_each(|(((xi, ri), (pi, si)), wi)| {
                *pi = *ri + bt * *pi;
                *si = *wi + bt * *si;
                *xi += at * *pi;
                *ri = *ri - at * *si;
            });
        gamma_old = gamma;
        alpha_old = alpha;
        it += 1;
    };
    // γ of the last iterate when the loop stopped before reducing it
    let rho = if stop == Stop::MaxIterations && it > 0 {
        dot(op, &r, &r)?
    } else {
        gamma
    };
    Ok((x, cg_report(op, it, stop, rho, bb, t0)))
}

/// CG's checks before an iteration (both host CGs): converged when ρ = rᵀr is at most the
/// threshold, else stopped when `it` iterations reached the limit.
fn stop_before(rho: f64, thresh: f64, it: usize, max_iter: usize) -> Option<Stop> {
    if rho <= thresh {
        Some(Stop::Converged)
    } else if it >= max_iter {
        Some(Stop::MaxIterations)
    } else {
        None
    }
}

/// The report of a host iteration over `op`: `it` iterations since `t0`, stopped by `stop` at
/// the stopping measure `residual`.
fn host_report<T: Scalar, O: RowOperator<T>>(
    op: &O,
    it: usize,
    stop: Stop,
    residual: f64,
    t0: Instant,
) -> SolveReport {
    SolveReport {
        backend: op.backend(),
        launch: match op.backend() {
            Backend::Cpu => Launch::Cpu,
            Backend::Gpu => Launch::Stream,
        },
        iterations: it,
        launched: it,
        stop,
        residual,
        seconds: t0.elapsed().as_secs_f64(),
        notes: Vec::new(),
    }
}

/// A host CG's report ([`host_report`]): the residual ‖r‖/‖b‖ from ρ = rᵀr and ‖b‖² = `bb`, and
/// the breakdown's explanation when it broke down.
fn cg_report<T: Scalar, O: RowOperator<T>>(
    op: &O,
    it: usize,
    stop: Stop,
    rho: f64,
    bb: f64,
    t0: Instant,
) -> SolveReport {
    let mut report = host_report(op, it, stop, super::cg::relative(rho, bb), t0);
    note_breakdown(&mut report);
    report
}

/// PageRank by power iteration with `op` the distributed transition matrix P = Aᵀ D⁻¹
/// ([`PageRankGraph::transition`](super::PageRankGraph::transition)) and `dangling` the global list of dangling nodes (ascending);
/// returns this process's rows of the ranks. The same iteration is
/// [`crate::solve::pagerank()`]'s CPU path (over [`PlanRows`]): x' = d·P x + (d·dangling mass + 1 − d)/n from x = 1/n,
/// stopping when ‖x' − x‖₁ ≤ tol.
///
/// ```
/// use spmvkit::{dist::{solve, SimRows, StrategyChoice}, gen, solve::{PageRankGraph, PageRankOptions}};
/// let adj = gen::generate_f64("kron:8").unwrap();
/// let g = PageRankGraph::from_adjacency(&adj).unwrap();
/// let mut op = SimRows::new(&g.transition, 2, "csr", StrategyChoice::Auto).unwrap();
/// let (x, _) = solve::pagerank(&mut op, &g.dangling, &PageRankOptions::default()).unwrap();
/// assert!((x.iter().sum::<f64>() - 1.0).abs() < 1e-9);
/// ```
pub fn pagerank<T: Scalar, O: RowOperator<T>>(
    op: &mut O,
    dangling: &[Idx],
    opts: &PageRankOptions,
) -> Result<(Vec<T>, SolveReport)> {
    let n = op.global_rows();
    check_pagerank(n, dangling, opts)?;
    let off = op.offset();
    let len = op.local_len();
    let mine = local_dangling(dangling, off, len);
    // Σ x over the dangling nodes of local rows l
    let mass_of = |x: &[T], l: &Range<usize>| -> f64 {
        let a = mine.partition_point(|&i| i < l.start);
        let b = mine.partition_point(|&i| i < l.end);
        mine[a..b].iter().map(|&i| x[i].to_f64()).sum()
    };
    let d = opts.damping;
    let mut x = vec![T::from_f64(1.0 / n.max(1) as f64); len];
    let mut y = vec![T::zero(); len];
    let mut mass = global_sums(op, 1, |l, _| vec![mass_of(&x, &l)])?[0];
    let (mut it, mut err) = (0, f64::INFINITY);
    let t0 = Instant::now();
    let stop = loop {
        if n == 0 || err <= opts.solve.tol {
            break Stop::Converged;
        }
        if it >= opts.solve.max_iter {
            break Stop::MaxIterations;
        }
        op.apply(&x, &mut y)?;
        let base = T::from_f64((d * mass + 1.0 - d) / n as f64);
        let dt = T::from_f64(d);
        // y ← the new ranks d·P x + base
        y.par_iter_mut().for_each(|v| *v = dt * *v + base);
        // one all-reduce: this iteration's L1 change and the next iteration's dangling mass
        let sums = global_sums(op, 2, |l, _| {
            vec![l1_distance(&x[l.clone()], &y[l.clone()]), mass_of(&y, &l)]
        })?;
        std::mem::swap(&mut x, &mut y);
        err = sums[0];
        mass = sums[1];
        it += 1;
        if !err.is_finite() {
            break Stop::Breakdown;
        }
    };
    let residual = if it == 0 { 0.0 } else { err };
    Ok((x, host_report(op, it, stop, residual, t0)))
}

/// The local indices of the dangling nodes among the rows `off..off + len`.
pub(crate) fn local_dangling(dangling: &[Idx], off: usize, len: usize) -> Vec<usize> {
    let lo = dangling.partition_point(|&i| (i as usize) < off);
    let hi = dangling.partition_point(|&i| (i as usize) < off + len);
    dangling[lo..hi].iter().map(|&i| i as usize - off).collect()
}

/// PageRank's checks of the options and of the dangling list of an n-node graph.
pub(crate) fn check_pagerank(n: usize, dangling: &[Idx], opts: &PageRankOptions) -> Result<()> {
    check_options(&opts.solve)?;
    if !(0.0..1.0).contains(&opts.damping) {
        return Err(Error::InvalidArgument(format!(
            "PageRank damping {} must lie in [0, 1)",
            opts.damping
        )));
    }
    if let Some(&bad) = dangling.iter().find(|&&i| i as usize >= n) {
        return Err(Error::InvalidArgument(format!(
            "dangling node {bad} is out of range for {n} nodes"
        )));
    }
    if dangling.windows(2).any(|w| w[0] >= w[1]) {
        return Err(Error::InvalidArgument(
            "the dangling nodes must be ascending and distinct".into(),
        ));
    }
    Ok(())
}

/// Σ |aᵢ − bᵢ| in f64, in fixed chunks added in order ([`super::chunked_sum`]).
pub(crate) fn l1_distance<T: Scalar>(a: &[T], b: &[T]) -> f64 {
    super::chunked_sum(a, b, |p, q| (p - q).abs())
}

/// One rank holding every row: a plan's executor, with nothing to reduce over. Its SpMV is in
/// the plan's own numbering ([`Plan::apply_permuted`]): with a reordering P it is B = PAPᵀ's,
/// and the single-plan solvers move their input into that numbering once and the answer back
/// once.
pub struct PlanRows<'a, T: PrepareFor>(pub &'a mut Plan<T>);

impl<T: PrepareFor> RowOperator<T> for PlanRows<'_, T> {
    fn global_rows(&self) -> usize {
        self.0.nrows()
    }
    fn blocks(&self) -> Vec<Range<usize>> {
        let all = 0..self.0.nrows();
        vec![all]
    }
    fn apply(&mut self, x: &[T], y: &mut [T]) -> Result<()> {
        self.0.apply_permuted(T::one(), x, T::zero(), y)
    }
    fn all_reduce_sum(&mut self, _v: &mut [f64]) -> Result<()> {
        Ok(())
    }
    fn backend(&self) -> Backend {
        self.0.backend()
    }
}

impl<'a, T: PrepareFor> PlanRows<'a, T> {
    /// Runs `solve` over `plan` as one rank, in the plan's own numbering: `solve` moves its input
    /// in through the [`Renumbering`] it is given (P's, when the plan reorders), and its answer
    /// is permuted back here, once. Then adds the plan's fallback note (when it has one) to the
    /// report: the CPU path of the single-plan solvers.
    pub(crate) fn solve(
        plan: &'a mut Plan<T>,
        solve: impl FnOnce(&mut Self, &Renumbering<'_>) -> Result<(Vec<T>, SolveReport)>,
    ) -> Result<(Vec<T>, SolveReport)> {
        let note = plan.fallback_note().map(String::from);
        let perm = plan.permutation().cloned();
        let to = Renumbering(perm.as_ref());
        let (x, mut report) = solve(&mut PlanRows(plan), &to)?;
        report.notes.extend(note);
        Ok((to.back(x)?, report))
    }
}

/// Adds CG's breakdown explanation to a report that stopped on a breakdown.
pub(crate) fn note_breakdown(report: &mut SolveReport) {
    if report.stop == Stop::Breakdown {
        report.notes.push(
            "CG broke down (pᵀAp ≤ 0 or a non-finite value): the matrix is not symmetric positive definite"
                .into(),
        );
    }
}
