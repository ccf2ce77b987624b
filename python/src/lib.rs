//! `spmvkit._core`, the Rust half of the Python package (issue #23, "A Python package"): a thin
//! layer over [`spmvkit::Plan`] with no algorithm of its own. The Python half
//! (`pysrc/spmvkit/__init__.py`) turns SciPy matrices and NumPy arrays into the contiguous
//! buffers this module reads and writes, and gives the API its Python shape.
//!
//! Host arrays cross as `bytes` in little-endian order (the buffer protocol is not in CPython's
//! limited API before 3.11, and the wheel is abi3 from 3.9): CSR indices as `uint32`, values and
//! vectors as `float32` or `float64`; a length that is not a whole number of elements is refused
//! with a `ValueError` naming the argument. Errors of the library become Python exceptions with its
//! message: `ValueError` for bad input, `RuntimeError` for the rest.
//!
//! Device arrays (CuPy, PyTorch) cross as raw addresses with their lengths, the device ordinal
//! and the raw handle of the caller's current stream (`CorePlan::apply_device`). This is the one
//! place where raw addresses become slices (`spmvkit::gpu::Borrowed`, `Gpu::on_raw_stream`): the
//! Python half has checked dtype, shape and contiguity from the array's own metadata; this side
//! checks the plan's backend, the device, the exact lengths, alignment and that x and y do not
//! overlap, then runs `Plan::apply_device_on`, enqueued on that stream, nothing synchronised.
//!
//! Blocks of k vectors (issue #24 item 5, "the Python binding takes 2-D arrays") cross the same
//! ways with their `MultiShape` (k and the order, "row" or "col"): host blocks as bytes through
//! `Plan::apply_multi`, device blocks through `Plan::apply_multi_device`, one SpMM call. That
//! call runs on the plan's own stream, so it is ordered after the work already enqueued on the
//! caller's stream and the caller's stream after it (two event waits, nothing synchronised).

// PyO3 0.22's #[pymethods] expansion converts PyErr into itself, which clippy flags in code it
// does not show.
#![allow(clippy::useless_conversion)]

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use spmvkit::gpu::{Borrowed, Gpu, LaunchMode};
use spmvkit::matrix::{DenseOrder, MultiShape};
use spmvkit::methods::{DeviceCsrRef, Params};
use spmvkit::{Csr, Error, Plan, PlanOptions, PrepareFor};

/// A library error as the Python exception a caller expects.
fn py_err(e: Error) -> PyErr {
    match e {
        Error::InvalidArgument(_)
        | Error::InvalidStructure { .. }
        | Error::TooLarge { .. }
        | Error::DimensionMismatch { .. }
        | Error::Param { .. }
        | Error::UnknownMethod { .. } => PyValueError::new_err(e.to_string()),
        other => PyRuntimeError::new_err(other.to_string()),
    }
}

/// An element that crosses as little-endian bytes.
trait Le: Copy + Send + Sync {
    const BYTES: usize;
    fn from_le(b: &[u8]) -> Self;
    fn put_le(self, out: &mut Vec<u8>);
}

macro_rules! le {
    ($($t:ty),*) => {$(
        impl Le for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
            fn from_le(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
            fn put_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}
le!(u32, f32, f64);

/// The elements in `b`, or a `ValueError` naming `what`.
fn read<E: Le>(b: &[u8], what: &str) -> PyResult<Vec<E>> {
    if !b.len().is_multiple_of(E::BYTES) {
        return Err(PyValueError::new_err(format!(
            "{what}: {} bytes is not a whole number of {}-byte elements",
            b.len(),
            E::BYTES
        )));
    }
    Ok(b.chunks_exact(E::BYTES).map(E::from_le).collect())
}

fn bytes_of<E: Le>(v: &[E]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * E::BYTES);
    v.iter().for_each(|e| e.put_le(&mut out));
    out
}

/// A plan in one precision.
enum Typed {
    F64(Plan<f64>),
    F32(Plan<f32>),
}

/// A matrix prepared once by one method, applied many times: `spmvkit.Plan` wraps it.
#[pyclass(module = "spmvkit._core")]
struct CorePlan {
    plan: Typed,
    /// The plan's GPU on the caller's last stream, by its raw handle: a view is made only when
    /// the stream changes.
    view: Option<(usize, Gpu)>,
}

/// A device vector as Python hands it over: address and length in elements.
type DevVec = (u64, usize);

/// The plan's GPU, or the `TypeError` of device arrays given to a CPU plan.
fn plan_gpu<T: PrepareFor>(plan: &Plan<T>) -> PyResult<&Gpu> {
    plan.gpu().map(|g| g.as_ref()).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "device arrays need a plan on the GPU; this plan runs on the CPU{}",
            plan.fallback_note()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default()
        ))
    })
}

