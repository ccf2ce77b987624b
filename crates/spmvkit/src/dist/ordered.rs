//! The distributed solvers in a reordered numbering (issue #22: "CG and PageRank ... the
//! distributed ones where the partition allows, permute once at the start and once at the
//! end"). Where every rank holds the whole matrix (`--whole`, graphs generated whole, PageRank,
//! the simulation of the whole matrix), the matrix is ordered once
//! ([`crate::reorder::order_timed`]), the ranks' row blocks are cut from B = PAPᵀ, the solver's
//! input is permuted once at the start (CG's b, PageRank's dangling nodes) and its answer once
//! back at the end, on the host. The ordering's time is preprocessing. The partition's halo
//! volume (ghost entries each rank receives per SpMV) is reported before and after: an
//! ordering that brings neighbours together shrinks it on meshes and spatial graphs.
//!
//! Ranks that read only their rows ([`super::local`]) cannot order: an ordering reads the whole
//! graph.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::partition::{Distribution, StrategyChoice, Volumes};
use super::solve::SimRows;
use crate::error::Result;
use crate::matrix::Csr;
use crate::methods::PrepareFor;
use crate::reorder::{order_timed, permute_symmetric, Ordering, Permutation};
use crate::scalar::{Idx, Scalar};

/// The ghost entries the ranks receive per SpMV in the halo exchange ([`Volumes::halo_recv`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HaloVolume {
    /// Over all ranks.
    pub total: usize,
    /// The largest rank's.
    pub max: usize,
}

impl HaloVolume {
    /// The halo volume of a distribution's [`Volumes`].
    pub fn of(v: &Volumes) -> Self {
        HaloVolume {
            total: v.halo_recv.iter().sum(),
            max: v.halo_recv.iter().copied().max().unwrap_or(0),
        }
    }
}

/// What a reordering did to a distributed solve, for reports (a rank's JSON line).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OrderedSummary {
    /// The ordering's name.
    pub ordering: String,
    /// Ordering A and building PAPᵀ, seconds (preprocessing).
    pub seconds: f64,
    /// The halo volume of A's partition and of PAPᵀ's, over the same number of ranks.
    pub halo_before: HaloVolume,
    pub halo_after: HaloVolume,
}

impl OrderedSummary {
    /// One line for the notes of a run.
    pub fn note(&self) -> String {
        format!(
            "reorder={}: ordering and PAPᵀ {:.3} s (preprocessing); halo volume {} → {} \
             entries per SpMV (largest rank {} → {})",
            self.ordering,
            self.seconds,
            self.halo_before.total,
            self.halo_after.total,
            self.halo_before.max,
            self.halo_after.max
        )
    }
}

/// A square matrix ordered for a distributed solve over `parts` ranks: B = PAPᵀ, P, and what
/// the ordering did ([`OrderedSummary`]).
///
/// ```
/// use spmvkit::dist::{ordered::Ordered, solve, StrategyChoice};
/// use spmvkit::reorder::Ordering;
/// use spmvkit::solve::{CgSystem, SolveOptions};
/// let a = spmvkit::gen::generate_f64("poisson2d:30,renumber=random").unwrap();
/// let b = CgSystem::ones_solution(&a).b;
/// let ord = Ordered::new(&a, 3, Ordering::Rcm).unwrap();
/// assert!(ord.summary.halo_after.total < ord.summary.halo_before.total);
/// let mut op = ord.sim(3, "csr", StrategyChoice::Auto).unwrap();
/// let (x, _) = solve::cg(&mut op, &ord.vector(&b).unwrap(), &SolveOptions::default()).unwrap();
/// let x = ord.back(x).unwrap(); // in A's numbering
/// assert!(x.iter().all(|v| (v - 1.0).abs() < 1e-6));
/// ```
pub struct Ordered<T> {
    /// P.
    pub perm: Permutation,
    /// B = PAPᵀ, the matrix the ranks' blocks are cut from.
    pub matrix: Csr<T>,
    pub summary: OrderedSummary,
}

impl<T: Scalar> Ordered<T> {
    /// Orders `a` by `ordering` and builds PAPᵀ (timed), then the halo volumes of both over
    /// `parts` ranks. An error naming the shape when `a` is not square.
    pub fn new(a: &Csr<T>, parts: usize, ordering: Ordering) -> Result<Self> {
        let t0 = Instant::now();
        let (perm, _) = order_timed(a, ordering)?;
        let matrix = permute_symmetric(a, &perm)?;
        let seconds = t0.elapsed().as_secs_f64();
        let halo = |m: &Csr<T>| -> Result<HaloVolume> {
            Ok(HaloVolume::of(&Distribution::new(m, parts)?.volumes()))
        };
        Ok(Ordered {
            summary: OrderedSummary {
                ordering: ordering.name().into(),
                seconds,
                halo_before: halo(a)?,
                halo_after: halo(&matrix)?,
            },
            perm,
            matrix,
        })
    }

    /// Pv: a vector of A's numbering (CG's b) in B's.
    pub fn vector(&self, v: &[T]) -> Result<Vec<T>> {
        self.perm.apply(v)
    }

    /// A set of nodes of A's numbering (PageRank's dangling nodes) in B's, ascending.
    pub fn set(&self, nodes: &[Idx]) -> Result<Vec<Idx>> {
        self.perm.apply_to_set(nodes)
    }

    /// Pᵀx: an answer in B's numbering back in A's.
    pub fn back(&self, x: Vec<T>) -> Result<Vec<T>> {
        self.perm.apply_inverse(&x)
    }

