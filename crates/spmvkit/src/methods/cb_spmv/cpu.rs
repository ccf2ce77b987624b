//! CPU mirror of the cb-spmv kernels (kernel.cu): walks the slots in index order (warp after warp
//! under `accumulate=run`, summing a run of one panel's blocks before adding it to y), decodes
//! each block's region from the arena bytes (nibble-packed indices after the 64-bit offset,
//! values after the 8-byte padding), stages the block's 16 x values from its first column
//! `xcol` (through the column list when gathered, so `bc·16` is in every format), forms the 16
//! row sums and applies the kernel's epilogue: with the fused prologue the first block of a
//! panel (here: the first in slot order) writes `α·s + β·y` for all 16 rows and the later ones
//! add `α·s` to rows with entries; with `prologue=kernel` y is scaled first and every block
//! adds. Under `accumulate=run` with aggregated regions (`cb_spmv_run`) COO products go to one
//! per-run row accumulator and CSR/dense row sums to another; a run adds their sum to the rows
//! where it is not zero, or with `epilogue=owner` (no scaling first) writes `α·t + β·y` when it
//! holds its whole panel, else adds `t` into the panel's workspace row, and the run that
//! completes the panel's count writes `α·ws + β·y`.

use super::{pad8, read_value, CbLayout, Format, BS, DUMMY_ROW};
use crate::scalar::Scalar;

/// The 16 x values a block whose first column is `xcol` reads: through the column list when
/// gathered. A lane past the list (the device's padding) or past n stages zero; no entry uses it.
pub(super) fn stage_x<T: Scalar>(l: &CbLayout<T>, xcol: usize, x: &[T]) -> [T; BS] {
    let mut xs = [T::zero(); BS];
    for (lane, v) in xs.iter_mut().enumerate() {
        let k = xcol + lane;
        if l.gathered {
            if let Some(&c) = l.gcols.get(k) {
                *v = x[c as usize];
            }
        } else if k < l.ncols {
            *v = x[k];
        }
    }
    xs
}

/// Row sums of one block and the mask of rows that have entries.
pub(super) fn block_sums<T: Scalar>(
    l: &CbLayout<T>,
    slot: usize,
    nnz: usize,
    off: usize,
    xs: &[T; BS],
) -> ([T; BS], u32) {
    let mut rs = [T::zero(); BS];
    let mut mask = 0u32;
    if nnz == 0 {
        return (rs, mask);
    }
    let f = l.cfg.format(nnz);
    let ib = super::index_bytes(f, nnz);
    let val = |i: usize| -> T {
        if l.cfg.aggregate {
            read_value::<T>(&l.arena[off + pad8(ib)..], i)
        } else {
            l.split_vals[l.voff[slot] as usize + i]
        }
    };
    let idx = &l.arena[off..off + ib];
    match f {
        Format::Coo => {
            for (k, &e) in idx.iter().enumerate() {
                let r = (e >> 4) as usize;
                rs[r] += val(k) * xs[(e & 15) as usize];
                mask |= 1 << r;
            }
        }
        Format::Csr => {
            for r in 0..BS {
                let s = idx[r] as usize;
                let e = if r == BS - 1 {
                    nnz
                } else {
                    idx[r + 1] as usize
                };
                // two lanes per row, then the pair sum
                let mut half = [T::zero(); 2];
                for k in s..e {
                    half[(k - s) & 1] += val(k) * xs[idx[BS + 1 + k] as usize];
                }
                rs[r] = half[0] + half[1];
                if e > s {
                    mask |= 1 << r;
                }
            }
        }
        Format::Dense => {
            for (r, out) in rs.iter_mut().enumerate() {
                let mut half = [T::zero(); 2];
                for c in 0..BS {
                    half[c / 8] += val(r * BS + c) * xs[c];
                }
                *out = half[0] + half[1];
            }
            mask = 0xffff;
        }
    }
    (rs, mask)
}

