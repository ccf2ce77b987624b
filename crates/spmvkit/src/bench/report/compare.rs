//! The comparison maths of a report: per-result times, baselines, speedups and their geometric
//! means over subsets of matrices, wins / ties / losses, break-even calls, copy-bandwidth shares,
//! the performance profile and the ranking of the methods on one matrix (with `auto` folded into
//! the method it ran).

use crate::bench::{MatrixResult, MethodResult, RunRecord, Status, Timing};
use crate::gpu::TimingMode;
use crate::scalar::Precision;
use crate::stats::{geomean, quantile};

/// Matrices with more nonzeros than this form the "large" subset.
pub const LARGE_NNZ: usize = 1_000_000;

/// The matrices a summary figure is taken over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subset {
    All,
    /// nnz > [`LARGE_NNZ`].
    Large,
    /// Working set larger than the GPU's L2 (`!fits_l2`).
    BandwidthBound,
    /// Working set fits in the GPU's L2 (`fits_l2`).
    FitsL2,
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
            Subset::FitsL2 => m.fits_l2,
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
            Subset::FitsL2 => "fits in L2",
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
        kind: TimingMode,
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
        kind: TimingMode,
    ) -> Option<f64> {
        self.members
            .iter()
            .filter_map(|m| method_time_us(results, m, precision, kind))
            .min_by(f64::total_cmp)
    }
}

