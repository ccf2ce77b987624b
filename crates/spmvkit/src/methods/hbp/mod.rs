//! `hbp`: the Hash-based Partition format of Yan, Diao, Liu, An & Xu, "A Nonlinear Hash-based
//! Optimization Method for SpMV on GPUs" (paper hbp.md): 2D partition (§III-A), nonlinear hash
//! reordering of each block's rows (§III-B, `hash.rs`), mixed fixed + competitive execution
//! (§III-C), then a combine pass.
//!
//! **Why it matters here.** On random-column matrices (Kronecker, uniform, power-law) every code
//! we measured, cuSPARSE included, is gather-bound at 30–40 % of the copy-bandwidth floor
//! (methods.md §0). HBP stages each block's x segment in shared memory, which targets exactly
//! that gather; the price is the partial sums of the 2D partition and their combine (Fig. 9).
//!
//! **Layout** (Fig. 2). The matrix is cut into blocks of `block_rows` × `block_cols` (512 × 4096;
//! block (bm, bn), stored panel after panel, column blocks in order inside a panel). Each block
//! has a table of rows: all its `h` rows (`combine=dense`, the paper's layout) or only its
//! non-empty rows (`combine=sparse`, ours). The table is reordered by the hash (`output_hash[slot]`
//! = local row) and cut into groups of `warp` (32) slots, one warp's rows. A group's nonzeros
//! are interleaved round by round: round r holds the r-th nonzero of every row of the group with
//! more than r, in slot order (`col`, `data`). `add_sign` = distance to the same row's next
//! nonzero (−1 on its last), `zero_row[slot]` = −1 for an empty row, else the number of empty rows
//! before it in its group, `begin_nnz[group]` = the group's first nonzero, so lane q's first
//! nonzero is `begin_nnz[g] + q − zero_row[slot]`. Per block, `blk_slot` and `blk_group` give its
//! first slot and group. On the device, a nonzero's local column (< 2^16) and its `add_sign` are
//! packed into one 32-bit word, so the matrix stream is 12 bytes per nonzero in f64, as CSR.
//!
//! **Execution** (`kernel.cu`). One kernel does the whole SpMV part. Blocks are numbered column
//! major (all row panels of column block 0, then of 1, …). The fixed part: the first
//! `fixed` share of them, rounded to an equal count per warp, is cut into equal consecutive
//! ranges, one per CTA of `warps_per_cta` warps; the CTA stages the x segment of each column
//! block its range touches in shared memory (bounds-checked, so x needs no padding and is not
//! copied), and its warps take the blocks of that segment in turn. The competitive part
//! (`compete=warp`, the paper's): warps that finished take `grab` blocks at a time from an atomic
//! ticket counter, reading x from global memory; `compete=cta` (default, ours): a CTA takes
//! `grab × warps_per_cta` consecutive blocks per ticket and runs them like a fixed range, so
//! every block reads x from shared memory, which is the point of the method on gather-bound
//! matrices. The counter is reset to 0 by the combine kernel of the same call (the public
//! code reset it once, so its timed runs skipped the competitive part). A second kernel combines:
//! `combine=dense` (faithful) sums the dense intermediate `mid[rows × column blocks]`, zeros
//! included; `combine=sparse` (default) sums only the non-empty partial rows, which the SpMV
//! kernel writes in row-major order (`out_pos`), so each row's partials are contiguous (`cptr`).
//!
//! **Choices.** `warps_per_cta = 8`: the paper's one-warp CTAs each stage a 32 KiB x segment
//! (f64), so at most 7 fit an SM (7 warps, too few to hide the latency of the `add_sign` chains);
//! 8 warps sharing one segment give 6 CTAs = 48 warps per SM. `combine=sparse` is the default
//! because on large sparse graphs most (row, column block) pairs are empty: for a Kronecker
//! graph of 2^20 rows and 256 column blocks the dense intermediate is 2.1 GB (f64) against 1 GB
//! of matrix, written and read in full every call, plus 8 bytes of slot metadata per pair; the
//! compact tables make every per-call array O(nnz). `hash=sampled` is the paper's hash as
//! designed in `hash.rs` (b = d/9: bucket regions fixed by the table size); `quantile` (default of
//! `hbp`) sizes the bucket regions from the same sample, which keeps rows of a crowded bucket
//! from spilling over the others (per-warp std-dev on kron:16 dense tables: 5.27 → 3.47 sampled,
//! 2.00 quantile, 1.61 sort); `fixed` is the public code's function, `none` the plain 2D baseline
//! and `sort` the sort2D preprocessing baseline. `dp` is the DP2D baseline (Regu2D's dynamic
//! programming): the paper says no more than "a sorting step then dynamic programming", so
//! `hash.rs` designs it from Regu2D's idea: sort, then a DP over the warp-group boundaries of the
//! sorted rows with Regu2D's cost (padded zeros); with groups of fixed width its only freedom is
//! which sorted rows form the table's short group, so its order is sort2D's up to that group and
//! its cost is the sort plus an O(d/w) pass. `hbp-paper` registers the paper's choices (sampled
//! hash, dense tables and intermediate, competition per warp) under the same parameters, and `2d`
//! the plain 2D-partitioned baseline of issue #9 (`hash=none`, `hbp`'s other defaults, the same
//! kernels).
//!
//! **Preprocessing stages** (`prep_stages`): row segments (Alg. 2), sample, table sizes, reorder
//! (the only stage where the hash variants differ: compare it for the sort2D claim), layout, and
//! the Fig. 6 statistics (a pass of its own, reported in `notes`).
//!
//! **Determinism.** Every partial sum is computed by one lane in a fixed order and written to its
//! own slot; the combine sums a row's partials in column-block order. No float atomics: bitwise
//! deterministic whatever the competitive schedule.

