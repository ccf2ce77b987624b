//! Device and pinned host memory for [`Gpu`] (issue #3): free-memory checks before uploads,
//! uploads and downloads on the spmvkit stream, zeroed device buffers, and page-locked host
//! buffers (for the copy/compute overlap of CSR-Full-Overlap).

use cudarc::driver::{CudaSlice, DeviceRepr, PinnedHostSlice, ValidAsZeroBits};

use super::Gpu;
use crate::error::{Error, Result};

/// A page-locked host buffer, zero-initialised; copies from and to it run truly asynchronously.
pub type PinnedBuffer<T> = PinnedHostSlice<T>;

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
}
