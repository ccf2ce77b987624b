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
//! timing. By default (`fuse=two`) the prologue is its own launch, then the blocks. With
//! `fuse=one` all of it is a single launch: the first CTAs to take a ticket do the prologue, the
//! others wait on a counter before their first x load and atomic, and the last CTA resets the
//! counters (deadlock-free: a CTA only waits on CTAs that already hold a ticket and never wait
//! themselves). Measured on an H200 (f64, 2026-11-22): the waiting CTAs cost far more than the
//! second launch saves — 741 against 297 µs on poisson3d:160, 30.3 against 16.9 µs on copter2 —
//! hence `fuse=two`. With β = 1 and `permute_x=kernel` there is no prologue at all. `phase`
//! times one part alone (`prologue` or `blocks`; y is then not the product): the cost of the
//! honest timing, which the public code left out.
//!
//! Engineering of ours, not the paper's: a warp takes `blocks_per_warp` consecutive blocks in turn
//! and keeps its x values in registers while consecutive blocks share their columns; matrix loads
//! are streaming (`ld.cs`), per-block metadata is one 4-byte pointer, one 4-byte column and one
//! byte (length and format; the height is (blk_ptr[b+1] − blk_ptr[b]) / blk_length).
//!
//! Not deterministic: the order in which atomics land varies between runs. The CPU mirror walks
//! blocks in order with the kernel's summation trees.

mod build;
mod cpu;
mod gpu;

use std::time::Duration;

use crate::error::{Error, Result};
use crate::gpu::{Gpu, KernelSource};
use crate::matrix::Csr;
use crate::methods::csr_vector::check_threads;
use crate::methods::{DeviceLayout, GenericMethod, Layout, MethodInfo, ParamSpec, Params};
use crate::scalar::{Idx, Scalar};

/// The kernel source of this room.
pub const KERNEL: KernelSource = KernelSource {
    name: "fastload",
    source: include_str!("kernel.cu"),
};

const NAME: &str = "fastload";
const NAME_ATOMIC: &str = "fastload-atomic";

/// Block format: one atomicAdd per element.
pub const FMT_ATOMIC: u8 = 0;
/// Block format: every round is one row; warp reduction + one atomicAdd per round.
pub const FMT_ONE_ROW: u8 = 1;
/// Block format: segmented sum, one atomicAdd per run of equal rows.
pub const FMT_SEGMENT: u8 = 2;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        key: "height",
        default: "1",
        help: "block height limit: 1 (the paper's best, Table I), 2, 4, 8, 16, 32 (any positive integer) or unlimited",
    },
    ParamSpec {
        key: "warp",
        default: "32",
        help: "block length in columns (the warp, 1..=32; Fig. 6 uses 4); lanes beyond it idle",
    },
    ParamSpec {
        key: "permute_x",
        default: "gather",
        help: "gather: a prologue writes x_sorted[j'] = x[perm[j']] and blocks load it coalesced; kernel: blocks read x[perm[j']] directly",
    },
    ParamSpec {
        key: "fuse",
        default: "two",
        help: "two: a prologue kernel (β·y, x gather), then the block kernel; one: both in a single launch, block CTAs waiting on the prologue's counter (slower on an H200: 741 vs 297 µs on poisson3d:160)",
    },
    ParamSpec {
        key: "threads",
        default: "256",
        help: "threads per CTA (a multiple of 32, at most 1024); the paper used 64 (2 warps)",
    },
    ParamSpec {
        key: "blocks_per_warp",
        default: "4",
        help: "consecutive blocks a warp takes in turn, 1..=32 (1 = the paper's one block per warp)",
    },
    ParamSpec {
        key: "phase",
        default: "all",
        help: "all; or, to time one part alone (needs fuse=two; y is then NOT the product): prologue (β·y and the x gather the public code left out of its timing) or blocks (the kernel the public code timed)",
    },
];

/// How the kernel obtains x in sorted column order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PermuteX {
    /// A prologue gathers x_sorted once per call; blocks load it coalesced.
    Gather,
    /// Blocks load perm[j'] and x[perm[j']] themselves.
    Kernel,
}

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
    /// Prologue and blocks in one launch.
    pub fuse_one: bool,
    pub threads: u32,
    pub blocks_per_warp: u32,
    /// Which launches a call makes (all but `Phase::All` for timing studies only).
    pub phase: Phase,
}

/// The part of a call that runs: everything, or (timing studies) the prologue or the blocks alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    All,
    Prologue,
    Blocks,
}

impl Default for FastLoadOptions {
    fn default() -> Self {
        FastLoadOptions {
            height: 1,
            warp: 32,
            optimised: true,
            permute_x: PermuteX::Gather,
            fuse_one: false,
            threads: 256,
            blocks_per_warp: 4,
            phase: Phase::All,
        }
    }
}

