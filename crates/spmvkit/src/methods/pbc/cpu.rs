//! CPU mirror of `pbc_spmv` (kernel.cu): per block, the CSR-part rows summed in order with fma
//! (one thread each), each COO segment summed by `threads` strided lanes, a 32-lane butterfly
//! per warp and the warp sums added in order into its slot; then, as the last CTA does, each cut
//! row's slots added in block order from zero and stored. Bitwise equal to the kernel.

use super::PbcLayout;
use crate::methods::common::warp::{store, strided_partials, warp_sums_in_order};
use crate::scalar::Scalar;

/// Σ v·x over [s, e) as a CTA of `threads` computes it.
fn cta_sum<T: Scalar>(l: &PbcLayout<T>, x: &[T], s: usize, e: usize) -> T {
    let mut lanes = vec![T::zero(); l.threads as usize];
    strided_partials(&l.coo_val, &l.coo_col, x, s, s, e, &mut lanes);
    warp_sums_in_order(&mut lanes)
}

/// y = αAx + βy as the pbc kernel computes it.
pub(super) fn run<T: Scalar>(l: &PbcLayout<T>, alpha: T, x: &[T], beta: T, y: &mut [T]) {
    debug_assert_eq!(y.len(), l.nrows);
    let mut part = vec![T::zero(); l.nslots()];
    for b in 0..l.nblocks() {
        for i in l.blk_row[b] as usize..l.blk_row[b + 1] as usize {
            let mut sum = T::zero();
            for j in l.row_off[i] as usize..l.row_off[i + 1] as usize {
                sum = l.val[j].mul_add(x[l.col[j] as usize], sum);
            }
            store(&mut y[l.rows[i] as usize], alpha, sum, beta);
        }
        for sg in l.blk_seg[b] as usize..l.blk_seg[b + 1] as usize {
            let (s, e) = (l.seg_ptr[sg] as usize, l.seg_ptr[sg + 1] as usize);
            part[l.seg_slot[sg] as usize] = cta_sum(l, x, s, e);
        }
    }
    for (i, &r) in l.split_row.iter().enumerate() {
        let mut total = T::zero();
        for p in &part[l.split_ptr[i] as usize..l.split_ptr[i + 1] as usize] {
            total += *p;
        }
        store(&mut y[r as usize], alpha, total, beta);
    }
}
