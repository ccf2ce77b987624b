//! Parallel, deterministic CSR assembly for the generators (issue #2): rows are cut into chunks
//! of a size fixed by the spec (never by the thread count); a first parallel pass writes row
//! lengths, a chunked prefix sum turns them into row pointers (checking nnz against the 32-bit
//! limit before the index and value arrays are allocated), and a second parallel pass fills each
//! chunk's columns and values in place. No COO, no global sort. The row pointers are of either
//! offset width ([`Offset`]: `u32`, or `u64` above 2^31−1 nonzeros, docs/offsets.md); the
//! kinds' passes see row lengths and chunk-local spans, never the width.
//!
//! [`RowGen`] keeps a kind's two passes so that any row range can be built alone (issue #26):
//! the chunks overlapping the range are filled from their own random streams, exactly as in
//! the whole matrix, and the rows outside the range are dropped, so a rank of a distributed run
//! builds its rows bit for bit as the whole generation would, holding only its share.

use std::ops::Range;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::matrix::{AnyCsr, Csr};
use crate::memory::try_vec;
use crate::scalar::{Idx, Offset, OffsetSlice, OffsetWidth, Scalar, MAX_INDEX};

/// Entries aimed at per chunk: enough work to amortise scheduling, small enough to balance.
const TARGET_CHUNK_NNZ: u64 = 1 << 15;
/// Upper bound on the rows of one chunk.
const MAX_CHUNK_ROWS: u64 = 1 << 14;

/// Rows per chunk for an expected mean row length: a function of the spec alone.
pub(crate) fn chunk_rows(mean_len: f64) -> usize {
    let per = (TARGET_CHUNK_NNZ as f64 / mean_len.max(1.0)).floor() as u64;
    per.clamp(1, MAX_CHUNK_ROWS) as usize
}

/// One chunk of rows handed to a fill callback: its index, its rows, the matrix's row pointers
/// (absolute, of either width) and the chunk's slices of the column and value arrays.
pub(crate) struct Chunk<'a, T> {
    pub index: usize,
    pub rows: Range<usize>,
    row_ptr: OffsetSlice<'a>,
    pub cols: &'a mut [Idx],
    pub vals: &'a mut [T],
}

impl<T> Chunk<'_, T> {
    /// The chunk-local range of row `i`'s entries.
    #[inline]
    pub fn span(&self, i: usize) -> Range<usize> {
        let base = self.row_ptr.get(self.rows.start);
        self.row_ptr.get(i) - base..self.row_ptr.get(i + 1) - base
    }
}

/// Writes the row lengths of each chunk of `chunk` rows into `ptr[1..]` through `lens` (which
/// writes `u32` lengths: a row has at most 2^31−1 entries whatever the offsets' width).
fn write_lengths<O: Offset>(
    ptr: &mut [O],
    chunk: usize,
    lens: &(impl Fn(usize, Range<usize>, &mut [Idx]) + Sync),
) {
    ptr[1..].par_chunks_mut(chunk).enumerate().for_each_init(
        Vec::new,
        |buf: &mut Vec<Idx>, (c, out)| {
            let start = c * chunk;
            buf.clear();
            buf.resize(out.len(), 0);
            lens(c, start..start + out.len(), buf);
            for (o, &l) in out.iter_mut().zip(buf.iter()) {
                *o = O::from_u64(u64::from(l));
            }
        },
    );
}

