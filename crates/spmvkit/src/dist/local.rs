//! Ranks that read only their rows (issue #26, part 1). A rank reads the row pointers of the
//! whole matrix (nrows+1 entries), partitions by nnz from them as every rank does
//! ([`Partition::from_row_ptr`]), then reads or generates only its own rows ([`RowSource`]: a
//! `.spmvkit` cache file by byte range, a Matrix Market file through its cache, or a generator
//! that builds any row range alone). Its ghost columns come from its own rows; the send lists,
//! which need the other ranks' ghosts, come from one exchange of ghost requests (every rank
//! sends each peer the columns it needs from it, PETSc's `VecScatterCreate`), and the strategy
//! from an all-gather of the per-rank volumes ([`SetupExchange`]: threads in the simulation,
//! NCCL between GPU ranks). Memory per rank: its rows, the row pointers, a column bitmap (n/8
//! bytes) and its halo lists, never the whole matrix.
//!
//! The result equals the whole-matrix [`Distribution`](super::Distribution)'s block entry for
//! entry (the tests build both).

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier, Mutex};

use super::bootstrap::InputIdentity;
use super::partition::{
    assemble_block, ghosts_of, owned_range, Partition, RankBlock, SendList, StrategyChoice, Volumes,
};
use crate::error::{Error, Result};
use crate::gen::{self, RowGenerator};
use crate::io::CacheRows;
use crate::matrix::Csr;
use crate::scalar::{Idx, Scalar};

/// The collective steps of setting up a distribution, between the ranks of one world.
pub trait SetupExchange {
    /// This rank.
    fn rank(&self) -> usize;
    /// The number of ranks.
    fn world(&self) -> usize;
    /// Every rank's `mine` (the same length on every rank), in rank order.
    fn all_gather(&mut self, mine: &[u64]) -> Result<Vec<Vec<u64>>>;
    /// Sends `to[q]` to rank q (`to` has one list per rank; this rank's own is ignored) and
    /// returns the list each rank sent to this one, in rank order (this rank's own empty).
    fn all_to_all(&mut self, to: Vec<Vec<Idx>>) -> Result<Vec<Vec<Idx>>>;
}

/// The exchange of a world of one rank: nothing to exchange.
pub struct Solo;

impl SetupExchange for Solo {
    fn rank(&self) -> usize {
        0
    }
    fn world(&self) -> usize {
        1
    }
    fn all_gather(&mut self, mine: &[u64]) -> Result<Vec<Vec<u64>>> {
        Ok(vec![mine.to_vec()])
    }
    fn all_to_all(&mut self, _to: Vec<Vec<Idx>>) -> Result<Vec<Vec<Idx>>> {
        Ok(vec![Vec::new()])
    }
}

/// What the simulated ranks (one thread each) post for the others.
struct Board {
    barrier: Barrier,
    lists: Mutex<Vec<Vec<Vec<Idx>>>>,
    counts: Mutex<Vec<Vec<u64>>>,
}

/// [`SetupExchange`] between threads of one process, one per simulated rank: each posts its
/// part on a shared board, waits for all, reads what is addressed to it, and waits again.
pub struct ThreadExchange {
    rank: usize,
    world: usize,
    board: Arc<Board>,
}

impl ThreadExchange {
    /// One exchange per rank of a world of `world` threads.
    pub fn world(world: usize) -> Vec<ThreadExchange> {
        let board = Arc::new(Board {
            barrier: Barrier::new(world),
            lists: Mutex::new(vec![Vec::new(); world]),
            counts: Mutex::new(vec![Vec::new(); world]),
        });
        (0..world)
            .map(|rank| ThreadExchange {
                rank,
                world,
                board: board.clone(),
            })
            .collect()
    }

    fn poisoned() -> Error {
        Error::InvalidArgument("simulated ranks: another rank panicked".into())
    }
}

