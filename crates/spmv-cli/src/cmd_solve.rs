//! `spmv solve cg` and `spmv pagerank`: the library's solvers on one matrix, with the SpMV of any
//! method, checked against a CPU reference, timed per iteration, and compared with the same loop
//! on another method (cuSPARSE).

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use serde_json::{json, Value};
use spmvkit::methods::{Backend, Params, PlanOptions};
use spmvkit::reorder::Reorder;
use spmvkit::solve::{self, CgSystem, PageRankGraph, PageRankOptions, SolveOptions, SolveReport};
use spmvkit::{Csr, Plan, Precision, PrepareFor, Scalar};

use crate::{args, input};

/// Iterative solvers built on a plan: conjugate gradient.
#[derive(Args)]
pub struct SolveArgs {
    #[command(subcommand)]
    solver: Solver,
}

#[derive(Subcommand)]
enum Solver {
    Cg(CgArgs),
}

/// Options every solver takes.
#[derive(Args)]
struct SolverCommonArgs {
    /// Matrix Market file, .spmvkit cache, or GEN-SPEC.
    #[arg(value_name = "MATRIX")]
    matrix: String,
    /// SpMV method inside the iteration (see `spmv methods`), or a variant
    /// NAME[key=value;...] as `spmv bench --methods` takes it (its values win over --param).
    #[arg(short, long, default_value = "auto")]
    method: String,
    /// Value precision.
    #[arg(short, long, default_value = "f64", value_parser = ["f32", "f64"])]
    precision: String,
    /// Stopping tolerance [default: per solver and precision, listed under Defaults below].
    #[arg(long, value_parser = args::non_negative)]
    tol: Option<f64>,
    /// Most iterations [default: per solver, listed under Defaults below].
    #[arg(long, value_parser = args::at_least_one)]
    max_iter: Option<usize>,
    /// GPU: iterations per convergence check (and per captured CUDA graph).
    #[arg(long, default_value_t = 10, value_parser = args::at_least_one)]
    check_every: usize,
    /// GPU: replay the iterations from a CUDA graph (on), launch them on the stream (off), or
    /// run both ways; the CPU has no CUDA graphs and ignores it (with a note) [default: on].
    #[arg(long, value_parser = ["on", "off", "both"])]
    graph: Option<String>,
    /// Also run the same loop with this method and report the speedup (e.g. cusparse).
    #[arg(long, value_name = "METHOD")]
    compare: Option<String>,
    /// Skip the CPU reference solve (for huge inputs).
    #[arg(long)]
    no_reference: bool,
    /// Method parameter override, repeatable (see `spmv methods`).
    #[arg(long = "param", value_name = "KEY=VALUE")]
    params: Vec<String>,
    /// Reorder the matrix symmetrically for the method (none, rcm, bisection, auto; a variant's
    /// reorder= wins): the solver then iterates on PAPᵀ in the new numbering, permuting its input
    /// once at the start and the answer once at the end. The ordering's time is the plan's
    /// preprocessing, printed in a note. The --compare method runs on the matrix as given.
    #[arg(long, default_value = "none", value_parser = args::reorder)]
    reorder: Reorder,
    /// Run on the CPU even when a GPU is present.
    #[arg(long)]
    cpu: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Do not read or write the binary cache.
    #[arg(long)]
    no_cache: bool,
}

/// Conjugate gradient on A x = b with b = A·1 (so the exact answer is all ones), x0 = 0, stopping
/// at ‖r‖/‖b‖ ≤ tol. A must be symmetric positive definite (a breakdown is reported otherwise,
/// with exit status 3).
///
/// Prints one summary line per run: iterations, stop reason, final relative residual, the error
/// against the CPU reference solve (f64 CG with `csr`) and against the exact answer, time per
/// iteration and iterations/s. On the GPU the scalars stay on the device and `check-every`
/// iterations are replayed from a CUDA graph; without a GPU it runs on the CPU with a note.
#[derive(Args)]
#[command(
    after_help = "Defaults: --tol 1e-8 (f64) or 1e-5 (f32), --max-iter 10000.

Exit status: 0 when every run converged, 3 when one stopped without converging (breakdown on a
matrix that is not SPD, or the iteration limit), 2 for bad arguments, 1 for other errors.

