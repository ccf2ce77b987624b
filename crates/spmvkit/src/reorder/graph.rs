//! The undirected graph an ordering works on: the pattern of A + Aᵀ, as sorted adjacency
//! lists. A structurally symmetric A (checked in parallel by fingerprints of the entries,
//! `symmetric_pattern`) is its own graph: the lists are A's rows, borrowed, and a row's
//! diagonal entry stays in as a self-loop, which a search passes over as already seen. Any
//! other A is merged row by row with its transpose, in parallel over blocks of rows, without
//! the diagonal.

use std::borrow::Cow;

use rayon::prelude::*;

use crate::error::{check_index_range, Result};
use crate::matrix::{transpose_arrays, Csr};
use crate::scalar::{Idx, Scalar};

/// How many vertices (or rows) ahead a search along a list prefetches; half as far, the lists
/// of their neighbours (or their entries).
pub(crate) const LOOKAHEAD: usize = 16;

/// Rows per block when rows are filled in parallel.
const FILL_BLOCK_ROWS: usize = 2048;

/// Sorted adjacency lists of an undirected graph, each may hold its own vertex (a self-loop).
pub(crate) struct Graph<'a> {
    ptr: Cow<'a, [Idx]>,
    adj: Cow<'a, [Idx]>,
}

impl<'a> Graph<'a> {
    /// The number of vertices.
    pub(crate) fn n(&self) -> usize {
        self.ptr.len() - 1
    }

    /// The neighbours of `v`, increasing; `v` itself among them where A stores a_vv.
    #[inline]
    pub(crate) fn neighbors(&self, v: usize) -> &[Idx] {
        &self.adj[self.ptr[v] as usize..self.ptr[v + 1] as usize]
    }

    /// The length of `v`'s list (its degree, plus one for a self-loop).
    #[inline]
    pub(crate) fn degree(&self, v: usize) -> usize {
        (self.ptr[v + 1] - self.ptr[v]) as usize
    }

    /// Prefetches what `neighbors` reads for the vertex at `list[k + LOOKAHEAD]` (its offsets)
    /// and at `list[k + LOOKAHEAD / 2]` (its list), so that a search going down `list` finds
    /// them in cache.
    #[inline]
    pub(crate) fn prefetch_ahead(&self, list: &[Idx], k: usize) {
        if let Some(&v) = list.get(k + LOOKAHEAD) {
            prefetch(&self.ptr, v as usize);
        }
        if let Some(&v) = list.get(k + LOOKAHEAD / 2) {
            prefetch(&self.adj, self.ptr[v as usize] as usize);
        }
    }

