//! The row-major SpMM tile's parameters as data (issue #24; docs/spmm.md, "The row-major
//! kernel"): [`SpmmTune`], what a method exposes as parameters (`csr-vector`'s `spmm_cols`,
//! `spmm_vec`, `spmm_unroll`), and [`RmConfig`], the tile one call runs with — lanes per row,
//! values per X load, loads per lane, nonzeros per unrolled step — chosen from k, the precision
//! and X's alignment by one rule ([`RmConfig::choose`]) that the kernels' launch and the CPU
//! mirror share. Each (V, A, U) is one entry of `kernel.cu` ([`RM_TILES`]), as CUB keeps one
//! policy struct per kernel.

/// The (V, A, U) of each row-major tile entry `spmm_rm_v<V>a<A>u<U>` in `kernel.cu`: V values
/// per X load (8 or 16 bytes when V > 1), A loads per lane per nonzero (V·A ≤ 8 vectors per
/// lane and pass), U nonzeros per unrolled step (U·A ≤ 8 loads in flight per lane, U ≥ 2).
pub(crate) const RM_TILES: [(u32, u32, u32, &str); 18] = [
    (1, 1, 2, "spmm_rm_v1a1u2"),
    (1, 1, 4, "spmm_rm_v1a1u4"),
    (1, 1, 8, "spmm_rm_v1a1u8"),
    (1, 2, 2, "spmm_rm_v1a2u2"),
    (1, 2, 4, "spmm_rm_v1a2u4"),
    (1, 4, 2, "spmm_rm_v1a4u2"),
    (1, 8, 2, "spmm_rm_v1a8u2"),
    (2, 1, 2, "spmm_rm_v2a1u2"),
    (2, 1, 4, "spmm_rm_v2a1u4"),
    (2, 1, 8, "spmm_rm_v2a1u8"),
    (2, 2, 2, "spmm_rm_v2a2u2"),
    (2, 2, 4, "spmm_rm_v2a2u4"),
    (2, 4, 2, "spmm_rm_v2a4u2"),
    (4, 1, 2, "spmm_rm_v4a1u2"),
    (4, 1, 4, "spmm_rm_v4a1u4"),
    (4, 1, 8, "spmm_rm_v4a1u8"),
    (4, 2, 2, "spmm_rm_v4a2u2"),
    (4, 2, 4, "spmm_rm_v4a2u4"),
];

/// The tuning of the row-major SpMM tile a layout asks for (method parameters; every field
/// `None` or the default leaves the choice to [`RmConfig::choose`]'s rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpmmTune {
    /// Vectors per lane and pass (1, 2, 4 or 8); `None`: the rule.
    pub cols: Option<u32>,
    /// The widest load of an X row, bytes (4, 8 or 16).
    pub vec_bytes: u32,
    /// Nonzeros per unrolled step (2, 4 or 8, lowered to what the tile allows); `None`: the rule.
    pub unroll: Option<u32>,
    /// The piece length: rows longer are cut into pieces of this many nonzeros ([`piece_nnz`]);
    /// `None`: the rule.
    pub piece: Option<u32>,
}

impl Default for SpmmTune {
    fn default() -> Self {
        SpmmTune {
            cols: None,
            vec_bytes: 16,
            unroll: None,
            piece: None,
        }
    }
}

/// Groups a matrix's nonzeros are shared among for the piece rule ([`piece_nnz`]): about the
/// groups of 4 lanes an H200 keeps resident (132 SMs × 2048 threads / 4). A constant, not the
/// device's, so that the pieces (and with them the bits) are the same on every machine and in
/// the CPU mirror.
pub const PIECE_GROUPS: usize = 1 << 16;

/// The piece length of the row-major kernels for a matrix of `nnz` nonzeros in `nrows` rows:
/// rows longer are cut into pieces of this many nonzeros, each summed by its own group, the
/// pieces' sums added in order by a fix-up. The rule: the larger of 4 × the mean row length
/// (rows of a regular matrix are never cut) and nnz / [`PIECE_GROUPS`] (an equal share of the
/// device's groups: large matrices keep long pieces), rounded up to a power of two, between 64
/// and 1024; `tune.piece` overrides it. Short pieces keep a row of hundreds of nonzeros in a
/// small matrix from being one group's serial walk while the GPU idles.
pub fn piece_nnz(nnz: usize, nrows: usize, tune: SpmmTune) -> usize {
    if let Some(p) = tune.piece {
        return (p as usize).max(1);
    }
    let mean = nnz.div_ceil(nrows.max(1));
    (4 * mean)
        .max(nnz / PIECE_GROUPS)
        .next_power_of_two()
        .clamp(64, 1024)
}

