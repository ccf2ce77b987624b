//! Shared GPU plumbing (issue #3): device detection, the context and its stream, device and pinned
//! memory (`memory.rs`), the NVRTC compile cache ([`nvrtc`], with the shared `prelude.cu`), the
//! timing protocol ([`timing`]), the limits probe ([`probe`]: read bandwidth and random-gather
//! rate) and the cuSPARSE baseline's RAII wrapper ([`cusparse`]). This module knows no method;
//! method rooms build on the surface in `docs/gpu-contract.md`.
//!
//! Every CUDA library is loaded dynamically through `cudarc`. Presence of libcuda, libnvrtc and
//! libcusparse is checked with `is_culib_present()` before any call (cudarc panics on a missing
//! library), and any failure becomes a [`crate::Error::GpuUnavailable`] with the reason, so
//! callers fall back to the CPU.
//!
//! cudarc's per-slice event tracking is switched off for the context: spmvkit enqueues every call
//! on one stream ([`Gpu::stream`]), where stream order already serialises all uses, and the extra
//! events would add launch overhead and break CUDA-graph capture. Without tracking, cudarc no
//! longer orders a buffer's uses on different streams (nor its free after a use on another
//! stream), so the rule is spmvkit's own, and `docs/gpu-contract.md` states it:
//!
//! - Every device buffer spmvkit hands out or takes (layouts, a `Plan`'s x and y, the vectors
//!   of `apply_device`, the solvers' vectors) is read, written and freed on [`Gpu::stream`].
//! - Side streams exist only inside the crate (`Gpu::new_stream` is crate-private): the
//!   copy/compute streams of `csr-full-overlap` and the NCCL stream of `dist`. Each touches a
//!   caller's buffer only between an event recorded on [`Gpu::stream`] before and an event that
//!   [`Gpu::stream`] waits on after, so the call as a whole is ordered on [`Gpu::stream`]
//!   (and capturable into a graph), and it frees nothing.
//! - Code outside spmvkit that makes streams of its own (cudarc's `CudaStream::fork`, the
//!   context's `new_stream`) and uses spmvkit's buffers on them must order those uses against
//!   [`Gpu::stream`] with events itself: cudarc will not.

pub mod cusparse;
mod memory;
pub mod nvrtc;
pub mod probe;
mod props;
pub mod timing;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};

pub use memory::{PinnedBuffer, PinnedSource};
pub use nvrtc::{compile_ptx, nvrtc_present, nvrtc_version, PRELUDE};
pub use probe::{run_probe, GatherPoint, Probe, ProbeOptions};
pub use timing::{
    capture_graph, measure_copy_bandwidth, time_graph, time_stream, Timing, TimingConfig,
    TimingMode,
};

use crate::error::{Error, Result};
use crate::scalar::{Precision, Scalar};

/// A method's kernel source: header-free CUDA C++ compiled at run time by NVRTC.
#[derive(Clone, Copy, Debug)]
pub struct KernelSource {
    /// The method room it belongs to, e.g. `csr-vector`.
    pub name: &'static str,
    /// The `.cu` text (`include_str!`).
    pub source: &'static str,
}

/// Kernels of the runtime itself (no method): `spmvkit_scale`, `spmvkit_gather`.
pub const UTIL_KERNELS: KernelSource = KernelSource {
    name: "spmvkit-util",
    source: include_str!("util.cu"),
};

/// The runtime's own kernels (the helpers and the limits probe), for the CI NVRTC check.
pub fn internal_kernels() -> Vec<KernelSource> {
    vec![UTIL_KERNELS, probe::PROBE_KERNELS]
}

/// Loaded modules, keyed by (kernel text, precision).
type ModuleCache = HashMap<(&'static str, Precision), Arc<CudaModule>>;

/// One GPU: its context, the stream spmvkit works on, and its properties.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    cc: (i32, i32),
    sm_count: usize,
    modules: Mutex<ModuleCache>,
}

static GPU: OnceLock<std::result::Result<Arc<Gpu>, String>> = OnceLock::new();

