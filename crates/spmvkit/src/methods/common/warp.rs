//! CPU mirrors of the `gpu/prelude.cu` warp helpers, so that a room's CPU mirror sums in its
//! kernel's order and reproduces its bits:
//! - [`butterfly_sum`]: `warp_reduce_sum` (32 lanes) and `warp_reduce_sum_width` (a group of
//!   `width` lanes), the xor butterfly as lane 0 sees it;
//! - [`cta_sum`]: the reduction of `cta_gather_sum` (a butterfly per warp, the warp sums through
//!   `wsum`, warp 0's butterfly over them); [`warp_sums_in_order`]: a butterfly per warp, the
//!   warp sums added one after another from zero (amf-csr's long rows, pbc's COO segments);
//! - [`strided_partials`], [`strided_partials_by`] and [`lane_partials`]: the per-lane fused multiply-add loops that feed
//!   those reductions, lane l taking entries j ≡ l (mod width) from `first` (the row start, as
//!   `cta_gather_sum`'s gather does, or the start aligned down, as `csr_vector`'s kernel does);
//! - [`store`]: the store the warp kernels write inline, `t = alpha * sum; y = beta == 0 ? t :
//!   fma(beta, y, t)`: y is not read when β = 0, the contract of the prelude's `store_axpby`
//!   (which no kernel calls; its unfused form is not what this mirrors).

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

/// The sum of a CTA's lane partials (`lanes.len()` a multiple of 32) as the kernels that add
/// the warp sums in order compute it: the butterfly of each warp's 32 lanes, then the warp sums
/// added one after another from zero.
pub(crate) fn warp_sums_in_order<T: Scalar>(lanes: &mut [T]) -> T {
    let mut total = T::zero();
    for w in lanes.chunks_mut(32) {
        total += butterfly_sum(w);
    }
    total
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
pub(crate) fn lane_partials<T: Scalar, O: crate::scalar::Offset>(
    a: &Csr<T, O>,
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
    strided_partials_by(vals, |k| x[cols[k] as usize], first, start, end, lanes);
}

/// [`strided_partials`] with entry k's x given by `xk(k)` (for layouts whose column words hold
/// more than the column).
pub(crate) fn strided_partials_by<T: Scalar>(
    vals: &[T],
    xk: impl Fn(usize) -> T,
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
                *s = vals[k].mul_add(xk(k), *s);
            }
        }
        j += width;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn butterfly_order() {
        // The butterfly pairs lane l with l^16, then l^8, …: with these values a left-to-right sum
        // loses the 1.0 entirely in f32, the butterfly keeps it.
        let mut lanes = [0f32; 32];
        lanes[0] = 1.0e8;
        lanes[16] = -1.0e8;
        lanes[1] = 1.0;
        assert_eq!(butterfly_sum(&mut lanes), 1.0);
    }
}
