//! CPU mirror of `amf_csr_t{TPV}` (kernel.cu). A block of folded rows: per folded row, TPV
//! simulated lanes accumulate four partial sums (one per local row) with fma in entry order, a
//! width-TPV butterfly adds each, and the fold's rows get y = α·sum (+ β·y fused). A long-row
//! block: `threads` lanes accumulate strided, a 32-lane butterfly per warp, then the warp sums
//! are added in order from zero. Bitwise equal to the kernel.

use super::{AmfLayout, FOLD_BITS};
use crate::methods::common::warp::{butterfly_sum, store, strided_partials_by, warp_sums_in_order};
use crate::scalar::Scalar;

/// y = αAx + βy as the amf-csr kernel computes it.
pub(super) fn run<T: Scalar>(l: &AmfLayout<T>, alpha: T, x: &[T], beta: T, y: &mut [T]) {
    debug_assert_eq!(y.len(), l.nrows);
    let tpv = l.tpv as usize;
    let mask = (1 << FOLD_BITS) - 1;
    for b in 0..l.nblocks() {
        if l.is_long_block(b) {
            let f = l.blk_fold[b] as usize;
            let (s, e) = (l.fold_ptr[f] as usize, l.fold_ptr[f + 1] as usize);
            let mut lanes = vec![T::zero(); l.threads as usize];
            let xk = |j: usize| x[(l.cols[j] >> FOLD_BITS) as usize];
            strided_partials_by(&l.vals, xk, s, s, e, &mut lanes);
            let total = warp_sums_in_order(&mut lanes);
            store(&mut y[l.fold_row[f] as usize], alpha, total, beta);
            continue;
        }
        for f in l.blk_fold[b] as usize..l.blk_fold[b + 1] as usize {
            let (s, e) = (l.fold_ptr[f] as usize, l.fold_ptr[f + 1] as usize);
            let mut acc = vec![[T::zero(); 4]; tpv];
            for (lane, a) in acc.iter_mut().enumerate() {
                let mut j = s + lane;
                while j < e {
                    let c = l.cols[j];
                    let lr = (c & mask) as usize;
                    a[lr] = l.vals[j].mul_add(x[(c >> FOLD_BITS) as usize], a[lr]);
                    j += tpv;
                }
            }
            let r0 = l.fold_row[f] as usize;
            let nr = l.fold_row[f + 1] as usize - r0;
            let mut lanes = vec![T::zero(); tpv];
            for i in 0..nr {
                for (v, a) in lanes.iter_mut().zip(&acc) {
                    *v = a[i];
                }
                let sum = butterfly_sum(&mut lanes);
                store(&mut y[r0 + i], alpha, sum, beta);
            }
        }
    }
}
