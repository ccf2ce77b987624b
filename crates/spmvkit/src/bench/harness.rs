//! The benchmark loop: every matrix × precision × method, side by side on one device in one run.
//! A method that fails, panics, disagrees with the oracle or cannot run is recorded with its
//! reason, never dropped.
//!
//! A precision mode with values stored narrower than x and y (`bf16-f32`, issue #25,
//! docs/precision.md) runs each method as the variant `NAME[storage=bf16]` in the vectors'
//! precision (its label in the run), checked against the oracle of the stored values, with the
//! conversion's own error in the notes; methods that do not read that storage are recorded
//! `unsupported`. Multi-vector calls run in the plain modes only.

use std::panic::{catch_unwind, AssertUnwindSafe};

use super::multi::{measure_multi_on, MultiProblem, MultiResult};
use super::suites::MatrixSource;
use super::{
    measure_problem, BenchRun, MachineInfo, MatrixResult, MeasureOptions, MethodResult, Problem,
    Status,
};
use crate::error::Error;
use crate::matrix::{fits_l2, Csr, MatrixStats};
use crate::methods::{Plan, PrepareFor};
use crate::scalar::{Precision, PrecisionMode, ValueStorage};

/// What to run.
#[derive(Clone, Debug)]
pub struct HarnessConfig {
    pub methods: Vec<String>,
    /// Precision modes (`f64`, `f32`, `bf16-f32`, ...).
    pub precisions: Vec<PrecisionMode>,
    pub measure: MeasureOptions,
    /// Read and write the `.spmvkit` cache for files.
    pub use_cache: bool,
    /// Blocks of k vectors to measure each method's multi-vector call on, besides its SpMV
    /// (`spmv bench --k`, [`super::multi`]); empty: none.
    pub multi: Vec<crate::matrix::MultiShape>,
}

/// Progress callbacks (the CLI draws a bar).
pub trait Progress {
    /// Starting matrix `index` of `total`.
    fn matrix(&mut self, index: usize, total: usize, name: &str);
    /// Starting a method on the current matrix.
    fn method(&mut self, matrix: &str, method: &str, precision: Precision);
    /// An input that could not be loaded.
    fn skipped(&mut self, source: &str, error: &str);
    /// The run so far, after each matrix (to save partial results).
    fn checkpoint(&mut self, _run: &BenchRun) {}
}

/// A progress sink that shows nothing.
pub struct Silent;
impl Progress for Silent {
    fn matrix(&mut self, _: usize, _: usize, _: &str) {}
    fn method(&mut self, _: &str, _: &str, _: Precision) {}
    fn skipped(&mut self, _: &str, _: &str) {}
}

/// The machine description: GPU properties if one is usable, CPU threads, the command line; on
/// a GPU the limits probe ([`crate::gpu::probe`]), whose copy bandwidth is the run's.
pub fn machine_info(command: &str) -> MachineInfo {
    let mut m = MachineInfo {
        gpu: "none".into(),
        cpu_threads: rayon::current_num_threads(),
        command: command.into(),
        commit: option_env!("SPMVKIT_GIT_DESCRIBE")
            .unwrap_or(env!("CARGO_PKG_VERSION"))
            .into(),
        started: utc_now(),
        ..Default::default()
    };
    if let Ok(g) = crate::gpu::Gpu::get() {
        m.gpu = g.name().to_string();
        m.sm_count = Some(g.sm_count());
        m.gpu_memory_bytes = g.memory().ok().map(|(_, total)| total as u64);
        m.l2_bytes = g.l2_bytes().map(|b| b as u64);
        m.driver_version = g.driver_version();
        m.cuda_version = crate::gpu::nvrtc_version().map(|(a, b)| format!("NVRTC {a}.{b}"));
        match crate::gpu::run_probe(&g, &crate::gpu::ProbeOptions::default()) {
            Ok(p) => {
                m.copy_bandwidth_gbs = Some(p.copy_gbs);
                m.probe = Some(p);
            }
            Err(e) => {
                m.probe_error = Some(e.to_string());
                m.copy_bandwidth_gbs = crate::gpu::measure_copy_bandwidth(&g).ok();
            }
        }
    }
    m
}

/// Runs every method and precision on one matrix.
pub fn run_matrix(
    name: &str,
    source: &str,
    a: &Csr<f64>,
    cfg: &HarnessConfig,
    l2_bytes: Option<u64>,
    progress: &mut dyn Progress,
) -> MatrixResult {
    let stats = MatrixStats::of(a).with_x_sectors(a);
    let fits_l2 = fits_l2(a.nrows(), a.ncols(), a.nnz(), l2_bytes);
    let (mut results, mut multi) = (Vec::new(), Vec::new());
    for &p in &cfg.precisions {
        let plain = p.values == ValueStorage::Same;
        match p.vectors {
            Precision::F64 => {
                run_methods(name, a, p.values, cfg, progress, &mut results);
                if plain {
                    run_multi(name, a, cfg, progress, &mut multi);
                }
            }
            Precision::F32 => {
                let a = a.cast::<f32>();
                run_methods(name, &a, p.values, cfg, progress, &mut results);
                if plain {
                    run_multi(name, &a, cfg, progress, &mut multi);
                }
            }
        }
    }
    let mut m = MatrixResult {
        name: name.into(),
        source: source.into(),
        stats,
        fits_l2,
        results,
        multi,
    };
    super::multi::fill_speedups(&mut m);
    m
}

