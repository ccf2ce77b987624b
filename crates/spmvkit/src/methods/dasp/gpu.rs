//! Upload and launch of `dasp_spmv` (kernel.cu): one launch of 128-thread CTAs; a warp per part
//! of a long row, per row-block group, per `short_tiles_per_warp` short tiles, then warps writing
//! βy to the empty rows; then, only when there are long rows, `dasp_long_sum` (a warp per long
//! row). The part sums (one value per part) are allocated at upload.

use super::{DaspLayout, KERNEL};
use crate::error::Result;
use crate::gpu::{kernel_int, DevRef, Gpu, Kernel, Shape};
use crate::methods::common::gpu::{Axpby, Call, Launches, Ypby};
use crate::methods::common::room::device_room;
use crate::methods::Layout;
use crate::scalar::{Idx, Scalar};

const THREADS: u32 = 128;
const EMPTY_WARPS_MAX: usize = 1024;

crate::device_args! {
    /// A DASP layout's arrays on the device (all but the long rows' sums).
    pub(super) struct DaspArrays<T> from l: &DaspLayout<T>;
    /// `dasp_spmv`'s parameters.
    pub(super) struct DaspArgs<'a, T> {
        nparts: i32 = kernel_int("dasp long-row parts", l.part_start.len())?,
        part_start: &[Idx],
        part_end: &[Idx],
        long_cols: &[Idx],
        long_vals: &[T],
        long_part: &mut [T; l.part_start.len()],
        ngroups: i32 = kernel_int("dasp row-block groups", l.ngroups())?,
        blk_rows: &[i32],
        blk_slab_ptr: &[Idx],
        blk_cols: &[Idx],
        blk_vals: &[T],
        irr_ptr: &[Idx],
        irr_cols: &[Idx],
        irr_vals: &[T],
        nshort: i32 = kernel_int("dasp short tiles", l.nshort_tiles())?,
        spw: i32 = kernel_int("dasp short tiles per warp", l.short_per_warp)?,
        short_row1: &[i32],
        short_row2: &[i32],
        short_split: &[i32],
        short_cols: &[Idx],
        short_vals: &[T],
        nempty: i32 = kernel_int("dasp empty rows", l.empty_rows.len())?,
        empty_rows: &[Idx],
        axpby: Axpby<'a, T>,
    }
}

crate::device_args! {
    /// The long rows' lists on the device.
    pub(super) struct LongSumArrays<T> from l: &DaspLayout<T>;
    /// `dasp_long_sum`'s parameters.
    pub(super) struct DaspLongSumArgs<'a, T> {
        nlong: i32 = kernel_int("dasp long rows", l.long_rows.len())?,
        long_rows: &[Idx],
        part_ptr: &[Idx],
        long_part: DevRef<'a, T>,
        out: Ypby<'a, T>,
    }
}

device_room! {
    pub(super) struct DeviceDasp<T> {
        func: Kernel<DaspArgs<'static, T>> = gpu.kernel::<T, _>(&KERNEL, "dasp_spmv")?,
        long_sum: Kernel<DaspLongSumArgs<'static, T>> =
            gpu.kernel::<T, _>(&KERNEL, "dasp_long_sum")?,
        /// `dasp_spmv`'s warps: one per long-row part, per row-block group, per
        /// `short_tiles_per_warp` short tiles, then the empty rows' warps.
        warps: usize = l.part_start.len() + l.ngroups() + short_warps + empty_warps,
        nlong: usize = l.long_rows.len(),
        arrays: DaspArrays<T> = DaspArrays::upload(gpu, l)?,
        sums: LongSumArrays<T> = LongSumArrays::upload(gpu, l)?,
    }
    fn upload(l: &DaspLayout<T>, gpu) -> Resident((l.nrows, l.ncols), l.footprint_bytes()) {
        let short_warps = l.nshort_tiles().div_ceil(l.short_per_warp);
        let empty_warps = l.empty_rows.len().div_ceil(32).min(EMPTY_WARPS_MAX);
    }
}

impl<T: Scalar> Launches<T> for DeviceDasp<T> {
    unsafe fn run(&self, gpu: &Gpu, mut c: Call<'_, T>) -> Result<()> {
        if self.warps == 0 {
            return Ok(());
        }
        let args = self.arrays.args(c.axpby());
        // SAFETY: every array has the length the layout builder gave it; rows index y and
        // columns x in range (checked by DeviceLayout::run).
        unsafe { gpu.launch(&self.func, Shape::warp_per_item(self.warps, THREADS), &args) }?;
        let args = self
            .sums
            .args(DevRef::new(&self.arrays.long_part), c.ypby());
        // A warp per long row (none without long rows).
        let shape = Shape::warp_per_item(self.nlong, THREADS);
        // SAFETY: part_ptr has nlong + 1 entries indexing long_part; long rows index y in range.
        unsafe { gpu.launch(&self.long_sum, shape, &args) }
    }
}
