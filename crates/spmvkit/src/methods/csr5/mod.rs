//! `csr5`: CSR5 SpMV after Liu & Vinter, "CSR5: An Efficient Storage Format for Cross-Platform
//! Sparse Matrix-Vector Multiplication", ICS'15 (our own implementation from the paper's
//! description and the notes in `shared/notes/methods.md` §4).
//!
//! The nonzeros (in CSR order) are cut into tiles of ω = 32 lanes × σ entries; entry `j` of lane
//! `i` of tile `t` is nonzero `t·ωσ + i·σ + j`, stored transposed (`j·ω + i` inside the tile) so
//! that a warp's loads coalesce. Per tile: `tile_ptr[t]`, the row holding the tile's first
//! nonzero, its most significant bit set when the tile spans empty rows (its segments then map to
//! rows through `empty_offset`); and a bit-packed descriptor per lane (`tile_desc`): `y_offset`
//! (segments begun in earlier lanes), `seg_offset` (lanes from this one to the next lane holding a
//! row start) and σ `bit_flag`s (row starts; bit 0 of lane 0 always set). The nonzeros after the
//! last full tile (the tail) stay in CSR order and are done CSR-vector style, a warp per row.
//!
//! Kernel: a warp per tile; each lane sums its σ entries, closing a segment at each flag; the
//! heads (sums before a lane's first flag) are joined to the segment open in an earlier lane by a
//! segmented suffix scan steered by `seg_offset` (exact, no subtraction of prefix sums). The first
//! segment of a tile whose row began in an earlier tile is a carried sum: stored per tile and
//! added to y by the `calibrate` pass. Deviation from the original, kept deliberately: the
//! original adds carried sums with `atomicAdd`; here the calibrate pass sums each row's run of
//! carries in a fixed order (runs found in preprocessing), so the method is deterministic. Rows
//! with no nonzero get y = βy from the same launch as the tiles.
//!
//! σ (param `sigma`, auto): by mean nonzeros per row r: r ≤ 4 → 4; r ≤ 32 → r; r ≤ 256 → 32;
//! else 6 (the rule of the authors' CUDA code as recorded in the notes).
//!
//! Preprocessing, split as the original does: the O(nnz) part — transposing the tiles, the
//! descriptors and the empty-row offsets — runs on the GPU at upload (`csr5_generate`, a warp per
//! tile, counted in the upload time); the O(rows + tiles) bookkeeping (`tile_ptr` and its flags,
//! `empty_ptr`, the carry runs, the empty rows) runs on the host in `prepare`, in parallel. The
//! host has the same generator (`build_tiles`, the same walk per lane) for the CPU mirror, for
//! `prep=host`, and to cross-check the GPU with `verify=1`.

mod cpu;
mod gpu;

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::matrix::Csr;
use crate::methods::common::room::{forward, method, room_kernel};
use crate::methods::params::{keywords, one_of, params, AutoOr};
use crate::methods::Layout;
use crate::scalar::{Idx, Scalar};

room_kernel!(
    "csr5",
    [
        gpu::Csr5Args::params_entry("csr5_spmv"),
        gpu::Csr5CalibrateArgs::params_entry("csr5_calibrate"),
        gpu::Csr5GenerateArgs::params_entry("csr5_generate"),
    ]
);

const NAME: &str = "csr5";

/// Lanes per tile (ω): one warp.
pub(crate) const OMEGA: usize = 32;

/// Bits of `seg_offset` in a lane descriptor (values 0..=31).
pub(crate) const SEG_BITS: u32 = 5;

/// Most significant bit of `tile_ptr`: the tile spans empty rows.
pub(crate) const EMPTY_FLAG: u32 = 1 << 31;

params! {
    /// The parameters of `csr5`.
    struct Csr5Params {
        /// entries per lane of a tile (σ, 1..=32); auto: by mean nnz per row r, r<=4 -> 4, r<=32 ->
        /// r, r<=256 -> 32, else 6
        sigma: AutoOr<usize> = auto, in 1..=32;
        /// who builds the transposed tiles and descriptors at upload: gpu (the csr5_generate
        /// kernel, as the original) or host
        prep: Prep = gpu;
        /// 1: after csr5_generate, download its arrays and compare with the host build
        verify: u8 = 0, in one_of([0, 1]);
    }
}

method! {
    /// The registry entry of `csr5`.
    pub struct Csr5 {
        name: NAME,
        summary: "GPU: CSR5 tiles of 32 x sigma nonzeros (transposed), bit-flag segmented sum, \
                  calibrate pass for carried sums (fixed order, no atomics), tail as CSR; \
                  tiles and descriptors generated on the GPU at upload",
        source: "Liu & Vinter, CSR5: an efficient storage format for cross-platform SpMV, ICS'15",
        deterministic: true,
    }
    fn prepare(csr, p: Csr5Params) {
        let sigma = p
            .sigma
            .value()
            .unwrap_or_else(|| auto_sigma(csr.nnz(), csr.nrows()));
        let (prep, verify) = (p.prep, p.verify == 1);
        Ok(Box::new(Csr5Layout::build_with(csr, sigma, prep, verify)))
    }
}