/// The small-matrix switch of [`RmConfig::choose`] as data, by k: (the smallest k it applies
/// to, the share of the device's resident threads). A call takes one vector per lane when the
/// rows at the wide tile's lanes would fill less than that share (nrows · lanes < share ·
/// fill). Chosen on the tuning split of the shared suite (`benches/tuning_split.rs`,
/// docs/results/tuning-split.md; f64 row-major on an H200): at k = 8 the first rule's half of
/// the device (no other share did better there), at k = 32 an eighth (4,224 rows: 0.945× cuSPARSE
/// SpMM on tune against 0.936× with a half; test 0.989× against 0.978×).
pub const SMALL_SHARE: [(usize, f64); 2] = [(1, 0.5), (32, 0.125)];

/// The value a table of (the smallest k it applies to, value) rows, in increasing k, gives for
/// k vectors ([`SMALL_SHARE`], [`MIN_LANE_BYTES`]); `below` under its first row.
fn by_k<V: Copy>(table: &[(usize, V)], k: usize, below: V) -> V {
    table
        .iter()
        .rev()
        .find(|(from, _)| k >= *from)
        .map_or(below, |(_, v)| *v)
}

/// The most X values one lane keeps in flight under the rule's unroll ([`RmConfig::choose`];
/// `spmm_unroll` overrides it): unroll · acc · vec. The loaded values live in registers until
/// their fmas; in f64 the tiles past it take 96–142 registers a thread (2 CTAs of 256 threads
/// per SM) against 48–66 within it. Chosen on the tuning split of the large matrices
/// (`large-train`, f64 k = 8 and 32, f32 k = 32, H200; docs/results/h200/2026-11-25/spmm-fourth/):
/// unroll 2 at k = 32 (f64 v2a2u2, f32 v4a1u2) gave 1.18× and 1.19× cuSPARSE SpMM by geomean
/// against 1.00× (unroll 4) and 1.07× (unroll 8); at f64 k = 8 the rule's unroll 4 (8 values)
/// beat unroll 2 (1.88× against 1.45×), so the cap is 8 values, not fewer. The rule's floor of
/// unroll 2 passes the cap where one nonzero's loads already hold 8 values: f32 k = 32 since
/// [`MIN_LANE_BYTES`] (`v4a2u2`, 16 values a lane, 62 registers).
pub const MAX_IN_FLIGHT_VALUES: usize = 8;

/// The merge path's fewest lanes a team (row-major, [`RmConfig::choose_team`]): (the smallest k
/// it applies to, the lanes). A merge-path team streams its share's nonzeros across row ends, so
/// its X rows in flight are the team's (lanes × unroll loads), not a row's; the row-split rule's
/// 8 lanes of 4 vectors at k = 32 keep two X rows in flight a team, 16 lanes of 2 keep four.
/// Chosen on the tuning split of the large matrices (`large-train`: kron:19,48,
/// powerlaw:3000000,12, uniform:6000000,8; H200, row-major k = 32;
/// docs/results/h200/2026-11-25/spmm-fifth/): × cuSPARSE SpMM by geomean, 16 lanes
/// (`merge[spmm_cols=2]`) 1.455× in f64 and 1.189× in f32, against 1.273× and 1.121× for the
/// row-split rule's 8 lanes and 1.227× and 0.936× for 32 lanes (`spmm_cols=1`).
pub const MIN_TEAM_LANES: (usize, usize) = (32, 16);

