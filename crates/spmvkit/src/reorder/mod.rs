//! Symmetric reorderings of a square sparse matrix (issue #22): a [`Permutation`] P of the
//! rows and columns, chosen by an [`Ordering`] ([`order`]), and the reordered matrix PAPᵀ
//! ([`permute_symmetric`]). B = PAPᵀ computes the same product in the new numbering:
//! B(Px) = P(Ax), so a caller permutes x on the way in and y back on the way out.
//!
//! Both orderings work on the undirected graph of the pattern of A + Aᵀ, self-loops aside
//! (`graph.rs`), so a structurally unsymmetric A is ordered by its symmetrised pattern;
//! disconnected graphs, empty rows, n = 0 and n = 1 are ordinary inputs.
//!
//! - [`Ordering::Rcm`], reverse Cuthill–McKee (`rcm.rs`): E. Cuthill and J. McKee, "Reducing the
//!   bandwidth of sparse symmetric matrices", ACM National Conference 1969; reversed as A. George,
//!   "Computer implementation of the finite element method", Stanford STAN-CS-71-208, 1971; each
//!   component started from a pseudo-peripheral vertex (N. Gibbs, W. Poole and P. Stockmeyer,
//!   SIAM J. Numer. Anal. 13(2), 1976, in the form of A. George and J. Liu, ACM TOMS 5(3), 1979).
//!   Level-synchronous and parallel, with the serial result. It brings the bandwidth down: a
//!   matrix from a mesh becomes a band.
//! - [`Ordering::Bisection`], recursive graph bisection (`bisect.rs`): L. Dhulipala, I. Kabiljo,
//!   B. Karrer, G. Ottaviano, S. Pupyrev and A. Shalita, "Compressing graphs and indexes with
//!   recursive graph bisection", KDD 2016. A cache-aware ordering: it minimises the log-gap cost
//!   of every adjacency list, so that the neighbours of a vertex, the columns of a row, get
//!   nearby numbers, and a warp's 32 rows read few sectors of x. It starts from the RCM order.
//!
//! No well-kept crate fits: `sprs` has a serial RCM on its own matrix type (it checks the
//! bandwidth of ours in the tests); none has a parallel graph-locality ordering.
//!
//! The convention: P sends old index i to new index `new_of_old[i]`; `(Px)[new_of_old[i]] = x[i]`
//! and `(PAPᵀ)[new_of_old[i], new_of_old[j]] = a_ij`.

mod bisect;
mod graph;
mod rcm;

#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::error::{check_index_range, Error, Result};
use crate::gen::rng::{Purpose, Rng};
use crate::matrix::{check_square, Csr};
use crate::scalar::{Idx, Scalar};

use graph::Graph;
pub(crate) use graph::{par_fill, prefix};
use graph::{par_fill_with, prefetch, LOOKAHEAD};

/// A permutation of 0..n, kept in both directions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Permutation {
    new_of_old: Vec<Idx>,
    old_of_new: Vec<Idx>,
}

impl Permutation {
    /// A uniformly random permutation of 0..n, the same for the same seed (Fisher–Yates on the
    /// generators' xoshiro256++ stream for renumbering, apart from the streams a generator draws
    /// its matrix from with the same seed): a random symmetric renumbering PAPᵀ hides a
    /// matrix's locality, as a crawl order or shuffled ids do.
    ///
    /// ```
    /// use spmvkit::reorder::Permutation;
    /// let p = Permutation::random(5, 7)?;
    /// assert_eq!(p.len(), 5);
    /// assert_eq!(p.old_of_new(), Permutation::random(5, 7)?.old_of_new());
    /// # Ok::<(), spmvkit::Error>(())
    /// ```
    pub fn random(n: usize, seed: u64) -> Result<Self> {
        check_index_range("permutation length", n as u64)?;
        let mut order: Vec<Idx> = (0..n as Idx).collect();
        let mut rng = Rng::stream(seed, Purpose::Renumber, 0);
        for i in (1..n).rev() {
            order.swap(i, rng.below(i as u64 + 1) as usize);
        }
        Permutation::from_order(order)
    }

    /// The identity on 0..n.
    pub fn identity(n: usize) -> Result<Self> {
        check_index_range("permutation length", n as u64)?;
        let id: Vec<Idx> = (0..n as Idx).collect();
        Ok(Permutation {
            new_of_old: id.clone(),
            old_of_new: id,
        })
    }

