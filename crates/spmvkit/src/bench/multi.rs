//! SpMM in the harness (issue #24; docs/spmm.md): `spmv bench --k 1,8,32 --layout row,col`
//! measures each method's multi-vector call ([`Plan::apply_multi`]) per (k, order) beside its
//! SpMV, and keeps the results in [`MatrixResult::multi`] (absent in older runs, which still
//! load). As for SpMV, one call is checked against the oracle before anything is timed, and
//! each timed loop is checked after it; the oracle for k vectors (`methods/spmm/cpu.rs`) is
//! computed for a sample of the vectors ([`checked_vectors`]: the first and last, both sides
//! of the warp boundaries, the middle), since k full references of a large matrix would not fit
//! in host memory; the tests check every vector.
//!
//! Figures: time per call (stream and graph, [`Plan::time_multi`]), GFLOP/s = 2·nnz·k / t,
//! the byte model for k vectors ([`multi_bytes`]: the matrix once, X and Y k times; a kernel on
//! a layout's own arrays, `csr-packed`, counts that layout's bytes: [`multi_bytes_of`]) and its
//! bytes per vector, the speed-up over k single-vector calls of the same method (its SpMV
//! record's stream time × k) and over cuSPARSE SpMM (`cusparse`'s multi record at the same k,
//! order and precision, when the run has one), and the limit for k vectors ([`multi_limit`]):
//! the SpMV limit of `bench::limits` (docs/limits.md) with the byte model for k vectors and the
//! random accesses to X behind the sectors the block's gathers touch ([`block_sectors`],
//! [`random_accesses`]), against the run's probe: row-major X rows of 16 bytes and more at the
//! probe's row-gather rate ([`Probe::row_rate`]), other gathers at its element rate
//! ([`GatherTerm`]); `spmm.md` and `spmm-limits.csv` ([`multi_limits_csv`]) name the term used.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::limits::{csv_field, limit_at, Bound, Limit};
use super::{test_vector, LaterCheck, MatrixResult, MeasureOptions, Status, Timing};
use crate::cpu::{check, oracle_spmv_par, Reference};
use crate::error::Result;
use crate::gpu::Probe;
use crate::gpu::{TimingConfig, TimingMode};
use crate::matrix::{csr_matrix_bytes, Csr, DenseOrder, MultiShape, CHUNK_ROWS, SECTOR_BYTES};
use crate::methods::spmm::cpu::column;
use crate::methods::spmm::{MultiKernel, MultiPath};
use crate::methods::{Backend, Plan, PrepareFor};
use crate::scalar::{Precision, Scalar};

/// The label of the cuSPARSE baseline's records.
pub const CUSPARSE: &str = "cusparse";

/// One (method, precision, k, order) on one matrix.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MultiResult {
    pub method: String,
    pub precision: Precision,
    pub k: usize,
    pub order: DenseOrder,
    pub status: Status,
    /// The error or reason, when not `Ok`.
    pub error: Option<String>,
    pub record: Option<MultiRecord>,
}

/// The measurement of one multi-vector call.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MultiRecord {
    /// The path the plan took (its kernel, or k single-vector calls).
    pub path: MultiPath,
    pub backend: Backend,
    /// Per call, back-to-back on one stream (CPU: wall clock).
    pub time: Timing,
    /// Per call, replayed from a CUDA graph (GPU only).
    pub graph_time: Option<Timing>,
    /// 2·nnz·k / stream time.
    pub gflops: f64,
    /// [`multi_bytes`] / stream time.
    pub gbs: f64,
    pub bytes_model: u64,
    /// [`multi_bytes`] / k.
    pub bytes_per_vector: f64,
    /// The plan's preparation and upload together, ms (the SpMV record's `prep_ms` + `upload_ms`;
    /// the ordering included), which break-even counts.
    pub prep_ms: f64,
    /// Making the multi-vector state of this (k, order) ([`Plan::prepare_multi`]), ms.
    pub setup_ms: f64,
    /// The worst relative error of the checked call over the checked vectors; `None` for NaN.
    pub max_rel_err: Option<f64>,
    pub verified: bool,
    /// Which vectors were checked against the oracle.
    pub checked_vectors: Vec<usize>,
    /// The checks after the timed loops (`run` is `stream`, `graph` or `cpu`; the worst vector).
    pub later_checks: Vec<LaterCheck>,
    /// k × the method's own SpMV time / this call's time.
    pub speedup_vs_single: Option<f64>,
    /// cuSPARSE SpMM's time / this call's time.
    pub speedup_vs_cusparse: Option<f64>,
    /// The 32-byte sectors of X the block's gathers touch ([`block_sectors`]): the gather term
    /// of the limit ([`multi_limit`]); absent in older runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gathers: Option<u64>,
    pub notes: Vec<(String, String)>,
}

/// Bytes a multi-vector call must move at least: the CSR matrix once (values, column indices,
/// row pointers), X (ncols × k) read and Y (nrows × k) written, `vb` bytes per value.
pub fn multi_bytes(nrows: usize, ncols: usize, nnz: usize, vb: usize, k: usize) -> u64 {
    multi_bytes_of(csr_matrix_bytes(nrows, nnz, vb), nrows, ncols, vb, k)
}

/// [`multi_bytes`] with the matrix's own bytes `matrix` in place of CSR's: a kernel on a
/// layout's own arrays (`csr-packed`) reads those once.
pub fn multi_bytes_of(matrix: u64, nrows: usize, ncols: usize, vb: usize, k: usize) -> u64 {
    let (r, c, vb, k) = (nrows as u64, ncols as u64, vb as u64, k as u64);
    matrix + k * vb * (c + r)
}

