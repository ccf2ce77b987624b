//! Upload and launch of `csr-packed`: the layout's streams on the device, one launch per call
//! of the entry point for the layout's value mode (and `prefetch`), persistent warps in blocks
//! of 256 threads, as many blocks as stay resident (CUDA's occupancy query), at most one warp
//! per slice or long row. The entries keep their `__restrict__` parameter list
//! ([`crate::gpu::launch::Abi::Params`]): the kernel's loads through them are non-coherent.

use super::{PackedLayout, KERNEL, WARP};
use crate::error::Result;
use crate::gpu::{kernel_int, Gpu, Kernel, Shape};
use crate::methods::common::gpu::{Axpby, Call, Launches};
use crate::methods::common::room::device_room;
use crate::methods::Layout;
use crate::scalar::Scalar;

const BLOCK: u32 = super::BLOCK as u32;

crate::device_args! {
    /// A `csr-packed` layout's streams on the device.
    pub(super) struct PackedArrays<T> from l: &PackedLayout<T>;
    /// The parameters of every `csr_packed_*` entry (`PACKED_PARAMS` in kernel.cu).
    pub(super) struct PackedArgs<'a, T> {
        nslices: u32 = l.nslices() as u32,
        nlong: u32 = l.long_rows.len() as u32,
        lens: &[u8],
        rows: &[u32] = l.rows.as_deref().unwrap_or(&[]),
        has_rows: i32 = l.rows.is_some() as i32,
        grp: &[u32],
        col_off: &[u32],
        col_w: &[u8],
        cols: &[u32],
        vs: &[u8] = &l.vstream,
        raw: &[T],
        dict: &[T],
        long_rows: &[u32],
        long_ptr: &[u32],
        long_cols: &[u32],
        long_vals: &[T],
        axpby: Axpby<'a, T>,
    }
}

device_room! {
    /// `csr-packed` resident on the GPU (the kernel compiled first, so an NVRTC failure leaves
    /// nothing allocated).
    pub(super) struct PackedDevice<T> {
        k: Kernel<PackedArgs<'static, T>> = k,
        /// The work items: slices and long rows.
        items: usize = items,
        /// Resident blocks of the whole GPU (the persistent grid's size at most).
        max_blocks: usize = max_blocks,
        arrays: PackedArrays<T> = PackedArrays::upload(gpu, l)?,
    }
    fn upload(l: &PackedLayout<T>, gpu) -> Resident((l.nrows, l.ncols), l.footprint_bytes()) {
        let items = l.nslices() + l.long_rows.len();
        kernel_int("csr-packed work items (slices + long rows)", items)?;
        crate::gpu::check_int_loops("csr-packed", l.nrows, l.long_cols.len())?;
        let k = gpu.kernel_stored::<T, _>(&KERNEL, l.vcodes.entry(l.prefetch), l.storage)?;
        // Persistent warps: as many blocks as stay resident on every SM at once.
        let max_blocks = k.resident_ctas(gpu, BLOCK, 0)?;
    }
}

impl<T: Scalar> Launches<T> for PackedDevice<T> {
    unsafe fn run(&self, gpu: &Gpu, mut c: Call<'_, T>) -> Result<()> {
        if self.items == 0 {
            return Ok(());
        }
        let blocks = self
            .items
            .div_ceil(BLOCK as usize / WARP)
            .min(self.max_blocks);
        let args = self.arrays.args(c.axpby());
        // SAFETY: x and y are long enough (checked by DeviceLayout::run); the streams were built
        // by encode.rs, whose offsets, lengths and codes stay inside them and decode to columns
        // < ncols and rows < nrows.
        unsafe { gpu.launch(&self.k, Shape::ctas(blocks, BLOCK), &args) }
    }
}
