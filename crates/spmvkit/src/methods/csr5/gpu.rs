//! Upload and launch of `csr5_spmv` + `csr5_calibrate` (kernel.cu): 128-thread CTAs (four warps,
//! as the original), a warp per tile, then a warp per tail row, then warps writing βy to the
//! empty rows; the calibrate pass (one thread per carry run, 256 per block) only when some row
//! spans tiles. The carry array (ntiles + 1 values) is allocated at upload. With `prep=gpu`
//! (default) upload runs `csr5_generate` on the uploaded CSR to build the transposed tiles, the
//! descriptors and the empty offsets on the device (and, with `verify=1`, compares them with
//! the host build).

use std::sync::Arc;

use cudarc::driver::CudaSlice;

use super::{Csr5Layout, Prep, KERNEL, OMEGA};
use crate::error::{Error, Result};
use crate::gpu::{kernel_int, DevMut, DevRef, Gpu, Kernel, Shape};
use crate::methods::common::gpu::{Axpby, Call, Launches, Resident};
use crate::methods::{DeviceLayout, Layout};
use crate::scalar::{Idx, Scalar};

const THREADS: u32 = 128;
const CAL_THREADS: u32 = 256;
/// Warps that write βy to the empty rows (each strides over them 32 at a time).
const EMPTY_WARPS_MAX: usize = 1024;

crate::device_args! {
    /// A CSR5 layout's arrays on the device that do not depend on `prep`, with the carries.
    pub(super) struct Csr5Arrays<T> from l: &Csr5Layout<T>;
    /// `csr5_spmv`'s parameters.
    pub(super) struct Csr5Args<'a, T> {
        ntiles: i32 = kernel_int("csr5 tiles", l.ntiles)?,
        sigma: i32 = l.sigma as i32,
        npacket: i32 = l.npacket as i32,
        y_bits: i32 = l.y_bits as i32,
        row_ptr: &[Idx] = l.a.row_ptr(),
        col_idx: DevRef<'a, Idx>,
        vals: DevRef<'a, T>,
        tile_ptr: &[Idx],
        tile_desc: DevRef<'a, u32>,
        empty_ptr: &[Idx],
        empty_offset: DevRef<'a, Idx>,
        empty_rows: &[Idx],
        nempty: i32 = kernel_int("csr5 empty rows", l.empty_rows.len())?,
        ntail: i32 = kernel_int("csr5 tail rows", l.ntail_rows())?,
        tail_end: i32 = kernel_int("csr5 tail end", l.tail_end)?,
        axpby: Axpby<'a, T>,
        /// One carry per tile, and one more.
        carry: &mut [T; l.ntiles + 1],
    }
}

crate::device_args! {
    /// A CSR5 layout's carry runs on the device.
    pub(super) struct RunArrays<T> from l: &Csr5Layout<T>;
    /// `csr5_calibrate`'s parameters.
    pub(super) struct Csr5CalibrateArgs<'a, T> {
        nruns: i32 = kernel_int("csr5 carry runs", l.run_row.len())?,
        run_row: &[Idx],
        run_first: &[Idx],
        run_end: &[Idx],
        carry: DevRef<'a, T>,
        y: DevMut<'a, T>,
        alpha: T,
    }
}

crate::kernel_args! {
    /// `csr5_generate`'s parameters.
    pub(super) struct Csr5GenerateArgs<'a, T> {
        ntiles: i32,
        sigma: i32,
        npacket: i32,
        y_bits: i32,
        nrows: i32,
        row_ptr: DevRef<'a, Idx>,
        col_in: DevRef<'a, Idx>,
        val_in: DevRef<'a, T>,
        tile_ptr: DevRef<'a, Idx>,
        empty_ptr: DevRef<'a, Idx>,
        col_out: DevMut<'a, Idx>,
        val_out: DevMut<'a, T>,
        tile_desc: DevMut<'a, u32>,
        empty_offset: DevMut<'a, Idx>,
    }
}

pub(super) struct DeviceCsr5<T: Scalar> {
    spmv: Kernel<Csr5Args<'static, T>>,
    calibrate: Kernel<Csr5CalibrateArgs<'static, T>>,
    /// `csr5_spmv`'s warps: a warp per tile, then a warp per tail row, then the empty rows'.
    warps: usize,
    nruns: usize,
    tiles: Tiles<T>,
    arrays: Csr5Arrays<T>,
    runs: RunArrays<T>,
}

/// The transposed tiles and what describes them: built on the host or by `csr5_generate`.
struct Tiles<T> {
    col_idx: CudaSlice<Idx>,
    vals: CudaSlice<T>,
    tile_desc: CudaSlice<u32>,
    empty_offset: CudaSlice<Idx>,
}

