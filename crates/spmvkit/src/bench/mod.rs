//! Measuring one method on one matrix: prepare (timed apart), one checked call against the
//! oracle, then timed repetitions. Shared by `spmv run` and the benchmark harness.
//!
//! On the CPU a call is timed with a wall clock around `reps` back-to-back applies. On the GPU the
//! plan times itself ([`Plan::time`], the timing protocol of [`crate::gpu::timing`]: CUDA events
//! around N calls on one stream, and the same N calls replayed from a CUDA graph), and the record
//! carries both figures.
//!
//! Every timed loop is checked too, not only the first call: y starts each loop from y0, every
//! call of the loop updates it, and after the loop it is compared with the oracle's expectation
//! after that many calls ([`Reference::after_calls`]), so a method that keeps state across calls
//! (tickets, workspace rows, flags) or takes another path inside a graph capture is caught when a
//! later call goes wrong ([`LaterCheck`]).
//!
//! With values stored narrower than x and y ([`PlanOptions::values`], issue #25,
//! docs/precision.md) the oracle computes from the stored values ([`stored_problem`]), and what
//! the rounding did to the input is a set of notes of its own ([`conversion_notes`]).
//!
//! A matrix of either row-offset width is measured the same way (`Csr<T, O>`, docs/offsets.md);
//! a plan with 64-bit offsets says so in a note and its byte model counts 8-byte offsets.

pub mod auto;
pub mod harness;
pub mod limits;
pub mod multi;
pub mod plots;
mod record;
pub mod report;
mod run;
pub mod suites;

/// The byte model and the L2 test moved to [`crate::matrix`] (`methods/auto` uses `fits_l2`);
/// re-exported under their old paths.
pub use crate::matrix::{byte_model, fits_l2};
pub use record::{LaterCheck, RunRecord, Timing};
pub use report::{load_runs, write_report, write_report_with, ReportFiles, ReportOptions};
pub use run::{BenchRun, MachineInfo, MatrixResult, MethodResult, Status};
pub use suites::MatrixSource;

use std::time::Instant;

use crate::cpu::{check, check_sampled, oracle_spmv_par, sample_rows, Reference};
use crate::error::Result;
use crate::gpu::{TimingConfig, TimingMode};
use crate::matrix::{round_values, Conversion, Csr};
use crate::methods::{Backend, Plan, PlanOptions, PrepareFor};
use crate::scalar::{Offset, OffsetWidth, Scalar, ValueStorage};

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
    /// Rows checked a second time by the serial oracle alone ([`check_sampled`]), besides the
    /// full y against the parallel oracle; 0: none (the `sampled check` note says how it went).
    pub sample_rows: usize,
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
            sample_rows: 0,
        }
    }
}

/// The note of the sampled check ([`MeasureOptions::sample_rows`]).
pub const SAMPLED_CHECK: &str = "sampled check";

