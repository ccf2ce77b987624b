//! `spmv run`: one method on one matrix, checked against the oracle and timed.

use anyhow::{bail, Result};
use clap::Args;
use serde_json::json;
use spmvkit::bench::{measure, MeasureOptions, RunRecord};
use spmvkit::methods::{Backend, Params, PlanOptions};
use spmvkit::reorder::Reorder;
use spmvkit::{Csr, Precision, PrecisionMode, PrepareFor, ValueStorage};

use crate::args;
use crate::auto_args::AutoArgs;
use crate::input;

/// Run one SpMV method on a matrix: prepare it (timed apart), check one call of y = αAx + βy
/// against the serial f64 oracle, then time repeated calls.
///
/// On a GPU the kernel time is the median over samples of N back-to-back calls on one stream
/// (CUDA events), also replayed from a CUDA graph, and the run includes cuSPARSE (the better of
/// CSR_ALG1 and CSR_ALG2) measured the same way, for the speedup. Without a GPU the method's CPU
/// mirror runs (slow by design: it walks the GPU layout) and the note says so.
#[derive(Args)]
#[command(after_help = "Examples:
  spmv run poisson3d:64 --method csr
  spmv run kron:16 --method csr-vector --precision f32 --reps 50
  spmv run poisson3d:160 --method csr-vector --precision bf16-f32
                                                 values in bf16, x, y and sums in f32
  spmv run a.mtx.gz --method merge --param items_per_thread=7 --json
  spmv run rgg:1000000,order=shuffled --method csr-packed --reorder rcm
                                                 bring a shuffled graph's neighbours together

Choosing a method (auto):
  spmv run a.mtx --method auto --param calls=100000
                                                 time the model's best 3, keep the fastest
  spmv run a.mtx --method auto --param calls=1   a one-shot call: cheap setups win, no trial
  spmv run a.mtx --method auto --auto=model      the model alone: nearest training matrices
  spmv run a.mtx --method auto --deterministic   bitwise-reproducible methods only
  The notes say what auto chose, why, and what the trial measured.")]
pub struct RunArgs {
    /// Matrix Market file, .spmvkit cache, or GEN-SPEC.
    #[arg(value_name = "MATRIX")]
    matrix: String,
    /// Method name (see `spmv methods`), or a variant NAME[key=value;...] as `spmv bench
    /// --methods` takes it (its values win over --param).
    #[arg(short, long)]
    method: String,
    /// Precision mode: f64, f32, or the matrix values stored narrower than x, y and the
    /// accumulation: f16-f32, bf16-f32, f32-f64 (docs/precision.md). The check is against the
    /// oracle of the stored values; the notes give the conversion's own error.
    #[arg(short, long, default_value = "f64", value_parser = ["f32", "f64", "f16-f32", "bf16-f32", "f32-f64"])]
    precision: String,
    /// Calls per timed sample (at least 1).
    #[arg(long, default_value_t = 20, value_parser = args::at_least_one)]
    reps: usize,
    /// Timed samples, at least 1; the median is reported.
    #[arg(long, default_value_t = 5, value_parser = args::at_least_one)]
    samples: usize,
    /// Untimed warm-up calls.
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// α in y = αAx + βy (a finite number).
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true, value_parser = args::finite)]
    alpha: f64,
    /// β in y = αAx + βy (a finite number).
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true, value_parser = args::finite)]
    beta: f64,
    /// Method parameter override, repeatable (see `spmv methods`).
    #[arg(long = "param", value_name = "KEY=VALUE")]
    params: Vec<String>,
    #[command(flatten)]
    auto: AutoArgs,
    /// Reorder a square matrix symmetrically before preparing the method: none, rcm (reverse
    /// Cuthill–McKee: a small bandwidth), bisection (recursive graph bisection: neighbours get
    /// nearby numbers), or auto (RCM where the x-sector model says it saves more gathers than
    /// the two permutations each call adds). x and y stay in the matrix's numbering: every timed
    /// call permutes them. The ordering's time counts as preprocessing.
    #[arg(long, default_value = "none", value_parser = args::reorder)]
    reorder: Reorder,
    /// Run on the CPU even when a GPU is present.
    #[arg(long)]
    cpu: bool,
    /// Skip the cuSPARSE comparison on the GPU.
    #[arg(long)]
    no_baseline: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Do not read or write the binary cache.
    #[arg(long)]
    no_cache: bool,
}

