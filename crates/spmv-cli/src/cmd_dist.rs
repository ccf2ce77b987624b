//! `spmv dist`: multi-GPU SpMV through NCCL (issue #12). `run` launches one process per GPU
//! (this binary re-executed as the hidden `dist rank`), `scaling` repeats it over GPU counts,
//! `solve cg` and `pagerank` run the distributed solvers (`cmd_dist_solve.rs`), `rendezvous`
//! serves NCCL's unique id for ranks started by hand on several hosts.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use serde_json::json;
use spmvkit::dist::bootstrap::{Rendezvous, Token, ENV_RANK, ENV_ROOT, ENV_TOKEN, ENV_WORLD};
use spmvkit::dist::local::simulate_blocks;
use spmvkit::dist::nccl::DistScalar;
use spmvkit::dist::rank::{run_rank, run_rank_rows, test_vectors, RankConfig, RankReport};
use spmvkit::dist::{SimOperator, StrategyChoice};
use spmvkit::gpu::TimingConfig;
use spmvkit::Precision;

use crate::dist_common::{
    flags, parse_reports, rank_command, rank_env, spawn_ranks, PartOptions, REPORT_PREFIX,
};
use crate::input;

/// Multi-GPU SpMV through NCCL: row blocks balanced by nnz, one process per GPU.
#[derive(Args)]
#[command(after_help = "Examples:
  spmv dist run kron:22 --gpus 2                      distributed run, checked and timed
  spmv dist run poisson3d:320 --gpus 2 --strategy halo
  spmv dist scaling kron:22 kron:23,48 poisson3d:320 --gpus 1,2 --json
  spmv dist solve cg poisson3d:160 --gpus 1,2         distributed CG, speedup 1 -> 2 GPUs
  spmv dist pagerank kron:20 --gpus 1,2               distributed PageRank
  spmv dist rendezvous --listen 10.0.0.1:29500 --ranks 4  (multi-host, docs/multi-gpu.md)")]
pub struct DistArgs {
    #[command(subcommand)]
    command: DistCommand,
}

#[derive(Subcommand)]
enum DistCommand {
    /// Run one matrix on N GPUs: check y = αAx + βy against the oracle on every rank, time it.
    Run(RunArgs),
    /// Strong scaling: `run` for every GPU count and matrix, with speedup and efficiency.
    Scaling(ScalingArgs),
    /// Distributed iterative solvers over N GPUs: `solve cg`.
    Solve(crate::cmd_dist_solve::DistSolveArgs),
    /// Distributed PageRank over N GPUs.
    Pagerank(crate::cmd_dist_solve::DistPageRankArgs),
    /// Serve NCCL's unique id to ranks started by hand (multi-host bootstrap); prints the
    /// rendezvous address and the launch token every rank needs.
    Rendezvous(RendezvousArgs),
    /// Print a fresh random launch token (32 hex digits) for SPMVKIT_DIST_TOKEN or
    /// SPMVKIT_DIST_TOKEN_FILE, which ranks started by torchrun, mpirun or srun need.
    Token,
    /// One rank: started by `run` (SPMVKIT_DIST_RANK / _WORLD / _ROOT / _TOKEN), or by
    /// torchrun, mpirun or srun (docs/multi-gpu.md); prints its report as one JSON line.
    Rank(RankArgs),
    /// One solver rank: started by `solve cg` and `pagerank`, or by torchrun, mpirun or srun.
    SolveRank(crate::cmd_dist_solve::SolveRankArgs),
}

/// Options shared by `run`, `scaling` and the ranks.
#[derive(Args, Clone)]
struct DistSpmvOptions {
    #[command(flatten)]
    part: PartOptions,
    /// Calls per timed sample.
    #[arg(long, default_value_t = 20, value_parser = crate::args::at_least_one)]
    reps: usize,
    /// Timed samples; the median is reported.
    #[arg(long, default_value_t = 5, value_parser = crate::args::at_least_one)]
    samples: usize,
    /// Untimed warm-up calls.
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// α in y = αAx + βy.
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true, value_parser = crate::args::finite)]
    alpha: f64,
    /// β in y = αAx + βy (non-zero by default, so the check covers the βy term).
    #[arg(long, default_value_t = 0.5, allow_hyphen_values = true, value_parser = crate::args::finite)]
    beta: f64,
}

