//! What `spmv dist` (`cmd_dist.rs`) and the distributed solvers (`cmd_dist_solve.rs`) share:
//! the options every rank is given, and the launcher that starts the ranks as child processes
//! of this binary and collects their reports.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use spmvkit::dist::bootstrap::{Rendezvous, Token, ENV_RANK, ENV_ROOT, ENV_TOKEN, ENV_WORLD};
use spmvkit::dist::nccl::NcclSetup;

use crate::input;

pub(crate) const REPORT_PREFIX: &str = "SPMVKIT-RANK-REPORT ";

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
    /// Seconds to wait for all ranks at start-up.
    #[arg(long, default_value_t = 300)]
    pub(crate) connect_timeout: u64,
}

impl PartOptions {
    /// The flags that pass these options on to a rank.
    pub(crate) fn forward(&self) -> Vec<String> {
        let mut v = vec![
            "--method".into(),
            self.method.clone(),
            "--strategy".into(),
            self.strategy.clone(),
            "--precision".into(),
            self.precision.clone(),
            "--connect-timeout".into(),
            self.connect_timeout.to_string(),
        ];
        if self.no_cache {
            v.push("--no-cache".into());
        }
        v
    }
}

/// `prefix` (the subcommand and its positional arguments) followed by `rest`.
pub(crate) fn rank_command(prefix: &[&str], rest: Vec<String>) -> Vec<String> {
    prefix.iter().map(|s| s.to_string()).chain(rest).collect()
}

/// What [`spawn_ranks`] brings back: the world size used, notes, each rank's report line.
pub(crate) struct Spawned {
    pub world: usize,
    pub notes: Vec<String>,
    pub reports: Vec<Option<String>>,
}

/// Starts `gpus` ranks (this binary with `rank_args`, one per GPU, NCCL found for them), waits
/// for all of them (stopping the others if one fails) and collects the line each prints after
/// [`REPORT_PREFIX`].
pub(crate) fn spawn_ranks(
    matrix: &str,
    gpus: usize,
    visible: usize,
    rank_args: &[String],
    connect_timeout: u64,
    no_cache: bool,
) -> Result<Spawned> {
    let mut notes = Vec::new();
    if gpus > visible {
        bail!("asked for {gpus} GPUs but this process sees {visible} (CUDA_VISIBLE_DEVICES may limit it)");
    }
    let mut world = gpus;
    let mut library_path = None;
    if world > 1 {
        match NcclSetup::detect() {
            NcclSetup::Loadable => {}
            s @ NcclSetup::Linked { .. } => {
                if let NcclSetup::Linked { lib, .. } = &s {
                    notes.push(format!("NCCL: {}", lib.display()));
                }
                library_path = s.child_library_path();
            }
            NcclSetup::Missing(why) => {
                notes.push(format!("{why}: running on 1 GPU instead of {gpus}"));
                world = 1;
            }
        }
    }
    // a matrix file: build the binary cache once here, so the ranks only read it
    if std::path::Path::new(matrix).exists() && !no_cache {
        input::load::<f64>(matrix, true).map(|_| ())?;
    }
    let devices: Vec<String> = match std::env::var("CUDA_VISIBLE_DEVICES") {
        Ok(v) if !v.trim().is_empty() => v.split(',').map(|s| s.trim().to_string()).collect(),
        _ => (0..visible).map(|d| d.to_string()).collect(),
    };
    // the ranks are this host's children: the loopback, and a token only they are given
    let token = Token::random()?;
    let server = Rendezvous::bind("127.0.0.1:0", world, token.clone())?;
    let root = server.local_addr()?.to_string();
    let timeout = Duration::from_secs(connect_timeout);
    let serving = (world > 1).then(|| std::thread::spawn(move || server.serve(timeout)));
    let exe = std::env::current_exe().context("finding the spmv executable")?;
    let mut children: Vec<Child> = Vec::new();
    if devices.len() < world {
        bail!(
            "CUDA_VISIBLE_DEVICES lists {} devices, fewer than {world} ranks",
            devices.len()
        );
    }
    for (r, device) in devices.iter().take(world).enumerate() {
        let mut cmd = Command::new(&exe);
        cmd.args(rank_args)
            .env(ENV_RANK, r.to_string())
            .env(ENV_WORLD, world.to_string())
            .env(ENV_ROOT, &root)
            .env(ENV_TOKEN, token.to_string())
            .env("CUDA_VISIBLE_DEVICES", device)
            // NVLink multicast (NVLS) stays off in every rank
            .env("NCCL_NVLS_ENABLE", "0")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(lp) = &library_path {
            cmd.env("LD_LIBRARY_PATH", lp);
        }
        match cmd.spawn() {
            Ok(ch) => children.push(ch),
            Err(e) => {
                stop(&mut children);
                return Err(e).context(format!("starting rank {r}"));
            }
        }
    }
    let readers: Vec<_> = children
        .iter_mut()
        .enumerate()
        .map(|(r, ch)| {
            let out = ch.stdout.take();
            std::thread::spawn(move || -> Option<String> {
                let mut report = None;
                for line in BufReader::new(out?).lines().map_while(|l| l.ok()) {
                    match line.strip_prefix(REPORT_PREFIX) {
                        Some(j) => report = Some(j.to_string()),
                        None => eprintln!("[rank {r}] {line}"),
                    }
                }
                report
            })
        })
        .collect();
    // wait; one failed rank would leave the others blocked in NCCL, so stop them
    let mut failed = Vec::new();
    let mut done = vec![false; world];
    while done.iter().any(|d| !d) {
        for (r, ch) in children.iter_mut().enumerate() {
            if done[r] {
                continue;
            }
            if let Some(status) = ch.try_wait().context("waiting for a rank")? {
                done[r] = true;
                if !status.success() {
                    failed.push(format!("rank {r} exited with {status}"));
                }
            }
        }
        if !failed.is_empty() {
            stop(&mut children);
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let reports: Vec<Option<String>> = readers
        .into_iter()
        .map(|h| h.join().ok().flatten())
        .collect();
    if let Some(h) = serving {
        if let Ok(Err(e)) = h.join() {
            if failed.is_empty() {
                failed.push(format!("rendezvous: {e}"));
            }
        }
    }
    if !failed.is_empty() {
        bail!(
            "distributed run of {matrix} on {world} GPUs failed: {}",
            failed.join("; ")
        );
    }
    Ok(Spawned {
        world,
        notes,
        reports,
    })
}

/// Kills the ranks this launcher started that are still running.
fn stop(children: &mut [Child]) {
    for ch in children.iter_mut() {
        if matches!(ch.try_wait(), Ok(None)) {
            let _ = ch.kill();
            let _ = ch.wait();
        }
    }
}
