//! A limit per result (issue #19): the least time a result could take on the machine it ran on,
//! from the run's limits probe ([`crate::gpu::probe`]) and the matrix's x-sector count, set
//! against the measured time. docs/limits.md explains it with an example.
//!
//! For one (matrix, method, precision) result with value size vb:
//!
//! - **bytes** = the layout's device arrays ([`RunRecord::footprint_bytes`]) + x once
//!   (vb · ncols) + y written (vb · nrows), + y read (vb · nrows) when β ≠ 0. `spmv bench` runs
//!   with β = 0 ([`super::MeasureOptions::default`]) and the run record does not carry β, so the
//!   report counts y written only.
//! - **gathers** = the matrix's x-sector count in that precision
//!   ([`MatrixStats::x_sectors`]): distinct 32-byte sectors of x per chunk of 32 rows, summed
//!   over the chunks; an upper bound on L2 → SM traffic when no reuse across warps.
//! - **t_limit** = max(bytes ÷ read bandwidth, gathers ÷ gather rate at x's size), where x's
//!   size is vb · ncols and the gather rate is [`Probe::gather_rate`] for vb-byte elements. The
//!   larger term is the **binding** bound. Without a sector count only the bytes term is used.
//! - The **CSR limit** of the matrix is the same formula with the CSR bytes
//!   ([`super::byte_model`], which counts x once and y written) in place of footprint + x + y.
//!
//! The report shows t_limit ÷ t as "% of own limit" and t_limit(CSR) ÷ t as "% of the CSR
//! limit": above 100 % of the CSR limit, a layout moves fewer bytes than CSR can (or, on a
//! matrix whose working set fits in L2, is served from L2 across calls, which the DRAM read
//! bandwidth does not bound). Times are the CUDA-graph replay where recorded, else the stream
//! timing. Only GPU results of runs that carry a probe get a limit; the rest say "no probe".

use std::fmt::Write as _;

use super::plots::{auto_range, Chart, Series, Style};
use super::report::{
    auto_choice, cell, is_auto, result_label, result_time_us, Baseline, MergedMatrix, MergedRuns,
};
use super::{byte_model, MachineInfo, MethodResult, RunRecord, Status};
use crate::gpu::{Probe, TimingMode};
use crate::matrix::MatrixStats;
use crate::methods::Backend;
use crate::scalar::Precision;

/// The term of a limit that binds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// Streaming the bytes at the read bandwidth.
    Bytes,
    /// Gathering the x sectors at the gather rate.
    Gathers,
}

impl Bound {
    pub fn name(self) -> &'static str {
        match self {
            Bound::Bytes => "bytes",
            Bound::Gathers => "gathers",
        }
    }
}

/// One limit: its two terms and the larger one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limit {
    /// Bytes moved at least.
    pub bytes: u64,
    /// x sectors gathered at most (`None`: not counted for this matrix).
    pub gathers: Option<u64>,
    /// bytes ÷ read bandwidth, µs.
    pub bytes_us: f64,
    /// gathers ÷ gather rate, µs.
    pub gathers_us: Option<f64>,
    /// The limit: the larger term, µs.
    pub t_us: f64,
    pub bound: Bound,
}

/// Bytes a result moves at least: the layout's device arrays, x once, y written, and y read
/// when β ≠ 0 (`y_read`).
pub fn result_bytes(
    footprint_bytes: u64,
    nrows: usize,
    ncols: usize,
    value_bytes: usize,
    y_read: bool,
) -> u64 {
    let vb = value_bytes as u64;
    footprint_bytes + vb * ncols as u64 + vb * nrows as u64 * (1 + u64::from(y_read))
}

/// Bytes CSR moves at least ([`byte_model`], plus y read when β ≠ 0).
pub fn csr_bytes(nrows: usize, ncols: usize, nnz: usize, value_bytes: usize, y_read: bool) -> u64 {
    byte_model(nrows, ncols, nnz, value_bytes) + u64::from(y_read) * (value_bytes * nrows) as u64
}

/// The limit of moving `bytes` and gathering `gathers` sectors of an x of `ncols` entries of
/// `value_bytes` bytes, on the device `probe` measured. `None` without a usable read bandwidth.
pub fn limit(
    probe: &Probe,
    bytes: u64,
    gathers: Option<u64>,
    ncols: usize,
    value_bytes: usize,
) -> Option<Limit> {
    let x_bytes = (value_bytes * ncols) as u64;
    let rate = gathers.and_then(|_| probe.gather_rate(x_bytes, value_bytes as u32));
    limit_at(probe, bytes, gathers, rate)
}

