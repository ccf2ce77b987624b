//! The merge path of a CSR matrix (Merrill & Garland, "Merge-based parallel sparse
//! matrix-vector multiplication", SC'16, §4): the merge of the row ends with the nonzero
//! indices, nrows + nnz steps, cut into equal shares by a binary search on each diagonal.
//! `merge`'s SpMV (its CTA tiles) and the merge-path SpMM (`methods/spmm/merge.rs`, issue #24:
//! its teams) cut it here, so both take the same coordinates and the same carry runs.

use rayon::prelude::*;

use crate::scalar::Idx;

/// The merge-path coordinate (rows finished, nonzeros consumed) after `diag` steps: the binary
/// search of Merrill & Garland Alg. 3 on the diagonal, row ends first on ties.
pub(crate) fn path_coordinate(row_ptr: &[Idx], diag: u64) -> (u64, u64) {
    let nrows = (row_ptr.len() - 1) as u64;
    let nnz = row_ptr[row_ptr.len() - 1] as u64;
    let (mut lo, mut hi) = (diag.saturating_sub(nnz), diag.min(nrows));
    while lo < hi {
        let mid = (lo + hi) / 2;
        if (row_ptr[mid as usize + 1] as u64) < diag - mid {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    (lo, diag - lo)
}

/// The start coordinates of the shares of `share` steps (the last share shorter), in parallel:
/// (row, nonzero) of each share start, ⌈(nrows + nnz) / share⌉ + 1 entries, the last
/// (nrows, nnz).
pub(crate) fn share_starts(row_ptr: &[Idx], share: u64) -> (Vec<Idx>, Vec<Idx>) {
    let nrows = (row_ptr.len() - 1) as u64;
    let total = nrows + row_ptr[row_ptr.len() - 1] as u64;
    let shares = total.div_ceil(share.max(1));
    (0..=shares)
        .into_par_iter()
        .map(|t| {
            let (r, k) = path_coordinate(row_ptr, (t * share).min(total));
            (r as Idx, k as Idx)
        })
        .unzip()
}

/// The carry runs of shares starting at (`start_row`, `start_nz`) ([`share_starts`]): each row
/// some of whose nonzeros lie in shares before the one that closes it, as (row, first share,
/// end share), end exclusive; share t carries into row `start_row[t + 1]` the nonzeros of that
/// row it consumed. In row order, one run per row.
pub(crate) fn carry_runs(
    row_ptr: &[Idx],
    start_row: &[Idx],
    start_nz: &[Idx],
) -> Vec<(Idx, Idx, Idx)> {
    let nrows = row_ptr.len() - 1;
    let mut runs: Vec<(Idx, Idx, Idx)> = Vec::new();
    for t in 0..start_row.len().saturating_sub(1) {
        let row = start_row[t + 1] as usize;
        if row >= nrows {
            continue;
        }
        let from = row_ptr[row].max(start_nz[t]);
        if start_nz[t + 1] <= from {
            continue;
        }
        match runs.last_mut() {
            Some(last) if last.0 as usize == row && last.2 as usize == t => last.2 += 1,
            _ => runs.push((row as Idx, t as Idx, t as Idx + 1)),
        }
    }
    runs
}