pub fn run(args: RunArgs) -> Result<()> {
    let mode = args.precision.parse::<PrecisionMode>()?;
    match mode.vectors {
        Precision::F32 => run_t::<f32>(&args, mode.values),
        Precision::F64 => run_t::<f64>(&args, mode.values),
    }
}

fn run_t<T: PrepareFor>(args: &RunArgs, values: ValueStorage) -> Result<()> {
    let mut params = Params::parse(args.params.iter().map(String::as_str))?;
    args.auto.apply_run(&args.method, &mut params)?;
    let loaded = input::load::<T>(&args.matrix, !args.no_cache)?;
    let opts = MeasureOptions {
        plan: PlanOptions {
            params,
            backend: if args.cpu { Some(Backend::Cpu) } else { None },
            reorder: args.reorder,
            values,
            ..Default::default()
        },
        warmup: args.warmup,
        reps: args.reps,
        samples: args.samples,
        alpha: args.alpha,
        beta: args.beta,
        ..Default::default()
    };
    let rec = measure(&loaded.matrix, &args.method, &opts)?;
    if let Some(note) = &rec.fallback_note {
        eprintln!("note: {note}");
    }
    let baseline =
        if rec.backend == Backend::Gpu && !args.no_baseline && !args.method.starts_with("cusparse")
        {
            let base_opts = MeasureOptions {
                plan: PlanOptions {
                    values,
                    ..Default::default()
                },
                ..opts.clone()
            };
            best_cusparse(&loaded.matrix, &base_opts)
        } else {
            None
        };
    if args.json {
        print_json(&loaded.name, &rec, baseline.as_ref())?;
    } else {
        print_text(&loaded.name, &rec, baseline.as_ref());
    }
    if !rec.verified {
        bail!(
            "{} gave a wrong result on {}: max relative error {:.3e}",
            rec.method,
            loaded.name,
            rec.max_rel_err
        );
    }
    Ok(())
}

fn speedup(rec: &RunRecord, base: Option<&RunRecord>) -> (Option<f64>, Option<f64>) {
    let Some(b) = base else { return (None, None) };
    let stream = (rec.time.median_us > 0.0).then(|| b.time.median_us / rec.time.median_us);
    let graph = match (&rec.graph_time, &b.graph_time) {
        (Some(r), Some(b)) if r.median_us > 0.0 => Some(b.median_us / r.median_us),
        _ => None,
    };
    (stream, graph)
}

fn print_json(name: &str, rec: &RunRecord, base: Option<&RunRecord>) -> Result<()> {
    let (s, g) = speedup(rec, base);
    let v = json!({
        "matrix": name,
        "method": rec.method,
        "precision": rec.precision,
        "backend": rec.backend,
        "device": rec.device,
        "nrows": rec.nrows, "ncols": rec.ncols, "nnz": rec.nnz,
        "preprocessing_ms": rec.prep_ms + rec.upload_ms,
        "prepare_ms": rec.prep_ms,
        "upload_ms": rec.upload_ms,
        "time_us": rec.time.median_us,
        "time_us_min": rec.time.min_us,
        "time_us_max": rec.time.max_us,
        "graph_time_us": rec.graph_time.as_ref().map(|t| t.median_us),
        "gflops": rec.gflops,
        "gbs": rec.gbs,
        "max_rel_err": rec.max_rel_err,
        "verified": rec.verified,
        "deterministic": rec.deterministic,
        "footprint_bytes": rec.footprint_bytes,
        "cusparse_time_us": base.map(|b| b.time.median_us),
        "cusparse_graph_time_us": base.and_then(|b| b.graph_time.as_ref().map(|t| t.median_us)),
        "speedup_vs_cusparse": s,
        "graph_speedup_vs_cusparse": g,
        "notes": rec.notes,
    });
    println!("{}", serde_json::to_string(&v)?);
    Ok(())
}