mod cpu;
mod gpu;
pub(crate) mod hash;

use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::error::{check_index_range, Error, Result};
use crate::matrix::Csr;
use crate::methods::common::room::{forward, method, room_kernel};
use crate::methods::params::{keywords, params, with_defaults, Keyword};
use crate::methods::{Layout, ParamSpec, Params};
use crate::scalar::Scalar;

pub use hash::HashKind;

room_kernel!(
    "hbp",
    [
        gpu::HbpArgs::params_entry("hbp_spmv"),
        gpu::CombineDenseArgs::params_entry("hbp_combine_dense"),
        gpu::CombineSparseArgs::params_entry("hbp_combine_sparse"),
    ]
);

const NAME: &str = "hbp";
const PAPER_NAME: &str = "hbp-paper";
const PLAIN_NAME: &str = "2d";

params! {
    /// The parameters of `hbp`, `hbp-paper` and `2d` (with `hbp`'s defaults), as given
    /// (checked one by one; [`config`] adds the shared-memory limit of the precision).
    struct HbpParams {
        /// rows per block (the paper's 512; 1..=65536)
        block_rows: usize = 512, in 1..=65536;
        /// columns per block = x segment staged in shared memory (the paper's 4096; 1..=65536, and
        /// at most 226 KiB of shared memory)
        block_cols: usize = 4096, in 1..=65536;
        /// row order inside a block: sampled (paper §III-B, designed hash, equal bucket regions),
        /// quantile (ours: bucket regions from the sample), fixed (public code's (nnz>>4)<<8), none
        /// (plain 2D baseline), sort (sort2D baseline), dp (DP2D baseline: sort, then a DP over the
        /// warp-group boundaries choosing which sorted rows form the table's short group, least
        /// padded zeros as in Regu2D)
        hash: HashKind = quantile;
        /// dense (paper: tables of all rows, dense intermediate) or sparse (tables of non-empty
        /// rows, intermediate of the non-empty partial rows only)
        combine: Combine = sparse;
        /// share of the blocks in the fixed part (0..=1); the rest is competitive
        fixed: f64 = 0.8, in 0.0..=1.0;
        /// warps per CTA sharing one staged x segment (1..=32)
        warps_per_cta: u32 = 8, in 1..=32;
        /// competitive part: warp (paper: a warp takes `grab` blocks per ticket, x from global
        /// memory) or cta (a CTA takes grab × warps_per_cta blocks per ticket and stages their x
        /// segments in shared memory)
        compete: Compete = cta;
        /// blocks taken per ticket in the competitive part (the public code's SUB_N = 10)
        grab: u32 = 10, in 1..=1 << 20;
        /// all, or spmv / combine to time one phase alone (Fig. 9): then the GPU y is NOT the
        /// product (the CPU mirror always runs both)
        phase: Phase = all;

    }
}

const PARAMS: &[ParamSpec] = HbpParams::SPECS;
const PAPER_PARAMS: &[ParamSpec] = &with_defaults(
    HbpParams::SPEC_ARRAY,
    &[
        ("hash", "sampled"),
        ("combine", "dense"),
        ("compete", "warp"),
    ],
);
const PLAIN_PARAMS: &[ParamSpec] = &with_defaults(HbpParams::SPEC_ARRAY, &[("hash", "none")]);

keywords! {
    /// `compete`: who takes the competitive part's blocks.
    enum Compete {
        Warp = "warp",
        Cta = "cta",
    }
}

/// Dynamic shared memory the x segment may take: sm_90 lets a CTA opt in to 227 KiB; 1 KiB is
/// left for the kernel's static shared memory.
pub(crate) const MAX_SMEM: usize = 226 * 1024;

/// Warp width of the kernels.
pub(crate) const WARP: usize = 32;

