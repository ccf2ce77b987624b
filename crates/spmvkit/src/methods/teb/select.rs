//! TEB's heuristic threshold selection (paper teb.md §3.1.1, Alg. 1, Fig. 11, Eqs. 3–7) and the
//! search over the block count bLN (§3.1.2, Eq. 10), on the row lengths alone.
//!
//! The row-merge pass of Alg. 2 only needs the multiset of row lengths, so it runs here on the
//! lengths sorted in descending order and run-length encoded as (length, count) pairs: a block
//! takes one row from the head (largest) and then as many rows as fit from the tail run
//! (smallest) in one step. One pass costs O(bLN + D) (D = distinct lengths), not O(M).
//!
//! Merge rule, as the worked example (Figs. 13–15) applies it: a block starts with the largest
//! remaining row and takes the smallest remaining rows while `sum + next ≤ Threshold`. Alg. 2's
//! text says `<`, which contradicts its own example (3 + 1 = Threshold = 4 is merged in Fig.
//! 13(c)); we follow the example. As in Alg. 2 (line 13, `Blo_Idx[bLN] = N`), the last of the
//! bLN blocks takes every row still left; when the rows run out earlier the remaining blocks are
//! empty and count as 0 nnz in the variance (Eq. 5 divides by bLN with AVG = NNZ/bLN).
//!
//! Heuristic (Alg. 1): bLN_critical is the smallest block count i ≥ 2 with S²(k=1) > S²(k=1.01)
//! (Eq. 7). It does not depend on bLN (Alg. 1 only bounds its loop by bLN), so it is computed
//! once. Then AVG_bLN > AVG_critical ⇔ bLN < critical → k = 1.005; AVG_bLN > AVG_critical/2 ⇔
//! bLN < 2·critical → k = 1.01; else k = 1.03 (Fig. 11). If no critical count exists up to the
//! largest bLN considered, every bLN is below it: k = 1.005. The scan is exhaustive up to 4096
//! and advances by ⌈i/512⌉ beyond (critical counts above 4096 are found within 0.2 %).
//!
//! bLN search: the least S² over a window [lo, hi] of block counts, stopping at the first bLN
//! that satisfies Eq. 10 (largest row > 2·Threshold; that bLN is still evaluated, larger ones are
//! not). Ties go to the larger bLN (more CTAs). The paper searches 2..=M; on a GPU a CTA per
//! block with one thread per row needs neither a handful of huge blocks nor blocks of 1–3 rows,
//! and Eq. 5's absolute variance always prefers more, smaller blocks, so the default window keeps
//! the mean rows per block in [64, 1024] (`bln_range=2..M` restores the paper's range). A window
//! wider than `candidates` is searched coarse-to-fine: an even grid of `candidates` counts, then
//! the same around the best one with the grid step as radius, until the step is 1. Candidates
//! are evaluated in parallel.

use rayon::prelude::*;

/// The k values of the Fig. 11 decision tree.
pub const K_HIGH: f64 = 1.005;
pub const K_MID: f64 = 1.01;
pub const K_LOW: f64 = 1.03;

/// Exhaustive part of the critical-count scan.
const CRITICAL_EXACT: usize = 4096;

/// Row lengths of the non-empty rows, sorted descending and run-length encoded.
#[derive(Clone, Debug)]
pub struct Lengths {
    /// (length, count), length strictly decreasing, length > 0.
    runs: Vec<(u64, u64)>,
    nnz: u64,
    rows: u64,
}

/// Eq. 3/4: Threshold = NNZ / bLN · k.
pub fn threshold(nnz: u64, bln: usize, k: f64) -> f64 {
    nnz as f64 / bln as f64 * k
}

/// The integer capacity of a block under `t` (row lengths are integers: sum ≤ t ⇔ sum ≤ ⌊t⌋).
fn cap(t: f64) -> u64 {
    if t <= 0.0 {
        0
    } else {
        // A relative guard so that e.g. 16·1/4 = 4 never reads as 3.999….
        (t * (1.0 + 1e-12)).floor() as u64
    }
}

/// Eq. 5: Σ (NNZ_i − NNZ/bLN)² / bLN over the bLN blocks (empty ones included).
pub fn variance(sums: &[u64], nnz: u64, bln: usize) -> f64 {
    if bln == 0 {
        return 0.0;
    }
    let avg = nnz as f64 / bln as f64;
    let mut acc = 0.0;
    for i in 0..bln {
        let d = sums.get(i).copied().unwrap_or(0) as f64 - avg;
        acc += d * d;
    }
    acc / bln as f64
}

