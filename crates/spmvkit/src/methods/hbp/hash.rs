//! The row reordering inside one HBP block (HBP paper §III-B, Fig. 3/4): the nonlinear hash of
//! a row's nonzero count in the block, its collision probing, and the baselines the paper
//! compares with (sort2D) or builds on (plain 2D, no reordering).
//!
//! The paper's Fig. 3 (the hash formula) is missing from our copy, so the function is designed
//! from the text. With `n` the row's nonzero count in the block and `d` the table size (the
//! block height, or the number of non-empty rows in the compact table of `combine=sparse`):
//!
//! ```text
//!   n'    = min(n, 9·2^a − 1)              overflow rows are treated as bucket 8
//!   k     = n' >> a                         aggregation: 2^a counts per bucket, 0..=8
//!   base  = ⌊k · d / 9⌋                     dispersion: bucket k owns the k-th ninth of the table
//!                                           (multiplication by b = d/9)
//!   fine  = (n' mod 2^a) >> c               linear mapping: the low bits of n, shifted so that
//!                                           they spread over at most b slots of the bucket
//!   slot  = (base + fine) mod d             then collision probing
//! ```
//!
//! `a` is sampled once per matrix at run time: the smallest shift that maps the 90 % quantile of
//! a sample of non-empty row-in-block counts into 0..=8 ("most rows map into 0..8 after
//! aggregation, overflow treated as 8"). `c = max(0, a − ⌊log2 b⌋)` follows from `a` and the
//! bucket width (so it is "sampled" as the paper says, through `a`); `b = d/9` and `d` follow from
//! the table size. The target is monotone in `n`, so the hashed order approximates an ascending
//! sort (short rows first, as Fig. 4 shows) without comparing rows.
//!
//! Collision probing is the public code's: rows are inserted in their original order; a row takes
//! the free slot nearest its target, probing `t, t+1, t−1, t+2, t−2, …` (ties go up); a target at
//! or past the table's end takes the last free slot. The public code probes linearly, which is
//! quadratic when most rows share a target (e.g. the empty rows of a sparse block); here the
//! nearest free slot on each side is found with two path-halving union-find arrays, which gives
//! the same slots in near-constant time per row.
//!
//! The public code's fixed hash, `slot = (n >> 4) << 8`, is kept as `hash=fixed`.
//!
//! `hash=dp` is the paper's DP2D preprocessing baseline: Regu2D's reordering, "a sorting step
//! then dynamic programming" (§IV-B; Regu2D itself is not in our papers). Regu2D sorts a block's
//! rows by length and partitions the sorted rows by dynamic programming into groups, each padded
//! with zeros to its longest row, minimising the padding. Here the groups are the layout's warp
//! groups: `⌊d/w⌋` groups of `w` rows and, when `r = d mod w > 0`, one short group of `r` rows,
//! stored last in the table. The DP runs over the group boundaries of the sorted rows
//! (`s_0 ≤ … ≤ s_{d−1}`), with the padded zeros `Σ_g (|g|·max_g − Σ_g n)` as cost: state
//! (full groups placed j, short group placed u ∈ {0, 1}) covers the first `j·w + u·r` sorted rows;
//! a full group costs `w·s_last`, the short group `r·s_last`. So the DP chooses which run of the
//! sorted rows forms the short group; ties keep it as late as possible (the sort2D order when
//! that is optimal). The sort is O(d log d), the DP O(d/w) per block: as in the paper, the sort
//! dominates. (With warp groups of fixed width the boundaries are forced but for the short group;
//! variable group sizes, which Regu2D pads to, would change the layout.)
//!
//! `hash=quantile` (ours) keeps the aggregation and the probing but samples the dispersion too:
//! with `F_k` the sampled share of table rows whose bucket is below k (empty rows of the dense
//! tables counted exactly), `base = ⌊d·F_k⌋`, `width = ⌊d·F_{k+1}⌋ − base`,
//! `fine = ((n' mod 2^a)·width) >> a`. Equal ninths (`sampled`) overflow when most rows share a
//! bucket (the empty and 1-nonzero rows of a sparse graph's blocks), and the spill scrambles the
//! order; regions sized by the sample keep collisions among rows of equal counts.