/// The view of the caller's raw stream `stream` on the plan's GPU (made when the stream changes),
/// after the checks every device call makes: the arrays' `device` is the plan's, and x and y
/// (address, length in elements) do not overlap.
fn device_view<'v, T: PrepareFor>(
    plan: &Plan<T>,
    view: &'v mut Option<(usize, Gpu)>,
    (xp, nx): DevVec,
    (yp, ny): DevVec,
    device: i64,
    stream: usize,
) -> PyResult<&'v Gpu> {
    let gpu = plan_gpu(plan)?;
    if device != gpu.ordinal() as i64 {
        return Err(PyValueError::new_err(format!(
            "the arrays are on device {device}, the plan on device {} ({}): spmvkit uses one \
             device per process, the first one CUDA_VISIBLE_DEVICES shows",
            gpu.ordinal(),
            gpu.name()
        )));
    }
    let bytes = |n: usize| (n * std::mem::size_of::<T>()) as u64;
    if nx > 0 && ny > 0 && xp < yp + bytes(ny) && yp < xp + bytes(nx) {
        return Err(PyValueError::new_err(
            "x and y overlap in device memory: y must be a separate array",
        ));
    }
    if view.as_ref().is_none_or(|(raw, _)| *raw != stream) {
        // SAFETY: `stream` is the current stream of the library that owns x and y (CuPy or
        // PyTorch) for their device, checked above to be the plan's: a stream of the device's
        // primary context, which is the plan's context (cudarc retains the primary context); the
        // library keeps it alive while it is current, and the view is remade when it changes.
        let v = unsafe { gpu.on_raw_stream(stream) }.map_err(py_err)?;
        *view = Some((stream, v));
    }
    view.as_ref()
        .map(|(_, v)| v)
        .ok_or_else(|| PyRuntimeError::new_err("no stream view"))
}

/// y = alpha·A·x + beta·y on device vectors (module doc), on the stream `stream`.
#[allow(clippy::too_many_arguments)]
fn apply_device<T: PrepareFor>(
    py: Python<'_>,
    plan: &Plan<T>,
    view: &mut Option<(usize, Gpu)>,
    (xp, nx): DevVec,
    (yp, ny): DevVec,
    device: i64,
    stream: usize,
    (alpha, beta): (f64, f64),
) -> PyResult<()> {
    if (nx, ny) != (plan.ncols(), plan.nrows()) {
        let (what, want, got) = if nx != plan.ncols() {
            ("x", plan.ncols(), nx)
        } else {
            ("y", plan.nrows(), ny)
        };
        return Err(PyValueError::new_err(format!(
            "{what} must have {want} entries for a {}x{} matrix, not {got}",
            plan.nrows(),
            plan.ncols()
        )));
    }
    let v = device_view(plan, view, (xp, nx), (yp, ny), device, stream)?;
    let s = v.stream();
    // SAFETY: x and y are the data of contiguous arrays of nx and ny elements of T on the plan's
    // device (dtype, shape and strides checked by the Python half from the arrays' metadata,
    // the device and lengths here); the Python caller holds both arrays for the duration of the
    // call, and the owning library's stream-ordered allocator keeps their memory until the work
    // enqueued on its current stream (this one) is done.
    let (x, mut y) = unsafe {
        (
            Borrowed::<T>::new(s, xp, nx).map_err(py_err)?,
            Borrowed::<T>::new(s, yp, ny).map_err(py_err)?,
        )
    };
    let (a, b) = (T::from_f64(alpha), T::from_f64(beta));
    py.allow_threads(|| plan.apply_device_on(v, a, &x, b, &mut y))
        .map_err(py_err)
}

