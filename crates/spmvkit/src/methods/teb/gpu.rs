//! Upload and launch of `teb_spmv` (`teb`) and `teb_vector_spmv` (`teb-vector`, kernel.cu): one
//! CTA of `threads` per block, one launch per call, no launch when there are no blocks (no rows).
//! The entry is chosen at upload from the layout's `long_row`; the launch path is shared, the
//! vector entry taking `long_row` as one more argument.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};

use super::{TebLayout, KERNEL};
use crate::error::{Error, Result};
use crate::gpu::{grid_dim, Gpu};
use crate::methods::{DeviceLayout, Layout};
use crate::scalar::{Idx, Scalar};

/// The device copy of a TEB layout.
pub(super) struct DeviceTeb<T: Scalar> {
    func: CudaFunction,
    /// `teb_vector_spmv`'s last argument (None: `teb_spmv`, which has no such argument).
    long_row: Option<i32>,
    nrows: usize,
    ncols: usize,
    nblocks: usize,
    threads: u32,
    blo_idx: CudaSlice<Idx>,
    row_nnz_sum: CudaSlice<Idx>,
    row_ids: CudaSlice<Idx>,
    col_idx: CudaSlice<Idx>,
    values: CudaSlice<T>,
    bytes: usize,
}

pub(super) fn upload<T: Scalar>(
    l: &TebLayout<T>,
    gpu: &Arc<Gpu>,
) -> Result<Box<dyn DeviceLayout<T>>> {
    let entry = match l.long_row {
        None => "teb_spmv",
        Some(_) => "teb_vector_spmv",
    };
    let func = gpu.function::<T>(&KERNEL, entry)?;
    // teb_vector_spmv sums long rows with the prelude's cta_gather_sum (32-bit indices)
    crate::gpu::check_int_loops("teb", l.nrows, l.values.len())?;
    Ok(Box::new(DeviceTeb {
        func,
        // parse() keeps long_row in 1..=i32::MAX
        long_row: l.long_row.map(|v| v as i32),
        nrows: l.nrows,
        ncols: l.ncols,
        nblocks: l.nblocks(),
        threads: l.threads,
        blo_idx: gpu.upload(&l.blo_idx)?,
        row_nnz_sum: gpu.upload(&l.row_nnz_sum)?,
        row_ids: gpu.upload(&l.row_ids)?,
        col_idx: gpu.upload(&l.col_idx)?,
        values: gpu.upload(&l.values)?,
        bytes: Layout::<T>::footprint_bytes(l),
    }))
}

impl<T: Scalar> DeviceLayout<T> for DeviceTeb<T> {
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
            grid_dim: (grid_dim("teb blocks", self.nblocks)?, 1, 1),
            block_dim: (self.threads, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = gpu.stream().launch_builder(&self.func);
        b.arg(&self.blo_idx)
            .arg(&self.row_nnz_sum)
            .arg(&self.row_ids)
            .arg(&self.col_idx)
            .arg(&self.values)
            .arg(x)
            .arg(y)
            .arg(&alpha)
            .arg(&beta);
        if let Some(long_row) = &self.long_row {
            b.arg(long_row);
        }
        // SAFETY: the arguments match teb_spmv in kernel.cu, plus long_row for teb_vector_spmv
        // (the entry chosen at upload from the same Option); blo_idx has nblocks + 1 entries,
        // row_nnz_sum rows + 1, row_ids rows, col_idx and values nnz (all indices in range by
        // construction), x ncols and y nrows (checked by DeviceLayout::run).
        unsafe { b.launch(cfg) }.map_err(|e| Error::cuda("teb launch", e))?;
        Ok(())
    }

    fn footprint_bytes(&self) -> usize {
        self.bytes
    }
}
