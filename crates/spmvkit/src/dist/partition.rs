//! The distributed matrix (issue #12, part 1): a row-block partition over P ranks balanced by
//! nnz, each rank's block split into a diagonal part (the columns it owns) and an off-diagonal
//! part whose columns are compressed to the ghost entries it needs, and the send/receive lists
//! of the halo exchange (PETSc's `MatMPIAIJ` + `VecScatter` shape). Pure CPU code: the GPU path
//! ([`super::nccl`]) and the in-memory simulation ([`super::sim`]) both build on it.
//!
//! Ownership of x: for a square matrix rank r owns the x entries of its rows (so the diagonal
//! part is the diagonal block); for a rectangular one the columns are split evenly.
//! Every rank computes the same [`Distribution`] from the same matrix, so choices made from it
//! (the exchange strategy) agree across ranks without communication.

use std::ops::Range;

use rayon::prelude::*;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::matrix::Csr;
use crate::scalar::{Idx, Scalar};

/// Row and column ownership of P ranks: rank r owns rows `row_starts[r]..row_starts[r+1]` and
/// the x entries `col_starts[r]..col_starts[r+1]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Partition {
    pub row_starts: Vec<usize>,
    pub col_starts: Vec<usize>,
}

impl Partition {
    /// Row blocks with nnz as even as row granularity allows (boundary k is the row start
    /// nearest to k·nnz/P); a matrix without entries is split by rows.
    ///
    /// ```
    /// use spmvkit::{dist::Partition, Csr};
    /// // rows of 3, 1, 1, 1 entries: two ranks get rows 0..1 and 1..4 (3 entries each)
    /// let a = Csr::<f64>::new(4, 4, vec![0, 3, 4, 5, 6], vec![0, 1, 2, 1, 2, 3], vec![1.0; 6]).unwrap();
    /// let p = Partition::by_nnz(&a, 2).unwrap();
    /// assert_eq!(p.row_starts, vec![0, 1, 4]);
    /// assert_eq!(p.col_starts, p.row_starts); // square: x follows the rows
    /// ```
    pub fn by_nnz<T: Scalar>(a: &Csr<T>, parts: usize) -> Result<Partition> {
        if parts == 0 {
            return Err(Error::InvalidArgument(
                "distribution: the number of ranks must be at least 1".into(),
            ));
        }
        Partition::from_row_ptr(a.ncols(), a.row_ptr(), parts)
    }

    /// [`Partition::by_nnz`] from the row pointers alone (nrows+1 entries, ending at nnz): what a
    /// rank that reads only its rows computes before it reads them (issue #26).
    pub fn from_row_ptr(ncols: usize, ptr: &[Idx], parts: usize) -> Result<Partition> {
        if parts == 0 {
            return Err(Error::InvalidArgument(
                "distribution: the number of ranks must be at least 1".into(),
            ));
        }
        let Some(&last) = ptr.last() else {
            return Err(Error::InvalidArgument(
                "distribution: row pointers need at least one entry".into(),
            ));
        };
        let (m, n, nnz) = (ptr.len() - 1, ncols, last as usize);
        let mut row_starts = Vec::with_capacity(parts + 1);
        row_starts.push(0);
        for k in 1..parts {
            let b = if nnz == 0 {
                k * m / parts
            } else {
                let target = (k as u128 * nnz as u128 / parts as u128) as u64;
                // first row start at or past the target, then the nearer of it and the one before
                let i = ptr.partition_point(|&p| (p as u64) < target).min(m);
                if i > 0 && target - ptr[i - 1] as u64 <= (ptr[i] as u64).saturating_sub(target) {
                    i - 1
                } else {
                    i
                }
            };
            let prev = *row_starts.last().unwrap_or(&0);
            row_starts.push(b.clamp(prev, m));
        }
        row_starts.push(m);
        let col_starts = if m == n {
            row_starts.clone()
        } else {
            (0..=parts).map(|k| k * n / parts).collect()
        };
        Ok(Partition {
            row_starts,
            col_starts,
        })
    }

