//! Upload and launch of `csc_scale_y` + `csc_atomic` (kernel.cu). The scaling kernel runs first
//! on every call with rows (a grid-stride loop over at most `sm_count · 8` blocks of 256); the
//! atomic kernel then runs one warp per column, `threads / 32` columns per block, when there is
//! anything to add (stream order puts every atomic after the scaling).

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};

use super::{CscLayout, KERNEL};
use crate::error::{Error, Result};
use crate::gpu::{kernel_int, Gpu};
use crate::methods::DeviceLayout;
use crate::scalar::{Idx, Scalar};

/// Threads per block of the scaling kernel.
const SCALE_THREADS: u32 = 256;

/// The device copy of a csc layout.
pub(super) struct DeviceCsc<T: Scalar> {
    scale: CudaFunction,
    atomic: CudaFunction,
    nrows: usize,
    ncols: usize,
    nnz: usize,
    threads: u32,
    col_ptr: CudaSlice<Idx>,
    row_idx: CudaSlice<Idx>,
    vals: CudaSlice<T>,
    bytes: usize,
}

pub(super) fn upload<T: Scalar>(
    l: &CscLayout<T>,
    gpu: &Arc<Gpu>,
) -> Result<Box<dyn DeviceLayout<T>>> {
    Ok(Box::new(DeviceCsc {
        scale: gpu.function::<T>(&KERNEL, "csc_scale_y")?,
        atomic: gpu.function::<T>(&KERNEL, "csc_atomic")?,
        nrows: l.a.nrows(),
        ncols: l.a.ncols(),
        nnz: l.a.nnz(),
        threads: l.threads,
        col_ptr: gpu.upload(l.a.col_ptr())?,
        row_idx: gpu.upload(l.a.row_idx())?,
        vals: gpu.upload(l.a.vals())?,
        bytes: l.bytes(),
    }))
}

impl<T: Scalar> DeviceLayout<T> for DeviceCsc<T> {
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
        let n = kernel_int("csc nrows", self.nrows)?;
        let blocks = self
            .nrows
            .div_ceil(SCALE_THREADS as usize)
            .min(gpu.sm_count().max(1) * 8) as u32;
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (SCALE_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = gpu.stream().launch_builder(&self.scale);
        b.arg(&n).arg(&mut *y).arg(&beta);
        // SAFETY: matches csc_scale_y(int, real_t*, real_t); y has nrows entries (checked by
        // DeviceLayout::run).
        unsafe { b.launch(cfg) }.map_err(|e| Error::cuda("csc scale-y launch", e))?;

        if self.nnz == 0 {
            return Ok(());
        }
        let warps = (self.threads / 32) as usize;
        let blocks = self.ncols.div_ceil(warps).min(i32::MAX as usize) as u32;
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (self.threads, 1, 1),
            shared_mem_bytes: 0,
        };
        let ncols = kernel_int("csc ncols", self.ncols)?;
        let mut b = gpu.stream().launch_builder(&self.atomic);
        b.arg(&ncols)
            .arg(&self.col_ptr)
            .arg(&self.row_idx)
            .arg(&self.vals)
            .arg(x)
            .arg(y)
            .arg(&alpha);
        // SAFETY: matches csc_atomic in kernel.cu; col_ptr has ncols + 1 entries, row_idx and
        // vals nnz, row indices < nrows <= len(y), x has at least ncols entries (checked by
        // DeviceLayout::run).
        unsafe { b.launch(cfg) }.map_err(|e| Error::cuda("csc atomic launch", e))?;
        Ok(())
    }

    fn footprint_bytes(&self) -> usize {
        self.bytes
    }
}
