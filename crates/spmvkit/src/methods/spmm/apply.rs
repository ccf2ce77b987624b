//! The multi-vector calls of a [`Plan`] (issue #24): [`Plan::apply_multi`] (host blocks),
//! [`Plan::apply_multi_device`] (device blocks), [`Plan::prepare_multi`], and the timing of
//! [`Plan::time_multi`] on the plan's own blocks ([`Plan::set_multi_vectors`],
//! [`Plan::read_multi_y`]), the multi-vector twins of `apply`, `apply_device`, `time`,
//! `set_device_vectors` and `read_device_y`. The plan keeps a [`MultiState`]; everything else
//! is the plan's public face.

use cudarc::driver::CudaSlice;

use super::cpu::{column, run_merge, run_row_split, set_column};
use super::gpu::{copy_strided, DeviceMulti, Strided, StridedCopyArgs};
use super::{MultiKernel, MultiLayout, MultiPath, MultiShape, MultiSource, KERNEL};
use crate::error::{Error, Result};
use crate::gpu::cusparse::SpmmAlg;
use crate::gpu::{DeviceBlocks, Gpu, Kernel, Timing, TimingConfig, TimingMode};
use crate::matrix::DenseOrder;
use crate::methods::{Backend, Layout, Plan, PrepareFor};
use crate::scalar::Scalar;

/// What a plan keeps for its multi-vector calls: the kernels' device state (one per kernel
/// made: `auto`'s candidates each), the fallback's copy kernel and scratch vectors, the plan's
/// own blocks (what [`Plan::time_multi`] runs on, and what [`Plan::apply_multi`] moves host
/// blocks through), `auto`'s choice per shape, and notes for reports.
pub(crate) struct MultiState<T: Scalar> {
    devices: Vec<(MultiKernel, DeviceMulti<T>)>,
    copy: Option<Kernel<StridedCopyArgs<'static, T>>>,
    scratch: Option<(CudaSlice<T>, CudaSlice<T>)>,
    blocks: Option<Blocks<T>>,
    chosen: Vec<(MultiShape, MultiPath)>,
    notes: Vec<(String, String)>,
}

impl<T: Scalar> Default for MultiState<T> {
    fn default() -> Self {
        MultiState {
            devices: Vec::new(),
            copy: None,
            scratch: None,
            blocks: None,
            chosen: Vec::new(),
            notes: Vec::new(),
        }
    }
}

impl<T: Scalar> MultiState<T> {
    fn device(&self, k: MultiKernel) -> Option<&DeviceMulti<T>> {
        self.devices.iter().find(|(d, _)| *d == k).map(|(_, d)| d)
    }

    /// The kernels whose device state is held (tests).
    #[cfg(test)]
    pub(crate) fn held(&self) -> Vec<MultiKernel> {
        self.devices.iter().map(|(k, _)| *k).collect()
    }

    fn note(&mut self, key: String, value: String) {
        self.notes.retain(|(k, _)| *k != key);
        self.notes.push((key, value));
    }
}

/// How `auto`'s candidates are timed on the first call of a shape: one warm-up call, then the
/// median of 3 samples of 3 back-to-back calls (stream timing), on scratch blocks (X all ones).
const AUTO_TRIAL: TimingConfig = TimingConfig {
    warmup: 1,
    calls: 3,
    samples: 3,
};

/// The path of one vector: the plan's own SpMV call ([`MultiKernel::Spmv`]).
const SPMV: MultiPath = MultiPath::Kernel(MultiKernel::Spmv);

