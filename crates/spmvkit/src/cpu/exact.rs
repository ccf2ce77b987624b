//! Exact checks (issue #18): a problem of small integers, chosen so that every partial sum of
//! every row, in any summation order, is an integer below 2^24 and so exact in f32 and f64. Every
//! correct method then returns the oracle's y bit for bit, and [`check_exact`] compares for
//! equality: a dropped nonzero or a wrong product shows on a row of any length and in f32, where
//! the rounding-error bound of [`crate::cpu::check`] cannot see it on long rows.
//!
//! Values and x are nonzero integers in ±{1..m}, y0 is twice an integer in ±{0..m}, α = 2 and
//! β = −½ (powers of two, so scaling is exact too), with m as large as the longest row allows
//! (at most 3): 2·m²·len + 2m ≤ 2^23. A row longer than about 4·10^6 entries takes α = 1 and
//! m = 1 (partial sums up to len + 2); one of 2^23 − 2 entries or more has no exact problem.

use super::oracle::{compare, oracle_spmv_par, rows_failing, Check, Reference};
use crate::error::{Error, Result};
use crate::matrix::Csr;
use crate::scalar::Scalar;

/// A problem whose answer is exact in every summation order: the integer-valued matrix (same
/// pattern as the input), α, β, x, y0 and the oracle's answer.
#[derive(Clone, Debug)]
pub struct ExactProblem<T> {
    pub a: Csr<T>,
    pub alpha: T,
    pub beta: T,
    pub x: Vec<T>,
    pub y0: Vec<T>,
    pub reference: Reference,
}

/// Partial sums stay at most this (2^23: exact in f32, whose integers are exact up to 2^24).
const LIMIT: f64 = (1u64 << 23) as f64;

/// A deterministic integer in ±{1..m} (never 0) for position `i` of stream `seed`.
pub fn small_int(seed: u64, i: u64, m: u32) -> f64 {
    let mut z = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(i.wrapping_mul(0xD1B5_4A32_D192_ED03));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    let mag = 1 + (z >> 1) % m as u64;
    if z & 1 == 0 {
        mag as f64
    } else {
        -(mag as f64)
    }
}

/// (α, m) for rows of at most `max_len` entries: α = 2 and the largest m ≤ 3 with
/// 2·m²·len + 2m ≤ 2^23, else α = 1 and m = 1 while len + 2 ≤ 2^23, else `None`.
pub fn scaling_for(max_len: usize) -> Option<(f64, u32)> {
    let fits = |alpha: f64, m: f64| alpha * m * m * max_len as f64 + 2.0 * m <= LIMIT;
    match (1..=3u32).rev().find(|&m| fits(2.0, m as f64)) {
        Some(m) => Some((2.0, m)),
        None if fits(1.0, 1.0) => Some((1.0, 1)),
        None => None,
    }
}

impl<T: Scalar> ExactProblem<T> {
    /// The exact problem on `pattern_of`'s pattern (its values are replaced), seeded by `seed`.
    pub fn new(pattern_of: &Csr<T>, seed: u64) -> Result<Self> {
        let max_len = (0..pattern_of.nrows())
            .map(|i| pattern_of.row_len(i))
            .max()
            .unwrap_or(0);
        let (alpha, m) = scaling_for(max_len).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "no exact problem for a row of {max_len} entries: its sum would pass 2^23"
            ))
        })?;
        let vals: Vec<T> = (0..pattern_of.nnz() as u64)
            .map(|k| T::from_f64(small_int(seed, k, m)))
            .collect();
        let a = Csr::with_pattern(pattern_of.pattern().clone(), vals)?;
        let x: Vec<T> = (0..a.ncols() as u64)
            .map(|j| T::from_f64(small_int(seed ^ 0x5555, j, m)))
            .collect();
        // y0 in ±2·{1..m}, so that β·y0 = −y0/2 is an integer
        let y0: Vec<T> = (0..a.nrows() as u64)
            .map(|i| T::from_f64(2.0 * small_int(seed ^ 0xAAAA, i, m)))
            .collect();
        let (alpha, beta) = (T::from_f64(alpha), T::from_f64(-0.5));
        let reference = oracle_spmv_par(&a, alpha, &x, beta, &y0)?;
        Ok(ExactProblem {
            a,
            alpha,
            beta,
            x,
            y0,
            reference,
        })
    }
}

/// Compares `y` with the oracle for equality (the rule for an [`ExactProblem`]); the reported
/// error is relative to each row's magnitude, as in [`crate::cpu::check`].
pub fn check_exact<T: Scalar>(r: &Reference, y: &[T]) -> Check {
    compare(r, y, |_, diff| diff == 0.0)
}

/// Every row where `y` differs from the oracle at all, in order.
pub fn failing_rows_exact<T: Scalar>(r: &Reference, y: &[T]) -> Vec<usize> {
    rows_failing(r, y, |_, diff| diff == 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::oracle_spmv;

    #[test]
    fn small_ints_are_nonzero_bounded_and_varied() {
        let v: Vec<f64> = (0..1000).map(|i| small_int(7, i, 3)).collect();
        assert!(v
            .iter()
            .all(|&x| x != 0.0 && x.abs() <= 3.0 && x.fract() == 0.0));
        for want in [-3.0, -2.0, -1.0, 1.0, 2.0, 3.0] {
            assert!(v.contains(&want), "{want} never drawn");
        }
    }

    #[test]
    fn the_exact_problem_is_exact_in_f32_and_every_order() {
        let a = crate::gen::generate::<f32>("hugerow:2000,4").unwrap();
        let p = ExactProblem::new(&a, 3).unwrap();
        // the f32 oracle input reproduces the f64 answer bit for bit, summed backwards in f32
        let mut y = p.y0.clone();
        for (i, yi) in y.iter_mut().enumerate() {
            let (cols, vals) = p.a.row(i);
            let mut s = 0f32;
            for (&c, &v) in cols.iter().zip(vals).rev() {
                s += v * p.x[c as usize];
            }
            *yi = p.alpha * s + p.beta * *yi;
        }
        assert!(check_exact(&p.reference, &y).ok);
        // one dropped product is seen on the long row
        let long = (0..a.nrows()).max_by_key(|&i| a.row_len(i)).unwrap();
        let (cols, vals) = p.a.row(long);
        y[long] -= p.alpha * vals[0] * p.x[cols[0] as usize];
        assert_eq!(failing_rows_exact(&p.reference, &y), vec![long]);
        let r64 = oracle_spmv(
            &p.a.cast::<f64>(),
            2.0,
            &p.x.iter().map(|&v| v as f64).collect::<Vec<_>>(),
            -0.5,
            &p.y0.iter().map(|&v| v as f64).collect::<Vec<_>>(),
        )
        .unwrap();
        assert_eq!(r64.y, p.reference.y);
    }

    #[test]
    fn scaling_keeps_every_partial_sum_below_2_pow_23() {
        assert_eq!(scaling_for(0), Some((2.0, 3)));
        assert_eq!(scaling_for(100_000), Some((2.0, 3)));
        assert_eq!(scaling_for(500_000), Some((2.0, 2)));
        assert_eq!(scaling_for(4_000_000), Some((2.0, 1)));
        assert_eq!(scaling_for(8_000_000), Some((1.0, 1)));
        assert_eq!(scaling_for((1 << 23) - 1), None);
        for len in [1usize, 1000, 1 << 20, 5_000_000] {
            let (alpha, m) = scaling_for(len).unwrap();
            let m = m as f64;
            assert!(alpha * m * m * len as f64 + 2.0 * m <= (1u64 << 23) as f64);
        }
    }
}