    /// A's row of each of B's rows in `rows` (where a rank's rows of the answer belong).
    pub fn rows_of(&self, rows: std::ops::Range<usize>) -> Vec<Idx> {
        self.perm.old_of_new()[rows].to_vec()
    }
}

impl<T: PrepareFor> Ordered<T> {
    /// B distributed over `parts` simulated ranks ([`SimRows::new`]).
    pub fn sim(&self, parts: usize, method: &str, choice: StrategyChoice) -> Result<SimRows<T>> {
        SimRows::new(&self.matrix, parts, method, choice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::solve::{cg, cg_single_reduction, pagerank};
    use crate::gen::generate_f64;
    use crate::solve::{PageRankGraph, PageRankOptions, SolveOptions, Stop};

    fn max_diff(a: &[f64], b: &[f64]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(p, q)| (p - q).abs())
            .fold(0.0, f64::max)
    }

    /// Distributed CG (both iterations) on simulated ranks of PAPᵀ, from Pb and permuted back,
    /// gives the answer of the unordered solve; the exact answer is not constant, so an answer
    /// left in B's numbering fails.
    #[test]
    fn ordered_distributed_cg_gives_the_unordered_answer() {
        let a = generate_f64("poisson2d:24,renumber=random").unwrap();
        let want: Vec<f64> = (0..a.nrows()).map(|i| 1.0 + (i % 5) as f64 * 0.2).collect();
        let b = crate::cpu::oracle_spmv(&a, 1.0, &want, 0.0, &vec![0.0; a.nrows()])
            .unwrap()
            .y;
        let opts = SolveOptions {
            tol: 1e-10,
            ..SolveOptions::default()
        };
        for ordering in [Ordering::Rcm, Ordering::Bisection] {
            for parts in [1, 3] {
                let ord = Ordered::new(&a, parts, ordering).unwrap();
                for single in [false, true] {
                    let solve = if single { cg_single_reduction } else { cg };
                    let mut plain = SimRows::new(&a, parts, "csr", StrategyChoice::Auto).unwrap();
                    let (x0, r0) = solve(&mut plain, &b, &opts).unwrap();
                    let mut op = ord.sim(parts, "csr", StrategyChoice::Auto).unwrap();
                    let (x1, r1) = solve(&mut op, &ord.vector(&b).unwrap(), &opts).unwrap();
                    let x1 = ord.back(x1).unwrap();
                    let what = format!("{ordering} P={parts} single {single}");
                    assert_eq!((r0.stop, r1.stop), (Stop::Converged, Stop::Converged));
                    assert!(r0.iterations.abs_diff(r1.iterations) <= 2, "{what}");
                    assert!(max_diff(&x0, &x1) < 1e-7, "{what}");
                    assert!(max_diff(&x1, &want) < 1e-7, "{what}");
                }
            }
        }
    }

    /// Distributed PageRank on simulated ranks of QPQᵀ, the dangling nodes renumbered and the
    /// ranks permuted back, gives the unordered ranks.
    #[test]
    fn ordered_distributed_pagerank_gives_the_unordered_ranks() {
        let adj = generate_f64("kron:10").unwrap();
        let g = PageRankGraph::from_adjacency(&adj).unwrap();
        assert!(!g.dangling.is_empty());
        let opts = PageRankOptions {
            solve: SolveOptions {
                tol: 1e-10,
                ..PageRankOptions::default().solve
            },
            ..PageRankOptions::default()
        };
        for parts in [1, 3] {
            let mut plain =
                SimRows::new(&g.transition, parts, "csr", StrategyChoice::Auto).unwrap();
            let (x0, r0) = pagerank(&mut plain, &g.dangling, &opts).unwrap();
            let ord = Ordered::new(&g.transition, parts, Ordering::Rcm).unwrap();
            let mut op = ord.sim(parts, "csr", StrategyChoice::Auto).unwrap();
            let (x1, r1) = pagerank(&mut op, &ord.set(&g.dangling).unwrap(), &opts).unwrap();
            let x1 = ord.back(x1).unwrap();
            assert_eq!((r0.stop, r1.stop), (Stop::Converged, Stop::Converged));
            assert!(r0.iterations.abs_diff(r1.iterations) <= 1, "P={parts}");
            let l1: f64 = x0.iter().zip(&x1).map(|(p, q)| (p - q).abs()).sum();
            assert!(l1 < 1e-8, "P={parts}: L1 difference {l1}");
        }
    }

    /// RCM shrinks the halo of a randomly numbered mesh and of a shuffled geometric graph to a
    /// small share of what it was (the ghosts of a band are its neighbouring rows).
    #[test]
    fn rcm_shrinks_the_halo_of_shuffled_meshes_and_spatial_graphs() {
        for spec in ["poisson2d:40,renumber=random", "rgg:4000,order=shuffled"] {
            let a = generate_f64(spec).unwrap();
            let ord = Ordered::new(&a, 4, Ordering::Rcm).unwrap();
            let (before, after) = (ord.summary.halo_before, ord.summary.halo_after);
            assert!(
                after.total * 4 < before.total && after.max * 4 < before.max,
                "{spec}: {before:?} → {after:?}"
            );
            assert!(ord.summary.note().contains(" → "), "{}", ord.summary.note());
        }
        // A square matrix is needed.
        let wide = Csr::<f64>::new(1, 2, vec![0, 1], vec![1], vec![1.0]).unwrap();
        assert!(Ordered::new(&wide, 2, Ordering::Rcm).is_err());
    }
}
