//! `csr-overlap` and `csr-full-overlap`: CSR-Partial-Overlap and CSR-Full-Overlap of Zeng & Zou,
//! "Leveraging Memory Copy Overlap for Efficient Sparse Matrix-Vector Multiplication on GPUs",
//! Electronics 12(17) 3687, 2023 (`papers/csr-overlap.md`).
//!
//! **Partial** (§4.1, §4.3):
//! - *Dynamic batch partition* (§4.1.1, Alg. 3, on the host): rows longer than `max_batch_size`
//!   are "extra-long" and go to `long_row_infos`; the other rows are packed in order into batches
//!   of at most `max_batch_size` nonzeros, never splitting a row, a long row closing the batch.
//!   One addition of ours, which never changes a matrix without empty rows: a batch also closes
//!   at `max_batch_size` rows, so a run of empty rows cannot pile millions of rows on one CTA.
//!   The greedy walk costs one binary search on `row_ptr` per batch, and the long-row scan is
//!   parallel, so it never touches every row serially.
//! - *Two-stage pipeline* (§4.1.2, Alg. 4): each of B CTAs takes ⌈batches/B⌉ consecutive
//!   batches (B = `ctas_per_sm` × the SM count, fixed at upload). Shared memory holds two
//!   buffers of values and column indices (S = 2·max_batch_size·(sizeof val + sizeof col), plus
//!   up to 16 bytes of alignment slack per buffer); batch i+1 is copied global→shared with
//!   `cp.async` (16-byte copies for the aligned middle, 4/8-byte copies for an unaligned head and
//!   tail) while batch i is computed; commit and wait groups order them.
//! - *Dynamic thread distribution* (§4.1.3, Alg. 5/6): each batch is computed by vectors of 1–32
//!   lanes, one row per vector at a time, the size picked from the batch's mean row length
//!   ⌊nnz/rows⌋ by `switch_points`, or forced with `vector`. The default points were
//!   re-measured on an H200 as §5.2 does (they differ from Table 2's A40 values, which remain
//!   available as [`PAPER_SWITCH_POINTS`]; see docs/results/overlap-switch-points.md).
//!   The choice is made on the host into one byte per batch, which the kernel reads.
//! - *Extra-long rows* (§4.3, Alg. 9): one CTA per long row, warp partial sums in shared
//!   memory, the first warp adds them. They run in the same launch as the batches: the first
//!   CTAs of the grid take the long rows (the heaviest work starts first), the rest the batches.
//!   A row of a hundred thousand nonzeros then keeps one CTA busy long after the others, so
//!   `long_chunk` = N (default 4096; 0 = the paper) cuts long rows into CTA tasks of N
//!   nonzeros: each writes its partial sum, and the CTA that finishes a row last (an atomic
//!   ticket per row, reset by that CTA) adds the row's partials in a fixed order and writes y.
//!   Still one launch, still deterministic; nothing changes where no row is long
//!   (measurements: `docs/methods/csr-overlap.md`).
//!
//! **Full** (§4.2, Alg. 7/8): the same kernel, but the timed call also copies the values and
//! column indices from pinned host memory: nnz is cut into `stream_num` "big batches" of
//! ⌈nnz/stream_num⌉ nonzeros; big batch i is copied with `cuMemcpyHtoDAsync` on its own stream and
//! then computed by a launch on that stream over the batches whose last nonzero it holds (Alg. 7:
//! a batch cut by a big-batch boundary goes to the later big batch), so the kernel of big batch
//! i overlaps the copy of big batch i+1. A kernel also waits for the copies of all earlier big
//! batches (a batch cut by a boundary needs them; the copies run in order on the one copy engine
//! anyway), and the long rows run in the last launch, after every copy (§4.3). The call is
//! ordered after earlier work on `gpu.stream()` and later work waits for all of it (events).
//! Alg. 7's search drops batches of empty rows at the very start (their last nonzero index is 0)
//! and launches nothing when nnz = 0; we assign such batches to the first big batch instead.
//!
//! Both are deterministic: each row is summed by fixed lanes in a fixed order (fused
//! multiply-adds, then a shuffle butterfly), whichever CTA takes it; no atomics.

