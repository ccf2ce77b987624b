//! [`Plan`]: a matrix analysed once by a method and applied many times (the Kokkos Kernels
//! handle; faer's symbolic/numeric split). It owns the host layout and, when a GPU is in use, the
//! device layout and device copies of x and y.
//!
//! - [`Plan::apply`] / [`Plan::apply_many`]: y = αAx + βy with host vectors, one or many;
//!   [`Plan::apply_multi`] and its device and timing twins: Y = αAX + βY for a block of k
//!   vectors (SpMM, `methods/spmm/`).
//! - [`Plan::apply_device`]: the same on device-resident vectors, no host copy and no
//!   synchronisation (what the solvers in [`crate::solve`] call inside a CUDA graph);
//!   [`Plan::apply_device_on`]: on a caller's stream ([`Gpu::on_stream`]), for device memory of
//!   other libraries ([`crate::gpu::Borrowed`], issue #23). A plan's calls run one at a time
//!   whatever their streams: a call on another stream than the previous call's waits for it on
//!   the device (an event, [`crate::gpu::CallOrder`]), since a layout's scratch buffers serve
//!   every call.
//! - [`Plan::time`]: the timing protocol of [`crate::gpu::timing`] (stream or CUDA graph) on the
//!   plan's own device vectors, each timed call one complete SpMV as [`Plan::apply_device`] runs
//!   it; [`Plan::set_device_vectors`] and [`Plan::read_device_y`] move the vectors around it,
//!   untimed. The benchmark harness times through it; nothing outside the plan reaches its
//!   device layout.
//! - [`PlanOptions::reorder`]: the plan reorders a square matrix symmetrically and prepares its
//!   method on PAPᵀ; every call still takes and returns vectors in the matrix's own numbering,
//!   permuting them inside the call (`methods/reordered.rs`).
//! - [`Plan::update_values`]: new values under the same pattern without re-analysis. The first
//!   update builds a value map once: the pattern is prepared again as a *probe* whose value for
//!   CSR entry k is k+1, and the probe layout's value slots ([`Layout::values_mut`]) then read
//!   "slot s holds entry v−1" (0: padding). Every later update is a gather into the slots and a
//!   re-upload of the device layout (copies only). A method whose layout transforms values (no
//!   `values_mut`, or a probe that is not a clean permutation) re-prepares, and the plan says so
//!   ([`Plan::value_update_note`]); it is never silently wrong.
//! - [`PlanOptions::values`]: the matrix values stored narrower than x and y (f16 or bf16
//!   under f32, f32 under f64; issue #25, docs/precision.md). The plan rounds the values
//!   ([`crate::matrix::round_values`]) and prepares a method that supports the storage
//!   ([`MethodInfo::values`]) on them; any other method is refused.
//! - [`PlanOptions::offsets`]: the width of the row offsets (issue #25, docs/offsets.md). A plan
//!   takes a [`Csr`] of either width; `Auto` uses 32 bits when nnz ≤ 2^31−1 and 64 above, and
//!   64 may be forced on a small matrix. With 64-bit offsets the method's `prepare_wide` builds
//!   the layout ([`MethodInfo::offsets64`]; any other method is refused), without reordering or
//!   x windows, and [`Plan::update_values`] is refused (build a new plan).

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::CudaSlice;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::from_device::DeviceSource;
use super::params::{CPU_FALLBACK_PARAM, REORDER_PARAM, VALUES_PARAM, WINDOWS_PARAM};
use super::reordered::{reorder, Reordered};
use super::spmm::MultiState;
use super::windows::Windowed;
use super::{resolve, DeviceLayout, Layout, Method, MethodInfo, Params, PrepareFor};
use crate::error::{Error, Result};
use crate::gpu::{CallOrder, Gpu, Timing, TimingConfig, TimingMode};
use crate::matrix::{check_vectors, Csr, CsrOfWidth, Pattern, VectorFit};
use crate::reorder::{Ordering, Reorder};
use crate::scalar::{Offset, OffsetWidth, Offsets, PrecisionMode, Scalar, ValueStorage};

/// Where a plan runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    Cpu,
    Gpu,
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Backend::Cpu => "cpu",
            Backend::Gpu => "gpu",
        })
    }
}

/// How to build a plan.
#[derive(Clone, Debug, Default)]
pub struct PlanOptions {
    /// Parameter overrides for the method.
    pub params: Params,
    /// `None`: the GPU when one is usable and the method has a GPU executor, else the CPU.
    pub backend: Option<Backend>,
    /// A symmetric reordering of a square matrix ([`Reorder`]; none by default). A method
    /// variant's `reorder=...` (`csr-packed[reorder=rcm]`) takes precedence.
    pub reorder: Reorder,
    /// x windows: the matrix cut into this many column panels, each prepared by the method and
    /// run one after the other in every call (`methods/windows.rs`); 0 or 1: none. A variant's
    /// `windows=...` takes precedence.
    pub windows: usize,
    /// How the matrix values are stored (`Same`: as x and y, the default; docs/precision.md).
    /// A variant's `storage=...` takes precedence.
    pub values: ValueStorage,
    /// The width of the row offsets (`Auto`: 32 bits when nnz ≤ 2^31−1, 64 above;
    /// docs/offsets.md). 64 bits take the methods whose [`MethodInfo::offsets64`] is set.
    pub offsets: Offsets,
}

/// Preprocessing cost, reported apart from the SpMV time.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct PrepTimes {
    /// Ordering the matrix and building PAPᵀ ([`PlanOptions::reorder`]; zero without).
    pub reorder: Duration,
    /// Host-side `prepare` (building the layout).
    pub prepare: Duration,
    /// Copying the layout to the device (zero on the CPU).
    pub upload: Duration,
}

impl PrepTimes {
    pub fn total(&self) -> Duration {
        self.reorder + self.prepare + self.upload
    }
}

struct DevicePlan<T: PrepareFor> {
    gpu: Arc<Gpu>,
    layout: Box<dyn DeviceLayout<T>>,
    /// PAPᵀ's own layout when the plan reorders (what `layout` wraps).
    permuted: Option<Arc<dyn DeviceLayout<T>>>,
    x: CudaSlice<T>,
    y: CudaSlice<T>,
    /// The order of calls across streams ([`Plan::apply_device_on`]).
    order: CallOrder,
}

impl<T: PrepareFor> DevicePlan<T> {
    /// The layout a call runs: the plan's own (vectors in the matrix's numbering), or with
    /// `permuted` B = PAPᵀ's unwrapped layout where the plan reorders (the plan's own otherwise).
    fn layout(&self, permuted: bool) -> &dyn DeviceLayout<T> {
        Self::pick(self.layout.as_ref(), self.permuted.as_ref(), permuted)
    }

    /// [`DevicePlan::layout`] from the two layouts, so that a caller can borrow the vectors
    /// beside it.
    fn pick<'a>(
        own: &'a dyn DeviceLayout<T>,
        inner: Option<&'a Arc<dyn DeviceLayout<T>>>,
        permuted: bool,
    ) -> &'a dyn DeviceLayout<T> {
        match inner.filter(|_| permuted) {
            Some(inner) => inner.as_ref(),
            None => own,
        }
    }
}

impl<T: PrepareFor> Drop for DevicePlan<T> {
    fn drop(&mut self) {
        // The buffers are freed on the plan's own stream: after the last call, wherever it ran.
        let _ = self.order.settle(&self.gpu);
    }
}

/// How [`Plan::update_values`] replaced the values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ValueUpdate {
    /// Gathered into the layout's value slots and re-uploaded: no analysis.
    Gathered,
    /// The layout transforms values: prepared again from the pattern and the new values.
    Reprepared,
    /// The layout re-encoded the new values in place (`csr-packed`'s dictionary codes), keeping
    /// its structure, and was uploaded again.
    Reencoded,
}

/// Where each value slot of the layout takes its value from.
enum ValueMap {
    /// Slot s holds CSR entry `map[s] - 1`; 0 is padding (value zero).
    Gather(Vec<u32>),
    /// No fast path, and why.
    Reprepare(String),
}

