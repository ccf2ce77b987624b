//! Compressed sparse row storage. [`Pattern`] holds the structure, [`Csr`] a pattern plus values.
//! Both are generic over the row offsets' type ([`Offset`]: `u32` by default, `u64` above 2^31−1
//! nonzeros; issue #25, docs/offsets.md); column indices are [`Idx`] either way.

use std::sync::Arc;

use rayon::prelude::*;

use super::{check_dims, Coo, Csc};
use crate::error::{Error, Result};
use crate::scalar::{Idx, Offset, Scalar};

/// The structure of a compressed sparse matrix: dimensions, pointers and sorted indices.
///
/// For CSR, `ptr` has `nrows + 1` entries and `idx` holds column indices; a [`Csc`] uses the same
/// type transposed (`ptr` over columns, `idx` holding row indices). `O` is the pointers' type
/// ([`Offset`]): `u32`, or `u64` for a CSR of more than 2^31−1 entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern<O: Offset = Idx> {
    pub(crate) nmajor: usize,
    pub(crate) nminor: usize,
    pub(crate) ptr: Vec<O>,
    pub(crate) idx: Vec<Idx>,
}

impl<O: Offset> Pattern<O> {
    /// Builds and validates a pattern: `ptr[0] = 0`, monotone, `ptr[n] = idx.len()`, indices in
    /// bounds and strictly increasing inside each major line.
    pub fn new(
        format: &'static str,
        nmajor: usize,
        nminor: usize,
        ptr: Vec<O>,
        idx: Vec<Idx>,
    ) -> Result<Self> {
        let p = Pattern {
            nmajor,
            nminor,
            ptr,
            idx,
        };
        p.validate(format)?;
        Ok(p)
    }

    /// [`Pattern::new`] for a matrix with `nvals` values, one per index (checked first).
    pub(crate) fn with_values(
        format: &'static str,
        nmajor: usize,
        nminor: usize,
        ptr: Vec<O>,
        idx: Vec<Idx>,
        nvals: usize,
    ) -> Result<Self> {
        if nvals != idx.len() {
            let other = if format == "CSC" { "row" } else { "column" };
            return Err(Error::structure(
                format,
                format!("{nvals} values for {} {other} indices", idx.len()),
            ));
        }
        Self::new(format, nmajor, nminor, ptr, idx)
    }

    fn validate(&self, format: &'static str) -> Result<()> {
        let (line, other) = if format == "CSC" {
            ("column", "row")
        } else {
            ("row", "column")
        };
        super::check_dims_for(O::WIDTH, self.nmajor, self.nminor, self.idx.len())?;
        if self.ptr.len() != self.nmajor + 1 {
            return Err(Error::structure(
                format,
                format!(
                    "pointer array has {} entries, expected {}",
                    self.ptr.len(),
                    self.nmajor + 1
                ),
            ));
        }
        if self.ptr[0] != O::default() {
            return Err(Error::structure(
                format,
                format!("pointer[0] = {}, expected 0", self.ptr[0]),
            ));
        }
        if self.ptr[self.nmajor].to_usize() != self.idx.len() {
            return Err(Error::structure(
                format,
                format!(
                    "pointer[{}] = {} but there are {} indices",
                    self.nmajor,
                    self.ptr[self.nmajor],
                    self.idx.len()
                ),
            ));
        }
        if let Some(i) = (0..self.nmajor).find(|&i| self.ptr[i] > self.ptr[i + 1]) {
            return Err(Error::structure(
                format,
                format!(
                    "pointers decrease at {line} {i}: {} > {}",
                    self.ptr[i],
                    self.ptr[i + 1]
                ),
            ));
        }
        let bad = (0..self.nmajor).into_par_iter().find_first(|&i| {
            let s = &self.idx[self.span(i)];
            s.iter().any(|&c| c as usize >= self.nminor) || s.windows(2).any(|w| w[0] >= w[1])
        });
        if let Some(i) = bad {
            let s = &self.idx[self.span(i)];
            let detail = if let Some(&c) = s.iter().find(|&&c| c as usize >= self.nminor) {
                format!(
                    "{line} {i}: {other} index {c} out of range 0..{}",
                    self.nminor
                )
            } else {
                format!("{line} {i}: {other} indices not strictly increasing")
            };
            return Err(Error::structure(format, detail));
        }
        Ok(())
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.idx.len()
    }

