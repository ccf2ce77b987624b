//! Upload and launch of `pbc_spmv` (kernel.cu): one CTA of `threads` per block, one launch per
//! call (the cut rows are fixed up by the last CTA; its counter is zeroed at upload and reset by
//! that CTA), no launch when there are no rows.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};

use super::{PbcLayout, KERNEL};
use crate::error::{Error, Result};
use crate::gpu::{grid_dim, kernel_int, Gpu};
use crate::methods::{DeviceLayout, Layout};
use crate::scalar::{Idx, Scalar};

/// The device copy of a PBC layout.
pub(super) struct DevicePbc<T: Scalar> {
    func: CudaFunction,
    nblocks: usize,
    nrows: usize,
    ncols: usize,
    threads: u32,
    nsplit: i32,
    blk_row: CudaSlice<Idx>,
    rows: CudaSlice<Idx>,
    row_off: CudaSlice<Idx>,
    col: CudaSlice<Idx>,
    val: CudaSlice<T>,
    blk_seg: CudaSlice<Idx>,
    seg_ptr: CudaSlice<Idx>,
    seg_slot: CudaSlice<Idx>,
    coo_col: CudaSlice<Idx>,
    coo_val: CudaSlice<T>,
    part: CudaSlice<T>,
    split_row: CudaSlice<Idx>,
    split_ptr: CudaSlice<Idx>,
    ctr: CudaSlice<u32>,
    bytes: usize,
}

pub(super) fn upload<T: Scalar>(
    l: &PbcLayout<T>,
    gpu: &Arc<Gpu>,
) -> Result<Box<dyn DeviceLayout<T>>> {
    let func = gpu.function::<T>(&KERNEL, "pbc_spmv")?;
    Ok(Box::new(DevicePbc {
        func,
        nblocks: l.nblocks(),
        nrows: l.nrows,
        ncols: l.ncols,
        threads: l.threads,
        nsplit: kernel_int("pbc split rows", l.split_row.len())?,
        blk_row: gpu.upload(&l.blk_row)?,
        rows: gpu.upload(&l.rows)?,
        row_off: gpu.upload(&l.row_off)?,
        col: gpu.upload(&l.col)?,
        val: gpu.upload(&l.val)?,
        blk_seg: gpu.upload(&l.blk_seg)?,
        seg_ptr: gpu.upload(&l.seg_ptr)?,
        seg_slot: gpu.upload(&l.seg_slot)?,
        coo_col: gpu.upload(&l.coo_col)?,
        coo_val: gpu.upload(&l.coo_val)?,
        part: gpu.alloc_zeros::<T>(l.nslots())?,
        split_row: gpu.upload(&l.split_row)?,
        split_ptr: gpu.upload(&l.split_ptr)?,
        ctr: gpu.alloc_zeros::<u32>(1)?,
        bytes: Layout::<T>::footprint_bytes(l),
    }))
}

impl<T: Scalar> DeviceLayout<T> for DevicePbc<T> {
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
        if self.nrows == 0 || self.nblocks == 0 {
            return Ok(());
        }
        let cfg = LaunchConfig {
            grid_dim: (grid_dim("pbc blocks", self.nblocks)?, 1, 1),
            block_dim: (self.threads, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = gpu.stream().launch_builder(&self.func);
        b.arg(&self.blk_row)
            .arg(&self.rows)
            .arg(&self.row_off)
            .arg(&self.col)
            .arg(&self.val)
            .arg(&self.blk_seg)
            .arg(&self.seg_ptr)
            .arg(&self.seg_slot)
            .arg(&self.coo_col)
            .arg(&self.coo_val)
            .arg(&self.part)
            .arg(&self.nsplit)
            .arg(&self.split_row)
            .arg(&self.split_ptr)
            .arg(&self.ctr)
            .arg(x)
            .arg(y)
            .arg(&alpha)
            .arg(&beta);
        // SAFETY: the arguments match pbc_spmv in kernel.cu; every offset array has its count + 1
        // entries and indexes the arrays after it (by construction), part has one slot per
        // segment, the counter is one word, zero on entry (zeroed at upload, reset by the last
        // CTA of the previous call); x has ncols and y nrows entries (checked by
        // DeviceLayout::run).
        unsafe { b.launch(cfg) }.map_err(|e| Error::cuda("pbc launch", e))?;
        Ok(())
    }

    fn footprint_bytes(&self) -> usize {
        self.bytes
    }
}