/// The 32-byte sectors of X a block's gathers touch, counted per chunk of [`CHUNK_ROWS`] rows
/// (a warp's worth, as the SpMV x-sector count of `matrix::stats`) and summed over the chunks:
/// row-major, X row j spans bytes [j·k·vb, (j+1)·k·vb), and each chunk touches the union of the
/// sector ranges of its distinct columns (k·vb/32 sectors per column once k·vb ≥ 32 bytes);
/// column-major, each vector is a separate x of the SpMV count, so k times that count. An
/// upper bound on the L2 → SM traffic for X when no sector is reused across warps.
pub fn block_sectors<T: Scalar>(a: &Csr<T>, shape: MultiShape, vb: usize) -> u64 {
    use rayon::prelude::*;
    let (rp, ci) = (a.row_ptr(), a.col_idx());
    let (n, k, sb) = (a.nrows(), shape.k as u64, SECTOR_BYTES as u64);
    // row-major: X row j's bytes; column-major: one vector's entry j
    let span = match shape.order {
        DenseOrder::Row => k * vb as u64,
        DenseOrder::Col => vb as u64,
    };
    let per_chunk = (0..n.div_ceil(CHUNK_ROWS))
        .into_par_iter()
        .with_min_len(64)
        .map_init(Vec::new, |cols: &mut Vec<u32>, c| {
            let lo = rp[c * CHUNK_ROWS] as usize;
            let hi = rp[((c + 1) * CHUNK_ROWS).min(n)] as usize;
            cols.clear();
            cols.extend_from_slice(&ci[lo..hi]);
            cols.sort_unstable();
            cols.dedup();
            // the union of the sorted columns' sector ranges
            let (mut count, mut last) = (0u64, None::<u64>);
            for &j in cols.iter() {
                let (s0, s1) = (j as u64 * span / sb, ((j as u64 + 1) * span - 1) / sb);
                let from = last.map_or(s0, |l| s0.max(l + 1));
                if s1 >= from {
                    count += s1 - from + 1;
                    last = Some(s1);
                }
            }
            count
        })
        .sum::<u64>();
    match shape.order {
        DenseOrder::Row => per_chunk,
        DenseOrder::Col => per_chunk * k,
    }
}

/// The narrowest X row, bytes, whose gathers the k-vector limit prices at the probe's
/// row-gather rate (the narrowest row the probe measures, [`crate::gpu::probe::ROW_BYTES`]).
pub const MIN_ROW_GATHER_BYTES: u64 = 16;

/// The rate the gather term of a k-vector limit was taken at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GatherTerm {
    /// Each access one element of this many bytes at the probe's element gather rate
    /// ([`Probe::gather_rate`]): column-major, or row-major rows under 16 bytes.
    Elements(u32),
    /// Each access one X row of this many bytes at the probe's row-gather rate
    /// ([`Probe::row_rate`]).
    Rows(u64),
    /// X rows of `row` bytes (16 or more) whose size the probe did not measure (a run made before
    /// the row gathers): the element rule, each access one `elem`-byte gather, which can fall
    /// below the time DRAM needs to deliver the rows.
    Unmeasured { row: u64, elem: u32 },
}

/// The note of a report whose k-vector limits priced row gathers at the element rate.
pub const OLD_PROBE_NOTE: &str = "old probe: row gathers not measured";

impl GatherTerm {
    /// `8-byte gathers`, `256-byte row gathers`, `8-byte gathers (old probe)`.
    pub fn name(self) -> String {
        match self {
            GatherTerm::Elements(e) => format!("{e}-byte gathers"),
            GatherTerm::Rows(r) => format!("{r}-byte row gathers"),
            GatherTerm::Unmeasured { elem, .. } => format!("{elem}-byte gathers (old probe)"),
        }
    }

    /// The rule for the CSV: `elements`, `rows` or `elements, old probe`.
    pub fn rule(self) -> &'static str {
        match self {
            GatherTerm::Elements(_) => "elements",
            GatherTerm::Rows(_) => "rows",
            GatherTerm::Unmeasured { .. } => "elements, old probe",
        }
    }
}

/// A k-vector limit ([`multi_limit`]) and how its gather term was priced.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MultiLimit {
    pub limit: Limit,
    pub gathers: GatherTerm,
    /// The gather term's rate, 10⁹ accesses per second (`None`: the probe has none).
    pub rate_g: Option<f64>,
}

impl MultiLimit {
    /// The binding term as the report names it: `bytes`, or the gather term's
    /// [`GatherTerm::name`].
    pub fn term(&self) -> String {
        match self.limit.bound {
            Bound::Bytes => "bytes".into(),
            Bound::Gathers => self.gathers.name(),
        }
    }
}

/// The limit of a multi-vector record on the device of `probe` ([`limit_at`]), t_limit =
/// max(bytes term, gather term):
/// - bytes term: the byte model for k vectors ([`MultiRecord::bytes_model`], [`multi_bytes`]:
///   the matrix once, X read once, Y written once) at the read bandwidth;
/// - gather term: the random accesses to X ([`random_accesses`] of [`MultiRecord::gathers`]) at
///   the probe's rate for a table of X's size (ncols·k values of `vb` bytes): row-major with
///   rows of k·vb ≥ [`MIN_ROW_GATHER_BYTES`] bytes, the row-gather rate for rows of k·vb bytes
///   ([`Probe::row_rate`]; [`GatherTerm::Unmeasured`] and the element rate when the probe has
///   none); otherwise the `vb`-byte element rate ([`Probe::gather_rate`]).
///
/// X's bytes are in both terms, but the limit is the larger term, not their sum: each term
/// alone is time the call needs at least (docs/limits.md, "k vectors"). `None` without a usable
/// read bandwidth.
pub fn multi_limit(
    probe: &Probe,
    rec: &MultiRecord,
    ncols: usize,
    (k, order): (usize, DenseOrder),
    vb: usize,
) -> Option<MultiLimit> {
    let row = (k as u64).saturating_mul(vb as u64);
    let x_bytes = (ncols as u64).saturating_mul(row);
    let elem = vb as u32;
    let (gathers, rate_g) = match order {
        DenseOrder::Row if row >= MIN_ROW_GATHER_BYTES => match probe.row_rate(x_bytes, row) {
            Some(rate) => (GatherTerm::Rows(row), Some(rate)),
            None => (
                GatherTerm::Unmeasured { row, elem },
                probe.gather_rate(x_bytes, elem),
            ),
        },
        _ => (GatherTerm::Elements(elem), probe.gather_rate(x_bytes, elem)),
    };
    let accesses = rec.gathers.map(|g| random_accesses(g, k, order, vb));
    let limit = limit_at(probe, rec.bytes_model, accesses, rate_g)?;
    Some(MultiLimit {
        limit,
        gathers,
        rate_g,
    })
}

