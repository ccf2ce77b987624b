//! What `spmv dist` (`cmd_dist.rs`) and the distributed solvers (`cmd_dist_solve.rs`) share:
//! the options every rank is given, the call of the library's rank launcher
//! (`spmvkit::dist::launch`) that starts them as child processes of this binary, and the reading
//! of the reports they print.

use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use clap::Args;
use serde::de::DeserializeOwned;
use spmvkit::dist::launch::{self, Spawned};

use spmvkit::dist::bootstrap::RankEnv;
use spmvkit::dist::launchers;
use spmvkit::dist::local::RowSource;
use spmvkit::dist::nccl;
use spmvkit::{Precision, Scalar};

pub(crate) use spmvkit::dist::launch::REPORT_PREFIX;

/// The options of every distributed command that its ranks need too: how each rank runs its
/// parts and how the ranks start.
#[derive(Args, Clone)]
pub(crate) struct PartOptions {
    /// Method for the diagonal and off-diagonal parts (`auto` chooses per part).
    #[arg(short, long, default_value = "auto")]
    pub(crate) method: String,
    /// x exchange: auto (by volume), allgather or halo.
    #[arg(long, default_value = "auto")]
    pub(crate) strategy: String,
    /// Value precision.
    #[arg(short, long, default_value = "f64", value_parser = ["f32", "f64"])]
    pub(crate) precision: String,
    /// Do not read or write the binary cache.
    #[arg(long)]
    pub(crate) no_cache: bool,
    /// Every rank loads the whole matrix and keeps its rows. By default a rank reads only its
    /// rows when the source allows it: a .spmvkit file or a Matrix Market file through its
    /// cache (byte ranges), or a generator that builds row ranges (stencils, banded, uniform,
    /// powerlaw, ...); kron, rgg and delaunay are always generated whole.
    #[arg(long)]
    pub(crate) whole: bool,
    /// Seconds to wait for all ranks at start-up.
    #[arg(long, default_value_t = 300)]
    pub(crate) connect_timeout: u64,
}

impl PartOptions {
    /// The flags that pass these options on to a rank.
    pub(crate) fn forward(&self) -> Vec<String> {
        let mut v = flags([
            ("--method", self.method.clone()),
            ("--strategy", self.strategy.clone()),
            ("--precision", self.precision.clone()),
            ("--connect-timeout", self.connect_timeout.to_string()),
        ]);
        if self.no_cache {
            v.push("--no-cache".into());
        }
        if self.whole {
            v.push("--whole".into());
        }
        v
    }

    /// Where a rank reads only its rows from, or `None` when it loads the whole matrix
    /// (`--whole`, or a source that cannot give its rows alone).
    pub(crate) fn row_source<T: Scalar>(&self, matrix: &str) -> Result<Option<RowSource<T>>> {
        if self.whole {
            return Ok(None);
        }
        Ok(RowSource::for_matrix(matrix, None, !self.no_cache)?)
    }
}

/// Each flag followed by its value, in order: the arguments that pass options on to a rank.
pub(crate) fn flags<const N: usize>(pairs: [(&str, String); N]) -> Vec<String> {
    pairs
        .into_iter()
        .flat_map(|(flag, value)| [flag.to_string(), value])
        .collect()
}

/// `prefix` (the subcommand and its positional arguments) followed by `rest`.
pub(crate) fn rank_command(prefix: &[&str], rest: Vec<String>) -> Vec<String> {
    prefix.iter().map(|s| s.to_string()).chain(rest).collect()
}

/// Starts `gpus` ranks (this binary with `rank_args`, one per GPU, NCCL found for them) through
/// [`spmvkit::dist::launch`], building the binary cache of a matrix file first so the ranks
/// only read it, and collects the line each prints after [`REPORT_PREFIX`].
pub(crate) fn spawn_ranks(
    matrix: &str,
    gpus: usize,
    visible: usize,
    rank_args: &[String],
    part: &PartOptions,
) -> Result<Spawned> {
    let (connect_timeout, no_cache) = (part.connect_timeout, part.no_cache);
    let precision: Precision = part.precision.parse()?;
    let world = launch::plan_world(gpus, visible)?;
    // a matrix file: build the binary cache (in the ranks' precision) once here, so the ranks
    // only read it, by byte range
    if std::path::Path::new(matrix).exists() && !no_cache {
        match precision {
            Precision::F32 => spmvkit::io::ensure_cache::<f32>(matrix, None).map(|_| ())?,
            Precision::F64 => spmvkit::io::ensure_cache::<f64>(matrix, None).map(|_| ())?,
        }
    }
    let exe = std::env::current_exe().context("finding the spmv executable")?;
    Ok(launch::spawn_ranks(
        world,
        matrix,
        &exe,
        rank_args,
        Duration::from_secs(connect_timeout),
    )?)
}