/// The path of `shape` on `plan` with multi-vector state `st` ([`Plan::multi_path`]): one
/// vector (k = 1) is the plan's SpMV call whatever the layout (and `auto` has nothing to
/// choose); otherwise the layout's kernel where it runs on this plan, else k SpMV calls.
fn path_of<T: PrepareFor>(plan: &Plan<T>, st: &MultiState<T>, shape: MultiShape) -> MultiPath {
    if shape.k == 1 {
        return SPMV;
    }
    let kernel = plan.layout().multi().map(|s| s.kernel);
    let kernel = kernel.or_else(|| plan.layout().multi_layout().map(|o| o.kernel()));
    match (kernel, plan.permutation(), plan.backend()) {
        (Some(MultiKernel::RowSplit), None, _) | (Some(MultiKernel::Auto), None, Backend::Cpu) => {
            MultiPath::Kernel(MultiKernel::RowSplit)
        }
        (Some(MultiKernel::Merge), None, _) => MultiPath::Kernel(MultiKernel::Merge),
        (Some(MultiKernel::Auto), None, Backend::Gpu) => st
            .chosen
            .iter()
            .find(|(s, _)| *s == shape)
            .map_or(MultiPath::Kernel(MultiKernel::Auto), |(_, p)| *p),
        (Some(MultiKernel::Cusparse), None, Backend::Gpu) => {
            MultiPath::Kernel(MultiKernel::Cusparse)
        }
        (Some(MultiKernel::Packed), None, _) => MultiPath::Kernel(MultiKernel::Packed),
        _ => MultiPath::Columns,
    }
}

/// The plan's own device blocks X and Y of one shape.
struct Blocks<T> {
    shape: MultiShape,
    x: CudaSlice<T>,
    y: CudaSlice<T>,
}

/// A timed multi-vector loop: the timing and the path it ran.
#[derive(Clone, Debug)]
pub struct MultiTiming {
    pub timing: Timing,
    pub path: MultiPath,
}

fn no_gpu(plan_method: &str, what: &str) -> Error {
    Error::MethodUnsupported {
        method: plan_method.into(),
        reason: format!("Plan::{what} needs a plan on the GPU; this one runs on the CPU"),
    }
}

impl<T: PrepareFor> Plan<T> {
    /// The path a multi-vector call of `shape` takes on this plan: for one vector (k = 1) the
    /// plan's own SpMV call ([`MultiKernel::Spmv`]); otherwise the layout's multi-vector
    /// kernel ([`crate::methods::Layout::multi`]) when it has one that runs where the plan runs
    /// and the plan does not reorder; otherwise k single-vector calls. For `auto` on the GPU,
    /// the path its trial chose for the shape, or [`MultiKernel::Auto`] before the shape's
    /// first call ([`Plan::prepare_multi`] makes the choice ahead).
    pub fn multi_path(&self, shape: MultiShape) -> MultiPath {
        path_of(self, self.multi_state(), shape)
    }

