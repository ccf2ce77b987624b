//! The structured and random generator kinds of issue #2 (everything but `kron` and the geometric
//! graphs of `geo.rs`): finite difference stencils (the SPD model problems of the CG experiments;
//! `varcoef27`, the 27-point one with variable coefficients, issue #19), banded, uniform random,
//! power-law, block-diagonal, one-huge-row, diagonal, identity, dense and empty matrices. Each is
//! built directly in CSR by [`build_rows`], in parallel and deterministically.

use super::build::{build_rows, chunk_rows, RowGen};
use super::rng::{mix64, sample_distinct, Purpose, Rng};
use crate::error::Result;
use crate::matrix::Csr;
use crate::scalar::{Idx, Scalar};

use rayon::prelude::*;

/// Neighbour offsets (dz, dy, dx) of a stencil, in increasing column order.
fn stencil_offsets(dims: u32, full: bool) -> Vec<(i64, i64, i64)> {
    let zr: std::ops::RangeInclusive<i64> = if dims == 3 { -1..=1 } else { 0..=0 };
    let mut v = Vec::new();
    for dz in zr {
        for dy in -1i64..=1 {
            for dx in -1i64..=1 {
                let manhattan = dz.abs() + dy.abs() + dx.abs();
                if full || manhattan <= 1 {
                    v.push((dz, dy, dx));
                }
            }
        }
    }
    v
}

/// The variable coefficient c_ij = c_ji of the grid edge {i, j} under `seed`: k/2^18 with k
/// uniform in 2^14..=2^18, so in [1/16, 1] with 245 761 possible values. With at most 26
/// neighbours, a row's Σ c_ij + 1 stays below 2^23/2^18, so the diagonal too is exact in f32.
#[inline]
fn coefficient(seed: u64, i: usize, j: usize) -> f64 {
    const LO: u64 = 1 << 14;
    const SPAN: u64 = (1 << 18) - LO + 1;
    let (a, b) = (i.min(j) as u64, i.max(j) as u64);
    let bits = mix64(mix64(seed ^ 0x7661_7263_6f65_6627) ^ mix64((a << 32) | b));
    let k = LO + (((bits >> 32) * SPAN) >> 32);
    k as f64 / (1u64 << 18) as f64
}

/// Finite-difference stencil on an n^dims grid (Dirichlet boundary): `dims` 2 or 3, `full` for
/// the 27-point (3D) stencil, the 5- or 7-point one otherwise.
///
/// With `var` = None the diagonal holds the stencil's neighbour count (4, 6 or 26) in every row,
/// the off-diagonals −1: symmetric, strictly diagonally dominant on the boundary, hence SPD. With
/// `var` = Some(seed) (`varcoef27`) the off-diagonal (i, j) is −c_ij, a seeded coefficient of the
/// edge ([`coefficient`]), and the diagonal Σ_j c_ij + 1: symmetric, strictly diagonally dominant
/// in every row, hence SPD, with as many distinct values as edges (up to the 2^18 − 2^14 + 1
/// coefficients and their row sums).
pub(crate) fn stencil<T: Scalar>(n: usize, dims: u32, full: bool, var: Option<u64>) -> RowGen<T> {
    let offs = stencil_offsets(dims, full);
    let diag = (offs.len() - 1) as f64;
    let nrows = if dims == 3 { n * n * n } else { n * n };
    let (nn, ni) = (n * n, n as i64);
    let coord = move |r: usize| -> (i64, i64, i64) {
        ((r / nn) as i64, ((r / n) % n) as i64, (r % n) as i64)
    };
    let inside = move |c: i64| (0..ni).contains(&c);
    let offs_l = offs.clone();
    RowGen::new(
        nrows,
        nrows,
        chunk_rows(offs.len() as f64),
        move |_, rows, out| {
            for (r, o) in rows.zip(out.iter_mut()) {
                let (z, y, x) = coord(r);
                *o = offs_l
                    .iter()
                    .filter(|&&(dz, dy, dx)| inside(z + dz) && inside(y + dy) && inside(x + dx))
                    .count() as Idx;
            }
        },
        move |c| {
            for r in c.rows.clone() {
                let (z, y, x) = coord(r);
                let mut k = c.span(r).start;
                let (mut kd, mut sum) = (k, 0.0);
                for &(dz, dy, dx) in &offs {
                    if inside(z + dz) && inside(y + dy) && inside(x + dx) {
                        let col = (r as i64 + dz * (nn as i64) + dy * ni + dx) as usize;
                        c.cols[k] = col as Idx;
                        if col == r {
                            kd = k;
                        } else {
                            let a = var.map_or(1.0, |seed| coefficient(seed, r, col));
                            sum += a;
                            c.vals[k] = T::from_f64(-a);
                        }
                        k += 1;
                    }
                }
                c.vals[kd] = T::from_f64(if var.is_some() { sum + 1.0 } else { diag });
            }
        },
    )
}

