//! Iterative solvers built on a [`Plan`](crate::Plan) (issue #11 point 3): conjugate gradient for symmetric
//! positive definite systems ([`cg()`]) and PageRank by power iteration ([`pagerank()`]). The SpMV
//! inside is any registered method, through its plan.
//!
//! On the GPU every scalar of the iteration (ρ, α, β, the iteration count, a stop flag) stays in
//! device memory and the vector kernels (`kernel.cu`: dot products, axpy, the PageRank update)
//! read them there, so one iteration is a fixed sequence of launches with no host
//! synchronisation. `check_every` iterations are captured once into a CUDA graph and replayed
//! (the graph mode of `gpu/timing.rs`); after each replay the host downloads the scalars to see
//! whether the device has set the stop flag. Iterations enqueued after convergence change
//! nothing (every kernel returns when the flag is set), so the answer is the one of the
//! converging iteration. A method whose `run` cannot be captured falls back to stream launches,
//! and the report says so.
//!
//! Dot products are deterministic: a grid fixed by the vector length, double accumulation, a
//! fixed reduction tree per block and a fixed-order second stage. Runs are reproducible bit for
//! bit whenever the SpMV method is deterministic.
//!
//! The CPU path runs the same iteration with the plan's CPU executor and rayon vector operations
//! (deterministic chunked dot products), checking convergence every iteration.

pub mod cg;
pub mod check;
pub(crate) mod kernels;
pub mod pagerank;
pub mod rows;

use std::borrow::Cow;
use std::time::Instant;

use cudarc::driver::CudaSlice;
use rayon::prelude::*;
use serde::Serialize;

pub use cg::{cg, cg_single_reduction, CgSystem};
pub use check::{
    cg_checks, cg_default_tol, cg_error_bound, cg_reference, l1_err, pagerank_checks,
    pagerank_default_tol, pagerank_error_bound, rel_err, within_bound, CG_MAX_ITER,
    PAGERANK_MAX_ITER,
};
pub use pagerank::{pagerank, pagerank_reference, PageRankGraph, PageRankOptions};

use crate::error::{Error, Result};
use crate::gpu::{DevMut, DevRef, Gpu, Kernel, Kernels, Shape};
use crate::methods::Backend;
use crate::reorder::Permutation;
use crate::scalar::{Idx, Scalar};

use kernels::DistSumArgs;
pub use kernels::KERNELS;

/// The solvers' kernels with their entries, for the CI NVRTC check and `tests/kernel_args.rs`.
pub fn kernel_sources() -> Vec<Kernels> {
    vec![KERNELS]
}

/// Threads per block of every solver kernel (`SOLVE_THREADS` in kernel.cu).
const THREADS: u32 = 256;
/// Most blocks of a reduction grid (the second stage sums this many partials).
const MAX_BLOCKS: usize = 1024;

// Slots of the device scalar array (kernel.cu's S_*).
const S_RHO: usize = 0;
const S_THRESH: usize = 3;
pub(crate) const S_DONE: usize = 4;
pub(crate) const S_ITER: usize = 5;
const S_MAXIT: usize = 6;
pub(crate) const S_RES: usize = 7;
pub(crate) const S_MASS: usize = 8;
pub(crate) const S_LEN: usize = 16;

/// How a solver iterates.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SolveOptions {
    /// Stopping tolerance (CG: relative residual ‖r‖/‖b‖; PageRank: L1 change of the ranks).
    pub tol: f64,
    /// Most iterations.
    pub max_iter: usize,
    /// On the GPU, iterations between two convergence checks (the iterations one CUDA graph
    /// holds). PageRank rounds it up to an even number.
    pub check_every: usize,
    /// On the GPU, capture `check_every` iterations into a CUDA graph and replay it.
    pub graph: bool,
}

impl Default for SolveOptions {
    /// tol 1e-8, at most 10 000 iterations, a check every 10, graphs on.
    fn default() -> Self {
        SolveOptions {
            tol: 1e-8,
            max_iter: 10_000,
            check_every: 10,
            graph: true,
        }
    }
}