impl DistSpmvOptions {
    fn forward(&self) -> Vec<String> {
        let mut v = self.part.forward();
        v.extend(flags([
            ("--reps", self.reps.to_string()),
            ("--samples", self.samples.to_string()),
            ("--warmup", self.warmup.to_string()),
        ]));
        v.extend([
            format!("--alpha={}", self.alpha),
            format!("--beta={}", self.beta),
        ]);
        v
    }
}

#[derive(Args)]
struct RunArgs {
    /// Matrix Market file, .spmvkit cache, or GEN-SPEC.
    #[arg(value_name = "MATRIX")]
    matrix: String,
    /// Number of GPUs (ranks).
    #[arg(short, long, default_value_t = 2)]
    gpus: usize,
    /// Simulate the ranks on the CPU (no GPU or NCCL needed; no timing).
    #[arg(long)]
    sim: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    common: DistSpmvOptions,
}

#[derive(Args)]
struct ScalingArgs {
    /// Matrices (files or GEN-SPECs).
    #[arg(value_name = "MATRIX", required = true)]
    matrices: Vec<String>,
    /// GPU counts, comma-separated.
    #[arg(short, long, default_value = "1,2", value_delimiter = ',')]
    gpus: Vec<usize>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    common: DistSpmvOptions,
}

#[derive(Args)]
#[command(
    after_help = "Prints SPMVKIT_DIST_ROOT=ADDR:PORT and SPMVKIT_DIST_TOKEN=HEX (a fresh \
random 128-bit token, or the one in SPMVKIT_DIST_TOKEN when that is set); every rank needs both. \
Connections without the token, with a malformed or oversized line, or claiming a rank already \
here are dropped with a line on stderr."
)]
struct RendezvousArgs {
    /// ADDR:PORT of the interface the ranks reach, e.g. 10.0.0.1:29500 (a wildcard address
    /// such as 0.0.0.0 is refused).
    #[arg(long, value_name = "ADDR:PORT")]
    listen: String,
    /// Number of ranks to wait for.
    #[arg(long)]
    ranks: usize,
    /// Seconds to wait for all ranks.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
}

#[derive(Args)]
struct RankArgs {
    #[arg(value_name = "MATRIX")]
    matrix: String,
    #[command(flatten)]
    common: DistSpmvOptions,
}

pub fn run(args: DistArgs) -> Result<()> {
    match args.command {
        DistCommand::Run(a) => {
            let out = launch(&a.matrix, a.gpus, a.sim, &a.common)?;
            print_run(&out, a.json)
        }
        DistCommand::Scaling(a) => scaling(&a),
        DistCommand::Solve(a) => crate::cmd_dist_solve::run_solve(a),
        DistCommand::Pagerank(a) => crate::cmd_dist_solve::run_pagerank(a),
        DistCommand::SolveRank(a) => crate::cmd_dist_solve::rank(a),
        DistCommand::Rendezvous(a) => rendezvous(&a),
        DistCommand::Token => {
            println!("{}", Token::random()?);
            Ok(())
        }
        DistCommand::Rank(a) => match a.common.part.precision.parse::<Precision>()? {
            Precision::F32 => rank::<f32>(&a),
            Precision::F64 => rank::<f64>(&a),
        },
    }
}

