//! The whole distributed SpMV simulated on the CPU (issue #12): P ranks that exchange x through
//! memory exactly as the NCCL path does (pack the send lists, deliver them into the receivers'
//! ghost buffers, or concatenate padded chunks for the all-gather) and run the diagonal and
//! off-diagonal parts with a method's CPU mirror. It checks the distribution without GPUs, and
//! is what `spmv dist run` falls back to when there is no GPU.

use serde::Serialize;

use super::partition::{Distribution, Partition, RankBlock, Strategy, StrategyChoice, Volumes};
use crate::error::{Error, Result};
use crate::matrix::Csr;
use crate::methods::{find_variant, Layout, PrepareFor};

/// One simulated rank: its block and the method's layouts of its two parts.
struct SimRank<T: PrepareFor> {
    block: RankBlock<T>,
    diag: Box<dyn Layout<T>>,
    offd: Option<Box<dyn Layout<T>>>,
}

/// A matrix distributed over P simulated ranks.
pub struct SimOperator<T: PrepareFor> {
    partition: Partition,
    volumes: Volumes,
    strategy: Strategy,
    ranks: Vec<SimRank<T>>,
    nrows: usize,
    ncols: usize,
}

/// What the simulation chose, for reports.
#[derive(Clone, Debug, Serialize)]
pub struct SimSummary {
    pub ranks: usize,
    pub strategy: Strategy,
    pub rank_nnz: Vec<usize>,
    pub rank_rows: Vec<usize>,
    pub halo_recv: Vec<usize>,
    pub allgather_recv: usize,
}

impl<T: PrepareFor> SimOperator<T> {
    /// Distributes `a` over `parts` simulated ranks; each part is prepared by `method` (a name or
    /// variant, `auto` choosing per part).
    ///
    /// ```
    /// use spmvkit::{dist::{SimOperator, StrategyChoice}, gen};
    /// let a = gen::generate_f64("poisson2d:10").unwrap();
    /// let op = SimOperator::new(&a, 3, "csr", StrategyChoice::Auto).unwrap();
    /// let x = vec![1.0; 100];
    /// let mut y = vec![1.0; 100];
    /// op.apply(1.0, &x, 2.0, &mut y).unwrap(); // row sums of the Laplacian are >= 0
    /// assert!(y.iter().all(|&v| v >= 2.0));
    /// ```
    pub fn new(a: &Csr<T>, parts: usize, method: &str, choice: StrategyChoice) -> Result<Self> {
        let dist = Distribution::new(a, parts)?;
        let strategy = dist.choose(choice);
        let blocks = (0..parts).map(|r| dist.block(a, r, strategy)).collect();
        Self::from_blocks(a.nrows(), a.ncols(), dist.volumes(), blocks, method)
    }

