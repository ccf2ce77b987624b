//! Upload and launch of `csr-scalar`: the CSR arrays on the device, one thread per row in blocks
//! of 256, one launch per call.

use super::{CsrScalarLayout, KERNEL};
use crate::error::Result;
use crate::gpu::{Gpu, Kernel, Shape};
use crate::methods::common::csr::{CsrArgs, DeviceCsr};
use crate::methods::common::gpu::{Call, Launches};
use crate::methods::common::room::device_room;
use crate::scalar::Scalar;

const BLOCK: u32 = 256;

device_room! {
    /// `csr-scalar` resident on the GPU (the kernel compiled first, so an NVRTC failure leaves
    /// nothing allocated).
    pub(super) struct CsrScalarDevice<T> {
        k: Kernel<CsrArgs<'static, T>> = k,
        a: DeviceCsr<T> = a,
    }
    fn upload(l: &CsrScalarLayout<T>, gpu) -> Resident(a.dims(), a.num_bytes()) {
        let k = gpu.kernel_stored::<T, _>(&KERNEL, "csr_scalar", l.values)?;
        let a = DeviceCsr::upload_stored(gpu, &l.a, l.values)?;
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
