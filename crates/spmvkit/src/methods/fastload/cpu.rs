//! CPU mirror of `fastload_spmv` (kernel.cu): y = β·y (zeros when β = 0), x_sorted[j'] =
//! x[perm[j']], then every block in order, round by round, with the kernel's per-block adds:
//! format 0 adds α·(a·x) per lane in lane order; format 1 reduces the round with the butterfly of
//! `warp_reduce_sum` and adds α·sum once; format 2 runs the kernel's segmented suffix scan
//! (Kogge–Stone, bounded by each lane's run end) and adds α·(run sum) once per run. The GPU
//! lands the same adds in another order (atomics), so results agree within rounding. Adds to a
//! hub row's virtual rows go to its slots, which are summed into the row at the end (the
//! combine kernel's order: lane-strided partial sums, then the butterfly).

use super::{FastLoadLayout, FMT_ONE_ROW, FMT_SEGMENT};
use crate::scalar::Scalar;

pub(super) fn run<T: Scalar>(l: &FastLoadLayout<T>, alpha: T, x: &[T], beta: T, y: &mut [T]) {
    for yi in y.iter_mut() {
        *yi = if beta == T::zero() {
            T::zero()
        } else {
            beta * *yi
        };
    }
    let xs: Vec<T> = l.perm.iter().map(|&c| x[c as usize]).collect();
    let nrows = l.nrows;
    let slots = l.opts.hub_slots as usize;
    let mut hub = vec![T::zero(); l.hub_rows.len() * slots];
    let mut add = |y: &mut [T], r: u32, v: T| {
        let r = r as usize;
        if r < nrows {
            y[r] += v;
        } else {
            hub[r - nrows] += v;
        }
    };
    let mut v = [T::zero(); 32];
    let mut r = [u32::MAX; 32];
    for b in 0..l.nblocks() {
        let len = l.blk_length(b) as usize;
        let fmt = l.blk_format(b);
        let c0 = l.blk_col_idx[b] as usize;
        let (p, e) = (l.blk_ptr[b] as usize, l.blk_ptr[b + 1] as usize);
        for base in (p..e).step_by(len) {
            for lane in 0..32 {
                if lane < len {
                    v[lane] = l.vals[base + lane] * xs[c0 + lane];
                    r[lane] = l.row_idx[base + lane];
                } else {
                    v[lane] = T::zero();
                    r[lane] = u32::MAX;
                }
            }
            match fmt {
                FMT_ONE_ROW => {
                    let s = butterfly(&v);
                    add(y, r[0], alpha * s);
                }
                FMT_SEGMENT => {
                    segmented(&mut v, &r, len);
                    for lane in 0..len {
                        if lane == 0 || r[lane] != r[lane - 1] {
                            add(y, r[lane], alpha * v[lane]);
                        }
                    }
                }
                _ => {
                    for lane in 0..len {
                        add(y, r[lane], alpha * v[lane]);
                    }
                }
            }
        }
    }
    combine_hubs(&l.hub_rows, &hub, slots, y);
}

/// `fastload_hub_combine`: lane ℓ sums slots ℓ, ℓ + 32, …; the butterfly sums the lanes.
fn combine_hubs<T: Scalar>(hub_rows: &[u32], hub: &[T], slots: usize, y: &mut [T]) {
    for (h, &row) in hub_rows.iter().enumerate() {
        let mut v = [T::zero(); 32];
        for (k, &s) in hub[h * slots..(h + 1) * slots].iter().enumerate() {
            v[k % 32] += s;
        }
        y[row as usize] += butterfly(&v);
    }
}

/// `warp_reduce_sum`: xor butterfly over 32 lanes; lane 0's result.
fn butterfly<T: Scalar>(v: &[T; 32]) -> T {
    let mut a = *v;
    let mut o = 16;
    while o > 0 {
        let prev = a;
        for (lane, x) in a.iter_mut().enumerate() {
            *x = prev[lane] + prev[lane ^ o];
        }
        o >>= 1;
    }
    a[0]
}

/// The kernel's segmented suffix scan: afterwards lane ℓ holds the sum of its run from ℓ to the
/// run's end (so a run's first lane holds the run sum).
fn segmented<T: Scalar>(v: &mut [T; 32], r: &[u32; 32], len: usize) {
    let mut end = [0usize; 32];
    for lane in (0..32).rev() {
        let tail = lane < len && (lane + 1 == len || r[lane + 1] != r[lane]);
        end[lane] = if tail || lane + 1 >= 32 {
            lane
        } else {
            end[lane + 1]
        };
    }
    let mut o = 1;
    while o < 32 {
        let prev = *v;
        for lane in 0..32 {
            if lane + o <= end[lane] {
                v[lane] = prev[lane] + prev[lane + o];
            }
        }
        o <<= 1;
    }
}
