//! Upload and launch of `csr5_spmv` + `csr5_calibrate` (kernel.cu): 128-thread CTAs (four warps,
//! as the original), a warp per tile, then a warp per tail row, then warps writing βy to the
//! empty rows; the calibrate pass (one thread per carry run, 256 per block) only when some row
//! spans tiles. The carry array (ntiles + 1 values) is allocated at upload.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};

use super::{Csr5Layout, KERNEL};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::methods::{DeviceLayout, Layout};
use crate::scalar::{Idx, Scalar};

const THREADS: u32 = 128;
const CAL_THREADS: u32 = 256;
/// Warps that write βy to the empty rows (each strides over them 32 at a time).
const EMPTY_WARPS_MAX: usize = 1024;

pub(super) struct DeviceCsr5<T: Scalar> {
    spmv: CudaFunction,
    calibrate: CudaFunction,
    ntiles: usize,
    sigma: i32,
    npacket: i32,
    y_bits: i32,
    ntail: usize,
    tail_end: i32,
    nempty: usize,
    nruns: usize,
    row_ptr: CudaSlice<Idx>,
    col_idx: CudaSlice<Idx>,
    vals: CudaSlice<T>,
    tile_ptr: CudaSlice<Idx>,
    tile_desc: CudaSlice<u32>,
    empty_ptr: CudaSlice<Idx>,
    empty_offset: CudaSlice<Idx>,
    empty_rows: CudaSlice<Idx>,
    run_row: CudaSlice<Idx>,
    run_first: CudaSlice<Idx>,
    run_end: CudaSlice<Idx>,
    carry: CudaSlice<T>,
    bytes: usize,
}

pub(super) fn upload<T: Scalar>(
    l: &Csr5Layout<T>,
    gpu: &Arc<Gpu>,
) -> Result<Box<dyn DeviceLayout<T>>> {
    Ok(Box::new(DeviceCsr5 {
        spmv: gpu.function::<T>(&KERNEL, "csr5_spmv")?,
        calibrate: gpu.function::<T>(&KERNEL, "csr5_calibrate")?,
        ntiles: l.ntiles,
        sigma: l.sigma as i32,
        npacket: l.npacket as i32,
        y_bits: l.y_bits as i32,
        ntail: l.ntail_rows(),
        tail_end: l.tail_end as i32,
        nempty: l.empty_rows.len(),
        nruns: l.run_row.len(),
        row_ptr: gpu.upload(&l.row_ptr)?,
        col_idx: gpu.upload(&l.col_idx)?,
        vals: gpu.upload(&l.vals)?,
        tile_ptr: gpu.upload(&l.tile_ptr)?,
        tile_desc: gpu.upload(&l.tile_desc)?,
        empty_ptr: gpu.upload(&l.empty_ptr)?,
        empty_offset: gpu.upload(&l.empty_offset)?,
        empty_rows: gpu.upload(&l.empty_rows)?,
        run_row: gpu.upload(&l.run_row)?,
        run_first: gpu.upload(&l.run_first)?,
        run_end: gpu.upload(&l.run_end)?,
        carry: gpu.alloc_zeros::<T>(l.ntiles + 1)?,
        bytes: l.footprint_bytes(),
    }))
}

impl<T: Scalar> DeviceLayout<T> for DeviceCsr5<T> {
    fn run(
        &self,
        gpu: &Gpu,
        alpha: T,
        x: &CudaSlice<T>,
        beta: T,
        y: &mut CudaSlice<T>,
    ) -> Result<()> {
        let empty_warps = self.nempty.div_ceil(32).min(EMPTY_WARPS_MAX);
        let warps = self.ntiles + self.ntail + empty_warps;
        if warps == 0 {
            return Ok(());
        }
        let wpb = (THREADS / 32) as usize;
        let cfg = LaunchConfig {
            grid_dim: (warps.div_ceil(wpb) as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let (ntiles, ntail, nempty) = (self.ntiles as i32, self.ntail as i32, self.nempty as i32);
        let mut b = gpu.stream().launch_builder(&self.spmv);
        b.arg(&ntiles)
            .arg(&self.sigma)
            .arg(&self.npacket)
            .arg(&self.y_bits)
            .arg(&self.row_ptr)
            .arg(&self.col_idx)
            .arg(&self.vals)
            .arg(&self.tile_ptr)
            .arg(&self.tile_desc)
            .arg(&self.empty_ptr)
            .arg(&self.empty_offset)
            .arg(&self.empty_rows)
            .arg(&nempty)
            .arg(&ntail)
            .arg(&self.tail_end)
            .arg(x)
            .arg(&mut *y)
            .arg(&alpha)
            .arg(&beta)
            .arg(&self.carry);
        // SAFETY: the arguments match csr5_spmv in kernel.cu; the arrays have the lengths the
        // layout builder gave them (tile_desc ntiles·npacket·32, tile_ptr ntiles + 1, carry
        // ntiles + 1); rows and columns index y and x in range (checked by Plan).
        unsafe { b.launch(cfg) }.map_err(|e| Error::cuda("csr5 launch", e))?;
        if self.nruns == 0 {
            return Ok(());
        }
        let cfg = LaunchConfig {
            grid_dim: (self.nruns.div_ceil(CAL_THREADS as usize) as u32, 1, 1),
            block_dim: (CAL_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let nruns = self.nruns as i32;
        let mut b = gpu.stream().launch_builder(&self.calibrate);
        b.arg(&nruns)
            .arg(&self.run_row)
            .arg(&self.run_first)
            .arg(&self.run_end)
            .arg(&self.carry)
            .arg(y)
            .arg(&alpha);
        // SAFETY: the arguments match csr5_calibrate; the runs index carry and y in range.
        unsafe { b.launch(cfg) }.map_err(|e| Error::cuda("csr5 calibrate launch", e))?;
        Ok(())
    }

    fn footprint_bytes(&self) -> usize {
        self.bytes
    }
}