    /// The permutation that puts old index `order[k]` at new index k (an ordering's output).
    /// An error unless `order` holds every index of 0..n exactly once.
    ///
    /// ```
    /// use spmvkit::reorder::Permutation;
    /// let p = Permutation::from_order(vec![2, 0, 1])?;
    /// assert_eq!(p.new_of_old(), &[1, 2, 0]);
    /// assert_eq!(p.apply(&[10, 20, 30])?, vec![30, 10, 20]);
    /// assert!(Permutation::from_order(vec![0, 0, 1]).is_err());
    /// # Ok::<(), spmvkit::Error>(())
    /// ```
    pub fn from_order(order: Vec<Idx>) -> Result<Self> {
        let inverse = invert(&order, "order")?;
        Ok(Permutation {
            new_of_old: inverse,
            old_of_new: order,
        })
    }

    /// The permutation that sends old index i to new index `new_of_old[i]`; an error unless
    /// that is a bijection on 0..n.
    pub fn from_new_of_old(new_of_old: Vec<Idx>) -> Result<Self> {
        let order = invert(&new_of_old, "map")?;
        Ok(Permutation {
            new_of_old,
            old_of_new: order,
        })
    }

    /// n.
    pub fn len(&self) -> usize {
        self.new_of_old.len()
    }

    /// Whether n = 0.
    pub fn is_empty(&self) -> bool {
        self.new_of_old.is_empty()
    }

    /// The new index of every old index.
    pub fn new_of_old(&self) -> &[Idx] {
        &self.new_of_old
    }

    /// The old index at every new index (the order).
    pub fn old_of_new(&self) -> &[Idx] {
        &self.old_of_new
    }

    /// P⁻¹ = Pᵀ.
    pub fn inverse(&self) -> Permutation {
        Permutation {
            new_of_old: self.old_of_new.clone(),
            old_of_new: self.new_of_old.clone(),
        }
    }

    /// Px: entry `new_of_old[i]` of the result is `x[i]`. An error unless `x` has n entries.
    pub fn apply<V: Copy + Send + Sync>(&self, x: &[V]) -> Result<Vec<V>> {
        self.check_len("vector to permute", x.len())?;
        Ok(self.old_of_new.par_iter().map(|&i| x[i as usize]).collect())
    }

    /// P⁻¹y: entry i of the result is `y[new_of_old[i]]`, undoing [`Permutation::apply`]. An
    /// error unless `y` has n entries.
    pub fn apply_inverse<V: Copy + Send + Sync>(&self, y: &[V]) -> Result<Vec<V>> {
        self.check_len("vector to permute back", y.len())?;
        Ok(self.new_of_old.par_iter().map(|&k| y[k as usize]).collect())
    }

    /// The new indices of a set of old ones, ascending (a set of vertices, such as PageRank's
    /// dangling nodes, in the new numbering). An error naming the first index outside 0..n.
    ///
    /// ```
    /// use spmvkit::reorder::Permutation;
    /// let p = Permutation::from_order(vec![2, 0, 1])?; // old 0 → new 1, 1 → 2, 2 → 0
    /// assert_eq!(p.apply_to_set(&[0, 2])?, vec![0, 1]);
    /// assert!(p.apply_to_set(&[3]).is_err());
    /// # Ok::<(), spmvkit::Error>(())
    /// ```
    pub fn apply_to_set(&self, set: &[Idx]) -> Result<Vec<Idx>> {
        let mut out = set
            .iter()
            .map(|&i| {
                self.new_of_old.get(i as usize).copied().ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "index {i} is outside the permutation's 0..{}",
                        self.len()
                    ))
                })
            })
            .collect::<Result<Vec<Idx>>>()?;
        out.par_sort_unstable();
        Ok(out)
    }

    fn check_len(&self, what: &str, got: usize) -> Result<()> {
        if got == self.len() {
            Ok(())
        } else {
            Err(Error::DimensionMismatch {
                what: format!("{what} (permutation length)"),
                expected: self.len(),
                got,
            })
        }
    }
}

/// The inverse of `map`, checked to be a bijection on 0..map.len().
fn invert(map: &[Idx], what: &str) -> Result<Vec<Idx>> {
    let n = map.len();
    check_index_range("permutation length", n as u64)?;
    const NONE: Idx = Idx::MAX;
    let mut inv = vec![NONE; n];
    for (i, &m) in map.iter().enumerate() {
        let bad = |msg: String| Error::InvalidArgument(format!("not a permutation {what}: {msg}"));
        let slot = inv
            .get_mut(m as usize)
            .ok_or_else(|| bad(format!("entry {i} is {m}, outside 0..{n}",)))?;
        if *slot != NONE {
            return Err(bad(format!("entries {} and {i} are both {m}", *slot)));
        }
        *slot = i as Idx;
    }
    Ok(inv)
}