    /// Y = αAX + βY for host blocks of `shape.k` vectors in `shape.order`: X has exactly
    /// `ncols·k` and Y `nrows·k` entries ([`MultiShape::check`]; a wrong length, k = 0 or an
    /// overflow is an error naming the block, before anything runs). Returns the path it took
    /// ([`Plan::multi_path`]). On the GPU the blocks go through the plan's own device blocks.
    ///
    /// ```
    /// use spmvkit::matrix::MultiShape;
    /// use spmvkit::{Csr, Plan, PlanOptions};
    /// let a = Csr::<f64>::identity(2).unwrap();
    /// let mut plan = Plan::new("csr", &a, &PlanOptions::default()).unwrap();
    /// // two vectors, row-major: row j holds (x_j0, x_j1)
    /// let x = [1.0, 10.0, 2.0, 20.0];
    /// let mut y = [1.0; 4];
    /// plan.apply_multi(2.0, &x, 1.0, &mut y, MultiShape::row_major(2)).unwrap();
    /// assert_eq!(y, [3.0, 21.0, 5.0, 41.0]);
    /// ```
    pub fn apply_multi(
        &mut self,
        alpha: T,
        x: &[T],
        beta: T,
        y: &mut [T],
        shape: MultiShape,
    ) -> Result<MultiPath> {
        let dims = (self.nrows(), self.ncols());
        shape.check("apply_multi", dims, x.len(), y.len(), true)?;
        let path = self.multi_path(shape);
        if path == SPMV {
            // one vector, in either order: exactly `ncols` and `nrows` entries
            self.apply(alpha, x, beta, y)?;
            return Ok(path);
        }
        if self.backend() == Backend::Gpu {
            self.settle_calls()?;
            self.set_multi_vectors(shape, Some(x), Some(y))?;
            let path = self.with_multi(|plan, st| {
                let mut b = st.blocks.take().ok_or_else(|| {
                    Error::InvalidArgument("apply_multi: the plan's blocks are missing".into())
                })?;
                let r = run_device(plan, st, blocks(shape, alpha, &b.x, beta, &mut b.y));
                st.blocks = Some(b);
                r
            })?;
            self.read_multi_y(y)?;
            return Ok(path);
        }
        if let MultiPath::Kernel(k) = path {
            if let Some(own) = self.layout().multi_layout().filter(|o| o.kernel() == k) {
                own.run_cpu_multi(alpha, x, beta, y, shape);
                return Ok(path);
            }
        }
        let (m, n) = dims;
        match (path, shape.order) {
            (MultiPath::Kernel(kernel), _) => {
                let src = self.layout().multi().ok_or_else(|| {
                    Error::InvalidArgument("apply_multi: the layout lost its kernel".into())
                })?;
                let run = match kernel {
                    MultiKernel::Merge => run_merge,
                    _ => run_row_split,
                };
                run(src.a, alpha, x, beta, y, shape, src.tune);
            }
            (MultiPath::Columns, DenseOrder::Col) => {
                for c in 0..shape.k {
                    let (xc, yc) = (&x[c * n..(c + 1) * n], &mut y[c * m..(c + 1) * m]);
                    self.apply(alpha, xc, beta, yc)?;
                }
            }
            (MultiPath::Columns, DenseOrder::Row) => {
                for c in 0..shape.k {
                    let mut yc = column(y, m, shape, c);
                    self.apply(alpha, &column(x, n, shape, c), beta, &mut yc)?;
                    set_column(y, m, shape, c, &yc);
                }
            }
        }
        Ok(path)
    }

    /// [`Plan::apply_many`] through the multi-vector path as one column-major block, on a GPU
    /// plan with two or more pairs of the right lengths whose path for that block is a kernel
    /// (one upload and one kernel for the k vectors); `false` (nothing done) otherwise. CPU
    /// plans keep k single calls: the column-major CPU mirror simulates the kernel's 32 lanes
    /// per row for bitwise parity, slower than `csr`'s own loop.
    pub(crate) fn apply_many_as_block(
        &mut self,
        alpha: T,
        xs: &[&[T]],
        beta: T,
        ys: &mut [&mut [T]],
    ) -> Result<bool> {
        let (m, n) = (self.nrows(), self.ncols());
        let fits = xs.iter().all(|x| x.len() == n) && ys.iter().all(|y| y.len() == m);
        if self.backend() != Backend::Gpu || xs.len() < 2 || xs.len() != ys.len() || !fits {
            return Ok(false);
        }
        let shape = MultiShape::col_major(xs.len());
        if !matches!(self.prepare_multi(shape)?, MultiPath::Kernel(_)) {
            return Ok(false);
        }
        let x: Vec<T> = xs.concat();
        let mut y: Vec<T> = ys.iter().flat_map(|v| v.iter().copied()).collect();
        self.apply_multi(alpha, &x, beta, &mut y, shape)?;
        for (yc, block) in ys.iter_mut().zip(y.chunks_exact(m.max(1))) {
            yc.copy_from_slice(&block[..m]);
        }
        Ok(true)
    }

