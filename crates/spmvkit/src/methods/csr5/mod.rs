//! `csr5`: CSR5 SpMV after Liu & Vinter, "CSR5: An Efficient Storage Format for Cross-Platform
//! Sparse Matrix-Vector Multiplication", ICS'15, §3–4 (our own implementation from the paper and
//! the notes in `shared/notes/methods.md` §4).
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
//! Preprocessing: the original generates the descriptors on the GPU. Here they are generated on
//! the host, in parallel over tiles (rayon) — a deviation stated in the method summary.

mod cpu;
mod gpu;

use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::gpu::{Gpu, KernelSource};
use crate::matrix::Csr;
use crate::methods::{DeviceLayout, GenericMethod, Layout, MethodInfo, ParamSpec, Params};
use crate::scalar::{Idx, Scalar};

/// The kernel source of this room.
pub const KERNEL: KernelSource = KernelSource {
    name: "csr5",
    source: include_str!("kernel.cu"),
};

const NAME: &str = "csr5";

/// Lanes per tile (ω): one warp.
pub(crate) const OMEGA: usize = 32;

/// Bits of `seg_offset` in a lane descriptor (values 0..=31).
pub(crate) const SEG_BITS: u32 = 5;

/// Most significant bit of `tile_ptr`: the tile spans empty rows.
pub(crate) const EMPTY_FLAG: u32 = 1 << 31;

const PARAMS: &[ParamSpec] = &[ParamSpec {
    key: "sigma",
    default: "auto",
    help: "entries per lane of a tile (σ, 1..=32); auto: by mean nnz per row r, \
           r<=4 -> 4, r<=32 -> r, r<=256 -> 32, else 6",
}];

/// The registry entry of `csr5`.
pub struct Csr5;

impl GenericMethod for Csr5 {
    fn info(&self) -> MethodInfo {
        MethodInfo {
            name: NAME,
            summary:
                "GPU: CSR5 tiles of 32 x sigma nonzeros (transposed), bit-flag segmented sum, \
                      calibrate pass for carried sums (fixed order, no atomics), tail as CSR; \
                      descriptors generated on the host (parallel), not on the GPU",
            source: "Liu & Vinter, CSR5, ICS'15, §3-4",
            deterministic: true,
            gpu: true,
            cpu: true,
            params: PARAMS,
        }
    }

