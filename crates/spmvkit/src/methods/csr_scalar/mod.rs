//! `csr-scalar`: the classic scalar CSR kernel, one GPU thread per row (Bell & Garland, SC'09,
//! "CSR (scalar)"; the simplest baseline of issue #3). Its layout is the CSR matrix itself; each
//! thread sums its row left to right with fused multiply-adds, so the result is deterministic and
//! the CPU mirror (`cpu.rs`) reproduces it bit for bit.

mod cpu;
mod gpu;

pub(crate) use gpu::from_device;

use crate::matrix::Csr;
use crate::methods::common::csr::CsrArgs;
use crate::methods::common::room::{forward, method, room_kernel};
use crate::methods::Layout;
use crate::scalar::{Scalar, ValueStorage};

room_kernel!("csr-scalar", [CsrArgs::entry("csr_scalar")]);

method! {
    /// The registry entry of `csr-scalar`.
    pub struct CsrScalar {
        name: "csr-scalar",
        summary: "GPU: one thread per CSR row (scalar CSR kernel)",
        source: "Bell & Garland, SC'09, CSR (scalar) kernel",
        deterministic: true,
        values: &ValueStorage::NARROW,
    }
    fn prepare(csr, params) {
        let values = crate::methods::common::stored::storage_of(params)?;
        Ok(Box::new(CsrScalarLayout { a: csr.clone(), values }))
    }
}

/// The layout of `csr-scalar`: the matrix as given, its values stored as `values` on the
/// device (docs/precision.md).
pub struct CsrScalarLayout<T> {
    a: Csr<T>,
    values: ValueStorage,
}

impl<T: Scalar> Layout<T> for CsrScalarLayout<T> {
    forward! { values_mut of a, footprint_bytes of a, run_cpu of a, upload }
}

#[cfg(test)]
mod tests;
