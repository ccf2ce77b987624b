//! How ranks find each other (issue #12, part 3; hardened in issue #18): the rank environment a
//! launcher sets, and a small TCP rendezvous that checks every rank's credentials and input and
//! hands NCCL's 128-byte unique id from rank 0 to every rank.
//!
//! NCCL needs the same `ncclUniqueId` on every rank; `ncclGetUniqueId` on rank 0 makes it (it
//! also opens NCCL's own bootstrap socket in that process). The rendezvous is a server that
//! every rank connects to and sends one line, its [`Hello`]:
//!
//! ```text
//! spmvkit-dist 2 token TOKEN rank R world P rows M cols N nnz Z prec f64 crc C [id HEX]
//! ```
//!
//! `TOKEN` is the launch's random 128-bit [`Token`] (32 hex digits); `rows`, `cols`, `nnz`,
//! `prec` and `crc` are the [`InputIdentity`] of the matrix the rank loaded (`crc`: CRC-32 of
//! its dimensions, row pointers, column indices and value bits, 8 hex digits); rank 0 alone adds
//! `id HEX`. Once all P ranks have arrived the server answers `id HEX` to each (so it is also a
//! start barrier), or `error MESSAGE`.
//!
//! What reaches the server is judged per connection, each read by its own thread within
//! [`HELLO_TIMEOUT`] and at most [`MAX_LINE`] bytes (a bounded reader, never an unbounded
//! `read_line`). A connection that sends nothing in time, an oversized or malformed line, a
//! wrong or missing token, a rank out of range, a second claim of a rank already here, or a
//! rank 0 without an id (another rank with one) is dropped: one line on stderr names the peer
//! and the reason, the peer gets `error REASON`, and the start goes on waiting for the real
//! ranks. Two things end the start for everyone, since they are the launch's own ranks
//! disagreeing: a rank with the right token but another world size, and ranks whose inputs
//! differ (the error names both ranks and the differing values). Both are found before any rank
//! calls `ncclCommInitRank`.
//!
//! On one host `spmv dist run` makes a token ([`Token::random`]), serves the rendezvous on
//! 127.0.0.1 and spawns the ranks with [`ENV_ROOT`] pointing at it and the token in
//! [`ENV_TOKEN`]. Across hosts, `spmv dist rendezvous --listen ADDR:PORT --ranks P` runs on one
//! machine, bound to the interface named (a wildcard address such as 0.0.0.0 is refused), and
//! prints the token to give every rank in `SPMVKIT_DIST_TOKEN` (docs/multi-gpu.md).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::launchers::ENV_TOKEN_FILE;
use crate::error::{Error, Result};
use crate::matrix::Csr;
use crate::scalar::{Idx, Precision, Scalar};

/// This process's rank (0-based).
pub const ENV_RANK: &str = "SPMVKIT_DIST_RANK";
/// The number of ranks.
pub const ENV_WORLD: &str = "SPMVKIT_DIST_WORLD";
/// `host:port` of the rendezvous.
pub const ENV_ROOT: &str = "SPMVKIT_DIST_ROOT";
/// The launch's [`Token`] (32 hex digits), which every hello must carry.
pub const ENV_TOKEN: &str = "SPMVKIT_DIST_TOKEN";
/// The length of NCCL's unique id.
pub const ID_BYTES: usize = 128;
/// The length of a launch [`Token`] (128 bits).
pub const TOKEN_BYTES: usize = 16;
/// The longest line either side reads, its newline included.
pub const MAX_LINE: usize = 1024;
/// How long a new connection may take to send its hello.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

const HELLO: &str = "spmvkit-dist 2";
/// Connections whose hello is still being read; more are dropped at once.
const MAX_PENDING: usize = 64;
/// Matrix elements per checksum piece.
const PIECE: usize = 1 << 18;

/// Who this process is in a distributed run, from the environment a launcher set
/// ([`super::launchers`]: spmvkit's own variables, `torchrun`, Open MPI or Slurm).
#[derive(Clone, Debug)]
pub struct RankEnv {
    pub rank: usize,
    pub world: usize,
    /// The rendezvous address (needed when world > 1).
    pub root: Option<String>,
    /// The launch's token (needed when world > 1).
    pub token: Option<Token>,
    /// The rank among those of its host, when the launcher says.
    pub local_rank: Option<usize>,
    /// Whose conventions gave the rank its place.
    pub launcher: super::launchers::Launcher,
    /// Whether rank 0 serves the rendezvous itself at `root` (a standard launcher with no
    /// [`ENV_ROOT`]: nobody else does).
    pub serve_rendezvous: bool,
}

impl RankEnv {
    /// A rank of a world that `spmv dist run` or `spmv dist rendezvous` serves.
    pub fn new(rank: usize, world: usize, root: Option<String>, token: Option<Token>) -> RankEnv {
        RankEnv {
            rank,
            world,
            root,
            token,
            local_rank: None,
            launcher: super::launchers::Launcher::Spmvkit,
            serve_rendezvous: false,
        }
    }

    /// The rank environment of this process ([`RankEnv::from_vars`] over its variables);
    /// `None` when no launcher's rank variables are set.
    pub fn from_env() -> Result<Option<RankEnv>> {
        Self::from_vars(&|k| std::env::var(k).ok())
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.world == 0 || self.rank >= self.world {
            return Err(Error::InvalidArgument(format!(
                "rank {} of a world of {}: need 0 <= rank < world",
                self.rank, self.world
            )));
        }
        if self.world > 1 && self.root.is_none() {
            return Err(Error::InvalidArgument(format!(
                "{} ranks need the rendezvous address in {ENV_ROOT} (or MASTER_ADDR and \
                 MASTER_PORT under torchrun, mpirun or srun)",
                self.world
            )));
        }
        if self.world > 1 && self.token.is_none() {
            return Err(Error::InvalidArgument(format!(
                "{} ranks need the launch token in {ENV_TOKEN} or a file named by \
                 {ENV_TOKEN_FILE} (`spmv dist run` sets it; `spmv dist rendezvous` prints one; \
                 `spmv dist token` makes one)",
                self.world
            )));
        }
        Ok(())
    }
}