/// Why a solver stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stop {
    Converged,
    MaxIterations,
    /// A non-finite value, or CG's pᵀAp ≤ 0 (the matrix is not positive definite).
    Breakdown,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stop::Converged => "converged",
            Stop::MaxIterations => "max-iterations",
            Stop::Breakdown => "breakdown",
        })
    }
}

/// How the iterations were launched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Launch {
    /// The CPU path.
    Cpu,
    /// Kernel launches on the stream, one by one.
    Stream,
    /// Replays of a captured CUDA graph.
    Graph,
}

impl std::fmt::Display for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Launch::Cpu => "cpu",
            Launch::Stream => "stream",
            Launch::Graph => "graph",
        })
    }
}

/// What a solve did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SolveReport {
    /// Where it ran.
    pub backend: Backend,
    /// How the iterations were launched (a graph request that failed falls back to `stream`).
    pub launch: Launch,
    /// Iterations until the stop.
    pub iterations: usize,
    /// Iterations enqueued (≥ `iterations`: the GPU checks every `check_every`; the extra ones
    /// change nothing).
    pub launched: usize,
    pub stop: Stop,
    /// The last stopping measure (CG: ‖r‖/‖b‖ of the recurrence; PageRank: L1 change).
    pub residual: f64,
    /// Wall time of the iteration loop (setup, capture and the final download excluded).
    pub seconds: f64,
    /// Fallbacks and other facts worth printing.
    pub notes: Vec<String>,
}

impl SolveReport {
    /// Microseconds per enqueued iteration.
    pub fn us_per_iter(&self) -> f64 {
        if self.launched == 0 {
            return 0.0;
        }
        self.seconds * 1e6 / self.launched as f64
    }
    /// Enqueued iterations per second.
    pub fn iters_per_sec(&self) -> f64 {
        if self.seconds > 0.0 {
            self.launched as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// A solver's way into and out of a reordered numbering (issue #22: solvers in the permuted
/// space): with a permutation P (a reordered plan's, [`crate::Plan::permutation`], or a
/// distributed solve's ordering) what the solver starts from is permuted once (a vector v to Pv,
/// a set of nodes to their new indices) and its answer once back; it iterates on B = PAPᵀ in
/// between. Without P each is the identity and copies nothing.
pub(crate) struct Renumbering<'p>(pub(crate) Option<&'p Permutation>);

impl Renumbering<'_> {
    /// Pv (v itself without P).
    pub(crate) fn vector<'a, V: Copy + Send + Sync>(&self, v: &'a [V]) -> Result<Cow<'a, [V]>> {
        Ok(match self.0 {
            Some(p) => Cow::Owned(p.apply(v)?),
            None => Cow::Borrowed(v),
        })
    }

    /// The new indices of a set of nodes, ascending ([`Permutation::apply_to_set`]).
    pub(crate) fn set<'a>(&self, nodes: &'a [Idx]) -> Result<Cow<'a, [Idx]>> {
        Ok(match self.0 {
            Some(p) => Cow::Owned(p.apply_to_set(nodes)?),
            None => Cow::Borrowed(nodes),
        })
    }

    /// Pᵀv: the answer in the matrix's own numbering.
    pub(crate) fn back<V: Copy + Send + Sync>(&self, v: Vec<V>) -> Result<Vec<V>> {
        match self.0 {
            Some(p) => p.apply_inverse(&v),
            None => Ok(v),
        }
    }
}

/// Blocks of a reduction grid over n elements: a function of n alone, so reductions (and runs)
/// are the same on every GPU.
pub(crate) fn grid_blocks(n: usize) -> usize {
    n.div_ceil(THREADS as usize * 8).clamp(1, MAX_BLOCKS)
}

/// `blocks` CTAs of [`THREADS`] threads, no dynamic shared memory: the launch of every solver
/// kernel.
pub(crate) fn grid(blocks: usize) -> Shape {
    Shape::ctas(blocks, THREADS)
}

pub(crate) fn check_options(o: &SolveOptions) -> Result<()> {
    if !(o.tol >= 0.0 && o.tol.is_finite()) {
        return Err(Error::InvalidArgument(format!(
            "solver tolerance {} must be a finite number ≥ 0",
            o.tol
        )));
    }
    if o.check_every == 0 {
        return Err(Error::InvalidArgument(
            "check_every must be at least 1".into(),
        ));
    }
    Ok(())
}

