//! `spmv dist solve cg` and `spmv dist pagerank` (issue #12 point 5): the distributed solvers of
//! `spmvkit::dist::solve` on one NCCL rank per GPU (the `spmv dist` launcher re-executes this
//! binary as the hidden `dist solve-rank`), or on simulated ranks in this process (`--sim`, and
//! when no GPU is visible). Each rank writes its rows of the solution to a scratch file; the
//! launcher assembles them and checks the answer against the same CPU reference as
//! `spmv solve cg` / `spmv pagerank`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand};
use serde_json::{json, Value};
use spmvkit::dist::local::simulate_blocks;
use spmvkit::dist::nccl::DistScalar;
use spmvkit::dist::ordered::{Ordered, OrderedSummary};
use spmvkit::dist::solve::{
    self as dsolve, run_solve_rank, run_solve_rank_rows, RankSolution, SolveRankConfig,
    SolveRankReport, Solver,
};
use spmvkit::dist::{SimOperator, SimRows, StrategyChoice};
use spmvkit::reorder::Ordering;
use spmvkit::solve::{self, CgSystem, PageRankGraph, PageRankOptions, SolveOptions};
use spmvkit::{Csr, Precision, PrepareFor, Scalar};

use crate::dist_common::{
    flags, parse_reports, rank_command, rank_env, spawn_ranks, PartOptions, REPORT_PREFIX,
};
use crate::input;

/// Options of both distributed solvers.
#[derive(Args, Clone)]
pub struct DistSolverCommonArgs {
    /// Matrix Market file, .spmvkit cache, or GEN-SPEC.
    #[arg(value_name = "MATRIX")]
    matrix: String,
    /// GPU counts (ranks), comma-separated: one run each, with the speedup over the first.
    #[arg(short, long, default_value = "2", value_delimiter = ',')]
    gpus: Vec<usize>,
    /// Simulate the ranks on the CPU in this process (no GPU or NCCL needed).
    #[arg(long)]
    sim: bool,
    #[command(flatten)]
    part: PartOptions,
    /// Stopping tolerance [default: per solver and precision, see below].
    #[arg(long)]
    tol: Option<f64>,
    /// Most iterations.
    #[arg(long)]
    max_iter: Option<usize>,
    /// On the GPUs, iterations enqueued between two convergence checks (each check downloads
    /// the device scalars; up to this many − 1 iterations run after convergence, changing
    /// nothing).
    #[arg(long, default_value_t = 10)]
    check_every: usize,
    /// Skip the CPU reference solve (for huge inputs).
    #[arg(long)]
    no_reference: bool,
    /// CG only: the single-reduction iteration (Chronopoulos-Gear), one all-reduce of two dot
    /// products per iteration instead of two all-reduces.
    #[arg(long)]
    single_reduction: bool,
    /// Reorder the matrix (rcm or bisection) before cutting it into the ranks' row blocks: the
    /// solver runs on PAPᵀ, its input permuted once at the start and the answer once back at
    /// the end. Prints the ordering's time (preprocessing) and the halo volume before and after.
    /// The ordering needs the whole matrix on every rank: where ranks would read only their
    /// rows (CG on a cache file or a row-range generator), add --whole.
    #[arg(long, value_parser = crate::args::ordering)]
    reorder: Option<Ordering>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// Distributed iterative solvers: conjugate gradient.
#[derive(Args)]
pub struct DistSolveArgs {
    #[command(subcommand)]
    solver: DistSolver,
}

#[derive(Subcommand)]
enum DistSolver {
    Cg(DistCgArgs),
}

/// Conjugate gradient on A x = A·1 over N GPUs: each rank owns its rows of x, r, p; the SpMV is
/// the distributed operator (x exchanged through NCCL), every dot product a local dot followed by
/// an all-reduce. Reports iterations, the final relative residual, the error against the CPU
/// reference (f64 CG with `csr`, as `spmv solve cg`) and the exact answer (all ones), and the
/// time per iteration (slowest rank); with several GPU counts, the speedup over the first.
#[derive(Args)]
#[command(
    after_help = "Defaults: --tol 1e-8 (f64) or 1e-5 (f32), --max-iter 10000.
Vectors and scalars stay on each rank's GPU; the host checks for convergence every
--check-every iterations.

Examples:
  spmv dist solve cg poisson3d:160 --gpus 1,2        1 and 2 GPUs, speedup
  spmv dist solve cg poisson3d:160 --gpus 2 --strategy halo --json
  spmv dist solve cg poisson3d:32 --gpus 3 --sim     3 simulated ranks, no GPU needed
  spmv dist solve cg poisson3d:128,renumber=random --gpus 2 --whole --reorder rcm"
)]
pub struct DistCgArgs {
    #[command(flatten)]
    common: DistSolverCommonArgs,
}

