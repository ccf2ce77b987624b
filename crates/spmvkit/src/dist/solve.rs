//! Distributed solvers (issue #12 point 5): conjugate gradient and PageRank over the row
//! partition. The host iteration is written once, over [`RowOperator`], in
//! [`crate::solve::rows`] (re-exported here): it runs on P simulated ranks in one process
//! ([`SimRows`]), in one NCCL rank per GPU ([`NcclRows`]), and on one rank for the single-process
//! CPU solvers.
//!
//! Each rank owns its rows of every vector (x, r, p, q; the PageRank vector). The SpMV is the
//! distributed operator (which exchanges x itself); a dot product, a norm, PageRank's dangling
//! mass and its L1 change are a partial sum over each rank's own rows followed by an all-reduce.
//! The simulation plays every rank: it computes each rank's partial over that rank's rows and adds
//! the partials in rank order, which is what the all-reduce of a real world returns. In the
//! generic functions ([`cg`], [`pagerank`]) scalars live on the host and the vector updates are
//! host (rayon) loops over the local rows. The iteration is the same as the single-process CPU
//! path of [`crate::solve`], so both converge to the same answer.
//!
//! A GPU rank runs the device-resident form of the same iteration ([`NcclRows::cg`],
//! [`NcclRows::pagerank`]): its rows of every vector live in device memory, p (the PageRank
//! vector) *is* the operator's owned x (`DistOperator::x`, which the exchange reads) and A·p is
//! read from the operator's y, and every scalar (ρ, α, β, the dangling mass, the stop flag) lives
//! in a device array as in the single-GPU solvers. The iterations are the single-GPU ones,
//! written once in `crate::solve` (`CgIteration`, `PageRankIteration`) with an all-reduce hook. A global sum is the rank's partials reduced on the device to one double,
//! then `Communicator::all_reduce_sum_device` of that small buffer; every rank computes the same
//! scalars from the same sums, so all stop together. Iterations are enqueued `check_every` at a
//! time with no host synchronisation, and the host downloads the scalars once per chunk (stream
//! launches: the NCCL calls are not captured into CUDA graphs).
//!
//! CG needs two all-reduces per iteration (pᵀq, then rᵀr); PageRank one (the L1 change of this
//! iteration together with the dangling mass for the next).

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::CudaSlice;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::bootstrap::RankEnv;
use super::nccl::{Communicator, DistOperator, DistScalar};
use super::ordered::{Ordered, OrderedSummary};
use super::partition::{Distribution, StrategyChoice};
use super::rank::{flat_notes, strategy_label};
use super::sim::SimOperator;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::matrix::{check_square, Csr};
use crate::methods::{Backend, PrepareFor};
use crate::reorder::Ordering;
use crate::scalar::{Idx, Scalar};
use crate::solve::cg::{Cg1Iteration, CgIteration, CgStart, DeviceCg};
use crate::solve::kernels::DistSumArgs;
use crate::solve::pagerank::{PageRankIteration, RankVectors};
pub use crate::solve::rows::{cg, cg_single_reduction, pagerank, RowOperator};
use crate::solve::rows::{cg_start, check_pagerank, local_dangling};
use crate::solve::{
    drive, initial_scalars, Driven, PageRankGraph, PageRankOptions, Reduce, SolveOptions,
    SolveReport, KERNELS, S_DONE, S_ITER, S_MASS, S_RES,
};

/// The simulation: every rank of a [`SimOperator`] in this process; local vectors are global.
pub struct SimRows<T: PrepareFor> {
    op: SimOperator<T>,
    blocks: Vec<Range<usize>>,
    n: usize,
}

impl<T: PrepareFor> SimRows<T> {
    /// Distributes the square matrix `a` over `parts` simulated ranks (see [`SimOperator::new`]).
    pub fn new(a: &Csr<T>, parts: usize, method: &str, choice: StrategyChoice) -> Result<Self> {
        square(a)?;
        let op = SimOperator::new(a, parts, method, choice)?;
        Ok(SimRows {
            blocks: op.row_blocks(),
            n: a.nrows(),
            op,
        })
    }
    /// The simulation of a square operator built elsewhere, e.g. from ranks that read only
    /// their rows ([`SimOperator::from_blocks`]).
    pub fn from_operator(op: SimOperator<T>) -> Result<Self> {
        let (n, ncols) = op.dims();
        crate::matrix::check_square("a distributed solver needs a square matrix", n, ncols)?;
        Ok(SimRows {
            blocks: op.row_blocks(),
            n,
            op,
        })
    }
    /// The simulated operator (strategy, partition summary).
    pub fn operator(&self) -> &SimOperator<T> {
        &self.op
    }
}

impl<T: PrepareFor> RowOperator<T> for SimRows<T> {
    fn global_rows(&self) -> usize {
        self.n
    }
    fn blocks(&self) -> Vec<Range<usize>> {
        self.blocks.clone()
    }
    fn apply(&mut self, x: &[T], y: &mut [T]) -> Result<()> {
        self.op.apply(T::one(), x, T::zero(), y)
    }
    fn all_reduce_sum(&mut self, _v: &mut [f64]) -> Result<()> {
        // every rank's partial is already in (added in rank order by `global_sums`)
        Ok(())
    }
    fn backend(&self) -> Backend {
        Backend::Cpu
    }
}

fn square<T: Scalar>(a: &Csr<T>) -> Result<()> {
    check_square(
        "a distributed solver needs a square matrix",
        a.nrows(),
        a.ncols(),
    )?;
    Ok(())
}

