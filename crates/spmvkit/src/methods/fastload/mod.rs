//! `fastload` and `fastload-atomic`: FastLoad (Hu et al., "FastLoad: Speeding up data loading of
//! both sparse matrix and vector for SpMV on GPUs", TPDS 2024, §IV, Alg. 2, Figs. 6 and 9).
//!
//! **Layout (§IV-B).** The matrix is taken to CSC, its columns are sorted by nnz ascending with a
//! stable sort (the public code's thrust radix sort; Fig. 6 starts from the column with the fewest
//! entries), and the sorted matrix is cut into blocks of `warp` consecutive sorted columns
//! (`blk_length` ≤ warp) and a variable height (`blk_height` rounds). With sorted heights
//! h₀ ≤ … ≤ h_{n−1} and distinct values H₀ < H₁ < …, *layer* k is the full rectangle of depths
//! [H_{k−1}, H_k) over every column with h ≥ H_k (columns [c_k, n)). Each layer is cut into chunks of
//! `warp` columns starting at c_k (the last one may be short), and each chunk into blocks of at
//! most `height` rounds. Block order: layer, chunk, depth. Inside a block, round r of lane ℓ is
//! stored at `blk_ptr + r·blk_length + ℓ` (Alg. 2 line 4: "blkPtr plus blkLength times the
//! iteration round"): row after row across the block, the *zigzag* of Fig. 6. Because blocks of one
//! chunk are consecutive and each is stored round-major, the order of `row_idx`/`value` does not
//! depend on the height limit — the limit only decides where blocks are cut (open question 6 of
//! the notes).
//!
//! **Fig. 6 (jgl009, warp = 4).** The sorted column heights are 2,4,5,5,6,6,6,8,8, so the layers
//! have thicknesses 2,2,1,1,2: block 0 = (blk_ptr 0, blk_col_idx 0, blk_height 2, blk_length 4),
//! blocks 1–2 end layer 0 (columns 4–7 and 8), blocks 3–4 are layer 1 (columns 1–8, ptr 18 and 26)
//! and block 5 = (34, 2, 1, 4) opens layer 2 — the paper's numbers. They hold for any height limit
//! ≥ 2 (no layer is thicker than 2); with the limit 1 of the paper's experiments (and of the
//! public code, whose tiles are always 1 high) layer 0 alone gives six blocks, block 0 is
//! (0, 0, 1, 4) and block 5 is (17, 8, 1, 1).
//!
//! **Adds (§IV-C).** Each block carries a format chosen in preprocessing (`blk_format`): 0 = an
//! atomicAdd per element — blocks shorter than the warp (the paper's and the code's rule), and, an
//! addition of ours, blocks in which no two neighbouring lanes of any round share a row, where a
//! segment sum would add nothing; 1 = every round is one row: a warp reduction and one atomicAdd
//! per round (the paper's "prefix sum"); 2 = otherwise: a segmented sum, one atomicAdd per run of
//! equal rows. The kernel finds run boundaries itself (one shuffle and one ballot on the row
//! indices it loads anyway) instead of reading the code's per-element `sortrowindex` (4 B per nnz).
//! `fastload-atomic` is the same layout with every block in format 0: Fig. 9's non-optimised
//! baseline.
//!
//! **A call** is y = β·y (zeros when β = 0, y unread), x_sorted[j'] = x[perm[j']] (with
//! `permute_x=gather`), then the blocks' atomics, all enqueued by `DeviceLayout::run`; the public
//! code did the permutation of x on the host in preprocessing and the zeroing of y outside its
//! timing. How they are launched (`fuse`):
//! - `two`: the prologue is its own launch, then the blocks (`fuse=auto` above
//!   [`GRID_MAX_NNZ`], and in a CUDA graph);
//! - `grid`: one cooperative launch of as many CTAs as fit the GPU; they do the prologue, meet
//!   at a grid barrier, then stride over the blocks. `fuse=auto` takes it up to
//!   [`GRID_MAX_NNZ`] nonzeros when launched on a stream, where a small matrix's call is mostly
//!   the host's launch overhead, and `two` when the stream is being captured into a graph, where
//!   launches are cheap and the barrier is not;
//! - `one`: a single ordinary launch whose first CTAs do the prologue while the others wait on a
//!   counter before their first x load and atomic (deadlock-free: a CTA only waits on CTAs that
//!   already hold a ticket and never wait themselves). The waiting warps cost far more than the
//!   launch saves, so no `auto` choice takes it.
//!
//! With β = 1 and `permute_x=kernel` there is no prologue at all. `permute_x=auto` reads
//! x[perm[j']] in the blocks when x and perm fit in [`KERNEL_X_MAX_BYTES`] or the stable sort
//! keeps most columns next to their neighbour (as in Poisson), and gathers x_sorted in the
//! prologue otherwise (random columns). `phase` times one part alone (`prologue` or `blocks`; y
//! is then not the product): the cost of the honest timing, which the public code left out.
//!
//! **Hub rows** (ours): the atomics of one row serialise on its address, so a row of several
//! hundred thousand nonzeros dominates the call. Rows of at least `hub` nonzeros get
//! `hub_slots` virtual rows (one 32-byte sector each); a second kernel adds the slots into the
//! row and zeroes them.
//!
//! Engineering of ours, not the paper's: a warp takes `blocks_per_warp` consecutive blocks in turn
//! and keeps its x values in registers while consecutive blocks share their columns; matrix loads
//! are streaming (`ld.cs`), per-block metadata is one 4-byte pointer, one 4-byte column and one
//! byte (length and format; the height is `(blk_ptr[b+1] − blk_ptr[b]) / blk_length`).
//! Software-pipelined loads of the next round and plain (`ld.nc`) loads were tried and not kept.
//!
//! The measurements behind these rules (the launch modes, `permute_x`, hub rows, the tried
//! loads, the one-launch cut): `docs/methods/fastload.md`.
//!
//! Not deterministic: the order in which atomics land varies between runs. The CPU mirror walks
//! blocks in order with the kernel's summation trees.