/// Turns row lengths stored at `ptr[1..]` into row pointers in place. Chunk-local scans run in
/// parallel; the total is checked against what offsets of type `O` hold (2^31−1 or 2^40) before
/// anything relies on it.
pub(crate) fn lengths_to_ptr<O: Offset>(ptr: &mut [O], chunk: usize) -> Result<u64> {
    ptr[0] = O::default();
    let sums: Vec<u64> = ptr[1..]
        .par_chunks_mut(chunk)
        .map(|c| {
            let mut acc = 0u64;
            for v in c.iter_mut() {
                acc += v.to_usize() as u64;
                *v = O::from_u64(acc);
            }
            acc
        })
        .collect();
    let mut offsets = Vec::with_capacity(sums.len());
    let mut total = 0u64;
    for s in &sums {
        offsets.push(total);
        total += s;
    }
    crate::error::check_nnz(O::WIDTH, total)?;
    ptr[1..]
        .par_chunks_mut(chunk)
        .zip(offsets.par_iter())
        .for_each(|(c, &off)| {
            if off > 0 {
                for v in c.iter_mut() {
                    *v = O::from_u64(v.to_usize() as u64 + off);
                }
            }
        });
    Ok(total)
}

/// Splits `cols`/`vals` (the entries of rows `rows`, which starts on a chunk boundary) into the
/// slices of each chunk of `chunk` rows.
pub(crate) fn split_chunks<'a, T, O: Offset>(
    rows: Range<usize>,
    chunk: usize,
    row_ptr: &'a [O],
    mut cols: &'a mut [Idx],
    mut vals: &'a mut [T],
) -> Vec<Chunk<'a, T>> {
    let nrows = rows.end;
    let mut out = Vec::with_capacity(rows.len().div_ceil(chunk.max(1)));
    let mut start = rows.start;
    let mut index = rows.start / chunk.max(1);
    while start < nrows {
        let end = (start + chunk).min(nrows);
        let len = row_ptr[end].to_usize() - row_ptr[start].to_usize();
        let (c, rest_c) = std::mem::take(&mut cols).split_at_mut(len);
        let (v, rest_v) = std::mem::take(&mut vals).split_at_mut(len);
        cols = rest_c;
        vals = rest_v;
        out.push(Chunk {
            index,
            rows: start..end,
            row_ptr: O::slice(row_ptr),
            cols: c,
            vals: v,
        });
        start = end;
        index += 1;
    }
    out
}

