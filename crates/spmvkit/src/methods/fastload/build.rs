//! FastLoad preprocessing (§IV-B), in parallel and linear or n·log n in every step (the public
//! code has O(n²) prefix sums):
//!
//! 1. `csr->csc`: the counting transpose of [`Csr::to_csc`] (rows stay ascending in a column);
//! 2. `sort columns`: a stable sort of the columns by nnz, ascending — a parallel counting sort
//!    on the counts (chunked histograms, a scan, a stable scatter), or rayon's stable merge sort
//!    when the counts span too wide a range;
//! 3. `sorted csc`: the column pointers in sorted order (the sorted CSC is read in place through
//!    them, not copied: one pass over the nnz less);
//! 4. `blocks`: layers of equal depth range from the distinct heights (one scan over the sorted
//!    heights), blocks per layer in closed form, a scan for `blk_ptr`, then every block's
//!    (ptr, column, length) in parallel;
//! 5. `zigzag fill`: `row_idx`/`vals` written block by block, round by round, in parallel;
//! 6. `classify`: each block's add format from its rounds' runs of equal rows, in parallel.

use std::time::Instant;

use rayon::prelude::*;

use super::{FastLoadLayout, FastLoadOptions, FMT_ATOMIC, FMT_ONE_ROW, FMT_SEGMENT};
use crate::error::{Error, Result};
use crate::matrix::Csr;
use crate::scalar::{Idx, Scalar};

/// Blocks per parallel work item in the block and fill stages.
const BLOCK_CHUNK: usize = 2048;

/// One layer: depths [depth0, depth0 + thick) over sorted columns [col0, ncols).
#[derive(Clone, Copy, Debug)]
struct LayerDesc {
    col0: usize,
    depth0: u32,
    thick: u32,
    /// First block of the layer.
    blk0: usize,
    /// First element of the layer.
    elem0: usize,
}

pub(super) fn build<T: Scalar>(csr: &Csr<T>, opts: FastLoadOptions) -> Result<FastLoadLayout<T>> {
    let (nrows, ncols, nnz) = (csr.nrows(), csr.ncols(), csr.nnz());
    if nnz >= i32::MAX as usize || nrows >= i32::MAX as usize || ncols >= i32::MAX as usize {
        return Err(Error::MethodUnsupported {
            method: "fastload".into(),
            reason: "the kernel's int32 indices need nnz, rows and columns below 2^31".into(),
        });
    }
    let mut stages = Vec::new();

    let t = Instant::now();
    let csc = csr.to_csc();
    stages.push(("csr->csc", t.elapsed()));

    let t = Instant::now();
    let cp = csc.col_ptr();
    let counts: Vec<u32> = cp.par_windows(2).map(|w| w[1] - w[0]).collect();
    let perm = stable_sort_by_count(&counts);
    stages.push(("sort columns", t.elapsed()));

    let t = Instant::now();
    // Sorted CSC: column j' starts at sorted_ptr[j'] in the CSC arrays and has heights[j'] rows.
    let (sorted_ptr, heights): (Vec<u32>, Vec<u32>) = perm
        .par_iter()
        .map(|&c| (cp[c as usize], counts[c as usize]))
        .unzip();
    drop(counts);
    stages.push(("sorted csc", t.elapsed()));

    let t = Instant::now();
    let w = opts.warp as usize;
    let limit = opts.height;
    let mut layers = Vec::new();
    let (mut prev, mut nblk, mut nel) = (0u32, 0usize, 0usize);
    for (j, &h) in heights.iter().enumerate() {
        if h > prev {
            let thick = h - prev;
            let width = ncols - j;
            layers.push(LayerDesc {
                col0: j,
                depth0: prev,
                thick,
                blk0: nblk,
                elem0: nel,
            });
            nblk += width.div_ceil(w) * thick.div_ceil(limit) as usize;
            nel += width * thick as usize;
            prev = h;
        }
    }
    debug_assert_eq!(nel, nnz);
    let mut blk_ptr = vec![0 as Idx; nblk + 1];
    blk_ptr[nblk] = nnz as Idx;
    let mut blk_col = vec![0 as Idx; nblk];
    let mut blk_info = vec![0u8; nblk];
    let mut blk_depth = vec![0u32; nblk];
    blk_ptr[..nblk]
        .par_chunks_mut(BLOCK_CHUNK)
        .zip(blk_col.par_chunks_mut(BLOCK_CHUNK))
        .zip(blk_info.par_chunks_mut(BLOCK_CHUNK))
        .zip(blk_depth.par_chunks_mut(BLOCK_CHUNK))
        .enumerate()
        .for_each(|(ci, (((ptr, col), info), depth))| {
            let b0 = ci * BLOCK_CHUNK;
            let mut k = layers.partition_point(|l| l.blk0 <= b0) - 1;
            for (i, b) in (b0..b0 + ptr.len()).enumerate() {
                while k + 1 < layers.len() && layers[k + 1].blk0 <= b {
                    k += 1;
                }
                let l = &layers[k];
                let sub = l.thick.div_ceil(limit) as usize;
                let local = b - l.blk0;
                let (chunk, s) = (local / sub, (local % sub) as u32);
                let c0 = l.col0 + chunk * w;
                let len = w.min(ncols - c0);
                let r0 = s * limit.min(l.thick);
                ptr[i] = (l.elem0 + chunk * w * l.thick as usize + r0 as usize * len) as Idx;
                col[i] = c0 as Idx;
                info[i] = len as u8;
                depth[i] = l.depth0 + r0;
            }
        });
    stages.push(("blocks", t.elapsed()));

    let t = Instant::now();
    let mut row_idx = vec![0 as Idx; nnz];
    let mut vals = vec![T::zero(); nnz];
    {
        let nchunks = nblk.div_ceil(BLOCK_CHUNK);
        let mut rs: Vec<&mut [Idx]> = Vec::with_capacity(nchunks);
        let mut vs: Vec<&mut [T]> = Vec::with_capacity(nchunks);
        let (mut rrest, mut vrest) = (row_idx.as_mut_slice(), vals.as_mut_slice());
        for ci in 0..nchunks {
            let (a, b) = (ci * BLOCK_CHUNK, ((ci + 1) * BLOCK_CHUNK).min(nblk));
            let n = (blk_ptr[b] - blk_ptr[a]) as usize;
            let (r, rr) = std::mem::take(&mut rrest).split_at_mut(n);
            let (v, vr) = std::mem::take(&mut vrest).split_at_mut(n);
            rs.push(r);
            vs.push(v);
            rrest = rr;
            vrest = vr;
        }
        let (ri, cv) = (csc.row_idx(), csc.vals());
        rs.into_par_iter()
            .zip(vs)
            .enumerate()
            .for_each(|(ci, (rout, vout))| {
                let a = ci * BLOCK_CHUNK;
                let b = ((ci + 1) * BLOCK_CHUNK).min(nblk);
                let base = blk_ptr[a] as usize;
                for blk in a..b {
                    let len = (blk_info[blk] & 63) as usize;
                    let (p, e) = (blk_ptr[blk] as usize, blk_ptr[blk + 1] as usize);
                    let c0 = blk_col[blk] as usize;
                    let cols = &sorted_ptr[c0..c0 + len];
                    for (r, o) in (p..e).step_by(len).enumerate() {
                        let d = blk_depth[blk] + r as u32;
                        let out = o - base;
                        for (lane, &sp) in cols.iter().enumerate() {
                            let src = (sp + d) as usize;
                            rout[out + lane] = ri[src];
                            vout[out + lane] = cv[src];
                        }
                    }
                }
            });
    }
    drop(blk_depth);
    drop(csc);
    stages.push(("zigzag fill", t.elapsed()));

    let t = Instant::now();
    if opts.optimised {
        blk_info.par_iter_mut().enumerate().for_each(|(b, info)| {
            let len = (*info & 63) as usize;
            let rows = &row_idx[blk_ptr[b] as usize..blk_ptr[b + 1] as usize];
            *info |= classify(rows, len, w) << 6;
        });
    }
    stages.push(("classify", t.elapsed()));

    Ok(FastLoadLayout {
        nrows,
        ncols,
        opts,
        perm,
        blk_ptr,
        blk_col_idx: blk_col,
        blk_info,
        row_idx,
        vals,
        stages,
        nlayers: layers.len(),
        csr_bytes: csr.bytes(),
    })
}

