//! Recursive graph bisection (BP) of Dhulipala, Kabiljo, Karrer, Ottaviano, Pupyrev and Shalita,
//! "Compressing graphs and indexes with recursive graph bisection", KDD 2016, Algorithm 1.
//!
//! The vertex set is split in two halves of fixed sizes n₁ = ⌊n/2⌋ and n₂; every vertex q is a
//! query whose neighbours fall d₁ in the first half and d₂ in the second, and the split costs
//! Σ_q d₁·log₂(n₁/(d₁+1)) + d₂·log₂(n₂/(d₂+1)) (the log-gap cost of q's adjacency list). Each
//! round computes every vertex's move gain (the cost saved by moving it to the other half),
//! sorts each half by gain, and swaps the pairs (best of one half, best of the other, …) while
//! their gains sum above zero; at most [`ROUNDS`] rounds, fewer once no pair is swapped. Both
//! halves are then ordered the same way, recursively, down to [`LEAF`] vertices, the first
//! half before the second. Neighbours in the same half end up in nearby positions, so the rows
//! of a 32-row chunk read few sectors of x.
//!
//! As in a multilevel partitioner, each subproblem sees the subgraph induced by its vertices
//! (the paper's queries reach the whole graph); the recursion carries that subgraph in local
//! numbers down, so deeper levels work on compact arrays. The initial split of each subproblem is
//! its incoming order, and the whole recursion starts from the reverse Cuthill–McKee order, so
//! the first cuts are breadth-first level cuts that the rounds refine. Parallel: the rounds of a
//! large subproblem over its vertices (rayon), the two halves of a split with `rayon::join`.
//! Deterministic: ties in gain are broken by vertex index.

use rayon::prelude::*;

use super::graph::{par_fill, prefix, Graph};
use crate::scalar::Idx;

/// Subproblems of at most this many vertices keep their order.
const LEAF: usize = 16;

/// Rounds of swaps per bisection at most (the paper uses 20).
const ROUNDS: usize = 12;

/// Smallest subproblem whose rounds run in parallel.
const PAR_MIN: usize = 4096;

/// A subproblem: its vertices (original numbers) in the current order, and the subgraph they
/// induce in local numbers (positions in `verts`).
struct Sub {
    verts: Vec<Idx>,
    ptr: Vec<usize>,
    adj: Vec<Idx>,
}

/// The recursive-bisection order of `g`, starting from `start` (entry k: the vertex in place k).
pub(crate) fn bisection(g: &Graph, start: Vec<Idx>) -> Vec<Idx> {
    let n = g.n();
    let mut local = vec![0 as Idx; n];
    for (k, &v) in start.iter().enumerate() {
        local[v as usize] = k as Idx;
    }
    // the neighbours of v without a self-loop
    let nbrs = |v: Idx| g.neighbors(v as usize).iter().filter(move |&&u| u != v);
    let lens: Vec<usize> = start.par_iter().map(|&v| nbrs(v).count()).collect();
    let ptr = prefix(&lens);
    let mut adj = vec![0 as Idx; ptr[n]];
    par_fill(&ptr, &mut adj, |k, out| {
        for (o, &u) in out.iter_mut().zip(nbrs(start[k])) {
            *o = local[u as usize];
        }
    });
    drop(local);
    let max_degree = lens.iter().copied().max().unwrap_or(0);
    // f[d] = d·log₂(d + 1): the part of a query's cost that depends on its degree alone
    let f: Vec<f64> = (0..max_degree + 2)
        .map(|d| d as f64 * ((d + 1) as f64).log2())
        .collect();
    let mut out = vec![0 as Idx; n];
    split(
        Sub {
            verts: start,
            ptr,
            adj,
        },
        &mut out,
        &f,
    );
    out
}

/// Orders `sub` into `out` (as long as its vertex list).
fn split(sub: Sub, out: &mut [Idx], f: &[f64]) {
    let n = sub.verts.len();
    if n <= LEAF {
        out.copy_from_slice(&sub.verts);
        return;
    }
    let side = refine(&sub, f);
    let (left, right) = children(sub, &side);
    let (lo, hi) = out.split_at_mut(left.verts.len());
    rayon::join(|| split(left, lo, f), || split(right, hi, f));
}

