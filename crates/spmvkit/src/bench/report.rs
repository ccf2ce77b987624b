//! Turning saved benchmark runs into a report (issue #4): merging runs, the comparison maths,
//! `summary.md`, the `results.csv` mirror and the plot set drawn by [`super::plots`].
//!
//! The maths, all on the median per-call time of a result whose status is `Ok`:
//! - speedup of method M over baseline B on a matrix: `t_B / t_M`; the `cusparse` baseline is
//!   the faster of `cusparse-alg1`, `cusparse-alg2` and `cusparse` on that matrix;
//! - the geometric mean of those speedups over all matrices, over those with nnz > 1M and over
//!   the bandwidth-bound ones (working set larger than L2), with wins and losses;
//! - the performance profile (Dolan–Moré): for τ ∈ [1, 4], the fraction of matrices on which a
//!   method's time is within τ of the best method's (a method that did not run never is);
//! - break-even calls `n* = (prepare + upload ms)·1000 / (t_B − t_M)` when M is faster (FastLoad §5.4);
//! - the share of the machine's device copy bandwidth reached (byte-model GB/s ÷ copy GB/s);
//! - CSR-Overlap's Eq. 2 (§5.5), `(t_cusparse_e2e − t_full) / t_partial + 1` with `cusparse-e2e`,
//!   `csr-full-overlap` and `csr-overlap`, and the plain ratio t_cusparse_e2e / t_full;
//! - the speedup over cuSPARSE in buckets of mean row length (< 16, 16–64, ≥ 64);
//! - the papers' speedup claims ([`PAPER_CLAIMS`]) next to the run's geomean and maximum of
//!   t_peer / t_method;
//! - a limit per GPU result from the run's limits probe ([`super::limits`]: `limits.csv`, a
//!   table per precision and the time-against-limit plot).
//!
//! A method variant (`name[key=value;...]`) is its own method everywhere: matched by its full
//! label, never by its base name.
//!
//! Stream times ([`RunRecord::time`]) are compared only with stream times and CUDA-graph times
//! ([`RunRecord::graph_time`]) only with graph times. The plots follow FastLoad Figs. 7
//! (speedup against nnz), 8 (speedup against row-length variation) and 10 (preprocessing time
//! against nnz), plus the performance profile; one set per precision.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use super::plots::{self, auto_range, Chart, Series, Style};
use super::{BenchRun, MachineInfo, MatrixResult, MethodResult, RunRecord, Status, Timing};
use crate::error::{Error, Result};
use crate::scalar::Precision;

/// Matrices with more nonzeros than this form the "large" subset.
pub const LARGE_NNZ: usize = 1_000_000;

/// Which per-call time to compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeKind {
    /// Back-to-back launches on one stream (CPU: wall clock).
    Stream,
    /// Replayed from a captured CUDA graph (GPU only).
    Graph,
}

impl TimeKind {
    pub fn name(self) -> &'static str {
        match self {
            TimeKind::Stream => "stream",
            TimeKind::Graph => "CUDA graph",
        }
    }
}

/// The matrices a summary figure is taken over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subset {
    All,
    /// nnz > [`LARGE_NNZ`].
    Large,
    /// Working set larger than the GPU's L2 (`!fits_l2`).
    BandwidthBound,
    /// Mean row length (nnz / rows) below [`SHORT_ROWS`].
    ShortRows,
    /// Mean row length in [[`SHORT_ROWS`], [`LONG_ROWS`]).
    MediumRows,
    /// Mean row length at least [`LONG_ROWS`].
    LongRows,
}

/// Mean row length below which a matrix counts as short-rowed (CSR-Overlap's claim: far ahead
/// of cuSPARSE there).
pub const SHORT_ROWS: f64 = 16.0;
/// Mean row length from which a matrix counts as long-rowed.
pub const LONG_ROWS: f64 = 64.0;

/// Mean row length nnz / rows of a matrix (`None` without rows).
pub fn mean_row_length(m: &MatrixResult) -> Option<f64> {
    (m.stats.nrows > 0).then(|| m.stats.nnz as f64 / m.stats.nrows as f64)
}

impl Subset {
    pub const ALL: [Subset; 3] = [Subset::All, Subset::Large, Subset::BandwidthBound];
    /// The buckets of mean row length, shortest first.
    pub const ROW_LENGTH: [Subset; 3] = [Subset::ShortRows, Subset::MediumRows, Subset::LongRows];

    pub fn contains(self, m: &MatrixResult) -> bool {
        match self {
            Subset::All => true,
            Subset::Large => m.stats.nnz > LARGE_NNZ,
            Subset::BandwidthBound => !m.fits_l2,
            Subset::ShortRows => mean_row_length(m).is_some_and(|l| l < SHORT_ROWS),
            Subset::MediumRows => {
                mean_row_length(m).is_some_and(|l| (SHORT_ROWS..LONG_ROWS).contains(&l))
            }
            Subset::LongRows => mean_row_length(m).is_some_and(|l| l >= LONG_ROWS),
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Subset::All => "all",
            Subset::Large => "nnz > 1M",
            Subset::BandwidthBound => "bandwidth-bound",
            Subset::ShortRows => "mean row length < 16",
            Subset::MediumRows => "mean row length 16–64",
            Subset::LongRows => "mean row length ≥ 64",
        }
    }
}

/// A baseline: a name and the methods it stands for (the fastest that ran counts).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Baseline {
    pub name: String,
    pub members: Vec<String>,
}

impl Baseline {
    /// cuSPARSE: the better of `cusparse-alg1`, `cusparse-alg2` and `cusparse`.
    pub fn cusparse() -> Self {
        Baseline {
            name: "cusparse".into(),
            members: vec![
                "cusparse-alg1".into(),
                "cusparse-alg2".into(),
                "cusparse".into(),
            ],
        }
    }

    /// A baseline that is one method.
    pub fn method(name: &str) -> Self {
        Baseline {
            name: name.into(),
            members: vec![name.into()],
        }
    }

    /// The baselines a report compares against: cuSPARSE and the plain `csr` method.
    pub fn defaults() -> Vec<Baseline> {
        vec![Baseline::cusparse(), Baseline::method("csr")]
    }

    pub fn is_member(&self, method: &str) -> bool {
        self.members.iter().any(|m| m == method)
    }

    /// How the baseline is described in the summary.
    pub fn describe(&self) -> String {
        if self.members.len() > 1 {
            format!("{} (best of {})", self.name, self.members.join(", "))
        } else {
            self.name.clone()
        }
    }

    /// The timing of the baseline's fastest member that ran on one matrix.
    pub fn timing<'a>(
        &self,
        results: &'a [MethodResult],
        precision: Precision,
        kind: TimeKind,
    ) -> Option<&'a Timing> {
        self.members
            .iter()
            .filter_map(|m| {
                let r = find_result(results, m, precision)?;
                result_time_us(r, kind)?;
                timing_of(r.record.as_ref()?, kind)
            })
            .min_by(|a, b| a.median_us.total_cmp(&b.median_us))
    }

    /// The baseline's time on one matrix: the fastest member that ran.
    pub fn time_us(
        &self,
        results: &[MethodResult],
        precision: Precision,
        kind: TimeKind,
    ) -> Option<f64> {
        self.members
            .iter()
            .filter_map(|m| method_time_us(results, m, precision, kind))
            .min_by(f64::total_cmp)
    }
}

/// Report settings.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// Baselines to compare against; the first is the one the speedup plots use.
    pub baselines: Vec<Baseline>,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            baselines: Baseline::defaults(),
        }
    }
}

/// Geometric mean; `None` when empty or when a value is not finite and positive.
pub fn geomean(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    Some((values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp())
}

/// The median per-call time of a result, in µs, if it ran correctly and has that timing.
pub fn result_time_us(r: &MethodResult, kind: TimeKind) -> Option<f64> {
    if r.status != Status::Ok {
        return None;
    }
    let rec = r.record.as_ref()?;
    let t = match kind {
        TimeKind::Stream => rec.time.median_us,
        TimeKind::Graph => rec.graph_time.as_ref()?.median_us,
    };
    (t.is_finite() && t > 0.0).then_some(t)
}

/// The result of `method` in `precision` on a matrix (the last one if listed twice).
pub fn find_result<'a>(
    results: &'a [MethodResult],
    method: &str,
    precision: Precision,
) -> Option<&'a MethodResult> {
    results
        .iter()
        .rev()
        .find(|r| r.method == method && r.precision == precision)
}

/// The time of `method` in `precision` on a matrix, if it ran correctly.
pub fn method_time_us(
    results: &[MethodResult],
    method: &str,
    precision: Precision,
    kind: TimeKind,
) -> Option<f64> {
    find_result(results, method, precision).and_then(|r| result_time_us(r, kind))
}

/// The fastest method in `precision` on a matrix and its time (first listed on a tie).
pub fn best_method(
    results: &[MethodResult],
    precision: Precision,
    kind: TimeKind,
) -> Option<(&str, f64)> {
    let mut best: Option<(&str, f64)> = None;
    for r in results.iter().filter(|r| r.precision == precision) {
        if let Some(t) = result_time_us(r, kind) {
            if best.is_none_or(|(_, b)| t < b) {
                best = Some((r.method.as_str(), t));
            }
        }
    }
    best
}

/// The timing of a result's record of kind `kind`.
pub fn timing_of(rec: &RunRecord, kind: TimeKind) -> Option<&Timing> {
    match kind {
        TimeKind::Stream => Some(&rec.time),
        TimeKind::Graph => rec.graph_time.as_ref(),
    }
}

/// The interquartile range (q1, q3) of a timing's per-call samples, by linear interpolation
/// between order statistics (one sample: that sample; none recorded: min and max).
pub fn quartiles(t: &Timing) -> (f64, f64) {
    let mut v: Vec<f64> = t
        .samples_us
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .collect();
    if v.is_empty() {
        return (t.min_us, t.max_us);
    }
    v.sort_by(f64::total_cmp);
    let q = |p: f64| {
        let pos = p * (v.len() - 1) as f64;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
    };
    (q(0.25), q(0.75))
}

/// Whether two timings cannot be told apart: their interquartile ranges overlap, so the
/// difference of their medians is within the sample-to-sample spread.
pub fn tie(a: &Timing, b: &Timing) -> bool {
    let (a1, a3) = quartiles(a);
    let (b1, b3) = quartiles(b);
    a1 <= b3 && b1 <= a3
}

/// Whether a method label is `auto` or one of its variants (`auto[mode=trial]`).
pub fn is_auto(method: &str) -> bool {
    method == "auto" || method.starts_with("auto[")
}

/// The method `auto` ran, from its record's notes.
pub fn auto_choice(rec: &RunRecord) -> Option<&str> {
    rec.notes
        .iter()
        .find(|(k, _)| k == "auto chose")
        .map(|(_, v)| v.as_str())
}

/// How a result is named in a report: the method, and for `auto` the method it ran,
/// `auto (→ csr)`.
pub fn result_label(r: &MethodResult) -> String {
    match r.record.as_ref().and_then(auto_choice) {
        Some(chosen) if is_auto(&r.method) => format!("{} (→ {chosen})", r.method),
        _ => r.method.clone(),
    }
}

/// One correct result in a [`ranking`].
#[derive(Clone, Debug)]
pub struct Ranked {
    /// The method label of the result.
    pub method: String,
    /// How to show it: [`result_label`], plus `(= auto)` when an `auto` entry ran this method.
    pub label: String,
    pub timing: Timing,
}

/// The correct results in `precision` on one matrix, fastest (median) first. An `auto` entry
/// that ran a method which also has its own entry is folded into that entry (its label says
/// `(= auto)`): it is the same code, not another contender.
pub fn ranking(results: &[MethodResult], precision: Precision, kind: TimeKind) -> Vec<Ranked> {
    let timed: Vec<(&MethodResult, &Timing)> = results
        .iter()
        .filter(|r| r.precision == precision && result_time_us(r, kind).is_some())
        .filter_map(|r| Some((r, timing_of(r.record.as_ref()?, kind)?)))
        .collect();
    let has_own_entry = |m: &str| timed.iter().any(|(r, _)| r.method == m);
    let mut out: Vec<Ranked> = Vec::new();
    for (r, t) in &timed {
        let chosen = r.record.as_ref().and_then(auto_choice);
        if is_auto(&r.method) && chosen.is_some_and(has_own_entry) {
            continue;
        }
        let folded: Vec<&str> = timed
            .iter()
            .filter(|(a, _)| {
                is_auto(&a.method) && a.record.as_ref().and_then(auto_choice) == Some(&r.method)
            })
            .map(|(a, _)| a.method.as_str())
            .collect();
        let mut label = result_label(r);
        if !folded.is_empty() {
            label = format!("{label} (= {})", folded.join(", "));
        }
        out.push(Ranked {
            method: r.method.clone(),
            label,
            timing: (*t).clone(),
        });
    }
    out.sort_by(|a, b| a.timing.median_us.total_cmp(&b.timing.median_us));
    out
}

/// The fastest entry of a [`ranking`] and the entries tied with it ([`tie`]).
pub fn fastest(ranked: &[Ranked]) -> Option<(&Ranked, Vec<&Ranked>)> {
    let (first, rest) = ranked.split_first()?;
    let ties = rest
        .iter()
        .filter(|r| tie(&first.timing, &r.timing))
        .collect();
    Some((first, ties))
}

/// Whether every measured result ran on the CPU (no GPU took part); with no measurement at
/// all, whether every run's machine had no GPU.
pub fn cpu_only(merged: &MergedRuns) -> bool {
    let mut backends = merged
        .matrices
        .iter()
        .flat_map(|m| &m.matrix.results)
        .filter_map(|r| r.record.as_ref().map(|rec| rec.backend))
        .peekable();
    if backends.peek().is_none() {
        return merged.runs.iter().all(|(m, _)| m.gpu == "none");
    }
    backends.all(|b| b == crate::methods::Backend::Cpu)
}

/// Speedup `baseline / method`, when both ran.
pub fn speedup(baseline_us: Option<f64>, method_us: Option<f64>) -> Option<f64> {
    match (baseline_us, method_us) {
        (Some(b), Some(m)) if b > 0.0 && m > 0.0 => Some(b / m),
        _ => None,
    }
}

/// Calls after which a method's preprocessing has paid for itself against a baseline:
/// `prep_ms·1000 / (t_baseline − t_method)`. `None` when the method is not faster (it never
/// pays off).
pub fn break_even_calls(prep_ms: f64, baseline_us: f64, method_us: f64) -> Option<f64> {
    if !(prep_ms.is_finite() && prep_ms >= 0.0 && method_us < baseline_us) {
        return None;
    }
    Some(prep_ms * 1000.0 / (baseline_us - method_us))
}

/// Effective GB/s of a record from its byte model and the chosen timing.
pub fn effective_gbs(rec: &RunRecord, kind: TimeKind) -> Option<f64> {
    let t = match kind {
        TimeKind::Stream => rec.time.median_us,
        TimeKind::Graph => rec.graph_time.as_ref()?.median_us,
    };
    (t.is_finite() && t > 0.0).then(|| rec.bytes_model as f64 / (t * 1e-6) * 1e-9)
}

