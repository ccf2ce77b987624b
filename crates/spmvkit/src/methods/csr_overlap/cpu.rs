//! CPU mirror of `csr_overlap` (kernel.cu), for both methods. It walks the launches (one for
//! Partial, one per big batch for Full), the CTAs of each launch with their ⌈batches/B⌉
//! consecutive batches (B for a nominal 132-SM GPU: the result does not depend on B), and in
//! each batch the rows as the batch's vectors take them: lane l of a V-lane vector adds entries
//! j ≡ l (mod V) from the row start with fused multiply-adds, then the width-V butterfly. A long
//! row is summed by `threads` lanes striding from its start, a 32-lane butterfly per warp, and a
//! butterfly over the warp sums (zeros past the last warp), as Alg. 9 does. Bitwise equal to the
//! kernel. With `long_chunk`, each chunk of a long row is summed that way and the chunk sums are
//! added as the row's last CTA does (warp 0, lane k taking chunks k, k + 32, ..., butterfly).
//! Debug builds check that every row is written exactly once.

use super::OverlapLayout;
use crate::methods::common::warp::{butterfly_sum, cta_sum, lane_partials, store};
use crate::scalar::Scalar;

/// The SM count the mirror assumes when it splits batches among CTAs.
const NOMINAL_SMS: usize = 132;

/// Nonzeros [start, end) of a long row as one CTA of `threads` lanes sums them (Alg. 9).
fn chunk_sum<T: Scalar>(
    l: &OverlapLayout<T>,
    x: &[T],
    start: usize,
    end: usize,
    lanes: &mut [T],
) -> T {
    lane_partials(&l.a, x, start, start, end, lanes);
    cta_sum(lanes)
}

/// The rows of batch `b` as its vectors compute them (Alg. 5).
fn batch<T: Scalar>(
    l: &OverlapLayout<T>,
    b: usize,
    x: &[T],
    alpha: T,
    beta: T,
    y: &mut [T],
    written: &mut [bool],
) {
    let rp = l.a.row_ptr();
    let (r0, r1) = l.part.batches[b];
    let v = 1usize << l.vlog[b];
    let mut lanes_buf = [T::zero(); 32];
    let lanes = &mut lanes_buf[..v];
    for row in r0 as usize..r1 as usize {
        let (start, end) = (rp[row] as usize, rp[row + 1] as usize);
        lane_partials(&l.a, x, start, start, end, lanes);
        let sum = butterfly_sum(lanes);
        debug_assert!(!written[row], "csr-overlap mirror: row {row} written twice");
        written[row] = true;
        store(&mut y[row], alpha, sum, beta);
    }
}

/// One launch: the long rows (if `with_long`), then batches [first, end) over B CTAs.
#[allow(clippy::too_many_arguments)]
fn launch<T: Scalar>(
    l: &OverlapLayout<T>,
    first: usize,
    end: usize,
    with_long: bool,
    x: &[T],
    alpha: T,
    beta: T,
    y: &mut [T],
    written: &mut [bool],
) {
    if with_long && !l.part.long_rows.is_empty() {
        let mut lanes = vec![T::zero(); l.cfg.threads as usize];
        for (lr, &row) in l.part.long_rows.iter().enumerate() {
            let row = row as usize;
            let (first, count) = (l.long_first[lr] as usize, l.long_count[lr] as usize);
            let partials: Vec<T> = (first..first + count)
                .map(|t| {
                    let task = &l.long_tasks[4 * t..4 * t + 4];
                    debug_assert_eq!(task[0] as usize, lr);
                    chunk_sum(l, x, task[1] as usize, task[2] as usize, &mut lanes)
                })
                .collect();
            // One task: its sum; several: the last CTA's warp 0, lane k adding partials k,
            // k + 32, ... in order, then the butterfly.
            let sum = if count == 1 {
                partials[0]
            } else {
                let mut acc = [T::zero(); 32];
                for (i, &p) in partials.iter().enumerate() {
                    acc[i % 32] += p;
                }
                butterfly_sum(&mut acc)
            };
            debug_assert!(
                !written[row],
                "csr-overlap mirror: long row {row} written twice"
            );
            written[row] = true;
            store(&mut y[row], alpha, sum, beta);
        }
    }
    let n = end - first;
    if n == 0 {
        return;
    }
    let b_ctas = NOMINAL_SMS * l.cfg.ctas_per_sm as usize;
    let per_cta = OverlapLayout::<T>::per_cta(n, b_ctas);
    for cta in 0..n.div_ceil(per_cta) {
        let b0 = first + cta * per_cta;
        for b in b0..(b0 + per_cta).min(end) {
            batch(l, b, x, alpha, beta, y, written);
        }
    }
}

/// y = αAx + βy as the csr-overlap kernel launches compute it.
pub(super) fn run<T: Scalar>(l: &OverlapLayout<T>, alpha: T, x: &[T], beta: T, y: &mut [T]) {
    let mut written = vec![false; y.len()];
    match &l.big {
        None => launch(
            l,
            0,
            l.part.batches.len(),
            true,
            x,
            alpha,
            beta,
            y,
            &mut written,
        ),
        Some(big) => {
            for (i, bb) in big.iter().enumerate() {
                let last = i + 1 == big.len();
                launch(
                    l,
                    bb.start_batch,
                    bb.end_batch,
                    last,
                    x,
                    alpha,
                    beta,
                    y,
                    &mut written,
                );
            }
        }
    }
    debug_assert!(
        written.iter().all(|&w| w),
        "csr-overlap mirror: a row was never written"
    );
}
