//! `teb`: the TEB format (Wang, Zhang, He, Xu, Cui, "TEB: GPU 上矩阵分解重构的高效 SpMV 存储格式",
//! paper teb.md): rows sorted by length and merged into blocks of nearly equal nnz (§3.1), and a
//! kernel with one CTA per block and one thread per row (§3.2, Alg. 3).
//!
//! Preprocessing (stages reported as Figs. 18/19 do, via `prep_stages`):
//! 1. sort: row lengths, rows sorted by length descending (stable: equal rows keep their order);
//! 2. threshold selection (§3.1.1, Alg. 1, Fig. 11): bLN_critical and the decision tree for k,
//!    Threshold = NNZ/bLN · k (Eqs. 3–7); see [`select`];
//! 3. bLN search (§3.1.2): least block-nnz variance (Eq. 5) over bLN, stopped by Eq. 10; each
//!    candidate is one O(bLN + D) pass on the run-length-encoded lengths ([`select`] documents
//!    the window and the coarse-to-fine search that keep this far from O(M²));
//! 4. merge + layout (Alg. 2): the two-pointer merge on the sorted rows — a block is the largest
//!    remaining row plus the smallest remaining rows while sum + next ≤ Threshold (the worked
//!    example's rule; Alg. 2 prints `<`), the last block takes the rest — then the gather of
//!    `values`/`col_idx` in the new row order (parallel).
//!
//! Layout (Fig. 15): `values`, `col_idx` (rows in merged order), `blo_idx` (first row of each
//! block), `row_nnz_sum` (row offsets in merged order) and `row_ids` (original row of each
//! merged row). Empty rows take no part in the merge (they change no block's nnz) and follow as
//! blocks of `threads` rows with no entries, so that y = βy reaches them without one CTA
//! looping over all of them.
//!
//! Kernel (Alg. 3): CTA b takes rows `blo_idx[b]..blo_idx[b+1]`; thread t takes rows t, t +
//! blockDim, … (the loop handles blocks with more rows than the CTA has threads: the last block
//! of Alg. 2 can be large), sums its row in order with fma and writes y at the original row.
//! Deterministic (no atomics, fixed order). `threads=auto` takes the largest merged block's row
//! count rounded up to a warp, at most 1024.
//!
//! Parameters: `k` (auto = heuristic, or a number), `bln` (auto = search, or a number),
//! `bln_range` (auto = mean rows per block in [64, 1024], or `lo..hi`), `candidates`, `threads`.
//!
//! **`teb-vector`** (ours, issue #7; `teb` stays the paper's kernel). Alg. 3 gives every row one
//! thread, so a hub row is walked by a single thread while the rest of its CTA idles; with the
//! merge, a hub row is usually a block of its own. `teb` is on a par with cuSPARSE where no row is
//! long and far behind it on power-law and Kronecker matrices (measurements:
//! `docs/methods/teb.md`). `teb-vector` keeps the layout and the build (same parameters, the same
//! arrays bit for bit) and changes the kernel only: a row of at least `long_row` (default 256)
//! entries is summed by the whole CTA — thread t adds entries start + t, start + t + blockDim, …
//! with fma, then the warp butterflies and a butterfly over the warp sums, in a fixed order — and
//! the other rows take a thread each as in Alg. 3. The CTA finds its long rows itself (a
//! `__syncthreads_count` per `threads` rows, then the warps' ballots): they lead a merged block
//! (its largest row) or the descending last block, but the ascending tail of a block can hold long
//! rows too when bLN is small, so no position is assumed. Deterministic as `teb`; with no row of
//! `long_row` entries, y is bitwise that of `teb`. Not timed on a GPU yet. Limits: a CTA takes its
//! long rows one at a time (two barriers each), so blocks of many rows just over `long_row` may
//! want a larger `long_row`; and a hub row gets one CTA, not the whole GPU.

mod cpu;
mod gpu;
pub mod select;