/// A symmetric ordering ([`order`]); the module doc gives the algorithms and their sources.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ordering {
    /// Reverse Cuthill–McKee from pseudo-peripheral vertices: a small bandwidth.
    Rcm,
    /// Recursive graph bisection (Dhulipala et al. 2016): nearby numbers for neighbours.
    Bisection,
}

impl Ordering {
    /// Every ordering, in listing order.
    pub const ALL: [Ordering; 2] = [Ordering::Rcm, Ordering::Bisection];

    /// The ordering's name (`rcm`, `bisection`), which [`Ordering::from_str`] reads.
    pub fn name(self) -> &'static str {
        match self {
            Ordering::Rcm => "rcm",
            Ordering::Bisection => "bisection",
        }
    }
}

/// `Display` as `name()`, and `FromStr` finding the entry of `ALL` by name (an error lists the
/// names), for a choice type with `ALL` and `name()`.
macro_rules! named_choice {
    ($t:ident, $what:literal) => {
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl FromStr for $t {
            type Err = Error;

            fn from_str(s: &str) -> Result<Self> {
                by_name(s, &$t::ALL, $t::name, $what)
            }
        }
    };
}

named_choice!(Ordering, "ordering");

/// The entry of `all` named `s`, or an error listing the names (`what`: what they name).
fn by_name<K: Copy>(s: &str, all: &[K], name: fn(K) -> &'static str, what: &str) -> Result<K> {
    all.iter().copied().find(|&k| name(k) == s).ok_or_else(|| {
        let names: Vec<&str> = all.iter().map(|&k| name(k)).collect();
        Error::InvalidArgument(format!(
            "unknown {what} '{s}'; available: {}",
            names.join(", ")
        ))
    })
}

/// The permutation `kind` chooses for the square matrix `a`: PAPᵀ ([`permute_symmetric`]) is
/// the reordered matrix. An error naming the shape when `a` is not square.
///
/// ```
/// use spmvkit::reorder::{order, permute_symmetric, Ordering};
/// let a = spmvkit::gen::generate_f64("rgg:2000,order=shuffled")?;
/// let p = order(&a, Ordering::Rcm)?;
/// let b = permute_symmetric(&a, &p)?;
/// let bandwidth = |m| spmvkit::matrix::RowStats::of(m).bandwidth();
/// assert!(bandwidth(&b) < bandwidth(&a) / 4);
/// # Ok::<(), spmvkit::Error>(())
/// ```
pub fn order<T: Scalar>(a: &Csr<T>, kind: Ordering) -> Result<Permutation> {
    Ok(order_timed(a, kind)?.0)
}

/// The wall time of each stage of an ordering ([`order_timed`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OrderTimes {
    /// Building the undirected graph of A + Aᵀ (`graph.rs`).
    pub graph: Duration,
    /// RCM's pseudo-peripheral start searches, every component's.
    pub start: Duration,
    /// RCM's Cuthill–McKee numbering, every component's, and its reversal.
    pub number: Duration,
    /// The bisection rounds ([`Ordering::Bisection`] only).
    pub bisect: Duration,
    /// Checking the order and inverting it into a [`Permutation`].
    pub invert: Duration,
}

impl OrderTimes {
    /// The sum of the stages.
    pub fn total(&self) -> Duration {
        self.graph + self.start + self.number + self.bisect + self.invert
    }
}

/// [`order`], with the wall time of each of its stages.
pub fn order_timed<T: Scalar>(a: &Csr<T>, kind: Ordering) -> Result<(Permutation, OrderTimes)> {
    check_square(
        &format!("{} needs a square matrix", kind.name()),
        a.nrows(),
        a.ncols(),
    )?;
    let mut times = OrderTimes::default();
    let t = Instant::now();
    let g = Graph::of(a)?;
    times.graph = t.elapsed();
    let rcm = rcm::rcm(&g, &mut times);
    let t = Instant::now();
    let order = match kind {
        Ordering::Rcm => rcm,
        Ordering::Bisection => bisect::bisection(&g, rcm),
    };
    times.bisect = t.elapsed();
    drop(g);
    let t = Instant::now();
    let p = Permutation::from_order(order)?;
    times.invert = t.elapsed();
    Ok((p, times))
}

/// PAPᵀ: entry a_ij moves to (`new_of_old[i]`, `new_of_old[j]`), each row's columns sorted. In
/// parallel over rows. An error when `a` is not square or `p` is not of its size.
pub fn permute_symmetric<T: Scalar>(a: &Csr<T>, p: &Permutation) -> Result<Csr<T>> {
    Ok(permute_symmetric_map(a, p)?.0)
}

