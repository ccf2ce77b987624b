//! Compressed sparse column storage, the input of the column-oriented methods (FastLoad, the
//! basic CSC kernel of FastLoad §III).

use std::sync::Arc;

use super::csr::{transpose_arrays, Pattern};
use super::Csr;
use crate::error::Result;
use crate::scalar::{Idx, Scalar};

/// A compressed sparse column matrix: `col_ptr` over columns, sorted `row_idx` inside each.
#[derive(Clone, Debug, PartialEq)]
pub struct Csc<T> {
    nrows: usize,
    pattern: Arc<Pattern>,
    vals: Vec<T>,
}

impl<T: Scalar> Csc<T> {
    /// Builds a validated CSC matrix from its arrays.
    pub fn new(
        nrows: usize,
        ncols: usize,
        col_ptr: Vec<Idx>,
        row_idx: Vec<Idx>,
        vals: Vec<T>,
    ) -> Result<Self> {
        let pattern = Pattern::with_values("CSC", ncols, nrows, col_ptr, row_idx, vals.len())?;
        Ok(Csc {
            nrows,
            pattern: Arc::new(pattern),
            vals,
        })
    }

    pub(crate) fn from_parts_unchecked(
        nrows: usize,
        ncols: usize,
        col_ptr: Vec<Idx>,
        row_idx: Vec<Idx>,
        vals: Vec<T>,
    ) -> Self {
        let pattern = Pattern {
            nmajor: ncols,
            nminor: nrows,
            ptr: col_ptr,
            idx: row_idx,
        };
        Csc {
            nrows,
            pattern: Arc::new(pattern),
            vals,
        }
    }

    pub fn nrows(&self) -> usize {
        self.nrows
    }
    pub fn ncols(&self) -> usize {
        self.pattern.nmajor
    }
    pub fn nnz(&self) -> usize {
        self.pattern.idx.len()
    }
    pub fn col_ptr(&self) -> &[Idx] {
        &self.pattern.ptr
    }
    pub fn row_idx(&self) -> &[Idx] {
        &self.pattern.idx
    }
    pub fn vals(&self) -> &[T] {
        &self.vals
    }
    /// Mutable values; the structure stays fixed.
    pub fn vals_mut(&mut self) -> &mut [T] {
        &mut self.vals
    }
    /// Row indices and values of column `j`.
    #[inline]
    pub fn col(&self, j: usize) -> (&[Idx], &[T]) {
        let s = self.pattern.span(j);
        (&self.pattern.idx[s.clone()], &self.vals[s])
    }
    /// Number of entries in column `j`.
    #[inline]
    pub fn col_len(&self, j: usize) -> usize {
        self.pattern.len(j)
    }

    /// Converts back to CSR.
    pub fn to_csr(&self) -> Csr<T> {
        let (ptr, idx, vals) = transpose_arrays(
            self.ncols(),
            self.nrows,
            self.col_ptr(),
            self.row_idx(),
            &self.vals,
        );
        Csr::from_parts_unchecked(self.nrows, self.ncols(), ptr, idx, vals)
    }
}