mod build;
mod cpu;
#[doc(hidden)]
pub mod dump;
mod gpu;

use std::time::Duration;

use crate::error::{Error, Result};
use crate::matrix::Csr;
use crate::methods::common::checks::THREADS;
use crate::methods::common::room::{forward, method, room_kernel};
use crate::methods::params::{keywords, params, AutoOr, Or};
use crate::methods::{Layout, ParamSpec, Params};
use crate::scalar::{Idx, Scalar};

room_kernel!(
    "fastload",
    [
        gpu::FastLoadArgs::params_entry("fastload_spmv"),
        gpu::FastLoadArgs::params_entry("fastload_spmv_grid"),
        gpu::HubCombineArgs::params_entry("fastload_hub_combine"),
    ]
);

const NAME: &str = "fastload";
const NAME_ATOMIC: &str = "fastload-atomic";

/// Block format: one atomicAdd per element.
pub const FMT_ATOMIC: u8 = 0;
/// Block format: every round is one row; warp reduction + one atomicAdd per round.
pub const FMT_ONE_ROW: u8 = 1;
/// Block format: segmented sum, one atomicAdd per run of equal rows.
pub const FMT_SEGMENT: u8 = 2;

params! {
    /// The parameters of `fastload` and `fastload-atomic`, as given (checked one by one;
    /// [`FastLoadOptions`] checks how they combine).
    struct FastLoadParams {
        /// block height limit: 1 (the paper's best, Table I), 2, 4, 8, 16, 32 (any positive
        /// integer) or unlimited
        height: Or<Unlimited, u32> = 1, in 1..;
        /// block length in columns (the warp, 1..=32; Fig. 6 uses 4); lanes beyond it idle
        warp: u32 = 32, in 1..=32;
        /// gather: a prologue writes x_sorted[j'] = x[perm[j']] and blocks load it coalesced;
        /// kernel: blocks read x[perm[j']] directly; auto: kernel when x and perm fit in 8 MiB or
        /// the sorted order keeps most columns in place, else gather
        permute_x: PermuteX = auto;
        /// two: a prologue kernel (β·y, x gather), then the block kernel; one: both in a single
        /// launch, block CTAs waiting on the prologue's counter (slower than two: the waiting costs
        /// more than the launch saves); grid: one cooperative launch of co-resident CTAs that meet
        /// at a grid barrier after the prologue; auto: grid on a stream up to 300k nonzeros, two
        /// above that and whenever the call is captured into a CUDA graph
        fuse: FuseMode = auto;
        /// threads per CTA (a multiple of 32, at most 1024); the paper used 64 (2 warps)
        threads: u32 = 256, in THREADS;
        /// consecutive blocks a warp takes in turn, 1..=32 (1 = the paper's one block per warp);
        /// auto: 4, or fewer when the blocks would not fill the GPU several times over
        blocks_per_warp: AutoOr<u32> = auto, in 1..=32;
        /// rows with at least this many nonzeros are hub rows, whose adds are spread over
        /// `hub_slots` accumulators and summed by a second kernel (their atomics would otherwise
        /// serialise on one address); off: none
        hub: Or<HubOff, u32> = 4096, in 2..;
        /// accumulators per hub row (1..=4096), each in its own 32-byte sector
        hub_slots: u32 = 256, in 1..=4096;
        /// all; or, to time one part alone (needs fuse=two or auto, which it then makes two; y is
        /// then NOT the product): prologue (β·y and the x gather the public code left out of its
        /// timing) or blocks (the kernel the public code timed)
        phase: Phase = all;

    }
}

