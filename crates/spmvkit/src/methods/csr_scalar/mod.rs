//! `csr-scalar`: the classic scalar CSR kernel, one GPU thread per row (Bell & Garland, SC'09,
//! "CSR (scalar)"; the simplest baseline of issue #3). Its layout is the CSR matrix itself; each
//! thread sums its row left to right with fused multiply-adds, so the result is deterministic and
//! the CPU mirror (`cpu.rs`) reproduces it bit for bit. It takes 64-bit row offsets (issue #25,
//! docs/offsets.md): the layout is generic over them, the kernel compiled for their width.

mod cpu;
mod gpu;

pub(crate) use gpu::from_device;

use crate::matrix::Csr;
use crate::methods::common::csr::CsrArgs;
use crate::methods::common::room::{forward, method, room_kernel};
use crate::methods::Layout;
use crate::scalar::{Idx, Offset, Scalar, ValueStorage};

room_kernel!("csr-scalar", [CsrArgs::entry("csr_scalar")]);

method! {
    /// The registry entry of `csr-scalar`.
    pub struct CsrScalar {
        name: "csr-scalar",
        summary: "GPU: one thread per CSR row (scalar CSR kernel)",
        source: "Bell & Garland, SC'09, CSR (scalar) kernel",
        deterministic: true,
        values: &ValueStorage::NARROW,
        offsets64: true,
    }
    fn prepare(csr, params) {
        let values = crate::methods::common::stored::storage_of(params)?;
        Ok(Box::new(CsrScalarLayout { a: csr.clone(), values }))
    }
}

/// The layout of `csr-scalar`: the matrix as given (row offsets of type `O`), its values stored
/// as `values` on the device (docs/precision.md).
pub struct CsrScalarLayout<T, O: Offset = Idx> {
    a: Csr<T, O>,
    values: ValueStorage,
}

impl<T: Scalar, O: Offset> Layout<T> for CsrScalarLayout<T, O> {
    forward! { values_mut of a, footprint_bytes of a, run_cpu of a, upload }
}

#[cfg(test)]
mod tests;