/// σ from the mean nonzeros per row (notes §4).
pub(crate) fn auto_sigma(nnz: usize, nrows: usize) -> usize {
    let r = nnz / nrows.max(1);
    if r <= 4 {
        4
    } else if r <= 32 {
        r
    } else if r <= 256 {
        32
    } else {
        6
    }
}

/// Bits needed to hold values 0..=v.
fn bits_for(v: usize) -> u32 {
    usize::BITS - v.leading_zeros()
}

keywords! {
    /// How `upload` produces the O(nnz) part of the layout (transposed tiles, descriptors, empty
    /// offsets).
    pub(crate) enum Prep {
        /// By the `csr5_generate` kernel, as the original does.
        Gpu = "gpu",
        /// Uploaded from the host build (the CPU mirror's arrays).
        Host = "host",
    }
}

/// The O(nnz) arrays of the layout (built on the host only for the CPU mirror, `prep=host` and
/// `verify=1`).
pub(crate) struct Tiles<T> {
    /// Column indices and values: tiles transposed, the tail in CSR order.
    pub(crate) col_idx: Vec<Idx>,
    pub(crate) vals: Vec<T>,
    /// Lane descriptors: word p of lane i of tile t at `(t·npacket + p)·32 + i`.
    pub(crate) tile_desc: Vec<u32>,
    /// Row of each segment of a flagged tile, relative to its `tile_ptr` row.
    pub(crate) empty_offset: Vec<Idx>,
}

/// The layout of `csr5`: the host bookkeeping (O(rows + tiles)) and, built lazily, the tiles.
pub struct Csr5Layout<T> {
    pub(crate) a: Csr<T>,
    pub(crate) sigma: usize,
    /// Full tiles.
    pub(crate) ntiles: usize,
    /// Bits of `y_offset` in a lane descriptor.
    pub(crate) y_bits: u32,
    /// 32-bit words per lane descriptor.
    pub(crate) npacket: usize,
    /// ntiles + 1 entries: row of each tile's first nonzero (| EMPTY_FLAG); the last is the row
    /// of the tail's first nonzero (nrows when there is no tail).
    pub(crate) tile_ptr: Vec<Idx>,
    /// For tiles flagged in `tile_ptr`: offsets into `empty_offset` (ntiles + 1 entries).
    pub(crate) empty_ptr: Vec<Idx>,
    /// Rows with no nonzero (y = βy).
    pub(crate) empty_rows: Vec<Idx>,
    /// Carry runs of the calibrate pass: row, first carry slot, end slot (slots 0..=ntiles; slot
    /// ntiles is the tail's).
    pub(crate) run_row: Vec<Idx>,
    pub(crate) run_first: Vec<Idx>,
    pub(crate) run_end: Vec<Idx>,
    /// Tail rows done by warps: rows tile_ptr[ntiles] .. tail_end.
    pub(crate) tail_end: usize,
    pub(crate) prep: Prep,
    pub(crate) verify: bool,
    tiles: OnceLock<Tiles<T>>,
    stages: Vec<(&'static str, Duration)>,
}

/// The row holding nonzero `p` (the last row r with row_ptr[r] <= p < row_ptr[r+1]).
fn row_of(rp: &[Idx], p: usize) -> usize {
    rp.partition_point(|&v| (v as usize) <= p) - 1
}

impl<T: Scalar> Csr5Layout<T> {
    /// The host bookkeeping: tile_ptr with the empty-row flags, empty_ptr, carry runs, empty
    /// rows, the tail (all O(rows + tiles·log rows), in parallel).
    #[cfg(test)]
    pub(crate) fn build(a: &Csr<T>, sigma: usize) -> Self {
        Self::build_with(a, sigma, Prep::Gpu, false)
    }