/// A launch's shared secret: 128 random bits that every hello must carry, so that a stray
/// connection cannot take a rank's place. Shown as 32 lower-case hex digits; its `Debug` form
/// does not show it.
#[derive(Clone)]
pub struct Token([u8; TOKEN_BYTES]);

impl Token {
    /// A fresh token from the operating system's random source.
    pub fn random() -> Result<Token> {
        let mut b = [0u8; TOKEN_BYTES];
        getrandom::fill(&mut b).map_err(|e| {
            Error::InvalidArgument(format!(
                "rendezvous: no system randomness for the launch token: {e}"
            ))
        })?;
        Ok(Token(b))
    }

    /// Parses the 32 hex digits [`Token`]'s `Display` writes.
    pub fn parse(s: &str) -> Result<Token> {
        let bad = || {
            Error::InvalidArgument(format!(
                "a launch token is {} hex digits, not '{}'",
                2 * TOKEN_BYTES,
                excerpt(s)
            ))
        };
        let bytes = from_hex(s).map_err(|_| bad())?;
        let b: [u8; TOKEN_BYTES] = bytes.try_into().map_err(|_| bad())?;
        Ok(Token(b))
    }

    /// Whether `other` is the same token, compared in time independent of where they differ.
    pub fn matches(&self, other: &Token) -> bool {
        self.0
            .iter()
            .zip(&other.0)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

impl std::fmt::Display for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&to_hex(&self.0))
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

/// What a rank's input is, compared across ranks at the rendezvous: its shape, its value
/// precision and a CRC-32 of its content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputIdentity {
    pub nrows: usize,
    pub ncols: usize,
    pub nnz: usize,
    pub precision: Precision,
    /// CRC-32 of the dimensions, the row pointers and column indices (little-endian u32), and
    /// the values' bits (little-endian, 4 or 8 bytes), hashed in parallel pieces.
    pub checksum: u32,
}

impl InputIdentity {
    /// The identity of `a`.
    pub fn of<T: Scalar>(a: &Csr<T>) -> InputIdentity {
        let mut h = crc32fast::Hasher::new();
        for d in [a.nrows(), a.ncols(), a.nnz()] {
            h.update(&(d as u64).to_le_bytes());
        }
        crc_pieces(&mut h, a.row_ptr(), |x, out| {
            out.extend_from_slice(&x.to_le_bytes())
        });
        crc_pieces(&mut h, a.col_idx(), |x, out| {
            out.extend_from_slice(&x.to_le_bytes())
        });
        crc_pieces(&mut h, a.vals(), |x, out| {
            out.extend_from_slice(&x.to_bits_u64().to_le_bytes()[..T::BYTES])
        });
        InputIdentity {
            nrows: a.nrows(),
            ncols: a.ncols(),
            nnz: a.nnz(),
            precision: T::PRECISION,
            checksum: h.finalize(),
        }
    }

    /// The identity of a matrix a rank reads only its rows of (issue #26): its dimensions, nnz,
    /// precision, and a CRC-32 of the dimensions, the whole row pointer array (what the
    /// partition is computed from) and `source`, a checksum of where the rows come from (the
    /// cache header's stored CRC of the whole file, or the CRC of a canonical GEN-SPEC). Ranks
    /// that would partition differently, or read different files, differ.
    pub fn of_rows(
        ncols: usize,
        row_ptr: &[Idx],
        precision: Precision,
        source: u32,
    ) -> InputIdentity {
        let nrows = row_ptr.len().saturating_sub(1);
        let nnz = row_ptr.last().map_or(0, |&l| l as usize);
        let mut h = crc32fast::Hasher::new();
        for d in [nrows, ncols, nnz] {
            h.update(&(d as u64).to_le_bytes());
        }
        crc_pieces(&mut h, row_ptr, |x, out| {
            out.extend_from_slice(&x.to_le_bytes())
        });
        h.update(&source.to_le_bytes());
        InputIdentity {
            nrows,
            ncols,
            nnz,
            precision,
            checksum: h.finalize(),
        }
    }

    /// The fields where `self` and `other` differ, as `name A vs B`.
    fn differences(&self, other: &InputIdentity) -> Vec<String> {
        let mut d = Vec::new();
        let mut cmp = |name: &str, a: String, b: String| {
            if a != b {
                d.push(format!("{name} {a} vs {b}"));
            }
        };
        cmp("rows", self.nrows.to_string(), other.nrows.to_string());
        cmp("cols", self.ncols.to_string(), other.ncols.to_string());
        cmp("nnz", self.nnz.to_string(), other.nnz.to_string());
        cmp(
            "precision",
            self.precision.to_string(),
            other.precision.to_string(),
        );
        cmp(
            "checksum",
            format!("{:08x}", self.checksum),
            format!("{:08x}", other.checksum),
        );
        d
    }
}

