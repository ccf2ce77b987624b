//! `spmv bench`: every method side by side on the same device in one run, with reports.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use spmvkit::bench::harness::{self, HarnessConfig, Progress};
use spmvkit::bench::suites::{self, MatrixSource, SUITES};
use spmvkit::bench::{BenchRun, MeasureOptions, Status};
use spmvkit::matrix::{DenseOrder, MultiShape};
use spmvkit::{Precision, PrecisionMode};

use crate::auto_args::AutoArgs;
use crate::{args, text, usage};

/// Benchmark methods side by side on one device: per matrix, method and precision, the
/// preprocessing time, the kernel time (stream and CUDA-graph replay), GFLOP/s, effective GB/s,
/// the speedup over cuSPARSE, the error against the oracle and the memory footprint.
///
/// Results go to DIR/run-TIME.json (the record), DIR/results.csv, DIR/summary.md and
/// DIR/plots/; on a GPU the run also records the limits probe (`spmv probe`) and the report sets
/// every result against its limit (DIR/limits.csv, docs/limits.md). Without a GPU every method
/// runs its CPU mirror, and the GPU-only ones are recorded as unsupported.
#[derive(Args)]
#[command(after_help = bench_help())]
pub struct BenchArgs {
    /// Matrix Market files, folders of them, or GEN-SPECs.
    #[arg(value_name = "MATRIX")]
    inputs: Vec<String>,
    /// A named suite (quick, gpu-large, large-test, shared), added to the inputs.
    #[arg(long)]
    suite: Option<String>,
    /// `all`, or a comma-separated list of method names and variants: `NAME[KEY=VALUE;...]` runs a
    /// method with parameters (see `spmv methods`) under that label, e.g.
    /// `fastload,fastload[height=2],cb-spmv[format=off,balance=off]` (quote it in the shell).
    #[arg(long, default_value = "all")]
    methods: String,
    /// Comma-separated precision modes: f64, f32, or values stored narrower than x and y
    /// (f16-f32, bf16-f32, f32-f64; docs/precision.md). A narrower mode runs each method as
    /// NAME[storage=...], recorded under that label; methods without that storage are recorded
    /// unsupported.
    #[arg(long, default_value = "f64")]
    precision: String,
    /// Untimed warm-up calls per measurement.
    #[arg(long, default_value_t = 5)]
    warmup: usize,
    /// Calls per timed sample (at least 1).
    #[arg(long, default_value_t = 50, value_parser = args::at_least_one)]
    reps: usize,
    /// Timed samples per measurement, at least 1 (the median is reported, with the spread).
    #[arg(long, default_value_t = 5, value_parser = args::at_least_one)]
    samples: usize,
    /// Upper bound on one timed sample in ms: slow calls get fewer repetitions (at least one), so a
    /// pathological method on a huge matrix cannot stall the run.
    #[arg(long, default_value_t = 200.0, value_parser = args::non_negative)]
    max_sample_ms: f64,
    /// Output folder.
    #[arg(long, default_value = "bench-out")]
    out: PathBuf,
    /// Do not read or write the binary cache.
    #[arg(long)]
    no_cache: bool,
    /// SpMM (docs/spmm.md): also measure each method's multi-vector call Y = αAX + βY for
    /// blocks of these numbers of vectors, e.g. `1,8,32,128` (none by default). Results go to
    /// the run record, DIR/spmm.md and (on a GPU) DIR/spmm-limits.csv.
    #[arg(long = "k", value_name = "K,...", value_delimiter = ',')]
    ks: Vec<usize>,
    /// The SpMM blocks' order: `row` (a row's k values contiguous), `col` (each vector
    /// contiguous) or `both`.
    #[arg(long, default_value = "row")]
    layout: String,
    #[command(flatten)]
    auto: AutoArgs,
}