pub(super) fn upload<T: Scalar>(
    l: &Csr5Layout<T>,
    gpu: &Arc<Gpu>,
) -> Result<Box<dyn DeviceLayout<T>>> {
    let a = &l.a;
    let nseg = *l.empty_ptr.last().unwrap_or(&0) as usize;
    let arrays = Csr5Arrays::upload(gpu, l)?;
    let tiles = match l.prep {
        Prep::Host => {
            let h = l.tiles();
            Tiles {
                col_idx: gpu.upload(&h.col_idx)?,
                vals: gpu.upload(&h.vals)?,
                tile_desc: gpu.upload(&h.tile_desc)?,
                empty_offset: gpu.upload(&h.empty_offset)?,
            }
        }
        Prep::Gpu => {
            // the tail stays as copied; csr5_generate overwrites the tiles
            let mut t = Tiles {
                col_idx: gpu.upload(a.col_idx())?,
                vals: gpu.upload(a.vals())?,
                tile_desc: gpu.alloc_zeros::<u32>(l.ntiles * l.npacket * OMEGA)?,
                empty_offset: gpu.alloc_zeros::<Idx>(nseg)?,
            };
            if l.ntiles > 0 {
                let col_in = gpu.upload(a.col_idx())?;
                let val_in = gpu.upload(a.vals())?;
                let generate = gpu.kernel::<T, Csr5GenerateArgs<T>>(&KERNEL, "csr5_generate")?;
                let args = Csr5GenerateArgs {
                    ntiles: kernel_int("csr5 tiles", l.ntiles)?,
                    sigma: l.sigma as i32,
                    npacket: l.npacket as i32,
                    y_bits: l.y_bits as i32,
                    nrows: kernel_int("csr5 nrows", a.nrows())?,
                    row_ptr: DevRef::new(&arrays.row_ptr),
                    col_in: DevRef::new(&col_in),
                    val_in: DevRef::new(&val_in),
                    tile_ptr: DevRef::new(&arrays.tile_ptr),
                    empty_ptr: DevRef::new(&arrays.empty_ptr),
                    col_out: DevMut::new(&mut t.col_idx),
                    val_out: DevMut::new(&mut t.vals),
                    tile_desc: DevMut::new(&mut t.tile_desc),
                    empty_offset: DevMut::new(&mut t.empty_offset),
                };
                // SAFETY: inputs hold nnz entries, outputs nnz, ntiles·npacket·32 and nseg (the
                // host's count of flagged tiles' segments); a warp per tile.
                unsafe { gpu.launch(&generate, Shape::warp_per_item(l.ntiles, THREADS), &args) }?;
                // the inputs are freed on return: let the kernel finish first
                gpu.synchronize()?;
            }
            if l.verify {
                verify(gpu, l, &t)?;
            }
            t
        }
    };
    let empty_warps = l.empty_rows.len().div_ceil(32).min(EMPTY_WARPS_MAX);
    let room = DeviceCsr5 {
        spmv: gpu.kernel::<T, _>(&KERNEL, "csr5_spmv")?,
        calibrate: gpu.kernel::<T, _>(&KERNEL, "csr5_calibrate")?,
        warps: l.ntiles + l.ntail_rows() + empty_warps,
        nruns: l.run_row.len(),
        tiles,
        arrays,
        runs: RunArrays::upload(gpu, l)?,
    };
    Ok(Resident::boxed(
        (a.nrows(), a.ncols()),
        l.footprint_bytes(),
        room,
    ))
}

/// Compares what csr5_generate built with the host build (`verify=1`).
fn verify<T: Scalar>(gpu: &Gpu, l: &Csr5Layout<T>, t: &Tiles<T>) -> Result<()> {
    let h = l.tiles();
    let mut c = vec![0 as Idx; h.col_idx.len()];
    gpu.download(&t.col_idx, &mut c)?;
    let mut v = vec![T::zero(); h.vals.len()];
    gpu.download(&t.vals, &mut v)?;
    let mut d = vec![0u32; h.tile_desc.len()];
    gpu.download(&t.tile_desc, &mut d)?;
    let mut e = vec![0 as Idx; h.empty_offset.len()];
    gpu.download(&t.empty_offset, &mut e)?;
    let same_vals = v
        .iter()
        .zip(&h.vals)
        .all(|(a, b)| a.to_bits_u64() == b.to_bits_u64());
    for (what, ok) in [
        ("col_idx", c == h.col_idx),
        ("vals", same_vals),
        ("tile_desc", d == h.tile_desc),
        ("empty_offset", e == h.empty_offset),
    ] {
        if !ok {
            return Err(Error::Verification(format!(
                "csr5: csr5_generate's {what} differs from the host build"
            )));
        }
    }
    Ok(())
}

impl<T: Scalar> Launches<T> for DeviceCsr5<T> {
    unsafe fn run(&self, gpu: &Gpu, mut c: Call<'_, T>) -> Result<()> {
        if self.warps == 0 {
            return Ok(());
        }
        let t = &self.tiles;
        let args = self.arrays.args(
            DevRef::new(&t.col_idx),
            DevRef::new(&t.vals),
            DevRef::new(&t.tile_desc),
            DevRef::new(&t.empty_offset),
            c.axpby(),
        );
        // SAFETY: the arrays have the lengths the layout builder gave them (tile_desc
        // ntiles·npacket·32, tile_ptr ntiles + 1, carry ntiles + 1); rows and columns index y and
        // x in range (checked by DeviceLayout::run).
        unsafe { gpu.launch(&self.spmv, Shape::warp_per_item(self.warps, THREADS), &args) }?;
        let carry = DevRef::new(&self.arrays.carry);
        let args = self.runs.args(carry, DevMut::new(c.y), c.alpha);
        // One thread per carry run (none when no row spans tiles).
        let shape = Shape::thread_per_item(self.nruns, CAL_THREADS);
        // SAFETY: the runs index carry and y in range.
        unsafe { gpu.launch(&self.calibrate, shape, &args) }
    }
}
