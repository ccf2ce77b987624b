//! Upload and launch of `pbc_spmv` (kernel.cu): one CTA of `threads` per block, one launch per
//! call (the cut rows are fixed up by the last CTA; its counter is zeroed at upload and reset by
//! that CTA), no launch when there are no rows.

use super::{PbcLayout, KERNEL};
use crate::error::Result;
use crate::gpu::{kernel_int, Gpu, Kernel, Shape};
use crate::methods::common::gpu::{Axpby, Call, Launches};
use crate::methods::common::room::device_room;
use crate::methods::Layout;
use crate::scalar::{Idx, Scalar};

crate::device_args! {
    /// A PBC layout's arrays on the device.
    pub(super) struct PbcArrays<T> from l: &PbcLayout<T>;
    /// `pbc_spmv`'s arguments.
    pub(super) struct PbcArgs<'a, T> {
        blk_row: &[Idx],
        rows: &[Idx],
        row_off: &[Idx],
        col: &[Idx],
        val: &[T],
        blk_seg: &[Idx],
        seg_ptr: &[Idx],
        seg_slot: &[Idx],
        coo_col: &[Idx],
        coo_val: &[T],
        part: &mut [T; l.nslots()],
        nsplit: i32 = kernel_int("pbc split rows", l.split_row.len())?,
        split_row: &[Idx],
        split_ptr: &[Idx],
        ctr: &mut [u32; 1],
        axpby: Axpby<'a, T>,
    }
}

device_room! {
    /// The device copy of a PBC layout.
    pub(super) struct DevicePbc<T> {
        k: Kernel<PbcArgs<'static, T>> = gpu.kernel::<T, _>(&KERNEL, "pbc_spmv")?,
        nblocks: usize = l.nblocks(),
        threads: u32 = l.threads,
        arrays: PbcArrays<T> = PbcArrays::upload(gpu, l)?,
    }
    fn upload(l: &PbcLayout<T>, gpu) -> Resident((l.nrows, l.ncols), l.footprint_bytes());
}

impl<T: Scalar> Launches<T> for DevicePbc<T> {
    unsafe fn run(&self, gpu: &Gpu, mut c: Call<'_, T>) -> Result<()> {
        if self.nblocks == 0 {
            return Ok(());
        }
        let args = self.arrays.args(c.axpby());
        // SAFETY: every offset array has its count + 1 entries and indexes the arrays after it
        // (by construction), part has one slot per segment, the counter is one word, zero on
        // entry (zeroed at upload, reset by the last CTA of the previous call); x has ncols and
        // y nrows entries (checked by DeviceLayout::run).
        unsafe { gpu.launch(&self.k, Shape::ctas(self.nblocks, self.threads), &args) }
    }
}