fn bench_help() -> String {
    let width = text::help_width();
    let mut s = String::from("Suites:\n");
    for suite in SUITES {
        let first = format!("  {:<10} ", suite.name);
        s.push_str(&text::wrap(
            suite.help,
            width,
            &first,
            &" ".repeat(first.len()),
        ));
        s.push('\n');
    }
    // Commands stay on one line each (short enough for 80 columns), so they copy and paste whole.
    let examples: [(&str, &str); 7] = [
        ("spmv bench --suite quick", ""),
        (
            "spmv bench --suite shared --precision f32,f64 --out results/h100",
            "",
        ),
        (
            "spmv bench poisson3d:128 kron:18 --methods csr-vector,merge,cusparse",
            "",
        ),
        (
            "spmv bench kron:18 --methods 'cusparse,fastload,fastload[height=2]'",
            "variants NAME[KEY=VALUE;...] side by side (quote the list in the shell)",
        ),
        (
            "spmv bench kron:18 --methods 'cusparse,auto[mode=model],auto[calls=1000000]'",
            "auto in model mode and in trial mode (the default; the trial runs when calls repay it)",
        ),
        (
            "spmv bench kron:18 --methods cusparse,csr-vector --k 1,8,32 --layout both",
            "SpMM: each method's multi-vector call for blocks of 1, 8 and 32 vectors (docs/spmm.md)",
        ),
        (
            "spmv bench kron:18 --methods cusparse,auto --auto=model --deterministic",
            "--auto and --deterministic are written into every auto entry: \
             auto[deterministic=1;mode=model]",
        ),
    ];
    s.push_str("\nExamples:\n");
    for (command, what) in examples {
        s.push_str(&format!("  {command}\n"));
        if !what.is_empty() {
            s.push_str(&text::wrap(what, width, "      ", "      "));
            s.push('\n');
        }
    }
    s.truncate(s.trim_end().len());
    s
}

struct Bar {
    bar: ProgressBar,
    /// Where the run record is saved after every matrix.
    json: PathBuf,
    /// stderr is not a terminal (piped, redirected, CI): one line per matrix instead of the bar.
    lines: bool,
    /// The matrix being run: its position, the total and when it started.
    current: (usize, usize, Instant),
    /// Matrices done and inputs skipped so far, to tell which one the checkpoint is about.
    seen: (usize, usize),
}

impl Progress for Bar {
    fn matrix(&mut self, index: usize, total: usize, name: &str) {
        self.current = (index, total, Instant::now());
        self.bar.set_length(total as u64);
        self.bar.set_position(index as u64);
        self.bar.set_message(format!("{name}: loading"));
    }
    fn method(&mut self, matrix: &str, method: &str, precision: Precision) {
        self.bar
            .set_message(format!("{matrix}: {method} ({precision})"));
    }
    fn skipped(&mut self, source: &str, error: &str) {
        let (i, n, _) = self.current;
        let line = format!(
            "[{}/{n}] {}",
            i + 1,
            crate::cmd_report::skipped_line(source, error)
        );
        if self.lines {
            eprintln!("{line}");
        } else {
            self.bar.println(line);
        }
    }
    fn checkpoint(&mut self, run: &BenchRun) {
        let done = (run.matrices.len(), run.skipped.len());
        if self.lines && done.0 > self.seen.0 {
            if let Some(m) = run.matrices.last() {
                let (i, n, t) = self.current;
                let count = |st: Status| m.results.iter().filter(|r| r.status == st).count();
                let mut parts = vec![format!("{} ok", count(Status::Ok))];
                for (st, label) in [
                    (Status::Wrong, "wrong"),
                    (Status::Unsupported, "unsupported"),
                    (Status::Failed, "failed"),
                ] {
                    if count(st) > 0 {
                        parts.push(format!("{} {label}", count(st)));
                    }
                }
                eprintln!(
                    "[{}/{n}] {}: {} results ({}) in {:.1} s",
                    i + 1,
                    m.name,
                    m.results.len(),
                    parts.join(", "),
                    t.elapsed().as_secs_f64()
                );
            }
        }
        self.seen = done;
        if let Err(e) = write_json(&self.json, run) {
            let line = format!("warning: {e:#}");
            if self.lines {
                eprintln!("{line}");
            } else {
                self.bar.println(line);
            }
        }
    }
}