use std::convert::Infallible;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::error::Result;
use crate::matrix::Csr;
use crate::methods::common::checks::THREADS;
use crate::methods::common::room::{forward, method, room_kernel};
use crate::methods::params::{concat_specs, params, AutoOr, ParamRange, ParamValue};
use crate::methods::{Layout, ParamSpec, Params};
use crate::scalar::{Idx, Scalar};
use select::{BlnChoice, KChoice, Lengths, Selection};

room_kernel!("teb", gpu::TebArgs: ["teb_spmv", "teb_vector_spmv"]);

const NAME: &str = "teb";
const VECTOR_NAME: &str = "teb-vector";

/// Default bounds on the mean rows per block for the bLN search window.
const ROWS_PER_BLOCK_MIN: usize = 64;
const ROWS_PER_BLOCK_MAX: usize = 1024;

params! {
    /// The parameters of `teb` (and the first ones of `teb-vector`).
    struct TebParams {
        /// Threshold = NNZ/bLN * k: auto (Alg. 1 + Fig. 11 decision tree: 1.005, 1.01 or 1.03) or a
        /// number >= 1
        k: AutoOr<f64> = auto, in FiniteFrom(1.0);
        /// block count: auto (least block-nnz variance, Eq. 5, stopped by Eq. 10) or a number
        bln: AutoOr<usize> = auto, in 1..;
        /// search window for bln=auto: auto (mean rows per block in [64, 1024]) or lo..hi (the
        /// paper: 2..M)
        bln_range: AutoOr<Span> = auto;
        /// bLN counts evaluated per coarse-to-fine level (>= 3); a window no wider is searched
        /// exhaustively
        candidates: usize = 256, in 3..;
        /// threads per CTA: auto (rows of the largest merged block, rounded up to 32, at most 1024)
        /// or a multiple of 32
        threads: AutoOr<u32> = auto, in THREADS;
    }
}

params! {
    /// The parameter `teb-vector` takes beyond [`TebParams`].
    struct TebVectorParams {
        /// rows with at least this many entries are summed by the whole CTA (strided lanes,
        /// fixed-order CTA reduction); shorter rows take one thread each as in teb (>= 1)
        long_row: u32 = 256, in 1..=i32::MAX as u32;
    }
}

const PARAMS: &[ParamSpec] = TebParams::SPECS;
const VECTOR_SPECS: [ParamSpec; 6] =
    concat_specs(TebParams::SPEC_ARRAY, TebVectorParams::SPEC_ARRAY);
const VECTOR_PARAMS: &[ParamSpec] = &VECTOR_SPECS;

/// `bln_range=lo..hi`: the window of block counts that `bln=auto` searches.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Span(usize, usize);

impl ParamValue for Span {
    type Num = Infallible;
    fn parse_param(s: &str) -> Option<Self> {
        let (a, b) = s.split_once("..")?;
        let (lo, hi) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
        (lo >= 1 && lo <= hi).then_some(Span(lo, hi))
    }
    fn number(&self) -> Option<Infallible> {
        None
    }
    fn allowed<R: ParamRange<Infallible>>(_: &R) -> String {
        "lo..hi (1 <= lo <= hi)".into()
    }
}

/// Finite numbers of at least the given one (`k`).
struct FiniteFrom(f64);

impl ParamRange<f64> for FiniteFrom {
    fn admits(&self, n: f64) -> bool {
        n.is_finite() && n >= self.0
    }
    fn phrase(&self, _: &str) -> String {
        format!("a finite number >= {}", self.0)
    }
}

method! {
    /// The registry entry of `teb`: the paper's method (Alg. 3, a thread per row).
    pub struct Teb {
        name: NAME,
        summary: "GPU: TEB, rows sorted and merged into equal-nnz blocks, a CTA per block and \
                  a thread per row",
        source: "Wang et al., TEB (teb.md), §3.1 Alg. 1-2, §3.2 Alg. 3",
        deterministic: true,
        params: PARAMS,
    }
    fn prepare(csr, params) {
        Ok(Box::new(build(csr, params)?))
    }
}