/// The median per-call time of a result, in µs, if it ran correctly and has that timing.
pub fn result_time_us(r: &MethodResult, kind: TimingMode) -> Option<f64> {
    if r.status != Status::Ok {
        return None;
    }
    let rec = r.record.as_ref()?;
    let t = match kind {
        TimingMode::Stream => rec.time.median_us,
        TimingMode::Graph => rec.graph_time.as_ref()?.median_us,
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
    kind: TimingMode,
) -> Option<f64> {
    find_result(results, method, precision).and_then(|r| result_time_us(r, kind))
}

/// [`method_time_us`] of each method (columns) on each matrix (rows): the input of
/// [`performance_profile`].
pub fn time_table<M: AsRef<str>>(
    matrices: &[&MatrixResult],
    methods: &[M],
    precision: Precision,
    kind: TimingMode,
) -> Vec<Vec<Option<f64>>> {
    matrices
        .iter()
        .map(|m| {
            methods
                .iter()
                .map(|me| method_time_us(&m.results, me.as_ref(), precision, kind))
                .collect()
        })
        .collect()
}

/// The fastest method in `precision` on a matrix and its time (first listed on a tie).
pub fn best_method(
    results: &[MethodResult],
    precision: Precision,
    kind: TimingMode,
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
pub fn timing_of(rec: &RunRecord, kind: TimingMode) -> Option<&Timing> {
    match kind {
        TimingMode::Stream => Some(&rec.time),
        TimingMode::Graph => rec.graph_time.as_ref(),
    }
}

/// The interquartile range (q1, q3) of a timing's per-call samples, by linear interpolation
/// between order statistics (one sample: that sample; none recorded: min and max).
pub fn quartiles(t: &Timing) -> (f64, f64) {
    match (quantile(&t.samples_us, 0.25), quantile(&t.samples_us, 0.75)) {
        (Some(q1), Some(q3)) => (q1, q3),
        _ => (t.min_us, t.max_us),
    }
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

/// The method `auto` ran, from a saved record's notes (the `auto chose` note,
/// [`crate::methods::auto::CHOSE_NOTE`]): the one reader of that note. A live plan says it typed,
/// [`crate::Plan::chosen`].
pub fn auto_choice(rec: &RunRecord) -> Option<&str> {
    rec.notes
        .iter()
        .find(|(k, _)| k == crate::methods::auto::CHOSE_NOTE)
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
pub fn ranking(results: &[MethodResult], precision: Precision, kind: TimingMode) -> Vec<Ranked> {
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
pub fn effective_gbs(rec: &RunRecord, kind: TimingMode) -> Option<f64> {
    let t = match kind {
        TimingMode::Stream => rec.time.median_us,
        TimingMode::Graph => rec.graph_time.as_ref()?.median_us,
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
    kind: TimingMode,
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
pub fn same_code_ratios(matrices: &[&MatrixResult], p: Precision, kind: TimingMode) -> Vec<f64> {
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
pub(super) fn only_repeats(matrices: &[&MatrixResult], p: Precision, method: &str) -> bool {
    is_auto(method)
        && matrices.iter().all(|m| {
            match find_result(&m.results, method, p)
                .filter(|r| result_time_us(r, TimingMode::Stream).is_some())
            {
                None => true,
                Some(r) => r.record.as_ref().and_then(auto_choice).is_some_and(|c| {
                    method_time_us(&m.results, c, p, TimingMode::Stream).is_some()
                }),
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::report::tests::*;
    use crate::bench::{byte_model, MatrixResult, Timing};

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
        let gbs = effective_gbs(&rec, TimingMode::Stream).unwrap();
        assert!((gbs - 140.004).abs() < 1e-9);
        assert!((rec.gbs - gbs).abs() < 1e-9);
        assert!((copy_bandwidth_pct(gbs, Some(1400.04)).unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(copy_bandwidth_pct(gbs, None), None);
        assert_eq!(copy_bandwidth_pct(gbs, Some(0.0)), None);
        let g = effective_gbs(&rec, TimingMode::Graph).unwrap();
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
        let g = speedup_summary(&refs, "csr", &cu, F64, TimingMode::Graph, Subset::All);
        assert_eq!((g.compared, g.method_failed), (0, 0));
        let s = speedup_summary(&refs, "csr", &cu, F64, TimingMode::Stream, Subset::All);
        assert_eq!(s.compared, 1);
        let b = speedup_summary(&refs, "broken", &cu, F64, TimingMode::Graph, Subset::All);
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
            cu.time_us(&ms[0].results, F64, TimingMode::Stream),
            Some(10.0)
        );
        assert_eq!(
            cu.time_us(&ms[1].results, F64, TimingMode::Stream),
            Some(8.0)
        );
        assert_eq!(cu.time_us(&ms[2].results, F64, TimingMode::Stream), None);
        assert_eq!(
            cu.time_us(&ms[0].results, Precision::F32, TimingMode::Stream),
            None
        );

        let s = speedup_summary(&refs, "fast", &cu, F64, TimingMode::Stream, Subset::All);
        assert_eq!(s.compared, 2);
        assert!((s.geomean.unwrap() - 1.0).abs() < 1e-12); // √(2 · 0.5)
        assert_eq!((s.wins, s.losses), (1, 1));
        assert_eq!(s.method_failed, 1);
        assert_eq!(s.baseline_missing, 1);
        assert_eq!(s.break_even, vec![(1.0 + 0.5) * 1000.0 / 5.0]); // (prepare + upload) ms

        let large = speedup_summary(&refs, "fast", &cu, F64, TimingMode::Stream, Subset::Large);
        assert_eq!(large.compared, 1);
        assert!((large.geomean.unwrap() - 2.0).abs() < 1e-12);
        let bw = speedup_summary(
            &refs,
            "fast",
            &cu,
            F64,
            TimingMode::Stream,
            Subset::BandwidthBound,
        );
        assert_eq!(bw.compared, 1);
        // Graph times are compared with graph times: both scaled by 0.9, same ratio.
        let g = speedup_summary(&refs, "fast", &cu, F64, TimingMode::Graph, Subset::Large);
        assert!((g.geomean.unwrap() - 2.0).abs() < 1e-12);
        // A baseline that never ran gives no comparison at all.
        let none = speedup_summary(
            &refs,
            "fast",
            &Baseline::method("csr"),
            F64,
            TimingMode::Stream,
            Subset::All,
        );
        assert_eq!((none.compared, none.geomean), (0, None));

        assert_eq!(
            best_method(&ms[1].results, F64, TimingMode::Stream),
            Some(("cusparse-alg1", 8.0))
        );
        assert_eq!(
            best_method(&ms[0].results, Precision::F32, TimingMode::Stream),
            None
        );
        assert_eq!(speedup(Some(10.0), None), None);
        assert_eq!(speedup(None, Some(1.0)), None);
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
            TimingMode::Stream,
            Subset::ShortRows,
        );
        assert_eq!(short.compared, 1);
        assert!((short.geomean.unwrap() - 2.0).abs() < 1e-12);
        let mid = speedup_summary(
            &refs,
            "fastload",
            &cu,
            F32,
            TimingMode::Stream,
            Subset::MediumRows,
        );
        assert!((mid.geomean.unwrap() - 8.0).abs() < 1e-12);
    }

    #[test]
    fn rankings_fold_auto_into_its_choice_and_find_ties() {
        let run = cpu_run();
        let ranked = ranking(&run.matrices[0].results, F64, TimingMode::Stream);
        let labels: Vec<&str> = ranked.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, vec!["csr (= auto)", "csc", "fastload"]);
        let (first, ties) = fastest(&ranked).unwrap();
        assert_eq!(first.method, "csr");
        assert_eq!(ties.len(), 1);
        assert_eq!(ties[0].method, "csc");
        let ranked = ranking(&run.matrices[1].results, F64, TimingMode::Stream);
        let (first, ties) = fastest(&ranked).unwrap();
        assert_eq!((first.method.as_str(), ties.len()), ("csc", 0));
        assert_eq!(
            quartiles(&Timing::from_samples(vec![1.0, 2.0, 3.0, 4.0, 5.0])),
            (2.0, 4.0)
        );
        assert_eq!(quartiles(&Timing::from_samples(vec![7.0])), (7.0, 7.0));
        let refs: Vec<&MatrixResult> = run.matrices.iter().collect();
        let twice = same_code_ratios(&refs, F64, TimingMode::Stream);
        assert_eq!(twice.len(), 2);
        assert_eq!(method_display(&refs, F64, "auto"), "auto (→ csr)");
    }
}
