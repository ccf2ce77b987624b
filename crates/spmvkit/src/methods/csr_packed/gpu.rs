//! Upload and launch of `csr-packed`: the layout's streams on the device, one launch per call
//! of the entry point for the layout's value mode (and `prefetch`), persistent warps in blocks
//! of 256 threads, as many blocks as stay resident (CUDA's occupancy query), at most one warp
//! per slice or long row. The entries keep their `__restrict__` parameter list
//! ([`crate::gpu::launch::Abi::Params`]): the kernel's loads through them are non-coherent.

use std::sync::Arc;

use cudarc::driver::CudaSlice;

use super::{PackedLayout, KERNEL, WARP};
use crate::error::Result;
use crate::gpu::{kernel_int, DevRef, Gpu, Kernel, Shape};
use crate::methods::common::gpu::{Axpby, Call, Launches, Resident};
use crate::scalar::Scalar;

const BLOCK: u32 = super::BLOCK as u32;

crate::kernel_args! {
    /// The parameters of every `csr_packed_*` entry (`PACKED_PARAMS` in kernel.cu).
    pub(super) struct PackedArgs<'a, T> {
        nslices: u32,
        nlong: u32,
        lens: DevRef<'a, u8>,
        rows: DevRef<'a, u32>,
        has_rows: i32,
        grp: DevRef<'a, u32>,
        col_off: DevRef<'a, u32>,
        col_w: DevRef<'a, u8>,
        cols: DevRef<'a, u32>,
        vs: DevRef<'a, u8>,
        raw: DevRef<'a, T>,
        dict: DevRef<'a, T>,
        long_rows: DevRef<'a, u32>,
        long_ptr: DevRef<'a, u32>,
        long_cols: DevRef<'a, u32>,
        long_vals: DevRef<'a, T>,
        axpby: Axpby<'a, T>,
    }
}

/// `csr-packed` resident on the GPU.
pub(super) struct PackedDevice<T: Scalar> {
    k: Kernel<PackedArgs<'static, T>>,
    nslices: u32,
    nlong: u32,
    lens: CudaSlice<u8>,
    rows: CudaSlice<u32>,
    has_rows: i32,
    grp: CudaSlice<u32>,
    col_off: CudaSlice<u32>,
    col_w: CudaSlice<u8>,
    cols: CudaSlice<u32>,
    vstream: CudaSlice<u8>,
    raw: CudaSlice<T>,
    dict: CudaSlice<T>,
    long_rows: CudaSlice<u32>,
    long_ptr: CudaSlice<u32>,
    long_cols: CudaSlice<u32>,
    long_vals: CudaSlice<T>,
    /// Resident blocks of the whole GPU (the persistent grid's size at most).
    max_blocks: usize,
}

impl<T: Scalar> PackedDevice<T> {
    /// Compiles the kernel first, so an NVRTC failure leaves nothing allocated, then uploads.
    pub(super) fn upload(gpu: &Arc<Gpu>, l: &PackedLayout<T>) -> Result<Resident<Self>> {
        let items = l.nslices() + l.long_rows.len();
        kernel_int("csr-packed work items (slices + long rows)", items)?;
        crate::gpu::check_int_loops("csr-packed", l.nrows, l.long_cols.len())?;
        let k = gpu.kernel::<T, _>(&KERNEL, l.vcodes.entry(l.prefetch))?;
        // Persistent warps: as many blocks as stay resident on every SM at once.
        let max_blocks = k.resident_ctas(gpu, BLOCK, 0)?;
        let room = PackedDevice {
            k,
            nslices: l.nslices() as u32,
            nlong: l.long_rows.len() as u32,
            lens: gpu.upload(&l.lens)?,
            rows: gpu.upload(l.rows.as_deref().unwrap_or(&[]))?,
            has_rows: l.rows.is_some() as i32,
            grp: gpu.upload(&l.grp)?,
            col_off: gpu.upload(&l.col_off)?,
            col_w: gpu.upload(&l.col_w)?,
            cols: gpu.upload(&l.cols)?,
            vstream: gpu.upload(&l.vstream)?,
            raw: gpu.upload(&l.raw)?,
            dict: gpu.upload(&l.dict)?,
            long_rows: gpu.upload(&l.long_rows)?,
            long_ptr: gpu.upload(&l.long_ptr)?,
            long_cols: gpu.upload(&l.long_cols)?,
            long_vals: gpu.upload(&l.long_vals)?,
            max_blocks,
        };
        let bytes = crate::methods::Layout::footprint_bytes(l);
        Ok(Resident::new((l.nrows, l.ncols), bytes, room))
    }
}

impl<T: Scalar> Launches<T> for PackedDevice<T> {
    unsafe fn run(&self, gpu: &Gpu, mut c: Call<'_, T>) -> Result<()> {
        let items = self.nslices as usize + self.nlong as usize;
        if items == 0 {
            return Ok(());
        }
        let blocks = items.div_ceil(BLOCK as usize / WARP).min(self.max_blocks);
        let args = PackedArgs {
            nslices: self.nslices,
            nlong: self.nlong,
            lens: DevRef::new(&self.lens),
            rows: DevRef::new(&self.rows),
            has_rows: self.has_rows,
            grp: DevRef::new(&self.grp),
            col_off: DevRef::new(&self.col_off),
            col_w: DevRef::new(&self.col_w),
            cols: DevRef::new(&self.cols),
            vs: DevRef::new(&self.vstream),
            raw: DevRef::new(&self.raw),
            dict: DevRef::new(&self.dict),
            long_rows: DevRef::new(&self.long_rows),
            long_ptr: DevRef::new(&self.long_ptr),
            long_cols: DevRef::new(&self.long_cols),
            long_vals: DevRef::new(&self.long_vals),
            axpby: c.axpby(),
        };
        // SAFETY: x and y are long enough (checked by DeviceLayout::run); the streams were built
        // by encode.rs, whose offsets, lengths and codes stay inside them and decode to columns
        // < ncols and rows < nrows.
        unsafe { gpu.launch(&self.k, Shape::ctas(blocks, BLOCK), &args) }
    }
}