/// PageRank over N GPUs: P = Aᵀ D⁻¹ built on every rank (pattern only, dangling nodes spread
/// uniformly), partitioned by rows; the dangling mass and the L1 change go through one all-reduce
/// per iteration. Reports iterations, the final L1 change, the L1 error against the serial f64
/// reference (as `spmv pagerank`), the rank sum and the time per iteration (slowest rank); with
/// several GPU counts, the speedup over the first.
#[derive(Args)]
#[command(
    after_help = "Defaults: --tol 1e-6 (f64) or 1e-5 (f32), --max-iter 1000.
Vectors and scalars stay on each rank's GPU; the host checks for convergence every
--check-every iterations.

Examples:
  spmv dist pagerank kron:20 --gpus 1,2
  spmv dist pagerank kron:20 --gpus 2 --precision f32 --damping 0.9 --json
  spmv dist pagerank kron:12 --gpus 4 --sim
  spmv dist pagerank rgg:1000000,order=shuffled --gpus 2 --reorder rcm"
)]
pub struct DistPageRankArgs {
    #[command(flatten)]
    common: DistSolverCommonArgs,
    /// Damping factor d in [0, 1).
    #[arg(long, default_value_t = 0.85, value_parser = crate::args::damping)]
    damping: f64,
}

/// One solver rank (started by `dist solve cg` / `dist pagerank`).
#[derive(Args)]
pub struct SolveRankArgs {
    #[arg(value_name = "MATRIX")]
    matrix: String,
    #[arg(long, value_parser = ["cg", "pagerank"])]
    solver: String,
    #[command(flatten)]
    part: PartOptions,
    #[arg(long)]
    tol: f64,
    #[arg(long)]
    max_iter: usize,
    #[arg(long, default_value_t = 10)]
    check_every: usize,
    /// CG: the single-reduction iteration.
    #[arg(long)]
    single_reduction: bool,
    /// Solve on PAPᵀ for this ordering.
    #[arg(long, value_parser = crate::args::ordering)]
    reorder: Option<Ordering>,
    #[arg(long, default_value_t = 0.85)]
    damping: f64,
    /// Directory for this rank's rows of the solution (`x.RANK`, f64 little-endian).
    #[arg(long)]
    solution_dir: PathBuf,
}

pub fn run_solve(a: DistSolveArgs) -> Result<()> {
    match a.solver {
        DistSolver::Cg(c) => dispatch(Solver::Cg, &c.common),
    }
}

pub fn run_pagerank(a: DistPageRankArgs) -> Result<()> {
    dispatch(Solver::PageRank { damping: a.damping }, &a.common)
}

fn dispatch(solver: Solver, c: &DistSolverCommonArgs) -> Result<()> {
    match c.part.precision.parse::<Precision>()? {
        Precision::F32 => solve_t::<f32>(solver, c),
        Precision::F64 => solve_t::<f64>(solver, c),
    }
}

fn solver_name(s: Solver) -> &'static str {
    match s {
        Solver::Cg => "cg",
        Solver::PageRank { .. } => "pagerank",
    }
}

/// Tolerance and iteration limit as `spmv solve cg` / `spmv pagerank` default them.
fn options<T: Scalar>(solver: Solver, c: &DistSolverCommonArgs) -> SolveOptions {
    let (tol, max_iter) = match solver {
        Solver::Cg => (solve::cg_default_tol(T::PRECISION), solve::CG_MAX_ITER),
        Solver::PageRank { .. } => (
            solve::pagerank_default_tol(T::PRECISION),
            solve::PAGERANK_MAX_ITER,
        ),
    };
    SolveOptions {
        tol: c.tol.unwrap_or(tol),
        max_iter: c.max_iter.unwrap_or(max_iter),
        check_every: c.check_every,
        ..SolveOptions::default()
    }
}

/// One run on some number of ranks.
struct DistSolverRun {
    gpus: usize,
    simulated: bool,
    strategy: String,
    iterations: usize,
    /// Iterations enqueued (≥ `iterations`: the GPUs check every `check_every`).
    launched: usize,
    stop: String,
    residual: f64,
    /// Slowest rank's iteration loop.
    seconds: f64,
    x: Vec<f64>,
    ranks: Vec<SolveRankReport>,
    /// What the reordering did (`--reorder`).
    reorder: Option<OrderedSummary>,
    notes: Vec<String>,
}