mod cpu;
mod gpu;

use std::convert::Infallible;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::matrix::Csr;
use crate::methods::common::checks::THREADS;
use crate::methods::common::room::{forward, method, room_kernel};
use crate::methods::params::{concat_specs, one_of, params, AutoOr, ParamRange, ParamValue};
use crate::methods::{Layout, ParamSpec, Params};
use crate::scalar::{Idx, Scalar};

room_kernel!(
    "csr-overlap",
    [gpu::OverlapArgs::params_entry("csr_overlap")]
);

const NAME: &str = "csr-overlap";
const NAME_FULL: &str = "csr-full-overlap";

/// Table 2 of the paper (A40): the mean row lengths at which the vector size doubles.
pub const PAPER_SWITCH_POINTS: [u32; 5] = [17, 34, 64, 122, 216];

/// Our default, re-measured on an H200 with §5.2's protocol (docs/results/
/// overlap-switch-points.md): 1 lane below a mean of 32, 2 below 64, 4 below 128, 8 up to the
/// end of the measured grid (256), 32 beyond it.
pub const MEASURED_SWITCH_POINTS: [u32; 5] = [32, 64, 128, 257, 257];

/// Dynamic shared memory a CTA may use without opting in (48 KiB), less the static array of 32
/// warp sums used for long rows.
const MAX_DYNAMIC_SMEM: usize = 48 * 1024 - 32 * 8;

params! {
    /// The parameters of `csr-overlap` (and the first ones of `csr-full-overlap`), as given
    /// ([`Config`] adds the shared-memory limit of the precision).
    struct OverlapParams {
        /// most nonzeros in a batch (§4.1.1); longer rows are extra-long. The paper gives no number
        /// beyond 'larger than 1024' (§4.1.1); 1024 keeps S within 48 KiB in f64
        max_batch_size: u32 = 1024, in 1..=1 << 20;
        /// threads per CTA, T (§4.1.2: the CUDA cores of one SM, 128 on the A40 and on Hopper); a
        /// multiple of 32, at most 1024
        threads: u32 = 128, in THREADS;
        /// B = ctas_per_sm x SM count CTAs share the batches (§4.1.2: 'an integer multiple of the
        /// number of SMs'; the multiple is ours), 1..=64
        ctas_per_sm: u32 = 8, in 1..=64;
        /// five non-decreasing mean row lengths where the vector size goes 1->2->4->8->16->32;
        /// default re-measured on an H200 by §5.2's protocol
        /// (docs/results/overlap-switch-points.md; 8 lanes were best up to 256, so 16 and 32 start
        /// past the grid); the paper's Table 2 (A40) is 17,34,64,122,216
        switch_points: SwitchPoints = "32,64,128,257,257";
        /// lanes per row: auto (by switch_points, per batch) or 1, 2, 4, 8, 16, 32 for every batch
        /// (§5.2's forced sizes)
        vector: AutoOr<u32> = auto, in one_of([1, 2, 4, 8, 16, 32]);
        /// nonzeros per CTA on an extra-long row: N >= 256 (default 4096, our extension for
        /// power-law rows) cuts a long row into CTAs of N nonzeros, the last to finish adds their
        /// partial sums in a fixed order (deterministic); 0 = the paper's one CTA per row (Alg. 9)
        long_chunk: u32 = 4096, in ZeroOrFrom(256);
    }
}

params! {
    /// The parameter `csr-full-overlap` takes beyond [`OverlapParams`].
    struct FullParams {
        /// big batches, one stream each (§5.4 uses 2), 1..=16
        stream_num: usize = 2, in 1..=16;
    }
}

