//! `spmv report`: rebuild the summary and plots from saved runs, merging several; or print the
//! per-paper claims tables of the runs (`--claims SECTION`).

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::Args;
use spmvkit::bench::report::{self, ClaimsSection, ReportFiles};
use spmvkit::bench::{BenchRun, Status};
use spmvkit::gpu::TimingMode;
use spmvkit::Precision;

/// Rebuild summary.md, results.csv and the plots from saved run-*.json or run-*.json.gz files (or
/// folders of them). Later runs replace earlier results for the same matrix, method and precision.
///
/// With --claims SECTION nothing is written: the per-paper tables of the merged runs are printed
/// as markdown instead (the tables the claims notes in docs/results quote).
#[derive(Args)]
#[command(after_help = "Examples:
  spmv report bench-out
  spmv report docs/results/h100/run-a.json docs/results/h100/run-b.json --out docs/results/h100
  spmv report docs/results/h200/2026-11-22/hbp --claims hbp
  spmv report after/ --against before/      a refactor: same y bit for bit, and new/old time

The last prints, per method, t_baseline / t_method over the matrices where both ran correctly
(geometric mean, stream timing, n matrices; `cusparse` is the fastest of cusparse, cusparse-alg1
and cusparse-alg2 on each matrix), then each method's µs per call on each matrix:

  | precision | matrices | method | × over cusparse | × over csr-vector | × over 2d |
  |---|---|---|---|---|---|
  | f64 | all | `hbp` | 0.13× (n=8) | 0.47× (n=8) | 1.09× (n=8) |
  ...
  | matrix | nnz | `cusparse` µs | `csr-vector` µs | `2d` µs | `hbp` µs | ...
  | rajat01 | 43250 | 8.3 | 18.2 | 385.0 | 343.5 | ...

Matrix sets: all; large, the working set is larger than L2 (bandwidth-bound); l2, it fits in L2.
\"–\": no matrix where both ran; \"*\" after a time: the result disagreed with the oracle.")]
pub struct ReportArgs {
    /// run-*.json(.gz) files or folders holding them.
    #[arg(required = true, value_name = "RUN")]
    runs: Vec<PathBuf>,
    /// Output folder (default: the first folder given, or the first file's folder).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print the per-paper tables of SECTION (markdown, on standard output) instead of writing the
    /// report.
    #[arg(
        long,
        value_name = "SECTION",
        value_parser = PossibleValuesParser::new(claims_values()),
        conflicts_with = "out"
    )]
    claims: Option<String>,
    /// Print, instead of writing the report, these runs against earlier runs OLD of the same
    /// inputs (files or folders, repeatable): per method, whether y is the same bit for bit
    /// (deterministic methods; the records' y digests) or the oracle accepted it, and the new
    /// time over the old (geomean and worst, stream and graph). For a refactor: build the old and
    /// the new binary, run both on the same GPU, compare.
    #[arg(long, value_name = "OLD", conflicts_with_all = ["out", "claims"])]
    against: Vec<PathBuf>,
}

/// The values of `--claims`: every section, and `all`.
fn claims_values() -> Vec<PossibleValue> {
    ClaimsSection::ALL
        .iter()
        .map(|s| PossibleValue::new(s.name()).help(s.describe()))
        .chain([PossibleValue::new("all").help("Every section, each under a `## SECTION` heading")])
        .collect()
}

/// The per-paper tables of the merged runs: one section, or (`all`) every section under its
/// heading.
fn claims_text(runs: &[BenchRun], section: &str) -> Result<String> {
    let merged = report::merge_runs(runs);
    if section == "all" {
        return Ok(ClaimsSection::ALL
            .iter()
            .map(|&s| format!("## {s}\n\n{}", report::claims_tables(&merged, s)))
            .collect::<Vec<_>>()
            .join("\n"));
    }
    Ok(report::claims_tables(&merged, section.parse()?))
}