Examples:
  spmv solve cg poisson3d:64
  spmv solve cg poisson3d:160 --method csr-vector --graph both --compare cusparse
  spmv solve cg poisson3d:160 --precision f32 --compare cusparse --json
  spmv solve cg poisson3d:160,renumber=random --method csr-packed --reorder rcm --compare cusparse
  spmv solve cg spd.mtx --method merge --tol 1e-10 --max-iter 5000 --no-reference"
)]
pub struct CgArgs {
    #[command(flatten)]
    common: SolverCommonArgs,
}

/// PageRank by power iteration on a graph's adjacency matrix (edge i → j when A_ij is stored;
/// values are ignored): x' = d·P x + (d·dangling mass + 1 − d)/n with P = Aᵀ D⁻¹, from x = 1/n,
/// stopping when ‖x' − x‖₁ ≤ tol.
///
/// Prints one summary line per run: iterations, final L1 change, the L1 error against the CPU
/// reference (serial f64 power iteration on the adjacency), the rank sum, time per iteration and
/// iterations/s. On the GPU `check-every` iterations are replayed from a CUDA graph; without a
/// GPU it runs on the CPU with a note.
#[derive(Args)]
#[command(
    after_help = "Defaults: --tol 1e-6 (f64) or 1e-5 (f32), --max-iter 1000.

Exit status: 0 when every run converged, 3 when one stopped at the iteration limit, 2 for bad
arguments, 1 for other errors.

Examples:
  spmv pagerank kron:16
  spmv pagerank kron:20 --graph both --compare cusparse
  spmv pagerank kron:20 --precision f32 --method merge --damping 0.9 --json
  spmv pagerank rgg:4194304,order=shuffled --method csr-vector --reorder rcm --compare cusparse
  spmv pagerank web.mtx --tol 1e-8 --no-reference"
)]
pub struct PageRankArgs {
    #[command(flatten)]
    common: SolverCommonArgs,
    /// Damping factor d in [0, 1).
    #[arg(long, default_value_t = 0.85, value_parser = args::damping)]
    damping: f64,
}

pub fn run_solve(args: SolveArgs) -> Result<()> {
    match args.solver {
        Solver::Cg(a) => match a.common.precision.parse::<Precision>()? {
            Precision::F32 => cg_t::<f32>(&a),
            Precision::F64 => cg_t::<f64>(&a),
        },
    }
}

pub fn run_pagerank(args: PageRankArgs) -> Result<()> {
    match args.common.precision.parse::<Precision>()? {
        Precision::F32 => pagerank_t::<f32>(&args),
        Precision::F64 => pagerank_t::<f64>(&args),
    }
}

impl SolverCommonArgs {
    /// Loads MATRIX (through the cache unless --no-cache), refusing a matrix that is not square
    /// ([`input::load_square`]).
    fn load_square<T: PrepareFor>(&self, need: &str) -> Result<input::Loaded<T>> {
        input::load_square::<T>(&self.matrix, !self.no_cache, need)
    }

    /// The solver options from --tol, --max-iter and --check-every, with the solver's defaults.
    fn solve_options(&self, default_tol: f64, default_max_iter: usize) -> SolveOptions {
        SolveOptions {
            tol: self.tol.unwrap_or(default_tol),
            max_iter: self.max_iter.unwrap_or(default_max_iter),
            check_every: self.check_every,
            graph: true,
        }
    }

    /// The graph settings to run, in order.
    fn graph_modes(&self) -> Vec<bool> {
        match self.graph.as_deref() {
            Some("off") => vec![false],
            Some("both") => vec![true, false],
            _ => vec![true],
        }
    }
}

/// Says so when `--graph` was given but the plans run on the CPU, which has no CUDA graphs.
fn note_graph_on_cpu<T: PrepareFor>(c: &SolverCommonArgs, plans: &[Plan<T>]) {
    if let Some(g) = &c.graph {
        if plans.iter().all(|p| p.backend() == Backend::Cpu) {
            eprintln!("note: --graph {g} has no effect on the CPU (CUDA graphs need a GPU)");
        }
    }
}

