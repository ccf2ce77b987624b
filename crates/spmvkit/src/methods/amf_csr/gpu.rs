//! Upload and launch of `amf_csr_t{TPV}` (kernel.cu): one CTA of `threads` per block, one launch
//! per call, no launch when there are no blocks (no rows).

use super::{AmfLayout, KERNEL};
use crate::error::Result;
use crate::gpu::{Gpu, Kernel, Shape};
use crate::methods::common::gpu::{Axpby, Call, Launches};
use crate::methods::common::room::device_room;
use crate::methods::Layout;
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

device_room! {
    /// The device copy of an AMF-CSR layout.
    pub(super) struct DeviceAmf<T> {
        k: Kernel<AmfArgs<'static, T>> =
            gpu.kernel::<T, _>(&KERNEL, &format!("amf_csr_t{}", l.tpv))?,
        nblocks: usize = l.nblocks(),
        threads: u32 = l.threads,
        arrays: AmfArrays<T> = AmfArrays::upload(gpu, l)?,
    }
    fn upload(l: &AmfLayout<T>, gpu) -> Resident((l.nrows, l.ncols), l.footprint_bytes());
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
