//! CPU mirror of `teb_spmv` and `teb_vector_spmv` (kernel.cu): block by block, each merged row
//! summed, y at the original row = α·sum (+ β·y fused). Bitwise equal to the kernels:
//! - a row a thread sums (every row in `teb`; rows shorter than `long_row` in `teb-vector`) is
//!   one sequential loop of fused multiply-adds from zero;
//! - a long row of `teb-vector` is summed as its CTA of `threads` threads does: thread t adds
//!   entries start + t, start + t + threads, … with fused multiply-adds from zero, then the
//!   warp butterflies and the butterfly over the warp sums ([`cta_sum`]).
//!
//! The order in which the kernel visits the rows (long rows first) does not matter: each row is
//! written once, from its own entries only.

use super::TebLayout;
use crate::methods::common::warp::{cta_sum, store, strided_partials};
use crate::scalar::Scalar;

/// y = αAx + βy as the teb (or teb-vector) kernel computes it.
pub(super) fn run<T: Scalar>(l: &TebLayout<T>, alpha: T, x: &[T], beta: T, y: &mut [T]) {
    debug_assert_eq!(y.len(), l.nrows);
    let long_row = l.long_row.map_or(usize::MAX, |v| v as usize);
    let mut lanes = vec![
        T::zero();
        if l.long_row.is_some() {
            l.threads as usize
        } else {
            0
        }
    ];
    for b in 0..l.nblocks() {
        for r in l.blo_idx[b] as usize..l.blo_idx[b + 1] as usize {
            let (s, e) = (l.row_nnz_sum[r] as usize, l.row_nnz_sum[r + 1] as usize);
            let sum = if e - s >= long_row {
                strided_partials(&l.values, &l.col_idx, x, s, s, e, &mut lanes);
                cta_sum(&mut lanes)
            } else {
                let mut sum = T::zero();
                for j in s..e {
                    sum = l.values[j].mul_add(x[l.col_idx[j] as usize], sum);
                }
                sum
            };
            store(&mut y[l.row_ids[r] as usize], alpha, sum, beta);
        }
    }
}