/// One NCCL rank: its [`DistOperator`] on its GPU. [`NcclRows::cg`] and [`NcclRows::pagerank`]
/// keep every vector and scalar on the device; through [`RowOperator`] (the generic [`cg`] and
/// [`pagerank`]) local vectors are host rows, copied to the device before each SpMV and back
/// after it.
pub struct NcclRows<T: DistScalar> {
    op: DistOperator<T>,
    rows: Range<usize>,
    n: usize,
    /// Wall seconds in the SpMVs and in the all-reduces, accumulated. Through [`RowOperator`]
    /// they include the copies and the waits; in the device-resident solvers they are the host
    /// time to enqueue them (the device work is asynchronous).
    pub spmv_s: f64,
    pub allreduce_s: f64,
    /// All-reduces the device-resident solvers enqueued (one per call of the `Reduce` hook,
    /// with one rank too, where it sums nothing): 2 per iteration for [`NcclRows::cg`], 1 for
    /// [`NcclRows::cg_single_reduction`].
    pub allreduces: usize,
}

impl<T: DistScalar> NcclRows<T> {
    /// Wraps a rank's operator of a square n×n matrix; `rows` are its global rows.
    pub fn new(op: DistOperator<T>, rows: Range<usize>, n: usize) -> Self {
        NcclRows {
            op,
            rows,
            n,
            spmv_s: 0.0,
            allreduce_s: 0.0,
            allreduces: 0,
        }
    }
    pub fn operator(&self) -> &DistOperator<T> {
        &self.op
    }

    /// Conjugate gradient as [`cg`] (from x = 0, stopping at ‖r‖/‖b‖ ≤ tol) with this rank's rows
    /// of x, r, p and q in device memory: p is the operator's owned x, q = A·p its y. `b` is the
    /// rank's rows of b; returns its rows of x. Every rank calls it together.
    pub fn cg(&mut self, b: &[T], opts: &SolveOptions) -> Result<(Vec<T>, SolveReport)> {
        self.device_cg::<CgIteration<T>>(b, opts)
    }

    /// Single-reduction CG as [`cg_single_reduction`] (Chronopoulos & Gear: one all-reduce of
    /// rᵀr and wᵀr per iteration instead of two) with this rank's rows of x, r, w, p and q in
    /// device memory: r is the operator's owned x (the exchange reads it), w = A·r its y. `b` is
    /// the rank's rows of b; returns its rows of x. Every rank calls it together.
    pub fn cg_single_reduction(
        &mut self,
        b: &[T],
        opts: &SolveOptions,
    ) -> Result<(Vec<T>, SolveReport)> {
        self.device_cg::<Cg1Iteration<T>>(b, opts)
    }

    /// The device CG iteration `I` on this rank: its u (p or r) is the operator's owned x, from
    /// b, and v = A·u its y; the sums of an iteration go through `I::SUMS`-long all-reduces.
    fn device_cg<I: DeviceCg<T>>(
        &mut self,
        b: &[T],
        opts: &SolveOptions,
    ) -> Result<(Vec<T>, SolveReport)> {
        let (bb, thresh) = cg_start(self, b, opts)?;
        let gpu = self.op.gpu().clone();
        let start = CgStart::new(bb, thresh, opts, "dist cg: rows");
        let it = I::new(&gpu, b, &start)?;
        self.op.set_x(b)?;
        let s = it.state().scalars();
        let driven = self.drive(s, opts, I::SUMS, |gpu, op, reduce| {
            it.step(gpu, op.x(), op.y(), reduce)
        })?;
        it.state().finish(&gpu, driven, bb, Vec::new())
    }

    /// PageRank as [`pagerank`] (`self` holds the rank's rows of P = Aᵀ D⁻¹, `dangling` is the
    /// global list) with the rank vector in device memory: it is the operator's owned x, updated
    /// in place from P x in the operator's y. Returns the rank's rows of the ranks. Every rank
    /// calls it together.
    pub fn pagerank(
        &mut self,
        dangling: &[Idx],
        opts: &PageRankOptions,
    ) -> Result<(Vec<T>, SolveReport)> {
        let n = self.n;
        check_pagerank(n, dangling, opts)?;
        let len = self.rows.len();
        let mine: Vec<Idx> = local_dangling(dangling, self.rows.start, len)
            .into_iter()
            .map(|i| i as Idx)
            .collect();
        let x0 = T::from_f64(1.0 / n.max(1) as f64);
        let start = vec![x0; len];
        // the initial dangling mass, summed as the generic solver sums it
        let mut mass = [mine.iter().map(|_| x0.to_f64()).sum::<f64>()];
        self.all_reduce_sum(&mut mass)?;
        let gpu = self.op.gpu().clone();
        let mut s0 = initial_scalars(0.0, opts.solve.tol, opts.solve.max_iter);
        s0[S_MASS] = mass[0];
        if n == 0 {
            s0[S_DONE] = 1.0;
        }
        let what = ["dist pagerank: rows", "dist pagerank: dangling nodes"];
        let it = PageRankIteration::new(&gpu, len, n, &mine, opts.damping, &s0, what)?;
        self.op.set_x(&start)?;
        let driven = self.drive(&it.s, &opts.solve, 2, |gpu, op, reduce| {
            it.step(gpu, op.y(), RankVectors::InPlace(op.x()), reduce)
        })?;
        let mut x = vec![T::zero(); len];
        gpu.download(self.op.x(), &mut x)?;
        let residual = if driven.s[S_ITER] as usize == 0 {
            0.0
        } else {
            driven.s[S_RES]
        };
        Ok((x, driven.report(residual, Vec::new())))
    }
}