/// CG's stopping threshold on ρ = rᵀr, tol²·‖b‖², from `bb` = ‖b‖² (an error when b holds a
/// non-finite value).
pub(crate) fn cg_threshold(bb: f64, opts: &SolveOptions) -> Result<f64> {
    if !bb.is_finite() {
        return Err(Error::InvalidArgument(
            "CG right-hand side holds a non-finite value".into(),
        ));
    }
    Ok(opts.tol * opts.tol * bb)
}

/// The initial device scalars.
pub(crate) fn initial_scalars(rho: f64, thresh: f64, max_iter: usize) -> [f64; S_LEN] {
    let mut s = [0.0; S_LEN];
    s[S_RHO] = rho;
    s[S_THRESH] = thresh;
    s[S_MAXIT] = max_iter as f64;
    s[S_RES] = rho;
    if max_iter == 0 {
        s[S_DONE] = 2.0;
    }
    s
}

pub(crate) fn stop_of(done: f64) -> Stop {
    match done as i64 {
        1 => Stop::Converged,
        3 => Stop::Breakdown,
        _ => Stop::MaxIterations,
    }
}

/// What [`drive`] leaves: the final scalars, the loop time, iterations enqueued, the launch
/// mode used and notes.
pub(crate) struct Driven {
    pub(crate) s: [f64; S_LEN],
    pub(crate) seconds: f64,
    pub(crate) launched: usize,
    pub(crate) launch: Launch,
    pub(crate) notes: Vec<String>,
}

impl Driven {
    /// The report of a device-resident solve: `residual` as the solver reads it from the
    /// scalars, `notes` first, then the driver's.
    pub(crate) fn report(self, residual: f64, mut notes: Vec<String>) -> SolveReport {
        notes.extend(self.notes);
        SolveReport {
            backend: Backend::Gpu,
            launch: self.launch,
            iterations: self.s[S_ITER] as usize,
            launched: self.launched,
            stop: stop_of(self.s[S_DONE]),
            residual,
            seconds: self.seconds,
            notes,
        }
    }
}

/// What a dot product's block partials become before the scalar kernel that reads them, in the
/// device-resident iterations ([`cg::CgIteration`], [`pagerank::PageRankIteration`]).
pub(crate) enum Reduce<'a> {
    /// One GPU: the scalar kernels read the partials themselves.
    Local,
    /// NCCL ranks: `dist_sum` adds the partials into a slot of `red`, `all_reduce` sums `red`
    /// over the ranks, and the scalar kernels read the sums.
    Ranks {
        k_sum: &'a Kernel<DistSumArgs<'static>>,
        red: &'a mut CudaSlice<f64>,
        all_reduce: &'a mut dyn FnMut(&mut CudaSlice<f64>) -> Result<()>,
    },
}

/// Enqueues `dist_sum` (`k_sum`): red[slot] = the sum of part[0..nb), unless `s` says done.
pub(crate) fn dist_sum(
    gpu: &Gpu,
    k_sum: &Kernel<DistSumArgs<'static>>,
    red: &mut CudaSlice<f64>,
    slot: i32,
    part: &CudaSlice<f64>,
    nb: usize,
    s: &CudaSlice<f64>,
) -> Result<()> {
    let args = DistSumArgs {
        dst: DevMut::doubles(red),
        slot,
        part: DevRef::doubles(part),
        nb: nb as i32,
        s: DevRef::doubles(s),
    };
    // SAFETY: `red` holds more than `slot` values, `part` nb and `s` S_LEN.
    unsafe { gpu.launch(k_sum, grid(1), &args) }
}

