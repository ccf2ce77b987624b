//! Sparse matrix types: [`Coo`] (assembly), [`Csr`] and [`Csc`] (computation), with validation,
//! conversions and statistics. Structure (dimensions, pointers, indices) is kept apart from
//! values, after faer's symbolic/numeric split, so that one analysed pattern can take new values.

mod block;
mod coo;
mod csc;
mod csr;
mod stats;
mod stored;

pub use block::{DenseOrder, MultiShape};
pub(crate) use coo::sort_merge_row;
pub use coo::Coo;
pub use csc::Csc;
pub(crate) use csr::transpose_arrays;
pub use csr::{AnyCsr, Csr, CsrOfWidth, Pattern};
pub use stats::{
    byte_model, csr_matrix_bytes, fits_l2, x_sector_share, x_sectors, LengthStats, MatrixStats,
    RowStats, XSectors, CHUNK_ROWS, SECTOR_BYTES, SHARE_SAMPLE_CHUNKS,
};
pub use stored::{round_values, Conversion};

use crate::error::{check_index_range, Error, Result};

/// Checks rows, columns and nnz against the 32-bit index limit.
pub fn check_dims(nrows: usize, ncols: usize, nnz: usize) -> Result<()> {
    check_dims_for(crate::scalar::OffsetWidth::W32, nrows, ncols, nnz)
}

/// Checks rows and columns against the 32-bit index limit and nnz against what row offsets of
/// width `w` hold (2^31−1 or 2^40; docs/offsets.md).
pub fn check_dims_for(
    w: crate::scalar::OffsetWidth,
    nrows: usize,
    ncols: usize,
    nnz: usize,
) -> Result<()> {
    check_index_range("rows", nrows as u64)?;
    check_index_range("columns", ncols as u64)?;
    crate::error::check_nnz(w, nnz as u64)
}

/// `nrows` when it equals `ncols`; otherwise the error "`need`; this one is {nrows}x{ncols}"
/// (`need` says who needs a square matrix, e.g. "CG needs a square matrix").
pub(crate) fn check_square(need: &str, nrows: usize, ncols: usize) -> Result<usize> {
    if nrows != ncols {
        return Err(Error::InvalidArgument(format!(
            "{need}; this one is {nrows}x{ncols}"
        )));
    }
    Ok(nrows)
}

/// How the length of a vector must compare with the matrix dimension it meets
/// ([`check_vectors`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VectorFit {
    /// Host vectors: x exactly `ncols` and y exactly `nrows` entries (`Plan::apply`, the oracle).
    Exact,
    /// Device vectors: at least that many (a layout's padded vectors may be longer,
    /// `DeviceLayout::padded_dims`; `DeviceLayout::run`, cuSPARSE).
    AtLeast,
}

/// The one check of x and y lengths against an `nrows` × `ncols` matrix (`shape`), for host
/// ([`VectorFit::Exact`]) and device ([`VectorFit::AtLeast`]) vectors alike: x is checked first,
/// then y, and the first that does not fit is an [`Error::DimensionMismatch`] whose `what` starts
/// with `what` and names the vector (`x length (matrix columns)` on the host, `x (device)` on the
/// device).
///
/// ```
/// use spmvkit::matrix::{check_vectors, VectorFit};
/// assert!(check_vectors("", (5, 7), 7, 5, VectorFit::Exact).is_ok());
/// assert!(check_vectors("", (5, 7), 8, 5, VectorFit::Exact).is_err());
/// assert!(check_vectors("SpMV: ", (5, 7), 8, 8, VectorFit::AtLeast).is_ok());
/// let e = check_vectors("SpMV: ", (5, 7), 7, 4, VectorFit::AtLeast).unwrap_err();
/// assert_eq!(e.to_string(), "dimension mismatch: SpMV: y (device): expected 5, got 4");
/// ```
pub fn check_vectors(
    what: &str,
    shape: (usize, usize),
    x_len: usize,
    y_len: usize,
    fit: VectorFit,
) -> Result<()> {
    let (nrows, ncols) = shape;
    for (v, dim, expected, got) in [
        ("x", "matrix columns", ncols, x_len),
        ("y", "matrix rows", nrows, y_len),
    ] {
        let fits = match fit {
            VectorFit::Exact => got == expected,
            VectorFit::AtLeast => got >= expected,
        };
        if !fits {
            return Err(Error::DimensionMismatch {
                what: match fit {
                    VectorFit::Exact => format!("{what}{v} length ({dim})"),
                    VectorFit::AtLeast => format!("{what}{v} (device)"),
                },
                expected,
                got,
            });
        }
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn mismatch(r: Result<()>) -> (String, usize, usize) {
        match r {
            Err(Error::DimensionMismatch {
                what,
                expected,
                got,
            }) => (what, expected, got),
            other => panic!("expected a dimension mismatch, got {other:?}"),
        }
    }

    /// Device vectors: at least the matrix's dimensions; the error names the short vector.
    #[test]
    fn device_vectors_are_at_least_the_matrix() {
        let dev = |x, y| check_vectors("m: ", (5, 7), x, y, VectorFit::AtLeast);
        assert!(dev(7, 5).is_ok());
        assert!(dev(8, 9).is_ok());
        assert_eq!(mismatch(dev(6, 5)), ("m: x (device)".into(), 7, 6));
        assert_eq!(mismatch(dev(7, 4)), ("m: y (device)".into(), 5, 4));
    }

    /// Host vectors: exactly the matrix's dimensions, x checked first.
    #[test]
    fn host_vectors_are_exactly_the_matrix() {
        let host = |x, y| check_vectors("", (5, 7), x, y, VectorFit::Exact);
        assert!(host(7, 5).is_ok());
        assert_eq!(
            mismatch(host(8, 5)),
            ("x length (matrix columns)".into(), 7, 8)
        );
        assert_eq!(
            mismatch(host(7, 4)),
            ("y length (matrix rows)".into(), 5, 4)
        );
        assert_eq!(
            mismatch(host(6, 6)),
            ("x length (matrix columns)".into(), 7, 6)
        );
    }
}