/// The block shape of `k` vectors in `order` ("row": C order, "col": Fortran order).
fn multi_shape(k: usize, order: &str) -> PyResult<MultiShape> {
    let order = match order {
        "row" => DenseOrder::Row,
        "col" => DenseOrder::Col,
        other => {
            return Err(PyValueError::new_err(format!(
                "order must be 'row' or 'col', not {other:?}"
            )))
        }
    };
    Ok(MultiShape { k, order })
}

/// Y = alpha·A·X + beta·Y on device blocks of `shape` (module doc): one
/// `Plan::apply_multi_device` on the plan's stream, joined to the caller's stream `stream` on
/// both sides; the path it took.
#[allow(clippy::too_many_arguments)]
fn apply_multi_device<T: PrepareFor>(
    py: Python<'_>,
    plan: &mut Plan<T>,
    view: &mut Option<(usize, Gpu)>,
    (xp, nx): DevVec,
    (yp, ny): DevVec,
    shape: MultiShape,
    device: i64,
    stream: usize,
    (alpha, beta): (f64, f64),
) -> PyResult<String> {
    let want = |n: usize| n.checked_mul(shape.k);
    if want(plan.ncols()) != Some(nx) || want(plan.nrows()) != Some(ny) {
        return Err(PyValueError::new_err(format!(
            "blocks of {} vectors for a {}x{} matrix: X needs {}x{} and Y {}x{} entries, not \
             {nx} and {ny}",
            shape.k,
            plan.nrows(),
            plan.ncols(),
            plan.ncols(),
            shape.k,
            plan.nrows(),
            shape.k
        )));
    }
    let caller = device_view(plan, view, (xp, nx), (yp, ny), device, stream)?;
    if caller.launch_mode() == LaunchMode::Graph {
        return Err(PyValueError::new_err(
            "a block of vectors (2-D x) cannot be captured into a CUDA graph: its call runs on \
             the plan's own stream; capture 1-D calls, or apply the block outside the capture",
        ));
    }
    let caller = caller.stream().clone();
    let own = plan_gpu(plan)?.stream().clone();
    let cuda = |what: &str, e: &dyn std::fmt::Debug| {
        PyRuntimeError::new_err(format!("{what} for a block of vectors: {e:?}"))
    };
    let joined = caller.cu_stream() != own.cu_stream();
    if joined {
        own.join(&caller)
            .map_err(|e| cuda("ordering the plan's stream after the caller's", &e))?;
    }
    // SAFETY: X and Y are the data of contiguous arrays of nx and ny elements of T on the plan's
    // device (dtype, shape, order and strides checked by the Python half from the arrays'
    // metadata, the device and lengths here), held by the Python caller for the call; the
    // plan's stream waits for the caller's before the call and the caller's for the plan's after
    // it, so the owner's stream-ordered allocator keeps their memory until the call is done.
    let (x, mut y) = unsafe {
        (
            Borrowed::<T>::new(&own, xp, nx).map_err(py_err)?,
            Borrowed::<T>::new(&own, yp, ny).map_err(py_err)?,
        )
    };
    let (a, b) = (T::from_f64(alpha), T::from_f64(beta));
    let path = py
        .allow_threads(|| plan.apply_multi_device(a, &x, b, &mut y, shape))
        .map_err(py_err);
    if joined {
        caller
            .join(&own)
            .map_err(|e| cuda("ordering the caller's stream after the plan's", &e))?;
    }
    Ok(path?.to_string())
}

/// The process GPU on the caller's raw stream `stream` of CUDA device `device`, or the
/// `ValueError` of another device (spmvkit runs on one).
fn caller_view(device: i64, stream: usize) -> PyResult<Gpu> {
    let gpu = Gpu::get().map_err(py_err)?;
    if device != gpu.ordinal() as i64 {
        return Err(PyValueError::new_err(format!(
            "the arrays are on device {device}, spmvkit on device {} ({}): spmvkit uses one \
             device per process, the first one CUDA_VISIBLE_DEVICES shows",
            gpu.ordinal(),
            gpu.name()
        )));
    }
    // SAFETY: `stream` is the current stream of the library that owns the arrays (CuPy or
    // PyTorch) for their device, checked above to be spmvkit's: a stream of the device's primary
    // context, which is spmvkit's (cudarc retains the primary context), alive while the call
    // that uses the view runs (the caller holds it current).
    unsafe { gpu.on_raw_stream(stream) }.map_err(py_err)
}