    /// The simulation of ranks whose blocks were built elsewhere, e.g. by ranks that read only
    /// their rows ([`super::local`]); `blocks` in rank order, all for one strategy.
    pub fn from_blocks(
        nrows: usize,
        ncols: usize,
        volumes: Volumes,
        blocks: Vec<RankBlock<T>>,
        method: &str,
    ) -> Result<Self> {
        let first = blocks
            .first()
            .ok_or_else(|| Error::InvalidArgument("a simulation needs at least one rank".into()))?;
        let strategy = first.strategy;
        let mut row_starts = vec![0];
        let mut col_starts = vec![0];
        for (r, b) in blocks.iter().enumerate() {
            if b.rank != r || b.strategy != strategy || b.rows.start != row_starts[r] {
                return Err(Error::InvalidArgument(format!(
                    "simulation: block {r} is rank {}'s, for {}, from row {}",
                    b.rank, b.strategy, b.rows.start
                )));
            }
            row_starts.push(b.rows.end);
            col_starts.push(b.cols.end);
        }
        if row_starts.last() != Some(&nrows) || col_starts.last() != Some(&ncols) {
            return Err(Error::InvalidArgument(format!(
                "simulation: the blocks cover {:?} rows and {:?} columns of {nrows} × {ncols}",
                row_starts.last(),
                col_starts.last()
            )));
        }
        let (m, params) = find_variant(method)?;
        let ranks = blocks
            .into_iter()
            .map(|block| {
                let diag = T::prepare_with(m, &block.diag, &params)?;
                let offd = if block.offd.nnz() > 0 {
                    Some(T::prepare_with(m, &block.offd, &params)?)
                } else {
                    None
                };
                Ok(SimRank { block, diag, offd })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(SimOperator {
            partition: Partition {
                row_starts,
                col_starts,
            },
            volumes,
            strategy,
            ranks,
            nrows,
            ncols,
        })
    }

    /// (rows, columns) of the distributed matrix.
    pub fn dims(&self) -> (usize, usize) {
        (self.nrows, self.ncols)
    }

    /// The exchange strategy in use.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// The rows of each rank, ascending.
    pub fn row_blocks(&self) -> Vec<std::ops::Range<usize>> {
        self.ranks.iter().map(|r| r.block.rows.clone()).collect()
    }

    /// Partition and volumes.
    pub fn summary(&self) -> SimSummary {
        let v = self.volumes.clone();
        SimSummary {
            ranks: self.ranks.len(),
            strategy: self.strategy,
            rank_nnz: self
                .ranks
                .iter()
                .map(|r| r.block.diag.nnz() + r.block.offd.nnz())
                .collect(),
            rank_rows: self.ranks.iter().map(|r| r.block.rows.len()).collect(),
            halo_recv: v.halo_recv,
            allgather_recv: v.allgather_recv,
        }
    }

    /// y = αAx + βy with global vectors, every rank reading only its x and writing only its rows.
    pub fn apply(&self, alpha: T, x: &[T], beta: T, y: &mut [T]) -> Result<()> {
        crate::matrix::check_vectors(
            "",
            (self.nrows, self.ncols),
            x.len(),
            y.len(),
            crate::matrix::VectorFit::Exact,
        )?;
        // each rank's own x, as its device buffer would hold it
        let local: Vec<&[T]> = self
            .ranks
            .iter()
            .map(|r| &x[r.block.cols.clone()])
            .collect();
        let received = self.exchange(&local)?;
        for (rank, xg) in self.ranks.iter().zip(received) {
            let b = &rank.block;
            let yl = &mut y[b.rows.clone()];
            rank.diag.run_cpu(alpha, local[b.rank], beta, yl)?;
            if let Some(offd) = &rank.offd {
                offd.run_cpu(alpha, &xg, T::one(), yl)?;
            }
        }
        Ok(())
    }

    /// The x each rank's off-diagonal part reads, built only from the ranks' own x.
    fn exchange(&self, local: &[&[T]]) -> Result<Vec<Vec<T>>> {
        match self.strategy {
            Strategy::AllGather => {
                let chunk = self.partition.max_cols();
                // ncclAllGather: every rank contributes `chunk` entries (its x, zero-padded)
                let mut all = vec![T::zero(); chunk * local.len()];
                for (q, xq) in local.iter().enumerate() {
                    all[q * chunk..q * chunk + xq.len()].copy_from_slice(xq);
                }
                Ok(vec![all; local.len()])
            }
            Strategy::Halo => {
                let mut ghost: Vec<Vec<T>> = self
                    .ranks
                    .iter()
                    .map(|r| vec![T::zero(); r.block.ghosts.len()])
                    .collect();
                for sender in &self.ranks {
                    for sl in &sender.block.send {
                        // pack kernel, then ncclSend → ncclRecv into the peer's segment
                        let packed: Vec<T> = sl
                            .idx
                            .iter()
                            .map(|&k| local[sender.block.rank][k as usize])
                            .collect();
                        let seg = self.ranks[sl.peer]
                            .block
                            .recv
                            .iter()
                            .find(|s| s.peer == sender.block.rank)
                            .ok_or_else(|| {
                                Error::InvalidArgument(format!(
                                    "halo: rank {} sends to rank {} which expects nothing",
                                    sender.block.rank, sl.peer
                                ))
                            })?;
                        if seg.range.len() != packed.len() {
                            return Err(Error::DimensionMismatch {
                                what: format!(
                                    "halo from rank {} to {}",
                                    sender.block.rank, sl.peer
                                ),
                                expected: seg.range.len(),
                                got: packed.len(),
                            });
                        }
                        ghost[sl.peer][seg.range.clone()].copy_from_slice(&packed);
                    }
                }
                Ok(ghost)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::{check, oracle_spmv};
    use crate::gen;
    use crate::methods::testmats;
    use crate::scalar::Scalar;

    fn vectors<T: Scalar>(a: &Csr<T>) -> (Vec<T>, Vec<T>) {
        let x = (0..a.ncols())
            .map(|j| T::from_f64(((j * 7919) % 23) as f64 / 11.0 - 1.0))
            .collect();
        let y = (0..a.nrows())
            .map(|i| T::from_f64(((i * 104729) % 17) as f64 / 8.0 - 1.0))
            .collect();
        (x, y)
    }

    fn check_sim<T: PrepareFor>(name: &str, a: &Csr<T>, method: &str) {
        let (x, y0) = vectors(a);
        let (alpha, beta) = (T::from_f64(1.5), T::from_f64(-0.75));
        let want = oracle_spmv(a, alpha, &x, beta, &y0).unwrap();
        for p in [1, 2, 3, 4] {
            for s in [
                StrategyChoice::Auto,
                StrategyChoice::Force(Strategy::Halo),
                StrategyChoice::Force(Strategy::AllGather),
            ] {
                let mut y = y0.clone();
                SimOperator::new(a, p, method, s)
                    .unwrap()
                    .apply(alpha, &x, beta, &mut y)
                    .unwrap();
                let c = check(&want, &y);
                assert!(c.ok, "{name} {method} P={p} {s:?} {}: {c:?}", T::PRECISION);
            }
        }
    }

    #[test]
    fn simulation_matches_the_oracle_on_the_corpus() {
        for (name, a) in gen::corpus::edge_cases() {
            check_sim(&name, &a, "csr");
            check_sim(&name, &a.cast::<f32>(), "csr");
        }
        for (name, a) in testmats::suite() {
            check_sim(name, &a, "csr");
        }
    }

    #[test]
    fn simulation_matches_the_oracle_on_generated_matrices_with_several_methods() {
        for spec in [
            "poisson3d:7",
            "kron:9",
            "banded:300,9",
            "tall:300,100,5",
            "wide:100,300,5",
            "powerlaw:400,6",
        ] {
            let a = gen::generate_f64(spec).unwrap();
            for method in ["csr", "csr-vector", "merge", "auto"] {
                check_sim(spec, &a, method);
            }
            check_sim(spec, &a.cast::<f32>(), "csr-vector");
        }
    }

    #[test]
    fn beta_zero_ignores_nan_in_y() {
        let a = gen::generate_f64("poisson2d:9").unwrap();
        let (x, _) = vectors(&a);
        let want = oracle_spmv(&a, 1.0, &x, 0.0, &vec![0.0; a.nrows()]).unwrap();
        for s in [Strategy::Halo, Strategy::AllGather] {
            let mut y = vec![f64::NAN; a.nrows()];
            SimOperator::new(&a, 3, "csr", StrategyChoice::Force(s))
                .unwrap()
                .apply(1.0, &x, 0.0, &mut y)
                .unwrap();
            assert!(check(&want, &y).ok, "{s:?}");
        }
    }

    #[test]
    fn wrong_lengths_are_errors() {
        let a = gen::generate_f64("poisson2d:4").unwrap();
        let op = SimOperator::new(&a, 2, "csr", StrategyChoice::Auto).unwrap();
        let mut y = vec![0.0; 16];
        assert!(op.apply(1.0, &[1.0; 3], 0.0, &mut y).is_err());
        assert!(SimOperator::new(&a, 2, "no-such-method", StrategyChoice::Auto).is_err());
    }
}
