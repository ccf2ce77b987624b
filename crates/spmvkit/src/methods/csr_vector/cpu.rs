//! CPU mirror of `csr_vector` (kernel.cu): per row, 32 simulated lanes accumulate their strided
//! entries with fused multiply-adds from the 32-aligned start, then a butterfly (`shfl_xor` by
//! 16, 8, 4, 2, 1) adds them; y gets α·sum, plus β·y fused when β ≠ 0. Bitwise equal to the
//! kernel.

use crate::matrix::Csr;
use crate::methods::common::warp::{butterfly_sum, lane_partials, store};
use crate::scalar::{Offset, Scalar};

/// y = αAx + βy as the csr-vector kernel computes it.
pub(crate) fn run<T: Scalar, O: Offset>(a: &Csr<T, O>, alpha: T, x: &[T], beta: T, y: &mut [T]) {
    let rp = a.row_ptr();
    let mut lanes = [T::zero(); 32];
    for (row, yi) in y.iter_mut().enumerate() {
        let (start, end) = (rp[row].to_usize(), rp[row + 1].to_usize());
        lane_partials(a, x, start & !31, start, end, &mut lanes);
        let sum = butterfly_sum(&mut lanes);
        store(yi, alpha, sum, beta);
    }
}
