//! Upload and launch of `csc_atomic` (kernel.cu) after the y prologue. The prologue runs first on
//! every call with rows (`Gpu::y_prologue_kernel`: a grid-stride loop over at most `sm_count · 8`
//! blocks of 256); the atomic kernel then runs one warp per column, `threads / 32` columns per
//! block, when there is anything to add (stream order puts every atomic after the scaling).

use super::{CscLayout, KERNEL};
use crate::error::Result;
use crate::gpu::{kernel_int, DevMut, DevRef, Gpu, Kernel, Shape, YPrologue};
use crate::methods::common::gpu::{Call, Launches};
use crate::methods::common::room::device_room;
use crate::scalar::{Idx, Scalar};

/// CTAs per SM of the y prologue (one grid-stride launch for every β).
const SCALE_CTAS_PER_SM: usize = 8;

crate::device_args! {
    /// A CSC matrix on the device.
    pub(super) struct CscArrays<T> from l: &CscLayout<T>;
    /// `csc_atomic`'s arguments.
    pub(super) struct CscAtomicArgs<'a, T> {
        ncols: i32 = kernel_int("csc ncols", l.a.ncols())?,
        col_ptr: &[Idx] = l.a.col_ptr(),
        row_idx: &[Idx] = l.a.row_idx(),
        vals: &[T] = l.a.vals(),
        x: DevRef<'a, T>,
        y: DevMut<'a, T>,
        alpha: T,
    }
}

device_room! {
    /// The device copy of a csc layout.
    pub(super) struct DeviceCsc<T> {
        scale: YPrologue<T> = gpu.y_prologue_kernel::<T>(SCALE_CTAS_PER_SM)?,
        atomic: Kernel<CscAtomicArgs<'static, T>> = gpu.kernel::<T, _>(&KERNEL, "csc_atomic")?,
        nnz: usize = l.a.nnz(),
        threads: u32 = l.threads,
        arrays: CscArrays<T> = CscArrays::upload(gpu, l)?,
    }
    fn upload(l: &CscLayout<T>, gpu) -> Resident((l.a.nrows(), l.a.ncols()), l.bytes());
}

impl<T: Scalar> Launches<T> for DeviceCsc<T> {
    unsafe fn run(&self, gpu: &Gpu, c: Call<'_, T>) -> Result<()> {
        self.scale.run(gpu, c.y, c.nrows, c.beta)?;
        if self.nnz == 0 {
            return Ok(());
        }
        let args = self.arrays.args(DevRef::new(c.x), DevMut::new(c.y), c.alpha);
        // SAFETY: col_ptr has ncols + 1 entries, row_idx and vals nnz (a validated Csc), row
        // indices < nrows <= len(y), x has at least ncols entries (checked by DeviceLayout::run).
        unsafe {
            gpu.launch(
                &self.atomic,
                Shape::warp_per_item(c.ncols, self.threads),
                &args,
            )
        }
    }
}