    fn prepare<T: Scalar>(&self, csr: &Csr<T>, params: &Params) -> Result<Box<dyn Layout<T>>> {
        params.check_known(NAME, PARAMS)?;
        let sigma = match params.get::<String>(NAME, PARAMS, "sigma")?.as_str() {
            "auto" => auto_sigma(csr.nnz(), csr.nrows()),
            s => match s.parse::<usize>() {
                Ok(v @ 1..=32) => v,
                _ => {
                    return Err(Error::Param {
                        method: NAME.into(),
                        key: "sigma".into(),
                        msg: format!("'{s}' is not auto or 1..=32"),
                    })
                }
            },
        };
        Ok(Box::new(Csr5Layout::build(csr, sigma)))
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

/// The layout of `csr5`.
pub struct Csr5Layout<T> {
    pub(crate) sigma: usize,
    /// Full tiles.
    pub(crate) ntiles: usize,
    /// Bits of `y_offset` in a lane descriptor.
    pub(crate) y_bits: u32,
    /// 32-bit words per lane descriptor.
    pub(crate) npacket: usize,
    /// CSR row pointer (the tail and the continuation test read it).
    pub(crate) row_ptr: Vec<Idx>,
    /// Column indices and values: tiles transposed, the tail in CSR order.
    pub(crate) col_idx: Vec<Idx>,
    pub(crate) vals: Vec<T>,
    /// ntiles + 1 entries: row of each tile's first nonzero (| EMPTY_FLAG); the last is the row
    /// of the tail's first nonzero (nrows when there is no tail).
    pub(crate) tile_ptr: Vec<Idx>,
    /// Lane descriptors: word p of lane i of tile t at `(t·npacket + p)·32 + i`.
    pub(crate) tile_desc: Vec<u32>,
    /// For tiles flagged in `tile_ptr`: offsets into `empty_offset` (ntiles + 1 entries).
    pub(crate) empty_ptr: Vec<Idx>,
    /// Row of each segment of a flagged tile, relative to its `tile_ptr` row.
    pub(crate) empty_offset: Vec<Idx>,
    /// Rows with no nonzero (y = βy).
    pub(crate) empty_rows: Vec<Idx>,
    /// Carry runs of the calibrate pass: row, first carry slot, end slot (slots 0..=ntiles; slot
    /// ntiles is the tail's).
    pub(crate) run_row: Vec<Idx>,
    pub(crate) run_first: Vec<Idx>,
    pub(crate) run_end: Vec<Idx>,
    /// Tail rows done by warps: rows tile_ptr[ntiles] .. tail_end.
    pub(crate) tail_end: usize,
    stages: Vec<(&'static str, Duration)>,
}

/// The row holding nonzero `p` (the last row r with row_ptr[r] <= p < row_ptr[r+1]).
fn row_of(rp: &[Idx], p: usize) -> usize {
    rp.partition_point(|&v| (v as usize) <= p) - 1
}

/// One tile's descriptor words, its segment rows (relative) and whether it spans empty rows.
struct TileBuild {
    desc: Vec<u32>,
    seg_rows: Vec<Idx>,
    first_row: usize,
    flagged: bool,
}

impl<T: Scalar> Csr5Layout<T> {
    pub(crate) fn build(a: &Csr<T>, sigma: usize) -> Self {
        let t0 = Instant::now();
        let rp = a.row_ptr();
        let (nrows, nnz) = (a.nrows(), a.nnz());
        let tile = OMEGA * sigma;
        let ntiles = nnz / tile;
        let y_bits = bits_for(tile);
        let npacket = (y_bits + SEG_BITS + sigma as u32).div_ceil(32) as usize;

        // Transposed storage of the full tiles; the tail stays in CSR order.
        let mut col_idx = a.col_idx().to_vec();
        let mut vals = a.vals().to_vec();
        let split = ntiles * tile;
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
        let t1 = Instant::now();

        // Descriptors, per tile in parallel.
        let builds: Vec<TileBuild> = (0..ntiles)
            .into_par_iter()
            .map(|t| {
                let base = t * tile;
                let first_row = row_of(rp, base);
                let last_row = row_of(rp, base + tile - 1);
                // flags per lane
                let mut flags = [0u32; OMEGA];
                let mut seg_rows = Vec::new();
                let mut r = first_row;
                for (i, f) in flags.iter_mut().enumerate() {
                    for j in 0..sigma {
                        let p = base + i * sigma + j;
                        let starts = p == base || rp[r + 1] as usize == p;
                        if p != base && starts {
                            // advance to the (nonempty) row starting at p
                            while rp[r + 1] as usize <= p {
                                r += 1;
                            }
                        }
                        if starts {
                            *f |= 1 << j;
                            seg_rows.push((r - first_row) as Idx);
                        }
                    }
                }
                let flagged = seg_rows.len() != last_row - first_row + 1;
                let mut desc = vec![0u32; npacket * OMEGA];
                let mut y_off = 0usize;
                for i in 0..OMEGA {
                    // lanes from i to the first lane >= i with a flag (to 31 if none)
                    let next = (i..OMEGA).find(|&k| flags[k] != 0).unwrap_or(OMEGA - 1);
                    let seg = (next - i) as u64;
                    let word: u128 = (y_off as u128)
                        | ((seg as u128) << y_bits)
                        | ((flags[i] as u128) << (y_bits + SEG_BITS));
                    for p in 0..npacket {
                        desc[p * OMEGA + i] = (word >> (32 * p)) as u32;
                    }
                    y_off += flags[i].count_ones() as usize;
                }
                TileBuild {
                    desc,
                    seg_rows,
                    first_row,
                    flagged,
                }
            })
            .collect();
        let t2 = Instant::now();

        let mut tile_ptr = Vec::with_capacity(ntiles + 1);
        let mut tile_desc = Vec::with_capacity(ntiles * npacket * OMEGA);
        let mut empty_ptr = Vec::with_capacity(ntiles + 1);
        let mut empty_offset = Vec::new();
        for b in &builds {
            tile_ptr.push(b.first_row as Idx | if b.flagged { EMPTY_FLAG } else { 0 });
            tile_desc.extend_from_slice(&b.desc);
            empty_ptr.push(empty_offset.len() as Idx);
            if b.flagged {
                empty_offset.extend_from_slice(&b.seg_rows);
            }
        }
        empty_ptr.push(empty_offset.len() as Idx);
        let tail_row = if split < nnz {
            row_of(rp, split)
        } else {
            nrows
        };
        tile_ptr.push(tail_row as Idx);
        // last nonempty row + 1
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
                match run_row.last() {
                    Some(&lr)
                        if lr as usize == r && *run_end.last().unwrap_or(&0) as usize == slot =>
                    {
                        if let Some(e) = run_end.last_mut() {
                            *e += 1;
                        }
                    }
                    _ => {
                        run_row.push(r as Idx);
                        run_first.push(slot as Idx);
                        run_end.push(slot as Idx + 1);
                    }
                }
            }
        }
        let empty_rows: Vec<Idx> = (0..nrows)
            .into_par_iter()
            .filter(|&r| rp[r] == rp[r + 1])
            .map(|r| r as Idx)
            .collect();
        let t3 = Instant::now();
        Csr5Layout {
            sigma,
            ntiles,
            y_bits,
            npacket,
            row_ptr: rp.to_vec(),
            col_idx,
            vals,
            tile_ptr,
            tile_desc,
            empty_ptr,
            empty_offset,
            empty_rows,
            run_row,
            run_first,
            run_end,
            tail_end,
            stages: vec![
                ("transpose tiles", t1 - t0),
                ("tile descriptors", t2 - t1),
                ("tile_ptr, carries, empty rows", t3 - t2),
            ],
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
        let mut word: u128 = 0;
        for p in 0..self.npacket {
            word |= (self.tile_desc[(t * self.npacket + p) * OMEGA + i] as u128) << (32 * p);
        }
        let y = (word & ((1u128 << self.y_bits) - 1)) as usize;
        let s = ((word >> self.y_bits) & 31) as usize;
        let f = ((word >> (self.y_bits + SEG_BITS)) & ((1u128 << self.sigma) - 1)) as u32;
        (y, s, f)
    }
}

impl<T: Scalar> Layout<T> for Csr5Layout<T> {
    fn footprint_bytes(&self) -> usize {
        4 * (self.row_ptr.len()
            + self.col_idx.len()
            + self.tile_ptr.len()
            + self.tile_desc.len()
            + self.empty_ptr.len()
            + self.empty_offset.len()
            + self.empty_rows.len()
            + 3 * self.run_row.len())
            + T::BYTES * (self.vals.len() + self.ntiles + 1)
    }

    fn run_cpu(&self, alpha: T, x: &[T], beta: T, y: &mut [T]) -> Result<()> {
        cpu::run(self, alpha, x, beta, y);
        Ok(())
    }

    fn upload(&self, gpu: &std::sync::Arc<Gpu>) -> Result<Box<dyn DeviceLayout<T>>> {
        gpu::upload(self, gpu)
    }

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
        ]
    }
}

#[cfg(test)]
mod tests;
