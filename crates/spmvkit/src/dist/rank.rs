//! One rank's whole run (issue #12): distribute the matrix, join the NCCL world, build the
//! rank's [`DistOperator`], check one y = αAx + βy on its rows against the f64 oracle, and time
//! the full call, the exchange alone and the local computation alone (CUDA events on the
//! compute stream, median of K samples of N calls, as `spmv run`). Every rank runs the same
//! sequence of collectives, so the timings of all ranks are taken in lockstep.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::bootstrap::RankEnv;
use super::local::{LocalRows, SetupExchange, Solo};
use super::nccl::comm::CommSetup;
use super::nccl::{Communicator, DistOperator, DistScalar, OperatorInfo};
use super::partition::{Distribution, RankBlock, Strategy, StrategyChoice};
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
    /// Mean host µs to enqueue one exchange ([`DistOperator::exchange_enqueue_us`]).
    #[serde(default)]
    pub exchange_enqueue_us: f64,
    pub partition_s: f64,
    pub nccl_init_s: f64,
    /// How the rank got its rows: `rows` (read or generated only its rows, issue #26) or
    /// `whole` (loaded the whole matrix and kept its rows).
    #[serde(default)]
    pub input: String,
    pub prepare_s: f64,
    pub upload_s: f64,
}

/// The x and initial y every rank (and the oracle) uses: deterministic, O(1) magnitudes.
pub fn test_vectors<T: Scalar>(nrows: usize, ncols: usize) -> (Vec<T>, Vec<T>) {
    (test_x(ncols), test_y(0..nrows))
}

/// [`test_vectors`]'s x.
pub fn test_x<T: Scalar>(ncols: usize) -> Vec<T> {
    (0..ncols)
        .map(|j| T::from_f64(((j * 7919) % 23) as f64 / 11.0 - 1.0))
        .collect()
}

/// [`test_vectors`]'s y, rows `rows` only.
pub fn test_y<T: Scalar>(rows: std::ops::Range<usize>) -> Vec<T> {
    rows.map(|i| T::from_f64(((i * 104729) % 17) as f64 / 8.0 - 1.0))
        .collect()
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
    let rows = block.rows.clone();
    let run = Run {
        a,
        rows_in_a: rows,
        ncols: a.ncols(),
        partition_s,
        input: "whole",
    };
    run.finish(gpu, comm, block, env, cfg)
}

/// Runs this process's rank from its own rows only (issue #26): joins the world with the
/// rows' identity, sets up its block with the other ranks through NCCL
/// ([`LocalRows::block`] over [`CommSetup`]), then checks and times it as [`run_rank`] does.
pub fn run_rank_rows<T: DistScalar>(
    local: &LocalRows<T>,
    env: &RankEnv,
    cfg: &RankConfig,
) -> Result<RankReport> {
    let gpu = Gpu::get()?;
    let comm = connect_rows(&gpu, env, local, cfg.connect_timeout)?;
    let t0 = Instant::now();
    let block = setup_block(&gpu, comm.as_ref(), local, cfg.strategy)?;
    let run = Run {
        a: &local.rows,
        rows_in_a: 0..local.rows.nrows(),
        ncols: local.rows.ncols(),
        partition_s: t0.elapsed().as_secs_f64(),
        input: "rows",
    };
    run.finish(gpu, comm, block, env, cfg)
}

/// Joins the world of `env` with the identity of a rank's rows (no communicator for one rank).
pub(crate) fn connect_rows<T: Scalar>(
    gpu: &Gpu,
    env: &RankEnv,
    local: &LocalRows<T>,
    timeout: Duration,
) -> Result<Option<Communicator>> {
    if local.rank != env.rank || local.partition.parts() != env.world {
        return Err(crate::error::Error::InvalidArgument(format!(
            "rank {} of {} holds the rows of rank {} of {}",
            env.rank,
            env.world,
            local.rank,
            local.partition.parts()
        )));
    }
    if env.world <= 1 {
        return Ok(None);
    }
    Communicator::connect(gpu, env, &local.identity, timeout).map(Some)
}