/// Percent of the measured device copy bandwidth that `gbs` reaches.
pub fn copy_bandwidth_pct(gbs: f64, copy_bandwidth_gbs: Option<f64>) -> Option<f64> {
    match copy_bandwidth_gbs {
        Some(c) if c > 0.0 && c.is_finite() && gbs.is_finite() && gbs >= 0.0 => {
            Some(100.0 * gbs / c)
        }
        _ => None,
    }
}

/// The τ grid of the performance profile: `steps + 1` points from 1 to 4.
pub fn tau_grid(steps: usize) -> Vec<f64> {
    let steps = steps.max(1);
    (0..=steps)
        .map(|k| 1.0 + 3.0 * k as f64 / steps as f64)
        .collect()
}

/// The performance profile. `times[i][m]` is method m's time on matrix i (`None`: did not
/// run). Returns `profile[m][k]`: the fraction of matrices with `times[i][m] ≤ taus[k]·best_i`.
/// Matrices on which no method ran are left out of the count.
pub fn performance_profile(times: &[Vec<Option<f64>>], taus: &[f64]) -> Vec<Vec<f64>> {
    let methods = times.iter().map(Vec::len).max().unwrap_or(0);
    let mut counts = vec![vec![0usize; taus.len()]; methods];
    let mut matrices = 0usize;
    for row in times {
        let Some(best) = row.iter().flatten().copied().min_by(f64::total_cmp) else {
            continue;
        };
        matrices += 1;
        for (m, t) in row.iter().enumerate() {
            if let Some(t) = t {
                for (k, tau) in taus.iter().enumerate() {
                    // A relative slack so that the best method is within τ = 1 despite rounding.
                    if *t <= tau * best * (1.0 + 1e-12) {
                        counts[m][k] += 1;
                    }
                }
            }
        }
    }
    counts
        .into_iter()
        .map(|c| {
            c.into_iter()
                .map(|n| {
                    if matrices > 0 {
                        n as f64 / matrices as f64
                    } else {
                        0.0
                    }
                })
                .collect()
        })
        .collect()
}

/// Speedups of one method over one baseline on a set of matrices.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SpeedupSummary {
    /// Matrices on which both ran.
    pub compared: usize,
    /// Geometric mean of the speedups over the compared matrices.
    pub geomean: Option<f64>,
    /// Compared matrices where the method is faster and slower than the baseline by more than
    /// the spread of the samples ([`tie`]), and where the two cannot be told apart.
    pub wins: usize,
    pub losses: usize,
    pub ties: usize,
    /// The baseline ran but the method has a result that is not a correct timed run.
    pub method_failed: usize,
    /// The method ran but no baseline member did.
    pub baseline_missing: usize,
    /// Break-even calls on the compared matrices where the method is faster (stream timing).
    pub break_even: Vec<f64>,
}

/// Summarises the speedups of `method` over `baseline` on the matrices of `subset`.
pub fn speedup_summary(
    matrices: &[&MatrixResult],
    method: &str,
    baseline: &Baseline,
    precision: Precision,
    kind: TimeKind,
    subset: Subset,
) -> SpeedupSummary {
    let mut s = SpeedupSummary::default();
    let mut speedups = Vec::new();
    for m in matrices.iter().filter(|m| subset.contains(m)) {
        let b = baseline.time_us(&m.results, precision, kind);
        let r = find_result(&m.results, method, precision);
        let t = r.and_then(|r| result_time_us(r, kind));
        match (b, t) {
            (Some(b), Some(t)) => {
                let x = b / t;
                speedups.push(x);
                let tied = match (
                    baseline.timing(&m.results, precision, kind),
                    r.and_then(|r| r.record.as_ref())
                        .and_then(|rec| timing_of(rec, kind)),
                ) {
                    (Some(bt), Some(mt)) => tie(bt, mt),
                    _ => x == 1.0,
                };
                if tied {
                    s.ties += 1;
                } else if x > 1.0 {
                    s.wins += 1;
                } else if x < 1.0 {
                    s.losses += 1;
                }
                let prep = r
                    .and_then(|r| r.record.as_ref())
                    .map_or(0.0, |rec| rec.prep_ms + rec.upload_ms);
                if let Some(n) = break_even_calls(prep, b, t) {
                    s.break_even.push(n);
                }
            }
            // A method that ran fine but has no time of this kind (a CPU method has no CUDA
            // graph timing) is not a failure; one that did not run is.
            (Some(_), None) if r.is_some_and(|r| r.status != Status::Ok) => s.method_failed += 1,
            (None, Some(_)) => s.baseline_missing += 1,
            _ => {}
        }
    }
    s.compared = speedups.len();
    s.geomean = geomean(&speedups);
    s
}

/// Eq. 2 of CSR-Overlap §5.5: `(t_cusparse_e2e − t_full) / t_partial + 1`, the number of
/// CSR-Full-Overlap SpMVs done in the time of one cuSPARSE SpMV with its upload.
pub fn eq2_speedup(t_cusparse_e2e: f64, t_full: f64, t_partial: f64) -> Option<f64> {
    let ok = |t: f64| t.is_finite() && t > 0.0;
    (ok(t_cusparse_e2e) && ok(t_full) && ok(t_partial))
        .then(|| (t_cusparse_e2e - t_full) / t_partial + 1.0)
}

/// The methods Eq. 2 compares: cuSPARSE with upload, CSR-Full-Overlap, CSR-Partial-Overlap.
pub const EQ2_METHODS: [&str; 3] = ["cusparse-e2e", "csr-full-overlap", "csr-overlap"];

/// One matrix of the Eq. 2 comparison (times in µs).
#[derive(Clone, Debug, PartialEq)]
pub struct Eq2Row {
    pub matrix: String,
    pub t_cusparse_e2e: f64,
    pub t_full: f64,
    pub t_partial: f64,
    /// [`eq2_speedup`].
    pub eq2: f64,
    /// `t_cusparse_e2e / t_full`.
    pub ratio: f64,
}

/// The Eq. 2 rows of the matrices on which `cusparse-e2e`, `csr-full-overlap` and
/// `csr-overlap` all ran correctly in `precision` (exact names: a variant is another method).
pub fn eq2_rows(matrices: &[&MatrixResult], precision: Precision, kind: TimeKind) -> Vec<Eq2Row> {
    matrices
        .iter()
        .filter_map(|m| {
            let t = |me| method_time_us(&m.results, me, precision, kind);
            let (e2e, full, partial) = (t(EQ2_METHODS[0])?, t(EQ2_METHODS[1])?, t(EQ2_METHODS[2])?);
            Some(Eq2Row {
                matrix: m.name.clone(),
                t_cusparse_e2e: e2e,
                t_full: full,
                t_partial: partial,
                eq2: eq2_speedup(e2e, full, partial)?,
                ratio: e2e / full,
            })
        })
        .collect()
}

/// Arithmetic mean; `None` when empty or when a value is not finite.
pub fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    Some(values.iter().sum::<f64>() / values.len() as f64)
}

/// A speedup claimed in a paper: `seed` is faster than `peer` by `factor` (t_peer / t_seed).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PaperClaim {
    pub seed: &'static str,
    /// The compared method; `cusparse` stands for the cuSPARSE baseline (best of its members).
    pub peer: &'static str,
    /// The claimed factor, `None` where the paper gives no figure.
    pub factor: Option<f64>,
    /// The claim in the paper's words.
    pub claim: &'static str,
    pub source: &'static str,
}

const fn claim(
    seed: &'static str,
    peer: &'static str,
    factor: Option<f64>,
    claim: &'static str,
    source: &'static str,
) -> PaperClaim {
    PaperClaim {
        seed,
        peer,
        factor,
        claim,
        source,
    }
}

const FASTLOAD: &str = "FastLoad (TPDS'24), average speedup";
const TEB: &str = "TEB, Table 2, average speedup";
const CB: &str = "CB-SpMV, summary";

/// The papers' speedup claims the report checks against the run.
pub const PAPER_CLAIMS: &[PaperClaim] = &[
    claim("fastload", "csc", Some(2.12), "2.12×", FASTLOAD),
    claim("fastload", "cusparse", Some(2.98), "2.98×", FASTLOAD),
    claim("fastload", "csr5", Some(2.88), "2.88×", FASTLOAD),
    claim("fastload", "tilespmv", Some(1.22), "1.22×", FASTLOAD),
    claim("teb", "amf-csr", Some(3.23), "3.23×", TEB),
    claim("teb", "pbc", Some(5.83), "5.83×", TEB),
    claim("teb", "csr-scalar", Some(2.33), "2.33×", TEB),
    claim("teb", "csr5", Some(2.21), "2.21×", TEB),
    claim(
        "csr-overlap",
        "cusparse",
        Some(1.4),
        "1.4× average",
        "CSR-Overlap §5.3",
    ),
    claim("cb-spmv", "cusparse", Some(3.95), "up to 3.95× average", CB),
    claim("cb-spmv", "cusparse-bsr", None, "faster (no figure)", CB),
    claim("cb-spmv", "tilespmv", None, "faster (no figure)", CB),
    claim("cb-spmv", "dasp", None, "faster (no figure)", CB),
    claim(
        "hbp",
        "csr-vector",
        Some(1.61),
        "1.61× average, up to 3.01×",
        "HBP (RTX 4090)",
    ),
];

/// What the run says about one claim in one precision and timing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClaimMeasure {
    /// Matrices on which both ran correctly.
    pub n: usize,
    /// Geometric mean and maximum of t_peer / t_seed over them.
    pub geomean: Option<f64>,
    pub max: Option<f64>,
}

impl PaperClaim {
    /// The peer as a baseline: `cusparse` is [`Baseline::cusparse`], any other name itself.
    pub fn peer_baseline(&self) -> Baseline {
        if self.peer == "cusparse" {
            Baseline::cusparse()
        } else {
            Baseline::method(self.peer)
        }
    }

    /// Whether both methods have a result (of any status) in `precision`.
    pub fn present(&self, matrices: &[&MatrixResult], precision: Precision) -> bool {
        let peer = self.peer_baseline();
        let has = |f: &dyn Fn(&str) -> bool| {
            matrices.iter().any(|m| {
                m.results
                    .iter()
                    .any(|r| r.precision == precision && f(&r.method))
            })
        };
        has(&|me| me == self.seed) && has(&|me| peer.is_member(me))
    }

    /// t_peer / t_seed over the matrices where both ran correctly.
    pub fn measure(
        &self,
        matrices: &[&MatrixResult],
        precision: Precision,
        kind: TimeKind,
    ) -> ClaimMeasure {
        let peer = self.peer_baseline();
        let ratios: Vec<f64> = matrices
            .iter()
            .filter_map(|m| {
                speedup(
                    peer.time_us(&m.results, precision, kind),
                    method_time_us(&m.results, self.seed, precision, kind),
                )
            })
            .collect();
        ClaimMeasure {
            n: ratios.len(),
            geomean: geomean(&ratios),
            max: ratios.iter().copied().max_by(f64::total_cmp),
        }
    }
}

/// One matrix after merging, with the run each result came from.
#[derive(Clone, Debug)]
pub struct MergedMatrix {
    pub matrix: MatrixResult,
    /// `run_of[i]`: index into the runs of `matrix.results[i]`.
    pub run_of: Vec<usize>,
}

/// Several runs merged into one set of results.
#[derive(Clone, Debug, Default)]
pub struct MergedRuns {
    /// The machine and suite of each run, in the order given.
    pub runs: Vec<(MachineInfo, Option<String>)>,
    /// Matrices in order of first appearance.
    pub matrices: Vec<MergedMatrix>,
    /// Inputs a run could not load, with the reason (the last reason per input), unless a
    /// later run measured them.
    pub skipped: Vec<(String, String)>,
}

impl MergedRuns {
    pub fn matrix_refs(&self) -> Vec<&MatrixResult> {
        self.matrices.iter().map(|m| &m.matrix).collect()
    }

    /// Precisions with at least one result.
    pub fn precisions(&self) -> Vec<Precision> {
        Precision::ALL
            .into_iter()
            .filter(|p| {
                self.matrices
                    .iter()
                    .any(|m| m.matrix.results.iter().any(|r| r.precision == *p))
            })
            .collect()
    }

    /// Methods with a result in `precision`, in order of first appearance.
    pub fn methods(&self, precision: Precision) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in self.matrices.iter().flat_map(|m| &m.matrix.results) {
            if r.precision == precision && !out.contains(&r.method) {
                out.push(r.method.clone());
            }
        }
        out
    }

    /// Methods with a result in any precision, in order of first appearance.
    pub fn all_methods(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in self.matrices.iter().flat_map(|m| &m.matrix.results) {
            if !out.contains(&r.method) {
                out.push(r.method.clone());
            }
        }
        out
    }

    /// The copy bandwidth of the machine result `i` of matrix `m` was measured on.
    fn copy_bandwidth(&self, m: &MergedMatrix, i: usize) -> Option<f64> {
        m.run_of
            .get(i)
            .and_then(|&r| self.runs.get(r))
            .and_then(|(machine, _)| machine.copy_bandwidth_gbs)
    }
}

/// Merges runs in the order given: matrices are matched by name, and a result for the same
/// (matrix, method, precision) in a later run replaces the earlier one. A matrix's statistics
/// and L2 flag are those of the last run that measured it, but for x-sector counts that run did
/// not make: an earlier run's of the same shape stand.
pub fn merge_runs(runs: &[BenchRun]) -> MergedRuns {
    let mut merged = MergedRuns::default();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    for (ri, run) in runs.iter().enumerate() {
        merged.runs.push((run.machine.clone(), run.suite.clone()));
        for m in &run.matrices {
            let idx = *by_name.entry(m.name.clone()).or_insert_with(|| {
                merged.matrices.push(MergedMatrix {
                    matrix: MatrixResult {
                        results: Vec::new(),
                        ..m.clone()
                    },
                    run_of: Vec::new(),
                });
                merged.matrices.len() - 1
            });
            let slot = &mut merged.matrices[idx];
            slot.matrix.source.clone_from(&m.source);
            // the x-sector counts are structural: a run that did not count them keeps an
            // earlier run's for the same shape
            let old = std::mem::replace(&mut slot.matrix.stats, m.stats.clone());
            let st = &mut slot.matrix.stats;
            if (old.nrows, old.ncols, old.nnz) == (st.nrows, st.ncols, st.nnz) {
                st.x_sectors_f32 = st.x_sectors_f32.or(old.x_sectors_f32);
                st.x_sectors_f64 = st.x_sectors_f64.or(old.x_sectors_f64);
            }
            slot.matrix.fits_l2 = m.fits_l2;
            for r in &m.results {
                let existing = slot
                    .matrix
                    .results
                    .iter()
                    .position(|e| e.method == r.method && e.precision == r.precision);
                match existing {
                    Some(i) => {
                        slot.matrix.results[i] = r.clone();
                        slot.run_of[i] = ri;
                    }
                    None => {
                        slot.matrix.results.push(r.clone());
                        slot.run_of.push(ri);
                    }
                }
            }
        }
    }
    for run in runs {
        for (source, why) in &run.skipped {
            merged.skipped.retain(|(s, _)| s != source);
            merged.skipped.push((source.clone(), why.clone()));
        }
    }
    merged
        .skipped
        .retain(|(s, _)| !merged.matrices.iter().any(|m| &m.matrix.source == s));
    merged
}

