//! Upload and launch of `csr5_spmv` + `csr5_calibrate` (kernel.cu): 128-thread CTAs (four warps,
//! as the original), a warp per tile, then a warp per tail row, then warps writing βy to the
//! empty rows; the calibrate pass (one thread per carry run, 256 per block) only when some row
//! spans tiles. The carry array (ntiles + 1 values) is allocated at upload. With `prep=gpu`
//! (default) upload runs `csr5_generate` on the uploaded CSR to build the transposed tiles, the
//! descriptors and the empty offsets on the device (and, with `verify=1`, compares them with
//! the host build).

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};

use super::{Csr5Layout, Prep, KERNEL, OMEGA};
use crate::error::{Error, Result};
use crate::gpu::{grid_dim, kernel_int, Gpu};
use crate::methods::{DeviceLayout, Layout};
use crate::scalar::{Idx, Scalar};

const THREADS: u32 = 128;
const CAL_THREADS: u32 = 256;
/// Warps that write βy to the empty rows (each strides over them 32 at a time).
const EMPTY_WARPS_MAX: usize = 1024;

pub(super) struct DeviceCsr5<T: Scalar> {
    spmv: CudaFunction,
    calibrate: CudaFunction,
    nrows: usize,
    ncols: usize,
    ntiles: usize,
    sigma: i32,
    npacket: i32,
    y_bits: i32,
    ntail: usize,
    tail_end: i32,
    nempty: usize,
    nruns: usize,
    row_ptr: CudaSlice<Idx>,
    col_idx: CudaSlice<Idx>,
    vals: CudaSlice<T>,
    tile_ptr: CudaSlice<Idx>,
    tile_desc: CudaSlice<u32>,
    empty_ptr: CudaSlice<Idx>,
    empty_offset: CudaSlice<Idx>,
    empty_rows: CudaSlice<Idx>,
    run_row: CudaSlice<Idx>,
    run_first: CudaSlice<Idx>,
    run_end: CudaSlice<Idx>,
    carry: CudaSlice<T>,
    bytes: usize,
}

pub(super) fn upload<T: Scalar>(
    l: &Csr5Layout<T>,
    gpu: &Arc<Gpu>,
) -> Result<Box<dyn DeviceLayout<T>>> {
    let a = &l.a;
    let nseg = *l.empty_ptr.last().unwrap_or(&0) as usize;
    let tile_ptr = gpu.upload(&l.tile_ptr)?;
    let empty_ptr = gpu.upload(&l.empty_ptr)?;
    let row_ptr = gpu.upload(a.row_ptr())?;
    let (col_idx, vals, tile_desc, empty_offset) = match l.prep {
        Prep::Host => {
            let h = l.tiles();
            (
                gpu.upload(&h.col_idx)?,
                gpu.upload(&h.vals)?,
                gpu.upload(&h.tile_desc)?,
                gpu.upload(&h.empty_offset)?,
            )
        }
        Prep::Gpu => {
            // the tail stays as copied; csr5_generate overwrites the tiles
            let mut col_idx = gpu.upload(a.col_idx())?;
            let mut vals = gpu.upload(a.vals())?;
            let mut tile_desc = gpu.alloc_zeros::<u32>(l.ntiles * l.npacket * OMEGA)?;
            let mut empty_offset = gpu.alloc_zeros::<Idx>(nseg)?;
            if l.ntiles > 0 {
                let col_in = gpu.upload(a.col_idx())?;
                let val_in = gpu.upload(a.vals())?;
                let generate = gpu.function::<T>(&KERNEL, "csr5_generate")?;
                let cfg = LaunchConfig {
                    grid_dim: (
                        grid_dim("csr5 tiles", l.ntiles.div_ceil((THREADS / 32) as usize))?,
                        1,
                        1,
                    ),
                    block_dim: (THREADS, 1, 1),
                    shared_mem_bytes: 0,
                };
                let (ntiles, sigma, npacket, y_bits, nrows) = (
                    kernel_int("csr5 tiles", l.ntiles)?,
                    l.sigma as i32,
                    l.npacket as i32,
                    l.y_bits as i32,
                    kernel_int("csr5 nrows", a.nrows())?,
                );
                let mut b = gpu.stream().launch_builder(&generate);
                b.arg(&ntiles)
                    .arg(&sigma)
                    .arg(&npacket)
                    .arg(&y_bits)
                    .arg(&nrows)
                    .arg(&row_ptr)
                    .arg(&col_in)
                    .arg(&val_in)
                    .arg(&tile_ptr)
                    .arg(&empty_ptr)
                    .arg(&mut col_idx)
                    .arg(&mut vals)
                    .arg(&mut tile_desc)
                    .arg(&mut empty_offset);
                // SAFETY: the arguments match csr5_generate; inputs hold nnz entries, outputs
                // nnz, ntiles·npacket·32 and nseg (the host's count of flagged tiles' segments).
                unsafe { b.launch(cfg) }.map_err(|e| Error::cuda("csr5_generate launch", e))?;
                // the inputs are freed on return: let the kernel finish first
                gpu.synchronize()?;
            }
            if l.verify {
                verify(gpu, l, &col_idx, &vals, &tile_desc, &empty_offset)?;
            }
            (col_idx, vals, tile_desc, empty_offset)
        }
    };
    Ok(Box::new(DeviceCsr5 {
        spmv: gpu.function::<T>(&KERNEL, "csr5_spmv")?,
        calibrate: gpu.function::<T>(&KERNEL, "csr5_calibrate")?,
        nrows: a.nrows(),
        ncols: a.ncols(),
        ntiles: l.ntiles,
        sigma: l.sigma as i32,
        npacket: l.npacket as i32,
        y_bits: l.y_bits as i32,
        ntail: l.ntail_rows(),
        tail_end: kernel_int("csr5 tail end", l.tail_end)?,
        nempty: l.empty_rows.len(),
        nruns: l.run_row.len(),
        row_ptr,
        col_idx,
        vals,
        tile_ptr,
        tile_desc,
        empty_ptr,
        empty_offset,
        empty_rows: gpu.upload(&l.empty_rows)?,
        run_row: gpu.upload(&l.run_row)?,
        run_first: gpu.upload(&l.run_first)?,
        run_end: gpu.upload(&l.run_end)?,
        carry: gpu.alloc_zeros::<T>(l.ntiles + 1)?,
        bytes: l.footprint_bytes(),
    }))
}

