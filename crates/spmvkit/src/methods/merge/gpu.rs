//! Upload and launch of `merge_spmv` + `merge_fixup` (kernel.cu): one CTA of `threads` per tile
//! with `tile · sizeof(real) + (tile + 1) · 4` bytes of dynamic shared memory (≤ 48 KiB, checked
//! in `prepare`), then, when any row spans tiles, the fix-up with 256 threads per block: one
//! thread per short carry run, one warp per long run. The carry array (one value per tile) is
//! allocated at upload. No launch when the path is empty (no rows).

use std::sync::Arc;

use cudarc::driver::CudaSlice;

use super::{smem_bytes, MergeLayout, KERNEL};
use crate::error::Result;
use crate::gpu::{kernel_int, DevMut, DevRef, Gpu, Kernel, Shape};
use crate::methods::common::csr::{CsrArgs, DeviceCsr};
use crate::methods::common::gpu::{Call, Launches, Resident};
use crate::methods::{DeviceLayout, Layout};
use crate::scalar::{Idx, Scalar};

/// Threads per block of the fix-up kernel.
const FIX_THREADS: u32 = 256;

crate::kernel_args! {
    /// `merge_spmv`'s arguments.
    pub(super) struct MergeArgs<'a, T> {
        csr: CsrArgs<'a, T>,
        tile_row: DevRef<'a, Idx>,
        tile_nz: DevRef<'a, Idx>,
        carry: DevMut<'a, T>,
        items: i32,
    }
}

crate::kernel_args! {
    /// `merge_fixup`'s arguments.
    pub(super) struct MergeFixupArgs<'a, T> {
        nshort: i32,
        nlong: i32,
        run_row: DevRef<'a, Idx>,
        run_first: DevRef<'a, Idx>,
        run_end: DevRef<'a, Idx>,
        carry: DevRef<'a, T>,
        y: DevMut<'a, T>,
        alpha: T,
    }
}

/// The device copy of a merge layout.
pub(super) struct DeviceMerge<T: Scalar> {
    spmv: Kernel<MergeArgs<'static, T>>,
    fixup: Kernel<MergeFixupArgs<'static, T>>,
    threads: u32,
    items: u32,
    ntiles: usize,
    smem: u32,
    nshort: usize,
    nlong: usize,
    a: DeviceCsr<T>,
    tile_row: CudaSlice<Idx>,
    tile_nz: CudaSlice<Idx>,
    run_row: CudaSlice<Idx>,
    run_first: CudaSlice<Idx>,
    run_end: CudaSlice<Idx>,
    carry: CudaSlice<T>,
}

pub(super) fn upload<T: Scalar>(
    l: &MergeLayout<T>,
    gpu: &Arc<Gpu>,
) -> Result<Box<dyn DeviceLayout<T>>> {
    let room = DeviceMerge {
        spmv: gpu.kernel::<T, _>(&KERNEL, "merge_spmv")?,
        fixup: gpu.kernel::<T, _>(&KERNEL, "merge_fixup")?,
        threads: l.threads,
        items: l.items,
        ntiles: l.ntiles(),
        smem: smem_bytes::<T>(l.tile_items()) as u32,
        nshort: l.nshort,
        nlong: l.nruns() - l.nshort,
        a: DeviceCsr::upload(gpu, &l.a)?,
        tile_row: gpu.upload(&l.tile_row)?,
        tile_nz: gpu.upload(&l.tile_nz)?,
        run_row: gpu.upload(&l.run_row)?,
        run_first: gpu.upload(&l.run_first)?,
        run_end: gpu.upload(&l.run_end)?,
        carry: gpu.alloc_zeros::<T>(l.ntiles())?,
    };
    Ok(Resident::boxed(room.a.dims(), l.footprint_bytes(), room))
}

impl<T: Scalar> Launches<T> for DeviceMerge<T> {
    unsafe fn run(&self, gpu: &Gpu, mut c: Call<'_, T>) -> Result<()> {
        if self.ntiles == 0 {
            return Ok(());
        }
        let args = MergeArgs {
            csr: self.a.args("merge nrows", &mut c)?,
            tile_row: DevRef::new(&self.tile_row),
            tile_nz: DevRef::new(&self.tile_nz),
            carry: DevMut::scratch(&self.carry),
            items: self.items as i32,
        };
        let shape = Shape::ctas(self.ntiles, self.threads).shared(self.smem);
        // SAFETY: tile_row/tile_nz have ntiles + 1 entries, carry ntiles; the dynamic shared
        // memory is what the kernel lays out for blockDim.x · items steps; x has ncols and y
        // nrows entries (checked by DeviceLayout::run).
        unsafe { gpu.launch(&self.spmv, shape, &args) }?;

        let short_blocks = self.nshort.div_ceil(FIX_THREADS as usize);
        let long_blocks = self.nlong.div_ceil((FIX_THREADS / 32) as usize);
        let args = MergeFixupArgs {
            nshort: kernel_int("merge short carry runs", self.nshort)?,
            nlong: kernel_int("merge long carry runs", self.nlong)?,
            run_row: DevRef::new(&self.run_row),
            run_first: DevRef::new(&self.run_first),
            run_end: DevRef::new(&self.run_end),
            carry: DevRef::new(&self.carry),
            y: DevMut::new(c.y),
            alpha: c.alpha,
        };
        // One thread per short run, then one warp per long run (none when no row spans tiles).
        let shape = Shape::ctas(short_blocks + long_blocks, FIX_THREADS);
        // SAFETY: the run arrays have nshort + nlong entries with tile ranges inside carry;
        // rows are < nrows.
        unsafe { gpu.launch(&self.fixup, shape, &args) }
    }
}
