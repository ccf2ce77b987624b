//! Reverse Cuthill–McKee, level by level in parallel.
//!
//! Cuthill–McKee (Cuthill & McKee 1969) numbers a connected graph breadth first from a start
//! vertex, the children of each vertex in increasing degree; George (1971) showed that the
//! reversed numbering has the same bandwidth and less profile (fill). Components are numbered
//! one after another, each from a start found from the first vertex not yet numbered, then the
//! whole sequence is reversed.
//!
//! The start is a pseudo-peripheral vertex as George & Liu (1979) simplify Gibbs, Poole &
//! Stockmeyer (1976): from a vertex, build its level structure and take a vertex of least
//! degree in the last level. George and Liu repeat that while the number of levels grows;
//! here it is done once, since on meshes and geometric graphs the vertex of one sweep is
//! already (nearly) as eccentric, and every sweep costs a breadth-first search of the whole
//! component, as much as the numbering itself (docs/reorder.md has the measured times and
//! orderings).
//!
//! Parallel as in the level-synchronous algorithm of Karantasis et al. ("Parallelization of
//! reordering algorithms for bandwidth and wavefront reduction", SC 2014): the vertices of one
//! level hold consecutive positions; every vertex of the next level takes as parent the
//! earliest-placed neighbour in the current level (`fetch_min` on its claim), and the next level
//! is the current one's children, parent by parent, each parent's in increasing (degree, index).
//! That is exactly the serial numbering with ties broken by index, so the result does not depend
//! on the number of threads. Levels below [`PAR_LEVEL`] vertices, and every level on fewer than
//! [`PAR_NUMBER_THREADS`] threads, are numbered serially, in one pass with no atomic
//! read-modify-write. Seen and numbered vertices are bit sets, which stay in
//! cache while the adjacency lists stream through.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use rayon::prelude::*;

use super::graph::Graph;
use super::OrderTimes;
use crate::scalar::Idx;

/// Levels smaller than this are expanded serially.
const PAR_LEVEL: usize = 1024;

/// Parents per task when a level is expanded in parallel.
const PAR_CHUNK: usize = 128;

/// Threads from which the numbering expands wide levels in parallel: its parallel expansion
/// does 2–3 times the serial work (two passes and atomic claims), so on two threads it was
/// slower than the serial one (docs/reorder.md). The searches do no extra work in parallel and
/// use two threads.
const PAR_NUMBER_THREADS: usize = 4;

/// No claim yet.
const UNSEEN: u32 = u32::MAX;

/// The reverse Cuthill–McKee order of `g`: entry k is the vertex numbered k. The time of the
/// start searches and of the numbering go to `times`.
pub(crate) fn rcm(g: &Graph, times: &mut OrderTimes) -> Vec<Idx> {
    let n = g.n();
    let numbered = Bits::new(n);
    let seen = Bits::new(n);
    let claim: Vec<AtomicU32> = (0..n)
        .into_par_iter()
        .with_min_len(4096)
        .map(|_| AtomicU32::new(UNSEEN))
        .collect();
    let mut order: Vec<Idx> = Vec::with_capacity(n);
    let mut scratch = Vec::new();
    for s in 0..n {
        if numbered.get(s) {
            continue;
        }
        let t = Instant::now();
        let root = if g.degree(s) == 0 {
            s
        } else {
            pseudo_peripheral(g, s, &seen, &mut scratch)
        };
        let t1 = Instant::now();
        number_component(g, root, &numbered, &claim, &mut order);
        times.start += t1 - t;
        times.number += t1.elapsed();
    }
    let t = Instant::now();
    order.reverse();
    times.number += t.elapsed();
    order
}

/// The key children are sorted by: increasing degree, ties by index.
#[inline]
fn by_degree(g: &Graph, u: Idx) -> (usize, Idx) {
    (g.degree(u as usize), u)
}

