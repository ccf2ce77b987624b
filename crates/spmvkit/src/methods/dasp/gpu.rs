//! Upload and launch of `dasp_spmv` (kernel.cu): one launch of 128-thread CTAs; a warp per part
//! of a long row, per row-block group, per `short_tiles_per_warp` short tiles, then warps writing
//! βy to the empty rows; then, only when there are long rows, `dasp_long_sum` (a warp per long
//! row). The part sums (one value per part) are allocated at upload.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};

use super::{DaspLayout, KERNEL};
use crate::error::{Error, Result};
use crate::gpu::{grid_dim, kernel_int, Gpu};
use crate::methods::{DeviceLayout, Layout};
use crate::scalar::{Idx, Scalar};

const THREADS: u32 = 128;
const EMPTY_WARPS_MAX: usize = 1024;

pub(super) struct DeviceDasp<T: Scalar> {
    func: CudaFunction,
    long_sum: CudaFunction,
    nrows: usize,
    ncols: usize,
    nlong: usize,
    nparts: usize,
    ngroups: usize,
    nshort: usize,
    spw: usize,
    nempty: usize,
    long_rows: CudaSlice<Idx>,
    part_start: CudaSlice<Idx>,
    part_end: CudaSlice<Idx>,
    part_ptr: CudaSlice<Idx>,
    long_part: CudaSlice<T>,
    long_cols: CudaSlice<Idx>,
    long_vals: CudaSlice<T>,
    blk_rows: CudaSlice<i32>,
    blk_slab_ptr: CudaSlice<Idx>,
    blk_cols: CudaSlice<Idx>,
    blk_vals: CudaSlice<T>,
    irr_ptr: CudaSlice<Idx>,
    irr_cols: CudaSlice<Idx>,
    irr_vals: CudaSlice<T>,
    short_row1: CudaSlice<i32>,
    short_row2: CudaSlice<i32>,
    short_split: CudaSlice<i32>,
    short_cols: CudaSlice<Idx>,
    short_vals: CudaSlice<T>,
    empty_rows: CudaSlice<Idx>,
    bytes: usize,
}

pub(super) fn upload<T: Scalar>(
    l: &DaspLayout<T>,
    gpu: &Arc<Gpu>,
) -> Result<Box<dyn DeviceLayout<T>>> {
    Ok(Box::new(DeviceDasp {
        func: gpu.function::<T>(&KERNEL, "dasp_spmv")?,
        long_sum: gpu.function::<T>(&KERNEL, "dasp_long_sum")?,
        nrows: l.nrows,
        ncols: l.ncols,
        nlong: l.long_rows.len(),
        nparts: l.part_start.len(),
        ngroups: l.ngroups(),
        nshort: l.nshort_tiles(),
        spw: l.short_per_warp,
        nempty: l.empty_rows.len(),
        long_rows: gpu.upload(&l.long_rows)?,
        part_start: gpu.upload(&l.part_start)?,
        part_end: gpu.upload(&l.part_end)?,
        part_ptr: gpu.upload(&l.part_ptr)?,
        long_part: gpu.alloc_zeros::<T>(l.part_start.len())?,
        long_cols: gpu.upload(&l.long_cols)?,
        long_vals: gpu.upload(&l.long_vals)?,
        blk_rows: gpu.upload(&l.blk_rows)?,
        blk_slab_ptr: gpu.upload(&l.blk_slab_ptr)?,
        blk_cols: gpu.upload(&l.blk_cols)?,
        blk_vals: gpu.upload(&l.blk_vals)?,
        irr_ptr: gpu.upload(&l.irr_ptr)?,
        irr_cols: gpu.upload(&l.irr_cols)?,
        irr_vals: gpu.upload(&l.irr_vals)?,
        short_row1: gpu.upload(&l.short_row1)?,
        short_row2: gpu.upload(&l.short_row2)?,
        short_split: gpu.upload(&l.short_split)?,
        short_cols: gpu.upload(&l.short_cols)?,
        short_vals: gpu.upload(&l.short_vals)?,
        empty_rows: gpu.upload(&l.empty_rows)?,
        bytes: l.footprint_bytes(),
    }))
}

impl<T: Scalar> DeviceLayout<T> for DeviceDasp<T> {
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
        let short_warps = self.nshort.div_ceil(self.spw);
        let empty_warps = self.nempty.div_ceil(32).min(EMPTY_WARPS_MAX);
        let warps = self.nparts + self.ngroups + short_warps + empty_warps;
        if warps == 0 {
            return Ok(());
        }
        let cfg = LaunchConfig {
            grid_dim: (
                grid_dim("dasp blocks", warps.div_ceil((THREADS / 32) as usize))?,
                1,
                1,
            ),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let (nparts, ngroups, nshort, spw, nempty) = (
            kernel_int("dasp long-row parts", self.nparts)?,
            kernel_int("dasp row-block groups", self.ngroups)?,
            kernel_int("dasp short tiles", self.nshort)?,
            kernel_int("dasp short tiles per warp", self.spw)?,
            kernel_int("dasp empty rows", self.nempty)?,
        );
        let mut b = gpu.stream().launch_builder(&self.func);
        b.arg(&nparts)
            .arg(&self.part_start)
            .arg(&self.part_end)
            .arg(&self.long_cols)
            .arg(&self.long_vals)
            .arg(&self.long_part)
            .arg(&ngroups)
            .arg(&self.blk_rows)
            .arg(&self.blk_slab_ptr)
            .arg(&self.blk_cols)
            .arg(&self.blk_vals)
            .arg(&self.irr_ptr)
            .arg(&self.irr_cols)
            .arg(&self.irr_vals)
            .arg(&nshort)
            .arg(&spw)
            .arg(&self.short_row1)
            .arg(&self.short_row2)
            .arg(&self.short_split)
            .arg(&self.short_cols)
            .arg(&self.short_vals)
            .arg(&nempty)
            .arg(&self.empty_rows)
            .arg(x)
            .arg(&mut *y)
            .arg(&alpha)
            .arg(&beta);
        // SAFETY: the arguments match dasp_spmv in kernel.cu; every array has the length the
        // layout builder gave it; rows index y and columns x in range (checked by
        // DeviceLayout::run).
        unsafe { b.launch(cfg) }.map_err(|e| Error::cuda("dasp launch", e))?;
        if self.nlong == 0 {
            return Ok(());
        }
        let cfg = LaunchConfig {
            grid_dim: (
                grid_dim(
                    "dasp long-sum blocks",
                    self.nlong.div_ceil((THREADS / 32) as usize),
                )?,
                1,
                1,
            ),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let nlong = kernel_int("dasp long rows", self.nlong)?;
        let mut b = gpu.stream().launch_builder(&self.long_sum);
        b.arg(&nlong)
            .arg(&self.long_rows)
            .arg(&self.part_ptr)
            .arg(&self.long_part)
            .arg(y)
            .arg(&alpha)
            .arg(&beta);
        // SAFETY: the arguments match dasp_long_sum; part_ptr has nlong + 1 entries indexing
        // long_part; long rows index y in range.
        unsafe { b.launch(cfg) }.map_err(|e| Error::cuda("dasp long-sum launch", e))?;
        Ok(())
    }

    fn footprint_bytes(&self) -> usize {
        self.bytes
    }
}