/// [`permute_symmetric`], with the entry map: entry k of PAPᵀ (CSR order) is entry `map[k]` of
/// `a`, so new values of `a` under the same pattern become PAPᵀ's as `vals[map[k]]`.
pub fn permute_symmetric_map<T: Scalar>(a: &Csr<T>, p: &Permutation) -> Result<(Csr<T>, Vec<Idx>)> {
    check_square(
        "a symmetric permutation needs a square matrix",
        a.nrows(),
        a.ncols(),
    )?;
    p.check_len("matrix to permute", a.nrows())?;
    check_index_range("nonzeros of a permuted matrix", a.nnz() as u64)?;
    let n = a.nrows();
    let (old_of_new, new_of_old) = (p.old_of_new(), p.new_of_old());
    let lens: Vec<usize> = old_of_new
        .par_iter()
        .map(|&i| a.row_len(i as usize))
        .collect();
    let ptr = prefix(&lens);
    drop(lens);
    let (rp, ci, src) = (a.row_ptr(), a.col_idx(), a.vals());
    let nnz = ptr[n];
    // zeroed allocations: untouched pages until the parallel fill writes them
    let mut cols = vec![0 as Idx; nnz];
    let mut map = vec![0 as Idx; nnz];
    let mut vals = vec![T::zero(); nnz];
    let out = ((&mut cols[..], &mut map[..]), &mut vals[..]);
    par_fill_with(&ptr, out, |k, ((cols, map), vals), keys: &mut Vec<u64>| {
        if let Some(&ahead) = old_of_new.get(k + LOOKAHEAD) {
            prefetch(rp, ahead as usize);
        }
        if let Some(&near) = old_of_new.get(k + LOOKAHEAD / 2) {
            let e = rp[near as usize] as usize;
            prefetch(ci, e);
            prefetch(src, e);
        }
        let old = old_of_new[k] as usize;
        let first = rp[old] as usize;
        // (new column, entry) packed in one word, so that the sort is one of integers
        keys.clear();
        keys.extend(
            ci[first..rp[old + 1] as usize]
                .iter()
                .enumerate()
                .map(|(e, &c)| (u64::from(new_of_old[c as usize]) << 32) | (first + e) as u64),
        );
        keys.sort_unstable();
        for (((c, m), v), &key) in cols.iter_mut().zip(map).zip(vals).zip(keys.iter()) {
            let e = key as u32;
            *c = (key >> 32) as Idx;
            *m = e;
            *v = src[e as usize];
        }
    });
    let row_ptr: Vec<Idx> = ptr.par_iter().map(|&o| o as Idx).collect();
    Ok((Csr::from_parts_unchecked(n, n, row_ptr, cols, vals), map))
}

/// Whether and how a [`crate::Plan`] reorders its matrix (`PlanOptions::reorder`, `--reorder`):
/// not at all, by one [`Ordering`], or `auto`, which tries [`Ordering::Rcm`]: on the GPU the
/// plan times one call each way and keeps the faster (docs/reorder.md); on the CPU it keeps the
/// order where the x-sector model says the gathers it saves outweigh the two permutations every
/// call then adds ([`Reorder::keeps`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Reorder {
    /// The matrix as given.
    #[default]
    None,
    /// Always this ordering.
    By(Ordering),
    /// RCM where the model says it pays, else none.
    Auto,
}

impl Reorder {
    /// Every choice, in listing order.
    pub const ALL: [Reorder; 4] = [
        Reorder::None,
        Reorder::By(Ordering::Rcm),
        Reorder::By(Ordering::Bisection),
        Reorder::Auto,
    ];

    /// `none`, an ordering's name, or `auto`: what [`Reorder::from_str`] reads.
    pub fn name(self) -> &'static str {
        match self {
            Reorder::None => "none",
            Reorder::By(o) => o.name(),
            Reorder::Auto => "auto",
        }
    }

    /// `auto`'s rule on the CPU, a model with no fitted constant: x sectors are what a gather-bound call
    /// pays for (the limits model of `docs/limits.md`), and a reordered call adds two random
    /// gathers per row, x into the new numbering and y back, one sector each. So the order is
    /// kept when `after + 2·n < before`, in f64 sectors ([`crate::matrix::x_sectors`]).
    pub fn keeps(before: u64, after: u64, n: usize) -> bool {
        after.saturating_add(2 * n as u64) < before
    }
}

named_choice!(Reorder, "reordering");