/// Enqueues `step(i)` (iteration i of a chunk of `k`, enqueued only) in chunks of k until the
/// device sets the stop flag in `s`: each chunk is a replay of a captured graph (when `graph`)
/// or k rounds of stream launches, then the scalars are downloaded.
pub(crate) fn drive(
    gpu: &Gpu,
    s: &CudaSlice<f64>,
    k: usize,
    max_iter: usize,
    graph: bool,
    mut step: impl FnMut(usize) -> Result<()>,
) -> Result<Driven> {
    let mut notes = Vec::new();
    let mut host = [0.0; S_LEN];
    gpu.download(s, &mut host)?;
    let captured = if graph && host[S_DONE] == 0.0 {
        match capture(gpu, k, &mut step) {
            Ok(g) => Some(g),
            Err(e) => {
                notes.push(format!(
                    "CUDA graph capture failed ({e}); iterations launched on the stream"
                ));
                None
            }
        }
    } else {
        None
    };
    let launch = if captured.is_some() {
        Launch::Graph
    } else {
        Launch::Stream
    };
    let t0 = Instant::now();
    let mut launched = 0;
    // The device stops itself at max_iter; the bound here only guards against a kernel that
    // never sets the flag.
    while host[S_DONE] == 0.0 && launched < max_iter + k {
        match &captured {
            Some(g) => g
                .launch()
                .map_err(|e| Error::cuda("launching the solver graph", e))?,
            None => {
                for i in 0..k {
                    step(i)?;
                }
            }
        }
        launched += k;
        gpu.download(s, &mut host)?;
    }
    Ok(Driven {
        s: host,
        seconds: t0.elapsed().as_secs_f64(),
        launched,
        launch,
        notes,
    })
}

/// Captures k steps into an uploaded graph (`gpu::capture_graph`), then waits for the upload.
fn capture(
    gpu: &Gpu,
    k: usize,
    step: &mut impl FnMut(usize) -> Result<()>,
) -> Result<cudarc::driver::CudaGraph> {
    let graph = crate::gpu::capture_graph(gpu, k, step)?;
    gpu.synchronize()?;
    Ok(graph)
}

/// Elements per rayon task of the CPU vector operations (fixed, so sums are reproducible).
pub(crate) const CPU_CHUNK: usize = 16 * 1024;

/// Σ f(a_i, b_i) in f64, in fixed chunks added in order (deterministic on any thread count).
pub(crate) fn chunked_sum<T: Scalar>(a: &[T], b: &[T], f: impl Fn(f64, f64) -> f64 + Sync) -> f64 {
    let parts: Vec<f64> = a
        .par_chunks(CPU_CHUNK)
        .zip(b.par_chunks(CPU_CHUNK))
        .map(|(x, y)| {
            x.iter()
                .zip(y)
                .map(|(p, q)| f(p.to_f64(), q.to_f64()))
                .sum::<f64>()
        })
        .collect();
    parts.iter().sum()
}

/// Σ a_i·b_i in f64, in fixed chunks added in order ([`chunked_sum`]).
pub(crate) fn dot_cpu<T: Scalar>(a: &[T], b: &[T]) -> f64 {
    chunked_sum(a, b, |p, q| p * q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_depend_on_n_alone_and_stay_bounded() {
        assert_eq!(grid_blocks(0), 1);
        assert_eq!(grid_blocks(1), 1);
        assert_eq!(grid_blocks(2048), 1);
        assert_eq!(grid_blocks(2049), 2);
        assert_eq!(grid_blocks(1 << 30), MAX_BLOCKS);
    }

    #[test]
    fn cpu_dot_is_chunk_ordered() {
        let a: Vec<f64> = (0..100_000).map(|i| (i % 13) as f64 * 0.1).collect();
        let serial: f64 = a
            .chunks(CPU_CHUNK)
            .map(|c| c.iter().map(|v| v * v).sum::<f64>())
            .sum();
        assert_eq!(dot_cpu(&a, &a).to_bits(), serial.to_bits());
    }

    #[test]
    fn options_are_checked() {
        let bad = SolveOptions {
            tol: f64::NAN,
            ..SolveOptions::default()
        };
        assert!(check_options(&bad).is_err());
        let bad = SolveOptions {
            check_every: 0,
            ..SolveOptions::default()
        };
        assert!(check_options(&bad).is_err());
        assert!(check_options(&SolveOptions::default()).is_ok());
    }
}
