//! CPU mirror of `csr5_spmv` and `csr5_calibrate` (kernel.cu), lane for lane: per tile, each of
//! the 32 lanes decodes its descriptor and sums its σ transposed entries with fused
//! multiply-adds, closing a segment at each flag; the heads are joined by the segmented suffix
//! scan steered by `seg_offset` (Kogge-Stone steps 1, 2, 4, 8, 16 on the values before each step);
//! a continued first segment goes to the carry slot; the tail rows by 32 strided lanes and the
//! butterfly; empty rows get βy; then the calibrate pass adds each carry run in slot order.

use super::{Csr5Layout, EMPTY_FLAG, OMEGA};
use crate::methods::common::warp::{butterfly_sum, store};
use crate::scalar::Scalar;

/// y = αAx + βy as the csr5 kernels compute it.
pub(super) fn run<T: Scalar>(l: &Csr5Layout<T>, alpha: T, x: &[T], beta: T, y: &mut [T]) {
    let rp = l.a.row_ptr();
    let tl = l.tiles();
    let tile = l.tile_len();
    let mut carry = vec![T::zero(); l.ntiles + 1];
    for (t, carry_t) in carry.iter_mut().enumerate().take(l.ntiles) {
        let base = t * tile;
        let tp = l.tile_ptr[t];
        let row0 = (tp & !EMPTY_FLAG) as usize;
        let flagged = tp & EMPTY_FLAG != 0;
        let cont = (rp[row0] as usize) < base;
        let row_of = |k: usize| -> usize {
            if flagged {
                row0 + tl.empty_offset[l.empty_ptr[t] as usize + k] as usize
            } else {
                row0 + k
            }
        };
        let emit = |k: usize, s: T, y: &mut [T], carry_t: &mut T| {
            if k == 0 && cont {
                *carry_t = s;
            } else {
                store(&mut y[row_of(k)], alpha, s, beta);
            }
        };
        let mut head = [T::zero(); OMEGA];
        let mut tail = [T::zero(); OMEGA];
        let mut seg = [0usize; OMEGA];
        let mut last_k = [0usize; OMEGA];
        let mut has = [false; OMEGA];
        for i in 0..OMEGA {
            let (y_off, s_off, flags) = l.desc(t, i);
            seg[i] = s_off;
            let mut k = y_off;
            let mut sum = T::zero();
            for j in 0..l.sigma {
                let p = base + j * OMEGA + i;
                if flags >> j & 1 != 0 {
                    if has[i] {
                        emit(k - 1, sum, y, carry_t);
                    } else {
                        head[i] = sum;
                    }
                    has[i] = true;
                    sum = T::zero();
                    k += 1;
                }
                sum = tl.vals[p].mul_add(x[tl.col_idx[p] as usize], sum);
            }
            if has[i] {
                tail[i] = sum;
                last_k[i] = k - 1;
            } else {
                head[i] = sum;
            }
        }
        // segmented suffix scan of the heads
        let mut r = head;
        let mut o = 1;
        while o < OMEGA {
            let prev = r;
            for i in 0..OMEGA {
                let down = if i + o < OMEGA { prev[i + o] } else { prev[i] };
                if o <= seg[i] {
                    r[i] = prev[i] + down;
                }
            }
            o *= 2;
        }
        for i in 0..OMEGA {
            if has[i] {
                let after = if i + 1 < OMEGA { r[i + 1] } else { T::zero() };
                emit(last_k[i], tail[i] + after, y, carry_t);
            }
        }
    }
    // tail rows: 32 strided lanes from the 32-aligned start, butterfly
    let split = l.ntiles * tile;
    let tail_row = l.tile_ptr[l.ntiles] as usize;
    let mut lanes = [T::zero(); OMEGA];
    for row in tail_row..l.tail_end {
        let (s0, end) = (rp[row] as usize, rp[row + 1] as usize);
        if s0 == end {
            continue;
        }
        let start = s0.max(split);
        let mut j = start & !31;
        lanes.iter_mut().for_each(|v| *v = T::zero());
        while j < end {
            for (lane, v) in lanes.iter_mut().enumerate() {
                let p = j + lane;
                if p >= start && p < end {
                    *v = tl.vals[p].mul_add(x[tl.col_idx[p] as usize], *v);
                }
            }
            j += 32;
        }
        let s = butterfly_sum(&mut lanes);
        if s0 < split {
            carry[l.ntiles] = s;
        } else {
            store(&mut y[row], alpha, s, beta);
        }
    }
    for &r in &l.empty_rows {
        store(&mut y[r as usize], alpha, T::zero(), beta);
    }
    // calibrate
    for ((&row, &f), &e) in l.run_row.iter().zip(&l.run_first).zip(&l.run_end) {
        let mut s = carry[f as usize];
        for &c in &carry[f as usize + 1..e as usize] {
            s += c;
        }
        let row = row as usize;
        y[row] = alpha.mul_add(s, y[row]);
    }
}