/// The random accesses to X behind `sectors` touched ([`block_sectors`]): column-major, each
/// sector (a vector's entries are gathered one by one, as in SpMV); row-major, one per X row
/// once a row spans more than a sector (its k·vb bytes come as one contiguous run), that is
/// sectors × 32 ÷ (k·vb), rounded up, and one per sector for rows of a sector or less.
/// [`multi_limit`] prices a row access at the probe's rate for rows of that size; counting
/// every sector of a long row as an element gather overstated the time a call needs (cuSPARSE
/// SpMM ran at 296 % of that figure on kron:21 at k = 32).
pub fn random_accesses(sectors: u64, k: usize, order: DenseOrder, vb: usize) -> u64 {
    let row = (k as u64).saturating_mul(vb as u64);
    match order {
        DenseOrder::Row if row > SECTOR_BYTES as u64 => {
            (sectors.saturating_mul(SECTOR_BYTES as u64)).div_ceil(row)
        }
        _ => sectors,
    }
}

/// The vectors of a block of k whose results are checked against the oracle: 0, 1, 31, 32,
/// 33, k/2, k−2, k−1 (those below k, each once).
pub fn checked_vectors(k: usize) -> Vec<usize> {
    let mut v: Vec<usize> = [
        0,
        1,
        31,
        32,
        33,
        k / 2,
        k.saturating_sub(2),
        k.saturating_sub(1),
    ]
    .into_iter()
    .filter(|&c| c < k)
    .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The inputs of one (matrix, precision, shape) and the oracle's answers for the checked
/// vectors, shared by every method.
pub struct MultiProblem<T> {
    pub shape: MultiShape,
    pub alpha: T,
    pub beta: T,
    pub x: Vec<T>,
    pub y0: Vec<T>,
    /// (vector, the oracle's answer for it).
    pub refs: Vec<(usize, Reference)>,
    /// [`block_sectors`] of the matrix for this shape and precision.
    pub gathers: u64,
}

impl<T: Scalar> MultiProblem<T> {
    /// Deterministic X and Y0 in [-1, 1] and the oracle for [`checked_vectors`].
    pub fn new(a: &Csr<T>, shape: MultiShape, alpha: f64, beta: f64) -> Result<Self> {
        let (m, n) = (a.nrows(), a.ncols());
        let (xl, yl) = (shape.len(n)?, shape.len(m)?);
        shape.check("SpMM problem", (m, n), xl, yl, true)?;
        let (alpha, beta) = (T::from_f64(alpha), T::from_f64(beta));
        let x = test_vector::<T>(xl, 101);
        let y0 = test_vector::<T>(yl, 102);
        let refs = checked_vectors(shape.k)
            .into_iter()
            .map(|c| {
                let r = oracle_spmv_par(
                    a,
                    alpha,
                    &column(&x, n, shape, c),
                    beta,
                    &column(&y0, m, shape, c),
                )?;
                Ok((c, r))
            })
            .collect::<Result<_>>()?;
        Ok(MultiProblem {
            shape,
            alpha,
            beta,
            x,
            y0,
            refs,
            gathers: block_sectors(a, shape, T::BYTES),
        })
    }

    /// The worst check over the checked vectors of `y`, after `calls` calls from Y0 (1: the
    /// first call); `None` when |β| > 1 leaves nothing to expect.
    fn check(&self, y: &[T], calls: u64) -> Option<(usize, crate::cpu::Check)> {
        let m = self.refs.first().map_or(0, |(_, r)| r.y.len());
        let mut worst: Option<(usize, crate::cpu::Check)> = None;
        for (c, r) in &self.refs {
            let y0c = column(&self.y0, m, self.shape, *c);
            let expected = if calls == 1 {
                r.clone()
            } else {
                r.after_calls(self.beta, &y0c, calls)?
            };
            let got = check(&expected, &column(y, m, self.shape, *c));
            let worse = worst.is_none_or(|(_, w)| {
                (!got.ok && w.ok) || (got.ok == w.ok && got.max_rel_err > w.max_rel_err)
            });
            if worse {
                worst = Some((*c, got));
            }
        }
        worst
    }
}

/// Records the check of Y after a timed loop of `calls` calls.
fn check_later<T: Scalar>(
    rec: &mut MultiRecord,
    p: &MultiProblem<T>,
    run: &str,
    calls: u64,
    y: &[T],
) {
    match p.check(y, calls) {
        Some((c, got)) => {
            rec.verified &= got.ok;
            rec.later_checks.push(LaterCheck {
                run: format!("{run} (vector {c})"),
                calls,
                ok: got.ok,
                max_rel_err: got.max_rel_err,
                worst_row: got.worst_row,
            });
        }
        None => rec.notes.push((
            format!("{run} loop check"),
            "skipped: |β| > 1 grows y without bound".into(),
        )),
    }
}

/// Prepares `method` on `a`, then measures it ([`measure_multi_on`]).
pub fn measure_multi<T: PrepareFor>(
    a: &Csr<T>,
    method: &str,
    opts: &MeasureOptions,
    p: &MultiProblem<T>,
) -> Result<MultiRecord> {
    let mut plan = Plan::new(method, a, &opts.plan)?;
    measure_multi_on(&mut plan, a, opts, p)
}

/// Checks one multi-vector call of `p.shape` on `plan` (made from `a`) against the oracle, then
/// times repeated calls (GPU: [`Plan::time_multi`], stream and graph; CPU: a wall clock). The
/// plan's blocks are released after it ([`Plan::clear_multi_vectors`]).
pub fn measure_multi_on<T: PrepareFor>(
    plan: &mut Plan<T>,
    a: &Csr<T>,
    opts: &MeasureOptions,
    p: &MultiProblem<T>,
) -> Result<MultiRecord> {
    let rec = measure_on(plan, a, opts, p);
    plan.clear_multi_vectors();
    rec
}

fn measure_on<T: PrepareFor>(
    plan: &mut Plan<T>,
    a: &Csr<T>,
    opts: &MeasureOptions,
    p: &MultiProblem<T>,
) -> Result<MultiRecord> {
    let shape = p.shape;
    let t0 = Instant::now();
    plan.prepare_multi(shape)?;
    let setup_ms = t0.elapsed().as_secs_f64() * 1e3;
    let mut y = p.y0.clone();
    let path = plan.apply_multi(p.alpha, &p.x, p.beta, &mut y, shape)?;
    let first = p.check(&y, 1);
    // the kernel on a layout's own arrays (csr-packed, also as auto's extra candidate) moves
    // that layout's bytes, not CSR's; k = 1 through the SpMV call moves the plan's layout's.
    // Only that kernel asks for the extra layout: asking makes it when the trial has not.
    let own = match path {
        MultiPath::Kernel(MultiKernel::Spmv) => Some(plan.layout().footprint_bytes() as u64),
        MultiPath::Kernel(k @ MultiKernel::Packed) => plan
            .layout()
            .multi_layout()
            .filter(|o| o.kernel() == k)
            .or_else(|| plan.layout().multi_extra().filter(|o| o.kernel() == k))
            .map(|o| o.matrix_bytes() as u64),
        MultiPath::Kernel(_) | MultiPath::Columns => None,
    };
    let (m, n, vb, k) = (a.nrows(), a.ncols(), T::BYTES, shape.k);
    let bytes = own.map_or_else(
        || multi_bytes(m, n, a.nnz(), vb, k),
        |b| multi_bytes_of(b, m, n, vb, k),
    );
    let mut rec = MultiRecord {
        path,
        backend: plan.backend(),
        time: Timing::default(),
        graph_time: None,
        gflops: 0.0,
        gbs: 0.0,
        bytes_model: bytes,
        bytes_per_vector: bytes as f64 / shape.k as f64,
        prep_ms: plan.prep_times().total().as_secs_f64() * 1e3,
        setup_ms,
        max_rel_err: first.map(|(_, c)| c.max_rel_err).filter(|e| !e.is_nan()),
        verified: first.is_some_and(|(_, c)| c.ok),
        checked_vectors: p.refs.iter().map(|(c, _)| *c).collect(),
        later_checks: Vec::new(),
        speedup_vs_single: None,
        speedup_vs_cusparse: None,
        gathers: Some(p.gathers),
        notes: Vec::new(),
    };
    match plan.backend() {
        Backend::Cpu => {
            y.copy_from_slice(&p.y0);
            let t = Instant::now();
            plan.apply_multi(p.alpha, &p.x, p.beta, &mut y, shape)?;
            let (warmup, reps) = opts.capped(t.elapsed().as_secs_f64() * 1e6);
            for _ in 0..warmup {
                plan.apply_multi(p.alpha, &p.x, p.beta, &mut y, shape)?;
            }
            let mut samples = Vec::with_capacity(opts.samples.max(1));
            for _ in 0..opts.samples.max(1) {
                let t = Instant::now();
                for _ in 0..reps {
                    plan.apply_multi(p.alpha, &p.x, p.beta, &mut y, shape)?;
                }
                samples.push(t.elapsed().as_secs_f64() * 1e6 / reps as f64);
            }
            rec.time = Timing::from_samples(samples);
            let calls = 1 + warmup + reps * opts.samples.max(1);
            check_later(&mut rec, p, "cpu", calls as u64, &y);
        }
        Backend::Gpu => {
            let (alpha, beta) = (p.alpha, p.beta);
            let probe = TimingConfig {
                warmup: 1,
                calls: 1,
                samples: 1,
            };
            plan.set_multi_vectors(shape, Some(&p.x), Some(&p.y0))?;
            let one = plan.time_multi(TimingMode::Stream, &probe, alpha, beta)?;
            let (warmup, calls) = opts.capped(one.timing.median_us);
            let cfg = TimingConfig {
                warmup,
                calls,
                samples: opts.samples.max(1),
            };
            plan.set_multi_vectors(shape, None, Some(&p.y0))?;
            let stream = plan.time_multi(TimingMode::Stream, &cfg, alpha, beta)?;
            plan.read_multi_y(&mut y)?;
            check_later(&mut rec, p, "stream", stream.timing.executions(), &y);
            rec.time = stream.timing.into();
            plan.set_multi_vectors(shape, None, Some(&p.y0))?;
            match plan.time_multi(TimingMode::Graph, &cfg, alpha, beta) {
                Ok(g) => {
                    plan.read_multi_y(&mut y)?;
                    check_later(&mut rec, p, "graph", g.timing.executions(), &y);
                    rec.graph_time = Some(g.timing.into());
                }
                Err(e) => rec
                    .notes
                    .push(("graph timing".into(), format!("unavailable: {e}"))),
            }
        }
    }
    let t = rec.time.median_us;
    if t > 0.0 {
        rec.gflops = 2.0 * a.nnz() as f64 * shape.k as f64 / (t * 1e3);
        rec.gbs = bytes as f64 / (t * 1e3);
    }
    rec.notes.extend(plan.multi_notes());
    Ok(rec)
}

/// Fills the speed-ups of `m`'s multi-vector records: over k single-vector calls of the same
/// method (its SpMV record in `m.results`) and over cuSPARSE SpMM (the [`CUSPARSE`] record of
/// the same precision, k and order).
pub fn fill_speedups(m: &mut MatrixResult) {
    let single: Vec<(String, Precision, f64)> = m
        .results
        .iter()
        .filter_map(|r| {
            let rec = r.record.as_ref().filter(|_| r.status == Status::Ok)?;
            Some((r.method.clone(), r.precision, rec.time.median_us))
        })
        .collect();
    let base: Vec<(Precision, usize, DenseOrder, f64)> = m
        .multi
        .iter()
        .filter(|r| r.method == CUSPARSE && r.status == Status::Ok)
        .filter_map(|r| Some((r.precision, r.k, r.order, r.record.as_ref()?.time.median_us)))
        .collect();
    for r in &mut m.multi {
        let (method, p, k, order) = (r.method.clone(), r.precision, r.k, r.order);
        let Some(rec) = r.record.as_mut() else {
            continue;
        };
        let t = rec.time.median_us;
        if t <= 0.0 {
            continue;
        }
        rec.speedup_vs_single = single
            .iter()
            .find(|(name, q, _)| *name == method && *q == p)
            .map(|(_, _, us)| us * k as f64 / t);
        rec.speedup_vs_cusparse = base
            .iter()
            .find(|(q, bk, bo, _)| (*q, *bk, *bo) == (p, k, order))
            .map(|(_, _, _, us)| us / t);
    }
}

/// The limit of multi-vector result `r` of matrix `m` on the device of `probe` ([`multi_limit`])
/// and the time it is set against: the graph time where recorded, else the stream time. `None`
/// unless `r` ran correctly on the GPU with a usable time.
fn result_limit(
    m: &MatrixResult,
    r: &MultiResult,
    probe: &Probe,
) -> Option<(MultiLimit, f64, TimingMode)> {
    let rec = r.record.as_ref()?;
    if rec.backend != Backend::Gpu || r.status != Status::Ok {
        return None;
    }
    let (t, kind) = match &rec.graph_time {
        Some(g) => (g.median_us, TimingMode::Graph),
        None => (rec.time.median_us, TimingMode::Stream),
    };
    let l = multi_limit(
        probe,
        rec,
        m.stats.ncols,
        (r.k, r.order),
        r.precision.bytes(),
    )?;
    (t > 0.0).then_some((l, t, kind))
}

/// The multi-vector results of a run as a markdown table (empty when there are none): per
/// matrix, method, precision, k and order, the path, µs per call, GFLOP/s, bytes per vector,
/// the two speed-ups, and with a probe the limit ([`multi_limit`]), the share of it the call
/// reached (t_limit ÷ t, t the graph time where recorded, else the stream time) and the binding
/// term ([`MultiLimit::term`]). When a row-major limit took its row gathers at the element rate
/// (a probe without row points) a note under the table says so ([`OLD_PROBE_NOTE`]).
pub fn multi_table(matrices: &[MatrixResult], probe: Option<&Probe>) -> String {
    let mut out = String::new();
    let mut old_probe = false;
    for m in matrices.iter().filter(|m| !m.multi.is_empty()) {
        if out.is_empty() {
            out.push_str(
                "| matrix | method | prec | k | order | path | µs/call | GFLOP/s | B/vector | \
                 ×k SpMV | ×cuSPARSE SpMM | limit µs | % of limit | limit term | status |\n\
                 |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
            );
        }
        for r in &m.multi {
            let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
            let (path, us, gf, bpv, s1, sc, lim, pct, term) = match &r.record {
                Some(rec) => {
                    let limit = probe.and_then(|p| result_limit(m, r, p));
                    let (lim, pct, term) = match limit {
                        Some((l, t, _)) => {
                            old_probe |= matches!(l.gathers, GatherTerm::Unmeasured { .. });
                            (
                                format!("{:.2}", l.limit.t_us),
                                format!("{:.0} %", 100.0 * l.limit.t_us / t),
                                l.term(),
                            )
                        }
                        None => ("-".into(), "-".into(), "-".into()),
                    };
                    (
                        rec.path.to_string(),
                        format!("{:.2}", rec.time.median_us),
                        format!("{:.1}", rec.gflops),
                        format!("{:.0}", rec.bytes_per_vector),
                        f(rec.speedup_vs_single),
                        f(rec.speedup_vs_cusparse),
                        lim,
                        pct,
                        term,
                    )
                }
                None => Default::default(),
            };
            let status = match &r.error {
                Some(e) => format!("{}: {}", r.status.name(), e.replace('|', "/")),
                None => r.status.name().to_string(),
            };
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {path} | {us} | {gf} | {bpv} | {s1} | {sc} | {lim} | \
                 {pct} | {term} | {status} |\n",
                m.name, r.method, r.precision, r.k, r.order
            ));
        }
    }
    if old_probe {
        out.push_str(&format!(
            "\n({OLD_PROBE_NOTE}: the row-major limits of X rows of {MIN_ROW_GATHER_BYTES} bytes \
             and more count each row as one element gather, which can fall below the time DRAM \
             needs to deliver the rows; docs/limits.md.)\n"
        ));
    }
    out
}

