//! Shared GPU plumbing: device detection, the context and stream, and device memory. This module
//! knows no method; methods build on it.
//!
//! Every CUDA library is loaded dynamically through `cudarc`. Presence of libcuda, libnvrtc and
//! libcusparse is checked with `is_culib_present()` before any call (cudarc panics on a missing
//! library), and any failure becomes a [`crate::Error::GpuUnavailable`] with the reason, so
//! callers fall back to the CPU.

use std::sync::{Arc, OnceLock};

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};

use crate::error::{Error, Result};

/// A method's kernel source: header-free CUDA C++ compiled at run time by NVRTC.
#[derive(Clone, Copy, Debug)]
pub struct KernelSource {
    /// The method room it belongs to, e.g. `csr-vector`.
    pub name: &'static str,
    /// The `.cu` text (`include_str!`).
    pub source: &'static str,
}

/// One GPU: its context, the stream spmvkit works on, and its properties.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    cc: (i32, i32),
}

static GPU: OnceLock<std::result::Result<Arc<Gpu>, String>> = OnceLock::new();

/// Whether the CUDA driver, NVRTC and cuSPARSE libraries can all be loaded.
pub fn libraries_present() -> std::result::Result<(), String> {
    // SAFETY: these only try to dlopen the library and drop it.
    let missing: Vec<&str> = [
        ("libcuda", unsafe {
            cudarc::driver::sys::is_culib_present()
        }),
        ("libnvrtc", unsafe {
            cudarc::nvrtc::sys::is_culib_present()
        }),
        ("libcusparse", unsafe {
            cudarc::cusparse::sys::is_culib_present()
        }),
    ]
    .into_iter()
    .filter(|(_, present)| !present)
    .map(|(name, _)| name)
    .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("{} not found", missing.join(", ")))
    }
}

impl Gpu {
    /// The process-wide GPU 0, opened on first use. Errors (no library, no device) are cached
    /// and returned again, so detection runs once.
    pub fn get() -> Result<Arc<Gpu>> {
        GPU.get_or_init(|| Gpu::open(0).map(Arc::new))
            .clone()
            .map_err(Error::GpuUnavailable)
    }

    fn open(ordinal: usize) -> std::result::Result<Gpu, String> {
        libraries_present()?;
        let count = CudaContext::device_count().map_err(|e| format!("cuDeviceGetCount: {e}"))?;
        if count <= ordinal as i32 {
            return Err("no CUDA device found".into());
        }
        let ctx = CudaContext::new(ordinal).map_err(|e| format!("creating a context: {e}"))?;
        let name = ctx.name().map_err(|e| e.to_string())?;
        let cc = ctx.compute_capability().map_err(|e| e.to_string())?;
        let stream = ctx
            .new_stream()
            .map_err(|e| format!("creating a stream: {e}"))?;
        Ok(Gpu {
            ctx,
            stream,
            name,
            cc,
        })
    }

    /// The device name, e.g. "NVIDIA H100 80GB HBM3".
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Compute capability (major, minor).
    pub fn compute_capability(&self) -> (i32, i32) {
        self.cc
    }
    /// The NVRTC architecture name, e.g. "sm_90".
    pub fn arch(&self) -> String {
        format!("sm_{}{}", self.cc.0, self.cc.1)
    }
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }
    /// The stream every spmvkit call runs on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }
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

    /// Copies a host slice to a new device buffer.
    pub fn upload<T: DeviceRepr + ValidAsZeroBits>(&self, data: &[T]) -> Result<CudaSlice<T>> {
        if data.is_empty() {
            return self
                .stream
                .alloc_zeros(1)
                .map_err(|e| Error::cuda("cuMemAlloc", e));
        }
        self.stream
            .clone_htod(data)
            .map_err(|e| Error::cuda("host-to-device copy", e))
    }

    /// Copies a device buffer into a host slice of at most its length.
    pub fn download<T: DeviceRepr>(&self, src: &CudaSlice<T>, dst: &mut [T]) -> Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
        let view = src.slice(0..dst.len());
        self.stream
            .memcpy_dtoh(&view, dst)
            .map_err(|e| Error::cuda("device-to-host copy", e))?;
        self.stream
            .synchronize()
            .map_err(|e| Error::cuda("stream synchronize", e))
    }
}
