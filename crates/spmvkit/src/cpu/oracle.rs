//! Serial reference SpMV, y = αAx + βy, accumulating every row in f64 and recording the row's
//! magnitude Σ|α·a_ij·x_j| + |β·y_i| that scales the tolerance of every comparison.

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::matrix::Csr;
use crate::scalar::Scalar;

/// The oracle's answer: y in f64 and each row's magnitude for tolerances.
#[derive(Clone, Debug)]
pub struct Reference {
    pub y: Vec<f64>,
    /// |α|·Σ_j |a_ij·x_j| + |β·y0_i| per row.
    pub scale: Vec<f64>,
    /// Row lengths, which bound the rounding error of any summation order.
    pub row_len: Vec<u32>,
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
pub fn oracle_spmv<T: Scalar>(
    a: &Csr<T>,
    alpha: T,
    x: &[T],
    beta: T,
    y0: &[T],
) -> Result<Reference> {
    check_lengths(a, x.len(), y0.len())?;
    let rows: Vec<(f64, f64)> = (0..a.nrows())
        .map(|i| oracle_row(a, alpha, x, beta, y0[i], i))
        .collect();
    Ok(Reference::from_rows(a, rows))
}

/// The same oracle with rows spread over threads: each row is still summed serially in f64 in
/// column order, so the result is bitwise the one of [`oracle_spmv`], only sooner on big
/// matrices (the benchmark harness uses it).
pub fn oracle_spmv_par<T: Scalar>(
    a: &Csr<T>,
    alpha: T,
    x: &[T],
    beta: T,
    y0: &[T],
) -> Result<Reference> {
    check_lengths(a, x.len(), y0.len())?;
    let rows: Vec<(f64, f64)> = (0..a.nrows())
        .into_par_iter()
        .with_min_len(4096)
        .map(|i| oracle_row(a, alpha, x, beta, y0[i], i))
        .collect();
    Ok(Reference::from_rows(a, rows))
}

/// The oracle on rows `rows` of `a` only (one rank's share of a distributed SpMV), in parallel
/// as [`oracle_spmv_par`]: `y0` and the answer hold those rows, from `rows.start`.
pub fn oracle_spmv_rows<T: Scalar>(
    a: &Csr<T>,
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
    check_lengths_dims(rows.len(), a.ncols(), x.len(), y0.len())?;
    let start = rows.start;
    let (y, scale): (Vec<f64>, Vec<f64>) = rows
        .clone()
        .into_par_iter()
        .with_min_len(4096)
        .map(|i| oracle_row(a, alpha, x, beta, y0[i - start], i))
        .unzip();
    let row_len = rows.map(|i| a.row_len(i) as u32).collect();
    Ok(Reference { y, scale, row_len })
}

/// Row i of the oracle: (y_i, scale_i).
#[inline]
fn oracle_row<T: Scalar>(a: &Csr<T>, alpha: T, x: &[T], beta: T, y0_i: T, i: usize) -> (f64, f64) {
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
    (alpha * s + b, alpha.abs() * m + b.abs())
}

impl Reference {
    fn from_rows<T: Scalar>(a: &Csr<T>, rows: Vec<(f64, f64)>) -> Self {
        let (y, scale) = rows.into_iter().unzip();
        let row_len = (0..a.nrows()).map(|i| a.row_len(i) as u32).collect();
        Reference { y, scale, row_len }
    }
}

/// Checks `y` against the oracle. Row i passes when
/// |y_i − ref_i| ≤ 2·(len_i + 2)·ε_T·scale_i, the worst-case bound of a sum of len_i + 2 terms in
/// precision T in any order (so atomics and tree sums pass, and real errors do not).
pub fn check<T: Scalar>(r: &Reference, y: &[T]) -> Check {
    let mut out = Check {
        max_rel_err: 0.0,
        worst_row: 0,
        ok: y.len() == r.y.len(),
    };
    for (i, (&got, &want)) in y.iter().zip(&r.y).enumerate() {
        let got = got.to_f64();
        let diff = (got - want).abs();
        let scale = r.scale[i];
        let tol = 2.0 * (r.row_len[i] as f64 + 2.0) * T::EPSILON * scale;
        let rel = if scale > 0.0 {
            diff / scale
        } else if diff == 0.0 {
            0.0
        } else {
            f64::INFINITY
        };
        // NaN (from a wrong result) fails too.
        let within = diff <= tol;
        if !within {
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

pub(crate) fn check_lengths<T: Scalar>(a: &Csr<T>, xlen: usize, ylen: usize) -> Result<()> {
    check_lengths_dims(a.nrows(), a.ncols(), xlen, ylen)
}

/// Checks x and y lengths against a nrows×ncols matrix.
pub(crate) fn check_lengths_dims(
    nrows: usize,
    ncols: usize,
    xlen: usize,
    ylen: usize,
) -> Result<()> {
    if xlen != ncols {
        return Err(Error::DimensionMismatch {
            what: "x length (matrix columns)".into(),
            expected: ncols,
            got: xlen,
        });
    }
    if ylen != nrows {
        return Err(Error::DimensionMismatch {
            what: "y length (matrix rows)".into(),
            expected: nrows,
            got: ylen,
        });
    }
    Ok(())
}