use crate::methods::params::keywords;

keywords! {
    /// How the rows of a block are ordered.
    pub enum HashKind {
        /// The designed nonlinear hash with the sampled shift `a` and equal bucket regions
        /// (b = d/9, from the table size only: the paper's text).
        Sampled = "sampled",
        /// Ours: as `Sampled`, but bucket k's region is the sampled share of rows in bucket k,
        /// and the linear mapping spreads the low bits of n over that region (multiply and
        /// shift).
        Quantile = "quantile",
        /// The public code's `(n >> 4) << 8`.
        Fixed = "fixed",
        /// No reordering: the plain 2D-partitioned baseline (`2d`).
        None = "none",
        /// Stable ascending sort by count: the paper's sort2D preprocessing baseline.
        Sort = "sort",
        /// Sort, then the DP over warp-group boundaries minimising padded zeros: the paper's
        /// DP2D (Regu2D) preprocessing baseline.
        Dp = "dp",
    }
}

/// Buckets of the aggregation (0..=8).
const BUCKETS: u64 = 9;

/// Quantile of the sampled counts that must land in 0..=8 after aggregation.
const QUANTILE: f64 = 0.9;

/// The sampled aggregation shift: the smallest `a` with `q >> a ≤ 8`, `q` the 90 % quantile of
/// `sample` (non-empty row-in-block counts). 0 for an empty sample.
pub(crate) fn sample_shift(sample: &mut [u32]) -> u32 {
    if sample.is_empty() {
        return 0;
    }
    let at = ((sample.len() - 1) as f64 * QUANTILE) as usize;
    let (_, q, _) = sample.select_nth_unstable(at);
    let q = *q;
    let mut a = 0;
    while (q >> a) > 8 {
        a += 1;
    }
    a
}

/// `⌊log2 v⌋` for v ≥ 1 (0 for 0).
fn log2_floor(v: u64) -> u32 {
    if v == 0 {
        0
    } else {
        63 - v.leading_zeros()
    }
}

/// The linear-mapping shift `c` for aggregation shift `a` and table size `d`.
pub(crate) fn fine_shift(a: u32, d: usize) -> u32 {
    let b = (d as u64 / BUCKETS).max(1);
    a.saturating_sub(log2_floor(b))
}

/// The designed hash's target slot for a row of `n` nonzeros in a table of `d` slots (d ≥ 1).
pub(crate) fn sampled_target(n: u32, a: u32, c: u32, d: usize) -> usize {
    let d64 = d as u64;
    let cap = (BUCKETS << a) - 1;
    let n = (n as u64).min(cap);
    let k = n >> a;
    let base = k * d64 / BUCKETS;
    let fine = (n & ((1u64 << a) - 1)) >> c;
    ((base + fine) % d64) as usize
}

/// Fixed-point one of the sampled cumulative shares.
pub(crate) const SHARE_ONE: u64 = 1 << 16;

/// The cumulative bucket shares `F_0..=F_9` (fixed point, F_0 = 0, F_9 = SHARE_ONE) of a sample
/// of non-empty counts under shift `a`, with a share `empty` (0..=1) of empty rows added to
/// bucket 0.
pub(crate) fn sample_shares(sample: &[u32], a: u32, empty: f64) -> [u32; 10] {
    let mut hist = [0u64; 9];
    for &n in sample {
        hist[((n >> a) as usize).min(8)] += 1;
    }
    let total = sample.len().max(1) as f64;
    let mut cum = [0u32; 10];
    let mut acc = 0.0;
    for k in 0..9 {
        let share = hist[k] as f64 / total * (1.0 - empty) + if k == 0 { empty } else { 0.0 };
        acc += share;
        cum[k + 1] = ((acc * SHARE_ONE as f64).round() as u64).min(SHARE_ONE) as u32;
    }
    cum[9] = SHARE_ONE as u32;
    cum
}