/// What [`write_report`] wrote.
#[derive(Clone, Debug, Default)]
pub struct ReportFiles {
    pub summary: PathBuf,
    pub csv: PathBuf,
    /// `limits.csv`, written when some result has a limit (a GPU run with a probe).
    pub limits_csv: Option<PathBuf>,
    /// Every plot file (SVG and PNG).
    pub plots: Vec<PathBuf>,
    /// Plots not drawn, and why.
    pub notes: Vec<String>,
}

/// Reads run files: each path is a `run-*.json` file (gzip-compressed too, as the committed
/// `run-*.json.gz`) or a directory whose `run-*.json` and `run-*.json.gz` files are read in name
/// order. Paths are taken in the order given (later runs win when merged).
pub fn load_runs(paths: &[PathBuf]) -> Result<Vec<BenchRun>> {
    if paths.is_empty() {
        return Err(Error::InvalidArgument(
            "no run files or directories given".into(),
        ));
    }
    let mut files = Vec::new();
    for p in paths {
        let meta = fs::metadata(p).map_err(|e| Error::io(p, e))?;
        if meta.is_dir() {
            let mut found = Vec::new();
            for entry in fs::read_dir(p).map_err(|e| Error::io(p, e))? {
                let path = entry.map_err(|e| Error::io(p, e))?.path();
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let json = name.ends_with(".json") || name.ends_with(".json.gz");
                if name.starts_with("run-") && json && path.is_file() {
                    found.push(path);
                }
            }
            if found.is_empty() {
                return Err(Error::InvalidArgument(format!(
                    "{}: no run-*.json(.gz) files in this directory",
                    p.display()
                )));
            }
            found.sort();
            files.extend(found);
        } else {
            files.push(p.clone());
        }
    }
    files.iter().map(|f| read_run(f)).collect()
}

fn read_run(path: &Path) -> Result<BenchRun> {
    let text = read_text_maybe_gz(path)?;
    serde_json::from_str(&text).map_err(|e| Error::Parse {
        path: Some(path.to_path_buf()),
        line: e.line() as u64,
        msg: format!("not a spmvkit run file: {e}"),
    })
}

/// The text of a file, gunzipped when it starts with the gzip magic bytes.
pub fn read_text_maybe_gz(path: &Path) -> Result<String> {
    use std::io::Read as _;
    let bytes = fs::read(path).map_err(|e| Error::io(path, e))?;
    let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .map_err(|e| Error::io(path, e))?;
        out
    } else {
        bytes
    };
    String::from_utf8(bytes).map_err(|_| Error::Parse {
        path: Some(path.to_path_buf()),
        line: 0,
        msg: "not UTF-8 text".into(),
    })
}

/// Writes `summary.md`, `results.csv` and `plots/*.{svg,png}` under `out_dir` for the merged
/// runs, comparing against [`Baseline::defaults`].
pub fn write_report(runs: &[BenchRun], out_dir: &Path) -> Result<ReportFiles> {
    write_report_with(runs, out_dir, &ReportOptions::default())
}

/// [`write_report`] with explicit options.
pub fn write_report_with(
    runs: &[BenchRun],
    out_dir: &Path,
    opts: &ReportOptions,
) -> Result<ReportFiles> {
    if runs.is_empty() {
        return Err(Error::InvalidArgument("no runs to report on".into()));
    }
    let merged = merge_runs(runs);
    let plot_dir = out_dir.join("plots");
    fs::create_dir_all(&plot_dir).map_err(|e| Error::io(&plot_dir, e))?;
    let mut files = ReportFiles {
        summary: out_dir.join("summary.md"),
        csv: out_dir.join("results.csv"),
        ..ReportFiles::default()
    };
    let mut drawn: Vec<(Precision, String, String)> = Vec::new();
    for p in merged.precisions() {
        let (charts, notes) = charts_for(&merged, opts, p);
        files.notes.extend(notes);
        for (stem, chart) in charts {
            let paths = plots::render(&chart, &plot_dir.join(&stem))?;
            drawn.push((p, chart.title.clone(), format!("plots/{stem}.png")));
            files.plots.extend(paths);
        }
    }
    let summary = summary_markdown(&merged, opts, &drawn, &files.notes);
    fs::write(&files.summary, summary).map_err(|e| Error::io(&files.summary, e))?;
    fs::write(&files.csv, results_csv(&merged, opts)).map_err(|e| Error::io(&files.csv, e))?;
    if let Some(text) = super::limits::csv(&merged) {
        let path = out_dir.join("limits.csv");
        fs::write(&path, text).map_err(|e| Error::io(&path, e))?;
        files.limits_csv = Some(path);
    }
    Ok(files)
}

/// The plot set of one precision: `(file stem, chart)`, and notes on plots left out.
pub fn charts_for(
    merged: &MergedRuns,
    opts: &ReportOptions,
    p: Precision,
) -> (Vec<(String, Chart)>, Vec<String>) {
    let kind = TimeKind::Stream;
    let cpu = cpu_only(merged);
    let timing = if cpu {
        "CPU wall clock (no GPU)"
    } else {
        "stream timing"
    };
    let on_cpu = if cpu { ", CPU (no GPU)" } else { "" };
    let mut charts = Vec::new();
    let mut notes = Vec::new();
    let matrices = merged.matrix_refs();
    // Only methods with at least one correct timed result are drawn: a method that never ran
    // would be a flat line at zero. Colours and markers follow the order of the methods that
    // ran in any precision, so a method looks the same in every plot.
    let ran = |me: &str, q: Precision| {
        matrices
            .iter()
            .any(|m| method_time_us(&m.results, me, q, kind).is_some())
    };
    // On the CPU an `auto` entry that only repeated listed methods is left out too (the summary
    // says so): it would split the profile's matrices with the method it ran.
    let methods: Vec<String> = merged
        .methods(p)
        .into_iter()
        .filter(|me| ran(me, p) && !(cpu && only_repeats(&matrices, p, me)))
        .collect();
    let every: Vec<String> = merged
        .all_methods()
        .into_iter()
        .filter(|me| merged.precisions().into_iter().any(|q| ran(me, q)))
        .collect();
    let style_of = |me: &str| every.iter().position(|x| x == me).unwrap_or(0);
    let label_of = |me: &str| method_display(&matrices, p, me);
    let any_ok = matrices
        .iter()
        .any(|m| best_method(&m.results, p, kind).is_some());
    if !any_ok {
        notes.push(format!(
            "{p}: no plots, no method ran correctly in this precision"
        ));
        return (charts, notes);
    }

    // Performance profile.
    let taus = tau_grid(300);
    let times: Vec<Vec<Option<f64>>> = matrices
        .iter()
        .map(|m| {
            methods
                .iter()
                .map(|me| method_time_us(&m.results, me, p, kind))
                .collect()
        })
        .collect();
    let profile = performance_profile(&times, &taus);
    let n_profiled = times
        .iter()
        .filter(|row| row.iter().any(Option::is_some))
        .count();
    charts.push((
        format!("profile-{p}"),
        Chart {
            title: format!("Performance profile, {p}, {timing} ({n_profiled} matrices)"),
            x_label: "τ (time ≤ τ × fastest method's time)".into(),
            y_label: "fraction of matrices".into(),
            x_log: false,
            y_log: false,
            x_range: (1.0, 4.0),
            y_range: (0.0, 1.04),
            style: Style::Lines,
            series: methods
                .iter()
                .zip(&profile)
                .map(|(me, fr)| Series {
                    label: label_of(me),
                    style: style_of(me),
                    points: taus.iter().copied().zip(fr.iter().copied()).collect(),
                })
                .collect(),
            hline: None,
            diagonal: None,
        },
    ));

    // Speedup over the first baseline against nnz and against row-length variation.
    // On the CPU the GPU baseline (cuSPARSE) never runs: the first baseline that ran stands in.
    let base = if cpu {
        opts.baselines.iter().find(|b| {
            matrices
                .iter()
                .any(|m| b.time_us(&m.results, p, kind).is_some())
        })
    } else {
        opts.baselines.first()
    };
    if let Some(base) = base {
        let mut by_nnz = Vec::new();
        let mut by_var = Vec::new();
        for me in methods.iter().filter(|me| !base.is_member(me)) {
            let mut a = Vec::new();
            let mut v = Vec::new();
            for m in &matrices {
                let b = base.time_us(&m.results, p, kind);
                if let Some(x) = speedup(b, method_time_us(&m.results, me, p, kind)) {
                    a.push((m.stats.nnz as f64, x));
                    v.push((m.stats.row_variation, x));
                }
            }
            if !a.is_empty() {
                by_nnz.push(Series {
                    label: label_of(me),
                    style: style_of(me),
                    points: a,
                });
                by_var.push(Series {
                    label: label_of(me),
                    style: style_of(me),
                    points: v,
                });
            }
        }
        if by_nnz.is_empty() {
            notes.push(format!(
                "{p}: no speedup plots, no matrix has both a {} result and another method's",
                base.name
            ));
        } else {
            let ys = || by_nnz.iter().flat_map(|s| s.points.iter().map(|q| q.1));
            let y_hi = ys().fold(1.0f64, f64::max);
            let y_range = (0.0, (y_hi * 1.08).max(1.25));
            let x_range = auto_range(
                by_nnz.iter().flat_map(|s| s.points.iter().map(|q| q.0)),
                true,
                (1.0, 1e6),
            );
            let y_label = format!("speedup over {} (t_{} / t_method)", base.name, base.name);
            charts.push((
                format!("speedup-nnz-{p}"),
                Chart {
                    title: format!("Speedup over {} against nnz, {p}, {timing}", base.name),
                    x_label: "nonzeros (log scale)".into(),
                    y_label: y_label.clone(),
                    x_log: true,
                    y_log: false,
                    x_range,
                    y_range,
                    style: Style::Points,
                    series: by_nnz,
                    hline: Some((1.0, format!("equal to {}", base.name))),
                    diagonal: None,
                },
            ));
            let xs: Vec<f64> = by_var
                .iter()
                .flat_map(|s| s.points.iter().map(|q| q.0))
                .collect();
            let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = xs.iter().copied().fold(0.0f64, f64::max);
            let x_log = lo > 0.0 && hi / lo > 30.0;
            let x_range = if x_log {
                auto_range(xs.iter().copied(), true, (0.01, 10.0))
            } else {
                (0.0, (hi * 1.06).max(0.1))
            };
            charts.push((
                format!("speedup-variation-{p}"),
                Chart {
                    title: format!(
                        "Speedup over {} against row-length variation, {p}{on_cpu}",
                        base.name
                    ),
                    x_label: format!(
                        "row-length variation (std / mean of row lengths{})",
                        if x_log { ", log scale" } else { "" }
                    ),
                    y_label,
                    x_log,
                    y_log: false,
                    x_range,
                    y_range,
                    style: Style::Points,
                    series: by_var,
                    hline: Some((1.0, format!("equal to {}", base.name))),
                    diagonal: None,
                },
            ));
        }
    }

    // Preprocessing time against nnz (log-log); a zero time is drawn at the floor.
    const PREP_FLOOR_MS: f64 = 1e-3;
    let prep: Vec<Series> = methods
        .iter()
        .filter_map(|me| {
            let points: Vec<(f64, f64)> = matrices
                .iter()
                .filter_map(|m| {
                    let r = find_result(&m.results, me, p)?;
                    result_time_us(r, kind)?;
                    let rec = r.record.as_ref()?;
                    (m.stats.nnz > 0).then(|| (m.stats.nnz as f64, rec.prep_ms.max(PREP_FLOOR_MS)))
                })
                .collect();
            (!points.is_empty()).then(|| Series {
                label: label_of(me),
                style: style_of(me),
                points,
            })
        })
        .collect();
    if !prep.is_empty() {
        let x_range = auto_range(
            prep.iter().flat_map(|s| s.points.iter().map(|q| q.0)),
            true,
            (1.0, 1e6),
        );
        let y_range = auto_range(
            prep.iter().flat_map(|s| s.points.iter().map(|q| q.1)),
            true,
            (1e-3, 1e3),
        );
        charts.push((
            format!("prep-nnz-{p}"),
            Chart {
                title: format!("Preprocessing time against nnz, {p}{on_cpu}"),
                x_label: "nonzeros (log scale)".into(),
                y_label: "host preprocessing time, ms (log scale; 0 drawn at 0.001)".into(),
                x_log: true,
                y_log: true,
                x_range,
                y_range,
                style: Style::Points,
                series: prep,
                hline: None,
                diagonal: None,
            },
        ));
    }

    // Time against the limit (GPU runs with a probe).
    if !cpu {
        if let Some(chart) = super::limits::chart(merged, p, &methods, &style_of, &label_of) {
            charts.push((format!("limit-{p}"), chart));
        }
    }
    (charts, notes)
}

fn fmt_speedup(x: Option<f64>) -> String {
    x.map_or_else(|| "–".into(), |x| format!("{x:.2}×"))
}

fn fmt_opt(x: Option<f64>, digits: usize) -> String {
    x.map_or_else(|| "–".into(), |x| format!("{x:.digits$}"))
}

fn fmt_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

fn fmt_count(n: usize) -> String {
    if n >= 1_000_000 {
        format!("{:.2}M", n as f64 / 1e6)
    } else if n >= 10_000 {
        format!("{:.1}k", n as f64 / 1e3)
    } else {
        n.to_string()
    }
}

/// Markdown table cell text: no newlines, pipes escaped.
fn cell(s: &str) -> String {
    s.replace('\r', "").replace('\n', " ").replace('|', "\\|")
}

fn median(v: &[f64]) -> Option<f64> {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        0.5 * (s[n / 2 - 1] + s[n / 2])
    })
}

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Wrong => "wrong",
        Status::Unsupported => "unsupported",
        Status::Failed => "failed",
    }
}

/// The caveat that opens a report whose every result ran on the CPU.
pub const CPU_CAVEAT: &str = "**No GPU: these are CPU times.** Every method ran its CPU mirror, \
which walks the data layout its GPU kernel reads, and the GPU-only methods (cuSPARSE) did not \
run. The times compare the mirrors on this CPU; they say nothing about the GPU kernels, so the \
papers' GPU speedup claims are not set against them. Times are wall clock per call: the median \
of the samples with their interquartile range (IQR); where two ranges overlap, the difference is \
within the noise and the two are reported as a tie.";

