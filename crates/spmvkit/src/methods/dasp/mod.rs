//! `dasp`: DASP SpMV after Lu & Liu, "DASP: Specific Dense Matrix Multiply-Accumulate Units
//! Accelerated General Sparse Matrix-Vector Multiplication", SC'23 (our own implementation from
//! the paper's description and the notes in `shared/notes/methods.md` §4).
//!
//! Rows are classed by length:
//! - empty: y = βy;
//! - short (1–4 nonzeros): packed into 8×4 MMA tiles, a tile row holding one or two short rows
//!   (4 alone; 1 with 3; 2 with 2; leftovers 1 with 1, 1 with 2, or alone). A tile is multiplied
//!   twice, once with each half of its tile rows masked, so the two rows of a tile row come out
//!   separately;
//! - long (≥ `long` nonzeros, default 256): cut into parts of `long_chunk` (64) nonzeros, a warp
//!   per part (32 consecutive nonzeros per 8×4 MMA), the parts of a row added in order by a
//!   second kernel, `dasp_long_sum` (the original's `longPart_sum`), launched only when there are
//!   long rows;
//! - row-block (the rest): sorted by length (descending), cut into groups of 8 rows; a group's
//!   4-wide column slabs (entries 4j..4j+3 of each row) are kept as 8×4 MMA tiles while at least
//!   `threshold` (0.75) of the slab is filled; what is left of each row is the irregular part,
//!   summed by the row's 4 lanes as CSR.
//!
//! The diagonal trick: in `mma.sync.aligned.m8n8k4.row.col.f64` lane t holds `A[t/4][t%4]` and
//! `B[t%4][t/4]`; loading B with x at the column of the lane's own A element makes the diagonal
//! of the 8×8 result the row dot products (`D[m][m] = Σ_k A[m][k]·x[col(A[m][k])]`), found in lane
//! 4m + m/2, element m%2 (the fragment layout of the PTX ISA's m8n8k4 .f64 MMA, as CUTLASS's
//! SM80_8x8x4_F64 traits spell it: `SM80_8x4` for A and B, `SM80_8x8_Row` for C).
//! f32 has no m8n8k4 MMA: the f32 path walks the same layout with one FMA per lane and a sum
//! over each 4-lane group.
//!
//! y is written in the original row order by the kernels themselves (the original un-permutes on
//! the host, outside its timing). One launch per call (two with long rows); no atomics,
//! deterministic. Simplification against the original: no `rowloop` (one row-block group per
//! warp).

mod cpu;
mod gpu;

use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::matrix::Csr;
use crate::methods::common::room::{forward, method, room_kernel};
use crate::methods::params::{multiple_of, params};
use crate::methods::Layout;
use crate::scalar::{Idx, Scalar};

room_kernel!(
    "dasp",
    [
        gpu::DaspArgs::params_entry("dasp_spmv"),
        gpu::DaspLongSumArgs::params_entry("dasp_long_sum"),
    ]
);

const NAME: &str = "dasp";

params! {
    /// The parameters of `dasp`.
    struct DaspParams {
        /// rows with at least this many nonzeros are long; > 4
        long: usize = 256, in 5..;
        /// nonzeros of a long row per warp (a multiple of 32, 32..=65536)
        long_chunk: usize = 64, in multiple_of(32, 32..=65536);
        /// a row-block slab of 8x4 stays an MMA tile while at least this fraction is filled
        threshold: f64 = 0.75, in 0.0..=1.0;
        /// 8x4 tiles of short rows per warp (1..=64)
        short_tiles_per_warp: usize = 4, in 1..=64;
    }
}

/// No row (padding in `i32` row arrays).
pub(crate) const NONE: i32 = -1;

