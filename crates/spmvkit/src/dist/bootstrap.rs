//! How ranks find each other (issue #12, part 3): the rank environment a launcher sets, and a
//! small TCP rendezvous that hands NCCL's 128-byte unique id from rank 0 to every rank.
//!
//! NCCL needs the same `ncclUniqueId` on every rank; `ncclGetUniqueId` on rank 0 makes it (it
//! also opens NCCL's own bootstrap socket in that process). The rendezvous is a server that
//! every rank connects to: each sends `spmvkit-dist 1 rank R world P`, rank 0 adds `id HEX`;
//! once all P have arrived the server answers `id HEX` to each (so it is also a start barrier),
//! or `error MSG`. On one host `spmv dist run` serves it on 127.0.0.1 and spawns the ranks with
//! [`ENV_ROOT`] pointing at it; across hosts, `spmv dist rendezvous --listen 0.0.0.0:PORT
//! --ranks P` runs on one machine and the ranks are started on each host with
//! `SPMVKIT_DIST_ROOT=host:PORT` (docs/multi-gpu.md).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// This process's rank (0-based).
pub const ENV_RANK: &str = "SPMVKIT_DIST_RANK";
/// The number of ranks.
pub const ENV_WORLD: &str = "SPMVKIT_DIST_WORLD";
/// `host:port` of the rendezvous.
pub const ENV_ROOT: &str = "SPMVKIT_DIST_ROOT";
/// The length of NCCL's unique id.
pub const ID_BYTES: usize = 128;

const HELLO: &str = "spmvkit-dist 1";

/// Who this process is in a distributed run, from the environment a launcher set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankEnv {
    pub rank: usize,
    pub world: usize,
    /// The rendezvous address (needed when world > 1).
    pub root: Option<String>,
}

impl RankEnv {
    /// Reads [`ENV_RANK`], [`ENV_WORLD`] and [`ENV_ROOT`]; `None` when the rank variable is unset.
    pub fn from_env() -> Result<Option<RankEnv>> {
        let Ok(rank) = std::env::var(ENV_RANK) else {
            return Ok(None);
        };
        let num = |name: &str, v: &str| {
            v.trim().parse::<usize>().map_err(|_| {
                Error::InvalidArgument(format!("{name}='{v}' is not a non-negative integer"))
            })
        };
        let rank = num(ENV_RANK, &rank)?;
        let world = num(
            ENV_WORLD,
            &std::env::var(ENV_WORLD).map_err(|_| {
                Error::InvalidArgument(format!("{ENV_RANK} is set but {ENV_WORLD} is not"))
            })?,
        )?;
        let env = RankEnv {
            rank,
            world,
            root: std::env::var(ENV_ROOT).ok(),
        };
        env.validate()?;
        Ok(Some(env))
    }

    fn validate(&self) -> Result<()> {
        if self.world == 0 || self.rank >= self.world {
            return Err(Error::InvalidArgument(format!(
                "rank {} of a world of {}: need 0 <= rank < world",
                self.rank, self.world
            )));
        }
        if self.world > 1 && self.root.is_none() {
            return Err(Error::InvalidArgument(format!(
                "{} ranks need the rendezvous address in {ENV_ROOT}",
                self.world
            )));
        }
        Ok(())
    }
}

/// Lower-case hex of `bytes`.
pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Parses [`to_hex`]'s output.
pub fn from_hex(s: &str) -> Result<Vec<u8>> {
    let s = s.trim();
    if s.len() % 2 != 0 || !s.is_ascii() {
        return Err(Error::InvalidArgument(format!(
            "'{s}' is not an even-length hex string"
        )));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&s[i..i + 2], 16)
                .map_err(|_| Error::InvalidArgument(format!("'{s}' is not hex")))
        })
        .collect()
}

fn io_err(what: &str, e: std::io::Error) -> Error {
    Error::InvalidArgument(format!("rendezvous: {what}: {e}"))
}

/// The rendezvous server: accepts `world` ranks and hands rank 0's id to all.
pub struct Rendezvous {
    listener: TcpListener,
    world: usize,
}

impl Rendezvous {
    /// Listens on `addr` (`127.0.0.1:0` picks a free port on this host).
    pub fn bind(addr: &str, world: usize) -> Result<Rendezvous> {
        if world == 0 {
            return Err(Error::InvalidArgument(
                "rendezvous: a world needs at least one rank".into(),
            ));
        }
        let listener =
            TcpListener::bind(addr).map_err(|e| io_err(&format!("binding {addr}"), e))?;
        Ok(Rendezvous { listener, world })
    }