const PARAMS: &[ParamSpec] = OverlapParams::SPECS;
const FULL_SPECS: [ParamSpec; 7] = concat_specs(OverlapParams::SPEC_ARRAY, FullParams::SPEC_ARRAY);
const PARAMS_FULL: &[ParamSpec] = &FULL_SPECS;

/// `switch_points`: five non-decreasing mean row lengths ([`parse_switch_points`]).
#[derive(Clone, Copy, Debug, PartialEq)]
struct SwitchPoints([u32; 5]);

impl ParamValue for SwitchPoints {
    type Num = Infallible;
    fn parse_param(s: &str) -> Option<Self> {
        parse_switch_points(s).ok().map(SwitchPoints)
    }
    fn number(&self) -> Option<Infallible> {
        None
    }
    fn allowed<R: ParamRange<Infallible>>(_: &R) -> String {
        "five non-decreasing comma-separated integers".into()
    }
}

/// 0, or `n` and above (`long_chunk`).
struct ZeroOrFrom(u32);

impl ParamRange<u32> for ZeroOrFrom {
    fn admits(&self, n: u32) -> bool {
        n == 0 || n >= self.0
    }
    fn phrase(&self, noun: &str) -> String {
        format!("0 or {noun} of at least {}", self.0)
    }
}

method! {
    /// The registry entry of `csr-overlap` (CSR-Partial-Overlap).
    pub struct CsrOverlap {
        name: NAME,
        summary: "GPU: CSR-Partial-Overlap, row batches double-buffered into shared memory \
                  with cp.async, 1-32 lanes per row chosen per batch, a CTA per long row",
        source: "Zeng & Zou, Electronics 12:3687 (2023), §4.1 (Alg. 3-6), §4.3 (Alg. 9)",
        deterministic: true,
        params: PARAMS,
    }
    fn prepare(csr, params) {
        let cfg = Config::parse::<T>(NAME, PARAMS, params)?;
        Ok(Box::new(OverlapLayout::build(csr, cfg, None)))
    }
}

method! {
    /// The registry entry of `csr-full-overlap` (CSR-Full-Overlap).
    pub struct CsrFullOverlap {
        name: NAME_FULL,
        summary: "GPU: CSR-Full-Overlap. ITS TIME INCLUDES THE HOST-TO-DEVICE COPY of values \
                  and column indices (pinned, in stream_num big batches on their own streams, \
                  overlapped with the csr-overlap kernel), so it is not comparable with plain \
                  kernel times: compare by Eq. 2 against cuSPARSE + the same copy",
        source: "Zeng & Zou, Electronics 12:3687 (2023), §4.2 (Alg. 7-8), §5.4-5.5",
        deterministic: true,
        params: PARAMS_FULL,
    }
    fn prepare(csr, params) {
        let cfg = Config::parse::<T>(NAME_FULL, PARAMS_FULL, params)?;
        let streams = FullParams::from_params_in(NAME_FULL, PARAMS_FULL, params)?.stream_num;
        Ok(Box::new(OverlapLayout::build(csr, cfg, Some(streams))))
    }
}

fn param_err(method: &str, key: &str, msg: String) -> Error {
    Error::Param {
        method: method.into(),
        key: key.into(),
        msg,
    }
}

/// The tuning data of one layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    pub max_batch_size: u32,
    pub threads: u32,
    pub ctas_per_sm: u32,
    pub switch_points: [u32; 5],
    /// log2 of a forced vector size, or `None` for the per-batch choice.
    pub forced_vlog: Option<u8>,
    /// Nonzeros per CTA on a long row; 0: one CTA per long row (the paper).
    pub long_chunk: u32,
}