    /// The graph of the square matrix `a` (the caller checked the shape): i ~ j when a_ij or a_ji
    /// is stored; i ~ i only in a symmetric pattern's borrowed rows. An error when the
    /// symmetrised pattern of an unsymmetric A has more entries than an index can count.
    pub(crate) fn of<T: Scalar>(a: &'a Csr<T>) -> Result<Graph<'a>> {
        let n = a.nrows();
        let (rp, ci) = (a.row_ptr(), a.col_idx());
        if symmetric_pattern(rp, ci) {
            return Ok(Graph {
                ptr: Cow::Borrowed(rp),
                adj: Cow::Borrowed(ci),
            });
        }
        let row = |i: usize| &ci[rp[i] as usize..rp[i + 1] as usize];
        let units = vec![(); ci.len()];
        let (tp, ti, _) = transpose_arrays(n, n, rp, ci, &units);
        let trow = |i: usize| &ti[tp[i] as usize..tp[i + 1] as usize];
        let lens: Vec<usize> = (0..n)
            .into_par_iter()
            .map(|i| union_without(row(i), trow(i), i as Idx, |_| {}))
            .collect();
        let ptr = prefix(&lens);
        check_index_range("entries of the pattern of A + Aᵀ", ptr[n] as u64)?;
        let mut adj = vec![0 as Idx; ptr[n]];
        par_fill(&ptr, &mut adj, |i, out| {
            let mut k = 0;
            union_without(row(i), trow(i), i as Idx, |c| {
                out[k] = c;
                k += 1;
            });
        });
        Ok(Graph {
            ptr: Cow::Owned(ptr.iter().map(|&o| o as Idx).collect()),
            adj: Cow::Owned(adj),
        })
    }
}

/// Whether the pattern is structurally symmetric, by fingerprints in one parallel pass: the
/// sums over the entries (i, j) of a 64-bit hash of (i, j) and of (j, i) agree for every
/// symmetric pattern, and for any other only by a 64-bit collision. (Looking up each (j, i)
/// instead reads a random row per entry, most of `Graph::of`'s time on a shuffled matrix.) A
/// collision could only make the ordering work on A's own pattern; any ordering is a correct
/// permutation, so no result could be wrong.
pub(crate) fn symmetric_pattern(rp: &[Idx], ci: &[Idx]) -> bool {
    let n = rp.len() - 1;
    let sums = |i: usize| {
        let mut s = [0u64; 2];
        for &c in &ci[rp[i] as usize..rp[i + 1] as usize] {
            s[0] = s[0].wrapping_add(mix(pair(i as u64, c as u64)));
            s[1] = s[1].wrapping_add(mix(pair(c as u64, i as u64)));
        }
        s
    };
    let add = |a: [u64; 2], b: [u64; 2]| [a[0].wrapping_add(b[0]), a[1].wrapping_add(b[1])];
    let s = (0..n)
        .into_par_iter()
        .with_min_len(1024)
        .map(sums)
        .reduce(|| [0; 2], add);
    s[0] == s[1]
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

/// Asks the cache for `s[i]` ahead of its use (a hint with no effect on results; nothing where
/// the target has no stable prefetch instruction, or `i` is out of range). The breadth-first
/// searches and PAPᵀ read rows in a random order; prefetching the rows a few steps ahead lets
/// their cache misses overlap.
#[inline(always)]
pub(crate) fn prefetch<E>(s: &[E], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(e) = s.get(i) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: SSE, which holds the prefetch instruction, is part of every x86_64 target; a
        // prefetch reads nothing into the program and cannot fault, and the address is that of
        // an element of `s`.
        unsafe { _mm_prefetch::<_MM_HINT_T0>((e as *const E).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (s, i);
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
    par_fill_with(ptr, out, |i, line, _: &mut ()| fill(i, line));
}

/// Output arrays cut into lines at the same offsets: a slice, or a pair of such arrays.
pub(crate) trait Lines: Send + Sized {
    /// The part before `at` and the rest.
    fn cut(self, at: usize) -> (Self, Self);
}

impl<E: Send> Lines for &mut [E] {
    fn cut(self, at: usize) -> (Self, Self) {
        self.split_at_mut(at)
    }
}

impl<A: Lines, B: Lines> Lines for (A, B) {
    fn cut(self, at: usize) -> (Self, Self) {
        let (a, rest_a) = self.0.cut(at);
        let (b, rest_b) = self.1.cut(at);
        ((a, b), (rest_a, rest_b))
    }
}

/// [`par_fill`] into any [`Lines`] (several arrays with the same offsets at once), with a
/// scratch value `S` made once per block and handed to every line of it.
pub(crate) fn par_fill_with<O: Lines, S: Default>(
    ptr: &[usize],
    out: O,
    fill: impl Fn(usize, O, &mut S) + Sync,
) {
    let n = ptr.len() - 1;
    let mut blocks = Vec::with_capacity(n.div_ceil(FILL_BLOCK_ROWS));
    let mut rest = out;
    for lo in (0..n).step_by(FILL_BLOCK_ROWS) {
        let hi = (lo + FILL_BLOCK_ROWS).min(n);
        let (block, tail) = rest.cut(ptr[hi] - ptr[lo]);
        blocks.push((lo, hi, block));
        rest = tail;
    }
    blocks.into_par_iter().for_each(|(lo, hi, mut block)| {
        let mut scratch = S::default();
        for i in lo..hi {
            let (line, tail) = block.cut(ptr[i + 1] - ptr[i]);
            fill(i, line, &mut scratch);
            block = tail;
        }
    });
}
