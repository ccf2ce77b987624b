//! Upload and launch of `csr_vector` (kernel.cu): one warp per row, `threads` per block, one
//! block per `threads / 32` rows (the hardware block scheduler balances rows of unequal length;
//! the kernel also strides, so any grid is correct). No launch when there are no rows. Row
//! offsets of 32 or 64 bits: the kernel is compiled for the layout's (docs/offsets.md).

use std::sync::Arc;

use super::{CsrVectorLayout, CsrVectorParams, KERNEL, NAME};
use crate::error::Result;
use crate::gpu::{Gpu, Kernel, Shape};
use crate::methods::common::csr::{CsrArgs, DeviceCsr};
use crate::methods::common::gpu::{Call, Launches, Resident};
use crate::methods::{DeviceLayout, Params};
use crate::methods::common::room::device_room;
use crate::scalar::{Offset, Scalar, ValueStorage};

device_room! {
    /// The device copy of a csr-vector layout.
    pub(super) struct DeviceCsrVector<T> {
        k: Kernel<CsrArgs<'static, T>> =
            gpu.kernel_mode::<T, _>(&KERNEL, "csr_vector", l.values, O::WIDTH)?,
        threads: u32 = l.threads,
        a: Arc<DeviceCsr<T>> = Arc::new(DeviceCsr::upload_stored(gpu, &l.a, l.values)?),
    }
    fn upload<O: Offset>(l: &CsrVectorLayout<T, O>, gpu)
        -> Resident((l.a.nrows(), l.a.ncols()), l.a.bytes());
}

impl<T: Scalar> Launches<T> for DeviceCsrVector<T> {
    unsafe fn run(&self, gpu: &Gpu, mut c: Call<'_, T>) -> Result<()> {
        let shape = Shape::warp_per_item(c.nrows, self.threads);
        let args = self.a.args("csr-vector nrows", &mut c)?;
        // SAFETY: row_ptr has nrows + 1 entries, col_idx and vals nnz (a validated Csr), x ncols
        // and y nrows (checked by DeviceLayout::run).
        unsafe { gpu.launch(&self.k, shape, &args) }
    }
}

/// `csr-vector` on CSR arrays already on the device, shared with the plan that owns them (a plan
/// built from a caller's device arrays, `methods/from_device.rs`), with the method's parameters.
pub(crate) fn from_device<T: Scalar>(
    gpu: &Gpu,
    a: Arc<DeviceCsr<T>>,
    params: &Params,
) -> Result<Box<dyn DeviceLayout<T>>> {
    let p = CsrVectorParams::from_params(NAME, params)?;
    let (dims, bytes) = (a.dims(), a.num_bytes());
    let room = DeviceCsrVector {
        k: gpu.kernel_mode::<T, _>(&KERNEL, "csr_vector", ValueStorage::Same, a.offsets())?,
        threads: p.threads,
        a,
    };
    Ok(Resident::boxed(dims, bytes, room))
}
