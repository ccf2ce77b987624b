//! CPU mirror of the y prologue + `csc_atomic` (kernel.cu): y is scaled by β (zeroed when β = 0),
//! then every column j adds a_ij·(α·x_j) to y_i, one unfused add per entry as the atomics do,
//! in column order (one of the orders the GPU may take).

use crate::matrix::Csc;
use crate::scalar::Scalar;

/// y = αAx + βy as the csc kernels compute it, with the atomics landing in column order.
pub(super) fn run<T: Scalar>(a: &Csc<T>, alpha: T, x: &[T], beta: T, y: &mut [T]) {
    for yi in y.iter_mut() {
        *yi = if beta == T::zero() {
            T::zero()
        } else {
            beta * *yi
        };
    }
    for (j, &xj) in x.iter().enumerate() {
        let (rows, vals) = a.col(j);
        if rows.is_empty() {
            continue;
        }
        let ax = alpha * xj;
        for (&r, &v) in rows.iter().zip(vals) {
            y[r as usize] += v * ax;
        }
    }
}