/// A matrix prepared by one method, ready for repeated y = αAx + βy.
///
/// Prepare once, apply many times, and replace values under the same pattern:
///
/// ```
/// use spmvkit::{gen, Plan, PlanOptions, ValueUpdate};
/// let a = gen::generate_f64("poisson2d:8").unwrap();
/// let mut plan = Plan::new("csr-vector", &a, &PlanOptions::default()).unwrap();
/// let x = vec![1.0; a.ncols()];
/// let mut y = vec![0.0; a.nrows()];
/// plan.apply(1.0, &x, 0.0, &mut y).unwrap();
/// // Twice the values, same pattern: a gather into the layout, no re-analysis.
/// let doubled: Vec<f64> = a.vals().iter().map(|v| 2.0 * v).collect();
/// assert_eq!(plan.update_values(&doubled).unwrap(), ValueUpdate::Gathered);
/// let mut y2 = vec![0.0; a.nrows()];
/// plan.apply(1.0, &x, 0.0, &mut y2).unwrap();
/// assert!(y.iter().zip(&y2).all(|(a, b)| (2.0 * a - b).abs() < 1e-12));
/// ```
pub struct Plan<T: PrepareFor> {
    method: &'static dyn Method,
    params: Params,
    pattern: Arc<Pattern>,
    nrows: usize,
    ncols: usize,
    layout: Box<dyn Layout<T>>,
    device: Option<DevicePlan<T>>,
    prep: PrepTimes,
    note: Option<String>,
    value_map: Option<ValueMap>,
    reordered: Option<Reordered>,
    reorder_note: Option<String>,
    windows: usize,
    /// The multi-vector calls' state (`methods/spmm/`, issue #24).
    multi: MultiState<T>,
    /// The device arrays of a plan built from them (`methods/from_device.rs`).
    source: Option<DeviceSource<T>>,
    /// How the layout stores the values, and what rounding to it changed (issue #25).
    values: (ValueStorage, Option<crate::matrix::Conversion>),
    /// The row offsets' width the layout was built with (docs/offsets.md).
    offsets: OffsetWidth,
}

impl<T: PrepareFor> Plan<T> {
    /// Analyses `a` with the method `method`: a registered name or a variant
    /// `name[key=value;...]` (the spelling of `spmv bench --methods`), resolved by
    /// [`crate::methods::resolve`], the one door for `spmv run`, `spmv solve` and `spmv bench`.
    /// A key set both in the variant and in [`PlanOptions::params`] takes the variant's value.
    ///
    /// ```
    /// use spmvkit::{Csr, Plan, PlanOptions};
    /// let a = Csr::<f64>::identity(3).unwrap();
    /// let mut plan = Plan::new("csr", &a, &PlanOptions::default()).unwrap();
    /// let x = [1.0, 2.0, 3.0];
    /// let mut y = [1.0; 3];
    /// plan.apply(2.0, &x, 1.0, &mut y).unwrap(); // y = 2·A·x + y
    /// assert_eq!(y, [3.0, 5.0, 7.0]);
    /// // a variant: the method with these parameters
    /// let plan = Plan::new("merge[items=3]", &a, &PlanOptions::default()).unwrap();
    /// assert_eq!(plan.params().iter().collect::<Vec<_>>(), [("items", "3")]);
    /// ```
    ///
    /// `a` may have row offsets of either width ([`Offset`]); [`PlanOptions::offsets`] decides
    /// which the layout uses (docs/offsets.md).
    pub fn new<O: Offset>(method: &str, a: &Csr<T, O>, opts: &PlanOptions) -> Result<Self> {
        let (m, params) = resolve(method, &opts.params)?;
        Self::build_any(m, a, params, opts)
    }

    /// As [`Plan::new`], with a method already looked up (its parameters are `opts.params`).
    pub fn with_method<O: Offset>(
        method: &'static dyn Method,
        a: &Csr<T, O>,
        opts: &PlanOptions,
    ) -> Result<Self> {
        Self::build_any(method, a, opts.params.clone(), opts)
    }

    /// The plan with the row offsets [`PlanOptions::offsets`] chooses for `a`: `a`'s own
    /// arrays when it has that width, a copy in it otherwise (a method that does not take
    /// 64-bit offsets is refused before anything is copied).
    fn build_any<O: Offset>(
        m: &'static dyn Method,
        a: &Csr<T, O>,
        params: Params,
        opts: &PlanOptions,
    ) -> Result<Self> {
        let how = (opts.reorder, opts.windows, opts.values);
        let width = opts.offsets.width_for(a.nnz())?;
        if !m.info().takes_offsets(width) {
            return Err(super::offsets_refused(m.info().name));
        }
        match (width, a.by_width()) {
            (OffsetWidth::W32, CsrOfWidth::W32(a)) => Self::build(m, a, params, opts.backend, how),
            (OffsetWidth::W32, CsrOfWidth::W64(a)) => {
                Self::build(m, &a.with_offsets()?, params, opts.backend, how)
            }
            (OffsetWidth::W64, CsrOfWidth::W64(a)) => {
                Self::build_wide(m, a, params, opts.backend, how)
            }
            (OffsetWidth::W64, CsrOfWidth::W32(a)) => {
                Self::build_wide(m, &a.with_offsets()?, params, opts.backend, how)
            }
        }
    }

    /// [`Plan::build`] with 64-bit row offsets: the method's `prepare_wide`, no reordering and
    /// no x windows (both 32-bit), values stored as asked.
    fn build_wide(
        method: &'static dyn Method,
        a: &Csr<T, u64>,
        mut params: Params,
        backend: Option<Backend>,
        (how, windows, values): (Reorder, usize, ValueStorage),
    ) -> Result<Self> {
        let info = method.info();
        params.check_known(info.name, info.params)?;
        let reorder = params.take(REORDER_PARAM).is_some() || how != Reorder::None;
        let windowed = params.take(WINDOWS_PARAM).is_some() || windows > 1;
        if reorder || windowed {
            return Err(Error::MethodUnsupported {
                method: info.name.into(),
                reason: format!(
                    "{} with 64-bit row offsets is not supported (docs/offsets.md)",
                    if reorder { "reordering" } else { "x windows" }
                ),
            });
        }
        let (values, backend, gpu, note) =
            Self::storage_and_backend(&info, &mut params, values, backend)?;
        let (stored, conversion) = round_for(a, values, &mut params)?;
        let a = stored.as_ref().unwrap_or(a);
        let t0 = Instant::now();
        let layout = T::prepare_wide_with(method, a, &params)?;
        let prep = PrepTimes {
            reorder: Duration::ZERO,
            prepare: t0.elapsed(),
            upload: Duration::ZERO,
        };
        let dims = (a.nrows(), a.ncols());
        let gpu = gpu.filter(|_| backend == Backend::Gpu);
        let (device, prep) = device_plan(layout.as_ref(), gpu, None, &info, dims, prep)?;
        // no 32-bit pattern: update_values refuses a plan with 64-bit offsets
        let empty = Arc::new(Pattern::new("CSR", 0, 0, vec![0], Vec::new())?);
        let mut plan = Self::assemble(method, params, (empty, dims), (layout, device, prep), note);
        plan.values = (values, conversion);
        plan.offsets = OffsetWidth::W64;
        Ok(plan)
    }

    /// The value storage (a variant's `storage=` over `values`, `Same` when it is `T`'s own,
    /// checked against the method) and the backend (with its GPU and the note of a fallback).
    #[allow(clippy::type_complexity)]
    fn storage_and_backend(
        info: &MethodInfo,
        params: &mut Params,
        mut values: ValueStorage,
        backend: Option<Backend>,
    ) -> Result<(ValueStorage, Backend, Option<Arc<Gpu>>, Option<String>)> {
        if let Some(v) = params.take(VALUES_PARAM) {
            values = v.parse()?;
        }
        if values.name() == T::PRECISION.name() {
            values = ValueStorage::Same;
        }
        check_storage::<T>(info, values)?;
        let (backend, gpu, note) = choose_backend(info, backend)?;
        let declares_fallback = info.params.iter().any(|p| p.key == CPU_FALLBACK_PARAM);
        if backend == Backend::Gpu
            && declares_fallback
            && !params.iter().any(|(k, _)| k == CPU_FALLBACK_PARAM)
        {
            params.set(CPU_FALLBACK_PARAM, "0");
        }
        Ok((values, backend, gpu, note))
    }