fn parse_inputs(args: &BenchArgs) -> Result<Vec<MatrixSource>> {
    let mut inputs = Vec::new();
    if let Some(s) = &args.suite {
        inputs.extend(suites::suite(s)?);
    }
    for i in &args.inputs {
        let p = PathBuf::from(i);
        if p.is_dir() {
            inputs.extend(suites::matrix_files(&p)?);
        } else {
            inputs.push(MatrixSource::from_arg(i)?);
        }
    }
    if inputs.is_empty() {
        return Err(usage(
            "nothing to run: give MATRIX arguments or --suite (see `spmv bench --help`)",
        ));
    }
    Ok(inputs)
}

/// The SpMM block shapes of `--k` and `--layout`, each k in each order.
fn multi_shapes(ks: &[usize], layout: &str) -> Result<Vec<MultiShape>> {
    let orders: Vec<DenseOrder> = if layout.trim() == "both" {
        DenseOrder::ALL.to_vec()
    } else {
        layout
            .split(',')
            .map(str::parse)
            .collect::<Result<_, _>>()?
    };
    if let Some(bad) = ks.iter().find(|&&k| k == 0) {
        anyhow::bail!("--k {bad}: a block holds at least one vector");
    }
    Ok(ks
        .iter()
        .flat_map(|&k| orders.iter().map(move |&order| MultiShape { k, order }))
        .collect())
}

fn write_json(path: &Path, run: &BenchRun) -> Result<()> {
    std::fs::write(path, serde_json::to_string_pretty(run)?)
        .with_context(|| format!("writing {}", path.display()))
}

pub fn run(args: BenchArgs) -> Result<()> {
    let inputs = parse_inputs(&args)?;
    let listed: Vec<String> = if args.methods == "all" {
        spmvkit::methods::names()
            .into_iter()
            .map(String::from)
            .collect()
    } else {
        let list = spmvkit::methods::split_method_list(&args.methods);
        for m in &list {
            spmvkit::methods::find_variant(m)?;
        }
        list
    };
    let (methods, note) = args.auto.apply_bench(&listed)?;
    if let Some(note) = note {
        eprintln!("note: {note}");
    }
    let precisions = args
        .precision
        .split(',')
        .map(|p| p.parse::<PrecisionMode>())
        .collect::<Result<Vec<_>, _>>()?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let machine = harness::machine_info(&command);
    if machine.gpu == "none" {
        if let Err(e) = spmvkit::gpu::Gpu::get() {
            eprintln!("note: {e}; running every method's CPU path");
        }
    }
    if let Some(e) = &machine.probe_error {
        eprintln!("note: the limits probe failed ({e}); the report has no limits");
    }
    let cfg = HarnessConfig {
        methods,
        precisions,
        measure: MeasureOptions {
            warmup: args.warmup,
            reps: args.reps,
            samples: args.samples,
            max_sample_ms: args.max_sample_ms,
            ..Default::default()
        },
        use_cache: !args.no_cache,
        multi: multi_shapes(&args.ks, &args.layout)?,
    };
    let lines = !std::io::stderr().is_terminal();
    let bar = if lines {
        eprintln!(
            "running {} methods in {} on {} inputs; one line per matrix follows",
            cfg.methods.len(),
            cfg.precisions
                .iter()
                .map(PrecisionMode::to_string)
                .collect::<Vec<_>>()
                .join(" and "),
            inputs.len()
        );
        ProgressBar::hidden()
    } else {
        let bar = ProgressBar::new(inputs.len() as u64);
        bar.set_style(
            ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    };
    let json_path = args
        .out
        .join(format!("run-{}.json", machine.started.replace(':', "")));
    let mut progress = Bar {
        bar,
        json: json_path.clone(),
        lines,
        current: (0, inputs.len(), Instant::now()),
        seen: (0, 0),
    };
    let run = harness::run(&inputs, &cfg, machine, args.suite.clone(), &mut progress);
    progress.bar.finish_and_clear();
    write_json(&json_path, &run)?;
    let files = spmvkit::bench::report::write_report(std::slice::from_ref(&run), &args.out)?;
    crate::cmd_report::print_summary(&run, &json_path, &files);
    if files.spmm.is_some() {
        println!("\nSpMM:");
        print!(
            "{}",
            spmvkit::bench::multi::multi_table(&run.matrices, run.machine.probe.as_ref())
        );
    }
    Ok(())
}