keywords! {
    /// How partial sums are combined.
    pub enum Combine {
        /// The paper's: tables of all rows, a dense intermediate of rows × column blocks.
        Dense = "dense",
        /// Ours: tables of non-empty rows, an intermediate of the non-empty partial rows.
        Sparse = "sparse",
    }
}

/// Build parameters (the ParamSpec values, plus the warp width, 32 except in tests).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Config {
    pub block_rows: usize,
    pub block_cols: usize,
    pub warp: usize,
    pub hash: HashKind,
    pub combine: Combine,
    pub fixed: f64,
    pub warps_per_cta: u32,
    pub grab: u32,
    /// Competitive part taken per CTA (x staged) rather than per warp (x from global).
    pub compete_cta: bool,
    /// Which kernels a GPU call runs.
    pub phase: Phase,
}

keywords! {
    /// Which kernels a GPU call runs (all but `All` are for timing the Fig. 9 split only).
    pub enum Phase {
        All = "all",
        Spmv = "spmv",
        Combine = "combine",
    }
}

fn param_err(name: &str, key: &str, msg: String) -> Error {
    Error::Param {
        method: name.into(),
        key: key.into(),
        msg,
    }
}

const SOURCE: &str =
    "Yan et al., A Nonlinear Hash-based Optimization Method for SpMV on GPUs (HBP), §III";

method! {
    /// The registry entry of `hbp`: our defaults (quantile hash, compact tables + sparse combine,
    /// competitive part per CTA with staged x).
    pub struct Hbp {
        name: NAME,
        summary: "GPU: 2D blocks, hash-reordered rows interleaved per warp, x segments in \
                  shared memory, fixed + competitive blocks, sparse combine pass",
        source: SOURCE,
        deterministic: true,
        params: PARAMS,
    }
    fn prepare(csr, params) {
        Ok(Box::new(HbpLayout::build(
            csr,
            config::<T>(NAME, PARAMS, params)?,
        )?))
    }
}

method! {
    /// The registry entry of `hbp-paper`: the paper's method (designed hash with equal bucket
    /// regions, dense tables and intermediate, competitive part per warp reading x from global
    /// memory); same parameters.
    pub struct HbpPaper {
        name: PAPER_NAME,
        summary: "GPU: HBP as published: dense per-block tables and intermediate, \
                  competitive blocks per warp with x from global memory, dense combine",
        source: SOURCE,
        deterministic: true,
        params: PAPER_PARAMS,
    }
    fn prepare(csr, params) {
        Ok(Box::new(HbpLayout::build(
            csr,
            config::<T>(PAPER_NAME, PAPER_PARAMS, params)?,
        )?))
    }
}

method! {
    /// The registry entry of `2d`: the plain 2D-partitioned baseline (issue #9, the paper's
    /// "2D-partitioning"): `hbp` with no row reordering (`hash=none`), same kernels and parameters.
    pub struct Plain2d {
        name: PLAIN_NAME,
        summary: "GPU: plain 2D-partitioned baseline: hbp's blocks, kernels and combine, \
                  rows in their original order (hash=none)",
        source: SOURCE,
        deterministic: true,
        params: PLAIN_PARAMS,
    }
    fn prepare(csr, params) {
        Ok(Box::new(HbpLayout::build(
            csr,
            config::<T>(PLAIN_NAME, PLAIN_PARAMS, params)?,
        )?))
    }
}

/// Builds the layout of `hbp`, `hbp-paper` or `2d` (by `name`) with user parameters, as the
/// concrete type, for tools that read its statistics ([`HbpLayout::warp_stats`]).
pub fn build_layout<T: Scalar>(name: &str, csr: &Csr<T>, params: &Params) -> Result<HbpLayout<T>> {
    let specs = match name {
        NAME => PARAMS,
        PAPER_NAME => PAPER_PARAMS,
        PLAIN_NAME => PLAIN_PARAMS,
        _ => {
            return Err(Error::InvalidArgument(format!(
                "build_layout: '{name}' is not {NAME}, {PAPER_NAME} or {PLAIN_NAME}"
            )))
        }
    };
    HbpLayout::build(csr, config::<T>(name, specs, params)?)
}

/// The build configuration from user parameters.
fn config<T: Scalar>(name: &str, specs: &[ParamSpec], params: &Params) -> Result<Config> {
    let p = HbpParams::from_params_in(name, specs, params)?;
    if p.block_cols * T::BYTES > MAX_SMEM {
        return Err(param_err(
            name,
            "block_cols",
            format!(
                "{} columns of {} bytes exceed {MAX_SMEM} bytes of shared memory",
                p.block_cols,
                T::BYTES
            ),
        ));
    }
    Ok(Config {
        block_rows: p.block_rows,
        block_cols: p.block_cols,
        warp: WARP,
        hash: p.hash,
        combine: p.combine,
        fixed: p.fixed,
        warps_per_cta: p.warps_per_cta,
        grab: p.grab,
        compete_cta: p.compete == Compete::Cta,
        phase: p.phase,
    })
}