/// Fig. 11: k from bLN and the critical block count.
pub fn heuristic_k(bln: usize, critical: Option<usize>) -> f64 {
    match critical {
        None => K_HIGH,
        Some(c) if bln < c => K_HIGH,
        Some(c) if bln < 2 * c => K_MID,
        Some(_) => K_LOW,
    }
}

impl Lengths {
    /// From the lengths of all rows (empty rows are left out).
    pub fn new(lens: &[u64]) -> Self {
        let mut v: Vec<u64> = lens.par_iter().copied().filter(|&l| l > 0).collect();
        v.par_sort_unstable_by(|a, b| b.cmp(a));
        Self::from_sorted_desc(&v)
    }

    /// From non-empty lengths already sorted in descending order.
    pub fn from_sorted_desc(sorted: &[u64]) -> Self {
        let mut runs: Vec<(u64, u64)> = Vec::new();
        let mut nnz = 0u64;
        for &l in sorted {
            debug_assert!(l > 0);
            nnz += l;
            match runs.last_mut() {
                Some((len, c)) if *len == l => *c += 1,
                _ => runs.push((l, 1)),
            }
        }
        Lengths {
            runs,
            nnz,
            rows: sorted.len() as u64,
        }
    }

    /// Total nnz.
    pub fn nnz(&self) -> u64 {
        self.nnz
    }
    /// Non-empty rows.
    pub fn rows(&self) -> u64 {
        self.rows
    }
    /// The largest row length (0 if none).
    pub fn max(&self) -> u64 {
        self.runs.first().map_or(0, |r| r.0)
    }
    /// Distinct row lengths.
    pub fn distinct(&self) -> usize {
        self.runs.len()
    }

    /// The nnz of the bLN blocks Alg. 2 forms under `t` (empty blocks as 0), in O(bLN + D).
    pub fn block_sums(&self, bln: usize, t: f64, out: &mut Vec<u64>) {
        out.clear();
        let cap = cap(t);
        let mut cnt: Vec<u64> = self.runs.iter().map(|r| r.1).collect();
        let mut head = 0usize;
        let mut tail = self.runs.len();
        let mut remaining = self.rows;
        let mut acc = 0u64;
        for b in 0..bln {
            if remaining == 0 {
                out.push(0);
                continue;
            }
            if b + 1 == bln {
                out.push(self.nnz - acc);
                remaining = 0;
                continue;
            }
            while cnt[head] == 0 {
                head += 1;
            }
            cnt[head] -= 1;
            remaining -= 1;
            let mut sum = self.runs[head].0;
            while remaining > 0 {
                while cnt[tail - 1] == 0 {
                    tail -= 1;
                }
                let s = self.runs[tail - 1].0;
                if sum + s > cap {
                    break;
                }
                let take = ((cap - sum) / s).min(cnt[tail - 1]);
                sum += take * s;
                cnt[tail - 1] -= take;
                remaining -= take;
                if cnt[tail - 1] > 0 {
                    break;
                }
            }
            acc += sum;
            out.push(sum);
        }
    }

    /// S² of the partition into `bln` blocks with factor `k`.
    pub fn variance_at(&self, bln: usize, k: f64) -> f64 {
        let mut sums = Vec::with_capacity(bln);
        self.block_sums(bln, threshold(self.nnz, bln, k), &mut sums);
        variance(&sums, self.nnz, bln)
    }

    /// Eq. 7: whether S²(k = 1) > S²(k = 1.01) at `i` blocks.
    fn is_critical(&self, i: usize) -> bool {
        self.variance_at(i, 1.0) > self.variance_at(i, K_MID)
    }

    /// bLN_critical: the smallest i in 2..=upto with S²(k=1) > S²(k=1.01), or None.
    pub fn critical(&self, upto: usize) -> Option<usize> {
        let mut cands: Vec<usize> = Vec::new();
        let mut i = 2usize;
        while i <= upto {
            cands.push(i);
            i += if i < CRITICAL_EXACT {
                1
            } else {
                i.div_ceil(512)
            };
        }
        for chunk in cands.chunks(64) {
            let hit = chunk
                .par_iter()
                .map(|&i| (i, self.is_critical(i)))
                .collect::<Vec<_>>()
                .into_iter()
                .find(|&(_, c)| c);
            if let Some((i, _)) = hit {
                return Some(i);
            }
        }
        None
    }
}