    fn build(
        method: &'static dyn Method,
        a: &Csr<T>,
        mut params: Params,
        backend: Option<Backend>,
        (mut how, mut windows, values): (Reorder, usize, ValueStorage),
    ) -> Result<Self> {
        let info = method.info();
        params.check_known(info.name, info.params)?;
        if let Some(v) = params.take(REORDER_PARAM) {
            how = v.parse()?;
        }
        if let Some(v) = params.take(WINDOWS_PARAM) {
            windows = v.parse().map_err(|_| {
                Error::InvalidArgument(format!(
                    "windows={v}: the number of x windows must be a whole number"
                ))
            })?;
        }
        if how != Reorder::None {
            let need = format!("reorder={how} needs a square matrix");
            crate::matrix::check_square(&need, a.nrows(), a.ncols())?;
        }
        let (values, backend, gpu, note) =
            Self::storage_and_backend(&info, &mut params, values, backend)?;
        if how == Reorder::Auto && backend == Backend::Gpu {
            let given = Some(Backend::Gpu);
            let plain = (Reorder::None, windows, values);
            let plain = Self::build(method, a, params.clone(), given, plain)?;
            return plain.trial_reorder(a, params);
        }
        let (stored, conversion) = round_for(a, values, &mut params)?;
        let a = stored.as_ref().unwrap_or(a);
        let decision = reorder(a, how)?;
        let (reordered, a) = match decision.kept {
            Some((r, b)) => (Some(r), std::borrow::Cow::Owned(b)),
            None => (None, std::borrow::Cow::Borrowed(a)),
        };
        let a = a.as_ref();
        let t0 = Instant::now();
        let layout = prepare(method, a, &params, windows)?;
        let prepare = t0.elapsed();
        let prep = PrepTimes {
            reorder: decision.time,
            prepare,
            upload: Duration::ZERO,
        };
        let gpu = gpu.filter(|_| backend == Backend::Gpu);
        let dims = (a.nrows(), a.ncols());
        let (device, prep) =
            device_plan(layout.as_ref(), gpu, reordered.as_ref(), &info, dims, prep)?;
        let shape = (a.pattern().clone(), dims);
        let mut plan = Self::assemble(method, params, shape, (layout, device, prep), note);
        plan.reordered = reordered;
        plan.reorder_note = decision.note;
        plan.windows = windows;
        plan.values = (values, conversion);
        Ok(plan)
    }

    /// A plan of `method` on `pattern` (of `dims`) with its host layout, device side and
    /// preparation times, everything else at its start: no value map, no reordering, no
    /// windows, values as the vectors, 32-bit offsets.
    #[allow(clippy::type_complexity)]
    fn assemble(
        method: &'static dyn Method,
        params: Params,
        (pattern, (nrows, ncols)): (Arc<Pattern>, (usize, usize)),
        (layout, device, prep): (Box<dyn Layout<T>>, Option<DevicePlan<T>>, PrepTimes),
        note: Option<String>,
    ) -> Self {
        Plan {
            method,
            params,
            pattern,
            nrows,
            ncols,
            layout,
            device,
            prep,
            note,
            value_map: None,
            reordered: None,
            reorder_note: None,
            windows: 0,
            multi: MultiState::default(),
            source: None,
            values: (ValueStorage::Same, None),
            offsets: OffsetWidth::W32,
        }
    }

    /// `reorder=auto` on the GPU: the same method prepared on PAPᵀ (RCM) is timed against this
    /// plan, a timed call each with everything a call holds (the permutations included), and
    /// kept when it is faster by more than the ordering's cost spread over the method's `calls`
    /// (when it declares them, as `auto` does; otherwise over unboundedly many calls). What the
    /// trial cost beyond the kept plan's own preparation is [`PrepTimes::reorder`].
    fn trial_reorder(mut self, a: &Csr<T>, params: Params) -> Result<Self> {
        const TRIAL: TimingConfig = TimingConfig {
            warmup: 2,
            calls: 10,
            samples: 3,
        };
        let t0 = Instant::now();
        let backend = Some(Backend::Gpu);
        let rcm = Reorder::By(Ordering::Rcm);
        let how = (rcm, self.windows, self.values.0);
        let mut ordered = Self::build(self.method, a, params.clone(), backend, how)?;
        let (one, zero) = (T::one(), T::zero());
        let plain_us = self.time(TimingMode::Stream, &TRIAL, one, zero)?.median_us;
        let ordered_us = ordered
            .time(TimingMode::Stream, &TRIAL, one, zero)?
            .median_us;
        let order_us = ordered.prep.reorder.as_secs_f64() * 1e6;
        let declared = self.method.info().params.iter().find(|p| p.key == "calls");
        let calls = params
            .get("calls")
            .or(declared.map(|p| p.default))
            .and_then(|c| c.parse::<f64>().ok());
        let keep = ordered_us + order_us / calls.unwrap_or(f64::INFINITY) < plain_us;
        let note = format!(
            "reorder=auto: rcm {} (a call {ordered_us:.1} µs reordered, permutations included, \
             against {plain_us:.1} µs as given; ordering {:.0} ms{})",
            if keep { "kept" } else { "declined" },
            order_us / 1e3,
            calls.map_or(String::new(), |c| format!(" over {c} calls"))
        );
        let mut chosen = if keep { ordered } else { self };
        let own = chosen.prep.prepare + chosen.prep.upload;
        chosen.prep.reorder = t0
            .elapsed()
            .saturating_sub(if keep { own } else { Duration::ZERO });
        chosen.reorder_note = Some(note);
        Ok(chosen)
    }

    /// y = αAx + βy with host vectors.
    pub fn apply(&mut self, alpha: T, x: &[T], beta: T, y: &mut [T]) -> Result<()> {
        self.apply_host(false, alpha, x, beta, y)
    }

    /// As [`Plan::apply`], in the plan's own numbering: with a reordering P, y = αBx + βy for
    /// B = PAPᵀ, with no permutation (a solver that starts from P's image of its input and
    /// permutes its answer back once stays there in between; [`Plan::permutation`] gives P);
    /// without one, the same as [`Plan::apply`]. On a GPU plan the host vectors are copied
    /// through the plan's device vectors, as in [`Plan::apply`].
    ///
    /// ```
    /// use spmvkit::{reorder::{Ordering, Reorder}, gen, Backend, Plan, PlanOptions};
    /// let a = gen::generate_f64("poisson2d:6,renumber=random").unwrap();
    /// let opts = PlanOptions { reorder: Reorder::By(Ordering::Rcm), backend: Some(Backend::Cpu), ..Default::default() };
    /// let mut plan = Plan::new("csr", &a, &opts).unwrap();
    /// let x: Vec<f64> = (0..a.ncols()).map(|i| i as f64).collect();
    /// let (mut y, mut yp) = (vec![0.0; a.nrows()], vec![0.0; a.nrows()]);
    /// plan.apply(1.0, &x, 0.0, &mut y).unwrap();
    /// let p = plan.permutation().unwrap().clone();
    /// plan.apply_permuted(1.0, &p.apply(&x).unwrap(), 0.0, &mut yp).unwrap(); // B(Px) = P(Ax)
    /// assert_eq!(p.apply_inverse(&yp).unwrap(), y);
    /// ```
    pub fn apply_permuted(&mut self, alpha: T, x: &[T], beta: T, y: &mut [T]) -> Result<()> {
        self.apply_host(true, alpha, x, beta, y)
    }

    /// [`Plan::apply`] (`permuted` false) or [`Plan::apply_permuted`] (true).
    fn apply_host(
        &mut self,
        permuted: bool,
        alpha: T,
        x: &[T],
        beta: T,
        y: &mut [T],
    ) -> Result<()> {
        check_vectors(
            "",
            (self.nrows, self.ncols),
            x.len(),
            y.len(),
            VectorFit::Exact,
        )?;
        match &mut self.device {
            None => match self.reordered.as_ref().filter(|_| !permuted) {
                Some(r) => r.apply_cpu(alpha, x, beta, y, |a, x, b, y| {
                    self.layout.run_cpu(a, x, b, y)
                }),
                None => self.layout.run_cpu(alpha, x, beta, y),
            },
            Some(d) => {
                d.order.settle(&d.gpu)?;
                if !x.is_empty() {
                    d.gpu
                        .stream()
                        .memcpy_htod(x, &mut d.x)
                        .map_err(|e| Error::cuda("copy x", e))?;
                }
                if !y.is_empty() {
                    d.gpu
                        .stream()
                        .memcpy_htod(&*y, &mut d.y)
                        .map_err(|e| Error::cuda("copy y", e))?;
                }
                let layout = DevicePlan::pick(d.layout.as_ref(), d.permuted.as_ref(), permuted);
                layout.run(&d.gpu, alpha, &d.x, beta, &mut d.y)?;
                d.gpu.download(&d.y, y)
            }
        }
    }