/// Per-warp spread of row lengths (Fig. 6), summed over the groups of non-empty blocks.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Spread {
    /// Groups counted.
    pub groups: u64,
    /// Σ over groups of the std-dev of the group's row counts, original / hashed order.
    pub std_before: f64,
    pub std_after: f64,
    /// Σ over groups of warp × (longest row of the group), original / hashed order.
    pub lanes_before: u64,
    pub lanes_after: u64,
    /// Nonzeros counted.
    pub nnz: u64,
}

impl Spread {
    fn add(mut self, o: Spread) -> Spread {
        self.groups += o.groups;
        self.std_before += o.std_before;
        self.std_after += o.std_after;
        self.lanes_before += o.lanes_before;
        self.lanes_after += o.lanes_after;
        self.nnz += o.nnz;
        self
    }

    /// Σ std-dev and Σ warp × max over the groups of `v` (one table in some order).
    fn groups_of(v: &[u32], warp: usize) -> (f64, u64) {
        let (mut s, mut lanes) = (0.0, 0u64);
        for g in v.chunks(warp) {
            let n = g.len() as f64;
            let mean = g.iter().map(|&x| x as f64).sum::<f64>() / n;
            let var = g.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
            s += var.sqrt();
            lanes += warp as u64 * g.iter().copied().max().unwrap_or(0) as u64;
        }
        (s, lanes)
    }
}

/// Per-warp nonzero statistics of a layout (Fig. 6), over the warp groups (`warp` consecutive
/// slots of a block's table) of the non-empty blocks; "before" is the table in original row
/// order, "after" in the layout's order. Empty rows of the dense tables count as 0.
#[derive(Clone, Copy, Debug)]
pub struct WarpStats {
    /// Warp groups counted.
    pub groups: u64,
    /// Mean over the groups of the standard deviation of their rows' nonzero counts.
    pub std_before: f64,
    pub std_after: f64,
    /// Σ over groups of warp × (longest row) / nonzeros: the mean of max/mean per group,
    /// weighted by nonzeros (1 = every lane busy every round).
    pub max_over_mean_before: f64,
    pub max_over_mean_after: f64,
}

