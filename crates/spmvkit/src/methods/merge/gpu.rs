//! Upload and launch of `merge_spmv` + `merge_fixup` (kernel.cu): one CTA of `threads` per tile
//! with `tile · sizeof(real) + (tile + 1) · 4` bytes of dynamic shared memory (≤ 48 KiB, checked
//! in `prepare`), then, when any row spans tiles, the fix-up with 256 threads per block: one
//! thread per short carry run, one warp per long run. The carry array (one value per tile) is
//! allocated at upload. No launch when the path is empty (no rows).

use super::{smem_bytes, MergeLayout, KERNEL};
use crate::error::Result;
use crate::gpu::{kernel_int, DevMut, DevRef, Gpu, Kernel, Shape};
use crate::methods::common::csr::{CsrArgs, DeviceCsr};
use crate::methods::common::gpu::{Call, Launches};
use crate::methods::common::room::device_room;
use crate::methods::Layout;
use crate::scalar::{Idx, Scalar};

/// Threads per block of the fix-up kernel.
const FIX_THREADS: u32 = 256;

crate::device_args! {
    /// A merge layout's tiles on the device, with the carry of each tile.
    pub(super) struct TileArrays<T> from l: &MergeLayout<T>;
    /// `merge_spmv`'s arguments.
    pub(super) struct MergeArgs<'a, T> {
        csr: CsrArgs<'a, T>,
        tile_row: &[Idx],
        tile_nz: &[Idx],
        carry: &mut [T; l.ntiles()],
        items: i32 = l.items as i32,
    }
}

crate::device_args! {
    /// A merge layout's carry runs on the device.
    pub(super) struct RunArrays<T> from l: &MergeLayout<T>;
    /// `merge_fixup`'s arguments.
    pub(super) struct MergeFixupArgs<'a, T> {
        nshort: i32 = kernel_int("merge short carry runs", l.nshort)?,
        nlong: i32 = kernel_int("merge long carry runs", l.nruns() - l.nshort)?,
        run_row: &[Idx],
        run_first: &[Idx],
        run_end: &[Idx],
        carry: DevRef<'a, T>,
        y: DevMut<'a, T>,
        alpha: T,
    }
}

device_room! {
    /// The device copy of a merge layout.
    pub(super) struct DeviceMerge<T> {
        spmv: Kernel<MergeArgs<'static, T>> =
            gpu.kernel_stored::<T, _>(&KERNEL, "merge_spmv", l.values)?,
        fixup: Kernel<MergeFixupArgs<'static, T>> =
            gpu.kernel_stored::<T, _>(&KERNEL, "merge_fixup", l.values)?,
        threads: u32 = l.threads,
        ntiles: usize = l.ntiles(),
        smem: u32 = smem_bytes::<T>(l.tile_items()) as u32,
        /// The fix-up's CTAs: a thread per short carry run, then a warp per long one.
        fix_ctas: usize = short_blocks + long_blocks,
        a: DeviceCsr<T> = DeviceCsr::upload_stored(gpu, &l.a, l.values)?,
        tiles: TileArrays<T> = TileArrays::upload(gpu, l)?,
        runs: RunArrays<T> = RunArrays::upload(gpu, l)?,
    }
    fn upload(l: &MergeLayout<T>, gpu)
        -> Resident((l.a.nrows(), l.a.ncols()), l.footprint_bytes()) {
        let short_blocks = l.nshort.div_ceil(FIX_THREADS as usize);
        let long_blocks = (l.nruns() - l.nshort).div_ceil((FIX_THREADS / 32) as usize);
    }
}

impl<T: Scalar> Launches<T> for DeviceMerge<T> {
    unsafe fn run(&self, gpu: &Gpu, mut c: Call<'_, T>) -> Result<()> {
        if self.ntiles == 0 {
            return Ok(());
        }
        let args = self.tiles.args(self.a.args("merge nrows", &mut c)?);
        let shape = Shape::ctas(self.ntiles, self.threads).shared(self.smem);
        // SAFETY: tile_row/tile_nz have ntiles + 1 entries, carry ntiles; the dynamic shared
        // memory is what the kernel lays out for blockDim.x · items steps; x has ncols and y
        // nrows entries (checked by DeviceLayout::run).
        unsafe { gpu.launch(&self.spmv, shape, &args) }?;

        let carry = DevRef::new(&self.tiles.carry);
        let args = self.runs.args(carry, DevMut::new(c.y), c.alpha);
        // One thread per short run, then one warp per long run (none when no row spans tiles).
        let shape = Shape::ctas(self.fix_ctas, FIX_THREADS);
        // SAFETY: the run arrays have nshort + nlong entries with tile ranges inside carry;
        // rows are < nrows.
        unsafe { gpu.launch(&self.fixup, shape, &args) }
    }
}
