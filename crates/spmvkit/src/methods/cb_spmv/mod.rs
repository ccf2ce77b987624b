//! `cb-spmv`: CB-SpMV after Cong et al., "CB-SpMV: A Data Aggregating and Balance Algorithm for
//! Cache-Friendly Block-Based SpMV on GPUs" (ICS'25): §3.1 2D blocking into 16×16 sub-blocks,
//! §3.2 "virtual pointer" aggregation of each sub-block's data, §3.3 block-aware column
//! aggregation and per-block format selection (COO / CSR / dense), §3.4 inter-block LPT load
//! balancing. The rules follow the authors' public code (`xing-cong/CB-Sparse`,
//! shared/notes/methods.md §1), with its defects fixed:
//!
//! - block keys are 64-bit (`br·gn + bc` in u64; the code's `int` keys overflow), and blocks are
//!   built by parallel per-panel sorts, not a hash map;
//! - every non-empty sub-block is one contiguous byte region (u8 nibble-packed indices, padding
//!   to 8 bytes, then values), and ALL regions live in ONE arena addressed by 64-bit offsets (the
//!   code makes one `cudaMalloc` per sub-block);
//! - dense blocks are computed in full precision (the code converts to FP16 for WMMA);
//! - x is read through the column mapping with `bc·16` added in every format (the code's
//!   gathered dense path forgets it), and the staging of x is followed by `__syncwarp`;
//! - y is scaled by β (or zeroed) inside the timed call. Default (`prologue=kernel`): a small
//!   grid-stride scaling launch, then the main launch. `prologue=fused` does it in the one
//!   launch: every 16-row panel's first-arriving block (a per-panel ticket) writes
//!   `y = α·s + β·y` for all 16 rows with plain stores and raises a ready flag; the panel's
//!   later blocks wait for the flag (only ever for a warp that is already running, so no
//!   deadlock), then add with atomics; the last one resets ticket and flag for the next call.
//!   Panels with a single block need no atomic at all; empty panels get a zero-nnz "scaler"
//!   block. The ticket round trips cost more than the second launch, hence not the default.
//!   `prologue=grid`: one cooperative launch of the CTAs that fit the GPU at once; they scale y,
//!   meet at a grid barrier, then take the slot groups in turn. The default (`auto`) takes it
//!   up to [`GRID_MAX_NNZ`] nonzeros when launched on a stream, where small matrices pay one
//!   launch's host overhead instead of two, and `kernel` when captured into a CUDA graph, where
//!   the barrier costs more than the launch.
//! - `accumulate=run` (the default, ours; needs `prologue=kernel`): a warp takes `bpw`
//!   CONSECUTIVE slots and sums the row sums of consecutive blocks of one panel in registers,
//!   adding to y once per run. On matrices whose blocks are diagonal lines (stencils, scattered
//!   columns) the paper's block-wise epilogue (`accumulate=block`) issues about one fp64 atomic
//!   per nonzero and is bound by the GPU's atomic rate; `run` is faster there and equal or
//!   faster on small matrices. Balancing scatters a panel's blocks, so under `run`,
//!   `balance=auto` means off. The paper's configuration is `cb-spmv[accumulate=block]`,
//!   benchmarked as such (Fig. 11 ablation).
//! - The run kernels (`cb_spmv_run*`, `accumulate=run` with aggregated regions, the default) do
//!   the same blocks, formats and row sums with less work per block, because the general
//!   kernel was issue-bound (ncu): each slot's metadata carries the block's first x column
//!   (`xcol`, `gptr[br]` folded in), so a gathered x costs two dependent loads instead of three;
//!   COO products go straight into the warp's per-run shared row accumulator and CSR/dense row
//!   sums into a register, one atomic per row when the warp leaves the panel; two consecutive
//!   COO blocks of one panel with at most 32 entries together share one warp pass; and
//!   `min_ctas` builds them for 8 CTAs per SM on large matrices.
//! - `epilogue=owner` (ours): the run kernel is the call's one launch, with no scaling pass. A
//!   warp whose run holds a whole panel writes `y = α·t + β·y`; a panel split over several runs
//!   adds each run's sums into a workspace row, and the run that completes the panel's count
//!   (`nparts`, found on the host) writes y and clears the row, so nothing waits. `auto` uses it
//!   on a stream up to [`GRID_MAX_NNZ`] nonzeros, in place of the grid prologue, and the atomic
//!   epilogue in CUDA graphs and above that size, where split runs and their fences cost more
//!   than the scaling pass.
//!
//! The measurements behind these rules (the prologue modes, `run` against `block`, the run
//! kernels, `min_ctas`, the owner epilogue and its cut): `docs/methods/cb-spmv.md`.
//!
//! Atomics make the summation order, and so the last bits of y, vary between runs: not
//! deterministic.

mod cpu;
mod gpu;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::matrix::Csr;
use crate::methods::common::room::{forward, method, room_kernel};
use crate::methods::params::{keywords, params, AutoOr, OnOff, Switch};
use crate::methods::{Layout, ParamSpec, Params};
use crate::scalar::Scalar;