/// The HBP layout: host arrays as §III-A names them, plus what the sparse combine needs.
pub struct HbpLayout<T> {
    pub(crate) cfg: Config,
    pub(crate) nrows: usize,
    pub(crate) ncols: usize,
    /// Row panels and column blocks.
    pub(crate) nbr: usize,
    pub(crate) nbc: usize,
    /// The sampled aggregation shift `a` (hash=sampled|quantile).
    pub(crate) agg_shift: u32,
    /// The sampled cumulative bucket shares (hash=quantile), fixed point.
    pub(crate) shares: [u32; 10],
    /// First slot of each block (storage order b = bm·nbc + bn), nblocks + 1 entries.
    pub(crate) blk_slot: Vec<u32>,
    /// First group of each block, nblocks + 1 entries.
    pub(crate) blk_group: Vec<u32>,
    /// First nonzero of each group, ngroups + 1 entries (the last is nnz).
    pub(crate) begin_nnz: Vec<u32>,
    /// Per slot: −1 for an empty row, else the empty rows before it in its group. Dense only
    /// (the sparse tables hold no empty rows).
    pub(crate) zero_row: Vec<i32>,
    /// Per slot: the row's local index in its panel (the hash table).
    pub(crate) output_hash: Vec<u32>,
    /// Per slot (sparse only): the position of this partial row in the intermediate.
    pub(crate) out_pos: Vec<u32>,
    /// Per row (sparse only): its partials in the intermediate, nrows + 1 entries.
    pub(crate) cptr: Vec<u32>,
    /// Per nonzero, interleaved: global column, value, distance to the row's next nonzero.
    pub(crate) col: Vec<u32>,
    pub(crate) data: Vec<T>,
    pub(crate) add_sign: Vec<i8>,
    pub(crate) spread: Spread,
    stages: Vec<(&'static str, Duration)>,
}

/// Splits `s` into consecutive pieces of the given lengths.
fn split_lens<U>(mut s: &mut [U], lens: impl Iterator<Item = usize>) -> Vec<&mut [U]> {
    let mut out = Vec::new();
    for n in lens {
        let (a, b) = s.split_at_mut(n);
        out.push(a);
        s = b;
    }
    out
}

/// Exclusive prefix sum with a total entry; errors past the 32-bit index range.
fn prefix(counts: &[u64], what: &'static str) -> Result<Vec<u32>> {
    let mut out = Vec::with_capacity(counts.len() + 1);
    let mut acc = 0u64;
    out.push(0);
    for &c in counts {
        acc += c;
        check_index_range(what, acc)?;
        out.push(acc as u32);
    }
    Ok(out)
}

const NONE: u32 = u32::MAX;

impl<T: Scalar> HbpLayout<T> {
    /// Builds the layout (parallel over rows, then over row panels).
    pub(crate) fn build(a: &Csr<T>, cfg: Config) -> Result<Self> {
        assert!(cfg.warp >= 1 && cfg.warp <= 32, "warp width");
        let (nrows, ncols) = (a.nrows(), a.ncols());
        let (br, bc, w) = (cfg.block_rows, cfg.block_cols, cfg.warp);
        let nbr = nrows.div_ceil(br);
        let nbc = ncols.div_ceil(bc);
        let (rp, cols, vals) = (a.row_ptr(), a.col_idx(), a.vals());
        let dense = cfg.combine == Combine::Dense;
        let mut stages = Vec::new();

        // 1. Alg. 2: every row's segments = its non-empty column blocks (columns are sorted, so
        //    a segment is a contiguous run of the row), one row per task.
        let t = Instant::now();
        let row_segs = |r: usize| {
            let c = &cols[rp[r] as usize..rp[r + 1] as usize];
            let mut n = 0u64;
            let mut last = usize::MAX;
            for &j in c {
                let b = j as usize / bc;
                if b != last {
                    n += 1;
                    last = b;
                }
            }
            n
        };
        let counts: Vec<u64> = (0..nrows).into_par_iter().map(row_segs).collect();
        let seg_ptr = prefix(&counts, "hbp partial rows")?;
        drop(counts);
        let nseg = seg_ptr[nrows] as usize;
        let mut seg_bn = vec![0u32; nseg];
        let mut seg_start = vec![0u32; nseg];
        let mut seg_len = vec![0u32; nseg];
        const CHUNK: usize = 2048;
        let chunk_lens = (0..nrows.div_ceil(CHUNK))
            .map(|k| (seg_ptr[((k + 1) * CHUNK).min(nrows)] - seg_ptr[k * CHUNK]) as usize);
        let pieces: Vec<_> = split_lens(&mut seg_bn, chunk_lens.clone())
            .into_iter()
            .zip(split_lens(&mut seg_start, chunk_lens.clone()))
            .zip(split_lens(&mut seg_len, chunk_lens))
            .enumerate()
            .collect();
        pieces.into_par_iter().for_each(|(k, ((sb, ss), sl))| {
            let mut p = 0;
            for r in k * CHUNK..((k + 1) * CHUNK).min(nrows) {
                let (s, e) = (rp[r] as usize, rp[r + 1] as usize);
                let mut last = usize::MAX;
                for (i, &j) in cols[s..e].iter().enumerate() {
                    let b = j as usize / bc;
                    if b != last {
                        sb[p] = b as u32;
                        ss[p] = (s + i) as u32;
                        sl[p] = 0;
                        p += 1;
                        last = b;
                    }
                    sl[p - 1] += 1;
                }
            }
        });
        stages.push(("row segments (Alg. 2)", t.elapsed()));

        // 2. The aggregation shift a from a sample of non-empty row-in-block counts.
        let t = Instant::now();
        let (agg_shift, shares) = if matches!(cfg.hash, HashKind::Sampled | HashKind::Quantile) {
            let step = nseg.div_ceil(4096).max(1);
            let mut sample: Vec<u32> = seg_len.iter().step_by(step).copied().collect();
            let a = hash::sample_shift(&mut sample);
            // the dense tables' empty rows, counted exactly
            let slots = (nrows * nbc) as f64;
            let empty = if dense && slots > 0.0 {
                1.0 - nseg as f64 / slots
            } else {
                0.0
            };
            (a, hash::sample_shares(&sample, a, empty))
        } else {
            (4, [0; 10])
        };
        stages.push(("sample a, c", t.elapsed()));

        // 3. Table sizes per block, then block / group prefixes.
        let t = Instant::now();
        let panel_rows = |bm: usize| (bm * br, ((bm + 1) * br).min(nrows));
        let table_sizes: Vec<u64> = (0..nbr)
            .into_par_iter()
            .flat_map_iter(|bm| {
                let (r0, r1) = panel_rows(bm);
                let mut sz = vec![if dense { (r1 - r0) as u64 } else { 0 }; nbc];
                if !dense {
                    for &b in &seg_bn[seg_ptr[r0] as usize..seg_ptr[r1] as usize] {
                        sz[b as usize] += 1;
                    }
                }
                sz
            })
            .collect();
        let blk_slot = prefix(&table_sizes, "hbp slots")?;
        let group_counts: Vec<u64> = table_sizes.iter().map(|&s| s.div_ceil(w as u64)).collect();
        let blk_group = prefix(&group_counts, "hbp groups")?;
        drop(group_counts);
        drop(table_sizes);
        let nslots = *blk_slot.last().unwrap_or(&0) as usize;
        let ngroups = *blk_group.last().unwrap_or(&0) as usize;
        stages.push(("tables", t.elapsed()));

        // 4. Reorder (parallel over panels): each block's table, its hashed order, and per slot
        //    the local row and the segment (partial row) it holds.
        let mut output_hash = vec![0u32; nslots];
        let mut slot_seg = vec![NONE; nslots];
        let panel_slots = |bm: usize| (blk_slot[(bm + 1) * nbc] - blk_slot[bm * nbc]) as usize;
        let t = Instant::now();
        {
            let oh = split_lens(&mut output_hash, (0..nbr).map(panel_slots));
            let ss = split_lens(&mut slot_seg, (0..nbr).map(panel_slots));
            oh.into_iter()
                .zip(ss)
                .enumerate()
                .collect::<Vec<_>>()
                .into_par_iter()
                .for_each(|(bm, (oh, ss))| {
                    let (r0, r1) = panel_rows(bm);
                    let h = r1 - r0;
                    // bucket the panel's segments by column block (counting sort, row order kept)
                    let (p0, p1) = (seg_ptr[r0] as usize, seg_ptr[r1] as usize);
                    let mut start = vec![0usize; nbc + 1];
                    for &b in &seg_bn[p0..p1] {
                        start[b as usize + 1] += 1;
                    }
                    for i in 0..nbc {
                        start[i + 1] += start[i];
                    }
                    let mut fill = start.clone();
                    let mut bucket = vec![(0u32, 0u32); p1 - p0];
                    for r in r0..r1 {
                        let (q0, q1) = (seg_ptr[r] as usize, seg_ptr[r + 1] as usize);
                        for (p, &b) in (q0..q1).zip(&seg_bn[q0..q1]) {
                            let b = b as usize;
                            bucket[fill[b]] = ((r - r0) as u32, p as u32);
                            fill[b] += 1;
                        }
                    }
                    let (mut probe, mut perm) = (hash::Probe::new(), Vec::new());
                    let (mut lens, mut rows, mut segs) = (Vec::new(), Vec::new(), Vec::new());
                    let mut at = 0usize;
                    for bn in 0..nbc {
                        let entries = &bucket[start[bn]..start[bn + 1]];
                        lens.clear();
                        rows.clear();
                        segs.clear();
                        if dense {
                            lens.resize(h, 0);
                            rows.extend(0..h as u32);
                            segs.resize(h, NONE);
                            for &(lr, p) in entries {
                                lens[lr as usize] = seg_len[p as usize];
                                segs[lr as usize] = p;
                            }
                        } else {
                            for &(lr, p) in entries {
                                lens.push(seg_len[p as usize]);
                                rows.push(lr);
                                segs.push(p);
                            }
                        }
                        hash::order(
                            cfg.hash, &lens, agg_shift, &shares, w, &mut probe, &mut perm,
                        );
                        for (s, &i) in perm.iter().enumerate() {
                            oh[at + s] = rows[i as usize];
                            ss[at + s] = segs[i as usize];
                        }
                        at += lens.len();
                    }
                });
        }
        stages.push(("reorder", t.elapsed()));

        // 5. Layout (parallel over panels): zero_row, begin_nnz and the interleaved nonzeros.
        let t = Instant::now();
        let nnz = a.nnz();
        let mut col = vec![0u32; nnz];
        let mut data = vec![T::zero(); nnz];
        let mut add_sign = vec![0i8; nnz];
        let mut zero_row = if dense {
            vec![0i32; nslots]
        } else {
            Vec::new()
        };
        let mut begin_nnz = vec![0u32; ngroups + 1];
        begin_nnz[ngroups] = nnz as u32;
        {
            let panel_nnz = |bm: usize| {
                let (r0, r1) = panel_rows(bm);
                (rp[r1] - rp[r0]) as usize
            };
            let panel_groups =
                |bm: usize| (blk_group[(bm + 1) * nbc] - blk_group[bm * nbc]) as usize;
            let cs = split_lens(&mut col, (0..nbr).map(panel_nnz));
            let ds = split_lens(&mut data, (0..nbr).map(panel_nnz));
            let as_ = split_lens(&mut add_sign, (0..nbr).map(panel_nnz));
            let zs: Vec<&mut [i32]> = if dense {
                split_lens(&mut zero_row, (0..nbr).map(panel_slots))
            } else {
                (0..nbr).map(|_| <&mut [i32]>::default()).collect()
            };
            let bs = split_lens(&mut begin_nnz[..ngroups], (0..nbr).map(panel_groups));
            let work: Vec<_> = cs
                .into_iter()
                .zip(ds)
                .zip(as_)
                .zip(zs)
                .zip(bs)
                .enumerate()
                .collect();
            work.into_par_iter()
                .for_each(|(bm, ((((cs, ds), as_), zs), bs))| {
                    let (r0, _) = panel_rows(bm);
                    let e0 = rp[r0] as usize;
                    let slot0 = blk_slot[bm * nbc] as usize;
                    let group0 = blk_group[bm * nbc] as usize;
                    // active rows of a group: (segment start, length, last position)
                    let mut active: Vec<(usize, usize, usize)> = Vec::with_capacity(w);
                    let mut cur = 0usize; // panel-local nonzero position
                    for b in bm * nbc..(bm + 1) * nbc {
                        let (s0, s1) = (blk_slot[b] as usize, blk_slot[b + 1] as usize);
                        let g0 = blk_group[b] as usize;
                        for (g, gs) in (s0..s1).step_by(w).enumerate() {
                            bs[g0 + g - group0] = (e0 + cur) as u32;
                            let ge = (gs + w).min(s1);
                            active.clear();
                            let mut empties = 0;
                            for s in gs..ge {
                                let p = slot_seg[s];
                                if p == NONE {
                                    if dense {
                                        zs[s - slot0] = -1;
                                    }
                                    empties += 1;
                                } else {
                                    if dense {
                                        zs[s - slot0] = empties;
                                    }
                                    let p = p as usize;
                                    active.push((seg_start[p] as usize, seg_len[p] as usize, 0));
                                }
                            }
                            let mut r = 0;
                            while !active.is_empty() {
                                for e in active.iter_mut() {
                                    let pos = cur;
                                    cur += 1;
                                    cs[pos] = cols[e.0 + r];
                                    ds[pos] = vals[e.0 + r];
                                    if r > 0 {
                                        as_[e.2] = (pos - e.2) as i8;
                                    }
                                    e.2 = pos;
                                    if r + 1 == e.1 {
                                        as_[pos] = -1;
                                    }
                                }
                                r += 1;
                                active.retain(|e| e.1 > r);
                            }
                        }
                    }
                });
        }
        stages.push(("layout", t.elapsed()));

        // 6. Fig. 6: per-warp spread of the tables' row counts in original and hashed order
        //    (a pass of its own, so the reorder stage times the reordering alone).
        let t = Instant::now();
        let spread = (0..nbr * nbc)
            .into_par_iter()
            .map(|b| {
                let (s0, s1) = (blk_slot[b] as usize, blk_slot[b + 1] as usize);
                let len = |s: usize| match slot_seg[s] {
                    NONE => 0,
                    p => seg_len[p as usize],
                };
                let after: Vec<u32> = (s0..s1).map(len).collect();
                let nnz: u64 = after.iter().map(|&n| n as u64).sum();
                if nnz == 0 {
                    return Spread::default();
                }
                let mut by_row: Vec<(u32, u32)> =
                    (s0..s1).map(|s| (output_hash[s], len(s))).collect();
                by_row.sort_unstable_by_key(|r| r.0);
                let before: Vec<u32> = by_row.iter().map(|r| r.1).collect();
                let (sb, lb) = Spread::groups_of(&before, w);
                let (sa, la) = Spread::groups_of(&after, w);
                Spread {
                    groups: after.len().div_ceil(w) as u64,
                    std_before: sb,
                    std_after: sa,
                    lanes_before: lb,
                    lanes_after: la,
                    nnz,
                }
            })
            .reduce(Spread::default, Spread::add);
        stages.push(("Fig. 6 stats", t.elapsed()));
        let (out_pos, cptr) = if dense {
            (Vec::new(), Vec::new())
        } else {
            (slot_seg, seg_ptr)
        };
        Ok(HbpLayout {
            cfg,
            nrows,
            ncols,
            nbr,
            nbc,
            agg_shift,
            shares,
            blk_slot,
            blk_group,
            begin_nnz,
            zero_row,
            output_hash,
            out_pos,
            cptr,
            col,
            data,
            add_sign,
            spread,
            stages,
        })
    }

