//! Serial reference SpMV, y = αAx + βy, accumulating every row in f64 and recording the row's
//! magnitude Σ|α·a_ij·x_j| + |β·y_i| that scales the tolerance of every comparison.
//!
//! # The tolerance
//!
//! A method computes a row in precision T (unit roundoff u = ε_T/2) in an order of its own, so its
//! y_i differs from the exact value by rounding alone. The worst case over all orders is
//! (len+2)·u·magnitude, far above what any real order produces: with it a long row could lose
//! whole nonzeros unnoticed in f32 (issue #18). The check uses instead the probabilistic bound of
//! Higham and Mary ("A new approach to probabilistic rounding error analysis", SIAM J. Sci.
//! Comput. 41(5), 2019, Thm. 3.1): the rounding error of a sum of n terms is at most
//! λ·√n·u·Σ|terms| with probability at least 1 − 2n·exp(−λ²/2), for independent, mean-zero
//! rounding errors. spmvkit takes λ = 8 (failure probability ≤ 2n·e^−32 ≈ 2.5·10^−14·n per row)
//! and a safety factor 2 for orders whose errors are not independent (tree and atomic sums,
//! product rounding), so row i passes when
//!
//! |y_i − ref_i| ≤ min(2·(n+2), [`SQRT_FACTOR`]·√(n+2)) · ε_T · magnitude_i,   n = row length,
//!
//! the first term being the old worst-case bound (tighter below n = 14). It grows like √n·u, so
//! in f64 a dropped nonzero or a product off by 10^−6 is caught on rows of 10^5 entries.
//!
//! No bound can see a dropped nonzero of average size in a long f32 row: its product is below the
//! f32 rounding of the row sum itself. For that [`crate::cpu::exact`] builds problems of small
//! integers, whose every partial sum is exact in f32 and f64, and compares for equality.

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::matrix::{check_vectors, Csr, VectorFit};
use crate::scalar::{Offset, Scalar};

/// The oracle's answer: y in f64 and each row's magnitude for tolerances.
#[derive(Clone, Debug)]
pub struct Reference {
    pub y: Vec<f64>,
    /// |α|·Σ_j |a_ij·x_j| + |β·y0_i| per row.
    pub scale: Vec<f64>,
    /// Row lengths, which bound the rounding error of any summation order.
    pub row_len: Vec<u32>,
    /// α·Σ_j a_ij·x_j per row, before β·y0 is added (the part every call repeats).
    pub ax: Vec<f64>,
}

/// The outcome of comparing a result with the oracle.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Check {
    /// max over rows of |y − y_ref| / scale (rows with scale 0 must match exactly).
    pub max_rel_err: f64,
    /// The row where it occurred.
    pub worst_row: usize,
    /// Whether every row is inside its tolerance.
    pub ok: bool,
}

/// Serial f64 SpMV: returns y = αAx + βy0 without touching `y0`.
pub fn oracle_spmv<T: Scalar, O: Offset>(
    a: &Csr<T, O>,
    alpha: T,
    x: &[T],
    beta: T,
    y0: &[T],
) -> Result<Reference> {
    check_lengths(a, x.len(), y0.len())?;
    let rows: Vec<(f64, f64, f64)> = (0..a.nrows())
        .map(|i| oracle_row(a, alpha, x, beta, y0[i], i))
        .collect();
    Ok(Reference::from_rows(a, rows))
}

/// The same oracle with rows spread over threads: each row is still summed serially in f64 in
/// column order, so the result is bitwise the one of [`oracle_spmv`], only sooner on big
/// matrices (the benchmark harness uses it).
pub fn oracle_spmv_par<T: Scalar, O: Offset>(
    a: &Csr<T, O>,
    alpha: T,
    x: &[T],
    beta: T,
    y0: &[T],
) -> Result<Reference> {
    oracle_spmv_rows(a, 0..a.nrows(), alpha, x, beta, y0)
}

