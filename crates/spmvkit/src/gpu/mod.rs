//! Shared GPU plumbing (issue #3): device detection, the context and its stream, device and pinned
//! memory (`memory.rs`), the NVRTC compile cache ([`nvrtc`], with the shared `prelude.cu`), the
//! launch layer ([`launch`]: one argument struct per entry, checked against the kernel at
//! compile time, one [`Gpu::launch`] with named shapes, the stream/graph mode rule), the y
//! prologue of atomic methods ([`YPrologue`]), the timing protocol ([`timing`]), the limits
//! probe ([`probe`]: read bandwidth and random-gather rate) and the cuSPARSE baseline's RAII
//! wrapper ([`cusparse`]). This module knows no method; method rooms build on the surface in
//! `docs/gpu-contract.md`.
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
//! - A caller's stream comes in as a view, [`Gpu::on_stream`] (same context, other stream), and
//!   a caller's device memory as [`Borrowed`] (issue #23): `Plan::apply_device_on` runs a whole
//!   call on the view's stream. The plan keeps its calls one at a time across streams with
//!   events (`CallOrder`, `foreign.rs`), and its own stream waits for the last call before the
//!   plan rewrites or frees its buffers, so the rule above still holds for what the plan owns.
//! - Side streams exist only inside the crate (`Gpu::new_stream` is crate-private): the
//!   copy/compute streams of `csr-full-overlap` and the NCCL stream of `dist`. Each touches a
//!   caller's buffer only between an event recorded on [`Gpu::stream`] before and an event that
//!   [`Gpu::stream`] waits on after, so the call as a whole is ordered on [`Gpu::stream`]
//!   (and capturable into a graph), and it frees nothing.
//! - Code outside spmvkit that makes streams of its own (cudarc's `CudaStream::fork`, the
//!   context's `new_stream`) and uses spmvkit's buffers on them must order those uses against
//!   [`Gpu::stream`] with events itself: cudarc will not.

mod blocks;
mod csr_check;
pub mod cusparse;
mod foreign;
pub mod launch;
mod memory;
pub mod nvrtc;
pub mod probe;
mod props;
pub(crate) mod stored;
pub mod timing;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream};

pub use blocks::DeviceBlocks;
pub use csr_check::{check_device_csr, RowLengths, CSR_CHECK_KERNELS};
pub use foreign::Borrowed;
pub(crate) use foreign::CallOrder;
pub use launch::{
    Abi, ByMode, DevMut, DevRef, Double, Entry, Kernel, KernelArgs, Kernels, LaunchMode,
    RowOffsets, Shape, Stored,
};
pub use memory::{PinnedBuffer, PinnedSource, FILL_PIECE};
pub use nvrtc::{
    compile_checked_ptx, compile_checked_ptx_mode, compile_ptx, nvrtc_present, nvrtc_version,
    KernelMode, PRELUDE,
};
pub use probe::{run_probe, GatherPoint, Probe, ProbeOptions, RowPoint};
pub use timing::{
    capture_graph, measure_copy_bandwidth, time_graph, time_stream, Timing, TimingConfig,
    TimingMode,
};

use crate::error::{Error, Result};
use crate::scalar::{OffsetWidth, PrecisionMode, Scalar, ValueStorage};

/// A method's kernel source: header-free CUDA C++ compiled at run time by NVRTC.
#[derive(Clone, Copy, Debug)]
pub struct KernelSource {
    /// The method room it belongs to, e.g. `csr-vector`.
    pub name: &'static str,
    /// The `.cu` text (`include_str!`).
    pub source: &'static str,
}

crate::kernel_args! {
    /// `spmvkit_scale`'s arguments: y[..n] = β·y[..n].
    struct ScaleArgs<'a, T> {
        y: DevMut<'a, T>,
        n: i32,
        beta: T,
    }
}

crate::kernel_args! {
    /// `spmvkit_gather`'s arguments: out[i] = x[idx[i]] for i < n.
    struct GatherArgs<'a, T> {
        out: DevMut<'a, T>,
        x: DevRef<'a, T>,
        idx: DevRef<'a, u32>,
        n: i32,
    }
}

/// The loaded pack kernel `spmvkit_gather` ([`Gpu::gather_kernel`]).
pub struct Gather<T: Scalar> {
    k: Kernel<GatherArgs<'static, T>>,
}

impl<T: Scalar> Gather<T> {
    /// [`Gpu::gather_on`] with this kernel.
    ///
    /// # Safety
    ///
    /// As [`Gpu::gather_on`].
    pub unsafe fn run(
        &self,
        gpu: &Gpu,
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
        let args = GatherArgs {
            out: DevMut::new(out),
            x: DevRef::new(x),
            idx: DevRef::new(idx),
            n: kernel_int("gather: element count", n)?,
        };
        let shape = Shape::grid_stride(n, UTIL_THREADS, gpu.sm_count * 32);
        // SAFETY: n is within out and idx (checked above); the caller guarantees idx < x.len()
        // and orders `stream` against Gpu::stream.
        unsafe { gpu.launch_on(stream, &self.k, shape, &args) }
    }
}