/// The text of `summary.md`. `plots` lists `(precision, title, relative PNG path)`.
pub fn summary_markdown(
    merged: &MergedRuns,
    opts: &ReportOptions,
    plots: &[(Precision, String, String)],
    notes: &[String],
) -> String {
    let mut s = String::new();
    let matrices = merged.matrix_refs();
    let cpu = cpu_only(merged);
    let _ = writeln!(
        s,
        "# spmvkit benchmark report
"
    );
    if cpu {
        let _ = writeln!(s, "{CPU_CAVEAT}\n");
    }
    if merged.runs.len() > 1 {
        let _ = writeln!(
            s,
            "Merged from {} runs, in the order given: where runs overlap, the later run's result for a \
             (matrix, method, precision) replaces the earlier one.\n",
            merged.runs.len()
        );
    }
    machine_section(&mut s, merged, cpu);

    let l2 = matrices.iter().filter(|m| m.fits_l2).count();
    let large = matrices.iter().filter(|m| m.stats.nnz > LARGE_NNZ).count();
    let _ = writeln!(s, "## Matrices\n");
    if cpu {
        let _ = writeln!(
            s,
            "{} matrices, {} with nnz > 1M{}.\n",
            matrices.len(),
            large,
            if merged.skipped.is_empty() {
                String::new()
            } else {
                format!("; {} inputs skipped (listed below)", merged.skipped.len())
            }
        );
    } else {
        let _ = writeln!(
            s,
            "{} matrices: {} bandwidth-bound, {} whose working set fits in L2 (reported apart: they \
             measure launch overhead more than memory bandwidth), {} with nnz > 1M.\n",
            matrices.len(),
            matrices.len() - l2,
            l2,
            large
        );
    }

    for p in merged.precisions() {
        if cpu {
            cpu_precision_section(&mut s, merged, opts, p);
        } else {
            precision_section(&mut s, merged, opts, p);
        }
        let mine: Vec<_> = plots.iter().filter(|(q, _, _)| *q == p).collect();
        if !mine.is_empty() {
            let _ = writeln!(s, "### Plots ({p})\n");
            for (_, title, path) in mine {
                let svg = path.replace(".png", ".svg");
                let _ = writeln!(s, "![{title}]({path})  \n[{title} (SVG)]({svg})\n");
            }
        }
    }

    if !cpu {
        eq2_section(&mut s, merged);
        row_length_section(&mut s, merged);
        s.push_str(&crate::methods::auto::eval::report_section(merged));
        claims_section(&mut s, merged);
    }
    skipped_section(&mut s, merged);
    problems_section(&mut s, merged);
    if !notes.is_empty() {
        let _ = writeln!(s, "## Notes\n");
        for n in notes {
            let _ = writeln!(s, "- {n}");
        }
        s.push('\n');
    }
    s
}

fn skipped_section(s: &mut String, merged: &MergedRuns) {
    if merged.skipped.is_empty() {
        return;
    }
    let _ = writeln!(s, "## Skipped inputs\n");
    let _ = writeln!(s, "| input | reason |\n|---|---|");
    for (source, why) in &merged.skipped {
        let _ = writeln!(s, "| {} | {} |", cell(source), cell(why));
    }
    s.push('\n');
}

fn machine_section(s: &mut String, merged: &MergedRuns, cpu: bool) {
    let _ = writeln!(s, "## Machine\n");
    for (i, (m, suite)) in merged.runs.iter().enumerate() {
        if merged.runs.len() > 1 {
            let _ = writeln!(
                s,
                "### Run {} ({})\n",
                i + 1,
                if m.started.is_empty() {
                    "start time unknown"
                } else {
                    &m.started
                }
            );
        }
        let mut gpu = m.gpu.clone();
        let mut extra = Vec::new();
        if let Some(n) = m.sm_count {
            extra.push(format!("{n} SMs"));
        }
        if let Some(b) = m.gpu_memory_bytes {
            extra.push(format!("{} memory", fmt_bytes(b)));
        }
        if let Some(b) = m.l2_bytes {
            extra.push(format!("{} L2", fmt_bytes(b)));
        }
        if !extra.is_empty() {
            let _ = write!(gpu, " ({})", extra.join(", "));
        }
        if cpu && m.gpu == "none" {
            gpu = "none (every method ran on the CPU)".into();
        }
        let rows = [
            ("GPU", gpu),
            (
                "Driver / CUDA",
                format!(
                    "{} / {}",
                    m.driver_version.as_deref().unwrap_or("unknown"),
                    m.cuda_version.as_deref().unwrap_or("unknown")
                ),
            ),
            ("CPU threads", m.cpu_threads.to_string()),
            (
                "Copy bandwidth",
                m.copy_bandwidth_gbs.map_or_else(
                    || "not measured".into(),
                    |g| format!("{g:.1} GB/s (device-to-device, read + write)"),
                ),
            ),
            ("Limits probe", super::limits::probe_line(m)),
            (
                "Commit",
                if m.commit.is_empty() {
                    "unknown".into()
                } else {
                    m.commit.clone()
                },
            ),
            (
                "Command",
                if m.command.is_empty() {
                    "unknown".into()
                } else {
                    format!("`{}`", m.command.replace('`', "'"))
                },
            ),
            (
                "Started",
                if m.started.is_empty() {
                    "unknown".into()
                } else {
                    m.started.clone()
                },
            ),
            ("Suite", suite.clone().unwrap_or_else(|| "–".into())),
        ];
        let _ = writeln!(s, "| | |\n|---|---|");
        for (k, v) in rows {
            if cpu && matches!(k, "Driver / CUDA" | "Copy bandwidth" | "Limits probe") {
                continue;
            }
            let _ = writeln!(s, "| {k} | {} |", cell(&v));
        }
        s.push('\n');
    }
}

/// The heading of a precision's section and its count of results by status.
fn precision_header(s: &mut String, matrices: &[&MatrixResult], p: Precision) {
    let _ = writeln!(s, "## Precision {p}\n");
    let mut counts = [0usize; 4];
    for r in matrices
        .iter()
        .flat_map(|m| &m.results)
        .filter(|r| r.precision == p)
    {
        counts[r.status as usize] += 1;
    }
    let _ = writeln!(
        s,
        "Results: {} ok, {} wrong, {} unsupported, {} failed (listed under Failures).\n",
        counts[Status::Ok as usize],
        counts[Status::Wrong as usize],
        counts[Status::Unsupported as usize],
        counts[Status::Failed as usize]
    );
}

/// A performance-profile table: one row per method label, the share of matrices within each τ.
fn profile_table(
    s: &mut String,
    taus: &[f64],
    labels: impl Iterator<Item = String>,
    profile: &[Vec<f64>],
) {
    let _ = write!(s, "| method |");
    for t in taus {
        let _ = write!(s, " τ = {t} |");
    }
    let _ = writeln!(s, "\n|---|{}", "---|".repeat(taus.len()));
    for (label, fr) in labels.zip(profile) {
        let _ = write!(s, "| {} |", cell(&label));
        for f in fr {
            let _ = write!(s, " {:.0}% |", 100.0 * f);
        }
        s.push('\n');
    }
    s.push('\n');
}

fn precision_section(s: &mut String, merged: &MergedRuns, opts: &ReportOptions, p: Precision) {
    let matrices = merged.matrix_refs();
    let methods = merged.methods(p);
    precision_header(s, &matrices, p);

    let has_kind = |kind: TimeKind| {
        matrices.iter().any(|m| {
            m.results
                .iter()
                .any(|r| r.precision == p && result_time_us(r, kind).is_some())
        })
    };
    // CUDA-graph timing leads: on L2-resident matrices stream timing measures the host's launch
    // overhead more than the kernel.
    for kind in [TimeKind::Graph, TimeKind::Stream] {
        if !has_kind(kind) {
            continue;
        }
        for base in &opts.baselines {
            let present = matrices
                .iter()
                .any(|m| base.time_us(&m.results, p, kind).is_some());
            if !present {
                if kind == TimeKind::Stream {
                    let _ = writeln!(
                        s,
                        "No {} results in {p}: no speedups over it.\n",
                        base.describe()
                    );
                }
                continue;
            }
            let _ = writeln!(
                s,
                "### Speedup over {}, {} timing\n",
                base.describe(),
                kind.name()
            );
            let _ = writeln!(
                s,
                "Geometric mean of t_baseline / t_method over the matrices where both ran (n); wins / \
                 ties / losses over all matrices (a tie: the interquartile ranges of the samples \
                 overlap); break-even: median calls for the method's preprocessing to pay off where \
                 it is faster.\n"
            );
            if let Some(note) = host_baseline_note(&matrices, base, p) {
                let _ = writeln!(s, "{note}\n");
            }
            let _ = writeln!(
                s,
                "| method | all | nnz > 1M | bandwidth-bound | wins / ties / losses | method failed | no baseline | break-even calls |"
            );
            let _ = writeln!(s, "|---|---|---|---|---|---|---|---|");
            // A one-method baseline against itself says nothing; the members of a composite
            // baseline stay (which cuSPARSE algorithm wins is worth seeing).
            for me in methods
                .iter()
                .filter(|me| base.members.len() > 1 || !base.is_member(me))
            {
                let sums: Vec<SpeedupSummary> = Subset::ALL
                    .iter()
                    .map(|sub| speedup_summary(&matrices, me, base, p, kind, *sub))
                    .collect();
                let all = &sums[0];
                let be = if kind == TimeKind::Stream {
                    let never = all.compared - all.break_even.len();
                    match median(&all.break_even) {
                        Some(n) => format!("{} (never: {never})", fmt_count(n.ceil() as usize)),
                        None if all.compared > 0 => format!("never ({never})"),
                        None => "–".into(),
                    }
                } else {
                    "–".into()
                };
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} / {} / {} | {} | {} | {} |",
                    cell(&method_display(&matrices, p, me)),
                    speedup_cell(&sums[0]),
                    speedup_cell(&sums[1]),
                    speedup_cell(&sums[2]),
                    all.wins,
                    all.ties,
                    all.losses,
                    all.method_failed,
                    all.baseline_missing,
                    be
                );
            }
            s.push('\n');
        }
    }

    // Profile at a few τ.
    let kind = TimeKind::Stream;
    let taus = [1.0, 1.1, 1.25, 1.5, 2.0, 4.0];
    let times: Vec<Vec<Option<f64>>> = matrices
        .iter()
        .map(|m| {
            methods
                .iter()
                .map(|me| method_time_us(&m.results, me, p, kind))
                .collect()
        })
        .collect();
    let profile = performance_profile(&times, &taus);
    if times.iter().any(|row| row.iter().any(Option::is_some)) {
        let _ = writeln!(s, "### Performance profile, stream timing\n");
        let _ = writeln!(
            s,
            "Fraction of matrices on which the method is within τ of the fastest method.\n"
        );
        profile_table(
            s,
            &taus,
            methods.iter().map(|me| method_display(&matrices, p, me)),
            &profile,
        );
    }

    let bw: Vec<&MergedMatrix> = merged
        .matrices
        .iter()
        .filter(|m| !m.matrix.fits_l2)
        .collect();
    let l2: Vec<&MergedMatrix> = merged
        .matrices
        .iter()
        .filter(|m| m.matrix.fits_l2)
        .collect();
    let l2_kind = if has_kind(TimeKind::Graph) {
        TimeKind::Graph
    } else {
        TimeKind::Stream
    };
    for (title, set, kind) in [
        (
            "Best method per matrix: bandwidth-bound",
            bw,
            TimeKind::Stream,
        ),
        (
            "Best method per matrix: working set fits in L2, launch-bound",
            l2,
            l2_kind,
        ),
    ] {
        if set.is_empty() {
            continue;
        }
        best_table(s, merged, opts, p, title, &set, kind);
    }
    super::limits::section(s, merged, p);
}

/// How a method is named in an aggregate table or a plot legend: `auto` with the method it ran
/// when that was the same on every matrix (`auto (→ csr)`), else `auto (choice varies)`.
pub fn method_display(matrices: &[&MatrixResult], p: Precision, method: &str) -> String {
    if !is_auto(method) {
        return method.to_string();
    }
    let mut chosen: Vec<&str> = matrices
        .iter()
        .filter_map(|m| find_result(&m.results, method, p))
        .filter_map(|r| r.record.as_ref().and_then(auto_choice))
        .collect();
    chosen.sort_unstable();
    chosen.dedup();
    match chosen.as_slice() {
        [] => method.to_string(),
        [one] => format!("{method} (→ {one})"),
        _ => format!("{method} (choice varies)"),
    }
}

/// For every matrix where an `auto` entry ran a method that also has its own entry: the ratio
/// of the slower median to the faster one. The same code measured twice: the run-to-run noise.
pub fn same_code_ratios(matrices: &[&MatrixResult], p: Precision, kind: TimeKind) -> Vec<f64> {
    let mut out = Vec::new();
    for m in matrices {
        for r in m
            .results
            .iter()
            .filter(|r| r.precision == p && is_auto(&r.method))
        {
            let chosen = r.record.as_ref().and_then(auto_choice);
            let (Some(a), Some(b)) = (
                result_time_us(r, kind),
                chosen.and_then(|c| method_time_us(&m.results, c, p, kind)),
            ) else {
                continue;
            };
            out.push(a.max(b) / a.min(b));
        }
    }
    out
}

/// Whether `method` is an `auto` entry that, on every matrix where it ran, ran a method with its
/// own entry there (so it adds no contender of its own).
fn only_repeats(matrices: &[&MatrixResult], p: Precision, method: &str) -> bool {
    is_auto(method)
        && matrices.iter().all(|m| {
            match find_result(&m.results, method, p)
                .filter(|r| result_time_us(r, TimeKind::Stream).is_some())
            {
                None => true,
                Some(r) => {
                    r.record.as_ref().and_then(auto_choice).is_some_and(|c| {
                        method_time_us(&m.results, c, p, TimeKind::Stream).is_some()
                    })
                }
            }
        })
}

/// `12.34 (12.10–12.90)`: the median and the interquartile range of a timing, µs.
fn fmt_spread(t: &Timing) -> String {
    let (q1, q3) = quartiles(t);
    format!("{:.2} ({q1:.2}–{q3:.2})", t.median_us)
}

