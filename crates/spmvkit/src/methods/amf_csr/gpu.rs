//! Upload and launch of `amf_csr_t{TPV}` (kernel.cu): one CTA of `threads` per block, one launch
//! per call, no launch when there are no blocks (no rows).

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};

use super::{AmfLayout, KERNEL};
use crate::error::{Error, Result};
use crate::gpu::{grid_dim, Gpu};
use crate::methods::{DeviceLayout, Layout};
use crate::scalar::{Idx, Scalar};

/// The device copy of an AMF-CSR layout.
pub(super) struct DeviceAmf<T: Scalar> {
    func: CudaFunction,
    nrows: usize,
    ncols: usize,
    nblocks: usize,
    threads: u32,
    long: i32,
    blk_fold: CudaSlice<Idx>,
    fold_row: CudaSlice<Idx>,
    fold_ptr: CudaSlice<Idx>,
    cols: CudaSlice<Idx>,
    vals: CudaSlice<T>,
    bytes: usize,
}

pub(super) fn upload<T: Scalar>(
    l: &AmfLayout<T>,
    gpu: &Arc<Gpu>,
) -> Result<Box<dyn DeviceLayout<T>>> {
    let func = gpu.function::<T>(&KERNEL, &format!("amf_csr_t{}", l.tpv))?;
    Ok(Box::new(DeviceAmf {
        func,
        nrows: l.nrows,
        ncols: l.ncols,
        nblocks: l.nblocks(),
        threads: l.threads,
        long: l.long.min(i32::MAX as u32) as i32,
        blk_fold: gpu.upload(&l.blk_fold)?,
        fold_row: gpu.upload(&l.fold_row)?,
        fold_ptr: gpu.upload(&l.fold_ptr)?,
        cols: gpu.upload(&l.cols)?,
        vals: gpu.upload(&l.vals)?,
        bytes: Layout::<T>::footprint_bytes(l),
    }))
}

impl<T: Scalar> DeviceLayout<T> for DeviceAmf<T> {
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
        if self.nblocks == 0 {
            return Ok(());
        }
        let cfg = LaunchConfig {
            grid_dim: (grid_dim("amf-csr blocks", self.nblocks)?, 1, 1),
            block_dim: (self.threads, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = gpu.stream().launch_builder(&self.func);
        b.arg(&self.blk_fold)
            .arg(&self.fold_row)
            .arg(&self.fold_ptr)
            .arg(&self.cols)
            .arg(&self.vals)
            .arg(x)
            .arg(y)
            .arg(&alpha)
            .arg(&beta)
            .arg(&self.long);
        // SAFETY: the arguments match amf_csr_t{TPV} in kernel.cu; blk_fold has blocks + 1
        // entries, fold_row and fold_ptr folds + 1, cols and vals nnz (packed columns < ncols),
        // x ncols and y nrows (checked by DeviceLayout::run); threads is a multiple of 32 and
        // of TPV.
        unsafe { b.launch(cfg) }.map_err(|e| Error::cuda("amf-csr launch", e))?;
        Ok(())
    }

    fn footprint_bytes(&self) -> usize {
        self.bytes
    }
}