/// Kernels of the runtime itself (no method): `spmvkit_scale`, `spmvkit_gather`.
pub const UTIL_KERNELS: Kernels = Kernels::new(
    "spmvkit-util",
    include_str!("util.cu"),
    &[
        ScaleArgs::entry("spmvkit_scale"),
        GatherArgs::entry("spmvkit_gather"),
    ],
);

/// The runtime's own kernels (the helpers, the device CSR check and the limits probe), for the CI NVRTC check.
pub fn internal_kernels() -> Vec<Kernels> {
    vec![UTIL_KERNELS, probe::PROBE_KERNELS, CSR_CHECK_KERNELS]
}

/// The y prologue of methods that add into y (atomics, carries), loaded for precision `T`:
/// y[..n] = β·y[..n], zeros without reading y when β = 0. Made once at upload
/// ([`Gpu::y_prologue`], [`Gpu::y_prologue_kernel`]), run at every call ([`YPrologue::run`]).
pub struct YPrologue<T: Scalar> {
    k: Kernel<ScaleArgs<'static, T>>,
    ctas_per_sm: usize,
    memset_zero: bool,
}

impl<T: Scalar> YPrologue<T> {
    /// Enqueues the prologue on [`Gpu::stream`] for y[..n]; `n` is checked against `y`.
    pub fn run(&self, gpu: &Gpu, y: &mut CudaSlice<T>, n: usize, beta: T) -> Result<()> {
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
        if self.memset_zero && beta == T::zero() {
            return gpu
                .stream
                .memset_zeros(&mut y.slice_mut(0..n))
                .map_err(|e| Error::cuda("zeroing y", e));
        }
        let args = ScaleArgs {
            y: DevMut::new(y),
            n: kernel_int("scale: element count", n)?,
            beta,
        };
        let shape = Shape::grid_stride(n, UTIL_THREADS, gpu.sm_count * self.ctas_per_sm);
        // SAFETY: the kernel touches y[..n], and n ≤ y.len() (checked above).
        unsafe { gpu.launch(&self.k, shape, &args) }
    }
}

/// Threads per CTA of the runtime's grid-stride kernels.
const UTIL_THREADS: u32 = 256;