    /// The per-warp nonzero statistics (Fig. 6).
    pub fn warp_stats(&self) -> WarpStats {
        let s = &self.spread;
        let g = s.groups.max(1) as f64;
        let ratio = |lanes: u64| {
            if s.nnz == 0 {
                1.0
            } else {
                lanes as f64 / s.nnz as f64
            }
        };
        WarpStats {
            groups: s.groups,
            std_before: s.std_before / g,
            std_after: s.std_after / g,
            max_over_mean_before: ratio(s.lanes_before),
            max_over_mean_after: ratio(s.lanes_after),
        }
    }

    /// Number of blocks.
    pub(crate) fn nblocks(&self) -> usize {
        self.nbr * self.nbc
    }

    /// Length of the intermediate array of partial sums.
    pub(crate) fn mid_len(&self) -> usize {
        match self.cfg.combine {
            Combine::Dense => self.nrows * self.nbc,
            Combine::Sparse => self.out_pos.len(),
        }
    }

    /// Storage index of the `q`-th block in column-major (scheduling) order.
    pub(crate) fn block_of(&self, q: usize) -> usize {
        let (bn, bm) = (q / self.nbr, q % self.nbr);
        bm * self.nbc + bn
    }

    /// The device word of nonzero k: local column in the high 16 bits, add_sign in the low 16.
    pub(crate) fn packed(&self) -> Vec<u32> {
        let bc = self.cfg.block_cols as u32;
        self.col
            .par_iter()
            .zip(self.add_sign.par_iter())
            .map(|(&c, &s)| ((c % bc) << 16) | (s as i16 as u16 as u32))
            .collect()
    }

