//! Device and pinned host memory for [`Gpu`] (issue #3): free-memory checks before uploads,
//! uploads and downloads on the spmvkit stream, zeroed device buffers, page-locked host buffers,
//! and [`PinnedSource`]: host data kept pinned to be copied to the device inside every call (the
//! per-call upload of CSR-Full-Overlap, §4.2, and of its Eq. 2 baseline `cusparse-e2e`, §5.5).

use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaSlice, CudaStream, DevicePtr, DeviceRepr, PinnedHostSlice, ValidAsZeroBits,
};

use super::Gpu;
use crate::error::{Error, Result};

/// The most elements [`Gpu::filled`] uploads in one copy (and holds on the host).
pub const FILL_PIECE: usize = 1 << 20;

/// A page-locked host buffer, zero-initialised; copies from and to it run truly asynchronously.
pub type PinnedBuffer<T> = PinnedHostSlice<T>;

/// Host data copied once into page-locked memory and never written again, from which ranges are
/// copied to the device asynchronously, call after call (and inside CUDA-graph capture).
///
/// Dropping it synchronises the context first, so no copy enqueued from it outlives it.
pub struct PinnedSource<T> {
    buf: PinnedBuffer<T>,
    /// Address of `buf`'s data, kept so that a copy needs no event synchronisation (`buf` is
    /// never written after construction).
    addr: usize,
    len: usize,
    ctx: Arc<CudaContext>,
}

impl<T: DeviceRepr> PinnedSource<T> {
    /// Elements held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Enqueues the copy of elements `[start, end)` into the same range of `dst` on `stream`,
    /// asynchronously (`cuMemcpyHtoDAsync`). `what` names the copy in errors. `dst` is written
    /// through its device address; the caller orders the copy against other uses of `dst`.
    pub fn copy_range_async(
        &self,
        what: &str,
        dst: &CudaSlice<T>,
        start: usize,
        end: usize,
        stream: &Arc<CudaStream>,
    ) -> Result<()> {
        if end <= start {
            return Ok(());
        }
        if end > self.len || end > dst.len() {
            return Err(Error::DimensionMismatch {
                what: format!("{what}: copy range end beyond the pinned or the device buffer"),
                expected: self.len.min(dst.len()),
                got: end,
            });
        }
        // SAFETY: `addr` is the data of `buf` (len elements, alive as long as self, never
        // written after construction) and start < end ≤ len.
        let src =
            unsafe { std::slice::from_raw_parts((self.addr as *const T).add(start), end - start) };
        let (d, _guard) = dst.device_ptr(stream);
        let offset = (start * std::mem::size_of::<T>()) as u64;
        // SAFETY: [start, end) lies inside dst (checked above); the source is pinned, so the copy
        // is asynchronous on `stream`, and it outlives the copy (Drop synchronises the context).
        unsafe { cudarc::driver::result::memcpy_htod_async(d + offset, src, stream.cu_stream()) }
            .map_err(|e| Error::cuda(format!("{what}: host-to-device copy"), e))
    }
}

impl<T> Drop for PinnedSource<T> {
    fn drop(&mut self) {
        // The pinned memory must outlive every copy enqueued from it, on whichever stream.
        let _ = self.ctx.synchronize();
        let _ = &self.buf;
    }
}

impl Gpu {
    /// (free, total) device memory in bytes.
    pub fn memory(&self) -> Result<(usize, usize)> {
        self.ctx
            .mem_get_info()
            .map_err(|e| Error::cuda("cuMemGetInfo", e))
    }

    /// Fails with [`Error::DeviceMemory`] unless `bytes` fit in free memory.
    pub fn ensure_fits(&self, what: &str, bytes: usize) -> Result<()> {
        let (free, _) = self.memory()?;
        if bytes > free {
            return Err(Error::DeviceMemory {
                what: what.into(),
                needed: bytes as u64,
                free: free as u64,
            });
        }
        Ok(())
    }

