//! Upload and launch of `pbc_spmv` (kernel.cu): one CTA of `threads` per block, one launch per
//! call (the cut rows are fixed up by the last CTA; its counter is zeroed at upload and reset by
//! that CTA), no launch when there are no rows.

use std::sync::Arc;

use cudarc::driver::CudaSlice;

use super::{PbcLayout, KERNEL};
use crate::error::Result;
use crate::gpu::{kernel_int, DevMut, DevRef, Gpu, Kernel, Shape};
use crate::methods::common::gpu::{Axpby, Call, Launches, Resident};
use crate::methods::{DeviceLayout, Layout};
use crate::scalar::{Idx, Scalar};

crate::kernel_args! {
    /// `pbc_spmv`'s arguments.
    pub(super) struct PbcArgs<'a, T> {
        blk_row: DevRef<'a, Idx>,
        rows: DevRef<'a, Idx>,
        row_off: DevRef<'a, Idx>,
        col: DevRef<'a, Idx>,
        val: DevRef<'a, T>,
        blk_seg: DevRef<'a, Idx>,
        seg_ptr: DevRef<'a, Idx>,
        seg_slot: DevRef<'a, Idx>,
        coo_col: DevRef<'a, Idx>,
        coo_val: DevRef<'a, T>,
        part: DevMut<'a, T>,
        nsplit: i32,
        split_row: DevRef<'a, Idx>,
        split_ptr: DevRef<'a, Idx>,
        ctr: DevMut<'a, u32>,
        axpby: Axpby<'a, T>,
    }
}

/// The device copy of a PBC layout.
pub(super) struct DevicePbc<T: Scalar> {
    k: Kernel<PbcArgs<'static, T>>,
    nblocks: usize,
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
}

pub(super) fn upload<T: Scalar>(
    l: &PbcLayout<T>,
    gpu: &Arc<Gpu>,
) -> Result<Box<dyn DeviceLayout<T>>> {
    let room = DevicePbc {
        k: gpu.kernel::<T, _>(&KERNEL, "pbc_spmv")?,
        nblocks: l.nblocks(),
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
    };
    Ok(Resident::boxed(
        (l.nrows, l.ncols),
        Layout::<T>::footprint_bytes(l),
        room,
    ))
}

impl<T: Scalar> Launches<T> for DevicePbc<T> {
    unsafe fn run(&self, gpu: &Gpu, mut c: Call<'_, T>) -> Result<()> {
        if self.nblocks == 0 {
            return Ok(());
        }
        let args = PbcArgs {
            blk_row: DevRef::new(&self.blk_row),
            rows: DevRef::new(&self.rows),
            row_off: DevRef::new(&self.row_off),
            col: DevRef::new(&self.col),
            val: DevRef::new(&self.val),
            blk_seg: DevRef::new(&self.blk_seg),
            seg_ptr: DevRef::new(&self.seg_ptr),
            seg_slot: DevRef::new(&self.seg_slot),
            coo_col: DevRef::new(&self.coo_col),
            coo_val: DevRef::new(&self.coo_val),
            part: DevMut::scratch(&self.part),
            nsplit: self.nsplit,
            split_row: DevRef::new(&self.split_row),
            split_ptr: DevRef::new(&self.split_ptr),
            ctr: DevMut::scratch(&self.ctr),
            axpby: c.axpby(),
        };
        // SAFETY: every offset array has its count + 1 entries and indexes the arrays after it
        // (by construction), part has one slot per segment, the counter is one word, zero on
        // entry (zeroed at upload, reset by the last CTA of the previous call); x has ncols and
        // y nrows entries (checked by DeviceLayout::run).
        unsafe { gpu.launch(&self.k, Shape::ctas(self.nblocks, self.threads), &args) }
    }
}
