//! The host side of SpMM (issue #24): the oracle for k vectors (the serial f64 rule of
//! `cpu/oracle.rs` per column, the same tolerance per row and column), the block's column
//! copies, and the CPU mirror of the row-split kernels (`kernel.cu`), rows in parallel, which
//! is also the CPU path of the layouts that offer [`super::MultiKernel::RowSplit`].
//!
//! The mirror's summation order is the kernels': row-major, each (row, vector) sums the row's
//! nonzeros in CSR order with fused multiply-adds from zero, walked as the tile walks them
//! (chunks of `lanes` nonzeros, `unroll` at a time, [`RmConfig`]), and a row longer than the
//! piece length ([`piece_nnz`]) is summed so per piece, the pieces' sums then added in order
//! from zero;
//! column-major, each vector is the
//! `csr-vector` order (32 lanes from the 32-aligned row start, a butterfly). Both end with the
//! kernels' store (`α·sum`, then `β·y` fused when β ≠ 0). The results are bitwise the GPU's.
//!
//! The merge-path kernels' mirror ([`run_merge`]) cuts the same teams (`merge.rs`) and sums each
//! of a team's row parts as one fma chain from zero in CSR order (whatever the tile, as above),
//! stores the rows it closes, and adds each spanning row's carries in team order (the fix-up:
//! `s = c_first`, `s = s + c` for each next team, `y = α·s + y` fused).

use rayon::prelude::*;

use super::merge::{merge_share, MergeTeams};
use super::tile::piece_nnz;
use super::{DenseOrder, MultiShape, RmConfig, SpmmTune};
use crate::cpu::{check, oracle_spmv_par, Check, Reference};
use crate::error::Result;
use crate::matrix::Csr;
use crate::methods::common::warp::{butterfly_sum, lane_partials, store};
use crate::scalar::Scalar;

/// The pieces [s, e) of a row [start, end) of more than `limit` nonzeros: `limit` each from the
/// start, the last one shorter.
pub(crate) fn pieces(
    start: usize,
    end: usize,
    limit: usize,
) -> impl Iterator<Item = (usize, usize)> {
    (start..end)
        .step_by(limit.max(1))
        .map(move |s| (s, (s + limit.max(1)).min(end)))
}

/// The rows longer than `limit` and their pieces, as the kernels take them: `rows[i]`'s pieces
/// are `first[i] .. first[i + 1]` of (`start`, `end`).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct LongRows {
    pub(crate) rows: Vec<u32>,
    pub(crate) first: Vec<u32>,
    pub(crate) start: Vec<u32>,
    pub(crate) end: Vec<u32>,
}

impl LongRows {
    pub(crate) fn of<T: Scalar>(a: &Csr<T>, limit: usize) -> Self {
        let rp = a.row_ptr();
        let mut l = LongRows {
            first: vec![0],
            ..Default::default()
        };
        for i in 0..a.nrows() {
            let (s, e) = (rp[i] as usize, rp[i + 1] as usize);
            if e - s > limit {
                l.rows.push(i as u32);
                for (ps, pe) in pieces(s, e, limit) {
                    l.start.push(ps as u32);
                    l.end.push(pe as u32);
                }
                l.first.push(l.start.len() as u32);
            }
        }
        l
    }

    /// Pieces in all.
    pub(crate) fn npieces(&self) -> usize {
        self.start.len()
    }
}

/// Column `c` of a block of `n` rows.
pub fn column<T: Scalar>(block: &[T], n: usize, shape: MultiShape, c: usize) -> Vec<T> {
    match shape.order {
        DenseOrder::Col => block[c * n..(c + 1) * n].to_vec(),
        DenseOrder::Row => (0..n).map(|j| block[j * shape.k + c]).collect(),
    }
}

/// Writes `v` into column `c` of a block of `n` rows.
pub fn set_column<T: Scalar>(block: &mut [T], n: usize, shape: MultiShape, c: usize, v: &[T]) {
    match shape.order {
        DenseOrder::Col => block[c * n..(c + 1) * n].copy_from_slice(v),
        DenseOrder::Row => {
            for (j, &x) in v.iter().enumerate() {
                block[j * shape.k + c] = x;
            }
        }
    }
}