impl Config {
    fn parse<T: Scalar>(name: &str, specs: &[ParamSpec], p: &Params) -> Result<Config> {
        let o = OverlapParams::from_params_in(name, specs, p)?;
        let smem = smem_bytes::<T>(o.max_batch_size);
        if smem > MAX_DYNAMIC_SMEM {
            return Err(param_err(
                name,
                "max_batch_size",
                format!(
                    "{} needs {smem} bytes of shared memory in {}, more than \
                     {MAX_DYNAMIC_SMEM}",
                    o.max_batch_size,
                    T::PRECISION
                ),
            ));
        }
        Ok(Config {
            max_batch_size: o.max_batch_size,
            threads: o.threads,
            ctas_per_sm: o.ctas_per_sm,
            switch_points: o.switch_points.0,
            forced_vlog: o.vector.value().map(|v| v.trailing_zeros() as u8),
            long_chunk: o.long_chunk,
        })
    }
}

/// Parses five non-decreasing comma-separated switch points.
pub fn parse_switch_points(s: &str) -> std::result::Result<[u32; 5], String> {
    let v: Vec<u32> = s
        .split(',')
        .map(|t| t.trim().parse::<u32>().map_err(|e| e.to_string()))
        .collect::<std::result::Result<_, _>>()?;
    let sp: [u32; 5] = v
        .try_into()
        .map_err(|v: Vec<u32>| format!("{} values, want 5", v.len()))?;
    if sp.windows(2).any(|w| w[0] > w[1]) {
        return Err("not non-decreasing".into());
    }
    Ok(sp)
}

/// Elements of one shared-memory buffer holding `max_batch` entries of `elem` bytes, with room to
/// start at the 16-byte boundary below the batch's first entry, rounded to whole 16 bytes.
pub(crate) fn buffer_cap(max_batch: u32, elem: usize) -> u32 {
    let per16 = (16 / elem) as u32;
    (max_batch + per16 - 1).div_ceil(per16) * per16
}

/// Dynamic shared memory of one CTA: two value buffers and two column buffers.
pub(crate) fn smem_bytes<T: Scalar>(max_batch: u32) -> usize {
    2 * (buffer_cap(max_batch, T::BYTES) as usize * T::BYTES
        + buffer_cap(max_batch, 4) as usize * 4)
}

/// The result of Alg. 3: batches as (start_row, end_row) and the extra-long rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Partition {
    /// `batch_infos`: (start_row, end_row), end exclusive, in row order.
    pub batches: Vec<(Idx, Idx)>,
    /// `long_row_infos`: rows longer than `max_batch_size`, ascending.
    pub long_rows: Vec<Idx>,
}

/// Alg. 3: rows longer than `max_batch` go to `long_rows`; the others are packed in order into
/// batches of at most `max_batch` nonzeros (and at most `max_rows` rows); a long row closes the
/// current batch. Greedy, as the paper's stack: a batch starting at row i runs to the last j with
/// `row_ptr[j] − row_ptr[i] ≤ max_batch` (a long row can never fit), found by binary search.
pub fn partition(row_ptr: &[Idx], max_batch: u32, max_rows: u32) -> Partition {
    let m = row_ptr.len().saturating_sub(1);
    let long_rows: Vec<Idx> = (0..m)
        .into_par_iter()
        .filter(|&i| row_ptr[i + 1] - row_ptr[i] > max_batch)
        .map(|i| i as Idx)
        .collect();
    let mut batches = Vec::new();
    let mut next_long = long_rows.iter().peekable();
    let mut i = 0usize;
    let max_rows = max_rows.max(1) as usize;
    while i < m {
        if next_long.peek().is_some_and(|&&l| l as usize == i) {
            next_long.next();
            i += 1;
            continue;
        }
        let limit = row_ptr[i] as u64 + max_batch as u64;
        // First j > i with row_ptr[j] > limit; the batch is [i, j - 1).
        let hi = (i + max_rows + 1).min(m + 1);
        let j = i + 1 + row_ptr[i + 1..hi].partition_point(|&p| p as u64 <= limit);
        let end = (j - 1).max(i + 1).min(i + max_rows);
        batches.push((i as Idx, end as Idx));
        i = end;
    }
    Partition { batches, long_rows }
}