    /// Positions of major line `i`'s entries in `idx` (and in the matrix's values).
    #[inline]
    pub(crate) fn span(&self, i: usize) -> std::ops::Range<usize> {
        self.ptr[i].to_usize()..self.ptr[i + 1].to_usize()
    }

    /// Length of major line `i` (a row of a CSR).
    #[inline]
    pub fn len(&self, i: usize) -> usize {
        self.ptr[i + 1].to_usize() - self.ptr[i].to_usize()
    }

    /// Whether the pattern stores no entry.
    pub fn is_empty(&self) -> bool {
        self.idx.is_empty()
    }

    /// The pointer array.
    pub fn ptr(&self) -> &[O] {
        &self.ptr
    }

    /// The index array.
    pub fn idx(&self) -> &[Idx] {
        &self.idx
    }
}

/// A compressed sparse row matrix: a shared [`Pattern`] plus values. `O` is the row offsets'
/// type: `u32` (the default, every method), or `u64` for more than 2^31−1 nonzeros
/// (docs/offsets.md); [`Csr::with_offsets`] converts between them.
#[derive(Clone, Debug, PartialEq)]
pub struct Csr<T, O: Offset = Idx> {
    pattern: Arc<Pattern<O>>,
    vals: Vec<T>,
}

/// A CSR matrix of either offset width, borrowed ([`Csr::by_width`]).
pub enum CsrOfWidth<'a, T> {
    W32(&'a Csr<T>),
    W64(&'a Csr<T, u64>),
}

/// A CSR matrix of either offset width, owned: what a reader returns when the file decides the
/// width (the Matrix Market reader and the cache past 2^31−1 nonzeros, docs/offsets.md).
#[derive(Clone, Debug, PartialEq)]
pub enum AnyCsr<T> {
    W32(Csr<T>),
    W64(Csr<T, u64>),
}

impl<T: Scalar> AnyCsr<T> {
    /// The width of the row offsets.
    pub fn width(&self) -> crate::scalar::OffsetWidth {
        match self {
            AnyCsr::W32(_) => crate::scalar::OffsetWidth::W32,
            AnyCsr::W64(_) => crate::scalar::OffsetWidth::W64,
        }
    }

    /// The number of stored entries.
    pub fn nnz(&self) -> usize {
        match self {
            AnyCsr::W32(a) => a.nnz(),
            AnyCsr::W64(a) => a.nnz(),
        }
    }

    /// The number of rows.
    pub fn nrows(&self) -> usize {
        match self {
            AnyCsr::W32(a) => a.nrows(),
            AnyCsr::W64(a) => a.nrows(),
        }
    }

    /// The number of columns.
    pub fn ncols(&self) -> usize {
        match self {
            AnyCsr::W32(a) => a.ncols(),
            AnyCsr::W64(a) => a.ncols(),
        }
    }

    /// The matrix, borrowed as [`CsrOfWidth`].
    pub fn by_width(&self) -> CsrOfWidth<'_, T> {
        match self {
            AnyCsr::W32(a) => CsrOfWidth::W32(a),
            AnyCsr::W64(a) => CsrOfWidth::W64(a),
        }
    }

    /// The matrix with row offsets of type `P`: moved when it already has them, else converted
    /// as [`Csr::with_offsets`] does (narrowing refuses nnz > 2^31−1 with
    /// [`crate::Error::TooLarge`]).
    pub fn into_offsets<P: Offset>(self) -> Result<Csr<T, P>> {
        fn moved<A: 'static, B: 'static>(a: A) -> std::result::Result<B, A> {
            let boxed: Box<dyn std::any::Any> = Box::new(a);
            match boxed.downcast::<B>() {
                Ok(b) => Ok(*b),
                Err(back) => match back.downcast::<A>() {
                    Ok(a) => Err(*a),
                    Err(_) => unreachable!("a box holds the type it was made from"),
                },
            }
        }
        match self {
            AnyCsr::W32(a) => moved(a).or_else(|a: Csr<T>| a.with_offsets()),
            AnyCsr::W64(a) => moved(a).or_else(|a: Csr<T, u64>| a.with_offsets()),
        }
    }
}