/// A method's plan, or the status and reason it could not be made.
type PlanOrWhy<T> = std::result::Result<Plan<T>, (Status, String)>;

/// Every method's multi-vector call for each block shape of the config, with the oracle per
/// shape computed once; failures are recorded as for SpMV.
fn run_multi<T: PrepareFor>(
    name: &str,
    a: &Csr<T>,
    cfg: &HarnessConfig,
    progress: &mut dyn Progress,
    out: &mut Vec<MultiResult>,
) {
    if cfg.multi.is_empty() {
        return;
    }
    // one plan per method for every shape (its device blocks are released after each)
    let mut plans: Vec<(&String, PlanOrWhy<T>)> = cfg
        .methods
        .iter()
        .map(|method| {
            let made = catch_unwind(AssertUnwindSafe(|| Plan::new(method, a, &cfg.measure.plan)));
            let plan = match made {
                Ok(Ok(p)) => Ok(p),
                Ok(Err(e)) => Err((status_of(&e), e.to_string())),
                Err(panic) => Err((Status::Failed, format!("panicked: {}", panic_text(&panic)))),
            };
            (method, plan)
        })
        .collect();
    for &shape in &cfg.multi {
        let result = |method: &str, status, error, record| MultiResult {
            method: method.to_string(),
            precision: T::PRECISION,
            k: shape.k,
            order: shape.order,
            status,
            error,
            record,
        };
        let m = &cfg.measure;
        let problem = match catch_unwind(AssertUnwindSafe(|| {
            MultiProblem::new(a, shape, m.alpha, m.beta)
        })) {
            Ok(Ok(p)) => p,
            Ok(Err(e)) => {
                let e = format!("oracle: {e}");
                for method in &cfg.methods {
                    out.push(result(method, Status::Failed, Some(e.clone()), None));
                }
                continue;
            }
            Err(panic) => {
                let e = format!("oracle panicked: {}", panic_text(&panic));
                for method in &cfg.methods {
                    out.push(result(method, Status::Failed, Some(e.clone()), None));
                }
                continue;
            }
        };
        for (method, plan) in plans.iter_mut() {
            let plan = match plan {
                Ok(plan) => plan,
                Err((status, e)) => {
                    out.push(result(method, *status, Some(e.clone()), None));
                    continue;
                }
            };
            let label = format!("{method} k={} {}", shape.k, shape.order);
            progress.method(name, &label, T::PRECISION);
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                measure_multi_on(plan, a, &cfg.measure, &problem)
            }));
            out.push(match outcome {
                Ok(Ok(rec)) if rec.verified => result(method, Status::Ok, None, Some(rec)),
                Ok(Ok(rec)) => {
                    let why = match rec.later_checks.iter().find(|l| !l.ok) {
                        Some(l) => format!(
                            "wrong after the {} loop of {} calls: row {} off by {:.3e}",
                            l.run, l.calls, l.worst_row, l.max_rel_err
                        ),
                        None => format!(
                            "wrong result: max relative error {:?} over vectors {:?}",
                            rec.max_rel_err, rec.checked_vectors
                        ),
                    };
                    result(method, Status::Wrong, Some(why), Some(rec))
                }
                Ok(Err(e)) => result(method, status_of(&e), Some(e.to_string()), None),
                Err(panic) => result(
                    method,
                    Status::Failed,
                    Some(format!("panicked: {}", panic_text(&panic))),
                    None,
                ),
            });
        }
    }
}

/// `method` (a name or a variant) with `storage=` added for a narrower value storage: the label
/// a run records it under, and a spec that [`Plan::new`] takes.
pub fn with_storage(method: &str, storage: ValueStorage) -> String {
    let key = crate::methods::VALUES_PARAM;
    let method = method.trim();
    if storage == ValueStorage::Same {
        method.to_string()
    } else if let Some(inner) = method.strip_suffix(']') {
        format!("{inner};{key}={storage}]")
    } else {
        format!("{method}[{key}={storage}]")
    }
}