/// The add format of a block whose rounds of `len` lanes are `rows` (§IV-C): short blocks and
/// blocks without two neighbouring lanes in one row use atomics, blocks whose every round is one
/// row a reduction, the rest a segmented sum.
fn classify(rows: &[Idx], len: usize, warp: usize) -> u8 {
    if len < warp || len == 1 {
        return FMT_ATOMIC;
    }
    let (mut all_one, mut all_distinct) = (true, true);
    for round in rows.chunks_exact(len) {
        for p in round.windows(2) {
            if p[0] == p[1] {
                all_distinct = false;
            } else {
                all_one = false;
            }
        }
    }
    if all_distinct {
        FMT_ATOMIC
    } else if all_one {
        FMT_ONE_ROW
    } else {
        FMT_SEGMENT
    }
}

/// The columns ordered by count, ascending, ties in column order (stable).
fn stable_sort_by_count(counts: &[u32]) -> Vec<Idx> {
    let n = counts.len();
    let max = counts.par_iter().copied().max().unwrap_or(0) as usize;
    let parts = (rayon::current_num_threads() * 2).clamp(1, 64);
    let chunk = n.div_ceil(parts).max(1);
    let nparts = n.div_ceil(chunk);
    // Counting sort when the histograms stay small against the columns; else a merge sort.
    if (max + 1) * nparts > 4 * n + (1 << 16) {
        let mut perm: Vec<Idx> = (0..n as Idx).collect();
        perm.par_sort_by_key(|&c| counts[c as usize]);
        return perm;
    }
    let hist: Vec<Vec<u32>> = counts
        .par_chunks(chunk)
        .map(|cs| {
            let mut h = vec![0u32; max + 1];
            for &c in cs {
                h[c as usize] += 1;
            }
            h
        })
        .collect();
    // offsets[p][v] = start of value v's run for part p: ordered by value, then part.
    let mut offsets = vec![vec![0u32; max + 1]; nparts];
    let mut acc = 0u32;
    for v in 0..=max {
        for p in 0..nparts {
            offsets[p][v] = acc;
            acc += hist[p][v];
        }
    }
    drop(hist);
    let mut perm = vec![0 as Idx; n];
    let out = SyncPtr(perm.as_mut_ptr());
    counts
        .par_chunks(chunk)
        .zip(offsets.into_par_iter())
        .enumerate()
        .for_each(|(p, (cs, mut off))| {
            let out = &out;
            for (i, &c) in cs.iter().enumerate() {
                let dst = off[c as usize] as usize;
                off[c as usize] += 1;
                // SAFETY: the offsets give every column a distinct slot < n (a permutation).
                unsafe { *out.0.add(dst) = (p * chunk + i) as Idx };
            }
        });
    perm
}

struct SyncPtr(*mut Idx);
// SAFETY: used only for disjoint writes (each destination written once).
unsafe impl Sync for SyncPtr {}
