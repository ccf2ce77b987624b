//! CPU mirror of `kernel.cu`: rows play the threads; each sums its row left to right with fused
//! multiply-adds and applies α and β exactly as the kernel does, so results match bit for bit.

use crate::matrix::Csr;
use crate::scalar::{Offset, Scalar};

/// y = αAx + βy, row by row as the GPU threads do; y is not read when β = 0.
pub(super) fn run<T: Scalar, O: Offset>(a: &Csr<T, O>, alpha: T, x: &[T], beta: T, y: &mut [T]) {
    for (row, yi) in y.iter_mut().enumerate().take(a.nrows()) {
        let (cols, vals) = a.row(row);
        let mut sum = T::zero();
        for (&c, &v) in cols.iter().zip(vals) {
            sum = v.mul_add(x[c as usize], sum);
        }
        *yi = if beta == T::zero() {
            alpha * sum
        } else {
            alpha.mul_add(sum, beta * *yi)
        };
    }
}