/// The columns of `spmm-limits.csv`.
pub const MULTI_CSV_COLUMNS: [&str; 20] = [
    "matrix",
    "method",
    "precision",
    "k",
    "order",
    "path",
    "timing",
    "time_us",
    "bytes",
    "bytes_us",
    "x_sectors",
    "x_accesses",
    "gather_rule",
    "gather_bytes",
    "gather_rate_g_per_s",
    "gathers_us",
    "t_limit_us",
    "bound",
    "limit_term",
    "pct_of_limit",
];

/// The text of `spmm-limits.csv`: one row per multi-vector result with a limit on the device of
/// `probe` ([`multi_limit`]), its two terms and how the gathers were priced (`gather_rule`:
/// elements, rows, or elements with an old probe; `gather_bytes`: the element or row size).
/// `None` when no result has a limit.
pub fn multi_limits_csv(matrices: &[MatrixResult], probe: Option<&Probe>) -> Option<String> {
    let probe = probe?;
    let mut out = MULTI_CSV_COLUMNS.join(",");
    out.push('\n');
    let mut any = false;
    for m in matrices {
        for r in &m.multi {
            let Some((l, t, kind)) = result_limit(m, r, probe) else {
                continue;
            };
            any = true;
            let rec = r.record.as_ref();
            let opt = |v: Option<String>| v.unwrap_or_default();
            let gather_bytes = match l.gathers {
                GatherTerm::Elements(e) | GatherTerm::Unmeasured { elem: e, .. } => u64::from(e),
                GatherTerm::Rows(row) => row,
            };
            let fields = [
                m.name.clone(),
                r.method.clone(),
                r.precision.to_string(),
                r.k.to_string(),
                r.order.to_string(),
                opt(rec.map(|rec| rec.path.to_string())),
                kind.to_string(),
                t.to_string(),
                l.limit.bytes.to_string(),
                l.limit.bytes_us.to_string(),
                opt(rec.and_then(|rec| rec.gathers).map(|g| g.to_string())),
                opt(l.limit.gathers.map(|g| g.to_string())),
                l.gathers.rule().into(),
                gather_bytes.to_string(),
                opt(l.rate_g.map(|v| v.to_string())),
                opt(l.limit.gathers_us.map(|v| v.to_string())),
                l.limit.t_us.to_string(),
                l.limit.bound.name().into(),
                l.term(),
                (100.0 * l.limit.t_us / t).to_string(),
            ];
            let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
            out.push_str(&line.join(","));
            out.push('\n');
        }
    }
    any.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods::spmm::MultiKernel;
    use crate::methods::PlanOptions;

    fn cpu_opts() -> MeasureOptions {
        MeasureOptions {
            plan: PlanOptions {
                backend: Some(Backend::Cpu),
                ..Default::default()
            },
            beta: -0.5,
            reps: 2,
            samples: 2,
            ..Default::default()
        }
    }

    #[test]
    fn checked_vectors_cover_the_warp_boundaries() {
        assert_eq!(checked_vectors(1), [0]);
        assert_eq!(checked_vectors(3), [0, 1, 2]);
        assert_eq!(checked_vectors(64), [0, 1, 31, 32, 33, 62, 63]);
        assert_eq!(
            multi_bytes(10, 20, 100, 8, 1),
            crate::matrix::byte_model(10, 20, 100, 8)
        );
    }

    /// One vector gathers what the SpMV x-sector count says, in both orders; k column-major
    /// vectors k times that; a row-major X row of 64 bytes (f64, k = 8) is two sectors per
    /// distinct column of a chunk, so an identity matrix (one column per row) gathers 2 per row.
    #[test]
    fn block_sectors_extend_the_x_sector_count() {
        let a = crate::gen::generate::<f64>("powerlaw:3000,9").unwrap();
        let x = crate::matrix::x_sectors(&a);
        for order in DenseOrder::ALL {
            let one = MultiShape { k: 1, order };
            assert_eq!(block_sectors(&a, one, 8), x.f64);
            assert_eq!(block_sectors(&a, one, 4), x.f32);
        }
        assert_eq!(block_sectors(&a, MultiShape::col_major(5), 8), 5 * x.f64);
        let id = Csr::<f64>::identity(100).unwrap();
        assert_eq!(block_sectors(&id, MultiShape::row_major(8), 8), 200);
        // k = 2 in f64: 16 bytes a row, two columns per sector; identity rows 0..100 touch 50
        assert_eq!(block_sectors(&id, MultiShape::row_major(2), 8), 50);
        let row = block_sectors(&a, MultiShape::row_major(32), 8);
        assert!(row >= 8 * x.f64 && row <= 8 * a.nnz() as u64, "{row}");
    }

    /// A probe of 1000 GB/s read bandwidth, 8-byte element gathers at `elem_gps` 10⁹/s, and
    /// rows of `rows` (row bytes, 10⁹ rows/s at a 1 MiB table, a tenth of it at 1 GiB).
    fn probe(elem_gps: f64, rows: &[(u32, f64)]) -> Probe {
        Probe {
            device: "test".into(),
            copy_gbs: 1000.0,
            read_gbs: 1000.0,
            read_bytes: 1 << 30,
            gathers_per_call: 1 << 20,
            gather: vec![crate::gpu::GatherPoint {
                table_bytes: 1 << 20,
                elem_bytes: 8,
                rate_gps: elem_gps,
            }],
            rows: rows
                .iter()
                .flat_map(|&(row_bytes, rate)| {
                    [(1u64 << 20, rate), (1 << 30, rate / 10.0)].map(|(table_bytes, rate_grs)| {
                        crate::gpu::probe::RowPoint {
                            table_bytes,
                            row_bytes,
                            rows_per_call: 1 << 20,
                            rate_grs,
                        }
                    })
                })
                .collect(),
            rows_ms: (!rows.is_empty()).then_some(10.0),
            elapsed_ms: 1.0,
        }
    }

    /// The results of one matrix, `rec` measured at each (k, order), as run on the GPU.
    fn on_gpu(a: &Csr<f64>, rec: &MultiRecord, shapes: &[(usize, DenseOrder)]) -> MatrixResult {
        let mut rec = rec.clone();
        rec.backend = Backend::Gpu;
        MatrixResult {
            name: "m".into(),
            source: "m".into(),
            stats: crate::matrix::MatrixStats::of(a),
            fits_l2: false,
            results: Vec::new(),
            multi: shapes
                .iter()
                .map(|&(k, order)| MultiResult {
                    method: "csr".into(),
                    precision: Precision::F64,
                    k,
                    order,
                    status: Status::Ok,
                    error: None,
                    record: Some(rec.clone()),
                })
                .collect(),
        }
    }

    /// Without row points (an old probe) the limit is the larger of the bytes and the element
    /// gathers, one per X row; the table says which term binds and notes the old probe once.
    #[test]
    fn the_limit_of_a_record_with_an_old_probe() {
        let a = crate::gen::generate::<f64>("poisson2d:30").unwrap();
        let opts = cpu_opts();
        let shape = MultiShape::row_major(8);
        let p = MultiProblem::new(&a, shape, opts.alpha, opts.beta).unwrap();
        let rec = measure_multi(&a, "csr", &opts, &p).unwrap();
        assert_eq!(rec.gathers, Some(block_sectors(&a, shape, 8)));
        let bytes_us = rec.bytes_model as f64 / 1e12 * 1e6;
        // rows of 8 × 8 = 64 bytes, two sectors each: one random access per row
        let sectors = rec.gathers.unwrap();
        let gathers = random_accesses(sectors, 8, DenseOrder::Row, 8) as f64;
        assert_eq!(gathers as u64, sectors.div_ceil(2));
        // column-major, or rows within a sector: every sector is a gather
        assert_eq!(random_accesses(100, 8, DenseOrder::Col, 8), 100);
        assert_eq!(random_accesses(100, 4, DenseOrder::Row, 8), 100);
        assert_eq!(random_accesses(100, 32, DenseOrder::Row, 8), 13);
        let kr = (8, DenseOrder::Row);
        let old = GatherTerm::Unmeasured { row: 64, elem: 8 };
        // a fast gather rate: the bytes bind; a slow one: the gathers
        let l = multi_limit(&probe(1e6, &[]), &rec, a.ncols(), kr, 8).unwrap();
        assert!((l.limit.t_us - bytes_us).abs() < 1e-9 && l.limit.bound == Bound::Bytes);
        assert_eq!((l.gathers, l.term().as_str()), (old, "bytes"));
        let l = multi_limit(&probe(1e-3, &[]), &rec, a.ncols(), kr, 8).unwrap();
        // 10^6 gathers/s: one µs each
        assert!((l.limit.t_us - gathers).abs() < 1e-6, "{l:?}");
        assert_eq!(l.limit.bound, Bound::Gathers);
        assert_eq!((l.gathers, l.rate_g), (old, Some(1e-3)));
        assert_eq!(l.term(), "8-byte gathers (old probe)");
        let mut m = on_gpu(&a, &rec, &[kr, (8, DenseOrder::Col)]);
        m.multi[0].record.as_mut().unwrap().backend = Backend::Cpu;
        // a CPU record gets no limit; a GPU one does, column-major by the element rule, and
        // the old probe is noted once under the table
        let table = multi_table(std::slice::from_ref(&m), Some(&probe(1e-3, &[])));
        assert!(table.contains("| - | - | - | ok |"), "{table}");
        assert!(table.contains(" | 8-byte gathers | ok |"), "{table}");
        assert!(!table.contains(OLD_PROBE_NOTE), "{table}");
        m.multi[0].record.as_mut().unwrap().backend = Backend::Gpu;
        let table = multi_table(std::slice::from_ref(&m), Some(&probe(1e-3, &[])));
        assert!(
            table.contains(" | 8-byte gathers (old probe) | ok |"),
            "{table}"
        );
        assert_eq!(table.matches(OLD_PROBE_NOTE).count(), 1, "{table}");
        // no probe: no limits, no note
        let table = multi_table(std::slice::from_ref(&m), None);
        assert!(!table.contains(OLD_PROBE_NOTE) && !table.contains("gathers"));
        let csv = multi_limits_csv(std::slice::from_ref(&m), Some(&probe(1e-3, &[]))).unwrap();
        assert!(csv.starts_with(&MULTI_CSV_COLUMNS.join(",")));
        assert_eq!(csv.lines().count(), 3, "{csv}");
        assert!(csv.contains(",\"elements, old probe\",8,"), "{csv}");
        assert!(multi_limits_csv(&[m], None).is_none());
    }

    /// With row points, a row-major X row of 16 bytes or more is one access at the probe's
    /// row-gather rate for its size at X's size; narrower rows and column-major blocks keep the
    /// element rate. The table and the CSV name the term.
    #[test]
    fn row_major_limits_take_the_row_gather_rate() {
        let a = crate::gen::generate::<f64>("poisson2d:30").unwrap();
        let opts = cpu_opts();
        let shape = MultiShape::row_major(8);
        let p = MultiProblem::new(&a, shape, opts.alpha, opts.beta).unwrap();
        let mut rec = measure_multi(&a, "csr", &opts, &p).unwrap();
        // a tiny byte term, so that the gathers bind; 6400 sectors
        rec.bytes_model = 1000;
        rec.gathers = Some(6400);
        let rows = [
            (16, 200.0),
            (32, 180.0),
            (64, 100.0),
            (128, 60.0),
            (256, 30.0),
            (512, 16.0),
            (1024, 8.0),
        ];
        // element gathers far slower than any row: the row rate must be the one taken
        let pr = probe(1e-3, &rows);
        let n = a.ncols();
        let us = |accesses: u64, rate: f64| accesses as f64 / (rate * 1e9) * 1e6;
        for (k, row, term) in [
            (2, 16, "16-byte row gathers"),
            (8, 64, "64-byte row gathers"),
            (32, 256, "256-byte row gathers"),
            (33, 264, "264-byte row gathers"),
            (128, 1024, "1024-byte row gathers"),
            (256, 2048, "2048-byte row gathers"),
        ] {
            let l = multi_limit(&pr, &rec, n, (k, DenseOrder::Row), 8).unwrap();
            let x = (n * k * 8) as u64;
            let rate = pr.row_rate(x, row).unwrap();
            let accesses = random_accesses(6400, k, DenseOrder::Row, 8);
            assert_eq!(l.gathers, GatherTerm::Rows(row), "k = {k}");
            assert_eq!((l.limit.gathers, l.rate_g), (Some(accesses), Some(rate)));
            assert!(
                (l.limit.t_us - us(accesses, rate)).abs() < 1e-9,
                "k = {k}: {l:?}"
            );
            assert_eq!((l.limit.bound, l.term().as_str()), (Bound::Gathers, term));
        }
        // k = 32 in f64 on a 1 MiB-or-smaller X: 6400 sectors = 800 rows of 256 bytes at 30 G/s
        let l = multi_limit(&pr, &rec, n, (32, DenseOrder::Row), 8).unwrap();
        assert!(n * 32 * 8 <= 1 << 20 && (l.limit.t_us - 800.0 / 30e3).abs() < 1e-12);
        // rows under 16 bytes (k = 1 in f64, k = 3 in f32) and column-major: element gathers
        for (k, order, vb) in [
            (1, DenseOrder::Row, 8),
            (3, DenseOrder::Row, 4),
            (32, DenseOrder::Col, 8),
        ] {
            let l = multi_limit(&pr, &rec, n, (k, order), vb).unwrap();
            assert_eq!(l.gathers, GatherTerm::Elements(vb as u32), "{k} {order}");
        }
        let l = multi_limit(&pr, &rec, n, (32, DenseOrder::Col), 8).unwrap();
        assert!(
            (l.limit.t_us - us(6400 * 32 / 32, 1e-3)).abs() < 1e-6,
            "{l:?}"
        );
        // a fast row rate: the bytes bind
        let mut big = rec.clone();
        big.bytes_model = 1 << 40;
        let l = multi_limit(&pr, &big, n, (32, DenseOrder::Row), 8).unwrap();
        assert_eq!((l.limit.bound, l.term().as_str()), (Bound::Bytes, "bytes"));
        let shapes = [
            (32, DenseOrder::Row),
            (32, DenseOrder::Col),
            (1, DenseOrder::Row),
        ];
        let m = on_gpu(&a, &rec, &shapes);
        let table = multi_table(std::slice::from_ref(&m), Some(&pr));
        assert!(table.contains(" | 256-byte row gathers | ok |"), "{table}");
        assert!(table.contains("| m | csr | f64 | 32 | col |"), "{table}");
        assert!(!table.contains(OLD_PROBE_NOTE), "{table}");
        let csv = multi_limits_csv(&[m], Some(&pr)).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 4, "{csv}");
        let row = lines[1].split(',').collect::<Vec<_>>();
        assert_eq!(row.len(), MULTI_CSV_COLUMNS.len(), "{csv}");
        assert_eq!(&row[..5], ["m", "csr", "f64", "32", "row"]);
        assert_eq!(
            (row[10], row[11], row[12], row[13]),
            ("6400", "800", "rows", "256")
        );
        assert_eq!(&row[17..19], ["gathers", "256-byte row gathers"]);
        assert_eq!(
            &lines[2].split(',').collect::<Vec<_>>()[12..14],
            ["elements", "8"]
        );
    }

    /// The CPU measurement checks its call and its loop, and a wrong answer is caught.
    #[test]
    fn measure_multi_checks_and_catches() {
        let a = crate::gen::generate::<f64>("powerlaw:2000,8").unwrap();
        let opts = cpu_opts();
        for shape in [MultiShape::row_major(8), MultiShape::col_major(3)] {
            let p = MultiProblem::new(&a, shape, opts.alpha, opts.beta).unwrap();
            for (method, path) in [
                ("csr", MultiPath::Kernel(MultiKernel::RowSplit)),
                ("merge", MultiPath::Kernel(MultiKernel::Merge)),
                ("csr-scalar", MultiPath::Columns),
                ("csr-packed", MultiPath::Kernel(MultiKernel::Packed)),
            ] {
                let rec = measure_multi(&a, method, &opts, &p).unwrap();
                assert!(rec.verified, "{method} {shape:?}: {rec:?}");
                assert_eq!(rec.path, path);
                // the packed kernel's byte model counts the packed bytes, the others CSR's
                let matrix = match method {
                    "csr-packed" => Plan::new(method, &a, &opts.plan)
                        .unwrap()
                        .layout()
                        .footprint_bytes() as u64,
                    _ => 12 * a.nnz() as u64 + 4 * (a.nrows() as u64 + 1),
                };
                let (m, n) = (a.nrows(), a.ncols());
                assert_eq!(rec.bytes_model, multi_bytes_of(matrix, m, n, 8, shape.k));
                assert_eq!(rec.later_checks.len(), 1);
                assert!(rec.later_checks[0].ok && rec.gflops > 0.0);
            }
            // k = 1 goes through the SpMV call, which moves the plan's layout: csr-packed's
            // record counts the packed bytes there too
            let one = MultiShape {
                k: 1,
                order: shape.order,
            };
            let p1 = MultiProblem::new(&a, one, opts.alpha, opts.beta).unwrap();
            let rec = measure_multi(&a, "csr-packed", &opts, &p1).unwrap();
            assert_eq!(rec.path, MultiPath::Kernel(MultiKernel::Spmv));
            let packed = Plan::new("csr-packed", &a, &opts.plan)
                .unwrap()
                .layout()
                .footprint_bytes() as u64;
            let (m, n) = (a.nrows(), a.ncols());
            assert_eq!(rec.bytes_model, multi_bytes_of(packed, m, n, 8, 1));
            // a wrong Y in a checked vector fails the check
            let mut y = p.y0.clone();
            let mut plan = Plan::new("csr", &a, &opts.plan).unwrap();
            plan.apply_multi(p.alpha, &p.x, p.beta, &mut y, shape)
                .unwrap();
            assert!(p.check(&y, 1).unwrap().1.ok);
            let at = shape.order.index(a.nrows(), shape.k, 5, shape.k - 1);
            y[at] += 1e-3;
            let (c, got) = p.check(&y, 1).unwrap();
            assert!(!got.ok && c == shape.k - 1 && got.worst_row == 5);
        }
    }

    /// Working out a record's bytes never prepares anything: `auto` on the CPU runs the
    /// row-split mirror, so its packed layout for the GPU's SpMM trial is not made, and no
    /// packing time reaches the record's `prep_ms`.
    #[test]
    fn the_byte_model_prepares_no_layout() {
        let a = crate::gen::generate::<f64>("stencil27:12").unwrap();
        let opts = cpu_opts();
        let shape = MultiShape::row_major(8);
        let p = MultiProblem::new(&a, shape, opts.alpha, opts.beta).unwrap();
        let mut plan = Plan::new("auto", &a, &opts.plan).unwrap();
        let rec = measure_multi_on(&mut plan, &a, &opts, &p).unwrap();
        assert!(rec.verified);
        assert_eq!(rec.path, MultiPath::Kernel(MultiKernel::RowSplit));
        assert!(
            plan.layout().late_prep().is_zero(),
            "{:?}",
            plan.layout().late_prep()
        );
        let (m, n) = (a.nrows(), a.ncols());
        assert_eq!(rec.bytes_model, multi_bytes(m, n, a.nnz(), 8, 8));
    }

    /// The speed-ups come from the method's SpMV record and cuSPARSE's multi record.
    #[test]
    fn speedups_are_filled_from_the_records() {
        let a = crate::gen::generate::<f64>("poisson2d:20").unwrap();
        let opts = cpu_opts();
        let shape = MultiShape::row_major(4);
        let p = MultiProblem::new(&a, shape, opts.alpha, opts.beta).unwrap();
        let rec = |us: f64| {
            let mut r = measure_multi(&a, "csr", &opts, &p).unwrap();
            r.time.median_us = us;
            r
        };
        let spmv = super::super::measure(&a, "csr", &opts).unwrap();
        let single_us = spmv.time.median_us;
        let mut m = MatrixResult {
            name: "m".into(),
            source: "m".into(),
            stats: crate::matrix::MatrixStats::of(&a),
            fits_l2: false,
            results: vec![super::super::MethodResult {
                method: "csr".into(),
                precision: Precision::F64,
                status: Status::Ok,
                error: None,
                record: Some(spmv),
            }],
            multi: [("csr", 2.0), (CUSPARSE, 6.0)]
                .into_iter()
                .map(|(method, us)| MultiResult {
                    method: method.into(),
                    precision: Precision::F64,
                    k: 4,
                    order: DenseOrder::Row,
                    status: Status::Ok,
                    error: None,
                    record: Some(rec(us)),
                })
                .collect(),
        };
        fill_speedups(&mut m);
        let r = m.multi[0].record.as_ref().unwrap();
        assert_eq!(r.speedup_vs_cusparse, Some(3.0));
        assert_eq!(r.speedup_vs_single, Some(single_us * 4.0 / 2.0));
        assert!(multi_table(&[m], None).contains("| m | csr | f64 | 4 | row |"));
    }
}