impl<T: DistScalar> NcclRows<T> {
    /// Enqueues `step` (one device-resident iteration after the operator's SpMV, its sums reduced
    /// through the [`Reduce`] hook it is given: `dist_sum` into a buffer of `red_len` sums, then
    /// the NCCL all-reduce) `check_every` times per check until the device sets the stop flag in
    /// `s`, timing the SpMVs and the all-reduces.
    fn drive(
        &mut self,
        s: &CudaSlice<f64>,
        opts: &SolveOptions,
        red_len: usize,
        mut step: impl FnMut(&Gpu, &DistOperator<T>, &mut Reduce<'_>) -> Result<()>,
    ) -> Result<Driven> {
        let gpu = self.op.gpu().clone();
        let mut red: CudaSlice<f64> = gpu.alloc_zeros(red_len)?;
        let k_sum = gpu.kernel::<T, DistSumArgs>(&KERNELS, "dist_sum")?;
        gpu.synchronize()?;
        self.spmv_s = 0.0;
        self.allreduce_s = 0.0;
        self.allreduces = 0;
        let (op, spmv_s, allreduce_s, count) = (
            &mut self.op,
            &mut self.spmv_s,
            &mut self.allreduce_s,
            &mut self.allreduces,
        );
        drive(&gpu, s, opts.check_every, opts.max_iter, false, |_| {
            let t0 = Instant::now();
            op.apply(T::one(), T::zero())?;
            *spmv_s += t0.elapsed().as_secs_f64();
            let op = &*op;
            let mut all_reduce = |red: &mut CudaSlice<f64>| {
                *count += 1;
                all_reduce_device(op, red, allreduce_s)
            };
            let mut reduce = Reduce::Ranks {
                k_sum: &k_sum,
                red: &mut red,
                all_reduce: &mut all_reduce,
            };
            step(&gpu, op, &mut reduce)
        })
    }
}

/// Sums a small device buffer over the ranks in place (nothing with one rank), adding the host
/// time to `secs`.
fn all_reduce_device<T: DistScalar>(
    op: &DistOperator<T>,
    red: &mut CudaSlice<f64>,
    secs: &mut f64,
) -> Result<()> {
    if let Some(comm) = op.communicator() {
        let t0 = Instant::now();
        comm.all_reduce_sum_device(op.gpu(), red)?;
        *secs += t0.elapsed().as_secs_f64();
    }
    Ok(())
}

impl<T: DistScalar> RowOperator<T> for NcclRows<T> {
    fn global_rows(&self) -> usize {
        self.n
    }
    fn blocks(&self) -> Vec<Range<usize>> {
        vec![self.rows.clone()]
    }
    fn apply(&mut self, x: &[T], y: &mut [T]) -> Result<()> {
        let t0 = Instant::now();
        self.op.set_x(x)?;
        self.op.apply(T::one(), T::zero())?;
        self.op.get_y(y)?;
        self.spmv_s += t0.elapsed().as_secs_f64();
        Ok(())
    }
    fn all_reduce_sum(&mut self, v: &mut [f64]) -> Result<()> {
        if let Some(comm) = self.op.communicator() {
            let t0 = Instant::now();
            let sums = comm.all_reduce_sum(self.op.gpu(), v)?;
            v.copy_from_slice(&sums);
            self.allreduce_s += t0.elapsed().as_secs_f64();
        }
        Ok(())
    }
    fn backend(&self) -> Backend {
        Backend::Gpu
    }
}

/// Which distributed solver a rank runs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Solver {
    /// CG on A x = A·1 ([`crate::solve::CgSystem::ones_solution`]).
    Cg,
    /// PageRank of the adjacency matrix with this damping.
    PageRank { damping: f64 },
}

/// What a solver rank runs.
#[derive(Clone, Debug)]
pub struct SolveRankConfig {
    pub solver: Solver,
    /// Method name or variant for both parts of the operator (`auto` chooses per part).
    pub method: String,
    pub strategy: StrategyChoice,
    pub opts: SolveOptions,
    /// How long to wait for the other ranks at start-up.
    pub connect_timeout: Duration,
    /// CG: the single-reduction iteration ([`NcclRows::cg_single_reduction`], one all-reduce
    /// per iteration) instead of [`NcclRows::cg`] (two).
    pub single_reduction: bool,
    /// Solve in this ordering's numbering ([`Ordered`]): ranks that hold the whole matrix only
    /// ([`run_solve_rank`]; [`run_solve_rank_rows`] refuses it).
    pub reorder: Option<Ordering>,
}

/// A rank's rows of the solution.
pub struct RankSolution<T> {
    /// The values, in the order of the rank's rows.
    pub x: Vec<T>,
    /// Where each value belongs in the matrix's own numbering when the solve was reordered
    /// (the rank's rows are rows of PAPᵀ); `None`: the report's rows `row_start..row_end`.
    pub rows: Option<Vec<Idx>>,
}

/// One solver rank's results, printed by `spmv dist solve-rank` as one JSON line.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SolveRankReport {
    pub rank: usize,
    pub world: usize,
    pub device: String,
    pub strategy: String,
    pub row_start: usize,
    pub row_end: usize,
    pub nnz: usize,
    pub iterations: usize,
    /// Iterations enqueued (≥ `iterations`: the host checks every `check_every`).
    #[serde(default)]
    pub launched: usize,
    pub stop: String,
    pub residual: f64,
    /// Wall time of the iteration loop.
    pub seconds: f64,
    pub us_per_iter: f64,
    /// Of the loop: host µs per enqueued iteration to enqueue the distributed SpMV and the
    /// all-reduces (the vectors and scalars stay on the device and the work is asynchronous:
    /// the device time shows in `us_per_iter`).
    pub spmv_us_per_iter: f64,
    pub allreduce_us_per_iter: f64,
    /// All-reduces per enqueued iteration (CG 2, single-reduction CG and PageRank 1).
    #[serde(default)]
    pub allreduces_per_iter: f64,
    /// Mean host µs to enqueue one x exchange (`DistOperator::exchange_enqueue_us`).
    #[serde(default)]
    pub exchange_enqueue_us: f64,
    /// Method notes of the diagonal part (auto's choice), flattened as "key=value".
    pub diag_notes: Vec<String>,
    /// Building P = Aᵀ D⁻¹ (PageRank) and the right-hand side (CG), and partitioning.
    pub setup_s: f64,
    pub nccl_init_s: f64,
    pub prepare_s: f64,
    pub upload_s: f64,
    /// The reordering ([`SolveRankConfig::reorder`]): its time (preprocessing, apart from
    /// `setup_s`) and the halo volume before and after.
    #[serde(default)]
    pub reorder: Option<OrderedSummary>,
    pub notes: Vec<String>,
}