impl SetupExchange for ThreadExchange {
    fn rank(&self) -> usize {
        self.rank
    }
    fn world(&self) -> usize {
        self.world
    }
    fn all_gather(&mut self, mine: &[u64]) -> Result<Vec<Vec<u64>>> {
        self.board.counts.lock().map_err(|_| Self::poisoned())?[self.rank] = mine.to_vec();
        self.board.barrier.wait();
        let all = self
            .board
            .counts
            .lock()
            .map_err(|_| Self::poisoned())?
            .clone();
        self.board.barrier.wait();
        Ok(all)
    }
    fn all_to_all(&mut self, to: Vec<Vec<Idx>>) -> Result<Vec<Vec<Idx>>> {
        self.board.lists.lock().map_err(|_| Self::poisoned())?[self.rank] = to;
        self.board.barrier.wait();
        let from = {
            let lists = self.board.lists.lock().map_err(|_| Self::poisoned())?;
            (0..self.world)
                .map(|q| {
                    if q == self.rank {
                        Vec::new()
                    } else {
                        lists[q].get(self.rank).cloned().unwrap_or_default()
                    }
                })
                .collect()
        };
        self.board.barrier.wait();
        Ok(from)
    }
}

/// Where a rank's rows come from.
pub enum RowSource<T> {
    /// A `.spmvkit` cache file, read by byte range.
    Cache(PathBuf),
    /// A generator that builds any row range alone; the canonical spec names it.
    Gen(RowGenerator<T>, String),
}

impl<T: Scalar> RowSource<T> {
    /// The source for `matrix` (a GEN-SPEC, a `.spmvkit` file or a Matrix Market file): a
    /// generator when its kind builds row ranges, a cache file (a Matrix Market file's is built
    /// by one parse when missing or stale, in `cache_dir` or the default cache directory), or
    /// `None` when the rows cannot be read alone (a kind such as `kron`, or `use_cache` false
    /// for a Matrix Market file): the caller loads the whole matrix then.
    pub fn for_matrix(
        matrix: &str,
        cache_dir: Option<&Path>,
        use_cache: bool,
    ) -> Result<Option<RowSource<T>>> {
        if gen::looks_like_spec(matrix) {
            let spec = gen::parse_spec(matrix)?.to_string();
            return Ok(gen::row_generator::<T>(&spec)?.map(|g| RowSource::Gen(g, spec)));
        }
        let path = Path::new(matrix);
        let is_cache = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("spmvkit"));
        if !is_cache && !use_cache {
            return Ok(None);
        }
        Ok(Some(RowSource::Cache(crate::io::ensure_cache::<T>(
            path, cache_dir,
        )?)))
    }

    /// Reads the row pointers, partitions over `world` ranks and reads rank `rank`'s rows.
    pub fn load(&self, rank: usize, world: usize) -> Result<LocalRows<T>> {
        if rank >= world {
            return Err(Error::InvalidArgument(format!(
                "rank {rank} of a world of {world}"
            )));
        }
        let (ncols, row_ptr, source) = match self {
            RowSource::Cache(path) => {
                let f = CacheRows::open(path)?;
                let h = f.header().clone();
                let ptr = f.row_ptr(0..h.nrows as usize)?;
                (h.ncols as usize, ptr, (Some(f), h.checksum))
            }
            RowSource::Gen(g, spec) => (
                g.ncols(),
                g.row_ptr()?,
                (None, crc32fast::hash(spec.as_bytes())),
            ),
        };
        let partition = Partition::from_row_ptr(ncols, &row_ptr, world)?;
        let identity = InputIdentity::of_rows(ncols, &row_ptr, T::PRECISION, source.1);
        let range = partition.rows(rank);
        let rows = match (self, source.0) {
            (RowSource::Cache(_), Some(f)) => f.rows::<T>(range)?,
            (RowSource::Gen(g, _), _) => g.rows(range, &row_ptr)?,
            (RowSource::Cache(path), None) => {
                return Err(Error::Cache {
                    path: path.clone(),
                    msg: "not opened".into(),
                })
            }
        };
        Ok(LocalRows {
            partition,
            rank,
            rows,
            identity,
        })
    }
}