    /// Y = αAX + βY on device blocks: enqueued on [`Gpu::stream`], asynchronous. X needs at
    /// least `ncols·k` and Y at least `nrows·k` entries, laid out as `shape` says with the
    /// leading dimension of the matrix (column-major: ncols for X, nrows for Y; row-major: k).
    /// The first call of a shape (or [`Plan::prepare_multi`]) makes the kernel's device state
    /// and synchronises; later ones only enqueue (capturable in a CUDA graph when the plan's
    /// method is). X and Y in another CUDA context than the plan's, or too short, are an error
    /// naming the block before anything runs ([`DeviceBlocks::check`]); so is a CPU plan.
    pub fn apply_multi_device(
        &mut self,
        alpha: T,
        x: &CudaSlice<T>,
        beta: T,
        y: &mut CudaSlice<T>,
        shape: MultiShape,
    ) -> Result<MultiPath> {
        let b = DeviceBlocks {
            shape,
            alpha,
            x,
            beta,
            y,
        };
        let gpu = self.gpu().cloned();
        let gpu = gpu.ok_or_else(|| no_gpu(self.info().name, "apply_multi_device"))?;
        b.check("apply_multi_device", &gpu, (self.nrows(), self.ncols()))?;
        self.settle_calls()?;
        self.with_multi(|plan, st| run_device(plan, st, b))
    }

    /// Makes the device state of `shape` now (the kernel's matrix copy; cuSPARSE's descriptors,
    /// buffer, preprocessing and algorithm trial; the fallback's scratch vectors), so that no
    /// later call allocates or synchronises; returns the path. Nothing to do on the CPU.
    pub fn prepare_multi(&mut self, shape: MultiShape) -> Result<MultiPath> {
        let dims = (self.nrows(), self.ncols());
        let (xl, yl) = (shape.len(dims.1)?, shape.len(dims.0)?);
        shape.check("prepare_multi", dims, xl, yl, true)?;
        if self.backend() == Backend::Gpu {
            self.settle_calls()?;
            self.with_multi(|plan, st| ready(plan, st, shape, path_of(plan, st, shape)))?;
        }
        Ok(self.multi_path(shape))
    }

    /// Notes of the multi-vector path for reports (cuSPARSE's algorithm per shape, the
    /// fallback's copies).
    pub fn multi_notes(&mut self) -> Vec<(String, String)> {
        self.with_multi(|_, st| st.notes.clone())
    }

    /// Device bytes the multi-vector path holds besides the blocks (its matrix copy, buffers).
    pub fn multi_footprint_bytes(&mut self) -> usize {
        self.with_multi(|_, st| DeviceMulti::footprint_bytes(st.devices.iter().map(|(_, d)| d)))
    }

    /// Sets the plan's own device blocks to `shape` (reallocating, zeroed, when the shape
    /// changes) and copies `x` (exactly `ncols·k`) and `y` (exactly `nrows·k`) into them;
    /// `None` leaves that block as it is. Untimed. Errors on a CPU plan.
    pub fn set_multi_vectors(
        &mut self,
        shape: MultiShape,
        x: Option<&[T]>,
        y: Option<&[T]>,
    ) -> Result<()> {
        let dims = (self.nrows(), self.ncols());
        let (xl, yl) = (shape.len(dims.1)?, shape.len(dims.0)?);
        let (gx, gy) = (x.map_or(xl, <[T]>::len), y.map_or(yl, <[T]>::len));
        shape.check("Plan::set_multi_vectors", dims, gx, gy, true)?;
        let gpu = self
            .gpu()
            .cloned()
            .ok_or_else(|| no_gpu(self.info().name, "set_multi_vectors"))?;
        self.with_multi(|_, st| {
            if st.blocks.as_ref().is_none_or(|b| b.shape != shape) {
                st.blocks = None;
                gpu.ensure_fits("SpMM blocks", T::BYTES * (xl + yl))?;
                st.blocks = Some(Blocks {
                    shape,
                    x: gpu.alloc_zeros(xl.max(1))?,
                    y: gpu.alloc_zeros(yl.max(1))?,
                });
            }
            let b = st
                .blocks
                .as_mut()
                .ok_or_else(|| Error::InvalidArgument("set_multi_vectors: no blocks".into()))?;
            for (v, dst, what) in [(x, &mut b.x, "copy X"), (y, &mut b.y, "copy Y")] {
                if let Some(v) = v.filter(|v| !v.is_empty()) {
                    gpu.stream()
                        .memcpy_htod(v, dst)
                        .map_err(|e| Error::cuda(what, e))?;
                }
            }
            Ok(())
        })
    }

