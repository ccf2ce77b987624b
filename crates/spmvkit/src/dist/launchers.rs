//! Standard launchers (issue #26, part 2): a rank takes its rank, world size and local rank
//! from the environment the launcher it was started by sets, and finds the rendezvous that
//! hands NCCL's id ([`super::bootstrap`]) at the master address.
//!
//! | launcher | rank | world | local rank | rendezvous |
//! |---|---|---|---|---|
//! | `spmv dist run` (or by hand) | `SPMVKIT_DIST_RANK` | `SPMVKIT_DIST_WORLD` | `SPMVKIT_DIST_LOCAL_RANK` | `SPMVKIT_DIST_ROOT` |
//! | `torchrun` | `RANK` | `WORLD_SIZE` | `LOCAL_RANK` | `MASTER_ADDR`:`MASTER_PORT`+1 |
//! | Open MPI `mpirun` | `OMPI_COMM_WORLD_RANK` | `OMPI_COMM_WORLD_SIZE` | `OMPI_COMM_WORLD_LOCAL_RANK` | `MASTER_ADDR`:`MASTER_PORT` |
//! | Slurm `srun` | `SLURM_PROCID` | `SLURM_NTASKS` | `SLURM_LOCALID` | `MASTER_ADDR`:`MASTER_PORT` |
//!
//! The first convention in this order whose rank or world variable is set is the one used
//! (`mpirun` inside a Slurm allocation leaves the batch step's `SLURM_PROCID` around, so Open
//! MPI comes before Slurm); a convention with only one of its two variables, a value that is not
//! a number, a rank outside the world or a local rank beyond it is an error naming the
//! variables. Under a standard launcher nobody else serves the rendezvous, so rank 0 serves it
//! itself on the master address (`torchrun`'s own store holds `MASTER_PORT`, hence the next
//! port; `SPMVKIT_DIST_PORT` overrides the port, `SPMVKIT_DIST_ROOT` the whole address, and then
//! something else, e.g. `spmv dist rendezvous`, serves it).
//!
//! The token stays required for more than one rank: `SPMVKIT_DIST_TOKEN` (32 hex digits, e.g.
//! from `spmv dist token`) or `SPMVKIT_DIST_TOKEN_FILE`, a file holding it (on a shared file
//! system, readable by the user only); both set and different is an error.
//!
//! With a local rank and several visible GPUs, the rank takes the local-rank-th of them
//! ([`RankEnv::cuda_visible_devices`]); a launcher that already gives each rank one GPU
//! (`srun --gpus-per-task=1`) is left alone. The CLI's rank sets it, and `NCCL_NVLS_ENABLE=0`,
//! before CUDA starts, and restarts itself once with NCCL's directory on `LD_LIBRARY_PATH`
//! when libnccl is found but not loadable (pip's `libnccl.so.2`).

use std::path::Path;

use super::bootstrap::{RankEnv, Token, ENV_RANK, ENV_ROOT, ENV_TOKEN, ENV_WORLD};
use crate::error::{Error, Result};

/// The local rank under `spmv dist run` or by hand (optional).
pub const ENV_LOCAL_RANK: &str = "SPMVKIT_DIST_LOCAL_RANK";
/// A file holding the launch token (instead of [`ENV_TOKEN`]).
pub const ENV_TOKEN_FILE: &str = "SPMVKIT_DIST_TOKEN_FILE";
/// The rendezvous port under a standard launcher (default: `MASTER_PORT`, `MASTER_PORT`+1
/// under `torchrun`).
pub const ENV_PORT: &str = "SPMVKIT_DIST_PORT";

/// The launcher whose conventions gave a rank its place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launcher {
    /// `spmv dist run`, or ranks started by hand with `SPMVKIT_DIST_*`.
    Spmvkit,
    Torchrun,
    OpenMpi,
    Slurm,
}

