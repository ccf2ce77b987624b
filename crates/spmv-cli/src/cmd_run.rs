//! `spmv run`: one method on one matrix, checked against the oracle and timed.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use clap::Args;
use indicatif::ProgressBar;
use serde_json::json;
use spmvkit::bench::{measure, measure_staged, MeasureOptions, RunRecord, OFFSETS_NOTE};
use spmvkit::methods::{Backend, Params, PlanOptions};
use spmvkit::reorder::Reorder;
use spmvkit::{
    Csr, Offset, OffsetWidth, Offsets, Precision, PrecisionMode, PrepareFor, ValueStorage,
};

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

More than 2^31-1 nonzeros (64-bit row offsets, docs/offsets.md):
  spmv run uniform:20000000,110 --precision f32 --method csr-vector --sample-rows 100000 --stages
                                                 2.2e9 nonzeros, checked on sampled rows and the
                                                 full y, with each stage's time and memory
  spmv run uniform:15000000,100 --precision f32 --method csr-vector --offsets 64 --stages
                                                 the same 1.5e9-nonzero matrix with 64-bit offsets
                                                 (against --offsets 32): the A/B per nonzero

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
    /// Row offsets: auto (32-bit up to 2^31-1 nonzeros, 64-bit above), 32, or 64 (forced, also
    /// on a small matrix; only the methods that take them run, docs/offsets.md). A GEN-SPEC is
    /// generated in the width used.
    #[arg(long, default_value = "auto", value_parser = args::offsets)]
    offsets: Offsets,
    /// Also check this many rows (spread over the matrix) against the serial oracle alone,
    /// besides the full y against the parallel oracle.
    #[arg(long, default_value_t = 0)]
    sample_rows: usize,
    /// Report each stage on stderr as it runs (load or generation, oracle and measurement) and
    /// print the stages' times and the memory used (host peak, matrix and device bytes).
    #[arg(long)]
    stages: bool,
}

pub fn run(args: RunArgs) -> Result<()> {
    let mode = args.precision.parse::<PrecisionMode>()?;
    match mode.vectors {
        Precision::F32 => run_t::<f32>(&args, mode.values),
        Precision::F64 => run_t::<f64>(&args, mode.values),
    }
}

fn run_t<T: PrepareFor>(args: &RunArgs, values: ValueStorage) -> Result<()> {
    let use_cache = !args.no_cache;
    let load32 = || {
        stage(args.stages, "load", || {
            input::load::<T>(&args.matrix, use_cache)
        })
    };
    let load64 = || {
        stage(args.stages, "load", || {
            input::load_as::<T, u64>(&args.matrix, use_cache)
        })
    };
    match args.offsets {
        Offsets::Forced(OffsetWidth::W64) => run_o(args, values, load64()?),
        Offsets::Forced(OffsetWidth::W32) => run_o(args, values, load32()?),
        // the width the matrix needs: 64 bits past 2^31-1 nonzeros (a GEN-SPEC's count is
        // checked before anything large is allocated), or from a 64-bit cache
        Offsets::Auto => {
            let (any, secs) = stage(args.stages, "load", || {
                input::load_any::<T>(&args.matrix, use_cache)
            })?;
            match any {
                input::LoadedAny::W32(l) => run_o(args, values, (l, secs)),
                input::LoadedAny::W64(l) => run_o(args, values, (l, secs)),
            }
        }
    }
}

/// Runs `f` as the stage `what`: with `on`, a line (or a spinner on a terminal) while it runs
/// and its time after. Returns its result and the seconds it took.
fn stage<R>(on: bool, what: &str, f: impl FnOnce() -> Result<R>) -> Result<(R, f64)> {
    let t = Instant::now();
    let bar = (on && std::io::stderr().is_terminal()).then(|| {
        let b = ProgressBar::new_spinner().with_message(format!("{what} ..."));
        b.enable_steady_tick(Duration::from_millis(200));
        b
    });
    if on && bar.is_none() {
        eprintln!("stage {what} ...");
    }
    let r = f();
    let secs = t.elapsed().as_secs_f64();
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if on {
        eprintln!("stage {what}: {secs:.2} s");
    }
    Ok((r?, secs))
}

/// What `--stages` reports besides the record: each stage's seconds and the memory used.
struct Figures {
    load_s: f64,
    oracle_s: f64,
    measure_s: f64,
    offsets: u32,
    matrix_bytes: usize,
    device_bytes: Option<usize>,
    host_peak: Option<u64>,
}