    /// Frees the plan's own device blocks ([`Plan::set_multi_vectors`]) and the fallback's
    /// scratch vectors; the kernels' device state stays.
    pub fn clear_multi_vectors(&mut self) {
        self.with_multi(|_, st| {
            st.blocks = None;
            st.scratch = None;
        });
    }

    /// Copies the plan's device block Y (exactly `nrows·k` entries of the shape last set) into
    /// `y`, waiting for the device. Errors on a CPU plan or before [`Plan::set_multi_vectors`].
    pub fn read_multi_y(&mut self, y: &mut [T]) -> Result<()> {
        let name = self.info().name;
        let (gpu, m) = (self.gpu().cloned(), self.nrows());
        let gpu = gpu.ok_or_else(|| no_gpu(name, "read_multi_y"))?;
        self.with_multi(|_, st| {
            let b = st.blocks.as_ref().ok_or_else(|| {
                Error::InvalidArgument("read_multi_y: no blocks; set_multi_vectors first".into())
            })?;
            let want = b.shape.len(m)?;
            if y.len() != want {
                return Err(Error::DimensionMismatch {
                    what: format!(
                        "Plan::read_multi_y: y block (nrows × k = {m} × {}, {}-major)",
                        b.shape.k, b.shape.order
                    ),
                    expected: want,
                    got: y.len(),
                });
            }
            if want == 0 {
                return Ok(());
            }
            gpu.stream()
                .memcpy_dtoh(&b.y.slice(0..want), y)
                .map_err(|e| Error::cuda("copy Y", e))?;
            gpu.synchronize()
        })
    }

    /// Times Y = αAX + βY on the plan's own blocks ([`Plan::set_multi_vectors`]) with the
    /// protocol of [`crate::gpu::timing`], as [`Plan::time`] does for one vector: each timed
    /// call is one complete multi-vector call as [`Plan::apply_multi_device`] enqueues it (the
    /// fallback's column copies included). The shape's device state is made first, untimed.
    /// Every call updates Y in place ([`Timing::executions`] calls in all).
    pub fn time_multi(
        &mut self,
        mode: TimingMode,
        cfg: &TimingConfig,
        alpha: T,
        beta: T,
    ) -> Result<MultiTiming> {
        let name = self.info().name;
        let gpu = self
            .gpu()
            .cloned()
            .ok_or_else(|| no_gpu(name, "time_multi"))?;
        let shape = self
            .with_multi(|_, st| st.blocks.as_ref().map(|b| b.shape))
            .ok_or_else(|| {
                Error::InvalidArgument("time_multi: no blocks; set_multi_vectors first".into())
            })?;
        let path = self.prepare_multi(shape)?;
        let timing = self.with_multi(|plan, st| {
            let mut b = st.blocks.take().ok_or_else(|| {
                Error::InvalidArgument("time_multi: the plan's blocks are missing".into())
            })?;
            let r = crate::gpu::timing::time(&gpu, mode, cfg, || {
                run_device(plan, st, blocks(shape, alpha, &b.x, beta, &mut b.y)).map(|_| ())
            });
            st.blocks = Some(b);
            r
        })?;
        Ok(MultiTiming { timing, path })
    }
}