/// The note a record of a plan with 64-bit row offsets carries (`64-bit`; docs/offsets.md).
pub const OFFSETS_NOTE: &str = "row offsets";

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
    /// Deterministic x and y0 in [-1, 1] and the oracle's y = αAx + βy0. α and β must be finite
    /// in `T` (a NaN would make every method look wrong).
    pub fn new<O: Offset>(a: &Csr<T, O>, alpha: f64, beta: f64) -> Result<Self> {
        for (name, v) in [("alpha", alpha), ("beta", beta)] {
            if !T::from_f64(v).to_f64().is_finite() {
                return Err(crate::error::Error::InvalidArgument(format!(
                    "{name} = {v} is not a finite {} number",
                    T::PRECISION
                )));
            }
        }
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

/// Checks y after a timed loop of `calls` calls from y0 and records the outcome; a failure
/// makes the record unverified. With |β| > 1 y grows without bound and the loop is not checked
/// (said in a note).
fn check_later<T: Scalar>(
    rec: &mut RunRecord,
    problem: &Problem<T>,
    run: &str,
    calls: u64,
    y: &[T],
) {
    let Some(expected) = problem
        .reference
        .after_calls(problem.beta, &problem.y0, calls)
    else {
        rec.notes.push((
            format!("{run} loop check"),
            "skipped: |β| > 1 grows y without bound".into(),
        ));
        return;
    };
    let c = check(&expected, y);
    rec.verified &= c.ok;
    rec.later_checks.push(LaterCheck {
        run: run.to_string(),
        calls,
        ok: c.ok,
        max_rel_err: c.max_rel_err,
        worst_row: c.worst_row,
    });
}

/// Prepares `method` on `a`, checks one call against the oracle, then times repeated calls.
/// With [`PlanOptions::values`] narrower than `T` the check is against the oracle of the stored
/// values, and the record's notes say what storing them cost ([`conversion_notes`]).
pub fn measure<T: PrepareFor, O: Offset>(
    a: &Csr<T, O>,
    method: &str,
    opts: &MeasureOptions,
) -> Result<RunRecord> {
    Ok(measure_staged(a, method, opts)?.0)
}

/// [`measure`], and the time the oracle took (its answer for the full y, and the stored values'
/// rounding when there is one): the `oracle` stage of a large run's figures.
pub fn measure_staged<T: PrepareFor, O: Offset>(
    a: &Csr<T, O>,
    method: &str,
    opts: &MeasureOptions,
) -> Result<(RunRecord, std::time::Duration)> {
    let t = Instant::now();
    let Some((stored, problem, notes)) = stored_problem(a, opts.plan.values, opts)? else {
        let problem = Problem::new(a, opts.alpha, opts.beta)?;
        let oracle = t.elapsed();
        return Ok((measure_problem(a, method, opts, &problem)?, oracle));
    };
    let oracle = t.elapsed();
    let mut rec = measure_problem(&stored, method, opts, &problem)?;
    rec.notes.extend(notes);
    Ok((rec, oracle))
}

/// For values stored as `storage` (not `Same`): `a` with its values rounded to it
/// ([`round_values`], an error naming the entry that does not fit), the problem whose oracle
/// computes from those values, and the notes of [`conversion_notes`]. `None` for `Same`.
#[allow(clippy::type_complexity)]
pub fn stored_problem<T: Scalar, O: Offset>(
    a: &Csr<T, O>,
    storage: ValueStorage,
    opts: &MeasureOptions,
) -> Result<Option<(Csr<T, O>, Problem<T>, Vec<(String, String)>)>> {
    if storage == ValueStorage::Same || storage.name() == T::PRECISION.name() {
        return Ok(None);
    }
    let (stored, conv) = round_values(a, storage)?;
    let problem = Problem::new(&stored, opts.alpha, opts.beta)?;
    let exact = oracle_spmv_par(a, problem.alpha, &problem.x, problem.beta, &problem.y0)?;
    let notes = conversion_notes(storage, &conv, &exact, &problem.reference);
    Ok(Some((stored, problem, notes)))
}

/// What storing the values as `storage` did to the input, for a record's notes: the entries
/// the rounding changed, those that became zero, the largest relative change of a value, and
/// the resulting error of y, max_i |y_stored − y_given| / max_i |y_given| between the oracles
/// of the stored and the given values (on the problem's x and y0). A method's own error is
/// checked against the stored values' oracle; this is the input's, apart (issue #25).
pub fn conversion_notes(
    storage: ValueStorage,
    conv: &Conversion,
    given: &Reference,
    stored: &Reference,
) -> Vec<(String, String)> {
    let top = given.y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let diff = given
        .y
        .iter()
        .zip(&stored.y)
        .fold(0.0f64, |m, (p, q)| m.max((p - q).abs()));
    let y_err = if top > 0.0 { diff / top } else { diff };
    vec![
        ("values stored in".into(), storage.to_string()),
        (
            "conversion".into(),
            format!(
                "{} entries rounded, {} to zero; max relative change of a value {:.3e}",
                conv.changed, conv.to_zero, conv.max_rel_err
            ),
        ),
        (
            "conversion error of y".into(),
            format!("{y_err:.3e} (max |y_stored - y_given| / max |y_given|, f64 oracles)"),
        ),
    ]
}

/// [`measure`] with the oracle's answer already computed.
pub fn measure_problem<T: PrepareFor, O: Offset>(
    a: &Csr<T, O>,
    method: &str,
    opts: &MeasureOptions,
    problem: &Problem<T>,
) -> Result<RunRecord> {
    let mut plan = Plan::new(method, a, &opts.plan)?;
    let info = plan.info();
    let (alpha, beta, x) = (problem.alpha, problem.beta, &problem.x);
    let mut y = problem.y0.clone();
    plan.apply(alpha, x, beta, &mut y)?;
    let checked = check(&problem.reference, &y);
    let sampled = (opts.sample_rows > 0)
        .then(|| {
            let rows = sample_rows(a.nrows(), opts.sample_rows);
            let c = check_sampled(a, alpha, x, beta, &problem.y0, &y, &rows)?;
            Ok::<_, crate::Error>((rows.len(), c))
        })
        .transpose()?;

    let mut rec = RunRecord::new::<T, O>(a, &info, plan.backend(), plan.prep_times());
    // values stored narrower than T move fewer bytes (docs/precision.md)
    let stored = plan.precision_mode().values.bytes(T::PRECISION);
    rec.bytes_model -= ((T::BYTES - stored) * a.nnz()) as u64;
    if plan.offsets() == OffsetWidth::W64 {
        rec.bytes_model += 4 * (a.nrows() as u64 + 1);
    }
    rec.method = method.trim().to_string();
    rec.max_rel_err = checked.max_rel_err;
    rec.verified = checked.ok;
    rec.y_digest = Some(crate::hash::y_digest(&y));
    rec.notes = plan.layout().notes();
    if plan.offsets() == OffsetWidth::W64 {
        rec.notes.push((OFFSETS_NOTE.into(), "64-bit".into()));
    }
    if let Some((n, c)) = sampled {
        rec.verified &= c.ok;
        rec.notes.push((
            SAMPLED_CHECK.into(),
            format!(
                "{n} rows, serial oracle: max relative error {:.3e} at row {} ({})",
                c.max_rel_err,
                c.worst_row,
                if c.ok { "ok" } else { "WRONG" }
            ),
        ));
    }
    if let Some(note) = plan.reorder_note() {
        rec.notes
            .insert(0, ("reorder".to_string(), note.to_string()));
    }
    // `auto` is as deterministic as the method it chose
    rec.deterministic = plan.deterministic();
    rec.footprint_bytes = plan.layout().footprint_bytes();
    rec.device = match plan.backend() {
        Backend::Cpu => format!("CPU ({} threads)", rayon::current_num_threads()),
        Backend::Gpu => crate::gpu::Gpu::get()
            .map(|g| g.name().to_string())
            .unwrap_or_default(),
    };
    let reorder = plan.prep_times().reorder;
    rec.prep_stages_ms = (!reorder.is_zero())
        .then(|| ("reorder".to_string(), reorder.as_secs_f64() * 1e3))
        .into_iter()
        .chain(
            plan.layout()
                .prep_stages()
                .into_iter()
                .map(|(k, d)| (k.to_string(), d.as_secs_f64() * 1e3)),
        )
        .collect();
    rec.fallback_note = plan.fallback_note().map(str::to_string);
    match plan.backend() {
        Backend::Cpu => {
            y.copy_from_slice(&problem.y0);
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
            let calls = 1 + warmup + reps * opts.samples.max(1);
            check_later(&mut rec, problem, "cpu", calls as u64, &y);
        }
        Backend::Gpu => gpu_timing(&mut plan, problem, opts, &mut rec)?,
    }
    Ok(rec)
}

/// The GPU timings, all through [`Plan::time`] on the plan's own device vectors (x = the
/// problem's x, from the checked call): a one-call probe that sizes the loops
/// ([`MeasureOptions::capped`]), then the stream loop and the graph loop, each from y0 and
/// checked after it. A graph that cannot be captured is a note, not a failure.
fn gpu_timing<T: PrepareFor>(
    plan: &mut Plan<T>,
    problem: &Problem<T>,
    opts: &MeasureOptions,
    rec: &mut RunRecord,
) -> Result<()> {
    let (alpha, beta, n) = (problem.alpha, problem.beta, problem.y0.len());
    let probe = TimingConfig {
        warmup: 1,
        calls: 1,
        samples: 1,
    };
    let one = plan.time(TimingMode::Stream, &probe, alpha, beta)?;
    let (warmup, calls) = opts.capped(one.median_us);
    let cfg = TimingConfig {
        warmup,
        calls,
        samples: opts.samples.max(1),
    };
    let mut host = vec![T::zero(); n];
    // y from y0 before each loop, checked after it (outside the timed region)
    plan.set_device_vectors(None, Some(&problem.y0))?;
    let stream = plan.time(TimingMode::Stream, &cfg, alpha, beta)?;
    plan.read_device_y(&mut host)?;
    check_later(rec, problem, "stream", stream.executions(), &host);
    rec.set_stream_timing(stream.into());
    plan.set_device_vectors(None, Some(&problem.y0))?;
    match plan.time(TimingMode::Graph, &cfg, alpha, beta) {
        Ok(g) => {
            plan.read_device_y(&mut host)?;
            check_later(rec, problem, "graph", g.executions(), &host);
            rec.graph_time = Some(g.into());
        }
        Err(e) => rec
            .notes
            .push(("graph timing".into(), format!("unavailable: {e}"))),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods::{find, PrepTimes};

    /// `calls` calls of y ← αAx + βy in precision T, the serial order; `wrong_at` drops the
    /// largest product of row `row` in that call.
    fn repeated<T: Scalar>(
        a: &Csr<T>,
        p: &Problem<T>,
        calls: usize,
        wrong_at: Option<(usize, usize)>,
    ) -> Vec<T> {
        let mut y = p.y0.clone();
        for call in 0..calls {
            for (i, yi) in y.iter_mut().enumerate() {
                let (cols, vals) = a.row(i);
                let prods: Vec<T> = cols
                    .iter()
                    .zip(vals)
                    .map(|(&c, &v)| v * p.x[c as usize])
                    .collect();
                let skip = match wrong_at {
                    Some((c, r)) if c == call && r == i => (0..prods.len()).max_by(|&u, &v| {
                        prods[u].to_f64().abs().total_cmp(&prods[v].to_f64().abs())
                    }),
                    _ => None,
                };
                let mut s = T::zero();
                for (k, &q) in prods.iter().enumerate() {
                    if Some(k) != skip {
                        s += q;
                    }
                }
                let b = if p.beta == T::zero() {
                    T::zero()
                } else {
                    p.beta * *yi
                };
                *yi = p.alpha * s + b;
            }
        }
        y
    }

    fn later_checks_catch_a_wrong_later_call<T: Scalar>() {
        let a = crate::gen::generate::<T>("powerlaw:2000,8").unwrap();
        let info = find("csr").unwrap().info();
        for beta in [0.0, -0.75, 0.5, 1.0] {
            let p = Problem::new(&a, 1.5, beta).unwrap();
            let calls = 40;
            let mut rec = RunRecord::new(&a, &info, Backend::Cpu, PrepTimes::default());
            rec.verified = true;
            check_later(
                &mut rec,
                &p,
                "cpu",
                calls as u64,
                &repeated(&a, &p, calls, None),
            );
            assert!(
                rec.verified,
                "β={beta}: a right loop was flagged: {:?}",
                rec.later_checks
            );
            // a later call (the last, so that β = 0 cannot overwrite it) drops a product
            let bad = repeated(&a, &p, calls, Some((calls - 1, 7)));
            check_later(&mut rec, &p, "cpu", calls as u64, &bad);
            assert!(
                !rec.verified,
                "β={beta} {}: a wrong later call passed",
                T::PRECISION
            );
            let last = rec.later_checks.last().unwrap();
            assert_eq!((last.ok, last.worst_row), (false, 7));
            // and the count matters (on a short loop: with |β| < 1 y converges)
            let mut rec = RunRecord::new(&a, &info, Backend::Cpu, PrepTimes::default());
            rec.verified = true;
            if beta != 0.0 {
                check_later(&mut rec, &p, "cpu", 4, &repeated(&a, &p, 5, None));
                assert!(!rec.verified, "β={beta}: a miscounted loop passed");
            }
        }
    }

    #[test]
    fn later_checks_catch_a_wrong_later_call_f32_and_f64() {
        later_checks_catch_a_wrong_later_call::<f32>();
        later_checks_catch_a_wrong_later_call::<f64>();
    }

    /// `auto`'s record is as deterministic as the method it chose (the plan's typed choice),
    /// and the saved note names that method.
    #[test]
    fn auto_records_the_determinism_of_its_choice() {
        let a = crate::gen::generate::<f64>("poisson2d:20").unwrap();
        let opts = MeasureOptions {
            plan: PlanOptions {
                backend: Some(Backend::Cpu),
                ..Default::default()
            },
            reps: 1,
            samples: 1,
            ..Default::default()
        };
        let rec = measure(&a, "auto", &opts).unwrap();
        let chose = report::auto_choice(&rec).expect("auto's note");
        assert_eq!(rec.deterministic, find(chose).unwrap().info().deterministic);
        assert!(!find("auto").unwrap().info().deterministic);
    }

    /// The harness's CPU path checks its timed loop: a right method passes it.
    #[test]
    fn measure_checks_the_cpu_loop() {
        let a = crate::gen::generate::<f64>("poisson2d:20").unwrap();
        let opts = MeasureOptions {
            beta: -0.75,
            reps: 3,
            samples: 2,
            ..Default::default()
        };
        let rec = measure(&a, "csr", &opts).unwrap();
        assert!(rec.verified);
        assert_eq!(rec.later_checks.len(), 1);
        assert!(rec.later_checks[0].ok && rec.later_checks[0].calls == 1 + 3 + 3 * 2);
    }
}