/// The fewest bytes of an X row one lane of the row-split tile covers per nonzero, by k: (the
/// smallest k it applies to, the bytes). Below k = 32 one 16-byte load (2 vectors in f64, 4 in
/// f32); from k = 32 on two (4 in f64, which the 8-lanes rule gives anyway; 8 in f32: 4 lanes
/// a row, 8 rows a warp, two X loads per lane and nonzero where one 16-byte load left a warp
/// half the bytes in flight). Chosen on the tuning split of the large matrices (`large-train`,
/// H200, row-major k = 32; docs/results/h200/2026-11-25/spmm-sixth/): × cuSPARSE SpMM by
/// geomean over its 7 matrices, the row-split tile at 8 vectors per lane (`spmm_cols=8`) 1.32×
/// in f32 against 1.25× at 4 (the rule before), better on all 5 where the tile is the fastest
/// candidate (poisson2d 2.60× against 2.26×, poisson3d 1.86× against 1.60×, tall 1.95× against
/// 1.62×); in f64 8 vectors per lane lost on all 5 (1.32× against 1.77×), so f64 keeps 4.
pub const MIN_LANE_BYTES: [(usize, usize); 2] = [(1, 16), (32, 32)];

/// The tile of one row-major call: a group of `lanes` lanes per row (a power of two, at most
/// 32), each lane owning `acc` runs of `vec` consecutive vectors per pass (lanes·vec·acc
/// vectors a pass; larger k takes more passes over the row), `unroll` nonzeros per step of
/// the chunk loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RmConfig {
    pub lanes: u32,
    pub vec: u32,
    pub acc: u32,
    pub unroll: u32,
}

impl RmConfig {
    /// The tile for k vectors of `elem_bytes`-byte values with X's rows aligned to `x_align`
    /// bytes (the base address's alignment; its rows start at multiples of k values), on a
    /// matrix of `nrows` rows and a device that keeps `fill` threads resident (0: unknown, the
    /// CPU mirror; the tile does not change the bits).
    ///
    /// The rule: vectors per lane `cols` = k / 8 rounded up to a power of two (8 lanes a row),
    /// at least [`MIN_LANE_BYTES`] of X (one 16-byte load below k = 32, two from k = 32 on:
    /// fewer lanes per row mean fewer shuffles per multiply-add and more rows per warp) and at
    /// most 8 (registers), never past k rounded up to a power of two; but 1 when the rows at
    /// that width would fill less than a share of the device ([`SMALL_SHARE`]: nrows · lanes <
    /// share · fill; a small matrix is latency-bound, and more lanes per row shorten each row's
    /// chain). Chosen on the H200 A/B
    /// of the first tiles (docs/spmm.md), the share on the tuning split.
    /// `vec` = the widest load (at most `tune.vec_bytes` and 4 values) that divides k, `cols`
    /// and X's alignment; `acc` = cols / vec; `lanes` = k / cols rounded up to a power of two,
    /// at most 32; `unroll` = 8 / acc (at least 2), not above the lanes (a chunk holds `lanes`
    /// nonzeros) nor past `MAX_IN_FLIGHT_VALUES` of X per lane, unless that is below 2.
    pub fn choose(
        k: usize,
        elem_bytes: usize,
        tune: SpmmTune,
        x_align: usize,
        (nrows, fill): (usize, usize),
    ) -> RmConfig {
        let pow2 = |v: usize| v.max(1).next_power_of_two();
        let k = k.max(1);
        let eb = elem_bytes.max(1);
        let min_cols = (by_k(&MIN_LANE_BYTES, k, 16) / eb).max(1);
        let wide = pow2(k.div_ceil(8)).clamp(min_cols, 8).min(pow2(k));
        let wide_lanes = pow2(k.div_ceil(wide)).min(32);
        let small =
            (nrows.saturating_mul(wide_lanes) as f64) < by_k(&SMALL_SHARE, k, 0.5) * fill as f64;
        let auto = if small { 1 } else { wide };
        let cols = tune
            .cols
            .map_or(auto, |c| (c as usize).clamp(1, 8))
            .next_power_of_two();
        let widest = (tune.vec_bytes as usize / eb).clamp(1, 4).min(cols);
        let mut vec = widest.next_power_of_two();
        while vec > widest || (vec > 1 && (k % vec != 0 || x_align % (vec * eb) != 0)) {
            vec /= 2;
        }
        let acc = cols / vec;
        let lanes = pow2(k.div_ceil(cols)).min(32);
        let max_u = (8 / acc).max(2);
        let in_flight = (MAX_IN_FLIGHT_VALUES / (acc * vec)).max(1);
        let unroll = tune
            .unroll
            .map_or(lanes.min(max_u).min(in_flight).max(2), |u| {
                pow2(u as usize).clamp(2, max_u)
            });
        RmConfig {
            lanes: lanes as u32,
            vec: vec as u32,
            acc: acc as u32,
            unroll: unroll as u32,
        }
    }

