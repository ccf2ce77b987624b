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
//! X sectors the block's gathers touch ([`block_sectors`]), against the run's probe.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{test_vector, LaterCheck, MatrixResult, MeasureOptions, Status, Timing};
use crate::cpu::{check, oracle_spmv_par, Reference};
use crate::error::Result;
use crate::gpu::Probe;
use crate::gpu::{TimingConfig, TimingMode};
use crate::matrix::{Csr, DenseOrder, MultiShape, CHUNK_ROWS, SECTOR_BYTES};
use crate::methods::spmm::cpu::column;
use crate::methods::spmm::MultiPath;
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
    /// The plan's preparation and upload, ms (as the SpMV record's).
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
    let csr = (vb as u64 + 4) * nnz as u64 + 4 * (nrows as u64 + 1);
    multi_bytes_of(csr, nrows, ncols, vb, k)
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

/// The limit of a multi-vector record on the device of `probe` ([`super::limits::limit`]):
/// bytes = the byte model for k vectors ([`multi_bytes`]: the matrix once, X read and Y
/// written once), gathers = the random accesses to X ([`random_accesses`] of
/// [`MultiRecord::gathers`]) at the probe's gather rate for a table of X's size (ncols·k values
/// of `vb` bytes). `None` without a usable read bandwidth.
pub fn multi_limit(
    probe: &Probe,
    rec: &MultiRecord,
    ncols: usize,
    (k, order): (usize, DenseOrder),
    vb: usize,
) -> Option<super::limits::Limit> {
    super::limits::limit(
        probe,
        rec.bytes_model,
        rec.gathers.map(|g| random_accesses(g, k, order, vb)),
        ncols.saturating_mul(k),
        vb,
    )
}

/// The random accesses to X behind `sectors` touched ([`block_sectors`]): column-major, each
/// sector (a vector's entries are gathered one by one, as in SpMV); row-major, one per X row
/// once a row spans more than a sector (its k·vb bytes come as one contiguous run, which the
/// byte term counts, not as independent gathers), that is sectors × 32 ÷ (k·vb), rounded up.
/// Counting every sector of a long row as a gather at the probe's rate for 8-byte gathers
/// overstated the time a call needs (cuSPARSE SpMM ran at 296 % of that figure on kron:21 at
/// k = 32), so it was no lower bound; one access per row is.
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
    // a kernel on the layout's own arrays (csr-packed) moves the layout's bytes, not CSR's
    let own = match path {
        MultiPath::Kernel(k) => plan
            .layout()
            .multi_layout()
            .filter(|o| o.kernel() == k)
            .map(|_| plan.layout().footprint_bytes() as u64),
        MultiPath::Columns => None,
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

/// The multi-vector results of a run as a markdown table (empty when there are none): per
/// matrix, method, precision, k and order, the path, µs per call, GFLOP/s, bytes per vector,
/// the two speed-ups, and with a probe the limit ([`multi_limit`]) and the share of it the
/// call reached (t_limit ÷ t, t the graph time where recorded, else the stream time) with the
/// binding term.
pub fn multi_table(matrices: &[MatrixResult], probe: Option<&Probe>) -> String {
    let mut out = String::new();
    for m in matrices.iter().filter(|m| !m.multi.is_empty()) {
        if out.is_empty() {
            out.push_str(
                "| matrix | method | prec | k | order | path | µs/call | GFLOP/s | B/vector | \
                 ×k SpMV | ×cuSPARSE SpMM | limit µs | % of limit | status |\n\
                 |---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
            );
        }
        for r in &m.multi {
            let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
            let (path, us, gf, bpv, s1, sc, lim, pct) = match &r.record {
                Some(rec) => {
                    let limit = probe
                        .filter(|_| rec.backend == Backend::Gpu && r.status == Status::Ok)
                        .and_then(|p| {
                            multi_limit(p, rec, m.stats.ncols, (r.k, r.order), r.precision.bytes())
                        });
                    let t = rec.graph_time.as_ref().unwrap_or(&rec.time).median_us;
                    let (lim, pct) = match limit {
                        Some(l) if t > 0.0 => (
                            format!("{:.2}", l.t_us),
                            format!("{:.0} % ({})", 100.0 * l.t_us / t, l.bound.name()),
                        ),
                        _ => ("-".into(), "-".into()),
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
                 {pct} | {status} |\n",
                m.name, r.method, r.precision, r.k, r.order
            ));
        }
    }
    out
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

    /// The limit is the larger of the bytes and gathers terms of the probe; the table shows it.
    #[test]
    fn the_limit_of_a_record() {
        let a = crate::gen::generate::<f64>("poisson2d:30").unwrap();
        let opts = cpu_opts();
        let shape = MultiShape::row_major(8);
        let p = MultiProblem::new(&a, shape, opts.alpha, opts.beta).unwrap();
        let rec = measure_multi(&a, "csr", &opts, &p).unwrap();
        assert_eq!(rec.gathers, Some(block_sectors(&a, shape, 8)));
        let probe = |rate_gps: f64| crate::gpu::Probe {
            device: "test".into(),
            copy_gbs: 1000.0,
            read_gbs: 1000.0,
            read_bytes: 1 << 30,
            gathers_per_call: 1 << 20,
            gather: vec![crate::gpu::GatherPoint {
                table_bytes: 1 << 20,
                elem_bytes: 8,
                rate_gps,
            }],
            elapsed_ms: 1.0,
        };
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
        // a fast gather rate: the bytes bind; a slow one: the gathers
        let l = multi_limit(&probe(1e6), &rec, a.ncols(), kr, 8).unwrap();
        assert!((l.t_us - bytes_us).abs() < 1e-9 && l.bound == super::super::limits::Bound::Bytes);
        let l = multi_limit(&probe(1e-3), &rec, a.ncols(), kr, 8).unwrap();
        // 10^6 gathers/s: one µs each
        assert!((l.t_us - gathers).abs() < 1e-6, "{l:?}");
        assert_eq!(l.bound, super::super::limits::Bound::Gathers);
        let mut m = MatrixResult {
            name: "m".into(),
            source: "m".into(),
            stats: crate::matrix::MatrixStats::of(&a),
            fits_l2: false,
            results: Vec::new(),
            multi: vec![MultiResult {
                method: "csr".into(),
                precision: Precision::F64,
                k: 8,
                order: DenseOrder::Row,
                status: Status::Ok,
                error: None,
                record: Some(rec),
            }],
        };
        // CPU records get no limit; a GPU one does
        assert!(multi_table(std::slice::from_ref(&m), Some(&probe(1e-3))).contains("| - | - |"));
        m.multi[0].record.as_mut().unwrap().backend = Backend::Gpu;
        assert!(multi_table(&[m], Some(&probe(1e-3))).contains("(gathers)"));
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
