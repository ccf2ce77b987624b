//! Measuring one method on one matrix: prepare (timed apart), one checked call against the
//! oracle, then timed repetitions. Shared by `spmv run` and the benchmark harness.
//!
//! On the CPU a call is timed with a wall clock around `reps` back-to-back applies. On the GPU the
//! timing protocol of [`crate::gpu::timing`] is used (CUDA events around N calls on one stream,
//! and the same N calls replayed from a CUDA graph), and the record carries both figures.

pub mod harness;
pub mod plots;
mod record;
pub mod report;
mod run;
pub mod suites;

pub use record::{byte_model, fits_l2, RunRecord, Timing};
pub use report::{load_runs, write_report, write_report_with, ReportFiles, ReportOptions};
pub use run::{BenchRun, MachineInfo, MatrixResult, MethodResult, Status};

use std::time::Instant;

use crate::cpu::{check, oracle_spmv_par, Reference};
use crate::error::Result;
use crate::gpu::{time_graph, time_stream, TimingConfig};
use crate::matrix::Csr;
use crate::methods::{find_variant, Backend, Plan, PlanOptions, PrepareFor};
use crate::scalar::Scalar;

/// How to measure.
#[derive(Clone, Debug)]
pub struct MeasureOptions {
    pub plan: PlanOptions,
    /// Untimed calls before timing.
    pub warmup: usize,
    /// Calls per timed sample (N).
    pub reps: usize,
    /// Timed samples (K); the median is reported.
    pub samples: usize,
    pub alpha: f64,
    pub beta: f64,
    /// Upper bound on one timed sample, ms: `reps` (and `warmup`) shrink for slow calls so a
    /// pathological method on a huge matrix cannot stall a run (at least one call per sample).
    pub max_sample_ms: f64,
}

impl MeasureOptions {
    /// (warm-up calls, calls per sample) for a call of about `per_call_us`.
    pub fn capped(&self, per_call_us: f64) -> (usize, usize) {
        let reps = self.reps.max(1);
        let fit = if per_call_us > 0.0 {
            (self.max_sample_ms * 1e3 / per_call_us).floor().max(1.0) as usize
        } else {
            reps
        };
        let reps = reps.min(fit);
        (self.warmup.min(reps), reps)
    }
}

impl Default for MeasureOptions {
    fn default() -> Self {
        MeasureOptions {
            plan: PlanOptions::default(),
            warmup: 3,
            reps: 20,
            samples: 5,
            alpha: 1.0,
            beta: 0.0,
            max_sample_ms: 200.0,
        }
    }
}

/// Deterministic test vector with entries in [-1, 1] (a fixed-seed SplitMix64 stream).
pub fn test_vector<T: Scalar>(n: usize, seed: u64) -> Vec<T> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            T::from_f64((z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0)
        })
        .collect()
}

/// The inputs of a measurement and the oracle's answer, computed once per matrix and precision
/// and shared by every method.
pub struct Problem<T> {
    pub alpha: T,
    pub beta: T,
    pub x: Vec<T>,
    pub y0: Vec<T>,
    pub reference: Reference,
}

impl<T: Scalar> Problem<T> {
    /// Deterministic x and y0 in [-1, 1] and the oracle's y = αAx + βy0.
    pub fn new(a: &Csr<T>, alpha: f64, beta: f64) -> Result<Self> {
        let (alpha, beta) = (T::from_f64(alpha), T::from_f64(beta));
        let x = test_vector::<T>(a.ncols(), 1);
        let y0 = test_vector::<T>(a.nrows(), 2);
        let reference = oracle_spmv_par(a, alpha, &x, beta, &y0)?;
        Ok(Problem {
            alpha,
            beta,
            x,
            y0,
            reference,
        })
    }
}

/// Prepares `method` on `a`, checks one call against the oracle, then times repeated calls.
pub fn measure<T: PrepareFor>(
    a: &Csr<T>,
    method: &str,
    opts: &MeasureOptions,
) -> Result<RunRecord> {
    let problem = Problem::new(a, opts.alpha, opts.beta)?;
    measure_problem(a, method, opts, &problem)
}