/// The section of one precision when every method ran on the CPU: no GPU vocabulary (no
/// stream, graph or L2), `auto` shown as the method it ran, and differences within the spread
/// of the samples reported as ties.
fn cpu_precision_section(s: &mut String, merged: &MergedRuns, opts: &ReportOptions, p: Precision) {
    let kind = TimeKind::Stream;
    let matrices = merged.matrix_refs();
    let methods = merged.methods(p);
    precision_header(s, &matrices, p);
    let ran = |me: &str| {
        matrices
            .iter()
            .any(|m| method_time_us(&m.results, me, p, kind).is_some())
    };
    let (timed, never): (Vec<&String>, Vec<&String>) = methods.iter().partition(|me| ran(me));
    if !never.is_empty() {
        let names: Vec<String> = never.iter().map(|m| format!("`{m}`")).collect();
        let _ = writeln!(
            s,
            "Not run on this machine (no result on any matrix; the reasons are under Failures): {}.\n",
            names.join(", ")
        );
    }
    for me in timed.iter().filter(|me| is_auto(me)) {
        let mut chosen: Vec<(String, usize)> = Vec::new();
        for m in &matrices {
            let choice = find_result(&m.results, me, p)
                .and_then(|r| r.record.as_ref())
                .and_then(auto_choice);
            if let Some(c) = choice {
                match chosen.iter_mut().find(|(x, _)| x == c) {
                    Some((_, n)) => *n += 1,
                    None => chosen.push((c.to_string(), 1)),
                }
            }
        }
        if chosen.is_empty() {
            continue;
        }
        let list: Vec<String> = chosen
            .iter()
            .map(|(c, n)| format!("`{c}` on {n}"))
            .collect();
        let _ = writeln!(
            s,
            "`{me}` chose {} of {} matrices. It is shown with the method it ran (`{me} (→ csr)`), \
             and where that method has its own entry the two are one contender (`csr (= {me})`), \
             not two.\n",
            list.join(", "),
            matrices.len()
        );
    }
    let twice = same_code_ratios(&matrices, p, kind);
    if let (Some(mid), Some(max)) = (median(&twice), twice.iter().copied().max_by(f64::total_cmp)) {
        let _ = writeln!(
            s,
            "**Noise in this run:** `auto` and the method it chose are the same code measured \
             twice; on {} matrices their medians differ by {:.2}× (median) and up to {:.2}×. \
             Differences between methods of that size are noise on this machine, whatever the \
             IQRs say.\n",
            twice.len(),
            mid,
            max
        );
    }

    // Fastest per matrix, with ties.
    let base = opts.baselines.iter().find(|b| {
        matrices
            .iter()
            .any(|m| b.time_us(&m.results, p, kind).is_some())
    });
    let _ = writeln!(s, "### Fastest method per matrix ({p}, wall clock)\n");
    let _ = writeln!(
        s,
        "µs per call: the median of the samples (IQR in brackets). \"tied\" lists the methods whose \
         IQR overlaps the fastest one's: on this run they cannot be told apart.\n"
    );
    let base_col = base.map_or_else(String::new, |b| format!(" vs {} |", b.name));
    let _ = writeln!(
        s,
        "| matrix | rows | nnz | row variation | fastest | µs (IQR) | tied |{base_col}\n|---|---|---|---|---|---|---|{}",
        if base.is_some() { "---|" } else { "" }
    );
    for m in &matrices {
        let lead = format!(
            "| {} | {} | {} | {:.2} |",
            cell(&m.name),
            fmt_count(m.stats.nrows),
            fmt_count(m.stats.nnz),
            m.stats.row_variation
        );
        let ranked = ranking(&m.results, p, kind);
        let Some((first, ties)) = fastest(&ranked) else {
            let why = if m.results.iter().any(|r| r.precision == p) {
                "no method ran correctly"
            } else {
                "not measured"
            };
            let _ = writeln!(
                s,
                "{lead} {why} | – | – |{}",
                if base.is_some() { " – |" } else { "" }
            );
            continue;
        };
        let tied = if ties.is_empty() {
            "–".to_string()
        } else {
            ties.iter()
                .map(|r| r.label.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let vs = base.map_or_else(String::new, |b| {
            let cell_text = if b.is_member(&first.method) {
                "–".to_string()
            } else {
                match b.timing(&m.results, p, kind) {
                    Some(bt) if tie(bt, &first.timing) => "tie".to_string(),
                    Some(bt) => {
                        fmt_speedup(speedup(Some(bt.median_us), Some(first.timing.median_us)))
                    }
                    None => "–".to_string(),
                }
            };
            format!(" {cell_text} |")
        });
        let _ = writeln!(
            s,
            "{lead} {} | {} | {} |{vs}",
            cell(&first.label),
            fmt_spread(&first.timing),
            cell(&tied)
        );
    }
    s.push('\n');

    // Speedups over the baseline, with ties.
    if let Some(base) = base {
        let _ = writeln!(s, "### Against {} ({p}, wall clock)\n", base.describe());
        let _ = writeln!(
            s,
            "Geometric mean of t_{0} / t_method over the matrices where both ran (n), and on how \
             many matrices the method was faster than {0}, tied with it (IQRs overlap) or slower.\n",
            base.name
        );
        let _ = writeln!(
            s,
            "| method | t_{} / t_method (n) | faster / tie / slower | failed |\n|---|---|---|---|",
            base.name
        );
        let mut left_out = Vec::new();
        for me in timed.iter().filter(|me| !base.is_member(me)) {
            if only_repeats(&matrices, p, me) {
                left_out.push(format!("`{}`", method_display(&matrices, p, me)));
                continue;
            }
            let x = speedup_summary(&matrices, me, base, p, kind, Subset::All);
            let _ = writeln!(
                s,
                "| {} | {} | {} / {} / {} | {} |",
                cell(&method_display(&matrices, p, me)),
                speedup_cell(&x),
                x.wins,
                x.ties,
                x.losses,
                x.method_failed
            );
        }
        s.push('\n');
        if !left_out.is_empty() {
            let _ = writeln!(
                s,
                "Left out: {} (on every matrix it ran a method listed here).\n",
                left_out.join(", ")
            );
        }
    }

    // Profile at a few τ, over the methods that ran, each contender once (an `auto` entry that
    // only repeated listed methods would split their matrices with them).
    let (repeats, profiled): (Vec<&String>, Vec<&String>) = timed
        .iter()
        .copied()
        .partition(|me| only_repeats(&matrices, p, me));
    let taus = [1.0, 1.1, 1.25, 1.5, 2.0, 4.0];
    let times: Vec<Vec<Option<f64>>> = matrices
        .iter()
        .map(|m| {
            profiled
                .iter()
                .map(|me| method_time_us(&m.results, me, p, kind))
                .collect()
        })
        .collect();
    if profiled.is_empty() {
        return;
    }
    let profile = performance_profile(&times, &taus);
    let _ = writeln!(s, "### Performance profile ({p}, wall clock)\n");
    let _ = writeln!(
        s,
        "Fraction of matrices on which the method's median is within τ of the fastest median \
         (medians only: ties are not resolved here).\n"
    );
    profile_table(
        s,
        &taus,
        profiled.iter().map(|me| method_display(&matrices, p, me)),
        &profile,
    );
    if !repeats.is_empty() {
        let names: Vec<String> = repeats
            .iter()
            .map(|me| format!("`{}`", method_display(&matrices, p, me)))
            .collect();
        let _ = writeln!(
            s,
            "Left out: {} (on every matrix it ran a method listed here).\n",
            names.join(", ")
        );
    }
}

/// A line for a speedup table whose baseline ran on the CPU while compared methods ran on the
/// GPU: the ratio then sets the host's wall clock against CUDA events.
fn host_baseline_note(matrices: &[&MatrixResult], base: &Baseline, p: Precision) -> Option<String> {
    let backend_of = |want_member: bool| {
        matrices
            .iter()
            .flat_map(|m| &m.results)
            .filter(|r| r.precision == p && base.is_member(&r.method) == want_member)
            .filter_map(|r| r.record.as_ref().map(|rec| rec.backend))
            .collect::<Vec<_>>()
    };
    let base_on_cpu = backend_of(true).contains(&crate::methods::Backend::Cpu);
    let others_on_gpu = backend_of(false).contains(&crate::methods::Backend::Gpu);
    (base_on_cpu && others_on_gpu).then(|| {
        format!(
            "`{}` ran on the CPU: these ratios set its host wall-clock time against the GPU \
             methods' CUDA-event times (a device-against-host comparison, not kernel against \
             kernel).",
            base.name
        )
    })
}

fn speedup_cell(x: &SpeedupSummary) -> String {
    if x.compared == 0 {
        "–".into()
    } else {
        format!("{} (n={})", fmt_speedup(x.geomean), x.compared)
    }
}

fn best_table(
    s: &mut String,
    merged: &MergedRuns,
    opts: &ReportOptions,
    p: Precision,
    title: &str,
    set: &[&MergedMatrix],
    kind: TimeKind,
) {
    let base = opts.baselines.first();
    let _ = writeln!(s, "### {title} ({p}, {} timing)\n", kind.name());
    let base_col = base.map_or_else(String::new, |b| format!(" vs {} |", b.name));
    let _ = writeln!(
        s,
        "| matrix | rows | nnz | row variation | best method | µs | GB/s | % copy BW |{base_col}"
    );
    let _ = writeln!(
        s,
        "|---|---|---|---|---|---|---|---|{}",
        if base.is_some() { "---|" } else { "" }
    );
    for mm in set {
        let m = &mm.matrix;
        let lead = format!(
            "| {} | {} | {} | {:.2} |",
            cell(&m.name),
            fmt_count(m.stats.nrows),
            fmt_count(m.stats.nnz),
            m.stats.row_variation
        );
        let ranked = ranking(&m.results, p, kind);
        let Some((first, ties)) = fastest(&ranked) else {
            let ran = m.results.iter().any(|r| r.precision == p);
            let why = if ran {
                "no method ran correctly"
            } else {
                "not measured"
            };
            let _ = writeln!(
                s,
                "{lead} {why} | – | – | – |{}",
                if base.is_some() { " – |" } else { "" }
            );
            continue;
        };
        let (best, t) = (first.method.as_str(), first.timing.median_us);
        let label = if ties.is_empty() {
            first.label.clone()
        } else {
            let others: Vec<&str> = ties.iter().map(|r| r.label.as_str()).collect();
            format!("{} (tie: {})", first.label, others.join(", "))
        };
        let idx = m
            .results
            .iter()
            .rposition(|r| r.method == best && r.precision == p)
            .unwrap_or(0);
        let rec = m.results.get(idx).and_then(|r| r.record.as_ref());
        let gbs = rec.and_then(|r| effective_gbs(r, kind));
        let pct = gbs.and_then(|g| copy_bandwidth_pct(g, merged.copy_bandwidth(mm, idx)));
        let vs = base.map_or_else(String::new, |b| {
            format!(
                " {} |",
                fmt_speedup(speedup(b.time_us(&m.results, p, kind), Some(t)))
            )
        });
        let _ = writeln!(
            s,
            "{lead} {} | {t:.2} | {} | {} |{vs}",
            cell(&label),
            fmt_opt(gbs, 1),
            pct.map_or_else(|| "–".into(), |x| format!("{x:.0}%"))
        );
    }
    s.push('\n');
}

fn eq2_section(s: &mut String, merged: &MergedRuns) {
    let matrices = merged.matrix_refs();
    let kind = TimeKind::Stream;
    let per_p: Vec<(Precision, Vec<Eq2Row>)> = merged
        .precisions()
        .into_iter()
        .map(|p| (p, eq2_rows(&matrices, p, kind)))
        .filter(|(_, rows)| !rows.is_empty())
        .collect();
    if per_p.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "## CSR-Full-Overlap against cuSPARSE with upload (Eq. 2)\n"
    );
    let _ = writeln!(
        s,
        "CSR-Overlap §5.5, Eq. 2: speedup = (t_cusparse_e2e − t_full) / t_partial + 1, the number \
         of CSR-Full-Overlap SpMVs done in the time of one cuSPARSE SpMV with its upload. \
         t_cusparse_e2e: `cusparse-e2e` (host-to-device copy of column indices and values from \
         pinned memory, then cuSPARSE SpMV); t_full: `csr-full-overlap` (the same copy overlapped \
         with its kernel); t_partial: `csr-overlap` (kernel only). Also the plain ratio \
         t_cusparse_e2e / t_full. Stream timing, µs per call, matrices where all three ran \
         correctly. The paper reports 2.03× on average, up to 2.67× (f32, A40, Fig. 9).\n"
    );
    for (p, rows) in per_p {
        let _ = writeln!(s, "### Eq. 2, {p}\n");
        let _ = writeln!(
            s,
            "| matrix | t_cusparse_e2e µs | t_full µs | t_partial µs | Eq. 2 | t_cusparse_e2e / t_full |"
        );
        let _ = writeln!(s, "|---|---|---|---|---|---|");
        for r in &rows {
            let _ = writeln!(
                s,
                "| {} | {:.2} | {:.2} | {:.2} | {:.2}× | {:.2}× |",
                cell(&r.matrix),
                r.t_cusparse_e2e,
                r.t_full,
                r.t_partial,
                r.eq2,
                r.ratio
            );
        }
        let col = |f: fn(&Eq2Row) -> f64| rows.iter().map(f).collect::<Vec<f64>>();
        let cols = [
            col(|r| r.t_cusparse_e2e),
            col(|r| r.t_full),
            col(|r| r.t_partial),
        ];
        let (eq2, ratio) = (col(|r| r.eq2), col(|r| r.ratio));
        let n = rows.len();
        for (label, f) in [
            ("arithmetic mean", mean as fn(&[f64]) -> Option<f64>),
            ("geometric mean", geomean),
        ] {
            let _ = writeln!(
                s,
                "| **{label}** (n={n}) | {} | {} | {} | {} | {} |",
                fmt_opt(f(&cols[0]), 2),
                fmt_opt(f(&cols[1]), 2),
                fmt_opt(f(&cols[2]), 2),
                fmt_speedup(f(&eq2)),
                fmt_speedup(f(&ratio))
            );
        }
        s.push('\n');
        if eq2.iter().any(|x| *x <= 0.0) {
            let _ = writeln!(
                s,
                "Eq. 2 is ≤ 0 on some matrices (CSR-Full-Overlap slower than cuSPARSE with upload \
                 by more than one csr-overlap call), so its geometric mean is undefined (–).\n"
            );
        }
    }
}

fn row_length_section(s: &mut String, merged: &MergedRuns) {
    let matrices = merged.matrix_refs();
    let base = Baseline::cusparse();
    let mut body = String::new();
    for p in merged.precisions() {
        let methods: Vec<String> = merged
            .methods(p)
            .into_iter()
            .filter(|me| !base.is_member(me))
            .collect();
        for kind in [TimeKind::Stream, TimeKind::Graph] {
            let rows: Vec<(String, Vec<SpeedupSummary>)> = methods
                .iter()
                .map(|me| {
                    let sums = Subset::ROW_LENGTH
                        .iter()
                        .map(|sub| speedup_summary(&matrices, me, &base, p, kind, *sub))
                        .collect::<Vec<_>>();
                    (me.clone(), sums)
                })
                .filter(|(_, sums)| sums.iter().any(|x| x.compared > 0))
                .collect();
            if rows.is_empty() {
                continue;
            }
            let counts: Vec<usize> = Subset::ROW_LENGTH
                .iter()
                .map(|sub| matrices.iter().filter(|m| sub.contains(m)).count())
                .collect();
            let _ = writeln!(body, "### {p}, {} timing\n", kind.name());
            let _ = writeln!(
                body,
                "| method | < 16 ({} matrices) | 16–64 ({} matrices) | ≥ 64 ({} matrices) |\n|---|---|---|---|",
                counts[0], counts[1], counts[2]
            );
            for (me, sums) in rows {
                let _ = writeln!(
                    body,
                    "| {} | {} | {} | {} |",
                    cell(&me),
                    speedup_cell(&sums[0]),
                    speedup_cell(&sums[1]),
                    speedup_cell(&sums[2])
                );
            }
            body.push('\n');
        }
    }
    if body.is_empty() {
        return;
    }
    let _ = writeln!(s, "## Speedup over cusparse by mean row length\n");
    let _ = writeln!(
        s,
        "Geometric mean of t_cusparse / t_method ({}) over the matrices of each bucket of mean \
         row length nnz / rows where both ran (n). CSR-Overlap claims to be far ahead of cuSPARSE \
         below 16.{}\n",
        base.describe(),
        if body.contains("| cusparse-e2e |") || body.contains("| csr-full-overlap") {
            " The times of `cusparse-e2e` and `csr-full-overlap` include the host-to-device copy \
             of column indices and values: against plain cuSPARSE they say how much the copy \
             costs, and are compared fairly only by Eq. 2."
        } else {
            ""
        }
    );
    s.push_str(&body);
}

fn claims_section(s: &mut String, merged: &MergedRuns) {
    let matrices = merged.matrix_refs();
    let mut body = String::new();
    for p in merged.precisions() {
        let claims: Vec<&PaperClaim> = PAPER_CLAIMS
            .iter()
            .filter(|c| c.present(&matrices, p))
            .collect();
        if claims.is_empty() {
            continue;
        }
        let _ = writeln!(body, "### {p}\n");
        let _ = writeln!(
            body,
            "| method | over | claimed | measured geomean, stream (n) | max, stream | measured geomean, CUDA graph (n) | source |\n|---|---|---|---|---|---|---|"
        );
        for c in claims {
            let st = c.measure(&matrices, p, TimeKind::Stream);
            let gr = c.measure(&matrices, p, TimeKind::Graph);
            let with_n = |m: &ClaimMeasure| {
                if m.n == 0 {
                    "– (n=0)".to_string()
                } else {
                    format!("{} (n={})", fmt_speedup(m.geomean), m.n)
                }
            };
            let _ = writeln!(
                body,
                "| {} | {} | {} | {} | {} | {} | {} |",
                cell(c.seed),
                cell(c.peer),
                if c.factor.is_some() {
                    cell(c.claim)
                } else {
                    "–".into()
                },
                with_n(&st),
                fmt_speedup(st.max),
                with_n(&gr),
                cell(c.source)
            );
        }
        body.push('\n');
    }
    if body.is_empty() {
        return;
    }
    let _ = writeln!(s, "## Paper claims, measured in this run\n");
    let _ = writeln!(
        s,
        "Each claim: the paper's speedup of a method over a peer, next to the geometric mean and \
         the maximum of t_peer / t_method over the matrices where both ran correctly here (n). \
         `cusparse` is {}. Claims were measured on the papers' GPUs and matrix sets; claims whose \
         methods are not in this run are left out; \"–\" under claimed: the paper gives no \
         figure.\n",
        Baseline::cusparse().describe()
    );
    s.push_str(&body);
}

fn problems_section(s: &mut String, merged: &MergedRuns) {
    let _ = writeln!(s, "## Failures, wrong results and unsupported\n");
    // (precision, method, status, reason) -> matrices, in order of first appearance: a method
    // that fails the same way everywhere (a GPU-only method without a GPU) is one row.
    type Problem = (Precision, String, Status, String);
    let mut groups: Vec<(Problem, Vec<String>)> = Vec::new();
    for m in &merged.matrices {
        for r in &m.matrix.results {
            let issue = match r.status {
                Status::Ok if r.record.is_none() => {
                    Some("ok but no measurement recorded".to_string())
                }
                Status::Ok => None,
                _ => Some(
                    r.error
                        .clone()
                        .unwrap_or_else(|| "no reason recorded".into()),
                ),
            };
            if let Some(why) = issue {
                let key = (r.precision, r.method.clone(), r.status, why);
                match groups.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, ms)) => ms.push(m.matrix.name.clone()),
                    None => groups.push((key, vec![m.matrix.name.clone()])),
                }
            }
        }
    }
    if groups.is_empty() {
        let _ = writeln!(s, "None: every result ran and matched the oracle.\n");
        return;
    }
    let _ = writeln!(
        s,
        "| matrix | precision | method | status | reason |\n|---|---|---|---|---|"
    );
    let total = merged.matrices.len();
    for ((p, method, status, why), ms) in groups {
        let which = match ms.as_slice() {
            [one] => one.clone(),
            _ if ms.len() == total => format!("all {total} matrices"),
            _ => format!("{} matrices: {}", ms.len(), ms.join(", ")),
        };
        let _ = writeln!(
            s,
            "| {} | {p} | {} | {} | {} |",
            cell(&which),
            cell(&method),
            status_name(status),
            cell(&why)
        );
    }
    s.push('\n');
}