    /// The fixed/competitive split for `ctas` CTAs: (blocks per CTA in the fixed part, blocks in
    /// the fixed part). Every warp gets the same count.
    pub(crate) fn split(&self, ctas: usize) -> (usize, usize) {
        let warps = ctas * self.cfg.warps_per_cta as usize;
        let per_warp = ((self.cfg.fixed * self.nblocks() as f64) as usize) / warps.max(1);
        let per_cta = per_warp * self.cfg.warps_per_cta as usize;
        (per_cta, per_cta * ctas)
    }
}

impl<T: Scalar> Layout<T> for HbpLayout<T> {
    fn footprint_bytes(&self) -> usize {
        // Device arrays: packed col/add_sign word + value per nonzero, block and group offsets,
        // per slot (zero_row + output_hash) or out_pos, cptr, and the intermediate.
        let per_slot = match self.cfg.combine {
            Combine::Dense => 8,
            Combine::Sparse => 4,
        };
        self.col.len() * (4 + T::BYTES)
            + 4 * (self.blk_slot.len() + self.blk_group.len() + self.begin_nnz.len())
            + per_slot * self.output_hash.len()
            + 4 * self.cptr.len()
            + T::BYTES * self.mid_len()
            + 4
    }

    forward! { run_cpu, upload }

