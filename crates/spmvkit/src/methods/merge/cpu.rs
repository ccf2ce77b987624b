//! CPU mirror of `merge_spmv` and `merge_fixup` (kernel.cu), step for step: per tile, the staged
//! products, each thread's diagonal search and walk, the warp Kogge-Stone segmented scan, the
//! fold over warp totals, the head fix-up, the coalesced store and the carry-out; then the
//! fix-up over the carry runs (sequential for short runs, 32 strided lanes and the butterfly for
//! long ones). Bitwise equal to the kernels.

use super::MergeLayout;
use crate::methods::common::warp::{butterfly_sum, store};
use crate::scalar::Scalar;

/// What one simulated thread leaves after walking its steps.
#[derive(Clone, Copy)]
struct ThreadState<T> {
    head: usize,
    head_sum: T,
    closed_head: bool,
    key: i64,
    val: T,
}

/// y = αAx + βy as the merge kernels compute it.
pub(super) fn run<T: Scalar>(l: &MergeLayout<T>, alpha: T, x: &[T], beta: T, y: &mut [T]) {
    let (rp, cols, vals) = (l.a.row_ptr(), l.a.col_idx(), l.a.vals());
    let nrows = l.a.nrows();
    let threads = l.threads as usize;
    let items = l.items as usize;
    let mut carry = vec![T::zero(); l.ntiles()];
    let mut state: Vec<ThreadState<T>> = Vec::with_capacity(threads);
    let mut prod: Vec<T> = Vec::with_capacity(l.tile_items());
    let mut rowsum: Vec<T> = Vec::with_capacity(l.tile_items());
    let mut row_end: Vec<u32> = Vec::with_capacity(l.tile_items() + 1);
    for (t, carry_t) in carry.iter_mut().enumerate() {
        let (row0, row1) = (l.tile_row[t] as usize, l.tile_row[t + 1] as usize);
        let (nz0, nz1) = (l.tile_nz[t] as usize, l.tile_nz[t + 1] as usize);
        let (tile_rows, tile_nnz) = (row1 - row0, nz1 - nz0);
        let tile_len = tile_rows + tile_nnz;
        // 1. staging
        row_end.clear();
        row_end.extend((0..=tile_rows).map(|i| {
            let r = row0 + i;
            if r < nrows {
                rp[r + 1]
            } else {
                nz1 as u32
            }
        }));
        prod.clear();
        prod.extend((nz0..nz1).map(|k| vals[k] * x[cols[k] as usize]));
        rowsum.clear();
        rowsum.resize(tile_rows, T::zero());
        // 2. each thread's walk
        state.clear();
        for tid in 0..threads {
            let d0 = (tid * items).min(tile_len);
            let d1 = (d0 + items).min(tile_len);
            let (mut lo, mut hi) = (d0.saturating_sub(tile_nnz), d0.min(tile_rows));
            while lo < hi {
                let mid = (lo + hi) / 2;
                if (row_end[mid] as usize) < nz0 + d0 - mid {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            let (mut row, mut k) = (lo, d0 - lo);
            let head = row;
            let (mut sum, mut head_sum, mut closed_head) = (T::zero(), T::zero(), false);
            for _ in d0..d1 {
                if nz0 + k < row_end[row] as usize {
                    sum += prod[k];
                    k += 1;
                } else {
                    if closed_head {
                        rowsum[row] = sum;
                    } else {
                        head_sum = sum;
                    }
                    closed_head = true;
                    sum = T::zero();
                    row += 1;
                }
            }
            state.push(ThreadState {
                head,
                head_sum,
                closed_head,
                key: row as i64,
                val: sum,
            });
        }
        // 3. warp scans (Kogge-Stone, simultaneous steps)
        for w in state.chunks_mut(32) {
            let mut off = 1;
            while off < 32 {
                let prev: [(i64, T); 32] = std::array::from_fn(|i| (w[i].key, w[i].val));
                for (lane, s) in w.iter_mut().enumerate().skip(off) {
                    if prev[lane - off].0 == s.key {
                        s.val = prev[lane - off].1 + s.val;
                    }
                }
                off *= 2;
            }
        }
        let totals: Vec<(i64, T)> = state.chunks(32).map(|w| (w[31].key, w[31].val)).collect();
        for (warp, w) in state.chunks_mut(32).enumerate() {
            let (mut pkey, mut pval) = (-1i64, T::zero());
            for &(wk, wv) in &totals[..warp] {
                pval = if wk == pkey { pval + wv } else { wv };
                pkey = wk;
            }
            for s in w.iter_mut() {
                if pkey == s.key {
                    s.val = pval + s.val;
                }
            }
            // exclusive values: the previous lane's inclusive, or the earlier warps' fold
            let incl: [(i64, T); 32] = std::array::from_fn(|i| (w[i].key, w[i].val));
            for (lane, s) in w.iter().enumerate() {
                let (ekey, eval) = if lane == 0 {
                    (pkey, pval)
                } else {
                    incl[lane - 1]
                };
                if s.closed_head {
                    rowsum[s.head] = if ekey == s.head as i64 {
                        eval + s.head_sum
                    } else {
                        s.head_sum
                    };
                }
            }
        }
        if let Some(last) = state.last() {
            *carry_t = last.val;
        }
        // 4. store
        for (i, &s) in rowsum.iter().enumerate() {
            store(&mut y[row0 + i], alpha, s, beta);
        }
    }
    // fix-up
    let mut lanes = [T::zero(); 32];
    for r in 0..l.nruns() {
        let (row, first, end) = (
            l.run_row[r] as usize,
            l.run_first[r] as usize,
            l.run_end[r] as usize,
        );
        let s = if r < l.nshort {
            let mut s = carry[first];
            for &c in &carry[first + 1..end] {
                s += c;
            }
            s
        } else {
            for (lane, v) in lanes.iter_mut().enumerate() {
                let mut s = T::zero();
                let mut k = first + lane;
                while k < end {
                    s += carry[k];
                    k += 32;
                }
                *v = s;
            }
            butterfly_sum(&mut lanes)
        };
        y[row] = alpha.mul_add(s, y[row]);
    }
}