    /// The tile of a row-major merge-path team ([`MIN_TEAM_LANES`]): the row-split rule with
    /// the teams as its work items, except that from k = 32 on a team takes at least 16 lanes:
    /// vectors per lane k / 16 rounded up to a power of two (at most 8), unless `tune.cols`
    /// sets them. The tile does not change the bits (each row's sums are one chain in CSR
    /// order whatever the lanes).
    pub fn choose_team(
        k: usize,
        elem_bytes: usize,
        tune: SpmmTune,
        x_align: usize,
        (nteams, fill): (usize, usize),
    ) -> RmConfig {
        let cfg = Self::choose(k, elem_bytes, tune, x_align, (nteams, fill));
        let (from, lanes) = MIN_TEAM_LANES;
        if tune.cols.is_some() || k < from || cfg.lanes as usize >= lanes {
            return cfg;
        }
        let cols = k.div_ceil(lanes).next_power_of_two().min(8) as u32;
        let tune = SpmmTune {
            cols: Some(cols),
            ..tune
        };
        Self::choose(k, elem_bytes, tune, x_align, (nteams, fill))
    }

    /// Vectors one pass over a row covers.
    pub fn pass(&self) -> usize {
        (self.lanes * self.vec * self.acc) as usize
    }

    /// This tile's index in [`RM_TILES`] (its `kernel.cu` entry); `None` for a tile
    /// [`RmConfig::choose`] never makes.
    pub(crate) fn tile(&self) -> Option<usize> {
        RM_TILES
            .iter()
            .position(|t| (t.0, t.1, t.2) == (self.vec, self.acc, self.unroll))
    }
}