    /// Number of ranks.
    pub fn parts(&self) -> usize {
        self.row_starts.len() - 1
    }
    /// Rows of rank r.
    pub fn rows(&self, r: usize) -> Range<usize> {
        self.row_starts[r]..self.row_starts[r + 1]
    }
    /// x entries owned by rank r.
    pub fn cols(&self, r: usize) -> Range<usize> {
        self.col_starts[r]..self.col_starts[r + 1]
    }
    /// The largest number of x entries any rank owns (the all-gather chunk).
    pub fn max_cols(&self) -> usize {
        (0..self.parts())
            .map(|r| self.cols(r).len())
            .max()
            .unwrap_or(0)
    }
    /// The rank owning x entry j.
    pub fn owner_of_col(&self, j: usize) -> usize {
        // last r with col_starts[r] <= j, skipping ranks that own nothing
        self.col_starts[1..].partition_point(|&s| s <= j)
    }
}

/// How each call gathers the x entries a rank needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// NCCL all-gather of the whole x (chunks padded to [`Partition::max_cols`]).
    AllGather,
    /// Grouped NCCL send/recv of only the needed entries.
    Halo,
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Strategy::AllGather => "allgather",
            Strategy::Halo => "halo",
        })
    }
}

/// The user's wish: a strategy, or `Auto` (chosen by volume, [`Distribution::choose`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrategyChoice {
    Auto,
    Force(Strategy),
}

impl std::str::FromStr for StrategyChoice {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(StrategyChoice::Auto),
            "allgather" | "all-gather" => Ok(StrategyChoice::Force(Strategy::AllGather)),
            "halo" => Ok(StrategyChoice::Force(Strategy::Halo)),
            other => Err(Error::InvalidArgument(format!(
                "exchange strategy '{other}': expected auto, allgather or halo"
            ))),
        }
    }
}

/// The halo is chosen when the largest per-rank halo is at most this fraction of the padded
/// all-gather volume: the halo pays a pack kernel and P−1 point-to-point pairs that the
/// bandwidth-optimal all-gather ring does not.
pub const HALO_FRACTION: f64 = 0.5;

/// Entries moved per call, per rank, by each strategy.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Volumes {
    /// Ghost entries each rank receives in the halo exchange.
    pub halo_recv: Vec<usize>,
    /// Entries each rank sends in the halo exchange.
    pub halo_send: Vec<usize>,
    /// Entries each rank receives in the all-gather: (P−1)·max_cols.
    pub allgather_recv: usize,
}

impl Volumes {
    /// The strategy: forced, or the halo when its largest per-rank volume is at most
    /// [`HALO_FRACTION`] of the all-gather's. With one rank there is nothing to exchange and the
    /// answer is `Halo` (empty).
    pub fn choose(&self, choice: StrategyChoice) -> Strategy {
        match choice {
            StrategyChoice::Force(s) => s,
            StrategyChoice::Auto => {
                let halo = self
                    .halo_recv
                    .iter()
                    .zip(&self.halo_send)
                    .map(|(r, s)| *r.max(s))
                    .max()
                    .unwrap_or(0);
                if halo as f64 <= HALO_FRACTION * self.allgather_recv as f64 {
                    Strategy::Halo
                } else {
                    Strategy::AllGather
                }
            }
        }
    }
}

/// A matrix's distribution over P ranks: the partition and every rank's ghost columns.
#[derive(Clone, Debug)]
pub struct Distribution {
    pub partition: Partition,
    /// Ghost columns of each rank (global indices, ascending, none owned by that rank).
    pub ghosts: Vec<Vec<Idx>>,
}

impl Distribution {
    /// Partitions `a` over `parts` ranks and finds every rank's ghosts.
    ///
    /// ```
    /// use spmvkit::{dist::{Distribution, Strategy, StrategyChoice}, gen};
    /// let a = gen::generate_f64("poisson2d:8").unwrap();
    /// let d = Distribution::new(&a, 2).unwrap();
    /// // a 5-point stencil split in two halves needs one grid line from the other half
    /// assert_eq!(d.ghosts[0].len(), 8);
    /// assert_eq!(d.choose(StrategyChoice::Auto), Strategy::Halo);
    /// ```
    pub fn new<T: Scalar>(a: &Csr<T>, parts: usize) -> Result<Distribution> {
        let partition = Partition::by_nnz(a, parts)?;
        let ghosts = (0..parts)
            .into_par_iter()
            .map(|r| ghost_columns(a, &partition, r))
            .collect();
        Ok(Distribution { partition, ghosts })
    }

