//! `auto`: chooses a registered method for each matrix, precision and expected number of calls
//! (issue #11, "beyond the papers"). Preprocessing counts against the gain, spread over `calls`;
//! `deterministic=1` admits only bitwise-deterministic methods.
//!
//! - `mode=model` predicts each method's time from matrix features alone, with the
//!   nearest-neighbour model of [`model`] fitted from the committed H200 benchmark runs, and takes
//!   the first of its ranking.
//! - `mode=trial`, the default (chosen on the tuning split, `docs/results/tuning-split.md`), prepares the model's first `trial` candidates, times each briefly on the device
//!   ([`TRIAL_TIMING`], through `gpu/timing.rs`) and keeps the fastest: its host layout and its
//!   device copy, so nothing is prepared or uploaded twice. The trial is preprocessing and is
//!   reported as such (auto's prepare time holds it). Candidates beyond the first are tried only
//!   while their predicted preprocessing and trial calls stay within [`TRIAL_BUDGET`] of the
//!   predicted run (`calls` × time per call): for a few calls on a small matrix the trial would
//!   cost more than it can win, and `trial` then does what `model` does.
//!
//! Without a GPU it takes the CPU production path `csr` (in trial mode too, with a note). When
//! the choice has no CPU executor (cuSPARSE), a `csr` layout is built as well and serves a forced
//! CPU backend. The chosen method's layout is used as it is; its notes say what was chosen and
//! why.
//!
//! ```
//! use spmvkit::{gen, Plan, PlanOptions};
//! use spmvkit::methods::Params;
//! let a = gen::generate::<f64>("poisson2d:50").unwrap();
//! // The GPU when one is usable, else the CPU (then `auto` takes `csr`).
//! let params = Params::parse(["calls=1000000", "trial=2"]).unwrap();
//! let opts = PlanOptions { params, ..Default::default() };
//! let mut plan = Plan::new("auto", &a, &opts).unwrap();
//! let x = vec![1.0; a.ncols()];
//! let mut y = vec![0.0; a.nrows()];
//! plan.apply(1.0, &x, 0.0, &mut y).unwrap();
//! // the method it chose, typed; the notes say the same for people
//! let chosen = plan.chosen().unwrap().info().name;
//! assert!(plan.layout().notes().iter().any(|(k, v)| k == "auto chose" && v == chosen));
//! ```

pub mod model;

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use cudarc::driver::CudaSlice;

use self::model::{Features, Knobs, Model};
use crate::error::{Error, Result};
use crate::gpu::{self, Gpu, TimingConfig};
use crate::matrix::{
    csr_matrix_bytes, x_sector_share, Csr, MatrixStats, RowStats, SHARE_SAMPLE_CHUNKS,
};
use crate::methods::params::{declares, keywords, params, Flag, CPU_FALLBACK_PARAM};
use crate::methods::spmm::{MultiKernel, MultiLayout, MultiSource};
use crate::methods::{
    find, DeviceLayout, Layout, Method, MethodInfo, ParamSpec, Params, PrepareFor,
};
use crate::scalar::{Precision, Scalar};

/// The registry name of `auto`.
pub const NAME: &str = "auto";

/// The key of the note that names, for people, the method `auto` chose (`auto chose` →
/// `csr-vector`). Code asks the layout ([`Layout::chosen`], [`crate::Plan::chosen`]); only saved
/// run records, which keep notes and no layout, are read back through this key
/// (`bench::report::auto_choice`).
pub const CHOSE_NOTE: &str = "auto chose";

params! {
    /// The parameters of `auto`.
    struct AutoParams {
        /// trial: time the model's first `trial` candidates on the device and keep the fastest,
        /// when `calls` repay the trial (else as model); model: choose from matrix features with
        /// the model fitted from docs/results, never timing (trial is the default: chosen on the
        /// tuning split, docs/results/tuning-split.md)
        mode: Mode = trial;
        /// expected SpMV calls on this matrix; preprocessing is spread over them (1: a one-shot
        /// call favours cheap setups)
        calls: f64 = 1000, in 1.0..;
        /// 1: choose only methods whose results are bitwise reproducible
        deterministic: Flag = 0;
        /// training matrices consulted (nearest neighbours in feature space), 1..=50
        k: usize = 4, in 1..=50;
        /// mode=trial: how many of the model's best candidates to time, 1..=10
        trial: usize = 3, in 1..=10;
        /// 1: the layout may run on the CPU: no timed trial (it would time GPU kernels), and when
        /// the choice has no CPU executor (cuSPARSE) a csr layout is prepared too; a Plan on the
        /// GPU sets 0, since it never takes that path (saves a copy of the matrix)
        cpu_fallback: Flag = 1;
        /// 1: apply_multi chooses per (k, order) by a timed trial on the device (spmvkit's
        /// row-split and merge-path SpMM, csr-packed's where the matrix packs to at most half
        /// of CSR's bytes, cuSPARSE SpMM, k calls of the chosen SpMV; docs/spmm.md), keeping a
        /// csr copy of the matrix when the chosen method has no SpMM kernel of its own; 0: k
        /// calls of the chosen method (no copy)
        spmm: Flag = 1;
    }
}