const PARAMS: &[ParamSpec] = FastLoadParams::SPECS;

keywords! {
    /// The word of `height=unlimited`.
    enum Unlimited {
        Unlimited = "unlimited" | "none",
    }
}

keywords! {
    /// The word of `hub=off`.
    enum HubOff {
        Off = "off" | "0",
    }
}

keywords! {
    /// The values of `fuse` ([`Fuse`] without the derived `StreamGrid`).
    enum FuseMode {
        Two = "two",
        One = "one",
        Grid = "grid",
        Auto = "auto",
    }
}

keywords! {
    /// How the kernel obtains x in sorted column order.
    pub enum PermuteX {
        /// A prologue gathers x_sorted once per call; blocks load it coalesced.
        Gather = "gather",
        /// Blocks load perm[j'] and x[perm[j']] themselves.
        Kernel = "kernel",
        /// Chosen by the builder (kernel when x fits or the sort keeps columns in place).
        Auto = "auto",
    }
}

/// How a call's prologue and blocks are launched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fuse {
    /// A prologue launch, then the block launch.
    Two,
    /// One launch; block CTAs wait on the prologue CTAs' counter.
    One,
    /// One cooperative launch of co-resident CTAs with a grid barrier after the prologue.
    Grid,
    /// `Grid` when launched on a stream, `Two` when captured into a CUDA graph (what `Auto`
    /// becomes up to [`GRID_MAX_NNZ`] nonzeros).
    StreamGrid,
    /// Chosen by the builder from the size: `StreamGrid` up to [`GRID_MAX_NNZ`], else `Two`.
    Auto,
}

/// `fuse=auto` takes the one-launch grid mode on a stream up to this many nonzeros (tuning
/// data: the cut with the best stream geomean over cuSPARSE on the tuning split of the committed
/// run that timed both launch modes on every matrix; its figure on the test split is in
/// `docs/results/tuning-split.md`; measurements: `docs/methods/fastload.md`).
pub const GRID_MAX_NNZ: usize = 300_000;
/// `permute_x=auto` reads x through perm in the kernel when x and perm take at most this many
/// bytes (tuning data), or when the column sort keeps at least half of the columns next to their
/// neighbour.
pub const KERNEL_X_MAX_BYTES: usize = 8 << 20;

/// Options of a FastLoad layout (parsed parameters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FastLoadOptions {
    /// Block height limit (`u32::MAX` = unlimited).
    pub height: u32,
    /// Block length (the warp width, 1..=32).
    pub warp: u32,
    /// Whether the adds are optimised per block (false: `fastload-atomic`).
    pub optimised: bool,
    pub permute_x: PermuteX,
    /// How prologue and blocks are launched.
    pub fuse: Fuse,
    pub threads: u32,
    /// Blocks per warp; 0 = auto (chosen at upload from the block count and the GPU).
    pub blocks_per_warp: u32,
    /// Rows with at least this many nonzeros are split into `hub_slots` virtual rows (0 = off).
    pub hub: u32,
    pub hub_slots: u32,
    /// Which launches a call makes (all but `Phase::All` for timing studies only).
    pub phase: Phase,
}

keywords! {
    /// The part of a call that runs: everything, or (timing studies) the prologue or the blocks
    /// alone.
    pub enum Phase {
        All = "all",
        Prologue = "prologue",
        Blocks = "blocks",
    }
}

impl Default for FastLoadOptions {
    /// The declared defaults of `fastload`.
    fn default() -> Self {
        FastLoadOptions::parse(NAME, &Params::new())
            .unwrap_or_else(|e| panic!("the declared defaults: {e}"))
    }
}

