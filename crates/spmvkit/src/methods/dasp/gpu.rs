//! Upload and launch of `dasp_spmv` (kernel.cu): one launch of 128-thread CTAs; a warp per part
//! of a long row, per row-block group, per `short_tiles_per_warp` short tiles, then warps writing
//! βy to the empty rows; then, only when there are long rows, `dasp_long_sum` (a warp per long
//! row). The part sums (one value per part) are allocated at upload.

use std::sync::Arc;

use cudarc::driver::CudaSlice;

use super::{DaspLayout, KERNEL};
use crate::error::Result;
use crate::gpu::{kernel_int, DevMut, DevRef, Gpu, Kernel, Shape};
use crate::methods::common::gpu::{Axpby, Call, Launches, Resident, Ypby};
use crate::methods::{DeviceLayout, Layout};
use crate::scalar::{Idx, Scalar};

const THREADS: u32 = 128;
const EMPTY_WARPS_MAX: usize = 1024;

crate::kernel_args! {
    /// `dasp_spmv`'s parameters.
    pub(super) struct DaspArgs<'a, T> {
        nparts: i32,
        part_start: DevRef<'a, Idx>,
        part_end: DevRef<'a, Idx>,
        long_cols: DevRef<'a, Idx>,
        long_vals: DevRef<'a, T>,
        long_part: DevMut<'a, T>,
        ngroups: i32,
        blk_rows: DevRef<'a, i32>,
        blk_slab_ptr: DevRef<'a, Idx>,
        blk_cols: DevRef<'a, Idx>,
        blk_vals: DevRef<'a, T>,
        irr_ptr: DevRef<'a, Idx>,
        irr_cols: DevRef<'a, Idx>,
        irr_vals: DevRef<'a, T>,
        nshort: i32,
        spw: i32,
        short_row1: DevRef<'a, i32>,
        short_row2: DevRef<'a, i32>,
        short_split: DevRef<'a, i32>,
        short_cols: DevRef<'a, Idx>,
        short_vals: DevRef<'a, T>,
        nempty: i32,
        empty_rows: DevRef<'a, Idx>,
        axpby: Axpby<'a, T>,
    }
}

crate::kernel_args! {
    /// `dasp_long_sum`'s parameters.
    pub(super) struct DaspLongSumArgs<'a, T> {
        nlong: i32,
        long_rows: DevRef<'a, Idx>,
        part_ptr: DevRef<'a, Idx>,
        long_part: DevRef<'a, T>,
        out: Ypby<'a, T>,
    }
}

pub(super) struct DeviceDasp<T: Scalar> {
    func: Kernel<DaspArgs<'static, T>>,
    long_sum: Kernel<DaspLongSumArgs<'static, T>>,
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
}

pub(super) fn upload<T: Scalar>(
    l: &DaspLayout<T>,
    gpu: &Arc<Gpu>,
) -> Result<Box<dyn DeviceLayout<T>>> {
    let room = DeviceDasp {
        func: gpu.kernel::<T, _>(&KERNEL, "dasp_spmv")?,
        long_sum: gpu.kernel::<T, _>(&KERNEL, "dasp_long_sum")?,
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
    };
    Ok(Resident::boxed(
        (l.nrows, l.ncols),
        l.footprint_bytes(),
        room,
    ))
}

impl<T: Scalar> Launches<T> for DeviceDasp<T> {
    unsafe fn run(&self, gpu: &Gpu, mut c: Call<'_, T>) -> Result<()> {
        let short_warps = self.nshort.div_ceil(self.spw);
        let empty_warps = self.nempty.div_ceil(32).min(EMPTY_WARPS_MAX);
        let warps = self.nparts + self.ngroups + short_warps + empty_warps;
        if warps == 0 {
            return Ok(());
        }
        let args = DaspArgs {
            nparts: kernel_int("dasp long-row parts", self.nparts)?,
            part_start: DevRef::new(&self.part_start),
            part_end: DevRef::new(&self.part_end),
            long_cols: DevRef::new(&self.long_cols),
            long_vals: DevRef::new(&self.long_vals),
            long_part: DevMut::scratch(&self.long_part),
            ngroups: kernel_int("dasp row-block groups", self.ngroups)?,
            blk_rows: DevRef::new(&self.blk_rows),
            blk_slab_ptr: DevRef::new(&self.blk_slab_ptr),
            blk_cols: DevRef::new(&self.blk_cols),
            blk_vals: DevRef::new(&self.blk_vals),
            irr_ptr: DevRef::new(&self.irr_ptr),
            irr_cols: DevRef::new(&self.irr_cols),
            irr_vals: DevRef::new(&self.irr_vals),
            nshort: kernel_int("dasp short tiles", self.nshort)?,
            spw: kernel_int("dasp short tiles per warp", self.spw)?,
            short_row1: DevRef::new(&self.short_row1),
            short_row2: DevRef::new(&self.short_row2),
            short_split: DevRef::new(&self.short_split),
            short_cols: DevRef::new(&self.short_cols),
            short_vals: DevRef::new(&self.short_vals),
            nempty: kernel_int("dasp empty rows", self.nempty)?,
            empty_rows: DevRef::new(&self.empty_rows),
            axpby: c.axpby(),
        };
        // SAFETY: every array has the length the layout builder gave it; rows index y and
        // columns x in range (checked by DeviceLayout::run).
        unsafe { gpu.launch(&self.func, Shape::warp_per_item(warps, THREADS), &args) }?;
        let args = DaspLongSumArgs {
            nlong: kernel_int("dasp long rows", self.nlong)?,
            long_rows: DevRef::new(&self.long_rows),
            part_ptr: DevRef::new(&self.part_ptr),
            long_part: DevRef::new(&self.long_part),
            out: c.ypby(),
        };
        // A warp per long row (none without long rows).
        let shape = Shape::warp_per_item(self.nlong, THREADS);
        // SAFETY: part_ptr has nlong + 1 entries indexing long_part; long rows index y in range.
        unsafe { gpu.launch(&self.long_sum, shape, &args) }
    }
}