method! {
    /// The registry entry of `dasp`.
    pub struct Dasp {
        name: NAME,
        summary: "GPU: DASP, rows classed short/long/row-block as 8x4 tiles, f64 by \
                  mma.m8n8k4 with the diagonal trick (f32: plain FMA code on the same \
                  layout), y scattered to the original order in the kernel",
        source: "Lu & Liu, DASP: specific dense matrix multiply-accumulate units accelerated general SpMV, SC'23",
        deterministic: true,
    }
    fn prepare(csr, p: DaspParams) {
        let (long, chunk, threshold, spw) =
            (p.long, p.long_chunk, p.threshold, p.short_tiles_per_warp);
        Ok(Box::new(DaspLayout::build(
            csr, long, chunk, threshold, spw,
        )))
    }
}

/// The layout of `dasp`.
pub struct DaspLayout<T> {
    pub(crate) nrows: usize,
    pub(crate) ncols: usize,
    pub(crate) long_len: usize,
    pub(crate) long_chunk: usize,
    pub(crate) threshold: f64,
    pub(crate) short_per_warp: usize,
    pub(crate) empty_rows: Vec<Idx>,
    /// Short tiles: 32 values and columns each, lane order (lane t = tile row t/4, column t%4).
    pub(crate) short_vals: Vec<T>,
    pub(crate) short_cols: Vec<Idx>,
    /// Per tile row (8 per tile): first row, second row (or NONE), the split column (entries
    /// k < split belong to the first row).
    pub(crate) short_row1: Vec<i32>,
    pub(crate) short_row2: Vec<i32>,
    pub(crate) short_split: Vec<i32>,
    /// Long rows: their rows and their CSR data.
    pub(crate) long_rows: Vec<Idx>,
    pub(crate) long_ptr: Vec<Idx>,
    pub(crate) long_cols: Vec<Idx>,
    pub(crate) long_vals: Vec<T>,
    /// Parts of the long rows: [start, end) in long_vals; part_ptr[i].. are row i's parts.
    pub(crate) part_start: Vec<Idx>,
    pub(crate) part_end: Vec<Idx>,
    pub(crate) part_ptr: Vec<Idx>,
    /// Row-block groups: rows (8 per group, NONE padding), slab offsets (ngroups + 1, in slabs),
    /// MMA values/columns (32 per slab, lane order), irregular CSR per group row.
    pub(crate) blk_rows: Vec<i32>,
    pub(crate) blk_slab_ptr: Vec<Idx>,
    pub(crate) blk_vals: Vec<T>,
    pub(crate) blk_cols: Vec<Idx>,
    pub(crate) irr_ptr: Vec<Idx>,
    pub(crate) irr_cols: Vec<Idx>,
    pub(crate) irr_vals: Vec<T>,
    stages: Vec<(&'static str, Duration)>,
}

/// Packs short rows (by length 1..=4) into tile rows: (row1, row2, split).
fn pack_short(by_len: [Vec<usize>; 5]) -> Vec<(i32, i32, i32)> {
    let [_, mut l1, mut l2, l3, l4] = by_len;
    let mut out = Vec::new();
    for r in l4 {
        out.push((r as i32, NONE, 4));
    }
    for r in l3 {
        match l1.pop() {
            Some(s) => out.push((r as i32, s as i32, 3)),
            None => out.push((r as i32, NONE, 3)),
        }
    }
    while l2.len() >= 2 {
        let (a, b) = (l2.pop().unwrap_or(0), l2.pop().unwrap_or(0));
        out.push((a as i32, b as i32, 2));
    }
    if let Some(a) = l2.pop() {
        match l1.pop() {
            Some(s) => out.push((a as i32, s as i32, 2)),
            None => out.push((a as i32, NONE, 2)),
        }
    }
    while l1.len() >= 2 {
        let (a, b) = (l1.pop().unwrap_or(0), l1.pop().unwrap_or(0));
        out.push((a as i32, b as i32, 1));
    }
    if let Some(a) = l1.pop() {
        out.push((a as i32, NONE, 1));
    }
    out
}

impl<T: Scalar> DaspLayout<T> {
    pub(crate) fn build(
        a: &Csr<T>,
        long_len: usize,
        long_chunk: usize,
        threshold: f64,
        spw: usize,
    ) -> Self {
        let t0 = Instant::now();
        let rp = a.row_ptr();
        let (cols, vals) = (a.col_idx(), a.vals());
        let nrows = a.nrows();
        let len = |r: usize| (rp[r + 1] - rp[r]) as usize;
        let mut empty_rows = Vec::new();
        let mut by_len: [Vec<usize>; 5] = Default::default();
        let mut long_rows = Vec::new();
        let mut mid: Vec<usize> = Vec::new();
        for r in 0..nrows {
            match len(r) {
                0 => empty_rows.push(r as Idx),
                l @ 1..=4 => by_len[l].push(r),
                l if l >= long_len => long_rows.push(r as Idx),
                _ => mid.push(r),
            }
        }
        // stable sort by length descending (ties keep row order)
        mid.par_sort_by_key(|&r| std::cmp::Reverse(len(r)));
        let t1 = Instant::now();

        // short tiles
        let trows = pack_short(by_len);
        let ntiles = trows.len().div_ceil(8);
        let mut short_vals = vec![T::zero(); ntiles * 32];
        let mut short_cols = vec![0 as Idx; ntiles * 32];
        let (mut short_row1, mut short_row2, mut short_split) = (
            vec![NONE; ntiles * 8],
            vec![NONE; ntiles * 8],
            vec![0i32; ntiles * 8],
        );
        for (i, &(r1, r2, split)) in trows.iter().enumerate() {
            short_row1[i] = r1;
            short_row2[i] = r2;
            short_split[i] = split;
            let (tile, m) = (i / 8, i % 8);
            let mut k = 0;
            for r in [r1, r2] {
                if r == NONE {
                    continue;
                }
                let r = r as usize;
                for p in rp[r] as usize..rp[r + 1] as usize {
                    short_vals[tile * 32 + m * 4 + k] = vals[p];
                    short_cols[tile * 32 + m * 4 + k] = cols[p];
                    k += 1;
                }
            }
        }
        let t2 = Instant::now();

        // long rows
        let mut long_ptr = vec![0 as Idx];
        let (mut long_cols, mut long_vals) = (Vec::new(), Vec::new());
        for &r in &long_rows {
            let (s, e) = (rp[r as usize] as usize, rp[r as usize + 1] as usize);
            long_cols.extend_from_slice(&cols[s..e]);
            long_vals.extend_from_slice(&vals[s..e]);
            long_ptr.push(long_cols.len() as Idx);
        }
        let (mut part_start, mut part_end, mut part_ptr) = (Vec::new(), Vec::new(), vec![0 as Idx]);
        for w in long_ptr.windows(2) {
            let mut p = w[0];
            while p < w[1] {
                part_start.push(p);
                p = (p + long_chunk as Idx).min(w[1]);
                part_end.push(p);
            }
            part_ptr.push(part_start.len() as Idx);
        }

        // row-block groups
        let need = (threshold * 32.0).ceil() as usize;
        let groups: Vec<&[usize]> = mid.chunks(8).collect();
        let nslabs: Vec<usize> = groups
            .par_iter()
            .map(|g| {
                let mut j = 0;
                loop {
                    let filled: usize =
                        g.iter().map(|&r| len(r).saturating_sub(4 * j).min(4)).sum();
                    if filled == 0 || filled < need.max(1) {
                        break j;
                    }
                    j += 1;
                }
            })
            .collect();
        let mut blk_slab_ptr = vec![0 as Idx];
        for &n in &nslabs {
            blk_slab_ptr.push(blk_slab_ptr.last().copied().unwrap_or(0) + n as Idx);
        }
        let total_slabs = *blk_slab_ptr.last().unwrap_or(&0) as usize;
        let mut blk_vals = vec![T::zero(); total_slabs * 32];
        let mut blk_cols = vec![0 as Idx; total_slabs * 32];
        let mut blk_rows = vec![NONE; groups.len() * 8];
        let mut irr_ptr = vec![0 as Idx];
        let (mut irr_cols, mut irr_vals) = (Vec::new(), Vec::new());
        for (g, rows) in groups.iter().enumerate() {
            let s0 = blk_slab_ptr[g] as usize;
            let ns = nslabs[g];
            for m in 0..8 {
                if let Some(&r) = rows.get(m) {
                    blk_rows[g * 8 + m] = r as i32;
                    let (s, e) = (rp[r] as usize, rp[r + 1] as usize);
                    for (q, p) in (s..e).enumerate() {
                        if q < 4 * ns {
                            let (j, k) = (q / 4, q % 4);
                            blk_vals[(s0 + j) * 32 + m * 4 + k] = vals[p];
                            blk_cols[(s0 + j) * 32 + m * 4 + k] = cols[p];
                        } else {
                            irr_cols.push(cols[p]);
                            irr_vals.push(vals[p]);
                        }
                    }
                }
                irr_ptr.push(irr_cols.len() as Idx);
            }
        }
        let t3 = Instant::now();
        DaspLayout {
            nrows,
            ncols: a.ncols(),
            long_len,
            long_chunk,
            threshold,
            short_per_warp: spw,
            empty_rows,
            short_vals,
            short_cols,
            short_row1,
            short_row2,
            short_split,
            long_rows,
            long_ptr,
            long_cols,
            long_vals,
            part_start,
            part_end,
            part_ptr,
            blk_rows,
            blk_slab_ptr,
            blk_vals,
            blk_cols,
            irr_ptr,
            irr_cols,
            irr_vals,
            stages: vec![
                ("classify + sort rows", t1 - t0),
                ("short tiles", t2 - t1),
                ("long rows + row-block tiles", t3 - t2),
            ],
        }
    }