method! {
    /// The registry entry of `teb-vector`: the TEB layout and build, with rows of at least
    /// `long_row` entries summed by their whole CTA (ours, issue #7; see the module doc).
    pub struct TebVector {
        name: VECTOR_NAME,
        summary: "GPU: TEB blocks, rows of >= long_row entries summed by the whole CTA (the \
                  paper's thread per row walks a hub row alone, far slower than cuSPARSE on \
                  power-law matrices), the other rows a thread each",
        source: "Wang et al., TEB (teb.md), §3.1 Alg. 1-2; kernel: Alg. 3 with a CTA per \
                 long row (spmvkit, issue #7)",
        deterministic: true,
        params: VECTOR_PARAMS,
    }
    fn prepare(csr, params) {
        Ok(Box::new(build_vector(csr, params)?))
    }
}

/// Parsed parameters.
struct Opts {
    k: KChoice,
    bln: Option<usize>,
    range: Option<(usize, usize)>,
    candidates: usize,
    threads: Option<u32>,
    /// `teb-vector`'s long-row threshold (None for `teb`).
    long_row: Option<u32>,
}

/// Parses the parameters of method `name` (`teb` or `teb-vector`) against its list `specs`.
fn parse(name: &str, specs: &[ParamSpec], params: &Params) -> Result<Opts> {
    let p = TebParams::from_params_in(name, specs, params)?;
    let long_row = if specs.iter().any(|s| s.key == "long_row") {
        Some(TebVectorParams::from_params_in(name, specs, params)?.long_row)
    } else {
        None
    };
    Ok(Opts {
        k: p.k.value().map_or(KChoice::Heuristic, KChoice::Fixed),
        bln: p.bln.value(),
        range: p.bln_range.value().map(|Span(lo, hi)| (lo, hi)),
        candidates: p.candidates,
        threads: p.threads.value(),
        long_row,
    })
}