/// The oracle on rows `rows` of `a` only (one rank's share of a distributed SpMV), in parallel
/// as [`oracle_spmv_par`]: `y0` and the answer hold those rows, from `rows.start`.
pub fn oracle_spmv_rows<T: Scalar, O: Offset>(
    a: &Csr<T, O>,
    rows: std::ops::Range<usize>,
    alpha: T,
    x: &[T],
    beta: T,
    y0: &[T],
) -> Result<Reference> {
    if rows.end > a.nrows() || rows.start > rows.end {
        return Err(Error::InvalidArgument(format!(
            "oracle rows {}..{} outside a matrix of {} rows",
            rows.start,
            rows.end,
            a.nrows()
        )));
    }
    check_vectors(
        "",
        (rows.len(), a.ncols()),
        x.len(),
        y0.len(),
        VectorFit::Exact,
    )?;
    let start = rows.start;
    let parts: Vec<(f64, f64, f64)> = rows
        .clone()
        .into_par_iter()
        .with_min_len(4096)
        .map(|i| oracle_row(a, alpha, x, beta, y0[i - start], i))
        .collect();
    Ok(Reference::from_parts(
        parts,
        rows.map(|i| a.row_len(i) as u32).collect(),
    ))
}

/// `n` rows of a matrix of `nrows` spread over it for a sampled check: the first and last rows
/// and evenly spaced ones between, each moved by a fixed pseudo-random step inside its stretch
/// (so a sample is not only every k-th row), ascending and distinct; every row when `n ≥ nrows`.
pub fn sample_rows(nrows: usize, n: usize) -> Vec<usize> {
    if n >= nrows {
        return (0..nrows).collect();
    }
    let stretch = nrows as f64 / n as f64;
    let mut rows: Vec<usize> = (0..n)
        .map(|k| {
            let jitter = (crate::hash::fnv1a(&(k as u64).to_le_bytes()) % 1024) as f64 / 1024.0;
            ((k as f64 + jitter) * stretch) as usize
        })
        .chain([0, nrows.saturating_sub(1)])
        .filter(|&r| r < nrows)
        .collect();
    rows.sort_unstable();
    rows.dedup();
    rows
}

/// The serial oracle on the rows `rows` alone, each summed in f64 in column order, and `y`
/// (all rows) checked against it on those rows with the rule of [`check`]: the sampled check of
/// a large run, independent of the parallel oracle that checks the full y. The reported row is
/// the matrix's.
#[allow(clippy::too_many_arguments)]
pub fn check_sampled<T: Scalar, O: Offset>(
    a: &Csr<T, O>,
    alpha: T,
    x: &[T],
    beta: T,
    y0: &[T],
    y: &[T],
    rows: &[usize],
) -> Result<Check> {
    check_lengths(a, x.len(), y0.len())?;
    check_lengths(a, x.len(), y.len())?;
    if let Some(&bad) = rows.iter().find(|&&r| r >= a.nrows()) {
        return Err(Error::InvalidArgument(format!(
            "sampled row {bad} outside a matrix of {} rows",
            a.nrows()
        )));
    }
    let parts: Vec<(f64, f64, f64)> = rows
        .iter()
        .map(|&i| oracle_row(a, alpha, x, beta, y0[i], i))
        .collect();
    let reference =
        Reference::from_parts(parts, rows.iter().map(|&i| a.row_len(i) as u32).collect());
    let ys: Vec<T> = rows.iter().map(|&i| y[i]).collect();
    let mut c = check(&reference, &ys);
    c.worst_row = rows.get(c.worst_row).copied().unwrap_or(0);
    Ok(c)
}

