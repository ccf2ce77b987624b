//! Upload and launch of `csr-scalar`: the CSR arrays on the device, one thread per row in blocks
//! of 256, one launch per call.

use std::sync::Arc;

use cudarc::driver::CudaSlice;

use super::KERNEL;
use crate::error::Result;
use crate::gpu::{kernel_int, DevMut, DevRef, Gpu, Kernel, Shape};
use crate::matrix::Csr;
use crate::methods::DeviceLayout;
use crate::scalar::Scalar;

const BLOCK: u32 = 256;

crate::kernel_args! {
    /// `csr_scalar`'s arguments.
    pub(super) struct CsrScalarArgs<'a, T> {
        nrows: i32,
        row_ptr: DevRef<'a, u32>,
        col_idx: DevRef<'a, u32>,
        vals: DevRef<'a, T>,
        x: DevRef<'a, T>,
        y: DevMut<'a, T>,
        alpha: T,
        beta: T,
    }
}

/// `csr-scalar` resident on the GPU.
pub(super) struct CsrScalarDevice<T: Scalar> {
    k: Kernel<CsrScalarArgs<'static, T>>,
    nrows: usize,
    ncols: usize,
    row_ptr: CudaSlice<u32>,
    col_idx: CudaSlice<u32>,
    vals: CudaSlice<T>,
}

impl<T: Scalar> CsrScalarDevice<T> {
    /// Compiles the kernel first, so an NVRTC failure leaves nothing allocated, then uploads.
    pub(super) fn upload(gpu: &Arc<Gpu>, a: &Csr<T>) -> Result<Self> {
        Ok(CsrScalarDevice {
            k: gpu.kernel::<T, _>(&KERNEL, "csr_scalar")?,
            nrows: a.nrows(),
            ncols: a.ncols(),
            row_ptr: gpu.upload(a.row_ptr())?,
            col_idx: gpu.upload(a.col_idx())?,
            vals: gpu.upload(a.vals())?,
        })
    }
}

impl<T: Scalar> DeviceLayout<T> for CsrScalarDevice<T> {
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
        let args = CsrScalarArgs {
            nrows: kernel_int("csr-scalar nrows", self.nrows)?,
            row_ptr: DevRef::new(&self.row_ptr),
            col_idx: DevRef::new(&self.col_idx),
            vals: DevRef::new(&self.vals),
            x: DevRef::new(x),
            y: DevMut::new(y),
            alpha,
            beta,
        };
        // SAFETY: x and y are long enough (checked by DeviceLayout::run) and the CSR arrays were
        // validated when the Csr was built.
        unsafe { gpu.launch(&self.k, Shape::thread_per_item(self.nrows, BLOCK), &args) }
    }

    fn footprint_bytes(&self) -> usize {
        self.row_ptr.num_bytes() + self.col_idx.num_bytes() + self.vals.num_bytes()
    }
}