/// A rank's rows of a matrix it did not load whole.
#[derive(Clone, Debug)]
pub struct LocalRows<T> {
    /// The partition every rank computes from the same row pointers.
    pub partition: Partition,
    pub rank: usize,
    /// This rank's rows (`partition.rows(rank)`), global column indices.
    pub rows: Csr<T>,
    /// What the rank brings to the rendezvous ([`InputIdentity::of_rows`]).
    pub identity: InputIdentity,
}

impl<T: Scalar> LocalRows<T> {
    /// Rank `rank`'s rows of a whole matrix (for tests and the whole-matrix fallback).
    pub fn from_whole(a: &Csr<T>, rank: usize, world: usize) -> Result<LocalRows<T>> {
        let partition = Partition::by_nnz(a, world)?;
        let rows = a.slice_rows(partition.rows(rank))?;
        Ok(LocalRows {
            identity: InputIdentity::of_rows(a.ncols(), a.row_ptr(), T::PRECISION, 0),
            partition,
            rank,
            rows,
        })
    }

    /// Global rows of this rank.
    pub fn row_range(&self) -> Range<usize> {
        self.partition.rows(self.rank)
    }

    /// This rank's block and the volumes of both strategies, set up with the other ranks
    /// through `ex` (every rank calls it together): ghosts from the own rows, ghost requests
    /// exchanged into send lists, per-rank volumes gathered, the strategy chosen from them as
    /// [`Distribution::choose`](super::Distribution::choose) does.
    pub fn block(
        &self,
        ex: &mut dyn SetupExchange,
        choice: StrategyChoice,
    ) -> Result<(RankBlock<T>, Volumes)> {
        let part = &self.partition;
        let (r, p) = (self.rank, part.parts());
        if ex.rank() != r || ex.world() != p {
            return Err(Error::InvalidArgument(format!(
                "distribution set-up: rank {r} of {p} joined an exchange as rank {} of {}",
                ex.rank(),
                ex.world()
            )));
        }
        let own = part.cols(r);
        let ghosts = ghosts_of(self.rows.col_idx(), self.rows.ncols(), own.clone());
        let requests: Vec<Vec<Idx>> = (0..p)
            .map(|q| {
                if q == r {
                    Vec::new()
                } else {
                    ghosts[owned_range(&ghosts, &part.cols(q))].to_vec()
                }
            })
            .collect();
        let asked = ex.all_to_all(requests)?;
        let mut send = Vec::new();
        for (q, cols) in asked.into_iter().enumerate() {
            if q == r || cols.is_empty() {
                continue;
            }
            if cols.iter().any(|&j| !own.contains(&(j as usize))) {
                return Err(Error::InvalidArgument(format!(
                    "distribution set-up: rank {q} asks rank {r} for columns it does not own \
                     ({}..{}): the ranks partitioned differently",
                    own.start, own.end
                )));
            }
            send.push(SendList {
                peer: q,
                idx: cols.iter().map(|&j| j - own.start as Idx).collect(),
            });
        }
        let sent: usize = send.iter().map(|s| s.idx.len()).sum();
        let fingerprint = part_fingerprint(part);
        let counts = ex.all_gather(&[ghosts.len() as u64, sent as u64, fingerprint])?;
        if let Some(q) = counts.iter().position(|c| c.get(2) != Some(&fingerprint)) {
            return Err(Error::InvalidArgument(format!(
                "distribution set-up: ranks {r} and {q} partitioned the matrix differently \
                 (they read different inputs)"
            )));
        }
        let count = |k: usize| -> Vec<usize> {
            counts
                .iter()
                .map(|c| c.get(k).copied().unwrap_or(0) as usize)
                .collect()
        };
        let volumes = Volumes {
            halo_recv: count(0),
            halo_send: count(1),
            allgather_recv: (p - 1) * part.max_cols(),
        };
        let strategy = volumes.choose(choice);
        let block = assemble_block(
            &self.rows,
            0..self.rows.nrows(),
            part,
            r,
            ghosts,
            send,
            strategy,
        );
        Ok((block, volumes))
    }
}

