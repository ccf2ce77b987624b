//! CPU mirror of `teb_spmv` (kernel.cu): block by block, each merged row summed in order with
//! fused multiply-adds from zero, y at the original row = α·sum (+ β·y fused). Bitwise equal to
//! the kernel (each row is one thread's sequential loop there).

use super::TebLayout;
use crate::methods::csr_vector::cpu::store;
use crate::scalar::Scalar;

/// y = αAx + βy as the teb kernel computes it.
pub(super) fn run<T: Scalar>(l: &TebLayout<T>, alpha: T, x: &[T], beta: T, y: &mut [T]) {
    debug_assert_eq!(y.len(), l.nrows);
    for b in 0..l.nblocks() {
        for r in l.blo_idx[b] as usize..l.blo_idx[b + 1] as usize {
            let (s, e) = (l.row_nnz_sum[r] as usize, l.row_nnz_sum[r + 1] as usize);
            let mut sum = T::zero();
            for j in s..e {
                sum = l.values[j].mul_add(x[l.col_idx[j] as usize], sum);
            }
            store(&mut y[l.row_ids[r] as usize], alpha, sum, beta);
        }
    }
}