/// A plan from CSR arrays on the device (`Plan::from_device_csr`): (address, length) of
/// indptr, indices (32-bit) and data (`T`), on the view's stream.
fn build_from_device<T: PrepareFor>(
    py: Python<'_>,
    view: &Gpu,
    (indptr, indices, data): (DevVec, DevVec, DevVec),
    shape: (usize, usize),
    method: &str,
    opts: &PlanOptions,
) -> PyResult<Plan<T>> {
    let s = view.stream();
    if indptr.1 != shape.0 + 1 || indices.1 != data.1 {
        return Err(PyValueError::new_err(format!(
            "a {}x{} CSR matrix needs {} row pointers and one column index per value; got {}, \
             {} and {}",
            shape.0,
            shape.1,
            shape.0 + 1,
            indptr.1,
            indices.1,
            data.1
        )));
    }
    // SAFETY: the data of contiguous device arrays of these lengths and element types (checked
    // by the Python half from the arrays' metadata), held by the Python caller for the call,
    // which waits for the view's stream before it returns (the plan copies them into its own
    // buffers and checks the copy there); the addresses' alignment is checked here.
    let (rp, ci, vals) = unsafe {
        (
            Borrowed::<u32>::new(s, indptr.0, indptr.1).map_err(py_err)?,
            Borrowed::<u32>::new(s, indices.0, indices.1).map_err(py_err)?,
            Borrowed::<T>::new(s, data.0, data.1).map_err(py_err)?,
        )
    };
    let a = DeviceCsrRef {
        nrows: shape.0,
        ncols: shape.1,
        nnz: data.1,
        row_ptr: &rp,
        col_idx: &ci,
        vals: &vals,
    };
    py.allow_threads(|| Plan::from_device_csr(method, view, a, opts))
        .map_err(py_err)
}

/// Seconds for `n` calls of [`Plan::apply_device`] on the plan's own stream with device vectors
/// of its own: (enqueueing them, enqueueing them and synchronising). The Rust side of the
/// benchmark's per-call overhead (`python/bench/gpu_bench.py`).
fn time_apply_device<T: PrepareFor>(plan: &Plan<T>, n: usize) -> PyResult<(f64, f64)> {
    let gpu = plan_gpu(plan)?;
    let x = gpu.upload(&vec![T::one(); plan.ncols()]).map_err(py_err)?;
    let mut y = gpu.alloc_zeros::<T>(plan.nrows()).map_err(py_err)?;
    gpu.synchronize().map_err(py_err)?;
    let (one, zero) = (T::one(), T::zero());
    let t0 = std::time::Instant::now();
    for _ in 0..n {
        plan.apply_device(one, &x, zero, &mut y).map_err(py_err)?;
    }
    let enqueued = t0.elapsed().as_secs_f64();
    gpu.synchronize().map_err(py_err)?;
    Ok((enqueued, t0.elapsed().as_secs_f64()))
}

fn build<T: PrepareFor + Le>(
    py: Python<'_>,
    (indptr, indices, data): (&[u8], &[u8], &[u8]),
    shape: (usize, usize),
    method: &str,
    opts: &PlanOptions,
) -> PyResult<Plan<T>> {
    let ptr = read::<u32>(indptr, "indptr")?;
    let cols = read::<u32>(indices, "indices")?;
    let vals = read::<T>(data, "data")?;
    let a = Csr::new(shape.0, shape.1, ptr, cols, vals).map_err(py_err)?;
    py.allow_threads(|| Plan::new(method, &a, opts))
        .map_err(py_err)
}

fn apply<'py, T: PrepareFor + Le>(
    py: Python<'py>,
    plan: &mut Plan<T>,
    (x, y): (&[u8], &[u8]),
    alpha: f64,
    beta: f64,
) -> PyResult<Bound<'py, PyBytes>> {
    let xs = read::<T>(x, "x")?;
    let mut ys = read::<T>(y, "y")?;
    let (a, b) = (T::from_f64(alpha), T::from_f64(beta));
    py.allow_threads(|| plan.apply(a, &xs, b, &mut ys))
        .map_err(py_err)?;
    Ok(PyBytes::new_bound(py, &bytes_of(&ys)))
}

