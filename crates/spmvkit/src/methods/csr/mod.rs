//! `csr`: the rayon CSR SpMV with an nnz-balanced row split (spmvkit's CPU production path; no
//! paper). Its layout is the CSR matrix itself.

use crate::cpu::par_csr_spmv;
use crate::error::Result;
use crate::matrix::Csr;
use crate::methods::common::room::{forward, method};
use crate::methods::Layout;
use crate::methods::spmm::{MultiKernel, MultiSource, SpmmTune};
use crate::scalar::Scalar;

method! {
    /// The registry entry of `csr`.
    pub struct CsrRayon {
        name: "csr",
        summary: "CPU: rayon CSR SpMV over nnz-balanced row chunks",
        source: "spmvkit (CPU production path)",
        deterministic: true,
        gpu: false,
        // on the CPU the values stay widened to the vectors' precision (docs/precision.md)
        values: &crate::scalar::ValueStorage::NARROW,
    }
    fn prepare(csr, _params) {
        Ok(Box::new(CsrLayout { a: csr.clone() }))
    }
}

/// The layout of `csr`: the matrix as given.
pub struct CsrLayout<T> {
    a: Csr<T>,
}

impl<T: Scalar> Layout<T> for CsrLayout<T> {
    forward! { values_mut of a, footprint_bytes of a }

    fn run_cpu(&self, alpha: T, x: &[T], beta: T, y: &mut [T]) -> Result<()> {
        par_csr_spmv(&self.a, alpha, x, beta, y);
        Ok(())
    }
    fn multi(&self) -> Option<MultiSource<'_, T>> {
        Some(MultiSource {
            kernel: MultiKernel::RowSplit,
            a: &self.a,
            tune: SpmmTune::default(),
            deterministic: false,
        })
    }
}

#[cfg(test)]
mod tests;