room_kernel!(
    "cb-spmv",
    gpu::CbArgs params: [
        "cb_spmv",
        "cb_spmv_grid",
        "cb_spmv_run",
        "cb_spmv_run_grid",
        "cb_spmv_run_o8",
        "cb_spmv_run_grid_o8",
    ]
);

const NAME: &str = "cb-spmv";

/// Sub-block edge (rows and columns).
pub(crate) const BS: usize = 16;
/// Warps (= block slots) per CTA.
pub(crate) const WARPS: usize = 8;
/// Row of a padding slot in the metadata (the kernel skips it).
pub(crate) const DUMMY_ROW: u32 = u32::MAX;

params! {
    /// The parameters of `cb-spmv`, as given (checked one by one; [`config`] checks how they
    /// combine).
    struct CbSpmvParams {
        /// blocks with at most this many nonzeros are COO (public code: nnz < 33)
        coo_max: usize = 32, in 0..=BS * BS;
        /// blocks with at least this many nonzeros (of 256) are dense; 257 = never
        dense_min: usize = 240, in 1..=BS * BS + 1;
        /// per-block format selection; off = every block COO (ablation)
        format: OnOff = on;
        /// block-aware column aggregation: auto (when > gather_frac of blocks have <= gather_small
        /// nnz), on, off
        gather: Switch = auto;
        /// fraction of small blocks above which gather=auto aggregates columns
        gather_frac: f64 = 0.15, in 0.0..=1.0;
        /// a block with at most this many nonzeros counts as small for gather=auto
        gather_small: usize = 8;
        /// LPT inter-block balancing over CTAs of 8 slots: auto (nnz >= balance_min_nnz), on, off
        balance: Switch = auto;
        /// the nnz threshold of balance=auto: LPT balancing runs only on matrices with at least
        /// this many nonzeros (with accumulate=block; under accumulate=run balance=auto is off)
        balance_min_nnz: usize = 10000;
        /// sub-blocks per warp (1 = the paper: a CTA of 8 warps takes 8 blocks; k: 8k blocks, each
        /// warp loops over k with the next metadata prefetched); auto: the largest of 1, 2, 4, 8
        /// that keeps >= 32768 warps
        bpw: AutoOr<usize> = auto, in 1..=64;
        /// virtual-pointer aggregation (indices and values of a block in one region); off = indices
        /// and values in two arenas (ablation)
        aggregate: OnOff = on;
        /// how y is scaled by beta before the atomics: kernel (a separate launch), grid (one
        /// cooperative launch: co-resident CTAs scale y, meet at a grid barrier, then take the
        /// blocks), fused (per-panel first arriver, one launch; needs accumulate=block), or auto
        /// (grid on a stream up to 150k nonzeros, else kernel)
        prologue: Prologue = auto;
        /// accumulate=run kernels: 8 = built for 8 CTAs (64 warps) per SM, at most 32 registers (a
        /// few spilled in f64); regs = the compiler's register count (40 in f64: 6 CTAs per SM);
        /// auto = 8 when the warps take 8 blocks each (bpw=auto at >= 262144 blocks), else regs
        min_ctas: MinCtas = auto;
        /// how the run kernels write y: owner (one launch, no scaling pass: a warp holding all of a
        /// panel's blocks writes y = alpha*t + beta*y, runs of a panel split over warps add into a
        /// workspace and the last to finish writes y; needs accumulate=run, aggregate=on), atomic
        /// (y scaled first by the prologue, then atomics), or auto (owner on a stream up to 150k
        /// nonzeros, where it replaces the grid prologue, else atomic)
        epilogue: Epilogue = auto;
        /// run (ours, default: a warp takes bpw consecutive blocks and adds once per run of one
        /// panel; needs prologue=kernel; balance=auto means off) or block (the paper: each block
        /// adds its 16 row sums to y; with it balance=auto balances)
        accumulate: Accumulate = run;

    }
}

const PARAMS: &[ParamSpec] = CbSpmvParams::SPECS;

keywords! {
    /// `prologue`: how y is scaled by beta before the atomics.
    enum Prologue {
        Kernel = "kernel",
        Grid = "grid",
        Fused = "fused",
        Auto = "auto",
    }
}

keywords! {
    /// `min_ctas`: the occupancy the run kernels are built for.
    enum MinCtas {
        Auto = "auto",
        Eight = "8",
        Regs = "regs",
    }
}

keywords! {
    /// `epilogue`: how the run kernels write y.
    enum Epilogue {
        Auto = "auto",
        Owner = "owner",
        Atomic = "atomic",
    }
}

keywords! {
    /// `accumulate`: one add per block (the paper) or per run of one panel's blocks.
    enum Accumulate {
        Block = "block",
        Run = "run",
    }
}

/// Storage format of one sub-block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Coo,
    Csr,
    Dense,
}