/// Y = alpha·A·X + beta·Y as bytes, X and Y the bytes of host blocks of `shape`; the bytes and
/// the path it took.
fn apply_multi<'py, T: PrepareFor + Le>(
    py: Python<'py>,
    plan: &mut Plan<T>,
    (x, y): (&[u8], &[u8]),
    shape: MultiShape,
    (alpha, beta): (f64, f64),
) -> PyResult<(Bound<'py, PyBytes>, String)> {
    let xs = read::<T>(x, "X")?;
    let mut ys = read::<T>(y, "Y")?;
    let (a, b) = (T::from_f64(alpha), T::from_f64(beta));
    let path = py
        .allow_threads(|| plan.apply_multi(a, &xs, b, &mut ys, shape))
        .map_err(py_err)?;
    Ok((PyBytes::new_bound(py, &bytes_of(&ys)), path.to_string()))
}

/// The plan options of `params` (`key=value`) and `backend` ("cpu", "gpu" or None).
fn options(params: &[String], backend: Option<&str>) -> PyResult<PlanOptions> {
    Ok(PlanOptions {
        params: Params::parse(params.iter().map(String::as_str)).map_err(py_err)?,
        backend: match backend {
            None => None,
            Some(b) => Some(match b {
                "cpu" => spmvkit::Backend::Cpu,
                "gpu" => spmvkit::Backend::Gpu,
                other => {
                    return Err(PyValueError::new_err(format!(
                        "backend must be 'cpu', 'gpu' or None, not {other:?}"
                    )))
                }
            }),
        },
        ..PlanOptions::default()
    })
}

/// Dispatches `$body` on the plan's precision with `$p` bound to the typed plan.
macro_rules! typed {
    ($self:expr, $p:ident => $body:expr) => {
        match &$self.plan {
            Typed::F64($p) => $body,
            Typed::F32($p) => $body,
        }
    };
}

