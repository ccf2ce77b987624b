//! Matrix statistics used by `spmv info`, the harness reports and the `auto` model: shape,
//! empty lines, row and column length distributions, the coefficient of variation of row
//! lengths (the "variation" of FastLoad Fig. 8) and the bandwidth.

use std::sync::atomic::{AtomicU32, Ordering};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::Csr;
use crate::scalar::Scalar;

/// Min, max, mean and (population) standard deviation of line lengths.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LengthStats {
    pub min: u64,
    pub max: u64,
    pub mean: f64,
    pub std: f64,
}

impl LengthStats {
    /// Statistics of a sequence of lengths.
    pub fn of(lengths: impl Iterator<Item = u64>) -> Self {
        let (mut n, mut min, mut max, mut sum, mut sq) = (0u64, u64::MAX, 0u64, 0f64, 0f64);
        for l in lengths {
            n += 1;
            min = min.min(l);
            max = max.max(l);
            sum += l as f64;
            sq += (l as f64) * (l as f64);
        }
        if n == 0 {
            return LengthStats::default();
        }
        let mean = sum / n as f64;
        let var = (sq / n as f64 - mean * mean).max(0.0);
        LengthStats {
            min,
            max,
            mean,
            std: var.sqrt(),
        }
    }

    /// Coefficient of variation std/mean (0 for an empty matrix).
    pub fn variation(&self) -> f64 {
        if self.mean > 0.0 {
            self.std / self.mean
        } else {
            0.0
        }
    }
}

/// Structural statistics of a sparse matrix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatrixStats {
    pub nrows: usize,
    pub ncols: usize,
    pub nnz: usize,
    pub density: f64,
    pub empty_rows: usize,
    pub empty_cols: usize,
    pub row_len: LengthStats,
    pub col_len: LengthStats,
    /// Coefficient of variation of row lengths (std/mean): FastLoad Fig. 8's "variation".
    pub row_variation: f64,
    /// max over entries of (i − j), 0 if none below the diagonal.
    pub lower_bandwidth: u64,
    /// max over entries of (j − i), 0 if none above the diagonal.
    pub upper_bandwidth: u64,
    /// max |i − j| over entries.
    pub bandwidth: u64,
    /// Bytes of the CSR arrays in this precision.
    pub csr_bytes: usize,
}

impl MatrixStats {
    /// Computes the statistics in parallel passes over rows and over the column indices.
    pub fn of<T: Scalar>(a: &Csr<T>) -> Self {
        let n = a.nrows();
        let row_len = LengthStats::of((0..n).map(|i| a.row_len(i) as u64));
        let empty_rows = (0..n).filter(|&i| a.row_len(i) == 0).count();
        // Column counts by relaxed atomic increments from every thread: a serial scatter of
        // random columns took most of a second on 64M nonzeros (and `auto` pays for it in its
        // preprocessing).
        let col_counts: Vec<AtomicU32> = (0..a.ncols())
            .into_par_iter()
            .map(|_| AtomicU32::new(0))
            .collect();
        a.col_idx().par_chunks(1 << 16).for_each(|chunk| {
            for &c in chunk {
                col_counts[c as usize].fetch_add(1, Ordering::Relaxed);
            }
        });
        let col_counts: Vec<u32> = col_counts
            .into_par_iter()
            .map(AtomicU32::into_inner)
            .collect();
        let col_len = LengthStats::of(col_counts.iter().map(|&c| c as u64));
        let empty_cols = col_counts.par_iter().filter(|&&c| c == 0).count();
        let (lower, upper) = (0..n)
            .into_par_iter()
            .map(|i| {
                let (cols, _) = a.row(i);
                match (cols.first(), cols.last()) {
                    (Some(&first), Some(&last)) => (
                        (i as u64).saturating_sub(first as u64),
                        (last as u64).saturating_sub(i as u64),
                    ),
                    _ => (0, 0),
                }
            })
            .reduce(|| (0, 0), |x, y| (x.0.max(y.0), x.1.max(y.1)));
        let cells = n as f64 * a.ncols() as f64;
        MatrixStats {
            nrows: n,
            ncols: a.ncols(),
            nnz: a.nnz(),
            density: if cells > 0.0 {
                a.nnz() as f64 / cells
            } else {
                0.0
            },
            empty_rows,
            empty_cols,
            row_variation: row_len.variation(),
            row_len,
            col_len,
            lower_bandwidth: lower,
            upper_bandwidth: upper,
            bandwidth: lower.max(upper),
            csr_bytes: a.bytes(),
        }
    }
}
