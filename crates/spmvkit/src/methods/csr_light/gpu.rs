//! Upload and launch of `csr_light_v{V}` (kernel.cu). The grid is persistent: at most as many
//! blocks as fit on the device at once (`sm_count · 2048 / threads`), fewer when the matrix has
//! fewer rows than one grab per warp; warps then loop on the row counter. The two-word counter
//! is zeroed at upload, and the kernel's last block zeroes it again at the end of every call, so
//! `run` is a single launch. No launch when there are no rows.

use std::sync::Arc;

use cudarc::driver::CudaSlice;

use super::{CsrLightLayout, KERNEL};
use crate::error::Result;
use crate::gpu::{kernel_int, DevMut, DevRef, Gpu, Kernel, Shape};
use crate::methods::DeviceLayout;
use crate::scalar::{Idx, Scalar};

/// Resident threads per SM assumed when sizing the persistent grid (sm_80 and sm_90).
const THREADS_PER_SM: usize = 2048;

crate::kernel_args! {
    /// `csr_light_v{V}`'s arguments.
    pub(super) struct CsrLightArgs<'a, T> {
        nrows: i32,
        row_ptr: DevRef<'a, Idx>,
        col_idx: DevRef<'a, Idx>,
        vals: DevRef<'a, T>,
        x: DevRef<'a, T>,
        y: DevMut<'a, T>,
        alpha: T,
        beta: T,
        ctr: DevMut<'a, u32>,
        grab: i32,
    }
}

/// The device copy of a csr-light layout.
pub(super) struct DeviceCsrLight<T: Scalar> {
    k: Kernel<CsrLightArgs<'static, T>>,
    nrows: usize,
    ncols: usize,
    threads: u32,
    grab: u32,
    chunk: u32,
    row_ptr: CudaSlice<Idx>,
    col_idx: CudaSlice<Idx>,
    vals: CudaSlice<T>,
    /// [row counter, finished blocks], zero between calls.
    counter: CudaSlice<u32>,
    bytes: usize,
}

pub(super) fn upload<T: Scalar>(
    l: &CsrLightLayout<T>,
    gpu: &Arc<Gpu>,
) -> Result<Box<dyn DeviceLayout<T>>> {
    Ok(Box::new(DeviceCsrLight {
        k: gpu.kernel::<T, _>(&KERNEL, &format!("csr_light_v{}", l.vector))?,
        nrows: l.a.nrows(),
        ncols: l.a.ncols(),
        threads: l.threads,
        grab: l.grab,
        chunk: l.chunk(),
        row_ptr: gpu.upload(l.a.row_ptr())?,
        col_idx: gpu.upload(l.a.col_idx())?,
        vals: gpu.upload(l.a.vals())?,
        counter: gpu.alloc_zeros::<u32>(2)?,
        bytes: l.a.bytes() + 8,
    }))
}

impl<T: Scalar> DeviceLayout<T> for DeviceCsrLight<T> {
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
        let warps = (self.threads / 32) as usize;
        let resident = gpu.sm_count().max(1) * (THREADS_PER_SM / self.threads as usize).max(1);
        let needed = self.nrows.div_ceil(warps * self.chunk as usize);
        let args = CsrLightArgs {
            nrows: kernel_int("csr-light nrows", self.nrows)?,
            row_ptr: DevRef::new(&self.row_ptr),
            col_idx: DevRef::new(&self.col_idx),
            vals: DevRef::new(&self.vals),
            x: DevRef::new(x),
            y: DevMut::new(y),
            alpha,
            beta,
            ctr: DevMut::scratch(&self.counter),
            grab: self.grab as i32,
        };
        let shape = Shape::ctas(needed.clamp(1, resident), self.threads);
        // SAFETY: row_ptr has nrows + 1 entries, col_idx and vals nnz (a validated Csr), x ncols
        // and y nrows (checked by DeviceLayout::run); the counter is 2 words, zero on entry
        // (zeroed at upload and by the previous call's last block).
        unsafe { gpu.launch(&self.k, shape, &args) }
    }

    fn footprint_bytes(&self) -> usize {
        self.bytes
    }
}
