//! CPU mirror of `csr_vector` (kernel.cu): per row, 32 simulated lanes accumulate their strided
//! entries with fused multiply-adds from the 32-aligned start, then a butterfly (`shfl_xor` by
//! 16, 8, 4, 2, 1) adds them; y gets α·sum, plus β·y fused when β ≠ 0. Bitwise equal to the
//! kernel.

use crate::matrix::Csr;
use crate::scalar::{Idx, Scalar};

/// The butterfly sum of `lanes` (a power-of-two count ≤ 32) as lane 0 sees it: at each step,
/// every lane adds the value of the lane whose index differs in bit `o`.
pub(crate) fn butterfly_sum<T: Scalar>(lanes: &mut [T]) -> T {
    let w = lanes.len();
    let mut o = w / 2;
    while o > 0 {
        let prev: [T; 32] = std::array::from_fn(|l| if l < w { lanes[l] } else { T::zero() });
        for (l, v) in lanes.iter_mut().enumerate() {
            *v = prev[l] + prev[l ^ o];
        }
        o /= 2;
    }
    lanes.first().copied().unwrap_or_else(T::zero)
}

/// The sum of a CTA's lane partials (`lanes.len()` a multiple of 32, at most 1024) as the
/// kernels' CTA reduction gives it to thread 0: the butterfly of each warp's 32 lanes (warp
/// w's sum lands in `wsum[w]` in shared memory), then warp 0 takes lane l = `wsum[l]` (zero past
/// the last warp) and does the butterfly again.
pub(crate) fn cta_sum<T: Scalar>(lanes: &mut [T]) -> T {
    debug_assert!(lanes.len() % 32 == 0 && lanes.len() <= 1024);
    let mut warp_sums = [T::zero(); 32];
    for (w, warp) in lanes.chunks_mut(32).enumerate() {
        warp_sums[w] = butterfly_sum(warp);
    }
    butterfly_sum(&mut warp_sums)
}

/// y_i = α·sum (+ β·y_i fused), never reading y_i when β = 0: the kernels' store.
#[inline]
pub(crate) fn store<T: Scalar>(yi: &mut T, alpha: T, sum: T, beta: T) {
    let t = alpha * sum;
    *yi = if beta == T::zero() {
        t
    } else {
        beta.mul_add(*yi, t)
    };
}

/// The partial sums of `width` lanes over entries [start, end) of a row, lane l taking the
/// entries j ≡ l (mod width) from `first` (start, or start aligned down to `width`).
pub(crate) fn lane_partials<T: Scalar>(
    a: &Csr<T>,
    x: &[T],
    first: usize,
    start: usize,
    end: usize,
    lanes: &mut [T],
) {
    strided_partials(a.vals(), a.col_idx(), x, first, start, end, lanes);
}

/// [`lane_partials`] over raw `vals`/`cols` arrays (layouts that reorder the matrix keep no
/// [`Csr`]): lane l adds the entries j ≡ l (mod `lanes.len()`) of [start, end) from `first`,
/// fused multiply-adds from zero in j order.
pub(crate) fn strided_partials<T: Scalar>(
    vals: &[T],
    cols: &[Idx],
    x: &[T],
    first: usize,
    start: usize,
    end: usize,
    lanes: &mut [T],
) {
    let width = lanes.len();
    lanes.iter_mut().for_each(|v| *v = T::zero());
    let mut j = first;
    while j < end {
        for (l, s) in lanes.iter_mut().enumerate() {
            let k = j + l;
            if k >= start && k < end {
                *s = vals[k].mul_add(x[cols[k] as usize], *s);
            }
        }
        j += width;
    }
}

/// y = αAx + βy as the csr-vector kernel computes it.
pub(crate) fn run<T: Scalar>(a: &Csr<T>, alpha: T, x: &[T], beta: T, y: &mut [T]) {
    let rp = a.row_ptr();
    let mut lanes = [T::zero(); 32];
    for (row, yi) in y.iter_mut().enumerate() {
        let (start, end) = (rp[row] as usize, rp[row + 1] as usize);
        lane_partials(a, x, start & !31, start, end, &mut lanes);
        let sum = butterfly_sum(&mut lanes);
        store(yi, alpha, sum, beta);
    }
}
