//! Sparse matrix types: [`Coo`] (assembly), [`Csr`] and [`Csc`] (computation), with validation,
//! conversions and statistics. Structure (dimensions, pointers, indices) is kept apart from
//! values, after faer's symbolic/numeric split, so that one analysed pattern can take new values.

mod coo;
mod csc;
mod csr;
mod stats;

pub use coo::Coo;
pub use csc::Csc;
pub use csr::{Csr, Pattern};
pub use stats::{
    byte_model, fits_l2, x_sector_share, x_sectors, LengthStats, MatrixStats, XSectors, CHUNK_ROWS,
    SECTOR_BYTES, SHARE_SAMPLE_CHUNKS,
};

use crate::error::{check_index_range, Result};

/// Checks rows, columns and nnz against the 32-bit index limit.
pub fn check_dims(nrows: usize, ncols: usize, nnz: usize) -> Result<()> {
    check_index_range("rows", nrows as u64)?;
    check_index_range("columns", ncols as u64)?;
    check_index_range("nnz", nnz as u64)
}

/// Exclusive prefix sum of counts into a pointer array of `counts.len() + 1` entries.
pub(crate) fn counts_to_ptr(counts: &[u32]) -> Vec<u32> {
    let mut ptr = Vec::with_capacity(counts.len() + 1);
    let mut acc = 0u32;
    ptr.push(0);
    for &c in counts {
        acc += c;
        ptr.push(acc);
    }
    ptr
}
