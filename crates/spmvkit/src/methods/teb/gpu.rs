//! Upload and launch of `teb_spmv` (`teb`) and `teb_vector_spmv` (`teb-vector`, kernel.cu): one
//! CTA of `threads` per block, one launch per call, no launch when there are no blocks (no rows).
//! The entry is chosen at upload from the layout's `long_row`; both take `TebArgs`
//! (`teb_spmv` ignores `long_row`).

use super::{TebLayout, KERNEL};
use crate::error::Result;
use crate::gpu::{Gpu, Kernel, Shape};
use crate::methods::common::gpu::{Axpby, Call, Launches};
use crate::methods::common::room::device_room;
use crate::methods::Layout;
use crate::scalar::{Idx, Scalar};

crate::device_args! {
    /// A TEB layout's arrays on the device.
    pub(super) struct TebArrays<T> from l: &TebLayout<T>;
    /// `teb_spmv`'s and `teb_vector_spmv`'s arguments.
    pub(super) struct TebArgs<'a, T> {
        blo_idx: &[Idx],
        row_nnz_sum: &[Idx],
        row_ids: &[Idx],
        col_idx: &[Idx],
        values: &[T],
        axpby: Axpby<'a, T>,
        /// `teb_vector_spmv`'s row length threshold (0 for `teb_spmv`, which ignores it;
        /// parse() keeps it in 1..=i32::MAX).
        long_row: i32 = l.long_row.map_or(0, |v| v as i32),
    }
}

device_room! {
    /// The device copy of a TEB layout.
    pub(super) struct DeviceTeb<T> {
        k: Kernel<TebArgs<'static, T>> = k,
        nblocks: usize = l.nblocks(),
        threads: u32 = l.threads,
        arrays: TebArrays<T> = TebArrays::upload(gpu, l)?,
    }
    fn upload(l: &TebLayout<T>, gpu) -> Resident((l.nrows, l.ncols), l.footprint_bytes()) {
        let entry = match l.long_row {
            None => "teb_spmv",
            Some(_) => "teb_vector_spmv",
        };
        let k = gpu.kernel::<T, _>(&KERNEL, entry)?;
        // teb_vector_spmv sums long rows with the prelude's cta_gather_sum (32-bit indices)
        crate::gpu::check_int_loops("teb", l.nrows, l.values.len())?;
    }
}

impl<T: Scalar> Launches<T> for DeviceTeb<T> {
    unsafe fn run(&self, gpu: &Gpu, mut c: Call<'_, T>) -> Result<()> {
        let args = self.arrays.args(c.axpby());
        // SAFETY: blo_idx has nblocks + 1 entries, row_nnz_sum rows + 1, row_ids rows, col_idx and
        // values nnz (all indices in range by construction), x ncols and y nrows (checked by
        // DeviceLayout::run).
        unsafe { gpu.launch(&self.k, Shape::ctas(self.nblocks, self.threads), &args) }
    }
}