/// Row i of the oracle: (y_i, scale_i, α·Σ a_ij·x_j).
#[inline]
fn oracle_row<T: Scalar, O: Offset>(
    a: &Csr<T, O>,
    alpha: T,
    x: &[T],
    beta: T,
    y0_i: T,
    i: usize,
) -> (f64, f64, f64) {
    let (alpha, beta) = (alpha.to_f64(), beta.to_f64());
    let (cols, vals) = a.row(i);
    let (mut s, mut m) = (0f64, 0f64);
    for (&c, &v) in cols.iter().zip(vals) {
        let p = v.to_f64() * x[c as usize].to_f64();
        s += p;
        m += p.abs();
    }
    let b = if beta == 0.0 {
        0.0
    } else {
        beta * y0_i.to_f64()
    };
    (alpha * s + b, alpha.abs() * m + b.abs(), alpha * s)
}

impl Reference {
    /// The expectation after `calls` calls of y ← αAx + βy from `y0`, when `self` is the oracle
    /// of one call from `y0` with the same β (the benchmark's timed loops run many calls on one
    /// y and are checked against this).
    ///
    /// With t = αAx, y_n = t·Σ_{k<n} β^k + β^n·y0. Each call adds a rounding error within its
    /// row tolerance of its own magnitude |α|·Σ|a·x| + |β|·|y_{k−1}|, and β carries the earlier
    /// errors along, so the magnitude after n calls is, with B = |β| and m = |α|·Σ|a·x|,
    /// m·W_n + n·B^n·|y0|, where W_n = Σ_{k=1..n} B^{n−k}·Σ_{j<k} B^j
    /// = (Σ_{j<n} B^j − n·B^n)/(1 − B), or n(n+1)/2 when B = 1. Row tolerances then follow
    /// [`check`]. `None` when |β| > 1 (y grows without bound) or `y0` has the wrong length.
    pub fn after_calls<T: Scalar>(&self, beta: T, y0: &[T], calls: u64) -> Option<Reference> {
        let beta = beta.to_f64();
        if beta.abs() > 1.0 || y0.len() != self.y.len() {
            return None;
        }
        let n = calls as f64;
        let b = beta.abs();
        let pow = |v: f64| v.powi(calls.min(i32::MAX as u64) as i32);
        let geo = |v: f64| {
            if v == 1.0 {
                n
            } else {
                (1.0 - pow(v)) / (1.0 - v)
            }
        };
        let (sum_signed, bn_signed, bn) = (geo(beta), pow(beta), pow(b));
        let w = if b == 1.0 {
            n * (n + 1.0) / 2.0
        } else {
            (geo(b) - n * bn) / (1.0 - b)
        };
        let (y, scale) = (0..self.y.len())
            .into_par_iter()
            .with_min_len(4096)
            .map(|i| {
                let y0_i = y0[i].to_f64();
                let by0 = if beta == 0.0 { 0.0 } else { beta * y0_i };
                let t = self.ax[i];
                let m = (self.scale[i] - by0.abs()).max(0.0);
                if calls == 0 {
                    (y0_i, 0.0)
                } else if beta == 0.0 {
                    // y0 is never read (it may hold NaN)
                    (t, m * w)
                } else {
                    (
                        t * sum_signed + bn_signed * y0_i,
                        m * w + n * bn * y0_i.abs(),
                    )
                }
            })
            .unzip();
        Some(Reference {
            y,
            scale,
            row_len: self.row_len.clone(),
            ax: self.ax.clone(),
        })
    }

    fn from_rows<T: Scalar, O: Offset>(a: &Csr<T, O>, rows: Vec<(f64, f64, f64)>) -> Self {
        Self::from_parts(rows, (0..a.nrows()).map(|i| a.row_len(i) as u32).collect())
    }

    fn from_parts(rows: Vec<(f64, f64, f64)>, row_len: Vec<u32>) -> Self {
        let mut r = Reference {
            y: Vec::with_capacity(rows.len()),
            scale: Vec::with_capacity(rows.len()),
            row_len,
            ax: Vec::with_capacity(rows.len()),
        };
        for (y, scale, ax) in rows {
            r.y.push(y);
            r.scale.push(scale);
            r.ax.push(ax);
        }
        r
    }
}