/// One CSV field, quoted when needed (RFC 4180).
fn csv_field(v: &str) -> String {
    if v.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_string()
    }
}

fn opt_num(x: Option<f64>) -> String {
    x.map_or_else(String::new, |v| format!("{v}"))
}

fn join_samples(v: &[f64]) -> String {
    v.iter()
        .map(|x| format!("{x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The text of `results.csv`: one row per (matrix, method, precision) with the matrix
/// statistics, every record field (empty when the method did not run) and derived columns.
/// The matrix-statistics columns of `results.csv`, in order (the auto table's CSV reader takes
/// them by these names).
pub const STATS_COLUMNS: [&str; 19] = [
    "nrows",
    "ncols",
    "nnz",
    "density",
    "empty_rows",
    "empty_cols",
    "row_len_min",
    "row_len_max",
    "row_len_mean",
    "row_len_std",
    "row_variation",
    "col_len_min",
    "col_len_max",
    "col_len_mean",
    "col_len_std",
    "lower_bandwidth",
    "upper_bandwidth",
    "bandwidth",
    "csr_bytes",
];

pub fn results_csv(merged: &MergedRuns, opts: &ReportOptions) -> String {
    let mut header: Vec<String> = ["matrix", "source", "fits_l2"]
        .into_iter()
        .chain(STATS_COLUMNS)
        .chain([
            "method",
            "precision",
            "status",
            "error",
            "run",
            "run_started",
            "run_commit",
            "backend",
            "device",
            "deterministic",
            "prep_ms",
            "upload_ms",
            "prep_stages_ms",
            "time_median_us",
            "time_min_us",
            "time_max_us",
            "time_samples_us",
            "graph_median_us",
            "graph_min_us",
            "graph_max_us",
            "graph_samples_us",
            "gflops",
            "gbs",
            "bytes_model",
            "max_rel_err",
            "verified",
            "footprint_bytes",
            "notes",
            "fallback_note",
            "copy_bw_pct",
        ])
        .map(str::to_string)
        .collect();
    for b in &opts.baselines {
        header.push(format!("speedup_vs_{}", b.name));
        header.push(format!("graph_speedup_vs_{}", b.name));
        header.push(format!("break_even_calls_vs_{}", b.name));
    }
    let mut out = header.join(",");
    out.push('\n');
    for mm in &merged.matrices {
        let m = &mm.matrix;
        let st = &m.stats;
        let lead = [
            m.name.clone(),
            m.source.clone(),
            m.fits_l2.to_string(),
            st.nrows.to_string(),
            st.ncols.to_string(),
            st.nnz.to_string(),
            st.density.to_string(),
            st.empty_rows.to_string(),
            st.empty_cols.to_string(),
            st.row_len.min.to_string(),
            st.row_len.max.to_string(),
            st.row_len.mean.to_string(),
            st.row_len.std.to_string(),
            st.row_variation.to_string(),
            st.col_len.min.to_string(),
            st.col_len.max.to_string(),
            st.col_len.mean.to_string(),
            st.col_len.std.to_string(),
            st.lower_bandwidth.to_string(),
            st.upper_bandwidth.to_string(),
            st.bandwidth.to_string(),
            st.csr_bytes.to_string(),
        ];
        for (i, r) in m.results.iter().enumerate() {
            let mut row: Vec<String> = lead.to_vec();
            let run = mm.run_of.get(i).copied().unwrap_or(0);
            let machine = merged.runs.get(run).map(|(mi, _)| mi);
            row.extend([
                r.method.clone(),
                r.precision.to_string(),
                status_name(r.status).to_string(),
                r.error.clone().unwrap_or_default(),
                (run + 1).to_string(),
                machine.map(|mi| mi.started.clone()).unwrap_or_default(),
                machine.map(|mi| mi.commit.clone()).unwrap_or_default(),
            ]);
            match &r.record {
                Some(rec) => {
                    let g = rec.graph_time.as_ref();
                    row.extend([
                        rec.backend.to_string(),
                        rec.device.clone(),
                        rec.deterministic.to_string(),
                        rec.prep_ms.to_string(),
                        rec.upload_ms.to_string(),
                        rec.prep_stages_ms
                            .iter()
                            .map(|(k, v)| format!("{k}={v}"))
                            .collect::<Vec<_>>()
                            .join(";"),
                        rec.time.median_us.to_string(),
                        rec.time.min_us.to_string(),
                        rec.time.max_us.to_string(),
                        join_samples(&rec.time.samples_us),
                        opt_num(g.map(|g| g.median_us)),
                        opt_num(g.map(|g| g.min_us)),
                        opt_num(g.map(|g| g.max_us)),
                        g.map(|g| join_samples(&g.samples_us)).unwrap_or_default(),
                        rec.gflops.to_string(),
                        rec.gbs.to_string(),
                        rec.bytes_model.to_string(),
                        rec.max_rel_err.to_string(),
                        rec.verified.to_string(),
                        rec.footprint_bytes.to_string(),
                        rec.notes
                            .iter()
                            .map(|(k, v)| format!("{k}={v}"))
                            .collect::<Vec<_>>()
                            .join(";"),
                        rec.fallback_note.clone().unwrap_or_default(),
                        opt_num(effective_gbs(rec, TimeKind::Stream).and_then(|g| {
                            copy_bandwidth_pct(g, machine.and_then(|mi| mi.copy_bandwidth_gbs))
                        })),
                    ]);
                }
                None => row.extend(std::iter::repeat_n(String::new(), 23)),
            }
            let t = result_time_us(r, TimeKind::Stream);
            let tg = result_time_us(r, TimeKind::Graph);
            for b in &opts.baselines {
                let bt = b.time_us(&m.results, r.precision, TimeKind::Stream);
                let bg = b.time_us(&m.results, r.precision, TimeKind::Graph);
                let prep = r
                    .record
                    .as_ref()
                    .map_or(0.0, |rec| rec.prep_ms + rec.upload_ms);
                let be = match (bt, t) {
                    (Some(bt), Some(t)) => break_even_calls(prep, bt, t),
                    _ => None,
                };
                row.push(opt_num(speedup(bt, t)));
                row.push(opt_num(speedup(bg, tg)));
                row.push(opt_num(be));
            }
            out.push_str(
                &row.iter()
                    .map(|f| csv_field(f))
                    .collect::<Vec<_>>()
                    .join(","),
            );
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::bench::{byte_model, Timing};
    use crate::matrix::{LengthStats, MatrixStats};
    use crate::methods::Backend;

    pub(crate) fn record(
        method: &str,
        p: Precision,
        nnz: usize,
        t_us: f64,
        prep_ms: f64,
    ) -> RunRecord {
        let n = (nnz / 10).max(1);
        let mut rec = RunRecord {
            method: method.into(),
            precision: p,
            backend: Backend::Gpu,
            device: "Test GPU".into(),
            nrows: n,
            ncols: n,
            nnz,
            deterministic: true,
            prep_ms,
            upload_ms: 0.5,
            prep_stages_ms: vec![("sort".into(), prep_ms)],
            time: Timing::default(),
            graph_time: Some(Timing::from_samples(vec![t_us * 0.9])),
            gflops: 0.0,
            gbs: 0.0,
            bytes_model: byte_model(n, n, nnz, p.bytes()),
            max_rel_err: 1e-15,
            verified: true,
            footprint_bytes: 12 * nnz,
            notes: vec![("k".into(), "a,b".into())],
            fallback_note: None,
            later_checks: Vec::new(),
        };
        rec.set_stream_timing(Timing::from_samples(vec![t_us]));
        rec
    }

    pub(crate) fn ok(
        method: &str,
        p: Precision,
        nnz: usize,
        t_us: f64,
        prep_ms: f64,
    ) -> MethodResult {
        MethodResult {
            method: method.into(),
            precision: p,
            status: Status::Ok,
            error: None,
            record: Some(record(method, p, nnz, t_us, prep_ms)),
        }
    }

    pub(crate) fn failed(method: &str, p: Precision, why: &str) -> MethodResult {
        MethodResult {
            method: method.into(),
            precision: p,
            status: Status::Failed,
            error: Some(why.into()),
            record: None,
        }
    }

    pub(crate) fn matrix(
        name: &str,
        nnz: usize,
        variation: f64,
        fits_l2: bool,
        results: Vec<MethodResult>,
    ) -> MatrixResult {
        let n = (nnz / 10).max(1);
        MatrixResult {
            name: name.into(),
            source: format!("{name}.mtx"),
            stats: MatrixStats {
                nrows: n,
                ncols: n,
                nnz,
                density: nnz as f64 / (n as f64 * n as f64),
                empty_rows: 0,
                empty_cols: 0,
                row_len: LengthStats {
                    min: 1,
                    max: 40,
                    mean: 10.0,
                    std: 10.0 * variation,
                },
                col_len: LengthStats::default(),
                row_variation: variation,
                lower_bandwidth: 3,
                upper_bandwidth: 4,
                bandwidth: 4,
                csr_bytes: 12 * nnz,
                x_sectors_f32: None,
                x_sectors_f64: None,
            },
            fits_l2,
            results,
        }
    }

    fn machine() -> MachineInfo {
        MachineInfo {
            gpu: "NVIDIA Test GPU".into(),
            sm_count: Some(132),
            gpu_memory_bytes: Some(80 << 30),
            l2_bytes: Some(50 << 20),
            driver_version: Some("580.1".into()),
            cuda_version: Some("13.0".into()),
            cpu_threads: 16,
            copy_bandwidth_gbs: Some(3000.0),
            probe: None,
            probe_error: None,
            commit: "v0.1.0-3-gabc".into(),
            command: "spmv bench --suite test".into(),
            started: "2026-11-21T22:00:00Z".into(),
        }
    }

    const F64: Precision = Precision::F64;

    #[test]
    fn geomean_of_known_values() {
        assert!((geomean(&[1.0, 4.0]).unwrap() - 2.0).abs() < 1e-12);
        assert!((geomean(&[2.0, 8.0, 4.0]).unwrap() - 4.0).abs() < 1e-12);
        assert!((geomean(&[3.0]).unwrap() - 3.0).abs() < 1e-12);
        assert_eq!(geomean(&[]), None);
        assert_eq!(geomean(&[1.0, 0.0]), None);
        assert_eq!(geomean(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn performance_profile_counts_failures_as_never_within() {
        let times = vec![
            vec![Some(1.0), Some(2.0), None],
            vec![Some(3.0), Some(3.0), Some(1.0)],
            vec![None, None, None],
        ];
        let p = performance_profile(&times, &[1.0, 2.0, 3.0]);
        assert_eq!(p[0], vec![0.5, 0.5, 1.0]);
        assert_eq!(p[1], vec![0.0, 0.5, 1.0]);
        assert_eq!(p[2], vec![0.5, 0.5, 0.5]);
        let grid = tau_grid(300);
        assert_eq!(grid.len(), 301);
        assert_eq!(grid[0], 1.0);
        assert!((grid[300] - 4.0).abs() < 1e-12);
        assert!(performance_profile(&[], &[1.0]).is_empty());
    }

    #[test]
    fn break_even_only_when_faster() {
        assert_eq!(break_even_calls(2.0, 10.0, 6.0), Some(500.0));
        assert_eq!(break_even_calls(0.0, 10.0, 6.0), Some(0.0));
        assert_eq!(break_even_calls(2.0, 6.0, 6.0), None);
        assert_eq!(break_even_calls(2.0, 5.0, 6.0), None);
        assert_eq!(break_even_calls(f64::NAN, 10.0, 6.0), None);
    }

    #[test]
    fn copy_bandwidth_share_from_byte_model() {
        // 1000 × 1000, 10 000 nonzeros, f64: 12·10⁴ + 4·1001 + 8·1000 + 8·1000 = 140 004 bytes.
        let mut rec = record("m", F64, 10_000, 1.0, 0.0);
        rec.nrows = 1000;
        rec.ncols = 1000;
        rec.bytes_model = byte_model(1000, 1000, 10_000, 8);
        assert_eq!(rec.bytes_model, 140_004);
        rec.set_stream_timing(Timing::from_samples(vec![1.0]));
        let gbs = effective_gbs(&rec, TimeKind::Stream).unwrap();
        assert!((gbs - 140.004).abs() < 1e-9);
        assert!((rec.gbs - gbs).abs() < 1e-9);
        assert!((copy_bandwidth_pct(gbs, Some(1400.04)).unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(copy_bandwidth_pct(gbs, None), None);
        assert_eq!(copy_bandwidth_pct(gbs, Some(0.0)), None);
        let g = effective_gbs(&rec, TimeKind::Graph).unwrap();
        assert!((g - 140.004 / 0.9).abs() < 1e-6);
    }

    #[test]
    fn a_method_without_graph_timing_is_not_a_failure() {
        let mut cpu = ok("csr", F64, 1_000, 40.0, 0.0);
        if let Some(rec) = cpu.record.as_mut() {
            rec.graph_time = None; // a CPU method: wall clock only
        }
        let ms = [matrix(
            "a",
            1_000,
            0.1,
            true,
            vec![
                ok("cusparse", F64, 1_000, 8.0, 0.0),
                cpu,
                failed("broken", F64, "boom"),
            ],
        )];
        let refs: Vec<&MatrixResult> = ms.iter().collect();
        let cu = Baseline::cusparse();
        let g = speedup_summary(&refs, "csr", &cu, F64, TimeKind::Graph, Subset::All);
        assert_eq!((g.compared, g.method_failed), (0, 0));
        let s = speedup_summary(&refs, "csr", &cu, F64, TimeKind::Stream, Subset::All);
        assert_eq!(s.compared, 1);
        let b = speedup_summary(&refs, "broken", &cu, F64, TimeKind::Graph, Subset::All);
        assert_eq!(b.method_failed, 1);
    }

    #[test]
    fn speedups_with_missing_and_failed_baselines() {
        let ms = [
            // alg1 failed: alg2 is the baseline.
            matrix(
                "a",
                2_000_000,
                0.1,
                false,
                vec![
                    failed("cusparse-alg1", F64, "boom"),
                    ok("cusparse-alg2", F64, 2_000_000, 10.0, 0.0),
                    ok("fast", F64, 2_000_000, 5.0, 1.0),
                ],
            ),
            // both ran: the faster (alg1) is the baseline; fast loses.
            matrix(
                "b",
                5_000,
                0.1,
                true,
                vec![
                    ok("cusparse-alg1", F64, 5_000, 8.0, 0.0),
                    ok("cusparse-alg2", F64, 5_000, 10.0, 0.0),
                    ok("fast", F64, 5_000, 16.0, 1.0),
                ],
            ),
            // no baseline ran.
            matrix(
                "c",
                5_000,
                0.1,
                false,
                vec![
                    failed("cusparse-alg1", F64, "x"),
                    ok("fast", F64, 5_000, 16.0, 1.0),
                ],
            ),
            // the method failed.
            matrix(
                "d",
                5_000,
                0.1,
                false,
                vec![
                    ok("cusparse", F64, 5_000, 8.0, 0.0),
                    failed("fast", F64, "out of memory"),
                ],
            ),
        ];
        let refs: Vec<&MatrixResult> = ms.iter().collect();
        let cu = Baseline::cusparse();
        assert_eq!(
            cu.time_us(&ms[0].results, F64, TimeKind::Stream),
            Some(10.0)
        );
        assert_eq!(cu.time_us(&ms[1].results, F64, TimeKind::Stream), Some(8.0));
        assert_eq!(cu.time_us(&ms[2].results, F64, TimeKind::Stream), None);
        assert_eq!(
            cu.time_us(&ms[0].results, Precision::F32, TimeKind::Stream),
            None
        );

        let s = speedup_summary(&refs, "fast", &cu, F64, TimeKind::Stream, Subset::All);
        assert_eq!(s.compared, 2);
        assert!((s.geomean.unwrap() - 1.0).abs() < 1e-12); // √(2 · 0.5)
        assert_eq!((s.wins, s.losses), (1, 1));
        assert_eq!(s.method_failed, 1);
        assert_eq!(s.baseline_missing, 1);
        assert_eq!(s.break_even, vec![(1.0 + 0.5) * 1000.0 / 5.0]); // (prepare + upload) ms

        let large = speedup_summary(&refs, "fast", &cu, F64, TimeKind::Stream, Subset::Large);
        assert_eq!(large.compared, 1);
        assert!((large.geomean.unwrap() - 2.0).abs() < 1e-12);
        let bw = speedup_summary(
            &refs,
            "fast",
            &cu,
            F64,
            TimeKind::Stream,
            Subset::BandwidthBound,
        );
        assert_eq!(bw.compared, 1);
        // Graph times are compared with graph times: both scaled by 0.9, same ratio.
        let g = speedup_summary(&refs, "fast", &cu, F64, TimeKind::Graph, Subset::Large);
        assert!((g.geomean.unwrap() - 2.0).abs() < 1e-12);
        // A baseline that never ran gives no comparison at all.
        let none = speedup_summary(
            &refs,
            "fast",
            &Baseline::method("csr"),
            F64,
            TimeKind::Stream,
            Subset::All,
        );
        assert_eq!((none.compared, none.geomean), (0, None));

        assert_eq!(
            best_method(&ms[1].results, F64, TimeKind::Stream),
            Some(("cusparse-alg1", 8.0))
        );
        assert_eq!(
            best_method(&ms[0].results, Precision::F32, TimeKind::Stream),
            None
        );
        assert_eq!(speedup(Some(10.0), None), None);
        assert_eq!(speedup(None, Some(1.0)), None);
    }

    /// A matrix with `nrows` rows (mean row length nnz / nrows).
    fn matrix_rows(
        name: &str,
        nnz: usize,
        nrows: usize,
        results: Vec<MethodResult>,
    ) -> MatrixResult {
        let mut m = matrix(name, nnz, 0.5, false, results);
        m.stats.nrows = nrows;
        m
    }

    const F32: Precision = Precision::F32;

    /// Three matrices with the Eq. 2 trio in f32 (one also with a variant of csr-full-overlap,
    /// one without csr-overlap), plus claims' methods.
    fn eq2_run() -> BenchRun {
        let trio = |e2e: f64, full: f64, partial: f64| {
            vec![
                ok("cusparse", F32, 1000, 10.0, 0.0),
                ok("cusparse-e2e", F32, 1000, e2e, 0.0),
                ok("csr-full-overlap", F32, 1000, full, 0.0),
                ok("csr-overlap", F32, 1000, partial, 0.0),
            ]
        };
        let mut a = trio(30.0, 20.0, 5.0); // Eq. 2 = 3, ratio 1.5
        a.push(ok("csr-full-overlap[stream_num=4]", F32, 1000, 1.0, 0.0));
        a.push(ok("fastload", F32, 1000, 5.0, 0.0)); // 2× over cusparse
        a.push(ok("teb", F32, 1000, 4.0, 0.0));
        let mut b = trio(24.0, 16.0, 8.0); // Eq. 2 = 2, ratio 1.5
        b.push(ok("fastload", F32, 1000, 1.25, 0.0)); // 8× over cusparse
        b.push(failed("teb", F32, "boom"));
        let mut c = trio(24.0, 16.0, 8.0);
        c.retain(|r| r.method != "csr-overlap");
        BenchRun {
            skipped: Vec::new(),
            machine: machine(),
            suite: None,
            matrices: vec![
                matrix_rows("a", 1000, 100, a), // mean row length 10
                matrix_rows("b", 1000, 20, b),  // 50
                matrix_rows("c", 1000, 10, c),  // 100
            ],
        }
    }

    #[test]
    fn eq2_of_known_values_and_variants_apart() {
        assert_eq!(eq2_speedup(30.0, 20.0, 5.0), Some(3.0));
        assert_eq!(eq2_speedup(20.0, 20.0, 5.0), Some(1.0));
        assert_eq!(eq2_speedup(10.0, 20.0, 5.0), Some(-1.0));
        assert_eq!(eq2_speedup(10.0, 0.0, 5.0), None);
        assert_eq!(eq2_speedup(f64::NAN, 1.0, 5.0), None);
        assert_eq!(mean(&[1.0, 2.0, 6.0]), Some(3.0));
        assert_eq!(mean(&[]), None);
        let run = eq2_run();
        let refs: Vec<&MatrixResult> = run.matrices.iter().collect();
        let rows = eq2_rows(&refs, F32, TimeKind::Stream);
        // c lacks csr-overlap; a's variant of csr-full-overlap does not replace the plain one.
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].matrix, "a");
        assert_eq!(
            (rows[0].t_full, rows[0].eq2, rows[0].ratio),
            (20.0, 3.0, 1.5)
        );
        assert_eq!((rows[1].eq2, rows[1].ratio), (2.0, 1.5));
        assert!(eq2_rows(&refs, F64, TimeKind::Stream).is_empty());
        // Graph times are all scaled by 0.9 in these records: same ratios.
        let g = eq2_rows(&refs, F32, TimeKind::Graph);
        assert!((g[0].eq2 - 3.0).abs() < 1e-12);
    }

    #[test]
    fn row_length_buckets() {
        let run = eq2_run();
        let refs: Vec<&MatrixResult> = run.matrices.iter().collect();
        let in_bucket = |sub: Subset| {
            refs.iter()
                .filter(|m| sub.contains(m))
                .map(|m| m.name.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(in_bucket(Subset::ShortRows), vec!["a"]);
        assert_eq!(in_bucket(Subset::MediumRows), vec!["b"]);
        assert_eq!(in_bucket(Subset::LongRows), vec!["c"]);
        let mut edge = matrix_rows("edge", 64, 4, Vec::new());
        assert!(Subset::MediumRows.contains(&edge)); // exactly 16
        edge.stats.nrows = 1;
        assert!(Subset::LongRows.contains(&edge)); // exactly 64
        edge.stats.nrows = 0;
        assert!(Subset::ROW_LENGTH.iter().all(|s| !s.contains(&edge)));
        let cu = Baseline::cusparse();
        let short = speedup_summary(
            &refs,
            "fastload",
            &cu,
            F32,
            TimeKind::Stream,
            Subset::ShortRows,
        );
        assert_eq!(short.compared, 1);
        assert!((short.geomean.unwrap() - 2.0).abs() < 1e-12);
        let mid = speedup_summary(
            &refs,
            "fastload",
            &cu,
            F32,
            TimeKind::Stream,
            Subset::MediumRows,
        );
        assert!((mid.geomean.unwrap() - 8.0).abs() < 1e-12);
    }

    #[test]
    fn claims_measured_and_absent_ones_skipped() {
        let run = eq2_run();
        let refs: Vec<&MatrixResult> = run.matrices.iter().collect();
        let find = |seed: &str, peer: &str| {
            *PAPER_CLAIMS
                .iter()
                .find(|c| c.seed == seed && c.peer == peer)
                .unwrap()
        };
        let fl = find("fastload", "cusparse");
        assert_eq!(fl.factor, Some(2.98));
        assert!(fl.present(&refs, F32));
        assert!(!fl.present(&refs, F64));
        let m = fl.measure(&refs, F32, TimeKind::Stream);
        assert_eq!(m.n, 2);
        assert!((m.geomean.unwrap() - 4.0).abs() < 1e-12); // √(2 · 8)
        assert_eq!(m.max, Some(8.0));
        // teb ran once, failed once; csr-overlap is not cusparse but ran: 10/5 and 10/8.
        let teb = find("teb", "csr5");
        assert!(!teb.present(&refs, F32));
        let co = find("csr-overlap", "cusparse").measure(&refs, F32, TimeKind::Stream);
        assert_eq!(co.n, 2);
        assert!((co.geomean.unwrap() - (2.0f64 * 1.25).sqrt()).abs() < 1e-12);
        assert_eq!(
            PAPER_CLAIMS.iter().filter(|c| c.factor.is_none()).count(),
            3
        );
        assert!(PAPER_CLAIMS
            .iter()
            .all(|c| crate::methods::find(c.seed).is_ok() && crate::methods::find(c.peer).is_ok()));
    }

    #[test]
    fn summary_has_eq2_row_length_and_claims_sections() {
        let merged = merge_runs(&[eq2_run()]);
        let md = summary_markdown(&merged, &ReportOptions::default(), &[], &[]);
        for want in [
            "## CSR-Full-Overlap against cuSPARSE with upload (Eq. 2)",
            "2.03× on average, up to 2.67× (f32, A40",
            "| a | 30.00 | 20.00 | 5.00 | 3.00× | 1.50× |",
            "| **arithmetic mean** (n=2) | 27.00 | 18.00 | 6.50 | 2.50× | 1.50× |",
            "| **geometric mean** (n=2) |",
            "## Speedup over cusparse by mean row length",
            "| method | < 16 (1 matrices) | 16–64 (1 matrices) | ≥ 64 (1 matrices) |",
            "| fastload | 2.00× (n=1) | 8.00× (n=1) | – |",
            // the variant is its own row
            "| csr-full-overlap[stream_num=4] | 10.00× (n=1) | – | – |",
            "## Paper claims, measured in this run",
            "| fastload | cusparse | 2.98× | 4.00× (n=2) | 8.00× | 4.00× (n=2) |",
        ] {
            assert!(md.contains(want), "missing {want:?} in\n{md}");
        }
        assert!(!md.contains("| teb | csr5 |"), "{md}");
        assert!(!md.contains("| hbp |"), "{md}");
        assert!(!md.contains("### f64\n"), "{md}");
        // Nothing to say without the methods: no sections at all.
        let bare = merge_runs(&[synthetic_run()]);
        let md = summary_markdown(&bare, &ReportOptions::default(), &[], &[]);
        assert!(!md.contains("Eq. 2"), "{md}");
        assert!(
            md.contains("## Speedup over cusparse by mean row length"),
            "{md}"
        );
        assert!(md.contains("| fastload | cusparse | 2.98× |"), "{md}");
        if let Ok(path) = std::env::var("SPMVKIT_REPORT_SAMPLE") {
            let merged = merge_runs(&[eq2_run()]);
            let sample = summary_markdown(&merged, &ReportOptions::default(), &[], &[]);
            fs::write(path, sample).unwrap();
        }
    }

    #[test]
    fn merging_replaces_earlier_results() {
        let run1 = BenchRun {
            skipped: Vec::new(),
            machine: machine(),
            suite: Some("one".into()),
            matrices: vec![matrix(
                "a",
                100,
                0.1,
                true,
                vec![
                    ok("m1", F64, 100, 10.0, 0.0),
                    failed("m2", F64, "first try failed"),
                ],
            )],
        };
        let mut m2 = machine();
        m2.started = "2026-11-21T23:00:00Z".into();
        let run2 = BenchRun {
            skipped: Vec::new(),
            machine: m2,
            suite: None,
            matrices: vec![
                matrix(
                    "a",
                    100,
                    0.5,
                    true,
                    vec![
                        ok("m2", F64, 100, 5.0, 0.0),
                        ok("m2", Precision::F32, 100, 4.0, 0.0),
                    ],
                ),
                matrix("b", 200, 0.1, false, vec![ok("m1", F64, 200, 3.0, 0.0)]),
            ],
        };
        let merged = merge_runs(&[run1, run2]);
        assert_eq!(merged.runs.len(), 2);
        assert_eq!(merged.matrices.len(), 2);
        let a = &merged.matrices[0];
        assert_eq!(a.matrix.name, "a");
        assert_eq!(a.matrix.results.len(), 3);
        assert_eq!(a.run_of, vec![0, 1, 1]);
        assert_eq!(a.matrix.results[1].status, Status::Ok);
        assert_eq!(
            method_time_us(&a.matrix.results, "m2", F64, TimeKind::Stream),
            Some(5.0)
        );
        assert_eq!(a.matrix.stats.row_variation, 0.5);
        assert_eq!(merged.matrices[1].matrix.name, "b");
        assert_eq!(
            merged.methods(F64),
            vec!["m1".to_string(), "m2".to_string()]
        );
        assert_eq!(merged.precisions(), vec![Precision::F32, Precision::F64]);
    }

    /// Splits one CSV line into fields (quotes honoured).
    fn csv_split(line: &str) -> Vec<String> {
        let mut out = vec![String::new()];
        let mut quoted = false;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '"' if quoted && chars.peek() == Some(&'"') => {
                    chars.next();
                    out.last_mut().unwrap().push('"');
                }
                '"' => quoted = !quoted,
                ',' if !quoted => out.push(String::new()),
                c => out.last_mut().unwrap().push(c),
            }
        }
        out
    }

    pub(crate) fn synthetic_run() -> BenchRun {
        let mut matrices = Vec::new();
        for (i, (name, nnz, var, l2)) in [
            ("small", 20_000usize, 0.2, true),
            ("mid", 600_000, 1.5, false),
            ("big", 3_000_000, 4.0, false),
        ]
        .into_iter()
        .enumerate()
        {
            let base = nnz as f64 * 12.0 / 2500.0 * 1e-3 + 4.0;
            let mut results = vec![
                ok("cusparse-alg1", F64, nnz, base * 1.1, 0.01),
                ok("cusparse-alg2", F64, nnz, base, 0.05),
            ];
            if i == 1 {
                results.push(failed(
                    "fastload",
                    F64,
                    "CUDA error in launch: too many resources requested",
                ));
            } else {
                results.push(ok(
                    "fastload",
                    F64,
                    nnz,
                    base / (1.2 + i as f64 * 0.3),
                    2.0 + nnz as f64 * 1e-5,
                ));
            }
            matrices.push(matrix(name, nnz, var, l2, results));
        }
        BenchRun {
            skipped: Vec::new(),
            machine: machine(),
            suite: Some("synthetic".into()),
            matrices,
        }
    }

    /// Graph timing leads, the L2-resident best-method table is on graph timing, and a CPU
    /// baseline set against GPU methods is labelled as host against device.
    #[test]
    fn summaries_lead_with_graph_timing_and_label_host_baselines() {
        let mut run = synthetic_run();
        for m in &mut run.matrices {
            let mut cpu = ok("csr", F64, m.stats.nnz, 500.0, 0.0);
            if let Some(rec) = cpu.record.as_mut() {
                rec.backend = Backend::Cpu;
                rec.graph_time = None;
            }
            m.results.push(cpu);
        }
        let md = summary_markdown(&merge_runs(&[run]), &ReportOptions::default(), &[], &[]);
        let graph = md.find("### Speedup over cusparse (best of").unwrap();
        assert!(md[graph..].starts_with("### Speedup over cusparse (best of cusparse-alg1, cusparse-alg2, cusparse), CUDA graph timing"), "{md}");
        assert!(md.contains("launch-bound (f64, CUDA graph timing)"), "{md}");
        assert!(md.contains("bandwidth-bound (f64, stream timing)"), "{md}");
        assert!(
            md.contains("`csr` ran on the CPU: these ratios set its host wall-clock time"),
            "{md}"
        );
        // an all-GPU run has no such label
        let md = summary_markdown(
            &merge_runs(&[synthetic_run()]),
            &ReportOptions::default(),
            &[],
            &[],
        );
        assert!(!md.contains("ran on the CPU: these ratios"), "{md}");
    }

    /// A CPU result with the given per-call samples (and auto's choice in the notes).
    fn cpu_ok(method: &str, samples: &[f64], chose: Option<&str>) -> MethodResult {
        let mut r = ok(method, F64, 1000, 1.0, 0.1);
        if let Some(rec) = r.record.as_mut() {
            rec.backend = Backend::Cpu;
            rec.graph_time = None;
            rec.set_stream_timing(Timing::from_samples(samples.to_vec()));
            rec.notes = chose
                .map(|c| vec![("auto chose".to_string(), c.to_string())])
                .unwrap_or_default();
        }
        r
    }

    fn cpu_run() -> BenchRun {
        let unsupported = || MethodResult {
            status: Status::Unsupported,
            ..failed("cusparse-alg1", F64, "GPU unavailable")
        };
        let a = vec![
            cpu_ok("csr", &[10.0, 10.1, 10.2, 10.3, 10.4], None),
            cpu_ok("csc", &[10.2, 10.3, 10.4, 10.5, 10.6], None),
            cpu_ok("fastload", &[20.0, 20.1, 20.2, 20.3, 20.4], None),
            cpu_ok("auto", &[9.9, 10.0, 10.1, 10.2, 10.3], Some("csr")),
            unsupported(),
        ];
        let b = vec![
            cpu_ok("csr", &[10.0, 10.1, 10.2, 10.3, 10.4], None),
            cpu_ok("csc", &[5.0, 5.05, 5.1, 5.15, 5.2], None),
            cpu_ok("fastload", &[20.0, 20.1, 20.2, 20.3, 20.4], None),
            cpu_ok("auto", &[12.0, 12.2, 12.4, 12.6, 12.8], Some("csr")),
            unsupported(),
        ];
        BenchRun {
            skipped: vec![("broken.mtx".into(), "broken.mtx: line 3: bad value".into())],
            machine: MachineInfo {
                gpu: "none".into(),
                ..MachineInfo::default()
            },
            suite: Some("quick".into()),
            matrices: vec![
                matrix("a", 1000, 0.1, false, a),
                matrix("b", 1000, 0.1, false, b),
            ],
        }
    }

    #[test]
    fn rankings_fold_auto_into_its_choice_and_find_ties() {
        let run = cpu_run();
        let ranked = ranking(&run.matrices[0].results, F64, TimeKind::Stream);
        let labels: Vec<&str> = ranked.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, vec!["csr (= auto)", "csc", "fastload"]);
        let (first, ties) = fastest(&ranked).unwrap();
        assert_eq!(first.method, "csr");
        assert_eq!(ties.len(), 1);
        assert_eq!(ties[0].method, "csc");
        let ranked = ranking(&run.matrices[1].results, F64, TimeKind::Stream);
        let (first, ties) = fastest(&ranked).unwrap();
        assert_eq!((first.method.as_str(), ties.len()), ("csc", 0));
        assert_eq!(
            quartiles(&Timing::from_samples(vec![1.0, 2.0, 3.0, 4.0, 5.0])),
            (2.0, 4.0)
        );
        assert_eq!(quartiles(&Timing::from_samples(vec![7.0])), (7.0, 7.0));
        let refs: Vec<&MatrixResult> = run.matrices.iter().collect();
        let twice = same_code_ratios(&refs, F64, TimeKind::Stream);
        assert_eq!(twice.len(), 2);
        assert_eq!(method_display(&refs, F64, "auto"), "auto (→ csr)");
    }

    #[test]
    fn cpu_reports_leave_out_gpu_claims_and_report_ties() {
        let merged = merge_runs(&[cpu_run()]);
        assert!(cpu_only(&merged));
        let md = summary_markdown(&merged, &ReportOptions::default(), &[], &[]);
        assert!(md.contains(CPU_CAVEAT), "{md}");
        for absent in [
            "Paper claims",
            "stream",
            "CUDA graph",
            "L2",
            "bandwidth-bound",
            "Copy bandwidth",
        ] {
            assert!(!md.contains(absent), "{absent:?} in\n{md}");
        }
        for want in [
            "| a | 100 | 1000 | 0.10 | csr (= auto) | 10.20 (10.10–10.30) | csc | – |",
            "| b | 100 | 1000 | 0.10 | csc | 5.10 (5.05–5.15) | – | 2.00× |",
            "| csc | 1.40× (n=2) | 1 / 1 / 0 | 0 |",
            "Left out: `auto (→ csr)`",
            "**Noise in this run:**",
            "| all 2 matrices | f64 | cusparse-alg1 | unsupported | GPU unavailable |",
            "## Skipped inputs",
            "| broken.mtx | broken.mtx: line 3: bad value |",
        ] {
            assert!(md.contains(want), "missing {want:?} in\n{md}");
        }
        let (charts, _) = charts_for(&merged, &ReportOptions::default(), F64);
        for (_, c) in &charts {
            assert!(!c.title.contains("stream"), "{}", c.title);
            assert!(c.series.iter().all(|s| s.label != "cusparse-alg1"));
            assert!(c.series.iter().all(|s| !s.points.is_empty()));
        }
        // a GPU run keeps its claims and its vocabulary
        let gpu = merge_runs(&[synthetic_run()]);
        assert!(!cpu_only(&gpu));
        let md = summary_markdown(&gpu, &ReportOptions::default(), &[], &[]);
        assert!(!md.contains(CPU_CAVEAT));
        assert!(md.contains("Paper claims"));
    }

    #[test]
    fn writes_full_report_with_failure_listed() {
        let dir = std::env::temp_dir().join(format!("spmvkit-report-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let files = write_report(&[synthetic_run()], &dir).unwrap();
        let summary = fs::read_to_string(&files.summary).unwrap();
        assert!(
            summary.contains("too many resources requested"),
            "{summary}"
        );
        assert!(
            summary.contains("| big | f64 |")
                || summary.contains("| mid | f64 | fastload | failed |"),
            "{summary}"
        );
        assert!(summary.contains("NVIDIA Test GPU (132 SMs, 80.0 GiB memory, 50.0 MiB L2)"));
        assert!(summary.contains("3000.0 GB/s"));
        assert!(summary.contains("fits in L2"));
        assert!(summary.contains("No csr results in f64"));
        let csv = fs::read_to_string(&files.csv).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 1 + 9);
        let width = csv_split(lines[0]).len();
        for l in &lines {
            assert_eq!(csv_split(l).len(), width, "{l}");
        }
        assert!(csv.contains("mid,mid.mtx,false"));
        assert!(csv
            .contains(",fastload,f64,failed,CUDA error in launch: too many resources requested,"));
        assert_eq!(files.plots.len(), 8, "{:?} {:?}", files.plots, files.notes);
        for stem in [
            "profile-f64",
            "speedup-nnz-f64",
            "speedup-variation-f64",
            "prep-nnz-f64",
        ] {
            for ext in ["svg", "png"] {
                let f = dir.join("plots").join(format!("{stem}.{ext}"));
                assert!(
                    fs::metadata(&f).map(|m| m.len() > 1000).unwrap_or(false),
                    "{}",
                    f.display()
                );
            }
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn report_when_nothing_ran() {
        let dir = std::env::temp_dir().join(format!("spmvkit-report-none-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let run = BenchRun {
            skipped: Vec::new(),
            machine: MachineInfo::default(),
            suite: None,
            matrices: vec![matrix(
                "only",
                0,
                0.0,
                true,
                vec![
                    failed("cusparse-alg1", F64, "no GPU"),
                    failed("fast", F64, "no GPU"),
                ],
            )],
        };
        let files = write_report(&[run, BenchRun::default()], &dir).unwrap();
        assert!(files.plots.is_empty());
        assert_eq!(files.notes.len(), 1, "{:?}", files.notes);
        let summary = fs::read_to_string(&files.summary).unwrap();
        assert!(
            summary.contains("| only | f64 | fast | failed | no GPU |"),
            "{summary}"
        );
        assert!(summary.contains("no method ran correctly"), "{summary}");
        assert!(summary.contains("not measured"), "{summary}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn load_runs_reads_files_and_directories() {
        let dir = std::env::temp_dir().join(format!("spmvkit-load-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let run = synthetic_run();
        let text = serde_json::to_string(&run).unwrap();
        fs::write(dir.join("run-2.json"), &text).unwrap();
        fs::write(dir.join("run-1.json"), &text).unwrap();
        fs::write(dir.join("other.json"), "not json").unwrap();
        let runs = load_runs(std::slice::from_ref(&dir)).unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].matrices.len(), 3);
        let one = load_runs(&[dir.join("run-1.json")]).unwrap();
        assert_eq!(one.len(), 1);
        assert!(matches!(
            load_runs(&[dir.join("other.json")]),
            Err(Error::Parse { .. })
        ));
        assert!(matches!(
            load_runs(&[dir.join("missing.json")]),
            Err(Error::Io { .. })
        ));
        assert!(matches!(load_runs(&[]), Err(Error::InvalidArgument(_))));
        let empty = dir.join("empty");
        fs::create_dir_all(&empty).unwrap();
        assert!(matches!(
            load_runs(&[empty]),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            write_report(&[], &dir),
            Err(Error::InvalidArgument(_))
        ));
        fs::remove_dir_all(&dir).unwrap();
    }
}
