//! Upload and launch of `merge_spmv` + `merge_fixup` (kernel.cu): one CTA of `threads` per tile
//! with `tile · sizeof(real) + (tile + 1) · 4` bytes of dynamic shared memory (≤ 48 KiB, checked
//! in `prepare`), then, when any row spans tiles, the fix-up with 256 threads per block: one
//! thread per short carry run, one warp per long run. The carry array (one value per tile) is
//! allocated at upload. No launch when the path is empty (no rows).

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};

use super::{smem_bytes, MergeLayout, KERNEL};
use crate::error::{Error, Result};
use crate::gpu::{grid_dim, kernel_int, Gpu};
use crate::methods::{DeviceLayout, Layout};
use crate::scalar::{Idx, Scalar};

/// Threads per block of the fix-up kernel.
const FIX_THREADS: u32 = 256;

/// The device copy of a merge layout.
pub(super) struct DeviceMerge<T: Scalar> {
    spmv: CudaFunction,
    fixup: CudaFunction,
    nrows: usize,
    ncols: usize,
    threads: u32,
    items: u32,
    ntiles: usize,
    smem: u32,
    nshort: usize,
    nlong: usize,
    row_ptr: CudaSlice<Idx>,
    col_idx: CudaSlice<Idx>,
    vals: CudaSlice<T>,
    tile_row: CudaSlice<Idx>,
    tile_nz: CudaSlice<Idx>,
    run_row: CudaSlice<Idx>,
    run_first: CudaSlice<Idx>,
    run_end: CudaSlice<Idx>,
    carry: CudaSlice<T>,
    bytes: usize,
}

pub(super) fn upload<T: Scalar>(
    l: &MergeLayout<T>,
    gpu: &Arc<Gpu>,
) -> Result<Box<dyn DeviceLayout<T>>> {
    let spmv = gpu.function::<T>(&KERNEL, "merge_spmv")?;
    let fixup = gpu.function::<T>(&KERNEL, "merge_fixup")?;
    Ok(Box::new(DeviceMerge {
        spmv,
        fixup,
        nrows: l.a.nrows(),
        ncols: l.a.ncols(),
        threads: l.threads,
        items: l.items,
        ntiles: l.ntiles(),
        smem: smem_bytes::<T>(l.tile_items()) as u32,
        nshort: l.nshort,
        nlong: l.nruns() - l.nshort,
        row_ptr: gpu.upload(l.a.row_ptr())?,
        col_idx: gpu.upload(l.a.col_idx())?,
        vals: gpu.upload(l.a.vals())?,
        tile_row: gpu.upload(&l.tile_row)?,
        tile_nz: gpu.upload(&l.tile_nz)?,
        run_row: gpu.upload(&l.run_row)?,
        run_first: gpu.upload(&l.run_first)?,
        run_end: gpu.upload(&l.run_end)?,
        carry: gpu.alloc_zeros::<T>(l.ntiles())?,
        bytes: l.footprint_bytes(),
    }))
}

impl<T: Scalar> DeviceLayout<T> for DeviceMerge<T> {
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
        if self.ntiles == 0 {
            return Ok(());
        }
        let nrows = kernel_int("merge nrows", self.nrows)?;
        let items = self.items as i32;
        let cfg = LaunchConfig {
            grid_dim: (grid_dim("merge tiles", self.ntiles)?, 1, 1),
            block_dim: (self.threads, 1, 1),
            shared_mem_bytes: self.smem,
        };
        let mut b = gpu.stream().launch_builder(&self.spmv);
        b.arg(&nrows)
            .arg(&self.row_ptr)
            .arg(&self.col_idx)
            .arg(&self.vals)
            .arg(x)
            .arg(&mut *y)
            .arg(&alpha)
            .arg(&beta)
            .arg(&self.tile_row)
            .arg(&self.tile_nz)
            .arg(&self.carry)
            .arg(&items);
        // SAFETY: the arguments match merge_spmv in kernel.cu; tile_row/tile_nz have ntiles + 1
        // entries, carry ntiles; the dynamic shared memory is what the kernel lays out for
        // blockDim.x · items steps; x has ncols and y nrows entries (checked by DeviceLayout::run).
        unsafe { b.launch(cfg) }.map_err(|e| Error::cuda("merge launch", e))?;

        let nruns = self.nshort + self.nlong;
        if nruns == 0 {
            return Ok(());
        }
        let short_blocks = self.nshort.div_ceil(FIX_THREADS as usize);
        let long_blocks = self.nlong.div_ceil((FIX_THREADS / 32) as usize);
        let cfg = LaunchConfig {
            grid_dim: (
                grid_dim("merge fix-up blocks", short_blocks + long_blocks)?,
                1,
                1,
            ),
            block_dim: (FIX_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let nshort = kernel_int("merge short carry runs", self.nshort)?;
        let nlong = kernel_int("merge long carry runs", self.nlong)?;
        let mut b = gpu.stream().launch_builder(&self.fixup);
        b.arg(&nshort)
            .arg(&nlong)
            .arg(&self.run_row)
            .arg(&self.run_first)
            .arg(&self.run_end)
            .arg(&self.carry)
            .arg(y)
            .arg(&alpha);
        // SAFETY: the arguments match merge_fixup in kernel.cu; the run arrays have nshort +
        // nlong entries with tile ranges inside carry; rows are < nrows.
        unsafe { b.launch(cfg) }.map_err(|e| Error::cuda("merge fix-up launch", e))?;
        Ok(())
    }

    fn footprint_bytes(&self) -> usize {
        self.bytes
    }
}