/// The factor of √(n+2)·ε_T in the tolerance (λ = 8 in units of u = ε_T/2, times a safety
/// factor 2; see the module doc).
pub const SQRT_FACTOR: f64 = 8.0;

/// The tolerance of a row of `len` entries as a multiple of ε_T·magnitude:
/// min(2·(len+2), [`SQRT_FACTOR`]·√(len+2)).
pub fn tolerance_factor(len: u32) -> f64 {
    let n = len as f64 + 2.0;
    (2.0 * n).min(SQRT_FACTOR * n.sqrt())
}

/// Checks `y` against the oracle: row i passes when |y_i − ref_i| ≤
/// [`tolerance_factor`]`(len_i)`·ε_T·scale_i (module doc). A NaN fails, and so does a row of
/// magnitude 0 that is not exactly 0.
pub fn check<T: Scalar>(r: &Reference, y: &[T]) -> Check {
    compare(r, y, within_tolerance::<T>(r))
}

/// The rule of [`check`]: |y_i − ref_i| within the row's tolerance.
fn within_tolerance<T: Scalar>(r: &Reference) -> impl Fn(usize, f64) -> bool + '_ {
    move |i, diff| diff <= tolerance_factor(r.row_len[i]) * T::EPSILON * r.scale[i]
}

/// Every row of `y` that fails [`check`], in order (tests use it to see that a mutation is caught
/// exactly where it was made).
pub fn failing_rows<T: Scalar>(r: &Reference, y: &[T]) -> Vec<usize> {
    rows_failing(r, y, within_tolerance::<T>(r))
}

/// Rows of `y` for which `within(row, |y_i − ref_i|)` does not hold (NaN never holds).
pub(crate) fn rows_failing<T: Scalar>(
    r: &Reference,
    y: &[T],
    within: impl Fn(usize, f64) -> bool,
) -> Vec<usize> {
    y.iter()
        .zip(&r.y)
        .enumerate()
        .filter(|&(i, (&got, &want))| !within(i, (got.to_f64() - want).abs()))
        .map(|(i, _)| i)
        .collect()
}

/// The verdict over all rows with `within(row, |y_i − ref_i|)` as the rule; the relative error
/// reported is |y_i − ref_i| / scale_i.
pub(crate) fn compare<T: Scalar>(
    r: &Reference,
    y: &[T],
    within: impl Fn(usize, f64) -> bool,
) -> Check {
    let mut out = Check {
        max_rel_err: 0.0,
        worst_row: 0,
        ok: y.len() == r.y.len(),
    };
    for (i, (&got, &want)) in y.iter().zip(&r.y).enumerate() {
        let diff = (got.to_f64() - want).abs();
        let scale = r.scale[i];
        let rel = if scale > 0.0 {
            diff / scale
        } else if diff == 0.0 {
            0.0
        } else {
            f64::INFINITY
        };
        // NaN (from a wrong result) fails too: `diff <= tol` is false for it.
        if !within(i, diff) {
            out.ok = false;
        }
        if rel > out.max_rel_err || rel.is_nan() {
            out.max_rel_err = if rel.is_nan() { f64::INFINITY } else { rel };
            out.worst_row = i;
        }
    }
    out
}

impl Check {
    /// Turns a failed check into an error naming the row.
    pub fn into_result(self, what: &str) -> Result<Self> {
        if self.ok {
            Ok(self)
        } else {
            Err(Error::Verification(format!(
                "{what}: row {} off by {:.3e} relative to its magnitude",
                self.worst_row, self.max_rel_err
            )))
        }
    }
}

pub(crate) fn check_lengths<T: Scalar, O: Offset>(
    a: &Csr<T, O>,
    xlen: usize,
    ylen: usize,
) -> Result<()> {
    check_vectors("", (a.nrows(), a.ncols()), xlen, ylen, VectorFit::Exact)
}
