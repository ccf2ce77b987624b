//! FastLoad preprocessing (§IV-B), in parallel and linear or n·log n in every step (the public
//! code has O(n²) prefix sums):
//!
//! 1. `column counts`: the rows are cut into P chunks (P ≤ threads, bounded so that P·ncols
//!    counters stay under 512 MiB); each chunk counts its entries per column in parallel, and a
//!    scan over the chunks gives every chunk its starting depth in each column — the first half of
//!    a parallel counting transpose (CSR→CSC);
//! 2. `sort columns`: a stable sort of the columns by nnz, ascending — a parallel counting sort
//!    on the counts (chunked histograms, a scan, a stable scatter), or rayon's stable merge sort
//!    when the counts span too wide a range;
//! 3. `blocks`: layers of equal depth range from the distinct heights of the sorted columns (one
//!    scan), blocks per layer in closed form, then every block's (ptr, column, length) in parallel;
//! 4. `scatter`: the second half of the transpose, fused with the sorted CSC and the zigzag: each
//!    chunk walks its rows, and the entry of column c at depth d (its rank in the column in row
//!    order, as in CSC) goes straight to its place in the layout, layer(d).elem0 + chunk·warp·
//!    thickness + (d − layer depth0)·blk_length + lane. The CSC and the sorted CSC are never
//!    materialised: one write of the nnz instead of three;
//! 5. `classify`: each block's add format from its rounds' runs of equal rows, in parallel.
//!
//! Hub rows (ours, not the paper's): a row with at least `hub` nonzeros gets `hub_slots` virtual
//! rows nrows + i·hub_slots + (b mod hub_slots), b the element's block, so that its atomics spread
//! over that many accumulators (one block's elements of the row share a slot, so runs still
//! merge); the kernel `fastload_hub_combine` adds them into the row after the blocks.
use std::time::Instant;

use rayon::prelude::*;

use super::{
    FastLoadLayout, FastLoadOptions, Fuse, PermuteX, FMT_ATOMIC, FMT_ONE_ROW, FMT_SEGMENT,
    GRID_MAX_NNZ, KERNEL_X_MAX_BYTES,
};
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