/// [`limit`] with the gather rate given, in 10⁹ gathers per second (`None`: the bytes term
/// alone), as the k-vector limit takes it for gathers of whole X rows (`bench::multi`).
pub fn limit_at(
    probe: &Probe,
    bytes: u64,
    gathers: Option<u64>,
    rate_g: Option<f64>,
) -> Option<Limit> {
    let bytes_us = bytes as f64 / probe.read_bytes_per_s()? * 1e6;
    let gathers_us = gathers
        .zip(rate_g)
        .map(|(g, rate)| g as f64 / (rate * 1e9) * 1e6);
    let (t_us, bound) = match gathers_us {
        Some(g) if g > bytes_us => (g, Bound::Gathers),
        _ => (bytes_us, Bound::Bytes),
    };
    Some(Limit {
        bytes,
        gathers,
        bytes_us,
        gathers_us,
        t_us,
        bound,
    })
}

/// The time of a result that the limits are set against: CUDA-graph replay where recorded,
/// else the stream timing; `None` unless it ran correctly.
pub fn limit_time(r: &MethodResult) -> Option<(f64, TimingMode)> {
    result_time_us(r, TimingMode::Graph)
        .map(|t| (t, TimingMode::Graph))
        .or_else(|| result_time_us(r, TimingMode::Stream).map(|t| (t, TimingMode::Stream)))
}

/// A result set against its limits.
#[derive(Clone, Debug, PartialEq)]
pub struct ResultLimit {
    /// The layout's own limit.
    pub own: Limit,
    /// The CSR limit of the matrix.
    pub csr: Limit,
    /// The measured time, µs, and which timing it is.
    pub time_us: f64,
    pub kind: TimingMode,
    /// The layout's device bytes per nonzero (`None` without nonzeros).
    pub bytes_per_nnz: Option<f64>,
}

impl ResultLimit {
    /// t_limit ÷ t, percent.
    pub fn pct_own(&self) -> f64 {
        100.0 * self.own.t_us / self.time_us
    }
    /// t_limit(CSR) ÷ t, percent: above 100, faster than CSR's bytes allow.
    pub fn pct_csr(&self) -> f64 {
        100.0 * self.csr.t_us / self.time_us
    }
}

/// The limits of one result on a matrix with statistics `stats`, measured on the device of
/// `probe`. `None` unless it ran correctly on the GPU with a usable time.
pub fn result_limit(
    probe: &Probe,
    stats: &MatrixStats,
    r: &MethodResult,
    y_read: bool,
) -> Option<ResultLimit> {
    let rec: &RunRecord = r.record.as_ref()?;
    if r.status != Status::Ok || rec.backend != Backend::Gpu {
        return None;
    }
    let (time_us, kind) = limit_time(r)?;
    let vb = r.precision.bytes();
    let gathers = stats.x_sectors(vb);
    let own_bytes = result_bytes(rec.footprint_bytes as u64, rec.nrows, rec.ncols, vb, y_read);
    let own = limit(probe, own_bytes, gathers, rec.ncols, vb)?;
    let csr = limit(
        probe,
        csr_bytes(rec.nrows, rec.ncols, rec.nnz, vb, y_read),
        gathers,
        rec.ncols,
        vb,
    )?;
    Some(ResultLimit {
        own,
        csr,
        time_us,
        kind,
        bytes_per_nnz: (rec.nnz > 0).then(|| rec.footprint_bytes as f64 / rec.nnz as f64),
    })
}

/// The probe of the run that result `i` of matrix `m` came from.
fn probe_of<'a>(merged: &'a MergedRuns, m: &MergedMatrix, i: usize) -> Option<&'a Probe> {
    let run = *m.run_of.get(i)?;
    merged.runs.get(run)?.0.probe.as_ref()
}

/// One row of the limits table.
#[derive(Clone, Debug)]
pub struct LimitRow {
    pub matrix: String,
    pub fits_l2: bool,
    pub nnz: usize,
    /// The method label ([`MethodResult::method`]).
    pub method: String,
    /// How to show it ([`result_label`]).
    pub label: String,
    /// For an `auto` entry, the method it ran.
    pub ran: Option<String>,
    pub precision: Precision,
    pub limit: ResultLimit,
    /// Read bandwidth and gather rate at x's size that the limit used.
    pub read_gbs: f64,
    pub gather_rate_gps: Option<f64>,
}