    /// Per-rank volumes of both strategies.
    pub fn volumes(&self) -> Volumes {
        let p = self.partition.parts();
        let halo_send = (0..p)
            .map(|q| {
                let cols = self.partition.cols(q);
                (0..p)
                    .filter(|&r| r != q)
                    .map(|r| owned_range(&self.ghosts[r], &cols).len())
                    .sum()
            })
            .collect();
        Volumes {
            halo_recv: self.ghosts.iter().map(Vec::len).collect(),
            halo_send,
            allgather_recv: (p - 1) * self.partition.max_cols(),
        }
    }

    /// The strategy: forced, or the halo when its largest per-rank volume is at most
    /// [`HALO_FRACTION`] of the all-gather's. With one rank there is nothing to exchange and the
    /// answer is `Halo` (empty).
    pub fn choose(&self, choice: StrategyChoice) -> Strategy {
        self.volumes().choose(choice)
    }

    /// Rank r's block of `a`, split for `strategy`.
    pub fn block<T: Scalar>(&self, a: &Csr<T>, r: usize, strategy: Strategy) -> RankBlock<T> {
        let part = &self.partition;
        let cols = part.cols(r);
        let send: Vec<SendList> = (0..part.parts())
            .filter(|&q| q != r)
            .filter_map(|q| {
                let g = &self.ghosts[q][owned_range(&self.ghosts[q], &cols)];
                (!g.is_empty()).then(|| SendList {
                    peer: q,
                    idx: g.iter().map(|&j| j - cols.start as Idx).collect(),
                })
            })
            .collect();
        assemble_block(
            a,
            part.rows(r),
            part,
            r,
            self.ghosts[r].clone(),
            send,
            strategy,
        )
    }
}

/// Rank r's block from `a`'s rows `rows_in_a` (rank r's rows: the whole matrix's
/// `part.rows(r)`, or `0..` of a matrix holding only them), its ghosts and its send lists.
pub(crate) fn assemble_block<T: Scalar>(
    a: &Csr<T>,
    rows_in_a: Range<usize>,
    part: &Partition,
    r: usize,
    ghosts: Vec<Idx>,
    send: Vec<SendList>,
    strategy: Strategy,
) -> RankBlock<T> {
    let p = part.parts();
    let rows = part.rows(r);
    let cols = part.cols(r);
    let recv: Vec<Segment> = (0..p)
        .filter(|&q| q != r)
        .map(|q| Segment {
            peer: q,
            range: owned_range(&ghosts, &part.cols(q)),
        })
        .filter(|s| !s.range.is_empty())
        .collect();
    // Column of each off-diagonal entry in the x the off-diagonal part reads: the ghost
    // buffer (halo) or the padded all-gather buffer.
    let chunk = part.max_cols();
    let offd_cols: Vec<Idx> = match strategy {
        Strategy::Halo => (0..ghosts.len() as Idx).collect(),
        Strategy::AllGather => ghosts
            .iter()
            .map(|&j| {
                let q = part.owner_of_col(j as usize);
                (q * chunk + (j as usize - part.col_starts[q])) as Idx
            })
            .collect(),
    };
    let offd_ncols = match strategy {
        Strategy::Halo => ghosts.len(),
        Strategy::AllGather => p * chunk,
    };
    let (diag, offd) = split_rows(a, rows_in_a, cols.clone(), &ghosts, &offd_cols, offd_ncols);
    RankBlock {
        rank: r,
        rows,
        cols,
        strategy,
        chunk,
        diag,
        offd,
        ghosts,
        recv,
        send,
    }
}

/// Ghost entries rank r receives from one peer: `range` in its ghost buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub peer: usize,
    pub range: Range<usize>,
}

/// Entries a rank sends to one peer: offsets into its own x, in the peer's ghost order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SendList {
    pub peer: usize,
    pub idx: Vec<Idx>,
}

