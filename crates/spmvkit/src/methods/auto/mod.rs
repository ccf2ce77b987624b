//! `auto`: chooses a registered method for each matrix, precision and expected number of calls
//! (issue #11, "beyond the papers"). `mode=model` (the only mode so far) predicts each method's
//! time from matrix features alone, with the nearest-neighbour model of [`model`] fitted from the
//! committed H200 benchmark runs; preprocessing counts against the gain, spread over `calls`.
//! `deterministic=1` admits only bitwise-deterministic methods. Without a GPU it takes the CPU
//! production path `csr`. When the choice has no CPU executor (cuSPARSE), a `csr` layout is built
//! as well and serves a forced CPU backend. The chosen method's layout is used as it is; its notes say what was
//! chosen and why.
//!
//! ```
//! use spmvkit::{gen, Plan, PlanOptions};
//! use spmvkit::methods::Params;
//! let a = gen::generate::<f64>("poisson2d:50").unwrap();
//! // The GPU when one is usable, else the CPU (then `auto` takes `csr`).
//! let opts = PlanOptions { params: Params::parse(["calls=10"]).unwrap(), backend: None };
//! let mut plan = Plan::new("auto", &a, &opts).unwrap();
//! let x = vec![1.0; a.ncols()];
//! let mut y = vec![0.0; a.nrows()];
//! plan.apply(1.0, &x, 0.0, &mut y).unwrap();
//! assert!(plan.layout().notes().iter().any(|(k, _)| k == "auto chose"));
//! ```

pub mod model;

use std::time::Duration;

use self::model::{Features, Model};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::matrix::{Csr, MatrixStats};
use crate::methods::{find, DeviceLayout, Layout, Method, MethodInfo, ParamSpec, Params};
use crate::scalar::{Precision, Scalar};

const NAME: &str = "auto";

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        key: "mode",
        default: "model",
        help: "model: choose from matrix features with the model fitted from docs/results (no trial runs)",
    },
    ParamSpec {
        key: "calls",
        default: "1000",
        help: "expected SpMV calls on this matrix; preprocessing is spread over them (1: a one-shot call favours cheap setups)",
    },
    ParamSpec {
        key: "deterministic",
        default: "0",
        help: "1: choose only methods whose results are bitwise reproducible",
    },
    ParamSpec {
        key: "k",
        default: "5",
        help: "training matrices consulted (nearest neighbours in feature space), 1..=50",
    },
];

/// The registry entry of `auto`.
pub struct Auto;

/// What `auto` decided for one matrix.
#[derive(Clone, Debug)]
pub struct Choice {
    pub method: &'static str,
    /// Predicted µs per call, preprocessing spread over `calls` included (None on the CPU path).
    pub predicted_us: Option<f64>,
    pub reason: String,
}

struct Opts {
    calls: f64,
    deterministic: bool,
    k: usize,
}

fn param_err(key: &str, msg: String) -> Error {
    Error::Param {
        method: NAME.into(),
        key: key.into(),
        msg,
    }
}

fn parse(params: &Params) -> Result<Opts> {
    params.check_known(NAME, PARAMS)?;
    let mode: String = params.get(NAME, PARAMS, "mode")?;
    if mode != "model" {
        return Err(param_err(
            "mode",
            format!("'{mode}' is not available (only model so far)"),
        ));
    }
    let calls: f64 = params.get(NAME, PARAMS, "calls")?;
    if calls.is_nan() || calls < 1.0 {
        return Err(param_err("calls", format!("{calls} is below 1")));
    }
    let det: String = params.get(NAME, PARAMS, "deterministic")?;
    let deterministic = match det.as_str() {
        "0" | "off" | "false" => false,
        "1" | "on" | "true" => true,
        _ => return Err(param_err("deterministic", format!("'{det}' is not 0 or 1"))),
    };
    let k: usize = params.get(NAME, PARAMS, "k")?;
    if !(1..=50).contains(&k) {
        return Err(param_err("k", format!("{k} is not in 1..=50")));
    }
    Ok(Opts {
        calls,
        deterministic,
        k,
    })
}