/// Every correct GPU result in `precision` whose run carries a probe, with its limits, in the
/// order of the merged matrices and results (β = 0, as `spmv bench` runs).
pub fn rows(merged: &MergedRuns, p: Precision) -> Vec<LimitRow> {
    let mut out = Vec::new();
    for mm in &merged.matrices {
        let m = &mm.matrix;
        for (i, r) in m.results.iter().enumerate() {
            if r.precision != p {
                continue;
            }
            let Some(probe) = probe_of(merged, mm, i) else {
                continue;
            };
            let Some(limit) = result_limit(probe, &m.stats, r, false) else {
                continue;
            };
            out.push(LimitRow {
                matrix: m.name.clone(),
                fits_l2: m.fits_l2,
                nnz: m.stats.nnz,
                method: r.method.clone(),
                label: result_label(r),
                ran: r.record.as_ref().and_then(auto_choice).map(str::to_string),
                precision: p,
                read_gbs: probe.read_gbs,
                gather_rate_gps: probe
                    .gather_rate((p.bytes() * m.stats.ncols) as u64, p.bytes() as u32),
                limit,
            });
        }
    }
    out
}

/// Correct GPU results in `precision` from runs without a probe.
fn without_probe(merged: &MergedRuns, p: Precision) -> usize {
    merged
        .matrices
        .iter()
        .flat_map(|mm| {
            mm.matrix
                .results
                .iter()
                .enumerate()
                .map(move |(i, r)| (mm, i, r))
        })
        .filter(|(mm, i, r)| {
            r.precision == p
                && r.record
                    .as_ref()
                    .is_some_and(|rec| rec.backend == Backend::Gpu)
                && limit_time(r).is_some()
                && probe_of(merged, mm, *i).is_none()
        })
        .count()
}

/// Whether `method` is `csr-packed` or one of its variants.
fn is_csr_packed(method: &str) -> bool {
    method == "csr-packed" || method.starts_with("csr-packed[")
}

/// How many of each matrix's fastest results the summary shows.
pub const SUMMARY_FASTEST: usize = 3;

/// The rows of one matrix that the summary shows, fastest first: the [`SUMMARY_FASTEST`]
/// fastest (an `auto` entry that ran a method with its own row is the same code and left out),
/// the fastest cuSPARSE entry, and every `csr-packed` entry.
pub fn summary_rows<'a>(matrix_rows: &[&'a LimitRow]) -> Vec<&'a LimitRow> {
    let mut sorted: Vec<&LimitRow> = matrix_rows.to_vec();
    sorted.sort_by(|a, b| a.limit.time_us.total_cmp(&b.limit.time_us));
    let has_row = |m: &str| sorted.iter().any(|r| r.method == m);
    let repeats = |r: &LimitRow| is_auto(&r.method) && r.ran.as_deref().is_some_and(has_row);
    let cusparse = Baseline::cusparse();
    let best_cusparse = sorted.iter().find(|r| cusparse.is_member(&r.method));
    let mut keep: Vec<&LimitRow> = sorted
        .iter()
        .filter(|r| !repeats(r))
        .take(SUMMARY_FASTEST)
        .copied()
        .collect();
    for r in best_cusparse
        .into_iter()
        .chain(sorted.iter().filter(|r| is_csr_packed(&r.method)))
    {
        if !keep.iter().any(|k| std::ptr::eq(*k, *r)) {
            keep.push(r);
        }
    }
    keep.sort_by(|a, b| a.limit.time_us.total_cmp(&b.limit.time_us));
    keep
}

/// The text of the counting rule, as the report and the docs state it.
pub const GATHER_RULE: &str = "gathers: distinct 32-byte sectors of x per chunk of 32 rows; an \
upper bound on L2→SM traffic when no reuse across warps";

/// One line on a run's probe for the machine table: read bandwidth, the gather rates at the
/// smallest and largest tables, and where measured the narrowest and widest row gathers at the
/// largest table.
pub fn probe_line(m: &MachineInfo) -> String {
    let Some(p) = &m.probe else {
        return match &m.probe_error {
            Some(e) => format!("failed: {e}"),
            None => "not measured (no probe in this run)".into(),
        };
    };
    let mut parts = vec![format!("read {:.0} GB/s", p.read_gbs)];
    for elem in [4u32, 8] {
        let pts: Vec<_> = p.gather.iter().filter(|g| g.elem_bytes == elem).collect();
        let lo = pts.iter().min_by_key(|g| g.table_bytes);
        let hi = pts.iter().max_by_key(|g| g.table_bytes);
        if let (Some(lo), Some(hi)) = (lo, hi) {
            parts.push(format!(
                "{elem}-byte gathers {:.1} G/s at {} MiB, {:.1} G/s at {} MiB",
                lo.rate_gps,
                lo.table_bytes >> 20,
                hi.rate_gps,
                hi.table_bytes >> 20
            ));
        }
    }
    let largest = p.rows.iter().map(|r| r.table_bytes).max();
    let at_largest = p.rows.iter().filter(|r| Some(r.table_bytes) == largest);
    let narrow = at_largest.clone().min_by_key(|r| r.row_bytes);
    let wide = at_largest.max_by_key(|r| r.row_bytes);
    if let (Some(n), Some(w)) = (narrow, wide) {
        parts.push(format!(
            "row gathers at {} MiB: {} B {:.1} G/s, {} B {:.1} G/s ({:.0} GB/s)",
            n.table_bytes >> 20,
            n.row_bytes,
            n.rate_grs,
            w.row_bytes,
            w.rate_grs,
            w.gbs()
        ));
    }
    parts.join("; ")
}