/// Builds an `nrows × ncols` CSR matrix with row offsets of type `O`, row chunk by row chunk.
///
/// `lens(chunk_index, rows, out)` writes the length of each row of the chunk; `fill(chunk)`
/// writes each row's strictly increasing columns and its values. Both must depend only on their
/// arguments (and the seed they capture) for the result to be deterministic, and neither sees
/// the offsets' width: the same spec gives the same matrix in both widths.
pub(crate) fn build_rows<T, O, L, F>(
    nrows: usize,
    ncols: usize,
    chunk: usize,
    lens: L,
    fill: F,
) -> Result<Csr<T, O>>
where
    T: Scalar,
    O: Offset,
    L: Fn(usize, Range<usize>, &mut [Idx]) + Sync,
    F: Fn(&mut Chunk<'_, T>) + Sync,
{
    let chunk = chunk.max(1);
    let mut row_ptr: Vec<O> = try_vec("the row pointers", nrows + 1, O::default())?;
    write_lengths(&mut row_ptr, chunk, &lens);
    fill_rows(ncols, chunk, row_ptr, &fill)
}

/// [`build_rows`]'s second half: row lengths stored at `row_ptr[1..]` become row pointers, the
/// column and value arrays are allocated and `fill` writes them.
fn fill_rows<T, O, F>(
    ncols: usize,
    chunk: usize,
    mut row_ptr: Vec<O>,
    fill: &F,
) -> Result<Csr<T, O>>
where
    T: Scalar,
    O: Offset,
    F: Fn(&mut Chunk<'_, T>) + Sync,
{
    let nrows = row_ptr.len() - 1;
    let nnz = lengths_to_ptr(&mut row_ptr, chunk)? as usize;
    let mut cols: Vec<Idx> = try_vec("the column indices", nnz, 0)?;
    let mut vals: Vec<T> = try_vec("the values", nnz, T::zero())?;
    split_chunks(0..nrows, chunk, &row_ptr, &mut cols, &mut vals)
        .into_par_iter()
        .for_each(|mut c| fill(&mut c));
    Ok(Csr::from_parts_unchecked(nrows, ncols, row_ptr, cols, vals))
}

/// The row-length pass of a generator: `(chunk index, rows, out)`.
type LensFn = Box<dyn Fn(usize, Range<usize>, &mut [Idx]) + Sync + Send>;
/// The fill pass of a generator.
type FillFn<T> = Box<dyn Fn(&mut Chunk<'_, T>) + Sync + Send>;

/// A generator kind's two passes ([`build_rows`]'s arguments), kept so that the whole matrix or
/// any row range of it can be built.
pub(crate) struct RowGen<T> {
    pub nrows: usize,
    pub ncols: usize,
    chunk: usize,
    lens: LensFn,
    fill: FillFn<T>,
}

impl<T: Scalar> RowGen<T> {
    pub(crate) fn new(
        nrows: usize,
        ncols: usize,
        chunk: usize,
        lens: impl Fn(usize, Range<usize>, &mut [Idx]) + Sync + Send + 'static,
        fill: impl Fn(&mut Chunk<'_, T>) + Sync + Send + 'static,
    ) -> Self {
        RowGen {
            nrows,
            ncols,
            chunk: chunk.max(1),
            lens: Box::new(lens),
            fill: Box::new(fill),
        }
    }

    /// The whole matrix, with row offsets of type `O`.
    pub(crate) fn build<O: Offset>(&self) -> Result<Csr<T, O>> {
        build_rows(self.nrows, self.ncols, self.chunk, &self.lens, &self.fill)
    }

    /// The whole matrix in the width its count needs (docs/offsets.md): the row lengths are
    /// counted once, into 32-bit words (a row holds at most 2^31−1 entries); up to `wide_above`
    /// nonzeros (2^31−1 outside the tests; a higher value counts as 2^31−1) they become 32-bit
    /// row pointers in place, as [`RowGen::build`] makes them, and above it they are widened to
    /// 64 bits, after `check_wide(nnz)` (the memory check of the 64-bit matrix) and the 2^40
    /// limit, before the column and value arrays are allocated. The same matrix either way.
    pub(crate) fn build_any(
        &self,
        wide_above: u64,
        check_wide: impl FnOnce(u64) -> Result<()>,
    ) -> Result<AnyCsr<T>> {
        let chunk = self.chunk;
        let mut lens: Vec<Idx> = try_vec("the row pointers", self.nrows + 1, 0)?;
        write_lengths(&mut lens, chunk, &self.lens);
        let nnz: u64 = lens[1..].par_iter().map(|&l| u64::from(l)).sum();
        if nnz <= wide_above.min(MAX_INDEX) {
            return fill_rows(self.ncols, chunk, lens, &self.fill).map(AnyCsr::W32);
        }
        crate::error::check_nnz(OffsetWidth::W64, nnz)?;
        check_wide(nnz)?;
        let mut wide: Vec<u64> = try_vec("the row pointers", self.nrows + 1, 0)?;
        wide.par_iter_mut()
            .zip(lens.par_iter())
            .for_each(|(w, &l)| *w = u64::from(l));
        drop(lens);
        fill_rows(self.ncols, chunk, wide, &self.fill).map(AnyCsr::W64)
    }

    /// The row pointers of the whole matrix (nrows+1 entries; the first pass only).
    pub(crate) fn row_ptr(&self) -> Result<Vec<Idx>> {
        let chunk = self.chunk;
        let mut row_ptr: Vec<Idx> = try_vec("the row pointers", self.nrows + 1, 0)?;
        write_lengths(&mut row_ptr, chunk, &self.lens);
        lengths_to_ptr(&mut row_ptr, chunk)?;
        Ok(row_ptr)
    }

    /// Rows `rows` as a `rows.len() × ncols` matrix, equal to those rows of [`RowGen::build`]:
    /// the chunks overlapping the range are filled, the rows outside it dropped. `row_ptr` is
    /// [`RowGen::row_ptr`]'s.
    pub(crate) fn rows(&self, rows: Range<usize>, row_ptr: &[Idx]) -> Result<Csr<T>> {
        if rows.start > rows.end || rows.end > self.nrows || row_ptr.len() != self.nrows + 1 {
            return Err(Error::InvalidArgument(format!(
                "generator rows {}..{} of a matrix of {} rows ({} row pointers given)",
                rows.start,
                rows.end,
                self.nrows,
                row_ptr.len()
            )));
        }
        if rows.is_empty() {
            return Ok(Csr::from_parts_unchecked(
                0,
                self.ncols,
                vec![0],
                Vec::new(),
                Vec::new(),
            ));
        }
        let chunk = self.chunk;
        let first = rows.start / chunk * chunk;
        let last = (rows.end.div_ceil(chunk) * chunk).min(self.nrows);
        let base = row_ptr[first] as usize;
        let len = row_ptr[last] as usize - base;
        let mut cols: Vec<Idx> = try_vec("the column indices", len, 0)?;
        let mut vals: Vec<T> = try_vec("the values", len, T::zero())?;
        split_chunks(first..last, chunk, row_ptr, &mut cols, &mut vals)
            .into_par_iter()
            .for_each(|mut c| (self.fill)(&mut c));
        let (lo, hi) = (
            row_ptr[rows.start] as usize - base,
            row_ptr[rows.end] as usize - base,
        );
        let local: Vec<Idx> = row_ptr[rows.start..=rows.end]
            .iter()
            .map(|&p| p - row_ptr[rows.start])
            .collect();
        cols.truncate(hi);
        vals.truncate(hi);
        cols.drain(..lo);
        vals.drain(..lo);
        Ok(Csr::from_parts_unchecked(
            rows.len(),
            self.ncols,
            local,
            cols,
            vals,
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;

    /// [`RowGen::build_any`] runs the row-length pass once per chunk whichever width it picks,
    /// and checks the 64-bit matrix (`check_wide`) only when it widens, with the true count.
    #[test]
    fn build_any_counts_the_rows_once() {
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        let g: RowGen<f64> = RowGen::new(
            1000,
            50,
            64,
            move |_, rows, out| {
                counted.fetch_add(1, Ordering::Relaxed);
                for (i, o) in rows.zip(out.iter_mut()) {
                    *o = (i % 7) as Idx;
                }
            },
            |c| {
                for i in c.rows.clone() {
                    for (k, p) in c.span(i).enumerate() {
                        c.cols[p] = k as Idx;
                        c.vals[p] = (i * 10 + k) as f64;
                    }
                }
            },
        );
        let chunks = 1000usize.div_ceil(64);
        let narrow: Csr<f64> = g.build().unwrap();
        let nnz = narrow.nnz() as u64;
        calls.store(0, Ordering::Relaxed);
        let mut checked = None;
        let wide = g
            .build_any(nnz - 1, |n| {
                checked = Some(n);
                Ok(())
            })
            .unwrap();
        assert_eq!(calls.load(Ordering::Relaxed), chunks);
        assert_eq!(checked, Some(nnz));
        match wide {
            AnyCsr::W64(w) => assert_eq!(w, narrow.with_offsets().unwrap()),
            AnyCsr::W32(_) => panic!("{nnz} nonzeros above a threshold of {}", nnz - 1),
        }
        calls.store(0, Ordering::Relaxed);
        let same = g.build_any(nnz, |_| panic!("no 64-bit check below the threshold"));
        assert_eq!(calls.load(Ordering::Relaxed), chunks);
        assert!(matches!(same, Ok(AnyCsr::W32(ref a)) if *a == narrow));
        let refused = g.build_any(0, |n| {
            Err(Error::InvalidArgument(format!("{n} nonzeros do not fit")))
        });
        assert!(refused.is_err());
    }
}
