//! The merge-path SpMM's work split (issue #24, item 2: an nnz-balanced kernel for skewed rows;
//! docs/spmm.md): the merge path of the matrix (Merrill & Garland, SC'16; cut by
//! [`crate::methods::common::merge_path`], the same search as `merge`'s SpMV tiles) in equal
//! shares of [`merge_share`] steps, one share per team of lanes. A team sums each row it closes
//! from where its share starts and stores it (y = α·sum + β·y); the part of the row still open
//! at its share's end is its carry (k partial sums); a fix-up adds each row's carries in share
//! order and then α times that to y. Everything here depends only on the matrix and the
//! method's parameters, never on the device, so the CPU mirror (`cpu.rs`) cuts the same shares.

use super::{SpmmTune, PIECE_GROUPS};
use crate::methods::common::merge_path::{carry_runs, share_starts};
use crate::scalar::Idx;

/// The fewest merge-path steps (rows + nonzeros) a team takes.
pub const MIN_SHARE: usize = 32;
/// The most merge-path steps a team takes.
pub const MAX_SHARE: usize = 1024;

/// The merge-path steps one team takes on a matrix of `nrows` rows and `nnz` nonzeros: an
/// equal share of [`PIECE_GROUPS`] teams ((nrows + nnz) / 2^16, about the groups an H200 keeps
/// resident), rounded up to a power of two, between [`MIN_SHARE`] and [`MAX_SHARE`]; `tune.piece`
/// (`merge`'s `spmm_share`) overrides it. A constant team count, not the device's, so that the
/// shares (and with them the bits) are the same everywhere.
pub fn merge_share(nrows: usize, nnz: usize, tune: SpmmTune) -> usize {
    if let Some(p) = tune.piece {
        return (p as usize).max(1);
    }
    ((nrows + nnz) / PIECE_GROUPS)
        .next_power_of_two()
        .clamp(MIN_SHARE, MAX_SHARE)
}

/// The teams of a matrix: the start coordinate of each share (`row`, `nz`: nteams + 1 entries,
/// the last (nrows, nnz)) and the carry runs (`run_row[i]`'s carries are those of teams
/// `run_first[i] .. run_end[i]`).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct MergeTeams {
    pub(crate) share: usize,
    pub(crate) row: Vec<Idx>,
    pub(crate) nz: Vec<Idx>,
    pub(crate) run_row: Vec<Idx>,
    pub(crate) run_first: Vec<Idx>,
    pub(crate) run_end: Vec<Idx>,
}

impl MergeTeams {
    /// The shares of `share` steps of the matrix with row pointers `row_ptr`.
    pub(crate) fn of(row_ptr: &[Idx], share: usize) -> Self {
        let (row, nz) = share_starts(row_ptr, share as u64);
        let mut t = MergeTeams {
            share,
            ..Default::default()
        };
        for (r, f, e) in carry_runs(row_ptr, &row, &nz) {
            t.run_row.push(r);
            t.run_first.push(f);
            t.run_end.push(e);
        }
        t.row = row;
        t.nz = nz;
        t
    }

    /// Teams in all.
    pub(crate) fn nteams(&self) -> usize {
        self.row.len() - 1
    }

    /// Carry runs in all (rows that span teams).
    pub(crate) fn nruns(&self) -> usize {
        self.run_row.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The share rule: small matrices take the smallest share, large ones an equal share of
    /// 2^16 teams up to 1024 steps; the parameter overrides it.
    #[test]
    fn the_share_rule() {
        let d = SpmmTune::default();
        assert_eq!(merge_share(496, 49_920, d), 32);
        assert_eq!(merge_share(4_096_000, 28_518_400, d), 512);
        assert_eq!(merge_share(2_097_152, 63_541_036, d), 1024);
        let t = SpmmTune {
            piece: Some(7),
            ..d
        };
        assert_eq!(merge_share(496, 49_920, t), 7);
    }

    /// Rows of 2, 0, 9 and 1 nonzeros in shares of 4 steps: row 2 spans teams 1 and 2 and is
    /// closed by team 3.
    #[test]
    fn teams_of_a_small_matrix() {
        let rp = [0, 2, 2, 11, 12];
        let t = MergeTeams::of(&rp, 4);
        // 16 steps: 4 teams
        assert_eq!(t.nteams(), 4);
        assert_eq!(t.row, [0, 2, 2, 2, 4]);
        assert_eq!(t.nz, [0, 2, 6, 10, 12]);
        assert_eq!(
            (t.run_row, t.run_first, t.run_end),
            (vec![2], vec![1], vec![3])
        );
    }
}
