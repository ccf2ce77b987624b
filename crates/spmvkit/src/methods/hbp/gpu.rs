//! Upload and launch of `hbp_spmv` + one combine kernel (kernel.cu). The SpMV kernel runs
//! `warps_per_cta` warps per CTA with `block_cols · sizeof(real)` bytes of dynamic shared memory
//! (the x segment; opted in above 48 KiB), as many CTAs as fit the GPU at once (occupancy query ×
//! SM count, at most one per `warps_per_cta` blocks); the fixed/competitive split follows from
//! that grid ([`HbpLayout::split`]). The combine runs one thread per row, 256 per CTA, and resets
//! the ticket counter for the next call. x is read in place (no padded copy). `phase=spmv` /
//! `phase=combine` launch one kernel alone (the Fig. 9 split; spmv then zeroes the counter first).

use cudarc::driver::CudaSlice;

use super::{Combine, HbpLayout, Phase, KERNEL};
use crate::error::Result;
use crate::gpu::{kernel_int, DevMut, DevRef, Gpu, Kernel, Shape};
use crate::methods::common::gpu::{Call, Launches, Ypby};
use crate::methods::common::room::device_room;
use crate::methods::Layout;
use crate::scalar::Scalar;

/// Threads per CTA of the combine kernels.
const COMBINE_THREADS: u32 = 256;

crate::device_args! {
    /// An HBP layout's arrays on the device, with the partial sums and the ticket counter.
    pub(super) struct HbpArrays<T> from l: &HbpLayout<T>;
    /// `hbp_spmv`'s parameters.
    pub(super) struct HbpArgs<'a, T> {
        nbr: i32 = kernel_int("hbp block rows", l.nbr)?,
        nbc: i32 = kernel_int("hbp block columns", l.nbc)?,
        nrows: i32 = kernel_int("hbp nrows", l.nrows)?,
        ncols: i32 = kernel_int("hbp ncols", l.ncols)?,
        block_rows: i32 = l.cfg.block_rows as i32,
        block_cols: i32 = l.cfg.block_cols as i32,
        dense: i32 = dense(l) as i32,
        blk_slot: &[u32],
        blk_group: &[u32],
        begin_nnz: &[u32],
        zero_row: &[i32],
        out_idx: &[u32] = if dense(l) { &l.output_hash } else { &l.out_pos },
        packed: &[u32] = &l.packed(),
        data: &[T],
        x: DevRef<'a, T>,
        mid: &mut [T; l.mid_len()],
        per_cta: i32,
        nfixed: i32,
        nblocks: i32 = kernel_int("hbp blocks", l.nbr * l.nbc)?,
        grab: i32 = l.cfg.grab as i32,
        compete_cta: i32 = l.cfg.compete_cta as i32,
        /// 0 on entry: zeroed at upload, reset by every combine.
        ticket: &mut [i32; 1],
    }
}

/// Whether the layout combines through the dense hash (`combine=dense`).
fn dense<T: Scalar>(l: &HbpLayout<T>) -> bool {
    l.cfg.combine == Combine::Dense
}

crate::kernel_args! {
    /// `hbp_combine_dense`'s parameters.
    pub(super) struct CombineDenseArgs<'a, T> {
        nrows: i32,
        nbc: i32,
        block_rows: i32,
        mid: DevRef<'a, T>,
        out: Ypby<'a, T>,
        ticket: DevMut<'a, i32>,
    }
}

crate::kernel_args! {
    /// `hbp_combine_sparse`'s parameters.
    pub(super) struct CombineSparseArgs<'a, T> {
        nrows: i32,
        cptr: DevRef<'a, u32>,
        mid: DevRef<'a, T>,
        out: Ypby<'a, T>,
        ticket: DevMut<'a, i32>,
    }
}