/// Runs this process's rank of a distributed solve of `a` (the system matrix for CG, the
/// adjacency for PageRank) on its GPU; returns the report and the rank's rows of the solution.
/// With [`SolveRankConfig::reorder`] the rank orders the matrix it distributes (A, or PageRank's
/// transition matrix) as every rank does, the same way ([`Ordered`]), and solves on its rows of
/// PAPᵀ: CG's b from those rows is Pb, PageRank's dangling nodes are renumbered, and the
/// solution says which of A's rows its values are.
pub fn run_solve_rank<T: DistScalar>(
    a: &Csr<T>,
    env: &RankEnv,
    cfg: &SolveRankConfig,
) -> Result<(SolveRankReport, RankSolution<T>)> {
    square(a)?;
    let gpu: Arc<Gpu> = Gpu::get()?;
    let t0 = Instant::now();
    let graph = match cfg.solver {
        Solver::Cg => None,
        Solver::PageRank { .. } => Some(PageRankGraph::from_adjacency(a)?),
    };
    let given = graph.as_ref().map_or(a, |g| &g.transition);
    let t_order = Instant::now();
    let ordered = cfg
        .reorder
        .map(|o| Ordered::new(given, env.world, o))
        .transpose()?;
    let order_s = t_order.elapsed().as_secs_f64();
    let m = ordered.as_ref().map_or(given, |o| &o.matrix);
    let dist = Distribution::new(m, env.world)?;
    let strategy = dist.choose(cfg.strategy);
    let block = dist.block(m, env.rank, strategy);
    let rows = block.rows.clone();
    // CG's b = A·1 on these rows: with a reordering B·1 = P(A·1), the rows of Pb
    let b: Vec<T> = match cfg.solver {
        Solver::Cg => rows
            .clone()
            .into_par_iter()
            .map(|i| T::from_f64(m.row(i).1.iter().map(|v| v.to_f64()).sum()))
            .collect(),
        Solver::PageRank { .. } => Vec::new(),
    };
    let setup_s = t0.elapsed().as_secs_f64() - order_s;
    // the input as loaded, before PageRank's transform: what every rank must agree on
    let comm = Communicator::connect_if_distributed(&gpu, env, a, cfg.connect_timeout)?;
    let nccl_init_s = comm.as_ref().map_or(0.0, |c| c.init_s);
    let op = DistOperator::new(gpu.clone(), comm, env.world, &block, &cfg.method)?;
    let mut rows_op = NcclRows::new(op, rows.clone(), m.nrows());
    let report_x = match (cfg.solver, &graph) {
        (Solver::PageRank { damping }, Some(g)) => {
            let dangling = match &ordered {
                Some(o) => Cow::Owned(o.set(&g.dangling)?),
                None => Cow::Borrowed(&g.dangling[..]),
            };
            let opts = PageRankOptions {
                damping,
                solve: cfg.opts,
            };
            rows_op.pagerank(&dangling, &opts)?
        }
        _ if cfg.single_reduction => rows_op.cg_single_reduction(&b, &cfg.opts)?,
        _ => rows_op.cg(&b, &cfg.opts)?,
    };
    let times = (setup_s, nccl_init_s);
    let (mut report, x) = finish_solve(gpu, env, strategy, rows_op, report_x, times)?;
    if let Some(o) = &ordered {
        if env.rank == 0 {
            report.notes.push(o.summary.note());
        }
        report.reorder = Some(o.summary.clone());
    }
    let rows = ordered.as_ref().map(|o| o.rows_of(rows));
    Ok((report, RankSolution { x, rows }))
}

/// Runs this process's rank of a distributed CG from its own rows only (issue #26): the
/// right-hand side A·1 from its rows, the block set up with the other ranks through NCCL
/// ([`LocalRows::block`](super::local::LocalRows::block)). PageRank needs Aᵀ, so its ranks
/// load the whole adjacency ([`run_solve_rank`]).
pub fn run_solve_rank_rows<T: DistScalar>(
    local: &super::local::LocalRows<T>,
    env: &RankEnv,
    cfg: &SolveRankConfig,
) -> Result<(SolveRankReport, RankSolution<T>)> {
    if let Some(o) = cfg.reorder {
        return Err(Error::InvalidArgument(format!(
            "reorder={o}: a rank that reads only its rows cannot order the matrix (an ordering \
             needs the whole graph); load the whole matrix on every rank (--whole) to reorder"
        )));
    }
    if cfg.solver != Solver::Cg {
        return Err(Error::InvalidArgument(
            "a PageRank rank needs the whole adjacency (Aᵀ), not only its rows".into(),
        ));
    }
    let p = &local.partition;
    if p.row_starts.last() != p.col_starts.last() {
        return Err(Error::InvalidArgument(format!(
            "CG needs a square matrix; this one is {}x{}",
            p.row_starts.last().unwrap_or(&0),
            p.col_starts.last().unwrap_or(&0)
        )));
    }
    let gpu: Arc<Gpu> = Gpu::get()?;
    let comm = super::rank::connect_rows(&gpu, env, local, cfg.connect_timeout)?;
    let nccl_init_s = comm.as_ref().map_or(0.0, |c| c.init_s);
    let t0 = Instant::now();
    let block = super::rank::setup_block(&gpu, comm.as_ref(), local, cfg.strategy)?;
    let strategy = block.strategy;
    let rows = block.rows.clone();
    let a = &local.rows;
    let b: Vec<T> = (0..a.nrows())
        .into_par_iter()
        .map(|i| T::from_f64(a.row(i).1.iter().map(|v| v.to_f64()).sum()))
        .collect();
    let setup_s = t0.elapsed().as_secs_f64();
    let op = DistOperator::new(gpu.clone(), comm, env.world, &block, &cfg.method)?;
    let n = *p.row_starts.last().unwrap_or(&0);
    let mut rows_op = NcclRows::new(op, rows, n);
    let report_x = if cfg.single_reduction {
        rows_op.cg_single_reduction(&b, &cfg.opts)?
    } else {
        rows_op.cg(&b, &cfg.opts)?
    };
    let times = (setup_s, nccl_init_s);
    let (report, x) = finish_solve(gpu, env, strategy, rows_op, report_x, times)?;
    Ok((report, RankSolution { x, rows: None }))
}