const PARAMS: &[ParamSpec] = AutoParams::SPECS;
const _: () = assert!(declares(PARAMS, CPU_FALLBACK_PARAM));

/// How each trial candidate is timed: 3 warm-up calls, then the median of 3 samples of 5
/// back-to-back calls (stream timing).
pub const TRIAL_TIMING: TimingConfig = TimingConfig {
    warmup: 3,
    calls: 5,
    samples: 3,
};

/// Calls one trial candidate costs ([`TRIAL_TIMING`]).
pub const TRIAL_CALLS: usize = 3 + 5 * 3;

/// Share of the predicted run (`calls` × predicted µs per call) that the extra candidates of a
/// trial may cost (their predicted preprocessing and [`TRIAL_CALLS`] calls each): 5 %, chosen on
/// the tuning split (`docs/results/tuning-split.md`), so that a trial costs less than the 10 % it
/// is there to win.
pub const TRIAL_BUDGET: f64 = 0.05;

/// The default of the `trial` parameter: candidates a trial times (chosen on the tuning split,
/// `docs/results/tuning-split.md`).
pub const DEFAULT_TRIAL: usize = 3;

keywords! {
    /// How `auto` chooses.
    pub enum Mode {
        /// Matrix features only.
        Model = "model",
        /// A short timed trial of the model's first candidates.
        Trial = "trial",
    }
}

/// The registry entry of `auto`.
pub struct Auto;

/// What `auto` decided for one matrix.
#[derive(Clone, Debug)]
pub struct Choice {
    pub method: &'static str,
    /// Predicted µs per call, preprocessing spread over `calls` included (None on the CPU path).
    pub predicted_us: Option<f64>,
    pub reason: String,
    /// The model's candidates for a trial, best predicted first (`method` first; only `method`
    /// in model mode, on the CPU path, or when the budget admits no other).
    pub candidates: Vec<&'static str>,
}

struct Opts {
    mode: Mode,
    calls: f64,
    deterministic: bool,
    k: usize,
    trial: usize,
    cpu_fallback: bool,
    spmm: bool,
}

fn parse(params: &Params) -> Result<Opts> {
    let p = AutoParams::from_params(NAME, params)?;
    Ok(Opts {
        mode: p.mode,
        calls: p.calls,
        deterministic: p.deterministic.is_set(),
        k: p.k,
        trial: p.trial,
        cpu_fallback: p.cpu_fallback.is_set(),
        spmm: p.spmm.is_set(),
    })
}

/// The `calls` an `auto` parameter list runs with (its default when not given); None when the
/// list is not valid for `auto`.
pub fn calls_of(params: &Params) -> Option<f64> {
    AutoParams::from_params(NAME, params).ok().map(|p| p.calls)
}

/// The methods of a trial, as indices into `ranked` (best predicted first): the first always,
/// then the next ones up to `n` while their predicted preprocessing plus [`TRIAL_CALLS`] calls
/// each stay within [`TRIAL_BUDGET`] of `calls` × the first's predicted µs per call. The held-out
/// evaluation ([`crate::bench::auto::eval`]) simulates trials with this same rule.
pub fn trial_candidates(ranked: &[model::Prediction], n: usize, calls: f64) -> Vec<usize> {
    trial_candidates_within(ranked, n, calls, TRIAL_BUDGET)
}

/// [`trial_candidates`] with another budget (a share of the predicted run), for tuning it.
pub fn trial_candidates_within(
    ranked: &[model::Prediction],
    n: usize,
    calls: f64,
    budget: f64,
) -> Vec<usize> {
    let Some(first) = ranked.first() else {
        return Vec::new();
    };
    let budget = budget * calls * first.call_us;
    let mut spent = 0.0;
    let mut out = vec![0];
    for (i, p) in ranked.iter().enumerate().skip(1).take(n.saturating_sub(1)) {
        spent += p.prep_us + TRIAL_CALLS as f64 * p.call_us;
        if spent > budget {
            break;
        }
        out.push(i);
    }
    out
}

