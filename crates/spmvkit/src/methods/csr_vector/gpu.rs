//! Upload and launch of `csr_vector` (kernel.cu): one warp per row, `threads` per block, one
//! block per `threads / 32` rows (the hardware block scheduler balances rows of unequal length;
//! the kernel also strides, so any grid is correct). No launch when there are no rows.

use std::sync::Arc;

use cudarc::driver::CudaSlice;

use super::{CsrVectorLayout, KERNEL};
use crate::error::Result;
use crate::gpu::{kernel_int, DevMut, DevRef, Gpu, Kernel, Shape};
use crate::methods::DeviceLayout;
use crate::scalar::{Idx, Scalar};

crate::kernel_args! {
    /// `csr_vector`'s arguments.
    pub(super) struct CsrVectorArgs<'a, T> {
        nrows: i32,
        row_ptr: DevRef<'a, Idx>,
        col_idx: DevRef<'a, Idx>,
        vals: DevRef<'a, T>,
        x: DevRef<'a, T>,
        y: DevMut<'a, T>,
        alpha: T,
        beta: T,
    }
}

/// The device copy of a csr-vector layout.
pub(super) struct DeviceCsrVector<T: Scalar> {
    k: Kernel<CsrVectorArgs<'static, T>>,
    nrows: usize,
    ncols: usize,
    threads: u32,
    row_ptr: CudaSlice<Idx>,
    col_idx: CudaSlice<Idx>,
    vals: CudaSlice<T>,
    bytes: usize,
}

pub(super) fn upload<T: Scalar>(
    l: &CsrVectorLayout<T>,
    gpu: &Arc<Gpu>,
) -> Result<Box<dyn DeviceLayout<T>>> {
    Ok(Box::new(DeviceCsrVector {
        k: gpu.kernel::<T, _>(&KERNEL, "csr_vector")?,
        nrows: l.a.nrows(),
        ncols: l.a.ncols(),
        threads: l.threads,
        row_ptr: gpu.upload(l.a.row_ptr())?,
        col_idx: gpu.upload(l.a.col_idx())?,
        vals: gpu.upload(l.a.vals())?,
        bytes: l.a.bytes(),
    }))
}

impl<T: Scalar> DeviceLayout<T> for DeviceCsrVector<T> {
    fn dims(&self) -> (usize, usize) {
        (self.nrows, self.ncols)
    }

    unsafe fn run_unchecked(
        &self,
        gpu: &Gpu,
        alpha: T,
        x: &CudaSlice<T>,
        beta: T,
        y: &mut CudaSlice<T>,
    ) -> Result<()> {
        let args = CsrVectorArgs {
            nrows: kernel_int("csr-vector nrows", self.nrows)?,
            row_ptr: DevRef::new(&self.row_ptr),
            col_idx: DevRef::new(&self.col_idx),
            vals: DevRef::new(&self.vals),
            x: DevRef::new(x),
            y: DevMut::new(y),
            alpha,
            beta,
        };
        // SAFETY: row_ptr has nrows + 1 entries, col_idx and vals nnz (a validated Csr), x ncols
        // and y nrows (checked by DeviceLayout::run).
        unsafe {
            gpu.launch(
                &self.k,
                Shape::warp_per_item(self.nrows, self.threads),
                &args,
            )
        }
    }

    fn footprint_bytes(&self) -> usize {
        self.bytes
    }
}
