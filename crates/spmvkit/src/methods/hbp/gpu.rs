//! Upload and launch of `hbp_spmv` + one combine kernel (kernel.cu). The SpMV kernel runs
//! `warps_per_cta` warps per CTA with `block_cols · sizeof(real)` bytes of dynamic shared memory
//! (the x segment; opted in above 48 KiB), as many CTAs as fit the GPU at once (occupancy query ×
//! SM count, at most one per `warps_per_cta` blocks); the fixed/competitive split follows from
//! that grid ([`HbpLayout::split`]). The combine runs one thread per row, 256 per CTA, and resets
//! the ticket counter for the next call. x is read in place (no padded copy). `phase=spmv` /
//! `phase=combine` launch one kernel alone (the Fig. 9 split; spmv then zeroes the counter first).

use std::sync::Arc;

use cudarc::driver::sys::CUfunction_attribute_enum;
use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};

use super::{Combine, HbpLayout, Phase, KERNEL};
use crate::error::{Error, Result};
use crate::gpu::{grid_dim, kernel_int, Gpu};
use crate::methods::{DeviceLayout, Layout};
use crate::scalar::Scalar;

/// Threads per CTA of the combine kernels.
const COMBINE_THREADS: u32 = 256;

/// The device copy of an HBP layout.
pub(super) struct DeviceHbp<T: Scalar> {
    spmv: CudaFunction,
    combine: CudaFunction,
    dense: bool,
    nrows: usize,
    ncols: usize,
    nbr: usize,
    nbc: usize,
    block_rows: usize,
    block_cols: usize,
    threads: u32,
    ctas: u32,
    smem: u32,
    per_cta: usize,
    nfixed: usize,
    grab: u32,
    compete_cta: bool,
    phase: Phase,
    blk_slot: CudaSlice<u32>,
    blk_group: CudaSlice<u32>,
    begin_nnz: CudaSlice<u32>,
    zero_row: CudaSlice<i32>,
    out_idx: CudaSlice<u32>,
    packed: CudaSlice<u32>,
    data: CudaSlice<T>,
    cptr: CudaSlice<u32>,
    mid: CudaSlice<T>,
    ticket: CudaSlice<i32>,
    bytes: usize,
}

pub(super) fn upload<T: Scalar>(
    l: &HbpLayout<T>,
    gpu: &Arc<Gpu>,
) -> Result<Box<dyn DeviceLayout<T>>> {
    let dense = l.cfg.combine == Combine::Dense;
    let spmv = gpu.function::<T>(&KERNEL, "hbp_spmv")?;
    let combine = gpu.function::<T>(
        &KERNEL,
        if dense {
            "hbp_combine_dense"
        } else {
            "hbp_combine_sparse"
        },
    )?;
    let smem = l.cfg.block_cols * T::BYTES;
    if smem > 48 * 1024 {
        spmv.set_attribute(
            CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            smem as i32,
        )
        .map_err(|e| Error::cuda("hbp: opting in to shared memory", e))?;
    }
    let threads = 32 * l.cfg.warps_per_cta;
    let per_sm = spmv
        .occupancy_max_active_blocks_per_multiprocessor(threads, smem, None)
        .map_err(|e| Error::cuda("hbp: occupancy query", e))?
        .max(1) as usize;
    let ctas = (gpu.sm_count() * per_sm)
        .min(l.nblocks().div_ceil(l.cfg.warps_per_cta as usize))
        .max(1);
    let (per_cta, nfixed) = l.split(ctas);
    // The kernel's block indices and ticket counter are 32-bit ints: the blocks plus the
    // tickets' overshoot (each warp takes at most `grab` past the end) must fit.
    let warps = ctas * l.cfg.warps_per_cta as usize;
    kernel_int(
        "hbp blocks plus ticket overshoot",
        l.nblocks() + warps * l.cfg.grab as usize,
    )?;
    let out_idx = if dense { &l.output_hash } else { &l.out_pos };
    gpu.ensure_fits("hbp layout", l.footprint_bytes())?;
    Ok(Box::new(DeviceHbp {
        spmv,
        combine,
        dense,
        nrows: l.nrows,
        ncols: l.ncols,
        nbr: l.nbr,
        nbc: l.nbc,
        block_rows: l.cfg.block_rows,
        block_cols: l.cfg.block_cols,
        threads,
        ctas: ctas as u32,
        smem: smem as u32,
        per_cta,
        nfixed,
        grab: l.cfg.grab,
        compete_cta: l.cfg.compete_cta,
        phase: l.cfg.phase,
        blk_slot: gpu.upload(&l.blk_slot)?,
        blk_group: gpu.upload(&l.blk_group)?,
        begin_nnz: gpu.upload(&l.begin_nnz)?,
        zero_row: gpu.upload(&l.zero_row)?,
        out_idx: gpu.upload(out_idx)?,
        packed: gpu.upload(&l.packed())?,
        data: gpu.upload(&l.data)?,
        cptr: gpu.upload(&l.cptr)?,
        mid: gpu.alloc_zeros::<T>(l.mid_len())?,
        ticket: gpu.alloc_zeros::<i32>(1)?,
        bytes: l.footprint_bytes(),
    }))
}