/// The combine kernel of the layout's `combine` option.
enum CombineKernel<T: Scalar> {
    Dense(Kernel<CombineDenseArgs<'static, T>>),
    Sparse(Kernel<CombineSparseArgs<'static, T>>),
}

device_room! {
    /// The device copy of an HBP layout.
    pub(super) struct DeviceHbp<T> {
        spmv: Kernel<HbpArgs<'static, T>> = spmv,
        combine: CombineKernel<T> = combine,
        nblocks: usize = l.nblocks(),
        nbc: usize = l.nbc,
        block_rows: usize = l.cfg.block_rows,
        threads: u32 = threads,
        ctas: u32 = ctas as u32,
        smem: u32 = smem,
        per_cta: i32 = kernel_int("hbp blocks per CTA", per_cta)?,
        nfixed: i32 = kernel_int("hbp fixed blocks", nfixed)?,
        phase: Phase = l.cfg.phase,
        cptr: CudaSlice<u32> = gpu.upload(&l.cptr)?,
        arrays: HbpArrays<T> = HbpArrays::upload(gpu, l)?,
    }
    fn upload(l: &HbpLayout<T>, gpu) -> Resident((l.nrows, l.ncols), l.footprint_bytes()) {
        let spmv = gpu.kernel::<T, HbpArgs<T>>(&KERNEL, "hbp_spmv")?;
        let combine = if dense(l) {
            CombineKernel::Dense(gpu.kernel::<T, _>(&KERNEL, "hbp_combine_dense")?)
        } else {
            CombineKernel::Sparse(gpu.kernel::<T, _>(&KERNEL, "hbp_combine_sparse")?)
        };
        let smem = (l.cfg.block_cols * T::BYTES) as u32;
        if smem > 48 * 1024 {
            spmv.allow_shared(smem)?;
        }
        let threads = 32 * l.cfg.warps_per_cta;
        let ctas = spmv
            .resident_ctas(gpu, threads, smem)?
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
        gpu.ensure_fits("hbp layout", l.footprint_bytes())?;
    }
}

impl<T: Scalar> DeviceHbp<T> {
    /// Launches the combine over the first `nrows` rows (0: only the ticket reset).
    ///
    /// # Safety
    ///
    /// y holds at least `nrows` elements.
    unsafe fn combine(&self, gpu: &Gpu, nrows: usize, out: Ypby<'_, T>) -> Result<()> {
        // One thread per row, and one CTA when there is none (it resets the ticket).
        let shape = Shape::thread_per_item(nrows.max(1), COMBINE_THREADS);
        let n = kernel_int("hbp nrows", nrows)?;
        let (ticket, mid) = (
            DevMut::scratch(&self.arrays.ticket),
            DevRef::new(&self.arrays.mid),
        );
        // SAFETY (both): mid holds rows × column blocks (dense) or cptr[nrows] (sparse)
        // partials; y has at least nrows entries (this function's contract).
        match &self.combine {
            CombineKernel::Dense(k) => {
                let args = CombineDenseArgs {
                    nrows: n,
                    nbc: self.nbc as i32,
                    block_rows: self.block_rows as i32,
                    mid,
                    out,
                    ticket,
                };
                unsafe { gpu.launch(k, shape, &args) }
            }
            CombineKernel::Sparse(k) => {
                let args = CombineSparseArgs {
                    nrows: n,
                    cptr: DevRef::new(&self.cptr),
                    mid,
                    out,
                    ticket,
                };
                unsafe { gpu.launch(k, shape, &args) }
            }
        }
    }
}

impl<T: Scalar> Launches<T> for DeviceHbp<T> {
    unsafe fn run(&self, gpu: &Gpu, mut c: Call<'_, T>) -> Result<()> {
        let nrows = c.nrows;
        if self.phase == Phase::Spmv {
            // timing the SpMV part alone: a combine over no rows resets the ticket counter
            // SAFETY: no row is written.
            unsafe { self.combine(gpu, 0, c.ypby()) }?;
        }
        if self.nblocks > 0 && self.phase != Phase::Combine {
            let args = self.arrays.args(DevRef::new(c.x), self.per_cta, self.nfixed);
            let shape = Shape::ctas(self.ctas as usize, self.threads).shared(self.smem);
            // SAFETY: the block, group, slot and nonzero arrays are the layout's (all indices
            // inside them, checked < 2^31 at build); mid has mid_len entries; per_cta · ctas =
            // nfixed ≤ nblocks; the dynamic shared memory holds block_cols values (opted in at
            // upload when > 48 KiB); the ticket counter is 0 on entry (zeroed at upload, reset by
            // every combine) and stays below 2^31 (checked at upload); x has ncols entries (this
            // function's contract).
            unsafe { gpu.launch(&self.spmv, shape, &args) }?;
        }
        if self.phase == Phase::Spmv {
            return Ok(());
        }
        // SAFETY: y has nrows entries (this function's contract).
        unsafe { self.combine(gpu, nrows, c.ypby()) }
    }
}