impl<T: Scalar> From<Csr<T>> for AnyCsr<T> {
    fn from(a: Csr<T>) -> Self {
        AnyCsr::W32(a)
    }
}

impl<T: Scalar> From<Csr<T, u64>> for AnyCsr<T> {
    fn from(a: Csr<T, u64>) -> Self {
        AnyCsr::W64(a)
    }
}

impl<T: Scalar, O: Offset> Csr<T, O> {
    /// Builds a validated CSR matrix from its arrays.
    pub fn new(
        nrows: usize,
        ncols: usize,
        row_ptr: Vec<O>,
        col_idx: Vec<Idx>,
        vals: Vec<T>,
    ) -> Result<Self> {
        let pattern = Pattern::with_values("CSR", nrows, ncols, row_ptr, col_idx, vals.len())?;
        Ok(Csr {
            pattern: Arc::new(pattern),
            vals,
        })
    }

    /// Builds a CSR matrix from arrays the caller guarantees valid (produced by spmvkit itself).
    /// Debug builds still validate.
    pub(crate) fn from_parts_unchecked(
        nrows: usize,
        ncols: usize,
        row_ptr: Vec<O>,
        col_idx: Vec<Idx>,
        vals: Vec<T>,
    ) -> Self {
        let pattern = Pattern {
            nmajor: nrows,
            nminor: ncols,
            ptr: row_ptr,
            idx: col_idx,
        };
        debug_assert!(pattern.validate("CSR").is_ok());
        debug_assert_eq!(vals.len(), pattern.idx.len());
        Csr {
            pattern: Arc::new(pattern),
            vals,
        }
    }

    /// A matrix on an existing pattern with new values (the pattern is shared, not copied).
    pub fn with_pattern(pattern: Arc<Pattern<O>>, vals: Vec<T>) -> Result<Self> {
        if vals.len() != pattern.nnz() {
            return Err(Error::DimensionMismatch {
                what: "values for the pattern".into(),
                expected: pattern.nnz(),
                got: vals.len(),
            });
        }
        Ok(Csr { pattern, vals })
    }