/// The layout of `teb` (Fig. 15 arrays plus the original row ids).
pub struct TebLayout<T> {
    nrows: usize,
    ncols: usize,
    values: Vec<T>,
    col_idx: Vec<Idx>,
    /// First merged row of each block (blocks + 1 entries).
    blo_idx: Vec<Idx>,
    /// Row offsets in merged order (rows + 1 entries).
    row_nnz_sum: Vec<Idx>,
    /// Original row of each merged row.
    row_ids: Vec<Idx>,
    threads: u32,
    /// `teb-vector`: rows of at least this many entries are summed by their whole CTA (None:
    /// `teb`, a thread per row).
    long_row: Option<u32>,
    /// Blocks from the merge (the rest hold only empty rows).
    merge_blocks: usize,
    sel: Option<Selection>,
    stages: Vec<(&'static str, Duration)>,
}

impl<T> TebLayout<T> {
    pub fn values(&self) -> &[T] {
        &self.values
    }
    pub fn col_idx(&self) -> &[Idx] {
        &self.col_idx
    }
    pub fn blo_idx(&self) -> &[Idx] {
        &self.blo_idx
    }
    pub fn row_nnz_sum(&self) -> &[Idx] {
        &self.row_nnz_sum
    }
    pub fn row_ids(&self) -> &[Idx] {
        &self.row_ids
    }
    /// Threads per CTA.
    pub fn threads(&self) -> u32 {
        self.threads
    }
    /// `teb-vector`'s long-row threshold (None for `teb`).
    pub fn long_row(&self) -> Option<u32> {
        self.long_row
    }
    /// The chosen bLN, k, Threshold (None when there are no non-empty rows).
    pub fn selection(&self) -> Option<&Selection> {
        self.sel.as_ref()
    }
    fn nblocks(&self) -> usize {
        self.blo_idx.len() - 1
    }
}

/// Builds the TEB layout of `csr` for `teb`.
pub fn build<T: Scalar>(csr: &Csr<T>, params: &Params) -> Result<TebLayout<T>> {
    build_with(csr, parse(NAME, PARAMS, params)?)
}

/// Builds the TEB layout of `csr` for `teb-vector` (the same layout, plus `long_row`).
pub fn build_vector<T: Scalar>(csr: &Csr<T>, params: &Params) -> Result<TebLayout<T>> {
    build_with(csr, parse(VECTOR_NAME, VECTOR_PARAMS, params)?)
}

fn build_with<T: Scalar>(csr: &Csr<T>, o: Opts) -> Result<TebLayout<T>> {
    let m = csr.nrows();
    let rp = csr.row_ptr();
    let mut stages = Vec::new();

    // 1. sort
    let t0 = Instant::now();
    let lens: Vec<u64> = (0..m)
        .into_par_iter()
        .map(|r| (rp[r + 1] - rp[r]) as u64)
        .collect();
    // Keys (u32::MAX − length, row): unique, so an unstable sort gives the stable order.
    let mut keys: Vec<u64> = (0..m)
        .into_par_iter()
        .filter(|&r| lens[r] > 0)
        .map(|r| ((u32::MAX as u64 - lens[r]) << 32) | r as u64)
        .collect();
    keys.par_sort_unstable();
    let order: Vec<Idx> = keys.par_iter().map(|&k| k as u32).collect();
    drop(keys);
    let empty: Vec<Idx> = (0..m as Idx)
        .into_par_iter()
        .filter(|&r| lens[r as usize] == 0)
        .collect();
    let sorted: Vec<u64> = order.par_iter().map(|&r| lens[r as usize]).collect();
    let lengths = Lengths::from_sorted_desc(&sorted);
    stages.push(("sort rows", t0.elapsed()));

    // 2. threshold selection and 3. bLN search
    let rows = order.len();
    let sel = if rows == 0 {
        stages.push(("threshold selection", Duration::ZERO));
        stages.push(("bLN search", Duration::ZERO));
        None
    } else {
        let (choice, upto) = match o.bln {
            Some(b) => (BlnChoice::Fixed(b), b),
            None => {
                let (lo, hi) = o.range.unwrap_or_else(|| default_window(rows));
                let hi = hi.max(lo);
                (
                    BlnChoice::Search {
                        lo,
                        hi,
                        candidates: o.candidates,
                    },
                    hi,
                )
            }
        };
        let t1 = Instant::now();
        let critical = lengths.critical_for(o.k, upto);
        stages.push(("threshold selection", t1.elapsed()));
        let t2 = Instant::now();
        let sel = lengths.select(o.k, choice, critical);
        stages.push(("bLN search", t2.elapsed()));
        Some(sel)
    };

    // 4. merge (Alg. 2) + layout
    let t3 = Instant::now();
    let mut merged: Vec<Idx> = Vec::with_capacity(m);
    let mut blo_idx: Vec<Idx> = vec![0];
    if let Some(sel) = &sel {
        let (mut begin, mut end) = (0usize, rows);
        for b in 0..sel.bln {
            if begin >= end {
                break;
            }
            if b + 1 == sel.bln {
                merged.extend_from_slice(&order[begin..end]);
                begin = end;
            } else {
                let mut sum = sorted[begin];
                merged.push(order[begin]);
                begin += 1;
                while begin < end && select::fits(sum, sorted[end - 1], sel.threshold) {
                    sum += sorted[end - 1];
                    merged.push(order[end - 1]);
                    end -= 1;
                }
            }
            blo_idx.push(merged.len() as Idx);
        }
    }
    let merge_blocks = blo_idx.len() - 1;
    let largest = blo_idx
        .windows(2)
        .map(|w| (w[1] - w[0]) as usize)
        .max()
        .unwrap_or(0);
    let threads = o
        .threads
        .unwrap_or_else(|| (largest.div_ceil(32) * 32).clamp(32, 1024) as u32);
    for chunk in empty.chunks(threads as usize) {
        merged.extend_from_slice(chunk);
        blo_idx.push(merged.len() as Idx);
    }
    debug_assert_eq!(merged.len(), m);
    let mut row_nnz_sum: Vec<Idx> = Vec::with_capacity(m + 1);
    row_nnz_sum.push(0);
    let mut acc: Idx = 0;
    for &r in &merged {
        acc += rp[r as usize + 1] - rp[r as usize];
        row_nnz_sum.push(acc);
    }
    let mut values: Vec<T> = vec![T::zero(); csr.nnz()];
    let mut col_idx: Vec<Idx> = vec![0; csr.nnz()];
    rayon::join(
        || gather(&merged, &row_nnz_sum, rp, csr.vals(), &mut values),
        || gather(&merged, &row_nnz_sum, rp, csr.col_idx(), &mut col_idx),
    );
    stages.push(("merge + layout", t3.elapsed()));

    Ok(TebLayout {
        nrows: m,
        ncols: csr.ncols(),
        values,
        col_idx,
        blo_idx,
        row_nnz_sum,
        row_ids: merged,
        threads,
        long_row: o.long_row,
        merge_blocks,
        sel,
        stages,
    })
}

/// Copies the rows `order` of a CSR array `src` (row offsets `src_ptr`) into `out`, whose row
/// offsets are `offs` (relative to `offs[0]`); parallel by halving.
fn gather<V: Copy + Send + Sync>(
    order: &[Idx],
    offs: &[Idx],
    src_ptr: &[Idx],
    src: &[V],
    out: &mut [V],
) {
    const GRAIN: usize = 8192;
    if order.len() <= GRAIN {
        let mut o = 0usize;
        for &r in order {
            let (s, e) = (
                src_ptr[r as usize] as usize,
                src_ptr[r as usize + 1] as usize,
            );
            out[o..o + e - s].copy_from_slice(&src[s..e]);
            o += e - s;
        }
        return;
    }
    let mid = order.len() / 2;
    let (a, b) = out.split_at_mut((offs[mid] - offs[0]) as usize);
    rayon::join(
        || gather(&order[..mid], &offs[..=mid], src_ptr, src, a),
        || gather(&order[mid..], &offs[mid..], src_ptr, src, b),
    );
}

/// The default bLN window for `rows` non-empty rows: mean rows per block in [64, 1024].
pub fn default_window(rows: usize) -> (usize, usize) {
    let lo = rows.div_ceil(ROWS_PER_BLOCK_MAX).max(2).min(rows.max(1));
    let hi = rows.div_ceil(ROWS_PER_BLOCK_MIN).max(lo).min(rows.max(1));
    (lo, hi.max(lo))
}

impl<T: Scalar> Layout<T> for TebLayout<T> {
    fn values_mut(&mut self) -> Option<&mut [T]> {
        Some(&mut self.values)
    }
    fn footprint_bytes(&self) -> usize {
        self.values.len() * T::BYTES
            + (self.col_idx.len()
                + self.blo_idx.len()
                + self.row_nnz_sum.len()
                + self.row_ids.len())
                * std::mem::size_of::<Idx>()
    }