/// The limits section of one precision in `summary.md` (GPU reports).
pub fn section(s: &mut String, merged: &MergedRuns, p: Precision) {
    let all = rows(merged, p);
    let missing = without_probe(merged, p);
    if all.is_empty() && missing == 0 {
        return;
    }
    let _ = writeln!(s, "### Limits ({p})\n");
    if all.is_empty() {
        let _ = writeln!(
            s,
            "No probe in these runs: no limits. `spmv bench` records the limits probe on a GPU \
             (`spmv probe` measures it alone; docs/limits.md).\n"
        );
        return;
    }
    let _ = writeln!(
        s,
        "t_limit = max(bytes ÷ read bandwidth, x-gathers ÷ gather rate at x's size), from the \
         probe of the run each result came from (docs/limits.md). bytes: the layout's device \
         arrays + x once + y written (β = 0); {GATHER_RULE}. % of limit: t_limit ÷ t; % of CSR \
         limit: the CSR layout's t_limit ÷ t, above 100 % the layout moves fewer bytes than CSR \
         can. bound: the larger term. Time: CUDA graph replay (stream timing where marked *). \
         Per matrix the {SUMMARY_FASTEST} fastest, the fastest cuSPARSE and csr-packed; every \
         result is in limits.csv.\n"
    );
    if missing > 0 {
        let _ = writeln!(
            s,
            "{missing} results come from runs without a probe: no limit for them.\n"
        );
    }
    let _ = writeln!(
        s,
        "| matrix | method | µs | t_limit µs | % of limit | % of CSR limit | bytes/nnz | bound |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|");
    let mut beats: Vec<String> = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    for r in &all {
        if !names.contains(&r.matrix.as_str()) {
            names.push(&r.matrix);
        }
    }
    for name in names {
        let mine: Vec<&LimitRow> = all.iter().filter(|r| r.matrix == name).collect();
        for r in summary_rows(&mine) {
            let l = &r.limit;
            let star = if l.kind == TimingMode::Stream {
                "*"
            } else {
                ""
            };
            let matrix = if r.fits_l2 {
                format!("{} (fits L2)", r.matrix)
            } else {
                r.matrix.clone()
            };
            let pct_csr = l.pct_csr();
            let csr_cell = if pct_csr > 100.0 && !r.fits_l2 {
                beats.push(format!(
                    "{} on {} ({:.0} % of the CSR limit)",
                    r.label, r.matrix, pct_csr
                ));
                format!("**{pct_csr:.0} %**")
            } else {
                format!("{pct_csr:.0} %")
            };
            let _ = writeln!(
                s,
                "| {} | {} | {:.2}{star} | {:.2} | {:.0} % | {} | {} | {} |",
                cell(&matrix),
                cell(&r.label),
                l.time_us,
                l.own.t_us,
                l.pct_own(),
                csr_cell,
                l.bytes_per_nnz
                    .map_or_else(|| "–".into(), |b| format!("{b:.2}")),
                l.own.bound.name()
            );
        }
    }
    s.push('\n');
    if !beats.is_empty() {
        let _ = writeln!(
            s,
            "Faster than the CSR limit, so these layouts move fewer bytes than CSR can: {}.\n",
            beats.join("; ")
        );
    }
    if all.iter().any(|r| r.fits_l2) {
        let _ = writeln!(
            s,
            "On a matrix marked \"fits L2\" repeated calls read the layout from L2, which the DRAM \
             read bandwidth does not bound: above 100 % there is no claim.\n"
        );
    }
}

pub(crate) fn csv_field(v: &str) -> String {
    if v.contains([',', '"', '\n']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_string()
    }
}

fn opt<T: ToString>(x: Option<T>) -> String {
    x.map_or_else(String::new, |v| v.to_string())
}