/// Numbers the component of `root` in Cuthill–McKee order, appending to `order`.
fn number_component(
    g: &Graph,
    root: usize,
    numbered: &Bits,
    claim: &[AtomicU32],
    order: &mut Vec<Idx>,
) {
    let mut lo = order.len();
    numbered.set(root);
    order.push(root as Idx);
    while lo < order.len() {
        let hi = order.len();
        if !parallel(hi - lo, PAR_NUMBER_THREADS) {
            for k in lo..hi {
                g.prefetch_ahead(order, k);
                let from = order.len();
                for &u in g.neighbors(order[k] as usize) {
                    if !numbered.get(u as usize) {
                        numbered.set(u as usize);
                        order.push(u);
                    }
                }
                order[from..].sort_unstable_by_key(|&u| by_degree(g, u));
            }
        } else {
            let frontier = &order[lo..hi];
            // each chunk's unnumbered neighbours, parent by parent, offered to their claims
            let offered: Vec<Vec<(Idx, u32)>> = frontier
                .par_chunks(PAR_CHUNK)
                .enumerate()
                .map(|(c, parents)| {
                    let mut out = Vec::new();
                    for (j, &p) in parents.iter().enumerate() {
                        g.prefetch_ahead(parents, j);
                        let pos = (lo + c * PAR_CHUNK + j) as u32;
                        for &u in g.neighbors(p as usize) {
                            let claimed = &claim[u as usize];
                            if !numbered.get(u as usize) && claimed.load(Relaxed) > pos {
                                claimed.fetch_min(pos, Relaxed);
                                out.push((u, pos));
                            }
                        }
                    }
                    out
                })
                .collect();
            // the offers that won are the children, each parent's sorted
            let next: Vec<Vec<Idx>> = offered
                .into_par_iter()
                .map(|offers| {
                    let mut out = Vec::with_capacity(offers.len());
                    for group in offers.chunk_by(|a, b| a.1 == b.1) {
                        let pos = group[0].1;
                        let from = out.len();
                        out.extend(
                            group
                                .iter()
                                .map(|&(u, _)| u)
                                .filter(|&u| claim[u as usize].load(Relaxed) == pos),
                        );
                        out[from..].sort_unstable_by_key(|&u| by_degree(g, u));
                    }
                    out
                })
                .collect();
            for part in &next {
                for &u in part {
                    numbered.set(u as usize);
                }
                order.extend_from_slice(part);
            }
        }
        lo = hi;
    }
}

/// A bit per vertex. `set` and `clear` are plain read-and-write (for serial code); `claim` is
/// the atomic one, for parallel expansion.
struct Bits(Vec<AtomicU64>);

impl Bits {
    fn new(n: usize) -> Self {
        Bits((0..n.div_ceil(64)).map(|_| AtomicU64::new(0)).collect())
    }

    #[inline]
    fn get(&self, v: usize) -> bool {
        self.0[v / 64].load(Relaxed) & (1 << (v % 64)) != 0
    }

    #[inline]
    fn set(&self, v: usize) {
        let w = &self.0[v / 64];
        w.store(w.load(Relaxed) | (1 << (v % 64)), Relaxed);
    }

    #[inline]
    fn clear(&self, v: usize) {
        let w = &self.0[v / 64];
        w.store(w.load(Relaxed) & !(1 << (v % 64)), Relaxed);
    }

    /// Sets the bit of `v` atomically; true when it was not set.
    #[inline]
    fn claim(&self, v: usize) -> bool {
        let bit = 1 << (v % 64);
        let w = &self.0[v / 64];
        w.load(Relaxed) & bit == 0 && w.fetch_or(bit, Relaxed) & bit == 0
    }
}

/// A pseudo-peripheral vertex of the component of `root`, after one sweep of George & Liu
/// (1979): the vertex of least (degree, index) in the last level of the level structure rooted
/// at `root`. Marks the component in `seen` and clears it again;
/// `all` is scratch space.
fn pseudo_peripheral(g: &Graph, root: usize, seen: &Bits, all: &mut Vec<Idx>) -> usize {
    all.clear();
    seen.set(root);
    all.push(root as Idx);
    let mut lo = 0;
    loop {
        let hi = all.len();
        if !parallel(hi - lo, 2) {
            for k in lo..hi {
                g.prefetch_ahead(all, k);
                for &u in g.neighbors(all[k] as usize) {
                    if !seen.get(u as usize) {
                        seen.set(u as usize);
                        all.push(u);
                    }
                }
            }
        } else {
            let next: Vec<Vec<Idx>> = all[lo..hi]
                .par_chunks(PAR_CHUNK)
                .map(|parents| {
                    let mut out = Vec::new();
                    for (j, &p) in parents.iter().enumerate() {
                        g.prefetch_ahead(parents, j);
                        out.extend(
                            g.neighbors(p as usize)
                                .iter()
                                .filter(|&&u| seen.claim(u as usize)),
                        );
                    }
                    out
                })
                .collect();
            for part in &next {
                all.extend_from_slice(part);
            }
        }
        if all.len() == hi {
            let last = &all[lo..hi];
            let far = last.iter().copied().min_by_key(|&v| by_degree(g, v));
            for &v in all.iter() {
                seen.clear(v as usize);
            }
            return far.map_or(root, |v| v as usize);
        }
        lo = hi;
    }
}

/// Whether a level of `len` vertices is expanded in parallel: when it is large enough and
/// there are at least `threads` threads.
fn parallel(len: usize, threads: usize) -> bool {
    len >= PAR_LEVEL && rayon::current_num_threads() >= threads
}
