//! Upload and launch of `csr-scalar`: the CSR arrays on the device, one thread per row in blocks
//! of 256, one launch per call.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};

use super::KERNEL;
use crate::error::{Error, Result};
use crate::gpu::{kernel_int, Gpu};
use crate::matrix::Csr;
use crate::methods::DeviceLayout;
use crate::scalar::Scalar;

const BLOCK: u32 = 256;

/// `csr-scalar` resident on the GPU.
pub(super) struct CsrScalarDevice<T> {
    f: CudaFunction,
    nrows: usize,
    ncols: usize,
    row_ptr: CudaSlice<u32>,
    col_idx: CudaSlice<u32>,
    vals: CudaSlice<T>,
}

impl<T: Scalar> CsrScalarDevice<T> {
    /// Compiles the kernel first, so an NVRTC failure leaves nothing allocated, then uploads.
    pub(super) fn upload(gpu: &Arc<Gpu>, a: &Csr<T>) -> Result<Self> {
        let f = gpu.function::<T>(&KERNEL, "csr_scalar")?;
        Ok(CsrScalarDevice {
            f,
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
        if self.nrows == 0 {
            return Ok(());
        }
        let nrows = kernel_int("csr-scalar nrows", self.nrows)?;
        let cfg = LaunchConfig {
            grid_dim: ((nrows as u32).div_ceil(BLOCK), 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = gpu.stream().launch_builder(&self.f);
        b.arg(&nrows)
            .arg(&self.row_ptr)
            .arg(&self.col_idx)
            .arg(&self.vals)
            .arg(x)
            .arg(y)
            .arg(&alpha)
            .arg(&beta);
        // SAFETY: argument list matches csr_scalar's signature; x and y are long enough (checked
        // by DeviceLayout::run) and the CSR arrays were validated when the Csr was built.
        unsafe { b.launch(cfg) }
            .map(|_| ())
            .map_err(|e| Error::cuda("csr-scalar launch", e))
    }

    fn footprint_bytes(&self) -> usize {
        self.row_ptr.num_bytes() + self.col_idx.num_bytes() + self.vals.num_bytes()
    }
}