    /// y_k = αAx_k + βy_k for every pair (x_k, y_k) on the one prepared layout (nothing is
    /// analysed or uploaded again; on the GPU only the vectors move). With two or more pairs on
    /// a GPU plan whose multi-vector path is a kernel ([`Plan::multi_path`] of a column-major
    /// block: `csr-vector`, `cusparse*`, and `auto` where its trial keeps a kernel), the vectors
    /// go through [`Plan::apply_multi`] as one column-major block, which reads the matrix once
    /// (for `csr-vector` the column-major kernel gives each vector the bits of its SpMV;
    /// otherwise the results are the SpMM kernel's, within the oracle's tolerance); otherwise,
    /// and on the CPU, one after the other.
    ///
    /// ```
    /// use spmvkit::{Csr, Plan, PlanOptions};
    /// let a = Csr::<f64>::identity(2).unwrap();
    /// let mut plan = Plan::new("merge", &a, &PlanOptions::default()).unwrap();
    /// let (x0, x1) = ([1.0, 2.0], [3.0, 4.0]);
    /// let (mut y0, mut y1) = ([0.0; 2], [0.0; 2]);
    /// plan.apply_many(1.0, &[&x0, &x1], 0.0, &mut [&mut y0, &mut y1]).unwrap();
    /// assert_eq!((y0, y1), ([1.0, 2.0], [3.0, 4.0]));
    /// ```
    pub fn apply_many(
        &mut self,
        alpha: T,
        xs: &[&[T]],
        beta: T,
        ys: &mut [&mut [T]],
    ) -> Result<()> {
        if xs.len() != ys.len() {
            return Err(Error::DimensionMismatch {
                what: "apply_many: number of y vectors (one per x)".into(),
                expected: xs.len(),
                got: ys.len(),
            });
        }
        if self.apply_many_as_block(alpha, xs, beta, ys)? {
            return Ok(());
        }
        for (x, y) in xs.iter().zip(ys.iter_mut()) {
            self.apply(alpha, x, beta, y)?;
        }
        Ok(())
    }

    /// y = αAx + βy on device-resident vectors: enqueued on [`Gpu::stream`], asynchronous, no
    /// host copy (capturable in a CUDA graph when the method's `run` is). x needs at least
    /// `ncols` elements and y at least `nrows` ([`Error::DimensionMismatch`] otherwise, before
    /// anything is launched). Vectors at least as long as the layout's
    /// [`DeviceLayout::padded_dims`] are used in place (entries past the logical length take
    /// part: keep x's finite; y's are overwritten); a method that wants padding (`cusparse-bsr`)
    /// copies logical-length vectors through scratch. Errors on a CPU plan.
    pub fn apply_device(
        &self,
        alpha: T,
        x: &CudaSlice<T>,
        beta: T,
        y: &mut CudaSlice<T>,
    ) -> Result<()> {
        let d = self.device_ref("apply_device")?;
        self.apply_device_on(&d.gpu, alpha, x, beta, y)
    }

    /// [`Plan::apply_device`] enqueued on `gpu`'s stream: the plan's GPU or a view of it on a
    /// caller's stream ([`Gpu::on_stream`]; [`Error::InvalidArgument`] for another device or
    /// context, and for x or y in memory of another context). Every launch of the call (all
    /// kernels, cuSPARSE, the y prologue, the permutations of a reordered plan, each window)
    /// goes on that stream, so the call orders with the caller's other work there and is
    /// captured with it into a CUDA graph. The plan's calls still run one at a time, whatever
    /// their streams: a call on another stream than the previous call's first waits for that
    /// call on the device (an event; no host synchronisation), since the layout's scratch
    /// buffers serve every call. A call captured into a CUDA graph neither waits nor leaves an
    /// event behind; the caller orders the graph's launches against other calls of the plan (as
    /// cuSPARSE asks for its external buffer) and keeps the plan alive while the graph may run.
    pub fn apply_device_on(
        &self,
        gpu: &Gpu,
        alpha: T,
        x: &CudaSlice<T>,
        beta: T,
        y: &mut CudaSlice<T>,
    ) -> Result<()> {
        self.device_call("apply_device", gpu, false, alpha, x, beta, y)
    }

    /// As [`Plan::apply_device`], in the plan's own numbering: with a reordering P, y = αBx + βy
    /// for B = PAPᵀ, with no permutation (a solver that works on Pb and returns Pᵀx stays there
    /// between the two); without one, the same as [`Plan::apply_device`]. The same checks and
    /// errors as [`Plan::apply_device`].
    pub fn apply_device_permuted(
        &self,
        alpha: T,
        x: &CudaSlice<T>,
        beta: T,
        y: &mut CudaSlice<T>,
    ) -> Result<()> {
        let d = self.device_ref("apply_device_permuted")?;
        self.device_call("apply_device_permuted", &d.gpu, true, alpha, x, beta, y)
    }

    /// One call of the device layout (B's own with `permuted`, see [`DevicePlan::layout`]) on
    /// `gpu`'s stream, in the plan's call order: x, y and the stream checked to belong to the
    /// plan's context, a length mismatch named with the call (`what`), the method and the
    /// matrix's shape.
    #[allow(clippy::too_many_arguments)]
    fn device_call(
        &self,
        what: &str,
        gpu: &Gpu,
        permuted: bool,
        alpha: T,
        x: &CudaSlice<T>,
        beta: T,
        y: &mut CudaSlice<T>,
    ) -> Result<()> {
        let d = self.device_ref(what)?;
        let foreign = [("the stream", gpu.context()), ("x", x.context())]
            .into_iter()
            .chain([("y", y.context())])
            .find(|(_, c)| !d.gpu.same_context(c));
        if let Some((which, _)) = foreign {
            return Err(Error::InvalidArgument(format!(
                "{what} ({}): {which} belongs to another CUDA context than the plan's \
                 (device {}, {})",
                self.method.info().name,
                d.gpu.ordinal(),
                d.gpu.name()
            )));
        }
        let layout = d.layout(permuted);
        d.order
            .call(gpu, &d.gpu, || layout.run(gpu, alpha, x, beta, y))
            .map_err(|e| match e {
                Error::DimensionMismatch {
                    what: inner,
                    expected,
                    got,
                } => Error::DimensionMismatch {
                    what: format!(
                        "{what} ({}, a {}x{} matrix): {inner}",
                        self.method.info().name,
                        self.nrows,
                        self.ncols
                    ),
                    expected,
                    got,
                },
                other => other,
            })
    }

    /// The plan's reordering P ([`PlanOptions::reorder`]), when it applies one: the numbering of
    /// [`Plan::apply_device_permuted`].
    pub fn permutation(&self) -> Option<&crate::reorder::Permutation> {
        self.reordered.as_ref().map(|r| &r.perm)
    }

    /// The calls so far that permuted their vectors into and out of a reordering's numbering
    /// (0 without one): [`Plan::apply`] and its kin on a reordered plan, counted when enqueued
    /// (a CUDA graph's replays are not). A solver in the permuted space makes none.
    pub fn permuting_calls(&self) -> usize {
        self.reordered
            .as_ref()
            .map_or(0, Reordered::permuting_calls)
    }

    /// The GPU the plan runs on, when it does.
    pub fn gpu(&self) -> Option<&Arc<Gpu>> {
        self.device.as_ref().map(|d| &d.gpu)
    }