    pub(crate) fn build_with(a: &Csr<T>, sigma: usize, prep: Prep, verify: bool) -> Self {
        let t0 = Instant::now();
        let rp = a.row_ptr();
        let (nrows, nnz) = (a.nrows(), a.nnz());
        let tile = OMEGA * sigma;
        let ntiles = nnz / tile;
        let y_bits = bits_for(tile);
        let npacket = (y_bits + SEG_BITS + sigma as u32).div_ceil(32) as usize;
        let split = ntiles * tile;

        let empty_rows: Vec<Idx> = (0..nrows)
            .into_par_iter()
            .filter(|&r| rp[r] == rp[r + 1])
            .map(|r| r as Idx)
            .collect();
        // A tile spans an empty row iff an empty row starts strictly inside it.
        let mut flagged = vec![false; ntiles];
        for &r in &empty_rows {
            let p = rp[r as usize] as usize;
            if p % tile != 0 && p < split {
                flagged[p / tile] = true;
            }
        }
        let firsts: Vec<(usize, usize)> = (0..ntiles)
            .into_par_iter()
            .map(|t| (row_of(rp, t * tile), row_of(rp, t * tile + tile - 1)))
            .collect();
        let mut tile_ptr = Vec::with_capacity(ntiles + 1);
        let mut empty_ptr = Vec::with_capacity(ntiles + 1);
        let mut nseg = 0usize;
        for (t, &(first, last)) in firsts.iter().enumerate() {
            empty_ptr.push(nseg as Idx);
            if flagged[t] {
                tile_ptr.push(first as Idx | EMPTY_FLAG);
                // segments: rows spanned less the empty rows strictly inside
                let lo = empty_rows.partition_point(|&e| (e as usize) <= first);
                let hi = empty_rows.partition_point(|&e| (e as usize) < last);
                nseg += last - first + 1 - (hi - lo);
            } else {
                tile_ptr.push(first as Idx);
            }
        }
        empty_ptr.push(nseg as Idx);
        let tail_row = if split < nnz {
            row_of(rp, split)
        } else {
            nrows
        };
        tile_ptr.push(tail_row as Idx);
        let tail_end = if split < nnz {
            row_of(rp, nnz - 1) + 1
        } else {
            nrows
        };
        // Carry slots: tile t (or the tail, slot ntiles) whose first row began earlier.
        let cont = |slot: usize| -> Option<usize> {
            let start = slot * tile;
            if start >= nnz || start == 0 {
                return None;
            }
            let r = (tile_ptr[slot] & !EMPTY_FLAG) as usize;
            ((rp[r] as usize) < start).then_some(r)
        };
        let (mut run_row, mut run_first, mut run_end) = (Vec::new(), Vec::new(), Vec::new());
        for slot in 0..=ntiles {
            if let Some(r) = cont(slot) {
                let extends = run_row.last().is_some_and(|&lr: &Idx| lr as usize == r)
                    && run_end.last().is_some_and(|&e: &Idx| e as usize == slot);
                if extends {
                    if let Some(e) = run_end.last_mut() {
                        *e += 1;
                    }
                } else {
                    run_row.push(r as Idx);
                    run_first.push(slot as Idx);
                    run_end.push(slot as Idx + 1);
                }
            }
        }
        let mut l = Csr5Layout {
            a: a.clone(),
            sigma,
            ntiles,
            y_bits,
            npacket,
            tile_ptr,
            empty_ptr,
            empty_rows,
            run_row,
            run_first,
            run_end,
            tail_end,
            prep,
            verify,
            tiles: OnceLock::new(),
            stages: vec![(
                "tile_ptr, empty_ptr, carries, empty rows (host)",
                t0.elapsed(),
            )],
        };
        if prep == Prep::Host {
            let t1 = Instant::now();
            let _ = l.tiles();
            l.stages.push(("tiles + descriptors (host)", t1.elapsed()));
        }
        l
    }

    /// The transposed tiles and descriptors, built on the host on first use.
    pub(crate) fn tiles(&self) -> &Tiles<T> {
        self.tiles.get_or_init(|| self.build_tiles())
    }