/// Feeds `v` to `h` as the bytes `bytes` writes for each element, converted and hashed in
/// parallel pieces of [`PIECE`] elements and combined in order.
fn crc_pieces<E: Sync>(
    h: &mut crc32fast::Hasher,
    v: &[E],
    bytes: impl Fn(&E, &mut Vec<u8>) + Sync,
) {
    let pieces: Vec<crc32fast::Hasher> = v
        .par_chunks(PIECE)
        .map(|piece| {
            let mut buf = Vec::with_capacity(piece.len() * 8);
            for x in piece {
                bytes(x, &mut buf);
            }
            let mut p = crc32fast::Hasher::new();
            p.update(&buf);
            p
        })
        .collect();
    for p in pieces {
        h.combine(&p);
    }
}

/// One rank's line to the rendezvous.
#[derive(Clone, Debug)]
pub struct Hello {
    pub token: Token,
    pub rank: usize,
    pub world: usize,
    pub input: InputIdentity,
    /// NCCL's unique id: rank 0 brings it, no other rank does.
    pub id: Option<Vec<u8>>,
}

impl Hello {
    /// The line sent, newline included.
    pub fn line(&self) -> String {
        let i = &self.input;
        let mut s = format!(
            "{HELLO} token {} rank {} world {} rows {} cols {} nnz {} prec {} crc {:08x}",
            self.token, self.rank, self.world, i.nrows, i.ncols, i.nnz, i.precision, i.checksum
        );
        if let Some(id) = &self.id {
            s.push_str(" id ");
            s.push_str(&to_hex(id));
        }
        s.push('\n');
        s
    }

    /// Parses [`Hello::line`]'s output (without its newline); the error says what is wrong.
    pub fn parse(line: &str) -> std::result::Result<Hello, String> {
        let malformed = || format!("malformed hello '{}'", excerpt(&without_token(line)));
        let rest = line
            .trim()
            .strip_prefix(HELLO)
            .filter(|r| r.is_empty() || r.starts_with(' '))
            .ok_or_else(|| format!("not a '{HELLO}' hello: '{}'", excerpt(line)))?;
        let words: Vec<&str> = rest.split_whitespace().collect();
        let token = match words.as_slice() {
            ["token", t, ..] => {
                Token::parse(t).map_err(|_| "wrong or missing token".to_string())?
            }
            _ => return Err("wrong or missing token".into()),
        };
        let (fields, id) = match &words[2..] {
            [f @ .., "id", hex] if f.len() == 14 => (f, Some(*hex)),
            f if f.len() == 14 => (f, None),
            _ => return Err(malformed()),
        };
        let num = |i: usize, key: &str| -> std::result::Result<usize, String> {
            match (fields[2 * i], fields[2 * i + 1].parse::<usize>()) {
                (k, Ok(v)) if k == key => Ok(v),
                _ => Err(malformed()),
            }
        };
        let (rank, world) = (num(0, "rank")?, num(1, "world")?);
        let (nrows, ncols, nnz) = (num(2, "rows")?, num(3, "cols")?, num(4, "nnz")?);
        let precision = match (fields[10], fields[11].parse::<Precision>()) {
            ("prec", Ok(p)) if fields[11] == p.name() => p,
            _ => return Err(malformed()),
        };
        let checksum = match (fields[12], fields[13]) {
            ("crc", c) if c.len() == 8 => u32::from_str_radix(c, 16).map_err(|_| malformed())?,
            _ => return Err(malformed()),
        };
        let id = match id {
            Some(hex) => match from_hex(hex) {
                Ok(b) if b.len() == ID_BYTES => Some(b),
                _ => return Err(format!("rank {rank}'s id is not {ID_BYTES} bytes of hex")),
            },
            None => None,
        };
        Ok(Hello {
            token,
            rank,
            world,
            input: InputIdentity {
                nrows,
                ncols,
                nnz,
                precision,
                checksum,
            },
            id,
        })
    }
}

/// `line` with the word after `token` replaced by `…`, so that messages never show a token.
fn without_token(line: &str) -> String {
    let mut after_token = false;
    let words: Vec<&str> = line
        .split_whitespace()
        .map(|w| {
            let shown = if after_token { "…" } else { w };
            after_token = w == "token";
            shown
        })
        .collect();
    words.join(" ")
}

/// At most 60 characters of `s`, for messages about input that came from elsewhere.
fn excerpt(s: &str) -> String {
    clip(s, 60)
}

/// At most `max` characters of `s` (then `…`), control characters escaped.
fn clip(s: &str, max: usize) -> String {
    let t = s.trim();
    let mut e = String::new();
    for c in t.chars().take(max) {
        if c.is_control() {
            e.extend(c.escape_default());
        } else {
            e.push(c);
        }
    }
    if t.chars().count() > max {
        e.push('…');
    }
    e
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
            "'{}' is not an even-length hex string",
            excerpt(s)
        )));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&s[i..i + 2], 16)
                .map_err(|_| Error::InvalidArgument(format!("'{}' is not hex", excerpt(s))))
        })
        .collect()
}

fn io_err(what: &str, e: std::io::Error) -> Error {
    Error::InvalidArgument(format!("rendezvous: {what}: {e}"))
}

/// What [`read_line`] found.
enum Line {
    /// A complete line, without its newline.
    Text(String),
    /// [`MAX_LINE`] bytes without a newline.
    TooLong,
    /// The peer closed the connection before a newline (`true` when it sent some bytes).
    Closed(bool),
    /// Bytes that are not UTF-8.
    NotText,
}