/// `epilogue=auto` takes the owner epilogue, and `prologue=auto` the one-launch grid mode, on a
/// stream up to this many nonzeros (tuning data: the cut with the best stream geomean over
/// cuSPARSE on the tuning split of the committed runs that timed both epilogues on every
/// matrix; its figure on the test split is in `docs/results/tuning-split.md`; measurements:
/// `docs/methods/cb-spmv.md`).
pub const GRID_MAX_NNZ: usize = 150_000;

/// The tuning data of one build.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Config {
    pub(crate) coo_max: usize,
    pub(crate) dense_min: usize,
    gather: Switch,
    gather_frac: f64,
    gather_small: usize,
    balance: Switch,
    balance_min_nnz: usize,
    pub(crate) aggregate: bool,
    pub(crate) fused: bool,
    /// prologue=grid (Some(true)), kernel or fused (Some(false)), auto (None: by size).
    grid: Option<bool>,
    /// accumulate=run: warp-major slots, one add per run of one panel's blocks.
    pub(crate) run: bool,
    /// Blocks per warp; None = auto.
    bpw: Option<usize>,
    /// accumulate=run: the kernel built for 8 CTAs per SM (at most 32 registers); None = auto.
    pub(crate) occupancy8: Option<bool>,
    /// epilogue: Some(true) owner, Some(false) atomic, None auto (owner on a stream up to
    /// [`GRID_MAX_NNZ`] nonzeros with the run kernels).
    pub(crate) owner: Option<bool>,
}

impl Config {
    /// Whether a call may be one cooperative grid launch (`prologue=grid`, or auto on a matrix
    /// of at most [`GRID_MAX_NNZ`] nonzeros).
    pub(crate) fn grid(&self, nnz: usize) -> bool {
        self.grid.unwrap_or(nnz <= GRID_MAX_NNZ)
    }

    /// Whether the grid launch is for stream launches only (auto), two launches being better
    /// when the call is captured into a CUDA graph.
    pub(crate) fn grid_on_stream_only(&self) -> bool {
        self.grid.is_none()
    }

    /// Whether the layout carries the owner epilogue's split panels (epilogue=owner, or auto up
    /// to [`GRID_MAX_NNZ`] nonzeros).
    pub(crate) fn owner_layout(&self, nnz: usize) -> bool {
        self.owner.unwrap_or(nnz <= GRID_MAX_NNZ)
    }

    /// The format of a block with `nnz` nonzeros.
    pub(crate) fn format(&self, nnz: usize) -> Format {
        format_of(nnz, self.coo_max, self.dense_min)
    }
}

/// The format rule (the kernel applies the same one to the nnz in the metadata).
pub(crate) fn format_of(nnz: usize, coo_max: usize, dense_min: usize) -> Format {
    if nnz <= coo_max {
        Format::Coo
    } else if nnz >= dense_min {
        Format::Dense
    } else {
        Format::Csr
    }
}

fn param_err(key: &str, msg: String) -> Error {
    Error::Param {
        method: NAME.into(),
        key: key.into(),
        msg,
    }
}

/// The build configuration from user parameters.
fn config(params: &Params) -> Result<Config> {
    let p = CbSpmvParams::from_params(NAME, params)?;
    if p.dense_min <= p.coo_max {
        return Err(param_err(
            "dense_min",
            format!("{} must be above coo_max ({})", p.dense_min, p.coo_max),
        ));
    }
    let (coo_max, dense_min) = if p.format.is_on() {
        (p.coo_max, p.dense_min)
    } else {
        (BS * BS, BS * BS + 1)
    };
    let (fused, grid) = match p.prologue {
        Prologue::Fused => (true, Some(false)),
        Prologue::Kernel => (false, Some(false)),
        Prologue::Grid => (false, Some(true)),
        Prologue::Auto => (false, None),
    };
    let run = p.accumulate == Accumulate::Run;
    if run && fused {
        return Err(param_err(
            "accumulate",
            "accumulate=run needs prologue=kernel, grid or auto".into(),
        ));
    }
    let aggregate = p.aggregate.is_on();
    let owner = match p.epilogue {
        Epilogue::Auto if run && aggregate => None,
        Epilogue::Auto | Epilogue::Atomic => Some(false),
        Epilogue::Owner if run && aggregate => Some(true),
        Epilogue::Owner => {
            return Err(param_err(
                "epilogue",
                "epilogue=owner needs accumulate=run and aggregate=on".into(),
            ))
        }
    };
    let balance = match p.balance {
        Switch::Auto if run => Switch::Off,
        b => b,
    };
    Ok(Config {
        run,
        bpw: p.bpw.value(),
        occupancy8: match p.min_ctas {
            MinCtas::Auto => None,
            MinCtas::Eight => Some(true),
            MinCtas::Regs => Some(false),
        },
        owner,
        coo_max,
        dense_min,
        gather: p.gather,
        gather_frac: p.gather_frac,
        gather_small: p.gather_small,
        balance,
        balance_min_nnz: p.balance_min_nnz,
        aggregate,
        fused,
        grid,
    })
}