#[pymethods]
impl CorePlan {
    /// Prepares `method` (a name or a variant `name[key=value;...]`) on the CSR arrays, in
    /// `precision` ("f32" or "f64"), on `backend` ("cpu", "gpu", or None for the GPU when one is
    /// usable), with `params` as `key=value` strings.
    #[new]
    #[pyo3(signature = (indptr, indices, data, shape, method, precision, params, backend=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        indptr: &[u8],
        indices: &[u8],
        data: &[u8],
        shape: (usize, usize),
        method: &str,
        precision: &str,
        params: Vec<String>,
        backend: Option<&str>,
    ) -> PyResult<Self> {
        let opts = options(&params, backend)?;
        let arrays = (indptr, indices, data);
        let plan = match precision {
            "f64" => Typed::F64(build(py, arrays, shape, method, &opts)?),
            "f32" => Typed::F32(build(py, arrays, shape, method, &opts)?),
            other => {
                return Err(PyValueError::new_err(format!(
                    "precision must be 'f32' or 'f64', not {other:?}"
                )))
            }
        };
        Ok(CorePlan { plan, view: None })
    }

    /// Prepares `method` (one of `device_methods()`) on a CSR matrix whose arrays are on CUDA
    /// device `device`, given as (address, length in elements): indptr and indices of 32-bit
    /// integers, data of the precision's floats. The arrays are copied device to device on the
    /// raw stream `stream` into the plan's own buffers and checked there; nothing comes to the
    /// host but the check's findings. Returns when the copy and the check are done.
    #[staticmethod]
    #[pyo3(signature = (indptr, indices, data, shape, device, stream, method, precision, params))]
    #[allow(clippy::too_many_arguments)]
    fn from_device(
        py: Python<'_>,
        indptr: DevVec,
        indices: DevVec,
        data: DevVec,
        shape: (usize, usize),
        device: i64,
        stream: usize,
        method: &str,
        precision: &str,
        params: Vec<String>,
    ) -> PyResult<Self> {
        let opts = options(&params, Some("gpu"))?;
        let view = caller_view(device, stream)?;
        let arrays = (indptr, indices, data);
        let plan = match precision {
            "f64" => Typed::F64(build_from_device(py, &view, arrays, shape, method, &opts)?),
            "f32" => Typed::F32(build_from_device(py, &view, arrays, shape, method, &opts)?),
            other => {
                return Err(PyValueError::new_err(format!(
                    "precision must be 'f32' or 'f64', not {other:?}"
                )))
            }
        };
        Ok(CorePlan { plan, view: None })
    }

    /// New values from a device array (address, length) of the plan's precision on CUDA device
    /// `device`, copied on the raw stream `stream` (`Plan::update_values_device`); how they were
    /// taken.
    fn update_values_device(
        &mut self,
        py: Python<'_>,
        data: DevVec,
        device: i64,
        stream: usize,
    ) -> PyResult<String> {
        let view = caller_view(device, stream)?;
        let s = view.stream().clone();
        macro_rules! update {
            ($p:expr, $t:ty) => {{
                // SAFETY: as in from_device: a contiguous device array of this length and type,
                // held by the caller; the update waits for the stream before it returns.
                let v = unsafe { Borrowed::<$t>::new(&s, data.0, data.1) }.map_err(py_err)?;
                py.allow_threads(|| $p.update_values_device(&view, &v))
            }};
        }
        let how = match &mut self.plan {
            Typed::F64(p) => update!(p, f64),
            Typed::F32(p) => update!(p, f32),
        }
        .map_err(py_err)?;
        Ok(format!("{how:?}").to_lowercase())
    }

    /// Whether the plan was built from device arrays (no host copy of the matrix).
    #[getter]
    fn built_from_device(&self) -> bool {
        typed!(self, p => p.built_from_device())
    }

    /// alpha·A·x + beta·y into y, x and y device arrays of the plan's precision given as
    /// (address, length in elements), on CUDA device `device`, enqueued on the raw stream handle
    /// `stream` (0: the legacy default stream), nothing synchronised.
    #[allow(clippy::too_many_arguments)]
    fn apply_device(
        &mut self,
        py: Python<'_>,
        x: u64,
        nx: usize,
        y: u64,
        ny: usize,
        device: i64,
        stream: usize,
        alpha: f64,
        beta: f64,
    ) -> PyResult<()> {
        let (view, ab) = (&mut self.view, (alpha, beta));
        match &self.plan {
            Typed::F64(p) => apply_device(py, p, view, (x, nx), (y, ny), device, stream, ab),
            Typed::F32(p) => apply_device(py, p, view, (x, nx), (y, ny), device, stream, ab),
        }
    }

    /// Y = alpha·A·X + beta·Y, X and Y device blocks of `k` vectors in `order` ("row" or
    /// "col") of the plan's precision given as (address, length in elements), on CUDA device
    /// `device`, ordered on the raw stream handle `stream` (module doc), nothing synchronised;
    /// the path it took.
    #[allow(clippy::too_many_arguments)]
    fn apply_multi_device(
        &mut self,
        py: Python<'_>,
        x: DevVec,
        y: DevVec,
        k: usize,
        order: &str,
        device: i64,
        stream: usize,
        alpha: f64,
        beta: f64,
    ) -> PyResult<String> {
        let shape = multi_shape(k, order)?;
        let (view, ab) = (&mut self.view, (alpha, beta));
        match &mut self.plan {
            Typed::F64(p) => apply_multi_device(py, p, view, x, y, shape, device, stream, ab),
            Typed::F32(p) => apply_multi_device(py, p, view, x, y, shape, device, stream, ab),
        }
    }

    /// Y = alpha·A·X + beta·Y as (bytes, the path it took), X and Y the bytes of host blocks of
    /// `k` vectors in `order` ("row" or "col") of the plan's precision.
    #[allow(clippy::too_many_arguments)]
    fn apply_multi<'py>(
        &mut self,
        py: Python<'py>,
        x: &[u8],
        y: &[u8],
        k: usize,
        order: &str,
        alpha: f64,
        beta: f64,
    ) -> PyResult<(Bound<'py, PyBytes>, String)> {
        let shape = multi_shape(k, order)?;
        match &mut self.plan {
            Typed::F64(p) => apply_multi(py, p, (x, y), shape, (alpha, beta)),
            Typed::F32(p) => apply_multi(py, p, (x, y), shape, (alpha, beta)),
        }
    }

    /// Internal (the benchmark): seconds for `n` calls of the Rust `Plan::apply_device` on the
    /// plan's own stream, (enqueued, enqueued and synchronised).
    fn _time_apply_device(&self, py: Python<'_>, n: usize) -> PyResult<(f64, f64)> {
        py.allow_threads(|| typed!(self, p => time_apply_device(p, n)))
    }

    /// The CUDA device ordinal the plan runs on, or None on the CPU.
    #[getter]
    fn device(&self) -> Option<usize> {
        typed!(self, p => p.gpu().map(|g| g.ordinal()))
    }

    /// alpha·A·x + beta·y as bytes, x and y the bytes of host vectors of the plan's precision.
    fn apply<'py>(
        &mut self,
        py: Python<'py>,
        x: &[u8],
        y: &[u8],
        alpha: f64,
        beta: f64,
    ) -> PyResult<Bound<'py, PyBytes>> {
        match &mut self.plan {
            Typed::F64(p) => apply(py, p, (x, y), alpha, beta),
            Typed::F32(p) => apply(py, p, (x, y), alpha, beta),
        }
    }

    /// New values in the CSR order of the matrix the plan was made from; how they were taken
    /// ("gathered", "reencoded" or "reprepared").
    fn update_values(&mut self, data: &[u8]) -> PyResult<String> {
        let how = match &mut self.plan {
            Typed::F64(p) => p.update_values(&read::<f64>(data, "data")?),
            Typed::F32(p) => p.update_values(&read::<f32>(data, "data")?),
        }
        .map_err(py_err)?;
        Ok(format!("{how:?}").to_lowercase())
    }

    /// The method that runs: the one `auto` chose, or the one asked for.
    #[getter]
    fn method(&self) -> String {
        typed!(self, p => p.chosen().map_or(p.info().name, |m| m.info().name).to_string())
    }

    /// Whether repeated calls give bitwise-equal results.
    #[getter]
    fn deterministic(&self) -> bool {
        typed!(self, p => p.deterministic())
    }

    /// "cpu" or "gpu".
    #[getter]
    fn backend(&self) -> String {
        typed!(self, p => p.backend().to_string())
    }

    /// The layout's notes, as (key, value) pairs.
    #[getter]
    fn notes(&self) -> Vec<(String, String)> {
        typed!(self, p => p.layout().notes())
    }

    /// Preprocessing time in seconds (ordering, preparation and upload).
    #[getter]
    fn prep_seconds(&self) -> f64 {
        typed!(self, p => p.prep_times().total().as_secs_f64())
    }

    /// (nrows, ncols).
    #[getter]
    fn shape(&self) -> (usize, usize) {
        typed!(self, p => (p.nrows(), p.ncols()))
    }
}