impl std::fmt::Display for RmConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} lanes per row, {} values per X load, {} loads per lane, unroll {}",
            self.lanes, self.vec, self.acc, self.unroll
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tile the rule can pick over k, precision, alignment and tuning is an entry of
    /// kernel.cu, and covers k with lanes ≤ 32.
    #[test]
    fn every_choice_is_an_entry() {
        for k in 1..=300 {
            for eb in [4, 8] {
                for align in [eb, 2 * eb, 16, 256] {
                    for cols in [None, Some(1), Some(2), Some(4), Some(8)] {
                        for unroll in [None, Some(2), Some(4), Some(8)] {
                            for vec_bytes in [4, 8, 16] {
                                let tune = SpmmTune {
                                    cols,
                                    vec_bytes,
                                    unroll,
                                    piece: None,
                                };
                                let c = RmConfig::choose(k, eb, tune, align, (1 << 20, 0));
                                assert!(
                                    c.tile().is_some(),
                                    "k={k} eb={eb} {tune:?}: {c:?} has no entry"
                                );
                                assert!(c.lanes.is_power_of_two() && c.lanes <= 32);
                                assert!(k % c.vec as usize == 0 || c.vec == 1);
                                assert_eq!(align % (c.vec as usize * eb), 0);
                            }
                        }
                    }
                }
            }
        }
    }

    /// The defaults of the shapes that matter on a large matrix: f64 k = 8 takes 4 lanes of
    /// 16-byte loads, k = 32 8 lanes of 2 × 16 bytes two nonzeros at a time (8 values in
    /// flight), k = 256 a warp with 8 vectors per lane; f32 k = 32 4 lanes of 2 × 16 bytes
    /// ([`MIN_LANE_BYTES`]), f32 k = 16 4 lanes of one 16-byte load; an odd k falls back to
    /// 8-byte loads; a small matrix on a large device takes a lane per vector (k = 8: 8 lanes
    /// below 33,792 rows, k = 32: a warp below 4,224 rows in f64, 8,448 in f32).
    #[test]
    fn the_rule_on_common_shapes() {
        let d = SpmmTune::default();
        let fill = 132 * 2048;
        let c = |k, eb, align, nrows| {
            let c = RmConfig::choose(k, eb, d, align, (nrows, fill));
            (c.lanes, c.vec, c.acc, c.unroll)
        };
        let big = 1 << 22;
        assert_eq!(c(8, 8, 256, big), (4, 2, 1, 4));
        assert_eq!(c(32, 8, 256, big), (8, 2, 2, 2));
        assert_eq!(c(256, 8, 256, big), (32, 2, 4, 2));
        assert_eq!(c(32, 4, 256, big), (4, 4, 2, 2));
        assert_eq!(c(16, 4, 256, big), (4, 4, 1, 2));
        assert_eq!(c(64, 4, 256, big), (8, 4, 2, 2));
        assert_eq!(c(32, 4, 256, 8_000), (32, 1, 1, 8));
        assert_eq!(c(32, 4, 256, 9_000), (4, 4, 2, 2));
        assert_eq!(c(16, 8, 256, big), (8, 2, 1, 4));
        assert_eq!(c(3, 8, 256, big), (2, 1, 2, 2));
        assert_eq!(c(1, 8, 256, big), (1, 1, 1, 2));
        assert_eq!(c(8, 8, 8, big), (4, 1, 2, 4));
        assert_eq!(c(8, 8, 256, 20_000), (8, 1, 1, 8));
        assert_eq!(c(8, 8, 256, 34_000), (4, 2, 1, 4));
        assert_eq!(c(32, 8, 256, 4_000), (32, 1, 1, 8));
        assert_eq!(c(32, 8, 256, 10_000), (8, 2, 2, 2));
        // the parameter passes the in-flight cap (the A/B variant of the tuning split)
        let u4 = SpmmTune {
            unroll: Some(4),
            ..d
        };
        assert_eq!(RmConfig::choose(32, 8, u4, 256, (big, fill)).unroll, 4);
        // the CPU mirror (fill 0) takes the large rule
        assert_eq!(RmConfig::choose(8, 8, d, 256, (10, 0)).lanes, 4);
    }

    /// The merge path's teams from k = 32 on take 16 lanes (f64 and f32: 2 vectors per lane,
    /// 16-byte or 8-byte loads, 4 nonzeros in flight), and every team tile is an entry; below
    /// k = 32, with `spmm_cols`, or where the rule already gives 16 lanes or more, the row-split
    /// rule's tile stands.
    #[test]
    fn the_team_rule() {
        let d = SpmmTune::default();
        let fill = 132 * 2048;
        let big = 1 << 16;
        let t = |k, eb, tune| {
            let c = RmConfig::choose_team(k, eb, tune, 256, (big, fill));
            (c.lanes, c.vec, c.acc, c.unroll)
        };
        assert_eq!(t(32, 8, d), (16, 2, 1, 4));
        assert_eq!(t(32, 4, d), (16, 2, 1, 4));
        assert_eq!(t(33, 8, d), (16, 1, 4, 2));
        assert_eq!(t(64, 8, d), (16, 2, 2, 2));
        assert_eq!(t(256, 8, d), (32, 2, 4, 2));
        assert_eq!(t(8, 8, d), (4, 2, 1, 4));
        let c4 = SpmmTune { cols: Some(4), ..d };
        assert_eq!(t(32, 8, c4), (8, 2, 2, 2));
        for k in 1..=300 {
            for eb in [4, 8] {
                for align in [eb, 16] {
                    let c = RmConfig::choose_team(k, eb, d, align, (big, fill));
                    assert!(c.tile().is_some(), "k={k} eb={eb} align={align}: {c:?}");
                    assert!(k < 32 || c.lanes >= 16 || c.lanes as usize >= k);
                }
            }
        }
    }

    /// The piece rule: a regular matrix keeps its rows whole (4 × the mean), a small skewed one
    /// gets short pieces (64), a large one long pieces (nnz / 2^16, at most 1024); the
    /// parameter overrides it.
    #[test]
    fn the_piece_rule() {
        let d = SpmmTune::default();
        assert_eq!(piece_nnz(43_250, 6_833, d), 64);
        assert_eq!(piece_nnz(28_518_400, 4_096_000, d), 512);
        assert_eq!(piece_nnz(63_541_036, 2_097_152, d), 1024);
        assert_eq!(piece_nnz(1_000_000, 2_000, d), 1024);
        let t = SpmmTune {
            piece: Some(300),
            ..d
        };
        assert_eq!(piece_nnz(43_250, 6_833, t), 300);
    }
}
