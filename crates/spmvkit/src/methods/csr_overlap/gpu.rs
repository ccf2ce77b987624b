//! Upload and launch of `csr_overlap` (kernel.cu) for both methods.
//!
//! Grid of one launch: `long_ctas` = min(long-row tasks, B) CTAs for the extra-long rows first, then
//! ⌈n/per_cta⌉ CTAs of per_cta = ⌈n/B⌉ consecutive batches each, B = ctas_per_sm × SM count;
//! `threads` threads per CTA and the two double buffers as dynamic shared memory.
//!
//! Partial: one launch on `gpu.stream()`; the matrix stays on the device.
//!
//! Full: values and column indices wait in pinned host buffers (filled at upload, untimed);
//! their device buffers are filled inside every call. The call records an event on
//! `gpu.stream()`; big batch i's stream waits for it and for "copied i-1" (so the copies run one
//! after the other and batch i's kernel overlaps copy i+1), copies its nonzero range (values and
//! column indices, `cuMemcpyHtoDAsync`), records "copied i", and launches its batches (the last
//! one also the long rows), then records "done i";
//! `gpu.stream()` waits for every "done i". So the call is ordered after earlier work and before
//! later work on `gpu.stream()`, and can be captured into a CUDA graph (fork and join by events).

use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream};

use super::{buffer_cap, smem_bytes, BigBatch, OverlapLayout, KERNEL};
use crate::error::{Error, Result};
use crate::gpu::{kernel_int, DevRef, Gpu, Kernel, PinnedSource, Shape};
use crate::methods::common::gpu::{Axpby, Call, Launches};
use crate::methods::common::room::device_room;
use crate::methods::Layout;
use crate::scalar::{Idx, Scalar};

/// CSR-Full-Overlap's per-call copy machinery.
struct Full<T> {
    big: Vec<BigBatch>,
    streams: Vec<Arc<CudaStream>>,
    /// The pinned copies the call uploads from (dropping them waits for pending copies).
    host_cols: PinnedSource<Idx>,
    host_vals: PinnedSource<T>,
    start: CudaEvent,
    copied: Vec<CudaEvent>,
    done: Vec<CudaEvent>,
}

crate::device_args! {
    /// An overlap layout's arrays on the device, all but the nonzeros' (which
    /// CSR-Full-Overlap fills inside every call).
    pub(super) struct OverlapArrays<T> from l: &OverlapLayout<T>;
    /// `csr_overlap`'s parameters.
    pub(super) struct OverlapArgs<'a, T> {
        batch_rows_se: &[Idx] = &l.batch_rows_flat(),
        batch_vlog: &[u8] = &l.vlog,
        first_batch: i32,
        nbatches: i32,
        per_cta: i32,
        long_tasks: &[Idx],
        ntasks: i32,
        long_ctas: i32,
        long_rows: &[Idx] = &l.part.long_rows,
        long_first: &[Idx],
        long_count: &[Idx],
        /// One partial sum per long-row task.
        long_partial: &mut [T; l.ntasks()],
        /// One ticket counter per long row (zero between calls: the last CTA of a row resets
        /// it).
        long_counter: &mut [u32; l.part.long_rows.len()],
        row_ptr: &[Idx] = l.a.row_ptr(),
        col_idx: DevRef<'a, Idx>,
        vals: DevRef<'a, T>,
        axpby: Axpby<'a, T>,
        vcap: i32 = buffer_cap(l.cfg.max_batch_size, T::BYTES) as i32,
        ccap: i32 = buffer_cap(l.cfg.max_batch_size, 4) as i32,
    }
}

device_room! {
    /// The device copy of an overlap layout.
    pub(super) struct DeviceOverlap<T> {
        k: Kernel<OverlapArgs<'static, T>> = k,
        threads: u32 = l.cfg.threads,
        ctas: usize = gpu.sm_count().max(1) * l.cfg.ctas_per_sm as usize,
        smem: u32 = smem_bytes::<T>(l.cfg.max_batch_size) as u32,
        nbatches: usize = l.part.batches.len(),
        ntasks: usize = l.ntasks(),
        col_idx: CudaSlice<Idx> = col_idx,
        vals: CudaSlice<T> = vals,
        arrays: OverlapArrays<T> = OverlapArrays::upload(gpu, l)?,
        full: Option<Full<T>> = full,
    }
    fn upload(l: &OverlapLayout<T>, gpu)
        -> Resident((l.a.nrows(), l.a.ncols()), l.footprint_bytes()) {
        let k = gpu.kernel::<T, _>(&KERNEL, "csr_overlap")?;
        let nnz = l.a.nnz();
        crate::gpu::check_int_loops("csr-overlap", l.a.nrows(), nnz)?;
        let (col_idx, vals, full) = match &l.big {
            None => (gpu.upload(l.a.col_idx())?, gpu.upload(l.a.vals())?, None),
            Some(big) => {
                let full = Full::new(gpu, l, big)?;
                (
                    gpu.alloc_zeros::<Idx>(nnz)?,
                    gpu.alloc_zeros::<T>(nnz)?,
                    Some(full),
                )
            }
        };
    }
}