/// The registered method names, in listing order.
#[pyfunction]
fn methods() -> Vec<&'static str> {
    spmvkit::methods::names()
}

/// The methods that build a plan from device arrays (`Plan::from_device_csr`).
#[pyfunction]
fn device_methods() -> Vec<&'static str> {
    spmvkit::methods::DEVICE_METHODS.to_vec()
}

/// A matrix file (Matrix Market, optionally gzipped, or the binary cache) in f64, as
/// (indptr, indices, data, (nrows, ncols)): uint32, uint32 and float64 little-endian bytes.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn load<'py>(
    py: Python<'py>,
    path: &str,
) -> PyResult<(
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    (usize, usize),
)> {
    let a: Csr<f64> = py
        .allow_threads(|| spmvkit::io::load::<f64>(path))
        .map_err(py_err)?;
    Ok((
        PyBytes::new_bound(py, &bytes_of(a.row_ptr())),
        PyBytes::new_bound(py, &bytes_of(a.col_idx())),
        PyBytes::new_bound(py, &bytes_of(a.vals())),
        (a.nrows(), a.ncols()),
    ))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CorePlan>()?;
    m.add_function(wrap_pyfunction!(methods, m)?)?;
    m.add_function(wrap_pyfunction!(device_methods, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    Ok(())
}