/// One rank's share: its rows split into diagonal and off-diagonal parts, and its exchange lists.
#[derive(Clone, Debug, PartialEq)]
pub struct RankBlock<T> {
    pub rank: usize,
    pub rows: Range<usize>,
    /// The x entries this rank owns.
    pub cols: Range<usize>,
    /// The strategy the off-diagonal columns are numbered for.
    pub strategy: Strategy,
    /// The all-gather chunk ([`Partition::max_cols`]).
    pub chunk: usize,
    /// rows × owned columns, local column indices.
    pub diag: Csr<T>,
    /// rows × (ghosts, or P·chunk for the all-gather), see [`Distribution::block`].
    pub offd: Csr<T>,
    /// Global column of each ghost entry, ascending.
    pub ghosts: Vec<Idx>,
    /// Where each peer's entries land in the ghost buffer (peers ascending).
    pub recv: Vec<Segment>,
    /// What this rank sends to each peer (peers ascending).
    pub send: Vec<SendList>,
}

/// The positions in a sorted ghost list of the columns in `cols`.
pub(crate) fn owned_range(ghosts: &[Idx], cols: &Range<usize>) -> Range<usize> {
    let lo = ghosts.partition_point(|&j| (j as usize) < cols.start);
    let hi = ghosts.partition_point(|&j| (j as usize) < cols.end);
    lo..hi
}

/// Columns outside rank r's own x that its rows touch, ascending.
fn ghost_columns<T: Scalar>(a: &Csr<T>, part: &Partition, r: usize) -> Vec<Idx> {
    let rows = part.rows(r);
    let ptr = a.row_ptr();
    let entries = &a.col_idx()[ptr[rows.start] as usize..ptr[rows.end] as usize];
    ghosts_of(entries, a.ncols(), part.cols(r))
}

/// The columns among `entries` outside `own`, ascending and distinct (a bitmap over all
/// `ncols` columns: n/8 bytes, never the matrix).
pub(crate) fn ghosts_of(entries: &[Idx], ncols: usize, own: Range<usize>) -> Vec<Idx> {
    let words = ncols.div_ceil(64);
    let bits = entries
        .par_chunks(1 << 20)
        .fold(
            || vec![0u64; words],
            |mut bits, chunk| {
                for &j in chunk {
                    let j = j as usize;
                    if !own.contains(&j) {
                        bits[j / 64] |= 1 << (j % 64);
                    }
                }
                bits
            },
        )
        .reduce(
            || vec![0u64; words],
            |mut a, b| {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x |= y);
                a
            },
        );
    let mut out = Vec::new();
    for (w, &word) in bits.iter().enumerate() {
        let mut b = word;
        while b != 0 {
            out.push((w * 64 + b.trailing_zeros() as usize) as Idx);
            b &= b - 1;
        }
    }
    out
}

/// One chunk of rows split into (diag lens, diag cols, diag vals, offd lens, offd cols, offd vals).
type SplitChunk<T> = (Vec<Idx>, Vec<Idx>, Vec<T>, Vec<Idx>, Vec<Idx>, Vec<T>);

