//! Upload and launch of `csr_vector` (kernel.cu): one warp per row, `threads` per block, one
//! block per `threads / 32` rows (the hardware block scheduler balances rows of unequal length;
//! the kernel also strides, so any grid is correct). No launch when there are no rows.

use std::sync::Arc;

use cudarc::driver::CudaSlice;

use super::{CsrVectorLayout, KERNEL};
use crate::error::Result;
use crate::gpu::{Gpu, Kernel, Shape};
use crate::methods::common::csr::{CsrArgs, DeviceCsr};
use crate::methods::DeviceLayout;
use crate::scalar::Scalar;

/// The device copy of a csr-vector layout.
pub(super) struct DeviceCsrVector<T: Scalar> {
    k: Kernel<CsrArgs<'static, T>>,
    threads: u32,
    a: DeviceCsr<T>,
    bytes: usize,
}

pub(super) fn upload<T: Scalar>(
    l: &CsrVectorLayout<T>,
    gpu: &Arc<Gpu>,
) -> Result<Box<dyn DeviceLayout<T>>> {
    Ok(Box::new(DeviceCsrVector {
        k: gpu.kernel::<T, _>(&KERNEL, "csr_vector")?,
        threads: l.threads,
        a: DeviceCsr::upload(gpu, &l.a)?,
        bytes: l.a.bytes(),
    }))
}

impl<T: Scalar> DeviceLayout<T> for DeviceCsrVector<T> {
    fn dims(&self) -> (usize, usize) {
        self.a.dims()
    }

    unsafe fn run_unchecked(
        &self,
        gpu: &Gpu,
        alpha: T,
        x: &CudaSlice<T>,
        beta: T,
        y: &mut CudaSlice<T>,
    ) -> Result<()> {
        let args = self.a.args("csr-vector nrows", x, y, alpha, beta)?;
        let shape = Shape::warp_per_item(self.a.dims().0, self.threads);
        // SAFETY: row_ptr has nrows + 1 entries, col_idx and vals nnz (a validated Csr), x ncols
        // and y nrows (checked by DeviceLayout::run).
        unsafe { gpu.launch(&self.k, shape, &args) }
    }

    fn footprint_bytes(&self) -> usize {
        self.bytes
    }
}