/// The quantile hash's target for a row of `n` nonzeros in a table of `d` slots (d ≥ 1).
pub(crate) fn quantile_target(n: u32, a: u32, cum: &[u32; 10], d: usize) -> usize {
    let d64 = d as u64;
    let n = (n as u64).min((BUCKETS << a) - 1);
    let k = (n >> a) as usize;
    let base = d64 * cum[k] as u64 / SHARE_ONE;
    let end = d64 * cum[k + 1] as u64 / SHARE_ONE;
    let fine = ((n & ((1u64 << a) - 1)) * (end - base)) >> a;
    ((base + fine) as usize).min(d - 1)
}

/// The public code's target: `(n >> 4) << 8` (may lie past the table).
pub(crate) fn fixed_target(n: u32) -> usize {
    ((n as usize) >> 4) << 8
}

/// Free-slot finder: for each slot, the nearest free slot at or above it and at or below it,
/// by two union-find arrays with path halving.
pub(crate) struct Probe {
    /// up[i]: a slot ≥ i that may be free (d = none).
    up: Vec<u32>,
    /// down[i]: 1 + a slot ≤ i − 1 … encoded as slot + 1 (0 = none), for slots shifted by one.
    down: Vec<u32>,
}

impl Probe {
    pub(crate) fn new() -> Self {
        Probe {
            up: Vec::new(),
            down: Vec::new(),
        }
    }

    fn reset(&mut self, d: usize) {
        self.up.clear();
        self.up.extend(0..=d as u32);
        // down is indexed by slot + 1; entry 0 is the "none" sentinel.
        self.down.clear();
        self.down.extend(0..=d as u32);
    }

    fn find_up(&mut self, mut i: usize) -> usize {
        while self.up[i] as usize != i {
            let next = self.up[i] as usize;
            self.up[i] = self.up[next];
            i = next;
        }
        i
    }

    /// The nearest free slot ≤ i, as slot + 1 (0: none).
    fn find_down(&mut self, i: usize) -> usize {
        let mut k = i + 1;
        while self.down[k] as usize != k {
            let next = self.down[k] as usize;
            self.down[k] = self.down[next];
            k = next;
        }
        k
    }

    fn occupy(&mut self, s: usize) {
        self.up[s] = s as u32 + 1;
        self.down[s + 1] = s as u32;
    }

    /// The free slot nearest `t` (probing t, t+1, t−1, t+2, …), in a table of `d` slots; a
    /// target ≥ d takes the highest free slot. At least one slot must be free.
    fn place(&mut self, t: usize, d: usize) -> usize {
        if t >= d {
            return self.find_down(d - 1) - 1;
        }
        let up = self.find_up(t);
        let down = self.find_down(t); // slot + 1, 0 = none
        match (up < d, down > 0) {
            (true, true) => {
                let dn = down - 1;
                if up - t <= t - dn {
                    up
                } else {
                    dn
                }
            }
            (true, false) => up,
            (false, true) => down - 1,
            (false, false) => unreachable!("probing a full table"),
        }
    }
}

/// The hashed order of one block's table: `perm[slot]` = index into `lens` (the table's rows in
/// their original order). `a` is the sampled aggregation shift and `cum` the sampled bucket
/// shares (used by the sampled hashes only), `warp` the group width (used by `Dp` only).
pub(crate) fn order(
    kind: HashKind,
    lens: &[u32],
    a: u32,
    cum: &[u32; 10],
    warp: usize,
    probe: &mut Probe,
    perm: &mut Vec<u32>,
) {
    let d = lens.len();
    perm.clear();
    match kind {
        HashKind::None => perm.extend(0..d as u32),
        HashKind::Sort => {
            perm.extend(0..d as u32);
            perm.sort_by_key(|&i| lens[i as usize]);
        }
        HashKind::Dp => {
            perm.extend(0..d as u32);
            perm.sort_by_key(|&i| lens[i as usize]);
            dp_groups(lens, warp, perm);
        }
        HashKind::Sampled | HashKind::Quantile | HashKind::Fixed => {
            if d == 0 {
                return;
            }
            perm.resize(d, 0);
            probe.reset(d);
            let c = fine_shift(a, d);
            for (i, &n) in lens.iter().enumerate() {
                let t = match kind {
                    HashKind::Sampled => sampled_target(n, a, c, d),
                    HashKind::Quantile => quantile_target(n, a, cum, d),
                    _ => fixed_target(n),
                };
                let s = probe.place(t, d);
                probe.occupy(s);
                perm[s] = i as u32;
            }
        }
    }
}