    forward! { run_cpu, upload }

    fn prep_stages(&self) -> Vec<(&'static str, Duration)> {
        self.stages.clone()
    }

    fn notes(&self) -> Vec<(String, String)> {
        let mut v = vec![
            ("blocks".into(), self.nblocks().to_string()),
            ("merged blocks".into(), self.merge_blocks.to_string()),
            ("threads per block".into(), self.threads.to_string()),
        ];
        if let Some(lr) = self.long_row {
            let long = self
                .row_nnz_sum
                .windows(2)
                .filter(|w| w[1] - w[0] >= lr)
                .count();
            v.push(("long_row".into(), lr.to_string()));
            v.push(("rows summed per CTA".into(), long.to_string()));
        }
        if let Some(s) = &self.sel {
            v.push(("bLN".into(), s.bln.to_string()));
            v.push(("k".into(), format!("{}", s.k)));
            v.push(("threshold".into(), format!("{:.3}", s.threshold)));
            v.push(("block nnz variance".into(), format!("{:.4}", s.variance)));
            v.push((
                "bLN critical".into(),
                s.critical.map_or("none".into(), |c| c.to_string()),
            ));
            v.push((
                "bLN window".into(),
                format!("{}..{}", s.window.0, s.window.1),
            ));
            v.push(("bLN evaluated".into(), s.evaluated.to_string()));
        }
        v
    }
}

#[cfg(test)]
mod tests;