/// Reads one line of at most [`MAX_LINE`] bytes from `stream` through a bounded reader, giving
/// up at `deadline` (an `ErrorKind::TimedOut` or `WouldBlock` error). Bytes after the newline
/// are discarded: each side sends one line.
fn read_line(stream: &TcpStream, deadline: Instant) -> std::io::Result<Line> {
    let mut bounded = stream.take(MAX_LINE as u64);
    let mut line = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        stream.set_read_timeout(Some(left))?;
        let n = match bounded.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            return Ok(if bounded.limit() == 0 {
                Line::TooLong
            } else {
                Line::Closed(!line.is_empty())
            });
        }
        if let Some(end) = buf[..n].iter().position(|&b| b == b'\n') {
            line.extend_from_slice(&buf[..end]);
            return Ok(match String::from_utf8(line) {
                Ok(s) => Line::Text(s.trim_end_matches('\r').to_string()),
                Err(_) => Line::NotText,
            });
        }
        line.extend_from_slice(&buf[..n]);
    }
}

fn timed_out(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// Reads and parses a new connection's hello within `timeout`; the error is why it is dropped.
fn read_hello(stream: &TcpStream, timeout: Duration) -> std::result::Result<Hello, String> {
    stream
        .set_nonblocking(false)
        .map_err(|e| format!("configuring its socket: {e}"))?;
    match read_line(stream, Instant::now() + timeout) {
        Ok(Line::Text(l)) => Hello::parse(&l),
        Ok(Line::TooLong) => Err(format!("sent a line longer than {MAX_LINE} bytes")),
        Ok(Line::Closed(false)) => Err("closed the connection without a hello".into()),
        Ok(Line::Closed(true)) => Err("closed the connection in the middle of a line".into()),
        Ok(Line::NotText) => Err("sent a line that is not UTF-8 text".into()),
        Err(e) if timed_out(&e) => Err(format!("sent no complete hello within {timeout:?}")),
        Err(e) => Err(format!("reading its hello: {e}")),
    }
}

/// Sends `line` to a peer, best effort: a peer that went away or does not read learns nothing.
fn tell(mut stream: &TcpStream, line: &str) {
    let _ = stream.set_write_timeout(Some(Duration::from_secs(2)));
    let _ = stream.write_all(line.as_bytes());
}

/// Drops a connection: logs it on stderr, tells the peer why (best effort) and records it.
fn drop_peer(
    dropped: &mut Vec<Dropped>,
    stream: Option<&TcpStream>,
    peer: SocketAddr,
    why: String,
) {
    let d = Dropped { peer, why };
    eprintln!("rendezvous: {d}");
    if let Some(stream) = stream {
        tell(stream, &format!("error {}\n", d.why));
        let _ = stream.shutdown(std::net::Shutdown::Both);
    }
    dropped.push(d);
}

/// A connection the rendezvous dropped, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dropped {
    pub peer: SocketAddr,
    pub why: String,
}

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "dropped the connection from {}: {}", self.peer, self.why)
    }
}

/// What the rendezvous makes of a well-formed hello.
enum Verdict {
    /// One of this launch's ranks, taking its place.
    Admit,
    /// A stray or bad connection: dropped, the start goes on.
    Drop(String),
    /// The launch's own ranks disagree: the start ends for every rank.
    Refuse(Error),
}

/// The rendezvous server: accepts the `world` ranks of one launch (those with its token) and
/// hands rank 0's id to all.
pub struct Rendezvous {
    listener: TcpListener,
    world: usize,
    token: Token,
    hello_timeout: Duration,
}

