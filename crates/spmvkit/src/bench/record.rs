//! One measured (matrix, method, precision) record, with the derived figures: GFLOP/s (2·nnz/t)
//! and effective GB/s from the byte model.

use serde::{Deserialize, Serialize};

use crate::matrix::{byte_model, Csr};
use crate::methods::{Backend, MethodInfo, PrepTimes};
use crate::scalar::{Offset, Precision, Scalar};
use crate::stats::sample_stats;

/// Per-call time statistics over samples, in µs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Timing {
    pub median_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    pub samples_us: Vec<f64>,
}

impl Timing {
    /// Median, min and max of per-call sample times (non-finite samples dropped).
    pub fn from_samples(mut samples: Vec<f64>) -> Self {
        samples.retain(|v| v.is_finite());
        match sample_stats(&samples) {
            Some((median_us, min_us, max_us)) => Timing {
                median_us,
                min_us,
                max_us,
                samples_us: samples,
            },
            None => Timing::default(),
        }
    }
}

impl From<crate::gpu::Timing> for Timing {
    /// Keeps the statistics the GPU timing already computed.
    fn from(t: crate::gpu::Timing) -> Self {
        Timing {
            median_us: t.median_us,
            min_us: t.min_us,
            max_us: t.max_us,
            samples_us: t.samples_us,
        }
    }
}

/// The record of one measurement.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunRecord {
    pub method: String,
    pub precision: Precision,
    pub backend: Backend,
    pub device: String,
    pub nrows: usize,
    pub ncols: usize,
    pub nnz: usize,
    pub deterministic: bool,
    /// Host preprocessing, ms: the Plan's reordering (ordering and PAPᵀ, when it reorders) and
    /// the method's `prepare`; what break-even counts is this plus `upload_ms`.
    pub prep_ms: f64,
    /// Copying the layout to the device, ms.
    pub upload_ms: f64,
    pub prep_stages_ms: Vec<(String, f64)>,
    /// Per call, back-to-back on one stream (CPU: wall clock).
    pub time: Timing,
    /// Per call, replayed from a captured CUDA graph (GPU only).
    pub graph_time: Option<Timing>,
    pub gflops: f64,
    pub gbs: f64,
    pub bytes_model: u64,
    /// NaN (written as `null` in JSON) when y held NaN, e.g. a timing-study variant that leaves
    /// y unfinished.
    #[serde(deserialize_with = "nan_if_null")]
    pub max_rel_err: f64,
    pub verified: bool,
    pub footprint_bytes: usize,
    pub notes: Vec<(String, String)>,
    pub fallback_note: Option<String>,
    /// The checks of y after the timed loops (every call of a loop runs on one y, so y after the
    /// loop is checked against the β-aware expectation of that many calls); a failed one makes
    /// the record unverified.
    #[serde(default)]
    pub later_checks: Vec<LaterCheck>,
    /// [`crate::hash::y_digest`] of y after the checked call: two records of a deterministic
    /// method on the same matrix, precision, α and β hold the same y bit for bit when their
    /// digests match (how a refactor shows its results unchanged). Absent in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub y_digest: Option<String>,
}

/// y checked after a timed loop of `calls` calls.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LaterCheck {
    /// `stream`, `graph` or `cpu` (the CPU wall-clock loop).
    pub run: String,
    pub calls: u64,
    pub ok: bool,
    /// Worst |y − expected| relative to the row's magnitude; `null` when y held NaN.
    #[serde(deserialize_with = "nan_if_null")]
    pub max_rel_err: f64,
    pub worst_row: usize,
}

impl RunRecord {
    pub(crate) fn new<T: Scalar, O: Offset>(
        a: &Csr<T, O>,
        info: &MethodInfo,
        backend: Backend,
        prep: PrepTimes,
    ) -> Self {
        RunRecord {
            method: info.name.to_string(),
            precision: T::PRECISION,
            backend,
            device: String::new(),
            nrows: a.nrows(),
            ncols: a.ncols(),
            nnz: a.nnz(),
            deterministic: info.deterministic,
            prep_ms: (prep.reorder + prep.prepare).as_secs_f64() * 1e3,
            upload_ms: prep.upload.as_secs_f64() * 1e3,
            prep_stages_ms: Vec::new(),
            time: Timing::default(),
            graph_time: None,
            gflops: 0.0,
            gbs: 0.0,
            bytes_model: byte_model(a.nrows(), a.ncols(), a.nnz(), T::BYTES),
            max_rel_err: 0.0,
            verified: false,
            footprint_bytes: 0,
            notes: Vec::new(),
            fallback_note: None,
            later_checks: Vec::new(),
            y_digest: None,
        }
    }

    /// Sets the stream timing and the figures derived from its median.
    pub fn set_stream_timing(&mut self, t: Timing) {
        let secs = t.median_us * 1e-6;
        if secs > 0.0 {
            self.gflops = 2.0 * self.nnz as f64 / secs * 1e-9;
            self.gbs = self.bytes_model as f64 / secs * 1e-9;
        }
        self.time = t;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_even_and_odd_samples() {
        assert_eq!(Timing::from_samples(vec![3.0, 1.0, 2.0]).median_us, 2.0);
        assert_eq!(
            Timing::from_samples(vec![4.0, 1.0, 2.0, 3.0]).median_us,
            2.5
        );
        assert_eq!(Timing::from_samples(vec![]).median_us, 0.0);
    }

    /// A reordered plan's ordering is preprocessing: `prep_ms`, which break-even counts, holds it.
    #[test]
    fn prep_ms_counts_the_reordering() {
        let a = crate::gen::generate::<f64>("poisson2d:4").expect("generator");
        let params = crate::methods::Params::default();
        let info = crate::methods::resolve("csr-scalar", &params)
            .expect("method")
            .0
            .info();
        let prep = PrepTimes {
            reorder: std::time::Duration::from_millis(900),
            prepare: std::time::Duration::from_millis(200),
            upload: std::time::Duration::from_millis(30),
        };
        let rec = RunRecord::new(&a, &info, Backend::Cpu, prep);
        assert!((rec.prep_ms - 1100.0).abs() < 1e-9, "{}", rec.prep_ms);
        assert!((rec.upload_ms - 30.0).abs() < 1e-9);
    }
}

/// Reads a float that JSON could only write as `null` (NaN, infinities) back as NaN.
fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

#[cfg(test)]
mod nan_tests {
    use super::*;

    #[test]
    fn a_nan_error_survives_a_json_round_trip() {
        #[derive(Deserialize)]
        struct W {
            #[serde(deserialize_with = "nan_if_null")]
            v: f64,
        }
        let w: W = serde_json::from_str(r#"{"v": null}"#).unwrap();
        assert!(w.v.is_nan());
        let w: W = serde_json::from_str(r#"{"v": 0.5}"#).unwrap();
        assert_eq!(w.v, 0.5);
    }
}