pub(super) fn build<T: Scalar>(
    csr: &Csr<T>,
    mut opts: FastLoadOptions,
) -> Result<FastLoadLayout<T>> {
    let (nrows, ncols, nnz) = (csr.nrows(), csr.ncols(), csr.nnz());
    if nnz >= i32::MAX as usize || nrows >= i32::MAX as usize || ncols >= i32::MAX as usize {
        return Err(Error::MethodUnsupported {
            method: "fastload".into(),
            reason: "the kernel's int32 indices need nnz, rows and columns below 2^31".into(),
        });
    }
    let mut stages = Vec::new();

    let t = Instant::now();
    let (rp, ci, cv) = (csr.row_ptr(), csr.col_idx(), csr.vals());
    let hub_rows: Vec<Idx> = if opts.hub == 0 {
        Vec::new()
    } else {
        (0..nrows)
            .filter(|&i| rp[i + 1] - rp[i] >= opts.hub)
            .map(|i| i as Idx)
            .collect()
    };
    let slots = opts.hub_slots as usize;
    if nrows + hub_rows.len() * slots >= i32::MAX as usize {
        return Err(Error::MethodUnsupported {
            method: "fastload".into(),
            reason: "rows plus hub slots exceed the kernel's int32 row indices".into(),
        });
    }
    // hub_of[i] = index of row i among the hubs, u32::MAX if it is not one (empty without hubs).
    let mut hub_of = if hub_rows.is_empty() {
        Vec::new()
    } else {
        vec![u32::MAX; nrows]
    };
    for (h, &i) in hub_rows.iter().enumerate() {
        hub_of[i as usize] = h as u32;
    }
    let nparts = rayon::current_num_threads()
        .min((512 << 20) / (4 * ncols.max(1)))
        .clamp(1, 64)
        .min(nrows.max(1));
    // Row chunks of about equal nnz.
    let mut bounds: Vec<usize> = (0..=nparts)
        .map(|p| {
            rp.partition_point(|&v| (v as usize) < nnz * p / nparts)
                .min(nrows)
        })
        .collect();
    bounds[0] = 0;
    bounds[nparts] = nrows;
    let mut offs: Vec<Vec<u32>> = (0..nparts)
        .into_par_iter()
        .map(|p| {
            let mut h = vec![0u32; ncols];
            for &c in &ci[rp[bounds[p]] as usize..rp[bounds[p + 1]] as usize] {
                h[c as usize] += 1;
            }
            h
        })
        .collect();
    // offs[p][c] = depth in column c of chunk p's first entry; counts[c] = column length.
    let mut counts = vec![0u32; ncols];
    {
        let mut rest: Vec<&mut [u32]> = offs.iter_mut().map(|v| v.as_mut_slice()).collect();
        let cols_per = ncols.div_ceil(rayon::current_num_threads() * 4).max(4096);
        let mut per_range: Vec<Vec<&mut [u32]>> = Vec::new();
        let mut cnt_rest = counts.as_mut_slice();
        let mut cnt_parts = Vec::new();
        let mut start = 0;
        while start < ncols {
            let n = cols_per.min(ncols - start);
            let mut here = Vec::with_capacity(nparts);
            let mut next = Vec::with_capacity(nparts);
            for s in rest {
                let (a, b) = s.split_at_mut(n);
                here.push(a);
                next.push(b);
            }
            rest = next;
            let (a, b) = std::mem::take(&mut cnt_rest).split_at_mut(n);
            cnt_parts.push(a);
            cnt_rest = b;
            per_range.push(here);
            start += n;
        }
        per_range
            .into_par_iter()
            .zip(cnt_parts)
            .for_each(|(mut hs, cnt)| {
                for (j, out) in cnt.iter_mut().enumerate() {
                    let mut acc = 0u32;
                    for h in hs.iter_mut() {
                        let v = h[j];
                        h[j] = acc;
                        acc += v;
                    }
                    *out = acc;
                }
            });
    }
    stages.push(("column counts", t.elapsed()));

    let t = Instant::now();
    let perm = stable_sort_by_count(&counts);
    let mut inv = vec![0 as Idx; ncols];
    {
        let out = SyncPtr(inv.as_mut_ptr());
        perm.par_iter().enumerate().for_each(|(j, &c)| {
            let out = &out;
            // SAFETY: perm is a permutation of 0..ncols, so each slot is written once.
            unsafe { *out.0.add(c as usize) = j as Idx };
        });
    }
    if opts.permute_x == PermuteX::Auto {
        // Columns whose sorted neighbour is their original neighbour: x[perm[j']] then reads
        // (nearly) consecutive x, as coalesced as x_sorted.
        let kept = perm.par_windows(2).filter(|w| w[1] == w[0] + 1).count();
        let small = ncols * (T::BYTES + 4) <= KERNEL_X_MAX_BYTES;
        opts.permute_x = if small || 2 * kept >= ncols {
            PermuteX::Kernel
        } else {
            PermuteX::Gather
        };
    }
    if opts.fuse == Fuse::Auto {
        opts.fuse = if nnz <= GRID_MAX_NNZ {
            Fuse::StreamGrid
        } else {
            Fuse::Two
        };
    }
    let heights: Vec<u32> = perm.par_iter().map(|&c| counts[c as usize]).collect();
    drop(counts);
    stages.push(("sort columns", t.elapsed()));

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
    drop(heights);
    let mut blk_ptr = vec![0 as Idx; nblk + 1];
    blk_ptr[nblk] = nnz as Idx;
    let mut blk_col = vec![0 as Idx; nblk];
    let mut blk_info = vec![0u8; nblk];
    blk_ptr[..nblk]
        .par_chunks_mut(BLOCK_CHUNK)
        .zip(blk_col.par_chunks_mut(BLOCK_CHUNK))
        .zip(blk_info.par_chunks_mut(BLOCK_CHUNK))
        .enumerate()
        .for_each(|(ci, ((ptr, col), info))| {
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
            }
        });
    stages.push(("blocks", t.elapsed()));

    let t = Instant::now();
    // Layer of every depth (depth d lies in the layer k with depth0 ≤ d < depth0 + thick).
    let max_h = layers.last().map_or(0, |l| (l.depth0 + l.thick) as usize);
    let mut layer_of = vec![0u32; max_h];
    for (k, l) in layers.iter().enumerate() {
        layer_of[l.depth0 as usize..(l.depth0 + l.thick) as usize].fill(k as u32);
    }
    let mut row_idx = vec![0 as Idx; nnz];
    let mut vals = vec![T::zero(); nnz];
    {
        let (ro, vo) = (SyncPtr(row_idx.as_mut_ptr()), SyncPtrT(vals.as_mut_ptr()));
        offs.par_iter_mut().enumerate().for_each(|(p, off)| {
            let (ro, vo) = (&ro, &vo);
            for i in bounds[p]..bounds[p + 1] {
                for k in rp[i] as usize..rp[i + 1] as usize {
                    let c = ci[k] as usize;
                    let d = off[c];
                    off[c] = d + 1;
                    let j = inv[c] as usize;
                    let l = &layers[layer_of[d as usize] as usize];
                    let rel = j - l.col0;
                    let (chunk, lane) = (rel / w, rel % w);
                    let len = w.min(ncols - l.col0 - chunk * w);
                    let pos = l.elem0
                        + chunk * w * l.thick as usize
                        + (d - l.depth0) as usize * len
                        + lane;
                    let row = match hub_of.get(i) {
                        Some(&h) if h != u32::MAX => {
                            let sub = l.thick.div_ceil(limit) as usize;
                            let blk = l.blk0 + chunk * sub + ((d - l.depth0) / limit) as usize;
                            nrows + h as usize * slots + blk % slots
                        }
                        _ => i,
                    };
                    // SAFETY: (column, depth) pairs are distinct and map one to one onto 0..nnz
                    // (each layer's rectangle is laid out chunk by chunk, round by round), so
                    // every position is written exactly once.
                    unsafe {
                        *ro.0.add(pos) = row as Idx;
                        *vo.0.add(pos) = cv[k];
                    }
                }
            }
        });
    }
    drop(offs);
    stages.push(("scatter (zigzag)", t.elapsed()));

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
        hub_rows,
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

struct SyncPtrT<T>(*mut T);
// SAFETY: used only for disjoint writes (each destination written once); T is a plain scalar.
unsafe impl<T: Send> Sync for SyncPtrT<T> {}