    pub(crate) fn ngroups(&self) -> usize {
        self.blk_slab_ptr.len() - 1
    }
    pub(crate) fn nshort_tiles(&self) -> usize {
        self.short_row1.len() / 8
    }
}

impl<T: Scalar> Layout<T> for DaspLayout<T> {
    fn footprint_bytes(&self) -> usize {
        4 * (self.empty_rows.len()
            + self.short_cols.len()
            + 3 * self.short_row1.len()
            + self.long_rows.len()
            + self.long_ptr.len()
            + self.long_cols.len()
            + self.part_start.len() * 2
            + self.part_ptr.len()
            + self.blk_rows.len()
            + self.blk_slab_ptr.len()
            + self.blk_cols.len()
            + self.irr_ptr.len()
            + self.irr_cols.len())
            + T::BYTES
                * (self.short_vals.len()
                    + self.long_vals.len()
                    + self.part_start.len()
                    + self.blk_vals.len()
                    + self.irr_vals.len())
    }

    forward! { run_cpu, upload }

    fn prep_stages(&self) -> Vec<(&'static str, Duration)> {
        self.stages.clone()
    }

    fn notes(&self) -> Vec<(String, String)> {
        let mma = self.blk_vals.len();
        let irr = self.irr_vals.len();
        vec![
            (
                "long rows (>= long) / parts (<= long_chunk)".into(),
                format!(
                    "{} (>= {}) / {} (<= {})",
                    self.long_rows.len(),
                    self.long_len,
                    self.part_start.len(),
                    self.long_chunk
                ),
            ),
            ("short tiles".into(), self.nshort_tiles().to_string()),
            ("row-block groups".into(), self.ngroups().to_string()),
            (
                "row-block MMA slots / irregular nnz".into(),
                format!("{mma} / {irr} (threshold {})", self.threshold),
            ),
            ("empty rows".into(), self.empty_rows.len().to_string()),
        ]
    }
}

#[cfg(test)]
mod tests;