impl Rendezvous {
    /// Listens on `addr`, which must name an interface (`127.0.0.1:0` picks a free port on the
    /// loopback; a wildcard address such as `0.0.0.0` or `[::]` is refused), for the `world`
    /// ranks that bring `token`.
    pub fn bind(addr: &str, world: usize, token: Token) -> Result<Rendezvous> {
        if world == 0 {
            return Err(Error::InvalidArgument(
                "rendezvous: a world needs at least one rank".into(),
            ));
        }
        let addrs: Vec<SocketAddr> = addr
            .to_socket_addrs()
            .map_err(|e| io_err(&format!("resolving {addr}"), e))?
            .collect();
        if addrs.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "rendezvous: {addr} resolves to no address"
            )));
        }
        if let Some(a) = addrs.iter().find(|a| a.ip().is_unspecified()) {
            return Err(Error::InvalidArgument(format!(
                "rendezvous: {addr} ({}) would listen on every interface; name the one the \
                 ranks reach, e.g. 10.0.0.1:29500 (127.0.0.1 on one host)",
                a.ip()
            )));
        }
        let listener =
            TcpListener::bind(&addrs[..]).map_err(|e| io_err(&format!("binding {addr}"), e))?;
        Ok(Rendezvous {
            listener,
            world,
            token,
            hello_timeout: HELLO_TIMEOUT,
        })
    }

    /// Sets how long a new connection may take to send its hello ([`HELLO_TIMEOUT`] by
    /// default).
    pub fn with_hello_timeout(mut self, timeout: Duration) -> Rendezvous {
        self.hello_timeout = timeout;
        self
    }

    /// The address ranks connect to.
    pub fn local_addr(&self) -> Result<SocketAddr> {
        self.listener
            .local_addr()
            .map_err(|e| io_err("reading the listening address", e))
    }

    /// What becomes of `hello`, from `peer`, given the ranks already here and the first one's
    /// input.
    fn judge(
        &self,
        hello: &Hello,
        peer: SocketAddr,
        ranks: &[Option<(TcpStream, SocketAddr)>],
        reference: Option<&(usize, InputIdentity)>,
    ) -> Verdict {
        if !hello.token.matches(&self.token) {
            return Verdict::Drop("wrong or missing token".into());
        }
        let rank = hello.rank;
        if hello.world != self.world {
            return Verdict::Refuse(Error::InvalidArgument(format!(
                "rendezvous: rank {rank} from {peer} says the world has {} ranks, not {}",
                hello.world, self.world
            )));
        }
        match ranks.get(rank) {
            None => {
                return Verdict::Drop(format!(
                    "rank {rank} is out of range for {} ranks",
                    self.world
                ))
            }
            Some(Some((_, first))) => {
                return Verdict::Drop(format!("rank {rank} is already claimed by {first}"))
            }
            Some(None) => {}
        }
        match (rank, &hello.id) {
            (0, None) => return Verdict::Drop("rank 0 brought no id".into()),
            (r, Some(_)) if r != 0 => {
                return Verdict::Drop(format!("rank {r} brought an id; only rank 0 does"))
            }
            _ => {}
        }
        if let Some((r0, first)) = reference {
            let diff = hello.input.differences(first);
            if !diff.is_empty() {
                return Verdict::Refuse(Error::InvalidArgument(format!(
                    "rendezvous: rank {rank} (from {peer}) and rank {r0} hold different \
                     inputs: {}; start every rank on the same matrix and precision",
                    diff.join(", ")
                )));
            }
        }
        Verdict::Admit
    }

    /// Serves one start-up: waits (at most `timeout`) for all ranks, then sends every rank the
    /// id, and returns the connections it dropped on the way (each also logged on stderr).
    /// A rank of this launch with another world size, or ranks holding different inputs, end
    /// it with an error that is also sent to the connected ranks.
    pub fn serve(self, timeout: Duration) -> Result<Vec<Dropped>> {
        let deadline = Instant::now() + timeout;
        self.listener
            .set_nonblocking(true)
            .map_err(|e| io_err("setting the listener non-blocking", e))?;
        type Arrival = (SocketAddr, TcpStream, std::result::Result<Hello, String>);
        let (tx, rx) = mpsc::channel::<Arrival>();
        let mut pending = 0usize;
        let mut ranks: Vec<Option<(TcpStream, SocketAddr)>> =
            (0..self.world).map(|_| None).collect();
        let mut reference: Option<(usize, InputIdentity)> = None;
        let mut id: Option<Vec<u8>> = None;
        let mut dropped = Vec::new();
        let mut arrived = 0;
        let result = loop {
            if arrived == self.world {
                break Ok(());
            }
            if Instant::now() > deadline {
                break Err(Error::InvalidArgument(format!(
                    "rendezvous: only {arrived} of {} ranks arrived within {timeout:?} \
                     ({} other connections dropped)",
                    self.world,
                    dropped.len()
                )));
            }
            let accepted = match self.listener.accept() {
                Ok((stream, peer)) => {
                    if pending >= MAX_PENDING {
                        drop_peer(
                            &mut dropped,
                            Some(&stream),
                            peer,
                            format!("{MAX_PENDING} connections are already being read"),
                        );
                    } else {
                        let (tx, hello_timeout) = (tx.clone(), self.hello_timeout);
                        let reader = std::thread::Builder::new()
                            .name("rendezvous-hello".into())
                            .spawn(move || {
                                let hello = read_hello(&stream, hello_timeout);
                                // after the start is over nobody listens: the connection ends
                                let _ = tx.send((peer, stream, hello));
                            });
                        match reader {
                            Ok(_) => pending += 1,
                            Err(e) => drop_peer(
                                &mut dropped,
                                None,
                                peer,
                                format!("no thread to read its hello: {e}"),
                            ),
                        }
                    }
                    true
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
                Err(e) => {
                    eprintln!("rendezvous: accepting a connection failed: {e}");
                    false
                }
            };
            let wait = if accepted {
                Duration::ZERO
            } else {
                Duration::from_millis(5)
            };
            let Ok((peer, stream, hello)) = rx.recv_timeout(wait) else {
                continue;
            };
            pending -= 1;
            let hello = match hello {
                Ok(h) => h,
                Err(why) => {
                    drop_peer(&mut dropped, Some(&stream), peer, why);
                    continue;
                }
            };
            let rank = hello.rank;
            match self.judge(&hello, peer, &ranks, reference.as_ref()) {
                Verdict::Admit => {}
                Verdict::Drop(why) => {
                    drop_peer(&mut dropped, Some(&stream), peer, why);
                    continue;
                }
                Verdict::Refuse(e) => {
                    tell(&stream, &format!("error {e}\n"));
                    break Err(e);
                }
            }
            reference.get_or_insert((rank, hello.input));
            if rank == 0 {
                id = hello.id;
            }
            ranks[rank] = Some((stream, peer));
            arrived += 1;
        };
        let reply = match (&result, &id) {
            (Ok(()), Some(hex)) => format!("id {}\n", to_hex(hex)),
            (Err(e), _) => format!("error {e}\n"),
            (Ok(()), None) => "error rank 0 sent no id\n".to_string(),
        };
        for (s, _) in ranks.iter().flatten() {
            tell(s, &reply);
        }
        result.map(|()| dropped)
    }
}

