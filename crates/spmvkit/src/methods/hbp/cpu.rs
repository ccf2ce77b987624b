//! CPU mirror of `hbp_spmv` and the combine kernels (kernel.cu): blocks in the kernel's
//! column-major scheduling order (fixed part, then competitive part, which only changes who
//! computes a block, not what it computes); per block, per group of `warp` slots, each simulated
//! lane finds its row's first nonzero from `begin_nnz` and `zero_row` and walks the `add_sign`
//! chain with fused multiply-adds, writing its partial sum to its own slot of the intermediate;
//! then the combine sums each row's partials in column-block order from zero and stores
//! α·sum (+ β·y fused). Bitwise equal to the kernels.

use super::{Combine, HbpLayout};
use crate::methods::common::warp::store;
use crate::scalar::Scalar;

/// y = αAx + βy as the hbp kernels compute it.
pub(super) fn run<T: Scalar>(l: &HbpLayout<T>, alpha: T, x: &[T], beta: T, y: &mut [T]) {
    let mut mid = vec![T::zero(); l.mid_len()];
    for q in 0..l.nblocks() {
        block(l, l.block_of(q), x, &mut mid);
    }
    combine(l, &mid, alpha, beta, y);
}

/// One warp's work on block `b` (storage index).
fn block<T: Scalar>(l: &HbpLayout<T>, b: usize, x: &[T], mid: &mut [T]) {
    let (br, bc, w) = (l.cfg.block_rows, l.cfg.block_cols, l.cfg.warp);
    let (bm, bn) = (b / l.nbc, b % l.nbc);
    let h = br.min(l.nrows - bm * br);
    let panel_base = bm * br * l.nbc;
    let xseg = &x[bn * bc..];
    let s0 = l.blk_slot[b] as usize;
    let t = l.blk_slot[b + 1] as usize - s0;
    let g0 = l.blk_group[b] as usize;
    for g in 0..t.div_ceil(w) {
        let begin = l.begin_nnz[g0 + g] as usize;
        for lane in 0..w {
            let s = g * w + lane;
            if s >= t {
                continue;
            }
            let slot = s0 + s;
            let (mut j, idx) = match l.cfg.combine {
                Combine::Dense => {
                    let idx = panel_base + bn * h + l.output_hash[slot] as usize;
                    let z = l.zero_row[slot];
                    if z < 0 {
                        mid[idx] = T::zero();
                        continue;
                    }
                    (begin + lane - z as usize, idx)
                }
                Combine::Sparse => (begin + lane, l.out_pos[slot] as usize),
            };
            let mut sum = T::zero();
            loop {
                let local = l.col[j] as usize % bc;
                sum = l.data[j].mul_add(xseg[local], sum);
                let a = l.add_sign[j];
                if a < 0 {
                    break;
                }
                j += a as usize;
            }
            mid[idx] = sum;
        }
    }
}

/// The combine pass: y[r] = α·Σ partials of r (+ β·y[r]).
fn combine<T: Scalar>(l: &HbpLayout<T>, mid: &[T], alpha: T, beta: T, y: &mut [T]) {
    let br = l.cfg.block_rows;
    for (r, yr) in y.iter_mut().enumerate().take(l.nrows) {
        let mut s = T::zero();
        match l.cfg.combine {
            Combine::Dense => {
                let bm = r / br;
                let h = br.min(l.nrows - bm * br);
                let base = bm * br * l.nbc + r % br;
                for bn in 0..l.nbc {
                    s += mid[base + bn * h];
                }
            }
            Combine::Sparse => {
                for &v in &mid[l.cptr[r] as usize..l.cptr[r + 1] as usize] {
                    s += v;
                }
            }
        }
        store(yr, alpha, s, beta);
    }
}