/// The method `auto` would run for `a` (with these parameters) on this machine, and in trial
/// mode the candidates it would time: only for a GPU layout (`cpu_fallback=0`, which a Plan on
/// the GPU sets); a layout that may run on the CPU keeps the model's choice.
pub fn choose<T: Scalar>(a: &Csr<T>, params: &Params) -> Result<Choice> {
    let o = parse(params)?;
    let gpu = match Gpu::get() {
        Ok(g) => g,
        Err(e) => {
            let trial = if o.mode == Mode::Trial {
                "; a trial needs a GPU, so the model's CPU choice stands"
            } else {
                ""
            };
            return Ok(Choice {
                method: "csr",
                predicted_us: None,
                reason: format!("no GPU ({e}): the CPU path{trial}"),
                candidates: vec!["csr"],
            });
        }
    };
    // the row statistics alone: the model reads no column count
    let rows = RowStats::of(a);
    let fits = crate::matrix::fits_l2(
        rows.nrows,
        rows.ncols,
        rows.nnz,
        gpu.l2_bytes().map(|b| b as u64),
    );
    let share = sampled_x_share(a, T::PRECISION, fits);
    let features = Features::from_rows(&rows, fits, share);
    let mut choice = explain_features(features, rows.nnz, T::PRECISION, params)?.choice;
    if o.cpu_fallback && choice.candidates.len() > 1 {
        // The layout may run on the CPU (a Plan on the CPU, or a direct prepare): a trial would
        // time GPU kernels for it, and make two such plans of one matrix choose differently.
        choice.candidates.truncate(1);
        choice
            .reason
            .push_str("; no trial: the layout may run on the CPU (cpu_fallback=1)");
    }
    Ok(choice)
}

/// The x share (x sectors per nonzero in `precision`) that `auto` feeds its model, estimated from
/// at most [`SHARE_SAMPLE_CHUNKS`] chunks so that its cost does not grow with the matrix; None
/// where the matrix fits the L2, since the feature is 0 there whatever the columns
/// ([`Features::new`]), or where it has no nonzeros.
pub fn sampled_x_share<T: Scalar>(a: &Csr<T>, precision: Precision, fits_l2: bool) -> Option<f64> {
    if fits_l2 {
        return None;
    }
    x_sector_share(a, SHARE_SAMPLE_CHUNKS).map(|s| match precision {
        Precision::F32 => s.0,
        Precision::F64 => s.1,
    })
}

/// What the model chooses, with these parameters, for a matrix with statistics `stats` in
/// `precision`, `fits_l2` saying whether its working set fits the GPU's L2
/// ([`crate::matrix::fits_l2`]): `auto`'s GPU choice, computed without a GPU (`spmv auto pick`,
/// the evaluation of held-out runs). The x share (x sectors per nonzero) is the statistics'
/// count where they have one.
pub fn model_choice(
    stats: &MatrixStats,
    fits_l2: bool,
    precision: Precision,
    params: &Params,
) -> Result<Choice> {
    Ok(model_explain(stats, None, fits_l2, precision, params)?.choice)
}

