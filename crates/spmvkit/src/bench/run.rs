//! The saved form of one benchmark run (Ginkgo-like JSON): the machine, the command, and per
//! matrix its statistics and one result per (method, precision), failures included.

use serde::{Deserialize, Serialize};

use super::RunRecord;
use crate::gpu::Probe;
use crate::matrix::MatrixStats;
use crate::scalar::Precision;

/// The machine a run was measured on.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct MachineInfo {
    /// GPU name, or "none".
    pub gpu: String,
    pub sm_count: Option<usize>,
    pub gpu_memory_bytes: Option<u64>,
    pub l2_bytes: Option<u64>,
    pub driver_version: Option<String>,
    pub cuda_version: Option<String>,
    pub cpu_threads: usize,
    /// Device-to-device copy bandwidth (read + write), GB/s, measured once per run.
    pub copy_bandwidth_gbs: Option<f64>,
    /// The limits probe (read bandwidth, gather rates), measured once per run on a GPU; absent
    /// in CPU runs and in runs made before it existed.
    #[serde(default)]
    pub probe: Option<Probe>,
    /// Why the probe is missing on a GPU run, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_error: Option<String>,
    /// `git describe` of the spmvkit source, if known.
    pub commit: String,
    /// The exact command line.
    pub command: String,
    /// UTC time the run started, RFC 3339.
    pub started: String,
}

/// What happened to one (method, precision) on one matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Ran and matched the oracle.
    Ok,
    /// Ran but disagreed with the oracle.
    Wrong,
    /// The method cannot run this matrix or precision here (said why).
    Unsupported,
    /// An error while preparing or running.
    Failed,
}

impl Status {
    /// The status as the run JSON and `results.csv` write it: `ok`, `wrong`, `unsupported`,
    /// `failed`.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Wrong => "wrong",
            Status::Unsupported => "unsupported",
            Status::Failed => "failed",
        }
    }
}

/// One (method, precision) result on one matrix.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MethodResult {
    pub method: String,
    pub precision: Precision,
    pub status: Status,
    /// The error or reason, when not `Ok`.
    pub error: Option<String>,
    /// The measurement, when the method ran.
    pub record: Option<RunRecord>,
}

/// One matrix of a run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MatrixResult {
    /// Short name (file stem or GEN-SPEC).
    pub name: String,
    /// The file path or GEN-SPEC it came from.
    pub source: String,
    pub stats: MatrixStats,
    /// Whether the CSR working set (byte model, f64) fits in the GPU's L2: such matrices measure
    /// launch overhead more than memory and are reported apart.
    pub fits_l2: bool,
    pub results: Vec<MethodResult>,
    /// Multi-vector (SpMM) results, one per (method, precision, k, order), when the run asked
    /// for them (`spmv bench --k`; [`super::multi`]); absent in older runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub multi: Vec<super::multi::MultiResult>,
}

/// A whole run, as written to `<out>/run-*.json`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct BenchRun {
    pub machine: MachineInfo,
    /// Suite name, if one was given.
    pub suite: Option<String>,
    pub matrices: Vec<MatrixResult>,
    /// Inputs that could not be loaded: (source, error).
    #[serde(default)]
    pub skipped: Vec<(String, String)>,
}