    /// The address ranks connect to.
    pub fn local_addr(&self) -> Result<String> {
        self.listener
            .local_addr()
            .map(|a| a.to_string())
            .map_err(|e| io_err("reading the listening address", e))
    }

    /// Serves one start-up: waits (at most `timeout`) for all ranks, then sends every rank the
    /// id. A rank that says something unexpected, a duplicate rank or a wrong world size ends
    /// it with an error that is also sent to the connected ranks.
    pub fn serve(self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        self.listener
            .set_nonblocking(true)
            .map_err(|e| io_err("setting the listener non-blocking", e))?;
        let mut ranks: Vec<Option<TcpStream>> = (0..self.world).map(|_| None).collect();
        let mut id: Option<String> = None;
        let mut arrived = 0;
        let result = (|| -> Result<()> {
            while arrived < self.world {
                let (stream, peer) = match self.listener.accept() {
                    Ok(s) => s,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        if Instant::now() > deadline {
                            return Err(Error::InvalidArgument(format!(
                                "rendezvous: only {arrived} of {} ranks arrived within {:?}",
                                self.world, timeout
                            )));
                        }
                        std::thread::sleep(Duration::from_millis(5));
                        continue;
                    }
                    Err(e) => return Err(io_err("accepting a rank", e)),
                };
                stream
                    .set_nonblocking(false)
                    .and_then(|_| stream.set_read_timeout(Some(Duration::from_secs(30))))
                    .map_err(|e| io_err("configuring a rank's socket", e))?;
                let mut reader =
                    BufReader::new(stream.try_clone().map_err(|e| io_err("cloning", e))?);
                let mut refuse = |e: Error| {
                    // the offending rank learns why too
                    let _ = (&stream).write_all(format!("error {e}\n").as_bytes());
                    e
                };
                let mut line = String::new();
                reader
                    .read_line(&mut line)
                    .map_err(|e| io_err(&format!("reading the hello of {peer}"), e))?;
                let (rank, world) = parse_hello(&line).map_err(&mut refuse)?;
                if world != self.world {
                    return Err(refuse(Error::InvalidArgument(format!(
                        "rendezvous: rank {rank} from {peer} says the world has {world} ranks, not {}",
                        self.world
                    ))));
                }
                if rank >= self.world || ranks[rank].is_some() {
                    return Err(refuse(Error::InvalidArgument(format!(
                        "rendezvous: rank {rank} from {peer} is out of range or already here"
                    ))));
                }
                if rank == 0 {
                    let mut l = String::new();
                    reader
                        .read_line(&mut l)
                        .map_err(|e| io_err("reading rank 0's id", e))?;
                    let hex = l.trim().strip_prefix("id ").ok_or_else(|| {
                        Error::InvalidArgument(format!(
                            "rendezvous: rank 0 sent '{}' for its id",
                            l.trim()
                        ))
                    })?;
                    if from_hex(hex)?.len() != ID_BYTES {
                        return Err(Error::InvalidArgument(format!(
                            "rendezvous: rank 0's id is not {ID_BYTES} bytes"
                        )));
                    }
                    id = Some(hex.to_string());
                }
                ranks[rank] = Some(stream);
                arrived += 1;
            }
            Ok(())
        })();
        let reply = match (&result, &id) {
            (Ok(()), Some(hex)) => format!("id {hex}\n"),
            (Err(e), _) => format!("error {e}\n"),
            (Ok(()), None) => "error rank 0 sent no id\n".to_string(),
        };
        for s in ranks.iter_mut().flatten() {
            // a rank that went away meanwhile learns nothing; the others still do
            let _ = s.write_all(reply.as_bytes());
        }
        result
    }
}

fn parse_hello(line: &str) -> Result<(usize, usize)> {
    let bad = || Error::InvalidArgument(format!("rendezvous: unexpected hello '{}'", line.trim()));
    let rest = line.trim().strip_prefix(HELLO).ok_or_else(bad)?;
    let words: Vec<&str> = rest.split_whitespace().collect();
    match words.as_slice() {
        ["rank", r, "world", w] => {
            Ok((r.parse().map_err(|_| bad())?, w.parse().map_err(|_| bad())?))
        }
        _ => Err(bad()),
    }
}