/// The cuSPARSE baseline: ALG1 and ALG2 each measured with its own setup, the faster per timing
/// mode (the one-call `cusparse` entry would add its upload-time trial of both algorithms).
fn best_cusparse<T: PrepareFor>(a: &Csr<T>, opts: &MeasureOptions) -> Option<RunRecord> {
    let mut runs: Vec<RunRecord> = ["cusparse-alg1", "cusparse-alg2"]
        .into_iter()
        .filter_map(|m| match measure(a, m, opts) {
            Ok(b) if b.verified => Some(b),
            Ok(_) => {
                eprintln!("note: {m} gave a wrong result; not used as the baseline");
                None
            }
            Err(e) => {
                eprintln!("note: {m} baseline failed: {e}");
                None
            }
        })
        .collect();
    runs.sort_by(|a, b| a.time.median_us.total_cmp(&b.time.median_us));
    let best_graph = runs
        .iter()
        .filter_map(|r| r.graph_time.clone())
        .min_by(|a, b| a.median_us.total_cmp(&b.median_us));
    let mut best = runs.into_iter().next()?;
    best.graph_time = best_graph;
    Some(best)
}

fn print_text(name: &str, rec: &RunRecord, base: Option<&RunRecord>) {
    let gpu = rec.backend == Backend::Gpu;
    println!(
        "{name}: {} x {}, {} nnz, {} on {}",
        rec.nrows, rec.ncols, rec.nnz, rec.precision, rec.device
    );
    let row = |key: &str, value: String| println!("  {key:<15} {value}");
    row(
        "method",
        format!(
            "{} ({})",
            rec.method,
            if rec.deterministic {
                "bitwise deterministic"
            } else {
                "not bitwise deterministic"
            }
        ),
    );
    if gpu {
        row(
            "preprocessing",
            format!(
                "{:.3} ms (prepare {:.3} ms, upload {:.3} ms)",
                rec.prep_ms + rec.upload_ms,
                rec.prep_ms,
                rec.upload_ms
            ),
        );
    } else {
        row("preprocessing", format!("{:.3} ms", rec.prep_ms));
    }
    for (k, ms) in &rec.prep_stages_ms {
        println!("    {k}: {ms:.3} ms");
    }
    row(
        "time per call",
        format!(
            "{:.2} µs median (min {:.2}, max {:.2}), {}",
            rec.time.median_us,
            rec.time.min_us,
            rec.time.max_us,
            if gpu {
                "CUDA events, back to back on a stream"
            } else {
                "wall clock"
            }
        ),
    );
    if let Some(g) = &rec.graph_time {
        row(
            "graph replay",
            format!("{:.2} µs median per call", g.median_us),
        );
    }
    row(
        "throughput",
        format!("{:.2} GFLOP/s, {:.1} GB/s effective", rec.gflops, rec.gbs),
    );
    row(
        "check",
        format!(
            "max relative error {:.3e} ({})",
            rec.max_rel_err,
            if rec.verified { "ok" } else { "WRONG" }
        ),
    );
    row("footprint", format!("{} bytes", rec.footprint_bytes));
    if !rec.notes.is_empty() {
        println!("  notes:");
        for (k, v) in &rec.notes {
            println!("    {k}: {v}");
        }
    }
    if let Some(b) = base {
        let (s, g) = speedup(rec, Some(b));
        row(
            "cusparse",
            format!(
                "{:.2} µs stream{} (best of ALG1 and ALG2)",
                b.time.median_us,
                b.graph_time
                    .as_ref()
                    .map(|t| format!(", {:.2} µs graph", t.median_us))
                    .unwrap_or_default()
            ),
        );
        if let Some(s) = s {
            row(
                "speedup",
                format!("{s:.3}x over cusparse (stream to stream)"),
            );
        }
        if let Some(g) = g {
            row(
                "graph speedup",
                format!("{g:.3}x over cusparse (graph to graph)"),
            );
        }
    }
}
