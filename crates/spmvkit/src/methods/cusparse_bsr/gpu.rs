//! The device side of `cusparse-bsr`: an RAII holder of the cuSPARSE handle (bound to
//! [`Gpu::stream`]), a general matrix descriptor, the BSR arrays and, when the shape is not a
//! multiple of the block size, zero-padded x/y scratch vectors for callers whose vectors have
//! only the logical length (the layout's `padded_dims` asks a `Plan` for vectors of whole
//! blocks, which need no scratch). `cusparse<S|D>bsrmv` is looked up
//! in the loaded cuSPARSE by name (as `gpu/cusparse.rs` does for `SpMV_preprocess`), so a
//! cuSPARSE without it gives `MethodUnsupported` instead of a panic.

use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex};

use cudarc::cusparse::sys::{
    self, cusparseDirection_t, cusparseHandle_t, cusparseMatDescr_t, cusparseOperation_t,
    cusparseStatus_t,
};
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};

use super::{BsrLayout, NAME};
use crate::error::{Error, Result};
use crate::gpu::cusparse::HandleStream;
use crate::gpu::{kernel_int, Gpu};
use crate::methods::common::gpu::{Call, Launches};
use crate::methods::common::room::device_room;
use crate::methods::Layout;
use crate::scalar::{Idx, Precision, Scalar};

type BsrmvFn = unsafe extern "C" fn(
    cusparseHandle_t,
    cusparseDirection_t,
    cusparseOperation_t,
    c_int,
    c_int,
    c_int,
    *const c_void,
    cusparseMatDescr_t,
    *const c_void,
    *const c_int,
    *const c_int,
    c_int,
    *const c_void,
    *const c_void,
    *mut c_void,
) -> cusparseStatus_t;

/// `cusparse<S|D>bsrmv` from the loaded library, when it has one.
fn bsrmv_fn<T: Scalar>() -> Option<BsrmvFn> {
    let name: &[u8] = match T::PRECISION {
        Precision::F32 => b"cusparseSbsrmv\0",
        Precision::F64 => b"cusparseDbsrmv\0",
    };
    // SAFETY: the library is present (checked by Gpu::get); the symbol has this C signature
    // (scalars and arrays of the precision's type, passed as void pointers).
    unsafe { sys::culib().get::<BsrmvFn>(name).ok().map(|s| *s) }
}

fn check(what: &str, s: cusparseStatus_t) -> Result<()> {
    if s == cusparseStatus_t::CUSPARSE_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(Error::cuda(format!("cuSPARSE {what}"), format!("{s:?}")))
    }
}

/// Handles destroyed on drop.
struct Handles {
    handle: cusparseHandle_t,
    descr: cusparseMatDescr_t,
    stream: HandleStream,
}

// SAFETY: the raw handles are only used under the Mutex that holds them.
unsafe impl Send for Handles {}

impl Handles {
    /// A cuSPARSE handle on `gpu`'s stream and a matrix descriptor, with `gpu`'s context bound
    /// to this thread.
    fn new(gpu: &Gpu) -> Result<Self> {
        gpu.context()
            .bind_to_thread()
            .map_err(|e| Error::cuda("binding the context", e))?;
        let mut h = Handles {
            handle: std::ptr::null_mut(),
            descr: std::ptr::null_mut(),
            stream: HandleStream::unset(),
        };
        h.handle = cudarc::cusparse::result::create()
            .map_err(|e| Error::cuda("cusparseCreate", format!("{e:?}")))?;
        // SAFETY: a live handle, not shared yet.
        unsafe {
            h.stream.set(h.handle, gpu.stream())?;
            check("CreateMatDescr", sys::cusparseCreateMatDescr(&mut h.descr))?;
        }
        Ok(h)
    }
}

impl Drop for Handles {
    fn drop(&mut self) {
        // SAFETY: each non-null handle was created once and is destroyed once, here.
        unsafe {
            if !self.descr.is_null() {
                sys::cusparseDestroyMatDescr(self.descr);
            }
            if !self.handle.is_null() {
                sys::cusparseDestroy(self.handle);
            }
        }
    }
}

/// Padded x and y when the shape is not a multiple of b.
struct Scratch<T> {
    x: CudaSlice<T>,
    y: CudaSlice<T>,
}

device_room! {
    /// The device copy of a BSR layout, with its cuSPARSE handles.
    pub(super) struct DeviceBsr<T> {
        gpu: Arc<Gpu> = gpu.clone(),
        bsrmv: BsrmvFn = bsrmv,
        /// `(y, x)` lengths of whole blocks ([`BsrLayout::padded_dims`]).
        padded: (usize, usize) = (py, px),
        b: usize = l.b,
        mb: usize = l.mb,
        nb: usize = l.nb,
        nnzb: usize = l.nnzb(),
        h: Mutex<Handles> = Mutex::new(h),
        scratch: Option<Mutex<Scratch<T>>> = scratch,
        row_ptr: CudaSlice<Idx> = gpu.upload(&l.row_ptr)?,
        col_idx: CudaSlice<Idx> = gpu.upload(&l.col_idx)?,
        vals: CudaSlice<T> = gpu.upload(&l.vals)?,
    }
    fn upload(l: &BsrLayout<T>, gpu)
        -> Resident((l.nrows, l.ncols), l.footprint_bytes() + pad_bytes) {
        let bsrmv = bsrmv_fn::<T>().ok_or_else(|| Error::MethodUnsupported {
            method: NAME.into(),
            reason: "the loaded cuSPARSE has no cusparse<t>bsrmv".into(),
        })?;
        let h = Handles::new(gpu)?;
        let (py, px) = l.padded_dims();
        let padded = (py, px) != (l.nrows, l.ncols);
        let scratch = if padded {
            Some(Mutex::new(Scratch {
                x: gpu.alloc_zeros::<T>(px)?,
                y: gpu.alloc_zeros::<T>(py)?,
            }))
        } else {
            None
        };
        let pad_bytes = if padded { T::BYTES * (px + py) } else { 0 };
    }
}