/// A rank's side: connects to the rendezvous at `root` (retrying until `timeout`, as the
/// server may start after the ranks on other hosts), sends its hello (rank 0 also its `id`)
/// and returns the id every rank gets.
pub fn exchange_id(
    root: &str,
    rank: usize,
    world: usize,
    id: Option<&[u8]>,
    timeout: Duration,
) -> Result<Vec<u8>> {
    let deadline = Instant::now() + timeout;
    let addrs: Vec<_> = root
        .to_socket_addrs()
        .map_err(|e| io_err(&format!("resolving {root}"), e))?
        .collect();
    let mut stream = loop {
        match addrs
            .iter()
            .find_map(|a| TcpStream::connect_timeout(a, Duration::from_secs(2)).ok())
        {
            Some(s) => break s,
            None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
            None => {
                return Err(Error::InvalidArgument(format!(
                    "rendezvous: rank {rank} could not reach {root} within {timeout:?}"
                )))
            }
        }
    };
    let mut msg = format!("{HELLO} rank {rank} world {world}\n");
    match (rank, id) {
        (0, Some(id)) => msg.push_str(&format!("id {}\n", to_hex(id))),
        (0, None) => {
            return Err(Error::InvalidArgument(
                "rendezvous: rank 0 must bring the id".into(),
            ))
        }
        _ => {}
    }
    stream
        .write_all(msg.as_bytes())
        .map_err(|e| io_err(&format!("rank {rank} writing to {root}"), e))?;
    stream
        .set_read_timeout(Some(
            deadline
                .saturating_duration_since(Instant::now())
                .max(Duration::from_secs(1)),
        ))
        .map_err(|e| io_err("setting a read timeout", e))?;
    let mut line = String::new();
    BufReader::new(stream)
        .read_line(&mut line)
        .map_err(|e| io_err(&format!("rank {rank} waiting for the id from {root}"), e))?;
    let line = line.trim();
    if let Some(hex) = line.strip_prefix("id ") {
        let id = from_hex(hex)?;
        if id.len() != ID_BYTES {
            return Err(Error::InvalidArgument(format!(
                "rendezvous: got a {}-byte id, expected {ID_BYTES}",
                id.len()
            )));
        }
        return Ok(id);
    }
    Err(Error::InvalidArgument(format!(
        "rendezvous at {root} answered rank {rank}: '{}'",
        line.strip_prefix("error ").unwrap_or(line)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips() {
        let b: Vec<u8> = (0..=255).collect();
        assert_eq!(from_hex(&to_hex(&b)).unwrap(), b);
        assert!(from_hex("abc").is_err());
        assert!(from_hex("zz").is_err());
    }

    #[test]
    fn every_rank_gets_rank_zeros_id() {
        let world = 4;
        let server = Rendezvous::bind("127.0.0.1:0", world).unwrap();
        let addr = server.local_addr().unwrap();
        let serve = std::thread::spawn(move || server.serve(Duration::from_secs(20)));
        let id: Vec<u8> = (0..ID_BYTES as u32).map(|i| (i * 7) as u8).collect();
        // ranks arrive in any order
        let handles: Vec<_> = [3, 1, 0, 2]
            .into_iter()
            .map(|r| {
                let (addr, id) = (addr.clone(), id.clone());
                std::thread::spawn(move || {
                    let mine = (r == 0).then_some(&id[..]);
                    exchange_id(&addr, r, world, mine, Duration::from_secs(20))
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap().unwrap(), id);
        }
        serve.join().unwrap().unwrap();
    }

    #[test]
    fn a_wrong_world_is_refused() {
        let server = Rendezvous::bind("127.0.0.1:0", 2).unwrap();
        let addr = server.local_addr().unwrap();
        let serve = std::thread::spawn(move || server.serve(Duration::from_secs(20)));
        let r = exchange_id(&addr, 1, 3, None, Duration::from_secs(20));
        assert!(r.unwrap_err().to_string().contains("world"));
        assert!(serve.join().unwrap().is_err());
    }

    #[test]
    fn missing_ranks_time_out() {
        let server = Rendezvous::bind("127.0.0.1:0", 2).unwrap();
        assert!(server.serve(Duration::from_millis(50)).is_err());
        assert!(exchange_id("127.0.0.1:1", 1, 2, None, Duration::from_millis(10)).is_err());
    }

    #[test]
    fn rank_env_is_validated() {
        let bad = RankEnv {
            rank: 2,
            world: 2,
            root: None,
        };
        assert!(bad.validate().is_err());
        let no_root = RankEnv {
            rank: 0,
            world: 2,
            root: None,
        };
        assert!(no_root.validate().is_err());
        let one = RankEnv {
            rank: 0,
            world: 1,
            root: None,
        };
        assert!(one.validate().is_ok());
    }
}