/// The model's choice with its reasons: the ranking and the neighbours it came from.
#[derive(Clone, Debug)]
pub struct Explained {
    pub choice: Choice,
    /// Every allowed method's prediction, best first.
    pub ranking: Vec<(&'static str, model::Prediction)>,
    /// The training matrices consulted, nearest first, with their distances.
    pub neighbours: Vec<(String, f64)>,
}

/// [`model_choice`] with its ranking and neighbours. `x_share`: x sectors per nonzero when
/// estimated apart from `stats` (auto samples it: [`crate::matrix::x_sector_share`]); None takes
/// the statistics' count, if any.
pub fn model_explain(
    stats: &MatrixStats,
    x_share: Option<f64>,
    fits_l2: bool,
    precision: Precision,
    params: &Params,
) -> Result<Explained> {
    let features = Features::from_stats(stats, fits_l2, precision, x_share);
    explain_features(features, stats.nnz, precision, params)
}

/// [`model_explain`] from the features of a matrix of `nnz` nonzeros.
fn explain_features(
    features: Features,
    nnz: usize,
    precision: Precision,
    params: &Params,
) -> Result<Explained> {
    let o = parse(params)?;
    let model = Model::shipped()?;
    // only the methods that read the plan's value storage are ranked (docs/precision.md), so
    // the choice is the best predicted of them, not a fixed substitute for a non-reader
    let storage = crate::methods::common::stored::storage_of(params)?;
    let allowed: Vec<bool> = allowed_methods(model, o.deterministic)
        .into_iter()
        .zip(&model.methods)
        .map(|(ok, m)| ok && find(m).is_ok_and(|f| f.info().supports(storage)))
        .collect();
    let knobs = Knobs::with_k(o.k);
    let ranked = model.rank(
        &features,
        nnz as f64,
        precision,
        &allowed,
        o.calls,
        &knobs,
        |_| true,
    );
    let first = ranked.first().ok_or_else(|| Error::MethodUnsupported {
        method: NAME.into(),
        reason: format!(
            "the model has no {precision} training data for the allowed methods (values stored \
             in {storage})"
        ),
    })?;
    let n = if o.mode == Mode::Trial { o.trial } else { 1 };
    let name = |i: usize| find(&model.methods[i]).map(|m| m.info().name);
    let candidates = trial_candidates(&ranked, n, o.calls)
        .into_iter()
        .map(|i| name(ranked[i].method))
        .collect::<Result<Vec<_>>>()?;
    let ranking = ranked
        .iter()
        .map(|p| name(p.method).map(|n| (n, *p)))
        .collect::<Result<Vec<_>>>()?;
    let neighbours = model
        .nearest(&features, precision, &knobs, |_| true)
        .into_iter()
        .map(|(d, s)| (s.matrix.clone(), d))
        .collect();
    let choice = Choice {
        method: candidates[0],
        predicted_us: Some(first.us),
        reason: format!(
            "model: {} nearest of {} training matrices ({precision}), {} calls{}",
            o.k,
            model.samples.len(),
            o.calls,
            if o.deterministic {
                ", deterministic methods only"
            } else {
                ""
            }
        ),
        candidates,
    };
    Ok(Explained {
        choice,
        ranking,
        neighbours,
    })
}

/// Which of the model's methods `auto` may choose: registered, with a GPU executor, and
/// bitwise-deterministic when asked.
pub fn allowed_methods(model: &Model, deterministic: bool) -> Vec<bool> {
    model
        .methods
        .iter()
        .map(|m| {
            find(m).is_ok_and(|f| {
                let i = f.info();
                i.gpu && (!deterministic || i.deterministic)
            })
        })
        .collect()
}

/// Times one prepared trial candidate: its µs per call. The GPU timer uploads and times on the
/// device; tests inject a fake.
pub trait TrialTimer<T: Scalar> {
    fn time(&mut self, method: &'static str, layout: &dyn Layout<T>) -> Result<f64>;
    /// The device copy made while timing `method`, if the timer keeps one (the winner's is
    /// reused instead of uploading again).
    fn take_device(&mut self, method: &'static str) -> Option<Box<dyn DeviceLayout<T>>>;
}

/// The device timer: uploads each candidate, times it with [`TRIAL_TIMING`] on x = 1, β = 0,
/// and keeps the device copies until the winner's is taken.
struct GpuTimer<T: Scalar> {
    gpu: Arc<Gpu>,
    x: CudaSlice<T>,
    y: CudaSlice<T>,
    kept: Vec<(&'static str, Box<dyn DeviceLayout<T>>)>,
}

impl<T: Scalar> GpuTimer<T> {
    fn new(gpu: Arc<Gpu>, nrows: usize, ncols: usize) -> Result<Self> {
        let x = gpu.upload(&vec![T::one(); ncols.max(1)])?;
        let y = gpu.alloc_zeros(nrows.max(1))?;
        Ok(GpuTimer {
            gpu,
            x,
            y,
            kept: Vec::new(),
        })
    }
}

impl<T: Scalar> TrialTimer<T> for GpuTimer<T> {
    fn time(&mut self, method: &'static str, layout: &dyn Layout<T>) -> Result<f64> {
        self.gpu.ensure_fits(
            &format!("{method} layout (auto trial)"),
            layout.footprint_bytes(),
        )?;
        let dl = layout.upload(&self.gpu)?;
        let (gpu, x, y) = (&self.gpu, &self.x, &mut self.y);
        let t = gpu::timing::time_stream(gpu, &TRIAL_TIMING, || {
            dl.run(gpu, T::one(), x, T::zero(), y)
        })?;
        self.kept.push((method, dl));
        Ok(t.median_us)
    }
    fn take_device(&mut self, method: &'static str) -> Option<Box<dyn DeviceLayout<T>>> {
        let i = self.kept.iter().position(|(m, _)| *m == method)?;
        let dl = self.kept.swap_remove(i).1;
        self.kept.clear();
        Some(dl)
    }
}

/// One candidate's trial: prepare and device time (or why it could not run).
#[derive(Clone, Debug)]
pub struct TrialEntry {
    pub method: &'static str,
    /// Host preparation, then µs per call on the device.
    pub outcome: std::result::Result<(Duration, f64), String>,
}

/// The outcome of a trial: the winner's layout, what each candidate did, and the trial's time.
pub struct TrialOutcome<T: Scalar> {
    pub winner: &'static str,
    pub layout: Box<dyn Layout<T>>,
    pub device: Option<Box<dyn DeviceLayout<T>>>,
    pub entries: Vec<TrialEntry>,
    pub elapsed: Duration,
}

/// Prepares each candidate with `prepare`, times it with `timer` and keeps the fastest per call
/// (what was spent preparing the others is spent either way). A candidate that fails to prepare
/// or to run is passed over and named in the entries; when all fail, the first failure is the
/// error.
pub fn run_trial<T: Scalar>(
    candidates: &[&'static str],
    prepare: impl Fn(&'static dyn Method) -> Result<Box<dyn Layout<T>>>,
    timer: &mut dyn TrialTimer<T>,
) -> Result<TrialOutcome<T>> {
    let t0 = Instant::now();
    let mut entries = Vec::new();
    let mut best: Option<(&'static str, Box<dyn Layout<T>>, f64)> = None;
    let mut first_err = None;
    for &name in candidates {
        let t1 = Instant::now();
        let timed = find(name).and_then(&prepare).and_then(|l| {
            let prep = t1.elapsed();
            timer.time(name, l.as_ref()).map(|us| (l, prep, us))
        });
        match timed {
            Ok((l, prep, us)) => {
                entries.push(TrialEntry {
                    method: name,
                    outcome: Ok((prep, us)),
                });
                if best.as_ref().is_none_or(|(_, _, b)| us < *b) {
                    best = Some((name, l, us));
                }
            }
            Err(e) => {
                entries.push(TrialEntry {
                    method: name,
                    outcome: Err(e.to_string()),
                });
                first_err.get_or_insert(e);
            }
        }
    }
    let Some((winner, layout, _)) = best else {
        return Err(first_err.unwrap_or_else(|| {
            Error::InvalidArgument("auto trial: no candidates to time".into())
        }));
    };
    let device = timer.take_device(winner);
    Ok(TrialOutcome {
        winner,
        layout,
        device,
        entries,
        elapsed: t0.elapsed(),
    })
}

/// The chosen method's layout, with `auto`'s notes added. When the chosen method has no CPU
/// executor (cuSPARSE), a `csr` layout serves the CPU backend, unless `cpu_fallback=0` (a GPU
/// plan) left it out: the CPU path then reports the chosen method's own refusal. After a trial, the winner's
/// device copy waits in `device` for the first `upload`.
struct AutoLayout<T: Scalar> {
    inner: Box<dyn Layout<T>>,
    cpu_fallback: Option<Box<dyn Layout<T>>>,
    /// A `csr` layout kept for the multi-vector path when the chosen one has no SpMM kernel.
    spmm_csr: Option<Box<dyn Layout<T>>>,
    /// `spmm=1`: multi-vector calls choose per (k, order) ([`MultiKernel::Auto`]);
    /// `deterministic=1`: among deterministic candidates only.
    spmm: SpmmOffer,
    /// `csr-packed`'s layout for the SpMM trial ([`Layout::multi_extra`]), made on the first
    /// trial that asks.
    packed: OnceLock<PackedSpmm<T>>,
    /// The registered method named by `choice.method` ([`Layout::chosen`]).
    chosen: &'static dyn Method,
    choice: Choice,
    trial: Option<(Vec<TrialEntry>, Duration)>,
    device: Mutex<Option<Box<dyn DeviceLayout<T>>>>,
}

/// `csr-packed`'s layout of the matrix for `auto`'s SpMM trial, when it packs well
/// ([`packs_well`]), with its preparation time and a note saying what was found.
struct PackedSpmm<T: Scalar> {
    layout: Option<Box<dyn Layout<T>>>,
    took: Duration,
    note: String,
}

/// The note key of [`PackedSpmm`].
const PACKED_NOTE: &str = "auto spmm csr-packed";

/// Whether `csr-packed`'s layout of `packed` bytes packs a matrix well enough for its k-vector
/// kernel to be one of `auto`'s SpMM candidates: at most half the `csr` bytes of the CSR matrix
/// the other SpMM kernels read ([`csr_matrix_bytes`]). Why half: a k-vector call moves the matrix once and
/// the X and Y blocks k times, so the packed layout can only win where it removes a large
/// share of the matrix traffic, and it pays for that in decoding (once per pass of C
/// vectors); it won where it held 1–2 bytes a nonzero against CSR's 8 (f32: 3.00× cuSPARSE
/// SpMM against the tiles' 2.33× at k = 8 on the stencils) and lost or tied at 1/6 of CSR in
/// f64 (0.73–1.05× the tiles), docs/results/h200/2026-11-25/spmm-third/. Half keeps every
/// matrix of that kind and spares the trial (an upload and 10 calls) on matrices whose codes
/// barely shrink (random columns with raw values: 32-bit column codes).
pub(crate) fn packs_well(packed: u64, csr: u64) -> bool {
    2 * packed <= csr
}

impl<T: PrepareFor> AutoLayout<T> {
    /// Prepares `csr-packed` on the SpMM matrix (with the plan's `storage=`) and keeps it when
    /// it packs well.
    fn pack(&self) -> PackedSpmm<T> {
        let t0 = Instant::now();
        let made = self.multi().map(|src| {
            let m = find("csr-packed")?;
            T::prepare_with(m, src.a, &self.spmm.given).map(|l| (l, src.a.nrows(), src.a.nnz()))
        });
        let took = t0.elapsed();
        let ms = took.as_secs_f64() * 1e3;
        let (layout, note) = match made {
            None => (None, "no CSR matrix to pack".to_string()),
            Some(Err(e)) => (None, format!("not a candidate: {e}")),
            Some(Ok((l, nrows, nnz))) => {
                let bytes = l.footprint_bytes() as u64;
                let per = |b: u64| b as f64 / nnz.max(1) as f64;
                let csr = csr_matrix_bytes(nrows, nnz, T::BYTES);
                let well = packs_well(bytes, csr);
                let note = format!(
                    "{:.2} bytes per nonzero against CSR's {:.2}: {} (prepared in {ms:.2} ms, \
                     counted as preparation)",
                    per(bytes),
                    per(csr),
                    if well {
                        "a candidate of the SpMM trial"
                    } else {
                        "not a candidate (more than half of CSR's bytes)"
                    }
                );
                (well.then_some(l), note)
            }
        };
        PackedSpmm { layout, took, note }
    }
}

impl<T: PrepareFor> Layout<T> for AutoLayout<T> {
    fn footprint_bytes(&self) -> usize {
        self.inner.footprint_bytes()
    }
    fn run_cpu(&self, alpha: T, x: &[T], beta: T, y: &mut [T]) -> Result<()> {
        self.cpu_fallback
            .as_ref()
            .unwrap_or(&self.inner)
            .run_cpu(alpha, x, beta, y)
    }
    fn upload(&self, gpu: &Arc<Gpu>) -> Result<Box<dyn DeviceLayout<T>>> {
        let kept = self.device.lock().ok().and_then(|mut d| d.take());
        match kept {
            Some(dl) => Ok(dl),
            None => self.inner.upload(gpu),
        }
    }
    fn values_mut(&mut self) -> Option<&mut [T]> {
        // With a CPU fallback layout the values live twice; an update re-prepares.
        if self.cpu_fallback.is_some() {
            return None;
        }
        self.inner.values_mut()
    }
    /// `update_values` asks this first: the kept SpMM copy takes the new values (CSR order, as
    /// given), and `None` lets the plan update the chosen layout as it would without the copy
    /// (gather into [`Layout::values_mut`], else re-prepare, which makes a new copy).
    fn reencode_values(
        &mut self,
        _pattern: &crate::matrix::Pattern,
        vals: &[T],
    ) -> Option<std::result::Result<(), String>> {
        // the packed layout for the SpMM trial holds the old values: made again when asked
        self.packed = OnceLock::new();
        if let Some(v) = self.spmm_csr.as_mut().and_then(|c| c.values_mut()) {
            if v.len() == vals.len() {
                v.copy_from_slice(vals);
            }
        }
        None
    }
    /// With `spmm=1`, the CSR matrix of the chosen layout, its CPU fallback or the kept copy,
    /// for [`MultiKernel::Auto`] (the plan times its candidates per shape); with `spmm=0`, the
    /// chosen layout's own kernel, if any.
    fn multi(&self) -> Option<MultiSource<'_, T>> {
        let own = self.inner.multi();
        if !self.spmm.on {
            return own;
        }
        let src = own
            .or_else(|| self.cpu_fallback.as_ref()?.multi())
            .or_else(|| self.spmm_csr.as_ref()?.multi())?;
        Some(MultiSource {
            kernel: MultiKernel::Auto,
            deterministic: self.spmm.deterministic,
            ..src
        })
    }
    /// The chosen layout's own multi-vector kernel (`csr-packed`): the path with `spmm=0`, one
    /// more candidate of the trial with `spmm=1`.
    fn multi_layout(&self) -> Option<&dyn MultiLayout<T>> {
        self.inner.multi_layout()
    }
    /// With `spmm=1` and a choice other than `csr-packed`: `csr-packed`'s layout of the
    /// matrix, prepared on the first call (the SpMM trial's) and offered when it packs well
    /// ([`packs_well`]).
    fn multi_extra(&self) -> Option<&dyn MultiLayout<T>> {
        if !self.spmm.on || self.inner.multi_layout().is_some() {
            return None;
        }
        let packed = self.packed.get_or_init(|| self.pack());
        packed.layout.as_ref()?.multi_layout()
    }
    fn late_prep(&self) -> Duration {
        self.packed.get().map_or(Duration::ZERO, |p| p.took)
    }
    fn prep_stages(&self) -> Vec<(&'static str, Duration)> {
        let mut s = self.inner.prep_stages();
        if let Some((_, d)) = &self.trial {
            s.push(("auto trial", *d));
        }
        if let Some(p) = self.packed.get() {
            s.push((PACKED_NOTE, p.took));
        }
        s
    }
    fn chosen(&self) -> Option<&'static dyn Method> {
        Some(self.chosen)
    }
    fn notes(&self) -> Vec<(String, String)> {
        let mut n = vec![
            (CHOSE_NOTE.to_string(), self.choice.method.to_string()),
            ("auto reason".to_string(), self.choice.reason.clone()),
        ];
        if let Some(us) = self.choice.predicted_us {
            n.push(("auto predicted µs per call".into(), format!("{us:.2}")));
        }
        if let Some(path) = std::env::var_os(model::TABLE_ENV) {
            n.push(("auto table".into(), path.to_string_lossy().into_owned()));
        }
        if let Some((entries, elapsed)) = &self.trial {
            let list: Vec<String> = entries
                .iter()
                .map(|e| match &e.outcome {
                    Ok((prep, us)) => format!(
                        "{} {us:.2} µs (prep {:.2} ms)",
                        e.method,
                        prep.as_secs_f64() * 1e3
                    ),
                    Err(msg) => format!("{} failed: {msg}", e.method),
                })
                .collect();
            n.push((
                "auto trial".into(),
                format!(
                    "{}; {:.2} ms in all, counted as preprocessing",
                    list.join(", "),
                    elapsed.as_secs_f64() * 1e3
                ),
            ));
        }
        if let Some(p) = self.packed.get() {
            n.push((PACKED_NOTE.into(), p.note.clone()));
        }
        if self.cpu_fallback.is_some() {
            n.push((
                "auto CPU path".into(),
                format!("csr ({} has no CPU executor)", self.choice.method),
            ));
        }
        n.extend(self.inner.notes());
        n
    }
}

fn prepare<T: PrepareFor>(
    a: &Csr<T>,
    params: &Params,
    delegate: impl Fn(&'static dyn Method) -> Result<Box<dyn Layout<T>>>,
) -> Result<Box<dyn Layout<T>>> {
    let mut choice = choose(a, params)?;
    let (inner, trial, device) = if choice.candidates.len() > 1 {
        let gpu = Gpu::get()?;
        let mut timer = GpuTimer::new(gpu, a.nrows(), a.ncols())?;
        let out = run_trial(&choice.candidates, &delegate, &mut timer)?;
        choice.method = out.winner;
        choice.reason = format!(
            "{}; trial of {} candidates",
            choice.reason,
            choice.candidates.len()
        );
        (out.layout, Some((out.entries, out.elapsed)), out.device)
    } else {
        (delegate(find(choice.method)?)?, None, None)
    };
    let o = parse(params)?;
    let spmm = SpmmOffer {
        on: o.spmm,
        deterministic: o.deterministic,
        given: storage_params(params),
    };
    finish(
        choice,
        inner,
        trial,
        device,
        (o.cpu_fallback.then_some("csr"), spmm),
        &delegate,
    )
}

/// What `auto`'s layout offers multi-vector calls: `spmm=1` ([`MultiKernel::Auto`], a timed
/// trial per shape) or not, with `deterministic=1` only deterministic candidates, and the
/// parameters the chosen method was prepared with (the plan's `storage=`), which `csr-packed`'s
/// layout for the trial takes too.
#[derive(Clone, Debug, Default)]
struct SpmmOffer {
    on: bool,
    deterministic: bool,
    given: Params,
}

/// Wraps the chosen layout, adding a layout of `fallback` (`csr`; `csr-vector` on 64-bit
/// offsets) for the CPU path when the choice has no CPU executor, and a `csr` one for the
/// multi-vector path (`spmm=1`) when the choice has no SpMM kernel and no CPU fallback was made
/// (the fallback serves both).
fn finish<T: PrepareFor>(
    choice: Choice,
    inner: Box<dyn Layout<T>>,
    trial: Option<(Vec<TrialEntry>, Duration)>,
    device: Option<Box<dyn DeviceLayout<T>>>,
    (fallback, spmm): (Option<&'static str>, SpmmOffer),
    delegate: &impl Fn(&'static dyn Method) -> Result<Box<dyn Layout<T>>>,
) -> Result<Box<dyn Layout<T>>> {
    let chosen = find(choice.method)?;
    let cpu_fallback = match fallback {
        Some(name) if !chosen.info().cpu => Some(delegate(find(name)?)?),
        _ => None,
    };
    let spmm_csr = if spmm.on && inner.multi().is_none() && cpu_fallback.is_none() {
        Some(delegate(find("csr")?)?)
    } else {
        None
    };
    Ok(Box::new(AutoLayout {
        inner,
        cpu_fallback,
        spmm_csr,
        spmm,
        packed: OnceLock::new(),
        chosen,
        choice,
        trial,
        device: Mutex::new(device),
    }))
}

impl Method for Auto {
    fn info(&self) -> MethodInfo {
        MethodInfo {
            name: NAME,
            summary: "chooses a method per matrix, precision and expected calls (nearest-neighbour model fitted from docs/results, optionally a timed trial of its best candidates; CPU: csr)",
            source: "spmvkit (issue #11)",
            deterministic: false,
            gpu: true,
            cpu: true,
            params: PARAMS,
            values: &crate::scalar::ValueStorage::NARROW,
            offsets64: true,
        }
    }

    fn prepare_f32(&self, csr: &Csr<f32>, params: &Params) -> Result<Box<dyn Layout<f32>>> {
        let given = storage_params(params);
        prepare(csr, params, |m| m.prepare_f32(csr, &given))
    }

    fn prepare_f64(&self, csr: &Csr<f64>, params: &Params) -> Result<Box<dyn Layout<f64>>> {
        let given = storage_params(params);
        prepare(csr, params, |m| m.prepare_f64(csr, &given))
    }

    fn prepare_wide_f32(
        &self,
        csr: &Csr<f32, u64>,
        params: &Params,
    ) -> Result<Box<dyn Layout<f32>>> {
        let given = storage_params(params);
        prepare_wide(params, (csr.nrows(), csr.ncols()), |m| {
            m.prepare_wide_f32(csr, &given)
        })
    }

    fn prepare_wide_f64(
        &self,
        csr: &Csr<f64, u64>,
        params: &Params,
    ) -> Result<Box<dyn Layout<f64>>> {
        let given = storage_params(params);
        prepare_wide(params, (csr.nrows(), csr.ncols()), |m| {
            m.prepare_wide_f64(csr, &given)
        })
    }
}

/// The methods `auto` considers for a matrix with 64-bit row offsets, in the order it prefers
/// them without a trial: csr-vector (the best row-split kernel), then cuSPARSE.
const WIDE_CANDIDATES: [&str; 3] = ["csr-vector", "cusparse-alg2", "cusparse-alg1"];

/// `auto` on a matrix with 64-bit row offsets (docs/offsets.md): its model's table holds no such
/// matrix, so it skips every method that does not take them ([`MethodInfo::offsets64`]) and
/// times the first `trial` of [`WIDE_CANDIDATES`] that read the value storage (`mode=trial` on a
/// GPU), or takes the first
/// (`mode=model`, or no GPU). A cuSPARSE winner serves a CPU backend through csr-vector's
/// mirror (`cpu_fallback=0` leaves it out); no SpMM copy (a 32-bit layout).
fn prepare_wide<T: PrepareFor>(
    params: &Params,
    (nrows, ncols): (usize, usize),
    delegate: impl Fn(&'static dyn Method) -> Result<Box<dyn Layout<T>>>,
) -> Result<Box<dyn Layout<T>>> {
    let o = parse(params)?;
    let storage = crate::methods::common::stored::storage_of(params)?;
    let mut candidates: Vec<&'static str> = WIDE_CANDIDATES
        .into_iter()
        .filter(|n| {
            find(n).is_ok_and(|m| {
                let i = m.info();
                i.offsets64 && i.supports(storage) && (!o.deterministic || i.deterministic)
            })
        })
        .collect();
    let gpu = Gpu::get().ok();
    let n = match (&gpu, o.mode) {
        (Some(_), Mode::Trial) => o.trial.max(1),
        _ => 1,
    };
    candidates.truncate(n);
    let first = *candidates.first().ok_or_else(|| Error::MethodUnsupported {
        method: NAME.into(),
        reason: "no method takes 64-bit row offsets under these parameters".into(),
    })?;
    let mut choice = Choice {
        method: first,
        predicted_us: None,
        reason: "64-bit row offsets: the methods that take them, the best row-split kernel first"
            .into(),
        candidates,
    };
    let (inner, trial, device) = match gpu {
        Some(gpu) if choice.candidates.len() > 1 => {
            let mut timer = GpuTimer::new(gpu, nrows, ncols)?;
            let out = run_trial(&choice.candidates, &delegate, &mut timer)?;
            choice.method = out.winner;
            choice.reason = format!("{}; trial of {}", choice.reason, choice.candidates.len());
            (out.layout, Some((out.entries, out.elapsed)), out.device)
        }
        _ => (delegate(find(first)?)?, None, None),
    };
    // a GPU winner without a CPU executor (cuSPARSE) gets csr-vector's CPU mirror, which takes
    // 64-bit offsets, for a CPU backend
    let fallback = o.cpu_fallback.then_some("csr-vector");
    let spmm = SpmmOffer::default();
    finish(choice, inner, trial, device, (fallback, spmm), &delegate)
}

/// What `auto` passes on to the method it chose: the plan's `storage=` (docs/precision.md), only.
fn storage_params(params: &Params) -> Params {
    let mut p = Params::new();
    if let Some(v) = params.get(crate::methods::VALUES_PARAM) {
        p.set(crate::methods::VALUES_PARAM, v);
    }
    p
}

#[cfg(test)]
mod tests;