method! {
    /// The registry entry of `cb-spmv`.
    pub struct CbSpmv {
        name: NAME,
        summary: "GPU: 16x16 sub-blocks (COO/CSR/dense) in one byte arena, column aggregation, LPT balancing, warp per block, atomics",
        source: "Cong et al., CB-SpMV, ICS'25, §3 (code xing-cong/CB-Sparse, defects fixed)",
        deterministic: false,
        params: PARAMS,
    }
    fn prepare(csr, params) {
        let cfg = config(params)?;
        Ok(Box::new(CbLayout::build(csr, cfg)?))
    }
}

/// Round up to a multiple of 8 bytes.
pub(crate) fn pad8(b: usize) -> usize {
    (b + 7) & !7
}

/// Index bytes of a block region: COO one u8 (row<<4|col) per nonzero; CSR a 17-entry u8 row
/// pointer plus one u8 column per nonzero; dense none.
pub(crate) fn index_bytes(f: Format, nnz: usize) -> usize {
    match f {
        Format::Coo => nnz,
        Format::Csr => BS + 1 + nnz,
        Format::Dense => 0,
    }
}

/// Values stored by a block region.
pub(crate) fn value_count(f: Format, nnz: usize) -> usize {
    match f {
        Format::Dense => BS * BS,
        _ => nnz,
    }
}

/// One 16-row panel tiled into sub-blocks: its entries sorted by (block column, row, column),
/// with the block boundaries.
struct PanelTiles<T> {
    /// Block column of each block (a compressed block column when gathered).
    bcs: Vec<u32>,
    /// Start of each block in `ent`/`vals` (one more entry than blocks).
    starts: Vec<u32>,
    /// Local (row << 4 | column) of each entry.
    ent: Vec<u8>,
    vals: Vec<T>,
}

/// Tiles panel `p`; with `gcols` (the panel's sorted distinct columns) each column is replaced
/// by its rank first. Sort key: block column << 8 | row << 4 | column in 64 bits.
fn tile_panel<T: Scalar>(a: &Csr<T>, p: usize, gcols: Option<&[u32]>) -> PanelTiles<T> {
    let r0 = p * BS;
    let r1 = (r0 + BS).min(a.nrows());
    let rp = a.row_ptr();
    let n = (rp[r1] - rp[r0]) as usize;
    let mut keyed: Vec<(u64, T)> = Vec::with_capacity(n);
    for r in r0..r1 {
        let (cols, vals) = a.row(r);
        for (&c, &v) in cols.iter().zip(vals) {
            let cc = match gcols {
                Some(g) => g.binary_search(&c).unwrap_or_default() as u64,
                None => c as u64,
            };
            let key = ((cc >> 4) << 8) | (((r - r0) as u64) << 4) | (cc & 15);
            keyed.push((key, v));
        }
    }
    keyed.sort_by_key(|e| e.0);
    let mut t = PanelTiles {
        bcs: Vec::new(),
        starts: Vec::new(),
        ent: Vec::with_capacity(n),
        vals: Vec::with_capacity(n),
    };
    for (i, &(k, v)) in keyed.iter().enumerate() {
        let bc = (k >> 8) as u32;
        if t.bcs.last() != Some(&bc) || t.starts.is_empty() {
            t.bcs.push(bc);
            t.starts.push(i as u32);
        }
        t.ent.push((k & 0xff) as u8);
        t.vals.push(v);
    }
    t.starts.push(n as u32);
    t
}

