//! A CSR matrix on the device and the argument struct of the kernels that take it with the SpMV
//! operands (`CsrArgs` in `gpu/prelude.cu`): csr-scalar and csr-vector launch with it, csr-light
//! and merge carry it as the first field of their own structs. The row offsets are of either
//! width (`gpu::stored::DeviceOffsets`, docs/offsets.md); a kernel launched on a [`DeviceCsr`] is compiled
//! for its width ([`DeviceCsr::offsets`], `Gpu::kernel_mode`).

use std::sync::Arc;

use cudarc::driver::{CudaSlice, DevicePtr};

use crate::error::Result;
use crate::gpu::stored::{DeviceOffsets, DeviceValues};
use crate::gpu::{kernel_int, DevRef, Gpu, RowOffsets, Stored};
use crate::matrix::Csr;
use crate::methods::common::gpu::{Axpby, Call};
use crate::scalar::{Idx, Offset, OffsetWidth, Scalar, ValueStorage};

crate::kernel_args! {
    /// A CSR matrix and the operands of y = α·A·x + β·y.
    pub(crate) struct CsrArgs<'a, T> {
        nrows: i32,
        row_ptr: DevRef<'a, RowOffsets>,
        col_idx: DevRef<'a, Idx>,
        vals: DevRef<'a, Stored>,
        axpby: Axpby<'a, T>,
    }
}

/// The arrays of a CSR matrix on the device; its kernels are compiled for its offsets' width
/// ([`DeviceCsr::offsets`]).
pub(crate) struct DeviceCsr<T: Scalar> {
    nrows: usize,
    ncols: usize,
    nnz: usize,
    row_ptr: DeviceOffsets,
    col_idx: CudaSlice<Idx>,
    vals: DeviceValues<T>,
}

impl<T: Scalar> DeviceCsr<T> {
    /// Uploads `a`'s arrays (an empty one as one zero element).
    pub(crate) fn upload(gpu: &Arc<Gpu>, a: &Csr<T>) -> Result<Self> {
        Self::upload_stored(gpu, a, ValueStorage::Same)
    }

    /// Uploads `a`'s arrays with its values (rounded to `values` already) stored as `values`
    /// (issue #25), for kernels compiled for that storage and `a`'s offsets' width.
    pub(crate) fn upload_stored<O: Offset>(
        gpu: &Arc<Gpu>,
        a: &Csr<T, O>,
        values: ValueStorage,
    ) -> Result<Self> {
        Ok(DeviceCsr {
            nrows: a.nrows(),
            ncols: a.ncols(),
            nnz: a.nnz(),
            row_ptr: DeviceOffsets::upload(gpu, a.row_ptr())?,
            col_idx: gpu.upload(a.col_idx())?,
            vals: DeviceValues::upload(gpu, a.vals(), values)?,
        })
    }

    /// The three arrays of an `nrows` x `ncols` matrix with `nnz` entries already on the device (a plan built from
    /// a caller's device arrays: its own copies, whose structure `gpu::check_device_csr`
    /// validated).
    pub(crate) fn from_parts(
        (nrows, ncols, nnz): (usize, usize, usize),
        row_ptr: CudaSlice<Idx>,
        col_idx: CudaSlice<Idx>,
        vals: CudaSlice<T>,
    ) -> Self {
        DeviceCsr {
            nrows,
            ncols,
            nnz,
            row_ptr: DeviceOffsets::W32(row_ptr),
            col_idx,
            vals: DeviceValues::Same(vals),
        }
    }

    /// The values, to be rewritten in place (same pattern), when they are stored in the vectors'
    /// precision (always so for a plan built from device arrays).
    pub(crate) fn vals_mut(&mut self) -> Option<&mut CudaSlice<T>> {
        match &mut self.vals {
            DeviceValues::Same(s) => Some(s),
            _ => None,
        }
    }

    /// The device addresses of row_ptr, col_idx and vals, and the number of entries.
    pub(crate) fn addresses(&self) -> ((u64, u64, u64), usize) {
        let s = self.col_idx.stream();
        let addr = |p: (u64, _)| p.0;
        (
            (
                self.row_ptr.address(),
                addr(self.col_idx.device_ptr(s)),
                self.vals.address(),
            ),
            self.nnz,
        )
    }

    /// The width of the row offsets, which the kernels launched on it are compiled for.
    pub(crate) fn offsets(&self) -> OffsetWidth {
        self.row_ptr.width()
    }

    /// (nrows, ncols).
    pub(crate) fn dims(&self) -> (usize, usize) {
        (self.nrows, self.ncols)
    }

    /// Device bytes of the three arrays.
    pub(crate) fn num_bytes(&self) -> usize {
        self.row_ptr.num_bytes() + self.col_idx.num_bytes() + self.vals.num_bytes()
    }

    /// The arguments of the call `c`; `what` names the matrix in the error when nrows exceeds a
    /// kernel `int`.
    pub(crate) fn args<'a>(
        &'a self,
        what: &'static str,
        c: &'a mut Call<'_, T>,
    ) -> Result<CsrArgs<'a, T>> {
        Ok(CsrArgs {
            nrows: kernel_int(what, self.nrows)?,
            row_ptr: self.row_ptr.dev_ref(),
            col_idx: DevRef::new(&self.col_idx),
            vals: self.vals.dev_ref(),
            axpby: c.axpby(),
        })
    }
}