    /// Replaces the matrix values (CSR order of the matrix the plan was made from, same
    /// pattern) without re-analysis when the layout allows it (see the module doc). Returns how
    /// the update was done; [`Plan::value_update_note`] says why when it re-prepared.
    /// With [`PlanOptions::values`] narrower than `T`, the new values are rounded to it first
    /// (and refused, as at [`Plan::new`], when one does not fit).
    pub fn update_values(&mut self, vals: &[T]) -> Result<ValueUpdate> {
        if let Some(nnz) = self.source.as_ref().map(DeviceSource::nnz) {
            return self.update_values_from_host(vals, nnz);
        }
        if self.offsets == OffsetWidth::W64 {
            return Err(Error::MethodUnsupported {
                method: self.method.info().name.into(),
                reason: "update_values on a plan with 64-bit row offsets: build a new plan \
                         (docs/offsets.md)"
                    .into(),
            });
        }
        let rounded;
        let vals = match self.values.0 {
            ValueStorage::Same => vals,
            v => {
                let a = Csr::with_pattern(self.pattern.clone(), vals.to_vec())?;
                rounded = crate::matrix::round_values(&a, v)?.0;
                rounded.vals()
            }
        };
        let permuted;
        let vals = match &self.reordered {
            Some(r) if vals.len() == self.pattern.nnz() => {
                permuted = r.values(vals);
                &permuted[..]
            }
            _ => vals,
        };
        if vals.len() != self.pattern.nnz() {
            return Err(Error::DimensionMismatch {
                what: format!(
                    "update_values: values for the {} pattern entries",
                    self.info().name
                ),
                expected: self.pattern.nnz(),
                got: vals.len(),
            });
        }
        let reencoded = match self.layout.reencode_values(&self.pattern, vals) {
            None => None,
            Some(Ok(())) => Some(true),
            Some(Err(why)) => {
                self.value_map = Some(ValueMap::Reprepare(why));
                Some(false)
            }
        };
        if self.value_map.is_none() && reencoded.is_none() {
            self.value_map = Some(self.build_value_map()?);
        }
        let gathered = reencoded.unwrap_or(false)
            || match (&self.value_map, self.layout.values_mut()) {
                (Some(ValueMap::Gather(map)), Some(slots)) if slots.len() == map.len() => {
                    slots
                        .par_iter_mut()
                        .zip(map.par_iter())
                        .for_each(|(s, &m)| {
                            *s = if m == 0 {
                                T::zero()
                            } else {
                                vals[m as usize - 1]
                            };
                        });
                    true
                }
                _ => false,
            };
        let t0 = Instant::now();
        if !gathered {
            let a = Csr::with_pattern(self.pattern.clone(), vals.to_vec())?;
            self.layout = prepare(self.method, &a, &self.params, self.windows)?;
            self.prep.prepare = t0.elapsed();
        }
        // the multi-vector path's device copies hold the old values
        self.multi = MultiState::default();
        if let Some(d) = &mut self.device {
            d.order.settle(&d.gpu)?;
            let t1 = Instant::now();
            let name = self.method.info().name;
            (d.layout, d.permuted) =
                upload(self.layout.as_ref(), &d.gpu, self.reordered.as_ref(), name)?;
            let (y_len, x_len) = vector_lens(d.layout.as_ref(), self.nrows, self.ncols)?;
            if d.x.len() < x_len {
                d.x = d.gpu.alloc_zeros::<T>(x_len)?;
            }
            if d.y.len() < y_len {
                d.y = d.gpu.alloc_zeros::<T>(y_len)?;
            }
            d.gpu.synchronize()?;
            self.prep.upload = t1.elapsed();
        }
        Ok(match (gathered, reencoded) {
            (true, Some(true)) => ValueUpdate::Reencoded,
            (true, _) => ValueUpdate::Gathered,
            (false, _) => ValueUpdate::Reprepared,
        })
    }

    /// Why [`Plan::update_values`] re-prepares for this plan (`None` before the first update or
    /// when updates are gathers).
    pub fn value_update_note(&self) -> Option<&str> {
        match &self.value_map {
            Some(ValueMap::Reprepare(why)) => Some(why),
            _ => None,
        }
    }

    /// Prepares the probe (entry k has value k+1) and reads its value slots into a map.
    fn build_value_map(&mut self) -> Result<ValueMap> {
        let name = self.method.info().name;
        let Some(slots) = self.layout.values_mut().map(|s| s.len()) else {
            return Ok(ValueMap::Reprepare(format!(
                "{name} keeps its values transformed (no flat value array); update_values re-prepares"
            )));
        };
        let nnz = self.pattern.nnz();
        // The probe runs in T when T holds every k+1 exactly (so the layout is the same one
        // T builds), else in f64 with the layout's notes as a check that nothing changed.
        let exact_in_t = (nnz as f64) < 1.0 / T::EPSILON;
        let map = if exact_in_t {
            let probe = Csr::with_pattern(
                self.pattern.clone(),
                (1..=nnz).map(|k| T::from_f64(k as f64)).collect(),
            )?;
            let mut l = T::prepare_with(self.method, &probe, &self.params)?;
            read_map(l.values_mut(), nnz)
        } else {
            let probe =
                Csr::with_pattern(self.pattern.clone(), (1..=nnz).map(|k| k as f64).collect())?;
            let mut l = f64::prepare_with(self.method, &probe, &self.params)?;
            if l.notes() != self.layout.notes() {
                None
            } else {
                read_map(l.values_mut(), nnz)
            }
        };
        Ok(match map {
            Some(m) if m.len() == slots => ValueMap::Gather(m),
            _ => ValueMap::Reprepare(format!(
                "{name}'s value slots are not a plain permutation of the CSR values; update_values re-prepares"
            )),
        })
    }

    /// The width of the row offsets the layout was built with ([`PlanOptions::offsets`]).
    pub fn offsets(&self) -> OffsetWidth {
        self.offsets
    }

    /// The precision mode: x, y and the accumulation in `T`, the values as
    /// [`PlanOptions::values`] asked.
    pub fn precision_mode(&self) -> PrecisionMode {
        PrecisionMode {
            vectors: T::PRECISION,
            values: self.values.0,
        }
    }

    /// What rounding the values to a narrower storage changed (`None` when they are stored as
    /// `T`).
    pub fn conversion(&self) -> Option<crate::matrix::Conversion> {
        self.values.1
    }

