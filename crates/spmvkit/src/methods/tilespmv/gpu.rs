//! Upload and launch of `tilespmv_spmv` (kernel.cu) after the y prologue (y = βy, the zeroing
//! the atomics need, inside the call: `Gpu::y_prologue`): 64-thread CTAs (two warps, as the
//! original), a warp per work unit, then threads for the deferred COO entries.

use std::sync::Arc;

use cudarc::driver::CudaSlice;

use super::{TileLayout, KERNEL};
use crate::error::Result;
use crate::gpu::{kernel_int, DevMut, DevRef, Gpu, Kernel, Shape, YPrologue};
use crate::methods::common::gpu::{Call, Launches, Resident};
use crate::methods::{DeviceLayout, Layout};
use crate::scalar::{Idx, Scalar};

const THREADS: u32 = 64;
/// Threads for the deferred COO part (each strides).
const DEF_THREADS_MAX: usize = 1 << 16;

crate::kernel_args! {
    /// `tilespmv_spmv`'s parameters.
    pub(super) struct TileArgs<'a, T> {
        nrows: i32,
        ncols: i32,
        nunits: i32,
        unit_row: DevRef<'a, Idx>,
        unit_first: DevRef<'a, Idx>,
        unit_count: DevRef<'a, Idx>,
        tile_col: DevRef<'a, Idx>,
        tile_info: DevRef<'a, u32>,
        tile_val: DevRef<'a, Idx>,
        tile_idx: DevRef<'a, Idx>,
        vals: DevRef<'a, T>,
        idx: DevRef<'a, u8>,
        ndef: i32,
        def_row: DevRef<'a, Idx>,
        def_col: DevRef<'a, Idx>,
        def_val: DevRef<'a, T>,
        x: DevRef<'a, T>,
        y: DevMut<'a, T>,
        alpha: T,
    }
}

pub(super) struct DeviceTile<T: Scalar> {
    scale: YPrologue<T>,
    k: Kernel<TileArgs<'static, T>>,
    nunits: usize,
    ndef: usize,
    unit_row: CudaSlice<Idx>,
    unit_first: CudaSlice<Idx>,
    unit_count: CudaSlice<Idx>,
    tile_col: CudaSlice<Idx>,
    tile_info: CudaSlice<u32>,
    tile_val: CudaSlice<Idx>,
    tile_idx: CudaSlice<Idx>,
    vals: CudaSlice<T>,
    idx: CudaSlice<u8>,
    def_row: CudaSlice<Idx>,
    def_col: CudaSlice<Idx>,
    def_val: CudaSlice<T>,
}

pub(super) fn upload<T: Scalar>(
    l: &TileLayout<T>,
    gpu: &Arc<Gpu>,
) -> Result<Box<dyn DeviceLayout<T>>> {
    let room = DeviceTile {
        scale: gpu.y_prologue::<T>()?,
        k: gpu.kernel::<T, _>(&KERNEL, "tilespmv_spmv")?,
        nunits: l.unit_row.len(),
        ndef: l.def_row.len(),
        unit_row: gpu.upload(&l.unit_row)?,
        unit_first: gpu.upload(&l.unit_first)?,
        unit_count: gpu.upload(&l.unit_count)?,
        tile_col: gpu.upload(&l.tile_col)?,
        tile_info: gpu.upload(&l.tile_info)?,
        tile_val: gpu.upload(&l.tile_val)?,
        tile_idx: gpu.upload(&l.tile_idx)?,
        vals: gpu.upload(&l.vals)?,
        idx: gpu.upload(&l.idx)?,
        def_row: gpu.upload(&l.def_row)?,
        def_col: gpu.upload(&l.def_col)?,
        def_val: gpu.upload(&l.def_val)?,
    };
    Ok(Resident::boxed(
        (l.nrows, l.ncols),
        l.footprint_bytes(),
        room,
    ))
}

impl<T: Scalar> Launches<T> for DeviceTile<T> {
    unsafe fn run(&self, gpu: &Gpu, c: Call<'_, T>) -> Result<()> {
        self.scale.run(gpu, c.y, c.nrows, c.beta)?;
        let threads = self.nunits * 32 + self.ndef.min(DEF_THREADS_MAX);
        let args = TileArgs {
            nrows: kernel_int("tilespmv nrows", c.nrows)?,
            ncols: kernel_int("tilespmv ncols", c.ncols)?,
            nunits: kernel_int("tilespmv work units", self.nunits)?,
            unit_row: DevRef::new(&self.unit_row),
            unit_first: DevRef::new(&self.unit_first),
            unit_count: DevRef::new(&self.unit_count),
            tile_col: DevRef::new(&self.tile_col),
            tile_info: DevRef::new(&self.tile_info),
            tile_val: DevRef::new(&self.tile_val),
            tile_idx: DevRef::new(&self.tile_idx),
            vals: DevRef::new(&self.vals),
            idx: DevRef::new(&self.idx),
            ndef: kernel_int("tilespmv deferred entries", self.ndef)?,
            def_row: DevRef::new(&self.def_row),
            def_col: DevRef::new(&self.def_col),
            def_val: DevRef::new(&self.def_val),
            x: DevRef::new(c.x),
            y: DevMut::new(c.y),
            alpha: c.alpha,
        };
        // SAFETY: the arrays have the lengths the layout builder gave them; tile offsets stay
        // inside vals/idx; rows < nrows, columns checked against ncols (tiles) or < ncols
        // (deferred entries); x has ncols and y nrows entries (checked by DeviceLayout::run).
        unsafe { gpu.launch(&self.k, Shape::thread_per_item(threads, THREADS), &args) }
    }
}
