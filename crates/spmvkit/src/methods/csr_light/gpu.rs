//! Upload and launch of `csr_light_v{V}` (kernel.cu). The grid is persistent: at most as many
//! blocks as fit on the device at once (`sm_count · 2048 / threads`), fewer when the matrix has
//! fewer rows than one grab per warp; warps then loop on the row counter. The two-word counter
//! is zeroed at upload, and the kernel's last block zeroes it again at the end of every call, so
//! `run` is a single launch. No launch when there are no rows.

use super::{CsrLightLayout, KERNEL};
use crate::error::Result;
use crate::gpu::{Gpu, Kernel, Shape};
use crate::methods::common::csr::{CsrArgs, DeviceCsr};
use crate::methods::common::gpu::{Call, Launches};
use crate::methods::common::room::device_room;
use crate::scalar::Scalar;

/// Resident threads per SM assumed when sizing the persistent grid (sm_80 and sm_90).
const THREADS_PER_SM: usize = 2048;

crate::device_args! {
    /// A csr-light layout's counters on the device.
    pub(super) struct LightArrays<T> from l: &CsrLightLayout<T>;
    /// `csr_light_v{V}`'s arguments.
    pub(super) struct CsrLightArgs<'a, T> {
        csr: CsrArgs<'a, T>,
        /// [row counter, finished blocks], zero between calls.
        ctr: &mut [u32; 2],
        grab: i32 = l.grab as i32,
    }
}

device_room! {
    /// The device copy of a csr-light layout.
    pub(super) struct DeviceCsrLight<T> {
        k: Kernel<CsrLightArgs<'static, T>> =
            gpu.kernel::<T, _>(&KERNEL, &format!("csr_light_v{}", l.vector))?,
        threads: u32 = l.threads,
        chunk: u32 = l.chunk(),
        a: DeviceCsr<T> = DeviceCsr::upload(gpu, &l.a)?,
        arrays: LightArrays<T> = LightArrays::upload(gpu, l)?,
    }
    fn upload(l: &CsrLightLayout<T>, gpu) -> Resident((l.a.nrows(), l.a.ncols()), l.a.bytes() + 8);
}

impl<T: Scalar> Launches<T> for DeviceCsrLight<T> {
    unsafe fn run(&self, gpu: &Gpu, mut c: Call<'_, T>) -> Result<()> {
        let warps = (self.threads / 32) as usize;
        let resident = gpu.sm_count().max(1) * (THREADS_PER_SM / self.threads as usize).max(1);
        let needed = c.nrows.div_ceil(warps * self.chunk as usize);
        let args = self.arrays.args(self.a.args("csr-light nrows", &mut c)?);
        let shape = Shape::ctas(needed.clamp(1, resident), self.threads);
        // SAFETY: row_ptr has nrows + 1 entries, col_idx and vals nnz (a validated Csr), x ncols
        // and y nrows (checked by DeviceLayout::run); the counter is 2 words, zero on entry
        // (zeroed at upload and by the previous call's last block).
        unsafe { gpu.launch(&self.k, shape, &args) }
    }
}