impl DistSolverRun {
    /// Per enqueued iteration.
    fn us_per_iter(&self) -> f64 {
        if self.launched == 0 {
            0.0
        } else {
            self.seconds * 1e6 / self.launched as f64
        }
    }
}

fn solve_t<T: DistScalar>(solver: Solver, c: &DistSolverCommonArgs) -> Result<()> {
    if c.gpus.is_empty() || c.gpus.contains(&0) {
        bail!("--gpus must list counts of at least 1");
    }
    let name = if c.single_reduction {
        "cg1"
    } else {
        solver_name(solver)
    };
    let need = match solver {
        Solver::Cg => "CG (symmetric positive definite) needs a square matrix",
        Solver::PageRank { .. } => "PageRank (adjacency) needs a square matrix",
    };
    if c.single_reduction && solver != Solver::Cg {
        bail!("--single-reduction is a CG option");
    }
    if let (Some(o), Solver::Cg) = (c.reorder, solver) {
        if c.part.row_source::<T>(&c.matrix)?.is_some() {
            bail!(
                "--reorder {o}: the ranks would read only their rows of {}, and an ordering \
                 needs the whole graph; add --whole so that every rank loads the whole matrix",
                c.matrix
            );
        }
    }
    let loaded = input::load_square::<T>(&c.matrix, !c.part.no_cache, need)?;
    let a = &loaded.matrix;
    if let Solver::PageRank { damping } = solver {
        if !(0.0..1.0).contains(&damping) {
            bail!("--damping {damping} must lie in [0, 1)");
        }
    }
    let strategy: StrategyChoice = c.part.strategy.parse()?;
    let opts = options::<T>(solver, c);
    let reference = if c.no_reference {
        None
    } else {
        Some(reference(solver, a, &opts)?)
    };
    let visible = spmvkit::gpu::device_count();
    let mut runs = Vec::new();
    for &g in &c.gpus {
        let mut run = if c.sim || visible == 0 {
            let mut r = simulate(solver, a, g, c, strategy, &opts)?;
            if !c.sim {
                r.notes
                    .push(format!("no GPU visible: simulated {g} ranks on the CPU"));
            }
            r
        } else {
            launch(solver, c, g, visible, &opts, a.nrows())?
        };
        run.notes.dedup();
        runs.push(run);
    }
    let checks: Vec<Vec<(&str, f64)>> = runs
        .iter()
        .map(|r| checks(solver, &r.x, reference.as_deref()))
        .collect();
    let base = runs.first().map(|r| r.us_per_iter()).unwrap_or(0.0);
    if c.json {
        let out = json!({
            "solver": name,
            "matrix": loaded.name,
            "precision": T::PRECISION.to_string(),
            "n": a.nrows(),
            "nnz": a.nnz(),
            "tol": opts.tol,
            "max_iter": opts.max_iter,
            "runs": runs.iter().zip(&checks).map(|(r, ch)| {
                let mut v = json!({
                    "gpus": r.gpus,
                    "simulated": r.simulated,
                    "strategy": r.strategy,
                    "iterations": r.iterations,
                    "launched": r.launched,
                    "stop": r.stop,
                    "residual": r.residual,
                    "seconds": r.seconds,
                    "us_per_iter": r.us_per_iter(),
                    "speedup": speedup(base, r.us_per_iter()),
                    "notes": r.notes,
                    "reorder": r.reorder,
                    "ranks": r.ranks,
                });
                for (k, x) in ch {
                    v[*k] = json!(x);
                }
                v
            }).collect::<Vec<Value>>(),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for r in &runs {
            for n in &r.notes {
                println!("note: {n}");
            }
        }
        for (r, ch) in runs.iter().zip(&checks) {
            let checks: String = ch.iter().map(|(k, v)| format!(" {k}={v:.3e}")).collect();
            println!(
                "dist {name} {} {} gpus={}{} strategy={} iters={} {} res={:.3e}{checks} us/iter={:.2} iters/s={:.1}",
                loaded.name,
                T::PRECISION,
                r.gpus,
                if r.simulated { "(sim)" } else { "" },
                r.strategy,
                r.iterations,
                r.stop,
                r.residual,
                r.us_per_iter(),
                if r.seconds > 0.0 { r.launched as f64 / r.seconds } else { 0.0 }
            );
            for k in &r.ranks {
                println!(
                    "  rank {} ({}): rows {}..{} nnz {} loop {:.2} us/iter; host enqueue: spmv {:.2} + all-reduce {:.2} us/iter; nccl init {:.2} s",
                    k.rank,
                    k.device,
                    k.row_start,
                    k.row_end,
                    k.nnz,
                    k.us_per_iter,
                    k.spmv_us_per_iter,
                    k.allreduce_us_per_iter,
                    k.nccl_init_s
                );
            }
        }
        if runs.len() > 1 {
            for r in &runs[1..] {
                println!(
                    "speedup dist {name} {} {}: {} over {} ranks = {:.2}x ({:.2} vs {:.2} us/iter)",
                    loaded.name,
                    T::PRECISION,
                    r.gpus,
                    runs[0].gpus,
                    speedup(base, r.us_per_iter()).unwrap_or(f64::NAN),
                    r.us_per_iter(),
                    base
                );
            }
        }
    }
    let failed: Vec<String> = runs
        .iter()
        .zip(&checks)
        .filter(|(r, ch)| !accepted(solver, r, ch, &opts, T::PRECISION))
        .map(|(r, _)| format!("{} ranks", r.gpus))
        .collect();
    if !failed.is_empty() {
        let msg = format!(
            "the distributed {name} on {} did not converge to the reference",
            failed.join(", ")
        );
        if runs.iter().any(|r| r.stop != "converged") {
            return Err(crate::not_converged(msg));
        }
        bail!(msg);
    }
    Ok(())
}

fn speedup(base: f64, t: f64) -> Option<f64> {
    (base > 0.0 && t > 0.0).then(|| base / t)
}

/// Whether a run converged and agrees with the reference (to a tolerance that follows the
/// solver's own and the precision's: [`solve::cg_error_bound`], [`solve::pagerank_error_bound`]).
fn accepted(
    solver: Solver,
    r: &DistSolverRun,
    ch: &[(&str, f64)],
    o: &SolveOptions,
    precision: Precision,
) -> bool {
    if r.stop != "converged" {
        return false;
    }
    let bound = match solver {
        Solver::Cg => solve::cg_error_bound(o.tol, precision),
        Solver::PageRank { damping } => solve::pagerank_error_bound(o.tol, damping, precision),
    };
    solve::within_bound(ch, bound)
}

/// The single-process CPU reference in f64: CG with `csr` (tol ≤ 1e-10), or the serial
/// PageRank reference, as `spmv solve cg` / `spmv pagerank` compute them.
fn reference<T: PrepareFor>(solver: Solver, a: &Csr<T>, opts: &SolveOptions) -> Result<Vec<f64>> {
    match solver {
        Solver::Cg => {
            let a64: Csr<f64> = a.cast();
            let b64 = CgSystem::ones_solution(&a64).b;
            crate::cmd_solve::cg_reference(&a64, &b64, opts)
        }
        Solver::PageRank { damping } => Ok(solve::pagerank_reference(
            a,
            &PageRankOptions {
                damping,
                solve: *opts,
            },
        )
        .0),
    }
}

/// CG: relative 2-norm errors against the reference and the exact answer (all ones);
/// PageRank: the L1 error against the reference and the rank sum.
fn checks(solver: Solver, x: &[f64], reference: Option<&[f64]>) -> Vec<(&'static str, f64)> {
    match solver {
        Solver::Cg => solve::cg_checks(x, reference),
        Solver::PageRank { .. } => solve::pagerank_checks(x, reference),
    }
}

/// The solver on `parts` simulated ranks in this process; with `--reorder` on the ranks' blocks
/// of PAPᵀ, its input permuted once and its answer once back.
fn simulate<T: PrepareFor>(
    solver: Solver,
    a: &Csr<T>,
    parts: usize,
    c: &DistSolverCommonArgs,
    strategy: StrategyChoice,
    opts: &SolveOptions,
) -> Result<DistSolverRun> {
    let method = &c.part.method;
    let order = |m: &Csr<T>| c.reorder.map(|o| Ordered::new(m, parts, o)).transpose();
    let (x, report, strat, ordered) = match solver {
        Solver::Cg => {
            let b = CgSystem::ones_solution(a).b;
            let ordered = order(a)?;
            // the simulated ranks read only their rows when the source allows it, as GPU ranks do
            let mut op = match (&ordered, c.part.row_source::<T>(&c.matrix)?) {
                (Some(o), _) => o.sim(parts, method, strategy)?,
                (None, Some(source)) => {
                    let (blocks, volumes) = simulate_blocks(&source, parts, strategy)?;
                    let (m, n) = (a.nrows(), a.ncols());
                    let sim = SimOperator::from_blocks(m, n, volumes, blocks, method)?;
                    SimRows::from_operator(sim)?
                }
                (None, None) => SimRows::new(a, parts, method, strategy)?,
            };
            let b = match &ordered {
                Some(o) => o.vector(&b)?,
                None => b,
            };
            let strat = op.operator().strategy();
            let (x, rep) = if c.single_reduction {
                dsolve::cg_single_reduction(&mut op, &b, opts)?
            } else {
                dsolve::cg(&mut op, &b, opts)?
            };
            (x, rep, strat, ordered)
        }
        Solver::PageRank { damping } => {
            let g = PageRankGraph::from_adjacency(a)?;
            let ordered = order(&g.transition)?;
            let (mut op, dangling) = match &ordered {
                Some(o) => (o.sim(parts, method, strategy)?, o.set(&g.dangling)?),
                None => (
                    SimRows::new(&g.transition, parts, method, strategy)?,
                    g.dangling.clone(),
                ),
            };
            let strat = op.operator().strategy();
            let po = PageRankOptions {
                damping,
                solve: *opts,
            };
            let (x, rep) = dsolve::pagerank(&mut op, &dangling, &po)?;
            (x, rep, strat, ordered)
        }
    };
    let x = match &ordered {
        Some(o) => o.back(x)?,
        None => x,
    };
    let mut notes = report.notes;
    let reorder = ordered.map(|o| o.summary);
    notes.extend(reorder.as_ref().map(OrderedSummary::note));
    Ok(DistSolverRun {
        gpus: parts,
        simulated: true,
        strategy: if parts > 1 {
            strat.to_string()
        } else {
            "none".into()
        },
        iterations: report.iterations,
        launched: report.launched,
        stop: report.stop.to_string(),
        residual: report.residual,
        seconds: report.seconds,
        x: x.iter().map(|v| v.to_f64()).collect(),
        ranks: Vec::new(),
        reorder,
        notes,
    })
}

/// A scratch directory for the ranks' solution files, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "spmvkit-dist-solve-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn solution_file(dir: &Path, rank: usize) -> PathBuf {
    dir.join(format!("x.{rank}"))
}

/// A reordered rank's file of the matrix rows its solution values belong to (u32
/// little-endian, one per value).
fn rows_file(dir: &Path, rank: usize) -> PathBuf {
    dir.join(format!("rows.{rank}"))
}

/// A rank's file read whole, `width`-byte little-endian values, `len` of them expected.
fn read_values(f: &Path, rank: usize, width: usize, len: usize) -> Result<Vec<Vec<u8>>> {
    let bytes = std::fs::read(f).with_context(|| format!("reading {}", f.display()))?;
    if bytes.len() != width * len {
        bail!(
            "rank {rank}'s {} holds {} bytes for {len} rows",
            f.display(),
            bytes.len()
        );
    }
    Ok(bytes.chunks_exact(width).map(<[u8]>::to_vec).collect())
}

/// The solver on `gpus` NCCL ranks (spawned processes), the solution assembled from their files.
fn launch(
    solver: Solver,
    c: &DistSolverCommonArgs,
    gpus: usize,
    visible: usize,
    opts: &SolveOptions,
    n: usize,
) -> Result<DistSolverRun> {
    let scratch = Scratch::new()?;
    let mut args = flags([("--solver", solver_name(solver).into())]);
    args.push(format!("--tol={}", opts.tol));
    args.extend(flags([
        ("--max-iter", opts.max_iter.to_string()),
        ("--check-every", opts.check_every.to_string()),
        ("--solution-dir", scratch.0.display().to_string()),
    ]));
    if let Solver::PageRank { damping } = solver {
        args.push(format!("--damping={damping}"));
    }
    if c.single_reduction {
        args.push("--single-reduction".into());
    }
    if let Some(o) = c.reorder {
        args.extend(flags([("--reorder", o.to_string())]));
    }
    args.extend(c.part.forward());
    let spawned = spawn_ranks(
        &c.matrix,
        gpus,
        visible,
        &rank_command(&["dist", "solve-rank", &c.matrix], args),
        &c.part,
    )?;
    let ranks: Vec<SolveRankReport> = parse_reports(spawned.reports)?;
    let mut x = vec![f64::NAN; n];
    for r in &ranks {
        let rows = r.row_start..r.row_end;
        if r.row_end > n || r.row_start > r.row_end {
            bail!("rank {} reports rows {rows:?} of {n}", r.rank);
        }
        let values = read_values(&solution_file(&scratch.0, r.rank), r.rank, 8, rows.len())?;
        let value = |b: &[u8]| f64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
        // a reordered rank's rows are rows of PAPᵀ: its file says which of A's rows they are
        let targets: Vec<usize> = if r.reorder.is_some() {
            read_values(&rows_file(&scratch.0, r.rank), r.rank, 4, rows.len())?
                .iter()
                .map(|b| u32::from_le_bytes(b[..4].try_into().unwrap_or([0; 4])) as usize)
                .collect()
        } else {
            rows.collect()
        };
        for (&i, b) in targets.iter().zip(&values) {
            let slot = x
                .get_mut(i)
                .ok_or_else(|| anyhow!("rank {} names row {i} of {n}", r.rank))?;
            *slot = value(b);
        }
    }
    let first = ranks
        .first()
        .ok_or_else(|| anyhow!("the launch returned no rank"))?;
    let mut notes = spawned.notes;
    notes.extend(ranks.iter().flat_map(|r| r.notes.iter().cloned()));
    let reorder = first.reorder.clone();
    Ok(DistSolverRun {
        gpus: spawned.world,
        simulated: false,
        strategy: first.strategy.clone(),
        iterations: first.iterations,
        launched: first.launched,
        stop: first.stop.clone(),
        residual: first.residual,
        seconds: ranks.iter().map(|r| r.seconds).fold(0.0, f64::max),
        x,
        reorder,
        notes,
        ranks,
    })
}

/// `spmv dist solve-rank`: one rank of a distributed solve.
pub fn rank(a: SolveRankArgs) -> Result<()> {
    match a.part.precision.parse::<Precision>()? {
        Precision::F32 => rank_t::<f32>(&a),
        Precision::F64 => rank_t::<f64>(&a),
    }
}

fn rank_t<T: DistScalar>(a: &SolveRankArgs) -> Result<()> {
    let (env, server) = rank_env("`spmv dist solve cg` / `spmv dist pagerank`")?;
    let cfg = SolveRankConfig {
        solver: match a.solver.as_str() {
            "cg" => Solver::Cg,
            _ => Solver::PageRank { damping: a.damping },
        },
        method: a.part.method.clone(),
        strategy: a.part.strategy.parse()?,
        opts: SolveOptions {
            tol: a.tol,
            max_iter: a.max_iter,
            check_every: a.check_every,
            ..SolveOptions::default()
        },
        connect_timeout: Duration::from_secs(a.part.connect_timeout),
        single_reduction: a.single_reduction,
        reorder: a.reorder,
    };
    // CG ranks read only their rows when the source allows it; PageRank needs Aᵀ, whole
    let source = match cfg.solver {
        Solver::Cg => a.part.row_source::<T>(&a.matrix)?,
        Solver::PageRank { .. } => None,
    };
    let (report, RankSolution { x, rows }) = match source {
        Some(source) => source
            .load(env.rank, env.world)
            .and_then(|local| run_solve_rank_rows(&local, &env, &cfg)),
        None => input::load::<T>(&a.matrix, !a.part.no_cache)
            .map_err(|e| spmvkit::Error::InvalidArgument(e.to_string()))
            .and_then(|loaded| run_solve_rank(&loaded.matrix, &env, &cfg)),
    }
    .with_context(|| format!("rank {} of {}", env.rank, env.world))?;
    let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_f64().to_le_bytes()).collect();
    let f = solution_file(&a.solution_dir, env.rank);
    std::fs::write(&f, bytes).with_context(|| format!("writing {}", f.display()))?;
    if let Some(rows) = rows {
        let bytes: Vec<u8> = rows.iter().flat_map(|i| i.to_le_bytes()).collect();
        let f = rows_file(&a.solution_dir, env.rank);
        std::fs::write(&f, bytes).with_context(|| format!("writing {}", f.display()))?;
    }
    println!("{REPORT_PREFIX}{}", serde_json::to_string(&report)?);
    if let Some(s) = server {
        s.finish();
    }
    Ok(())
}
