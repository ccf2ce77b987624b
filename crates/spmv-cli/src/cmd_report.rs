//! `spmv report`: rebuild the summary and plots from saved runs, merging several.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use spmvkit::bench::report::ReportFiles;
use spmvkit::bench::{BenchRun, Status};

/// Rebuild summary.md, results.csv and the plots from saved run-*.json or run-*.json.gz files (or
/// folders of them). Later runs replace earlier results for the same matrix, method and precision.
#[derive(Args)]
#[command(after_help = "Examples:
  spmv report bench-out
  spmv report docs/results/h100/run-a.json docs/results/h100/run-b.json --out docs/results/h100")]
pub struct ReportArgs {
    /// run-*.json(.gz) files or folders holding them.
    #[arg(required = true, value_name = "RUN")]
    runs: Vec<PathBuf>,
    /// Output folder (default: the first folder given, or the first file's folder).
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn run(args: ReportArgs) -> Result<()> {
    let runs = spmvkit::bench::report::load_runs(&args.runs)?;
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
    println!(
        "{} matrices on {}: {} ok, {} wrong, {} unsupported, {} failed, {} inputs skipped",
        run.matrices.len(),
        if run.machine.gpu == "none" {
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
    for m in &run.matrices {
        let mut ok: Vec<_> = m
            .results
            .iter()
            .filter_map(|r| r.record.as_ref().filter(|_| r.status == Status::Ok))
            .collect();
        ok.sort_by(|a, b| a.time.median_us.total_cmp(&b.time.median_us));
        if let Some(best) = ok.first() {
            println!(
                "  {:<24} {:>10} nnz  best {} ({}, {:.2} µs, {:.1} GFLOP/s)",
                m.name, m.stats.nnz, best.method, best.precision, best.time.median_us, best.gflops
            );
        }
    }
    println!("record: {}", json.display());
    print_files(files);
}

fn print_files(files: &ReportFiles) {
    println!("  {}\n  {}", files.summary.display(), files.csv.display());
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