/// The oracle for Y = αAX + βY0: one [`Reference`] per vector (`cpu/oracle.rs`, rows in
/// parallel, each summed serially in f64). Lengths as [`MultiShape::check`] (exact).
pub fn oracle_multi<T: Scalar>(
    a: &Csr<T>,
    alpha: T,
    x: &[T],
    beta: T,
    y0: &[T],
    shape: MultiShape,
) -> Result<Vec<Reference>> {
    let (m, n) = (a.nrows(), a.ncols());
    shape.check("SpMM oracle", (m, n), x.len(), y0.len(), true)?;
    (0..shape.k)
        .map(|c| {
            oracle_spmv_par(
                a,
                alpha,
                &column(x, n, shape, c),
                beta,
                &column(y0, m, shape, c),
            )
        })
        .collect()
}

/// A block checked against the oracle: the worst vector's [`Check`] (every row of every
/// vector inside its tolerance for `ok`) and which vector that is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MultiCheck {
    pub check: Check,
    pub worst_vector: usize,
}

/// Checks a block `y` (shape `shape`, `refs.len()` = k vectors) against the oracle's answers.
pub fn check_multi<T: Scalar>(refs: &[Reference], y: &[T], shape: MultiShape) -> MultiCheck {
    let m = refs.first().map_or(0, |r| r.y.len());
    let mut out = MultiCheck {
        check: Check {
            max_rel_err: 0.0,
            worst_row: 0,
            ok: refs.len() == shape.k && y.len() == m * shape.k,
        },
        worst_vector: 0,
    };
    if !out.check.ok {
        return out;
    }
    // the worst vector: a failing one before any passing one, then the largest error
    let mut worst: Option<Check> = None;
    for (c, r) in refs.iter().enumerate() {
        let got = check(r, &column(y, m, shape, c));
        let worse = worst.is_none_or(|w| {
            (!got.ok && w.ok) || (got.ok == w.ok && got.max_rel_err > w.max_rel_err)
        });
        if worse {
            worst = Some(got);
            out.worst_vector = c;
        }
    }
    if let Some(w) = worst {
        out.check = w;
    }
    out
}

/// Y = αAX + βY as the row-split kernels compute it (module doc) with the tile `tune` gives
/// (host blocks count as aligned), rows in parallel. Lengths are checked by the caller.
pub fn run_row_split<T: Scalar>(
    a: &Csr<T>,
    alpha: T,
    x: &[T],
    beta: T,
    y: &mut [T],
    shape: MultiShape,
    tune: SpmmTune,
) {
    let (m, k) = (a.nrows(), shape.k);
    if m == 0 {
        return;
    }
    let rp = a.row_ptr();
    match shape.order {
        DenseOrder::Row => {
            let (cols, vals) = (a.col_idx(), a.vals());
            let cfg = RmConfig::choose(k, T::BYTES, tune, 256, (m, 0));
            let piece = piece_nnz(a.nnz(), m, tune);
            let (lanes, unroll) = (cfg.lanes as usize, cfg.unroll as usize);
            // acc = the fma chain from zero over nonzeros [s, e), per vector: chunks of `lanes`
            // nonzeros, each taken `unroll` at a time, as spmm_rm_tile
            let range = |acc: &mut [T], s: usize, e: usize| {
                acc.iter_mut().for_each(|v| *v = T::zero());
                for base in (s..e).step_by(lanes) {
                    let n = lanes.min(e - base);
                    for i in (0..n).step_by(unroll) {
                        for j in base + i..base + (i + unroll).min(n) {
                            let (c, v) = (cols[j] as usize, vals[j]);
                            for (a, &xv) in acc.iter_mut().zip(&x[c * k..(c + 1) * k]) {
                                *a = v.mul_add(xv, *a);
                            }
                        }
                    }
                }
            };
            y.par_chunks_mut(k).enumerate().for_each_init(
                || (vec![T::zero(); k], vec![T::zero(); k]),
                |(acc, tot), (i, yrow)| {
                    let (s, e) = (rp[i] as usize, rp[i + 1] as usize);
                    if e - s > piece {
                        // the pieces' partials added in order from zero (the fix-up)
                        tot.iter_mut().for_each(|v| *v = T::zero());
                        for (ps, pe) in pieces(s, e, piece) {
                            range(acc, ps, pe);
                            for (t, &p) in tot.iter_mut().zip(acc.iter()) {
                                *t += p;
                            }
                        }
                        std::mem::swap(acc, tot);
                    } else {
                        range(acc, s, e);
                    }
                    for (yi, &s) in yrow.iter_mut().zip(acc.iter()) {
                        store(yi, alpha, s, beta);
                    }
                },
            );
        }
        DenseOrder::Col => {
            let n = a.ncols();
            y.par_chunks_mut(m).enumerate().for_each(|(c, ycol)| {
                let xcol = &x[c * n..(c + 1) * n];
                ycol.par_iter_mut()
                    .enumerate()
                    .with_min_len(256)
                    .for_each(|(i, yi)| {
                        let mut lanes = [T::zero(); 32];
                        let (start, end) = (rp[i] as usize, rp[i + 1] as usize);
                        lane_partials(a, xcol, start & !31, start, end, &mut lanes);
                        store(yi, alpha, butterfly_sum(&mut lanes), beta);
                    });
            });
        }
    }
}