/// Makes what `path` needs for `shape` on a GPU plan (idempotent); for
/// [`MultiKernel::Auto`], the trial of the shape ([`choose`]) when it has not run.
fn ready<T: PrepareFor>(
    plan: &Plan<T>,
    st: &mut MultiState<T>,
    shape: MultiShape,
    path: MultiPath,
) -> Result<()> {
    let gpu = plan
        .gpu()
        .ok_or_else(|| no_gpu(plan.info().name, "apply_multi_device"))?;
    match path {
        MultiPath::Kernel(MultiKernel::Auto) => choose(plan, st, shape),
        MultiPath::Kernel(MultiKernel::Spmv) => {
            // once: `ready` runs before every call, timed ones included
            if !st.notes.iter().any(|(k, _)| k == "spmm k=1") {
                st.note(
                    "spmm k=1".into(),
                    format!(
                        "one SpMV call of the plan's method on the vector{}",
                        if padded(plan) {
                            " (through scratch vectors: the layout wants padded ones)"
                        } else {
                            ", no copies"
                        }
                    ),
                );
            }
            match padded(plan) {
                true => ready(plan, st, shape, MultiPath::Columns),
                false => Ok(()),
            }
        }
        MultiPath::Kernel(kernel) => {
            if st.device(kernel).is_none() {
                let layout = plan.layout();
                let mine = |o: &&dyn MultiLayout<T>| o.kernel() == kernel;
                let own = layout.multi_layout().filter(mine);
                let dev = match own.or_else(|| layout.multi_extra().filter(mine)) {
                    Some(own) => DeviceMulti::Own(own.upload_multi(gpu)?),
                    None => {
                        let src = plan.layout().multi().ok_or_else(|| {
                            Error::InvalidArgument("SpMM: the layout offers no kernel".into())
                        })?;
                        let shared = st.devices.iter().find_map(|(_, d)| d.csr().cloned());
                        DeviceMulti::upload(gpu, &MultiSource { kernel, ..src }, shared)?
                    }
                };
                st.devices.push((kernel, dev));
            }
            let notes = match st.device(kernel) {
                Some(d) => d.prepare(gpu, shape)?,
                None => Vec::new(),
            };
            for (k, v) in notes {
                st.note(k, v);
            }
            Ok(())
        }
        MultiPath::Columns => {
            if st.copy.is_none() {
                st.copy = Some(gpu.kernel::<T, _>(&KERNEL, "spmm_copy_strided")?);
            }
            if st.scratch.is_none() {
                let (x, y) = plan.device_vectors().ok_or_else(|| {
                    Error::InvalidArgument("SpMM: the GPU plan has no device vectors".into())
                })?;
                st.scratch = Some((gpu.alloc_zeros(x.len())?, gpu.alloc_zeros(y.len())?));
                st.note(
                    "spmm fallback".into(),
                    "k single-vector calls, each column copied into and out of scratch \
                     vectors by a strided copy kernel"
                        .into(),
                );
            }
            Ok(())
        }
    }
}

/// What `auto`'s trial of a shape may time on a plan ([`auto_candidates`]).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct AutoCandidates {
    /// The paths, in the order they are timed.
    pub(crate) paths: Vec<MultiPath>,
    /// The cuSPARSE SpMM algorithms its setup may try (the cuSPARSE candidate's).
    pub(crate) cusparse_algs: &'static [SpmmAlg],
}

