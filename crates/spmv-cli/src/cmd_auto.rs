//! `spmv auto`: the `auto` method's training table and its evaluation, with no GPU needed.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use spmvkit::bench::auto::{eval, table};
use spmvkit::methods::auto::{model_explain, sampled_x_share};
use spmvkit::methods::Params;
use spmvkit::{MatrixStats, Precision};

use crate::input;

/// The `auto` method's training table and evaluation: rebuild `table.csv` from committed runs,
/// judge auto against the best method of measured runs, or show what the model picks for a
/// matrix.
#[derive(Args)]
pub struct AutoArgs {
    #[command(subcommand)]
    command: AutoCommand,
}

#[derive(Subcommand)]
enum AutoCommand {
    Table(TableArgs),
    Eval(EvalArgs),
    Pick(PickArgs),
}

/// Build auto's training table from committed runs: each (matrix, method, precision) from the
/// newest run that measured it, with that run's commit.
#[derive(Args)]
#[command(
    after_help = "Inputs: run-*.json or run-*.json.gz records, results CSVs (.csv, .csv.gz)
where no record was committed, or folders, searched recursively (in each folder its run records,
else its results CSVs).

Example (the committed table):
  spmv auto table docs/results/h200 -o crates/spmvkit/src/methods/auto/table.csv"
)]
pub struct TableArgs {
    /// Run records, results CSVs or folders.
    #[arg(required = true, value_name = "RUN")]
    runs: Vec<PathBuf>,
    /// Where to write the table (default: standard output).
    #[arg(short, long)]
    out: Option<PathBuf>,
}

/// Judge auto against the best measured method of runs: per matrix, the shipped model's pick
/// (model mode) and every measured `auto` entry, at 1000 calls and at ∞ (preprocessing
/// ignored); "within 10 % of the best on N / M".
#[derive(Args)]
#[command(after_help = "Example (the held-out large set):
  spmv bench --suite large-test --methods all,'auto[calls=1000000000]' --out bench-large
  spmv auto eval bench-large")]
pub struct EvalArgs {
    /// Run records, results CSVs or folders (the newest run wins where they overlap).
    #[arg(required = true, value_name = "RUN")]
    runs: Vec<PathBuf>,
    /// Comma-separated numbers of calls; `inf` ignores preprocessing.
    #[arg(long, default_value = "1000,inf")]
    calls: String,
}

/// Show what `auto` would choose on a GPU for a matrix, from the model alone.
#[derive(Args)]
#[command(after_help = "Example:
  spmv auto pick poisson3d:160 poisson2d:1250 --param calls=1000")]
pub struct PickArgs {
    /// Matrix Market files, .spmvkit caches or GEN-SPECs.
    #[arg(required = true, value_name = "MATRIX")]
    matrices: Vec<String>,
    /// The GPU's L2 in MiB (the training runs' H200: 60).
    #[arg(long, default_value_t = 60)]
    l2_mib: u64,
    /// Comma-separated precisions.
    #[arg(long, default_value = "f64")]
    precision: String,
    /// An `auto` parameter, repeatable (calls, mode, trial, k, deterministic).
    #[arg(long = "param", value_name = "KEY=VALUE")]
    params: Vec<String>,
    /// Do not read or write the binary cache.
    #[arg(long)]
    no_cache: bool,
    /// Also print the ranking and the nearest training matrices.
    #[arg(long)]
    explain: bool,
}

pub fn run(args: AutoArgs) -> Result<()> {
    match args.command {
        AutoCommand::Table(a) => run_table(a),
        AutoCommand::Eval(a) => run_eval(a),
        AutoCommand::Pick(a) => run_pick(a),
    }
}

fn run_table(args: TableArgs) -> Result<()> {
    let runs = table::load_committed_runs(&args.runs)?;
    let t = table::Table::from_runs(&runs);
    let csv = t.to_csv();
    match &args.out {
        Some(p) => {
            std::fs::write(p, &csv).with_context(|| format!("writing {}", p.display()))?;
            eprintln!(
                "{} runs read; {} rows, {} methods written to {}",
                runs.len(),
                t.rows.len(),
                t.methods.len(),
                p.display()
            );
            for (commit, n) in t.commits() {
                eprintln!("  {n:>5} cells from {commit}");
            }
        }
        None => print!("{csv}"),
    }
    Ok(())
}

fn run_eval(args: EvalArgs) -> Result<()> {
    let calls = args
        .calls
        .split(',')
        .map(|c| match c.trim() {
            "inf" | "∞" => Ok(eval::CALLS_INF),
            n => n
                .parse::<f64>()
                .ok()
                .filter(|v| *v >= 1.0)
                .with_context(|| format!("--calls: '{n}' is not a number of calls or inf")),
        })
        .collect::<Result<Vec<_>>>()?;
    let runs = table::load_committed_runs(&args.runs)?;
    let merged = table::merge_newest(&runs);
    let points = eval::evaluate_runs(&merged, &calls)?;
    print!("{}", eval::runs_markdown(&points));
    Ok(())
}

fn run_pick(args: PickArgs) -> Result<()> {
    let params = Params::parse(args.params.iter().map(String::as_str))?;
    let precisions = args
        .precision
        .split(',')
        .map(|p| p.trim().parse::<Precision>())
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let l2 = Some(args.l2_mib << 20);
    for arg in &args.matrices {
        let loaded = input::load::<f64>(arg, !args.no_cache)?;
        let s = MatrixStats::of(&loaded.matrix);
        let fits = spmvkit::matrix::fits_l2(s.nrows, s.ncols, s.nnz, l2);
        for &p in &precisions {
            // the x share as auto samples it, so the pick is the one auto makes
            let share = sampled_x_share(&loaded.matrix, p, fits);
            let e = model_explain(&s, share, fits, p, &params)?;
            let c = &e.choice;
            println!(
                "{} ({p}, {} nnz, {}): {} (predicted {} µs per call){}",
                loaded.name,
                s.nnz,
                if fits { "fits L2" } else { "larger than L2" },
                c.method,
                c.predicted_us
                    .map_or_else(|| "–".into(), |u| format!("{u:.1}")),
                if c.candidates.len() > 1 {
                    format!("; trial of {}", c.candidates.join(", "))
                } else {
                    String::new()
                }
            );
            if args.explain {
                println!("  ranking (predicted µs per call, preprocessing µs):");
                for (m, pr) in e.ranking.iter().take(8) {
                    println!(
                        "    {m:<16} {:>10.1} {:>12.1}  → {:.1} at these calls",
                        pr.call_us, pr.prep_us, pr.us
                    );
                }
                let near: Vec<String> = e
                    .neighbours
                    .iter()
                    .map(|(n, d)| format!("{n} ({d:.2})"))
                    .collect();
                println!(
                    "  nearest training matrices (distance): {}",
                    near.join(", ")
                );
            }
        }
    }
    Ok(())
}
