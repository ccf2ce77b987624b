//! Upload and launch of `csr-scalar`: the CSR arrays on the device, one thread per row in blocks
//! of 256, one launch per call.

use std::sync::Arc;

use super::KERNEL;
use crate::error::Result;
use crate::gpu::{Gpu, Kernel, Shape};
use crate::matrix::Csr;
use crate::methods::common::csr::{CsrArgs, DeviceCsr};
use crate::methods::common::gpu::{Call, Launches, Resident};
use crate::scalar::Scalar;

const BLOCK: u32 = 256;

/// `csr-scalar` resident on the GPU.
pub(super) struct CsrScalarDevice<T: Scalar> {
    k: Kernel<CsrArgs<'static, T>>,
    a: DeviceCsr<T>,
}

impl<T: Scalar> CsrScalarDevice<T> {
    /// Compiles the kernel first, so an NVRTC failure leaves nothing allocated, then uploads.
    pub(super) fn upload(gpu: &Arc<Gpu>, a: &Csr<T>) -> Result<Resident<Self>> {
        let room = CsrScalarDevice {
            k: gpu.kernel::<T, _>(&KERNEL, "csr_scalar")?,
            a: DeviceCsr::upload(gpu, a)?,
        };
        Ok(Resident::new(room.a.dims(), room.a.num_bytes(), room))
    }
}

impl<T: Scalar> Launches<T> for CsrScalarDevice<T> {
    unsafe fn run(&self, gpu: &Gpu, mut c: Call<'_, T>) -> Result<()> {
        let shape = Shape::thread_per_item(c.nrows, BLOCK);
        let args = self.a.args("csr-scalar nrows", &mut c)?;
        // SAFETY: x and y are long enough (checked by DeviceLayout::run) and the CSR arrays were
        // validated when the Csr was built.
        unsafe { gpu.launch(&self.k, shape, &args) }
    }
}