impl FastLoadOptions {
    fn parse(method: &str, params: &Params) -> Result<Self> {
        let p = FastLoadParams::from_params(method, params)?;
        let fuse = match (p.phase, p.fuse) {
            (Phase::All, FuseMode::Two) => Fuse::Two,
            (Phase::All, FuseMode::One) => Fuse::One,
            (Phase::All, FuseMode::Grid) => Fuse::Grid,
            (Phase::All, FuseMode::Auto) => Fuse::Auto,
            (_, FuseMode::Two | FuseMode::Auto) => Fuse::Two,
            _ => {
                return Err(Error::Param {
                    method: method.into(),
                    key: "phase".into(),
                    msg: "timing one phase needs fuse=two (separate launches)".into(),
                })
            }
        };
        Ok(FastLoadOptions {
            height: p.height.value().unwrap_or(u32::MAX),
            warp: p.warp,
            optimised: method == NAME,
            permute_x: p.permute_x,
            fuse,
            threads: p.threads,
            blocks_per_warp: p.blocks_per_warp.value().unwrap_or(0),
            hub: p.hub.value().unwrap_or(0),
            hub_slots: p.hub_slots,
            phase: p.phase,
        })
    }
}

method! {
    /// The registry entry of `fastload`.
    pub struct FastLoad {
        name: NAME,
        summary: "GPU: columns sorted by nnz, warp-wide blocks with coalesced matrix and x loads; per-block atomic / reduction / segment-sum adds",
        source: "Hu et al., FastLoad, TPDS 2024, §IV (Alg. 2, Fig. 6)",
        deterministic: false,
        params: PARAMS,
    }
    fn prepare(csr, params) {
        let o = FastLoadOptions::parse(NAME, params)?;
        Ok(Box::new(FastLoadLayout::build(csr, o)?))
    }
}

method! {
    /// The registry entry of `fastload-atomic` (Fig. 9's non-optimised variant).
    pub struct FastLoadAtomic {
        name: NAME_ATOMIC,
        summary: "GPU: FastLoad's layout with an atomicAdd per element (Fig. 9's non-optimised baseline)",
        source: "Hu et al., FastLoad, TPDS 2024, §V-E (Fig. 9)",
        deterministic: false,
        params: PARAMS,
    }
    fn prepare(csr, params) {
        let o = FastLoadOptions::parse(NAME_ATOMIC, params)?;
        Ok(Box::new(FastLoadLayout::build(csr, o)?))
    }
}

/// The FastLoad layout: sorted-column blocks and the zigzag element order.
pub struct FastLoadLayout<T> {
    nrows: usize,
    ncols: usize,
    opts: FastLoadOptions,
    /// perm[j'] = original column of sorted column j'.
    perm: Vec<Idx>,
    /// Start of each block in `row_idx`/`vals`, plus the end (nblocks + 1 entries).
    blk_ptr: Vec<Idx>,
    /// First sorted column of each block.
    blk_col_idx: Vec<Idx>,
    /// Per block: length (bits 0–5, 1..=32) and format (bits 6–7).
    blk_info: Vec<u8>,
    /// Row of each element; hub rows' elements carry virtual rows nrows + i·hub_slots + s.
    row_idx: Vec<Idx>,
    vals: Vec<T>,
    /// The original row of each hub (rows split into `hub_slots` virtual rows).
    hub_rows: Vec<Idx>,
    stages: Vec<(&'static str, Duration)>,
    nlayers: usize,
    csr_bytes: usize,
}

impl<T: Scalar> FastLoadLayout<T> {
    /// Builds the layout (§IV-B).
    pub fn build(csr: &Csr<T>, opts: FastLoadOptions) -> Result<Self> {
        build::build(csr, opts)
    }

    pub fn options(&self) -> FastLoadOptions {
        self.opts
    }
    pub fn nblocks(&self) -> usize {
        self.blk_col_idx.len()
    }
    pub fn perm(&self) -> &[Idx] {
        &self.perm
    }
    /// blkPtr: start of each block (nblocks + 1 entries; the last is nnz).
    pub fn blk_ptr(&self) -> &[Idx] {
        &self.blk_ptr
    }
    /// blkColIdx: first sorted column of each block.
    pub fn blk_col_idx(&self) -> &[Idx] {
        &self.blk_col_idx
    }
    /// blkLength of block b.
    pub fn blk_length(&self, b: usize) -> u32 {
        (self.blk_info[b] & 63) as u32
    }
    /// blkHeight of block b (rounds).
    pub fn blk_height(&self, b: usize) -> u32 {
        (self.blk_ptr[b + 1] - self.blk_ptr[b]) / self.blk_length(b)
    }
    /// The add format of block b (`FMT_*`).
    pub fn blk_format(&self, b: usize) -> u8 {
        self.blk_info[b] >> 6
    }
    /// Row indices in zigzag order.
    pub fn row_idx(&self) -> &[Idx] {
        &self.row_idx
    }
    /// Values in zigzag order.
    pub fn vals(&self) -> &[T] {
        &self.vals
    }
    /// Hub rows: row i of this list owns the virtual rows nrows + i·hub_slots + (0..hub_slots).
    pub fn hub_rows(&self) -> &[Idx] {
        &self.hub_rows
    }
    /// Hub accumulators on the device: one per 32-byte sector.
    fn hub_bytes(&self) -> usize {
        self.hub_rows.len() * self.opts.hub_slots as usize * 32
    }

