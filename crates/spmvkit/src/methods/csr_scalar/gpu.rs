//! Upload and launch of `csr-scalar`: the CSR arrays on the device, one thread per row in blocks
//! of 256, one launch per call; row offsets of 32 or 64 bits, the kernel compiled for the
//! layout's (docs/offsets.md).

use std::sync::Arc;

use super::{CsrScalarLayout, KERNEL};
use crate::error::Result;
use crate::gpu::{Gpu, Kernel, Shape};
use crate::methods::common::csr::{CsrArgs, DeviceCsr};
use crate::methods::common::gpu::{Call, Launches, Resident};
use crate::methods::DeviceLayout;
use crate::methods::common::room::device_room;
use crate::scalar::{Offset, Scalar, ValueStorage};

const BLOCK: u32 = 256;

device_room! {
    /// `csr-scalar` resident on the GPU (the kernel compiled first, so an NVRTC failure leaves
    /// nothing allocated).
    pub(super) struct CsrScalarDevice<T> {
        k: Kernel<CsrArgs<'static, T>> = k,
        a: Arc<DeviceCsr<T>> = Arc::new(a),
    }
    fn upload<O: Offset>(l: &CsrScalarLayout<T, O>, gpu) -> Resident(a.dims(), a.num_bytes()) {
        let k = gpu.kernel_mode::<T, _>(&KERNEL, "csr_scalar", l.values, O::WIDTH)?;
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

/// `csr-scalar` on CSR arrays already on the device, shared with the plan that owns them (a plan
/// built from a caller's device arrays, `methods/from_device.rs`).
pub(crate) fn from_device<T: Scalar>(
    gpu: &Gpu,
    a: Arc<DeviceCsr<T>>,
) -> Result<Box<dyn DeviceLayout<T>>> {
    let (dims, bytes) = (a.dims(), a.num_bytes());
    let room = CsrScalarDevice {
        k: gpu.kernel_mode::<T, _>(&KERNEL, "csr_scalar", ValueStorage::Same, a.offsets())?,
        a,
    };
    Ok(Resident::boxed(dims, bytes, room))
}