/// Loaded modules, keyed by (kernel text, precision, the entry list whose layout checks were
/// compiled in: [`Kernels::key`], none for [`Gpu::function`]).
type ModuleCache = HashMap<(&'static str, KernelMode, Option<u64>), Arc<CudaModule>>;

/// One GPU: its context, the stream spmvkit works on, and its properties.
///
/// [`Gpu::get`] gives the process-wide one, on spmvkit's own stream; [`Gpu::on_stream`] gives a
/// view of it on a caller's stream (same context, properties and module cache), through which a
/// [`crate::Plan`] call runs on that stream ([`crate::Plan::apply_device_on`]).
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: Arc<str>,
    cc: (i32, i32),
    sm_count: usize,
    modules: Arc<Mutex<ModuleCache>>,
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
            name: name.into(),
            cc,
            sm_count: sm_count.max(1) as usize,
            modules: Arc::new(Mutex::new(HashMap::new())),
        })
    }

    /// This GPU with `stream` in place of its own: everything enqueued through the view (a
    /// plan's launches, its y prologue, cuSPARSE's calls, the events of multi-stream methods)
    /// goes on `stream`, which must belong to this GPU's context ([`Error::InvalidArgument`]
    /// otherwise). The context, properties and compiled modules are shared, so a view costs a few
    /// reference counts; keep one per stream rather than one per call. A view is for enqueuing
    /// calls: buffers allocated through it would be freed on `stream`, so allocate through
    /// [`Gpu::get`]'s GPU instead. A caller's stream (CuPy's or PyTorch's current stream) comes
    /// in through cudarc's `CudaContext::wrap_borrowed_stream` (issue #23).
    pub fn on_stream(&self, stream: Arc<CudaStream>) -> Result<Gpu> {
        if !self.same_context(stream.context()) {
            return Err(Error::InvalidArgument(format!(
                "a stream of another CUDA context than {}'s (device {})",
                self.name,
                self.ctx.ordinal()
            )));
        }
        Ok(Gpu {
            ctx: self.ctx.clone(),
            stream,
            name: self.name.clone(),
            cc: self.cc,
            sm_count: self.sm_count,
            modules: self.modules.clone(),
        })
    }

    /// Whether `ctx` is this GPU's CUDA context (the same driver context, however wrapped).
    pub fn same_context(&self, ctx: &CudaContext) -> bool {
        ctx.cu_ctx() == self.ctx.cu_ctx()
    }

    /// The device ordinal (0: the process-wide GPU of [`Gpu::get`]).
    pub fn ordinal(&self) -> usize {
        self.ctx.ordinal()
    }

    /// Whether this GPU and `other` enqueue on the same stream (a view on a caller's stream
    /// and the GPU it was made from do not).
    pub fn same_stream(&self, other: &Gpu) -> bool {
        self.stream.cu_stream() == other.stream.cu_stream()
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
    /// The stream every spmvkit call runs on (a caller's stream on a view, [`Gpu::on_stream`]).
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

    /// Whether the work enqueued now on [`Gpu::stream`] runs on the stream or is captured into a
    /// CUDA graph. Methods whose best launch plan differs between the two keep that choice as a
    /// [`ByMode`] and ask at each call; an error reads as [`LaunchMode::Stream`].
    pub fn launch_mode(&self) -> LaunchMode {
        match self.stream.capture_status() {
            Ok(cudarc::driver::sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE) => {
                LaunchMode::Graph
            }
            _ => LaunchMode::Stream,
        }
    }

    /// [`Gpu::launch_mode`] when `needed` (some choice of the call varies by mode), else
    /// [`LaunchMode::Stream`] without asking the driver.
    pub fn launch_mode_if(&self, needed: bool) -> LaunchMode {
        if needed {
            self.launch_mode()
        } else {
            LaunchMode::Stream
        }
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
        let module = self.module(k, T::PRECISION, None)?;
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

    /// The entry point `entry` of `k` for the launch layer, compiled by NVRTC for this device in
    /// precision `T` with the layout checks of `k`'s argument structs appended (see [`launch`]):
    /// `entry` must be in `k`'s list, taking `A`. Cached as [`Gpu::function`] is.
    pub fn kernel<T: Scalar, A: KernelArgs>(&self, k: &Kernels, entry: &str) -> Result<Kernel<A>> {
        self.kernel_stored::<T, A>(k, entry, ValueStorage::Same)
    }

    /// As [`Gpu::kernel`], compiled for matrix values stored as `values` (the prelude's `val_t`,
    /// read through [`launch::Stored`] pointers; issue #25, docs/precision.md): one module per
    /// (source, precision mode).
    pub fn kernel_stored<T: Scalar, A: KernelArgs>(
        &self,
        k: &Kernels,
        entry: &str,
        values: ValueStorage,
    ) -> Result<Kernel<A>> {
        self.kernel_mode::<T, A>(k, entry, values, OffsetWidth::W32)
    }

    /// As [`Gpu::kernel_stored`], compiled for row offsets of width `offsets` too (the
    /// prelude's `off_t`; docs/offsets.md): one module per (source, [`KernelMode`]).
    pub fn kernel_mode<T: Scalar, A: KernelArgs>(
        &self,
        k: &Kernels,
        entry: &str,
        values: ValueStorage,
        offsets: OffsetWidth,
    ) -> Result<Kernel<A>> {
        let mode = KernelMode {
            precision: PrecisionMode {
                vectors: T::PRECISION,
                values,
            },
            offsets,
        };
        let decl = k.entry(entry).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{}: entry '{entry}' is not in its Kernels list",
                k.source.name
            ))
        })?;
        let declared = (decl.args.layout)(T::PRECISION);
        if A::layout() != declared {
            return Err(Error::InvalidArgument(format!(
                "{}: entry '{entry}' takes {} ({}), loaded as taking {} ({})",
                k.source.name,
                declared.name,
                T::PRECISION,
                A::NAME,
                T::PRECISION
            )));
        }
        let module = self.module(&k.source, mode, Some(k))?;
        let f = module.load_function(entry).map_err(|e| {
            Error::cuda(
                format!(
                    "{}: finding entry point '{entry}' for {mode}",
                    k.source.name
                ),
                e,
            )
        })?;
        Ok(Kernel::new(f, decl))
    }

    /// Enqueues one launch of `k` on [`Gpu::stream`] with `args` (by value, or field by field as
    /// the parameter list: the entry's [`Abi`]), in `shape`; a shape of no CTAs launches nothing.
    /// The struct's layout was checked against the kernel when it was compiled ([`Gpu::kernel`]),
    /// its pointers are live slices borrowed for the call, and the launch is stream-ordered before
    /// any later free of them.
    ///
    /// # Safety
    ///
    /// The kernel's data contract: the arrays in `args` hold what the kernel indexes (the room's
    /// layout builder guarantees it), the vectors are as long as its `run_unchecked` contract
    /// requires, and a buffer lent with [`DevMut::scratch`] is lent nowhere else in `args`.
    pub unsafe fn launch<A: KernelArgs>(
        &self,
        k: &Kernel<A>,
        shape: Shape,
        args: &A,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.launch_on(&self.stream, k, shape, args) }
    }

    /// [`Gpu::launch`] on a side stream of this context.
    ///
    /// # Safety
    ///
    /// As [`Gpu::launch`], and `stream`'s uses of the buffers are ordered against
    /// [`Gpu::stream`]'s (module doc).
    pub(crate) unsafe fn launch_on<A: KernelArgs>(
        &self,
        stream: &CudaStream,
        k: &Kernel<A>,
        shape: Shape,
        args: &A,
    ) -> Result<()> {
        if shape.ctas_count() == 0 {
            return Ok(());
        }
        if self.ctx.is_event_tracking() {
            return Err(Error::cuda(
                format!("{} launch", k.name()),
                "cudarc's event tracking is on, which the launch layer's raw addresses bypass",
            ));
        }
        let cfg = shape.config()?;
        let mut b = stream.launch_builder(k.function());
        k.push(args, &mut b);
        // SAFETY: the struct, or its fields as the parameters, as NVRTC checked them against the
        // entry when it compiled it (Gpu::kernel); the caller's data contract.
        let launched = if shape.is_cooperative() {
            unsafe { b.launch_cooperative(cfg) }
        } else {
            unsafe { b.launch(cfg) }
        };
        launched
            .map(|_| ())
            .map_err(|e| Error::cuda(format!("{} launch", k.name()), e))
    }

    /// Enqueues y[..n] = β·y[..n] on [`Gpu::stream`]; with β = 0, y is zeroed without being read
    /// (so NaN garbage does not survive). For methods that accumulate with atomics and call it
    /// rarely; a room that scales at every call keeps a [`Gpu::y_prologue`].
    pub fn scale<T: Scalar>(&self, y: &mut CudaSlice<T>, n: usize, beta: T) -> Result<()> {
        self.y_prologue::<T>()?.run(self, y, n, beta)
    }

    /// The y prologue as [`Gpu::scale`] runs it: a memset when β = 0, otherwise a grid-stride
    /// kernel of at most 32 CTAs of 256 threads per SM.
    pub fn y_prologue<T: Scalar>(&self) -> Result<YPrologue<T>> {
        Ok(YPrologue {
            k: self.kernel::<T, _>(&UTIL_KERNELS, "spmvkit_scale")?,
            ctas_per_sm: 32,
            memset_zero: true,
        })
    }

    /// The y prologue as one grid-stride kernel launch for every β (the kernel writes the zeros
    /// when β = 0), at most `ctas_per_sm` CTAs of 256 threads per SM.
    pub fn y_prologue_kernel<T: Scalar>(&self, ctas_per_sm: usize) -> Result<YPrologue<T>> {
        Ok(YPrologue {
            k: self.kernel::<T, _>(&UTIL_KERNELS, "spmvkit_scale")?,
            ctas_per_sm,
            memset_zero: false,
        })
    }

    /// Enqueues `out[i] = x[idx[i]]` for `i < n` on `stream` (packing scattered entries, e.g. the
    /// send buffer of a halo exchange). `n` is checked against `out` and `idx`; the entries of
    /// `idx` are not (that would need a pass over them). A caller that packs on every call
    /// loads the kernel once with [`Gpu::gather_kernel`] instead.
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
        // SAFETY: the caller's contract, passed on.
        unsafe { self.gather_kernel::<T>()?.run(self, stream, out, x, idx, n) }
    }

    /// The pack kernel of [`Gpu::gather_on`], loaded once (no module lookup per call).
    pub fn gather_kernel<T: Scalar>(&self) -> Result<Gather<T>> {
        Ok(Gather {
            k: self.kernel::<T, GatherArgs<T>>(&UTIL_KERNELS, "spmvkit_gather")?,
        })
    }

    /// The module of `k` in `precision`, compiled with the layout checks of `checked`'s argument
    /// structs when given (the launch layer), else as it is ([`Gpu::function`]).
    fn module(
        &self,
        k: &KernelSource,
        precision: impl Into<KernelMode>,
        checked: Option<&Kernels>,
    ) -> Result<Arc<CudaModule>> {
        let precision = precision.into();
        let key = (k.source, precision, checked.map(Kernels::key));
        if let Some(m) = self.lock_modules().get(&key) {
            return Ok(m.clone());
        }
        let checks = checked.map_or(String::new(), |c| {
            launch::layout_checks(c, precision.precision.vectors)
        });
        let compiled = nvrtc::compile(k, &checks, precision, &self.arch())?;
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