    /// Copies a host slice to a new device buffer (an empty slice gives a 1-element buffer, so
    /// kernels always get a valid pointer).
    pub fn upload<T: DeviceRepr + ValidAsZeroBits>(&self, data: &[T]) -> Result<CudaSlice<T>> {
        if data.is_empty() {
            return self.alloc_zeros(1);
        }
        self.stream
            .clone_htod(data)
            .map_err(|e| Error::cuda("host-to-device copy", e))
    }

    /// A device buffer of `len` elements (at least one), each `value`: uploaded in pieces of at
    /// most [`FILL_PIECE`] elements from one host piece, so the host never holds more than that
    /// whatever `len` (`auto`'s SpMM trial fills X blocks of up to ncols × 256 values).
    pub fn filled<T: DeviceRepr + ValidAsZeroBits + Copy>(
        &self,
        len: usize,
        value: T,
    ) -> Result<CudaSlice<T>> {
        let mut buf = self.alloc_zeros::<T>(len)?;
        let len = buf.len();
        let piece = vec![value; len.min(FILL_PIECE)];
        let mut at = 0;
        while at < len {
            let n = piece.len().min(len - at);
            self.stream
                .memcpy_htod(&piece[..n], &mut buf.slice_mut(at..at + n))
                .map_err(|e| Error::cuda("host-to-device copy (fill)", e))?;
            at += n;
        }
        Ok(buf)
    }

    /// A zeroed device buffer of `len` elements (at least one).
    pub fn alloc_zeros<T: DeviceRepr + ValidAsZeroBits>(&self, len: usize) -> Result<CudaSlice<T>> {
        self.stream
            .alloc_zeros(len.max(1))
            .map_err(|e| Error::cuda(format!("allocating {len} device elements"), e))
    }

    /// Copies a device buffer into a host slice of at most its length, and waits for it.
    pub fn download<T: DeviceRepr>(&self, src: &CudaSlice<T>, dst: &mut [T]) -> Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
        if dst.len() > src.len() {
            return Err(Error::DimensionMismatch {
                what: "download destination longer than the device buffer".into(),
                expected: src.len(),
                got: dst.len(),
            });
        }
        let view = src.slice(0..dst.len());
        self.stream
            .memcpy_dtoh(&view, dst)
            .map_err(|e| Error::cuda("device-to-host copy", e))?;
        self.synchronize()
    }

    /// A zeroed page-locked host buffer of `len` elements.
    pub fn alloc_pinned<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        len: usize,
    ) -> Result<PinnedBuffer<T>> {
        // SAFETY: the buffer is zero-filled below before anyone reads it, and all-zero bits are a
        // valid T (ValidAsZeroBits).
        let mut buf = unsafe { self.ctx.alloc_pinned::<T>(len.max(1)) }
            .map_err(|e| Error::cuda(format!("allocating {len} pinned host elements"), e))?;
        let ptr = buf
            .as_mut_ptr()
            .map_err(|e| Error::cuda("pinned buffer", e))?;
        // SAFETY: ptr addresses len.max(1) elements owned by buf.
        unsafe { std::ptr::write_bytes(ptr, 0, len.max(1)) };
        Ok(buf)
    }

    /// A [`PinnedSource`] holding a copy of `data`.
    pub fn pinned_source<T: DeviceRepr + ValidAsZeroBits + Copy>(
        &self,
        data: &[T],
    ) -> Result<PinnedSource<T>> {
        let mut buf = self.alloc_pinned::<T>(data.len())?;
        let dst = buf
            .as_mut_slice()
            .map_err(|e| Error::cuda("pinned buffer", e))?;
        dst[..data.len()].copy_from_slice(data);
        let addr = dst.as_ptr() as usize;
        Ok(PinnedSource {
            buf,
            addr,
            len: data.len(),
            ctx: self.ctx.clone(),
        })
    }
}