    /// The method's description.
    pub fn info(&self) -> MethodInfo {
        self.method.info()
    }
    /// The parameters the layout was prepared with (the variant's and [`PlanOptions::params`],
    /// merged by [`crate::methods::resolve`]; on the GPU `cpu_fallback=0` where the method
    /// declares it and the caller did not set it).
    pub fn params(&self) -> &Params {
        &self.params
    }
    /// The method the layout came from when the plan's method chose another one (`auto`: the
    /// method it chose, [`Layout::chosen`]); `None` when the plan's method is its own.
    ///
    /// ```
    /// use spmvkit::{gen, Backend, Plan, PlanOptions};
    /// let a = gen::generate_f64("poisson2d:20").unwrap();
    /// let cpu = PlanOptions { backend: Some(Backend::Cpu), ..Default::default() };
    /// let plan = Plan::new("auto", &a, &cpu).unwrap();
    /// assert!(plan.chosen().is_some());
    /// assert!(Plan::new("csr", &a, &cpu).unwrap().chosen().is_none());
    /// ```
    pub fn chosen(&self) -> Option<&'static dyn Method> {
        self.layout.chosen()
    }
    /// Whether two calls on the same input give bitwise identical y: the method's
    /// [`MethodInfo::deterministic`], or for a method that chose another (`auto`) that one's.
    pub fn deterministic(&self) -> bool {
        self.chosen()
            .map_or(self.method.info(), |m| m.info())
            .deterministic
    }
    /// Where the plan runs.
    pub fn backend(&self) -> Backend {
        if self.device.is_some() {
            Backend::Gpu
        } else {
            Backend::Cpu
        }
    }
    /// Why the plan runs on the CPU although a GPU was not refused (no GPU, no executor), if so.
    pub fn fallback_note(&self) -> Option<&str> {
        self.note.as_deref()
    }
    /// Preprocessing times.
    /// The ordering the plan applies ([`PlanOptions::reorder`]): `None` without one, or when
    /// `auto` declined.
    pub fn ordering(&self) -> Option<Ordering> {
        self.reordered.as_ref().map(|r| r.ordering)
    }

    /// What the reordering option did, as a line for reports (`None` without the option).
    pub fn reorder_note(&self) -> Option<&str> {
        self.reorder_note.as_deref()
    }

    /// The preparation so far: `prepare` includes what the layout prepared after the plan was
    /// built ([`Layout::late_prep`]: `auto`'s csr-packed layout for its SpMM trial).
    pub fn prep_times(&self) -> PrepTimes {
        PrepTimes {
            prepare: self.prep.prepare + self.layout.late_prep(),
            ..self.prep
        }
    }
    /// The host layout.
    pub fn layout(&self) -> &dyn Layout<T> {
        self.layout.as_ref()
    }
    /// The plan's own device x and y, read-only, when it runs on the GPU: as long as the
    /// layout's [`DeviceLayout::padded_dims`] (at least `ncols` and `nrows`); x's entries past
    /// `ncols` are zero. [`Plan::apply`] and [`Plan::set_device_vectors`] move only the first
    /// `ncols` / `nrows` entries; [`Plan::time`] runs on them.
    pub fn device_vectors(&self) -> Option<(&CudaSlice<T>, &CudaSlice<T>)> {
        self.device.as_ref().map(|d| (&d.x, &d.y))
    }

    /// Copies `x` (exactly `ncols` entries) and `y` (exactly `nrows`) into the plan's own device
    /// vectors, the ones [`Plan::time`] runs on; `None` leaves that vector as it is (after
    /// [`Plan::apply`]: its x, and its result in y). Untimed; enqueued on the GPU's stream
    /// before anything timed after it. Errors on a CPU plan.
    pub fn set_device_vectors(&mut self, x: Option<&[T]>, y: Option<&[T]>) -> Result<()> {
        let (nrows, ncols) = (self.nrows, self.ncols);
        check_vectors(
            "Plan::set_device_vectors: ",
            (nrows, ncols),
            x.map_or(ncols, <[T]>::len),
            y.map_or(nrows, <[T]>::len),
            VectorFit::Exact,
        )?;
        let d = self.device_mut("set_device_vectors")?;
        for (v, dst, what) in [(x, &mut d.x, "copy x"), (y, &mut d.y, "copy y")] {
            if let Some(v) = v.filter(|v| !v.is_empty()) {
                d.gpu
                    .stream()
                    .memcpy_htod(v, dst)
                    .map_err(|e| Error::cuda(what, e))?;
            }
        }
        Ok(())
    }

    /// Copies the first `nrows` entries of the plan's device y into `y` (exactly `nrows`
    /// entries), waiting for the device: the result after [`Plan::time`]. Errors on a CPU plan.
    pub fn read_device_y(&self, y: &mut [T]) -> Result<()> {
        check_vectors(
            "Plan::read_device_y: ",
            (self.nrows, self.ncols),
            self.ncols,
            y.len(),
            VectorFit::Exact,
        )?;
        let d = self.device_ref("read_device_y")?;
        d.gpu.download(&d.y, y)
    }

    /// Times y = αAx + βy on the plan's own device vectors ([`Plan::set_device_vectors`]) with
    /// the protocol of [`crate::gpu::timing`]: `cfg.warmup` untimed calls, then `cfg.samples`
    /// samples of `cfg.calls` back-to-back calls, enqueued on the stream between two events
    /// ([`TimingMode::Stream`]) or captured once into a CUDA graph and replayed
    /// ([`TimingMode::Graph`]). Each timed call is one complete SpMV, exactly what
    /// [`Plan::apply_device`] enqueues: the layout's checked `run`, with zeroing or scaling y,
    /// permuting x, un-permuting y and combine passes inside. Every call updates y in place,
    /// from the y the vectors held: [`Timing::executions`] calls in all, to be checked with
    /// [`Plan::read_device_y`].
    ///
    /// A plan on the CPU has nothing to time this way (its callers time [`Plan::apply`] with a
    /// wall clock): that is an error, [`Error::MethodUnsupported`] saying why the plan runs on
    /// the CPU, never a panic.
    ///
    /// ```
    /// use spmvkit::gpu::{TimingConfig, TimingMode};
    /// use spmvkit::{gen, Backend, Plan, PlanOptions};
    /// let a = gen::generate_f64("poisson2d:16").unwrap();
    /// let mut plan = Plan::new("csr-vector", &a, &PlanOptions::default()).unwrap();
    /// let cfg = TimingConfig { warmup: 2, calls: 10, samples: 3 };
    /// match plan.backend() {
    ///     Backend::Gpu => {
    ///         plan.set_device_vectors(Some(&vec![1.0; a.ncols()]), None).unwrap();
    ///         let t = plan.time(TimingMode::Stream, &cfg, 1.0, 0.0).unwrap();
    ///         assert!(t.median_us > 0.0);
    ///     }
    ///     Backend::Cpu => assert!(plan.time(TimingMode::Stream, &cfg, 1.0, 0.0).is_err()),
    /// }
    /// ```
    pub fn time(
        &mut self,
        mode: TimingMode,
        cfg: &TimingConfig,
        alpha: T,
        beta: T,
    ) -> Result<Timing> {
        let d = self.device_mut("time")?;
        d.order.settle(&d.gpu)?;
        let (gpu, layout, x, y) = (&d.gpu, d.layout.as_ref(), &d.x, &mut d.y);
        crate::gpu::timing::time(gpu, mode, cfg, || layout.run(gpu, alpha, x, beta, y))
    }

    /// The multi-vector state (`methods/spmm/`), read-only.
    pub(crate) fn multi_state(&self) -> &MultiState<T> {
        &self.multi
    }

    /// Runs `f` with the plan and its multi-vector state (`methods/spmm/`), which is taken out
    /// of the plan for the call and put back after it.
    pub(crate) fn with_multi<R>(&mut self, f: impl FnOnce(&Self, &mut MultiState<T>) -> R) -> R {
        let mut st = std::mem::take(&mut self.multi);
        let r = f(self, &mut st);
        self.multi = st;
        r
    }

    /// Orders the plan's own stream after its last call, wherever that ran
    /// ([`Plan::apply_device_on`]), before work on its own stream that shares the layout's
    /// scratch (the multi-vector path's k-SpMV fallback). Nothing to do on a CPU plan.
    pub(crate) fn settle_calls(&self) -> Result<()> {
        match &self.device {
            Some(d) => d.order.settle(&d.gpu),
            None => Ok(()),
        }
    }

    /// The device side of a GPU plan; on a CPU plan the error that `Plan::{what}` needs the GPU.
    fn device_ref(&self, what: &str) -> Result<&DevicePlan<T>> {
        let (method, note) = (self.method, self.note.as_deref());
        self.device
            .as_ref()
            .ok_or_else(|| not_on_gpu(method, note, what))
    }
    fn device_mut(&mut self, what: &str) -> Result<&mut DevicePlan<T>> {
        let (method, note) = (self.method, self.note.as_deref());
        self.device
            .as_mut()
            .ok_or_else(|| not_on_gpu(method, note, what))
    }
    pub fn nrows(&self) -> usize {
        self.nrows
    }
    pub fn ncols(&self) -> usize {
        self.ncols
    }
}

/// The error of a GPU-only `Plan::{what}` on a plan that runs on the CPU, with the reason it
/// does (the plan's fallback note) when there is one.
fn not_on_gpu(method: &dyn Method, note: Option<&str>, what: &str) -> Error {
    Error::MethodUnsupported {
        method: method.info().name.into(),
        reason: format!(
            "Plan::{what} needs a plan on the GPU; this one runs on the CPU{}",
            note.map(|n| format!(" ({n})")).unwrap_or_default()
        ),
    }
}

/// The lengths `(y, x)` of the plan's own device vectors: the layout's padded lengths, which
/// must cover the matrix (a layout that asks for less is a bug, reported, not trusted).
fn vector_lens<T: Scalar>(
    dl: &dyn DeviceLayout<T>,
    nrows: usize,
    ncols: usize,
) -> Result<(usize, usize)> {
    let (py, px) = dl.padded_dims();
    if dl.dims() != (nrows, ncols) || py < nrows || px < ncols {
        return Err(Error::InvalidArgument(format!(
            "device layout of a {nrows}x{ncols} matrix reports dims {:?} and padded dims \
             ({py}, {px})",
            dl.dims()
        )));
    }
    Ok((py, px))
}

/// Slot s → CSR entry + 1 (0: padding) from a probe's slots, `None` when a slot is not an integer
/// in 0..=nnz.
fn read_map<U: Scalar>(slots: Option<&mut [U]>, nnz: usize) -> Option<Vec<u32>> {
    let slots = slots?;
    let ok = |v: f64| v >= 0.0 && v <= nnz as f64 && v.fract() == 0.0;
    if !slots.par_iter().all(|v| ok(v.to_f64())) {
        return None;
    }
    Some(slots.par_iter().map(|v| v.to_f64() as u32).collect())
}

/// `method`'s layout of `a`, on `windows` column panels when there are at least two.
fn prepare<T: PrepareFor>(
    method: &'static dyn Method,
    a: &Csr<T>,
    params: &Params,
    windows: usize,
) -> Result<Box<dyn Layout<T>>> {
    if windows > 1 {
        Ok(Box::new(Windowed::prepare(method, a, params, windows)?))
    } else {
        T::prepare_with(method, a, params)
    }
}