/// Random banded n×n: row i samples `max(1, round(fill·w))` distinct columns of its band
/// `[i−bw, i+bw] ∩ [0, n)` (w columns wide), always including the diagonal.
pub(crate) fn banded<T: Scalar>(n: usize, bw: usize, fill: f64, seed: u64) -> RowGen<T> {
    let band = move |i: usize| -> (usize, usize) {
        let lo = i.saturating_sub(bw);
        let hi = (i.saturating_add(bw)).min(n - 1);
        (lo, hi - lo + 1)
    };
    let len = move |w: usize| -> usize { ((fill * w as f64).round() as usize).clamp(1, w) };
    let mean = fill * (2.0 * bw as f64 + 1.0).min(n as f64);
    RowGen::new(
        n,
        n,
        chunk_rows(mean),
        move |_, rows, out| {
            for (i, o) in rows.zip(out.iter_mut()) {
                *o = len(band(i).1) as Idx;
            }
        },
        move |c| {
            let mut rng = Rng::stream(seed, Purpose::Fill, c.index as u64);
            for i in c.rows.clone() {
                let (lo, w) = band(i);
                let s = c.span(i);
                let row = &mut c.cols[s.clone()];
                let k = row.len();
                let d = i - lo;
                sample_distinct(&mut rng, (w - 1) as u64, 0, &mut row[..k - 1]);
                let mut p = k - 1;
                for (j, v) in row[..k - 1].iter_mut().enumerate() {
                    let off = *v as usize;
                    if off >= d && p == k - 1 {
                        p = j;
                    }
                    *v = (lo + off + usize::from(off >= d)) as Idx;
                }
                row.copy_within(p..k - 1, p + 1);
                row[p] = i as Idx;
                for v in &mut c.vals[s] {
                    *v = T::from_f64(rng.value());
                }
            }
        },
    )
}

/// Fills every row of a chunk with uniformly random distinct columns of `0..ncols` and values.
pub(crate) fn random_fill<T: Scalar>(c: &mut super::build::Chunk<'_, T>, ncols: usize, seed: u64) {
    let mut rng = Rng::stream(seed, Purpose::Fill, c.index as u64);
    for i in c.rows.clone() {
        let s = c.span(i);
        sample_distinct(&mut rng, ncols as u64, 0, &mut c.cols[s.clone()]);
        for v in &mut c.vals[s] {
            *v = T::from_f64(rng.value());
        }
    }
}

/// Fills each row `i` of the chunk with consecutive columns from `first(i)` and random values.
fn consecutive_fill<T: Scalar>(
    c: &mut super::build::Chunk<'_, T>,
    seed: u64,
    first: impl Fn(usize) -> usize,
) {
    let mut rng = Rng::stream(seed, Purpose::Fill, c.index as u64);
    for i in c.rows.clone() {
        let first = first(i);
        let s = c.span(i);
        for (j, col) in c.cols[s.clone()].iter_mut().enumerate() {
            *col = (first + j) as Idx;
        }
        for v in &mut c.vals[s] {
            *v = T::from_f64(rng.value());
        }
    }
}

/// m×n with k distinct uniformly random columns in every row.
pub(crate) fn uniform<T: Scalar>(m: usize, n: usize, k: usize, seed: u64) -> RowGen<T> {
    RowGen::new(
        m,
        n,
        chunk_rows(k as f64),
        move |_, _, out| out.fill(k as Idx),
        move |c| random_fill(c, n, seed),
    )
}

/// `lengths.len()`×ncols with the given row lengths, random distinct columns and values.
pub(crate) fn with_lengths<T: Scalar>(lengths: &[Idx], ncols: usize, seed: u64) -> Result<Csr<T>> {
    let mean = lengths.iter().map(|&l| l as f64).sum::<f64>() / lengths.len().max(1) as f64;
    build_rows::<T, Idx, _, _>(
        lengths.len(),
        ncols,
        chunk_rows(mean),
        |_, rows, out| out.copy_from_slice(&lengths[rows]),
        move |c| random_fill(c, ncols, seed),
    )
}

