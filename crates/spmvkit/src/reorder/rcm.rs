//! Reverse Cuthill–McKee, level by level in parallel.
//!
//! Cuthill–McKee (Cuthill & McKee 1969) numbers a connected graph breadth first from a start
//! vertex, the children of each vertex in increasing degree; George (1971) showed that the
//! reversed numbering has the same bandwidth and less profile (fill). The start vertex is a
//! pseudo-peripheral one, found as George & Liu (1979) simplify Gibbs, Poole & Stockmeyer (1976):
//! from a vertex, build its level structure, take a vertex of least degree in the last level,
//! and repeat while the number of levels grows. Components are numbered one after another, each
//! from the first vertex not yet numbered, then the whole sequence is reversed.
//!
//! Parallel as in the level-synchronous algorithm of Karantasis et al. ("Parallelization of
//! reordering algorithms for bandwidth and wavefront reduction", SC 2014): the vertices of one
//! level hold consecutive positions; every vertex of the next level takes as parent the
//! earliest-placed neighbour in the current level (`fetch_min` on its claim), and the next level
//! is the current one's children, parent by parent, each parent's in increasing (degree, index).
//! That is exactly the serial numbering with ties broken by index, so the result does not depend
//! on the number of threads.

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use rayon::prelude::*;

use super::graph::Graph;
use crate::scalar::Idx;

/// Levels smaller than this are expanded serially.
const PAR_LEVEL: usize = 2048;

/// No claim yet.
const UNSEEN: u32 = u32::MAX;

/// The reverse Cuthill–McKee order of `g`: entry k is the vertex numbered k.
pub(crate) fn rcm(g: &Graph) -> Vec<Idx> {
    let n = g.n();
    let claim: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(UNSEEN)).collect();
    let mut marks = Marks::new(n);
    let mut order: Vec<Idx> = Vec::with_capacity(n);
    for s in 0..n {
        if claim[s].load(Relaxed) != UNSEEN {
            continue;
        }
        let root = if g.degree(s) == 0 {
            s
        } else {
            pseudo_peripheral(g, s, &mut marks)
        };
        number_component(g, root, &claim, &mut order);
    }
    order.reverse();
    order
}

/// Numbers the component of `root` in Cuthill–McKee order, appending to `order`.
fn number_component(g: &Graph, root: usize, claim: &[AtomicU32], order: &mut Vec<Idx>) {
    let mut lo = order.len();
    claim[root].store(lo as u32, Relaxed);
    order.push(root as Idx);
    while lo < order.len() {
        let hi = order.len();
        let frontier = &order[lo..hi];
        let offer = |(k, &p): (usize, &Idx)| {
            for &u in g.neighbors(p as usize) {
                claim[u as usize].fetch_min((lo + k) as u32, Relaxed);
            }
        };
        let children = |(k, &p): (usize, &Idx)| {
            let pos = (lo + k) as u32;
            let mut ch: Vec<Idx> = g
                .neighbors(p as usize)
                .iter()
                .copied()
                .filter(|&u| claim[u as usize].load(Relaxed) == pos)
                .collect();
            ch.sort_unstable_by_key(|&u| (g.degree(u as usize), u));
            ch
        };
        let next: Vec<Idx> = if frontier.len() < PAR_LEVEL {
            frontier.iter().enumerate().for_each(offer);
            frontier.iter().enumerate().flat_map(children).collect()
        } else {
            frontier.par_iter().enumerate().for_each(offer);
            frontier
                .par_iter()
                .enumerate()
                .flat_map_iter(children)
                .collect()
        };
        order.extend_from_slice(&next);
        lo = hi;
    }
}

/// Visited stamps for repeated breadth-first searches: a vertex is seen in the current search
/// when its mark equals the current stamp.
struct Marks {
    mark: Vec<AtomicU32>,
    stamp: u32,
}

impl Marks {
    fn new(n: usize) -> Self {
        Marks {
            mark: (0..n).map(|_| AtomicU32::new(0)).collect(),
            stamp: 0,
        }
    }

    /// Starts a new search: nothing is seen.
    fn next(&mut self) {
        if self.stamp == u32::MAX {
            self.mark.par_iter().for_each(|m| m.store(0, Relaxed));
            self.stamp = 0;
        }
        self.stamp += 1;
    }

    /// Marks `v` seen; true when it was not.
    #[inline]
    fn visit(&self, v: usize) -> bool {
        let m = &self.mark[v];
        m.load(Relaxed) != self.stamp && m.swap(self.stamp, Relaxed) != self.stamp
    }
}

/// The number of levels of the level structure rooted at `root`, and its last level.
fn levels(g: &Graph, root: usize, marks: &mut Marks) -> (usize, Vec<Idx>) {
    marks.next();
    marks.visit(root);
    let mut frontier = vec![root as Idx];
    let mut depth = 1;
    loop {
        let m = &*marks;
        let expand = |&v: &Idx| {
            g.neighbors(v as usize)
                .iter()
                .copied()
                .filter(|&u| m.visit(u as usize))
        };
        let next: Vec<Idx> = if frontier.len() < PAR_LEVEL {
            frontier.iter().flat_map(expand).collect()
        } else {
            frontier.par_iter().flat_map_iter(expand).collect()
        };
        if next.is_empty() {
            return (depth, frontier);
        }
        frontier = next;
        depth += 1;
    }
}

/// A pseudo-peripheral vertex of the component of `start` (George & Liu 1979).
fn pseudo_peripheral(g: &Graph, start: usize, marks: &mut Marks) -> usize {
    let (mut root, (mut depth, mut last)) = (start, levels(g, start, marks));
    loop {
        let Some(&cand) = last.iter().min_by_key(|&&v| (g.degree(v as usize), v)) else {
            return root;
        };
        let (d, l) = levels(g, cand as usize, marks);
        if d <= depth {
            return root;
        }
        (root, depth, last) = (cand as usize, d, l);
    }
}