    /// The host version of `csr5_generate` (kernel.cu): per tile and lane, the same walk.
    fn build_tiles(&self) -> Tiles<T> {
        let a = &self.a;
        let rp = a.row_ptr();
        let (sigma, tile, npacket, y_bits) =
            (self.sigma, self.tile_len(), self.npacket, self.y_bits);
        let split = self.ntiles * tile;
        let mut col_idx = a.col_idx().to_vec();
        let mut vals = a.vals().to_vec();
        let mut tile_desc = vec![0u32; self.ntiles * npacket * OMEGA];
        let mut empty_offset = vec![0 as Idx; *self.empty_ptr.last().unwrap_or(&0) as usize];
        let per_tile: Vec<(Vec<u32>, Vec<Idx>)> = (0..self.ntiles)
            .into_par_iter()
            .map(|t| {
                let base = t * tile;
                let row0 = (self.tile_ptr[t] & !EMPTY_FLAG) as usize;
                let flagged = self.tile_ptr[t] & EMPTY_FLAG != 0;
                let mut flags = [0u32; OMEGA];
                let mut seg_rows = Vec::new();
                for (i, f) in flags.iter_mut().enumerate() {
                    let p0 = base + i * sigma;
                    let mut r = row_of(rp, p0);
                    for j in 0..sigma {
                        let p = p0 + j;
                        let start = if j == 0 {
                            p == base || rp[r] as usize == p
                        } else if rp[r + 1] as usize == p {
                            while rp[r + 1] as usize <= p {
                                r += 1;
                            }
                            true
                        } else {
                            false
                        };
                        if start {
                            *f |= 1 << j;
                            if flagged {
                                seg_rows.push((r - row0) as Idx);
                            }
                        }
                    }
                }
                let mut desc = vec![0u32; npacket * OMEGA];
                let mut y_off = 0u64;
                for i in 0..OMEGA {
                    let next = (i..OMEGA).find(|&k| flags[k] != 0).unwrap_or(OMEGA - 1);
                    let word: u64 = y_off
                        | (((next - i) as u64) << y_bits)
                        | ((flags[i] as u64) << (y_bits + SEG_BITS));
                    for p in 0..npacket {
                        desc[p * OMEGA + i] = (word >> (32 * p)) as u32;
                    }
                    y_off += flags[i].count_ones() as u64;
                }
                (desc, seg_rows)
            })
            .collect();
        for (t, (desc, seg_rows)) in per_tile.into_iter().enumerate() {
            tile_desc[t * npacket * OMEGA..(t + 1) * npacket * OMEGA].copy_from_slice(&desc);
            let e0 = self.empty_ptr[t] as usize;
            empty_offset[e0..e0 + seg_rows.len()].copy_from_slice(&seg_rows);
        }
        col_idx[..split]
            .par_chunks_mut(tile)
            .zip(vals[..split].par_chunks_mut(tile))
            .enumerate()
            .for_each(|(t, (c, v))| {
                let base = t * tile;
                for i in 0..OMEGA {
                    for j in 0..sigma {
                        c[j * OMEGA + i] = a.col_idx()[base + i * sigma + j];
                        v[j * OMEGA + i] = a.vals()[base + i * sigma + j];
                    }
                }
            });
        Tiles {
            col_idx,
            vals,
            tile_desc,
            empty_offset,
        }
    }

    /// Nonzeros per tile.
    pub(crate) fn tile_len(&self) -> usize {
        OMEGA * self.sigma
    }

    /// Tail rows (warps of the tail part).
    pub(crate) fn ntail_rows(&self) -> usize {
        self.tail_end - self.tile_ptr[self.ntiles] as usize
    }

    /// The decoded descriptor of lane `i` of tile `t`: (y_offset, seg_offset, bit_flag).
    pub(crate) fn desc(&self, t: usize, i: usize) -> (usize, usize, u32) {
        let d = &self.tiles().tile_desc;
        let mut word: u64 = 0;
        for p in 0..self.npacket {
            word |= (d[(t * self.npacket + p) * OMEGA + i] as u64) << (32 * p);
        }
        let y = (word & ((1u64 << self.y_bits) - 1)) as usize;
        let s = ((word >> self.y_bits) & 31) as usize;
        let f = ((word >> (self.y_bits + SEG_BITS)) & ((1u64 << self.sigma) - 1)) as u32;
        (y, s, f)
    }
}

impl<T: Scalar> Layout<T> for Csr5Layout<T> {
    fn footprint_bytes(&self) -> usize {
        let tile_words = self.ntiles * self.npacket * OMEGA;
        let nseg = *self.empty_ptr.last().unwrap_or(&0) as usize;
        4 * (self.a.row_ptr().len()
            + self.a.nnz()
            + self.tile_ptr.len()
            + tile_words
            + self.empty_ptr.len()
            + nseg
            + self.empty_rows.len()
            + 3 * self.run_row.len())
            + T::BYTES * (self.a.nnz() + self.ntiles + 1)
    }

    forward! { run_cpu, upload }

    fn prep_stages(&self) -> Vec<(&'static str, Duration)> {
        self.stages.clone()
    }

    fn notes(&self) -> Vec<(String, String)> {
        let flagged = self.tile_ptr[..self.ntiles]
            .iter()
            .filter(|&&p| p & EMPTY_FLAG != 0)
            .count();
        vec![
            ("sigma".into(), self.sigma.to_string()),
            (
                "tiles (with empty rows)".into(),
                format!("{} ({flagged})", self.ntiles),
            ),
            ("tail rows".into(), self.ntail_rows().to_string()),
            ("carry runs".into(), self.run_row.len().to_string()),
            ("descriptor words per lane".into(), self.npacket.to_string()),
            (
                "tiles generated by".into(),
                match self.prep {
                    Prep::Gpu => "gpu (csr5_generate)".into(),
                    Prep::Host => "host".into(),
                },
            ),
        ]
    }
}

#[cfg(test)]
mod tests;
