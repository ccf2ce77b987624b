//! `cusparse-bsr`: NVIDIA cuSPARSE SpMV on a BSR matrix (`cusparse<S|D>bsrmv`), the baseline
//! CB-SpMV (Cong et al., ICS'25) compares against. The CSR matrix is converted to BSR on the
//! host (rayon over block rows; blocks row-major inside, `CUSPARSE_DIRECTION_ROW`), with the
//! block size a parameter (default 4; the issue asks for 4 and 16).
//!
//! API choice: the generic `cusparseSpMV` takes CSR, CSC, COO and sliced ELL but not BSR, so the
//! legacy `bsrmv` (still shipped in cuSPARSE 12.x/13.0) is the BSR SpMV cuSPARSE offers. It is
//! looked up in the loaded library by name; where it is missing the method reports itself
//! unsupported instead of failing. `bsrmv` needs x of nb·b and y of mb·b elements (whole
//! blocks). The device layout says so through `DeviceLayout::padded_dims`, and a [`Plan`]
//! allocates its own device x and y that long (x's padding zero), so calls on the plan's vectors
//! (`Plan::apply`, the benchmark's timed calls) run `bsrmv` in place with no copy. Device vectors
//! of only the logical length (a caller's own, through `Plan::apply_device`) still work when a
//! dimension is not a multiple of b: the call then copies x into a zero-padded scratch vector
//! (and y too when β ≠ 0), runs `bsrmv` on the scratch and copies the rows back, all on the
//! stream (two or three device copies per call). A longer vector is used in place: its entries
//! past the logical length up to whole blocks take part (x's meet zero matrix entries, y's are
//! overwritten).
//!
//! [`Plan`]: crate::Plan
//!
//! The CPU mirror walks the BSR arrays (block row by block row, each row of a block over its
//! blocks in order), so the conversion is checked without a GPU. Determinism: cuSPARSE does not
//! document bsrmv as bitwise reproducible, so none is claimed.

mod gpu;

use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::matrix::Csr;
use crate::methods::common::room::{forward, method};
use crate::methods::params::params;
use crate::methods::Layout;
use crate::scalar::{Idx, Scalar};

const NAME: &str = "cusparse-bsr";

params! {
    /// The parameters of `cusparse-bsr`.
    struct BsrParams {
        /// BSR block size b (2..=32; cuSPARSE bsrmv needs b > 1)
        block: usize = 4, in 2..=32;
    }
}

method! {
    /// The registry entry of `cusparse-bsr`.
    pub struct CusparseBsr {
        name: NAME,
        summary: "GPU: cuSPARSE bsrmv on BSR (b x b blocks, row-major) converted from CSR on \
                  the host; a Plan's own x/y are padded to whole blocks (no copy per call), \
                  caller device vectors of the logical length go through 2-3 scratch \
                  copies per call when the shape is not a multiple of b",
        source: "NVIDIA cuSPARSE legacy API (cusparse<t>bsrmv), CB-SpMV's baseline (ICS'25)",
        deterministic: false,
    }
    fn prepare(csr, p: BsrParams) {
        Ok(Box::new(BsrLayout::build(csr, p.block)?))
    }
}