    /// Number of rows.
    ///
    /// The accessors on the 2×3 matrix `[[1, 0, 2], [0, 0, 3]]`:
    ///
    /// ```
    /// use spmvkit::Csr;
    /// let a = Csr::<f64>::new(2, 3, vec![0, 2, 3], vec![0, 2, 2], vec![1.0, 2.0, 3.0])?;
    /// assert_eq!((a.nrows(), a.ncols(), a.nnz()), (2, 3, 3));
    /// assert_eq!(a.row_ptr(), &[0, 2, 3]); // row i holds entries row_ptr[i]..row_ptr[i + 1]
    /// assert_eq!(a.col_idx(), &[0, 2, 2]); // columns, increasing within a row
    /// assert_eq!(a.vals(), &[1.0, 2.0, 3.0]);
    /// assert_eq!(a.row(0), (&[0, 2][..], &[1.0, 2.0][..]));
    /// assert_eq!(a.row_len(1), 1);
    /// # Ok::<(), spmvkit::Error>(())
    /// ```
    pub fn nrows(&self) -> usize {
        self.pattern.nmajor
    }
    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.pattern.nminor
    }
    /// Number of stored entries (explicit zeros included).
    pub fn nnz(&self) -> usize {
        self.pattern.idx.len()
    }
    /// The row pointers: `nrows + 1` offsets into [`Csr::col_idx`] and [`Csr::vals`].
    pub fn row_ptr(&self) -> &[O] {
        &self.pattern.ptr
    }
    /// The column index of every stored entry, row by row, increasing within a row.
    pub fn col_idx(&self) -> &[Idx] {
        &self.pattern.idx
    }
    /// The value of every stored entry, in the order of [`Csr::col_idx`].
    pub fn vals(&self) -> &[T] {
        &self.vals
    }
    /// Mutable values; the structure stays fixed.
    ///
    /// ```
    /// let mut a = spmvkit::Csr::<f64>::identity(3)?;
    /// a.vals_mut().iter_mut().for_each(|v| *v *= 2.0);
    /// assert_eq!(a.vals(), &[2.0, 2.0, 2.0]);
    /// assert_eq!(a.pattern().nnz(), 3); // the structure is shared by clones and casts
    /// # Ok::<(), spmvkit::Error>(())
    /// ```
    pub fn vals_mut(&mut self) -> &mut [T] {
        &mut self.vals
    }
    /// The shared structure.
    pub fn pattern(&self) -> &Arc<Pattern<O>> {
        &self.pattern
    }
    /// Column indices and values of row `i`.
    #[inline]
    pub fn row(&self, i: usize) -> (&[Idx], &[T]) {
        let s = self.pattern.span(i);
        (&self.pattern.idx[s.clone()], &self.vals[s])
    }
    /// Number of entries in row `i`.
    #[inline]
    pub fn row_len(&self, i: usize) -> usize {
        self.pattern.len(i)
    }

    /// Converts the values to another precision.
    pub fn cast<U: Scalar>(&self) -> Csr<U, O> {
        Csr {
            pattern: self.pattern.clone(),
            vals: self
                .vals
                .par_iter()
                .map(|&v| U::from_f64(v.to_f64()))
                .collect(),
        }
    }

    /// Consumes the matrix into (nrows, ncols, row_ptr, col_idx, vals).
    pub fn into_parts(self) -> (usize, usize, Vec<O>, Vec<Idx>, Vec<T>) {
        let p = Arc::try_unwrap(self.pattern).unwrap_or_else(|a| (*a).clone());
        (p.nmajor, p.nminor, p.ptr, p.idx, self.vals)
    }

    /// Bytes of the CSR arrays (row pointers, column indices, values).
    pub fn bytes(&self) -> usize {
        O::BYTES * (self.nrows() + 1) + 4 * self.nnz() + T::BYTES * self.nnz()
    }

    /// The same matrix with row offsets of type `P` (a copy of the arrays): widening always
    /// works, narrowing to `u32` only for nnz ≤ 2^31−1 ([`crate::Error::TooLarge`] otherwise).
    ///
    /// ```
    /// let a = spmvkit::gen::generate_f64("poisson2d:4")?;
    /// let wide = a.with_offsets::<u64>()?;
    /// assert_eq!(wide.row_ptr()[16], a.nnz() as u64);
    /// assert_eq!(wide.with_offsets::<u32>()?, a);
    /// # Ok::<(), spmvkit::Error>(())
    /// ```
    pub fn with_offsets<P: Offset>(&self) -> Result<Csr<T, P>> {
        crate::error::check_nnz(P::WIDTH, self.nnz() as u64)?;
        let ptr = crate::memory::try_vec("the row pointers", self.nrows() + 1, P::default())?;
        let mut ptr = ptr;
        ptr.par_iter_mut()
            .zip(self.row_ptr().par_iter())
            .for_each(|(p, &o)| *p = P::from_u64(o.to_usize() as u64));
        Ok(Csr::from_parts_unchecked(
            self.nrows(),
            self.ncols(),
            ptr,
            self.col_idx().to_vec(),
            self.vals.clone(),
        ))
    }

    /// The matrix as what it is: 32-bit or 64-bit offsets (for code that takes either, such as
    /// [`crate::Plan::new`]).
    pub fn by_width(&self) -> CsrOfWidth<'_, T> {
        let any: &dyn std::any::Any = self;
        match (
            any.downcast_ref::<Csr<T>>(),
            any.downcast_ref::<Csr<T, u64>>(),
        ) {
            (Some(a), _) => CsrOfWidth::W32(a),
            (None, Some(a)) => CsrOfWidth::W64(a),
            (None, None) => unreachable!("Offset is sealed: u32 or u64"),
        }
    }
}