fn run_methods<T: PrepareFor>(
    name: &str,
    a: &Csr<T>,
    storage: ValueStorage,
    cfg: &HarnessConfig,
    progress: &mut dyn Progress,
    out: &mut Vec<MethodResult>,
) {
    let labels: Vec<String> = cfg
        .methods
        .iter()
        .map(|m| with_storage(m, storage))
        .collect();
    let m = &cfg.measure;
    // the matrix as the mode stores it (a value that does not fit refuses the mode for every
    // method: unsupported, docs/precision.md), and the oracle of those values
    let made = match super::stored_problem(a, storage, m) {
        Ok(Some((stored, problem, notes))) => Ok((std::borrow::Cow::Owned(stored), problem, notes)),
        Ok(None) => Problem::new(a, m.alpha, m.beta)
            .map(|p| (std::borrow::Cow::Borrowed(a), p, Vec::new()))
            .map_err(|e| (Status::Failed, format!("oracle: {e}"))),
        Err(e) => Err((
            Status::Unsupported,
            format!("values stored in {storage}: {e}"),
        )),
    };
    let (a, problem, notes) = match made {
        Ok(p) => p,
        Err((status, e)) => {
            for method in labels {
                out.push(MethodResult {
                    method,
                    precision: T::PRECISION,
                    status,
                    error: Some(e.clone()),
                    record: None,
                });
            }
            return;
        }
    };
    for method in labels {
        progress.method(name, &method, T::PRECISION);
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            measure_problem(&a, &method, &cfg.measure, &problem)
        }));
        let (status, error, record) = match outcome {
            Ok(Ok(mut rec)) if rec.verified => {
                rec.notes.extend(notes.iter().cloned());
                (Status::Ok, None, Some(rec))
            }
            Ok(Ok(rec)) => (Status::Wrong, Some(wrong_reason(&rec)), Some(rec)),
            Ok(Err(e)) => (status_of(&e), Some(e.to_string()), None),
            Err(panic) => (
                Status::Failed,
                Some(format!("panicked: {}", panic_text(&panic))),
                None,
            ),
        };
        out.push(MethodResult {
            method,
            precision: T::PRECISION,
            status,
            error,
            record,
        });
    }
}

/// Why a record is wrong: the first call, or a later call of a timed loop.
fn wrong_reason(rec: &super::RunRecord) -> String {
    match rec.later_checks.iter().find(|l| !l.ok) {
        Some(l) => format!(
            "wrong after the {} loop of {} calls: row {} off by {:.3e} relative to its magnitude \
             (first call: max relative error {:.3e})",
            l.run, l.calls, l.worst_row, l.max_rel_err, rec.max_rel_err
        ),
        None => format!(
            "max relative error {:.3e} against the oracle",
            rec.max_rel_err
        ),
    }
}

fn status_of(e: &Error) -> Status {
    match e {
        Error::MethodUnsupported { .. } | Error::GpuUnavailable(_) | Error::DeviceMemory { .. } => {
            Status::Unsupported
        }
        _ => Status::Failed,
    }
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Runs the whole benchmark over `inputs`.
pub fn run(
    inputs: &[MatrixSource],
    cfg: &HarnessConfig,
    machine: MachineInfo,
    suite: Option<String>,
    progress: &mut dyn Progress,
) -> BenchRun {
    let l2 = machine.l2_bytes;
    let mut run = BenchRun {
        machine,
        suite,
        matrices: Vec::new(),
        skipped: Vec::new(),
    };
    for (i, src) in inputs.iter().enumerate() {
        let name = src.short_name();
        progress.matrix(i, inputs.len(), &name);
        match src.load::<f64>(cfg.use_cache) {
            Ok(a) => run
                .matrices
                .push(run_matrix(&name, &src.label(), &a, cfg, l2, progress)),
            Err(e) => {
                progress.skipped(&src.label(), &e.to_string());
                run.skipped.push((src.label(), e.to_string()));
            }
        }
        progress.checkpoint(&run);
    }
    run
}

/// The current UTC time as RFC 3339 (seconds), without a date crate.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_format_is_rfc3339() {
        let s = utc_now();
        assert_eq!(s.len(), 20, "{s}");
        assert!(s.starts_with("20") && s.ends_with('Z'));
    }

    #[test]
    fn failures_and_unknown_methods_are_recorded() {
        let a = Csr::<f64>::identity(5).unwrap();
        let cfg = HarnessConfig {
            methods: vec!["csr".into(), "no-such-method".into()],
            precisions: vec![Precision::F64.into(), Precision::F32.into()],
            measure: MeasureOptions {
                warmup: 0,
                reps: 1,
                samples: 1,
                ..Default::default()
            },
            use_cache: false,
            multi: Vec::new(),
        };
        let m = run_matrix("id5", "identity", &a, &cfg, None, &mut Silent);
        assert_eq!(m.results.len(), 4);
        assert_eq!(
            m.results.iter().filter(|r| r.status == Status::Ok).count(),
            2
        );
        let bad = m
            .results
            .iter()
            .find(|r| r.method == "no-such-method")
            .unwrap();
        assert_eq!(bad.status, Status::Failed);
        assert!(bad
            .error
            .as_deref()
            .unwrap_or("")
            .contains("unknown method"));
    }
}
