//! The undirected graph an ordering works on: the pattern of A + Aᵀ without the diagonal, as
//! sorted adjacency lists. A structurally symmetric A (checked in parallel by fingerprints of
//! the entries, `symmetric_pattern`) gives its own rows less the diagonal; any other A is
//! merged row by row with its transpose. Both built in parallel over blocks of rows.

use rayon::prelude::*;

use crate::matrix::{transpose_arrays, Csr};
use crate::scalar::{Idx, Scalar};

/// Rows per block when rows are filled in parallel.
const FILL_BLOCK_ROWS: usize = 2048;

/// Sorted adjacency lists of an undirected graph without self-loops.
pub(crate) struct Graph {
    pub(crate) ptr: Vec<usize>,
    pub(crate) adj: Vec<Idx>,
}

impl Graph {
    /// The number of vertices.
    pub(crate) fn n(&self) -> usize {
        self.ptr.len() - 1
    }

    /// The neighbours of `v`, increasing.
    #[inline]
    pub(crate) fn neighbors(&self, v: usize) -> &[Idx] {
        &self.adj[self.ptr[v]..self.ptr[v + 1]]
    }

    /// The degree of `v`.
    #[inline]
    pub(crate) fn degree(&self, v: usize) -> usize {
        self.ptr[v + 1] - self.ptr[v]
    }

    /// The graph of the square matrix `a` (the caller checked the shape): i ~ j when a_ij or a_ji
    /// is stored and i ≠ j.
    pub(crate) fn of<T: Scalar>(a: &Csr<T>) -> Graph {
        let n = a.nrows();
        let (rp, ci) = (a.row_ptr(), a.col_idx());
        let row = |i: usize| &ci[rp[i] as usize..rp[i + 1] as usize];
        if symmetric_pattern(rp, ci) {
            let lens: Vec<usize> = (0..n)
                .into_par_iter()
                .map(|i| row(i).len() - usize::from(row(i).binary_search(&(i as Idx)).is_ok()))
                .collect();
            let ptr = prefix(&lens);
            let mut adj = vec![0 as Idx; ptr[n]];
            par_fill(&ptr, &mut adj, |i, out| {
                for (o, &c) in out
                    .iter_mut()
                    .zip(row(i).iter().filter(|&&c| c as usize != i))
                {
                    *o = c;
                }
            });
            return Graph { ptr, adj };
        }
        let units = vec![(); ci.len()];
        let (tp, ti, _) = transpose_arrays(n, n, rp, ci, &units);
        let trow = |i: usize| &ti[tp[i] as usize..tp[i + 1] as usize];
        let lens: Vec<usize> = (0..n)
            .into_par_iter()
            .map(|i| union_without(row(i), trow(i), i as Idx, |_| {}))
            .collect();
        let ptr = prefix(&lens);
        let mut adj = vec![0 as Idx; ptr[n]];
        par_fill(&ptr, &mut adj, |i, out| {
            let mut k = 0;
            union_without(row(i), trow(i), i as Idx, |c| {
                out[k] = c;
                k += 1;
            });
        });
        Graph { ptr, adj }
    }
}

/// Whether the pattern is structurally symmetric, by fingerprints in one sequential pass: the
/// sums over the entries (i, j) of two 64-bit hashes of (i, j) and of (j, i) agree for every
/// symmetric pattern, and for any other only by a 128-bit collision. (Looking up each (j, i)
/// instead reads a random row per entry, most of `Graph::of`'s time on a shuffled matrix.) A
/// collision could only make the ordering work on A's own pattern; any ordering is a correct
/// permutation, so no result could be wrong.
pub(crate) fn symmetric_pattern(rp: &[Idx], ci: &[Idx]) -> bool {
    let n = rp.len() - 1;
    let sums = |i: usize| {
        let mut s = [0u64; 4];
        for &c in &ci[rp[i] as usize..rp[i + 1] as usize] {
            let (fwd, bwd) = (pair(i as u64, c as u64), pair(c as u64, i as u64));
            s[0] = s[0].wrapping_add(mix(fwd));
            s[1] = s[1].wrapping_add(mix(bwd));
            s[2] = s[2].wrapping_add(mix(fwd ^ 0x9e37_79b9_7f4a_7c15));
            s[3] = s[3].wrapping_add(mix(bwd ^ 0x9e37_79b9_7f4a_7c15));
        }
        s
    };
    let add = |a: [u64; 4], b: [u64; 4]| std::array::from_fn(|k| a[k].wrapping_add(b[k]));
    let s = (0..n)
        .into_par_iter()
        .with_min_len(1024)
        .map(sums)
        .reduce(|| [0; 4], add);
    s[0] == s[1] && s[2] == s[3]
}

fn pair(i: u64, j: u64) -> u64 {
    (i << 32) | j
}

/// SplitMix64's finaliser: a bijection of 64-bit words that mixes every input bit into every
/// output bit.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Visits the sorted union of two increasing lists without `skip`, returning its length.
fn union_without(a: &[Idx], b: &[Idx], skip: Idx, mut visit: impl FnMut(Idx)) -> usize {
    let (mut i, mut j, mut len) = (0, 0, 0);
    while i < a.len() || j < b.len() {
        let c = match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) if x == y => {
                i += 1;
                j += 1;
                x
            }
            (Some(&x), Some(&y)) if x < y => {
                i += 1;
                x
            }
            (Some(&x), None) => {
                i += 1;
                x
            }
            (_, Some(&y)) => {
                j += 1;
                y
            }
            (None, None) => break,
        };
        if c != skip {
            visit(c);
            len += 1;
        }
    }
    len
}

/// The exclusive prefix sum of `lens`: `lens.len() + 1` offsets.
pub(crate) fn prefix(lens: &[usize]) -> Vec<usize> {
    let mut ptr = Vec::with_capacity(lens.len() + 1);
    let mut acc = 0;
    ptr.push(0);
    for &l in lens {
        acc += l;
        ptr.push(acc);
    }
    ptr
}

/// Calls `fill(i, out_i)` for every line `i` of the offsets `ptr`, where `out_i` is
/// `out[ptr[i]..ptr[i + 1]]`, in parallel over blocks of [`FILL_BLOCK_ROWS`] lines.
pub(crate) fn par_fill<E: Send>(
    ptr: &[usize],
    out: &mut [E],
    fill: impl Fn(usize, &mut [E]) + Sync,
) {
    let n = ptr.len() - 1;
    let mut blocks = Vec::with_capacity(n.div_ceil(FILL_BLOCK_ROWS));
    let mut rest = out;
    for lo in (0..n).step_by(FILL_BLOCK_ROWS) {
        let hi = (lo + FILL_BLOCK_ROWS).min(n);
        let (block, tail) = rest.split_at_mut(ptr[hi] - ptr[lo]);
        blocks.push((lo, hi, block));
        rest = tail;
    }
    blocks.into_par_iter().for_each(|(lo, hi, mut block)| {
        for i in lo..hi {
            let (line, tail) = block.split_at_mut(ptr[i + 1] - ptr[i]);
            fill(i, line);
            block = tail;
        }
    });
}
