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
//! Stream times ([`RunRecord::time`](super::RunRecord::time)) are compared only with stream times
//! and CUDA-graph times ([`RunRecord::graph_time`](super::RunRecord::graph_time)) only with graph
//! times. The plots follow FastLoad Figs. 7 (speedup against nnz), 8 (speedup against row-length
//! variation) and 10 (preprocessing time against nnz), plus the performance profile; one set per
//! precision.
//!
//! One job per file, all re-exported here: `load` (reading and merging runs), `against` (a run
//! set against an earlier one: y bit for bit and new/old time, `spmv report --against`), `compare` (the
//! comparison maths), `claims` (the papers' claims and Eq. 2, and the per-paper tables of
//! `spmv report --claims`), `markdown` (`summary.md`), `csv` (`results.csv`) and `charts` (which
//! plots to draw), plus `fixtures` (synthetic results for tests); this file holds the entry points [`write_report`] and [`write_report_with`].

mod against;
mod charts;
mod claims;
mod compare;
mod csv;
#[doc(hidden)]
pub mod fixtures;
mod load;
mod markdown;
#[cfg(test)]
pub(crate) mod tests;

use std::fs;
use std::path::{Path, PathBuf};

use super::plots;
use super::BenchRun;
use crate::error::{Error, Result};
use crate::scalar::Precision;

/// The report's means, at their old paths ([`crate::stats`] holds them).
pub use crate::stats::{geomean, mean};
pub use against::{against_tables, pairs as against_pairs, Pair as AgainstPair};
pub use charts::charts_for;
pub use claims::{
    claims_tables, eq2_rows, eq2_speedup, ClaimMeasure, ClaimsSection, Eq2Row, PaperClaim,
    EQ2_METHODS, PAPER_CLAIMS,
};
pub use compare::{
    auto_choice, best_method, break_even_calls, copy_bandwidth_pct, effective_gbs, fastest,
    find_result, is_auto, mean_row_length, method_display, method_time_us, performance_profile,
    quartiles, ranking, result_label, result_time_us, same_code_ratios, speedup, speedup_summary,
    tau_grid, tie, timing_of, Baseline, Ranked, SpeedupSummary, Subset, LARGE_NNZ, LONG_ROWS,
    SHORT_ROWS,
};
pub use csv::{results_csv, STATS_COLUMNS};
pub use load::{cpu_only, load_runs, merge_runs, read_text_maybe_gz, MergedMatrix, MergedRuns};
pub use markdown::{summary_markdown, CPU_CAVEAT};

pub(crate) use markdown::cell;

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

/// What [`write_report`] wrote.
#[derive(Clone, Debug, Default)]
pub struct ReportFiles {
    pub summary: PathBuf,
    pub csv: PathBuf,
    /// `limits.csv`, written when some result has a limit (a GPU run with a probe).
    pub limits_csv: Option<PathBuf>,
    /// `spmm.md`, the multi-vector results' table, written when the runs have any
    /// ([`crate::bench::multi`]).
    pub spmm: Option<PathBuf>,
    /// `spmm-limits.csv`, the multi-vector results' limits and their terms, written when some
    /// has a limit ([`crate::bench::multi::multi_limits_csv`]).
    pub spmm_limits_csv: Option<PathBuf>,
    /// Every plot file (SVG and PNG).
    pub plots: Vec<PathBuf>,
    /// Plots not drawn, and why.
    pub notes: Vec<String>,
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
    let matrices: Vec<_> = merged.matrices.iter().map(|m| m.matrix.clone()).collect();
    // the limits use the first run's probe (the runs of one report are on one machine)
    let probe = merged.runs.iter().find_map(|(m, _)| m.probe.as_ref());
    let spmm = super::multi::multi_table(&matrices, probe);
    if !spmm.is_empty() {
        let path = out_dir.join("spmm.md");
        let text = format!("# SpMM: multi-vector calls\n\n{spmm}");
        fs::write(&path, text).map_err(|e| Error::io(&path, e))?;
        files.spmm = Some(path);
    }
    if let Some(text) = super::multi::multi_limits_csv(&matrices, probe) {
        let path = out_dir.join("spmm-limits.csv");
        fs::write(&path, text).map_err(|e| Error::io(&path, e))?;
        files.spmm_limits_csv = Some(path);
    }
    Ok(files)
}