/// The layout of `cb-spmv`.
pub struct CbLayout<T> {
    pub(crate) nrows: usize,
    pub(crate) ncols: usize,
    nnz: usize,
    pub(crate) cfg: Config,
    /// All block regions (aggregated: indices, padding, values; split: indices only).
    pub(crate) arena: Vec<u8>,
    /// Values when `aggregate=off`, with each slot's start in `voff`.
    pub(crate) split_vals: Vec<T>,
    pub(crate) voff: Vec<u64>,
    /// Two words per slot: `offset << 10 | single << 9 | nnz` (single: the block is its
    /// panel's only one) and `block_row << 32 | xcol`, xcol the block's first x column
    /// (`bc·16`, or `gptr[br] + bc·16` into `gcols` when gathered); padding slots have
    /// block_row = DUMMY_ROW. Slot `t·8·bpw + j·8 + w` (accumulate=run: `t·8·bpw + w·bpw + j`) is warp
    /// w's j-th block in CTA t.
    pub(crate) meta: Vec<u64>,
    /// Blocks per warp.
    pub(crate) bpw: usize,
    /// Blocks per panel (at least 1: empty panels get a zero-nnz scaler block).
    pub(crate) panel_nb: Vec<u32>,
    /// epilogue=owner: per panel, its workspace row when its blocks fall into several runs
    /// (u32::MAX when one warp's run holds them all), and per workspace row the number of runs.
    pub(crate) split_of: Vec<u32>,
    pub(crate) nparts: Vec<u32>,
    /// Whether columns are aggregated, and the mapping: panel p's compressed column k is the
    /// global column `gcols[gptr[p] + k]` (gptr is folded into each slot's xcol).
    pub(crate) gathered: bool,
    pub(crate) gcols: Vec<u32>,
    // facts for notes()
    nblocks: usize,
    nscalers: usize,
    format_counts: [usize; 3],
    small_frac: f64,
    balanced: bool,
    std_before: f64,
    std_after: f64,
    stages: Vec<(&'static str, Duration)>,
}

/// Population standard deviation.
fn std_dev(loads: &[u64]) -> f64 {
    if loads.is_empty() {
        return 0.0;
    }
    let n = loads.len() as f64;
    let mean = loads.iter().map(|&l| l as f64).sum::<f64>() / n;
    (loads
        .iter()
        .map(|&l| (l as f64 - mean).powi(2))
        .sum::<f64>()
        / n)
        .sqrt()
}

/// LPT greedy assignment (public code's `coo2block_banlance`): blocks by weight descending
/// (ties by index), each to the currently lightest CTA (min-heap on (load, CTA)) that still has
/// a free slot among its `per_cta` (8 in the paper). Returns the slot table (CTA-major, `None` =
/// padding) and the per-CTA loads.
pub(crate) fn lpt_assign(weights: &[u64], per_cta: usize) -> (Vec<Option<usize>>, Vec<u64>) {
    let ctas = weights.len().div_ceil(per_cta);
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.par_sort_unstable_by_key(|&i| (Reverse(weights[i]), i));
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = (0..ctas).map(|t| Reverse((0, t))).collect();
    let mut used = vec![0usize; ctas];
    let mut loads = vec![0u64; ctas];
    let mut slots = vec![None; ctas * per_cta];
    for &b in &order {
        let Some(Reverse((load, t))) = heap.pop() else {
            break;
        };
        slots[t * per_cta + used[t]] = Some(b);
        used[t] += 1;
        loads[t] = load + weights[b];
        if used[t] < per_cta {
            heap.push(Reverse((loads[t], t)));
        }
    }
    (slots, loads)
}

/// The runs of the owner epilogue, found as the run kernels walk the slots: a warp's run of a
/// panel ends where the next non-padding slot of the warp has another panel, or at the warp's
/// last slot. Returns, per panel, u32::MAX when one run holds all its blocks, else its workspace
/// row; and per workspace row, the number of runs that add into it.
fn split_panels(meta: &[u64], bpw: usize, npanels: usize) -> Result<(Vec<u32>, Vec<u32>)> {
    let mut runs = vec![0u32; npanels];
    for warp in meta.chunks(2 * bpw) {
        let mut cur = DUMMY_ROW;
        for w in warp.chunks(2) {
            let br = (w[1] >> 32) as u32;
            if br != DUMMY_ROW && br != cur {
                runs[br as usize] += 1;
                cur = br;
            }
        }
    }
    let mut split_of = vec![u32::MAX; npanels];
    let mut nparts = Vec::new();
    for (p, &r) in runs.iter().enumerate() {
        if r > 1 {
            split_of[p] = u32::try_from(nparts.len()).map_err(|_| Error::TooLarge {
                what: "cb-spmv split panels",
                value: nparts.len() as u64,
            })?;
            nparts.push(r);
        }
    }
    Ok((split_of, nparts))
}

impl<T: Scalar> CbLayout<T> {
    pub(crate) fn build(a: &Csr<T>, cfg: Config) -> Result<Self> {
        let (m, n, nnz) = (a.nrows(), a.ncols(), a.nnz());
        let gm = m.div_ceil(BS);
        let mut stages = Vec::new();

        // Stage 1: natural 16x16 tiling (parallel per-panel sorts) and the gather decision.
        let t0 = Instant::now();
        let natural: Vec<PanelTiles<T>> = (0..gm)
            .into_par_iter()
            .map(|p| tile_panel(a, p, None))
            .collect();
        let (nat_blocks, small): (usize, usize) = natural
            .par_iter()
            .map(|t| {
                let nb = t.bcs.len();
                let s = t
                    .starts
                    .windows(2)
                    .filter(|w| ((w[1] - w[0]) as usize) <= cfg.gather_small)
                    .count();
                (nb, s)
            })
            .reduce(|| (0, 0), |x, y| (x.0 + y.0, x.1 + y.1));
        let small_frac = if nat_blocks == 0 {
            0.0
        } else {
            small as f64 / nat_blocks as f64
        };
        let gathered = cfg.gather.is_on(small_frac > cfg.gather_frac && nnz >= 10);
        stages.push(("tile (16x16 sort)", t0.elapsed()));

        // Stage 2 (gathered only): per-panel distinct columns, re-tiling on their ranks.
        let t0 = Instant::now();
        let (tiles, gptr, gcols) = if gathered {
            let cols: Vec<Vec<u32>> = (0..gm)
                .into_par_iter()
                .map(|p| {
                    let rp = a.row_ptr();
                    let (s, e) = (rp[p * BS] as usize, rp[((p + 1) * BS).min(m)] as usize);
                    let mut c = a.col_idx()[s..e].to_vec();
                    c.par_sort_unstable();
                    c.dedup();
                    c
                })
                .collect();
            let mut gptr = Vec::with_capacity(gm + 1);
            gptr.push(0u32);
            for c in &cols {
                let last = *gptr.last().unwrap_or(&0) as u64;
                let next = last + c.len() as u64;
                if next > u32::MAX as u64 {
                    return Err(Error::TooLarge {
                        what: "cb-spmv gathered columns",
                        value: next,
                    });
                }
                gptr.push(next as u32);
            }
            let tiles: Vec<PanelTiles<T>> = (0..gm)
                .into_par_iter()
                .map(|p| tile_panel(a, p, Some(&cols[p])))
                .collect();
            let gcols: Vec<u32> = cols.concat();
            drop(natural);
            (tiles, gptr, gcols)
        } else {
            (natural, Vec::new(), Vec::new())
        };
        stages.push(("column aggregation", t0.elapsed()));

        // Stage 3: formats, region sizes, offsets (64-bit), and the packing of every region
        // into the one arena (parallel over panels).
        let t0 = Instant::now();
        let vb = T::BYTES;
        // Per panel: (index bytes, value count) of each block; a scaler for an empty panel.
        let mut panel_nb = Vec::with_capacity(gm);
        let mut blocks: Vec<(u32, u32, usize, usize, usize)> = Vec::new(); // (br, bc, nnz, ib, nv)
        let mut panel_first = Vec::with_capacity(gm + 1);
        let mut nscalers = 0;
        let mut format_counts = [0usize; 3];
        for (p, t) in tiles.iter().enumerate() {
            panel_first.push(blocks.len());
            if t.bcs.is_empty() {
                blocks.push((p as u32, 0, 0, 0, 0));
                nscalers += 1;
                panel_nb.push(1u32);
                continue;
            }
            panel_nb.push(t.bcs.len() as u32);
            for (b, &bc) in t.bcs.iter().enumerate() {
                let k = (t.starts[b + 1] - t.starts[b]) as usize;
                let f = cfg.format(k);
                format_counts[f as usize] += 1;
                blocks.push((p as u32, bc, k, index_bytes(f, k), value_count(f, k)));
            }
        }
        panel_first.push(blocks.len());
        // Offsets: aggregated regions are pad8(ib) + pad8(nv·B) bytes; split: ib bytes of
        // indices and nv values in the value arena.
        let nb_all = blocks.len();
        let mut off = Vec::with_capacity(nb_all + 1);
        let mut voff_nat = Vec::with_capacity(nb_all + 1);
        let (mut o, mut vo) = (0u64, 0u64);
        for &(_, _, _, ib, nv) in &blocks {
            off.push(o);
            voff_nat.push(vo);
            if cfg.aggregate {
                o += (pad8(ib) + pad8(nv * vb)) as u64;
            } else {
                o += ib as u64;
                vo += nv as u64;
            }
        }
        off.push(o);
        voff_nat.push(vo);
        if o >= 1u64 << 54 {
            return Err(Error::TooLarge {
                what: "cb-spmv arena bytes",
                value: o,
            });
        }
        let mut arena = vec![0u8; o as usize];
        let mut split_vals = vec![T::zero(); if cfg.aggregate { 0 } else { vo as usize }];
        {
            // Disjoint per-panel slices of the arena (and of the split values).
            let mut a_parts: Vec<&mut [u8]> = Vec::with_capacity(gm);
            let mut v_parts: Vec<&mut [T]> = Vec::with_capacity(gm);
            let (mut rest, mut vrest) = (arena.as_mut_slice(), split_vals.as_mut_slice());
            for p in 0..gm {
                let (b0, b1) = (panel_first[p], panel_first[p + 1]);
                let len = (off[b1] - off[b0]) as usize;
                let (head, tail) = rest.split_at_mut(len);
                a_parts.push(head);
                rest = tail;
                let vlen = (voff_nat[b1] - voff_nat[b0]) as usize;
                let (vh, vt) = vrest.split_at_mut(vlen);
                v_parts.push(vh);
                vrest = vt;
            }
            a_parts
                .into_par_iter()
                .zip(v_parts)
                .enumerate()
                .for_each(|(p, (dst, vdst))| {
                    let t = &tiles[p];
                    let base = off[panel_first[p]];
                    let vbase = voff_nat[panel_first[p]];
                    for b in 0..t.bcs.len() {
                        let gi = panel_first[p] + b;
                        let (s, e) = (t.starts[b] as usize, t.starts[b + 1] as usize);
                        let region = &mut dst[(off[gi] - base) as usize..];
                        let vregion = &mut vdst[(voff_nat[gi] - vbase) as usize..];
                        pack_block(
                            &cfg,
                            &t.ent[s..e],
                            &t.vals[s..e],
                            region,
                            vregion,
                            cfg.aggregate,
                        );
                    }
                });
        }
        drop(tiles);
        stages.push(("formats + pack arena", t0.elapsed()));

        // Stage 4: slots: LPT balancing over CTAs of 8 warps, or the natural order.
        let t0 = Instant::now();
        let weights: Vec<u64> = blocks.iter().map(|b| b.2 as u64).collect();
        let bpw = cfg.bpw.unwrap_or_else(|| {
            [8, 4, 2]
                .into_iter()
                .find(|&k| nb_all / k >= 32768)
                .unwrap_or(1)
        });
        let per_cta = WARPS * bpw;
        let ctas = nb_all.div_ceil(per_cta);
        let natural_loads: Vec<u64> = weights.chunks(per_cta).map(|c| c.iter().sum()).collect();
        let std_before = std_dev(&natural_loads);
        let balanced = cfg.balance.is_on(nnz >= cfg.balance_min_nnz);
        let (slots, std_after) = if balanced {
            let (slots, loads) = lpt_assign(&weights, per_cta);
            (slots, std_dev(&loads))
        } else {
            let mut s: Vec<Option<usize>> = (0..nb_all).map(Some).collect();
            s.resize(ctas * per_cta, None);
            (s, std_before)
        };
        let mut meta = vec![0u64; 2 * slots.len()];
        let mut voff = if cfg.aggregate {
            Vec::new()
        } else {
            vec![0u64; slots.len()]
        };
        meta.par_chunks_mut(2)
            .zip(slots.par_iter())
            .for_each(|(w, s)| match *s {
                Some(b) => {
                    let (br, bc, k, _, _) = blocks[b];
                    let single = (panel_nb[br as usize] == 1) as u64;
                    let xcol = (bc as u64) * BS as u64
                        + if gathered {
                            gptr[br as usize] as u64
                        } else {
                            0
                        };
                    w[0] = (off[b] << 10) | (single << 9) | k as u64;
                    w[1] = ((br as u64) << 32) | xcol;
                }
                None => {
                    w[0] = 0;
                    w[1] = (DUMMY_ROW as u64) << 32;
                }
            });
        if !cfg.aggregate {
            for (v, s) in voff.iter_mut().zip(&slots) {
                *v = s.map_or(0, |b| voff_nat[b]);
            }
        }
        let (split_of, nparts) = if cfg.owner_layout(nnz) {
            split_panels(&meta, bpw, gm)?
        } else {
            (Vec::new(), Vec::new())
        };
        stages.push(("balance (LPT) + metadata", t0.elapsed()));

        Ok(CbLayout {
            nrows: m,
            ncols: n,
            nnz,
            cfg,
            arena,
            split_vals,
            voff,
            meta,
            bpw,
            panel_nb,
            split_of,
            nparts,
            gathered,
            gcols,
            nblocks: nb_all - nscalers,
            nscalers,
            format_counts,
            small_frac,
            balanced,
            std_before,
            std_after,
            stages,
        })
    }