/// DP2D's dynamic programming over the warp-group boundaries of `perm` (the table's rows sorted
/// by count, ascending): the full groups and the one short group (`d mod w` rows) cut from the
/// sorted order so that the padded zeros `Σ_g (|g|·max_g − Σ_g n)` are least; `perm` is rewritten
/// with the full groups first (sorted order) and the short group last, as the layout stores it.
fn dp_groups(lens: &[u32], w: usize, perm: &mut [u32]) {
    let d = perm.len();
    let r = d % w;
    if r == 0 || d <= w {
        return; // every boundary is forced
    }
    let full = d / w; // full groups
    let s = |i: usize| lens[perm[i] as usize] as u64;
    // f0[j]: j full groups, short not placed (rows 0..j·w); f1[j]: j full groups and the short
    // one (rows 0..j·w + r); short_at[j]: f1[j] places the short group last (at rows j·w..+r).
    let mut f0 = vec![0u64; full + 1];
    for j in 1..=full {
        f0[j] = f0[j - 1] + w as u64 * s(j * w - 1);
    }
    let mut f1 = vec![0u64; full + 1];
    let mut short_at = vec![false; full + 1];
    for j in 0..=full {
        let short = f0[j] + r as u64 * s(j * w + r - 1);
        let cont = if j > 0 {
            f1[j - 1] + w as u64 * s(j * w + r - 1)
        } else {
            u64::MAX
        };
        // ties: the short group as late as possible
        short_at[j] = short <= cont;
        f1[j] = short.min(cont);
    }
    let mut k = full;
    while !short_at[k] {
        k -= 1;
    }
    // rows k·w..k·w + r form the short group: move them to the end
    perm[k * w..].rotate_left(r);
}