/// Splits `rows` of `a` into the diagonal part (columns in `own`, renumbered from 0) and the
/// off-diagonal part (column j renumbered to `offd_cols[position of j in ghosts]`).
fn split_rows<T: Scalar>(
    a: &Csr<T>,
    rows: Range<usize>,
    own: Range<usize>,
    ghosts: &[Idx],
    offd_cols: &[Idx],
    offd_ncols: usize,
) -> (Csr<T>, Csr<T>) {
    const CHUNK: usize = 1 << 14;
    let starts: Vec<usize> = rows.clone().step_by(CHUNK).collect();
    let chunks: Vec<SplitChunk<T>> = starts
        .par_iter()
        .map(|&s| {
            let e = (s + CHUNK).min(rows.end);
            let mut c: SplitChunk<T> = Default::default();
            for i in s..e {
                let (cols, vals) = a.row(i);
                let (mut nd, mut no) = (0, 0);
                for (&j, &v) in cols.iter().zip(vals) {
                    let j = j as usize;
                    if own.contains(&j) {
                        c.1.push((j - own.start) as Idx);
                        c.2.push(v);
                        nd += 1;
                    } else {
                        // ghosts holds every off-diagonal column of these rows
                        let g = ghosts.partition_point(|&k| (k as usize) < j);
                        c.4.push(offd_cols[g]);
                        c.5.push(v);
                        no += 1;
                    }
                }
                c.0.push(nd);
                c.3.push(no);
            }
            c
        })
        .collect();
    let nrows = rows.len();
    let assemble = |lens: &dyn Fn(&SplitChunk<T>) -> &Vec<Idx>,
                    cols: &dyn Fn(&SplitChunk<T>) -> &Vec<Idx>,
                    vals: &dyn Fn(&SplitChunk<T>) -> &Vec<T>,
                    ncols: usize| {
        let mut ptr = Vec::with_capacity(nrows + 1);
        ptr.push(0 as Idx);
        let mut acc: Idx = 0;
        for c in &chunks {
            for &l in lens(c) {
                acc += l;
                ptr.push(acc);
            }
        }
        let idx: Vec<Idx> = chunks
            .iter()
            .flat_map(|c| cols(c).iter().copied())
            .collect();
        let v: Vec<T> = chunks
            .iter()
            .flat_map(|c| vals(c).iter().copied())
            .collect();
        Csr::from_parts_unchecked(nrows, ncols, ptr, idx, v)
    };
    let diag = assemble(&|c| &c.0, &|c| &c.1, &|c| &c.2, own.len());
    let offd = assemble(&|c| &c.3, &|c| &c.4, &|c| &c.5, offd_ncols);
    (diag, offd)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen;
    use crate::methods::testmats;

    fn check_partition<T: Scalar>(a: &Csr<T>, p: usize) {
        let part = Partition::by_nnz(a, p).unwrap();
        assert_eq!(part.parts(), p);
        assert_eq!(part.row_starts[0], 0);
        assert_eq!(part.row_starts[p], a.nrows());
        assert_eq!(part.col_starts[p], a.ncols());
        assert!(part.row_starts.windows(2).all(|w| w[0] <= w[1]));
        assert!(part.col_starts.windows(2).all(|w| w[0] <= w[1]));
        for j in 0..a.ncols() {
            assert!(part.cols(part.owner_of_col(j)).contains(&j), "col {j}");
        }
        // nnz balance: every block within the longest row of the ideal share
        let ptr = a.row_ptr();
        let longest = (0..a.nrows()).map(|i| a.row_len(i)).max().unwrap_or(0);
        for r in 0..p {
            let rows = part.rows(r);
            let nnz = (ptr[rows.end] - ptr[rows.start]) as usize;
            assert!(
                nnz <= a.nnz() / p + 2 * longest + 1,
                "rank {r} of {p}: {nnz} of {}",
                a.nnz()
            );
        }
    }

    #[test]
    fn partitions_cover_and_balance() {
        for (_, a) in gen::corpus::edge_cases() {
            for p in 1..=5 {
                check_partition(&a, p);
            }
        }
        for (_, a) in testmats::suite() {
            for p in [1, 2, 3, 7] {
                check_partition(&a, p);
            }
        }
        // power-law rows: balanced by nnz, not by rows
        let a = gen::generate_f64("kron:10").unwrap();
        let part = Partition::by_nnz(&a, 4).unwrap();
        check_partition(&a, 4);
        let rows: Vec<usize> = (0..4).map(|r| part.rows(r).len()).collect();
        assert!(rows.iter().max() != rows.iter().min(), "{rows:?}");
    }

    #[test]
    fn zero_ranks_is_an_error() {
        let a = Csr::<f64>::identity(3).unwrap();
        assert!(Partition::by_nnz(&a, 0).is_err());
    }

    /// Rebuilds rank r's rows from its block and compares them with `a` entry by entry.
    fn check_block(a: &Csr<f64>, d: &Distribution, r: usize, s: Strategy) {
        let b = d.block(a, r, s);
        let part = &d.partition;
        assert_eq!(b.diag.nrows(), b.rows.len());
        assert_eq!(b.offd.nrows(), b.rows.len());
        assert_eq!(b.diag.nnz() + b.offd.nnz(), {
            let p = a.row_ptr();
            (p[b.rows.end] - p[b.rows.start]) as usize
        });
        assert!(b.ghosts.windows(2).all(|w| w[0] < w[1]));
        assert!(b.ghosts.iter().all(|&j| !b.cols.contains(&(j as usize))));
        // the global column an off-diagonal entry reads
        let global = |c: usize| -> usize {
            match s {
                Strategy::Halo => b.ghosts[c] as usize,
                Strategy::AllGather => {
                    let q = c / b.chunk;
                    part.col_starts[q] + c % b.chunk
                }
            }
        };
        for (li, i) in b.rows.clone().enumerate() {
            let mut want: Vec<(usize, f64)> = a
                .row(i)
                .0
                .iter()
                .map(|&j| j as usize)
                .zip(a.row(i).1.iter().copied())
                .collect();
            let mut got: Vec<(usize, f64)> = b
                .diag
                .row(li)
                .0
                .iter()
                .zip(b.diag.row(li).1)
                .map(|(&j, &v)| (j as usize + b.cols.start, v))
                .chain(
                    b.offd
                        .row(li)
                        .0
                        .iter()
                        .zip(b.offd.row(li).1)
                        .map(|(&c, &v)| (global(c as usize), v)),
                )
                .collect();
            want.sort_by(|x, y| x.partial_cmp(y).unwrap());
            got.sort_by(|x, y| x.partial_cmp(y).unwrap());
            assert_eq!(want, got, "rank {r} row {i}");
        }
        // the receive segments tile the ghost buffer, each from the owner of its columns
        let mut next = 0;
        for seg in &b.recv {
            assert_eq!(seg.range.start, next);
            next = seg.range.end;
            for g in seg.range.clone() {
                assert_eq!(part.owner_of_col(b.ghosts[g] as usize), seg.peer);
            }
        }
        assert_eq!(next, b.ghosts.len());
        // what rank r sends to q is exactly q's segment from r
        for sl in &b.send {
            let peer = d.block(a, sl.peer, s);
            let seg = peer.recv.iter().find(|g| g.peer == r).unwrap();
            let sent: Vec<Idx> = sl.idx.iter().map(|&k| k + b.cols.start as Idx).collect();
            assert_eq!(&sent[..], &peer.ghosts[seg.range.clone()]);
        }
    }

    #[test]
    fn blocks_rebuild_the_matrix() {
        let mut mats: Vec<Csr<f64>> = gen::corpus::edge_cases()
            .into_iter()
            .map(|(_, a)| a)
            .collect();
        mats.extend(testmats::suite().into_iter().map(|(_, a)| a));
        mats.push(gen::generate_f64("poisson3d:6").unwrap());
        mats.push(gen::generate_f64("kron:9").unwrap());
        for a in &mats {
            for p in [1, 2, 3, 4] {
                let d = Distribution::new(a, p).unwrap();
                for r in 0..p {
                    for s in [Strategy::Halo, Strategy::AllGather] {
                        check_block(a, &d, r, s);
                    }
                }
            }
        }
    }

    #[test]
    fn strategy_follows_the_volume() {
        let stencil = gen::generate_f64("poisson3d:12").unwrap();
        let d = Distribution::new(&stencil, 2).unwrap();
        let v = d.volumes();
        assert_eq!(v.halo_recv, vec![144, 144]);
        assert_eq!(v.halo_send, vec![144, 144]);
        assert_eq!(d.choose(StrategyChoice::Auto), Strategy::Halo);
        let dense = Csr::<f64>::new(
            4,
            4,
            vec![0, 4, 8, 12, 16],
            [0, 1, 2, 3].repeat(4),
            vec![1.0; 16],
        )
        .unwrap();
        let d = Distribution::new(&dense, 2).unwrap();
        assert_eq!(d.choose(StrategyChoice::Auto), Strategy::AllGather);
        assert_eq!(
            d.choose(StrategyChoice::Force(Strategy::Halo)),
            Strategy::Halo
        );
        assert_eq!(
            "halo".parse::<StrategyChoice>().unwrap(),
            StrategyChoice::Force(Strategy::Halo)
        );
        assert!("ring".parse::<StrategyChoice>().is_err());
    }
}
