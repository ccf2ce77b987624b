//! One rank's whole run (issue #12): distribute the matrix, join the NCCL world, build the
//! rank's [`DistOperator`], check one y = αAx + βy on its rows against the f64 oracle, and time
//! the full call, the exchange alone and the local computation alone (CUDA events on the
//! compute stream, median of K samples of N calls, as `spmv run`). Every rank runs the same
//! sequence of collectives, so the timings of all ranks are taken in lockstep.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::bootstrap::RankEnv;
use super::nccl::{Communicator, DistOperator, DistScalar, OperatorInfo};
use super::partition::{Distribution, Strategy, StrategyChoice};
use crate::cpu::{check, oracle_spmv_rows};
use crate::error::Result;
use crate::gpu::{time_stream, Gpu, TimingConfig};
use crate::matrix::Csr;
use crate::scalar::Scalar;

/// What a rank runs.
#[derive(Clone, Debug)]
pub struct RankConfig {
    /// Method name or variant for both parts (`auto` chooses per part).
    pub method: String,
    pub strategy: StrategyChoice,
    pub alpha: f64,
    pub beta: f64,
    pub timing: TimingConfig,
    /// How long to wait for the other ranks at start-up.
    pub connect_timeout: Duration,
}

/// One rank's results, printed by `spmv dist rank` as one JSON line.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RankReport {
    pub rank: usize,
    pub world: usize,
    pub device: String,
    pub strategy: String,
    pub rows: usize,
    pub diag_nnz: usize,
    pub offd_nnz: usize,
    pub ghosts: usize,
    pub send: usize,
    /// Method notes of the two parts (auto's choice), flattened as "key=value".
    pub diag_notes: Vec<String>,
    pub offd_notes: Vec<String>,
    pub check_ok: bool,
    pub max_rel_err: f64,
    /// Median per-call µs: the full distributed call, the exchange alone, the local parts alone.
    pub apply_us: f64,
    pub exchange_us: f64,
    pub compute_us: f64,
    pub partition_s: f64,
    pub nccl_init_s: f64,
    pub prepare_s: f64,
    pub upload_s: f64,
}

/// The x and initial y every rank (and the oracle) uses: deterministic, O(1) magnitudes.
pub fn test_vectors<T: Scalar>(nrows: usize, ncols: usize) -> (Vec<T>, Vec<T>) {
    let x = (0..ncols)
        .map(|j| T::from_f64(((j * 7919) % 23) as f64 / 11.0 - 1.0))
        .collect();
    let y = (0..nrows)
        .map(|i| T::from_f64(((i * 104729) % 17) as f64 / 8.0 - 1.0))
        .collect();
    (x, y)
}

/// Runs this process's rank of `a` on its GPU ([`Gpu::get`]: the launcher sets
/// `CUDA_VISIBLE_DEVICES` so each rank sees its own GPU as device 0).
pub fn run_rank<T: DistScalar>(a: &Csr<T>, env: &RankEnv, cfg: &RankConfig) -> Result<RankReport> {
    let gpu = Gpu::get()?;
    let t0 = Instant::now();
    let dist = Distribution::new(a, env.world)?;
    let strategy = dist.choose(cfg.strategy);
    let block = dist.block(a, env.rank, strategy);
    let partition_s = t0.elapsed().as_secs_f64();
    let comm = Communicator::connect_if_distributed(&gpu, env, a, cfg.connect_timeout)?;
    let nccl_init_s = comm.as_ref().map_or(0.0, |c| c.init_s);
    let mut op = DistOperator::new(gpu.clone(), comm, env.world, &block, &cfg.method)?;
    let (alpha, beta) = (T::from_f64(cfg.alpha), T::from_f64(cfg.beta));

    // one checked call
    let (x, y0) = test_vectors::<T>(a.nrows(), a.ncols());
    let (rows, cols) = (block.rows.clone(), block.cols.clone());
    op.set_x(&x[cols])?;
    op.set_y(&y0[rows.clone()])?;
    op.apply(alpha, beta)?;
    let mut y = vec![T::zero(); rows.len()];
    op.get_y(&mut y)?;
    let want = oracle_spmv_rows(a, rows.clone(), alpha, &x, beta, &y0[rows])?;
    let c = check(&want, &y);

    let barrier = |op: &DistOperator<T>| -> Result<()> {
        match op.communicator() {
            Some(comm) => comm.barrier(op.gpu()),
            None => op.gpu().synchronize(),
        }
    };
    barrier(&op)?;
    let apply = time_stream(&gpu, &cfg.timing, || op.apply(alpha, beta))?;
    barrier(&op)?;
    let exchange = if env.world > 1 {
        time_stream(&gpu, &cfg.timing, || op.exchange_only())?.median_us
    } else {
        0.0
    };
    barrier(&op)?;
    let compute = time_stream(&gpu, &cfg.timing, || op.compute_only(alpha, beta))?;
    barrier(&op)?;

    let info: OperatorInfo = op.info().clone();
    Ok(RankReport {
        rank: env.rank,
        world: env.world,
        device: gpu.name().to_string(),
        strategy: strategy_label(env.world, strategy),
        rows: info.rows,
        diag_nnz: info.diag_nnz,
        offd_nnz: info.offd_nnz,
        ghosts: info.ghosts,
        send: info.send,
        diag_notes: flat_notes(&info.diag_notes),
        offd_notes: flat_notes(&info.offd_notes),
        check_ok: c.ok,
        max_rel_err: c.max_rel_err,
        apply_us: apply.median_us,
        exchange_us: exchange,
        compute_us: compute.median_us,
        partition_s,
        nccl_init_s,
        prepare_s: info.prepare_s,
        upload_s: info.upload_s,
    })
}

/// The strategy a rank reports: `none` in a world of one rank.
pub(crate) fn strategy_label(world: usize, strategy: Strategy) -> String {
    if world > 1 {
        strategy.to_string()
    } else {
        "none".into()
    }
}

/// A part's notes as `key=value` lines.
pub(crate) fn flat_notes(notes: &[(String, String)]) -> Vec<String> {
    notes.iter().map(|(k, v)| format!("{k}={v}")).collect()
}

/// The strategy a world of `world` ranks would use for `a` (what every rank computes).
pub fn planned_strategy<T: Scalar>(
    a: &Csr<T>,
    world: usize,
    choice: StrategyChoice,
) -> Result<Strategy> {
    Ok(Distribution::new(a, world)?.choose(choice))
}