/// A rank's side: connects to the rendezvous at `root` (retrying until `timeout`, as the
/// server may start after the ranks on other hosts), sends `hello` and returns the id every
/// rank gets.
pub fn exchange_id(root: &str, hello: &Hello, timeout: Duration) -> Result<Vec<u8>> {
    let rank = hello.rank;
    match (rank, &hello.id) {
        (0, Some(id)) if id.len() == ID_BYTES => {}
        (0, _) => {
            return Err(Error::InvalidArgument(format!(
                "rendezvous: rank 0 must bring the {ID_BYTES}-byte id"
            )))
        }
        (_, Some(_)) => {
            return Err(Error::InvalidArgument(format!(
                "rendezvous: rank {rank} brings an id; only rank 0 does"
            )))
        }
        _ => {}
    }
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
    stream
        .write_all(hello.line().as_bytes())
        .map_err(|e| io_err(&format!("rank {rank} writing to {root}"), e))?;
    let waiting = format!("rank {rank} waiting for the id from {root}");
    let line = match read_line(
        &stream,
        deadline.max(Instant::now() + Duration::from_secs(1)),
    ) {
        Ok(Line::Text(l)) => l,
        Ok(Line::TooLong) => {
            return Err(Error::InvalidArgument(format!(
                "rendezvous: {waiting}: the answer is longer than {MAX_LINE} bytes"
            )))
        }
        Ok(Line::Closed(_) | Line::NotText) => {
            return Err(Error::InvalidArgument(format!(
                "rendezvous: {waiting}: the connection closed without an answer"
            )))
        }
        Err(e) => return Err(io_err(&waiting, e)),
    };
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
        clip(line.strip_prefix("error ").unwrap_or(&line), MAX_LINE)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufRead;
    use std::sync::mpsc::Receiver;
    use std::thread::JoinHandle;

    const WAIT: Duration = Duration::from_secs(20);

    fn nccl_id() -> Vec<u8> {
        (0..ID_BYTES as u32).map(|i| (i * 7) as u8).collect()
    }

    fn input(nnz: usize, checksum: u32) -> InputIdentity {
        InputIdentity {
            nrows: 10,
            ncols: 12,
            nnz,
            precision: Precision::F64,
            checksum,
        }
    }

    fn hello(token: &Token, rank: usize, world: usize, input: InputIdentity) -> Hello {
        Hello {
            token: token.clone(),
            rank,
            world,
            input,
            id: (rank == 0).then(nccl_id),
        }
    }

    /// A rendezvous for `world` ranks on a free loopback port, served on a thread.
    fn serve(
        world: usize,
        token: &Token,
        hello_timeout: Duration,
    ) -> (String, JoinHandle<Result<Vec<Dropped>>>) {
        let server = Rendezvous::bind("127.0.0.1:0", world, token.clone())
            .unwrap()
            .with_hello_timeout(hello_timeout);
        let addr = server.local_addr().unwrap().to_string();
        (addr, std::thread::spawn(move || server.serve(WAIT)))
    }

    /// Rank `rank` joining on a thread; its result arrives on the receiver.
    fn join(addr: &str, h: Hello) -> Receiver<Result<Vec<u8>>> {
        let (tx, rx) = mpsc::channel();
        let addr = addr.to_string();
        std::thread::spawn(move || {
            let _ = tx.send(exchange_id(&addr, &h, WAIT));
        });
        rx
    }

    /// The real ranks of a world of `world` with `token` and one input all join; every one must
    /// get the id.
    fn all_ranks_start(addr: &str, token: &Token, world: usize) {
        let rx: Vec<_> = (0..world)
            .rev()
            .map(|r| join(addr, hello(token, r, world, input(40, 0xfeed))))
            .collect();
        for r in rx {
            assert_eq!(r.recv_timeout(WAIT).unwrap().unwrap(), nccl_id());
        }
    }

    /// Sends raw bytes as a stray peer and returns what the server answered (empty when it
    /// closed or reset the connection without a line).
    fn stray(addr: &str, bytes: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(WAIT)).unwrap();
        // a server that stops reading early may reset the connection under a long write
        let _ = s.write_all(bytes);
        let mut line = String::new();
        let _ = std::io::BufReader::new(s).read_line(&mut line);
        line
    }

    #[test]
    fn hex_round_trips() {
        let b: Vec<u8> = (0..=255).collect();
        assert_eq!(from_hex(&to_hex(&b)).unwrap(), b);
        assert!(from_hex("abc").is_err());
        assert!(from_hex("zz").is_err());
    }

    #[test]
    fn tokens_are_random_and_round_trip() {
        let (a, b) = (Token::random().unwrap(), Token::random().unwrap());
        assert_eq!(a.to_string().len(), 2 * TOKEN_BYTES);
        assert!(!a.matches(&b));
        assert!(Token::parse(&a.to_string()).unwrap().matches(&a));
        assert!(!format!("{a:?}").contains(&a.to_string()));
        assert!(Token::parse("abcd").is_err());
        assert!(Token::parse(&"g".repeat(2 * TOKEN_BYTES)).is_err());
    }

    #[test]
    fn hellos_round_trip_and_bad_ones_say_why() {
        let t = Token::random().unwrap();
        for rank in [0, 3] {
            let h = hello(&t, rank, 4, input(17, 0xdead_beef));
            let line = h.line();
            assert!(line.len() <= MAX_LINE && line.ends_with('\n'));
            let p = Hello::parse(line.trim_end()).unwrap();
            assert!(p.token.matches(&t));
            assert_eq!((p.rank, p.world, p.input, p.id), (rank, 4, h.input, h.id));
        }
        let good = hello(&t, 1, 2, input(5, 1)).line();
        assert!(Hello::parse("GET / HTTP/1.1")
            .unwrap_err()
            .contains("not a"));
        assert!(Hello::parse("spmvkit-dist 1 rank 1 world 2")
            .unwrap_err()
            .contains("not a"));
        assert!(Hello::parse("spmvkit-dist 2 rank 1 world 2")
            .unwrap_err()
            .contains("token"));
        let e = Hello::parse(&good.replace("rank 1", "rank one")).unwrap_err();
        assert!(!e.contains(&t.to_string()), "the token is not shown: {e}");
        for bad in [
            good.replace("rank 1", "rank one"),
            good.replace(" nnz 5", ""),
            good.replace("prec f64", "prec f16"),
            good.replace("crc 00000001", "crc 1"),
            format!("{} extra", good.trim_end()),
        ] {
            assert!(
                Hello::parse(&bad).unwrap_err().contains("malformed"),
                "{bad}"
            );
        }
    }

    #[test]
    fn input_identity_sees_every_part() {
        // more entries than one checksum piece, so the pieces are combined
        let a = Csr::<f64>::identity(PIECE + 1000).unwrap();
        let id = InputIdentity::of(&a);
        assert_eq!(
            (id.nrows, id.nnz, id.precision),
            (a.nrows(), a.nnz(), Precision::F64)
        );
        let mut h = crc32fast::Hasher::new();
        for d in [a.nrows(), a.ncols(), a.nnz()] {
            h.update(&(d as u64).to_le_bytes());
        }
        for x in a.row_ptr().iter().chain(a.col_idx()) {
            h.update(&x.to_le_bytes());
        }
        for v in a.vals() {
            h.update(&v.to_le_bytes());
        }
        assert_eq!(
            id.checksum,
            h.finalize(),
            "pieces combine to the serial CRC"
        );
        let mut b = a.clone();
        b.vals_mut()[PIECE + 7] = 2.0;
        assert_ne!(InputIdentity::of(&b).checksum, id.checksum);
        assert_ne!(InputIdentity::of(&a.cast::<f32>()), id);
        assert_eq!(InputIdentity::of(&a.clone()), id);
    }

    #[test]
    fn every_rank_gets_rank_zeros_id() {
        let world = 4;
        let token = Token::random().unwrap();
        let (addr, server) = serve(world, &token, HELLO_TIMEOUT);
        // ranks arrive in any order
        all_ranks_start(&addr, &token, world);
        assert!(server.join().unwrap().unwrap().is_empty());
    }

    #[test]
    fn a_wrong_token_is_dropped_and_the_start_goes_on() {
        let token = Token::random().unwrap();
        let (addr, server) = serve(2, &token, HELLO_TIMEOUT);
        // a peer of another launch (or a guess) asks for rank 1 first, then one without a token
        let other = Token::random().unwrap();
        let r = exchange_id(&addr, &hello(&other, 1, 2, input(40, 0xfeed)), WAIT);
        assert!(r.unwrap_err().to_string().contains("token"));
        let answer = stray(&addr, b"spmvkit-dist 2 rank 1 world 2\n");
        assert!(
            answer.starts_with("error wrong or missing token"),
            "{answer}"
        );
        all_ranks_start(&addr, &token, 2);
        let dropped = server.join().unwrap().unwrap();
        assert_eq!(dropped.len(), 2, "{dropped:?}");
        assert!(dropped.iter().all(|d| d.why.contains("token")));
        assert!(dropped[0].to_string().contains("127.0.0.1"));
    }

    #[test]
    fn a_second_claim_of_a_rank_is_dropped() {
        let token = Token::random().unwrap();
        let (addr, server) = serve(2, &token, HELLO_TIMEOUT);
        let (tx, rx) = mpsc::channel();
        for _ in 0..2 {
            let (tx, addr, h) = (
                tx.clone(),
                addr.clone(),
                hello(&token, 1, 2, input(40, 0xfeed)),
            );
            std::thread::spawn(move || {
                let _ = tx.send(exchange_id(&addr, &h, WAIT));
            });
        }
        // the second claimant is answered at once; the first waits for rank 0
        let second = rx.recv_timeout(WAIT).unwrap();
        assert!(second.unwrap_err().to_string().contains("already claimed"));
        let zero = join(&addr, hello(&token, 0, 2, input(40, 0xfeed)));
        assert_eq!(zero.recv_timeout(WAIT).unwrap().unwrap(), nccl_id());
        assert_eq!(rx.recv_timeout(WAIT).unwrap().unwrap(), nccl_id());
        let dropped = server.join().unwrap().unwrap();
        assert_eq!(dropped.len(), 1);
        assert!(dropped[0].why.contains("rank 1 is already claimed"));
    }

    #[test]
    fn a_rank_out_of_range_is_dropped() {
        let token = Token::random().unwrap();
        let (addr, server) = serve(2, &token, HELLO_TIMEOUT);
        let answer = stray(
            &addr,
            hello(&token, 5, 2, input(40, 0xfeed)).line().as_bytes(),
        );
        assert!(answer.contains("out of range"), "{answer}");
        all_ranks_start(&addr, &token, 2);
        assert_eq!(server.join().unwrap().unwrap().len(), 1);
    }

    #[test]
    fn an_oversized_line_is_dropped() {
        let token = Token::random().unwrap();
        let (addr, server) = serve(2, &token, HELLO_TIMEOUT);
        // a real hello padded past the cap: only MAX_LINE bytes are ever read
        let mut big = hello(&token, 1, 2, input(40, 0xfeed)).line().into_bytes();
        big.pop();
        big.extend(std::iter::repeat_n(b' ', 8 * MAX_LINE));
        big.push(b'\n');
        stray(&addr, &big);
        all_ranks_start(&addr, &token, 2);
        let dropped = server.join().unwrap().unwrap();
        assert_eq!(dropped.len(), 1);
        assert!(dropped[0].why.contains("longer than"), "{}", dropped[0]);
    }

    #[test]
    fn malformed_lines_are_dropped() {
        let token = Token::random().unwrap();
        let (addr, server) = serve(2, &token, HELLO_TIMEOUT);
        let good = hello(&token, 1, 2, input(40, 0xfeed)).line();
        for (bytes, why) in [
            (b"GET / HTTP/1.1\r\n".to_vec(), "not a"),
            (
                good.replace("world 2", "world two").into_bytes(),
                "malformed",
            ),
            (b"\xff\xfe\n".to_vec(), "not UTF-8"),
            (good.trim_end().as_bytes().to_vec(), "closed"),
        ] {
            let mut s = TcpStream::connect(&addr).unwrap();
            s.set_read_timeout(Some(WAIT)).unwrap();
            s.write_all(&bytes).unwrap();
            // half-close: the line without a newline ends here
            s.shutdown(std::net::Shutdown::Write).unwrap();
            let mut line = String::new();
            let _ = std::io::BufReader::new(s).read_line(&mut line);
            assert!(line.starts_with("error") && line.contains(why), "{line}");
        }
        all_ranks_start(&addr, &token, 2);
        assert_eq!(server.join().unwrap().unwrap().len(), 4);
    }

    #[test]
    fn a_silent_connection_is_dropped_without_holding_up_the_ranks() {
        let token = Token::random().unwrap();
        let (addr, server) = serve(2, &token, Duration::from_millis(300));
        let silent = TcpStream::connect(&addr).unwrap();
        // while the silent peer is pending, both real ranks can already arrive
        let one = join(&addr, hello(&token, 1, 2, input(40, 0xfeed)));
        silent.set_read_timeout(Some(WAIT)).unwrap();
        let mut line = String::new();
        let _ = std::io::BufReader::new(&silent).read_line(&mut line);
        assert!(line.contains("no complete hello within"), "{line}");
        let zero = join(&addr, hello(&token, 0, 2, input(40, 0xfeed)));
        assert_eq!(zero.recv_timeout(WAIT).unwrap().unwrap(), nccl_id());
        assert_eq!(one.recv_timeout(WAIT).unwrap().unwrap(), nccl_id());
        assert_eq!(server.join().unwrap().unwrap().len(), 1);

        // and a silent peer does not delay a start that is otherwise complete
        let (addr, server) = serve(2, &token, WAIT);
        let _silent = TcpStream::connect(&addr).unwrap();
        let t0 = Instant::now();
        all_ranks_start(&addr, &token, 2);
        assert!(server.join().unwrap().unwrap().is_empty());
        assert!(t0.elapsed() < WAIT / 2);
    }

    #[test]
    fn different_inputs_are_refused_naming_both_ranks() {
        let token = Token::random().unwrap();
        let (addr, server) = serve(2, &token, HELLO_TIMEOUT);
        let zero = join(&addr, hello(&token, 0, 2, input(500, 0x1111_1111)));
        let one = join(&addr, hello(&token, 1, 2, input(499, 0x2222_2222)));
        let mut msgs = vec![server.join().unwrap().unwrap_err().to_string()];
        for rx in [zero, one] {
            msgs.push(rx.recv_timeout(WAIT).unwrap().unwrap_err().to_string());
        }
        for m in msgs {
            for want in ["rank 0", "rank 1", "different inputs", "499", "500"] {
                assert!(m.contains(want), "'{want}' not in: {m}");
            }
            assert!(m.contains("11111111") && m.contains("22222222"), "{m}");
            assert!(!m.contains("rows"), "only the differing values: {m}");
        }
    }

    #[test]
    fn a_wrong_world_is_refused() {
        let token = Token::random().unwrap();
        let (addr, server) = serve(2, &token, HELLO_TIMEOUT);
        let r = exchange_id(&addr, &hello(&token, 1, 3, input(1, 1)), WAIT);
        assert!(r.unwrap_err().to_string().contains("world"));
        assert!(server.join().unwrap().is_err());
    }

    #[test]
    fn missing_ranks_time_out() {
        let token = Token::random().unwrap();
        let server = Rendezvous::bind("127.0.0.1:0", 2, token.clone()).unwrap();
        assert!(server.serve(Duration::from_millis(50)).is_err());
        let h = hello(&token, 1, 2, input(1, 1));
        assert!(exchange_id("127.0.0.1:1", &h, Duration::from_millis(10)).is_err());
    }

    #[test]
    fn the_rendezvous_binds_the_named_interface_only() {
        let token = Token::random().unwrap();
        for wildcard in ["0.0.0.0:0", "[::]:0"] {
            let e = Rendezvous::bind(wildcard, 2, token.clone()).err().unwrap();
            assert!(e.to_string().contains("every interface"), "{e}");
        }
        let server = Rendezvous::bind("127.0.0.1:0", 2, token).unwrap();
        let a = server.local_addr().unwrap();
        assert_eq!(a.ip(), std::net::IpAddr::from([127, 0, 0, 1]));
        assert_ne!(a.port(), 0);
    }

    #[test]
    fn rank_env_is_validated() {
        let env = |rank, world, root: Option<&str>, token: Option<Token>| {
            RankEnv::new(rank, world, root.map(str::to_string), token)
        };
        let t = Token::random().unwrap();
        assert!(env(2, 2, Some("h:1"), Some(t.clone())).validate().is_err());
        assert!(env(0, 2, None, Some(t.clone())).validate().is_err());
        let e = env(1, 2, Some("h:1"), None).validate().unwrap_err();
        assert!(e.to_string().contains(ENV_TOKEN));
        assert!(env(1, 2, Some("h:1"), Some(t)).validate().is_ok());
        assert!(env(0, 1, None, None).validate().is_ok());
    }
}