fn run_o<T: PrepareFor, O: Offset>(
    args: &RunArgs,
    values: ValueStorage,
    (loaded, load_s): (input::Loaded<T, O>, f64),
) -> Result<()> {
    let mut params = Params::parse(args.params.iter().map(String::as_str))?;
    args.auto.apply_run(&args.method, &mut params)?;
    let opts = MeasureOptions {
        plan: PlanOptions {
            params,
            backend: if args.cpu { Some(Backend::Cpu) } else { None },
            reorder: args.reorder,
            values,
            offsets: args.offsets,
            ..Default::default()
        },
        warmup: args.warmup,
        reps: args.reps,
        samples: args.samples,
        alpha: args.alpha,
        beta: args.beta,
        sample_rows: args.sample_rows,
        ..Default::default()
    };
    let a = &loaded.matrix;
    let ((rec, oracle), measure_s) =
        stage(args.stages, "oracle, prepare, upload, check, time", || {
            Ok(measure_staged(a, &args.method, &opts)?)
        })?;
    if let Some(note) = &rec.fallback_note {
        eprintln!("note: {note}");
    }
    let wide = rec.notes.iter().any(|(k, _)| k == OFFSETS_NOTE);
    let figures = Figures {
        load_s,
        oracle_s: oracle.as_secs_f64(),
        measure_s,
        offsets: if wide { 64 } else { 32 },
        matrix_bytes: a.bytes(),
        device_bytes: (rec.backend == Backend::Gpu)
            .then(|| rec.footprint_bytes + T::BYTES * (a.nrows() + a.ncols())),
        host_peak: spmvkit::memory::peak_resident(),
    };
    let baseline =
        if rec.backend == Backend::Gpu && !args.no_baseline && !args.method.starts_with("cusparse")
        {
            let base_opts = MeasureOptions {
                plan: PlanOptions {
                    values,
                    offsets: args.offsets,
                    ..Default::default()
                },
                ..opts.clone()
            };
            stage(args.stages, "cuSPARSE baseline", || {
                Ok(best_cusparse(a, &base_opts))
            })?
            .0
        } else {
            None
        };
    let figures = args.stages.then_some(&figures);
    if args.json {
        print_json(&loaded.name, &rec, baseline.as_ref(), figures)?;
    } else {
        print_text(&loaded.name, &rec, baseline.as_ref(), figures);
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

fn print_json(
    name: &str,
    rec: &RunRecord,
    base: Option<&RunRecord>,
    figures: Option<&Figures>,
) -> Result<()> {
    let (s, g) = speedup(rec, base);
    let mut v = json!({
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
    if let Some(f) = figures {
        v["stages"] = json!({
            "load_s": f.load_s,
            "oracle_s": f.oracle_s,
            "measure_s": f.measure_s,
            "prepare_ms": rec.prep_ms,
            "upload_ms": rec.upload_ms,
            "time_per_nnz_ns": rec.time.median_us * 1e3 / rec.nnz.max(1) as f64,
            "offset_bits": f.offsets,
            "matrix_bytes": f.matrix_bytes,
            "device_bytes": f.device_bytes,
            "host_peak_bytes": f.host_peak,
        });
    }
    println!("{}", serde_json::to_string(&v)?);
    Ok(())
}

/// The cuSPARSE baseline: ALG1 and ALG2 each measured with its own setup, the faster per timing
/// mode (the one-call `cusparse` entry would add its upload-time trial of both algorithms).
fn best_cusparse<T: PrepareFor, O: Offset>(
    a: &Csr<T, O>,
    opts: &MeasureOptions,
) -> Option<RunRecord> {
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

fn print_text(name: &str, rec: &RunRecord, base: Option<&RunRecord>, figures: Option<&Figures>) {
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
    if let Some(f) = figures {
        let bytes = |b: u64| spmvkit::memory::Bytes(b).to_string();
        row(
            "stages",
            format!(
                "load {:.2} s, oracle {:.2} s, prepare + upload + check + timing {:.2} s",
                f.load_s, f.oracle_s, f.measure_s
            ),
        );
        row(
            "per nonzero",
            format!(
                "{:.4} ns per call, {}-bit row offsets",
                rec.time.median_us * 1e3 / rec.nnz.max(1) as f64,
                f.offsets
            ),
        );
        row(
            "memory",
            format!(
                "matrix {} on the host, host peak {}, device {} (layout and x, y)",
                bytes(f.matrix_bytes as u64),
                f.host_peak.map_or("unknown".into(), bytes),
                f.device_bytes.map_or("none".into(), |b| bytes(b as u64))
            ),
        );
    }
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
