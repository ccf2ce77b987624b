//! Upload and launch of `amf_csr_t{TPV}` (kernel.cu): one CTA of `threads` per block, one launch
//! per call, no launch when there are no blocks (no rows).

use std::sync::Arc;

use super::{AmfLayout, KERNEL};
use crate::error::Result;
use crate::gpu::{Gpu, Kernel, Shape};
use crate::methods::common::gpu::{Axpby, Call, Launches, Resident};
use crate::methods::{DeviceLayout, Layout};
use crate::scalar::{Idx, Scalar};

crate::device_args! {
    /// An AMF-CSR layout's arrays on the device.
    pub(super) struct AmfArrays<T> from l: &AmfLayout<T>;
    /// `amf_csr_t{TPV}`'s arguments.
    pub(super) struct AmfArgs<'a, T> {
        blk_fold: &[Idx],
        fold_row: &[Idx],
        fold_ptr: &[Idx],
        cols: &[Idx],
        vals: &[T],
        axpby: Axpby<'a, T>,
        long_nnz: i32 = l.long.min(i32::MAX as u32) as i32,
    }
}

/// The device copy of an AMF-CSR layout.
pub(super) struct DeviceAmf<T: Scalar> {
    k: Kernel<AmfArgs<'static, T>>,
    nblocks: usize,
    threads: u32,
    arrays: AmfArrays<T>,
}

pub(super) fn upload<T: Scalar>(
    l: &AmfLayout<T>,
    gpu: &Arc<Gpu>,
) -> Result<Box<dyn DeviceLayout<T>>> {
    let room = DeviceAmf {
        k: gpu.kernel::<T, _>(&KERNEL, &format!("amf_csr_t{}", l.tpv))?,
        nblocks: l.nblocks(),
        threads: l.threads,
        arrays: AmfArrays::upload(gpu, l)?,
    };
    Ok(Resident::boxed(
        (l.nrows, l.ncols),
        Layout::<T>::footprint_bytes(l),
        room,
    ))
}

impl<T: Scalar> Launches<T> for DeviceAmf<T> {
    unsafe fn run(&self, gpu: &Gpu, mut c: Call<'_, T>) -> Result<()> {
        let args = self.arrays.args(c.axpby());
        // SAFETY: blk_fold has blocks + 1 entries, fold_row and fold_ptr folds + 1, cols and vals
        // nnz (packed columns < ncols), x ncols and y nrows (checked by DeviceLayout::run);
        // threads is a multiple of 32 and of TPV.
        unsafe { gpu.launch(&self.k, Shape::ctas(self.nblocks, self.threads), &args) }
    }
}
