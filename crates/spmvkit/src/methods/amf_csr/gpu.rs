//! Upload and launch of `amf_csr_t{TPV}` (kernel.cu): one CTA of `threads` per block, one launch
//! per call, no launch when there are no blocks (no rows).

use std::sync::Arc;

use cudarc::driver::CudaSlice;

use super::{AmfLayout, KERNEL};
use crate::error::Result;
use crate::gpu::{DevRef, Gpu, Kernel, Shape};
use crate::methods::common::gpu::{Axpby, Call, Launches, Resident};
use crate::methods::{DeviceLayout, Layout};
use crate::scalar::{Idx, Scalar};

crate::kernel_args! {
    /// `amf_csr_t{TPV}`'s arguments.
    pub(super) struct AmfArgs<'a, T> {
        blk_fold: DevRef<'a, Idx>,
        fold_row: DevRef<'a, Idx>,
        fold_ptr: DevRef<'a, Idx>,
        cols: DevRef<'a, Idx>,
        vals: DevRef<'a, T>,
        axpby: Axpby<'a, T>,
        long_nnz: i32,
    }
}

/// The device copy of an AMF-CSR layout.
pub(super) struct DeviceAmf<T: Scalar> {
    k: Kernel<AmfArgs<'static, T>>,
    nblocks: usize,
    threads: u32,
    long: i32,
    blk_fold: CudaSlice<Idx>,
    fold_row: CudaSlice<Idx>,
    fold_ptr: CudaSlice<Idx>,
    cols: CudaSlice<Idx>,
    vals: CudaSlice<T>,
}

pub(super) fn upload<T: Scalar>(
    l: &AmfLayout<T>,
    gpu: &Arc<Gpu>,
) -> Result<Box<dyn DeviceLayout<T>>> {
    let room = DeviceAmf {
        k: gpu.kernel::<T, _>(&KERNEL, &format!("amf_csr_t{}", l.tpv))?,
        nblocks: l.nblocks(),
        threads: l.threads,
        long: l.long.min(i32::MAX as u32) as i32,
        blk_fold: gpu.upload(&l.blk_fold)?,
        fold_row: gpu.upload(&l.fold_row)?,
        fold_ptr: gpu.upload(&l.fold_ptr)?,
        cols: gpu.upload(&l.cols)?,
        vals: gpu.upload(&l.vals)?,
    };
    Ok(Resident::boxed(
        (l.nrows, l.ncols),
        Layout::<T>::footprint_bytes(l),
        room,
    ))
}

impl<T: Scalar> Launches<T> for DeviceAmf<T> {
    unsafe fn run(&self, gpu: &Gpu, mut c: Call<'_, T>) -> Result<()> {
        let args = AmfArgs {
            blk_fold: DevRef::new(&self.blk_fold),
            fold_row: DevRef::new(&self.fold_row),
            fold_ptr: DevRef::new(&self.fold_ptr),
            cols: DevRef::new(&self.cols),
            vals: DevRef::new(&self.vals),
            axpby: c.axpby(),
            long_nnz: self.long,
        };
        // SAFETY: blk_fold has blocks + 1 entries, fold_row and fold_ptr folds + 1, cols and vals
        // nnz (packed columns < ncols), x ncols and y nrows (checked by DeviceLayout::run);
        // threads is a multiple of 32 and of TPV.
        unsafe { gpu.launch(&self.k, Shape::ctas(self.nblocks, self.threads), &args) }
    }
}