impl Launcher {
    pub fn name(self) -> &'static str {
        match self {
            Launcher::Spmvkit => "spmvkit",
            Launcher::Torchrun => "torchrun",
            Launcher::OpenMpi => "Open MPI",
            Launcher::Slurm => "Slurm",
        }
    }
}

/// One convention: the launcher and its rank, world and local-rank variables.
struct Convention {
    launcher: Launcher,
    rank: &'static str,
    world: &'static str,
    local: &'static str,
}

/// The conventions in the order they are tried.
const CONVENTIONS: [Convention; 4] = [
    Convention {
        launcher: Launcher::Spmvkit,
        rank: ENV_RANK,
        world: ENV_WORLD,
        local: ENV_LOCAL_RANK,
    },
    Convention {
        launcher: Launcher::Torchrun,
        rank: "RANK",
        world: "WORLD_SIZE",
        local: "LOCAL_RANK",
    },
    Convention {
        launcher: Launcher::OpenMpi,
        rank: "OMPI_COMM_WORLD_RANK",
        world: "OMPI_COMM_WORLD_SIZE",
        local: "OMPI_COMM_WORLD_LOCAL_RANK",
    },
    Convention {
        launcher: Launcher::Slurm,
        rank: "SLURM_PROCID",
        world: "SLURM_NTASKS",
        local: "SLURM_LOCALID",
    },
];

/// The variables a rank reads its place from, for messages: `SPMVKIT_DIST_RANK, RANK, ...`.
pub fn rank_variables() -> String {
    CONVENTIONS
        .iter()
        .map(|c| c.rank)
        .collect::<Vec<_>>()
        .join(", ")
}

fn num(name: &str, v: &str) -> Result<usize> {
    v.trim()
        .parse::<usize>()
        .map_err(|_| Error::InvalidArgument(format!("{name}='{v}' is not a non-negative integer")))
}