/// Alg. 6 on the host: log2 of the vector size for a batch of `nnz` entries in `rows` rows, the
/// number of switch points ≤ ⌊nnz/rows⌋.
pub fn vector_log2(nnz: u64, rows: u64, switch_points: &[u32; 5]) -> u8 {
    let mean = nnz.checked_div(rows).unwrap_or(0);
    switch_points
        .iter()
        .filter(|&&sp| mean >= sp as u64)
        .count() as u8
}

/// The work on long rows: with `chunk` = 0 one task per row (Alg. 9), else the row cut into
/// tasks of `chunk` nonzeros. Returns (tasks as [long-row index, start, end, chunk index],
/// first task of each long row, task count of each long row).
pub fn long_tasks(
    row_ptr: &[Idx],
    long_rows: &[Idx],
    chunk: u32,
) -> (Vec<Idx>, Vec<Idx>, Vec<Idx>) {
    let mut tasks = Vec::new();
    let mut first = Vec::with_capacity(long_rows.len());
    let mut count = Vec::with_capacity(long_rows.len());
    for (lr, &r) in long_rows.iter().enumerate() {
        let (s, e) = (row_ptr[r as usize], row_ptr[r as usize + 1]);
        let step = if chunk == 0 { e - s } else { chunk }.max(1);
        first.push((tasks.len() / 4) as Idx);
        let mut k = 0;
        let mut c = s;
        while c < e {
            let ce = c.saturating_add(step).min(e);
            tasks.extend_from_slice(&[lr as Idx, c, ce, k]);
            k += 1;
            c = ce;
        }
        count.push(k);
    }
    (tasks, first, count)
}

/// One big batch of CSR-Full-Overlap (Alg. 7): a range of nonzeros copied on its own stream and
/// the range of batches its kernel computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BigBatch {
    pub start_nnz: usize,
    pub end_nnz: usize,
    pub start_batch: usize,
    pub end_batch: usize,
}

/// Alg. 7: nnz cut into big batches of ⌈nnz/stream_num⌉; batch j goes to the big batch holding
/// its last nonzero (so a batch cut by a boundary goes to the later one); batches without
/// nonzeros at the very start go to the first (Alg. 7 drops them). At least one big batch.
pub fn big_batches(row_ptr: &[Idx], batches: &[(Idx, Idx)], stream_num: usize) -> Vec<BigBatch> {
    let nnz = row_ptr.last().copied().unwrap_or(0) as usize;
    let stream_num = stream_num.max(1);
    let size = nnz.div_ceil(stream_num).max(1);
    let count = nnz.div_ceil(size).max(1);
    let owner = |&(_, end): &(Idx, Idx)| (row_ptr[end as usize] as usize).saturating_sub(1) / size;
    let mut out = Vec::with_capacity(count);
    let mut j = 0;
    for i in 0..count {
        let start_batch = j;
        while j < batches.len() && (owner(&batches[j]) <= i || i + 1 == count) {
            j += 1;
        }
        out.push(BigBatch {
            start_nnz: (i * size).min(nnz),
            end_nnz: ((i + 1) * size).min(nnz),
            start_batch,
            end_batch: j,
        });
    }
    out
}