impl<T: Scalar> DeviceBsr<T> {
    /// One bsrmv on device addresses `xp` (nb·b values) and `yp` (mb·b values), on `gpu`'s
    /// stream (the handle moves there first).
    ///
    /// # Safety
    ///
    /// `xp` and `yp` address live device buffers of at least nb·b and mb·b values, not freed
    /// before the call completes on the stream; `gpu` is the GPU of the upload or a view of it.
    unsafe fn call(&self, gpu: &Gpu, alpha: T, xp: u64, beta: T, yp: u64) -> Result<()> {
        let (mb, nb, nnzb) = (
            kernel_int("cusparse-bsr block rows", self.mb)?,
            kernel_int("cusparse-bsr block columns", self.nb)?,
            kernel_int("cusparse-bsr blocks", self.nnzb)?,
        );
        let stream = gpu.stream();
        let mut h = self.h.lock().unwrap_or_else(|p| p.into_inner());
        let handle = h.handle;
        // SAFETY: the live handle, under its lock, on the plan's context (the caller's contract).
        unsafe { h.stream.set(handle, stream) }?;
        let (rp, _g1) = self.row_ptr.device_ptr(stream);
        let (ci, _g2) = self.col_idx.device_ptr(stream);
        let (va, _g3) = self.vals.device_ptr(stream);
        // SAFETY: live handle and descriptor; BSR arrays of mb + 1, nnzb and nnzb·b² entries;
        // x and y of nb·b and mb·b elements; host scalars of the precision's type.
        check("bsrmv", unsafe {
            (self.bsrmv)(
                h.handle,
                cusparseDirection_t::CUSPARSE_DIRECTION_ROW,
                cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE,
                mb,
                nb,
                nnzb,
                &alpha as *const T as *const c_void,
                h.descr,
                va as *const c_void,
                rp as *const c_int,
                ci as *const c_int,
                self.b as c_int,
                xp as *const c_void,
                &beta as *const T as *const c_void,
                yp as *mut c_void,
            )
        })
    }
}

impl<T: Scalar> Launches<T> for DeviceBsr<T> {
    /// Whole blocks: mb·b rows and nb·b columns.
    fn padded_dims(&self) -> Option<(usize, usize)> {
        Some(self.padded)
    }

    unsafe fn run(&self, gpu: &Gpu, c: Call<'_, T>) -> Result<()> {
        let Call {
            nrows,
            ncols,
            alpha,
            x,
            beta,
            y,
        } = c;
        if self.nnzb == 0 {
            return gpu.scale(y, nrows, beta);
        }
        gpu.context()
            .bind_to_thread()
            .map_err(|e| Error::cuda("binding the context", e))?;
        let stream = gpu.stream();
        // A vector of whole blocks is used in place (the Plan's own are); a shorter one goes
        // through the zero-padded scratch.
        let (py, px) = self.padded;
        let (x_direct, y_direct) = (x.len() >= px, y.len() >= py);
        if x_direct && y_direct {
            let (xp, _gx) = x.device_ptr(stream);
            let (yp, _gy) = y.device_ptr_mut(stream);
            // SAFETY: x and y hold whole blocks (nb·b and mb·b values), checked just above.
            return unsafe { self.call(gpu, alpha, xp, beta, yp) };
        }
        let Some(s) = &self.scratch else {
            return Err(Error::InvalidArgument(format!(
                "{NAME}: vectors shorter than whole blocks but no scratch (the shape is a \
                 multiple of the block size)"
            )));
        };
        let mut s = s.lock().unwrap_or_else(|p| p.into_inner());
        let s = &mut *s;
        let cp = |e| Error::cuda("cusparse-bsr scratch copy", e);
        if !x_direct {
            stream
                .memcpy_dtod(&x.slice(..ncols), &mut s.x.slice_mut(..ncols))
                .map_err(cp)?;
        }
        if !y_direct && beta != T::zero() {
            stream
                .memcpy_dtod(&y.slice(..nrows), &mut s.y.slice_mut(..nrows))
                .map_err(cp)?;
        }
        {
            let (xp, _gx) = if x_direct {
                x.device_ptr(stream)
            } else {
                s.x.device_ptr(stream)
            };
            let (yp, _gy) = if y_direct {
                y.device_ptr_mut(stream)
            } else {
                s.y.device_ptr_mut(stream)
            };
            // SAFETY: each address is a vector of whole blocks (checked) or the scratch,
            // allocated with nb·b and mb·b values.
            unsafe { self.call(gpu, alpha, xp, beta, yp) }?;
        }
        if !y_direct {
            stream
                .memcpy_dtod(&s.y.slice(..nrows), &mut y.slice_mut(..nrows))
                .map_err(cp)?;
        }
        Ok(())
    }
}

impl<T: Scalar> Drop for DeviceBsr<T> {
    fn drop(&mut self) {
        let _ = self.gpu.context().bind_to_thread();
        // Work enqueued with the handle must finish before it and the buffers go.
        let _ = self.gpu.synchronize();
    }
}
