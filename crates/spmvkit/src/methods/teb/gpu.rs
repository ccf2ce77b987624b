//! Upload and launch of `teb_spmv` (`teb`) and `teb_vector_spmv` (`teb-vector`, kernel.cu): one
//! CTA of `threads` per block, one launch per call, no launch when there are no blocks (no rows).
//! The entry is chosen at upload from the layout's `long_row`; both take `TebArgs`
//! (`teb_spmv` ignores `long_row`).

use std::sync::Arc;

use cudarc::driver::CudaSlice;

use super::{TebLayout, KERNEL};
use crate::error::Result;
use crate::gpu::{DevRef, Gpu, Kernel, Shape};
use crate::methods::common::gpu::{Axpby, Call, Launches, Resident};
use crate::methods::{DeviceLayout, Layout};
use crate::scalar::{Idx, Scalar};

crate::kernel_args! {
    /// `teb_spmv`'s and `teb_vector_spmv`'s arguments.
    pub(super) struct TebArgs<'a, T> {
        blo_idx: DevRef<'a, Idx>,
        row_nnz_sum: DevRef<'a, Idx>,
        row_ids: DevRef<'a, Idx>,
        col_idx: DevRef<'a, Idx>,
        values: DevRef<'a, T>,
        axpby: Axpby<'a, T>,
        long_row: i32,
    }
}

/// The device copy of a TEB layout.
pub(super) struct DeviceTeb<T: Scalar> {
    k: Kernel<TebArgs<'static, T>>,
    /// `teb_vector_spmv`'s row length threshold (0 for `teb_spmv`, which ignores it).
    long_row: i32,
    nblocks: usize,
    threads: u32,
    blo_idx: CudaSlice<Idx>,
    row_nnz_sum: CudaSlice<Idx>,
    row_ids: CudaSlice<Idx>,
    col_idx: CudaSlice<Idx>,
    values: CudaSlice<T>,
}

pub(super) fn upload<T: Scalar>(
    l: &TebLayout<T>,
    gpu: &Arc<Gpu>,
) -> Result<Box<dyn DeviceLayout<T>>> {
    let entry = match l.long_row {
        None => "teb_spmv",
        Some(_) => "teb_vector_spmv",
    };
    let k = gpu.kernel::<T, _>(&KERNEL, entry)?;
    // teb_vector_spmv sums long rows with the prelude's cta_gather_sum (32-bit indices)
    crate::gpu::check_int_loops("teb", l.nrows, l.values.len())?;
    let room = DeviceTeb {
        k,
        // parse() keeps long_row in 1..=i32::MAX
        long_row: l.long_row.map_or(0, |v| v as i32),
        nblocks: l.nblocks(),
        threads: l.threads,
        blo_idx: gpu.upload(&l.blo_idx)?,
        row_nnz_sum: gpu.upload(&l.row_nnz_sum)?,
        row_ids: gpu.upload(&l.row_ids)?,
        col_idx: gpu.upload(&l.col_idx)?,
        values: gpu.upload(&l.values)?,
    };
    Ok(Resident::boxed(
        (l.nrows, l.ncols),
        Layout::<T>::footprint_bytes(l),
        room,
    ))
}

impl<T: Scalar> Launches<T> for DeviceTeb<T> {
    unsafe fn run(&self, gpu: &Gpu, mut c: Call<'_, T>) -> Result<()> {
        let args = TebArgs {
            blo_idx: DevRef::new(&self.blo_idx),
            row_nnz_sum: DevRef::new(&self.row_nnz_sum),
            row_ids: DevRef::new(&self.row_ids),
            col_idx: DevRef::new(&self.col_idx),
            values: DevRef::new(&self.values),
            axpby: c.axpby(),
            long_row: self.long_row,
        };
        // SAFETY: blo_idx has nblocks + 1 entries, row_nnz_sum rows + 1, row_ids rows, col_idx and
        // values nnz (all indices in range by construction), x ncols and y nrows (checked by
        // DeviceLayout::run).
        unsafe { gpu.launch(&self.k, Shape::ctas(self.nblocks, self.threads), &args) }
    }
}
