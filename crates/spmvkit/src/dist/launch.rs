//! The single-host rank launcher: starts one process per GPU (an executable, normally the
//! `spmv` binary re-executed as one of its hidden rank subcommands), supervises them and
//! collects the report line each prints.
//!
//! A launch has two steps, so the caller can do its own work between them (`spmv` builds the
//! matrix's binary cache once there, so the ranks only read it):
//!
//! 1. [`plan_world`] checks the GPU count against the visible devices and, for more than one
//!    rank, finds NCCL for the children ([`NcclSetup`]); without NCCL it falls back to one rank,
//!    with a note.
//! 2. [`spawn_ranks`] serves the NCCL unique id on the loopback through a [`Rendezvous`] with a
//!    fresh [`Token`] only the children are given, starts rank r with [`ENV_RANK`],
//!    [`ENV_WORLD`], [`ENV_ROOT`], [`ENV_TOKEN`], its own `CUDA_VISIBLE_DEVICES` entry and
//!    NVLink multicast off (`NCCL_NVLS_ENABLE=0`), forwards the ranks' stdout lines to stderr
//!    (prefixed `[rank r]`) except the last one starting with [`REPORT_PREFIX`], which it
//!    returns. When one rank fails it stops the others, which would otherwise stay blocked in
//!    NCCL, and reports every failure.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::dist::bootstrap::{Rendezvous, Token, ENV_RANK, ENV_ROOT, ENV_TOKEN, ENV_WORLD};
use crate::dist::nccl::NcclSetup;
use crate::error::{Error, Result};

/// The prefix of the line on which a rank prints its report (JSON) for the launcher.
pub const REPORT_PREFIX: &str = "SPMVKIT-RANK-REPORT ";

/// The ranks a launch will start, from [`plan_world`].
#[derive(Clone, Debug)]
pub struct World {
    /// Number of ranks (the GPUs asked for, or 1 when NCCL is missing).
    pub world: usize,
    /// GPUs this process sees.
    pub visible: usize,
    /// Notes for the user: the NCCL library used, or why the launch falls back to one rank.
    pub notes: Vec<String>,
    /// `LD_LIBRARY_PATH` for the children, when NCCL needs it.
    library_path: Option<String>,
}

/// What [`spawn_ranks`] brings back: the world size used, notes, each rank's report line (the
/// text after [`REPORT_PREFIX`], `None` for a rank that printed none).
#[derive(Clone, Debug)]
pub struct Spawned {
    pub world: usize,
    pub notes: Vec<String>,
    pub reports: Vec<Option<String>>,
}

/// Step 1 of a launch: `gpus` ranks on a host where this process sees `visible` GPUs. An error
/// when `gpus > visible`; NCCL is looked for only when `gpus > 1`.
pub fn plan_world(gpus: usize, visible: usize) -> Result<World> {
    let mut notes = Vec::new();
    if gpus > visible {
        return Err(Error::Launch(format!(
            "asked for {gpus} GPUs but this process sees {visible} (CUDA_VISIBLE_DEVICES may limit it)"
        )));
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
    Ok(World {
        world,
        visible,
        notes,
        library_path,
    })
}

/// Step 2 of a launch: starts `w.world` ranks (`exe` with `rank_args`, one per GPU), waits for
/// all of them (stopping the others if one fails) and collects the line each prints after
/// [`REPORT_PREFIX`]. `label` (the matrix) names the run in the error when a rank fails;
/// `connect_timeout` bounds the rendezvous.
pub fn spawn_ranks(
    w: World,
    label: &str,
    exe: &Path,
    rank_args: &[String],
    connect_timeout: Duration,
) -> Result<Spawned> {
    let World {
        world,
        visible,
        notes,
        library_path,
    } = w;
    let devices: Vec<String> = match std::env::var("CUDA_VISIBLE_DEVICES") {
        Ok(v) if !v.trim().is_empty() => v.split(',').map(|s| s.trim().to_string()).collect(),
        _ => (0..visible).map(|d| d.to_string()).collect(),
    };
    // the ranks are this host's children: the loopback, and a token only they are given
    let token = Token::random()?;
    let server = Rendezvous::bind("127.0.0.1:0", world, token.clone())?;
    let root = server.local_addr()?.to_string();
    let serving = (world > 1).then(|| std::thread::spawn(move || server.serve(connect_timeout)));
    let mut children: Vec<Child> = Vec::new();
    if devices.len() < world {
        return Err(Error::Launch(format!(
            "CUDA_VISIBLE_DEVICES lists {} devices, fewer than {world} ranks",
            devices.len()
        )));
    }
    for (r, device) in devices.iter().take(world).enumerate() {
        let mut cmd = Command::new(exe);
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
                return Err(Error::Launch(format!("starting rank {r}: {e}")));
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
            let waited = ch
                .try_wait()
                .map_err(|e| Error::Launch(format!("waiting for a rank: {e}")))?;
            if let Some(status) = waited {
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
        return Err(Error::Launch(format!(
            "distributed run of {label} on {world} GPUs failed: {}",
            failed.join("; ")
        )));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_gpus_than_visible_is_an_error() {
        let e = plan_world(3, 2).unwrap_err().to_string();
        assert_eq!(
            e,
            "asked for 3 GPUs but this process sees 2 (CUDA_VISIBLE_DEVICES may limit it)"
        );
    }

    #[test]
    fn one_rank_needs_no_nccl() {
        let w = plan_world(1, 1).unwrap();
        assert_eq!((w.world, w.visible), (1, 1));
        assert!(w.notes.is_empty() && w.library_path.is_none());
    }

    #[cfg(unix)]
    #[test]
    fn collects_the_report_and_reports_failures() {
        let w = plan_world(1, 1).unwrap();
        let sh = Path::new("/bin/sh");
        let args = |script: &str| vec!["-c".to_string(), script.to_string()];
        let ok = spawn_ranks(
            w.clone(),
            "m",
            sh,
            &args(&format!(
                "echo hello; echo '{REPORT_PREFIX}{{\"rank\":'$SPMVKIT_DIST_RANK'}}'"
            )),
            Duration::from_secs(5),
        )
        .unwrap();
        assert_eq!(ok.world, 1);
        assert_eq!(ok.reports, vec![Some("{\"rank\":0}".to_string())]);
        let e = spawn_ranks(w, "m", sh, &args("exit 3"), Duration::from_secs(5))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("distributed run of m on 1 GPUs failed: rank 0 exited with"),
            "{e}"
        );
    }
}