/// A CRC of a partition's boundaries, compared across ranks at set-up.
fn part_fingerprint(p: &Partition) -> u64 {
    let mut h = crc32fast::Hasher::new();
    for v in p.row_starts.iter().chain(&p.col_starts) {
        h.update(&(*v as u64).to_le_bytes());
    }
    h.finalize() as u64
}

/// Every rank of a simulated world reads its rows from `source` and sets up its block with the
/// others, one thread per rank: the blocks in rank order and the volumes (`spmv dist run --sim`
/// and the tests).
pub fn simulate_blocks<T: Scalar>(
    source: &RowSource<T>,
    world: usize,
    choice: StrategyChoice,
) -> Result<(Vec<RankBlock<T>>, Volumes)> {
    if world == 0 {
        return Err(Error::InvalidArgument(
            "distribution: the number of ranks must be at least 1".into(),
        ));
    }
    let exchanges = ThreadExchange::world(world);
    let results: Vec<Result<(RankBlock<T>, Volumes)>> = std::thread::scope(|s| {
        let handles: Vec<_> = exchanges
            .into_iter()
            .enumerate()
            .map(|(r, mut ex)| {
                s.spawn(move || -> Result<(RankBlock<T>, Volumes)> {
                    // a rank that fails to read still takes part in the exchanges, so the
                    // others do not wait for it forever
                    match source.load(r, world) {
                        Ok(local) => local.block(&mut ex, choice),
                        Err(e) => {
                            ex.all_to_all(vec![Vec::new(); world])?;
                            ex.all_gather(&[0, 0, u64::MAX])?;
                            Err(e)
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(Error::InvalidArgument("a simulated rank panicked".into()))
                })
            })
            .collect()
    });
    let mut blocks = Vec::with_capacity(world);
    let mut volumes = None;
    for r in results {
        let (b, v) = r?;
        blocks.push(b);
        volumes = Some(v);
    }
    let volumes = volumes.ok_or_else(|| Error::InvalidArgument("no rank".into()))?;
    Ok((blocks, volumes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::partition::{Distribution, Strategy};
    use crate::methods::testmats;

    /// The range-built blocks equal the whole-matrix distribution's: same partition, blocks,
    /// ghosts, receive segments, send lists, volumes and strategy.
    fn same_as_whole<T: Scalar>(name: &str, a: &Csr<T>, source: &RowSource<T>) {
        for p in [1, 2, 3, 5] {
            let d = Distribution::new(a, p).unwrap();
            for choice in [
                StrategyChoice::Auto,
                StrategyChoice::Force(Strategy::Halo),
                StrategyChoice::Force(Strategy::AllGather),
            ] {
                let (blocks, volumes) = simulate_blocks(source, p, choice).unwrap();
                assert_eq!(volumes, d.volumes(), "{name} P={p}");
                let s = d.choose(choice);
                for (r, b) in blocks.iter().enumerate() {
                    assert_eq!(b, &d.block(a, r, s), "{name} P={p} rank {r} {choice:?}");
                }
            }
        }
    }

    #[test]
    fn cache_ranges_build_the_whole_matrix_distribution() {
        let dir = tempfile::tempdir().unwrap();
        let mut mats: Vec<(String, Csr<f64>)> = crate::gen::corpus::edge_cases();
        mats.extend(
            testmats::suite()
                .into_iter()
                .map(|(n, a)| (n.to_string(), a)),
        );
        for spec in ["kron:9", "tall:300,100,5", "wide:100,300,5", "poisson3d:6"] {
            mats.push((spec.into(), crate::gen::generate_f64(spec).unwrap()));
        }
        for (i, (name, a)) in mats.iter().enumerate() {
            let path = dir.path().join(format!("m{i}.spmvkit"));
            crate::io::write_cache(&path, a, None).unwrap();
            same_as_whole(name, a, &RowSource::Cache(path.clone()));
            let a32 = a.cast::<f32>();
            let s32 = RowSource::<f32>::Cache(path);
            let (blocks, _) = simulate_blocks(&s32, 3, StrategyChoice::Auto).unwrap();
            let d = Distribution::new(&a32, 3).unwrap();
            let s = d.choose(StrategyChoice::Auto);
            assert_eq!(blocks[1], d.block(&a32, 1, s), "{name} f32");
        }
    }

    #[test]
    fn generator_ranges_build_the_whole_matrix_distribution() {
        for spec in [
            "poisson2d:30",
            "stencil27:7",
            "banded:900,11",
            "uniform:700,6",
            "powerlaw:800,5",
        ] {
            let a = crate::gen::generate_f64(spec).unwrap();
            let src = RowSource::<f64>::for_matrix(spec, None, true)
                .unwrap()
                .unwrap();
            same_as_whole(spec, &a, &src);
        }
        assert!(RowSource::<f64>::for_matrix("kron:8", None, true)
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_matrix_market_file_is_read_through_its_cache() {
        let dir = tempfile::tempdir().unwrap();
        let a = crate::gen::generate_f64("poisson2d:12").unwrap();
        let mtx = dir.path().join("a.mtx");
        crate::io::write_matrix_market(&mtx, &a).unwrap();
        let m = mtx.to_str().unwrap();
        assert!(RowSource::<f64>::for_matrix(m, Some(dir.path()), false)
            .unwrap()
            .is_none());
        let src = RowSource::<f64>::for_matrix(m, Some(dir.path()), true)
            .unwrap()
            .unwrap();
        assert!(matches!(src, RowSource::Cache(_)));
        same_as_whole("a.mtx", &a, &src);
    }

    #[test]
    fn ranks_agree_on_the_identity_and_see_another_input() {
        let a = crate::gen::generate_f64("poisson2d:20").unwrap();
        let src = RowSource::<f64>::for_matrix("poisson2d:20", None, true)
            .unwrap()
            .unwrap();
        let ids: Vec<InputIdentity> = (0..3).map(|r| src.load(r, 3).unwrap().identity).collect();
        assert!(ids.windows(2).all(|w| w[0] == w[1]));
        assert_eq!(
            (ids[0].nrows, ids[0].ncols, ids[0].nnz),
            (400, 400, a.nnz())
        );
        let other = RowSource::<f64>::for_matrix("poisson2d:20,seed=2", None, true)
            .unwrap()
            .unwrap();
        assert_ne!(other.load(0, 3).unwrap().identity, ids[0]);
        let f32s = RowSource::<f32>::for_matrix("poisson2d:20", None, true)
            .unwrap()
            .unwrap();
        assert_ne!(f32s.load(0, 3).unwrap().identity, ids[0]);
        assert!(src.load(3, 3).is_err());
    }

    #[test]
    fn a_rank_that_partitions_differently_is_an_error() {
        // rank 1 reads a different matrix: its requests reach rank 0 for columns it lacks, or
        // the blocks disagree; either way the set-up must not pass silently
        let a = crate::gen::generate_f64("poisson2d:10").unwrap();
        let b = crate::gen::generate_f64("banded:100,30").unwrap();
        let mut ex = ThreadExchange::world(2);
        let (e1, e0) = (ex.pop().unwrap(), ex.pop().unwrap());
        let l0 = LocalRows::from_whole(&a, 0, 2).unwrap();
        let mut l1 = LocalRows::from_whole(&b, 1, 2).unwrap();
        l1.partition = Partition {
            row_starts: vec![0, 10, 100],
            col_starts: vec![0, 10, 100],
        };
        l1.rows = b.slice_rows(10..100).unwrap();
        let results = std::thread::scope(|s| {
            let h0 = s.spawn(move || {
                let mut e0 = e0;
                l0.block(&mut e0, StrategyChoice::Auto).map(|_| ())
            });
            let h1 = s.spawn(move || {
                let mut e1 = e1;
                l1.block(&mut e1, StrategyChoice::Auto).map(|_| ())
            });
            (h0.join().unwrap(), h1.join().unwrap())
        });
        assert!(results.0.is_err() && results.1.is_err(), "{results:?}");
    }
}