/// `auto`'s candidates on a plan whose `layout` offers [`MultiKernel::Auto`]: spmvkit's
/// row-split and merge-path kernels, cuSPARSE SpMM, k calls of the plan's SpMV, and
/// `csr-packed`'s kernel: the chosen layout's own, or where `auto` chose another method and the
/// matrix packs well, the packed layout `auto` prepares for the trial on this first call
/// ([`crate::methods::Layout::multi_extra`]). Under `auto[deterministic=1]`
/// ([`MultiSource::deterministic`]) every candidate is bitwise deterministic: spmvkit's kernels
/// are, k calls of the SpMV such an `auto` chose are, and cuSPARSE SpMM tries only the
/// algorithm its documentation states deterministic ([`SpmmAlg::candidates`]; it is left out
/// when there is none).
pub(crate) fn auto_candidates<T: Scalar>(layout: &dyn Layout<T>) -> AutoCandidates {
    let deterministic = layout.multi().is_some_and(|s| s.deterministic);
    let cusparse_algs = SpmmAlg::candidates(deterministic);
    let cusparse = (!cusparse_algs.is_empty()).then_some(MultiKernel::Cusparse);
    let own = layout.multi_layout().or_else(|| layout.multi_extra());
    let own = own.map(|o| o.kernel());
    let paths = [
        Some(MultiKernel::RowSplit),
        Some(MultiKernel::Merge),
        cusparse,
    ]
    .into_iter()
    .flatten()
    .map(MultiPath::Kernel)
    .chain([MultiPath::Columns])
    .chain(own.map(MultiPath::Kernel))
    .collect();
    AutoCandidates {
        paths,
        cusparse_algs,
    }
}

