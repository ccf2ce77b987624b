//! Upload and launch of `csr-packed`: the layout's streams on the device, one launch per call
//! of the entry point for the layout's value mode (and `prefetch`), persistent warps in blocks
//! of 256 threads, as many blocks as stay resident (CUDA's occupancy query), at most one warp
//! per slice or long row.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};

use super::{PackedLayout, KERNEL, WARP};
use crate::error::{Error, Result};
use crate::gpu::{grid_dim, kernel_int, Gpu};
use crate::methods::DeviceLayout;
use crate::scalar::Scalar;

const BLOCK: u32 = super::BLOCK as u32;

/// `csr-packed` resident on the GPU.
pub(super) struct PackedDevice<T> {
    f: CudaFunction,
    nrows: usize,
    ncols: usize,
    nslices: u32,
    nlong: u32,
    lens: CudaSlice<u8>,
    rows: CudaSlice<u32>,
    has_rows: i32,
    grp: CudaSlice<u32>,
    col_off: CudaSlice<u32>,
    col_w: CudaSlice<u8>,
    cols: CudaSlice<u32>,
    vstream: CudaSlice<u8>,
    raw: CudaSlice<T>,
    dict: CudaSlice<T>,
    long_rows: CudaSlice<u32>,
    long_ptr: CudaSlice<u32>,
    long_cols: CudaSlice<u32>,
    long_vals: CudaSlice<T>,
    footprint: usize,
    /// Resident blocks of the whole GPU (the persistent grid's size at most).
    max_blocks: usize,
}

impl<T: Scalar> PackedDevice<T> {
    /// Compiles the kernel first, so an NVRTC failure leaves nothing allocated, then uploads.
    pub(super) fn upload(gpu: &Arc<Gpu>, l: &PackedLayout<T>) -> Result<Self> {
        let items = l.nslices() + l.long_rows.len();
        kernel_int("csr-packed work items (slices + long rows)", items)?;
        crate::gpu::check_int_loops("csr-packed", l.nrows, l.long_cols.len())?;
        let f = gpu.function::<T>(&KERNEL, l.vcodes.entry(l.prefetch))?;
        // Persistent warps: as many blocks as stay resident on every SM at once.
        let per_sm = f
            .occupancy_max_active_blocks_per_multiprocessor(BLOCK, 0, None)
            .map_err(|e| Error::cuda("csr-packed: occupancy query", e))?
            .max(1) as usize;
        let max_blocks = per_sm * gpu.sm_count().max(1);
        Ok(PackedDevice {
            f,
            nrows: l.nrows,
            ncols: l.ncols,
            nslices: l.nslices() as u32,
            nlong: l.long_rows.len() as u32,
            lens: gpu.upload(&l.lens)?,
            rows: gpu.upload(l.rows.as_deref().unwrap_or(&[]))?,
            has_rows: l.rows.is_some() as i32,
            grp: gpu.upload(&l.grp)?,
            col_off: gpu.upload(&l.col_off)?,
            col_w: gpu.upload(&l.col_w)?,
            cols: gpu.upload(&l.cols)?,
            vstream: gpu.upload(&l.vstream)?,
            raw: gpu.upload(&l.raw)?,
            dict: gpu.upload(&l.dict)?,
            long_rows: gpu.upload(&l.long_rows)?,
            long_ptr: gpu.upload(&l.long_ptr)?,
            long_cols: gpu.upload(&l.long_cols)?,
            long_vals: gpu.upload(&l.long_vals)?,
            footprint: crate::methods::Layout::footprint_bytes(l),
            max_blocks,
        })
    }
}

impl<T: Scalar> DeviceLayout<T> for PackedDevice<T> {
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
        let items = self.nslices as usize + self.nlong as usize;
        if items == 0 {
            return Ok(());
        }
        let warps_per_block = (BLOCK as usize) / WARP;
        let cfg = LaunchConfig {
            grid_dim: (
                grid_dim(
                    "csr-packed blocks",
                    items.div_ceil(warps_per_block).min(self.max_blocks),
                )?,
                1,
                1,
            ),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = gpu.stream().launch_builder(&self.f);
        b.arg(&self.nslices)
            .arg(&self.nlong)
            .arg(&self.lens)
            .arg(&self.rows)
            .arg(&self.has_rows)
            .arg(&self.grp)
            .arg(&self.col_off)
            .arg(&self.col_w)
            .arg(&self.cols)
            .arg(&self.vstream)
            .arg(&self.raw)
            .arg(&self.dict)
            .arg(&self.long_rows)
            .arg(&self.long_ptr)
            .arg(&self.long_cols)
            .arg(&self.long_vals)
            .arg(x)
            .arg(y)
            .arg(&alpha)
            .arg(&beta);
        // SAFETY: the argument list matches PACKED_ENTRY's signature; x and y are long enough
        // (checked by DeviceLayout::run); the streams were built by encode.rs, whose offsets,
        // lengths and codes stay inside them and decode to columns < ncols and rows < nrows.
        unsafe { b.launch(cfg) }
            .map(|_| ())
            .map_err(|e| Error::cuda("csr-packed launch", e))
    }

    fn footprint_bytes(&self) -> usize {
        self.footprint
    }
}
