//! Upload and launch of `tilespmv_spmv` (kernel.cu) after the y prologue (y = βy, the zeroing
//! the atomics need, inside the call: `Gpu::y_prologue`): 64-thread CTAs (two warps, as the
//! original), a warp per work unit, then threads for the deferred COO entries.

use super::{TileLayout, KERNEL};
use crate::error::Result;
use crate::gpu::{kernel_int, DevMut, DevRef, Gpu, Kernel, Shape, YPrologue};
use crate::methods::common::gpu::{Call, Launches};
use crate::methods::common::room::device_room;
use crate::methods::Layout;
use crate::scalar::{Idx, Scalar};

const THREADS: u32 = 64;
/// Threads for the deferred COO part (each strides).
const DEF_THREADS_MAX: usize = 1 << 16;

crate::device_args! {
    /// A TileSpMV layout's arrays on the device.
    pub(super) struct TileArrays<T> from l: &TileLayout<T>;
    /// `tilespmv_spmv`'s parameters.
    pub(super) struct TileArgs<'a, T> {
        nrows: i32 = kernel_int("tilespmv nrows", l.nrows)?,
        ncols: i32 = kernel_int("tilespmv ncols", l.ncols)?,
        nunits: i32 = kernel_int("tilespmv work units", l.unit_row.len())?,
        unit_row: &[Idx],
        unit_first: &[Idx],
        unit_count: &[Idx],
        tile_col: &[Idx],
        tile_info: &[u32],
        tile_val: &[Idx],
        tile_idx: &[Idx],
        vals: &[T],
        idx: &[u8],
        ndef: i32 = kernel_int("tilespmv deferred entries", l.def_row.len())?,
        def_row: &[Idx],
        def_col: &[Idx],
        def_val: &[T],
        x: DevRef<'a, T>,
        y: DevMut<'a, T>,
        alpha: T,
    }
}

device_room! {
    pub(super) struct DeviceTile<T> {
        scale: YPrologue<T> = gpu.y_prologue::<T>()?,
        k: Kernel<TileArgs<'static, T>> = gpu.kernel::<T, _>(&KERNEL, "tilespmv_spmv")?,
        /// A warp per work unit, then a thread per deferred entry (at most `DEF_THREADS_MAX`).
        threads: usize = l.unit_row.len() * 32 + l.def_row.len().min(DEF_THREADS_MAX),
        arrays: TileArrays<T> = TileArrays::upload(gpu, l)?,
    }
    fn upload(l: &TileLayout<T>, gpu) -> Resident((l.nrows, l.ncols), l.footprint_bytes());
}

impl<T: Scalar> Launches<T> for DeviceTile<T> {
    unsafe fn run(&self, gpu: &Gpu, c: Call<'_, T>) -> Result<()> {
        self.scale.run(gpu, c.y, c.nrows, c.beta)?;
        let args = self.arrays.args(DevRef::new(c.x), DevMut::new(c.y), c.alpha);
        // SAFETY: the arrays have the lengths the layout builder gave them; tile offsets stay
        // inside vals/idx; rows < nrows, columns checked against ncols (tiles) or < ncols
        // (deferred entries); x has ncols and y nrows entries (checked by DeviceLayout::run).
        unsafe { gpu.launch(&self.k, Shape::thread_per_item(self.threads, THREADS), &args) }
    }
}
