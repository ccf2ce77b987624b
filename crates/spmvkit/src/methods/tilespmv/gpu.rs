//! Upload and launch of `tilespmv_spmv` (kernel.cu) after `spmvkit_scale` (y = βy, the zeroing
//! the atomics need, inside the call): 64-thread CTAs (two warps, as the original), a warp per
//! work unit, then threads for the deferred COO entries.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};

use super::{TileLayout, KERNEL};
use crate::error::{Error, Result};
use crate::gpu::{grid_dim, kernel_int, Gpu};
use crate::methods::{DeviceLayout, Layout};
use crate::scalar::{Idx, Scalar};

const THREADS: u32 = 64;
/// Threads for the deferred COO part (each strides).
const DEF_THREADS_MAX: usize = 1 << 16;

pub(super) struct DeviceTile<T: Scalar> {
    func: CudaFunction,
    nrows: usize,
    ncols: usize,
    nunits: usize,
    ndef: usize,
    unit_row: CudaSlice<Idx>,
    unit_first: CudaSlice<Idx>,
    unit_count: CudaSlice<Idx>,
    tile_col: CudaSlice<Idx>,
    tile_info: CudaSlice<u32>,
    tile_val: CudaSlice<Idx>,
    tile_idx: CudaSlice<Idx>,
    vals: CudaSlice<T>,
    idx: CudaSlice<u8>,
    def_row: CudaSlice<Idx>,
    def_col: CudaSlice<Idx>,
    def_val: CudaSlice<T>,
    bytes: usize,
}

pub(super) fn upload<T: Scalar>(
    l: &TileLayout<T>,
    gpu: &Arc<Gpu>,
) -> Result<Box<dyn DeviceLayout<T>>> {
    Ok(Box::new(DeviceTile {
        func: gpu.function::<T>(&KERNEL, "tilespmv_spmv")?,
        nrows: l.nrows,
        ncols: l.ncols,
        nunits: l.unit_row.len(),
        ndef: l.def_row.len(),
        unit_row: gpu.upload(&l.unit_row)?,
        unit_first: gpu.upload(&l.unit_first)?,
        unit_count: gpu.upload(&l.unit_count)?,
        tile_col: gpu.upload(&l.tile_col)?,
        tile_info: gpu.upload(&l.tile_info)?,
        tile_val: gpu.upload(&l.tile_val)?,
        tile_idx: gpu.upload(&l.tile_idx)?,
        vals: gpu.upload(&l.vals)?,
        idx: gpu.upload(&l.idx)?,
        def_row: gpu.upload(&l.def_row)?,
        def_col: gpu.upload(&l.def_col)?,
        def_val: gpu.upload(&l.def_val)?,
        bytes: l.footprint_bytes(),
    }))
}

impl<T: Scalar> DeviceLayout<T> for DeviceTile<T> {
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
        gpu.scale(y, self.nrows, beta)?;
        let threads = self.nunits * 32 + self.ndef.min(DEF_THREADS_MAX);
        if threads == 0 {
            return Ok(());
        }
        let cfg = LaunchConfig {
            grid_dim: (
                grid_dim("tilespmv blocks", threads.div_ceil(THREADS as usize))?,
                1,
                1,
            ),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let (nrows, ncols, nunits, ndef) = (
            kernel_int("tilespmv nrows", self.nrows)?,
            kernel_int("tilespmv ncols", self.ncols)?,
            kernel_int("tilespmv work units", self.nunits)?,
            kernel_int("tilespmv deferred entries", self.ndef)?,
        );
        let mut b = gpu.stream().launch_builder(&self.func);
        b.arg(&nrows)
            .arg(&ncols)
            .arg(&nunits)
            .arg(&self.unit_row)
            .arg(&self.unit_first)
            .arg(&self.unit_count)
            .arg(&self.tile_col)
            .arg(&self.tile_info)
            .arg(&self.tile_val)
            .arg(&self.tile_idx)
            .arg(&self.vals)
            .arg(&self.idx)
            .arg(&ndef)
            .arg(&self.def_row)
            .arg(&self.def_col)
            .arg(&self.def_val)
            .arg(x)
            .arg(y)
            .arg(&alpha);
        // SAFETY: the arguments match tilespmv_spmv in kernel.cu; the arrays have the lengths
        // the layout builder gave them; tile offsets stay inside vals/idx; rows < nrows, columns
        // checked against ncols (tiles) or < ncols (deferred entries); x has ncols and y nrows
        // entries (checked by DeviceLayout::run).
        unsafe { b.launch(cfg) }.map_err(|e| Error::cuda("tilespmv launch", e))?;
        Ok(())
    }

    fn footprint_bytes(&self) -> usize {
        self.bytes
    }
}