impl FastLoadOptions {
    fn parse(method: &str, params: &Params) -> Result<Self> {
        params.check_known(method, PARAMS)?;
        let bad = |key: &str, msg: String| Error::Param {
            method: method.into(),
            key: key.into(),
            msg,
        };
        let h: String = params.get(method, PARAMS, "height")?;
        let height = if h == "unlimited" || h == "none" {
            u32::MAX
        } else {
            match h.parse::<u32>() {
                Ok(v) if v > 0 => v,
                _ => {
                    return Err(bad(
                        "height",
                        format!("'{h}' is not a positive integer or 'unlimited'"),
                    ))
                }
            }
        };
        let warp: u32 = params.get(method, PARAMS, "warp")?;
        if !(1..=32).contains(&warp) {
            return Err(bad("warp", format!("{warp} is not in 1..=32")));
        }
        let px: String = params.get(method, PARAMS, "permute_x")?;
        let permute_x = match px.as_str() {
            "gather" => PermuteX::Gather,
            "kernel" => PermuteX::Kernel,
            _ => return Err(bad("permute_x", format!("'{px}' is not gather or kernel"))),
        };
        let f: String = params.get(method, PARAMS, "fuse")?;
        let fuse_one = match f.as_str() {
            "one" => true,
            "two" => false,
            _ => return Err(bad("fuse", format!("'{f}' is not one or two"))),
        };
        let ph: String = params.get(method, PARAMS, "phase")?;
        let phase = match ph.as_str() {
            "all" => Phase::All,
            "prologue" => Phase::Prologue,
            "blocks" => Phase::Blocks,
            _ => {
                return Err(bad(
                    "phase",
                    format!("'{ph}' is not all, prologue or blocks"),
                ))
            }
        };
        if phase != Phase::All && fuse_one {
            return Err(bad(
                "phase",
                "timing one phase needs fuse=two (separate launches)".into(),
            ));
        }
        let threads: u32 = params.get(method, PARAMS, "threads")?;
        check_threads(method, threads)?;
        let blocks_per_warp: u32 = params.get(method, PARAMS, "blocks_per_warp")?;
        if !(1..=32).contains(&blocks_per_warp) {
            return Err(bad(
                "blocks_per_warp",
                format!("{blocks_per_warp} is not in 1..=32"),
            ));
        }
        Ok(FastLoadOptions {
            height,
            warp,
            optimised: method == NAME,
            permute_x,
            fuse_one,
            threads,
            blocks_per_warp,
            phase,
        })
    }
}

/// The registry entry of `fastload`.
pub struct FastLoad;

/// The registry entry of `fastload-atomic` (Fig. 9's non-optimised variant).
pub struct FastLoadAtomic;

impl GenericMethod for FastLoad {
    fn info(&self) -> MethodInfo {
        MethodInfo {
            name: NAME,
            summary: "GPU: columns sorted by nnz, warp-wide blocks with coalesced matrix and x loads; per-block atomic / reduction / segment-sum adds",
            source: "Hu et al., FastLoad, TPDS 2024, §IV (Alg. 2, Fig. 6)",
            deterministic: false,
            gpu: true,
            cpu: true,
            params: PARAMS,
        }
    }

    fn prepare<T: Scalar>(&self, csr: &Csr<T>, params: &Params) -> Result<Box<dyn Layout<T>>> {
        let o = FastLoadOptions::parse(NAME, params)?;
        Ok(Box::new(FastLoadLayout::build(csr, o)?))
    }
}

impl GenericMethod for FastLoadAtomic {
    fn info(&self) -> MethodInfo {
        MethodInfo {
            name: NAME_ATOMIC,
            summary: "GPU: FastLoad's layout with an atomicAdd per element (Fig. 9's non-optimised baseline)",
            source: "Hu et al., FastLoad, TPDS 2024, §V-E (Fig. 9)",
            deterministic: false,
            gpu: true,
            cpu: true,
            params: PARAMS,
        }
    }

    fn prepare<T: Scalar>(&self, csr: &Csr<T>, params: &Params) -> Result<Box<dyn Layout<T>>> {
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
    row_idx: Vec<Idx>,
    vals: Vec<T>,
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

    /// Device workspace beyond the layout: x_sorted (gather mode) and three counters.
    fn workspace_bytes(&self) -> usize {
        let xs = if self.opts.permute_x == PermuteX::Gather {
            T::BYTES * self.ncols
        } else {
            0
        };
        xs + 16
    }

    fn layout_bytes(&self) -> usize {
        4 * (self.perm.len() + self.blk_ptr.len() + self.blk_col_idx.len() + self.row_idx.len())
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
                "block formats atomic/one-row/segment".into(),
                format!("{}/{}/{}", fmt[0], fmt[1], fmt[2]),
            ),
            (
                "permute_x".into(),
                match self.opts.permute_x {
                    PermuteX::Gather => "gather (x_sorted written by the prologue each call)".into(),
                    PermuteX::Kernel => "kernel (blocks read x[perm[j']])".into(),
                },
            ),
            (
                "launches per call".into(),
                match (self.opts.fuse_one, self.opts.permute_x) {
                    (true, _) => "1".into(),
                    (false, PermuteX::Kernel) => "2 (1 when β = 1)".into(),
                    (false, PermuteX::Gather) => "2".into(),
                },
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