/// A BSR matrix: `mb` block rows, `nb` block columns, blocks of b×b stored row-major.
pub struct BsrLayout<T> {
    pub(crate) nrows: usize,
    pub(crate) ncols: usize,
    pub(crate) b: usize,
    pub(crate) mb: usize,
    pub(crate) nb: usize,
    pub(crate) row_ptr: Vec<Idx>,
    pub(crate) col_idx: Vec<Idx>,
    pub(crate) vals: Vec<T>,
    stages: Vec<(&'static str, Duration)>,
}

impl<T: Scalar> BsrLayout<T> {
    /// Converts `a` to BSR, or refuses (MethodUnsupported) when the stored values would not
    /// fit the 32-bit indexing of the legacy API (nnzb·b² < 2^31), before allocating them.
    pub(crate) fn build(a: &Csr<T>, b: usize) -> Result<Self> {
        let t0 = Instant::now();
        let (nrows, ncols) = (a.nrows(), a.ncols());
        let (mb, nb) = (nrows.div_ceil(b), ncols.div_ceil(b));
        let rp = a.row_ptr();
        let rows = |br: usize| {
            let r0 = br * b;
            (r0, (r0 + b).min(nrows))
        };
        // pass 1: the sorted block columns of each block row
        let bcols: Vec<Vec<Idx>> = (0..mb)
            .into_par_iter()
            .map(|br| {
                let (r0, r1) = rows(br);
                let mut c: Vec<Idx> = (r0..r1)
                    .flat_map(|r| {
                        let (s, e) = (rp[r] as usize, rp[r + 1] as usize);
                        a.col_idx()[s..e].iter().map(|&c| c / b as Idx)
                    })
                    .collect();
                c.sort_unstable();
                c.dedup();
                c
            })
            .collect();
        let nnzb: usize = bcols.iter().map(Vec::len).sum();
        let stored = nnzb as u128 * (b * b) as u128;
        if stored > i32::MAX as u128 {
            return Err(Error::MethodUnsupported {
                method: NAME.into(),
                reason: format!(
                    "{nnzb} blocks of {b}x{b} store {stored} values, more than the 32-bit \
                     indexing of cusparse<t>bsrmv allows"
                ),
            });
        }
        // pass 2: the dense blocks
        let vals_per_row: Vec<Vec<T>> = bcols
            .par_iter()
            .enumerate()
            .map(|(br, bc)| {
                let (r0, r1) = rows(br);
                let mut vals = vec![T::zero(); bc.len() * b * b];
                for r in r0..r1 {
                    for p in rp[r] as usize..rp[r + 1] as usize {
                        let c = a.col_idx()[p] as usize;
                        let k = bc.partition_point(|&x| (x as usize) < c / b);
                        vals[k * b * b + (r - r0) * b + c % b] += a.vals()[p];
                    }
                }
                vals
            })
            .collect();
        let mut row_ptr = Vec::with_capacity(mb + 1);
        row_ptr.push(0 as Idx);
        let mut col_idx = Vec::with_capacity(nnzb);
        let mut vals = Vec::with_capacity(nnzb * b * b);
        for (c, v) in bcols.into_iter().zip(vals_per_row) {
            col_idx.extend_from_slice(&c);
            vals.extend_from_slice(&v);
            row_ptr.push(col_idx.len() as Idx);
        }
        Ok(BsrLayout {
            nrows,
            ncols,
            b,
            mb,
            nb,
            row_ptr,
            col_idx,
            vals,
            stages: vec![("CSR to BSR (host)", t0.elapsed())],
        })
    }

    /// Stored blocks.
    pub(crate) fn nnzb(&self) -> usize {
        self.col_idx.len()
    }

    /// The vector lengths `(y, x)` bsrmv reads and writes: whole blocks, mb·b rows and nb·b
    /// columns (the device layout's `padded_dims`).
    pub(crate) fn padded_dims(&self) -> (usize, usize) {
        (self.mb * self.b, self.nb * self.b)
    }
}

impl<T: Scalar> Layout<T> for BsrLayout<T> {
    fn footprint_bytes(&self) -> usize {
        4 * (self.row_ptr.len() + self.col_idx.len()) + T::BYTES * self.vals.len()
    }

    fn run_cpu(&self, alpha: T, x: &[T], beta: T, y: &mut [T]) -> Result<()> {
        let b = self.b;
        for br in 0..self.mb {
            for i in 0..b {
                let r = br * b + i;
                if r >= self.nrows {
                    break;
                }
                let mut s = T::zero();
                for k in self.row_ptr[br] as usize..self.row_ptr[br + 1] as usize {
                    let c0 = self.col_idx[k] as usize * b;
                    for j in 0..b.min(self.ncols - c0) {
                        s = self.vals[k * b * b + i * b + j].mul_add(x[c0 + j], s);
                    }
                }
                crate::methods::common::warp::store(&mut y[r], alpha, s, beta);
            }
        }
        Ok(())
    }

    forward! { upload }

    fn prep_stages(&self) -> Vec<(&'static str, Duration)> {
        self.stages.clone()
    }

    fn notes(&self) -> Vec<(String, String)> {
        let stored = self.nnzb() * self.b * self.b;
        let nnz = self.vals.iter().filter(|v| **v != T::zero()).count();
        let mut notes = vec![
            ("block".into(), format!("{0}x{0}", self.b)),
            ("blocks".into(), self.nnzb().to_string()),
            (
                "fill (stored values per nonzero)".into(),
                format!("{:.2}", stored as f64 / nnz.max(1) as f64),
            ),
        ];
        let (py, px) = self.padded_dims();
        if (py, px) != (self.nrows, self.ncols) {
            notes.push((
                "padded vectors (x, y)".into(),
                format!(
                    "{px}, {py}: a Plan's own vectors, no copy per call; logical-length device \
                     vectors go through scratch copies"
                ),
            ));
        }
        notes
    }
}

#[cfg(test)]
mod tests;