/// `a` with its values rounded to `values` (none for `Same`) and what that changed; the storage
/// goes into `params` (`storage=`) for the method's `prepare`.
#[allow(clippy::type_complexity)]
fn round_for<T: Scalar, O: Offset>(
    a: &Csr<T, O>,
    values: ValueStorage,
    params: &mut Params,
) -> Result<(Option<Csr<T, O>>, Option<crate::matrix::Conversion>)> {
    if values == ValueStorage::Same {
        return Ok((None, None));
    }
    let (r, c) = crate::matrix::round_values(a, values)?;
    params.set(VALUES_PARAM, values.name());
    Ok((Some(r), Some(c)))
}

/// The device side of a plan on `gpu` (none without one): the layout uploaded (after checking
/// that it fits), the plan's own x and y, and the upload's time added to `prep`.
fn device_plan<T: PrepareFor>(
    layout: &dyn Layout<T>,
    gpu: Option<Arc<Gpu>>,
    reordered: Option<&Reordered>,
    info: &MethodInfo,
    (nrows, ncols): (usize, usize),
    mut prep: PrepTimes,
) -> Result<(Option<DevicePlan<T>>, PrepTimes)> {
    let Some(gpu) = gpu else {
        return Ok((None, prep));
    };
    let t1 = Instant::now();
    gpu.ensure_fits(
        &format!("{} layout of a {nrows}x{ncols} matrix", info.name),
        layout.footprint_bytes() + T::BYTES * (nrows + ncols),
    )?;
    let (dl, permuted) = upload(layout, &gpu, reordered, info.name)?;
    let (y_len, x_len) = vector_lens(dl.as_ref(), nrows, ncols)?;
    let x = gpu.alloc_zeros::<T>(x_len)?;
    let y = gpu.alloc_zeros::<T>(y_len)?;
    gpu.stream()
        .synchronize()
        .map_err(|e| Error::cuda("upload", e))?;
    prep.upload = t1.elapsed();
    let device = DevicePlan {
        order: CallOrder::new(&gpu),
        gpu,
        layout: dl,
        permuted,
        x,
        y,
    };
    Ok((Some(device), prep))
}

/// The device layout of a plan: the layout uploaded, wrapped to permute x and y when the plan
/// reorders (then also the unwrapped layout, for [`Plan::apply_device_permuted`]).
type Uploaded<T> = (Box<dyn DeviceLayout<T>>, Option<Arc<dyn DeviceLayout<T>>>);

fn upload<T: PrepareFor>(
    layout: &dyn Layout<T>,
    gpu: &Arc<Gpu>,
    reordered: Option<&Reordered>,
    name: &str,
) -> Result<Uploaded<T>> {
    let dl = layout.upload(gpu).map_err(|e| name_method(e, name))?;
    Ok(match reordered {
        Some(r) => {
            let inner: Arc<dyn DeviceLayout<T>> = Arc::from(dl);
            (r.wrap(gpu, inner.clone())?, Some(inner))
        }
        None => (dl, None),
    })
}

/// Refuses a value storage that does not go with `T` or that the method does not support.
fn check_storage<T: Scalar>(info: &MethodInfo, values: ValueStorage) -> Result<()> {
    if !values.fits(T::PRECISION) {
        return Err(Error::InvalidArgument(format!(
            "storage={values} does not go with x and y in {}: the precision modes are {}",
            T::PRECISION,
            PrecisionMode::ALL.map(|m| m.to_string()).join(", ")
        )));
    }
    if !info.supports(values) {
        let mode = PrecisionMode {
            vectors: T::PRECISION,
            values,
        };
        let able: Vec<&str> = super::registry()
            .iter()
            .map(|m| m.info())
            .filter(|i| i.supports(values))
            .map(|i| i.name)
            .collect();
        return Err(Error::MethodUnsupported {
            method: info.name.into(),
            reason: format!(
                "unsupported precision mode {mode}: it does not read values stored in {values}; \
                 methods that do: {}",
                able.join(", ")
            ),
        });
    }
    Ok(())
}

fn name_method(e: Error, name: &str) -> Error {
    match e {
        Error::MethodUnsupported { reason, .. } => Error::MethodUnsupported {
            method: name.into(),
            reason,
        },
        other => other,
    }
}

fn choose_backend(
    info: &MethodInfo,
    wanted: Option<Backend>,
) -> Result<(Backend, Option<Arc<Gpu>>, Option<String>)> {
    match wanted {
        Some(Backend::Cpu) => {
            if !info.cpu {
                return Err(Error::MethodUnsupported {
                    method: info.name.into(),
                    reason: "it has no CPU executor".into(),
                });
            }
            Ok((Backend::Cpu, None, None))
        }
        Some(Backend::Gpu) => {
            if !info.gpu {
                return Err(Error::MethodUnsupported {
                    method: info.name.into(),
                    reason: "it has no GPU executor".into(),
                });
            }
            Ok((Backend::Gpu, Some(Gpu::get()?), None))
        }
        None if info.gpu => match Gpu::get() {
            Ok(g) => Ok((Backend::Gpu, Some(g), None)),
            Err(e) if info.cpu => {
                Ok((Backend::Cpu, None, Some(format!("{e}; running on the CPU"))))
            }
            Err(e) => Err(Error::MethodUnsupported {
                method: info.name.into(),
                reason: e.to_string(),
            }),
        },
        None => Ok((
            Backend::Cpu,
            None,
            Some(format!(
                "{} has no GPU executor; running on the CPU",
                info.name
            )),
        )),
    }
}

/// A plan's GPU, device layout and own x and y.
type DeviceParts<T> = (
    Arc<Gpu>,
    Box<dyn DeviceLayout<T>>,
    CudaSlice<T>,
    CudaSlice<T>,
);

/// Plans built from device arrays (`methods/from_device.rs`, issue #23).
impl<T: PrepareFor> Plan<T> {
    /// A GPU plan of `method` on a matrix of `dims` whose host layout is `host` (no matrix) and
    /// whose device layout `dl` runs on `source`'s arrays, with its own vectors `x` and `y`.
    pub(super) fn assemble_from_device(
        method: &'static dyn Method,
        (nrows, ncols): (usize, usize),
        host: Box<dyn Layout<T>>,
        (gpu, dl, x, y): DeviceParts<T>,
        source: DeviceSource<T>,
        prep: PrepTimes,
    ) -> Result<Self> {
        let device = Some(DevicePlan {
            order: CallOrder::new(&gpu),
            gpu,
            layout: dl,
            permuted: None,
            x,
            y,
        });
        // No host pattern: the only reader, update_values, goes to the device source.
        let empty = Arc::new(Pattern::new("CSR", 0, 0, vec![0], Vec::new())?);
        let shape = (empty, (nrows, ncols));
        let mut plan = Self::assemble(method, Params::new(), shape, (host, device, prep), None);
        plan.source = Some(source);
        Ok(plan)
    }

    /// The device arrays of a plan built from them.
    pub(super) fn device_source(&self) -> Option<&DeviceSource<T>> {
        self.source.as_ref()
    }

    /// A plan built from device arrays: its GPU, call order, device layout and arrays.
    #[allow(clippy::type_complexity)]
    pub(super) fn device_source_parts(
        &mut self,
    ) -> Option<(
        &Arc<Gpu>,
        &CallOrder,
        &mut Box<dyn DeviceLayout<T>>,
        &mut DeviceSource<T>,
    )> {
        let (d, s) = (self.device.as_mut()?, self.source.as_mut()?);
        Some((&d.gpu, &d.order, &mut d.layout, s))
    }

