//! CPU mirror of `kernel.cu`: it decodes the layout's streams as the lanes do (a lane per row of
//! a slice, codes block by block, each column the previous one plus the code) and sums in the
//! kernel's order: a slice row left to right with fused multiply-adds from zero, a long row by
//! the block's 256 strided threads, warp butterflies and a butterfly over the warp sums. Results
//! match the kernel bit for bit.

use super::encode::{bias, ValueCodes};
use super::{interleaved, PackedLayout, GROUP, WARP};
use crate::methods::common::warp::{cta_sum, strided_partials};
use crate::scalar::Scalar;

/// The kernel's store: α·sum, or α·sum + β·y fused as `fma(α, sum, β·y)`; y is not read when
/// β = 0.
#[inline]
fn store<T: Scalar>(yi: &mut T, alpha: T, sum: T, beta: T) {
    *yi = if beta == T::zero() {
        alpha * sum
    } else {
        alpha.mul_add(sum, beta * *yi)
    };
}

/// Code `j` of lane `l`'s block `g` in a slice's column words at width `w`.
#[inline]
pub(super) fn col_code(words: &[u32], w: u32, g: usize, l: usize, j: usize) -> u32 {
    let per_lane = w as usize / 4;
    let word = |i: usize| words[g * WARP * per_lane + interleaved(per_lane, 4, l, i)];
    match w {
        8 => (word(j / 4) >> (8 * (j % 4))) & 0xff,
        16 => (word(j / 2) >> (16 * (j % 2))) & 0xffff,
        _ => word(j),
    }
}

/// The value of entry `j` of value block `block` (global block index: group · 32 + lane).
#[inline]
fn value<T: Scalar>(l: &PackedLayout<T>, block: usize, j: usize) -> T {
    match l.vcodes {
        ValueCodes::Const => l.dict[0],
        ValueCodes::Bits(b) => {
            let b = b as usize;
            let bit = block * 8 * b + j * b;
            let code = if b == 16 {
                l.vstream[bit / 8] as usize | (l.vstream[bit / 8 + 1] as usize) << 8
            } else {
                (l.vstream[bit / 8] as usize >> (bit % 8)) & ((1 << b) - 1)
            };
            l.dict[code]
        }
        ValueCodes::Raw => {
            let (group, lane) = (block / WARP, block % WARP);
            l.raw[group * WARP * GROUP + interleaved(GROUP, T::BYTES, lane, j)]
        }
    }
}

/// y = αAx + βy as the kernel computes it.
pub(super) fn run<T: Scalar>(l: &PackedLayout<T>, alpha: T, x: &[T], beta: T, y: &mut [T]) {
    for s in 0..l.nslices() {
        let w = l.col_w[s] as u32;
        let words = &l.cols[4 * l.col_off[s] as usize..];
        let g0 = l.grp[s] as usize;
        for (lane, row, len) in l.slice_rows(s) {
            let mut prev = (row as u32).wrapping_sub(bias(w));
            let mut sum = T::zero();
            for k in 0..len {
                let (g, j) = (k / GROUP, k % GROUP);
                prev = prev.wrapping_add(col_code(words, w, g, lane, j));
                let v = value(l, (g0 + g) * WARP + lane, j);
                sum = v.mul_add(x[prev as usize], sum);
            }
            store(&mut y[row], alpha, sum, beta);
        }
    }
    let mut lanes = [T::zero(); super::BLOCK];
    for (i, &r) in l.long_rows.iter().enumerate() {
        let (start, end) = (l.long_ptr[i] as usize, l.long_ptr[i + 1] as usize);
        strided_partials(&l.long_vals, &l.long_cols, x, start, start, end, &mut lanes);
        let sum = cta_sum(&mut lanes);
        store(&mut y[r as usize], alpha, sum, beta);
    }
}
