//! CPU mirror of `dasp_spmv` (kernel.cu): the same tiles in the same lane order. For f64 each
//! 8×4 MMA is emulated on its diagonal: D[m][m] += Σ_k A[m][k]·x[col(A[m][k])] as a chain of
//! fused multiply-adds in k order (the tensor core's internal order of the four products is not
//! specified, so the mirror agrees with the kernel to rounding, not bitwise). For f32 each lane
//! keeps its own FMA sum and the 4 lanes of a group are added by the xor butterfly, as the
//! kernel does. A long row's part adds its 8 diagonal values (or 32 lane sums) with the butterfly;
//! `dasp_long_sum` adds a row's parts with 32 strided lanes and the butterfly.

use super::{DaspLayout, NONE};
use crate::methods::common::warp::{butterfly_sum, store};
use crate::scalar::{Precision, Scalar};

/// A warp's accumulator: per lane (f32) or per diagonal element, at lane 4m + m/2 (f64).
struct Acc<T> {
    lanes: [T; 32],
    mma: bool,
}

impl<T: Scalar> Acc<T> {
    fn new() -> Self {
        Acc {
            lanes: [T::zero(); 32],
            mma: T::PRECISION == Precision::F64,
        }
    }
    /// One 8×4 tile: `a[t]`, `b[t]` as lane t holds them.
    fn tile(&mut self, a: &[T; 32], b: &[T; 32]) {
        if self.mma {
            for m in 0..8 {
                let d = &mut self.lanes[4 * m + m / 2];
                for k in 0..4 {
                    *d = a[4 * m + k].mul_add(b[4 * m + k], *d);
                }
            }
        } else {
            for t in 0..32 {
                self.lanes[t] = a[t].mul_add(b[t], self.lanes[t]);
            }
        }
    }
    /// The diagonal share of each lane (dasp_diag).
    fn diag(&self) -> [T; 32] {
        std::array::from_fn(|t| {
            let m = t / 4;
            if !self.mma || t == 4 * m + m / 2 {
                self.lanes[t]
            } else {
                T::zero()
            }
        })
    }
    /// Row m's sum as the xor butterfly over its 4 lanes gives it (dasp_row).
    fn row(&self, m: usize) -> T {
        let d = self.diag();
        let g = &d[4 * m..4 * m + 4];
        (g[0] + g[1]) + (g[2] + g[3])
    }
}

/// y = αAx + βy as dasp_spmv computes it.
pub(super) fn run<T: Scalar>(l: &DaspLayout<T>, alpha: T, x: &[T], beta: T, y: &mut [T]) {
    let (mut a, mut b) = ([T::zero(); 32], [T::zero(); 32]);
    // long rows: parts, then each row's parts added by 32 strided lanes and the butterfly
    let mut part = vec![T::zero(); l.part_start.len()];
    for (w, pv) in part.iter_mut().enumerate() {
        let (s, e) = (l.part_start[w] as usize, l.part_end[w] as usize);
        let mut acc = Acc::new();
        let mut base = s;
        while base < e {
            for t in 0..32 {
                let p = base + t;
                (a[t], b[t]) = if p < e {
                    (l.long_vals[p], x[l.long_cols[p] as usize])
                } else {
                    (T::zero(), T::zero())
                };
            }
            acc.tile(&a, &b);
            base += 32;
        }
        let mut d = acc.diag();
        *pv = butterfly_sum(&mut d);
    }
    for (i, &row) in l.long_rows.iter().enumerate() {
        let (s, e) = (l.part_ptr[i] as usize, l.part_ptr[i + 1] as usize);
        let mut lanes = [T::zero(); 32];
        for (lane, v) in lanes.iter_mut().enumerate() {
            let mut p = s + lane;
            while p < e {
                *v += part[p];
                p += 32;
            }
        }
        let sum = butterfly_sum(&mut lanes);
        store(&mut y[row as usize], alpha, sum, beta);
    }
    // row-block groups
    for g in 0..l.ngroups() {
        let mut acc = Acc::new();
        for s in l.blk_slab_ptr[g] as usize..l.blk_slab_ptr[g + 1] as usize {
            for t in 0..32 {
                a[t] = l.blk_vals[s * 32 + t];
                b[t] = x[l.blk_cols[s * 32 + t] as usize];
            }
            acc.tile(&a, &b);
        }
        for m in 0..8 {
            let sum = acc.row(m);
            let (s, e) = (
                l.irr_ptr[g * 8 + m] as usize,
                l.irr_ptr[g * 8 + m + 1] as usize,
            );
            let mut ir = [T::zero(); 4];
            for (k, v) in ir.iter_mut().enumerate() {
                let mut p = s + k;
                while p < e {
                    *v = l.irr_vals[p].mul_add(x[l.irr_cols[p] as usize], *v);
                    p += 4;
                }
            }
            let ir = (ir[0] + ir[1]) + (ir[2] + ir[3]);
            let row = l.blk_rows[g * 8 + m];
            if row != NONE {
                store(&mut y[row as usize], alpha, sum + ir, beta);
            }
        }
    }
    // short tiles
    let (mut a1, mut a2) = ([T::zero(); 32], [T::zero(); 32]);
    for t in 0..l.nshort_tiles() {
        for lane in 0..32 {
            let (m, k) = (lane / 4, lane % 4);
            let v = l.short_vals[t * 32 + lane];
            b[lane] = x[l.short_cols[t * 32 + lane] as usize];
            let first = (k as i32) < l.short_split[t * 8 + m];
            a1[lane] = if first { v } else { T::zero() };
            a2[lane] = if first { T::zero() } else { v };
        }
        let (mut c1, mut c2) = (Acc::new(), Acc::new());
        c1.tile(&a1, &b);
        c2.tile(&a2, &b);
        for m in 0..8 {
            let (r1, r2) = (l.short_row1[t * 8 + m], l.short_row2[t * 8 + m]);
            if r1 != NONE {
                store(&mut y[r1 as usize], alpha, c1.row(m), beta);
            }
            if r2 != NONE {
                store(&mut y[r2 as usize], alpha, c2.row(m), beta);
            }
        }
    }
    for &r in &l.empty_rows {
        store(&mut y[r as usize], alpha, T::zero(), beta);
    }
}