    fn prep_stages(&self) -> Vec<(&'static str, Duration)> {
        self.stages.clone()
    }

    fn notes(&self) -> Vec<(String, String)> {
        let s = &self.spread;
        let g = s.groups.max(1) as f64;
        let c = hash::fine_shift(self.agg_shift, self.cfg.block_rows);
        let eff = |lanes: u64| {
            if lanes == 0 {
                1.0
            } else {
                s.nnz as f64 / lanes as f64
            }
        };
        vec![
            (
                "blocks".into(),
                format!(
                    "{} x {} of {} x {}",
                    self.nbr, self.nbc, self.cfg.block_rows, self.cfg.block_cols
                ),
            ),
            (
                "hash".into(),
                match self.cfg.hash {
                    HashKind::Sampled => format!(
                        "sampled: a = {}, c = {c}, b = d/9, d = table size (c at d = {})",
                        self.agg_shift, self.cfg.block_rows
                    ),
                    HashKind::Quantile => format!(
                        "quantile: a = {}, bucket shares % {:?}",
                        self.agg_shift,
                        self.shares
                            .windows(2)
                            .map(|w| (100 * (w[1] - w[0]) as u64 / hash::SHARE_ONE) as u32)
                            .collect::<Vec<_>>()
                    ),
                    k => k.name().into(),
                },
            ),
            (
                "combine".into(),
                match self.cfg.combine {
                    Combine::Dense => format!("dense ({} partials)", self.mid_len()),
                    Combine::Sparse => format!("sparse ({} partials)", self.mid_len()),
                },
            ),
            ("output slots".into(), self.output_hash.len().to_string()),
            ("warp groups".into(), (self.begin_nnz.len() - 1).to_string()),
            (
                "per-warp nnz std-dev (Fig. 6) before -> after".into(),
                format!(
                    "{:.3} -> {:.3} ({} groups)",
                    s.std_before / g,
                    s.std_after / g,
                    s.groups
                ),
            ),
            (
                "lane efficiency before -> after".into(),
                format!("{:.3} -> {:.3}", eff(s.lanes_before), eff(s.lanes_after)),
            ),
            (
                "share of blocks in the fixed part".into(),
                self.cfg.fixed.to_string(),
            ),
            ("warps per CTA".into(), self.cfg.warps_per_cta.to_string()),
            (
                "competitive part".into(),
                if self.cfg.compete_cta {
                    format!(
                        "a CTA takes {} blocks per ticket ({} per warp)",
                        self.cfg.grab * self.cfg.warps_per_cta,
                        self.cfg.grab
                    )
                } else {
                    format!("a warp takes {} blocks per ticket", self.cfg.grab)
                },
            ),
        ]
    }
}

#[cfg(test)]
mod tests;