    /// Whether the owner epilogue may run: its split panels were built (one entry per panel).
    pub(crate) fn owner(&self) -> bool {
        !self.split_of.is_empty()
    }

    /// Number of slots (8·bpw per CTA).
    pub(crate) fn nslots(&self) -> usize {
        self.meta.len() / 2
    }

    /// CSR bytes of the same matrix (u32 indices), the reference of Fig. 12.
    fn csr_bytes(&self) -> usize {
        4 * (self.nrows + 1) + (4 + T::BYTES) * self.nnz
    }
}

/// Writes one block's region. Aggregated: `dst` gets indices, zero padding to 8 bytes, then the
/// values (little-endian); split: `dst` gets the indices and `vdst` the values.
fn pack_block<T: Scalar>(
    cfg: &Config,
    ent: &[u8],
    vals: &[T],
    dst: &mut [u8],
    vdst: &mut [T],
    aggregate: bool,
) {
    let k = ent.len();
    let f = cfg.format(k);
    let ib = index_bytes(f, k);
    let mut values = vec![T::zero(); value_count(f, k)];
    match f {
        Format::Coo => {
            dst[..k].copy_from_slice(ent);
            values.copy_from_slice(vals);
        }
        Format::Csr => {
            // row pointer: rp[r] = entries before row r (entries are row-major); rp[16] = nnz
            // wraps to 0 when nnz = 256 (the kernel takes the end of row 15 from the metadata).
            let mut counts = [0usize; BS];
            for &e in ent {
                counts[(e >> 4) as usize] += 1;
            }
            let mut s = 0;
            for r in 0..BS {
                dst[r] = s as u8;
                s += counts[r];
            }
            dst[BS] = s as u8;
            for (i, &e) in ent.iter().enumerate() {
                dst[BS + 1 + i] = e & 15;
            }
            values.copy_from_slice(vals);
        }
        Format::Dense => {
            for (&e, &v) in ent.iter().zip(vals) {
                values[e as usize] += v;
            }
        }
    }
    if aggregate {
        let vstart = pad8(ib);
        for (i, v) in values.iter().enumerate() {
            let bits = v.to_bits_u64().to_le_bytes();
            dst[vstart + i * T::BYTES..vstart + (i + 1) * T::BYTES]
                .copy_from_slice(&bits[..T::BYTES]);
        }
    } else {
        vdst[..values.len()].copy_from_slice(&values);
    }
}

/// Reads value `i` of a region's value area (little-endian bytes).
pub(crate) fn read_value<T: Scalar>(bytes: &[u8], i: usize) -> T {
    let b = &bytes[i * T::BYTES..(i + 1) * T::BYTES];
    if T::BYTES == 4 {
        let mut w = [0u8; 4];
        w.copy_from_slice(b);
        T::from_f64(f32::from_bits(u32::from_le_bytes(w)) as f64)
    } else {
        let mut w = [0u8; 8];
        w.copy_from_slice(b);
        T::from_f64(f64::from_bits(u64::from_le_bytes(w)))
    }
}

impl<T: Scalar> Layout<T> for CbLayout<T> {
    fn footprint_bytes(&self) -> usize {
        self.arena.len()
            + T::BYTES * self.split_vals.len()
            + 8 * (self.voff.len() + self.meta.len())
            + 4 * 3 * self.panel_nb.len() // blocks per panel + ticket + ready flag
            + 4 * self.split_of.len()
            + (8 + T::BYTES * BS) * self.nparts.len() // run counts, counters, workspace rows
            + if self.gathered {
                4 * (self.gcols.len() + BS) // gcols and its 16-entry padding (gptr stays here)
            } else {
                0
            }
    }