/// Compares what csr5_generate built with the host build (`verify=1`).
fn verify<T: Scalar>(
    gpu: &Gpu,
    l: &Csr5Layout<T>,
    col_idx: &CudaSlice<Idx>,
    vals: &CudaSlice<T>,
    tile_desc: &CudaSlice<u32>,
    empty_offset: &CudaSlice<Idx>,
) -> Result<()> {
    let h = l.tiles();
    let mut c = vec![0 as Idx; h.col_idx.len()];
    gpu.download(col_idx, &mut c)?;
    let mut v = vec![T::zero(); h.vals.len()];
    gpu.download(vals, &mut v)?;
    let mut d = vec![0u32; h.tile_desc.len()];
    gpu.download(tile_desc, &mut d)?;
    let mut e = vec![0 as Idx; h.empty_offset.len()];
    gpu.download(empty_offset, &mut e)?;
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

impl<T: Scalar> DeviceLayout<T> for DeviceCsr5<T> {
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
        let empty_warps = self.nempty.div_ceil(32).min(EMPTY_WARPS_MAX);
        let warps = self.ntiles + self.ntail + empty_warps;
        if warps == 0 {
            return Ok(());
        }
        let wpb = (THREADS / 32) as usize;
        let cfg = LaunchConfig {
            grid_dim: (grid_dim("csr5 blocks", warps.div_ceil(wpb))?, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let ntiles = kernel_int("csr5 tiles", self.ntiles)?;
        let ntail = kernel_int("csr5 tail rows", self.ntail)?;
        let nempty = kernel_int("csr5 empty rows", self.nempty)?;
        let mut b = gpu.stream().launch_builder(&self.spmv);
        b.arg(&ntiles)
            .arg(&self.sigma)
            .arg(&self.npacket)
            .arg(&self.y_bits)
            .arg(&self.row_ptr)
            .arg(&self.col_idx)
            .arg(&self.vals)
            .arg(&self.tile_ptr)
            .arg(&self.tile_desc)
            .arg(&self.empty_ptr)
            .arg(&self.empty_offset)
            .arg(&self.empty_rows)
            .arg(&nempty)
            .arg(&ntail)
            .arg(&self.tail_end)
            .arg(x)
            .arg(&mut *y)
            .arg(&alpha)
            .arg(&beta)
            .arg(&self.carry);
        // SAFETY: the arguments match csr5_spmv in kernel.cu; the arrays have the lengths the
        // layout builder gave them (tile_desc ntiles·npacket·32, tile_ptr ntiles + 1, carry
        // ntiles + 1); rows and columns index y and x in range (checked by DeviceLayout::run).
        unsafe { b.launch(cfg) }.map_err(|e| Error::cuda("csr5 launch", e))?;
        if self.nruns == 0 {
            return Ok(());
        }
        let cfg = LaunchConfig {
            grid_dim: (
                grid_dim(
                    "csr5 calibrate blocks",
                    self.nruns.div_ceil(CAL_THREADS as usize),
                )?,
                1,
                1,
            ),
            block_dim: (CAL_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let nruns = kernel_int("csr5 carry runs", self.nruns)?;
        let mut b = gpu.stream().launch_builder(&self.calibrate);
        b.arg(&nruns)
            .arg(&self.run_row)
            .arg(&self.run_first)
            .arg(&self.run_end)
            .arg(&self.carry)
            .arg(y)
            .arg(&alpha);
        // SAFETY: the arguments match csr5_calibrate; the runs index carry and y in range.
        unsafe { b.launch(cfg) }.map_err(|e| Error::cuda("csr5 calibrate launch", e))?;
        Ok(())
    }

    fn footprint_bytes(&self) -> usize {
        self.bytes
    }
}