/// `spmv dist rendezvous`: serves one multi-host start on the named interface.
fn rendezvous(a: &RendezvousArgs) -> Result<()> {
    let (token, given) = match std::env::var(ENV_TOKEN) {
        Ok(t) => (Token::parse(&t).context(ENV_TOKEN)?, true),
        Err(_) => (Token::random()?, false),
    };
    let server = Rendezvous::bind(&a.listen, a.ranks, token.clone())?;
    let addr = server.local_addr()?;
    eprintln!(
        "rendezvous on {addr} for {} ranks; start every rank with {ENV_RANK}, {ENV_WORLD}={} \
         and these (docs/multi-gpu.md):",
        a.ranks, a.ranks
    );
    println!("{ENV_ROOT}={addr}");
    if given {
        eprintln!("{ENV_TOKEN}: the one in this environment");
    } else {
        println!("{ENV_TOKEN}={token}");
    }
    let dropped = server.serve(Duration::from_secs(a.timeout))?;
    eprintln!(
        "all {} ranks got the id ({} other connections dropped)",
        a.ranks,
        dropped.len()
    );
    Ok(())
}

fn timing(c: &DistSpmvOptions) -> TimingConfig {
    TimingConfig {
        warmup: c.warmup,
        calls: c.reps.max(1),
        samples: c.samples.max(1),
    }
}

fn rank<T: DistScalar>(a: &RankArgs) -> Result<()> {
    let (env, server) = rank_env("`spmv dist run`")?;
    let cfg = RankConfig {
        method: a.common.part.method.clone(),
        strategy: a.common.part.strategy.parse::<StrategyChoice>()?,
        alpha: a.common.alpha,
        beta: a.common.beta,
        timing: timing(&a.common),
        connect_timeout: Duration::from_secs(a.common.part.connect_timeout),
    };
    let report = match a.common.part.row_source::<T>(&a.matrix)? {
        Some(source) => source
            .load(env.rank, env.world)
            .and_then(|local| run_rank_rows(&local, &env, &cfg)),
        None => input::load::<T>(&a.matrix, !a.common.part.no_cache)
            .map_err(|e| spmvkit::Error::InvalidArgument(e.to_string()))
            .and_then(|loaded| run_rank(&loaded.matrix, &env, &cfg)),
    }
    .with_context(|| format!("rank {} of {}", env.rank, env.world))?;
    println!("{REPORT_PREFIX}{}", serde_json::to_string(&report)?);
    if let Some(s) = server {
        s.finish();
    }
    Ok(())
}

/// The outcome of one launch.
struct Outcome {
    matrix: String,
    gpus: usize,
    notes: Vec<String>,
    ranks: Vec<RankReport>,
    /// Set by the CPU simulation instead of rank reports.
    sim: Option<serde_json::Value>,
}

impl Outcome {
    fn max(&self, f: impl Fn(&RankReport) -> f64) -> f64 {
        self.ranks.iter().map(f).fold(0.0, f64::max)
    }
    fn ok(&self) -> bool {
        match &self.sim {
            Some(s) => s["check_ok"].as_bool().unwrap_or(false),
            None => self.ranks.iter().all(|r| r.check_ok),
        }
    }
    fn json(&self) -> serde_json::Value {
        json!({
            "matrix": self.matrix,
            "gpus": self.gpus,
            "notes": self.notes,
            "check_ok": self.ok(),
            "apply_us": self.max(|r| r.apply_us),
            "exchange_us": self.max(|r| r.exchange_us),
            "compute_us": self.max(|r| r.compute_us),
            "exchange_enqueue_us": self.max(|r| r.exchange_enqueue_us),
            "strategy": self.ranks.first().map(|r| r.strategy.clone()),
            "ranks": self.ranks,
            "sim": self.sim,
        })
    }
}

/// Runs `matrix` on `gpus` ranks: spawned processes on the GPUs, or the CPU simulation.
fn launch(matrix: &str, gpus: usize, sim: bool, c: &DistSpmvOptions) -> Result<Outcome> {
    if gpus == 0 {
        bail!("--gpus must be at least 1");
    }
    let mut notes = Vec::new();
    let visible = spmvkit::gpu::device_count();
    if sim || visible == 0 {
        if !sim {
            notes.push(format!(
                "no GPU visible: simulating {gpus} ranks on the CPU (no timing)"
            ));
        }
        return simulate(matrix, gpus, c, notes);
    }
    let spawned = spawn_ranks(
        matrix,
        gpus,
        visible,
        &rank_command(&["dist", "rank", matrix], c.forward()),
        &c.part,
    )?;
    notes.extend(spawned.notes);
    let ranks: Vec<RankReport> = parse_reports(spawned.reports)?;
    Ok(Outcome {
        matrix: matrix.to_string(),
        gpus: spawned.world,
        notes,
        ranks,
        sim: None,
    })
}