/// Y = αAX + βY as the merge-path kernels compute it (module doc), both orders, teams in
/// parallel. Lengths are checked by the caller.
pub fn run_merge<T: Scalar>(
    a: &Csr<T>,
    alpha: T,
    x: &[T],
    beta: T,
    y: &mut [T],
    shape: MultiShape,
    tune: SpmmTune,
) {
    let (m, n, k) = (a.nrows(), a.ncols(), shape.k);
    if m == 0 {
        return;
    }
    let t = MergeTeams::of(a.row_ptr(), merge_share(m, a.nnz(), tune));
    let (rp, cols, vals) = (a.row_ptr(), a.col_idx(), a.vals());
    // entry (j, c) of a block of n rows
    let at = |j: usize, c: usize, n: usize| match shape.order {
        DenseOrder::Row => j * k + c,
        DenseOrder::Col => c * n + j,
    };
    // acc = the fma chain from zero over nonzeros [s, e), per vector
    let chain = |acc: &mut [T], s: usize, e: usize| {
        acc.iter_mut().for_each(|v| *v = T::zero());
        for j in s..e {
            let (col, v) = (cols[j] as usize, vals[j]);
            for (c, acc) in acc.iter_mut().enumerate() {
                *acc = v.mul_add(x[at(col, c, n)], *acc);
            }
        }
    };
    // each team's closed rows (row-major, in row order) and its carry
    let mut sums = vec![T::zero(); m * k];
    let mut carry = vec![T::zero(); t.nteams() * k];
    let mut parts = Vec::with_capacity(t.nteams());
    let mut rest = sums.as_mut_slice();
    for w in t.row.windows(2) {
        let (part, tail) = rest.split_at_mut((w[1] - w[0]) as usize * k);
        parts.push(part);
        rest = tail;
    }
    parts
        .into_par_iter()
        .zip(carry.par_chunks_mut(k))
        .enumerate()
        .for_each(|(i, (part, cy))| {
            let (r0, z1) = (t.row[i] as usize, t.nz[i + 1] as usize);
            let mut s = t.nz[i] as usize;
            for (r, out) in (r0..).zip(part.chunks_mut(k)) {
                let e = rp[r + 1] as usize;
                chain(out, s, e);
                s = e;
            }
            if s < z1 {
                chain(cy, s, z1);
            }
        });
    for r in 0..m {
        for c in 0..k {
            store(&mut y[at(r, c, m)], alpha, sums[r * k + c], beta);
        }
    }
    // the fix-up: each spanning row's carries in team order
    for ((&row, &first), &end) in t.run_row.iter().zip(&t.run_first).zip(&t.run_end) {
        let (row, first, end) = (row as usize, first as usize, end as usize);
        for c in 0..k {
            let mut s = carry[first * k + c];
            for team in first + 1..end {
                s += carry[team * k + c];
            }
            let yi = &mut y[at(row, c, m)];
            *yi = alpha.mul_add(s, *yi);
        }
    }
}