/// The halves of `sub` after the swap rounds: `side[v]` is true for the second half.
fn refine(sub: &Sub, f: &[f64]) -> Vec<bool> {
    let n = sub.verts.len();
    let n1 = n / 2;
    let mut side: Vec<bool> = (0..n).map(|v| v >= n1).collect();
    let par = n >= PAR_MIN;
    // moving a vertex out of a half of size m into one of size m' changes every query's
    // d·log₂(size) part by log₂ m − log₂ m'
    let size_term = (n1 as f64).log2() - ((n - n1) as f64).log2();
    let nbrs = |v: usize| &sub.adj[sub.ptr[v]..sub.ptr[v + 1]];
    for _ in 0..ROUNDS {
        let s = &side;
        // d2[q]: q's neighbours in the second half
        let d2_of = |q: usize| nbrs(q).iter().filter(|&&u| s[u as usize]).count() as u32;
        let d2: Vec<u32> = if par {
            (0..n).into_par_iter().map(d2_of).collect()
        } else {
            (0..n).map(d2_of).collect()
        };
        let gain = |v: usize| {
            let mut g = 0.0;
            for &q in nbrs(v) {
                let q = q as usize;
                let b = d2[q] as usize;
                let a = nbrs(q).len() - b;
                // (from, to): the degrees in the half v leaves and the half it joins
                let (from, to) = if s[v] { (b, a) } else { (a, b) };
                g += (f[to + 1] - f[to]) - (f[from] - f[from - 1]);
            }
            let sign = if s[v] { -1.0 } else { 1.0 };
            g + sign * size_term * nbrs(v).len() as f64
        };
        let gains: Vec<f64> = if par {
            (0..n).into_par_iter().map(gain).collect()
        } else {
            (0..n).map(gain).collect()
        };
        let by_gain = |a: &Idx, b: &Idx| {
            gains[*b as usize]
                .total_cmp(&gains[*a as usize])
                .then(a.cmp(b))
        };
        let (mut first, mut second): (Vec<Idx>, Vec<Idx>) =
            (0..n as Idx).partition(|&v| !s[v as usize]);
        if par {
            first.par_sort_unstable_by(by_gain);
            second.par_sort_unstable_by(by_gain);
        } else {
            first.sort_unstable_by(by_gain);
            second.sort_unstable_by(by_gain);
        }
        let mut swaps = 0;
        for (&u, &v) in first.iter().zip(&second) {
            if gains[u as usize] + gains[v as usize] <= 0.0 {
                break;
            }
            side[u as usize] = true;
            side[v as usize] = false;
            swaps += 1;
        }
        if swaps == 0 {
            break;
        }
    }
    side
}

/// The two halves of `sub` as subproblems, each in its incoming order.
fn children(sub: Sub, side: &[bool]) -> (Sub, Sub) {
    let n = sub.verts.len();
    let mut local = vec![0 as Idx; n];
    let mut count = [0usize; 2];
    for v in 0..n {
        let s = usize::from(side[v]);
        local[v] = count[s] as Idx;
        count[s] += 1;
    }
    let half = |s: bool| {
        let members: Vec<usize> = (0..n).filter(|&v| side[v] == s).collect();
        let nbrs = |v: usize| {
            sub.adj[sub.ptr[v]..sub.ptr[v + 1]]
                .iter()
                .filter(move |&&u| side[u as usize] == s)
        };
        let lens: Vec<usize> = members.iter().map(|&v| nbrs(v).count()).collect();
        let ptr = prefix(&lens);
        let mut adj = vec![0 as Idx; ptr[members.len()]];
        par_fill(&ptr, &mut adj, |k, out| {
            for (o, &u) in out.iter_mut().zip(nbrs(members[k])) {
                *o = local[u as usize];
            }
        });
        Sub {
            verts: members.iter().map(|&v| sub.verts[v]).collect(),
            ptr,
            adj,
        }
    };
    if n >= PAR_MIN {
        rayon::join(|| half(false), || half(true))
    } else {
        (half(false), half(true))
    }
}