/// A weight from the power law p(x) ∝ x^−alpha truncated to [1, top], by inversion.
#[inline]
fn pareto(rng: &mut Rng, alpha: f64, top: f64) -> f64 {
    let u = rng.unit();
    let a1 = 1.0 - alpha;
    if a1.abs() < 1e-9 {
        top.powf(u)
    } else {
        (1.0 - u * (1.0 - top.powf(a1))).powf(1.0 / a1)
    }
}

/// n×n with power-law row lengths: weights w_i ~ p(x) ∝ x^−alpha on [1, n], scaled so that they
/// sum to mean·n, rounded stochastically and capped at n; columns uniformly random.
pub(crate) fn powerlaw<T: Scalar>(n: usize, mean: f64, alpha: f64, seed: u64) -> RowGen<T> {
    let chunk = chunk_rows(mean);
    let nchunks = n.div_ceil(chunk);
    let top = n as f64;
    let weights_of = move |c: usize, out: &mut dyn FnMut(f64)| {
        let mut rng = Rng::stream(seed, Purpose::Lengths, c as u64);
        let rows = (n - c * chunk).min(chunk);
        for _ in 0..rows {
            out(pareto(&mut rng, alpha, top));
        }
    };
    let sums: Vec<f64> = (0..nchunks)
        .into_par_iter()
        .map(|c| {
            let mut s = 0.0;
            weights_of(c, &mut |w| s += w);
            s
        })
        .collect();
    let total: f64 = sums.iter().sum();
    let scale = mean * n as f64 / total.max(f64::MIN_POSITIVE);
    RowGen::new(
        n,
        n,
        chunk,
        move |c, _, out| {
            let mut round = Rng::stream(seed, Purpose::Rounding, c as u64);
            let mut j = 0;
            weights_of(c, &mut |w| {
                let l = (w * scale + round.unit()).floor();
                out[j] = l.min(top) as Idx;
                j += 1;
            });
        },
        move |c| random_fill(c, n, seed),
    )
}

/// `nb` dense `bs×bs` blocks on the diagonal, random values.
pub(crate) fn blockdiag<T: Scalar>(nb: usize, bs: usize, seed: u64) -> RowGen<T> {
    let n = nb * bs;
    RowGen::new(
        n,
        n,
        chunk_rows(bs as f64),
        move |_, _, out| out.fill(bs as Idx),
        move |c| consecutive_fill(c, seed, |i| i / bs * bs),
    )
}

/// n×ncols: k random distinct columns per row, except row `huge` with l of them.
pub(crate) fn hugerow<T: Scalar>(
    n: usize,
    ncols: usize,
    k: usize,
    l: usize,
    huge: usize,
    seed: u64,
) -> RowGen<T> {
    RowGen::new(
        n,
        ncols,
        chunk_rows(k as f64),
        move |_, rows, out| {
            for (i, o) in rows.zip(out.iter_mut()) {
                *o = if i == huge { l } else { k } as Idx;
            }
        },
        move |c| random_fill(c, ncols, seed),
    )
}

/// m×n dense (every entry stored), random values.
pub(crate) fn dense<T: Scalar>(m: usize, n: usize, seed: u64) -> RowGen<T> {
    RowGen::new(
        m,
        n,
        chunk_rows(n as f64),
        move |_, _, out| out.fill(n as Idx),
        move |c| consecutive_fill(c, seed, |_| 0),
    )
}

/// n×n diagonal with random values (`identity` = false) or ones.
pub(crate) fn diagonal<T: Scalar>(n: usize, identity: bool, seed: u64) -> RowGen<T> {
    RowGen::new(
        n,
        n,
        chunk_rows(1.0),
        move |_, _, out| out.fill(1),
        move |c| {
            let mut rng = Rng::stream(seed, Purpose::Fill, c.index as u64);
            for (k, i) in c.rows.clone().enumerate() {
                c.cols[k] = i as Idx;
                c.vals[k] = if identity {
                    T::one()
                } else {
                    T::from_f64(rng.value())
                };
            }
        },
    )
}

/// m×n with no entry.
pub(crate) fn empty<T: Scalar>(m: usize, n: usize) -> Result<Csr<T>> {
    let row_ptr = crate::memory::try_vec("the row pointers", m + 1, 0)?;
    Csr::new(m, n, row_ptr, Vec::new(), Vec::new())
}
