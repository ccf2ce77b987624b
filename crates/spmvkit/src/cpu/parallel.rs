//! The rayon CSR SpMV, spmvkit's CPU production path. Rows are split into chunks of about equal
//! work (nnz + rows), found by binary search on `row_ptr`, so one huge row cannot leave the other
//! threads idle behind it; each chunk writes its own slice of y.

use rayon::prelude::*;

use crate::matrix::Csr;
use crate::scalar::{Idx, Scalar};

/// Row boundaries of `parts` chunks of about equal nnz + rows: `parts + 1` ascending row ids from
/// 0 to nrows (chunks may be empty).
pub fn balanced_row_splits(row_ptr: &[Idx], parts: usize) -> Vec<usize> {
    let n = row_ptr.len() - 1;
    let total = row_ptr[n] as u64 + n as u64;
    let parts = parts.max(1);
    let mut splits = Vec::with_capacity(parts + 1);
    splits.push(0);
    for p in 1..parts {
        let target = total * p as u64 / parts as u64;
        // first row r with row_ptr[r] + r >= target
        let (mut lo, mut hi) = (*splits.last().unwrap_or(&0), n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if row_ptr[mid] as u64 + mid as u64 >= target {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        splits.push(lo);
    }
    splits.push(n);
    splits
}

/// y = αAx + βy in parallel over nnz-balanced row chunks, accumulating in T.
/// Lengths must already be checked (`x.len() == ncols`, `y.len() == nrows`).
pub fn par_csr_spmv<T: Scalar>(a: &Csr<T>, alpha: T, x: &[T], beta: T, y: &mut [T]) {
    let parts = rayon::current_num_threads() * 8;
    let splits = balanced_row_splits(a.row_ptr(), parts);
    let mut chunks: Vec<(usize, &mut [T])> = Vec::with_capacity(parts);
    let mut rest = y;
    for w in splits.windows(2) {
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(w[1] - w[0]);
        chunks.push((w[0], head));
        rest = tail;
    }
    chunks.into_par_iter().for_each(|(first, ys)| {
        for (k, yi) in ys.iter_mut().enumerate() {
            let (cols, vals) = a.row(first + k);
            let mut s = T::zero();
            for (&c, &v) in cols.iter().zip(vals) {
                s += v * x[c as usize];
            }
            *yi = if beta == T::zero() {
                alpha * s
            } else {
                alpha * s + beta * *yi
            };
        }
    });
}