    /// Device workspace beyond the layout: x_sorted (gather mode) and three counters.
    fn workspace_bytes(&self) -> usize {
        let xs = if self.opts.permute_x == PermuteX::Gather {
            T::BYTES * self.ncols
        } else {
            0
        };
        xs + 16 + self.hub_bytes()
    }

    fn layout_bytes(&self) -> usize {
        4 * (self.perm.len()
            + self.blk_ptr.len()
            + self.blk_col_idx.len()
            + self.row_idx.len()
            + self.hub_rows.len())
            + self.blk_info.len()
            + T::BYTES * self.vals.len()
    }
}

impl<T: Scalar> Layout<T> for FastLoadLayout<T> {
    fn values_mut(&mut self) -> Option<&mut [T]> {
        Some(&mut self.vals)
    }
    fn footprint_bytes(&self) -> usize {
        self.layout_bytes() + self.workspace_bytes()
    }

    forward! { run_cpu, upload }

    fn prep_stages(&self) -> Vec<(&'static str, Duration)> {
        self.stages.clone()
    }

    fn notes(&self) -> Vec<(String, String)> {
        let nb = self.nblocks();
        let mut fmt = [0usize; 3];
        for &i in &self.blk_info {
            fmt[((i >> 6) as usize).min(2)] += 1;
        }
        let height = if self.opts.height == u32::MAX {
            "unlimited".to_string()
        } else {
            self.opts.height.to_string()
        };
        let fp = self.footprint_bytes();
        vec![
            ("height limit".into(), height),
            ("block length (warp)".into(), self.opts.warp.to_string()),
            ("blocks".into(), nb.to_string()),
            ("layers (distinct column heights)".into(), self.nlayers.to_string()),
            (
                "hub rows".into(),
                if self.opts.hub == 0 {
                    "off".into()
                } else {
                    format!(
                        "{} (rows of ≥ {} nonzeros, each added into {} slots, then combined)",
                        self.hub_rows.len(),
                        self.opts.hub,
                        self.opts.hub_slots
                    )
                },
            ),
            (
                "block formats atomic/one-row/segment".into(),
                format!("{}/{}/{}", fmt[0], fmt[1], fmt[2]),
            ),
            (
                "permute_x".into(),
                match self.opts.permute_x {
                    PermuteX::Gather => "gather (x_sorted written by the prologue each call)".into(),
                    _ => "kernel (blocks read x[perm[j']])".into(),
                },
            ),
            (
                "launches per call".into(),
                format!(
                    "{}{}",
                    match (self.opts.fuse, self.opts.permute_x) {
                        (Fuse::One, _) => "1",
                        (Fuse::Grid, _) => "1 (cooperative, grid barrier after the prologue)",
                        (Fuse::StreamGrid, _) => "1 on a stream (cooperative, grid barrier after the prologue), 2 when captured into a CUDA graph",
                        (_, PermuteX::Gather) => "2",
                        _ => "2 (1 when β = 1)",
                    },
                    if self.hub_rows.is_empty() {
                        ""
                    } else {
                        ", + 1 to combine the hub rows"
                    }
                ),
            ),
            (
                "phase".into(),
                match self.opts.phase {
                    Phase::All => "all".into(),
                    Phase::Prologue => "prologue only (timing study: y is not the product)".into(),
                    Phase::Blocks => "blocks only (timing study: y is not the product)".into(),
                },
            ),
            (
                "timed call includes".into(),
                "y = β·y (or zeroing), the x permutation, the blocks; the public code timed only the block kernel (x permuted on the host in preprocessing, y zeroed outside)".into(),
            ),
            (
                "peak device footprint / CSR bytes (§V-G)".into(),
                if self.csr_bytes > 0 {
                    format!("{:.3} ({} / {} bytes)", fp as f64 / self.csr_bytes as f64, fp, self.csr_bytes)
                } else {
                    "n/a".into()
                },
            ),
        ]
    }
}

#[cfg(test)]
mod tests;