/// y = αAx + βy as the kernel computes it.
pub(super) fn run<T: Scalar>(l: &CbLayout<T>, alpha: T, x: &[T], beta: T, y: &mut [T]) {
    let scale = |v: T| {
        if beta == T::zero() {
            T::zero()
        } else {
            beta * v
        }
    };
    // epilogue=owner: no scaling pass; each run writes or stages its panel (see `flush`)
    let owner = l.owner();
    if !l.cfg.fused && !owner {
        for v in y.iter_mut() {
            *v = scale(*v);
        }
    }
    // accumulate=run: the open run of the current warp (panel, row sums, mask); lean (the run
    // kernel): COO products and CSR/dense row sums kept apart, added where their sum is not 0
    let lean = l.cfg.run && l.cfg.aggregate;
    let mut open: Option<(usize, [T; BS], u32)> = None;
    let mut coo_acc = [T::zero(); BS];
    // the owner epilogue's workspace rows and run counters
    let mut ws = vec![[T::zero(); BS]; l.nparts.len()];
    let mut cnt = vec![0u32; l.nparts.len()];
    let mut flush = |y: &mut [T], open: &mut Option<(usize, [T; BS], u32)>, coo: &mut [T; BS]| {
        if let Some((br, rs, mask)) = open.take() {
            let mut t = [T::zero(); BS];
            for (r, v) in t.iter_mut().enumerate() {
                *v = rs[r] + coo[r];
            }
            let rows = (br * BS..(br * BS + BS).min(l.nrows)).enumerate();
            if owner {
                // one run holds the panel: it writes y; else the run completing the count does
                let s = l.split_of[br];
                let full = if s == u32::MAX {
                    Some(t)
                } else {
                    let (s, w) = (s as usize, &mut ws[s as usize]);
                    for (a, &v) in w.iter_mut().zip(&t) {
                        *a += v;
                    }
                    cnt[s] += 1;
                    (cnt[s] == l.nparts[s]).then(|| {
                        cnt[s] = 0;
                        std::mem::replace(w, [T::zero(); BS])
                    })
                };
                if let Some(t) = full {
                    for (r, i) in rows {
                        y[i] = alpha * t[r] + scale(y[i]);
                    }
                }
            } else {
                for (r, i) in rows {
                    let add = if lean {
                        t[r] != T::zero()
                    } else {
                        mask >> r & 1 == 1
                    };
                    if add {
                        y[i] += alpha * t[r];
                    }
                }
            }
        }
        *coo = [T::zero(); BS];
    };
    let mut first_done = vec![false; l.panel_nb.len()];
    for slot in 0..l.nslots() {
        if l.cfg.run && slot % l.bpw == 0 {
            flush(y, &mut open, &mut coo_acc); // a new warp
        }
        let (w0, w1) = (l.meta[2 * slot], l.meta[2 * slot + 1]);
        let br = (w1 >> 32) as u32;
        if br == DUMMY_ROW {
            continue;
        }
        let (br, xcol) = (br as usize, (w1 & 0xffff_ffff) as usize);
        let nnz = (w0 & 511) as usize;
        let off = (w0 >> 10) as usize;
        let xs = if nnz > 0 {
            stage_x(l, xcol, x)
        } else {
            [T::zero(); BS]
        };
        if l.cfg.run && open.as_ref().is_some_and(|o| o.0 != br) {
            flush(y, &mut open, &mut coo_acc);
        }
        if lean && nnz > 0 && l.cfg.format(nnz) == Format::Coo {
            open.get_or_insert((br, [T::zero(); BS], 0));
            coo_products(l, nnz, off, &xs, &mut coo_acc);
            continue;
        }
        let (rs, mask) = block_sums(l, slot, nnz, off, &xs);
        if l.cfg.run {
            let o = open.get_or_insert((br, [T::zero(); BS], 0));
            for (a, &s) in o.1.iter_mut().zip(&rs) {
                *a += s;
            }
            o.2 |= mask;
            continue;
        }
        let first = l.cfg.fused && !first_done[br];
        if l.cfg.fused {
            first_done[br] = true;
        }
        for (r, &s) in rs.iter().enumerate() {
            let i = br * BS + r;
            if i >= l.nrows {
                break;
            }
            if first {
                y[i] = alpha * s + scale(y[i]);
            } else if mask >> r & 1 == 1 {
                y[i] += alpha * s;
            }
        }
    }
    flush(y, &mut open, &mut coo_acc);
}

/// A COO block's products added into the run's row accumulator, in entry order.
fn coo_products<T: Scalar>(
    l: &CbLayout<T>,
    nnz: usize,
    off: usize,
    xs: &[T; BS],
    acc: &mut [T; BS],
) {
    let val = &l.arena[off + pad8(nnz)..];
    for (k, &e) in l.arena[off..off + nnz].iter().enumerate() {
        acc[(e >> 4) as usize] += read_value::<T>(val, k) * xs[(e & 15) as usize];
    }
}
