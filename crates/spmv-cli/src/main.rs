//! `spmv`: inspect, generate, run and benchmark sparse matrix–vector products.
//!
//! The CLI parses arguments and prints; every algorithm lives in the `spmvkit` library.

mod args;
mod auto_args;
mod cmd_auto;
mod cmd_bench;
mod cmd_dist;
mod cmd_dist_solve;
mod cmd_gen;
mod cmd_info;
mod cmd_methods;
mod cmd_probe;
mod cmd_report;
mod cmd_run;
mod cmd_solve;
mod dist_common;
mod input;
mod text;

use std::fmt;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Sparse matrix–vector multiplication (y = αAx + βy) on NVIDIA GPUs, with a CPU fallback.
///
/// MATRIX arguments are a Matrix Market file (.mtx, .mtx.gz), a spmvkit cache (.spmvkit), or a
/// GEN-SPEC naming a generated matrix, such as `poisson3d:64`, `kron:18` or `uniform:100000,16`
/// (`spmv gen --help` lists the kinds). Without a GPU, everything runs on the CPU with a note.
#[derive(Parser)]
#[command(name = "spmv", version, propagate_version = true, max_term_width = 100)]
#[command(after_help = "Examples:
  spmv bench --suite quick                   benchmark every method on small generated matrices
  spmv info poisson3d:32                     statistics of a generated 3D Poisson matrix
  spmv gen kron 16 -o kron16.mtx             write a Graph500 Kronecker graph (2^16 vertices)
  spmv methods                               list the SpMV methods
  spmv probe                                 this GPU's read bandwidth and gather rates (limits)
  spmv run poisson3d:64 --method csr         run, check against the oracle and time one method
  spmv run matrix.mtx.gz --method csr --precision f32 --json
  spmv run matrix.mtx --method auto --param calls=100000
                                             let `auto` choose, timing its best candidates
  spmv solve cg poisson3d:64 --compare cusparse
                                             conjugate gradient on a Plan, against cuSPARSE
  spmv pagerank kron:20 --graph both         PageRank with and without CUDA graphs
  spmv dist run kron:22 --gpus 2             SpMV on 2 GPUs through NCCL, checked and timed

Exit status:
  0  success
  1  an error: unreadable input, a wrong result, a failed write
  2  a usage error: bad arguments or options that do not go together
  3  a solver stopped without converging (CG breakdown, iteration limit)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Auto(cmd_auto::AutoArgs),
    Bench(cmd_bench::BenchArgs),
    Dist(cmd_dist::DistArgs),
    Info(cmd_info::InfoArgs),
    Gen(cmd_gen::GenArgs),
    Methods(cmd_methods::MethodsArgs),
    Probe(cmd_probe::ProbeArgs),
    Run(cmd_run::RunArgs),
    Report(cmd_report::ReportArgs),
    Solve(cmd_solve::SolveArgs),
    Pagerank(cmd_solve::PageRankArgs),
}

/// Exit status of an error that is not a [`Failure`].
const EXIT_ERROR: u8 = 1;
/// Exit status of a usage error (clap uses it for the errors it finds).
const EXIT_USAGE: u8 = 2;
/// Exit status of a solver that stopped without converging.
const EXIT_NOT_CONVERGED: u8 = 3;

/// An error with its own exit status.
#[derive(Debug)]
pub struct Failure {
    code: u8,
    msg: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for Failure {}

/// A usage error: bad arguments or flags that do not go together (exit status 2).
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    Failure {
        code: EXIT_USAGE,
        msg: msg.into(),
    }
    .into()
}

/// A solver that stopped without converging (exit status 3).
pub fn not_converged(msg: impl Into<String>) -> anyhow::Error {
    Failure {
        code: EXIT_NOT_CONVERGED,
        msg: msg.into(),
    }
    .into()
}

/// The error and its causes on one line, leaving out a cause whose text the line already holds
/// (an I/O error names its path and its OS error; the OS error is also its cause).
fn error_line(e: &anyhow::Error) -> String {
    let mut line = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !line.contains(&c) {
            line.push_str(": ");
            line.push_str(&c);
        }
    }
    line
}

/// Restores the default SIGPIPE action, so `spmv info … | head` ends quietly instead of failing
/// on a closed pipe.
#[cfg(unix)]
fn default_sigpipe() {
    extern "C" {
        fn signal(signum: i32, handler: usize) -> usize;
    }
    const SIGPIPE: i32 = 13;
    const SIG_DFL: usize = 0;
    // SAFETY: installs the default disposition for SIGPIPE before any thread is started.
    unsafe {
        signal(SIGPIPE, SIG_DFL);
    }
}

fn main() -> ExitCode {
    #[cfg(unix)]
    default_sigpipe();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Auto(a) => cmd_auto::run(a),
        Command::Bench(a) => cmd_bench::run(a),
        Command::Dist(a) => cmd_dist::run(a),
        Command::Info(a) => cmd_info::run(a),
        Command::Gen(a) => cmd_gen::run(a),
        Command::Methods(a) => cmd_methods::run(a),
        Command::Probe(a) => cmd_probe::run(a),
        Command::Run(a) => cmd_run::run(a),
        Command::Report(a) => cmd_report::run(a),
        Command::Solve(a) => cmd_solve::run_solve(a),
        Command::Pagerank(a) => cmd_solve::run_pagerank(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", error_line(&e));
            ExitCode::from(e.downcast_ref::<Failure>().map_or(EXIT_ERROR, |f| f.code))
        }
    }
}