    forward! { run_cpu, upload }

    fn prep_stages(&self) -> Vec<(&'static str, Duration)> {
        self.stages.clone()
    }

    fn notes(&self) -> Vec<(String, String)> {
        let [coo, csr, dense] = self.format_counts;
        vec![
            (
                "blocks (COO/CSR/dense)".into(),
                format!("{} ({coo}/{csr}/{dense})", self.nblocks),
            ),
            (
                "scaler blocks (empty panels)".into(),
                self.nscalers.to_string(),
            ),
            (
                "thresholds coo_max/dense_min".into(),
                format!("{}/{}", self.cfg.coo_max, self.cfg.dense_min),
            ),
            (
                "small blocks (at most gather_small nnz, 16x16 tiling)".into(),
                format!("{:.1}%", 100.0 * self.small_frac),
            ),
            (
                "column aggregation".into(),
                if self.gathered {
                    format!("on ({} panel columns)", self.gcols.len())
                } else {
                    "off".into()
                },
            ),
            (
                "thread blocks x block slots (8 warps x bpw)".into(),
                format!(
                    "{} x {}",
                    self.nslots() / (WARPS * self.bpw),
                    WARPS * self.bpw
                ),
            ),
            (
                "nnz std-dev per thread block, before/after balancing".into(),
                format!(
                    "{:.2}/{:.2}{}",
                    self.std_before,
                    self.std_after,
                    if self.balanced { "" } else { " (not balanced)" }
                ),
            ),
            (
                "epilogue".into(),
                if self.owner() {
                    format!(
                        "owner{} ({} of {} panels split over several runs, the rest written by one warp)",
                        if self.cfg.owner.is_none() {
                            " on a stream, atomic in a CUDA graph"
                        } else {
                            ""
                        },
                        self.nparts.len(),
                        self.panel_nb.len()
                    )
                } else {
                    "atomic".into()
                },
            ),
            (
                "footprint relative to CSR".into(),
                format!(
                    "{:.3}",
                    self.footprint_bytes() as f64 / self.csr_bytes().max(1) as f64
                ),
            ),
            (
                "virtual-pointer aggregation".into(),
                if self.cfg.aggregate { "on" } else { "off" }.into(),
            ),
            (
                "scaling y by beta before the atomics".into(),
                if self.cfg.fused {
                    "fused into the kernel (first block of each panel)"
                } else if self.owner() && self.cfg.owner.is_none() {
                    "not needed on a stream (owner epilogue, one launch); a separate kernel in a CUDA graph"
                } else if self.owner() {
                    "not needed (owner epilogue, one launch)"
                } else if self.cfg.grid(self.nnz) && self.cfg.grid_on_stream_only() {
                    "in the kernel before a grid barrier on a stream; a separate kernel in a CUDA graph"
                } else if self.cfg.grid(self.nnz) {
                    "in the kernel before a grid barrier"
                } else {
                    "a separate kernel"
                }
                .into(),
            ),
            (
                "accumulation".into(),
                if self.cfg.run {
                    "per run of blocks in one panel"
                } else {
                    "per block"
                }
                .into(),
            ),
        ]
    }
}

#[cfg(test)]
mod tests;