fn simulate(
    matrix: &str,
    parts: usize,
    c: &DistSpmvOptions,
    notes: Vec<String>,
) -> Result<Outcome> {
    fn go<T: spmvkit::PrepareFor>(
        matrix: &str,
        parts: usize,
        c: &DistSpmvOptions,
    ) -> Result<serde_json::Value> {
        let a = input::load::<T>(matrix, !c.part.no_cache)?.matrix;
        let choice: StrategyChoice = c.part.strategy.parse()?;
        // the ranks read only their rows when the source allows it, one thread per rank
        // exchanging ghost requests, as GPU ranks do through NCCL
        let (op, input) = match c.part.row_source::<T>(matrix)? {
            Some(source) => {
                let (blocks, volumes) = simulate_blocks(&source, parts, choice)?;
                let op = SimOperator::from_blocks(
                    a.nrows(),
                    a.ncols(),
                    volumes,
                    blocks,
                    &c.part.method,
                )?;
                (op, "rows")
            }
            None => (
                SimOperator::new(&a, parts, &c.part.method, choice)?,
                "whole",
            ),
        };
        let (x, y0) = test_vectors::<T>(a.nrows(), a.ncols());
        let (alpha, beta) = (T::from_f64(c.alpha), T::from_f64(c.beta));
        let mut y = y0.clone();
        op.apply(alpha, &x, beta, &mut y)?;
        let want = spmvkit::cpu::oracle_spmv_par(&a, alpha, &x, beta, &y0)?;
        let chk = spmvkit::cpu::check(&want, &y);
        Ok(
            json!({ "check_ok": chk.ok, "max_rel_err": chk.max_rel_err, "summary": op.summary(), "input": input }),
        )
    }
    let sim = match c.part.precision.parse::<Precision>()? {
        Precision::F32 => go::<f32>(matrix, parts, c)?,
        Precision::F64 => go::<f64>(matrix, parts, c)?,
    };
    Ok(Outcome {
        matrix: matrix.to_string(),
        gpus: parts,
        notes,
        ranks: Vec::new(),
        sim: Some(sim),
    })
}

fn print_run(o: &Outcome, as_json: bool) -> Result<()> {
    if as_json {
        println!("{}", serde_json::to_string_pretty(&o.json())?);
    } else {
        for n in &o.notes {
            println!("note: {n}");
        }
        if let Some(s) = &o.sim {
            let sum = &s["summary"];
            println!(
                "{}: {} simulated ranks, strategy {}, rows {}, nnz {}, halo {} vs all-gather {} entries/rank",
                o.matrix,
                o.gpus,
                sum["strategy"].as_str().unwrap_or("?"),
                sum["rank_rows"],
                sum["rank_nnz"],
                sum["halo_recv"],
                sum["allgather_recv"]
            );
            println!(
                "ranks read {}",
                if s["input"] == "rows" {
                    "only their rows"
                } else {
                    "the whole matrix"
                }
            );
            println!(
                "check vs oracle: {} (max rel err {:.2e})",
                if o.ok() { "ok" } else { "FAILED" },
                s["max_rel_err"].as_f64().unwrap_or(f64::NAN)
            );
        } else {
            println!(
                "{}: {} GPU(s) ({}), strategy {}, method {}",
                o.matrix,
                o.gpus,
                o.ranks.first().map_or("", |r| r.device.as_str()),
                o.ranks.first().map_or("", |r| r.strategy.as_str()),
                o.ranks
                    .first()
                    .map(|r| r.diag_notes.join(" "))
                    .unwrap_or_default()
            );
            println!(
                "  ranks read {}",
                match o.ranks.first().map(|r| r.input.as_str()) {
                    Some("rows") => "only their rows",
                    _ => "the whole matrix",
                }
            );
            println!(
                "  {:>4} {:>10} {:>12} {:>12} {:>9} {:>9} {:>10} {:>10} {:>10}  check",
                "rank",
                "rows",
                "diag nnz",
                "offd nnz",
                "ghosts",
                "send",
                "call µs",
                "comm µs",
                "local µs"
            );
            for r in &o.ranks {
                println!(
                    "  {:>4} {:>10} {:>12} {:>12} {:>9} {:>9} {:>10.1} {:>10.1} {:>10.1}  {} ({:.1e})",
                    r.rank,
                    r.rows,
                    r.diag_nnz,
                    r.offd_nnz,
                    r.ghosts,
                    r.send,
                    r.apply_us,
                    r.exchange_us,
                    r.compute_us,
                    if r.check_ok { "ok" } else { "FAILED" },
                    r.max_rel_err
                );
            }
            println!(
                "per call: {:.1} µs (slowest rank), comm alone {:.1} µs, local parts alone {:.1} µs",
                o.max(|r| r.apply_us),
                o.max(|r| r.exchange_us),
                o.max(|r| r.compute_us)
            );
            if o.gpus > 1 {
                println!(
                    "host time to enqueue one exchange: {:.1} µs (slowest rank; the exchange is \
                     stream-ordered, so it should be far below the comm time)",
                    o.max(|r| r.exchange_enqueue_us)
                );
            }
        }
    }
    if !o.ok() {
        bail!("the distributed result does not match the oracle");
    }
    Ok(())
}