impl<T: Scalar> Full<T> {
    /// The pinned copies of the layout's column indices and values, a stream and two events per
    /// big batch, and the start event.
    fn new(gpu: &Gpu, l: &OverlapLayout<T>, big: &[BigBatch]) -> Result<Self> {
        let host_cols = gpu.pinned_source(l.a.col_idx())?;
        let host_vals = gpu.pinned_source(l.a.vals())?;
        let streams = (0..big.len())
            .map(|_| gpu.new_stream())
            .collect::<Result<Vec<_>>>()?;
        let copied = (0..big.len())
            .map(|_| event(gpu))
            .collect::<Result<Vec<_>>>()?;
        let done = (0..big.len())
            .map(|_| event(gpu))
            .collect::<Result<Vec<_>>>()?;
        Ok(Full {
            big: big.to_vec(),
            streams,
            host_cols,
            host_vals,
            start: event(gpu)?,
            copied,
            done,
        })
    }
}

fn event(gpu: &Gpu) -> Result<CudaEvent> {
    gpu.context()
        .new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING))
        .map_err(|e| Error::cuda("csr-full-overlap: creating an event", e))
}

impl<T: Scalar> DeviceOverlap<T> {
    /// One launch on `stream`: batches [first, first + n), plus the long rows if `with_long`.
    ///
    /// # Safety
    ///
    /// As [`Launches::run`]: x holds at least ncols and y at least nrows elements; `stream` is
    /// `gpu.stream()` or a side stream ordered against it by events (`run`).
    unsafe fn launch(
        &self,
        gpu: &Gpu,
        stream: &CudaStream,
        (first, n, with_long): (usize, usize, bool),
        c: &mut Call<'_, T>,
    ) -> Result<()> {
        let per_cta = OverlapLayout::<T>::per_cta(n, self.ctas);
        let batch_ctas = n.div_ceil(per_cta);
        let long_ctas = if with_long {
            self.ntasks.min(self.ctas)
        } else {
            0
        };
        let ntasks = if with_long {
            kernel_int("csr-overlap long-row tasks", self.ntasks)?
        } else {
            0
        };
        // the launch's fields in order: first_batch, nbatches, per_cta, ntasks, long_ctas, the
        // nonzeros, the operands
        let args = self.arrays.args(
            kernel_int("csr-overlap first batch", first)?,
            kernel_int("csr-overlap batches", n)?,
            kernel_int("csr-overlap batches per CTA", per_cta)?,
            ntasks,
            kernel_int("csr-overlap long-row CTAs", long_ctas)?,
            DevRef::new(&self.col_idx),
            DevRef::new(&self.vals),
            c.axpby(),
        );
        let shape = Shape::ctas(batch_ctas + long_ctas, self.threads).shared(self.smem);
        // SAFETY: batch_rows holds 2 entries and vlog 1 per batch, [first, first + n) lies within
        // the batches; long_tasks holds 4 entries and long_partial 1 per task, whose long-row
        // indices address long_rows, long_first, long_count and long_counter (zero on entry:
        // zeroed at upload, reset by each row's last CTA); row_ptr has nrows + 1 entries, col_idx
        // and vals nnz, x ncols and y nrows (this function's contract); the dynamic shared memory
        // is 2·(vcap·sizeof(real) + ccap·4) bytes (≤ 48 KiB, checked in prepare), which the
        // kernel lays out; `stream` is ordered against gpu.stream() by the caller's events.
        unsafe { gpu.launch_on(stream, &self.k, shape, &args) }
    }

    /// Full: copies [start, end) of values and column indices from the pinned buffers on `s`.
    fn copy_range(&self, f: &Full<T>, s: &Arc<CudaStream>, start: usize, end: usize) -> Result<()> {
        f.host_cols.copy_range_async(
            "csr-full-overlap: column indices",
            &self.col_idx,
            start,
            end,
            s,
        )?;
        f.host_vals
            .copy_range_async("csr-full-overlap: values", &self.vals, start, end, s)
    }
}

impl<T: Scalar> Launches<T> for DeviceOverlap<T> {
    unsafe fn run(&self, gpu: &Gpu, mut c: Call<'_, T>) -> Result<()> {
        let Some(f) = &self.full else {
            // SAFETY: x and y as this function's contract requires.
            return unsafe { self.launch(gpu, gpu.stream(), (0, self.nbatches, true), &mut c) };
        };
        let ev = |r: std::result::Result<(), cudarc::driver::DriverError>| {
            r.map_err(|e| Error::cuda("csr-full-overlap: stream ordering", e))
        };
        let main = gpu.stream();
        ev(f.start.record(main))?;
        let count = f.big.len();
        for (i, bb) in f.big.iter().enumerate() {
            let s = &f.streams[i];
            ev(s.wait(&f.start))?;
            // Copies go one after the other (Alg. 7: big batch i+1 is copied while batch i
            // computes). Issued at once, the copies shared the link and all finished together,
            // so no kernel overlapped any copy (measurements: docs/methods/csr-overlap.md).
            if i > 0 {
                ev(s.wait(&f.copied[i - 1]))?;
            }
            self.copy_range(f, s, bb.start_nnz, bb.end_nnz)?;
            // This stream already waited for copy i-1 (and so for every earlier copy) before
            // its own copy, so its kernel follows every copy up to i.
            ev(f.copied[i].record(s))?;
            // SAFETY: x and y as this function's contract requires.
            unsafe {
                let batches = (
                    bb.start_batch,
                    bb.end_batch - bb.start_batch,
                    i + 1 == count,
                );
                self.launch(gpu, s, batches, &mut c)
            }?;
            ev(f.done[i].record(s))?;
        }
        for d in &f.done {
            ev(main.wait(d))?;
        }
        Ok(())
    }
}