    /// [`Plan::update_values`] on a plan built from device arrays: the values go to the device
    /// and through [`Plan::update_values_device`].
    fn update_values_from_host(&mut self, vals: &[T], nnz: usize) -> Result<ValueUpdate> {
        if vals.len() != nnz {
            return Err(Error::DimensionMismatch {
                what: format!(
                    "update_values: values for the {} pattern entries",
                    self.info().name
                ),
                expected: nnz,
                got: vals.len(),
            });
        }
        if nnz == 0 {
            return Ok(ValueUpdate::Gathered);
        }
        let gpu = self.device_ref("update_values")?.gpu.clone();
        let d = gpu.upload(vals)?;
        self.update_values_device(&gpu, &d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device layout that only reports its shapes (never launched).
    struct Shapes {
        dims: (usize, usize),
        padded: (usize, usize),
    }

    impl DeviceLayout<f64> for Shapes {
        fn dims(&self) -> (usize, usize) {
            self.dims
        }
        fn padded_dims(&self) -> (usize, usize) {
            self.padded
        }
        unsafe fn run_unchecked(
            &self,
            _: &Gpu,
            _: f64,
            _: &CudaSlice<f64>,
            _: f64,
            _: &mut CudaSlice<f64>,
        ) -> Result<()> {
            unreachable!("the plan's vector sizing never runs the layout")
        }
        fn footprint_bytes(&self) -> usize {
            0
        }
    }

    fn cpu(params: &[&str]) -> PlanOptions {
        PlanOptions {
            params: Params::parse(params.iter().copied()).unwrap(),
            backend: Some(Backend::Cpu),
            ..Default::default()
        }
    }

    /// y = A·x (β = 0) through the plan, for comparing two plans bit for bit.
    fn product(plan: &mut Plan<f64>) -> Vec<f64> {
        let x: Vec<f64> = (0..plan.ncols()).map(|j| (j % 7) as f64 - 3.0).collect();
        let mut y = vec![0.0; plan.nrows()];
        plan.apply(1.0, &x, 0.0, &mut y).unwrap();
        y
    }

    /// A variant through `Plan::new` is the method with those parameters: the same parameters,
    /// layout notes, footprint and product, bit for bit.
    #[test]
    fn a_variant_is_the_method_with_its_params() {
        let a = crate::gen::generate::<f64>("powerlaw:3000,6").unwrap();
        for (variant, name, params) in [
            (
                "fastload[height=2;threads=128]",
                "fastload",
                &["height=2", "threads=128"][..],
            ),
            (
                "csr-packed[sort=on,window=64]",
                "csr-packed",
                &["sort=on", "window=64"],
            ),
            (
                "csr-overlap[switch_points=17,34,64,122,216;long_chunk=0]",
                "csr-overlap",
                &["switch_points=17,34,64,122,216", "long_chunk=0"],
            ),
            (" merge ", "merge", &[]),
        ] {
            let mut v = Plan::new(variant, &a, &cpu(&[])).unwrap();
            let mut m = Plan::new(name, &a, &cpu(params)).unwrap();
            assert_eq!(v.info().name, name, "{variant}");
            assert_eq!(v.params(), m.params(), "{variant}");
            assert_eq!(v.layout().notes(), m.layout().notes(), "{variant}");
            assert_eq!(
                v.layout().footprint_bytes(),
                m.layout().footprint_bytes(),
                "{variant}"
            );
            let (yv, ym) = (product(&mut v), product(&mut m));
            assert!(
                yv.iter().zip(&ym).all(|(p, q)| p.to_bits() == q.to_bits()),
                "{variant}: another product than {name} with {params:?}"
            );
        }
    }

    /// The documented rule: a key set both in the variant and in `PlanOptions::params` takes the
    /// variant's value; other keys of `params` stay.
    #[test]
    fn the_variant_wins_over_plan_options() {
        let a = crate::gen::generate::<f64>("poisson2d:30").unwrap();
        let both = Plan::new("fastload[height=2]", &a, &cpu(&["height=4", "threads=128"])).unwrap();
        let want = Plan::new("fastload", &a, &cpu(&["height=2", "threads=128"])).unwrap();
        assert_eq!(
            both.params().iter().collect::<Vec<_>>(),
            [("height", "2"), ("threads", "128")]
        );
        assert_eq!(both.layout().notes(), want.layout().notes());
        // a key unknown to the method is refused from either side
        for (spec, params) in [("fastload[nokey=1]", &[][..]), ("fastload", &["nokey=1"])] {
            match Plan::new(spec, &a, &cpu(params)) {
                Err(Error::Param { method, key, .. }) => {
                    assert_eq!((method.as_str(), key.as_str()), ("fastload", "nokey"))
                }
                Err(e) => panic!("{spec} {params:?}: {e}"),
                Ok(_) => panic!("{spec} {params:?}: accepted"),
            }
        }
    }

    /// A bad variant is an error that names the problem, never a panic or a silent default.
    #[test]
    fn bad_variants_are_clear_errors() {
        let a = crate::gen::generate::<f64>("poisson2d:10").unwrap();
        let err = |spec: &str| match Plan::new(spec, &a, &cpu(&[])) {
            Ok(_) => panic!("{spec}: accepted"),
            Err(e) => e,
        };
        // a value the method refuses: the method, the key and the value are named
        match err("csr-packed[sort=maybe]") {
            e @ Error::Param { .. } => {
                let msg = e.to_string();
                assert!(
                    msg.contains("csr-packed") && msg.contains("sort") && msg.contains("maybe"),
                    "{msg}"
                );
            }
            e => panic!("csr-packed[sort=maybe]: {e}"),
        }
        // an unknown method: its name, and the list of known ones
        match err("nosuch[a=b]") {
            Error::UnknownMethod { name, available } => {
                assert_eq!(name, "nosuch");
                assert!(available.contains("fastload"), "{available}");
            }
            e => panic!("nosuch[a=b]: {e}"),
        }
        // brackets that do not pair up, and items that are not key=value
        for (spec, what) in [
            ("fastload[height=2", "unbalanced brackets"),
            ("fastload]", "unbalanced brackets"),
            ("fastload[height=2]]", "unbalanced brackets"),
            ("fastload[[height=2]]", "unbalanced brackets"),
            ("fastload[height=2]x", "unbalanced brackets"),
            ("[height=2]", "no method name"),
            ("fastload[2]", "key=value"),
        ] {
            match err(spec) {
                Error::InvalidArgument(msg) => assert!(
                    msg.contains(spec) && msg.contains(what),
                    "{spec}: {msg} (should say {what})"
                ),
                e => panic!("{spec}: {e}"),
            }
        }
    }

    /// Timing is the GPU's: on a plan that runs on the CPU (forced, or for want of a GPU)
    /// `Plan::time` and the device-vector moves around it are errors that say so, not panics.
    #[test]
    fn timing_a_cpu_plan_is_an_error() {
        let a = crate::gen::generate::<f64>("poisson2d:10").unwrap();
        let cfg = TimingConfig::default();
        let auto = PlanOptions::default();
        for opts in [cpu(&[]), auto] {
            let mut plan = Plan::new("csr-vector", &a, &opts).unwrap();
            if plan.backend() == Backend::Gpu {
                continue; // the GPU suite times GPU plans
            }
            for mode in [TimingMode::Stream, TimingMode::Graph] {
                match plan.time(mode, &cfg, 1.0, 0.0) {
                    Err(Error::MethodUnsupported { method, reason }) => {
                        assert_eq!(method, "csr-vector");
                        assert!(
                            reason.contains("Plan::time") && reason.contains("runs on the CPU"),
                            "{reason}"
                        );
                        // without a GPU the reason says why the plan is on the CPU
                        if let Some(note) = plan.fallback_note() {
                            assert!(reason.contains(note), "{reason}");
                        }
                    }
                    other => panic!("{mode}: {other:?}"),
                }
            }
            let x = vec![1.0; a.ncols()];
            let mut y = vec![0.0; a.nrows()];
            assert!(matches!(
                plan.set_device_vectors(Some(&x), None),
                Err(Error::MethodUnsupported { .. })
            ));
            assert!(matches!(
                plan.read_device_y(&mut y),
                Err(Error::MethodUnsupported { .. })
            ));
            assert!(plan.device_vectors().is_none());
            // wrong lengths are refused before anything else
            assert!(matches!(
                plan.set_device_vectors(Some(&x[1..]), None),
                Err(Error::DimensionMismatch { .. })
            ));
            assert!(matches!(
                plan.read_device_y(&mut y[1..]),
                Err(Error::DimensionMismatch { .. })
            ));
        }
    }

    #[test]
    fn plan_vectors_take_the_padded_lengths() {
        let l = |dims, padded| Shapes { dims, padded };
        // no padding: the logical lengths (y = rows, x = columns)
        assert_eq!(vector_lens(&l((5, 7), (5, 7)), 5, 7).unwrap(), (5, 7));
        // cusparse-bsr with b = 4 on 5x7: whole blocks
        assert_eq!(vector_lens(&l((5, 7), (8, 8)), 5, 7).unwrap(), (8, 8));
        // padding of one side only
        assert_eq!(vector_lens(&l((5, 8), (8, 8)), 5, 8).unwrap(), (8, 8));
        // a layout asking for less than the matrix, or reporting another shape, is refused
        for bad in [l((5, 7), (4, 7)), l((5, 7), (5, 6)), l((6, 7), (8, 8))] {
            assert!(matches!(
                vector_lens(&bad, 5, 7),
                Err(Error::InvalidArgument(_))
            ));
        }
    }
}