/// A solver rank's report from its operator and its solve's outcome.
fn finish_solve<T: DistScalar>(
    gpu: Arc<Gpu>,
    env: &RankEnv,
    strategy: super::partition::Strategy,
    rows_op: NcclRows<T>,
    (x, report): (Vec<T>, SolveReport),
    (setup_s, nccl_init_s): (f64, f64),
) -> Result<(SolveRankReport, Vec<T>)> {
    let info = rows_op.operator().info().clone();
    let rows = rows_op.rows.clone();
    let per_iter = |s: f64| {
        if report.launched == 0 {
            0.0
        } else {
            s * 1e6 / report.launched as f64
        }
    };
    Ok((
        SolveRankReport {
            rank: env.rank,
            world: env.world,
            device: gpu.name().to_string(),
            strategy: strategy_label(env.world, strategy),
            row_start: rows.start,
            row_end: rows.end,
            nnz: info.diag_nnz + info.offd_nnz,
            iterations: report.iterations,
            launched: report.launched,
            stop: report.stop.to_string(),
            residual: report.residual,
            seconds: report.seconds,
            us_per_iter: report.us_per_iter(),
            spmv_us_per_iter: per_iter(rows_op.spmv_s),
            allreduce_us_per_iter: per_iter(rows_op.allreduce_s),
            exchange_enqueue_us: rows_op.operator().exchange_enqueue_us(),
            allreduces_per_iter: if report.launched == 0 {
                0.0
            } else {
                rows_op.allreduces as f64 / report.launched as f64
            },
            diag_notes: flat_notes(&info.diag_notes),
            setup_s,
            nccl_init_s,
            prepare_s: info.prepare_s,
            upload_s: info.upload_s,
            reorder: None,
            notes: report.notes,
        },
        x,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::Strategy;
    use crate::gen;
    use crate::methods::{Plan, PlanOptions};
    use crate::solve::{self as single, CgSystem, Stop};

    fn cpu_plan<T: PrepareFor>(a: &Csr<T>) -> Plan<T> {
        let opts = PlanOptions {
            backend: Some(Backend::Cpu),
            ..PlanOptions::default()
        };
        Plan::new("csr", a, &opts).unwrap()
    }

    fn max_diff<T: Scalar>(a: &[T], b: &[T]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x.to_f64() - y.to_f64()).abs())
            .fold(0.0, f64::max)
    }

    /// Asserts that the ranks `x` are within `err` of the reference `want` in L1 and sum to 1
    /// within `err`.
    fn assert_ranks<T: Scalar>(x: &[T], want: &[f64], err: f64, what: &str) {
        let l1 = crate::solve::check::l1_err(x, want);
        assert!(l1 < err, "{what}: L1 error {l1}");
        let sum: f64 = x.iter().map(|v| v.to_f64()).sum();
        assert!((sum - 1.0).abs() < err, "{what}: sum {sum}");
    }

    fn check_cg<T: PrepareFor>(spec: &str, tol: f64, err: f64) {
        let a = gen::generate::<T>(spec).unwrap();
        let b = CgSystem::ones_solution(&a).b;
        let opts = SolveOptions {
            tol,
            ..SolveOptions::default()
        };
        let (want, wrep) = single::cg(&mut cpu_plan(&a), &b, &opts).unwrap();
        assert_eq!(wrep.stop, Stop::Converged);
        for p in 1..=4 {
            for s in [
                StrategyChoice::Auto,
                StrategyChoice::Force(Strategy::Halo),
                StrategyChoice::Force(Strategy::AllGather),
            ] {
                let mut op = SimRows::new(&a, p, "csr", s).unwrap();
                let (x, rep) = cg(&mut op, &b, &opts).unwrap();
                let what = format!("{spec} {} P={p} {s:?}", T::PRECISION);
                assert_eq!(rep.stop, Stop::Converged, "{what}");
                assert!(rep.residual <= tol, "{what}: {}", rep.residual);
                // the same iteration up to the order of the dot products' additions
                assert!(
                    rep.iterations.abs_diff(wrep.iterations) <= 1,
                    "{what}: {} vs {}",
                    rep.iterations,
                    wrep.iterations
                );
                assert!(max_diff(&x, &want) < err, "{what}");
                let exact = x
                    .iter()
                    .map(|v| (v.to_f64() - 1.0).abs())
                    .fold(0.0, f64::max);
                assert!(exact < err, "{what}: {exact}");
            }
        }
    }

    #[test]
    fn distributed_cg_matches_the_single_process_solve() {
        check_cg::<f64>("poisson3d:8", 1e-8, 1e-6);
        check_cg::<f64>("poisson2d:20", 1e-8, 1e-6);
        check_cg::<f32>("poisson3d:8", 1e-5, 1e-3);
    }

    /// Counts the all-reduces a solver makes through a [`RowOperator`].
    struct Counted<O> {
        op: O,
        reductions: usize,
        applies: usize,
    }

    impl<T: Scalar, O: RowOperator<T>> RowOperator<T> for Counted<O> {
        fn global_rows(&self) -> usize {
            self.op.global_rows()
        }
        fn blocks(&self) -> Vec<Range<usize>> {
            self.op.blocks()
        }
        fn apply(&mut self, x: &[T], y: &mut [T]) -> Result<()> {
            self.applies += 1;
            self.op.apply(x, y)
        }
        fn all_reduce_sum(&mut self, v: &mut [f64]) -> Result<()> {
            self.reductions += 1;
            self.op.all_reduce_sum(v)
        }
        fn backend(&self) -> Backend {
            self.op.backend()
        }
    }

    /// Single-reduction CG converges like plain CG (iterations within 2, the same solution
    /// within the tolerance's reach) on the test problems, P = 1..4 simulated ranks, both
    /// precisions, with one all-reduce per iteration where plain CG makes two.
    #[test]
    fn single_reduction_cg_converges_like_cg_with_one_reduction_per_iteration() {
        fn check<T: PrepareFor>(spec: &str, tol: f64, err: f64) {
            let a = gen::generate::<T>(spec).unwrap();
            let b = CgSystem::ones_solution(&a).b;
            let opts = SolveOptions {
                tol,
                ..SolveOptions::default()
            };
            for p in 1..=4 {
                let sim = |p| SimRows::new(&a, p, "csr", StrategyChoice::Auto).unwrap();
                let mut plain = Counted {
                    op: sim(p),
                    reductions: 0,
                    applies: 0,
                };
                let (x0, r0) = cg(&mut plain, &b, &opts).unwrap();
                let mut one = Counted {
                    op: sim(p),
                    reductions: 0,
                    applies: 0,
                };
                let (x1, r1) = cg_single_reduction(&mut one, &b, &opts).unwrap();
                let what = format!("{spec} {} P={p}", T::PRECISION);
                assert_eq!(
                    (r0.stop, r1.stop),
                    (Stop::Converged, Stop::Converged),
                    "{what}"
                );
                assert!(r1.residual <= tol, "{what}: {}", r1.residual);
                let k = r1.iterations;
                assert!(
                    k.abs_diff(r0.iterations) <= 2,
                    "{what}: {k} vs {}",
                    r0.iterations
                );
                assert!(max_diff(&x0, &x1) < err, "{what}: {}", max_diff(&x0, &x1));
                assert!(x1.iter().all(|v| (v.to_f64() - 1.0).abs() < err), "{what}");
                // plain: ‖b‖², then two per iteration; single: ‖b‖², then one per iteration and
                // one for the check that finds convergence
                assert_eq!(plain.reductions, 1 + 2 * r0.iterations, "{what}");
                assert_eq!(one.reductions, 1 + k + 1, "{what}");
                assert_eq!(one.applies, k + 1, "{what}");
            }
        }
        check::<f64>("poisson3d:8", 1e-10, 1e-7);
        check::<f64>("poisson2d:20", 1e-10, 1e-7);
        check::<f64>("varcoef27:6", 1e-10, 1e-7);
        check::<f32>("poisson3d:8", 1e-5, 1e-3);
    }

    #[test]
    fn single_reduction_cg_stops_like_cg() {
        let a = gen::generate_f64("poisson2d:16").unwrap();
        let b = CgSystem::ones_solution(&a).b;
        let mut op = SimRows::new(&a, 2, "csr", StrategyChoice::Auto).unwrap();
        let opts = SolveOptions {
            max_iter: 3,
            ..SolveOptions::default()
        };
        let (_, rep) = cg_single_reduction(&mut op, &b, &opts).unwrap();
        let (_, plain) = cg(&mut op, &b, &opts).unwrap();
        assert_eq!((rep.stop, rep.iterations), (Stop::MaxIterations, 3));
        assert!((rep.residual - plain.residual).abs() < 1e-9 * plain.residual.max(1.0));
        let (x, rep) =
            cg_single_reduction(&mut op, &vec![0.0; 256], &SolveOptions::default()).unwrap();
        assert_eq!((rep.stop, rep.iterations), (Stop::Converged, 0));
        assert!(x.iter().all(|&v| v == 0.0));
        let indefinite = Csr::<f64>::new(2, 2, vec![0, 1, 2], vec![0, 1], vec![1.0, -1.0]).unwrap();
        let mut op = SimRows::new(&indefinite, 1, "csr", StrategyChoice::Auto).unwrap();
        let (_, rep) = cg_single_reduction(&mut op, &[0.0, 1.0], &SolveOptions::default()).unwrap();
        assert_eq!(rep.stop, Stop::Breakdown);
        assert!(cg_single_reduction(&mut op, &[1.0], &SolveOptions::default()).is_err());
    }

    fn check_pagerank<T: PrepareFor>(name: &str, adj: &Csr<T>, tol: f64, err: f64) {
        let opts = PageRankOptions {
            solve: SolveOptions {
                tol,
                ..PageRankOptions::default().solve
            },
            ..PageRankOptions::default()
        };
        let (want, _) = single::pagerank_reference(adj, &opts);
        let g = PageRankGraph::from_adjacency(adj).unwrap();
        let (single_x, srep) =
            single::pagerank(&mut cpu_plan(&g.transition), &g.dangling, &opts).unwrap();
        for p in 1..=4 {
            for s in [
                StrategyChoice::Auto,
                StrategyChoice::Force(Strategy::Halo),
                StrategyChoice::Force(Strategy::AllGather),
            ] {
                let mut op = SimRows::new(&g.transition, p, "csr", s).unwrap();
                let (x, rep) = pagerank(&mut op, &g.dangling, &opts).unwrap();
                let what = format!("{name} {} P={p} {s:?}", T::PRECISION);
                assert_eq!(rep.stop, Stop::Converged, "{what}");
                assert!(rep.iterations.abs_diff(srep.iterations) <= 1, "{what}");
                assert!(max_diff(&x, &single_x) < err, "{what}");
                assert_ranks(&x, &want, err, &what);
            }
        }
    }

    /// An n-node adjacency matrix in which every third node (i % 3 == 2) has no out-edges and
    /// node i links to `targets(i)` (duplicates merged).
    fn every_third_dangling(n: usize, targets: impl Fn(usize) -> Vec<usize>) -> Csr<f64> {
        let mut ptr = vec![0u32];
        let mut cols = Vec::new();
        for i in 0..n {
            if i % 3 != 2 {
                let mut row: Vec<u32> = targets(i).into_iter().map(|j| j as u32).collect();
                row.sort_unstable();
                row.dedup();
                cols.extend(row);
            }
            ptr.push(cols.len() as u32);
        }
        let vals = vec![1.0; cols.len()];
        Csr::<f64>::new(n, n, ptr, cols, vals).unwrap()
    }

    #[test]
    fn distributed_pagerank_matches_the_reference() {
        let kron = gen::generate_f64("kron:10").unwrap();
        check_pagerank("kron:10", &kron, 1e-10, 1e-8);
        check_pagerank("kron:10", &kron.cast::<f32>(), 1e-5, 1e-4);
        // dangling nodes: every third node has no out-edges
        let n = 300;
        let adj = every_third_dangling(n, |i| vec![(i * 7 + 1) % n, (i * 13 + 5) % n, (i + 1) % n]);
        assert_eq!(
            PageRankGraph::from_adjacency(&adj).unwrap().dangling.len(),
            n / 3
        );
        check_pagerank("dangling", &adj, 1e-10, 1e-8);
        check_pagerank("dangling", &adj.cast::<f32>(), 1e-5, 1e-4);
    }

    /// A one-rank world on this GPU (no communicator), or `None` (`test` skipped) without a
    /// GPU; a failure under `SPMVKIT_REQUIRE_GPU=1`.
    fn one_rank<T: DistScalar>(a: &Csr<T>, test: &str) -> Option<NcclRows<T>> {
        let gpu = crate::testing::gpu_or_skip(test)?;
        let dist = Distribution::new(a, 1).unwrap();
        let block = dist.block(a, 0, dist.choose(StrategyChoice::Auto));
        let rows = block.rows.clone();
        let op = DistOperator::new(gpu, None, 1, &block, "csr-vector").unwrap();
        Some(NcclRows::new(op, rows, a.nrows()))
    }

    fn check_cg_device<T: DistScalar>(spec: &str, tol: f64, err: f64) -> bool {
        let a = gen::generate::<T>(spec).unwrap();
        let b = CgSystem::ones_solution(&a).b;
        let Some(mut rows) = one_rank(&a, "gpu_device_cg_matches_the_host_iteration") else {
            return false;
        };
        let what = format!("{spec} {}", T::PRECISION);
        for check_every in [1, 7] {
            let opts = SolveOptions {
                tol,
                check_every,
                ..SolveOptions::default()
            };
            let (want, wrep) = cg(
                &mut SimRows::new(&a, 2, "csr", StrategyChoice::Auto).unwrap(),
                &b,
                &opts,
            )
            .unwrap();
            // the host-vector path through the same operator
            let (host, hrep) = cg(&mut rows, &b, &opts).unwrap();
            let (x, rep) = rows.cg(&b, &opts).unwrap();
            assert_eq!(rep.stop, Stop::Converged, "{what}");
            assert_eq!(rep.backend, Backend::Gpu, "{what}");
            assert!(rep.residual <= tol, "{what}: {}", rep.residual);
            assert!(
                rep.launched >= rep.iterations && rep.launched % check_every == 0,
                "{what}"
            );
            for (w, it) in [("sim", wrep.iterations), ("host", hrep.iterations)] {
                assert!(
                    rep.iterations.abs_diff(it) <= 1,
                    "{what} vs {w}: {} vs {it}",
                    rep.iterations
                );
            }
            assert!(max_diff(&x, &want) < err, "{what}");
            assert!(max_diff(&x, &host) < err, "{what}");
        }
        // the iteration limit, and a zero right-hand side
        let opts = SolveOptions {
            max_iter: 3,
            ..SolveOptions::default()
        };
        let (_, rep) = rows.cg(&b, &opts).unwrap();
        assert_eq!(
            (rep.stop, rep.iterations),
            (Stop::MaxIterations, 3),
            "{what}"
        );
        let zero = vec![T::zero(); b.len()];
        let (x, rep) = rows.cg(&zero, &SolveOptions::default()).unwrap();
        assert_eq!((rep.stop, rep.iterations), (Stop::Converged, 0), "{what}");
        assert!(x.iter().all(|v| v.to_f64() == 0.0), "{what}");
        true
    }

    /// The device single-reduction CG on one rank (the NCCL rank's code with its all-reduce hook,
    /// which sums nothing with one rank): converges like the device CG and the simulated
    /// single-reduction CG, calls the hook once per enqueued iteration where CG calls it twice,
    /// and stops at the iteration limit, on a zero right-hand side and on an indefinite matrix.
    #[test]
    fn gpu_device_single_reduction_cg_makes_one_all_reduce_per_iteration() {
        fn check<T: DistScalar>(spec: &str, tol: f64, err: f64) -> bool {
            let _guard = crate::methods::testmats::gpu_test_lock();
            let test = "gpu_device_single_reduction_cg_makes_one_all_reduce_per_iteration";
            let a = gen::generate::<T>(spec).unwrap();
            let b = CgSystem::ones_solution(&a).b;
            let Some(mut rows) = one_rank(&a, test) else {
                return false;
            };
            let what = format!("{spec} {}", T::PRECISION);
            for check_every in [1, 7] {
                let opts = SolveOptions {
                    tol,
                    check_every,
                    ..SolveOptions::default()
                };
                let (x0, r0) = rows.cg(&b, &opts).unwrap();
                let plain = rows.allreduces;
                let (x1, r1) = rows.cg_single_reduction(&b, &opts).unwrap();
                let single = rows.allreduces;
                let (want, wrep) = cg_single_reduction(
                    &mut SimRows::new(&a, 2, "csr", StrategyChoice::Auto).unwrap(),
                    &b,
                    &opts,
                )
                .unwrap();
                assert_eq!(
                    (r0.stop, r1.stop),
                    (Stop::Converged, Stop::Converged),
                    "{what}"
                );
                assert!(r1.residual <= tol, "{what}: {}", r1.residual);
                assert!(r1.iterations.abs_diff(r0.iterations) <= 2, "{what}");
                assert!(r1.iterations.abs_diff(wrep.iterations) <= 1, "{what}");
                assert!(
                    max_diff(&x1, &x0) < err && max_diff(&x1, &want) < err,
                    "{what}"
                );
                assert_eq!(plain, 2 * r0.launched, "{what}: CG's all-reduces");
                assert_eq!(single, r1.launched, "{what}: one all-reduce per iteration");
            }
            let opts = SolveOptions {
                max_iter: 3,
                ..SolveOptions::default()
            };
            let (_, rep) = rows.cg_single_reduction(&b, &opts).unwrap();
            assert_eq!(
                (rep.stop, rep.iterations),
                (Stop::MaxIterations, 3),
                "{what}"
            );
            let zero = vec![T::zero(); b.len()];
            let (x, rep) = rows
                .cg_single_reduction(&zero, &SolveOptions::default())
                .unwrap();
            assert_eq!((rep.stop, rep.iterations), (Stop::Converged, 0), "{what}");
            assert!(x.iter().all(|v| v.to_f64() == 0.0), "{what}");
            true
        }
        if !check::<f64>("poisson3d:8", 1e-8, 1e-6) {
            return;
        }
        check::<f64>("poisson2d:20", 1e-8, 1e-6);
        check::<f32>("poisson3d:8", 1e-5, 1e-3);
        let ind = Csr::<f64>::new(2, 2, vec![0, 1, 2], vec![0, 1], vec![1.0, -1.0]).unwrap();
        let _guard = crate::methods::testmats::gpu_test_lock();
        if let Some(mut rows) = one_rank(&ind, "gpu_device_single_reduction_cg") {
            let (_, rep) = rows
                .cg_single_reduction(&[0.0, 1.0], &SolveOptions::default())
                .unwrap();
            assert_eq!(rep.stop, Stop::Breakdown);
        }
    }

    #[test]
    fn gpu_device_cg_matches_the_host_iteration() {
        let _guard = crate::methods::testmats::gpu_test_lock();
        if !check_cg_device::<f64>("poisson3d:8", 1e-8, 1e-6) {
            return;
        }
        check_cg_device::<f64>("poisson2d:20", 1e-8, 1e-6);
        check_cg_device::<f32>("poisson3d:8", 1e-5, 1e-3);
        // an indefinite matrix breaks down
        let ind = Csr::<f64>::new(2, 2, vec![0, 1, 2], vec![0, 1], vec![1.0, -1.0]).unwrap();
        let mut rows = one_rank(&ind, "gpu_device_cg_matches_the_host_iteration").unwrap();
        let (_, rep) = rows.cg(&[0.0, 1.0], &SolveOptions::default()).unwrap();
        assert_eq!(rep.stop, Stop::Breakdown);
    }

    fn check_pagerank_device<T: DistScalar>(name: &str, adj: &Csr<T>, tol: f64, err: f64) -> bool {
        let g = PageRankGraph::from_adjacency(adj).unwrap();
        let Some(mut rows) = one_rank(&g.transition, "gpu_device_pagerank_matches_the_reference")
        else {
            return false;
        };
        let what = format!("{name} {}", T::PRECISION);
        for check_every in [1, 5] {
            let opts = PageRankOptions {
                solve: SolveOptions {
                    tol,
                    check_every,
                    ..PageRankOptions::default().solve
                },
                ..PageRankOptions::default()
            };
            let (want, _) = single::pagerank_reference(adj, &opts);
            let mut sim = SimRows::new(&g.transition, 3, "csr", StrategyChoice::Auto).unwrap();
            let (sx, srep) = pagerank(&mut sim, &g.dangling, &opts).unwrap();
            let (x, rep) = rows.pagerank(&g.dangling, &opts).unwrap();
            assert_eq!(rep.stop, Stop::Converged, "{what}");
            assert!(
                rep.iterations.abs_diff(srep.iterations) <= 1,
                "{what}: {} vs {}",
                rep.iterations,
                srep.iterations
            );
            assert!(rep.residual <= tol, "{what}");
            assert!(max_diff(&x, &sx) < err, "{what}");
            assert_ranks(&x, &want, err, &what);
        }
        let opts = PageRankOptions {
            solve: SolveOptions {
                max_iter: 4,
                tol: 0.0,
                ..PageRankOptions::default().solve
            },
            ..PageRankOptions::default()
        };
        let (_, rep) = rows.pagerank(&g.dangling, &opts).unwrap();
        assert_eq!(
            (rep.stop, rep.iterations),
            (Stop::MaxIterations, 4),
            "{what}"
        );
        true
    }

    #[test]
    fn gpu_device_pagerank_matches_the_reference() {
        let _guard = crate::methods::testmats::gpu_test_lock();
        let kron = gen::generate_f64("kron:10").unwrap();
        if !check_pagerank_device("kron:10", &kron, 1e-10, 1e-8) {
            return;
        }
        check_pagerank_device("kron:10", &kron.cast::<f32>(), 1e-5, 1e-4);
        // every third node dangling
        let n = 300;
        let adj = every_third_dangling(n, |i| vec![(i + 1) % n, (i * 7 + 2) % n]);
        check_pagerank_device("dangling", &adj, 1e-10, 1e-8);
    }

    #[test]
    fn bad_input_is_an_error() {
        let wide = Csr::<f64>::new(1, 2, vec![0, 1], vec![0], vec![1.0]).unwrap();
        assert!(SimRows::new(&wide, 2, "csr", StrategyChoice::Auto).is_err());
        let a = gen::generate_f64("poisson2d:6").unwrap();
        let mut op = SimRows::new(&a, 2, "csr", StrategyChoice::Auto).unwrap();
        assert!(cg(&mut op, &[1.0; 5], &SolveOptions::default()).is_err());
        let bad = PageRankOptions {
            damping: 1.5,
            ..PageRankOptions::default()
        };
        assert!(pagerank(&mut op, &[], &bad).is_err());
        assert!(pagerank(&mut op, &[99], &PageRankOptions::default()).is_err());
        // an indefinite matrix breaks down, as in the single-process CG
        let ind = Csr::<f64>::new(2, 2, vec![0, 1, 2], vec![0, 1], vec![1.0, -1.0]).unwrap();
        let mut op = SimRows::new(&ind, 2, "csr", StrategyChoice::Auto).unwrap();
        let (_, rep) = cg(&mut op, &[0.0, 1.0], &SolveOptions::default()).unwrap();
        assert_eq!(rep.stop, Stop::Breakdown);
    }
}