/// The method `auto` would run for `a` (with these parameters) on this machine.
pub fn choose<T: Scalar>(a: &Csr<T>, params: &Params) -> Result<Choice> {
    let o = parse(params)?;
    let gpu = match Gpu::get() {
        Ok(g) => g,
        Err(e) => {
            return Ok(Choice {
                method: "csr",
                predicted_us: None,
                reason: format!("no GPU ({e}): the CPU path"),
            })
        }
    };
    let model = Model::shipped()?;
    let allowed: Vec<bool> = model
        .methods
        .iter()
        .map(|m| {
            find(m).is_ok_and(|f| {
                let i = f.info();
                i.gpu && (!o.deterministic || i.deterministic)
            })
        })
        .collect();
    let stats = MatrixStats::of(a);
    let features = Features::of(&stats, gpu.l2_bytes().map(|b| b as u64));
    let precision: Precision = T::PRECISION;
    let (m, us) = model
        .choose(
            &features,
            a.nnz() as f64,
            precision,
            &allowed,
            o.calls,
            o.k,
            |_| true,
        )
        .ok_or_else(|| Error::MethodUnsupported {
            method: NAME.into(),
            reason: format!("the model has no {precision} training data for the allowed methods"),
        })?;
    let method = find(&model.methods[m])?.info().name;
    Ok(Choice {
        method,
        predicted_us: Some(us),
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
    })
}

/// The chosen method's layout, with `auto`'s notes added. When the chosen method has no CPU
/// executor (cuSPARSE), a `csr` layout serves the CPU backend.
struct AutoLayout<T: Scalar> {
    inner: Box<dyn Layout<T>>,
    cpu_fallback: Option<Box<dyn Layout<T>>>,
    choice: Choice,
}

impl<T: Scalar> Layout<T> for AutoLayout<T> {
    fn footprint_bytes(&self) -> usize {
        self.inner.footprint_bytes()
    }
    fn run_cpu(&self, alpha: T, x: &[T], beta: T, y: &mut [T]) -> Result<()> {
        self.cpu_fallback
            .as_ref()
            .unwrap_or(&self.inner)
            .run_cpu(alpha, x, beta, y)
    }
    fn upload(&self, gpu: &std::sync::Arc<Gpu>) -> Result<Box<dyn DeviceLayout<T>>> {
        self.inner.upload(gpu)
    }
    fn values_mut(&mut self) -> Option<&mut [T]> {
        // With a CPU fallback layout the values live twice; an update re-prepares.
        if self.cpu_fallback.is_some() {
            return None;
        }
        self.inner.values_mut()
    }
    fn prep_stages(&self) -> Vec<(&'static str, Duration)> {
        self.inner.prep_stages()
    }
    fn notes(&self) -> Vec<(String, String)> {
        let mut n = vec![
            ("auto chose".to_string(), self.choice.method.to_string()),
            ("auto reason".to_string(), self.choice.reason.clone()),
        ];
        if let Some(us) = self.choice.predicted_us {
            n.push(("auto predicted µs per call".into(), format!("{us:.2}")));
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

fn prepare<T: Scalar>(
    a: &Csr<T>,
    params: &Params,
    delegate: impl Fn(&'static dyn Method) -> Result<Box<dyn Layout<T>>>,
) -> Result<Box<dyn Layout<T>>> {
    let choice = choose(a, params)?;
    let chosen = find(choice.method)?;
    let inner = delegate(chosen)?;
    let cpu_fallback = if chosen.info().cpu {
        None
    } else {
        Some(delegate(find("csr")?)?)
    };
    Ok(Box::new(AutoLayout {
        inner,
        cpu_fallback,
        choice,
    }))
}

impl Method for Auto {
    fn info(&self) -> MethodInfo {
        MethodInfo {
            name: NAME,
            summary: "chooses a method per matrix, precision and expected calls (nearest-neighbour model fitted from docs/results; CPU: csr)",
            source: "spmvkit (issue #11)",
            deterministic: false,
            gpu: true,
            cpu: true,
            params: PARAMS,
        }
    }

    fn prepare_f32(&self, csr: &Csr<f32>, params: &Params) -> Result<Box<dyn Layout<f32>>> {
        prepare(csr, params, |m| m.prepare_f32(csr, &Params::new()))
    }

    fn prepare_f64(&self, csr: &Csr<f64>, params: &Params) -> Result<Box<dyn Layout<f64>>> {
        prepare(csr, params, |m| m.prepare_f64(csr, &Params::new()))
    }
}

#[cfg(test)]
mod tests;