/// The columns of `limits.csv`.
pub const CSV_COLUMNS: [&str; 22] = [
    "matrix",
    "fits_l2",
    "nnz",
    "method",
    "precision",
    "timing",
    "time_us",
    "bytes",
    "x_sectors",
    "bytes_us",
    "gathers_us",
    "t_limit_us",
    "bound",
    "pct_of_limit",
    "csr_bytes",
    "csr_t_limit_us",
    "csr_bound",
    "pct_of_csr_limit",
    "bytes_per_nnz",
    "read_gbs",
    "gather_rate_gps",
    "beats_csr_limit",
];

/// The text of `limits.csv`: every row of every precision; `None` when no result has a limit.
pub fn csv(merged: &MergedRuns) -> Option<String> {
    let all: Vec<LimitRow> = merged
        .precisions()
        .into_iter()
        .flat_map(|p| rows(merged, p))
        .collect();
    if all.is_empty() {
        return None;
    }
    let mut out = CSV_COLUMNS.join(",");
    out.push('\n');
    for r in &all {
        let l = &r.limit;
        let fields = [
            r.matrix.clone(),
            r.fits_l2.to_string(),
            r.nnz.to_string(),
            r.method.clone(),
            r.precision.to_string(),
            l.kind.to_string(),
            l.time_us.to_string(),
            l.own.bytes.to_string(),
            opt(l.own.gathers),
            l.own.bytes_us.to_string(),
            opt(l.own.gathers_us),
            l.own.t_us.to_string(),
            l.own.bound.name().into(),
            l.pct_own().to_string(),
            l.csr.bytes.to_string(),
            l.csr.t_us.to_string(),
            l.csr.bound.name().into(),
            l.pct_csr().to_string(),
            opt(l.bytes_per_nnz),
            r.read_gbs.to_string(),
            opt(r.gather_rate_gps),
            (l.pct_csr() > 100.0 && !r.fits_l2).to_string(),
        ];
        out.push_str(
            &fields
                .iter()
                .map(|f| csv_field(f))
                .collect::<Vec<_>>()
                .join(","),
        );
        out.push('\n');
    }
    Some(out)
}

/// Makes a method's series from its points, named and coloured as in the report's other plots.
pub type SeriesOf<'a> = &'a dyn Fn(&str, Vec<(f64, f64)>) -> Series;

