//! Coordinate (triplet) storage, the assembly format that readers and generators produce.
//! Conversion to CSR sorts by (row, column) and sums duplicates.

use rayon::prelude::*;

use super::{check_dims, counts_to_ptr, Csr};
use crate::error::{Error, Result};
use crate::scalar::{Idx, Scalar};

/// A sparse matrix as unordered triplets; duplicates are allowed and summed on conversion.
#[derive(Clone, Debug, PartialEq)]
pub struct Coo<T> {
    nrows: usize,
    ncols: usize,
    rows: Vec<Idx>,
    cols: Vec<Idx>,
    vals: Vec<T>,
}

impl<T: Scalar> Coo<T> {
    /// An empty matrix of the given shape.
    pub fn new(nrows: usize, ncols: usize) -> Result<Self> {
        check_dims(nrows, ncols, 0)?;
        Ok(Coo {
            nrows,
            ncols,
            rows: Vec::new(),
            cols: Vec::new(),
            vals: Vec::new(),
        })
    }

    /// Builds a validated COO matrix from triplet arrays (every index in range).
    pub fn from_triplets(
        nrows: usize,
        ncols: usize,
        rows: Vec<Idx>,
        cols: Vec<Idx>,
        vals: Vec<T>,
    ) -> Result<Self> {
        check_dims(nrows, ncols, rows.len())?;
        if rows.len() != cols.len() || rows.len() != vals.len() {
            return Err(Error::structure(
                "COO",
                format!(
                    "triplet arrays differ in length: {} rows, {} columns, {} values",
                    rows.len(),
                    cols.len(),
                    vals.len()
                ),
            ));
        }
        if let Some(k) = (0..rows.len())
            .into_par_iter()
            .find_first(|&k| rows[k] as usize >= nrows || cols[k] as usize >= ncols)
        {
            return Err(Error::structure(
                "COO",
                format!(
                    "entry {k} at ({}, {}) is outside the {nrows}x{ncols} matrix",
                    rows[k], cols[k]
                ),
            ));
        }
        Ok(Coo {
            nrows,
            ncols,
            rows,
            cols,
            vals,
        })
    }

    pub(crate) fn from_parts_unchecked(
        nrows: usize,
        ncols: usize,
        rows: Vec<Idx>,
        cols: Vec<Idx>,
        vals: Vec<T>,
    ) -> Self {
        Coo {
            nrows,
            ncols,
            rows,
            cols,
            vals,
        }
    }

    /// Appends one entry, checking its position.
    pub fn push(&mut self, row: usize, col: usize, val: T) -> Result<()> {
        if row >= self.nrows || col >= self.ncols {
            return Err(Error::structure(
                "COO",
                format!(
                    "entry ({row}, {col}) is outside the {}x{} matrix",
                    self.nrows, self.ncols
                ),
            ));
        }
        check_dims(self.nrows, self.ncols, self.rows.len() + 1)?;
        self.rows.push(row as Idx);
        self.cols.push(col as Idx);
        self.vals.push(val);
        Ok(())
    }

    pub fn nrows(&self) -> usize {
        self.nrows
    }
    pub fn ncols(&self) -> usize {
        self.ncols
    }
    /// Stored triplets, duplicates included.
    pub fn nnz(&self) -> usize {
        self.rows.len()
    }
    pub fn rows(&self) -> &[Idx] {
        &self.rows
    }
    pub fn cols(&self) -> &[Idx] {
        &self.cols
    }
    pub fn vals(&self) -> &[T] {
        &self.vals
    }

    /// Converts to CSR: a counting sort by row, a sort by column inside each row, and duplicate
    /// entries summed. Explicit zeros are kept.
    pub fn to_csr(&self) -> Csr<T> {
        let n = self.nrows;
        let mut counts = vec![0u32; n];
        for &r in &self.rows {
            counts[r as usize] += 1;
        }
        let ptr = counts_to_ptr(&counts);
        let mut next: Vec<u32> = ptr[..n].to_vec();
        let nnz = self.rows.len();
        let mut cols = vec![0 as Idx; nnz];
        let mut vals = vec![T::zero(); nnz];
        for k in 0..nnz {
            let r = self.rows[k] as usize;
            let d = next[r] as usize;
            next[r] += 1;
            cols[d] = self.cols[k];
            vals[d] = self.vals[k];
        }
        // Sort and merge duplicates row by row, in parallel over row chunks.
        let mut new_len = vec![0u32; n];
        {
            let mut col_rows: Vec<&mut [Idx]> = Vec::with_capacity(n);
            let mut val_rows: Vec<&mut [T]> = Vec::with_capacity(n);
            let (mut cr, mut vr) = (&mut cols[..], &mut vals[..]);
            for i in 0..n {
                let len = (ptr[i + 1] - ptr[i]) as usize;
                let (a, b) = std::mem::take(&mut cr).split_at_mut(len);
                let (c, d) = std::mem::take(&mut vr).split_at_mut(len);
                col_rows.push(a);
                val_rows.push(c);
                cr = b;
                vr = d;
            }
            col_rows
                .into_par_iter()
                .zip(val_rows)
                .zip(new_len.par_iter_mut())
                .with_min_len(1024)
                .for_each(|((c, v), out)| *out = sort_merge_row(c, v) as u32);
        }
        let new_ptr = counts_to_ptr(&new_len);
        if new_ptr[n] as usize == nnz {
            return Csr::from_parts_unchecked(n, self.ncols, new_ptr, cols, vals);
        }
        let total = new_ptr[n] as usize;
        let mut out_c = Vec::with_capacity(total);
        let mut out_v = Vec::with_capacity(total);
        for i in 0..n {
            let s = ptr[i] as usize;
            let l = new_len[i] as usize;
            out_c.extend_from_slice(&cols[s..s + l]);
            out_v.extend_from_slice(&vals[s..s + l]);
        }
        Csr::from_parts_unchecked(n, self.ncols, new_ptr, out_c, out_v)
    }
}

/// Sorts one row by column (stable, so duplicates sum in their given order) and sums duplicates
/// in place; returns the merged length. Shared with the Matrix Market reader.
pub(crate) fn sort_merge_row<T: Scalar>(cols: &mut [Idx], vals: &mut [T]) -> usize {
    if cols.windows(2).all(|w| w[0] < w[1]) {
        return cols.len();
    }
    let mut pairs: Vec<(Idx, T)> = cols.iter().copied().zip(vals.iter().copied()).collect();
    pairs.sort_by_key(|p| p.0);
    let mut len = 0usize;
    for (c, v) in pairs {
        if len > 0 && cols[len - 1] == c {
            vals[len - 1] += v;
        } else {
            cols[len] = c;
            vals[len] = v;
            len += 1;
        }
    }
    len
}