pub fn run(args: ReportArgs) -> Result<()> {
    let runs = spmvkit::bench::report::load_runs(&args.runs)?;
    if let Some(section) = &args.claims {
        print!("{}", claims_text(&runs, section)?);
        return Ok(());
    }
    if !args.against.is_empty() {
        let old = report::merge_runs(&report::load_runs(&args.against)?);
        print!(
            "{}",
            report::against_tables(&old, &report::merge_runs(&runs))
        );
        return Ok(());
    }
    let out = args.out.clone().unwrap_or_else(|| {
        let first = &args.runs[0];
        if first.is_dir() {
            first.clone()
        } else {
            first
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from("."))
        }
    });
    let files = spmvkit::bench::report::write_report(&runs, &out)?;
    println!("merged {} run(s) into {}", runs.len(), out.display());
    print_files(&files);
    Ok(())
}

/// One screen of what a run did.
pub fn print_summary(run: &BenchRun, json: &Path, files: &ReportFiles) {
    let count = |s: Status| {
        run.matrices
            .iter()
            .flat_map(|m| &m.results)
            .filter(|r| r.status == s)
            .count()
    };
    let cpu = run.machine.gpu == "none";
    println!(
        "{} matrices on {}: {} ok, {} wrong, {} unsupported, {} failed, {} inputs skipped",
        run.matrices.len(),
        if cpu {
            "the CPU (no GPU)"
        } else {
            run.machine.gpu.as_str()
        },
        count(Status::Ok),
        count(Status::Wrong),
        count(Status::Unsupported),
        count(Status::Failed),
        run.skipped.len()
    );
    if cpu {
        println!(
            "CPU mirrors only: these times compare the mirrors on this CPU, not the GPU kernels \
             (summary.md says more). Fastest per matrix, median µs per call (IQR of the samples); \
             \"tie\": the IQRs overlap."
        );
    } else {
        println!(
            "Fastest per matrix, median µs per call on the stream (IQR of the samples); \"tie\": the \
             IQRs overlap."
        );
    }
    let kind = TimingMode::Stream;
    let refs: Vec<_> = run.matrices.iter().collect();
    let twice: Vec<f64> = Precision::ALL
        .into_iter()
        .flat_map(|p| report::same_code_ratios(&refs, p, kind))
        .collect();
    if let Some(max) = twice.iter().copied().max_by(f64::total_cmp) {
        println!(
            "Noise: auto and the method it chose are the same code measured twice; their times \
             differ by up to {max:.2}x in this run."
        );
    }
    for m in &run.matrices {
        let precisions: Vec<Precision> = Precision::ALL
            .into_iter()
            .filter(|p| m.results.iter().any(|r| r.precision == *p))
            .collect();
        for p in precisions {
            let ranked = report::ranking(&m.results, p, kind);
            let Some((first, ties)) = report::fastest(&ranked) else {
                println!(
                    "  {:<24} {:>10} nnz  no method ran correctly ({p})",
                    m.name, m.stats.nnz
                );
                continue;
            };
            let (q1, q3) = report::quartiles(&first.timing);
            let tied = if ties.is_empty() {
                String::new()
            } else {
                let names: Vec<&str> = ties.iter().map(|r| r.label.as_str()).collect();
                format!("; tie: {}", names.join(", "))
            };
            println!(
                "  {:<24} {:>10} nnz  {p}  {} {:.2} µs ({q1:.2}–{q3:.2}){tied}",
                m.name, m.stats.nnz, first.label, first.timing.median_us
            );
        }
    }
    for (source, why) in &run.skipped {
        println!("  {}", skipped_line(source, why));
    }
    println!("record: {}", json.display());
    print_files(files);
}

/// `skipped SOURCE: WHY`, without the source twice when the reason already names it (a file's
/// errors start with its path).
pub fn skipped_line(source: &str, why: &str) -> String {
    if why.starts_with(source) {
        format!("skipped {why}")
    } else {
        format!("skipped {source}: {why}")
    }
}

fn print_files(files: &ReportFiles) {
    println!("  {}\n  {}", files.summary.display(), files.csv.display());
    if let Some(limits) = &files.limits_csv {
        println!("  {}", limits.display());
    }
    if let Some(spmm) = &files.spmm {
        println!("  {}", spmm.display());
    }
    if let Some(limits) = &files.spmm_limits_csv {
        println!("  {}", limits.display());
    }
    println!(
        "  {} plot files in {}",
        files.plots.len(),
        files
            .plots
            .first()
            .and_then(|p| p.parent())
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    );
    for n in &files.notes {
        println!("  note: {n}");
    }
}
