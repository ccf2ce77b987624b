//! CPU mirror of `csr_light_v{V}` (kernel.cu). It simulates the warps of a launch taking rows
//! from the shared counter (in round-robin order; any order gives the same bits), each grab
//! covering `grab` iterations of 32/V rows, and per row the V lanes (fused multiply-adds from
//! the row start, 32-aligned for V = 32) and the width-V butterfly. Debug builds check that
//! every row is taken exactly once and where the counter ends.

use super::CsrLightLayout;
use crate::methods::common::warp::{butterfly_sum, lane_partials, store};
use crate::scalar::Scalar;

/// Warps the simulation runs side by side (any count ≥ 1 gives the same result).
const SIM_WARPS: usize = 7;

/// One row as a vector of V lanes computes it.
fn row_sum<T: Scalar>(l: &CsrLightLayout<T>, x: &[T], row: usize, lanes: &mut [T]) -> T {
    let rp = l.a.row_ptr();
    let (start, end) = (rp[row] as usize, rp[row + 1] as usize);
    let first = if l.vector == 32 { start & !31 } else { start };
    lane_partials(&l.a, x, first, start, end, lanes);
    butterfly_sum(lanes)
}

/// y = αAx + βy as the csr-light kernel computes it.
pub(super) fn run<T: Scalar>(l: &CsrLightLayout<T>, alpha: T, x: &[T], beta: T, y: &mut [T]) {
    let n = l.a.nrows() as u64;
    if n == 0 {
        return;
    }
    let rows_per_iter = (32 / l.vector) as u64;
    let chunk = l.chunk() as u64;
    let mut lanes_buf = [T::zero(); 32];
    let lanes = &mut lanes_buf[..l.vector as usize];
    let mut counter = 0u64;
    let mut active = [true; SIM_WARPS];
    let mut taken = vec![false; n as usize];
    while active.iter().any(|&a| a) {
        for warp_active in active.iter_mut().filter(|a| **a) {
            let base = counter;
            counter += chunk;
            if base >= n {
                *warp_active = false;
                continue;
            }
            for g in 0..l.grab as u64 {
                let first = base + g * rows_per_iter;
                if first >= n {
                    break;
                }
                for vid in 0..rows_per_iter {
                    let row = first + vid;
                    if row < n {
                        let row = row as usize;
                        debug_assert!(!taken[row], "csr-light mirror: row {row} taken twice");
                        taken[row] = true;
                        let sum = row_sum(l, x, row, lanes);
                        store(&mut y[row], alpha, sum, beta);
                    }
                }
            }
        }
    }
    // Every row once; the counter ends at nrows rounded up to chunks plus one failed grab per
    // warp, below 2^32 for any valid matrix (the kernel counts in 32 bits).
    debug_assert!(taken.iter().all(|&t| t));
    debug_assert_eq!(
        counter,
        n.div_ceil(chunk) * chunk + SIM_WARPS as u64 * chunk
    );
}