/// How k is chosen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KChoice {
    /// Alg. 1 / Fig. 11.
    Heuristic,
    Fixed(f64),
}

/// How bLN is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlnChoice {
    /// Least S² over the window `[lo, hi]` (Eq. 10 may cut it), `candidates` per level.
    Search {
        lo: usize,
        hi: usize,
        candidates: usize,
    },
    Fixed(usize),
}

/// The outcome of the selection.
#[derive(Clone, Debug)]
pub struct Selection {
    pub bln: usize,
    pub k: f64,
    pub threshold: f64,
    pub variance: f64,
    /// bLN_critical (None: none up to the largest bLN considered, or k fixed).
    pub critical: Option<usize>,
    /// The searched window after the Eq. 10 stop (equal ends when bLN is fixed).
    pub window: (usize, usize),
    /// Partitions evaluated by the search.
    pub evaluated: usize,
}

impl Lengths {
    /// The critical count needed for `choice` (Alg. 1's first loop), bounded by `upto`.
    pub fn critical_for(&self, k: KChoice, upto: usize) -> Option<usize> {
        match k {
            KChoice::Heuristic => self.critical(upto),
            KChoice::Fixed(_) => None,
        }
    }

    /// k at `bln`.
    pub fn k_at(&self, k: KChoice, bln: usize, critical: Option<usize>) -> f64 {
        match k {
            KChoice::Heuristic => heuristic_k(bln, critical),
            KChoice::Fixed(v) => v,
        }
    }

    /// Chooses bLN and k. `critical` must come from [`Lengths::critical_for`] with `upto` ≥ the
    /// largest bLN considered.
    pub fn select(&self, k: KChoice, bln: BlnChoice, critical: Option<usize>) -> Selection {
        let eval = |b: usize| -> f64 { self.variance_at(b, self.k_at(k, b, critical)) };
        let (best, window, evaluated) = match bln {
            BlnChoice::Fixed(b) => (b, (b, b), 1),
            BlnChoice::Search { lo, hi, candidates } => {
                // Eq. 10: stop at the first bLN whose largest row exceeds 2·Threshold.
                let mut top = hi;
                for b in lo..=hi {
                    let t = threshold(self.nnz, b, self.k_at(k, b, critical));
                    if self.max() as f64 > 2.0 * t {
                        top = b;
                        break;
                    }
                }
                let cands = candidates.max(3);
                let mut best: Option<(f64, usize)> = None;
                let mut evaluated = 0usize;
                let (mut a, mut z) = (lo, top);
                loop {
                    let n = z - a + 1;
                    let step = if n <= cands {
                        1
                    } else {
                        (n - 1).div_ceil(cands - 1)
                    };
                    let mut pts: Vec<usize> = (a..=z).step_by(step).collect();
                    if pts.last() != Some(&z) {
                        pts.push(z);
                    }
                    evaluated += pts.len();
                    let level = pts
                        .par_iter()
                        .map(|&b| (eval(b), b))
                        .reduce_with(better)
                        .expect("at least one candidate");
                    best = Some(best.map_or(level, |b| better(b, level)));
                    if step == 1 {
                        break;
                    }
                    let c = level.1;
                    a = c.saturating_sub(step).max(lo);
                    z = (c + step).min(top);
                }
                (best.map_or(lo, |b| b.1), (lo, top), evaluated)
            }
        };
        let kk = self.k_at(k, best, critical);
        Selection {
            bln: best,
            k: kk,
            threshold: threshold(self.nnz, best, kk),
            variance: self.variance_at(best, kk),
            critical,
            window,
            evaluated,
        }
    }
}

/// The better of two (variance, bLN) pairs: less variance, then the larger bLN.
fn better(a: (f64, usize), b: (f64, usize)) -> (f64, usize) {
    if a.0 < b.0 || (a.0 == b.0 && a.1 > b.1) {
        a
    } else {
        b
    }
}

/// The capacity test of one merge step, shared with the layout builder.
pub(crate) fn fits(sum: u64, next: u64, t: f64) -> bool {
    sum + next <= cap(t)
}
