//! `spmv`: inspect, generate, run and benchmark sparse matrix–vector products.
//!
//! The CLI parses arguments and prints; every algorithm lives in the `spmvkit` library.

mod auto_args;
mod cmd_auto;
mod cmd_bench;
mod cmd_dist;
mod cmd_dist_solve;
mod cmd_gen;
mod cmd_info;
mod cmd_methods;
mod cmd_report;
mod cmd_run;
mod cmd_solve;
mod input;

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
  spmv run poisson3d:64 --method csr         run, check against the oracle and time one method
  spmv run matrix.mtx.gz --method csr --precision f32 --json
  spmv run matrix.mtx --method auto --auto=trial --param calls=100000
                                             let `auto` choose, timing its best candidates
  spmv solve cg poisson3d:64 --compare cusparse    conjugate gradient on a Plan, against cuSPARSE
  spmv pagerank kron:20 --graph both             PageRank with and without CUDA graphs
  spmv dist run kron:22 --gpus 2             SpMV on 2 GPUs through NCCL, checked and timed")]
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
    Run(cmd_run::RunArgs),
    Report(cmd_report::ReportArgs),
    Solve(cmd_solve::SolveArgs),
    Pagerank(cmd_solve::PageRankArgs),
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
        Command::Run(a) => cmd_run::run(a),
        Command::Report(a) => cmd_report::run(a),
        Command::Solve(a) => cmd_solve::run_solve(a),
        Command::Pagerank(a) => cmd_solve::run_pagerank(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
