//! Upload and launch of `csr-scalar`: the CSR arrays on the device, one thread per row in blocks
//! of 256, one launch per call.

use std::sync::Arc;

use cudarc::driver::CudaSlice;

use super::KERNEL;
use crate::error::Result;
use crate::gpu::{Gpu, Kernel, Shape};
use crate::matrix::Csr;
use crate::methods::common::csr::{CsrArgs, DeviceCsr};
use crate::methods::DeviceLayout;
use crate::scalar::Scalar;

const BLOCK: u32 = 256;

/// `csr-scalar` resident on the GPU.
pub(super) struct CsrScalarDevice<T: Scalar> {
    k: Kernel<CsrArgs<'static, T>>,
    a: DeviceCsr<T>,
}

impl<T: Scalar> CsrScalarDevice<T> {
    /// Compiles the kernel first, so an NVRTC failure leaves nothing allocated, then uploads.
    pub(super) fn upload(gpu: &Arc<Gpu>, a: &Csr<T>) -> Result<Self> {
        Ok(CsrScalarDevice {
            k: gpu.kernel::<T, _>(&KERNEL, "csr_scalar")?,
            a: DeviceCsr::upload(gpu, a)?,
        })
    }
}

impl<T: Scalar> DeviceLayout<T> for CsrScalarDevice<T> {
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
        let args = self.a.args("csr-scalar nrows", x, y, alpha, beta)?;
        let shape = Shape::thread_per_item(self.a.dims().0, BLOCK);
        // SAFETY: x and y are long enough (checked by DeviceLayout::run) and the CSR arrays were
        // validated when the Csr was built.
        unsafe { gpu.launch(&self.k, shape, &args) }
    }

    fn footprint_bytes(&self) -> usize {
        self.a.num_bytes()
    }
}