/// The layout of both methods: the CSR matrix, its batches and long rows, the vector size of
/// every batch, and (Full only) the big batches.
pub struct OverlapLayout<T> {
    a: Csr<T>,
    cfg: Config,
    part: Partition,
    /// log2 of each batch's vector size.
    vlog: Vec<u8>,
    /// Long-row tasks, 4 entries each: long-row index, first and end nonzero, chunk index.
    long_tasks: Vec<Idx>,
    /// Per long row: its first task and its number of tasks (chunks).
    long_first: Vec<Idx>,
    long_count: Vec<Idx>,
    /// CSR-Full-Overlap's big batches; `None` for Partial.
    big: Option<Vec<BigBatch>>,
    stages: Vec<(&'static str, Duration)>,
}

impl<T: Scalar> OverlapLayout<T> {
    fn build(a: &Csr<T>, cfg: Config, streams: Option<usize>) -> OverlapLayout<T> {
        let rp = a.row_ptr();
        let t0 = Instant::now();
        let part = partition(rp, cfg.max_batch_size, cfg.max_batch_size);
        let t1 = Instant::now();
        let vlog: Vec<u8> = part
            .batches
            .par_iter()
            .map(|&(s, e)| match cfg.forced_vlog {
                Some(v) => v,
                None => vector_log2(
                    (rp[e as usize] - rp[s as usize]) as u64,
                    (e - s) as u64,
                    &cfg.switch_points,
                ),
            })
            .collect();
        let t2 = Instant::now();
        let (long_tasks, long_first, long_count) = long_tasks(rp, &part.long_rows, cfg.long_chunk);
        let big = streams.map(|s| big_batches(rp, &part.batches, s));
        let mut stages = vec![("batch partition", t1 - t0), ("vector sizes", t2 - t1)];
        if big.is_some() {
            stages.push(("big batches", t2.elapsed()));
        }
        OverlapLayout {
            a: a.clone(),
            cfg,
            part,
            vlog,
            long_tasks,
            long_first,
            long_count,
            big,
            stages,
        }
    }

    /// Number of long-row tasks (CTAs' worth of work on long rows).
    fn ntasks(&self) -> usize {
        self.long_tasks.len() / 4
    }

    /// The batches and long rows (Alg. 3's `batch_infos` and `long_row_infos`).
    pub fn partition(&self) -> &Partition {
        &self.part
    }

    /// Batches per CTA when `ctas` CTAs share `n` batches: ⌈n/ctas⌉ (at least 1).
    fn per_cta(n: usize, ctas: usize) -> usize {
        n.div_ceil(ctas.max(1)).max(1)
    }

    /// Interleaved (start, end) rows of every batch, as the kernel reads them.
    fn batch_rows_flat(&self) -> Vec<Idx> {
        self.part
            .batches
            .iter()
            .flat_map(|&(s, e)| [s, e])
            .collect()
    }

    fn meta_bytes(&self) -> usize {
        let nlong = self.part.long_rows.len();
        let partials = if self.ntasks() > nlong {
            self.ntasks() * T::BYTES + nlong * 4
        } else {
            0
        };
        self.part.batches.len() * (8 + 1) + nlong * 12 + self.long_tasks.len() * 4 + partials
    }
}

impl<T: Scalar> Layout<T> for OverlapLayout<T> {
    forward! { values_mut of a, run_cpu, upload }

    fn footprint_bytes(&self) -> usize {
        self.a.bytes() + self.meta_bytes()
    }

    fn prep_stages(&self) -> Vec<(&'static str, Duration)> {
        self.stages.clone()
    }

    fn notes(&self) -> Vec<(String, String)> {
        let mut hist = [0usize; 6];
        for &v in &self.vlog {
            hist[v as usize] += 1;
        }
        let hist: Vec<String> = hist
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(v, n)| format!("{}:{n}", 1 << v))
            .collect();
        let mut out = vec![
            ("max_batch_size".into(), self.cfg.max_batch_size.to_string()),
            ("batches".into(), self.part.batches.len().to_string()),
            ("long rows".into(), self.part.long_rows.len().to_string()),
            ("long-row CTA tasks".into(), self.ntasks().to_string()),
            ("batches by vector size".into(), hist.join(" ")),
            ("threads per CTA".into(), self.cfg.threads.to_string()),
            ("CTAs per SM".into(), self.cfg.ctas_per_sm.to_string()),
            (
                "switch points".into(),
                format!("{:?}", self.cfg.switch_points),
            ),
        ];
        if let Some(big) = &self.big {
            out.push(("big batches".into(), big.len().to_string()));
            out.push((
                "timed call includes".into(),
                "host-to-device copy of values and column indices (pinned)".into(),
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests;