/// `host:port`, with an IPv6 host in brackets.
fn host_port(host: &str, port: u32) -> String {
    let host = host.trim();
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// The token from [`ENV_TOKEN`] or [`ENV_TOKEN_FILE`].
fn token(get: &dyn Fn(&str) -> Option<String>) -> Result<Option<Token>> {
    let from_var = get(ENV_TOKEN)
        .map(|t| Token::parse(&t).map_err(|e| Error::InvalidArgument(format!("{ENV_TOKEN}: {e}"))))
        .transpose()?;
    let from_file = match get(ENV_TOKEN_FILE) {
        None => None,
        Some(f) => {
            let text = std::fs::read_to_string(Path::new(&f)).map_err(|e| Error::io(&f, e))?;
            Some(
                Token::parse(text.trim())
                    .map_err(|e| Error::InvalidArgument(format!("{ENV_TOKEN_FILE} ({f}): {e}")))?,
            )
        }
    };
    match (from_var, from_file) {
        (Some(a), Some(b)) if !a.matches(&b) => Err(Error::InvalidArgument(format!(
            "{ENV_TOKEN} and the token in {ENV_TOKEN_FILE} differ; set one of them"
        ))),
        (a, b) => Ok(a.or(b)),
    }
}

impl RankEnv {
    /// The rank environment from variables (`get` returns a variable's value; `from_env`
    /// passes the process environment), or `None` when no convention's variables are set.
    ///
    /// ```
    /// use std::collections::HashMap;
    /// use spmvkit::dist::{bootstrap::RankEnv, launchers::Launcher};
    /// let vars: HashMap<&str, &str> = [
    ///     ("RANK", "3"), ("WORLD_SIZE", "8"), ("LOCAL_RANK", "3"),
    ///     ("MASTER_ADDR", "10.0.0.1"), ("MASTER_PORT", "29500"),
    ///     ("SPMVKIT_DIST_TOKEN", "5c0f9e0d4b7a41a2b3e9d8c7f6a5b4c3"),
    /// ].into();
    /// let env = RankEnv::from_vars(&|k| vars.get(k).map(|v| v.to_string())).unwrap().unwrap();
    /// assert_eq!((env.rank, env.world, env.local_rank), (3, 8, Some(3)));
    /// assert_eq!(env.launcher, Launcher::Torchrun);
    /// assert_eq!(env.root.as_deref(), Some("10.0.0.1:29501")); // torchrun's store holds 29500
    /// assert!(env.serve_rendezvous); // rank 0 serves it there
    /// ```
    pub fn from_vars(get: &dyn Fn(&str) -> Option<String>) -> Result<Option<RankEnv>> {
        let get = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        let Some(c) = CONVENTIONS
            .iter()
            .find(|c| get(c.rank).is_some() || get(c.world).is_some())
        else {
            return Ok(None);
        };
        let who = c.launcher.name();
        let (rank, world) = match (get(c.rank), get(c.world)) {
            (Some(r), Some(w)) => (num(c.rank, &r)?, num(c.world, &w)?),
            (Some(_), None) => {
                return Err(Error::InvalidArgument(format!(
                    "{} is set but {} is not ({who} sets both)",
                    c.rank, c.world
                )))
            }
            _ => {
                return Err(Error::InvalidArgument(format!(
                    "{} is set but {} is not ({who} sets both)",
                    c.world, c.rank
                )))
            }
        };
        if world == 0 || rank >= world {
            return Err(Error::InvalidArgument(format!(
                "{}={rank} and {}={world} ({who}): need 0 <= rank < world",
                c.rank, c.world
            )));
        }
        let local_rank = get(c.local).map(|v| num(c.local, &v)).transpose()?;
        if let Some(l) = local_rank {
            if l >= world.max(1) {
                return Err(Error::InvalidArgument(format!(
                    "{}={l} is not below {}={world}",
                    c.local, c.world
                )));
            }
        }
        let (root, serve) = match get(ENV_ROOT) {
            Some(root) => (Some(root), false),
            None if c.launcher == Launcher::Spmvkit => (None, false),
            None => match (get("MASTER_ADDR"), get("MASTER_PORT"), get(ENV_PORT)) {
                (Some(addr), master, own) => {
                    let port = match (own, master) {
                        (Some(p), _) => num(ENV_PORT, &p)?,
                        (None, Some(p)) => {
                            num("MASTER_PORT", &p)? + usize::from(c.launcher == Launcher::Torchrun)
                        }
                        (None, None) => {
                            return Err(Error::InvalidArgument(format!(
                                "MASTER_ADDR is set but neither MASTER_PORT nor {ENV_PORT} \
                                 ({who} rank {rank})"
                            )))
                        }
                    };
                    if port == 0 || port > 65535 {
                        return Err(Error::InvalidArgument(format!(
                            "the rendezvous port {port} is not in 1..=65535"
                        )));
                    }
                    (Some(host_port(&addr, port as u32)), true)
                }
                (None, _, _) if world > 1 => {
                    return Err(Error::InvalidArgument(format!(
                        "{who} rank {rank} of {world}: set MASTER_ADDR and MASTER_PORT (rank 0's \
                         host and a free port; rank 0 serves the rendezvous there) or {ENV_ROOT}"
                    )))
                }
                (None, _, _) => (None, false),
            },
        };
        let env = RankEnv {
            rank,
            world,
            root,
            token: token(&get)?,
            local_rank,
            launcher: c.launcher,
            serve_rendezvous: serve,
        };
        env.validate()?;
        Ok(Some(env))
    }

    /// On rank 0 of a world whose rendezvous nobody else serves ([`RankEnv::serve_rendezvous`]):
    /// binds it at [`RankEnv::root`] and serves it on a thread until every rank has the id or
    /// `timeout` passes. `None` on every other rank (they connect to it, retrying until it is up).
    pub fn start_rendezvous(
        &self,
        timeout: std::time::Duration,
    ) -> Result<Option<std::thread::JoinHandle<Result<Vec<super::bootstrap::Dropped>>>>> {
        if !(self.serve_rendezvous && self.rank == 0 && self.world > 1) {
            return Ok(None);
        }
        let (Some(root), Some(token)) = (self.root.as_deref(), self.token.clone()) else {
            return Ok(None);
        };
        let server = super::bootstrap::Rendezvous::bind(root, self.world, token)?;
        Ok(Some(std::thread::spawn(move || server.serve(timeout))))
    }

    /// The `CUDA_VISIBLE_DEVICES` this rank should start with (set before CUDA starts), or
    /// `None` to leave it: with a local rank under a standard launcher, the local-rank-th of
    /// the visible devices (`visible`: the variable's current value; unset means the host's
    /// devices numbered from 0), unless the launcher left only one visible.
    pub fn cuda_visible_devices(&self, visible: Option<&str>) -> Result<Option<String>> {
        let Some(l) = self.local_rank else {
            return Ok(None);
        };
        if self.launcher == Launcher::Spmvkit {
            return Ok(None);
        }
        let list: Vec<&str> = match visible.map(str::trim) {
            Some(v) if !v.is_empty() => v.split(',').map(str::trim).collect(),
            _ => return Ok(Some(l.to_string())),
        };
        match list.len() {
            1 => Ok(None),
            n if l < n => Ok(Some(list[l].to_string())),
            n => Err(Error::InvalidArgument(format!(
                "local rank {l} ({}) but CUDA_VISIBLE_DEVICES lists {n} GPUs",
                self.launcher.name()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::time::Duration;

    use super::*;
    use crate::dist::bootstrap::{exchange_id, Hello, InputIdentity};
    use crate::scalar::Precision;

    const TOKEN: &str = "5c0f9e0d4b7a41a2b3e9d8c7f6a5b4c3";

    fn env(vars: &[(&str, &str)]) -> Result<Option<RankEnv>> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        RankEnv::from_vars(&|k| map.get(k).cloned())
    }

    fn ok(vars: &[(&str, &str)]) -> RankEnv {
        env(vars).unwrap().unwrap()
    }

    fn err(vars: &[(&str, &str)]) -> String {
        env(vars).unwrap_err().to_string()
    }

    const MASTER: [(&str, &str); 3] = [
        ("MASTER_ADDR", "10.1.2.3"),
        ("MASTER_PORT", "29500"),
        (ENV_TOKEN, TOKEN),
    ];

    fn with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
        let mut v = MASTER.to_vec();
        v.extend_from_slice(extra);
        v
    }

    #[test]
    fn each_launcher_gives_rank_world_local_rank_and_rendezvous() {
        let t = ok(&with(&[
            ("RANK", "5"),
            ("WORLD_SIZE", "8"),
            ("LOCAL_RANK", "1"),
        ]));
        assert_eq!((t.rank, t.world, t.local_rank), (5, 8, Some(1)));
        assert_eq!(t.launcher, Launcher::Torchrun);
        assert_eq!(t.root.as_deref(), Some("10.1.2.3:29501"));
        assert!(t.serve_rendezvous);
        assert!(t.token.is_some());
        let m = ok(&with(&[
            ("OMPI_COMM_WORLD_RANK", "2"),
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "0"),
        ]));
        assert_eq!((m.rank, m.world, m.local_rank), (2, 4, Some(0)));
        assert_eq!(m.launcher, Launcher::OpenMpi);
        assert_eq!(m.root.as_deref(), Some("10.1.2.3:29500"));
        let s = ok(&with(&[
            ("SLURM_PROCID", "7"),
            ("SLURM_NTASKS", "8"),
            ("SLURM_LOCALID", "3"),
        ]));
        assert_eq!((s.rank, s.world, s.local_rank), (7, 8, Some(3)));
        assert_eq!(s.launcher, Launcher::Slurm);
        let own = ok(&[
            (ENV_RANK, "1"),
            (ENV_WORLD, "2"),
            (ENV_ROOT, "127.0.0.1:4000"),
            (ENV_TOKEN, TOKEN),
        ]);
        assert_eq!((own.rank, own.world, own.local_rank), (1, 2, None));
        assert_eq!(own.launcher, Launcher::Spmvkit);
        assert!(!own.serve_rendezvous);
        assert!(env(&[("MASTER_ADDR", "x"), ("LOCAL_RANK", "0")])
            .unwrap()
            .is_none());
    }

    #[test]
    fn precedence_follows_the_launcher_that_started_the_rank() {
        // mpirun inside a Slurm allocation: the batch step's SLURM_PROCID is stale
        let m = ok(&with(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "1"),
            ("OMPI_COMM_WORLD_RANK", "3"),
            ("OMPI_COMM_WORLD_SIZE", "4"),
        ]));
        assert_eq!((m.launcher, m.rank, m.world), (Launcher::OpenMpi, 3, 4));
        let own = ok(&with(&[
            (ENV_RANK, "0"),
            (ENV_WORLD, "2"),
            (ENV_ROOT, "h:1"),
            ("RANK", "1"),
            ("WORLD_SIZE", "2"),
        ]));
        assert_eq!((own.launcher, own.rank), (Launcher::Spmvkit, 0));
        // an explicit rendezvous address: someone else serves it
        let t = ok(&with(&[
            ("RANK", "0"),
            ("WORLD_SIZE", "2"),
            (ENV_ROOT, "h:9"),
        ]));
        assert_eq!(t.root.as_deref(), Some("h:9"));
        assert!(!t.serve_rendezvous);
        let t = ok(&with(&[
            ("RANK", "0"),
            ("WORLD_SIZE", "2"),
            (ENV_PORT, "31000"),
        ]));
        assert_eq!(t.root.as_deref(), Some("10.1.2.3:31000"));
        let t = ok(&[
            ("RANK", "0"),
            ("WORLD_SIZE", "2"),
            ("MASTER_ADDR", "fd00::1"),
            ("MASTER_PORT", "29500"),
            (ENV_TOKEN, TOKEN),
        ]);
        assert_eq!(t.root.as_deref(), Some("[fd00::1]:29501"));
    }

    #[test]
    fn partial_or_inconsistent_environments_are_errors_naming_the_variables() {
        let e = err(&with(&[("RANK", "1")]));
        assert!(e.contains("RANK") && e.contains("WORLD_SIZE"), "{e}");
        let e = err(&with(&[("OMPI_COMM_WORLD_SIZE", "4")]));
        assert!(e.contains("OMPI_COMM_WORLD_RANK"), "{e}");
        let e = err(&with(&[("SLURM_PROCID", "4"), ("SLURM_NTASKS", "4")]));
        assert!(
            e.contains("SLURM_PROCID=4") && e.contains("SLURM_NTASKS=4"),
            "{e}"
        );
        let e = err(&with(&[("RANK", "one"), ("WORLD_SIZE", "4")]));
        assert!(e.contains("RANK='one'"), "{e}");
        let e = err(&with(&[
            ("RANK", "1"),
            ("WORLD_SIZE", "4"),
            ("LOCAL_RANK", "4"),
        ]));
        assert!(e.contains("LOCAL_RANK=4"), "{e}");
        let e = err(&[("RANK", "1"), ("WORLD_SIZE", "2"), (ENV_TOKEN, TOKEN)]);
        assert!(e.contains("MASTER_ADDR"), "{e}");
        let e = err(&[
            ("RANK", "1"),
            ("WORLD_SIZE", "2"),
            ("MASTER_ADDR", "h"),
            (ENV_TOKEN, TOKEN),
        ]);
        assert!(e.contains("MASTER_PORT"), "{e}");
        let e = err(&[
            ("RANK", "1"),
            ("WORLD_SIZE", "2"),
            ("MASTER_ADDR", "h"),
            ("MASTER_PORT", "1"),
        ]);
        assert!(e.contains(ENV_TOKEN) && e.contains(ENV_TOKEN_FILE), "{e}");
        let e = err(&with(&[
            ("RANK", "0"),
            ("WORLD_SIZE", "2"),
            (ENV_PORT, "70000"),
        ]));
        assert!(e.contains("70000"), "{e}");
        // one rank needs neither address nor token
        let one = ok(&[("RANK", "0"), ("WORLD_SIZE", "1")]);
        assert_eq!((one.world, one.root.clone()), (1, None));
    }

    #[test]
    fn the_token_comes_from_a_variable_or_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("token");
        std::fs::write(&f, format!("{TOKEN}\n")).unwrap();
        let fs = f.to_str().unwrap();
        let base = [
            ("RANK", "1"),
            ("WORLD_SIZE", "2"),
            ("MASTER_ADDR", "h"),
            ("MASTER_PORT", "5"),
        ];
        let mut v = base.to_vec();
        v.push((ENV_TOKEN_FILE, fs));
        let t = ok(&v).token.unwrap();
        assert!(t.matches(&Token::parse(TOKEN).unwrap()));
        v.push((ENV_TOKEN, TOKEN));
        assert!(ok(&v).token.is_some());
        let other = "00000000000000000000000000000000";
        let mut w = base.to_vec();
        w.extend([(ENV_TOKEN_FILE, fs), (ENV_TOKEN, other)]);
        assert!(err(&w).contains("differ"));
        let mut w = base.to_vec();
        w.push((ENV_TOKEN_FILE, "/no/such/token"));
        assert!(err(&w).contains("/no/such/token"));
    }

    #[test]
    fn a_local_rank_picks_its_gpu() {
        let t = ok(&with(&[
            ("RANK", "6"),
            ("WORLD_SIZE", "8"),
            ("LOCAL_RANK", "2"),
        ]));
        assert_eq!(t.cuda_visible_devices(None).unwrap(), Some("2".into()));
        assert_eq!(
            t.cuda_visible_devices(Some("4,5,6,7")).unwrap(),
            Some("6".into())
        );
        assert_eq!(t.cuda_visible_devices(Some("3")).unwrap(), None);
        assert!(t.cuda_visible_devices(Some("0,1")).is_err());
        let own = ok(&[(ENV_RANK, "0"), (ENV_WORLD, "1"), (ENV_LOCAL_RANK, "0")]);
        assert_eq!(own.cuda_visible_devices(None).unwrap(), None);
    }

    /// Two torchrun-style ranks: rank 0 serves the rendezvous at MASTER_ADDR:MASTER_PORT+1 and
    /// both get rank 0's id through it.
    #[test]
    fn rank_zero_serves_the_rendezvous_at_the_master_address() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
            - 1;
        let port_s = port.to_string();
        let ranks: Vec<RankEnv> = ["0", "1"]
            .iter()
            .map(|r| {
                ok(&[
                    ("RANK", r),
                    ("WORLD_SIZE", "2"),
                    ("MASTER_ADDR", "127.0.0.1"),
                    ("MASTER_PORT", &port_s),
                    (ENV_TOKEN, TOKEN),
                ])
            })
            .collect();
        let server = ranks[0]
            .start_rendezvous(Duration::from_secs(20))
            .unwrap()
            .unwrap();
        assert!(ranks[1]
            .start_rendezvous(Duration::from_secs(1))
            .unwrap()
            .is_none());
        let input = InputIdentity::of_rows(4, &[0, 1, 2, 3, 4], Precision::F64, 7);
        let id: Vec<u8> = (0..128).map(|i| i as u8).collect();
        let got: Vec<Vec<u8>> = std::thread::scope(|s| {
            let hs: Vec<_> = ranks
                .iter()
                .map(|e| {
                    let hello = Hello {
                        token: e.token.clone().unwrap(),
                        rank: e.rank,
                        world: e.world,
                        input,
                        id: (e.rank == 0).then(|| id.clone()),
                    };
                    let root = e.root.clone().unwrap();
                    s.spawn(move || exchange_id(&root, &hello, Duration::from_secs(20)).unwrap())
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(got.iter().all(|g| g == &id));
        assert!(server.join().unwrap().is_ok());
    }
}