/// A rank's block from its own rows, set up with the others through `comm`.
pub(crate) fn setup_block<T: DistScalar>(
    gpu: &Gpu,
    comm: Option<&Communicator>,
    local: &LocalRows<T>,
    choice: StrategyChoice,
) -> Result<RankBlock<T>> {
    let mut solo = Solo;
    let mut setup;
    let ex: &mut dyn SetupExchange = match comm {
        Some(comm) => {
            setup = CommSetup { comm, gpu };
            &mut setup
        }
        None => &mut solo,
    };
    Ok(local.block(ex, choice)?.0)
}

/// What [`run_rank`] and [`run_rank_rows`] share after the block is built: the matrix whose
/// rows `rows_in_a` are the rank's (for the oracle).
struct Run<'a, T> {
    a: &'a Csr<T>,
    rows_in_a: std::ops::Range<usize>,
    ncols: usize,
    partition_s: f64,
    input: &'static str,
}

impl<T: DistScalar> Run<'_, T> {
    fn finish(
        self,
        gpu: std::sync::Arc<Gpu>,
        comm: Option<Communicator>,
        block: RankBlock<T>,
        env: &RankEnv,
        cfg: &RankConfig,
    ) -> Result<RankReport> {
        let strategy = block.strategy;
        let nccl_init_s = comm.as_ref().map_or(0.0, |c| c.init_s);
        let mut op = DistOperator::new(gpu.clone(), comm, env.world, &block, &cfg.method)?;
        let (alpha, beta) = (T::from_f64(cfg.alpha), T::from_f64(cfg.beta));

        // one checked call
        let x = test_x::<T>(self.ncols);
        let (rows, cols) = (block.rows.clone(), block.cols.clone());
        let y0 = test_y::<T>(rows.clone());
        op.set_x(&x[cols])?;
        op.set_y(&y0)?;
        op.apply(alpha, beta)?;
        let mut y = vec![T::zero(); rows.len()];
        op.get_y(&mut y)?;
        let want = oracle_spmv_rows(self.a, self.rows_in_a.clone(), alpha, &x, beta, &y0)?;
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
            exchange_enqueue_us: op.exchange_enqueue_us(),
            partition_s: self.partition_s,
            nccl_init_s,
            input: self.input.into(),
            prepare_s: info.prepare_s,
            upload_s: info.upload_s,
        })
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::local::RowSource;

    /// One GPU rank built from its rows only (a cache file by byte range, a row-range
    /// generator) checks y = αAx + βy against the oracle, as `spmv dist run --gpus 1` does.
    #[test]
    fn gpu_a_rank_from_its_rows_matches_the_oracle() {
        let _guard = crate::methods::testmats::gpu_test_lock();
        if crate::testing::gpu_or_skip("gpu_a_rank_from_its_rows_matches_the_oracle").is_none() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.spmvkit");
        crate::io::write_cache(
            &path,
            &crate::gen::generate_f64("powerlaw:3000,7").unwrap(),
            None,
        )
        .unwrap();
        let cfg = RankConfig {
            method: "auto".into(),
            strategy: StrategyChoice::Auto,
            alpha: 1.5,
            beta: -0.75,
            timing: TimingConfig {
                warmup: 1,
                calls: 2,
                samples: 2,
            },
            connect_timeout: Duration::from_secs(5),
        };
        let env = RankEnv::new(0, 1, None, None);
        for source in [
            RowSource::<f64>::Cache(path.clone()),
            RowSource::for_matrix("poisson3d:12", None, true)
                .unwrap()
                .unwrap(),
        ] {
            let local = source.load(0, 1).unwrap();
            let r = run_rank_rows(&local, &env, &cfg).unwrap();
            assert!(r.check_ok, "{}", r.max_rel_err);
            assert_eq!(r.input, "rows");
        }
        let local = RowSource::<f32>::Cache(path).load(0, 1).unwrap();
        assert!(run_rank_rows(&local, &env, &cfg).unwrap().check_ok);
        // rows of another world are refused
        let other = RowSource::<f64>::for_matrix("poisson3d:12", None, true)
            .unwrap()
            .unwrap()
            .load(1, 2)
            .unwrap();
        assert!(run_rank_rows(&other, &env, &cfg).is_err());
    }
}
