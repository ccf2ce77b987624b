//! Upload and launch of `csr_vector` (kernel.cu): one warp per row, `threads` per block, one
//! block per `threads / 32` rows (the hardware block scheduler balances rows of unequal length;
//! the kernel also strides, so any grid is correct). No launch when there are no rows.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};

use super::{CsrVectorLayout, KERNEL};
use crate::error::{Error, Result};
use crate::gpu::{kernel_int, Gpu};
use crate::methods::DeviceLayout;
use crate::scalar::{Idx, Scalar};

/// The device copy of a csr-vector layout.
pub(super) struct DeviceCsrVector<T: Scalar> {
    func: CudaFunction,
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
    let func = gpu.function::<T>(&KERNEL, "csr_vector")?;
    Ok(Box::new(DeviceCsrVector {
        func,
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
        if self.nrows == 0 {
            return Ok(());
        }
        let warps = (self.threads / 32) as usize;
        let blocks = self.nrows.div_ceil(warps).min(i32::MAX as usize) as u32;
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (self.threads, 1, 1),
            shared_mem_bytes: 0,
        };
        let nrows = kernel_int("csr-vector nrows", self.nrows)?;
        let mut b = gpu.stream().launch_builder(&self.func);
        b.arg(&nrows)
            .arg(&self.row_ptr)
            .arg(&self.col_idx)
            .arg(&self.vals)
            .arg(x)
            .arg(y)
            .arg(&alpha)
            .arg(&beta);
        // SAFETY: the arguments match csr_vector's signature in kernel.cu; row_ptr has nrows + 1
        // entries, col_idx and vals nnz, x ncols and y nrows (checked by DeviceLayout::run).
        unsafe { b.launch(cfg) }.map_err(|e| Error::cuda("csr-vector launch", e))?;
        Ok(())
    }

    fn footprint_bytes(&self) -> usize {
        self.bytes
    }
}