/// The padded zeros of a table in the order `perm` with groups of `w` slots (Regu2D's cost).
#[cfg(test)]
pub(crate) fn padded_zeros(lens: &[u32], perm: &[u32], w: usize) -> u64 {
    perm.chunks(w)
        .map(|g| {
            let n: Vec<u64> = g.iter().map(|&i| lens[i as usize] as u64).collect();
            n.len() as u64 * n.iter().copied().max().unwrap_or(0) - n.iter().sum::<u64>()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The public code's linear probing, for comparison.
    fn naive(lens: &[u32], target: impl Fn(u32) -> usize) -> Vec<u32> {
        let d = lens.len();
        let mut perm = vec![u32::MAX; d];
        for (i, &n) in lens.iter().enumerate() {
            let t = target(n);
            let s = if t >= d {
                (0..d).rev().find(|&s| perm[s] == u32::MAX).unwrap()
            } else {
                let mut found = None;
                for k in 0..=d {
                    if t + k < d && perm[t + k] == u32::MAX {
                        found = Some(t + k);
                        break;
                    }
                    if k <= t && perm[t - k] == u32::MAX {
                        found = Some(t - k);
                        break;
                    }
                }
                found.unwrap()
            };
            perm[s] = i as u32;
        }
        perm
    }

    #[test]
    fn probing_matches_the_public_codes_linear_probe() {
        let mut g = crate::methods::testmats::Lcg::new(3);
        let mut probe = Probe::new();
        let mut perm = Vec::new();
        for d in [1usize, 2, 5, 31, 64, 512, 700] {
            for spread in [1u32, 8, 40, 300, 5000] {
                let lens: Vec<u32> = (0..d).map(|_| g.below(spread)).collect();
                order(
                    HashKind::Fixed,
                    &lens,
                    0,
                    &[0; 10],
                    32,
                    &mut probe,
                    &mut perm,
                );
                assert_eq!(
                    perm,
                    naive(&lens, fixed_target),
                    "fixed d={d} spread={spread}"
                );
                let mut sample: Vec<u32> = lens.iter().copied().filter(|&n| n > 0).collect();
                let a = sample_shift(&mut sample);
                let c = fine_shift(a, d);
                order(
                    HashKind::Sampled,
                    &lens,
                    a,
                    &[0; 10],
                    32,
                    &mut probe,
                    &mut perm,
                );
                assert_eq!(
                    perm,
                    naive(&lens, |n| sampled_target(n, a, c, d)),
                    "sampled d={d} spread={spread}"
                );
                let cum = sample_shares(&sample, a, 0.3);
                order(
                    HashKind::Quantile,
                    &lens,
                    a,
                    &cum,
                    32,
                    &mut probe,
                    &mut perm,
                );
                assert_eq!(
                    perm,
                    naive(&lens, |n| quantile_target(n, a, &cum, d)),
                    "quantile d={d} spread={spread}"
                );
            }
        }
    }

    #[test]
    fn sampled_shift_puts_most_rows_in_nine_buckets() {
        assert_eq!(sample_shift(&mut []), 0);
        assert_eq!(sample_shift(&mut [1, 2, 8]), 0);
        assert_eq!(sample_shift(&mut [9; 10]), 1);
        // 90 % quantile 100 → 100 >> 4 = 6 ≤ 8, 100 >> 3 = 12 > 8
        let mut s: Vec<u32> = (0..100)
            .map(|i| if i < 95 { 100 } else { 10_000 })
            .collect();
        assert_eq!(sample_shift(&mut s), 4);
    }

    #[test]
    fn sampled_target_is_monotone_and_in_range() {
        for d in [1usize, 7, 9, 100, 512] {
            for a in 0..6 {
                let c = fine_shift(a, d);
                let mut last = 0;
                for n in 0..(9u32 << a) + 50 {
                    let t = sampled_target(n, a, c, d);
                    assert!(t < d, "d={d} a={a} n={n}");
                    assert!(t >= last, "not monotone: d={d} a={a} n={n}");
                    last = t;
                }
            }
        }
        // d = 512, a = 2: bucket width b = 56 → c = 0; n = 13 → k = 3, base 170, fine 1
        assert_eq!(fine_shift(2, 512), 0);
        assert_eq!(sampled_target(13, 2, 0, 512), 171);
        // overflow rows (n ≥ 36 for a = 2) are bucket 8 with the largest fine offset
        assert_eq!(sampled_target(1000, 2, 0, 512), 455 + 3);
    }

    #[test]
    fn quantile_shares_and_targets() {
        // a = 0: buckets are the counts; sample 1,1,1,2 → shares 0, 3/4, 1/4 (+ 50 % empty)
        let cum = sample_shares(&[1, 1, 1, 2], 0, 0.5);
        let one = SHARE_ONE as u32;
        assert_eq!(&cum[..4], [0, one / 2, one / 2 + 3 * one / 8, one]);
        assert_eq!(cum[9], one);
        // d = 16: empty rows in 0..8, 1s in 8..14, 2s in 14..16
        assert_eq!(quantile_target(0, 0, &cum, 16), 0);
        assert_eq!(quantile_target(1, 0, &cum, 16), 8);
        assert_eq!(quantile_target(2, 0, &cum, 16), 14);
        assert_eq!(quantile_target(99, 0, &cum, 16), 15);
        for d in [1usize, 5, 100, 512] {
            for a in 0..4 {
                let cum = sample_shares(&[1, 5, 9, 30, 3, 3, 3, 70], a, 0.2);
                let mut last = 0;
                for n in 0..(9u32 << a) + 20 {
                    let t = quantile_target(n, a, &cum, d);
                    assert!(t < d && t >= last, "d={d} a={a} n={n}");
                    last = t;
                }
            }
        }
    }

    #[test]
    fn sort_and_none_orders() {
        let lens = [3, 0, 5, 1, 3];
        let (mut probe, mut perm) = (Probe::new(), Vec::new());
        order(
            HashKind::Sort,
            &lens,
            0,
            &[0; 10],
            32,
            &mut probe,
            &mut perm,
        );
        assert_eq!(perm, [1, 3, 0, 4, 2]);
        order(
            HashKind::None,
            &lens,
            0,
            &[0; 10],
            32,
            &mut probe,
            &mut perm,
        );
        assert_eq!(perm, [0, 1, 2, 3, 4]);
    }

    /// Every permutation of `0..d` (Heap's algorithm), for brute force.
    fn permutations(d: usize) -> Vec<Vec<u32>> {
        let mut p: Vec<u32> = (0..d as u32).collect();
        let mut out = vec![p.clone()];
        let mut c = vec![0usize; d];
        let mut i = 0;
        while i < d {
            if c[i] < i {
                if i % 2 == 0 {
                    p.swap(0, i);
                } else {
                    p.swap(c[i], i);
                }
                out.push(p.clone());
                c[i] += 1;
                i = 0;
            } else {
                c[i] = 0;
                i += 1;
            }
        }
        out
    }

    #[test]
    fn dp_hand_made_blocks() {
        let (mut probe, mut perm) = (Probe::new(), Vec::new());
        let mut dp = |lens: &[u32], w: usize| {
            order(HashKind::Dp, lens, 0, &[0; 10], w, &mut probe, &mut perm);
            perm.clone()
        };
        // w = 4, sorted 1 1 5 5 5 5: the short group is the two 1s (padding 0), not the top
        // two 5s as sort2D cuts it (groups 1 1 5 5 | 5 5, padding 8)
        let lens = [5, 1, 5, 5, 1, 5];
        assert_eq!(dp(&lens, 4), [0, 2, 3, 5, 1, 4]);
        assert_eq!(padded_zeros(&lens, &dp(&lens, 4), 4), 0);
        let mut sorted: Vec<u32> = (0..6).collect();
        sorted.sort_by_key(|&i| lens[i as usize]);
        assert_eq!(padded_zeros(&lens, &sorted, 4), 8);
        // sorted 1 1 1 1 9 9: sort2D's cut is optimal and kept (1 1 1 1 | 9 9)
        assert_eq!(dp(&[9, 1, 1, 9, 1, 1], 4), [1, 2, 4, 5, 0, 3]);
        // a multiple of w, or one group: the stable sort
        assert_eq!(dp(&[3, 0, 5, 1, 3, 2], 3), [1, 3, 5, 0, 4, 2]);
        assert_eq!(dp(&[3, 0, 5], 4), [1, 0, 2]);
        assert!(dp(&[], 4).is_empty());
    }

    #[test]
    fn dp_matches_brute_force() {
        let mut g = crate::methods::testmats::Lcg::new(17);
        let (mut probe, mut perm) = (Probe::new(), Vec::new());
        for d in 1..=8usize {
            let all = permutations(d);
            for w in [1usize, 2, 3, 4, 5] {
                for spread in [2u32, 5, 40] {
                    for _ in 0..3 {
                        let lens: Vec<u32> = (0..d).map(|_| g.below(spread)).collect();
                        order(HashKind::Dp, &lens, 0, &[0; 10], w, &mut probe, &mut perm);
                        let mut seen = perm.clone();
                        seen.sort_unstable();
                        assert_eq!(seen, (0..d as u32).collect::<Vec<_>>(), "not a permutation");
                        let best = all.iter().map(|p| padded_zeros(&lens, p, w)).min().unwrap();
                        assert_eq!(
                            padded_zeros(&lens, &perm, w),
                            best,
                            "d={d} w={w} lens={lens:?} perm={perm:?}"
                        );
                        // never worse than sort2D
                        order(HashKind::Sort, &lens, 0, &[0; 10], w, &mut probe, &mut perm);
                        assert!(padded_zeros(&lens, &perm, w) >= best);
                    }
                }
            }
        }
    }
}