/// [`measure`] with the oracle's answer already computed.
pub fn measure_problem<T: PrepareFor>(
    a: &Csr<T>,
    method: &str,
    opts: &MeasureOptions,
    problem: &Problem<T>,
) -> Result<RunRecord> {
    let (m, variant) = find_variant(method)?;
    let info = m.info();
    let mut plan_opts = opts.plan.clone();
    for (k, v) in variant.iter() {
        plan_opts.params.set(k, v);
    }
    let mut plan = Plan::with_method(m, a, &plan_opts)?;
    let (alpha, beta, x) = (problem.alpha, problem.beta, &problem.x);
    let mut y = problem.y0.clone();
    plan.apply(alpha, x, beta, &mut y)?;
    let checked = check(&problem.reference, &y);

    let mut rec = RunRecord::new::<T>(a, &info, plan.backend(), plan.prep_times());
    rec.method = method.trim().to_string();
    rec.max_rel_err = checked.max_rel_err;
    rec.verified = checked.ok;
    rec.notes = plan.layout().notes();
    // `auto` is as deterministic as the method it chose
    if let Some((_, chosen)) = rec.notes.iter().find(|(k, _)| k == "auto chose") {
        if let Ok(c) = crate::methods::find(chosen) {
            rec.deterministic = c.info().deterministic;
        }
    }
    rec.footprint_bytes = plan.layout().footprint_bytes();
    rec.device = match plan.backend() {
        Backend::Cpu => format!("CPU ({} threads)", rayon::current_num_threads()),
        Backend::Gpu => crate::gpu::Gpu::get()
            .map(|g| g.name().to_string())
            .unwrap_or_default(),
    };
    rec.prep_stages_ms = plan
        .layout()
        .prep_stages()
        .into_iter()
        .map(|(k, d)| (k.to_string(), d.as_secs_f64() * 1e3))
        .collect();
    rec.fallback_note = plan.fallback_note().map(str::to_string);
    match plan.backend() {
        Backend::Cpu => {
            let t = Instant::now();
            plan.apply(alpha, x, beta, &mut y)?;
            let (warmup, reps) = opts.capped(t.elapsed().as_secs_f64() * 1e6);
            for _ in 0..warmup {
                plan.apply(alpha, x, beta, &mut y)?;
            }
            let mut samples = Vec::with_capacity(opts.samples.max(1));
            for _ in 0..opts.samples.max(1) {
                let t = Instant::now();
                for _ in 0..reps {
                    plan.apply(alpha, x, beta, &mut y)?;
                }
                samples.push(t.elapsed().as_secs_f64() * 1e6 / reps as f64);
            }
            rec.set_stream_timing(Timing::from_samples(samples));
        }
        Backend::Gpu => gpu_timing(&mut plan, alpha, beta, opts, &mut rec)?,
    }
    Ok(rec)
}

fn gpu_timing<T: PrepareFor>(
    plan: &mut Plan<T>,
    alpha: T,
    beta: T,
    opts: &MeasureOptions,
    rec: &mut RunRecord,
) -> Result<()> {
    let Some((gpu, layout, x, y)) = plan.device_parts() else {
        return Ok(());
    };
    let gpu = gpu.clone();
    let probe = TimingConfig {
        warmup: 1,
        calls: 1,
        samples: 1,
    };
    let one = time_stream(&gpu, &probe, || layout.run(&gpu, alpha, x, beta, y))?;
    let (warmup, calls) = opts.capped(one.median_us);
    let cfg = TimingConfig {
        warmup,
        calls,
        samples: opts.samples.max(1),
    };
    let stream = time_stream(&gpu, &cfg, || layout.run(&gpu, alpha, x, beta, y))?;
    rec.set_stream_timing(stream.into());
    match time_graph(&gpu, &cfg, || layout.run(&gpu, alpha, x, beta, y)) {
        Ok(g) => rec.graph_time = Some(g.into()),
        Err(e) => rec
            .notes
            .push(("graph timing".into(), format!("unavailable: {e}"))),
    }
    Ok(())
}