/// The ranks' report lines ([`Spawned::reports`], in rank order) parsed as `R`; a rank that
/// printed none, or a line that does not parse, is an error naming the rank.
pub(crate) fn parse_reports<R: DeserializeOwned>(reports: Vec<Option<String>>) -> Result<Vec<R>> {
    reports
        .into_iter()
        .enumerate()
        .map(|(r, j)| {
            let j = j.ok_or_else(|| anyhow!("rank {r} printed no report"))?;
            serde_json::from_str::<R>(&j).with_context(|| format!("rank {r}'s report"))
        })
        .collect()
}

/// This process's rank environment under any launcher (`spmv dist run`, torchrun, mpirun,
/// srun), with the process made ready for it before CUDA or NCCL start: the local rank's GPU
/// (`CUDA_VISIBLE_DEVICES`), NVLink multicast off, NCCL's library directory on
/// `LD_LIBRARY_PATH` (by restarting this process once, since the loader reads it at start), and
/// on rank 0 of a standard launch the rendezvous served at the master address. `started_by`
/// names the command that starts this rank, for the error when no launcher's variables are set.
pub(crate) fn rank_env(started_by: &str) -> Result<(RankEnv, Option<Rendezvous0>)> {
    let env = RankEnv::from_env()?.ok_or_else(|| {
        anyhow!(
            "this rank is started by {started_by} or by torchrun, mpirun or srun: none of \
             {} is set (docs/multi-gpu.md)",
            launchers::rank_variables()
        )
    })?;
    if env.launcher != launchers::Launcher::Spmvkit {
        let visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
        if let Some(dev) = env.cuda_visible_devices(visible.as_deref())? {
            std::env::set_var("CUDA_VISIBLE_DEVICES", dev);
        }
        if std::env::var_os("NCCL_NVLS_ENABLE").is_none() {
            std::env::set_var("NCCL_NVLS_ENABLE", "0");
        }
        if env.world > 1 && !nccl::loadable() && std::env::var_os(REEXEC).is_none() {
            if let Some(lp) = nccl::NcclSetup::detect().child_library_path() {
                use std::os::unix::process::CommandExt;
                let exe = std::env::current_exe().context("finding the spmv executable")?;
                let err = std::process::Command::new(exe)
                    .args(std::env::args_os().skip(1))
                    .env("LD_LIBRARY_PATH", lp)
                    .env(REEXEC, "1")
                    .exec();
                return Err(anyhow!("restarting with NCCL's library path: {err}"));
            }
        }
    }
    let timeout = Duration::from_secs(RENDEZVOUS_WAIT_S);
    let server = env.start_rendezvous(timeout)?.map(Rendezvous0);
    Ok((env, server))
}

/// Set in a rank restarted with NCCL's library path, so it restarts only once.
const REEXEC: &str = "SPMVKIT_DIST_REEXEC";
/// How long rank 0 serves the rendezvous of a standard launch for the other ranks.
const RENDEZVOUS_WAIT_S: u64 = 600;

/// The rendezvous rank 0 of a standard launch serves; [`Rendezvous0::finish`] reports what it
/// dropped once the run is over.
pub(crate) struct Rendezvous0(
    std::thread::JoinHandle<spmvkit::Result<Vec<spmvkit::dist::bootstrap::Dropped>>>,
);

impl Rendezvous0 {
    pub(crate) fn finish(self) {
        match self.0.join() {
            Ok(Ok(dropped)) => {
                for d in dropped {
                    eprintln!("rendezvous: dropped {d}");
                }
            }
            Ok(Err(e)) => eprintln!("rendezvous: {e}"),
            Err(_) => eprintln!("rendezvous: the serving thread panicked"),
        }
    }
}