impl<T: Scalar> DeviceHbp<T> {
    /// Launches the combine over the first `nrows` rows (0: only the ticket reset).
    ///
    /// # Safety
    ///
    /// y holds at least `nrows` elements.
    unsafe fn combine(
        &self,
        gpu: &Gpu,
        nrows: usize,
        alpha: T,
        beta: T,
        y: &mut CudaSlice<T>,
    ) -> Result<()> {
        let cfg = LaunchConfig {
            grid_dim: (
                grid_dim(
                    "hbp combine blocks",
                    nrows.div_ceil(COMBINE_THREADS as usize).max(1),
                )?,
                1,
                1,
            ),
            block_dim: (COMBINE_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let nrows = kernel_int("hbp nrows", nrows)?;
        let mut b = gpu.stream().launch_builder(&self.combine);
        let (nbc, br) = (self.nbc as i32, self.block_rows as i32);
        if self.dense {
            b.arg(&nrows)
                .arg(&nbc)
                .arg(&br)
                .arg(&self.mid)
                .arg(y)
                .arg(&alpha)
                .arg(&beta)
                .arg(&self.ticket);
        } else {
            b.arg(&nrows)
                .arg(&self.cptr)
                .arg(&self.mid)
                .arg(y)
                .arg(&alpha)
                .arg(&beta)
                .arg(&self.ticket);
        }
        // SAFETY: the arguments match hbp_combine_dense / hbp_combine_sparse in kernel.cu; mid
        // holds rows × column blocks (dense) or cptr[nrows] (sparse) partials; y has at least
        // nrows entries (this function's contract).
        unsafe { b.launch(cfg) }.map_err(|e| Error::cuda("hbp combine launch", e))?;
        Ok(())
    }
}

impl<T: Scalar> DeviceLayout<T> for DeviceHbp<T> {
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
        if self.nrows == 0 {
            return Ok(());
        }
        let nblocks = self.nbr * self.nbc;
        if self.phase == Phase::Spmv {
            // timing the SpMV part alone: a combine over no rows resets the ticket counter
            // SAFETY: no row is written.
            unsafe { self.combine(gpu, 0, alpha, beta, y) }?;
        }
        if nblocks > 0 && self.phase != Phase::Combine {
            let (nbr, nbc, nrows, ncols) = (
                kernel_int("hbp block rows", self.nbr)?,
                kernel_int("hbp block columns", self.nbc)?,
                kernel_int("hbp nrows", self.nrows)?,
                kernel_int("hbp ncols", self.ncols)?,
            );
            let (br, bc, dense) = (
                self.block_rows as i32,
                self.block_cols as i32,
                self.dense as i32,
            );
            let (per_cta, nfixed, nblocks, grab, compete) = (
                kernel_int("hbp blocks per CTA", self.per_cta)?,
                kernel_int("hbp fixed blocks", self.nfixed)?,
                kernel_int("hbp blocks", nblocks)?,
                self.grab as i32,
                self.compete_cta as i32,
            );
            let cfg = LaunchConfig {
                grid_dim: (self.ctas, 1, 1),
                block_dim: (self.threads, 1, 1),
                shared_mem_bytes: self.smem,
            };
            let mut b = gpu.stream().launch_builder(&self.spmv);
            b.arg(&nbr)
                .arg(&nbc)
                .arg(&nrows)
                .arg(&ncols)
                .arg(&br)
                .arg(&bc)
                .arg(&dense)
                .arg(&self.blk_slot)
                .arg(&self.blk_group)
                .arg(&self.begin_nnz)
                .arg(&self.zero_row)
                .arg(&self.out_idx)
                .arg(&self.packed)
                .arg(&self.data)
                .arg(x)
                .arg(&self.mid)
                .arg(&per_cta)
                .arg(&nfixed)
                .arg(&nblocks)
                .arg(&grab)
                .arg(&compete)
                .arg(&self.ticket);
            // SAFETY: the arguments match hbp_spmv in kernel.cu; the block, group, slot and
            // nonzero arrays are the layout's (all indices inside them, checked < 2^31 at
            // build); mid has mid_len entries; per_cta · ctas = nfixed ≤ nblocks; the dynamic
            // shared memory holds block_cols values (opted in at upload when > 48 KiB); the
            // ticket counter is 0 on entry (zeroed at upload, reset by every combine) and stays
            // below 2^31 (checked at upload); x has ncols entries (this function's contract).
            unsafe { b.launch(cfg) }.map_err(|e| Error::cuda("hbp_spmv launch", e))?;
        }
        if self.phase == Phase::Spmv {
            return Ok(());
        }
        // SAFETY: y has nrows entries (this function's contract).
        unsafe { self.combine(gpu, self.nrows, alpha, beta, y) }
    }

    fn footprint_bytes(&self) -> usize {
        self.bytes
    }
}