/// Runs `solve_one(plan, graph)` for each graph setting and each plan (a CPU plan runs once
/// under `--graph both`), returning the report and the checks of each run.
fn run_plans<T: PrepareFor>(
    c: &SolverCommonArgs,
    mut plans: Vec<Plan<T>>,
    mut solve_one: impl FnMut(&mut Plan<T>, bool) -> Result<(SolveReport, Vec<(&'static str, f64)>)>,
) -> Result<Vec<SolverRun>> {
    note_graph_on_cpu(c, &plans);
    let mut runs = Vec::new();
    for graph in c.graph_modes() {
        for p in plans.iter_mut() {
            if p.backend() == Backend::Cpu && !graph && c.graph.as_deref() == Some("both") {
                continue;
            }
            let (report, checks) = solve_one(p, graph)?;
            runs.push(SolverRun {
                label: method_label(p),
                graph,
                report,
                checks,
            });
        }
    }
    Ok(runs)
}

/// Exit status 3 when a run stopped without converging (after its results are printed).
fn check_converged(solver: &str, matrix: &str, runs: &[SolverRun]) -> Result<()> {
    match runs
        .iter()
        .find(|r| r.report.stop != solve::Stop::Converged)
    {
        Some(r) => Err(crate::not_converged(format!(
            "{solver} on {matrix} with {} stopped by {} after {} iterations (relative residual \
             {:.3e})",
            r.label, r.report.stop, r.report.iterations, r.report.residual
        ))),
        None => Ok(()),
    }
}

/// Plans for the method and the comparison method (if any), on the matrix `a`.
fn plans<T: PrepareFor>(c: &SolverCommonArgs, a: &Csr<T>) -> Result<Vec<Plan<T>>> {
    let opts = PlanOptions {
        params: Params::parse(c.params.iter().map(String::as_str))?,
        backend: if c.cpu { Some(Backend::Cpu) } else { None },
        reorder: c.reorder,
        ..Default::default()
    };
    let first = Plan::new(&c.method, a, &opts)
        .with_context(|| format!("preparing {} for the solver", c.method))?;
    if let Some(note) = first.reorder_note() {
        eprintln!(
            "note: {note}; preprocessing {:.3} s",
            first.prep_times().reorder.as_secs_f64()
        );
    }
    let mut out = vec![first];
    if let Some(other) = &c.compare {
        let o = PlanOptions {
            params: Params::new(),
            backend: Some(out[0].backend()),
            ..Default::default()
        };
        match Plan::new(other, a, &o) {
            Ok(p) => out.push(p),
            Err(e) => eprintln!("note: no comparison with {other}: {e}"),
        }
    }
    Ok(out)
}

/// `auto(csr-vector)` for auto, else the method's name.
fn method_label<T: PrepareFor>(p: &Plan<T>) -> String {
    let name = p.info().name;
    match p.chosen() {
        Some(chosen) => format!("{name}({})", chosen.info().name),
        None => name.to_string(),
    }
}

/// One run's record and summary line.
struct SolverRun {
    label: String,
    graph: bool,
    report: SolveReport,
    checks: Vec<(&'static str, f64)>,
}

impl SolverRun {
    fn line(&self, solver: &str, matrix: &str, precision: Precision) -> String {
        let r = &self.report;
        let checks: String = self
            .checks
            .iter()
            .map(|(k, v)| format!(" {k}={v:.3e}"))
            .collect();
        format!(
            "{solver} {matrix} {precision} method={} {}/{} iters={} launched={} {} res={:.3e}{checks} us/iter={:.2} iters/s={:.1}",
            self.label,
            r.backend,
            r.launch,
            r.iterations,
            r.launched,
            r.stop,
            r.residual,
            r.us_per_iter(),
            r.iters_per_sec()
        )
    }

    fn json(&self) -> Value {
        let mut v = json!({
            "method": self.label,
            "graph_requested": self.graph,
            "report": self.report,
            "us_per_iter": self.report.us_per_iter(),
            "iters_per_sec": self.report.iters_per_sec(),
        });
        for (k, x) in &self.checks {
            v[*k] = json!(x);
        }
        v
    }
}

/// Prints the runs (or the JSON object) and the speedups over the comparison method.
fn finish(
    c: &SolverCommonArgs,
    solver: &str,
    matrix: &str,
    precision: Precision,
    runs: &[SolverRun],
    extra: Value,
) -> Result<()> {
    let n_methods = 1 + usize::from(runs.iter().any(|r| r.label != runs[0].label));
    let mut speedups = Vec::new();
    if n_methods == 2 {
        for pair in runs.chunks(2) {
            if let [ours, base] = pair {
                let ratio = ours.report.iters_per_sec() / base.report.iters_per_sec();
                speedups.push((ours, base, ratio));
            }
        }
    }
    if c.json {
        let out = json!({
            "solver": solver,
            "matrix": matrix,
            "precision": precision.to_string(),
            "runs": runs.iter().map(SolverRun::json).collect::<Vec<_>>(),
            "speedups": speedups.iter().map(|(o, b, r)| json!({
                "method": o.label, "baseline": b.label, "launch": o.report.launch, "speedup": r,
            })).collect::<Vec<_>>(),
            "extra": extra,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    let mut notes: Vec<&str> = runs
        .iter()
        .flat_map(|r| r.report.notes.iter().map(String::as_str))
        .collect();
    notes.dedup();
    for n in notes {
        println!("note: {n}");
    }
    for r in runs {
        println!("{}", r.line(solver, matrix, precision));
    }
    for (o, b, ratio) in speedups {
        println!(
            "speedup {solver} {matrix} {precision} {}: {} over {} = {ratio:.2}x ({:.1} vs {:.1} iters/s)",
            o.report.launch,
            o.label,
            b.label,
            o.report.iters_per_sec(),
            b.report.iters_per_sec()
        );
    }
    Ok(())
}

fn cg_t<T: PrepareFor>(args: &CgArgs) -> Result<()> {
    let c = &args.common;
    let loaded = c.load_square::<T>("CG needs a square (symmetric positive definite) matrix")?;
    let a = &loaded.matrix;
    let opts = c.solve_options(solve::cg_default_tol(T::PRECISION), solve::CG_MAX_ITER);
    let b = CgSystem::ones_solution(a).b;
    let reference = if c.no_reference {
        None
    } else {
        let b64: Vec<f64> = b.iter().map(|v| v.to_f64()).collect();
        Some(cg_reference(a, &b64, &opts)?)
    };
    let runs = run_plans(c, plans(c, a)?, |p, graph| {
        let (x, report) = solve::cg(p, &b, &SolveOptions { graph, ..opts })?;
        Ok((report, solve::cg_checks(&x, reference.as_deref())))
    })?;
    let extra =
        json!({ "n": a.nrows(), "nnz": a.nnz(), "tol": opts.tol, "max_iter": opts.max_iter });
    finish(c, "cg", &loaded.name, T::PRECISION, &runs, extra)?;
    check_converged("cg", &loaded.name, &runs)
}

/// The CPU reference CG ([`solve::cg_reference`]) on `a` with the right-hand side `b`, with a
/// note on stderr when it stopped without converging.
pub(crate) fn cg_reference<T: Scalar>(
    a: &Csr<T>,
    b: &[f64],
    opts: &SolveOptions,
) -> Result<Vec<f64>> {
    let (x, rep) = solve::cg_reference(a, b, opts).context("the CPU reference CG")?;
    if rep.stop != solve::Stop::Converged {
        eprintln!(
            "note: the CPU reference stopped by {} after {} iterations",
            rep.stop, rep.iterations
        );
    }
    Ok(x)
}

fn pagerank_t<T: PrepareFor>(args: &PageRankArgs) -> Result<()> {
    let c = &args.common;
    let loaded = c.load_square::<T>("PageRank needs a square adjacency matrix")?;
    let adj = &loaded.matrix;
    let opts = PageRankOptions {
        damping: args.damping,
        solve: c.solve_options(
            solve::pagerank_default_tol(T::PRECISION),
            solve::PAGERANK_MAX_ITER,
        ),
    };
    let g = PageRankGraph::from_adjacency(adj)?;
    let reference = if c.no_reference {
        None
    } else {
        Some(solve::pagerank_reference(adj, &opts).0)
    };
    let runs = run_plans(c, plans(c, &g.transition)?, |p, graph| {
        let o = PageRankOptions {
            solve: SolveOptions {
                graph,
                ..opts.solve
            },
            ..opts
        };
        let (x, report) = solve::pagerank(p, &g.dangling, &o)?;
        Ok((report, solve::pagerank_checks(&x, reference.as_deref())))
    })?;
    let extra = json!({
        "n": adj.nrows(), "edges": adj.nnz(), "dangling": g.dangling.len(),
        "damping": opts.damping, "tol": opts.solve.tol, "max_iter": opts.solve.max_iter,
    });
    finish(c, "pagerank", &loaded.name, T::PRECISION, &runs, extra)?;
    check_converged("pagerank", &loaded.name, &runs)
}