impl<T: Scalar> Csr<T> {
    /// The n×n identity.
    pub fn identity(n: usize) -> Result<Self> {
        check_dims(n, n, n)?;
        let ptr: Vec<Idx> = (0..=n as Idx).collect();
        let idx: Vec<Idx> = (0..n as Idx).collect();
        Ok(Self::from_parts_unchecked(
            n,
            n,
            ptr,
            idx,
            vec![T::one(); n],
        ))
    }

    /// Rows `rows` as a `rows.len() × ncols` matrix (column indices unchanged): one rank's
    /// share of a row-partitioned matrix (issue #26). Rows outside the matrix are an error.
    pub fn slice_rows(&self, rows: std::ops::Range<usize>) -> Result<Csr<T>> {
        if rows.start > rows.end || rows.end > self.nrows() {
            return Err(Error::InvalidArgument(format!(
                "rows {}..{} of a matrix of {} rows",
                rows.start,
                rows.end,
                self.nrows()
            )));
        }
        let ptr = self.row_ptr();
        let (lo, hi) = (ptr[rows.start] as usize, ptr[rows.end] as usize);
        let local: Vec<Idx> = ptr[rows.start..=rows.end]
            .iter()
            .map(|&p| p - ptr[rows.start])
            .collect();
        Ok(Csr::from_parts_unchecked(
            rows.len(),
            self.ncols(),
            local,
            self.col_idx()[lo..hi].to_vec(),
            self.vals[lo..hi].to_vec(),
        ))
    }

    /// The transpose as CSC of the same matrix (columns compressed).
    pub fn to_csc(&self) -> Csc<T> {
        let (ptr, idx, vals) = self.transposed_arrays();
        Csc::from_parts_unchecked(self.nrows(), self.ncols(), ptr, idx, vals)
    }

    /// The matrix transpose Aᵀ as CSR.
    pub fn transpose(&self) -> Csr<T> {
        let (ptr, idx, vals) = self.transposed_arrays();
        Csr::from_parts_unchecked(self.ncols(), self.nrows(), ptr, idx, vals)
    }

    /// The arrays of Aᵀ as CSR, which are those of A as CSC: (pointers over the columns, row
    /// indices, values).
    fn transposed_arrays(&self) -> (Vec<Idx>, Vec<Idx>, Vec<T>) {
        transpose_arrays(
            self.nrows(),
            self.ncols(),
            self.row_ptr(),
            self.col_idx(),
            &self.vals,
        )
    }

    /// COO triplets in row-major order.
    pub fn to_coo(&self) -> Coo<T> {
        let mut rows = Vec::with_capacity(self.nnz());
        for i in 0..self.nrows() {
            rows.extend(std::iter::repeat_n(i as Idx, self.row_len(i)));
        }
        Coo::from_parts_unchecked(
            self.nrows(),
            self.ncols(),
            rows,
            self.col_idx().to_vec(),
            self.vals.clone(),
        )
    }
}

impl<T: Scalar> From<&Csc<T>> for Csr<T> {
    fn from(c: &Csc<T>) -> Self {
        c.to_csr()
    }
}

/// Transposes compressed arrays: major/minor swap (CSR of A → CSR of Aᵀ = CSC of A).
/// A counting sort, so indices come out sorted.
pub(crate) fn transpose_arrays<T: Copy + Default>(
    nmajor: usize,
    nminor: usize,
    ptr: &[Idx],
    idx: &[Idx],
    vals: &[T],
) -> (Vec<Idx>, Vec<Idx>, Vec<T>) {
    let nnz = idx.len();
    let mut counts = vec![0u32; nminor];
    for &c in idx {
        counts[c as usize] += 1;
    }
    let tptr = super::counts_to_ptr(&counts);
    let mut next: Vec<u32> = tptr[..nminor].to_vec();
    let mut tidx = vec![0 as Idx; nnz];
    let mut tvals = vec![T::default(); nnz];
    for i in 0..nmajor {
        for k in ptr[i] as usize..ptr[i + 1] as usize {
            let c = idx[k] as usize;
            let dst = next[c] as usize;
            next[c] += 1;
            tidx[dst] = i as Idx;
            tvals[dst] = vals[k];
        }
    }
    (tptr, tidx, tvals)
}