fn scaling(a: &ScalingArgs) -> Result<()> {
    let mut rows = Vec::new();
    for m in &a.matrices {
        let mut base: Option<f64> = None;
        for &g in &a.gpus {
            let o = launch(m, g, false, &a.common)?;
            if !a.json {
                for n in &o.notes {
                    eprintln!("note: {n}");
                }
            }
            let t = o.max(|r| r.apply_us);
            if o.gpus == 1 && base.is_none() {
                base = Some(t);
            }
            let speedup = base.map(|b| b / t);
            rows.push(json!({
                "matrix": m,
                "gpus": o.gpus,
                "check_ok": o.ok(),
                "apply_us": t,
                "exchange_us": o.max(|r| r.exchange_us),
                "compute_us": o.max(|r| r.compute_us),
                "strategy": o.ranks.first().map(|r| r.strategy.clone()),
                "speedup": speedup,
                "efficiency": speedup.map(|s| s / o.gpus as f64),
                "rank_nnz": o.ranks.iter().map(|r| r.diag_nnz + r.offd_nnz).collect::<Vec<_>>(),
                "ghosts": o.ranks.iter().map(|r| r.ghosts).collect::<Vec<_>>(),
                "method_notes": o.ranks.first().map(|r| (r.diag_notes.clone(), r.offd_notes.clone())),
            }));
            if !o.ok() {
                bail!("{m} on {g} GPUs does not match the oracle");
            }
        }
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({ "scaling": rows }))?
        );
    } else {
        println!(
            "{:<18} {:>4} {:>10} {:>8} {:>7} {:>10} {:>10}  strategy",
            "matrix", "gpus", "call µs", "speedup", "eff", "comm µs", "local µs"
        );
        for r in &rows {
            let f = |k: &str| r[k].as_f64();
            println!(
                "{:<18} {:>4} {:>10.1} {:>8} {:>7} {:>10.1} {:>10.1}  {}",
                r["matrix"].as_str().unwrap_or(""),
                r["gpus"],
                f("apply_us").unwrap_or(f64::NAN),
                f("speedup").map_or("-".into(), |s| format!("{s:.2}x")),
                f("efficiency").map_or("-".into(), |e| format!("{:.0}%", 100.0 * e)),
                f("exchange_us").unwrap_or(f64::NAN),
                f("compute_us").unwrap_or(f64::NAN),
                r["strategy"].as_str().unwrap_or("-")
            );
        }
    }
    Ok(())
}