/// Whether the CUDA driver, NVRTC and cuSPARSE libraries can all be loaded.
pub fn libraries_present() -> std::result::Result<(), String> {
    // SAFETY: these only try to dlopen the library and drop it.
    let missing: Vec<&str> = [
        ("libcuda", unsafe {
            cudarc::driver::sys::is_culib_present()
        }),
        ("libnvrtc", nvrtc_present()),
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

/// `value` as a kernel's `int` argument: [`Error::TooLarge`] naming `what` when it exceeds
/// 2^31−1 (the kernels index with 32-bit ints).
pub fn kernel_int(what: &'static str, value: usize) -> Result<i32> {
    i32::try_from(value).map_err(|_| Error::TooLarge {
        what,
        value: value as u64,
    })
}

/// How far below 2^31−1 the rows and nonzeros of a matrix must stay for kernels whose hot loops
/// step 32-bit `int` indices by up to one CTA (1024 threads) past a bound: csr-overlap's batch
/// loops and the prelude's `cta_gather_sum` (64-bit or unsigned indices there cost registers and
/// unrolling; measurements: `docs/methods/csr-overlap.md`).
pub const INT_LOOP_MARGIN: usize = 1024;

/// Refuses, for `method`, a matrix whose rows or nonzeros come within [`INT_LOOP_MARGIN`] of
/// 2^31−1, so that 32-bit loop indices cannot overflow.
pub fn check_int_loops(method: &str, nrows: usize, nnz: usize) -> Result<()> {
    let limit = i32::MAX as usize - INT_LOOP_MARGIN;
    if nrows.max(nnz) > limit {
        return Err(Error::MethodUnsupported {
            method: method.into(),
            reason: format!(
                "{nrows} rows and {nnz} nonzeros: its kernel steps 32-bit indices, which needs \
                 both at most 2^31 - 1 - {INT_LOOP_MARGIN} = {limit}"
            ),
        });
    }
    Ok(())
}

/// `value` as a grid dimension (`gridDim.x` is at most 2^31−1): [`Error::TooLarge`] naming
/// `what` when it does not fit.
pub fn grid_dim(what: &'static str, value: usize) -> Result<u32> {
    kernel_int(what, value).map(|v| v as u32)
}

/// Number of CUDA devices this process sees (0 when the driver cannot be loaded).
pub fn device_count() -> usize {
    if libraries_present().is_err() {
        return 0;
    }
    CudaContext::device_count().map_or(0, |n| n.max(0) as usize)
}

impl Gpu {
    /// The process-wide GPU 0, opened on first use. Errors (no library, no device) are cached
    /// and returned again, so detection runs once.
    ///
    /// The context is made current on the calling thread, so raw driver calls that do not bind
    /// it themselves (occupancy queries, attributes) work from any thread.
    pub fn get() -> Result<Arc<Gpu>> {
        let gpu = GPU
            .get_or_init(|| Gpu::open(0).map(Arc::new))
            .clone()
            .map_err(Error::GpuUnavailable)?;
        gpu.ctx
            .bind_to_thread()
            .map_err(|e| Error::cuda("binding the CUDA context to this thread", e))?;
        Ok(gpu)
    }

    fn open(ordinal: usize) -> std::result::Result<Gpu, String> {
        libraries_present()?;
        let count = CudaContext::device_count().map_err(|e| format!("cuDeviceGetCount: {e}"))?;
        if count <= ordinal as i32 {
            return Err("no CUDA device found".into());
        }
        let ctx = CudaContext::new(ordinal).map_err(|e| format!("creating a context: {e}"))?;
        // SAFETY: no CudaSlice exists yet; spmvkit orders all work by stream order (module doc).
        unsafe { ctx.disable_event_tracking() };
        let name = ctx.name().map_err(|e| e.to_string())?;
        let cc = ctx.compute_capability().map_err(|e| e.to_string())?;
        let sm_count = ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(|e| format!("querying the multiprocessor count: {e}"))?;
        let stream = ctx
            .new_stream()
            .map_err(|e| format!("creating a stream: {e}"))?;
        Ok(Gpu {
            ctx,
            stream,
            name,
            cc,
            sm_count: sm_count.max(1) as usize,
            modules: Mutex::new(HashMap::new()),
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
    /// Number of streaming multiprocessors.
    pub fn sm_count(&self) -> usize {
        self.sm_count
    }
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }
    /// The stream every spmvkit call runs on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// A further stream on this context (for methods that overlap copies and kernels, and the
    /// NCCL stream). Work on it is not ordered against [`Gpu::stream`], and with event tracking
    /// off cudarc does not order it either: every use of a buffer on it sits between an event
    /// recorded on [`Gpu::stream`] and one that [`Gpu::stream`] waits on (module doc).
    pub(crate) fn new_stream(&self) -> Result<Arc<CudaStream>> {
        self.ctx
            .new_stream()
            .map_err(|e| Error::cuda("creating a stream", e))
    }

    /// Whether [`Gpu::stream`] is being captured into a CUDA graph right now. Methods whose best
    /// launch plan differs between stream launches and graph replay (one cooperative launch
    /// saves a launch's host overhead on a stream, and costs a grid barrier in a graph) ask this
    /// at each call; an error reads as "not capturing".
    pub fn stream_is_capturing(&self) -> bool {
        matches!(
            self.stream.capture_status(),
            Ok(cudarc::driver::sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE)
        )
    }

    /// Blocks until everything enqueued on [`Gpu::stream`] has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(|e| Error::cuda("stream synchronize", e))
    }

    /// The entry point `entry` of kernel `k`, compiled by NVRTC for this device's architecture in
    /// precision `T` (the prelude prepended; see [`nvrtc`]). Compiled code is cached per process
    /// and loaded modules per GPU, so a second call is a hash lookup.
    pub fn function<T: Scalar>(&self, k: &KernelSource, entry: &str) -> Result<CudaFunction> {
        let module = self.module(k, T::PRECISION)?;
        module.load_function(entry).map_err(|e| {
            Error::cuda(
                format!(
                    "{}: finding entry point '{entry}' for {}",
                    k.name,
                    T::PRECISION
                ),
                e,
            )
        })
    }

    /// Enqueues y[..n] = β·y[..n] on [`Gpu::stream`]; with β = 0, y is zeroed without being read
    /// (so NaN garbage does not survive). For methods that accumulate with atomics.
    pub fn scale<T: Scalar>(&self, y: &mut CudaSlice<T>, n: usize, beta: T) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        if n > y.len() {
            return Err(Error::DimensionMismatch {
                what: "scale: n exceeds the buffer".into(),
                expected: y.len(),
                got: n,
            });
        }
        if beta == T::zero() {
            return self
                .stream
                .memset_zeros(&mut y.slice_mut(0..n))
                .map_err(|e| Error::cuda("zeroing y", e));
        }
        let f = self.function::<T>(&UTIL_KERNELS, "spmvkit_scale")?;
        let n_i32 = kernel_int("scale: element count", n)?;
        let blocks = n.div_ceil(256).min(self.sm_count * 32) as u32;
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = self.stream.launch_builder(&f);
        b.arg(y).arg(&n_i32).arg(&beta);
        // SAFETY: spmvkit_scale(real_t*, int, real_t) with n ≤ y.len().
        unsafe { b.launch(cfg) }
            .map(|_| ())
            .map_err(|e| Error::cuda("spmvkit_scale launch", e))
    }

    /// Enqueues `out[i] = x[idx[i]]` for `i < n` on `stream` (packing scattered entries, e.g. the
    /// send buffer of a halo exchange). `n` is checked against `out` and `idx`; the entries of
    /// `idx` are not (that would need a pass over them).
    ///
    /// # Safety
    ///
    /// `idx[..n]` (device data) are all < `x.len()`, and `stream`'s uses of the buffers are
    /// ordered against [`Gpu::stream`]'s (module doc).
    pub unsafe fn gather_on<T: Scalar>(
        &self,
        stream: &CudaStream,
        out: &mut CudaSlice<T>,
        x: &CudaSlice<T>,
        idx: &CudaSlice<u32>,
        n: usize,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        if n > out.len() || n > idx.len() {
            return Err(Error::DimensionMismatch {
                what: "gather: n exceeds the output or index buffer".into(),
                expected: out.len().min(idx.len()),
                got: n,
            });
        }
        let f = self.function::<T>(&UTIL_KERNELS, "spmvkit_gather")?;
        let n_i32 = kernel_int("gather: element count", n)?;
        let blocks = n.div_ceil(256).min(self.sm_count * 32) as u32;
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = stream.launch_builder(&f);
        b.arg(out).arg(x).arg(idx).arg(&n_i32);
        // SAFETY: spmvkit_gather(real_t*, const real_t*, const unsigned*, int) with n within
        // out and idx; the caller guarantees idx < x.len().
        unsafe { b.launch(cfg) }
            .map(|_| ())
            .map_err(|e| Error::cuda("spmvkit_gather launch", e))
    }

    fn module(&self, k: &KernelSource, precision: Precision) -> Result<Arc<CudaModule>> {
        let key = (k.source, precision);
        if let Some(m) = self.lock_modules().get(&key) {
            return Ok(m.clone());
        }
        let compiled = nvrtc::compile(k, precision, &self.arch())?;
        let image = match &compiled.cubin {
            Some(cubin) => cudarc::nvrtc::Ptx::from_binary(cubin.clone()),
            None => cudarc::nvrtc::Ptx::from_src(compiled.ptx.clone()),
        };
        let module = self.ctx.load_module(image).map_err(|e| {
            Error::cuda(
                format!(
                    "{}: loading the module compiled for {}",
                    k.name,
                    self.arch()
                ),
                e,
            )
        })?;
        self.lock_modules().insert(key, module.clone());
        Ok(module)
    }

    fn lock_modules(&self) -> std::sync::MutexGuard<'_, ModuleCache> {
        self.modules.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_loops_keep_one_cta_stride_below_2_pow_31() {
        let limit = i32::MAX as usize - INT_LOOP_MARGIN;
        assert!(check_int_loops("m", limit, limit).is_ok());
        for (rows, nnz) in [(limit + 1, 1), (1, limit + 1)] {
            let e = check_int_loops("m", rows, nnz).unwrap_err();
            assert!(matches!(e, Error::MethodUnsupported { .. }), "{e}");
        }
        // the largest index a loop reaches before its bound check still fits an int
        assert!(limit + INT_LOOP_MARGIN <= i32::MAX as usize);
    }

    #[test]
    fn launch_integers_are_checked() {
        assert_eq!(kernel_int("n", i32::MAX as usize).unwrap(), i32::MAX);
        assert_eq!(grid_dim("blocks", 1 << 20).unwrap(), 1 << 20);
        for bad in [i32::MAX as usize + 1, u32::MAX as usize, usize::MAX] {
            match kernel_int("rows", bad) {
                Err(Error::TooLarge {
                    what: "rows",
                    value,
                }) => assert_eq!(value, bad as u64),
                other => panic!("{bad}: {other:?}"),
            }
            assert!(grid_dim("blocks", bad).is_err());
        }
    }
}