/// The plot of measured time against the limit for `precision` (log-log, the line t = t_limit):
/// one series per method in `methods`, made by `series_of(method, points)` (coloured and named as
/// in the report's other plots). `None` when no result has a limit.
pub fn chart(
    merged: &MergedRuns,
    p: Precision,
    methods: &[String],
    series_of: SeriesOf,
) -> Option<Chart> {
    let all = rows(merged, p);
    let series: Vec<Series> = methods
        .iter()
        .filter_map(|me| {
            let points: Vec<(f64, f64)> = all
                .iter()
                .filter(|r| &r.method == me)
                .map(|r| (r.limit.own.t_us, r.limit.time_us))
                .filter(|(x, y)| x.is_finite() && *x > 0.0 && y.is_finite() && *y > 0.0)
                .collect();
            (!points.is_empty()).then(|| series_of(me, points))
        })
        .collect();
    if series.is_empty() {
        return None;
    }
    // one range for both axes, so that t = t_limit is the diagonal
    let range = auto_range(
        series
            .iter()
            .flat_map(|s| s.points.iter().flat_map(|&(x, y)| [x, y])),
        true,
        (1.0, 1e4),
    );
    let graph = all.iter().all(|r| r.limit.kind == TimingMode::Graph);
    Some(Chart {
        title: format!(
            "Time against the limit, {p}, {}",
            if graph {
                "CUDA graph timing"
            } else {
                "graph timing where recorded"
            }
        ),
        x_label: "t_limit = max(bytes ÷ read BW, x sectors ÷ gather rate), µs (log scale)".into(),
        y_label: "measured time per call, µs (log scale)".into(),
        x_log: true,
        y_log: true,
        x_range: range,
        y_range: range,
        style: Style::Points,
        series,
        hline: None,
        diagonal: Some("t = t_limit".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::report::tests::{matrix, ok};
    use crate::bench::{write_report, BenchRun, Timing};
    use crate::gpu::probe::{GatherPoint, GATHER_TABLE_BYTES};

    const F64: Precision = Precision::F64;

    /// A probe of 4 TB/s read bandwidth and a flat gather rate of `rate` G/s.
    fn probe(rate: f64) -> Probe {
        Probe {
            device: "NVIDIA Test GPU".into(),
            copy_gbs: 3600.0,
            read_gbs: 4000.0,
            read_bytes: 1 << 30,
            gathers_per_call: 1 << 27,
            gather: [4u32, 8]
                .into_iter()
                .flat_map(|e| {
                    GATHER_TABLE_BYTES.map(|b| GatherPoint {
                        table_bytes: b,
                        elem_bytes: e,
                        rate_gps: rate,
                    })
                })
                .collect(),
            rows: Vec::new(),
            rows_ms: None,
            elapsed_ms: 600.0,
        }
    }

    #[test]
    fn the_limit_is_the_larger_of_the_byte_and_the_gather_time() {
        let p = probe(100.0);
        // 4e6 bytes at 4e12 B/s: 1 µs; 1e6 sectors at 1e11/s: 10 µs
        let l = limit(&p, 4_000_000, Some(1_000_000), 1000, 8).unwrap();
        assert!((l.bytes_us - 1.0).abs() < 1e-12 && (l.gathers_us.unwrap() - 10.0).abs() < 1e-12);
        assert_eq!((l.t_us, l.bound), (l.gathers_us.unwrap(), Bound::Gathers));
        let l = limit(&p, 400_000_000, Some(1_000_000), 1000, 8).unwrap();
        assert_eq!((l.t_us, l.bound), (l.bytes_us, Bound::Bytes));
        assert!((l.t_us - 100.0).abs() < 1e-9);
        // no sector count: the bytes alone
        let l = limit(&p, 4_000_000, None, 1000, 8).unwrap();
        assert_eq!((l.t_us, l.bound, l.gathers_us), (1.0, Bound::Bytes, None));
        // no usable read bandwidth: no limit
        let mut bad = probe(100.0);
        bad.read_gbs = 0.0;
        assert_eq!(limit(&bad, 1, Some(1), 1, 8), None);
        // the gather rate is taken at x's size and element size
        let mut curve = probe(100.0);
        for g in &mut curve.gather {
            if g.elem_bytes == 4 && g.table_bytes >= 64 << 20 {
                g.rate_gps = 10.0;
            }
        }
        let small = limit(&curve, 0, Some(1_000_000), 1 << 20, 4).unwrap(); // 4 MiB x
        let large = limit(&curve, 0, Some(1_000_000), 1 << 26, 4).unwrap(); // 256 MiB x
        let f64_large = limit(&curve, 0, Some(1_000_000), 1 << 26, 8).unwrap();
        assert!((small.t_us - 10.0).abs() < 1e-9, "{small:?}");
        assert!((large.t_us - 100.0).abs() < 1e-9, "{large:?}");
        assert!((f64_large.t_us - 10.0).abs() < 1e-9, "{f64_large:?}");
    }

    #[test]
    fn bytes_count_the_layout_x_once_and_y_written_and_read_when_beta_is_not_zero() {
        assert_eq!(result_bytes(1000, 10, 20, 8, false), 1000 + 160 + 80);
        assert_eq!(result_bytes(1000, 10, 20, 8, true), 1000 + 160 + 160);
        assert_eq!(result_bytes(1000, 10, 20, 4, false), 1000 + 80 + 40);
        // CSR's own layout gives the CSR bytes: footprint = values + indices + row pointers
        let (r, c, z) = (10, 20, 100);
        for vb in [4, 8] {
            let footprint = ((vb + 4) * z + 4 * (r + 1)) as u64;
            for y_read in [false, true] {
                assert_eq!(
                    result_bytes(footprint, r, c, vb, y_read),
                    csr_bytes(r, c, z, vb, y_read)
                );
            }
        }
    }

    #[test]
    fn a_result_is_set_against_its_graph_time_and_only_on_the_gpu() {
        let mut m = matrix("big", 10_000_000, 0.5, false, Vec::new());
        m.stats.x_sectors_f64 = Some(5_000_000);
        let p = probe(200.0);
        let mut r = ok("csr", F64, 10_000_000, 50.0, 1.0);
        r.record.as_mut().unwrap().footprint_bytes = 12 * 10_000_000 + 4 * 1_000_001;
        let l = result_limit(&p, &m.stats, &r, false).unwrap();
        // graph time 0.9 × 50 µs; CSR bytes 140 000 004 at 4 TB/s: 35 µs; 5M sectors at
        // 200 G/s: 25 µs
        assert_eq!(l.kind, TimingMode::Graph);
        assert!((l.time_us - 45.0).abs() < 1e-9);
        assert_eq!(l.own, l.csr);
        assert_eq!(l.own.bytes, 140_000_004);
        assert!((l.own.t_us - 35.000001).abs() < 1e-9 && l.own.bound == Bound::Bytes);
        assert!((l.own.gathers_us.unwrap() - 25.0).abs() < 1e-9);
        assert!((l.pct_own() - 100.0 * 35.000001 / 45.0).abs() < 1e-9);
        assert!((l.bytes_per_nnz.unwrap() - 12.4000004).abs() < 1e-9);
        // stream time without a graph timing
        r.record.as_mut().unwrap().graph_time = None;
        let l = result_limit(&p, &m.stats, &r, false).unwrap();
        assert_eq!((l.kind, l.time_us), (TimingMode::Stream, 50.0));
        // CPU records, failed and wrong results get none
        let mut cpu = ok("csr", F64, 10_000_000, 50.0, 1.0);
        cpu.record.as_mut().unwrap().backend = Backend::Cpu;
        assert!(result_limit(&p, &m.stats, &cpu, false).is_none());
        let mut wrong = r.clone();
        wrong.status = Status::Wrong;
        assert!(result_limit(&p, &m.stats, &wrong, false).is_none());
        m.stats.x_sectors_f64 = None;
        let l = result_limit(&p, &m.stats, &r, false).unwrap();
        assert_eq!(l.own.gathers, None);
    }

    /// A GPU run of two matrices, with or without a probe: "big" (bandwidth-bound) and "small"
    /// (fits in L2). csr-packed on "big" stores 4 bytes per nonzero and beats the CSR limit.
    fn run(with_probe: bool) -> BenchRun {
        let nnz = 10_000_000;
        let mut results = vec![
            ok("cusparse-alg1", F64, nnz, 100.0, 0.1),
            ok("cusparse-alg2", F64, nnz, 105.0, 0.1),
            ok("csr", F64, nnz, 90.0, 0.1),
            ok("merge", F64, nnz, 70.0, 0.1),
            ok("fastload", F64, nnz, 60.0, 0.1),
            ok("hbp", F64, nnz, 80.0, 0.1),
            ok("csr-packed", F64, nnz, 30.0, 0.1),
            ok("auto", F64, nnz, 31.0, 0.1),
        ];
        for r in &mut results {
            let rec = r.record.as_mut().unwrap();
            if r.method == "csr-packed" {
                rec.footprint_bytes = 4 * nnz;
            }
            if r.method == "auto" {
                rec.notes = vec![("auto chose".into(), "csr-packed".into())];
            }
        }
        let mut big = matrix("big", nnz, 0.5, false, results);
        big.stats.x_sectors_f64 = Some(5_000_000);
        let mut small = matrix(
            "small",
            10_000,
            0.2,
            true,
            vec![
                ok("csr", F64, 10_000, 0.5, 0.1),
                ok("cusparse-alg1", F64, 10_000, 4.0, 0.1),
            ],
        );
        small.stats.x_sectors_f64 = Some(800);
        let mut run = BenchRun {
            matrices: vec![big, small],
            ..BenchRun::default()
        };
        run.machine.gpu = "NVIDIA Test GPU".into();
        if with_probe {
            run.machine.probe = Some(probe(200.0));
        }
        // the report reads runs back from JSON
        serde_json::from_str(&serde_json::to_string(&run).unwrap()).unwrap()
    }

    #[test]
    fn the_summary_picks_the_fastest_cusparse_and_csr_packed_per_matrix() {
        let merged = crate::bench::report::merge_runs(&[run(true)]);
        let all = rows(&merged, F64);
        assert_eq!(all.len(), 10);
        let big: Vec<&LimitRow> = all.iter().filter(|r| r.matrix == "big").collect();
        let shown: Vec<&str> = summary_rows(&big)
            .iter()
            .map(|r| r.method.as_str())
            .collect();
        // auto ran csr-packed, which has its own row: not a contender of its own
        assert_eq!(shown, ["csr-packed", "fastload", "merge", "cusparse-alg1"]);
        let small: Vec<&LimitRow> = all.iter().filter(|r| r.matrix == "small").collect();
        let shown: Vec<&str> = summary_rows(&small)
            .iter()
            .map(|r| r.method.as_str())
            .collect();
        assert_eq!(shown, ["csr", "cusparse-alg1"]);
    }

    #[test]
    fn the_report_shows_limits_with_a_probe_and_says_no_probe_without() {
        let dir = std::env::temp_dir().join(format!("spmvkit-limits-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);

        let files = write_report(&[run(true)], &dir.join("with")).unwrap();
        let summary = std::fs::read_to_string(&files.summary).unwrap();
        assert!(summary.contains("### Limits (f64)"), "{summary}");
        assert!(summary.contains(GATHER_RULE), "{summary}");
        assert!(
            summary.contains("| Limits probe | read 4000 GB/s;"),
            "{summary}"
        );
        // csr-packed: graph 27 µs; own limit max(56 MB / 4 TB/s = 14 µs, 25 µs gathers) = 25;
        // CSR limit 35 µs: 130 % of it
        assert!(
            summary.contains(
                "| big | csr-packed | 27.00 | 25.00 | 93 % | **130 %** | 4.00 | gathers |"
            ),
            "{summary}"
        );
        assert!(
            summary
                .contains("these layouts move fewer bytes than CSR can: csr-packed on big (130 %"),
            "{summary}"
        );
        assert!(summary.contains("| small (fits L2) | csr |"), "{summary}");
        assert!(!summary.contains("csr on small (")); // no claim for an L2-resident matrix
        assert!(summary.contains("plots/limit-f64.png"), "{summary}");
        let csv = std::fs::read_to_string(files.limits_csv.as_ref().unwrap()).unwrap();
        assert_eq!(csv.lines().count(), 1 + 10);
        assert!(csv.starts_with(&CSV_COLUMNS.join(",")));
        let packed = csv
            .lines()
            .find(|l| l.starts_with("big,false,10000000,csr-packed,"))
            .unwrap();
        assert!(packed.ends_with(",true"), "{packed}");
        assert!(files.plots.iter().any(|p| p.ends_with("limit-f64.svg")));

        let files = write_report(&[run(false)], &dir.join("without")).unwrap();
        let summary = std::fs::read_to_string(&files.summary).unwrap();
        assert!(
            summary.contains("No probe in these runs: no limits."),
            "{summary}"
        );
        assert!(
            summary.contains("| Limits probe | not measured"),
            "{summary}"
        );
        assert!(files.limits_csv.is_none());
        assert!(!files
            .plots
            .iter()
            .any(|p| p.to_string_lossy().contains("limit-")));

        // a run with and one without a probe: limits where there is one, the rest counted
        let mut old = run(false);
        old.matrices.retain(|m| m.name == "small");
        old.matrices[0].name = "old".into();
        let files = write_report(&[run(true), old], &dir.join("mixed")).unwrap();
        let summary = std::fs::read_to_string(&files.summary).unwrap();
        assert!(
            summary.contains("2 results come from runs without a probe"),
            "{summary}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn old_runs_without_probe_or_sector_counts_load_and_report() {
        let mut v = serde_json::to_value(run(true)).unwrap();
        let machine = v["machine"].as_object_mut().unwrap();
        machine.remove("probe");
        assert!(machine.get("probe_error").is_none());
        for m in v["matrices"].as_array_mut().unwrap() {
            let stats = m["stats"].as_object_mut().unwrap();
            stats.remove("x_sectors_f32");
            stats.remove("x_sectors_f64");
        }
        let old: BenchRun = serde_json::from_value(v).unwrap();
        assert!(old.machine.probe.is_none());
        assert!(old.matrices.iter().all(|m| m.stats.x_sectors_f64.is_none()));
        let mut s = String::new();
        section(&mut s, &crate::bench::report::merge_runs(&[old]), F64);
        assert!(s.contains("No probe in these runs"), "{s}");
    }

    /// The machine table's probe line names the row gathers at the largest table when the probe
    /// has them, and is as before when it has not.
    #[test]
    fn the_probe_line_shows_the_row_gathers_where_measured() {
        let mut m = MachineInfo {
            probe: Some(probe(200.0)),
            ..MachineInfo::default()
        };
        let old = probe_line(&m);
        assert!(
            old.starts_with("read 4000 GB/s; 4-byte gathers 200.0 G/s at 1 MiB"),
            "{old}"
        );
        assert!(!old.contains("row"), "{old}");
        let rows = &mut m.probe.as_mut().unwrap().rows;
        for (table_bytes, row_bytes, rate_grs) in [
            (1 << 20, 16, 300.0),
            (1 << 30, 16, 44.0),
            (1 << 30, 256, 15.0),
            (1 << 30, 1024, 3.75),
        ] {
            rows.push(crate::gpu::RowPoint {
                table_bytes,
                row_bytes,
                rows_per_call: 1,
                rate_grs,
            });
        }
        let line = probe_line(&m);
        assert_eq!(
            line,
            format!("{old}; row gathers at 1024 MiB: 16 B 44.0 G/s, 1024 B 3.8 G/s (3840 GB/s)")
        );
    }

    #[test]
    fn cpu_runs_have_no_limits_section() {
        let mut cpu = run(false);
        cpu.machine.gpu = "none".into();
        for m in &mut cpu.matrices {
            for r in &mut m.results {
                let rec = r.record.as_mut().unwrap();
                rec.backend = Backend::Cpu;
                rec.graph_time = None;
                rec.time = Timing::from_samples(vec![10.0]);
            }
        }
        let merged = crate::bench::report::merge_runs(&[cpu]);
        let mut s = String::new();
        section(&mut s, &merged, F64);
        assert!(s.is_empty(), "{s}");
        assert!(csv(&merged).is_none());
    }
}