/// `auto`'s choice for `shape`: each candidate ([`auto_candidates`]: spmvkit's row-split and
/// merge-path kernels, cuSPARSE SpMM, k calls of the plan's SpMV, and the chosen layout's own
/// kernel when it has one) made and timed ([`AUTO_TRIAL`]) on scratch blocks, X all ones (as
/// the SpMV trial's x = 1) and Y zeroed with β = 0; the fastest is kept for the shape, the
/// device state no shape chose is dropped, and the times go to the notes. The merge path is
/// always a candidate: it shares the row-split kernels' CSR copy, so it adds only its
/// teams (8 bytes each), its carries (teams × k values) and 10 calls to the trial. A candidate
/// that fails is skipped (its error in the notes); all failing is
/// an error.
fn choose<T: PrepareFor>(plan: &Plan<T>, st: &mut MultiState<T>, shape: MultiShape) -> Result<()> {
    if st.chosen.iter().any(|(s, _)| *s == shape) {
        return Ok(());
    }
    let gpu = plan
        .gpu()
        .cloned()
        .ok_or_else(|| no_gpu(plan.info().name, "apply_multi_device"))?;
    let (xl, yl) = (shape.len(plan.ncols())?, shape.len(plan.nrows())?);
    gpu.ensure_fits("SpMM auto trial blocks", T::BYTES * (xl + yl))?;
    let x = gpu.filled::<T>(xl.max(1), T::one())?;
    let mut y = gpu.alloc_zeros::<T>(yl.max(1))?;
    let mut trials = Vec::new();
    for path in auto_candidates(plan.layout()).paths {
        let timed = ready(plan, st, shape, path).and_then(|()| {
            crate::gpu::timing::time(&gpu, TimingMode::Stream, &AUTO_TRIAL, || {
                run_path(
                    plan,
                    st,
                    path,
                    blocks(shape, T::one(), &x, T::zero(), &mut y),
                )
            })
        });
        trials.push((path, timed.map(|t| t.median_us)));
    }
    let best = trials
        .iter()
        .filter_map(|(p, r)| r.as_ref().ok().map(|us| (*p, *us)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let list = trials
        .iter()
        .map(|(p, r)| match r {
            Ok(us) => format!("{p} {us:.2} µs"),
            Err(e) => format!("{p} failed ({e})"),
        })
        .collect::<Vec<_>>()
        .join(", ");
    let Some((path, _)) = best else {
        return Err(Error::InvalidArgument(format!(
            "SpMM auto k={} {}: every candidate failed: {list}",
            shape.k, shape.order
        )));
    };
    st.note(
        format!("spmm auto k={} {}", shape.k, shape.order),
        format!("{path} kept; {list}"),
    );
    st.chosen.push((shape, path));
    let kept: Vec<MultiPath> = st.chosen.iter().map(|(_, p)| *p).collect();
    st.devices
        .retain(|(k, _)| kept.contains(&MultiPath::Kernel(*k)));
    Ok(())
}

/// One multi-vector call on device blocks (checked by the caller, again by the kernels and
/// copies), on the path of the plan (made first when it is not).
fn run_device<T: PrepareFor>(
    plan: &Plan<T>,
    st: &mut MultiState<T>,
    b: DeviceBlocks<'_, T>,
) -> Result<MultiPath> {
    let shape = b.shape;
    if path_of(plan, st, shape) == MultiPath::Kernel(MultiKernel::Auto) {
        choose(plan, st, shape)?;
    }
    let path = path_of(plan, st, shape);
    ready(plan, st, shape, path)?;
    run_path(plan, st, path, b)?;
    Ok(path)
}

/// One multi-vector call on `path`, made ready before.
fn run_path<T: PrepareFor>(
    plan: &Plan<T>,
    st: &mut MultiState<T>,
    path: MultiPath,
    b: DeviceBlocks<'_, T>,
) -> Result<()> {
    let gpu: &Gpu = plan
        .gpu()
        .ok_or_else(|| no_gpu(plan.info().name, "apply_multi_device"))?;
    let missing = || Error::InvalidArgument("SpMM: device state missing after setup".into());
    match path {
        SPMV | MultiPath::Columns => {}
        MultiPath::Kernel(k) => return st.device(k).ok_or_else(missing)?.run(gpu, b),
    }
    let DeviceBlocks {
        shape,
        alpha,
        x,
        beta,
        y,
    } = b;
    match path {
        SPMV if !padded(plan) => plan.apply_device(alpha, x, beta, y)?,
        // k SpMV calls; one vector of a padded layout through the scratch vectors
        _ => {
            let copy = st.copy.as_ref().ok_or_else(missing)?;
            let (sx, sy) = st.scratch.as_mut().ok_or_else(missing)?;
            let (m, n, k) = (plan.nrows(), plan.ncols(), shape.k);
            // entry j of column c: row-major at j·k + c, column-major at c·len + j
            let at = |c: usize, len: usize| match shape.order {
                DenseOrder::Row => (c, k),
                DenseOrder::Col => (c * len, 1),
            };
            for c in 0..k {
                let ((xo, xs), (yo, ys)) = (at(c, n), at(c, m));
                copy_strided(gpu, copy, strided(sx, 0, 1), strided_ref(x, xo, xs), n)?;
                copy_strided(gpu, copy, strided(sy, 0, 1), strided_ref(y, yo, ys), m)?;
                plan.apply_device(alpha, sx, beta, sy)?;
                copy_strided(gpu, copy, strided(y, yo, ys), strided_ref(sy, 0, 1), m)?;
            }
        }
    }
    Ok(())
}

/// The plan's own or scratch blocks of `shape` as a call's operands.
fn blocks<'a, T>(
    shape: MultiShape,
    alpha: T,
    x: &'a CudaSlice<T>,
    beta: T,
    y: &'a mut CudaSlice<T>,
) -> DeviceBlocks<'a, T> {
    DeviceBlocks {
        shape,
        alpha,
        x,
        beta,
        y,
    }
}

/// Whether the plan's device vectors are longer than the matrix (a layout that wants padded
/// vectors, `cusparse-bsr`, which would use a long enough block in place, overwriting Y past
/// `nrows`).
fn padded<T: PrepareFor>(plan: &Plan<T>) -> bool {
    plan.device_vectors()
        .is_some_and(|(x, y)| x.len() > plan.ncols() || y.len() > plan.nrows())
}

fn strided<T>(buf: &mut CudaSlice<T>, off: usize, stride: usize) -> Strided<&mut CudaSlice<T>> {
    Strided { buf, off, stride }
}

fn strided_ref<T>(buf: &CudaSlice<T>, off: usize, stride: usize) -> Strided<&CudaSlice<T>> {
    Strided { buf, off, stride }
}
